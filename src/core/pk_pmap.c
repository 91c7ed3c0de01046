/*
 * pk_pmap: construction, membership and invariants of the partition map.
 * The binary encoding lives in pk_pmap_codec.c.
 */
#include "pk_pmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_ftdef.h"

int pk_pmap_new(pk_scheme scheme, pk_hash_kind hash, uint32_t npartitions,
                uint8_t replicas, pk_pmap **out)
{
    pk_pmap *m;

    if (scheme > PK_SCHEME_RANGE || pk_hash_get(hash) == NULL)
        return PK_EINVAL;
    if (npartitions == 0 || npartitions > PK_PARTITIONS_MAX)
        return PK_EINVAL;
    if (scheme == PK_SCHEME_SLOTS && npartitions != PK_SLOTS)
        return PK_EINVAL;
    if (replicas == 0 || replicas > PK_REPLICAS_MAX)
        return PK_EINVAL;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return PK_ENOMEM;
    m->parts = calloc(npartitions, sizeof(*m->parts));
    if (m->parts == NULL) {
        free(m);
        return PK_ENOMEM;
    }
    for (uint32_t p = 0; p < npartitions; p++)
        m->parts[p].move_target = PK_NODE_NONE;
    m->scheme = (uint8_t)scheme;
    m->hash = (uint8_t)hash;
    m->replicas = replicas;
    m->npartitions = npartitions;
    *out = m;
    return PK_OK;
}

void pk_pmap_free(pk_pmap *m)
{
    if (m == NULL)
        return;
    /* parts is NULL when pk_pmap_clone failed to allocate it. */
    for (uint32_t p = 0; m->parts != NULL && p < m->npartitions; p++) {
        free(m->parts[p].lo);
        free(m->parts[p].hi);
    }
    free(m->parts);
    free(m->nodes);
    for (uint32_t i = 0; i < m->nsalts; i++)
        free(m->salts[i].key);
    free(m->salts);
    for (uint32_t i = 0; i < m->nftdefs; i++)
        free(m->ftdefs[i].bytes);
    free(m->ftdefs);
    free(m);
}

static int dup_bytes(const uint8_t *src, uint32_t len, uint8_t **dst)
{
    *dst = NULL;
    if (src == NULL)
        return PK_OK;
    *dst = malloc(len ? len : 1);
    if (*dst == NULL)
        return PK_ENOMEM;
    memcpy(*dst, src, len);
    return PK_OK;
}

int pk_pmap_clone(const pk_pmap *m, pk_pmap **out)
{
    pk_pmap *c;
    int rc = PK_ENOMEM;

    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return PK_ENOMEM;
    *c = *m;
    c->nodes = NULL;
    c->salts = NULL;
    c->nsalts = 0;
    c->ftdefs = NULL;
    c->nftdefs = 0;
    if (m->nftdefs) {
        c->ftdefs = calloc(m->nftdefs, sizeof(*c->ftdefs));
        if (c->ftdefs == NULL)
            goto fail;
        for (; c->nftdefs < m->nftdefs; c->nftdefs++) {
            pk_ftblob *d = &c->ftdefs[c->nftdefs];
            d->len = m->ftdefs[c->nftdefs].len;
            if (dup_bytes(m->ftdefs[c->nftdefs].bytes, d->len, &d->bytes))
                goto fail;
        }
    }
    if (m->nsalts) {
        c->salts = calloc(m->nsalts, sizeof(*c->salts));
        if (c->salts == NULL)
            goto fail;
        for (; c->nsalts < m->nsalts; c->nsalts++) {
            pk_salt *d = &c->salts[c->nsalts];
            *d = m->salts[c->nsalts];
            if (dup_bytes(m->salts[c->nsalts].key, d->len, &d->key) != PK_OK)
                goto fail;
        }
    }
    c->parts = calloc(m->npartitions, sizeof(*c->parts));
    if (c->parts == NULL)
        goto fail;
    if (m->cap_nodes) {
        c->nodes = malloc(m->cap_nodes * sizeof(*c->nodes));
        if (c->nodes == NULL)
            goto fail;
        memcpy(c->nodes, m->nodes, m->nnodes * sizeof(*c->nodes));
    }
    for (uint32_t p = 0; p < m->npartitions; p++) {
        pk_partition *d = &c->parts[p];
        *d = m->parts[p];
        d->lo = d->hi = NULL;
        if (dup_bytes(m->parts[p].lo, d->lo_len, &d->lo) != PK_OK ||
            dup_bytes(m->parts[p].hi, d->hi_len, &d->hi) != PK_OK)
            goto fail;
    }
    *out = c;
    return PK_OK;
fail:
    pk_pmap_free(c);
    return rc;
}

static int copy_field(char *dst, size_t cap, const char *src, int required)
{
    size_t len = src ? strlen(src) : 0;

    if ((required && len == 0) || len >= cap)
        return PK_EINVAL;
    memset(dst, 0, cap);
    if (len)
        memcpy(dst, src, len);
    return PK_OK;
}

int pk_pmap_node_add(pk_pmap *m, const char *name, const char *addr,
                     const char *zone, double weight, uint32_t *id)
{
    pk_node n;
    uint32_t dummy;

    memset(&n, 0, sizeof(n));
    if (!(weight >= 0) || weight > 1e6)
        return PK_EINVAL;
    if (copy_field(n.name, sizeof(n.name), name, 1) != PK_OK ||
        copy_field(n.addr, sizeof(n.addr), addr, 0) != PK_OK ||
        copy_field(n.zone, sizeof(n.zone), zone, 0) != PK_OK)
        return PK_EINVAL;
    if (pk_pmap_node_find(m, name, &dummy) == PK_OK)
        return PK_EEXIST;
    if (m->nnodes >= PK_NODES_MAX)
        return PK_EFULL;
    if (m->nnodes == m->cap_nodes) {
        uint32_t cap = m->cap_nodes ? m->cap_nodes * 2 : 8;
        pk_node *nodes = realloc(m->nodes, cap * sizeof(*nodes));
        if (nodes == NULL)
            return PK_ENOMEM;
        m->nodes = nodes;
        m->cap_nodes = cap;
    }
    n.id = m->nnodes;
    n.weight = weight;
    n.state = PK_NODE_UP;
    m->nodes[m->nnodes++] = n;
    *id = n.id;
    return PK_OK;
}

int pk_pmap_node_find(const pk_pmap *m, const char *name, uint32_t *id)
{
    for (uint32_t i = 0; i < m->nnodes; i++) {
        if (m->nodes[i].state != PK_NODE_REMOVED &&
            strcmp(m->nodes[i].name, name) == 0) {
            *id = i;
            return PK_OK;
        }
    }
    return PK_ENOTFOUND;
}

const pk_node *pk_pmap_node(const pk_pmap *m, uint32_t id)
{
    return id < m->nnodes ? &m->nodes[id] : NULL;
}

int pk_pmap_node_set_state(pk_pmap *m, uint32_t id, pk_node_state state)
{
    if (id >= m->nnodes)
        return PK_ENOTFOUND;
    if (state > PK_NODE_REMOVED)
        return PK_EINVAL;
    m->nodes[id].state = (uint8_t)state;
    return PK_OK;
}

int pk_pmap_node_set_weight(pk_pmap *m, uint32_t id, double weight)
{
    if (id >= m->nnodes)
        return PK_ENOTFOUND;
    if (!(weight >= 0) || weight > 1e6)
        return PK_EINVAL;
    m->nodes[id].weight = weight;
    return PK_OK;
}

uint32_t pk_pmap_live_nodes(const pk_pmap *m)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < m->nnodes; i++)
        n += m->nodes[i].state == PK_NODE_UP ||
             m->nodes[i].state == PK_NODE_DRAINING;
    return n;
}

uint32_t pk_pmap_leader(const pk_pmap *m, uint32_t p)
{
    if (p >= m->npartitions || m->parts[p].nreplicas == 0)
        return PK_NODE_NONE;
    return m->parts[p].replicas[0];
}

static int bytes_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b,
                     uint32_t blen)
{
    uint32_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;

    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

int pk_pmap_set_range(pk_pmap *m, uint32_t p, const void *lo, size_t lo_len,
                      const void *hi, size_t hi_len)
{
    uint8_t *nlo = NULL, *nhi = NULL;
    pk_partition *part;

    if (m->scheme != PK_SCHEME_RANGE || p >= m->npartitions)
        return PK_EINVAL;
    if (lo_len > UINT32_MAX || hi_len > UINT32_MAX || (lo_len && !lo))
        return PK_EINVAL;
    if (hi && bytes_cmp(lo, (uint32_t)lo_len, hi, (uint32_t)hi_len) >= 0)
        return PK_EINVAL;
    if (dup_bytes(lo ? lo : (const uint8_t *)"", (uint32_t)lo_len, &nlo) !=
            PK_OK ||
        dup_bytes(hi, (uint32_t)hi_len, &nhi) != PK_OK) {
        free(nlo);
        return PK_ENOMEM;
    }
    part = &m->parts[p];
    free(part->lo);
    free(part->hi);
    part->lo = nlo;
    part->lo_len = (uint32_t)lo_len;
    part->hi = nhi;
    part->hi_len = hi ? (uint32_t)hi_len : 0;
    return PK_OK;
}

int pk_pmap_partition_of(const pk_pmap *m, const void *key, size_t len,
                         uint32_t *p)
{
    switch (m->scheme) {
    case PK_SCHEME_SLOTS:
        *p = pk_hash_slot(key, len);
        return PK_OK;
    case PK_SCHEME_HASH:
        /* Hash tags hold here too: {sensor:17}:... is one partition. */
        len = pk_hash_tag(key, len, &key);
        *p = (uint32_t)(pk_hash_get(m->hash)(key, len) % m->npartitions);
        return PK_OK;
    }
    return PK_EINVAL;
}

static int ids_ok(const pk_pmap *m, const uint32_t *ids, uint32_t n,
                  const uint32_t *other, uint32_t nother)
{
    for (uint32_t i = 0; i < n; i++) {
        if (ids[i] >= m->nnodes || m->nodes[ids[i]].state == PK_NODE_REMOVED)
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                return 0;
        for (uint32_t j = 0; j < nother; j++)
            if (other[j] == ids[i])
                return 0;
    }
    return 1;
}

static int salts_valid(const pk_pmap *m);
static int ftdefs_valid(const pk_pmap *m);

int pk_pmap_validate(const pk_pmap *m)
{
    if (m->replicas == 0 || m->replicas > PK_REPLICAS_MAX ||
        m->scheme > PK_SCHEME_RANGE || pk_hash_get(m->hash) == NULL ||
        !salts_valid(m) || !ftdefs_valid(m))
        return PK_ECORRUPT;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        const pk_node *n = &m->nodes[i];
        if (n->id != i || n->state > PK_NODE_REMOVED || !(n->weight >= 0) ||
            n->name[0] == '\0' || memchr(n->name, 0, sizeof(n->name)) == NULL)
            return PK_ECORRUPT;
    }
    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        if (pt->nreplicas > PK_REPLICAS_MAX ||
            pt->nlearners > PK_REPLICAS_MAX ||
            pt->move_state > PK_MOVE_SWITCHING)
            return PK_ECORRUPT;
        if (!ids_ok(m, pt->replicas, pt->nreplicas, NULL, 0) ||
            !ids_ok(m, pt->learners, pt->nlearners, pt->replicas,
                    pt->nreplicas))
            return PK_ECORRUPT;
        if (pt->move_target != PK_NODE_NONE && pt->move_target >= m->nnodes)
            return PK_ECORRUPT;
        if ((m->scheme == PK_SCHEME_RANGE) != (pt->lo != NULL))
            return PK_ECORRUPT;
        if (pt->hi && pt->lo &&
            bytes_cmp(pt->lo, pt->lo_len, pt->hi, pt->hi_len) > 0)
            return PK_ECORRUPT;
        if (pk_pmap_retired(m, p) &&
            (pt->nreplicas || pt->nlearners || pt->lo_len == 0 ||
             pt->move_target != PK_NODE_NONE || pt->flags))
            return PK_ECORRUPT;
        if ((pt->flags & ~PK_PART_FLAGS) ||
            (pt->flags && m->scheme != PK_SCHEME_RANGE))
            return PK_ECORRUPT;
    }
    return PK_OK;
}

/* Where key's salt entry is (1) or would go (0), in *at. */
static int salt_pos(const pk_pmap *m, const void *key, size_t len, uint32_t *at)
{
    uint32_t lo = 0, hi = m->nsalts;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c =
            bytes_cmp(m->salts[mid].key, m->salts[mid].len, key, (uint32_t)len);
        if (c == 0) {
            *at = mid;
            return 1;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return 0;
}

const pk_salt *pk_pmap_salt_find(const pk_pmap *m, const void *key, size_t len)
{
    uint32_t at;

    return m->nsalts && salt_pos(m, key, len, &at) ? &m->salts[at] : NULL;
}

/* Whether one entry is well formed (n a power of two, a known state). */
static int salt_ok(const pk_salt *s)
{
    return s->len >= 1 && s->len <= PK_SALT_KEY_MAX && s->n >= 2 &&
           s->n <= PK_SALT_PARTS_MAX && (s->n & (s->n - 1)) == 0 &&
           s->state <= PK_SALT_FOLDING;
}

int pk_pmap_salt_set(pk_pmap *m, const pk_salt *s)
{
    uint32_t at;
    uint8_t *key;

    if (m->scheme == PK_SCHEME_RANGE || !salt_ok(s))
        return PK_EINVAL;
    if (dup_bytes(s->key, s->len, &key) != PK_OK)
        return PK_ENOMEM;
    if (salt_pos(m, s->key, s->len, &at)) {
        free(m->salts[at].key);
    } else {
        pk_salt *g;
        if (m->nsalts >= PK_SALTS_MAX) {
            free(key);
            return PK_EFULL;
        }
        g = realloc(m->salts, (m->nsalts + 1) * sizeof(*g));
        if (g == NULL) {
            free(key);
            return PK_ENOMEM;
        }
        m->salts = g;
        memmove(&g[at + 1], &g[at], (m->nsalts - at) * sizeof(*g));
        m->nsalts++;
    }
    m->salts[at] = *s;
    m->salts[at].key = key;
    memset(&m->salts[at].tags[s->n], 0,
           (PK_SALT_PARTS_MAX - s->n) * sizeof(s->tags[0]));
    m->salts[at].tags[0] = 0;
    return PK_OK;
}

int pk_pmap_salt_del(pk_pmap *m, const void *key, size_t len)
{
    uint32_t at;

    if (!m->nsalts || !salt_pos(m, key, len, &at))
        return PK_ENOTFOUND;
    free(m->salts[at].key);
    memmove(&m->salts[at], &m->salts[at + 1],
            (m->nsalts - at - 1) * sizeof(*m->salts));
    m->nsalts--;
    return PK_OK;
}

/* The salt table's invariants: well-formed entries, sorted, unique. */
static int salts_valid(const pk_pmap *m)
{
    if (m->nsalts && m->scheme == PK_SCHEME_RANGE)
        return 0;
    if (m->nsalts > PK_SALTS_MAX)
        return 0;
    for (uint32_t i = 0; i < m->nsalts; i++) {
        const pk_salt *s = &m->salts[i];
        if (!salt_ok(s) || s->tags[0] != 0)
            return 0;
        if (i && bytes_cmp(m->salts[i - 1].key, m->salts[i - 1].len, s->key,
                           s->len) >= 0)
            return 0;
    }
    return 1;
}

int pk_pmap_retired(const pk_pmap *m, uint32_t p)
{
    const pk_partition *pt;

    if (m->scheme != PK_SCHEME_RANGE || p >= m->npartitions)
        return 0;
    pt = &m->parts[p];
    return pt->hi && pt->lo &&
           bytes_cmp(pt->lo, pt->lo_len, pt->hi, pt->hi_len) == 0;
}

uint32_t pk_pmap_live_parts(const pk_pmap *m)
{
    uint32_t n = 0;

    for (uint32_t p = 0; p < m->npartitions; p++)
        n += !pk_pmap_retired(m, p);
    return n;
}

int pk_pmap_compact(const pk_pmap *m, pk_pmap **out, uint32_t **ids)
{
    uint32_t n = 0, *map = malloc((m->npartitions + 1) * sizeof(*map));
    pk_pmap *c = NULL;

    if (map == NULL || pk_pmap_clone(m, &c) != PK_OK) {
        free(map);
        return PK_ENOMEM;
    }
    for (uint32_t p = 0; p < c->npartitions; p++) {
        if (pk_pmap_retired(c, p)) {
            free(c->parts[p].lo);
            free(c->parts[p].hi);
            continue;
        }
        map[n] = p;
        c->parts[n++] = c->parts[p];
    }
    c->npartitions = n;
    *out = c;
    *ids = map;
    return PK_OK;
}

static int part_equal(const pk_partition *a, const pk_partition *b)
{
    if (a->nreplicas != b->nreplicas || a->nlearners != b->nlearners ||
        a->move_state != b->move_state || a->move_target != b->move_target ||
        a->leader_epoch != b->leader_epoch || a->flags != b->flags)
        return 0;
    if (memcmp(a->replicas, b->replicas, a->nreplicas * sizeof(uint32_t)) ||
        memcmp(a->learners, b->learners, a->nlearners * sizeof(uint32_t)))
        return 0;
    if ((a->lo == NULL) != (b->lo == NULL) ||
        (a->hi == NULL) != (b->hi == NULL))
        return 0;
    if (a->lo && bytes_cmp(a->lo, a->lo_len, b->lo, b->lo_len) != 0)
        return 0;
    if (a->hi && bytes_cmp(a->hi, a->hi_len, b->hi, b->hi_len) != 0)
        return 0;
    return 1;
}

int pk_pmap_equal(const pk_pmap *a, const pk_pmap *b)
{
    if (a->epoch != b->epoch || a->scheme != b->scheme || a->hash != b->hash ||
        a->replicas != b->replicas || a->nnodes != b->nnodes ||
        a->npartitions != b->npartitions || a->nsalts != b->nsalts ||
        a->nftdefs != b->nftdefs)
        return 0;
    for (uint32_t i = 0; i < a->nftdefs; i++)
        if (bytes_cmp(a->ftdefs[i].bytes, a->ftdefs[i].len, b->ftdefs[i].bytes,
                      b->ftdefs[i].len) != 0)
            return 0;
    for (uint32_t i = 0; i < a->nsalts; i++) {
        const pk_salt *x = &a->salts[i], *y = &b->salts[i];
        if (x->n != y->n || x->state != y->state ||
            bytes_cmp(x->key, x->len, y->key, y->len) != 0 ||
            memcmp(x->tags, y->tags, x->n * sizeof(x->tags[0])) != 0)
            return 0;
    }
    for (uint32_t i = 0; i < a->nnodes; i++) {
        const pk_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->id != y->id || x->state != y->state || x->weight != y->weight ||
            strcmp(x->name, y->name) || strcmp(x->addr, y->addr) ||
            strcmp(x->zone, y->zone))
            return 0;
    }
    for (uint32_t p = 0; p < a->npartitions; p++)
        if (!part_equal(&a->parts[p], &b->parts[p]))
            return 0;
    return 1;
}

/* ---- index definitions ------------------------------------------------ */

/* The name of the definition encoded in b, copied to name (of
 * PK_FT_NAME_MAX + 1 bytes): 0, or PK_ECORRUPT / PK_ENOMEM. */
static int ftblob_name(const pk_ftblob *b, char *name)
{
    pk_ftdef *d;
    int rc = pk_ftdef_decode(b->bytes, b->len, &d);

    if (rc == PK_OK) {
        snprintf(name, PK_FT_NAME_MAX + 1, "%s", d->name);
        pk_ftdef_free(d);
    }
    return rc;
}

int pk_pmap_ftdef_find(const pk_pmap *m, const char *name)
{
    char have[PK_FT_NAME_MAX + 1];

    for (uint32_t i = 0; i < m->nftdefs; i++)
        if (ftblob_name(&m->ftdefs[i], have) == PK_OK &&
            strcmp(have, name) == 0)
            return (int)i;
    return -1;
}

int pk_pmap_ftdef_set(pk_pmap *m, const uint8_t *bytes, uint32_t len)
{
    pk_ftblob b = {(uint8_t *)bytes, len}, *g;
    char name[PK_FT_NAME_MAX + 1];
    int rc = ftblob_name(&b, name), at;

    if (rc != PK_OK)
        return rc == PK_ENOMEM ? PK_ENOMEM : PK_EINVAL;
    if (dup_bytes(bytes, len, &b.bytes) != PK_OK)
        return PK_ENOMEM;
    if ((at = pk_pmap_ftdef_find(m, name)) >= 0) {
        free(m->ftdefs[at].bytes);
        m->ftdefs[at] = b;
        return PK_OK;
    }
    if (m->nftdefs >= PK_FTDEFS_MAX ||
        (g = realloc(m->ftdefs, (m->nftdefs + 1) * sizeof(*g))) == NULL) {
        free(b.bytes);
        return m->nftdefs >= PK_FTDEFS_MAX ? PK_EFULL : PK_ENOMEM;
    }
    m->ftdefs = g;
    m->ftdefs[m->nftdefs++] = b;
    return PK_OK;
}

int pk_pmap_ftdef_del(pk_pmap *m, const char *name)
{
    int at = pk_pmap_ftdef_find(m, name);

    if (at < 0)
        return PK_ENOTFOUND;
    free(m->ftdefs[at].bytes);
    memmove(&m->ftdefs[at], &m->ftdefs[at + 1],
            (m->nftdefs - (uint32_t)at - 1) * sizeof(*m->ftdefs));
    m->nftdefs--;
    return PK_OK;
}

/* Every definition decodes, and no two share a name or an id. */
static int ftdefs_valid(const pk_pmap *m)
{
    for (uint32_t i = 0; i < m->nftdefs; i++) {
        pk_ftdef *a;
        int ok;
        if (pk_ftdef_decode(m->ftdefs[i].bytes, m->ftdefs[i].len, &a) != 0)
            return 0;
        ok = pk_pmap_ftdef_find(m, a->name) == (int)i;
        for (uint32_t j = 0; ok && j < i; j++) {
            pk_ftdef *b;
            if (pk_ftdef_decode(m->ftdefs[j].bytes, m->ftdefs[j].len, &b))
                ok = 0;
            else
                ok = b->id != a->id;
            pk_ftdef_free(b);
        }
        pk_ftdef_free(a);
        if (!ok)
            return 0;
    }
    return 1;
}

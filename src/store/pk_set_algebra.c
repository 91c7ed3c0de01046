/*
 * pk_set_algebra: SINTER / SUNION / SDIFF, SINTERCARD and the STORE forms.
 *
 * The algebra streams, holding no member in memory: an intersection
 * walks the smallest set and looks each member up in the others, a
 * difference walks the first set and looks each up in the rest, a union
 * merges the sets' cursors (members are stored in sub-key order, the
 * same in every set, so a k-way merge by sub-key yields each member
 * once).  Every key's type is checked
 * before any member is read, so WRONGTYPE comes before any callback.
 *
 * Only the STORE forms hold the result in memory, because writing dst may
 * move the pages the cursors read (and dst may be a source): the result
 * is copied out, and only then is dst replaced (a member of any length
 * fits under any key), so an error writes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_set_int.h"

/* The keys of a set operation, loaded: prefixes live in one block. */
typedef struct srcs {
    size_t n;
    uint8_t *blk;    /* owned: every prefix */
    size_t *off;     /* owned: prefix i at blk + off[i] */
    size_t *plen;    /* owned */
    uint64_t *count; /* owned: 0 for a missing key */
} srcs;

static void srcs_free(srcs *s)
{
    free(s->blk);
    free(s->off);
    free(s->plen);
    free(s->count);
}

static const uint8_t *src_prefix(const srcs *s, size_t i)
{
    return s->blk + s->off[i];
}

/* Loads every key, checking types before anything reads members. */
static int srcs_load(pk_txn *t, uint32_t part, size_t nkeys,
                     const pk_slice *keys, uint64_t now, srcs *s)
{
    size_t total = 0;
    pk__meta m;
    int rc = 0;

    s->n = nkeys;
    for (size_t i = 0; i < nkeys; i++) {
        total += pk_keyenc_prefix_len(keys[i].ptr, keys[i].len);
    }
    s->blk = malloc(total + 1);
    s->off = malloc(nkeys * sizeof(*s->off));
    s->plen = malloc(nkeys * sizeof(*s->plen));
    s->count = malloc(nkeys * sizeof(*s->count));
    if (!s->blk || !s->off || !s->plen || !s->count) {
        return PK_ENOMEM;
    }
    total = 0;
    for (size_t i = 0; rc == 0 && i < nkeys; i++) {
        rc = pk__set_load(t, part, keys[i].ptr, keys[i].len, now, &m);
        s->off[i] = total;
        s->plen[i] = m.exists ? m.plen : 0;
        s->count[i] = m.exists ? m.count : 0;
        if (rc == 0 && m.exists) {
            memcpy(s->blk + total, m.key, m.plen);
            total += m.plen;
        }
    }
    return rc;
}

/* Whether mem belongs in the result, given it is in set `from`. */
static int keep(pk_txn *t, const srcs *s, pk_set_op op, size_t from,
                pk_slice mem)
{
    for (size_t i = 0; i < s->n; i++) {
        int h;
        if (i == from || (op == PK_SETOP_DIFF && s->count[i] == 0)) {
            continue;
        }
        h = pk__set_has(t, src_prefix(s, i), s->plen[i], mem.ptr, mem.len);
        if (h < 0 || (op == PK_SETOP_INTER && h == 0) ||
            (op == PK_SETOP_DIFF && h == 1)) {
            return h < 0 ? h : 0;
        }
    }
    return 1;
}

/* Intersection or difference: pk__sub_walk one set, probe the others. */
static int probe(pk_txn *t, const srcs *s, pk_set_op op, uint64_t limit,
                 pk_set_cb cb, void *ctx, uint64_t *card)
{
    size_t from = 0;
    uint64_t n = 0;
    pk__sub_walk w;
    int rc, k;

    for (size_t i = 0; op == PK_SETOP_INTER && i < s->n; i++) {
        if (s->count[i] == 0) {
            *card = 0;
            return 0;
        }
        from = s->count[i] < s->count[from] ? i : from;
    }
    if (s->count[from] == 0) {
        *card = 0;
        return 0;
    }
    rc = pk__sub_walk_open(t, &w, src_prefix(s, from), s->plen[from],
                           PK_TAG_SMEMBER, 0);
    while (rc == 0 && w.valid && (limit == 0 || n < limit)) {
        /* Only `from` itself is skipped: SDIFF a a probes the copy. */
        k = keep(t, s, op, from, w.mem);
        if (k < 0) {
            rc = k;
        } else if (k > 0) {
            n++;
            rc = cb ? cb(ctx, w.mem) : 0;
        }
        rc = rc ? rc : pk__sub_walk_next(t, &w, 0);
    }
    pk__sub_walk_close(&w);
    if (rc == 0) {
        *card = n;
    }
    return rc;
}

static int slice_cmp(pk_slice a, pk_slice b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;

    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* Union: a k-way merge of the sets' cursors. */
static int merge(pk_txn *t, const srcs *s, pk_set_cb cb, void *ctx,
                 uint64_t *card)
{
    pk__sub_walk *w = calloc(s->n, sizeof(*w));
    uint64_t n = 0;
    int rc = w ? 0 : PK_ENOMEM;
    pk_slice min = {NULL, 0};
    size_t best;

    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        if (s->count[i] > 0) {
            rc = pk__sub_walk_open(t, &w[i], src_prefix(s, i), s->plen[i],
                                   PK_TAG_SMEMBER, 0);
        }
    }
    while (rc == 0) {
        best = s->n;
        for (size_t i = 0; i < s->n; i++) {
            if (w[i].valid && (best == s->n || slice_cmp(w[i].sub, min) < 0)) {
                best = i;
                min = w[i].sub;
            }
        }
        if (best == s->n) {
            break;
        }
        n++;
        rc = cb ? cb(ctx, w[best].mem) : 0;
        /* min points into the map: compare before moving its cursor. */
        for (size_t i = s->n; rc == 0 && i-- > 0;) {
            if (i != best && w[i].valid && slice_cmp(w[i].sub, min) == 0) {
                rc = pk__sub_walk_next(t, &w[i], 0);
            }
        }
        rc = rc ? rc : pk__sub_walk_next(t, &w[best], 0);
    }
    for (size_t i = 0; w != NULL && i < s->n; i++) {
        pk__sub_walk_close(&w[i]);
    }
    free(w);
    if (rc == 0) {
        *card = n;
    }
    return rc;
}

static int combine(pk_txn *t, uint32_t part, pk_set_op op, size_t nkeys,
                   const pk_slice *keys, uint64_t limit, uint64_t now,
                   pk_set_cb cb, void *ctx, uint64_t *card)
{
    srcs s = {0};
    int rc;

    if (nkeys == 0 || op < PK_SETOP_UNION || op > PK_SETOP_DIFF) {
        return PK_EINVAL;
    }
    rc = srcs_load(t, part, nkeys, keys, now, &s);
    if (rc == 0) {
        rc = op == PK_SETOP_UNION ? merge(t, &s, cb, ctx, card)
                                  : probe(t, &s, op, limit, cb, ctx, card);
    }
    srcs_free(&s);
    return rc;
}

int pk_set_combine(pk_txn *t, uint32_t part, pk_set_op op, size_t nkeys,
                   const pk_slice *keys, uint64_t limit, uint64_t now_ms,
                   pk_set_cb cb, void *ctx, uint64_t *card)
{
    int rc = pk__read_begin(t, part);

    return rc ? rc
              : combine(t, part, op, nkeys, keys, limit, now_ms, cb, ctx, card);
}

/* A STORE form's result, copied out of the map. */
typedef struct result {
    pk__buf buf; /* owned; see pk__set_buf_add */
} result;

static int nop_cb(void *ctx, pk_slice mem)
{
    (void)ctx;
    (void)mem;
    return 0;
}

static int result_add(void *ctx, pk_slice mem)
{
    result *r = ctx;

    return pk__set_buf_add(&r->buf, mem);
}

int pk_set_store(pk_txn *t, uint32_t part, pk_set_op op, const void *dst,
                 size_t dlen, size_t nkeys, const pk_slice *keys,
                 uint64_t now_ms, uint64_t *card)
{
    uint8_t kb[PK_KEYENC_MAX];
    result r = {{NULL, 0, 0}};
    uint64_t n = 0;
    size_t kl;
    pk__meta d;
    pk_slice mem;
    int rc = pk__op_begin(t, part, 0), drc;

    if (rc != 0) {
        return rc;
    }
    /* Whether dst can be stored (PK_ERANGE: its long key's digest
     * prefix holds another key); its META is reloaded below, after the
     * sources (one of which may be dst). */
    drc = pk__meta_load(t, part, dst, dlen, now_ms, &d);
    if (drc != 0 && drc != PK_ERANGE) {
        rc = drc;
        goto out;
    }
    rc = combine(t, part, op, nkeys, keys, 0, now_ms,
                 drc == 0 ? result_add : nop_cb, &r, &n);
    if (rc == 0 && drc != 0 && n > 0) {
        rc = PK_ERANGE;
    }
    if (rc != 0 || drc != 0) {
        goto done;
    }
    if ((rc = pk__meta_load(t, part, dst, dlen, now_ms, &d)) != 0) {
        goto done;
    }
    if (d.exists) {
        rc = pk__key_drop(t, &d);
    }
    for (size_t off = 0; rc == 0 && pk__set_buf_next(&r.buf, &off, &mem);) {
        pk__set_member_key(d.key, d.plen, mem.ptr, mem.len, kb, &kl);
        rc = pk__set_put(t, kb, kl, mem);
    }
    if (rc == 0 && n > 0) {
        pk__set_fresh(&d);
        d.count = n;
        rc = pk__meta_put(t, &d, NULL, 0, NULL, 0);
    }
done:
    if (rc == 0) {
        *card = n;
    }
    free(r.buf.p);
out:
    return pk__op_end(t, rc);
}

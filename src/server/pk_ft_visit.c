/*
 * pk_ft_visit: running a query on the partitions a node leads -- the
 * candidates its index lookups give (or every document of the index), each
 * read and checked against the query (pk_ft_int.h) -- and deleting an
 * index's documents (FT.DROPINDEX ... DD).
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_ftq.h"
#include "proto/pk_rreply.h"
#include "server/pk_ft_int.h"
#include "server/pk_repl.h"
#include "store/pk_ftidx.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_store.h"

typedef struct keyv {
    uint8_t **k; /* owned copies: u32 length | bytes */
    size_t n, cap;
} keyv;

static int keyv_add(void *ctx, pk_slice key)
{
    keyv *v = ctx;
    uint8_t *c;

    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        uint8_t **g = realloc(v->k, cap * sizeof(*g));
        if (g == NULL)
            return PK_ENOMEM;
        v->k = g;
        v->cap = cap;
    }
    if ((c = malloc(4 + key.len)) == NULL)
        return PK_ENOMEM;
    pk_be32_put(c, (uint32_t)key.len);
    memcpy(c + 4, key.ptr, key.len);
    v->k[v->n++] = c;
    return 0;
}

int pk__ft_keycmp(const void *a, const void *b)
{
    const uint8_t *x = *(uint8_t *const *)a, *y = *(uint8_t *const *)b;
    uint32_t lx = pk_be32_get(x), ly = pk_be32_get(y);
    int c = memcmp(x + 4, y + 4, lx < ly ? lx : ly);

    return c ? c : (lx > ly) - (lx < ly);
}

/* Sorts v and frees repeats. */
static void keyv_unique(keyv *v)
{
    size_t w = 0;

    if (v->n == 0)
        return;
    qsort(v->k, v->n, sizeof(*v->k), pk__ft_keycmp);
    for (size_t i = 1; i < v->n; i++) {
        if (pk__ft_keycmp(&v->k[w], &v->k[i]) == 0)
            free(v->k[i]);
        else
            v->k[++w] = v->k[i];
    }
    v->n = w + 1;
}

static void keyv_free(keyv *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->k[i]);
    free(v->k);
}

static int pk__ftdoc_add(void *ctx, pk_slice f, pk_slice v)
{
    pk__ftdoc *doc = ctx;

    if (doc->n == doc->cap) {
        size_t cap = doc->cap ? 2 * doc->cap : 16;
        pk_slice *a = realloc(doc->name, cap * sizeof(*a));
        if (a == NULL)
            return PK_ENOMEM;
        doc->name = a;
        if ((a = realloc(doc->val, cap * sizeof(*a))) == NULL)
            return PK_ENOMEM;
        doc->val = a;
        doc->cap = cap;
    }
    doc->name[doc->n] = f;
    doc->val[doc->n++] = v;
    return 0;
}

const pk_slice *pk__ftdoc_get(const pk__ftdoc *doc, const char *name,
                              size_t len)
{
    for (size_t i = 0; i < doc->n; i++)
        if (doc->name[i].len == len && memcmp(doc->name[i].ptr, name, len) == 0)
            return &doc->val[i];
    return NULL;
}

static int doc_field(void *ctx, uint32_t f, const char **val, size_t *len)
{
    const pk__ftdoc *doc = ctx;
    const char *name = doc->d->fields[f].name;
    const pk_slice *v = pk__ftdoc_get(doc, name, strlen(name));

    if (v == NULL)
        return 0;
    *val = v->ptr;
    *len = v->len;
    return 1;
}

/* The value of a field a query names by attribute or hash field name. */
const pk_slice *pk__ftdoc_named(const pk__ftdoc *doc, pk_slice name)
{
    int f = pk_ftdef_find(doc->d, name.ptr, name.len);

    if (f >= 0) {
        const char *hn = doc->d->fields[f].name;
        return pk__ftdoc_get(doc, hn, strlen(hn));
    }
    return pk__ftdoc_get(doc, name.ptr, name.len);
}

/* The candidates of q in partition p: the hits of its lookups (but those
 * ix's term filter rules out), or every document of the index. */
static int candidates(pk_server *s, pk_txn *t, uint32_t p, const pk_ftdef *d,
                      const ft_index *ix, const pk_ftq_scan *sc, int nsc,
                      keyv *v)
{
    int rc = 0;

    if (nsc <= 0)
        return pk_ftidx_docs(t, p, d->id, keyv_add, v);
    for (int i = 0; rc == 0 && i < nsc; i++)
        if (pk__ft_filter_may(s, ix, p, &sc[i]))
            rc = pk_ftidx_scan(t, p, d->id, &sc[i], keyv_add, v);
    keyv_unique(v);
    return rc;
}

static int in_keys(const pk_arg *inkeys, int ninkeys, const uint8_t *key)
{
    uint32_t n = pk_be32_get(key);

    if (ninkeys == 0)
        return 1;
    for (int i = 0; i < ninkeys; i++)
        if (inkeys[i].len == n && memcmp(inkeys[i].ptr, key + 4, n) == 0)
            return 1;
    return 0;
}

/* A global index's hit, checked against its copy. */
typedef struct ghit {
    const pk_ftq *q;
    pk__ftdoc *doc;
    const pk_arg *inkeys;
    int ninkeys;
    uint32_t part;
    pk__ft_match_fn fn;
    void *ctx;
} ghit;

static int global_hit(void *ctx, pk_slice key, pk_slice copy)
{
    ghit *g = ctx;
    uint8_t *k = malloc(4 + key.len);
    pk_slice kk;
    uint64_t expiry;
    int rc;

    if (k == NULL)
        return PK_ENOMEM;
    pk_be32_put(k, (uint32_t)key.len);
    memcpy(k + 4, key.ptr, key.len);
    g->doc->n = 0;
    rc = in_keys(g->inkeys, g->ninkeys, k)
             ? pk_ftglob_copy_each(copy, &kk, &expiry, pk__ftdoc_add, g->doc)
             : 0;
    if (rc == 0 && g->doc->n > 0 && pk_ftq_match(g->q, doc_field, g->doc))
        rc = g->fn(g->ctx, g->doc, g->part, k);
    free(k);
    return rc;
}

/* Runs q on every partition parts selects, calling fn for each
 * matching document.  A global index's lookups read its entries, each
 * checked against the copy it holds; its other queries walk the DOC
 * entries beside the data, as a local index's do. */
int pk__ft_visit(pk_server *s, const pk_ftdef *d, const pk_ftq *q,
                 const pk_arg *inkeys, int ninkeys, const uint8_t *parts,
                 uint32_t nparts, pk__ft_match_fn fn, void *ctx)
{
    /* A plan wider than PK__FT_PLAN_MAX lookups (a wide OR) walks the
     * index's documents instead: one lookup costs a search in every
     * partition (16,384 in a cluster), a document read far less. */
    pk_ftq_scan sc[PK__FT_PLAN_MAX];
    int nsc = pk_ftq_plan(q, sc, PK__FT_PLAN_MAX), rc = 0;
    int global = (d->id & PK_FTIDX_GLOBAL) && nsc > 0;
    pk__ftdoc doc = {.d = d};
    ghit g = {q, &doc, inkeys, ninkeys, 0, fn, ctx};
    const ft_index *ix = pk__ft_by_id(s, d->id);
    pk_txn *t = s->txn; /* this iteration's writes too, when it has any:
                         * a pipelined HSET before the query is seen */

    if (t == NULL && (rc = pk_txn_begin(s->store, 1, &t)) != 0)
        return rc;
    for (uint32_t p = 0; rc == 0 && p < nparts; p++) {
        keyv v = {0};
        if (parts && !(parts[p / 8] & (1u << (p % 8))))
            continue;
        g.part = p;
        for (int i = 0; global && rc == 0 && i < nsc; i++)
            rc = pk_ftglob_scan(t, p, d, sc, i, s->now_ms, global_hit, &g);
        if (!global)
            rc = candidates(s, t, p, d, ix, sc, nsc, &v);
        for (size_t i = 0; rc == 0 && i < v.n; i++) {
            const uint8_t *key = v.k[i];
            if (!in_keys(inkeys, ninkeys, key))
                continue;
            doc.n = 0;
            rc = pk_hmap_each(t, p, key + 4, pk_be32_get(key), s->now_ms,
                              pk__ftdoc_add, &doc);
            if (rc == PK_STORE_WRONGTYPE || (rc == 0 && doc.n == 0)) {
                rc = 0; /* gone since: the index catches up */
                continue;
            }
            if (rc == 0 && pk_ftq_match(q, doc_field, &doc))
                rc = fn(ctx, &doc, p, key);
        }
        keyv_free(&v);
    }
    free(doc.name);
    free(doc.val);
    if (t != s->txn)
        pk_txn_abort(t);
    return rc;
}

/* ---- the query and its arguments ---------------------------------------- */

int pk__ft_count(const pk_arg *a, int64_t max, int64_t *out)
{
    return pk_arg_i64(a, out) && *out >= 0 && *out <= max;
}

int pk__ft_params(const pk_arg *a, int argc, int i, pk__ftparams *p)
{
    int64_t k;

    if (i + 1 >= argc || !pk__ft_count(&a[i + 1], argc - i - 2, &k) || k % 2 ||
        k / 2 > PK__FT_PARAMS_MAX)
        return -1;
    p->n = (int)(k / 2);
    for (int j = 0; j < p->n; j++) {
        p->name[j] = a[i + 2 + 2 * j].ptr;
        p->nlen[j] = a[i + 2 + 2 * j].len;
        p->val[j] = a[i + 3 + 2 * j].ptr;
        p->vlen[j] = a[i + 3 + 2 * j].len;
    }
    return 2 + (int)k;
}

int pk__ft_query(pk_obuf *o, const pk_ftdef *d, pk_slice q,
                 const pk__ftparams *p, pk_ftq **out)
{
    char err[256];
    int rc = pk_ftq_parse(d, q.ptr, q.len, p->n, p->name, p->nlen, p->val,
                          p->vlen, out, err, sizeof(err));

    if (rc == 0)
        return 0;
    pk__ft_error(o, rc == PK_EINVAL ? err : "ERR out of memory");
    return -1;
}

/* ---- FT.DROPINDEX ... DD ------------------------------------------------ */

typedef struct doomed {
    keyv keys;
    uint32_t *part;
    size_t cap;
} doomed;

static int doom(void *ctx, const pk__ftdoc *doc, uint32_t part,
                const uint8_t *key)
{
    doomed *d = ctx;
    size_t i = d->keys.n;
    int rc;

    (void)doc;
    if (i == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        uint32_t *p = realloc(d->part, cap * sizeof(*p));
        if (p == NULL)
            return PK_ENOMEM;
        d->part = p;
        d->cap = cap;
    }
    if ((rc = keyv_add(&d->keys, (pk_slice){key + 4, pk_be32_get(key)})) != 0)
        return rc;
    d->part[i] = part;
    return 0;
}

int pk__ft_delete_docs(pk_cmd_ctx *x, const pk_ftdef *d, const uint8_t *parts,
                       uint32_t np, int64_t *n)
{
    pk_server *s = x->srv;
    doomed dm = {0};
    char err[128];
    pk_ftq *q = NULL;
    pk_txn *t;
    int rc;

    *n = 0;
    /* In the iteration's transaction: its own writes are deleted too. */
    if ((t = pk_srv_txn(x)) == NULL)
        return -1;
    rc = pk_ftq_parse(d, "*", 1, 0, NULL, NULL, NULL, NULL, &q, err,
                      sizeof(err));
    if (rc == 0)
        rc = pk__ft_visit(s, d, q, NULL, 0, parts, np, doom, &dm);
    pk_ftq_free(q);
    if (rc != 0) {
        pk__ft_errorf(x->out, "ERR DD failed: %s", pk_strerror(rc));
    } else {
        for (size_t i = 0; rc == 0 && i < dm.keys.n; i++) {
            const uint8_t *k = dm.keys.k[i];
            pk_slice key = {k + 4, pk_be32_get(k)};
            int gone = 0;
            rc = pk_key_del(t, dm.part[i], key.ptr, key.len, s->now_ms, &gone);
            *n += gone;
            pk__ft_reindex(s, t, dm.part[i], key);
            /* Acknowledged, and streamed, as any write of that partition:
             * noted after its last delete (keys come partition by
             * partition). */
            if (rc == 0 &&
                (i + 1 == dm.keys.n || dm.part[i + 1] != dm.part[i])) {
                x->have_part = 1;
                x->part = dm.part[i];
                pk_repl_note(x, 1);
            }
        }
        x->have_part = 0;
        if (rc != 0)
            pk_cmd_store_error(x, rc);
    }
    keyv_free(&dm.keys);
    free(dm.part);
    return rc == 0 ? 0 : -1;
}

/* A node's share of DD: its documents deleted, the count answered. */
static void del_node(pk_cmd_ctx *y, const pk_ftdef *d, const uint8_t *parts,
                     uint32_t np, pk_obuf *o)
{
    int64_t n;

    y->out = o;
    if (pk__ft_delete_docs(y, d, parts, np, &n) == 0)
        pk_reply_int(o, n);
}

static void del_reset(void *state)
{
    *(int64_t *)state = 0;
}

static const char *del_take(void *state, const pk_rr *r)
{
    if (r->type != PK_RR_INT)
        return "ERR a node answered DD badly";
    *(int64_t *)state += r->integer;
    return NULL;
}

/* The documents are gone: the index leaves the map, whose edit answers. */
static int del_reply(void *state, pk_server *s, const pk_ftdef *d, pk_conn *c)
{
    (void)state;
    pk__ft_drop_waiting(s, c, d);
    return 0;
}

const pk__ftverb pk__ft_del_verb = {"DELDOCS", 1,         del_node, del_reset,
                                    del_take,  del_reply, free,     NULL};

void pk__ft_search_deldocs(pk_cmd_ctx *x, ft_index *ix)
{
    int64_t *n = calloc(1, sizeof(*n));

    if (n == NULL) {
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    pk__ft_gather(x, ix->def, &pk__ft_del_verb, n, NULL);
}

/*
 * pk_ft_search: FT.SEARCH, FT.INFO and FT.AGGREGATE -- scattered to the
 * nodes that lead the partitions, gathered and merged here (pk_ft.h).
 *
 *   client --FT.SEARCH--> any node --PK.FTQUERY epoch parts SEARCH ...-->
 *                            |            every leader (itself directly)
 *                            |<-- [total, n, (key, sort value, fields)*]
 *                            +-- merge: sort, offset, count --> client
 *
 * "parts" is a bitmap of the partitions the receiver leads in the
 * sender's map.  A node answers only for partitions it leads itself; if
 * one of the listed is no longer its own it answers -TRYAGAIN and the
 * query runs again (a few times, 100 ms apart) on the newer map, so each
 * partition is answered exactly once.  A node alone runs the query on
 * its partition 0, through the same reply format.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "core/pk_ftq.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_ft_int.h"
#include "server/pk_link.h"
#include "server/pk_repl.h"
#include "store/pk_ftidx.h"
#include "store/pk_hmap.h"
#include "store/pk_store.h"

#define PLAN_MAX 64
#define RETRIES 30
#define RETRY_MS 100
#define PARAMS_MAX 256

/* ---- the request ----------------------------------------------------------
 */

typedef struct ret_field {
    pk_slice name, as; /* borrowed from the arguments */
} ret_field;

typedef struct filter {
    uint32_t field;
    double lo, hi;
    int lo_excl, hi_excl;
} filter;

/* FT.SEARCH's options (the arguments stay borrowed). */
typedef struct sreq {
    pk_slice query;
    int nocontent, withscores;
    int64_t offset, num;
    int sort_field; /* -1: none (by key) */
    int sort_desc, sort_num;
    int nreturn; /* -1: every field */
    ret_field *ret;
    int nfilters;
    filter *filters;
    int nparams;
    const char *pn[PARAMS_MAX], *pv[PARAMS_MAX];
    size_t pnl[PARAMS_MAX], pvl[PARAMS_MAX];
    int ninkeys;
    const pk_arg *inkeys;
} sreq;

static void sreq_free(sreq *r)
{
    free(r->ret);
    free(r->filters);
}

static int arg_count(const pk_arg *a, int64_t max, int64_t *out)
{
    return pk_arg_i64(a, out) && *out >= 0 && *out <= max;
}

/* A numeric bound of FILTER: "(x" exclusive, -inf/+inf. */
static int bound(const pk_arg *a, double *v, int *excl)
{
    char buf[64], *end;
    size_t n = a->len;
    const char *p = a->ptr;

    *excl = n > 0 && p[0] == '(';
    p += *excl;
    n -= (size_t)*excl;
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, p, n);
    buf[n] = 0;
    *v = strtod(buf, &end);
    return end == buf + n && !isnan(*v);
}

/* Parses FT.SEARCH idx query [options] against d: 0, or -1 after an
 * error reply. */
static int parse_search(pk_cmd_ctx *x, const pk_ftdef *d, sreq *r)
{
    const pk_arg *a = x->argv;
    int i = 3, n = x->argc;
    int64_t k;

    *r = (sreq){.query = {a[2].ptr, a[2].len},
                .num = 10,
                .sort_field = -1,
                .nreturn = -1};
    for (; i < n; i++) {
        if (pk_arg_eq(&a[i], "nocontent")) {
            r->nocontent = 1;
        } else if (pk_arg_eq(&a[i], "withscores")) {
            r->withscores = 1;
        } else if (pk_arg_eq(&a[i], "verbatim") ||
                   pk_arg_eq(&a[i], "nostopwords") ||
                   pk_arg_eq(&a[i], "withpayloads") ||
                   pk_arg_eq(&a[i], "withsortkeys") ||
                   pk_arg_eq(&a[i], "inorder") ||
                   pk_arg_eq(&a[i], "explainscore")) {
            continue;
        } else if ((pk_arg_eq(&a[i], "slop") || pk_arg_eq(&a[i], "timeout") ||
                    pk_arg_eq(&a[i], "language") ||
                    pk_arg_eq(&a[i], "expander") ||
                    pk_arg_eq(&a[i], "scorer") || pk_arg_eq(&a[i], "payload") ||
                    pk_arg_eq(&a[i], "dialect")) &&
                   i + 1 < n) {
            i++;
        } else if (pk_arg_eq(&a[i], "limit") && i + 2 < n) {
            if (!pk_arg_i64(&a[i + 1], &r->offset) ||
                !pk_arg_i64(&a[i + 2], &r->num) || r->offset < 0 ||
                r->num < 0 || r->offset + r->num > 1000000) {
                pk_reply_error(x->out, "LIMIT exceeds maximum of 1000000");
                return -1;
            }
            i += 2;
        } else if (pk_arg_eq(&a[i], "sortby") && i + 1 < n) {
            const char *f = a[i + 1].ptr;
            size_t fl = a[i + 1].len;
            if (fl && f[0] == '@') {
                f++;
                fl--;
            }
            if ((r->sort_field = pk_ftdef_find(d, f, fl)) < 0) {
                pk_reply_errorf(x->out,
                                "Property `%.*s` not loaded nor in "
                                "schema",
                                (int)fl, f);
                return -1;
            }
            r->sort_num = d->fields[r->sort_field].type == PK_FT_NUMERIC;
            i++;
            if (i + 1 < n &&
                (pk_arg_eq(&a[i + 1], "asc") || pk_arg_eq(&a[i + 1], "desc")))
                r->sort_desc = pk_arg_eq(&a[++i], "desc");
            if (i + 1 < n && pk_arg_eq(&a[i + 1], "withcount"))
                i++;
        } else if (pk_arg_eq(&a[i], "return") && i + 1 < n) {
            if (!arg_count(&a[i + 1], n - i - 2, &k))
                goto syntax;
            free(r->ret);
            r->ret = calloc((size_t)(k ? k : 1), sizeof(*r->ret));
            if (r->ret == NULL)
                goto oom;
            r->nreturn = 0;
            for (i += 2; k > 0; k--, i++) {
                ret_field *f = &r->ret[r->nreturn++];
                f->name = (pk_slice){a[i].ptr, a[i].len};
                f->as = f->name;
                if (k > 2 && pk_arg_eq(&a[i + 1], "as")) {
                    f->as = (pk_slice){a[i + 2].ptr, a[i + 2].len};
                    i += 2;
                    k -= 2;
                }
            }
            i--;
        } else if (pk_arg_eq(&a[i], "filter") && i + 3 < n) {
            filter *f;
            int fi = pk_ftdef_find(d, a[i + 1].ptr, a[i + 1].len);
            if (fi < 0 || d->fields[fi].type != PK_FT_NUMERIC) {
                pk_reply_errorf(x->out, "Unknown field `%.*s`",
                                (int)a[i + 1].len, a[i + 1].ptr);
                return -1;
            }
            f = realloc(r->filters, (size_t)(r->nfilters + 1) * sizeof(*f));
            if (f == NULL)
                goto oom;
            r->filters = f;
            f = &f[r->nfilters++];
            f->field = (uint32_t)fi;
            if (!bound(&a[i + 2], &f->lo, &f->lo_excl)) {
                pk_reply_errorf(x->out, "Bad lower range: %.*s",
                                (int)a[i + 2].len, a[i + 2].ptr);
                return -1;
            }
            if (!bound(&a[i + 3], &f->hi, &f->hi_excl)) {
                pk_reply_errorf(x->out, "Bad upper range: %.*s",
                                (int)a[i + 3].len, a[i + 3].ptr);
                return -1;
            }
            i += 3;
        } else if (pk_arg_eq(&a[i], "params") && i + 1 < n) {
            if (!arg_count(&a[i + 1], n - i - 2, &k) || k % 2 ||
                k / 2 > PARAMS_MAX)
                goto syntax;
            r->nparams = (int)(k / 2);
            for (int p = 0; p < r->nparams; p++) {
                r->pn[p] = a[i + 2 + 2 * p].ptr;
                r->pnl[p] = a[i + 2 + 2 * p].len;
                r->pv[p] = a[i + 3 + 2 * p].ptr;
                r->pvl[p] = a[i + 3 + 2 * p].len;
            }
            i += 1 + (int)k;
        } else if ((pk_arg_eq(&a[i], "inkeys") ||
                    pk_arg_eq(&a[i], "infields")) &&
                   i + 1 < n) {
            if (!arg_count(&a[i + 1], n - i - 2, &k))
                goto syntax;
            if (pk_arg_eq(&a[i], "inkeys")) {
                r->ninkeys = (int)k;
                r->inkeys = &a[i + 2];
            }
            i += 1 + (int)k;
        } else {
            pk_reply_errorf(x->out, "Unknown argument `%.*s` at position %d",
                            (int)a[i].len, a[i].ptr, i - 3);
            return -1;
        }
    }
    return 0;
syntax:
    pk_reply_error(x->out, "ERR syntax error");
    return -1;
oom:
    pk_reply_error(x->out, "ERR out of memory");
    return -1;
}

/* The query of r on d: 0 and *q, or -1 after an error reply. */
static int make_query(pk_obuf *out, const pk_ftdef *d, const sreq *r,
                      pk_ftq **q)
{
    char err[256];
    int rc;

    *q = NULL;
    rc = pk_ftq_parse(d, r->query.ptr, r->query.len, r->nparams, r->pn, r->pnl,
                      r->pv, r->pvl, q, err, sizeof(err));

    for (int i = 0; rc == 0 && i < r->nfilters; i++) {
        const filter *f = &r->filters[i];
        rc = pk_ftq_add_filter(*q, f->field, f->lo, f->lo_excl, f->hi,
                               f->hi_excl);
    }
    if (rc == 0)
        return 0;
    pk_reply_error(out, rc == PK_EINVAL ? err : "ERR out of memory");
    pk_ftq_free(*q); /* NULL unless a filter failed */
    *q = NULL;
    return -1;
}

/* ---- running a query on the partitions led here -------------------------- */

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

static int kcmp(const void *a, const void *b)
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
    qsort(v->k, v->n, sizeof(*v->k), kcmp);
    for (size_t i = 1; i < v->n; i++) {
        if (kcmp(&v->k[w], &v->k[i]) == 0)
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

static const pk_slice *pk__ftdoc_get(const pk__ftdoc *doc, const char *name,
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

/* A result as a node sends it: key, sort value (nil), fields (nil). */
static void put_result(pk_obuf *o, const sreq *r, const pk__ftdoc *doc,
                       const uint8_t *key)
{
    const pk_slice *sv = NULL;

    pk_reply_bulk(o, key + 4, pk_be32_get(key));
    if (r->sort_field >= 0) {
        const char *hn = doc->d->fields[r->sort_field].name;
        sv = pk__ftdoc_get(doc, hn, strlen(hn));
    }
    if (sv)
        pk_reply_bulk(o, sv->ptr, sv->len);
    else
        pk_reply_null(o, 2);
    if (r->nocontent || r->nreturn == 0) {
        pk_reply_null(o, 2);
        return;
    }
    if (r->nreturn < 0) {
        pk_reply_array(o, 2 * doc->n);
        for (size_t i = 0; i < doc->n; i++) {
            pk_reply_bulk(o, doc->name[i].ptr, doc->name[i].len);
            pk_reply_bulk(o, doc->val[i].ptr, doc->val[i].len);
        }
        return;
    }
    {
        size_t n = 0;
        for (int i = 0; i < r->nreturn; i++)
            n += pk__ftdoc_named(doc, r->ret[i].name) != NULL;
        pk_reply_array(o, 2 * n);
        for (int i = 0; i < r->nreturn; i++) {
            const pk_slice *v = pk__ftdoc_named(doc, r->ret[i].name);
            if (v) {
                pk_reply_bulk(o, r->ret[i].as.ptr, r->ret[i].as.len);
                pk_reply_bulk(o, v->ptr, v->len);
            }
        }
    }
}

/* The candidates of q in partition p: the hits of its lookups, or every
 * document of the index. */
static int candidates(pk_txn *t, uint32_t p, const pk_ftdef *d,
                      const pk_ftq_scan *sc, int nsc, keyv *v)
{
    int rc = 0;

    if (nsc <= 0)
        return pk_ftidx_docs(t, p, d->id, keyv_add, v);
    for (int i = 0; rc == 0 && i < nsc; i++)
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

/* Runs q on every partition parts selects, calling fn for each
 * matching document. */
int pk__ft_visit(pk_server *s, const pk_ftdef *d, const pk_ftq *q,
                 const pk_arg *inkeys, int ninkeys, const uint8_t *parts,
                 uint32_t nparts, pk__ft_match_fn fn, void *ctx)
{
    pk_ftq_scan small[PLAN_MAX], *sc = small;
    int nsc = pk_ftq_plan(q, sc, PLAN_MAX), rc = 0;
    pk__ftdoc doc = {.d = d};
    pk_txn *t;

    /* A wide OR (10,000 tags) needs more lookups than fit here; a walk
     * of every document would answer too, but slower. */
    for (int cap = 1024; nsc < 0 && cap <= PK_FTQ_NODES_MAX; cap *= 16) {
        pk_ftq_scan *big =
            realloc(sc == small ? NULL : sc, (size_t)cap * sizeof(*big));
        if (big == NULL)
            break;
        sc = big;
        nsc = pk_ftq_plan(q, sc, cap);
    }
    if ((rc = pk_txn_begin(s->store, 1, &t)) != 0)
        goto out;
    for (uint32_t p = 0; rc == 0 && p < nparts; p++) {
        keyv v = {0};
        if (parts && !(parts[p / 8] & (1u << (p % 8))))
            continue;
        rc = candidates(t, p, d, sc, nsc, &v);
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
    pk_txn_abort(t);
out:
    if (sc != small)
        free(sc);
    return rc;
}

/* ---- a node's answer to SEARCH ------------------------------------------- */

/* The results a node keeps: at most keep of the best, as encoded replies
 * with their sort values, trimmed when twice as many piled up. */
typedef struct best {
    const sreq *r;
    size_t keep;
    int64_t total;
    pk_obuf *items; /* each one result's three replies */
    char **sortv;   /* owned copies of sort values (NULL: none) */
    uint8_t **keys; /* owned: u32 length | key */
    size_t n, cap;
} best;

static int cmp_vals(const sreq *r, const char *a, size_t al, const char *b,
                    size_t bl)
{
    int c;

    if (a == NULL || b == NULL) /* a missing value sorts last */
        return a == NULL ? (b != NULL) : -1;
    if (r->sort_num) {
        double x = strtod(a, NULL), y = strtod(b, NULL);
        c = (x > y) - (x < y);
    } else {
        c = strncasecmp(a, b, al < bl ? al : bl);
        if (c == 0)
            c = (al > bl) - (al < bl);
    }
    return r->sort_desc ? -c : c;
}

static int cmp_best(const void *pa, const void *pb, void *ctx)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const best *bs = ctx;
    const char *x = bs->sortv[a], *y = bs->sortv[b];
    int c = bs->r->sort_field >= 0
                ? cmp_vals(bs->r, x, x ? strlen(x) : 0, y, y ? strlen(y) : 0)
                : 0;

    return c ? c : kcmp(&bs->keys[a], &bs->keys[b]);
}

/* Keeps the best keep of the results (sorted). */
static int best_trim(best *b)
{
    size_t *ord = malloc((b->n ? b->n : 1) * sizeof(*ord)), w;
    pk_obuf *items;
    char **sv;
    uint8_t **ks;

    if (ord == NULL)
        return PK_ENOMEM;
    for (size_t i = 0; i < b->n; i++)
        ord[i] = i;
    qsort_r(ord, b->n, sizeof(*ord), cmp_best, b);
    items = malloc((b->cap ? b->cap : 1) * sizeof(*items));
    sv = malloc((b->cap ? b->cap : 1) * sizeof(*sv));
    ks = malloc((b->cap ? b->cap : 1) * sizeof(*ks));
    if (items == NULL || sv == NULL || ks == NULL) {
        free(items);
        free(sv);
        free(ks);
        free(ord);
        return PK_ENOMEM;
    }
    w = b->n < b->keep ? b->n : b->keep;
    for (size_t i = 0; i < b->n; i++) {
        size_t j = ord[i];
        if (i < w) {
            items[i] = b->items[j];
            sv[i] = b->sortv[j];
            ks[i] = b->keys[j];
        } else {
            pk_obuf_free(&b->items[j]);
            free(b->sortv[j]);
            free(b->keys[j]);
        }
    }
    free(b->items);
    free(b->sortv);
    free(b->keys);
    b->items = items;
    b->sortv = sv;
    b->keys = ks;
    b->n = w;
    free(ord);
    return 0;
}

static int best_add(void *ctx, const pk__ftdoc *doc, uint32_t part,
                    const uint8_t *key)
{
    best *b = ctx;
    const sreq *r = b->r;
    const pk_slice *sv = NULL;
    uint32_t kl = pk_be32_get(key);

    (void)part;
    b->total++;
    if (b->keep == 0)
        return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        pk_obuf *i = realloc(b->items, cap * sizeof(*i));
        char **s;
        uint8_t **k;
        if (i == NULL)
            return PK_ENOMEM;
        b->items = i;
        if ((s = realloc(b->sortv, cap * sizeof(*s))) == NULL)
            return PK_ENOMEM;
        b->sortv = s;
        if ((k = realloc(b->keys, cap * sizeof(*k))) == NULL)
            return PK_ENOMEM;
        b->keys = k;
        b->cap = cap;
    }
    if (r->sort_field >= 0) {
        const char *hn = doc->d->fields[r->sort_field].name;
        sv = pk__ftdoc_get(doc, hn, strlen(hn));
    }
    b->sortv[b->n] = sv ? strndup(sv->ptr, sv->len) : NULL;
    b->keys[b->n] = malloc(4 + kl);
    if ((sv && b->sortv[b->n] == NULL) || b->keys[b->n] == NULL) {
        free(b->sortv[b->n]);
        free(b->keys[b->n]);
        return PK_ENOMEM;
    }
    memcpy(b->keys[b->n], key, 4 + kl);
    pk_obuf_init(&b->items[b->n]);
    put_result(&b->items[b->n], r, doc, key);
    b->n++;
    return b->n >= 2 * b->keep + 16 ? best_trim(b) : 0;
}

static void best_free(best *b)
{
    for (size_t i = 0; i < b->n; i++) {
        pk_obuf_free(&b->items[i]);
        free(b->sortv[i]);
        free(b->keys[i]);
    }
    free(b->items);
    free(b->sortv);
    free(b->keys);
}

/* SEARCH on the partitions parts selects, answered to out as
 * [total, n, (key, sort value, fields)*n]. */
static void node_search(pk_server *s, pk_obuf *out, const pk_ftdef *d,
                        const sreq *r, const uint8_t *parts, uint32_t nparts)
{
    best b = {.r = r, .keep = (size_t)(r->offset + r->num)};
    pk_ftq *q;
    int rc;

    if (make_query(out, d, r, &q) != 0)
        return;
    rc = pk__ft_visit(s, d, q, r->inkeys, r->ninkeys, parts, nparts, best_add,
                      &b);
    pk_ftq_free(q);
    if (rc == 0)
        rc = best_trim(&b);
    if (rc != 0) {
        pk_reply_errorf(out, "ERR search failed: %s", pk_strerror(rc));
    } else {
        pk_reply_array(out, 2 + 3 * b.n);
        pk_reply_int(out, b.total);
        pk_reply_int(out, (int64_t)b.n);
        for (size_t i = 0; i < b.n; i++)
            pk_obuf_append(out, b.items[i].data + b.items[i].head,
                           b.items[i].len - b.items[i].head);
    }
    best_free(&b);
}

/* ---- gathering ---------------------------------------------------------- */

enum { V_SEARCH = 1, V_INFO = 2, V_AGG = 3, V_DEL = 4 };

struct ft_op {
    pk_server *s;
    pk_conn *c; /* NULL once it closed */
    int verb;
    int argc;
    pk_arg *args;  /* owned copy of the client's arguments */
    pk_ftdef *def; /* owned copy */
    sreq r;
    best b;          /* SEARCH: the merged results */
    int64_t info[4]; /* INFO: docs, bytes, partitions led, built */
    pk__ftagg *agg;  /* AGGREGATE: the merged groups or rows */
    int pending, retry, tries;
    uint64_t due_ms; /* a retry's time */
    char *err;       /* the first error, owned */
    ft_op *next;
};

static void op_free(ft_op *op)
{
    pk_ft *ft = op->s->ft;
    ft_op **pp = ft ? &ft->ops : NULL;

    while (pp && *pp && *pp != op)
        pp = &(*pp)->next;
    if (pp && *pp)
        *pp = op->next;
    best_free(&op->b);
    sreq_free(&op->r);
    pk__ft_agg_free(op->agg);
    pk_ftdef_free(op->def);
    free(op->args);
    free(op->err);
    free(op);
}

static void op_fail(ft_op *op, const char *err, size_t len)
{
    if (strncmp(err, "TRYAGAIN", 8) == 0 && op->tries < RETRIES)
        op->retry = 1;
    else if (op->err == NULL)
        op->err = strndup(err, len);
}

/* Copies reply r (bulk, int, nil, arrays of them) to o. */
static void put_rr(pk_obuf *o, const pk_rr *r)
{
    switch (r->type) {
    case PK_RR_INT:
        pk_reply_int(o, r->integer);
        break;
    case PK_RR_ARRAY:
        pk_reply_array(o, r->n);
        for (size_t i = 0; i < r->n; i++)
            put_rr(o, &r->elems[i]);
        break;
    case PK_RR_NIL:
        pk_reply_null(o, 2);
        break;
    default:
        pk_reply_bulk(o, r->str, r->len);
        break;
    }
}

/* A node's SEARCH answer into the merged results. */
static void take_search(ft_op *op, const pk_rr *r)
{
    best *b = &op->b;

    if (r->type != PK_RR_ARRAY || r->n < 2 || r->elems[0].type != PK_RR_INT ||
        (r->n - 2) % 3) {
        op_fail(op, "ERR a node answered the search badly", 36);
        return;
    }
    b->total += r->elems[0].integer;
    for (size_t i = 2; i + 2 < r->n; i += 3) {
        const pk_rr *k = &r->elems[i], *sv = &r->elems[i + 1],
                    *f = &r->elems[i + 2];
        pk_obuf *it;
        if (k->type != PK_RR_BULK) {
            op_fail(op, "ERR a node answered the search badly", 36);
            return;
        }
        if (b->n == b->cap) {
            size_t cap = b->cap ? 2 * b->cap : 16;
            pk_obuf *ni = realloc(b->items, cap * sizeof(*ni));
            char **ns;
            uint8_t **nk;
            if (ni)
                b->items = ni;
            ns = ni ? realloc(b->sortv, cap * sizeof(*ns)) : NULL;
            if (ns)
                b->sortv = ns;
            nk = ns ? realloc(b->keys, cap * sizeof(*nk)) : NULL;
            if (nk == NULL) {
                op_fail(op, "ERR out of memory", 17);
                return;
            }
            b->keys = nk;
            b->cap = cap;
        }
        b->sortv[b->n] =
            sv->type == PK_RR_BULK ? strndup(sv->str, sv->len) : NULL;
        b->keys[b->n] = malloc(4 + k->len);
        if (b->keys[b->n] == NULL) {
            free(b->sortv[b->n]);
            op_fail(op, "ERR out of memory", 17);
            return;
        }
        pk_be32_put(b->keys[b->n], (uint32_t)k->len);
        memcpy(b->keys[b->n] + 4, k->str, k->len);
        it = &b->items[b->n];
        pk_obuf_init(it);
        pk_reply_bulk(it, k->str, k->len);
        if (op->r.withscores)
            pk_reply_bulk(it, "1", 1);
        if (!op->r.nocontent && op->r.nreturn != 0)
            put_rr(it, f->type == PK_RR_ARRAY ? f : &(pk_rr){.type = '*'});
        b->n++;
    }
    if (b->n >= 2 * b->keep + 16 && best_trim(b) != 0)
        op_fail(op, "ERR out of memory", 17);
}

static void take_info(ft_op *op, const pk_rr *r)
{
    if (r->type != PK_RR_ARRAY || r->n != 4) {
        op_fail(op, "ERR a node answered FT.INFO badly", 33);
        return;
    }
    for (int i = 0; i < 4; i++)
        op->info[i] += r->elems[i].integer;
}

static void take_agg(ft_op *op, const pk_rr *r)
{
    const char *err = pk__ft_agg_take(op->agg, r);

    if (err)
        op_fail(op, err, strlen(err));
}

static void reply_agg(ft_op *op, pk_obuf *o)
{
    pk__ft_agg_reply(op->agg, o);
}

static void take(ft_op *op, const pk_rr *r)
{
    if (r->type == PK_RR_ERROR)
        op_fail(op, r->str, r->len);
    else if (op->verb == V_DEL && r->type == PK_RR_INT)
        op->info[0] += r->integer;
    else if (op->verb == V_DEL)
        op_fail(op, "ERR a node answered DD badly", 28);
    else if (op->verb == V_SEARCH)
        take_search(op, r);
    else if (op->verb == V_INFO)
        take_info(op, r);
    else
        take_agg(op, r);
}

static void reply_info(ft_op *op, pk_obuf *o);

/* Every node answered: the client's reply, or a retry. */
static void finish(ft_op *op)
{
    pk_conn *c = op->c;
    pk_obuf *o;

    if (op->retry && op->err == NULL) {
        op->due_ms = op->s->now_ms + RETRY_MS;
        return; /* pk__ft_search_tick starts it again */
    }
    if (c && op->verb == V_DEL && op->err == NULL) {
        pk__ft_drop_waiting(op->s, c, op->def->name); /* it answers c */
    } else if (c) {
        o = &c->out;
        if (op->err) {
            pk_reply_error(o, op->err);
        } else if (op->verb == V_SEARCH) {
            best *b = &op->b;
            size_t from;
            if (best_trim(b) != 0) {
                pk_reply_error(o, "ERR out of memory");
            } else {
                from =
                    (size_t)op->r.offset < b->n ? (size_t)op->r.offset : b->n;
                pk_reply_array(
                    o, 1 + (b->n - from) *
                               (1 + (size_t)op->r.withscores +
                                (!op->r.nocontent && op->r.nreturn != 0)));
                pk_reply_int(o, b->total);
                for (size_t i = from; i < b->n; i++)
                    pk_obuf_append(o, b->items[i].data + b->items[i].head,
                                   b->items[i].len - b->items[i].head);
            }
        } else if (op->verb == V_INFO) {
            reply_info(op, o);
        } else {
            reply_agg(op, o);
        }
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
    op_free(op);
}

static void on_reply(void *ctx, const pk_rr *r, const char *err)
{
    ft_op *op = ctx;

    if (err)
        op_fail(op, err, strlen(err));
    else
        take(op, r);
    if (--op->pending == 0)
        finish(op);
}

/* What a node runs for verb on the partitions in parts, answered to o. */
static void node_run(pk_server *s, pk_obuf *o, int verb, const pk_ftdef *d,
                     pk_cmd_ctx *y, const uint8_t *parts, uint32_t np);

/* Runs the node's share here and takes its answer as a peer's. */
static void run_here(ft_op *op, pk_cmd_ctx *y, const uint8_t *parts,
                     uint32_t np)
{
    pk_rreply_reader *rd = NULL;
    pk_obuf o;
    pk_rr *r = NULL;

    pk_obuf_init(&o);
    node_run(op->s, &o, op->verb, op->def, y, parts, np);
    if (pk_rreply_reader_new(NULL, &rd) != 0 ||
        pk_rreply_feed(rd, o.data + o.head, o.len - o.head) != 0 ||
        pk_rreply_next(rd, &r) != 1)
        op_fail(op, "ERR out of memory", 17);
    else
        take(op, r);
    pk_rr_free(r);
    pk_rreply_reader_free(rd);
    pk_obuf_free(&o);
}

/* A context whose arguments are the client's, for node_run here. */
static pk_cmd_ctx op_ctx(ft_op *op)
{
    return (pk_cmd_ctx){
        .srv = op->s, .argc = op->argc, .argv = op->args, .proto = 2};
}

/* Sends the query to every node that leads partitions (runs our share
 * here); the answers come to on_reply. */
static void start(ft_op *op)
{
    pk_server *s = op->s;
    const pk_pmap *m = s->cluster.map;
    uint32_t np = pk__ft_nparts(s), nn;
    size_t bytes = (np + 7) / 8;
    uint8_t *bits;
    pk_cmd_ctx y = op_ctx(op);

    op->retry = 0;
    op->tries++;
    op->pending = 1; /* held until every call went out */
    best_free(&op->b);
    op->b = (best){.r = &op->r, .keep = (size_t)(op->r.offset + op->r.num)};
    memset(op->info, 0, sizeof(op->info));
    if (!s->cluster.enabled) {
        uint8_t one = 1;
        run_here(op, &y, &one, 1);
    } else if (m == NULL) {
        op_fail(op, "CLUSTERDOWN no partition map", 28);
    } else if ((bits = calloc((size_t)m->nnodes * bytes, 1)) == NULL) {
        op_fail(op, "ERR out of memory", 17);
    } else {
        nn = m->nnodes;
        for (uint32_t p = 0; p < np; p++) {
            uint32_t l = pk_pmap_leader(m, p);
            if (l >= nn) {
                op_fail(op, "CLUSTERDOWN a partition has no leader", 37);
                break;
            }
            bits[(size_t)l * bytes + p / 8] |= (uint8_t)(1u << (p % 8));
        }
        for (uint32_t n = 0; op->err == NULL && n < nn; n++) {
            const uint8_t *b = bits + (size_t)n * bytes;
            size_t k = 0;
            while (k < bytes && b[k] == 0)
                k++;
            if (k == bytes)
                continue;
            if (n == s->cluster.self && op->verb != V_DEL) {
                run_here(op, &y, b, np);
            } else {
                char ep[24];
                int argc = 4 + op->argc - 1;
                const char **av = malloc((size_t)argc * sizeof(*av));
                size_t *al = malloc((size_t)argc * sizeof(*al));
                pk_obuf ob;
                int rc = PK_ENOMEM;
                snprintf(ep, sizeof(ep), "%llu", (unsigned long long)m->epoch);
                if (av && al) {
                    av[0] = "PK.FTQUERY";
                    av[1] = ep;
                    av[2] = (const char *)b;
                    av[3] = op->verb == V_SEARCH ? "SEARCH"
                            : op->verb == V_INFO ? "INFO"
                            : op->verb == V_DEL  ? "DELDOCS"
                                                 : "AGGREGATE";
                    for (int i = 0; i < 4; i++)
                        al[i] = i == 2 ? bytes : strlen(av[i]);
                    for (int i = 1; i < op->argc; i++) {
                        av[3 + i] = op->args[i].ptr;
                        al[3 + i] = op->args[i].len;
                    }
                    pk_obuf_init(&ob);
                    rc = pk_rr_write_cmd(&ob, argc, av, al);
                    if (rc == 0)
                        rc = pk_link_call(s, m->nodes[n].addr, &ob, on_reply,
                                          op);
                    pk_obuf_free(&ob);
                }
                free(av);
                free(al);
                if (rc == 0)
                    op->pending++;
                else
                    op_fail(op, "TRYAGAIN a node is not reachable", 32);
            }
        }
        free(bits);
    }
    if (--op->pending == 0)
        finish(op);
}

void pk__ft_search_tick(pk_server *s)
{
    for (ft_op *op = s->ft ? s->ft->ops : NULL, *next; op; op = next) {
        next = op->next;
        if (op->retry && op->pending == 0 && s->now_ms >= op->due_ms)
            start(op);
    }
}

/* A new operation for the client's command in x on index ix; NULL after
 * an error reply. */
static ft_op *op_new(pk_cmd_ctx *x, ft_index *ix, int verb)
{
    ft_op *op = calloc(1, sizeof(*op));

    if (op == NULL ||
        (op->args = pk_conn_args_copy(x->argc, x->argv)) == NULL ||
        (op->def = pk_ftdef_dup(ix->def)) == NULL) {
        if (op)
            free(op->args);
        free(op);
        pk_reply_error(x->out, "ERR out of memory");
        return NULL;
    }
    op->s = x->srv;
    op->verb = verb;
    op->argc = x->argc;
    op->next = x->srv->ft->ops;
    x->srv->ft->ops = op;
    return op;
}

/* Hands the client's answer to op: the connection waits for it. */
static void op_go(pk_cmd_ctx *x, ft_op *op)
{
    op->c = x->c;
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--;
    start(op);
}

static ft_index *index_arg(pk_cmd_ctx *x)
{
    ft_index *ix;

    if (x->srv->ft == NULL || x->srv->store == NULL) {
        pk_reply_error(x->out, "ERR secondary indexes need a node with a "
                               "store (not a proxy)");
        return NULL;
    }
    if ((ix = pk__ft_find(x->srv, x->argv[1].ptr, x->argv[1].len)) == NULL)
        pk_reply_errorf(x->out, "%.*s: no such index", (int)x->argv[1].len,
                        x->argv[1].ptr);
    return ix;
}

void pk_cmd_ft_search(pk_cmd_ctx *x)
{
    ft_index *ix = index_arg(x);
    ft_op *op;
    pk_cmd_ctx y;
    pk_ftq *q;

    if (ix == NULL || (op = op_new(x, ix, V_SEARCH)) == NULL)
        return;
    y = op_ctx(op);
    y.out = x->out;
    /* Errors in the query are found here, before any node is asked. */
    if (parse_search(&y, op->def, &op->r) != 0 ||
        make_query(x->out, op->def, &op->r, &q) != 0) {
        op_free(op);
        return;
    }
    pk_ftq_free(q);
    op_go(x, op);
}

void pk_cmd_ft_info(pk_cmd_ctx *x)
{
    ft_index *ix = index_arg(x);
    ft_op *op;

    if (ix == NULL || (op = op_new(x, ix, V_INFO)) == NULL)
        return;
    op_go(x, op);
}

/* ---- a node's share --------------------------------------------------------
 */

static void node_info(pk_server *s, pk_obuf *o, const pk_ftdef *d,
                      const uint8_t *parts, uint32_t np)
{
    int64_t docs = 0, bytes = 0, led = 0, built = 0;
    pk_txn *t;
    int rc = pk_txn_begin(s->store, 1, &t);

    for (uint32_t p = 0; rc == 0 && p < np; p++) {
        uint64_t dn, bn;
        if (!(parts[p / 8] & (1u << (p % 8))))
            continue;
        led++;
        if ((rc = pk_ftidx_count(t, p, d->id, &dn, &bn)) != 0)
            break;
        docs += (int64_t)dn;
        bytes += (int64_t)bn;
        if ((rc = pk_ftidx_built(t, p, d)) < 0)
            break;
        built += rc;
        rc = 0;
    }
    pk_txn_abort(t);
    if (rc != 0) {
        pk_reply_errorf(o, "ERR FT.INFO failed: %s", pk_strerror(rc));
        return;
    }
    pk_reply_array(o, 4);
    pk_reply_int(o, docs);
    pk_reply_int(o, bytes);
    pk_reply_int(o, led);
    pk_reply_int(o, built);
}

static void node_run(pk_server *s, pk_obuf *o, int verb, const pk_ftdef *d,
                     pk_cmd_ctx *y, const uint8_t *parts, uint32_t np)
{
    sreq r;

    if (verb == V_INFO) {
        node_info(s, o, d, parts, np);
        return;
    }
    if (verb == V_AGG) {
        pk__ftagg *g = pk__ft_agg_new(y, d, o);
        if (g)
            pk__ft_agg_node(s, g, d, parts, np, o);
        pk__ft_agg_free(g);
        return;
    }
    y->out = o;
    if (parse_search(y, d, &r) == 0)
        node_search(s, o, d, &r, parts, np);
    sreq_free(&r);
}

void pk_cmd_pk_ftquery(pk_cmd_ctx *x)
{
    pk_server *s = x->srv;
    uint32_t np = pk__ft_nparts(s);
    const pk_arg *bits = &x->argv[2];
    pk_cmd_ctx y = *x;
    ft_index *ix;
    int verb;

    if (s->cluster.enabled && !x->c->internal) {
        pk_reply_error(x->out, "NOPERM PK.FTQUERY is for nodes");
        return;
    }
    verb = pk_arg_eq(&x->argv[3], "search")      ? V_SEARCH
           : pk_arg_eq(&x->argv[3], "info")      ? V_INFO
           : pk_arg_eq(&x->argv[3], "aggregate") ? V_AGG
           : pk_arg_eq(&x->argv[3], "deldocs")   ? V_DEL
                                                 : 0;
    if (verb == 0 || x->argc < 5 || bits->len != (np + 7) / 8) {
        pk_reply_syntax(x);
        return;
    }
    for (uint32_t p = 0; p < np; p++)
        if ((((const uint8_t *)bits->ptr)[p / 8] & (1u << (p % 8))) &&
            !pk_srv_leads(s, p)) {
            pk_reply_errorf(x->out, "TRYAGAIN partition %u is not led here", p);
            return;
        }
    if ((ix = pk__ft_find(s, x->argv[4].ptr, x->argv[4].len)) == NULL) {
        pk_reply_errorf(x->out, "TRYAGAIN %.*s: no such index here yet",
                        (int)x->argv[4].len, x->argv[4].ptr);
        return;
    }
    y.argv = x->argv + 3;
    y.argc = x->argc - 3;
    if (verb == V_DEL) {
        int64_t n;
        if (pk__ft_delete_docs(&y, ix->def, (const uint8_t *)bits->ptr, np,
                               &n) == 0)
            pk_reply_int(x->out, n);
        return;
    }
    node_run(s, x->out, verb, ix->def, &y, (const uint8_t *)bits->ptr, np);
}

/* ---- FT.INFO's reply ----------------------------------------------------- */

static void reply_info(ft_op *op, pk_obuf *o)
{
    const pk_ftdef *d = op->def;
    char pct[32];
    static const char *const types[] = {"", "TAG", "NUMERIC", "TEXT"};

    snprintf(pct, sizeof(pct), "%g",
             op->info[2] ? (double)op->info[3] / (double)op->info[2] : 1.0);
    pk_reply_array(o, 22);
    pk_reply_bulk_str(o, "index_name");
    pk_reply_bulk_str(o, d->name);
    pk_reply_bulk_str(o, "index_options");
    pk_reply_array(o, 0);
    pk_reply_bulk_str(o, "index_definition");
    pk_reply_array(o, 6);
    pk_reply_bulk_str(o, "key_type");
    pk_reply_bulk_str(o, "HASH");
    pk_reply_bulk_str(o, "prefixes");
    pk_reply_array(o, d->nprefixes);
    for (uint32_t i = 0; i < d->nprefixes; i++)
        pk_reply_bulk(o, d->prefixes[i], d->prefix_len[i]);
    pk_reply_bulk_str(o, "index_type");
    pk_reply_bulk_str(o, d->global ? "GLOBAL" : "LOCAL");
    pk_reply_bulk_str(o, "attributes");
    pk_reply_array(o, d->nfields);
    for (uint32_t i = 0; i < d->nfields; i++) {
        const pk_ftfield *f = &d->fields[i];
        char sep[2] = {f->sep, 0};
        pk_reply_array(o, f->type == PK_FT_TAG ? 8 : 6);
        pk_reply_bulk_str(o, "identifier");
        pk_reply_bulk_str(o, f->name);
        pk_reply_bulk_str(o, "attribute");
        pk_reply_bulk_str(o, pk_ftdef_attr(d, i));
        pk_reply_bulk_str(o, "type");
        pk_reply_bulk_str(o, types[f->type]);
        if (f->type == PK_FT_TAG) {
            pk_reply_bulk_str(o, "SEPARATOR");
            pk_reply_bulk_str(o, sep);
        }
    }
    pk_reply_bulk_str(o, "num_docs");
    pk_reply_int(o, op->info[0]);
    pk_reply_bulk_str(o, "max_doc_id");
    pk_reply_int(o, op->info[0]);
    pk_reply_bulk_str(o, "num_records");
    pk_reply_int(o, op->info[1]);
    pk_reply_bulk_str(o, "hash_indexing_failures");
    pk_reply_int(o, 0);
    pk_reply_bulk_str(o, "indexing");
    pk_reply_int(o, op->info[3] < op->info[2]);
    pk_reply_bulk_str(o, "percent_indexed");
    pk_reply_bulk_str(o, pct);
    pk_reply_bulk_str(o, "index_bytes");
    pk_reply_int(o, op->info[1]);
}

/* ---- life ------------------------------------------------------------------
 */

void pk__ft_search_forget(pk_server *s, pk_conn *c)
{
    for (ft_op *op = s->ft->ops; op; op = op->next)
        if (op->c == c)
            op->c = NULL;
}

void pk__ft_search_free(pk_server *s)
{
    /* Calls in flight were failed by the links' close; retries wait. */
    while (s->ft->ops)
        op_free(s->ft->ops);
}

void pk_cmd_ft_aggregate(pk_cmd_ctx *x)
{
    ft_index *ix = index_arg(x);
    ft_op *op;
    pk_cmd_ctx y;

    if (ix == NULL || (op = op_new(x, ix, V_AGG)) == NULL)
        return;
    y = op_ctx(op);
    if ((op->agg = pk__ft_agg_new(&y, op->def, x->out)) == NULL) {
        op_free(op);
        return;
    }
    op_go(x, op);
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
    rc = pk_ftq_parse(d, "*", 1, 0, NULL, NULL, NULL, NULL, &q, err,
                      sizeof(err));
    if (rc == 0)
        rc = pk__ft_visit(s, d, q, NULL, 0, parts, np, doom, &dm);
    pk_ftq_free(q);
    if (rc != 0) {
        pk_reply_errorf(x->out, "ERR DD failed: %s", pk_strerror(rc));
    } else if ((t = pk_srv_txn(x)) == NULL) {
        rc = -1;
    } else {
        for (size_t i = 0; rc == 0 && i < dm.keys.n; i++) {
            const uint8_t *k = dm.keys.k[i];
            pk_slice key = {k + 4, pk_be32_get(k)};
            int gone = 0;
            rc = pk_key_del(t, dm.part[i], key.ptr, key.len, s->now_ms, &gone);
            *n += gone;
            pk__ft_reindex(s, t, dm.part[i], key);
            /* Acknowledged, and streamed, as any write of that partition. */
            if (rc == 0 && (i == 0 || dm.part[i] != dm.part[i - 1])) {
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

void pk__ft_search_deldocs(pk_cmd_ctx *x, ft_index *ix)
{
    ft_op *op = op_new(x, ix, V_DEL);

    if (op != NULL)
        op_go(x, op);
}

/*
 * pk_ft_search: FT.SEARCH and FT.INFO -- the request, a node's best
 * offset + count results with their sort values, and their merge (the
 * scatter itself is pk_ft_gather.c's):
 *
 *   node:  [total, n, (key, sort value or nil, fields or nil)*n]
 *   merged by (sort value, key); the page [offset, offset + count) goes
 *   to the client as RediSearch shapes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "core/pk_ftq.h"
#include "proto/pk_rreply.h"
#include "server/pk_acl.h"
#include "server/pk_ft_int.h"
#include "store/pk_ftidx.h"
#include "store/pk_store.h"

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
    int nocontent, withscores, consistent;
    int64_t offset, num;
    int sort_field; /* -1: none (by key) */
    int sort_desc, sort_num;
    int nreturn; /* -1: every field */
    ret_field *ret;
    int nfilters;
    filter *filters;
    pk__ftparams params;
    int ninkeys;
    const pk_arg *inkeys;
} sreq;

static void sreq_free(sreq *r)
{
    free(r->ret);
    free(r->filters);
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
        } else if (pk_arg_eq(&a[i], "consistent")) {
            r->consistent = 1;
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
                r->num < 0 || r->offset > 1000000 ||
                r->num > 1000000 - r->offset) {
                pk__ft_error(x->out, "LIMIT exceeds maximum of 1000000");
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
                pk__ft_errorf(x->out,
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
            if (!pk__ft_count(&a[i + 1], n - i - 2, &k))
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
                pk__ft_errorf(x->out, "Unknown field `%.*s`", (int)a[i + 1].len,
                              a[i + 1].ptr);
                return -1;
            }
            f = realloc(r->filters, (size_t)(r->nfilters + 1) * sizeof(*f));
            if (f == NULL)
                goto oom;
            r->filters = f;
            f = &f[r->nfilters++];
            f->field = (uint32_t)fi;
            f->lo_excl = f->hi_excl = 0;
            if (!pk_ftq_bound(a[i + 2].ptr, a[i + 2].len, &f->lo,
                              &f->lo_excl)) {
                pk__ft_errorf(x->out, "Bad lower range: %.*s",
                              (int)a[i + 2].len, a[i + 2].ptr);
                return -1;
            }
            if (!pk_ftq_bound(a[i + 3].ptr, a[i + 3].len, &f->hi,
                              &f->hi_excl)) {
                pk__ft_errorf(x->out, "Bad upper range: %.*s",
                              (int)a[i + 3].len, a[i + 3].ptr);
                return -1;
            }
            i += 3;
        } else if (pk_arg_eq(&a[i], "params")) {
            int took = pk__ft_params(a, n, i, &r->params);
            if (took < 0)
                goto syntax;
            i += took - 1;
        } else if ((pk_arg_eq(&a[i], "inkeys") ||
                    pk_arg_eq(&a[i], "infields")) &&
                   i + 1 < n) {
            if (!pk__ft_count(&a[i + 1], n - i - 2, &k))
                goto syntax;
            if (pk_arg_eq(&a[i], "inkeys")) {
                r->ninkeys = (int)k;
                r->inkeys = &a[i + 2];
            }
            i += 1 + (int)k;
        } else {
            pk__ft_errorf(x->out, "Unknown argument `%.*s` at position %d",
                          (int)a[i].len, a[i].ptr, i - 3);
            return -1;
        }
    }
    return 0;
syntax:
    pk__ft_error(x->out, "ERR syntax error");
    return -1;
oom:
    pk__ft_error(x->out, "ERR out of memory");
    return -1;
}

/* The query of r on d, FILTERs added: 0 and *q, or -1 after an error
 * reply. */
static int make_query(pk_obuf *out, const pk_ftdef *d, const sreq *r,
                      pk_ftq **q)
{
    int rc = 0;

    if (pk__ft_query(out, d, r->query, &r->params, q) != 0)
        return -1;
    for (int i = 0; rc == 0 && i < r->nfilters; i++) {
        const filter *f = &r->filters[i];
        rc = pk_ftq_add_filter(*q, f->field, f->lo, f->lo_excl, f->hi,
                               f->hi_excl);
    }
    if (rc == 0)
        return 0;
    pk__ft_error(out, "ERR out of memory");
    pk_ftq_free(*q);
    *q = NULL;
    return -1;
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
    const struct pk_acl_user *reader; /* pk_cmd_ctx.reader */
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

    return c ? c : pk__ft_keycmp(&bs->keys[a], &bs->keys[b]);
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
    /* A hit the asker may not read is no hit, nor in the total. */
    if (b->reader && !pk_acl_key_readable(b->reader, key + 4, kl))
        return 0;
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
                        const sreq *r, const uint8_t *parts, uint32_t nparts,
                        const struct pk_acl_user *reader)
{
    best b = {.r = r, .keep = (size_t)(r->offset + r->num), .reader = reader};
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
        pk__ft_errorf(out, "ERR search failed: %s", pk_strerror(rc));
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

/* ---- the search verb ------------------------------------------------- */

/* The gathering's state: the request, and the results merged so far. */
typedef struct sstate {
    pk_arg *args; /* owned: what r borrows */
    sreq r;
    best b;
} sstate;

static void search_node(pk_cmd_ctx *y, const pk_ftdef *d, const uint8_t *parts,
                        uint32_t np, pk_obuf *o)
{
    sreq r;

    y->out = o;
    if (y->argc < 3) { /* PK.FTQUERY ... SEARCH idx, no query */
        pk_reply_syntax(y);
        return;
    }
    if (parse_search(y, d, &r) == 0)
        node_search(y->srv, o, d, &r, parts, np, y->reader);
    sreq_free(&r);
}

static void search_reset(void *state)
{
    sstate *st = state;

    best_free(&st->b);
    st->b = (best){.r = &st->r, .keep = (size_t)(st->r.offset + st->r.num)};
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
static const char *search_take(void *state, const pk_rr *r)
{
    sstate *st = state;
    best *b = &st->b;

    if (r->type != PK_RR_ARRAY || r->n < 2 || r->elems[0].type != PK_RR_INT ||
        (r->n - 2) % 3) {
        return "ERR a node answered the search badly";
    }
    b->total += r->elems[0].integer;
    for (size_t i = 2; i + 2 < r->n; i += 3) {
        const pk_rr *k = &r->elems[i], *sv = &r->elems[i + 1],
                    *f = &r->elems[i + 2];
        pk_obuf *it;
        if (k->type != PK_RR_BULK) {
            return "ERR a node answered the search badly";
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
                return "ERR out of memory";
            }
            b->keys = nk;
            b->cap = cap;
        }
        b->sortv[b->n] =
            sv->type == PK_RR_BULK ? strndup(sv->str, sv->len) : NULL;
        b->keys[b->n] = malloc(4 + k->len);
        if (b->keys[b->n] == NULL) {
            free(b->sortv[b->n]);
            return "ERR out of memory";
        }
        pk_be32_put(b->keys[b->n], (uint32_t)k->len);
        memcpy(b->keys[b->n] + 4, k->str, k->len);
        it = &b->items[b->n];
        pk_obuf_init(it);
        pk_reply_bulk(it, k->str, k->len);
        if (st->r.withscores)
            pk_reply_bulk(it, "1", 1);
        if (!st->r.nocontent && st->r.nreturn != 0)
            put_rr(it, f->type == PK_RR_ARRAY ? f : &(pk_rr){.type = '*'});
        b->n++;
    }
    if (b->n >= 2 * b->keep + 16 && best_trim(b) != 0)
        return "ERR out of memory";
    return NULL;
}

static int search_reply(void *state, pk_server *s, const pk_ftdef *d,
                        pk_conn *c)
{
    sstate *st = state;
    best *b = &st->b;
    size_t from;

    (void)s;
    (void)d;
    if (best_trim(b) != 0) {
        pk__ft_error(&c->out, "ERR out of memory");
        return 1;
    }
    from = (size_t)st->r.offset < b->n ? (size_t)st->r.offset : b->n;
    pk_reply_array(&c->out, 1 + (b->n - from) *
                                    (1 + (size_t)st->r.withscores +
                                     (!st->r.nocontent && st->r.nreturn != 0)));
    pk_reply_int(&c->out, b->total);
    for (size_t i = from; i < b->n; i++)
        pk_obuf_append(&c->out, b->items[i].data + b->items[i].head,
                       b->items[i].len - b->items[i].head);
    return 1;
}

static void search_free(void *state)
{
    sstate *st = state;

    best_free(&st->b);
    sreq_free(&st->r);
    free(st->args);
    free(st);
}

const pk__ftverb pk__ft_search_verb = {"SEARCH",     0,           search_node,
                                       search_reset, search_take, search_reply,
                                       search_free,  NULL};

void pk_cmd_ft_search(pk_cmd_ctx *x)
{
    ft_index *ix = pk__ft_index_arg(x);
    sstate *st;
    pk_cmd_ctx y = *x;
    uint8_t *only;
    pk_ftq *q;

    if (ix == NULL)
        return;
    if ((st = calloc(1, sizeof(*st))) == NULL ||
        (st->args = pk_conn_args_copy(x->argc, x->argv)) == NULL) {
        free(st);
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    y.argv = st->args;
    /* Errors in the query are found here, before any node is asked. */
    if (parse_search(&y, ix->def, &st->r) != 0 ||
        make_query(x->out, ix->def, &st->r, &q) != 0) {
        search_free(st);
        return;
    }
    only = pk__ft_global_parts(x->srv, ix->def, q);
    pk_ftq_free(q);
    /* CONSISTENT: a local index, or a node alone, is always. */
    if (st->r.consistent && (ix->def->id & PK_FTIDX_GLOBAL))
        pk__ft_consistent(x, ix->def, st, only);
    else
        pk__ft_gather(x, ix->def, &pk__ft_search_verb, st, only);
}

/* ---- FT.INFO ------------------------------------------------------------ */

/* A node's FT.INFO: documents, bytes, partitions led and built, global
 * records waiting and the oldest one's age -- summed but the last (the
 * largest). */
#define INFO_N 6

static void info_node(pk_cmd_ctx *y, const pk_ftdef *d, const uint8_t *parts,
                      uint32_t np, pk_obuf *o)
{
    pk_server *s = y->srv;
    int64_t docs = 0, bytes = 0, led = 0, built = 0, lag_records, lag_ms;
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
    if (rc == 0)
        rc = pk__ft_global_lag(s, t, d, parts, np, &lag_records, &lag_ms);
    pk_txn_abort(t);
    if (rc != 0) {
        pk__ft_errorf(o, "ERR FT.INFO failed: %s", pk_strerror(rc));
        return;
    }
    pk_reply_array(o, INFO_N);
    pk_reply_int(o, docs);
    pk_reply_int(o, bytes);
    pk_reply_int(o, led);
    pk_reply_int(o, built);
    pk_reply_int(o, lag_records);
    pk_reply_int(o, lag_ms);
}

static void info_answer(const int64_t *info, const pk_ftdef *d, pk_obuf *o)
{
    char pct[32];
    static const char *const types[] = {"", "TAG", "NUMERIC", "TEXT"};

    snprintf(pct, sizeof(pct), "%g",
             info[2] ? (double)info[3] / (double)info[2] : 1.0);
    pk_reply_array(o, 26);
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
    pk_reply_int(o, info[0]);
    pk_reply_bulk_str(o, "max_doc_id");
    pk_reply_int(o, info[0]);
    pk_reply_bulk_str(o, "num_records");
    pk_reply_int(o, info[1]);
    pk_reply_bulk_str(o, "hash_indexing_failures");
    pk_reply_int(o, 0);
    pk_reply_bulk_str(o, "indexing");
    pk_reply_int(o, info[3] < info[2]);
    pk_reply_bulk_str(o, "percent_indexed");
    pk_reply_bulk_str(o, pct);
    pk_reply_bulk_str(o, "index_bytes");
    pk_reply_int(o, info[1]);
    /* A global index's lag: what the outboxes still hold for it. */
    pk_reply_bulk_str(o, "global_lag_records");
    pk_reply_int(o, info[4]);
    pk_reply_bulk_str(o, "global_lag_ms");
    pk_reply_int(o, info[5]);
}

static void info_reset(void *state)
{
    memset(state, 0, INFO_N * sizeof(int64_t));
}

static const char *info_take(void *state, const pk_rr *r)
{
    int64_t *info = state;

    if (r->type != PK_RR_ARRAY || r->n != INFO_N)
        return "ERR a node answered FT.INFO badly";
    for (int i = 0; i < INFO_N - 1; i++)
        info[i] += r->elems[i].integer;
    if (r->elems[INFO_N - 1].integer > info[INFO_N - 1])
        info[INFO_N - 1] = r->elems[INFO_N - 1].integer;
    return NULL;
}

static int info_reply(void *state, pk_server *s, const pk_ftdef *d, pk_conn *c)
{
    (void)s;
    info_answer(state, d, &c->out);
    return 1;
}

const pk__ftverb pk__ft_info_verb = {
    "INFO", 0, info_node, info_reset, info_take, info_reply, free, NULL};

void pk_cmd_ft_info(pk_cmd_ctx *x)
{
    ft_index *ix = pk__ft_index_arg(x);
    int64_t *info;

    if (ix == NULL)
        return;
    if ((info = calloc(INFO_N, sizeof(*info))) == NULL) {
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    pk__ft_gather(x, ix->def, &pk__ft_info_verb, info, NULL);
}

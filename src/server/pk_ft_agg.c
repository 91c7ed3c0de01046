/*
 * pk_ft_agg: FT.AGGREGATE -- GROUPBY with REDUCE COUNT, SUM, MIN, MAX, AVG,
 * COUNT_DISTINCT(ISH) and TOLIST, or LOAD of fields per document; then
 * SORTBY [MAX] and LIMIT over the rows.
 *
 * Every node reduces its own documents into partial groups (a count, a
 * sum, a minimum, a sum and count for AVG, the distinct values); the
 * node that received the command merges the groups by their values and
 * only then finishes them, so an average or a distinct count is exact
 * however the documents are spread.  Rows carry numbers as RediSearch
 * prints them (%.15g).
 *
 *   node:  [ngroups, (values[], partials[])*]   or  [nrows, row[]*]
 *
 * This file: the request, a node's share and the merge; the finished
 * rows and the client's reply are pk_ft_agg_rows.c's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "core/pk_ftq.h"
#include "core/pk_hash.h"
#include "proto/pk_rreply.h"
#include "server/pk_ft_int.h"

#include "server/pk_ft_agg_int.h"

/* ---- parsing ------------------------------------------------------------ */

static pk_slice no_at(const pk_arg *a)
{
    const char *p = a->ptr;
    size_t n = a->len;

    if (n && p[0] == '@') {
        p++;
        n--;
    }
    return (pk_slice){p, n};
}

static const struct {
    const char *name;
    int fn, nargs;
    const char *alias; /* RediSearch's generated alias prefix */
} REDS[] = {
    {"count", R_COUNT, 0, "__generated_aliascount"},
    {"sum", R_SUM, 1, "__generated_aliassum"},
    {"min", R_MIN, 1, "__generated_aliasmin"},
    {"max", R_MAX, 1, "__generated_aliasmax"},
    {"avg", R_AVG, 1, "__generated_aliasavg"},
    {"count_distinct", R_DISTINCT, 1, "__generated_aliascount_distinct"},
    {"count_distinctish", R_DISTINCT, 1, "__generated_aliascount_distinctish"},
    {"tolist", R_TOLIST, 1, "__generated_aliastolist"},
};

/* REDUCE fn nargs args [AS name] at a[*i]: 0, or -1 after an error. */
static int parse_reduce(pk__ftagg *g, const pk_arg *a, int n, int *i,
                        pk_obuf *out)
{
    int64_t nargs;
    reducer *r;
    size_t k;

    if (*i + 2 >= n || !pk__ft_count(&a[*i + 2], n - *i - 3, &nargs)) {
        pk__ft_error(out, "Bad arguments for REDUCE");
        return -1;
    }
    for (k = 0; k < sizeof(REDS) / sizeof(REDS[0]); k++)
        if (pk_arg_eq(&a[*i + 1], REDS[k].name))
            break;
    if (k == sizeof(REDS) / sizeof(REDS[0])) {
        pk__ft_errorf(out,
                      "Bad arguments for REDUCE: reducer `%.*s` is "
                      "not supported",
                      (int)a[*i + 1].len, a[*i + 1].ptr);
        return -1;
    }
    if (nargs != REDS[k].nargs || g->nred >= REDUCERS_MAX) {
        pk__ft_errorf(out,
                      "Bad arguments for %s: wrong number of "
                      "arguments",
                      REDS[k].name);
        return -1;
    }
    r = &g->red[g->nred++];
    r->fn = REDS[k].fn;
    r->field = nargs ? no_at(&a[*i + 3]) : (pk_slice){"", 0};
    snprintf(r->as, sizeof(r->as), "%s%.*s", REDS[k].alias, (int)r->field.len,
             (const char *)r->field.ptr);
    *i += 3 + (int)nargs;
    if (*i + 1 < n && pk_arg_eq(&a[*i], "as")) {
        snprintf(r->as, sizeof(r->as), "%.*s", (int)a[*i + 1].len,
                 a[*i + 1].ptr);
        *i += 2;
    }
    return 0;
}

static int parse_plan(pk__ftagg *g, pk_obuf *out)
{
    const pk_arg *a = g->args;
    int n = g->argc, i = 3;
    int64_t k;

    for (; i < n;) {
        if (pk_arg_eq(&a[i], "groupby") && i + 1 < n) {
            if (g->grouped) {
                pk__ft_error(out, "ERR one GROUPBY per FT.AGGREGATE is "
                                  "supported");
                return -1;
            }
            if (!pk__ft_count(&a[i + 1], GROUP_FIELDS_MAX, &k) ||
                i + 2 + k > n) {
                pk__ft_error(out, "Bad arguments for GROUPBY");
                return -1;
            }
            g->grouped = 1;
            g->ngroup = (int)k;
            for (int j = 0; j < k; j++)
                g->gf[j] = no_at(&a[i + 2 + j]);
            i += 2 + (int)k;
            while (i < n && pk_arg_eq(&a[i], "reduce"))
                if (parse_reduce(g, a, n, &i, out) != 0)
                    return -1;
        } else if (pk_arg_eq(&a[i], "sortby") && i + 1 < n) {
            if (!pk__ft_count(&a[i + 1], n - i - 2, &k)) {
                pk__ft_error(out, "Bad arguments for SORTBY");
                return -1;
            }
            i += 2;
            for (int j = 0; j < k; j++, i++) {
                if (g->nsort >= SORT_MAX) {
                    pk__ft_error(out, "Bad arguments for SORTBY");
                    return -1;
                }
                if (pk_arg_eq(&a[i], "asc") || pk_arg_eq(&a[i], "desc")) {
                    if (g->nsort == 0) {
                        pk__ft_error(out, "Bad arguments for SORTBY");
                        return -1;
                    }
                    g->sdesc[g->nsort - 1] = pk_arg_eq(&a[i], "desc");
                    continue;
                }
                g->sortf[g->nsort++] = no_at(&a[i]);
            }
            if (i + 1 < n && pk_arg_eq(&a[i], "max")) {
                if (!pk__ft_count(&a[i + 1], ROWS_MAX, &g->max)) {
                    pk__ft_error(out, "Bad arguments for MAX");
                    return -1;
                }
                i += 2;
            }
        } else if (pk_arg_eq(&a[i], "limit") && i + 2 < n) {
            if (!pk_arg_i64(&a[i + 1], &g->offset) ||
                !pk_arg_i64(&a[i + 2], &g->num) || g->offset < 0 ||
                g->num < 0) {
                pk__ft_error(out, "LIMIT exceeds maximum of 1000000");
                return -1;
            }
            i += 3;
        } else if (pk_arg_eq(&a[i], "load") && i + 1 < n) {
            if (a[i + 1].len == 1 && ((const char *)a[i + 1].ptr)[0] == '*') {
                g->load_all = 1;
                i += 2;
                continue;
            }
            if (!pk__ft_count(&a[i + 1], n - i - 2, &k)) {
                pk__ft_error(out, "Bad arguments for LOAD");
                return -1;
            }
            free(g->load);
            if ((g->load = calloc((size_t)(k ? k : 1), sizeof(*g->load))) ==
                NULL) {
                pk__ft_error(out, "ERR out of memory");
                return -1;
            }
            g->nload = (int)k;
            for (int j = 0; j < k; j++)
                g->load[j] = no_at(&a[i + 2 + j]);
            i += 2 + (int)k;
        } else if (pk_arg_eq(&a[i], "params")) {
            int took = pk__ft_params(a, n, i, &g->params);
            if (took < 0) {
                pk__ft_error(out, "Bad arguments for PARAMS");
                return -1;
            }
            i += took;
        } else if ((pk_arg_eq(&a[i], "dialect") ||
                    pk_arg_eq(&a[i], "timeout")) &&
                   i + 1 < n) {
            i += 2;
        } else if (pk_arg_eq(&a[i], "verbatim")) {
            i++;
        } else {
            pk__ft_errorf(out,
                          "Unknown argument `%.*s` (APPLY, FILTER "
                          "and WITHCURSOR are not supported)",
                          (int)a[i].len, a[i].ptr);
            return -1;
        }
    }
    return 0;
}

static void agg_free(void *state);

/* FT.AGGREGATE idx query ... in y's arguments, or NULL after an error
 * reply to out; with only, the partitions the query reads (a global
 * index's: pk__ft_global_parts). */
static pk__ftagg *agg_new(const pk_cmd_ctx *y, const pk_ftdef *d, pk_obuf *out,
                          uint8_t **only)
{
    pk__ftagg *g = calloc(1, sizeof(*g));
    pk_ftq *q;

    if (g == NULL || (g->args = pk_conn_args_copy(y->argc, y->argv)) == NULL) {
        free(g);
        pk__ft_error(out, "ERR out of memory");
        return NULL;
    }
    g->argc = y->argc;
    g->query = (pk_slice){g->args[2].ptr, g->args[2].len};
    g->num = ROWS_MAX;
    if (parse_plan(g, out) != 0) {
        agg_free(g);
        return NULL;
    }
    if (pk__ft_query(out, d, g->query, &g->params, &q) != 0) {
        agg_free(g);
        return NULL;
    }
    if (only)
        *only = pk__ft_global_parts(y->srv, d, q);
    pk_ftq_free(q);
    return g;
}

static void vset_free(vset *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    free(v->len);
    free(v->slot);
}

static void group_free(const pk__ftagg *g, group *gr)
{
    for (int i = 0; i < g->ngroup; i++)
        free(gr->val[i]);
    for (int i = 0; i < g->nred; i++)
        vset_free(&gr->p[i].set);
    free(gr->val);
    free(gr->vlen);
    free(gr->p);
    free(gr);
}

/* Drops the merged groups and rows: a new round starts empty. */
static void agg_reset(void *state)
{
    pk__ftagg *g = state;

    for (size_t i = 0; i < g->ntab; i++)
        while (g->tab[i]) {
            group *gr = g->tab[i];
            g->tab[i] = gr->next;
            group_free(g, gr);
        }
    g->ngroups = 0;
    for (size_t i = 0; i < g->nrows; i++)
        pk_obuf_free(&g->rows[i]);
    g->nrows = 0;
}

static void agg_free(void *state)
{
    pk__ftagg *g = state;

    if (g == NULL)
        return;
    agg_reset(g);
    free(g->tab);
    free(g->rows);
    free(g->load);
    free(g->args);
    free(g);
}

/* ---- groups ------------------------------------------------------------- */

static uint64_t vals_hash(const pk_slice *v, int n)
{
    uint64_t h = 1469598103934665603ull;

    for (int i = 0; i < n; i++) {
        const uint8_t *p = v[i].ptr;
        h = (h ^ (v[i].ptr ? 1u : 2u)) * 1099511628211ull;
        for (size_t k = 0; p && k < v[i].len; k++)
            h = (h ^ p[k]) * 1099511628211ull;
    }
    return h;
}

static int vals_eq(const group *gr, const pk_slice *v, int n)
{
    for (int i = 0; i < n; i++) {
        if ((gr->val[i] == NULL) != (v[i].ptr == NULL))
            return 0;
        if (v[i].ptr && (gr->vlen[i] != v[i].len ||
                         memcmp(gr->val[i], v[i].ptr, v[i].len) != 0))
            return 0;
    }
    return 1;
}

/* The group of values v, made when new; NULL when out of memory. */
static group *group_of(pk__ftagg *g, const pk_slice *v)
{
    uint64_t h = vals_hash(v, g->ngroup);
    group *gr;
    size_t b;

    if (g->ngroups >= g->ntab * 2) { /* grow: rehash */
        size_t nt = g->ntab ? g->ntab * 4 : 64;
        group **t = calloc(nt, sizeof(*t));
        if (t == NULL)
            return NULL;
        for (size_t i = 0; i < g->ntab; i++)
            while (g->tab[i]) {
                gr = g->tab[i];
                g->tab[i] = gr->next;
                gr->next = t[gr->hash % nt];
                t[gr->hash % nt] = gr;
            }
        free(g->tab);
        g->tab = t;
        g->ntab = nt;
    }
    b = h % g->ntab;
    for (gr = g->tab[b]; gr; gr = gr->next)
        if (gr->hash == h && vals_eq(gr, v, g->ngroup))
            return gr;
    if ((gr = calloc(1, sizeof(*gr))) == NULL ||
        (gr->val = calloc((size_t)g->ngroup + 1, sizeof(*gr->val))) == NULL ||
        (gr->vlen = calloc((size_t)g->ngroup + 1, sizeof(*gr->vlen))) == NULL ||
        (gr->p = calloc((size_t)g->nred + 1, sizeof(*gr->p))) == NULL) {
        if (gr) {
            free(gr->val);
            free(gr->vlen);
        }
        free(gr);
        return NULL;
    }
    for (int i = 0; i < g->ngroup; i++) {
        if (v[i].ptr && (gr->val[i] = strndup(v[i].ptr, v[i].len)) == NULL) {
            group_free(g, gr);
            return NULL;
        }
        gr->vlen[i] = v[i].len;
    }
    for (int i = 0; i < g->nred; i++) {
        gr->p[i].min = INFINITY;
        gr->p[i].max = -INFINITY;
    }
    gr->hash = h;
    gr->next = g->tab[b];
    g->tab[b] = gr;
    g->ngroups++;
    return gr;
}

/* Where v is in s's table, or the empty slot it would take. */
static size_t vset_slot(const vset *s, const char *v, size_t len)
{
    size_t i = (size_t)pk_hash_xxh3(v, len) & (s->nslot - 1);

    while (s->slot[i]) {
        size_t k = s->slot[i] - 1;
        if (s->len[k] == len && memcmp(s->v[k], v, len) == 0)
            break;
        i = (i + 1) & (s->nslot - 1);
    }
    return i;
}

static int vset_add(vset *s, const char *v, size_t len)
{
    size_t i;

    if (2 * (s->n + 1) > s->nslot) { /* the table at most half full */
        size_t n = s->nslot ? 2 * s->nslot : 16;
        uint32_t *old = s->slot;
        size_t nold = s->nslot;
        if (n > UINT32_MAX || (s->slot = calloc(n, sizeof(*s->slot))) == NULL) {
            s->slot = old;
            return PK_ENOMEM;
        }
        s->nslot = n;
        for (size_t k = 0; k < nold; k++)
            if (old[k]) {
                size_t e = old[k] - 1;
                s->slot[vset_slot(s, s->v[e], s->len[e])] = old[k];
            }
        free(old);
    }
    if (s->slot[i = vset_slot(s, v, len)])
        return 0; /* there */
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        char **nv = realloc(s->v, cap * sizeof(*nv));
        size_t *nl;
        if (nv == NULL)
            return PK_ENOMEM;
        s->v = nv;
        if ((nl = realloc(s->len, cap * sizeof(*nl))) == NULL)
            return PK_ENOMEM;
        s->len = nl;
        s->cap = cap;
    }
    if ((s->v[s->n] = malloc(len ? len : 1)) == NULL)
        return PK_ENOMEM;
    memcpy(s->v[s->n], v, len); /* values may hold NULs */
    s->len[s->n++] = len;
    s->slot[i] = (uint32_t)s->n;
    return 0;
}

/* One value into partial p of reducer r. */
static int reduce(const reducer *r, partial *p, const char *v, size_t len)
{
    double x;

    switch (r->fn) {
    case R_COUNT:
        p->count++;
        return 0;
    case R_DISTINCT:
    case R_TOLIST:
        return v ? vset_add(&p->set, v, len) : 0;
    default:
        if (v == NULL || !pk_ft_number(v, len, &x))
            return 0;
        p->sum += x;
        p->count++;
        p->min = x < p->min ? x : p->min;
        p->max = x > p->max ? x : p->max;
        return 0;
    }
}

/* ---- a node's share --------------------------------------------------- */

typedef struct node_ctx {
    pk__ftagg *g;
    pk_obuf rows;
    int64_t nrows;
} node_ctx;

static int node_doc(void *ctx, const pk__ftdoc *doc, uint32_t part,
                    const uint8_t *key)
{
    node_ctx *nc = ctx;
    pk__ftagg *g = nc->g;
    pk_slice v[GROUP_FIELDS_MAX];
    group *gr;
    int rc = 0;

    (void)part;
    if (!g->grouped) { /* a row of the loaded fields */
        size_t n = 0;
        if (g->load_all) {
            pk_reply_array(&nc->rows, 2 + 2 * doc->n);
            pk_reply_bulk_str(&nc->rows, "__key");
            pk_reply_bulk(&nc->rows, key + 4, pk_be32_get(key));
            for (size_t i = 0; i < doc->n; i++) {
                pk_reply_bulk(&nc->rows, doc->name[i].ptr, doc->name[i].len);
                pk_reply_bulk(&nc->rows, doc->val[i].ptr, doc->val[i].len);
            }
        } else {
            for (int i = 0; i < g->nload; i++)
                n += pk__ftdoc_named(doc, g->load[i]) != NULL;
            pk_reply_array(&nc->rows, 2 * n);
            for (int i = 0; i < g->nload; i++) {
                const pk_slice *x = pk__ftdoc_named(doc, g->load[i]);
                if (x) {
                    pk_reply_bulk(&nc->rows, g->load[i].ptr, g->load[i].len);
                    pk_reply_bulk(&nc->rows, x->ptr, x->len);
                }
            }
        }
        nc->nrows++;
        return 0;
    }
    for (int i = 0; i < g->ngroup; i++) {
        const pk_slice *x = pk__ftdoc_named(doc, g->gf[i]);
        v[i] = x ? *x : (pk_slice){NULL, 0};
    }
    if ((gr = group_of(g, v)) == NULL)
        return PK_ENOMEM;
    for (int i = 0; rc == 0 && i < g->nred; i++) {
        const pk_slice *x = g->red[i].fn == R_COUNT
                                ? NULL
                                : pk__ftdoc_named(doc, g->red[i].field);
        rc = reduce(&g->red[i], &gr->p[i], x ? x->ptr : NULL, x ? x->len : 0);
    }
    return rc;
}

static void put_double(pk_obuf *o, double x)
{
    char buf[64];

    snprintf(buf, sizeof(buf), "%.17g", x);
    pk_reply_bulk_str(o, buf);
}

/* A group's partials as a node sends them. */
static void put_partials(const pk__ftagg *g, const group *gr, pk_obuf *o)
{
    pk_reply_array(o, (size_t)g->nred);
    for (int i = 0; i < g->nred; i++) {
        const partial *p = &gr->p[i];
        switch (g->red[i].fn) {
        case R_DISTINCT:
        case R_TOLIST:
            pk_reply_array(o, p->set.n);
            for (size_t k = 0; k < p->set.n; k++)
                pk_reply_bulk(o, p->set.v[k], p->set.len[k]);
            break;
        default: /* count, sum, min, max */
            pk_reply_array(o, 4);
            pk_reply_int(o, p->count);
            put_double(o, p->sum);
            put_double(o, p->min);
            put_double(o, p->max);
            break;
        }
    }
}

/* A node's share: its partial groups (or rows). */
static void agg_run(pk_server *s, pk__ftagg *g, const pk_ftdef *d,
                    const uint8_t *parts, uint32_t np, pk_obuf *out)
{
    node_ctx nc = {.g = g};
    pk_ftq *q;
    int rc;

    if (pk__ft_query(out, d, g->query, &g->params, &q) != 0)
        return;
    pk_obuf_init(&nc.rows);
    rc = pk__ft_visit(s, d, q, NULL, 0, parts, np, node_doc, &nc);
    pk_ftq_free(q);
    if (rc != 0) {
        pk__ft_errorf(out, "ERR aggregate failed: %s", pk_strerror(rc));
    } else if (!g->grouped) {
        pk_reply_array(out, 1 + (size_t)nc.nrows);
        pk_reply_int(out, nc.nrows);
        pk_obuf_append(out, nc.rows.data + nc.rows.head,
                       nc.rows.len - nc.rows.head);
    } else {
        pk_reply_array(out, 1 + 2 * g->ngroups);
        pk_reply_int(out, (int64_t)g->ngroups);
        for (size_t b = 0; b < g->ntab; b++)
            for (group *gr = g->tab[b]; gr; gr = gr->next) {
                pk_reply_array(out, (size_t)g->ngroup);
                for (int i = 0; i < g->ngroup; i++)
                    if (gr->val[i])
                        pk_reply_bulk(out, gr->val[i], gr->vlen[i]);
                    else
                        pk_reply_null(out, 2);
                put_partials(g, gr, out);
            }
    }
    pk_obuf_free(&nc.rows);
}

static void agg_node(pk_cmd_ctx *y, const pk_ftdef *d, const uint8_t *parts,
                     uint32_t np, pk_obuf *o)
{
    pk__ftagg *g = y->argc < 3 ? NULL : agg_new(y, d, o, NULL);

    if (y->argc < 3)
        pk_reply_syntax(y);
    if (g)
        agg_run(y->srv, g, d, parts, np, o);
    agg_free(g);
}

/* ---- merging --------------------------------------------------------------
 */

static double rr_num(const pk_rr *r)
{
    return r->type == PK_RR_BULK ? strtod(r->str, NULL) : 0;
}

static const char *take_group(pk__ftagg *g, const pk_rr *vals,
                              const pk_rr *parts)
{
    pk_slice v[GROUP_FIELDS_MAX];
    group *gr;

    if (vals->type != PK_RR_ARRAY || vals->n != (size_t)g->ngroup ||
        parts->type != PK_RR_ARRAY || parts->n != (size_t)g->nred)
        return "ERR a node answered the aggregate badly";
    for (int i = 0; i < g->ngroup; i++)
        v[i] = vals->elems[i].type == PK_RR_BULK
                   ? (pk_slice){vals->elems[i].str, vals->elems[i].len}
                   : (pk_slice){NULL, 0};
    if ((gr = group_of(g, v)) == NULL)
        return "ERR out of memory";
    for (int i = 0; i < g->nred; i++) {
        const pk_rr *p = &parts->elems[i];
        partial *mine = &gr->p[i];
        if (p->type != PK_RR_ARRAY)
            return "ERR a node answered the aggregate badly";
        if (g->red[i].fn == R_DISTINCT || g->red[i].fn == R_TOLIST) {
            for (size_t k = 0; k < p->n; k++)
                if (vset_add(&mine->set, p->elems[k].str, p->elems[k].len))
                    return "ERR out of memory";
            continue;
        }
        if (p->n != 4)
            return "ERR a node answered the aggregate badly";
        mine->count += p->elems[0].integer;
        mine->sum += rr_num(&p->elems[1]);
        mine->min = fmin(mine->min, rr_num(&p->elems[2]));
        mine->max = fmax(mine->max, rr_num(&p->elems[3]));
    }
    return NULL;
}

static const char *agg_take(void *state, const pk_rr *r)
{
    pk__ftagg *g = state;
    const char *err = NULL;

    if (r->type != PK_RR_ARRAY || r->n < 1)
        return "ERR a node answered the aggregate badly";
    if (g->grouped) {
        if ((r->n - 1) % 2)
            return "ERR a node answered the aggregate badly";
        for (size_t i = 1; err == NULL && i + 1 < r->n; i += 2)
            err = take_group(g, &r->elems[i], &r->elems[i + 1]);
        return err;
    }
    /* Rows: each copied out as its reply. */
    for (size_t i = 1; i < r->n; i++) {
        const pk_rr *row = &r->elems[i];
        if (row->type != PK_RR_ARRAY || row->n % 2)
            return "ERR a node answered the aggregate badly";
        if (g->nrows == g->caprows) {
            size_t cap = g->caprows ? 2 * g->caprows : 64;
            pk_obuf *nr = realloc(g->rows, cap * sizeof(*nr));
            if (nr == NULL)
                return "ERR out of memory";
            g->rows = nr;
            g->caprows = cap;
        }
        pk_obuf_init(&g->rows[g->nrows]);
        pk_reply_array(&g->rows[g->nrows], row->n);
        for (size_t k = 0; k < row->n; k++)
            pk_reply_bulk(&g->rows[g->nrows], row->elems[k].str,
                          row->elems[k].len);
        g->nrows++;
    }
    return NULL;
}

static int agg_reply(void *state, pk_server *s, const pk_ftdef *d, pk_conn *c)
{
    (void)s;
    (void)d;
    pk__ftagg_answer(state, &c->out);
    return 1;
}

const pk__ftverb pk__ft_agg_verb = {"AGGREGATE", 0,         agg_node, agg_reset,
                                    agg_take,    agg_reply, agg_free, NULL};

void pk_cmd_ft_aggregate(pk_cmd_ctx *x)
{
    ft_index *ix = pk__ft_index_arg(x);
    uint8_t *only = NULL;
    pk__ftagg *g;

    if (ix != NULL && (g = agg_new(x, ix->def, x->out, &only)) != NULL)
        pk__ft_gather(x, ix->def, &pk__ft_agg_verb, g, only);
}

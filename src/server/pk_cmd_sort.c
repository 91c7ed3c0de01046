/*
 * SORT and SORT_RO with Redis 7.0's semantics, replies and error texts:
 *
 *   SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
 *        [ASC|DESC] [ALPHA] [STORE destination]
 *
 * The source (a list, set or sorted set; a missing key is an empty list)
 * is copied into a vector of elements, weighed, sorted and written out:
 *
 *   load    the whole source, or, for a list or sorted set with BY nosort,
 *           only the LIMIT range in native order (reversed with DESC)
 *   weigh   numeric: strtod of the element or of the BY key's value (a
 *           missing BY key weighs 0); ALPHA BY: the BY value's bytes
 *   sort    a stable merge sort: equal elements keep their load order,
 *           as glibc's qsort (a merge sort) gives Redis
 *   output  LIMIT's rows, each the element or its GET values
 *
 * Patterns follow Redis's lookupKeyByPattern: "#" is the element, else the
 * first '*' is replaced by the element to name a string key, or a hash
 * field with "key*->field"; a pattern without '*' names nothing (nil, and
 * BY without '*' means "do not sort").  Every read happens in the
 * iteration's transaction, so the keys BY and GET name may lie in any
 * partition of a standalone node; a cluster node refuses them as Redis
 * 7.0 does.  ALPHA compares bytes: Redis's strcoll in the C locale, so a
 * reply compares up to a NUL byte, STORE (memcmp in Redis) the whole.
 *
 * Elements and weights are copied into one arena (the source's callbacks
 * lend their bytes only during the call); STORE copies its rows too
 * before it deletes the destination, which may be the source itself.
 * Every array grows from what the store returned, never from a client's
 * number.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "proto/pk_reply.h"
#include "server/pk_cmd.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_list.h"
#include "store/pk_set.h"
#include "store/pk_store.h"
#include "store/pk_store_log.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"

/* A parsed pattern (borrows the argument). */
typedef struct sort_pat {
    int self;        /* "#": the element itself */
    int star;        /* has a '*' (else it names nothing) */
    const char *pre; /* the bytes before the '*' */
    size_t prelen;
    const char *post; /* the key's bytes after the '*' */
    size_t postlen;
    const char *field; /* "->field": a hash field; NULL for a string key */
    size_t flen;
} sort_pat;

/* SORT's options; every pointer borrows argv. */
typedef struct sort_opts {
    int desc, alpha, dontsort;
    int by; /* a BY pattern with '*' is in bypat */
    sort_pat bypat;
    int store;             /* argv index of STORE's destination, 0 for none */
    int64_t offset, count; /* LIMIT; count -1: all */
    sort_pat *gets;        /* owned, ngets patterns */
    size_t ngets;
} sort_opts;

/* One element; offsets are into the arena, which may move as it grows. */
typedef struct sort_elem {
    size_t off, len;   /* the element's bytes */
    size_t coff, clen; /* ALPHA BY: the weight's bytes, when has_cmp */
    int has_cmp;
    double score; /* numeric sort: the weight */
} sort_elem;

typedef struct sort_vec {
    pk_obuf arena; /* element and weight bytes */
    sort_elem *v;  /* owned, cap entries */
    size_t n, cap;
} sort_vec;

/* What the comparison needs: the arena and the order. */
typedef struct sort_cmp {
    const char *base;
    int desc, alpha, by;
    int cstr; /* ALPHA without STORE: compare up to a NUL, as strcoll */
} sort_cmp;

/* Redis reads a pattern as a C string: nothing after a NUL byte counts
 * when looking for '*', "->" or "#". */
static size_t cstr_len(const char *p, size_t len)
{
    const char *z = memchr(p, '\0', len);

    return z ? (size_t)(z - p) : len;
}

static const char *find_arrow(const char *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (p[i] == '-' && p[i + 1] == '>')
            return p + i;
    return NULL;
}

static void pat_parse(const pk_arg *a, sort_pat *p)
{
    size_t clen = cstr_len(a->ptr, a->len);
    const char *star = memchr(a->ptr, '*', clen), *arrow;

    memset(p, 0, sizeof(*p));
    if (clen == 1 && a->ptr[0] == '#') {
        p->self = 1;
        return;
    }
    if (star == NULL)
        return;
    p->star = 1;
    p->pre = a->ptr;
    p->prelen = (size_t)(star - a->ptr);
    p->post = star + 1;
    arrow = find_arrow(star + 1, clen - p->prelen - 1);
    /* "->" at the very end names no field: the key keeps it. */
    if (arrow && arrow + 2 < a->ptr + clen) {
        p->field = arrow + 2;
        p->flen = a->len - (size_t)(p->field - a->ptr);
        p->postlen = (size_t)(arrow - p->post);
    } else
        p->postlen = a->len - p->prelen - 1;
}

static int has_star(const pk_arg *a)
{
    return memchr(a->ptr, '*', cstr_len(a->ptr, a->len)) != NULL;
}

/*
 * Parses argv[2..] into o or replies the error and returns 0.  Checks
 * come in Redis's order: each option as it is met, the source key after.
 */
static int sort_parse(pk_cmd_ctx *x, int ro, sort_opts *o)
{
    int cluster = x->srv->cluster.enabled;

    memset(o, 0, sizeof(*o));
    o->count = -1;
    o->gets = malloc((size_t)x->argc * sizeof(*o->gets));
    if (o->gets == NULL) {
        pk_cmd_store_error(x, PK_ENOMEM);
        return 0;
    }
    for (int j = 2; j < x->argc; j++) {
        const pk_arg *a = &x->argv[j];
        int left = x->argc - j - 1;

        if (pk_arg_eq(a, "asc"))
            o->desc = 0;
        else if (pk_arg_eq(a, "desc"))
            o->desc = 1;
        else if (pk_arg_eq(a, "alpha"))
            o->alpha = 1;
        else if (pk_arg_eq(a, "limit") && left >= 2) {
            if (!pk_arg_i64(&x->argv[j + 1], &o->offset) ||
                !pk_arg_i64(&x->argv[j + 2], &o->count)) {
                pk_reply_notint(x);
                return 0;
            }
            j += 2;
        } else if (!ro && pk_arg_eq(a, "store") && left >= 1)
            o->store = ++j;
        else if (pk_arg_eq(a, "by") && left >= 1) {
            const pk_arg *p = &x->argv[++j];

            /* A constant BY means "do not sort", and stays so even if a
             * later BY has a pattern (as in Redis). */
            if (!has_star(p))
                o->dontsort = 1;
            else if (cluster) {
                pk_reply_error(x->out,
                               "ERR BY option of SORT denied in Cluster mode.");
                return 0;
            } else if (!pk_acl_conn_reads_all(x)) {
                pk_reply_error(x->out, "ERR BY option of SORT denied due to "
                                       "insufficient ACL permissions.");
                return 0;
            }
            o->by = has_star(p);
            pat_parse(p, &o->bypat);
        } else if (pk_arg_eq(a, "get") && left >= 1) {
            if (cluster) {
                pk_reply_error(
                    x->out, "ERR GET option of SORT denied in Cluster mode.");
                return 0;
            }
            if (!pk_acl_conn_reads_all(x)) {
                pk_reply_error(x->out, "ERR GET option of SORT denied due to "
                                       "insufficient ACL permissions.");
                return 0;
            }
            pat_parse(&x->argv[++j], &o->gets[o->ngets++]);
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    return 1;
}

/*
 * The value pattern p names for element e: PK_OK with *val (pointing into
 * the map, or e itself for "#"), PK_ENOTFOUND when there is none (no '*',
 * no key, a key of another type, a missing field), or an error.  key is
 * scratch space for the key's name.
 */
static int pat_lookup(pk_cmd_ctx *x, pk_txn *t, const sort_pat *p, pk_slice e,
                      pk_obuf *key, pk_slice *val)
{
    uint32_t part;
    int rc;

    if (p->self) {
        *val = e;
        return PK_OK;
    }
    if (!p->star)
        return PK_ENOTFOUND;
    pk_obuf_reset(key);
    pk_obuf_append(key, p->pre, p->prelen);
    pk_obuf_append(key, e.ptr, e.len);
    pk_obuf_append(key, p->post, p->postlen);
    if (key->err)
        return PK_ENOMEM;
    part = pk_srv_part(x->srv, key->data, key->len);
    if (p->field)
        rc = pk_hmap_get(t, part, key->data, key->len, p->field, p->flen,
                         NOW(x), val);
    else
        rc = pk_str_get(t, part, key->data, key->len, NOW(x), val);
    /* A name the store cannot hold (PK_ERANGE) names no key either. */
    if (rc == PK_STORE_WRONGTYPE || rc == PK_ERANGE)
        rc = PK_ENOTFOUND;
    return rc;
}

static int vec_add(void *ctx, pk_slice e)
{
    sort_vec *s = ctx;

    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        sort_elem *v = realloc(s->v, cap * sizeof(*v));

        if (v == NULL)
            return PK_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n] = (sort_elem){s->arena.len, e.len, 0, 0, 0, 0.0};
    if (pk_obuf_append(&s->arena, e.ptr, e.len) != PK_OK)
        return PK_ENOMEM;
    s->n++;
    return 0;
}

static int vec_add_z(void *ctx, pk_slice member, double score)
{
    (void)score;
    return vec_add(ctx, member);
}

static pk_slice vec_at(const sort_vec *s, size_t off, size_t len)
{
    return (pk_slice){s->arena.data ? s->arena.data + off : "", len};
}

/*
 * Loads the source of type type and length len into s: rows start..end
 * in native order (reversed with desc) when range is set, else all.
 */
static int sort_load(pk_cmd_ctx *x, pk_txn *t, pk_type type, int range,
                     int desc, uint64_t len, int64_t start, int64_t end,
                     sort_vec *s)
{
    uint64_t n = end >= start ? (uint64_t)(end - start + 1) : 0;
    int rc = PK_OK;

    if (!range) {
        start = 0;
        end = (int64_t)len - 1;
        n = len;
        desc = 0;
    }
    if (type == PK_TYPE_SET)
        return pk_set_each(t, PK_KEY(x, 1), NOW(x), vec_add, s);
    if (n == 0)
        return PK_OK;
    if (type == PK_TYPE_ZSET)
        return pk_zset_range_rank(t, PK_KEY(x, 1), start, end, desc, NOW(x),
                                  vec_add_z, s);
    if (type != PK_TYPE_LIST)
        return PK_OK;
    /* DESC walks from the tail: the same rows, loaded and reversed. */
    rc = pk_list_range(t, PK_KEY(x, 1),
                       desc ? len - 1 - (uint64_t)end : (uint64_t)start, n,
                       NOW(x), vec_add, s);
    for (size_t i = 0; desc && rc == PK_OK && i < s->n / 2; i++) {
        sort_elem e = s->v[i];

        s->v[i] = s->v[s->n - 1 - i];
        s->v[s->n - 1 - i] = e;
    }
    return rc;
}

/* Redis's numeric weight: strtod over the value as a C string (so a NUL
 * ends it, and "" is 0); 1 when it is no double. */
static int weigh(pk_obuf *tmp, pk_slice w, double *score)
{
    char *end;

    pk_obuf_reset(tmp);
    pk_obuf_append(tmp, w.ptr, w.len);
    pk_obuf_append(tmp, "", 1);
    if (tmp->err)
        return PK_ENOMEM;
    errno = 0;
    *score = strtod(tmp->data, &end);
    return *end != '\0' || errno == ERANGE || isnan(*score);
}

/*
 * Gives every element its weight.  *bad is set when a numeric weight is
 * no double (Redis's error, replied after the whole sort).  Returns PK_OK
 * or an error.
 */
static int sort_weigh(pk_cmd_ctx *x, pk_txn *t, const sort_opts *o, sort_vec *s,
                      pk_obuf *tmp, int *bad)
{
    for (size_t i = 0; i < s->n; i++) {
        sort_elem *e = &s->v[i];
        pk_slice w = vec_at(s, e->off, e->len);
        int rc;

        if (o->by) {
            rc = pat_lookup(x, t, &o->bypat, w, tmp, &w);
            if (rc == PK_ENOTFOUND)
                continue;
            if (rc != PK_OK)
                return rc;
        }
        if (o->alpha) {
            /* w points into the map (BY always names a key): appending
             * to the arena cannot move it. */
            if (o->by) {
                e->coff = s->arena.len;
                e->clen = w.len;
                e->has_cmp = 1;
                if (pk_obuf_append(&s->arena, w.ptr, w.len) != PK_OK)
                    return PK_ENOMEM;
            }
        } else if ((rc = weigh(tmp, w, &e->score)) < 0)
            return rc;
        else if (rc)
            *bad = 1;
    }
    return PK_OK;
}

static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0)
        return c < 0 ? -1 : 1;
    return alen < blen ? -1 : alen > blen;
}

/* ALPHA: Redis compares with strcoll (a C string; byte order in the C
 * locale) unless it stores the result, then the whole bytes. */
static int alpha_cmp(const sort_cmp *c, size_t aoff, size_t alen, size_t boff,
                     size_t blen)
{
    const char *a = c->base + aoff, *b = c->base + boff;

    if (c->cstr) {
        alen = cstr_len(a, alen);
        blen = cstr_len(b, blen);
    }
    return bytes_cmp(a, alen, b, blen);
}

/* Redis's sortCompare: numeric weights with ties broken by the elements'
 * bytes; ALPHA by the elements, or by the BY values with a missing one
 * first. */
static int elem_cmp(const sort_cmp *c, const sort_elem *a, const sort_elem *b)
{
    int r;

    if (!c->alpha) {
        r = a->score > b->score ? 1
            : a->score < b->score
                ? -1
                : bytes_cmp(c->base + a->off, a->len, c->base + b->off, b->len);
    } else if (c->by) {
        if (!a->has_cmp || !b->has_cmp)
            r = a->has_cmp - b->has_cmp;
        else
            r = alpha_cmp(c, a->coff, a->clen, b->coff, b->clen);
    } else
        r = alpha_cmp(c, a->off, a->len, b->off, b->len);
    return c->desc ? -r : r;
}

/* A stable merge sort of v (n entries) using tmp (n entries). */
static void merge_sort(sort_elem *v, sort_elem *tmp, size_t n,
                       const sort_cmp *c)
{
    size_t h = n / 2, i = 0, j = h, k = 0;

    if (n < 2)
        return;
    merge_sort(v, tmp, h, c);
    merge_sort(v + h, tmp, n - h, c);
    while (i < h && j < n)
        tmp[k++] = elem_cmp(c, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    memcpy(v, tmp, k * sizeof(*v)); /* v[j..n) is in place already */
}

/*
 * The output rows start..end: out[k] for each element, its GET values in
 * order (ptr NULL for nil).  Values point into the map or the arena.
 */
static int sort_rows(pk_cmd_ctx *x, pk_txn *t, const sort_opts *o,
                     const sort_vec *s, int64_t start, int64_t end,
                     pk_obuf *tmp, pk_slice *out)
{
    size_t k = 0;

    for (int64_t j = start; j <= end; j++) {
        pk_slice e = vec_at(s, s->v[j].off, s->v[j].len);

        if (o->ngets == 0)
            out[k++] = e;
        for (size_t g = 0; g < o->ngets; g++) {
            int rc = pat_lookup(x, t, &o->gets[g], e, tmp, &out[k]);

            if (rc == PK_ENOTFOUND)
                out[k].ptr = NULL;
            else if (rc != PK_OK)
                return rc;
            k++;
        }
    }
    return PK_OK;
}

/*
 * STORE: replaces the destination (argument d, partition part) by a list
 * of the n rows (nil ones as empty strings), or deletes it when there are
 * none.  The rows are copied first: deleting the destination may free the
 * map pages they point to.  The delete and the push form one change
 * record (a group) unless one is open already (EXEC's).
 */
static int sort_store(pk_cmd_ctx *x, pk_txn *t, int d, uint32_t part,
                      pk_slice *rows, size_t n)
{
    const pk_arg *dst = &x->argv[d];
    pk_obuf copy;
    uint64_t len;
    int deleted, grouped, rc;
    size_t off = 0;

    pk_obuf_init(&copy);
    for (size_t i = 0; i < n; i++)
        if (rows[i].ptr)
            pk_obuf_append(&copy, rows[i].ptr, rows[i].len);
    if (copy.err) {
        pk_obuf_free(&copy);
        return PK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        size_t l = rows[i].ptr ? rows[i].len : 0;

        rows[i] = (pk_slice){copy.data ? copy.data + off : "", l};
        off += l;
    }
    grouped = pk_txn_group_begin(t, part) == PK_OK;
    rc = pk_key_del(t, part, dst->ptr, dst->len, NOW(x), &deleted);
    if (rc == PK_OK && n > 0)
        rc = pk_list_push(t, part, dst->ptr, dst->len, PK_LIST_RIGHT, n, rows,
                          NOW(x), &len);
    if (grouped) {
        int end = pk_txn_group_end(t);

        rc = rc == PK_OK ? end : rc;
    }
    pk_obuf_free(&copy);
    return rc;
}

/*
 * The destination's partition, or replies CROSSSLOT and returns 0.  A
 * cluster node's routing checked the key the finder names; the parser
 * takes the last STORE, and in contrived argument lists ("STORE get STORE
 * d") the two differ, so there a destination routing did not see must
 * share the source's slot.  A standalone node takes any partition.
 */
static int store_part(pk_cmd_ctx *x, int d, uint32_t *part)
{
    pk_keyrun r[PK_KEYRUNS_MAX];
    int n = pk_cmd_keys_sort(x->argc, x->argv, r);

    *part = pk_srv_part(x->srv, x->argv[d].ptr, x->argv[d].len);
    if (x->srv->cluster.enabled && (n < 2 || r[1].first != d) &&
        *part != pk_cmd_part(x, 1)) {
        pk_reply_error(x->out, "CROSSSLOT Keys in request don't hash to the "
                               "same slot");
        return 0;
    }
    return 1;
}

/* Redis's LIMIT clamping: rows start..end of len (end < start: none). */
static void sort_limit(const sort_opts *o, int64_t len, int64_t *start,
                       int64_t *end)
{
    int64_t s = o->offset < 0 ? 0 : o->offset > len ? len : o->offset;
    int64_t c = o->count < -1 ? -1 : o->count > len ? len : o->count;
    int64_t e = c < 0 ? len - 1 : s + c - 1;

    if (s >= len) {
        s = len - 1;
        e = len - 2;
    }
    *start = s;
    *end = e >= len ? len - 1 : e;
}

/* The source's type and length; replies the error and returns 0. */
static int sort_source(pk_cmd_ctx *x, pk_txn *t, pk_type *type, uint64_t *len)
{
    int rc = pk_key_type(t, PK_KEY(x, 1), NOW(x), type);

    *len = 0;
    if (rc == PK_OK) {
        if (*type == PK_TYPE_LIST)
            rc = pk_list_len(t, PK_KEY(x, 1), NOW(x), len);
        else if (*type == PK_TYPE_SET)
            rc = pk_set_card(t, PK_KEY(x, 1), NOW(x), len);
        else if (*type == PK_TYPE_ZSET)
            rc = pk_zset_card(t, PK_KEY(x, 1), NOW(x), len);
        else if (*type != PK_TYPE_NONE)
            rc = PK_STORE_WRONGTYPE;
    }
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return 0;
    }
    return 1;
}

/* Writes the rows: the reply, or the destination and its length. */
static void sort_output(pk_cmd_ctx *x, pk_txn *t, const sort_opts *o,
                        pk_slice *rows, size_t n)
{
    uint32_t part;
    int rc;

    if (!o->store) {
        pk_reply_array(x->out, n);
        for (size_t i = 0; i < n; i++)
            pk_reply_slice(x, rows[i]);
        return;
    }
    if (!store_part(x, o->store, &part))
        return;
    rc = sort_store(x, t, o->store, part, rows, n);
    pk_reply_int_rc(x, rc, (int64_t)n);
}

static void sort_generic(pk_cmd_ctx *x, int ro)
{
    sort_opts o;
    sort_vec s = {{0}, NULL, 0, 0};
    pk_obuf tmp;
    sort_elem *scratch = NULL;
    pk_slice *rows = NULL;
    pk_txn *t;
    pk_type type;
    uint64_t len;
    int64_t start, end;
    size_t nrows = 0, per;
    int bad = 0, range, rc = PK_OK;

    pk_obuf_init(&s.arena);
    pk_obuf_init(&tmp);
    if (!sort_parse(x, ro, &o))
        goto out;
    if ((t = pk_srv_txn(x)) == NULL || !sort_source(x, t, &type, &len))
        goto out;
    /* A set has no native order to keep: what STORE writes must not
     * depend on it, so Redis sorts it ALPHA. */
    if (o.dontsort && type == PK_TYPE_SET && o.store) {
        o.dontsort = 0;
        o.alpha = 1;
        o.by = 0;
    }
    sort_limit(&o, (int64_t)len, &start, &end);
    range = o.dontsort && (type == PK_TYPE_LIST || type == PK_TYPE_ZSET);
    rc = sort_load(x, t, type, range, o.desc, len, start, end, &s);
    if (rc == PK_OK && range) {
        end -= start;
        start = 0;
    }
    if (rc == PK_OK && !o.dontsort) {
        rc = sort_weigh(x, t, &o, &s, &tmp, &bad);
        if (rc == PK_OK && s.n > 1 &&
            (scratch = malloc(s.n * sizeof(*scratch))) == NULL)
            rc = PK_ENOMEM;
        if (rc == PK_OK && s.n > 1) {
            sort_cmp c = {s.arena.data, o.desc, o.alpha, o.by, !o.store};

            merge_sort(s.v, scratch, s.n, &c);
        }
    }
    if (rc == PK_OK && end >= (int64_t)s.n)
        end = (int64_t)s.n - 1; /* the source shrank: never past s */
    per = o.ngets ? o.ngets : 1;
    if (rc == PK_OK && end >= start) {
        nrows = (size_t)(end - start + 1) * per;
        if ((rows = malloc(nrows * sizeof(*rows))) == NULL)
            rc = PK_ENOMEM;
    }
    if (rc == PK_OK && !bad && nrows)
        rc = sort_rows(x, t, &o, &s, start, end, &tmp, rows);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (bad)
        pk_reply_error(x->out,
                       "ERR One or more scores can't be converted into double");
    else
        sort_output(x, t, &o, rows, nrows);
out:
    free(rows);
    free(scratch);
    free(s.v);
    free(o.gets);
    pk_obuf_free(&s.arena);
    pk_obuf_free(&tmp);
}

void pk_cmd_sort(pk_cmd_ctx *x)
{
    sort_generic(x, 0);
}

void pk_cmd_sort_ro(pk_cmd_ctx *x)
{
    sort_generic(x, 1);
}

/*
 * SORT's keys as Redis's sortGetKeys finds them: the source, and the
 * argument after the last STORE, skipping the arguments of LIMIT (2), GET
 * and BY (1).
 */
int pk_cmd_keys_sort(int argc, const pk_arg *argv, pk_keyrun *r)
{
    int dst = 0;

    if (argc < 2)
        return 0;
    for (int i = 2; i < argc; i++) {
        if (pk_arg_eq(&argv[i], "limit"))
            i += 2;
        else if (pk_arg_eq(&argv[i], "get") || pk_arg_eq(&argv[i], "by"))
            i += 1;
        else if (pk_arg_eq(&argv[i], "store") && i + 1 < argc)
            dst = i + 1;
    }
    r[0] = (pk_keyrun){1, 1, 1};
    if (dst == 0)
        return 1;
    r[1] = (pk_keyrun){dst, dst, 1};
    return 2;
}

/* SORT_RO's one key; a finder all the same, as Redis 7.0's COMMAND
 * reports SORT_RO movablekeys too. */
int pk_cmd_keys_sort_ro(int argc, const pk_arg *argv, pk_keyrun *r)
{
    (void)argv;
    if (argc < 2)
        return 0;
    r[0] = (pk_keyrun){1, 1, 1};
    return 1;
}

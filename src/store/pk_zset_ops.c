/*
 * pk_zset_ops: pops, range removal and storage, set algebra and ZSCAN.
 *
 * Each write reads first and writes after: the members it will remove or
 * store are copied into a collection (zcoll: one byte buffer plus an
 * entry array) while cursors walk the map, and only then does it delete
 * or put records, so no cursor walks over records being changed and no
 * borrowed byte outlives a write.
 *
 * Set algebra: INTER and DIFF walk one input (ZMEMBER or SMEMBER
 * records) and look each member up in the others; UNION collects every
 * input's members, sorts them by member bytes and folds each run.  Inputs are
 * taken in cardinality order for UNION and INTER, as Redis does, so SUM rounds
 * alike.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_zset_int.h"
#include "store/pk_zset_ops.h"

typedef struct zent {
    double score;
    size_t off, len;  /* member bytes in zcoll.bytes */
    const uint8_t *p; /* set by zcoll_fix once the bytes stop moving */
    uint32_t src;     /* input index (UNION) */
} zent;

/* Copies of members and scores, owned. */
typedef struct zcoll {
    pk__buf bytes;
    zent *e;
    size_t n, cap;
    uint32_t src; /* input index given to new entries */
} zcoll;

static void zcoll_free(zcoll *c)
{
    free(c->bytes.p);
    free(c->e);
}

static int zcoll_add(void *ctx, pk_slice mem, double score)
{
    zcoll *c = ctx;
    zent *e;

    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof(*e)) {
            return PK_ENOMEM;
        }
        e = realloc(c->e, cap * sizeof(*e));
        if (e == NULL) {
            return PK_ENOMEM;
        }
        c->e = e;
        c->cap = cap;
    }
    if (pk__buf_reserve(&c->bytes, mem.len) != 0) {
        return PK_ENOMEM;
    }
    if (mem.len > 0) {
        memcpy(c->bytes.p + c->bytes.len, mem.ptr, mem.len);
    }
    c->e[c->n++] = (zent){score, c->bytes.len, mem.len, NULL, c->src};
    c->bytes.len += mem.len;
    return 0;
}

/* Points the entries at their bytes, once no more are added.  When all
 * members are empty the buffer was never allocated, and NULL + 0 is
 * undefined: empty members keep NULL (zent_mem gives them ""). */
static void zcoll_fix(zcoll *c)
{
    for (size_t i = 0; i < c->n; i++) {
        c->e[i].p = c->e[i].len ? c->bytes.p + c->e[i].off : NULL;
    }
}

static pk_slice zent_mem(const zent *e)
{
    return (pk_slice){e->len ? e->p : (const uint8_t *)"", e->len};
}

static int mem_cmp(const zent *a, const zent *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->p, b->p, n) : 0;

    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* (score, member): the order ZRANGE replies in. */
static int by_score(const void *x, const void *y)
{
    const zent *a = x, *b = y;

    if (a->score != b->score) {
        return a->score < b->score ? -1 : 1;
    }
    return mem_cmp(a, b);
}

/* (member, input): UNION folds runs of one member in input order. */
static int by_member(const void *x, const void *y)
{
    const zent *a = x, *b = y;
    int c = mem_cmp(a, b);

    return c ? c : (a->src > b->src) - (a->src < b->src);
}

/* Deletes every collected member from the loaded set m; fixes count. */
static int zcoll_delete(pk_txn *t, pk__meta *m, const zcoll *c)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        rc = pk__zset_del(t, m, zent_mem(&c->e[i]), c->e[i].score);
    }
    if (rc == 0 && c->n > 0) {
        m->count = m->count > c->n ? m->count - c->n : 0;
        rc = m->count == 0 ? pk__key_drop(t, m)
                           : pk__meta_put(t, m, NULL, 0, NULL, 0);
    }
    return rc;
}

/* Replaces the key dst with the collected members (no key when none). */
static int zcoll_store(pk_txn *t, uint32_t part, const void *dst, size_t dlen,
                       const zcoll *c, uint64_t now)
{
    pk__meta m;
    int rc = pk__meta_load(t, part, dst, dlen, now, &m);

    if (rc == PK_ERANGE && c->n == 0) {
        return 0;
    }
    if (rc == 0 && m.exists) {
        rc = pk__key_drop(t, &m);
    }
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        rc = pk__zset_put(t, &m, zent_mem(&c->e[i]), c->e[i].score);
    }
    if (rc == 0 && c->n > 0) {
        m.type = PK__T_ZSET;
        m.expire = 0;
        m.count = c->n;
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    return rc;
}

int pk_zset_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
                int from_max, uint64_t count, uint64_t now_ms, pk_zset_cb cb,
                void *ctx, uint64_t *popped)
{
    pk_zrange r = {.kind = PK_ZRANGE_RANK, .rev = from_max, .count = -1};
    zcoll c = {0};
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc == 0 && m.exists && count > 0) {
        /* Clamp to the set before the walk: count is the client's. */
        r.stop = (int64_t)(count < m.count ? count : m.count) - 1;
        rc = pk__zset_walk(t, &m, &r, zcoll_add, &c);
        rc = rc == PK_ENOMEM ? pk__fail(t, rc) : rc;
        zcoll_fix(&c);
        rc = rc ? rc : zcoll_delete(t, &m, &c);
    }
    rc = pk__op_end(t, rc);
    if (rc == 0) {
        *popped = c.n;
        for (size_t i = 0; i < c.n; i++) {
            if (cb(ctx, zent_mem(&c.e[i]), c.e[i].score) != 0) {
                break;
            }
        }
    }
    zcoll_free(&c);
    return rc;
}

int pk_zset_remrange(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     const pk_zrange *r, uint64_t now_ms, uint64_t *removed)
{
    pk_zrange all = *r;
    zcoll c = {0};
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    all.offset = 0;
    all.count = -1;
    rc = pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc == 0) {
        rc = pk__zset_walk(t, &m, &all, zcoll_add, &c);
        rc = rc == PK_ENOMEM ? pk__fail(t, rc) : rc;
        zcoll_fix(&c);
        rc = rc ? rc : zcoll_delete(t, &m, &c);
    }
    if (rc == 0) {
        *removed = c.n;
    }
    zcoll_free(&c);
    return pk__op_end(t, rc);
}

int pk_zset_rangestore(pk_txn *t, uint32_t part, const void *dst, size_t dlen,
                       const void *src, size_t slen, const pk_zrange *r,
                       uint64_t now_ms, uint64_t *stored)
{
    zcoll c = {0};
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__zset_load(t, part, src, slen, now_ms, &m);
    rc = rc ? rc : pk__zset_walk(t, &m, r, zcoll_add, &c);
    rc = rc == PK_ENOMEM ? pk__fail(t, rc) : rc;
    zcoll_fix(&c);
    rc = rc ? rc : zcoll_store(t, part, dst, dlen, &c, now_ms);
    if (rc == 0) {
        *stored = c.n;
    }
    zcoll_free(&c);
    return pk__op_end(t, rc);
}

/* Loads an input of a combination: missing, a sorted set or a set. */
static int input_load(pk_txn *t, uint32_t part, pk_slice key, uint64_t now,
                      pk__meta *m)
{
    int rc = pk__meta_load(t, part, key.ptr, key.len, now, m);

    if (rc == PK_ERANGE) {
        m->exists = 0;
        return 0;
    }
    if (rc == 0 && m->exists && m->type != PK__T_ZSET && m->type != PK__T_SET) {
        return PK_STORE_WRONGTYPE;
    }
    return rc;
}

/* Looks a member up in an input; *score = 1 for a set. */
static int input_find(pk_txn *t, const pk__meta *m, pk_slice mem, double *score)
{
    uint8_t mk[PK_KEYENC_MAX];
    uint8_t tag = m->type == PK__T_SET ? PK_TAG_SMEMBER : PK_TAG_ZMEMBER;
    size_t mkl;
    pk_slice v;
    int rc;

    if (!m->exists ||
        pk__sub_key(m->key, m->plen, tag, mem.ptr, mem.len, mk, &mkl)) {
        return PK_ENOTFOUND;
    }
    rc = pk__sub_get(t, tag, mk, mkl, mem.ptr, mem.len, &v);
    if (rc == 0) {
        *score = tag == PK_TAG_SMEMBER ? 1.0 : pk__score_get(v.ptr);
    }
    return rc == PK_ERANGE ? PK_ENOTFOUND : rc;
}

/* Calls fn for every member of an input in member order. */
static int input_each(pk_txn *t, const pk__meta *m, pk_zset_cb fn, void *ctx)
{
    uint8_t pfx[PK_KEYENC_MAX + 1];
    uint8_t tag = m->type == PK__T_SET ? PK_TAG_SMEMBER : PK_TAG_ZMEMBER;
    size_t plen = m->plen + 1;
    MDB_cursor *c;
    MDB_val k, v;
    pk_slice mem, rest;
    double s;
    int rc = 0, mrc;

    if (!m->exists) {
        return 0;
    }
    memcpy(pfx, m->key, m->plen);
    pfx[m->plen] = tag;
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    k = (MDB_val){plen, pfx};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, pfx, plen) != 0) {
            break;
        }
        if (pk__sub_full(
                tag, (pk_slice){(uint8_t *)k.mv_data + plen, k.mv_size - plen},
                (pk_slice){v.mv_data, v.mv_size}, &mem, &rest) != 0 ||
            (tag == PK_TAG_ZMEMBER && rest.len != 8)) {
            rc = pk__fail(t, PK_ECORRUPT);
            break;
        }
        s = tag == PK_TAG_SMEMBER ? 1.0 : pk__score_get(rest.ptr);
        rc = fn(ctx, mem, s);
        if (rc != 0) {
            break;
        }
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND) {
        rc = pk__fail(t, pk__err(mrc));
    }
    return rc;
}

static void aggregate(double *target, double val, pk_zagg agg)
{
    if (agg == PK_ZAGG_SUM) {
        *target += val;
        *target = isnan(*target) ? 0.0 : *target; /* inf + -inf */
    } else if (agg == PK_ZAGG_MIN) {
        *target = val < *target ? val : *target;
    } else {
        *target = val > *target ? val : *target;
    }
}

/* One combination being computed. */
typedef struct zcomb {
    pk_txn *t;
    const pk_zop *op;
    pk__meta *in; /* inputs, in processing order */
    size_t *idx;  /* their index in op->keys (for weights) */
    double w;     /* weight of the input being walked */
    uint64_t card;
    int card_only;
    zcoll *out;
} zcomb;

static double weight(const zcomb *z, size_t i)
{
    return z->op->weights ? z->op->weights[z->idx[i]] : 1.0;
}

static int inter_one(void *ctx, pk_slice mem, double s)
{
    zcomb *z = ctx;
    double score = weight(z, 0) * s, v;
    int rc;

    score = isnan(score) ? 0 : score;
    for (size_t j = 1; j < z->op->n; j++) {
        if ((rc = input_find(z->t, &z->in[j], mem, &v)) != 0) {
            return rc == PK_ENOTFOUND ? 0 : rc;
        }
        aggregate(&score, v * weight(z, j), z->op->agg);
    }
    if (z->card_only) {
        z->card++;
        /* 1 stops the walk; combine() takes it for success. */
        return z->op->limit && z->card >= z->op->limit ? 1 : 0;
    }
    return zcoll_add(z->out, mem, score);
}

static int diff_one(void *ctx, pk_slice mem, double s)
{
    zcomb *z = ctx;
    double v;
    int rc;

    for (size_t j = 1; j < z->op->n; j++) {
        rc = input_find(z->t, &z->in[j], mem, &v);
        if (rc != PK_ENOTFOUND) {
            return rc;
        }
    }
    return zcoll_add(z->out, mem, s);
}

static int union_one(void *ctx, pk_slice mem, double s)
{
    zcomb *z = ctx;
    double score = z->w * s;

    return zcoll_add(z->out, mem, isnan(score) ? 0 : score);
}

/* Folds the (member, input)-sorted union entries into one per member. */
static void union_fold(zcoll *c, pk_zagg agg)
{
    size_t n = 0;

    /* With no entries c->e is NULL, which qsort must not be given. */
    if (c->n > 1) {
        qsort(c->e, c->n, sizeof(*c->e), by_member);
    }
    for (size_t i = 0; i < c->n; i++) {
        if (n > 0 && mem_cmp(&c->e[n - 1], &c->e[i]) == 0) {
            aggregate(&c->e[n - 1].score, c->e[i].score, agg);
        } else {
            c->e[n++] = c->e[i];
        }
    }
    c->n = n;
}

/*
 * Computes op into out (unsorted, or in member order), or only its
 * cardinality into *card when card != NULL.  Runs in a read or inside an
 * open write operation.
 */
static int combine(pk_txn *t, uint32_t part, const pk_zop *op, uint64_t now,
                   zcoll *out, uint64_t *card)
{
    zcomb z = {t, op, NULL, NULL, 1.0, 0, card != NULL, out};
    int rc = 0;

    if (op->n == 0 || op->n > SIZE_MAX / sizeof(pk__meta)) {
        return PK_EINVAL;
    }
    z.in = malloc(op->n * sizeof(*z.in));
    z.idx = malloc(op->n * sizeof(*z.idx));
    if (z.in == NULL || z.idx == NULL) {
        rc = PK_ENOMEM;
        goto out;
    }
    for (size_t i = 0; rc == 0 && i < op->n; i++) {
        rc = input_load(t, part, op->keys[i], now, &z.in[i]);
        z.idx[i] = i;
    }
    if (rc != 0) {
        goto out;
    }
    if (op->op != PK_ZOP_DIFF) {
        /* Insertion sort by cardinality, stable (n is argc-bounded). */
        for (size_t i = 1; i < op->n; i++) {
            for (size_t j = i; j > 0; j--) {
                uint64_t a = z.in[j - 1].exists ? z.in[j - 1].count : 0;
                uint64_t b = z.in[j].exists ? z.in[j].count : 0;
                pk__meta tm;
                size_t ti;
                if (a <= b) {
                    break;
                }
                tm = z.in[j - 1], z.in[j - 1] = z.in[j], z.in[j] = tm;
                ti = z.idx[j - 1], z.idx[j - 1] = z.idx[j], z.idx[j] = ti;
            }
        }
    }
    if (op->op == PK_ZOP_INTER) {
        rc = z.in[0].exists ? input_each(t, &z.in[0], inter_one, &z) : 0;
        rc = rc == 1 ? 0 : rc;
    } else if (op->op == PK_ZOP_DIFF) {
        rc = input_each(t, &z.in[0], diff_one, &z);
    } else {
        for (size_t i = 0; rc == 0 && i < op->n; i++) {
            z.w = weight(&z, i);
            out->src = (uint32_t)i;
            rc = input_each(t, &z.in[i], union_one, &z);
        }
        zcoll_fix(out);
        union_fold(out, op->agg);
    }
    if (rc == 0 && card != NULL) {
        *card = z.card;
    }
out:
    free(z.in);
    free(z.idx);
    zcoll_fix(out);
    return rc == PK_ENOMEM ? pk__fail(t, rc) : rc;
}

int pk_zset_combine(pk_txn *t, uint32_t part, const pk_zop *op, uint64_t now_ms,
                    pk_zset_cb cb, void *ctx)
{
    zcoll c = {0};
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : combine(t, part, op, now_ms, &c, NULL);
    if (rc == 0 && c.n > 1) {
        qsort(c.e, c.n, sizeof(*c.e), by_score);
    }
    if (rc == 0) {
        for (size_t i = 0; rc == 0 && i < c.n; i++) {
            rc = cb(ctx, zent_mem(&c.e[i]), c.e[i].score);
        }
    }
    zcoll_free(&c);
    return rc;
}

int pk_zset_combine_card(pk_txn *t, uint32_t part, const pk_zop *op,
                         uint64_t now_ms, uint64_t *card)
{
    zcoll c = {0};
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : combine(t, part, op, now_ms, &c, card);
    zcoll_free(&c);
    return rc;
}

int pk_zset_combine_store(pk_txn *t, uint32_t part, const void *dst,
                          size_t dlen, const pk_zop *op, uint64_t now_ms,
                          uint64_t *stored)
{
    zcoll c = {0};
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = combine(t, part, op, now_ms, &c, NULL);
    rc = rc ? rc : zcoll_store(t, part, dst, dlen, &c, now_ms);
    if (rc == 0) {
        *stored = c.n;
    }
    zcoll_free(&c);
    return pk__op_end(t, rc);
}

int pk_zset_check_inputs(pk_txn *t, uint32_t part, size_t n,
                         const pk_slice *keys, uint64_t now_ms)
{
    pk__meta m;
    int rc = pk__read_begin(t, part);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = input_load(t, part, keys[i], now_ms, &m);
    }
    return rc;
}

typedef struct zscan {
    pk_zset_cb cb;
    void *ctx;
} zscan;

static int zscan_one(void *ctx, pk_slice sub, pk_slice val)
{
    zscan *z = ctx;

    if (val.len != 8) {
        return PK_ECORRUPT;
    }
    return z->cb(z->ctx, sub, pk__score_get(val.ptr));
}

int pk_zset_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t cursor, const pk_scan_opts *opts, uint64_t now_ms,
                 pk_zset_cb cb, void *ctx, uint64_t *next)
{
    pk_scan_opts o = {NULL, 0, 10, PK_TYPE_NONE, NULL, NULL};
    zscan z = {cb, ctx};
    pk__meta m;
    int rc = pk__read_begin(t, part);

    if (opts != NULL) {
        o = *opts;
        o.count = o.count ? o.count : 10;
    }
    rc = rc ? rc : pk__zset_load(t, part, key, klen, now_ms, &m);
    return rc ? rc
              : pk__sub_scan(t, &m, PK_TAG_ZMEMBER, cursor, o.count, o.match,
                             o.match_len, zscan_one, &z, next);
}

/*
 * pk_zset_range: ZRANGE by rank, score and lex, and ZRANDMEMBER (the
 * store's random picks over the ZMEMBER records, pk_store_rand.c).
 *
 * Every range is one cursor walk (zwalk) over either the ZSCORE records
 * (rank, score) or the ZMEMBER records (lex) of one key:
 *
 *     ... | p|04|s1|m1 | p|04|s2|m2 | ... | p|04|sn|mn | p|05 ...
 *             ^ seek, then NEXT -->              <-- PREV, ^ REV seeks past
 *
 * A per-range filter skips entries before the low end and stops at the
 * high end; LIMIT skips `offset` entries and stops after `count`.
 *
 * Long members (pk_keyenc.h) sort by sub-key, not by their bytes: those
 * of 224 bytes or more sharing their first 224 bytes (PK_KEYENC_SUBHEAD)
 * come in digest order.  Such members are contiguous, so lex ranges seek
 * at a bound's head and filter with the full member: the answer set is
 * Redis's, only the order (and so LIMIT's window, and the rank of
 * members tied on score) may differ among members sharing a head.
 * Seek keys are cut to PK_KEYENC_MAX bytes: no stored key is longer, so a
 * cut key finds the same neighbours.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_zset_int.h"

#define ZF_SKIP 1 /* filter: not in range yet, keep walking */
#define ZF_STOP 2 /* filter: past the range */

int pk_zbound_parse(const void *s, size_t len, pk_zbound *out)
{
    char small[128], *buf = small, *end;
    const char *p = s;
    int excl = len > 0 && p[0] == '(', ok;
    double v;

    len -= (size_t)excl;
    /* Any length, as Redis: DBL_MAX may come written out in full. */
    if (len >= sizeof(small) && (buf = malloc(len + 1)) == NULL) {
        return PK_ENOMEM;
    }
    memcpy(buf, p + excl, len);
    buf[len] = '\0';
    v = strtod(buf, &end);
    ok = *end == '\0' && !isnan(v);
    if (buf != small) {
        free(buf);
    }
    if (!ok) {
        return PK_EINVAL;
    }
    *out = (pk_zbound){v, excl};
    return 0;
}

int pk_zlex_parse(const void *s, size_t len, pk_zlex *out)
{
    const char *p = s;

    if (len == 1 && (p[0] == '-' || p[0] == '+')) {
        *out = (pk_zlex){NULL, 0, p[0] == '-' ? PK_ZLEX_MIN : PK_ZLEX_MAX};
        return 0;
    }
    if (len == 0 || (p[0] != '(' && p[0] != '[')) {
        return PK_EINVAL;
    }
    *out = (pk_zlex){p + 1, len - 1, p[0] == '(' ? PK_ZLEX_EXCL : PK_ZLEX_INCL};
    return 0;
}

/* One range walk over the records prefix | tag. */
typedef struct zwalk {
    uint8_t pfx[PK_KEYENC_MAX + 1]; /* prefix | tag */
    size_t plen;
    uint8_t seek[PK_KEYENC_MAX + 1];
    size_t seek_len;
    int rev;
    int64_t offset, count; /* count < 0: unlimited */
    int (*filter)(const struct zwalk *w, pk_slice mem, double score);
    const pk_zbound *smin, *smax;
    const pk_zlex *lmin, *lmax;
} zwalk;

/* Positions c at the first entry >= seek, or the last <= seek (rev). */
static int walk_seek(MDB_cursor *c, zwalk *w, MDB_val *k, MDB_val *v)
{
    size_t n = w->seek_len < PK_KEYENC_MAX ? w->seek_len : PK_KEYENC_MAX;
    int rc;

    /* Truncating a seek key is safe: no stored key is longer. */
    *k = (MDB_val){n, w->seek};
    rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
    if (!w->rev) {
        return rc;
    }
    if (rc == MDB_NOTFOUND) {
        return mdb_cursor_get(c, k, v, MDB_LAST);
    }
    if (rc == 0 && (k->mv_size != n || memcmp(k->mv_data, w->seek, n))) {
        rc = mdb_cursor_get(c, k, v, MDB_PREV);
    }
    return rc;
}

static int walk(pk_txn *t, pk__meta *m, zwalk *w, pk_zset_cb cb, void *ctx)
{
    MDB_cursor *c;
    MDB_val k, v;
    pk_slice mem, rest;
    double score;
    int rc = 0, mrc, f;

    if (w->offset < 0 || w->count == 0 || !m->exists) {
        return 0;
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    for (mrc = walk_seek(c, w, &k, &v); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, w->rev ? MDB_PREV : MDB_NEXT)) {
        const uint8_t *kp = k.mv_data;
        if (k.mv_size < w->plen || memcmp(kp, w->pfx, w->plen) != 0) {
            break;
        }
        if (pk__sub_full(w->pfx[w->plen - 1],
                         (pk_slice){kp + w->plen, k.mv_size - w->plen},
                         (pk_slice){v.mv_data, v.mv_size}, &mem, &rest) != 0) {
            rc = pk__fail(t, PK_ECORRUPT);
            break;
        }
        if (w->pfx[w->plen - 1] == PK_TAG_ZSCORE) {
            score = pk_keyenc_score_decode(pk_be64_get(kp + w->plen));
        } else {
            score = pk__score_get(rest.ptr);
        }
        f = w->filter ? w->filter(w, mem, score) : 0;
        if (f == ZF_STOP) {
            break;
        }
        if (f == ZF_SKIP) {
            continue;
        }
        if (w->offset > 0) {
            w->offset--;
            continue;
        }
        if ((rc = cb(ctx, mem, score)) != 0) {
            break;
        }
        if (w->count > 0 && --w->count == 0) {
            break;
        }
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND) {
        rc = pk__fail(t, pk__err(mrc));
    }
    return rc;
}

/* Sets up w for the records prefix | tag of a loaded key. */
static void walk_prefix(const pk__meta *m, zwalk *w, uint8_t tag)
{
    memcpy(w->pfx, m->key, m->plen);
    w->pfx[m->plen] = tag;
    w->plen = m->plen + 1;
    memcpy(w->seek, w->pfx, w->plen);
    w->seek_len = w->plen;
}

/* Sets the seek key to pfx | u (u64 big-endian). */
static void seek_u64(zwalk *w, uint64_t u)
{
    pk_be64_put(w->seek + w->plen, u);
    w->seek_len = w->plen + 8;
}

/* Sets the seek key just past every record of the walk's prefix. */
static void seek_past(zwalk *w)
{
    w->seek[w->plen - 1] = (uint8_t)(w->pfx[w->plen - 1] + 1);
    w->seek_len = w->plen;
}

int pk__zset_clamp(uint64_t card, int64_t start, int64_t stop, uint64_t *from,
                   uint64_t *n)
{
    int64_t c = card > INT64_MAX ? INT64_MAX : (int64_t)card;

    /* Adding c to a negative rank cannot overflow; the result is clamped
     * before anything uses it as a count. */
    start += start < 0 ? c : 0;
    stop += stop < 0 ? c : 0;
    start = start < 0 ? 0 : start;
    if (start > stop || start >= c) {
        return 0;
    }
    stop = stop >= c ? c - 1 : stop;
    *from = (uint64_t)start;
    *n = (uint64_t)(stop - start + 1);
    return 1;
}

static int rank_setup(const pk__meta *m, const pk_zrange *r, zwalk *w)
{
    uint64_t from, n;

    walk_prefix(m, w, PK_TAG_ZSCORE);
    if (!pk__zset_clamp(m->count, r->start, r->stop, &from, &n)) {
        w->count = 0;
        return 0;
    }
    w->offset = (int64_t)from;
    w->count = (int64_t)n;
    if (r->rev) {
        seek_past(w);
    }
    return 0;
}

static int score_filter(const zwalk *w, pk_slice mem, double s)
{
    const pk_zbound *lo = w->smin, *hi = w->smax;
    int below = s < lo->value || (lo->excl && s == lo->value);
    int above = s > hi->value || (hi->excl && s == hi->value);

    (void)mem;
    if (w->rev) {
        return above ? ZF_SKIP : below ? ZF_STOP : 0;
    }
    return below ? ZF_SKIP : above ? ZF_STOP : 0;
}

static int score_setup(const pk__meta *m, const pk_zrange *r, zwalk *w)
{
    uint64_t u;

    if (isnan(r->smin.value) || isnan(r->smax.value)) {
        return PK_EINVAL;
    }
    walk_prefix(m, w, PK_TAG_ZSCORE);
    w->filter = score_filter;
    w->smin = &r->smin;
    w->smax = &r->smax;
    if (!r->rev) {
        seek_u64(w, pk_keyenc_score(r->smin.value));
    } else if ((u = pk_keyenc_score(r->smax.value)) != UINT64_MAX) {
        seek_u64(w, u + 1); /* past every member scored max */
    } else {
        seek_past(w);
    }
    return 0;
}

/* Compares a member with a lex bound's bytes. */
static int lex_cmp(pk_slice mem, const pk_zlex *b)
{
    size_t n = mem.len < b->len ? mem.len : b->len;
    int c = n ? memcmp(mem.ptr, b->ptr, n) : 0;

    return c ? c : (mem.len > b->len) - (mem.len < b->len);
}

/*
 * Whether mem and bound b share a long member's head: members of that
 * head are contiguous but ordered by digest, not bytes (pk_keyenc.h), so
 * passing the bound at one of them does not end the range.
 */
static int lex_same_head(pk_slice mem, const pk_zlex *b)
{
    return mem.len >= PK_KEYENC_SUBHEAD && b->kind <= PK_ZLEX_EXCL &&
           b->len >= PK_KEYENC_SUBHEAD &&
           memcmp(mem.ptr, b->ptr, PK_KEYENC_SUBHEAD) == 0;
}

static int lex_filter(const zwalk *w, pk_slice mem, double s)
{
    const pk_zlex *lo = w->lmin, *hi = w->lmax;
    int below, above;

    (void)s;
    below = lo->kind == PK_ZLEX_MAX ||
            (lo->kind != PK_ZLEX_MIN &&
             lex_cmp(mem, lo) < (lo->kind == PK_ZLEX_EXCL ? 1 : 0));
    above = hi->kind == PK_ZLEX_MIN ||
            (hi->kind != PK_ZLEX_MAX &&
             lex_cmp(mem, hi) > (hi->kind == PK_ZLEX_EXCL ? -1 : 0));
    if (w->rev) {
        return below   ? (lex_same_head(mem, lo) ? ZF_SKIP : ZF_STOP)
               : above ? ZF_SKIP
                       : 0;
    }
    return above   ? (lex_same_head(mem, hi) ? ZF_SKIP : ZF_STOP)
           : below ? ZF_SKIP
                   : 0;
}

static int lex_setup(const pk__meta *m, const pk_zrange *r, zwalk *w)
{
    const pk_zlex *b = r->rev ? &r->lmax : &r->lmin;
    size_t n;

    walk_prefix(m, w, PK_TAG_ZMEMBER);
    w->filter = lex_filter;
    w->lmin = &r->lmin;
    w->lmax = &r->lmax;
    if (b->kind == PK_ZLEX_MAX) {
        seek_past(w);
    } else if (b->kind != PK_ZLEX_MIN) {
        /* A bound as long as a head seeks at the head: the members
         * sharing it sort by digest, so any of them may be in range.
         * REV seeks past all of them (no sub-key of that head exceeds
         * head | FF x 16). */
        n = b->len < PK_KEYENC_SUBHEAD ? b->len : PK_KEYENC_SUBHEAD;
        memcpy(w->seek + w->plen, b->ptr, n);
        if (r->rev && n == PK_KEYENC_SUBHEAD) {
            memset(w->seek + w->plen + n, 0xFF, PK_KEYENC_DIGEST);
            n += PK_KEYENC_DIGEST;
        }
        w->seek_len = w->plen + n;
    }
    return 0;
}

int pk__zset_walk(pk_txn *t, pk__meta *m, const pk_zrange *r, pk_zset_cb cb,
                  void *ctx)
{
    zwalk w = {0};
    int rc;

    w.rev = r->rev;
    w.offset = r->offset;
    w.count = r->count;
    switch (r->kind) {
    case PK_ZRANGE_RANK:
        rc = rank_setup(m, r, &w);
        break;
    case PK_ZRANGE_SCORE:
        rc = score_setup(m, r, &w);
        break;
    case PK_ZRANGE_LEX:
        rc = lex_setup(m, r, &w);
        break;
    default:
        rc = PK_EINVAL;
    }
    return rc ? rc : walk(t, m, &w, cb, ctx);
}

/* Loads the key for a range read. */
static int load_read(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     uint64_t now, pk__meta *m)
{
    int rc = pk__read_begin(t, part);

    return rc ? rc : pk__zset_load(t, part, key, klen, now, m);
}

int pk_zset_range(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const pk_zrange *r, uint64_t now_ms, pk_zset_cb cb, void *ctx)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    return rc ? rc : pk__zset_walk(t, &m, r, cb, ctx);
}

static int count_one(void *ctx, pk_slice member, double score)
{
    (void)member;
    (void)score;
    (*(uint64_t *)ctx)++;
    return 0;
}

int pk_zset_count(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const pk_zrange *r, uint64_t now_ms, uint64_t *n)
{
    pk_zrange all = *r;
    uint64_t c = 0;
    int rc;

    all.offset = 0;
    all.count = -1;
    rc = pk_zset_range(t, part, key, klen, &all, now_ms, count_one, &c);
    if (rc == 0) {
        *n = c;
    }
    return rc;
}

int pk_zset_rank(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 const void *member, size_t mlen, int rev, uint64_t now_ms,
                 uint64_t *rank, double *score)
{
    uint8_t mk[PK_KEYENC_MAX];
    const uint8_t *sub;
    uint64_t n = 0;
    size_t mkl, sl;
    pk_slice sv;
    pk__meta m;
    MDB_cursor *c;
    MDB_val k, v;
    zwalk w = {0};
    double s;
    int rc = load_read(t, part, key, klen, now_ms, &m), mrc;

    if (rc != 0) {
        return rc;
    }
    if (!m.exists || pk__sub_key(m.key, m.plen, PK_TAG_ZMEMBER, member, mlen,
                                 mk, &mkl) != 0) {
        return PK_ENOTFOUND;
    }
    rc = pk__sub_get(t, PK_TAG_ZMEMBER, mk, mkl, member, mlen, &sv);
    if (rc != 0) {
        return rc == PK_ERANGE ? PK_ENOTFOUND : rc;
    }
    s = pk__score_get(sv.ptr);
    sub = mk + m.plen + 1; /* the member's sub-key */
    sl = mkl - m.plen - 1;
    /* Count the index records before (after, rev) score8 | member. */
    walk_prefix(&m, &w, PK_TAG_ZSCORE);
    w.rev = rev;
    if (rev) {
        seek_past(&w);
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    for (mrc = walk_seek(c, &w, &k, &v); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, rev ? MDB_PREV : MDB_NEXT)) {
        const uint8_t *kp = k.mv_data;
        if (k.mv_size < w.plen || memcmp(kp, w.pfx, w.plen) != 0) {
            mrc = MDB_NOTFOUND;
            break;
        }
        if (k.mv_size == w.plen + 8 + sl &&
            pk_keyenc_score_decode(pk_be64_get(kp + w.plen)) == s &&
            memcmp(kp + w.plen + 8, sub, sl) == 0) {
            break;
        }
        n++;
    }
    mdb_cursor_close(c);
    if (mrc != 0) {
        return mrc == MDB_NOTFOUND ? pk__fail(t, PK_ECORRUPT)
                                   : pk__fail(t, pk__err(mrc));
    }
    *rank = n;
    *score = s;
    return 0;
}

int pk_zset_range_rank(pk_txn *t, uint32_t part, const void *key, size_t klen,
                       int64_t start, int64_t stop, int rev, uint64_t now_ms,
                       pk_zset_cb cb, void *ctx)
{
    pk_zrange r = {.kind = PK_ZRANGE_RANK,
                   .rev = rev,
                   .start = start,
                   .stop = stop,
                   .count = -1};

    return pk_zset_range(t, part, key, klen, &r, now_ms, cb, ctx);
}

int pk_zset_range_score(pk_txn *t, uint32_t part, const void *key, size_t klen,
                        const pk_zbound *min, const pk_zbound *max, int rev,
                        int64_t offset, int64_t count, uint64_t now_ms,
                        pk_zset_cb cb, void *ctx)
{
    pk_zrange r = {.kind = PK_ZRANGE_SCORE,
                   .rev = rev,
                   .smin = *min,
                   .smax = *max,
                   .offset = offset,
                   .count = count};

    return pk_zset_range(t, part, key, klen, &r, now_ms, cb, ctx);
}

int pk_zset_range_lex(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      const pk_zlex *min, const pk_zlex *max, int rev,
                      int64_t offset, int64_t count, uint64_t now_ms,
                      pk_zset_cb cb, void *ctx)
{
    pk_zrange r = {.kind = PK_ZRANGE_LEX,
                   .rev = rev,
                   .lmin = *min,
                   .lmax = *max,
                   .offset = offset,
                   .count = count};

    return pk_zset_range(t, part, key, klen, &r, now_ms, cb, ctx);
}

/* A pk_zset_cb behind a pk__rand_cb: rest is the member's 8 score bytes. */
typedef struct to_zset {
    pk_zset_cb cb;
    void *ctx;
} to_zset;

static int zset_pick(void *ctx, pk_slice mem, pk_slice rest)
{
    const to_zset *z = ctx;

    if (rest.len != 8) {
        return PK_ECORRUPT;
    }
    return z->cb(z->ctx, mem, pk__score_get(rest.ptr));
}

int pk_zset_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                   pk_zset_cb cb, void *ctx)
{
    pk__meta m;
    to_zset z = {cb, ctx};
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists) {
        return rc;
    }
    return pk__rand_pick(t, &m, PK_TAG_ZMEMBER, count, repeat, &seed, zset_pick,
                         &z);
}

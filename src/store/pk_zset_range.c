/*
 * pk_zset_range: ZRANGE by rank, score and lex.
 *
 * Every range is one cursor walk (zwalk) over either the ZSCORE records
 * (rank, score) or the ZMEMBER records (lex) of one key:
 *
 *     ... | p|04|s1|m1 | p|04|s2|m2 | ... | p|04|sn|mn | p|05 ...
 *             ^ seek, then NEXT -->              <-- PREV, ^ REV seeks past
 *
 * A per-range filter skips entries before the low end and stops at the
 * high end; LIMIT skips `offset` entries and stops after `count`.
 * Seek keys are cut to PK_KEYENC_MAX bytes: no stored key is longer, so a
 * cut key finds the same neighbours.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_zset_range.h"

#define ZF_SKIP 1 /* filter: not in range yet, keep walking */
#define ZF_STOP 2 /* filter: past the range */

int pk_zbound_parse(const void *s, size_t len, pk_zbound *out)
{
    char buf[128], *end;
    const char *p = s;
    int excl = len > 0 && p[0] == '(';
    double v;

    len -= (size_t)excl;
    if (len >= sizeof(buf)) {
        return PK_EINVAL;
    }
    memcpy(buf, p + excl, len);
    buf[len] = '\0';
    v = strtod(buf, &end);
    if (*end != '\0' || isnan(v)) {
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
    pk_slice mem;
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
        if (w->pfx[w->plen - 1] == PK_TAG_ZSCORE) {
            score = pk_keyenc_score_decode(pk_be64_get(kp + w->plen));
            mem = (pk_slice){kp + w->plen + 8, k.mv_size - w->plen - 8};
        } else {
            score = pk__score_get(v.mv_data);
            mem = (pk_slice){kp + w->plen, k.mv_size - w->plen};
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

/* Loads the key for a range read and sets up w for the given tag. */
static int walk_init(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     uint64_t now, pk__meta *m, zwalk *w, uint8_t tag)
{
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__zset_load(t, part, key, klen, now, m);
    /* A key too long to store loads as missing with m->key unset: there
     * is no prefix to copy. */
    if (rc != 0 || !m->exists) {
        return rc;
    }
    memcpy(w->pfx, m->key, m->plen);
    w->pfx[m->plen] = tag;
    w->plen = m->plen + 1;
    memcpy(w->seek, w->pfx, w->plen);
    w->seek_len = w->plen;
    return 0;
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

int pk_zset_range_rank(pk_txn *t, uint32_t part, const void *key, size_t klen,
                       int64_t start, int64_t stop, int rev, uint64_t now_ms,
                       pk_zset_cb cb, void *ctx)
{
    pk__meta m;
    zwalk w = {0};
    int64_t card;
    int rc = walk_init(t, part, key, klen, now_ms, &m, &w, PK_TAG_ZSCORE);

    if (rc != 0 || !m.exists) {
        return rc;
    }
    card = (int64_t)m.count;
    start += start < 0 ? card : 0;
    stop += stop < 0 ? card : 0;
    start = start < 0 ? 0 : start;
    if (start > stop || start >= card) {
        return 0;
    }
    stop = stop >= card ? card - 1 : stop;
    w.rev = rev;
    w.offset = start;
    w.count = stop - start + 1;
    if (rev) {
        seek_past(&w);
    }
    return walk(t, &m, &w, cb, ctx);
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

int pk_zset_range_score(pk_txn *t, uint32_t part, const void *key, size_t klen,
                        const pk_zbound *min, const pk_zbound *max, int rev,
                        int64_t offset, int64_t count, uint64_t now_ms,
                        pk_zset_cb cb, void *ctx)
{
    pk__meta m;
    zwalk w = {0};
    uint64_t u;
    int rc = walk_init(t, part, key, klen, now_ms, &m, &w, PK_TAG_ZSCORE);

    if (rc != 0 || isnan(min->value) || isnan(max->value)) {
        return rc ? rc : PK_EINVAL;
    }
    if (!m.exists) {
        return 0;
    }
    w.rev = rev;
    w.offset = offset;
    w.count = count;
    w.filter = score_filter;
    w.smin = min;
    w.smax = max;
    if (!rev) {
        seek_u64(&w, pk_keyenc_score(min->value));
    } else if ((u = pk_keyenc_score(max->value)) != UINT64_MAX) {
        seek_u64(&w, u + 1); /* past every member scored max */
    } else {
        seek_past(&w);
    }
    return walk(t, &m, &w, cb, ctx);
}

/* Compares a member with a lex bound's bytes. */
static int lex_cmp(pk_slice mem, const pk_zlex *b)
{
    size_t n = mem.len < b->len ? mem.len : b->len;
    int c = n ? memcmp(mem.ptr, b->ptr, n) : 0;

    return c ? c : (mem.len > b->len) - (mem.len < b->len);
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
        return below ? ZF_STOP : above ? ZF_SKIP : 0;
    }
    return above ? ZF_STOP : below ? ZF_SKIP : 0;
}

int pk_zset_range_lex(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      const pk_zlex *min, const pk_zlex *max, int rev,
                      int64_t offset, int64_t count, uint64_t now_ms,
                      pk_zset_cb cb, void *ctx)
{
    const pk_zlex *b = rev ? max : min;
    pk__meta m;
    zwalk w = {0};
    size_t n;
    int rc = walk_init(t, part, key, klen, now_ms, &m, &w, PK_TAG_ZMEMBER);

    if (rc != 0 || !m.exists) {
        return rc;
    }
    w.rev = rev;
    w.offset = offset;
    w.count = count;
    w.filter = lex_filter;
    w.lmin = min;
    w.lmax = max;
    if (b->kind == PK_ZLEX_MAX) {
        seek_past(&w);
    } else if (b->kind != PK_ZLEX_MIN) {
        n = b->len < PK_KEYENC_MAX - w.plen ? b->len : PK_KEYENC_MAX - w.plen;
        memcpy(w.seek + w.plen, b->ptr, n);
        w.seek_len = w.plen + n;
    }
    return walk(t, &m, &w, cb, ctx);
}

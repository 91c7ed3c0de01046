/*
 * Fields and members of any length (pk_keyenc.h's long sub-key form):
 * hashes, sets and sorted sets with members of 239, 240, 241, 1000 bytes
 * and 1 MB, members sharing their head, NUL bytes; SCAN with MATCH on the
 * full member; lex ranges over members sharing a head; RENAME, COPY,
 * DUMP and RESTORE; the change log carrying them to another store;
 * pk__rec_check refusing tampered long records; a forged digest
 * collision never served and never overwritten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pk_hash.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyenc.h"
#include "store/pk_keyops.h"
#include "store/pk_set.h"
#include "store/pk_store_int.h"
#include "store/pk_zset.h"
#include "store/pk_zset_ops.h"
#include "store/pk_zset_range.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define NM 8

/* The test members: owned, filled once by setup. */
typedef struct lm {
    tstore *a, *b;
    uint8_t *mem[NM];
    size_t len[NM];
    pk_slice sl[NM];
} lm;

static int setup(void **state)
{
    static const size_t len[NM] = {239, 240, 241, 1000, 1u << 20, 1000, 500, 5};
    lm *w = calloc(1, sizeof(*w));

    if (w == NULL || (w->a = tstore_new()) == NULL ||
        (w->b = tstore_new()) == NULL) {
        return -1;
    }
    for (int i = 0; i < NM; i++) {
        w->len[i] = len[i];
        w->mem[i] = malloc(len[i]);
        for (size_t j = 0; j < len[i]; j++) {
            w->mem[i][j] = (uint8_t)('a' + (i + j) % 26);
        }
    }
    /* 5 differs from 3 in its last byte only (same head, other digest);
     * 6 is all NULs; every long one ends in 'Z' (for MATCH *Z). */
    memcpy(w->mem[5], w->mem[3], w->len[3]);
    w->mem[5][w->len[5] - 2] ^= 1;
    memset(w->mem[6], 0, w->len[6]);
    for (int i = 1; i < 7; i++) {
        w->mem[i][w->len[i] - 1] = 'Z';
    }
    for (int i = 0; i < NM; i++) {
        w->sl[i] = (pk_slice){w->mem[i], w->len[i]};
    }
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    lm *w = *state;

    for (int i = 0; i < NM; i++) {
        free(w->mem[i]);
    }
    tstore_free(w->a);
    tstore_free(w->b);
    free(w);
    return 0;
}

/* Which of the test members a callback saw (by full bytes), and others. */
typedef struct seen {
    const lm *w;
    int hit[NM];
    int others;
    int n;
} seen;

static int which(const lm *w, pk_slice m)
{
    for (int i = 0; i < NM; i++) {
        if (m.len == w->len[i] && memcmp(m.ptr, w->mem[i], m.len) == 0) {
            return i;
        }
    }
    return -1;
}

static void saw(seen *s, pk_slice m)
{
    int i = which(s->w, m);

    s->n++;
    if (i < 0) {
        s->others++;
    } else {
        s->hit[i]++;
    }
}

static int seen_field(void *ctx, pk_slice f, pk_slice v)
{
    seen *s = ctx;
    int i = which(s->w, f);

    saw(s, f);
    /* Each field's value is its index as one byte. */
    assert_int_equal(v.len, 1);
    assert_int_equal(((const uint8_t *)v.ptr)[0], i);
    return 0;
}

static int seen_member(void *ctx, pk_slice m)
{
    saw(ctx, m);
    return 0;
}

static int seen_z(void *ctx, pk_slice m, double score)
{
    seen *s = ctx;

    saw(s, m);
    assert_true(which(s->w, m) == (int)score);
    return 0;
}

static void all_once(const seen *s, int others)
{
    for (int i = 0; i < NM; i++) {
        assert_int_equal(s->hit[i], 1);
    }
    assert_int_equal(s->others, others);
}

static void hset_all(lm *w, pk_txn *t, uint32_t part, const char *key)
{
    uint8_t idx[NM];
    pk_slice v[NM];
    uint64_t n;

    for (int i = 0; i < NM; i++) {
        idx[i] = (uint8_t)i;
        v[i] = (pk_slice){idx + i, 1};
    }
    assert_int_equal(pk_hmap_set(t, part, S(key), NM, w->sl, v, NOW, &n), 0);
    assert_int_equal(n, NM);
}

static void check_hash(lm *w, pk_txn *t, uint32_t part, const void *key,
                       size_t klen)
{
    seen s = {w, {0}, 0, 0};
    pk_slice v;
    uint64_t n;

    for (int i = 0; i < NM; i++) {
        assert_int_equal(
            pk_hmap_get(t, part, key, klen, w->mem[i], w->len[i], NOW, &v), 0);
        assert_int_equal(v.len, 1);
        assert_int_equal(((const uint8_t *)v.ptr)[0], i);
    }
    assert_int_equal(pk_hmap_len(t, part, key, klen, NOW, &n), 0);
    assert_int_equal(n, NM);
    assert_int_equal(pk_hmap_each(t, part, key, klen, NOW, seen_field, &s), 0);
    all_once(&s, 0);
}

static void test_hash(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_slice v, f;
    uint64_t n;
    int64_t iv;
    int ex, set;

    hset_all(w, t, 1, "h");
    check_hash(w, t, 1, S("h"));
    /* Neither the head alone, nor a member one byte shorter or with
     * another last byte, is a field. */
    assert_int_equal(
        pk_hmap_get(t, 1, S("h"), w->mem[3], PK_KEYENC_SUBHEAD, NOW, &v),
        PK_ENOTFOUND);
    assert_int_equal(
        pk_hmap_get(t, 1, S("h"), w->mem[3], w->len[3] - 1, NOW, &v),
        PK_ENOTFOUND);
    w->mem[3][999] ^= 2;
    assert_int_equal(pk_hmap_exists(t, 1, S("h"), w->mem[3], 1000, NOW, &ex),
                     0);
    assert_int_equal(ex, 0);
    w->mem[3][999] ^= 2;
    assert_int_equal(pk_hmap_exists(t, 1, S("h"), w->mem[3], 1000, NOW, &ex),
                     0);
    assert_int_equal(ex, 1);
    /* HSET replaces a long field's value; HINCRBY and HSETNX see it. */
    f = w->sl[4];
    v = (pk_slice){"41", 2};
    assert_int_equal(pk_hmap_set(t, 1, S("h"), 1, &f, &v, NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_hmap_incrby(t, 1, S("h"), f.ptr, f.len, 1, NOW, &iv),
                     0);
    assert_int_equal(iv, 42);
    assert_int_equal(pk_hmap_get(t, 1, S("h"), f.ptr, f.len, NOW, &v), 0);
    assert_int_equal(v.len, 2);
    assert_memory_equal(v.ptr, "42", 2);
    assert_int_equal(
        pk_hmap_setnx(t, 1, S("h"), f.ptr, f.len, S("x"), NOW, &set), 0);
    assert_int_equal(set, 0);
    /* HDEL of a long field removes exactly it. */
    assert_int_equal(pk_hmap_del(t, 1, S("h"), 1, &w->sl[5], NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_hmap_get(t, 1, S("h"), w->mem[5], 1000, NOW, &v),
                     PK_ENOTFOUND);
    assert_int_equal(pk_hmap_get(t, 1, S("h"), w->mem[3], 1000, NOW, &v), 0);
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW, &n), 0);
    assert_int_equal(n, NM - 1);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_set(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    seen s = {w, {0}, 0, 0};
    pk_slice keys[2] = {{"s", 1}, {"s2", 2}};
    uint8_t is[NM];
    uint64_t n;
    int moved;

    assert_int_equal(pk_set_add(t, 1, S("s"), NM, w->sl, NOW, &n), 0);
    assert_int_equal(n, NM);
    assert_int_equal(pk_set_add(t, 1, S("s"), NM, w->sl, NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_set_ismember(t, 1, S("s"), NM, w->sl, NOW, is), 0);
    for (int i = 0; i < NM; i++) {
        assert_int_equal(is[i], 1);
    }
    pk_slice head = {w->mem[3], PK_KEYENC_SUBHEAD};
    assert_int_equal(pk_set_ismember(t, 1, S("s"), 1, &head, NOW, is), 0);
    assert_int_equal(is[0], 0);
    assert_int_equal(pk_set_each(t, 1, S("s"), NOW, seen_member, &s), 0);
    all_once(&s, 0);
    /* s2 holds 3..7: the algebra meets long members under both keys. */
    assert_int_equal(pk_set_add(t, 1, S("s2"), 5, w->sl + 3, NOW, &n), 0);
    memset(&s, 0, sizeof(s));
    s.w = w;
    assert_int_equal(pk_set_combine(t, 1, PK_SETOP_INTER, 2, keys, 0, NOW,
                                    seen_member, &s, &n),
                     0);
    assert_int_equal(n, 5);
    assert_int_equal(s.hit[4] + s.hit[5] + s.hit[3], 3);
    memset(&s, 0, sizeof(s));
    s.w = w;
    assert_int_equal(pk_set_combine(t, 1, PK_SETOP_UNION, 2, keys, 0, NOW,
                                    seen_member, &s, &n),
                     0);
    assert_int_equal(n, NM);
    all_once(&s, 0);
    assert_int_equal(
        pk_set_store(t, 1, PK_SETOP_DIFF, S("d"), 2, keys, NOW, &n), 0);
    assert_int_equal(n, 3);
    /* SMOVE a 1 MB member; SREM one sharing a head with another. */
    assert_int_equal(
        pk_set_move(t, 1, S("s"), S("m"), w->mem[4], w->len[4], NOW, &moved),
        0);
    assert_int_equal(moved, 1);
    assert_int_equal(pk_set_ismember(t, 1, S("m"), 1, &w->sl[4], NOW, is), 0);
    assert_int_equal(is[0], 1);
    assert_int_equal(pk_set_rem(t, 1, S("s"), 1, &w->sl[5], NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_set_ismember(t, 1, S("s"), 1, &w->sl[3], NOW, is), 0);
    assert_int_equal(is[0], 1);
    /* SPOP everything returns the full members. */
    memset(&s, 0, sizeof(s));
    s.w = w;
    assert_int_equal(pk_set_pop(t, 1, S("s2"), 2, 7, NOW, seen_member, &s, &n),
                     0);
    assert_int_equal(n, 2);
    assert_int_equal(s.others, 0);
    assert_int_equal(pk_set_card(t, 1, S("s2"), NOW, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void zadd_all(lm *w, pk_txn *t, uint32_t part, const char *key)
{
    double sc[NM];
    pk_zadd_result r;

    for (int i = 0; i < NM; i++) {
        sc[i] = i;
    }
    assert_int_equal(pk_zset_add(t, part, S(key), 0, NM, sc, w->sl, NOW, &r),
                     0);
    assert_int_equal(r.count, NM);
}

static void check_zset(lm *w, pk_txn *t, uint32_t part, const void *key,
                       size_t klen)
{
    seen s = {w, {0}, 0, 0};
    uint64_t rank;
    double sc;

    for (int i = 0; i < NM; i++) {
        assert_int_equal(
            pk_zset_score(t, part, key, klen, w->mem[i], w->len[i], NOW, &sc),
            0);
        assert_true(sc == i);
        assert_int_equal(pk_zset_rank(t, part, key, klen, w->mem[i], w->len[i],
                                      0, NOW, &rank, &sc),
                         0);
        assert_int_equal(rank, (uint64_t)i);
    }
    assert_int_equal(
        pk_zset_range_rank(t, part, key, klen, 0, -1, 0, NOW, seen_z, &s), 0);
    all_once(&s, 0);
}

/* Collects lex range results as indexes into w's members. */
typedef struct lexout {
    const lm *w;
    int idx[NM + 2];
    int n;
} lexout;

static int lex_one(void *ctx, pk_slice m, double score)
{
    lexout *o = ctx;

    (void)score;
    o->idx[o->n++] = which(o->w, m);
    return 0;
}

static void test_zset(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_zadd_result r;
    double sc;
    uint64_t n;

    zadd_all(w, t, 1, "z");
    check_zset(w, t, 1, S("z"));
    /* A score change moves the long member's index record. */
    sc = 100;
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_CH, 1, &sc, &w->sl[4], NOW, &r), 0);
    assert_int_equal(r.count, 1);
    lexout o = {w, {0}, 0};
    assert_int_equal(
        pk_zset_range_rank(t, 1, S("z"), -1, -1, 0, NOW, lex_one, &o), 0);
    assert_int_equal(o.n, 1);
    assert_int_equal(o.idx[0], 4);
    /* Pops and unions return full members. */
    seen s = {w, {0}, 0, 0};
    pk_slice keys[1] = {{"z", 1}};
    pk_zop op = {PK_ZOP_UNION, PK_ZAGG_SUM, 1, keys, NULL, 0};
    assert_int_equal(pk_zset_combine_store(t, 1, S("zu"), &op, NOW, &n), 0);
    assert_int_equal(n, NM);
    o.n = 0;
    assert_int_equal(pk_zset_pop(t, 1, S("zu"), 1, 1, NOW, lex_one, &o, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(o.idx[0], 4);
    assert_int_equal(pk_zset_pop(t, 1, S("zu"), 0, 3, NOW, seen_z, &s, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(s.hit[0] + s.hit[1] + s.hit[2], 3);
    assert_int_equal(pk_zset_rem(t, 1, S("z"), 1, &w->sl[5], NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(
        pk_zset_score(t, 1, S("z"), w->mem[5], w->len[5], NOW, &sc),
        PK_ENOTFOUND);
    assert_int_equal(
        pk_zset_score(t, 1, S("z"), w->mem[3], w->len[3], NOW, &sc), 0);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

/*
 * Lex ranges among members sharing a 224-byte head: one exactly the head,
 * some just longer than it (short form), some long (digest order).  The
 * answer set must be Redis's byte-order answer.
 */
static void test_lex(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    enum { N = 9 };
    static const size_t len[N] = {224, 230, 239, 240, 300, 300, 1000, 1000, 2};
    uint8_t *m[N];
    pk_slice sl[N];
    double sc[N] = {0};
    pk_zadd_result r;

    for (int i = 0; i < N; i++) {
        m[i] = malloc(len[i]);
        memset(m[i], 'q', len[i]);
        sl[i] = (pk_slice){m[i], len[i]};
    }
    /* 0 is the head; 1..3 extend it in the short form or barely long;
     * 4..7 are long with other bytes after the head, so their digests
     * order them; 8 ("qr") sorts after all.  The expected counts below
     * come from byte order. */
    m[1][229] = 'a';
    m[2][224] = 'q';
    m[3][224] = 'q';
    m[3][230] = 'b';
    m[4][224] = 'r';
    m[5][224] = 't';
    m[6][224] = 's';
    m[7][224] = 'u';
    m[8][1] = 'r';
    assert_int_equal(pk_zset_add(t, 1, S("lx"), 0, N, sc, sl, NOW, &r), 0);
    assert_int_equal(r.count, N);
    /* Each (lo, hi) pair of members as inclusive and exclusive bounds:
     * the count must be the byte-order count. */
    for (int a = 0; a < N; a++) {
        for (int b = 0; b < N; b++) {
            for (int ex = 0; ex < 4; ex++) {
                pk_zlex lo = {m[a], len[a], ex & 1 ? PK_ZLEX_EXCL : 0};
                pk_zlex hi = {m[b], len[b], ex & 2 ? PK_ZLEX_EXCL : 0};
                pk_zrange zr = {
                    .kind = PK_ZRANGE_LEX, .lmin = lo, .lmax = hi, .count = -1};
                uint64_t want = 0, got = 99;
                for (int i = 0; i < N; i++) {
                    size_t na = len[i] < len[a] ? len[i] : len[a];
                    size_t nb = len[i] < len[b] ? len[i] : len[b];
                    int ca = memcmp(m[i], m[a], na),
                        cb = memcmp(m[i], m[b], nb);
                    ca = ca ? ca : (len[i] > len[a]) - (len[i] < len[a]);
                    cb = cb ? cb : (len[i] > len[b]) - (len[i] < len[b]);
                    want += (ex & 1 ? ca > 0 : ca >= 0) &&
                            (ex & 2 ? cb < 0 : cb <= 0);
                }
                assert_int_equal(pk_zset_count(t, 1, S("lx"), &zr, NOW, &got),
                                 0);
                assert_int_equal(got, want);
                zr.rev = 1;
                assert_int_equal(pk_zset_count(t, 1, S("lx"), &zr, NOW, &got),
                                 0);
                assert_int_equal(got, want);
            }
        }
    }
    /* ZREMRANGEBYLEX over the long ones of that head. */
    pk_zrange zr = {.kind = PK_ZRANGE_LEX,
                    .lmin = {m[4], len[4], PK_ZLEX_INCL},
                    .lmax = {m[7], len[7], PK_ZLEX_INCL},
                    .count = -1};
    uint64_t n;
    assert_int_equal(pk_zset_remrange(t, 1, S("lx"), &zr, NOW, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(pk_zset_card(t, 1, S("lx"), NOW, &n), 0);
    assert_int_equal(n, N - 4);
    for (int i = 0; i < N; i++) {
        free(m[i]);
    }
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static int scan_field(void *ctx, pk_slice f, pk_slice v)
{
    (void)v;
    saw(ctx, f);
    return 0;
}

static int scan_z(void *ctx, pk_slice m, double score)
{
    return seen_z(ctx, m, score);
}

/* HSCAN, SSCAN and ZSCAN with MATCH *Z (long members only) and COUNT 1. */
static void test_scan_match(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    uint64_t n;

    hset_all(w, t, 2, "h");
    assert_int_equal(pk_set_add(t, 2, S("s"), NM, w->sl, NOW, &n), 0);
    zadd_all(w, t, 2, "z");
    for (int kind = 0; kind < 3; kind++) {
        seen s = {w, {0}, 0, 0};
        pk_scan_opts o = {"*Z", 2, 1, PK_TYPE_NONE, NULL, NULL};
        pk_sscan_opts so = {"*Z", 2, 1};
        uint64_t cur = 0;
        int calls = 0;
        do {
            assert_true(++calls < 100);
            if (kind == 0) {
                assert_int_equal(pk_hmap_scan(t, 2, S("h"), cur, &o, NOW,
                                              scan_field, &s, &cur),
                                 0);
            } else if (kind == 1) {
                assert_int_equal(pk_set_scan(t, 2, S("s"), cur, &so, NOW,
                                             seen_member, &s, &cur),
                                 0);
            } else {
                assert_int_equal(
                    pk_zset_scan(t, 2, S("z"), cur, &o, NOW, scan_z, &s, &cur),
                    0);
            }
        } while (cur != 0);
        for (int i = 0; i < NM; i++) {
            assert_int_equal(s.hit[i], i >= 1 && i < 7);
        }
        assert_int_equal(s.others, 0);
    }
    assert_int_equal(pk_txn_commit(t), 0);
}

/* RENAME to a long key, COPY back, DUMP and RESTORE: records verbatim. */
static void test_keyops(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    uint8_t lk[600];
    pk_slice d;
    uint8_t *dump;
    size_t dlen;
    int done;

    memset(lk, 'k', sizeof(lk));
    hset_all(w, t, 3, "h");
    zadd_all(w, t, 3, "z");
    assert_int_equal(pk_key_copy(t, 3, S("h"), 3, lk, sizeof(lk),
                                 PK_KEYOPS_MOVE | PK_KEYOPS_REPLACE, NOW,
                                 &done),
                     0);
    assert_int_equal(done, 1);
    check_hash(w, t, 3, lk, sizeof(lk));
    assert_int_equal(
        pk_key_copy(t, 3, lk, sizeof(lk), 3, S("h2"), 0, NOW, &done), 0);
    check_hash(w, t, 3, S("h2"));
    assert_int_equal(
        pk_key_copy(t, 3, S("z"), 3, lk + 1, sizeof(lk) - 1, 0, NOW, &done), 0);
    check_zset(w, t, 3, lk + 1, sizeof(lk) - 1);
    /* DUMP / RESTORE of the sorted set (ZMEMBER / ZSCORE pairing) and of
     * the hash. */
    const char *src[2] = {"z", "h2"}, *dst[2] = {"zr", "hr"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pk_key_dump(t, 3, S(src[i]), NOW, &d), 0);
        dlen = d.len;
        dump = malloc(dlen);
        memcpy(dump, d.ptr, dlen);
        assert_int_equal(pk_key_restore(t, 3, S(dst[i]), dump, dlen, 0, 0, NOW),
                         0);
        free(dump);
    }
    check_zset(w, t, 3, S("zr"));
    check_hash(w, t, 3, S("hr"));
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* A DUMP whose ZSCORE record carries another member than its ZMEMBER. */
static void test_restore_tampered(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_slice d;
    uint8_t *dump;
    pk_zadd_result r;
    double sc = 1;
    size_t dlen;

    assert_int_equal(pk_zset_add(t, 5, S("z"), 0, 1, &sc, &w->sl[3], NOW, &r),
                     0);
    assert_int_equal(pk_key_dump(t, 5, S("z"), NOW, &d), 0);
    dlen = d.len;
    dump = malloc(dlen);
    memcpy(dump, d.ptr, dlen);
    assert_int_equal(pk_key_restore(t, 5, S("z2"), dump, dlen, 0, 0, NOW), 0);
    /* Flip a member byte past the head in the last record (ZSCORE's
     * value), then fix the checksum: the digest no longer matches. */
    dump[dlen - 8 - 10] ^= 1;
    uint64_t h = pk_hash_xxh3(dump, dlen - 8);
    pk_be64_put(dump + dlen - 8, h);
    assert_int_equal(pk_key_restore(t, 5, S("z3"), dump, dlen, 0, 0, NOW),
                     PK_ECORRUPT);
    free(dump);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* The change log carries long members; the copy is byte-identical. */
static void test_replication(void **state)
{
    lm *w = *state;
    pk_txn *ta = wtxn(w->a->s), *tb;
    tship sh = {NULL, 4, 0, 0};
    uint64_t n;

    hset_all(w, ta, 4, "h");
    assert_int_equal(pk_set_add(ta, 4, S("s"), NM, w->sl, NOW, &n), 0);
    zadd_all(w, ta, 4, "z");
    assert_int_equal(pk_hmap_del(ta, 4, S("h"), 1, &w->sl[5], NOW, &n), 0);
    assert_int_equal(pk_txn_commit(ta), 0);
    ta = wtxn(w->a->s);
    tb = wtxn(w->b->s);
    sh.t = tb;
    assert_int_equal(pk_store_log_read(ta, 4, 1, tship_cb, &sh), 0);
    assert_int_equal(sh.n, 4);
    check_zset(w, tb, 4, S("z"));
    assert_int_equal(pk_txn_commit(tb), 0);
    assert_int_equal(pk_txn_commit(ta), 0);
    assert_int_equal(tstore_same(w->a->s, w->b->s, 4), 0);
}

/* Builds the record of member i under "k" in partition 9 with tag. */
static void rec_of(const lm *w, int i, uint8_t tag, uint8_t *k, size_t *kl,
                   uint8_t **v, size_t *vl)
{
    uint8_t pfx[PK_KEYENC_SHORT];
    size_t plen, n = w->len[i];

    assert_int_equal(pk_keyenc_prefix(9, "k", 1, pfx, sizeof(pfx), &plen), 0);
    assert_int_equal(pk__sub_key(pfx, plen, tag, w->mem[i], n, k, kl), 0);
    *v = malloc(n + 16);
    switch (tag) {
    case PK_TAG_HFIELD:
        pk_be32_put(*v, (uint32_t)n);
        memcpy(*v + 4, w->mem[i], n);
        memcpy(*v + 4 + n, "val", 3);
        *vl = 4 + n + 3;
        break;
    case PK_TAG_ZMEMBER:
        pk_be64_put(*v, 0x3FF0000000000000ull);
        memcpy(*v + 8, w->mem[i], n);
        *vl = 8 + n;
        break;
    default:
        memcpy(*v, w->mem[i], n);
        *vl = n;
    }
}

static void test_rec_check(void **state)
{
    lm *w = *state;
    static const uint8_t tags[3] = {PK_TAG_HFIELD, PK_TAG_ZMEMBER,
                                    PK_TAG_SMEMBER};
    uint8_t k[PK_KEYENC_MAX], *v;
    size_t kl, vl;

    for (int j = 0; j < 3; j++) {
        rec_of(w, 3, tags[j], k, &kl, &v, &vl);
        assert_int_equal(pk__rec_check(k, kl, v, vl), 0);
        /* A member byte past the head changed: digest mismatch. */
        v[vl - 5] ^= 1;
        assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
        v[vl - 5] ^= 1;
        /* The digest in the sub-key changed. */
        k[kl - 1] ^= 1;
        assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
        k[kl - 1] ^= 1;
        /* A value cut short (member or length no longer fits). */
        assert_int_equal(
            pk__rec_check(k, kl, v, tags[j] == PK_TAG_HFIELD ? 3 : 7),
            PK_ECORRUPT);
        /* A long sub-key whose value is a short member's (empty). */
        if (tags[j] == PK_TAG_SMEMBER) {
            assert_int_equal(pk__rec_check(k, kl, v, 0), PK_ECORRUPT);
        }
        /* A sub-key longer than the long form. */
        k[kl] = 'x';
        assert_int_equal(pk__rec_check(k, kl + 1, v, vl), PK_ECORRUPT);
        free(v);
    }
    /* A short member's record with a value it must not have. */
    rec_of(w, 7, PK_TAG_SMEMBER, k, &kl, &v, &vl);
    assert_int_equal(pk__rec_check(k, kl, v, 0), 0);
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    free(v);
    /* ZSCORE: score8 | sub-key, value the member. */
    uint8_t pfx[PK_KEYENC_SHORT], zk[PK_KEYENC_MAX];
    size_t plen;
    int n;
    assert_int_equal(pk_keyenc_prefix(9, "k", 1, pfx, sizeof(pfx), &plen), 0);
    memcpy(zk, pfx, plen);
    zk[plen] = PK_TAG_ZSCORE;
    pk_be64_put(zk + plen + 1, pk_keyenc_score(1));
    n = pk_keyenc_member(w->mem[4], w->len[4], zk + plen + 9);
    assert_int_equal(n, PK_KEYENC_SUB);
    assert_int_equal(
        pk__rec_check(zk, plen + 9 + (size_t)n, w->mem[4], w->len[4]), 0);
    assert_int_equal(
        pk__rec_check(zk, plen + 9 + (size_t)n, w->mem[3], w->len[3]),
        PK_ECORRUPT);
}

/* A tampered long record from the log is refused, nothing written. */
static void test_log_apply_rejects(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->b->s);
    uint8_t k[PK_KEYENC_MAX], *v, *rec;
    size_t kl, vl, n = 0;
    pk_part_stats st;

    rec_of(w, 3, PK_TAG_SMEMBER, k, &kl, &v, &vl);
    rec = malloc(3 + kl + 4 + vl);
    v[vl - 3] ^= 1;
    rec[n++] = PK__LOG_PUT;
    rec[n++] = (uint8_t)((kl - 4) >> 8);
    rec[n++] = (uint8_t)(kl - 4);
    memcpy(rec + n, k + 4, kl - 4);
    n += kl - 4;
    pk_be32_put(rec + n, (uint32_t)vl);
    memcpy(rec + n + 4, v, vl);
    n += 4 + vl;
    assert_int_equal(pk_store_log_apply(t, 9, 1, rec, n), PK_ECORRUPT);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_store_part_stats(t, 9, &st), 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.log_last, 0);
    assert_int_equal(pk_txn_commit(t), 0);
    free(rec);
    free(v);
}

/*
 * A forged digest collision: field A's record carrying field B.  Reads
 * of A see no field, writes of A are refused (PK_ERANGE) before anything
 * is written; B is not A's either.
 */
static void test_collision(void **state)
{
    lm *w = *state;
    pk_txn *t = wtxn(w->a->s);
    uint8_t k[PK_KEYENC_MAX], *v;
    size_t kl, vl;
    pk_slice val = {"x", 1}, got;
    uint64_t n;
    int ex;

    hset_all(w, t, 9, "k");
    rec_of(w, 3, PK_TAG_HFIELD, k, &kl, &v, &vl);
    /* Field 5 shares 3's head; put it under 3's digest. */
    memcpy(v + 4, w->mem[5], w->len[5]);
    assert_int_equal(pk__op_begin(t, 9, PK__OP_NOLOG), 0);
    assert_int_equal(pk__rec_put(t, k, kl, v, vl), 0);
    assert_int_equal(pk__op_end(t, 0), 0);
    assert_int_equal(pk_hmap_get(t, 9, S("k"), w->mem[3], 1000, NOW, &got),
                     PK_ENOTFOUND);
    assert_int_equal(pk_hmap_exists(t, 9, S("k"), w->mem[3], 1000, NOW, &ex),
                     0);
    assert_int_equal(ex, 0);
    pk_slice f2[2] = {w->sl[0], w->sl[3]}, v2[2] = {val, val};
    assert_int_equal(pk_hmap_set(t, 9, S("k"), 2, f2, v2, NOW, &n), PK_ERANGE);
    assert_int_equal(pk_hmap_get(t, 9, S("k"), w->mem[0], w->len[0], NOW, &got),
                     0);
    assert_int_equal(((const uint8_t *)got.ptr)[0], 0);
    assert_int_equal(pk_hmap_del(t, 9, S("k"), 1, &w->sl[3], NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_txn_error(t), 0);
    free(v);
    pk_txn_abort(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_zset),
        cmocka_unit_test(test_lex),
        cmocka_unit_test(test_scan_match),
        cmocka_unit_test(test_keyops),
        cmocka_unit_test(test_restore_tampered),
        cmocka_unit_test(test_replication),
        cmocka_unit_test(test_rec_check),
        cmocka_unit_test(test_log_apply_rejects),
        cmocka_unit_test(test_collision),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}

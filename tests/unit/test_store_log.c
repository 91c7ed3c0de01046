/*
 * The change log and partition snapshots: applying node A's logs to an
 * empty node B reproduces A exactly (compared by snapshot bytes and
 * counters), export -> import round trips, truncated and bit-flipped
 * streams are rejected, log sequence rules and trimming, and dropping a
 * partition leaves the others intact.  Stats, which reach the stats DB
 * only at checkpoints, are audited against the data after aborts,
 * reopens, checkpoints and retention, from read and write transactions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <lmdb.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyenc.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define NPARTS 6

/* A mixed workload over NPARTS partitions, several transactions. */
static void workload(pk_store *s, int ops)
{
    char k[16], f[16];
    pk_txn *t = NULL;

    for (int i = 0; i < ops; i++) {
        uint32_t part = trnd() % NPARTS;
        int kn = (int)(trnd() % 40), rc, done;
        uint64_t n;
        int64_t out;
        double sc = (double)(trnd() % 100) - 50;
        pk_zadd_result zr;

        if (t == NULL) {
            t = wtxn(s);
            assert_non_null(t);
        }
        snprintf(k, sizeof(k), "%c%d", "shz"[kn % 3], kn);
        snprintf(f, sizeof(f), "f%u", trnd() % 8);
        pk_slice fs = {f, strlen(f)}, ks = {k, strlen(k)};
        switch (trnd() % 10) {
        case 0:
        case 1:
            rc = pk_str_set(t, part, S(k), S(f), NULL, NOW, &done, NULL);
            break;
        case 2:
            rc = pk_str_incrby(t, part, S(k), 3, NOW, &out);
            break;
        case 3:
            rc = pk_hmap_set(t, part, S(k), 1, &fs, &ks, NOW, &n);
            break;
        case 4:
            rc = pk_hmap_del(t, part, S(k), 1, &fs, NOW, &n);
            break;
        case 5:
            rc = pk_zset_add(t, part, S(k), 0, 1, &sc, &fs, NOW, &zr);
            break;
        case 6:
            rc = pk_zset_rem(t, part, S(k), 1, &fs, NOW, &n);
            break;
        case 7:
            rc = pk_key_expire(t, part, S(k), NOW + 1 + trnd() % 1000, 0, NOW,
                               &done);
            break;
        case 8:
            rc = pk_key_del(t, part, S(k), NOW, &done);
            break;
        default:
            rc = pk_str_append(t, part, S(k), S("+"), NOW, &n);
            break;
        }
        assert_true(rc == 0 || rc == PK_STORE_WRONGTYPE ||
                    rc == PK_STORE_NOTINT);
        if (trnd() % 50 == 0) {
            assert_int_equal(pk_txn_commit(t), 0);
            t = NULL;
        }
    }
    if (t != NULL) {
        assert_int_equal(pk_txn_commit(t), 0);
    }
}

typedef tbuf buf;

static buf export_part(pk_store *s, uint32_t part)
{
    buf b = {NULL, 0};
    pk_txn *t = rtxn(s);

    assert_int_equal(pk_store_part_export(t, part, tbuf_cb, &b), 0);
    pk_txn_abort(t);
    return b;
}

/* Asserts that partition part is byte-identical on both stores. */
static void expect_same(pk_store *a, pk_store *b, uint32_t part)
{
    assert_int_equal(tstore_same(a, b, part), 0);
}

/* Ships every log record of part from a with seq >= from to b. */
static int ship(pk_store *a, pk_store *b, uint32_t part, uint64_t from)
{
    pk_txn *ta = rtxn(a);
    tship ac = {wtxn(b), part, 0, 0};

    assert_int_equal(pk_store_log_read(ta, part, from, tship_cb, &ac), 0);
    assert_int_equal(pk_txn_commit(ac.t), 0);
    pk_txn_abort(ta);
    return ac.n;
}

static void test_log_apply_reproduces(void **state)
{
    two *w = *state;
    uint64_t na, nb;
    size_t expired;
    pk_txn *t;

    workload(w->a->s, 3000);
    /* Active expiry and FLUSHALL are logged too. */
    t = wtxn(w->a->s);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 500, 100000, &expired), 0);
    assert_true(expired > 0);
    assert_int_equal(pk_txn_commit(t), 0);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_true(ship(w->a->s, w->b->s, p, 1) > 0);
        expect_same(w->a->s, w->b->s, p);
    }
    t = rtxn(w->b->s);
    assert_int_equal(pk_store_dbsize(t, &nb), 0);
    pk_txn_abort(t);
    t = rtxn(w->a->s);
    assert_int_equal(pk_store_dbsize(t, &na), 0);
    pk_txn_abort(t);
    assert_int_equal(na, nb);
    /* The expiry index came along: B expires what A would. */
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 2000, 100000, &expired), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(w->a->s);
    size_t ea;
    assert_int_equal(pk_store_expire_cycle(t, NOW + 2000, 100000, &ea), 0);
    assert_int_equal(ea, expired);
    assert_int_equal(pk_store_flushall(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    /* B's own expiry records are not in A's log order; drop and re-ship
     * the tail of A's log onto a fresh copy instead. */
    for (uint32_t p = 0; p < NPARTS; p++) {
        buf snap;
        int done;
        t = wtxn(w->b->s);
        assert_int_equal(pk_store_part_drop(t, p, 0, &done), 0);
        assert_int_equal(done, 1);
        assert_int_equal(pk_txn_commit(t), 0);
        snap = export_part(w->a->s, p);
        t = wtxn(w->b->s);
        assert_int_equal(pk_store_part_import(t, p, snap.p, snap.len), 0);
        assert_int_equal(pk_txn_commit(t), 0);
        free(snap.p);
        expect_same(w->a->s, w->b->s, p);
    }
    t = rtxn(w->b->s);
    assert_int_equal(pk_store_dbsize(t, &nb), 0);
    assert_int_equal(nb, 0);
    pk_txn_abort(t);
}

static void test_log_seq_rules(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s);
    uint64_t last;
    int done;
    static const uint8_t junk[] = {9, 0, 1, 'x'};
    static const uint8_t badkey[] = {2, 0, 2, 'a', 'b'};
    static const uint8_t shortput[] = {1, 0, 0, 0, 0, 0, 9, 'x'};
    assert_int_equal(pk_str_set(t, 4, S("a"), S("1"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_set(t, 4, S("b"), S("2"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_set(t, 4, S("c"), S("3"), NULL, NOW, &done, NULL),
                     0);
    /* A command that changes nothing logs nothing. */
    assert_int_equal(pk_key_del(t, 4, S("zz"), NOW, &done), 0);
    assert_int_equal(pk_store_log_last(t, 4, &last), 0);
    assert_int_equal(last, 3);
    assert_int_equal(pk_txn_commit(t), 0);

    /* Applying out of order is refused without failing the txn. */
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_apply(t, 4, 2, junk, sizeof(junk)),
                     PK_ECORRUPT);
    assert_int_equal(pk_store_log_apply(t, 4, 1, "", 0), PK_ECORRUPT);
    assert_int_equal(pk_store_log_apply(t, 4, 1, badkey, sizeof(badkey)),
                     PK_ECORRUPT);
    assert_int_equal(pk_store_log_apply(t, 4, 1, shortput, sizeof(shortput)),
                     PK_ECORRUPT);
    assert_int_equal(pk_txn_error(t), 0);
    pk_txn_abort(t);
    assert_int_equal(ship(w->a->s, w->b->s, 4, 1), 3);
    pk_txn *ta = rtxn(w->a->s);
    t = wtxn(w->b->s);
    tship ac = {t, 4, 0, 0};
    assert_int_equal(pk_store_log_read(ta, 4, 2, tship_cb, &ac), PK_EEXIST);
    assert_int_equal(pk_txn_error(t), 0);
    pk_txn_abort(t);
    pk_txn_abort(ta);
    /* A gap. */
    t = wtxn(w->a->s);
    assert_int_equal(pk_str_set(t, 4, S("d"), S("4"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_set(t, 4, S("e"), S("5"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    ta = rtxn(w->a->s);
    t = wtxn(w->b->s);
    ac = (tship){t, 4, 0, 0};
    assert_int_equal(pk_store_log_read(ta, 4, 5, tship_cb, &ac), PK_ERANGE);
    pk_txn_abort(t);
    pk_txn_abort(ta);
    assert_int_equal(ship(w->a->s, w->b->s, 4, 4), 2);
    expect_same(w->a->s, w->b->s, 4);
}

static int count_cb(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    (void)seq;
    (void)rec;
    (void)len;
    (*(int *)ctx)++;
    return 0;
}

/* The seq of part's last record as t sees it. */
static uint64_t last_of(pk_txn *t, uint32_t part)
{
    uint64_t last;

    assert_int_equal(pk_store_log_last(t, part, &last), 0);
    return last;
}

/* A command that rewrites the key of the record its transaction wrote last
 * in the partition takes that record's place; anything else adds one. */
static void test_log_coalesce(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_slice f = {"f", 1}, v = {"v", 1};
    uint64_t n;
    int64_t out;
    int done, count = 0;
    uint64_t seq;

    assert_int_equal(pk_store_log_keepable(t, 2, &seq), 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(pk_str_incrby(t, 2, S("hot"), 1, NOW, &out), 0);
    assert_int_equal(last_of(t, 2), 1);
    assert_int_equal(pk_store_log_keepable(t, 2, &seq), PK_EBUSY);
    assert_int_equal(pk_store_log_keepable(t, 3, &seq), 0);
    /* Another key, then the first again: three records. */
    assert_int_equal(pk_str_set(t, 2, S("k"), S("x"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_incrby(t, 2, S("hot"), 1, NOW, &out), 0);
    assert_int_equal(pk_str_incrby(t, 2, S("hot"), 1, NOW, &out), 0);
    assert_int_equal(last_of(t, 2), 3);
    /* A key's drop (META and members' prefix) and a hash's record (META
     * and field) are never replaced, nor replace. */
    pk_slice w2 = {"w", 1};
    assert_int_equal(pk_key_del(t, 2, S("hot"), NOW, &done), 0);
    assert_int_equal(last_of(t, 2), 4);
    assert_int_equal(pk_hmap_set(t, 2, S("h"), 1, &f, &v, NOW, &n), 0);
    assert_int_equal(pk_hmap_set(t, 2, S("h"), 1, &f, &w2, NOW, &n), 0);
    assert_int_equal(last_of(t, 2), 6);
    assert_int_equal(pk_str_incrby(t, 2, S("hot"), 7, NOW, &out), 0);
    assert_int_equal(last_of(t, 2), 7);
    assert_int_equal(pk_txn_commit(t), 0);
    /* Committed records stay: the next transaction's write adds one. */
    t = wtxn(w->a->s);
    assert_int_equal(pk_store_log_keepable(t, 2, &seq), 0);
    assert_int_equal(pk_str_incrby(t, 2, S("hot"), 1, NOW, &out), 0);
    assert_int_equal(out, 8);
    assert_int_equal(last_of(t, 2), 8);
    assert_int_equal(pk_txn_commit(t), 0);
    t = rtxn(w->a->s);
    assert_int_equal(pk_store_log_read(t, 2, 1, count_cb, &count), 0);
    assert_int_equal(count, 8);
    pk_txn_abort(t);
    /* The records alone give the same data, and the stats they carry. */
    assert_int_equal(ship(w->a->s, w->b->s, 2, 1), 8);
    expect_same(w->a->s, w->b->s, 2);
    t = rtxn(w->b->s);
    assert_int_equal(pk_str_get(t, 2, S("hot"), NOW, &v), 0);
    assert_int_equal(v.len, 1);
    assert_memory_equal(v.ptr, "8", 1);
    pk_txn_abort(t);
}

static void test_log_trim(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_part_stats ps;
    int done, n = 0;
    char k[8];

    for (int i = 0; i < 10; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        assert_int_equal(pk_str_set(t, 2, S(k), S("v"), NULL, NOW, &done, NULL),
                         0);
    }
    assert_int_equal(pk_store_log_trim(t, 2, 4), 0);
    assert_int_equal(pk_store_part_stats(t, 2, &ps), 0);
    assert_int_equal(ps.log_first, 5);
    assert_int_equal(ps.log_last, 10);
    assert_int_equal(pk_store_log_read(t, 2, 4, count_cb, &n), PK_ERANGE);
    assert_int_equal(pk_store_log_read(t, 2, 5, count_cb, &n), 0);
    assert_int_equal(n, 6);
    /* Trimming past the end stops at the last record; seqs go on. */
    assert_int_equal(pk_store_log_trim(t, 2, 1000), 0);
    assert_int_equal(pk_store_part_stats(t, 2, &ps), 0);
    assert_int_equal(ps.log_first, 11);
    n = 0;
    assert_int_equal(pk_store_log_read(t, 2, 11, count_cb, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_str_set(t, 2, S("x"), S("v"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_store_log_read(t, 2, 11, count_cb, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_export_import_roundtrip(void **state)
{
    two *w = *state;
    buf snap;
    pk_txn *t;
    pk_part_stats ps;

    workload(w->a->s, 2000);
    for (uint32_t p = 0; p < NPARTS; p++) {
        snap = export_part(w->a->s, p);
        t = wtxn(w->b->s);
        assert_int_equal(pk_store_part_import(t, p, snap.p, snap.len), 0);
        /* The log continues where the snapshot was taken. */
        assert_int_equal(pk_store_part_stats(t, p, &ps), 0);
        assert_int_equal(ps.log_first, ps.log_last + 1);
        assert_true(ps.log_last > 0);
        assert_int_equal(pk_txn_commit(t), 0);
        free(snap.p);
        expect_same(w->a->s, w->b->s, p);
    }
    /* Importing into a partition that holds data is refused. */
    snap = export_part(w->a->s, 0);
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_part_import(t, 0, snap.p, snap.len), PK_EEXIST);
    assert_int_equal(pk_txn_error(t), 0);
    /* A stream for another partition is refused. */
    assert_int_equal(pk_store_part_import(t, 77, snap.p, snap.len),
                     PK_ECORRUPT);
    pk_txn_abort(t);
    free(snap.p);
    /* More writes on A follow through the log. */
    uint64_t last[NPARTS];
    t = rtxn(w->a->s);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_int_equal(pk_store_log_last(t, p, &last[p]), 0);
    }
    pk_txn_abort(t);
    workload(w->a->s, 500);
    for (uint32_t p = 0; p < NPARTS; p++) {
        ship(w->a->s, w->b->s, p, last[p] + 1);
        expect_same(w->a->s, w->b->s, p);
    }
}

static void test_export_import_chunked(void **state)
{
    two *w = *state;
    pk_txn *ta, *tb = NULL;
    pk_export *e;
    pk_import *im;
    uint8_t chunk[64];
    size_t n, got = 0;
    char k[16];
    static char big[100000];
    int done;

    /* Values larger than any chunk, and an empty one. */
    ta = wtxn(w->a->s);
    memset(big, 'b', sizeof(big));
    for (int i = 0; i < 50; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        assert_int_equal(pk_str_set(ta, 3, S(k), big, (size_t)i * 2000, NULL,
                                    NOW, &done, NULL),
                         0);
    }
    assert_int_equal(pk_txn_commit(ta), 0);
    ta = rtxn(w->a->s);
    assert_int_equal(pk_export_new(ta, 3, &e), 0);
    assert_int_equal(pk_import_new(3, &im), 0);
    for (;;) {
        size_t cap = 1 + trnd() % sizeof(chunk);
        assert_int_equal(pk_export_read(e, chunk, cap, &n), 0);
        if (n == 0) {
            break;
        }
        got += n;
        if (tb == NULL) {
            tb = wtxn(w->b->s);
        }
        assert_int_equal(pk_import_feed(im, tb, chunk, n), 0);
        /* Commit now and then: an import spans transactions. */
        if (trnd() % 500 == 0) {
            assert_int_equal(pk_txn_commit(tb), 0);
            tb = NULL;
        }
    }
    if (tb == NULL) {
        tb = wtxn(w->b->s);
    }
    assert_int_equal(pk_import_finish(im, tb), 0);
    assert_int_equal(pk_txn_commit(tb), 0);
    pk_import_free(im);
    pk_export_free(e);
    pk_txn_abort(ta);
    assert_true(got > 49 * 2000 * 25);
    expect_same(w->a->s, w->b->s, 3);
    /* An empty partition exports as header + end. */
    buf empty = export_part(w->a->s, 9);
    assert_int_equal(empty.len, 20 + 13);
    free(empty.p);
}

/* Imports b into partition part of s in one txn; returns the result. */
static int try_import(pk_store *s, uint32_t part, const uint8_t *p, size_t n)
{
    pk_txn *t = wtxn(s);
    int rc = pk_store_part_import(t, part, p, n);

    if (rc == 0) {
        rc = pk_txn_commit(t);
    } else {
        assert_int_not_equal(pk_txn_error(t), 0);
        pk_txn_abort(t);
    }
    return rc;
}

static void test_import_rejects_corruption(void **state)
{
    two *w = *state;
    buf snap;
    pk_txn *t;
    uint64_t n;
    uint8_t *copy;

    workload(w->a->s, 300);
    snap = export_part(w->a->s, 1);
    assert_true(snap.len > 100);
    copy = malloc(snap.len);
    assert_non_null(copy);
    /* Every truncation. */
    for (size_t len = 0; len < snap.len; len++) {
        assert_int_equal(try_import(w->b->s, 1, snap.p, len), PK_ECORRUPT);
    }
    /* A flipped bit anywhere (one per byte, rotating). */
    for (size_t i = 0; i < snap.len; i++) {
        memcpy(copy, snap.p, snap.len);
        copy[i] ^= (uint8_t)(1u << (i % 8));
        assert_int_equal(try_import(w->b->s, 1, copy, snap.len), PK_ECORRUPT);
    }
    /* Trailing garbage. */
    uint8_t *longer = malloc(snap.len + 1);
    memcpy(longer, snap.p, snap.len);
    longer[snap.len] = 0;
    assert_int_equal(try_import(w->b->s, 1, longer, snap.len + 1), PK_ECORRUPT);
    /* Random garbage of all sizes never crashes. */
    for (int i = 0; i < 300; i++) {
        size_t len = trnd() % 200;
        for (size_t j = 0; j < len; j++) {
            copy[j] = (uint8_t)trnd();
        }
        if (len >= 4) {
            memcpy(copy, "PKSN", 4);
        }
        assert_int_equal(try_import(w->b->s, 1, copy, len), PK_ECORRUPT);
    }
    /* Nothing leaked into B; the pristine stream still imports. */
    t = rtxn(w->b->s);
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, 0);
    pk_txn_abort(t);
    assert_int_equal(try_import(w->b->s, 1, snap.p, snap.len), 0);
    expect_same(w->a->s, w->b->s, 1);
    free(longer);
    free(copy);
    free(snap.p);
}

static void test_drop_partition(void **state)
{
    two *w = *state;
    buf before[NPARTS];
    pk_part_stats ps;
    pk_txn *t;
    size_t expired;
    int done, calls = 0;
    pk_slice v;

    workload(w->a->s, 2000);
    for (uint32_t p = 0; p < NPARTS; p++) {
        before[p] = export_part(w->a->s, p);
    }
    /* A bounded drop over several transactions. */
    do {
        t = wtxn(w->a->s);
        assert_int_equal(pk_store_part_drop(t, 2, 25, &done), 0);
        assert_int_equal(pk_txn_commit(t), 0);
        calls++;
    } while (!done);
    assert_true(calls > 2);
    t = wtxn(w->a->s);
    assert_int_equal(pk_store_part_stats(t, 2, &ps), 0);
    assert_int_equal(ps.keys, 0);
    assert_int_equal(ps.bytes, 0);
    assert_int_equal(ps.log_last, 0);
    assert_int_equal(ps.writes, 0);
    assert_int_equal(pk_str_get(t, 2, S("s0"), NOW, &v), PK_ENOTFOUND);
    uint32_t part;
    for (uint64_t p = 0; pk_store_part_next(t, p, &part, &ps) == 0;
         p = (uint64_t)part + 1) {
        assert_int_not_equal(part, 2);
    }
    /* No expiry entry of the dropped partition is left behind. */
    assert_int_equal(pk_store_expire_cycle(t, UINT64_MAX, 1000000, &expired),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    buf empty = export_part(w->a->s, 2);
    assert_int_equal(empty.len, 33);
    free(empty.p);
    /* The others were untouched until the expiry cycle ran: compare with
     * B built from the earlier snapshots. */
    for (uint32_t p = 0; p < NPARTS; p++) {
        if (p != 2) {
            assert_int_equal(try_import(w->b->s, p, before[p].p, before[p].len),
                             0);
        }
        free(before[p].p);
    }
    t = wtxn(w->b->s);
    size_t eb;
    assert_int_equal(pk_store_expire_cycle(t, UINT64_MAX, 1000000, &eb), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(eb, expired);
    for (uint32_t p = 0; p < NPARTS; p++) {
        if (p != 2) {
            pk_txn *ta = rtxn(w->a->s), *tb = rtxn(w->b->s);
            pk_part_stats sa, sb;
            assert_int_equal(pk_store_part_stats(ta, p, &sa), 0);
            assert_int_equal(pk_store_part_stats(tb, p, &sb), 0);
            assert_int_equal(sa.keys, sb.keys);
            assert_int_equal(sa.bytes, sb.bytes);
            pk_txn_abort(ta);
            pk_txn_abort(tb);
        }
    }
}

/*
 * Recomputes part's keys and bytes from its snapshot and checks them, and
 * the log positions, against pk_store_part_stats as a read and a write
 * transaction see them.
 */
static void audit_part(pk_store *s, uint32_t part)
{
    buf b = export_part(s, part);
    uint64_t keys = 0, bytes = 0;
    uint8_t kb[PK_KEYENC_MAX];
    pk_part_stats sr, sw;
    pk_keyparts kp;
    size_t off = 20;
    pk_txn *t;

    while (b.p[off] == 0x01) {
        size_t klen = (size_t)b.p[off + 1] << 8 | b.p[off + 2];
        size_t vlen = pk_be32_get(b.p + off + 3 + klen);
        pk_be32_put(kb, part);
        memcpy(kb + 4, b.p + off + 3, klen);
        assert_int_equal(pk_keyenc_parse(kb, 4 + klen, &kp), 0);
        keys += kp.tag == PK_TAG_META;
        bytes += 4 + klen + vlen;
        off += 3 + klen + 4 + vlen;
    }
    free(b.p);
    t = rtxn(s);
    assert_int_equal(pk_store_part_stats(t, part, &sr), 0);
    pk_txn_abort(t);
    t = wtxn(s);
    assert_int_equal(pk_store_part_stats(t, part, &sw), 0);
    pk_txn_abort(t);
    assert_int_equal(sr.keys, keys);
    assert_int_equal(sr.bytes, bytes);
    assert_int_equal(sw.keys, keys);
    assert_int_equal(sw.bytes, bytes);
    assert_int_equal(sr.log_first, sw.log_first);
    assert_int_equal(sr.log_last, sw.log_last);
}

/* Reads part's whole log: it must hold exactly log_first..log_last. */
static void audit_log(pk_store *s, uint32_t part)
{
    pk_txn *t = rtxn(s);
    pk_part_stats ps;
    int n = 0;

    assert_int_equal(pk_store_part_stats(t, part, &ps), 0);
    assert_int_equal(pk_store_log_read(t, part, ps.log_first, count_cb, &n), 0);
    assert_int_equal((uint64_t)n, ps.log_last + 1 - ps.log_first);
    if (ps.log_first > 1) {
        assert_int_equal(
            pk_store_log_read(t, part, ps.log_first - 1, count_cb, &n),
            PK_ERANGE);
    }
    pk_txn_abort(t);
}

static void audit_all(pk_store *s)
{
    uint64_t n, sum = 0;
    pk_part_stats ps;
    uint32_t part;
    pk_txn *t = rtxn(s);

    for (uint64_t p = 0; pk_store_part_next(t, p, &part, &ps) == 0;
         p = (uint64_t)part + 1) {
        sum += ps.keys;
        audit_part(s, part);
        audit_log(s, part);
    }
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, sum);
    pk_txn_abort(t);
}

/* Sets key k in every partition below nparts. */
static void set_all(pk_txn *t, const char *k, uint32_t nparts)
{
    int done;

    for (uint32_t p = 0; p < nparts; p++) {
        assert_int_equal(pk_str_set(t, p, S(k), S("v"), NULL, NOW, &done, NULL),
                         0);
    }
}

static void test_stats_abort_reopen(void **state)
{
    two *w = *state;
    pk_store *a;
    uint64_t n;
    pk_txn *t;

    workload(w->a->s, 3000);
    audit_all(w->a->s);
    /* Aborted changes leave no trace in the stats... */
    t = wtxn(w->a->s);
    set_all(t, "gone", NPARTS + 3);
    pk_txn_abort(t);
    audit_all(w->a->s);
    /* ...also when a stats walk wrote them to the stats DB first. */
    t = wtxn(w->a->s);
    set_all(t, "gone", NPARTS + 3);
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    set_all(t, "gone2", NPARTS + 5);
    pk_txn_abort(t);
    audit_all(w->a->s);
    t = rtxn(w->a->s);
    uint32_t part;
    pk_part_stats ps;
    assert_int_equal(pk_store_part_next(t, NPARTS, &part, &ps), PK_ENOTFOUND);
    pk_txn_abort(t);
    /* What the journal carries since the last checkpoint survives a
     * reopen (a crash looks the same to the stats). */
    workload(w->a->s, 500);
    assert_int_equal(tstore_reopen(w->a), 0);
    a = w->a->s;
    audit_all(a);
    workload(a, 500);
    audit_all(a);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_true(ship(a, w->b->s, p, 1) > 0);
        expect_same(a, w->b->s, p);
    }
}

static void test_stats_snapshot(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s), *r1, *r2;
    pk_part_stats ps;
    uint32_t part;
    uint64_t n;
    int done;

    assert_int_equal(pk_str_set(t, 1, S("a"), S("1"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    r1 = rtxn(w->a->s);
    t = wtxn(w->a->s);
    assert_int_equal(pk_str_set(t, 1, S("b"), S("2"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_set(t, 40, S("c"), S("3"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    r2 = rtxn(w->a->s);
    /* r1 sees the store as it was when it began. */
    assert_int_equal(pk_store_part_stats(r1, 1, &ps), 0);
    assert_int_equal(ps.keys, 1);
    assert_int_equal(ps.log_last, 1);
    assert_int_equal(pk_store_part_next(r1, 2, &part, &ps), PK_ENOTFOUND);
    assert_int_equal(pk_store_dbsize(r1, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_store_part_stats(r2, 1, &ps), 0);
    assert_int_equal(ps.keys, 2);
    assert_int_equal(ps.log_last, 2);
    assert_int_equal(pk_store_part_next(r2, 2, &part, &ps), 0);
    assert_int_equal(part, 40);
    assert_int_equal(ps.keys, 1);
    assert_int_equal(pk_store_dbsize(r2, &n), 0);
    assert_int_equal(n, 3);
    pk_txn_abort(r1);
    pk_txn_abort(r2);
}

/* Writes n records, round robin over NPARTS partitions, 300 a commit. */
static void churn(pk_store *s, int n)
{
    pk_txn *t = NULL;
    char k[16];
    int done;

    for (int i = 0; i < n; i++) {
        if (t == NULL) {
            t = wtxn(s);
        }
        snprintf(k, sizeof(k), "c%d", i % 97);
        assert_int_equal(pk_str_set(t, (uint32_t)i % NPARTS, S(k), S("val"),
                                    NULL, NOW, &done, NULL),
                         0);
        if (i % 300 == 299) {
            assert_int_equal(pk_txn_commit(t), 0);
            t = NULL;
        }
    }
    if (t != NULL) {
        assert_int_equal(pk_txn_commit(t), 0);
    }
}

static void test_checkpoints_and_retention(void **state)
{
    two *w = *state;
    pk_store *a = w->a->s;
    pk_part_stats ps[NPARTS];
    uint64_t kept = 0, seq[NPARTS];
    pk_txn *t;

    /* Many checkpoints; with no bound the logs are whole. */
    pk_store_log_retain(a, PK_STORE_LOG_KEEP_ALL);
    churn(a, 30000);
    audit_all(a);
    t = rtxn(a);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_int_equal(pk_store_part_stats(t, p, &ps[p]), 0);
        assert_int_equal(ps[p].log_first, 1);
    }
    pk_txn_abort(t);
    /* A budget trims the journal's head at the next checkpoints; a hold
     * keeps partition 0 -- and with it everything after its record. */
    pk_store_log_retain(a, 64 << 10);
    assert_int_equal(pk_store_log_hold(a, 0, ps[0].log_last - 10), 0);
    churn(a, 20000);
    audit_all(a);
    t = rtxn(a);
    assert_int_equal(pk_store_part_stats(t, 0, &ps[0]), 0);
    assert_true(ps[0].log_first > 1);
    assert_true(ps[0].log_first <= ps[0].log_last - 10 - 20000 / NPARTS);
    pk_txn_abort(t);
    /* Released, the journal shrinks to the budget at the next checkpoint
     * (a stats walk in a write transaction is one). */
    assert_int_equal(pk_store_log_hold(a, 0, 0), 0);
    churn(a, 10000);
    t = wtxn(a);
    assert_int_equal(pk_store_dbsize(t, &kept), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    kept = 0;
    audit_all(a);
    t = rtxn(a);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_int_equal(pk_store_part_stats(t, p, &ps[p]), 0);
        assert_true(ps[p].log_first > 1);
        kept += ps[p].log_last + 1 - ps[p].log_first;
        seq[p] = ps[p].log_last;
    }
    pk_txn_abort(t);
    assert_true(kept < 3000); /* ~80 bytes a record */
    /* A consumer restarts from a snapshot and follows the log. */
    for (uint32_t p = 0; p < NPARTS; p++) {
        buf snap = export_part(a, p);
        assert_int_equal(try_import(w->b->s, p, snap.p, snap.len), 0);
        free(snap.p);
    }
    churn(a, 1000);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_true(ship(a, w->b->s, p, seq[p] + 1) > 0);
        expect_same(a, w->b->s, p);
    }
    assert_int_equal(tstore_reopen(w->a), 0);
    audit_all(w->a->s);
}

/* Records in the journal of the closed store in dir, read with LMDB. */
static size_t journal_records(const char *dir)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_stat ms;

    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 5), 0);
    assert_int_equal(mdb_env_open(env, dir, MDB_RDONLY, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "log", 0, &dbi), 0);
    assert_int_equal(mdb_stat(txn, dbi, &ms), 0);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return ms.ms_entries;
}

static void test_trimmed_records_go(void **state)
{
    two *w = *state;
    pk_part_stats ps;
    pk_txn *t;

    pk_store_log_retain(w->a->s, PK_STORE_LOG_KEEP_ALL);
    churn(w->a->s, 3000);
    /* Trimmed: unreadable at once, deleted by the (forced) checkpoint. */
    t = wtxn(w->a->s);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_int_equal(pk_store_log_trim(t, p, UINT64_MAX), 0);
    }
    assert_int_equal(pk_txn_commit(t), 0);
    pk_store_close(w->a->s);
    w->a->s = NULL;
    assert_int_equal(journal_records(w->a->dir), 0);
    assert_int_equal(tstore_reopen(w->a), 0);
    audit_all(w->a->s);
    t = rtxn(w->a->s);
    for (uint32_t p = 0; p < NPARTS; p++) {
        assert_int_equal(pk_store_part_stats(t, p, &ps), 0);
        assert_int_equal(ps.log_first, ps.log_last + 1);
        assert_int_equal(ps.log_last, 3000 / NPARTS);
    }
    pk_txn_abort(t);
    /* The sequence goes on. */
    churn(w->a->s, 600);
    audit_all(w->a->s);
    for (uint32_t p = 0; p < NPARTS; p++) {
        buf snap = export_part(w->a->s, p);
        assert_int_equal(try_import(w->b->s, p, snap.p, snap.len), 0);
        free(snap.p);
        expect_same(w->a->s, w->b->s, p);
    }
}

/* Gathers records (seq, length, bytes) into a buffer, max at a time. */
typedef struct gather {
    tbuf b;
    uint64_t next; /* the seq expected next */
    int n, max;
} gather;

static int gather_cb(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    gather *g = ctx;
    uint8_t hdr[16];

    assert_int_equal(seq, g->next);
    g->next++;
    pk_be64_put(hdr, seq);
    pk_be64_put(hdr + 8, len);
    assert_int_equal(tbuf_cb(&g->b, hdr, sizeof(hdr)), 0);
    assert_int_equal(tbuf_cb(&g->b, rec, len), 0);
    return ++g->n == g->max ? 1 : 0;
}

/* part's records from seq from on, read max at a time (0: at once). */
static tbuf read_all(pk_store *s, uint32_t part, uint64_t from, int max)
{
    gather g = {{NULL, 0}, from, 0, max};
    int rc;

    do {
        pk_txn *t = rtxn(s);
        g.n = 0;
        rc = pk_store_log_read(t, part, g.next, gather_cb, &g);
        pk_txn_abort(t);
        assert_true(rc == 0 || rc == 1);
    } while (rc == 1);
    return g.b;
}

static void set_n(pk_txn *t, uint32_t part, int n, const char *tag)
{
    char k[16], v[24];
    int done;

    for (int i = 0; i < n; i++) {
        snprintf(k, sizeof(k), "k%d", i % 37);
        snprintf(v, sizeof(v), "%s%d", tag, i);
        assert_int_equal(
            pk_str_set(t, part, S(k), S(v), NULL, NOW, &done, NULL), 0);
    }
}

/* A reader far behind reads in batches (the walk cache of
 * pk_store_journal.c); positions it cached that go stale -- an aborted
 * transaction's, a dropped partition's -- are not trusted. */
static void test_log_read_in_batches(void **state)
{
    two *w = *state;
    pk_store *s = w->a->s;
    uint64_t last;
    tbuf x, y;
    pk_txn *t;
    int done;

    for (int i = 0; i < 50; i++) {
        t = wtxn(s);
        set_n(t, 3, 100, "a");
        set_n(t, 11, 7, "o"); /* shares 3's cache entry */
        assert_int_equal(pk_txn_commit(t), 0);
    }
    x = read_all(s, 3, 1, 0);
    y = read_all(s, 3, 1, 97);
    assert_int_equal(x.len, y.len);
    assert_memory_equal(x.p, y.p, x.len);
    free(y.p);
    y = read_all(s, 11, 1, 13); /* evicts 3 */
    free(y.p);
    y = read_all(s, 3, 1, 1000);
    assert_memory_equal(x.p, y.p, x.len);
    free(x.p);
    free(y.p);
    /* Positions read inside a transaction that aborts are reused. */
    t = wtxn(s);
    assert_int_equal(pk_store_log_last(t, 3, &last), 0);
    set_n(t, 3, 300, "gone");
    gather g = {{NULL, 0}, last - 10, 0, 0};
    assert_int_equal(pk_store_log_read(t, 3, last - 10, gather_cb, &g), 0);
    free(g.b.p);
    pk_txn_abort(t);
    t = wtxn(s);
    set_n(t, 11, 50, "x");
    set_n(t, 3, 300, "kept");
    assert_int_equal(pk_txn_commit(t), 0);
    x = read_all(s, 3, last - 10, 64);
    assert_int_equal(tstore_reopen(w->a), 0); /* no cache */
    s = w->a->s;
    y = read_all(s, 3, last - 10, 0);
    assert_int_equal(x.len, y.len);
    assert_memory_equal(x.p, y.p, x.len);
    free(x.p);
    free(y.p);
    /* A dropped and refilled partition. */
    free(read_all(s, 3, 1, 500).p);
    t = wtxn(s);
    assert_int_equal(pk_store_part_drop(t, 3, 0, &done), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(s);
    set_n(t, 3, 40, "new");
    assert_int_equal(pk_store_log_last(t, 3, &last), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    x = read_all(s, 3, last - 30, 7);
    assert_int_equal(tstore_reopen(w->a), 0);
    y = read_all(w->a->s, 3, last - 30, 0);
    assert_int_equal(x.len, y.len);
    assert_memory_equal(x.p, y.p, x.len);
    free(x.p);
    free(y.p);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, two_setup, two_teardown)
    const struct CMUnitTest tests[] = {
        T(test_log_apply_reproduces),
        T(test_log_seq_rules),
        T(test_log_coalesce),
        T(test_log_trim),
        T(test_export_import_roundtrip),
        T(test_export_import_chunked),
        T(test_import_rejects_corruption),
        T(test_drop_partition),
        T(test_stats_abort_reopen),
        T(test_stats_snapshot),
        T(test_checkpoints_and_retention),
        T(test_trimmed_records_go),
        T(test_log_read_in_batches),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

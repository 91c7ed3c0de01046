/*
 * Deferred records (pk_store_log_defer / pk_store_log_settle): a store
 * that defers node A's log records and settles them later, in one go or
 * in small batches, ends byte-identical to A with the same counters; until
 * it settles, the log has the records at once, a read-only use of the
 * partition's data is refused and a write transaction settles first;
 * aborts undo deferrals and settles; a reopen settles what was left;
 * retention never drops a record that is not settled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"
#include "store/pk_str.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define NPARTS 4

/* The partitions the writes go to: 0..3, or (test_high_partitions) ids
 * that share their low 16 bits. */
static const uint32_t low_parts[NPARTS] = {0, 1, 2, 3};
static const uint32_t high_parts[NPARTS] = {3, 65539, 131075, 1048573};
static const uint32_t *parts = low_parts;
/* No deletes: their DELPREFIX entries cut a batch into short runs, and
 * long runs take the sort's other path (per-partition qsort, heads past
 * the keys' common prefix). */
static int no_deletes;

/*
 * Writes on A: strings rewritten many times (so a batch holds several
 * writes of one key), hashes, deletes (DELPREFIX entries) and a string
 * turned into a hash and back.
 */
static void writes(pk_store *s, int ops)
{
    char k[40], v[24], f[8];
    pk_txn *t = wtxn(s);
    uint64_t n;
    int done;

    assert_non_null(t);
    for (int i = 0; i < ops; i++) {
        uint32_t part = parts[trnd() % NPARTS], r = trnd() % 10;
        /* Short keys, and long ones alike in their first 16 bytes (the
         * batch's sort compares heads, then the rest); the last
         * partition's keys all share a prefix (its heads start past it). */
        snprintf(k, sizeof(k),
                 part == parts[NPARTS - 1] ? "{tag}:common-%u"
                 : trnd() % 2              ? "k%u"
                                           : "a-common-prefix-of-keys-%u",
                 trnd() % 30);
        snprintf(v, sizeof(v), "v%d-%u", i, trnd() % 1000);
        snprintf(f, sizeof(f), "f%u", trnd() % 5);
        pk_slice fs = {f, strlen(f)}, vs = {v, strlen(v)};
        int rc;
        if (r < 5) {
            rc = pk_str_set(t, part, S(k), S(v), NULL, NOW, &done, NULL);
        } else if (r < 8 || no_deletes) {
            rc = pk_hmap_set(t, part, S(k), 1, &fs, &vs, NOW, &n);
        } else {
            rc = pk_key_del(t, part, S(k), NOW, &done);
        }
        assert_true(rc == 0 || rc == PK_STORE_WRONGTYPE);
        if (trnd() % 40 == 0) {
            assert_int_equal(pk_txn_commit(t), 0);
            assert_non_null(t = wtxn(s));
        }
    }
    assert_int_equal(pk_txn_commit(t), 0);
}

/* Defers A's records of every partition from seq from on to B. */
static int ship(pk_store *a, pk_store *b, uint64_t from)
{
    pk_txn *ta = rtxn(a);
    tship dc = {wtxn(b), 0, 0, 1};

    for (int i = 0; i < NPARTS; i++) {
        uint64_t last = 0;
        dc.part = parts[i];
        pk_txn *tb = rtxn(b);
        assert_int_equal(pk_store_log_last(tb, dc.part, &last), 0);
        pk_txn_abort(tb);
        assert_int_equal(pk_store_log_read(ta, dc.part,
                                           from > last ? from : last + 1,
                                           tship_cb, &dc),
                         0);
    }
    assert_int_equal(pk_txn_commit(dc.t), 0);
    pk_txn_abort(ta);
    return dc.n;
}

typedef tbuf buf;

static int export_rc(pk_store *s, uint32_t part, buf *b)
{
    pk_txn *t = rtxn(s);
    int rc;

    b->p = NULL;
    b->len = 0;
    rc = pk_store_part_export(t, part, tbuf_cb, b);
    pk_txn_abort(t);
    return rc;
}

/* Every partition byte-identical on both stores, with the same stats. */
static void expect_same(pk_store *a, pk_store *b)
{
    for (int i = 0; i < NPARTS; i++) {
        assert_int_equal(tstore_same(a, b, parts[i]), 0);
    }
}

static uint64_t unsettled(pk_store *s)
{
    pk_txn *t = rtxn(s);
    uint64_t n = pk_store_log_unsettled(t);

    pk_txn_abort(t);
    return n;
}

/* Settles everything, slice changes per transaction (0: at once). */
static void settle_all(pk_store *s, size_t slice)
{
    uint64_t before = unsettled(s), got = 0;

    for (int i = 0; unsettled(s) > 0; i++) {
        pk_txn *t = wtxn(s);
        size_t n = 0;
        assert_true(i < 100000);
        assert_int_equal(pk_store_log_settle(t, slice, &n), 0);
        assert_true(slice != 0 || n > 0);
        got += n;
        assert_int_equal(pk_txn_commit(t), 0);
    }
    assert_int_equal(got, before);
    assert_false(pk_store_log_settling(s));
}

static void test_settle_reproduces(void **state)
{
    two *w = *state;
    uint64_t la, lb;
    int n;
    buf x;

    writes(w->a->s, 2000);
    n = ship(w->a->s, w->b->s, 1);
    assert_true(n > 0);
    assert_int_equal(unsettled(w->b->s), (uint64_t)n);
    /* The log has the records at once; the data does not. */
    for (uint32_t p = 0; p < NPARTS; p++) {
        pk_txn *ta = rtxn(w->a->s), *tb = rtxn(w->b->s);
        assert_int_equal(pk_store_log_last(ta, p, &la), 0);
        assert_int_equal(pk_store_log_last(tb, p, &lb), 0);
        assert_int_equal(la, lb);
        pk_txn_abort(ta);
        pk_txn_abort(tb);
        assert_int_equal(export_rc(w->b->s, p, &x), PK_EBUSY);
        free(x.p);
    }
    settle_all(w->b->s, 0);
    expect_same(w->a->s, w->b->s);
    /* In small batches, several rounds of writes. */
    for (int round = 0; round < 3; round++) {
        writes(w->a->s, 700);
        assert_true(ship(w->a->s, w->b->s, 1) > 0);
        settle_all(w->b->s, 7);
        expect_same(w->a->s, w->b->s);
    }
}

/* The same with partitions far apart whose ids agree in their low 16
 * bits (the batch's sort by partition takes every byte), with and
 * without deletes. */
static void test_high_partitions(void **state)
{
    two *w = *state;

    parts = high_parts;
    for (int round = 0; round < 4; round++) {
        no_deletes = round % 2;
        writes(w->a->s, 1500);
        assert_true(ship(w->a->s, w->b->s, 1) > 0);
        settle_all(w->b->s, 0);
        expect_same(w->a->s, w->b->s);
    }
    parts = low_parts;
    no_deletes = 0;
}

static void test_use_settles_first(void **state)
{
    two *w = *state;
    pk_slice v;
    pk_txn *t;
    int done;

    writes(w->a->s, 300);
    t = wtxn(w->a->s);
    assert_int_equal(
        pk_str_set(t, 1, S("x"), S("fresh"), NULL, NOW, &done, NULL), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    /* A read in a write transaction settles first; its abort undoes it. */
    t = wtxn(w->b->s);
    assert_int_equal(pk_str_get(t, 1, S("x"), NOW, &v), 0);
    assert_int_equal(v.len, 5);
    assert_memory_equal(v.ptr, "fresh", 5);
    assert_int_equal(pk_store_log_unsettled(t), 0);
    pk_txn_abort(t);
    assert_true(unsettled(w->b->s) > 0);
    /* A write settles first too, and its commit keeps the settle. */
    t = wtxn(w->b->s);
    assert_int_equal(pk_str_set(t, 2, S("y"), S("b"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(unsettled(w->b->s), 0);
    t = wtxn(w->a->s);
    assert_int_equal(pk_str_set(t, 2, S("y"), S("b"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    /* A's partition 2 has one more record than B's: compare the rest. */
    for (uint32_t p = 0; p < NPARTS; p++) {
        buf x, y;
        assert_int_equal(export_rc(w->a->s, p, &x), 0);
        assert_int_equal(export_rc(w->b->s, p, &y), 0);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.p, y.p, x.len);
        free(x.p);
        free(y.p);
    }
}

static void test_defer_rules_and_abort(void **state)
{
    two *w = *state;
    const uint8_t bad[] = {9, 0, 1, 'k'};
    uint64_t last = 0;
    pk_txn *t;
    int n;

    writes(w->a->s, 200);
    /* An aborted deferral leaves nothing behind. */
    {
        pk_txn *ta = rtxn(w->a->s);
        tship dc = {wtxn(w->b->s), 0, 0, 1};
        assert_int_equal(pk_store_log_read(ta, 0, 1, tship_cb, &dc), 0);
        assert_true(dc.n > 0);
        pk_txn_abort(dc.t);
        pk_txn_abort(ta);
    }
    assert_int_equal(unsettled(w->b->s), 0);
    t = rtxn(w->b->s);
    assert_int_equal(pk_store_log_last(t, 0, &last), 0);
    assert_int_equal(last, 0);
    pk_txn_abort(t);
    n = ship(w->a->s, w->b->s, 1);
    assert_true(n > 0);
    /* Sequence rules as for apply; a malformed record costs nothing. */
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_last(t, 0, &last), 0);
    assert_int_equal(pk_store_log_defer(t, 0, last, bad, sizeof(bad)),
                     PK_ECORRUPT);
    assert_int_equal(pk_store_log_defer(t, 0, last, "\x03\x00\x00", 3),
                     PK_EEXIST);
    assert_int_equal(pk_store_log_defer(t, 0, last + 2, "\x03\x00\x00", 3),
                     PK_ERANGE);
    assert_int_equal(pk_txn_error(t), 0);
    /* An aborted settle leaves the records deferred. */
    assert_int_equal(pk_store_log_settle(t, 0, NULL), 0);
    assert_int_equal(pk_store_log_unsettled(t), 0);
    pk_txn_abort(t);
    assert_int_equal(unsettled(w->b->s), (uint64_t)n);
    settle_all(w->b->s, 0);
    expect_same(w->a->s, w->b->s);
}

static void test_reopen_settles(void **state)
{
    two *w = *state;
    buf x;

    writes(w->a->s, 1500);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    assert_true(unsettled(w->b->s) > 0);
    assert_int_equal(tstore_reopen(w->b), 0);
    assert_int_equal(unsettled(w->b->s), 0);
    assert_int_equal(export_rc(w->b->s, 0, &x), 0);
    free(x.p);
    expect_same(w->a->s, w->b->s);
    assert_int_equal(tstore_reopen(w->b), 0);
    expect_same(w->a->s, w->b->s);
}

static void test_retention_keeps_unsettled(void **state)
{
    two *w = *state;

    /* A budget of one byte: every checkpoint trims what it may. */
    pk_store_log_retain(w->b->s, 1);
    for (int round = 0; round < 4; round++) {
        writes(w->a->s, 3000);
        assert_true(ship(w->a->s, w->b->s, 1) > 0);
        /* B's own writes elsewhere force checkpoints (retention). */
        for (int i = 0; i < 3; i++) {
            pk_txn *t = wtxn(w->b->s);
            int done;
            for (int j = 0; j < 3000; j++) {
                char k[16];
                snprintf(k, sizeof(k), "own%d", j % 50);
                assert_int_equal(pk_str_set(t, NPARTS + 1, S(k), S("v"), NULL,
                                            NOW, &done, NULL),
                                 0);
            }
            assert_int_equal(pk_txn_commit(t), 0);
        }
        settle_all(w->b->s, round % 2 ? 100 : 0);
        expect_same(w->a->s, w->b->s);
    }
}

/* A batch spread over transactions: an abort undoes its slices, a read
 * in the middle finishes it, a crash in the middle replays it at open,
 * and records deferred meanwhile wait for the next batch. */
static void test_batch_in_slices(void **state)
{
    two *w = *state;
    pk_slice v;
    size_t n;
    pk_txn *t;

    writes(w->a->s, 2000);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_settle(t, 50, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_true(pk_store_log_settling(w->b->s));
    for (int i = 0; i < 3; i++) { /* slices that are aborted */
        t = wtxn(w->b->s);
        assert_int_equal(pk_store_log_settle(t, 30, &n), 0);
        pk_txn_abort(t);
    }
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_settle(t, 100, &n), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    /* New records while the batch is under way. */
    writes(w->a->s, 500);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_settle(t, 100, &n), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    /* A crash in the middle: the batch is replayed at open. */
    assert_int_equal(tstore_reopen(w->b), 0);
    assert_int_equal(unsettled(w->b->s), 0);
    expect_same(w->a->s, w->b->s);
    /* A read in the middle finishes the batch and what came after it. */
    writes(w->a->s, 1500);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_settle(t, 200, &n), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    writes(w->a->s, 300);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    t = wtxn(w->b->s);
    assert_int_equal(pk_store_log_settle(t, 200, &n), 0);
    assert_int_equal(pk_str_get(t, 0, S("k1"), NOW, &v) < 0 ? -1 : 0, 0);
    assert_int_equal(pk_store_log_unsettled(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_false(pk_store_log_settling(w->b->s));
    expect_same(w->a->s, w->b->s);
    /* Slices of one change at a time to the end. */
    writes(w->a->s, 400);
    assert_true(ship(w->a->s, w->b->s, 1) > 0);
    settle_all(w->b->s, 1);
    expect_same(w->a->s, w->b->s);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, two_setup, two_teardown)
    const struct CMUnitTest tests[] = {
        T(test_settle_reproduces), T(test_high_partitions),
        T(test_use_settles_first), T(test_defer_rules_and_abort),
        T(test_reopen_settles),    T(test_retention_keeps_unsettled),
        T(test_batch_in_slices),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Groups (pk_txn_group_begin / pk_txn_group_end): the writes of one
 * MULTI/EXEC to a partition become one change record with one sequence
 * number; that record, applied or deferred on another store, gives the
 * same data and counters; writes inside the group see the ones before
 * them; other partitions and empty groups are framed as usual; misuse is
 * PK_EINVAL; a reopen recovers the stats the group's record carries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define P 3u     /* the group's partition */
#define OTHER 5u /* another partition written inside the group */

static uint64_t last_seq(pk_store *s, uint32_t part)
{
    pk_txn *t = rtxn(s);
    uint64_t seq = 0;

    assert_non_null(t);
    assert_int_equal(pk_store_log_last(t, part, &seq), 0);
    pk_txn_abort(t);
    return seq;
}

/* One EXEC's worth of writes to P, a read, an error and a write to OTHER
 * in the middle. */
static void group_body(pk_txn *t)
{
    pk_slice f[2] = {{"f1", 2}, {"f2", 2}}, v[2] = {{"a", 1}, {"b", 1}};
    pk_slice m = {"m", 1}, got;
    double sc = 1.5;
    pk_zadd_result zr;
    pk_part_stats st;
    uint64_t added;
    int64_t n;
    int done;

    assert_int_equal(pk_str_set(t, P, S("k1"), S("v1"), NULL, NOW, &done, NULL),
                     0);
    /* Later writes see the earlier ones, and so do the counters. */
    assert_int_equal(pk_str_get(t, P, S("k1"), NOW, &got), 0);
    assert_int_equal(got.len, 2);
    assert_int_equal(pk_store_part_stats(t, P, &st), 0);
    assert_int_equal(st.keys, 1);
    assert_int_equal(pk_hmap_set(t, P, S("h"), 2, f, v, NOW, &added), 0);
    assert_int_equal(
        pk_str_set(t, OTHER, S("o"), S("x"), NULL, NOW, &done, NULL), 0);
    /* A command-level error writes nothing and leaves the group going. */
    assert_int_equal(pk_str_incrby(t, P, S("h"), 1, NOW, &n),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_zset_add(t, P, S("z"), 0, 1, &sc, &m, NOW, &zr), 0);
    assert_int_equal(pk_key_del(t, P, S("k1"), NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_str_incrby(t, P, S("c"), 7, NOW, &n), 0);
    assert_int_equal(pk_key_expire(t, P, S("c"), NOW + 60000, 0, NOW, &done),
                     0);
    /* The log does not move until the group ends. */
    assert_int_equal(pk_store_log_last(t, P, &added), 0);
    assert_int_equal(added, 0);
}

static void ship(pk_store *from, pk_store *to, uint32_t part, int defer,
                 int want)
{
    pk_txn *ta = rtxn(from), *tb = wtxn(to);
    tship sh = {tb, part, 0, defer};

    assert_non_null(ta);
    assert_non_null(tb);
    assert_int_equal(pk_store_log_read(ta, part, 1, tship_cb, &sh), 0);
    assert_int_equal(sh.n, want);
    if (defer) {
        assert_int_equal(pk_store_log_settle(tb, 0, NULL), 0);
    }
    assert_int_equal(pk_txn_commit(tb), 0);
    pk_txn_abort(ta);
}

static void test_group_one_record(void **state)
{
    two *w = *state;
    tstore *c = tstore_new();
    pk_txn *t = wtxn(w->a->s);
    uint64_t before;

    assert_non_null(c);
    assert_non_null(t);
    assert_int_equal(pk_txn_group_begin(t, P), 0);
    before = pk_txn_changes(t);
    group_body(t);
    assert_true(pk_txn_changes(t) > before);
    assert_int_equal(pk_txn_group_end(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(last_seq(w->a->s, P), 1);
    assert_int_equal(last_seq(w->a->s, OTHER), 1);
    /* The record, applied or deferred and settled, gives the same data. */
    ship(w->a->s, w->b->s, P, 0, 1);
    ship(w->a->s, c->s, P, 1, 1);
    assert_int_equal(tstore_same(w->a->s, w->b->s, P), 0);
    assert_int_equal(tstore_same(w->a->s, c->s, P), 0);
    ship(w->a->s, w->b->s, OTHER, 0, 1);
    assert_int_equal(tstore_same(w->a->s, w->b->s, OTHER), 0);
    /* The stats the record carries survive a reopen. */
    assert_int_equal(tstore_reopen(w->a), 0);
    assert_int_equal(tstore_same(w->a->s, w->b->s, P), 0);
    tstore_free(c);
}

static void test_group_empty_and_misuse(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s), *r;
    pk_slice v;

    assert_non_null(t);
    assert_int_equal(pk_txn_group_end(t), PK_EINVAL);
    assert_int_equal(pk_txn_group_begin(t, P), 0);
    assert_int_equal(pk_txn_group_begin(t, P), PK_EINVAL);
    assert_int_equal(pk_str_get(t, P, S("none"), NOW, &v), PK_ENOTFOUND);
    assert_int_equal(pk_txn_group_end(t), 0);
    assert_int_equal(pk_txn_changes(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(last_seq(w->a->s, P), 0);
    r = rtxn(w->a->s);
    assert_non_null(r);
    assert_int_equal(pk_txn_group_begin(r, P), PK_EINVAL);
    pk_txn_abort(r);
}

/* A group left open is ended by the commit; an aborted one leaves no
 * trace, and the next transaction frames writes as usual. */
static void test_group_commit_and_abort(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s);
    int done;

    assert_non_null(t);
    assert_int_equal(pk_txn_group_begin(t, P), 0);
    group_body(t);
    pk_txn_abort(t);
    assert_int_equal(last_seq(w->a->s, P), 0);
    t = wtxn(w->a->s);
    assert_non_null(t);
    assert_int_equal(pk_txn_group_begin(t, P), 0);
    group_body(t);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(last_seq(w->a->s, P), 1);
    t = wtxn(w->a->s);
    assert_non_null(t);
    assert_int_equal(pk_str_set(t, P, S("k2"), S("v"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_set(t, P, S("k3"), S("v"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(last_seq(w->a->s, P), 3);
    ship(w->a->s, w->b->s, P, 0, 3);
    assert_int_equal(tstore_same(w->a->s, w->b->s, P), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_group_one_record, two_setup,
                                        two_teardown),
        cmocka_unit_test_setup_teardown(test_group_empty_and_misuse, two_setup,
                                        two_teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_and_abort, two_setup,
                                        two_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

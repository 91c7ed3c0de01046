/*
 * pk_store_part_relabel, a range split's store-local half: strings,
 * hashes (long fields too), long keys and keys with expiry in a partition
 * are split at a key; afterwards each key is in exactly one of the two
 * partitions, by byte order, with its value, fields and expiry; the
 * partitions' counters add up; active expiry finds the moved keys under
 * their new partition; batches (max_bytes) give the same result; a long
 * split key and from == to are refused.  Checked against the keys written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pk_range.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_str.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define FROM 3
#define TO 9
#define NKEYS 600

static char keys[NKEYS][320];
static size_t lens[NKEYS];

/* Key i: short keys "k000".."k599" with NULs in some, and every 10th a
 * 300-byte key (the long form) starting with its short name. */
static void make_keys(void)
{
    for (int i = 0; i < NKEYS; i++) {
        lens[i] = (size_t)snprintf(keys[i], sizeof(keys[i]), "k%03d", i);
        if (i % 7 == 0) {
            keys[i][lens[i]++] = '\0'; /* "k007\0" */
        }
        if (i % 10 == 0) {
            memset(keys[i] + lens[i], 'x', 300 - lens[i]);
            lens[i] = 300;
        }
    }
}

static void fill(pk_store *s)
{
    pk_txn *t = wtxn(s);
    pk_slice f[2] = {{"f", 1}, {NULL, 0}}, v[2] = {{"1", 1}, {"2", 1}};
    static char longf[400];
    int done;
    uint64_t added;

    assert_non_null(t);
    memset(longf, 'F', sizeof(longf));
    f[1] = (pk_slice){longf, sizeof(longf)};
    for (int i = 0; i < NKEYS; i++) {
        if (i % 3 == 0) {
            assert_int_equal(
                pk_hmap_set(t, FROM, keys[i], lens[i], 2, f, v, NOW, &added),
                0);
        } else {
            assert_int_equal(pk_str_set(t, FROM, keys[i], lens[i], keys[i],
                                        lens[i], NULL, NOW, &done, NULL),
                             0);
        }
        if (i % 5 == 0) {
            assert_int_equal(pk_key_expire(t, FROM, keys[i], lens[i],
                                           NOW + 1000 + (uint64_t)i, 0, NOW,
                                           &done),
                             0);
        }
    }
    /* Neighbours on both sides stay where they are. */
    assert_int_equal(
        pk_str_set(t, FROM - 1, S("k300"), S("left"), NULL, NOW, &done, NULL),
        0);
    assert_int_equal(
        pk_str_set(t, FROM + 1, S("k100"), S("right"), NULL, NOW, &done, NULL),
        0);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* Key i is in part and nowhere else among FROM and TO, with its data. */
static void check_key(pk_txn *t, int i, uint32_t part)
{
    uint32_t other = part == FROM ? TO : FROM;
    pk_slice val;
    int64_t ttl;

    if (i % 3 == 0) {
        assert_int_equal(
            pk_hmap_get(t, part, keys[i], lens[i], "f", 1, NOW, &val), 0);
        assert_int_equal(val.len, 1);
        assert_memory_equal(val.ptr, "1", 1);
        assert_int_equal(
            pk_hmap_get(t, other, keys[i], lens[i], "f", 1, NOW, &val),
            PK_ENOTFOUND);
    } else {
        assert_int_equal(pk_str_get(t, part, keys[i], lens[i], NOW, &val), 0);
        assert_int_equal(val.len, lens[i]);
        assert_memory_equal(val.ptr, keys[i], lens[i]);
        assert_int_equal(pk_str_get(t, other, keys[i], lens[i], NOW, &val),
                         PK_ENOTFOUND);
    }
    assert_int_equal(pk_key_pttl(t, part, keys[i], lens[i], NOW, &ttl), 0);
    assert_int_equal(ttl, i % 5 == 0 ? 1000 + i : -1);
}

static void split_and_check(size_t max_bytes)
{
    tstore *ts = tstore_new();
    const char *at = "k250";
    pk_part_stats a, b;
    pk_txn *t;
    int done = 0, calls = 0;
    size_t left = 0, expired = 0;

    assert_non_null(ts);
    fill(ts->s);
    while (!done) {
        t = wtxn(ts->s);
        assert_int_equal(
            pk_store_part_relabel(t, FROM, TO, S(at), max_bytes, &done), 0);
        assert_int_equal(pk_txn_commit(t), 0);
        calls++;
    }
    if (max_bytes) {
        assert_true(calls > 1);
    }
    /* Every key on its side of "k250", whole. */
    assert_int_equal(pk_txn_begin(ts->s, 1, &t), 0);
    for (int i = 0; i < NKEYS; i++) {
        int right = pk_key_cmp(keys[i], lens[i], at, strlen(at)) >= 0;
        left += !right;
        check_key(t, i, right ? TO : FROM);
    }
    assert_int_equal(pk_store_part_stats(t, FROM, &a), 0);
    assert_int_equal(pk_store_part_stats(t, TO, &b), 0);
    assert_int_equal(a.keys, left);
    assert_int_equal(b.keys, NKEYS - left);
    pk_txn_abort(t);

    /* The expiry index moved with the keys: all 120 expire. */
    t = wtxn(ts->s);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 5000, 1000, &expired), 0);
    assert_int_equal(expired, NKEYS / 5);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(pk_txn_begin(ts->s, 1, &t), 0);
    assert_int_equal(pk_store_part_stats(t, FROM, &a), 0);
    assert_int_equal(pk_store_part_stats(t, TO, &b), 0);
    assert_int_equal(a.keys + b.keys, NKEYS - NKEYS / 5);
    pk_slice val;
    assert_int_equal(pk_str_get(t, FROM - 1, S("k300"), NOW, &val), 0);
    assert_int_equal(pk_str_get(t, FROM + 1, S("k100"), NOW, &val), 0);
    pk_txn_abort(t);
    tstore_free(ts);
}

static void test_relabel_whole(void **state)
{
    (void)state;
    make_keys();
    split_and_check(0);
}

static void test_relabel_batches(void **state)
{
    (void)state;
    make_keys();
    split_and_check(4096);
}

static void test_relabel_refused(void **state)
{
    tstore *ts = tstore_new();
    char longk[300];
    pk_txn *t;
    int done = 7;

    (void)state;
    assert_non_null(ts);
    memset(longk, 'a', sizeof(longk));
    t = wtxn(ts->s);
    assert_int_equal(pk_store_part_relabel(t, 1, 1, S("a"), 0, &done),
                     PK_EINVAL);
    assert_int_equal(
        pk_store_part_relabel(t, 1, 2, longk, sizeof(longk), 0, &done),
        PK_EINVAL);
    assert_int_equal(done, 7);
    /* Nothing to move: done at once. */
    assert_int_equal(pk_store_part_relabel(t, 1, 2, S("a"), 0, &done), 0);
    assert_int_equal(done, 1);
    pk_txn_abort(t);
    tstore_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relabel_whole),
        cmocka_unit_test(test_relabel_batches),
        cmocka_unit_test(test_relabel_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * HRANDFIELD and ZRANDMEMBER in the store (pk_hmap_random, pk_zset_random,
 * the shared picks of pk_store_rand.c) against a real LMDB environment:
 * uniformity by chi-square of single picks, a few distinct (Floyd), many
 * distinct (selection sampling) and repeats (one by one, and in sorted
 * batches past PK__RAND_BATCH), on small collections (walked) and large
 * ones (>= 3000, through the rank index in a write transaction, walked in
 * a read one); each pick's value or score is the one stored with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyenc.h"
#include "store/pk_store_int.h" /* PK__RAND_BATCH, pk__rank_find */
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define PART 7u
#define POOL 24   /* histogram bins: element number % POOL */
#define SMALL 24u /* one element per bin */
#define BIG 3000u /* large enough for the rank index */
#define CHI2 49.7 /* 23 degrees of freedom, p = 0.001 */

/* Hash field i is "f%05u" -> "v%05u"; zset member i is "m%05u" with
 * score i * 0.5 - 7. */
static double score_of(unsigned i)
{
    return i * 0.5 - 7;
}

/* What one call reported. */
typedef struct picks {
    unsigned hist[POOL];
    uint8_t seen[BIG]; /* in this call */
    uint64_t n;        /* picks in this call */
    int dup;           /* some element came twice in this call */
} picks;

/* The number of "c%05u". */
static unsigned num_of(pk_slice s, char c)
{
    char buf[8];

    assert_int_equal(s.len, 6);
    assert_int_equal(((const char *)s.ptr)[0], c);
    memcpy(buf, (const char *)s.ptr + 1, 5);
    buf[5] = '\0';
    return (unsigned)atoi(buf);
}

static void note(picks *p, unsigned i)
{
    assert_true(i < BIG);
    p->dup |= p->seen[i];
    p->seen[i] = 1;
    p->hist[i % POOL]++;
    p->n++;
}

static int h_cb(void *ctx, pk_slice field, pk_slice val)
{
    unsigned i = num_of(field, 'f');

    assert_int_equal(num_of(val, 'v'), i);
    note(ctx, i);
    return 0;
}

static int z_cb(void *ctx, pk_slice mem, double score)
{
    unsigned i = num_of(mem, 'm');

    assert_true(score == score_of(i));
    note(ctx, i);
    return 0;
}

/* Fills key with elements from..to-1 of the hash (zset 0) or zset. */
static void fill(pk_txn *t, int zset, const char *key, unsigned from,
                 unsigned to)
{
    char fb[16], vb[16];
    uint64_t n;

    for (unsigned i = from; i < to; i++) {
        pk_slice f = {fb, (size_t)snprintf(fb, sizeof(fb), "%c%05u",
                                           zset ? 'm' : 'f', i)};
        pk_slice v = {vb, (size_t)snprintf(vb, sizeof(vb), "v%05u", i)};
        double s = score_of(i);
        pk_zadd_result r;

        if (zset) {
            assert_int_equal(
                pk_zset_add(t, PART, S(key), 0, 1, &s, &f, NOW, &r), 0);
        } else {
            assert_int_equal(pk_hmap_set(t, PART, S(key), 1, &f, &v, NOW, &n),
                             0);
        }
    }
}

/*
 * One HRANDFIELD / ZRANDMEMBER call on a collection of size elements:
 * checks the number of picks (min(count, size) distinct ones, or exactly
 * count; none for a missing key) and, without repeats, that none came twice.
 * Adds to p->hist.
 */
static void pick(pk_txn *t, int zset, const char *key, uint64_t size,
                 uint64_t count, int repeat, picks *p)
{
    uint64_t seed = ((uint64_t)trnd() << 32) | trnd();
    int rc;

    memset(p->seen, 0, sizeof(p->seen));
    p->n = 0;
    p->dup = 0;
    rc = zset ? pk_zset_random(t, PART, S(key), count, repeat, seed, NOW, z_cb,
                               p)
              : pk_hmap_random(t, PART, S(key), count, repeat, seed, NOW, h_cb,
                               p);
    assert_int_equal(rc, 0);
    assert_int_equal(p->n, size == 0                ? 0
                           : repeat || count < size ? count
                                                    : size);
    if (!repeat) {
        assert_false(p->dup);
    }
}

static double chi2(const picks *p)
{
    double c = 0, expect = 0;

    for (unsigned i = 0; i < POOL; i++) {
        expect += p->hist[i];
    }
    expect /= POOL;
    for (unsigned i = 0; i < POOL; i++) {
        c += (p->hist[i] - expect) * (p->hist[i] - expect) / expect;
    }
    return c;
}

/* calls calls of count picks each; the histogram passes chi-square. */
static void uniform(pk_txn *t, int zset, const char *key, uint64_t size,
                    unsigned calls, uint64_t count, int repeat)
{
    static picks p;

    memset(&p, 0, sizeof(p));
    for (unsigned i = 0; i < calls; i++) {
        pick(t, zset, key, size, count, repeat, &p);
    }
    assert_true(chi2(&p) < CHI2);
}

static void small_case(pk_txn *t, int zset)
{
    static picks p;

    fill(t, zset, "s", 0, SMALL);
    uniform(t, zset, "s", SMALL, 2400, 1, 0);
    uniform(t, zset, "s", SMALL, 800, 3, 0);  /* few distinct */
    uniform(t, zset, "s", SMALL, 120, 20, 0); /* many distinct */
    uniform(t, zset, "s", SMALL, 1, 2400, 1); /* repeats, one batch */
    uniform(t, zset, "s", SMALL, 2400, 1, 1); /* repeats, one by one */
    /* All of them, each once, whatever the count beyond the size. */
    pick(t, zset, "s", SMALL, SMALL, 0, &p);
    pick(t, zset, "s", SMALL, UINT64_MAX, 0, &p);
    for (unsigned i = 0; i < SMALL; i++) {
        assert_true(p.seen[i]);
    }
    /* A count of 0, a missing key: no picks. */
    pick(t, zset, "s", SMALL, 0, 0, &p);
    pick(t, zset, "s", SMALL, 0, 1, &p);
    pick(t, zset, "missing", 0, 5, 0, &p);
    pick(t, zset, "missing", 0, 5, 1, &p);
}

/* Whether picks from key go through a rank index (in t). */
static int indexed(pk_txn *t, int zset, const char *key, uint64_t count)
{
    uint8_t prefix[64];
    size_t plen;
    pk_slice start;
    uint64_t skip;
    int rc;

    assert_int_equal(
        pk_keyenc_prefix(PART, S(key), prefix, sizeof(prefix), &plen), 0);
    rc = pk__rank_find(t, prefix, plen, zset ? PK_TAG_ZMEMBER : PK_TAG_HFIELD,
                       count, count / 2, &start, &skip);
    assert_true(rc == 0 || rc == PK_ENOTFOUND);
    return rc == 0;
}

static void large_case(pk_txn *t, int zset)
{
    fill(t, zset, "L", 0, BIG);
    uniform(t, zset, "L", BIG, 2400, 1, 0);
    assert_true(indexed(t, zset, "L", BIG));
    uniform(t, zset, "L", BIG, 240, 10, 0); /* few distinct: by rank */
    uniform(t, zset, "L", BIG, 3, 2000, 0); /* many distinct: one pass */
    uniform(t, zset, "L", BIG, 240, 10, 1); /* few repeats: by rank */
    /* Repeats in more than one sorted batch. */
    uniform(t, zset, "L", BIG, 1, PK__RAND_BATCH + 5000, 1);
}

static void hash_small(void **state)
{
    tstore *ts = *state;
    pk_txn *t = wtxn(ts->s);

    small_case(t, 0);
    pk_txn_abort(t);
}

static void zset_small(void **state)
{
    tstore *ts = *state;
    pk_txn *t = wtxn(ts->s);

    small_case(t, 1);
    pk_txn_abort(t);
}

/* Large: in the write transaction (rank index), then in a read one
 * (walked from the nearer end), the same checks. */
static void large(tstore *ts, int zset)
{
    pk_txn *t = wtxn(ts->s);

    large_case(t, zset);
    assert_int_equal(pk_txn_commit(t), 0);
    t = rtxn(ts->s);
    assert_false(indexed(t, zset, "L", BIG));
    uniform(t, zset, "L", BIG, 2400, 1, 0);
    uniform(t, zset, "L", BIG, 240, 10, 0);
    uniform(t, zset, "L", BIG, 1, 24000, 1);
    pk_txn_abort(t);
}

static void hash_large(void **state)
{
    large(*state, 0);
}

static void zset_large(void **state)
{
    large(*state, 1);
}

/* Deletes in the middle of a large collection: picks see the rest. */
static void after_deletes(void **state)
{
    tstore *ts = *state;
    pk_txn *t = wtxn(ts->s);
    static picks p;
    char fb[16];
    uint64_t n;

    fill(t, 0, "D", 0, BIG);
    fill(t, 1, "E", 0, BIG);
    pick(t, 0, "D", BIG, 1, 0, &p); /* builds the rank indexes */
    pick(t, 1, "E", BIG, 1, 0, &p);
    for (unsigned i = 0; i < BIG; i += 2) {
        pk_slice f = {fb, (size_t)snprintf(fb, sizeof(fb), "f%05u", i)};
        pk_slice m = {fb + 8, (size_t)snprintf(fb + 8, 8, "m%05u", i)};

        assert_int_equal(pk_hmap_del(t, PART, S("D"), 1, &f, NOW, &n), 0);
        assert_int_equal(pk_zset_rem(t, PART, S("E"), 1, &m, NOW, &n), 0);
    }
    for (int zset = 0; zset < 2; zset++) {
        const char *key = zset ? "E" : "D";

        memset(&p.hist, 0, sizeof(p.hist));
        for (unsigned i = 0; i < 600; i++) {
            pick(t, zset, key, BIG / 2, 1, 0, &p);
            for (unsigned j = 0; j < BIG; j += 2) {
                assert_false(p.seen[j]);
            }
        }
        pick(t, zset, key, BIG / 2, BIG, 0, &p);
        pick(t, zset, key, BIG / 2, 5000, 1, &p);
    }
    pk_txn_abort(t);
}

static void wrongtype(void **state)
{
    tstore *ts = *state;
    pk_txn *t = wtxn(ts->s);
    static picks p;
    int done;

    assert_int_equal(
        pk_str_set(t, PART, S("str"), S("x"), NULL, NOW, &done, NULL), 0);
    fill(t, 1, "z", 0, 3);
    fill(t, 0, "h", 0, 3);
    assert_int_equal(pk_hmap_random(t, PART, S("str"), 1, 0, 1, NOW, h_cb, &p),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_hmap_random(t, PART, S("z"), 1, 1, 1, NOW, h_cb, &p),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_zset_random(t, PART, S("h"), 1, 0, 1, NOW, z_cb, &p),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_zset_random(t, PART, S("str"), 1, 1, 1, NOW, z_cb, &p),
                     PK_STORE_WRONGTYPE);
    pk_txn_abort(t);
}

static int setup(void **state)
{
    *state = tstore_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tstore_free(*state);
    return 0;
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(hash_small), T(zset_small),    T(hash_large),
        T(zset_large), T(after_deletes), T(wrongtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

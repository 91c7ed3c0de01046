/*
 * The sorted-set and hash functions added for Redis 7.0 parity against a
 * real LMDB environment: ZRANK, ZCOUNT, pops, ZREMRANGEBY*, ZRANGESTORE,
 * union/inter/diff with weights and aggregates, ZSCAN and HSCAN cursors
 * under writes, HSETNX and HINCRBYFLOAT; ranks and pops also against a
 * naive model under random operations.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_zset.h"
#include "store/pk_zset_ops.h"
#include "store/pk_zset_range.h"
#include "store_testutil.h"

#define NOW 1700000000000ull

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

static void zadd1(pk_txn *t, const char *k, double s, const char *m)
{
    pk_slice mem = {m, strlen(m)};
    pk_zadd_result r;

    assert_int_equal(pk_zset_add(t, 1, S(k), 0, 1, &s, &mem, NOW, &r), 0);
}

/* z = a:1 b:2 c:3 d:4 e:5 */
static void five(pk_txn *t, const char *k)
{
    const char *m[] = {"a", "b", "c", "d", "e"};

    for (int i = 0; i < 5; i++) {
        zadd1(t, k, i + 1, m[i]);
    }
}

static const char *all(pk_txn *t, const char *k, collect *c)
{
    memset(c, 0, sizeof(*c));
    assert_int_equal(
        pk_zset_range_rank(t, 1, S(k), 0, -1, 0, NOW, collect_z, c), 0);
    return c->buf;
}

static void test_rank_count(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    pk_zrange r = {.kind = PK_ZRANGE_SCORE, .smin = {2, 0}, .smax = {4, 1}};
    uint64_t rank, n;
    double s;

    five(t, "z");
    assert_int_equal(pk_zset_rank(t, 1, S("z"), S("d"), 0, NOW, &rank, &s), 0);
    assert_int_equal(rank, 3);
    assert_true(s == 4);
    assert_int_equal(pk_zset_rank(t, 1, S("z"), S("d"), 1, NOW, &rank, &s), 0);
    assert_int_equal(rank, 1);
    assert_int_equal(pk_zset_rank(t, 1, S("z"), S("q"), 0, NOW, &rank, &s),
                     PK_ENOTFOUND);
    assert_int_equal(pk_zset_rank(t, 1, S("no"), S("q"), 0, NOW, &rank, &s),
                     PK_ENOTFOUND);
    assert_int_equal(pk_zset_count(t, 1, S("z"), &r, NOW, &n), 0);
    assert_int_equal(n, 2);
    r.smin.value = NAN;
    assert_int_equal(pk_zset_count(t, 1, S("z"), &r, NOW, &n), PK_EINVAL);
    r = (pk_zrange){.kind = PK_ZRANGE_LEX,
                    .lmin = {"b", 1, PK_ZLEX_EXCL},
                    .lmax = {NULL, 0, PK_ZLEX_MAX}};
    assert_int_equal(pk_zset_count(t, 1, S("z"), &r, NOW, &n), 0);
    assert_int_equal(n, 3);
    pk_txn_abort(t);
}

static void test_pop(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    uint64_t n = 99, card;
    collect c = {0};

    five(t, "z");
    assert_int_equal(pk_zset_pop(t, 1, S("z"), 1, 2, NOW, collect_z, &c, &n),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(c.buf, "e:5 d:4 ");
    memset(&c, 0, sizeof(c));
    /* A client's huge count is clamped to the set before anything. */
    assert_int_equal(
        pk_zset_pop(t, 1, S("z"), 0, UINT64_MAX, NOW, collect_z, &c, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(c.buf, "a:1 b:2 c:3 ");
    assert_int_equal(pk_zset_card(t, 1, S("z"), NOW, &card), 0);
    assert_int_equal(card, 0);
    assert_int_equal(pk_zset_pop(t, 1, S("z"), 0, 1, NOW, collect_z, &c, &n),
                     0);
    assert_int_equal(n, 0);
    pk_txn_abort(t);
}

static void test_remrange_rangestore(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    pk_zrange r = {.kind = PK_ZRANGE_RANK, .start = 1, .stop = 2};
    uint64_t n;
    collect c;

    five(t, "z");
    assert_int_equal(pk_zset_remrange(t, 1, S("z"), &r, NOW, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(all(t, "z", &c), "a:1 d:4 e:5 ");
    r = (pk_zrange){
        .kind = PK_ZRANGE_RANK, .start = INT64_MIN, .stop = INT64_MAX};
    assert_int_equal(pk_zset_rangestore(t, 1, S("d"), S("z"), &r, NOW, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(all(t, "d", &c), "a:1 d:4 e:5 ");
    r = (pk_zrange){.kind = PK_ZRANGE_SCORE,
                    .rev = 1,
                    .smin = {-INFINITY, 0},
                    .smax = {INFINITY, 0},
                    .offset = 1,
                    .count = 1};
    assert_int_equal(pk_zset_rangestore(t, 1, S("d"), S("z"), &r, NOW, &n), 0);
    assert_string_equal(all(t, "d", &c), "d:4 ");
    r.offset = 10;
    assert_int_equal(pk_zset_rangestore(t, 1, S("d"), S("z"), &r, NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_string_equal(all(t, "d", &c), "");
    r = (pk_zrange){
        .kind = PK_ZRANGE_SCORE, .smin = {-INFINITY, 0}, .smax = {INFINITY, 0}};
    assert_int_equal(pk_zset_remrange(t, 1, S("z"), &r, NOW, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(pk_zset_card(t, 1, S("z"), NOW, &n), 0);
    assert_int_equal(n, 0);
    pk_txn_abort(t);
}

static void test_combine(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    pk_slice keys[3] = {{"a", 1}, {"b", 1}, {"none", 4}};
    double w[3] = {2, 1, 1};
    pk_zop op = {PK_ZOP_UNION, PK_ZAGG_SUM, 2, keys, NULL, 0};
    uint64_t n;
    collect c = {0};

    zadd1(t, "a", 1, "x");
    zadd1(t, "a", 2, "y");
    zadd1(t, "b", 10, "y");
    zadd1(t, "b", INFINITY, "z");
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), 0);
    assert_string_equal(c.buf, "x:1 y:12 z:inf ");
    memset(&c, 0, sizeof(c));
    op.weights = w;
    op.agg = PK_ZAGG_MAX;
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), 0);
    assert_string_equal(c.buf, "x:2 y:10 z:inf ");
    memset(&c, 0, sizeof(c));
    w[1] = 0; /* inf * 0 counts as 0 */
    op.op = PK_ZOP_INTER;
    op.agg = PK_ZAGG_SUM;
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), 0);
    assert_string_equal(c.buf, "y:4 ");
    memset(&c, 0, sizeof(c));
    op.op = PK_ZOP_DIFF;
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), 0);
    assert_string_equal(c.buf, "x:1 ");
    op.op = PK_ZOP_INTER;
    op.n = 3;
    assert_int_equal(pk_zset_combine_card(t, 1, &op, NOW, &n), 0);
    assert_int_equal(n, 0);
    op.n = 2;
    op.limit = 1;
    assert_int_equal(pk_zset_combine_card(t, 1, &op, NOW, &n), 0);
    assert_int_equal(n, 1);
    /* The destination is an input: read fully before it is replaced. */
    op.op = PK_ZOP_UNION;
    op.weights = NULL;
    assert_int_equal(pk_zset_combine_store(t, 1, S("a"), &op, NOW, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(all(t, "a", &c), "x:1 y:12 z:inf ");
    op.op = PK_ZOP_INTER;
    op.n = 3;
    assert_int_equal(pk_zset_combine_store(t, 1, S("a"), &op, NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_zset_card(t, 1, S("a"), NOW, &n), 0);
    assert_int_equal(n, 0);
    {
        pk_slice f = {"f", 1};
        uint64_t added;
        assert_int_equal(pk_hmap_set(t, 1, S("h"), 1, &f, &f, NOW, &added), 0);
    }
    keys[2] = (pk_slice){"h", 1};
    assert_int_equal(pk_zset_combine_card(t, 1, &op, NOW, &n),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_zset_check_inputs(t, 1, 3, keys, NOW),
                     PK_STORE_WRONGTYPE);
    op.n = 0;
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), PK_EINVAL);
    pk_txn_abort(t);
}

/*
 * Inputs that collect nothing leave the collection's buffers unallocated:
 * all members empty (no member bytes: pointers must not be computed from
 * the NULL buffer) or all inputs missing (no entries: NULL must not reach
 * qsort).  Both were undefined behaviour that UBSan reports under make
 * check; found by fuzz/fuzz_store_ops.
 */
static void test_combine_empty_members(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    pk_slice keys[2] = {{"a", 1}, {"b", 1}};
    pk_zop op = {PK_ZOP_UNION, PK_ZAGG_SUM, 2, keys, NULL, 0};
    uint64_t n = 0;
    collect c = {0};

    zadd1(t, "a", 1, "");
    zadd1(t, "b", 2, "");
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), 0);
    assert_string_equal(c.buf, ":3 ");
    op.op = PK_ZOP_INTER;
    assert_int_equal(pk_zset_combine_store(t, 1, S("d"), &op, NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(all(t, "d", &c), ":3 ");
    op.op = PK_ZOP_DIFF;
    assert_int_equal(pk_zset_combine_card(t, 1, &op, NOW, &n), 0);
    assert_int_equal(n, 0);
    keys[0] = (pk_slice){"none", 4};
    keys[1] = (pk_slice){"none2", 5};
    op.op = PK_ZOP_UNION;
    memset(&c, 0, sizeof(c));
    assert_int_equal(pk_zset_combine(t, 1, &op, NOW, collect_z, &c), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(pk_zset_combine_store(t, 1, S("d"), &op, NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_zset_card(t, 1, S("d"), NOW, &n), 0);
    assert_int_equal(n, 0);
    pk_txn_abort(t);
}

typedef struct seen {
    int count[600];
} seen;

static int seen_z(void *ctx, pk_slice m, double score)
{
    seen *s = ctx;

    (void)m;
    s->count[(int)score]++;
    return 0;
}

static int seen_h(void *ctx, pk_slice f, pk_slice v)
{
    seen *s = ctx;
    char buf[16];

    (void)f;
    memcpy(buf, v.ptr, v.len);
    buf[v.len] = '\0';
    s->count[atoi(buf)]++;
    return 0;
}

/* Every member present throughout comes back exactly once, with writes
 * between calls; members share long prefixes (groups of one). */
static void test_scan_cursors(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    pk_scan_opts o = {NULL, 0, 7, PK_TYPE_NONE, NULL, NULL};
    uint64_t cur = 0, next, added;
    seen zs = {{0}}, hs = {{0}};
    char m[32], v[16];
    int calls = 0;

    for (int i = 0; i < 300; i++) {
        snprintf(m, sizeof(m), "%c-member-%04d", 'a' + i % 20, i);
        snprintf(v, sizeof(v), "%d", i);
        zadd1(t, "z", i, m);
        pk_slice f = {m, strlen(m)}, vs = {v, strlen(v)};
        assert_int_equal(pk_hmap_set(t, 1, S("h"), 1, &f, &vs, NOW, &added), 0);
    }
    do {
        assert_int_equal(
            pk_zset_scan(t, 1, S("z"), cur, &o, NOW, seen_z, &zs, &next), 0);
        snprintf(m, sizeof(m), "%c-new-%d", 'a' + calls % 26, calls);
        zadd1(t, "z", 500 + calls % 50, m);
        cur = next;
        calls++;
    } while (cur != 0 && calls < 1000);
    cur = 0;
    do {
        assert_int_equal(
            pk_hmap_scan(t, 1, S("h"), cur, &o, NOW, seen_h, &hs, &next), 0);
        cur = next;
    } while (cur != 0);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(zs.count[i], 1);
        assert_int_equal(hs.count[i], 1);
    }
    /* A group of many members sharing 8 bytes comes back whole. */
    memset(&zs, 0, sizeof(zs));
    for (int i = 0; i < 50; i++) {
        snprintf(m, sizeof(m), "samegroup%03d", i);
        zadd1(t, "g", i, m);
    }
    o.count = 1;
    assert_int_equal(pk_zset_scan(t, 1, S("g"), 0, &o, NOW, seen_z, &zs, &next),
                     0);
    assert_int_equal(next, 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(zs.count[i], 1);
    }
    o.match = "samegroup01*";
    o.match_len = strlen(o.match);
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(pk_zset_scan(t, 1, S("g"), 0, &o, NOW, seen_z, &zs, &next),
                     0);
    assert_int_equal(zs.count[10] + zs.count[19] + zs.count[20], 2);
    pk_txn_abort(t);
}

static void test_hsetnx_incrbyfloat(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    pk_slice out, bad = {"abc", 3};
    uint64_t len, added;
    int set = -1;
    long double ld;

    assert_int_equal(pk_hmap_setnx(t, 1, S("h"), S("f"), S("1"), NOW, &set), 0);
    assert_int_equal(set, 1);
    assert_int_equal(pk_hmap_setnx(t, 1, S("h"), S("f"), S("2"), NOW, &set), 0);
    assert_int_equal(set, 0);
    assert_int_equal(pk_hmap_incrbyfloat(t, 1, S("h"), S("f"), 0.5L, NOW, &out),
                     0);
    assert_int_equal(out.len, 3);
    assert_memory_equal(out.ptr, "1.5", 3);
    assert_int_equal(
        pk_hmap_incrbyfloat(t, 1, S("h"), S("g"), -2.0L, NOW, &out), 0);
    assert_memory_equal(out.ptr, "-2", 2);
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW, &len), 0);
    assert_int_equal(len, 2);
    pk_slice bf = {"b", 1};
    assert_int_equal(pk_hmap_set(t, 1, S("h"), 1, &bf, &bad, NOW, &added), 0);
    assert_int_equal(pk_hmap_incrbyfloat(t, 1, S("h"), S("b"), 1.0L, NOW, &out),
                     PK_STORE_HASH_NOTFLOAT);
    assert_int_equal(pk_hmap_incrbyfloat(t, 1, S("h"), S("b"),
                                         (long double)INFINITY, NOW, &out),
                     PK_EINVAL);
    assert_int_equal(pk_hmap_parse_ld(S(" 1"), &ld), 0);
    assert_int_equal(pk_hmap_parse_ld(S("nan"), &ld), 0);
    assert_int_equal(pk_hmap_parse_ld(S("1e5000000"), &ld), 0);
    assert_int_equal(pk_hmap_parse_ld(S("2.5"), &ld), 1);
    pk_txn_abort(t);
}

/* Ranks and pops against a sorted array of scores (distinct members). */
static void test_model(void **state)
{
    pk_txn *t = wtxn(((tstore *)*state)->s);
    double model[200];
    int n = 0;
    char m[16];

    for (int round = 0; round < 2000; round++) {
        uint32_t op = trnd() % 10;
        if (op < 6 || n == 0) {
            double s = (double)(trnd() % 1000);
            snprintf(m, sizeof(m), "%06.0f", s); /* member order = score */
            uint64_t before, after;
            assert_int_equal(pk_zset_card(t, 1, S("z"), NOW, &before), 0);
            zadd1(t, "z", s, m);
            assert_int_equal(pk_zset_card(t, 1, S("z"), NOW, &after), 0);
            if (after > before && n < 200) {
                int i = n++;
                while (i > 0 && model[i - 1] > s) {
                    model[i] = model[i - 1];
                    i--;
                }
                model[i] = s;
            } else if (after > before) {
                uint64_t p;
                collect c = {0};
                pk_slice mem = {m, strlen(m)};
                assert_int_equal(pk_zset_rem(t, 1, S("z"), 1, &mem, NOW, &p),
                                 0);
                (void)c;
            }
        } else if (op < 8) {
            int i = (int)(trnd() % (uint32_t)n);
            uint64_t rank;
            double s;
            snprintf(m, sizeof(m), "%06.0f", model[i]);
            assert_int_equal(
                pk_zset_rank(t, 1, S("z"), S(m), op == 7, NOW, &rank, &s), 0);
            assert_int_equal(rank,
                             op == 7 ? (uint64_t)(n - 1 - i) : (uint64_t)i);
        } else {
            uint64_t k = trnd() % 4, popped;
            int max = op == 9;
            collect c = {0};
            assert_int_equal(
                pk_zset_pop(t, 1, S("z"), max, k, NOW, collect_z, &c, &popped),
                0);
            assert_int_equal(popped, k < (uint64_t)n ? k : (uint64_t)n);
            if (max) {
                n -= (int)popped;
            } else {
                memmove(model, model + popped,
                        (size_t)(n - (int)popped) * sizeof(*model));
                n -= (int)popped;
            }
        }
    }
    pk_txn_abort(t);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_rank_count),
        T(test_pop),
        T(test_remrange_rangestore),
        T(test_combine),
        T(test_scan_cursors),
        T(test_hsetnx_incrbyfloat),
        T(test_model),
        T(test_combine_empty_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

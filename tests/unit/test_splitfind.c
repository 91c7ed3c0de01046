/*
 * Tests of the load split finder (core/pk_splitfind.c): a uniform load
 * splits near its median with a small balance; a skewed load splits where
 * it divides; monotonic keys, a single hot key and full-range scans
 * yield no split and say why; nothing is suggested too early or on too
 * few requests; long keys are truncated to a valid split point; a fixed
 * seed gives a fixed answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_splitfind.h"

#define T0 1000000u
#define LATER (T0 + 6000u)

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Records a point request at key:%08u. */
static void point(pk_splitfind *f, unsigned v)
{
    char k[32];
    int n = snprintf(k, sizeof(k), "key:%08u", v);

    pk_splitfind_record(f, k, (size_t)n, NULL, 0);
}

/* Records n point requests uniform over key:0 .. key:999999. */
static void uniform_points(pk_splitfind *f, int n, uint64_t *s)
{
    for (int i = 0; i < n; i++) {
        point(f, (unsigned)(rnd(s) % 1000000));
    }
}

/* The number in a key:%08u split key. */
static unsigned key_num(const pk_splitfind_result *r)
{
    char k[32];
    unsigned v = 0;

    assert_true(r->len < sizeof(k));
    memcpy(k, r->key, r->len);
    k[r->len] = '\0';
    assert_int_equal(sscanf(k, "key:%u", &v), 1);
    return v;
}

static void uniform(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 88172645463325252ull;
    unsigned v;

    (void)state;
    pk_splitfind_init(&f, T0, 0, 0, 42);
    uniform_points(&f, 20000, &s);
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_FOUND);
    assert_true(r.balance < PK_SPLITFIND_BALANCE_MAX);
    v = key_num(&r);
    /* A balance below 0.25 puts the key between the 37.5th and 62.5th
     * percentiles of a uniform load. */
    assert_true(v > 375000 && v < 625000);
    assert_true(r.contained == 0.0);
}

static void skewed(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 2463534242ull;

    (void)state;
    /* 90 % of requests in [0, 100000), the rest spread to 1M: the split
     * falls inside the busy tenth. */
    pk_splitfind_init(&f, T0, 0, 0, 7);
    for (int i = 0; i < 20000; i++) {
        unsigned v = rnd(&s) % 10 ? (unsigned)(rnd(&s) % 100000)
                                  : (unsigned)(rnd(&s) % 1000000);
        point(&f, v);
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_FOUND);
    assert_true(key_num(&r) < 100000);
}

static void increasing(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;

    (void)state;
    pk_splitfind_init(&f, T0, 0, 0, 1);
    for (unsigned i = 0; i < 20000; i++) {
        point(&f, i); /* a timestamp: every write after the last */
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_INCREASING);
    assert_string_equal(pk_splitfind_reason(r.verdict), "increasing");
    assert_null(r.key);

    pk_splitfind_init(&f, T0, 0, 0, 1);
    for (unsigned i = 20000; i-- > 0;) {
        point(&f, i);
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_DECREASING);
}

static void hot_key(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 99991ull;

    (void)state;
    pk_splitfind_init(&f, T0, 0, 0, 3);
    for (int i = 0; i < 20000; i++) {
        /* 95 % one counter, the rest anywhere */
        point(&f, rnd(&s) % 20 ? 500000u : (unsigned)(rnd(&s) % 1000000));
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_HOT_KEY);
    assert_int_equal(key_num(&r), 500000);
    assert_string_equal(pk_splitfind_reason(r.verdict), "hot key");
}

static void scans(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 123456789ull;

    (void)state;
    pk_splitfind_init(&f, T0, 0, 0, 5);
    for (int i = 0; i < 20000; i++) {
        if (rnd(&s) % 20) {
            pk_splitfind_record(&f, "", 0, "", 0); /* the whole range */
        } else {
            point(&f, (unsigned)(rnd(&s) % 1000000));
        }
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_SPANNING);
}

static void spans_inside(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 555ull;
    char a[32], b[32];

    (void)state;
    /* Short scans of 10 keys each: few are cut, a split is found. */
    pk_splitfind_init(&f, T0, 0, 0, 9);
    for (int i = 0; i < 20000; i++) {
        unsigned v = (unsigned)(rnd(&s) % 1000000);
        int na = snprintf(a, sizeof(a), "key:%08u", v);
        int nb = snprintf(b, sizeof(b), "key:%08u", v + 10);

        pk_splitfind_record(&f, a, (size_t)na, b, (size_t)nb);
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_FOUND);
    assert_true(r.contained < 0.01);
}

static void waits(void **state)
{
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 77ull;

    (void)state;
    pk_splitfind_init(&f, T0, 2000, 500, 11);
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_WAIT); /* nothing recorded */
    uniform_points(&f, 200, &s);
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_WAIT); /* < 500 per sample */
    uniform_points(&f, 5000, &s);
    pk_splitfind_key(&f, T0 + 1999, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_WAIT); /* too early */
    pk_splitfind_key(&f, T0 + 2000, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_FOUND);
    assert_string_equal(pk_splitfind_reason(PK_SPLITFIND_WAIT), "wait");
}

static void long_keys(void **state)
{
    static uint8_t k[2 * PK_SPLITFIND_KEY_MAX];
    pk_splitfind f;
    pk_splitfind_result r;
    uint64_t s = 31337ull;

    (void)state;
    /* Keys longer than the sample keeps, differing in their first bytes:
     * the split key is a prefix of one of them, still between the two
     * halves of the load. */
    memset(k, 'x', sizeof(k));
    pk_splitfind_init(&f, T0, 0, 0, 13);
    for (int i = 0; i < 20000; i++) {
        unsigned v = (unsigned)(rnd(&s) % 1000000);

        snprintf((char *)k, 16, "%08u", v);
        k[8] = 'x';
        pk_splitfind_record(&f, k, sizeof(k), NULL, 0);
    }
    pk_splitfind_key(&f, LATER, &r);
    assert_int_equal(r.verdict, PK_SPLITFIND_FOUND);
    assert_int_equal(r.len, PK_SPLITFIND_KEY_MAX);
    assert_true(memcmp(r.key, "00375000", 8) > 0 &&
                memcmp(r.key, "00625000", 8) < 0);
}

static void deterministic(void **state)
{
    pk_splitfind a, b;
    pk_splitfind_result ra, rb;
    uint64_t s1 = 4242ull, s2 = 4242ull;

    (void)state;
    pk_splitfind_init(&a, T0, 0, 0, 99);
    pk_splitfind_init(&b, T0, 0, 0, 99);
    uniform_points(&a, 5000, &s1);
    uniform_points(&b, 5000, &s2);
    pk_splitfind_key(&a, LATER, &ra);
    pk_splitfind_key(&b, LATER, &rb);
    assert_int_equal(ra.verdict, rb.verdict);
    assert_int_equal(ra.len, rb.len);
    assert_memory_equal(ra.key, rb.key, ra.len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uniform),       cmocka_unit_test(skewed),
        cmocka_unit_test(increasing),    cmocka_unit_test(hot_key),
        cmocka_unit_test(scans),         cmocka_unit_test(spans_inside),
        cmocka_unit_test(waits),         cmocka_unit_test(long_keys),
        cmocka_unit_test(deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

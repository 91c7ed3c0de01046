/*
 * pk_hll: known answers taken from redis-server 7.0 (the bytes of a
 * sparse value, PFCOUNT of given inputs), the dense codec round trip,
 * and the corruption cases the commands report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"

static uint8_t reg[PK_HLL_REGS], reg2[PK_HLL_REGS];
static uint8_t enc[PK_HLL_DENSE_LEN];

static void add_range(uint8_t *r, int from, int to)
{
    char buf[16];

    for (int i = from; i <= to; i++) {
        int n = snprintf(buf, sizeof(buf), "%d", i);
        pk_hll_add(r, buf, (size_t)n);
    }
}

static void redis_bytes(void **state)
{
    /* PFADD h a b c on redis-server, then GET h. */
    static const uint8_t want[] = "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00"
                                  "\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80"
                                  "BZ";
    size_t n;

    (void)state;
    memset(reg, 0, sizeof(reg));
    assert_int_equal(pk_hll_add(reg, "a", 1), 1);
    assert_int_equal(pk_hll_add(reg, "b", 1), 1);
    assert_int_equal(pk_hll_add(reg, "c", 1), 1);
    assert_int_equal(pk_hll_add(reg, "a", 1), 0);
    n = pk_hll_encode(reg, 1, 0, 0, enc);
    assert_int_equal(n, sizeof(want) - 1);
    assert_memory_equal(enc, want, n);
    assert_int_equal(pk_hll_count(reg), 3);
}

static void redis_counts(void **state)
{
    (void)state;
    memset(reg, 0, sizeof(reg));
    add_range(reg, 1, 100);
    assert_int_equal(pk_hll_count(reg), 100);
    memset(reg, 0, sizeof(reg));
    add_range(reg, 1, 20000);
    assert_int_equal(pk_hll_count(reg), 19891);
    memset(reg, 0, sizeof(reg));
    assert_int_equal(pk_hll_count(reg), 0);
    assert_int_equal(pk_hll_murmur64a("", 0, 0), 0);
}

static void dense_round_trip(void **state)
{
    size_t n;
    uint64_t card = 0;

    (void)state;
    for (unsigned i = 0; i < PK_HLL_REGS; i++) {
        reg[i] = (uint8_t)((i * 37u) % 52u);
    }
    n = pk_hll_encode(reg, 1, 1234, 1, enc); /* values > 32: dense */
    assert_int_equal(n, PK_HLL_DENSE_LEN);
    assert_int_equal(enc[4], 0);
    assert_int_equal(pk_hll_decode(enc, n, reg2), 0);
    assert_memory_equal(reg, reg2, sizeof(reg));
    assert_int_equal(pk_hll_cached(enc, &card), 1);
    assert_int_equal(card, 1234);
    n = pk_hll_encode(reg, 0, 0, 0, enc);
    assert_int_equal(pk_hll_cached(enc, &card), 0);
    /* Sparse round trip; a merge takes the larger register. */
    memset(reg, 0, sizeof(reg));
    add_range(reg, 1, 300);
    n = pk_hll_encode(reg, 1, 0, 0, enc);
    assert_true(n < PK_HLL_SPARSE_MAX);
    assert_int_equal(pk_hll_decode(enc, n, reg2), 0);
    assert_memory_equal(reg, reg2, sizeof(reg));
    memset(reg2, 0, sizeof(reg2));
    add_range(reg2, 200, 600);
    pk_hll_merge(reg, reg2);
    memset(reg2, 0, sizeof(reg2));
    add_range(reg2, 1, 600);
    assert_memory_equal(reg, reg2, sizeof(reg));
}

static void bad_values(void **state)
{
    size_t n;

    (void)state;
    memset(reg, 0, sizeof(reg));
    pk_hll_add(reg, "a", 1);
    n = pk_hll_encode(reg, 1, 0, 0, enc);
    assert_int_equal(pk_hll_decode(enc, 3, reg2), PK_EINVAL);
    enc[0] = 'X';
    assert_int_equal(pk_hll_decode(enc, n, reg2), PK_EINVAL);
    enc[0] = 'H';
    enc[4] = 2;
    assert_int_equal(pk_hll_decode(enc, n, reg2), PK_EINVAL);
    enc[4] = 0; /* dense but short */
    assert_int_equal(pk_hll_decode(enc, n, reg2), PK_EINVAL);
    enc[4] = 1;
    assert_int_equal(pk_hll_decode(enc, n - 1, reg2), PK_ECORRUPT);
    enc[n] = 0x3f; /* 64 more zero registers than there are */
    assert_int_equal(pk_hll_decode(enc, n + 1, reg2), PK_ECORRUPT);
    enc[n] = 0x40; /* an XZERO cut in half */
    assert_int_equal(pk_hll_decode(enc, n + 1, reg2), PK_ECORRUPT);
    assert_int_equal(pk_hll_decode(enc, n, reg2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(redis_bytes),
        cmocka_unit_test(redis_counts),
        cmocka_unit_test(dense_round_trip),
        cmocka_unit_test(bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

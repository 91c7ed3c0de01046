/*
 * The string store functions added for Redis 7.0's string and bit
 * commands (pk_str.h, pk_bits.h) against a real LMDB environment: their
 * edge cases, that errors write nothing, that each command is one change
 * record (none when nothing changes), that a follower applying the log
 * ends byte-identical, and the pure bit arithmetic against a naive model.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_bits.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_str.h"
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

static pk_store *st_of(void **state)
{
    return ((tstore *)*state)->s;
}

static void set(pk_txn *t, const char *k, const void *v, size_t n)
{
    int done = 0;

    assert_int_equal(pk_str_set(t, 0, S(k), v, n, NULL, NOW, &done, NULL), 0);
    assert_int_equal(done, 1);
}

/* Asserts the string at k: v NULL means missing. */
static void expect(pk_txn *t, const char *k, const void *v, size_t n)
{
    pk_slice got;
    int rc = pk_str_get(t, 0, S(k), NOW, &got);

    if (v == NULL) {
        assert_int_equal(rc, PK_ENOTFOUND);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(got.len, n);
    assert_memory_equal(got.ptr, v, n);
}

static uint64_t log_last(pk_txn *t)
{
    pk_part_stats ps;

    assert_int_equal(pk_store_part_stats(t, 0, &ps), 0);
    return ps.log_last;
}

static void hash(pk_txn *t, const char *k)
{
    pk_slice f = {"f", 1}, v = {"v", 1};
    uint64_t added;

    assert_int_equal(pk_hmap_set(t, 0, S(k), 1, &f, &v, NOW, &added), 0);
}

static void test_getex(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_slice v;
    int64_t ttl;
    uint64_t seq;

    set(t, "k", S("v"));
    /* Committed: a later write of k in the same transaction would take
     * the place of its record (pk__log_coalesce, tested in test_log). */
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(st_of(state));
    seq = log_last(t);
    /* No change, no record. */
    assert_int_equal(pk_str_getex(t, 0, S("k"), PK_GETEX_KEEP, 0, NOW, &v), 0);
    assert_int_equal(pk_str_getex(t, 0, S("k"), PK_GETEX_PERSIST, 0, NOW, &v),
                     0);
    assert_int_equal(log_last(t), seq);
    assert_int_equal(
        pk_str_getex(t, 0, S("k"), PK_GETEX_AT, NOW + 5000, NOW, &v), 0);
    assert_int_equal(v.len, 1);
    assert_memory_equal(v.ptr, "v", 1);
    assert_int_equal(log_last(t), seq + 1);
    assert_int_equal(pk_key_pttl(t, 0, S("k"), NOW, &ttl), 0);
    assert_int_equal(ttl, 5000);
    assert_int_equal(pk_str_getex(t, 0, S("k"), PK_GETEX_PERSIST, 0, NOW, &v),
                     0);
    assert_int_equal(pk_key_pttl(t, 0, S("k"), NOW, &ttl), 0);
    assert_int_equal(ttl, -1);
    /* A time in the past deletes the key but still answers its value. */
    assert_int_equal(pk_str_getex(t, 0, S("k"), PK_GETEX_AT, NOW, NOW, &v), 0);
    assert_memory_equal(v.ptr, "v", 1);
    expect(t, "k", NULL, 0);
    assert_int_equal(pk_str_getex(t, 0, S("k"), PK_GETEX_KEEP, 0, NOW, &v),
                     PK_ENOTFOUND);
    hash(t, "h");
    assert_int_equal(pk_str_getex(t, 0, S("h"), PK_GETEX_AT, NOW + 1, NOW, &v),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_str_getex(t, 0, S("h"), PK_GETEX_AT, 0, NOW, &v),
                     PK_EINVAL);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_msetnx(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_slice kv[] = {{"a", 1}, {"1", 1}, {"b", 1}, {"2", 1}};
    uint32_t same[] = {0, 0}, apart[] = {0, 7};
    uint64_t seq;
    int done = -1;

    seq = log_last(t);
    assert_int_equal(pk_str_msetnx(t, same, kv, 2, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(log_last(t), seq + 1); /* one record for both */
    expect(t, "a", S("1"));
    expect(t, "b", S("2"));
    kv[1] = (pk_slice){"x", 1};
    assert_int_equal(pk_str_msetnx(t, same, kv, 2, NOW, &done), 0);
    assert_int_equal(done, 0);
    expect(t, "a", S("1"));
    /* Keys of several partitions (one node's keyspace). */
    kv[0] = (pk_slice){"c", 1};
    kv[2] = (pk_slice){"d", 1};
    assert_int_equal(pk_str_msetnx(t, apart, kv, 2, NOW, &done), 0);
    assert_int_equal(done, 1);
    /* A key longer than LMDB's key limit is stored by digest. */
    {
        char big[2048];
        memset(big, 'k', sizeof(big));
        kv[0] = (pk_slice){"e", 1};
        kv[2] = (pk_slice){big, sizeof(big)};
        assert_int_equal(pk_str_msetnx(t, same, kv, 2, NOW, &done), 0);
        assert_int_equal(done, 1);
        expect(t, "e", S("x"));
    }
    assert_int_equal(pk_txn_commit(t), 0);
}

static void expect_float(pk_txn *t, const char *k, const char *by,
                         const char *want)
{
    pk_slice v;

    assert_int_equal(pk_str_incrbyfloat(t, 0, S(k), S(by), NOW, &v), 0);
    assert_int_equal(v.len, strlen(want));
    assert_memory_equal(v.ptr, want, v.len);
    expect(t, k, want, strlen(want));
}

static void test_incrbyfloat(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_slice v;

    set(t, "f", S("10.50"));
    expect_float(t, "f", "0.1", "10.6");
    expect_float(t, "f", "-10.6", "0");
    expect_float(t, "n", "3", "3");
    expect_float(t, "n", "5.0e3", "5003");
    expect_float(t, "z", "1.5e-10", "0.00000000015");
    expect_float(t, "z", "-1.5e-10", "0");
    set(t, "s", S(" 1"));
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("s"), S("1"), NOW, &v),
                     PK_STORE_NOTFLOAT);
    set(t, "s", "1\0002", 3);
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("s"), S("1"), NOW, &v),
                     PK_STORE_NOTFLOAT);
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("f"), S("abc"), NOW, &v),
                     PK_STORE_NOTFLOAT);
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("f"), S(""), NOW, &v),
                     PK_STORE_NOTFLOAT);
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("f"), S("nan"), NOW, &v),
                     PK_STORE_NOTFLOAT);
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("f"), S("inf"), NOW, &v),
                     PK_STORE_NANINF);
    set(t, "g", S("1e4932"));
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("g"), S("1e4932"), NOW, &v),
                     PK_STORE_NANINF);
    expect(t, "g", S("1e4932"));
    hash(t, "h");
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("h"), S("abc"), NOW, &v),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_setrange(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    uint64_t len = 99, seq;

    set(t, "k", S("hello"));
    assert_int_equal(pk_str_setrange(t, 0, S("k"), 1, S("ipp"), NOW, &len), 0);
    assert_int_equal(len, 5);
    expect(t, "k", S("hippo"));
    assert_int_equal(pk_str_setrange(t, 0, S("k"), 7, S("!"), NOW, &len), 0);
    assert_int_equal(len, 8);
    expect(t, "k", "hippo\0\0!", 8);
    seq = log_last(t);
    assert_int_equal(pk_str_setrange(t, 0, S("k"), 1u << 30, "", 0, NOW, &len),
                     0);
    assert_int_equal(len, 8);
    assert_int_equal(
        pk_str_setrange(t, 0, S("new"), 1u << 30, "", 0, NOW, &len), 0);
    assert_int_equal(len, 0);
    expect(t, "new", NULL, 0);
    assert_int_equal(log_last(t), seq);
    /* Beyond 512 MB: refused before anything is allocated. */
    assert_int_equal(
        pk_str_setrange(t, 0, S("k"), PK_STORE_VALUE_MAX, S("x"), NOW, &len),
        PK_STORE_TOOBIG);
    assert_int_equal(
        pk_str_setrange(t, 0, S("k"), UINT64_MAX / 2, S("x"), NOW, &len),
        PK_STORE_TOOBIG);
    assert_int_equal(pk_str_setrange(t, 0, S("k"), PK_STORE_VALUE_MAX - 1,
                                     S("xy"), NOW, &len),
                     PK_STORE_TOOBIG);
    hash(t, "h");
    assert_int_equal(pk_str_setrange(t, 0, S("h"), 0, S("x"), NOW, &len),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(log_last(t), seq + 1); /* the HSET */
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_setbit(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    int old = -1;
    uint64_t seq;

    assert_int_equal(pk_bits_setbit(t, 0, S("b"), 7, 1, NOW, &old), 0);
    assert_int_equal(old, 0);
    expect(t, "b", "\x01", 1);
    seq = log_last(t);
    assert_int_equal(pk_bits_setbit(t, 0, S("b"), 7, 1, NOW, &old), 0);
    assert_int_equal(old, 1);
    assert_int_equal(log_last(t), seq); /* unchanged: no record */
    assert_int_equal(pk_bits_setbit(t, 0, S("b"), 8, 0, NOW, &old), 0);
    expect(t, "b", "\x01\x00", 2); /* growing is a change */
    assert_int_equal(pk_bits_setbit(t, 0, S("z"), 3, 0, NOW, &old), 0);
    expect(t, "z", "\x00", 1); /* and so is creating */
    assert_int_equal(
        pk_bits_setbit(t, 0, S("b"), PK_BITS_OFFSET_MAX, 1, NOW, &old),
        PK_EINVAL);
    assert_int_equal(pk_bits_setbit(t, 0, S("b"), 1, 2, NOW, &old), PK_EINVAL);
    hash(t, "h");
    assert_int_equal(pk_bits_setbit(t, 0, S("h"), 1, 1, NOW, &old),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* The naive model: one bit at a time. */
static int64_t naive_count(const uint8_t *p, size_t len, int64_t b0, int64_t b1)
{
    int64_t n = 0;

    for (int64_t i = b0; i <= b1; i++) {
        n += pk_bits_get(p, len, (uint64_t)i);
    }
    return n;
}

/* Clamps a range like Redis (for the model). */
static int naive_clamp(int64_t tot, int64_t *s, int64_t *e)
{
    if (*s < 0) {
        *s = *s + tot < 0 ? 0 : *s + tot;
    }
    if (*e < 0) {
        *e = *e + tot < 0 ? 0 : *e + tot;
    }
    if (*e >= tot) {
        *e = tot - 1;
    }
    return *s <= *e;
}

static void test_count_pos_model(void **state)
{
    uint8_t p[24];

    (void)state;
    for (int round = 0; round < 3000; round++) {
        size_t len = trnd() % sizeof(p);
        int isbit = (int)(trnd() & 1), bit = (int)(trnd() & 1);
        int64_t tot = (int64_t)len * (isbit ? 8 : 1);
        int64_t s = (int64_t)(trnd() % 64) - 32,
                e = (int64_t)(trnd() % 64) - 32;
        int64_t cs = s, ce = e, want, pos = -1;
        for (size_t i = 0; i < len; i++) {
            /* Mostly runs of 0x00 / 0xff, so the byte skips get used. */
            uint32_t r = trnd() % 4;
            p[i] = r == 0 ? 0 : r == 1 ? 0xff : (uint8_t)trnd();
        }
        if (s < 0 && e < 0 && s > e) {
            want = 0;
        } else if (naive_clamp(tot, &cs, &ce)) {
            want = naive_count(p, len, isbit ? cs : cs * 8,
                               isbit ? ce : ce * 8 + 7);
        } else {
            want = 0;
        }
        assert_int_equal(pk_bits_count(p, len, s, e, isbit), want);
        cs = s, ce = e;
        if (naive_clamp(tot, &cs, &ce)) {
            int64_t b0 = isbit ? cs : cs * 8, b1 = isbit ? ce : ce * 8 + 7;
            for (int64_t i = b0; i <= b1 && pos < 0; i++) {
                if (pk_bits_get(p, len, (uint64_t)i) == bit) {
                    pos = i;
                }
            }
            if (pos < 0 && bit == 0) {
                assert_int_equal(pk_bits_pos(p, len, 0, s, e, 0, isbit),
                                 b1 + 1);
            }
        }
        assert_int_equal(pk_bits_pos(p, len, bit, s, e, 1, isbit), pos);
    }
}

static pk_bitfield_op bf(int opcode, int sign, int bits, uint64_t off,
                         int64_t arg, int ow)
{
    pk_bitfield_op op = {off,         arg,           (uint8_t)opcode,
                         (uint8_t)ow, (uint8_t)bits, (uint8_t)sign};

    return op;
}

static void test_bitfield(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_bitfield_res r[8];
    pk_bitfield_op ops[8];
    uint64_t seq;

    /* GETs of a missing key read zeros and create nothing. */
    ops[0] = bf(PK_BF_GET, 1, 8, 0, 0, PK_BF_WRAP);
    assert_int_equal(pk_bits_bitfield(t, 0, S("f"), ops, 1, NOW, r), 0);
    assert_int_equal(r[0].v, 0);
    expect(t, "f", NULL, 0);
    ops[0] = bf(PK_BF_SET, 1, 8, 0, 100, PK_BF_WRAP);
    ops[1] = bf(PK_BF_INCRBY, 1, 8, 0, 100, PK_BF_WRAP);
    ops[2] = bf(PK_BF_INCRBY, 1, 8, 0, 100, PK_BF_SAT);
    ops[3] = bf(PK_BF_INCRBY, 1, 8, 0, 1, PK_BF_FAIL);
    ops[4] = bf(PK_BF_GET, 0, 4, 0, 0, PK_BF_WRAP);
    ops[5] = bf(PK_BF_SET, 0, 8, 0, -1, PK_BF_SAT);
    ops[6] = bf(PK_BF_SET, 0, 8, 0, -1, PK_BF_FAIL);
    ops[7] = bf(PK_BF_GET, 1, 64, 0, 0, PK_BF_WRAP);
    assert_int_equal(pk_bits_bitfield(t, 0, S("f"), ops, 8, NOW, r), 0);
    assert_int_equal(r[0].v, 0);
    assert_int_equal(r[1].v, -56); /* 200 wraps */
    assert_int_equal(r[2].v, 44);  /* -56 + 100 */
    assert_int_equal(r[3].v, 45);
    assert_int_equal(r[4].v, 2);  /* 0x2d: top nibble */
    assert_int_equal(r[5].v, 45); /* old value; stores 255 */
    assert_true(r[6].nil);        /* FAIL: nothing stored */
    assert_int_equal(r[7].v, (int64_t)0xff00000000000000ull);
    expect(t, "f", "\xff", 1);
    /* i64 edges. */
    ops[0] = bf(PK_BF_SET, 1, 64, 0, INT64_MIN, PK_BF_WRAP);
    ops[1] = bf(PK_BF_INCRBY, 1, 64, 0, -1, PK_BF_WRAP);
    ops[2] = bf(PK_BF_INCRBY, 1, 64, 0, 1, PK_BF_SAT);
    ops[3] = bf(PK_BF_INCRBY, 1, 64, 0, INT64_MAX, PK_BF_FAIL);
    assert_int_equal(pk_bits_bitfield(t, 0, S("g"), ops, 4, NOW, r), 0);
    assert_int_equal(r[1].v, INT64_MAX);
    assert_int_equal(r[2].v, INT64_MAX);
    assert_true(r[3].nil);
    /* A failing write still pads the string, as Redis does. */
    ops[0] = bf(PK_BF_INCRBY, 0, 2, 100, 5, PK_BF_FAIL);
    assert_int_equal(pk_bits_bitfield(t, 0, S("p"), ops, 1, NOW, r), 0);
    assert_true(r[0].nil);
    expect(t, "p", "\0\0\0\0\0\0\0\0\0\0\0\0\0", 13);
    /* Nothing changes: no record. */
    seq = log_last(t);
    ops[0] = bf(PK_BF_SET, 0, 2, 100, 0, PK_BF_WRAP);
    assert_int_equal(pk_bits_bitfield(t, 0, S("p"), ops, 1, NOW, r), 0);
    assert_int_equal(log_last(t), seq);
    /* Malformed ops and huge offsets. */
    ops[0] = bf(PK_BF_GET, 0, 64, 0, 0, PK_BF_WRAP);
    assert_int_equal(pk_bits_bitfield(t, 0, S("p"), ops, 1, NOW, r), PK_EINVAL);
    ops[0] = bf(PK_BF_SET, 1, 8, PK_BITS_OFFSET_MAX - 4, 1, PK_BF_WRAP);
    assert_int_equal(pk_bits_bitfield(t, 0, S("p"), ops, 1, NOW, r),
                     PK_STORE_TOOBIG);
    hash(t, "h");
    ops[0] = bf(PK_BF_GET, 1, 8, 0, 0, PK_BF_WRAP);
    assert_int_equal(pk_bits_bitfield(t, 0, S("h"), ops, 1, NOW, r),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_bitop(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_bitop_src src[3] = {{0, {"a", 1}}, {5, {"b", 1}}, {0, {"none", 4}}};
    uint64_t len = 0;
    int64_t ttl;
    int done;

    set(t, "a", "\x0f\xf0\x55", 3);
    assert_int_equal(
        pk_str_set(t, 5, S("b"), "\xff\x0f", 2, NULL, NOW, &done, NULL), 0);
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_AND, 0, S("d"), src, 3, NOW, &len), 0);
    assert_int_equal(len, 3);
    expect(t, "d", "\0\0\0", 3);
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_AND, 0, S("d"), src, 2, NOW, &len), 0);
    expect(t, "d", "\x0f\x00\x00", 3);
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_OR, 0, S("d"), src, 2, NOW, &len), 0);
    expect(t, "d", "\xff\xff\x55", 3);
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_XOR, 0, S("d"), src, 2, NOW, &len), 0);
    expect(t, "d", "\xf0\xff\x55", 3);
    /* The destination may be a source; its expiry goes. */
    assert_int_equal(pk_key_expire(t, 0, S("a"), NOW + 9000, 0, NOW, &done), 0);
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_NOT, 0, S("a"), src, 1, NOW, &len), 0);
    expect(t, "a", "\xf0\x0f\xaa", 3);
    assert_int_equal(pk_key_pttl(t, 0, S("a"), NOW, &ttl), 0);
    assert_int_equal(ttl, -1);
    /* An empty result deletes the destination, whatever it held. */
    hash(t, "h");
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_OR, 0, S("h"), src + 2, 1, NOW, &len), 0);
    assert_int_equal(len, 0);
    expect(t, "h", NULL, 0);
    hash(t, "h");
    src[2] = (pk_bitop_src){0, {"h", 1}};
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_OR, 0, S("d"), src, 3, NOW, &len),
        PK_STORE_WRONGTYPE);
    expect(t, "d", "\xf0\xff\x55", 3);
    assert_int_equal(
        pk_bits_bitop(t, PK_BITOP_NOT, 0, S("d"), src, 2, NOW, &len),
        PK_EINVAL);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* The change records of all of the above replay to identical data. */
static void test_replay(void **state)
{
    tstore *b = tstore_new();
    pk_txn *t = wtxn(st_of(state)), *tb;
    pk_bitfield_op op = bf(PK_BF_INCRBY, 1, 13, 3, 77, PK_BF_WRAP);
    pk_bitfield_res r;
    uint64_t len;
    pk_slice v;
    int old;
    tship sh = {NULL, 0, 0, 0};

    assert_non_null(b);
    set(t, "k", S("hello"));
    assert_int_equal(pk_str_setrange(t, 0, S("k"), 9, S("xyz"), NOW, &len), 0);
    assert_int_equal(pk_bits_setbit(t, 0, S("k"), 100, 1, NOW, &old), 0);
    assert_int_equal(pk_bits_bitfield(t, 0, S("k"), &op, 1, NOW, &r), 0);
    assert_int_equal(pk_str_incrbyfloat(t, 0, S("f"), S("2.5"), NOW, &v), 0);
    assert_int_equal(
        pk_str_getex(t, 0, S("f"), PK_GETEX_AT, NOW + 100, NOW, &v), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(st_of(state));
    tb = wtxn(b->s);
    sh.t = tb;
    assert_int_equal(pk_store_log_read(t, 0, 1, tship_cb, &sh), 0);
    assert_int_equal(pk_txn_commit(tb), 0);
    pk_txn_abort(t);
    assert_int_equal(tstore_same(st_of(state), b->s, 0), 0);
    tstore_free(b);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_getex),    T(test_msetnx), T(test_incrbyfloat),
        T(test_setrange), T(test_setbit), T(test_count_pos_model),
        T(test_bitfield), T(test_bitop),  T(test_replay),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The store's commands against a real LMDB environment in a temporary
 * directory: every string, hash, sorted-set and generic command with its
 * Redis edge cases, TTLs under a controlled clock (lazy and active
 * expiry), counters, SCAN, group commit, sticky errors and reopening.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_store_int.h"
#include "store/pk_store_part.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
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

static pk_store *st_of(void **state)
{
    return ((tstore *)*state)->s;
}

/* SET without options; asserts success. */
static void set(pk_txn *t, uint32_t part, const char *k, const char *v)
{
    int done = 0;

    assert_int_equal(pk_str_set(t, part, S(k), S(v), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(done, 1);
}

/* Asserts GET's result: v NULL means missing. */
static void expect_get(pk_txn *t, uint32_t part, const char *k, const char *v,
                       uint64_t now)
{
    pk_slice got;
    int rc = pk_str_get(t, part, S(k), now, &got);

    if (v == NULL) {
        assert_int_equal(rc, PK_ENOTFOUND);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(got.len, strlen(v));
    assert_memory_equal(got.ptr, v, got.len);
}

/* Appends raw bytes (NULs included). */
static void put_bytes(collect *c, const void *p, size_t n)
{
    assert_true(c->len + n < sizeof(c->buf));
    memcpy(c->buf + c->len, p, n);
    c->len += n;
}

static int collect_h(void *ctx, pk_slice f, pk_slice v)
{
    collect *c = ctx;

    put_bytes(c, f.ptr, f.len);
    put_bytes(c, "=", 1);
    put_bytes(c, v.ptr, v.len);
    put_bytes(c, " ", 1);
    c->n++;
    return 0;
}

static void zadd1(pk_txn *t, uint32_t part, const char *k, double s,
                  const char *m)
{
    pk_slice mem = {m, strlen(m)};
    pk_zadd_result r;

    assert_int_equal(pk_zset_add(t, part, S(k), 0, 1, &s, &mem, NOW, &r), 0);
}

static void hset1(pk_txn *t, uint32_t part, const char *k, const char *f,
                  const char *v)
{
    pk_slice fs = {f, strlen(f)}, vs = {v, strlen(v)};
    uint64_t added;

    assert_int_equal(pk_hmap_set(t, part, S(k), 1, &fs, &vs, NOW, &added), 0);
}

static const char *zrank(pk_txn *t, const char *k, int64_t a, int64_t b,
                         int rev, collect *c)
{
    memset(c, 0, sizeof(*c));
    assert_int_equal(
        pk_zset_range_rank(t, 1, S(k), a, b, rev, NOW, collect_z, c), 0);
    return c->buf;
}

static const char *zscore_range(pk_txn *t, const char *k, const char *min,
                                const char *max, int rev, int64_t off,
                                int64_t cnt, collect *c)
{
    pk_zbound lo, hi;

    memset(c, 0, sizeof(*c));
    assert_int_equal(pk_zbound_parse(S(min), &lo), 0);
    assert_int_equal(pk_zbound_parse(S(max), &hi), 0);
    assert_int_equal(pk_zset_range_score(t, 1, S(k), &lo, &hi, rev, off, cnt,
                                         NOW, collect_z, c),
                     0);
    return c->buf;
}

static const char *zlex_range(pk_txn *t, const char *k, const char *min,
                              const char *max, int rev, int64_t off,
                              int64_t cnt, collect *c)
{
    pk_zlex lo, hi;

    memset(c, 0, sizeof(*c));
    assert_int_equal(pk_zlex_parse(S(min), &lo), 0);
    assert_int_equal(pk_zlex_parse(S(max), &hi), 0);
    assert_int_equal(pk_zset_range_lex(t, 1, S(k), &lo, &hi, rev, off, cnt, NOW,
                                       collect_z, c),
                     0);
    return c->buf;
}

static void test_reopen_keeps_data(void **state)
{
    tstore *ts = *state;
    pk_txn *t = wtxn(ts->s);

    set(t, 3, "k", "v");
    hset1(t, 3, "h", "f", "x");
    zadd1(t, 3, "z", 2.5, "m");
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(tstore_reopen(ts), 0);
    t = rtxn(ts->s);
    expect_get(t, 3, "k", "v", NOW);
    double sc;
    assert_int_equal(pk_zset_score(t, 3, S("z"), S("m"), NOW, &sc), 0);
    assert_true(sc == 2.5);
    pk_slice v;
    assert_int_equal(pk_hmap_get(t, 3, S("h"), S("f"), NOW, &v), 0);
    assert_memory_equal(v.ptr, "x", 1);
    pk_txn_abort(t);
}

/* pk_store_prefault runs ahead of the map's last page by what it is
 * asked, once, and what is written there afterwards reads back. */
static void test_prefault(void **state)
{
    tstore *ts = *state;
    char key[32], val[200];
    int64_t n = pk_store_prefault(ts->s, 1 << 20);
    pk_txn *t;

    if (n == PK_EINVAL)
        skip(); /* a kernel before 5.14 */
    assert_true(n >= (1 << 20) - 4096 && n <= 1 << 20);
    assert_int_equal(pk_store_prefault(ts->s, 1 << 20), 0);
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = 0;
    t = wtxn(ts->s);
    for (int i = 0; i < 4000; i++) { /* ~1 MiB: into the faulted pages */
        snprintf(key, sizeof(key), "k%d", i);
        set(t, (uint32_t)i % 7, key, val);
    }
    assert_int_equal(pk_txn_commit(t), 0);
    assert_true(pk_store_prefault(ts->s, 1 << 20) > 0); /* ahead again */
    assert_int_equal(tstore_reopen(ts), 0);
    t = rtxn(ts->s);
    for (int i = 0; i < 4000; i += 97) {
        snprintf(key, sizeof(key), "k%d", i);
        expect_get(t, (uint32_t)i % 7, key, val, NOW);
    }
    pk_txn_abort(t);
}

static void test_group_commit(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s), *t2 = NULL, *r;
    char k[32];
    uint64_t n;

    /* One write transaction at a time. */
    assert_int_equal(pk_txn_begin(s, 0, &t2), PK_EBUSY);
    for (int i = 0; i < 600; i++) {
        snprintf(k, sizeof(k), "key%d", i);
        set(t, (uint32_t)i % 17, k, k);
    }
    /* A reader does not see uncommitted writes. */
    r = rtxn(s);
    assert_int_equal(pk_store_dbsize(r, &n), 0);
    assert_int_equal(n, 0);
    pk_txn_abort(r);
    assert_int_equal(pk_txn_commit(t), 0);
    r = rtxn(s);
    assert_int_equal(pk_store_dbsize(r, &n), 0);
    assert_int_equal(n, 600);
    expect_get(r, 599 % 17, "key599", "key599", NOW);
    pk_txn_abort(r);
    /* An aborted group leaves nothing behind. */
    t = wtxn(s);
    set(t, 1, "gone", "x");
    pk_txn_abort(t);
    r = rtxn(s);
    expect_get(r, 1, "gone", NULL, NOW);
    /* Writes need a write transaction. */
    int done;
    assert_int_equal(pk_str_set(r, 1, S("x"), S("y"), NULL, NOW, &done, NULL),
                     PK_EINVAL);
    pk_txn_abort(r);
}

static void test_command_errors_do_not_fail_group(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    int64_t out;
    uint64_t added;
    pk_slice f = {"f", 1};

    set(t, 1, "str", "abc");
    assert_int_equal(pk_hmap_set(t, 1, S("str"), 1, &f, &f, NOW, &added),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_str_incrby(t, 1, S("str"), 1, NOW, &out),
                     PK_STORE_NOTINT);
    assert_int_equal(pk_txn_error(t), 0);
    set(t, 1, "after", "ok");
    assert_int_equal(pk_txn_commit(t), 0);
    t = rtxn(s);
    expect_get(t, 1, "str", "abc", NOW);
    expect_get(t, 1, "after", "ok", NOW);
    pk_txn_abort(t);
    assert_string_equal(pk_store_strstatus(PK_STORE_WRONGTYPE),
                        "WRONGTYPE Operation against a key holding the wrong "
                        "kind of value");
    assert_null(pk_store_strstatus(0));
}

static void test_map_full_is_sticky(void **state)
{
    tstore *ts = *state;
    pk_store_opts o = {1u << 20, PK_FSYNC_ALWAYS};
    static char big[64 << 10];
    char k[32];
    pk_txn *t;
    int rc = 0, done, i;

    (void)ts;
    pk_store_close(ts->s);
    rm_tree(ts->dir);
    assert_int_equal(pk_store_open(ts->dir, &o, &ts->s), 0);
    t = wtxn(ts->s);
    set(t, 0, "kept", "yes");
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(ts->s);
    memset(big, 'x', sizeof(big));
    for (i = 0; i < 64 && rc == 0; i++) {
        snprintf(k, sizeof(k), "big%d", i);
        rc = pk_str_set(t, 0, S(k), big, sizeof(big), NULL, NOW, &done, NULL);
    }
    assert_int_equal(rc, PK_EFULL);
    assert_int_equal(pk_txn_error(t), PK_EFULL);
    /* Every later call fails the same way; commit reports it. */
    assert_int_equal(pk_str_set(t, 0, S("x"), S("y"), NULL, NOW, &done, NULL),
                     PK_EFULL);
    assert_int_equal(pk_txn_commit(t), PK_EFULL);
    t = rtxn(ts->s);
    expect_get(t, 0, "kept", "yes", NOW);
    expect_get(t, 0, "big0", NULL, NOW);
    pk_txn_abort(t);
    /* The store still takes writes that fit, and its counters never saw
     * the failed ones. */
    t = wtxn(ts->s);
    set(t, 0, "next", "ok");
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(pk_store_sync(ts->s), 0);
    assert_int_equal(tstore_reopen(ts), 0);
    t = rtxn(ts->s);
    pk_part_stats ps;
    assert_int_equal(pk_store_part_stats(t, 0, &ps), 0);
    assert_int_equal(ps.keys, 2);
    assert_int_equal(ps.log_last, 2);
    pk_txn_abort(t);
}

static void test_strings_basic(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_slice v;
    int done;
    uint64_t len;

    /* Binary keys and values, the empty key and the empty value. */
    assert_int_equal(
        pk_str_set(t, 1, "a\0b", 3, "v\0w", 3, NULL, NOW, &done, NULL), 0);
    assert_int_equal(pk_str_get(t, 1, "a\0b", 3, NOW, &v), 0);
    assert_int_equal(v.len, 3);
    assert_memory_equal(v.ptr, "v\0w", 3);
    assert_int_equal(pk_str_get(t, 1, "a", 1, NOW, &v), PK_ENOTFOUND);
    set(t, 1, "", "empty-key");
    expect_get(t, 1, "", "empty-key", NOW);
    set(t, 1, "e", "");
    assert_int_equal(pk_str_get(t, 1, S("e"), NOW, &v), 0);
    assert_non_null(v.ptr);
    assert_int_equal(v.len, 0);
    /* The same key in another partition is another key. */
    expect_get(t, 2, "e", NULL, NOW);
    /* APPEND and STRLEN. */
    assert_int_equal(pk_str_append(t, 1, S("ap"), S("ab"), NOW, &len), 0);
    assert_int_equal(len, 2);
    assert_int_equal(pk_str_append(t, 1, S("ap"), S("cde"), NOW, &len), 0);
    assert_int_equal(len, 5);
    expect_get(t, 1, "ap", "abcde", NOW);
    assert_int_equal(pk_str_strlen(t, 1, S("ap"), NOW, &len), 0);
    assert_int_equal(len, 5);
    assert_int_equal(pk_str_strlen(t, 1, S("nope"), NOW, &len), 0);
    assert_int_equal(len, 0);
    /* GETDEL. */
    assert_int_equal(pk_str_getdel(t, 1, S("ap"), NOW, &v), 0);
    assert_int_equal(v.len, 5);
    assert_memory_equal(v.ptr, "abcde", 5);
    assert_int_equal(pk_str_getdel(t, 1, S("ap"), NOW, &v), PK_ENOTFOUND);
    zadd1(t, 1, "z", 1, "m");
    assert_int_equal(pk_str_getdel(t, 1, S("z"), NOW, &v), PK_STORE_WRONGTYPE);
    assert_int_equal(pk_str_append(t, 1, S("z"), S("x"), NOW, &len),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_str_strlen(t, 1, S("z"), NOW, &len),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_set_options(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_set_opts nx = {PK_SET_NX, 0}, xx = {PK_SET_XX, 0};
    pk_set_opts get = {PK_SET_GET, 0}, px = {0, NOW + 5000};
    pk_set_opts keep = {PK_SET_KEEPTTL, 0};
    pk_slice old;
    int64_t ttl;
    int done;

    assert_int_equal(pk_str_set(t, 1, S("k"), S("1"), &xx, NOW, &done, NULL),
                     0);
    assert_int_equal(done, 0);
    expect_get(t, 1, "k", NULL, NOW);
    assert_int_equal(pk_str_set(t, 1, S("k"), S("1"), &nx, NOW, &done, NULL),
                     0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_str_set(t, 1, S("k"), S("2"), &nx, NOW, &done, NULL),
                     0);
    assert_int_equal(done, 0);
    assert_int_equal(pk_str_set(t, 1, S("k"), S("3"), &xx, NOW, &done, NULL),
                     0);
    assert_int_equal(done, 1);
    expect_get(t, 1, "k", "3", NOW);
    /* GET returns the old value, nil for none. */
    assert_int_equal(pk_str_set(t, 1, S("k"), S("4"), &get, NOW, &done, &old),
                     0);
    assert_int_equal(old.len, 1);
    assert_memory_equal(old.ptr, "3", 1);
    assert_int_equal(pk_str_set(t, 1, S("new"), S("4"), &get, NOW, &done, &old),
                     0);
    assert_null(old.ptr);
    /* NX + GET on an existing key: not set, old value returned. */
    get.flags |= PK_SET_NX;
    assert_int_equal(pk_str_set(t, 1, S("k"), S("5"), &get, NOW, &done, &old),
                     0);
    assert_int_equal(done, 0);
    assert_memory_equal(old.ptr, "4", 1);
    get.flags = PK_SET_GET;
    /* Expiry: SET clears it unless KEEPTTL. */
    assert_int_equal(pk_str_set(t, 1, S("k"), S("6"), &px, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW, &ttl), 0);
    assert_int_equal(ttl, 5000);
    assert_int_equal(pk_str_set(t, 1, S("k"), S("7"), &keep, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW + 1000, &ttl), 0);
    assert_int_equal(ttl, 4000);
    set(t, 1, "k", "8");
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW, &ttl), 0);
    assert_int_equal(ttl, -1);
    /* An expiry in the past leaves no key. */
    px.expire_at = NOW - 1;
    assert_int_equal(pk_str_set(t, 1, S("k"), S("9"), &px, NOW, &done, NULL),
                     0);
    assert_int_equal(done, 1);
    expect_get(t, 1, "k", NULL, NOW);
    /* SET replaces other types, but SET GET on them is WRONGTYPE. */
    hset1(t, 1, "h", "f", "v");
    assert_int_equal(pk_str_set(t, 1, S("h"), S("x"), &get, NOW, &done, &old),
                     PK_STORE_WRONGTYPE);
    set(t, 1, "h", "x");
    expect_get(t, 1, "h", "x", NOW);
    uint64_t hl;
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW, &hl), PK_STORE_WRONGTYPE);
    /* Bad option combinations. */
    pk_set_opts bad = {PK_SET_NX | PK_SET_XX, 0};
    assert_int_equal(pk_str_set(t, 1, S("k"), S("1"), &bad, NOW, &done, NULL),
                     PK_EINVAL);
    bad = (pk_set_opts){PK_SET_KEEPTTL, NOW + 1};
    assert_int_equal(pk_str_set(t, 1, S("k"), S("1"), &bad, NOW, &done, NULL),
                     PK_EINVAL);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_incrby(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_set_opts px = {0, NOW + 9000};
    static const char *bad[] = {"abc",
                                " 1",
                                "1 ",
                                "01",
                                "+1",
                                "1.5",
                                "",
                                "-0",
                                "-",
                                "99999999999999999999",
                                "9223372036854775808"};
    int64_t out, ttl;
    int done;

    assert_int_equal(pk_str_incrby(t, 1, S("n"), 5, NOW, &out), 0);
    assert_int_equal(out, 5);
    assert_int_equal(pk_str_incrby(t, 1, S("n"), -7, NOW, &out), 0);
    assert_int_equal(out, -2);
    expect_get(t, 1, "n", "-2", NOW);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        set(t, 1, "b", bad[i]);
        assert_int_equal(pk_str_incrby(t, 1, S("b"), 1, NOW, &out),
                         PK_STORE_NOTINT);
    }
    set(t, 1, "m", "9223372036854775807");
    assert_int_equal(pk_str_incrby(t, 1, S("m"), 1, NOW, &out),
                     PK_STORE_OVERFLOW);
    assert_int_equal(pk_str_incrby(t, 1, S("m"), 0, NOW, &out), 0);
    set(t, 1, "m", "-9223372036854775808");
    assert_int_equal(pk_str_incrby(t, 1, S("m"), -1, NOW, &out),
                     PK_STORE_OVERFLOW);
    assert_int_equal(pk_str_incrby(t, 1, S("m"), 1, NOW, &out), 0);
    assert_int_equal(out, -9223372036854775807ll);
    /* INCR keeps the expiry. */
    assert_int_equal(pk_str_set(t, 1, S("e"), S("1"), &px, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_str_incrby(t, 1, S("e"), 1, NOW, &out), 0);
    assert_int_equal(pk_key_pttl(t, 1, S("e"), NOW, &ttl), 0);
    assert_int_equal(ttl, 9000);
    hset1(t, 1, "h", "f", "1");
    assert_int_equal(pk_str_incrby(t, 1, S("h"), 1, NOW, &out),
                     PK_STORE_WRONGTYPE);
    assert_string_equal(pk_store_strstatus(PK_STORE_OVERFLOW),
                        "ERR increment or decrement would overflow");
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_hashes(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_slice f[4] = {{"b", 1}, {"a", 1}, {"b", 1}, {"\0z", 2}};
    pk_slice v[4] = {{"1", 1}, {"2", 1}, {"3", 1}, {"", 0}};
    pk_slice got[3];
    uint64_t n;
    int64_t out;
    int ex;
    collect c = {0};

    assert_int_equal(pk_hmap_set(t, 1, S("h"), 0, f, v, NOW, &n), PK_EINVAL);
    assert_int_equal(pk_hmap_set(t, 1, S("h"), 4, f, v, NOW, &n), 0);
    assert_int_equal(n, 3); /* "b" given twice counts once */
    assert_int_equal(pk_hmap_set(t, 1, S("h"), 2, f, v, NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(pk_hmap_get(t, 1, S("h"), S("b"), NOW, &got[0]), 0);
    assert_memory_equal(got[0].ptr, "1", 1);
    assert_int_equal(pk_hmap_get(t, 1, S("h"), S("zz"), NOW, &got[0]),
                     PK_ENOTFOUND);
    assert_int_equal(pk_hmap_get(t, 1, S("nokey"), S("b"), NOW, &got[0]),
                     PK_ENOTFOUND);
    pk_slice q[3] = {{"a", 1}, {"x", 1}, {"\0z", 2}};
    assert_int_equal(pk_hmap_mget(t, 1, S("h"), 3, q, NOW, got), 0);
    assert_memory_equal(got[0].ptr, "2", 1);
    assert_null(got[1].ptr);
    assert_non_null(got[2].ptr);
    assert_int_equal(got[2].len, 0);
    assert_int_equal(pk_hmap_mget(t, 1, S("nokey"), 3, q, NOW, got), 0);
    assert_null(got[0].ptr);
    assert_int_equal(pk_hmap_exists(t, 1, S("h"), S("a"), NOW, &ex), 0);
    assert_int_equal(ex, 1);
    assert_int_equal(pk_hmap_exists(t, 1, S("h"), S("q"), NOW, &ex), 0);
    assert_int_equal(ex, 0);
    /* HGETALL comes back in field byte order. */
    assert_int_equal(pk_hmap_each(t, 1, S("h"), NOW, collect_h, &c), 0);
    assert_int_equal(c.n, 3);
    assert_memory_equal(c.buf, "\0z= a=2 b=1 ", 12);
    /* HINCRBY. */
    assert_int_equal(pk_hmap_incrby(t, 1, S("h"), S("a"), 40, NOW, &out), 0);
    assert_int_equal(out, 42);
    assert_int_equal(pk_hmap_incrby(t, 1, S("h"), S("cnt"), -3, NOW, &out), 0);
    assert_int_equal(out, -3);
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW, &n), 0);
    assert_int_equal(n, 4);
    hset1(t, 1, "h", "s", "abc");
    assert_int_equal(pk_hmap_incrby(t, 1, S("h"), S("s"), 1, NOW, &out),
                     PK_STORE_HASH_NOTINT);
    hset1(t, 1, "h", "big", "9223372036854775800");
    assert_int_equal(pk_hmap_incrby(t, 1, S("h"), S("big"), 8, NOW, &out),
                     PK_STORE_OVERFLOW);
    assert_int_equal(pk_hmap_incrby(t, 1, S("new"), S("f"), 2, NOW, &out), 0);
    assert_int_equal(pk_hmap_len(t, 1, S("new"), NOW, &n), 0);
    assert_int_equal(n, 1);
    /* HDEL: count, and the last field takes the key with it. */
    pk_slice d[3] = {{"a", 1}, {"nope", 4}, {"a", 1}};
    assert_int_equal(pk_hmap_del(t, 1, S("h"), 3, d, NOW, &n), 0);
    assert_int_equal(n, 1);
    pk_slice all[5] = {{"b", 1}, {"\0z", 2}, {"cnt", 3}, {"s", 1}, {"big", 3}};
    assert_int_equal(pk_hmap_del(t, 1, S("h"), 5, all, NOW, &n), 0);
    assert_int_equal(n, 5);
    pk_type ty;
    assert_int_equal(pk_key_type(t, 1, S("h"), NOW, &ty), 0);
    assert_int_equal(ty, PK_TYPE_NONE);
    assert_int_equal(pk_hmap_del(t, 1, S("h"), 1, d, NOW, &n), 0);
    assert_int_equal(n, 0);
    /* WRONGTYPE everywhere. */
    set(t, 1, "str", "x");
    assert_int_equal(pk_hmap_get(t, 1, S("str"), S("a"), NOW, &got[0]),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_hmap_mget(t, 1, S("str"), 1, q, NOW, got),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_hmap_del(t, 1, S("str"), 1, d, NOW, &n),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_hmap_exists(t, 1, S("str"), S("a"), NOW, &ex),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_hmap_each(t, 1, S("str"), NOW, collect_h, &c),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_hmap_incrby(t, 1, S("str"), S("a"), 1, NOW, &out),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_zadd_flags(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_zadd_result r;
    double sc[3] = {1, 2, 3};
    pk_slice m[3] = {{"a", 1}, {"b", 1}, {"c", 1}};
    double x;

    assert_int_equal(pk_zset_add(t, 1, S("z"), 0, 3, sc, m, NOW, &r), 0);
    assert_int_equal(r.count, 3);
    /* XX on a missing key creates nothing. */
    assert_int_equal(
        pk_zset_add(t, 1, S("none"), PK_ZADD_XX, 1, sc, m, NOW, &r), 0);
    assert_int_equal(r.count, 0);
    pk_type ty;
    assert_int_equal(pk_key_type(t, 1, S("none"), NOW, &ty), 0);
    assert_int_equal(ty, PK_TYPE_NONE);
    /* NX: only new members. */
    double s2[2] = {10, 4};
    pk_slice m2[2] = {{"a", 1}, {"d", 1}};
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_NX, 2, s2, m2, NOW, &r),
                     0);
    assert_int_equal(r.count, 1);
    assert_int_equal(pk_zset_score(t, 1, S("z"), S("a"), NOW, &x), 0);
    assert_true(x == 1);
    /* XX + CH: updates count as changed, new members are skipped. */
    double s3[2] = {5, 9};
    pk_slice m3[2] = {{"a", 1}, {"zz", 2}};
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_XX | PK_ZADD_CH, 2, s3, m3, NOW, &r),
        0);
    assert_int_equal(r.count, 1);
    assert_int_equal(pk_zset_score(t, 1, S("z"), S("zz"), NOW, &x),
                     PK_ENOTFOUND);
    /* Without CH, an update counts nothing; same score is no change. */
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_CH, 1, s3, m3, NOW, &r),
                     0);
    assert_int_equal(r.count, 0);
    /* GT / LT only move scores one way, but still add new members. */
    double lo = 1, hi = 7;
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_GT | PK_ZADD_CH, 1, &lo, m, NOW, &r),
        0);
    assert_int_equal(r.count, 0);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_GT | PK_ZADD_CH, 1, &hi, m, NOW, &r),
        0);
    assert_int_equal(r.count, 1);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_LT | PK_ZADD_CH, 1, &hi, m, NOW, &r),
        0);
    assert_int_equal(r.count, 0);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_LT, 1, &lo, &m3[1], NOW, &r), 0);
    assert_int_equal(r.count, 1);
    /* INCR returns the new score, or nil when a condition stops it. */
    double inc = 2.5;
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_INCR, 1, &inc, m, NOW, &r), 0);
    assert_true(r.has_score && r.score == 9.5);
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_INCR | PK_ZADD_NX, 1,
                                 &inc, m, NOW, &r),
                     0);
    assert_false(r.has_score);
    double neg = -1;
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_INCR | PK_ZADD_GT, 1,
                                 &neg, m, NOW, &r),
                     0);
    assert_false(r.has_score);
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_INCR | PK_ZADD_XX, 1,
                                 &inc, &m3[1], NOW, &r),
                     0);
    assert_true(r.has_score && r.score == 3.5);
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_INCR, 1, &inc,
                                 &(pk_slice){"fresh", 5}, NOW, &r),
                     0);
    assert_true(r.has_score && r.score == 2.5 && r.count == 1);
    /* inf + -inf is NaN: an error, nothing changes. */
    double pinf = INFINITY, ninf = -INFINITY;
    assert_int_equal(pk_zset_add(t, 1, S("z"), 0, 1, &pinf, m, NOW, &r), 0);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_INCR, 1, &ninf, m, NOW, &r),
        PK_STORE_NAN);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_zset_score(t, 1, S("z"), S("a"), NOW, &x), 0);
    assert_true(isinf(x) && x > 0);
    /* Argument errors. */
    double nan_ = NAN;
    assert_int_equal(pk_zset_add(t, 1, S("z"), 0, 1, &nan_, m, NOW, &r),
                     PK_EINVAL);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_NX | PK_ZADD_XX, 1, sc, m, NOW, &r),
        PK_EINVAL);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_NX | PK_ZADD_GT, 1, sc, m, NOW, &r),
        PK_EINVAL);
    assert_int_equal(
        pk_zset_add(t, 1, S("z"), PK_ZADD_GT | PK_ZADD_LT, 1, sc, m, NOW, &r),
        PK_EINVAL);
    assert_int_equal(pk_zset_add(t, 1, S("z"), PK_ZADD_INCR, 2, sc, m, NOW, &r),
                     PK_EINVAL);
    set(t, 1, "str", "x");
    assert_int_equal(pk_zset_add(t, 1, S("str"), 0, 1, sc, m, NOW, &r),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_zrem_score_card(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    uint64_t n;
    double x;
    collect c;

    zadd1(t, 1, "z", 1, "a");
    zadd1(t, 1, "z", 2, "b");
    zadd1(t, 1, "z", -0.0, "zero");
    assert_int_equal(pk_zset_score(t, 1, S("z"), S("zero"), NOW, &x), 0);
    assert_false(signbit(x)); /* -0 is stored as 0 */
    assert_int_equal(pk_zset_card(t, 1, S("z"), NOW, &n), 0);
    assert_int_equal(n, 3);
    pk_slice r[3] = {{"a", 1}, {"q", 1}, {"a", 1}};
    assert_int_equal(pk_zset_rem(t, 1, S("z"), 3, r, NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(zrank(t, "z", 0, -1, 0, &c), "zero:0 b:2 ");
    pk_slice r2[2] = {{"b", 1}, {"zero", 4}};
    assert_int_equal(pk_zset_rem(t, 1, S("z"), 2, r2, NOW, &n), 0);
    assert_int_equal(n, 2);
    int ex;
    assert_int_equal(pk_key_exists(t, 1, S("z"), NOW, &ex), 0);
    assert_int_equal(ex, 0);
    assert_int_equal(pk_zset_card(t, 1, S("z"), NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_zset_score(t, 1, S("z"), S("b"), NOW, &x),
                     PK_ENOTFOUND);
    hset1(t, 1, "h", "f", "v");
    assert_int_equal(pk_zset_card(t, 1, S("h"), NOW, &n), PK_STORE_WRONGTYPE);
    assert_int_equal(pk_zset_rem(t, 1, S("h"), 1, r, NOW, &n),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_zset_score(t, 1, S("h"), S("f"), NOW, &x),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(
        pk_zset_range_rank(t, 1, S("h"), 0, -1, 0, NOW, collect_z, &c),
        PK_STORE_WRONGTYPE);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* z = a:1 b:2 c:3 d:3 e:5 (ties by member) in partition 1. */
static pk_txn *five(pk_store *s)
{
    pk_txn *t = wtxn(s);

    zadd1(t, 1, "z", 5, "e");
    zadd1(t, 1, "z", 3, "d");
    zadd1(t, 1, "z", 3, "c");
    zadd1(t, 1, "z", 2, "b");
    zadd1(t, 1, "z", 1, "a");
    /* A neighbouring key must never leak into the ranges. */
    double zero = 0;
    pk_zadd_result r;
    assert_int_equal(
        pk_zset_add(t, 1, "z\0", 2, 0, 1, &zero, &(pk_slice){"x", 1}, NOW, &r),
        0);
    zadd1(t, 1, "y", 9, "x");
    return t;
}

static void test_zrange_rank(void **state)
{
    pk_txn *t = five(st_of(state));
    collect c;

    assert_string_equal(zrank(t, "z", 0, -1, 0, &c), "a:1 b:2 c:3 d:3 e:5 ");
    assert_string_equal(zrank(t, "z", 1, 2, 0, &c), "b:2 c:3 ");
    assert_string_equal(zrank(t, "z", -2, -1, 0, &c), "d:3 e:5 ");
    assert_string_equal(zrank(t, "z", -100, 1, 0, &c), "a:1 b:2 ");
    assert_string_equal(zrank(t, "z", 3, 100, 0, &c), "d:3 e:5 ");
    assert_string_equal(zrank(t, "z", 5, 10, 0, &c), "");
    assert_string_equal(zrank(t, "z", 2, 1, 0, &c), "");
    assert_string_equal(zrank(t, "z", -1, -2, 0, &c), "");
    assert_string_equal(zrank(t, "z", 0, -1, 1, &c), "e:5 d:3 c:3 b:2 a:1 ");
    assert_string_equal(zrank(t, "z", 0, 1, 1, &c), "e:5 d:3 ");
    assert_string_equal(zrank(t, "z", -1, -1, 1, &c), "a:1 ");
    assert_string_equal(zrank(t, "missing", 0, -1, 0, &c), "");
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_zrange_score(void **state)
{
    pk_txn *t = five(st_of(state));
    collect c;

    assert_string_equal(zscore_range(t, "z", "-inf", "+inf", 0, 0, -1, &c),
                        "a:1 b:2 c:3 d:3 e:5 ");
    assert_string_equal(zscore_range(t, "z", "2", "3", 0, 0, -1, &c),
                        "b:2 c:3 d:3 ");
    assert_string_equal(zscore_range(t, "z", "(2", "3", 0, 0, -1, &c),
                        "c:3 d:3 ");
    assert_string_equal(zscore_range(t, "z", "2", "(3", 0, 0, -1, &c), "b:2 ");
    assert_string_equal(zscore_range(t, "z", "(1", "(5", 0, 0, -1, &c),
                        "b:2 c:3 d:3 ");
    assert_string_equal(zscore_range(t, "z", "(3", "(3", 0, 0, -1, &c), "");
    assert_string_equal(zscore_range(t, "z", "4", "2", 0, 0, -1, &c), "");
    assert_string_equal(zscore_range(t, "z", "-inf", "+inf", 1, 0, -1, &c),
                        "e:5 d:3 c:3 b:2 a:1 ");
    assert_string_equal(zscore_range(t, "z", "(1", "3", 1, 0, -1, &c),
                        "d:3 c:3 b:2 ");
    assert_string_equal(zscore_range(t, "z", "1", "(3", 1, 0, -1, &c),
                        "b:2 a:1 ");
    /* LIMIT offset count. */
    assert_string_equal(zscore_range(t, "z", "-inf", "inf", 0, 1, 2, &c),
                        "b:2 c:3 ");
    assert_string_equal(zscore_range(t, "z", "-inf", "inf", 1, 1, 2, &c),
                        "d:3 c:3 ");
    assert_string_equal(zscore_range(t, "z", "-inf", "inf", 0, 4, -1, &c),
                        "e:5 ");
    assert_string_equal(zscore_range(t, "z", "-inf", "inf", 0, 9, -1, &c), "");
    assert_string_equal(zscore_range(t, "z", "-inf", "inf", 0, -1, 5, &c), "");
    assert_string_equal(zscore_range(t, "z", "-inf", "inf", 0, 0, 0, &c), "");
    /* Bound parsing. */
    pk_zbound b;
    assert_int_equal(pk_zbound_parse(S("(2.5"), &b), 0);
    assert_true(b.excl && b.value == 2.5);
    assert_int_equal(pk_zbound_parse(S("-inf"), &b), 0);
    assert_true(isinf(b.value) && b.value < 0 && !b.excl);
    assert_int_equal(pk_zbound_parse(S("abc"), &b), PK_EINVAL);
    assert_int_equal(pk_zbound_parse(S("nan"), &b), PK_EINVAL);
    assert_int_equal(pk_zbound_parse(S("1x"), &b), PK_EINVAL);
    /* Infinite scores sit at the ends. */
    zadd1(t, 1, "z", INFINITY, "top");
    zadd1(t, 1, "z", -INFINITY, "bottom");
    assert_string_equal(zscore_range(t, "z", "(-inf", "(inf", 0, 0, 2, &c),
                        "a:1 b:2 ");
    assert_string_equal(zscore_range(t, "z", "inf", "inf", 1, 0, -1, &c),
                        "top:inf ");
    assert_string_equal(zscore_range(t, "z", "-inf", "-inf", 0, 0, -1, &c),
                        "bottom:-inf ");
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_zrange_lex(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    const char *m[] = {"a", "b", "c", "d", "e", "f", "g", "aa"};
    collect c;
    pk_zlex l;

    for (size_t i = 0; i < 8; i++) {
        zadd1(t, 1, "z", 0, m[i]);
    }
    zadd1(t, 1, "z1", 0, "0");
    assert_string_equal(zlex_range(t, "z", "-", "+", 0, 0, -1, &c),
                        "a:0 aa:0 b:0 c:0 d:0 e:0 f:0 g:0 ");
    assert_string_equal(zlex_range(t, "z", "[aa", "(c", 0, 0, -1, &c),
                        "aa:0 b:0 ");
    assert_string_equal(zlex_range(t, "z", "(a", "[c", 0, 0, -1, &c),
                        "aa:0 b:0 c:0 ");
    assert_string_equal(zlex_range(t, "z", "[b", "[b", 0, 0, -1, &c), "b:0 ");
    assert_string_equal(zlex_range(t, "z", "(b", "(b", 0, 0, -1, &c), "");
    assert_string_equal(zlex_range(t, "z", "[f", "+", 0, 0, -1, &c),
                        "f:0 g:0 ");
    assert_string_equal(zlex_range(t, "z", "-", "(b", 0, 0, -1, &c),
                        "a:0 aa:0 ");
    assert_string_equal(zlex_range(t, "z", "+", "-", 0, 0, -1, &c), "");
    assert_string_equal(zlex_range(t, "z", "-", "-", 0, 0, -1, &c), "");
    assert_string_equal(zlex_range(t, "z", "-", "+", 1, 0, 3, &c),
                        "g:0 f:0 e:0 ");
    assert_string_equal(zlex_range(t, "z", "(a", "[c", 1, 0, -1, &c),
                        "c:0 b:0 aa:0 ");
    assert_string_equal(zlex_range(t, "z", "[a", "(c", 1, 1, 1, &c), "aa:0 ");
    assert_string_equal(zlex_range(t, "z", "[bb", "[cc", 1, 0, -1, &c), "c:0 ");
    assert_string_equal(zlex_range(t, "z", "-", "+", 0, 6, 10, &c), "f:0 g:0 ");
    assert_int_equal(pk_zlex_parse(S("a"), &l), PK_EINVAL);
    assert_int_equal(pk_zlex_parse(S(""), &l), PK_EINVAL);
    assert_int_equal(pk_zlex_parse(S("+x"), &l), PK_EINVAL);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_generic_keys(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_type ty;
    int del, ex;
    uint64_t n;

    set(t, 1, "s", "v");
    hset1(t, 1, "h", "f", "v");
    zadd1(t, 2, "z", 1, "m");
    assert_int_equal(pk_key_type(t, 1, S("s"), NOW, &ty), 0);
    assert_string_equal(pk_type_name(ty), "string");
    assert_int_equal(pk_key_type(t, 1, S("h"), NOW, &ty), 0);
    assert_string_equal(pk_type_name(ty), "hash");
    assert_int_equal(pk_key_type(t, 2, S("z"), NOW, &ty), 0);
    assert_string_equal(pk_type_name(ty), "zset");
    assert_int_equal(pk_key_type(t, 2, S("s"), NOW, &ty), 0);
    assert_string_equal(pk_type_name(ty), "none");
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(pk_key_del(t, 1, S("h"), NOW, &del), 0);
    assert_int_equal(del, 1);
    assert_int_equal(pk_key_del(t, 1, S("h"), NOW, &del), 0);
    assert_int_equal(del, 0);
    assert_int_equal(pk_key_exists(t, 1, S("h"), NOW, &ex), 0);
    assert_int_equal(ex, 0);
    /* A deleted hash leaves no field behind: a new one starts empty. */
    hset1(t, 1, "h", "g", "w");
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_store_flushall(t), 0);
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, 0);
    expect_get(t, 1, "s", NULL, NOW);
    /* Long keys exist (test_longkey.c has more), and long fields
     * (test_longsub.c). */
    char big[600];
    int done;
    memset(big, 'k', sizeof(big));
    assert_int_equal(
        pk_str_set(t, 1, big, sizeof(big), S("v"), NULL, NOW, &done, NULL), 0);
    pk_slice v;
    assert_int_equal(pk_str_get(t, 1, big, sizeof(big), NOW, &v), 0);
    assert_int_equal(v.len, 1);
    assert_int_equal(pk_key_del(t, 1, big, sizeof(big), NOW, &del), 0);
    assert_int_equal(del, 1);
    pk_slice f = {big, 505}, fv = {"v", 1};
    assert_int_equal(pk_hmap_set(t, 1, S("h"), 1, &f, &fv, NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_ttl_lazy(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    int64_t ttl;
    int done, ex;
    uint64_t n;
    pk_part_stats ps;

    set(t, 1, "k", "v");
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW, &ttl), 0);
    assert_int_equal(ttl, -1);
    assert_int_equal(pk_key_pttl(t, 1, S("none"), NOW, &ttl), 0);
    assert_int_equal(ttl, -2);
    assert_int_equal(pk_key_expire(t, 1, S("k"), NOW + 100, 0, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_key_expire(t, 1, S("none"), NOW + 100, 0, NOW, &done),
                     0);
    assert_int_equal(done, 0);
    assert_int_equal(pk_txn_commit(t), 0);

    /* Reads before and after the deadline (the deadline itself expires). */
    t = rtxn(s);
    expect_get(t, 1, "k", "v", NOW + 99);
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW + 99, &ttl), 0);
    assert_int_equal(ttl, 1);
    expect_get(t, 1, "k", NULL, NOW + 100);
    assert_int_equal(pk_key_exists(t, 1, S("k"), NOW + 100, &ex), 0);
    assert_int_equal(ex, 0);
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW + 100, &ttl), 0);
    assert_int_equal(ttl, -2);
    /* Reads delete nothing: the key is still counted. */
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, 1);
    pk_txn_abort(t);

    /* A write that touches it deletes it first. */
    t = wtxn(s);
    int64_t out;
    assert_int_equal(pk_str_incrby(t, 1, S("k"), 1, NOW + 200, &out), 0);
    assert_int_equal(out, 1); /* "v" was gone, not "not an integer" */
    assert_int_equal(pk_key_pttl(t, 1, S("k"), NOW + 200, &ttl), 0);
    assert_int_equal(ttl, -1);
    assert_int_equal(pk_store_part_stats(t, 1, &ps), 0);
    assert_int_equal(ps.keys, 1);

    /* EXPIRE conditions. */
    hset1(t, 1, "h", "f", "v");
    assert_int_equal(
        pk_key_expire(t, 1, S("h"), NOW + 50, PK_EXPIRE_XX, NOW, &done), 0);
    assert_int_equal(done, 0);
    assert_int_equal(
        pk_key_expire(t, 1, S("h"), NOW + 50, PK_EXPIRE_GT, NOW, &done), 0);
    assert_int_equal(done, 0); /* no TTL counts as infinite */
    assert_int_equal(
        pk_key_expire(t, 1, S("h"), NOW + 50, PK_EXPIRE_LT, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(
        pk_key_expire(t, 1, S("h"), NOW + 60, PK_EXPIRE_NX, NOW, &done), 0);
    assert_int_equal(done, 0);
    assert_int_equal(
        pk_key_expire(t, 1, S("h"), NOW + 60, PK_EXPIRE_GT, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_key_expire(t, 1, S("h"), NOW + 70,
                                   PK_EXPIRE_XX | PK_EXPIRE_LT, NOW, &done),
                     0);
    assert_int_equal(done, 0);
    assert_int_equal(pk_key_pttl(t, 1, S("h"), NOW, &ttl), 0);
    assert_int_equal(ttl, 60);
    assert_int_equal(pk_key_expire(t, 1, S("h"), NOW + 1,
                                   PK_EXPIRE_NX | PK_EXPIRE_GT, NOW, &done),
                     PK_EINVAL);
    assert_int_equal(pk_key_expire(t, 1, S("h"), 0, 0, NOW, &done), PK_EINVAL);
    /* PERSIST. */
    assert_int_equal(pk_key_persist(t, 1, S("h"), NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_key_persist(t, 1, S("h"), NOW, &done), 0);
    assert_int_equal(done, 0);
    uint64_t hl;
    assert_int_equal(pk_hmap_len(t, 1, S("h"), NOW + 1000, &hl), 0);
    assert_int_equal(hl, 1);
    /* An expiry in the past deletes the key at once, whole. */
    assert_int_equal(pk_key_expire(t, 1, S("h"), NOW - 1, 0, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_store_part_stats(t, 1, &ps), 0);
    assert_int_equal(ps.keys, 1);
    assert_int_equal(ps.bytes > 0, 1);
    /* Expired hashes and zsets read as empty. */
    zadd1(t, 1, "z", 1, "m");
    assert_int_equal(pk_key_expire(t, 1, S("z"), NOW + 5, 0, NOW, &done), 0);
    collect c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(
        pk_zset_range_rank(t, 1, S("z"), 0, -1, 0, NOW + 5, collect_z, &c), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_ttl_active(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_set_opts o = {0, 0};
    char k[16];
    size_t n;
    uint64_t size;
    int done;

    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        o.expire_at = NOW + 10 + (uint64_t)(i % 10) * 10; /* 10..100 */
        assert_int_equal(
            pk_str_set(t, (uint32_t)i % 7, S(k), S("v"), &o, NOW, &done, NULL),
            0);
    }
    hset1(t, 3, "h", "f", "v");
    assert_int_equal(pk_key_expire(t, 3, S("h"), NOW + 10, 0, NOW, &done), 0);
    set(t, 3, "forever", "v");
    assert_int_equal(pk_store_expire_cycle(t, NOW + 5, 100, &n), 0);
    assert_int_equal(n, 0);
    /* Due at +10: ten strings and the hash; bounded per call. */
    assert_int_equal(pk_store_expire_cycle(t, NOW + 10, 4, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 10, 100, &n), 0);
    assert_int_equal(n, 7);
    assert_int_equal(pk_store_dbsize(t, &size), 0);
    assert_int_equal(size, 91);
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(s);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 1000, 1000, &n), 0);
    assert_int_equal(n, 90);
    assert_int_equal(pk_store_dbsize(t, &size), 0);
    assert_int_equal(size, 1);
    expect_get(t, 3, "forever", "v", NOW + 1000);
    /* A key whose expiry was removed is not expired by the cycle. */
    assert_int_equal(pk_str_set(t, 1, S("p"), S("v"), &o, NOW, &done, NULL), 0);
    assert_int_equal(pk_key_persist(t, 1, S("p"), NOW, &done), 0);
    assert_int_equal(pk_store_expire_cycle(t, UINT64_MAX, 10, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* Only partitions 1 and 2 may expire here (the others are led elsewhere). */
static int only_1_and_2(void *ctx, uint32_t part)
{
    (*(int *)ctx)++;
    return part == 1 || part == 2;
}

static void test_ttl_active_filtered(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_set_opts o = {0, 0};
    char k[16];
    size_t n;
    uint64_t size;
    int done, asked = 0;

    /* Interleaved in expiry order: partitions 0, 1, 2, 3, 0, 1, ... */
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        o.expire_at = NOW + 10 + (uint64_t)i;
        assert_int_equal(
            pk_str_set(t, (uint32_t)i % 4, S(k), S("v"), &o, NOW, &done, NULL),
            0);
    }
    assert_int_equal(pk_store_expire_cycle_if(t, NOW + 100, 5, only_1_and_2,
                                              &asked, NULL, &n),
                     0);
    assert_int_equal(n, 5);
    assert_int_equal(pk_store_expire_cycle_if(t, NOW + 100, 100, only_1_and_2,
                                              &asked, NULL, &n),
                     0);
    assert_int_equal(n, 15);
    assert_true(asked >= 40);
    assert_int_equal(pk_store_dbsize(t, &size), 0);
    assert_int_equal(size, 20); /* partitions 0 and 3 untouched */
    expect_get(t, 0, "k0", "v", NOW);
    expect_get(t, 3, "k3", "v", NOW);
    /* Refused entries are skipped a bounded number of times per call. */
    assert_int_equal(pk_store_expire_cycle_if(t, NOW + 100, 2, only_1_and_2,
                                              &asked, NULL, &n),
                     0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 100, 100, &n), 0);
    assert_int_equal(n, 20);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* With a position, refused entries at the head of the index do not keep
 * the accepted ones behind them waiting: each call goes on from the last. */
static void test_ttl_active_resumes(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_set_opts o = {0, 0};
    pk_expire_pos pos;
    char k[16];
    size_t n, total = 0;
    int done, asked = 0, calls = 0;

    memset(&pos, 0, sizeof(pos));
    for (int i = 0; i < 60; i++) { /* 50 refused (partition 0), then 10 */
        snprintf(k, sizeof(k), "k%d", i);
        o.expire_at = NOW + 10 + (uint64_t)i;
        assert_int_equal(
            pk_str_set(t, i < 50 ? 0 : 1, S(k), S("v"), &o, NOW, &done, NULL),
            0);
    }
    /* Without a position every call restarts at the head and gives up
     * after 4 * max_keys refused entries. */
    assert_int_equal(pk_store_expire_cycle_if(t, NOW + 100, 2, only_1_and_2,
                                              &asked, NULL, &n),
                     0);
    assert_int_equal(n, 0);
    while (total < 10 && calls++ < 20) {
        assert_int_equal(pk_store_expire_cycle_if(t, NOW + 100, 2, only_1_and_2,
                                                  &asked, &pos, &n),
                         0);
        total += n;
    }
    assert_int_equal(total, 10);
    assert_true(calls <= 12);
    /* Nothing more due: the next call starts from the head again. */
    assert_int_equal(pk_store_expire_cycle_if(t, NOW + 100, 100, only_1_and_2,
                                              &asked, &pos, &n),
                     0);
    assert_int_equal(n, 0);
    assert_int_equal(pos.len, 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_counters(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_part_stats ps;
    uint32_t part;
    int found[4] = {0};
    pk_slice v;

    set(t, 2, "a", "12345");
    set(t, 2, "b", "x");
    hset1(t, 9, "h", "f", "v");
    assert_int_equal(pk_txn_commit(t), 0);
    t = rtxn(s);
    assert_int_equal(pk_str_get(t, 2, S("a"), NOW, &v), 0);
    assert_int_equal(pk_str_get(t, 2, S("zz"), NOW, &v), PK_ENOTFOUND);
    assert_int_equal(pk_store_part_stats(t, 2, &ps), 0);
    assert_int_equal(ps.keys, 2);
    assert_int_equal(ps.reads, 2);
    assert_int_equal(ps.writes, 2);
    /* bytes = key + value of each record: 4+1+2+1 key, 10+5 value... */
    assert_int_equal(ps.bytes, (8 + 15) + (8 + 11));
    assert_int_equal(ps.log_last, 2);
    assert_int_equal(ps.log_first, 1);
    assert_int_equal(pk_store_part_stats(t, 5, &ps), 0);
    assert_int_equal(ps.keys, 0);
    assert_int_equal(ps.bytes, 0);
    for (uint64_t p = 0; pk_store_part_next(t, p, &part, &ps) == 0;
         p = (uint64_t)part + 1) {
        assert_true(part == 2 || part == 9);
        found[part == 2 ? 0 : 1]++;
    }
    assert_int_equal(found[0], 1);
    assert_int_equal(found[1], 1);
    pk_txn_abort(t);
    /* Deleting everything brings keys and bytes back to zero. */
    t = wtxn(s);
    int del;
    assert_int_equal(pk_key_del(t, 2, S("a"), NOW, &del), 0);
    assert_int_equal(pk_key_del(t, 2, S("b"), NOW, &del), 0);
    assert_int_equal(pk_key_del(t, 9, S("h"), NOW, &del), 0);
    assert_int_equal(pk_store_part_stats(t, 9, &ps), 0);
    assert_int_equal(ps.keys, 0);
    assert_int_equal(ps.bytes, 0);
    assert_int_equal(ps.log_last, 2);
    assert_int_equal(pk_txn_commit(t), 0);
}

typedef struct seen {
    int count[2000];
    int calls;
} seen;

static int scan_cb(void *ctx, uint32_t part, pk_slice key)
{
    seen *sn = ctx;
    char k[16] = {0};
    int i;

    (void)part;
    memcpy(k, key.ptr, key.len < 15 ? key.len : 15);
    if (sscanf(k, "k%d", &i) == 1) {
        sn->count[i]++;
    }
    sn->calls++;
    return 0;
}

static void test_scan(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_scan_opts o = {NULL, 0, 7, PK_TYPE_NONE, NULL, NULL};
    uint64_t cur = 0;
    char k[16];
    seen *sn = calloc(1, sizeof(*sn));
    int rounds = 0, del;

    assert_non_null(sn);
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof(k), "k%d", i);
        if (i % 3 == 0) {
            hset1(t, (uint32_t)i % 11, k, "f", "v");
        } else {
            set(t, (uint32_t)i % 11, k, "v");
        }
    }
    assert_int_equal(pk_txn_commit(t), 0);
    /* Full scan with writes between calls: keys 0..499 stay throughout. */
    do {
        t = wtxn(s);
        assert_int_equal(pk_store_scan(t, cur, &o, NOW, scan_cb, sn, &cur), 0);
        snprintf(k, sizeof(k), "k%d", 500 + rounds);
        assert_int_equal(
            pk_key_del(t, (uint32_t)(500 + rounds) % 11, S(k), NOW, &del), 0);
        snprintf(k, sizeof(k), "k%d", 1000 + rounds);
        set(t, (uint32_t)rounds % 11, k, "new");
        assert_int_equal(pk_txn_commit(t), 0);
        rounds++;
    } while (cur != 0);
    assert_true(rounds > 100);
    for (int i = 0; i < 500; i++) {
        assert_int_equal(sn->count[i], 1);
    }
    /* MATCH and TYPE filters. */
    memset(sn, 0, sizeof(*sn));
    o = (pk_scan_opts){"k1?", 3, 1000, PK_TYPE_NONE, NULL, NULL};
    t = rtxn(s);
    cur = 0;
    do {
        assert_int_equal(pk_store_scan(t, cur, &o, NOW, scan_cb, sn, &cur), 0);
    } while (cur != 0);
    assert_int_equal(sn->calls, 10);
    memset(sn, 0, sizeof(*sn));
    o = (pk_scan_opts){"k?", 2, 1000, PK_TYPE_HASH, NULL, NULL};
    do {
        assert_int_equal(pk_store_scan(t, cur, &o, NOW, scan_cb, sn, &cur), 0);
    } while (cur != 0);
    assert_int_equal(sn->calls, 4); /* k0 k3 k6 k9 */
    pk_txn_abort(t);
    free(sn);
}

typedef struct keys {
    char seen[64][8];
    int n;
} keys;

static int keys_cb(void *ctx, uint32_t part, pk_slice key)
{
    keys *ks = ctx;

    (void)part;
    assert_true(key.len < 8 && ks->n < 64);
    memcpy(ks->seen[ks->n], key.ptr, key.len);
    ks->seen[ks->n++][key.len] = 0;
    return 0;
}

static void test_scan_edges(void **state)
{
    pk_store *s = st_of(state);
    pk_txn *t = wtxn(s);
    pk_scan_opts o = {"*", 1, 1, PK_TYPE_NONE, NULL, NULL};
    pk_set_opts ex = {0, NOW + 1};
    keys ks = {0};
    uint64_t cur = 0;
    int calls = 0, done;

    /* Many keys sharing four leading bytes, the empty key, an expired key
     * and a partition number at the top of the range. */
    set(t, 0, "", "v");
    set(t, 0, "same1", "v");
    set(t, 0, "same2", "v");
    set(t, 0, "same3", "v");
    set(t, UINT32_MAX, "top", "v");
    assert_int_equal(pk_str_set(t, 7, S("exp"), S("v"), &ex, NOW, &done, NULL),
                     0);
    do {
        assert_int_equal(pk_store_scan(t, cur, &o, NOW + 5, keys_cb, &ks, &cur),
                         0);
        calls++;
    } while (cur != 0);
    assert_int_equal(ks.n, 5);
    assert_string_equal(ks.seen[0], "");
    assert_string_equal(ks.seen[1], "same1");
    assert_string_equal(ks.seen[3], "same3");
    assert_string_equal(ks.seen[4], "top");
    /* One call for "", one for the group "same", one for "exp", one for
     * "top": every call makes progress. */
    assert_int_equal(calls, 4);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* pk__rand_next is splitmix64: the reference outputs from state 0. */
static void test_rand_known_answers(void **state)
{
    uint64_t s = 0;

    (void)state;
    assert_int_equal(pk__rand_next(&s), 0xe220a8397b1dcdafull);
    assert_int_equal(pk__rand_next(&s), 0x6e789e6aa1b965f4ull);
    assert_int_equal(pk__rand_next(&s), 0x06c45d188009454full);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_reopen_keeps_data),
        T(test_prefault),
        T(test_group_commit),
        T(test_command_errors_do_not_fail_group),
        T(test_map_full_is_sticky),
        T(test_strings_basic),
        T(test_set_options),
        T(test_incrby),
        T(test_hashes),
        T(test_zadd_flags),
        T(test_zrem_score_card),
        T(test_zrange_rank),
        T(test_zrange_score),
        T(test_zrange_lex),
        T(test_generic_keys),
        T(test_ttl_lazy),
        T(test_ttl_active),
        T(test_ttl_active_filtered),
        T(test_ttl_active_resumes),
        T(test_counters),
        T(test_scan),
        T(test_scan_edges),
        cmocka_unit_test(test_rand_known_answers),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

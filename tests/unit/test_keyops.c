/*
 * pk_keyops against a real store: COPY and RENAME of every type within a
 * partition and across two (counters, expiry, change log shipped to a
 * second store), DUMP/RESTORE round trips, RESTORE of hand-made payloads
 * for types this file knows no commands of (sets: raw SMEMBER records),
 * and hostile payloads -- every truncation, every bit flip, and
 * structurally wrong records under a valid checksum -- none of which may
 * write anything.  RANDOMKEY reaches every key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pk_hash.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyenc.h"
#include "store/pk_keyops.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
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

static void set(pk_txn *t, uint32_t part, const char *k, const char *v)
{
    int done = 0;

    assert_int_equal(pk_str_set(t, part, S(k), S(v), NULL, NOW, &done, NULL),
                     0);
}

static void expect_get(pk_txn *t, uint32_t part, const char *k, const char *v)
{
    pk_slice got;
    int rc = pk_str_get(t, part, S(k), NOW, &got);

    if (v == NULL) {
        assert_int_equal(rc, PK_ENOTFOUND);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(got.len, strlen(v));
    assert_memory_equal(got.ptr, v, got.len);
}

static int64_t pttl(pk_txn *t, uint32_t part, const char *k)
{
    int64_t ttl = 0;

    assert_int_equal(pk_key_pttl(t, part, S(k), NOW, &ttl), 0);
    return ttl;
}

static uint64_t keys_of(pk_txn *t, uint32_t part)
{
    pk_part_stats st;

    assert_int_equal(pk_store_part_stats(t, part, &st), 0);
    return st.keys;
}

static void hset(pk_txn *t, uint32_t part, const char *k, const char *f,
                 const char *v)
{
    pk_slice fs = {f, strlen(f)}, vs = {v, strlen(v)};
    uint64_t added;

    assert_int_equal(pk_hmap_set(t, part, S(k), 1, &fs, &vs, NOW, &added), 0);
}

static void zadd(pk_txn *t, uint32_t part, const char *k, double s,
                 const char *m)
{
    pk_slice ms = {m, strlen(m)};
    pk_zadd_result r;

    assert_int_equal(pk_zset_add(t, part, S(k), 0, 1, &s, &ms, NOW, &r), 0);
}

static void test_copy_string(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    int done = -1;

    set(t, 1, "a", "hello");
    assert_int_equal(pk_key_expire(t, 1, S("a"), NOW + 5000, 0, NOW, &done), 0);
    assert_int_equal(pk_key_copy(t, 1, S("a"), 1, S("b"), 0, NOW, &done), 0);
    assert_int_equal(done, 1);
    expect_get(t, 1, "b", "hello");
    assert_int_equal(pttl(t, 1, "b"), 5000);
    /* No REPLACE: an existing destination stays. */
    set(t, 1, "c", "other");
    assert_int_equal(pk_key_copy(t, 1, S("a"), 1, S("c"), 0, NOW, &done), 0);
    assert_int_equal(done, 0);
    expect_get(t, 1, "c", "other");
    assert_int_equal(pttl(t, 1, "c"), -1);
    assert_int_equal(
        pk_key_copy(t, 1, S("a"), 1, S("c"), PK_KEYOPS_REPLACE, NOW, &done), 0);
    assert_int_equal(done, 1);
    expect_get(t, 1, "c", "hello");
    /* Missing or expired source; the same key. */
    done = -1;
    assert_int_equal(pk_key_copy(t, 1, S("zz"), 1, S("c"), 0, NOW, &done),
                     PK_ENOTFOUND);
    assert_int_equal(pk_key_copy(t, 1, S("a"), 1, S("d"), 0, NOW + 5000, &done),
                     PK_ENOTFOUND);
    assert_int_equal(done, -1);
    assert_int_equal(pk_key_copy(t, 1, S("a"), 1, S("a"), 0, NOW, &done),
                     PK_EINVAL);
    /* The copy is independent of its source. */
    set(t, 1, "b", "changed");
    expect_get(t, 1, "a", "hello");
    assert_int_equal(keys_of(t, 1), 3);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* RENAME of a hash and a sorted set, across partitions and within one. */
static void test_rename_aggregates(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_slice v;
    double score;
    uint64_t n;
    int done = -1;

    hset(t, 1, "h", "f1", "v1");
    hset(t, 1, "h", "f2", "v2");
    assert_int_equal(pk_key_expire(t, 1, S("h"), NOW + 9000, 0, NOW, &done), 0);
    set(t, 2, "h2", "old");
    assert_int_equal(pk_key_expire(t, 2, S("h2"), NOW + 100, 0, NOW, &done), 0);
    assert_int_equal(pk_key_copy(t, 1, S("h"), 2, S("h2"),
                                 PK_KEYOPS_MOVE | PK_KEYOPS_REPLACE, NOW,
                                 &done),
                     0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_hmap_get(t, 2, S("h2"), S("f2"), NOW, &v), 0);
    assert_memory_equal(v.ptr, "v2", 2);
    assert_int_equal(pk_hmap_len(t, 2, S("h2"), NOW, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pttl(t, 2, "h2"), 9000);
    assert_int_equal(pttl(t, 1, "h"), -2);
    assert_int_equal(keys_of(t, 1), 0);
    assert_int_equal(keys_of(t, 2), 1);

    zadd(t, 3, "z", 1.5, "a");
    zadd(t, 3, "z", -2, "b");
    set(t, 3, "y", "taken");
    /* RENAMENX onto an existing key changes nothing. */
    assert_int_equal(
        pk_key_copy(t, 3, S("z"), 3, S("y"), PK_KEYOPS_MOVE, NOW, &done), 0);
    assert_int_equal(done, 0);
    assert_int_equal(
        pk_key_copy(t, 3, S("z"), 3, S("z2"), PK_KEYOPS_MOVE, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_zset_score(t, 3, S("z2"), S("b"), NOW, &score), 0);
    assert_true(score == -2);
    assert_int_equal(pk_zset_card(t, 3, S("z2"), NOW, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pttl(t, 3, "z"), -2);
    assert_int_equal(keys_of(t, 3), 2);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* A RENAME across partitions reaches a follower through both logs. */
static void test_rename_ships(void **state)
{
    two *w = *state;
    pk_txn *t = wtxn(w->a->s), *ta, *tb;
    int done;

    hset(t, 5, "src", "f", "v");
    set(t, 6, "dst", "x");
    assert_int_equal(pk_key_copy(t, 5, S("src"), 6, S("dst"),
                                 PK_KEYOPS_MOVE | PK_KEYOPS_REPLACE, NOW,
                                 &done),
                     0);
    assert_int_equal(pk_txn_commit(t), 0);
    for (uint32_t part = 5; part <= 6; part++) {
        tship sh = {NULL, part, 0, 0};
        assert_int_equal(pk_txn_begin(w->a->s, 1, &ta), 0);
        tb = wtxn(w->b->s);
        sh.t = tb;
        assert_int_equal(pk_store_log_read(ta, part, 1, tship_cb, &sh), 0);
        assert_int_equal(sh.n, 2);
        assert_int_equal(pk_txn_commit(tb), 0);
        pk_txn_abort(ta);
        assert_int_equal(tstore_same(w->a->s, w->b->s, part), 0);
    }
}

static void test_dump_restore(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_slice p, q;
    uint8_t *copy;
    uint64_t n;
    double score;

    zadd(t, 1, "z", 3, "m1");
    zadd(t, 1, "z", 4, "m2");
    assert_int_equal(pk_key_dump(t, 1, S("nope"), NOW, &p), PK_ENOTFOUND);
    assert_int_equal(pk_key_dump(t, 1, S("z"), NOW, &p), 0);
    assert_int_equal(((const uint8_t *)p.ptr)[0], PK_DUMP_VERSION);
    assert_int_equal(((const uint8_t *)p.ptr)[1], PK_TYPE_ZSET);
    copy = malloc(p.len);
    memcpy(copy, p.ptr, p.len);
    assert_int_equal(pk_key_restore(t, 1, S("z"), copy, p.len, 0, 0, NOW),
                     PK_EEXIST);
    /* Into another partition, with a TTL; then the dump matches. */
    assert_int_equal(
        pk_key_restore(t, 7, S("z"), copy, p.len, NOW + 700, 0, NOW), 0);
    assert_int_equal(pttl(t, 7, "z"), 700);
    assert_int_equal(pk_zset_score(t, 7, S("z"), S("m2"), NOW, &score), 0);
    assert_true(score == 4);
    assert_int_equal(pk_key_dump(t, 7, S("z"), NOW, &q), 0);
    assert_int_equal(q.len, p.len);
    assert_memory_equal(q.ptr, copy, p.len);
    /* REPLACE over a string; an expiry already past drops the old key. */
    set(t, 2, "s", "x");
    assert_int_equal(
        pk_key_restore(t, 2, S("s"), copy, p.len, 0, PK_KEYOPS_REPLACE, NOW),
        0);
    assert_int_equal(pk_zset_card(t, 2, S("s"), NOW, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pk_key_restore(t, 2, S("s"), copy, p.len, NOW - 1,
                                    PK_KEYOPS_REPLACE, NOW),
                     0);
    assert_int_equal(pttl(t, 2, "s"), -2);
    assert_int_equal(keys_of(t, 2), 0);
    free(copy);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* A payload builder: header, records, checksum. */
typedef struct pay {
    uint8_t b[4096];
    size_t len;
} pay;

static void pay_begin(pay *p, uint8_t type)
{
    p->b[0] = PK_DUMP_VERSION;
    p->b[1] = type;
    p->len = 2;
}

static void pay_rec(pay *p, uint8_t tag, const void *sub, size_t n,
                    const void *v, size_t vlen)
{
    p->b[p->len++] = (uint8_t)((n + 1) >> 8);
    p->b[p->len++] = (uint8_t)(n + 1);
    p->b[p->len++] = tag;
    if (n > 0)
        memcpy(p->b + p->len, sub, n);
    p->len += n;
    pk_be32_put(p->b + p->len, (uint32_t)vlen);
    if (vlen > 0)
        memcpy(p->b + p->len + 4, v, vlen);
    p->len += 4 + vlen;
}

/* META of an aggregate: type, flags 0, expire 0, count. */
static void pay_meta(pay *p, uint8_t type, uint64_t count)
{
    uint8_t v[18] = {type, 0};

    pk_be64_put(v + 10, count);
    pay_rec(p, PK_TAG_META, NULL, 0, v, sizeof(v));
}

static void pay_end(pay *p)
{
    pk_be64_put(p->b + p->len, pk_hash_xxh3(p->b, p->len));
    p->len += 8;
}

/* A set's raw records restore, dump identically, copy and rename. */
static void test_set_records(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    pk_slice q;
    pk_type type;
    pay p;
    int done;

    pay_begin(&p, PK_TYPE_SET);
    pay_meta(&p, PK_TYPE_SET, 2);
    pay_rec(&p, PK_TAG_SMEMBER, "a", 1, NULL, 0);
    pay_rec(&p, PK_TAG_SMEMBER, "b", 1, NULL, 0);
    pay_end(&p);
    assert_int_equal(pk_key_restore(t, 1, S("s"), p.b, p.len, 0, 0, NOW), 0);
    assert_int_equal(pk_key_type(t, 1, S("s"), NOW, &type), 0);
    assert_int_equal(type, PK_TYPE_SET);
    assert_int_equal(pk_key_copy(t, 1, S("s"), 4, S("s2"), 0, NOW, &done), 0);
    assert_int_equal(pk_key_copy(t, 4, S("s2"), 4, S("s3"),
                                 PK_KEYOPS_MOVE | PK_KEYOPS_REPLACE, NOW,
                                 &done),
                     0);
    assert_int_equal(pk_key_dump(t, 4, S("s3"), NOW, &q), 0);
    assert_int_equal(q.len, p.len);
    assert_memory_equal(q.ptr, p.b, p.len);
    assert_int_equal(keys_of(t, 4), 1);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* The restore of p into "k" fails with want and leaves nothing. */
static void restore_fails(pk_txn *t, const uint8_t *b, size_t len, int want)
{
    int e = -1;

    assert_int_equal(pk_key_restore(t, 9, S("k"), b, len, 0, 0, NOW), want);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_key_exists(t, 9, S("k"), NOW, &e), 0);
    assert_int_equal(e, 0);
}

static void test_restore_hostile(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    uint8_t big[64], v8[8];
    pk_slice d;
    uint8_t *good;
    size_t glen;
    pay p;

    hset(t, 1, "h", "field", "value");
    hset(t, 1, "h", "g", "");
    assert_int_equal(pk_key_dump(t, 1, S("h"), NOW, &d), 0);
    glen = d.len;
    good = malloc(glen);
    memcpy(good, d.ptr, glen);
    /* Every truncation, every single bit flipped. */
    for (size_t n = 0; n < glen; n++) {
        restore_fails(t, good, n, PK_ECHECKSUM);
    }
    for (size_t i = 0; i < glen * 8; i++) {
        int e = -1;
        good[i / 8] ^= (uint8_t)(1u << (i % 8));
        assert_true(pk_key_restore(t, 9, S("k"), good, glen, 0, 0, NOW) < 0);
        assert_int_equal(pk_key_exists(t, 9, S("k"), NOW, &e), 0);
        assert_int_equal(e, 0);
        good[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_key_restore(t, 9, S("k"), good, glen, 0, 0, NOW), 0);
    free(good);
    assert_int_equal(pk_key_del(t, 9, S("k"), NOW, &(int){0}), 0);

    /* Unknown version. */
    pay_begin(&p, PK_TYPE_STRING);
    p.b[0] = 99;
    pay_rec(&p, PK_TAG_META, NULL, 0, (uint8_t[10]){1}, 10);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_EVERSION);
    /* Valid checksums, bad records. */
    pay_begin(&p, PK_TYPE_STRING);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* no records */
    /* A list whose elements are not at head .. head + count - 1: a gap
     * (pk_list.c reads by position) or a start away from head. */
    for (int shape = 0; shape < 3; shape++) {
        static const uint64_t at[3][2] = {{5, 6}, {0, 2}, {0, 1}};
        uint8_t lv[26] = {PK_TYPE_LIST, 0}, sub[8];
        pk_be64_put(lv + 10, 2);
        pk_be64_put(lv + 18, 0); /* head */
        pay_begin(&p, PK_TYPE_LIST);
        pay_rec(&p, PK_TAG_META, NULL, 0, lv, sizeof(lv));
        for (int i = 0; i < 2; i++) {
            pk_be64_put(sub, at[shape][i]);
            pay_rec(&p, PK_TAG_LITEM, sub, 8, "x", 1);
        }
        pay_end(&p);
        if (shape == 2)
            assert_int_equal(
                pk_key_restore(t, 9, S("lst"), p.b, p.len, 0, 0, NOW), 0);
        else
            restore_fails(t, p.b, p.len, PK_ECORRUPT);
    }
    assert_int_equal(pk_key_del(t, 9, S("lst"), NOW, &(int){0}), 0);
    pay_begin(&p, PK_TYPE_HASH);
    pay_rec(&p, PK_TAG_META, NULL, 0, (uint8_t[10]){1}, 10);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* header type differs */
    pay_begin(&p, PK_TYPE_STRING);
    pay_rec(&p, PK_TAG_META, NULL, 0, (uint8_t[10]){1, 0, 0, 0, 0, 0, 0, 1},
            10);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* an expiry inside */
    pay_begin(&p, PK_TYPE_STRING);
    pay_rec(&p, PK_TAG_META, NULL, 0, (uint8_t[10]){1}, 10);
    pay_rec(&p, PK_TAG_HFIELD, "f", 1, "v", 1);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* a string with a field */
    pay_begin(&p, PK_TYPE_HASH);
    pay_meta(&p, PK_TYPE_HASH, 2);
    pay_rec(&p, PK_TAG_HFIELD, "f", 1, "v", 1);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* count says 2 */
    pay_begin(&p, PK_TYPE_HASH);
    pay_meta(&p, PK_TYPE_HASH, 0);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* empty hash */
    pay_begin(&p, PK_TYPE_HASH);
    pay_meta(&p, PK_TYPE_HASH, 2);
    pay_rec(&p, PK_TAG_HFIELD, "f", 1, "v", 1);
    pay_rec(&p, PK_TAG_HFIELD, "f", 1, "w", 1);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* duplicate field */
    pay_begin(&p, PK_TYPE_HASH);
    pay_meta(&p, PK_TYPE_HASH, 2);
    pay_rec(&p, PK_TAG_HFIELD, "g", 1, "v", 1);
    pay_rec(&p, PK_TAG_HFIELD, "f", 1, "w", 1);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* out of order */
    pay_begin(&p, PK_TYPE_HASH);
    pay_rec(&p, PK_TAG_HFIELD, "f", 1, "v", 1);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* no META */
    pay_begin(&p, PK_TYPE_HASH);
    pay_meta(&p, PK_TYPE_HASH, 1);
    pay_rec(&p, 0x7F, "f", 1, "v", 1);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT); /* unknown tag */
    /* A sorted set whose member lacks its score record, or has another. */
    pk_be64_put(v8, 0x3FF0000000000000ull); /* 1.0 */
    pay_begin(&p, PK_TYPE_ZSET);
    pay_meta(&p, PK_TYPE_ZSET, 1);
    pay_rec(&p, PK_TAG_ZMEMBER, "m", 1, v8, 8);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT);
    pk_be64_put(big, pk_keyenc_score(2.0));
    big[8] = 'm';
    pay_begin(&p, PK_TYPE_ZSET);
    pay_meta(&p, PK_TYPE_ZSET, 1);
    pay_rec(&p, PK_TAG_ZMEMBER, "m", 1, v8, 8);
    pay_rec(&p, PK_TAG_ZSCORE, big, 9, NULL, 0);
    pay_end(&p);
    restore_fails(t, p.b, p.len, PK_ECORRUPT);
    pk_be64_put(big, pk_keyenc_score(1.0));
    pay_begin(&p, PK_TYPE_ZSET);
    pay_meta(&p, PK_TYPE_ZSET, 1);
    pay_rec(&p, PK_TAG_ZMEMBER, "m", 1, v8, 8);
    pay_rec(&p, PK_TAG_ZSCORE, big, 9, NULL, 0);
    pay_end(&p);
    assert_int_equal(pk_key_restore(t, 9, S("k"), p.b, p.len, 0, 0, NOW), 0);
    /* A NaN score. */
    pk_be64_put(v8, 0x7FF8000000000000ull);
    pk_be64_put(big, 0x7FF8000000000000ull ^ (1ull << 63));
    pay_begin(&p, PK_TYPE_ZSET);
    pay_meta(&p, PK_TYPE_ZSET, 1);
    pay_rec(&p, PK_TAG_ZMEMBER, "m", 1, v8, 8);
    pay_rec(&p, PK_TAG_ZSCORE, big, 9, NULL, 0);
    pay_end(&p);
    assert_int_equal(pk_key_restore(t, 9, S("n"), p.b, p.len, 0, 0, NOW),
                     PK_ECORRUPT);
    /* A record length beyond the payload (checksum made to match). */
    pay_begin(&p, PK_TYPE_STRING);
    pay_rec(&p, PK_TAG_META, NULL, 0, (uint8_t[10]){1}, 10);
    p.b[p.len - 11] = 0xFF;
    pay_end(&p);
    assert_int_equal(pk_key_restore(t, 9, S("n"), p.b, p.len, 0, 0, NOW),
                     PK_ECORRUPT);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* A long field's record copies verbatim under a long key's prefix: its
 * sub-key does not depend on the key. */
static void test_long_destination(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    char field[400], dst[300];
    int done = -1;
    pk_slice v;

    memset(field, 'f', sizeof(field) - 1);
    field[sizeof(field) - 1] = 0;
    memset(dst, 'd', sizeof(dst) - 1);
    dst[sizeof(dst) - 1] = 0;
    hset(t, 1, "h", field, "v");
    assert_int_equal(pk_key_copy(t, 1, S("h"), 1, S(dst), 0, NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(keys_of(t, 1), 2);
    assert_int_equal(pk_hmap_get(t, 1, S(dst), S(field), NOW, &v), 0);
    assert_int_equal(v.len, 1);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* RANDOMKEY finds every key of a partition, including a long run of keys
 * that share their first bytes, and nothing in an emptied one. */
static void test_random(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    char k[32];
    pk_slice out;
    int hit[300] = {0}, done;

    for (int i = 0; i < 300; i++) {
        snprintf(k, sizeof(k), "user:0000000%03d", i);
        set(t, 3, k, "v");
    }
    for (uint64_t r = 0; r < 30000; r++) {
        int i;
        assert_int_equal(pk_key_random(t, 3, r * 7919, NOW, &out), 0);
        assert_int_equal(out.len, 15);
        i = atoi((const char *)out.ptr + 12);
        hit[i]++;
    }
    for (int i = 0; i < 300; i++) {
        assert_true(hit[i] > 0);
    }
    assert_int_equal(pk_key_random(t, 4, 1, NOW, &out), PK_ENOTFOUND);
    /* Only expired keys: none. */
    set(t, 4, "e", "v");
    assert_int_equal(pk_key_expire(t, 4, S("e"), NOW + 10, 0, NOW, &done), 0);
    assert_int_equal(pk_key_random(t, 4, 5, NOW, &out), 0);
    assert_int_equal(pk_key_random(t, 4, 5, NOW + 10, &out), PK_ENOTFOUND);
    assert_int_equal(pk_txn_commit(t), 0);
}

static void test_expiretime(void **state)
{
    pk_txn *t = wtxn(st_of(state));
    int64_t when;
    int done;

    assert_int_equal(pk_key_expiretime(t, 1, S("k"), NOW, &when), 0);
    assert_int_equal(when, -2);
    set(t, 1, "k", "v");
    assert_int_equal(pk_key_expiretime(t, 1, S("k"), NOW, &when), 0);
    assert_int_equal(when, -1);
    assert_int_equal(pk_key_expire(t, 1, S("k"), NOW + 1234, 0, NOW, &done), 0);
    assert_int_equal(pk_key_expiretime(t, 1, S("k"), NOW, &when), 0);
    assert_int_equal(when, (int64_t)(NOW + 1234));
    assert_int_equal(pk_txn_commit(t), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_copy_string),
        T(test_rename_aggregates),
        cmocka_unit_test_setup_teardown(test_rename_ships, two_setup,
                                        two_teardown),
        T(test_dump_restore),
        T(test_set_records),
        T(test_restore_hostile),
        T(test_long_destination),
        T(test_random),
        T(test_expiretime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Keys of any length (pk_keyenc.h's long form): strings, hashes and sorted
 * sets under keys of 235 bytes to 1 MB, NUL-heavy keys and keys sharing
 * their head behave like short ones; SCAN returns the whole key; the
 * expiry index, the change log and snapshots carry them to another store;
 * pk__rec_check refuses a META record whose full key does not match its
 * prefix, and a lookup never returns another key's data under a colliding
 * prefix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyenc.h"
#include "store/pk_store_int.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define NKEYS 8

/* The test keys: owned, filled once by setup. */
typedef struct lk {
    tstore *a, *b;
    uint8_t *key[NKEYS];
    size_t klen[NKEYS];
} lk;

static int setup(void **state)
{
    static const size_t len[NKEYS] = {235,  500,      10000, 1u << 20,
                                      1000, 1u << 20, 120,   240};
    lk *w = calloc(1, sizeof(*w));

    if (w == NULL || (w->a = tstore_new()) == NULL ||
        (w->b = tstore_new()) == NULL) {
        return -1;
    }
    for (int i = 0; i < NKEYS; i++) {
        w->klen[i] = len[i];
        w->key[i] = malloc(len[i]);
        for (size_t j = 0; j < len[i]; j++) {
            w->key[i][j] = (uint8_t)('a' + (i + j) % 26);
        }
    }
    /* 4 and 6: NUL-heavy (6 is all NULs: long at 118); 5 differs from 3
     * in its last byte only, so both share the head. */
    memset(w->key[4], 0, 600);
    memset(w->key[6], 0, w->klen[6]);
    memcpy(w->key[5], w->key[3], w->klen[3]);
    w->key[5][w->klen[5] - 1] ^= 1;
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    lk *w = *state;

    for (int i = 0; i < NKEYS; i++) {
        free(w->key[i]);
    }
    tstore_free(w->a);
    tstore_free(w->b);
    free(w);
    return 0;
}

#define K(w, i) (w)->key[i], (w)->klen[i]

static void test_strings_and_keys(void **state)
{
    lk *w = *state;
    pk_txn *t = wtxn(w->a->s);
    char val[32];
    pk_slice v;
    pk_type ty;
    int64_t ttl;
    int done, del;

    for (int i = 0; i < NKEYS; i++) {
        snprintf(val, sizeof(val), "value-%d", i);
        assert_int_equal(
            pk_str_set(t, 1, K(w, i), S(val), NULL, NOW, &done, NULL), 0);
        assert_int_equal(done, 1);
    }
    for (int i = 0; i < NKEYS; i++) {
        snprintf(val, sizeof(val), "value-%d", i);
        assert_int_equal(pk_str_get(t, 1, K(w, i), NOW, &v), 0);
        assert_int_equal(v.len, strlen(val));
        assert_memory_equal(v.ptr, val, v.len);
        assert_int_equal(pk_key_type(t, 1, K(w, i), NOW, &ty), 0);
        assert_int_equal(ty, PK_TYPE_STRING);
    }
    /* A key one byte shorter than a stored one is another key. */
    assert_int_equal(pk_str_get(t, 1, w->key[3], w->klen[3] - 1, NOW, &v),
                     PK_ENOTFOUND);
    uint64_t len;
    assert_int_equal(pk_str_append(t, 1, K(w, 3), S("!"), NOW, &len), 0);
    assert_int_equal(len, 8);
    assert_int_equal(pk_key_expire(t, 1, K(w, 2), NOW + 5000, 0, NOW, &done),
                     0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_key_pttl(t, 1, K(w, 2), NOW, &ttl), 0);
    assert_int_equal(ttl, 5000);
    assert_int_equal(pk_str_get(t, 1, K(w, 2), NOW, &v), 0);
    assert_memory_equal(v.ptr, "value-2", 7);
    assert_int_equal(pk_key_persist(t, 1, K(w, 2), NOW, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(pk_key_expire(t, 1, K(w, 2), NOW + 10, 0, NOW, &done), 0);
    /* The expiry index names the long prefix: the cycle removes it. */
    size_t expired = 0;
    assert_int_equal(pk_store_expire_cycle(t, NOW + 20, 100, &expired), 0);
    assert_int_equal(expired, 1);
    assert_int_equal(pk_key_pttl(t, 1, K(w, 2), NOW, &ttl), 0);
    assert_int_equal(ttl, -2);
    assert_int_equal(pk_key_del(t, 1, K(w, 5), NOW, &del), 0);
    assert_int_equal(del, 1);
    assert_int_equal(pk_str_get(t, 1, K(w, 5), NOW, &v), PK_ENOTFOUND);
    assert_int_equal(pk_str_get(t, 1, K(w, 3), NOW, &v), 0);
    assert_memory_equal(v.ptr, "value-3!", 8);
    uint64_t n;
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, NKEYS - 2);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

static int each_field(void *ctx, pk_slice f, pk_slice v)
{
    int *n = ctx;

    assert_int_equal(f.len, 2);
    assert_int_equal(v.len, 2);
    (*n)++;
    return 0;
}

static int each_member(void *ctx, pk_slice m, double score)
{
    double *sum = ctx;

    assert_int_equal(m.len, 1);
    *sum += score;
    return 0;
}

static void test_hash_and_zset(void **state)
{
    lk *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_slice f[2] = {{"f1", 2}, {"f2", 2}}, fv[2] = {{"v1", 2}, {"v2", 2}};
    pk_slice m[3] = {{"a", 1}, {"b", 1}, {"c", 1}};
    double sc[3] = {1, 2, 3}, sum = 0, score;
    pk_zadd_result zr;
    uint64_t n;
    pk_slice v;
    pk_type ty;
    int fields = 0, del;

    assert_int_equal(pk_hmap_set(t, 2, K(w, 3), 2, f, fv, NOW, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pk_hmap_get(t, 2, K(w, 3), S("f2"), NOW, &v), 0);
    assert_memory_equal(v.ptr, "v2", 2);
    assert_int_equal(pk_hmap_each(t, 2, K(w, 3), NOW, each_field, &fields), 0);
    assert_int_equal(fields, 2);
    /* The neighbour under the same head is still missing. */
    assert_int_equal(pk_hmap_len(t, 2, K(w, 5), NOW, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(pk_zset_add(t, 2, K(w, 5), 0, 3, sc, m, NOW, &zr), 0);
    assert_int_equal(zr.count, 3);
    assert_int_equal(pk_zset_score(t, 2, K(w, 5), S("b"), NOW, &score), 0);
    assert_true(score == 2);
    assert_int_equal(
        pk_zset_range_rank(t, 2, K(w, 5), 0, -1, 0, NOW, each_member, &sum), 0);
    assert_true(sum == 6);
    assert_int_equal(pk_key_type(t, 2, K(w, 5), NOW, &ty), 0);
    assert_int_equal(ty, PK_TYPE_ZSET);
    assert_int_equal(pk_key_type(t, 2, K(w, 3), NOW, &ty), 0);
    assert_int_equal(ty, PK_TYPE_HASH);
    /* WRONGTYPE still comes before any write. */
    int done;
    pk_set_opts get = {PK_SET_GET, 0};
    pk_slice old;
    assert_int_equal(pk_str_set(t, 2, K(w, 3), S("x"), &get, NOW, &done, &old),
                     PK_STORE_WRONGTYPE);
    /* DEL takes every field with it. */
    assert_int_equal(pk_key_del(t, 2, K(w, 3), NOW, &del), 0);
    assert_int_equal(del, 1);
    assert_int_equal(pk_hmap_get(t, 2, K(w, 3), S("f1"), NOW, &v),
                     PK_ENOTFOUND);
    /* A long field beside a long key's 240-byte prefix: stored under its
     * digest (test_longsub.c has the rest). */
    char big[300];
    memset(big, 'f', sizeof(big));
    pk_slice bf = {big, sizeof(big)};
    assert_int_equal(pk_hmap_set(t, 2, K(w, 3), 1, &bf, fv, NOW, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_key_type(t, 2, K(w, 3), NOW, &ty), 0);
    assert_int_equal(ty, PK_TYPE_HASH);
    assert_int_equal(pk_hmap_get(t, 2, K(w, 3), big, sizeof(big), NOW, &v), 0);
    assert_memory_equal(v.ptr, fv[0].ptr, fv[0].len);
    assert_int_equal(pk_txn_error(t), 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

typedef struct seen {
    lk *w;
    int found[NKEYS];
    int others;
} seen;

static int scan_cb(void *ctx, uint32_t part, pk_slice key)
{
    seen *s = ctx;

    (void)part;
    for (int i = 0; i < NKEYS; i++) {
        if (key.len == s->w->klen[i] &&
            memcmp(key.ptr, s->w->key[i], key.len) == 0) {
            s->found[i]++;
            return 0;
        }
    }
    s->others++;
    return 0;
}

static void test_scan_returns_full_keys(void **state)
{
    lk *w = *state;
    pk_txn *t = wtxn(w->a->s);
    pk_scan_opts o = {NULL, 0, 1, PK_TYPE_NONE, NULL, NULL};
    uint64_t cur = 0, next;
    seen s = {w, {0}, 0};
    int done;

    for (int i = 0; i < NKEYS; i++) {
        assert_int_equal(pk_str_set(t, (uint32_t)i % 3, K(w, i), S("v"), NULL,
                                    NOW, &done, NULL),
                         0);
    }
    do {
        assert_int_equal(pk_store_scan(t, cur, &o, NOW, scan_cb, &s, &next), 0);
        cur = next;
    } while (cur != 0);
    for (int i = 0; i < NKEYS; i++) {
        assert_int_equal(s.found[i], 1);
    }
    assert_int_equal(s.others, 0);
    /* MATCH sees the whole key: "*z" (key 1 ends in ...) by its tail. */
    char pat[3] = {'*', (char)w->key[1][w->klen[1] - 1], 0};
    memset(&s, 0, sizeof(s));
    s.w = w;
    o = (pk_scan_opts){pat, 2, 1000, PK_TYPE_NONE, NULL, NULL};
    assert_int_equal(pk_store_scan(t, 0, &o, NOW, scan_cb, &s, &next), 0);
    assert_int_equal(s.found[1], 1);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* Replication and import carry long keys, validated (pk__rec_check). */
static void test_log_and_snapshot_carry_long_keys(void **state)
{
    lk *w = *state;
    pk_txn *ta = wtxn(w->a->s), *tb;
    tship sh = {NULL, 4, 0, 0};
    tbuf snap = {NULL, 0};
    pk_slice v;
    int done;

    for (int i = 0; i < NKEYS; i++) {
        assert_int_equal(
            pk_str_set(ta, 4, K(w, i), S("v"), NULL, NOW, &done, NULL), 0);
    }
    assert_int_equal(pk_txn_commit(ta), 0);
    ta = wtxn(w->a->s);
    tb = wtxn(w->b->s);
    sh.t = tb;
    assert_int_equal(pk_store_log_read(ta, 4, 1, tship_cb, &sh), 0);
    assert_int_equal(sh.n, NKEYS);
    for (int i = 0; i < NKEYS; i++) {
        assert_int_equal(pk_str_get(tb, 4, K(w, i), NOW, &v), 0);
    }
    assert_int_equal(pk_store_part_export(ta, 4, tbuf_cb, &snap), 0);
    assert_int_equal(pk_txn_commit(tb), 0);
    assert_int_equal(pk_txn_commit(ta), 0);
    /* The snapshot imports into a fresh partition 4 of store b. */
    tb = wtxn(w->b->s);
    int all = 0;
    assert_int_equal(pk_store_part_drop(tb, 4, 0, &all), 0);
    assert_int_equal(all, 1);
    pk_import *im;
    assert_int_equal(pk_import_new(4, &im), 0);
    assert_int_equal(pk_import_feed(im, tb, snap.p, snap.len), 0);
    assert_int_equal(pk_import_finish(im, tb), 0);
    pk_import_free(im);
    for (int i = 0; i < NKEYS; i++) {
        assert_int_equal(pk_str_get(tb, 4, K(w, i), NOW, &v), 0);
    }
    assert_int_equal(pk_txn_commit(tb), 0);
    free(snap.p);
}

/* The data key and META value of a string under key (a long one). */
static void meta_of(const uint8_t *key, size_t klen, uint8_t *k, size_t *kl,
                    uint8_t *v, size_t *vl)
{
    assert_int_equal(pk_keyenc_prefix(9, key, klen, k, PK_KEYENC_MAX, kl), 0);
    k[(*kl)++] = PK_TAG_META;
    v[0] = PK__T_STRING;
    v[1] = PK__META_FKEY;
    pk_be64_put(v + 2, 0);
    pk_be32_put(v + PK__META_HDR, (uint32_t)klen);
    memcpy(v + PK__META_HDR + 4, key, klen);
    memcpy(v + PK__META_HDR + 4 + klen, "val", 3);
    *vl = PK__META_HDR + 4 + klen + 3;
}

static void test_rec_check(void **state)
{
    lk *w = *state;
    uint8_t k[PK_KEYENC_MAX], *v = malloc(PK__META_HDR + 4 + 20000);
    uint8_t sk[PK_KEYENC_MAX], sv[64];
    size_t kl, vl, skl;

    meta_of(w->key[2], w->klen[2], k, &kl, v, &vl);
    assert_int_equal(pk__rec_check(k, kl, v, vl), 0);
    /* A stored key that is not the prefix's: one byte changed (digest
     * differs), one byte cut, a key with another head. */
    v[PK__META_HDR + 4 + 9000] ^= 1;
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    v[PK__META_HDR + 4 + 9000] ^= 1;
    v[PK__META_HDR + 4] ^= 1;
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    v[PK__META_HDR + 4] ^= 1;
    pk_be32_put(v + PK__META_HDR, (uint32_t)w->klen[2] - 1);
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    /* A length past the value's end. */
    pk_be32_put(v + PK__META_HDR, (uint32_t)vl);
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    pk_be32_put(v + PK__META_HDR, (uint32_t)w->klen[2]);
    assert_int_equal(pk__rec_check(k, kl, v, vl), 0);
    /* The digest in the prefix flipped. */
    k[kl - 2] ^= 0x80;
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    k[kl - 2] ^= 0x80;
    /* A long prefix without the full key, flags with unknown bits. */
    v[1] = 0;
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    v[1] = PK__META_FKEY | 2;
    assert_int_equal(pk__rec_check(k, kl, v, vl), PK_ECORRUPT);
    /* A short key's META must not carry one. */
    meta_of((const uint8_t *)"short", 5, sk, &skl, sv, &vl);
    assert_int_equal(pk__rec_check(sk, skl, sv, vl), PK_ECORRUPT);
    sv[1] = 0;
    assert_int_equal(pk__rec_check(sk, skl, sv, PK__META_HDR + 3), 0);
    free(v);
}

/* A corrupted record from the log is refused before anything is written. */
static void test_log_apply_rejects_bad_meta(void **state)
{
    lk *w = *state;
    uint8_t k[PK_KEYENC_MAX], *v = malloc(PK__META_HDR + 4 + 20000);
    uint8_t *rec = malloc(3 + PK_KEYENC_MAX + 4 + PK__META_HDR + 4 + 20000);
    size_t kl, vl, n = 0;
    pk_txn *t = wtxn(w->b->s);
    uint64_t keys;
    pk_slice got;

    meta_of(w->key[2], w->klen[2], k, &kl, v, &vl);
    v[PK__META_HDR + 4 + 5000] ^= 1; /* the digest no longer matches */
    rec[n++] = PK__LOG_PUT;
    rec[n++] = (uint8_t)((kl - 4) >> 8);
    rec[n++] = (uint8_t)(kl - 4);
    memcpy(rec + n, k + 4, kl - 4);
    n += kl - 4;
    pk_be32_put(rec + n, (uint32_t)vl);
    memcpy(rec + n + 4, v, vl);
    n += 4 + vl;
    assert_int_equal(pk_store_log_apply(t, 9, 1, rec, n), PK_ECORRUPT);
    assert_int_equal(pk_txn_error(t), 0);
    v[PK__META_HDR + 4 + 5000] ^= 1;
    memcpy(rec + n - vl, v, vl);
    assert_int_equal(pk_store_log_apply(t, 9, 1, rec, n), 0);
    assert_int_equal(pk_str_get(t, 9, K(w, 2), NOW, &got), 0);
    assert_memory_equal(got.ptr, "val", 3);
    assert_int_equal(pk_store_dbsize(t, &keys), 0);
    assert_int_equal(keys, 1);
    assert_int_equal(pk_txn_commit(t), 0);
    free(rec);
    free(v);
}

/*
 * A prefix collision, forged by writing key 0's META under key 1's long
 * prefix: key 1 reads as missing, its writes are refused with PK_ERANGE
 * (the transaction stays healthy) and key 0's data is not touched.
 */
static void test_collision_is_not_served(void **state)
{
    lk *w = *state;
    uint8_t k[PK_KEYENC_MAX], *v = malloc(PK__META_HDR + 4 + 300);
    size_t kl, vl;
    pk_txn *t = wtxn(w->a->s);
    pk_slice got;
    pk_type ty;
    int done, del;

    meta_of(w->key[0], w->klen[0], k, &kl, v, &vl);
    assert_int_equal(pk_keyenc_prefix(9, K(w, 1), k, sizeof(k), &kl), 0);
    k[kl++] = PK_TAG_META;
    assert_int_equal(pk__op_begin(t, 9, 0), 0);
    assert_int_equal(pk__op_end(t, pk__rec_put(t, k, kl, v, vl)), 0);
    assert_int_equal(pk_str_get(t, 9, K(w, 1), NOW, &got), PK_ENOTFOUND);
    assert_int_equal(pk_key_type(t, 9, K(w, 1), NOW, &ty), 0);
    assert_int_equal(ty, PK_TYPE_NONE);
    assert_int_equal(pk_str_set(t, 9, K(w, 1), S("x"), NULL, NOW, &done, NULL),
                     PK_ERANGE);
    assert_int_equal(pk_key_del(t, 9, K(w, 1), NOW, &del), 0);
    assert_int_equal(del, 0);
    assert_int_equal(pk_txn_error(t), 0);
    /* The forged record is still there, untouched. */
    MDB_val mv;
    assert_int_equal(pk__rec_get(t, k, kl, &mv), 0);
    assert_int_equal(mv.mv_size, vl);
    assert_memory_equal(mv.mv_data, v, vl);
    assert_int_equal(pk_txn_commit(t), 0);
    free(v);
}

/* A store written before long keys (format 2) is refused on open. */
static void test_old_format_refused(void **state)
{
    lk *w = *state;
    pk_txn *t = wtxn(w->a->s);
    uint8_t ver[4];
    MDB_val k = {6, "format"}, v = {4, ver};

    pk_be32_put(ver, 2);
    assert_int_equal(mdb_put(t->txn, t->s->info, &k, &v, 0), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(tstore_reopen(w->a), PK_EVERSION);
    assert_null(w->a->s);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_strings_and_keys),
        T(test_hash_and_zset),
        T(test_scan_returns_full_keys),
        T(test_log_and_snapshot_carry_long_keys),
        T(test_rec_check),
        T(test_log_apply_rejects_bad_meta),
        T(test_collision_is_not_served),
        T(test_old_format_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

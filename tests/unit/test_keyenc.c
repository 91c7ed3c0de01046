/*
 * The store's key encoding against a naive model: for random binary keys
 * (heavy in 0x00, 0x01 and 0xFF, the bytes the escaping is about), memcmp
 * of encoded keys must order exactly like (part, key, tag, sub-key)
 * compared field by field; parsing must give every field back; scores must
 * sort like doubles.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "store/pk_keyenc.h"

typedef struct tuple {
    uint32_t part;
    uint8_t key[8];
    size_t klen;
    uint8_t tag;
    uint8_t sub[6];
    size_t slen;
    uint8_t enc[64];
    size_t elen;
} tuple;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static uint8_t rnd_byte(void)
{
    static const uint8_t special[] = {0x00, 0x01, 0xFF, 0xFE, 'a'};

    return rnd() % 2 ? special[rnd() % 5] : (uint8_t)rnd();
}

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;

    return c ? c : (an > bn) - (an < bn);
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

static int model_cmp(const tuple *a, const tuple *b)
{
    int c;

    if (a->part != b->part) {
        return a->part < b->part ? -1 : 1;
    }
    if ((c = cmp_bytes(a->key, a->klen, b->key, b->klen)) != 0) {
        return c;
    }
    if (a->tag != b->tag) {
        return a->tag < b->tag ? -1 : 1;
    }
    return cmp_bytes(a->sub, a->slen, b->sub, b->slen);
}

static void random_tuple(tuple *t)
{
    size_t plen;

    t->part = rnd() % 3 ? rnd() % 4 : rnd();
    t->klen = rnd() % 7;
    for (size_t i = 0; i < t->klen; i++) {
        t->key[i] = rnd_byte();
    }
    t->tag = (uint8_t)(PK_TAG_META + rnd() % 4);
    t->slen = t->tag == PK_TAG_META ? 0 : rnd() % 6;
    for (size_t i = 0; i < t->slen; i++) {
        t->sub[i] = rnd_byte();
    }
    assert_int_equal(pk_keyenc_prefix(t->part, t->key, t->klen, t->enc,
                                      sizeof(t->enc), &plen),
                     0);
    assert_int_equal(plen, pk_keyenc_prefix_len(t->key, t->klen));
    assert_int_equal(pk_keyenc_sub(t->enc, sizeof(t->enc), plen, t->tag, t->sub,
                                   t->slen, &t->elen),
                     0);
}

static void test_order_matches_model(void **state)
{
    enum { N = 3000 };
    tuple *v = calloc(N, sizeof(*v));

    (void)state;
    assert_non_null(v);
    for (size_t i = 0; i < N; i++) {
        random_tuple(&v[i]);
    }
    for (size_t i = 0; i < 40000; i++) {
        const tuple *a = &v[rnd() % N], *b = &v[rnd() % N];
        int enc = cmp_bytes(a->enc, a->elen, b->enc, b->elen);
        assert_int_equal(sign(enc), sign(model_cmp(a, b)));
    }
    free(v);
}

static void test_prefix_never_prefix_of_other_key(void **state)
{
    uint8_t a[32], b[32];
    size_t al, bl;

    (void)state;
    /* "a" and "a\0": the shorter encoded key must not be a prefix. */
    assert_int_equal(pk_keyenc_prefix(7, "a", 1, a, sizeof(a), &al), 0);
    assert_int_equal(pk_keyenc_prefix(7, "a\0", 2, b, sizeof(b), &bl), 0);
    assert_true(al < bl);
    assert_true(memcmp(a, b, al) != 0);
    assert_true(memcmp(a, b, al) < 0);
    /* Exact bytes of the layout. */
    assert_int_equal(bl, 4 + 3 + 2);
    assert_memory_equal(b,
                        "\x00\x00\x00\x07"
                        "a\x00\xff\x00\x01",
                        9);
}

static void test_parse_roundtrip(void **state)
{
    tuple t;
    pk_keyparts kp;
    uint8_t user[16];

    (void)state;
    for (int i = 0; i < 2000; i++) {
        random_tuple(&t);
        assert_int_equal(pk_keyenc_parse(t.enc, t.elen, &kp), 0);
        assert_int_equal(kp.part, t.part);
        assert_int_equal(kp.tag, t.tag);
        assert_int_equal(kp.sub_len, t.slen);
        assert_memory_equal(kp.sub, t.sub, t.slen);
        assert_int_equal(pk_keyenc_unescape(kp.esc, kp.esc_len, user), t.klen);
        assert_memory_equal(user, t.key, t.klen);
        assert_int_equal(kp.prefix_len, pk_keyenc_prefix_len(t.key, t.klen));
    }
}

static void test_parse_rejects_malformed(void **state)
{
    pk_keyparts kp;

    (void)state;
    assert_int_equal(pk_keyenc_parse((const uint8_t *)"\0\0\0\1", 4, &kp),
                     PK_ECORRUPT);
    /* 0x00 followed by 0x02: a long form without its 16 digest bytes. */
    assert_int_equal(
        pk_keyenc_parse((const uint8_t *)"\0\0\0\1a\0\2\0\1\1", 10, &kp),
        PK_ECORRUPT);
    /* No terminator, or a terminator without a tag. */
    assert_int_equal(pk_keyenc_parse((const uint8_t *)"\0\0\0\1abcd", 8, &kp),
                     PK_ECORRUPT);
    assert_int_equal(pk_keyenc_parse((const uint8_t *)"\0\0\0\1ab\0\1", 8, &kp),
                     PK_ECORRUPT);
    assert_int_equal(pk_keyenc_parse((const uint8_t *)"\0\0\0\1a\0", 6, &kp),
                     PK_ECORRUPT);
    /* Unknown tags. */
    assert_int_equal(
        pk_keyenc_parse((const uint8_t *)"\0\0\0\1a\0\1\0", 8, &kp),
        PK_ECORRUPT);
    assert_int_equal(
        pk_keyenc_parse((const uint8_t *)"\0\0\0\1a\0\1\7", 8, &kp),
        PK_ECORRUPT);
    assert_int_equal(
        pk_keyenc_parse((const uint8_t *)"\0\0\0\1a\0\1\1", 8, &kp), 0);
}

static void test_length_limits(void **state)
{
    uint8_t key[600], buf[PK_KEYENC_MAX + 8];
    size_t n;

    (void)state;
    memset(key, 'k', sizeof(key));
    /* 4 + 234 + 2 == PK_KEYENC_SHORT is the longest short form; one byte
     * more takes the long form, as long: head, 00 02, digest. */
    assert_int_equal(pk_keyenc_prefix(1, key, 234, buf, sizeof(buf), &n), 0);
    assert_int_equal(n, PK_KEYENC_SHORT);
    assert_int_equal(buf[n - 1], 0x01);
    assert_false(pk_keyenc_long(key, 234));
    assert_true(pk_keyenc_long(key, 235));
    assert_int_equal(pk_keyenc_prefix(1, key, 235, buf, sizeof(buf), &n), 0);
    assert_int_equal(n, PK_KEYENC_SHORT);
    assert_int_equal(buf[4 + PK_KEYENC_HEAD], 0x00);
    assert_int_equal(buf[4 + PK_KEYENC_HEAD + 1], 0x02);
    /* NUL bytes take two bytes each: 117 NULs are short, 118 long, and a
     * head of NULs holds 109 of them (218 bytes). */
    memset(key, 0, 300);
    assert_false(pk_keyenc_long(key, 117));
    assert_true(pk_keyenc_long(key, 118));
    assert_int_equal(pk_keyenc_prefix(1, key, 300, buf, sizeof(buf), &n), 0);
    assert_int_equal(n, 4 + PK_KEYENC_HEAD + 2 + PK_KEYENC_DIGEST);
    key[0] = 'x'; /* x then NULs: the head stops short of a split NUL */
    assert_int_equal(pk_keyenc_prefix(1, key, 300, buf, sizeof(buf), &n), 0);
    assert_int_equal(n, 4 + PK_KEYENC_HEAD - 1 + 2 + PK_KEYENC_DIGEST);
    assert_int_equal(n, pk_keyenc_prefix_len(key, 300));
    /* Only a buffer too small fails, and leaves it alone. */
    memset(buf, 0xAA, sizeof(buf));
    assert_int_equal(pk_keyenc_prefix(1, key, 300, buf, 100, &n), PK_ERANGE);
    assert_int_equal(buf[0], 0xAA);
    /* Sub-keys: the whole key must fit in PK_KEYENC_MAX. */
    assert_int_equal(pk_keyenc_prefix(1, "k", 1, buf, sizeof(buf), &n), 0);
    assert_int_equal(pk_keyenc_sub(buf, sizeof(buf), n, PK_TAG_HFIELD, key,
                                   PK_KEYENC_MAX - n - 1, &n),
                     0);
    assert_int_equal(n, PK_KEYENC_MAX);
    assert_int_equal(pk_keyenc_sub(buf, sizeof(buf), 7, PK_TAG_HFIELD, key,
                                   PK_KEYENC_MAX - 7, &n),
                     PK_ERANGE);
}

/* A key for the long-form tests: lengths around the threshold, or big. */
typedef struct lkey {
    uint8_t *key; /* owned */
    size_t klen;
    uint8_t pre[PK_KEYENC_SHORT];
    size_t plen;
} lkey;

static void random_lkey(lkey *k, size_t klen, int nul_heavy)
{
    k->klen = klen;
    k->key = malloc(klen ? klen : 1);
    assert_non_null(k->key);
    for (size_t i = 0; i < klen; i++) {
        k->key[i] = nul_heavy && rnd() % 2 ? 0 : rnd_byte();
    }
    assert_int_equal(pk_keyenc_prefix(rnd() % 2, k->key, klen, k->pre,
                                      sizeof(k->pre), &k->plen),
                     0);
    assert_true(k->plen <= PK_KEYENC_SHORT);
    assert_int_equal(k->plen, pk_keyenc_prefix_len(k->key, klen));
}

static size_t lkey_len(void)
{
    static const size_t big[] = {300, 500, 4096, 1u << 20};

    switch (rnd() % 4) {
    case 0:
        return 110 + rnd() % 20; /* all-NUL keys cross at 118 */
    case 1:
        return 225 + rnd() % 20; /* NUL-free keys cross at 235 */
    case 2:
        return rnd() % 260;
    }
    return big[rnd() % 4];
}

static void test_long_form_properties(void **state)
{
    enum { N = 400 };
    lkey *v = calloc(N, sizeof(*v));
    uint8_t a[PK_KEYENC_SHORT + 8], b[PK_KEYENC_SHORT + 8];

    (void)state;
    assert_non_null(v);
    for (size_t i = 0; i < N; i++) {
        random_lkey(&v[i], lkey_len(), rnd() % 3 == 0);
    }
    /* Two keys differing only in their last byte: same head. */
    free(v[0].key);
    free(v[1].key);
    random_lkey(&v[0], 1u << 20, 0);
    v[1].klen = v[0].klen;
    v[1].key = malloc(v[1].klen);
    memcpy(v[1].key, v[0].key, v[1].klen);
    v[1].key[v[1].klen - 1] ^= 1;
    pk_keyenc_prefix(pk_be32_get(v[0].pre), v[1].key, v[1].klen, v[1].pre,
                     sizeof(v[1].pre), &v[1].plen);
    assert_memory_equal(v[0].pre, v[1].pre, v[0].plen - PK_KEYENC_DIGEST);
    for (size_t i = 0; i < N; i++) {
        for (size_t j = 0; j < N; j++) {
            const lkey *x = &v[i], *y = &v[j];
            int same = x->klen == y->klen &&
                       pk_be32_get(x->pre) == pk_be32_get(y->pre) &&
                       memcmp(x->key, y->key, x->klen) == 0;
            size_t n = x->plen < y->plen ? x->plen : y->plen;
            int c = memcmp(x->pre, y->pre, n);

            /* Equal prefixes exactly for equal keys, and no prefix is a
             * prefix of another: a key's records are its own range. */
            assert_int_equal(c == 0, same);
            if (same) {
                continue;
            }
            /* So any records of the two keys order like their prefixes. */
            memcpy(a, x->pre, x->plen);
            memcpy(b, y->pre, y->plen);
            a[x->plen] = (uint8_t)(PK_TAG_META + rnd() % 4);
            b[y->plen] = (uint8_t)(PK_TAG_META + rnd() % 4);
            a[x->plen + 1] = 0xFF;
            b[y->plen + 1] = 0x00;
            assert_int_equal(sign(cmp_bytes(a, x->plen + 2, b, y->plen + 1)),
                             sign(c));
        }
    }
    for (size_t i = 0; i < N; i++) {
        free(v[i].key);
    }
    free(v);
}

static void test_long_form_parse(void **state)
{
    uint8_t buf[PK_KEYENC_MAX], user[PK_KEYENC_SHORT], dig[PK_KEYENC_DIGEST];
    pk_keyparts kp;
    size_t n;
    lkey k;

    (void)state;
    for (int i = 0; i < 300; i++) {
        random_lkey(&k, lkey_len(), rnd() % 3 == 0);
        memcpy(buf, k.pre, k.plen);
        assert_int_equal(pk_keyenc_sub(buf, sizeof(buf), k.plen, PK_TAG_HFIELD,
                                       "f\0\2", 3, &n),
                         0);
        assert_int_equal(pk_keyenc_parse(buf, n, &kp), 0);
        assert_int_equal(kp.part, pk_be32_get(k.pre));
        assert_int_equal(kp.prefix_len, k.plen);
        assert_int_equal(kp.tag, PK_TAG_HFIELD);
        assert_int_equal(kp.sub_len, 3);
        assert_memory_equal(kp.sub, "f\0\2", 3);
        assert_int_equal(kp.longkey, pk_keyenc_long(k.key, k.klen));
        n = pk_keyenc_unescape(kp.esc, kp.esc_len, user);
        if (!kp.longkey) {
            assert_null(kp.digest);
            assert_int_equal(n, k.klen);
        } else {
            /* The head is the key's start, as long as it fits. */
            assert_true(n < k.klen && kp.esc_len <= PK_KEYENC_HEAD);
            assert_true(kp.esc_len + 1 + (k.key[n] == 0) > PK_KEYENC_HEAD);
            assert_int_equal(pk_keyenc_digest(k.key, k.klen, dig), 0);
            assert_memory_equal(kp.digest, dig, PK_KEYENC_DIGEST);
        }
        assert_memory_equal(user, k.key, n);
        free(k.key);
    }
    /* A long-form prefix cut short, or grown past 240 bytes, is corrupt. */
    random_lkey(&k, 1000, 0);
    memcpy(buf, k.pre, k.plen);
    buf[k.plen] = PK_TAG_META;
    assert_int_equal(pk_keyenc_parse(buf, k.plen + 1, &kp), 0);
    assert_int_equal(pk_keyenc_parse(buf, k.plen, &kp), PK_ECORRUPT);
    memset(buf, 'a', sizeof(buf));
    buf[300] = 0;
    buf[301] = 1;
    buf[302] = PK_TAG_META;
    assert_int_equal(pk_keyenc_parse(buf, 303, &kp), PK_ECORRUPT);
    free(k.key);
}

static void test_long_form_order(void **state)
{
    uint8_t key[400], s1[PK_KEYENC_SHORT], s2[PK_KEYENC_SHORT];
    uint8_t l[PK_KEYENC_SHORT];
    size_t n1, n2, nl, head = PK_KEYENC_HEAD;

    (void)state;
    /* A long key sorts after its head as a key and before every key that
     * extends the head (pk_keyenc.h). */
    memset(key, 'h', sizeof(key));
    pk_keyenc_prefix(3, key, sizeof(key), l, sizeof(l), &nl);
    pk_keyenc_prefix(3, key, head, s1, sizeof(s1), &n1);
    key[head] = 0;
    pk_keyenc_prefix(3, key, head + 1, s2, sizeof(s2), &n2);
    assert_true(memcmp(s1, l, n1) < 0);
    assert_true(memcmp(l, s2, n2) < 0);
}

static void test_digest_known_answers(void **state)
{
    uint8_t d[PK_KEYENC_DIGEST];

    (void)state;
    /* SHA-256("") and SHA-256("abc"), first 16 bytes (FIPS 180-2). */
    assert_int_equal(pk_keyenc_digest("", 0, d), 0);
    assert_memory_equal(d,
                        "\xe3\xb0\xc4\x42\x98\xfc\x1c\x14"
                        "\x9a\xfb\xf4\xc8\x99\x6f\xb9\x24",
                        16);
    assert_int_equal(pk_keyenc_digest("abc", 3, d), 0);
    assert_memory_equal(d,
                        "\xba\x78\x16\xbf\x8f\x01\xcf\xea"
                        "\x41\x41\x40\xde\x5d\xae\x22\x23",
                        16);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void test_score_order(void **state)
{
    double v[600];
    size_t n = 0;

    (void)state;
    v[n++] = -INFINITY;
    v[n++] = INFINITY;
    v[n++] = 0.0;
    v[n++] = -0.0;
    v[n++] = 5e-324;
    v[n++] = -5e-324;
    v[n++] = 1.7976931348623157e308;
    v[n++] = -1.7976931348623157e308;
    while (n < 600) {
        uint64_t u = (uint64_t)rnd() << 32 | rnd();
        double d;
        memcpy(&d, &u, sizeof(d));
        if (!isnan(d)) {
            v[n++] = rnd() % 2 ? d : (double)(int32_t)rnd() / 16;
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t u = pk_keyenc_score(v[i]);
        double back = pk_keyenc_score_decode(u);
        assert_true(back == v[i]);
        for (size_t j = 0; j < n; j += 7) {
            uint64_t w = pk_keyenc_score(v[j]);
            assert_int_equal(sign((u > w) - (u < w)), cmp_double(&v[i], &v[j]));
        }
    }
    /* -0 and +0 are one score; byte order is big-endian u64 order. */
    assert_true(pk_keyenc_score(-0.0) == pk_keyenc_score(0.0));
    qsort(v, n, sizeof(v[0]), cmp_double);
    for (size_t i = 1; i < n; i++) {
        uint8_t a[8], b[8];
        pk_be64_put(a, pk_keyenc_score(v[i - 1]));
        pk_be64_put(b, pk_keyenc_score(v[i]));
        assert_true(memcmp(a, b, 8) <= 0);
    }
}

static void test_be_codecs(void **state)
{
    uint8_t b[8];

    (void)state;
    pk_be64_put(b, 0x0102030405060708ull);
    assert_memory_equal(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    assert_true(pk_be64_get(b) == 0x0102030405060708ull);
    pk_be32_put(b, 0xA1B2C3D4u);
    assert_memory_equal(b, "\xA1\xB2\xC3\xD4", 4);
    assert_int_equal(pk_be32_get(b), 0xA1B2C3D4u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_matches_model),
        cmocka_unit_test(test_prefix_never_prefix_of_other_key),
        cmocka_unit_test(test_parse_roundtrip),
        cmocka_unit_test(test_parse_rejects_malformed),
        cmocka_unit_test(test_length_limits),
        cmocka_unit_test(test_long_form_properties),
        cmocka_unit_test(test_long_form_parse),
        cmocka_unit_test(test_long_form_order),
        cmocka_unit_test(test_digest_known_answers),
        cmocka_unit_test(test_score_order),
        cmocka_unit_test(test_be_codecs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

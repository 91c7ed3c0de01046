/*
 * Tests of the embedded coordinator's state encoding (pk_ckv_codec.c): a
 * known-answer encoding written out byte by byte, round trips that must be
 * canonical, restart semantics (revisions kept, leases granted afresh for
 * their full TTL, history empty), and every class of malformed input --
 * each truncation, each single-bit flip, hand-built buffers whose checksum
 * is valid so that the parser proper must catch them, and random bodies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/pk_ckv.h"
#include "coord/pk_coord.h"
#include "core/pk_err.h"

/* Internal to the core library (pk_pmap_codec.c). */
uint32_t pk__crc32c(const void *data, size_t len);

#define S(s) (s), strlen(s)

/* Stands in for *out so that "untouched on failure" can be checked. */
static int sentinel;
#define SENTINEL ((pk_ckv *)&sentinel)

/* ---- a buffer builder ------------------------------------------------- */

typedef struct bld {
    uint8_t b[8192];
    size_t n;
} bld;

static void be(bld *x, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        x->b[x->n++] = (uint8_t)(v >> (8 * (n - 1 - i)));
    }
}

static void bytes(bld *x, const void *p, size_t n)
{
    memcpy(x->b + x->n, p, n);
    x->n += n;
}

static void hdr(bld *x, uint64_t rev, uint64_t next_lease, uint32_t nleases,
                uint32_t nkeys)
{
    x->n = 0;
    bytes(x, "PKCK", 4);
    be(x, 1, 2);
    be(x, 0, 2);
    be(x, rev, 8);
    be(x, next_lease, 8);
    be(x, nleases, 4);
    be(x, nkeys, 4);
}

static void lease(bld *x, uint64_t id, uint64_t ttl)
{
    be(x, id, 8);
    be(x, ttl, 8);
}

static void kv(bld *x, const char *k, const char *v, uint64_t create,
               uint64_t mod, uint64_t version, uint64_t lease_id)
{
    be(x, strlen(k), 2);
    bytes(x, k, strlen(k));
    be(x, strlen(v), 4);
    bytes(x, v, strlen(v));
    be(x, create, 8);
    be(x, mod, 8);
    be(x, version, 8);
    be(x, lease_id, 8);
}

static void crc(bld *x)
{
    be(x, pk__crc32c(x->b, x->n), 4);
}

static void expect_decode(const uint8_t *buf, size_t len, int err)
{
    pk_ckv *out = SENTINEL;

    assert_int_equal(pk_ckv_decode(buf, len, NULL, 0, &out), err);
    assert_ptr_equal(out, SENTINEL);
}

/* A state with leases, binary keys, an empty and a large value. */
static pk_ckv *sample(void)
{
    static uint8_t big[3000];
    pk_ckv *s = NULL;
    uint64_t l1, l2, l3;

    for (size_t i = 0; i < sizeof(big); i++) {
        big[i] = (uint8_t)(i * 7);
    }
    assert_int_equal(pk_ckv_new(NULL, &s), PK_OK);
    assert_int_equal(pk_ckv_lease_grant(s, 100, 0, &l1), PK_OK);
    assert_int_equal(pk_ckv_lease_grant(s, 5000, 0, &l2), PK_OK);
    assert_int_equal(pk_ckv_lease_grant(s, 7, 0, &l3), PK_OK);
    assert_int_equal(pk_ckv_lease_revoke(s, l1), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("map"), S("v1"), 0, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("node/a"), S(""), l2, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_put(s, "b\0\xff", 3, big, sizeof(big), l3, 0, NULL),
                     PK_OK);
    assert_int_equal(pk_ckv_put(s, S("map"), S("v2"), 0, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("gone"), S("x"), 0, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_delete(s, S("gone")), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("map"), S("v3"), 0, 0, NULL), PK_OK);
    return s;
}

/* ---- known answer, round trips --------------------------------------- */

static void test_golden(void **state)
{
    /* clang-format off */
    static const uint8_t want[] = {
        'P', 'K', 'C', 'K', 0, 1, 0, 0,  /* magic, version 1, flags */
        0, 0, 0, 0, 0, 0, 0, 4,          /* revision 4 */
        0, 0, 0, 0, 0, 0, 0, 2,          /* next lease 2 */
        0, 0, 0, 1, 0, 0, 0, 1,          /* 1 lease, 1 key */
        0, 0, 0, 0, 0, 0, 0, 1,          /* lease 1 */
        0, 0, 0, 0, 0, 0, 0x27, 0x10,    /* ttl 10000 */
        0, 1, 'k', 0, 0, 0, 2, 'v', 'w', /* "k" = "vw" */
        0, 0, 0, 0, 0, 0, 0, 1,          /* create 1 */
        0, 0, 0, 0, 0, 0, 0, 3,          /* mod 3 */
        0, 0, 0, 0, 0, 0, 0, 2,          /* version 2 */
        0, 0, 0, 0, 0, 0, 0, 1,          /* lease 1 */
    };
    /* clang-format on */
    uint8_t full[sizeof(want) + 4];
    pk_ckv *s = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t id;
    uint32_t c;

    (void)state;
    memcpy(full, want, sizeof(want));
    c = pk__crc32c(want, sizeof(want));
    for (int i = 0; i < 4; i++) {
        full[sizeof(want) + i] = (uint8_t)(c >> (24 - 8 * i));
    }
    /* put k (1), put x (2), put k (3), delete x (4). */
    assert_int_equal(pk_ckv_new(NULL, &s), PK_OK);
    assert_int_equal(pk_ckv_lease_grant(s, 10000, 0, &id), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("k"), S("v"), id, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("x"), S("v"), 0, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_cas(s, S("k"), 1, S("vw"), id, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_delete(s, S("x")), PK_OK);
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    assert_int_equal(len, sizeof(full));
    assert_memory_equal(buf, full, len);
    free(buf);
    pk_ckv_free(s);
    /* The known answer decodes, and re-encodes to itself. */
    assert_int_equal(pk_ckv_decode(full, sizeof(full), NULL, 0, &s), PK_OK);
    assert_int_equal(pk_ckv_revision(s), 4);
    assert_int_equal(pk_ckv_count(s), 1);
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    assert_int_equal(len, sizeof(full));
    assert_memory_equal(buf, full, len);
    free(buf);
    pk_ckv_free(s);
    /* The CRC32C is Castagnoli's: check value of "123456789". */
    assert_int_equal(pk__crc32c("123456789", 9), 0xe3069283u);
}

static void test_roundtrip(void **state)
{
    pk_ckv *s = sample();
    pk_ckv *t = NULL;
    pk_coord_kv *a = NULL;
    pk_coord_kv *b = NULL;
    size_t na, nb;
    uint8_t *buf = NULL;
    uint8_t *again = NULL;
    size_t len, again_len;

    (void)state;
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    assert_int_equal(pk_ckv_decode(buf, len, NULL, 0, &t), PK_OK);
    assert_int_equal(pk_ckv_encode(t, &again, &again_len), PK_OK);
    assert_int_equal(again_len, len);
    assert_memory_equal(again, buf, len);
    assert_int_equal(pk_ckv_revision(t), pk_ckv_revision(s));
    assert_int_equal(pk_ckv_range(s, NULL, 0, &a, &na), PK_OK);
    assert_int_equal(pk_ckv_range(t, NULL, 0, &b, &nb), PK_OK);
    assert_int_equal(na, 3);
    assert_int_equal(nb, na);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].key_len, b[i].key_len);
        assert_memory_equal(a[i].key, b[i].key, a[i].key_len);
        assert_int_equal(a[i].value_len, b[i].value_len);
        if (a[i].value_len > 0) {
            assert_memory_equal(a[i].value, b[i].value, a[i].value_len);
        }
        assert_int_equal(a[i].create_revision, b[i].create_revision);
        assert_int_equal(a[i].mod_revision, b[i].mod_revision);
        assert_int_equal(a[i].version, b[i].version);
        assert_int_equal(a[i].lease, b[i].lease);
    }
    free(a);
    free(b);
    free(buf);
    free(again);
    pk_ckv_free(s);
    pk_ckv_free(t);
}

static void ignore(void *ctx, int rc, const pk_coord_event *ev)
{
    (void)ctx;
    (void)rc;
    (void)ev;
}

/* What a restart does: revisions stay, leases get their whole TTL again. */
static void test_restart_semantics(void **state)
{
    pk_ckv *s = sample();
    pk_ckv *t = NULL;
    pk_coord_kv kv;
    uint8_t *buf = NULL;
    size_t len;
    uint64_t rev = pk_ckv_revision(s);
    uint64_t ttl, left, id;
    pk_ckv_watch *w;
    uint32_t n;

    (void)state;
    /* Lease 3 (ttl 7) is long past its deadline at 4990, not yet ticked. */
    assert_int_equal(pk_ckv_lease_ttl(s, 2, 4990, &ttl, &left), PK_OK);
    assert_int_equal(left, 10);
    assert_int_equal(pk_ckv_lease_ttl(s, 3, 4990, &ttl, &left), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    assert_int_equal(pk_ckv_decode(buf, len, NULL, 1000000, &t), PK_OK);
    assert_int_equal(pk_ckv_revision(t), rev);
    assert_int_equal(pk_ckv_lease_ttl(t, 2, 1000000, &ttl, &left), PK_OK);
    assert_int_equal(ttl, 5000);
    assert_int_equal(left, 5000);
    assert_int_equal(pk_ckv_lease_ttl(t, 3, 1000000, &ttl, &left), PK_OK);
    assert_int_equal(left, 7);
    assert_int_equal(pk_ckv_lease_ttl(t, 1, 1000000, &ttl, &left),
                     PK_ENOTFOUND); /* revoked before */
    assert_int_equal(pk_ckv_next_deadline(t), 1000007);
    /* Ids continue after the restored ones. */
    assert_int_equal(pk_ckv_lease_grant(t, 10, 1000000, &id), PK_OK);
    assert_int_equal(id, 4);
    /* The history starts empty. */
    assert_int_equal(pk_ckv_oldest_revision(t), rev + 1);
    assert_int_equal(pk_ckv_watch_start(t, NULL, 0, rev, ignore, NULL, &w),
                     PK_ERANGE);
    assert_int_equal(pk_ckv_watch_start(t, NULL, 0, rev + 1, ignore, NULL, &w),
                     PK_OK);
    /* The restored leases expire and take their keys with them. */
    assert_int_equal(pk_ckv_tick(t, 1000007, &n), PK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(pk_ckv_get(t, "b\0\xff", 3, &kv), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_revision(t), rev + 1);
    assert_int_equal(pk_ckv_get(t, S("node/a"), &kv), PK_OK);
    assert_int_equal(kv.lease, 2);
    free(buf);
    pk_ckv_free(s);
    pk_ckv_free(t);
}

static void test_empty_state(void **state)
{
    pk_ckv *s = NULL;
    pk_ckv *t = NULL;
    uint8_t *buf = NULL;
    size_t len;

    (void)state;
    assert_int_equal(pk_ckv_new(NULL, &s), PK_OK);
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    assert_int_equal(len, 36);
    assert_int_equal(pk_ckv_decode(buf, len, NULL, 0, &t), PK_OK);
    assert_int_equal(pk_ckv_revision(t), 0);
    assert_int_equal(pk_ckv_count(t), 0);
    free(buf);
    pk_ckv_free(s);
    pk_ckv_free(t);
    /* Bad options are refused. */
    {
        pk_ckv_opts o = {PK_CKV_HIST_EVENTS_MAX + 1, 0};

        assert_int_equal(pk_ckv_new(&o, &s), PK_EINVAL);
    }
}

/* ---- malformed input -------------------------------------------------- */

static void test_truncations(void **state)
{
    pk_ckv *s = sample();
    uint8_t *buf = NULL;
    size_t len;

    (void)state;
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    for (size_t n = 0; n < len; n++) {
        pk_ckv *out = SENTINEL;
        uint8_t *copy = malloc(n + 1); /* exact size, for sanitizers */

        memcpy(copy, buf, n);
        assert_int_not_equal(pk_ckv_decode(copy, n, NULL, 0, &out), PK_OK);
        assert_ptr_equal(out, SENTINEL);
        free(copy);
    }
    /* One extra byte is rejected too. */
    {
        uint8_t *longer = malloc(len + 1);

        memcpy(longer, buf, len);
        longer[len] = 0;
        expect_decode(longer, len + 1, PK_ECHECKSUM);
        free(longer);
    }
    expect_decode(NULL, 0, PK_ECORRUPT);
    free(buf);
    pk_ckv_free(s);
}

static void test_bitflips(void **state)
{
    pk_ckv *s = sample();
    uint8_t *buf = NULL;
    size_t len;

    (void)state;
    assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            pk_ckv *out = SENTINEL;
            int rc;

            buf[i] ^= (uint8_t)(1u << bit);
            rc = pk_ckv_decode(buf, len, NULL, 0, &out);
            buf[i] ^= (uint8_t)(1u << bit);
            if (i < 4) {
                assert_int_equal(rc, PK_ECORRUPT);
            } else if (i < 6) {
                assert_int_equal(rc, PK_EVERSION);
            } else {
                assert_int_equal(rc, PK_ECHECKSUM);
            }
            assert_ptr_equal(out, SENTINEL);
        }
    }
    free(buf);
    pk_ckv_free(s);
}

/* Buffers with a valid checksum that the parser itself must refuse. */
static void test_bad_bodies(void **state)
{
    bld x;

    (void)state;
    /* A valid baseline, so each case below differs in one thing. */
    hdr(&x, 5, 3, 1, 2);
    lease(&x, 2, 100);
    kv(&x, "a", "1", 1, 3, 2, 2);
    kv(&x, "b", "", 5, 5, 1, 0);
    crc(&x);
    {
        pk_ckv *s = NULL;

        assert_int_equal(pk_ckv_decode(x.b, x.n, NULL, 0, &s), PK_OK);
        pk_ckv_free(s);
    }
#define BAD(build)                                                             \
    do {                                                                       \
        build;                                                                 \
        crc(&x);                                                               \
        expect_decode(x.b, x.n, PK_ECORRUPT);                                  \
    } while (0)
    /* header */
    BAD((hdr(&x, 5, 3, 0, 0), x.b[7] = 1));      /* flags */
    BAD(hdr(&x, 5, 0, 0, 0));                    /* next lease 0 */
    BAD(hdr(&x, 1ull << 63, 1, 0, 0));           /* revision too big */
    BAD(hdr(&x, 5, 1, 0xffffffffu, 0));          /* lease count */
    BAD(hdr(&x, 5, 1, 0, 0xffffffffu));          /* key count */
    BAD((hdr(&x, 5, 1, 0, 1), lease(&x, 1, 1))); /* count vs bytes */
    BAD((hdr(&x, 5, 1, 0, 0), be(&x, 0, 1)));    /* trailing byte */
    /* leases */
    BAD((hdr(&x, 5, 3, 1, 0), lease(&x, 0, 100))); /* id 0 */
    BAD((hdr(&x, 5, 3, 1, 0), lease(&x, 3, 100))); /* id >= next */
    BAD((hdr(&x, 5, 3, 1, 0), lease(&x, 1, 0)));   /* ttl 0 */
    BAD((hdr(&x, 5, 3, 1, 0), lease(&x, 1, PK_COORD_TTL_MAX_MS + 1)));
    BAD((hdr(&x, 5, 3, 2, 0), lease(&x, 2, 1), lease(&x, 1, 1)));
    BAD((hdr(&x, 5, 3, 2, 0), lease(&x, 2, 1), lease(&x, 2, 1)));
    /* keys */
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "", "v", 1, 1, 1, 0)));
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "a", "v", 0, 1, 1, 0)));
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "a", "v", 3, 2, 1, 0)));
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "a", "v", 1, 6, 1, 0)));
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "a", "v", 1, 1, 0, 0)));
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "a", "v", 2, 3, 3, 0)));
    BAD((hdr(&x, 5, 1, 0, 1), kv(&x, "a", "v", 1, 1, 1, 1)));
    BAD((hdr(&x, 5, 1, 0, 2), kv(&x, "b", "v", 1, 1, 1, 0),
         kv(&x, "a", "v", 2, 2, 1, 0))); /* unsorted */
    BAD((hdr(&x, 5, 1, 0, 2), kv(&x, "a", "v", 1, 1, 1, 0),
         kv(&x, "a", "v", 2, 2, 1, 0))); /* duplicate */
    BAD((hdr(&x, 5, 1, 0, 2), kv(&x, "ab", "v", 1, 1, 1, 0),
         kv(&x, "a", "v", 2, 2, 1, 0))); /* a prefix sorts first */
    BAD((hdr(&x, 5, 1, 0, 2), kv(&x, "a", "v", 1, 4, 2, 0),
         kv(&x, "b", "v", 4, 4, 1, 0))); /* revision 4 twice */
    BAD((hdr(&x, 5, 1, 0, 2), kv(&x, "a", "v", 2, 2, 1, 0),
         kv(&x, "b", "v", 2, 3, 2, 0))); /* revision 2 twice */
    /* A key length over the limit, and a value longer than the buffer. */
    BAD((hdr(&x, 5, 1, 0, 1), be(&x, PK_COORD_KEY_MAX + 1, 2),
         memset(x.b + x.n, 'k', PK_COORD_KEY_MAX + 1),
         x.n += PK_COORD_KEY_MAX + 1, be(&x, 0, 4), be(&x, 1, 8), be(&x, 1, 8),
         be(&x, 1, 8), be(&x, 0, 8)));
    BAD((hdr(&x, 5, 1, 0, 1), be(&x, 1, 2), be(&x, 'a', 1),
         be(&x, 0xffffffffu, 4), kv(&x, "", "", 0, 0, 0, 0)));
#undef BAD
    /* The same key at exactly the limit is fine. */
    hdr(&x, 5, 1, 0, 1);
    be(&x, PK_COORD_KEY_MAX, 2);
    memset(x.b + x.n, 'k', PK_COORD_KEY_MAX);
    x.n += PK_COORD_KEY_MAX;
    be(&x, 0, 4);
    be(&x, 1, 8);
    be(&x, 1, 8);
    be(&x, 1, 8);
    be(&x, 0, 8);
    crc(&x);
    {
        pk_ckv *s = NULL;

        assert_int_equal(pk_ckv_decode(x.b, x.n, NULL, 0, &s), PK_OK);
        pk_ckv_free(s);
    }
    /* Bad magic and unknown versions. */
    hdr(&x, 0, 1, 0, 0);
    x.b[0] = 'X';
    crc(&x);
    expect_decode(x.b, x.n, PK_ECORRUPT);
    hdr(&x, 0, 1, 0, 0);
    x.b[5] = 2;
    crc(&x);
    expect_decode(x.b, x.n, PK_EVERSION);
    expect_decode(x.b, 5, PK_ECORRUPT);
    /* Shorter than a header but with the right magic and version. */
    hdr(&x, 0, 1, 0, 0);
    expect_decode(x.b, 20, PK_ECORRUPT);
}

/* Random bodies behind a valid header and checksum: never a crash, and
 * whatever is accepted re-encodes to itself. */
static void test_random_bodies(void **state)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int accepted = 0;

    (void)state;
    for (int iter = 0; iter < 20000; iter++) {
        bld x;
        size_t body;
        pk_ckv *s = NULL;
        int rc;

        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        hdr(&x, seed >> 60, 1 + (seed >> 62), (seed >> 40) % 3,
            (seed >> 44) % 3);
        body = (size_t)((seed >> 20) % 120);
        for (size_t i = 0; i < body; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            /* Mostly small bytes, so that lengths and counts are often
             * plausible and the parser gets past its first checks. */
            x.b[x.n++] = (uint8_t)((seed >> 33) % 4 == 0 ? seed >> 40
                                                         : (seed >> 40) % 4);
        }
        crc(&x);
        rc = pk_ckv_decode(x.b, x.n, NULL, 0, &s);
        if (rc == PK_OK) {
            uint8_t *buf = NULL;
            size_t len;

            accepted++;
            assert_int_equal(pk_ckv_encode(s, &buf, &len), PK_OK);
            assert_int_equal(len, x.n);
            assert_memory_equal(buf, x.b, len);
            free(buf);
            pk_ckv_free(s);
        } else {
            assert_true(rc == PK_ECORRUPT);
        }
    }
    assert_true(accepted > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_restart_semantics),
        cmocka_unit_test(test_empty_state),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_bitflips),
        cmocka_unit_test(test_bad_bodies),
        cmocka_unit_test(test_random_bodies),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Tests of the partition map: construction, membership and invariants
 * (pk_pmap.c), and the binary codec (pk_pmap_codec.c) -- known-answer
 * encodings written out byte by byte, round trips of every scheme, and
 * every class of malformed input: each truncation, each single-bit flip,
 * and hand-patched buffers whose checksum is valid so that the parser
 * proper must catch them.  Outside sanitizer builds, malloc is wrapped to
 * fail the k-th allocation, for every k, and count what is left behind.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_pmap.h"
#include "testutil.h"

/* Internal to the core library (pk_pmap_codec.c). */
uint32_t pk__crc32c(const void *data, size_t len);

/* ---- helpers ---------------------------------------------------------- */

/* Stands in for *out so that "untouched on failure" can be checked. */
static pk_pmap sentinel_map;
#define SENTINEL (&sentinel_map)

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Rewrites the trailing CRC32C so that the checksum matches again. */
static void fix_crc(uint8_t *buf, size_t len)
{
    put_be32(buf + len - 4, pk__crc32c(buf, len - 4));
}

/* Decodes, expecting err, and checks that *out stayed untouched. */
static void expect_decode(const uint8_t *buf, size_t len, int err)
{
    pk_pmap *out = SENTINEL;

    assert_int_equal(pk_pmap_decode(buf, len, &out), err);
    assert_ptr_equal(out, SENTINEL);
}

/* Decodes buf; it must succeed and re-encode to the very same bytes. */
static pk_pmap *decode_canonical(const uint8_t *buf, size_t len)
{
    pk_pmap *m = NULL;
    uint8_t *again = NULL;
    size_t again_len = 0;

    assert_int_equal(pk_pmap_decode(buf, len, &m), PK_OK);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    assert_int_equal(pk_pmap_encode(m, &again, &again_len), PK_OK);
    assert_int_equal(again_len, len);
    assert_memory_equal(again, buf, len);
    free(again);
    return m;
}

/* Encodes m, decodes it, and checks that nothing changed on the way. */
static size_t roundtrip(const pk_pmap *m)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pk_pmap *d;

    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    d = decode_canonical(buf, len);
    assert_true(pk_pmap_equal(m, d));
    pk_pmap_free(d);
    free(buf);
    return len;
}

/* Copies src with n bytes at off replaced by the ins_len bytes of ins. */
static uint8_t *splice(const uint8_t *src, size_t len, size_t off, size_t n,
                       const void *ins, size_t ins_len, size_t *out_len)
{
    uint8_t *b = malloc(len - n + ins_len);

    assert_non_null(b);
    memcpy(b, src, off);
    memcpy(b + off, ins, ins_len);
    memcpy(b + off + ins_len, src + off + n, len - off - n);
    *out_len = len - n + ins_len;
    return b;
}

/* Replaces n bytes at off, repairs the CRC, and expects err. */
static void expect_patched(const uint8_t *src, size_t len, size_t off, size_t n,
                           const void *ins, size_t ins_len, int err)
{
    size_t blen;
    uint8_t *b = splice(src, len, off, n, ins, ins_len, &blen);

    fix_crc(b, blen);
    expect_decode(b, blen, err);
    free(b);
}

static uint32_t add_node(pk_pmap *m, const char *name, const char *addr,
                         const char *zone, double weight)
{
    uint32_t id = PK_NODE_NONE;

    assert_int_equal(pk_pmap_node_add(m, name, addr, zone, weight, &id), PK_OK);
    return id;
}

static void set_part(pk_pmap *m, uint32_t p, uint8_t nrep, const uint32_t *rep,
                     uint8_t nlrn, const uint32_t *lrn)
{
    pk_partition *pt = &m->parts[p];

    pt->nreplicas = nrep;
    memcpy(pt->replicas, rep, nrep * sizeof(*rep));
    pt->nlearners = nlrn;
    if (nlrn > 0)
        memcpy(pt->learners, lrn, nlrn * sizeof(*lrn));
}

/* ---- known-answer encodings ------------------------------------------- */

/*
 * A hash map: 2 partitions, R = 2, 3 nodes of which "c" is removed.
 * Partition 1 has a learner and a move in progress.
 */
/* clang-format off */
static const uint8_t golden_hash[] = {
    /* magic, version, flags */
    'P', 'K', 'M', 'P', 0, 1, 0, 0,
    /* epoch */
    0, 0, 0, 0, 0, 0, 0, 7,
    /* scheme, hash, R, reserved */
    PK_SCHEME_HASH, PK_HASH_MURMUR3, 2, 0,
    /* nnodes, npartitions */
    0, 0, 0, 3, 0, 0, 0, 2,
    /* node 0 at 28: UP, 1.0, "a", "h:1", "z1" */
    0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 1, 'a', 3, 'h', ':', '1', 2, 'z', '1',
    /* node 1 at 46: UP, 2.5, "b", "", "" */
    0, 0x40, 0x04, 0, 0, 0, 0, 0, 0, 1, 'b', 0, 0,
    /* node 2 at 59: REMOVED, 0.0, "c", "", "" */
    3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'c', 0, 0,
    /* partition 0 at 72: 2 replicas, leader_epoch 1, {0, 1} */
    0x02, 0x01, 0, 0, 0, 1,
    /* partition 1 at 78: 1 replica, 1 learner, MOVE; COPYING to 0;
     * leader_epoch 300; {1}; learners {0} */
    0x49, 1, 0, 0, 0, 0, 0x82, 0x2c, 0, 1, 0, 0,
    /* CRC32C at 90, filled in by golden() */
    0, 0, 0, 0,
};
/* clang-format on */
enum {
    GH_FLAGS = 6,
    GH_EPOCH = 8,
    GH_SCHEME = 16,
    GH_HASH = 17,
    GH_R = 18,
    GH_RESERVED = 19,
    GH_NNODES = 20,
    GH_NPARTS = 24,
    GH_NODE0 = 28,
    GH_NODE1 = 46,
    GH_NODE2 = 59,
    GH_PART0 = 72,
    GH_PART1 = 78,
    GH_CRC = 90,
};

static pk_pmap *golden_hash_map(void)
{
    pk_pmap *m = NULL;
    static const uint32_t r0[] = {0, 1}, r1[] = {1}, l1[] = {0};

    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_MURMUR3, 2, 2, &m),
                     PK_OK);
    m->epoch = 7;
    add_node(m, "a", "h:1", "z1", 1.0);
    add_node(m, "b", NULL, NULL, 2.5);
    add_node(m, "c", NULL, NULL, 0.0);
    assert_int_equal(pk_pmap_node_set_state(m, 2, PK_NODE_REMOVED), PK_OK);
    set_part(m, 0, 2, r0, 0, NULL);
    m->parts[0].leader_epoch = 1;
    set_part(m, 1, 1, r1, 1, l1);
    m->parts[1].move_state = PK_MOVE_COPYING;
    m->parts[1].move_target = 0;
    m->parts[1].leader_epoch = 300;
    return m;
}

/* A range map: 1 node, ["", "m\0") and ["m\0", +inf). */
/* clang-format off */
static const uint8_t golden_range[] = {
    /* header: range scheme, xxh3, R = 1, 1 node, 2 partitions */
    'P', 'K', 'M', 'P', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    PK_SCHEME_RANGE, PK_HASH_XXH3, 1, 0, 0, 0, 0, 1, 0, 0, 0, 2,
    /* node 0 at 28 */
    0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 1, 'n', 0, 0,
    /* partition 0 at 41: 1 replica, HI; epoch 0; {0}; lo ""; hi "m\0" */
    0x81, 0, 0, 0, 0, 2, 'm', 0,
    /* partition 1 at 49: 1 replica; epoch 0; {0}; lo "m\0" */
    0x01, 0, 0, 0, 2, 'm', 0,
    /* CRC32C at 56 */
    0, 0, 0, 0,
};
/* clang-format on */
enum { GR_PART0 = 41, GR_PART1 = 49, GR_CRC = 56 };

static pk_pmap *golden_range_map(void)
{
    pk_pmap *m = NULL;
    static const uint32_t r[] = {0};

    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, 2, 1, &m),
                     PK_OK);
    add_node(m, "n", NULL, NULL, 1.0);
    set_part(m, 0, 1, r, 0, NULL);
    set_part(m, 1, 1, r, 0, NULL);
    assert_int_equal(pk_pmap_set_range(m, 0, NULL, 0, "m", 2), PK_OK);
    assert_int_equal(pk_pmap_set_range(m, 1, "m", 2, NULL, 0), PK_OK);
    return m;
}

/* A copy of a golden encoding with its CRC filled in; caller frees. */
static uint8_t *golden(const uint8_t *g, size_t len)
{
    uint8_t *b = malloc(len);

    assert_non_null(b);
    memcpy(b, g, len);
    fix_crc(b, len);
    return b;
}

/*
 * The slots map of the size report: 16384 slots, R = 3, nnodes nodes in
 * three zones.  With decorate, some partitions also get learners, moves,
 * large leader epochs, or no owner.
 */
static pk_pmap *slots_map(uint32_t nnodes, int decorate)
{
    pk_pmap *m = NULL;
    char name[16], addr[32], zone[8];

    assert_int_equal(
        pk_pmap_new(PK_SCHEME_SLOTS, PK_HASH_XXH3, PK_SLOTS, 3, &m), PK_OK);
    m->epoch = 1234567890123ull;
    for (uint32_t i = 0; i < nnodes; i++) {
        snprintf(name, sizeof(name), "node-%02u", i);
        snprintf(addr, sizeof(addr), "10.0.0.%u:7000", i);
        snprintf(zone, sizeof(zone), "az-%c", 'a' + i % 3);
        add_node(m, name, addr, zone, 1.0 + 0.25 * i);
    }
    for (uint32_t p = 0; p < PK_SLOTS; p++) {
        pk_partition *pt = &m->parts[p];
        uint32_t base = p * nnodes / PK_SLOTS;

        pt->nreplicas = 3;
        for (uint32_t k = 0; k < 3; k++)
            pt->replicas[k] = (base + k) % nnodes;
        pt->leader_epoch = 1 + p % 100;
        if (!decorate)
            continue;
        if (p % 97 == 0) {
            pt->nlearners = 1;
            pt->learners[0] = (base + 3) % nnodes;
            pt->move_state = (uint8_t)(1 + p % 3);
            pt->move_target = pt->learners[0];
        }
        if (p % 1001 == 5)
            pt->leader_epoch = UINT64_MAX - p;
        if (p % 4099 == 7)
            pt->nreplicas = 0;
    }
    return m;
}

/* ---- construction and membership -------------------------------------- */

static void test_new_invalid(void **state)
{
    pk_pmap *m = SENTINEL;

    (void)state;
    assert_int_equal(pk_pmap_new(PK_SCHEME_SLOTS, PK_HASH_XXH3, 100, 3, &m),
                     PK_EINVAL);
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 0, 3, &m),
                     PK_EINVAL);
    assert_int_equal(
        pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, PK_PARTITIONS_MAX + 1, 3, &m),
        PK_EINVAL);
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 8, 0, &m),
                     PK_EINVAL);
    assert_int_equal(
        pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 8, PK_REPLICAS_MAX + 1, &m),
        PK_EINVAL);
    assert_int_equal(pk_pmap_new((pk_scheme)3, PK_HASH_XXH3, 8, 3, &m),
                     PK_EINVAL);
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, (pk_hash_kind)9, 8, 3, &m),
                     PK_EINVAL);
    assert_ptr_equal(m, SENTINEL);
}

static void test_new_validate_clone_equal(void **state)
{
    pk_pmap *m = NULL, *c = NULL;
    uint32_t p = 0;

    (void)state;
    assert_int_equal(
        pk_pmap_new(PK_SCHEME_SLOTS, PK_HASH_XXH3, PK_SLOTS, 3, &m), PK_OK);
    assert_int_equal(m->npartitions, PK_SLOTS);
    assert_int_equal(m->nnodes, 0);
    assert_int_equal(m->epoch, 0);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    assert_int_equal(pk_pmap_leader(m, 0), PK_NODE_NONE);
    assert_int_equal(pk_pmap_leader(m, PK_SLOTS), PK_NODE_NONE);
    assert_int_equal(m->parts[5].move_target, PK_NODE_NONE);
    assert_int_equal(pk_pmap_partition_of(m, "foo", 3, &p), PK_OK);
    assert_int_equal(p, 12182);
    add_node(m, "x", "127.0.0.1:7000", "a", 1.0);
    m->parts[9].nreplicas = 1;
    assert_int_equal(pk_pmap_leader(m, 9), 0);

    assert_int_equal(pk_pmap_clone(m, &c), PK_OK);
    assert_true(pk_pmap_equal(m, c));
    assert_int_equal(pk_pmap_validate(c), PK_OK);
    c->parts[100].leader_epoch = 1;
    assert_false(pk_pmap_equal(m, c));
    c->parts[100].leader_epoch = 0;
    assert_true(pk_pmap_equal(m, c));
    c->epoch++;
    assert_false(pk_pmap_equal(m, c));
    c->epoch--;
    assert_int_equal(pk_pmap_node_set_weight(c, 0, 2.0), PK_OK);
    assert_false(pk_pmap_equal(m, c));
    pk_pmap_free(c);
    pk_pmap_free(m);
    pk_pmap_free(NULL);
}

static void test_hash_and_range_basics(void **state)
{
    pk_pmap *h = NULL, *r = NULL;
    uint32_t p = PK_NODE_NONE;

    (void)state;
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_MD5, 10, 2, &h),
                     PK_OK);
    assert_int_equal(pk_pmap_partition_of(h, "k", 1, &p), PK_OK);
    assert_int_equal(p, pk_hash_md5_64("k", 1) % 10);
    /* A hash tag places the key: {k}:a is where k is; {}k is whole. */
    assert_int_equal(pk_pmap_partition_of(h, "x{k}:a", 6, &p), PK_OK);
    assert_int_equal(p, pk_hash_md5_64("k", 1) % 10);
    assert_int_equal(pk_pmap_partition_of(h, "{}k", 3, &p), PK_OK);
    assert_int_equal(p, pk_hash_md5_64("{}k", 3) % 10);
    assert_int_equal(pk_pmap_set_range(h, 0, NULL, 0, "a", 1), PK_EINVAL);

    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, 2, 1, &r),
                     PK_OK);
    /* Bounds unset: not yet a valid range map. */
    assert_int_equal(pk_pmap_validate(r), PK_ECORRUPT);
    assert_int_equal(pk_pmap_partition_of(r, "k", 1, &p), PK_EINVAL);
    assert_int_equal(pk_pmap_set_range(r, 2, NULL, 0, NULL, 0), PK_EINVAL);
    assert_int_equal(pk_pmap_set_range(r, 0, "b", 1, "a", 1), PK_EINVAL);
    assert_int_equal(pk_pmap_set_range(r, 0, "a", 1, "a", 1), PK_EINVAL);
    assert_int_equal(pk_pmap_set_range(r, 0, NULL, 0, "", 0), PK_EINVAL);
    assert_int_equal(pk_pmap_set_range(r, 0, NULL, 0, "a", 1), PK_OK);
    assert_int_equal(pk_pmap_set_range(r, 1, "a", 1, NULL, 0), PK_OK);
    assert_int_equal(pk_pmap_validate(r), PK_OK);
    pk_pmap_free(h);
    pk_pmap_free(r);
}

static void test_nodes(void **state)
{
    pk_pmap *m = NULL;
    uint32_t id = PK_NODE_NONE;
    char long_name[PK_NAME_MAX + 2];
    char long_addr[PK_ADDR_MAX + 2];
    char long_zone[PK_ZONE_MAX + 2];

    (void)state;
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    memset(long_addr, 'h', sizeof(long_addr) - 1);
    long_addr[sizeof(long_addr) - 1] = '\0';
    memset(long_zone, 'z', sizeof(long_zone) - 1);
    long_zone[sizeof(long_zone) - 1] = '\0';

    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 4, 2, &m),
                     PK_OK);
    assert_int_equal(add_node(m, "a", "h:1", "z1", 1.0), 0);
    assert_int_equal(add_node(m, "b", NULL, NULL, 0.0), 1);
    assert_int_equal(pk_pmap_node_add(m, "a", NULL, NULL, 1, &id), PK_EEXIST);
    assert_int_equal(pk_pmap_node_add(m, "", NULL, NULL, 1, &id), PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, NULL, NULL, NULL, 1, &id), PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, long_name, NULL, NULL, 1, &id),
                     PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, "c", long_addr, NULL, 1, &id),
                     PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, "c", NULL, long_zone, 1, &id),
                     PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, "c", NULL, NULL, -1, &id), PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, "c", NULL, NULL, NAN, &id), PK_EINVAL);
    assert_int_equal(pk_pmap_node_add(m, "c", NULL, NULL, INFINITY, &id),
                     PK_EINVAL);
    assert_int_equal(id, PK_NODE_NONE);
    long_name[PK_NAME_MAX] = '\0'; /* exactly PK_NAME_MAX bytes is fine */
    assert_int_equal(add_node(m, long_name, NULL, NULL, 3.0), 2);
    assert_int_equal(m->nnodes, 3);

    assert_int_equal(pk_pmap_node_find(m, "b", &id), PK_OK);
    assert_int_equal(id, 1);
    id = 77;
    assert_int_equal(pk_pmap_node_find(m, "zz", &id), PK_ENOTFOUND);
    assert_int_equal(id, 77);
    assert_string_equal(pk_pmap_node(m, 0)->addr, "h:1");
    assert_string_equal(pk_pmap_node(m, 0)->zone, "z1");
    assert_string_equal(pk_pmap_node(m, 1)->addr, "");
    assert_null(pk_pmap_node(m, 3));
    assert_int_equal(pk_pmap_live_nodes(m), 3);

    /* Removal leaves a tombstone; the id is never reused. */
    assert_int_equal(pk_pmap_node_set_state(m, 1, PK_NODE_REMOVED), PK_OK);
    assert_int_equal(pk_pmap_node_find(m, "b", &id), PK_ENOTFOUND);
    assert_int_equal(m->nnodes, 3);
    assert_int_equal(pk_pmap_node(m, 1)->state, PK_NODE_REMOVED);
    assert_int_equal(pk_pmap_live_nodes(m), 2);
    assert_int_equal(add_node(m, "b", NULL, NULL, 1.0), 3);
    assert_int_equal(pk_pmap_node_find(m, "b", &id), PK_OK);
    assert_int_equal(id, 3);
    assert_int_equal(pk_pmap_node_set_state(m, 0, PK_NODE_DOWN), PK_OK);
    assert_int_equal(pk_pmap_live_nodes(m), 2);

    assert_int_equal(pk_pmap_node_set_state(m, 9, PK_NODE_UP), PK_ENOTFOUND);
    assert_int_equal(pk_pmap_node_set_state(m, 0, (pk_node_state)4), PK_EINVAL);
    assert_int_equal(pk_pmap_node_set_weight(m, 9, 1.0), PK_ENOTFOUND);
    assert_int_equal(pk_pmap_node_set_weight(m, 0, -0.5), PK_EINVAL);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    assert_int_equal(roundtrip(m) > 0, 1);
    pk_pmap_free(m);
}

static void test_validate(void **state)
{
    pk_pmap *m = NULL;
    static const uint32_t ok[] = {0, 1}, dup[] = {1, 1}, far[] = {0, 5};
    static const uint32_t gone[] = {0, 2}, l0[] = {0}, l2[] = {2};

    (void)state;
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 2, 2, &m),
                     PK_OK);
    add_node(m, "a", NULL, NULL, 1);
    add_node(m, "b", NULL, NULL, 1);
    add_node(m, "c", NULL, NULL, 1);
    assert_int_equal(pk_pmap_node_set_state(m, 2, PK_NODE_REMOVED), PK_OK);
    set_part(m, 0, 2, ok, 0, NULL);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    set_part(m, 0, 2, dup, 0, NULL);
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    set_part(m, 0, 2, far, 0, NULL);
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    set_part(m, 0, 2, gone, 0, NULL);
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    set_part(m, 0, 2, ok, 1, l0); /* learner that is also a replica */
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    set_part(m, 0, 2, ok, 1, l2); /* removed learner */
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    set_part(m, 0, 2, ok, 0, NULL);
    m->parts[1].move_target = 3;
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    m->parts[1].move_target = 1;
    m->parts[1].move_state = 4;
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    m->parts[1].move_state = PK_MOVE_CATCHUP;
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    pk_pmap_free(m);
}

/* ---- encoding --------------------------------------------------------- */

static void test_crc32c_vectors(void **state)
{
    uint8_t b[32];

    (void)state;
    /* The CRC catalogue's check value, and RFC 3720's iSCSI vectors. */
    assert_int_equal(pk__crc32c("123456789", 9), 0xE3069283u);
    assert_int_equal(pk__crc32c("", 0), 0);
    memset(b, 0, sizeof(b));
    assert_int_equal(pk__crc32c(b, sizeof(b)), 0x8A9136AAu);
    memset(b, 0xff, sizeof(b));
    assert_int_equal(pk__crc32c(b, sizeof(b)), 0x62A8AB43u);
    for (unsigned i = 0; i < sizeof(b); i++)
        b[i] = (uint8_t)i;
    assert_int_equal(pk__crc32c(b, sizeof(b)), 0x46DD794Eu);
}

/* m (consumed) encodes to exactly the golden bytes g, which decode back
 * to a map equal to m. */
static void check_golden(pk_pmap *m, const uint8_t *g, size_t glen)
{
    pk_pmap *d;
    uint8_t *want = golden(g, glen), *buf = NULL;
    size_t len = 0;

    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    assert_int_equal(len, glen);
    assert_memory_equal(buf, want, len);
    d = decode_canonical(want, len);
    assert_true(pk_pmap_equal(m, d));
    pk_pmap_free(d);
    pk_pmap_free(m);
    free(want);
    free(buf);
}

static void test_golden_encodings(void **state)
{
    (void)state;
    assert_int_equal(sizeof(golden_hash), GH_CRC + 4);
    assert_int_equal(sizeof(golden_range), GR_CRC + 4);
    check_golden(golden_hash_map(), golden_hash, sizeof(golden_hash));
    check_golden(golden_range_map(), golden_range, sizeof(golden_range));
}

static void test_roundtrip_slots(void **state)
{
    pk_pmap *m;
    size_t plain, decorated;

    (void)state;
    m = slots_map(10, 0);
    plain = roundtrip(m);
    pk_pmap_free(m);
    m = slots_map(10, 1);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    decorated = roundtrip(m);
    pk_pmap_free(m);
    print_message("encoded 16384-slot R=3 map, 10 nodes: %zu bytes "
                  "(%zu with moves, learners and large epochs)\n",
                  plain, decorated);
    /* 8 bytes a partition plus nodes and header. */
    assert_in_range(plain, 8 * PK_SLOTS, 8 * PK_SLOTS + 1024);
    assert_in_range(decorated, plain, plain + 8192);
}

static void test_roundtrip_hash(void **state)
{
    pk_pmap *m = NULL;
    char name[8];

    (void)state;
    assert_int_equal(
        pk_pmap_new(PK_SCHEME_HASH, PK_HASH_MURMUR3, 1000, PK_REPLICAS_MAX, &m),
        PK_OK);
    m->epoch = UINT64_MAX;
    for (unsigned i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "n%u", i);
        add_node(m, name, "", i % 2 ? "east" : "", i * 5e4);
    }
    assert_int_equal(pk_pmap_node_set_state(m, 3, PK_NODE_DOWN), PK_OK);
    assert_int_equal(pk_pmap_node_set_state(m, 4, PK_NODE_DRAINING), PK_OK);
    assert_int_equal(pk_pmap_node_set_state(m, 19, PK_NODE_REMOVED), PK_OK);
    for (uint32_t p = 0; p < m->npartitions; p++) {
        pk_partition *pt = &m->parts[p];

        /* Full replica and learner sets where p allows it. */
        pt->nreplicas = (uint8_t)(p % (PK_REPLICAS_MAX + 1));
        for (uint32_t k = 0; k < pt->nreplicas; k++)
            pt->replicas[k] = (p + k) % 19;
        if (pt->nreplicas + PK_REPLICAS_MAX <= 19 && p % 3 == 0) {
            pt->nlearners = PK_REPLICAS_MAX;
            for (uint32_t k = 0; k < PK_REPLICAS_MAX; k++)
                pt->learners[k] = (p + pt->nreplicas + k) % 19;
        }
        pt->leader_epoch = (uint64_t)1 << (p % 64);
        if (p % 5 == 1)
            pt->move_target = 18; /* target set, state none */
        if (p % 7 == 2)
            pt->move_state = PK_MOVE_SWITCHING; /* state set, no target */
    }
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    roundtrip(m);
    pk_pmap_free(m);
}

static void test_roundtrip_range(void **state)
{
    pk_pmap *m = NULL;
    static const uint8_t b1[] = {0}, b2[] = {0, 0}, b3[] = {0x7f, 0, 0xff};
    static const uint8_t b4[] = {0xff, 0xff, 0xff};
    uint8_t big[300];
    uint32_t r[] = {0, 1};

    (void)state;
    memset(big, 0xff, sizeof(big));
    big[0] = 0xfe; /* a bound longer than any one-byte varint */
    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, 6, 2, &m),
                     PK_OK);
    m->epoch = 99;
    add_node(m, "x", "[::1]:1", "z", 0.5);
    add_node(m, "y", "[::1]:2", "z", 0.5);
    /* The partitions need not be stored in key order. */
    assert_int_equal(pk_pmap_set_range(m, 3, NULL, 0, b1, 1), PK_OK);
    assert_int_equal(pk_pmap_set_range(m, 0, b1, 1, b2, 2), PK_OK);
    assert_int_equal(pk_pmap_set_range(m, 5, b2, 2, b3, 3), PK_OK);
    assert_int_equal(pk_pmap_set_range(m, 1, b3, 3, big, sizeof(big)), PK_OK);
    assert_int_equal(pk_pmap_set_range(m, 2, big, sizeof(big), b4, 3), PK_OK);
    assert_int_equal(pk_pmap_set_range(m, 4, b4, 3, NULL, 0), PK_OK);
    for (uint32_t p = 0; p < 6; p++) {
        set_part(m, p, p % 3, r, 0, NULL);
        m->parts[p].leader_epoch = p * 1000;
    }
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    roundtrip(m);
    pk_pmap_free(m);
}

static void test_encode_rejects_invalid(void **state)
{
    pk_pmap *m;
    uint8_t *buf = (uint8_t *)SENTINEL;
    size_t len = 12345;

    (void)state;
    /* A range map with unset bounds. */
    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, 2, 1, &m),
                     PK_OK);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_EINVAL);
    pk_pmap_free(m);

    m = golden_hash_map();
    m->parts[0].replicas[1] = 2; /* the removed node */
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_EINVAL);
    m->parts[0].replicas[1] = 1;
    m->nodes[1].weight = INFINITY;
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_EINVAL);
    m->nodes[1].weight = 2.5;
    /* Reviving the tombstone of a name that is in use again. */
    add_node(m, "c", NULL, NULL, 1.0);
    assert_int_equal(pk_pmap_node_set_state(m, 2, PK_NODE_UP), PK_OK);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_EINVAL);
    assert_int_equal(pk_pmap_node_set_state(m, 2, PK_NODE_REMOVED), PK_OK);
    m->parts[1].hi = (uint8_t *)"x"; /* a bound on a hash map */
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_EINVAL);
    m->parts[1].hi = NULL;
    assert_ptr_equal(buf, SENTINEL);
    assert_int_equal(len, 12345);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    free(buf);
    pk_pmap_free(m);
}

/* ---- malformed input -------------------------------------------------- */

/* Every strict prefix fails, with and without a repaired checksum. */
static void check_truncations(const uint8_t *buf, size_t len)
{
    uint8_t *b = malloc(len);

    assert_non_null(b);
    for (size_t n = 0; n < len; n++) {
        pk_pmap *out = SENTINEL;
        int rc = pk_pmap_decode(n ? buf : NULL, n, &out);

        assert_int_not_equal(rc, PK_OK);
        assert_ptr_equal(out, SENTINEL);
        if (n < 32)
            continue;
        memcpy(b, buf, n);
        fix_crc(b, n);
        expect_decode(b, n, PK_ECORRUPT);
    }
    free(b);
}

static void test_truncations(void **state)
{
    uint8_t *g, *buf = NULL;
    size_t len = 0;
    pk_pmap *m;

    (void)state;
    g = golden(golden_hash, sizeof(golden_hash));
    check_truncations(g, sizeof(golden_hash));
    free(g);
    g = golden(golden_range, sizeof(golden_range));
    check_truncations(g, sizeof(golden_range));
    free(g);
    m = golden_hash_map();
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    expect_decode(buf, 0, PK_ECORRUPT);
    pk_pmap_free(m);
    free(buf);
}

/*
 * Every single-bit flip must fail (CRC32C catches them all).  With the
 * checksum repaired the parser may accept a flip that still spells a valid
 * map -- a different epoch, say -- but then the map must be valid and
 * re-encode to the flipped bytes.
 */
static void check_bitflips(const uint8_t *buf, size_t len)
{
    uint8_t *b = malloc(len);

    assert_non_null(b);
    for (size_t bit = 0; bit < len * 8; bit++) {
        pk_pmap *out = SENTINEL;
        int rc;

        memcpy(b, buf, len);
        b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        rc = pk_pmap_decode(b, len, &out);
        assert_true(rc == PK_ECHECKSUM || rc == PK_ECORRUPT ||
                    rc == PK_EVERSION);
        assert_ptr_equal(out, SENTINEL);
        if (bit / 8 >= len - 4)
            continue;
        fix_crc(b, len);
        rc = pk_pmap_decode(b, len, &out);
        if (rc == PK_OK) {
            pk_pmap_free(out);
            pk_pmap_free(decode_canonical(b, len));
        } else {
            assert_true(rc == PK_ECORRUPT || rc == PK_EVERSION);
            assert_ptr_equal(out, SENTINEL);
        }
    }
    free(b);
}

static void test_bitflips(void **state)
{
    uint8_t *g;

    (void)state;
    g = golden(golden_hash, sizeof(golden_hash));
    check_bitflips(g, sizeof(golden_hash));
    free(g);
    g = golden(golden_range, sizeof(golden_range));
    check_bitflips(g, sizeof(golden_range));
    free(g);
}

static void test_bad_header(void **state)
{
    uint8_t *g = golden(golden_hash, sizeof(golden_hash));
    const size_t n = sizeof(golden_hash);
    static const uint8_t v2[] = {0, 2}, v0[] = {0, 0}, one[] = {1};
    static const uint8_t zero[] = {0}, eight[] = {8}, three[] = {3};
    static const uint8_t nine[] = {9}, zero4[] = {0, 0, 0, 0};
    static const uint8_t huge4[] = {0xff, 0xff, 0xff, 0xff};
    static const uint8_t n65535[] = {0, 0, 0xff, 0xff};
    static const uint8_t n65537[] = {0, 1, 0, 1};
    static const uint8_t p16384[] = {0, 0, 0x40, 0};
    static const uint8_t pmax1[] = {0, 0x10, 0, 1};

    (void)state;
    expect_decode(NULL, 0, PK_ECORRUPT);
    expect_decode(g, 3, PK_ECORRUPT);
    expect_patched(g, n, 0, 1, "X", 1, PK_ECORRUPT); /* magic */
    expect_patched(g, n, 3, 1, "p", 1, PK_ECORRUPT);
    /* An unknown version is reported as such, checksum or not. */
    expect_patched(g, n, 4, 2, v2, 2, PK_EVERSION);
    expect_patched(g, n, 4, 2, v0, 2, PK_EVERSION);
    g[5] = 2;
    expect_decode(g, n, PK_EVERSION);
    expect_decode(g, 6, PK_EVERSION);
    g[5] = 1;
    expect_decode(g, 6, PK_ECORRUPT);
    expect_patched(g, n, GH_FLAGS + 1, 1, one, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_RESERVED, 1, one, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_SCHEME, 1, three, 1, PK_ECORRUPT);
    /* Slots scheme with npartitions other than 16384. */
    expect_patched(g, n, GH_SCHEME, 1, zero, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_HASH, 1, nine, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_R, 1, zero, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_R, 1, eight, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_NPARTS, 4, zero4, 4, PK_ECORRUPT);
    expect_patched(g, n, GH_NPARTS, 4, huge4, 4, PK_ECORRUPT);
    expect_patched(g, n, GH_NPARTS, 4, pmax1, 4, PK_ECORRUPT);
    expect_patched(g, n, GH_NPARTS, 4, p16384, 4, PK_ECORRUPT);
    /* Huge counts in a tiny buffer are refused before any allocation. */
    expect_patched(g, n, GH_NNODES, 4, huge4, 4, PK_ECORRUPT);
    expect_patched(g, n, GH_NNODES, 4, n65535, 4, PK_ECORRUPT);
    expect_patched(g, n, GH_NNODES, 4, n65537, 4, PK_ECORRUPT);
    /* Fewer nodes than encoded: the rest is misparsed or trailing. */
    expect_patched(g, n, GH_NNODES, 4, (const uint8_t[]){0, 0, 0, 2}, 4,
                   PK_ECORRUPT);
    /* Trailing bytes, with and without a checksum that covers them. */
    expect_patched(g, n, GH_CRC, 0, zero, 1, PK_ECORRUPT);
    {
        uint8_t *b = malloc(n + 1);

        assert_non_null(b);
        memcpy(b, g, n);
        b[n] = 0;
        expect_decode(b, n + 1, PK_ECHECKSUM);
        free(b);
    }
    /* An intact buffer still decodes after all that. */
    pk_pmap_free(decode_canonical(g, n));
    free(g);
}

static void test_bad_nodes(void **state)
{
    uint8_t *g = golden(golden_hash, sizeof(golden_hash));
    const size_t n = sizeof(golden_hash);
    static const uint8_t nan[] = {0x7f, 0xf8, 0, 0, 0, 0, 0, 0};
    static const uint8_t inf[] = {0x7f, 0xf0, 0, 0, 0, 0, 0, 0};
    static const uint8_t neg[] = {0xbf, 0xf0, 0, 0, 0, 0, 0, 0};
    static const uint8_t negzero[] = {0x80, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t four[] = {4}, empty[] = {0}, nul[] = {1, 0};
    static const uint8_t a[] = {'a'}, addr_nul[] = {3, 'h', 0, '1'};
    uint8_t name41[42], addr64[65];

    (void)state;
    memset(name41, 'x', sizeof(name41));
    name41[0] = 41;
    memset(addr64, 'x', sizeof(addr64));
    addr64[0] = 64;
    expect_patched(g, n, GH_NODE1, 1, four, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 1, 8, nan, 8, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 1, 8, inf, 8, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 1, 8, neg, 8, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 9, 2, empty, 1, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 9, 2, nul, 2, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 9, 2, name41, sizeof(name41), PK_ECORRUPT);
    expect_patched(g, n, GH_NODE0 + 11, 4, addr_nul, 4, PK_ECORRUPT);
    expect_patched(g, n, GH_NODE1 + 11, 1, addr64, sizeof(addr64), PK_ECORRUPT);
    /* Name length running past the end of the buffer. */
    expect_patched(g, n, GH_NODE2 + 9, 1, (const uint8_t[]){40}, 1,
                   PK_ECORRUPT);
    /* Two live nodes named "a"; a removed one may share a name. */
    expect_patched(g, n, GH_NODE1 + 10, 1, a, 1, PK_ECORRUPT);
    {
        size_t blen;
        uint8_t *b = splice(g, n, GH_NODE2 + 10, 1, a, 1, &blen);
        pk_pmap *m;

        fix_crc(b, blen);
        m = decode_canonical(b, blen);
        assert_string_equal(m->nodes[2].name, "a");
        pk_pmap_free(m);
        free(b);
    }
    /* -0.0 is a weight >= 0 and comes back bit for bit. */
    {
        size_t blen;
        uint8_t *b = splice(g, n, GH_NODE2 + 1, 8, negzero, 8, &blen);

        fix_crc(b, blen);
        pk_pmap_free(decode_canonical(b, blen));
        free(b);
    }
    free(g);
}

static void test_bad_partitions(void **state)
{
    uint8_t *g = golden(golden_hash, sizeof(golden_hash));
    const size_t n = sizeof(golden_hash);
    static const uint8_t id_far[] = {0, 3}, id_huge[] = {0xff, 0xff};
    static const uint8_t id_removed[] = {0, 2}, id_dup[] = {0, 0};
    static const uint8_t overlong[] = {0x80, 0x01};
    static const uint8_t varint11[] = {0x81, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x7f};
    static const uint8_t varint_max[] = {0x81, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0x7f};
    static const uint8_t varint_over[] = {0x82, 0x80, 0x80, 0x80, 0x80,
                                          0x80, 0x80, 0x80, 0x80, 0x00};
    static const uint8_t move_none[] = {0x42, 0, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t move_bad[] = {0x42, 4, 0, 0, 0, 0};
    static const uint8_t move_far[] = {0x42, 1, 0, 0, 0, 3};
    static const uint8_t move_ok[] = {0x42, 0, 0, 0, 0, 1};
    static const uint8_t hi_bit[] = {0x82};
    static const uint8_t learner_is_replica[] = {0, 1};
    size_t blen;
    uint8_t *b;
    pk_pmap *m;

    (void)state;
    /* Replica ids of partition 0 sit at GH_PART0 + 2 and + 4. */
    expect_patched(g, n, GH_PART0 + 4, 2, id_far, 2, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0 + 4, 2, id_huge, 2, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0 + 4, 2, id_removed, 2, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0 + 4, 2, id_dup, 2, PK_ECORRUPT);
    /* Partition 1's learner equal to its replica. */
    expect_patched(g, n, GH_PART1 + 10, 2, learner_is_replica, 2, PK_ECORRUPT);
    /* More replicas than the bytes hold. */
    expect_patched(g, n, GH_PART0, 1, (const uint8_t[]){0x07}, 1, PK_ECORRUPT);
    /* Varints: overlong, too long, over 64 bits; the largest is fine. */
    expect_patched(g, n, GH_PART0 + 1, 1, overlong, 2, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0 + 1, 1, varint11, 11, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0 + 1, 1, varint_over, 10, PK_ECORRUPT);
    b = splice(g, n, GH_PART0 + 1, 1, varint_max, 10, &blen);
    fix_crc(b, blen);
    m = decode_canonical(b, blen);
    assert_int_equal(m->parts[0].leader_epoch, UINT64_MAX);
    pk_pmap_free(m);
    free(b);
    /* Moves: the MOVE bit with nothing moving, bad state, bad target. */
    expect_patched(g, n, GH_PART0, 1, move_none, 6, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0, 1, move_bad, 6, PK_ECORRUPT);
    expect_patched(g, n, GH_PART0, 1, move_far, 6, PK_ECORRUPT);
    b = splice(g, n, GH_PART0, 1, move_ok, 6, &blen);
    fix_crc(b, blen);
    m = decode_canonical(b, blen);
    assert_int_equal(m->parts[0].move_target, 1);
    pk_pmap_free(m);
    free(b);
    /* The HI bit is for range maps only. */
    expect_patched(g, n, GH_PART0, 1, hi_bit, 1, PK_ECORRUPT);
    free(g);
}

static void test_bad_ranges(void **state)
{
    uint8_t *g = golden(golden_range, sizeof(golden_range));
    const size_t n = sizeof(golden_range);
    static const uint8_t lo_ge_hi[] = {2, 'm', 0};
    static const uint8_t lo_long[] = {0x8f, 0xff, 0xff, 0xff, 0x7f};
    static const uint8_t lo_past[] = {0x10};
    static const uint8_t hi_empty[] = {0x81, 0, 0, 0, 0, 0};

    (void)state;
    /* Partition 0's lo at GR_PART0 + 4, its hi after it. */
    expect_patched(g, n, GR_PART0 + 4, 1, lo_ge_hi, 3, PK_ECORRUPT);
    expect_patched(g, n, GR_PART0 + 4, 1, lo_long, 5, PK_ECORRUPT);
    expect_patched(g, n, GR_PART0 + 4, 1, lo_past, 1, PK_ECORRUPT);
    expect_patched(g, n, GR_PART0, 8, hi_empty, 6, PK_ECORRUPT);
    /* Partition 1 claims a hi that is not there. */
    expect_patched(g, n, GR_PART1, 1, (const uint8_t[]){0x81}, 1, PK_ECORRUPT);
    free(g);
}

/* ---- allocation failures ---------------------------------------------- */

#if FAILALLOC
/*
 * Runs op with the k-th allocation failing, for k = 1, 2, ... until op
 * succeeds; every failure must be PK_ENOMEM and leak nothing.
 */
#define EACH_ALLOC_FAILURE(rc, op, undo)                                       \
    for (long k_ = 1;; k_++) {                                                 \
        long live_ = live_allocs;                                              \
        fail_countdown = k_;                                                   \
        rc = (op);                                                             \
        fail_countdown = 0;                                                    \
        if (rc == PK_OK) {                                                     \
            undo;                                                              \
            assert_int_equal(live_allocs, live_);                              \
            break;                                                             \
        }                                                                      \
        assert_int_equal(rc, PK_ENOMEM);                                       \
        assert_int_equal(live_allocs, live_);                                  \
    }
#endif

static void test_alloc_failures(void **state)
{
#if FAILALLOC
    pk_pmap *m, *c = SENTINEL;
    uint8_t *buf = NULL, *enc = (uint8_t *)SENTINEL;
    size_t len = 0, enc_len = 0;
    int rc;

    (void)state;
    if (!failalloc_works())
        skip(); /* the wrappers are not in effect */
    m = golden_range_map();
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    EACH_ALLOC_FAILURE(rc, pk_pmap_clone(m, &c), pk_pmap_free(c));
    EACH_ALLOC_FAILURE(rc, pk_pmap_encode(m, &enc, &enc_len), free(enc));
    EACH_ALLOC_FAILURE(rc, pk_pmap_decode(buf, len, &c), pk_pmap_free(c));
    pk_pmap_free(m);
    free(buf);
    m = golden_hash_map();
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    EACH_ALLOC_FAILURE(rc, pk_pmap_decode(buf, len, &c), pk_pmap_free(c));
    pk_pmap_free(m);

    /* Counts the input cannot hold are refused before any allocation:
     * with the first allocation failing, the answer is still ECORRUPT. */
    for (int i = 0; i < 2; i++) {
        static const uint8_t n65535[] = {0, 0, 0xff, 0xff};
        static const uint8_t p1m[] = {0, 0x10, 0, 0};
        size_t blen;
        uint8_t *b = splice(buf, len, i ? GH_NPARTS : GH_NNODES, 4,
                            i ? p1m : n65535, 4, &blen);

        fix_crc(b, blen);
        c = SENTINEL;
        fail_countdown = 1;
        rc = pk_pmap_decode(b, blen, &c);
        fail_countdown = 0;
        assert_int_equal(rc, PK_ECORRUPT);
        assert_ptr_equal(c, SENTINEL);
        free(b);
    }
    free(buf);
#else
    (void)state;
    skip(); /* sanitizers own malloc */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_invalid),
        cmocka_unit_test(test_new_validate_clone_equal),
        cmocka_unit_test(test_hash_and_range_basics),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_crc32c_vectors),
        cmocka_unit_test(test_golden_encodings),
        cmocka_unit_test(test_roundtrip_slots),
        cmocka_unit_test(test_roundtrip_hash),
        cmocka_unit_test(test_roundtrip_range),
        cmocka_unit_test(test_encode_rejects_invalid),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_bitflips),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_nodes),
        cmocka_unit_test(test_bad_partitions),
        cmocka_unit_test(test_bad_ranges),
        cmocka_unit_test(test_alloc_failures),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

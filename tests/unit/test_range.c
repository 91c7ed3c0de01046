/*
 * Tests of the range partitioner (pk_range.c): lookups, splits, merges and
 * scans checked against a naive model -- a sorted array searched linearly
 * -- under a few thousand random operations with a fixed seed; pre-split
 * creation; every error case; and pk_range_to_pmap through the codec.
 * Outside sanitizer builds, malloc is wrapped to fail the k-th allocation,
 * for every k, to check that failures leave the structures unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_range.h"
#include "testutil.h"

/* ---- the naive model -------------------------------------------------- */

#define KEY_MAX 4     /* random keys are 0..KEY_MAX bytes */
#define IDS 96        /* random ids are drawn from 0..IDS-1 */
#define MODEL_MAX IDS /* ids are unique, so at most IDS partitions */

typedef struct key {
    uint8_t b[KEY_MAX];
    size_t len;
} key;

typedef struct model {
    uint32_t n;
    uint32_t id[MODEL_MAX];
    key lo[MODEL_MAX]; /* lo[0] is the empty key */
} model;

static int cmp(const key *a, const key *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->b, b->b, n) : 0;

    if (c != 0)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* Linear: the last partition whose lo is <= k. */
static uint32_t model_find(const model *m, const key *k)
{
    uint32_t i = 0;

    while (i + 1 < m->n && cmp(&m->lo[i + 1], k) <= 0)
        i++;
    return i;
}

/* Index of id, or m->n. */
static uint32_t model_index(const model *m, uint32_t id)
{
    uint32_t i = 0;

    while (i < m->n && m->id[i] != id)
        i++;
    return i;
}

static int model_split(model *m, uint32_t id, const key *at, uint32_t new_id)
{
    uint32_t i = model_index(m, id);

    if (i == m->n)
        return PK_ENOTFOUND;
    if (cmp(at, &m->lo[i]) <= 0 ||
        (i + 1 < m->n && cmp(at, &m->lo[i + 1]) >= 0))
        return PK_EINVAL;
    if (model_index(m, new_id) != m->n)
        return PK_EEXIST;
    for (uint32_t j = m->n; j > i + 1; j--) {
        m->id[j] = m->id[j - 1];
        m->lo[j] = m->lo[j - 1];
    }
    m->id[i + 1] = new_id;
    m->lo[i + 1] = *at;
    m->n++;
    return PK_OK;
}

static int model_merge(model *m, uint32_t left, uint32_t right)
{
    uint32_t li = model_index(m, left), ri = model_index(m, right);

    if (li == m->n || ri == m->n)
        return PK_ENOTFOUND;
    if (ri != li + 1)
        return PK_EINVAL;
    for (uint32_t j = ri; j + 1 < m->n; j++) {
        m->id[j] = m->id[j + 1];
        m->lo[j] = m->lo[j + 1];
    }
    m->n--;
    return PK_OK;
}

/* Partitions intersecting [start, end): lo < end and hi > start. */
static uint32_t model_scan(const model *m, const key *start, const key *end,
                           uint32_t *ids)
{
    uint32_t n = 0;

    if (end != NULL && cmp(start, end) >= 0)
        return 0; /* an empty interval */
    for (uint32_t i = 0; i < m->n; i++) {
        int below_end = end == NULL || cmp(&m->lo[i], end) < 0;
        int above_start = i + 1 == m->n || cmp(&m->lo[i + 1], start) > 0;

        if (below_end && above_start)
            ids[n++] = m->id[i];
    }
    return n;
}

/* Every partition of r, in order, equals the model's. */
static void check_same(const pk_range *r, const model *m)
{
    assert_int_equal(pk_range_count(r), m->n);
    for (uint32_t i = 0; i < m->n; i++) {
        const uint8_t *lo = NULL, *hi = NULL;
        size_t lo_len = 99, hi_len = 99;
        uint32_t id = 0;

        assert_int_equal(pk_range_get(r, i, &id, &lo, &lo_len, &hi, &hi_len),
                         PK_OK);
        assert_int_equal(id, m->id[i]);
        assert_int_equal(lo_len, m->lo[i].len);
        if (lo_len > 0)
            assert_memory_equal(lo, m->lo[i].b, lo_len);
        if (i + 1 == m->n) {
            assert_null(hi);
            assert_int_equal(hi_len, 0);
        } else {
            assert_non_null(hi);
            assert_int_equal(hi_len, m->lo[i + 1].len);
            assert_memory_equal(hi, m->lo[i + 1].b, hi_len);
        }
    }
}

/* ---- random input ----------------------------------------------------- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Short keys over a few byte values, NUL and 0xff among them, so that
 * equal keys, prefixes and empty keys all come up often. */
static void rnd_key(uint64_t *s, key *k)
{
    static const uint8_t alphabet[] = {0x00, 0x01, 'a', 0x7f, 0x80, 0xff};

    k->len = rnd(s) % (KEY_MAX + 1);
    for (size_t i = 0; i < k->len; i++)
        k->b[i] = alphabet[rnd(s) % sizeof(alphabet)];
}

/* ---- tests ------------------------------------------------------------ */

static void test_new(void **state)
{
    pk_range *r = NULL;
    const uint8_t *lo = (const uint8_t *)"x", *hi = (const uint8_t *)"x";
    size_t lo_len = 9, hi_len = 9;
    uint32_t id = 9;

    (void)state;
    assert_int_equal(pk_range_new(&r), PK_OK);
    assert_int_equal(pk_range_count(r), 1);
    assert_int_equal(pk_range_get(r, 0, &id, &lo, &lo_len, &hi, &hi_len),
                     PK_OK);
    assert_int_equal(id, 0);
    assert_int_equal(lo_len, 0);
    assert_null(hi);
    assert_int_equal(hi_len, 0);
    id = 9;
    assert_int_equal(pk_range_lookup(r, "anything", 8, &id), PK_OK);
    assert_int_equal(id, 0);
    id = 9;
    assert_int_equal(pk_range_lookup(r, NULL, 0, &id), PK_OK);
    assert_int_equal(id, 0);
    assert_int_equal(pk_range_get(r, 0, NULL, NULL, NULL, NULL, NULL), PK_OK);
    pk_range_free(r);
    pk_range_free(NULL);
}

static void test_new_split(void **state)
{
    static const void *const keys[] = {"b", "k\0x", "t"};
    static const size_t lens[] = {1, 3, 1};
    static const void *const bad_order[] = {"b", "a"};
    static const void *const dup[] = {"b", "b"};
    static const void *const first_empty[] = {"", "b"};
    static const void *const null_key[] = {"a", NULL};
    static const size_t lens11[] = {1, 1}, lens01[] = {0, 1};
    static const struct {
        const char *key;
        size_t len;
        uint32_t id;
    } v[] = {
        {"", 0, 0},       {"a", 1, 0},     {"a\xff", 2, 0}, {"b", 1, 1},
        {"b\0", 2, 1},    {"k", 1, 1},     {"k\0", 2, 1},   {"k\0x", 3, 2},
        {"k\0x\0", 4, 2}, {"k\x01", 2, 2}, {"szz", 3, 2},   {"t", 1, 3},
        {"\xff", 1, 3},
    };
    pk_range *r = NULL, *bad = (pk_range *)&r;

    (void)state;
    assert_int_equal(pk_range_new_split(keys, lens, 3, &r), PK_OK);
    assert_int_equal(pk_range_count(r), 4);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint32_t id = 99;

        assert_int_equal(pk_range_lookup(r, v[i].key, v[i].len, &id), PK_OK);
        assert_int_equal(id, v[i].id);
    }
    for (uint32_t i = 0; i < 4; i++) {
        uint32_t id = 99;

        assert_int_equal(pk_range_get(r, i, &id, NULL, NULL, NULL, NULL),
                         PK_OK);
        assert_int_equal(id, i);
    }
    pk_range_free(r);

    assert_int_equal(pk_range_new_split(bad_order, lens11, 2, &bad), PK_EINVAL);
    assert_int_equal(pk_range_new_split(dup, lens11, 2, &bad), PK_EINVAL);
    assert_int_equal(pk_range_new_split(first_empty, lens01, 2, &bad),
                     PK_EINVAL);
    assert_int_equal(pk_range_new_split(null_key, lens11, 2, &bad), PK_EINVAL);
    assert_int_equal(pk_range_new_split(keys, lens, PK_PARTITIONS_MAX, &bad),
                     PK_EFULL);
    assert_ptr_equal(bad, (pk_range *)&r);
    assert_int_equal(pk_range_new_split(NULL, NULL, 0, &r), PK_OK);
    assert_int_equal(pk_range_count(r), 1);
    pk_range_free(r);
}

static void test_errors(void **state)
{
    pk_range *r = NULL;
    uint32_t id = 77, ids[4] = {7, 7, 7, 7}, n = 77;
    const uint8_t *lo = (const uint8_t *)"x";
    size_t lo_len = 5;

    (void)state;
    assert_int_equal(pk_range_new(&r), PK_OK);
    assert_int_equal(pk_range_split(r, 0, "m", 1, 1), PK_OK);
    assert_int_equal(pk_range_split(r, 1, "t", 1, 2), PK_OK);
    /* [-inf, m) 0, [m, t) 1, [t, +inf) 2 */
    assert_int_equal(pk_range_split(r, 5, "c", 1, 6), PK_ENOTFOUND);
    assert_int_equal(pk_range_split(r, 0, "", 0, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 0, NULL, 0, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 0, NULL, 1, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 0, "m", 1, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 0, "z", 1, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 1, "m", 1, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 1, "t", 1, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 2, "a", 1, 6), PK_EINVAL);
    assert_int_equal(pk_range_split(r, 1, "p", 1, 1), PK_EEXIST);
    assert_int_equal(pk_range_split(r, 1, "p", 1, 2), PK_EEXIST);
    assert_int_equal(pk_range_count(r), 3);
    /* Just inside the bounds is fine: "m\0" > "m", "s\xff" < "t". */
    assert_int_equal(pk_range_split(r, 1, "m\0", 2, 10), PK_OK);
    assert_int_equal(pk_range_merge(r, 1, 10), PK_OK);

    assert_int_equal(pk_range_merge(r, 0, 2), PK_EINVAL);
    assert_int_equal(pk_range_merge(r, 1, 0), PK_EINVAL);
    assert_int_equal(pk_range_merge(r, 1, 1), PK_EINVAL);
    assert_int_equal(pk_range_merge(r, 1, 9), PK_ENOTFOUND);
    assert_int_equal(pk_range_merge(r, 9, 1), PK_ENOTFOUND);

    assert_int_equal(pk_range_get(r, 3, &id, &lo, &lo_len, NULL, NULL),
                     PK_ERANGE);
    assert_int_equal(id, 77);
    assert_int_equal(lo_len, 5);
    assert_int_equal(pk_range_lookup(r, NULL, 1, &id), PK_EINVAL);
    assert_int_equal(id, 77);
    assert_int_equal(pk_range_scan(r, NULL, 1, NULL, 0, ids, 4, &n), PK_EINVAL);
    assert_int_equal(pk_range_scan(r, NULL, 0, NULL, 0, NULL, 4, &n),
                     PK_EINVAL);
    assert_int_equal(pk_range_scan(r, NULL, 0, NULL, 0, ids, 2, &n), PK_EFULL);
    assert_int_equal(n, 77);
    assert_int_equal(ids[0], 7);

    /* A merge frees the id for reuse. */
    assert_int_equal(pk_range_merge(r, 1, 2), PK_OK);
    assert_int_equal(pk_range_split(r, 1, "x", 1, 2), PK_OK);
    assert_int_equal(pk_range_merge(r, 0, 1), PK_OK);
    assert_int_equal(pk_range_merge(r, 0, 2), PK_OK);
    assert_int_equal(pk_range_count(r), 1);
    assert_int_equal(pk_range_lookup(r, "zzz", 3, &id), PK_OK);
    assert_int_equal(id, 0);
    pk_range_free(r);
}

static void test_scan(void **state)
{
    static const void *const keys[] = {"b", "k", "t"};
    static const size_t lens[] = {1, 1, 1};
    static const struct {
        const char *start, *end; /* end NULL: +inf */
        size_t slen, elen;
        uint32_t n, ids[4];
    } v[] = {
        {"a", "c", 1, 1, 2, {0, 1}},
        {"b", "k", 1, 1, 1, {1}}, /* [k, ...) does not meet [b, k) */
        {"b", "k\0", 1, 2, 2, {1, 2}},
        {"a\xff", "b", 2, 1, 1, {0}},
        {"c", NULL, 1, 0, 3, {1, 2, 3}},
        {"", NULL, 0, 0, 4, {0, 1, 2, 3}},
        {"", "", 0, 0, 0, {0}},
        {"k", "k", 1, 1, 0, {0}},
        {"z", "a", 1, 1, 0, {0}},
        {"", "b", 0, 1, 1, {0}},
        {"t", NULL, 1, 0, 1, {3}},
        {"s", "t\0", 1, 2, 2, {2, 3}},
    };
    pk_range *r = NULL;

    (void)state;
    assert_int_equal(pk_range_new_split(keys, lens, 3, &r), PK_OK);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint32_t ids[4] = {0}, n = 99, count = 99;

        assert_int_equal(pk_range_scan(r, v[i].start, v[i].slen, v[i].end,
                                       v[i].elen, ids, 4, &n),
                         PK_OK);
        assert_int_equal(n, v[i].n);
        if (n > 0)
            assert_memory_equal(ids, v[i].ids, n * sizeof(*ids));
        assert_int_equal(pk_range_scan(r, v[i].start, v[i].slen, v[i].end,
                                       v[i].elen, NULL, 0, &count),
                         PK_OK);
        assert_int_equal(count, n);
    }
    pk_range_free(r);
}

/* Random splits and merges; lookups, scans and listings against the model. */
static void test_model(void **state)
{
    pk_range *r = NULL;
    model m;
    uint64_t seed = 20240601;
    unsigned counts[3][5] = {{0}}; /* [op][outcome], to see coverage */
    uint32_t max_n = 0;

    (void)state;
    memset(&m, 0, sizeof(m));
    m.n = 1;
    assert_int_equal(pk_range_new(&r), PK_OK);
    for (int op = 0; op < 5000; op++) {
        unsigned kind = (unsigned)(rnd(&seed) % 10);
        /* Grow for the first half, shrink for the second. */
        unsigned splits = op < 2500 ? 6 : 3;
        key k, e;

        if (kind < splits) {
            /* Split at a random key the partition holding it (mostly),
             * any partition, or any id. */
            unsigned how = (unsigned)(rnd(&seed) % 8);
            uint32_t new_id = (uint32_t)(rnd(&seed) % IDS);
            uint32_t id;
            int want, got;

            rnd_key(&seed, &k);
            if (how < 6)
                id = m.id[model_find(&m, &k)];
            else if (how == 6)
                id = m.id[rnd(&seed) % m.n];
            else
                id = (uint32_t)(rnd(&seed) % IDS);
            want = model_split(&m, id, &k, new_id);
            got = pk_range_split(r, id, k.b, k.len, new_id);
            assert_int_equal(got, want);
            counts[0][-want]++;
        } else if (kind < 8) {
            /* Merge neighbours, any two partitions, or any two ids. */
            uint32_t i = (uint32_t)(rnd(&seed) % m.n);
            uint32_t j = (uint32_t)(rnd(&seed) % m.n);
            uint32_t left = m.id[i], right = m.id[j];
            unsigned how = (unsigned)(rnd(&seed) % 4);
            int want, got;

            if (how < 2 && i + 1 < m.n) {
                right = m.id[i + 1];
            } else if (how == 3) {
                left = (uint32_t)(rnd(&seed) % IDS);
                right = (uint32_t)(rnd(&seed) % IDS);
            }
            want = model_merge(&m, left, right);
            got = pk_range_merge(r, left, right);
            assert_int_equal(got, want);
            counts[1][-want]++;
        } else {
            uint32_t want[MODEL_MAX], got[MODEL_MAX], nwant, ngot = 0;
            int bounded = rnd(&seed) % 4 != 0;

            for (int j = 0; j < 16; j++) {
                uint32_t id = UINT32_MAX;

                rnd_key(&seed, &k);
                assert_int_equal(pk_range_lookup(r, k.b, k.len, &id), PK_OK);
                assert_int_equal(id, m.id[model_find(&m, &k)]);
            }
            rnd_key(&seed, &k);
            rnd_key(&seed, &e);
            nwant = model_scan(&m, &k, bounded ? &e : NULL, want);
            assert_int_equal(pk_range_scan(r, k.b, k.len, bounded ? e.b : NULL,
                                           e.len, got, MODEL_MAX, &ngot),
                             PK_OK);
            assert_int_equal(ngot, nwant);
            if (nwant > 0)
                assert_memory_equal(got, want, nwant * sizeof(*got));
            counts[2][nwant > 1]++;
        }
        if (op % 50 == 0)
            check_same(r, &m);
        max_n = m.n > max_n ? m.n : max_n;
    }
    check_same(r, &m);
    /* The random walk reached every outcome. */
    assert_true(counts[0][0] > 100 && counts[0][-PK_ENOTFOUND] > 0 &&
                counts[0][-PK_EINVAL] > 100 && counts[0][-PK_EEXIST] > 10);
    assert_true(counts[1][0] > 100 && counts[1][-PK_ENOTFOUND] > 0 &&
                counts[1][-PK_EINVAL] > 10);
    assert_true(counts[2][0] > 10 && counts[2][1] > 10);
    assert_true(max_n > 40);
    pk_range_free(r);
}

/* Bounds of partition id p in map m equal r's partition at index i. */
static void check_bounds(const pk_range *r, const pk_pmap *m)
{
    for (uint32_t i = 0; i < pk_range_count(r); i++) {
        const uint8_t *lo, *hi;
        size_t lo_len, hi_len;
        uint32_t id;
        const pk_partition *pt;

        assert_int_equal(pk_range_get(r, i, &id, &lo, &lo_len, &hi, &hi_len),
                         PK_OK);
        pt = &m->parts[id];
        assert_non_null(pt->lo);
        assert_int_equal(pt->lo_len, lo_len);
        if (lo_len > 0)
            assert_memory_equal(pt->lo, lo, lo_len);
        if (hi == NULL) {
            assert_null(pt->hi);
        } else {
            assert_non_null(pt->hi);
            assert_int_equal(pt->hi_len, hi_len);
            assert_memory_equal(pt->hi, hi, hi_len);
        }
    }
}

/* Five partitions with ids out of key order and NULs in the bounds. */
static pk_range *permuted_range(void)
{
    pk_range *r = NULL;

    assert_int_equal(pk_range_new(&r), PK_OK);
    assert_int_equal(pk_range_split(r, 0, "m", 1, 1), PK_OK);
    assert_int_equal(pk_range_split(r, 1, "x", 1, 2), PK_OK);
    assert_int_equal(pk_range_split(r, 0, "c\0", 2, 3), PK_OK);
    assert_int_equal(pk_range_split(r, 2, "z\0\0", 3, 4), PK_OK);
    return r;
}

static pk_pmap *range_pmap(uint32_t n)
{
    pk_pmap *m = NULL;
    uint32_t id;

    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, n, 1, &m),
                     PK_OK);
    assert_int_equal(pk_pmap_node_add(m, "n0", "127.0.0.1:1", NULL, 1, &id),
                     PK_OK);
    for (uint32_t p = 0; p < n; p++) {
        m->parts[p].nreplicas = 1;
        m->parts[p].replicas[0] = id;
        m->parts[p].leader_epoch = p;
    }
    return m;
}

static void test_to_pmap(void **state)
{
    pk_range *r = permuted_range();
    pk_pmap *m = range_pmap(5), *d = NULL, *h = NULL, *c = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t seed = 7;

    (void)state;
    assert_int_equal(pk_range_to_pmap(r, m), PK_OK);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    check_bounds(r, m);
    assert_int_equal(m->parts[3].leader_epoch, 3); /* the rest is kept */
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    assert_int_equal(pk_pmap_decode(buf, len, &d), PK_OK);
    assert_true(pk_pmap_equal(m, d));
    check_bounds(r, d);
    /* Routing by the decoded bounds agrees with pk_range_lookup. */
    for (int j = 0; j < 2000; j++) {
        key k;
        uint32_t want = UINT32_MAX, got = UINT32_MAX;

        rnd_key(&seed, &k);
        k.b[0] = k.len ? (uint8_t)(rnd(&seed) % 256) : 0;
        assert_int_equal(pk_range_lookup(r, k.b, k.len, &want), PK_OK);
        for (uint32_t p = 0; p < d->npartitions; p++) {
            const pk_partition *pt = &d->parts[p];
            key lo = {{0}, pt->lo_len}, hi = {{0}, pt->hi_len};

            memcpy(lo.b, pt->lo, pt->lo_len);
            if (pt->hi != NULL)
                memcpy(hi.b, pt->hi, pt->hi_len);
            if (cmp(&lo, &k) <= 0 && (pt->hi == NULL || cmp(&k, &hi) < 0)) {
                assert_int_equal(got, UINT32_MAX); /* only one holds k */
                got = p;
            }
        }
        assert_int_equal(got, want);
    }
    free(buf);

    /* Mismatches leave the map alone. */
    assert_int_equal(pk_pmap_clone(m, &c), PK_OK);
    assert_int_equal(pk_range_split(r, 4, "zz", 2, 5), PK_OK);
    assert_int_equal(pk_range_to_pmap(r, m), PK_EINVAL); /* 6 vs 5 */
    assert_int_equal(pk_range_merge(r, 4, 5), PK_OK);
    assert_int_equal(pk_range_merge(r, 0, 3), PK_OK);
    assert_int_equal(pk_range_split(r, 0, "c", 1, 9), PK_OK);
    assert_int_equal(pk_range_to_pmap(r, m), PK_EINVAL); /* id 9 >= 5 */
    assert_true(pk_pmap_equal(m, c));
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 5, 1, &h),
                     PK_OK);
    assert_int_equal(pk_range_to_pmap(r, h), PK_EINVAL);
    pk_pmap_free(h);
    pk_pmap_free(c);
    pk_pmap_free(d);
    pk_pmap_free(m);
    pk_range_free(r);
}

/* The index rebuilt from a map routes as the range it came from, and
 * "below" finds the partition of the greatest smaller key. */
static void test_from_pmap(void **state)
{
    pk_range *r = permuted_range(), *back = NULL;
    pk_pmap *m = range_pmap(5);
    uint64_t seed = 11;
    uint32_t id = UINT32_MAX, want;

    (void)state;
    assert_int_equal(pk_range_to_pmap(r, m), PK_OK);
    assert_int_equal(pk_range_from_pmap(m, &back), PK_OK);
    assert_int_equal(pk_range_count(back), 5);
    for (int j = 0; j < 2000; j++) {
        key k;
        uint32_t a = 0, b = 1;
        rnd_key(&seed, &k);
        k.b[0] = k.len ? (uint8_t)(rnd(&seed) % 256) : 0;
        assert_int_equal(pk_range_lookup(r, k.b, k.len, &a), PK_OK);
        assert_int_equal(pk_range_lookup(back, k.b, k.len, &b), PK_OK);
        assert_int_equal(a, b);
    }
    /* Below "m" (which opens id 1) is id 3's "c\0" .. "m"; below "m\0" is
     * "m" itself, in id 1; nothing is below "". */
    assert_int_equal(pk_range_lookup_below(back, "m", 1, &id), PK_OK);
    assert_int_equal(id, 3);
    assert_int_equal(pk_range_lookup_below(back, "m\0", 2, &id), PK_OK);
    assert_int_equal(id, 1);
    assert_int_equal(pk_range_lookup_below(back, "b", 1, &want), PK_OK);
    assert_int_equal(want, 0);
    assert_int_equal(pk_range_lookup_below(back, "", 0, &id), PK_ENOTFOUND);
    pk_range_free(back);
    back = NULL;

    /* A gap between two partitions is refused. */
    assert_int_equal(pk_pmap_set_range(m, 1, "n", 1, "x", 1), PK_OK);
    assert_int_equal(pk_range_from_pmap(m, &back), PK_ECORRUPT);
    assert_null(back);
    pk_pmap_free(m);
    pk_range_free(r);
}

static void test_large(void **state)
{
    enum { N = 20000 };
    pk_range *r = NULL;
    const void **keys = malloc(N * sizeof(*keys));
    size_t *lens = malloc(N * sizeof(*lens));
    uint8_t *bytes = malloc(N * 4);
    uint32_t id = 0, n = 0;

    (void)state;
    assert_non_null(keys);
    assert_non_null(lens);
    assert_non_null(bytes);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t v = (i + 1) * 7;

        bytes[4 * i] = (uint8_t)(v >> 24);
        bytes[4 * i + 1] = (uint8_t)(v >> 16);
        bytes[4 * i + 2] = (uint8_t)(v >> 8);
        bytes[4 * i + 3] = (uint8_t)v;
        keys[i] = bytes + 4 * i;
        lens[i] = 4;
    }
    assert_int_equal(pk_range_new_split(keys, lens, N, &r), PK_OK);
    assert_int_equal(pk_range_count(r), N + 1);
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(pk_range_lookup(r, keys[i], 4, &id), PK_OK);
        assert_int_equal(id, i + 1);
    }
    assert_int_equal(pk_range_scan(r, keys[100], 4, keys[200], 4, NULL, 0, &n),
                     PK_OK);
    assert_int_equal(n, 100);
    pk_range_free(r);
    free(keys);
    free(lens);
    free(bytes);
}

static void test_alloc_failures(void **state)
{
#if FAILALLOC
    static const void *const keys[] = {"b", "k", "t"};
    static const size_t lens[] = {1, 1, 1};
    pk_range *r = NULL, *r2 = NULL;
    pk_pmap *m, *c = NULL;
    int rc;

    (void)state;
    if (!failalloc_works())
        skip(); /* the wrappers are not in effect */
    for (long k = 1;; k++) {
        long live = live_allocs;

        fail_countdown = k;
        rc = pk_range_new_split(keys, lens, 3, &r2);
        fail_countdown = 0;
        if (rc == PK_OK)
            break;
        assert_int_equal(rc, PK_ENOMEM);
        assert_null(r2);
        assert_int_equal(live_allocs, live);
    }
    pk_range_free(r2);

    /* Splits until the array must grow; failures change nothing. */
    assert_int_equal(pk_range_new(&r), PK_OK);
    for (uint32_t i = 1; i < 40; i++) {
        uint8_t at[2] = {(uint8_t)(i >> 8), (uint8_t)i};

        for (long k = 1;; k++) {
            long live = live_allocs;

            fail_countdown = k;
            rc = pk_range_split(r, i - 1, at, 2, i);
            fail_countdown = 0;
            if (rc == PK_OK)
                break;
            assert_int_equal(rc, PK_ENOMEM);
            assert_int_equal(live_allocs, live);
            assert_int_equal(pk_range_count(r), i);
        }
    }
    pk_range_free(r);

    r = permuted_range();
    m = range_pmap(5);
    assert_int_equal(pk_pmap_clone(m, &c), PK_OK);
    for (long k = 1;; k++) {
        long live = live_allocs;

        fail_countdown = k;
        rc = pk_range_to_pmap(r, m);
        fail_countdown = 0;
        if (rc == PK_OK)
            break;
        assert_int_equal(rc, PK_ENOMEM);
        assert_int_equal(live_allocs, live);
        assert_true(pk_pmap_equal(m, c));
    }
    check_bounds(r, m);
    pk_pmap_free(c);
    pk_pmap_free(m);
    pk_range_free(r);
#else
    (void)state;
    skip(); /* sanitizers own malloc */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new),
        cmocka_unit_test(test_new_split),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_to_pmap),
        cmocka_unit_test(test_from_pmap),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_alloc_failures),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

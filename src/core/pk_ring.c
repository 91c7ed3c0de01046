/*
 * pk_ring: consistent hashing with virtual nodes.
 *
 * Layout, chosen so a lookup touches two or three cache lines:
 *
 *   points[0..np)   sorted, distinct point hashes
 *   owners[0..np)   owners[i] = id of the node that put points[i] there
 *   index[0..2^b]   index[k] = first i with (points[i] >> (64 - b)) >= k
 *
 * The answer for h lies in [index[k], index[k + 1]] with k = h >> (64 - b):
 * every point of a lower bucket is below h and every point of a higher
 * bucket is above it.  2^b is the largest power of two <= np (capped), so
 * with well-mixed hashes a bucket holds one or two points and the binary
 * search over it is a step or two; with a degenerate hash it is still a
 * plain O(log np) binary search.
 *
 * Build: generate every point with its generation number, sort by (hash,
 * generation) and keep the first of each run of equal hashes, which is the
 * "first come wins" rule of the header.
 */
#include "pk_ring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"

/* Largest index is 2^RING_INDEX_BITS_MAX + 1 entries (4 MiB). */
#define RING_INDEX_BITS_MAX 20u

/* Digits in UINT32_MAX. */
#define U32_DIGITS 10u

struct pk_ring {
    uint64_t *points;   /* owned; sorted ascending, no duplicates */
    uint32_t *owners;   /* owned; parallel to points */
    uint32_t *index;    /* owned; (1 << bits) + 1 entries, see file top */
    uint32_t npoints;   /* >= 1 */
    uint32_t ndistinct; /* distinct owner ids present on the ring, >= 1 */
    unsigned shift;     /* 64 - bits; bits in 1..RING_INDEX_BITS_MAX */
};

/* A point while the ring is being built. */
typedef struct ring_gen {
    uint64_t h;
    uint32_t seq;  /* generation order; breaks ties in favour of the first */
    uint32_t node; /* index into the caller's node array */
} ring_gen;

static int ring_gen_cmp(const void *a, const void *b)
{
    const ring_gen *x = a;
    const ring_gen *y = b;

    if (x->h != y->h) {
        return x->h < y->h ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a;
    uint32_t y = *(const uint32_t *)b;

    return x < y ? -1 : (x > y);
}

/* Writes v in decimal at p, without a terminator; returns the length. */
static size_t u32_format(char *p, uint32_t v)
{
    char tmp[U32_DIGITS];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        p[i] = tmp[n - 1 - i];
    }
    return n;
}

/*
 * Points per node into counts[], their total into *total.  Returns PK_OK,
 * PK_EINVAL for a bad node, or PK_ERANGE for too many points.
 */
static int ring_count(const pk_place_node *nodes, uint32_t n, uint32_t vnodes,
                      uint32_t *counts, uint32_t *total, size_t *maxname)
{
    uint64_t sum = 0;

    *maxname = 0;
    for (uint32_t i = 0; i < n; i++) {
        double w = nodes[i].weight;
        double c;
        uint32_t k;

        if (nodes[i].name == NULL || nodes[i].id == PK_PLACE_NONE ||
            !isfinite(w) || !(w > 0.0)) {
            return PK_EINVAL;
        }
        c = (double)vnodes * w;
        if (c >= (double)PK_RING_POINTS_MAX + 1.0) {
            return PK_ERANGE;
        }
        k = (uint32_t)(int)c;
        counts[i] = k < 1 ? 1 : k;
        sum += counts[i];
        if (sum > PK_RING_POINTS_MAX) {
            return PK_ERANGE;
        }
        size_t len = strlen(nodes[i].name);
        if (len > *maxname) {
            *maxname = len;
        }
    }
    *total = (uint32_t)sum;
    return PK_OK;
}

/* Hashes every "name#i" into gen[], in generation order. */
static int ring_generate(const pk_place_node *nodes, uint32_t n,
                         const uint32_t *counts, size_t maxname,
                         pk_hash_fn hash, ring_gen *gen)
{
    char *buf = malloc(maxname + 1 + U32_DIGITS);
    uint32_t seq = 0;

    if (buf == NULL) {
        return PK_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        size_t len = strlen(nodes[i].name);

        memcpy(buf, nodes[i].name, len);
        buf[len] = '#';
        for (uint32_t j = 0; j < counts[i]; j++) {
            size_t d = u32_format(buf + len + 1, j);

            gen[seq].h = hash(buf, len + 1 + d);
            gen[seq].seq = seq;
            gen[seq].node = i;
            seq++;
        }
    }
    free(buf);
    return PK_OK;
}

/* Number of distinct ids among nodes that kept at least one point. */
static int ring_distinct(const pk_place_node *nodes, uint32_t n,
                         const ring_gen *gen, uint32_t ngen, uint32_t *out)
{
    unsigned char *has = calloc(n, 1);
    uint32_t *ids = malloc(sizeof(*ids) * n);
    uint32_t m = 0;
    uint32_t d = 0;
    int rc = PK_ENOMEM;

    if (has == NULL || ids == NULL) {
        goto done;
    }
    for (uint32_t i = 0; i < ngen; i++) {
        has[gen[i].node] = 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (has[i]) {
            ids[m++] = nodes[i].id;
        }
    }
    qsort(ids, m, sizeof(*ids), u32_cmp);
    for (uint32_t i = 0; i < m; i++) {
        if (i == 0 || ids[i] != ids[i - 1]) {
            d++;
        }
    }
    *out = d;
    rc = PK_OK;
done:
    free(has);
    free(ids);
    return rc;
}

/* Fills r->index from r->points; r->shift is already set. */
static void ring_index_fill(pk_ring *r)
{
    uint64_t nb = UINT64_C(1) << (64 - r->shift);
    uint32_t i = 0;

    for (uint64_t k = 0; k < nb; k++) {
        while (i < r->npoints && (r->points[i] >> r->shift) < k) {
            i++;
        }
        r->index[k] = i;
    }
    r->index[nb] = r->npoints;
}

static unsigned ring_index_bits(uint32_t npoints)
{
    unsigned bits = 1;

    while (bits < RING_INDEX_BITS_MAX && (UINT64_C(2) << bits) <= npoints) {
        bits++;
    }
    return bits;
}

int pk_ring_new(const pk_place_node *nodes, uint32_t n, uint32_t vnodes,
                pk_hash_fn hash, pk_ring **out)
{
    uint32_t *counts = NULL;
    ring_gen *gen = NULL;
    pk_ring *r = NULL;
    uint32_t total = 0, np = 0;
    size_t maxname = 0;
    int rc;

    if (out == NULL) {
        return PK_EINVAL;
    }
    if (n == 0) {
        return PK_EEMPTY;
    }
    if (nodes == NULL || hash == NULL || vnodes == 0) {
        return PK_EINVAL;
    }
    rc = PK_ENOMEM;
    counts = malloc(sizeof(*counts) * n);
    if (counts == NULL) {
        goto done;
    }
    rc = ring_count(nodes, n, vnodes, counts, &total, &maxname);
    if (rc != PK_OK) {
        goto done;
    }
    rc = PK_ENOMEM;
    gen = malloc(sizeof(*gen) * total);
    if (gen == NULL) {
        goto done;
    }
    rc = ring_generate(nodes, n, counts, maxname, hash, gen);
    if (rc != PK_OK) {
        goto done;
    }
    qsort(gen, total, sizeof(*gen), ring_gen_cmp);
    for (uint32_t i = 0; i < total; i++) {
        if (np == 0 || gen[i].h != gen[np - 1].h) {
            gen[np++] = gen[i];
        }
    }
    rc = PK_ENOMEM;
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        goto done;
    }
    r->npoints = np;
    r->shift = 64 - ring_index_bits(np);
    r->points = malloc(sizeof(*r->points) * np);
    r->owners = malloc(sizeof(*r->owners) * np);
    r->index = malloc(sizeof(*r->index) * ((size_t)1 << (64 - r->shift)) +
                      sizeof(*r->index));
    if (r->points == NULL || r->owners == NULL || r->index == NULL) {
        goto done;
    }
    for (uint32_t i = 0; i < np; i++) {
        r->points[i] = gen[i].h;
        r->owners[i] = nodes[gen[i].node].id;
    }
    ring_index_fill(r);
    rc = ring_distinct(nodes, n, gen, np, &r->ndistinct);
    if (rc != PK_OK) {
        goto done;
    }
    *out = r;
    r = NULL;
done:
    pk_ring_free(r);
    free(gen);
    free(counts);
    return rc;
}

/* Position of the first point > h, wrapped to 0 past the last point. */
static inline uint32_t ring_find(const pk_ring *r, uint64_t h)
{
    uint64_t k = h >> r->shift;
    uint32_t lo = r->index[k];
    uint32_t hi = r->index[k + 1];

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (r->points[mid] <= h) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo == r->npoints ? 0 : lo;
}

uint32_t pk_ring_lookup(const pk_ring *r, uint64_t h)
{
    return r->owners[ring_find(r, h)];
}

int pk_ring_replicas(const pk_ring *r, uint64_t h, uint32_t R, uint32_t *out,
                     uint32_t *nout)
{
    uint32_t want, got = 0, i;

    if (r == NULL || nout == NULL || (out == NULL && R > 0)) {
        return PK_EINVAL;
    }
    want = R < r->ndistinct ? R : r->ndistinct;
    i = ring_find(r, h);
    /* Terminates: every one of the ndistinct ids owns a point, and one lap
     * of the ring visits them all. */
    while (got < want) {
        uint32_t id = r->owners[i];
        uint32_t j = 0;

        while (j < got && out[j] != id) {
            j++;
        }
        if (j == got) {
            out[got++] = id;
        }
        i = i + 1 == r->npoints ? 0 : i + 1;
    }
    *nout = got;
    return PK_OK;
}

size_t pk_ring_points(const pk_ring *r)
{
    return r->npoints;
}

void pk_ring_free(pk_ring *r)
{
    if (r == NULL) {
        return;
    }
    free(r->points);
    free(r->owners);
    free(r->index);
    free(r);
}

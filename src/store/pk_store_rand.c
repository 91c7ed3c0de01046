/*
 * pk_store_rand: uniform random choices among one key's sub-key records
 * of one tag -- a set's members (SPOP, SRANDMEMBER), a hash's fields
 * (HRANDFIELD), a sorted set's members (ZRANDMEMBER) -- without loading
 * the collection.
 *
 * Every choice is of ranks, uniform, resolved to records.  LMDB keeps no
 * ranks; the store's rank index of the key (pk_store_rank.c, built on the
 * first pick from a collection of some size, in a write transaction)
 * finds a rank's block, and the pick walks inside it: about sqrt(n)
 * steps.  A few picks (k <= sqrt(n)/2) go one by one, k distinct ranks
 * drawn by Floyd's algorithm; more distinct records come from one pass of
 * selection sampling, and more draws with repeats are sorted by rank and
 * resolved a batch (PK__RAND_BATCH) per pass, so memory stays bounded
 * whatever the count.  Without an index (a small collection, a read
 * transaction) a rank is walked to from the nearer end.  The generator is
 * splitmix64 (pk__rand_next) seeded by the caller, and draws below n use
 * rejection, so no rank is favoured.
 *
 * Distinct picks come in sub-key order (byte order of the members), not
 * in random order: Redis promises no order, and streaming them needs none.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"

/* Uniform in [0, n), n > 0, without modulo bias (rejection). */
static uint64_t rnd_below(uint64_t *s, uint64_t n)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, r;

    do {
        r = pk__rand_next(s);
    } while (r >= lim);
    return r % n;
}

/*
 * Opens w at the record of rank r (0-based) of the loaded key m: from its
 * block's start when the key has a rank index, else from the nearer end.
 */
static int walk_rank(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t r,
                     pk__sub_walk *w)
{
    pk_slice start;
    uint64_t steps;
    int rev = 0, rc = pk__rank_find(t, m->key, m->plen, tag, m->count, r,
                                    &start, &steps);

    if (rc == 0) {
        rc = pk__sub_walk_from(t, w, m->key, m->plen, tag, start);
    } else if (rc == PK_ENOTFOUND) {
        rev = r >= m->count / 2;
        steps = rev ? m->count - 1 - r : r;
        rc = pk__sub_walk_open(t, w, m->key, m->plen, tag, rev);
    } else {
        return rc;
    }
    while (rc == 0 && w->valid && steps-- > 0) {
        rc = pk__sub_walk_next(t, w, rev);
    }
    if (rc == 0 && !w->valid) {
        rc = pk__fail(t, PK_ECORRUPT); /* fewer records than the count */
    }
    return rc;
}

int pk__rand_walk(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t *seed,
                  pk__sub_walk *w)
{
    return walk_rank(t, m, tag, rnd_below(seed, m->count), w);
}

/* Calls cb for the records of the n ranks given, in that order. */
static int at_ranks(pk_txn *t, const pk__meta *m, uint8_t tag,
                    const uint64_t *ranks, size_t n, pk__rand_cb cb, void *ctx)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        pk__sub_walk w = {0};

        rc = walk_rank(t, m, tag, ranks[i], &w);
        rc = rc ? rc : cb(ctx, w.mem, w.rest);
        pk__sub_walk_close(&w);
    }
    return rc;
}

/*
 * Whether k picks are cheaper one by one (each a block of a rank index,
 * about sqrt(count) steps) than by one pass over the key: k <= sqrt/2.
 */
static int few(const pk__meta *m, uint64_t k)
{
    return k <= UINT32_MAX && k * k * 4 <= m->count;
}

/*
 * k distinct ranks below m->count in ascending order, each k-subset
 * equally likely (Floyd's algorithm): an owned array, or NULL when out of
 * memory.  For k with few(m, k), so the insertion sort stays small.
 */
static uint64_t *floyd(const pk__meta *m, uint64_t k, uint64_t *seed)
{
    uint64_t *r = malloc((k ? k : 1) * sizeof(*r)), n = 0;

    for (uint64_t j = m->count - k; r && j < m->count; j++) {
        uint64_t v = rnd_below(seed, j + 1), lo = 0, hi = n;

        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;

            if (r[mid] < v) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo < n && r[lo] == v) {
            v = j; /* taken: j is new and the largest so far */
            lo = n;
        }
        memmove(r + lo + 1, r + lo, (n - lo) * sizeof(*r));
        r[lo] = v;
        n++;
    }
    return r;
}

/*
 * Selection sampling (Knuth's algorithm S): walks the loaded key once and
 * calls cb for k <= m->count of its records, each k-subset equally
 * likely.
 */
static int choose(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t k,
                  uint64_t *seed, pk__rand_cb cb, void *ctx)
{
    uint64_t seen = 0, left = k;
    pk__sub_walk w;
    int rc = pk__sub_walk_open(t, &w, m->key, m->plen, tag, 0);

    while (rc == 0 && w.valid && left > 0 && seen < m->count) {
        if (left >= m->count - seen ||
            rnd_below(seed, m->count - seen) < left) {
            left--;
            rc = cb(ctx, w.mem, w.rest);
        }
        seen++;
        rc = rc ? rc : pk__sub_walk_next(t, &w, 0);
    }
    pk__sub_walk_close(&w);
    if (rc == 0 && left > 0) {
        rc = pk__fail(t, PK_ECORRUPT); /* fewer records than the count */
    }
    return rc;
}

/* k <= m->count distinct records of m to cb, in sub-key order: by rank
 * when they are few, else in one pass. */
static int choose_some(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t k,
                       uint64_t *seed, pk__rand_cb cb, void *ctx)
{
    uint64_t *r;
    int rc;

    if (!few(m, k)) {
        return choose(t, m, tag, k, seed, cb, ctx);
    }
    if ((r = floyd(m, k, seed)) == NULL) {
        return PK_ENOMEM;
    }
    rc = at_ranks(t, m, tag, r, k, cb, ctx);
    free(r);
    return rc;
}

/* One draw with repeats: a rank and its place in the batch. */
typedef struct draw {
    uint64_t rank;
    uint32_t pos;
} draw;

/* A drawn record, borrowed from the map. */
typedef struct pick {
    pk_slice mem;
    pk_slice rest;
} pick;

static int draw_cmp(const void *a, const void *b)
{
    const draw *x = a, *y = b;

    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * n independent uniform draws (n <= PK__RAND_BATCH): sorts the ranks,
 * resolves them in one walk, reports them in draw order.  out and d hold
 * n entries.
 */
static int draw_batch(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t n,
                      uint64_t *seed, draw *d, pick *out, pk__rand_cb cb,
                      void *ctx)
{
    uint64_t rank = 0;
    size_t i = 0;
    pk__sub_walk w;
    int rc;

    for (uint32_t j = 0; j < n; j++) {
        d[j] = (draw){rnd_below(seed, m->count), j};
    }
    qsort(d, n, sizeof(*d), draw_cmp);
    rc = pk__sub_walk_open(t, &w, m->key, m->plen, tag, 0);
    while (rc == 0 && w.valid && i < n) {
        while (i < n && d[i].rank == rank) {
            out[d[i++].pos] = (pick){w.mem, w.rest};
        }
        rank++;
        rc = pk__sub_walk_next(t, &w, 0);
    }
    pk__sub_walk_close(&w);
    if (rc == 0 && i < n) {
        rc = pk__fail(t, PK_ECORRUPT);
    }
    for (i = 0; rc == 0 && i < n; i++) {
        rc = cb(ctx, out[i].mem, out[i].rest);
    }
    return rc;
}

/* k >= 1 draws with repeats to cb, in draw order. */
static int draw_all(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t k,
                    uint64_t *seed, pk__rand_cb cb, void *ctx)
{
    uint64_t b = k < PK__RAND_BATCH ? k : PK__RAND_BATCH;
    draw *d;
    pick *out;
    int rc = 0;

    if (few(m, k)) {
        /* One by one, each through the rank index. */
        for (uint64_t i = 0; rc == 0 && i < k; i++) {
            uint64_t r = rnd_below(seed, m->count);

            rc = at_ranks(t, m, tag, &r, 1, cb, ctx);
        }
        return rc;
    }
    d = malloc(b * sizeof(*d));
    out = malloc(b * sizeof(*out));
    rc = d && out ? 0 : PK_ENOMEM;
    while (rc == 0 && k > 0) {
        b = k < PK__RAND_BATCH ? k : PK__RAND_BATCH;
        rc = draw_batch(t, m, tag, b, seed, d, out, cb, ctx);
        k -= b;
    }
    free(d);
    free(out);
    return rc;
}

int pk__rand_pick(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t k,
                  int repeat, uint64_t *seed, pk__rand_cb cb, void *ctx)
{
    if (k == 0) {
        return 0;
    }
    if (repeat) {
        return draw_all(t, m, tag, k, seed, cb, ctx);
    }
    /* All of them: choose takes every record without a draw. */
    return choose_some(t, m, tag, k < m->count ? k : m->count, seed, cb, ctx);
}

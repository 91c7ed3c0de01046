/*
 * pk_set_rand: SPOP and SRANDMEMBER, uniform random choices over a set.
 *
 * Every choice is of ranks, uniform, resolved to members.  LMDB keeps no
 * ranks; the store's rank index of the set (pk_store_rank.c, built on
 * the first pick from a set of some size) finds a rank's block, and the
 * pick walks inside it: about sqrt(n) steps.  A few picks (k <= sqrt(n)/2)
 * go one by one, k distinct ranks drawn by Floyd's algorithm; more
 * distinct members come from one pass of selection sampling, and more
 * draws with repeats are sorted by rank and resolved a batch
 * (PK_SET_RAND_BATCH) per pass, so memory stays bounded whatever the
 * count.  Without an index (a small set, a read transaction) a rank is
 * walked to from the nearer end.  The generator is splitmix64
 * (pk__rand_next) seeded by the caller, and draws below n use rejection,
 * so no rank is favoured.
 *
 * HRANDFIELD and ZRANDMEMBER choose differently (pk_cmd_rand_pick, over
 * the whole collection loaded in memory, distinct picks in random order);
 * sets stream instead, and distinct members come in byte order.
 *
 * SPOP reads before it writes: the chosen members are copied out while
 * the walk runs and deleted after it is closed, so no cursor walks over
 * records being deleted and no borrowed byte outlives a write; a single
 * member is reported and then deleted under the walk's cursor, which
 * takes no further step.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_set_int.h"

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
 * Opens w at the member of rank r (0-based) of the loaded set m: from its
 * block's start when the set has a rank index, else from the nearer end.
 */
static int walk_rank(pk_txn *t, const pk__meta *m, uint64_t r, pk__set_walk *w)
{
    pk_slice start;
    uint64_t steps;
    int rev = 0, rc = pk__rank_find(t, m->key, m->plen, PK_TAG_SMEMBER,
                                    m->count, r, &start, &steps);

    if (rc == 0) {
        rc = pk__set_walk_from(t, w, m->key, m->plen, start);
    } else if (rc == PK_ENOTFOUND) {
        rev = r >= m->count / 2;
        steps = rev ? m->count - 1 - r : r;
        rc = pk__set_walk_open(t, w, m->key, m->plen, rev);
    } else {
        return rc;
    }
    while (rc == 0 && w->valid && steps-- > 0) {
        rc = pk__set_walk_next(t, w, rev);
    }
    if (rc == 0 && !w->valid) {
        rc = pk__fail(t, PK_ECORRUPT); /* fewer members than the count */
    }
    return rc;
}

/* Calls fn for the members of the n ranks given, in that order. */
static int at_ranks(pk_txn *t, const pk__meta *m, const uint64_t *ranks,
                    size_t n, pk_set_cb fn, void *ctx)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        pk__set_walk w = {0};

        rc = walk_rank(t, m, ranks[i], &w);
        rc = rc ? rc : fn(ctx, w.mem);
        pk__set_walk_close(&w);
    }
    return rc;
}

/*
 * Whether k picks are cheaper one by one (each a block of a rank index,
 * about sqrt(count) steps) than by one pass over the set: k <= sqrt/2.
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
 * Selection sampling (Knuth's algorithm S): walks the loaded set once and
 * calls fn for k of its members, each k-subset equally likely.
 */
static int choose(pk_txn *t, const pk__meta *m, uint64_t k, uint64_t *seed,
                  pk_set_cb fn, void *ctx)
{
    uint64_t seen = 0, left = k;
    pk__set_walk w;
    int rc = pk__set_walk_open(t, &w, m->key, m->plen, 0);

    while (rc == 0 && w.valid && left > 0 && seen < m->count) {
        if (rnd_below(seed, m->count - seen) < left) {
            left--;
            rc = fn(ctx, w.mem);
        }
        seen++;
        rc = rc ? rc : pk__set_walk_next(t, &w, 0);
    }
    pk__set_walk_close(&w);
    return rc;
}

/* k distinct members of m (k < m->count) to fn, in byte order: by rank
 * when they are few, else in one pass. */
static int choose_some(pk_txn *t, const pk__meta *m, uint64_t k, uint64_t *seed,
                       pk_set_cb fn, void *ctx)
{
    uint64_t *r;
    int rc;

    if (!few(m, k)) {
        return choose(t, m, k, seed, fn, ctx);
    }
    if ((r = floyd(m, k, seed)) == NULL) {
        return PK_ENOMEM;
    }
    rc = at_ranks(t, m, r, k, fn, ctx);
    free(r);
    return rc;
}

/* Members chosen by SPOP: reported to cb, then copied out of the map to
 * delete once the walk that chose them is closed. */
typedef struct popped {
    pk_set_cb cb;
    void *ctx;
    pk__buf buf; /* owned; see pk__set_buf_add */
} popped;

static int pop_keep(void *ctx, pk_slice mem)
{
    popped *pp = ctx;
    int rc = pp->cb(pp->ctx, mem);

    return rc ? rc : pk__set_buf_add(&pp->buf, mem);
}

int pk_set_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t count, uint64_t seed, uint64_t now_ms, pk_set_cb cb,
               void *ctx, uint64_t *n)
{
    popped pp = {cb, ctx, {NULL, 0, 0}};
    pk__meta m;
    pk_slice mem;
    int rc = pk__op_begin(t, part, 0), gone;

    if (rc != 0) {
        return rc;
    }
    rc = pk__set_load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists || count == 0) {
        if (rc == 0) {
            *n = 0;
        }
        goto out;
    }
    if (count >= m.count) {
        /* Everything: report the members, then drop the key. */
        count = m.count;
        rc = pk__set_each(t, &m, cb, ctx);
        rc = rc ? rc : pk__key_drop(t, &m);
    } else if (count == 1) {
        /* One member: reported, then deleted where the walk found it. */
        pk__set_walk w = {0};

        rc = walk_rank(t, &m, rnd_below(&seed, m.count), &w);
        rc = rc ? rc : cb(ctx, w.mem);
        rc = rc ? rc : pk__rec_del_here(t, w.c);
        pk__set_walk_close(&w);
        m.count--;
        rc = rc ? rc : pk__set_save(t, &m);
    } else {
        rc = choose_some(t, &m, count, &seed, pop_keep, &pp);
    }
    for (size_t off = 0; rc == 0 && pk__set_buf_next(&pp.buf, &off, &mem);) {
        rc = pk__set_rem_one(t, &m, mem.ptr, mem.len, &gone);
    }
    if (rc == 0 && pp.buf.len > 0) {
        rc = pk__set_save(t, &m);
    }
    if (rc == 0) {
        *n = count;
    }
    free(pp.buf.p);
out:
    return pk__op_end(t, rc);
}

/* One draw of SRANDMEMBER with repeats: a rank and its place in the
 * reply. */
typedef struct draw {
    uint64_t rank;
    uint32_t pos;
} draw;

static int draw_cmp(const void *a, const void *b)
{
    const draw *x = a, *y = b;

    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * n independent uniform draws (n <= PK_SET_RAND_BATCH): sorts the ranks,
 * resolves them in one walk, reports them in draw order.  out and d hold
 * n entries.
 */
static int draw_batch(pk_txn *t, const pk__meta *m, uint64_t n, uint64_t *seed,
                      draw *d, pk_slice *out, pk_set_cb cb, void *ctx)
{
    uint64_t rank = 0;
    size_t i = 0;
    pk__set_walk w;
    int rc;

    for (uint32_t j = 0; j < n; j++) {
        d[j] = (draw){rnd_below(seed, m->count), j};
    }
    qsort(d, n, sizeof(*d), draw_cmp);
    rc = pk__set_walk_open(t, &w, m->key, m->plen, 0);
    while (rc == 0 && w.valid && i < n) {
        while (i < n && d[i].rank == rank) {
            out[d[i++].pos] = w.mem;
        }
        rank++;
        rc = pk__set_walk_next(t, &w, 0);
    }
    pk__set_walk_close(&w);
    if (rc == 0 && i < n) {
        rc = pk__fail(t, PK_ECORRUPT);
    }
    for (i = 0; rc == 0 && i < n; i++) {
        rc = cb(ctx, out[i]);
    }
    return rc;
}

int pk_set_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                  pk_set_cb cb, void *ctx)
{
    pk__meta m;
    draw *d = NULL;
    pk_slice *out = NULL;
    uint64_t b;
    int rc = pk__set_load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0 || !m.exists || count == 0) {
        return rc;
    }
    if (!repeat && count >= m.count) {
        return pk__set_each(t, &m, cb, ctx);
    }
    if (!repeat) {
        return choose_some(t, &m, count, &seed, cb, ctx);
    }
    if (few(&m, count)) {
        /* Draws with repeats, one by one in draw order. */
        for (uint64_t i = 0; rc == 0 && i < count; i++) {
            uint64_t r = rnd_below(&seed, m.count);

            rc = at_ranks(t, &m, &r, 1, cb, ctx);
        }
        return rc;
    }
    b = count < PK_SET_RAND_BATCH ? count : PK_SET_RAND_BATCH;
    d = malloc(b * sizeof(*d));
    out = malloc(b * sizeof(*out));
    rc = d && out ? 0 : PK_ENOMEM;
    while (rc == 0 && count > 0) {
        b = count < PK_SET_RAND_BATCH ? count : PK_SET_RAND_BATCH;
        rc = draw_batch(t, &m, b, &seed, d, out, cb, ctx);
        count -= b;
    }
    free(d);
    free(out);
    return rc;
}

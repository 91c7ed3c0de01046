/*
 * bench_place: nanoseconds per key placement, beside the cost of hashing
 * the key at all.
 *
 * For N = 10, 100 and 1000 nodes ("node-<i>", weight 1) every placement
 * looks up the same pre-generated 16-byte random keys (fixed-seed
 * xorshift64*, so runs are comparable).  Each figure is the median of
 * BENCH_RUNS timed passes with CLOCK_MONOTONIC.  The anchor is one XXH3 of
 * the key (pk_hash_xxh3, as every "incl. hash" row calls it), measured in
 * the same process, and each row prints its ratio to that anchor.  Rows
 * marked "alone" take hashes computed before timing.
 *
 * Rendezvous costs one hash per node, so it runs over 16M / N keys
 * (capped at all of them) to keep the whole program well under a minute.
 *
 * Results are summed into a volatile sink so no lookup can be optimised
 * away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pk_hash.h"
#include "core/pk_jump.h"
#include "core/pk_maglev.h"
#include "core/pk_place.h"
#include "core/pk_rendezvous.h"
#include "core/pk_ring.h"

#define BENCH_KEYS (4u << 20) /* 4 Mi keys */
#define BENCH_KEY_LEN 16u
#define BENCH_RUNS 5
#define BENCH_VNODES 150u
#define BENCH_FIXED_PARTS 16384u

/* Input shared by every row of one N. */
typedef struct bench_ctx {
    const unsigned char *keys; /* BENCH_KEYS * BENCH_KEY_LEN bytes */
    const uint64_t *hashes;    /* xxh3 of each key */
    uint32_t nnodes;
    double anchor_ns;        /* raw XXH3 ns per key for this N */
    volatile uint64_t *sink; /* main's; every result is added to it */
} bench_ctx;

static uint64_t xorshift64s(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return x < y ? -1 : (x > y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/*
 * Times BENCH_RUNS passes of `expr` (which may use the key pointer `k` and
 * its hash `hk`) over the first `count` keys; stores the median ns/key in
 * `result`.  A macro rather than a callback so the loop body is not hidden
 * behind an indirect call the anchor does not pay.
 */
#define BENCH_LOOP(ctx, count, result, expr)                                   \
    do {                                                                       \
        double runs_[BENCH_RUNS];                                              \
        for (int r_ = 0; r_ < BENCH_RUNS; r_++) {                              \
            uint64_t acc_ = 0;                                                 \
            double t0_ = now_ns();                                             \
            for (uint32_t i_ = 0; i_ < (count); i_++) {                        \
                const unsigned char *k =                                       \
                    (ctx)->keys + (size_t)i_ * BENCH_KEY_LEN;                  \
                uint64_t hk = (ctx)->hashes[i_];                               \
                (void)k;                                                       \
                (void)hk;                                                      \
                acc_ += (uint64_t)(expr);                                      \
            }                                                                  \
            runs_[r_] = (now_ns() - t0_) / (double)(count);                    \
            *(ctx)->sink += acc_;                                              \
        }                                                                      \
        (result) = median(runs_, BENCH_RUNS);                                  \
    } while (0)

static void row(const bench_ctx *c, const char *what, double ns)
{
    printf("%-28s %6u %10.2f %9.2fx\n", what, c->nnodes, ns, ns / c->anchor_ns);
}

static pk_place_node *make_nodes(uint32_t n, char **names_out)
{
    pk_place_node *nodes = malloc(sizeof(*nodes) * n);
    char *names = malloc((size_t)n * 16);

    if (nodes == NULL || names == NULL) {
        free(nodes);
        free(names);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        snprintf(names + (size_t)i * 16, 16, "node-%u", i);
        nodes[i].id = i;
        nodes[i].name = names + (size_t)i * 16;
        nodes[i].weight = 1.0;
    }
    *names_out = names;
    return nodes;
}

static int bench_n(bench_ctx *c)
{
    const uint32_t n = c->nnodes;
    uint32_t hrw_keys = (16u << 20) / n;
    uint32_t *fixed = malloc(sizeof(*fixed) * BENCH_FIXED_PARTS);
    char *names = NULL;
    pk_place_node *nodes = make_nodes(n, &names);
    pk_ring *ring = NULL;
    pk_hrw *hrw = NULL;
    pk_maglev *mag = NULL;
    double ns;
    int rc = 1;

    if (fixed == NULL || nodes == NULL ||
        pk_ring_new(nodes, n, BENCH_VNODES, pk_hash_xxh3, &ring) != 0 ||
        pk_hrw_new(nodes, n, pk_hash_xxh3, &hrw) != 0 ||
        pk_maglev_new(nodes, n, PK_MAGLEV_DEFAULT_SIZE, &mag) != 0) {
        fprintf(stderr, "bench_place: setup failed for N=%u\n", n);
        goto done;
    }
    hrw_keys = hrw_keys > BENCH_KEYS ? BENCH_KEYS : hrw_keys;
    for (uint32_t p = 0; p < BENCH_FIXED_PARTS; p++) {
        fixed[p] = p % n;
    }

    BENCH_LOOP(c, BENCH_KEYS, c->anchor_ns, pk_hash_xxh3(k, BENCH_KEY_LEN));
    row(c, "raw xxh3 (anchor)", c->anchor_ns);
    BENCH_LOOP(c, BENCH_KEYS, ns,
               pk_mod_bucket(pk_hash_xxh3(k, BENCH_KEY_LEN), n));
    row(c, "modulo (incl. hash)", ns);
    BENCH_LOOP(c, BENCH_KEYS, ns,
               pk_jump_bucket(pk_hash_xxh3(k, BENCH_KEY_LEN), (int32_t)n));
    row(c, "jump (incl. hash)", ns);
    BENCH_LOOP(c, BENCH_KEYS, ns,
               fixed[pk_hash_xxh3(k, BENCH_KEY_LEN) % BENCH_FIXED_PARTS]);
    row(c, "fixed 16384 table (incl.)", ns);
    BENCH_LOOP(c, BENCH_KEYS, ns,
               pk_ring_lookup(ring, pk_hash_xxh3(k, BENCH_KEY_LEN)));
    row(c, "ring 150 vn (incl. hash)", ns);
    BENCH_LOOP(c, BENCH_KEYS, ns, pk_ring_lookup(ring, hk));
    row(c, "ring 150 vn (alone)", ns);
    BENCH_LOOP(c, BENCH_KEYS, ns,
               pk_maglev_lookup(mag, pk_hash_xxh3(k, BENCH_KEY_LEN)));
    row(c, "maglev 65537 (incl. hash)", ns);
    BENCH_LOOP(c, BENCH_KEYS, ns, pk_maglev_lookup(mag, hk));
    row(c, "maglev 65537 (alone)", ns);
    BENCH_LOOP(c, hrw_keys, ns, pk_hrw_lookup(hrw, k, BENCH_KEY_LEN));
    row(c, "rendezvous (incl. hashes)", ns);
    printf("\n");
    rc = 0;
done:
    pk_ring_free(ring);
    pk_hrw_free(hrw);
    pk_maglev_free(mag);
    free(nodes);
    free(names);
    free(fixed);
    return rc;
}

int main(void)
{
    static const uint32_t sizes[] = {10, 100, 1000};
    unsigned char *keys = malloc((size_t)BENCH_KEYS * BENCH_KEY_LEN);
    uint64_t *hashes = malloc(sizeof(*hashes) * BENCH_KEYS);
    uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    volatile uint64_t sink = 0;
    bench_ctx c;
    int rc = 0;

    if (keys == NULL || hashes == NULL) {
        fprintf(stderr, "bench_place: out of memory\n");
        free(keys);
        free(hashes);
        return 1;
    }
    for (size_t i = 0; i < (size_t)BENCH_KEYS * BENCH_KEY_LEN; i += 8) {
        uint64_t v = xorshift64s(&seed);
        memcpy(keys + i, &v, 8);
    }
    for (uint32_t i = 0; i < BENCH_KEYS; i++) {
        hashes[i] =
            pk_hash_xxh3(keys + (size_t)i * BENCH_KEY_LEN, BENCH_KEY_LEN);
    }
    c.keys = keys;
    c.hashes = hashes;
    c.sink = &sink;
    printf("bench_place: %u keys of %u bytes, median of %d runs\n\n",
           BENCH_KEYS, BENCH_KEY_LEN, BENCH_RUNS);
    printf("%-28s %6s %10s %10s\n", "placement", "N", "ns/lookup", "vs xxh3");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; i++) {
        c.nnodes = sizes[i];
        rc = bench_n(&c);
    }
    free(keys);
    free(hashes);
    return rc;
}

/*
 * pk_splitfind: where to split a range by load, after CockroachDB's
 * unweighted split finder (pkg/kv/kvserver/split/unweighted_finder.go).
 *
 * A range that gets too many requests is split where the requests divide
 * evenly.  The finder keeps a reservoir of PK_SPLITFIND_SAMPLES request
 * keys, a uniform sample of all requests recorded since it was started.
 * For every later request and every sampled key k, it counts on which side
 * of a split at k the request would fall:
 *
 *   right      the request starts at or after k: [k, hi) would serve it
 *   left       it ends before k: [lo, k) would serve it
 *   contained  a span that starts before k and ends after it: a split at
 *              k would turn it into two requests
 *
 * A candidate k is rejected when its balance |left - right| / (left +
 * right) is at least PK_SPLITFIND_BALANCE_MAX, or when the spans it cuts,
 * contained / (left + right + contained), are at least
 * PK_SPLITFIND_CONTAINED_MAX; the best of the others (lowest balance, then
 * fewest cut spans) is the split key.  No key is suggested before the
 * finder has run for min_ms and seen min_count requests past each sample.
 *
 * When every candidate is rejected the verdict says why, so an operator
 * sees what kind of load no split can relieve:
 *
 *   hot key     most samples are one key: a split cannot divide one key's
 *               requests (salting can: issue 16)
 *   increasing  requests keep landing to the right of every sample, as
 *               with monotonic keys (timestamps): whatever the split, the
 *               new writes go to its right-hand side
 *   decreasing  the same to the left
 *   spanning    the candidates that are balanced would cut too many spans
 *               (scans over most of the range)
 *   imbalanced  none of the above, and still no candidate balances
 *
 * Sampled keys longer than PK_SPLITFIND_KEY_MAX bytes keep their first
 * PK_SPLITFIND_KEY_MAX bytes: any byte string is a valid split point, and
 * the counts are taken against the truncated key itself, so they describe
 * a split exactly there.
 *
 * Pure and deterministic for a given seed: no clock (the caller passes
 * now), no allocation, no I/O.  Not thread-safe; one finder per range.
 */
#ifndef PK_CORE_PK_SPLITFIND_H
#define PK_CORE_PK_SPLITFIND_H

#include <stddef.h>
#include <stdint.h>

#define PK_SPLITFIND_SAMPLES 20
#define PK_SPLITFIND_KEY_MAX 256
#define PK_SPLITFIND_BALANCE_MAX 0.25
#define PK_SPLITFIND_CONTAINED_MAX 0.5
#define PK_SPLITFIND_MIN_COUNT 100 /* CockroachDB's splitKeyMinCounter */

typedef struct pk_splitfind_sample {
    uint8_t key[PK_SPLITFIND_KEY_MAX];
    uint16_t len;
    uint8_t span; /* sampled from a span's start */
    uint64_t left, right, contained;
} pk_splitfind_sample;

typedef struct pk_splitfind {
    uint64_t start_ms;
    uint64_t min_ms;    /* no suggestion before start_ms + min_ms */
    uint64_t min_count; /* nor before a sample has seen this many */
    uint64_t count;     /* requests recorded */
    uint64_t rng;
    uint32_t n; /* samples held, <= PK_SPLITFIND_SAMPLES */
    pk_splitfind_sample s[PK_SPLITFIND_SAMPLES];
} pk_splitfind;

typedef enum pk_splitfind_verdict {
    PK_SPLITFIND_FOUND = 0,
    PK_SPLITFIND_WAIT,       /* too early, or too few requests */
    PK_SPLITFIND_HOT_KEY,    /* one key takes most requests */
    PK_SPLITFIND_INCREASING, /* requests keep landing to the right */
    PK_SPLITFIND_DECREASING, /* ... to the left */
    PK_SPLITFIND_SPANNING,   /* balanced splits would cut many spans */
    PK_SPLITFIND_IMBALANCED  /* no candidate divides the load */
} pk_splitfind_verdict;

typedef struct pk_splitfind_result {
    pk_splitfind_verdict verdict;
    const uint8_t *key; /* FOUND and HOT_KEY: borrowed from the finder */
    size_t len;
    double balance;   /* the best candidate's, 1 when there is none */
    double contained; /* its share of cut spans */
} pk_splitfind_result;

/* Starts f at now_ms; min_ms 0 and min_count 0 take the defaults (5000
 * ms, PK_SPLITFIND_MIN_COUNT).  seed picks the reservoir's draws. */
void pk_splitfind_init(pk_splitfind *f, uint64_t now_ms, uint64_t min_ms,
                       uint64_t min_count, uint64_t seed);

/*
 * Records one request: a point request at key (end NULL), or a span
 * [key, end) (a range read; end_len 0 with end non-NULL: to the range's
 * end).  The key is copied when sampled; nothing is kept of end.
 */
void pk_splitfind_record(pk_splitfind *f, const void *key, size_t len,
                         const void *end, size_t end_len);

/* The verdict at now_ms, and the split key when it is FOUND. */
void pk_splitfind_key(const pk_splitfind *f, uint64_t now_ms,
                      pk_splitfind_result *out);

/* "found", "wait", "hot key", "increasing", ... for replies and logs. */
const char *pk_splitfind_reason(pk_splitfind_verdict v);

#endif

/*
 * pk_topk: the hottest keys of a stream of requests, in bounded memory --
 * Space-Saving (Metwally, Agrawal, El Abbadi, 2005) over decayed counts.
 *
 * The tracker keeps k entries (key, read and write counts, error bound).
 * A request for a key it tracks adds to that key's count; for any other
 * key, while there is room it gets a new entry, else it takes over the
 * entry with the smallest count, inheriting that count as its own start
 * and as its error bound: a key's true count lies in [count - err,
 * count].  Every key whose count exceeds the total over k is tracked.
 *
 * In front of the entries, a filter of small counters indexed by the
 * key's hash (decayed as the counts are) takes every request: a key not
 * tracked takes the smallest entry only when its counter -- at least its
 * own count, more with the keys that share it -- exceeds that entry's
 * count (else it could not be among the k hottest, and the replacement,
 * the cost of a stream of distinct keys, is skipped).
 *
 * Counts decay: pk_topk_tick (once a second, say) sets every count to the
 * mean of itself and the tick's requests (and halves the error), so the
 * ranking follows the load of the last few seconds rather than of all
 * time.  A key requested w times per tick converges to a count of w (half
 * way after one tick, 94 % after four), and its rate is estimated as
 * count / (sampling * seconds per tick): the caller samples the requests
 * (pk_topk_want), the tracker scales back.
 *
 * Keys longer than PK_TOPK_KEY_MAX bytes are tracked by their first
 * PK_TOPK_KEY_MAX bytes and a hash of the whole key (the entry says it is
 * truncated).  Memory: k entries of about 200 bytes, a hash index of 4k
 * slots and a filter of 32k 16-bit counters (k = 128: 4,096 of them;
 * about 36 KiB in all).  Pure: the caller passes the random draws and
 * the clock; no I/O.  Not thread-safe.
 */
#ifndef PK_CORE_PK_TOPK_H
#define PK_CORE_PK_TOPK_H

#include <stddef.h>
#include <stdint.h>

#define PK_TOPK_KEY_MAX 128
#define PK_TOPK_MAX 4096
#define PK_TOPK_FILTER_PER_SLOT 8

typedef struct pk_topk_entry {
    uint64_t hash;
    double count[2]; /* decayed sampled reads [0], writes [1] */
    double tick[2];  /* sampled since the last tick */
    double err;      /* count inherited when it took the entry */
    uint32_t part;   /* the caller's: where the key lives */
    uint16_t len;    /* bytes of key kept */
    uint8_t truncated;
    uint8_t key[PK_TOPK_KEY_MAX];
} pk_topk_entry;

typedef struct pk_topk {
    uint32_t k, n;
    double sampling;      /* the fraction of requests passed in, (0, 1] */
    double tick_s;        /* seconds per tick */
    pk_topk_entry *e;     /* k entries, n used */
    uint32_t *heap, *pos; /* min-heap of entries by total count */
    uint32_t *slot;       /* hash index: entry + 1, 0 empty */
    uint32_t nslots;      /* a power of two >= 4k */
    uint16_t *filter;     /* admission counters by hash */
    uint32_t nfilter;     /* nslots * PK_TOPK_FILTER_PER_SLOT */
    uint64_t replaced;    /* entries taken over by another key */
} pk_topk;

/*
 * A tracker of k (1..PK_TOPK_MAX) keys, for requests sampled with
 * probability sampling (0 < sampling <= 1).  Returns 0, PK_EINVAL or
 * PK_ENOMEM.
 */
int pk_topk_init(pk_topk *t, uint32_t k, double sampling);
void pk_topk_free(pk_topk *t);

/* Whether a request is sampled, given a uniform draw in [0, 1). */
static inline int pk_topk_want(const pk_topk *t, double draw)
{
    return draw < t->sampling;
}

/* One sampled request for key (its hash: pk_topk_hash), in part. */
void pk_topk_add(pk_topk *t, const void *key, size_t len, uint64_t hash,
                 uint32_t part, int write);

/* The hash to pass to pk_topk_add (of the whole key). */
uint64_t pk_topk_hash(const void *key, size_t len);

/* A tick of tick_s seconds has passed: counts take the tick, then halve. */
void pk_topk_tick(pk_topk *t, double tick_s);

/* An entry's estimated requests per second, reads (which 0) or writes
 * (1), and its error bound in the same unit. */
double pk_topk_rate(const pk_topk *t, const pk_topk_entry *e, int which);
double pk_topk_err(const pk_topk *t, const pk_topk_entry *e);

/*
 * The up to cap hottest entries (by reads + writes), hottest first, into
 * out (pointers into t, valid until the next add or tick).  Returns how
 * many.
 */
uint32_t pk_topk_top(const pk_topk *t, const pk_topk_entry **out, uint32_t cap);

#endif

/*
 * pk_zset_range: ZRANGE by rank, by score and by lex, with REV and LIMIT --
 * which also serve ZRANGEBYSCORE, ZREVRANGE, ZREVRANGEBYSCORE and
 * ZRANGEBYLEX -- plus the parsers for their bounds.
 *
 * Each range is one seek and a cursor walk over one key's records (layout
 * in pk_zset.h).  Parameters, errors and lifetimes follow pk_key.h and
 * pk_store.h; every range returns PK_STORE_WRONGTYPE for a key of another
 * type and reports nothing for a missing key.
 */
#ifndef PK_STORE_PK_ZSET_RANGE_H
#define PK_STORE_PK_ZSET_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

/* A score bound: "1.5" is {1.5, 0}, "(1.5" is {1.5, 1}; +-inf allowed. */
typedef struct pk_zbound {
    double value;
    int excl;
} pk_zbound;

/* A lex bound: "[a" INCL, "(a" EXCL, "-" MIN, "+" MAX. */
typedef enum pk_zlex_kind {
    PK_ZLEX_INCL = 0,
    PK_ZLEX_EXCL = 1,
    PK_ZLEX_MIN = 2,
    PK_ZLEX_MAX = 3,
} pk_zlex_kind;

typedef struct pk_zlex {
    const void *ptr; /* borrowed; unused for MIN and MAX */
    size_t len;
    pk_zlex_kind kind;
} pk_zlex;

/*
 * Range callback: member points into the map and stays valid until the
 * transaction ends (or its next write).  Return 0 to go on; any other
 * value stops the walk and is returned by the range function.
 */
typedef int (*pk_zset_cb)(void *ctx, pk_slice member, double score);

/* The three ways of choosing a range. */
typedef enum pk_zrange_kind {
    PK_ZRANGE_RANK = 0,
    PK_ZRANGE_SCORE = 1,
    PK_ZRANGE_LEX = 2,
} pk_zrange_kind;

/*
 * One range, whatever command spelled it (ZRANGE and its older forms,
 * ZCOUNT, ZLEXCOUNT, ZREMRANGEBY*, ZRANGESTORE).  rev walks from the high
 * end; the bounds are always low (min) and high (max), the server swaps
 * REV's arguments.
 */
typedef struct pk_zrange {
    pk_zrange_kind kind;
    int rev;
    int64_t start, stop;   /* RANK: as Redis takes them (negative ok) */
    pk_zbound smin, smax;  /* SCORE */
    pk_zlex lmin, lmax;    /* LEX; ptr borrowed */
    int64_t offset, count; /* SCORE, LEX: LIMIT; count < 0 means all */
} pk_zrange;

/*
 * Calls cb for every member of the range r, in order (reverse with
 * r->rev).  Rank ranges are clamped to the set before any walk; a rank
 * range costs a cursor walk of start + length steps (LMDB keeps no
 * ranks).  Returns 0, WRONGTYPE, PK_EINVAL (NaN bound), the callback's
 * value or an error.
 */
int pk_zset_range(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const pk_zrange *r, uint64_t now_ms, pk_zset_cb cb,
                  void *ctx);

/*
 * ZCOUNT / ZLEXCOUNT: *n = members in r (LIMIT ignored; a walk over the
 * range).  Returns as pk_zset_range.
 */
int pk_zset_count(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const pk_zrange *r, uint64_t now_ms, uint64_t *n);

/*
 * ZRANK / ZREVRANK: *rank = the member's 0-based rank (from the high end
 * with rev), *score its score.  A cursor walk of rank steps.  Returns 0,
 * PK_ENOTFOUND (key or member), WRONGTYPE or an error.
 */
int pk_zset_rank(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 const void *member, size_t mlen, int rev, uint64_t now_ms,
                 uint64_t *rank, double *score);

/*
 * Parses a ZRANGEBYSCORE bound ("1", "(1", "-inf", "+inf", "(inf"...).
 * Returns 0, PK_EINVAL (Redis: "min or max is not a float") or PK_ENOMEM
 * (a bound longer than 127 bytes is copied to the heap).
 */
int pk_zbound_parse(const void *s, size_t len, pk_zbound *out);

/*
 * Parses a ZRANGEBYLEX bound ("[a", "(a", "-", "+"); out->ptr borrows s.
 * Returns 0 or PK_EINVAL (Redis: "min or max not valid string range
 * item").
 */
int pk_zlex_parse(const void *s, size_t len, pk_zlex *out);

/*
 * ZRANGE start stop [REV]: ranks as Redis takes them (negative counts from
 * the end; out-of-range ends are clamped).  Returns 0, WRONGTYPE, the
 * callback's value or an error.
 */
int pk_zset_range_rank(pk_txn *t, uint32_t part, const void *key, size_t klen,
                       int64_t start, int64_t stop, int rev, uint64_t now_ms,
                       pk_zset_cb cb, void *ctx);

/*
 * ZRANDMEMBER: calls cb for count members chosen uniformly at random, with
 * their scores: distinct ones (min(count, card) of them, in byte order of
 * the members) unless repeat, else exactly count independent draws in
 * random order (none for a missing key).  seed drives the choice; memory
 * is bounded by a batch of 65536 draws whatever count is, never by the
 * set's size (pk_store_rand.c).  Returns 0, WRONGTYPE, the callback's
 * value, PK_ENOMEM or an error.
 */
int pk_zset_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                   pk_zset_cb cb, void *ctx);

/*
 * ZRANGE min max BYSCORE [REV] [LIMIT offset count]: members with min <=
 * score <= max (bounds as given, exclusive ones excluded) in score order,
 * or reverse order with rev (min is still the lower bound: the server
 * swaps REV's arguments).  Skips offset members (a negative offset gives
 * nothing) and reports at most count (negative: all).  Returns as above.
 */
int pk_zset_range_score(pk_txn *t, uint32_t part, const void *key, size_t klen,
                        const pk_zbound *min, const pk_zbound *max, int rev,
                        int64_t offset, int64_t count, uint64_t now_ms,
                        pk_zset_cb cb, void *ctx);

/*
 * ZRANGE min max BYLEX [REV] [LIMIT offset count]: members between the lex
 * bounds in byte order (as ZRANGEBYLEX, meant for sets whose scores are
 * all equal; partkv orders by member bytes whatever the scores).  Offset
 * and count as above.  Returns as above.
 */
int pk_zset_range_lex(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      const pk_zlex *min, const pk_zlex *max, int rev,
                      int64_t offset, int64_t count, uint64_t now_ms,
                      pk_zset_cb cb, void *ctx);

#endif

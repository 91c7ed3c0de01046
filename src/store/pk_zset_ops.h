/*
 * pk_zset_ops: sorted-set commands that take members out or combine sets
 * -- ZPOPMIN/ZPOPMAX/ZMPOP (and the blocking forms' non-blocking step),
 * ZREMRANGEBYRANK/SCORE/LEX, ZRANGESTORE, ZUNION/ZINTER/ZDIFF with their
 * STORE forms and ZINTERCARD -- and ZSCAN.
 *
 * Every function here reads its inputs completely (copying what it keeps)
 * before it writes, so a destination that is also an input, or members
 * handed to a callback after their deletion, are safe.  Memory is bounded
 * by the data read, never by a client's number.  Parameters, errors and
 * lifetimes follow pk_key.h and pk_store.h; inputs of another type give
 * PK_STORE_WRONGTYPE before anything is written.
 */
#ifndef PK_STORE_PK_ZSET_OPS_H
#define PK_STORE_PK_ZSET_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_key.h"
#include "store/pk_slice.h"
#include "store/pk_zset_range.h"

typedef struct pk_txn pk_txn;

/*
 * ZPOPMIN / ZPOPMAX: removes the min(count, card) members with the lowest
 * (from_max: highest) scores, in that order, and then calls cb once per
 * removed member in pop order (member bytes are a copy, valid during the
 * call; a non-zero return stops the calls, not the pop).  *popped gets
 * the number removed (0 for a missing key: no operation is logged then).
 * The blocking pops (BZPOPMIN/BZPOPMAX/BZMPOP) are this call once a key
 * has members.  Returns 0, WRONGTYPE or a sticky error.
 */
int pk_zset_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
                int from_max, uint64_t count, uint64_t now_ms, pk_zset_cb cb,
                void *ctx, uint64_t *popped);

/*
 * ZREMRANGEBY*: removes the members of range r (LIMIT ignored) and sets
 * *removed.  Returns 0, WRONGTYPE, PK_EINVAL (NaN bound) or an error.
 */
int pk_zset_remrange(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     const pk_zrange *r, uint64_t now_ms, uint64_t *removed);

/*
 * ZRANGESTORE: replaces dst (of any type; deleted when the range is
 * empty) with the members of src's range r and sets *stored.  Returns 0,
 * WRONGTYPE (src only), PK_EINVAL, PK_ERANGE or an error.
 */
int pk_zset_rangestore(pk_txn *t, uint32_t part, const void *dst, size_t dlen,
                       const void *src, size_t slen, const pk_zrange *r,
                       uint64_t now_ms, uint64_t *stored);

typedef enum pk_zop_kind {
    PK_ZOP_UNION = 0,
    PK_ZOP_INTER = 1,
    PK_ZOP_DIFF = 2,
} pk_zop_kind;

typedef enum pk_zagg {
    PK_ZAGG_SUM = 0,
    PK_ZAGG_MIN = 1,
    PK_ZAGG_MAX = 2,
} pk_zagg;

/*
 * A combination of n >= 1 input keys, all in one partition.  Inputs may
 * be sorted sets or sets (a set member scores 1); missing keys are empty.
 * As in Redis, a weighted score that is NaN (0 * inf) counts as 0, and a
 * SUM of +inf and -inf is 0.  DIFF ignores weights and agg.
 */
typedef struct pk_zop {
    pk_zop_kind op;
    pk_zagg agg;
    size_t n;
    const pk_slice *keys;  /* borrowed, n entries */
    const double *weights; /* borrowed, n entries, or NULL for all 1 */
    uint64_t limit;        /* pk_zset_combine_card: 0 means none */
} pk_zop;

/*
 * ZUNION / ZINTER / ZDIFF: calls cb for every member of the result in
 * (score, member) order, as Redis replies.  Returns 0, WRONGTYPE,
 * PK_EINVAL (n == 0), the callback's value or an error.
 */
int pk_zset_combine(pk_txn *t, uint32_t part, const pk_zop *op, uint64_t now_ms,
                    pk_zset_cb cb, void *ctx);

/* ZINTERCARD (op->op INTER): *card, at most op->limit when set. */
int pk_zset_combine_card(pk_txn *t, uint32_t part, const pk_zop *op,
                         uint64_t now_ms, uint64_t *card);

/*
 * ZUNIONSTORE / ZINTERSTORE / ZDIFFSTORE: replaces dst (any type; deleted
 * when the result is empty) and sets *stored.  Returns as above, or
 * PK_ERANGE.
 */
int pk_zset_combine_store(pk_txn *t, uint32_t part, const void *dst,
                          size_t dlen, const pk_zop *op, uint64_t now_ms,
                          uint64_t *stored);

/*
 * Checks only the types of n keys: 0, or WRONGTYPE when one is neither a
 * sorted set nor a set (Redis checks inputs before it parses options).
 */
int pk_zset_check_inputs(pk_txn *t, uint32_t part, size_t n,
                         const pk_slice *keys, uint64_t now_ms);

/*
 * ZSCAN: members in byte order from cursor (0 to begin), at least
 * opts->count examined (0 means 10) and then the rest of the group
 * sharing the last one's first 8 bytes; *next is the cursor of the next
 * group (the big-endian value of its first 8 bytes, zero padded), 0 when
 * done.  So a member present for the whole scan is reported exactly once
 * whatever is written between calls.  opts->type is ignored; opts may be
 * NULL.  Returns 0, WRONGTYPE, the callback's value or an error.
 */
int pk_zset_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t cursor, const pk_scan_opts *opts, uint64_t now_ms,
                 pk_zset_cb cb, void *ctx, uint64_t *next);

#endif

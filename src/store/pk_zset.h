/*
 * pk_zset: Redis sorted-set commands -- ZADD (NX XX GT LT CH INCR), ZREM,
 * ZSCORE, ZCARD.  The ZRANGE family is in pk_zset_range.h.
 *
 * A sorted set is a META record (member count) plus two records per
 * member (layout in pk_keyenc.h):
 *
 *   prefix | 0x03 | member                -> score (f64, big-endian bits)
 *   prefix | 0x04 | score8 | member       -> (empty)
 *
 * The first answers ZSCORE and ZRANGE BYLEX in member order, the second
 * walks members in (score, member) order, so "the first 20 members by
 * score" is one seek and 20 cursor steps.  A set never exists empty.
 *
 * Parameters, errors and lifetimes follow pk_key.h and pk_store.h; every
 * function returns PK_STORE_WRONGTYPE for a key of another type.  Keys
 * and members of any length are fine (pk_keyenc.h: members of 240 bytes
 * or more sort by head and digest, so members tied on score and sharing
 * their first 224 bytes may come in another order than Redis's); writes
 * return PK_ERANGE for a key that cannot exist (see pk_key.h) or a member
 * whose digest another member holds; nothing is written then.
 * Scores are never NaN; -0 is stored as 0.
 */
#ifndef PK_STORE_PK_ZSET_H
#define PK_STORE_PK_ZSET_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

#define PK_ZADD_NX 1u    /* only add new members */
#define PK_ZADD_XX 2u    /* only update existing members */
#define PK_ZADD_GT 4u    /* update only if the new score is greater */
#define PK_ZADD_LT 8u    /* update only if the new score is less */
#define PK_ZADD_CH 16u   /* count changed members too */
#define PK_ZADD_INCR 32u /* add the score to the current one (one pair) */

typedef struct pk_zadd_result {
    uint64_t count; /* added members (+ changed ones with CH) */
    double score;   /* INCR: the member's new score */
    int has_score;  /* INCR: 0 when NX/XX/GT/LT skipped it (nil reply) */
} pk_zadd_result;

/*
 * ZADD: adds or updates n >= 1 (score, member) pairs.  Returns 0,
 * PK_EINVAL (n == 0, a NaN score, NX with XX/GT/LT, GT with LT, INCR with
 * n != 1), PK_STORE_WRONGTYPE, PK_STORE_NAN (INCR reached NaN), PK_ERANGE
 * or a sticky error.
 */
int pk_zset_add(pk_txn *t, uint32_t part, const void *key, size_t klen,
                unsigned flags, size_t n, const double *scores,
                const pk_slice *members, uint64_t now_ms, pk_zadd_result *res);

/*
 * ZREM: removes n members, sets *removed to how many existed.  Returns 0,
 * WRONGTYPE or a sticky error.
 */
int pk_zset_rem(pk_txn *t, uint32_t part, const void *key, size_t klen,
                size_t n, const pk_slice *members, uint64_t now_ms,
                uint64_t *removed);

/* ZSCORE: returns 0, PK_ENOTFOUND (key or member), WRONGTYPE or error. */
int pk_zset_score(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const void *member, size_t mlen, uint64_t now_ms,
                  double *score);

/* ZCARD: *card = 0 for a missing key.  Returns 0, WRONGTYPE or error. */
int pk_zset_card(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now_ms, uint64_t *card);

#endif

/*
 * pk_set: Redis set commands -- SADD, SREM, SCARD, SISMEMBER/SMISMEMBER,
 * SMEMBERS, SMOVE, SPOP, SRANDMEMBER, SINTER/SUNION/SDIFF (with their
 * STORE forms and SINTERCARD) and SSCAN.
 *
 * A set is a META record holding the member count plus one record per
 * member, prefix | 0x06 | member -> (empty), so members come back in byte
 * order and a membership test is one lookup.  A set never exists empty:
 * removing its last member deletes the key.
 *
 * Parameters, errors and lifetimes follow pk_key.h and pk_store.h; every
 * function returns PK_STORE_WRONGTYPE for a key of another type (the
 * multi-key functions check every key before reading members or writing).
 * Members may have any length (pk_keyenc.h); writes return PK_ERANGE for
 * a member whose digest another member holds (or one over
 * PK_STORE_VALUE_MAX); nothing is written then.  The multi-key functions take
 * keys of one partition: the server has checked that they hash to one slot.
 *
 * Callbacks get a member that is valid only during the call.  They return
 * 0 to go on; any other value stops the walk and is returned.
 *
 * Implemented by pk_set.c (records, SSCAN), pk_set_algebra.c (INTER,
 * UNION, DIFF and their STORE forms) and pk_set_rand.c (SPOP,
 * SRANDMEMBER), which share pk_set_int.h.
 */
#ifndef PK_STORE_PK_SET_H
#define PK_STORE_PK_SET_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

typedef int (*pk_set_cb)(void *ctx, pk_slice member);

/* Set algebra for pk_set_combine / pk_set_store. */
typedef enum pk_set_op {
    PK_SETOP_UNION = 1,
    PK_SETOP_INTER = 2,
    PK_SETOP_DIFF = 3, /* the first set minus all others */
} pk_set_op;

/*
 * SADD: adds n >= 1 members (a member given twice counts once) and sets
 * *added to the number that were new.  Returns 0, PK_EINVAL (n == 0),
 * WRONGTYPE, PK_ERANGE or a sticky error.
 */
int pk_set_add(pk_txn *t, uint32_t part, const void *key, size_t klen, size_t n,
               const pk_slice *members, uint64_t now_ms, uint64_t *added);

/*
 * SREM: removes n members, sets *removed to how many existed.  Returns 0,
 * WRONGTYPE or a sticky error.
 */
int pk_set_rem(pk_txn *t, uint32_t part, const void *key, size_t klen, size_t n,
               const pk_slice *members, uint64_t now_ms, uint64_t *removed);

/* SCARD: *card = 0 for a missing key.  Returns 0, WRONGTYPE or an error. */
int pk_set_card(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *card);

/*
 * SMISMEMBER: is[i] = 1 when members[i] is in the set, else 0 (all 0 for a
 * missing key).  Returns 0, WRONGTYPE or an error.
 */
int pk_set_ismember(pk_txn *t, uint32_t part, const void *key, size_t klen,
                    size_t n, const pk_slice *members, uint64_t now_ms,
                    uint8_t *is);

/*
 * SMEMBERS: calls cb for every member in byte order (no call for a
 * missing key).  Returns 0, WRONGTYPE, the callback's value or an error.
 */
int pk_set_each(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_set_cb cb, void *ctx);

/*
 * SMOVE: moves member from src to dst (same partition); *moved = 1 when
 * src held it (also when src and dst are the same key), else 0.  dst must
 * be missing or a set even when nothing moves, as Redis checks.  Returns
 * 0, WRONGTYPE, PK_ERANGE or a sticky error.
 */
int pk_set_move(pk_txn *t, uint32_t part, const void *src, size_t slen,
                const void *dst, size_t dlen, const void *member, size_t mlen,
                uint64_t now_ms, int *moved);

/*
 * SPOP: removes min(count, card) members chosen uniformly at random
 * (every subset of that size equally likely) and calls cb with each,
 * before they are deleted.  seed drives the choice.  A cb error stops
 * the pop before anything is deleted.  *n gets the number popped.
 * Returns 0, WRONGTYPE, the callback's value, PK_ENOMEM or a sticky
 * error.
 *
 * Cost: LMDB keeps no ranks; the store's rank index of the set
 * (pk_store_rank.c) brings one pick to about sqrt(card) cursor steps
 * after a first pass that builds it, and count members cost count picks
 * while count <= sqrt(card)/2, else one pass (selection sampling).
 * Seeking to a random byte string instead would favour members after
 * large gaps.
 */
int pk_set_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t count, uint64_t seed, uint64_t now_ms, pk_set_cb cb,
               void *ctx, uint64_t *n);

/*
 * SRANDMEMBER: calls cb for count members chosen uniformly at random:
 * distinct ones (min(count, card) of them, in byte order) unless repeat,
 * else exactly count independent draws in random order (none for a
 * missing key); a caller writes its reply header from pk_set_card.  Memory
 * is bounded by a batch of 65536 draws whatever count is (pk_store_rand.c).
 * Returns 0, WRONGTYPE, the callback's value, PK_ENOMEM or an error.
 */
int pk_set_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                  pk_set_cb cb, void *ctx);

/*
 * SINTER / SUNION / SDIFF and SINTERCARD: calls cb (which may be NULL)
 * for each member of the result, in byte order, and sets *card to their
 * number; limit > 0 stops after that many (SINTERCARD LIMIT).  Missing
 * keys are empty sets.  Returns 0, PK_EINVAL (nkeys == 0 or a bad op),
 * WRONGTYPE, the callback's value, PK_ENOMEM or an error.
 */
int pk_set_combine(pk_txn *t, uint32_t part, pk_set_op op, size_t nkeys,
                   const pk_slice *keys, uint64_t limit, uint64_t now_ms,
                   pk_set_cb cb, void *ctx, uint64_t *card);

/*
 * SINTERSTORE / SUNIONSTORE / SDIFFSTORE: replaces dst (of any type, its
 * expiry dropped) by the result, deleting it when the result is empty,
 * and sets *card.  dst may be one of the keys.  Returns 0, PK_EINVAL,
 * WRONGTYPE (a source key), PK_ERANGE (dst cannot be stored, pk_key.h),
 * PK_ENOMEM or a sticky error.
 */
int pk_set_store(pk_txn *t, uint32_t part, pk_set_op op, const void *dst,
                 size_t dlen, size_t nkeys, const pk_slice *keys,
                 uint64_t now_ms, uint64_t *card);

typedef struct pk_sscan_opts {
    const void *match; /* glob (pk_glob.h), NULL for all; borrowed */
    size_t match_len;
    size_t count; /* members to examine per call, hint; 0 means 10 */
} pk_sscan_opts;

/*
 * SSCAN: visits members in byte order from cursor (0 to begin) and sets
 * *next to the cursor to pass next time, 0 when done.
 *
 * The cursor is stateless and shared with HSCAN and ZSCAN
 * (pk_store_subscan.c): it is the big-endian value of the first 8 bytes,
 * zero padded, of the next member to visit.  A call examines at least
 * opts->count members (0 or NULL opts: 10), then finishes the group
 * sharing the last one's 8 padded leading bytes, so a cursor falls
 * between groups: a member present for the whole scan is returned
 * exactly once whatever is written in between.  Members sharing a long
 * common prefix form one group and come back in one call.  Returns 0,
 * WRONGTYPE, the callback's value or an error.
 */
int pk_set_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t cursor, const pk_sscan_opts *opts, uint64_t now_ms,
                pk_set_cb cb, void *ctx, uint64_t *next);

#endif

/*
 * pk_list: Redis list commands -- LPUSH RPUSH (and the X forms), LPOP RPOP,
 * LLEN LINDEX LSET LRANGE LTRIM LREM LINSERT LPOS and LMOVE (RPOPLPUSH).
 * The blocking forms are the same calls made again when a key is ready
 * (server/pk_block.h).
 *
 * A list is a META record (element count, position of the first element)
 * plus one record per element whose sub-key is its u64 position,
 * big-endian, so the elements are one contiguous key range in list order:
 *
 *   prefix | 0x05 | be64(head)             -> first element
 *   prefix | 0x05 | be64(head + 1)         -> second element
 *   ...    | 0x05 | be64(head + count - 1) -> last element
 *
 * Positions have no gaps, so element i is one lookup at head + i; a new
 * list starts in the middle of the u64 space, LPUSH takes head - 1 and
 * RPUSH head + count.  LINSERT and LREM renumber the elements on one side
 * of the change.  A list never exists empty: removing its last element
 * deletes the key.
 *
 * Indices follow Redis: negative ones count from the tail (-1 is the last
 * element).  Parameters, errors and lifetimes follow pk_key.h and
 * pk_store.h; every function returns PK_STORE_WRONGTYPE for a key of
 * another type, checked before anything is written.  Elements passed to
 * a callback point into the map and are valid only during the call.
 */
#ifndef PK_STORE_PK_LIST_H
#define PK_STORE_PK_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

#define PK_LIST_RIGHT 1u /* the tail end (RPUSH, RPOP); else the head */
#define PK_LIST_XX 2u    /* push only onto an existing list (LPUSHX) */

/* Element callback: return 0 to go on, anything else stops the walk and
 * is returned by the function that called it. */
typedef int (*pk_list_cb)(void *ctx, pk_slice elem);

/*
 * LPUSH / RPUSH (flags PK_LIST_RIGHT, PK_LIST_XX): pushes n >= 1 values one
 * after the other, and sets *len to the length after (0 when XX found no
 * list).  Returns 0, PK_EINVAL (n == 0), WRONGTYPE, PK_ERANGE (key too
 * long), PK_EFULL (no position left at that end) or a sticky error.
 */
int pk_list_push(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 unsigned flags, size_t n, const pk_slice *vals,
                 uint64_t now_ms, uint64_t *len);

/*
 * LPOP / RPOP: removes up to count elements from one end (PK_LIST_RIGHT
 * in flags: the tail), calling cb with each before it is removed, and sets
 * *n to how many went (0 for a missing key).  A cb error stops the pop
 * and fails the transaction (elements may be half removed).  Returns 0,
 * WRONGTYPE, cb's value or an error.
 */
int pk_list_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
                unsigned flags, uint64_t count, uint64_t now_ms, pk_list_cb cb,
                void *ctx, uint64_t *n);

/* LLEN: *len = 0 for a missing key.  Returns 0, WRONGTYPE or an error. */
int pk_list_len(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *len);

/*
 * LINDEX: *val gets element index.  Returns 0, PK_ENOTFOUND (no key or
 * index out of range), WRONGTYPE or an error.
 */
int pk_list_index(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  int64_t index, uint64_t now_ms, pk_slice *val);

/*
 * LSET: replaces element index.  Returns 0, PK_ENOTFOUND (no key),
 * PK_EINVAL (index out of range), WRONGTYPE or a sticky error.
 */
int pk_list_set(pk_txn *t, uint32_t part, const void *key, size_t klen,
                int64_t index, const void *val, size_t vlen, uint64_t now_ms);

/*
 * LRANGE: calls cb for the elements from..from + n - 1 (0-based from the
 * head, already clamped by the caller to the length pk_list_len gave).
 * Returns 0, WRONGTYPE, cb's value or an error.
 */
int pk_list_range(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t from, uint64_t n, uint64_t now_ms, pk_list_cb cb,
                  void *ctx);

/*
 * LTRIM: keeps elements start..stop (Redis indices); deletes the key when
 * nothing is left.  Returns 0, WRONGTYPE or a sticky error.
 */
int pk_list_trim(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 int64_t start, int64_t stop, uint64_t now_ms);

/*
 * LREM: removes up to |count| elements equal to val (all when count is 0)
 * from the head (count >= 0) or the tail, sets *removed.  Returns 0,
 * WRONGTYPE or a sticky error.
 */
int pk_list_rem(pk_txn *t, uint32_t part, const void *key, size_t klen,
                int64_t count, const void *val, size_t vlen, uint64_t now_ms,
                uint64_t *removed);

/*
 * LINSERT: inserts val before (after == 0) or after the first element
 * equal to pivot; *len gets the new length, 0 for a missing key, -1 when
 * the pivot is not there.  Returns 0, WRONGTYPE, PK_EFULL or a sticky
 * error.
 */
int pk_list_insert(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   int after, const void *pivot, size_t plen, const void *val,
                   size_t vlen, uint64_t now_ms, int64_t *len);

/*
 * LPOS: calls found(ctx, index) for the matches of val, in the order of
 * the walk: from the head for rank > 0, from the tail for rank < 0,
 * skipping the first |rank| - 1 matches, stopping after count matches (0:
 * all) or after maxlen elements compared (0: no bound).  rank != 0.
 * Returns 0, PK_EINVAL (rank 0), WRONGTYPE, found's value or an error.
 */
int pk_list_pos(pk_txn *t, uint32_t part, const void *key, size_t klen,
                const void *val, size_t vlen, int64_t rank, uint64_t count,
                uint64_t maxlen, uint64_t now_ms,
                int (*found)(void *ctx, uint64_t index), void *ctx);

/*
 * LMOVE: pops one element from src's end (PK_LIST_RIGHT in from: its
 * tail) and pushes it onto dst's end (PK_LIST_RIGHT in to: its tail); src
 * and dst may be the same key.  Keys in one partition change in one
 * operation; in two (a node without cluster mode), in one each.  *val gets the
 * element, valid until the transaction's next write.  Returns 0, PK_ENOTFOUND
 * (src missing: nothing changes), WRONGTYPE (either key, checked first),
 * PK_ERANGE (dst key too long), PK_EFULL or a sticky error.
 */
int pk_list_move(pk_txn *t, uint32_t spart, const void *src, size_t slen,
                 uint32_t dpart, const void *dst, size_t dlen, unsigned from,
                 unsigned to, uint64_t now_ms, pk_slice *val);

#endif

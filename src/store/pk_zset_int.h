/*
 * pk_zset_int: what the sorted-set source files (pk_zset.c,
 * pk_zset_range.c, pk_zset_ops.c) share and nothing else may use.
 */
#ifndef PK_STORE_PK_ZSET_INT_H
#define PK_STORE_PK_ZSET_INT_H

#include "store/pk_store_int.h"
#include "store/pk_zset_range.h"

/*
 * Walks range r of the loaded sorted set m (missing: no call) in t,
 * whatever kind of transaction or operation is open.  Returns as
 * pk_zset_range.
 */
int pk__zset_walk(pk_txn *t, pk__meta *m, const pk_zrange *r, pk_zset_cb cb,
                  void *ctx);

/*
 * Clamps the rank range start..stop (Redis rules, negative from the end)
 * to a set of card members: returns 1 and sets *from and *n (>= 1), or 0
 * when the range is empty.
 */
int pk__zset_clamp(uint64_t card, int64_t start, int64_t stop, uint64_t *from,
                   uint64_t *n);

/*
 * Writes the member with score (both records; the member must not be in
 * the set, or its old index record must be gone).  Returns 0, PK_ERANGE or
 * a sticky error.
 */
int pk__zset_put(pk_txn *t, const pk__meta *m, pk_slice mem, double score);

/* Deletes a member whose score is score (both records). */
int pk__zset_del(pk_txn *t, const pk__meta *m, pk_slice mem, double score);

#endif

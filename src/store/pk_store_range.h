/*
 * pk_store_range: ordered reads of the keys of one partition between two
 * user-key bounds (PK.RANGE), forward or in reverse, a page at a time.
 *
 * Keys come in the byte order of the user key, long keys included
 * (pk_store_range.c says how), each live key of the range exactly once
 * over a sequence of pages: the caller passes the last key of a page as
 * the exclusive bound of the next one.  The store function reads one
 * partition; a range scheme reading across partitions calls it for each
 * partition of the range in turn.
 *
 * Bounds use pk_zlex (pk_zset_range.h), ZRANGEBYLEX's grammar and parser:
 * "[k" inclusive, "(k" exclusive, "-" below every key, "+" above every
 * key.  Thread-safety: as the transaction's.
 */
#ifndef PK_STORE_PK_STORE_RANGE_H
#define PK_STORE_PK_STORE_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_key.h"
#include "store/pk_slice.h"
#include "store/pk_zset_range.h"

typedef struct pk_txn pk_txn;

/*
 * One key of a range: key and val are valid only during the call; val is
 * a string key's value and {NULL, 0} for the other types.  Return 0 to go
 * on; any other value ends the read, which returns it.
 */
typedef int (*pk_range_cb)(void *ctx, pk_slice key, pk_type type, pk_slice val);

/*
 * Calls cb for at most limit (>= 1) live keys k of partition part with
 * lo <= k <= hi (each bound inclusive, exclusive or open as its kind
 * says), in ascending byte order, or descending with rev (the walk then
 * starts at hi).  Expired keys are skipped.  *more = 1 when another live
 * key of the range follows the last one reported (the read looks ahead
 * for it), else 0: pass "(last key" as the next page's lo (hi with rev).
 *
 * Memory is bounded by limit, not by the range: O(1) for most keys, and
 * at most limit + 1 key references where keys share their first ~108
 * bytes with a long key (pk_store_range.c).
 *
 * Returns 0, PK_EINVAL (limit 0), PK_ECORRUPT (a record that does not
 * parse), cb's non-zero value, PK_ENOMEM or an error (sticky on LMDB
 * failure); *more is set only on 0.
 */
int pk_store_range(pk_txn *t, uint32_t part, const pk_zlex *lo,
                   const pk_zlex *hi, int rev, size_t limit, uint64_t now_ms,
                   pk_range_cb cb, void *ctx, int *more);

#endif

/*
 * pk_store_log: the per-partition change log.
 *
 * Every write command appends, in the same transaction as its data, one
 * record to its partition's log under the next sequence number (1, 2, ...).
 * The record is physical -- the exact data-DB changes the command made, in
 * order -- so applying it elsewhere reproduces the data byte for byte, and
 * with it the counters and the expiry index (pk_store_int.h):
 *
 *   record  entry+
 *   entry   u8 op | u16 klen | key (data-DB key without the partition)
 *           | op PUT (1) only: u32 vlen | value
 *   op      1 PUT        store value under key
 *           2 DEL        delete key
 *           3 DELPREFIX  delete every record whose key starts with key
 *                        (a whole user key; empty: the whole partition)
 *
 * The log feeds replication, partition moves and, later, indexes.  It is
 * trimmed once every consumer has passed a position; a consumer that asks
 * for a trimmed position gets PK_ERANGE and restarts from a snapshot
 * (pk_store_snap.h), which carries the sequence number it was taken at.
 */
#ifndef PK_STORE_PK_STORE_LOG_H
#define PK_STORE_PK_STORE_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_txn pk_txn;

/*
 * Log callback: rec/len is one record (format above), pointing into the
 * map, valid until the transaction ends.  Return 0 to go on; any other
 * value stops the read and is returned by pk_store_log_read.
 */
typedef int (*pk_log_cb)(void *ctx, uint64_t seq, const void *rec, size_t len);

/*
 * Sequence number of part's last record, 0 if it never logged.  Returns 0
 * or an error.
 */
int pk_store_log_last(pk_txn *t, uint32_t part, uint64_t *seq);

/*
 * Calls cb for every record of part with seq >= from_seq, in order.
 * Returns 0 (also when nothing is that new), PK_ERANGE (records at or after
 * from_seq were trimmed: restart from a snapshot), the callback's value or
 * an error.
 */
int pk_store_log_read(pk_txn *t, uint32_t part, uint64_t from_seq, pk_log_cb cb,
                      void *ctx);

/*
 * Deletes part's records with seq <= upto_seq (at most up to the last).
 * Returns 0 or a sticky error.
 */
int pk_store_log_trim(pk_txn *t, uint32_t part, uint64_t upto_seq);

/*
 * Applies record seq of partition part, as read from another node's log,
 * and appends it verbatim to this node's log.  seq must be the next one
 * (pk_store_log_last + 1).  The record is validated whole before anything
 * is written.  Returns 0, PK_EEXIST (seq already applied: skip it),
 * PK_ERANGE (a gap: records are missing), PK_ECORRUPT (malformed record;
 * nothing written, the transaction stays usable) or a sticky error.
 */
int pk_store_log_apply(pk_txn *t, uint32_t part, uint64_t seq, const void *rec,
                       size_t len);

#endif

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
 * The log feeds replication, partition moves and, later, indexes.  A
 * consumer that asks for a trimmed position gets PK_ERANGE and restarts
 * from a snapshot (pk_store_snap.h), which carries the sequence number it
 * was taken at.
 *
 * Storage and retention.  All partitions' records share one journal in
 * commit order (pk_store_journal.c), so appending costs about the same
 * however many partitions a commit touches.  Records go in two ways:
 *
 *   pk_store_log_trim  raises a partition's trim point at once; the
 *                      records stop being readable and their space is
 *                      reclaimed when the journal's head passes them;
 *   retention          every few thousand records (at the store's
 *                      checkpoints), the journal's oldest records go
 *                      while the log DB takes more than the budget
 *                      (pk_store_log_retain; by default
 *                      PK_STORE_LOG_KEEP_DEFAULT(map size)), raising the
 *                      trim point of each record's partition -- unless
 *                      that record's partition holds a position at or
 *                      before it (pk_store_log_hold): then the journal
 *                      keeps it and everything after it.  The records
 *                      of one partition that go together save its
 *                      stats once.  (A server outside a cluster, which
 *                      no one reads the journal of, sets 1 MiB.)
 *
 * So a partition keeps its history for as long as the node's recent
 * writes fit in the budget, a consumer that keeps up needs no hold, and a
 * consumer that holds a position makes the log grow until it moves on.
 * Holds live in memory: after pk_store_open none is held, and a consumer
 * registers its position again.
 */
#ifndef PK_STORE_PK_STORE_LOG_H
#define PK_STORE_PK_STORE_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_store pk_store;
typedef struct pk_txn pk_txn;

/*
 * Default journal budget in bytes: 1/16 of the map, at most 64 MiB --
 * seconds of writes at full speed, minutes at a moderate rate (Redis keeps
 * 1 MiB of replication backlog).  A larger journal is a larger working
 * set: at 512 MiB a 3-node SET benchmark ran 20 % slower, its p99 three
 * times as long.  A consumer further behind restarts from a snapshot.
 */
#define PK_STORE_LOG_KEEP_MAX (64ull << 20)
#define PK_STORE_LOG_KEEP_DEFAULT(map_size)                                    \
    ((map_size) / 16 < PK_STORE_LOG_KEEP_MAX ? (map_size) / 16                 \
                                             : PK_STORE_LOG_KEEP_MAX)
#define PK_STORE_LOG_KEEP_ALL UINT64_MAX /* no automatic trimming */

/*
 * Log callback: rec/len is one record (format above), pointing into the
 * map, valid until the transaction ends.  Return 0 to go on; any other
 * value stops the read and is returned by pk_store_log_read.
 */
typedef int (*pk_log_cb)(void *ctx, uint64_t seq, const void *rec, size_t len);

/*
 * Sets the journal budget in bytes of map pages (see above), or
 * PK_STORE_LOG_KEEP_ALL for no automatic trimming.  Takes effect at the
 * next checkpoint.  Call it from the thread that owns the store.
 */
void pk_store_log_retain(pk_store *s, uint64_t bytes);

/*
 * Registers that a consumer still needs part's records from from_seq on
 * (the lowest position when several consumers read the partition), so
 * retention keeps them.  from_seq 0 releases the hold.  Explicit trims
 * ignore holds.  Not transactional: takes effect at once, and stays until
 * released or pk_store_close.  Call it from the thread that owns the
 * store.  Returns 0 or PK_ENOMEM.
 */
int pk_store_log_hold(pk_store *s, uint32_t part, uint64_t from_seq);

/*
 * Sequence number of part's last record, 0 if it never logged.  Returns 0
 * or an error.
 */
int pk_store_log_last(pk_txn *t, uint32_t part, uint64_t *seq);

/*
 * The sequence number under which what t reads of part may be kept (a
 * cache entry valid while part's log stays there): part's last, into
 * *seq.  Returns 0; PK_EBUSY when that record was written by write
 * transaction t, as a later command of t that rewrites the same key may
 * replace it under the same number (pk__log_coalesce); or an error.
 */
int pk_store_log_keepable(pk_txn *t, uint32_t part, uint64_t *seq);

/*
 * Calls cb for every record of part with seq >= from_seq, in order.
 * Returns 0 (also when nothing is that new), PK_ERANGE (records at or after
 * from_seq were trimmed: restart from a snapshot), the callback's value or
 * an error.
 */
int pk_store_log_read(pk_txn *t, uint32_t part, uint64_t from_seq, pk_log_cb cb,
                      void *ctx);

/*
 * Trims part's records with seq <= upto_seq (at most up to the last):
 * reads of them return PK_ERANGE from now on.  Returns 0 or a sticky
 * error.
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

/*
 * Deferred records (pk_store_settle.c): a follower's log may run ahead of
 * its data.  pk_store_log_defer takes record seq of part as
 * pk_store_log_apply does, with the same checks and return codes, but
 * only appends it to the log; the data follows at the next settle.  Until
 * then any use of part's data settles first in a write transaction, and
 * gets PK_EBUSY in a read-only one (which sees a snapshot).  The log
 * itself -- pk_store_log_last, pk_store_log_read -- has the record at once.
 *
 * pk_store_log_settle works in batches: a batch holds every record that
 * was unsettled when it was made, and each call applies up to
 * max_changes more of its changes (0: every deferred record, through
 * this batch and one of what came since), so that a large batch can be
 * spread over many short transactions.  *n (may be NULL) gets the
 * records settled (0 until a batch completes).  A settle's commit is a
 * checkpoint.  Returns 0 or a sticky error.  pk_store_log_unsettled is
 * the number of deferred records not settled, as t sees them;
 * pk_store_log_settling whether a batch is under way.  pk_store_open
 * settles whatever a crash left.
 */
int pk_store_log_defer(pk_txn *t, uint32_t part, uint64_t seq, const void *rec,
                       size_t len);
int pk_store_log_settle(pk_txn *t, size_t max_changes, size_t *n);
uint64_t pk_store_log_unsettled(const pk_txn *t);
int pk_store_log_settling(const pk_store *s);

/*
 * Groups (MULTI/EXEC): between pk_txn_group_begin and pk_txn_group_end,
 * the writes to partition part that would each append a record append
 * nothing; their entries, in order, form one record that
 * pk_txn_group_end appends under the next sequence number.  A follower
 * applies a record whole, so it shows all of the group or none.  Each
 * write still sees, checks and counts what the ones before it did;
 * pk_store_log_last stays where it was until the end.  Writes to other
 * partitions, and unlogged ones (imports, trims, replication), are
 * framed as usual.  One group at a time, begun outside an operation; a
 * commit ends an open group first.  Both return 0, PK_EINVAL (a read
 * transaction, a group already open / none open) or a sticky error.
 */
int pk_txn_group_begin(pk_txn *t, uint32_t part);
int pk_txn_group_end(pk_txn *t);

#endif

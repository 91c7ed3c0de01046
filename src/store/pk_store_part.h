/*
 * pk_store_part: operations on whole partitions and on all of them --
 * counters, iteration, drop, DBSIZE, FLUSHALL and active expiry.
 *
 * A partition's keys and bytes change in the same transaction as its data
 * (in the stats DB and the journal, pk_store_stat.c), so they are exact
 * at every commit; reads and writes are in-memory counts since
 * pk_store_open (partitions below PK_PARTITIONS_MAX only).  Inside a
 * write transaction, pk_store_part_next and pk_store_dbsize write the
 * stats DB up to date first (a checkpoint, once per transaction unless
 * stats changed in between).  Errors and lifetimes as in pk_store.h.
 */
#ifndef PK_STORE_PK_STORE_PART_H
#define PK_STORE_PK_STORE_PART_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_txn pk_txn;

typedef struct pk_part_stats {
    uint64_t keys;      /* user keys, expired-but-not-deleted included */
    uint64_t bytes;     /* sum of key + value sizes of its data records */
    uint64_t reads;     /* read commands since open (memory only) */
    uint64_t writes;    /* write commands since open (memory only) */
    uint64_t log_first; /* first seq still in the log (log_last+1: none) */
    uint64_t log_last;  /* last seq written, 0 before the first write */
} pk_part_stats;

/*
 * Counters of partition part as seen by t.  A partition without data
 * reports zeros (and log_first 1).  Returns 0 or an error.
 */
int pk_store_part_stats(pk_txn *t, uint32_t part, pk_part_stats *out);

/*
 * The first partition >= from that holds keys or change-log state, with
 * its counters.  Iterate with
 *     for (uint64_t p = 0; pk_store_part_next(t, p, &part, &st) == 0;
 *          p = (uint64_t)part + 1)
 * Returns 0, PK_ENOTFOUND (no more) or an error.
 */
int pk_store_part_next(pk_txn *t, uint64_t from, uint32_t *part,
                       pk_part_stats *out);

/*
 * Deletes partition part from every DB -- data, expiry index, change log,
 * stats -- and zeroes its in-memory counters.  Not logged: dropping is
 * what a node does when it stops holding a partition.  Deletes at most
 * max_records records per call (0: no bound) so that a large partition can
 * be dropped over several transactions; *done = 1 once nothing of the
 * partition is left.  Until then the partition's counters stay exact.
 * Returns 0 or a sticky error.
 */
int pk_store_part_drop(pk_txn *t, uint32_t part, size_t max_records, int *done);

/*
 * A range split's store-local half: moves every key of partition from
 * that is >= at (byte order of user keys) to partition to, with all its
 * records, counters and expiry entries, so that to then holds exactly
 * those keys.  Not logged: every replica of a split range relabels its
 * own copy (the copies are equal, so the results are).  Works in batches
 * of a few MiB; with max_bytes > 0 it stops after about that many bytes
 * and sets *done = 0 (call again), else runs to the end.  at must not
 * take the long key form (pk_keyenc_long), where stored order and byte
 * order differ.  Returns 0, PK_EINVAL (from == to, or a long at), or a
 * sticky error.
 */
int pk_store_part_relabel(pk_txn *t, uint32_t from, uint32_t to, const void *at,
                          size_t at_len, size_t max_bytes, int *done);

/*
 * Where to split partition part by size: the first short-form key (one of
 * at most PK_KEYENC_SHORT - 6 bytes, so that it can bound a range) at
 * which half of the partition's bytes lie before it, written to buf (cap
 * >= PK_KEYENC_SHORT) with its length in *len.  It walks the records of
 * the first half only, in key order, counting their sizes against the
 * partition's byte count (no value is read).  Returns 0, PK_ENOTFOUND
 * (no such key after the first, e.g. a single key) or an error.
 */
int pk_store_part_middle(pk_txn *t, uint32_t part, uint8_t *buf, size_t cap,
                         size_t *len);

/* Which partitions a call may touch: non-zero for those it may. */
typedef int (*pk_part_filter)(void *ctx, uint32_t part);

/* DBSIZE: keys in all partitions (expired ones not yet deleted too). */
int pk_store_dbsize(pk_txn *t, uint64_t *out);

/* The same, counting only the partitions may(ctx, part) accepts (a node
 * of a cluster counts what it leads); may NULL accepts all. */
int pk_store_dbsize_if(pk_txn *t, pk_part_filter may, void *ctx, uint64_t *out);

/*
 * FLUSHALL: deletes every key of every partition.  Each partition's
 * deletion is one change record, so followers clear the same data; logs
 * and their sequence numbers stay.  Returns 0 or a sticky error.
 */
int pk_store_flushall(pk_txn *t);

/* The same for the partitions may accepts (NULL: all): a node of a
 * cluster flushes what it leads, and its followers follow; deleting a
 * followed copy would fork that partition's log. */
int pk_store_flushall_if(pk_txn *t, pk_part_filter may, void *ctx);

/*
 * Active expiry: deletes up to max_keys keys whose expiry is <= now_ms, in
 * expiry order, each as one change record of its partition.  *expired (may
 * be NULL) gets the number deleted; fewer than max_keys means nothing else
 * is due.  Returns 0 or a sticky error.
 */
int pk_store_expire_cycle(pk_txn *t, uint64_t now_ms, size_t max_keys,
                          size_t *expired);

/*
 * The same, for the keys whose partition may(ctx, part) accepts (a node
 * expires only what it leads: elsewhere a delete would fork the log).  It
 * skips at most 4 * max_keys refused entries per call; with pos (may be
 * NULL; zeroed before the first call) a call stopped by either bound
 * leaves its place there and the next goes on from it, so refused entries
 * at the head of the index cannot keep the others waiting.  A call that
 * found nothing more due resets pos.
 */
#define PK_EXPIRE_POS_MAX 520 /* 8 + the longest data key + 1 */
typedef struct pk_expire_pos {
    uint8_t key[PK_EXPIRE_POS_MAX];
    size_t len;
} pk_expire_pos;
int pk_store_expire_cycle_if(pk_txn *t, uint64_t now_ms, size_t max_keys,
                             pk_part_filter may, void *ctx, pk_expire_pos *pos,
                             size_t *expired);

#endif

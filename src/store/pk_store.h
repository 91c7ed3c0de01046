/*
 * pk_store: one node's storage -- an LMDB environment, its transactions,
 * per-partition counters and active expiry.
 *
 * One environment per node holds five named databases:
 *
 *   data    part u32 | escaped key | 00 01 | tag | sub-key -> record
 *           (layout in pk_keyenc.h; a partition is one key range)
 *   log     position u64                -> part, seq, previous position of
 *                                          part, change record: one journal
 *                                          in commit order (pk_store_log.h)
 *   expiry  when u64 | data prefix      -> empty (ordered by time)
 *   stats   part u32 >> 8               -> keys, bytes, log positions of
 *                                          256 partitions, as of a
 *                                          checkpoint (pk_store_stat.c)
 *   info    "format"                    -> u32 format version
 *           "stats"                     -> u64 journal position of the
 *                                          last checkpoint
 *
 * Transactions.  A single thread (the event loop) writes; it opens one
 * write transaction per loop iteration, applies every command of that
 * iteration, commits once and acknowledges only after the commit returned
 * 0 (group commit).  Any number of read transactions may be open at once:
 * the environment is opened with MDB_NOTLS, so a read transaction belongs
 * to its pk_txn rather than to its thread.  Without it LMDB allows one read
 * transaction per thread, and the loop could not keep a long-lived export
 * snapshot open while serving reads from per-iteration transactions, nor
 * hand that snapshot to a worker thread.
 *
 * Errors.  Functions return 0, a negative PK_E* code (core/pk_err.h) or, for
 * command-level errors that Redis reports to the client, a positive
 * PK_STORE_* status below.  Command-level errors and argument errors
 * (PK_ENOTFOUND, PK_EINVAL, PK_ERANGE, PK_EEXIST, and a rejected change
 * record) are detected before anything is written and leave the
 * transaction usable, so one client's WRONGTYPE does not fail the other
 * writes of its group.  An error after a write may have happened (PK_ENOMEM,
 * PK_EFULL, PK_EIO, PK_ECORRUPT, a bad import stream) is sticky: the
 * transaction is failed, pk_txn_error() returns the code, every later call
 * on it returns it too, and pk_txn_commit() aborts and returns it -- every
 * write of the group must then get an error reply.
 *
 * Time.  The store never reads a clock: every function that looks at
 * expiry takes now_ms (Unix milliseconds) from the caller.  A read treats a
 * key whose expiry is <= now_ms as missing; a write deletes it first.
 *
 * Lifetimes.  Bytes returned by reads point into LMDB's memory map and stay
 * valid until the transaction ends or, in a write transaction, until the
 * next write call on it.  Bytes returned by writes (SET ... GET, GETDEL)
 * live in the transaction's scratch memory until the next call on it.
 *
 * Thread-safety: every function must be called from the thread that owns
 * the store (the event loop), with one exception: a read transaction begun
 * there, and an exporter on it (pk_store_snap.h), may be handed to another
 * thread, which then alone uses them until it hands them back to be
 * freed.  Only one write transaction may be open at a time.
 */
#ifndef PK_STORE_PK_STORE_H
#define PK_STORE_PK_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_store pk_store;
typedef struct pk_txn pk_txn;

#define PK_STORE_MAP_SIZE_DEFAULT (8ull << 30) /* sparse file, 8 GiB */
#define PK_STORE_VALUE_MAX (512u << 20)        /* Redis proto-max-bulk-len */
#define PK_STORE_KEY_MAX (512u << 20)          /* longest user key, as Redis */

/* Command-level results.  pk_store_strstatus() gives the Redis reply. */
enum pk_store_status {
    PK_STORE_WRONGTYPE = 1,   /* key holds another type */
    PK_STORE_NOTINT = 2,      /* string value or argument not an int64 */
    PK_STORE_HASH_NOTINT = 3, /* HINCRBY on a field that is not an int64 */
    PK_STORE_OVERFLOW = 4,    /* INCRBY / HINCRBY would overflow */
    PK_STORE_NAN = 5,         /* ZADD INCR produced NaN */
    /* Numbered apart so that other families' statuses can take 6.. */
    PK_STORE_HASH_NOTFLOAT = 16, /* HINCRBYFLOAT on a non-float field */
    PK_STORE_INCR_NANINF = 17,   /* HINCRBYFLOAT result NaN or infinite */
    /* Strings (pk_str.h, pk_bits.h); numbered apart from the types'. */
    PK_STORE_TOOBIG = 18,   /* string would exceed PK_STORE_VALUE_MAX */
    PK_STORE_NOTFLOAT = 19, /* INCRBYFLOAT: value or increment not a float */
    PK_STORE_NANINF = 20,   /* INCRBYFLOAT result is NaN or infinite */
};

typedef enum pk_fsync {
    PK_FSYNC_ALWAYS = 0,   /* every commit fsyncs data and meta page */
    PK_FSYNC_EVERYSEC = 1, /* MDB_NOSYNC; caller runs pk_store_sync 1/s */
    PK_FSYNC_NO = 2,       /* MDB_NOSYNC | MDB_NOMETASYNC; OS decides */
} pk_fsync;

typedef struct pk_store_opts {
    uint64_t map_size; /* bytes; 0 means PK_STORE_MAP_SIZE_DEFAULT */
    pk_fsync fsync;
} pk_store_opts;

/*
 * The Redis error reply for a pk_store_status, without the leading '-'
 * ("WRONGTYPE Operation against a key holding the wrong kind of value"),
 * or NULL for anything else.  Static storage.
 */
const char *pk_store_strstatus(int status);

/*
 * Opens (creating if needed) the environment in directory dir, which is
 * created with mode 0700 when missing.  opts may be NULL for defaults.
 * Returns 0 and *out (owned; release with pk_store_close), PK_EINVAL (bad
 * option), PK_EBUSY (another open store, in this process or another,
 * holds dir: its lock file partkv.lock is taken while a store is open),
 * PK_EVERSION (unknown format), PK_ECORRUPT, PK_ENOMEM or PK_EIO.
 */
int pk_store_open(const char *dir, const pk_store_opts *opts, pk_store **out);

/* Closes the environment.  All transactions must be finished.  NULL ok. */
void pk_store_close(pk_store *s);

/*
 * Flushes committed data to disk (PK_FSYNC_EVERYSEC calls this once a
 * second).  Returns 0 or PK_EIO.
 */
int pk_store_sync(pk_store *s);

/*
 * Starts writing the map's dirty pages out without waiting for them
 * (sync_file_range), so that a pk_store_sync soon after finds them under
 * way.  Call it from the thread that writes the store: starting write-out
 * write-protects each page, and done from another thread that costs a TLB
 * shootdown per page on the CPU writing the map, which then faults on the
 * page and contends for its page-table lock.  Errors are left to
 * pk_store_sync.
 */
void pk_store_writeback(pk_store *s);

/*
 * Faults in, writable, the map's next ahead bytes past the last page in
 * use (never past the map's end), so that the writer's first touch of a
 * new page -- the kernel zeroing it and giving it a block -- is paid here
 * and not inside a command.  Contents are left alone (MADV_POPULATE_WRITE),
 * so it may run in another thread while the store is written; one call at
 * a time.  Returns the bytes faulted in (0: nothing to do) or PK_EINVAL
 * when the kernel cannot (before Linux 5.14), after which it does nothing.
 */
int64_t pk_store_prefault(pk_store *s, size_t ahead);

/*
 * Begins a transaction: read-only when rdonly is non-zero.  Returns 0 and
 * *out (owned until pk_txn_commit or pk_txn_abort), PK_EBUSY (a write
 * transaction is already open), PK_EFULL (too many readers), PK_ENOMEM or
 * PK_EIO.
 */
int pk_txn_begin(pk_store *s, int rdonly, pk_txn **out);

/*
 * Commits and frees t.  Returns 0 -- only then are the writes durable per
 * the fsync mode and may be acknowledged -- or the sticky error of a failed
 * transaction, PK_EFULL (map or disk full), PK_EIO (fsync or write
 * failed) or PK_ENOMEM; on error nothing was written.  A read transaction
 * commits like it aborts.
 */
int pk_txn_commit(pk_txn *t);

/* Aborts and frees t; NULL ok. */
void pk_txn_abort(pk_txn *t);

/* 0 while t is healthy, else the sticky error that failed it. */
int pk_txn_error(const pk_txn *t);

/*
 * The number of data changes t's logged operations (client writes, not
 * replication or imports) made so far: a command changed data iff the
 * count moved across it (WATCH's touch).  Write transactions only.
 */
uint64_t pk_txn_changes(const pk_txn *t);

#endif

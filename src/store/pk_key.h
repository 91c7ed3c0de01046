/*
 * pk_key: commands that work on a key of any type -- DEL, EXISTS, TYPE,
 * EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT (one function), TTL/PTTL,
 * EXPIRETIME/PEXPIRETIME, PERSIST -- and SCAN.  Whole-key copies (COPY,
 * RENAME, DUMP, RESTORE) and RANDOMKEY are in pk_keyops.h.
 *
 * Common parameters: t is a transaction from pk_txn_begin (writes need a
 * write transaction, else PK_EINVAL); part is the key's partition as the
 * server computed it; key/klen is the binary user key; now_ms is the
 * caller's clock (see pk_store.h for expiry, errors and lifetimes).  Out
 * parameters are written only on success.
 *
 * Keys of any length (up to PK_STORE_KEY_MAX) exist; one longer than about
 * 230 bytes is stored under a digest with the whole key in its META record
 * (pk_keyenc.h).  The only key that cannot exist is one whose digest
 * prefix another stored key already holds (a SHA-256/128 collision, never
 * seen in practice): reads report it missing, writes return PK_ERANGE
 * and touch nothing, so the other key's data is never returned or
 * overwritten.
 */
#ifndef PK_STORE_PK_KEY_H
#define PK_STORE_PK_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

typedef enum pk_type {
    PK_TYPE_NONE = 0,
    PK_TYPE_STRING = 1,
    PK_TYPE_HASH = 2,
    PK_TYPE_ZSET = 3,
    PK_TYPE_LIST = 4,
    PK_TYPE_SET = 5,
} pk_type;

/* EXPIRE conditions (Redis 7). */
#define PK_EXPIRE_NX 1u /* only if the key has no expiry */
#define PK_EXPIRE_XX 2u /* only if the key has an expiry */
#define PK_EXPIRE_GT 4u /* only if later than the current (none = inf) */
#define PK_EXPIRE_LT 8u /* only if earlier than the current (none = inf) */

/* "none", "string", "hash", "zset"; static storage. */
const char *pk_type_name(pk_type type);

/*
 * DEL: deletes the key with all its fields or members.  *deleted = 1 if it
 * existed (and was not expired), else 0.  Returns 0 or a sticky error.
 */
int pk_key_del(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t now_ms, int *deleted);

/*
 * MEMORY USAGE: an estimate of the bytes the key takes (its name, its
 * value or META record, and a fixed 16 bytes for each field or member,
 * whose records are not read).  PK_ENOTFOUND for a missing key; else 0 or
 * an error.
 */
int pk_key_usage(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now_ms, uint64_t *bytes);

/* EXISTS: *exists = 1 or 0.  Returns 0 or an error. */
int pk_key_exists(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now_ms, int *exists);

/* TYPE: *type is PK_TYPE_NONE for a missing key.  Returns 0 or an error. */
int pk_key_type(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_type *type);

/*
 * PEXPIREAT: sets the key's expiry to when_ms (absolute Unix ms, > 0; the
 * server converts EXPIRE seconds and relative times) if the PK_EXPIRE_*
 * conditions in flags hold.  A when_ms <= now_ms deletes the key.  *done =
 * 1 when the expiry was set or the key deleted, 0 when the key is missing
 * or a condition failed (Redis replies 1 / 0).  Returns 0, PK_EINVAL
 * (when_ms == 0, NX with XX/GT/LT, or GT with LT) or a sticky error.
 */
int pk_key_expire(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t when_ms, unsigned flags, uint64_t now_ms, int *done);

/*
 * PTTL: *ttl_ms = -2 for a missing key, -1 for a key without expiry, else
 * the milliseconds left (>= 1).  TTL in seconds is (ttl_ms + 500) / 1000,
 * as Redis rounds.  Returns 0 or an error.
 */
int pk_key_pttl(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, int64_t *ttl_ms);

/*
 * PEXPIRETIME: *when_ms = -2 for a missing key, -1 for a key without
 * expiry, else its absolute expiry in Unix ms (> now_ms).  EXPIRETIME in
 * seconds is (when_ms + 500) / 1000, as Redis rounds.  Returns 0 or an
 * error.
 */
int pk_key_expiretime(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      uint64_t now_ms, int64_t *when_ms);

/*
 * PERSIST: removes the expiry.  *done = 1 if the key had one, else 0.
 * Returns 0 or a sticky error.
 */
int pk_key_persist(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t now_ms, int *done);

/*
 * SCAN callback: one key of partition part.  key is valid only during the
 * call.  Return 0 to go on; any other value ends the scan call, which
 * returns it without setting *next.
 */
typedef int (*pk_scan_cb)(void *ctx, uint32_t part, pk_slice key);

typedef struct pk_scan_opts {
    const void *match; /* glob (pk_glob.h), NULL for all keys; borrowed */
    size_t match_len;
    size_t count; /* keys to examine per call, hint; 0 means 10 */
    pk_type type; /* PK_TYPE_NONE for any type */
    /* Partitions to visit: may(may_ctx, part) non-zero; NULL for all.  A
     * refused partition is skipped whole, without examining its keys. */
    int (*may)(void *ctx, uint32_t part);
    void *may_ctx;
} pk_scan_opts;

/*
 * SCAN: visits keys of all partitions in key order, starting at cursor (0
 * to begin), and sets *next to the cursor to pass next time, 0 when the
 * scan is complete.
 *
 * The cursor is opaque to clients.  Its high 32 bits are a partition and
 * its low 32 bits the first four encoded bytes of the next key to visit
 * (0: the partition's start).  A call examines at least opts->count keys
 * and then finishes the group of keys sharing the last examined key's
 * four bytes, so a cursor always falls between two groups: every key that
 * exists for the whole scan is returned exactly once, whatever is written
 * between calls, and every call makes progress.  A call may return more
 * than count keys when many keys share four leading bytes.
 *
 * Returns 0, or an error (a callback's negative return value is passed
 * through).
 */
int pk_store_scan(pk_txn *t, uint64_t cursor, const pk_scan_opts *opts,
                  uint64_t now_ms, pk_scan_cb cb, void *ctx, uint64_t *next);

#endif

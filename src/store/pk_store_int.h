/*
 * pk_store_int: what the store's source files share and nothing outside
 * src/store may use -- the structs behind the opaque handles, the on-disk
 * record formats, and the record layer (pk__rec_*) through which every
 * write to the data DB goes.
 *
 * The record layer keeps the derived state exact: each put or delete of a
 * data record adjusts its partition's key and byte counts, keeps the expiry
 * index in step with META records and appends a physical entry to the
 * change record of the current operation.  Operations are framed by
 * pk__op_begin / pk__op_end: one operation touches one partition, loads its
 * stats once, and ends by appending one change record (one log sequence
 * number per command) and saving the stats.  Because followers, imports
 * and local commands all go through this layer, applying a log or a
 * snapshot reproduces counters and expiry index as well as the data.
 *
 *   META value     0 u8 type | 1 u8 flags (0) | 2 u64 expire ms (0 none)
 *                  | 10 string value, or u64 element count (hash, zset)
 *   ZMEMBER value  u64 bits of the score (big-endian)
 *   stats value    u64 keys | u64 bytes | u64 log last | u64 log trim
 *   log entry      u8 op | u16 klen | key without part
 *                  | PUT only: u32 vlen | value
 */
#ifndef PK_STORE_PK_STORE_INT_H
#define PK_STORE_PK_STORE_INT_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/pk_pmap.h"
#include "store/pk_keyenc.h"
#include "store/pk_store.h"

#define PK__META_HDR 10
#define PK__META_AGG (PK__META_HDR + 8)
#define PK__STAT_LEN 32
#define PK__CTR_PAGE 1024u

enum pk__log_op { PK__LOG_PUT = 1, PK__LOG_DEL = 2, PK__LOG_DELPREFIX = 3 };

/* Record types in META values; equal to the public pk_type values. */
enum pk__type { PK__T_STRING = 1, PK__T_HASH = 2, PK__T_ZSET = 3 };

/* pk__op_begin flags. */
#define PK__OP_NOLOG 1u /* do not append a change record */
#define PK__OP_QUIET 2u /* do not count as a write command */

typedef struct pk__ctr {
    uint64_t reads;
    uint64_t writes;
} pk__ctr;

struct pk_store {
    MDB_env *env; /* owned */
    MDB_dbi data, log, expiry, stats, info;
    int wtxn_open; /* a write pk_txn exists */
    /* In-memory read/write counters, pages of PK__CTR_PAGE partitions
     * allocated on first use; partitions >= PK_PARTITIONS_MAX are not
     * counted. */
    pk__ctr *ctr[PK_PARTITIONS_MAX / PK__CTR_PAGE];
};

typedef struct pk__stat {
    uint64_t keys;
    uint64_t bytes;
    uint64_t log_last;
    uint64_t log_trim; /* records with seq <= log_trim are gone */
} pk__stat;

/* A growable byte buffer, owned by its transaction. */
typedef struct pk__buf {
    uint8_t *p;
    size_t len;
    size_t cap;
} pk__buf;

struct pk_txn {
    pk_store *s;  /* borrowed */
    MDB_txn *txn; /* owned */
    int rdonly;
    int err; /* sticky error, 0 while healthy */
    /* The operation in progress (write transactions only). */
    int op_open;
    unsigned op_flags;
    uint32_t op_part;
    int st_dirty;
    pk__stat st;     /* op_part's stats, saved by pk__op_end */
    pk__buf log;     /* change record being built */
    pk__buf val;     /* META value being built */
    pk__buf scratch; /* bytes handed back by writes */
};

/* A key's META record as loaded by pk__meta_load. */
typedef struct pk__meta {
    int exists;
    uint8_t type; /* enum pk__type */
    uint64_t expire;
    uint64_t count;     /* hash fields or zset members */
    const uint8_t *val; /* string value, borrowed from the map */
    size_t vlen;
    size_t plen; /* prefix length; key[plen] is the tag */
    uint8_t key[PK_KEYENC_MAX];
} pk__meta;

int pk__err(int mdb_rc);
int pk__fail(pk_txn *t, int rc);
int pk__buf_reserve(pk__buf *b, size_t extra);
pk__ctr *pk__ctr_get(pk_store *s, uint32_t part);

int pk__stat_load(pk_txn *t, uint32_t part, pk__stat *st);
int pk__stat_save(pk_txn *t, uint32_t part, const pk__stat *st);

int pk__read_begin(pk_txn *t, uint32_t part);
int pk__op_begin(pk_txn *t, uint32_t part, unsigned flags);
int pk__op_end(pk_txn *t, int rc);

int pk__meta_parse(const uint8_t *v, size_t n, uint8_t *type, uint64_t *expire,
                   uint64_t *count);
int pk__rec_check(const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen);

int pk__rec_get(pk_txn *t, const uint8_t *k, size_t klen, MDB_val *v);
int pk__rec_put(pk_txn *t, const uint8_t *k, size_t klen, const void *v,
                size_t vlen);
int pk__rec_del(pk_txn *t, const uint8_t *k, size_t klen, int *deleted);
int pk__rec_delprefix(pk_txn *t, const uint8_t *prefix, size_t plen,
                      size_t limit, size_t *n);

int pk__meta_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now, pk__meta *m);
int pk__meta_put(pk_txn *t, pk__meta *m, const void *a, size_t alen,
                 const void *b, size_t blen);
int pk__key_drop(pk_txn *t, pk__meta *m);
/* Loads a key that must be missing or a sorted set (pk_zset.c). */
int pk__zset_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now, pk__meta *m);

/* The score stored in a ZMEMBER value (8 bytes, big-endian bits). */
static inline double pk__score_get(const uint8_t *p)
{
    uint64_t u = pk_be64_get(p);
    double d;

    memcpy(&d, &u, sizeof(d));
    return d;
}

/* Deletes part's log records with seq <= upto (pk_store_part.c). */
int pk__log_delete(pk_txn *t, uint32_t part, uint64_t upto);

int pk__scratch_copy(pk_txn *t, const void *p, size_t n, const void **out);

#endif

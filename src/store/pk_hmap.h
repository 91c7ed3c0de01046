/*
 * pk_hmap: Redis hash commands -- HSET, HGET, HMGET, HDEL, HGETALL, HLEN,
 * HEXISTS, HINCRBY, HSETNX, HINCRBYFLOAT, HSCAN; HKEYS, HVALS, HSTRLEN and
 * HRANDFIELD are served by the server from these.  (pk_hmap, not pk_hash: that
 * name holds the key hash functions in core.)
 *
 * A hash is a META record holding the field count plus one record per
 * field, prefix | 0x02 | field -> value, so fields come back in byte order
 * of their names and a field costs one lookup.  A hash never exists empty:
 * removing its last field deletes the key.  Parameters, errors and
 * lifetimes follow pk_key.h and pk_store.h; every function returns
 * PK_STORE_WRONGTYPE for a key of another type.  Keys and fields of any
 * length are fine (a field of 240 bytes or more is stored under its head
 * and digest, pk_keyenc.h); writes return PK_ERANGE when a value or field
 * exceeds PK_STORE_VALUE_MAX, for a key that cannot exist (see pk_key.h)
 * or a field whose digest another field holds; nothing is written then,
 * and reads take such a field as missing.
 */
#ifndef PK_STORE_PK_HMAP_H
#define PK_STORE_PK_HMAP_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_key.h"
#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

/*
 * HSET: sets n >= 1 field/value pairs (a field given twice takes the last
 * value) and sets *added to the number of fields that were new.  Returns
 * 0, PK_EINVAL (n == 0), PK_STORE_WRONGTYPE, PK_ERANGE or a sticky error.
 */
int pk_hmap_set(pk_txn *t, uint32_t part, const void *key, size_t klen,
                size_t n, const pk_slice *fields, const pk_slice *vals,
                uint64_t now_ms, uint64_t *added);

/* HGET: returns 0, PK_ENOTFOUND (key or field), WRONGTYPE or an error. */
int pk_hmap_get(pk_txn *t, uint32_t part, const void *key, size_t klen,
                const void *field, size_t flen, uint64_t now_ms, pk_slice *val);

/*
 * HMGET: vals[i] gets field i's value, ptr NULL when missing (all NULL for
 * a missing key).  Returns 0, WRONGTYPE or an error.
 */
int pk_hmap_mget(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 size_t n, const pk_slice *fields, uint64_t now_ms,
                 pk_slice *vals);

/*
 * HDEL: deletes n fields, sets *removed to how many existed.  Returns 0,
 * WRONGTYPE or a sticky error.
 */
int pk_hmap_del(pk_txn *t, uint32_t part, const void *key, size_t klen,
                size_t n, const pk_slice *fields, uint64_t now_ms,
                uint64_t *removed);

/* HLEN: *len = 0 for a missing key.  Returns 0, WRONGTYPE or an error. */
int pk_hmap_len(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *len);

/* HEXISTS: *exists = 1 or 0.  Returns 0, WRONGTYPE or an error. */
int pk_hmap_exists(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   const void *field, size_t flen, uint64_t now_ms,
                   int *exists);

/*
 * HINCRBY: adds by to the field's integer (missing = 0) and sets *out.
 * Returns 0, WRONGTYPE, PK_STORE_HASH_NOTINT, PK_STORE_OVERFLOW,
 * PK_ERANGE or a sticky error.
 */
int pk_hmap_incrby(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   const void *field, size_t flen, int64_t by, uint64_t now_ms,
                   int64_t *out);

/*
 * HSETNX: sets the field only when it is missing; *set = 1 then, else 0.
 * Returns 0, WRONGTYPE, PK_ERANGE or a sticky error.
 */
int pk_hmap_setnx(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const void *field, size_t flen, const void *val, size_t vlen,
                  uint64_t now_ms, int *set);

/* Longest HINCRBYFLOAT result (Redis's MAX_LONG_DOUBLE_CHARS). */
#define PK_HMAP_FLOAT_MAX 5120

/*
 * HINCRBYFLOAT: adds by (finite) to the field's number (missing = 0) in
 * long double, as Redis does, stores the result in Redis's human format
 * ("%.17Lf" without trailing zeros) and points *out at it (valid until
 * the transaction's next write or its end).  Returns 0, WRONGTYPE,
 * PK_EINVAL (by not finite), PK_STORE_HASH_NOTFLOAT, PK_STORE_INCR_NANINF,
 * PK_ERANGE or a sticky error; nothing is written on error.
 */
int pk_hmap_incrbyfloat(pk_txn *t, uint32_t part, const void *key, size_t klen,
                        const void *field, size_t flen, long double by,
                        uint64_t now_ms, pk_slice *out);

/*
 * Parses a Redis long double ("ERR value is not a valid float" when not):
 * no leading space, the whole string, no NaN, no overflow.  1 or 0.
 */
int pk_hmap_parse_ld(const void *s, size_t len, long double *out);

/*
 * HGETALL callback: field and value point into the map and stay valid
 * until the transaction ends (or its next write).  Return 0 to go on; any
 * other value stops the walk and is returned by pk_hmap_each.
 */
typedef int (*pk_hmap_cb)(void *ctx, pk_slice field, pk_slice val);

/*
 * HGETALL: calls cb for every field in byte order of the field names (no
 * call for a missing key).  Returns 0, WRONGTYPE, the callback's value or
 * an error.
 */
int pk_hmap_each(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now_ms, pk_hmap_cb cb, void *ctx);

/*
 * HRANDFIELD: calls cb for count fields chosen uniformly at random, with
 * their values: distinct ones (min(count, len) of them, in byte order of
 * the fields) unless repeat, else exactly count independent draws in
 * random order (none for a missing key).  seed drives the choice; memory
 * is bounded by a batch of 65536 draws whatever count is, never by the
 * hash's size (pk_store_rand.c).  Returns 0, WRONGTYPE, the callback's
 * value, PK_ENOMEM or an error.
 */
int pk_hmap_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                   pk_hmap_cb cb, void *ctx);

/*
 * HSCAN: fields in byte order from cursor (0 to begin); opts->match and
 * opts->count as SCAN's (opts may be NULL, type is ignored).  At least
 * count fields are examined, then the rest of those sharing the last
 * one's first 8 bytes; *next is the cursor of the following group (the
 * big-endian value of its first 8 bytes, zero padded), 0 when done, so
 * a field present for the whole scan is reported exactly once whatever
 * is written between calls.  Returns 0, WRONGTYPE, the callback's value
 * or an error.
 */
int pk_hmap_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t cursor, const pk_scan_opts *opts, uint64_t now_ms,
                 pk_hmap_cb cb, void *ctx, uint64_t *next);

#endif

/*
 * pk_str: Redis string commands -- GET, SET (NX XX GET KEEPTTL, expiry;
 * SETNX SETEX PSETEX GETSET are forms of it), GETDEL, GETEX, MSETNX,
 * INCRBY (INCR, DECR, DECRBY), INCRBYFLOAT, APPEND, SETRANGE, STRLEN.
 * Bit commands are in pk_bits.h.
 *
 * A string lives inline in its key's META record, so every command here is
 * one LMDB lookup and at most one put.  Parameters, errors and lifetimes
 * follow pk_key.h and pk_store.h: reads return PK_ENOTFOUND for a missing
 * key, PK_STORE_WRONGTYPE for a key of another type; writes return
 * PK_ERANGE for a key that cannot exist (see pk_key.h; keys of any length
 * up to PK_STORE_KEY_MAX can), PK_STORE_TOOBIG for a string that would
 * grow beyond PK_STORE_VALUE_MAX (Redis's proto-max-bulk-len).
 */
#ifndef PK_STORE_PK_STR_H
#define PK_STORE_PK_STR_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

#define PK_SET_NX 1u      /* only if the key does not exist */
#define PK_SET_XX 2u      /* only if the key exists */
#define PK_SET_GET 4u     /* return the old string (nil if none) */
#define PK_SET_KEEPTTL 8u /* keep the key's expiry */

typedef struct pk_set_opts {
    unsigned flags;     /* PK_SET_* */
    uint64_t expire_at; /* absolute Unix ms, 0 for none (EX/PX/EXAT/PXAT) */
} pk_set_opts;

/*
 * GET: *val points into the map (see pk_store.h for how long).  Returns 0,
 * PK_ENOTFOUND, PK_STORE_WRONGTYPE or an error.
 */
int pk_str_get(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t now_ms, pk_slice *val);

/*
 * SET: stores val under key, replacing a key of any type (unless GET is
 * asked for and the key is not a string).  opts may be NULL.  *done = 1 if
 * the value was written, 0 if NX/XX prevented it (Redis replies nil).  With
 * PK_SET_GET, *old (required then, else may be NULL) gets the previous
 * string, ptr NULL if there was none; its bytes live in the transaction's
 * scratch memory until the next call on t.  An expire_at <= now_ms leaves
 * the key deleted.  Returns 0, PK_STORE_WRONGTYPE (GET on a non-string,
 * nothing written), PK_EINVAL (NX with XX, KEEPTTL with expire_at, or
 * GET without old), PK_ERANGE, or a sticky error.
 */
int pk_str_set(pk_txn *t, uint32_t part, const void *key, size_t klen,
               const void *val, size_t vlen, const pk_set_opts *opts,
               uint64_t now_ms, int *done, pk_slice *old);

/*
 * GETDEL: returns the string in *val (scratch memory, as above) and
 * deletes the key.  Returns 0, PK_ENOTFOUND, PK_STORE_WRONGTYPE or a
 * sticky error.
 */
int pk_str_getdel(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now_ms, pk_slice *val);

/*
 * INCRBY: adds by to the integer in the string (missing = 0), keeps the
 * expiry, and sets *out to the result.  Returns 0, PK_STORE_WRONGTYPE,
 * PK_STORE_NOTINT (value not a canonical int64, as Redis' string2ll
 * decides), PK_STORE_OVERFLOW, PK_ERANGE or a sticky error.
 */
int pk_str_incrby(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  int64_t by, uint64_t now_ms, int64_t *out);

/*
 * APPEND: appends to the string (creating it), keeps the expiry, and sets
 * *len to the new length.  Returns 0, PK_STORE_WRONGTYPE, PK_STORE_TOOBIG,
 * PK_ERANGE or a sticky error.
 */
int pk_str_append(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const void *val, size_t vlen, uint64_t now_ms, uint64_t *len);

/* STRLEN: *len = 0 for a missing key.  Returns 0, WRONGTYPE or an error. */
int pk_str_strlen(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now_ms, uint64_t *len);

#define PK_GETEX_KEEP 0    /* GETEX without options: a plain GET */
#define PK_GETEX_AT 1      /* set the expiry to expire_at (EX PX EXAT PXAT) */
#define PK_GETEX_PERSIST 2 /* drop the expiry */

/*
 * GETEX: returns the string in *val (scratch memory, as for SET GET) and
 * changes its expiry as mode says; an expire_at <= now_ms deletes the key.
 * Returns 0, PK_ENOTFOUND, PK_STORE_WRONGTYPE (nothing changed), PK_EINVAL
 * (unknown mode, PK_GETEX_AT with 0) or a sticky error.
 */
int pk_str_getex(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 int mode, uint64_t expire_at, uint64_t now_ms, pk_slice *val);

/*
 * MSETNX: kv holds n key, value pairs (2n slices), key i in partition
 * parts[i].  Sets them all, without expiry, if none exists (*done = 1),
 * else writes nothing (*done = 0).  The writes are one operation per run
 * of keys in one partition (one in all when they share a slot).  Returns
 * 0, PK_ERANGE (a key too long; nothing written) or a sticky error.
 */
int pk_str_msetnx(pk_txn *t, const uint32_t *parts, const pk_slice *kv,
                  size_t n, uint64_t now_ms, int *done);

/*
 * INCRBYFLOAT: adds the float in by (text, parsed as the value is) to the
 * string's float (missing = 0), keeps the expiry, and returns the new
 * value as Redis formats it ("%.17Lf" without trailing zeros) in *out
 * (scratch memory).  Returns 0, PK_STORE_WRONGTYPE, PK_STORE_NOTFLOAT
 * (value or increment), PK_STORE_NANINF, PK_ERANGE or a sticky error.
 */
int pk_str_incrbyfloat(pk_txn *t, uint32_t part, const void *key, size_t klen,
                       const void *by, size_t bylen, uint64_t now_ms,
                       pk_slice *out);

/*
 * SETRANGE: writes val at byte offset of the string, zero-padding it (and
 * creating the key) as needed; keeps the expiry; *len = the new length.
 * An empty val changes nothing and gives the current length (0 for a
 * missing key, which stays missing).  Returns 0, PK_STORE_WRONGTYPE,
 * PK_STORE_TOOBIG (offset + vlen above PK_STORE_VALUE_MAX; nothing is
 * allocated), PK_ERANGE or a sticky error.
 */
int pk_str_setrange(pk_txn *t, uint32_t part, const void *key, size_t klen,
                    uint64_t offset, const void *val, size_t vlen,
                    uint64_t now_ms, uint64_t *len);

/*
 * Parses a float as Redis' string2ld does (strtold over the whole text, no
 * leading space, no NaN, no overflow).  Returns 0 or PK_STORE_NOTFLOAT.
 */
int pk_str_parse_float(const void *s, size_t len, long double *out);

/*
 * Parses a canonical decimal int64 as Redis' string2ll does: optional '-',
 * no '+', no spaces, no leading zeros, 1..20 digits, in range.  Returns 0
 * or PK_STORE_NOTINT.  Shared with HINCRBY.
 */
int pk_str_parse_int(const void *s, size_t len, int64_t *out);

#endif

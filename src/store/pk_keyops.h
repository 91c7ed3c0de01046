/*
 * pk_keyops: whole-key operations that work on every type without knowing
 * it -- COPY, RENAME/RENAMENX (one function), DUMP, RESTORE and RANDOMKEY.
 *
 * A key is one contiguous run of records in the data DB (pk_keyenc.h):
 * its META record and its sub-key records.  These functions move that run
 * as raw records (tag | sub-key -> value) under another key's prefix, so a
 * type added later (lists, sets) is copied, renamed, dumped and restored
 * without a change here beyond the validation table in pk_keyops.c.
 *
 * Common parameters are those of pk_key.h: t a transaction (writes need a
 * write one, else PK_EINVAL), part the key's partition as the server
 * computed it, key/klen the user key, now_ms the caller's clock.  Out
 * parameters are written only on success.  Every write goes through the
 * record layer; each partition written is one operation (one change
 * record), and a failure after a write is sticky as everywhere in the
 * store, so a RENAME across two partitions commits whole or not at all.
 */
#ifndef PK_STORE_PK_KEYOPS_H
#define PK_STORE_PK_KEYOPS_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

/* pk_key_copy and pk_key_restore flags. */
#define PK_KEYOPS_REPLACE 1u /* an existing destination is replaced */
#define PK_KEYOPS_MOVE 2u    /* the source is deleted (RENAME) */

/* The DUMP payload's format version (its first byte). */
#define PK_DUMP_VERSION 1

/*
 * COPY (flags without MOVE) and RENAME (MOVE | REPLACE) / RENAMENX (MOVE):
 * writes every record of src under dst, with src's expiry.  An existing
 * dst is dropped first when REPLACE is set; without it *done = 0 and
 * nothing changes.  *done = 1 when the key was copied.  src and dst may be
 * in different partitions (a node outside cluster mode): each is then its
 * own operation in t.
 *
 * Returns 0, PK_ENOTFOUND (src missing or expired: RENAME's "no such
 * key", COPY's 0), PK_EINVAL (src and dst are the same key: the server
 * answers that case itself, as Redis does), PK_ERANGE (dst cannot be
 * stored: its long key's digest prefix holds another key; nothing
 * written), PK_ENOMEM, or a sticky error.  Records move verbatim: no
 * sub-key depends on its key's prefix (pk_keyenc.h).
 */
int pk_key_copy(pk_txn *t, uint32_t spart, const void *src, size_t slen,
                uint32_t dpart, const void *dst, size_t dlen, unsigned flags,
                uint64_t now_ms, int *done);

/*
 * DUMP: the key's serialized form in *out, valid until the next call on t
 * (the transaction's scratch memory).  Layout, big-endian:
 *
 *   u8 version (PK_DUMP_VERSION) | u8 type
 *   | records: (u16 n | tag and sub-key, n bytes | u32 vlen | value)+
 *   | u64 XXH3-64 of every byte before it
 *
 * The records are the key's, in key order, META first with its expiry
 * zeroed (RESTORE takes the TTL from its argument).  Returns 0,
 * PK_ENOTFOUND, PK_ENOMEM or an error.
 */
int pk_key_dump(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_slice *out);

/*
 * RESTORE: creates key from a DUMP payload, expiring at expire_ms
 * (absolute ms, 0 for none; a time <= now_ms creates nothing but still
 * drops the old key with REPLACE, as Redis does).  The whole payload is
 * validated before anything is written: every record as pk__rec_check
 * checks records from other nodes, strictly increasing order (no
 * duplicates), tags that belong to the type, the META count equal to the
 * records it counts, and for sorted sets every member paired with its
 * score record.
 *
 * Returns 0, PK_EEXIST (key exists and REPLACE is not set: BUSYKEY),
 * PK_EVERSION (unknown version byte) or PK_ECHECKSUM (short payload or
 * checksum mismatch: Redis's "payload version or checksum are wrong"),
 * PK_ECORRUPT (checksum fine, records malformed: "Bad data format"),
 * PK_ERANGE (the key cannot be stored, as for COPY), PK_ENOMEM, or a
 * sticky error.  All but the last leave t usable and unchanged.
 */
int pk_key_restore(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   const void *payload, size_t len, uint64_t expire_ms,
                   unsigned flags, uint64_t now_ms);

/*
 * RANDOMKEY within one partition: a live key of part in *out (valid until
 * the next call on t).  rnd is the caller's random number (the store has
 * no random source of its own).  The pick seeks to a random point of the
 * partition and walks forward, wrapping at its end, a random number of
 * keys: uniform in [0, 64) plus 64 times a geometric count (p = 1/2)
 * bounded by the partition's size.  Not uniform -- a key after a wide gap
 * in the key order is likelier -- but every live key has a non-zero
 * probability, and the expected cost is about 100 seeks whatever the
 * partition's size.
 *
 * Returns 0, PK_ENOTFOUND (no live key in part), or an error.
 */
int pk_key_random(pk_txn *t, uint32_t part, uint64_t rnd, uint64_t now_ms,
                  pk_slice *out);

#endif

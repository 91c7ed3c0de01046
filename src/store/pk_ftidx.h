/*
 * pk_ftidx: local secondary index entries -- beside each partition's data,
 * in its system area (pk_keyenc.h), so that they are written in the same
 * transaction as the hash they index and move, replicate and snapshot
 * with the partition like any record.
 *
 *   part | 00 03 | 0x10 | u64 id | u8 kind | ...
 *
 *   kind 1 TERM   | u8 field | escaped term | 00 01 | doc  -> empty
 *   kind 2 NUM    | u8 field | score8                | doc  -> empty
 *   kind 3 DOC    | doc   -> the document's entries: (u8 kind | u8 field |
 *                           u16 len | the bytes between field and doc)*
 *   kind 4 BUILT          -> u8 nfields: every key of the partition that
 *                            existed when the build began is indexed on
 *                            the first nfields fields
 *
 * "doc" is the document key's data prefix without its partition (its
 * escaped bytes and terminator, or the long form: pk_keyenc.h), so an
 * entry names exactly one key and keys of any length fit: an entry is at
 * most 17 + 2 * PK_FT_TERM_MAX + 2 + 236 bytes.  Escaping keeps terms in
 * byte order and a term's entries before those of every longer term it
 * begins, so a prefix query is one range; score8 keeps numbers in order,
 * so a numeric range is one range.  The DOC entry says which entries a
 * document has, so that a write removes exactly those it no longer has,
 * and lists the index's documents for '*' queries.
 *
 * Global indexes (ids with PK_FTIDX_GLOBAL) keep the DOC entry of each
 * document beside it, like a local index, but their TERM and NUM entries
 * live in the partition their term (a number: its bucket, sign and
 * exponent) hashes to, each holding a copy of its document:
 *
 *   part | 00 03 | 0x10 | u64 id | u8 kind | u8 field | mid | doc -> copy
 *   copy: u32 klen | key | u64 expiry ms (0: none) |
 *         (u32 flen | field | u32 vlen | value)*
 *
 * and the DOC entry's list begins with a u64 digest of the copy.  A write
 * does not reach them: it appends a record to its own partition's outbox
 *
 *   part | 00 03 | 0x11 | u64 seq -> u64 id | u16 dlen | doc | u32 clen |
 *                                    copy | (u8 put | u8 kind | u8 field |
 *                                    u16 len | mid)*
 *
 * in the same transaction (seq: milliseconds << 20, or the last + 1), and
 * the server ships the records' operations to the entries' partitions in
 * order (pk_ftout_ops, pk_ftglob_op_apply), trimming them once applied.
 *
 * Every write here is an operation of its own (one change record) in the
 * caller's write transaction, right after the command that changed the
 * document.  Errors and lifetimes follow pk_store.h.
 */
#ifndef PK_STORE_PK_FTIDX_H
#define PK_STORE_PK_FTIDX_H

#include <stddef.h>
#include <stdint.h>

#include "core/pk_ftdef.h"
#include "core/pk_ftq.h"
#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

/* The bit of an index id that makes it global. */
#define PK_FTIDX_GLOBAL (UINT64_C(1) << 63)

/*
 * Brings key's entries in index d up to date with the key as it is now
 * in t: a live hash that d covers gets an entry per term, tag and number
 * of its indexed fields and a DOC entry; anything else (missing,
 * expired, another type, not covered) none.  Writes nothing when nothing
 * changed.  Returns 0, PK_ENOMEM or a sticky error.
 */
int pk_ftidx_doc(pk_txn *t, uint32_t part, const pk_ftdef *d, const void *key,
                 size_t klen, uint64_t now_ms);

/* Called with a term (tag or word) of field that has entries: its bytes
 * as entries hold them (escaped, then 00 01; pk_keyenc_escape). */
typedef void (*pk_ftidx_term_fn)(void *ctx, uint8_t field, const uint8_t *mid,
                                 size_t len);

/* pk_ftidx_doc, calling fn (may be NULL) with each term entry it adds. */
int pk_ftidx_doc_terms(pk_txn *t, uint32_t part, const pk_ftdef *d,
                       const void *key, size_t klen, uint64_t now_ms,
                       pk_ftidx_term_fn fn, void *ctx);

/* Calls fn once with each term that has entries of local index id in
 * part (not counted as a read).  0 or an error. */
int pk_ftidx_terms(pk_txn *t, uint32_t part, uint64_t id, pk_ftidx_term_fn fn,
                   void *ctx);

/* Called with each document key a lookup hits (borrowed until the call
 * returns).  Return 0 to go on; any other value stops and is returned. */
typedef int (*pk_ftidx_cb)(void *ctx, pk_slice key);

/* The documents of index id in part with an entry sc selects (a document
 * may come once per term of it that sc selects).  0, the callback's value
 * or an error. */
int pk_ftidx_scan(pk_txn *t, uint32_t part, uint64_t id, const pk_ftq_scan *sc,
                  pk_ftidx_cb cb, void *ctx);

/* Every document of index id in part, once each, in key order of their
 * entries.  0, the callback's value or an error. */
int pk_ftidx_docs(pk_txn *t, uint32_t part, uint64_t id, pk_ftidx_cb cb,
                  void *ctx);

/* *docs: how many documents index id has in part; *bytes: the bytes of
 * their entries' keys and lists (a global index's entries elsewhere
 * counted by their keys, without their copies), read from the DOC
 * entries alone.  0 or an error. */
int pk_ftidx_count(pk_txn *t, uint32_t part, uint64_t id, uint64_t *docs,
                   uint64_t *bytes);

/*
 * One step of the build of index d in part: indexes the keys from
 * cursor (cursor[0..*clen), a data prefix without its partition; *clen 0
 * at the start), at most *budget of them (less the keys looked at, and
 * one for the step), and moves the cursor on.  When the partition is
 * through it writes the BUILT entry and sets *done.  0, PK_ENOMEM or a
 * sticky error.  cursor holds PK_KEYENC_MAX bytes.
 */
int pk_ftidx_build(pk_txn *t, uint32_t part, const pk_ftdef *d, uint8_t *cursor,
                   size_t *clen, uint32_t *budget, uint64_t now_ms, int *done);

/* 1 when part holds d's BUILT entry for d's fields (one written before
 * FT.ALTER added a field does not count), 0 when not, or an error. */
int pk_ftidx_built(pk_txn *t, uint32_t part, const pk_ftdef *d);

/* The smallest index id > after (0: from the start) with entries in
 * part: 0 and *id, PK_ENOTFOUND, or an error. */
int pk_ftidx_next_id(pk_txn *t, uint32_t part, uint64_t after, uint64_t *id);

/* Deletes every entry of index id in part (one range delete, one
 * change record).  0 or a sticky error. */
int pk_ftidx_drop(pk_txn *t, uint32_t part, uint64_t id);

/* ---- global indexes ---------------------------------------------------- */

/*
 * The partitions (of nparts) that hold the entries nsc lookups sc of
 * global index id may hit, bit-set in bits: 0, or 1 when they may be in
 * any (a prefix, a numeric range over more than 64 buckets).
 */
int pk_ftglob_scan_parts(uint64_t id, const pk_ftq_scan *sc, int nsc,
                         uint32_t nparts, uint8_t *bits);

/* Called with a hit's document key and copy (borrowed). */
typedef int (*pk_ftglob_cb)(void *ctx, pk_slice key, pk_slice copy);

/*
 * The documents of global index d whose entries in part lookup sc[i]
 * hits -- each reported only from its first entry hit by the first of
 * sc[0..i] that hits any, computed from its copy, so that the union over
 * every lookup and partition names each document once; none whose copy
 * has expired by now_ms.  0, the callback's value or an error.
 */
int pk_ftglob_scan(pk_txn *t, uint32_t part, const pk_ftdef *d,
                   const pk_ftq_scan *sc, int i, uint64_t now_ms,
                   pk_ftglob_cb cb, void *ctx);

/* The key and expiry (Unix ms, 0: none) of copy, and cb (may be NULL)
 * with each field: 0, the callback's value, or PK_ECORRUPT. */
int pk_ftglob_copy_each(pk_slice copy, pk_slice *key, uint64_t *expiry,
                        int (*cb)(void *ctx, pk_slice field, pk_slice val),
                        void *ctx);

/* The first and last sequence numbers in part's outbox: 0, PK_ENOTFOUND
 * (empty) or an error.  Not counted as a read. */
int pk_ftout_bounds(pk_txn *t, uint32_t part, uint64_t *first, uint64_t *last);

/* The milliseconds a sequence number was stamped at. */
#define PK_FTOUT_MS(seq) ((seq) >> 20)

typedef int (*pk_ftout_cb)(void *ctx, uint64_t seq, pk_slice rec);

/* Calls cb with part's outbox records in order, until about max_bytes
 * of them.  0, the callback's value or an error. */
int pk_ftout_each(pk_txn *t, uint32_t part, size_t max_bytes, pk_ftout_cb cb,
                  void *ctx);

/* Deletes the records of part's outbox up to seq upto (one operation).
 * 0 or a sticky error. */
int pk_ftout_trim(pk_txn *t, uint32_t part, uint64_t upto);

/* Called with each operation of a record, encoded for shipping (op, len
 * bytes, borrowed), with its entry's partition vp and index id. */
typedef int (*pk_ftout_op_cb)(void *ctx, uint32_t vp, uint64_t id,
                              const uint8_t *op, size_t len);

/* The operations of outbox record rec, entries placed among nparts.  0,
 * the callback's value, or PK_ECORRUPT. */
int pk_ftout_ops(pk_slice rec, uint32_t nparts, pk_ftout_op_cb cb, void *ctx);

/* A shipped operation, borrowed from its bytes. */
typedef struct pk_ftglob_op {
    uint32_t vp;
    uint64_t id;
    uint8_t put, kind, field;
    const uint8_t *mid, *doc, *copy;
    size_t len, dlen, clen;
} pk_ftglob_op;

/* The operation at p (n bytes): its length, or 0 when malformed. */
size_t pk_ftglob_op_parse(const uint8_t *p, size_t n, pk_ftglob_op *op);

/* Applies op to its partition (one operation): 0 or a sticky error. */
int pk_ftglob_op_apply(pk_txn *t, const pk_ftglob_op *op);

#endif

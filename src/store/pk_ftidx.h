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

/*
 * Brings key's entries in index d up to date with the key as it is now
 * in t: a live hash that d covers gets an entry per term, tag and number
 * of its indexed fields and a DOC entry; anything else (missing,
 * expired, another type, not covered) none.  Writes nothing when nothing
 * changed.  Returns 0, PK_ENOMEM or a sticky error.
 */
int pk_ftidx_doc(pk_txn *t, uint32_t part, const pk_ftdef *d, const void *key,
                 size_t klen, uint64_t now_ms);

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
 * its entries there.  0 or an error. */
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

#endif

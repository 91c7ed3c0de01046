/*
 * pk_set_int: what the set source files (pk_set.c, the record layer;
 * pk_set_algebra.c, SINTER/SUNION/SDIFF and their STORE forms;
 * pk_set_rand.c, SPOP/SRANDMEMBER) share and nothing else may use;
 * they walk members with pk__sub_walk (pk_store_int.h).
 *
 * A set is a META record (type PK__T_SET, count = its members, never 0)
 * plus one record prefix | PK_TAG_SMEMBER | member -> (empty) a member;
 * a long member's sub-key is its head and digest and its value the
 * member (pk_keyenc.h, pk_store_int.h).
 * Every function here works on a key loaded by pk__set_load inside a
 * transaction (read or operation) the caller has opened; bytes they hand
 * back borrow the map until the next write on t.
 */
#ifndef PK_STORE_PK_SET_INT_H
#define PK_STORE_PK_SET_INT_H

#include "store/pk_set.h"
#include "store/pk_store_int.h"

/*
 * Builds the member record's key under prefix (plen bytes) in buf
 * (PK_KEYENC_MAX bytes) and sets *len (pk__sub_key).  Returns 0, or
 * PK_ERANGE when it cannot be stored (buf is then not a key), or
 * PK_ENOMEM.
 */
int pk__set_member_key(const uint8_t *prefix, size_t plen, const void *mem,
                       size_t mlen, uint8_t *buf, size_t *len);

/* Writes member mem's record k (a long member's carries it).  0 or a
 * sticky error. */
int pk__set_put(pk_txn *t, const uint8_t *k, size_t kl, pk_slice mem);
/* pk__set_put unless the member is there; *added says which. */
int pk__set_add_one(pk_txn *t, const uint8_t *k, size_t kl, pk_slice mem,
                    int *added);

/*
 * Loads a key that must be missing or a set; a key too long to be stored
 * reads as missing (m->plen is then PK_KEYENC_MAX, so no member fits
 * under it).  Returns 0, PK_STORE_WRONGTYPE or an error.
 * pk__set_load_read first opens a read on part.
 */
int pk__set_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now, pk__meta *m);
int pk__set_load_read(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      uint64_t now, pk__meta *m);

/* Makes m, loaded as missing, an empty set about to get members. */
void pk__set_fresh(pk__meta *m);

/* 1 when the set whose prefix is given holds mem, 0 if not, or an error. */
int pk__set_has(pk_txn *t, const uint8_t *prefix, size_t plen, const void *mem,
                size_t mlen);

/*
 * Deletes member mem of the loaded set m and lowers m->count (the META
 * record is written by pk__set_save); *gone = 1 when it was there.
 * Returns 0 or a sticky error.
 */
int pk__set_rem_one(pk_txn *t, pk__meta *m, const void *mem, size_t mlen,
                    int *gone);

/* Writes m's META record with its (changed) count, or drops an empty set. */
int pk__set_save(pk_txn *t, pk__meta *m);

/* Calls cb for each member of a loaded set, in byte order. */
int pk__set_each(pk_txn *t, const pk__meta *m, pk_set_cb cb, void *ctx);

/*
 * Members copied out of the map, to write or delete once the cursors
 * that found them are closed: (u32 length | bytes)* in b.
 * pk__set_buf_add returns 0 or PK_ENOMEM; pk__set_buf_next sets *mem to
 * the member at *off (borrowing b) and moves *off past it, and returns 0
 * at the end.
 */
int pk__set_buf_add(pk__buf *b, pk_slice mem);
int pk__set_buf_next(const pk__buf *b, size_t *off, pk_slice *mem);

#endif

/*
 * pk_ftidx_int: what pk_ftidx.c (local entries, the DOC lists, builds)
 * and pk_ftglob.c (global entries and the outbox) share.  Internal to
 * those two files.
 */
#ifndef PK_STORE_PK_FTIDX_INT_H
#define PK_STORE_PK_FTIDX_INT_H

#include "store/pk_ftidx.h"
#include "store/pk_keyenc.h"
#include "store/pk_store_int.h"

enum { K_TERM = 1, K_NUM = 2, K_DOC = 3, K_BUILT = 4 };

#define AREA_LEN (PK_KEYENC_SYS_LEN + 1) /* part | 00 03 | 0x10 */
#define HEAD_LEN (AREA_LEN + 8 + 1)      /* ... | u64 id | u8 kind */
#define MID_MAX (2 * PK_FT_TERM_MAX + 2) /* escaped term | 00 01 */
#define DOC_MAX (PK_KEYENC_SHORT - 4)    /* a data prefix, no part */

/* One entry of a document: kind, field and the bytes between the field
 * and the document in its key. */
typedef struct pk__ent {
    uint8_t kind, field;
    uint16_t len;
    uint8_t mid[MID_MAX];
} pk__ent;

typedef struct pk__ents {
    pk__ent *v;
    size_t n, cap;
} pk__ents;

/* The head of an entry key: part | 00 03 | 0x10 | id | kind. */
void pk__ftidx_head(uint8_t *k, uint32_t part, uint64_t id, uint8_t kind);

/* The key of index id's DOC entry for the document whose data prefix is
 * prefix (plen bytes): its length. */
size_t pk__ftidx_doc_key(uint8_t *dk, uint32_t part, uint64_t id,
                         const uint8_t *prefix, size_t plen);

/* Order of entries: kind, field, bytes (qsort-shaped). */
int pk__ftidx_ent_cmp(const void *a, const void *b);

/* The entries of a document of d whose indexed fields hold vals (ptr
 * NULL: absent), sorted, without repeats. */
int pk__ftidx_ents_of(const pk_ftdef *d, const pk_slice *vals, pk__ents *e);

/* A DOC entry's list of entries: its length, written, read back. */
size_t pk__ftidx_list_len(const pk__ents *e);
void pk__ftidx_list_put(const pk__ents *e, uint8_t *p);
int pk__ftidx_list_get(const uint8_t *p, size_t n, pk__ents *e);

/* The key of entry x of document doc (dlen bytes, a data prefix without
 * its partition) in index id of part: its length. */
size_t pk__ftidx_ent_key(uint8_t *k, uint32_t part, uint64_t id,
                         const pk__ent *x, const uint8_t *doc, size_t dlen);

/* pk_ftidx_doc for a global index (pk_ftglob.c): the DOC entry here, the
 * entries' changes to the outbox.  prefix: key's data prefix. */
int pk__ftglob_doc(pk_txn *t, uint32_t part, const pk_ftdef *d, const void *key,
                   size_t klen, const uint8_t *prefix, size_t plen,
                   uint64_t now_ms);

/* The document of prefix leaves global index id, whose entries old lists:
 * their deletes to the outbox (inside the caller's operation). */
int pk__ftglob_forget(pk_txn *t, uint32_t part, uint64_t id,
                      const pk__ents *old, const uint8_t *prefix, size_t plen,
                      uint64_t now_ms);

#endif

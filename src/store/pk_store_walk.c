/*
 * pk_store_walk: a cursor over one key's sub-key records of one tag
 * (HFIELD, ZMEMBER or SMEMBER), each taken apart into the full member and
 * the rest of the record (pk__sub_full): the set algebra's cursors and
 * the random picks of pk_store_rand.c walk with it.
 *
 * The walk stops (valid = 0) at the first record outside prefix | tag, so
 * a cursor never reports another key's records or another tag's; a
 * record whose lengths do not fit its layout fails the transaction
 * (PK_ECORRUPT) rather than being skipped.
 */
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"

/* Sets w from the cursor's answer mrc with record k -> v. */
static int walk_check(pk_txn *t, pk__sub_walk *w, int mrc, MDB_val *k,
                      MDB_val *v)
{
    size_t n = w->plen + 1;

    w->valid = 0;
    if (mrc == MDB_NOTFOUND) {
        return 0;
    }
    if (mrc != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    if (k->mv_size < n || memcmp(k->mv_data, w->prefix, w->plen) != 0 ||
        ((const uint8_t *)k->mv_data)[w->plen] != w->tag) {
        return 0;
    }
    w->sub = (pk_slice){(const uint8_t *)k->mv_data + n, k->mv_size - n};
    if (pk__sub_full(w->tag, w->sub, (pk_slice){v->mv_data, v->mv_size},
                     &w->mem, &w->rest) != 0) {
        return pk__fail(t, PK_ECORRUPT);
    }
    w->valid = 1;
    return 0;
}

/* Opens w's cursor at the first record >= prefix | tag + past | from[..n),
 * built in kb (PK_KEYENC_MAX + 1 bytes); w->c is NULL if it failed. */
static int walk_seek(pk_txn *t, pk__sub_walk *w, const uint8_t *prefix,
                     size_t plen, uint8_t tag, int past, const void *from,
                     size_t n, uint8_t *kb, MDB_val *k, MDB_val *v)
{
    int mrc;

    w->prefix = prefix;
    w->plen = plen;
    w->tag = tag;
    w->valid = 0;
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &w->c)) != 0) {
        w->c = NULL;
        return mrc;
    }
    memcpy(kb, prefix, plen);
    kb[plen] = (uint8_t)(tag + past);
    if (n > 0) {
        memcpy(kb + plen + 1, from, n);
    }
    *k = (MDB_val){plen + 1 + n, kb};
    return mdb_cursor_get(w->c, k, v, MDB_SET_RANGE);
}

int pk__sub_walk_open(pk_txn *t, pk__sub_walk *w, const uint8_t *prefix,
                      size_t plen, uint8_t tag, int rev)
{
    uint8_t kb[PK_KEYENC_MAX + 1];
    MDB_val k, v;
    /* Forward: the first record; backward: just past the last one. */
    int mrc = walk_seek(t, w, prefix, plen, tag, rev, NULL, 0, kb, &k, &v);

    if (w->c == NULL) {
        return pk__fail(t, pk__err(mrc));
    }
    if (rev) {
        mrc = mdb_cursor_get(w->c, &k, &v,
                             mrc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
    }
    return walk_check(t, w, mrc, &k, &v);
}

int pk__sub_walk_from(pk_txn *t, pk__sub_walk *w, const uint8_t *prefix,
                      size_t plen, uint8_t tag, pk_slice sub)
{
    uint8_t kb[PK_KEYENC_MAX + 1];
    MDB_val k, v;
    int mrc =
        walk_seek(t, w, prefix, plen, tag, 0, sub.ptr, sub.len, kb, &k, &v);

    return w->c == NULL ? pk__fail(t, pk__err(mrc))
                        : walk_check(t, w, mrc, &k, &v);
}

int pk__sub_walk_next(pk_txn *t, pk__sub_walk *w, int rev)
{
    MDB_val k, v;

    return walk_check(
        t, w, mdb_cursor_get(w->c, &k, &v, rev ? MDB_PREV : MDB_NEXT), &k, &v);
}

void pk__sub_walk_close(pk__sub_walk *w)
{
    if (w->c != NULL) {
        mdb_cursor_close(w->c);
        w->c = NULL;
    }
}

/*
 * pk_store_subscan: the cursor walk behind HSCAN, ZSCAN and SSCAN.
 *
 * The cursor is stateless, like SCAN's (pk_key.c): it names a position in
 * the sub-key order, so writes between calls cannot make it skip or
 * repeat a sub-key that exists throughout.  Sub-keys are grouped by their
 * first 8 bytes, zero padded; padding keeps the order (a sub-key that is
 * a prefix of another pads with zeros, the lowest byte), and seeking at
 * a group's bytes without its trailing zeros finds exactly the sub-keys
 * of that group and later ones.  A call always finishes the group it
 * stopped in, so a cursor falls between groups; a group of many sub-keys
 * sharing 8 leading bytes comes back in one call.  A long member's
 * sub-key starts with its first PK_KEYENC_SUBHEAD bytes (pk_keyenc.h), so
 * it falls in the group of its own first 8 bytes; MATCH and the callback
 * see the full member, from the record's value.
 */
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_glob.h"
#include "store/pk_store_int.h"

static uint64_t sub_group(const uint8_t *p, size_t n)
{
    uint8_t g[8] = {0};

    memcpy(g, p, n < 8 ? n : 8);
    return pk_be64_get(g);
}

int pk__sub_scan(pk_txn *t, const pk__meta *m, uint8_t tag, uint64_t cursor,
                 size_t count, const void *match, size_t mlen, pk__sub_cb cb,
                 void *ctx, uint64_t *next)
{
    uint8_t seek[PK_KEYENC_MAX + 8];
    size_t plen = m->plen + 1, slen = plen, examined = 0;
    uint64_t last = 0, g, nx = 0;
    MDB_cursor *c;
    MDB_val k, v;
    pk_slice sub, mem, rest;
    int rc = 0, mrc;

    if (!m->exists) {
        *next = 0;
        return 0;
    }
    memcpy(seek, m->key, m->plen);
    seek[m->plen] = tag;
    if (cursor != 0) {
        pk_be64_put(seek + plen, cursor);
        slen = plen + 8;
        while (slen > plen && seek[slen - 1] == 0) {
            slen--;
        }
        slen = slen > PK_KEYENC_MAX ? PK_KEYENC_MAX : slen;
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    k = (MDB_val){slen, seek};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, seek, plen) != 0) {
            break;
        }
        sub = (pk_slice){(const uint8_t *)k.mv_data + plen, k.mv_size - plen};
        g = sub_group(sub.ptr, sub.len);
        if (examined >= count && g != last) {
            nx = g;
            break;
        }
        examined++;
        last = g;
        if (pk__sub_full(tag, sub, (pk_slice){v.mv_data, v.mv_size}, &mem,
                         &rest) != 0) {
            rc = pk__fail(t, PK_ECORRUPT);
            break;
        }
        if (match != NULL && !pk_glob_match(match, mlen, mem.ptr, mem.len, 0)) {
            continue;
        }
        if ((rc = cb(ctx, mem, rest)) != 0) {
            break;
        }
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND) {
        rc = pk__fail(t, pk__err(mrc));
    }
    if (rc == 0) {
        *next = nx;
    }
    return rc;
}

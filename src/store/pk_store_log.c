/*
 * pk_store_log: reading, trimming and applying change records.  Records
 * are written by the record layer (pk_store.c); this file only parses
 * them.  Parsing is strict -- a record from the network is hostile -- and
 * apply validates a whole record before its first write, so a bad record
 * costs nothing but its error.
 */
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_log.h"

/* One parsed entry; key and val borrow the record. */
typedef struct entry {
    uint8_t op;
    const uint8_t *key;
    size_t klen;
    const uint8_t *val;
    size_t vlen;
} entry;

/* Parses the entry at *off; returns 0 or PK_ECORRUPT. */
static int entry_next(const uint8_t *p, size_t len, size_t *off, entry *e)
{
    size_t o = *off;

    if (len - o < 3) {
        return PK_ECORRUPT;
    }
    e->op = p[o];
    e->klen = (size_t)p[o + 1] << 8 | p[o + 2];
    o += 3;
    if (e->op < PK__LOG_PUT || e->op > PK__LOG_DELPREFIX || e->klen > len - o ||
        e->klen + 4 > PK_KEYENC_MAX) {
        return PK_ECORRUPT;
    }
    e->key = p + o;
    o += e->klen;
    e->val = NULL;
    e->vlen = 0;
    if (e->op == PK__LOG_PUT) {
        if (len - o < 4) {
            return PK_ECORRUPT;
        }
        e->vlen = pk_be32_get(p + o);
        o += 4;
        if (e->vlen > len - o) {
            return PK_ECORRUPT;
        }
        e->val = p + o;
        o += e->vlen;
    }
    *off = o;
    return 0;
}

/* Checks an entry against the data-DB rules; kb gets part | key. */
static int entry_check(uint32_t part, const entry *e, uint8_t *kb)
{
    pk_keyparts kp;

    pk_be32_put(kb, part);
    memcpy(kb + 4, e->key, e->klen);
    switch (e->op) {
    case PK__LOG_PUT:
        return pk__rec_check(kb, 4 + e->klen, e->val, e->vlen);
    case PK__LOG_DEL:
        return pk_keyenc_parse(kb, 4 + e->klen, &kp);
    }
    return 0; /* any prefix stays inside the partition */
}

int pk_store_log_last(pk_txn *t, uint32_t part, uint64_t *seq)
{
    pk__stat st;
    int rc = t->err;

    rc = rc ? rc : pk__stat_load(t, part, &st);
    if (rc == 0) {
        *seq = st.log_last;
    }
    return rc;
}

int pk_store_log_read(pk_txn *t, uint32_t part, uint64_t from_seq, pk_log_cb cb,
                      void *ctx)
{
    uint8_t kb[12];
    MDB_val k = {12, kb}, v;
    MDB_cursor *c;
    pk__stat st;
    int rc = t->err, mrc;

    rc = rc ? rc : pk__stat_load(t, part, &st);
    if (rc != 0) {
        return rc;
    }
    if (from_seq <= st.log_trim && st.log_trim > 0) {
        return PK_ERANGE;
    }
    pk_be32_put(kb, part);
    pk_be64_put(kb + 4, from_seq);
    if ((mrc = mdb_cursor_open(t->txn, t->s->log, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 12 || pk_be32_get(k.mv_data) != part) {
            break;
        }
        rc = cb(ctx, pk_be64_get((uint8_t *)k.mv_data + 4), v.mv_data,
                v.mv_size);
        if (rc != 0) {
            break;
        }
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND) {
        rc = pk__fail(t, pk__err(mrc));
    }
    return rc;
}

int pk_store_log_trim(pk_txn *t, uint32_t part, uint64_t upto_seq)
{
    int rc = pk__op_begin(t, part, PK__OP_NOLOG | PK__OP_QUIET);

    if (rc != 0) {
        return rc;
    }
    upto_seq = upto_seq < t->st.log_last ? upto_seq : t->st.log_last;
    if (upto_seq > t->st.log_trim) {
        rc = pk__log_delete(t, part, upto_seq);
        t->st.log_trim = upto_seq;
        t->st_dirty = 1;
    }
    return pk__op_end(t, rc);
}

int pk_store_log_apply(pk_txn *t, uint32_t part, uint64_t seq, const void *rec,
                       size_t len)
{
    uint8_t kb[PK_KEYENC_MAX], lk[12];
    MDB_val k = {12, lk}, v = {len, (void *)rec};
    size_t off = 0;
    entry e;
    int rc;

    if (len == 0) {
        return PK_ECORRUPT;
    }
    while (off < len) {
        if ((rc = entry_next(rec, len, &off, &e)) != 0 ||
            (rc = entry_check(part, &e, kb)) != 0) {
            return rc;
        }
    }
    if ((rc = pk__op_begin(t, part, PK__OP_NOLOG)) != 0) {
        return rc;
    }
    if (seq != t->st.log_last + 1) {
        rc = seq <= t->st.log_last ? PK_EEXIST : PK_ERANGE;
        return pk__op_end(t, rc);
    }
    for (off = 0; rc == 0 && off < len;) {
        entry_next(rec, len, &off, &e);
        entry_check(part, &e, kb);
        if (e.op == PK__LOG_PUT) {
            rc = pk__rec_put(t, kb, 4 + e.klen, e.val, e.vlen);
        } else if (e.op == PK__LOG_DEL) {
            rc = pk__rec_del(t, kb, 4 + e.klen, NULL);
        } else {
            rc = pk__rec_delprefix(t, kb, 4 + e.klen, 0, NULL);
        }
    }
    if (rc == 0) {
        pk_be32_put(lk, part);
        pk_be64_put(lk + 4, seq);
        rc = pk__fail(t, pk__err(mdb_put(t->txn, t->s->log, &k, &v, 0)));
        t->st.log_last = seq;
        t->st_dirty = 1;
    }
    return pk__op_end(t, rc);
}

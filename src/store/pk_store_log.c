/*
 * pk_store_log: reading, trimming and applying change records.  The
 * record layer (pk_store_rec.c) builds a command's record and the journal
 * (pk_store_journal.c) stores it; this file parses records.  Parsing is
 * strict -- a record from the network is hostile -- and apply validates a
 * whole record before its first write, so a bad record costs nothing but
 * its error.
 */
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_log.h"

typedef pk__entry entry;

int pk__entry_next(const uint8_t *p, size_t len, size_t *off, entry *e)
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

int pk__rec_valid(uint32_t part, const uint8_t *rec, size_t len)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t off = 0;
    entry e;
    int rc;

    if (len == 0) {
        return PK_ECORRUPT;
    }
    while (off < len) {
        if ((rc = pk__entry_next(rec, len, &off, &e)) != 0 ||
            (rc = entry_check(part, &e, kb)) != 0) {
            return rc;
        }
    }
    return 0;
}

void pk_store_log_retain(pk_store *s, uint64_t bytes)
{
    s->log_keep = bytes;
}

int pk_store_log_hold(pk_store *s, uint32_t part, uint64_t from_seq)
{
    return pk__stat_set_hold(s, part, from_seq);
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
    pk__stat st;
    int rc = t->err;

    rc = rc ? rc : pk__stat_load(t, part, &st);
    if (rc != 0) {
        return rc;
    }
    if (from_seq <= st.log_trim && st.log_trim > 0) {
        return PK_ERANGE;
    }
    from_seq = from_seq > st.log_trim ? from_seq : st.log_trim + 1;
    if (from_seq > st.log_last) {
        return 0;
    }
    return pk__log_walk(t, part, &st, from_seq, cb, ctx);
}

int pk_store_log_trim(pk_txn *t, uint32_t part, uint64_t upto_seq)
{
    int rc = pk__op_begin(t, part, PK__OP_NOLOG | PK__OP_QUIET);

    if (rc != 0) {
        return rc;
    }
    /* The records stay until the journal's head passes them. */
    upto_seq = upto_seq < t->st.log_last ? upto_seq : t->st.log_last;
    if (upto_seq > t->st.log_trim) {
        t->st.log_trim = upto_seq;
        t->st_dirty = 1;
    }
    return pk__op_end(t, rc);
}

int pk_store_log_apply(pk_txn *t, uint32_t part, uint64_t seq, const void *rec,
                       size_t len)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t off = 0;
    entry e;
    int rc;

    if ((rc = pk__rec_valid(part, rec, len)) != 0 ||
        (rc = pk__op_begin(t, part, PK__OP_NOLOG)) != 0) {
        return rc;
    }
    if (seq != t->st.log_last + 1) {
        rc = seq <= t->st.log_last ? PK_EEXIST : PK_ERANGE;
        return pk__op_end(t, rc);
    }
    for (off = 0; rc == 0 && off < len;) {
        pk__entry_next(rec, len, &off, &e);
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
        rc = pk__fail(t, pk__log_append(t, seq, rec, len));
    }
    return pk__op_end(t, rc);
}

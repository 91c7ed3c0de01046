/*
 * pk_store_part: partition-wide operations.  All of them walk one of the
 * ordered DBs by prefix -- a partition is the key range [part, part + 1)
 * in data, log and stats -- or the expiry index by time.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_part.h"

static void stats_fill(pk_txn *t, uint32_t part, const pk__stat *st,
                       pk_part_stats *out)
{
    pk__ctr *c = pk__ctr_get(t->s, part);

    out->keys = st->keys;
    out->bytes = st->bytes;
    out->reads = c ? c->reads : 0;
    out->writes = c ? c->writes : 0;
    out->log_first = st->log_trim + 1;
    out->log_last = st->log_last;
}

int pk_store_part_stats(pk_txn *t, uint32_t part, pk_part_stats *out)
{
    pk__stat st;
    int rc = t->err;

    rc = rc ? rc : pk__stat_load(t, part, &st);
    if (rc == 0) {
        stats_fill(t, part, &st, out);
    }
    return rc;
}

int pk_store_part_next(pk_txn *t, uint64_t from, uint32_t *part,
                       pk_part_stats *out)
{
    pk__stat st;
    uint32_t p;
    int rc = t->err;

    rc = rc ? rc : pk__stat_next(t, from, &p, &st);
    if (rc == 0) {
        *part = p;
        stats_fill(t, p, &st, out);
    }
    return rc;
}

int pk_store_dbsize(pk_txn *t, uint64_t *out)
{
    return pk_store_dbsize_if(t, NULL, NULL, out);
}

int pk_store_dbsize_if(pk_txn *t, pk_part_filter may, void *ctx, uint64_t *out)
{
    pk_part_stats st;
    uint64_t n = 0;
    uint32_t part;
    int rc = 0;

    for (uint64_t p = 0; (rc = pk_store_part_next(t, p, &part, &st)) == 0;
         p = (uint64_t)part + 1) {
        if (may == NULL || may(ctx, part)) {
            n += st.keys;
        }
    }
    if (rc == PK_ENOTFOUND) {
        *out = n;
        rc = 0;
    }
    return rc;
}

int pk_store_part_drop(pk_txn *t, uint32_t part, size_t max_records, int *done)
{
    uint8_t prefix[4];
    size_t n = 0, m = 0;
    int rc = pk__op_begin(t, part, PK__OP_NOLOG | PK__OP_QUIET), all = 0;
    pk__ctr *c;

    if (rc != 0) {
        return rc;
    }
    pk_be32_put(prefix, part);
    /* From now on the log reads as trimmed: its records are going. */
    t->st.log_trim = t->st.log_last;
    t->st_dirty = 1;
    rc = pk__rec_delprefix(t, prefix, 4, max_records, &n);
    if (rc == 0 && (max_records == 0 || n < max_records)) {
        rc = pk__log_drop(t, max_records ? max_records - n : 0, &m, &all);
        all = all && (max_records == 0 || n < max_records);
    }
    if (rc == 0 && all) {
        /* Nothing of the partition is left: forget its stats. */
        memset(&t->st, 0, sizeof(t->st));
        t->st_dirty = 1;
    }
    rc = pk__op_end(t, rc);
    if (rc == 0) {
        if (all && (c = pk__ctr_get(t->s, part)) != NULL) {
            memset(c, 0, sizeof(*c));
        }
        *done = all;
    }
    return rc;
}

#define RELABEL_BATCH (4u << 20) /* bytes of records held between ops */

/* Records taken out of one partition for another: keys and values back
 * to back, each as u32 klen | u32 vlen | key | value. */
typedef struct relabel_buf {
    uint8_t *p;
    size_t len, cap;
} relabel_buf;

static int rb_add(relabel_buf *b, const MDB_val *k, const MDB_val *v)
{
    size_t need = 8 + k->mv_size + v->mv_size;

    if (b->len + need > b->cap) {
        size_t cap = b->cap ? b->cap : 1u << 16;
        while (cap < b->len + need)
            cap *= 2;
        uint8_t *g = realloc(b->p, cap);
        if (g == NULL)
            return PK_ENOMEM;
        b->p = g;
        b->cap = cap;
    }
    pk_be32_put(b->p + b->len, (uint32_t)k->mv_size);
    pk_be32_put(b->p + b->len + 4, (uint32_t)v->mv_size);
    memcpy(b->p + b->len + 8, k->mv_data, k->mv_size);
    memcpy(b->p + b->len + 8 + k->mv_size, v->mv_data, v->mv_size);
    b->len += need;
    return 0;
}

/* One batch out of from: deletes the records at or after seek (plen
 * bytes) in from, up to about limit bytes, keeping copies in b; *more
 * when records of from are left after them. */
static int relabel_take(pk_txn *t, uint32_t from, const uint8_t *seek,
                        size_t plen, size_t limit, relabel_buf *b, int *more)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc = pk__op_begin(t, from, PK__OP_NOLOG | PK__OP_QUIET);

    *more = 0;
    if (rc != 0)
        return rc;
    rc = pk__cursor(t, t->s->data, &c);
    while (rc == 0) {
        k.mv_size = plen;
        k.mv_data = (void *)seek;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND ||
            (rc == 0 && (k.mv_size < 4 || pk_be32_get(k.mv_data) != from))) {
            rc = 0;
            break;
        }
        if (rc != 0) {
            rc = pk__fail(t, pk__err(rc));
        } else if (b->len >= limit) {
            *more = 1;
            break;
        } else {
            rc = rb_add(b, &k, &v);
            rc = rc ? pk__fail(t, rc) : pk__rec_del_here(t, c);
        }
    }
    return pk__op_end(t, rc);
}

/* Writes the records of b into partition to. */
static int relabel_put(pk_txn *t, uint32_t to, relabel_buf *b)
{
    int rc = pk__op_begin(t, to, PK__OP_NOLOG | PK__OP_QUIET);

    for (size_t off = 0; rc == 0 && off < b->len;) {
        uint32_t klen = pk_be32_get(b->p + off);
        uint32_t vlen = pk_be32_get(b->p + off + 4);
        uint8_t *k = b->p + off + 8;
        pk_be32_put(k, to);
        rc = pk__rec_put(t, k, klen, k + klen, vlen);
        off += 8 + (size_t)klen + vlen;
    }
    b->len = 0;
    return pk__op_end(t, rc);
}

int pk_store_part_relabel(pk_txn *t, uint32_t from, uint32_t to, const void *at,
                          size_t at_len, size_t max_bytes, int *done)
{
    uint8_t seek[PK_KEYENC_MAX];
    size_t plen, moved = 0;
    size_t limit =
        max_bytes && max_bytes < RELABEL_BATCH ? max_bytes : RELABEL_BATCH;
    relabel_buf b = {NULL, 0, 0};
    int rc, more = 1;

    if (from == to || pk_keyenc_long(at, at_len))
        return PK_EINVAL;
    rc = pk_keyenc_prefix(from, at, at_len, seek, sizeof(seek), &plen);
    while (rc == 0 && more && (max_bytes == 0 || moved < max_bytes)) {
        rc = relabel_take(t, from, seek, plen, limit, &b, &more);
        moved += b.len;
        if (rc == 0)
            rc = relabel_put(t, to, &b);
    }
    free(b.p);
    if (rc == 0)
        *done = !more;
    return rc;
}

int pk_store_part_middle(pk_txn *t, uint32_t part, uint8_t *buf, size_t cap,
                         size_t *len)
{
    uint8_t start[4];
    uint64_t half, seen = 0;
    const uint8_t *first = NULL;
    size_t first_len = 0;
    pk__stat st;
    pk_keyparts kp;
    MDB_cursor *c;
    MDB_val k, v;
    int rc = pk__read_begin(t, part);

    if (rc != 0 || (rc = pk__stat_load(t, part, &st)) != 0 ||
        (rc = pk__cursor(t, t->s->data, &c)) != 0)
        return rc;
    half = st.bytes / 2;
    pk_be32_put(start, part);
    k.mv_size = 4;
    k.mv_data = start;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 4 || pk_be32_get(k.mv_data) != part)
            break;
        seen += k.mv_size + v.mv_size;
        if (pk_keyenc_parse(k.mv_data, k.mv_size, &kp) != 0)
            return pk__fail(t, PK_ECORRUPT);
        if (kp.sys)
            continue;
        if (first == NULL) {
            first = kp.esc;
            first_len = kp.esc_len;
        }
        /* A short key's META record, past the middle and not the first
         * key (a split there would leave one side empty). */
        if (seen >= half && kp.tag == PK_TAG_META && !kp.longkey &&
            (kp.esc_len != first_len || memcmp(kp.esc, first, first_len)) &&
            kp.esc_len <= cap) {
            *len = pk_keyenc_unescape(kp.esc, kp.esc_len, buf);
            return 0;
        }
    }
    return rc == 0 || rc == MDB_NOTFOUND ? PK_ENOTFOUND : pk__err(rc);
}

int pk_store_flushall(pk_txn *t)
{
    return pk_store_flushall_if(t, NULL, NULL);
}

int pk_store_flushall_if(pk_txn *t, pk_part_filter may, void *ctx)
{
    pk_part_stats st;
    uint32_t part, *parts = NULL, *grown;
    size_t n = 0, cap = 0;
    uint8_t prefix[4];
    int rc;

    /* Collect first: the stats DB changes under each partition's clear. */
    for (uint64_t p = 0; (rc = pk_store_part_next(t, p, &part, &st)) == 0;
         p = (uint64_t)part + 1) {
        if ((st.keys == 0 && st.bytes == 0) ||
            (may != NULL && !may(ctx, part))) {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            grown = realloc(parts, cap * sizeof(*parts));
            if (grown == NULL) {
                free(parts);
                return PK_ENOMEM;
            }
            parts = grown;
        }
        parts[n++] = part;
    }
    rc = rc == PK_ENOTFOUND ? 0 : rc;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if ((rc = pk__op_begin(t, parts[i], 0)) == 0) {
            pk_be32_put(prefix, parts[i]);
            rc = pk__rec_delprefix(t, prefix, 4, 0, NULL);
            rc = pk__op_end(t, rc);
        }
    }
    free(parts);
    return rc;
}

/* Expires the key named by the expiry entry k (when | prefix), at
 * now_ms. */
static int expire_one(pk_txn *t, MDB_cursor *c, const MDB_val *k,
                      uint64_t now_ms)
{
    uint8_t prefix[PK_KEYENC_MAX];
    size_t plen = k->mv_size - 8, n = 0;
    uint8_t key[8 + PK_KEYENC_MAX];
    MDB_val cur = {k->mv_size, key}, v;
    int rc;

    memcpy(key, k->mv_data, k->mv_size);
    memcpy(prefix, (uint8_t *)k->mv_data + 8, plen);
    /* Logged like a DEL, but not counted as a client's write. */
    if ((rc = pk__op_begin(t, pk_be32_get(prefix), PK__OP_QUIET)) != 0) {
        return rc;
    }
    rc = pk__rec_delprefix(t, prefix, plen, 0, &n);
    if (rc == 0 && n > 0) /* and its index entries, in the same record */
        rc = pk__ftidx_forget(t, prefix, plen, now_ms);
    rc = pk__op_end(t, rc);
    if (rc == 0 && n == 0) {
        /* An entry without its key would stop the cycle forever. */
        rc = mdb_cursor_get(c, &cur, &v, MDB_SET);
        rc = rc ? rc : mdb_cursor_del(c, 0);
        rc = pk__fail(t, pk__err(rc));
    }
    return rc;
}

static_assert(PK_EXPIRE_POS_MAX >= PK_KEYENC_MAX + 1,
              "an expiry position holds any expiry key and one byte more");

int pk_store_expire_cycle(pk_txn *t, uint64_t now_ms, size_t max_keys,
                          size_t *expired)
{
    return pk_store_expire_cycle_if(t, now_ms, max_keys, NULL, NULL, NULL,
                                    expired);
}

int pk_store_expire_cycle_if(pk_txn *t, uint64_t now_ms, size_t max_keys,
                             pk_part_filter may, void *ctx, pk_expire_pos *pos,
                             size_t *expired)
{
    uint8_t from[PK_EXPIRE_POS_MAX];
    MDB_cursor *c;
    MDB_val k = {0, from}, v;
    size_t n = 0, skipped = 0;
    int rc, first = 1, more = 0;

    if (t->err != 0 || t->rdonly) {
        return t->err ? t->err : PK_EINVAL;
    }
    if ((rc = mdb_cursor_open(t->txn, t->s->expiry, &c)) != 0) {
        return pk__fail(t, pk__err(rc));
    }
    if (pos && pos->len > 0 && pos->len <= sizeof(from)) {
        memcpy(from, pos->key, pos->len); /* go on after the last cycle */
        k.mv_size = pos->len;
        first = 0;
    }
    while (!(more = n == max_keys || skipped == 4 * max_keys)) {
        /* Entries are deleted under us: look up from where we were. */
        rc = first ? mdb_cursor_get(c, &k, &v, MDB_FIRST)
                   : mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (rc != 0 || k.mv_size < 8 + 4 + 2 || k.mv_size > 8 + PK_KEYENC_MAX ||
            pk_be64_get(k.mv_data) > now_ms) {
            rc = rc == MDB_NOTFOUND ? 0 : pk__err(rc);
            break;
        }
        first = 0;
        memcpy(from, k.mv_data, k.mv_size);
        if (may && !may(ctx, pk_be32_get((uint8_t *)k.mv_data + 8))) {
            from[k.mv_size] = 0; /* the smallest key after this one */
            k.mv_data = from;
            k.mv_size++;
            skipped++;
            continue;
        }
        if ((rc = expire_one(t, c, &k, now_ms)) != 0) {
            break;
        }
        k.mv_data = from; /* deleted: the next entry is at or after it */
        n++;
    }
    mdb_cursor_close(c);
    if (pos) { /* stopped by a bound: resume there; else from the start */
        pos->len = more ? k.mv_size : 0;
        if (more)
            memcpy(pos->key, from, k.mv_size);
    }
    if (rc == 0 && expired != NULL) {
        *expired = n;
    }
    return pk__fail(t, rc);
}

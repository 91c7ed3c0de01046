/*
 * pk_store_stat: per-partition stats (keys, bytes, log positions) -- how
 * they are stored, and how a transaction finds the current ones.
 *
 * Storage.  256 partitions share one record of the stats DB, varint-packed
 * (pk_store_int.h): a partition without state takes one byte, a busy one
 * about a dozen, and Redis's 16384 slots a few dozen pages.
 *
 * Currency.  The stats DB is written only at checkpoints
 * (pk_store_stcache.c); every journal record carries its partition's
 * keys and bytes after the command, and its seq and position are the
 * partition's log_last and log_pos.  So the stats as of any commit are
 *
 *   stats DB row  +  each journal record after info "stats" whose
 *                    position is above the row's log_pos
 *
 * (the row is newer than records at or below its log_pos: changes the
 * journal does not carry -- imports, trims, drops -- make their commit a
 * checkpoint).  Write transactions keep the result in the stats cache;
 * read transactions, whose snapshot may be older, replay the journal
 * tail once into t->ovl when they first ask.  The tail is short: a
 * checkpoint follows every PK__CKPT_RECORDS records.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"

static_assert(PK__SGROUP == 256, "a group is part >> 8");

static size_t varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static int varint_get(const uint8_t *p, size_t len, size_t *off, uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < 64 && *off < len; shift += 7) {
        uint8_t b = p[(*off)++];
        if (shift == 63 && b > 1) {
            break;
        }
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return PK_ECORRUPT;
}

int pk__stat_zero(const pk__stat *st)
{
    uint64_t any = st->keys | st->bytes | st->log_last | st->log_trim;

    return (any | st->log_pos) == 0;
}

size_t pk__stat_encode(uint8_t *p, const pk__stat *st)
{
    uint64_t f[5] = {st->keys, st->bytes, st->log_last,
                     st->log_last - st->log_trim, st->log_pos};
    size_t n = 1;

    p[0] = 0;
    for (unsigned i = 0; i < 5; i++) {
        if (f[i] != 0) {
            p[0] |= (uint8_t)(1u << i);
            n += varint_put(p + n, f[i]);
        }
    }
    return n;
}

static int entry_get(const uint8_t *p, size_t len, size_t *off, pk__stat *st)
{
    uint64_t f[5] = {0, 0, 0, 0, 0};
    uint8_t mask;
    int rc;

    if (*off >= len || (mask = p[*off]) > 0x1F) {
        return PK_ECORRUPT;
    }
    (*off)++;
    for (unsigned i = 0; i < 5; i++) {
        if ((mask & (1u << i)) && (rc = varint_get(p, len, off, &f[i])) != 0) {
            return rc;
        }
    }
    if (f[3] > f[2]) {
        return PK_ECORRUPT; /* log trim below 0 */
    }
    *st = (pk__stat){f[0], f[1], f[2], f[2] - f[3], f[4], 0};
    return 0;
}

int pk__stat_decode(const MDB_val *v, pk__stat *st, uint16_t *offs)
{
    size_t off = 0;
    int rc;

    if (v->mv_size > PK__SGROUP_MAX) {
        return PK_ECORRUPT;
    }
    for (unsigned i = 0; i < PK__SGROUP; i++) {
        if (offs != NULL) {
            offs[i] = (uint16_t)off;
        }
        if ((rc = entry_get(v->mv_data, v->mv_size, &off, &st[i])) != 0) {
            return rc;
        }
    }
    if (offs != NULL) {
        offs[PK__SGROUP] = (uint16_t)off;
    }
    return off == v->mv_size ? 0 : PK_ECORRUPT;
}

/* Group g of the stats DB as t sees it, decoded in t->rgrp. */
static int rgrp_get(pk_txn *t, uint32_t g, const MDB_val *v, pk__stat **out)
{
    static const uint8_t zeros[PK__SGROUP];
    uint8_t kb[4];
    MDB_val k = {4, kb}, d;
    int rc;

    if (t->rgrp_ok && t->rgrp_id == g) {
        *out = t->rgrp;
        return 0;
    }
    t->rgrp_ok = 0;
    if (t->rgrp == NULL &&
        (t->rgrp = malloc(PK__SGROUP * sizeof(*t->rgrp))) == NULL) {
        return PK_ENOMEM;
    }
    if (v == NULL) {
        pk_be32_put(kb, g);
        rc = mdb_get(t->txn, t->s->stats, &k, &d);
        if (rc == MDB_NOTFOUND) {
            d = (MDB_val){sizeof(zeros), (void *)zeros};
        } else if (rc != 0) {
            return pk__fail(t, pk__err(rc));
        }
        v = &d;
    }
    if ((rc = pk__stat_decode(v, t->rgrp, NULL)) != 0) {
        return pk__fail(t, rc);
    }
    t->rgrp_id = g;
    t->rgrp_ok = 1;
    *out = t->rgrp;
    return 0;
}

int pk__stat_row(pk_txn *t, uint32_t part, pk__stat *st)
{
    pk__stat *grp;
    int rc = rgrp_get(t, part / PK__SGROUP, NULL, &grp);

    if (rc == 0) {
        *st = grp[part % PK__SGROUP];
    }
    return rc;
}

/* The overlay: the journal tail replayed over the rows it changes. */

typedef struct ovl_build {
    pk__jrec *r; /* the tail's records: part, pos, seq, keys, bytes */
    size_t n, cap;
} ovl_build;

static int ovl_collect(void *ctx, const pk__jrec *r)
{
    ovl_build *b = ctx;
    pk__jrec *p;
    size_t cap;

    if (b->n == b->cap) {
        cap = b->cap ? b->cap * 2 : 256;
        if ((p = realloc(b->r, cap * sizeof(*p))) == NULL) {
            return PK_ENOMEM;
        }
        b->r = p;
        b->cap = cap;
    }
    b->r[b->n] = *r;
    b->r[b->n].rec = NULL; /* only the header is kept */
    b->n++;
    return 0;
}

static int cmp_rec(const void *a, const void *b)
{
    const pk__jrec *x = a, *y = b;

    if (x->part != y->part) {
        return x->part < y->part ? -1 : 1;
    }
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Builds t->ovl for read transaction t. */
static int ovl_build_all(pk_txn *t)
{
    uint8_t kb[5] = {'s', 't', 'a', 't', 's'};
    MDB_val k = {5, kb}, v;
    ovl_build b = {NULL, 0, 0};
    uint64_t ckpt = 0;
    pk__stat st;
    int rc;

    rc = mdb_get(t->txn, t->s->info, &k, &v);
    if (rc == 0 && v.mv_size == 8) {
        ckpt = pk_be64_get(v.mv_data);
    } else if (rc != MDB_NOTFOUND) {
        return rc == 0 ? PK_ECORRUPT : pk__err(rc);
    }
    if ((rc = pk__log_scan(t, ckpt, ovl_collect, &b)) != 0) {
        free(b.r);
        return rc;
    }
    if (b.n > 0) {
        qsort(b.r, b.n, sizeof(*b.r), cmp_rec);
    }
    t->novl = 0;
    free(t->ovl);
    t->ovl = b.n ? malloc(b.n * sizeof(*t->ovl)) : NULL;
    if (b.n > 0 && t->ovl == NULL) {
        free(b.r);
        return PK_ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < b.n; i++) {
        const pk__jrec *r = &b.r[i];
        if (i + 1 < b.n && b.r[i + 1].part == r->part) {
            continue; /* the last record of each partition wins */
        }
        if ((rc = pk__stat_row(t, r->part, &st)) == 0 && r->pos > st.log_pos) {
            st.keys = r->keys;
            st.bytes = r->bytes;
            st.log_last = r->seq;
            st.log_pos = r->pos;
            t->ovl[t->novl++] = (pk__ovl){r->part, st};
        }
    }
    free(b.r);
    t->ovl_ok = rc == 0;
    return rc;
}

/* Index of the first overlay entry with part >= from (novl: none). */
static size_t ovl_find(const pk_txn *t, uint64_t from)
{
    size_t lo = 0, hi = t->novl;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ovl[mid].part < from) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

int pk__stat_load(pk_txn *t, uint32_t part, pk__stat *st)
{
    size_t i;
    int rc;

    if (!t->rdonly) {
        return pk__stc_load(t, part, st);
    }
    if (!t->ovl_ok && (rc = ovl_build_all(t)) != 0) {
        return rc;
    }
    i = ovl_find(t, part);
    if (i < t->novl && t->ovl[i].part == part) {
        *st = t->ovl[i].st;
        return 0;
    }
    return pk__stat_row(t, part, st);
}

/* The first non-zero row of grp (group g) at or after from, if any. */
static int group_first(const pk__stat *grp, uint32_t g, uint64_t from,
                       uint32_t *part, pk__stat *st)
{
    for (uint64_t p = (uint64_t)g * PK__SGROUP;
         p < (uint64_t)(g + 1) * PK__SGROUP; p++) {
        if (p >= from && !pk__stat_zero(&grp[p % PK__SGROUP])) {
            *part = (uint32_t)p;
            *st = grp[p % PK__SGROUP];
            return 1;
        }
    }
    return 0;
}

/* The first partition >= from with a non-zero row in the stats DB. */
static int row_next(pk_txn *t, uint64_t from, uint32_t *part, pk__stat *st)
{
    pk__stat *grp;
    uint8_t kb[4];
    MDB_val k = {4, kb}, v;
    MDB_cursor *c;
    int rc = 0, mrc;

    /* The common step of a walk: the next partition of the same group. */
    if (t->rgrp_ok && t->rgrp_id == from / PK__SGROUP &&
        group_first(t->rgrp, t->rgrp_id, from, part, st)) {
        return 0;
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->stats, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    pk_be32_put(kb, (uint32_t)(from / PK__SGROUP));
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        rc = k.mv_size == 4 ? rgrp_get(t, pk_be32_get(k.mv_data), &v, &grp)
                            : PK_ECORRUPT;
        if (rc != 0 || group_first(grp, t->rgrp_id, from, part, st)) {
            break;
        }
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc == MDB_NOTFOUND) {
        return PK_ENOTFOUND;
    }
    return pk__fail(t, rc ? rc : pk__err(mrc));
}

int pk__stat_next(pk_txn *t, uint64_t from, uint32_t *part, pk__stat *st)
{
    uint32_t p;
    size_t i;
    int rc;

    if (from > UINT32_MAX) {
        return PK_ENOTFOUND;
    }
    if (!t->rdonly) {
        /* Rows are current right after a checkpoint. */
        rc = pk__stat_checkpoint(t);
        return rc ? rc : row_next(t, from, part, st);
    }
    if (!t->ovl_ok && (rc = ovl_build_all(t)) != 0) {
        return rc;
    }
    /* The smaller of the next row and the next overlay entry; a
     * partition in both takes its overlay stats, which are never zero
     * (they carry a log position). */
    rc = row_next(t, from, &p, st);
    if (rc != 0 && rc != PK_ENOTFOUND) {
        return rc;
    }
    i = ovl_find(t, from);
    if (i < t->novl && (rc == PK_ENOTFOUND || t->ovl[i].part <= p)) {
        *part = t->ovl[i].part;
        *st = t->ovl[i].st;
        return 0;
    }
    if (rc == 0) {
        *part = p;
    }
    return rc;
}

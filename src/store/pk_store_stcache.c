/*
 * pk_store_stcache: the stats cache -- the current stats of every
 * partition a write transaction has touched, and the checkpoints that
 * write them to the stats DB.
 *
 * Rewriting a partition's stats row for every command costs two B-tree
 * descents, and with hundreds of partitions per group commit it would
 * copy most pages of the stats DB at every commit.  Instead:
 *
 *   pk__stc_load     hit: the cached value; miss: the DB row, which is
 *                    current for a group the cache never held
 *   pk__stat_save    changes the entry, logs its old value (undo) and
 *                    lists the group as pending
 *   commit           the journal records carry the new stats; every
 *                    PK__CKPT_RECORDS records, or when a command changed
 *                    what the journal does not carry, the commit is a
 *                    checkpoint: retention, then the pending groups and
 *                    info "stats" = the journal's top, in the same LMDB
 *                    transaction as the data
 *   abort, failure   the undo log restores the entries
 *
 * Invariant: a valid group holds the stats as of the last commit plus the
 * open transaction's changes; a group never loaded has not changed since
 * pk_store_open, whose recovery left the DB rows current.  Only one write
 * transaction is open at a time, and groups are never evicted, so the
 * invariant needs no rereads.  Groups live in an open-addressing table of
 * pointers and never move.  A group also carries its partitions' log
 * holds (pk_store_log_hold), which are in memory and not transactional.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"

#define STC_MIN 64u

static_assert(PK__SGROUP_MAX <= UINT16_MAX, "entry offsets fit in u16");

static uint32_t stc_hash(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

static pk__sgrp *stc_find(pk_store *s, uint32_t g)
{
    pk__sgrp *e;

    if (s->stc == NULL) {
        return NULL;
    }
    for (uint32_t i = stc_hash(g) & s->stc_mask; (e = s->stc[i]) != NULL;
         i = (i + 1) & s->stc_mask) {
        if (e->group == g) {
            return e;
        }
    }
    return NULL;
}

static void stc_place(pk__sgrp **tab, uint32_t mask, pk__sgrp *e)
{
    uint32_t i = stc_hash(e->group) & mask;

    while (tab[i] != NULL) {
        i = (i + 1) & mask;
    }
    tab[i] = e;
}

static int stc_grow(pk_store *s)
{
    uint32_t cap = s->stc ? (s->stc_mask + 1) * 2 : STC_MIN;
    pk__sgrp **n;

    if (cap == 0 || (n = calloc(cap, sizeof(*n))) == NULL) {
        return PK_ENOMEM;
    }
    for (uint32_t i = 0; s->stc != NULL && i <= s->stc_mask; i++) {
        if (s->stc[i] != NULL) {
            stc_place(n, cap - 1, s->stc[i]);
        }
    }
    free(s->stc);
    s->stc = n;
    s->stc_mask = cap - 1;
    return 0;
}

/* Group g, added (invalid, no holds) when missing. */
static int stc_get(pk_store *s, uint32_t g, pk__sgrp **out)
{
    pk__sgrp *e = stc_find(s, g);
    int rc;

    if (e == NULL) {
        if ((s->stc == NULL || (s->stc_used + 1) * 2 > s->stc_mask + 1) &&
            (rc = stc_grow(s)) != 0) {
            return rc;
        }
        if ((e = calloc(1, sizeof(*e))) == NULL) {
            return PK_ENOMEM;
        }
        e->group = g;
        stc_place(s->stc, s->stc_mask, e);
        s->stc_used++;
    }
    *out = e;
    return 0;
}

static int enc_reserve(pk__sgrp *e, size_t n)
{
    uint8_t *p;

    if (n <= e->enc_cap) {
        return 0;
    }
    n = n < 1024 ? 1024 : n;
    if ((p = realloc(e->enc, n)) == NULL) {
        return PK_ENOMEM;
    }
    e->enc = p;
    e->enc_cap = n;
    return 0;
}

/* Loads group e (st, enc, off) from its stats DB row as t sees it. */
static int group_fill(pk_txn *t, pk__sgrp *e)
{
    static const uint8_t zeros[PK__SGROUP];
    uint8_t kb[4];
    MDB_val k = {4, kb}, v;
    int rc;

    pk_be32_put(kb, e->group);
    rc = mdb_get(t->txn, t->s->stats, &k, &v);
    if (rc == MDB_NOTFOUND) {
        v = (MDB_val){sizeof(zeros), (void *)zeros};
    } else if (rc != 0) {
        return pk__err(rc);
    }
    if ((rc = pk__stat_decode(&v, e->st, e->off)) != 0 ||
        (rc = enc_reserve(e, v.mv_size)) != 0) {
        return rc;
    }
    memcpy(e->enc, v.mv_data, v.mv_size);
    memset(e->edirty, 0, sizeof(e->edirty));
    e->valid = 1;
    return 0;
}

/* Group g, valid, for write transaction t. */
static int group_load(pk_txn *t, uint32_t g, pk__sgrp **out)
{
    pk__sgrp *e;
    int rc;

    if ((rc = stc_get(t->s, g, &e)) != 0 ||
        (!e->valid && (rc = group_fill(t, e)) != 0)) {
        return rc;
    }
    *out = e;
    return 0;
}

int pk__stc_load(pk_txn *t, uint32_t part, pk__stat *st)
{
    pk__sgrp *e;
    int rc = group_load(t, part / PK__SGROUP, &e);

    if (rc == 0) {
        *st = e->st[part % PK__SGROUP];
    }
    return rc;
}

/* Room for one more undo log entry. */
static int undo_reserve(pk_txn *t)
{
    size_t cap = t->undo_cap ? t->undo_cap * 2 : 64;
    pk__undo *p;

    if (t->nundo < t->undo_cap) {
        return 0;
    }
    if ((p = realloc(t->undo, cap * sizeof(*p))) == NULL) {
        return PK_ENOMEM;
    }
    t->undo = p;
    t->undo_cap = cap;
    return 0;
}

/* Room for one more pending group. */
static int pending_reserve(pk_store *s)
{
    size_t cap = s->pending_cap ? s->pending_cap * 2 : 64;
    pk__sgrp **p;

    if (s->npending < s->pending_cap) {
        return 0;
    }
    if ((p = realloc(s->pending, cap * sizeof(*p))) == NULL) {
        return PK_ENOMEM;
    }
    s->pending = p;
    s->pending_cap = cap;
    return 0;
}

int pk__stat_save(pk_txn *t, uint32_t part, const pk__stat *st)
{
    pk_store *s = t->s;
    unsigned i = part % PK__SGROUP;
    uint64_t bit = 1ull << (i % 64);
    pk__sgrp *e;
    int rc;

    assert(!t->rdonly);
    /* Room in both lists first: a change must be undoable and listed. */
    if ((rc = undo_reserve(t)) != 0 || (rc = pending_reserve(s)) != 0 ||
        (rc = group_load(t, part / PK__SGROUP, &e)) != 0) {
        return rc;
    }
    if (!(e->undone[i / 64] & bit)) {
        e->undone[i / 64] |= bit;
        t->undo[t->nundo++] = (pk__undo){e, i, e->st[i]};
    }
    if (!e->pending) {
        e->pending = 1;
        s->pending[s->npending++] = e;
    }
    e->edirty[i / 64] |= bit;
    e->st[i] = *st;
    t->saves++;
    return 0;
}

/*
 * Encodes group e into buf (PK__SGROUP_MAX bytes): the changed entries
 * afresh, runs of unchanged ones copied from e->enc; offs gets the new
 * offsets.  Returns the length.
 */
static size_t group_encode(const pk__sgrp *e, uint8_t *buf, uint16_t *offs)
{
    size_t n = 0;
    unsigned i = 0, j, w;
    uint64_t bits;

    while (i < PK__SGROUP) {
        /* j: the first changed entry at or after i (PK__SGROUP: none). */
        for (j = PK__SGROUP, w = i / 64; w < PK__SGROUP / 64; w++) {
            bits = e->edirty[w] & (w == i / 64 ? ~0ull << (i % 64) : ~0ull);
            if (bits != 0) {
                j = w * 64 + (unsigned)__builtin_ctzll(bits);
                break;
            }
        }
        if (j > i) {
            memcpy(buf + n, e->enc + e->off[i], e->off[j] - e->off[i]);
            for (unsigned x = i; x < j; x++) {
                offs[x] = (uint16_t)(n + e->off[x] - e->off[i]);
            }
            n += e->off[j] - e->off[i];
        }
        if (j < PK__SGROUP) {
            offs[j] = (uint16_t)n;
            n += pk__stat_encode(buf + n, &e->st[j]);
        }
        i = j + 1;
    }
    offs[PK__SGROUP] = (uint16_t)n;
    return n;
}

/* Writes group e under cursor c: a put, or a delete when all zero. */
static int group_write(MDB_cursor *c, pk__sgrp *e, uint8_t *buf)
{
    uint16_t offs[PK__SGROUP + 1];
    uint8_t kb[4];
    MDB_val k = {4, kb}, v = {group_encode(e, buf, offs), buf};
    int rc;

    if ((rc = enc_reserve(e, v.mv_size)) != 0) {
        return rc;
    }
    memcpy(e->enc, buf, v.mv_size);
    memcpy(e->off, offs, sizeof(offs));
    memset(e->edirty, 0, sizeof(e->edirty));
    pk_be32_put(kb, e->group);
    if (v.mv_size == PK__SGROUP) { /* every mask zero */
        rc = mdb_cursor_get(c, &k, &v, MDB_SET);
        rc = rc ? rc : mdb_cursor_del(c, 0);
        return rc == MDB_NOTFOUND ? 0 : pk__err(rc);
    }
    return pk__err(mdb_cursor_put(c, &k, &v, 0));
}

static int edirty_any(const pk__sgrp *e)
{
    uint64_t any = 0;

    for (unsigned w = 0; w < PK__SGROUP / 64; w++) {
        any |= e->edirty[w];
    }
    return any != 0;
}

static int cmp_group(const void *a, const void *b)
{
    uint32_t x = (*(pk__sgrp *const *)a)->group;
    uint32_t y = (*(pk__sgrp *const *)b)->group;

    return (x > y) - (x < y);
}

int pk__stat_checkpoint(pk_txn *t)
{
    pk_store *s = t->s;
    uint8_t kb[5] = {'s', 't', 'a', 't', 's'}, vb[8], *buf;
    MDB_val k = {5, kb}, v = {8, vb};
    MDB_cursor *c;
    uint64_t top;
    int rc;

    if (t->err != 0) {
        return t->err;
    }
    /* Walks of the stats DB (pk_store_part_next) call this every step. */
    if (t->ckpt == 2 && t->saves == t->ckpt_saves &&
        t->appended == t->ckpt_appended) {
        return 0;
    }
    if ((rc = pk__log_retain(t)) != 0) {
        return rc;
    }
    top = pk__log_top(t);
    if ((buf = malloc(PK__SGROUP_MAX)) == NULL) {
        return pk__fail(t, PK_ENOMEM);
    }
    t->rgrp_ok = 0; /* the rows change */
    t->ckpt = 2;
    t->ckpt_top = top;
    t->ckpt_saves = t->saves;
    t->ckpt_appended = t->appended;
    /* In key order, neighbouring records share leaf pages.  The groups
     * stay pending until the commit succeeds (pk__stat_end). */
    if (s->npending > 0) {
        qsort(s->pending, s->npending, sizeof(*s->pending), cmp_group);
    }
    rc = mdb_cursor_open(t->txn, s->stats, &c);
    if (rc != 0) {
        free(buf);
        return pk__fail(t, pk__err(rc));
    }
    for (size_t i = 0; rc == 0 && i < s->npending; i++) {
        pk__sgrp *e = s->pending[i];
        /* Unchanged since an earlier checkpoint of this transaction? */
        if (edirty_any(e) || !e->written) {
            rc = group_write(c, e, buf);
            e->written = 1;
        }
    }
    mdb_cursor_close(c);
    free(buf);
    pk_be64_put(vb, top);
    rc = rc ? rc : pk__err(mdb_put(t->txn, s->info, &k, &v, 0));
    rc = rc ? rc : pk__settle_mark(t, top);
    return pk__fail(t, rc);
}

int pk__stat_commit(pk_txn *t)
{
    if (t->rdonly || t->err != 0) {
        return t->err;
    }
    if (t->ckpt || t->s->since_ckpt + t->appended >= PK__CKPT_RECORDS) {
        return pk__stat_checkpoint(t);
    }
    return 0;
}

void pk__stat_end(pk_txn *t, int committed)
{
    pk_store *s = t->s;

    for (size_t i = t->nundo; i-- > 0;) {
        pk__undo *u = &t->undo[i];
        u->g->undone[u->idx / 64] = 0;
        if (!committed) {
            u->g->st[u->idx] = u->st;
        }
    }
    t->nundo = 0;
    if (committed) {
        s->since_ckpt += t->appended;
        s->log_top = pk__log_top(t);
    }
    if (t->ckpt != 2) {
        return;
    }
    /* A checkpoint rewrote the pending groups' enc: now the DB's if the
     * commit succeeded, else matching nothing -- reencode them all. */
    for (size_t i = 0; i < s->npending; i++) {
        s->pending[i]->written = 0;
        if (committed) {
            s->pending[i]->pending = 0;
        } else {
            memset(s->pending[i]->edirty, 0xFF, sizeof(s->pending[i]->edirty));
        }
    }
    if (committed) {
        s->npending = 0;
        s->since_ckpt = 0;
    }
}

uint64_t pk__stat_pend(pk_store *s, uint32_t part)
{
    pk__sgrp *e = stc_find(s, part / PK__SGROUP);

    return e != NULL && e->valid ? e->st[part % PK__SGROUP].pend : 0;
}

uint64_t pk__stat_hold(pk_store *s, uint32_t part)
{
    pk__sgrp *e = stc_find(s, part / PK__SGROUP);

    return e != NULL ? e->hold[part % PK__SGROUP] : 0;
}

int pk__stat_set_hold(pk_store *s, uint32_t part, uint64_t seq)
{
    pk__sgrp *e;
    int rc;

    if (seq == 0 && stc_find(s, part / PK__SGROUP) == NULL) {
        return 0;
    }
    if ((rc = stc_get(s, part / PK__SGROUP, &e)) != 0) {
        return rc;
    }
    e->hold[part % PK__SGROUP] = seq;
    return 0;
}

void pk__stat_free(pk_store *s)
{
    for (uint32_t i = 0; s->stc != NULL && i <= s->stc_mask; i++) {
        if (s->stc[i] != NULL) {
            free(s->stc[i]->enc);
            free(s->stc[i]);
        }
    }
    free(s->stc);
    free(s->pending);
    s->stc = NULL;
    s->pending = NULL;
    s->stc_mask = s->stc_used = 0;
    s->npending = s->pending_cap = 0;
}

static int recover_one(void *ctx, const pk__jrec *r)
{
    pk_txn *t = ctx;
    pk__stat st;
    int rc = pk__stc_load(t, r->part, &st);

    if (rc != 0 || r->pos <= st.log_pos) {
        return rc;
    }
    st.keys = r->keys;
    st.bytes = r->bytes;
    st.log_last = r->seq;
    st.log_pos = r->pos;
    return pk__stat_save(t, r->part, &st);
}

int pk__stat_recover(pk_store *s)
{
    uint8_t kb[5] = {'s', 't', 'a', 't', 's'};
    MDB_val k = {5, kb}, v;
    uint64_t ckpt = 0;
    pk_txn *t;
    int rc;

    if ((rc = pk_txn_begin(s, 0, &t)) != 0) {
        return rc;
    }
    rc = mdb_get(t->txn, s->info, &k, &v);
    if (rc == 0 && v.mv_size == 8) {
        ckpt = pk_be64_get(v.mv_data);
    } else if (rc != MDB_NOTFOUND) {
        rc = rc == 0 ? PK_ECORRUPT : pk__err(rc);
        pk_txn_abort(t);
        return rc;
    }
    rc = pk__log_open(t, ckpt);
    rc = rc ? rc : pk__log_scan(t, ckpt, recover_one, t);
    if (rc != 0) {
        pk_txn_abort(t);
        return rc;
    }
    t->ckpt = t->nundo > 0;
    return pk_txn_commit(t);
}

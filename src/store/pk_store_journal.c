/*
 * pk_store_journal: the change logs of all partitions, stored as one
 * journal in commit order.
 *
 * A log keyed by (part, seq) would put each command's record on a random
 * leaf page -- with commands spread over thousands of partitions that is
 * one B-tree descent and one 4 KiB copy-on-write per command, more than
 * the data write itself.  The journal is keyed by a global position
 * instead, so appends go to its last page (MDB_APPEND) and retention
 * deletes from its first:
 *
 *   pos 1      pos 2      pos 3      pos 4        stats of part 7:
 *   +-------+  +-------+  +-------+  +-------+      log_last 3
 *   |p7 s1  |<-|p7 s2  |  |p9 s1  |  |p7 s3  |      log_pos  4
 *   |prev 0 |  |prev 1 |<-+-------+--|prev 2 |
 *   +-------+  +-------+  +-------+  +-------+
 *
 * Each record names the position of its partition's previous record, and
 * stats.log_pos names the newest, so reading one partition walks its
 * chain backwards -- one lookup per record read, independent of the other
 * partitions.  Every step checks that the record found is (part, seq - 1).
 * A record also carries its partition's keys and bytes after it, which
 * is what lets the stats DB lag behind (pk_store_stat.c).
 *
 * Positions are never reused (pk_store.log_top, kept in info "stats" by
 * every checkpoint, and every commit that deletes records is one), so a
 * stats row's log_pos never names a younger record.  Retention runs only
 * at checkpoints, so the journal may exceed its budget by up to
 * PK__CKPT_RECORDS records in between.
 *
 * Invariants: a partition's records in the journal are exactly those with
 * log_trim < seq <= log_last, plus, after an explicit trim, older ones
 * that wait for the head to pass them (pk_store_log_trim only raises
 * log_trim); retention deletes in position order, which is seq order
 * within a partition, and raises the partition's log_trim to match.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_log.h"

static_assert(PK__JHDR == 4 + 8 + 8 + 8 + 8,
              "journal header: part, seq, prev, keys, bytes");

typedef pk__jrec jrec;

static int jparse(const MDB_val *k, const MDB_val *v, jrec *r)
{
    const uint8_t *p = v->mv_data;

    if (k->mv_size != 8 || v->mv_size < PK__JHDR) {
        return PK_ECORRUPT;
    }
    r->pos = pk_be64_get(k->mv_data);
    r->part = pk_be32_get(p) & ~PK__JDEFER;
    r->deferred = (pk_be32_get(p) & PK__JDEFER) != 0;
    r->seq = pk_be64_get(p + 4);
    r->prev = pk_be64_get(p + 12);
    r->keys = pk_be64_get(p + 20);
    r->bytes = pk_be64_get(p + 28);
    r->rec = p + PK__JHDR;
    r->len = v->mv_size - PK__JHDR;
    return 0;
}

/* Positions c on pos; 0, PK_ENOTFOUND, PK_ECORRUPT or an LMDB error. */
static int jget(MDB_cursor *c, uint64_t pos, jrec *r)
{
    uint8_t kb[8];
    MDB_val k = {8, kb}, v;
    int rc;

    pk_be64_put(kb, pos);
    rc = mdb_cursor_get(c, &k, &v, MDB_SET);
    return rc == 0 ? jparse(&k, &v, r) : pk__err(rc);
}

/* The only entry of rec[len], when it is one PUT or DEL; else 0. */
static int lone_entry(const uint8_t *rec, size_t len, pk__entry *e)
{
    size_t off = 0;

    return pk__entry_next(rec, len, &off, e) == 0 && off == len &&
           e->op != PK__LOG_DELPREFIX;
}

/* A hash of a lone entry's key, never 0. */
static uint32_t key_hash(const pk__entry *e)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < e->klen; i++) {
        h = (h ^ e->key[i]) * 16777619u;
    }
    return h | 1;
}

/* The coalescing hint of t's partition slot for the open operation. */
static pk__coal *coal_slot(pk_txn *t)
{
    return &t->coal[t->op_part % PK__COAL_SLOTS];
}

int pk__log_append(pk_txn *t, uint64_t seq, const void *rec, size_t len)
{
    uint8_t kb[8], *p;
    MDB_val k = {8, kb}, v = {PK__JHDR + len, NULL};
    MDB_cursor *c;
    pk__entry e;
    int rc;

    if ((rc = pk__cursor(t, t->s->log, &c)) != 0) {
        return rc;
    }
    if (t->log_next == 0) {
        t->log_next = t->s->log_top + 1;
    }
    pk_be64_put(kb, t->log_next);
    /* rec never points into this map (op_end's buffer, or a record from
     * another node), so it survives the put. */
    rc = mdb_cursor_put(c, &k, &v, MDB_APPEND | MDB_RESERVE);
    if (rc != 0) {
        return pk__err(rc);
    }
    p = v.mv_data;
    pk_be32_put(p, t->op_part | (t->op_flags & PK__OP_DEFER ? PK__JDEFER : 0));
    pk_be64_put(p + 4, seq);
    pk_be64_put(p + 12, t->st.log_pos);
    pk_be64_put(p + 20, t->st.keys);
    pk_be64_put(p + 28, t->st.bytes);
    if (len > 0) {
        memcpy(p + PK__JHDR, rec, len);
    }
    t->st.log_last = seq;
    t->st.log_pos = t->log_next++;
    t->st_dirty = 1;
    t->appended++;
    *coal_slot(t) = (pk__coal){t->st.log_pos, t->op_part,
                               lone_entry(rec, len, &e) ? key_hash(&e) : 0};
    return 0;
}

/*
 * Coalescing: a hot key written many times in one group commit would cost
 * every follower one record per write; its newest write supersedes the
 * others.  Nothing outside this transaction has seen the record replaced
 * (streams and moves read committed records), and whoever waits for its
 * seq -- a reply, WAIT -- now waits for the record that carries the newer
 * write too.  A reply cache keyed by log position must not keep what it
 * read of a record still open to this (pk_store_log_keepable).
 */
int pk__log_coalesce(pk_txn *t, const void *rec, size_t len)
{
    uint8_t kb[8], *p;
    MDB_val k = {8, kb}, v;
    MDB_cursor *c;
    pk__entry a, b;
    uint64_t prev;
    jrec old;
    int rc;

    const pk__coal *hint = coal_slot(t);

    if ((t->op_flags & (PK__OP_DEFER | PK__OP_RAW)) || t->log_next == 0 ||
        t->st.log_pos <= t->s->log_top || !lone_entry(rec, len, &b))
        return 0;
    /* The partition's newest record is known here: another key's, or no
     * lone entry at all, takes no lookup. */
    if (hint->part == t->op_part && hint->pos == t->st.log_pos &&
        hint->khash != key_hash(&b))
        return 0;
    if ((rc = pk__cursor(t, t->s->log, &c)) != 0)
        return rc;
    if ((rc = jget(c, t->st.log_pos, &old)) != 0)
        return rc == PK_ENOTFOUND ? PK_ECORRUPT : rc;
    if (old.part != t->op_part || old.deferred || old.seq != t->st.log_last ||
        !lone_entry(old.rec, old.len, &a) || a.klen != b.klen ||
        memcmp(a.key, b.key, a.klen) != 0)
        return 0;
    prev = old.prev;
    pk_be64_put(kb, t->st.log_pos);
    v.mv_size = PK__JHDR + len;
    v.mv_data = NULL;
    if ((rc = mdb_cursor_put(c, &k, &v, MDB_CURRENT | MDB_RESERVE)) != 0)
        return pk__err(rc);
    p = v.mv_data;
    pk_be32_put(p, t->op_part);
    pk_be64_put(p + 4, t->st.log_last);
    pk_be64_put(p + 12, prev);
    pk_be64_put(p + 20, t->st.keys);
    pk_be64_put(p + 28, t->st.bytes);
    if (len > 0)
        memcpy(p + PK__JHDR, rec, len);
    t->st_dirty = 1;
    t->appended++; /* the journal carries the stats after it */
    return 1;
}

int pk_store_log_keepable(pk_txn *t, uint32_t part, uint64_t *seq)
{
    pk__stat st;
    int rc = t->err ? t->err : pk__stat_load(t, part, &st);

    if (rc != 0)
        return rc;
    *seq = st.log_last;
    return !t->rdonly && t->log_next != 0 && st.log_pos > t->s->log_top
               ? PK_EBUSY
               : 0;
}

uint64_t pk__log_top(const pk_txn *t)
{
    return t->log_next != 0 ? t->log_next - 1 : t->s->log_top;
}

int pk__log_open(pk_txn *t, uint64_t ckpt)
{
    MDB_val k, v;
    MDB_cursor *c;
    int rc;

    if ((rc = pk__cursor(t, t->s->log, &c)) != 0) {
        return rc;
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    if (rc == 0 && k.mv_size != 8) {
        return pk__fail(t, PK_ECORRUPT);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return pk__fail(t, pk__err(rc));
    }
    t->s->log_top = ckpt;
    if (rc == 0 && pk_be64_get(k.mv_data) > ckpt) {
        t->s->log_top = pk_be64_get(k.mv_data);
    }
    return 0;
}

int pk__log_scan(pk_txn *t, uint64_t after,
                 int (*fn)(void *ctx, const pk__jrec *r), void *ctx)
{
    uint8_t kb[8];
    MDB_val k = {8, kb}, v;
    MDB_cursor *c;
    jrec r;
    int rc = 0, mrc;

    if (after == UINT64_MAX) {
        return 0;
    }
    if ((rc = pk__cursor(t, t->s->log, &c)) != 0) {
        return rc;
    }
    pk_be64_put(kb, after + 1);
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if ((rc = jparse(&k, &v, &r)) != 0 || (rc = fn(ctx, &r)) != 0) {
            return pk__fail(t, rc);
        }
    }
    return mrc == MDB_NOTFOUND ? 0 : pk__fail(t, pk__err(mrc));
}

/*
 * Extends w (part's entry of the walk cache) to seq st->log_last by
 * walking the chain back from st->log_pos to the first seq w lacks.
 * PK_ECORRUPT when the chain is not what the stats promise.
 */
static int walk_extend(MDB_cursor *c, pk__wcache *w, const pk__stat *st)
{
    uint64_t have = w->first + w->n, pos = st->log_pos, k;
    jrec r;
    int rc;

    if (st->log_last < have) {
        return 0; /* the cache knows more than this transaction sees */
    }
    k = st->log_last - have + 1;
    if (w->n + k > SIZE_MAX / sizeof(*w->pos)) {
        return PK_ENOMEM;
    }
    if (w->n + k > w->cap) {
        size_t cap = (size_t)(w->n + k) * 2;
        uint64_t *p = realloc(w->pos, cap * sizeof(*p));
        if (p == NULL) {
            return PK_ENOMEM;
        }
        w->pos = p;
        w->cap = cap;
    }
    for (uint64_t i = k; i-- > 0; pos = r.prev) {
        rc = jget(c, pos, &r);
        if (rc == PK_ENOTFOUND ||
            (rc == 0 && (r.part != w->part || r.seq != have + i))) {
            rc = PK_ECORRUPT;
        }
        if (rc != 0) {
            return rc;
        }
        w->pos[w->n + i] = pos;
    }
    w->n += k;
    return 0;
}

/*
 * One pass over part's records *from..st->log_last: 0, a callback's
 * value, or an error.  When a cached position no longer holds its record,
 * w is emptied, *stale set and *from left at that record.
 */
static int walk(pk_txn *t, MDB_cursor *c, pk__wcache *w, const pk__stat *st,
                uint64_t *from, pk_log_cb cb, void *ctx, int *stale)
{
    uint64_t first = *from;
    jrec r;
    int rc;

    *stale = 0;
    if (w->n == 0 || first < w->first || first > w->first + w->n) {
        w->first = first; /* start over from here */
        w->n = 0;
    } else if (first - w->first > PK__WCACHE_MAX / 2) {
        uint64_t d = first - w->first; /* every reader is past these */
        memmove(w->pos, w->pos + d, (size_t)(w->n - d) * sizeof(*w->pos));
        w->first = first;
        w->n -= d;
    }
    if ((rc = walk_extend(c, w, st)) != 0) {
        w->n = 0;
        return pk__fail(t, rc);
    }
    for (uint64_t seq = first; seq <= st->log_last; seq++) {
        rc = jget(c, w->pos[seq - w->first], &r);
        if (rc == PK_ENOTFOUND ||
            (rc == 0 && (r.part != w->part || r.seq != seq))) {
            w->n = 0;
            *stale = 1;
            *from = seq;
            return 0;
        }
        if (rc != 0) {
            return pk__fail(t, rc);
        }
        if ((rc = cb(ctx, seq, r.rec, r.len)) != 0) {
            return rc;
        }
    }
    return 0;
}

int pk__log_walk(pk_txn *t, uint32_t part, const pk__stat *st, uint64_t first,
                 pk_log_cb cb, void *ctx)
{
    pk__wcache *w = &t->s->wcache[part % PK__WCACHE_WAYS];
    MDB_cursor *c;
    int rc, stale;

    if ((rc = pk__cursor(t, t->s->log, &c)) != 0) {
        return rc;
    }
    if (w->part != part) {
        w->part = part;
        w->n = 0;
    }
    /* A cached position that no longer holds its record (an aborted
     * transaction's, a dropped partition's) costs one walk from scratch,
     * which checks the chain itself; callbacks already called are not
     * called again. */
    rc = walk(t, c, w, st, &first, cb, ctx, &stale);
    if (rc == 0 && stale) {
        rc = walk(t, c, w, st, &first, cb, ctx, &stale);
        rc = rc == 0 && stale ? pk__fail(t, PK_ECORRUPT) : rc;
    }
    if (w->cap > PK__WCACHE_MAX && w->n < PK__WCACHE_MAX / 4) {
        free(w->pos); /* a long walk's array is not kept */
        w->pos = NULL;
        w->cap = w->n = 0;
    }
    return rc;
}

int pk__log_drop(pk_txn *t, size_t limit, size_t *n, int *all)
{
    uint64_t pos = t->st.log_pos, want = 0;
    size_t done = 0;
    MDB_cursor *c;
    jrec r;
    int rc;

    if ((rc = pk__cursor(t, t->s->log, &c)) != 0) {
        return rc;
    }
    while (pos != 0 && (limit == 0 || done < limit)) {
        rc = jget(c, pos, &r);
        if (rc == PK_ENOTFOUND ||
            (rc == 0 && (r.part != t->op_part || r.seq > t->st.log_last ||
                         (want != 0 && r.seq != want)))) {
            pos = 0; /* the chain ends here */
            rc = 0;
            break;
        }
        if (rc != 0 || (rc = pk__err(mdb_cursor_del(c, 0))) != 0) {
            return pk__fail(t, rc);
        }
        done++;
        want = r.seq - 1;
        pos = want != 0 ? r.prev : 0;
    }
    t->st.log_pos = pos;
    t->st_dirty = 1;
    *n = done;
    *all = pos == 0;
    return 0;
}

/* Bytes the log DB takes in the map. */
static uint64_t jsize(const MDB_stat *ms)
{
    return (uint64_t)ms->ms_psize *
           (ms->ms_branch_pages + ms->ms_leaf_pages + ms->ms_overflow_pages);
}

/* Saves st as part's stats when dirty; 0 or an error (the txn failed). */
static int retain_save(pk_txn *t, uint32_t part, const pk__stat *st, int dirty)
{
    int rc = dirty ? pk__stat_save(t, part, st) : 0;

    return rc != 0 ? pk__fail(t, rc) : 0;
}

int pk__log_retain(pk_txn *t)
{
    uint64_t keep = t->s->log_keep, hold;
    uint32_t part = UINT32_MAX; /* whose stats st holds */
    MDB_cursor *c;
    MDB_stat ms;
    MDB_val k, v;
    pk__stat st;
    jrec r;
    int rc, over, dirty = 0;

    if ((rc = pk__cursor(t, t->s->log, &c)) != 0) {
        return rc;
    }
    /* Head records go while the journal is over its budget, and those
     * already trimmed (pk_store_log_trim) go anyway.  A run of records of
     * one partition saves its stats once. */
    for (;;) {
        over = 0;
        if (keep != PK_STORE_LOG_KEEP_ALL) {
            if ((rc = mdb_stat(t->txn, t->s->log, &ms)) != 0) {
                return pk__fail(t, pk__err(rc));
            }
            over = jsize(&ms) > keep;
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
        if (rc == MDB_NOTFOUND) {
            return retain_save(t, part, &st, dirty);
        }
        rc = rc ? pk__err(rc) : jparse(&k, &v, &r);
        if (rc == 0 && r.part != part) {
            rc = retain_save(t, part, &st, dirty);
            dirty = 0;
            part = r.part;
            rc = rc ? rc : pk__stat_load(t, part, &st);
        }
        if (rc != 0) {
            return pk__fail(t, rc);
        }
        if (r.deferred && r.pos > pk__settled(t)) {
            /* not in the data yet (pk_store_settle.c) */
            return retain_save(t, part, &st, dirty);
        }
        if (r.seq > st.log_trim) {
            hold = pk__stat_hold(t->s, r.part);
            if (!over || (hold != 0 && r.seq >= hold)) {
                /* still wanted, and so is what follows */
                return retain_save(t, part, &st, dirty);
            }
            st.log_trim = r.seq;
            dirty = 1;
        }
        if (st.log_pos == r.pos) {
            st.log_pos = 0; /* no record left to point to */
            dirty = 1;
        }
        if ((rc = mdb_cursor_del(c, 0)) != 0) {
            return pk__fail(t, pk__err(rc));
        }
    }
}

/*
 * pk_store_settle: deferred records -- a follower's log ahead of its data.
 *
 * A follower must have a record in its log before it acknowledges it, but
 * the data DB can wait.  pk_store_log_defer appends the record to the
 * journal, flagged deferred, and changes nothing but the partition's log
 * position; pk_store_log_settle later applies the deferred records in one
 * pass.  Applied one command at a time, a record costs a B-tree descent
 * and a 4 KiB copy-on-write of its leaf per group commit; settled in
 * batches of thousands, sorted by key with only the last write to a key
 * kept, neighbouring keys share their descent and their leaf's copy.
 *
 *   journal   ... | d | . | d | d | . | d | d |      d deferred
 *                         ^settled            ^top    . other records
 *                         deferred records above it are not in the data
 *
 * Invariants:
 *   - info "settled" = S: every deferred record at a journal position
 *     <= S is in the data DB, none above it is; retention keeps those
 *     above (pk__log_retain).
 *   - A partition's stats entry names in pend its newest deferred record
 *     above S (memory only; at open every deferred record is settled).
 *     Any use of a partition's data waits for it: a write transaction
 *     settles first (pk__part_ready, called by pk__op_begin and
 *     pk__read_begin), a read-only one gets PK_EBUSY.
 *   - A deferred record's header carries its partition's keys and bytes
 *     as they are in the data, so the stats stay those of the data; a
 *     settle changes them without a journal record, so its commit is a
 *     checkpoint (pk__op_end).
 *   - Order: within a run of PUT and DEL entries only a key's last entry
 *     matters, so a run may be sorted; a DELPREFIX entry keeps its place
 *     between runs.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_log.h"

#define SETTLE_STOP 1 /* collect: the batch is full */

/* One entry of a deferred record, borrowed from the journal. */
typedef struct sent {
    uint32_t part;
    uint32_t klen;
    uint64_t order; /* its place in journal order */
    const uint8_t *key;
    const uint8_t *val;
    uint32_t vlen;
    uint8_t op;
} sent;

typedef struct batch {
    size_t max;    /* records to take, 0 no bound */
    size_t nrec;   /* records taken */
    uint64_t upto; /* journal position of the last one */
    sent *e;       /* owned */
    size_t n, cap;
} batch;

static const uint8_t settled_key[7] = {'s', 'e', 't', 't', 'l', 'e', 'd'};

uint64_t pk__settled(const pk_txn *t)
{
    return t->settled != 0 ? t->settled : t->s->settled;
}

/* Records pos as settled in t (info "settled"). */
static int mark(pk_txn *t, uint64_t pos)
{
    uint8_t vb[8];
    MDB_val k = {sizeof(settled_key), (void *)settled_key}, v = {8, vb};

    pk_be64_put(vb, pos);
    t->settled = pos;
    return pk__fail(t, pk__err(mdb_put(t->txn, t->s->info, &k, &v, 0)));
}

int pk__settle_mark(pk_txn *t, uint64_t top)
{
    if (!t->s->settle_open || pk_store_log_unsettled(t) != 0 ||
        pk__settled(t) >= top) {
        return 0;
    }
    return mark(t, top);
}

void pk__settle_end(pk_txn *t, int committed)
{
    if (!committed) {
        return;
    }
    if (t->settled != 0) {
        t->s->settled = t->settled;
    }
    t->s->unsettled += (uint64_t)t->unsettled;
}

uint64_t pk_store_log_unsettled(const pk_txn *t)
{
    return t->s->unsettled + (uint64_t)t->unsettled;
}

static int collect(void *ctx, const pk__jrec *r)
{
    batch *b = ctx;
    pk__entry e;
    size_t off = 0;
    int rc;

    if (!r->deferred) {
        return 0;
    }
    if (b->max != 0 && b->nrec == b->max) {
        return SETTLE_STOP;
    }
    while (off < r->len) {
        if ((rc = pk__entry_next(r->rec, r->len, &off, &e)) != 0) {
            return rc;
        }
        if (b->n == b->cap) {
            size_t cap = b->cap ? b->cap * 2 : 1024;
            sent *p = realloc(b->e, cap * sizeof(*p));
            if (p == NULL) {
                return PK_ENOMEM;
            }
            b->e = p;
            b->cap = cap;
        }
        b->e[b->n] = (sent){r->part, (uint32_t)e.klen, b->n, e.key,
                            e.val,   (uint32_t)e.vlen, e.op};
        b->n++;
    }
    b->nrec++;
    b->upto = r->pos;
    return 0;
}

static int cmp_key(const sent *x, const sent *y)
{
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c;

    if (x->part != y->part) {
        return x->part < y->part ? -1 : 1;
    }
    if ((c = memcmp(x->key, y->key, n)) != 0) {
        return c;
    }
    return (x->klen > y->klen) - (x->klen < y->klen);
}

static int cmp_sent(const void *a, const void *b)
{
    const sent *x = a, *y = b;
    int c = cmp_key(x, y);

    return c != 0 ? c : (x->order > y->order) - (x->order < y->order);
}

/* Makes part the open operation's partition; its pend goes if settled. */
static int frame(pk_txn *t, uint32_t part, uint64_t upto)
{
    int rc;

    if (t->op_open && t->op_part == part) {
        return 0;
    }
    if (t->op_open && (rc = pk__op_end(t, 0)) != 0) {
        return rc;
    }
    if ((rc = pk__op_begin(t, part,
                           PK__OP_NOLOG | PK__OP_QUIET | PK__OP_RAW)) != 0) {
        return rc;
    }
    if (t->st.pend != 0 && t->st.pend <= upto) {
        t->st.pend = 0;
        t->st_dirty = 1;
    }
    return 0;
}

static int apply(pk_txn *t, const sent *e, uint64_t upto)
{
    uint8_t kb[PK_KEYENC_MAX];
    int rc;

    if (e->klen + 4 > sizeof(kb)) {
        return pk__fail(t, PK_ECORRUPT);
    }
    if ((rc = frame(t, e->part, upto)) != 0) {
        return rc;
    }
    pk_be32_put(kb, e->part);
    memcpy(kb + 4, e->key, e->klen);
    switch (e->op) {
    case PK__LOG_PUT:
        return pk__rec_put(t, kb, 4 + e->klen, e->val, e->vlen);
    case PK__LOG_DEL:
        return pk__rec_del(t, kb, 4 + e->klen, NULL);
    }
    return pk__rec_delprefix(t, kb, 4 + e->klen, 0, NULL);
}

/* Applies b's entries: sorted runs between DELPREFIX entries. */
static int apply_batch(pk_txn *t, batch *b)
{
    size_t i = 0, j;
    int rc = 0;

    while (rc == 0 && i < b->n) {
        if (b->e[i].op == PK__LOG_DELPREFIX) {
            rc = apply(t, &b->e[i++], b->upto);
            continue;
        }
        for (j = i; j < b->n && b->e[j].op != PK__LOG_DELPREFIX; j++) {
        }
        qsort(b->e + i, j - i, sizeof(*b->e), cmp_sent);
        for (; rc == 0 && i < j; i++) {
            if (i + 1 < j && cmp_key(&b->e[i], &b->e[i + 1]) == 0) {
                continue; /* a later entry writes this key */
            }
            rc = apply(t, &b->e[i], b->upto);
        }
    }
    if (t->op_open) {
        rc = pk__op_end(t, rc);
    }
    return rc;
}

/* Settles up to max records (0 no bound); *n gets how many. */
static int settle(pk_txn *t, size_t max, size_t *n)
{
    batch b = {max, 0, 0, NULL, 0, 0};
    int rc = pk__log_scan(t, pk__settled(t), collect, &b);

    if (rc == SETTLE_STOP) {
        rc = 0;
    }
    rc = rc ? pk__fail(t, rc) : apply_batch(t, &b);
    free(b.e);
    if (rc == 0 && b.nrec > 0) {
        t->unsettled -= (int64_t)b.nrec;
        rc = mark(t, b.upto);
    }
    *n = rc == 0 ? b.nrec : 0;
    return rc;
}

int pk_store_log_settle(pk_txn *t, size_t max_records, size_t *n)
{
    size_t done = 0;
    int rc = t->err;

    if (rc == 0 && (t->rdonly || t->op_open)) {
        rc = PK_EINVAL;
    }
    if (rc == 0 && pk_store_log_unsettled(t) > 0) {
        rc = settle(t, max_records, &done);
    }
    if (n != NULL) {
        *n = done;
    }
    return rc;
}

int pk_store_log_defer(pk_txn *t, uint32_t part, uint64_t seq, const void *rec,
                       size_t len)
{
    int rc;

    if ((rc = pk__rec_valid(part, rec, len)) != 0 ||
        (rc = pk__op_begin(t, part, PK__OP_NOLOG | PK__OP_DEFER)) != 0) {
        return rc;
    }
    if (seq != t->st.log_last + 1) {
        rc = seq <= t->st.log_last ? PK_EEXIST : PK_ERANGE;
        return pk__op_end(t, rc);
    }
    rc = pk__fail(t, pk__log_append(t, seq, rec, len));
    if (rc == 0) {
        t->st.pend = t->st.log_pos;
        t->unsettled++;
    }
    return pk__op_end(t, rc);
}

int pk__part_ready(pk_txn *t, uint32_t part)
{
    pk__stat st;
    int rc;

    if (pk_store_log_unsettled(t) == 0 && !t->rdonly) {
        return 0;
    }
    if (t->rdonly) {
        return pk__stat_pend(t->s, part) != 0 ? PK_EBUSY : 0;
    }
    if ((rc = pk__stc_load(t, part, &st)) != 0) {
        return pk__fail(t, rc);
    }
    return st.pend != 0 ? pk_store_log_settle(t, 0, NULL) : 0;
}

int pk__settle_open(pk_store *s)
{
    MDB_val k = {sizeof(settled_key), (void *)settled_key}, v;
    pk_txn *t;
    size_t n = 0;
    int rc;

    if ((rc = pk_txn_begin(s, 0, &t)) != 0) {
        return rc;
    }
    rc = mdb_get(t->txn, s->info, &k, &v);
    if (rc == 0 && v.mv_size == 8) {
        s->settled = pk_be64_get(v.mv_data);
    } else if (rc != MDB_NOTFOUND) {
        pk_txn_abort(t);
        return rc == 0 ? PK_ECORRUPT : pk__err(rc);
    }
    /* What was deferred before a crash or a close is settled now; the
     * count starts from 0. */
    rc = settle(t, 0, &n);
    t->unsettled = 0;
    if (rc != 0 || n == 0) {
        pk_txn_abort(t);
    } else {
        rc = pk_txn_commit(t);
    }
    s->settle_open = rc == 0;
    return rc;
}

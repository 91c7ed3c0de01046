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
 * A batch is applied a slice at a time (pk_store_log_settle's
 * max_changes), so that a node keeps serving while it settles.
 *
 * Invariants:
 *   - info "settled" = S: every deferred record at a journal position
 *     <= S is in the data DB; those above are not, or (while a batch is
 *     under way) partly; retention keeps them (pk__log_retain).
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

/*
 * A batch: every deferred record that was unsettled when it was made,
 * its entries copied (the journal pages may move between transactions),
 * sorted and with superseded writes dropped, applied a slice at a time
 * from next.  Only when the last slice is applied do its partitions lose
 * their pend and settled rise to upto; a crash in between replays the
 * whole batch at open, which is harmless (each entry sets or deletes
 * whole records, and the record layer recounts against the data).
 */
typedef struct sop {
    uint32_t part;
    uint32_t klen, vlen;
    uint8_t op;
    uint64_t order; /* its place in journal order */
    size_t off;     /* key at arena + off, its value right after */
    /* 16 bytes of the key from hoff on, big-endian, zero-padded, where
     * the bytes before hoff are those of every key of its partition in
     * the run: most comparisons end here, without a cache miss in the
     * arena. */
    uint64_t head[2];
    uint32_t hoff;
} sop;

struct pk__sbatch {
    sop *ops; /* owned */
    size_t n, cap, next;
    uint8_t *arena; /* owned */
    size_t alen, acap;
    uint64_t upto; /* journal position of its last record */
    uint64_t nrec; /* records in it */
};

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

void pk__sbatch_free(pk__sbatch *b)
{
    if (b != NULL) {
        free(b->ops);
        free(b->arena);
        free(b);
    }
}

void pk__settle_end(pk_txn *t, int committed)
{
    pk_store *s = t->s;

    if (committed) {
        if (t->settled != 0) {
            s->settled = t->settled;
        }
        s->unsettled += (uint64_t)t->unsettled;
        pk__sbatch_free(t->sb_fin);
    } else {
        if (t->sb_made) {
            pk__sbatch_free(s->sb); /* it may hold this txn's records */
            s->sb = NULL;
        }
        if (t->sb_fin != NULL) {
            s->sb = t->sb_fin;
        }
        if (t->sb_touched && s->sb != NULL) {
            s->sb->next = t->sb_next; /* its slices are undone */
        }
    }
    t->sb_fin = NULL;
}

uint64_t pk_store_log_unsettled(const pk_txn *t)
{
    return t->s->unsettled + (uint64_t)t->unsettled;
}

int pk_store_log_settling(const pk_store *s)
{
    return s->sb != NULL;
}

static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 1024;
    void *q;

    if (need <= *cap) {
        return 0;
    }
    while (n < need) {
        n *= 2;
    }
    if (n > SIZE_MAX / size || (q = realloc(*p, n * size)) == NULL) {
        return PK_ENOMEM;
    }
    *p = q;
    *cap = n;
    return 0;
}

static void key_head(const uint8_t *key, size_t klen, uint64_t head[2])
{
    uint8_t b[16] = {0};

    memcpy(b, key, klen < 16 ? klen : 16);
    head[0] = pk_be64_get(b);
    head[1] = pk_be64_get(b + 8);
}

static int collect(void *ctx, const pk__jrec *r)
{
    pk__sbatch *b = ctx;
    pk__entry e;
    size_t off = 0;
    int rc;

    if (!r->deferred) {
        return 0;
    }
    while (off < r->len) {
        if ((rc = pk__entry_next(r->rec, r->len, &off, &e)) != 0 ||
            (rc = reserve((void **)&b->ops, &b->cap, b->n + 1,
                          sizeof(*b->ops))) != 0 ||
            (rc = reserve((void **)&b->arena, &b->acap,
                          b->alen + e.klen + e.vlen + 1, 1)) != 0) {
            return rc;
        }
        b->ops[b->n] = (sop){r->part, (uint32_t)e.klen, (uint32_t)e.vlen, e.op,
                             b->n,    b->alen,          {0, 0},           0};
        key_head(e.key, e.klen, b->ops[b->n].head);
        if (e.klen > 0) {
            memcpy(b->arena + b->alen, e.key, e.klen);
        }
        if (e.vlen > 0) {
            memcpy(b->arena + b->alen + e.klen, e.val, e.vlen);
        }
        b->alen += e.klen + e.vlen;
        b->n++;
    }
    b->nrec++;
    b->upto = r->pos;
    return 0;
}

static int cmp_key(const sop *x, const sop *y, const uint8_t *arena)
{
    size_t n = x->klen < y->klen ? x->klen : y->klen, from = 0;
    int c;

    if (x->part != y->part) {
        return x->part < y->part ? -1 : 1;
    }
    if (x->hoff == y->hoff) { /* the bytes before hoff are alike */
        for (int i = 0; i < 2; i++) {
            if (x->head[i] != y->head[i]) {
                return x->head[i] < y->head[i] ? -1 : 1;
            }
        }
        from = x->hoff + 16;
    }
    if (n > from && (c = memcmp(arena + x->off + from, arena + y->off + from,
                                n - from)) != 0) {
        return c;
    }
    return (x->klen > y->klen) - (x->klen < y->klen);
}

static int cmp_sop(const void *a, const void *b, void *arena)
{
    const sop *x = a, *y = b;
    int c = cmp_key(x, y, arena);

    return c != 0 ? c : (x->order > y->order) - (x->order < y->order);
}

/*
 * Sorts ops[0..n) stably by partition: a counting pass per byte of the
 * partition id that varies (an LSD radix sort).  Bytes, not wider digits:
 * 256 buckets' write positions stay in the first-level cache, where
 * 65,536 scatter each entry to a cold line -- which, with other processes
 * on the CPU, cost a follower more than the comparisons it spares.  0, or
 * -1 when memory is short (ops unchanged).
 */
static int sort_by_part(sop *ops, size_t n)
{
    sop *tmp = malloc(n * sizeof(*tmp)), *from = ops, *to = tmp, *swap;
    size_t at[256];
    uint32_t first = n ? ops[0].part : 0, vary = 0;

    if (tmp == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        vary |= ops[i].part ^ first;
    }
    for (unsigned shift = 0; shift < 32; shift += 8) {
        size_t sum = 0;
        if (((vary >> shift) & 0xFF) == 0) {
            continue; /* every id alike in this byte */
        }
        memset(at, 0, sizeof(at));
        for (size_t i = 0; i < n; i++) {
            at[(from[i].part >> shift) & 0xFF]++;
        }
        for (size_t d = 0; d < 256; d++) {
            size_t c = at[d];
            at[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            to[at[(from[i].part >> shift) & 0xFF]++] = from[i];
        }
        swap = from;
        from = to;
        to = swap;
    }
    if (from != ops) {
        memcpy(ops, from, n * sizeof(*ops));
    }
    free(tmp);
    return 0;
}

/*
 * Sorts ops[0..n) by key, then journal order: by partition first (a
 * counting sort), then each partition's entries by comparison (insertion
 * for the usual few): a fraction of the comparisons of one sort of the
 * whole run, and most of them end at the keys' heads.
 */
/* Moves the heads of ops[0..n), all of one partition, past the prefix
 * their keys share (keys of one hash tag, of one table...). */
static void skip_common(sop *ops, size_t n, const uint8_t *arena)
{
    const uint8_t *k0 = arena + ops[0].off;
    size_t common = ops[0].klen;

    for (size_t i = 1; i < n && common > 0; i++) {
        const uint8_t *k = arena + ops[i].off;
        size_t m = ops[i].klen < common ? ops[i].klen : common, l = 0;
        while (l < m && k[l] == k0[l]) {
            l++;
        }
        common = l;
    }
    if (common == 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        ops[i].hoff = (uint32_t)common;
        key_head(arena + ops[i].off + common, ops[i].klen - common,
                 ops[i].head);
    }
}

static void sort_run(sop *ops, size_t n, uint8_t *arena)
{
    size_t i = 0, j;

    if (sort_by_part(ops, n) != 0) {
        qsort_r(ops, n, sizeof(*ops), cmp_sop, arena);
        return;
    }
    for (; i < n; i = j) {
        for (j = i + 1; j < n && ops[j].part == ops[i].part; j++) {
        }
        if (j - i > 32) {
            skip_common(ops + i, j - i, arena);
            qsort_r(ops + i, j - i, sizeof(*ops), cmp_sop, arena);
            continue;
        }
        for (size_t a = i + 1; a < j; a++) { /* a partition's few */
            sop x = ops[a];
            size_t z = a;
            for (; z > i && cmp_sop(&ops[z - 1], &x, arena) > 0; z--) {
                ops[z] = ops[z - 1];
            }
            ops[z] = x;
        }
    }
}

/* Sorts the runs between DELPREFIX entries and keeps a key's last. */
static void batch_order(pk__sbatch *b)
{
    size_t i = 0, j, out = 0;

    while (i < b->n) {
        if (b->ops[i].op == PK__LOG_DELPREFIX) {
            b->ops[out++] = b->ops[i++];
            continue;
        }
        for (j = i; j < b->n && b->ops[j].op != PK__LOG_DELPREFIX; j++) {
        }
        sort_run(b->ops + i, j - i, b->arena);
        for (; i < j; i++) {
            if (i + 1 < j &&
                cmp_key(&b->ops[i], &b->ops[i + 1], b->arena) == 0) {
                continue; /* a later entry writes this key */
            }
            b->ops[out++] = b->ops[i];
        }
    }
    b->n = out;
}

/* Makes the store's batch of every unsettled record (t made it). */
static int batch_make(pk_txn *t)
{
    pk__sbatch *b = calloc(1, sizeof(*b));
    int rc;

    if (b == NULL) {
        return pk__fail(t, PK_ENOMEM);
    }
    rc = pk__log_scan(t, pk__settled(t), collect, b);
    if (rc != 0) {
        pk__sbatch_free(b);
        return pk__fail(t, rc);
    }
    batch_order(b);
    t->s->sb = b;
    t->sb_made = 1;
    return 0;
}

/* Makes part the open operation's partition. */
static int frame(pk_txn *t, uint32_t part)
{
    int rc;

    if (t->op_open && t->op_part == part) {
        return 0;
    }
    if (t->op_open && (rc = pk__op_end(t, 0)) != 0) {
        return rc;
    }
    return pk__op_begin(t, part, PK__OP_NOLOG | PK__OP_QUIET | PK__OP_RAW);
}

static int apply(pk_txn *t, const pk__sbatch *b, const sop *e)
{
    uint8_t kb[PK_KEYENC_MAX];
    const uint8_t *val = b->arena + e->off + e->klen;
    int rc;

    if (e->klen + 4 > sizeof(kb)) {
        return pk__fail(t, PK_ECORRUPT);
    }
    if ((rc = frame(t, e->part)) != 0) {
        return rc;
    }
    pk_be32_put(kb, e->part);
    memcpy(kb + 4, b->arena + e->off, e->klen);
    switch (e->op) {
    case PK__LOG_PUT:
        return pk__rec_put(t, kb, 4 + e->klen, val, e->vlen);
    case PK__LOG_DEL:
        return pk__rec_del(t, kb, 4 + e->klen, NULL);
    }
    return pk__rec_delprefix(t, kb, 4 + e->klen, 0, NULL);
}

/* The batch is applied: its partitions lose their pend, settled rises,
 * and it goes (at the commit, if an earlier transaction made it). */
static int batch_finish(pk_txn *t, pk__sbatch *b)
{
    uint32_t prev = UINT32_MAX;
    pk__stat st;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < b->n; prev = b->ops[i++].part) {
        if (b->ops[i].part == prev) {
            continue;
        }
        rc = pk__stc_load(t, b->ops[i].part, &st);
        if (rc == 0 && st.pend != 0 && st.pend <= b->upto) {
            st.pend = 0;
            rc = pk__stat_save(t, b->ops[i].part, &st);
        }
    }
    if (rc == 0 && b->nrec > 0) {
        rc = mark(t, b->upto);
    }
    if (rc != 0) {
        return pk__fail(t, rc);
    }
    t->unsettled -= (int64_t)b->nrec;
    t->s->sb = NULL;
    if (t->sb_made) {
        t->sb_made = 0;
        pk__sbatch_free(b);
    } else {
        t->sb_fin = b;
    }
    return 0;
}

/* Applies up to max of the batch's changes (0 all); *n: records settled. */
static int batch_run(pk_txn *t, size_t max, size_t *n)
{
    pk__sbatch *b = t->s->sb;
    size_t end = max == 0 || b->n - b->next < max ? b->n : b->next + max;
    uint64_t nrec = b->nrec;
    int rc = 0;

    *n = 0;
    if (!t->sb_made && !t->sb_touched) {
        t->sb_touched = 1;
        t->sb_next = b->next;
    }
    while (rc == 0 && b->next < end) {
        rc = apply(t, b, &b->ops[b->next++]);
    }
    if (t->op_open) {
        rc = pk__op_end(t, rc);
    }
    if (rc == 0 && b->next == b->n && (rc = batch_finish(t, b)) == 0) {
        *n = nrec;
    }
    return rc;
}

/* Settles every deferred record: the batch under way, then one of what
 * came since; *n gets how many. */
static int settle_all(pk_txn *t, size_t *n)
{
    size_t done;
    int rc = 0;

    *n = 0;
    for (int round = 0; rc == 0 && round < 2; round++) {
        if (t->s->sb == NULL &&
            (pk_store_log_unsettled(t) == 0 || (rc = batch_make(t)) != 0)) {
            break;
        }
        rc = batch_run(t, 0, &done);
        *n += done;
    }
    return rc;
}

int pk_store_log_settle(pk_txn *t, size_t max_changes, size_t *n)
{
    size_t done = 0;
    int rc = t->err;

    if (rc == 0 && (t->rdonly || t->op_open)) {
        rc = PK_EINVAL;
    }
    if (rc == 0 && max_changes == 0) {
        rc = settle_all(t, &done);
    } else if (rc == 0 && (t->s->sb != NULL || (pk_store_log_unsettled(t) > 0 &&
                                                (rc = batch_make(t)) == 0))) {
        rc = batch_run(t, max_changes, &done);
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
    size_t n;

    /* Per command: the cache entry only, no stats copied. */
    if ((!t->rdonly && pk_store_log_unsettled(t) == 0) ||
        pk__stat_pend(t->s, part) == 0) {
        return 0;
    }
    return t->rdonly ? PK_EBUSY : settle_all(t, &n);
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
    rc = batch_make(t);
    rc = rc ? rc : batch_run(t, 0, &n);
    t->unsettled = 0;
    if (rc != 0 || n == 0) {
        pk_txn_abort(t);
    } else {
        rc = pk_txn_commit(t);
    }
    s->settle_open = rc == 0;
    return rc;
}

/*
 * pk_ft_global: global indexes in a cluster -- the feeder that ships each
 * led partition's outbox to the partitions its entries live in, the
 * command that applies what it ships (PK.FTGAPPLY), where a query on a
 * global index must look, and FT.SEARCH ... CONSISTENT's wait.
 *
 *   write ---same txn---> outbox of the document's partition
 *   feeder (each tick, one round at a time): led partitions' outboxes ->
 *     PK.FTGAPPLY epoch sender (u32 source | operation)* to each node
 *     leading an entry's partition -> applied, replicated, +OK
 *   every node answered +OK -> the shipped records trimmed
 *
 * A round ships each outbox from its head, and only the records whose
 * writes are committed (a write a new leader would lack never reaches the
 * index), so every entry sees its operations in the order they were
 * written; a round that fails (a node down, a map moving) trims nothing
 * and the next round ships the same records again, which puts and
 * deletes of whole entries make harmless.  A node refuses operations
 * from a sender that its map (at least as new as the sender's) does not
 * show leading their source partition, and a sender trims only what it
 * still leads at the same leader epoch, so a deposed leader's late round
 * is refused and does not trim its successor's records.  (A round delayed
 * past a loss and a return of leadership is not: operations carry no
 * version; see the README's known limits.)
 *
 * A node alone has nothing to partition: a GLOBAL index there is kept as
 * a local one (its id lacks PK_FTIDX_GLOBAL), with no lag.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_ftq.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_ft_int.h"
#include "server/pk_link.h"
#include "server/pk_repl.h"
#include "store/pk_ftidx.h"
#include "store/pk_store.h"
#include "store/pk_store_log.h"

#define ROUND_BYTES (4u << 20) /* outbox bytes a round ships, at most */
#define RESCAN_MS 1000         /* every led outbox looked at again */
#define WAIT_MS 10000          /* CONSISTENT gives up after */
#define ROUND_MS 5000          /* a round not answered by then is abandoned */

typedef struct blob {
    uint8_t *p;
    size_t len, cap;
} blob;

struct pk__ftfeed {
    uint8_t *dirty; /* per partition: its outbox may hold records */
    /* Per partition: the outbox's last record when the log's last record
     * was cand_log -- shipped once that is committed (shippable()). */
    uint64_t *cand_seq, *cand_log;
    uint32_t np;
    uint64_t epoch;  /* the map the dirty bits follow */
    uint64_t rescan; /* when every partition is dirty again */
    int busy;        /* a round's calls are out */
    int pending, failed, full;
    uint64_t gen;     /* the round's number: late answers of an
                       * abandoned one are ignored */
    uint64_t started; /* when the round's calls went out */
    uint32_t *sp;     /* this round: source partitions shipped ... */
    uint64_t *sseq;   /* ... up to these sequence numbers ... */
    uint64_t *sep;    /* ... while led at these leader epochs */
    size_t ns, scap;
    blob *out; /* per node: this round's operations for it */
    uint32_t nout;
    uint64_t ops, rounds; /* shipped so far (INFO) */
};

static int blob_add(blob *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        uint8_t *g;
        while (cap < b->len + n)
            cap *= 2;
        if ((g = realloc(b->p, cap)) == NULL)
            return PK_ENOMEM;
        b->p = g;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

/* The feeder, made (or remade for a new partition count) on first use. */
static pk__ftfeed *feed_of(pk_server *s)
{
    pk_ft *ft = s->ft;
    uint32_t np = pk__ft_nparts(s);
    pk__ftfeed *f = ft->feed;

    if (f && f->np != np && !f->busy) {
        free(f->dirty);
        free(f->cand_seq);
        free(f->cand_log);
        f->dirty = NULL;
    }
    if (f == NULL && (f = ft->feed = calloc(1, sizeof(*f))) == NULL)
        return NULL;
    if (f->dirty == NULL) {
        f->dirty = malloc(np);
        f->cand_seq = calloc(np, sizeof(*f->cand_seq));
        f->cand_log = calloc(np, sizeof(*f->cand_log));
        if (f->dirty == NULL || f->cand_seq == NULL || f->cand_log == NULL) {
            free(f->dirty);
            free(f->cand_seq);
            free(f->cand_log);
            f->dirty = NULL;
            return NULL;
        }
        memset(f->dirty, 1, np);
        f->np = np;
        f->epoch = UINT64_MAX;
    }
    /* A new map: outboxes newly led here may hold records. */
    if (s->cluster.map && f->epoch != s->cluster.map->epoch) {
        memset(f->dirty, 1, f->np);
        f->epoch = s->cluster.map->epoch;
    }
    return f;
}

int pk__ft_any_global(const pk_ft *ft)
{
    for (uint32_t i = 0; i < ft->n; i++)
        if (ft->v[i].def->id & PK_FTIDX_GLOBAL)
            return 1;
    return 0;
}

void pk_ft_note_expired(pk_server *s)
{
    if (s->ft && s->ft->feed)
        s->ft->feed->rescan = 0; /* every outbox, next round */
}

int pk_ft_blocks_flush(pk_server *s)
{
    if (s->ft == NULL || !s->cluster.enabled)
        return 0;
    pk__ft_sync(s);
    return pk__ft_any_global(s->ft);
}

void pk__ft_global_dirty(pk_server *s, uint32_t part)
{
    pk__ftfeed *f = feed_of(s);

    if (f && part < f->np)
        f->dirty[part] = 1;
}

/* ---- a round --------------------------------------------------------- */

typedef struct round_ctx {
    pk_server *s;
    pk__ftfeed *f;
    const pk_pmap *m;
    uint32_t part;
    uint64_t limit; /* ship records up to this sequence number */
    uint64_t last;  /* the last record shipped whole */
    size_t bytes;   /* shipped this round (operations carry copies) */
} round_ctx;

/* A call of a round: answers of an abandoned round are ignored. */
typedef struct round_call {
    pk_server *s;
    uint64_t gen;
} round_call;

static int ship_op(void *ctx, uint32_t vp, uint64_t id, const uint8_t *op,
                   size_t len)
{
    round_ctx *rc = ctx;
    uint32_t n = pk_pmap_leader(rc->m, vp);
    uint8_t src[4];

    if (pk__ft_by_id(rc->s, id) == NULL)
        return 0; /* an index dropped (the list follows this map) */
    if (n >= rc->f->nout)
        return 1; /* no leader: the record waits */
    pk_be32_put(src, rc->part);
    if (blob_add(&rc->f->out[n], src, 4) != 0 ||
        blob_add(&rc->f->out[n], op, len) != 0)
        return PK_ENOMEM;
    rc->bytes += 4 + len;
    rc->f->ops++;
    return 0;
}

static int ship_record(void *ctx, uint64_t seq, pk_slice rec)
{
    round_ctx *rc = ctx;
    int r;

    if (seq > rc->limit)
        return 1; /* not known committed yet */
    if (rc->bytes >= ROUND_BYTES) {
        rc->f->full = 1;
        return 1;
    }
    /* A record whose operations cannot all go stops its outbox here:
     * some may have been added, and go again next round with it.  One
     * that cannot be read never will be: trimmed, and said. */
    r = pk_ftout_ops(rec, rc->f->np, ship_op, rc);
    if (r == PK_ECORRUPT)
        fprintf(stderr,
                "partkv: partition %u: outbox record %llu unreadable, "
                "dropped\n",
                rc->part, (unsigned long long)seq);
    else if (r != 0)
        return 1;
    rc->last = seq;
    return 0;
}

/* The leader epoch of p in s's map. */
static uint64_t lead_epoch(const pk_server *s, uint32_t p)
{
    return s->cluster.map->parts[p].leader_epoch;
}

/* Up to which record of p's outbox (last: its last) may be shipped now,
 * 0 for none: those whose writes are committed (on enough copies to be
 * acknowledged), so that a write a new leader would lack never reaches
 * the index.  t: the snapshot. */
static uint64_t shippable(pk_server *s, pk__ftfeed *f, pk_txn *t, uint32_t p,
                          uint64_t last)
{
    uint64_t log = 0, limit = 0;
    const pk_partition *pt = &s->cluster.map->parts[p];

    if (pk_store_log_last(t, p, &log) != 0)
        return 0;
    uint64_t committed = pt->nreplicas < 2 ? log : pk_repl_commit_seq(s, p);

    if (committed >= log)
        limit = last; /* all of it */
    else if (f->cand_seq[p] && committed >= f->cand_log[p])
        limit = f->cand_seq[p]; /* what an earlier look saw */
    /* What this look saw, for a later one (kept until reached, so that a
     * steady load cannot move it on for ever). */
    if (limit >= last) {
        f->cand_seq[p] = 0;
    } else if (f->cand_seq[p] == 0 || limit == f->cand_seq[p]) {
        f->cand_seq[p] = last;
        f->cand_log[p] = log;
    }
    return limit;
}

static void on_applied(void *ctx, const pk_rr *r, const char *err);

/* Trims what every node applied (of the partitions still led here at the
 * same leader epoch), and ends the round. */
static void round_end(pk_server *s, pk__ftfeed *f)
{
    pk_txn *t = s->txn;
    int own = t == NULL, wrote = 0;

    f->busy = 0;
    if (!f->failed && f->ns > 0 && s->cluster.map &&
        (!own || pk_txn_begin(s->store, 0, &t) == PK_OK)) {
        for (size_t i = 0; i < f->ns; i++)
            if (pk__ft_writable(s, f->sp[i]) &&
                lead_epoch(s, f->sp[i]) == f->sep[i] &&
                pk_ftout_trim(t, f->sp[i], f->sseq[i]) == 0)
                wrote = 1;
        if (own && wrote)
            pk_txn_commit(t);
        else if (own)
            pk_txn_abort(t);
    }
    f->ns = 0;
    f->rounds++;
    if (f->full && !f->failed)
        pk__ft_global_feed(s); /* more waits: on at once (if it can) */
}

/* Sends node n its operations: 0, or an error (nothing sent). */
static int send_ops(pk_server *s, const pk_pmap *m, uint32_t n, blob *b)
{
    char ep[24], self[16];
    const char *av[4] = {"PK.FTGAPPLY", ep, self, (const char *)b->p};
    size_t al[4];
    pk_obuf ob;
    int rc;

    snprintf(ep, sizeof(ep), "%llu", (unsigned long long)m->epoch);
    snprintf(self, sizeof(self), "%u", s->cluster.self);
    al[0] = strlen(av[0]);
    al[1] = strlen(ep);
    al[2] = strlen(self);
    al[3] = b->len;
    pk_obuf_init(&ob);
    rc = pk_rr_write_cmd(&ob, 4, av, al);
    if (rc == 0) {
        round_call *call = malloc(sizeof(*call));
        rc = PK_ENOMEM;
        if (call) {
            *call = (round_call){s, s->ft->feed->gen};
            if ((rc = pk_link_call(s, m->nodes[n].addr, &ob, on_applied,
                                   call)) != 0)
                free(call);
        }
    }
    pk_obuf_free(&ob);
    return rc;
}

void pk__ft_global_feed(pk_server *s)
{
    pk_ft *ft = s->ft;
    const pk_pmap *m = s->cluster.map;
    pk__ftfeed *f;
    pk_txn *t = NULL;

    /* Records of indexes dropped since wait for the next global one.  Not
     * while the iteration's transaction is open: a snapshot would miss its
     * records and clear their partitions' dirty bits. */
    if (ft == NULL || s->store == NULL || !s->cluster.enabled || m == NULL ||
        s->txn != NULL || (f = feed_of(s)) == NULL)
        return;
    if (f->busy && s->now_ms - f->started > ROUND_MS) {
        f->busy = 0; /* abandoned: nothing trimmed, its answers ignored */
        f->gen++;
        f->ns = 0;
    }
    pk__ft_sync(s);
    if (f->busy || ft->epoch != m->epoch || !pk__ft_any_global(ft))
        return;
    if (s->now_ms >= f->rescan) { /* records of expiry, unmarked */
        memset(f->dirty, 1, f->np);
        f->rescan = s->now_ms + RESCAN_MS;
    }
    if (f->nout < m->nnodes) {
        blob *g = realloc(f->out, m->nnodes * sizeof(*g));
        if (g == NULL)
            return;
        memset(g + f->nout, 0, (m->nnodes - f->nout) * sizeof(*g));
        f->out = g;
        f->nout = m->nnodes;
    }
    f->failed = f->full = 0;
    f->ns = 0;
    round_ctx rc = {.s = s, .f = f, .m = m};
    for (uint32_t p = 0; p < f->np && !f->full; p++) {
        uint64_t first, last;
        int r;
        if (!f->dirty[p])
            continue;
        if (!pk_srv_leads(s, p)) {
            f->dirty[p] = 0; /* its leader ships it */
            continue;
        }
        if (!pk__ft_writable(s, p)) /* fenced: after the move or split */
            continue;
        if (t == NULL && pk_txn_begin(s->store, 1, &t) != PK_OK)
            return;
        if ((r = pk_ftout_bounds(t, p, &first, &last)) == PK_ENOTFOUND) {
            f->dirty[p] = 0;
            continue;
        }
        if (r != 0 || (rc.limit = shippable(s, f, t, p, last)) == 0)
            continue; /* next round */
        rc.part = p;
        rc.last = 0;
        pk_ftout_each(t, p, ROUND_BYTES, ship_record, &rc);
        if (rc.last == 0)
            continue;
        if (f->ns == f->scap) {
            size_t cap = f->scap ? 2 * f->scap : 64;
            uint32_t *sp = realloc(f->sp, cap * sizeof(*sp));
            uint64_t *sq = sp ? realloc(f->sseq, cap * sizeof(*sq)) : NULL;
            uint64_t *se = sq ? realloc(f->sep, cap * sizeof(*se)) : NULL;
            if (sp)
                f->sp = sp;
            if (sq)
                f->sseq = sq;
            if (se == NULL)
                break;
            f->sep = se;
            f->scap = cap;
        }
        f->sp[f->ns] = p;
        f->sep[f->ns] = lead_epoch(s, p);
        f->sseq[f->ns++] = rc.last;
    }
    if (t)
        pk_txn_abort(t);
    f->pending = 1; /* held until every call went out */
    f->busy = 1;
    f->started = s->now_ms;
    for (uint32_t n = 0; n < f->nout; n++) {
        if (f->out[n].len == 0)
            continue;
        if (n >= m->nnodes) {
            f->failed = 1;
        } else {
            f->pending++;
            if (send_ops(s, m, n, &f->out[n]) != 0) {
                f->pending--;
                f->failed = 1;
            }
        }
        f->out[n].len = 0;
    }
    if (--f->pending == 0)
        round_end(s, f);
}

static void on_applied(void *ctx, const pk_rr *r, const char *err)
{
    round_call call = *(round_call *)ctx;
    pk__ftfeed *f = call.s->ft ? call.s->ft->feed : NULL;
    pk_server *s = call.s;

    free(ctx);
    if (f == NULL || call.gen != f->gen || !f->busy)
        return; /* shutting down, or a round abandoned */
    if (err || r->type == PK_RR_ERROR)
        f->failed = 1;
    if (--f->pending == 0)
        round_end(s, f);
}

/* ---- applying -------------------------------------------------------- */

/* PK.FTGAPPLY epoch sender (u32 source | operation)*: applies the
 * operations, each to its entry's partition (which this node must lead),
 * replies +OK once replicated as any write; TRYAGAIN when the map here is
 * older than the sender's or shows another leader for a source. */
void pk_cmd_pk_ftgapply(pk_cmd_ctx *x)
{
    pk_server *s = x->srv;
    const pk_pmap *m = s->cluster.map;
    const uint8_t *p = (const uint8_t *)x->argv[3].ptr;
    size_t n = x->argv[3].len;
    int64_t epoch, sender;
    pk_ftglob_op op;
    pk_txn *t = NULL;
    int rc;

    if (!x->c->internal || s->ft == NULL || s->store == NULL) {
        pk__ft_error(x->out, "NOPERM PK.FTGAPPLY is for nodes");
        return;
    }
    if (!pk_arg_i64(&x->argv[1], &epoch) || !pk_arg_i64(&x->argv[2], &sender)) {
        pk_reply_syntax(x);
        return;
    }
    if (m == NULL || m->epoch < (uint64_t)epoch) {
        pk__ft_error(x->out, "TRYAGAIN this node's map is older");
        return;
    }
    pk__ft_sync(s);
    if (s->ft->epoch != m->epoch) { /* could not: "unknown" means nothing */
        pk__ft_error(x->out, "TRYAGAIN index definitions not loaded");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && (t = pk_srv_txn(x)) == NULL)
            return;
        for (size_t at = 0, used; at < n; at += 4 + used) {
            uint32_t src = n - at >= 4 ? pk_be32_get(p + at) : UINT32_MAX;
            used = src == UINT32_MAX
                       ? 0
                       : pk_ftglob_op_parse(p + at + 4, n - at - 4, &op);
            if (used == 0 || src >= m->npartitions || op.vp >= m->npartitions) {
                pk__ft_error(x->out, "ERR malformed PK.FTGAPPLY");
                return;
            }
            if (pass == 0 && pk_pmap_leader(m, src) != (uint32_t)sender) {
                pk__ft_errorf(x->out, "TRYAGAIN %lld does not lead %u",
                              (long long)sender, src);
                return;
            }
            if (pass == 0 && !pk__ft_writable(s, op.vp)) {
                pk__ft_errorf(x->out, "TRYAGAIN partition %u is not led here",
                              op.vp);
                return;
            }
            if (pass == 0 || pk__ft_by_id(s, op.id) == NULL)
                continue; /* dropped: its entries go with the sweep */
            if ((rc = pk_ftglob_op_apply(t, &op)) != 0) {
                x->have_part = 0;
                pk_cmd_store_error(x, rc);
                return;
            }
            x->have_part = 1;
            x->part = op.vp;
            pk_repl_note(x, 1);
        }
    }
    x->have_part = 0;
    pk_reply_simple(x->out, "OK");
}

/* ---- queries --------------------------------------------------------- */

uint8_t *pk__ft_global_parts(pk_server *s, const pk_ftdef *d, const pk_ftq *q)
{
    pk_ftq_scan sc[PK__FT_PLAN_MAX];
    uint32_t np = pk__ft_nparts(s);
    int nsc;
    uint8_t *bits;

    if (!(d->id & PK_FTIDX_GLOBAL) || !s->cluster.enabled)
        return NULL;
    if ((nsc = pk_ftq_plan(q, sc, PK__FT_PLAN_MAX)) <= 0)
        return NULL; /* every document: the DOC entries, everywhere */
    if ((bits = calloc((np + 7) / 8, 1)) == NULL)
        return NULL;
    if (pk_ftglob_scan_parts(d->id, sc, nsc, np, bits) != 0) {
        free(bits);
        return NULL;
    }
    return bits;
}

/* ---- CONSISTENT ------------------------------------------------------ */

/*
 * Before the search, the outboxes: a first round asks every leader for
 * the last record of each of its outboxes (the marks: every write
 * acknowledged before is at or below them, or applied and trimmed);
 * later rounds, a tick apart, ask for the first, until every outbox has
 * moved past its mark.  Leaders are asked as any query asks them (a
 * partition that moved answers TRYAGAIN), so a failover loses no mark:
 * the new leader holds the same records.
 */
typedef struct wstate {
    int phase;      /* 0: marking, 1: waiting */
    int behind;     /* this round: an outbox not yet past its mark */
    uint64_t *mark; /* per partition: 0 none, else the last record */
    uint32_t np;
    uint64_t until; /* gives up then */
    pk_server *s;
    int argc;
    pk_arg *args;  /* owned: the client's FT.SEARCH */
    void *search;  /* the search's state, started when caught up */
    uint8_t *only; /* its partitions (owned), or NULL */
} wstate;

static void wait_node(pk_cmd_ctx *y, const pk_ftdef *d, const uint8_t *parts,
                      uint32_t np, pk_obuf *o)
{
    pk_server *s = y->srv;
    pk__ftfeed *f = feed_of(s);
    uint64_t *v = f ? malloc(3 * (size_t)np * sizeof(*v)) : NULL;
    size_t n = 0;
    pk_txn *t;
    int rc = 0;

    (void)d;
    /* The iteration's transaction when open: a write pipelined before the
     * query on its connection has its record there. */
    t = s->txn;
    if (v == NULL || (t == NULL && pk_txn_begin(s->store, 1, &t) != PK_OK)) {
        free(v);
        pk__ft_error(o, "ERR out of memory");
        return;
    }
    for (uint32_t p = 0; p < np && p < f->np && rc != 1; p++) {
        if (!(parts[p / 8] & (1u << (p % 8))) || !f->dirty[p])
            continue;
        rc = pk_ftout_bounds(t, p, &v[n + 1], &v[n + 2]);
        if (rc == 0) {
            v[n] = p;
            n += 3;
        } else if (rc != PK_ENOTFOUND) {
            rc = 1; /* unknown is not empty */
        }
    }
    if (t != s->txn)
        pk_txn_abort(t);
    if (rc == 1) {
        free(v);
        pk__ft_error(o, "TRYAGAIN an outbox could not be read");
        return;
    }
    pk_reply_array(o, n);
    for (size_t i = 0; i < n; i++)
        pk_reply_int(o, (int64_t)v[i]);
    free(v);
}

static void wait_reset(void *state)
{
    ((wstate *)state)->behind = 0;
}

static const char *wait_take(void *state, const pk_rr *r)
{
    wstate *w = state;

    if (r->type != PK_RR_ARRAY || r->n % 3)
        return "ERR a node answered CONSISTENT badly";
    for (size_t i = 0; i + 2 < r->n; i += 3) {
        int64_t p = r->elems[i].integer;
        uint64_t first = (uint64_t)r->elems[i + 1].integer,
                 last = (uint64_t)r->elems[i + 2].integer;
        if (p < 0 || (uint64_t)p >= w->np)
            return "ERR a node answered CONSISTENT badly";
        if (w->phase == 0)
            w->mark[p] = last + 1; /* 0 stays "none" */
        else if (w->mark[p] && first + 1 <= w->mark[p])
            w->behind = 1;
    }
    return NULL;
}

static int wait_again(void *state)
{
    wstate *w = state;

    if (w->phase == 0) {
        w->phase = 1;
        for (uint32_t p = 0; p < w->np; p++)
            if (w->mark[p])
                return 1;
        return 0;
    }
    return w->behind && w->s->now_ms < w->until;
}

static int wait_reply(void *state, pk_server *s, const pk_ftdef *d, pk_conn *c)
{
    wstate *w = state;
    int answered;

    if (w->behind) {
        pk__ft_error(&c->out, "TRYAGAIN the global index did not catch up "
                              "in time");
        return 1;
    }
    answered =
        pk__ft_search_after(s, c, d, w->argc, w->args, w->search, w->only);
    w->search = NULL; /* taken */
    w->only = NULL;
    return answered;
}

static void wait_free(void *state)
{
    wstate *w = state;

    if (w->search)
        pk__ft_search_verb.free(w->search);
    free(w->mark);
    free(w->args);
    free(w->only);
    free(w);
}

const pk__ftverb pk__ft_wait_verb = {"OUTBOX",   0,         wait_node,
                                     wait_reset, wait_take, wait_reply,
                                     wait_free,  wait_again};

void pk__ft_consistent(pk_cmd_ctx *x, const pk_ftdef *d, void *search,
                       uint8_t *only)
{
    wstate *w = calloc(1, sizeof(*w));
    uint32_t np = pk__ft_nparts(x->srv);

    if (w == NULL || (w->mark = calloc(np, sizeof(*w->mark))) == NULL ||
        (w->args = pk_conn_args_copy(x->argc, x->argv)) == NULL) {
        if (w)
            free(w->mark);
        free(w);
        pk__ft_search_verb.free(search);
        free(only);
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    w->np = np;
    w->s = x->srv;
    w->until = x->srv->now_ms + WAIT_MS;
    w->argc = x->argc;
    w->search = search;
    w->only = only;
    pk__ft_gather(x, d, &pk__ft_wait_verb, w, NULL);
}

/* ---- FT.INFO and INFO ---------------------------------------------------- */

typedef struct lag_ctx {
    uint64_t id, records, oldest;
} lag_ctx;

static int lag_record(void *ctx, uint64_t seq, pk_slice rec)
{
    lag_ctx *l = ctx;

    if (rec.len >= 8 && pk_be64_get((const uint8_t *)rec.ptr) == l->id) {
        l->records++;
        if (l->oldest == 0)
            l->oldest = PK_FTOUT_MS(seq);
    }
    return 0;
}

int pk__ft_global_lag(pk_server *s, pk_txn *t, const pk_ftdef *d,
                      const uint8_t *parts, uint32_t np, int64_t *records,
                      int64_t *lag_ms)
{
    pk__ftfeed *f = feed_of(s);
    int rc = 0;

    *records = *lag_ms = 0;
    if (!(d->id & PK_FTIDX_GLOBAL) || f == NULL)
        return 0;
    for (uint32_t p = 0; rc == 0 && p < np && p < f->np; p++) {
        lag_ctx l = {d->id, 0, 0};
        if (!(parts[p / 8] & (1u << (p % 8))) || !f->dirty[p])
            continue;
        rc = pk_ftout_each(t, p, SIZE_MAX, lag_record, &l);
        *records += (int64_t)l.records;
        if (l.records && s->now_ms > l.oldest &&
            (int64_t)(s->now_ms - l.oldest) > *lag_ms)
            *lag_ms = (int64_t)(s->now_ms - l.oldest);
    }
    return rc;
}

void pk_ft_info(pk_server *s, pk_obuf *b)
{
    pk_ft *ft = s->ft;
    pk__ftfeed *f = ft ? ft->feed : NULL;
    char line[512];
    int n;

    n = snprintf(line, sizeof(line),
                 "# Search\r\nsearch_number_of_indexes:%u\r\n"
                 "search_queries:%llu\r\nsearch_query_nodes:%llu\r\n"
                 "search_global_rounds:%llu\r\nsearch_global_ops:%llu\r\n"
                 "\r\n",
                 ft ? ft->n : 0, (unsigned long long)(ft ? ft->queries : 0),
                 (unsigned long long)(ft ? ft->query_nodes : 0),
                 (unsigned long long)(f ? f->rounds : 0),
                 (unsigned long long)(f ? f->ops : 0));
    pk_obuf_append(b, line, (size_t)n);
}

void pk__ft_global_free(pk_server *s)
{
    pk__ftfeed *f = s->ft->feed;

    if (f == NULL)
        return;
    for (uint32_t n = 0; n < f->nout; n++)
        free(f->out[n].p);
    free(f->out);
    free(f->dirty);
    free(f->cand_seq);
    free(f->cand_log);
    free(f->sp);
    free(f->sseq);
    free(f->sep);
    free(f);
    s->ft->feed = NULL;
}

/* pk_repl_stream: a leader's streams to its followers. */
#include "server/pk_repl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "proto/pk_rreply.h"
#include "server/pk_link.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

#define HEARTBEAT_MS 100
#define WINDOW 4               /* messages in flight per stream */
#define MSG_BYTES (256u << 10) /* payload bytes per message, about */

/* A commit position rides on records sent in this loop iteration; none
 * sent, it goes alone at the next turn of the loop (follower reads of a
 * key that is also written wait for it: 2 ms here cost them a fifth of
 * their rate, bench/README.md). */
#define COMMIT_ALONE_MS 0

/* Appends v as a bulk string (a decimal argument of a request). */
static void put_u64(pk_obuf *ob, uint64_t v)
{
    char b[PK_I64_CHARS];

    pk_reply_bulk(ob, b, pk_i64_format(b, (int64_t)v));
}

/* The followers of p (which we lead) that lack its commit position:
 * queued when queue, else counted. */
static int commit_behind(pk_repl *rp, uint32_t p, uint64_t now, int queue)
{
    const pk_partition *pt = rp_part(rp->srv, p);
    uint64_t c;
    int n = 0;

    if (rp->commit_want[p] <= now || pt == NULL || pt->nreplicas < 2 ||
        pt->replicas[0] != rp->srv->cluster.self)
        return 0;
    c = pk__repl_commit_pos(rp, pt, p, now);
    for (int i = 1; i < pt->nreplicas; i++) {
        rp_stream *st = rp_stream_of(rp, pt->replicas[i]);
        if (st && st->state[p] == PS_STREAM && c > st->csent[p]) {
            n++;
            if (queue)
                pk__repl_enqueue(st, p);
        }
    }
    return n;
}

static void on_calone(uv_timer_t *h)
{
    pk_repl *rp = h->data;
    uint64_t now = rp_now();

    rp->calone_on = 0;
    for (uint32_t i = 0; i < rp->ncdue; i++) {
        rp->cdue_set[rp->cdue[i]] = 0;
        commit_behind(rp, rp->cdue[i], now, 1);
    }
    rp->ncdue = 0;
    if (rp->srv->txn == NULL) /* else the check phase pumps */
        pk__repl_pump_all(rp);
}

/* After answers from followers of p: those that read it get its commit
 * position when it moved -- with the next records, or alone after
 * COMMIT_ALONE_MS. */
static void commit_push(pk_repl *rp, uint32_t p, uint64_t now)
{
    if (rp->cdue_set[p] || !commit_behind(rp, p, now, 0))
        return;
    rp->cdue_set[p] = 1;
    rp->cdue[rp->ncdue++] = p;
    if (!rp->calone_on && !rp->closing) {
        rp->calone_on = 1;
        uv_timer_start(&rp->calone, on_calone, COMMIT_ALONE_MS, 0);
    }
}

void pk_repl_want_commits(pk_server *s, uint32_t p)
{
    if (s->repl && p < s->repl->np)
        s->repl->commit_want[p] = rp_now() + 2 * PK_REPL_READ_LEASE_MS;
}

void pk_repl_commit_seen(pk_server *s, uint32_t p, uint64_t epoch, uint64_t seq)
{
    pk_repl *rp = s->repl;

    if (rp == NULL || p >= rp->np || rp->follow_epoch[p] != epoch)
        return;
    if (rp->commit_ep[p] != epoch || seq > rp->commit_seen[p]) {
        rp->commit_ep[p] = epoch;
        rp->commit_seen[p] = seq;
        rp->commit_moved = 1;
    }
}

void pk__repl_enqueue(rp_stream *st, uint32_t p)
{
    if (!st->queued[p]) {
        st->queued[p] = 1;
        st->queue[st->nqueue++] = p;
    }
}

int pk__repl_stream_new(pk_repl *rp, uint32_t node, rp_stream **out)
{
    rp_stream *st = calloc(1, sizeof(*st));
    uint32_t np = rp->np;

    if (st == NULL)
        return PK_ENOMEM;
    st->rp = rp;
    st->node = node;
    st->state = calloc(np, 1);
    st->queued = calloc(np, 1);
    st->epoch = calloc(np, sizeof(uint64_t));
    st->sent = calloc(np, sizeof(uint64_t));
    st->match = calloc(np, sizeof(uint64_t));
    st->hfe = calloc(np, sizeof(uint64_t));
    st->csent = calloc(np, sizeof(uint64_t));
    /* A partition taken off the queue may be queued again by the same
     * pump before the queue is compacted: room for both. */
    st->queue = calloc(2 * (size_t)np + 1, sizeof(uint32_t));
    if (!st->state || !st->queued || !st->epoch || !st->sent || !st->match ||
        !st->hfe || !st->csent || !st->queue) {
        pk__repl_stream_free(st);
        return PK_ENOMEM;
    }
    if (node >= rp->nby_node) {
        uint32_t n = node + 16;
        rp_stream **b = realloc(rp->by_node, n * sizeof(*b));
        if (b == NULL) {
            pk__repl_stream_free(st);
            return PK_ENOMEM;
        }
        memset(b + rp->nby_node, 0, (n - rp->nby_node) * sizeof(*b));
        rp->by_node = b;
        rp->nby_node = n;
    }
    rp->by_node[node] = st;
    st->next = rp->streams;
    rp->streams = st;
    *out = st;
    return PK_OK;
}

void pk__repl_stream_free(rp_stream *st)
{
    free(st->state);
    free(st->queued);
    free(st->epoch);
    free(st->sent);
    free(st->match);
    free(st->hfe);
    free(st->csent);
    free(st->queue);
    free(st);
}

static void pump(rp_stream *st, pk_txn **rt);

/* Ends a pump's read transaction. */
static void rt_end(pk_txn **rt)
{
    if (*rt)
        pk_txn_abort(*rt);
    *rt = NULL;
}

/*
 * The transaction a pump reads the log in: a write transaction that is
 * aborted afterwards, since its partition counters come from the store's
 * cache while a read transaction rebuilds them from the journal.  NULL
 * while the iteration's own transaction is open (the check phase pumps
 * in it before its commit, pk_repl_precommit, and after).
 */
static pk_txn *rt_get(pk_repl *rp, pk_txn **rt)
{
    if (*rt != NULL)
        return *rt;
    if (rp->pre) /* borrowed: pk_repl_precommit */
        return *rt = rp->srv->txn;
    if (rp->srv->txn || pk_txn_begin(rp->srv->store, 0, rt) != PK_OK)
        *rt = NULL;
    else
        rp->round++; /* the round cache's records are of older maps */
    return *rt;
}

/* The follower's answer to a hello: go on from its log, or snapshot. */
static void on_hello(rp_stream *st, uint32_t p, uint64_t fe, uint64_t last,
                     pk_txn **rt)
{
    pk_repl *rp = st->rp;
    pk_part_stats ps;
    pk_txn *t = rt_get(rp, rt);
    uint64_t le = rp->lead_epoch[p];
    int prefix;

    if (t == NULL) { /* decided by the next pump, after the commit */
        st->state[p] = PS_ANSWERED;
        st->hfe[p] = fe;
        st->match[p] = last;
        return;
    }
    if (pk_store_part_stats(t, p, &ps) != PK_OK) {
        st->state[p] = PS_NEW;
        return;
    }
    prefix = (fe == le) || (fe == 0 && last == 0) ||
             (fe != 0 && fe == rp->prev_epoch[p] && last <= rp->promo_pos[p]);
    if (prefix && last <= ps.log_last && last + 1 >= ps.log_first) {
        st->state[p] = PS_ACCEPT;
        st->sent[p] = last;
    } else {
        st->state[p] = PS_NEEDSNAP;
    }
}

void pk__repl_step_down(pk_repl *rp, uint32_t p)
{
    const pk_partition *pt = rp_part(rp->srv, p);

    rp->stepped[p] = 1;
    for (int i = 1; pt && i < pt->nreplicas; i++) {
        rp_stream *st = rp_stream_of(rp, pt->replicas[i]);
        if (st && st->state[p] == PS_STREAM)
            pk__repl_enqueue(st, p);
    }
}

static void apply_result(rp_stream *st, const rp_ent *e, const pk_rr *r,
                         pk_txn **rt)
{
    pk_repl *rp = st->rp;
    uint32_t p = e->part;

    if (st->epoch[p] != rp->lead_epoch[p])
        return; /* an answer from before a change of leader epoch */
    if (r->type == PK_RR_ERROR) {
        if (strncmp(r->str, "FENCED", 6) == 0) {
            uint64_t ep = strtoull(r->str + 7, NULL, 10);
            if (ep > rp->lead_epoch[p])
                pk__repl_step_down(rp, p);
        } else {
            st->state[p] = PS_NEW;
        }
        pk__repl_enqueue(st, p);
        return;
    }
    switch (e->kind) {
    case 'H':
        if (r->type == PK_RR_ARRAY && r->n == 2 &&
            r->elems[0].type == PK_RR_INT && r->elems[1].type == PK_RR_INT &&
            st->state[p] == PS_HELLO)
            on_hello(st, p, (uint64_t)r->elems[0].integer,
                     (uint64_t)r->elems[1].integer, rt);
        else
            st->state[p] = PS_NEW;
        pk__repl_enqueue(st, p);
        break;
    case 'S':
        if (r->type == PK_RR_INT && st->state[p] == PS_SNAP) {
            st->state[p] = PS_STREAM;
            st->match[p] = (uint64_t)r->integer;
            pk__repl_enqueue(st, p); /* records written since */
        }
        break;
    case 'C':
        break;
    default: /* A, L */
        if (r->type == PK_RR_INT && (uint64_t)r->integer > st->match[p] &&
            st->state[p] == PS_STREAM)
            st->match[p] = (uint64_t)r->integer;
    }
}

static void on_reply(void *ctx, const pk_rr *r, const char *err)
{
    rp_call *call = ctx;
    rp_stream *st = call->st;
    pk_repl *rp = st->rp;
    pk_txn *rt = NULL;

    st->inflight--;
    if (rp->closing) {
        free(call->ents);
        free(call);
        return;
    }
    if (err || r->type != PK_RR_ARRAY || r->n != (size_t)call->n + 1) {
        /* The link failed or the follower could not take it: every
         * partition of the message starts over with a hello. */
        for (uint32_t i = 0; i < call->n; i++) {
            uint32_t p = call->ents[i].part;
            if (st->state[p] != PS_NEW) {
                st->state[p] = PS_NEW;
                pk__repl_enqueue(st, p);
            }
        }
    } else {
        uint64_t until =
            call->sent_ms + PK_REPL_FOLLOW_LEASE_MS - PK_REPL_LEASE_MARGIN_MS;
        uint64_t now = rp_now();
        for (uint32_t i = 0; i < call->n; i++)
            apply_result(st, &call->ents[i], &r->elems[i], &rt);
        for (uint32_t i = 0; i < call->n; i++)
            if (call->ents[i].kind != 'C')
                commit_push(rp, call->ents[i].part, now);
        /* The last element: 1 if the follower promised us (our map is not
         * older than a fence it took against us). */
        if (r->elems[call->n].type == PK_RR_INT &&
            r->elems[call->n].integer == 1 && until > st->lease_until)
            st->lease_until = until;
        st->last_reply_ms = rp_now();
    }
    free(call->ents);
    free(call);
    if (!rp->in_pump && rp->srv->txn == NULL) {
        rp->in_pump = 1;
        pump(st, &rt);
        rp->in_pump = 0;
        rt_end(&rt);
        pk__repl_release(rp);
    } else if (rp->in_pump) {
        rt_end(&rt);
        rp->release_due = 1;
    } else { /* the check phase pumps after this iteration's commit */
        rt_end(&rt);
        pk__repl_release(rp);
    }
}

typedef struct msg {
    pk_obuf args;
    uint32_t n, cap;
    rp_ent *ents;
    size_t bytes;
} msg;

static int msg_add(msg *m, char kind, uint32_t p, uint64_t epoch, uint64_t seq,
                   const void *payload, size_t len)
{
    char k[1] = {kind};

    if (m->n == m->cap) {
        uint32_t cap = m->cap ? 2 * m->cap : 64;
        rp_ent *e = realloc(m->ents, cap * sizeof(*e));
        if (e == NULL)
            return PK_ENOMEM;
        m->ents = e;
        m->cap = cap;
    }
    m->ents[m->n].part = p;
    m->ents[m->n].kind = kind;
    m->n++;
    pk_reply_bulk(&m->args, k, 1);
    put_u64(&m->args, p);
    put_u64(&m->args, epoch);
    put_u64(&m->args, seq);
    pk_reply_bulk(&m->args, payload, len);
    m->bytes += len + 40;
    return PK_OK;
}

typedef struct log_ctx {
    msg *m;
    rp_stream *st;
    uint32_t p;
    rp_rcache *c; /* where the records read go too, or NULL */
} log_ctx;

#define LOG_FULL 1

static int on_record(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    log_ctx *lc = ctx;
    pk_repl *rp = lc->st->rp;
    rp_rcache *c = lc->c;

    if (c && c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        rp_rec *v = realloc(c->v, cap * sizeof(*v));
        if (v == NULL) {
            c->round = 0; /* not kept: the next stream reads for itself */
            lc->c = c = NULL;
        } else {
            c->v = v;
            c->cap = cap;
        }
    }
    if (c)
        c->v[c->n++] = (rp_rec){seq, rec, len};
    if (rp->pre) {
        pk__repl_early(rp, lc->p);
        rp->early_records++;
    }
    if (msg_add(lc->m, 'L', lc->p, rp->lead_epoch[lc->p], seq, rec, len))
        return LOG_FULL;
    lc->st->sent[lc->p] = seq;
    return lc->m->bytes >= MSG_BYTES ? LOG_FULL : 0;
}

/*
 * pk_store_log_read of p from seq from, through the round cache: the
 * records another stream read this round are sent from it, and what is
 * read from the log is kept for the next.
 */
static int log_read(pk_repl *rp, pk_txn *t, log_ctx *lc, uint64_t from)
{
    rp_rcache *c = &rp->rcache[lc->p % RP_RCACHE_SLOTS];
    int rc;

    if (c->round == rp->round && c->part == lc->p && c->n > 0 &&
        c->v[0].seq <= from && from <= c->v[c->n - 1].seq + 1) {
        for (size_t i = from - c->v[0].seq; i < c->n; i++) {
            const rp_rec *r = &c->v[i];
            lc->c = NULL; /* it has them */
            if ((rc = on_record(lc, r->seq, r->rec, r->len)) != 0)
                return rc;
        }
        if (c->to_end)
            return PK_OK;
        from = c->v[c->n - 1].seq + 1;
    } else {
        c->round = rp->round;
        c->part = lc->p;
        c->n = 0;
        c->to_end = 0;
    }
    lc->c = c;
    rc = pk_store_log_read(t, lc->p, from, on_record, lc);
    if (rc == PK_OK && lc->c)
        c->to_end = 1;
    return rc;
}

static int on_chunk(void *ctx, const void *chunk, size_t len)
{
    return pk_obuf_append(ctx, chunk, len);
}

/* Adds partition p's pending entries; 1 when the message is full. */
static int fill(rp_stream *st, msg *m, uint32_t p, pk_txn **rt)
{
    pk_repl *rp = st->rp;
    uint64_t le = rp->lead_epoch[p];
    pk_txn *t;
    int rc;

    switch (st->state[p]) {
    case PS_ANSWERED:
        if (rt_get(rp, rt) == NULL) {
            pk__repl_enqueue(st, p);
            return 1;
        }
        st->state[p] = PS_HELLO;
        on_hello(st, p, st->hfe[p], st->match[p], rt);
        pk__repl_enqueue(st, p);
        return 0;
    case PS_NEW:
        st->state[p] = PS_HELLO;
        st->csent[p] = 0;
        msg_add(m, 'H', p, le, 0, "", 0);
        return 0;
    case PS_ACCEPT:
        st->state[p] = PS_STREAM;
        st->match[p] = 0;
        msg_add(m, 'A', p, le, st->sent[p], "", 0);
        break; /* and the records after it */
    case PS_STREAM:
        break;
    case PS_NEEDSNAP: {
        pk_obuf snap;
        uint64_t last = 0;
        if ((t = rt_get(rp, rt)) == NULL) {
            pk__repl_enqueue(st, p);
            return 1;
        }
        pk_obuf_init(&snap);
        rc = pk_store_log_last(t, p, &last);
        if (rc == PK_OK)
            rc = pk_store_part_export(t, p, on_chunk, &snap);
        if (rc == PK_OK && rp->pre)
            pk__repl_early(rp, p);
        if (rc == PK_OK) {
            st->state[p] = PS_SNAP;
            st->sent[p] = last;
            msg_add(m, 'S', p, le, last, snap.data + snap.head,
                    pk_obuf_pending(&snap));
        }
        pk_obuf_free(&snap);
        if (rc != PK_OK)
            pk__repl_enqueue(st, p); /* again on the next pump */
        return m->bytes >= MSG_BYTES;
    }
    default: /* HELLO, SNAP: an answer is on its way */
        return 0;
    }
    if ((t = rt_get(rp, rt)) == NULL) {
        pk__repl_enqueue(st, p);
        return 1;
    }
    /* Followers reading p learn what is committed (pk_hotread.h). */
    if (rp->commit_want[p] > rp_now()) {
        const pk_partition *pt = rp_part(rp->srv, p);
        uint64_t c = pt ? pk__repl_commit_pos(rp, pt, p, rp_now()) : 0;
        if (c > st->csent[p]) {
            st->csent[p] = c;
            msg_add(m, 'C', p, le, c, "", 0);
        }
    }
    log_ctx lc = {m, st, p, NULL};
    rc = rp->rcache ? log_read(rp, t, &lc, st->sent[p] + 1)
                    : pk_store_log_read(t, p, st->sent[p] + 1, on_record, &lc);
    if (rc == PK_ERANGE) {
        st->state[p] = PS_NEEDSNAP; /* trimmed: the next message */
        pk__repl_enqueue(st, p);
        return 0;
    }
    if (rc == LOG_FULL) {
        pk__repl_enqueue(st, p); /* more after this message */
        return 1;
    }
    /* After every record, and once the read leases of p ended (the sweep
     * sends it again till then). */
    if (rc == PK_OK && pk_repl_handing_off(rp->srv, p) &&
        !pk__repl_leased(rp, p, rp_now()))
        msg_add(m, 'R', p, le, st->sent[p], "", 0);
    return 0;
}

/* Sends messages while the window allows: queued partitions first, a
 * heartbeat when nothing was sent for HEARTBEAT_MS. */
static void pump(rp_stream *st, pk_txn **rt)
{
    pk_repl *rp = st->rp;
    pk_server *s = rp->srv;
    uint64_t now = rp_now();

    if (s->txn && !rp->pre)
        return; /* uncommitted records: the check phase pumps */
    while (st->active && st->inflight < WINDOW &&
           (st->nqueue || now - st->last_send_ms >= HEARTBEAT_MS)) {
        msg m = {{0}, 0, 0, NULL, 0};
        pk_obuf cmd;
        rp_call *call;
        char id[24];
        uint32_t taken = 0;
        int full = 0;

        pk_obuf_init(&m.args);
        /* Oldest first; partitions re-queued by fill go to the tail. */
        while (!full && taken < st->nqueue) {
            uint32_t p = st->queue[taken++];
            const pk_partition *pt = rp_part(s, p);
            st->queued[p] = 0;
            if (pt == NULL || pt->nreplicas == 0 ||
                pt->replicas[0] != s->cluster.self ||
                !rp_is_follower(pt, st->node) ||
                st->epoch[p] != rp->lead_epoch[p])
                continue;
            full = fill(st, &m, p, rt);
        }
        memmove(st->queue, st->queue + taken,
                (st->nqueue - taken) * sizeof(uint32_t));
        st->nqueue -= taken;
        call = calloc(1, sizeof(*call));
        if (call == NULL) {
            pk_obuf_free(&m.args);
            free(m.ents);
            return;
        }
        call->st = st;
        call->n = m.n;
        call->ents = m.ents;
        call->sent_ms = now;
        pk_obuf_init(&cmd);
        pk_reply_array(&cmd, 5 + 5 * (size_t)m.n);
        pk_reply_bulk_str(&cmd, "PK.REPL");
        pk_reply_bulk_str(&cmd, "PUSH");
        snprintf(id, sizeof(id), "%u", s->cluster.self);
        pk_reply_bulk_str(&cmd, id);
        put_u64(&cmd, s->cluster.map ? s->cluster.map->epoch : 0);
        put_u64(&cmd, m.n);
        if (pk_obuf_pending(&m.args))
            pk_obuf_append(&cmd, m.args.data + m.args.head,
                           pk_obuf_pending(&m.args));
        pk_obuf_free(&m.args);
        if (st->inflight++ == 0)
            st->last_reply_ms = now; /* the reply clock starts */
        st->last_send_ms = now;
        if (pk_link_call_stream(s, st->addr, &cmd, on_reply, call) != PK_OK) {
            st->inflight--;
            for (uint32_t i = 0; i < call->n; i++) {
                st->state[call->ents[i].part] = PS_NEW;
                pk__repl_enqueue(st, call->ents[i].part);
            }
            free(call->ents);
            free(call);
            pk_obuf_free(&cmd);
            return;
        }
        pk_obuf_free(&cmd);
        if (taken == 0 && m.n == 0)
            break; /* one heartbeat */
    }
}

void pk__repl_early(pk_repl *rp, uint32_t p)
{
    if (rp->early_set[p])
        return;
    rp->early_set[p] = 1;
    rp->early[rp->nearly++] = p;
}

void pk_repl_precommit(pk_server *s)
{
    pk_repl *rp = s->repl;
    pk_txn *rt = s->txn;

    if (rp == NULL || rp->np == 0 || rp->closing || s->txn == NULL ||
        !rp->parallel)
        return;
    rp->pre = rp->in_pump = 1;
    rp->round++; /* the round cache points into this transaction */
    for (rp_stream *st = rp->streams; st; st = st->next)
        pump(st, &rt);
    rp->pre = rp->in_pump = 0;
}

void pk__repl_pump_all(pk_repl *rp)
{
    pk_txn *rt = NULL;

    if (rp->closing)
        return;
    rp->in_pump = 1;
    for (rp_stream *st = rp->streams; st; st = st->next)
        pump(st, &rt);
    rp->in_pump = 0;
    rt_end(&rt);
}

/* Queues every led partition whose log is ahead of what a stream sent
 * (records written by expiry, or anything not queued on the way). */
void pk__repl_sweep(pk_repl *rp)
{
    pk_server *s = rp->srv;
    const pk_pmap *m = s->cluster.map;
    pk_txn *t = NULL;

    if (m == NULL || rt_get(rp, &t) == NULL)
        return;
    for (uint32_t p = 0; p < rp->np && p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        uint64_t last = 0;
        if (pt->nreplicas < 2 || pt->replicas[0] != s->cluster.self ||
            pk_store_log_last(t, p, &last) != PK_OK)
            continue;
        for (int i = 1; i < pt->nreplicas; i++) {
            rp_stream *st = rp_stream_of(rp, pt->replicas[i]);
            /* A release is sent again: a stepped partition's expires,
             * and one waits for read leases to end. */
            if (st && st->state[p] == PS_STREAM &&
                (st->sent[p] < last || pk_repl_handing_off(s, p)))
                pk__repl_enqueue(st, p);
        }
    }
    pk_txn_abort(t);
}

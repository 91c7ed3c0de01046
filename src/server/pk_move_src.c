/*
 * pk_move_src: the source side of partition moves -- one session per
 * target, driven by the replies of its calls and by the mover's tick (see
 * pk_move.h for the protocol).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap_move.h"
#include "proto/pk_rreply.h"
#include "server/pk_link.h"
#include "server/pk_move_int.h"
#include "server/pk_repl.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

static void pump(pk_msess *ss);

static void fail(pk_msess *ss, const char *why)
{
    if (ss->failed || ss->phase >= MV_COMMIT)
        return;
    ss->failed = 1;
    snprintf(ss->why, sizeof(ss->why), "%s", why);
}

static void on_reply(void *ctx, const pk_rr *r, const char *err)
{
    pk_msess *ss = ctx;

    ss->inflight--;
    ss->reply_ms = pk__mv_now();
    if (err)
        fail(ss, err);
    else if (r->type == PK_RR_ERROR)
        fail(ss, r->str);
    /* A link failing inside pk_link_call answers every call at once, from
     * within send_cmd: its caller pumps when it returns. */
    if (!ss->sending)
        pump(ss);
}

/* Sends cmd (consumed) to the target; a failure fails the session. */
static void send_cmd(pk_msess *ss, pk_obuf *cmd)
{
    int rc;

    if (ss->inflight++ == 0)
        ss->reply_ms = pk__mv_now();
    ss->sending = 1;
    rc = pk_link_call(ss->mv->srv, ss->addr, cmd, on_reply, ss);
    ss->sending = 0;
    pk_obuf_reset(cmd);
    if (rc != PK_OK) {
        ss->inflight--;
        fail(ss, pk_strerror(rc));
    }
}

static void ignore_reply(void *ctx, const pk_rr *r, const char *err)
{
    (void)ctx;
    (void)r;
    (void)err;
}

/* Lifts the fence, releases log holds, frees the session. */
static void finish(pk_msess *ss)
{
    pk_mover *mv = ss->mv;
    pk_server *s = mv->srv;
    uint32_t done = 0;
    int fenced = 0, ss_failed;

    for (uint32_t i = 0; i < ss->n; i++) {
        uint32_t p = ss->parts[i];
        fenced |= mv->fenced[p];
        mv->fenced[p] = 0;
        mv->busy[p] = 0;
        pk_store_log_hold(s->store, p, 0);
        done += ss->switched[i];
    }
    pk_export_free(ss->exp);
    pk_txn_abort(ss->snap);
    if (ss->failed && !mv->closing) {
        /* Best effort: the target forgets its partial imports. */
        pk_obuf cmd;
        pk_obuf_init(&cmd);
        pk_reply_array(&cmd, 2 + ss->n);
        pk_reply_bulk_str(&cmd, "PK.MOVE");
        pk_reply_bulk_str(&cmd, "ABORT");
        for (uint32_t i = 0; i < ss->n; i++)
            pk__mv_put_u64(&cmd, ss->parts[i]);
        pk_link_call(s, ss->addr, &cmd, ignore_reply, NULL);
        pk_obuf_free(&cmd);
        if (ss->target < mv->nretry)
            mv->retry_at[ss->target] = pk__mv_now() + 1000;
        fprintf(stderr, "partkv: move of %u partitions to %s failed: %s\n",
                ss->n, ss->addr, ss->why);
    }
    for (pk_msess **pp = &mv->sessions; *pp; pp = &(*pp)->next)
        if (*pp == ss) {
            *pp = ss->next;
            break;
        }
    ss_failed = ss->failed;
    free(ss->parts);
    free(ss->chunk);
    free(ss->seq);
    free(ss->switched);
    free(ss);
    mv->janitor |= done > 0;
    /* At shutdown the held writes never run: their connections close
     * unanswered (the map the loop holds may already be stale). */
    if (fenced && !mv->closing)
        pk_conn_release_all(s);
    if (!ss_failed)
        pk__mv_scan(mv); /* the next partitions to that target, at once */
}

/*
 * The session's share of the cluster-wide rate, bytes/s (0: none).  Nodes
 * do not know each other's sessions, but the map says which nodes are
 * sending: each source takes an equal part of the rate, and splits it
 * among its own sessions that are still copying.  (Counting partitions
 * instead would hand empty and queued partitions a share nobody uses.)
 */
static double share(const pk_msess *ss)
{
    const pk_mover *mv = ss->mv;
    uint32_t copying = 0;
    int paused;
    uint64_t rate;

    pk_agent_rebalance(mv->srv->agent, &paused, &rate);
    if (rate == 0)
        return 0;
    for (const pk_msess *o = mv->sessions; o; o = o->next)
        copying += o->phase <= MV_TAIL && !o->failed;
    return (double)rate / (mv->sources ? mv->sources : 1) /
           (copying ? copying : 1);
}

static int paused(const pk_msess *ss)
{
    int p;
    uint64_t rate;

    pk_agent_rebalance(ss->mv->srv->agent, &p, &rate);
    return p;
}

/* Refills the token bucket; 1 when a chunk may go now. */
static int may_send(pk_msess *ss)
{
    double r = share(ss);
    uint64_t now = pk__mv_now();

    if (r == 0) { /* unthrottled: nothing to repay when a cap returns */
        ss->tokens = 0;
        ss->tok_ms = now;
        return 1;
    }
    ss->tokens += r * (double)(now - ss->tok_ms) / 1000.0;
    ss->tok_ms = now;
    if (ss->tokens > r / 10 + MV_CHUNK) /* at most 100 ms of burst */
        ss->tokens = r / 10 + MV_CHUNK;
    return ss->tokens > 0;
}

static int begin_snapshot(pk_msess *ss)
{
    pk_server *s = ss->mv->srv;
    int rc;

    pk_srv_settle(s); /* a partition we followed may have records waiting */
    rc = pk_txn_begin(s->store, 1, &ss->snap);

    for (uint32_t i = 0; rc == PK_OK && i < ss->n; i++) {
        rc = pk_store_log_last(ss->snap, ss->parts[i], &ss->seq[i]);
        if (rc == PK_OK)
            rc = pk_store_log_hold(s->store, ss->parts[i], ss->seq[i] + 1);
    }
    if (rc == PK_OK)
        rc = pk_export_new(ss->snap, ss->parts[0], &ss->exp);
    return rc;
}

/* COPY: sends snapshot chunks while the window and the rate allow. */
static void copy_some(pk_msess *ss)
{
    char *buf = ss->chunk;

    while (!ss->failed && ss->inflight < MV_WINDOW && ss->cur < ss->n &&
           !paused(ss) && may_send(ss)) {
        size_t n = 0;
        pk_obuf cmd;
        int rc = pk_export_read(ss->exp, buf, MV_CHUNK, &n);
        if (rc != PK_OK) {
            fail(ss, pk_strerror(rc));
            return;
        }
        pk_obuf_init(&cmd);
        if (n) {
            pk_reply_array(&cmd, 4);
            pk_reply_bulk_str(&cmd, "PK.MOVE");
            pk_reply_bulk_str(&cmd, "DATA");
            pk__mv_put_u64(&cmd, ss->parts[ss->cur]);
            pk_reply_bulk(&cmd, buf, n);
            ss->tokens -= (double)n;
            ss->bytes += n;
        } else { /* this partition's stream is complete */
            pk_reply_array(&cmd, 3);
            pk_reply_bulk_str(&cmd, "PK.MOVE");
            pk_reply_bulk_str(&cmd, "DONE");
            pk__mv_put_u64(&cmd, ss->parts[ss->cur]);
            pk_export_free(ss->exp);
            ss->exp = NULL;
            if (++ss->cur < ss->n &&
                (rc = pk_export_new(ss->snap, ss->parts[ss->cur], &ss->exp)) !=
                    PK_OK)
                fail(ss, pk_strerror(rc));
        }
        send_cmd(ss, &cmd);
        pk_obuf_free(&cmd);
    }
}

#define ROUND_FULL 1 /* on_record: this round has shipped enough */

typedef struct log_batch {
    pk_msess *ss;
    uint64_t cap;
    uint32_t part;
    uint64_t *seq;
    pk_obuf args; /* seq rec pairs */
    uint32_t nargs;
} log_batch;

static void flush_batch(log_batch *b)
{
    pk_obuf cmd;

    if (b->nargs == 0)
        return;
    pk_obuf_init(&cmd);
    pk_reply_array(&cmd, 3 + b->nargs);
    pk_reply_bulk_str(&cmd, "PK.MOVE");
    pk_reply_bulk_str(&cmd, "LOG");
    pk__mv_put_u64(&cmd, b->part);
    pk_obuf_append(&cmd, b->args.data + b->args.head,
                   pk_obuf_pending(&b->args));
    pk_obuf_reset(&b->args);
    b->nargs = 0;
    send_cmd(b->ss, &cmd);
    pk_obuf_free(&cmd);
}

static int on_record(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    log_batch *b = ctx;

    pk__mv_put_u64(&b->args, (int64_t)seq);
    pk_reply_bulk(&b->args, rec, len);
    b->nargs += 2;
    *b->seq = seq;
    b->ss->bytes += len;
    b->ss->round_bytes += len;
    b->ss->tokens -= (double)len;
    if (pk_obuf_pending(&b->args) >= MV_CHUNK)
        flush_batch(b);
    return b->cap && b->ss->round_bytes >= b->cap ? ROUND_FULL : 0;
}

/* Ships the records after what was shipped, from a fresh read txn: up to
 * about cap bytes (0: all of them, the final round under the fence). */
static void ship_log(pk_msess *ss, uint64_t cap)
{
    pk_server *s = ss->mv->srv;
    pk_txn *t = NULL;
    log_batch b = {ss, 0, 0, NULL, {0}, 0};
    int rc = pk_txn_begin(s->store, 1, &t);

    pk_obuf_init(&b.args);
    ss->round_bytes = 0;
    /* A capped round starts where the last one did, so one busy partition
     * cannot keep the others' records waiting for the final round. */
    for (uint32_t k = 0; rc == PK_OK && k < ss->n && !ss->failed &&
                         (cap == 0 || ss->round_bytes < cap);
         k++) {
        uint32_t i = (k + (uint32_t)ss->rounds) % ss->n;
        b.part = ss->parts[i];
        b.cap = cap;
        b.seq = &ss->seq[i];
        rc = pk_store_log_read(t, b.part, ss->seq[i] + 1, on_record, &b);
        rc = rc == ROUND_FULL ? PK_OK : rc;
        flush_batch(&b);
        if (rc == PK_OK)
            pk_store_log_hold(s->store, b.part, ss->seq[i] + 1);
    }
    pk_obuf_free(&b.args);
    pk_txn_abort(t);
    if (rc != PK_OK)
        fail(ss,
             rc == PK_ERANGE ? "log trimmed under the move" : pk_strerror(rc));
}

static void send_simple(pk_msess *ss, const char *sub)
{
    pk_obuf cmd;

    pk_obuf_init(&cmd);
    pk_reply_array(&cmd, 2);
    pk_reply_bulk_str(&cmd, "PK.MOVE");
    pk_reply_bulk_str(&cmd, sub);
    send_cmd(ss, &cmd);
    pk_obuf_free(&cmd);
}

/* Sends our map to the target: it then knows what we know. */
static void push_map(pk_msess *ss)
{
    const pk_pmap *m = ss->mv->srv->cluster.map;
    uint8_t *buf = NULL;
    size_t len = 0;
    pk_obuf cmd;

    if (m == NULL || pk_pmap_encode(m, &buf, &len) != PK_OK) {
        fail(ss, "cannot encode the map");
        return;
    }
    pk_obuf_init(&cmd);
    pk_reply_array(&cmd, 3);
    pk_reply_bulk_str(&cmd, "PK.MOVE");
    pk_reply_bulk_str(&cmd, "PUSHMAP");
    pk_reply_bulk(&cmd, buf, len);
    send_cmd(ss, &cmd);
    free(buf);
    pk_obuf_free(&cmd);
}

/*
 * The commit is decided; the held writes may run again only once our own
 * map shows it (else they would run here, on the old leader).  The agent
 * posts the committed map before it reports the job, so this is normally
 * at once; otherwise pk__mv_check calls again after each new map.
 */
static void awaited(pk_msess *ss)
{
    const pk_pmap *m = ss->mv->srv->cluster.map;

    for (uint32_t i = 0; i < ss->n; i++)
        if (ss->switched[i] &&
            (m == NULL || pk_pmap_leader(m, ss->parts[i]) != ss->target))
            return;
    /* Hand the target the map before the writes are redirected there. */
    ss->phase = MV_PUSH;
    push_map(ss);
    pump(ss);
}

static void on_committed(pk_agent_job *j)
{
    pk_msess *ss = j->ctx;

    ss->phase = MV_AWAIT;
    awaited(ss);
}

/* 1 while a read lease of one of the session's partitions runs. */
static int leased(const pk_msess *ss)
{
    for (uint32_t i = 0; i < ss->n; i++)
        if (pk_repl_read_leased(ss->mv->srv, ss->parts[i]))
            return 1;
    return 0;
}

/* Advances the session as far as its replies allow. */
static void pump(pk_msess *ss)
{
    pk_mover *mv = ss->mv;

    if (ss->failed) {
        if (ss->inflight == 0)
            finish(ss);
        return;
    }
    switch (ss->phase) {
    case MV_BEGIN:
        if (ss->inflight)
            return;
        int rc = begin_snapshot(ss);
        if (rc != PK_OK) {
            fail(ss, pk_strerror(rc));
            pump(ss);
            return;
        }
        ss->phase = MV_COPY;
        ss->tok_ms = pk__mv_now();
        /* fall through */
    case MV_COPY:
        copy_some(ss);
        if (ss->failed || ss->cur < ss->n || ss->inflight)
            break;
        pk_txn_abort(ss->snap);
        ss->snap = NULL;
        ss->phase = MV_TAIL;
        /* fall through */
    case MV_TAIL:
        if (ss->inflight || paused(ss) || !may_send(ss))
            break;
        if (ss->rounds > 0 && ss->round_bytes < MV_FENCE_BYTES) {
            /* Fence now; the final round runs at the next tick, after this
             * iteration has committed the writes it already ran. */
            for (uint32_t i = 0; i < ss->n; i++)
                mv->fenced[ss->parts[i]] = 1;
            ss->fence_ms = pk__mv_now();
            ss->phase = MV_FENCE;
            break;
        }
        ss->rounds++;
        ship_log(ss, MV_TAIL_CAP);
        break;
    case MV_FENCE: /* called from the tick */
        ship_log(ss, 0);
        ss->phase = MV_FINAL;
        break;
    case MV_FINAL:
        if (ss->inflight)
            break;
        send_simple(ss, "SYNC"); /* after the replies: records committed */
        ss->phase = MV_SYNC;
        break;
    case MV_SYNC:
        /* The switch waits for the read leases of the partitions to end
         * (none is granted while they are fenced): a follower holding one
         * would read past writes to the new owner.  The tick pumps. */
        if (ss->inflight || leased(ss))
            break;
        ss->phase = MV_COMMIT;
        ss->job.target = ss->target;
        ss->job.n = ss->n;
        ss->job.parts = ss->parts;
        ss->job.switched = ss->switched;
        ss->job.done = on_committed;
        ss->job.ctx = ss;
        pk_agent_commit(mv->srv->agent, &ss->job);
        break;
    case MV_COMMIT:
    case MV_AWAIT:
        break;
    case MV_PUSH:
        if (ss->inflight == 0) {
            finish(ss);
            return;
        }
        break;
    }
    if (ss->failed && ss->inflight == 0)
        finish(ss);
}

/* Starts a session moving parts[0..n) (taken) to node target. */
static void start(pk_mover *mv, uint32_t target, uint32_t *parts, uint32_t n)
{
    pk_server *s = mv->srv;
    const pk_pmap *m = s->cluster.map;
    pk_msess *ss = calloc(1, sizeof(*ss));
    pk_obuf cmd;
    char epoch[24];

    if (ss == NULL || (ss->seq = calloc(n, sizeof(*ss->seq))) == NULL ||
        (ss->switched = calloc(n, 1)) == NULL ||
        (ss->chunk = malloc(MV_CHUNK)) == NULL) {
        if (ss) {
            free(ss->seq);
            free(ss->switched);
        }
        free(ss);
        free(parts);
        return;
    }
    ss->mv = mv;
    ss->target = target;
    snprintf(ss->addr, sizeof(ss->addr), "%s", m->nodes[target].addr);
    ss->parts = parts;
    ss->n = n;
    ss->started_ms = pk__mv_now();
    for (uint32_t i = 0; i < n; i++)
        mv->busy[parts[i]] = 1;
    ss->next = mv->sessions;
    mv->sessions = ss;
    pk__mv_wake(mv);
    snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)m->epoch);
    push_map(ss); /* the target's poll may not have seen the move yet */
    pk_obuf_init(&cmd);
    pk_reply_array(&cmd, 3 + n);
    pk_reply_bulk_str(&cmd, "PK.MOVE");
    pk_reply_bulk_str(&cmd, "BEGIN");
    pk_reply_bulk_str(&cmd, epoch);
    for (uint32_t i = 0; i < n; i++)
        pk__mv_put_u64(&cmd, parts[i]);
    send_cmd(ss, &cmd);
    pk_obuf_free(&cmd);
    pump(ss);
}

/* The partitions moving from us to t that no session holds yet, up to a
 * session's worth; NULL when there are none (or no memory). */
static uint32_t *pending_to(pk_mover *mv, pk_txn *txn, uint32_t t, uint32_t *n)
{
    const pk_pmap *m = mv->srv->cluster.map;
    uint32_t self = mv->srv->cluster.self, *parts = NULL;
    uint64_t bytes = 0;

    *n = 0;
    for (uint32_t p = 0;
         p < m->npartitions && *n < MV_SESSION_MAX && bytes < MV_SESSION_BYTES;
         p++) {
        uint32_t to;
        pk_part_stats st;
        if (!pk_pmap_moving(m, p, &to) || to != t || mv->busy[p] ||
            pk_pmap_leader(m, p) != self)
            continue;
        if (parts == NULL &&
            (parts = malloc(MV_SESSION_MAX * sizeof(*parts))) == NULL)
            return NULL;
        parts[(*n)++] = p;
        /* Sizes bound a session: its snapshot stays open while it copies */
        if (txn && pk_store_part_stats(txn, p, &st) == PK_OK)
            bytes += st.bytes;
    }
    return parts;
}

/* Opens a session to every target that our partitions are moving to and
 * that has none open (one per target at a time). */
void pk__mv_scan(pk_mover *mv)
{
    pk_server *s = mv->srv;
    const pk_pmap *m = s->cluster.map;
    uint32_t self = s->cluster.self;
    uint64_t now = pk__mv_now();
    uint8_t *want;
    pk_txn *txn = NULL;

    if (m == NULL || self == PK_NODE_NONE || mv->moving == 0 || mv->closing)
        return;
    if (mv->nretry < m->nnodes) {
        uint64_t *r = realloc(mv->retry_at, m->nnodes * sizeof(*r));
        if (r == NULL)
            return;
        memset(r + mv->nretry, 0, (m->nnodes - mv->nretry) * sizeof(*r));
        mv->retry_at = r;
        mv->nretry = m->nnodes;
    }
    /* One pass finds the targets with work; only those are collected. */
    if ((want = calloc(m->nnodes, 1)) == NULL)
        return;
    for (uint32_t p = 0; p < m->npartitions; p++) {
        uint32_t to;
        if (pk_pmap_moving(m, p, &to) && to < m->nnodes && !mv->busy[p] &&
            pk_pmap_leader(m, p) == self && mv->retry_at[to] <= now)
            want[to] = 1;
    }
    for (pk_msess *ss = mv->sessions; ss; ss = ss->next)
        if (ss->target < m->nnodes)
            want[ss->target] = 0;
    for (uint32_t t = 0; t < m->nnodes; t++) {
        uint32_t *parts, n;
        if (!want[t])
            continue;
        if (txn == NULL && pk_txn_begin(s->store, 1, &txn) != PK_OK)
            txn = NULL;
        parts = pending_to(mv, txn, t, &n);
        if (n)
            start(mv, t, parts, n);
        else
            free(parts);
    }
    pk_txn_abort(txn);
    free(want);
}

void pk__mv_pump_all(pk_mover *mv)
{
    pk_msess *ss = mv->sessions, *next;

    for (; ss; ss = next) {
        next = ss->next; /* pump may free ss */
        pump(ss);
    }
}

/* Ends sessions whose moves were cancelled, or that are stuck. */
void pk__mv_check(pk_mover *mv)
{
    pk_server *s = mv->srv;
    const pk_pmap *m = s->cluster.map;
    uint64_t now = pk__mv_now();

    for (pk_msess *ss = mv->sessions, *next; ss; ss = next) {
        next = ss->next; /* a dropped link may end ss */
        if (ss->phase == MV_AWAIT) {
            awaited(ss);
            continue;
        }
        if (ss->phase >= MV_COMMIT)
            continue;
        for (uint32_t i = 0; m && !ss->failed && i < ss->n; i++) {
            uint32_t to, p = ss->parts[i];
            if (!pk_pmap_moving(m, p, &to) || to != ss->target ||
                pk_pmap_leader(m, p) != s->cluster.self) {
                fail(ss, "move cancelled");
                if (ss->target < mv->nretry)
                    mv->retry_at[ss->target] = 0;
            }
        }
        /* A stuck target, a switch held too long, or a failed session
         * still waiting on a peer that does not answer: every call in
         * flight fails now, and the session ends. */
        if (ss->inflight &&
            ((ss->phase >= MV_FENCE && now - ss->fence_ms > MV_FENCE_MAX_MS) ||
             now - ss->reply_ms >
                 (ss->failed ? MV_FAILED_DRAIN_MS : MV_STALL_MS))) {
            fail(ss, "target too slow");
            pk_link_drop(s, ss->addr);
        }
    }
}

void pk__mv_end_all(pk_mover *mv)
{
    mv->closing = 1;
    for (pk_msess *ss = mv->sessions; ss; ss = ss->next)
        fail(ss, "shutting down");
    pk_link_drop_all_calls(mv->srv);
    while (mv->sessions)
        finish(mv->sessions);
}

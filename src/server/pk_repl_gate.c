/* pk_repl_gate: replies held for replicas' acknowledgements, and WAIT. */
#include "server/pk_repl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_ctx.h"
#include "store/pk_store_log.h"

#define ACK_TIMEOUT_MS 2000
#define WRITES_KEPT 32 /* per connection, for WAIT */

/* 1: done, 0: wait, -1: cannot be (not the leader any more). */
static int need_state(pk_repl *rp, const rp_need *n, uint64_t now)
{
    pk_server *s = rp->srv;
    const pk_partition *pt = rp_part(s, n->part);

    if (n->epoch) /* a follower's read: what it saw is committed */
        return pk_repl_follow_epoch(s, n->part) != n->epoch ? -1
               : rp->commit_ep[n->part] == n->epoch &&
                       rp->commit_seen[n->part] >= n->seq
                   ? 1
                   : 0;
    if (pt == NULL || pt->nreplicas == 0 || pt->replicas[0] != s->cluster.self)
        return -1;
    if (pt->nreplicas <= 1) /* a follower just removed may hold a lease */
        return pk__repl_holders_have(rp, n->part, now) >= n->seq;
    if (rp->stepped[n->part])
        return -1;
    if (!pk__repl_lease_ok(rp, pt, n->part, now) ||
        pk__repl_holders_have(rp, n->part, now) < n->seq)
        return 0;
    return 1 + pk__repl_acked(rp, pt, n->part, n->seq) >=
           rp_copies_needed(s, pt->nreplicas);
}

static void unlink_conn(pk_conn **head, pk_conn *c, int wait)
{
    for (pk_conn **pp = head; *pp;
         pp = wait ? &(*pp)->wait_next : &(*pp)->ack_next)
        if (*pp == c) {
            *pp = wait ? c->wait_next : c->ack_next;
            return;
        }
}

/* Replaces the gated replies of c by errors, keeping what follows them. */
static void fail_gate(pk_conn *c)
{
    pk_obuf *o = &c->out;
    size_t start = o->head + c->gate_mark, end = o->head + c->gate_end;
    size_t tail = o->len > end ? o->len - end : 0;
    char *keep = tail ? malloc(tail) : NULL;

    if (tail && keep == NULL)
        tail = 0;
    if (tail)
        memcpy(keep, o->data + end, tail);
    o->len = start;
    for (uint32_t i = 0; i < c->gate_cmds; i++)
        pk_reply_error(o, "TRYAGAIN not acknowledged by enough replicas in "
                          "time (the write may or may not have been "
                          "applied); retry");
    if (tail)
        pk_obuf_append(o, keep, tail);
    free(keep);
}

/* 1: every need met, 0: wait, -1: give up. */
static int gate_state(pk_repl *rp, pk_conn *c, uint64_t now)
{
    int done = 1;

    for (uint32_t i = 0; i < c->nneeds; i++) {
        int st = need_state(rp, &c->needs[i], now);
        if (st < 0)
            return -1;
        done &= st;
    }
    return done;
}

static int64_t wait_count(pk_repl *rp, pk_conn *c);

void pk__repl_release(pk_repl *rp)
{
    uint64_t now = rp_now();
    pk_conn **pp = &rp->waiters, *c;

    rp->release_due = 0;
    while ((c = *pp) != NULL) {
        int st = gate_state(rp, c, now);
        if (st == 0 && now - c->ack_ms < ACK_TIMEOUT_MS) {
            pp = &c->ack_next;
            continue;
        }
        *pp = c->ack_next;
        c->ack_next = NULL;
        if (st != 1)
            fail_gate(c);
        c->waiting_ack = 0;
        c->nneeds = 0;
        pk_conn_resume(c);
        pp = &rp->waiters; /* resume may have changed the list */
    }
    pp = &rp->waits;
    while ((c = *pp) != NULL) {
        int64_t n = wait_count(rp, c);
        if (n < c->wait_n &&
            (c->wait_deadline == 0 || now < c->wait_deadline)) {
            pp = &c->wait_next;
            continue;
        }
        *pp = c->wait_next;
        c->wait_next = NULL;
        c->in_wait = 0;
        c->waiting_fwd = 0;
        pk_reply_int(&c->out, n);
        pk_conn_resume(c);
        pp = &rp->waits;
    }
}

void pk_repl_note(pk_cmd_ctx *x, int write)
{
    pk_server *s = x->srv;
    pk_repl *rp = s->repl;
    pk_conn *c = x->c;
    const pk_partition *pt;
    uint64_t seq = 0, fep = 0;
    uint32_t p = x->part;

    if (rp == NULL || !x->have_part || p >= rp->np ||
        (pt = rp_part(s, p)) == NULL ||
        (pt->nreplicas < 2 && !pk__repl_leased(rp, p, rp_now())))
        return;
    /* A read a follower served (pk_hotread.c) waits for the leader to
     * commit what it saw: another follower's lease must not read older. */
    if (!write && pt->replicas[0] != s->cluster.self)
        fep = pk_repl_follow_epoch(s, p);
    if (s->txn) {
        pk_store_log_last(s->txn, p, &seq);
    } else if (fep) {
        pk_txn *t;
        if (pk_txn_begin(s->store, 1, &t) != PK_OK) {
            c->closing = 1; /* no way to wait: the reply must not leave */
            return;
        }
        pk_store_log_last(t, p, &seq);
        pk_txn_abort(t);
    }
    for (uint32_t i = 0; i < c->nneeds; i++)
        if (c->needs[i].part == p && c->needs[i].epoch == fep) {
            if (seq > c->needs[i].seq)
                c->needs[i].seq = seq;
            goto queued;
        }
    if (c->nneeds == c->cap_needs) {
        uint32_t cap = c->cap_needs ? 2 * c->cap_needs : 8;
        rp_need *n = realloc(c->needs, cap * sizeof(*n));
        if (n == NULL) { /* no way to wait: the reply must not leave */
            c->closing = 1;
            return;
        }
        c->needs = n;
        c->cap_needs = cap;
    }
    c->needs[c->nneeds].part = p;
    c->needs[c->nneeds].seq = seq;
    c->needs[c->nneeds].epoch = fep;
    c->nneeds++;
queued:
    if (!write)
        return;
    for (int i = 1; i < pt->nreplicas; i++) {
        rp_stream *st = rp_stream_of(rp, pt->replicas[i]);
        if (st && st->state[p] == PS_STREAM)
            pk__repl_enqueue(st, p);
    }
    /* WAIT counts the replicas that have this connection's writes. */
    for (uint32_t i = 0; i < c->nwrites; i++)
        if (c->writes[i].part == p) {
            c->writes[i].seq = seq;
            return;
        }
    if (c->writes == NULL &&
        (c->writes = calloc(WRITES_KEPT, sizeof(rp_need))) == NULL)
        return;
    if (c->nwrites < WRITES_KEPT)
        c->nwrites++;
    else /* the oldest goes */
        memmove(c->writes, c->writes + 1, (WRITES_KEPT - 1) * sizeof(rp_need));
    c->writes[c->nwrites - 1].part = p;
    c->writes[c->nwrites - 1].seq = seq;
}

int pk_repl_gate(pk_conn *c)
{
    pk_repl *rp = c->srv->repl;
    int st;

    if (rp == NULL || c->nneeds == 0)
        return 0;
    if (c->waiting_ack) {
        /* Commands re-run while the connection waits (released by a move's
         * switch): their replies join the kept ones. */
        c->gate_end = pk_obuf_pending(&c->out);
        c->gate_cmds += c->iter_cmds;
        return 1;
    }
    st = gate_state(rp, c, rp_now());
    if (st == 1) {
        c->nneeds = 0;
        return 0;
    }
    c->gate_mark = c->iter_mark;
    c->gate_end = pk_obuf_pending(&c->out);
    c->gate_cmds = c->iter_cmds;
    if (st < 0) {
        fail_gate(c);
        c->nneeds = 0;
        return 0;
    }
    c->waiting_ack = 1;
    c->ack_ms = rp_now();
    c->ack_next = rp->waiters;
    rp->waiters = c;
    return 1;
}

void pk_repl_forget_needs(pk_conn *c)
{
    c->nneeds = 0;
}

void pk_repl_conn_closed(pk_server *s, pk_conn *c)
{
    pk_repl *rp = s->repl;

    if (rp) {
        if (c->waiting_ack)
            unlink_conn(&rp->waiters, c, 0);
        if (c->in_wait)
            unlink_conn(&rp->waits, c, 1);
    }
    free(c->needs);
    free(c->writes);
    c->needs = c->writes = NULL;
    c->nneeds = c->nwrites = 0;
}

/* The commit that records went out before has ended. */
static void early_done(pk_repl *rp)
{
    for (uint32_t i = 0; i < rp->nearly; i++)
        rp->early_set[rp->early[i]] = 0;
    rp->nearly = 0;
}

void pk_repl_committed(pk_server *s)
{
    pk_repl *rp = s->repl;

    if (rp == NULL || rp->np == 0)
        return;
    early_done(rp);
    /* An imported snapshot must be on disk before the file names the
     * epoch it belongs to (with --fsync always the commit did it). */
    if (rp->snapped && s->cfg.fsync != PK_FSYNC_ALWAYS)
        pk_store_sync(s->store);
    rp->snapped = 0;
    if (rp->state_dirty)
        pk__repl_state_save(rp);
    pk__repl_pump_all(rp);
    if (rp->commit_moved) { /* followers' reads waiting for it */
        rp->commit_moved = 0;
        pk__repl_release(rp);
    }
}

void pk_repl_commit_failed(pk_server *s)
{
    pk_repl *rp = s->repl;

    /* What this iteration changed in memory is not on disk: back to the
     * file. */
    if (rp && rp->np) {
        pk__repl_state_load(rp);
        rp->state_dirty = 0;
        rp->snapped = 0;
        /* Records that went out before the commit are on followers and
         * not in our log: the next ones must not take their positions.
         * We stop leading those partitions (the controller promotes at a
         * new epoch), and so after a restart too. */
        for (uint32_t i = 0; i < rp->nearly; i++)
            pk__repl_step_down(rp, rp->early[i]);
        if (rp->nearly) {
            fprintf(stderr,
                    "partkv: a commit failed after records of %u "
                    "partitions went to followers; leaving them to be "
                    "promoted\n",
                    rp->nearly);
            rp->unclean = 1;
        }
        early_done(rp);
    }
}

int pk_repl_sent_early(const pk_server *s)
{
    return s->repl && s->repl->nearly > 0;
}

/* Replicas (followers) that hold every write this connection made. */
static int64_t wait_count(pk_repl *rp, pk_conn *c)
{
    int64_t n = -1;

    for (uint32_t i = 0; i < c->nwrites; i++) {
        const pk_partition *pt = rp_part(rp->srv, c->writes[i].part);
        int64_t k = 0;
        if (pt && pt->nreplicas && pt->replicas[0] == rp->srv->cluster.self)
            k = pk__repl_acked(rp, pt, c->writes[i].part, c->writes[i].seq);
        if (n < 0 || k < n)
            n = k;
    }
    if (n >= 0)
        return n;
    /* No writes yet: the followers we stream to. */
    n = 0;
    for (rp_stream *st = rp->streams; st; st = st->next)
        n += st->active && st->lease_until > rp_now();
    return n;
}

void pk_cmd_wait(pk_cmd_ctx *x)
{
    pk_repl *rp = x->srv->repl;
    pk_conn *c = x->c;
    int64_t n, ms;

    if (!pk_arg_i64(&x->argv[1], &n) || !pk_arg_i64(&x->argv[2], &ms)) {
        pk_reply_notint(x);
        return;
    }
    if (ms < 0) {
        pk_reply_error(x->out, "ERR timeout is negative");
        return;
    }
    if (rp == NULL) {
        pk_reply_int(x->out, 0);
        return;
    }
    /* Inside EXEC nothing blocks: Redis answers the count at once. */
    if (wait_count(rp, c) >= n || c->in_exec) {
        pk_reply_int(x->out, wait_count(rp, c));
        return;
    }
    c->wait_n = n;
    c->wait_deadline = ms ? rp_now() + (uint64_t)ms : 0;
    c->in_wait = 1;
    c->waiting_fwd = 1; /* runs nothing more until answered */
    c->iter_cmds--;     /* its reply comes later */
    c->wait_next = rp->waits;
    rp->waits = c;
}

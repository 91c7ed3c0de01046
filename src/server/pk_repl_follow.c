/* pk_repl_follow: the follower's side -- PK.REPL PUSH, FENCE, HANDOFF and
 * STEPPED. */
#include "server/pk_repl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_ctx.h"
#include "server/pk_watch.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

/* A handoff not completed by then ends. */
#define HANDOFF_MS 3000

/* Promises leader (whose map has epoch mapep) not to take a fence of its
 * partitions for FOLLOW_LEASE_MS, unless a fence against it was taken for
 * a map newer than its: a map that new shows the promotion, or -- if the
 * controller's CAS failed -- no promotion happened and the leader's data
 * is still the latest.  A partition whose promotion was left unfinished
 * is released by its leader once a follower answers FENCED (step_down).
 * Returns 1 if promised. */
static int promise(pk_repl *rp, uint32_t leader, uint64_t mapep)
{
    if (pk__repl_node_room(rp, leader) != PK_OK ||
        mapep < rp->fence_map[leader])
        return 0;
    rp->promise[leader] = rp_now();
    return 1;
}

static int u64_arg(const pk_arg *a, uint64_t *v)
{
    int64_t i;

    if (!pk_arg_i64(a, &i) || i < 0)
        return 0;
    *v = (uint64_t)i;
    return 1;
}

/*
 * Range scheme: whether records from a leader with map epoch mapep must
 * wait until this node has that map.  A split or merge relabels a range's
 * keys when a replica installs its map (pk_split.h); a record written by
 * the new map and applied before that relabel would be overwritten by it
 * (a key of the split's upper part, of the merged right range) or undone
 * (a delete).  The leader starts the partition over with a hello and
 * sends again.  A node without a map yet (just started) waits for it in
 * every scheme.
 */
static int map_behind(const pk_server *s, uint64_t mapep)
{
    const pk_pmap *m = s->cluster.map;

    return m == NULL || (m->scheme == PK_SCHEME_RANGE && m->epoch < mapep);
}

/* One entry of a PUSH; appends its result. */
static void push_entry(pk_cmd_ctx *x, pk_repl *rp, pk_txn *t, uint32_t leader,
                       uint64_t mapep, const pk_arg *a)
{
    uint64_t p, ep, seq, last = 0;
    char kind = a[0].len == 1 ? a[0].ptr[0] : '?';
    int rc, done;

    if (!u64_arg(&a[1], &p) || !u64_arg(&a[2], &ep) || !u64_arg(&a[3], &seq) ||
        p >= rp->np) {
        pk_reply_error(x->out, "ERR bad replication entry");
        return;
    }
    if (ep < rp->fence_epoch[p]) {
        pk_reply_errorf(x->out, "FENCED %llu",
                        (unsigned long long)rp->fence_epoch[p]);
        return;
    }
    if (ep > rp->fence_epoch[p]) {
        rp->fence_epoch[p] = ep;
        rp->state_dirty = 1;
    }
    if (rp->fenced_from[p] && rp->fenced_from[p] != leader + 1) {
        /* The new leader, with the map that promoted it: the old one is
         * promised nothing until it has that map too. */
        uint32_t old = rp->fenced_from[p] - 1;
        if (pk__repl_node_room(rp, old) == PK_OK &&
            mapep > rp->fence_map[old]) {
            rp->fence_map[old] = mapep;
            rp->state_dirty = 1;
        }
        rp->fenced_from[p] = 0;
    }
    if ((kind == 'L' || kind == 'S') && map_behind(x->srv, mapep)) {
        pk_reply_error(x->out, "TRYAGAIN this follower's map is older");
        return;
    }
    switch (kind) {
    case 'H':
        pk_store_log_last(t, (uint32_t)p, &last);
        pk_reply_array(x->out, 2);
        pk_reply_int(x->out, (int64_t)rp->follow_epoch[p]);
        pk_reply_int(x->out, (int64_t)last);
        return;
    case 'A':
        pk_store_log_last(t, (uint32_t)p, &last);
        if (last != seq) {
            pk_reply_error(x->out, "RESYNC");
            return;
        }
        if (rp->follow_epoch[p] != ep) {
            rp->follow_epoch[p] = ep;
            rp->state_dirty = 1;
        }
        pk_reply_int(x->out, (int64_t)seq);
        return;
    case 'L':
        if (rp->follow_epoch[p] != ep) {
            pk_reply_error(x->out, "RESYNC");
            return;
        }
        rc = pk_store_log_defer(t, (uint32_t)p, seq, a[4].ptr, a[4].len);
        if (rc == PK_OK) /* READONLY clients may watch our copy */
            pk_watch_touch_part(x->srv, (uint32_t)p);
        if (rc == PK_OK || rc == PK_EEXIST)
            pk_reply_int(x->out, (int64_t)seq);
        else if (rc == PK_ERANGE)
            pk_reply_error(x->out, "RESYNC");
        else
            pk_reply_errorf(x->out, "ERR log apply: %s", pk_strerror(rc));
        return;
    case 'C': /* the leader's commit position */
        pk_repl_commit_seen(x->srv, (uint32_t)p, ep, seq);
        pk_reply_int(x->out, (int64_t)seq);
        return;
    case 'R':
        /* The leader lets p go: a fence of it need not wait for our
         * promise to run out.  We have its records up to seq. */
        pk_store_log_last(t, (uint32_t)p, &last);
        if (rp->follow_epoch[p] == ep && last == seq) {
            rp->released[p] = ep + 1; /* the fence that may come */
            rp->released_ms[p] = rp_now() + HANDOFF_MS;
        }
        pk_reply_int(x->out, (int64_t)last);
        return;
    case 'S':
        /* The import commits whole or not at all: until the new epoch is
         * saved after the commit, the file names the old one, which is
         * ours only if the old data still is (see pk_repl_committed). */
        rc = pk_store_part_drop(t, (uint32_t)p, 0, &done);
        if (rc == PK_OK)
            rc = pk_store_part_import(t, (uint32_t)p, a[4].ptr, a[4].len);
        if (rc != PK_OK) {
            pk_reply_errorf(x->out, "ERR snapshot: %s", pk_strerror(rc));
            return;
        }
        pk_watch_touch_part(x->srv, (uint32_t)p);
        rp->follow_epoch[p] = ep; /* saved after the commit */
        rp->state_dirty = 1;
        rp->snapped = 1;
        pk_reply_int(x->out, (int64_t)seq);
        return;
    default:
        pk_reply_error(x->out, "ERR bad replication entry kind");
    }
}

static void repl_push(pk_cmd_ctx *x, pk_repl *rp)
{
    uint64_t leader, mapep, n;
    int promised;

    if (x->argc < 5 || !u64_arg(&x->argv[2], &leader) ||
        !u64_arg(&x->argv[3], &mapep) || !u64_arg(&x->argv[4], &n) ||
        leader >= PK_NODES_MAX || (uint64_t)x->argc != 5 + 5 * n) {
        pk_reply_syntax(x);
        return;
    }
    TXN_OR_RETURN(x, t);
    pk_reply_array(x->out, n + 1);
    for (uint64_t i = 0; i < n; i++)
        push_entry(x, rp, t, (uint32_t)leader, mapep, &x->argv[5 + 5 * i]);
    /* A leader some of whose partitions we were fenced from gets no
     * promise until its map shows that (and it stops leading them). */
    promised = promise(rp, (uint32_t)leader, mapep);
    pk_reply_int(x->out, promised);
}

/*
 * The controller fences p at us, its leader: we stop serving it for good
 * below epoch (the fence epoch is persisted; lease_ok) and answer
 * [the epoch we lead it at, our last seq] -- every write acknowledged in
 * that epoch is in our log, so the controller may let us lead on at epoch.
 * A partition we do not lead is answered [0, last], which does not count.
 */
static void fence_self(pk_cmd_ctx *x, pk_repl *rp, pk_txn *t, uint32_t p,
                       uint64_t ep)
{
    uint64_t last = 0;

    if (ep > rp->fence_epoch[p]) {
        rp->fence_epoch[p] = ep;
        rp->state_dirty = 1;
    }
    if (rp->lead_epoch[p] && rp->lead_epoch[p] < ep)
        pk__repl_step_down(rp, p);
    pk_store_log_last(t, p, &last);
    pk_reply_array(x->out, 2);
    pk_reply_int(x->out,
                 (int64_t)(rp->lead_epoch[p] < ep ? rp->lead_epoch[p] : 0));
    pk_reply_int(x->out, (int64_t)last);
}

/*
 * PK.REPL FENCE old_leader {part epoch}...: the controller is about to
 * promote a follower of each part at epoch.  Refused while our promise to
 * old_leader runs; else nothing below epoch is accepted any more, and the
 * answer is our [follow_epoch, last_seq] per part.  old_leader may be us
 * (fence_self).
 */
static void repl_fence(pk_cmd_ctx *x, pk_repl *rp)
{
    uint64_t leader, mapep, now = rp_now();
    int promised;

    if (x->argc < 4 || x->argc % 2 == 1 || !u64_arg(&x->argv[2], &leader) ||
        !u64_arg(&x->argv[3], &mapep) || leader >= PK_NODES_MAX ||
        pk__repl_node_room(rp, (uint32_t)leader) != PK_OK) {
        pk_reply_syntax(x);
        return;
    }
    if (now < rp->start_ms + PK_REPL_FOLLOW_LEASE_MS) {
        pk_reply_error(x->out, "BUSY this node just started");
        return;
    }
    promised = leader < rp->npromise &&
               now < rp->promise[leader] + PK_REPL_FOLLOW_LEASE_MS;
    TXN_OR_RETURN(x, t);
    for (int i = 4; i + 1 < x->argc; i += 2) {
        uint64_t p, ep;
        if (!u64_arg(&x->argv[i], &p) || !u64_arg(&x->argv[i + 1], &ep) ||
            p >= rp->np || ep == 0) {
            pk_reply_syntax(x);
            return;
        }
    }
    pk_reply_array(x->out, (size_t)(x->argc - 4) / 2);
    for (int i = 4; i + 1 < x->argc; i += 2) {
        uint64_t p = 0, ep = 0, last = 0;
        u64_arg(&x->argv[i], &p);
        u64_arg(&x->argv[i + 1], &ep);
        if (leader == x->srv->cluster.self) {
            fence_self(x, rp, t, (uint32_t)p, ep);
            continue;
        }
        /* Our promise covers p unless its leader released it to us. */
        if (promised && (rp->released[p] < ep || now >= rp->released_ms[p])) {
            pk_reply_error(x->out, "BUSY this node still follows that "
                                   "leader");
            continue;
        }
        if (ep > rp->fence_epoch[p]) {
            rp->fence_epoch[p] = ep;
            rp->state_dirty = 1;
        }
        rp->fenced_from[p] = (uint32_t)leader + 1;
        if (mapep > rp->fence_map[leader]) {
            rp->fence_map[leader] = mapep;
            rp->state_dirty = 1;
        }
        pk_store_log_last(t, (uint32_t)p, &last);
        pk_reply_array(x->out, 2);
        pk_reply_int(x->out, (int64_t)rp->follow_epoch[p]);
        pk_reply_int(x->out, (int64_t)last);
    }
    /* The answer must not leave unless the fence survives us. */
    if (rp->state_dirty && pk__repl_state_save(rp) != 0) {
        x->c->out.len = x->c->out.head + x->c->iter_mark;
        pk_reply_error(x->out, "ERR cannot persist the fence");
    }
}

/*
 * PK.REPL HANDOFF part...: the controller moves the leadership of these
 * partitions elsewhere.  We stop serving them, send our followers every
 * record and then a release, and the controller fences and promotes as for
 * a dead leader.  Ends by itself after HANDOFF_MS.
 */
static void repl_handoff(pk_cmd_ctx *x, pk_repl *rp)
{
    pk_server *s = x->srv;
    uint64_t until = rp_now() + HANDOFF_MS;
    int n = 0;

    for (int i = 2; i < x->argc; i++) {
        uint64_t p;
        const pk_partition *pt;
        int streaming = 0;
        if (!u64_arg(&x->argv[i], &p) || p >= rp->np ||
            (pt = rp_part(s, (uint32_t)p)) == NULL || pt->nreplicas < 2 ||
            pt->replicas[0] != s->cluster.self)
            continue;
        /* Only while every follower streams at this epoch: the promotion
         * needs the answers of half the replicas that follow it, and a
         * partition handed off in vain is unavailable meanwhile. */
        for (int k = 1; k < pt->nreplicas; k++) {
            rp_stream *st = rp_stream_of(rp, pt->replicas[k]);
            streaming += st && st->state[p] == PS_STREAM;
        }
        if (streaming < pt->nreplicas - 1 &&
            !pk_repl_handing_off(s, (uint32_t)p))
            continue;
        if (!pk_repl_handing_off(s, (uint32_t)p))
            rp->handoff[p] = until;
        for (int k = 1; k < pt->nreplicas; k++) {
            rp_stream *st = rp_stream_of(rp, pt->replicas[k]);
            if (st && st->state[p] == PS_STREAM)
                pk__repl_enqueue(st, (uint32_t)p);
        }
        n++;
    }
    pk_reply_int(x->out, n);
}

/*
 * PK.REPL STEPPED: the partitions we lead in our map whose followers were
 * fenced at a newer epoch -- a promotion the controller started and did
 * not finish (it died before its map CAS): it finishes it.
 */
static void repl_stepped(pk_cmd_ctx *x, pk_repl *rp)
{
    uint32_t n = 0;

    for (uint32_t p = 0; p < rp->np; p++)
        n += rp->stepped[p] && rp->lead_epoch[p];
    pk_reply_array(x->out, n);
    for (uint32_t p = 0; p < rp->np && n; p++)
        if (rp->stepped[p] && rp->lead_epoch[p])
            pk_reply_int(x->out, p);
}

/* PK.REPL FAILCOMMITS n: the node's next n commits of an iteration fail
 * as a full disk would fail them -- for tests of that path, and only
 * with --enable-debug-command yes (as Redis guards DEBUG). */
static void repl_failcommits(pk_cmd_ctx *x)
{
    uint64_t n;

    if (!x->srv->cfg.enable_debug_command) {
        pk_reply_error(x->out, "ERR PK.REPL FAILCOMMITS not allowed: start "
                               "the node with --enable-debug-command yes");
        return;
    }
    if (!u64_arg(&x->argv[2], &n) || n > UINT32_MAX) {
        pk_reply_notint(x);
        return;
    }
    x->srv->fail_commits = (uint32_t)n;
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_pk_repl(pk_cmd_ctx *x)
{
    pk_repl *rp = x->srv->repl;

    if (!x->c->internal) {
        pk_reply_error(x->out, "NOAUTH PK.REPL needs PK.AUTH with the "
                               "cluster secret");
        return;
    }
    if (rp == NULL || rp->np == 0) {
        pk_reply_error(x->out, "TRYAGAIN this node has no map yet");
        return;
    }
    if (pk_arg_eq(&x->argv[1], "push"))
        repl_push(x, rp);
    else if (pk_arg_eq(&x->argv[1], "fence"))
        repl_fence(x, rp);
    else if (pk_arg_eq(&x->argv[1], "handoff"))
        repl_handoff(x, rp);
    else if (pk_arg_eq(&x->argv[1], "stepped") && x->argc == 2)
        repl_stepped(x, rp);
    else if (pk_arg_eq(&x->argv[1], "failcommits") && x->argc == 3)
        repl_failcommits(x);
    else
        pk_reply_syntax(x);
}

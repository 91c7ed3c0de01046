/*
 * pk_split: range splits and merges (see pk_split.h for the steps and why
 * they are safe).  One split or merge at a time per node; its state lives
 * here, its map edit on the agent's thread.
 */
#include "server/pk_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_pmap_move.h"
#include "core/pk_range.h"
#include "server/pk_agent.h"
#include "server/pk_ctx.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_srv.h"
#include "store/pk_keyenc.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"

#define TICK_MS 5

#define MANUAL_MERGE_MS 60000 /* a PK.MERGE waits this long for its move */

typedef struct pk_splitter {
    pk_server *srv;
    uv_timer_t timer;
    int active;           /* a split of part, or a merge of other into it */
    int submitted;        /* its map edit is with the agent */
    pk_job_kind kind;     /* PK_JOB_SPLIT or PK_JOB_MERGE */
    uint32_t part, other; /* other: the right neighbour a merge takes in */
    uint64_t epoch, other_epoch; /* their leader epochs when it started */
    uint64_t deadline_ms;        /* the drain gives up then */
    uint8_t key[PK_KEYENC_SHORT];
    size_t len;
    uint8_t flags; /* the new range's (a split) */
    pk_agent_job job;
    uint8_t switched;
    /* The one co-location or flag edit in flight (no fence needed). */
    pk_agent_job aux;
    int aux_busy;
    uint32_t aux_part;
    uint8_t aux_switched;
    /* PK.MERGE of want (led here) with its right neighbour, which is on
     * its way here: started once it is, given up at want_until. */
    uint32_t want;
    uint64_t want_until;
} pk_splitter;

int pk_split_fenced(const pk_server *s, uint32_t part)
{
    const pk_splitter *sp = s->splitter;

    return sp && sp->active &&
           (sp->part == part ||
            (sp->kind == PK_JOB_MERGE && sp->other == part));
}

/* Ends the split or merge under way (the edit made or not): writes go on. */
static void finish(pk_splitter *sp, const char *failure)
{
    if (failure && sp->kind == PK_JOB_MERGE)
        fprintf(stderr, "partkv: merge of ranges %u and %u abandoned: %s\n",
                sp->part, sp->other, failure);
    else if (failure)
        fprintf(stderr, "partkv: split of range %u abandoned: %s\n", sp->part,
                failure);
    else if (sp->kind == PK_JOB_MERGE)
        fprintf(stderr, "partkv: range %u merged into range %u\n", sp->other,
                sp->part);
    else
        fprintf(stderr, "partkv: range %u split at a %zu-byte key\n", sp->part,
                sp->len);
    sp->active = 0;
    sp->submitted = 0;
    uv_timer_stop(&sp->timer);
    pk_conn_release_all(sp->srv);
}

/* On the loop, after the agent committed (and installed) the edit. */
static void edit_done(pk_agent_job *j)
{
    pk_splitter *sp = j->ctx;

    finish(sp, sp->switched ? NULL : "the map changed under it");
}

/* The last record of part, as the loop's transaction sees it. */
static int last_seq(pk_server *s, uint32_t part, uint64_t *seq)
{
    pk_txn *t = s->txn;
    int rc;

    *seq = 0;
    if (t)
        return pk_store_log_last(t, part, seq);
    if ((rc = pk_txn_begin(s->store, 1, &t)) != PK_OK)
        return rc;
    rc = pk_store_log_last(t, part, seq);
    pk_txn_abort(t);
    return rc;
}

/* The drain: once every follower has part's last record, the edit. */
static void on_tick(uv_timer_t *t)
{
    pk_splitter *sp = t->data;
    pk_server *s = sp->srv;
    uint64_t seq;

    if (!sp->active)
        return;
    /* A held write waits at most this long, then -TRYAGAIN; the fence
     * itself stays until the agent has decided (lifted earlier, writes
     * could reach part's log after the followers' copies were taken). */
    pk_conn_hold_expire(s, PK_SPLIT_WAIT_MS);
    if (sp->submitted)
        return;
    if (pk_srv_wall_ms() > sp->deadline_ms) {
        finish(sp, "followers did not catch up in time");
        return;
    }
    if (last_seq(s, sp->part, &seq) != PK_OK ||
        !pk_repl_all_have(s, sp->part, seq))
        return;
    if (sp->kind == PK_JOB_MERGE && (last_seq(s, sp->other, &seq) != PK_OK ||
                                     !pk_repl_all_have(s, sp->other, seq)))
        return;
    sp->job = (pk_agent_job){0};
    sp->job.kind = sp->kind;
    sp->job.n = 1;
    sp->job.parts = &sp->part;
    sp->job.switched = &sp->switched;
    sp->job.split_at = sp->key;
    sp->job.split_len = sp->len;
    sp->job.epoch = sp->epoch;
    sp->job.other = sp->other;
    sp->job.other_epoch = sp->other_epoch;
    sp->job.flags = sp->flags;
    sp->job.done = edit_done;
    sp->job.ctx = sp;
    sp->switched = 0;
    sp->submitted = 1;
    pk_agent_commit(s->agent, &sp->job);
}

static pk_splitter *splitter(pk_server *s)
{
    pk_splitter *sp = s->splitter;

    if (sp == NULL && (sp = calloc(1, sizeof(*sp))) != NULL) {
        sp->srv = s;
        uv_timer_init(&s->loop, &sp->timer);
        sp->timer.data = sp;
        s->splitter = sp;
    }
    return sp;
}

/* Why a range edit cannot start here: "" when the node can make one. */
static const char *no_ranges(pk_server *s)
{
    const pk_cluster *cl = &s->cluster;

    if (!cl->enabled || cl->map == NULL || cl->ranges == NULL)
        return "ERR this needs a cluster on the range scheme";
    if (s->agent == NULL)
        return "ERR this node has no coordinator link";
    return NULL;
}

/* Why part cannot change now: NULL when it is still. */
static const char *unsettled(pk_server *s, uint32_t part)
{
    const pk_partition *pt = &s->cluster.map->parts[part];

    if (pt->move_state != PK_MOVE_NONE || pt->nlearners ||
        pk_move_fenced(s, part) || pk_repl_handing_off(s, part))
        return "TRYAGAIN the range is moving or changing leader";
    return NULL;
}

/* Why key cannot split a range here, or NULL; *part is its range. */
static const char *refusal(pk_server *s, const uint8_t *key, size_t len,
                           uint32_t *part)
{
    const pk_cluster *cl = &s->cluster;
    const pk_partition *pt;
    const char *why = no_ranges(s);

    if (why)
        return why;
    if (len == 0 || pk_keyenc_long(key, len))
        return "ERR the split key must be 1 to about 230 bytes";
    if (pk_range_lookup(cl->ranges, key, len, part) != PK_OK)
        return "ERR no range holds the key";
    pt = &cl->map->parts[*part];
    if (pk_pmap_leader(cl->map, *part) != cl->self)
        return "ERR this node does not lead the range: ask its leader";
    if (pk_key_cmp(key, len, pt->lo, pt->lo_len) == 0)
        return "ERR the range already starts at that key";
    if ((why = unsettled(s, *part)) != NULL)
        return why;
    if (cl->map->npartitions >= PK_SLOTS)
        return "ERR the range scheme holds at most 16384 ranges";
    return NULL;
}

/* The fence of a split or merge of part (and other) goes up; *out is the
 * splitter to fill in, or the reply says why not. */
static const char *begin(pk_server *s, pk_job_kind kind, uint32_t part,
                         uint32_t other, pk_splitter **out)
{
    const pk_pmap *m = s->cluster.map;
    pk_splitter *sp = splitter(s);

    if (sp == NULL)
        return "ERR out of memory";
    if (sp->active)
        return "TRYAGAIN another split or merge is under way here";
    sp->active = 1;
    sp->kind = kind;
    sp->part = part;
    sp->other = other;
    sp->epoch = m->parts[part].leader_epoch;
    sp->other_epoch = kind == PK_JOB_MERGE ? m->parts[other].leader_epoch : 0;
    sp->deadline_ms = pk_srv_wall_ms() + PK_SPLIT_WAIT_MS;
    sp->len = 0;
    sp->flags = 0;
    uv_timer_start(&sp->timer, on_tick, 0, TICK_MS);
    *out = sp;
    return NULL;
}

const char *pk_split_start(pk_server *s, const void *key, size_t len,
                           int sticky)
{
    pk_splitter *sp;
    const char *why;
    uint32_t part = 0;

    if ((why = refusal(s, key, len, &part)) != NULL ||
        (why = begin(s, PK_JOB_SPLIT, part, 0, &sp)) != NULL)
        return why;
    memcpy(sp->key, key, len);
    sp->len = len;
    sp->flags = sticky ? PK_PART_STICKY : 0;
    return NULL;
}

int pk_split_right(const pk_server *s, uint32_t p, uint32_t *q)
{
    const pk_cluster *cl = &s->cluster;
    const pk_partition *pt = &cl->map->parts[p];

    return pt->hi != NULL && !pk_pmap_retired(cl->map, p) &&
           pk_range_lookup(cl->ranges, pt->hi, pt->hi_len, q) == PK_OK;
}

const char *pk_merge_start(pk_server *s, uint32_t p)
{
    const pk_cluster *cl = &s->cluster;
    pk_splitter *sp;
    const char *why = no_ranges(s);
    uint32_t q;

    if (why)
        return why;
    if (p >= cl->map->npartitions || pk_pmap_leader(cl->map, p) != cl->self)
        return "ERR this node does not lead the range: ask its leader";
    if (!pk_split_right(s, p, &q))
        return "ERR the last range has no right neighbour to merge with";
    if (!pk_pmap_colocated(cl->map, p, q))
        return "ERR the ranges are not on the same replicas";
    if ((why = unsettled(s, p)) != NULL || (why = unsettled(s, q)) != NULL)
        return why;
    return begin(s, PK_JOB_MERGE, p, q, &sp);
}

static void aux_done(pk_agent_job *j)
{
    pk_splitter *sp = j->ctx;

    if (j->flags & PK_PART_MERGING)
        fprintf(stderr,
                "partkv: range %u %s to join its left neighbour's leader\n",
                sp->aux_part,
                sp->aux_switched ? "flagged" : "could not be flagged");
    sp->aux_busy = 0;
}

/* The flags of part lose clear and gain set (PK_JOB_FLAGS). */
static const char *aux_edit(pk_server *s, uint32_t part, uint8_t set,
                            uint8_t clear)
{
    pk_splitter *sp = splitter(s);

    if (sp == NULL)
        return "ERR out of memory";
    if (sp->aux_busy)
        return "TRYAGAIN another range edit is under way here";
    sp->aux = (pk_agent_job){0};
    sp->aux_part = part;
    sp->aux.kind = PK_JOB_FLAGS;
    sp->aux.n = 1;
    sp->aux.parts = &sp->aux_part;
    sp->aux.switched = &sp->aux_switched;
    sp->aux.flags = set;
    sp->aux.clear = clear;
    sp->aux.epoch = s->cluster.map->parts[part].leader_epoch;
    sp->aux.done = aux_done;
    sp->aux.ctx = sp;
    sp->aux_busy = 1;
    pk_agent_commit(s->agent, &sp->aux);
    return NULL;
}

/* PK.MERGE key: the range holding key takes in its right neighbour,
 * which first comes to this node if another of the same replicas leads
 * it (flagged PK_PART_MERGING, the controller hands it over). */
static const char *merge_cmd(pk_server *s, const uint8_t *key, size_t len)
{
    const pk_cluster *cl = &s->cluster;
    const char *why = no_ranges(s);
    pk_splitter *sp;
    uint32_t p, q;

    if (why)
        return why;
    if (pk_range_lookup(cl->ranges, key, len, &p) != PK_OK)
        return "ERR no range holds the key";
    if (pk_pmap_leader(cl->map, p) != cl->self)
        return "ERR this node does not lead the range: ask its leader";
    if (!pk_split_right(s, p, &q))
        return "ERR the last range has no right neighbour to merge with";
    if (pk_pmap_colocated(cl->map, p, q))
        return pk_merge_start(s, p);
    if (!pk_pmap_same_replicas(cl->map, p, q) ||
        pk_pmap_leader(cl->map, q) == PK_NODE_NONE)
        return "ERR the ranges are not on the same replicas: rebalance "
               "first";
    if ((why = unsettled(s, q)) != NULL ||
        (why = aux_edit(s, q, PK_PART_MERGING, 0)) != NULL)
        return why;
    sp = s->splitter;
    sp->want = p;
    sp->want_until = pk_srv_wall_ms() + MANUAL_MERGE_MS;
    return NULL;
}

static void tend_manual(pk_server *s)
{
    pk_splitter *sp = s->splitter;
    const pk_cluster *cl = &s->cluster;
    uint32_t q;

    if (sp == NULL || sp->want_until == 0 || sp->active || cl->map == NULL ||
        cl->ranges == NULL)
        return;
    if (pk_srv_wall_ms() > sp->want_until ||
        pk_pmap_leader(cl->map, sp->want) != cl->self ||
        !pk_split_right(s, sp->want, &q)) {
        sp->want_until = 0;
        return;
    }
    if (pk_pmap_colocated(cl->map, sp->want, q) &&
        pk_merge_start(s, sp->want) == NULL)
        sp->want_until = 0;
}

/* PK.UNSPLIT key: the range starting at key loses PK_PART_STICKY. */
static const char *unsplit_cmd(pk_server *s, const uint8_t *key, size_t len)
{
    const pk_cluster *cl = &s->cluster;
    const char *why = no_ranges(s);
    uint32_t p;

    if (why)
        return why;
    if (pk_range_lookup(cl->ranges, key, len, &p) != PK_OK ||
        pk_key_cmp(key, len, cl->map->parts[p].lo, cl->map->parts[p].lo_len))
        return "ERR no range starts at the key";
    if (pk_pmap_leader(cl->map, p) != cl->self)
        return "ERR this node does not lead the range: ask its leader";
    return aux_edit(s, p, 0, PK_PART_STICKY);
}

/* PK.SPLIT, PK.MERGE and PK.UNSPLIT key: +OK once started. */
void pk_cmd_pk_split(pk_cmd_ctx *x)
{
    const char *name = x->argv[0].ptr, *why;
    const uint8_t *key = (const uint8_t *)x->argv[1].ptr;
    size_t len = x->argv[1].len;

    if (!x->c->internal) {
        pk_reply_error(x->out, "NOAUTH range edits need PK.AUTH with the "
                               "cluster secret");
        return;
    }
    if (x->argv[0].len == 8 && strncasecmp(name, "PK.MERGE", 8) == 0)
        why = merge_cmd(x->srv, key, len);
    else if (x->argv[0].len == 10 && strncasecmp(name, "PK.UNSPLIT", 10) == 0)
        why = unsplit_cmd(x->srv, key, len);
    else
        why = pk_split_start(x->srv, key, len, 1);
    if (why)
        pk_reply_error(x->out, why);
    else
        pk_reply_simple(x->out, "OK");
}

int pk_split_admit(pk_cmd_ctx *x, uint32_t part)
{
    pk_server *s = x->srv;
    uint64_t size = s->cfg.split_size;
    uint8_t key[PK_KEYENC_SHORT];
    size_t len = 0;
    pk_part_stats st;
    pk_txn *t;

    if (size == 0 || s->cluster.ranges == NULL)
        return 1;
    if ((t = pk_srv_txn(x)) == NULL)
        return 0;
    if (pk_store_part_stats(t, part, &st) != PK_OK || st.bytes <= size)
        return 1;
    if (!pk_split_fenced(s, part) &&
        pk_store_part_middle(t, part, key, sizeof(key), &len) == PK_OK)
        pk_split_start(s, key, len, 0);
    if (st.bytes > 2 * size && s->splitter && s->splitter->active) {
        pk_conn_hold(x); /* runs again when the split under way ends */
        return 0;
    }
    return 1;
}

/* Whether rate r is cold: under half of each threshold that is on. */
static int cold(const pk_server *s, double qps, uint64_t bytes)
{
    uint64_t on = s->cfg.split_qps, size = s->cfg.split_size;

    return (on == 0 || qps < (double)on / 2) && (size == 0 || bytes < size / 2);
}

static double rate_of(const pk_part_rate *r)
{
    return r->read_rate + r->write_rate;
}

/* The cold and pair clocks of the ranges this node leads. */
static void tend_clocks(pk_server *s, uint64_t now)
{
    const pk_cluster *cl = &s->cluster;

    for (uint32_t p = 0; p < cl->map->npartitions && p < PK_SLOTS; p++) {
        pk_part_rate *r = &s->rates[p];
        uint32_t q;
        int lead = pk_pmap_leader(cl->map, p) == cl->self;
        if (!lead || !cold(s, rate_of(r), r->bytes))
            r->cold_since = 0;
        else if (r->cold_since == 0)
            r->cold_since = now;
        if (!lead || !pk_split_right(s, p, &q) || q >= PK_SLOTS ||
            pk_pmap_leader(cl->map, q) != cl->self ||
            !cold(s, rate_of(r) + rate_of(&s->rates[q]),
                  r->bytes + s->rates[q].bytes)) {
            r->pair_since = 0;
        } else if (r->pair_since == 0 || r->pair_with != q) {
            r->pair_since = now;
            r->pair_with = q;
        }
    }
}

/* Whether a PK.MERGE of p waits here for its right neighbour. */
static int wanted(const pk_server *s, uint32_t p)
{
    const pk_splitter *sp = s->splitter;

    return sp && sp->want_until && sp->want == p;
}

/*
 * One automatic merge step, if a pair is ready: q (led here, not sticky,
 * cold for --merge-delay) and its left neighbour p.  Both led here, they
 * merge once the pair has been cold that long -- or, for a q that came
 * here to be merged (PK_PART_MERGING), once p has been and the pair is
 * now.  With p led by another of q's replicas, q is flagged
 * PK_PART_MERGING for the controller to hand it over there.  A flagged q
 * whose merge will not be (p or q no longer cold) loses the flag.
 */
static void auto_merge(pk_server *s, uint64_t now)
{
    const pk_cluster *cl = &s->cluster;
    const pk_pmap *m = cl->map;
    uint64_t delay = s->cfg.merge_delay_ms;
    int on = delay > 0 && (s->cfg.split_qps > 0 || s->cfg.split_size > 0);

    for (uint32_t q = 0; q < m->npartitions && q < PK_SLOTS; q++) {
        const pk_partition *qt = &m->parts[q];
        const pk_part_rate *rq = &s->rates[q], *rp;
        uint32_t p, lp;
        int merging = (qt->flags & PK_PART_MERGING) != 0;
        if (pk_pmap_leader(m, q) != cl->self || qt->lo_len == 0 ||
            pk_range_lookup_below(cl->ranges, qt->lo, qt->lo_len, &p) !=
                PK_OK ||
            p >= PK_SLOTS)
            continue;
        rp = &s->rates[p];
        lp = pk_pmap_leader(m, p);
        if (merging && lp == cl->self && !wanted(s, p) &&
            (!on || !rq->cold_since || !rp->cold_since)) {
            aux_edit(s, q, 0, PK_PART_MERGING);
            return;
        }
        if (!on || rq->cold_since == 0 || (qt->flags & PK_PART_STICKY) ||
            unsettled(s, q) != NULL)
            continue;
        if (lp == cl->self) {
            int ready =
                rp->pair_since && rp->pair_with == q &&
                (now - rp->pair_since >= delay ||
                 (merging && rp->cold_since && now - rp->cold_since >= delay));
            if (ready && pk_pmap_colocated(m, p, q) &&
                pk_merge_start(s, p) == NULL)
                return;
        } else if (!merging && now - rq->cold_since >= delay &&
                   lp != PK_NODE_NONE && pk_pmap_same_replicas(m, p, q) &&
                   unsettled(s, p) == NULL &&
                   aux_edit(s, q, PK_PART_MERGING, 0) == NULL) {
            return;
        }
    }
}

void pk_split_tend(pk_server *s)
{
    const pk_cluster *cl = &s->cluster;
    uint64_t now = pk_srv_wall_ms();

    if (cl->map == NULL || cl->ranges == NULL || s->agent == NULL)
        return;
    tend_clocks(s, now);
    tend_manual(s);
    if (!s->splitter || !(s->splitter->active || s->splitter->aux_busy))
        auto_merge(s, now);
}

/* 1 when this node is one of part's replicas. */
static int holds(const pk_cluster *cl, uint32_t part)
{
    const pk_partition *pt = &cl->map->parts[part];

    for (int i = 0; i < pt->nreplicas; i++)
        if (pt->replicas[i] == cl->self)
            return 1;
    return 0;
}

/* Whether part's upper bound differs between the two maps. */
static int hi_changed(const pk_pmap *old, const pk_pmap *m, uint32_t part)
{
    const pk_partition *a, *b = &m->parts[part];

    if (old == NULL || old->scheme != PK_SCHEME_RANGE ||
        part >= old->npartitions)
        return 1;
    a = &old->parts[part];
    if ((a->hi == NULL) != (b->hi == NULL))
        return 1;
    return a->hi && pk_key_cmp(a->hi, a->hi_len, b->hi, b->hi_len) != 0;
}

/* Whether part was retired by the map just installed (at start, old ==
 * NULL: whether it is retired). */
static int newly_retired(const pk_pmap *old, const pk_pmap *m, uint32_t part)
{
    return pk_pmap_retired(m, part) &&
           (old == NULL || old->scheme != PK_SCHEME_RANGE ||
            !pk_pmap_retired(old, part));
}

/*
 * Which keys of part, by the map just installed, belong to another range
 * that this node holds: those from *at on (at_len bytes) go to *to.  A
 * range split has its keys from its new upper bound on go to the range
 * holding that bound; a retired one (merged) all of its keys to the range
 * now holding its lower bound.  0 when nothing of part moves here.
 */
static int moving_keys(const pk_cluster *cl, const pk_pmap *old, uint32_t part,
                       const uint8_t **at, size_t *at_len, uint32_t *to)
{
    const pk_partition *pt = &cl->map->parts[part];

    if (newly_retired(old, cl->map, part)) {
        *at = (const uint8_t *)"";
        *at_len = 0;
        return pk_range_lookup(cl->ranges, pt->lo, pt->lo_len, to) == PK_OK &&
               holds(cl, *to);
    }
    *at = pt->hi;
    *at_len = pt->hi_len;
    return pt->hi != NULL && !pk_pmap_retired(cl->map, part) &&
           hi_changed(old, cl->map, part) && holds(cl, part) &&
           pk_range_lookup(cl->ranges, pt->hi, pt->hi_len, to) == PK_OK &&
           holds(cl, *to);
}

void pk_split_reconcile(pk_server *s, const pk_pmap *old)
{
    const pk_cluster *cl = &s->cluster;
    const pk_pmap *m = cl->map;
    pk_txn *t = s->txn;
    int own = 0, rc = PK_OK;

    if (m == NULL || cl->ranges == NULL || cl->self == PK_NODE_NONE ||
        s->store == NULL)
        return;
    for (uint32_t p = 0; p < m->npartitions && rc == PK_OK; p++) {
        const uint8_t *at;
        size_t at_len;
        uint32_t q;
        int done = 0;
        if (!moving_keys(cl, old, p, &at, &at_len, &q))
            continue;
        if (t == NULL) {
            if ((rc = pk_txn_begin(s->store, 0, &t)) != PK_OK)
                break;
            own = 1;
        }
        rc = pk_store_part_relabel(t, p, q, at, at_len, 0, &done);
    }
    if (own && rc == PK_OK)
        rc = pk_txn_commit(t);
    else if (own)
        pk_txn_abort(t);
    if (rc != PK_OK)
        fprintf(stderr,
                "partkv: moving keys into split or merged ranges "
                "failed: %s\n",
                pk_strerror(rc));
}

void pk_split_free(pk_server *s)
{
    free(s->splitter);
    s->splitter = NULL;
}

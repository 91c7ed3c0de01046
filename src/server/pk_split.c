/*
 * pk_split: range splits (see pk_split.h for the steps and why they are
 * safe).  One split at a time per node; its state lives here, its map
 * edit on the agent's thread.
 */
#include "server/pk_split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_range.h"
#include "server/pk_agent.h"
#include "server/pk_cmd.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_srv.h"
#include "store/pk_keyenc.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"

#define TICK_MS 5

typedef struct pk_splitter {
    pk_server *srv;
    uv_timer_t timer;
    int active;    /* a split of part is under way */
    int submitted; /* its map edit is with the agent */
    uint32_t part;
    uint64_t epoch;       /* part's leader epoch when it started */
    uint64_t deadline_ms; /* the drain gives up then */
    uint8_t key[PK_KEYENC_SHORT];
    size_t len;
    pk_agent_job job;
    uint8_t switched;
} pk_splitter;

int pk_split_fenced(const pk_server *s, uint32_t part)
{
    const pk_splitter *sp = s->splitter;

    return sp && sp->active && sp->part == part;
}

/* Ends the split under way (the map edit made or not): writes go on. */
static void finish(pk_splitter *sp, const char *failure)
{
    if (failure)
        fprintf(stderr, "partkv: split of range %u abandoned: %s\n", sp->part,
                failure);
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
    sp->job = (pk_agent_job){0};
    sp->job.n = 1;
    sp->job.parts = &sp->part;
    sp->job.switched = &sp->switched;
    sp->job.split_at = sp->key;
    sp->job.split_len = sp->len;
    sp->job.split_epoch = sp->epoch;
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

/* Why key cannot split a range here, or NULL; *part is its range. */
static const char *refusal(pk_server *s, const uint8_t *key, size_t len,
                           uint32_t *part)
{
    const pk_cluster *cl = &s->cluster;
    const pk_partition *pt;

    if (!cl->enabled || cl->map == NULL || cl->ranges == NULL)
        return "ERR PK.SPLIT needs a cluster on the range scheme";
    if (s->agent == NULL)
        return "ERR this node has no coordinator link";
    if (len == 0 || pk_keyenc_long(key, len))
        return "ERR the split key must be 1 to about 230 bytes";
    if (pk_range_lookup(cl->ranges, key, len, part) != PK_OK)
        return "ERR no range holds the key";
    pt = &cl->map->parts[*part];
    if (pk_pmap_leader(cl->map, *part) != cl->self)
        return "ERR this node does not lead the range: ask its leader";
    if (pk_key_cmp(key, len, pt->lo, pt->lo_len) == 0)
        return "ERR the range already starts at that key";
    if (pt->move_state != PK_MOVE_NONE || pt->nlearners ||
        pk_move_fenced(s, *part) || pk_repl_handing_off(s, *part))
        return "TRYAGAIN the range is moving or changing leader";
    if (cl->map->npartitions >= PK_SLOTS)
        return "ERR the range scheme holds at most 16384 ranges";
    return NULL;
}

const char *pk_split_start(pk_server *s, const void *key, size_t len)
{
    pk_splitter *sp;
    const char *why;
    uint32_t part = 0;

    if ((why = refusal(s, key, len, &part)) != NULL)
        return why;
    if ((sp = splitter(s)) == NULL)
        return "ERR out of memory";
    if (sp->active)
        return "TRYAGAIN another split is under way here";
    sp->active = 1;
    sp->part = part;
    sp->epoch = s->cluster.map->parts[part].leader_epoch;
    sp->deadline_ms = pk_srv_wall_ms() + PK_SPLIT_WAIT_MS;
    memcpy(sp->key, key, len);
    sp->len = len;
    uv_timer_start(&sp->timer, on_tick, 0, TICK_MS);
    return NULL;
}

void pk_cmd_pk_split(pk_cmd_ctx *x)
{
    const char *why;

    if (!x->c->internal) {
        pk_reply_error(x->out, "NOAUTH PK.SPLIT needs PK.AUTH with the "
                               "cluster secret");
        return;
    }
    why = pk_split_start(x->srv, x->argv[1].ptr, x->argv[1].len);
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
        pk_split_start(s, key, len);
    if (st.bytes > 2 * size && s->splitter && s->splitter->active) {
        pk_conn_hold(x); /* runs again when the split under way ends */
        return 0;
    }
    return 1;
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
        const pk_partition *pt = &m->parts[p];
        uint32_t q;
        int done = 0;
        if (pt->hi == NULL || !hi_changed(old, m, p) || !holds(cl, p) ||
            pk_range_lookup(cl->ranges, pt->hi, pt->hi_len, &q) != PK_OK ||
            !holds(cl, q))
            continue;
        if (t == NULL) {
            if ((rc = pk_txn_begin(s->store, 0, &t)) != PK_OK)
                break;
            own = 1;
        }
        rc = pk_store_part_relabel(t, p, q, pt->hi, pt->hi_len, 0, &done);
    }
    if (own && rc == PK_OK)
        rc = pk_txn_commit(t);
    else if (own)
        pk_txn_abort(t);
    if (rc != PK_OK)
        fprintf(stderr, "partkv: moving keys into split ranges failed: %s\n",
                pk_strerror(rc));
}

void pk_split_free(pk_server *s)
{
    free(s->splitter);
    s->splitter = NULL;
}

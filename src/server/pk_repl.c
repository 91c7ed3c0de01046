/* pk_repl: leases, commit positions, map changes and lifetime (see
 * pk_repl_int.h for the files of replication). */
#include "server/pk_repl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_link.h"
#include "store/pk_store_log.h"

#define SWEEP_MS 500 /* look for records nobody queued */

/* No answer from a follower for this long: redial. */
#define STALL_MS 5000

static uint64_t lease_end(pk_repl *rp, const pk_partition *pt, uint32_t p);

int pk__repl_lease_ok(pk_repl *rp, const pk_partition *pt, uint32_t p,
                      uint64_t now)
{
    if (pt->nreplicas <= 1)
        return 1;
    if (rp->stepped[p] || pk_repl_handing_off(rp->srv, p) ||
        rp->fence_epoch[p] > rp->lead_epoch[p] || now < rp->hold_ms)
        return 0; /* the last: read leases granted before a restart run */
    return lease_end(rp, pt, p) > now;
}

int pk__repl_leased(const pk_repl *rp, uint32_t p, uint64_t now)
{
    for (uint32_t i = 0; i < rp->nrleases; i++)
        if (rp->rleases[i].part == p && rp->rleases[i].until > now)
            return 1;
    return 0;
}

uint64_t pk__repl_holders_have(pk_repl *rp, uint32_t p, uint64_t now)
{
    uint64_t low = UINT64_MAX;

    for (uint32_t i = 0; i < rp->nrleases; i++) {
        const rp_rlease *l = &rp->rleases[i];
        rp_stream *st;
        if (l->part != p || l->until <= now)
            continue;
        st = rp_stream_of(rp, l->node);
        if (st == NULL || st->state[p] != PS_STREAM)
            return 0;
        if (st->match[p] < low)
            low = st->match[p];
    }
    return low;
}

/* The k-th largest (from 1) of p's followers' values v(stream), 0 when
 * there are fewer. */
static uint64_t kth_of_followers(pk_repl *rp, const pk_partition *pt,
                                 uint32_t p, int k,
                                 uint64_t (*v)(const rp_stream *, uint32_t))
{
    uint64_t vals[PK_REPLICAS_MAX];
    int n = 0;

    for (int i = 1; i < pt->nreplicas; i++) {
        rp_stream *st = rp_stream_of(rp, pt->replicas[i]);
        uint64_t u = st ? v(st, p) : 0;
        int j = n++;
        for (; j > 0 && vals[j - 1] < u; j--) /* descending */
            vals[j] = vals[j - 1];
        vals[j] = u;
    }
    return k >= 1 && k <= n ? vals[k - 1] : 0;
}

static uint64_t promise_of(const rp_stream *st, uint32_t p)
{
    (void)p;
    return st->lease_until;
}

static uint64_t match_of(const rp_stream *st, uint32_t p)
{
    return st->state[p] == PS_STREAM ? st->match[p] : 0;
}

/* When our leadership lease of p ends, by the promises we hold: the
 * latest time half the followers' promises all still run. */
static uint64_t lease_end(pk_repl *rp, const pk_partition *pt, uint32_t p)
{
    return kth_of_followers(rp, pt, p, pt->nreplicas / 2, promise_of);
}

/* Our commit position of p: a write up to it would be acknowledged (a
 * lower bound: with --acks leader, what a follower has). */
uint64_t pk__repl_commit_pos(pk_repl *rp, const pk_partition *pt, uint32_t p,
                             uint64_t now)
{
    int need = rp_copies_needed(rp->srv, pt->nreplicas) - 1;
    uint64_t c, low;

    if (!pk__repl_lease_ok(rp, pt, p, now))
        return 0;
    c = kth_of_followers(rp, pt, p, need < 1 ? 1 : need, match_of);
    low = pk__repl_holders_have(rp, p, now);
    return low < c ? low : c;
}

uint64_t pk_repl_read_lease(pk_server *s, uint32_t p, uint32_t node)
{
    pk_repl *rp = s->repl;
    const pk_partition *pt = rp_part(s, p);
    uint64_t now = rp_now(), until, wall;
    rp_rlease *slot = NULL;

    if (rp == NULL || pt == NULL || p >= rp->np || pt->nreplicas < 2 ||
        pt->replicas[0] != s->cluster.self || !rp_is_follower(pt, node) ||
        !pk__repl_lease_ok(rp, pt, p, now))
        return 0;
    until = lease_end(rp, pt, p);
    if (until > now + PK_REPL_READ_LEASE_MS)
        until = now + PK_REPL_READ_LEASE_MS;
    if (until <= now + PK_REPL_LEASE_MARGIN_MS)
        return 0; /* nothing the follower could use */
    for (uint32_t i = 0; i < rp->nrleases; i++) {
        rp_rlease *l = &rp->rleases[i];
        if (l->part == p && l->node == node) {
            slot = l;
            break;
        }
        if (l->until <= now && slot == NULL)
            slot = l; /* expired: reused */
    }
    if (slot == NULL && rp->nrleases < READ_LEASES)
        slot = &rp->rleases[rp->nrleases++];
    if (slot == NULL)
        return 0;
    wall = pk_srv_wall_ms() + (until - now);
    if (wall > rp->leases_saved) {
        if (pk__repl_leases_save(rp, wall + 1000) != 0)
            return 0; /* a restart would not know of it */
        rp->leases_saved = wall + 1000;
    }
    if (slot->part != p || slot->node != node || slot->until < until)
        slot->until = until;
    slot->part = p;
    slot->node = node;
    return until - now;
}

int pk_repl_lease_usable(const pk_server *s, uint32_t part)
{
    const pk_repl *rp = s->repl;
    uint64_t ep;

    if (rp == NULL || part >= rp->np)
        return 0;
    ep = rp->follow_epoch[part];
    /* Fenced, or released by its leader: a promotion may be under way
     * without waiting for our promise. */
    return rp->fence_epoch[part] <= ep &&
           !(rp->released[part] == ep + 1 && rp_now() < rp->released_ms[part]);
}

int pk_repl_read_leased(const pk_server *s, uint32_t part)
{
    return s->repl && pk__repl_leased(s->repl, part, rp_now());
}

int pk__repl_acked(pk_repl *rp, const pk_partition *pt, uint32_t p,
                   uint64_t seq)
{
    int n = 0;

    for (int i = 1; i < pt->nreplicas; i++) {
        rp_stream *st = rp_stream_of(rp, pt->replicas[i]);
        n += st && st->state[p] == PS_STREAM && st->match[p] >= seq;
    }
    return n;
}

uint64_t pk_repl_commit_seq(const pk_server *s, uint32_t part)
{
    const pk_partition *pt = rp_part(s, part);

    if (s->repl == NULL || pt == NULL || part >= s->repl->np ||
        pt->nreplicas == 0 || pt->replicas[0] != s->cluster.self)
        return 0;
    return pk__repl_commit_pos(s->repl, pt, part, rp_now());
}

int pk_repl_all_have(const pk_server *s, uint32_t part, uint64_t seq)
{
    const pk_partition *pt = rp_part(s, part);

    return s->repl && pt && part < s->repl->np &&
           pk__repl_acked(s->repl, pt, part, seq) == pt->nreplicas - 1;
}

int pk_repl_handing_off(const pk_server *s, uint32_t part)
{
    const pk_repl *rp = s->repl;

    /* A partition a follower told us is fenced is let go as well: our
     * other followers get a release, so that the controller can finish
     * the promotion without waiting for their promise to us to end
     * (which it would not while we lead other partitions). */
    return rp && part < rp->np &&
           (rp->stepped[part] ||
            (rp->handoff[part] && rp->handoff[part] > rp_now()));
}

int pk_repl_follows(const pk_server *s, uint32_t part)
{
    const pk_partition *pt = rp_part(s, part);

    return pt && rp_is_follower(pt, s->cluster.self);
}

uint64_t pk_repl_follow_epoch(const pk_server *s, uint32_t part)
{
    const pk_repl *rp = s->repl;

    return rp && part < rp->np && pk_repl_follows(s, part)
               ? rp->follow_epoch[part]
               : 0;
}

int pk_repl_streams_to(const pk_server *s, uint32_t part, uint64_t epoch,
                       uint32_t node)
{
    pk_repl *rp = s->repl;
    const pk_partition *pt = rp_part(s, part);
    rp_stream *st;

    if (rp == NULL || pt == NULL || part >= rp->np || pt->nreplicas == 0 ||
        pt->replicas[0] != s->cluster.self || rp->lead_epoch[part] != epoch ||
        epoch == 0 || !rp_is_follower(pt, node))
        return 0;
    st = rp_stream_of(rp, node);
    return st && st->state[part] == PS_STREAM;
}

static int alloc_arrays(pk_repl *rp, uint32_t np)
{
    rp->np = np;
    rp->follow_epoch = calloc(np, sizeof(uint64_t));
    rp->fence_epoch = calloc(np, sizeof(uint64_t));
    rp->released_ms = calloc(np, sizeof(uint64_t));
    rp->fenced_from = calloc(np, sizeof(uint32_t));
    rp->lead_epoch = calloc(np, sizeof(uint64_t));
    rp->prev_epoch = calloc(np, sizeof(uint64_t));
    rp->promo_pos = calloc(np, sizeof(uint64_t));
    rp->stepped = calloc(np, 1);
    rp->handoff = calloc(np, sizeof(uint64_t));
    rp->released = calloc(np, sizeof(uint64_t));
    rp->commit_want = calloc(np, sizeof(uint64_t));
    rp->cdue = calloc(np, sizeof(uint32_t));
    rp->cdue_set = calloc(np, 1);
    rp->commit_seen = calloc(np, sizeof(uint64_t));
    rp->commit_ep = calloc(np, sizeof(uint64_t));
    rp->early = calloc(np, sizeof(uint32_t));
    rp->early_set = calloc(np, 1);
    if (!rp->early || !rp->early_set || !rp->commit_want || !rp->commit_seen ||
        !rp->commit_ep || !rp->cdue || !rp->cdue_set || !rp->handoff ||
        !rp->released || !rp->follow_epoch || !rp->fence_epoch ||
        !rp->released_ms || !rp->fenced_from || !rp->lead_epoch ||
        !rp->prev_epoch || !rp->promo_pos || !rp->stepped) {
        rp->np = 0;
        return PK_ENOMEM;
    }
    pk__repl_state_load(rp);
    return PK_OK;
}

void pk_repl_map_changed(pk_server *s)
{
    pk_repl *rp = s->repl;
    const pk_pmap *m = s->cluster.map;
    uint32_t self = s->cluster.self;
    pk_txn *t = NULL;
    int settle = 0;
    uint32_t stepped = 0;

    if (rp == NULL || m == NULL)
        return;
    /* Ranges split into new partitions: the range scheme's tables have
     * room for every partition id it may use (pk_split.h). */
    if (rp->np == 0 && alloc_arrays(rp, m->scheme == PK_SCHEME_RANGE
                                            ? PK_SLOTS
                                            : m->npartitions) != PK_OK)
        return;
    if (pk_txn_begin(s->store, 1, &t) != PK_OK)
        t = NULL;
    for (rp_stream *st = rp->streams; st; st = st->next)
        st->active = 0;
    for (uint32_t p = 0; p < rp->np && p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        int lead = pt->nreplicas && pt->replicas[0] == self;
        if (rp->fenced_from[p] && pt->leader_epoch >= rp->fence_epoch[p]) {
            /* The promotion is in the map: the old leader learns it there
             * (and is promised nothing before it has this map). */
            uint32_t old = rp->fenced_from[p] - 1;
            if (pk__repl_node_room(rp, old) == PK_OK &&
                m->epoch > rp->fence_map[old]) {
                rp->fence_map[old] = m->epoch;
                rp->state_dirty = 1;
            }
            rp->fenced_from[p] = 0;
        }
        uint64_t le = pt->leader_epoch;
        if (!lead) {
            rp->lead_epoch[p] = 0;
            rp->stepped[p] = 0;
            rp->handoff[p] = 0;
            continue;
        }
        if (rp->lead_epoch[p] != le) {
            /* We lead p at a new epoch.  A log we followed at an older
             * epoch is a prefix of ours: followers that are not past our
             * position then may go on from theirs. */
            uint64_t last = 0;
            settle = 1;
            if (t)
                pk_store_log_last(t, p, &last);
            rp->prev_epoch[p] = rp->follow_epoch[p] != le ? rp->follow_epoch[p]
                                                          : rp->prev_epoch[p];
            rp->promo_pos[p] = last;
            rp->lead_epoch[p] = le;
            /* Led at le before an unclean stop (pk_repl_int.h). */
            rp->stepped[p] =
                rp->crashed && pt->nreplicas >= 2 && rp->follow_epoch[p] == le;
            stepped += rp->stepped[p];
            rp->handoff[p] = 0;
            if (rp->follow_epoch[p] != le || rp->fence_epoch[p] < le) {
                rp->follow_epoch[p] = le;
                if (rp->fence_epoch[p] < le)
                    rp->fence_epoch[p] = le;
                rp->state_dirty = 1;
            }
        }
        for (int i = 1; i < pt->nreplicas; i++) {
            uint32_t f = pt->replicas[i];
            rp_stream *st = rp_stream_of(rp, f);
            if (st == NULL && pk__repl_stream_new(rp, f, &st) != PK_OK)
                continue;
            st->active = 1;
            if (f < m->nnodes)
                snprintf(st->addr, sizeof(st->addr), "%s", m->nodes[f].addr);
            if (st->epoch[p] != le) {
                st->epoch[p] = le;
                st->state[p] = PS_NEW;
                st->match[p] = 0;
                pk__repl_enqueue(st, p);
            }
        }
    }
    /* A partition we stopped following to a stream starts over if it
     * comes back. */
    for (rp_stream *st = rp->streams; st; st = st->next)
        for (uint32_t p = 0; p < rp->np && p < m->npartitions; p++)
            if (st->epoch[p] && (m->parts[p].nreplicas == 0 ||
                                 m->parts[p].replicas[0] != self ||
                                 !rp_is_follower(&m->parts[p], st->node)))
                st->epoch[p] = 0;
    if (t)
        pk_txn_abort(t);
    if (stepped)
        fprintf(stderr,
                "partkv: the last run stopped uncleanly: %u partitions it "
                "led step down to be promoted at a new epoch\n",
                stepped);
    if (settle) /* what we followed is ready to serve and export */
        pk_srv_settle(s);
    if (rp->state_dirty)
        pk__repl_state_save(rp);
    pk__repl_pump_all(rp);
    rp->release_due = 1; /* from the tick: we may be inside a command */
}

static void on_tick(uv_timer_t *h)
{
    pk_repl *rp = h->data;
    uint64_t now = rp_now();

    if (rp->np == 0)
        return;
    if (now - rp->sweep_ms >= SWEEP_MS) {
        rp->sweep_ms = now;
        pk__repl_sweep(rp);
    }
    for (rp_stream *st = rp->streams; st; st = st->next)
        if (st->inflight && now - st->last_reply_ms > STALL_MS) {
            fprintf(stderr,
                    "partkv: replication to %s stalled; "
                    "reconnecting\n",
                    st->addr);
            st->last_reply_ms = now;
            pk_link_drop(rp->srv, st->addr); /* fails its calls */
        }
    pk__repl_pump_all(rp);
    pk__repl_release(rp);
}

int pk_repl_init(pk_server *s)
{
    pk_repl *rp = calloc(1, sizeof(*rp));

    if (rp == NULL)
        return PK_ENOMEM;
    rp->srv = s;
    rp->rcache = calloc(RP_RCACHE_SLOTS, sizeof(*rp->rcache)); /* or none */
    rp->start_ms = rp_now();
    rp->parallel = s->cfg.fsync == PK_FSYNC_ALWAYS && s->cfg.parallel_append;
    rp->crashed = rp->parallel && pk__repl_running_mark(rp);
    pk__repl_leases_load(rp);
    uv_timer_init(&s->loop, &rp->tick);
    rp->tick.data = rp;
    uv_timer_init(&s->loop, &rp->calone);
    rp->calone.data = rp;
    uv_timer_start(&rp->tick, on_tick, 20, 20);
    s->repl = rp;
    return PK_OK;
}

void pk_repl_free(pk_server *s)
{
    pk_repl *rp = s->repl;

    if (rp == NULL)
        return;
    if (rp->parallel && !rp->unclean)
        pk__repl_running_clear(rp);
    while (rp->streams) {
        rp_stream *st = rp->streams;
        rp->streams = st->next;
        pk__repl_stream_free(st);
    }
    free(rp->by_node);
    free(rp->follow_epoch);
    free(rp->fence_epoch);
    free(rp->released_ms);
    free(rp->fenced_from);
    free(rp->fence_map);
    free(rp->lead_epoch);
    free(rp->prev_epoch);
    free(rp->promo_pos);
    free(rp->stepped);
    free(rp->handoff);
    free(rp->released);
    free(rp->commit_want);
    free(rp->cdue);
    free(rp->cdue_set);
    free(rp->commit_seen);
    free(rp->commit_ep);
    free(rp->early);
    free(rp->early_set);
    free(rp->promise);
    for (uint32_t i = 0; rp->rcache && i < RP_RCACHE_SLOTS; i++)
        free(rp->rcache[i].v);
    free(rp->rcache);
    free(rp);
    s->repl = NULL;
}

void pk_repl_stop(pk_server *s)
{
    if (s->repl) {
        s->repl->closing = 1;
        uv_timer_stop(&s->repl->tick);
        uv_timer_stop(&s->repl->calone);
    }
}

void pk_repl_info(pk_server *s, pk_obuf *b)
{
    pk_repl *rp = s->repl;
    char line[256];
    int n = 0, k = 0;
    uint64_t now = rp_now();

    for (rp_stream *st = rp ? rp->streams : NULL; st; st = st->next)
        n += st->active;
    k = snprintf(line, sizeof(line),
                 "# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n", n);
    pk_obuf_append(b, line, (size_t)k);
    n = 0;
    for (rp_stream *st = rp ? rp->streams : NULL; st; st = st->next) {
        const char *colon = strrchr(st->addr, ':');
        if (!st->active)
            continue;
        k = snprintf(line, sizeof(line),
                     "slave%d:ip=%.*s,port=%s,state=%s,offset=0,lag=%llu\r\n",
                     n++, colon ? (int)(colon - st->addr) : 0, st->addr,
                     colon ? colon + 1 : "0",
                     st->lease_until > now ? "online" : "wait_bgsave",
                     (unsigned long long)(now - st->last_send_ms) / 1000);
        pk_obuf_append(b, line, (size_t)k);
    }
    k = snprintf(line, sizeof(line),
                 "partkv_acks:%s\r\npartkv_records_sent_before_commit:%llu"
                 "\r\n\r\n",
                 s->cfg.acks == PK_ACKS_LEADER ? "leader"
                 : s->cfg.acks == PK_ACKS_ALL  ? "all"
                                               : "quorum",
                 (unsigned long long)(rp ? rp->early_records : 0));
    pk_obuf_append(b, line, (size_t)k);
}

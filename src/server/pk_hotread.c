/* pk_hotread: replica reads of read-hot keys (see pk_hotread.h). */
#include "server/pk_hotread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "core/pk_topk.h"
#include "proto/pk_rreply.h"
#include "server/pk_link.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_store_log.h"

#define HR_TRACKED 16   /* keys the tracker follows */
#define HR_HOT 16       /* read-hot keys at most */
#define HR_PARTS 32     /* partitions with read indexes */
#define HR_WAIT_MS 1000 /* an index not answered by then is given up */
#define HR_FLIGHT 4     /* indexes in flight per partition */
#define HR_CACHED 16    /* GET replies kept, of read-hot keys */
#define HR_CACHE_KEY 128
#define HR_CACHE_REPLY 1024

/* The read indexes of one partition this node follows.  Up to HR_FLIGHT
 * are in flight at once: a read that arrives after the newest was asked
 * asks the next at once instead of waiting for an answer that cannot
 * cover it, so that a read waits one round trip, not two. */
typedef struct hr_part {
    struct pk_hotread *hr;
    uint32_t part;
    int used;
    uint64_t epoch;    /* the leader epoch followed when asked */
    uint64_t done_rx;  /* reads received up to this one are covered ... */
    uint64_t seq;      /* ... once our log of part reaches this */
    uint32_t gen;      /* of the indexes in flight: older answers dropped */
    int flight;        /* indexes in flight */
    int want;          /* reads wait for an index not asked yet */
    uint64_t last_rx;  /* srv->rx_seq when the newest of them was asked */
    uint64_t first_ms; /* when the oldest of them was asked, or 0 */
    uint64_t used_ms;  /* last read routed here */
    pk_conn *waiting;  /* reads held for an index */
    /* The read lease the leader granted with an index: until then (our
     * monotonic clock) any read is served here once our log reaches
     * lease_seq, while we follow the epoch it was granted at. */
    uint64_t lease_until, lease_seq, lease_epoch;
} hr_part;

/* A GET's reply to a read-hot key, as it was at the partition's log
 * position seq: good while that position, the map and the key's expiry
 * hold (every change to a partition's data is a record of its log). */
typedef struct hr_cached {
    uint64_t hash, seq, mapep;
    int64_t expire_ms; /* Unix ms, or -1: none */
    uint32_t part, klen, rlen;
    int proto, hit; /* hit: a value (INFO keyspace_hits) */
    char key[HR_CACHE_KEY];
    char reply[HR_CACHE_REPLY];
} hr_cached;

typedef struct pk_hotread pk_hotread;

struct pk_hotread {
    pk_server *srv;
    pk_topk rx; /* sampled reads received for partitions led elsewhere */
    uint64_t hot[HR_HOT];
    uint32_t nhot;
    hr_part parts[HR_PARTS];
    /* Keys read-hot here, as replicas (hot) or as leader (the node's
     * tracker): their GETs are cached. */
    uint64_t cache_hot[2 * HR_HOT];
    uint32_t ncache_hot;
    hr_cached cached[HR_CACHED];
    uint32_t ncached;
    pk_conn *ready; /* release(): the reads to run again */
    uint64_t rng;
    /* Stats. */
    uint64_t served, waited, forwarded, indexes, refused, spread, leased;
    uint64_t cache_hits, cache_fills;
};

/* The answer of an index, with what it was for. */
typedef struct hr_call {
    pk_server *srv;
    uint32_t slot, gen;
    uint64_t rx;       /* srv->rx_seq when it was asked */
    uint64_t asked_ms; /* ... and our monotonic clock */
    uint64_t epoch;    /* ... and the leader epoch followed */
} hr_call;

/* Leases run on the monotonic clock. */
static uint64_t mono_ms(void)
{
    return uv_hrtime() / 1000000u;
}

int pk_hotread_init(pk_server *s)
{
    pk_hotread *hr;

    if (s->cfg.hot_key_reads == 0 || s->cfg.hotkeys_sample <= 0)
        return PK_OK;
    hr = calloc(1, sizeof(*hr));
    if (hr == NULL)
        return PK_ENOMEM;
    if (pk_topk_init(&hr->rx, HR_TRACKED, s->cfg.hotkeys_sample) != PK_OK) {
        free(hr);
        return PK_ENOMEM;
    }
    hr->srv = s;
    hr->rng = 0x2545f4914f6cdd1dull ^ (uint64_t)(uintptr_t)hr;
    for (int i = 0; i < HR_PARTS; i++)
        hr->parts[i].hr = hr;
    s->hotread = hr;
    return PK_OK;
}

void pk_hotread_free(pk_server *s)
{
    pk_hotread *hr = s->hotread;

    if (hr == NULL)
        return;
    pk_topk_free(&hr->rx);
    free(hr);
    s->hotread = NULL;
}

static int is_hot(const pk_hotread *hr, uint64_t h)
{
    for (uint32_t i = 0; i < hr->nhot; i++)
        if (hr->hot[i] == h)
            return 1;
    return 0;
}

static uint64_t next_rand(pk_hotread *hr)
{
    uint64_t r = hr->rng; /* xorshift64 */

    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    return hr->rng = r;
}

/* Samples a read of key received here: 1 with *h its hash when it was
 * sampled, else 0 with *h 0. */
static int sample(pk_hotread *hr, pk_slice key, uint32_t part, uint64_t *h)
{
    uint64_t r = next_rand(hr);

    *h = 0;
    if (!pk_topk_want(&hr->rx, (double)(r >> 11) / 9007199254740992.0))
        return 0;
    *h = pk_topk_hash(key.ptr, key.len);
    pk_topk_add(&hr->rx, key.ptr, key.len, *h, part, 0);
    return 1;
}

/* Our log position of part (what the stream has brought). */
static uint64_t log_pos(pk_server *s, uint32_t part)
{
    pk_txn *t = s->txn;
    uint64_t seq = 0;

    if (t) {
        pk_store_log_last(t, part, &seq);
        return seq;
    }
    if (pk_txn_begin(s->store, 1, &t) != PK_OK)
        return 0;
    pk_store_log_last(t, part, &seq);
    pk_txn_abort(t);
    return seq;
}

static void cache_tick(pk_hotread *hr);

static hr_part *part_state(pk_hotread *hr, uint32_t part, uint64_t now)
{
    hr_part *free_one = NULL, *oldest = NULL;

    for (int i = 0; i < HR_PARTS; i++) {
        hr_part *p = &hr->parts[i];
        if (p->used && p->part == part)
            return p;
        if (!p->used && free_one == NULL)
            free_one = p;
        if (p->used && p->waiting == NULL && p->flight == 0 &&
            (oldest == NULL || p->used_ms < oldest->used_ms))
            oldest = p;
    }
    if (free_one == NULL)
        free_one = oldest;
    if (free_one == NULL)
        return NULL;                  /* every slot busy: forward */
    uint32_t gen = free_one->gen + 1; /* a late answer to it is dropped */
    memset(free_one, 0, sizeof(*free_one));
    free_one->hr = hr;
    free_one->gen = gen;
    free_one->used = 1;
    free_one->part = part;
    free_one->used_ms = now;
    return free_one;
}

/* The reads waiting on p run again: fwd, every one, sent to the leader;
 * else those the answers so far cover, served here (the others keep
 * waiting: running them again would only hold them again). */
static void release(hr_part *p, int fwd)
{
    pk_hotread *hr = p->hr;
    pk_conn **pp = &p->waiting, **tail = &hr->ready;

    while (*pp) {
        pk_conn *c = *pp;
        if (!fwd && c->rx_seq > p->done_rx) {
            pp = &c->held_next;
            continue;
        }
        *pp = c->held_next; /* onto hr->ready, in order */
        c->held_next = NULL;
        c->held_on = &hr->ready;
        c->hr_forward = fwd;
        *tail = c;
        tail = &c->held_next;
    }
    pk_conn_release(hr->srv, &hr->ready);
}

/* Forgets the indexes in flight (their answers are dropped). */
static void drop_flight(hr_part *p)
{
    p->gen++;
    p->flight = 0;
    p->first_ms = 0;
}

static void on_index(void *ctx, const pk_rr *r, const char *err)
{
    hr_call *call = ctx;
    pk_server *s = call->srv;
    pk_hotread *hr = s->hotread;
    hr_part *p = hr ? &hr->parts[call->slot] : NULL;
    hr_call c = *call;
    int64_t seq = -1, lease = 0;

    free(call);
    if (p == NULL || !p->used || p->gen != c.gen || p->flight == 0)
        return; /* given up on, or its slot reused */
    /* [seq, lease ms] */
    if (!err && r && r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[0].type == PK_RR_INT && r->elems[1].type == PK_RR_INT) {
        seq = r->elems[0].integer;
        lease = r->elems[1].integer;
    }
    if (seq < 0 || lease < 0) {
        hr->refused++;
        drop_flight(p);
        release(p, 1);
        return;
    }
    /* Answers come in order on the link: the next in flight is younger. */
    p->flight--;
    p->first_ms = p->flight ? pk_srv_wall_ms() : 0;
    if ((uint64_t)seq > p->seq)
        p->seq = (uint64_t)seq;
    /* The lease runs from when we asked, less the margin for clock rates:
     * it ends here before it ends at the leader. */
    if (lease > PK_REPL_LEASE_MARGIN_MS && c.epoch == p->epoch &&
        c.asked_ms + (uint64_t)lease - PK_REPL_LEASE_MARGIN_MS >
            p->lease_until) {
        p->lease_until = c.asked_ms + (uint64_t)lease - PK_REPL_LEASE_MARGIN_MS;
        p->lease_seq = (uint64_t)seq;
        p->lease_epoch = c.epoch;
        hr->leased++;
    }
    pk_repl_commit_seen(s, p->part, c.epoch, (uint64_t)seq);
    uint64_t rx = c.rx;
    if (rx > p->done_rx)
        p->done_rx = rx;
    if (log_pos(s, p->part) >= p->seq)
        release(p, 0);
}

/* Asks the leader of p for a read index.  Returns 0 or an error. */
static int ask(pk_hotread *hr, hr_part *p, uint64_t now)
{
    pk_server *s = hr->srv;
    const pk_pmap *m = s->cluster.map;
    uint32_t leader = pk_pmap_leader(m, p->part);
    char part[24], epoch[24], node[24], mapep[24];
    const char *argv[] = {"PK.READINDEX", part, epoch, node, mapep, "LEASE"};
    size_t lens[6];
    hr_call *call;
    pk_obuf ob;
    int rc;

    if (leader == PK_NODE_NONE)
        return PK_ENOTFOUND;
    call = malloc(sizeof(*call));
    if (call == NULL)
        return PK_ENOMEM;
    snprintf(part, sizeof(part), "%u", p->part);
    snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)p->epoch);
    snprintf(node, sizeof(node), "%u", s->cluster.self);
    snprintf(mapep, sizeof(mapep), "%llu", (unsigned long long)m->epoch);
    for (int i = 0; i < 6; i++)
        lens[i] = strlen(argv[i]);
    call->srv = s;
    call->slot = (uint32_t)(p - hr->parts);
    call->gen = p->gen;
    call->rx = s->rx_seq;
    call->asked_ms = mono_ms();
    call->epoch = p->epoch;
    pk_obuf_init(&ob);
    rc = pk_rr_write_cmd(&ob, 6, argv, lens);
    if (rc == PK_OK)
        rc = pk_link_call(s, m->nodes[leader].addr, &ob, on_index, call);
    pk_obuf_free(&ob);
    if (rc != PK_OK) {
        free(call);
        return rc;
    }
    if (p->flight++ == 0)
        p->first_ms = now ? now : 1;
    p->last_rx = s->rx_seq;
    hr->indexes++;
    return PK_OK;
}

/* A proxy (no store): a read of a read-hot key goes to a random replica of
 * its partition that is up -- a follower serves it by read index, or
 * forwards it to the leader until the key is hot there too -- instead of
 * always to the leader.  -1: route it as usual; 0: sent. */
static int spread(pk_hotread *hr, pk_cmd_ctx *x, uint32_t part)
{
    pk_server *s = hr->srv;
    const pk_pmap *m = s->cluster.map;
    const pk_partition *pt = &m->parts[part];
    uint32_t pick;

    if (pt->nreplicas < 2)
        return -1;
    pick = pt->replicas[next_rand(hr) % pt->nreplicas];
    if (pick == pt->replicas[0] || m->nodes[pick].state != PK_NODE_UP ||
        pk_link_forward(s, x->c, m->nodes[pick].addr, x->argc, x->argv) !=
            PK_OK)
        return -1;
    x->c->iter_cmds--; /* its reply comes from the replica */
    hr->spread++;
    return 0;
}

/* The state of part (followed at leader epoch) for a read now, or NULL
 * when every slot is busy. */
static hr_part *part_used(pk_hotread *hr, uint32_t part, uint64_t epoch)
{
    uint64_t now = pk_srv_wall_ms();
    hr_part *p = part_state(hr, part, now);

    if (p == NULL)
        return NULL;
    p->used_ms = now;
    if (p->epoch != epoch) { /* a new leader: what we knew is moot */
        p->epoch = epoch;
        p->done_rx = p->seq = 0;
        p->lease_until = 0;
        drop_flight(p);
    }
    return p;
}

/* 1 when a read lease of p runs and our log reached where it began: every
 * write acknowledged before now is in our copy.  Else (and at half its
 * life) a lease is asked with an index at the end of this iteration. */
static int leased(pk_hotread *hr, hr_part *p, uint64_t epoch)
{
    uint64_t mono = mono_ms();

    if (p->lease_until && (mono >= p->lease_until || p->lease_epoch != epoch ||
                           !pk_repl_lease_usable(hr->srv, p->part)))
        p->lease_until = 0;
    if ((p->lease_until == 0 ||
         p->lease_until - mono < PK_REPL_READ_LEASE_MS / 2) &&
        p->flight == 0)
        p->want = 1;
    return p->lease_until && log_pos(hr->srv, p->part) >= p->lease_seq;
}

int pk_hotread_covered(pk_server *s, uint32_t part)
{
    pk_hotread *hr = s->hotread;
    uint64_t epoch;
    hr_part *p;

    if (hr == NULL || s->store == NULL ||
        (epoch = pk_repl_follow_epoch(s, part)) == 0 ||
        (p = part_used(hr, part, epoch)) == NULL)
        return 0;
    return leased(hr, p, epoch);
}

/* The read runs here; its reply waits until the leader committed what it
 * sees (pk_repl_note): a write is visible on a follower before every
 * lease holder has it, and one that had no part in a read seen here must
 * not read older. */
static int serve(pk_hotread *hr, pk_cmd_ctx *x, uint32_t part)
{
    hr->served++;
    x->have_part = 1;
    x->part = part;
    return 1;
}

int pk_hotread_route(pk_cmd_ctx *x, const pk_cmd *cmd, uint32_t part)
{
    pk_server *s = x->srv;
    pk_hotread *hr = s->hotread;
    pk_conn *c = x->c;
    uint64_t epoch = 0, h;
    pk_keyrun r[PK_KEYRUNS_MAX];
    pk_slice key;
    hr_part *p;

    if (hr == NULL || c->internal || (cmd->flags & PK_CMD_WRITE) ||
        pk_cmd_keyruns(cmd, x->argc, x->argv, r) < 1)
        return -1;
    if (c->hr_forward) { /* its index was refused: to the leader */
        c->hr_forward = 0;
        hr->forwarded++;
        return -1;
    }
    if (s->store && (epoch = pk_repl_follow_epoch(s, part)) == 0)
        return -1;
    key = pk_cmd_key(cmd, &x->argv[r[0].first]);
    if (!sample(hr, key, part, &h) && hr->nhot == 0)
        return -1; /* nothing hot: no hash to compare */
    if (h == 0)
        h = pk_topk_hash(key.ptr, key.len);
    if (!is_hot(hr, h))
        return -1;
    if (s->store == NULL)
        return spread(hr, x, part);
    if ((p = part_used(hr, part, epoch)) == NULL)
        return -1;
    if (leased(hr, p, epoch))
        return serve(hr, x, part);
    if (c->rx_seq <= p->done_rx && log_pos(s, part) >= p->seq)
        return serve(hr, x, part);
    /* An index asked after this read arrived covers it; else one more is
     * asked at the end of this loop iteration, for every read it brought
     * (pk_hotread_flush). */
    if (p->flight == 0 || p->last_rx < c->rx_seq)
        p->want = 1;
    hr->waited++;
    pk_conn_hold_on(x, &p->waiting);
    return 0; /* held (or answered TRYAGAIN) */
}

void pk_hotread_flush(pk_server *s)
{
    pk_hotread *hr = s->hotread;
    uint64_t now;

    if (hr == NULL)
        return;
    now = pk_srv_wall_ms();
    for (int i = 0; i < HR_PARTS; i++) {
        hr_part *p = &hr->parts[i];
        if (!p->used || !p->want || p->flight >= HR_FLIGHT)
            continue; /* at HR_FLIGHT: asked when an answer comes in */
        p->want = 0;
        if (ask(hr, p, now) != PK_OK && p->flight == 0)
            release(p, 1); /* no index to be had: to the leader */
    }
}

void pk_hotread_committed(pk_server *s)
{
    pk_hotread *hr = s->hotread;

    if (hr == NULL)
        return;
    for (int i = 0; i < HR_PARTS; i++) {
        hr_part *p = &hr->parts[i];
        /* Reads an answer covers wait for our log to reach it. */
        if (p->used && p->waiting && p->done_rx &&
            log_pos(s, p->part) >= p->seq)
            release(p, 0);
    }
}

void pk_hotread_tick(pk_server *s)
{
    pk_hotread *hr = s->hotread;
    const pk_topk_entry *top[HR_TRACKED];
    uint64_t now = pk_srv_wall_ms();
    uint32_t n;

    if (hr == NULL)
        return;
    pk_topk_tick(&hr->rx, 1.0);
    n = pk_topk_top(&hr->rx, top, HR_TRACKED);
    hr->nhot = 0;
    for (uint32_t i = 0; i < n && hr->nhot < HR_HOT; i++)
        if (pk_topk_rate(&hr->rx, top[i], 0) >= (double)s->cfg.hot_key_reads)
            hr->hot[hr->nhot++] = top[i]->hash;
    cache_tick(hr);
    for (int i = 0; i < HR_PARTS; i++) {
        hr_part *p = &hr->parts[i];
        /* Not answered in time (a stopped leader): the reads go to the
         * leader, whose link fails them or answers them. */
        if (p->used && p->flight && now - p->first_ms >= HR_WAIT_MS) {
            drop_flight(p);
            hr->refused++;
            release(p, 1);
        } else if (p->used && p->waiting && p->flight == 0 &&
                   now - p->used_ms >= HR_WAIT_MS) {
            release(p, 1); /* our log never reached the answer */
        }
    }
}

/* ---- the cache of read-hot keys' GET replies ------------------------- */

/* Once a second: the keys to cache are those read-hot here as a replica
 * and as the leader; entries of others go. */
static void cache_tick(pk_hotread *hr)
{
    pk_server *s = hr->srv;
    const pk_topk_entry *top[HR_HOT];
    uint32_t n = 0, kept = 0;

    memcpy(hr->cache_hot, hr->hot, hr->nhot * sizeof(uint64_t));
    hr->ncache_hot = hr->nhot;
    if (s->hot)
        n = pk_topk_top(s->hot, top, HR_HOT);
    for (uint32_t i = 0; i < n; i++)
        if (pk_topk_rate(s->hot, top[i], 0) >= (double)s->cfg.hot_key_reads)
            hr->cache_hot[hr->ncache_hot++] = top[i]->hash;
    for (uint32_t i = 0; i < hr->ncached; i++) {
        int hot = 0;
        for (uint32_t j = 0; j < hr->ncache_hot && !hot; j++)
            hot = hr->cache_hot[j] == hr->cached[i].hash;
        if (hot && kept != i)
            hr->cached[kept] = hr->cached[i];
        kept += hot;
    }
    hr->ncached = kept;
}

/* key's hash when it is read-hot here (its GET is cached), else 0. */
static uint64_t hot_hash(const pk_hotread *hr, pk_slice key)
{
    uint64_t h;

    if (hr == NULL || hr->ncache_hot == 0 || key.len > HR_CACHE_KEY)
        return 0;
    h = pk_topk_hash(key.ptr, key.len);
    for (uint32_t j = 0; j < hr->ncache_hot; j++)
        if (hr->cache_hot[j] == h)
            return h;
    return 0;
}

/* The entry of key (hash h), or NULL. */
static hr_cached *entry_of(pk_hotread *hr, pk_slice key, uint64_t h)
{
    for (uint32_t i = 0; i < hr->ncached; i++) {
        hr_cached *e = &hr->cached[i];
        if (e->hash == h && e->klen == key.len &&
            memcmp(e->key, key.ptr, key.len) == 0)
            return e;
    }
    return NULL;
}

int pk_hotread_cached(pk_cmd_ctx *x, pk_txn *t, pk_slice key, uint64_t *h)
{
    pk_hotread *hr = x->srv->hotread;
    uint64_t seq = 0;
    hr_cached *e;

    *h = 0;
    /* Not inside EXEC: a group's writes move no log position until it
     * ends. */
    if (!x->have_part || x->c->in_exec || x->srv->cluster.map == NULL ||
        (*h = hot_hash(hr, key)) == 0 || (e = entry_of(hr, key, *h)) == NULL ||
        e->part != x->part || e->proto != x->c->proto ||
        e->mapep != x->srv->cluster.map->epoch ||
        (e->expire_ms >= 0 && (int64_t)x->srv->now_ms >= e->expire_ms) ||
        pk_store_log_last(t, x->part, &seq) != PK_OK || seq != e->seq)
        return 0;
    pk_obuf_append(x->out, e->reply, e->rlen);
    if (e->hit)
        x->srv->hits++;
    else
        x->srv->misses++;
    hr->cache_hits++;
    return 1;
}

void pk_hotread_keep(pk_cmd_ctx *x, pk_txn *t, pk_slice key, uint64_t h, int rc,
                     size_t out0)
{
    pk_hotread *hr = x->srv->hotread;
    size_t rlen = pk_obuf_pending(x->out) - out0;
    uint64_t seq;
    int64_t when;
    hr_cached *e;

    if ((rc != PK_OK && rc != PK_ENOTFOUND) || rlen > HR_CACHE_REPLY)
        return;
    e = entry_of(hr, key, h);
    if (pk_store_log_keepable(t, x->part, &seq) != PK_OK ||
        pk_key_expiretime(t, x->part, key.ptr, key.len, x->srv->now_ms,
                          &when) != PK_OK)
        return;
    if (e == NULL) {
        if (hr->ncached == HR_CACHED)
            return; /* full of hot keys: the tick makes room */
        e = &hr->cached[hr->ncached++];
    }
    e->hash = h;
    e->seq = seq;
    e->mapep = x->srv->cluster.map->epoch;
    e->expire_ms = when >= 0 ? when : -1;
    e->part = x->part;
    e->proto = x->c->proto;
    e->hit = rc == PK_OK;
    e->klen = (uint32_t)key.len;
    memcpy(e->key, key.ptr, key.len);
    e->rlen = (uint32_t)rlen;
    memcpy(e->reply, x->out->data + x->out->head + out0, rlen);
    hr->cache_fills++;
}

void pk_hotread_commit_failed(pk_server *s)
{
    if (s->hotread)
        s->hotread->ncached = 0; /* entries may hold what was not kept */
}

/* PK.READINDEX part epoch node mapepoch LEASE: [our log position of
 * part, a read lease's ms or 0] once that position is acknowledged (the
 * reply waits like a read's), while we lead part at epoch and stream it
 * to node, and node's map is not older than ours (with an older one it
 * could look for a key in a partition that no longer holds it: a split, a
 * move).  No lease on the range scheme (a split makes new partitions
 * whose writes would not wait for it) nor while a move fences part. */
void pk_cmd_pk_readindex(pk_cmd_ctx *x)
{
    pk_server *s = x->srv;
    int64_t part, epoch, node, mapep;
    uint64_t seq = 0, lease = 0;
    pk_txn *t;

    if (!x->c->internal) {
        pk_reply_error(x->out, "NOAUTH PK.READINDEX needs PK.AUTH with the "
                               "cluster secret");
        return;
    }
    if (x->argc != 6 || !pk_arg_eq(&x->argv[5], "lease") ||
        !pk_arg_i64(&x->argv[1], &part) || !pk_arg_i64(&x->argv[2], &epoch) ||
        !pk_arg_i64(&x->argv[3], &node) || !pk_arg_i64(&x->argv[4], &mapep) ||
        part < 0 || epoch < 0 || node < 0 || part >= PK_SLOTS ||
        node > UINT32_MAX) {
        pk_reply_error(x->out, "ERR bad PK.READINDEX arguments");
        return;
    }
    if (s->cluster.map == NULL || (uint64_t)mapep < s->cluster.map->epoch ||
        !pk_repl_streams_to(s, (uint32_t)part, (uint64_t)epoch,
                            (uint32_t)node)) {
        pk_reply_error(x->out, "TRYAGAIN not leading that partition at that "
                               "epoch for that node");
        return;
    }
    if ((t = pk_srv_txn(x)) == NULL)
        return; /* replied */
    pk_repl_want_commits(s, (uint32_t)part);
    pk_store_log_last(t, (uint32_t)part, &seq);
    if (s->cluster.map->scheme != PK_SCHEME_RANGE &&
        !pk_move_fenced(s, (uint32_t)part))
        lease = pk_repl_read_lease(s, (uint32_t)part, (uint32_t)node);
    x->have_part = 1; /* the reply waits for seq's acknowledgement */
    x->part = (uint32_t)part;
    pk_reply_array(x->out, 2);
    pk_reply_int(x->out, (int64_t)seq);
    pk_reply_int(x->out, (int64_t)lease);
}

void pk_hotread_info(pk_server *s, pk_obuf *b)
{
    const pk_hotread *hr = s->hotread;
    char line[320];
    int n;

    if (hr == NULL)
        return;
    n = snprintf(
        line, sizeof(line),
        "hot_reads_keys:%u\r\nhot_reads_served:%llu\r\n"
        "hot_reads_waited:%llu\r\nhot_reads_indexes:%llu\r\n"
        "hot_reads_refused:%llu\r\nhot_reads_forwarded:%llu\r\n"
        "hot_reads_spread:%llu\r\nhot_reads_leases:%llu\r\n"
        "hot_reads_cache_hits:%llu\r\nhot_reads_cache_fills:%llu\r\n",
        hr->nhot, (unsigned long long)hr->served,
        (unsigned long long)hr->waited, (unsigned long long)hr->indexes,
        (unsigned long long)hr->refused, (unsigned long long)hr->forwarded,
        (unsigned long long)hr->spread, (unsigned long long)hr->leased,
        (unsigned long long)hr->cache_hits,
        (unsigned long long)hr->cache_fills);
    pk_obuf_append(b, line, (size_t)n);
}

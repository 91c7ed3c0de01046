/*
 * pk_repl_int: what the replication files share (pk_repl.h says what
 * replication does).  Its state is one pk_repl per node:
 *
 *   pk_repl.c         who may serve and what is committed: leases, read
 *                     leases, commit positions; map changes, the tick,
 *                     lifetime, INFO
 *   pk_repl_stream.c  leader side: one stream per follower node, its
 *                     messages (hello, accept, records, snapshots,
 *                     commit positions, releases) and their answers
 *   pk_repl_gate.c    client side: replies held until enough replicas
 *                     have the writes they depend on, and WAIT
 *   pk_repl_follow.c  follower side: PK.REPL PUSH, FENCE, HANDOFF, STEPPED
 *   pk_repl_state.c   what survives a restart: repl.state, repl.leases
 */
#ifndef PK_SERVER_PK_REPL_INT_H
#define PK_SERVER_PK_REPL_INT_H

#include <stdint.h>
#include <uv.h>

#include "core/pk_pmap.h"
#include "server/pk_repl.h"
#include "server/pk_srv.h"

#define READ_LEASES 64 /* read leases granted and running, at most */

enum ps {
    PS_NEW,      /* a hello goes next */
    PS_HELLO,    /* hello sent */
    PS_ANSWERED, /* the answer (hfe, match) waits for a decision */
    PS_ACCEPT,   /* go on from its log: an accept goes next */
    PS_STREAM,   /* records flow */
    PS_NEEDSNAP, /* a snapshot goes next */
    PS_SNAP,     /* snapshot sent */
};

typedef struct rp_stream {
    pk_repl *rp;
    uint32_t node; /* follower id in the map */
    char addr[PK_ADDR_MAX + 1];
    uint8_t *state;  /* per partition, enum ps */
    uint8_t *queued; /* per partition: in queue */
    uint64_t *epoch; /* per partition: leader epoch of the state */
    uint64_t *sent;  /* last seq sent */
    uint64_t *match; /* last seq the follower has (ANSWERED: its last) */
    uint64_t *hfe;   /* ANSWERED: the epoch it follows */
    uint64_t *csent; /* commit position sent ('C') */
    uint64_t last_reply_ms;
    uint32_t *queue; /* partitions with something to send */
    uint32_t nqueue;
    uint32_t inflight;
    uint64_t last_send_ms;
    uint64_t lease_until; /* its promise, on our clock */
    int active;           /* follows something we lead */
    struct rp_stream *next;
} rp_stream;

/* A record a pump round read (pk_repl_stream.c's round cache). */
typedef struct rp_rec {
    uint64_t seq;
    const void *rec; /* in the round's transaction's map */
    size_t len;
} rp_rec;

/* The records of partition part that round read, consecutive from v[0];
 * to_end: up to the end of its log. */
typedef struct rp_rcache {
    uint64_t round;
    uint32_t part;
    int to_end;
    rp_rec *v; /* owned */
    size_t n, cap;
} rp_rcache;

typedef struct rp_ent {
    uint32_t part;
    char kind;
} rp_ent;

typedef struct rp_call {
    rp_stream *st;
    uint64_t sent_ms;
    uint32_t n;
    rp_ent *ents;
} rp_call;

/* A read lease this leader granted: node serves part until then (our
 * clock).  A table of its own, not a stream's: it outlives the stream. */
typedef struct rp_rlease {
    uint32_t part, node;
    uint64_t until;
} rp_rlease;

struct rp_need {
    uint32_t part;
    uint64_t seq;
    uint64_t epoch; /* a follower's read: the leader epoch it followed */
};

typedef struct rp_need rp_need;

struct pk_repl {
    pk_server *srv;
    uint32_t np;
    uint64_t *follow_epoch; /* persisted: the leader epoch we follow */
    uint64_t *fence_epoch;  /* persisted: nothing older is accepted */
    int snapped; /* follower: imported a snapshot since the last save */
    uint32_t *fenced_from; /* follower: old leader id + 1 of p's fence,
                            * until a newer leader of p speaks */
    uint64_t *lead_epoch;  /* leader: epoch we lead at, 0 if not */
    uint64_t *prev_epoch;  /* leader: epoch we were promoted from */
    uint64_t *promo_pos;   /* ... and our position then */
    uint8_t *stepped;      /* leader: a follower saw a newer epoch */
    uint64_t *handoff;     /* leader: handing p over until (ms), or 0 */
    uint64_t *released;    /* follower: leader epoch + 1 that let p go */
    uint64_t *released_ms; /* ... until then (HANDOFF_MS after it did) */
    uint64_t *promise;     /* per node id: when we last promised it */
    uint64_t *fence_map;   /* per node id, persisted: a fence of one of its
                            * partitions was taken for a map of this epoch; it
                            * gets no promise while its map is older */
    uint32_t npromise;
    rp_stream **by_node; /* per node id */
    uint32_t nby_node;
    rp_stream *streams;
    pk_conn *waiters; /* gated connections */
    pk_conn *waits;   /* WAIT commands */
    uv_timer_t tick;
    uv_timer_t calone; /* COMMIT_ALONE_MS after a commit position moved */
    int calone_on;
    uint32_t *cdue;    /* partitions whose commit position waits */
    uint8_t *cdue_set; /* ... flags */
    uint32_t ncdue;
    uint64_t start_ms, sweep_ms;
    int state_dirty;
    int in_pump; /* inside pump: connections resume from the tick */
    int closing;
    int release_due;
    rp_rlease rleases[READ_LEASES];
    uint32_t nrleases;     /* entries in use, expired ones included */
    uint64_t leases_saved; /* repl.leases says leases may run till (wall) */
    uint64_t hold_ms;      /* ... as read at start: no ack before (ours) */
    uint64_t *commit_want; /* leader: send p's commit position till then */
    uint64_t *commit_seen; /* follower: the leader's commit position ... */
    uint64_t *commit_ep;   /* ... at this leader epoch */
    int commit_moved;      /* follower: a commit position came in */
    /* Pump rounds (one per transaction a pump reads the log in) and the
     * records each read, by partition: every follower of a partition
     * wants the same ones, and the journal is read once for them all. */
    uint64_t round;
    rp_rcache *rcache; /* RP_RCACHE_SLOTS, owned */
    /* Parallel append (pk_repl_precommit): records of the iteration's
     * transaction go out before its commit -- with --fsync always, whose
     * commit (an fdatasync) they then overlap; under everysec a commit
     * is a write to memory, nothing to overlap, and records leave after
     * it.  pre: the pump reads that transaction; early: the partitions
     * whose records (or snapshots) went out so, till the commit ends. */
    int parallel, pre;
    uint32_t *early;
    uint8_t *early_set;
    uint32_t nearly;
    uint64_t early_records; /* sent before their commit, since start */
    /* (parallel only) The last run did not stop cleanly (repl.running
     * was there): a
     * partition we led at the same epoch then may have records on
     * followers that never reached our log, so we step down from it
     * (the controller promotes at a new epoch) instead of writing their
     * positions again.  unclean: this run leaves the file in place. */
    int crashed, unclean;
};

#define RP_RCACHE_SLOTS 1024u

/* Leases and promises run on the monotonic clock. */
static inline uint64_t rp_now(void)
{
    return uv_hrtime() / 1000000u;
}

static inline const pk_partition *rp_part(const pk_server *s, uint32_t p)
{
    const pk_pmap *m = s->cluster.map;

    return m && p < m->npartitions ? &m->parts[p] : NULL;
}

static inline int rp_is_follower(const pk_partition *pt, uint32_t node)
{
    for (int i = 1; i < pt->nreplicas; i++)
        if (pt->replicas[i] == node)
            return 1;
    return 0;
}

/* Copies (the leader included) a write needs under --acks. */
static inline int rp_copies_needed(const pk_server *s, int r)
{
    switch (s->cfg.acks) {
    case PK_ACKS_LEADER:
        return 1;
    case PK_ACKS_ALL:
        return r;
    default:
        return r / 2 + 1;
    }
}

static inline rp_stream *rp_stream_of(pk_repl *rp, uint32_t node)
{
    return node < rp->nby_node ? rp->by_node[node] : NULL;
}

/* pk_repl.c */
/* 1 while we may serve partition p as its leader: a majority of the
 * followers' promises run and none reported a newer epoch. */
int pk__repl_lease_ok(pk_repl *rp, const pk_partition *pt, uint32_t p,
                      uint64_t now);
/* 1 while a read lease of p granted here runs. */
int pk__repl_leased(const pk_repl *rp, uint32_t p, uint64_t now);
/* The lowest position of p the holders of its running read leases have
 * (UINT64_MAX: none runs). */
uint64_t pk__repl_holders_have(pk_repl *rp, uint32_t p, uint64_t now);
/* Our commit position of p: a write up to it would be acknowledged. */
uint64_t pk__repl_commit_pos(pk_repl *rp, const pk_partition *pt, uint32_t p,
                             uint64_t now);
/* Followers of p whose copy reaches seq. */
int pk__repl_acked(pk_repl *rp, const pk_partition *pt, uint32_t p,
                   uint64_t seq);

/* pk_repl_stream.c */
/* Queues p on st's stream (once). */
void pk__repl_enqueue(rp_stream *st, uint32_t p);
/* A stream to node, registered in rp.  0 or ENOMEM. */
int pk__repl_stream_new(pk_repl *rp, uint32_t node, rp_stream **out);
void pk__repl_stream_free(rp_stream *st);
/* A follower was fenced at a newer epoch: we stop serving p and release
 * it to our other followers. */
void pk__repl_step_down(pk_repl *rp, uint32_t p);
/* Records (or a snapshot) of p went out before their commit. */
void pk__repl_early(pk_repl *rp, uint32_t p);
/* Every stream sends what its window allows. */
void pk__repl_pump_all(pk_repl *rp);
/* Queues what a stream has not sent (records of expiry, releases). */
void pk__repl_sweep(pk_repl *rp);

/* pk_repl_gate.c */
/* Resumes the connections and WAITs whose answers are known now. */
void pk__repl_release(pk_repl *rp);

/* pk_repl_state.c */
int pk__repl_leases_save(pk_repl *rp, uint64_t until_wall);
void pk__repl_leases_load(pk_repl *rp);
/* repl.state: written (fsync, rename) or loaded; save: 0 or -1. */
int pk__repl_state_save(pk_repl *rp);
void pk__repl_state_load(pk_repl *rp);
/* Room for node id node in promise and fence_map.  0 or ENOMEM. */
int pk__repl_node_room(pk_repl *rp, uint32_t node);
/* Creates repl.running; 1 if it was there (the last run stopped
 * uncleanly), else 0. */
int pk__repl_running_mark(pk_repl *rp);
/* Removes it: this run stops cleanly. */
void pk__repl_running_clear(pk_repl *rp);

#endif

/* pk_repl: log streaming, acknowledgements and fencing (see pk_repl.h). */
#include "server/pk_repl.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "proto/pk_rreply.h"
#include "server/pk_cmd.h"
#include "server/pk_link.h"
#include "server/pk_multi.h"
#include "server/pk_srv.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

#define HEARTBEAT_MS 100
#define ACK_TIMEOUT_MS 2000
#define WINDOW 4                /* messages in flight per stream */
#define MSG_BYTES (256u << 10)  /* payload bytes per message, about */
#define SWEEP_MS 500            /* look for records nobody queued */
#define WRITES_KEPT 32          /* per connection, for WAIT */
#define STATE_MAGIC 0x504b5253u /* "PKRS" */
/* A handoff not completed by then ends. */
#define HANDOFF_MS 3000
/* No answer from a follower for this long: redial. */
#define STALL_MS 5000
#define READ_LEASES 64 /* read leases granted and running, at most */
/* A commit position rides on records sent in this loop iteration; none
 * sent, it goes alone at the next turn of the loop (follower reads of a
 * key that is also written wait for it: 2 ms here cost them a fifth of
 * their rate, bench/README.md). */
#define COMMIT_ALONE_MS 0
/* repl.leases is saved a second ahead of the leases it covers. */
#define LEASES_HOLD_MAX (PK_REPL_READ_LEASE_MS + 1000)

uint32_t pk__crc32c(const void *data, size_t len); /* pk_pmap_codec.c */

/* Appends v as a bulk string (a decimal argument of a request). */
static void put_u64(pk_obuf *ob, uint64_t v)
{
    char b[PK_I64_CHARS];

    pk_reply_bulk(ob, b, pk_i64_format(b, (int64_t)v));
}

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
};

/* Leases and promises run on the monotonic clock. */
static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* ---- persisted state ------------------------------------------------ */

static void state_path(pk_repl *rp, char *p, size_t n)
{
    snprintf(p, n, "%s/repl.state", rp->srv->cfg.dir);
}

/*
 * repl.leases: the wall-clock ms until which read leases this node granted
 * may run.  Written before a lease that runs later is granted (no fsync:
 * it must survive the process, and a machine takes longer to boot than a
 * lease lasts), read at start: until then the node acknowledges nothing,
 * for it forgot which followers hold leases.  Saved a second ahead, so
 * that renewals write it about once a second.
 */
static void leases_path(pk_repl *rp, char *p, size_t n)
{
    snprintf(p, n, "%s/repl.leases", rp->srv->cfg.dir);
}

static int leases_save(pk_repl *rp, uint64_t until_wall)
{
    char path[4096], tmp[4100], text[32];
    int fd, n, ok;

    leases_path(rp, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)until_wall);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
        return -1;
    ok = write(fd, text, (size_t)n) == n;
    /* Renamed: a failed write leaves the previous end in place. */
    return close(fd) == 0 && ok && rename(tmp, path) == 0 ? 0 : -1;
}

static void leases_load(pk_repl *rp)
{
    char path[4096], text[32] = "";
    uint64_t wall = pk_srv_wall_ms(), until;
    FILE *f;

    leases_path(rp, path, sizeof(path));
    if ((f = fopen(path, "r")) == NULL)
        return;
    if (fgets(text, sizeof(text), f) &&
        sscanf(text, "%llu", (unsigned long long *)&until) == 1 && until > wall)
        /* At most what a save can say: a clock set back meanwhile must
         * not hold the node for long. */
        rp->hold_ms =
            now_ms() +
            (until - wall < LEASES_HOLD_MAX ? until - wall : LEASES_HOLD_MAX);
    fclose(f);
}

/*
 * The state file: magic, np, then per partition (follow epoch, fence
 * epoch), then the number of node slots and each node's fence map epoch,
 * then a CRC32C of everything before it.  Native byte order: it never
 * leaves the node.
 */
static size_t state_size(uint32_t np, uint32_t nn)
{
    return 8 + (size_t)np * 16 + 4 + (size_t)nn * 8 + 4;
}

/* Writes the state: tmp, fsync, rename, directory fsync.  0 or -1. */
static int state_save(pk_repl *rp)
{
    char path[4096], tmp[4200];
    size_t n = state_size(rp->np, rp->npromise);
    uint8_t *b = malloc(n), *p = b;
    uint32_t crc;
    int fd, ok;

    if (b == NULL)
        return -1;
    memcpy(p, &(uint32_t){STATE_MAGIC}, 4);
    memcpy(p + 4, &rp->np, 4);
    p += 8;
    for (uint32_t i = 0; i < rp->np; i++, p += 16) {
        memcpy(p, &rp->follow_epoch[i], 8);
        memcpy(p + 8, &rp->fence_epoch[i], 8);
    }
    memcpy(p, &rp->npromise, 4);
    p += 4;
    if (rp->npromise)
        memcpy(p, rp->fence_map, (size_t)rp->npromise * 8);
    p += (size_t)rp->npromise * 8;
    crc = pk__crc32c(b, n - 4);
    memcpy(p, &crc, 4);
    state_path(rp, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ok = fd >= 0 && write(fd, b, n) == (ssize_t)n && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    ok = ok && rename(tmp, path) == 0;
    free(b);
    if (ok && (fd = open(rp->srv->cfg.dir, O_RDONLY)) >= 0) {
        ok = fsync(fd) == 0;
        close(fd);
    }
    if (!ok) {
        fprintf(stderr, "partkv: cannot write %s\n", path);
        return -1;
    }
    rp->state_dirty = 0;
    return 0;
}

static int node_room(pk_repl *rp, uint32_t node);

/* Loads the state file if it is whole and of this np; else everything is
 * zero (a new node). */
static void state_load(pk_repl *rp)
{
    char path[4096];
    uint8_t *b = NULL;
    uint32_t magic, np, nn, crc;
    long len;
    FILE *f;

    memset(rp->follow_epoch, 0, rp->np * sizeof(uint64_t));
    memset(rp->fence_epoch, 0, rp->np * sizeof(uint64_t));
    if (rp->npromise)
        memset(rp->fence_map, 0, rp->npromise * sizeof(uint64_t));
    state_path(rp, path, sizeof(path));
    if ((f = fopen(path, "rb")) == NULL)
        return;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 16 &&
        fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)len)) != NULL &&
        fread(b, 1, (size_t)len, f) == (size_t)len) {
        memcpy(&magic, b, 4);
        memcpy(&np, b + 4, 4);
        memcpy(&crc, b + len - 4, 4);
        nn = 0;
        if ((size_t)len >= state_size(np, 0))
            memcpy(&nn, b + 8 + (size_t)np * 16, 4);
        if (magic == STATE_MAGIC && np == rp->np &&
            (size_t)len == state_size(np, nn) &&
            crc == pk__crc32c(b, (size_t)len - 4) &&
            (nn == 0 || node_room(rp, nn - 1) == PK_OK)) {
            for (uint32_t i = 0; i < np; i++) {
                memcpy(&rp->follow_epoch[i], b + 8 + (size_t)i * 16, 8);
                memcpy(&rp->fence_epoch[i], b + 16 + (size_t)i * 16, 8);
            }
            if (nn)
                memcpy(rp->fence_map, b + 12 + (size_t)np * 16, (size_t)nn * 8);
        }
    }
    free(b);
    fclose(f);
}

/* ---- map helpers ------------------------------------------------------ */

static const pk_partition *part_of(const pk_server *s, uint32_t p)
{
    const pk_pmap *m = s->cluster.map;

    return m && p < m->npartitions ? &m->parts[p] : NULL;
}

static int is_follower(const pk_partition *pt, uint32_t node)
{
    for (int i = 1; i < pt->nreplicas; i++)
        if (pt->replicas[i] == node)
            return 1;
    return 0;
}

/* Copies (the leader included) a write needs under --acks. */
static int copies_needed(const pk_server *s, int r)
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

static rp_stream *stream_of(pk_repl *rp, uint32_t node)
{
    return node < rp->nby_node ? rp->by_node[node] : NULL;
}

static uint64_t lease_end(pk_repl *rp, const pk_partition *pt, uint32_t p);

/* 1 while we may serve partition p as its leader: a majority of the
 * followers' promises run and none reported a newer epoch. */
static int lease_ok(pk_repl *rp, const pk_partition *pt, uint32_t p,
                    uint64_t now)
{
    if (pt->nreplicas <= 1)
        return 1;
    if (rp->stepped[p] || pk_repl_handing_off(rp->srv, p) ||
        rp->fence_epoch[p] > rp->lead_epoch[p] || now < rp->hold_ms)
        return 0; /* the last: read leases granted before a restart run */
    return lease_end(rp, pt, p) > now;
}

/* 1 while a read lease of p granted here runs. */
static int leased(const pk_repl *rp, uint32_t p, uint64_t now)
{
    for (uint32_t i = 0; i < rp->nrleases; i++)
        if (rp->rleases[i].part == p && rp->rleases[i].until > now)
            return 1;
    return 0;
}

/* The lowest position of p the holders of its running read leases have
 * (UINT64_MAX: none runs). */
static uint64_t holders_have(pk_repl *rp, uint32_t p, uint64_t now)
{
    uint64_t low = UINT64_MAX;

    for (uint32_t i = 0; i < rp->nrleases; i++) {
        const rp_rlease *l = &rp->rleases[i];
        rp_stream *st;
        if (l->part != p || l->until <= now)
            continue;
        st = stream_of(rp, l->node);
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
        rp_stream *st = stream_of(rp, pt->replicas[i]);
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
static uint64_t commit_pos(pk_repl *rp, const pk_partition *pt, uint32_t p,
                           uint64_t now)
{
    int need = copies_needed(rp->srv, pt->nreplicas) - 1;
    uint64_t c, low;

    if (!lease_ok(rp, pt, p, now))
        return 0;
    c = kth_of_followers(rp, pt, p, need < 1 ? 1 : need, match_of);
    low = holders_have(rp, p, now);
    return low < c ? low : c;
}

static void enqueue(rp_stream *st, uint32_t p);

/* The followers of p (which we lead) that lack its commit position:
 * queued when queue, else counted. */
static int commit_behind(pk_repl *rp, uint32_t p, uint64_t now, int queue)
{
    const pk_partition *pt = part_of(rp->srv, p);
    uint64_t c;
    int n = 0;

    if (rp->commit_want[p] <= now || pt == NULL || pt->nreplicas < 2 ||
        pt->replicas[0] != rp->srv->cluster.self)
        return 0;
    c = commit_pos(rp, pt, p, now);
    for (int i = 1; i < pt->nreplicas; i++) {
        rp_stream *st = stream_of(rp, pt->replicas[i]);
        if (st && st->state[p] == PS_STREAM && c > st->csent[p]) {
            n++;
            if (queue)
                enqueue(st, p);
        }
    }
    return n;
}

static void pump_all(pk_repl *rp);

static void on_calone(uv_timer_t *h)
{
    pk_repl *rp = h->data;
    uint64_t now = now_ms();

    rp->calone_on = 0;
    for (uint32_t i = 0; i < rp->ncdue; i++) {
        rp->cdue_set[rp->cdue[i]] = 0;
        commit_behind(rp, rp->cdue[i], now, 1);
    }
    rp->ncdue = 0;
    if (rp->srv->txn == NULL) /* else the check phase pumps */
        pump_all(rp);
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
        s->repl->commit_want[p] = now_ms() + 2 * PK_REPL_READ_LEASE_MS;
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

uint64_t pk_repl_read_lease(pk_server *s, uint32_t p, uint32_t node)
{
    pk_repl *rp = s->repl;
    const pk_partition *pt = part_of(s, p);
    uint64_t now = now_ms(), until, wall;
    rp_rlease *slot = NULL;

    if (rp == NULL || pt == NULL || p >= rp->np || pt->nreplicas < 2 ||
        pt->replicas[0] != s->cluster.self || !is_follower(pt, node) ||
        !lease_ok(rp, pt, p, now))
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
        if (leases_save(rp, wall + 1000) != 0)
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
           !(rp->released[part] == ep + 1 && now_ms() < rp->released_ms[part]);
}

int pk_repl_read_leased(const pk_server *s, uint32_t part)
{
    return s->repl && leased(s->repl, part, now_ms());
}

/* Followers of p whose copy reaches seq. */
static int acked(pk_repl *rp, const pk_partition *pt, uint32_t p, uint64_t seq)
{
    int n = 0;

    for (int i = 1; i < pt->nreplicas; i++) {
        rp_stream *st = stream_of(rp, pt->replicas[i]);
        n += st && st->state[p] == PS_STREAM && st->match[p] >= seq;
    }
    return n;
}

uint64_t pk_repl_commit_seq(const pk_server *s, uint32_t part)
{
    const pk_partition *pt = part_of(s, part);

    if (s->repl == NULL || pt == NULL || part >= s->repl->np ||
        pt->nreplicas == 0 || pt->replicas[0] != s->cluster.self)
        return 0;
    return commit_pos(s->repl, pt, part, now_ms());
}

int pk_repl_all_have(const pk_server *s, uint32_t part, uint64_t seq)
{
    const pk_partition *pt = part_of(s, part);

    return s->repl && pt && part < s->repl->np &&
           acked(s->repl, pt, part, seq) == pt->nreplicas - 1;
}

/* 1: done, 0: wait, -1: cannot be (not the leader any more). */
static int need_state(pk_repl *rp, const rp_need *n, uint64_t now)
{
    pk_server *s = rp->srv;
    const pk_partition *pt = part_of(s, n->part);

    if (n->epoch) /* a follower's read: what it saw is committed */
        return pk_repl_follow_epoch(s, n->part) != n->epoch ? -1
               : rp->commit_ep[n->part] == n->epoch &&
                       rp->commit_seen[n->part] >= n->seq
                   ? 1
                   : 0;
    if (pt == NULL || pt->nreplicas == 0 || pt->replicas[0] != s->cluster.self)
        return -1;
    if (pt->nreplicas <= 1) /* a follower just removed may hold a lease */
        return holders_have(rp, n->part, now) >= n->seq;
    if (rp->stepped[n->part])
        return -1;
    if (!lease_ok(rp, pt, n->part, now) ||
        holders_have(rp, n->part, now) < n->seq)
        return 0;
    return 1 + acked(rp, pt, n->part, n->seq) >=
           copies_needed(s, pt->nreplicas);
}

/* ---- streams ---------------------------------------------------------- */

static void enqueue(rp_stream *st, uint32_t p)
{
    if (!st->queued[p]) {
        st->queued[p] = 1;
        st->queue[st->nqueue++] = p;
    }
}

static void stream_free(rp_stream *st);

static int stream_new(pk_repl *rp, uint32_t node, rp_stream **out)
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
        stream_free(st);
        return PK_ENOMEM;
    }
    if (node >= rp->nby_node) {
        uint32_t n = node + 16;
        rp_stream **b = realloc(rp->by_node, n * sizeof(*b));
        if (b == NULL) {
            stream_free(st);
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

static void stream_free(rp_stream *st)
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

static void release(pk_repl *rp);
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
 * while the iteration's own transaction is open: its records are not
 * committed yet, and the check phase pumps after the commit.
 */
static pk_txn *rt_get(pk_repl *rp, pk_txn **rt)
{
    if (*rt == NULL &&
        (rp->srv->txn || pk_txn_begin(rp->srv->store, 0, rt) != PK_OK))
        *rt = NULL;
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

/* A follower was fenced at a newer epoch: we stop serving p and release it
 * to our other followers (pk_repl_handing_off). */
static void step_down(pk_repl *rp, uint32_t p)
{
    const pk_partition *pt = part_of(rp->srv, p);

    rp->stepped[p] = 1;
    for (int i = 1; pt && i < pt->nreplicas; i++) {
        rp_stream *st = stream_of(rp, pt->replicas[i]);
        if (st && st->state[p] == PS_STREAM)
            enqueue(st, p);
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
                step_down(rp, p);
        } else {
            st->state[p] = PS_NEW;
        }
        enqueue(st, p);
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
        enqueue(st, p);
        break;
    case 'S':
        if (r->type == PK_RR_INT && st->state[p] == PS_SNAP) {
            st->state[p] = PS_STREAM;
            st->match[p] = (uint64_t)r->integer;
            enqueue(st, p); /* records written since */
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
                enqueue(st, p);
            }
        }
    } else {
        uint64_t until =
            call->sent_ms + PK_REPL_FOLLOW_LEASE_MS - PK_REPL_LEASE_MARGIN_MS;
        uint64_t now = now_ms();
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
        st->last_reply_ms = now_ms();
    }
    free(call->ents);
    free(call);
    if (!rp->in_pump && rp->srv->txn == NULL) {
        rp->in_pump = 1;
        pump(st, &rt);
        rp->in_pump = 0;
        rt_end(&rt);
        release(rp);
    } else if (rp->in_pump) {
        rt_end(&rt);
        rp->release_due = 1;
    } else { /* the check phase pumps after this iteration's commit */
        rt_end(&rt);
        release(rp);
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
} log_ctx;

#define LOG_FULL 1

static int on_record(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    log_ctx *lc = ctx;
    pk_repl *rp = lc->st->rp;

    if (msg_add(lc->m, 'L', lc->p, rp->lead_epoch[lc->p], seq, rec, len))
        return LOG_FULL;
    lc->st->sent[lc->p] = seq;
    return lc->m->bytes >= MSG_BYTES ? LOG_FULL : 0;
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
            enqueue(st, p);
            return 1;
        }
        st->state[p] = PS_HELLO;
        on_hello(st, p, st->hfe[p], st->match[p], rt);
        enqueue(st, p);
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
            enqueue(st, p);
            return 1;
        }
        pk_obuf_init(&snap);
        rc = pk_store_log_last(t, p, &last);
        if (rc == PK_OK)
            rc = pk_store_part_export(t, p, on_chunk, &snap);
        if (rc == PK_OK) {
            st->state[p] = PS_SNAP;
            st->sent[p] = last;
            msg_add(m, 'S', p, le, last, snap.data + snap.head,
                    pk_obuf_pending(&snap));
        }
        pk_obuf_free(&snap);
        if (rc != PK_OK)
            enqueue(st, p); /* again on the next pump */
        return m->bytes >= MSG_BYTES;
    }
    default: /* HELLO, SNAP: an answer is on its way */
        return 0;
    }
    if ((t = rt_get(rp, rt)) == NULL) {
        enqueue(st, p);
        return 1;
    }
    /* Followers reading p learn what is committed (pk_hotread.h). */
    if (rp->commit_want[p] > now_ms()) {
        const pk_partition *pt = part_of(rp->srv, p);
        uint64_t c = pt ? commit_pos(rp, pt, p, now_ms()) : 0;
        if (c > st->csent[p]) {
            st->csent[p] = c;
            msg_add(m, 'C', p, le, c, "", 0);
        }
    }
    log_ctx lc = {m, st, p};
    rc = pk_store_log_read(t, p, st->sent[p] + 1, on_record, &lc);
    if (rc == PK_ERANGE) {
        st->state[p] = PS_NEEDSNAP; /* trimmed: the next message */
        enqueue(st, p);
        return 0;
    }
    if (rc == LOG_FULL) {
        enqueue(st, p); /* more after this message */
        return 1;
    }
    /* After every record, and once the read leases of p ended (the sweep
     * sends it again till then). */
    if (rc == PK_OK && pk_repl_handing_off(rp->srv, p) &&
        !leased(rp, p, now_ms()))
        msg_add(m, 'R', p, le, st->sent[p], "", 0);
    return 0;
}

/* Sends messages while the window allows: queued partitions first, a
 * heartbeat when nothing was sent for HEARTBEAT_MS. */
static void pump(rp_stream *st, pk_txn **rt)
{
    pk_repl *rp = st->rp;
    pk_server *s = rp->srv;
    uint64_t now = now_ms();

    if (s->txn)
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
            const pk_partition *pt = part_of(s, p);
            st->queued[p] = 0;
            if (pt == NULL || pt->nreplicas == 0 ||
                pt->replicas[0] != s->cluster.self ||
                !is_follower(pt, st->node) || st->epoch[p] != rp->lead_epoch[p])
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
                enqueue(st, call->ents[i].part);
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

static void pump_all(pk_repl *rp)
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
static void sweep(pk_repl *rp)
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
            rp_stream *st = stream_of(rp, pt->replicas[i]);
            /* A release is sent again: a stepped partition's expires,
             * and one waits for read leases to end. */
            if (st && st->state[p] == PS_STREAM &&
                (st->sent[p] < last || pk_repl_handing_off(s, p)))
                enqueue(st, p);
        }
    }
    pk_txn_abort(t);
}

/* ---- gates -------------------------------------------------------------- */

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

static void release(pk_repl *rp)
{
    uint64_t now = now_ms();
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
        (pt = part_of(s, p)) == NULL ||
        (pt->nreplicas < 2 && !leased(rp, p, now_ms())))
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
        rp_stream *st = stream_of(rp, pt->replicas[i]);
        if (st && st->state[p] == PS_STREAM)
            enqueue(st, p);
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
    st = gate_state(rp, c, now_ms());
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
    c->ack_ms = now_ms();
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

void pk_repl_committed(pk_server *s)
{
    pk_repl *rp = s->repl;

    if (rp == NULL || rp->np == 0)
        return;
    /* An imported snapshot must be on disk before the file names the
     * epoch it belongs to (with --fsync always the commit did it). */
    if (rp->snapped && s->cfg.fsync != PK_FSYNC_ALWAYS)
        pk_store_sync(s->store);
    rp->snapped = 0;
    if (rp->state_dirty)
        state_save(rp);
    pump_all(rp);
    if (rp->commit_moved) { /* followers' reads waiting for it */
        rp->commit_moved = 0;
        release(rp);
    }
}

void pk_repl_commit_failed(pk_server *s)
{
    pk_repl *rp = s->repl;

    /* What this iteration changed in memory is not on disk: back to the
     * file. */
    if (rp && rp->np) {
        state_load(rp);
        rp->state_dirty = 0;
        rp->snapped = 0;
    }
}

/* ---- WAIT ----------------------------------------------------------- */

/* Replicas (followers) that hold every write this connection made. */
static int64_t wait_count(pk_repl *rp, pk_conn *c)
{
    int64_t n = -1;

    for (uint32_t i = 0; i < c->nwrites; i++) {
        const pk_partition *pt = part_of(rp->srv, c->writes[i].part);
        int64_t k = 0;
        if (pt && pt->nreplicas && pt->replicas[0] == rp->srv->cluster.self)
            k = acked(rp, pt, c->writes[i].part, c->writes[i].seq);
        if (n < 0 || k < n)
            n = k;
    }
    if (n >= 0)
        return n;
    /* No writes yet: the followers we stream to. */
    n = 0;
    for (rp_stream *st = rp->streams; st; st = st->next)
        n += st->active && st->lease_until > now_ms();
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
    c->wait_deadline = ms ? now_ms() + (uint64_t)ms : 0;
    c->in_wait = 1;
    c->waiting_fwd = 1; /* runs nothing more until answered */
    c->iter_cmds--;     /* its reply comes later */
    c->wait_next = rp->waits;
    rp->waits = c;
}

/* ---- follower side ------------------------------------------------------ */

/* Room for node id `node` in promise and fence_map.  0 or ENOMEM. */
static int node_room(pk_repl *rp, uint32_t node)
{
    uint32_t n = node + 16;
    uint64_t *a, *b;

    if (node < rp->npromise)
        return PK_OK;
    a = realloc(rp->promise, n * sizeof(*a));
    if (a == NULL)
        return PK_ENOMEM;
    rp->promise = a;
    b = realloc(rp->fence_map, n * sizeof(*b));
    if (b == NULL)
        return PK_ENOMEM;
    rp->fence_map = b;
    memset(a + rp->npromise, 0, (n - rp->npromise) * sizeof(*a));
    memset(b + rp->npromise, 0, (n - rp->npromise) * sizeof(*b));
    rp->npromise = n;
    return PK_OK;
}

/* Promises leader (whose map has epoch mapep) not to take a fence of its
 * partitions for FOLLOW_LEASE_MS, unless a fence against it was taken for
 * a map newer than its: a map that new shows the promotion, or -- if the
 * controller's CAS failed -- no promotion happened and the leader's data
 * is still the latest.  A partition whose promotion was left unfinished
 * is released by its leader once a follower answers FENCED (step_down).
 * Returns 1 if promised. */
static int promise(pk_repl *rp, uint32_t leader, uint64_t mapep)
{
    if (node_room(rp, leader) != PK_OK || mapep < rp->fence_map[leader])
        return 0;
    rp->promise[leader] = now_ms();
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
        if (node_room(rp, old) == PK_OK && mapep > rp->fence_map[old]) {
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
            rp->released_ms[p] = now_ms() + HANDOFF_MS;
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
        step_down(rp, p);
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
    uint64_t leader, mapep, now = now_ms();
    int promised;

    if (x->argc < 4 || x->argc % 2 == 1 || !u64_arg(&x->argv[2], &leader) ||
        !u64_arg(&x->argv[3], &mapep) || leader >= PK_NODES_MAX ||
        node_room(rp, (uint32_t)leader) != PK_OK) {
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
    if (rp->state_dirty && state_save(rp) != 0) {
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
    uint64_t until = now_ms() + HANDOFF_MS;
    int n = 0;

    for (int i = 2; i < x->argc; i++) {
        uint64_t p;
        const pk_partition *pt;
        int streaming = 0;
        if (!u64_arg(&x->argv[i], &p) || p >= rp->np ||
            (pt = part_of(s, (uint32_t)p)) == NULL || pt->nreplicas < 2 ||
            pt->replicas[0] != s->cluster.self)
            continue;
        /* Only while every follower streams at this epoch: the promotion
         * needs the answers of half the replicas that follow it, and a
         * partition handed off in vain is unavailable meanwhile. */
        for (int k = 1; k < pt->nreplicas; k++) {
            rp_stream *st = stream_of(rp, pt->replicas[k]);
            streaming += st && st->state[p] == PS_STREAM;
        }
        if (streaming < pt->nreplicas - 1 &&
            !pk_repl_handing_off(s, (uint32_t)p))
            continue;
        if (!pk_repl_handing_off(s, (uint32_t)p))
            rp->handoff[p] = until;
        for (int k = 1; k < pt->nreplicas; k++) {
            rp_stream *st = stream_of(rp, pt->replicas[k]);
            if (st && st->state[p] == PS_STREAM)
                enqueue(st, (uint32_t)p);
        }
        n++;
    }
    pk_reply_int(x->out, n);
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
            (rp->handoff[part] && rp->handoff[part] > now_ms()));
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
    else
        pk_reply_syntax(x);
}

int pk_repl_follows(const pk_server *s, uint32_t part)
{
    const pk_partition *pt = part_of(s, part);

    return pt && is_follower(pt, s->cluster.self);
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
    const pk_partition *pt = part_of(s, part);
    rp_stream *st;

    if (rp == NULL || pt == NULL || part >= rp->np || pt->nreplicas == 0 ||
        pt->replicas[0] != s->cluster.self || rp->lead_epoch[part] != epoch ||
        epoch == 0 || !is_follower(pt, node))
        return 0;
    st = stream_of(rp, node);
    return st && st->state[part] == PS_STREAM;
}

/* ---- map changes, tick, lifetime -------------------------------------- */

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
    if (!rp->commit_want || !rp->commit_seen || !rp->commit_ep || !rp->cdue ||
        !rp->cdue_set || !rp->handoff || !rp->released || !rp->follow_epoch ||
        !rp->fence_epoch || !rp->released_ms || !rp->fenced_from ||
        !rp->lead_epoch || !rp->prev_epoch || !rp->promo_pos || !rp->stepped) {
        rp->np = 0;
        return PK_ENOMEM;
    }
    state_load(rp);
    return PK_OK;
}

void pk_repl_map_changed(pk_server *s)
{
    pk_repl *rp = s->repl;
    const pk_pmap *m = s->cluster.map;
    uint32_t self = s->cluster.self;
    pk_txn *t = NULL;
    int settle = 0;

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
            if (node_room(rp, old) == PK_OK && m->epoch > rp->fence_map[old]) {
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
            rp->stepped[p] = 0;
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
            rp_stream *st = stream_of(rp, f);
            if (st == NULL && stream_new(rp, f, &st) != PK_OK)
                continue;
            st->active = 1;
            if (f < m->nnodes)
                snprintf(st->addr, sizeof(st->addr), "%s", m->nodes[f].addr);
            if (st->epoch[p] != le) {
                st->epoch[p] = le;
                st->state[p] = PS_NEW;
                st->match[p] = 0;
                enqueue(st, p);
            }
        }
    }
    /* A partition we stopped following to a stream starts over if it
     * comes back. */
    for (rp_stream *st = rp->streams; st; st = st->next)
        for (uint32_t p = 0; p < rp->np && p < m->npartitions; p++)
            if (st->epoch[p] && (m->parts[p].nreplicas == 0 ||
                                 m->parts[p].replicas[0] != self ||
                                 !is_follower(&m->parts[p], st->node)))
                st->epoch[p] = 0;
    if (t)
        pk_txn_abort(t);
    if (settle) /* what we followed is ready to serve and export */
        pk_srv_settle(s);
    if (rp->state_dirty)
        state_save(rp);
    pump_all(rp);
    rp->release_due = 1; /* from the tick: we may be inside a command */
}

static void on_tick(uv_timer_t *h)
{
    pk_repl *rp = h->data;
    uint64_t now = now_ms();

    if (rp->np == 0)
        return;
    if (now - rp->sweep_ms >= SWEEP_MS) {
        rp->sweep_ms = now;
        sweep(rp);
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
    pump_all(rp);
    release(rp);
}

int pk_repl_init(pk_server *s)
{
    pk_repl *rp = calloc(1, sizeof(*rp));

    if (rp == NULL)
        return PK_ENOMEM;
    rp->srv = s;
    rp->start_ms = now_ms();
    leases_load(rp);
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
    while (rp->streams) {
        rp_stream *st = rp->streams;
        rp->streams = st->next;
        stream_free(st);
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
    free(rp->promise);
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
    uint64_t now = now_ms();

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
    k = snprintf(line, sizeof(line), "partkv_acks:%s\r\n\r\n",
                 s->cfg.acks == PK_ACKS_LEADER ? "leader"
                 : s->cfg.acks == PK_ACKS_ALL  ? "all"
                                               : "quorum");
    pk_obuf_append(b, line, (size_t)k);
}

/* pk_ctrl: the failover controller (see pk_ctrl.h). */
#include "server/pk_ctrl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_pmap_move.h"
#include "proto/pk_rreply.h"
#include "server/pk_agent.h"
#include "server/pk_sclient.h"
#include "server/pk_srv.h"

#define KEEPALIVE_MS 500
#define CALL_MS 1000
/* A poll or a hint a stopped node would hold the controller up with: the
 * failover of that node waits for the controller's next tick. */
#define SHORT_CALL_MS 250
#define CTRL_KEY PK_CLUSTER_PREFIX "controller"
#define NODES_PREFIX PK_CLUSTER_PREFIX "nodes/"

typedef struct peer {
    char addr[PK_ADDR_MAX + 1];
    pk_sclient *cli;
} peer;

typedef struct down {
    char name[PK_NAME_MAX + 1];
    int64_t since;
} down;

struct pk_ctrl {
    pk_server *srv;
    pthread_t thread;
    atomic_int stop;
    char host[256];
    int port;
    char secret[256];
    pk_sclient *co; /* the coordinator, NULL while disconnected */
    uint64_t lease; /* the controller lease while we act */
    int64_t last_keepalive;
    int fresh; /* just took the lease: bump the map epoch once */
    int stepped_tick, balance_tick;
    down *downs; /* nodes seen DOWN, and since when (our clock) */
    uint32_t ndowns;
    peer *peers;
    uint32_t npeers;
    /* Partitions whose followers we fenced at leader epoch + 1 but did
     * not promote yet (not enough answers, a lost CAS): retried until
     * their epoch moves on, live leader or not -- it cannot serve them. */
    uint64_t *pend; /* 2 * (leader epoch + 1 fenced at) + 1 if for a
                     * handoff, or 0 */
    uint32_t npend;
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Connects to host:port and presents the secret, each within timeout_ms;
 * NULL on failure. */
static pk_sclient *dial(pk_ctrl *c, const char *addr, int timeout_ms)
{
    const char *colon = strrchr(addr, ':');
    const char *auth[] = {"PK.AUTH", c->secret};
    char host[256];
    pk_sclient *cli = NULL;
    pk_rr *r = NULL;
    int ok;

    if (colon == NULL)
        return NULL;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    if (pk_sclient_connect_from(c->srv->cfg.bind, host, atoi(colon + 1),
                                timeout_ms, &cli) != PK_OK)
        return NULL;
    ok = pk_sclient_call(cli, 2, auth, NULL, &r) == PK_OK &&
         r->type == PK_RR_STATUS;
    pk_rr_free(r);
    if (!ok) {
        pk_sclient_free(cli);
        return NULL;
    }
    return cli;
}

/* One call on *cli, given timeout_ms; a transport failure closes it. */
static int call_for(pk_sclient **cli, pk_rr **r, int argc,
                    const char *const *argv, const size_t *lens, int timeout_ms)
{
    int rc;

    if (*cli == NULL)
        return PK_EIO;
    pk_sclient_set_timeout(*cli, timeout_ms);
    rc = pk_sclient_call(*cli, argc, argv, lens, r);
    if (rc != PK_OK) {
        pk_sclient_free(*cli);
        *cli = NULL;
    }
    return rc;
}

static int call(pk_sclient **cli, pk_rr **r, int argc, const char *const *argv,
                const size_t *lens)
{
    return call_for(cli, r, argc, argv, lens, CALL_MS);
}

static pk_sclient **peer_of(pk_ctrl *c, const char *addr)
{
    peer *p = NULL;

    for (uint32_t i = 0; i < c->npeers; i++)
        if (strcmp(c->peers[i].addr, addr) == 0)
            p = &c->peers[i];
    if (p == NULL) {
        peer *n = realloc(c->peers, (c->npeers + 1) * sizeof(*n));
        if (n == NULL)
            return NULL;
        c->peers = n;
        p = &c->peers[c->npeers++];
        snprintf(p->addr, sizeof(p->addr), "%s", addr);
        p->cli = NULL;
    }
    if (p->cli == NULL)
        p->cli = dial(c, addr, SHORT_CALL_MS);
    return p->cli ? &p->cli : NULL;
}

/* ---- the controller lease ------------------------------------------------ */

/* 1 while we hold the lease: acquires it when nobody does. */
static int hold_lease(pk_ctrl *c)
{
    pk_cluster *cl = &c->srv->cluster;
    char ttl[24], lease[24];
    pk_rr *r = NULL;
    int64_t now = mono_ms();

    if (c->lease) {
        const char *ka[] = {"PK.COORD", "KEEPALIVE", lease};
        if (now - c->last_keepalive < KEEPALIVE_MS)
            return 1;
        snprintf(lease, sizeof(lease), "%llu", (unsigned long long)c->lease);
        if (call(&c->co, &r, 3, ka, NULL) != PK_OK)
            return c->lease = 0, 0;
        if (r->type == PK_RR_ERROR)
            c->lease = 0;
        else
            c->last_keepalive = now;
        pk_rr_free(r);
        return c->lease != 0;
    }
    /* Somebody acts: wait for its key to go. */
    const char *get[] = {"PK.COORD", "GET", CTRL_KEY};
    if (call(&c->co, &r, 3, get, NULL) != PK_OK)
        return 0;
    int held =
        r->type == PK_RR_ARRAY && r->n == 2 && r->elems[1].type == PK_RR_ARRAY;
    pk_rr_free(r);
    if (held)
        return 0;
    snprintf(ttl, sizeof(ttl), "%d", PK_CTRL_LEASE_MS);
    const char *grant[] = {"PK.COORD", "GRANT", ttl};
    if (call(&c->co, &r, 3, grant, NULL) != PK_OK)
        return 0;
    int64_t id =
        r->type == PK_RR_ARRAY && r->n == 2 && r->elems[1].type == PK_RR_INT
            ? r->elems[1].integer
            : 0;
    pk_rr_free(r);
    if (id <= 0)
        return 0;
    snprintf(lease, sizeof(lease), "%lld", (long long)id);
    const char *cas[] = {"PK.COORD", "CAS", CTRL_KEY, "0", cl->name, lease};
    if (call(&c->co, &r, 6, cas, NULL) != PK_OK)
        return 0;
    if (r->type == PK_RR_ARRAY) {
        c->lease = (uint64_t)id;
        c->last_keepalive = now;
        /* A controller that died between a fence and its map CAS left
         * the old leader without promises until a newer map exists. */
        c->fresh = 1;
        fprintf(stderr, "partkv: %s is the controller\n", cl->addr);
    } else {
        const char *rv[] = {"PK.COORD", "REVOKE", lease};
        pk_rr *r2 = NULL;
        if (call(&c->co, &r2, 3, rv, NULL) == PK_OK)
            pk_rr_free(r2);
    }
    pk_rr_free(r);
    return c->lease != 0;
}

/* ---- reading the coordinator --------------------------------------------- */

/* The registered node names, as one string of "name\n" lines. */
static int live_nodes(pk_ctrl *c, char **names)
{
    const char *argv[] = {"PK.COORD", "RANGE", NODES_PREFIX};
    pk_rr *r = NULL;
    size_t cap = 1, len = 0, plen = strlen(NODES_PREFIX);
    char *s;
    int rc = call(&c->co, &r, 3, argv, NULL);

    if (rc != PK_OK)
        return rc;
    if (r->type != PK_RR_ARRAY || r->n != 2 ||
        r->elems[1].type != PK_RR_ARRAY) {
        pk_rr_free(r);
        return PK_EPROTO;
    }
    for (size_t i = 0; i < r->elems[1].n; i++)
        cap += r->elems[1].elems[i].elems[0].len + 1;
    if ((s = malloc(cap)) == NULL) {
        pk_rr_free(r);
        return PK_ENOMEM;
    }
    for (size_t i = 0; i < r->elems[1].n; i++) {
        const pk_rr *k = &r->elems[1].elems[i].elems[0];
        if (k->len > plen) {
            memcpy(s + len, k->str + plen, k->len - plen);
            len += k->len - plen;
            s[len++] = '\n';
        }
    }
    s[len] = '\0';
    pk_rr_free(r);
    *names = s;
    return PK_OK;
}

static int is_live(const char *names, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = names; (p = strstr(p, name)) != NULL; p += n)
        if ((p == names || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

static int get_map(pk_ctrl *c, pk_pmap **m, uint64_t *rev)
{
    const char *argv[] = {"PK.COORD", "GET", PK_CLUSTER_PREFIX "map"};
    pk_rr *r = NULL;
    int rc = call(&c->co, &r, 3, argv, NULL);

    if (rc != PK_OK)
        return rc;
    rc = PK_ENOTFOUND;
    if (r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        const pk_rr *kv = &r->elems[1];
        *rev = (uint64_t)kv->elems[3].integer;
        rc = pk_pmap_decode((const uint8_t *)kv->elems[1].str, kv->elems[1].len,
                            m);
    }
    pk_rr_free(r);
    return rc;
}

static int cas_map(pk_ctrl *c, const pk_pmap *m, uint64_t rev)
{
    char srev[24];
    uint8_t *buf = NULL;
    size_t len = 0;
    pk_rr *r = NULL;
    int rc = pk_pmap_encode(m, &buf, &len);

    if (rc != PK_OK)
        return rc;
    snprintf(srev, sizeof(srev), "%llu", (unsigned long long)rev);
    const char *argv[] = {
        "PK.COORD",        "CAS", PK_CLUSTER_PREFIX "map", srev,
        (const char *)buf, "0"};
    size_t lens[] = {8, 3, strlen(argv[2]), strlen(srev), len, 1};
    rc = call(&c->co, &r, 6, argv, lens);
    free(buf);
    if (rc != PK_OK)
        return rc;
    rc = r->type == PK_RR_ARRAY ? PK_OK : PK_ESTALE;
    pk_rr_free(r);
    return rc;
}

/* ---- decisions ------------------------------------------------------------
 */

static down *down_of(pk_ctrl *c, const char *name, int add)
{
    for (uint32_t i = 0; i < c->ndowns; i++)
        if (strcmp(c->downs[i].name, name) == 0)
            return &c->downs[i];
    if (!add)
        return NULL;
    down *n = realloc(c->downs, (c->ndowns + 1) * sizeof(*n));
    if (n == NULL)
        return NULL;
    c->downs = n;
    snprintf(n[c->ndowns].name, sizeof(n->name), "%s", name);
    n[c->ndowns].since = mono_ms();
    return &c->downs[c->ndowns++];
}

/* Marks nodes DOWN or UP by their registrations.  Returns changes. */
static int node_states(pk_ctrl *c, pk_pmap *m, const char *names)
{
    int changed = 0;

    for (uint32_t i = 0; i < m->nnodes; i++) {
        pk_node *n = &m->nodes[i];
        int live = is_live(names, n->name);
        if (n->state == PK_NODE_REMOVED)
            continue;
        if (!live && n->state != PK_NODE_DOWN) {
            n->state = PK_NODE_DOWN;
            down_of(c, n->name, 1);
            changed++;
            fprintf(stderr, "partkv: controller: node %s is down\n", n->addr);
        } else if (live && n->state == PK_NODE_DOWN) {
            down *d = down_of(c, n->name, 0);
            n->state = PK_NODE_UP;
            if (d)
                *d = c->downs[--c->ndowns];
            changed++;
            fprintf(stderr, "partkv: controller: node %s is up\n", n->addr);
        } else if (!live) {
            down_of(c, n->name, 1); /* seen down before we acted */
        }
    }
    return changed;
}

typedef struct cand {
    int answers;   /* followers that accepted the fence */
    int leader;    /* the leader itself did, at the map's epoch */
    uint32_t best; /* in-sync follower with the highest position */
    uint64_t best_pos;
    uint32_t want; /* preferred on a tie (a handoff's target) */
} cand;

/* 1 if f is a replica of pt, which leader leads: a follower, or the
 * leader itself (then f == leader). */
static int fences(const pk_partition *pt, uint32_t f, uint32_t leader)
{
    if (pt->nreplicas == 0 || pt->replicas[0] != leader)
        return 0;
    for (int i = 0; i < pt->nreplicas; i++)
        if (pt->replicas[i] == f)
            return 1;
    return 0;
}

/*
 * Fences, at replica f, every partition in `todo` led by `leader` that f
 * holds; records f's answers in cands.  f == leader fences the leader
 * itself: it stops serving them for good at the epoch it leads.
 */
static void fence_at(pk_ctrl *c, const pk_pmap *m, uint32_t f, uint32_t leader,
                     const uint8_t *todo, cand *cands)
{
    uint32_t n = 0, k = 0;
    const char **argv = NULL;
    char *nums = NULL;
    pk_sclient **cli;
    pk_rr *r = NULL;

    for (uint32_t p = 0; p < m->npartitions; p++)
        n += todo[p] && fences(&m->parts[p], f, leader);
    if (n == 0 || (cli = peer_of(c, m->nodes[f].addr)) == NULL)
        return;
    argv = malloc((4 + 2 * (size_t)n) * sizeof(*argv));
    nums = malloc((2 + 2 * (size_t)n) * 24);
    if (argv == NULL || nums == NULL)
        goto out;
    argv[0] = "PK.REPL";
    argv[1] = "FENCE";
    snprintf(nums, 24, "%u", leader);
    argv[2] = nums;
    /* The map that promotes will be newer than this one: until the old
     * leader has it, the follower promises it nothing. */
    snprintf(nums + 24, 24, "%llu", (unsigned long long)(m->epoch + 1));
    argv[3] = nums + 24;
    for (uint32_t p = 0, a = 4; p < m->npartitions; p++) {
        char *s = nums + 24 * (size_t)(a - 2);
        if (!todo[p] || !fences(&m->parts[p], f, leader))
            continue;
        snprintf(s, 24, "%u", p);
        snprintf(s + 24, 24, "%llu",
                 (unsigned long long)(m->parts[p].leader_epoch + 1));
        argv[a++] = s;
        argv[a++] = s + 24;
    }
    if (call(cli, &r, 4 + 2 * (int)n, argv, NULL) != PK_OK)
        goto out;
    if (r->type != PK_RR_ARRAY || r->n != n) {
        if (r->type == PK_RR_ERROR)
            fprintf(stderr, "partkv: controller: %s: %s\n", m->nodes[f].addr,
                    r->str);
        goto out;
    }
    for (uint32_t p = 0; p < m->npartitions && k < n; p++) {
        const pk_partition *pt = &m->parts[p];
        const pk_rr *e;
        uint64_t pos;
        if (!todo[p] || !fences(pt, f, leader))
            continue;
        e = &r->elems[k++];
        if (e->type != PK_RR_ARRAY || e->n != 2)
            continue; /* BUSY: its promise to the leader runs */
        if (f == leader) {
            /* Every write acknowledged in this epoch, and before, is in
             * the leader's log: its answer alone suffices. */
            cands[p].leader = (uint64_t)e->elems[0].integer == pt->leader_epoch;
            continue;
        }
        /* Only a follower of this epoch can hold writes acknowledged in
         * it (a replacement that is still copying cannot): only its
         * answer counts toward the quorum that must intersect theirs. */
        if ((uint64_t)e->elems[0].integer != pt->leader_epoch)
            continue;
        cands[p].answers++;
        pos = (uint64_t)e->elems[1].integer;
        if (cands[p].best == PK_NODE_NONE || pos > cands[p].best_pos ||
            (pos == cands[p].best_pos && f == cands[p].want)) {
            cands[p].best = f;
            cands[p].best_pos = pos;
        }
    }
out:
    pk_rr_free(r);
    free(argv);
    free(nums);
}

/*
 * Fences the followers (those ask[] allows) of every partition in todo and
 * makes the in-sync one with the highest position leader, at leader epoch
 * + 1, once at least half of the replicas answered.  want: preferred
 * followers, or NULL.  self: where too few followers of the current epoch
 * answered (a lagging one cannot count), the leader (if ask[] allows) is
 * fenced as well, and if it answers it leads on at epoch + 1 -- a
 * promotion stuck that way is finished once the old leader is back.
 * Returns the partitions changed.
 */
static uint32_t promote(pk_ctrl *c, pk_pmap *m, const uint8_t *todo,
                        const uint8_t *ask, const uint32_t *want, int self)
{
    uint32_t np = m->npartitions, changed = 0;
    cand *cands = calloc(np, sizeof(*cands));
    uint8_t *leads = calloc(m->nnodes ? m->nnodes : 1, 1), *stuck;

    if (cands == NULL || leads == NULL)
        goto out;
    for (uint32_t p = 0; p < np; p++) {
        cands[p].best = PK_NODE_NONE;
        cands[p].want = want ? want[p] : PK_NODE_NONE;
        if (todo[p])
            leads[m->parts[p].replicas[0]] = 1;
    }
    for (uint32_t l = 0; l < m->nnodes; l++)
        for (uint32_t f = 0; leads[l] && f < m->nnodes; f++)
            if (ask[f] && f != l)
                fence_at(c, m, f, l, todo, cands);
    if (self && (stuck = calloc(np, 1)) != NULL) {
        /* The leader only where its followers could not finish it: a
         * handoff left unfinished still goes to a follower. */
        for (uint32_t p = 0; p < np; p++)
            stuck[p] =
                todo[p] && cands[p].answers < (m->parts[p].nreplicas + 1) / 2;
        for (uint32_t l = 0; l < m->nnodes; l++)
            if (leads[l] && ask[l])
                fence_at(c, m, l, l, stuck, cands);
        free(stuck);
    }
    if (c->npend < np) {
        uint64_t *n = realloc(c->pend, np * sizeof(*n));
        if (n != NULL) {
            memset(n + c->npend, 0, (np - c->npend) * sizeof(*n));
            c->pend = n;
            c->npend = np;
        }
    }
    for (uint32_t p = 0; p < np && p < c->npend; p++)
        if (todo[p] && (cands[p].answers || cands[p].leader))
            c->pend[p] = 2 * (m->parts[p].leader_epoch + 1) + (want != NULL);
    for (uint32_t p = 0; p < np; p++) {
        pk_partition *pt = &m->parts[p];
        uint32_t old, to;
        int j = 1;
        if (!todo[p])
            continue;
        if (cands[p].leader) {
            /* It has the highest position of all: it leads on. */
            if (pk_pmap_moving(m, p, &to))
                pk_pmap_move_cancel(m, p);
            pt->leader_epoch++;
            changed++;
            continue;
        }
        if (cands[p].best == PK_NODE_NONE ||
            cands[p].answers < (pt->nreplicas + 1) / 2)
            continue; /* not enough answers yet: next tick */
        if (pk_pmap_moving(m, p, &to))
            pk_pmap_move_cancel(m, p);
        old = pt->replicas[0];
        pt->replicas[0] = cands[p].best;
        for (int i = 1; i < pt->nreplicas; i++)
            if (pt->replicas[i] != cands[p].best)
                pt->replicas[j++] = pt->replicas[i];
        pt->replicas[j] = old;
        pt->leader_epoch++;
        changed++;
    }
out:
    free(cands);
    free(leads);
    return changed;
}

/* Completes promotions whose fences went out earlier: those of a handoff
 * as they began, the others with the leader asked too (promote's self).
 * Returns the partitions changed. */
static int retry(pk_ctrl *c, pk_pmap *m, const char *names)
{
    uint32_t np = m->npartitions, changed = 0;
    uint8_t *todo = calloc(np ? 2 * (size_t)np : 1, 1);
    uint8_t *ask = calloc(m->nnodes ? m->nnodes : 1, 1);
    int any[2] = {0, 0};

    if (todo == NULL || ask == NULL)
        goto out;
    for (uint32_t i = 0; i < m->nnodes; i++)
        ask[i] = m->nodes[i].state != PK_NODE_REMOVED &&
                 is_live(names, m->nodes[i].name);
    for (uint32_t p = 0; p < np && p < c->npend; p++) {
        int h = (int)(c->pend[p] & 1);
        if (c->pend[p] / 2 != m->parts[p].leader_epoch + 1)
            c->pend[p] = 0; /* promoted since, or never */
        else if (m->parts[p].nreplicas >= 2)
            todo[(size_t)h * np + p] = any[h] = 1;
    }
    if (any[0])
        changed += promote(c, m, todo, ask, NULL, 1);
    if (any[1]) { /* still a handoff, with no preferred target now */
        uint32_t *none = malloc(np * sizeof(*none));
        for (uint32_t p = 0; none && p < np; p++)
            none[p] = PK_NODE_NONE;
        if (none)
            changed += promote(c, m, todo + np, ask, none, 0);
        free(none);
    }
    if (changed > 0)
        fprintf(stderr, "partkv: controller: %u fenced partitions promoted\n",
                changed);
out:
    free(todo);
    free(ask);
    return (int)changed;
}

#define STEPPED_EVERY 10 /* ticks between asking leaders for them */

/* Partitions whose leader was fenced by a controller that died before its
 * CAS: every live leader lists them (PK.REPL STEPPED); they are promoted.
 * Returns the partitions changed. */
static int orphans(pk_ctrl *c, pk_pmap *m, const char *names)
{
    static const char *const argv[] = {"PK.REPL", "STEPPED"};
    uint32_t np = m->npartitions, changed = 0;
    uint8_t *todo = calloc(np ? np : 1, 1);
    uint8_t *ask = calloc(m->nnodes ? m->nnodes : 1, 1);
    int any = 0;

    if (todo == NULL || ask == NULL || ++c->stepped_tick < STEPPED_EVERY)
        goto out;
    c->stepped_tick = 0;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        pk_sclient **cli;
        pk_rr *r = NULL;
        ask[i] = m->nodes[i].state != PK_NODE_REMOVED &&
                 is_live(names, m->nodes[i].name);
        if (!ask[i] || (cli = peer_of(c, m->nodes[i].addr)) == NULL ||
            call_for(cli, &r, 2, argv, NULL, SHORT_CALL_MS) != PK_OK)
            continue;
        for (size_t k = 0; r->type == PK_RR_ARRAY && k < r->n; k++) {
            int64_t p = r->elems[k].integer;
            if (p >= 0 && (uint64_t)p < np && m->parts[p].nreplicas >= 2 &&
                m->parts[p].replicas[0] == i)
                todo[p] = any = 1;
        }
        pk_rr_free(r);
    }
    if (any && (changed = promote(c, m, todo, ask, NULL, 1)) > 0)
        fprintf(stderr,
                "partkv: controller: %u partitions fenced by an "
                "earlier controller promoted\n",
                changed);
out:
    free(todo);
    free(ask);
    return (int)changed;
}

/* Promotes a follower of every partition whose leader is not registered.
 * Returns the partitions changed. */
static int failover(pk_ctrl *c, pk_pmap *m, const char *names)
{
    uint32_t np = m->npartitions, changed = 0;
    uint8_t *todo = calloc(np, 1);
    uint8_t *ask = calloc(m->nnodes ? m->nnodes : 1, 1);
    int any = 0;

    if (todo == NULL || ask == NULL)
        goto out;
    for (uint32_t i = 0; i < m->nnodes; i++)
        ask[i] = m->nodes[i].state != PK_NODE_REMOVED &&
                 is_live(names, m->nodes[i].name);
    for (uint32_t p = 0; p < np; p++) {
        const pk_partition *pt = &m->parts[p];
        if (pt->nreplicas >= 2 && !ask[pt->replicas[0]])
            todo[p] = any = 1;
    }
    if (any && (changed = promote(c, m, todo, ask, NULL, 0)) > 0)
        fprintf(stderr, "partkv: controller: %u partitions have a new leader\n",
                changed);
out:
    free(todo);
    free(ask);
    return (int)changed;
}

/* PK.REPL HANDOFF to leader l for its partitions in todo. */
static void handoff(pk_ctrl *c, const pk_pmap *m, uint32_t l,
                    const uint8_t *todo)
{
    uint32_t n = 0;
    const char **argv;
    char *nums;
    pk_sclient **cli;
    pk_rr *r = NULL;

    for (uint32_t p = 0; p < m->npartitions; p++)
        n += todo[p] && m->parts[p].replicas[0] == l;
    if (n == 0 || (cli = peer_of(c, m->nodes[l].addr)) == NULL)
        return;
    argv = malloc((2 + (size_t)n) * sizeof(*argv));
    nums = malloc((size_t)n * 12);
    if (argv && nums) {
        argv[0] = "PK.REPL";
        argv[1] = "HANDOFF";
        for (uint32_t p = 0, a = 2; p < m->npartitions; p++)
            if (todo[p] && m->parts[p].replicas[0] == l) {
                snprintf(nums + 12 * (a - 2), 12, "%u", p);
                argv[a] = nums + 12 * (a - 2);
                a++;
            }
        if (call_for(cli, &r, 2 + (int)n, argv, NULL, SHORT_CALL_MS) == PK_OK)
            pk_rr_free(r);
    }
    free(argv);
    free(nums);
}

#define BALANCE_MAX 2048 /* leader handoffs per round */
/* Ticks between balancing rounds: each costs a map CAS, which the embedded
 * coordinator persists (fsync) on its host's loop. */
#define BALANCE_EVERY 10

/*
 * With every node up and nothing moving, hands leaderships from nodes that
 * lead more than their share to followers that lead less (a node that came
 * back after a failover leads nothing).  The leader stops serving those
 * partitions and releases them to its followers (PK.REPL HANDOFF); the
 * promotion is then the failover's.  Returns the partitions changed.
 */
static int balance(pk_ctrl *c, pk_pmap *m, const char *names)
{
    uint32_t np = m->npartitions, nn = m->nnodes ? m->nnodes : 1;
    uint32_t *cnt = calloc(nn, sizeof(*cnt)), *want = NULL;
    uint8_t *todo = NULL, *ask = calloc(nn, 1);
    uint32_t total = 0, up = 0, n = 0, changed = 0, to;

    if (cnt == NULL || ask == NULL || ++c->balance_tick < BALANCE_EVERY)
        goto out;
    c->balance_tick = 0;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        if (m->nodes[i].state == PK_NODE_REMOVED)
            continue;
        if (m->nodes[i].state != PK_NODE_UP ||
            !is_live(names, m->nodes[i].name))
            goto out;
        ask[i] = 1;
        up++;
    }
    for (uint32_t p = 0; p < np; p++) {
        if (pk_pmap_moving(m, p, &to))
            goto out;
        if (m->parts[p].nreplicas >= 2) {
            cnt[m->parts[p].replicas[0]]++;
            total++;
        }
    }
    if (up == 0 || total == 0)
        goto out;
    todo = calloc(np, 1);
    want = calloc(np, sizeof(*want));
    if (todo == NULL || want == NULL)
        goto out;
    for (uint32_t p = 0; p < np && n < BALANCE_MAX; p++) {
        const pk_partition *pt = &m->parts[p];
        uint32_t l = pt->replicas[0], x = PK_NODE_NONE;
        if (pt->nreplicas < 2 || cnt[l] * up <= total)
            continue; /* not above its share */
        for (int i = 1; i < pt->nreplicas; i++) {
            uint32_t f = pt->replicas[i];
            if (ask[f] && cnt[f] + 2 <= cnt[l] &&
                (uint64_t)cnt[f] * up < total &&
                (x == PK_NODE_NONE || cnt[f] < cnt[x]))
                x = f;
        }
        if (x == PK_NODE_NONE)
            continue;
        todo[p] = 1;
        want[p] = x;
        cnt[l]--;
        cnt[x]++;
        n++;
    }
    if (n == 0)
        goto out;
    for (uint32_t l = 0; l < m->nnodes; l++)
        handoff(c, m, l, todo);
    changed = promote(c, m, todo, ask, want, 0);
    if (changed)
        fprintf(stderr,
                "partkv: controller: %u leaderships handed over to "
                "balance the nodes\n",
                changed);
out:
    free(cnt);
    free(want);
    free(todo);
    free(ask);
    return (int)changed;
}

/* Gives the follower places of nodes DOWN past --replace-after to live
 * nodes that hold the partition not yet.  Returns the places moved. */
static int replace(pk_ctrl *c, pk_pmap *m)
{
    uint64_t after = c->srv->cfg.replace_after_ms;
    uint32_t *load, moved = 0;
    int64_t now = mono_ms();

    if (after == 0 || c->ndowns == 0)
        return 0;
    load = calloc(m->nnodes ? m->nnodes : 1, sizeof(*load));
    if (load == NULL)
        return 0;
    for (uint32_t p = 0; p < m->npartitions; p++)
        for (int i = 0; i < m->parts[p].nreplicas; i++)
            load[m->parts[p].replicas[i]]++;
    for (uint32_t d = 0; d < m->nnodes; d++) {
        down *dn;
        if (m->nodes[d].state != PK_NODE_DOWN ||
            (dn = down_of(c, m->nodes[d].name, 0)) == NULL ||
            now - dn->since < (int64_t)after)
            continue;
        for (uint32_t p = 0; p < m->npartitions; p++) {
            pk_partition *pt = &m->parts[p];
            uint32_t best = PK_NODE_NONE;
            for (int i = 1; i < pt->nreplicas; i++) {
                if (pt->replicas[i] != d)
                    continue;
                for (uint32_t n = 0; n < m->nnodes; n++) {
                    int holds = 0;
                    if (m->nodes[n].state != PK_NODE_UP)
                        continue;
                    for (int k = 0; k < pt->nreplicas; k++)
                        holds |= pt->replicas[k] == n;
                    for (int k = 0; k < pt->nlearners; k++)
                        holds |= pt->learners[k] == n;
                    if (!holds &&
                        (best == PK_NODE_NONE || load[n] < load[best]))
                        best = n;
                }
                if (best != PK_NODE_NONE) {
                    pt->replicas[i] = best;
                    load[best]++;
                    load[d]--;
                    moved++;
                }
                break;
            }
        }
    }
    free(load);
    if (moved)
        fprintf(stderr,
                "partkv: controller: %u replicas re-created on other "
                "nodes\n",
                moved);
    return (int)moved;
}

static void step(pk_ctrl *c)
{
    char *names = NULL;
    pk_pmap *m = NULL;
    uint64_t rev = 0;
    int changed;

    if (live_nodes(c, &names) != PK_OK)
        return;
    if (get_map(c, &m, &rev) == PK_OK) {
        changed = node_states(c, m, names);
        changed += retry(c, m, names);
        changed += orphans(c, m, names);
        changed += failover(c, m, names);
        changed += replace(c, m);
        if (changed == 0)
            changed += balance(c, m, names);
        if (changed || c->fresh) {
            m->epoch++;
            if (cas_map(c, m, rev) == PK_OK)
                c->fresh = 0;
            else
                fprintf(stderr, "partkv: controller: map changed "
                                "meanwhile; again\n");
        }
    }
    pk_pmap_free(m);
    free(names);
}

static void *ctrl_main(void *arg)
{
    pk_ctrl *c = arg;

    while (!atomic_load(&c->stop)) {
        int64_t t0 = mono_ms(), left;
        if (c->co == NULL) {
            char addr[300];
            snprintf(addr, sizeof(addr), "%s:%d", c->host, c->port);
            c->lease = 0;
            c->co = dial(c, addr, CALL_MS);
        }
        if (c->co && hold_lease(c))
            step(c);
        left = PK_CTRL_TICK_MS - (mono_ms() - t0);
        sleep_ms(left > 10 ? (int)left : 10);
    }
    return NULL;
}

int pk_ctrl_start(pk_server *s, const char *host, int port, const char *secret,
                  pk_ctrl **out)
{
    pk_ctrl *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return PK_ENOMEM;
    c->srv = s;
    snprintf(c->host, sizeof(c->host), "%s", host);
    snprintf(c->secret, sizeof(c->secret), "%s", secret);
    c->port = port;
    atomic_init(&c->stop, 0);
    if (pthread_create(&c->thread, NULL, ctrl_main, c) != 0) {
        free(c);
        return PK_EIO;
    }
    *out = c;
    return PK_OK;
}

void pk_ctrl_stop(pk_ctrl *c)
{
    if (c == NULL)
        return;
    atomic_store(&c->stop, 1);
    pthread_join(c->thread, NULL);
    pk_sclient_free(c->co);
    for (uint32_t i = 0; i < c->npeers; i++)
        pk_sclient_free(c->peers[i].cli);
    free(c->peers);
    free(c->downs);
    free(c->pend);
    free(c);
}

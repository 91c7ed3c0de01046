/* pk_ctrl: the failover controller (see pk_ctrl.h). */
#include "server/pk_ctrl.h"
#include "server/pk_ctrl_int.h"

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
#define CTRL_KEY PK_CLUSTER_PREFIX "controller"
#define NODES_PREFIX PK_CLUSTER_PREFIX "nodes/"

int64_t pk__ctrl_mono_ms(void)
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
int pk__ctrl_call_for(pk_sclient **cli, pk_rr **r, int argc,
                      const char *const *argv, const size_t *lens,
                      int timeout_ms)
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

int pk__ctrl_call(pk_sclient **cli, pk_rr **r, int argc,
                  const char *const *argv, const size_t *lens)
{
    return pk__ctrl_call_for(cli, r, argc, argv, lens, CALL_MS);
}

pk_sclient **pk__ctrl_peer_of(pk_ctrl *c, const char *addr)
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
    int64_t now = pk__ctrl_mono_ms();

    if (c->lease) {
        const char *ka[] = {"PK.COORD", "KEEPALIVE", lease};
        if (now - c->last_keepalive < KEEPALIVE_MS)
            return 1;
        snprintf(lease, sizeof(lease), "%llu", (unsigned long long)c->lease);
        if (pk__ctrl_call(&c->co, &r, 3, ka, NULL) != PK_OK)
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
    if (pk__ctrl_call(&c->co, &r, 3, get, NULL) != PK_OK)
        return 0;
    int held =
        r->type == PK_RR_ARRAY && r->n == 2 && r->elems[1].type == PK_RR_ARRAY;
    pk_rr_free(r);
    if (held)
        return 0;
    snprintf(ttl, sizeof(ttl), "%d", PK_CTRL_LEASE_MS);
    const char *grant[] = {"PK.COORD", "GRANT", ttl};
    if (pk__ctrl_call(&c->co, &r, 3, grant, NULL) != PK_OK)
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
    if (pk__ctrl_call(&c->co, &r, 6, cas, NULL) != PK_OK)
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
        if (pk__ctrl_call(&c->co, &r2, 3, rv, NULL) == PK_OK)
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
    int rc = pk__ctrl_call(&c->co, &r, 3, argv, NULL);

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

int pk__ctrl_is_live(const char *names, const char *name)
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
    int rc = pk__ctrl_call(&c->co, &r, 3, argv, NULL);

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
    rc = pk__ctrl_call(&c->co, &r, 6, argv, lens);
    free(buf);
    if (rc != PK_OK)
        return rc;
    rc = r->type == PK_RR_ARRAY ? PK_OK : PK_ESTALE;
    pk_rr_free(r);
    return rc;
}

/* ---- decisions ------------------------------------------------------------
 */

down *pk__ctrl_down_of(pk_ctrl *c, const char *name, int add)
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
    n[c->ndowns].since = pk__ctrl_mono_ms();
    return &c->downs[c->ndowns++];
}

/* Marks nodes DOWN or UP by their registrations.  Returns changes. */
static int node_states(pk_ctrl *c, pk_pmap *m, const char *names)
{
    int changed = 0;

    for (uint32_t i = 0; i < m->nnodes; i++) {
        pk_node *n = &m->nodes[i];
        int live = pk__ctrl_is_live(names, n->name);
        if (n->state == PK_NODE_REMOVED)
            continue;
        if (!live && n->state != PK_NODE_DOWN) {
            n->state = PK_NODE_DOWN;
            pk__ctrl_down_of(c, n->name, 1);
            changed++;
            fprintf(stderr, "partkv: controller: node %s is down\n", n->addr);
        } else if (live && n->state == PK_NODE_DOWN) {
            down *d = pk__ctrl_down_of(c, n->name, 0);
            n->state = PK_NODE_UP;
            if (d)
                *d = c->downs[--c->ndowns];
            changed++;
            fprintf(stderr, "partkv: controller: node %s is up\n", n->addr);
        } else if (!live) {
            pk__ctrl_down_of(c, n->name, 1); /* seen down before we acted */
        }
    }
    return changed;
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
        changed += pk__ctrl_retry(c, m, names);
        changed += pk__ctrl_orphans(c, m, names);
        changed += pk__ctrl_failover(c, m, names);
        changed += pk__ctrl_replace(c, m);
        if (changed == 0)
            changed += pk__ctrl_balance(c, m, names);
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
        int64_t t0 = pk__ctrl_mono_ms(), left;
        if (c->co == NULL) {
            char addr[300];
            snprintf(addr, sizeof(addr), "%s:%d", c->host, c->port);
            c->lease = 0;
            c->co = dial(c, addr, CALL_MS);
        }
        if (c->co && hold_lease(c))
            step(c);
        left = PK_CTRL_TICK_MS - (pk__ctrl_mono_ms() - t0);
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
    free(c->load);
    free(c);
}

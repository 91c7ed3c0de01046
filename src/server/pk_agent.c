/* pk_agent: registration, lease renewal and map polling (see pk_agent.h). */
#include "server/pk_agent.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"
#include "server/pk_srv.h"

#define KEEPALIVE_MS 1000
#define CALL_TIMEOUT_MS 2000

struct pk_agent {
    pk_server *srv;
    pthread_t thread;
    atomic_int stop;
    char host[256];
    int port;
    char secret[256];
    pk_sclient *cli;  /* NULL while disconnected */
    uint64_t lease;   /* 0 while unregistered */
    uint64_t map_rev; /* mod_revision of the last map handed over */
    int64_t last_keepalive;
    int proxy;     /* follow a node's PK.MAP instead of the coordinator */
    pk_pmap *last; /* proxy: the map last posted */
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

/* One call; a transport failure drops the connection. */
static int call(pk_agent *a, pk_rr **reply, int argc, const char *const *argv,
                const size_t *lens)
{
    int rc = pk_sclient_call(a->cli, argc, argv, lens, reply);

    if (rc != PK_OK) {
        pk_sclient_free(a->cli);
        a->cli = NULL;
        a->lease = 0;
    }
    return rc;
}

/* The first integer of an array reply ([rev, ...]) at index i, or -1. */
static int64_t elem_int(const pk_rr *r, size_t i)
{
    if (r->type != PK_RR_ARRAY || r->n <= i || r->elems[i].type != PK_RR_INT)
        return -1;
    return r->elems[i].integer;
}

static int connect_and_register(pk_agent *a)
{
    pk_cluster *cl = &a->srv->cluster;
    char key[PK_NAME_MAX + 64], ttl[24], lease[24];
    const char *auth[] = {"PK.AUTH", a->secret};
    const char *grant[] = {"PK.COORD", "GRANT", ttl};
    pk_rr *r = NULL;
    int64_t id;

    if (pk_sclient_connect(a->host, a->port, CALL_TIMEOUT_MS, &a->cli) != PK_OK)
        return -1;
    if (call(a, &r, 2, auth, NULL) != PK_OK)
        return -1;
    if (r->type != PK_RR_STATUS) {
        fprintf(stderr, "partkv: coordinator refused the secret: %s\n",
                r->str ? r->str : "?");
        pk_rr_free(r);
        pk_sclient_free(a->cli);
        a->cli = NULL;
        return -1;
    }
    pk_rr_free(r);
    snprintf(ttl, sizeof(ttl), "%d", PK_AGENT_LEASE_MS);
    if (call(a, &r, 3, grant, NULL) != PK_OK)
        return -1;
    id = elem_int(r, 1);
    pk_rr_free(r);
    if (id <= 0)
        return -1;
    snprintf(lease, sizeof(lease), "%lld", (long long)id);
    snprintf(key, sizeof(key), PK_CLUSTER_PREFIX "nodes/%s", cl->name);
    const char *put[] = {"PK.COORD", "PUT", key, cl->addr, lease};
    if (call(a, &r, 5, put, NULL) != PK_OK)
        return -1;
    pk_rr_free(r);
    a->lease = (uint64_t)id;
    a->last_keepalive = mono_ms();
    return 0;
}

static void keepalive(pk_agent *a)
{
    char lease[24];
    const char *argv[] = {"PK.COORD", "KEEPALIVE", lease};
    pk_rr *r = NULL;

    snprintf(lease, sizeof(lease), "%llu", (unsigned long long)a->lease);
    if (call(a, &r, 3, argv, NULL) != PK_OK)
        return;
    if (r->type == PK_RR_ERROR) /* expired: register again */
        a->lease = 0;
    pk_rr_free(r);
    a->last_keepalive = mono_ms();
}

/* Hands a decoded map to the loop; the loop frees any it did not take. */
static void post_map(pk_agent *a, pk_pmap *m)
{
    pk_server *s = a->srv;

    pthread_mutex_lock(&s->map_lock);
    pk_pmap_free(s->map_pending);
    s->map_pending = m;
    pthread_mutex_unlock(&s->map_lock);
    uv_async_send(&s->map_async);
}

static void poll_map(pk_agent *a)
{
    const char *argv[] = {"PK.COORD", "GET", PK_CLUSTER_PREFIX "map"};
    pk_rr *r = NULL, *kv;
    pk_pmap *m = NULL;

    if (call(a, &r, 3, argv, NULL) != PK_OK)
        return;
    if (r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        kv = &r->elems[1];
        uint64_t rev = (uint64_t)kv->elems[3].integer;
        if (rev != a->map_rev &&
            pk_pmap_decode((const uint8_t *)kv->elems[1].str, kv->elems[1].len,
                           &m) == PK_OK) {
            a->map_rev = rev;
            post_map(a, m);
        }
    }
    pk_rr_free(r);
}

/*
 * The seed is unreachable: follow the next live node of the last map
 * instead, so a proxy outlives the node it was started with.
 */
static void next_seed(pk_agent *a)
{
    const pk_pmap *m = a->last;
    uint32_t start = 0;

    if (m == NULL || m->nnodes == 0)
        return;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        char cur[300];
        snprintf(cur, sizeof(cur), "%s:%d", a->host, a->port);
        if (strcmp(m->nodes[i].addr, cur) == 0)
            start = i + 1;
    }
    for (uint32_t k = 0; k < m->nnodes; k++) {
        const pk_node *n = &m->nodes[(start + k) % m->nnodes];
        const char *colon = strrchr(n->addr, ':');
        if (n->state == PK_NODE_REMOVED || colon == NULL)
            continue;
        snprintf(a->host, sizeof(a->host), "%.*s", (int)(colon - n->addr),
                 n->addr);
        a->port = atoi(colon + 1);
        return;
    }
}

/*
 * Proxy mode: the map exactly as any node holds it (PK.MAP, a read-only
 * public command), so a proxy needs no secret and follows every scheme.
 */
static void poll_public_map(pk_agent *a)
{
    const char *argv[] = {"PK.MAP"};
    pk_rr *r = NULL;
    pk_pmap *m = NULL;

    if (a->cli == NULL && pk_sclient_connect(a->host, a->port, CALL_TIMEOUT_MS,
                                             &a->cli) != PK_OK) {
        next_seed(a);
        sleep_ms(200);
        return;
    }
    if (call(a, &r, 1, argv, NULL) != PK_OK)
        return;
    if (r->type == PK_RR_BULK &&
        pk_pmap_decode((const uint8_t *)r->str, r->len, &m) == PK_OK) {
        if (a->last && pk_pmap_equal(a->last, m)) {
            pk_pmap_free(m);
        } else {
            pk_pmap *copy = NULL;
            if (pk_pmap_clone(m, &copy) == PK_OK) {
                pk_pmap_free(a->last);
                a->last = copy;
            }
            post_map(a, m);
        }
    }
    pk_rr_free(r);
}

static void *agent_main(void *arg)
{
    pk_agent *a = arg;

    while (a->proxy && !atomic_load(&a->stop)) {
        poll_public_map(a);
        sleep_ms(PK_AGENT_POLL_MS);
    }
    while (!a->proxy && !atomic_load(&a->stop)) {
        if (a->cli == NULL || a->lease == 0) {
            pk_sclient_free(a->cli);
            a->cli = NULL;
            if (connect_and_register(a) != 0) {
                sleep_ms(200);
                continue;
            }
        }
        poll_map(a);
        if (a->cli && mono_ms() - a->last_keepalive >= KEEPALIVE_MS)
            keepalive(a);
        sleep_ms(PK_AGENT_POLL_MS);
    }
    pk_sclient_free(a->cli);
    pk_pmap_free(a->last);
    return NULL;
}

int pk_agent_start(pk_server *s, const char *host, int port, const char *secret,
                   pk_agent **out)
{
    pk_agent *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return PK_ENOMEM;
    a->srv = s;
    snprintf(a->host, sizeof(a->host), "%s", host);
    snprintf(a->secret, sizeof(a->secret), "%s", secret ? secret : "");
    a->port = port;
    a->proxy = secret == NULL;
    atomic_init(&a->stop, 0);
    if (pthread_create(&a->thread, NULL, agent_main, a) != 0) {
        free(a);
        return PK_EIO;
    }
    *out = a;
    return PK_OK;
}

void pk_agent_stop(pk_agent *a)
{
    if (a == NULL)
        return;
    atomic_store(&a->stop, 1);
    pthread_join(a->thread, NULL);
    free(a);
}

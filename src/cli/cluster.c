/*
 * partkv cluster up: a whole local cluster in the foreground.
 *
 *   partkv cluster up --nodes N [--base-port P] [--dir D] [--replicas R]
 *                     [--scheme slots|hash [--partitions P] [--hash H]]
 *                     [--scheme range [--presplit N [--presplit-sample F]
 *                                      | --presplit-keys K1,K2,...]]
 *                     [--route redirect|forward] [--coordinator embedded]
 *                     [--announce-replicas yes|no]
 *                     [--secret S] [--fsync always|everysec|no]
 *                     [--acks leader|quorum|all] [--replace-after SECONDS]
 *                     [--split-qps N] [--split-size BYTES]
 *                     [--merge-delay SECONDS] [--hotkeys-sample RATE]
 *                     [--hot-key-writes N] [--hot-key-time SECONDS]
 *                     [--unsalt-after SECONDS] [--hot-key-reads N]
 *                     [--salted-incr-reply total|local] [--tls]
 *                     [--enable-debug-command yes|no] [--parallel-append
 * yes|no]
 *
 * Starts N node processes on 127.0.0.1 (ports P..P+N-1; P = 0 picks free
 * ports), the first hosting the embedded coordinator; waits until every
 * node has registered; creates the partition map with the core planner
 * (unless the data directory already holds one, after a restart); prints
 * a summary and the line "ready"; and stays until SIGINT/SIGTERM, which
 * stop every node cleanly.
 *
 * While it stays, it supervises: a node that dies is started again with
 * the argv it had (the port it got at first, its own --dir), so it rejoins
 * with its data.  The restart waits RESTART_MIN_MS, doubling up to
 * RESTART_MAX_MS while the node keeps dying within RESTART_QUICK_MS of its
 * start.  Nothing is restarted once SIGINT/SIGTERM is pending.
 *
 * --tls: a local CA and a node certificate in DIR/tls (tls_gen.h); every
 * node serves TLS on ports P..P+N-1 (its plain port is a free one) and
 * talks to the others over mutual TLS (--tls-cluster yes); clients may
 * present a certificate (--tls-auth-clients optional).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cluster_args.h"
#include "cli/spawn.h"
#include "cli/tls_gen.h"
#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_agent.h"
#include "server/pk_sclient.h"
#include "server/pk_tls.h"

#define REGISTER_TIMEOUT_MS 15000
#define NODE_START_MS 10000 /* for a node's "ready" line */
#define RESTART_MIN_MS 200
#define RESTART_MAX_MS 5000
#define RESTART_QUICK_MS 5000 /* dying sooner doubles the next delay */

/* --tls: the files (made on the first start), and our own connections to
 * the nodes over TLS with the node certificate. */
static int up_tls(pk_up_args *a, pk_tls **out)
{
    static const char *const names[] = {PK_TLS_GEN_CA, PK_TLS_GEN_CERT,
                                        PK_TLS_GEN_KEY};
    pk_tls_files f = {0};
    char err[256];

    snprintf(a->tls_dir, sizeof(a->tls_dir), "%s/tls", a->dir);
    for (int i = 0; i < 3; i++)
        snprintf(a->tls_files[i], sizeof(a->tls_files[i]), "%s/%s", a->tls_dir,
                 names[i]);
    if (pk_tls_gen(a->tls_dir) != 0) {
        fprintf(stderr, "partkv cluster up: cannot make certificates in %s\n",
                a->tls_dir);
        return -1;
    }
    f.ca = a->tls_files[0];
    f.cert = a->tls_files[1];
    f.key = a->tls_files[2];
    if (pk_tls_open(&f, out, err, sizeof(err)) != 0) {
        fprintf(stderr, "partkv cluster up: TLS: %s\n", err);
        return -1;
    }
    pk_sclient_use_tls(*out);
    return 0;
}

/* The cluster secret: --secret, else DIR/secret, else a new random one. */
static int load_secret(const pk_up_args *a, char *secret, size_t cap)
{
    char path[4096];
    unsigned char raw[16];
    int fd, ok;

    if (a->secret) {
        snprintf(secret, cap, "%s", a->secret);
        return 0;
    }
    snprintf(path, sizeof(path), "%s/secret", a->dir);
    fd = open(path, O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, secret, cap - 1);
        close(fd);
        if (n <= 0)
            return -1;
        secret[n] = '\0';
        return 0;
    }
    fd = open("/dev/urandom", O_RDONLY);
    ok = fd >= 0 && read(fd, raw, sizeof(raw)) == (ssize_t)sizeof(raw);
    if (fd >= 0)
        close(fd);
    if (!ok)
        return -1;
    for (int i = 0; i < 16; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ok = fd >= 0 && write(fd, secret, 32) == 32;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

static long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int start_nodes(const pk_up_args *a, const char *secret, pk_child *kids,
                       pk_up_node *nodes)
{
    for (unsigned long i = 0; i < a->nodes; i++) {
        pk_up_node *n = &nodes[i];
        snprintf(n->dir, sizeof(n->dir), "%s/node-%lu", a->dir, i);
        if (mkdir(n->dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "partkv cluster up: mkdir %s: %s\n", n->dir,
                    strerror(errno));
            return -1;
        }
        pk_up_node_argv(a, secret, i, kids[0].port, n);
        if (pk_child_start(&kids[i], n->argv, NODE_START_MS) != 0)
            return -1;
        /* A restart takes the same port, also one picked with port 0. */
        snprintf(n->port, sizeof(n->port), "%d", kids[i].port);
        n->started_ms = mono_ms();
    }
    return 0;
}

static int read_id(const pk_up_args *a, unsigned long i, char *id)
{
    char path[4096];
    int fd, ok;

    snprintf(path, sizeof(path), "%s/node-%lu/node.id", a->dir, i);
    fd = open(path, O_RDONLY);
    ok = fd >= 0 && read(fd, id, PK_NAME_MAX) == PK_NAME_MAX;
    if (fd >= 0)
        close(fd);
    id[PK_NAME_MAX] = '\0';
    return ok ? 0 : -1;
}

/* True when SIGINT or SIGTERM is pending (they are blocked). */
static int stop_requested(void)
{
    sigset_t pending;

    sigpending(&pending);
    return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM);
}

/* Waits until the coordinator lists every node. */
static int wait_registered(pk_sclient *c, unsigned long n)
{
    const char *argv[] = {"PK.COORD", "RANGE", PK_CLUSTER_PREFIX "nodes/"};
    long deadline = mono_ms() + REGISTER_TIMEOUT_MS;

    while (mono_ms() < deadline && !stop_requested()) {
        pk_rr *r = NULL;
        size_t have = 0;
        if (pk_sclient_call(c, 3, argv, NULL, &r) != PK_OK)
            return -1;
        if (r->type == PK_RR_ARRAY && r->n == 2)
            have = r->elems[1].n;
        pk_rr_free(r);
        if (have >= n)
            return 0;
        usleep(50000);
    }
    return -1;
}

/* Writes m with CAS against mod_rev (0: must not exist).  0, 1 when
 * someone else changed the map first (a node refreshing its own address),
 * or -1. */
static int put_map(pk_sclient *c, const pk_pmap *m, uint64_t mod_rev)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char rev[24];
    pk_rr *r = NULL;
    int rc = pk_pmap_encode(m, &buf, &len);

    if (rc != PK_OK) {
        fprintf(stderr, "partkv cluster up: map: %s\n", pk_strerror(rc));
        return -1;
    }
    snprintf(rev, sizeof(rev), "%llu", (unsigned long long)mod_rev);
    const char *cas[] = {"PK.COORD",        "CAS", PK_CLUSTER_PREFIX "map", rev,
                         (const char *)buf, "0"};
    size_t lens[] = {8, 3, strlen(cas[2]), strlen(rev), len, 1};
    rc = pk_sclient_call(c, 6, cas, lens, &r);
    free(buf);
    if (rc != PK_OK)
        return -1;
    rc = r->type == PK_RR_ARRAY                        ? 0
         : r->str && strncmp(r->str, "ESTALE", 6) == 0 ? 1
                                                       : -1;
    if (rc < 0)
        fprintf(stderr, "partkv cluster up: map update refused: %s\n",
                r->str ? r->str : "?");
    pk_rr_free(r);
    return rc;
}

/*
 * Creates the map unless one exists; an existing map gets the nodes'
 * current addresses (ports change across restarts with --base-port 0).
 * Returns 0 and sets *created, 1 to try again (the map changed under us),
 * or -1.
 */
static int ensure_map_once(pk_sclient *c, const pk_up_args *a,
                           const pk_child *kids, char ids[][PK_NAME_MAX + 1],
                           int *created)
{
    const char *get[] = {"PK.COORD", "GET", PK_CLUSTER_PREFIX "map"};
    pk_pmap *m = NULL;
    pk_rr *r = NULL;
    uint64_t mod_rev = 0;
    int rc, changed = 0;

    if (pk_sclient_call(c, 3, get, NULL, &r) != PK_OK)
        return -1;
    if (r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        mod_rev = (uint64_t)r->elems[1].elems[3].integer;
        rc = pk_pmap_decode((const uint8_t *)r->elems[1].elems[1].str,
                            r->elems[1].elems[1].len, &m);
        if (rc != PK_OK)
            m = NULL;
    }
    pk_rr_free(r);
    *created = mod_rev == 0;
    if (mod_rev != 0 && m == NULL) {
        fprintf(stderr, "partkv cluster up: the stored map is unreadable\n");
        return -1;
    }
    rc = m ? PK_OK
           : pk_pmap_new(a->scheme, a->hash, (uint32_t)a->partitions,
                         (uint8_t)a->replicas, &m);
    if (rc == PK_OK && *created && a->scheme == PK_SCHEME_RANGE)
        rc = pk_presplit_apply(&a->presplit, m);
    for (unsigned long i = 0; rc == PK_OK && i < a->nodes; i++) {
        char addr[64];
        uint32_t id;
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", kids[i].port);
        if (pk_pmap_node_find(m, ids[i], &id) != PK_OK) {
            rc = pk_pmap_node_add(m, ids[i], addr, NULL, 1.0, &id);
            changed = 1;
        } else if (strcmp(m->nodes[id].addr, addr) != 0) {
            snprintf(m->nodes[id].addr, sizeof(m->nodes[id].addr), "%s", addr);
            changed = 1;
        }
    }
    if (rc == PK_OK && *created)
        rc = pk_plan_initial(m);
    else if (rc == PK_OK && changed)
        m->epoch++;
    if (rc == PK_OK && (*created || changed)) {
        int put = put_map(c, m, mod_rev);
        pk_pmap_free(m);
        return put;
    }
    pk_pmap_free(m);
    return rc == PK_OK ? 0 : -1;
}

/* ensure_map_once until no node races us (nodes refresh their own
 * address in the map when they register). */
static int ensure_map(pk_sclient *c, const pk_up_args *a, const pk_child *kids,
                      char ids[][PK_NAME_MAX + 1], int *created)
{
    int rc = 1;

    for (int tries = 0; rc == 1 && tries < 50; tries++)
        rc = ensure_map_once(c, a, kids, ids, created);
    return rc == 0 ? 0 : -1;
}

/* Waits until every node serves the map (CLUSTER INFO says ok). */
static int wait_serving(const pk_child *kids, unsigned long n)
{
    const char *info[] = {"CLUSTER", "INFO"};
    long deadline = mono_ms() + REGISTER_TIMEOUT_MS;

    for (unsigned long i = 0; i < n; i++) {
        int ok = 0;
        while (!ok && mono_ms() < deadline && !stop_requested()) {
            pk_sclient *c = NULL;
            pk_rr *r = NULL;
            if (pk_sclient_connect("127.0.0.1", kids[i].port, 1000, &c) ==
                    PK_OK &&
                pk_sclient_call(c, 2, info, NULL, &r) == PK_OK)
                ok = r->str && strstr(r->str, "cluster_state:ok") != NULL;
            pk_rr_free(r);
            pk_sclient_free(c);
            if (!ok)
                usleep(10000);
        }
        if (!ok)
            return -1;
    }
    return 0;
}

static void stop_all(pk_child *kids, unsigned long n)
{
    for (unsigned long i = n; i-- > 0;)
        pk_child_stop(&kids[i], 5000);
}

/* The restart delay after delay_ms, for a node that died again soon. */
static long backoff(long delay_ms)
{
    return delay_ms * 2 < RESTART_MAX_MS ? delay_ms * 2 : RESTART_MAX_MS;
}

/* Reaps the nodes that died and schedules their restart. */
static void reap_nodes(pk_child *kids, pk_up_node *nodes, unsigned long count)
{
    long now = mono_ms();

    for (unsigned long i = 0; i < count; i++) {
        pk_up_node *n = &nodes[i];
        int st;
        if (kids[i].pid <= 0 || waitpid(kids[i].pid, &st, WNOHANG) <= 0)
            continue;
        n->dead_pid = kids[i].pid;
        n->dead_status = st;
        if (n->delay_ms > 0 && now - n->started_ms < RESTART_QUICK_MS)
            n->delay_ms = backoff(n->delay_ms);
        else
            n->delay_ms = RESTART_MIN_MS;
        n->restart_ms = now + n->delay_ms;
        kids[i].pid = 0;
        close(kids[i].out_fd);
        kids[i].out_fd = -1;
    }
}

/* True when something accepts connections on the port: a node started
 * there would only fail to listen -- after opening its data directory,
 * which may be in use by that something (the node, restarted by hand). */
static int port_taken(const char *port)
{
    pk_sclient *c = NULL;
    int taken = pk_sclient_connect("127.0.0.1", atoi(port), 200, &c) == PK_OK;

    pk_sclient_free(c);
    return taken;
}

/* Starts again every node whose restart is due, unless we are stopping. */
static void restart_due(pk_child *kids, pk_up_node *nodes, unsigned long count)
{
    for (unsigned long i = 0; i < count && !stop_requested(); i++) {
        pk_up_node *n = &nodes[i];
        int st = n->dead_status;
        char why[48];
        int taken;
        if (n->restart_ms == 0 || n->restart_ms > mono_ms())
            continue;
        if (WIFSIGNALED(st))
            snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(st));
        else
            snprintf(why, sizeof(why), "exited with status %d",
                     WEXITSTATUS(st));
        taken = port_taken(n->port);
        if (taken || pk_child_start(&kids[i], n->argv, NODE_START_MS) != 0) {
            /* Counts as dying right after a start: the delay doubles. */
            n->delay_ms = backoff(n->delay_ms);
            n->restart_ms = mono_ms() + n->delay_ms;
            fprintf(stderr,
                    "partkv cluster: node %lu (port %s, pid %d) died (%s); "
                    "%s, next try in %ld ms\n",
                    i, n->port, (int)n->dead_pid, why,
                    taken ? "its port is taken" : "restart failed",
                    n->delay_ms);
            continue;
        }
        n->started_ms = mono_ms();
        n->restart_ms = 0;
        fprintf(stderr,
                "partkv cluster: node %lu (port %s, pid %d) died (%s); "
                "restarted as pid %d\n",
                i, n->port, (int)n->dead_pid, why, (int)kids[i].pid);
    }
}

/* Until SIGINT or SIGTERM (blocked, in set with SIGCHLD): nodes that die
 * are started again.  Returns 0, or -1 if waiting for signals failed. */
static int supervise(pk_child *kids, pk_up_node *nodes, unsigned long count,
                     const sigset_t *set)
{
    for (;;) {
        struct timespec ts, *timeout = NULL;
        long due = 0;
        int sig;
        for (unsigned long i = 0; i < count; i++)
            if (nodes[i].restart_ms && (!due || nodes[i].restart_ms < due))
                due = nodes[i].restart_ms;
        if (due) {
            long left = due - mono_ms();
            if (left < 0)
                left = 0;
            ts.tv_sec = left / 1000;
            ts.tv_nsec = left % 1000 * 1000000L;
            timeout = &ts;
        }
        sig = sigtimedwait(set, NULL, timeout);
        if (sig == SIGINT || sig == SIGTERM)
            return 0;
        if (sig < 0 && errno != EAGAIN && errno != EINTR) {
            fprintf(stderr, "partkv cluster: sigtimedwait: %s\n",
                    strerror(errno));
            return -1;
        }
        reap_nodes(kids, nodes, count);
        restart_due(kids, nodes, count);
    }
}

static int cluster_up(int argc, char **argv)
{
    pk_up_args a;
    pk_child kids[PK_UP_NODES_MAX];
    pk_up_node *nodes = NULL;
    char secret[128], ids[PK_UP_NODES_MAX][PK_NAME_MAX + 1], acks[32] = "";
    pk_sclient *c = NULL;
    pk_tls *tls = NULL;
    sigset_t set;
    int created = 0, status = 1;

    if (pk_up_parse(argc, argv, &a) != 0)
        return 2;
    if (mkdir(a.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "partkv cluster up: --dir %s: %s\n", a.dir,
                strerror(errno));
        return 2;
    }
    if (load_secret(&a, secret, sizeof(secret)) != 0) {
        fprintf(stderr, "partkv cluster up: cannot keep a secret in %s\n",
                a.dir);
        return 1;
    }
    if (!a.tls)
        pk_sclient_use_tls(NULL); /* not PARTKV_TLS_*: the nodes are ours */
    else if (up_tls(&a, &tls) != 0)
        return 1;
    /* SIGINT/SIGTERM/SIGCHLD are blocked from here on and taken by
     * supervise() with sigtimedwait, or SIGINT/SIGTERM noticed by
     * stop_requested() while nodes start; children unblock them before
     * exec. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    memset(kids, 0, sizeof(kids));
    for (int i = 0; i < PK_UP_NODES_MAX; i++)
        kids[i].out_fd = -1;
    nodes = calloc(a.nodes, sizeof(*nodes));
    if (nodes == NULL) {
        fprintf(stderr, "partkv cluster up: out of memory\n");
        return 1;
    }
    /* Inherited SIG_IGN would have the kernel reap the nodes for us. */
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if (start_nodes(&a, secret, kids, nodes) != 0)
        goto out;
    for (unsigned long i = 0; i < a.nodes; i++)
        if (read_id(&a, i, ids[i]) != 0)
            goto out;
    const char *auth[] = {"PK.AUTH", secret};
    pk_rr *r = NULL;
    if (pk_sclient_connect("127.0.0.1", kids[0].port, 5000, &c) != PK_OK ||
        pk_sclient_call(c, 2, auth, NULL, &r) != PK_OK) {
        fprintf(stderr, "partkv cluster up: cannot reach the coordinator\n");
        goto out;
    }
    pk_rr_free(r);
    if (wait_registered(c, a.nodes) != 0) {
        fprintf(stderr, "partkv cluster up: nodes did not register\n");
        goto out;
    }
    if (ensure_map(c, &a, kids, ids, &created) != 0)
        goto out;
    if (wait_serving(kids, a.nodes) != 0) {
        fprintf(stderr, "partkv cluster up: nodes did not take the map\n");
        goto out;
    }
    /* acks only when given: without it the nodes keep their default. */
    if (a.acks)
        snprintf(acks, sizeof(acks), "acks %s, ", a.acks);
    printf("partkv cluster: %lu nodes, %lu %s partitions, %lu replicas, "
           "%s%s mode, coordinator on 127.0.0.1:%d, data in %s (%s map)\n",
           a.nodes, a.partitions,
           a.scheme == PK_SCHEME_HASH    ? pk_hash_name(a.hash)
           : a.scheme == PK_SCHEME_RANGE ? "range"
                                         : "slot",
           a.replicas, acks, a.forward ? "forward" : "redirect", kids[0].port,
           a.dir, created ? "new" : "existing");
    for (unsigned long i = 0; i < a.nodes; i++)
        printf("  node %lu  127.0.0.1:%d  pid %d  id %s\n", i, kids[i].port,
               (int)kids[i].pid, ids[i]);
    if (a.tls)
        printf("try: redis-cli --tls --cacert %s %s-p %d\nready\n",
               a.tls_files[0], a.forward ? "" : "-c ", kids[0].port);
    else
        printf("try: redis-cli %s-p %d\nready\n", a.forward ? "" : "-c ",
               kids[0].port);
    fflush(stdout);
    pk_sclient_free(c);
    c = NULL;
    if (supervise(kids, nodes, a.nodes, &set) == 0)
        status = 0;
out:
    pk_sclient_free(c);
    stop_all(kids, a.nodes);
    free(nodes);
    pk_presplit_free(&a.presplit);
    pk_sclient_use_tls(NULL);
    pk_tls_free(tls);
    return status;
}

int pk_cli_cluster(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "up") == 0)
        return cluster_up(argc - 1, argv + 1);
    if (argc >= 2 &&
        (strcmp(argv[1], "status") == 0 || strcmp(argv[1], "map") == 0 ||
         strcmp(argv[1], "nodes") == 0))
        return pk_cli_cluster_view(argc - 1, argv + 1);
    fprintf(stderr, "usage: partkv cluster up --nodes N [--base-port P] "
                    "[--dir D] [--replicas R] [--acks leader|quorum|all] "
                    "[--replace-after SECONDS] | partkv cluster "
                    "status|map|nodes --cluster HOST:PORT [--json]\n");
    return 2;
}

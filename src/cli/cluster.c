/*
 * partkv cluster up: a whole local cluster in the foreground.
 *
 *   partkv cluster up --nodes N [--base-port P] [--dir D] [--replicas R]
 *                     [--scheme slots|hash [--partitions P] [--hash H]]
 *                     [--route redirect|forward] [--coordinator embedded]
 *                     [--secret S] [--fsync always|everysec|no]
 *
 * Starts N node processes on 127.0.0.1 (ports P..P+N-1; P = 0 picks free
 * ports), the first hosting the embedded coordinator; waits until every
 * node has registered; creates the partition map with the core planner
 * (unless the data directory already holds one, after a restart); prints
 * a summary and the line "ready"; and stays until SIGINT/SIGTERM, which
 * stop every node cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spawn.h"
#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_plan.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_agent.h"
#include "server/pk_sclient.h"

#define NODES_MAX 64
#define REGISTER_TIMEOUT_MS 15000

typedef struct up_args {
    unsigned long nodes, base_port, replicas, partitions;
    const char *dir;
    const char *secret;
    int hash_scheme;   /* --scheme hash */
    pk_hash_kind hash; /* --hash, for the hash scheme */
    int forward;       /* nodes forward instead of answering MOVED */
    const char *fsync; /* --fsync for every node, or NULL */
} up_args;

static int parse_up(int argc, char **argv, up_args *a)
{
    static const struct option opts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"base-port", required_argument, NULL, 'p'},
        {"dir", required_argument, NULL, 'd'},
        {"replicas", required_argument, NULL, 'r'},
        {"coordinator", required_argument, NULL, 'c'},
        {"scheme", required_argument, NULL, 's'},
        {"secret", required_argument, NULL, 'S'},
        {"partitions", required_argument, NULL, 'P'},
        {"hash", required_argument, NULL, 'H'},
        {"route", required_argument, NULL, 'R'},
        {"fsync", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    int ch;

    memset(a, 0, sizeof(*a));
    a->nodes = 3;
    a->base_port = 7000;
    a->dir = "./data";
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        unsigned long v = optarg ? strtoul(optarg, &end, 10) : 0;
        int num_ok = optarg && *optarg && *optarg != '-' && *end == '\0';
        switch (ch) {
        case 'n':
            if (!num_ok || v < 1 || v > NODES_MAX)
                goto bad;
            a->nodes = v;
            break;
        case 'p':
            if (!num_ok || v > 65535 - NODES_MAX)
                goto bad;
            a->base_port = v;
            break;
        case 'r':
            if (!num_ok || v < 1 || v > PK_REPLICAS_MAX)
                goto bad;
            a->replicas = v;
            break;
        case 'd':
            a->dir = optarg;
            break;
        case 'c':
            if (strcmp(optarg, "embedded") != 0)
                goto bad;
            break;
        case 's':
            if (strcmp(optarg, "slots") != 0 && strcmp(optarg, "hash") != 0)
                goto bad;
            a->hash_scheme = strcmp(optarg, "hash") == 0;
            break;
        case 'P':
            if (!num_ok || v < 1 || v > PK_PARTITIONS_MAX)
                goto bad;
            a->partitions = v;
            break;
        case 'H':
            if (pk_hash_parse(optarg, &a->hash) != PK_OK)
                goto bad;
            break;
        case 'R':
            if (strcmp(optarg, "forward") != 0 &&
                strcmp(optarg, "redirect") != 0)
                goto bad;
            a->forward = strcmp(optarg, "forward") == 0;
            break;
        case 'S':
            a->secret = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "always") != 0 &&
                strcmp(optarg, "everysec") != 0 && strcmp(optarg, "no") != 0)
                goto bad;
            a->fsync = optarg;
            break;
        default:
            goto bad;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "partkv cluster up: unexpected argument '%s'\n",
                argv[optind]);
        return -1;
    }
    if (a->replicas == 0)
        a->replicas = a->nodes < 3 ? a->nodes : 3;
    /* Clients cannot compute hash-mod-P partitions: nodes must forward. */
    if (a->hash_scheme)
        a->forward = 1;
    if (a->partitions == 0)
        a->partitions = a->hash_scheme ? 1024 : PK_SLOTS;
    if (!a->hash_scheme && a->partitions != PK_SLOTS) {
        fprintf(stderr,
                "partkv cluster up: the slots scheme has %d "
                "partitions; --partitions goes with --scheme hash\n",
                PK_SLOTS);
        return -1;
    }
    if (a->replicas > a->nodes) {
        fprintf(stderr,
                "partkv cluster up: --replicas %lu needs at least "
                "as many nodes\n",
                a->replicas);
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "partkv cluster up: bad or incomplete option '%s'\n",
            argv[optind - 1]);
    return -1;
}

/* The cluster secret: --secret, else DIR/secret, else a new random one. */
static int load_secret(const up_args *a, char *secret, size_t cap)
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

static int start_nodes(const up_args *a, const char *secret, pk_child *kids)
{
    const char *exe = pk_self_exe();

    for (unsigned long i = 0; i < a->nodes; i++) {
        char dir[4096], port[16], join[64];
        char *argv[16];
        int n = 0;
        snprintf(dir, sizeof(dir), "%s/node-%lu", a->dir, i);
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "partkv cluster up: mkdir %s: %s\n", dir,
                    strerror(errno));
            return -1;
        }
        snprintf(port, sizeof(port), "%lu",
                 a->base_port ? a->base_port + i : 0);
        argv[n++] = (char *)exe;
        argv[n++] = "server";
        argv[n++] = "--port";
        argv[n++] = port;
        argv[n++] = "--dir";
        argv[n++] = dir;
        argv[n++] = "--cluster-secret";
        argv[n++] = (char *)secret;
        if (a->forward) {
            argv[n++] = "--route";
            argv[n++] = "forward";
        }
        if (a->fsync) {
            argv[n++] = "--fsync";
            argv[n++] = (char *)a->fsync;
        }
        if (i == 0) {
            argv[n++] = "--coordinator";
            argv[n++] = "embedded";
        } else {
            snprintf(join, sizeof(join), "127.0.0.1:%d", kids[0].port);
            argv[n++] = "--join";
            argv[n++] = join;
        }
        argv[n] = NULL;
        if (pk_child_start(&kids[i], argv, 10000) != 0)
            return -1;
    }
    return 0;
}

static int read_id(const up_args *a, unsigned long i, char *id)
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

static long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
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
static int ensure_map_once(pk_sclient *c, const up_args *a,
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
           : pk_pmap_new(a->hash_scheme ? PK_SCHEME_HASH : PK_SCHEME_SLOTS,
                         a->hash, (uint32_t)a->partitions, (uint8_t)a->replicas,
                         &m);
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
static int ensure_map(pk_sclient *c, const up_args *a, const pk_child *kids,
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

static int cluster_up(int argc, char **argv)
{
    up_args a;
    pk_child kids[NODES_MAX];
    char secret[128], ids[NODES_MAX][PK_NAME_MAX + 1];
    pk_sclient *c = NULL;
    sigset_t set;
    int created = 0, sig = 0, status = 1;

    if (parse_up(argc, argv, &a) != 0)
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
    /* SIGINT/SIGTERM are blocked from here on and taken with sigwait, or
     * noticed by stop_requested() while nodes start; children unblock
     * them before exec. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    memset(kids, 0, sizeof(kids));
    for (int i = 0; i < NODES_MAX; i++)
        kids[i].out_fd = -1;
    sigprocmask(SIG_BLOCK, &set, NULL);
    if (start_nodes(&a, secret, kids) != 0)
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
    printf("partkv cluster: %lu nodes, %lu %s partitions, %lu replicas, "
           "%s mode, coordinator on 127.0.0.1:%d, data in %s (%s map)\n",
           a.nodes, a.partitions, a.hash_scheme ? pk_hash_name(a.hash) : "slot",
           a.replicas, a.forward ? "forward" : "redirect", kids[0].port, a.dir,
           created ? "new" : "existing");
    for (unsigned long i = 0; i < a.nodes; i++)
        printf("  node %lu  127.0.0.1:%d  pid %d  id %s\n", i, kids[i].port,
               (int)kids[i].pid, ids[i]);
    printf("try: redis-cli %s-p %d\nready\n", a.forward ? "" : "-c ",
           kids[0].port);
    fflush(stdout);
    pk_sclient_free(c);
    c = NULL;
    for (;;) {
        if (sigwait(&set, &sig) != 0)
            break;
        if (sig == SIGINT || sig == SIGTERM)
            break;
        /* SIGCHLD: report nodes that died; the rest keep serving. */
        for (unsigned long i = 0; i < a.nodes; i++) {
            int st;
            if (kids[i].pid > 0 && waitpid(kids[i].pid, &st, WNOHANG) > 0) {
                fprintf(stderr,
                        "partkv cluster: node %lu (pid %d) exited "
                        "with status %d\n",
                        i, (int)kids[i].pid,
                        WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
                kids[i].pid = 0;
            }
        }
    }
    status = 0;
out:
    pk_sclient_free(c);
    stop_all(kids, a.nodes);
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
                    "[--dir D] [--replicas R] | partkv cluster "
                    "status|map|nodes --cluster HOST:PORT [--json]\n");
    return 2;
}

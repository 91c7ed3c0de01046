/*
 * rload: a range-aware GET or SET load, for bench/range-split.sh -- what a
 * smart client of the range scheme does: it reads the partition map
 * (PK.MAP, decoded by the core library), keeps a connection per virtual
 * client to every node, and sends each request straight to the leader of
 * the range holding its key, so that no node forwards.  The map is read
 * again every second and after an error reply (a split or a leader
 * change since).
 *
 *   rload -p PORT [-h HOST] -t get|set [-r KEYSPACE] [-d BYTES] [-c CLIENTS]
 *         [-n REQUESTS] [-q]
 *
 * The arguments are redis-benchmark's (-q is accepted and changes
 * nothing), keys are redis-benchmark's "key:%012d" of a uniform random
 * number below KEYSPACE, and every 250 ms it prints redis-benchmark's
 * progress line ("GET: rps=123.0 (overall: ...)\r"), which the script's
 * tap reads.  Each of the CLIENTS virtual clients has one request in
 * flight, as redis-benchmark -P 1 has; one thread sends a request for
 * each, then reads the replies.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bnet.h"
#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_range.h"

#define NODES_MAX 16
#define CLIENTS_MAX 128
#define RBUF 4096

typedef struct conn {
    int fd;
    char buf[RBUF];
    size_t len, pos;
} conn;

typedef struct node {
    char addr[64];
    conn c[CLIENTS_MAX];
} node;

static node nodes[NODES_MAX];
static int nnodes, clients = 50, set_test;
static long keyspace = 100000, dsize = 3;
static pk_pmap *map;
static pk_range *ranges;
static uint32_t *leader_node; /* per partition: index in nodes, or -1 */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int dial(const char *addr)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int fd, one = 1;

    if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
        return -1;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
        (fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int fill(conn *c)
{
    ssize_t r;

    if (c->pos > 0) {
        memmove(c->buf, c->buf + c->pos, c->len - c->pos);
        c->len -= c->pos;
        c->pos = 0;
    }
    if (c->len == sizeof(c->buf))
        return -1;
    do
        r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return -1;
    c->len += (size_t)r;
    return 0;
}

/* A line ending in CRLF from c, NUL-terminated in place; NULL on EOF. */
static char *line(conn *c)
{
    for (;;) {
        char *p = memchr(c->buf + c->pos, '\n', c->len - c->pos);
        if (p && p > c->buf + c->pos && p[-1] == '\r') {
            char *s = c->buf + c->pos;
            p[-1] = '\0';
            c->pos = (size_t)(p - c->buf) + 1;
            return s;
        }
        if (fill(c) != 0)
            return NULL;
    }
}

/*
 * One reply (no aggregates but an empty one): 1 for a value or nil, 0
 * for an error reply, -1 when the connection broke.  With out, a bulk
 * string's bytes are copied there (malloc'd) and its length set.
 */
static int reply(conn *c, char **out, size_t *outlen)
{
    char *l = line(c);
    long n;

    if (l == NULL)
        return -1;
    if (l[0] == '-')
        return 0;
    if (l[0] != '$')
        return 1;
    n = strtol(l + 1, NULL, 10);
    if (n < 0)
        return 1;
    while (c->len - c->pos < (size_t)n + 2)
        if (fill(c) != 0)
            return -1;
    if (out) {
        *out = malloc((size_t)n + 1);
        if (*out == NULL)
            return -1;
        memcpy(*out, c->buf + c->pos, (size_t)n);
        *outlen = (size_t)n;
    }
    c->pos += (size_t)n + 2;
    return 1;
}

static int node_of(const char *addr)
{
    for (int i = 0; i < nnodes; i++)
        if (strcmp(nodes[i].addr, addr) == 0)
            return i;
    if (nnodes == NODES_MAX)
        return -1;
    snprintf(nodes[nnodes].addr, sizeof(nodes[nnodes].addr), "%s", addr);
    for (int j = 0; j < clients; j++) {
        nodes[nnodes].c[j].fd = dial(addr);
        if (nodes[nnodes].c[j].fd < 0)
            return -1;
    }
    return nnodes++;
}

/* Reads the map from the seed node (c: a connection to it). */
static int load_map(conn *c)
{
    const char *req = "*1\r\n$6\r\nPK.MAP\r\n";
    char *buf = NULL;
    size_t len = 0;
    pk_pmap *m = NULL;
    pk_range *r = NULL;
    uint32_t *ln;

    if (bn_send_all(c->fd, req, strlen(req)) != 0 ||
        reply(c, &buf, &len) != 1 || buf == NULL)
        return -1;
    if (pk_pmap_decode((const uint8_t *)buf, len, &m) != PK_OK ||
        m->scheme != PK_SCHEME_RANGE || pk_range_from_pmap(m, &r) != PK_OK ||
        (ln = malloc(m->npartitions * sizeof(*ln))) == NULL) {
        free(buf);
        pk_pmap_free(m);
        pk_range_free(r);
        return -1;
    }
    free(buf);
    for (uint32_t p = 0; p < m->npartitions; p++) {
        uint32_t l = pk_pmap_leader(m, p);
        ln[p] = l == PK_NODE_NONE ? UINT32_MAX
                                  : (uint32_t)node_of(m->nodes[l].addr);
    }
    pk_pmap_free(map);
    pk_range_free(ranges);
    free(leader_node);
    map = m;
    ranges = r;
    leader_node = ln;
    return 0;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    int port = 0, ch;
    long total = -1, done = 0, errors = 0, tick_done = 0;
    char seed_addr[64], *val;
    conn seed = {0};
    double t0, last, last_map;
    const char *name;

    while ((ch = getopt(argc, argv, "h:p:t:r:d:c:n:q")) != -1) {
        switch (ch) {
        case 'h':
            host = optarg;
            break;
        case 'p':
            port = atoi(optarg);
            break;
        case 't':
            set_test = strcmp(optarg, "set") == 0;
            if (!set_test && strcmp(optarg, "get") != 0)
                goto usage;
            break;
        case 'r':
            keyspace = atol(optarg);
            break;
        case 'd':
            dsize = atol(optarg);
            break;
        case 'c':
            clients = atoi(optarg);
            break;
        case 'n':
            total = atol(optarg);
            break;
        case 'q':
            break;
        default:
            goto usage;
        }
    }
    if (port <= 0 || keyspace <= 0 || clients < 1 || clients > CLIENTS_MAX ||
        dsize < 0 || dsize > 4096)
        goto usage;
    snprintf(seed_addr, sizeof(seed_addr), "%s:%d", host, port);
    if ((seed.fd = dial(seed_addr)) < 0 || load_map(&seed) != 0) {
        fprintf(stderr, "rload: cannot read a range map from %s\n", seed_addr);
        return 1;
    }
    val = malloc((size_t)dsize + 1);
    memset(val, 'x', (size_t)dsize);
    name = set_test ? "SET" : "GET";
    t0 = last = last_map = now_s();
    while (total < 0 || done < total) {
        int to[CLIENTS_MAX];
        int refresh = 0;
        for (int j = 0; j < clients; j++) {
            char key[32], req[4200];
            uint32_t part;
            int klen = snprintf(key, sizeof(key), "key:%012ld",
                                (long)(next_rand() % (uint64_t)keyspace));
            int n;
            to[j] = -1;
            if (pk_range_lookup(ranges, key, (size_t)klen, &part) != PK_OK ||
                leader_node[part] == UINT32_MAX)
                continue;
            to[j] = (int)leader_node[part];
            if (set_test)
                n = snprintf(req, sizeof(req),
                             "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%ld\r\n%s\r\n",
                             klen, key, dsize, val);
            else
                n = snprintf(req, sizeof(req),
                             "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", klen, key);
            if (bn_send_all(nodes[to[j]].c[j].fd, req, (size_t)n) != 0) {
                fprintf(stderr, "rload: a node closed the connection\n");
                return 1;
            }
        }
        for (int j = 0; j < clients; j++) {
            int r;
            if (to[j] < 0)
                continue;
            r = reply(&nodes[to[j]].c[j], NULL, NULL);
            if (r < 0) {
                fprintf(stderr, "rload: a node closed the connection\n");
                return 1;
            }
            done += r == 1;
            errors += r == 0;
            refresh |= r == 0;
        }
        double t = now_s();
        if (t - last >= 0.25) {
            printf("%s: rps=%.1f (overall: %.1f) errors=%ld\r", name,
                   (done - tick_done) / (t - last), done / (t - t0), errors);
            fflush(stdout);
            tick_done = done;
            last = t;
        }
        if ((refresh || t - last_map >= 1.0) && load_map(&seed) == 0)
            last_map = t;
    }
    printf("\n%s: %.2f requests per second\n", name, done / (now_s() - t0));
    return 0;
usage:
    fprintf(stderr, "usage: rload -p PORT [-h HOST] -t get|set [-r KEYSPACE] "
                    "[-d BYTES] [-c CLIENTS] [-n REQUESTS] [-q]\n");
    return 2;
}

/*
 * partkv cluster status|map|nodes --cluster HOST:PORT [--json]: the
 * operator's view, built from what any node answers to the public
 * commands (CLUSTER NODES, then DBSIZE on every node), so it needs no
 * secret and works against any node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"

#define VIEW_NODES_MAX 256
#define VIEW_RANGES_MAX 1024

typedef struct view_node {
    char id[48], host[64], role[16], master[48];
    int port;
    unsigned long long epoch;
    int up;         /* answered DBSIZE */
    long long keys; /* -1 when down */
    double ping_ms;
    unsigned parts; /* slots led */
    unsigned nranges;
    unsigned ranges[VIEW_RANGES_MAX][2];
} view_node;

static int call_text(const char *host, int port, int argc,
                     const char *const *argv, pk_rr **r, double *ms)
{
    pk_sclient *c = NULL;
    struct timespec a, b;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &a);
    rc = pk_sclient_connect(host, port, 1000, &c);
    if (rc == PK_OK)
        rc = pk_sclient_call(c, argc, argv, NULL, r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (ms)
        *ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
              (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    pk_sclient_free(c);
    return rc;
}

/* Parses one CLUSTER NODES line into n; 0 or -1. */
static int parse_line(char *line, view_node *n)
{
    char *save = NULL, *tok[64];
    int nt = 0;

    memset(n, 0, sizeof(*n));
    for (char *t = strtok_r(line, " ", &save); t && nt < 64;
         t = strtok_r(NULL, " ", &save))
        tok[nt++] = t;
    if (nt < 8)
        return -1;
    snprintf(n->id, sizeof(n->id), "%s", tok[0]);
    char *at = strchr(tok[1], '@');
    if (at)
        *at = '\0';
    if (pk_cli_split_host_port(tok[1], n->host, sizeof(n->host), &n->port) != 0)
        return -1;
    snprintf(n->role, sizeof(n->role), "%s",
             strstr(tok[2], "slave") ? "follower" : "leader");
    snprintf(n->master, sizeof(n->master), "%s", tok[3]);
    n->epoch = strtoull(tok[6], NULL, 10);
    for (int i = 8; i < nt && n->nranges < VIEW_RANGES_MAX; i++) {
        unsigned a = 0, b = 0;
        int k = sscanf(tok[i], "%u-%u", &a, &b);
        if (k < 1 || tok[i][0] == '[')
            continue;
        if (k == 1)
            b = a;
        n->ranges[n->nranges][0] = a;
        n->ranges[n->nranges][1] = b;
        n->nranges++;
        n->parts += b - a + 1;
    }
    return 0;
}

/* CLUSTER INFO of the target: whether every partition is assigned. */
static int cluster_ok(const char *target)
{
    const char *argv[] = {"CLUSTER", "INFO"};
    char host[64];
    int port, ok = 0;
    pk_rr *r = NULL;

    if (pk_cli_split_host_port(target, host, sizeof(host), &port) == 0 &&
        call_text(host, port, 2, argv, &r, NULL) == PK_OK && r->str)
        ok = strstr(r->str, "cluster_state:ok") != NULL;
    pk_rr_free(r);
    return ok;
}

static int load(const char *target, view_node *nodes, int *nn)
{
    const char *nodes_cmd[] = {"CLUSTER", "NODES"};
    const char *dbsize[] = {"DBSIZE"};
    char host[64];
    int port;
    pk_rr *r = NULL;

    if (pk_cli_split_host_port(target, host, sizeof(host), &port) != 0) {
        fprintf(stderr,
                "partkv cluster: --cluster needs HOST:PORT, got "
                "'%s'\n",
                target);
        return 2;
    }
    if (call_text(host, port, 2, nodes_cmd, &r, NULL) != PK_OK ||
        (r->type != PK_RR_BULK && r->type != PK_RR_VERBATIM)) {
        fprintf(stderr, "partkv cluster: %s did not answer CLUSTER NODES%s%s\n",
                target, r && r->str ? ": " : "", r && r->str ? r->str : "");
        pk_rr_free(r);
        return 1;
    }
    char *text = strdup(r->str), *save = NULL;
    pk_rr_free(r);
    *nn = 0;
    for (char *line = strtok_r(text, "\n", &save); line && *nn < VIEW_NODES_MAX;
         line = strtok_r(NULL, "\n", &save))
        if (parse_line(line, &nodes[*nn]) == 0)
            (*nn)++;
    free(text);
    for (int i = 0; i < *nn; i++) {
        view_node *n = &nodes[i];
        r = NULL;
        n->keys = -1;
        if (call_text(n->host, n->port, 1, dbsize, &r, &n->ping_ms) == PK_OK &&
            r->type == PK_RR_INT) {
            n->up = 1;
            n->keys = r->integer;
        }
        pk_rr_free(r);
    }
    return 0;
}

static void print_status(const view_node *nodes, int nn, int json,
                         int assigned_all)
{
    unsigned long long epoch = 0, keys = 0;
    unsigned slots = 0, up = 0;

    for (int i = 0; i < nn; i++) {
        epoch = nodes[i].epoch > epoch ? nodes[i].epoch : epoch;
        slots += nodes[i].parts;
        up += nodes[i].up;
        keys += nodes[i].keys > 0 ? (unsigned long long)nodes[i].keys : 0;
    }
    if (json) {
        printf("{\"epoch\": %llu, \"nodes\": %d, \"nodes_up\": %u, "
               "\"partitions_assigned\": %u, \"all_assigned\": %s, "
               "\"keys\": %llu, \"health\": \"%s\"}\n",
               epoch, nn, up, slots, assigned_all ? "true" : "false", keys,
               up == (unsigned)nn && assigned_all ? "ok" : "degraded");
        return;
    }
    printf("epoch %llu, %d nodes (%u up), %u partitions assigned%s, %llu "
           "keys: %s\n",
           epoch, nn, up, slots, assigned_all ? " (all)" : " (NOT all)", keys,
           up == (unsigned)nn && assigned_all ? "ok" : "DEGRADED");
}

static void print_nodes(const view_node *nodes, int nn, int json)
{
    if (json) {
        printf("[");
        for (int i = 0; i < nn; i++)
            printf("%s{\"id\": \"%s\", \"addr\": \"%s:%d\", \"role\": "
                   "\"%s\", \"partitions\": %u, \"keys\": %lld, "
                   "\"health\": \"%s\", \"ping_ms\": %.2f}",
                   i ? ", " : "", nodes[i].id, nodes[i].host, nodes[i].port,
                   nodes[i].role, nodes[i].parts, nodes[i].keys,
                   nodes[i].up ? "up" : "down", nodes[i].ping_ms);
        printf("]\n");
        return;
    }
    printf("%-40s  %-21s  %-8s  %10s  %10s  %-6s\n", "id", "address", "role",
           "partitions", "keys", "health");
    for (int i = 0; i < nn; i++) {
        char addr[96];
        snprintf(addr, sizeof(addr), "%s:%d", nodes[i].host, nodes[i].port);
        printf("%-40s  %-21s  %-8s  %10u  %10lld  %-6s\n", nodes[i].id, addr,
               nodes[i].role, nodes[i].parts, nodes[i].keys,
               nodes[i].up ? "up" : "DOWN");
    }
}

static void print_map(const view_node *nodes, int nn, int json)
{
    int first = 1;

    printf(json ? "[" : "%-13s  %-21s  %s\n", "partitions", "leader", "id");
    for (int i = 0; i < nn; i++) {
        for (unsigned k = 0; k < nodes[i].nranges; k++) {
            char range[32], addr[96];
            snprintf(range, sizeof(range), "%u-%u", nodes[i].ranges[k][0],
                     nodes[i].ranges[k][1]);
            snprintf(addr, sizeof(addr), "%s:%d", nodes[i].host, nodes[i].port);
            if (json)
                printf("%s{\"from\": %u, \"to\": %u, \"leader\": \"%s\", "
                       "\"id\": \"%s\"}",
                       first ? "" : ", ", nodes[i].ranges[k][0],
                       nodes[i].ranges[k][1], addr, nodes[i].id);
            else
                printf("%-13s  %-21s  %s\n", range, addr, nodes[i].id);
            first = 0;
        }
    }
    if (json)
        printf("]\n");
}

int pk_cli_cluster_view(int argc, char **argv)
{
    static view_node nodes[VIEW_NODES_MAX];
    const char *what = argv[0], *target = NULL;
    int json = 0, nn = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc) {
            target = argv[++i];
        } else {
            fprintf(stderr, "partkv cluster %s: bad option '%s'\n", what,
                    argv[i]);
            return 2;
        }
    }
    if (target == NULL) {
        fprintf(stderr,
                "partkv cluster %s: --cluster HOST:PORT is "
                "required\n",
                what);
        return 2;
    }
    rc = load(target, nodes, &nn);
    if (rc != 0)
        return rc;
    if (strcmp(what, "status") == 0)
        print_status(nodes, nn, json, cluster_ok(target));
    else if (strcmp(what, "nodes") == 0)
        print_nodes(nodes, nn, json);
    else
        print_map(nodes, nn, json);
    return 0;
}

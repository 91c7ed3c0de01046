/*
 * partkv top --cluster HOST:PORT [--interval SECONDS] [--once] [--json]
 *
 * A live view of a cluster, refreshed every --interval seconds (default
 * 1): its nodes (state, commands/s, clients, partitions led, keys), a
 * heat map of the partitions by load (reads + writes per second from each
 * partition's leader), the hottest keys of every node (PK.HOTKEYS) and
 * the moves running (PK.MOVES).  On a terminal the screen is redrawn and
 * the heat map coloured; otherwise each refresh is printed as plain lines.
 * --once prints one view and exits; --json prints it as one JSON object
 * (implies --once), for scripts.
 *
 * Everything comes from public commands of the nodes (PK.MAP on the node
 * named, INFO, PK.PARTITIONS, PK.HOTKEYS and PK.MOVES on every live node),
 * so a node that does not answer shows as such and the rest still shows.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"

#define HEAT_CELLS 256 /* partitions grouped into this many cells */
#define HOT_SHOWN 10

typedef struct node_view {
    int up; /* answered */
    double ops;
    long long clients, keys;
    uint32_t leads;
} node_view;

typedef struct hot_key {
    char *key; /* owned, printable */
    double reads, writes, err;
    long long part;
    const char *node;
} hot_key;

typedef struct view {
    pk_pmap *m;
    node_view *nodes;
    double *load;    /* per partition, from its leader */
    long long *keys; /* per partition, from its leader */
    hot_key *hot;
    size_t nhot;
    rb_session *moves;
    size_t nmoves;
} view;

static void view_free(view *v)
{
    for (size_t i = 0; i < v->nhot; i++)
        free(v->hot[i].key);
    free(v->hot);
    free(v->moves);
    free(v->nodes);
    free(v->load);
    free(v->keys);
    pk_pmap_free(v->m);
    memset(v, 0, sizeof(*v));
}

/* "field:value" of an INFO text, as a number (0 when absent). */
static double info_field(const char *info, const char *name)
{
    const char *p = info;
    size_t n = strlen(name);

    while (p && (p = strstr(p, name)) != NULL) {
        if ((p == info || p[-1] == '\n') && p[n] == ':')
            return atof(p + n + 1);
        p += n;
    }
    return 0;
}

static char *printable(const char *s, size_t len)
{
    char *out = malloc(len * 4 + 1), *p = out;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            *p++ = (char)c;
        else
            p += sprintf(p, "\\x%02x", c);
    }
    *p = '\0';
    return out;
}

static void add_hot(view *v, const pk_rr *e, const char *node)
{
    const pk_rr *k = pk__rb_field(e, "key");
    hot_key *n, *h;

    if (k == NULL || k->str == NULL ||
        (n = realloc(v->hot, (v->nhot + 1) * sizeof(*n))) == NULL)
        return;
    v->hot = n;
    h = &v->hot[v->nhot];
    h->key = printable(k->str, k->len);
    if (h->key == NULL)
        return;
    h->reads = pk_cli_number(pk__rb_field(e, "reads_per_sec"));
    h->writes = pk_cli_number(pk__rb_field(e, "writes_per_sec"));
    h->err = pk_cli_number(pk__rb_field(e, "error_per_sec"));
    h->part = (long long)pk_cli_number(pk__rb_field(e, "partition"));
    h->node = node;
    v->nhot++;
}

static int hotter(const void *a, const void *b)
{
    const hot_key *x = a, *y = b;
    double dx = x->reads + x->writes, dy = y->reads + y->writes;

    return dx < dy ? 1 : dx > dy ? -1 : 0;
}

/* One node's figures into v. */
static void poll_node(view *v, uint32_t id)
{
    const pk_pmap *m = v->m;
    const char *addr = m->nodes[id].addr;
    const char *info[] = {"INFO"}, *parts[] = {"PK.PARTITIONS"},
               *hot[] = {"PK.HOTKEYS", "COUNT", "10"};
    pk_rr *r = NULL;

    if (pk_cli_call(addr, 1, info, &r) == PK_OK && r->str) {
        v->nodes[id].up = 1;
        v->nodes[id].ops = info_field(r->str, "instantaneous_ops_per_sec");
        v->nodes[id].clients =
            (long long)info_field(r->str, "connected_clients");
    }
    pk_rr_free(r);
    r = NULL;
    if (pk_cli_call(addr, 1, parts, &r) == PK_OK && r->type == PK_RR_ARRAY)
        for (size_t i = 0; i < r->n; i++) {
            const pk_rr *e = &r->elems[i];
            double p = pk_cli_number(pk__rb_field(e, "partition"));
            long long keys = (long long)pk_cli_number(pk__rb_field(e, "keys"));
            if (p < 0 || p >= m->npartitions ||
                pk_pmap_leader(m, (uint32_t)p) != id)
                continue;
            v->load[(uint32_t)p] =
                pk_cli_number(pk__rb_field(e, "reads_per_sec")) +
                pk_cli_number(pk__rb_field(e, "writes_per_sec"));
            v->keys[(uint32_t)p] = keys;
            v->nodes[id].keys += keys;
        }
    pk_rr_free(r);
    r = NULL;
    if (pk_cli_call(addr, 3, hot, &r) == PK_OK && r->type == PK_RR_ARRAY)
        for (size_t i = 0; i < r->n; i++)
            add_hot(v, &r->elems[i], addr);
    pk_rr_free(r);
}

static int gather(const char *target, view *v)
{
    memset(v, 0, sizeof(*v));
    if (pk_cli_fetch_map("partkv top", target, &v->m) != 0)
        return 1;
    v->nodes = calloc(v->m->nnodes + 1, sizeof(*v->nodes));
    v->load = calloc(v->m->npartitions, sizeof(*v->load));
    v->keys = calloc(v->m->npartitions, sizeof(*v->keys));
    if (!v->nodes || !v->load || !v->keys) {
        view_free(v);
        return 1;
    }
    for (uint32_t p = 0; p < v->m->npartitions; p++) {
        uint32_t l = pk_pmap_leader(v->m, p);
        if (l != PK_NODE_NONE)
            v->nodes[l].leads++;
    }
    for (uint32_t id = 0; id < v->m->nnodes; id++)
        if (v->m->nodes[id].state != PK_NODE_REMOVED)
            poll_node(v, id);
    qsort(v->hot, v->nhot, sizeof(*v->hot), hotter);
    if (pk__rb_sessions(v->m, &v->moves, &v->nmoves) != 0) {
        v->moves = NULL;
        v->nmoves = 0;
    }
    return 0;
}

static const char *state_name(uint8_t st)
{
    static const char *const names[] = {"up", "draining", "down", "removed"};

    return st < 4 ? names[st] : "?";
}

static void print_json(const view *v)
{
    json_t *o = json_object(), *nodes = json_array(), *parts = json_array(),
           *hot = json_array(), *moves = json_array();
    char *s;

    for (uint32_t id = 0; id < v->m->nnodes; id++) {
        const pk_node *n = &v->m->nodes[id];
        const node_view *nv = &v->nodes[id];
        if (n->state == PK_NODE_REMOVED)
            continue;
        json_array_append_new(
            nodes,
            json_pack("{s:s,s:s,s:b,s:f,s:I,s:I,s:I}", "addr", n->addr, "state",
                      state_name(n->state), "answered", nv->up, "ops_per_sec",
                      nv->ops, "clients", (json_int_t)nv->clients, "leads",
                      (json_int_t)nv->leads, "keys", (json_int_t)nv->keys));
    }
    for (uint32_t p = 0; p < v->m->npartitions; p++)
        if (v->load[p] > 0 || v->keys[p] > 0)
            json_array_append_new(
                parts, json_pack("{s:I,s:f,s:I}", "partition", (json_int_t)p,
                                 "requests_per_sec", v->load[p], "keys",
                                 (json_int_t)v->keys[p]));
    for (size_t i = 0; i < v->nhot && i < HOT_SHOWN; i++)
        json_array_append_new(
            hot, json_pack("{s:s,s:f,s:f,s:f,s:I,s:s}", "key", v->hot[i].key,
                           "reads_per_sec", v->hot[i].reads, "writes_per_sec",
                           v->hot[i].writes, "error_per_sec", v->hot[i].err,
                           "partition", (json_int_t)v->hot[i].part, "node",
                           v->hot[i].node));
    for (size_t i = 0; i < v->nmoves; i++)
        json_array_append_new(moves,
                              json_pack("{s:s,s:s,s:I,s:I,s:s}", "from",
                                        v->m->nodes[v->moves[i].source].addr,
                                        "to", v->moves[i].target, "partitions",
                                        (json_int_t)v->moves[i].partitions,
                                        "bytes", (json_int_t)v->moves[i].bytes,
                                        "state", v->moves[i].state));
    json_object_set_new(o, "epoch", json_integer((json_int_t)v->m->epoch));
    json_object_set_new(o, "partitions", json_integer(v->m->npartitions));
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "loaded_partitions", parts);
    json_object_set_new(o, "hot_keys", hot);
    json_object_set_new(o, "moves", moves);
    s = json_dumps(o, JSON_INDENT(2));
    if (s)
        puts(s);
    free(s);
    json_decref(o);
}

/* The heat map: the partitions in HEAT_CELLS groups, 64 to a row, each
 * cell the hottest of its group against the hottest partition. */
static void print_heat(const view *v, int tty)
{
    static const char shades[] = " .:-=+*#%@";
    static const int colours[] = {0, 34, 34, 36, 36, 32, 33, 33, 31, 31};
    uint32_t np = v->m->npartitions, cells = np < HEAT_CELLS ? np : HEAT_CELLS;
    double max = 0;

    for (uint32_t p = 0; p < np; p++)
        max = v->load[p] > max ? v->load[p] : max;
    printf("heat: %u partitions in %u cells, hottest %.0f req/s ('@')\n", np,
           cells, max);
    for (uint32_t c = 0; c < cells; c++) {
        uint32_t lo = (uint32_t)((uint64_t)c * np / cells),
                 hi = (uint32_t)((uint64_t)(c + 1) * np / cells);
        double cell = 0;
        int shade;
        for (uint32_t p = lo; p < hi; p++)
            cell = v->load[p] > cell ? v->load[p] : cell;
        shade = max > 0 ? (int)(cell / max * 9 + 0.5) : 0;
        if (tty && shade)
            printf("\033[%dm%c\033[0m", colours[shade], shades[shade]);
        else
            putchar(shades[shade]);
        if (c % 64 == 63 || c + 1 == cells)
            putchar('\n');
    }
}

static void print_text(const view *v, const char *target, int tty)
{
    time_t now = time(NULL);
    char when[32];

    strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
    if (tty)
        printf("\033[H\033[2J");
    printf("partkv top  %s  cluster %s  map epoch %llu  %u partitions\n\n",
           when, target, (unsigned long long)v->m->epoch, v->m->npartitions);
    printf("%-22s %-9s %10s %8s %7s %10s\n", "node", "state", "ops/s",
           "clients", "leads", "keys");
    for (uint32_t id = 0; id < v->m->nnodes; id++) {
        const pk_node *n = &v->m->nodes[id];
        const node_view *nv = &v->nodes[id];
        if (n->state == PK_NODE_REMOVED)
            continue;
        if (nv->up)
            printf("%-22s %-9s %10.0f %8lld %7u %10lld\n", n->addr,
                   state_name(n->state), nv->ops, nv->clients, nv->leads,
                   nv->keys);
        else
            printf("%-22s %-9s %10s %8s %7u %10s\n", n->addr,
                   state_name(n->state), "-", "-", nv->leads, "-");
    }
    putchar('\n');
    print_heat(v, tty);
    printf("\nhot keys (sampled)\n%-32s %10s %10s %8s %9s  %s\n", "key",
           "reads/s", "writes/s", "+-", "partition", "node");
    for (size_t i = 0; i < v->nhot && i < HOT_SHOWN; i++)
        printf("%-32.32s %10.0f %10.0f %8.0f %9lld  %s\n", v->hot[i].key,
               v->hot[i].reads, v->hot[i].writes, v->hot[i].err, v->hot[i].part,
               v->hot[i].node);
    if (v->nhot == 0)
        printf("(none: no load, or --hotkeys-sample 0)\n");
    printf("\nmoves\n");
    for (size_t i = 0; i < v->nmoves; i++)
        printf("%s -> %s  %lld partitions  %lld bytes  %s\n",
               v->m->nodes[v->moves[i].source].addr, v->moves[i].target,
               (long long)v->moves[i].partitions, (long long)v->moves[i].bytes,
               v->moves[i].state);
    if (v->nmoves == 0)
        printf("(none)\n");
    fflush(stdout);
}

static volatile sig_atomic_t stop_now;

static void on_signal(int sig)
{
    (void)sig;
    stop_now = 1;
}

int pk_cli_top(int argc, char **argv)
{
    const char *target = NULL;
    int once = 0, json = 0, tty = isatty(STDOUT_FILENO);
    double interval = 1;

    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(argv[i], "--once") == 0) {
            once = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = once = 1;
        } else if (val && strcmp(argv[i], "--cluster") == 0 &&
                   pk_cli_host_port(val)) {
            target = argv[++i];
        } else if (val && strcmp(argv[i], "--interval") == 0 &&
                   (interval = strtod(val, &end)) >= 0.1 && *end == '\0' &&
                   interval <= 3600) {
            i++;
        } else {
            fprintf(stderr,
                    "partkv top: bad option '%s' (usage: partkv top "
                    "--cluster HOST:PORT [--interval S] [--once] "
                    "[--json])\n",
                    argv[i]);
            return 2;
        }
    }
    if (target == NULL) {
        fprintf(stderr, "partkv top: --cluster HOST:PORT is required\n");
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    do {
        view v;
        struct timespec ts = {(time_t)interval,
                              (long)((interval - (time_t)interval) * 1e9)};
        if (gather(target, &v) != 0)
            return 1;
        if (json)
            print_json(&v);
        else
            print_text(&v, target, tty);
        view_free(&v);
        if (!once)
            nanosleep(&ts, NULL);
    } while (!once && !stop_now);
    return 0;
}

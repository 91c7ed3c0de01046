/*
 * rebalance_plan: `partkv rebalance plan` -- read the live map and the
 * partition sizes, compute the moves under a policy, print a preview, and
 * store the plan in the coordinator.  Nothing moves here.
 *
 *   balanced     the core planner (pk_plan_compute_sized): every node at
 *                its share of partitions and, as near as whole partitions
 *                allow, of bytes; the fewest data moves
 *   cheapest     the same counts, but each node hands over its smallest
 *                partitions: the least copying, bytes left uneven
 *   ring         each partition's leader is where a consistent-hash ring
 *                / rendezvous hashing over the eligible nodes puts the
 *   rendezvous   partition id; shown to compare how much more they move
 *
 * The "theoretical minimum" printed beside the bytes a plan copies is
 * always taken from the balanced plan's per-node counts: a node that must
 * shed e replicas sheds at least its e smallest.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_placer.h"
#include "core/pk_plan.h"
#include "server/pk_sclient.h"

typedef struct plan_args {
    rb_target t;
    const char *policy;
    uint64_t rate;
    uint32_t max_concurrent;
    int json;
} plan_args;

/* Everything the plan command computes, freed by ctx_free. */
typedef struct plan_ctx {
    pk_pmap *m;
    pk_plan *balanced; /* may be NULL for ring/rendezvous */
    uint64_t *keys, *bytes;
    rb_plan plan;
} plan_ctx;

static int parse_plan(int argc, char **argv, plan_args *a)
{
    static const struct option opts[] = {
        RB_TARGET_OPTIONS,
        {"policy", required_argument, NULL, 'p'},
        {"rate", required_argument, NULL, 'r'},
        {"max-concurrent", required_argument, NULL, 'k'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    int ch, li = -1;

    memset(a, 0, sizeof(*a));
    a->policy = "balanced";
    a->rate = RB_DEFAULT_RATE;
    a->max_concurrent = RB_DEFAULT_CONCURRENT;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, &li)) != -1) {
        switch (ch) {
        case 'p':
            if (strcmp(optarg, "balanced") != 0 &&
                strcmp(optarg, "cheapest") != 0 &&
                strcmp(optarg, "ring") != 0 &&
                strcmp(optarg, "rendezvous") != 0)
                goto bad;
            a->policy = optarg;
            break;
        case 'r':
            if (pk__rb_parse_rate(optarg, &a->rate) != 0)
                goto bad;
            break;
        case 'k':
            if (pk__rb_parse_k(optarg, &a->max_concurrent) != 0)
                goto bad;
            break;
        case 'j':
            a->json = 1;
            break;
        default:
            if (!pk__rb_target_opt(ch, optarg, &a->t))
                goto bad;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "partkv rebalance plan: unexpected argument '%s'\n",
                argv[optind]);
        return -1;
    }
    if (a->t.cluster == NULL) {
        fprintf(stderr, "partkv rebalance plan: --cluster HOST:PORT is "
                        "required\n");
        return -1;
    }
    return 0;
bad:
    if (ch != '?' && li >= 0 && optarg)
        fprintf(stderr, "partkv rebalance plan: bad value '%s' for --%s\n",
                optarg, opts[li].name);
    else
        fprintf(stderr,
                "partkv rebalance plan: bad or incomplete option '%s'\n",
                argv[optind - 1]);
    return -1;
}

static int find(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return (int)i;
    return -1;
}

static int add_move(rb_plan *p, uint32_t part, uint32_t from, uint32_t to,
                    uint8_t role, uint8_t transfer)
{
    rb_move *grown = realloc(p->moves, (p->nmoves + 1) * sizeof(*grown));

    if (grown == NULL)
        return PK_ENOMEM;
    p->moves = grown;
    p->moves[p->nmoves++] = (rb_move){part, from, to, role, transfer, 0, 0};
    return PK_OK;
}

static int moves_balanced(plan_ctx *x)
{
    for (uint32_t i = 0; i < x->balanced->nmoves; i++) {
        const pk_move *mv = &x->balanced->moves[i];
        int rc = add_move(&x->plan, mv->part, mv->from, mv->to, mv->role,
                          mv->transfer);
        if (rc != PK_OK)
            return rc;
    }
    return PK_OK;
}

/* Leader of each partition where the placer puts its id, as a string. */
static int moves_placed(plan_ctx *x, pk_placer_kind kind)
{
    const pk_pmap *m = x->m;
    pk_place_node *nodes = calloc(m->nnodes ? m->nnodes : 1, sizeof(*nodes));
    pk_placer_opts o;
    pk_placer *pl = NULL;
    uint32_t n = 0;
    int rc;

    if (nodes == NULL)
        return PK_ENOMEM;
    for (uint32_t i = 0; i < m->nnodes; i++)
        if (m->nodes[i].state == PK_NODE_UP && m->nodes[i].weight > 0)
            nodes[n++] =
                (pk_place_node){i, m->nodes[i].name, m->nodes[i].weight};
    pk_placer_opts_default(&o);
    rc = pk_placer_new(kind, nodes, n, &o, &pl);
    for (uint32_t p = 0; rc == PK_OK && p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        char key[16];
        int len = snprintf(key, sizeof(key), "%" PRIu32, p);
        uint64_t h = pk_placer_hash(pl, key, (size_t)len);
        uint32_t to = pk_placer_owner(pl, key, (size_t)len, h);
        if (pt->nreplicas == 0 || to == pt->replicas[0] || to == PK_PLACE_NONE)
            continue;
        rc = add_move(&x->plan, p, pt->replicas[0], to, PK_ROLE_LEADER,
                      find(pt->replicas, pt->nreplicas, to) > 0);
    }
    pk_placer_free(pl);
    free(nodes);
    return rc;
}

/* Counts and bytes per node, before and after the plan's moves. */
static int node_stats(plan_ctx *x)
{
    rb_plan *p = &x->plan;
    pk_pmap *after = NULL;
    int rc = pk_pmap_clone(x->m, &after);

    p->nnodes = x->m->nnodes;
    p->nodes = calloc(p->nnodes ? p->nnodes : 1, sizeof(*p->nodes));
    if (rc != PK_OK || p->nodes == NULL) {
        pk_pmap_free(after);
        return PK_ENOMEM;
    }
    for (uint32_t i = 0; i < p->nmoves; i++)
        (void)pk__rb_edit_move(after, &p->moves[i]);
    for (int side = 0; side < 2; side++) {
        const pk_pmap *m = side ? after : x->m;
        for (uint32_t q = 0; q < m->npartitions; q++) {
            const pk_partition *pt = &m->parts[q];
            for (uint32_t r = 0; r < pt->nreplicas; r++) {
                rb_nodestat *s = &p->nodes[pt->replicas[r]];
                *(side ? &s->replicas_after : &s->replicas_before) += 1;
                *(side ? &s->bytes_after : &s->bytes_before) += x->bytes[q];
                if (r == 0)
                    *(side ? &s->leaders_after : &s->leaders_before) += 1;
            }
        }
    }
    pk_pmap_free(after);
    return PK_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Sum over nodes that must shed e replicas of their e smallest. */
static uint64_t min_bytes(const plan_ctx *x)
{
    const pk_pmap *m = x->m;
    const pk_plan *b = x->balanced;
    uint64_t total = 0, *sizes = malloc(m->npartitions * sizeof(*sizes));

    for (uint32_t id = 0; b && sizes && id < b->nnodes && id < m->nnodes;
         id++) {
        uint32_t e = b->replicas_before[id] > b->replicas_after[id]
                         ? b->replicas_before[id] - b->replicas_after[id]
                         : 0;
        uint32_t n = 0;
        if (e == 0)
            continue;
        for (uint32_t q = 0; q < m->npartitions; q++)
            if (find(m->parts[q].replicas, m->parts[q].nreplicas, id) >= 0)
                sizes[n++] = x->bytes[q];
        qsort(sizes, n, sizeof(*sizes), cmp_u64);
        for (uint32_t i = 0; i < e && i < n; i++)
            total += sizes[i];
    }
    free(sizes);
    return total;
}

static void make_id(char *id, size_t cap, uint64_t epoch)
{
    unsigned char raw[3] = {0};
    FILE *f = fopen("/dev/urandom", "rb");

    if (f == NULL || fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
        uint32_t r = (uint32_t)rand();
        memcpy(raw, &r, sizeof(raw));
    }
    if (f)
        fclose(f);
    snprintf(id, cap, "%" PRIu64 "-%02x%02x%02x", epoch, raw[0], raw[1],
             raw[2]);
}

/* Fills x from the live map.  Returns 0, or 1 after printing why. */
static int compute(pk_sclient *c, const plan_args *a, plan_ctx *x)
{
    uint64_t rev;
    int rc = pk__rb_map_get(c, &x->m, &rev);
    int cheapest = strcmp(a->policy, "cheapest") == 0;
    int balanced = cheapest || strcmp(a->policy, "balanced") == 0;

    if (rc != PK_OK) {
        fprintf(stderr, "partkv rebalance plan: cannot read the map: %s\n",
                pk_strerror(rc));
        return 1;
    }
    rc = pk__rb_sizes(x->m, &x->keys, &x->bytes);
    if (rc == PK_OK) {
        int brc = pk_plan_compute_sized(
            x->m, x->bytes,
            cheapest ? PK_PLAN_FEWEST_BYTES : PK_PLAN_FAIR_BYTES, &x->balanced);
        rc = balanced ? brc : PK_OK;
    }
    if (rc == PK_OK)
        rc = balanced ? moves_balanced(x)
                      : moves_placed(x, strcmp(a->policy, "ring") == 0
                                            ? PK_PLACER_RING
                                            : PK_PLACER_RENDEZVOUS);
    for (uint32_t i = 0; rc == PK_OK && i < x->plan.nmoves; i++) {
        x->plan.moves[i].keys = x->keys[x->plan.moves[i].part];
        x->plan.moves[i].bytes = x->bytes[x->plan.moves[i].part];
    }
    if (rc == PK_OK)
        rc = node_stats(x);
    if (rc != PK_OK) {
        fprintf(stderr, "partkv rebalance plan: cannot plan: %s\n",
                pk_strerror(rc));
        return 1;
    }
    x->plan.epoch = x->m->epoch;
    snprintf(x->plan.policy, sizeof(x->plan.policy), "%s", a->policy);
    x->plan.rate = a->rate;
    x->plan.max_concurrent = a->max_concurrent;
    x->plan.min_bytes = min_bytes(x);
    make_id(x->plan.id, sizeof(x->plan.id), x->plan.epoch);
    return 0;
}

static void ctx_free(plan_ctx *x)
{
    pk_pmap_free(x->m);
    pk_plan_free(x->balanced);
    free(x->keys);
    free(x->bytes);
    pk__rb_plan_free(&x->plan);
}

int pk__rb_cmd_plan(int argc, char **argv)
{
    plan_args a;
    plan_ctx x;
    pk_sclient *c = NULL;
    char key[128], *json = NULL;
    int status;

    if (parse_plan(argc, argv, &a) != 0)
        return 2;
    status = pk__rb_connect(&a.t, "rebalance plan", &c);
    if (status != 0)
        return status;
    memset(&x, 0, sizeof(x));
    status = compute(c, &a, &x);
    if (status == 0) {
        json = pk__rb_plan_json(&x.plan, x.m, 1);
        snprintf(key, sizeof(key), RB_PLAN_PREFIX "%s", x.plan.id);
        if (json == NULL || pk__rb_plans_prune(c) != PK_OK ||
            pk__rb_kv_put(c, key, json, strlen(json)) != PK_OK) {
            fprintf(stderr, "partkv rebalance plan: cannot store the plan\n");
            status = 1;
        }
        free(json);
        json = status == 0 && a.json ? pk__rb_plan_json(&x.plan, x.m, 0) : NULL;
    }
    if (status == 0 && a.json)
        printf("%s\n", json);
    else if (status == 0)
        pk__rb_preview(&x.plan, x.m, a.t.cluster);
    free(json);
    ctx_free(&x);
    pk_sclient_free(c);
    return status;
}

/*
 * partkv sim compare: every placement on the same keys, side by side --
 * balance (max/mean, deviation), keys moved by a resize next to the
 * optimum, replica-set churn and the cost of one lookup.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/keyset.h"
#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_placer.h"

#define NODES_MAX 100000u
#define TIMING_RUNS 3

typedef struct compare_args {
    uint32_t nodes, add, remove, replicas;
    size_t gen;
    const char *keys;
    pk_placer_opts o;
    int json;
} compare_args;

typedef struct result {
    double max_mean, dev, moved, churn, ns;
} result;

/* Parses a whole decimal number in [lo, hi]; 0 or -1 after a message. */
static int parse_num(const char *flag, const char *s, unsigned long lo,
                     unsigned long hi, unsigned long *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end != '\0' || errno || v < lo || v > hi) {
        fprintf(stderr,
                "partkv sim compare: %s needs a number from %lu to %lu, "
                "got '%s'\n",
                flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, compare_args *a)
{
    static const struct option opts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"add", required_argument, NULL, 'a'},
        {"remove", required_argument, NULL, 'r'},
        {"keys", required_argument, NULL, 'k'},
        {"gen", required_argument, NULL, 'g'},
        {"hash", required_argument, NULL, 'h'},
        {"vnodes", required_argument, NULL, 'v'},
        {"partitions", required_argument, NULL, 'p'},
        {"replicas", required_argument, NULL, 'R'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    unsigned long v = 0;
    int c, rc = 0;

    memset(a, 0, sizeof(*a));
    pk_placer_opts_default(&a->o);
    a->gen = 100000;
    a->replicas = 3;
    opterr = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            rc = parse_num("--nodes", optarg, 1, NODES_MAX, &v);
            a->nodes = (uint32_t)v;
            break;
        case 'a':
            rc = parse_num("--add", optarg, 1, NODES_MAX, &v);
            a->add = (uint32_t)v;
            break;
        case 'r':
            rc = parse_num("--remove", optarg, 1, NODES_MAX, &v);
            a->remove = (uint32_t)v;
            break;
        case 'k':
            a->keys = optarg;
            break;
        case 'g':
            rc = parse_num("--gen", optarg, 1, 100000000, &v);
            a->gen = v;
            break;
        case 'h':
            if (pk_hash_parse(optarg, &a->o.hash) != PK_OK) {
                fprintf(stderr,
                        "partkv sim compare: --hash must be xxh3, "
                        "md5 or murmur3, got '%s'\n",
                        optarg);
                rc = -1;
            }
            break;
        case 'v':
            rc = parse_num("--vnodes", optarg, 1, 100000, &v);
            a->o.vnodes = (uint32_t)v;
            break;
        case 'p':
            rc = parse_num("--partitions", optarg, 1, 1u << 20, &v);
            a->o.partitions = (uint32_t)v;
            break;
        case 'R':
            rc = parse_num("--replicas", optarg, 1, 7, &v);
            a->replicas = (uint32_t)v;
            break;
        case 'j':
            a->json = 1;
            break;
        default:
            fprintf(stderr,
                    "partkv sim compare: unknown or incomplete "
                    "option '%s'\n",
                    argv[optind - 1]);
            rc = -1;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "partkv sim compare: unexpected argument '%s'\n",
                argv[optind]);
        rc = -1;
    }
    if (rc == 0 && a->nodes == 0) {
        fprintf(stderr, "partkv sim compare: --nodes N is required\n");
        rc = -1;
    }
    if (rc == 0 && a->add && a->remove) {
        fprintf(stderr, "partkv sim compare: use --add or --remove, not "
                        "both\n");
        rc = -1;
    }
    if (rc == 0 && a->remove >= a->nodes) {
        fprintf(stderr, "partkv sim compare: --remove must leave at least "
                        "one node\n");
        rc = -1;
    }
    if (rc == 0 && !a->add && !a->remove)
        a->add = 1;
    a->o.replicas = (uint8_t)a->replicas;
    return rc;
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

/* Median ns per lookup (hash + owner) over all keys. */
static double time_lookups(const pk_placer *p, const pk_keyset *ks)
{
    double runs[TIMING_RUNS];
    volatile uint32_t sink = 0;

    for (int r = 0; r < TIMING_RUNS; r++) {
        double t0 = now_ns();
        for (size_t i = 0; i < ks->n; i++) {
            uint64_t h = pk_placer_hash(p, ks->key[i], ks->len[i]);
            sink += pk_placer_owner(p, ks->key[i], ks->len[i], h);
        }
        runs[r] = (now_ns() - t0) / (double)ks->n;
    }
    (void)sink;
    qsort(runs, TIMING_RUNS, sizeof(runs[0]), cmp_double);
    return runs[TIMING_RUNS / 2];
}

static int measure(pk_placer_kind kind, const compare_args *a,
                   const pk_place_node *nodes, const pk_keyset *ks, result *res)
{
    uint32_t before = a->nodes;
    uint32_t after = a->add ? a->nodes + a->add : a->nodes - a->remove;
    uint32_t R = a->replicas;
    uint64_t *counts = calloc(before, sizeof(*counts));
    pk_placer *p0 = NULL, *p1 = NULL;
    size_t moved = 0, churn = 0;
    int rc = PK_ENOMEM;

    if (counts == NULL)
        goto out;
    rc = pk_placer_new(kind, nodes, before, &a->o, &p0);
    if (rc == PK_OK)
        rc = pk_placer_resize(p0, nodes, after, &p1);
    if (rc != PK_OK)
        goto out;
    for (size_t i = 0; i < ks->n; i++) {
        uint32_t r0[8], r1[8], n0 = 0, n1 = 0;
        uint64_t h = pk_placer_hash(p0, ks->key[i], ks->len[i]);
        uint32_t o0 = pk_placer_owner(p0, ks->key[i], ks->len[i], h);
        uint32_t o1 = pk_placer_owner(p1, ks->key[i], ks->len[i], h);
        counts[o0]++;
        moved += o0 != o1;
        pk_placer_replicas(p0, ks->key[i], ks->len[i], h, R, r0, &n0);
        pk_placer_replicas(p1, ks->key[i], ks->len[i], h, R, r1, &n1);
        churn += !pk_keyset_same_set(r0, n0, r1, n1);
    }
    uint64_t max = 0;
    for (uint32_t i = 0; i < before; i++)
        max = counts[i] > max ? counts[i] : max;
    res->max_mean = (double)max * before / (double)ks->n;
    res->dev = pk_placer_deviation(counts, before);
    res->moved = 100.0 * (double)moved / (double)ks->n;
    res->churn = 100.0 * (double)churn / (double)ks->n;
    res->ns = time_lookups(p0, ks);
out:
    pk_placer_free(p0);
    pk_placer_free(p1);
    free(counts);
    return rc;
}

static void print_result(const compare_args *a, pk_placer_kind kind,
                         const result *r, double optimum, int first)
{
    if (a->json) {
        printf("%s\n    {\"placement\": \"%s\", \"max_over_mean\": %.6f, "
               "\"deviation_pct\": %.6f, \"moved_pct\": %.6f, "
               "\"optimum_pct\": %.6f, \"replica_churn_pct\": %.6f, "
               "\"lookup_ns\": %.2f}",
               first ? "" : ",", pk_placer_name(kind), r->max_mean, r->dev,
               r->moved, optimum, r->churn, r->ns);
        return;
    }
    printf("%-11s %9.3f %10.2f%% %8.2f%% %8.2f%% %7.2fx %9.2f%% %9.1f\n",
           pk_placer_name(kind), r->max_mean, r->dev, r->moved, optimum,
           optimum > 0 ? r->moved / optimum : 0, r->churn, r->ns);
}

static int run(const compare_args *a, const pk_keyset *ks)
{
    uint32_t total = a->nodes + a->add;
    pk_place_node *nodes = calloc(total, sizeof(*nodes));
    char *names = calloc(total, 24);
    double optimum = a->add ? 100.0 * a->add / (a->nodes + a->add)
                            : 100.0 * a->remove / a->nodes;
    int rc = PK_ENOMEM;

    if (nodes == NULL || names == NULL)
        goto out;
    for (uint32_t i = 0; i < total; i++) {
        snprintf(names + 24 * i, 24, "node-%u", i + 1);
        nodes[i] = (pk_place_node){i, names + 24 * i, 1.0};
    }
    if (a->json)
        printf("{\"nodes\": %u, \"after\": %u, \"keys\": %zu, \"hash\": "
               "\"%s\", \"vnodes\": %u, \"partitions\": %u, \"replicas\": "
               "%u, \"results\": [",
               a->nodes, a->add ? total : a->nodes - a->remove, ks->n,
               pk_hash_name(a->o.hash), a->o.vnodes, a->o.partitions,
               a->replicas);
    else
        printf("%zu keys, %u -> %u nodes, hash %s, ring %u vnodes, fixed "
               "%u partitions, replica sets of %u\n\n"
               "%-11s %9s %11s %9s %9s %8s %10s %9s\n",
               ks->n, a->nodes, a->add ? total : a->nodes - a->remove,
               pk_hash_name(a->o.hash), a->o.vnodes, a->o.partitions,
               a->replicas, "placement", "max/mean", "deviation", "moved",
               "optimum", "moved/opt", "churn", "lookup ns");
    for (int k = 0; k < PK_PLACER_COUNT; k++) {
        result r;
        rc = measure((pk_placer_kind)k, a, nodes, ks, &r);
        if (rc != PK_OK) {
            fprintf(stderr, "partkv sim compare: %s: %s\n",
                    pk_placer_name((pk_placer_kind)k), pk_strerror(rc));
            goto out;
        }
        print_result(a, (pk_placer_kind)k, &r, optimum, k == 0);
    }
    printf(a->json ? "\n]}\n" : "\n");
out:
    free(nodes);
    free(names);
    return rc;
}

int pk_cli_sim_compare(int argc, char **argv)
{
    compare_args a;
    pk_keyset ks;
    int rc;

    if (parse_args(argc, argv, &a) != 0)
        return 2;
    if (a.o.replicas > a.nodes - a.remove) {
        fprintf(stderr,
                "partkv sim compare: --replicas %u needs at least "
                "%u nodes after the resize\n",
                a.replicas, a.replicas);
        return 2;
    }
    rc = a.keys ? pk_keyset_load(&ks, a.keys)
                : pk_keyset_gen(&ks, "key-%d", a.gen);
    if (rc != PK_OK) {
        fprintf(stderr, "partkv sim compare: %s: %s\n",
                a.keys ? a.keys : "--gen",
                rc == PK_EIO ? strerror(errno) : pk_strerror(rc));
        return a.keys ? 2 : 1;
    }
    if (ks.n == 0) {
        fprintf(stderr, "partkv sim compare: %s holds no keys\n", a.keys);
        pk_keyset_free(&ks);
        return 2;
    }
    rc = run(&a, &ks);
    pk_keyset_free(&ks);
    return rc == PK_OK ? 0 : 1;
}

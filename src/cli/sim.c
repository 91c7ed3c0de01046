/*
 * partkv sim: partitioning experiments.
 *
 *   partkv sim reference [--json]
 *       every experiment of SEED-EXPERIMENTS.md, exactly as written
 *   partkv sim compare --nodes N [--add K | --remove K]
 *       [--keys FILE | --gen COUNT] [--hash xxh3|md5|murmur3] [--vnodes V]
 *       [--partitions P] [--replicas R] [--json]
 *       every placement on the same keys, side by side
 *
 * The maths lives in src/core (pk_placer); this file reads keys, times
 * lookups and prints.
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

#define REF_KEYS 100000

/* Owners of every key under one placer, plus per-node counts. */
typedef struct owners {
    uint32_t *owner;  /* owned, one per key */
    uint64_t *counts; /* owned, indexed by node id */
} owners;

static int owners_compute(const pk_placer *p, const pk_keyset *ks,
                          uint32_t nids, owners *o)
{
    o->owner = malloc(ks->n * sizeof(*o->owner));
    o->counts = calloc(nids, sizeof(*o->counts));
    if (o->owner == NULL || o->counts == NULL)
        return PK_ENOMEM;
    for (size_t i = 0; i < ks->n; i++) {
        uint64_t h = pk_placer_hash(p, ks->key[i], ks->len[i]);
        uint32_t id = pk_placer_owner(p, ks->key[i], ks->len[i], h);
        o->owner[i] = id;
        if (id < nids)
            o->counts[id]++;
    }
    return PK_OK;
}

static void owners_free(owners *o)
{
    free(o->owner);
    free(o->counts);
}

static double moved_pct(const owners *a, const owners *b, size_t n)
{
    size_t moved = 0;

    for (size_t i = 0; i < n; i++)
        moved += a->owner[i] != b->owner[i];
    return n ? 100.0 * (double)moved / (double)n : 0;
}

/* Nodes named names[0..n-1] with ids 0..n-1 and the given weights. */
static void make_nodes(pk_place_node *nodes, const char *const *names,
                       const double *weights, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        nodes[i].id = i;
        nodes[i].name = names[i];
        nodes[i].weight = weights ? weights[i] : 1.0;
    }
}

/*
 * Builds a placer over (names, weights) and computes owners; the ids are
 * positions in names, so two configurations that share a name prefix can
 * be compared key by key.
 */
static int place(pk_placer_kind kind, const pk_placer_opts *o,
                 const char *const *names, const double *weights, uint32_t n,
                 const pk_keyset *ks, owners *out, size_t *points)
{
    pk_place_node nodes[64];
    pk_placer *p;
    int rc;

    make_nodes(nodes, names, weights, n);
    rc = pk_placer_new(kind, nodes, n, o, &p);
    if (rc != PK_OK)
        return rc;
    rc = owners_compute(p, ks, 64, out);
    if (points)
        *points = pk_placer_points(p);
    pk_placer_free(p);
    return rc;
}

static void print_counts(const char *const *names, const uint64_t *counts,
                         uint32_t n, int json)
{
    for (uint32_t i = 0; i < n; i++) {
        if (json)
            printf("%s%llu", i ? ", " : "", (unsigned long long)counts[i]);
        else
            printf("  %s=%llu", names[i], (unsigned long long)counts[i]);
    }
}

static int ref_modn(const pk_keyset *ks, const pk_placer_opts *o, int json)
{
    static const uint32_t steps[][2] = {{4, 5}, {5, 6}, {10, 11}, {4, 8}};
    static const char *const names[] = {"0", "1", "2", "3", "4", "5",
                                        "6", "7", "8", "9", "10"};

    if (json)
        printf("  \"modn\": [");
    else
        printf("1. mod-N: owner = md5_64(key) mod N\n"
               "   %-8s %10s %10s\n",
               "N", "moved", "moved %");
    for (int s = 0; s < 4; s++) {
        owners a = {0}, b = {0};
        int rc =
            place(PK_PLACER_MODULO, o, names, NULL, steps[s][0], ks, &a, NULL);
        if (rc == PK_OK)
            rc = place(PK_PLACER_MODULO, o, names, NULL, steps[s][1], ks, &b,
                       NULL);
        if (rc != PK_OK)
            return rc;
        double pct = moved_pct(&a, &b, ks->n);
        if (json)
            printf("%s{\"from\": %u, \"to\": %u, \"moved_pct\": %.10f}",
                   s ? ", " : "", steps[s][0], steps[s][1], pct);
        else
            printf("   %2u -> %-2u %10.0f %9.2f%%\n", steps[s][0], steps[s][1],
                   pct * (double)ks->n / 100.0, pct);
        owners_free(&a);
        owners_free(&b);
    }
    printf(json ? "],\n" : "\n");
    return PK_OK;
}

static const char *const ring4[] = {"inv-bcn", "inv-vlc", "inv-gir", "inv-lle",
                                    "inv-tar"};

static int ref_ring(const pk_keyset *ks, pk_placer_opts o, int json)
{
    static const uint32_t vs[] = {1, 10, 150, 500, 1000};

    if (json)
        printf("  \"ring\": [");
    else
        printf("2. Ring with virtual nodes (points md5_64(\"name#i\"))\n"
               "   %-6s %7s  %-52s %9s\n",
               "V", "points", "keys per node", "deviation");
    for (int i = 0; i < 5; i++) {
        owners a = {0};
        size_t points = 0;
        o.vnodes = vs[i];
        int rc = place(PK_PLACER_RING, &o, ring4, NULL, 4, ks, &a, &points);
        if (rc != PK_OK)
            return rc;
        double dev = pk_placer_deviation(a.counts, 4);
        if (json) {
            printf("%s{\"vnodes\": %u, \"points\": %zu, \"counts\": [",
                   i ? ", " : "", vs[i], points);
            print_counts(ring4, a.counts, 4, 1);
            printf("], \"deviation_pct\": %.10f}", dev);
        } else {
            printf("   %-6u %7zu ", vs[i], points);
            print_counts(ring4, a.counts, 4, 0);
            printf("  %8.2f%%\n", dev);
        }
        owners_free(&a);
    }
    printf(json ? "],\n" : "\n");
    return PK_OK;
}

/* Experiments 3 and 4: ring V=150, add inv-tar / remove inv-vlc. */
static int ref_ring_change(const pk_keyset *ks, pk_placer_opts o, int json)
{
    static const char *const left[] = {"inv-bcn", "inv-gir", "inv-lle"};
    owners base = {0}, add = {0}, rem = {0};
    int rc;

    o.vnodes = 150;
    rc = place(PK_PLACER_RING, &o, ring4, NULL, 4, ks, &base, NULL);
    if (rc == PK_OK)
        rc = place(PK_PLACER_RING, &o, ring4, NULL, 5, ks, &add, NULL);
    if (rc == PK_OK)
        rc = place(PK_PLACER_RING, &o, left, NULL, 3, ks, &rem, NULL);
    if (rc != PK_OK)
        return rc;
    /* Owners are positions in the name list; map the 3-node list's
     * positions back to the 4-node list's before comparing. */
    static const uint32_t back[] = {0, 2, 3};
    for (size_t i = 0; i < ks->n; i++)
        rem.owner[i] = back[rem.owner[i]];
    double add_pct = moved_pct(&base, &add, ks->n);
    double rem_pct = moved_pct(&base, &rem, ks->n);
    if (json) {
        printf("  \"ring_add\": {\"moved_pct\": %.10f, \"counts\": [", add_pct);
        print_counts(ring4, add.counts, 5, 1);
        printf("]},\n  \"ring_remove\": {\"moved_pct\": %.10f, \"counts\": [",
               rem_pct);
        print_counts(left, rem.counts, 3, 1);
        printf("]},\n");
    } else {
        printf("3. Ring V=150, add inv-tar: moved %.2f%% (ideal 1/5 = "
               "20.00%%)\n  ",
               add_pct);
        print_counts(ring4, add.counts, 5, 0);
        printf("\n\n4. Ring V=150, remove inv-vlc: moved %.2f%% (only "
               "inv-vlc's keys)\n  ",
               rem_pct);
        print_counts(left, rem.counts, 3, 0);
        printf("\n\n");
    }
    owners_free(&base);
    owners_free(&add);
    owners_free(&rem);
    return PK_OK;
}

static int ref_weighted(const pk_keyset *ks, pk_placer_opts o, int json)
{
    static const char *const names[] = {"inv-bcn", "inv-vlc", "inv-gir"};
    static const double w[] = {2.0, 1.0, 1.0};
    owners a = {0};
    size_t points = 0;

    o.vnodes = 150;
    int rc = place(PK_PLACER_RING, &o, names, w, 3, ks, &a, &points);
    if (rc != PK_OK)
        return rc;
    if (json) {
        printf("  \"weighted\": {\"points\": %zu, \"counts\": [", points);
        print_counts(names, a.counts, 3, 1);
        printf("]},\n");
    } else {
        printf("5. Weighted ring V=150 (inv-bcn 2.0, inv-vlc 1.0, inv-gir "
               "1.0), %zu points\n",
               points);
        for (int i = 0; i < 3; i++)
            printf("   %-8s %6llu  %6.2f%%\n", names[i],
                   (unsigned long long)a.counts[i],
                   100.0 * (double)a.counts[i] / (double)ks->n);
        printf("\n");
    }
    owners_free(&a);
    return PK_OK;
}

static int ref_rendezvous(const pk_keyset *ks, const pk_placer_opts *o,
                          int json)
{
    static const char *const names[] = {"n1", "n2", "n3", "n4", "n5", "n6"};
    pk_place_node nodes[6];
    pk_placer *p5 = NULL, *p6 = NULL;
    owners a = {0};
    size_t moved = 0, churn = 0;
    int rc;

    make_nodes(nodes, names, NULL, 6);
    rc = pk_placer_new(PK_PLACER_RENDEZVOUS, nodes, 5, o, &p5);
    if (rc == PK_OK)
        rc = pk_placer_new(PK_PLACER_RENDEZVOUS, nodes, 6, o, &p6);
    if (rc == PK_OK)
        rc = owners_compute(p5, ks, 6, &a);
    for (size_t i = 0; rc == PK_OK && i < ks->n; i++) {
        uint32_t t5[3], t6[3], n5, n6;
        pk_placer_replicas(p5, ks->key[i], ks->len[i], 0, 3, t5, &n5);
        pk_placer_replicas(p6, ks->key[i], ks->len[i], 0, 3, t6, &n6);
        moved += t5[0] != t6[0];
        churn += !pk_keyset_same_set(t5, n5, t6, n6);
    }
    if (rc == PK_OK) {
        double dev = pk_placer_deviation(a.counts, 5);
        double mp = 100.0 * (double)moved / (double)ks->n;
        double cp = 100.0 * (double)churn / (double)ks->n;
        if (json) {
            printf("  \"rendezvous\": {\"counts\": [");
            print_counts(names, a.counts, 5, 1);
            printf("], \"deviation_pct\": %.10f, \"moved_pct\": %.10f, "
                   "\"replica_set_changed_pct\": %.10f},\n",
                   dev, mp, cp);
        } else {
            printf("6. Rendezvous (owner = max md5_64(\"node|key\")), "
                   "n1..n5\n  ");
            print_counts(names, a.counts, 5, 0);
            printf("\n   deviation %.2f%%; add n6: owner moved %.2f%% (ideal "
                   "1/6 = 16.67%%), top-3 set changed %.2f%% (about 3/6)\n\n",
                   dev, mp, cp);
        }
    }
    owners_free(&a);
    pk_placer_free(p5);
    pk_placer_free(p6);
    return rc;
}

static void ref_few_keys(int json)
{
    printf(json ? "  \"few_keys\": [" : "7. Partition = md5_64(key) mod 4\n");
    for (int i = 123; i <= 126; i++) {
        char k[32];
        int n = snprintf(k, sizeof(k), "P-2026-%06d", i);
        unsigned part = (unsigned)(pk_hash_md5_64(k, (size_t)n) % 4);
        if (json)
            printf("%s{\"key\": \"%s\", \"partition\": %u}",
                   i > 123 ? ", " : "", k, part);
        else
            printf("   %s -> partition %u\n", k, part);
    }
    printf(json ? "]\n" : "\n");
}

static int sim_reference(int argc, char **argv)
{
    pk_placer_opts o;
    pk_keyset ks;
    int json = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "partkv sim reference: unknown option '%s'\n",
                    argv[i]);
            return 2;
        }
    }
    if (pk_keyset_gen(&ks, "P-2026-%06d", REF_KEYS) != PK_OK) {
        fprintf(stderr, "partkv sim: out of memory\n");
        return 1;
    }
    pk_placer_opts_default(&o);
    o.hash = PK_HASH_MD5;
    if (json)
        printf("{\n");
    else
        printf("Reference experiments: %d keys P-2026-000001 .. "
               "P-2026-100000, hash md5_64\n\n",
               REF_KEYS);
    rc = ref_modn(&ks, &o, json);
    if (rc == PK_OK)
        rc = ref_ring(&ks, o, json);
    if (rc == PK_OK)
        rc = ref_ring_change(&ks, o, json);
    if (rc == PK_OK)
        rc = ref_weighted(&ks, o, json);
    if (rc == PK_OK)
        rc = ref_rendezvous(&ks, &o, json);
    if (rc == PK_OK) {
        ref_few_keys(json);
        if (json)
            printf("}\n");
    }
    pk_keyset_free(&ks);
    if (rc != PK_OK) {
        fprintf(stderr, "partkv sim: %s\n", pk_strerror(rc));
        return 1;
    }
    return 0;
}

int pk_cli_sim(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "reference") == 0)
        return sim_reference(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "compare") == 0)
        return pk_cli_sim_compare(argc - 1, argv + 1);
    fprintf(stderr, "usage: partkv sim reference [--json] | partkv sim "
                    "compare --nodes N [options]\n");
    return 2;
}

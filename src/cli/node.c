/*
 * partkv node drain|remove|weight: membership edits of the partition map.
 *
 *   partkv node drain ID --cluster HOST:PORT      state -> DRAINING
 *   partkv node remove ID --cluster HOST:PORT     state -> REMOVED, only
 *                                                 once it holds nothing
 *   partkv node weight ID W --cluster HOST:PORT   weight -> W
 *
 * ID is the node's 40-hex name, a unique prefix of at least 6 characters,
 * or its "host:port".  Each edit is one compare-and-swap of the map (epoch
 * + 1), redone on a fresh map if another change won the race.  None of
 * them moves data: drain and weight change what `rebalance plan` computes;
 * remove only retires a node the rebalance has already emptied.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "server/pk_sclient.h"

typedef struct node_edit {
    const char *verb, *spec;
    const char *what; /* "state" or "weight" */
    double weight;
    uint32_t id;
    char before[32], after[32]; /* what changed, for the report */
    char err[200];
} node_edit;

static const char *state_name(uint8_t s)
{
    static const char *names[] = {"up", "draining", "down", "removed"};

    return s < 4 ? names[s] : "?";
}

/* Replicas and learners the node still has, over all partitions. */
static void holdings(const pk_pmap *m, uint32_t id, uint32_t *reps,
                     uint32_t *learn)
{
    *reps = *learn = 0;
    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        for (uint32_t i = 0; i < pt->nreplicas; i++)
            *reps += pt->replicas[i] == id;
        for (uint32_t i = 0; i < pt->nlearners; i++)
            *learn += pt->learners[i] == id;
    }
}

static int set_state(node_edit *e, pk_pmap *m, pk_node_state want)
{
    uint32_t reps, learn;

    e->what = "state";
    snprintf(e->before, sizeof(e->before), "%s",
             state_name(m->nodes[e->id].state));
    snprintf(e->after, sizeof(e->after), "%s", state_name(want));
    if (m->nodes[e->id].state == want)
        return 1;
    if (want == PK_NODE_REMOVED) {
        holdings(m, e->id, &reps, &learn);
        if (reps || learn) {
            snprintf(e->err, sizeof(e->err),
                     "node %s still holds %u replicas and %u learner "
                     "copies; drain it and apply a rebalance first",
                     e->spec, reps, learn);
            return PK_EBUSY;
        }
    }
    return pk_pmap_node_set_state(m, e->id, want);
}

static int edit(pk_pmap *m, void *ctx)
{
    node_edit *e = ctx;
    int rc;

    e->err[0] = '\0';
    if (pk__rb_node_resolve(m, e->spec, &e->id, e->err, sizeof(e->err)) != 0)
        return PK_ENOTFOUND;
    if (m->nodes[e->id].state == PK_NODE_REMOVED &&
        strcmp(e->verb, "remove") != 0) {
        snprintf(e->err, sizeof(e->err), "node %s has been removed", e->spec);
        return PK_EINVAL;
    }
    if (strcmp(e->verb, "drain") == 0) {
        rc = set_state(e, m, PK_NODE_DRAINING);
    } else if (strcmp(e->verb, "remove") == 0) {
        rc = set_state(e, m, PK_NODE_REMOVED);
    } else {
        e->what = "weight";
        snprintf(e->before, sizeof(e->before), "%g", m->nodes[e->id].weight);
        snprintf(e->after, sizeof(e->after), "%g", e->weight);
        rc = m->nodes[e->id].weight == e->weight
                 ? 1
                 : pk_pmap_node_set_weight(m, e->id, e->weight);
    }
    if (rc == PK_OK)
        m->epoch++;
    return rc;
}

static int parse_node(int argc, char **argv, node_edit *e, rb_target *t)
{
    int want = strcmp(argv[0], "weight") == 0 ? 2 : 1, got = 0;
    const char *pos[2] = {NULL, NULL};

    memset(t, 0, sizeof(*t));
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--cluster") == 0) {
            t->cluster = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--secret") == 0) {
            t->secret = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--dir") == 0) {
            t->dir = argv[++i];
        } else if (argv[i][0] != '-' && got < want) {
            pos[got++] = argv[i];
        } else {
            fprintf(stderr, "partkv node %s: bad argument '%s'\n", argv[0],
                    argv[i]);
            return -1;
        }
    }
    if (got != want || t->cluster == NULL) {
        fprintf(stderr, "usage: partkv node %s ID%s --cluster HOST:PORT\n",
                argv[0], want == 2 ? " WEIGHT" : "");
        return -1;
    }
    e->verb = argv[0];
    e->spec = pos[0];
    if (want == 2) {
        char *end = NULL;
        e->weight = strtod(pos[1], &end);
        if (end == pos[1] || *end != '\0' || !isfinite(e->weight) ||
            e->weight < 0 || e->weight > 1e6) {
            fprintf(stderr,
                    "partkv node weight: bad weight '%s' (a number "
                    ">= 0)\n",
                    pos[1]);
            return -1;
        }
    }
    return 0;
}

int pk_cli_node(int argc, char **argv)
{
    node_edit e;
    rb_target t;
    pk_sclient *c = NULL;
    pk_pmap *m = NULL;
    char who[32], label[96];
    int rc, status;

    if (argc < 2 ||
        (strcmp(argv[1], "drain") != 0 && strcmp(argv[1], "remove") != 0 &&
         strcmp(argv[1], "weight") != 0)) {
        fprintf(stderr, "usage: partkv node drain|remove ID | node weight ID "
                        "W  --cluster HOST:PORT\n");
        return 2;
    }
    memset(&e, 0, sizeof(e));
    if (parse_node(argc - 1, argv + 1, &e, &t) != 0)
        return 2;
    snprintf(who, sizeof(who), "node %s", argv[1]);
    status = pk__rb_connect(&t, who, &c);
    if (status != 0)
        return status;
    rc = pk__rb_map_edit(c, edit, &e, &m);
    if (rc == PK_OK) {
        pk__rb_node_label(m, e.id, label, sizeof(label));
        if (strcmp(e.before, e.after) == 0)
            printf("node %s %s: %s already %s; map epoch %llu unchanged\n",
                   m->nodes[e.id].name, label, e.what, e.after,
                   (unsigned long long)m->epoch);
        else
            printf("node %s %s: %s %s -> %s; map epoch %llu\n",
                   m->nodes[e.id].name, label, e.what, e.before, e.after,
                   (unsigned long long)m->epoch);
    } else {
        fprintf(stderr, "partkv node %s: %s\n", argv[1],
                e.err[0] ? e.err : pk_strerror(rc));
    }
    pk_pmap_free(m);
    pk_sclient_free(c);
    return rc == PK_OK ? 0 : 1;
}

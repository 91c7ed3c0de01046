/*
 * pk_placer: dispatch over the placement modules.
 *
 * Replica sets for strategies that have no notion of their own:
 *   modulo, jump   the owner's bucket b, then b+1, b+2, ... (mod n), the
 *                  usual "next nodes" rule of such systems;
 *   maglev         the owners of h, h + G, h + 2G, ... (G the 64-bit golden
 *                  ratio) until R distinct nodes are found.
 * Ring walks clockwise, rendezvous takes the top R scores, fixed reads the
 * partition's replicas from the map.
 */
#include "pk_placer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_jump.h"
#include "pk_maglev.h"
#include "pk_plan.h"
#include "pk_pmap.h"
#include "pk_rendezvous.h"
#include "pk_ring.h"

#define GOLDEN64 0x9E3779B97F4A7C15ULL

struct pk_placer {
    pk_placer_kind kind;
    pk_placer_opts o;
    pk_hash_fn hash;
    uint32_t n;    /* nodes (modulo, jump) or map ids (fixed) */
    uint32_t *ids; /* owned: bucket or map id -> caller id */
    pk_ring *ring;
    pk_hrw *hrw;
    pk_maglev *maglev;
    pk_pmap *map; /* fixed only, owned */
};

static const char *const kind_names[PK_PLACER_COUNT] = {
    "modulo", "ring", "rendezvous", "jump", "maglev", "fixed"};

void pk_placer_opts_default(pk_placer_opts *o)
{
    o->hash = PK_HASH_XXH3;
    o->vnodes = 150;
    o->maglev_size = 65537;
    o->partitions = 16384;
    o->replicas = 1;
}

const char *pk_placer_name(pk_placer_kind kind)
{
    return (unsigned)kind < PK_PLACER_COUNT ? kind_names[kind] : "?";
}

void pk_placer_free(pk_placer *p)
{
    if (p == NULL)
        return;
    pk_ring_free(p->ring);
    pk_hrw_free(p->hrw);
    pk_maglev_free(p->maglev);
    pk_pmap_free(p->map);
    free(p->ids);
    free(p);
}

/* Rebuilds p->ids from the map: map id -> caller id of the node by name. */
static int fixed_ids(pk_placer *p, const pk_place_node *nodes, uint32_t n)
{
    free(p->ids);
    p->n = p->map->nnodes;
    p->ids = malloc((p->n ? p->n : 1) * sizeof(*p->ids));
    if (p->ids == NULL)
        return PK_ENOMEM;
    for (uint32_t i = 0; i < p->n; i++) {
        p->ids[i] = PK_PLACE_NONE;
        for (uint32_t j = 0; j < n; j++)
            if (strcmp(p->map->nodes[i].name, nodes[j].name) == 0)
                p->ids[i] = nodes[j].id;
    }
    return PK_OK;
}

/* Adds the nodes of the list that the map lacks, drains those it no longer
 * names, and lets the planner move what that requires. */
static int fixed_sync(pk_placer *p, const pk_place_node *nodes, uint32_t n)
{
    pk_pmap *m = p->map;
    pk_plan *plan = NULL;
    uint32_t id;
    int rc;

    for (uint32_t j = 0; j < n; j++) {
        if (pk_pmap_node_find(m, nodes[j].name, &id) == PK_OK)
            continue;
        rc = pk_pmap_node_add(m, nodes[j].name, NULL, NULL, nodes[j].weight,
                              &id);
        if (rc != PK_OK)
            return rc;
    }
    for (uint32_t i = 0; i < m->nnodes; i++) {
        int keep = 0;
        if (m->nodes[i].state == PK_NODE_REMOVED)
            continue;
        for (uint32_t j = 0; j < n && !keep; j++)
            keep = strcmp(m->nodes[i].name, nodes[j].name) == 0;
        if (!keep)
            m->nodes[i].state = PK_NODE_DRAINING;
    }
    rc = pk_plan_compute(m, &plan);
    if (rc == PK_OK)
        rc = pk_plan_apply(m, plan);
    pk_plan_free(plan);
    if (rc != PK_OK)
        return rc;
    for (uint32_t i = 0; i < m->nnodes; i++)
        if (m->nodes[i].state == PK_NODE_DRAINING)
            m->nodes[i].state = PK_NODE_REMOVED;
    return fixed_ids(p, nodes, n);
}

static int build(pk_placer *p, const pk_place_node *nodes, uint32_t n)
{
    switch (p->kind) {
    case PK_PLACER_MODULO:
    case PK_PLACER_JUMP:
        p->n = n;
        p->ids = malloc(n * sizeof(*p->ids));
        if (p->ids == NULL)
            return PK_ENOMEM;
        for (uint32_t i = 0; i < n; i++)
            p->ids[i] = nodes[i].id;
        return PK_OK;
    case PK_PLACER_RING:
        return pk_ring_new(nodes, n, p->o.vnodes, p->hash, &p->ring);
    case PK_PLACER_RENDEZVOUS:
        return pk_hrw_new(nodes, n, p->hash, &p->hrw);
    case PK_PLACER_MAGLEV:
        return pk_maglev_new(nodes, n, p->o.maglev_size, &p->maglev);
    case PK_PLACER_FIXED: {
        int rc = pk_pmap_new(PK_SCHEME_HASH, p->o.hash, p->o.partitions,
                             p->o.replicas, &p->map);
        if (rc != PK_OK)
            return rc;
        rc = fixed_sync(p, nodes, n);
        return rc;
    }
    case PK_PLACER_COUNT:
        break;
    }
    return PK_EINVAL;
}

static int placer_alloc(pk_placer_kind kind, const pk_placer_opts *o,
                        pk_placer **out)
{
    pk_placer *p;

    if ((unsigned)kind >= PK_PLACER_COUNT || pk_hash_get(o->hash) == NULL)
        return PK_EINVAL;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return PK_ENOMEM;
    p->kind = kind;
    p->o = *o;
    p->hash = pk_hash_get(o->hash);
    *out = p;
    return PK_OK;
}

int pk_placer_new(pk_placer_kind kind, const pk_place_node *nodes, uint32_t n,
                  const pk_placer_opts *o, pk_placer **out)
{
    pk_placer *p;
    int rc;

    if (n == 0)
        return PK_EEMPTY;
    rc = placer_alloc(kind, o, &p);
    if (rc != PK_OK)
        return rc;
    rc = build(p, nodes, n);
    if (rc != PK_OK) {
        pk_placer_free(p);
        return rc;
    }
    *out = p;
    return PK_OK;
}

int pk_placer_resize(const pk_placer *old, const pk_place_node *nodes,
                     uint32_t n, pk_placer **out)
{
    pk_placer *p;
    int rc;

    if (old->kind != PK_PLACER_FIXED)
        return pk_placer_new(old->kind, nodes, n, &old->o, out);
    if (n == 0)
        return PK_EEMPTY;
    rc = placer_alloc(old->kind, &old->o, &p);
    if (rc != PK_OK)
        return rc;
    rc = pk_pmap_clone(old->map, &p->map);
    if (rc == PK_OK)
        rc = fixed_sync(p, nodes, n);
    if (rc != PK_OK) {
        pk_placer_free(p);
        return rc;
    }
    *out = p;
    return PK_OK;
}

size_t pk_placer_points(const pk_placer *p)
{
    return p->ring ? pk_ring_points(p->ring) : 0;
}

uint64_t pk_placer_hash(const pk_placer *p, const void *key, size_t len)
{
    return p->hash(key, len);
}

uint32_t pk_placer_owner(const pk_placer *p, const void *key, size_t len,
                         uint64_t h)
{
    switch (p->kind) {
    case PK_PLACER_MODULO:
        return p->ids[pk_mod_bucket(h, p->n)];
    case PK_PLACER_JUMP:
        return p->ids[pk_jump_bucket(h, (int32_t)p->n)];
    case PK_PLACER_RING:
        return pk_ring_lookup(p->ring, h);
    case PK_PLACER_RENDEZVOUS:
        return pk_hrw_lookup(p->hrw, key, len);
    case PK_PLACER_MAGLEV:
        return pk_maglev_lookup(p->maglev, h);
    case PK_PLACER_FIXED: {
        uint32_t leader = p->map->parts[h % p->map->npartitions].replicas[0];
        return p->ids[leader];
    }
    case PK_PLACER_COUNT:
        break;
    }
    return PK_PLACE_NONE;
}

static void add_distinct(uint32_t *out, uint32_t *n, uint32_t id)
{
    for (uint32_t i = 0; i < *n; i++)
        if (out[i] == id)
            return;
    out[(*n)++] = id;
}

int pk_placer_replicas(const pk_placer *p, const void *key, size_t len,
                       uint64_t h, uint32_t R, uint32_t *out, uint32_t *nout)
{
    uint32_t n = 0;

    if (R == 0 || out == NULL)
        return PK_EINVAL;
    switch (p->kind) {
    case PK_PLACER_RING:
        return pk_ring_replicas(p->ring, h, R, out, nout);
    case PK_PLACER_RENDEZVOUS:
        return pk_hrw_top(p->hrw, key, len, R, out, nout);
    case PK_PLACER_MODULO:
    case PK_PLACER_JUMP: {
        uint32_t b = p->kind == PK_PLACER_MODULO
                         ? pk_mod_bucket(h, p->n)
                         : (uint32_t)pk_jump_bucket(h, (int32_t)p->n);
        for (uint32_t i = 0; i < R && i < p->n; i++)
            out[n++] = p->ids[(b + i) % p->n];
        break;
    }
    case PK_PLACER_MAGLEV:
        /* Bounded: after 64 * R probes accept fewer replicas. */
        for (uint32_t i = 0; n < R && i < 64 * R; i++)
            add_distinct(out, &n,
                         pk_maglev_lookup(p->maglev, h + i * GOLDEN64));
        break;
    case PK_PLACER_FIXED: {
        const pk_partition *pt = &p->map->parts[h % p->map->npartitions];
        for (uint32_t i = 0; i < pt->nreplicas && n < R; i++)
            out[n++] = p->ids[pt->replicas[i]];
        break;
    }
    case PK_PLACER_COUNT:
        return PK_EINVAL;
    }
    *nout = n;
    return PK_OK;
}

double pk_placer_deviation(const uint64_t *counts, uint32_t n)
{
    double mean = 0, var = 0;

    if (n == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        mean += (double)counts[i];
    mean /= n;
    if (mean == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        var += ((double)counts[i] - mean) * ((double)counts[i] - mean);
    return 100.0 * sqrt(var / n) / mean;
}

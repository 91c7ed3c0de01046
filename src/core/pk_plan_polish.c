/*
 * pk_plan_polish: makes the greedy replica phase optimal by cancelling the
 * negative cycles of the min-cost flow it is.
 *
 * The replica phases meet the lower bound whenever only the counts
 * constrain the plan.  Distinct nodes and zones can put the bound out of
 * reach, and there a greedy choice may cost a few copies more than needed.
 * The assignment is a min-cost flow (partitions -> nodes; a copy costs 1,
 * a kept replica 0), optimal iff its residual graph has no negative cycle.
 * Contracted onto nodes, edge a -> b means "some partition may trade its
 * replica on a for one on b", at cost [b is new to it] - [a is new to it]
 * in {-1, 0, 1}; vertex T joins nodes that may lose one (count > floor)
 * to nodes that may gain one (count < ceil).
 *
 *   a --(-1..1)--> b      ecnt[a][b][cost + 1] partitions realise it
 *   T ----(0)----> b      b may lose a replica (cnt > rlo)
 *   a ----(0)----> T      a may gain a replica (cnt < rhi)
 *
 * Bellman-Ford finds a negative cycle, distinct partitions realise its
 * edges, and this repeats until no cycle is left -- an optimal plan -- or
 * a cycle cannot be realised (rare; the plan is then kept as it is).
 * O(ne^3) per cycle, so it runs only up to POLISH_MAX_NODES eligible
 * nodes.
 */
#include <stdlib.h>

#include "pk_err.h"
#include "pk_plan_int.h"

#define POLISH_MAX_NODES 256

typedef struct polish {
    uint32_t *ecnt;  /* [ne * ne * 3]: partitions per edge a->b and cost */
    long *dist;      /* [ne + 1] */
    uint32_t *pred;  /* [ne + 1] */
    uint32_t *cyc;   /* [ne + 2] vertices of the cycle */
    uint32_t *cpart; /* [ne + 2] partition realising each edge */
} polish;

/* Adds (sign 1) or removes (-1) the edges partition p contributes. */
static void contrib(const pk__plan_ctx *c, polish *g, uint32_t p, int sign)
{
    const uint32_t *s = pk__plan_slots(c, p);

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        uint32_t a = s[i], *row;
        int ca;
        if (a == PK__NONE || !c->elig[a]) {
            continue;
        }
        ca = !pk__plan_in_init(c, p, a);
        row = g->ecnt + (size_t)c->elpos[a] * c->ne * 3;
        for (uint32_t j = 0; j < c->ne; j++) {
            uint32_t b = c->el[j], *e;
            if (pk__plan_slot_index(c, p, b) >= 0 ||
                pk__plan_zone_count(c, p, c->zone[b], a) >= c->zcap) {
                continue;
            }
            e = &row[j * 3 + (uint32_t)(1 + !pk__plan_in_init(c, p, b) - ca)];
            *e = sign > 0 ? *e + 1 : *e - 1;
        }
    }
}

/* Cost of edge a -> b between vertices (c->ne is T); 0 when absent. */
static int edge(const pk__plan_ctx *c, const polish *g, uint32_t a, uint32_t b,
                int *w)
{
    const uint32_t *e;

    *w = 0;
    if (a == b) {
        return 0;
    }
    if (a == c->ne) {
        return c->cnt[c->el[b]] > c->rlo[c->el[b]];
    }
    if (b == c->ne) {
        return c->cnt[c->el[a]] < c->rhi[c->el[a]];
    }
    e = g->ecnt + ((size_t)a * c->ne + b) * 3;
    for (int k = 0; k < 3; k++) {
        if (e[k] > 0) {
            *w = k - 1;
            return 1;
        }
    }
    return 0;
}

/* Bellman-Ford from a virtual source; returns the length of a negative
 * cycle left in g->cyc (edges cyc[i] -> cyc[i + 1], wrapping), or 0. */
static uint32_t find_cycle(const pk__plan_ctx *c, polish *g)
{
    uint32_t nv = c->ne + 1, x = PK__NONE, k = 0, y;
    int w;

    for (uint32_t v = 0; v < nv; v++) {
        g->dist[v] = 0;
        g->pred[v] = PK__NONE;
    }
    for (uint32_t it = 0; it < nv; it++) {
        x = PK__NONE;
        for (uint32_t a = 0; a < nv; a++) {
            for (uint32_t b = 0; b < nv; b++) {
                if (edge(c, g, a, b, &w) && g->dist[a] + w < g->dist[b]) {
                    g->dist[b] = g->dist[a] + w;
                    g->pred[b] = a;
                    x = b;
                }
            }
        }
        if (x == PK__NONE) {
            return 0;
        }
    }
    for (uint32_t i = 0; i < nv; i++) {
        x = g->pred[x]; /* now surely on the cycle */
    }
    y = x;
    do {
        g->cyc[k++] = y;
        y = g->pred[y];
    } while (y != x && k <= nv);
    for (uint32_t i = 0; i < k / 2; i++) { /* pred runs backwards */
        uint32_t t = g->cyc[i];
        g->cyc[i] = g->cyc[k - 1 - i];
        g->cyc[k - 1 - i] = t;
    }
    return k;
}

/* A partition on x, not yet used by this cycle, that may trade x for y at
 * cost w; PK__NONE when there is none. */
static uint32_t cycle_part(pk__plan_ctx *c, const polish *g, uint32_t i,
                           uint32_t x, uint32_t y, int w)
{
    uint32_t n = pk__plan_node_parts(c, x);

    for (uint32_t k = 0; k < n; k++) {
        uint32_t p = c->tmp[k];
        if (pk__plan_find(g->cpart, i, p) < 0 &&
            pk__plan_slot_index(c, p, y) < 0 &&
            pk__plan_zone_count(c, p, c->zone[y], x) < c->zcap &&
            !pk__plan_in_init(c, p, y) - !pk__plan_in_init(c, p, x) == w) {
            return p;
        }
    }
    return PK__NONE;
}

/* Realises the k-edge cycle in g->cyc.  Returns 0, PK_ENOTFOUND or
 * PK_ENOMEM. */
static int apply_cycle(pk__plan_ctx *c, polish *g, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++) {
        uint32_t a = g->cyc[i], b = g->cyc[(i + 1) % k];
        int w;
        g->cpart[i] = PK__NONE;
        if (a == c->ne || b == c->ne) {
            continue;
        }
        (void)edge(c, g, a, b, &w);
        g->cpart[i] = cycle_part(c, g, i, c->el[a], c->el[b], w);
        if (g->cpart[i] == PK__NONE) {
            return PK_ENOTFOUND;
        }
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t p = g->cpart[i], x, y;
        int rc;
        if (p == PK__NONE) {
            continue;
        }
        x = c->el[g->cyc[i]];
        y = c->el[g->cyc[(i + 1) % k]];
        contrib(c, g, p, -1);
        rc = pk__plan_slot_set(c, p, (uint32_t)pk__plan_slot_index(c, p, x), y);
        contrib(c, g, p, 1);
        if (rc != PK_OK) {
            return rc;
        }
    }
    return PK_OK;
}

uint32_t pk__plan_bound(const pk__plan_ctx *c)
{
    uint32_t b = 0;

    for (uint32_t p = 0; p < c->np; p++) {
        b += c->ninit[p] < c->r ? c->r - c->ninit[p] : 0;
    }
    for (uint32_t n = 0; n < c->nn; n++) {
        b += c->before[n] > c->q[n] ? c->before[n] - c->q[n] : 0;
    }
    return b;
}

/* Data moves of the working assignment: per partition, the larger of the
 * nodes added and the nodes removed. */
static uint32_t data_moves(const pk__plan_ctx *c)
{
    uint32_t k = 0;

    for (uint32_t p = 0; p < c->np; p++) {
        const uint32_t *s = pk__plan_slots(c, p);
        uint32_t kept = 0;
        for (uint32_t i = 0; i < c->nrep[p]; i++) {
            kept += pk__plan_in_init(c, p, s[i]);
        }
        k += (c->nrep[p] > c->ninit[p] ? c->nrep[p] : c->ninit[p]) - kept;
    }
    return k;
}

int pk__plan_polish(pk__plan_ctx *c)
{
    polish g;
    size_t nv = (size_t)c->ne + 2;
    int rc = PK_ENOMEM;

    if (c->ne < 2 || c->ne > POLISH_MAX_NODES ||
        data_moves(c) == pk__plan_bound(c)) {
        return PK_OK; /* already optimal, or too big to polish */
    }
    g.ecnt = calloc((size_t)c->ne * c->ne * 3, sizeof(*g.ecnt));
    g.dist = calloc(nv, sizeof(*g.dist));
    g.pred = calloc(nv, sizeof(*g.pred));
    g.cyc = calloc(nv, sizeof(*g.cyc));
    g.cpart = calloc(nv, sizeof(*g.cpart));
    if (!g.ecnt || !g.dist || !g.pred || !g.cyc || !g.cpart) {
        goto out;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        contrib(c, &g, p, 1);
    }
    rc = PK_OK;
    for (uint32_t k; rc == PK_OK && (k = find_cycle(c, &g)) > 0;) {
        rc = apply_cycle(c, &g, k);
    }
    rc = rc == PK_ENOTFOUND ? PK_OK : rc;
out:
    free(g.ecnt);
    free(g.dist);
    free(g.pred);
    free(g.cyc);
    free(g.cpart);
    return rc;
}

/*
 * pk_plan_fill: phases C and B of the replica phase, greedy.
 *
 *   C  pk__plan_fill_holes  put each hole on the most urgent under-quota
 *                           node that may take it (furthest below quota
 *                           per partition it could still take; ties
 *                           round-robin after the leader)
 *   B  pk__plan_shed        each node above quota hands partitions to
 *                           under-quota nodes -- leader replicas while it
 *                           leads too many, so that leadership travels
 *                           with the data
 *
 * Only over-quota nodes give and only under-quota nodes take, so the data
 * moves meet the lower bound sum(max(0, before - quota)) + missing.  When
 * no under-quota node may take a partition (all already hold it, or their
 * zone is full), relieve() finds the cheapest chain of hand-overs to one:
 * a 0-1 BFS over nodes where re-targeting a copy already planned costs
 * nothing and moving a replica that was staying costs one move.
 *
 *   over ---p1---> w ---p2---> under        p2 was planned onto w: free
 */
#include <stdlib.h>

#include "pk_err.h"
#include "pk_plan_int.h"

/* Is v a more urgent taker than b: further below quota per partition
 * with a hole it could still fill?  A node whose share is capped at np has
 * urgency 1 and must take every partition it can. */
static int more_urgent(const pk__plan_ctx *c, uint32_t v, uint32_t b)
{
    int64_t dv = (int64_t)c->q[v] - c->cnt[v],
            db = (int64_t)c->q[b] - c->cnt[b];
    int64_t av = c->avail[v] > 0 ? c->avail[v] : 1;
    int64_t ab = c->avail[b] > 0 ? c->avail[b] : 1;

    return dv * ab > db * av;
}

/*
 * An under-quota node for slot i of p (replacing ex, or PK__NONE): for a
 * leader slot the one wanting leadership most, then the most urgent (see
 * more_urgent), ties going round-robin after p's leader.  PK__NONE when
 * no under-quota node may take it.
 */
static uint32_t pick_under(const pk__plan_ctx *c, uint32_t p, uint32_t i,
                           uint32_t ex)
{
    uint32_t best = PK__NONE, lead = pk__plan_slots(c, p)[0], start = 0;

    if (i > 0 && lead != PK__NONE && c->elig[lead]) {
        start = c->elpos[lead] + 1;
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[(start + j) % c->ne];
        if (c->cnt[v] >= c->q[v] || !pk__plan_allowed(c, p, v, ex)) {
            continue;
        }
        if (best != PK__NONE && i == 0 &&
            pk__plan_lneed(c, v) != pk__plan_lneed(c, best)) {
            best = pk__plan_lneed(c, v) > pk__plan_lneed(c, best) ? v : best;
        } else if (best == PK__NONE || more_urgent(c, v, best)) {
            best = v;
        }
    }
    return best;
}

/* Any node that may take a new replica of p, the least over quota. */
static uint32_t pick_any(const pk__plan_ctx *c, uint32_t p)
{
    uint32_t best = PK__NONE;

    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[j];
        if (pk__plan_allowed(c, p, v, PK__NONE) &&
            (best == PK__NONE ||
             pk__plan_excess(c, v) < pk__plan_excess(c, best))) {
            best = v;
        }
    }
    return best;
}

/*
 * Relaxes the edges out of node w at distance d: w may hand any partition
 * p it holds to any node v allowed to take it.  That costs the change in
 * the number of nodes added to p: 0 when w's copy was itself planned (or v
 * held p before), 1 when w's copy was staying.  For each v one cheapest
 * partition is enough.  Returns an under-quota node reached at cost d --
 * nothing can be closer -- or PK__NONE.
 */
static uint32_t expand(pk__plan_ctx *c, uint32_t w, uint32_t d, uint32_t *ncur,
                       uint32_t *nnext)
{
    uint32_t n = pk__plan_node_parts(c, w);

    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[j], bp = PK__NONE, nd;
        int best = 2;
        if (c->done[v] || v == w || c->dist[v] <= d) {
            continue;
        }
        for (uint32_t k = 0; k < n && best > 0; k++) {
            uint32_t p = c->tmp[k];
            int cost;
            if (!pk__plan_allowed(c, p, v, w)) {
                continue;
            }
            cost = !pk__plan_in_init(c, p, v) - !pk__plan_in_init(c, p, w);
            if (cost < best) {
                best = cost;
                bp = p;
            }
        }
        nd = d + (best > 0);
        if (bp == PK__NONE || nd >= c->dist[v]) {
            continue;
        }
        c->dist[v] = nd;
        c->pnode[v] = w;
        c->ppart[v] = bp;
        if (best > 0) {
            c->qb[(*nnext)++] = v;
        } else if (c->cnt[v] < c->q[v]) {
            return v;
        } else {
            c->qa[(*ncur)++] = v;
        }
    }
    return PK__NONE;
}

/*
 * Moves one replica's worth of load off over-quota node u along the
 * cheapest chain of hand-overs ending at an under-quota node.  Returns 0
 * when something moved, PK_ENOTFOUND when no chain exists, or PK_ENOMEM.
 */
static int relieve(pk__plan_ctx *c, uint32_t u)
{
    uint32_t ncur = 1, nnext = 0, d = 0, t = PK__NONE;
    int moved = 0, rc;

    for (uint32_t j = 0; j < c->ne; j++) {
        c->dist[c->el[j]] = PK__INF;
        c->done[c->el[j]] = 0;
    }
    c->dist[u] = 0;
    c->qa[0] = u;
    while (ncur > 0 && t == PK__NONE) {
        uint32_t *sw;
        for (uint32_t h = 0; h < ncur; h++) {
            uint32_t w = c->qa[h];
            if (c->done[w] || c->dist[w] != d) {
                continue;
            }
            c->done[w] = 1;
            if (w != u && c->cnt[w] < c->q[w]) {
                t = w;
                break;
            }
            t = expand(c, w, d, &ncur, &nnext);
            if (t != PK__NONE) {
                break;
            }
        }
        sw = c->qa;
        c->qa = c->qb;
        c->qb = sw;
        ncur = nnext;
        nnext = 0;
        d++;
    }
    /* Walk back from the under-quota end; each step is re-checked since a
     * chain may pass the same partition twice. */
    while (t != PK__NONE && t != u) {
        uint32_t w = c->pnode[t], p = c->ppart[t];
        int i = pk__plan_slot_index(c, p, w);
        if (i < 0 || !pk__plan_allowed(c, p, t, w)) {
            break;
        }
        rc = pk__plan_slot_set(c, p, (uint32_t)i, t);
        if (rc != PK_OK) {
            return rc;
        }
        moved = 1;
        t = w;
    }
    return moved ? PK_OK : PK_ENOTFOUND;
}

/* relieve() until u is within quota or no chain is left. */
static int relieve_all(pk__plan_ctx *c, uint32_t u)
{
    uint32_t stalls = 0;

    while (c->cnt[u] > c->q[u] && stalls < 4 * c->ne + 8) {
        uint32_t had = c->cnt[u];
        int rc = relieve(c, u);
        if (rc == PK_ENOTFOUND) {
            break;
        }
        if (rc != PK_OK) {
            return rc;
        }
        /* a chain cut short moves load without relieving u */
        stalls += c->cnt[u] == had;
    }
    return PK_OK;
}

/* Counts (sign 1) or uncounts (-1) partition p in the avail of every
 * node that may fill one of its holes. */
static void avail_count(pk__plan_ctx *c, uint32_t p, int sign)
{
    if (c->hleft[p] == 0) {
        return;
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        if (pk__plan_allowed(c, p, c->el[j], PK__NONE)) {
            c->avail[c->el[j]] += sign;
        }
    }
}

int pk__plan_fill_holes(pk__plan_ctx *c, int relieve_ok)
{
    for (uint32_t h = 0; h < c->nholes; h++) {
        c->hleft[c->holes[h] / PK_REPLICAS_MAX]++;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        avail_count(c, p, 1);
    }
    for (uint32_t h = 0; h < c->nholes; h++) {
        uint32_t p = c->holes[h] / PK_REPLICAS_MAX;
        uint32_t i = c->holes[h] % PK_REPLICAS_MAX;
        uint32_t v = pick_under(c, p, i, PK__NONE);
        int rc;

        if (v == PK__NONE) {
            v = pick_any(c, p);
        }
        if (v == PK__NONE) {
            return PK_EINFEASIBLE; /* pk__plan_quotas rules this out */
        }
        avail_count(c, p, -1);
        c->hleft[p]--;
        rc = pk__plan_slot_set(c, p, i, v);
        avail_count(c, p, 1);
        if (rc == PK_OK && relieve_ok) {
            rc = relieve_all(c, v);
        }
        if (rc != PK_OK) {
            return rc;
        }
    }
    return PK_OK;
}

/* Should over-quota node u hand over a partition it leads? */
static int want_leader(const pk__plan_ctx *c, uint32_t u)
{
    if (c->lc[u] > c->lhi[u]) {
        return 1;
    }
    if (c->lc[u] <= c->llo[u]) {
        return 0;
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[j];
        if (c->cnt[v] < c->q[v] && c->lc[v] < c->llo[v]) {
            return 1;
        }
    }
    return 0;
}

/* Sort key of a partition a node may shed: distance of its size from
 * the size the node should hand over on average (0: smallest first). */
typedef struct shed_key {
    const uint64_t *size;
    uint64_t want;
} shed_key;

static int by_fit(const void *a, const void *b, void *ctx)
{
    const shed_key *k = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint64_t sx = k->size[x], sy = k->size[y];
    uint64_t dx = sx > k->want ? sx - k->want : k->want - sx;
    uint64_t dy = sy > k->want ? sy - k->want : k->want - sy;

    if (dx != dy) {
        return dx < dy ? -1 : 1;
    }
    return x < y ? -1 : x > y; /* deterministic */
}

/*
 * Orders the n partitions of node u in c->tmp for shedding when sizes are
 * known.  PK_PLAN_FEWEST_BYTES: smallest first -- the least copying, but
 * the node keeps its big partitions.  PK_PLAN_FAIR_BYTES: those closest to
 * the average the node must hand over to come down to its share of the
 * bytes, so bytes balance along with counts.
 */
static void order_shed(pk__plan_ctx *c, uint32_t u, uint32_t n)
{
    shed_key k = {c->size, 0};
    uint64_t mine = 0, total = 0;
    uint32_t excess = c->cnt[u] > c->q[u] ? c->cnt[u] - c->q[u] : 1;

    if (c->sizing == PK_PLAN_FAIR_BYTES) {
        for (uint32_t p = 0; p < c->np; p++) {
            total += c->size[p];
        }
        for (uint32_t i = 0; i < n; i++) {
            mine += c->size[c->tmp[i]];
        }
        double target = (double)total * c->share[u] / (double)c->np;
        if ((double)mine > target) {
            k.want = (uint64_t)(((double)mine - target) / excess);
        }
    }
    qsort_r(c->tmp, n, sizeof(*c->tmp), by_fit, &k);
}

/* Hands partitions to under-quota nodes until u is within quota: first
 * those whose role matches want_leader(), then any, then chains. */
int pk__plan_shed(pk__plan_ctx *c, uint32_t u)
{
    for (int pass = 0; pass < 2 && c->cnt[u] > c->q[u]; pass++) {
        uint32_t n = pk__plan_node_parts(c, u);
        if (c->size) {
            order_shed(c, u, n);
        }
        for (uint32_t k = 0; k < n && c->cnt[u] > c->q[u]; k++) {
            uint32_t p = c->tmp[k], v;
            int i = pk__plan_slot_index(c, p, u), rc;
            if (i < 0 || (pass == 0 && (i == 0) != want_leader(c, u))) {
                continue;
            }
            v = pick_under(c, p, (uint32_t)i, u);
            if (v == PK__NONE) {
                continue;
            }
            rc = pk__plan_slot_set(c, p, (uint32_t)i, v);
            if (rc != PK_OK) {
                return rc;
            }
        }
    }
    return relieve_all(c, u);
}

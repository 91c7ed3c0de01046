/*
 * pk_plan_lead: the leader phase -- balance leadership by transfers
 * between replicas already placed, so no data is copied.
 *
 * It runs after the replica phases, which leave every replica where it
 * will be; here only the order of a partition's slots changes (which one
 * is slot 0), so replica counts are untouched.  Leadership moves until
 * every leader count is within [llo, lhi], the floor and ceiling of the
 * leader share: first single transfers from a leader with too many to a
 * follower with too few, then along shortest chains of transfers (BFS over
 * "u leads p, f follows p" edges) from nodes above the ceiling, then to
 * nodes below the floor.
 *
 *   u ==p1==> f1 ==p2==> f2       u leads p1, f1 follows p1 and leads p2,
 *                                 f2 follows p2: after two transfers u
 *                                 leads one less and f2 one more
 */
#include "pk_err.h"
#include "pk_plan_int.h"

/* Makes the follower in slot j of p its leader. */
static void transfer(pk__plan_ctx *c, uint32_t p, uint32_t j)
{
    uint32_t *s = pk__plan_slots(c, p), a = s[0];

    s[0] = s[j];
    s[j] = a;
    c->lc[a]--;
    c->lc[s[0]]++;
}

/* One pass of single transfers from leaders with too many to followers
 * with too few. */
static void lead_direct(pk__plan_ctx *c)
{
    for (uint32_t p = 0; p < c->np; p++) {
        uint32_t *s = pk__plan_slots(c, p), a = s[0], best = 0;
        int bn = 0;
        if (c->nrep[p] < 2 || c->lc[a] <= c->llo[a]) {
            continue;
        }
        for (uint32_t j = 1; j < c->nrep[p]; j++) {
            int need = pk__plan_lneed(c, s[j]);
            if (need > bn) {
                best = j;
                bn = need;
            }
        }
        if (bn == 2 || (bn == 1 && c->lc[a] > c->lhi[a])) {
            transfer(c, p, best);
        }
    }
}

/*
 * BFS from src, layer by layer over the partitions, along the edges
 * "leader of p -> follower of p" (up == 0) or against them (up == 1), to
 * the nearest node that could lead one more (up == 0: below its ceiling)
 * or one less (up == 1: above its floor).  Each reached node y records the
 * edge it was reached by: pnode[y] and ppart[y].  Returns y, or PK__NONE.
 */
static uint32_t lead_search(pk__plan_ctx *c, uint32_t src, int up)
{
    for (uint32_t j = 0; j < c->ne; j++) {
        c->dist[c->el[j]] = PK__INF;
    }
    c->dist[src] = 0;
    for (uint32_t d = 0;; d++) {
        int any = 0;
        for (uint32_t p = 0; p < c->np; p++) {
            const uint32_t *s = pk__plan_slots(c, p);
            for (uint32_t j = 1; j < c->nrep[p]; j++) {
                uint32_t x = up ? s[j] : s[0], y = up ? s[0] : s[j];
                if (c->dist[x] != d || c->dist[y] != PK__INF) {
                    continue;
                }
                c->dist[y] = d + 1;
                c->pnode[y] = x;
                c->ppart[y] = p;
                any = 1;
                if (up ? c->lc[y] > c->llo[y] : c->lc[y] < c->lhi[y]) {
                    return y;
                }
            }
        }
        if (!any) {
            return PK__NONE;
        }
    }
}

/*
 * Moves one leadership off u (up == 0, u above its ceiling) or onto u
 * (up == 1, u below its floor) by transfers along the chain lead_search
 * finds.  Partitions on the chain are distinct (one leader each).  Returns
 * 0 or PK_ENOTFOUND.
 */
static int lead_move(pk__plan_ctx *c, uint32_t u, int up)
{
    uint32_t y = lead_search(c, u, up);

    if (y == PK__NONE) {
        return PK_ENOTFOUND;
    }
    while (y != u) {
        uint32_t p = c->ppart[y], x = c->pnode[y];
        /* the follower of p on the edge x -> y takes the lead */
        transfer(c, p, (uint32_t)pk__plan_slot_index(c, p, up ? x : y));
        y = x;
    }
    return PK_OK;
}

void pk__plan_lead_balance(pk__plan_ctx *c)
{
    lead_direct(c);
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t u = c->el[j];
        while (c->lc[u] > c->lhi[u] && lead_move(c, u, 0) == PK_OK) {
        }
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t t = c->el[j];
        while (c->lc[t] < c->llo[t] && lead_move(c, t, 1) == PK_OK) {
        }
    }
}

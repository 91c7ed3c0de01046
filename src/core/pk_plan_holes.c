/*
 * pk_plan_holes: phase A of the replica phase -- make every partition
 * exactly R slots long, with a hole (PK__NONE) wherever a replica must
 * come in.
 *
 * Per partition: drop replicas above R (followers on over-quota nodes
 * first; drop_chain re-routes earlier drops when none is over), open a
 * hole for each replica on an ineligible node or beyond the zone limit,
 * and one for each replica missing.  Holes are queued in c->holes for
 * phase C (pk_plan_fill.c); followers dropped from eligible nodes are
 * noted in c->dhead, which drop_chain walks.
 */
#include "pk_err.h"
#include "pk_plan_int.h"

/* Rank of slot i of p as a drop victim: lower drops first. */
static int drop_tier(const pk__plan_ctx *c, uint32_t p, uint32_t i)
{
    uint32_t n = pk__plan_slots(c, p)[i];
    int over, viol;

    if (!c->elig[n]) {
        return i == 0;
    }
    over = pk__plan_excess(c, n) > 0;
    viol = pk__plan_zone_count(c, p, c->zone[n], PK__NONE) > c->zcap;
    if (over) {
        return i == 0 ? 4 : (viol ? 2 : 3);
    }
    return i == 0 ? 7 : (viol ? 5 : 6);
}

/* The slot to drop when p has more than R replicas: see drop_tier. */
static uint32_t pick_drop(const pk__plan_ctx *c, uint32_t p)
{
    const uint32_t *s = pk__plan_slots(c, p);
    uint32_t best = 0;
    int bt = drop_tier(c, p, 0);

    for (uint32_t i = 1; i < c->nrep[p]; i++) {
        int t = drop_tier(c, p, i);
        long x = pk__plan_excess(c, s[i]), bx = pk__plan_excess(c, s[best]);
        if (t < bt || (t == bt && (x > bx || (x == bx && s[i] < s[best])))) {
            best = i;
            bt = t;
        }
    }
    return best;
}

/* A zone holding more than zcap replicas of p, or PK__NONE. */
static uint32_t violating_zone(const pk__plan_ctx *c, uint32_t p)
{
    const uint32_t *s = pk__plan_slots(c, p);

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        if (s[i] != PK__NONE && c->elig[s[i]] &&
            pk__plan_zone_count(c, p, c->zone[s[i]], PK__NONE) > c->zcap) {
            return c->zone[s[i]];
        }
    }
    return PK__NONE;
}

/* The replica of p in zone z to move out: over quota, follower, most over */
static uint32_t zone_victim(const pk__plan_ctx *c, uint32_t p, uint32_t z)
{
    const uint32_t *s = pk__plan_slots(c, p);
    uint32_t best = PK__NONE;
    long bk = 0;

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        long k;
        if (s[i] == PK__NONE || !c->elig[s[i]] || c->zone[s[i]] != z) {
            continue;
        }
        k = (pk__plan_excess(c, s[i]) > 0) * 4 * (long)c->np +
            (i > 0) * 2 * c->np + pk__plan_excess(c, s[i]);
        if (best == PK__NONE || k > bk) {
            best = i;
            bk = k;
        }
    }
    return best;
}

static void push_hole(pk__plan_ctx *c, uint32_t p, uint32_t i)
{
    c->holes[c->nholes++] = p * PK_REPLICAS_MAX + i;
}

/*
 * p must drop a replica but none of its followers is over quota.  Instead
 * of taking one from a node at quota (which would then have to be refilled
 * by a copy), re-route an earlier drop: BFS from p's followers y, through
 * partitions p2 that dropped y and could drop another follower z of theirs
 * instead (y goes back into p2), to a node over quota.  Every node on the
 * chain but the last keeps its count.  Returns 0 when p dropped a replica
 * (or the chain made progress), PK_ENOTFOUND, or PK_ENOMEM.
 */
static int drop_chain(pk__plan_ctx *c, uint32_t p)
{
    const uint32_t *s = pk__plan_slots(c, p);
    uint32_t nq = 0, t = PK__NONE;
    int rc = PK_ENOTFOUND;

    for (uint32_t j = 1; j < c->nrep[p]; j++) {
        if (s[j] != PK__NONE && c->dist[s[j]] == PK__INF) {
            c->dist[s[j]] = 0;
            c->pnode[s[j]] = PK__NONE;
            c->qa[nq++] = s[j];
        }
    }
    for (uint32_t h = 0; h < nq && t == PK__NONE; h++) {
        uint32_t y = c->qa[h];
        if (pk__plan_excess(c, y) > 0) {
            t = y;
            break;
        }
        for (uint32_t e = c->dhead[y]; e != PK__NONE; e = c->pool[e].next) {
            uint32_t p2 = c->pool[e].p, *s2 = pk__plan_slots(c, p2);
            if (p2 == p || pk__plan_slot_index(c, p2, y) >= 0) {
                continue;
            }
            for (uint32_t j = 1; j < c->nrep[p2]; j++) {
                uint32_t z = s2[j];
                if (z == PK__NONE || c->dist[z] != PK__INF ||
                    pk__plan_zone_count(c, p2, c->zone[y], z) >= c->zcap) {
                    continue;
                }
                c->dist[z] = c->dist[y] + 1;
                c->pnode[z] = y;
                c->ppart[z] = p2;
                c->qa[nq++] = z;
            }
        }
    }
    /* Walk back from the over-quota end, re-checking each step: a chain
     * may pass the same partition twice. */
    while (t != PK__NONE && c->pnode[t] != PK__NONE) {
        uint32_t y = c->pnode[t], p2 = c->ppart[t];
        int i = pk__plan_slot_index(c, p2, t);
        if (i < 1 || pk__plan_slot_index(c, p2, y) >= 0 ||
            pk__plan_zone_count(c, p2, c->zone[y], t) >= c->zcap) {
            t = PK__NONE;
            break;
        }
        rc = pk__plan_slot_set(c, p2, (uint32_t)i, y);
        if (rc == PK_OK) {
            rc = pk__plan_list_push(c, c->dhead, t, p2);
        }
        if (rc != PK_OK) {
            break;
        }
        t = y;
    }
    if (t != PK__NONE && c->pnode[t] == PK__NONE) {
        pk__plan_slot_drop(c, p, (uint32_t)pk__plan_slot_index(c, p, t));
        rc = pk__plan_list_push(c, c->dhead, t, p);
    }
    for (uint32_t h = 0; h < nq; h++) {
        c->dist[c->qa[h]] = PK__INF;
    }
    return rc;
}

/* Drops replicas of p above R (see pick_drop and drop_chain). */
static int drop_excess(pk__plan_ctx *c, uint32_t p)
{
    for (int tries = 0; c->nrep[p] > c->r;) {
        uint32_t i = pick_drop(c, p), n = pk__plan_slots(c, p)[i];
        int rc;
        if (drop_tier(c, p, i) >= 4 && tries++ < 4) {
            rc = drop_chain(c, p);
            if (rc != PK_ENOTFOUND) {
                if (rc != PK_OK) {
                    return rc;
                }
                continue;
            }
        }
        pk__plan_slot_drop(c, p, i);
        if (i > 0 && c->elig[n]) {
            rc = pk__plan_list_push(c, c->dhead, n, p);
            if (rc != PK_OK) {
                return rc;
            }
        }
    }
    return PK_OK;
}

int pk__plan_open_holes(pk__plan_ctx *c)
{
    for (uint32_t p = 0; p < c->np; p++) {
        uint32_t *s = pk__plan_slots(c, p), z;
        int rc = drop_excess(c, p);

        if (rc != PK_OK) {
            return rc;
        }
        for (uint32_t i = 0; i < c->nrep[p]; i++) {
            if (!c->elig[s[i]]) {
                pk__plan_slot_clear(c, p, i);
                push_hole(c, p, i);
            }
        }
        while ((z = violating_zone(c, p)) != PK__NONE) {
            uint32_t i = zone_victim(c, p, z);
            pk__plan_slot_clear(c, p, i);
            push_hole(c, p, i);
        }
        while (c->nrep[p] < c->r) {
            s[c->nrep[p]] = PK__NONE;
            push_hole(c, p, c->nrep[p]++);
        }
    }
    return PK_OK;
}

void pk__plan_open_unowned(pk__plan_ctx *c)
{
    for (uint32_t p = 0; p < c->np; p++) {
        if (c->nrep[p] != 0) {
            continue;
        }
        for (uint32_t i = 0; i < c->r; i++) {
            pk__plan_slots(c, p)[i] = PK__NONE;
            push_hole(c, p, i);
        }
        c->nrep[p] = (uint8_t)c->r;
    }
}

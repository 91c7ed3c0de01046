/*
 * pk_plan_int: what the planner's source files share and nothing outside
 * them may use -- the planning state (pk__plan_ctx), the queries on the
 * working assignment that every phase makes in its inner loops (static
 * inline, so splitting the planner costs no speed), and one entry point
 * per phase.
 *
 * The planner works on a copy of the assignment: rep[p] lists the nodes of
 * partition p, leader first, PK__NONE marking a hole still to fill.  It
 * derives the moves at the end from the difference between the assignment
 * before (init) and after (rep), so no replica is ever moved twice.
 *
 *   slots of p:   rep[p * PK_REPLICAS_MAX + 0 .. nrep[p] - 1]
 *                 [0] leader | [1..] followers | PK__NONE = hole
 *
 * Invariants: cnt[n] is the number of slots holding n, lc[n] the number
 * of slot 0s holding n, and ahead[n] lists (at least) every partition n
 * holds now but did not hold before.  A node enters a slot only through
 * pk__plan_slot_set, and a replica leaves one only through
 * pk__plan_slot_clear or _drop, which keep all three; phase A appends
 * holes directly, and the leader phase swaps slots (moving lc with them)
 * once nothing else changes.  dist[] is PK__INF everywhere while phase A
 * runs (drop_chain relies on it); later searches reset it themselves.
 *
 * Files, in the order plan_run (pk_plan.c) calls them:
 *
 *   pk_plan_ctx.c     the state: allocation, copy of the map, slot writes
 *   pk_plan_quota.c   eligibility, zones, shares and quotas
 *   pk_plan_holes.c   phase A: drop replicas above R, open holes
 *   pk_plan_fill.c    phases C and B: fill holes, shed, relieve chains
 *   pk_plan_polish.c  cancel negative cycles: fewest data moves
 *   pk_plan_lead.c    leader phase: transfers only
 *   pk_plan_move.c    the moves: emitted from the ctx, applied to a map
 *   pk_plan.c         the public entry points
 */
#ifndef PK_CORE_PK_PLAN_INT_H
#define PK_CORE_PK_PLAN_INT_H

#include <stdint.h>

#include "pk_plan.h"
#include "pk_pmap.h"

/* No node, partition, slot or zone. */
#define PK__NONE PK_NODE_NONE
/* Distance of a node a search has not reached. */
#define PK__INF UINT32_MAX

/* An entry of a per-node list of partitions. */
typedef struct pk__plink {
    uint32_t p;
    uint32_t next; /* index in pk__plan_ctx.pool, or PK__NONE */
} pk__plink;

/* Planning state.  Every pointer is owned by the ctx (pk__plan_ctx_free)
 * except m.  RMAX below is PK_REPLICAS_MAX. */
typedef struct pk__plan_ctx {
    const pk_pmap *m;     /* borrowed for the duration of the plan */
    const uint64_t *size; /* borrowed: bytes per partition, or NULL */
    int sizing;           /* pk_plan_sizing, when size is set */
    uint32_t np, nn, r;
    uint32_t ne;            /* eligible nodes */
    uint32_t nzones;        /* 1 when zones are not in use */
    uint32_t zcap;          /* max replicas of one partition in one zone */
    uint32_t *el;           /* [ne] eligible node ids, ascending */
    uint32_t *elpos;        /* [nn] index in el */
    uint8_t *elig;          /* [nn] */
    uint32_t *zone;         /* [nn] zone index, eligible nodes only */
    uint32_t *init;         /* [np * RMAX] replicas before, leader first */
    uint8_t *ninit;         /* [np] */
    uint32_t *rep;          /* [np * RMAX] working replicas, PK__NONE = hole */
    uint8_t *nrep;          /* [np] slots in use, holes included */
    uint32_t *before;       /* [nn] replicas before */
    uint32_t *lbefore;      /* [nn] leaders before */
    uint32_t *cnt;          /* [nn] replicas now */
    uint32_t *q;            /* [nn] replica quota, 0 when ineligible */
    uint32_t *rlo, *rhi;    /* [nn] floor and ceil of the replica share */
    uint32_t *lc;           /* [nn] leaders now */
    uint32_t *llo, *lhi;    /* [nn] leader bounds */
    double *share, *lshare; /* [nn] exact shares */
    uint32_t *off, *lst;    /* CSR: partitions held before, per node */
    /* Per-node lists of partitions, entries in pool: those planned onto
     * the node (not held before) and those dropped from it. */
    uint32_t *ahead, *dhead; /* [nn] list heads */
    pk__plink *pool;
    uint32_t npool, cappool;
    uint32_t *holes; /* [np * r] p * PK_REPLICAS_MAX + slot */
    uint32_t nholes;
    int32_t *avail;       /* [nn] partitions with a hole the node may fill */
    uint8_t *hleft;       /* [np] holes left in the partition */
    uint32_t *tmp, *mark; /* [np] pk__plan_node_parts scratch and stamps */
    uint32_t gen;
    uint32_t *dist, *pnode, *ppart; /* [nn] search state */
    uint32_t *qa, *qb;              /* [nn] search queues */
    uint8_t *done;                  /* [nn] */
} pk__plan_ctx;

/* ---- queries on the working assignment ---- */

/* Index of x in a[0..n-1], or -1. */
static inline int pk__plan_find(const uint32_t *a, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++) {
        if (a[i] == x) {
            return (int)i;
        }
    }
    return -1;
}

/* The working slots of p (nrep[p] of them). */
static inline uint32_t *pk__plan_slots(const pk__plan_ctx *c, uint32_t p)
{
    return c->rep + (size_t)p * PK_REPLICAS_MAX;
}

/* The slot of p that n holds now, or -1. */
static inline int pk__plan_slot_index(const pk__plan_ctx *c, uint32_t p,
                                      uint32_t n)
{
    return pk__plan_find(pk__plan_slots(c, p), c->nrep[p], n);
}

/* Did n hold p before the plan? */
static inline int pk__plan_in_init(const pk__plan_ctx *c, uint32_t p,
                                   uint32_t n)
{
    return pk__plan_find(c->init + (size_t)p * PK_REPLICAS_MAX, c->ninit[p],
                         n) >= 0;
}

/* Replicas of p in zone z on eligible nodes, not counting node ex. */
static inline uint32_t pk__plan_zone_count(const pk__plan_ctx *c, uint32_t p,
                                           uint32_t z, uint32_t ex)
{
    const uint32_t *s = pk__plan_slots(c, p);
    uint32_t k = 0;

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        uint32_t n = s[i];
        if (n != PK__NONE && n != ex && c->elig[n] && c->zone[n] == z) {
            k++;
        }
    }
    return k;
}

/* May node v take a replica of p, in place of ex's (PK__NONE: a new one)? */
static inline int pk__plan_allowed(const pk__plan_ctx *c, uint32_t p,
                                   uint32_t v, uint32_t ex)
{
    if (!c->elig[v] || (v != ex && pk__plan_slot_index(c, p, v) >= 0)) {
        return 0;
    }
    return pk__plan_zone_count(c, p, c->zone[v], ex) < c->zcap;
}

/* Replicas node n holds above its quota (negative: below). */
static inline long pk__plan_excess(const pk__plan_ctx *c, uint32_t n)
{
    return (long)c->cnt[n] - (long)c->q[n];
}

/* How much node v wants leadership: 2 below its floor, 1 below ceil. */
static inline int pk__plan_lneed(const pk__plan_ctx *c, uint32_t v)
{
    return c->lc[v] < c->llo[v] ? 2 : c->lc[v] < c->lhi[v];
}

/* ---- the state (pk_plan_ctx.c) ---- */

/* Validates m and copies its assignment into c, which must be zeroed.
 * Returns 0, PK_ECORRUPT or PK_ENOMEM; call pk__plan_ctx_free either way. */
int pk__plan_ctx_init(pk__plan_ctx *c, const pk_pmap *m);
void pk__plan_ctx_free(pk__plan_ctx *c);

/* Prepends p to the list heads[n] (c->ahead or c->dhead).  0 or ENOMEM. */
int pk__plan_list_push(pk__plan_ctx *c, uint32_t *heads, uint32_t n,
                       uint32_t p);
/* Empties slot i of p, leaving a hole. */
void pk__plan_slot_clear(pk__plan_ctx *c, uint32_t p, uint32_t i);
/* Puts node n in slot i of p, replacing what was there.  0 or ENOMEM. */
int pk__plan_slot_set(pk__plan_ctx *c, uint32_t p, uint32_t i, uint32_t n);
/* Removes slot i of p; the next replica moves up (a new leader if i==0). */
void pk__plan_slot_drop(pk__plan_ctx *c, uint32_t p, uint32_t i);
/* Partitions node u holds now, into c->tmp; returns how many. */
uint32_t pk__plan_node_parts(pk__plan_ctx *c, uint32_t u);

/* ---- the phases, in order ---- */

/* Eligible nodes, zones, shares and quotas (pk_plan_quota.c).  Returns 0,
 * PK_EEMPTY, PK_EINFEASIBLE or PK_ENOMEM. */
int pk__plan_quotas(pk__plan_ctx *c);

/* Phase A (pk_plan_holes.c): 0 or PK_ENOMEM. */
int pk__plan_open_holes(pk__plan_ctx *c);
/* For pk_plan_initial on a partly owned map: R holes in each unowned
 * partition, and nothing else. */
void pk__plan_open_unowned(pk__plan_ctx *c);

/* Phase C (pk_plan_fill.c); relieve_ok is 0 for pk_plan_initial on a
 * partly owned map.  Returns 0, PK_EINFEASIBLE or PK_ENOMEM. */
int pk__plan_fill_holes(pk__plan_ctx *c, int relieve_ok);
/* Phase B for node u (pk_plan_fill.c): 0 or PK_ENOMEM. */
int pk__plan_shed(pk__plan_ctx *c, uint32_t u);

/* Cancels negative cycles (pk_plan_polish.c): 0 or PK_ENOMEM. */
int pk__plan_polish(pk__plan_ctx *c);
/* The lower bound on data moves described in pk_plan.h. */
uint32_t pk__plan_bound(const pk__plan_ctx *c);

/* Leader phase (pk_plan_lead.c). */
void pk__plan_lead_balance(pk__plan_ctx *c);

/* The moves of partition p, written to out when not NULL; returns how
 * many (pk_plan_move.c). */
uint32_t pk__plan_emit(const pk__plan_ctx *c, uint32_t p, pk_move *out);

#endif

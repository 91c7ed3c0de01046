/*
 * pk_plan: the rebalance planner (contract in pk_plan.h).
 *
 * The planner works on a copy of the assignment -- rep[p] lists the nodes
 * of partition p, leader first, PK_NODE_NONE marking a hole still to fill
 * -- and derives the moves at the end from the difference between the
 * assignment before and after, so no replica is ever moved twice.
 *
 * Quotas.  Shares are water-filled: proportional to weight, a node capped
 * at np (one replica per partition), a zone capped at zcap * np where
 * zcap = ceil(R / nzones); what a cap cuts off goes to the others by
 * weight.  A quota is the floor or the ceiling of the share.  The sum fixes
 * how many round up; which ones prefers nodes that already hold the
 * ceiling (so a balanced map plans nothing), then the largest remainder,
 * then the lowest id.  No zone rounds up past its cap.  Leaders need no
 * exact quota: [floor, ceil] of the leader share is balanced.
 *
 * Replica phase, greedy:
 *
 *   A  open_holes   per partition: drop replicas above R (followers on
 *                   over-quota nodes first; drop_chain re-routes earlier
 *                   drops when none is over), open a hole for each replica
 *                   on an ineligible node or beyond the zone limit, and for
 *                   each replica missing
 *   C  fill_holes   put each hole on the most urgent under-quota node that
 *                   may take it (furthest below quota per partition it
 *                   could still take; ties round-robin after the leader)
 *   B  shed         each node above quota hands partitions to under-quota
 *                   nodes -- leader replicas while it leads too many, so
 *                   that leadership travels with the data
 *
 * Only over-quota nodes give and only under-quota nodes take, so the data
 * moves meet the lower bound sum(max(0, before - quota)) + missing.  When
 * no under-quota node may take a partition (all already hold it, or their
 * zone is full), relieve() finds the cheapest chain of hand-overs to one:
 * a 0-1 BFS over nodes where re-targeting a copy already planned costs
 * nothing and moving a replica that was staying costs one move.
 *
 *   over ---p1---> w ---p2---> under        p2 was planned onto w: free
 *
 * Polish.  Distinct nodes and zones can put the bound out of reach; then
 * the greedy result is made optimal by cancelling negative cycles of the
 * min-cost flow it is (polish_run, below).
 *
 * Leader phase.  Leadership transfers along shortest chains (BFS over
 * "u leads p, f follows p" edges) until every leader count is within
 * [floor, ceil] of its share: first from nodes above the ceiling, then to
 * nodes below the floor.
 */
#include "pk_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"

#define RMAX PK_REPLICAS_MAX
#define NONE PK_NODE_NONE
#define INF UINT32_MAX
#define EPS 1e-6

/* An entry of a per-node list of partitions. */
typedef struct plink {
    uint32_t p;
    uint32_t next; /* index in ctx.pool, or NONE */
} plink;

/* Planning state.  Every pointer is owned by the ctx (ctx_free). */
typedef struct ctx {
    const pk_pmap *m; /* borrowed for the duration of the plan */
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
    uint32_t *rep;          /* [np * RMAX] working replicas, NONE = hole */
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
    plink *pool;
    uint32_t npool, cappool;
    uint32_t *holes; /* p * RMAX + slot */
    uint32_t nholes;
    int32_t *avail;       /* [nn] partitions with a hole the node may fill */
    uint8_t *hleft;       /* [np] holes left in the partition */
    uint32_t *tmp, *mark; /* [np] node_parts scratch and stamps */
    uint32_t gen;
    uint32_t *dist, *pnode, *ppart; /* [nn] search state */
    uint32_t *qa, *qb;              /* [nn] search queues */
    uint8_t *done;                  /* [nn] */
} ctx;

/* ---------------------------------------------------------------- */
/* Working assignment                                                */
/* ---------------------------------------------------------------- */

static uint32_t *slots(const ctx *c, uint32_t p)
{
    return c->rep + (size_t)p * RMAX;
}

static int slot_index(const ctx *c, uint32_t p, uint32_t n)
{
    const uint32_t *s = slots(c, p);

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        if (s[i] == n) {
            return (int)i;
        }
    }
    return -1;
}

static int in_init(const ctx *c, uint32_t p, uint32_t n)
{
    const uint32_t *s = c->init + (size_t)p * RMAX;

    for (uint32_t i = 0; i < c->ninit[p]; i++) {
        if (s[i] == n) {
            return 1;
        }
    }
    return 0;
}

/* Replicas of p in zone z on eligible nodes, not counting node ex. */
static uint32_t zone_count(const ctx *c, uint32_t p, uint32_t z, uint32_t ex)
{
    const uint32_t *s = slots(c, p);
    uint32_t k = 0;

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        uint32_t n = s[i];
        if (n != NONE && n != ex && c->elig[n] && c->zone[n] == z) {
            k++;
        }
    }
    return k;
}

/* May node v take a replica of p, in place of ex's (NONE: a new one)? */
static int allowed(const ctx *c, uint32_t p, uint32_t v, uint32_t ex)
{
    const uint32_t *s = slots(c, p);

    if (!c->elig[v]) {
        return 0;
    }
    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        if (s[i] == v && v != ex) {
            return 0;
        }
    }
    return zone_count(c, p, c->zone[v], ex) < c->zcap;
}

static long excess(const ctx *c, uint32_t n)
{
    return (long)c->cnt[n] - (long)c->q[n];
}

/* Prepends p to the list heads[n]. */
static int list_push(ctx *c, uint32_t *heads, uint32_t n, uint32_t p)
{
    if (c->npool == c->cappool) {
        uint32_t cap = c->cappool ? c->cappool * 2 : 1024;
        plink *a = realloc(c->pool, cap * sizeof(*a));
        if (a == NULL) {
            return PK_ENOMEM;
        }
        c->pool = a;
        c->cappool = cap;
    }
    c->pool[c->npool].p = p;
    c->pool[c->npool].next = heads[n];
    heads[n] = c->npool++;
    return PK_OK;
}

static int note_added(ctx *c, uint32_t p, uint32_t n)
{
    return in_init(c, p, n) ? PK_OK : list_push(c, c->ahead, n, p);
}

/* Empties slot i of p, leaving a hole. */
static void slot_clear(ctx *c, uint32_t p, uint32_t i)
{
    uint32_t *s = slots(c, p);

    if (s[i] != NONE) {
        c->cnt[s[i]]--;
        if (i == 0) {
            c->lc[s[i]]--;
        }
    }
    s[i] = NONE;
}

/* Puts node n in slot i of p (replacing what was there). */
static int slot_set(ctx *c, uint32_t p, uint32_t i, uint32_t n)
{
    slot_clear(c, p, i);
    slots(c, p)[i] = n;
    c->cnt[n]++;
    if (i == 0) {
        c->lc[n]++;
    }
    return note_added(c, p, n);
}

/* Removes slot i of p; the next replica moves up (a new leader if i==0). */
static void slot_drop(ctx *c, uint32_t p, uint32_t i)
{
    uint32_t *s = slots(c, p);

    slot_clear(c, p, i);
    memmove(s + i, s + i + 1, (c->nrep[p] - i - 1) * sizeof(*s));
    c->nrep[p]--;
    if (i == 0 && c->nrep[p] > 0 && s[0] != NONE) {
        c->lc[s[0]]++;
    }
}

/* Partitions node u holds now, into c->tmp; returns how many. */
static uint32_t node_parts(ctx *c, uint32_t u)
{
    uint32_t k = 0;

    if (++c->gen == 0) {
        memset(c->mark, 0, c->np * sizeof(*c->mark));
        c->gen = 1;
    }
    for (uint32_t j = c->off[u]; j < c->off[u + 1]; j++) {
        uint32_t p = c->lst[j];
        if (c->mark[p] != c->gen && slot_index(c, p, u) >= 0) {
            c->mark[p] = c->gen;
            c->tmp[k++] = p;
        }
    }
    for (uint32_t e = c->ahead[u]; e != NONE; e = c->pool[e].next) {
        uint32_t p = c->pool[e].p;
        if (c->mark[p] != c->gen && slot_index(c, p, u) >= 0) {
            c->mark[p] = c->gen;
            c->tmp[k++] = p;
        }
    }
    return k;
}

/* ---------------------------------------------------------------- */
/* Eligibility, zones, shares and quotas                             */
/* ---------------------------------------------------------------- */

/* Water-fills total over n weights, each capped at cap. */
static void waterfill(const double *w, uint32_t n, double cap, double total,
                      double *out, uint8_t *capped)
{
    memset(capped, 0, n);
    for (;;) {
        double rem = total, wact = 0, lam;
        int changed = 0;

        for (uint32_t i = 0; i < n; i++) {
            if (capped[i]) {
                rem -= cap;
            } else {
                wact += w[i];
            }
        }
        if (wact <= 0) {
            break;
        }
        lam = rem / wact;
        for (uint32_t i = 0; i < n; i++) {
            if (!capped[i] && lam * w[i] > cap * (1 + 1e-12)) {
                capped[i] = 1;
                changed = 1;
            }
        }
        if (!changed) {
            for (uint32_t i = 0; i < n; i++) {
                out[i] = capped[i] ? cap : lam * w[i];
            }
            return;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i] = cap;
    }
}

/* Scratch for shares(): all arrays have ne entries (zsum: nzones). */
typedef struct fillbuf {
    double *w, *out, *zsum;
    uint32_t *idx;
    uint8_t *capped, *zcapped;
} fillbuf;

/*
 * Replica shares: water-fill over the nodes of uncapped zones; cap every
 * zone whose sum exceeds zcap * np and repeat (the water level only rises,
 * so a capped zone stays capped); then water-fill each capped zone alone.
 */
static void shares(ctx *c, fillbuf *b)
{
    double zc = (double)c->zcap * c->np;
    uint32_t k, nzc = 0;

    memset(b->zcapped, 0, c->nzones);
    for (;;) {
        int changed = 0;

        k = 0;
        for (uint32_t i = 0; i < c->ne; i++) {
            if (!b->zcapped[c->zone[c->el[i]]]) {
                b->idx[k] = c->el[i];
                b->w[k++] = c->m->nodes[c->el[i]].weight;
            }
        }
        waterfill(b->w, k, c->np, (double)c->r * c->np - nzc * zc, b->out,
                  b->capped);
        memset(b->zsum, 0, c->nzones * sizeof(*b->zsum));
        for (uint32_t i = 0; i < k; i++) {
            b->zsum[c->zone[b->idx[i]]] += b->out[i];
            c->share[b->idx[i]] = b->out[i];
        }
        for (uint32_t z = 0; z < c->nzones; z++) {
            if (!b->zcapped[z] && b->zsum[z] > zc * (1 + 1e-12)) {
                b->zcapped[z] = 1;
                nzc++;
                changed = 1;
            }
        }
        if (!changed) {
            break;
        }
    }
    for (uint32_t z = 0; z < c->nzones; z++) {
        if (!b->zcapped[z]) {
            continue;
        }
        k = 0;
        for (uint32_t i = 0; i < c->ne; i++) {
            if (c->zone[c->el[i]] == z) {
                b->idx[k] = c->el[i];
                b->w[k++] = c->m->nodes[c->el[i]].weight;
            }
        }
        waterfill(b->w, k, c->np, zc, b->out, b->capped);
        for (uint32_t i = 0; i < k; i++) {
            c->share[b->idx[i]] = b->out[i];
        }
    }
}

/* A candidate for rounding up. */
typedef struct upcand {
    uint32_t n;
    uint32_t sticky; /* already holds the rounded-up count */
    double frac;
} upcand;

static int upcand_cmp(const void *a, const void *b)
{
    const upcand *x = a, *y = b;

    if (x->sticky != y->sticky) {
        return x->sticky ? -1 : 1;
    }
    if (x->frac != y->frac) {
        return x->frac > y->frac ? -1 : 1;
    }
    return x->n < y->n ? -1 : (x->n > y->n);
}

/* Rounds shares to quotas (see top); zb is scratch for nzones entries. */
static int round_quotas(ctx *c, long long *zb)
{
    long long need = (long long)c->r * c->np;
    upcand *uc = malloc((c->ne ? c->ne : 1) * sizeof(*uc));
    uint32_t nuc = 0;

    if (uc == NULL) {
        return PK_ENOMEM;
    }
    for (uint32_t z = 0; z < c->nzones; z++) {
        zb[z] = (long long)c->zcap * c->np;
    }
    for (uint32_t i = 0; i < c->ne; i++) {
        uint32_t n = c->el[i];
        double s = c->share[n], fl = floor(s + EPS);
        if (fl > c->np) {
            fl = c->np;
        }
        c->q[n] = c->rlo[n] = (uint32_t)fl;
        c->rhi[n] = c->q[n] + (s - fl > EPS && c->q[n] < c->np);
        need -= c->q[n];
        zb[c->zone[n]] -= c->q[n];
        if (s - fl > EPS && c->q[n] < c->np) {
            uc[nuc].n = n;
            uc[nuc].sticky = c->before[n] > c->q[n];
            uc[nuc++].frac = s - fl;
        }
    }
    qsort(uc, nuc, sizeof(*uc), upcand_cmp);
    for (uint32_t pass = 0; pass < 2 && need > 0; pass++) {
        /* pass 1 only guards against shares that rounding error left
         * with too little fraction to be candidates */
        for (uint32_t i = 0; i < (pass ? c->ne : nuc) && need > 0; i++) {
            uint32_t n = pass ? c->el[i] : uc[i].n;
            uint32_t z = c->zone[n];
            if (zb[z] > 0 && c->q[n] < c->np &&
                (pass == 0 || c->q[n] < ceil(c->share[n]))) {
                c->q[n]++;
                zb[z]--;
                need--;
            }
        }
    }
    free(uc);
    return PK_OK;
}

static int quotas(ctx *c)
{
    fillbuf b;
    long long *zb = NULL;
    size_t ne = c->ne ? c->ne : 1;
    int rc = PK_ENOMEM;

    memset(&b, 0, sizeof(b));
    b.w = malloc(ne * sizeof(*b.w));
    b.out = malloc(ne * sizeof(*b.out));
    b.idx = malloc(ne * sizeof(*b.idx));
    b.capped = malloc(ne);
    b.zsum = malloc(c->nzones * sizeof(*b.zsum));
    b.zcapped = malloc(c->nzones);
    zb = malloc(c->nzones * sizeof(*zb));
    if (!b.w || !b.out || !b.idx || !b.capped || !b.zsum || !b.zcapped || !zb) {
        goto out;
    }
    shares(c, &b);
    rc = round_quotas(c, zb);
    if (rc != PK_OK) {
        goto out;
    }
    /* Leader shares: the same water-filling with R = 1 and no zone. */
    for (uint32_t i = 0; i < c->ne; i++) {
        b.w[i] = c->m->nodes[c->el[i]].weight;
    }
    waterfill(b.w, c->ne, c->np, c->np, b.out, b.capped);
    for (uint32_t i = 0; i < c->ne; i++) {
        uint32_t n = c->el[i];
        double fl = floor(b.out[i] + EPS);
        c->lshare[n] = b.out[i];
        c->llo[n] = (uint32_t)fl;
        c->lhi[n] = c->llo[n] + (b.out[i] - fl > EPS);
    }
out:
    free(b.w);
    free(b.out);
    free(b.idx);
    free(b.capped);
    free(b.zsum);
    free(b.zcapped);
    free(zb);
    return rc;
}

/*
 * Finds the eligible nodes and numbers their zones.  Returns PK_EEMPTY,
 * PK_EINFEASIBLE (fewer than R places under the zone rule) or PK_ENOMEM.
 */
static int eligibility(ctx *c)
{
    const pk_pmap *m = c->m;
    const char **names = NULL;
    uint32_t *zsize = NULL, places = 0;
    int zoned = 0, rc = PK_ENOMEM;

    for (uint32_t n = 0; n < c->nn; n++) {
        c->elig[n] = m->nodes[n].state == PK_NODE_UP && m->nodes[n].weight > 0;
        if (c->elig[n]) {
            c->elpos[n] = c->ne;
            c->el[c->ne++] = n;
            zoned |= m->nodes[n].zone[0] != '\0';
        }
    }
    if (c->ne == 0) {
        return PK_EEMPTY;
    }
    names = calloc(c->ne, sizeof(*names));
    zsize = calloc(c->ne, sizeof(*zsize));
    if (names == NULL || zsize == NULL) {
        goto out;
    }
    for (uint32_t i = 0; i < c->ne; i++) {
        const char *zn = zoned ? m->nodes[c->el[i]].zone : "";
        uint32_t z = 0;
        while (z < c->nzones && strcmp(names[z], zn) != 0) {
            z++;
        }
        if (z == c->nzones) {
            names[c->nzones++] = zn;
        }
        c->zone[c->el[i]] = z;
        zsize[z]++;
    }
    c->zcap = zoned ? (c->r + c->nzones - 1) / c->nzones : c->r;
    for (uint32_t z = 0; z < c->nzones; z++) {
        places += zsize[z] < c->zcap ? zsize[z] : c->zcap;
    }
    rc = places < c->r ? PK_EINFEASIBLE : PK_OK;
out:
    free(names);
    free(zsize);
    return rc;
}

static void ctx_free(ctx *c)
{
    void *ptrs[] = {c->el,    c->elpos, c->elig,  c->zone,   c->init,
                    c->ninit, c->rep,   c->nrep,  c->before, c->lbefore,
                    c->cnt,   c->q,     c->rlo,   c->rhi,    c->lc,
                    c->llo,   c->lhi,   c->share, c->lshare, c->off,
                    c->lst,   c->ahead, c->dhead, c->pool,   c->holes,
                    c->avail, c->hleft, c->tmp,   c->mark,   c->dist,
                    c->pnode, c->ppart, c->qa,    c->qb,     c->done};

    for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
        free(ptrs[i]);
    }
}

static int ctx_alloc(ctx *c)
{
    size_t nn = c->nn ? c->nn : 1, np = c->np, slotsz = np * RMAX;

    c->el = calloc(nn, sizeof(*c->el));
    c->elpos = calloc(nn, sizeof(*c->elpos));
    c->elig = calloc(nn, 1);
    c->zone = calloc(nn, sizeof(*c->zone));
    c->init = calloc(slotsz, sizeof(*c->init));
    c->ninit = calloc(np, 1);
    c->rep = calloc(slotsz, sizeof(*c->rep));
    c->nrep = calloc(np, 1);
    c->before = calloc(nn, sizeof(*c->before));
    c->lbefore = calloc(nn, sizeof(*c->lbefore));
    c->cnt = calloc(nn, sizeof(*c->cnt));
    c->q = calloc(nn, sizeof(*c->q));
    c->rlo = calloc(nn, sizeof(*c->rlo));
    c->rhi = calloc(nn, sizeof(*c->rhi));
    c->lc = calloc(nn, sizeof(*c->lc));
    c->llo = calloc(nn, sizeof(*c->llo));
    c->lhi = calloc(nn, sizeof(*c->lhi));
    c->share = calloc(nn, sizeof(*c->share));
    c->lshare = calloc(nn, sizeof(*c->lshare));
    c->off = calloc(nn + 1, sizeof(*c->off));
    c->lst = calloc(slotsz, sizeof(*c->lst));
    c->ahead = malloc(nn * sizeof(*c->ahead));
    c->dhead = malloc(nn * sizeof(*c->dhead));
    c->holes = calloc(np * c->r, sizeof(*c->holes));
    c->avail = calloc(nn, sizeof(*c->avail));
    c->hleft = calloc(np, 1);
    c->tmp = calloc(np, sizeof(*c->tmp));
    c->mark = calloc(np, sizeof(*c->mark));
    c->dist = calloc(nn, sizeof(*c->dist));
    c->pnode = calloc(nn, sizeof(*c->pnode));
    c->ppart = calloc(nn, sizeof(*c->ppart));
    c->qa = calloc(nn, sizeof(*c->qa));
    c->qb = calloc(nn, sizeof(*c->qb));
    c->done = calloc(nn, 1);
    if (!c->el || !c->elpos || !c->elig || !c->zone || !c->init || !c->ninit ||
        !c->rep || !c->nrep || !c->before || !c->lbefore || !c->cnt || !c->q ||
        !c->rlo || !c->rhi || !c->lc || !c->llo || !c->lhi || !c->share ||
        !c->lshare || !c->off || !c->lst || !c->ahead || !c->dhead ||
        !c->holes || !c->avail || !c->hleft || !c->tmp || !c->mark ||
        !c->dist || !c->pnode || !c->ppart || !c->qa || !c->qb || !c->done) {
        return PK_ENOMEM;
    }
    return PK_OK;
}

/* Copies m's assignment into c and indexes it.  c must be zeroed. */
static int ctx_init(ctx *c, const pk_pmap *m)
{
    int rc;

    if (pk_pmap_validate(m) != PK_OK) {
        return PK_ECORRUPT;
    }
    c->m = m;
    c->np = m->npartitions;
    c->nn = m->nnodes;
    c->r = m->replicas;
    rc = ctx_alloc(c);
    if (rc != PK_OK) {
        return rc;
    }
    rc = eligibility(c);
    if (rc != PK_OK) {
        return rc;
    }
    for (uint32_t n = 0; n < c->nn; n++) {
        c->ahead[n] = c->dhead[n] = NONE;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        const pk_partition *pt = &m->parts[p];
        memcpy(c->init + (size_t)p * RMAX, pt->replicas,
               pt->nreplicas * sizeof(uint32_t));
        memcpy(slots(c, p), pt->replicas, pt->nreplicas * sizeof(uint32_t));
        c->ninit[p] = c->nrep[p] = pt->nreplicas;
        for (uint32_t i = 0; i < pt->nreplicas; i++) {
            c->before[pt->replicas[i]]++;
            c->off[pt->replicas[i] + 1]++;
        }
        if (pt->nreplicas > 0) {
            c->lbefore[pt->replicas[0]]++;
        }
    }
    for (uint32_t n = 0; n < c->nn; n++) {
        c->off[n + 1] += c->off[n];
        c->cnt[n] = c->before[n];
        c->lc[n] = c->lbefore[n];
    }
    /* dist doubles as a fill cursor while the CSR lists are built */
    memcpy(c->dist, c->off, c->nn * sizeof(*c->dist));
    for (uint32_t p = 0; p < c->np; p++) {
        for (uint32_t i = 0; i < c->ninit[p]; i++) {
            uint32_t n = c->init[(size_t)p * RMAX + i];
            c->lst[c->dist[n]++] = p;
        }
    }
    for (uint32_t n = 0; n < c->nn; n++) {
        c->dist[n] = INF; /* drop_chain expects it */
    }
    return PK_OK;
}

/* ---------------------------------------------------------------- */
/* Replica phase                                                     */
/* ---------------------------------------------------------------- */

/* Rank of slot i of p as a drop victim: lower drops first. */
static int drop_tier(const ctx *c, uint32_t p, uint32_t i)
{
    uint32_t n = slots(c, p)[i];
    int over, viol;

    if (!c->elig[n]) {
        return i == 0;
    }
    over = excess(c, n) > 0;
    viol = zone_count(c, p, c->zone[n], NONE) > c->zcap;
    if (over) {
        return i == 0 ? 4 : (viol ? 2 : 3);
    }
    return i == 0 ? 7 : (viol ? 5 : 6);
}

/* The slot to drop when p has more than R replicas: see drop_tier. */
static uint32_t pick_drop(const ctx *c, uint32_t p)
{
    const uint32_t *s = slots(c, p);
    uint32_t best = 0;
    int bt = drop_tier(c, p, 0);

    for (uint32_t i = 1; i < c->nrep[p]; i++) {
        int t = drop_tier(c, p, i);
        long x = excess(c, s[i]), bx = excess(c, s[best]);
        if (t < bt || (t == bt && (x > bx || (x == bx && s[i] < s[best])))) {
            best = i;
            bt = t;
        }
    }
    return best;
}

/* A zone holding more than zcap replicas of p, or NONE. */
static uint32_t violating_zone(const ctx *c, uint32_t p)
{
    const uint32_t *s = slots(c, p);

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        if (s[i] != NONE && c->elig[s[i]] &&
            zone_count(c, p, c->zone[s[i]], NONE) > c->zcap) {
            return c->zone[s[i]];
        }
    }
    return NONE;
}

/* The replica of p in zone z to move out: over quota, follower, most over */
static uint32_t zone_victim(const ctx *c, uint32_t p, uint32_t z)
{
    const uint32_t *s = slots(c, p);
    uint32_t best = NONE;
    long bk = 0;

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        long k;
        if (s[i] == NONE || !c->elig[s[i]] || c->zone[s[i]] != z) {
            continue;
        }
        k = (excess(c, s[i]) > 0) * 4 * (long)c->np + (i > 0) * 2 * c->np +
            excess(c, s[i]);
        if (best == NONE || k > bk) {
            best = i;
            bk = k;
        }
    }
    return best;
}

static void push_hole(ctx *c, uint32_t p, uint32_t i)
{
    c->holes[c->nholes++] = p * RMAX + i;
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
static int drop_chain(ctx *c, uint32_t p)
{
    const uint32_t *s = slots(c, p);
    uint32_t nq = 0, t = NONE;
    int rc = PK_ENOTFOUND;

    for (uint32_t j = 1; j < c->nrep[p]; j++) {
        if (s[j] != NONE && c->dist[s[j]] == INF) {
            c->dist[s[j]] = 0;
            c->pnode[s[j]] = NONE;
            c->qa[nq++] = s[j];
        }
    }
    for (uint32_t h = 0; h < nq && t == NONE; h++) {
        uint32_t y = c->qa[h];
        if (excess(c, y) > 0) {
            t = y;
            break;
        }
        for (uint32_t e = c->dhead[y]; e != NONE; e = c->pool[e].next) {
            uint32_t p2 = c->pool[e].p, *s2 = slots(c, p2);
            if (p2 == p || slot_index(c, p2, y) >= 0) {
                continue;
            }
            for (uint32_t j = 1; j < c->nrep[p2]; j++) {
                uint32_t z = s2[j];
                if (z == NONE || c->dist[z] != INF ||
                    zone_count(c, p2, c->zone[y], z) >= c->zcap) {
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
    while (t != NONE && c->pnode[t] != NONE) {
        uint32_t y = c->pnode[t], p2 = c->ppart[t];
        int i = slot_index(c, p2, t);
        if (i < 1 || slot_index(c, p2, y) >= 0 ||
            zone_count(c, p2, c->zone[y], t) >= c->zcap) {
            t = NONE;
            break;
        }
        rc = slot_set(c, p2, (uint32_t)i, y);
        if (rc == PK_OK) {
            rc = list_push(c, c->dhead, t, p2);
        }
        if (rc != PK_OK) {
            break;
        }
        t = y;
    }
    if (t != NONE && c->pnode[t] == NONE) {
        slot_drop(c, p, (uint32_t)slot_index(c, p, t));
        rc = list_push(c, c->dhead, t, p);
    }
    for (uint32_t h = 0; h < nq; h++) {
        c->dist[c->qa[h]] = INF;
    }
    return rc;
}

/* Drops replicas of p above R (see pick_drop and drop_chain). */
static int drop_excess(ctx *c, uint32_t p)
{
    for (int tries = 0; c->nrep[p] > c->r;) {
        uint32_t i = pick_drop(c, p), n = slots(c, p)[i];
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
        slot_drop(c, p, i);
        if (i > 0 && c->elig[n]) {
            rc = list_push(c, c->dhead, n, p);
            if (rc != PK_OK) {
                return rc;
            }
        }
    }
    return PK_OK;
}

/* Phase A (see top). */
static int open_holes(ctx *c)
{
    for (uint32_t p = 0; p < c->np; p++) {
        uint32_t *s = slots(c, p), z;
        int rc = drop_excess(c, p);

        if (rc != PK_OK) {
            return rc;
        }
        for (uint32_t i = 0; i < c->nrep[p]; i++) {
            if (!c->elig[s[i]]) {
                slot_clear(c, p, i);
                push_hole(c, p, i);
            }
        }
        while ((z = violating_zone(c, p)) != NONE) {
            uint32_t i = zone_victim(c, p, z);
            slot_clear(c, p, i);
            push_hole(c, p, i);
        }
        while (c->nrep[p] < c->r) {
            s[c->nrep[p]] = NONE;
            push_hole(c, p, c->nrep[p]++);
        }
    }
    return PK_OK;
}

/* For pk_plan_initial on a partly owned map: holes in unowned partitions. */
static void open_unowned(ctx *c)
{
    for (uint32_t p = 0; p < c->np; p++) {
        if (c->nrep[p] != 0) {
            continue;
        }
        for (uint32_t i = 0; i < c->r; i++) {
            slots(c, p)[i] = NONE;
            push_hole(c, p, i);
        }
        c->nrep[p] = (uint8_t)c->r;
    }
}

/* How much node v wants leadership: 2 below its floor, 1 below ceil. */
static int lneed(const ctx *c, uint32_t v)
{
    return c->lc[v] < c->llo[v] ? 2 : c->lc[v] < c->lhi[v];
}

/* Is v a more urgent taker than b: further below quota per partition
 * with a hole it could still fill?  A node whose share is capped at np has
 * urgency 1 and must take every partition it can. */
static int more_urgent(const ctx *c, uint32_t v, uint32_t b)
{
    int64_t dv = (int64_t)c->q[v] - c->cnt[v],
            db = (int64_t)c->q[b] - c->cnt[b];
    int64_t av = c->avail[v] > 0 ? c->avail[v] : 1;
    int64_t ab = c->avail[b] > 0 ? c->avail[b] : 1;

    return dv * ab > db * av;
}

/*
 * An under-quota node for slot i of p (replacing ex, or NONE): for a
 * leader slot the one wanting leadership most, then the most urgent (see
 * more_urgent), ties going round-robin after p's leader.  NONE when no
 * under-quota node may take it.
 */
static uint32_t pick_under(const ctx *c, uint32_t p, uint32_t i, uint32_t ex)
{
    uint32_t best = NONE, lead = slots(c, p)[0], start = 0;

    if (i > 0 && lead != NONE && c->elig[lead]) {
        start = c->elpos[lead] + 1;
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[(start + j) % c->ne];
        if (c->cnt[v] >= c->q[v] || !allowed(c, p, v, ex)) {
            continue;
        }
        if (best != NONE && i == 0 && lneed(c, v) != lneed(c, best)) {
            best = lneed(c, v) > lneed(c, best) ? v : best;
        } else if (best == NONE || more_urgent(c, v, best)) {
            best = v;
        }
    }
    return best;
}

/* Any node that may take a new replica of p, the least over quota. */
static uint32_t pick_any(const ctx *c, uint32_t p)
{
    uint32_t best = NONE;

    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[j];
        if (allowed(c, p, v, NONE) &&
            (best == NONE || excess(c, v) < excess(c, best))) {
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
 * nothing can be closer -- or NONE.
 */
static uint32_t expand(ctx *c, uint32_t w, uint32_t d, uint32_t *ncur,
                       uint32_t *nnext)
{
    uint32_t n = node_parts(c, w);

    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t v = c->el[j], bp = NONE, nd;
        int best = 2;
        if (c->done[v] || v == w || c->dist[v] <= d) {
            continue;
        }
        for (uint32_t k = 0; k < n && best > 0; k++) {
            uint32_t p = c->tmp[k];
            int cost;
            if (!allowed(c, p, v, w)) {
                continue;
            }
            cost = !in_init(c, p, v) - !in_init(c, p, w);
            if (cost < best) {
                best = cost;
                bp = p;
            }
        }
        nd = d + (best > 0);
        if (bp == NONE || nd >= c->dist[v]) {
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
    return NONE;
}

/*
 * Moves one replica's worth of load off over-quota node u along the
 * cheapest chain of hand-overs ending at an under-quota node.  Returns 0
 * when something moved, PK_ENOTFOUND when no chain exists, or PK_ENOMEM.
 */
static int relieve(ctx *c, uint32_t u)
{
    uint32_t ncur = 1, nnext = 0, d = 0, t = NONE;
    int moved = 0, rc;

    for (uint32_t j = 0; j < c->ne; j++) {
        c->dist[c->el[j]] = INF;
        c->done[c->el[j]] = 0;
    }
    c->dist[u] = 0;
    c->qa[0] = u;
    while (ncur > 0 && t == NONE) {
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
            if (t != NONE) {
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
    while (t != NONE && t != u) {
        uint32_t w = c->pnode[t], p = c->ppart[t];
        int i = slot_index(c, p, w);
        if (i < 0 || !allowed(c, p, t, w)) {
            break;
        }
        rc = slot_set(c, p, (uint32_t)i, t);
        if (rc != PK_OK) {
            return rc;
        }
        moved = 1;
        t = w;
    }
    return moved ? PK_OK : PK_ENOTFOUND;
}

/* relieve() until u is within quota or no chain is left. */
static int relieve_all(ctx *c, uint32_t u)
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
static void avail_count(ctx *c, uint32_t p, int sign)
{
    if (c->hleft[p] == 0) {
        return;
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        if (allowed(c, p, c->el[j], NONE)) {
            c->avail[c->el[j]] += sign;
        }
    }
}

/* Phase C (see top); relieve is 0 for pk_plan_initial on a partial map. */
static int fill_holes(ctx *c, int relieve_ok)
{
    for (uint32_t h = 0; h < c->nholes; h++) {
        c->hleft[c->holes[h] / RMAX]++;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        avail_count(c, p, 1);
    }
    for (uint32_t h = 0; h < c->nholes; h++) {
        uint32_t p = c->holes[h] / RMAX, i = c->holes[h] % RMAX;
        uint32_t v = pick_under(c, p, i, NONE);
        int rc;

        if (v == NONE) {
            v = pick_any(c, p);
        }
        if (v == NONE) {
            return PK_EINFEASIBLE; /* eligibility() rules this out */
        }
        avail_count(c, p, -1);
        c->hleft[p]--;
        rc = slot_set(c, p, i, v);
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
static int want_leader(const ctx *c, uint32_t u)
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

/*
 * Phase B for node u: hand partitions to under-quota nodes until u is
 * within quota -- first those whose role matches want_leader(), then any,
 * then chains.
 */
static int shed(ctx *c, uint32_t u)
{
    for (int pass = 0; pass < 2 && c->cnt[u] > c->q[u]; pass++) {
        uint32_t n = node_parts(c, u);
        for (uint32_t k = 0; k < n && c->cnt[u] > c->q[u]; k++) {
            uint32_t p = c->tmp[k], v;
            int i = slot_index(c, p, u), rc;
            if (i < 0 || (pass == 0 && (i == 0) != want_leader(c, u))) {
                continue;
            }
            v = pick_under(c, p, (uint32_t)i, u);
            if (v == NONE) {
                continue;
            }
            rc = slot_set(c, p, (uint32_t)i, v);
            if (rc != PK_OK) {
                return rc;
            }
        }
    }
    return relieve_all(c, u);
}

/* ---------------------------------------------------------------- */
/* Polish: cancel negative cycles                                    */
/* ---------------------------------------------------------------- */

/*
 * The phases above meet the lower bound whenever only the counts constrain
 * the plan.  Distinct nodes and zones can put the bound out of reach, and
 * there a greedy choice may cost a few copies more than needed.  The
 * assignment is a min-cost flow (partitions -> nodes; a copy costs 1, a
 * kept replica 0), optimal iff its residual graph has no negative cycle.
 * Contracted onto nodes, edge a -> b means "some partition may trade its
 * replica on a for one on b", at cost [b is new to it] - [a is new to it]
 * in {-1, 0, 1}; vertex T joins nodes that may lose one (count > floor)
 * to nodes that may gain one (count < ceil).  Bellman-Ford finds a
 * negative cycle, distinct partitions realise its edges, and this repeats
 * until no cycle is left -- an optimal plan -- or a cycle cannot be
 * realised (rare; the plan is then kept as it is).  O(ne^3) per cycle, so
 * it runs only up to POLISH_MAX_NODES eligible nodes.
 */
#define POLISH_MAX_NODES 256

typedef struct polish {
    uint32_t *ecnt;  /* [ne * ne * 3]: partitions per edge a->b and cost */
    long *dist;      /* [ne + 1] */
    uint32_t *pred;  /* [ne + 1] */
    uint32_t *cyc;   /* [ne + 2] vertices of the cycle */
    uint32_t *cpart; /* [ne + 2] partition realising each edge */
} polish;

/* Adds (sign 1) or removes (-1) the edges partition p contributes. */
static void contrib(ctx *c, polish *g, uint32_t p, int sign)
{
    const uint32_t *s = slots(c, p);

    for (uint32_t i = 0; i < c->nrep[p]; i++) {
        uint32_t a = s[i], *row;
        int ca;
        if (a == NONE || !c->elig[a]) {
            continue;
        }
        ca = !in_init(c, p, a);
        row = g->ecnt + (size_t)c->elpos[a] * c->ne * 3;
        for (uint32_t j = 0; j < c->ne; j++) {
            uint32_t b = c->el[j], *e;
            if (slot_index(c, p, b) >= 0 ||
                zone_count(c, p, c->zone[b], a) >= c->zcap) {
                continue;
            }
            e = &row[j * 3 + (uint32_t)(1 + !in_init(c, p, b) - ca)];
            *e = sign > 0 ? *e + 1 : *e - 1;
        }
    }
}

/* Cost of edge a -> b between vertices (c->ne is T); 0 when absent. */
static int edge(const ctx *c, const polish *g, uint32_t a, uint32_t b, int *w)
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
static uint32_t find_cycle(const ctx *c, polish *g)
{
    uint32_t nv = c->ne + 1, x = NONE, k = 0, y;
    int w;

    for (uint32_t v = 0; v < nv; v++) {
        g->dist[v] = 0;
        g->pred[v] = NONE;
    }
    for (uint32_t it = 0; it < nv; it++) {
        x = NONE;
        for (uint32_t a = 0; a < nv; a++) {
            for (uint32_t b = 0; b < nv; b++) {
                if (edge(c, g, a, b, &w) && g->dist[a] + w < g->dist[b]) {
                    g->dist[b] = g->dist[a] + w;
                    g->pred[b] = a;
                    x = b;
                }
            }
        }
        if (x == NONE) {
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
 * cost w; NONE when there is none. */
static uint32_t cycle_part(ctx *c, const polish *g, uint32_t i, uint32_t x,
                           uint32_t y, int w)
{
    uint32_t n = node_parts(c, x);

    for (uint32_t k = 0; k < n; k++) {
        uint32_t p = c->tmp[k], used = 0;
        for (uint32_t j = 0; j < i; j++) {
            used |= g->cpart[j] == p;
        }
        if (!used && slot_index(c, p, y) < 0 &&
            zone_count(c, p, c->zone[y], x) < c->zcap &&
            !in_init(c, p, y) - !in_init(c, p, x) == w) {
            return p;
        }
    }
    return NONE;
}

/* Realises the k-edge cycle in g->cyc.  Returns 0 or PK_ENOTFOUND. */
static int apply_cycle(ctx *c, polish *g, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++) {
        uint32_t a = g->cyc[i], b = g->cyc[(i + 1) % k];
        int w;
        g->cpart[i] = NONE;
        if (a == c->ne || b == c->ne) {
            continue;
        }
        (void)edge(c, g, a, b, &w);
        g->cpart[i] = cycle_part(c, g, i, c->el[a], c->el[b], w);
        if (g->cpart[i] == NONE) {
            return PK_ENOTFOUND;
        }
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t p = g->cpart[i], x, y;
        int rc;
        if (p == NONE) {
            continue;
        }
        x = c->el[g->cyc[i]];
        y = c->el[g->cyc[(i + 1) % k]];
        contrib(c, g, p, -1);
        rc = slot_set(c, p, (uint32_t)slot_index(c, p, x), y);
        contrib(c, g, p, 1);
        if (rc != PK_OK) {
            return rc;
        }
    }
    return PK_OK;
}

/* The lower bound on data moves described in pk_plan.h. */
static uint32_t bound(const ctx *c)
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
static uint32_t data_moves(const ctx *c)
{
    uint32_t k = 0;

    for (uint32_t p = 0; p < c->np; p++) {
        const uint32_t *s = slots(c, p);
        uint32_t kept = 0;
        for (uint32_t i = 0; i < c->nrep[p]; i++) {
            kept += in_init(c, p, s[i]);
        }
        k += (c->nrep[p] > c->ninit[p] ? c->nrep[p] : c->ninit[p]) - kept;
    }
    return k;
}

static int polish_run(ctx *c)
{
    polish g;
    size_t nv = (size_t)c->ne + 2;
    int rc = PK_ENOMEM;

    if (c->ne < 2 || c->ne > POLISH_MAX_NODES || data_moves(c) == bound(c)) {
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

/* ---------------------------------------------------------------- */
/* Leader phase                                                      */
/* ---------------------------------------------------------------- */

/* Makes the follower in slot j of p its leader. */
static void transfer(ctx *c, uint32_t p, uint32_t j)
{
    uint32_t *s = slots(c, p), a = s[0];

    s[0] = s[j];
    s[j] = a;
    c->lc[a]--;
    c->lc[s[0]]++;
}

/* One pass of single transfers from leaders with too many to followers
 * with too few. */
static void lead_direct(ctx *c)
{
    for (uint32_t p = 0; p < c->np; p++) {
        uint32_t *s = slots(c, p), a = s[0], best = 0;
        int bn = 0;
        if (c->nrep[p] < 2 || c->lc[a] <= c->llo[a]) {
            continue;
        }
        for (uint32_t j = 1; j < c->nrep[p]; j++) {
            int need = lneed(c, s[j]);
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

static void bfs_reset(ctx *c, uint32_t src)
{
    for (uint32_t j = 0; j < c->ne; j++) {
        c->dist[c->el[j]] = INF;
    }
    c->dist[src] = 0;
}

/*
 * Moves one leadership off u (above its ceiling) to the nearest node below
 * its ceiling, by transfers along a chain.  BFS layer by layer over the
 * partitions: u -> followers of what u leads -> followers of what they
 * lead...  Partitions on the chain are distinct (one leader each).
 */
static int lead_shed(ctx *c, uint32_t u)
{
    uint32_t t = NONE;

    bfs_reset(c, u);
    for (uint32_t d = 0; t == NONE; d++) {
        int any = 0;
        for (uint32_t p = 0; p < c->np && t == NONE; p++) {
            uint32_t *s = slots(c, p);
            if (c->dist[s[0]] != d) {
                continue;
            }
            for (uint32_t j = 1; j < c->nrep[p] && t == NONE; j++) {
                if (c->dist[s[j]] != INF) {
                    continue;
                }
                c->dist[s[j]] = d + 1;
                c->pnode[s[j]] = s[0];
                c->ppart[s[j]] = p;
                any = 1;
                if (c->lc[s[j]] < c->lhi[s[j]]) {
                    t = s[j];
                }
            }
        }
        if (!any) {
            return PK_ENOTFOUND;
        }
    }
    while (t != u) {
        uint32_t p = c->ppart[t], a = c->pnode[t];
        transfer(c, p, (uint32_t)slot_index(c, p, t));
        t = a;
    }
    return PK_OK;
}

/* The mirror of lead_shed: one more leadership for t (below its floor)
 * from the nearest node above its floor. */
static int lead_gain(ctx *c, uint32_t t)
{
    uint32_t s0 = NONE;

    bfs_reset(c, t);
    for (uint32_t d = 0; s0 == NONE; d++) {
        int any = 0;
        for (uint32_t p = 0; p < c->np && s0 == NONE; p++) {
            uint32_t *s = slots(c, p), a = s[0];
            if (c->dist[a] != INF) {
                continue;
            }
            for (uint32_t j = 1; j < c->nrep[p]; j++) {
                if (c->dist[s[j]] == d) {
                    c->dist[a] = d + 1;
                    c->pnode[a] = s[j];
                    c->ppart[a] = p;
                    any = 1;
                    s0 = c->lc[a] > c->llo[a] ? a : NONE;
                    break;
                }
            }
        }
        if (!any) {
            return PK_ENOTFOUND;
        }
    }
    while (s0 != t) {
        uint32_t p = c->ppart[s0], f = c->pnode[s0];
        transfer(c, p, (uint32_t)slot_index(c, p, f));
        s0 = f;
    }
    return PK_OK;
}

static void lead_balance(ctx *c)
{
    lead_direct(c);
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t u = c->el[j];
        while (c->lc[u] > c->lhi[u] && lead_shed(c, u) == PK_OK) {
        }
    }
    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t t = c->el[j];
        while (c->lc[t] < c->llo[t] && lead_gain(c, t) == PK_OK) {
        }
    }
}

/* ---------------------------------------------------------------- */
/* Moves and the plan                                                */
/* ---------------------------------------------------------------- */

static int has(const uint32_t *a, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++) {
        if (a[i] == x) {
            return 1;
        }
    }
    return 0;
}

static uint32_t put(pk_move *out, uint32_t k, uint32_t p, uint32_t from,
                    uint32_t to, pk_role role, int transfer)
{
    if (out != NULL) {
        out[k].part = p;
        out[k].from = from;
        out[k].to = to;
        out[k].role = (uint8_t)role;
        out[k].transfer = (uint8_t)transfer;
    }
    return k + 1;
}

/*
 * The moves of partition p, from its replicas before (I) to after (F),
 * written to out (when not NULL); returns how many.  Order: a transfer to
 * a follower that will lead, copies (the leader's first), new replicas,
 * drops, and last a transfer to a new replica that will lead.  Every move
 * is valid in this order under pk_plan_apply's rules.
 */
static uint32_t emit(const ctx *c, uint32_t p, pk_move *out)
{
    const uint32_t *I = c->init + (size_t)p * RMAX, *F = slots(c, p);
    uint32_t nI = c->ninit[p], nF = c->nrep[p];
    uint32_t rm[RMAX], ad[RMAX], nrm = 0, nad = 0, ri = 0, ai = 0, k = 0;
    uint32_t lead = nI ? I[0] : NONE;

    for (uint32_t i = 0; i < nI; i++) {
        if (!has(F, nF, I[i])) {
            rm[nrm++] = I[i];
        }
    }
    for (uint32_t i = 0; i < nF; i++) {
        if (!has(I, nI, F[i])) {
            ad[nad++] = F[i];
        }
    }
    if (nF == 0) {
        return 0; /* never planned: every partition keeps >= 1 replica */
    }
    if (lead != NONE && lead != F[0] && has(I, nI, F[0])) {
        k = put(out, k, p, lead, F[0], PK_ROLE_LEADER, 1);
        lead = F[0];
    }
    if (lead != NONE && nrm && rm[0] == lead && nad && ad[0] == F[0]) {
        k = put(out, k, p, lead, F[0], PK_ROLE_LEADER, 0);
        lead = F[0];
        ri = ai = 1;
    }
    for (; ri < nrm && ai < nad; ri++, ai++) {
        k = put(out, k, p, rm[ri], ad[ai], PK_ROLE_FOLLOWER, 0);
    }
    for (; ai < nad; ai++) {
        pk_role role = lead == NONE ? PK_ROLE_LEADER : PK_ROLE_FOLLOWER;
        k = put(out, k, p, NONE, ad[ai], role, 0);
        lead = lead == NONE ? ad[ai] : lead;
    }
    for (; ri < nrm; ri++) {
        k = put(out, k, p, rm[ri], NONE, PK_ROLE_FOLLOWER, 0);
    }
    if (lead != F[0]) {
        k = put(out, k, p, lead, F[0], PK_ROLE_LEADER, 1);
    }
    return k;
}

static double max_dev(const ctx *c, const uint32_t *cnt, const double *sh)
{
    double d = 0;

    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t n = c->el[j];
        double x = fabs((double)cnt[n] - sh[n]);
        d = x > d ? x : d;
    }
    return d;
}

static int plan_build(const ctx *c, pk_plan **out)
{
    pk_plan *pl = calloc(1, sizeof(*pl));
    size_t nn = c->nn ? c->nn : 1;
    uint32_t k = 0;
    int rc = PK_ENOMEM;

    if (pl == NULL) {
        return PK_ENOMEM;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        pl->nmoves += emit(c, p, NULL);
    }
    /* calloc: padding bytes too are the same for the same plan */
    pl->moves = calloc(pl->nmoves ? pl->nmoves : 1, sizeof(*pl->moves));
    pl->nnodes = c->nn;
    pl->replicas_before = malloc(nn * sizeof(uint32_t));
    pl->replicas_after = malloc(nn * sizeof(uint32_t));
    pl->leaders_before = malloc(nn * sizeof(uint32_t));
    pl->leaders_after = malloc(nn * sizeof(uint32_t));
    pl->share = malloc(nn * sizeof(double));
    pl->leader_share = malloc(nn * sizeof(double));
    if (!pl->moves || !pl->replicas_before || !pl->replicas_after ||
        !pl->leaders_before || !pl->leaders_after || !pl->share ||
        !pl->leader_share) {
        goto out;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        k += emit(c, p, pl->moves + k);
    }
    pl->min_data_moves = bound(c);
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        pl->ntransfers += pl->moves[i].transfer;
    }
    pl->ndata = pl->nmoves - pl->ntransfers;
    memcpy(pl->replicas_before, c->before, c->nn * sizeof(uint32_t));
    memcpy(pl->replicas_after, c->cnt, c->nn * sizeof(uint32_t));
    memcpy(pl->leaders_before, c->lbefore, c->nn * sizeof(uint32_t));
    memcpy(pl->leaders_after, c->lc, c->nn * sizeof(uint32_t));
    memcpy(pl->share, c->share, c->nn * sizeof(double));
    memcpy(pl->leader_share, c->lshare, c->nn * sizeof(double));
    pl->max_dev_before = max_dev(c, c->before, c->share);
    pl->max_dev_after = max_dev(c, c->cnt, c->share);
    pl->max_leader_dev_before = max_dev(c, c->lbefore, c->lshare);
    pl->max_leader_dev_after = max_dev(c, c->lc, c->lshare);
    pl->retire = NONE;
    *out = pl;
    pl = NULL;
    rc = PK_OK;
out:
    pk_plan_free(pl);
    return rc;
}

/* Plans m; unowned_only restricts the plan to unowned partitions. */
static int plan_run(const pk_pmap *m, int unowned_only, pk_plan **out)
{
    ctx c;
    int rc;

    memset(&c, 0, sizeof(c));
    rc = ctx_init(&c, m);
    if (rc == PK_OK) {
        rc = quotas(&c);
    }
    if (rc != PK_OK) {
        goto out;
    }
    if (unowned_only) {
        open_unowned(&c);
    } else {
        rc = open_holes(&c);
    }
    if (rc == PK_OK) {
        rc = fill_holes(&c, !unowned_only);
    }
    for (uint32_t j = 0; j < c.ne && rc == PK_OK && !unowned_only; j++) {
        rc = shed(&c, c.el[j]);
    }
    if (rc != PK_OK) {
        goto out;
    }
    if (!unowned_only) {
        rc = polish_run(&c);
        if (rc != PK_OK) {
            goto out;
        }
        lead_balance(&c);
    }
    rc = plan_build(&c, out);
out:
    ctx_free(&c);
    return rc;
}

/* ---------------------------------------------------------------- */
/* Public API                                                        */
/* ---------------------------------------------------------------- */

int pk_plan_compute(const pk_pmap *m, pk_plan **out)
{
    if (m == NULL || out == NULL) {
        return PK_EINVAL;
    }
    return plan_run(m, 0, out);
}

/* What pk_plan_change must restore if planning fails. */
typedef struct undo {
    uint32_t nnodes;
    uint8_t state, replicas;
    double weight;
} undo;

static int change_record(pk_pmap *m, const pk_change *c, undo *u)
{
    uint32_t id;

    u->nnodes = m->nnodes;
    u->replicas = m->replicas;
    if (c->kind == PK_CHANGE_ADD) {
        return pk_pmap_node_add(m, c->name, c->addr, c->zone, c->weight, &id);
    }
    if (c->kind == PK_CHANGE_REPLICAS) {
        if (c->replicas == 0 || c->replicas > RMAX) {
            return PK_EINVAL;
        }
        m->replicas = c->replicas;
        return PK_OK;
    }
    if (c->kind == PK_CHANGE_NONE) {
        return PK_OK;
    }
    if (c->kind > PK_CHANGE_REPLICAS) {
        return PK_EINVAL;
    }
    if (c->node >= m->nnodes || m->nodes[c->node].state == PK_NODE_REMOVED) {
        return PK_ENOTFOUND;
    }
    u->state = m->nodes[c->node].state;
    u->weight = m->nodes[c->node].weight;
    if (c->kind == PK_CHANGE_WEIGHT) {
        return pk_pmap_node_set_weight(m, c->node, c->weight);
    }
    if (u->state == PK_NODE_UP) {
        m->nodes[c->node].state = PK_NODE_DRAINING;
    }
    return PK_OK;
}

static void change_undo(pk_pmap *m, const pk_change *c, const undo *u)
{
    if (m->nnodes > u->nnodes) {
        m->nnodes = u->nnodes;
        memset(&m->nodes[u->nnodes], 0, sizeof(m->nodes[0]));
    }
    m->replicas = u->replicas;
    if (c->kind == PK_CHANGE_REMOVE || c->kind == PK_CHANGE_DRAIN ||
        c->kind == PK_CHANGE_WEIGHT) {
        if (c->node < m->nnodes) {
            m->nodes[c->node].state = u->state;
            m->nodes[c->node].weight = u->weight;
        }
    }
}

int pk_plan_change(pk_pmap *m, const pk_change *c, pk_plan **out)
{
    pk_plan *p = NULL;
    undo u;
    int rc;

    if (m == NULL || c == NULL || out == NULL) {
        return PK_EINVAL;
    }
    memset(&u, 0, sizeof(u));
    rc = change_record(m, c, &u);
    if (rc == PK_OK) {
        rc = pk_plan_compute(m, &p);
    }
    if (rc != PK_OK) {
        change_undo(m, c, &u);
        goto out;
    }
    if (c->kind == PK_CHANGE_REMOVE) {
        p->retire = c->node;
    }
    *out = p;
out:
    return rc;
}

static void learner_remove(pk_partition *pt, uint32_t n)
{
    for (uint32_t j = 0; j < pt->nlearners; j++) {
        if (pt->learners[j] == n) {
            memmove(&pt->learners[j], &pt->learners[j + 1],
                    (pt->nlearners - j - 1) * sizeof(uint32_t));
            pt->nlearners--;
            return;
        }
    }
}

static int replica_index(const pk_partition *pt, uint32_t n)
{
    for (uint32_t i = 0; i < pt->nreplicas; i++) {
        if (pt->replicas[i] == n) {
            return (int)i;
        }
    }
    return -1;
}

/* Applies one move to m (see pk_plan_apply for the checks). */
static int move_apply(pk_pmap *m, const pk_move *mv)
{
    pk_partition *pt;
    int fi = -1, ti = -1;

    if (mv->part >= m->npartitions || mv->role > PK_ROLE_FOLLOWER ||
        mv->transfer > 1 || mv->from == mv->to ||
        (mv->transfer &&
         (mv->role != PK_ROLE_LEADER || mv->from == NONE || mv->to == NONE))) {
        return PK_EINVAL;
    }
    if ((mv->from != NONE && mv->from >= m->nnodes) ||
        (mv->to != NONE &&
         (mv->to >= m->nnodes || m->nodes[mv->to].state == PK_NODE_REMOVED))) {
        return PK_ESTALE;
    }
    pt = &m->parts[mv->part];
    if (mv->from != NONE) {
        fi = replica_index(pt, mv->from);
        if (fi < 0 || (fi == 0) != (mv->role == PK_ROLE_LEADER)) {
            return PK_ESTALE;
        }
    }
    if (mv->to != NONE) {
        ti = replica_index(pt, mv->to);
        if ((ti >= 0) != (mv->transfer == 1)) {
            return PK_ESTALE;
        }
    }
    if (mv->transfer) {
        pt->replicas[ti] = mv->from;
        pt->replicas[0] = mv->to;
    } else if (mv->from == NONE) {
        if ((pt->nreplicas == 0) != (mv->role == PK_ROLE_LEADER) ||
            pt->nreplicas >= RMAX) {
            return PK_ESTALE;
        }
        pt->replicas[pt->nreplicas++] = mv->to;
        learner_remove(pt, mv->to);
    } else if (mv->to == NONE) {
        if (pt->nreplicas == 1) {
            return PK_EINVAL;
        }
        memmove(&pt->replicas[fi], &pt->replicas[fi + 1],
                (pt->nreplicas - fi - 1) * sizeof(uint32_t));
        pt->nreplicas--;
    } else {
        pt->replicas[fi] = mv->to;
        learner_remove(pt, mv->to);
    }
    return PK_OK;
}

/* Marks node n REMOVED if no partition names it. */
static void retire(pk_pmap *m, uint32_t n)
{
    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        if (replica_index(pt, n) >= 0) {
            return;
        }
        for (uint32_t j = 0; j < pt->nlearners; j++) {
            if (pt->learners[j] == n) {
                return;
            }
        }
    }
    m->nodes[n].state = PK_NODE_REMOVED;
}

int pk_plan_apply(pk_pmap *m, const pk_plan *p)
{
    pk_pmap *c = NULL, tmp;
    int rc;

    if (m == NULL || p == NULL || (p->nmoves && p->moves == NULL)) {
        return PK_EINVAL;
    }
    if (p->retire != NONE && p->retire >= m->nnodes) {
        return PK_ESTALE;
    }
    rc = pk_pmap_clone(m, &c);
    for (uint32_t i = 0; i < p->nmoves && rc == PK_OK; i++) {
        rc = move_apply(c, &p->moves[i]);
    }
    if (rc != PK_OK) {
        goto out;
    }
    if (p->retire != NONE) {
        retire(c, p->retire);
    }
    for (uint32_t q = 0; q < c->npartitions; q++) {
        if (pk_pmap_leader(c, q) != pk_pmap_leader(m, q)) {
            c->parts[q].leader_epoch++;
        }
    }
    c->epoch++;
    tmp = *m;
    *m = *c;
    *c = tmp;
out:
    pk_pmap_free(c);
    return rc;
}

/*
 * Fresh-map layout: eligible nodes in id order lead contiguous runs, run i
 * ending before round(np * (w_0 + ... + w_i) / W), like redis-cli.
 */
static int layout_leaders(pk_pmap *m)
{
    double wsum = 0, cum = 0;
    uint32_t start = 0, last = NONE;

    for (uint32_t n = 0; n < m->nnodes; n++) {
        if (m->nodes[n].state == PK_NODE_UP && m->nodes[n].weight > 0) {
            wsum += m->nodes[n].weight;
            last = n;
        }
    }
    if (last == NONE) {
        return PK_EEMPTY;
    }
    for (uint32_t n = 0; n <= last; n++) {
        uint32_t end;
        if (m->nodes[n].state != PK_NODE_UP || !(m->nodes[n].weight > 0)) {
            continue;
        }
        cum += m->nodes[n].weight;
        end = n == last ? m->npartitions
                        : (uint32_t)llround(m->npartitions * cum / wsum);
        end = end < start ? start : end;
        end = end > m->npartitions ? m->npartitions : end;
        for (; start < end; start++) {
            m->parts[start].replicas[0] = n;
            m->parts[start].nreplicas = 1;
            m->parts[start].leader_epoch++;
        }
    }
    return PK_OK;
}

int pk_plan_initial(pk_pmap *m)
{
    pk_pmap *c = NULL, tmp;
    pk_plan *p = NULL;
    uint32_t owned = 0;
    int rc;

    if (m == NULL) {
        return PK_EINVAL;
    }
    if (pk_pmap_validate(m) != PK_OK) {
        return PK_ECORRUPT;
    }
    for (uint32_t q = 0; q < m->npartitions; q++) {
        owned += m->parts[q].nreplicas > 0;
    }
    if (owned == m->npartitions) {
        return PK_OK;
    }
    rc = pk_pmap_clone(m, &c);
    if (rc == PK_OK && owned == 0) {
        rc = layout_leaders(c);
    }
    if (rc == PK_OK) {
        rc = plan_run(c, owned != 0, &p);
    }
    if (rc == PK_OK) {
        rc = pk_plan_apply(c, p);
    }
    if (rc != PK_OK) {
        goto out;
    }
    c->epoch = m->epoch + 1;
    tmp = *m;
    *m = *c;
    *c = tmp;
out:
    pk_plan_free(p);
    pk_pmap_free(c);
    return rc;
}

void pk_plan_free(pk_plan *p)
{
    if (p == NULL) {
        return;
    }
    free(p->moves);
    free(p->replicas_before);
    free(p->replicas_after);
    free(p->leaders_before);
    free(p->leaders_after);
    free(p->share);
    free(p->leader_share);
    free(p);
}

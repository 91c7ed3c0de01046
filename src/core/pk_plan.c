/*
 * pk_plan: the rebalance planner's public entry points (contract in
 * pk_plan.h) and the pipeline that runs its phases.
 *
 * plan_run copies the map's assignment into a pk__plan_ctx, plans on the
 * copy, and turns the difference between before and after into a pk_plan:
 *
 *   pk__plan_ctx_init     copy and index the assignment      pk_plan_ctx.c
 *   pk__plan_quotas       eligibility, zones, shares, quotas pk_plan_quota.c
 *   A pk__plan_open_holes drop above R, open holes           pk_plan_holes.c
 *   C pk__plan_fill_holes fill each hole, relieving chains   pk_plan_fill.c
 *   B pk__plan_shed       over-quota nodes hand data over    pk_plan_fill.c
 *   pk__plan_polish       cancel negative cycles             pk_plan_polish.c
 *   pk__plan_lead_balance leadership by transfers            pk_plan_lead.c
 *   plan_build            moves (pk__plan_emit), figures     pk_plan.c
 *
 * pk_plan_initial on a partly owned map runs a reduced pipeline: holes
 * only in unowned partitions, filled without touching owned ones, and
 * neither shedding, polish nor leader balancing.  pk_plan_change records
 * the membership change in the map first and takes it back if planning
 * fails, so a refused change leaves the map exactly as it was.
 */
#include "pk_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_plan_int.h"

/* max |cnt - share| over eligible nodes. */
static double max_dev(const pk__plan_ctx *c, const uint32_t *cnt,
                      const double *sh)
{
    double d = 0;

    for (uint32_t j = 0; j < c->ne; j++) {
        uint32_t n = c->el[j];
        double x = fabs((double)cnt[n] - sh[n]);
        d = x > d ? x : d;
    }
    return d;
}

static int plan_build(const pk__plan_ctx *c, pk_plan **out)
{
    pk_plan *pl = calloc(1, sizeof(*pl));
    size_t nn = c->nn ? c->nn : 1;
    uint32_t k = 0;
    int rc = PK_ENOMEM;

    if (pl == NULL) {
        return PK_ENOMEM;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        pl->nmoves += pk__plan_emit(c, p, NULL);
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
        k += pk__plan_emit(c, p, pl->moves + k);
    }
    pl->min_data_moves = pk__plan_bound(c);
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
    pl->retire = PK_NODE_NONE;
    *out = pl;
    pl = NULL;
    rc = PK_OK;
out:
    pk_plan_free(pl);
    return rc;
}

/* Plans m, which has no retired range; unowned_only restricts the plan
 * to unowned partitions. */
static int plan_live(const pk_pmap *m, const uint64_t *size, int sizing,
                     int unowned_only, pk_plan **out)
{
    pk__plan_ctx c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.size = size;
    c.sizing = sizing;
    rc = pk__plan_ctx_init(&c, m);
    if (rc == PK_OK) {
        rc = pk__plan_quotas(&c);
    }
    if (rc != PK_OK) {
        goto out;
    }
    if (unowned_only) {
        pk__plan_open_unowned(&c);
    } else {
        rc = pk__plan_open_holes(&c);
    }
    if (rc == PK_OK) {
        rc = pk__plan_fill_holes(&c, !unowned_only);
    }
    for (uint32_t j = 0; j < c.ne && rc == PK_OK && !unowned_only; j++) {
        rc = pk__plan_shed(&c, c.el[j]);
    }
    if (rc != PK_OK) {
        goto out;
    }
    if (!unowned_only) {
        rc = pk__plan_polish(&c);
        if (rc != PK_OK) {
            goto out;
        }
        pk__plan_lead_balance(&c);
    }
    rc = plan_build(&c, out);
out:
    pk__plan_ctx_free(&c);
    return rc;
}

/* plan_live on m without its retired ranges (merged away: they hold
 * nothing and must get nothing), the moves renumbered back. */
static int plan_run(const pk_pmap *m, const uint64_t *size, int sizing,
                    int unowned_only, pk_plan **out)
{
    pk_pmap *c = NULL;
    uint32_t *ids = NULL;
    uint64_t *csize = NULL;
    int rc;

    if (pk_pmap_live_parts(m) == m->npartitions) {
        return plan_live(m, size, sizing, unowned_only, out);
    }
    rc = pk_pmap_compact(m, &c, &ids);
    if (rc == PK_OK && size != NULL) {
        csize = malloc((c->npartitions + 1) * sizeof(*csize));
        rc = csize ? PK_OK : PK_ENOMEM;
        for (uint32_t i = 0; csize && i < c->npartitions; i++) {
            csize[i] = size[ids[i]];
        }
    }
    if (rc == PK_OK) {
        rc = plan_live(c, csize, sizing, unowned_only, out);
    }
    for (uint32_t i = 0; rc == PK_OK && i < (*out)->nmoves; i++) {
        (*out)->moves[i].part = ids[(*out)->moves[i].part];
    }
    free(csize);
    free(ids);
    pk_pmap_free(c);
    return rc;
}

int pk_plan_compute(const pk_pmap *m, pk_plan **out)
{
    if (m == NULL || out == NULL) {
        return PK_EINVAL;
    }
    return plan_run(m, NULL, 0, 0, out);
}

int pk_plan_compute_sized(const pk_pmap *m, const uint64_t *size,
                          pk_plan_sizing sizing, pk_plan **out)
{
    if (m == NULL || out == NULL ||
        (sizing != PK_PLAN_FAIR_BYTES && sizing != PK_PLAN_FEWEST_BYTES)) {
        return PK_EINVAL;
    }
    return plan_run(m, size, sizing, 0, out);
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
        if (c->replicas == 0 || c->replicas > PK_REPLICAS_MAX) {
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

/*
 * Fresh-map layout: eligible nodes in id order lead contiguous runs, run i
 * ending before round(np * (w_0 + ... + w_i) / W), like redis-cli.
 */
static int layout_leaders(pk_pmap *m)
{
    double wsum = 0, cum = 0;
    uint32_t start = 0, last = PK_NODE_NONE;

    for (uint32_t n = 0; n < m->nnodes; n++) {
        if (m->nodes[n].state == PK_NODE_UP && m->nodes[n].weight > 0) {
            wsum += m->nodes[n].weight;
            last = n;
        }
    }
    if (last == PK_NODE_NONE) {
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
        owned += m->parts[q].nreplicas > 0 || pk_pmap_retired(m, q);
    }
    if (owned == m->npartitions) {
        return PK_OK;
    }
    rc = pk_pmap_clone(m, &c);
    if (rc == PK_OK && owned == 0) {
        rc = layout_leaders(c);
    }
    if (rc == PK_OK) {
        rc = plan_run(c, NULL, 0, owned != 0, &p);
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

/*
 * pk_plan_move: the two sides of a pk_move -- pk__plan_emit derives a
 * partition's moves from its replicas before and after planning, and
 * pk_plan_apply replays moves on a map, checking each against the map as
 * the earlier moves left it.
 *
 * The two are kept together because emit must order moves so that every
 * one passes apply's checks: a move may not copy to a node that already
 * holds the partition, drop the last replica, or hand leadership to a node
 * that is not yet a follower.  Hence, per partition:
 *
 *   1  transfer to a follower that will lead        (no data)
 *   2  copies, the leader's first                   (from -> to)
 *   3  new replicas                                 (NONE -> to)
 *   4  drops                                        (from -> NONE)
 *   5  transfer to a new replica that will lead     (no data)
 */
#include <string.h>

#include "pk_err.h"
#include "pk_plan_int.h"

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

/* Moves of partition p from its replicas before (I) to after (F), in the
 * order above. */
uint32_t pk__plan_emit(const pk__plan_ctx *c, uint32_t p, pk_move *out)
{
    const uint32_t *I = c->init + (size_t)p * PK_REPLICAS_MAX;
    const uint32_t *F = pk__plan_slots(c, p);
    uint32_t nI = c->ninit[p], nF = c->nrep[p];
    uint32_t rm[PK_REPLICAS_MAX], ad[PK_REPLICAS_MAX];
    uint32_t nrm = 0, nad = 0, ri = 0, ai = 0, k = 0;
    uint32_t lead = nI ? I[0] : PK__NONE;

    for (uint32_t i = 0; i < nI; i++) {
        if (pk__plan_find(F, nF, I[i]) < 0) {
            rm[nrm++] = I[i];
        }
    }
    for (uint32_t i = 0; i < nF; i++) {
        if (pk__plan_find(I, nI, F[i]) < 0) {
            ad[nad++] = F[i];
        }
    }
    if (nF == 0) {
        return 0; /* never planned: every partition keeps >= 1 replica */
    }
    if (lead != PK__NONE && lead != F[0] && pk__plan_find(I, nI, F[0]) >= 0) {
        k = put(out, k, p, lead, F[0], PK_ROLE_LEADER, 1);
        lead = F[0];
    }
    if (lead != PK__NONE && nrm && rm[0] == lead && nad && ad[0] == F[0]) {
        k = put(out, k, p, lead, F[0], PK_ROLE_LEADER, 0);
        lead = F[0];
        ri = ai = 1;
    }
    for (; ri < nrm && ai < nad; ri++, ai++) {
        k = put(out, k, p, rm[ri], ad[ai], PK_ROLE_FOLLOWER, 0);
    }
    for (; ai < nad; ai++) {
        pk_role role = lead == PK__NONE ? PK_ROLE_LEADER : PK_ROLE_FOLLOWER;
        k = put(out, k, p, PK__NONE, ad[ai], role, 0);
        lead = lead == PK__NONE ? ad[ai] : lead;
    }
    for (; ri < nrm; ri++) {
        k = put(out, k, p, rm[ri], PK__NONE, PK_ROLE_FOLLOWER, 0);
    }
    if (lead != F[0]) {
        k = put(out, k, p, lead, F[0], PK_ROLE_LEADER, 1);
    }
    return k;
}

static int replica_index(const pk_partition *pt, uint32_t n)
{
    return pk__plan_find(pt->replicas, pt->nreplicas, n);
}

static void learner_remove(pk_partition *pt, uint32_t n)
{
    int j = pk__plan_find(pt->learners, pt->nlearners, n);

    if (j >= 0) {
        memmove(&pt->learners[j], &pt->learners[j + 1],
                (pt->nlearners - (uint32_t)j - 1) * sizeof(uint32_t));
        pt->nlearners--;
    }
}

/* Applies one move to m (see pk_plan_apply for the checks). */
static int move_apply(pk_pmap *m, const pk_move *mv)
{
    pk_partition *pt;
    int fi = -1, ti = -1;

    if (mv->part >= m->npartitions || mv->role > PK_ROLE_FOLLOWER ||
        mv->transfer > 1 || mv->from == mv->to ||
        (mv->transfer && (mv->role != PK_ROLE_LEADER || mv->from == PK__NONE ||
                          mv->to == PK__NONE))) {
        return PK_EINVAL;
    }
    if ((mv->from != PK__NONE && mv->from >= m->nnodes) ||
        (mv->to != PK__NONE &&
         (mv->to >= m->nnodes || m->nodes[mv->to].state == PK_NODE_REMOVED))) {
        return PK_ESTALE;
    }
    pt = &m->parts[mv->part];
    if (mv->from != PK__NONE) {
        fi = replica_index(pt, mv->from);
        if (fi < 0 || (fi == 0) != (mv->role == PK_ROLE_LEADER)) {
            return PK_ESTALE;
        }
    }
    if (mv->to != PK__NONE) {
        ti = replica_index(pt, mv->to);
        if ((ti >= 0) != (mv->transfer == 1)) {
            return PK_ESTALE;
        }
    }
    if (mv->transfer) {
        pt->replicas[ti] = mv->from;
        pt->replicas[0] = mv->to;
    } else if (mv->from == PK__NONE) {
        if ((pt->nreplicas == 0) != (mv->role == PK_ROLE_LEADER) ||
            pt->nreplicas >= PK_REPLICAS_MAX) {
            return PK_ESTALE;
        }
        pt->replicas[pt->nreplicas++] = mv->to;
        learner_remove(pt, mv->to);
    } else if (mv->to == PK__NONE) {
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
        if (replica_index(pt, n) >= 0 ||
            pk__plan_find(pt->learners, pt->nlearners, n) >= 0) {
            return;
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
    if (p->retire != PK__NONE && p->retire >= m->nnodes) {
        return PK_ESTALE;
    }
    rc = pk_pmap_clone(m, &c);
    for (uint32_t i = 0; i < p->nmoves && rc == PK_OK; i++) {
        rc = move_apply(c, &p->moves[i]);
    }
    if (rc != PK_OK) {
        goto out;
    }
    if (p->retire != PK__NONE) {
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

/* pk_pmap_move: begin, commit and cancel a partition move (see header). */
#include "core/pk_pmap_move.h"

#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_range.h"

static int find(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return (int)i;
    return -1;
}

static void drop_at(uint32_t *ids, uint8_t *n, int i)
{
    memmove(&ids[i], &ids[i + 1], (size_t)(*n - i - 1) * sizeof(*ids));
    (*n)--;
}

int pk_pmap_moving(const pk_pmap *m, uint32_t p, uint32_t *to)
{
    if (p >= m->npartitions || m->parts[p].move_target == PK_NODE_NONE)
        return 0;
    if (to)
        *to = m->parts[p].move_target;
    return 1;
}

int pk_pmap_move_begin(pk_pmap *m, uint32_t p, uint32_t to)
{
    pk_partition *pt;
    int ri;

    if (p >= m->npartitions || to >= m->nnodes)
        return PK_EINVAL;
    pt = &m->parts[p];
    ri = find(pt->replicas, pt->nreplicas, to);
    if (pt->nreplicas == 0 || pt->move_target != PK_NODE_NONE || ri == 0 ||
        m->nodes[to].state == PK_NODE_REMOVED ||
        (ri < 0 && find(pt->learners, pt->nlearners, to) < 0 &&
         pt->nlearners >= PK_REPLICAS_MAX))
        return PK_ESTALE;
    if (ri < 0 && find(pt->learners, pt->nlearners, to) < 0)
        pt->learners[pt->nlearners++] = to;
    pt->move_target = to;
    pt->move_state = PK_MOVE_COPYING;
    return PK_OK;
}

int pk_pmap_move_commit(pk_pmap *m, uint32_t p, uint32_t to)
{
    pk_partition *pt;
    int ri, li;

    if (p >= m->npartitions || to >= m->nnodes)
        return PK_EINVAL;
    pt = &m->parts[p];
    if (pt->move_target != to || pt->nreplicas == 0)
        return PK_ESTALE;
    ri = find(pt->replicas, pt->nreplicas, to);
    li = find(pt->learners, pt->nlearners, to);
    if (ri > 0) { /* a follower: swap roles with the leader */
        pt->replicas[ri] = pt->replicas[0];
        pt->replicas[0] = to;
    } else if (li >= 0) { /* a learner takes the leader's place */
        pt->replicas[0] = to;
        drop_at(pt->learners, &pt->nlearners, li);
    } else {
        return PK_ESTALE;
    }
    pt->leader_epoch++;
    pt->move_target = PK_NODE_NONE;
    pt->move_state = PK_MOVE_NONE;
    return PK_OK;
}

int pk_pmap_move_cancel(pk_pmap *m, uint32_t p)
{
    pk_partition *pt;
    int li;

    if (p >= m->npartitions)
        return PK_EINVAL;
    pt = &m->parts[p];
    if (pt->move_target == PK_NODE_NONE)
        return PK_ESTALE;
    li = find(pt->learners, pt->nlearners, pt->move_target);
    if (li >= 0)
        drop_at(pt->learners, &pt->nlearners, li);
    pt->move_target = PK_NODE_NONE;
    pt->move_state = PK_MOVE_NONE;
    return PK_OK;
}

int pk_pmap_split(pk_pmap *m, uint32_t p, const void *at, size_t len,
                  uint32_t *q)
{
    pk_partition *parts, *pt, *nq;
    uint8_t *lo_copy;
    uint32_t n = m->npartitions;

    if (m->scheme != PK_SCHEME_RANGE || p >= n || len == 0 || at == NULL)
        return PK_EINVAL;
    pt = &m->parts[p];
    if (pk_key_cmp(at, len, pt->lo, pt->lo_len) <= 0 ||
        (pt->hi && pk_key_cmp(at, len, pt->hi, pt->hi_len) >= 0))
        return PK_EINVAL;
    if (pt->move_state != PK_MOVE_NONE || pt->nlearners > 0)
        return PK_ESTALE;
    if (n >= PK_PARTITIONS_MAX)
        return PK_EFULL;
    lo_copy = malloc(len);
    if (lo_copy == NULL)
        return PK_ENOMEM;
    parts = realloc(m->parts, (size_t)(n + 1) * sizeof(*parts));
    if (parts == NULL) {
        free(lo_copy);
        return PK_ENOMEM;
    }
    m->parts = parts;
    pt = &parts[p];
    nq = &parts[n];
    *nq = *pt; /* replicas, leader_epoch; takes over pt's hi */
    nq->flags = 0;
    pt->flags &= (uint8_t)~PK_PART_MERGING;
    memcpy(lo_copy, at, len);
    nq->lo = lo_copy;
    nq->lo_len = (uint32_t)len;
    /* p's new hi is a copy of at: the map owns every bound once. */
    pt->hi = malloc(len);
    if (pt->hi == NULL) {
        pt->hi = nq->hi; /* undo: p keeps its hi */
        pt->hi_len = nq->hi_len;
        free(lo_copy);
        return PK_ENOMEM;
    }
    memcpy(pt->hi, at, len);
    pt->hi_len = (uint32_t)len;
    m->npartitions = n + 1;
    *q = n;
    return PK_OK;
}

int pk_pmap_same_replicas(const pk_pmap *m, uint32_t p, uint32_t q)
{
    const pk_partition *a, *b;

    if (p >= m->npartitions || q >= m->npartitions)
        return 0;
    a = &m->parts[p];
    b = &m->parts[q];
    if (a->nreplicas == 0 || a->nreplicas != b->nreplicas)
        return 0;
    for (int i = 0; i < a->nreplicas; i++)
        if (find(b->replicas, b->nreplicas, a->replicas[i]) < 0)
            return 0;
    return 1;
}

int pk_pmap_colocated(const pk_pmap *m, uint32_t p, uint32_t q)
{
    return pk_pmap_same_replicas(m, p, q) &&
           m->parts[p].replicas[0] == m->parts[q].replicas[0];
}

int pk_pmap_merge(pk_pmap *m, uint32_t p, uint32_t q)
{
    pk_partition *a, *b;
    uint8_t *hi;

    if (m->scheme != PK_SCHEME_RANGE || p >= m->npartitions ||
        q >= m->npartitions || p == q)
        return PK_EINVAL;
    a = &m->parts[p];
    b = &m->parts[q];
    if (a->hi == NULL || pk_pmap_retired(m, p) || pk_pmap_retired(m, q) ||
        pk_key_cmp(a->hi, a->hi_len, b->lo, b->lo_len) != 0)
        return PK_EINVAL;
    if (a->move_target != PK_NODE_NONE || b->move_target != PK_NODE_NONE ||
        a->nlearners || b->nlearners || !pk_pmap_colocated(m, p, q))
        return PK_ESTALE;
    hi = malloc(b->lo_len ? b->lo_len : 1);
    if (hi == NULL)
        return PK_ENOMEM;
    memcpy(hi, b->lo, b->lo_len);
    free(a->hi);
    a->hi = b->hi; /* p takes over q's upper bound */
    a->hi_len = b->hi_len;
    a->flags &= (uint8_t)~PK_PART_MERGING;
    b->hi = hi;
    b->hi_len = b->lo_len;
    b->nreplicas = 0;
    b->flags = 0;
    b->leader_epoch++;
    return PK_OK;
}

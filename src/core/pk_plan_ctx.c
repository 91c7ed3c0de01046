/*
 * pk_plan_ctx: the planning state -- its buffers, the copy of the map's
 * assignment it starts from, and the functions through which replicas
 * enter and leave the working assignment (pk__plan_slot_set, _clear,
 * _drop), which keep the per-node replica and leader counts and the lists
 * of partitions planned onto each node in step with it (invariants in
 * pk_plan_int.h).
 *
 * Two indexes let a phase enumerate the partitions a node holds now
 * without scanning every partition: the CSR lists off/lst of what each
 * node held before (fixed), and the lists ahead[] of what was planned onto
 * it since.  Entries go stale when a replica moves on again, so
 * pk__plan_node_parts re-checks each one against the working slots.
 */
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_plan_int.h"

/* First capacity of the list pool; it doubles when full. */
#define POOL_MIN 1024

/*
 * Every buffer the ctx owns, with its length in elements; nn, np, nslot
 * and nhole are locals of ctx_alloc.  ctx_alloc and pk__plan_ctx_free both
 * expand this list, so a new buffer is its field plus one entry here.
 */
/* clang-format off */
#define CTX_BUFS(X)                                                        \
    X(el, nn) X(elpos, nn) X(elig, nn) X(zone, nn)                             \
    X(init, nslot) X(ninit, np) X(rep, nslot) X(nrep, np)                      \
    X(before, nn) X(lbefore, nn) X(cnt, nn) X(q, nn)                           \
    X(rlo, nn) X(rhi, nn) X(lc, nn) X(llo, nn) X(lhi, nn)                      \
    X(share, nn) X(lshare, nn) X(off, nn + 1) X(lst, nslot)                    \
    X(ahead, nn) X(dhead, nn) X(pool, POOL_MIN) X(holes, nhole)                \
    X(avail, nn) X(hleft, np) X(tmp, np) X(mark, np)                           \
    X(dist, nn) X(pnode, nn) X(ppart, nn) X(qa, nn) X(qb, nn) X(done, nn)
/* clang-format on */

static int ctx_alloc(pk__plan_ctx *c)
{
    size_t nn = c->nn ? c->nn : 1, np = c->np;
    size_t nslot = np * PK_REPLICAS_MAX, nhole = np * c->r;

#define ALLOC(f, n)                                                            \
    c->f = calloc((n), sizeof(*c->f));                                         \
    if (c->f == NULL) {                                                        \
        return PK_ENOMEM;                                                      \
    }
    CTX_BUFS(ALLOC)
#undef ALLOC
    c->cappool = POOL_MIN;
    return PK_OK;
}

void pk__plan_ctx_free(pk__plan_ctx *c)
{
#define FREE(f, n) free(c->f);
    CTX_BUFS(FREE)
#undef FREE
}

int pk__plan_ctx_init(pk__plan_ctx *c, const pk_pmap *m)
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
    for (uint32_t n = 0; n < c->nn; n++) {
        c->ahead[n] = c->dhead[n] = PK__NONE;
    }
    for (uint32_t p = 0; p < c->np; p++) {
        const pk_partition *pt = &m->parts[p];
        memcpy(c->init + (size_t)p * PK_REPLICAS_MAX, pt->replicas,
               pt->nreplicas * sizeof(uint32_t));
        memcpy(pk__plan_slots(c, p), pt->replicas,
               pt->nreplicas * sizeof(uint32_t));
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
            uint32_t n = c->init[(size_t)p * PK_REPLICAS_MAX + i];
            c->lst[c->dist[n]++] = p;
        }
    }
    for (uint32_t n = 0; n < c->nn; n++) {
        c->dist[n] = PK__INF; /* drop_chain expects it */
    }
    return PK_OK;
}

int pk__plan_list_push(pk__plan_ctx *c, uint32_t *heads, uint32_t n, uint32_t p)
{
    if (c->npool == c->cappool) {
        uint32_t cap = c->cappool * 2;
        pk__plink *a = realloc(c->pool, cap * sizeof(*a));
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

void pk__plan_slot_clear(pk__plan_ctx *c, uint32_t p, uint32_t i)
{
    uint32_t *s = pk__plan_slots(c, p);

    if (s[i] != PK__NONE) {
        c->cnt[s[i]]--;
        if (i == 0) {
            c->lc[s[i]]--;
        }
    }
    s[i] = PK__NONE;
}

int pk__plan_slot_set(pk__plan_ctx *c, uint32_t p, uint32_t i, uint32_t n)
{
    pk__plan_slot_clear(c, p, i);
    pk__plan_slots(c, p)[i] = n;
    c->cnt[n]++;
    if (i == 0) {
        c->lc[n]++;
    }
    if (pk__plan_in_init(c, p, n)) {
        return PK_OK; /* held before: found through the CSR lists */
    }
    return pk__plan_list_push(c, c->ahead, n, p);
}

void pk__plan_slot_drop(pk__plan_ctx *c, uint32_t p, uint32_t i)
{
    uint32_t *s = pk__plan_slots(c, p);

    pk__plan_slot_clear(c, p, i);
    memmove(s + i, s + i + 1, (c->nrep[p] - i - 1) * sizeof(*s));
    c->nrep[p]--;
    if (i == 0 && c->nrep[p] > 0 && s[0] != PK__NONE) {
        c->lc[s[0]]++;
    }
}

/* Appends p to c->tmp[k] if u holds it and it is not there yet. */
static uint32_t node_part(pk__plan_ctx *c, uint32_t u, uint32_t p, uint32_t k)
{
    if (c->mark[p] != c->gen && pk__plan_slot_index(c, p, u) >= 0) {
        c->mark[p] = c->gen;
        c->tmp[k++] = p;
    }
    return k;
}

uint32_t pk__plan_node_parts(pk__plan_ctx *c, uint32_t u)
{
    uint32_t k = 0;

    if (++c->gen == 0) {
        memset(c->mark, 0, c->np * sizeof(*c->mark));
        c->gen = 1;
    }
    for (uint32_t j = c->off[u]; j < c->off[u + 1]; j++) {
        k = node_part(c, u, c->lst[j], k);
    }
    for (uint32_t e = c->ahead[u]; e != PK__NONE; e = c->pool[e].next) {
        k = node_part(c, u, c->pool[e].p, k);
    }
    return k;
}

/*
 * pk_plan_quota: who may hold replicas and how many each should hold.
 *
 * Eligibility.  A node is eligible when it is UP with a weight > 0.  Zones
 * are numbered in order of first appearance among eligible nodes; when no
 * eligible node names a zone there is one zone and zcap = R, else
 * zcap = ceil(R / nzones) and nodes with an empty zone form one more zone.
 *
 * Shares are water-filled: proportional to weight, a node capped at np
 * (one replica per partition), a zone capped at zcap * np; what a cap cuts
 * off goes to the others by weight.  A quota is the floor or the ceiling
 * of the share.  The sum fixes how many round up; which ones prefers nodes
 * that already hold the ceiling (so a balanced map plans nothing), then
 * the largest remainder, then the lowest id.  No zone rounds up past its
 * cap.  Leaders need no exact quota: [floor, ceil] of the leader share
 * (the same water-filling with R = 1 and no zones) is balanced.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_plan_int.h"

/* Slack for rounding error when a share is compared with an integer. */
#define EPS 1e-6

/*
 * Finds the eligible nodes and numbers their zones.  Returns PK_EEMPTY,
 * PK_EINFEASIBLE (fewer than R places under the zone rule) or PK_ENOMEM.
 */
static int eligibility(pk__plan_ctx *c)
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

/* Gathers into b->idx and b->w the eligible nodes of zone z, or with z ==
 * PK__NONE those of every zone not capped yet; returns how many. */
static uint32_t gather(const pk__plan_ctx *c, fillbuf *b, uint32_t z)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < c->ne; i++) {
        uint32_t n = c->el[i], zn = c->zone[n];
        if (z == PK__NONE ? !b->zcapped[zn] : zn == z) {
            b->idx[k] = n;
            b->w[k++] = c->m->nodes[n].weight;
        }
    }
    return k;
}

/*
 * Replica shares: water-fill over the nodes of uncapped zones; cap every
 * zone whose sum exceeds zcap * np and repeat (the water level only rises,
 * so a capped zone stays capped); then water-fill each capped zone alone.
 */
static void shares(pk__plan_ctx *c, fillbuf *b)
{
    double zc = (double)c->zcap * c->np;
    uint32_t k, nzc = 0;

    memset(b->zcapped, 0, c->nzones);
    for (;;) {
        int changed = 0;

        k = gather(c, b, PK__NONE);
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
        k = gather(c, b, z);
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
static int round_quotas(pk__plan_ctx *c, long long *zb)
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

/* Leader shares and bounds: the water-filling with R = 1 and no zone. */
static void leader_shares(pk__plan_ctx *c, fillbuf *b)
{
    for (uint32_t i = 0; i < c->ne; i++) {
        b->w[i] = c->m->nodes[c->el[i]].weight;
    }
    waterfill(b->w, c->ne, c->np, c->np, b->out, b->capped);
    for (uint32_t i = 0; i < c->ne; i++) {
        uint32_t n = c->el[i];
        double fl = floor(b->out[i] + EPS);
        c->lshare[n] = b->out[i];
        c->llo[n] = (uint32_t)fl;
        c->lhi[n] = c->llo[n] + (b->out[i] - fl > EPS);
    }
}

int pk__plan_quotas(pk__plan_ctx *c)
{
    fillbuf b;
    long long *zb = NULL;
    size_t ne;
    int rc = eligibility(c);

    if (rc != PK_OK) {
        return rc;
    }
    ne = c->ne;
    rc = PK_ENOMEM;
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
    if (rc == PK_OK) {
        leader_shares(c, &b);
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

/*
 * Model test of pk_plan: random sequences of membership changes (fixed
 * seeds), each planned, applied and checked against a naive reference
 * written here independently of the planner:
 *
 *   shares     bisection on the water level of
 *              sum_zones min(zcap*P, sum_nodes min(P, level * weight)) = R*P
 *              (and again inside each zone that hits its cap)
 *   bound      data moves >= sum over nodes of max(0, before - quota) +
 *              missing replicas, with quota = ceil for as many nodes already
 *              at the ceiling as the number of round-ups and the zone caps
 *              allow, floor otherwise (pk_plan.min_data_moves)
 *   optimum    the fewest data moves, by min-cost flow: source -> partition
 *              (R) -> partition x zone (zcap) -> node (1; cost 1 unless the
 *              node held the partition) -> sink (floor units at cost 0, the
 *              ceil unit at a cost above any plan), successive shortest
 *              paths with Dijkstra on reduced costs.  The bound above is not
 *              always reachable: a node that already holds most partitions
 *              a leaving node held, or a zone that already holds its share
 *              of them, forces extra moves.
 *
 * After every step: each partition has min(R, eligible) replicas on
 * distinct eligible nodes, no zone holds more than ceil(R/nzones) of one
 * partition, replica and leader counts are within [floor, ceil] of the
 * shares, the plan's data moves equal the optimum (the bound when it is
 * reachable), nothing is unowned, and planning again yields an empty plan.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap.h"

#define MAX_LIVE 20
#define STEPS 25

/* Where we are, printed with every failed check. */
typedef struct where {
    uint64_t seed;
    int step;
    const char *op;
} where;

#define CHECK_EQ(w, a, b)                                                      \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_) {                                                        \
            print_error("seed %llu step %d (%s): %s = %lld, %s = %lld\n",      \
                        (unsigned long long)(w)->seed, (w)->step, (w)->op, #a, \
                        a_, #b, b_);                                           \
            fail();                                                            \
        }                                                                      \
    } while (0)

#define CHECK_RANGE(w, v, lo, hi)                                              \
    do {                                                                       \
        long long v_ = (long long)(v), l_ = (long long)(lo),                   \
                  h_ = (long long)(hi);                                        \
        if (v_ < l_ || v_ > h_) {                                              \
            print_error("seed %llu step %d (%s): %s = %lld not in "            \
                        "[%lld, %lld]\n",                                      \
                        (unsigned long long)(w)->seed, (w)->step, (w)->op, #v, \
                        v_, l_, h_);                                           \
            fail();                                                            \
        }                                                                      \
    } while (0)

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static uint32_t pick(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rnd(s) % n);
}

static int elig(const pk_pmap *m, uint32_t n)
{
    return m->nodes[n].state == PK_NODE_UP && m->nodes[n].weight > 0;
}

/* ---- the naive reference ---- */

typedef struct ref {
    uint32_t ne, nz, zcap;
    uint32_t *zone;         /* per node, eligible only */
    double *share, *lshare; /* per node, 0 when ineligible */
} ref;

static double level_sum(const pk_pmap *m, const ref *f, uint32_t z, double lam)
{
    double s = 0;

    for (uint32_t n = 0; n < m->nnodes; n++) {
        if (elig(m, n) && f->zone[n] == z) {
            s += fmin(m->npartitions, lam * m->nodes[n].weight);
        }
    }
    return s;
}

static double bisect(const pk_pmap *m, const ref *f, uint32_t zone_only,
                     double target)
{
    double lo = 0, hi = 4.0 * m->npartitions * PK_REPLICAS_MAX;

    for (int it = 0; it < 200; it++) {
        double mid = (lo + hi) / 2, s = 0;
        for (uint32_t z = 0; z < f->nz; z++) {
            double zs = level_sum(m, f, z, mid);
            if (zone_only != UINT32_MAX) {
                s += z == zone_only ? zs : 0;
            } else {
                s += fmin((double)f->zcap * m->npartitions, zs);
            }
        }
        if (s < target) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return hi;
}

static void ref_compute(const pk_pmap *m, ref *f)
{
    const char *names[64];
    double zc, lam, wsum = 0;
    int zoned = 0;

    f->ne = f->nz = 0;
    f->zone = calloc(m->nnodes + 1, sizeof(*f->zone));
    f->share = calloc(m->nnodes + 1, sizeof(*f->share));
    f->lshare = calloc(m->nnodes + 1, sizeof(*f->lshare));
    assert_non_null(f->zone);
    assert_non_null(f->share);
    assert_non_null(f->lshare);
    for (uint32_t n = 0; n < m->nnodes; n++) {
        if (elig(m, n)) {
            f->ne++;
            wsum += m->nodes[n].weight;
            zoned |= m->nodes[n].zone[0] != 0;
        }
    }
    for (uint32_t n = 0; n < m->nnodes; n++) {
        const char *zn = zoned ? m->nodes[n].zone : "";
        uint32_t z = 0;
        if (!elig(m, n)) {
            continue;
        }
        while (z < f->nz && strcmp(names[z], zn) != 0) {
            z++;
        }
        if (z == f->nz) {
            names[f->nz++] = zn;
        }
        f->zone[n] = z;
        f->lshare[n] = (double)m->npartitions * m->nodes[n].weight / wsum;
    }
    if (f->ne == 0) {
        return;
    }
    f->zcap = zoned ? (m->replicas + f->nz - 1) / f->nz : m->replicas;
    zc = (double)f->zcap * m->npartitions;
    lam = bisect(m, f, UINT32_MAX, (double)m->replicas * m->npartitions);
    for (uint32_t z = 0; z < f->nz; z++) {
        double zl = lam;
        if (level_sum(m, f, z, lam) > zc * (1 + 1e-9)) {
            zl = bisect(m, f, z, zc);
        }
        for (uint32_t n = 0; n < m->nnodes; n++) {
            if (elig(m, n) && f->zone[n] == z) {
                f->share[n] = fmin(m->npartitions, zl * m->nodes[n].weight);
            }
        }
    }
}

static void ref_free(ref *f)
{
    free(f->zone);
    free(f->share);
    free(f->lshare);
}

static uint32_t lo_of(double s)
{
    return (uint32_t)floor(s + 1e-6);
}

static uint32_t hi_of(double s)
{
    return (uint32_t)ceil(s - 1e-6);
}

static void counts(const pk_pmap *m, uint32_t *reps, uint32_t *leads)
{
    memset(reps, 0, m->nnodes * sizeof(*reps));
    memset(leads, 0, m->nnodes * sizeof(*leads));
    for (uint32_t p = 0; p < m->npartitions; p++) {
        for (uint32_t i = 0; i < m->parts[p].nreplicas; i++) {
            reps[m->parts[p].replicas[i]]++;
        }
        if (m->parts[p].nreplicas) {
            leads[m->parts[p].replicas[0]]++;
        }
    }
}

/* The fewest data moves that balance m (assignment before the plan). */
static uint32_t ref_bound(const pk_pmap *m, const ref *f)
{
    uint32_t *reps = calloc(m->nnodes + 1, sizeof(*reps));
    uint32_t *leads = calloc(m->nnodes + 1, sizeof(*leads));
    long long room[64], good[64], x = 0, ups, want = 0, can = 0;

    assert_non_null(reps);
    assert_non_null(leads);
    counts(m, reps, leads);
    ups = (long long)m->replicas * m->npartitions;
    for (uint32_t z = 0; z < f->nz; z++) {
        room[z] = (long long)f->zcap * m->npartitions;
        good[z] = 0;
    }
    for (uint32_t n = 0; n < m->nnodes; n++) {
        uint32_t lo, hi;
        if (!elig(m, n)) {
            x += reps[n];
            continue;
        }
        lo = lo_of(f->share[n]);
        hi = hi_of(f->share[n]);
        ups -= lo;
        room[f->zone[n]] -= lo;
        x += reps[n] > hi ? reps[n] - hi : 0;
        if (hi > lo && reps[n] >= hi) {
            good[f->zone[n]]++;
            want++;
        }
    }
    for (uint32_t z = 0; z < f->nz; z++) {
        can += good[z] < room[z] ? good[z] : room[z];
    }
    can = can < ups ? can : ups;
    x += want - can;
    for (uint32_t p = 0; p < m->npartitions; p++) {
        if (m->parts[p].nreplicas < m->replicas) {
            x += m->replicas - m->parts[p].nreplicas;
        }
    }
    free(reps);
    free(leads);
    return (uint32_t)x;
}

/* ---- the exact optimum: min-cost flow ---- */

typedef struct flow {
    int nv, narcs, cap;
    int *head, *to, *next, *res; /* arcs; arc ^ 1 is the reverse */
    long long *cost, *pot, *dist;
    int *prev;       /* arc into a vertex on the path */
    long long *heap; /* (dist << 24 | vertex), binary min-heap */
    int nheap;
} flow;

static void flow_arc(flow *f, int u, int v, int cap, long long cost)
{
    for (int k = 0; k < 2; k++) {
        int a = f->narcs++;
        assert_true(a < f->cap);
        f->to[a] = k ? u : v;
        f->res[a] = k ? 0 : cap;
        f->cost[a] = k ? -cost : cost;
        f->next[a] = f->head[k ? v : u];
        f->head[k ? v : u] = a;
    }
}

static void heap_push(flow *f, long long key)
{
    int i = f->nheap++;

    while (i > 0 && f->heap[(i - 1) / 2] > key) {
        f->heap[i] = f->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    f->heap[i] = key;
}

static long long heap_pop(flow *f)
{
    long long top = f->heap[0], last = f->heap[--f->nheap];
    int i = 0;

    for (;;) {
        int c = 2 * i + 1;
        if (c >= f->nheap) {
            break;
        }
        if (c + 1 < f->nheap && f->heap[c + 1] < f->heap[c]) {
            c++;
        }
        if (f->heap[c] >= last) {
            break;
        }
        f->heap[i] = f->heap[c];
        i = c;
    }
    f->heap[i] = last;
    return top;
}

/* Shortest path s -> t on reduced costs (all >= 0); updates potentials
 * and pushes as much as the path takes.  Returns the units pushed (0: no
 * path) and adds their true cost to *total. */
static int flow_augment(flow *f, int s, int t, long long *total)
{
    const long long inf = (long long)1 << 38;
    long long dt, c = 0;
    int push = INT32_MAX;

    for (int v = 0; v < f->nv; v++) {
        f->dist[v] = inf;
    }
    f->dist[s] = 0;
    f->nheap = 0;
    heap_push(f, (long long)s);
    while (f->nheap > 0) {
        long long key = heap_pop(f), d = key >> 24;
        int u = (int)(key & 0xffffff);
        if (d != f->dist[u]) {
            continue;
        }
        if (u == t) {
            break;
        }
        for (int a = f->head[u]; a >= 0; a = f->next[a]) {
            int v = f->to[a];
            long long nd = d + f->cost[a] + f->pot[u] - f->pot[v];
            if (f->res[a] > 0 && nd < f->dist[v]) {
                f->dist[v] = nd;
                f->prev[v] = a;
                heap_push(f, nd << 24 | v);
            }
        }
    }
    if (f->dist[t] >= inf) {
        return 0;
    }
    dt = f->dist[t];
    for (int v = 0; v < f->nv; v++) {
        f->pot[v] += f->dist[v] < dt ? f->dist[v] : dt;
    }
    for (int v = t; v != s; v = f->to[f->prev[v] ^ 1]) {
        push = f->res[f->prev[v]] < push ? f->res[f->prev[v]] : push;
        c += f->cost[f->prev[v]];
    }
    for (int v = t; v != s; v = f->to[f->prev[v] ^ 1]) {
        f->res[f->prev[v]] -= push;
        f->res[f->prev[v] ^ 1] += push;
    }
    *total += c * push;
    return push;
}

/* Partitions whose eligible holders are the same set are interchangeable;
 * the solver takes each such class as one vertex with k times the
 * capacities (a k-fold flow of a matroid base polytope splits into k
 * integral ones, so the optimum is the same). */
typedef struct pclass {
    uint32_t key[PK_REPLICAS_MAX]; /* eligible holders, sorted, padded */
    uint32_t k;
} pclass;

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(((pclass *)0)->key));
}

static uint32_t classes(const pk_pmap *m, pclass *cl)
{
    uint32_t nc = 0;

    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        uint32_t n = 0;
        memset(&cl[p], 0xff, sizeof(cl[p].key));
        for (uint32_t i = 0; i < pt->nreplicas; i++) {
            uint32_t v = pt->replicas[i], j = n++;
            if (!elig(m, v)) {
                n--;
                continue;
            }
            while (j > 0 && cl[p].key[j - 1] > v) { /* insertion sort */
                cl[p].key[j] = cl[p].key[j - 1];
                j--;
            }
            cl[p].key[j] = v;
        }
    }
    qsort(cl, m->npartitions, sizeof(*cl), key_cmp);
    for (uint32_t p = 0; p < m->npartitions; p++) {
        if (nc > 0 && key_cmp(&cl[nc - 1], &cl[p]) == 0) {
            cl[nc - 1].k++;
        } else {
            memmove(cl[nc].key, cl[p].key, sizeof(cl[p].key));
            cl[nc++].k = 1;
        }
    }
    return nc;
}

/* The fewest data moves that balance m, or -1 when the instance is too
 * big for this naive solver. */
static long long ref_optimum(const pk_pmap *m, const ref *r)
{
    uint32_t np = m->npartitions, nz = r->nz, nn = m->nnodes, nc, flowed = 0;
    long long big = (long long)m->replicas * np + 1, total = 0, moves = 0;
    pclass *cl = calloc(np, sizeof(*cl));
    int src = 0, sink = 1, cbase = 2, zbase, nbase, push;
    flow f;

    assert_non_null(cl);
    nc = classes(m, cl);
    if ((uint64_t)nc * (r->ne + nz) > 200000) {
        free(cl);
        return -1;
    }
    zbase = cbase + (int)nc;
    nbase = zbase + (int)(nc * nz);
    memset(&f, 0, sizeof(f));
    f.nv = nbase + (int)nn;
    f.cap = 2 * (int)(nc * (1 + nz + r->ne) + 2 * nn);
    f.head = malloc(f.nv * sizeof(int));
    f.to = malloc(f.cap * sizeof(int));
    f.next = malloc(f.cap * sizeof(int));
    f.res = malloc(f.cap * sizeof(int));
    f.cost = malloc(f.cap * sizeof(long long));
    f.pot = calloc(f.nv, sizeof(long long));
    f.dist = malloc(f.nv * sizeof(long long));
    f.prev = malloc(f.nv * sizeof(int));
    f.heap = malloc((f.cap + f.nv) * sizeof(long long));
    assert_true(f.head && f.to && f.next && f.res && f.cost && f.pot &&
                f.dist && f.prev && f.heap);
    for (int v = 0; v < f.nv; v++) {
        f.head[v] = -1;
    }
    for (uint32_t c = 0; c < nc; c++) {
        int k = (int)cl[c].k;
        flow_arc(&f, src, cbase + (int)c, m->replicas * k, 0);
        for (uint32_t z = 0; z < nz; z++) {
            flow_arc(&f, cbase + (int)c, zbase + (int)(c * nz + z),
                     (int)r->zcap * k, 0);
        }
        for (uint32_t n = 0; n < nn; n++) {
            int held = 0;
            if (!elig(m, n)) {
                continue;
            }
            for (uint32_t i = 0; i < PK_REPLICAS_MAX; i++) {
                held |= cl[c].key[i] == n;
            }
            flow_arc(&f, zbase + (int)(c * nz + r->zone[n]), nbase + (int)n, k,
                     held ? 0 : 1);
        }
    }
    for (uint32_t p = 0; p < np; p++) {
        uint32_t h = m->parts[p].nreplicas;
        moves += h > m->replicas ? h : m->replicas;
    }
    for (uint32_t n = 0; n < nn; n++) {
        if (elig(m, n)) {
            uint32_t lo = lo_of(r->share[n]), hi = hi_of(r->share[n]);
            flow_arc(&f, nbase + (int)n, sink, (int)lo, 0);
            if (hi > lo) {
                flow_arc(&f, nbase + (int)n, sink, (int)(hi - lo), big);
            }
        }
    }
    while (flowed < m->replicas * np &&
           (push = flow_augment(&f, src, sink, &total)) > 0) {
        flowed += (uint32_t)push;
    }
    assert_int_equal(flowed, m->replicas * np);
    free(f.head);
    free(f.to);
    free(f.next);
    free(f.res);
    free(f.cost);
    free(f.pot);
    free(f.dist);
    free(f.prev);
    free(f.heap);
    free(cl);
    /* per partition: max(R, before) - kept, and R * P - kept = adds */
    return moves - (long long)m->replicas * np + total % big;
}

/* Every property of a balanced map, against the reference f. */
static void check_map(const pk_pmap *m, const ref *f, const where *w)
{
    uint32_t *reps = calloc(m->nnodes + 1, sizeof(*reps));
    uint32_t *leads = calloc(m->nnodes + 1, sizeof(*leads));
    uint32_t want = m->replicas < f->ne ? m->replicas : f->ne;

    assert_non_null(reps);
    assert_non_null(leads);
    CHECK_EQ(w, pk_pmap_validate(m), PK_OK);
    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        uint32_t inzone[PK_REPLICAS_MAX] = {0};
        CHECK_EQ(w, pt->nreplicas, want);
        for (uint32_t i = 0; i < pt->nreplicas; i++) {
            uint32_t n = pt->replicas[i];
            CHECK_EQ(w, elig(m, n), 1);
            for (uint32_t j = 0; j < i; j++) {
                if (pt->replicas[j] == n) {
                    CHECK_EQ(w, pt->replicas[j], UINT32_MAX);
                }
                inzone[i] += f->zone[pt->replicas[j]] == f->zone[n];
            }
            CHECK_RANGE(w, inzone[i] + 1, 1, f->zcap);
        }
    }
    counts(m, reps, leads);
    for (uint32_t n = 0; n < m->nnodes; n++) {
        if (!elig(m, n)) {
            CHECK_EQ(w, reps[n], 0);
            continue;
        }
        CHECK_RANGE(w, reps[n], lo_of(f->share[n]), hi_of(f->share[n]));
        CHECK_RANGE(w, leads[n], lo_of(f->lshare[n]), hi_of(f->lshare[n]));
    }
    free(reps);
    free(leads);
}

/* ---- the random walk ---- */

static const double weights[] = {0.5, 1.0, 2.0};
static const char *const zone_names[] = {"za", "zb", "zc", "zd"};

typedef struct walk {
    pk_pmap *m;
    uint64_t rng;
    uint32_t nzones; /* 0: no zones */
    uint32_t names;  /* node names handed out */
    where w;
    uint32_t planned, refused;
    uint32_t exact;       /* steps checked against the optimum */
    uint32_t unreachable; /* ... where the bound was out of reach */
} walk;

static uint32_t live(const pk_pmap *m)
{
    uint32_t k = 0;

    for (uint32_t n = 0; n < m->nnodes; n++) {
        k += m->nodes[n].state != PK_NODE_REMOVED;
    }
    return k;
}

/* A random node whose state is in the mask (bit per pk_node_state). */
static uint32_t random_node(walk *k, unsigned mask)
{
    uint32_t cand[256], nc = 0;

    assert_true(k->m->nnodes <= 256);
    for (uint32_t n = 0; n < k->m->nnodes; n++) {
        if (mask & (1u << k->m->nodes[n].state)) {
            cand[nc++] = n;
        }
    }
    return nc ? cand[pick(&k->rng, nc)] : UINT32_MAX;
}

/* Builds a random change; state changes the API has no kind for (DOWN,
 * back UP) are made on the map and planned as PK_CHANGE_NONE; *undo_node
 * and *undo_state say how to take them back. */
static void random_change(walk *k, pk_change *c, char *name, uint32_t *un,
                          uint8_t *us)
{
    uint32_t op = pick(&k->rng, 10), n;

    memset(c, 0, sizeof(*c));
    *un = UINT32_MAX;
    if (op <= 2 && live(k->m) < MAX_LIVE) {
        snprintf(name, 16, "x%u", k->names++);
        c->kind = PK_CHANGE_ADD;
        c->name = name;
        c->addr = "127.0.0.1:7000";
        c->zone = k->nzones ? zone_names[pick(&k->rng, k->nzones)] : NULL;
        c->weight = weights[pick(&k->rng, 3)];
        k->w.op = "add";
    } else if (op == 3 && (n = random_node(k, 0x7)) != UINT32_MAX) {
        c->kind = PK_CHANGE_REMOVE;
        c->node = n;
        k->w.op = "remove";
    } else if (op == 4 && (n = random_node(k, 0x1)) != UINT32_MAX) {
        c->kind = PK_CHANGE_DRAIN;
        c->node = n;
        k->w.op = "drain";
    } else if (op == 5 && (n = random_node(k, 0x7)) != UINT32_MAX) {
        c->kind = PK_CHANGE_WEIGHT;
        c->node = n;
        c->weight = pick(&k->rng, 8) == 0 ? 0 : weights[pick(&k->rng, 3)];
        k->w.op = "weight";
    } else if (op == 6) {
        c->kind = PK_CHANGE_REPLICAS;
        c->replicas = (uint8_t)(1 + pick(&k->rng, 3));
        k->w.op = "replicas";
    } else if (op == 7 && (n = random_node(k, 0x1)) != UINT32_MAX) {
        *un = n;
        *us = PK_NODE_UP;
        k->m->nodes[n].state = PK_NODE_DOWN;
        k->w.op = "down";
    } else if ((n = random_node(k, 0x6)) != UINT32_MAX) {
        *un = n;
        *us = k->m->nodes[n].state;
        k->m->nodes[n].state = PK_NODE_UP;
        k->w.op = "up";
    } else {
        k->w.op = "none";
    }
}

static void walk_step(walk *k)
{
    pk_pmap *before = NULL;
    pk_plan *pl = NULL, *again = NULL;
    pk_change c;
    char name[16];
    uint32_t un, bound;
    long long best;
    uint8_t us = 0;
    ref f;
    int rc;

    assert_int_equal(pk_pmap_clone(k->m, &before), PK_OK);
    random_change(k, &c, name, &un, &us);
    rc = pk_plan_change(k->m, &c, &pl);
    if (rc == PK_EINFEASIBLE || rc == PK_EEMPTY) {
        if (un != UINT32_MAX) {
            k->m->nodes[un].state = us;
        }
        CHECK_EQ(&k->w, pk_pmap_equal(k->m, before), 1);
        k->refused++;
        pk_pmap_free(before);
        return;
    }
    CHECK_EQ(&k->w, rc, PK_OK);
    /* The reference sees the new membership and the old assignment. */
    ref_compute(k->m, &f);
    bound = ref_bound(k->m, &f);
    best = ref_optimum(k->m, &f);
    CHECK_EQ(&k->w, pl->min_data_moves, bound);
    CHECK_RANGE(&k->w, pl->ndata, bound, UINT32_MAX);
    if (best >= 0) {
        CHECK_EQ(&k->w, pl->ndata, best);
        k->exact++;
        k->unreachable += best > bound;
    }
    CHECK_EQ(&k->w, pk_plan_apply(k->m, pl), PK_OK);
    CHECK_EQ(&k->w, k->m->epoch, before->epoch + 1);
    if (c.kind == PK_CHANGE_REMOVE) {
        CHECK_EQ(&k->w, k->m->nodes[c.node].state, PK_NODE_REMOVED);
    }
    check_map(k->m, &f, &k->w);
    CHECK_EQ(&k->w, pk_plan_compute(k->m, &again), PK_OK);
    CHECK_EQ(&k->w, again->nmoves, 0);
    k->planned++;
    ref_free(&f);
    pk_plan_free(again);
    pk_plan_free(pl);
    pk_pmap_free(before);
}

/* One walk of STEPS changes; zoned walks spread nodes over 2..4 zones. */
static void walk_run(uint64_t seed, int zoned, walk *k)
{
    static const uint32_t sizes[] = {64, 256, 1024};
    uint32_t np, n0;
    uint8_t r;
    ref f;

    memset(k, 0, sizeof(*k));
    k->rng = seed * 0x9E3779B97F4A7C15ULL + 1;
    k->w.seed = seed;
    k->w.op = "initial";
    np = seed % 8 == 7 ? PK_SLOTS : sizes[pick(&k->rng, 3)];
    r = (uint8_t)(1 + pick(&k->rng, 3));
    n0 = r + pick(&k->rng, 10);
    k->nzones = zoned ? 2 + pick(&k->rng, 3) : 0;
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, np, r, &k->m),
                     PK_OK);
    for (uint32_t i = 0; i < n0; i++) {
        char name[16];
        uint32_t id;
        snprintf(name, sizeof(name), "x%u", k->names++);
        assert_int_equal(
            pk_pmap_node_add(k->m, name, NULL,
                             k->nzones ? zone_names[i % k->nzones] : NULL,
                             weights[pick(&k->rng, 3)], &id),
            PK_OK);
    }
    /* Round-robin zones always leave room for R replicas. */
    assert_int_equal(pk_plan_initial(k->m), PK_OK);
    ref_compute(k->m, &f);
    check_map(k->m, &f, &k->w);
    ref_free(&f);
    for (k->w.step = 1; k->w.step <= STEPS; k->w.step++) {
        walk_step(k);
    }
    pk_pmap_free(k->m);
}

static void walks(uint64_t first, uint64_t last, int zoned)
{
    uint32_t planned = 0, refused = 0, exact = 0, unreachable = 0;

    for (uint64_t seed = first; seed <= last; seed++) {
        walk k;
        walk_run(seed, zoned, &k);
        planned += k.planned;
        refused += k.refused;
        exact += k.exact;
        unreachable += k.unreachable;
    }
    print_message("%u changes planned and checked (%u against the exact "
                  "optimum, %u of them above the simple bound), %u refused "
                  "as infeasible\n",
                  planned, exact, unreachable, refused);
    assert_true(planned > 400);
}

static void test_random_walks(void **state)
{
    (void)state;
    walks(1, 20, 0);
}

static void test_random_walks_zones(void **state)
{
    (void)state;
    walks(101, 120, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_walks),
        cmocka_unit_test(test_random_walks_zones),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

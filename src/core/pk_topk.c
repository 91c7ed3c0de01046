/* pk_topk: Space-Saving over decayed counts (see pk_topk.h). */
#include "core/pk_topk.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/pk_err.h"

static double total(const pk_topk_entry *e)
{
    return e->count[0] + e->count[1] + e->tick[0] + e->tick[1];
}

static int less(const pk_topk *t, uint32_t a, uint32_t b)
{
    return total(&t->e[t->heap[a]]) < total(&t->e[t->heap[b]]);
}

static void heap_swap(pk_topk *t, uint32_t a, uint32_t b)
{
    uint32_t x = t->heap[a];

    t->heap[a] = t->heap[b];
    t->heap[b] = x;
    t->pos[t->heap[a]] = a;
    t->pos[t->heap[b]] = b;
}

/* Entry at heap place i grew: it sinks toward the leaves. */
static void sift_down(pk_topk *t, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < t->n && less(t, l, m))
            m = l;
        if (r < t->n && less(t, r, m))
            m = r;
        if (m == i)
            return;
        heap_swap(t, i, m);
        i = m;
    }
}

static void sift_up(pk_topk *t, uint32_t i)
{
    while (i > 0 && less(t, i, (i - 1) / 2)) {
        heap_swap(t, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

int pk_topk_init(pk_topk *t, uint32_t k, double sampling)
{
    memset(t, 0, sizeof(*t));
    if (k == 0 || k > PK_TOPK_MAX || !(sampling > 0 && sampling <= 1))
        return PK_EINVAL;
    t->k = k;
    t->sampling = sampling;
    t->tick_s = 1;
    for (t->nslots = 1; t->nslots < 4 * k; t->nslots *= 2)
        ;
    t->nfilter = t->nslots * PK_TOPK_FILTER_PER_SLOT;
    t->e = calloc(k, sizeof(*t->e));
    t->heap = calloc(k, sizeof(*t->heap));
    t->pos = calloc(k, sizeof(*t->pos));
    t->slot = calloc(t->nslots, sizeof(*t->slot));
    t->filter = calloc(t->nfilter, sizeof(*t->filter));
    if (!t->e || !t->heap || !t->pos || !t->slot || !t->filter) {
        pk_topk_free(t);
        return PK_ENOMEM;
    }
    return PK_OK;
}

void pk_topk_free(pk_topk *t)
{
    free(t->e);
    free(t->heap);
    free(t->pos);
    free(t->slot);
    free(t->filter);
    memset(t, 0, sizeof(*t));
}

uint64_t pk_topk_hash(const void *key, size_t len)
{
    return XXH3_64bits(key, len);
}

static int same(const pk_topk_entry *e, const void *key, size_t len,
                uint64_t hash)
{
    size_t kept = len < PK_TOPK_KEY_MAX ? len : PK_TOPK_KEY_MAX;

    return e->hash == hash && e->len == kept &&
           e->truncated == (len > PK_TOPK_KEY_MAX) &&
           memcmp(e->key, key, kept) == 0;
}

/* The index slot of key: its entry's, or the empty one it would take. */
static uint32_t find_slot(const pk_topk *t, const void *key, size_t len,
                          uint64_t hash)
{
    uint32_t mask = t->nslots - 1, i = (uint32_t)hash & mask;

    while (t->slot[i] && !same(&t->e[t->slot[i] - 1], key, len, hash))
        i = (i + 1) & mask;
    return i;
}

/* Removes entry x from the index (linear probing: the run after it is
 * put back). */
static void unindex(pk_topk *t, uint32_t x)
{
    uint32_t mask = t->nslots - 1;
    const pk_topk_entry *e = &t->e[x];
    uint32_t i = find_slot(
        t, e->key, e->truncated ? PK_TOPK_KEY_MAX + 1 : e->len, e->hash);

    t->slot[i] = 0;
    for (i = (i + 1) & mask; t->slot[i]; i = (i + 1) & mask) {
        uint32_t y = t->slot[i] - 1, j;
        t->slot[i] = 0;
        j = (uint32_t)t->e[y].hash & mask;
        while (t->slot[j])
            j = (j + 1) & mask;
        t->slot[j] = y + 1;
    }
}

void pk_topk_add(pk_topk *t, const void *key, size_t len, uint64_t hash,
                 uint32_t part, int write)
{
    uint32_t i, x;
    pk_topk_entry *e;
    uint16_t *f;
    double inherit = 0;

    if (t->k == 0)
        return;
    f = &t->filter[(uint32_t)(hash >> 32) & (t->nfilter - 1)];
    if (*f < UINT16_MAX)
        (*f)++;
    i = find_slot(t, key, len, hash);
    if (t->slot[i]) {
        x = t->slot[i] - 1;
        t->e[x].tick[write != 0] += 1;
        sift_down(t, t->pos[x]);
        return;
    }
    /* Full: a key whose filter count (at least its own) is not above the
     * smallest tracked count could not be among the k hottest. */
    if (t->n == t->k && (double)*f <= total(&t->e[t->heap[0]]))
        return;
    if (t->n < t->k) {
        x = t->n;
        t->heap[t->n] = x;
        t->pos[x] = t->n++;
    } else {
        x = t->heap[0]; /* the smallest count gives up its place */
        t->replaced++;
        inherit = total(&t->e[x]);
        unindex(t, x);
        i = find_slot(t, key, len, hash);
    }
    e = &t->e[x];
    e->count[0] = e->count[1] = e->tick[0] = e->tick[1] = 0;
    e->hash = hash;
    e->len = (uint16_t)(len < PK_TOPK_KEY_MAX ? len : PK_TOPK_KEY_MAX);
    e->truncated = len > PK_TOPK_KEY_MAX;
    memcpy(e->key, key, e->len);
    e->part = part;
    e->err = inherit;
    /* The inherited count, split as the tick's own kind. */
    e->count[write != 0] = inherit;
    e->tick[write != 0] = 1;
    t->slot[i] = x + 1;
    sift_down(t, t->pos[x]);
    sift_up(t, t->pos[x]);
}

void pk_topk_tick(pk_topk *t, double tick_s)
{
    for (uint32_t x = 0; x < t->n; x++) {
        pk_topk_entry *e = &t->e[x];
        for (int w = 0; w < 2; w++) {
            e->count[w] = (e->count[w] + e->tick[w]) / 2;
            e->tick[w] = 0;
        }
        e->err /= 2;
    }
    for (uint32_t i = 0; i < t->nfilter; i++)
        t->filter[i] /= 2;
    /* Halving keeps the order but the ticks changed it: rebuild. */
    for (uint32_t i = t->n / 2; i-- > 0;)
        sift_down(t, i);
    if (tick_s > 0)
        t->tick_s = tick_s;
}

double pk_topk_rate(const pk_topk *t, const pk_topk_entry *e, int which)
{
    return e->count[which != 0] / (t->sampling * t->tick_s);
}

double pk_topk_err(const pk_topk *t, const pk_topk_entry *e)
{
    return e->err / (t->sampling * t->tick_s);
}

static int hotter(const void *a, const void *b)
{
    const pk_topk_entry *x = *(const pk_topk_entry *const *)a;
    const pk_topk_entry *y = *(const pk_topk_entry *const *)b;
    double dx = x->count[0] + x->count[1], dy = y->count[0] + y->count[1];

    return dx < dy ? 1 : dx > dy ? -1 : 0;
}

uint32_t pk_topk_top(const pk_topk *t, const pk_topk_entry **out, uint32_t cap)
{
    const pk_topk_entry **all;
    uint32_t n = 0;

    if (t->n == 0 || cap == 0)
        return 0;
    all = malloc(t->n * sizeof(*all));
    if (all == NULL)
        return 0;
    for (uint32_t x = 0; x < t->n; x++)
        all[x] = &t->e[x];
    qsort(all, t->n, sizeof(*all), hotter);
    n = cap < t->n ? cap : t->n;
    memcpy(out, all, n * sizeof(*out));
    free(all);
    return n;
}

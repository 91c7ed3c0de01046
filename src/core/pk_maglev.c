/*
 * pk_maglev: the populate loop of Maglev, section 3.4, with weighted turns.
 *
 * The permutation matrix of the paper (n x M) is never materialised: a
 * node's next candidate slot is its last one plus skip, mod M, so a build
 * keeps three numbers per node and the table itself.  While building, the
 * table holds node indexes with SLOT_EMPTY for free slots; once full, the
 * indexes are replaced by ids in place.
 *
 * Termination: each round the heaviest node takes a turn and every turn
 * fills exactly one slot (a permutation visits every slot, so a free one is
 * always found while the table is not full).
 */
#include "pk_maglev.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "pk_err.h"

#define SLOT_EMPTY UINT32_MAX

struct pk_maglev {
    uint32_t *table; /* owned; size entries, each an id */
    uint32_t size;   /* M, prime */
};

/* A node's walk through its permutation during the build. */
typedef struct maglev_walk {
    uint32_t pos;  /* next slot to try */
    uint32_t skip; /* 1..M-1 */
    double share;  /* weight / heaviest weight, in (0, 1] */
    double credit; /* turns owed; a turn costs 1 */
} maglev_walk;

static int is_prime(uint32_t v)
{
    if (v < 2) {
        return 0;
    }
    if (v % 2 == 0 || v % 3 == 0) {
        return v == 2 || v == 3;
    }
    for (uint64_t d = 5; d * d <= v; d += 6) {
        if (v % d == 0 || v % (d + 2) == 0) {
            return 0;
        }
    }
    return 1;
}

static int maglev_check(const pk_place_node *nodes, uint32_t n, uint32_t size,
                        double *wmax)
{
    if (size > PK_MAGLEV_SIZE_MAX) {
        return PK_ERANGE;
    }
    if (!is_prime(size) || size < n) {
        return PK_EINVAL;
    }
    *wmax = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double w = nodes[i].weight;

        if (nodes[i].name == NULL || nodes[i].id == PK_PLACE_NONE ||
            !isfinite(w) || !(w > 0.0)) {
            return PK_EINVAL;
        }
        if (w > *wmax) {
            *wmax = w;
        }
    }
    return PK_OK;
}

/* One turn of node i: claims the first free slot of its permutation. */
static void maglev_turn(uint32_t *table, uint32_t size, maglev_walk *w,
                        uint32_t i)
{
    uint32_t c = w->pos;

    while (table[c] != SLOT_EMPTY) {
        c = (uint32_t)(((uint64_t)c + w->skip) % size);
    }
    table[c] = i;
    w->pos = (uint32_t)(((uint64_t)c + w->skip) % size);
}

static void maglev_populate(uint32_t *table, uint32_t size, maglev_walk *walk,
                            uint32_t n)
{
    uint32_t filled = 0;

    for (uint32_t s = 0; s < size; s++) {
        table[s] = SLOT_EMPTY;
    }
    while (filled < size) {
        for (uint32_t i = 0; i < n && filled < size; i++) {
            walk[i].credit += walk[i].share;
            if (walk[i].credit < 1.0) {
                continue;
            }
            walk[i].credit -= 1.0;
            maglev_turn(table, size, &walk[i], i);
            filled++;
        }
    }
}

int pk_maglev_new(const pk_place_node *nodes, uint32_t n, uint32_t table_size,
                  pk_maglev **out)
{
    maglev_walk *walk = NULL;
    pk_maglev *m = NULL;
    double wmax = 0.0;
    int rc;

    if (out == NULL) {
        return PK_EINVAL;
    }
    if (n == 0) {
        return PK_EEMPTY;
    }
    if (nodes == NULL) {
        return PK_EINVAL;
    }
    rc = maglev_check(nodes, n, table_size, &wmax);
    if (rc != PK_OK) {
        return rc;
    }
    rc = PK_ENOMEM;
    walk = malloc(sizeof(*walk) * n);
    m = calloc(1, sizeof(*m));
    if (walk == NULL || m == NULL) {
        goto done;
    }
    m->size = table_size;
    m->table = malloc(sizeof(*m->table) * table_size);
    if (m->table == NULL) {
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        const char *name = nodes[i].name;
        size_t len = strlen(name);
        uint64_t off = XXH3_64bits_withSeed(name, len, PK_MAGLEV_SEED_OFFSET);
        uint64_t skp = XXH3_64bits_withSeed(name, len, PK_MAGLEV_SEED_SKIP);

        walk[i].pos = (uint32_t)(off % table_size);
        walk[i].skip = (uint32_t)(skp % (table_size - 1) + 1);
        walk[i].share = nodes[i].weight / wmax;
        walk[i].credit = 0.0;
    }
    maglev_populate(m->table, table_size, walk, n);
    for (uint32_t s = 0; s < table_size; s++) {
        m->table[s] = nodes[m->table[s]].id;
    }
    *out = m;
    m = NULL;
    rc = PK_OK;
done:
    pk_maglev_free(m);
    free(walk);
    return rc;
}

uint32_t pk_maglev_lookup(const pk_maglev *m, uint64_t h)
{
    return m->table[h % m->size];
}

uint32_t pk_maglev_size(const pk_maglev *m)
{
    return m->size;
}

void pk_maglev_free(pk_maglev *m)
{
    if (m == NULL) {
        return;
    }
    free(m->table);
    free(m);
}

/*
 * pk_maglev: Maglev consistent hashing (Eisenbud et al., "Maglev: A Fast
 * and Reliable Software Network Load Balancer", NSDI 2016, section 3.4).
 *
 * Each node owns a permutation of the M table slots, given by
 *
 *   offset = XXH3_64bits_withSeed(name, PK_MAGLEV_SEED_OFFSET) % M
 *   skip   = XXH3_64bits_withSeed(name, PK_MAGLEV_SEED_SKIP) % (M - 1) + 1
 *   permutation[j] = (offset + j * skip) % M
 *
 * and the nodes take turns claiming the next free slot of their own
 * permutation until the table is full.  M must be prime so that every skip
 * is coprime with M and every permutation covers the whole table.  Equal
 * weights give every node floor(M/n) or ceil(M/n) slots.
 *
 * Weights change only how often a node takes a turn: each round, node i
 * adds weight_i / max_weight to a credit and takes one turn while the
 * credit is at least 1 (spending 1).  The heaviest node turns every round,
 * a node of half its weight every other round, so slot shares follow the
 * weights; with all weights equal this is exactly the paper's algorithm.
 * A node whose weight is negligible next to the heaviest may get no slot.
 *
 * A lookup is one modulo and one table read.  A pk_maglev is immutable
 * once built; every function taking a const pk_maglev is thread-safe.
 */
#ifndef PK_CORE_PK_MAGLEV_H
#define PK_CORE_PK_MAGLEV_H

#include <stdint.h>

#include "pk_place.h"

/* The paper's table size for small clusters; prime. */
#define PK_MAGLEV_DEFAULT_SIZE 65537u

/* Largest accepted table size (the table costs 4 bytes per slot). */
#define PK_MAGLEV_SIZE_MAX (1u << 26)

/* Fixed seeds of the offset and skip hashes ("MAGLEVOF", "MAGLEVSK").  The
 * placement depends on them, so they never change. */
#define PK_MAGLEV_SEED_OFFSET UINT64_C(0x4d41474c45564f46)
#define PK_MAGLEV_SEED_SKIP UINT64_C(0x4d41474c4556534b)

typedef struct pk_maglev pk_maglev;

/*
 * Builds a lookup table of table_size slots for nodes[0..n-1].
 *
 * nodes       borrowed for the duration of the call only.
 * table_size  a prime >= n, e.g. PK_MAGLEV_DEFAULT_SIZE; the paper advises
 *             M well above 100 * n for shares within about 1%.
 * out         receives a new table, owned by the caller, freed with
 *             pk_maglev_free(); left untouched on failure.
 *
 * Returns PK_OK;
 *   PK_EEMPTY   n == 0;
 *   PK_EINVAL   out or nodes NULL, table_size not prime or < n, a NULL
 *               name, an id equal to PK_PLACE_NONE, or a weight that is not
 *               finite and positive;
 *   PK_ERANGE   table_size > PK_MAGLEV_SIZE_MAX;
 *   PK_ENOMEM   out of memory.
 */
int pk_maglev_new(const pk_place_node *nodes, uint32_t n, uint32_t table_size,
                  pk_maglev **out);

/* The id owning slot h % table_size. */
uint32_t pk_maglev_lookup(const pk_maglev *m, uint64_t h);

/* The table size M given to pk_maglev_new(). */
uint32_t pk_maglev_size(const pk_maglev *m);

/* Frees a table.  pk_maglev_free(NULL) does nothing. */
void pk_maglev_free(pk_maglev *m);

#endif

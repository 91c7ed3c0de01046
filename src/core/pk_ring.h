/*
 * pk_ring: consistent hashing on a ring of virtual nodes (Karger et al.).
 *
 * Every node puts points on a 64-bit ring; a key hash belongs to the node
 * owning the first point strictly greater than it, wrapping past the top of
 * the ring to the lowest point.  The string formats are a contract (the
 * simulator reproduces published figures with them), so they never change:
 *
 *   point i of node "name" = hash("name#i"), i in decimal from 0
 *   node with weight w     gets max(1, (int)(vnodes * w)) points
 *   equal point hashes     the first one generated wins (array order, then
 *                          i ascending); later duplicates are dropped
 *
 *        0                                              2^64-1
 *        |----a----b-------a--------c-----b---------c----|
 *                  ^ h   -> owner of the next point: a
 *        h past the last point wraps to the first point: a
 *
 * A ring is immutable once built; every function taking a const ring is
 * thread-safe.
 */
#ifndef PK_CORE_PK_RING_H
#define PK_CORE_PK_RING_H

#include <stddef.h>
#include <stdint.h>

#include "pk_hash.h"
#include "pk_place.h"

/* Upper bound on the total number of points on one ring. */
#define PK_RING_POINTS_MAX (1u << 26)

/* A usual number of virtual nodes per node of weight 1. */
#define PK_RING_DEFAULT_VNODES 150u

typedef struct pk_ring pk_ring;

/*
 * Builds a ring from nodes[0..n-1], processed in array order.
 *
 * nodes   borrowed for the duration of the call only (names are hashed,
 *         not kept).
 * vnodes  points per node of weight 1, >= 1.
 * hash    the point hash, e.g. pk_hash_md5_64 or pk_hash_xxh3.
 * out     receives a new ring, owned by the caller, freed with
 *         pk_ring_free(); left untouched on failure.
 *
 * Returns PK_OK;
 *   PK_EEMPTY   n == 0;
 *   PK_EINVAL   out, nodes or hash NULL, vnodes == 0, a NULL name, an id
 *               equal to PK_PLACE_NONE, or a weight that is not finite and
 *               positive;
 *   PK_ERANGE   more than PK_RING_POINTS_MAX points in total;
 *   PK_ENOMEM   out of memory.
 */
int pk_ring_new(const pk_place_node *nodes, uint32_t n, uint32_t vnodes,
                pk_hash_fn hash, pk_ring **out);

/*
 * The id of the owner of the first point strictly greater than h, or of the
 * lowest point if no point is greater.  O(1) expected for well-mixed point
 * hashes (a top-level index narrows the search to about one point), and
 * O(log points) in the worst case.
 */
uint32_t pk_ring_lookup(const pk_ring *r, uint64_t h);

/*
 * The first R distinct owners met walking clockwise from the point that
 * pk_ring_lookup(r, h) picks, that point's owner first.  If the ring has
 * fewer than R distinct owners, all of them are returned.  Owners are
 * distinct by id.  Allocates nothing; O(steps * R) where steps is the
 * number of points walked.
 *
 * out     caller's array of at least R entries.
 * nout    receives the number of ids written (<= R).
 *
 * Returns PK_OK, or PK_EINVAL if r or nout is NULL, or out is NULL while
 * R > 0.  On failure nothing is written.
 */
int pk_ring_replicas(const pk_ring *r, uint64_t h, uint32_t R, uint32_t *out,
                     uint32_t *nout);

/* Number of points on the ring, after duplicates were dropped. */
size_t pk_ring_points(const pk_ring *r);

/* Frees a ring.  pk_ring_free(NULL) does nothing. */
void pk_ring_free(pk_ring *r);

#endif

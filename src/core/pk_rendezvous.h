/*
 * pk_rendezvous: highest-random-weight hashing (Thaler & Ravishankar).
 *
 * Every node scores every key; the highest score owns it.  The string
 * format is a contract (the simulator reproduces published figures with
 * it), so it never changes:
 *
 *   score of node "name" for key bytes k = hash("name|" followed by k),
 *   as an unsigned 64-bit integer; ties go to the lower array index.
 *
 * When every weight is exactly 1.0 the score is that hash.  Otherwise the
 * logarithmic method (Schindelhauer & Resch) is used:
 *
 *   u     = (top 53 bits of the hash + 0.5) / 2^53, always in (0, 1)
 *   score = -weight / ln(u)
 *
 * which makes a node's expected share of keys proportional to its weight.
 * This is (hash + 0.5) / 2^64 at double precision, taken from the top 53
 * bits so it is exact: converting all 64 bits would round hashes near 2^64
 * up to u = 1, where ln(u) = 0.
 *
 * Lookups cost one hash per node, O(n).  A pk_hrw is immutable once built;
 * every function taking a const pk_hrw is thread-safe.
 */
#ifndef PK_CORE_PK_RENDEZVOUS_H
#define PK_CORE_PK_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "pk_hash.h"
#include "pk_place.h"

/*
 * Lookups lay out "name|key" in a stack buffer of this many bytes.  If the
 * longest name plus one plus the key does not fit (keys of about 2 KiB),
 * the call mallocs room for it instead.
 */
#define PK_HRW_STACK_BYTES 2048u

typedef struct pk_hrw pk_hrw;

/*
 * Builds a rendezvous placement from nodes[0..n-1].
 *
 * nodes   borrowed for the duration of the call only; names are copied.
 * hash    the score hash, e.g. pk_hash_md5_64 or pk_hash_xxh3; kept.
 * out     receives a new pk_hrw, owned by the caller, freed with
 *         pk_hrw_free(); left untouched on failure.
 *
 * Returns PK_OK;
 *   PK_EEMPTY   n == 0;
 *   PK_EINVAL   out, nodes or hash NULL, a NULL name, an id equal to
 *               PK_PLACE_NONE, or a weight that is not finite and positive;
 *   PK_ENOMEM   out of memory.
 */
int pk_hrw_new(const pk_place_node *nodes, uint32_t n, pk_hash_fn hash,
               pk_hrw **out);

/*
 * The id of the highest-scoring node for the key bytes key[0..len-1] (key
 * may be NULL when len is 0).  Allocates nothing unless the longest name
 * plus one plus len exceeds PK_HRW_STACK_BYTES; if that one allocation
 * fails, returns PK_PLACE_NONE.
 */
uint32_t pk_hrw_lookup(const pk_hrw *h, const void *key, size_t len);

/*
 * The ids of the min(R, n) highest-scoring nodes for the key, highest
 * first (ties: lower array index first).  out[0] is pk_hrw_lookup()'s
 * answer.  Allocates only for R > 64 or a key too long for the stack
 * buffer.
 *
 * out     caller's array of at least R entries.
 * nout    receives the number of ids written.
 *
 * Returns PK_OK; PK_EINVAL if h or nout is NULL, out is NULL while R > 0,
 * or key is NULL while len > 0; PK_ENOMEM.  On failure nothing is written.
 */
int pk_hrw_top(const pk_hrw *h, const void *key, size_t len, uint32_t R,
               uint32_t *out, uint32_t *nout);

/* Frees a pk_hrw.  pk_hrw_free(NULL) does nothing. */
void pk_hrw_free(pk_hrw *h);

#endif

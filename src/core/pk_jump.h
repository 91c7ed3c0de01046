/*
 * pk_jump: jump consistent hash (Lamping & Veach, "A Fast, Minimal Memory,
 * Consistent Hash Algorithm", 2014) and the plain modulo baseline.
 *
 * Both map a 64-bit key hash to a bucket number with no state at all, so
 * buckets can only be numbered 0..n-1 and can only be added or removed at
 * the top.  Jump moves about 1/(n+1) of the keys when n grows by one, all
 * of them to the new bucket; modulo moves about n/(n+1) of them.
 *
 * Pure functions; thread-safe.
 */
#ifndef PK_CORE_PK_JUMP_H
#define PK_CORE_PK_JUMP_H

#include <stdint.h>

/*
 * The bucket in 0..nbuckets-1 for key, exactly as the paper's listing
 * computes it (LCG multiplier 2862933555777941757, so results match every
 * other faithful implementation).  Returns -1 if nbuckets <= 0.
 * O(ln nbuckets).
 */
int32_t pk_jump_bucket(uint64_t key, int32_t nbuckets);

/* h % n, or UINT32_MAX if n == 0. */
uint32_t pk_mod_bucket(uint64_t h, uint32_t n);

#endif

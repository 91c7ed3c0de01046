/*
 * pk_jump: jump consistent hash and modulo.
 *
 * The jump loop is a transcription of the paper's C++ listing; the only
 * change is spelling the constants as C.  Each iteration draws the next
 * bucket a key would jump to from a 64-bit LCG seeded with the key, so the
 * sequence of jumps of a key is fixed and growing n only ever cuts it
 * later: a key moves when n grows only if it jumps to the new bucket.
 */
#include "pk_jump.h"

int32_t pk_jump_bucket(uint64_t key, int32_t nbuckets)
{
    int64_t b = -1;
    int64_t j = 0;

    while (j < nbuckets) {
        b = j;
        key = key * UINT64_C(2862933555777941757) + 1;
        j = (int64_t)((double)(b + 1) *
                      ((double)(INT64_C(1) << 31) / (double)((key >> 33) + 1)));
    }
    return (int32_t)b;
}

uint32_t pk_mod_bucket(uint64_t h, uint32_t n)
{
    if (n == 0) {
        return UINT32_MAX;
    }
    return (uint32_t)(h % n);
}

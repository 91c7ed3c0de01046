/*
 * Helpers shared by the libFuzzer targets that parse a stream twice -- in
 * one piece and in chunks -- and compare the two runs: an assertion that
 * stays on in every build, the seed taken from the input, and the chunk
 * sizes drawn from it.  Header-only, so that each target still builds
 * from its one .c file and the sources it tests.
 */
#ifndef PK_FUZZ_FUZZ_UTIL_H
#define PK_FUZZ_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Aborts, for libFuzzer to report, when c does not hold (even -DNDEBUG). */
#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

/* FNV-1a of the input's first 16 bytes, mixed with its size: the same
 * input always gets the same limits and chunking. */
static inline uint64_t fuzz_seed(const uint8_t *data, size_t size)
{
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < size && i < 16; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    return h ^ size;
}

/*
 * Chunk sizes for feeding an input: with seed 0 the rest in one piece;
 * otherwise 1 to 1 + seed % 97 bytes at a time, drawn from an LCG.
 */
typedef struct fuzz_chunks {
    uint64_t seed; /* LCG state, advanced by each chunk; 0: one piece */
    size_t max;    /* largest chunk while seed is not 0 */
} fuzz_chunks;

static inline fuzz_chunks fuzz_chunks_init(uint64_t seed, size_t size)
{
    fuzz_chunks ch = {seed, seed ? 1 + seed % 97 : size};

    return ch;
}

/* The size of the next chunk, at most left (which must not be 0). */
static inline size_t fuzz_chunk_next(fuzz_chunks *ch, size_t left)
{
    size_t c = left;

    if (ch->seed) {
        ch->seed = ch->seed * 6364136223846793005ULL + 1442695040888963407ULL;
        c = 1 + (size_t)(ch->seed >> 33) % ch->max;
        c = c < left ? c : left;
    }
    return c;
}

#endif

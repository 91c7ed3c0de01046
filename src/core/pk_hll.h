/*
 * pk_hll: HyperLogLog sketches with Redis's parameters and string format,
 * so that PFCOUNT answers what redis-server answers for the same inputs
 * and a value copied from Redis (GET / SET) works here.  Pure: no I/O,
 * no allocation.
 *
 * An element is hashed with MurmurHash64A (seed 0xadc83b19); the low 14
 * bits pick one of 16384 registers, the register keeps the largest
 * "position of the first 1 bit" of the remaining 50 bits (1..51).  The
 * estimate is Ertl's improved estimator over the register histogram.
 *
 * Stored value (a string):
 *
 *   0 "HYLL" | 4 u8 encoding (0 dense, 1 sparse) | 5 3 bytes unused
 *   | 8 u64 cached cardinality, little-endian; bit 7 of byte 15 set:
 *     the cache is stale | 16 registers
 *
 *   dense   16384 registers of 6 bits, register i at bits 6i..6i+5
 *           counted from the least significant bit of byte 0 (12288 B)
 *   sparse  runs: 00xxxxxx        xxxxxx + 1 zero registers (1..64)
 *                 01xxxxxx yyyyyyyy  x:y + 1 zero registers (1..16384)
 *                 1vvvvvxx        xx + 1 registers of value vvvvv + 1
 *           covering exactly 16384 registers
 *
 * Functions work on an unpacked array of PK_HLL_REGS bytes (one per
 * register), which the caller owns.  Thread-safe.
 */
#ifndef PK_CORE_PK_HLL_H
#define PK_CORE_PK_HLL_H

#include <stddef.h>
#include <stdint.h>

#define PK_HLL_P 14
#define PK_HLL_REGS (1u << PK_HLL_P)
#define PK_HLL_BITS 6
#define PK_HLL_HDR 16
#define PK_HLL_DENSE_LEN (PK_HLL_HDR + PK_HLL_REGS * PK_HLL_BITS / 8)
#define PK_HLL_SPARSE_MAX 3000 /* Redis's hll-sparse-max-bytes default */
#define PK_HLL_SEED 0xadc83b19ull

/* MurmurHash64A of p[0..len) (Austin Appleby's algorithm, blocks read
 * little-endian on every host). */
uint64_t pk_hll_murmur64a(const void *p, size_t len, uint64_t seed);

/* Adds an element to reg; returns 1 if a register grew, else 0. */
int pk_hll_add(uint8_t *reg, const void *p, size_t len);

/*
 * Checks a string's header: 0 when it is an HLL value (magic, a known
 * encoding, and for dense the exact length), else PK_EINVAL (Redis
 * answers WRONGTYPE "Key is not a valid HyperLogLog string value.").
 */
int pk_hll_check(const uint8_t *v, size_t len);

/*
 * Unpacks the registers of an HLL value into reg.  Returns 0, PK_EINVAL
 * as pk_hll_check, or PK_ECORRUPT for sparse runs that do not cover
 * exactly 16384 registers (Redis: INVALIDOBJ).
 */
int pk_hll_decode(const uint8_t *v, size_t len, uint8_t *reg);

/* 1 and *card when v (checked) holds a valid cached cardinality. */
int pk_hll_cached(const uint8_t *v, uint64_t *card);

/*
 * Packs reg into out (PK_HLL_DENSE_LEN bytes): sparse when allowed, all
 * registers are <= 32 and it takes at most PK_HLL_SPARSE_MAX bytes, else
 * dense.  The cache holds card when card_ok, else is marked stale.
 * Returns the value's length.
 */
size_t pk_hll_encode(const uint8_t *reg, int sparse_ok, uint64_t card,
                     int card_ok, uint8_t *out);

/* The cardinality estimate of reg. */
uint64_t pk_hll_count(const uint8_t *reg);

/* dst[i] = max(dst[i], src[i]) for every register. */
void pk_hll_merge(uint8_t *dst, const uint8_t *src);

#endif

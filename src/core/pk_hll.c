/*
 * pk_hll: HyperLogLog registers, the value codec and the estimate (format
 * in pk_hll.h).
 *
 * Every update unpacks the registers (16 KiB), changes them and packs
 * them again, rather than editing sparse runs in place: a few tens of
 * microseconds per command, and one simple codec instead of run surgery.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"

#define Q (64 - PK_HLL_P) /* hash bits left for the rank */
#define ENC_DENSE 0
#define ENC_SPARSE 1
#define STALE 0x80u /* in byte 15: the cached cardinality is stale */

static_assert(PK_HLL_DENSE_LEN == 16 + 12288, "dense size as Redis's");

uint64_t pk_hll_murmur64a(const void *p, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ull;
    const int r = 47;
    const uint8_t *d = p;
    uint64_t h = seed ^ (len * m), k;
    size_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        k = 0;
        for (int b = 7; b >= 0; b--) {
            k = k << 8 | d[i + (size_t)b];
        }
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    if (len & 7) {
        for (size_t b = len & 7; b-- > 0;) {
            h ^= (uint64_t)d[i + b] << (8 * b);
        }
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

int pk_hll_add(uint8_t *reg, const void *p, size_t len)
{
    uint64_t h = pk_hll_murmur64a(p, len, PK_HLL_SEED);
    uint32_t idx = (uint32_t)(h & (PK_HLL_REGS - 1));
    uint8_t rank = 1;

    /* A sentinel bit bounds the rank at Q + 1. */
    h = (h >> PK_HLL_P) | (1ull << Q);
    while ((h & 1) == 0) {
        rank++;
        h >>= 1;
    }
    if (reg[idx] >= rank) {
        return 0;
    }
    reg[idx] = rank;
    return 1;
}

int pk_hll_check(const uint8_t *v, size_t len)
{
    if (len < PK_HLL_HDR || memcmp(v, "HYLL", 4) != 0 || v[4] > ENC_SPARSE ||
        (v[4] == ENC_DENSE && len != PK_HLL_DENSE_LEN)) {
        return PK_EINVAL;
    }
    return 0;
}

static unsigned dense_get(const uint8_t *p, uint32_t i)
{
    uint32_t bit = i * PK_HLL_BITS, b = bit / 8, s = bit % 8;
    unsigned v = p[b] >> s;

    if (s > 8 - PK_HLL_BITS) {
        v |= (unsigned)p[b + 1] << (8 - s);
    }
    return v & 63u;
}

static void dense_set(uint8_t *p, uint32_t i, unsigned v)
{
    uint32_t bit = i * PK_HLL_BITS, b = bit / 8, s = bit % 8;

    p[b] = (uint8_t)((p[b] & ~(63u << s)) | (v << s));
    if (s > 8 - PK_HLL_BITS) {
        p[b + 1] = (uint8_t)((p[b + 1] & ~(63u >> (8 - s))) | (v >> (8 - s)));
    }
}

static int sparse_decode(const uint8_t *p, size_t n, uint8_t *reg)
{
    uint32_t idx = 0, run, val;

    for (size_t i = 0; i < n; i++) {
        if ((p[i] & 0xc0) == 0x00) {
            run = (p[i] & 0x3fu) + 1;
            val = 0;
        } else if ((p[i] & 0xc0) == 0x40) {
            if (i + 1 >= n) {
                return PK_ECORRUPT;
            }
            run = ((p[i] & 0x3fu) << 8 | p[i + 1]) + 1;
            val = 0;
            i++;
        } else {
            run = (p[i] & 0x3u) + 1;
            val = ((p[i] >> 2) & 0x1fu) + 1;
        }
        if (run > PK_HLL_REGS - idx) {
            return PK_ECORRUPT;
        }
        memset(reg + idx, (int)val, run);
        idx += run;
    }
    return idx == PK_HLL_REGS ? 0 : PK_ECORRUPT;
}

int pk_hll_decode(const uint8_t *v, size_t len, uint8_t *reg)
{
    int rc = pk_hll_check(v, len);

    if (rc != 0) {
        return rc;
    }
    if (v[4] == ENC_SPARSE) {
        return sparse_decode(v + PK_HLL_HDR, len - PK_HLL_HDR, reg);
    }
    for (uint32_t i = 0; i < PK_HLL_REGS; i++) {
        reg[i] = (uint8_t)dense_get(v + PK_HLL_HDR, i);
    }
    return 0;
}

int pk_hll_cached(const uint8_t *v, uint64_t *card)
{
    uint64_t c = 0;

    if (v[15] & STALE) {
        return 0;
    }
    for (int i = 7; i >= 0; i--) {
        c = c << 8 | v[8 + i];
    }
    *card = c;
    return 1;
}

/* Writes the sparse runs of reg to out (room for n bytes): the length,
 * or 0 when reg does not fit (a register above 32, or more than n). */
static size_t sparse_encode(const uint8_t *reg, uint8_t *out, size_t n)
{
    size_t o = 0;
    uint32_t i = 0, run, chunk;

    while (i < PK_HLL_REGS) {
        uint8_t v = reg[i];
        for (run = 1; i + run < PK_HLL_REGS && reg[i + run] == v; run++) {
        }
        if (v > 32) {
            return 0;
        }
        i += run;
        while (run > 0) {
            if (o + 2 > n) {
                return 0;
            }
            if (v == 0 && run > 64) {
                chunk = run > PK_HLL_REGS ? PK_HLL_REGS : run;
                out[o++] = (uint8_t)(0x40 | (chunk - 1) >> 8);
                out[o++] = (uint8_t)(chunk - 1);
            } else if (v == 0) {
                chunk = run;
                out[o++] = (uint8_t)(chunk - 1);
            } else {
                chunk = run > 4 ? 4 : run;
                out[o++] = (uint8_t)(0x80 | (v - 1) << 2 | (chunk - 1));
            }
            run -= chunk;
        }
    }
    return o;
}

size_t pk_hll_encode(const uint8_t *reg, int sparse_ok, uint64_t card,
                     int card_ok, uint8_t *out)
{
    size_t n = 0;

    memcpy(out, "HYLL", 4);
    memset(out + 4, 0, PK_HLL_HDR - 4);
    for (int i = 0; i < 8; i++) {
        out[8 + i] = (uint8_t)(card >> (8 * i));
    }
    if (!card_ok) {
        out[15] |= STALE;
    }
    if (sparse_ok) {
        n = sparse_encode(reg, out + PK_HLL_HDR,
                          PK_HLL_SPARSE_MAX - PK_HLL_HDR);
    }
    if (n > 0) {
        out[4] = ENC_SPARSE;
        return PK_HLL_HDR + n;
    }
    out[4] = ENC_DENSE;
    memset(out + PK_HLL_HDR, 0, PK_HLL_DENSE_LEN - PK_HLL_HDR);
    for (uint32_t i = 0; i < PK_HLL_REGS; i++) {
        dense_set(out + PK_HLL_HDR, i, reg[i] & 63u);
    }
    return PK_HLL_DENSE_LEN;
}

void pk_hll_merge(uint8_t *dst, const uint8_t *src)
{
    for (uint32_t i = 0; i < PK_HLL_REGS; i++) {
        dst[i] = src[i] > dst[i] ? src[i] : dst[i];
    }
}

/* Ertl's sigma(x) = x + sum_k x^(2^k) 2^(k-1), for x in [0, 1]. */
static double sigma(double x)
{
    double y = 1, z = x, prev;

    if (x == 1.0) {
        return INFINITY;
    }
    do {
        x *= x;
        prev = z;
        z += x * y;
        y += y;
    } while (z != prev);
    return z;
}

/* Ertl's tau(x) = (1 - x - sum_k (1 - x^(2^-k))^2 2^-k) / 3. */
static double tau(double x)
{
    double y = 1, z = 1 - x, prev;

    if (x == 0.0 || x == 1.0) {
        return 0;
    }
    do {
        x = sqrt(x);
        prev = z;
        y *= 0.5;
        z -= (1 - x) * (1 - x) * y;
    } while (z != prev);
    return z / 3;
}

uint64_t pk_hll_count(const uint8_t *reg)
{
    const double m = PK_HLL_REGS, alpha = 0.5 / log(2.0);
    uint32_t hist[64] = {0};
    double z;

    for (uint32_t i = 0; i < PK_HLL_REGS; i++) {
        hist[reg[i] & 63u]++;
    }
    /* Ranks above Q + 1 cannot come from pk_hll_add; a value written
     * elsewhere may hold them, and like Redis the sum leaves them out. */
    z = m * tau((m - hist[Q + 1]) / m);
    for (int k = Q; k >= 1; k--) {
        z += hist[k];
        z *= 0.5;
    }
    z += m * sigma(hist[0] / m);
    return (uint64_t)llround(alpha * m * m / z);
}

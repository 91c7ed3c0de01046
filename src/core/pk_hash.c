/*
 * pk_hash: XXH3, MD5-64, Murmur3 (Cassandra flavour) and CRC16 slots.
 *
 * CRC16 uses a 256-entry table built at compile time from the polynomial,
 * so there is no table to mistype and no run-time initialisation.
 */
#include "pk_hash.h"

#include <openssl/md5.h>
#include <string.h>
#include <xxhash.h>

#include "pk_err.h"

uint64_t pk_hash_xxh3(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

uint64_t pk_hash_md5_64(const void *data, size_t len)
{
    unsigned char d[MD5_DIGEST_LENGTH];
    uint64_t v = 0;

    /* MD5() is deprecated in OpenSSL 3 only in favour of EVP, which costs
     * an allocation per call; the one-shot function is what we want. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    MD5(data, len, d);
#pragma GCC diagnostic pop
    for (int i = 0; i < 8; i++)
        v = (v << 8) | d[i];
    return v;
}

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static inline uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* A tail byte as Cassandra's Java code reads it: a signed byte widened. */
static inline uint64_t tail_byte(const unsigned char *p, size_t i)
{
    return (uint64_t)(int64_t)(int8_t)p[i];
}

void pk_hash_murmur3_128(const void *data, size_t len, uint64_t out[2])
{
    const unsigned char *p = data;
    const uint64_t c1 = 0x87c37b91114253d5ULL;
    const uint64_t c2 = 0x4cf5ad432745937fULL;
    size_t nblocks = len / 16;
    uint64_t h1 = 0, h2 = 0, k1 = 0, k2 = 0;

    for (size_t i = 0; i < nblocks; i++) {
        k1 = load_le64(p + i * 16);
        k2 = load_le64(p + i * 16 + 8);
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl64(h1, 27);
        h1 += h2;
        h1 = h1 * 5 + 0x52dce729;
        k2 *= c2;
        k2 = rotl64(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        h2 = rotl64(h2, 31);
        h2 += h1;
        h2 = h2 * 5 + 0x38495ab5;
    }

    const unsigned char *t = p + nblocks * 16;
    k1 = 0;
    k2 = 0;
    switch (len & 15) {
    case 15:
        k2 ^= tail_byte(t, 14) << 48; /* fall through */
    case 14:
        k2 ^= tail_byte(t, 13) << 40; /* fall through */
    case 13:
        k2 ^= tail_byte(t, 12) << 32; /* fall through */
    case 12:
        k2 ^= tail_byte(t, 11) << 24; /* fall through */
    case 11:
        k2 ^= tail_byte(t, 10) << 16; /* fall through */
    case 10:
        k2 ^= tail_byte(t, 9) << 8; /* fall through */
    case 9:
        k2 ^= tail_byte(t, 8);
        k2 *= c2;
        k2 = rotl64(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        /* fall through */
    case 8:
        k1 ^= tail_byte(t, 7) << 56; /* fall through */
    case 7:
        k1 ^= tail_byte(t, 6) << 48; /* fall through */
    case 6:
        k1 ^= tail_byte(t, 5) << 40; /* fall through */
    case 5:
        k1 ^= tail_byte(t, 4) << 32; /* fall through */
    case 4:
        k1 ^= tail_byte(t, 3) << 24; /* fall through */
    case 3:
        k1 ^= tail_byte(t, 2) << 16; /* fall through */
    case 2:
        k1 ^= tail_byte(t, 1) << 8; /* fall through */
    case 1:
        k1 ^= tail_byte(t, 0);
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        h1 ^= k1;
    }

    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = h1;
    out[1] = h2;
}

uint64_t pk_hash_murmur3(const void *data, size_t len)
{
    uint64_t h[2];

    pk_hash_murmur3_128(data, len, h);
    return h[0];
}

int64_t pk_hash_cassandra_token(const void *data, size_t len)
{
    int64_t t = (int64_t)pk_hash_murmur3(data, len);

    return t == INT64_MIN ? INT64_MAX : t;
}

/* The CRC16/XMODEM table, each entry computed from the polynomial. */
#define PK__CRC_STEP(c) (((c)&0x8000) ? (((c) << 1) ^ 0x1021) : ((c) << 1))
#define PK__CRC_E(n)                                                           \
    ((uint16_t)PK__CRC_STEP(PK__CRC_STEP(PK__CRC_STEP(PK__CRC_STEP(            \
        PK__CRC_STEP(PK__CRC_STEP(PK__CRC_STEP(PK__CRC_STEP((n) << 8)))))))))
#define PK__CRC_R4(n)                                                          \
    PK__CRC_E(n), PK__CRC_E((n) + 1), PK__CRC_E((n) + 2), PK__CRC_E((n) + 3)
#define PK__CRC_R16(n)                                                         \
    PK__CRC_R4(n), PK__CRC_R4((n) + 4), PK__CRC_R4((n) + 8),                   \
        PK__CRC_R4((n) + 12)
#define PK__CRC_R64(n)                                                         \
    PK__CRC_R16(n), PK__CRC_R16((n) + 16), PK__CRC_R16((n) + 32),              \
        PK__CRC_R16((n) + 48)

static const uint16_t crc16_table[256] = {PK__CRC_R64(0), PK__CRC_R64(64),
                                          PK__CRC_R64(128), PK__CRC_R64(192)};

uint16_t pk_hash_crc16(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint16_t crc = 0;

    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

size_t pk_hash_tag(const void *key, size_t len, const void **part)
{
    const char *k = key;
    const char *open = len ? memchr(k, '{', len) : NULL;

    if (open) {
        size_t from = (size_t)(open - k) + 1;
        const char *close = memchr(k + from, '}', len - from);
        if (close && close > k + from) {
            *part = k + from;
            return (size_t)(close - (k + from));
        }
    }
    *part = key;
    return len;
}

uint16_t pk_hash_slot(const void *key, size_t len)
{
    const void *tag;
    size_t n = pk_hash_tag(key, len, &tag);

    return pk_hash_crc16(tag, n) & (PK_SLOTS - 1);
}

pk_hash_fn pk_hash_get(pk_hash_kind kind)
{
    switch (kind) {
    case PK_HASH_XXH3:
        return pk_hash_xxh3;
    case PK_HASH_MD5:
        return pk_hash_md5_64;
    case PK_HASH_MURMUR3:
        return pk_hash_murmur3;
    }
    return NULL;
}

static const char *const hash_names[] = {"xxh3", "md5", "murmur3"};

int pk_hash_parse(const char *name, pk_hash_kind *out)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, hash_names[i]) == 0) {
            *out = (pk_hash_kind)i;
            return PK_OK;
        }
    }
    return PK_EINVAL;
}

const char *pk_hash_name(pk_hash_kind kind)
{
    return (unsigned)kind < 3 ? hash_names[kind] : "?";
}

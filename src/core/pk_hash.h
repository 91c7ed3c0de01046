/*
 * pk_hash: the stable 64-bit hashes partkv places keys with.
 *
 * Every function here is deterministic across machines, processes and
 * releases: partition and placement decisions are persisted and shared
 * between nodes, so a hash may never be seeded at random.  All functions are
 * pure and thread-safe.
 *
 *   xxh3     XXH3-64, seed 0 (libxxhash) -- the default, fastest
 *   md5      first 8 bytes of MD5, read big-endian (OpenSSL)
 *   murmur3  MurmurHash3 x64-128, seed 0, as Cassandra's Murmur3Partitioner
 *            computes it; the 64-bit value is the first half (h1)
 *   crc16    CRC16/XMODEM, Redis Cluster's slot function
 */
#ifndef PK_CORE_PK_HASH_H
#define PK_CORE_PK_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Number of Redis Cluster hash slots. */
#define PK_SLOTS 16384

typedef enum pk_hash_kind {
    PK_HASH_XXH3 = 0,
    PK_HASH_MD5 = 1,
    PK_HASH_MURMUR3 = 2,
} pk_hash_kind;

/* Signature shared by the 64-bit hashes, so callers can pick one once. */
typedef uint64_t (*pk_hash_fn)(const void *data, size_t len);

uint64_t pk_hash_xxh3(const void *data, size_t len);
uint64_t pk_hash_md5_64(const void *data, size_t len);

/*
 * MurmurHash3 x64-128 with seed 0, written to out[0] (h1) and out[1] (h2).
 * Like Cassandra's MurmurHash.hash3_x64_128, bytes of the final partial
 * block are sign-extended before mixing; for keys whose tail has no byte of
 * 0x80 or more this equals the reference implementation.
 */
void pk_hash_murmur3_128(const void *data, size_t len, uint64_t out[2]);

/* h1 of pk_hash_murmur3_128. */
uint64_t pk_hash_murmur3(const void *data, size_t len);

/*
 * Cassandra's token for a partition key: h1 as a signed 64-bit value, with
 * INT64_MIN (reserved by Cassandra as the minimum token) mapped to INT64_MAX.
 */
int64_t pk_hash_cassandra_token(const void *data, size_t len);

/* CRC16/XMODEM (poly 0x1021, init 0, no reflection, xorout 0). */
uint16_t pk_hash_crc16(const void *data, size_t len);

/*
 * The part of a key that places it (Redis Cluster's hash-tag rule): if the
 * key holds a '{' followed later by a '}' with at least one byte between
 * them, the bytes between the first '{' and the first '}' after it, else
 * the whole key.  Sets *part (into key) and returns its length.
 */
size_t pk_hash_tag(const void *key, size_t len, const void **part);

/* Redis Cluster hash slot of a key, in 0..PK_SLOTS-1: CRC16 of its
 * pk_hash_tag part. */
uint16_t pk_hash_slot(const void *key, size_t len);

/* The hash function for a kind, or NULL for an unknown kind. */
pk_hash_fn pk_hash_get(pk_hash_kind kind);

/* Parses "xxh3", "md5" or "murmur3".  Returns 0 or PK_EINVAL. */
int pk_hash_parse(const char *name, pk_hash_kind *out);

/* "xxh3", "md5", "murmur3", or "?" for an unknown kind. */
const char *pk_hash_name(pk_hash_kind kind);

#endif

/*
 * pk_keyenc: the order-preserving byte encoding of every key the store
 * writes to LMDB.
 *
 * All records of the data DB share one layout, so that a partition is one
 * contiguous key range and the records of one user key are one contiguous
 * run inside it:
 *
 *   +----------+--------------------------+------+-----+---------------+
 *   | part u32 | user key, 0x00 -> 00 FF  | 00 01| tag | sub-key       |
 *   | big-end. | (escaped)                | term | u8  | (raw, last)   |
 *   +----------+--------------------------+------+-----+---------------+
 *   \------------------ "prefix" ----------------/
 *
 *   tag 0x01 META      sub-key empty; value = type, expiry, string value
 *                      or element count (see pk_store_int.h)
 *   tag 0x02 HFIELD    sub-key = field;           value = field value
 *   tag 0x03 ZMEMBER   sub-key = member;          value = score, f64 BE
 *   tag 0x04 ZSCORE    sub-key = score8 | member; value = empty
 *
 * Escaping 0x00 as 00 FF and terminating with 00 01 (FoundationDB's tuple
 * layer) makes memcmp order of prefixes equal the order of (part, key): the
 * terminator sorts below every escaped byte, so "a" < "a\0" < "ab", and no
 * key's prefix is a prefix of another key's.  Sub-keys are the last
 * component and need no escaping.  score8 is a double mapped to a u64 whose
 * big-endian bytes sort like the numbers (sign bit flipped for positives,
 * all bits flipped for negatives; -0 is stored as +0), so one cursor walk
 * over tag 0x04 yields a sorted set in score order, ties by member.
 *
 * LMDB keys hold at most PK_KEYENC_MAX bytes.  A prefix may take at most
 * PK_KEYENC_PREFIX_MAX so that the expiry index (u64 time + prefix) fits
 * too; functions return PK_ERANGE for keys or sub-keys that do not fit.
 * Pure functions, thread-safe.
 */
#ifndef PK_STORE_PK_KEYENC_H
#define PK_STORE_PK_KEYENC_H

#include <stddef.h>
#include <stdint.h>

#define PK_KEYENC_MAX 511 /* LMDB's compiled-in maximum key size */
#define PK_KEYENC_PREFIX_MAX (PK_KEYENC_MAX - 8)

enum pk_keyenc_tag {
    PK_TAG_META = 0x01,
    PK_TAG_HFIELD = 0x02,
    PK_TAG_ZMEMBER = 0x03,
    PK_TAG_ZSCORE = 0x04,
    PK_TAG_LITEM = 0x05,   /* list element (pk_list.c) */
    PK_TAG_SMEMBER = 0x06, /* set member (pk_set.c) */
    PK_TAG_LAST = PK_TAG_SMEMBER,
};

/* A data key taken apart by pk_keyenc_parse; pointers borrow its bytes. */
typedef struct pk_keyparts {
    uint32_t part;
    size_t prefix_len;  /* part + escaped key + terminator */
    const uint8_t *esc; /* escaped user key (without terminator) */
    size_t esc_len;
    uint8_t tag;        /* byte after the prefix */
    const uint8_t *sub; /* bytes after the tag */
    size_t sub_len;
} pk_keyparts;

static inline void pk_be32_put(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void pk_be64_put(uint8_t *p, uint64_t v)
{
    pk_be32_put(p, (uint32_t)(v >> 32));
    pk_be32_put(p + 4, (uint32_t)v);
}

static inline uint32_t pk_be32_get(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static inline uint64_t pk_be64_get(const uint8_t *p)
{
    return (uint64_t)pk_be32_get(p) << 32 | pk_be32_get(p + 4);
}

/*
 * Length of the prefix of (part, key): 4 + key bytes + NUL bytes + 2.
 */
size_t pk_keyenc_prefix_len(const void *key, size_t klen);

/*
 * Writes the prefix of (part, key) to buf, which holds cap bytes, and its
 * length to *len.  Returns 0, or PK_ERANGE when the prefix is longer than
 * PK_KEYENC_PREFIX_MAX or cap (buf and *len are then unspecified / left).
 */
int pk_keyenc_prefix(uint32_t part, const void *key, size_t klen, uint8_t *buf,
                     size_t cap, size_t *len);

/*
 * Appends tag and sub-key to a prefix of plen bytes already in buf, which
 * holds cap bytes, and stores the total length in *len.  Returns 0 or
 * PK_ERANGE when the result exceeds PK_KEYENC_MAX or cap.
 */
int pk_keyenc_sub(uint8_t *buf, size_t cap, size_t plen, uint8_t tag,
                  const void *sub, size_t sub_len, size_t *len);

/*
 * Parses a data key.  Returns 0, or PK_ECORRUPT when the key is shorter
 * than a prefix and a tag, holds a 0x00 followed by anything but FF or 01,
 * lacks a terminator, or has an unknown tag.  *out borrows key.
 */
int pk_keyenc_parse(const uint8_t *key, size_t klen, pk_keyparts *out);

/*
 * Undoes the escaping of esc[0..esc_len) into dst (at least esc_len bytes)
 * and returns the user key's length.  esc must come from pk_keyenc_parse.
 */
size_t pk_keyenc_unescape(const uint8_t *esc, size_t esc_len, uint8_t *dst);

/* The order-preserving u64 of a score (not NaN); -0 maps like +0. */
uint64_t pk_keyenc_score(double score);

/* Inverse of pk_keyenc_score. */
double pk_keyenc_score_decode(uint64_t u);

#endif

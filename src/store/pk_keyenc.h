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
 *   tag 0x05 LITEM     sub-key = u64 position;    value = element
 *   tag 0x06 SMEMBER   sub-key = member;          value = empty
 *
 * The system area.  part u32 | 00 03 | tag | sub-key holds records that
 * belong to the partition but to no user key: tag 0x10, the entries of
 * its secondary indexes, tag 0x11, the outbox of its global indexes
 * (pk_ftidx.h).  00 03 can end no key's escaped
 * bytes, so the area sorts after the empty key's records and before
 * every other key's, inside the partition's range: it moves, replicates
 * and snapshots with the partition.  pk_keyenc_parse sets sys for it;
 * every walk over keys skips it.
 *
 * Escaping 0x00 as 00 FF and terminating with 00 01 (FoundationDB's tuple
 * layer) makes memcmp order of prefixes equal the order of (part, key): the
 * terminator sorts below every escaped byte, so "a" < "a\0" < "ab".
 * Sub-keys are the last component and need no escaping.  score8 is a
 * double mapped to a u64 whose big-endian bytes sort like the numbers
 * (sign bit flipped for positives, all bits flipped for negatives; -0 is
 * stored as +0), so one cursor walk over tag 0x04 yields a sorted set in
 * score order, ties by member.
 *
 * Long keys.  A prefix is "short" when 4 + escaped key + 2 <= PK_KEYENC_SHORT
 * (240).  A longer key gets the long form, of at most PK_KEYENC_SHORT bytes:
 *
 *   part u32 | escaped head | 00 02 | SHA-256(key)[0..16)
 *
 * where the head is the longest leading part of the key whose escaped form
 * fits (PK_KEYENC_HEAD bytes or one less, when a NUL would straddle the
 * end).  Its META record carries the whole key (pk_store_int.h), which is
 * how SCAN gets it back and how a lookup tells a digest collision from its
 * own key.  Capping every prefix at 240 leaves a later fixed sub-key budget
 * room: 240 + tag + 8 + 240 <= 511.
 *
 * No prefix is a prefix of another one (so a key's records are exactly the
 * data keys starting with its prefix, one contiguous run, and parsing a
 * data key is unambiguous).  Proof: read a prefix from byte 4 on; a 00
 * followed by FF is an escaped NUL, the first 00 followed by anything else
 * ends the key, and escaped bytes never hold 00 01 or 00 02.  If prefix P
 * is a prefix of Q (same part), both reads see the same bytes up to and
 * including P's terminator, so Q's terminator is at the same place and is
 * the same: 00 01 ends both there, 00 02 is followed by exactly 16 digest
 * bytes in both.  Hence |P| = |Q| and P = Q.  Two long keys share a prefix
 * only if heads and 128-bit digests collide.
 *
 * Order: short prefixes keep the order of (part, key).  A long key sorts
 * after its head as a short key and before every key extending the head
 * (00 01 < 00 02 < 00 FF and any byte > 00), among long keys of that head
 * by digest.  Clients see SCAN order as arbitrary; PK.RANGE, which
 * promises byte order, reads such keys apart (pk_store_range.c), as a
 * future range scheme over user keys will have to.
 *
 * Long members.  "member" above stands for a field or member's sub-key
 * (pk_keyenc_member): a member of fewer than PK_KEYENC_SUB (240) bytes is
 * its own sub-key; a longer one is its first PK_KEYENC_SUB - 16 bytes
 * followed by SHA-256(member)[0..16), exactly PK_KEYENC_SUB bytes, so the
 * sub-key's length alone tells the form, whatever the key's prefix (RENAME
 * and COPY move records verbatim).  The value of a long member's record
 * then carries its full bytes (pk_store_int.h).  Order: members sort by
 * byte order except among those sharing their first PK_KEYENC_SUB - 16
 * bytes and longer than that, which sort by digest after the one that
 * is exactly the head; all members with one such head stay contiguous,
 * and heads keep byte order, which is what lex ranges and SCAN cursors
 * rely on (pk_zset_range.c, pk_store_subscan.c).
 *
 * LMDB keys hold at most PK_KEYENC_MAX bytes; the expiry index (u64 time +
 * prefix) fits because prefixes do, and prefix | tag | score8 | member
 * fits because both are capped.  pk_keyenc_prefix never fails for a key's
 * length; pk_keyenc_sub returns PK_ERANGE for sub-keys that do not fit.
 * Pure functions, thread-safe.
 */
#ifndef PK_STORE_PK_KEYENC_H
#define PK_STORE_PK_KEYENC_H

#include <stddef.h>
#include <stdint.h>

#define PK_KEYENC_MAX 511   /* LMDB's compiled-in maximum key size */
#define PK_KEYENC_SHORT 240 /* longest prefix, short or long form */
#define PK_KEYENC_DIGEST 16 /* bytes of SHA-256 in a long-form prefix */
/* A field or member this long or longer has the long-form sub-key. */
#define PK_KEYENC_SUB 240
/* Member bytes kept in a long-form sub-key, before its digest. */
#define PK_KEYENC_SUBHEAD (PK_KEYENC_SUB - PK_KEYENC_DIGEST)
/* Escaped head bytes in a long-form prefix, at most. */
#define PK_KEYENC_HEAD (PK_KEYENC_SHORT - 4 - 2 - PK_KEYENC_DIGEST)

enum pk_keyenc_tag {
    PK_TAG_META = 0x01,
    PK_TAG_HFIELD = 0x02,
    PK_TAG_ZMEMBER = 0x03,
    PK_TAG_ZSCORE = 0x04,
    PK_TAG_LITEM = 0x05,   /* list element (pk_list.c) */
    PK_TAG_SMEMBER = 0x06, /* set member (pk_set.c) */
    PK_TAG_LAST = PK_TAG_SMEMBER,
    PK_TAG_FTIDX = 0x10, /* index entries, system area only (pk_ftidx.h) */
    PK_TAG_FTOUT = 0x11, /* global index outbox, system area only */
};

/* The system area's prefix after the partition: 00 03. */
#define PK_KEYENC_SYS_LEN 6 /* part + 00 03 */

/* A data key taken apart by pk_keyenc_parse; pointers borrow its bytes. */
typedef struct pk_keyparts {
    uint32_t part;
    size_t prefix_len;  /* part + escaped key + terminator (+ digest) */
    const uint8_t *esc; /* escaped user key or head (without terminator) */
    size_t esc_len;
    int longkey;           /* long form: esc is the head, digest follows */
    const uint8_t *digest; /* long form: PK_KEYENC_DIGEST bytes, else NULL */
    int sys;               /* the system area: esc empty, tag FTIDX or FTOUT */
    uint8_t tag;           /* byte after the prefix */
    const uint8_t *sub;    /* bytes after the tag */
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

/* Writes the escaped form (0x00 as 00 FF) of the longest head of
 * k[0..klen) that fits in cap bytes to out and returns its length. */
size_t pk_keyenc_escape(const void *k, size_t klen, uint8_t *out, size_t cap);

/* Whether key takes the long form (4 + escaped key + 2 > 240). */
int pk_keyenc_long(const void *key, size_t klen);

/* Length of the prefix of (part, key), short or long form. */
size_t pk_keyenc_prefix_len(const void *key, size_t klen);

/*
 * Writes the prefix of (part, key) to buf, which holds cap bytes, and its
 * length to *len.  Any key has a prefix of at most PK_KEYENC_SHORT bytes;
 * returns 0, PK_ERANGE only when cap is smaller than the prefix (never
 * with cap >= PK_KEYENC_SHORT), or PK_ENOMEM when OpenSSL cannot digest a
 * long key (buf and *len are then unspecified / left).
 */
int pk_keyenc_prefix(uint32_t part, const void *key, size_t klen, uint8_t *buf,
                     size_t cap, size_t *len);

/*
 * The PK_KEYENC_DIGEST bytes of a long-form prefix of key to out: the
 * first bytes of SHA-256(key).  Returns 0 or PK_ENOMEM (OpenSSL failed).
 */
int pk_keyenc_digest(const void *key, size_t klen, uint8_t *out);

/*
 * Writes the sub-key of a field or member mem (mlen bytes) to out, which
 * holds PK_KEYENC_SUB bytes: mem itself when mlen < PK_KEYENC_SUB, else
 * its head and digest.  Returns the sub-key's length (<= PK_KEYENC_SUB;
 * PK_KEYENC_SUB exactly for the long form), or PK_ENOMEM when OpenSSL
 * cannot digest it (out unspecified).
 */
int pk_keyenc_member(const void *mem, size_t mlen, uint8_t *out);

/*
 * Appends tag and sub-key to a prefix of plen bytes already in buf, which
 * holds cap bytes, and stores the total length in *len.  Returns 0 or
 * PK_ERANGE when the result exceeds PK_KEYENC_MAX or cap.
 */
int pk_keyenc_sub(uint8_t *buf, size_t cap, size_t plen, uint8_t tag,
                  const void *sub, size_t sub_len, size_t *len);

/*
 * Parses a data key.  Returns 0, or PK_ECORRUPT when the key is shorter
 * than a prefix and a tag, holds a 0x00 followed by anything but FF, 01 or
 * 02 (or 03 right after the partition, the system area, whose tag must be
 * PK_TAG_FTIDX or PK_TAG_FTOUT), lacks a terminator, has a prefix longer than
 * PK_KEYENC_SHORT (a long-form one: missing digest bytes) or an unknown tag.
 * *out borrows key. A long-form prefix is not checked against a key here: its
 * META record holds the key (pk__rec_check).
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

/*
 * pk_salt: the names of a salted key's parts (pk_pmap.h, pk_salt).
 *
 * Part i >= 1 of key K is the sub-key
 *
 *   "{s<tag>}" NUL "salt" NUL K
 *
 * whose hash tag "s<tag>" (tag in decimal) places it: the salter picks
 * each tag so that the parts land on partitions led by different nodes.
 * A fold records "part i is in K now" in a marker beside K, in K's own
 * partition (same hash tag), so that a fold interrupted by a crash never
 * adds a part twice:
 *
 *   K NUL "salt-folded" NUL <i>        when K has a hash tag
 *   "{" K "}" NUL "salt-folded" NUL <i>  when it has none
 *
 * A key without a hash tag that holds '}' has no such name and is never
 * salted (pk_salt_marker fails).
 *
 * A tag's top two bits say what the key holds (pk_salt_kind): 0 for a
 * counter, as every tag was before sets and HyperLogLogs were salted, 1
 * a set, 2 an HLL; 3 says that the next three bits (29..27) hold the
 * kind less 3 (a string, a hash, a sorted set), so that maps written
 * before strings were salted read the same.  Every node and the proxy
 * know from the map alone how the parts are written and read.
 *
 * A salted string's part carries the hybrid-logical-clock stamp of the
 * SET that wrote it in a stamp key beside it, in the part's partition:
 *
 *   "{s<tag>}" NUL "salt-hlc" NUL K     part i >= 1
 *   K NUL "salt-hlc" NUL                part 0, K with a hash tag
 *   "{" K "}" NUL "salt-hlc" NUL        part 0, K without one
 *
 * No I/O.
 */
#ifndef PK_CORE_PK_SALT_H
#define PK_CORE_PK_SALT_H

#include <stddef.h>
#include <stdint.h>

#define PK_SALT_NAME_EXTRA 40 /* a part's or marker's bytes beyond K's */

typedef enum pk_salt_kind {
    PK_SALT_COUNTER = 0, /* a number: parts summed */
    PK_SALT_SET = 1,     /* a set: parts' union */
    PK_SALT_HLL = 2,     /* a HyperLogLog: parts' registers merged */
    PK_SALT_STRING = 3,  /* a string: the newest stamp wins */
    PK_SALT_HASH = 4,    /* a hash of counters: fields summed */
    PK_SALT_ZSET = 5,    /* a sorted set: scores summed */
} pk_salt_kind;

#define PK_SALT_KIND_SHIFT 30 /* a tag is kind << 30 plus under 2^30 */
#define PK_SALT_EXT_SHIFT 27  /* kinds >= 3: 3 << 30 | (kind - 3) << 27 */
#define PK_SALT_TAG_SPAN (1u << PK_SALT_EXT_SHIFT) /* tags of one kind */

/* The kind a part's tag carries. */
pk_salt_kind pk_salt_tag_kind(uint32_t tag);

/* The first tag of kind: tags base .. base + PK_SALT_TAG_SPAN - 1. */
uint32_t pk_salt_tag_base(pk_salt_kind kind);

/* Writes the stamp key of part i (tag its tag, unused for part 0) of key
 * into out; its length, or 0 when it does not fit or key cannot have one
 * (as pk_salt_marker). */
size_t pk_salt_stamp(const void *key, size_t len, unsigned i, uint32_t tag,
                     uint8_t *out, size_t cap);

/* Writes part `tag`'s sub-key name of key into out (cap bytes) and
 * returns its length, or 0 when it does not fit. */
size_t pk_salt_subkey(const void *key, size_t len, uint32_t tag, uint8_t *out,
                      size_t cap);

/* Writes the fold marker of part i of key; returns its length, or 0 when
 * it does not fit or key cannot have one (see above). */
size_t pk_salt_marker(const void *key, size_t len, unsigned i, uint8_t *out,
                      size_t cap);

/* 1 when name is a part's sub-key name, with *key / *klen the salted key
 * inside it and *tag its tag; else 0. */
int pk_salt_parse(const void *name, size_t len, const void **key, size_t *klen,
                  uint32_t *tag);

/* 1 when name is a part's sub-key or a fold marker: an internal key. */
int pk_salt_internal(const void *name, size_t len);

#endif

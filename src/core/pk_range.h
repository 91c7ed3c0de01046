/*
 * pk_range: a range partitioner -- sorted, contiguous partitions over the
 * byte-string keyspace, each with a caller-chosen id that stays with it
 * through splits and merges (as Bigtable tablets or CockroachDB ranges).
 *
 *   -inf        "b"          "k\0x"        "t"          +inf
 *    |  id 0     |   id 7     |   id 3      |   id 1     |
 *    [lo, hi)     [lo, hi)     [lo, hi)      [lo, hi)
 *
 * Keys compare as unsigned bytes: memcmp over the common length, then the
 * shorter key first, so "" is the smallest key and "a" < "a\0" < "b".  The
 * first partition starts at "" (-inf), the last one ends at +inf, and each
 * partition's hi is the next one's lo, so every key lies in exactly one
 * partition.  Ids are unique; any uint32_t value may be used.
 *
 * A pk_range is not thread-safe: it is owned by one thread at a time, or
 * shared read-only (lookups, gets and scans do not modify it).
 */
#ifndef PK_CORE_PK_RANGE_H
#define PK_CORE_PK_RANGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pk_pmap;

/*
 * The order of keys (above), which is also LMDB's default order and so
 * the store's: <0, 0 or >0 as a sorts before, with or after b.
 */
static inline int pk_key_cmp(const void *a, size_t alen, const void *b,
                             size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;

    return c != 0 ? c : (alen > blen) - (alen < blen);
}

typedef struct pk_range pk_range;

/*
 * Creates a map with one partition, id 0, covering every key.
 * Returns 0 or PK_ENOMEM; *out is set only on success and owned by the
 * caller (pk_range_free).
 */
int pk_range_new(pk_range **out);

/*
 * Creates a map pre-split at the n keys keys[i] (lens[i] bytes each; the
 * arrays and bytes are borrowed for the call only).  The split points must
 * be strictly increasing and the first must not be empty; partition i
 * (from the left) gets id i, so there are n + 1 partitions with ids 0..n.
 * n == 0 is pk_range_new.  Returns 0, PK_EINVAL (order, empty first key,
 * NULL key with a length), PK_EFULL (more than PK_PARTITIONS_MAX
 * partitions) or PK_ENOMEM; *out is set only on success.
 */
int pk_range_new_split(const void *const *keys, const size_t *lens, uint32_t n,
                       pk_range **out);

/* Frees the map and every bound it owns.  NULL is a no-op. */
void pk_range_free(pk_range *r);

/* Number of partitions, >= 1. */
uint32_t pk_range_count(const pk_range *r);

/*
 * The id of the partition holding key (len bytes; key may be NULL when len
 * is 0), by binary search in O(log n) comparisons.  Returns 0 or PK_EINVAL
 * (key NULL with len > 0).
 */
int pk_range_lookup(const pk_range *r, const void *key, size_t len,
                    uint32_t *id);

/*
 * Splits partition id [lo, hi) at key at: id keeps [lo, at), and a new
 * partition new_id gets [at, hi).  at (len bytes, copied) must lie strictly
 * inside: lo < at < hi.  Returns 0, PK_ENOTFOUND (no partition id),
 * PK_EINVAL (at not strictly inside, or NULL with len > 0), PK_EEXIST
 * (new_id already used, including new_id == id), PK_EFULL (already
 * PK_PARTITIONS_MAX partitions) or PK_ENOMEM.  The map is unchanged on
 * failure.  Invalidates pointers from pk_range_get.  O(n).
 */
int pk_range_split(pk_range *r, uint32_t id, const void *at, size_t len,
                   uint32_t new_id);

/*
 * Merges right_id into left_id, its immediate left neighbour: left_id
 * then covers both ranges, and right_id is free for reuse.  Returns 0,
 * PK_ENOTFOUND (either id unknown) or PK_EINVAL (not adjacent in that
 * order, or the same id).  Invalidates pointers from pk_range_get.  O(n).
 */
int pk_range_merge(pk_range *r, uint32_t left_id, uint32_t right_id);

/*
 * The partition at position index (0 = leftmost) in key order: its id and
 * bounds [lo, hi).  *lo_len == 0 means -inf (and *lo may then be NULL);
 * *hi == NULL means +inf (and *hi_len is 0).  The bound pointers are
 * borrowed from the map and valid until its next split, merge or free.
 * Any out-parameter may be NULL to skip it.  Returns 0 or PK_ERANGE
 * (index >= pk_range_count); the out-parameters are untouched on failure.
 */
int pk_range_get(const pk_range *r, uint32_t index, uint32_t *id,
                 const uint8_t **lo, size_t *lo_len, const uint8_t **hi,
                 size_t *hi_len);

/*
 * The ids, in key order, of the partitions that intersect [start, end):
 * the only partitions a scan of that key range must touch.  end == NULL
 * means +inf; start may be NULL when slen is 0.  An empty interval
 * (start >= end) intersects nothing.  With ids == NULL and cap == 0 it only
 * counts.  Returns 0 with *n set, PK_EINVAL (NULL key with a length, or
 * ids NULL with cap > 0) or PK_EFULL (more than cap partitions; nothing
 * written, *n untouched).  O(log n + *n).
 */
int pk_range_scan(const pk_range *r, const void *start, size_t slen,
                  const void *end, size_t elen, uint32_t *ids, uint32_t cap,
                  uint32_t *n);

/*
 * The partition holding the greatest key below key: where a descending
 * read bounded by "(key" starts.  Returns 0, PK_ENOTFOUND (key is "",
 * so nothing is below it) or PK_EINVAL (key NULL with len > 0).
 */
int pk_range_lookup_below(const pk_range *r, const void *key, size_t len,
                          uint32_t *id);

/*
 * Builds the range index of a range-scheme map m: every partition with
 * its id and bounds, which must tile the keyspace (one partition starts at
 * "", each hi is another's lo, one ends at +inf).  Returns 0, PK_EINVAL (m
 * not a range map), PK_ECORRUPT (bounds that do not tile) or PK_ENOMEM;
 * *out is set only on success.  O(n log n).
 */
int pk_range_from_pmap(const struct pk_pmap *m, pk_range **out);

/*
 * Writes every partition's bounds into the range-scheme map m: partition
 * id p becomes m->parts[p] (pk_pmap_set_range), so the ids must be exactly
 * 0..m->npartitions - 1.  Other fields of m keep their values.  The
 * bounds are written into a copy that then replaces m's contents, so m is
 * unchanged on failure, and on success pointers into m's nodes and
 * partitions are invalidated.  Returns 0, PK_EINVAL (m not a range map,
 * or ids do not match its partitions) or PK_ENOMEM.
 */
int pk_range_to_pmap(const pk_range *r, struct pk_pmap *m);

#endif

/*
 * presplit: the first boundaries of a range-scheme cluster, for
 * `cluster up --scheme range`.
 *
 *   --presplit-keys a,b,c         ranges (-inf, a) [a, b) [b, c) [c, +inf)
 *   --presplit N --presplit-sample FILE
 *                                 N ranges holding equal shares of the
 *                                 sample's keys (one key per line)
 *   --presplit N                  N ranges over printable ASCII: the
 *                                 boundaries cut the two-character space
 *                                 " " .. "~~" (95 x 95 values) evenly
 *
 * The boundaries come out strictly increasing and non-empty, as
 * pk_range_new_split wants them; duplicate sample quantiles collapse, so
 * a sample with few distinct keys gives fewer ranges than asked.  They
 * are sticky (PK_PART_STICKY), as a `partkv range split` is: automatic
 * merges keep them until `partkv range unsplit`.
 */
#ifndef PK_CLI_PRESPLIT_H
#define PK_CLI_PRESPLIT_H

#include <stddef.h>
#include <stdint.h>

struct pk_pmap;
struct pk_keyset;

typedef struct pk_presplit {
    uint32_t n;  /* boundaries: n + 1 ranges */
    char **key;  /* n owned copies */
    size_t *len; /* n lengths */
} pk_presplit;

/* Comma-separated keys, given in any order.  0, PK_EINVAL (an empty key,
 * a duplicate or too many) or PK_ENOMEM. */
int pk_presplit_keys(const char *list, pk_presplit *out);

/* ranges (>= 1) ranges with equal shares of the sample.  0, PK_EINVAL
 * or PK_ENOMEM. */
int pk_presplit_sample(const struct pk_keyset *ks, uint32_t ranges,
                       pk_presplit *out);

/* ranges (1 .. 95 * 95) even ranges over printable ASCII.  0, PK_EINVAL
 * or PK_ENOMEM. */
int pk_presplit_even(uint32_t ranges, pk_presplit *out);

/* Writes the n + 1 ranges' bounds into the range map m, which must have
 * exactly n + 1 partitions: range i (from the left) is partition i. */
int pk_presplit_apply(const pk_presplit *ps, struct pk_pmap *m);

void pk_presplit_free(pk_presplit *ps);

#endif

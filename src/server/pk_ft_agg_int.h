/*
 * pk_ft_agg_int: what pk_ft_agg.c (the request, partial groups and their
 * merge) and pk_ft_agg_rows.c (finished rows: sort, page, reply) share.
 */
#ifndef PK_SERVER_PK_FT_AGG_INT_H
#define PK_SERVER_PK_FT_AGG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "server/pk_ft_int.h"

#define GROUP_FIELDS_MAX 16
#define REDUCERS_MAX 32
#define SORT_MAX 16
#define ROWS_MAX 1000000

enum { R_COUNT = 1, R_SUM, R_MIN, R_MAX, R_AVG, R_DISTINCT, R_TOLIST };

typedef struct reducer {
    int fn;
    pk_slice field; /* without '@'; empty for COUNT */
    char as[PK_FT_NAME_MAX + 1];
} reducer;

/* A value set (COUNT_DISTINCT, TOLIST): owned copies in arrival order,
 * and an open-addressing table of their positions + 1 (0: empty) so that
 * adding one is constant time. */
typedef struct vset {
    char **v;
    size_t *len;
    size_t n, cap;
    uint32_t *slot;
    size_t nslot; /* a power of two, over twice n */
} vset;

typedef struct partial {
    double sum, min, max;
    int64_t count; /* COUNT; AVG's count; MIN/MAX: values seen */
    vset set;
} partial;

typedef struct group {
    char **val; /* owned copies of the group's values (NULL: missing) */
    size_t *vlen;
    partial *p; /* one per reducer */
    struct group *next;
    uint64_t hash;
} group;

typedef struct pk__ftagg {
    pk_arg *args; /* owned copy */
    int argc;
    pk_slice query;
    pk__ftparams params;
    int grouped, ngroup;
    pk_slice gf[GROUP_FIELDS_MAX]; /* without '@' */
    int nred;
    reducer red[REDUCERS_MAX];
    int load_all, nload;
    pk_slice *load;
    int nsort;
    pk_slice sortf[SORT_MAX];
    int sdesc[SORT_MAX];
    int64_t max, offset, num;
    /* Merged state: groups in a hash table, or rows (each an obuf
     * holding one row's reply, with its field/value slices). */
    group **tab;
    size_t ntab, ngroups;
    pk_obuf *rows;
    size_t nrows, caprows;
} pk__ftagg;

/* The client's reply: the merged groups (or rows) finished, sorted by
 * SORTBY, cut by MAX and LIMIT. */
void pk__ftagg_answer(pk__ftagg *g, pk_obuf *out);

#endif

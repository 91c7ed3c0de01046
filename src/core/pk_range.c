/*
 * pk_range: sorted, contiguous key-range partitions (see pk_range.h).
 *
 * Only lower bounds are stored: partition i covers [parts[i].lo,
 * parts[i + 1].lo), and the last one runs to +inf.
 *
 *   parts:  [0] lo ""     [1] lo "b"    [2] lo "k\0x"    [3] lo "t"
 *               id 0          id 7          id 3             id 1
 *
 * Invariants: n >= 1; parts[0].lo_len == 0 (and parts[0].lo == NULL);
 * the lower bounds are strictly increasing, so no partition is empty;
 * ids are unique.  A lookup is a binary search over the lower bounds.
 * Splits and merges shift the array (O(n)); finding a partition by id is a
 * linear scan, which the shift costs anyway.
 */
#include "pk_range.h"

#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_pmap.h"

typedef struct pk_range_part {
    uint32_t id;
    uint8_t *lo;   /* owned; NULL for the first partition */
    size_t lo_len; /* 0 only for the first partition */
} pk_range_part;

struct pk_range {
    uint32_t n;           /* partitions in use, 1..PK_PARTITIONS_MAX */
    uint32_t cap;         /* allocated length of parts */
    pk_range_part *parts; /* owned; sorted by lo */
};

/* Index of the partition holding key: the last one with lo <= key. */
static uint32_t find_key(const pk_range *r, const void *key, size_t len)
{
    uint32_t lo = 0, hi = r->n - 1;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        const pk_range_part *p = &r->parts[mid];

        if (pk_key_cmp(p->lo, p->lo_len, key, len) <= 0)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Index of partition id, or r->n when there is none. */
static uint32_t find_id(const pk_range *r, uint32_t id)
{
    uint32_t i = 0;

    while (i < r->n && r->parts[i].id != id)
        i++;
    return i;
}

/* Makes room for one more partition.  Returns 0 or PK_ENOMEM. */
static int reserve(pk_range *r)
{
    pk_range_part *parts;
    uint32_t cap;

    if (r->n < r->cap)
        return PK_OK;
    cap = r->cap * 2;
    if (cap > PK_PARTITIONS_MAX)
        cap = PK_PARTITIONS_MAX;
    parts = realloc(r->parts, (size_t)cap * sizeof(*parts));
    if (parts == NULL)
        return PK_ENOMEM;
    r->parts = parts;
    r->cap = cap;
    return PK_OK;
}

/* An empty map with room for cap partitions; *out set only on success. */
static int alloc_range(uint32_t cap, pk_range **out)
{
    pk_range *r;

    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return PK_ENOMEM;
    r->parts = calloc(cap, sizeof(*r->parts));
    if (r->parts == NULL) {
        free(r);
        return PK_ENOMEM;
    }
    r->cap = cap;
    *out = r;
    return PK_OK;
}

int pk_range_new(pk_range **out)
{
    return pk_range_new_split(NULL, NULL, 0, out);
}

int pk_range_new_split(const void *const *keys, const size_t *lens, uint32_t n,
                       pk_range **out)
{
    pk_range *r = NULL; /* owned until handed to *out */
    int rc;

    if (n >= PK_PARTITIONS_MAX)
        return PK_EFULL;
    for (uint32_t i = 0; i < n; i++) {
        if (lens[i] == 0 || keys[i] == NULL)
            return PK_EINVAL;
        if (i > 0 &&
            pk_key_cmp(keys[i - 1], lens[i - 1], keys[i], lens[i]) >= 0)
            return PK_EINVAL;
    }
    rc = alloc_range(n < 3 ? 4 : n + 1, &r);
    if (rc != PK_OK)
        goto done;
    r->parts[0].id = 0;
    r->n = 1;
    for (uint32_t i = 0; i < n; i++) {
        pk_range_part *p = &r->parts[i + 1];

        p->lo = malloc(lens[i]);
        if (p->lo == NULL) {
            rc = PK_ENOMEM;
            goto done;
        }
        memcpy(p->lo, keys[i], lens[i]);
        p->lo_len = lens[i];
        p->id = i + 1;
        r->n++;
    }
    *out = r;
    r = NULL;
done:
    pk_range_free(r);
    return rc;
}

void pk_range_free(pk_range *r)
{
    if (r == NULL)
        return;
    for (uint32_t i = 0; i < r->n; i++)
        free(r->parts[i].lo);
    free(r->parts);
    free(r);
}

uint32_t pk_range_count(const pk_range *r)
{
    return r->n;
}

int pk_range_lookup(const pk_range *r, const void *key, size_t len,
                    uint32_t *id)
{
    if (key == NULL && len > 0)
        return PK_EINVAL;
    *id = r->parts[find_key(r, key, len)].id;
    return PK_OK;
}

int pk_range_lookup_below(const pk_range *r, const void *key, size_t len,
                          uint32_t *id)
{
    uint32_t i;

    if (key == NULL && len > 0)
        return PK_EINVAL;
    if (len == 0)
        return PK_ENOTFOUND;
    i = find_key(r, key, len);
    /* key itself opens partition i: what lies below it is in i - 1. */
    if (i > 0 && pk_key_cmp(r->parts[i].lo, r->parts[i].lo_len, key, len) == 0)
        i--;
    *id = r->parts[i].id;
    return PK_OK;
}

int pk_range_split(pk_range *r, uint32_t id, const void *at, size_t len,
                   uint32_t new_id)
{
    uint32_t i = find_id(r, id);
    const pk_range_part *p, *next;
    uint8_t *copy = NULL; /* owned until stored in the new partition */
    int rc = PK_OK;

    if (i == r->n)
        return PK_ENOTFOUND;
    if (at == NULL && len > 0)
        return PK_EINVAL;
    p = &r->parts[i];
    next = i + 1 < r->n ? &r->parts[i + 1] : NULL;
    if (pk_key_cmp(at, len, p->lo, p->lo_len) <= 0 ||
        (next != NULL && pk_key_cmp(at, len, next->lo, next->lo_len) >= 0))
        return PK_EINVAL;
    if (find_id(r, new_id) != r->n)
        return PK_EEXIST;
    if (r->n >= PK_PARTITIONS_MAX)
        return PK_EFULL;
    copy = malloc(len); /* len > 0: at > lo >= "" */
    if (copy == NULL) {
        rc = PK_ENOMEM;
        goto done;
    }
    memcpy(copy, at, len);
    rc = reserve(r);
    if (rc != PK_OK)
        goto done;
    memmove(&r->parts[i + 2], &r->parts[i + 1],
            (size_t)(r->n - i - 1) * sizeof(*r->parts));
    r->parts[i + 1].id = new_id;
    r->parts[i + 1].lo = copy;
    r->parts[i + 1].lo_len = len;
    r->n++;
    copy = NULL;
done:
    free(copy);
    return rc;
}

int pk_range_merge(pk_range *r, uint32_t left_id, uint32_t right_id)
{
    uint32_t li = find_id(r, left_id);
    uint32_t ri = find_id(r, right_id);

    if (li == r->n || ri == r->n)
        return PK_ENOTFOUND;
    if (ri != li + 1)
        return PK_EINVAL;
    free(r->parts[ri].lo);
    memmove(&r->parts[ri], &r->parts[ri + 1],
            (size_t)(r->n - ri - 1) * sizeof(*r->parts));
    r->n--;
    return PK_OK;
}

int pk_range_get(const pk_range *r, uint32_t index, uint32_t *id,
                 const uint8_t **lo, size_t *lo_len, const uint8_t **hi,
                 size_t *hi_len)
{
    const pk_range_part *p, *next;

    if (index >= r->n)
        return PK_ERANGE;
    p = &r->parts[index];
    next = index + 1 < r->n ? &r->parts[index + 1] : NULL;
    if (id != NULL)
        *id = p->id;
    if (lo != NULL)
        *lo = p->lo;
    if (lo_len != NULL)
        *lo_len = p->lo_len;
    if (hi != NULL)
        *hi = next ? next->lo : NULL;
    if (hi_len != NULL)
        *hi_len = next ? next->lo_len : 0;
    return PK_OK;
}

int pk_range_scan(const pk_range *r, const void *start, size_t slen,
                  const void *end, size_t elen, uint32_t *ids, uint32_t cap,
                  uint32_t *n)
{
    uint32_t first, last, count = 0;

    if ((start == NULL && slen > 0) || (ids == NULL && cap > 0))
        return PK_EINVAL;
    if (end == NULL || pk_key_cmp(start, slen, end, elen) < 0) {
        first = find_key(r, start, slen);
        last = r->n - 1;
        if (end != NULL) {
            /* The last partition whose lo is below end; >= first. */
            last = find_key(r, end, elen);
            if (pk_key_cmp(r->parts[last].lo, r->parts[last].lo_len, end,
                           elen) == 0)
                last--;
        }
        count = last - first + 1;
    }
    if (ids == NULL) {
        *n = count;
        return PK_OK;
    }
    if (count > cap)
        return PK_EFULL;
    for (uint32_t i = 0; i < count; i++)
        ids[i] = r->parts[first + i].id;
    *n = count;
    return PK_OK;
}

/* Partitions of a map in the order of their lower bounds (qsort). */
static int by_lo(const void *a, const void *b)
{
    const pk_range_part *x = a, *y = b;

    return pk_key_cmp(x->lo, x->lo_len, y->lo, y->lo_len);
}

int pk_range_from_pmap(const struct pk_pmap *m, pk_range **out)
{
    pk_range *r = NULL; /* owned until handed to *out */
    uint32_t n = 0;
    int rc;

    if (m->scheme != PK_SCHEME_RANGE || m->npartitions == 0)
        return PK_EINVAL;
    rc = alloc_range(m->npartitions, &r);
    if (rc != PK_OK)
        return rc;
    for (uint32_t p = 0; p < m->npartitions; p++) {
        if (pk_pmap_retired(m, p))
            continue;
        /* Borrowed for the sort, copied once the tiling checks out. */
        r->parts[n].id = p;
        r->parts[n].lo = m->parts[p].lo;
        r->parts[n++].lo_len = m->parts[p].lo_len;
    }
    qsort(r->parts, n, sizeof(*r->parts), by_lo);
    if (n == 0)
        rc = PK_ECORRUPT;
    for (uint32_t i = 0; i < n && rc == PK_OK; i++) {
        const pk_partition *pt = &m->parts[r->parts[i].id];
        const pk_range_part *next = i + 1 < n ? &r->parts[i + 1] : NULL;
        if ((i == 0 && pt->lo_len != 0) || (next == NULL) != (pt->hi == NULL) ||
            (next &&
             pk_key_cmp(pt->hi, pt->hi_len, next->lo, next->lo_len) != 0))
            rc = PK_ECORRUPT;
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *lo = r->parts[i].lo;
        r->parts[i].lo = NULL;
        if (rc == PK_OK && i > 0) {
            r->parts[i].lo = malloc(r->parts[i].lo_len);
            if (r->parts[i].lo == NULL)
                rc = PK_ENOMEM;
            else
                memcpy(r->parts[i].lo, lo, r->parts[i].lo_len);
        }
        r->n = i + 1;
    }
    if (rc == PK_OK) {
        *out = r;
        r = NULL;
    }
    pk_range_free(r);
    return rc;
}

int pk_range_to_pmap(const pk_range *r, struct pk_pmap *m)
{
    pk_pmap *c = NULL; /* owned: the copy the bounds are written into */
    pk_pmap tmp;
    int rc;

    if (m->scheme != PK_SCHEME_RANGE || m->npartitions != r->n)
        return PK_EINVAL;
    /* n unique ids, all below n: exactly 0..n-1. */
    for (uint32_t i = 0; i < r->n; i++)
        if (r->parts[i].id >= m->npartitions)
            return PK_EINVAL;
    /* Written into a copy so that m stays as it was if this fails. */
    rc = pk_pmap_clone(m, &c);
    if (rc != PK_OK)
        goto done;
    for (uint32_t i = 0; i < r->n; i++) {
        const pk_range_part *p = &r->parts[i];
        const pk_range_part *next = i + 1 < r->n ? &r->parts[i + 1] : NULL;

        rc = pk_pmap_set_range(c, p->id, p->lo, p->lo_len,
                               next ? next->lo : NULL, next ? next->lo_len : 0);
        if (rc != PK_OK)
            goto done;
    }
    tmp = *m;
    *m = *c;
    *c = tmp;
done:
    pk_pmap_free(c);
    return rc;
}

/*
 * presplit: boundaries for a new range-scheme map (see presplit.h).
 * Every way of choosing them ends in one sorted, de-duplicated list,
 * which pk_range turns into the map's bounds.
 */
#include "cli/presplit.h"

#include <stdlib.h>
#include <string.h>

#include "cli/keyset.h"
#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_range.h"

#define PRINTABLE 95 /* ' ' .. '~' */

typedef struct bkey {
    const char *p;
    size_t len;
} bkey;

static int bkey_cmp(const void *a, const void *b)
{
    const bkey *x = a, *y = b;

    return pk_key_cmp(x->p, x->len, y->p, y->len);
}

/*
 * Sorts n borrowed keys, drops duplicates and empty keys, and copies the
 * rest into out.  dups_ok: duplicates are expected (sample quantiles)
 * rather than an error.
 */
static int take(bkey *k, uint32_t n, int dups_ok, pk_presplit *out)
{
    uint32_t m = 0;

    memset(out, 0, sizeof(*out));
    qsort(k, n, sizeof(*k), bkey_cmp);
    for (uint32_t i = 0; i < n; i++) {
        if (k[i].len == 0 || (m > 0 && bkey_cmp(&k[m - 1], &k[i]) == 0)) {
            if (!dups_ok)
                return PK_EINVAL;
            continue;
        }
        k[m++] = k[i];
    }
    if (m + 1 > PK_PARTITIONS_MAX)
        return PK_EINVAL;
    out->key = calloc(m ? m : 1, sizeof(*out->key));
    out->len = calloc(m ? m : 1, sizeof(*out->len));
    if (out->key == NULL || out->len == NULL) {
        pk_presplit_free(out);
        return PK_ENOMEM;
    }
    for (uint32_t i = 0; i < m; i++) {
        out->key[i] = malloc(k[i].len);
        if (out->key[i] == NULL) {
            pk_presplit_free(out);
            return PK_ENOMEM;
        }
        memcpy(out->key[i], k[i].p, k[i].len);
        out->len[i] = k[i].len;
        out->n = i + 1;
    }
    return PK_OK;
}

int pk_presplit_keys(const char *list, pk_presplit *out)
{
    size_t n = 1;
    bkey *k;
    uint32_t i = 0;
    int rc;

    for (const char *c = list; *c; c++)
        n += *c == ',';
    if (n >= PK_PARTITIONS_MAX)
        return PK_EINVAL;
    k = calloc(n, sizeof(*k));
    if (k == NULL)
        return PK_ENOMEM;
    for (const char *c = list;; c++) {
        const char *end = strchr(c, ',');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        k[i++] = (bkey){c, len};
        if (end == NULL)
            break;
        c = end;
    }
    rc = take(k, i, 0, out);
    free(k);
    return rc;
}

int pk_presplit_sample(const pk_keyset *ks, uint32_t ranges, pk_presplit *out)
{
    bkey *all, *cut;
    int rc;

    if (ranges < 1 || ranges > PK_PARTITIONS_MAX || ks->n == 0)
        return PK_EINVAL;
    all = calloc(ks->n, sizeof(*all));
    cut = calloc(ranges, sizeof(*cut));
    if (all == NULL || cut == NULL) {
        free(all);
        free(cut);
        return PK_ENOMEM;
    }
    for (size_t i = 0; i < ks->n; i++)
        all[i] = (bkey){ks->key[i], ks->len[i]};
    qsort(all, ks->n, sizeof(*all), bkey_cmp);
    /* Range i starts at the sample's i/ranges quantile. */
    for (uint32_t i = 1; i < ranges; i++)
        cut[i - 1] = all[(size_t)((double)i * (double)ks->n / ranges)];
    rc = take(cut, ranges - 1, 1, out);
    free(all);
    free(cut);
    return rc;
}

int pk_presplit_even(uint32_t ranges, pk_presplit *out)
{
    char(*buf)[2];
    bkey *cut;
    int rc;

    if (ranges < 1 || ranges > PRINTABLE * PRINTABLE)
        return PK_EINVAL;
    buf = calloc(ranges, sizeof(*buf));
    cut = calloc(ranges, sizeof(*cut));
    if (buf == NULL || cut == NULL) {
        free(buf);
        free(cut);
        return PK_ENOMEM;
    }
    for (uint32_t i = 1; i < ranges; i++) {
        uint32_t v = (uint32_t)((uint64_t)i * PRINTABLE * PRINTABLE / ranges);
        buf[i - 1][0] = (char)(' ' + v / PRINTABLE);
        buf[i - 1][1] = (char)(' ' + v % PRINTABLE);
        cut[i - 1] = (bkey){buf[i - 1], 2};
    }
    rc = take(cut, ranges - 1, 0, out);
    free(buf);
    free(cut);
    return rc;
}

int pk_presplit_apply(const pk_presplit *ps, pk_pmap *m)
{
    pk_range *r = NULL;
    int rc =
        pk_range_new_split((const void *const *)ps->key, ps->len, ps->n, &r);

    if (rc == PK_OK)
        rc = pk_range_to_pmap(r, m);
    /* An operator's bounds, as PK.SPLIT's: automatic merges keep them. */
    for (uint32_t p = 0; rc == PK_OK && p < m->npartitions; p++)
        if (m->parts[p].lo_len > 0)
            m->parts[p].flags |= PK_PART_STICKY;
    pk_range_free(r);
    return rc;
}

void pk_presplit_free(pk_presplit *ps)
{
    for (uint32_t i = 0; i < ps->n; i++)
        free(ps->key[i]);
    free(ps->key);
    free(ps->len);
    memset(ps, 0, sizeof(*ps));
}

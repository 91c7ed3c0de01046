/*
 * pk_zset: sorted-set commands.
 *
 * Invariant: for every member there is exactly one ZMEMBER record holding
 * its score and one ZSCORE record whose score8 encodes the same score, and
 * the META count equals the number of members.  ZADD changes a score by
 * deleting the old ZSCORE record and writing the new one.
 *
 * Ranges are in pk_zset_range.c.
 */
#include <math.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_zset.h"
#include "store/pk_zset_int.h"

static uint64_t score_bits(double d)
{
    uint64_t u;

    d = d == 0 ? 0 : d;
    memcpy(&u, &d, sizeof(u));
    return u;
}

/* Loads a sorted set; a missing key (or one that cannot exist) is empty. */
int pk__zset_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now, pk__meta *m)
{
    int rc = pk__meta_load(t, part, key, klen, now, m);

    if (rc == PK_ERANGE) {
        m->exists = 0;
        return 0;
    }
    if (rc == 0 && m->exists && m->type != PK__T_ZSET) {
        return PK_STORE_WRONGTYPE;
    }
    return rc;
}

static int member_key(const pk__meta *m, const void *mem, size_t mlen,
                      uint8_t *buf, size_t *len)
{
    return pk__sub_key(m->key, m->plen, PK_TAG_ZMEMBER, mem, mlen, buf, len);
}

/* prefix | ZSCORE | score8 | member's sub-key into buf. */
static int index_key(const pk__meta *m, double score, const void *mem,
                     size_t mlen, uint8_t *buf, size_t *len)
{
    int n;

    if (mlen > PK_STORE_VALUE_MAX) {
        return PK_ERANGE;
    }
    if ((n = pk_keyenc_member(mem, mlen, buf + m->plen + 9)) < 0) {
        return n;
    }
    memcpy(buf, m->key, m->plen);
    buf[m->plen] = PK_TAG_ZSCORE;
    pk_be64_put(buf + m->plen + 1, pk_keyenc_score(score));
    *len = m->plen + 9 + (size_t)n;
    return 0;
}

/*
 * Looks up member mem's ZMEMBER record mk: 0 with its score, PK_ENOTFOUND,
 * or PK_ERANGE when another member's digest holds mk.
 */
static int member_find(pk_txn *t, const uint8_t *mk, size_t mkl,
                       const pk_slice *mem, double *score)
{
    pk_slice sv;
    int rc = pk__sub_get(t, PK_TAG_ZMEMBER, mk, mkl, mem->ptr, mem->len, &sv);

    if (rc == 0) {
        *score = pk__score_get(sv.ptr);
    }
    return rc;
}

/* Writes both records of a member with a (new) score. */
static int member_put(pk_txn *t, const pk__meta *m, const uint8_t *mk,
                      size_t mkl, const pk_slice *mem, double score)
{
    uint8_t ik[PK_KEYENC_MAX], sv[8];
    size_t ikl;
    pk_slice v;
    int rc = index_key(m, score, mem->ptr, mem->len, ik, &ikl);

    pk_be64_put(sv, score_bits(score));
    rc = rc ? rc : pk__sub_val(t, PK_TAG_ZMEMBER, *mem, (pk_slice){sv, 8}, &v);
    rc = rc ? rc : pk__rec_put(t, mk, mkl, v.ptr, v.len);
    rc = rc ? rc : pk__sub_val(t, PK_TAG_ZSCORE, *mem, (pk_slice){"", 0}, &v);
    return rc ? rc : pk__rec_put(t, ik, ikl, v.ptr, v.len);
}

/* Deletes the ZSCORE record of a member whose score was old. */
static int index_del(pk_txn *t, const pk__meta *m, const pk_slice *mem,
                     double old)
{
    uint8_t ik[PK_KEYENC_MAX];
    size_t ikl;
    int rc = index_key(m, old, mem->ptr, mem->len, ik, &ikl);

    return rc ? rc : pk__rec_del(t, ik, ikl, NULL);
}

/* Adds or updates one pair; *added / *changed count what happened. */
static int zadd_one(pk_txn *t, pk__meta *m, unsigned flags, double s,
                    const pk_slice *mem, pk_zadd_result *res, int *added,
                    int *changed)
{
    uint8_t mk[PK_KEYENC_MAX];
    size_t mkl;
    double cur, nu = s;
    int rc;

    member_key(m, mem->ptr, mem->len, mk, &mkl);
    /* Look even in a new set: the same member may come twice. */
    rc = member_find(t, mk, mkl, mem, &cur);
    if (rc == PK_ENOTFOUND) {
        if (flags & PK_ZADD_XX) {
            return 0;
        }
        *added = 1;
        res->score = nu;
        res->has_score = 1;
        return member_put(t, m, mk, mkl, mem, nu);
    }
    if (rc != 0 || (flags & PK_ZADD_NX)) {
        return rc;
    }
    if (flags & PK_ZADD_INCR) {
        nu = cur + s;
        if (isnan(nu)) {
            return PK_STORE_NAN;
        }
    }
    if (((flags & PK_ZADD_GT) && !(nu > cur)) ||
        ((flags & PK_ZADD_LT) && !(nu < cur))) {
        return 0;
    }
    res->score = nu;
    res->has_score = 1;
    if (nu == cur) {
        return 0;
    }
    *changed = 1;
    rc = index_del(t, m, mem, cur);
    return rc ? rc : member_put(t, m, mk, mkl, mem, nu);
}

int pk_zset_add(pk_txn *t, uint32_t part, const void *key, size_t klen,
                unsigned flags, size_t n, const double *scores,
                const pk_slice *members, uint64_t now_ms, pk_zadd_result *res)
{
    uint8_t mk[PK_KEYENC_MAX];
    pk_zadd_result r = {0, 0, 0};
    uint64_t added = 0, changed = 0;
    size_t mkl;
    double cur;
    pk__meta m;
    int rc, a, c, existed;

    if (n == 0 || ((flags & PK_ZADD_NX) && (flags & PK_ZADD_XX)) ||
        ((flags & PK_ZADD_NX) && (flags & (PK_ZADD_GT | PK_ZADD_LT))) ||
        ((flags & PK_ZADD_GT) && (flags & PK_ZADD_LT)) ||
        ((flags & PK_ZADD_INCR) && n != 1)) {
        return PK_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (isnan(scores[i])) {
            return PK_EINVAL;
        }
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    if ((rc = pk__meta_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (m.exists && m.type != PK__T_ZSET) {
        rc = PK_STORE_WRONGTYPE;
        goto out;
    }
    /* Check every member before the first write: a long one must not
     * meet another member under its digest. */
    for (size_t i = 0; i < n; i++) {
        if ((rc = member_key(&m, members[i].ptr, members[i].len, mk, &mkl)) !=
            0) {
            goto out;
        }
        if (m.exists && members[i].len >= PK_KEYENC_SUB &&
            (rc = member_find(t, mk, mkl, &members[i], &cur)) != 0 &&
            rc != PK_ENOTFOUND) {
            goto out;
        }
        rc = 0;
    }
    existed = m.exists;
    if (!existed) {
        m.type = PK__T_ZSET;
        m.expire = 0;
        m.count = 0;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        a = c = 0;
        rc = zadd_one(t, &m, flags, scores[i], &members[i], &r, &a, &c);
        added += (uint64_t)a;
        changed += (uint64_t)c;
    }
    if (rc == 0 && added > 0) {
        m.count += added;
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        r.count = added + ((flags & PK_ZADD_CH) ? changed : 0);
        *res = r;
    }
out:
    return pk__op_end(t, rc);
}

int pk_zset_rem(pk_txn *t, uint32_t part, const void *key, size_t klen,
                size_t n, const pk_slice *members, uint64_t now_ms,
                uint64_t *removed)
{
    uint8_t mk[PK_KEYENC_MAX];
    uint64_t count0;
    size_t mkl;
    pk__meta m;
    double cur;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists) {
        if (rc == 0) {
            *removed = 0;
        }
        goto out;
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (member_key(&m, members[i].ptr, members[i].len, mk, &mkl) != 0) {
            continue;
        }
        rc = member_find(t, mk, mkl, &members[i], &cur);
        if (rc == PK_ENOTFOUND || rc == PK_ERANGE) {
            rc = 0;
            continue;
        }
        rc = rc ? rc : index_del(t, &m, &members[i], cur);
        rc = rc ? rc : pk__rec_del(t, mk, mkl, NULL);
        m.count -= m.count > 0;
    }
    if (rc == 0 && m.count != count0) {
        rc = m.count == 0 ? pk__key_drop(t, &m)
                          : pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        *removed = count0 - m.count;
    }
out:
    return pk__op_end(t, rc);
}

int pk_zset_score(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const void *member, size_t mlen, uint64_t now_ms,
                  double *score)
{
    uint8_t mk[PK_KEYENC_MAX];
    size_t mkl;
    pk__meta m;
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc != 0) {
        return rc;
    }
    if (!m.exists || member_key(&m, member, mlen, mk, &mkl) != 0) {
        return PK_ENOTFOUND;
    }
    rc = member_find(t, mk, mkl, &(pk_slice){member, mlen}, score);
    return rc == PK_ERANGE ? PK_ENOTFOUND : rc;
}

int pk_zset_card(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now_ms, uint64_t *card)
{
    pk__meta m;
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc == 0) {
        *card = m.exists ? m.count : 0;
    }
    return rc;
}

int pk__zset_put(pk_txn *t, const pk__meta *m, pk_slice mem, double score)
{
    uint8_t mk[PK_KEYENC_MAX];
    size_t mkl;

    if (member_key(m, mem.ptr, mem.len, mk, &mkl) != 0) {
        return PK_ERANGE;
    }
    return member_put(t, m, mk, mkl, &mem, score);
}

int pk__zset_del(pk_txn *t, const pk__meta *m, pk_slice mem, double score)
{
    uint8_t mk[PK_KEYENC_MAX];
    size_t mkl;
    int rc = index_del(t, m, &mem, score);

    if (rc == 0 && member_key(m, mem.ptr, mem.len, mk, &mkl) == 0) {
        rc = pk__rec_del(t, mk, mkl, NULL);
    }
    return rc;
}

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
    memcpy(buf, m->key, m->plen);
    return pk_keyenc_sub(buf, PK_KEYENC_MAX, m->plen, PK_TAG_ZMEMBER, mem, mlen,
                         len);
}

static int index_key(const pk__meta *m, double score, const void *mem,
                     size_t mlen, uint8_t *buf, size_t *len)
{
    size_t n = m->plen + 1 + 8 + mlen;

    if (n > PK_KEYENC_MAX) {
        return PK_ERANGE;
    }
    memcpy(buf, m->key, m->plen);
    buf[m->plen] = PK_TAG_ZSCORE;
    pk_be64_put(buf + m->plen + 1, pk_keyenc_score(score));
    if (mlen > 0) {
        memcpy(buf + m->plen + 9, mem, mlen);
    }
    *len = n;
    return 0;
}

/* Writes both records of a member with a (new) score. */
static int member_put(pk_txn *t, const pk__meta *m, const uint8_t *mk,
                      size_t mkl, const pk_slice *mem, double score)
{
    uint8_t ik[PK_KEYENC_MAX], sv[8];
    size_t ikl;
    int rc = index_key(m, score, mem->ptr, mem->len, ik, &ikl);

    pk_be64_put(sv, score_bits(score));
    rc = rc ? rc : pk__rec_put(t, mk, mkl, sv, sizeof(sv));
    return rc ? rc : pk__rec_put(t, ik, ikl, "", 0);
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
    MDB_val v;
    int rc;

    member_key(m, mem->ptr, mem->len, mk, &mkl);
    /* Look even in a new set: the same member may come twice. */
    rc = pk__rec_get(t, mk, mkl, &v);
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
    cur = pk__score_get(v.mv_data);
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
    uint8_t ik[PK_KEYENC_MAX];
    pk_zadd_result r = {0, 0, 0};
    uint64_t added = 0, changed = 0;
    size_t ikl;
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
    for (size_t i = 0; i < n; i++) {
        if (index_key(&m, 0, members[i].ptr, members[i].len, ik, &ikl)) {
            rc = PK_ERANGE;
            goto out;
        }
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
    MDB_val v;
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
        rc = pk__rec_get(t, mk, mkl, &v);
        if (rc == PK_ENOTFOUND) {
            rc = 0;
            continue;
        }
        rc = rc ? rc : index_del(t, &m, &members[i], pk__score_get(v.mv_data));
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
    MDB_val v;
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__zset_load(t, part, key, klen, now_ms, &m);
    if (rc != 0) {
        return rc;
    }
    if (!m.exists || member_key(&m, member, mlen, mk, &mkl) != 0) {
        return PK_ENOTFOUND;
    }
    rc = pk__rec_get(t, mk, mkl, &v);
    if (rc == 0) {
        *score = pk__score_get(v.mv_data);
    }
    return rc;
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

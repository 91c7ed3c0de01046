/*
 * pk_str: string commands.  A string is its META record: header plus the
 * value inline (pk_store_int.h), so no command here touches sub-records,
 * except SET replacing a hash or sorted set, which drops the old key whole.
 */
#include <stdio.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_str.h"

int pk_str_parse_int(const void *s, size_t len, int64_t *out)
{
    const unsigned char *p = s;
    uint64_t v = 0;
    size_t i;
    int neg;

    if (len == 0 || len > 20) {
        return PK_STORE_NOTINT;
    }
    if (len == 1 && p[0] == '0') {
        *out = 0;
        return 0;
    }
    neg = p[0] == '-';
    i = (size_t)neg;
    if (i == len || p[i] < '1' || p[i] > '9') {
        return PK_STORE_NOTINT;
    }
    for (; i < len; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d > 9 || v > UINT64_MAX / 10 || v * 10 > UINT64_MAX - d) {
            return PK_STORE_NOTINT;
        }
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) {
        return PK_STORE_NOTINT;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int pk_str_get(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t now_ms, pk_slice *val)
{
    pk__meta m;
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc != 0) {
        return rc == PK_ERANGE ? PK_ENOTFOUND : rc;
    }
    if (!m.exists) {
        return PK_ENOTFOUND;
    }
    if (m.type != PK__T_STRING) {
        return PK_STORE_WRONGTYPE;
    }
    *val = (pk_slice){m.val, m.vlen};
    return 0;
}

int pk_str_strlen(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now_ms, uint64_t *len)
{
    pk_slice v;
    int rc = pk_str_get(t, part, key, klen, now_ms, &v);

    if (rc == 0 || rc == PK_ENOTFOUND) {
        *len = rc == 0 ? v.len : 0;
        return 0;
    }
    return rc;
}

int pk_str_set(pk_txn *t, uint32_t part, const void *key, size_t klen,
               const void *val, size_t vlen, const pk_set_opts *opts,
               uint64_t now_ms, int *done, pk_slice *old)
{
    pk_set_opts o = opts ? *opts : (pk_set_opts){0, 0};
    uint64_t expire;
    pk__meta m;
    int rc;

    if (((o.flags & PK_SET_NX) && (o.flags & PK_SET_XX)) ||
        ((o.flags & PK_SET_KEEPTTL) && o.expire_at != 0) ||
        ((o.flags & PK_SET_GET) && old == NULL)) {
        return PK_EINVAL;
    }
    if (vlen > PK_STORE_VALUE_MAX) {
        return PK_ERANGE;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    if ((rc = pk__meta_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (o.flags & PK_SET_GET) {
        if (m.exists && m.type != PK__T_STRING) {
            rc = PK_STORE_WRONGTYPE;
            goto out;
        }
        *old = (pk_slice){NULL, 0};
        if (m.exists &&
            (rc = pk__scratch_copy(t, m.val, m.vlen, &old->ptr)) != 0) {
            goto out;
        }
        old->len = m.exists ? m.vlen : 0;
    }
    if (((o.flags & PK_SET_NX) && m.exists) ||
        ((o.flags & PK_SET_XX) && !m.exists)) {
        *done = 0;
        goto out;
    }
    *done = 1;
    expire = (o.flags & PK_SET_KEEPTTL) ? m.expire : o.expire_at;
    if (m.exists &&
        (m.type != PK__T_STRING || (expire != 0 && expire <= now_ms))) {
        if ((rc = pk__key_drop(t, &m)) != 0) {
            goto out;
        }
    }
    if (expire == 0 || expire > now_ms) {
        m.type = PK__T_STRING;
        m.expire = expire;
        rc = pk__meta_put(t, &m, val, vlen, NULL, 0);
    }
out:
    return pk__op_end(t, rc);
}

int pk_str_getdel(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now_ms, pk_slice *val)
{
    pk__meta m;
    const void *p;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc == PK_ERANGE || (rc == 0 && !m.exists)) {
        rc = PK_ENOTFOUND;
    } else if (rc == 0 && m.type != PK__T_STRING) {
        rc = PK_STORE_WRONGTYPE;
    } else if (rc == 0 && (rc = pk__scratch_copy(t, m.val, m.vlen, &p)) == 0) {
        *val = (pk_slice){p, m.vlen};
        rc = pk__key_drop(t, &m);
    }
    return pk__op_end(t, rc);
}

int pk_str_incrby(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  int64_t by, uint64_t now_ms, int64_t *out)
{
    char buf[24];
    int64_t cur = 0;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0), n;

    if (rc != 0) {
        return rc;
    }
    if ((rc = pk__meta_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (m.exists && m.type != PK__T_STRING) {
        rc = PK_STORE_WRONGTYPE;
        goto out;
    }
    if (m.exists && (rc = pk_str_parse_int(m.val, m.vlen, &cur)) != 0) {
        goto out;
    }
    if ((by < 0 && cur < 0 && by < INT64_MIN - cur) ||
        (by > 0 && cur > 0 && by > INT64_MAX - cur)) {
        rc = PK_STORE_OVERFLOW;
        goto out;
    }
    cur += by;
    n = snprintf(buf, sizeof(buf), "%lld", (long long)cur);
    m.type = PK__T_STRING;
    rc = pk__meta_put(t, &m, buf, (size_t)n, NULL, 0);
    if (rc == 0) {
        *out = cur;
    }
out:
    return pk__op_end(t, rc);
}

int pk_str_append(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const void *val, size_t vlen, uint64_t now_ms, uint64_t *len)
{
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = pk__meta_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (m.exists && m.type != PK__T_STRING) {
        rc = PK_STORE_WRONGTYPE;
        goto out;
    }
    m.type = PK__T_STRING;
    /* The old value is read from the map before anything is written. */
    rc = pk__meta_put(t, &m, m.val, m.vlen, val, vlen);
    if (rc == 0) {
        *len = m.vlen + vlen;
    }
out:
    return pk__op_end(t, rc);
}

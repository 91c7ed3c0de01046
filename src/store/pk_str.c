/*
 * pk_str: string commands.  A string is its META record: header plus the
 * value inline (pk_store_int.h), so no command here touches sub-records,
 * except SET replacing a hash or sorted set, which drops the old key whole.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "store/pk_key.h"
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

int pk__str_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now, pk__meta *m)
{
    int rc = pk__meta_load(t, part, key, klen, now, m);

    if (rc == 0 && m->exists && m->type != PK__T_STRING) {
        rc = PK_STORE_WRONGTYPE;
    }
    return rc;
}

int pk__str_grow(pk_txn *t, const pk__meta *m, size_t len, uint8_t **out)
{
    size_t keep = m->vlen < len ? m->vlen : len;

    t->scratch.len = 0;
    if (pk__buf_reserve(&t->scratch, len + 1) != 0) {
        return pk__fail(t, PK_ENOMEM);
    }
    if (keep > 0) {
        memcpy(t->scratch.p, m->val, keep);
    }
    memset(t->scratch.p + keep, 0, len - keep);
    *out = t->scratch.p;
    return 0;
}

int pk__str_put(pk_txn *t, pk__meta *m, const void *val, size_t vlen,
                uint64_t expire, uint64_t now)
{
    int rc;

    if (m->exists &&
        (m->type != PK__T_STRING || (expire != 0 && expire <= now)) &&
        (rc = pk__key_drop(t, m)) != 0) {
        return rc;
    }
    if (expire != 0 && expire <= now) {
        return 0;
    }
    m->type = PK__T_STRING;
    m->expire = expire;
    return pk__meta_put(t, m, val, vlen, NULL, 0);
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
    rc = pk__str_put(t, &m, val, vlen, expire, now_ms);
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
    char buf[PK_I64_CHARS];
    int64_t cur = 0;
    pk__meta m;
    size_t n;
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
    if (m.exists && (rc = pk_str_parse_int(m.val, m.vlen, &cur)) != 0) {
        goto out;
    }
    if ((by < 0 && cur < 0 && by < INT64_MIN - cur) ||
        (by > 0 && cur > 0 && by > INT64_MAX - cur)) {
        rc = PK_STORE_OVERFLOW;
        goto out;
    }
    cur += by;
    n = pk_i64_format(buf, cur);
    m.type = PK__T_STRING;
    rc = pk__meta_put(t, &m, buf, n, NULL, 0);
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
    if (m.vlen + vlen > PK_STORE_VALUE_MAX) {
        rc = PK_STORE_TOOBIG;
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

int pk_str_getex(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 int mode, uint64_t expire_at, uint64_t now_ms, pk_slice *val)
{
    const void *p;
    pk__meta m;
    int rc;

    if ((mode == PK_GETEX_AT && expire_at == 0) || mode < PK_GETEX_KEEP ||
        mode > PK_GETEX_PERSIST) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    rc = pk__str_load(t, part, key, klen, now_ms, &m);
    if (rc == PK_ERANGE || (rc == 0 && !m.exists)) {
        rc = PK_ENOTFOUND;
    }
    if (rc != 0 || (rc = pk__scratch_copy(t, m.val, m.vlen, &p)) != 0) {
        goto out;
    }
    *val = (pk_slice){p, m.vlen};
    if (mode == PK_GETEX_AT && expire_at <= now_ms) {
        rc = pk__key_drop(t, &m);
    } else if (mode == PK_GETEX_AT ||
               (mode == PK_GETEX_PERSIST && m.expire != 0)) {
        m.expire = mode == PK_GETEX_AT ? expire_at : 0;
        /* The value is in scratch now; the map's bytes stay unread. */
        rc = pk__meta_put(t, &m, p, m.vlen, NULL, 0);
    }
out:
    return pk__op_end(t, rc);
}

int pk_str_msetnx(pk_txn *t, const uint32_t *parts, const pk_slice *kv,
                  size_t n, uint64_t now_ms, int *done)
{
    uint8_t enc[PK_KEYENC_MAX];
    size_t plen;
    int rc = 0, e = 0;

    /* Every key is looked at (and its length checked) before the first
     * is written. */
    for (size_t i = 0; i < n && rc == 0 && !e; i++) {
        rc = pk_keyenc_prefix(parts[i], kv[2 * i].ptr, kv[2 * i].len, enc,
                              sizeof(enc) - 1, &plen);
        rc = rc ? rc
                : pk_key_exists(t, parts[i], kv[2 * i].ptr, kv[2 * i].len,
                                now_ms, &e);
    }
    if (rc != 0 || e) {
        *done = 0;
        return rc;
    }
    for (size_t i = 0; i < n && rc == 0;) {
        /* One operation per run of keys in the same partition: all of
         * them when the keys share a slot, as in a cluster. */
        size_t end = i + 1;
        pk__meta m;
        while (end < n && parts[end] == parts[i]) {
            end++;
        }
        if ((rc = pk__op_begin(t, parts[i], 0)) != 0) {
            return rc;
        }
        for (; i < end && rc == 0; i++) {
            rc = pk__meta_load(t, parts[i], kv[2 * i].ptr, kv[2 * i].len,
                               now_ms, &m);
            rc = rc ? rc
                    : pk__str_put(t, &m, kv[2 * i + 1].ptr, kv[2 * i + 1].len,
                                  0, now_ms);
        }
        rc = pk__op_end(t, rc);
    }
    if (rc == 0) {
        *done = 1;
    }
    return rc;
}

/* Redis's string2ld: the longest float strtold accepts (5k characters). */
#define FLOAT_CHARS_MAX 5120

int pk_str_parse_float(const void *s, size_t len, long double *out)
{
    char buf[FLOAT_CHARS_MAX];
    long double v;
    char *end;

    if (len == 0 || len >= sizeof(buf)) {
        return PK_STORE_NOTFLOAT;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    /* end short of len: a NUL inside the value ended the parse. */
    if (buf[0] == ' ' || (buf[0] >= '\t' && buf[0] <= '\r') ||
        end != buf + len ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || v == 0)) ||
        errno == EINVAL || isnan(v)) {
        return PK_STORE_NOTFLOAT;
    }
    *out = v;
    return 0;
}

int pk_str_incrbyfloat(pk_txn *t, uint32_t part, const void *key, size_t klen,
                       const void *by, size_t bylen, uint64_t now_ms,
                       pk_slice *out)
{
    long double cur = 0, incr;
    pk__meta m;
    size_t n;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = pk__str_load(t, part, key, klen, now_ms, &m)) != 0 ||
        (m.exists && (rc = pk_str_parse_float(m.val, m.vlen, &cur)) != 0) ||
        (rc = pk_str_parse_float(by, bylen, &incr)) != 0) {
        goto out;
    }
    cur += incr;
    if (isnan(cur) || isinf(cur)) {
        rc = PK_STORE_NANINF;
        goto out;
    }
    t->scratch.len = 0;
    if (pk__buf_reserve(&t->scratch, FLOAT_CHARS_MAX) != 0) {
        rc = pk__fail(t, PK_ENOMEM);
        goto out;
    }
    n = pk_ld_format((char *)t->scratch.p, FLOAT_CHARS_MAX, cur);
    m.type = PK__T_STRING;
    if ((rc = pk__meta_put(t, &m, t->scratch.p, n, NULL, 0)) == 0) {
        *out = (pk_slice){t->scratch.p, n};
    }
out:
    return pk__op_end(t, rc);
}

int pk_str_setrange(pk_txn *t, uint32_t part, const void *key, size_t klen,
                    uint64_t offset, const void *val, size_t vlen,
                    uint64_t now_ms, uint64_t *len)
{
    uint8_t *p;
    size_t n;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = pk__str_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (vlen == 0) {
        /* Setting nothing neither creates nor checks the length. */
        *len = m.vlen;
        goto out;
    }
    if (offset > PK_STORE_VALUE_MAX || offset + vlen > PK_STORE_VALUE_MAX) {
        rc = PK_STORE_TOOBIG;
        goto out;
    }
    n = offset + vlen > m.vlen ? (size_t)offset + vlen : m.vlen;
    if ((rc = pk__str_grow(t, &m, n, &p)) != 0) {
        goto out;
    }
    memcpy(p + offset, val, vlen);
    m.type = PK__T_STRING;
    if ((rc = pk__meta_put(t, &m, p, n, NULL, 0)) == 0) {
        *len = n;
    }
out:
    return pk__op_end(t, rc);
}

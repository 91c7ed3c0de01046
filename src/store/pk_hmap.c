/*
 * pk_hmap: hash commands on top of the record layer.  The META record's
 * count is kept equal to the number of field records; HSET and HDEL adjust
 * it by what they actually added or removed, and HDEL of the last field
 * drops the key (META included) so no empty hash is ever visible.
 * HRANDFIELD picks through the store's random choices (pk_store_rand.c).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "store/pk_hmap.h"
#include "store/pk_store_int.h"
#include "store/pk_str.h"

/* Builds prefix | HFIELD | field into buf (PK_KEYENC_MAX bytes). */
static int field_key(const pk__meta *m, const void *f, size_t flen,
                     uint8_t *buf, size_t *len)
{
    return pk__sub_key(m->key, m->plen, PK_TAG_HFIELD, f, flen, buf, len);
}

/* Writes field f's record k with value val (a long field carries f). */
static int field_put(pk_txn *t, const uint8_t *k, size_t kl, const void *f,
                     size_t flen, const void *val, size_t vlen)
{
    pk_slice v;
    int rc = pk__sub_val(t, PK_TAG_HFIELD, (pk_slice){f, flen},
                         (pk_slice){val, vlen}, &v);

    return rc ? rc : pk__rec_put(t, k, kl, v.ptr, v.len);
}

/*
 * Looks up field f's record k in a write: 0 with *val, PK_ENOTFOUND, or
 * PK_ERANGE when another field's digest holds k.
 */
static int field_find(pk_txn *t, const uint8_t *k, size_t kl, const void *f,
                      size_t flen, pk_slice *val)
{
    return pk__sub_get(t, PK_TAG_HFIELD, k, kl, f, flen, val);
}

/* Loads the key for a read: missing (also one that cannot exist) or a hash. */
static int load_read(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     uint64_t now, pk__meta *m)
{
    int rc = pk__read_begin(t, part);

    rc = rc ? rc : pk__meta_load(t, part, key, klen, now, m);
    if (rc == PK_ERANGE) {
        m->exists = 0;
        return 0;
    }
    if (rc == 0 && m->exists && m->type != PK__T_HASH) {
        return PK_STORE_WRONGTYPE;
    }
    return rc;
}

/* Looks up one field of a loaded hash. */
static int field_get(pk_txn *t, const pk__meta *m, const void *f, size_t flen,
                     pk_slice *val)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    int rc;

    if (!m->exists || field_key(m, f, flen, kb, &kl) != 0) {
        return PK_ENOTFOUND;
    }
    rc = field_find(t, kb, kl, f, flen, val);
    return rc == PK_ERANGE ? PK_ENOTFOUND : rc;
}

int pk_hmap_get(pk_txn *t, uint32_t part, const void *key, size_t klen,
                const void *field, size_t flen, uint64_t now_ms, pk_slice *val)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    return rc ? rc : field_get(t, &m, field, flen, val);
}

int pk_hmap_mget(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 size_t n, const pk_slice *fields, uint64_t now_ms,
                 pk_slice *vals)
{
    pk__meta m;
    pk_slice v;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = field_get(t, &m, fields[i].ptr, fields[i].len, &v);
        if (rc == PK_ENOTFOUND) {
            v = (pk_slice){NULL, 0};
            rc = 0;
        }
        vals[i] = v;
    }
    return rc;
}

int pk_hmap_len(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *len)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *len = m.exists ? m.count : 0;
    }
    return rc;
}

int pk_hmap_exists(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   const void *field, size_t flen, uint64_t now_ms, int *exists)
{
    pk__meta m;
    pk_slice v;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    rc = rc ? rc : field_get(t, &m, field, flen, &v);
    if (rc == 0 || rc == PK_ENOTFOUND) {
        *exists = rc == 0;
        return 0;
    }
    return rc;
}

int pk_hmap_each(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now_ms, pk_hmap_cb cb, void *ctx)
{
    pk__meta m;
    MDB_cursor *c;
    MDB_val k, v;
    pk_slice f, fv;
    size_t plen;
    int rc = load_read(t, part, key, klen, now_ms, &m), mrc;

    if (rc != 0 || !m.exists) {
        return rc;
    }
    plen = m.plen + 1;
    m.key[m.plen] = PK_TAG_HFIELD;
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    k = (MDB_val){plen, m.key};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, m.key, plen) != 0) {
            break;
        }
        rc = pk__sub_full(
            PK_TAG_HFIELD,
            (pk_slice){(uint8_t *)k.mv_data + plen, k.mv_size - plen},
            (pk_slice){v.mv_data, v.mv_size}, &f, &fv);
        rc = rc ? pk__fail(t, rc) : cb(ctx, f, fv);
        if (rc != 0) {
            break;
        }
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND) {
        rc = pk__fail(t, pk__err(mrc));
    }
    return rc;
}

int pk_hmap_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                   pk_hmap_cb cb, void *ctx)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0 || !m.exists) {
        return rc;
    }
    /* A field's record: the field, then its value as the rest. */
    return pk__rand_pick(t, &m, PK_TAG_HFIELD, count, repeat, &seed, cb, ctx);
}

/* Loads the key inside a write operation; it must be missing or a hash. */
static int load_write(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      uint64_t now, pk__meta *m)
{
    int rc = pk__meta_load(t, part, key, klen, now, m);

    if (rc == 0 && m->exists && m->type != PK__T_HASH) {
        return PK_STORE_WRONGTYPE;
    }
    return rc;
}

int pk_hmap_set(pk_txn *t, uint32_t part, const void *key, size_t klen,
                size_t n, const pk_slice *fields, const pk_slice *vals,
                uint64_t now_ms, uint64_t *added)
{
    uint8_t kb[PK_KEYENC_MAX];
    uint64_t count0;
    size_t kl;
    pk__meta m;
    pk_slice v;
    MDB_val mv;
    int rc;

    if (n == 0) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    if ((rc = load_write(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    /* Check every field before the first write: a long one must not
     * meet another field under its digest. */
    for (size_t i = 0; i < n; i++) {
        if ((rc = field_key(&m, fields[i].ptr, fields[i].len, kb, &kl)) != 0 ||
            (rc = vals[i].len > PK_STORE_VALUE_MAX ? PK_ERANGE : 0) != 0) {
            goto out;
        }
        if (m.exists && fields[i].len >= PK_KEYENC_SUB &&
            (rc = field_find(t, kb, kl, fields[i].ptr, fields[i].len, &v)) !=
                PK_ENOTFOUND &&
            rc != 0) {
            goto out;
        }
        rc = 0;
    }
    if (!m.exists) {
        m.type = PK__T_HASH;
        m.expire = 0;
        m.count = 0;
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        field_key(&m, fields[i].ptr, fields[i].len, kb, &kl);
        rc = pk__rec_get(t, kb, kl, &mv);
        if (rc == PK_ENOTFOUND) {
            m.count++;
            rc = 0;
        }
        rc = rc ? rc
                : field_put(t, kb, kl, fields[i].ptr, fields[i].len,
                            vals[i].ptr, vals[i].len);
    }
    if (rc == 0 && (m.count != count0 || !m.exists)) {
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        *added = m.count - count0;
    }
out:
    return pk__op_end(t, rc);
}

int pk_hmap_del(pk_txn *t, uint32_t part, const void *key, size_t klen,
                size_t n, const pk_slice *fields, uint64_t now_ms,
                uint64_t *removed)
{
    uint8_t kb[PK_KEYENC_MAX];
    uint64_t count0;
    size_t kl;
    pk__meta m;
    pk_slice v;
    int rc = pk__op_begin(t, part, 0), del;

    if (rc != 0) {
        return rc;
    }
    rc = load_write(t, part, key, klen, now_ms, &m);
    if (rc == PK_ERANGE || (rc == 0 && !m.exists)) {
        *removed = 0;
        rc = 0;
        goto out;
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        del = 0;
        if (field_key(&m, fields[i].ptr, fields[i].len, kb, &kl) == 0 &&
            (rc = field_find(t, kb, kl, fields[i].ptr, fields[i].len, &v)) ==
                0) {
            rc = pk__rec_del(t, kb, kl, &del);
        }
        rc = rc == PK_ENOTFOUND || rc == PK_ERANGE ? 0 : rc;
        m.count -= del && m.count > 0;
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

int pk_hmap_incrby(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   const void *field, size_t flen, int64_t by, uint64_t now_ms,
                   int64_t *out)
{
    uint8_t kb[PK_KEYENC_MAX];
    char num[PK_I64_CHARS];
    int64_t cur = 0;
    size_t kl;
    pk__meta m;
    pk_slice v;
    int rc = pk__op_begin(t, part, 0), n, isnew = 0;

    if (rc != 0) {
        return rc;
    }
    if ((rc = load_write(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if ((rc = field_key(&m, field, flen, kb, &kl)) != 0) {
        goto out;
    }
    rc = m.exists ? field_find(t, kb, kl, field, flen, &v) : PK_ENOTFOUND;
    if (rc == PK_ENOTFOUND) {
        isnew = 1;
        rc = 0;
    } else if (rc == 0 && pk_str_parse_int(v.ptr, v.len, &cur)) {
        rc = PK_STORE_HASH_NOTINT;
    }
    if (rc != 0) {
        goto out;
    }
    if ((by < 0 && cur < 0 && by < INT64_MIN - cur) ||
        (by > 0 && cur > 0 && by > INT64_MAX - cur)) {
        rc = PK_STORE_OVERFLOW;
        goto out;
    }
    cur += by;
    /* A new field's META first: the load left its cursor there, and a
     * missing key's META is then written without a second search. */
    if (isnew) {
        if (!m.exists) {
            m.type = PK__T_HASH;
            m.expire = 0;
            m.count = 0;
        }
        m.count++;
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    n = (int)pk_i64_format(num, cur);
    rc = rc ? rc : field_put(t, kb, kl, field, flen, num, (size_t)n);
    if (rc == 0) {
        *out = cur;
    }
out:
    return pk__op_end(t, rc);
}

int pk_hmap_setnx(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  const void *field, size_t flen, const void *val, size_t vlen,
                  uint64_t now_ms, int *set)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    pk__meta m;
    pk_slice v;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = load_write(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (field_key(&m, field, flen, kb, &kl) != 0 || vlen > PK_STORE_VALUE_MAX) {
        rc = PK_ERANGE;
        goto out;
    }
    rc = m.exists ? field_find(t, kb, kl, field, flen, &v) : PK_ENOTFOUND;
    if (rc == 0) {
        *set = 0;
        goto out;
    }
    if (rc != PK_ENOTFOUND) {
        goto out;
    }
    if (!m.exists) {
        m.type = PK__T_HASH;
        m.expire = 0;
        m.count = 0;
    }
    m.count++;
    rc = field_put(t, kb, kl, field, flen, val, vlen);
    rc = rc ? rc : pk__meta_put(t, &m, NULL, 0, NULL, 0);
    if (rc == 0) {
        *set = 1;
    }
out:
    return pk__op_end(t, rc);
}

int pk_hmap_parse_ld(const void *s, size_t len, long double *out)
{
    char buf[PK_HMAP_FLOAT_MAX + 1], *end;
    long double v;

    if (len == 0 || len > PK_HMAP_FLOAT_MAX) {
        return 0;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) {
        return 0;
    }
    errno = 0;
    v = strtold(buf, &end);
    if ((size_t)(end - buf) != len || isnan(v) ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || v == 0))) {
        return 0;
    }
    *out = v;
    return 1;
}

int pk_hmap_incrbyfloat(pk_txn *t, uint32_t part, const void *key, size_t klen,
                        const void *field, size_t flen, long double by,
                        uint64_t now_ms, pk_slice *out)
{
    uint8_t kb[PK_KEYENC_MAX];
    char num[PK_HMAP_FLOAT_MAX];
    long double cur = 0;
    const void *p;
    size_t kl, n;
    pk__meta m;
    pk_slice v;
    int rc, isnew = 0;

    if (isnan(by) || isinf(by)) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    if ((rc = load_write(t, part, key, klen, now_ms, &m)) != 0 ||
        (rc = field_key(&m, field, flen, kb, &kl)) != 0) {
        goto out;
    }
    rc = m.exists ? field_find(t, kb, kl, field, flen, &v) : PK_ENOTFOUND;
    if (rc == PK_ENOTFOUND) {
        isnew = 1;
        rc = 0;
    } else if (rc == 0 && !pk_hmap_parse_ld(v.ptr, v.len, &cur)) {
        rc = PK_STORE_HASH_NOTFLOAT;
    }
    if (rc != 0) {
        goto out;
    }
    cur += by;
    if (isnan(cur) || isinf(cur)) {
        rc = PK_STORE_INCR_NANINF;
        goto out;
    }
    if ((n = pk_ld_format(num, sizeof(num), cur)) == 0) {
        rc = PK_STORE_INCR_NANINF; /* cannot happen for finite values */
        goto out;
    }
    rc = field_put(t, kb, kl, field, flen, num, n);
    if (rc == 0 && isnew) {
        if (!m.exists) {
            m.type = PK__T_HASH;
            m.expire = 0;
            m.count = 0;
        }
        m.count++;
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    rc = rc ? rc : pk__scratch_copy(t, num, n, &p);
    if (rc == 0) {
        *out = (pk_slice){p, n};
    }
out:
    return pk__op_end(t, rc);
}

int pk_hmap_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t cursor, const pk_scan_opts *opts, uint64_t now_ms,
                 pk_hmap_cb cb, void *ctx, uint64_t *next)
{
    size_t count = opts && opts->count ? opts->count : 10;
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    return rc ? rc
              : pk__sub_scan(t, &m, PK_TAG_HFIELD, cursor, count,
                             opts ? opts->match : NULL,
                             opts ? opts->match_len : 0, cb, ctx, next);
}

/*
 * pk_key: commands on keys of any type, and SCAN.
 *
 * SCAN walks the data DB in key order, jumping from one key's META record
 * to the next key's (seek to prefix | FF, past every tag), so a hash with a
 * million fields costs one seek.  A long key (pk_keyenc.h) comes back from
 * its META value, which holds the whole key.  Its cursor is stateless; see
 * pk_key.h for why it never loses a key.
 */
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_glob.h"
#include "store/pk_key.h"
#include "store/pk_store_int.h"

const char *pk_type_name(pk_type type)
{
    switch (type) {
    case PK_TYPE_STRING:
        return "string";
    case PK_TYPE_HASH:
        return "hash";
    case PK_TYPE_ZSET:
        return "zset";
    case PK_TYPE_LIST:
        return "list";
    case PK_TYPE_SET:
        return "set";
    default:
        return "none";
    }
}

/*
 * Loads a key for a read; a key that cannot exist (PK_ERANGE: its long
 * prefix is another key's, see pk__meta_load) is simply missing.
 */
static int load_read(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     uint64_t now, pk__meta *m)
{
    int rc = pk__read_begin(t, part);

    if (rc == 0) {
        rc = pk__meta_load(t, part, key, klen, now, m);
    }
    if (rc == PK_ERANGE) {
        m->exists = 0;
        rc = 0;
    }
    return rc;
}

int pk_key_del(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t now_ms, int *deleted)
{
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc == PK_ERANGE) {
        m.exists = 0;
        rc = 0;
    }
    if (rc == 0) {
        *deleted = m.exists;
        rc = m.exists ? pk__key_drop(t, &m) : 0;
    }
    return pk__op_end(t, rc);
}

int pk_key_exists(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now_ms, int *exists)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *exists = m.exists;
    }
    return rc;
}

int pk_key_type(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_type *type)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *type = m.exists ? (pk_type)m.type : PK_TYPE_NONE;
    }
    return rc;
}

int pk_key_usage(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now_ms, uint64_t *bytes)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0 && !m.exists) {
        rc = PK_ENOTFOUND;
    }
    if (rc == 0) {
        *bytes = m.plen + 1 + m.vlen + 16 * m.count + 16;
    }
    return rc;
}

int pk_key_expiretime(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      uint64_t now_ms, int64_t *when_ms)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *when_ms = !m.exists ? -2 : m.expire == 0 ? -1 : (int64_t)m.expire;
    }
    return rc;
}

int pk_key_pttl(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, int64_t *ttl_ms)
{
    int64_t when;
    int rc = pk_key_expiretime(t, part, key, klen, now_ms, &when);

    if (rc == 0) {
        *ttl_ms = when < 0 ? when : when - (int64_t)now_ms;
    }
    return rc;
}

/* Whether EXPIRE's conditions allow replacing cur (0: none) by when. */
static int expire_allowed(unsigned flags, uint64_t cur, uint64_t when)
{
    if ((flags & PK_EXPIRE_NX) && cur != 0) {
        return 0;
    }
    if ((flags & PK_EXPIRE_XX) && cur == 0) {
        return 0;
    }
    /* No expiry counts as an infinite TTL. */
    if ((flags & PK_EXPIRE_GT) && (cur == 0 || when <= cur)) {
        return 0;
    }
    return !((flags & PK_EXPIRE_LT) && cur != 0 && when >= cur);
}

/* Rewrites the META record with a new expiry, keeping everything else. */
static int set_expire(pk_txn *t, pk__meta *m, uint64_t when)
{
    m->expire = when;
    if (m->type != PK__T_STRING) {
        return pk__meta_put(t, m, NULL, 0, NULL, 0);
    }
    /* m->val points into the map: pk__meta_put copies it before writing. */
    return pk__meta_put(t, m, m->val, m->vlen, NULL, 0);
}

static int expire_op(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     uint64_t when, unsigned flags, uint64_t now, int *done)
{
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now, &m);
    if (rc == PK_ERANGE) {
        m.exists = 0;
        rc = 0;
    }
    if (rc != 0) {
        goto out;
    }
    if (!m.exists || (when != 0 && !expire_allowed(flags, m.expire, when)) ||
        (when == 0 && m.expire == 0)) {
        *done = 0;
        goto out;
    }
    *done = 1;
    rc = when != 0 && when <= now ? pk__key_drop(t, &m)
                                  : set_expire(t, &m, when);
out:
    return pk__op_end(t, rc);
}

int pk_key_expire(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t when_ms, unsigned flags, uint64_t now_ms, int *done)
{
    if (when_ms == 0 || ((flags & PK_EXPIRE_NX) && (flags & ~PK_EXPIRE_NX)) ||
        ((flags & PK_EXPIRE_GT) && (flags & PK_EXPIRE_LT))) {
        return PK_EINVAL;
    }
    return expire_op(t, part, key, klen, when_ms, flags, now_ms, done);
}

int pk_key_persist(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t now_ms, int *done)
{
    return expire_op(t, part, key, klen, 0, 0, now_ms, done);
}

/* The four bytes after the partition that group keys for SCAN. */
static uint32_t scan_group(const uint8_t *k, size_t klen)
{
    uint8_t g[4] = {0, 0, 0, 0};

    memcpy(g, k + 4, klen - 4 < 4 ? klen - 4 : 4);
    return pk_be32_get(g);
}

/*
 * Reports the key whose META record is (k, v) if it passes the filters.  A
 * long key's prefix holds only its head: its META value holds the key.
 */
static int scan_visit(const pk_keyparts *kp, const MDB_val *v,
                      const pk_scan_opts *o, uint64_t now, pk_scan_cb cb,
                      void *ctx)
{
    uint8_t type, user[PK_KEYENC_MAX];
    uint64_t exp, cnt;
    pk_slice key;

    if (pk__meta_parse(v->mv_data, v->mv_size, &type, &exp, &cnt) != 0) {
        return PK_ECORRUPT;
    }
    if ((exp != 0 && exp <= now) || (o->type != 0 && o->type != type)) {
        return 0;
    }
    if (kp->longkey) {
        pk__meta_body(v->mv_data, v->mv_size, &key);
        if (key.ptr == NULL) {
            return PK_ECORRUPT;
        }
    } else {
        key = (pk_slice){user, pk_keyenc_unescape(kp->esc, kp->esc_len, user)};
    }
    if (o->match != NULL &&
        !pk_glob_match(o->match, o->match_len, key.ptr, key.len, 0)) {
        return 0;
    }
    return cb(ctx, kp->part, key);
}

int pk_store_scan(pk_txn *t, uint64_t cursor, const pk_scan_opts *opts,
                  uint64_t now_ms, pk_scan_cb cb, void *ctx, uint64_t *next)
{
    pk_scan_opts o = {NULL, 0, 10, PK_TYPE_NONE, NULL, NULL};
    uint8_t seek[PK_KEYENC_MAX + 1];
    uint32_t last_part = 0, last_group = 0;
    size_t examined = 0;
    MDB_cursor *c;
    MDB_val k, v;
    pk_keyparts kp;
    int rc = 0, mrc;

    if (t->err != 0) {
        return t->err;
    }
    if (opts != NULL) {
        o = *opts;
        o.count = o.count ? o.count : 10;
        if (o.match != NULL && o.match_len == 1 &&
            ((const char *)o.match)[0] == '*') {
            o.match = NULL; /* as Redis: also matches the empty key */
        }
    }
    mrc = mdb_cursor_open(t->txn, t->s->data, &c);
    if (mrc != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    pk_be64_put(seek, cursor);
    k = (MDB_val){8, seek};
    while ((mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE)) == 0) {
        if (pk_keyenc_parse(k.mv_data, k.mv_size, &kp) != 0) {
            rc = PK_ECORRUPT;
            break;
        }
        if (o.may != NULL && !o.may(o.may_ctx, kp.part)) {
            /* Skip the partition: seek to the next one's first key. */
            if (kp.part == UINT32_MAX) {
                mrc = MDB_NOTFOUND;
                break;
            }
            pk_be64_put(seek, (uint64_t)(kp.part + 1) << 32);
            k = (MDB_val){4, seek};
            continue;
        }
        if (examined >= o.count &&
            (kp.part != last_part ||
             scan_group(k.mv_data, k.mv_size) != last_group)) {
            *next = (uint64_t)kp.part << 32;
            if (kp.part == last_part) {
                *next |= scan_group(k.mv_data, k.mv_size);
            }
            break;
        }
        if (kp.tag == PK_TAG_META) {
            examined++;
            last_part = kp.part;
            last_group = scan_group(k.mv_data, k.mv_size);
            rc = scan_visit(&kp, &v, &o, now_ms, cb, ctx);
            if (rc != 0) {
                break;
            }
        }
        /* Jump past every record of this key. */
        memcpy(seek, k.mv_data, kp.prefix_len);
        seek[kp.prefix_len] = 0xFF;
        k = (MDB_val){kp.prefix_len + 1, seek};
    }
    mdb_cursor_close(c);
    if (rc != 0) {
        return rc;
    }
    if (mrc == MDB_NOTFOUND) {
        *next = 0;
        return 0;
    }
    return mrc == 0 ? 0 : pk__fail(t, pk__err(mrc));
}

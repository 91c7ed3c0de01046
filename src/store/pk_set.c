/*
 * pk_set: the record layer of sets -- loading a set, SADD, SREM, SCARD,
 * SISMEMBER/SMISMEMBER, SMEMBERS, SMOVE and SSCAN -- and the helpers the
 * other set files share (pk_set_int.h): member keys, membership and the
 * buffer of members copied out of the map.
 *
 * Invariant: the META count equals the number of SMEMBER records of the
 * key, and is never 0 (the last SREM / SPOP / SMOVE drops the key).  A
 * write checks every member's length and the key's type before it writes
 * anything, so an error leaves the set as it was.
 *
 * SSCAN is the cursor walk HSCAN and ZSCAN use (pk__sub_scan).  The set
 * algebra is in pk_set_algebra.c, the random choices of SPOP and
 * SRANDMEMBER in pk_set_rand.c.
 */
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_set_int.h"

int pk__set_member_key(const uint8_t *prefix, size_t plen, const void *mem,
                       size_t mlen, uint8_t *buf, size_t *len)
{
    return pk__sub_key(prefix, plen, PK_TAG_SMEMBER, mem, mlen, buf, len);
}

int pk__set_put(pk_txn *t, const uint8_t *k, size_t kl, pk_slice mem)
{
    pk_slice v;
    int rc = pk__sub_val(t, PK_TAG_SMEMBER, mem, (pk_slice){"", 0}, &v);

    return rc ? rc : pk__rec_put(t, k, kl, v.ptr, v.len);
}

int pk__set_add_one(pk_txn *t, const uint8_t *k, size_t kl, pk_slice mem,
                    int *added)
{
    pk_slice v;
    int rc = pk__sub_val(t, PK_TAG_SMEMBER, mem, (pk_slice){"", 0}, &v);

    return rc ? rc : pk__rec_add(t, k, kl, v.ptr, v.len, added);
}

int pk__set_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 uint64_t now, pk__meta *m)
{
    int rc = pk__meta_load(t, part, key, klen, now, m);

    if (rc == PK_ERANGE) {
        m->exists = 0;
        m->plen = PK_KEYENC_MAX; /* no member fits under it */
        return 0;
    }
    if (rc == 0 && m->exists && m->type != PK__T_SET) {
        return PK_STORE_WRONGTYPE;
    }
    return rc;
}

int pk__set_load_read(pk_txn *t, uint32_t part, const void *key, size_t klen,
                      uint64_t now, pk__meta *m)
{
    int rc = pk__read_begin(t, part);

    return rc ? rc : pk__set_load(t, part, key, klen, now, m);
}

int pk__set_has(pk_txn *t, const uint8_t *prefix, size_t plen, const void *mem,
                size_t mlen)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    pk_slice v;
    int rc;

    if (pk__set_member_key(prefix, plen, mem, mlen, kb, &kl) != 0) {
        return 0; /* cannot be stored under prefix, so not a member */
    }
    rc = pk__sub_get(t, PK_TAG_SMEMBER, kb, kl, mem, mlen, &v);
    return rc == 0 ? 1 : rc == PK_ENOTFOUND || rc == PK_ERANGE ? 0 : rc;
}

int pk__set_save(pk_txn *t, pk__meta *m)
{
    return m->count == 0 ? pk__key_drop(t, m)
                         : pk__meta_put(t, m, NULL, 0, NULL, 0);
}

int pk__set_each(pk_txn *t, const pk__meta *m, pk_set_cb cb, void *ctx)
{
    pk__sub_walk w;
    int rc = pk__sub_walk_open(t, &w, m->key, m->plen, PK_TAG_SMEMBER, 0);

    while (rc == 0 && w.valid && (rc = cb(ctx, w.mem)) == 0) {
        rc = pk__sub_walk_next(t, &w, 0);
    }
    pk__sub_walk_close(&w);
    return rc;
}

void pk__set_fresh(pk__meta *m)
{
    m->type = PK__T_SET;
    m->expire = 0;
    m->count = 0;
}

int pk__set_buf_add(pk__buf *b, pk_slice mem)
{
    if (pk__buf_reserve(b, 4 + mem.len) != 0) {
        return PK_ENOMEM;
    }
    pk_be32_put(b->p + b->len, (uint32_t)mem.len);
    if (mem.len > 0) {
        memcpy(b->p + b->len + 4, mem.ptr, mem.len);
    }
    b->len += 4 + mem.len;
    return 0;
}

int pk__set_buf_next(const pk__buf *b, size_t *off, pk_slice *mem)
{
    size_t len;

    if (*off >= b->len) {
        return 0;
    }
    len = pk_be32_get(b->p + *off);
    *mem = (pk_slice){b->p + *off + 4, len};
    *off += 4 + len;
    return 1;
}

int pk_set_add(pk_txn *t, uint32_t part, const void *key, size_t klen, size_t n,
               const pk_slice *members, uint64_t now_ms, uint64_t *added)
{
    uint8_t kb[PK_KEYENC_MAX];
    uint64_t count0;
    size_t kl;
    pk__meta m;
    pk_slice sv;
    int rc, is_new;

    if (n == 0) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc == 0 && m.exists && m.type != PK__T_SET) {
        rc = PK_STORE_WRONGTYPE;
    }
    /* Check every member before the first write: a long one must not
     * meet another member under its digest. */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = pk__set_member_key(m.key, m.plen, members[i].ptr, members[i].len,
                                kb, &kl);
        if (rc == 0 && m.exists && members[i].len >= PK_KEYENC_SUB) {
            rc = pk__sub_get(t, PK_TAG_SMEMBER, kb, kl, members[i].ptr,
                             members[i].len, &sv);
            rc = rc == PK_ENOTFOUND ? 0 : rc;
        }
    }
    if (rc != 0) {
        goto out;
    }
    if (!m.exists) {
        pk__set_fresh(&m);
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        pk__set_member_key(m.key, m.plen, members[i].ptr, members[i].len, kb,
                           &kl);
        rc = pk__set_add_one(t, kb, kl, members[i], &is_new);
        m.count += rc == 0 && is_new;
    }
    if (rc == 0 && m.count != count0) {
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        *added = m.count - count0;
    }
out:
    return pk__op_end(t, rc);
}

int pk__set_rem_one(pk_txn *t, pk__meta *m, const void *mem, size_t mlen,
                    int *gone)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    pk_slice v;
    int del = 0, rc = 0;

    /* A short member is its sub-key; a long one's record must hold it. */
    if (pk__set_member_key(m->key, m->plen, mem, mlen, kb, &kl) == 0 &&
        (mlen < PK_KEYENC_SUB ||
         (rc = pk__sub_get(t, PK_TAG_SMEMBER, kb, kl, mem, mlen, &v)) == 0)) {
        rc = pk__rec_del(t, kb, kl, &del);
    }
    rc = rc == PK_ENOTFOUND || rc == PK_ERANGE ? 0 : rc;
    m->count -= del && m->count > 0;
    *gone = del;
    return rc;
}

int pk_set_rem(pk_txn *t, uint32_t part, const void *key, size_t klen, size_t n,
               const pk_slice *members, uint64_t now_ms, uint64_t *removed)
{
    uint64_t count0;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0), del;

    if (rc != 0) {
        return rc;
    }
    rc = pk__set_load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists) {
        if (rc == 0) {
            *removed = 0;
        }
        goto out;
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = pk__set_rem_one(t, &m, members[i].ptr, members[i].len, &del);
    }
    if (rc == 0 && m.count != count0) {
        rc = pk__set_save(t, &m);
    }
    if (rc == 0) {
        *removed = count0 - m.count;
    }
out:
    return pk__op_end(t, rc);
}

int pk_set_card(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *card)
{
    pk__meta m;
    int rc = pk__set_load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *card = m.exists ? m.count : 0;
    }
    return rc;
}

int pk_set_ismember(pk_txn *t, uint32_t part, const void *key, size_t klen,
                    size_t n, const pk_slice *members, uint64_t now_ms,
                    uint8_t *is)
{
    pk__meta m;
    int rc = pk__set_load_read(t, part, key, klen, now_ms, &m), h;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        h = m.exists
                ? pk__set_has(t, m.key, m.plen, members[i].ptr, members[i].len)
                : 0;
        if (h < 0) {
            return h;
        }
        is[i] = (uint8_t)h;
    }
    return rc;
}

int pk_set_each(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_set_cb cb, void *ctx)
{
    pk__meta m;
    int rc = pk__set_load_read(t, part, key, klen, now_ms, &m);

    return rc != 0 || !m.exists ? rc : pk__set_each(t, &m, cb, ctx);
}

int pk_set_move(pk_txn *t, uint32_t part, const void *src, size_t slen,
                const void *dst, size_t dlen, const void *member, size_t mlen,
                uint64_t now_ms, int *moved)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    pk__meta s, d;
    int rc = pk__op_begin(t, part, 0), gone = 0, h;

    if (rc != 0) {
        return rc;
    }
    rc = pk__set_load(t, part, src, slen, now_ms, &s);
    if (rc == 0 && !s.exists) {
        *moved = 0; /* as Redis: dst's type is not looked at then */
        goto out;
    }
    rc = rc ? rc : pk__set_load(t, part, dst, dlen, now_ms, &d);
    if (rc != 0) {
        goto out;
    }
    if (slen == dlen && memcmp(src, dst, slen) == 0) {
        h = pk__set_has(t, s.key, s.plen, member, mlen);
        rc = h < 0 ? h : 0;
        *moved = h > 0;
        goto out;
    }
    /* A member of src cannot be stored under dst if dst is a key that
     * cannot be stored (pk__set_load: its plen is then too long). */
    if (pk__set_has(t, s.key, s.plen, member, mlen) > 0 &&
        pk__set_member_key(d.key, d.plen, member, mlen, kb, &kl) != 0) {
        rc = PK_ERANGE;
        goto out;
    }
    rc = pk__set_rem_one(t, &s, member, mlen, &gone);
    if (rc == 0 && gone) {
        rc = pk__set_save(t, &s);
    }
    if (rc == 0 && gone) {
        rc = pk__set_has(t, d.key, d.plen, member, mlen);
        if (rc == 0) {
            if (!d.exists) {
                pk__set_fresh(&d);
            }
            d.count++;
            pk__set_member_key(d.key, d.plen, member, mlen, kb, &kl);
            rc = pk__set_put(t, kb, kl, (pk_slice){member, mlen});
            rc = rc ? rc : pk__meta_put(t, &d, NULL, 0, NULL, 0);
        } else if (rc > 0) {
            rc = 0;
        }
    }
    if (rc == 0) {
        *moved = gone;
    }
out:
    return pk__op_end(t, rc);
}

/* SSCAN hands pk__sub_scan's (member, empty value) pairs to a set callback. */
typedef struct scan_ctx {
    pk_set_cb cb;
    void *ctx;
} scan_ctx;

static int scan_one(void *ctx, pk_slice sub, pk_slice val)
{
    scan_ctx *sc = ctx;

    (void)val;
    return sc->cb(sc->ctx, sub);
}

int pk_set_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t cursor, const pk_sscan_opts *opts, uint64_t now_ms,
                pk_set_cb cb, void *ctx, uint64_t *next)
{
    pk_sscan_opts o = {NULL, 0, 10};
    scan_ctx sc = {cb, ctx};
    pk__meta m;
    int rc = pk__set_load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0) {
        return rc;
    }
    if (opts != NULL) {
        o = *opts;
        o.count = o.count ? o.count : 10;
    }
    return pk__sub_scan(t, &m, PK_TAG_SMEMBER, cursor, o.count, o.match,
                        o.match_len, scan_one, &sc, next);
}

/*
 * pk_store_rec: the record layer -- the only code that writes the data DB.
 *
 * Every change to the data DB goes through pk__rec_put, pk__rec_del and
 * pk__rec_delprefix, inside an operation framed by pk__op_begin and
 * pk__op_end (see pk_store_int.h).  Those functions keep three invariants
 * that the rest of the store relies on:
 *
 *   - stats.keys counts META records and stats.bytes sums key + value
 *     sizes of the partition's data records;
 *   - the expiry index holds (when, prefix) exactly for META records with
 *     a non-zero expiry;
 *   - the partition's log gets one record per operation that changed
 *     something, listing the physical changes in order.
 *
 * A failure inside the record layer makes the transaction's error sticky
 * (pk__fail), because the operation may be half applied.
 */
#include <assert.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"

static_assert(PK__META_HDR == 1 + 1 + 8, "META header: type, flags, expire");
static_assert(PK__META_AGG == PK__META_HDR + 8, "META of hash/zset: count");
static_assert(PK_STORE_KEY_MAX <= UINT32_MAX, "a full key's length is a u32");
static_assert(PK__META_MAX <= UINT32_MAX,
              "a META value's length fits a change record's u32 vlen");
static_assert(PK__LIST_BODY == 8 + 8, "META body of a list: count, head");

int pk__read_begin(pk_txn *t, uint32_t part)
{
    pk__ctr *c;
    int rc;

    if (t->err != 0) {
        return t->err;
    }
    if ((rc = pk__part_ready(t, part)) != 0) {
        return rc;
    }
    c = pk__ctr_get(t->s, part);
    if (c != NULL) {
        c->reads++;
    }
    return 0;
}

int pk__op_begin(pk_txn *t, uint32_t part, unsigned flags)
{
    pk__ctr *c;
    int rc;

    if (t->err != 0) {
        return t->err;
    }
    if (t->rdonly || t->op_open) {
        return PK_EINVAL;
    }
    if (!(flags & (PK__OP_RAW | PK__OP_DEFER)) &&
        (rc = pk__part_ready(t, part)) != 0) {
        return rc;
    }
    rc = pk__stat_load(t, part, &t->st);
    if (rc != 0) {
        return pk__fail(t, rc);
    }
    t->op_open = 1;
    t->op_appended = t->appended;
    t->op_flags = flags;
    t->op_part = part;
    t->st_dirty = 0;
    t->log.len = 0;
    if (!(flags & PK__OP_QUIET) && (c = pk__ctr_get(t->s, part)) != NULL) {
        c->writes++;
    }
    return 0;
}

int pk__op_end(pk_txn *t, int rc)
{
    int err, grouped = 0;

    if (!t->op_open) {
        return t->err ? t->err : rc;
    }
    t->op_open = 0;
    if (t->err != 0) {
        return t->err;
    }
    if (t->log.len > 0 && !(t->op_flags & PK__OP_NOLOG)) {
        if (t->grp_open && t->op_part == t->grp_part) {
            /* The group's record carries these changes, and the stats
             * after them, when the group ends. */
            if (pk__buf_reserve(&t->grp_log, t->log.len) != 0) {
                return pk__fail(t, PK_ENOMEM);
            }
            memcpy(t->grp_log.p + t->grp_log.len, t->log.p, t->log.len);
            t->grp_log.len += t->log.len;
            grouped = 1;
        } else {
            /* A command's record may take the place of the one before it
             * (a group's, a raw or deferred operation's never does). */
            err = pk__log_coalesce(t, t->log.p, t->log.len);
            if (err == 0)
                err =
                    pk__log_append(t, t->st.log_last + 1, t->log.p, t->log.len);
            if (err < 0)
                return pk__fail(t, err);
        }
    }
    if (t->st_dirty && (err = pk__stat_save(t, t->op_part, &t->st)) != 0) {
        return pk__fail(t, err);
    }
    /* The journal carries the stats of a logged change; others must
     * reach the stats DB with this commit. */
    if (t->st_dirty && !grouped && t->appended == t->op_appended &&
        t->ckpt == 0) {
        t->ckpt = 1;
    }
    return rc;
}

int pk_txn_group_begin(pk_txn *t, uint32_t part)
{
    if (t->err != 0) {
        return t->err;
    }
    if (t->rdonly || t->op_open || t->grp_open) {
        return PK_EINVAL;
    }
    t->grp_open = 1;
    t->grp_part = part;
    t->grp_log.len = 0;
    return 0;
}

int pk_txn_group_end(pk_txn *t)
{
    pk__buf b;
    int rc;

    if (!t->grp_open || t->op_open) {
        return t->err ? t->err : PK_EINVAL;
    }
    t->grp_open = 0;
    if (t->err != 0 || t->grp_log.len == 0) {
        return t->err;
    }
    /* The data is current (the grouped operations made it so): RAW. */
    if ((rc = pk__op_begin(t, t->grp_part, PK__OP_QUIET | PK__OP_RAW)) != 0) {
        return rc;
    }
    b = t->log; /* op_begin emptied it: the group's record goes instead */
    t->log = t->grp_log;
    t->grp_log = b;
    t->grp_log.len = 0;
    return pk__op_end(t, 0);
}

uint64_t pk_txn_changes(const pk_txn *t)
{
    return t->changes;
}

/* Offset of the body of a META value with a valid header, or 0. */
static size_t meta_body(const uint8_t *v, size_t n)
{
    size_t klen;

    if (!(v[1] & PK__META_FKEY)) {
        return PK__META_HDR;
    }
    if (n - PK__META_HDR < 4) {
        return 0;
    }
    klen = pk_be32_get(v + PK__META_HDR);
    return klen <= n - PK__META_HDR - 4 && klen <= PK_STORE_KEY_MAX
               ? PK__META_HDR + 4 + klen
               : 0;
}

int pk__meta_parse(const uint8_t *v, size_t n, uint8_t *type, uint64_t *expire,
                   uint64_t *count)
{
    size_t body;

    if (n < PK__META_HDR || v[0] < PK__T_STRING || v[0] > PK__T_LASTTYPE ||
        (v[1] & ~PK__META_FKEY) != 0 || (body = meta_body(v, n)) == 0 ||
        (v[0] != PK__T_STRING &&
         n - body != (v[0] == PK__T_LIST ? PK__LIST_BODY : 8))) {
        return PK_ECORRUPT;
    }
    /* A list is never empty, and its positions head .. head + count - 1
     * must not wrap. */
    if (v[0] == PK__T_LIST &&
        (pk_be64_get(v + body) == 0 ||
         pk_be64_get(v + body) - 1 > UINT64_MAX - pk_be64_get(v + body + 8))) {
        return PK_ECORRUPT;
    }
    *type = v[0];
    *expire = pk_be64_get(v + 2);
    *count = v[0] == PK__T_STRING ? 0 : pk_be64_get(v + body);
    return 0;
}

size_t pk__meta_body(const uint8_t *v, size_t n, pk_slice *ukey)
{
    size_t body = meta_body(v, n);

    *ukey = body > PK__META_HDR
                ? (pk_slice){v + PK__META_HDR + 4, body - PK__META_HDR - 4}
                : (pk_slice){NULL, 0};
    return body;
}

/*
 * Whether a META value's full key belongs to the record's prefix kp: only
 * long-form prefixes carry one, and theirs must be the prefix of the key
 * it names (same head, same digest).  0, PK_ECORRUPT, or PK_ENOMEM.
 */
static int meta_key_check(const uint8_t *k, const pk_keyparts *kp,
                          const uint8_t *v, size_t vlen)
{
    uint8_t want[PK_KEYENC_SHORT];
    pk_slice uk;
    size_t n;
    int rc;

    pk__meta_body(v, vlen, &uk);
    if (!kp->longkey) {
        return uk.ptr == NULL ? 0 : PK_ECORRUPT;
    }
    if (uk.ptr == NULL) {
        return PK_ECORRUPT;
    }
    rc = pk_keyenc_prefix(kp->part, uk.ptr, uk.len, want, sizeof(want), &n);
    if (rc != 0) {
        return rc;
    }
    return n == kp->prefix_len && memcmp(want, k, n) == 0 ? 0 : PK_ECORRUPT;
}

int pk__sub_key(const uint8_t *prefix, size_t plen, uint8_t tag,
                const void *mem, size_t mlen, uint8_t *buf, size_t *len)
{
    int n;

    if (mlen > PK_STORE_VALUE_MAX || plen > PK_KEYENC_SHORT) {
        return PK_ERANGE;
    }
    if ((n = pk_keyenc_member(mem, mlen, buf + plen + 1)) < 0) {
        return n;
    }
    memmove(buf, prefix, plen);
    buf[plen] = tag;
    *len = plen + 1 + (size_t)n;
    return 0;
}

int pk__sub_full(uint8_t tag, pk_slice sub, pk_slice val, pk_slice *mem,
                 pk_slice *rest)
{
    size_t skip = tag == PK_TAG_ZSCORE ? 8 : 0, n;
    const uint8_t *v = val.ptr;

    if (sub.len < skip || sub.len - skip > PK_KEYENC_SUB) {
        return PK_ECORRUPT;
    }
    if (!pk__sub_long(sub.len - skip)) {
        *mem = (pk_slice){sub.ptr + skip, sub.len - skip};
        *rest = val;
        return 0;
    }
    switch (tag) {
    case PK_TAG_HFIELD:
        if (val.len < 4 || (n = pk_be32_get(v)) > val.len - 4) {
            return PK_ECORRUPT;
        }
        *mem = (pk_slice){v + 4, n};
        *rest = (pk_slice){v + 4 + n, val.len - 4 - n};
        return 0;
    case PK_TAG_ZMEMBER:
        if (val.len < 8) {
            return PK_ECORRUPT;
        }
        *mem = (pk_slice){v + 8, val.len - 8};
        *rest = (pk_slice){v, 8};
        return 0;
    case PK_TAG_ZSCORE:
    case PK_TAG_SMEMBER:
        *mem = val;
        *rest = (pk_slice){"", 0};
        return 0;
    }
    return PK_ECORRUPT;
}

int pk__sub_val(pk_txn *t, uint8_t tag, pk_slice mem, pk_slice rest,
                pk_slice *out)
{
    pk__buf *b = &t->subv;
    size_t hdr = tag == PK_TAG_HFIELD ? 4 : 0;

    if (mem.len < PK_KEYENC_SUB) {
        *out = rest;
        return 0;
    }
    if (tag == PK_TAG_ZSCORE || tag == PK_TAG_SMEMBER) {
        *out = mem;
        return 0;
    }
    /* HFIELD: u32 length | field | value; ZMEMBER: score8 | member. */
    b->len = 0;
    if (pk__buf_reserve(b, hdr + mem.len + rest.len) != 0) {
        return pk__fail(t, PK_ENOMEM);
    }
    if (tag == PK_TAG_HFIELD) {
        pk_be32_put(b->p, (uint32_t)mem.len);
        memcpy(b->p + 4, mem.ptr, mem.len);
        if (rest.len > 0) {
            memcpy(b->p + 4 + mem.len, rest.ptr, rest.len);
        }
    } else {
        memcpy(b->p, rest.ptr, rest.len);
        memcpy(b->p + rest.len, mem.ptr, mem.len);
    }
    *out = (pk_slice){b->p, hdr + mem.len + rest.len};
    return 0;
}

int pk__sub_get(pk_txn *t, uint8_t tag, const uint8_t *k, size_t klen,
                const void *mem, size_t mlen, pk_slice *rest)
{
    pk_keyparts kp;
    pk_slice full, r;
    MDB_val v;
    int rc = pk__rec_get(t, k, klen, &v);

    if (rc != 0) {
        return rc;
    }
    if (pk_keyenc_parse(k, klen, &kp) != 0 ||
        pk__sub_full(tag, (pk_slice){kp.sub, kp.sub_len},
                     (pk_slice){v.mv_data, v.mv_size}, &full, &r) != 0) {
        return pk__fail(t, PK_ECORRUPT);
    }
    /* A short member is its sub-key; a long one must be the one asked. */
    if (full.len != mlen || (mlen > 0 && memcmp(full.ptr, mem, mlen) != 0)) {
        return PK_ERANGE;
    }
    *rest = r;
    return 0;
}

/*
 * Checks a field or member record's layout: its value must carry a long
 * member whose long form is the record's sub-key, and a ZMEMBER value a
 * score.  0, PK_ECORRUPT or PK_ENOMEM.
 */
static int sub_check(uint8_t tag, pk_slice sub, pk_slice val)
{
    uint8_t want[PK_KEYENC_SUB];
    size_t skip = tag == PK_TAG_ZSCORE ? 8 : 0;
    pk_slice mem, rest;
    int n;

    if (pk__sub_full(tag, sub, val, &mem, &rest) != 0 ||
        (tag == PK_TAG_ZMEMBER && rest.len != 8) ||
        ((tag == PK_TAG_ZSCORE || tag == PK_TAG_SMEMBER) && rest.len != 0) ||
        rest.len > PK_STORE_VALUE_MAX || mem.len > PK_STORE_VALUE_MAX) {
        return PK_ECORRUPT;
    }
    if (!pk__sub_long(sub.len - skip)) {
        return 0;
    }
    if ((n = pk_keyenc_member(mem.ptr, mem.len, want)) < 0) {
        return n;
    }
    return pk__sub_long((size_t)n) && memcmp(want, sub.ptr + skip, n) == 0
               ? 0
               : PK_ECORRUPT;
}

int pk__rec_check(const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen)
{
    pk_keyparts kp;
    uint8_t type;
    uint64_t exp, cnt;
    pk_slice sub, val = {v, vlen};

    if (klen > PK_KEYENC_MAX || pk_keyenc_parse(k, klen, &kp) != 0) {
        return PK_ECORRUPT;
    }
    if (kp.sys) { /* an index entry: pk_ftidx.c checks its own */
        return vlen <= PK_STORE_VALUE_MAX ? 0 : PK_ECORRUPT;
    }
    switch (kp.tag) {
    case PK_TAG_META:
        if (kp.sub_len != 0 || pk__meta_parse(v, vlen, &type, &exp, &cnt)) {
            return PK_ECORRUPT;
        }
        return meta_key_check(k, &kp, v, vlen);
    case PK_TAG_LITEM:
        return kp.sub_len == 8 && vlen <= PK_STORE_VALUE_MAX ? 0 : PK_ECORRUPT;
    }
    sub = (pk_slice){kp.sub, kp.sub_len};
    return sub_check(kp.tag, sub, val);
}

/*
 * mdb_cursor_get(c, key, v, MDB_SET), without the search when c is on key
 * already.  LMDB keeps every cursor of a write transaction valid across
 * the writes of the others; the key comparison makes "on key" certain.
 */
static int cursor_seek(MDB_cursor *c, MDB_val *key, MDB_val *v)
{
    MDB_val cur;

    if (mdb_cursor_get(c, &cur, v, MDB_GET_CURRENT) == 0 &&
        cur.mv_size == key->mv_size &&
        memcmp(cur.mv_data, key->mv_data, key->mv_size) == 0) {
        return 0;
    }
    return mdb_cursor_get(c, key, v, MDB_SET);
}

/* pk__rec_get with cursor c. */
static int rec_get(pk_txn *t, MDB_cursor *c, const uint8_t *k, size_t klen,
                   MDB_val *v)
{
    MDB_val key = {klen, (void *)k};
    int rc = mdb_cursor_get(c, &key, v, MDB_SET);

    if (rc == MDB_NOTFOUND) {
        return PK_ENOTFOUND;
    }
    return rc == 0 ? 0 : pk__fail(t, pk__err(rc));
}

int pk__rec_get(pk_txn *t, const uint8_t *k, size_t klen, MDB_val *v)
{
    MDB_cursor *c;
    int rc = pk__cursor(t, t->s->data, &c);

    return rc ? rc : rec_get(t, c, k, klen, v);
}

/* Appends one physical entry to the operation's change record. */
static int log_add(pk_txn *t, uint8_t op, const uint8_t *k, size_t klen,
                   const void *v, size_t vlen)
{
    pk__buf *b = &t->log;
    uint8_t *p;

    if (t->op_flags & PK__OP_NOLOG) {
        return 0;
    }
    t->changes++;
    klen -= 4; /* the partition is the log's, not the entry's */
    if (pk__buf_reserve(b, 1 + 2 + klen + 4 + vlen) != 0) {
        return PK_ENOMEM;
    }
    p = b->p + b->len;
    *p++ = op;
    *p++ = (uint8_t)(klen >> 8);
    *p++ = (uint8_t)klen;
    if (klen > 0) {
        memcpy(p, k + 4, klen);
        p += klen;
    }
    if (op == PK__LOG_PUT) {
        pk_be32_put(p, (uint32_t)vlen);
        if (vlen > 0) {
            memcpy(p + 4, v, vlen);
        }
        p += 4 + vlen;
    }
    b->len = (size_t)(p - b->p);
    return 0;
}

/* Adds (add != 0) or removes the expiry index entry (when, prefix). */
static int expiry_set(pk_txn *t, uint64_t when, const uint8_t *prefix,
                      size_t plen, int add)
{
    uint8_t kb[PK_KEYENC_MAX];
    MDB_val k = {8 + plen, kb}, v = {0, ""};
    int rc;

    if (when == 0) {
        return 0;
    }
    pk_be64_put(kb, when);
    memcpy(kb + 8, prefix, plen);
    rc = add ? mdb_put(t->txn, t->s->expiry, &k, &v, 0)
             : mdb_del(t->txn, t->s->expiry, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : pk__err(rc);
}

static uint64_t meta_expire(const uint8_t *v, size_t n)
{
    return n >= PK__META_HDR ? pk_be64_get(v + 2) : 0;
}

static void sub_sat(uint64_t *a, uint64_t b)
{
    *a = *a > b ? *a - b : 0;
}

int pk__rec_put(pk_txn *t, const uint8_t *k, size_t klen, const void *v,
                size_t vlen)
{
    MDB_val key = {klen, (void *)k}, old, val = {vlen, (void *)v};
    uint64_t old_exp = 0, new_exp = 0;
    pk_keyparts kp;
    MDB_cursor *c;
    unsigned flags = 0;
    int rc, meta;

    assert(t->op_open && pk_be32_get(k) == t->op_part);
    if (v == NULL) {
        v = ""; /* an empty value may come as {NULL, 0} */
        val.mv_data = (void *)v;
    }
    if (pk_keyenc_parse(k, klen, &kp) != 0) {
        return pk__fail(t, PK_ECORRUPT);
    }
    meta = kp.tag == PK_TAG_META;
    rc = meta ? pk__meta_cursor(t, &c) : pk__cursor(t, t->s->data, &c);
    if (rc != 0) {
        return rc;
    }
    /* One search at most: a replace writes where the get left the
     * cursor, an insert finds that page without descending from the
     * root.  A META's cursor is on it already after pk__meta_load, or
     * the load found it missing and nothing came or went since. */
    if (meta && t->absent_len == klen && t->absent_at == t->ins_del &&
        memcmp(t->absent_key, k, klen) == 0) {
        rc = MDB_NOTFOUND;
    } else {
        rc = cursor_seek(c, &key, &old);
    }
    t->absent_len = 0;
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return pk__fail(t, pk__err(rc));
    }
    if (rc == 0) {
        flags = MDB_CURRENT;
        sub_sat(&t->st.bytes, klen + old.mv_size);
        old_exp = meta ? meta_expire(old.mv_data, old.mv_size) : 0;
    } else if (meta) {
        t->st.keys++;
    }
    new_exp = meta ? meta_expire(v, vlen) : 0;
    t->st.bytes += klen + vlen;
    t->st_dirty = 1;
    /* Log first: v may not survive the put if it points into the map. */
    if ((rc = log_add(t, PK__LOG_PUT, k, klen, v, vlen)) != 0 ||
        (rc = pk__err(mdb_cursor_put(c, &key, &val, flags))) != 0) {
        return pk__fail(t, rc);
    }
    if (flags == 0) {
        pk__rank_note(t, k, klen, 1);
    }
    if (old_exp != new_exp &&
        ((rc = expiry_set(t, old_exp, k, kp.prefix_len, 0)) != 0 ||
         (rc = expiry_set(t, new_exp, k, kp.prefix_len, 1)) != 0)) {
        return pk__fail(t, rc);
    }
    return 0;
}

int pk__rec_add(pk_txn *t, const uint8_t *k, size_t klen, const void *v,
                size_t vlen, int *added)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)(v ? v : "")};
    size_t log_len = t->log.len;
    uint64_t changes = t->changes;
    MDB_cursor *c;
    int rc;

    assert(t->op_open && pk_be32_get(k) == t->op_part);
    if ((rc = pk__cursor(t, t->s->data, &c)) != 0) {
        return rc;
    }
    /* One search where a get and a put would take two.  The entry is
     * logged first, as pk__rec_put does, and taken back if the record is
     * there already. */
    if ((rc = log_add(t, PK__LOG_PUT, k, klen, val.mv_data, vlen)) != 0) {
        return pk__fail(t, rc);
    }
    rc = mdb_cursor_put(c, &key, &val, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST) {
        t->log.len = log_len;
        t->changes = changes;
        *added = 0;
        return 0;
    }
    if (rc != 0) {
        return pk__fail(t, pk__err(rc));
    }
    t->st.bytes += klen + vlen;
    t->st_dirty = 1;
    *added = 1;
    pk__rank_note(t, k, klen, 1);
    return 0;
}

/* Deletes the record under cursor c, whose key and value are k and v. */
static int del_current(pk_txn *t, MDB_cursor *c, MDB_val *k, MDB_val *v)
{
    pk_keyparts kp;
    uint8_t prefix[PK_KEYENC_MAX];
    uint64_t exp = 0;
    size_t plen = 0;
    int rc;

    if (pk_keyenc_parse(k->mv_data, k->mv_size, &kp) != 0) {
        return PK_ECORRUPT;
    }
    if (kp.tag == PK_TAG_META) {
        exp = meta_expire(v->mv_data, v->mv_size);
        plen = kp.prefix_len;
        memcpy(prefix, k->mv_data, plen);
        sub_sat(&t->st.keys, 1);
    }
    sub_sat(&t->st.bytes, k->mv_size + v->mv_size);
    t->st_dirty = 1;
    /* The note parses k, which the delete may leave dangling. */
    pk__rank_note(t, k->mv_data, k->mv_size, -1);
    rc = mdb_cursor_del(c, 0);
    if (rc != 0) {
        return pk__err(rc);
    }
    return expiry_set(t, exp, prefix, plen, 0);
}

int pk__rec_del(pk_txn *t, const uint8_t *k, size_t klen, int *deleted)
{
    MDB_val key = {klen, (void *)k}, v;
    MDB_cursor *c;
    int rc;

    assert(t->op_open && pk_be32_get(k) == t->op_part);
    if ((rc = pk__cursor(t, t->s->data, &c)) != 0) {
        return rc;
    }
    rc = mdb_cursor_get(c, &key, &v, MDB_SET_KEY);
    if (rc == 0) {
        rc = log_add(t, PK__LOG_DEL, k, klen, NULL, 0);
        rc = rc ? rc : del_current(t, c, &key, &v);
        if (deleted != NULL) {
            *deleted = 1;
        }
    } else if (rc == MDB_NOTFOUND) {
        rc = 0;
    } else {
        rc = pk__err(rc);
    }
    return pk__fail(t, rc);
}

int pk__rec_del_here(pk_txn *t, MDB_cursor *c)
{
    MDB_val k, v;
    int rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);

    assert(t->op_open);
    if (rc != 0) {
        return pk__fail(t, pk__err(rc));
    }
    assert(k.mv_size >= 4 && pk_be32_get(k.mv_data) == t->op_part);
    rc = log_add(t, PK__LOG_DEL, k.mv_data, k.mv_size, NULL, 0);
    return pk__fail(t, rc ? rc : del_current(t, c, &k, &v));
}

int pk__rec_delprefix(pk_txn *t, const uint8_t *prefix, size_t plen,
                      size_t limit, size_t *n)
{
    MDB_cursor *c;
    MDB_val k, v;
    size_t done = 0;
    int rc;

    assert(t->op_open && plen >= 4 && pk_be32_get(prefix) == t->op_part);
    /* A bounded delete would not replay as one entry. */
    assert(limit == 0 || (t->op_flags & PK__OP_NOLOG));
    if ((rc = pk__cursor(t, t->s->data, &c)) != 0) {
        return rc;
    }
    for (;;) {
        k.mv_size = plen;
        k.mv_data = (void *)prefix;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND ||
            (rc == 0 &&
             (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0))) {
            rc = 0;
            break;
        }
        rc = rc ? pk__err(rc) : del_current(t, c, &k, &v);
        if (rc != 0 || (++done == limit)) {
            break;
        }
    }
    if (rc == 0 && done > 0) {
        rc = log_add(t, PK__LOG_DELPREFIX, prefix, plen, NULL, 0);
    }
    if (n != NULL) {
        *n = done;
    }
    return pk__fail(t, rc);
}

/* Notes that m's META record is not there (see pk_txn.absent_key). */
static void absent(pk_txn *t, const pk__meta *m)
{
    if (!t->rdonly && m->plen + 1 <= sizeof(t->absent_key)) {
        memcpy(t->absent_key, m->key, m->plen + 1);
        t->absent_len = m->plen + 1;
        t->absent_at = t->ins_del;
    }
}

int pk__meta_load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t now, pk__meta *m)
{
    uint64_t expire, count;
    uint8_t type;
    pk_slice uk;
    size_t body;
    MDB_cursor *c;
    MDB_val v;
    int rc;

    m->exists = 0;
    m->type = 0;
    m->expire = 0;
    m->count = 0;
    m->head = 0;
    m->val = NULL;
    m->vlen = 0;
    m->ukey = key;
    m->uklen = klen;
    m->longkey = pk_keyenc_long(key, klen);
    rc =
        pk_keyenc_prefix(part, key, klen, m->key, sizeof(m->key) - 1, &m->plen);
    if (rc != 0) {
        return rc;
    }
    m->key[m->plen] = PK_TAG_META;
    rc = pk__meta_cursor(t, &c);
    rc = rc ? rc : rec_get(t, c, m->key, m->plen + 1, &v);
    if (rc == PK_ENOTFOUND) {
        absent(t, m);
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    rc = pk__meta_parse(v.mv_data, v.mv_size, &type, &expire, &count);
    if (rc != 0) {
        return pk__fail(t, rc);
    }
    body = pk__meta_body(v.mv_data, v.mv_size, &uk);
    /* A long key's prefix names it by a digest: the record is this key's
     * only if it holds this key.  Another key under the same prefix (a
     * 128-bit collision) makes this one impossible to store, as an
     * over-long key used to be: PK_ERANGE, which reads take as missing
     * and writes refuse, before anything is written. */
    if (m->longkey &&
        (uk.len != klen || (klen > 0 && memcmp(uk.ptr, key, klen) != 0))) {
        return PK_ERANGE;
    }
    if (expire != 0 && expire <= now) {
        if (t->rdonly || !t->op_open) {
            return 0;
        }
        rc = pk__key_drop(t, m);
        absent(t, m);
        return rc;
    }
    m->exists = 1;
    m->type = type;
    m->expire = expire;
    m->count = count;
    if (type == PK__T_LIST) {
        m->head = pk_be64_get((const uint8_t *)v.mv_data + body + 8);
    }
    m->val = (const uint8_t *)v.mv_data + body;
    m->vlen = v.mv_size - body;
    return 0;
}

int pk__meta_put(pk_txn *t, pk__meta *m, const void *a, size_t alen,
                 const void *b, size_t blen)
{
    size_t fk = m->longkey ? 4 + m->uklen : 0, body = PK__META_HDR + fk;
    size_t n = body + (m->type == PK__T_STRING ? alen + blen
                       : m->type == PK__T_LIST ? PK__LIST_BODY
                                               : 8);
    uint8_t *p;

    if ((m->type == PK__T_STRING && alen + blen > PK_STORE_VALUE_MAX) ||
        m->uklen > PK_STORE_KEY_MAX) {
        return PK_ERANGE;
    }
    t->val.len = 0;
    if (pk__buf_reserve(&t->val, n) != 0) {
        return pk__fail(t, PK_ENOMEM);
    }
    p = t->val.p;
    p[0] = m->type;
    p[1] = m->longkey ? PK__META_FKEY : 0;
    pk_be64_put(p + 2, m->expire);
    if (m->longkey) {
        pk_be32_put(p + PK__META_HDR, (uint32_t)m->uklen);
        memcpy(p + PK__META_HDR + 4, m->ukey, m->uklen);
    }
    if (m->type != PK__T_STRING) {
        pk_be64_put(p + body, m->count);
        if (m->type == PK__T_LIST) {
            pk_be64_put(p + body + 8, m->head);
        }
    } else {
        if (alen > 0) {
            memcpy(p + body, a, alen);
        }
        if (blen > 0) {
            memcpy(p + body + alen, b, blen);
        }
    }
    m->exists = 1;
    return pk__rec_put(t, m->key, m->plen + 1, p, n);
}

int pk__key_drop(pk_txn *t, pk__meta *m)
{
    m->exists = 0;
    return pk__rec_delprefix(t, m->key, m->plen, 0, NULL);
}

int pk__scratch_copy(pk_txn *t, const void *p, size_t n, const void **out)
{
    t->scratch.len = 0;
    if (pk__buf_reserve(&t->scratch, n + 1) != 0) {
        return pk__fail(t, PK_ENOMEM);
    }
    if (n > 0) {
        memcpy(t->scratch.p, p, n);
    }
    *out = t->scratch.p;
    return 0;
}

/*
 * pk_keyops: COPY, RENAME, DUMP, RESTORE and RANDOMKEY on raw records.
 *
 * All of them start from a key's "body": its records as (tag | sub-key,
 * value) pairs, in key order, META first -- the DUMP payload without its
 * header and checksum (layout in pk_keyops.h).  collect() reads a body out
 * of the map into memory (a write would invalidate the map's bytes),
 * body_check() validates one before anything is written, and body_put()
 * writes one under a key's prefix through the record layer.  COPY and
 * RENAME are collect + put (+ drop); DUMP is collect + checksum; RESTORE
 * is checksum + check + put.
 *
 * The only per-type knowledge is kinds[]: which tags a type's records may
 * carry and which of them the META count counts.  Record contents are
 * checked by pk__rec_check, which each type's module extends.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_range.h" /* pk_key_cmp: LMDB's order of suffixes */
#include "store/pk_keyops.h"
#include "store/pk_store_int.h"

#define BODY_HDR 2 /* version, type */
#define BODY_SUM 8 /* XXH3-64 */
#define REC_HDR (2 + 4)
#define WALK_SPAN 64u /* RANDOMKEY's uniform part of the walk */

/* Per aggregate type: its tags, and the one its META count counts. */
static const struct {
    uint8_t type;
    uint8_t counted;
    uint8_t other; /* a second tag allowed, 0 none */
} kinds[] = {
    {PK__T_HASH, PK_TAG_HFIELD, 0},
    {PK__T_ZSET, PK_TAG_ZMEMBER, PK_TAG_ZSCORE},
    {PK__T_LIST, PK_TAG_LITEM, 0},
    {PK__T_SET, PK_TAG_SMEMBER, 0},
};

/* A parsed body record; pointers borrow the body. */
typedef struct brec {
    const uint8_t *sub; /* tag | sub-key */
    size_t n;
    const uint8_t *val;
    size_t vlen;
} brec;

/* Parses the record at *off of body; 0 or PK_ECORRUPT. */
static int brec_next(const uint8_t *p, size_t len, size_t *off, brec *r)
{
    size_t o = *off;

    if (len - o < REC_HDR) {
        return PK_ECORRUPT;
    }
    r->n = (size_t)p[o] << 8 | p[o + 1];
    if (r->n == 0 || len - o - REC_HDR < r->n) {
        return PK_ECORRUPT;
    }
    r->sub = p + o + 2;
    r->vlen = pk_be32_get(p + o + 2 + r->n);
    if (len - o - REC_HDR - r->n < r->vlen) {
        return PK_ECORRUPT;
    }
    r->val = r->sub + r->n + 4;
    *off = o + REC_HDR + r->n + r->vlen;
    return 0;
}

/*
 * Reads key's body into b (from b->len on): header, then every record of
 * its range, META with its expiry zeroed.  m gets the key's META; *maxn
 * the longest suffix (tag | sub-key).  0, PK_ENOTFOUND or an error.
 */
static int collect(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t now, pk__buf *b, pk__meta *m, size_t *maxn)
{
    MDB_cursor *c;
    MDB_val k, v;
    size_t n, top = 0;
    uint8_t *p;
    int rc = pk__read_begin(t, part);

    if (rc == 0) {
        rc = pk__meta_load(t, part, key, klen, now, m);
    }
    if (rc == PK_ERANGE || (rc == 0 && !m->exists)) {
        return PK_ENOTFOUND;
    }
    if (rc != 0 || (rc = pk__cursor(t, t->s->data, &c)) != 0) {
        return rc;
    }
    if (pk__buf_reserve(b, BODY_HDR) != 0) {
        return PK_ENOMEM;
    }
    b->p[b->len++] = PK_DUMP_VERSION;
    b->p[b->len++] = m->type;
    k = (MDB_val){m->plen, m->key};
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size <= m->plen || memcmp(k.mv_data, m->key, m->plen) != 0) {
            break;
        }
        n = k.mv_size - m->plen;
        if (pk__buf_reserve(b, REC_HDR + n + v.mv_size) != 0) {
            return PK_ENOMEM;
        }
        p = b->p + b->len;
        p[0] = (uint8_t)(n >> 8);
        p[1] = (uint8_t)n;
        memcpy(p + 2, (uint8_t *)k.mv_data + m->plen, n);
        if (p[2] == PK_TAG_META) {
            /* The body names no key: a long key's full name is left out
             * (the destination's goes in), and so is the expiry. */
            pk_slice uk;
            size_t body = pk__meta_body(v.mv_data, v.mv_size, &uk);
            size_t vlen = PK__META_HDR + v.mv_size - body;
            pk_be32_put(p + 2 + n, (uint32_t)vlen);
            memcpy(p + REC_HDR + n, v.mv_data, PK__META_HDR);
            memcpy(p + REC_HDR + n + PK__META_HDR,
                   (const uint8_t *)v.mv_data + body, v.mv_size - body);
            p[REC_HDR + n + 1] &= (uint8_t)~PK__META_FKEY;
            memset(p + REC_HDR + n + 2, 0, 8);
            b->len += REC_HDR + n + vlen;
        } else {
            pk_be32_put(p + 2 + n, (uint32_t)v.mv_size);
            memcpy(p + REC_HDR + n, v.mv_data, v.mv_size);
            b->len += REC_HDR + n + v.mv_size;
        }
        top = n > top ? n : top;
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return pk__fail(t, pk__err(rc));
    }
    *maxn = top;
    return 0;
}

/* The ZSCORE suffix (tag | score8 | sub-key) of a ZMEMBER record r
 * (checked by pk__rec_check: its value starts with the score). */
static int zscore_of(const brec *r, uint8_t *out, size_t cap, size_t *n)
{
    double d;

    if (r->vlen < 8 || 1 + 8 + (r->n - 1) > cap) {
        return PK_ECORRUPT;
    }
    d = pk__score_get(r->val);
    if (isnan(d)) {
        return PK_ECORRUPT;
    }
    out[0] = PK_TAG_ZSCORE;
    pk_be64_put(out + 1, pk_keyenc_score(d));
    memcpy(out + 9, r->sub + 1, r->n - 1);
    *n = 9 + (r->n - 1);
    return 0;
}

/*
 * Sorted sets: every ZMEMBER has its ZSCORE record, of the same member
 * (a long member's records both carry it: the same bytes).  The counts
 * are equal (body_check) and records unique, so this makes them a
 * bijection.
 */
static int zset_pairs(const uint8_t *p, size_t len, size_t nscore)
{
    const uint8_t **subs = malloc((nscore ? nscore : 1) * sizeof(*subs));
    uint8_t want[PK_KEYENC_MAX + 8];
    size_t off = 0, i = 0, n = 0, lo, hi;
    brec r;
    int rc = 0;

    if (subs == NULL) {
        return PK_ENOMEM;
    }
    /* The ZSCORE suffixes, in order (the body is sorted). */
    while (off < len && brec_next(p, len, &off, &r) == 0) {
        if (r.sub[0] == PK_TAG_ZSCORE && i < nscore) {
            subs[i++] = r.sub - 2;
        }
    }
    for (off = 0; rc == 0 && off < len;) {
        brec_next(p, len, &off, &r);
        if (r.sub[0] != PK_TAG_ZMEMBER) {
            continue;
        }
        rc = zscore_of(&r, want, sizeof(want), &n);
        for (lo = 0, hi = i; rc == 0 && lo < hi;) {
            size_t mid = (lo + hi) / 2;
            const uint8_t *s = subs[mid];
            size_t sn = (size_t)s[0] << 8 | s[1];
            int c = pk_key_cmp(s + 2, sn, want, n);
            if (c == 0) {
                /* The ZSCORE value (a long member) follows its suffix. */
                size_t vl = pk_be32_get(s + 2 + sn);
                if (vl != r.vlen - 8 || memcmp(s + 6 + sn, r.val + 8, vl)) {
                    rc = PK_ECORRUPT;
                }
                break;
            }
            if (c < 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (rc == 0 && lo >= hi) {
            rc = PK_ECORRUPT;
        }
    }
    free(subs);
    return rc;
}

/* Checks one record as it would be stored under prefix; counts tags. */
static int rec_check(const brec *r, uint8_t type, const uint8_t *prefix,
                     size_t plen, uint64_t *counted, uint64_t *nscore,
                     uint64_t *count)
{
    uint8_t kb[PK_KEYENC_MAX], mtype;
    uint64_t exp;
    size_t i;

    if (plen + r->n > PK_KEYENC_MAX) {
        return PK_ERANGE;
    }
    memcpy(kb, prefix, plen);
    memcpy(kb + plen, r->sub, r->n);
    if (r->sub[0] == PK_TAG_META) {
        /* A body's META names no key (body_put adds the destination's);
         * the expiry comes from RESTORE's argument. */
        if (r->n != 1 || r->vlen < PK__META_HDR ||
            (r->val[1] & PK__META_FKEY) ||
            pk__meta_parse(r->val, r->vlen, &mtype, &exp, count) != 0)
            return PK_ECORRUPT;
        return mtype == type && exp == 0 ? 0 : PK_ECORRUPT;
    }
    if (pk__rec_check(kb, plen + r->n, r->val, r->vlen) != 0) {
        return PK_ECORRUPT;
    }
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (kinds[i].type != type) {
            continue;
        }
        if (r->sub[0] == kinds[i].counted) {
            ++*counted;
            return 0;
        }
        if (kinds[i].other != 0 && r->sub[0] == kinds[i].other) {
            *nscore += r->sub[0] == PK_TAG_ZSCORE;
            return 0;
        }
    }
    return PK_ECORRUPT; /* a tag this type does not have, or a string's */
}

/*
 * Validates the body p[0..len) (records only) of a key of type, as if
 * stored under prefix.  0, PK_ECORRUPT, PK_ERANGE or PK_ENOMEM.
 */
static int body_check(const uint8_t *p, size_t len, uint8_t type,
                      const uint8_t *prefix, size_t plen)
{
    uint64_t counted = 0, nscore = 0, count = 0, pos = 0;
    const uint8_t *prev = NULL;
    size_t off = 0, prevn = 0, nrec = 0;
    brec r;
    int rc;

    while (off < len) {
        if (brec_next(p, len, &off, &r) != 0 ||
            (prev != NULL && pk_key_cmp(prev, prevn, r.sub, r.n) >= 0) ||
            ((nrec == 0) != (r.sub[0] == PK_TAG_META))) {
            return PK_ECORRUPT;
        }
        rc = rec_check(&r, type, prefix, plen, &counted, &nscore, &count);
        if (rc != 0) {
            return rc;
        }
        /* A list's elements sit at head .. head + count - 1 without a
         * gap (pk_list.c reads by position): the body is sorted, so each
         * element must be at the next position. */
        if (type == PK__T_LIST && r.sub[0] == PK_TAG_META) {
            pos = pk_be64_get(r.val + PK__META_HDR + 8);
        } else if (type == PK__T_LIST &&
                   (r.n != 9 || pk_be64_get(r.sub + 1) != pos++)) {
            return PK_ECORRUPT;
        }
        prev = r.sub;
        prevn = r.n;
        nrec++;
    }
    if (nrec == 0) {
        return PK_ECORRUPT;
    }
    if (type == PK__T_STRING) {
        return 0;
    }
    /* Redis never keeps an empty aggregate, and LEN-style commands read
     * the count, so it must be exact. */
    if (count == 0 || count != counted ||
        (type == PK__T_ZSET && nscore != count)) {
        return PK_ECORRUPT;
    }
    return type == PK__T_ZSET ? zset_pairs(p, len, (size_t)nscore) : 0;
}

/* Writes the (checked) body p[0..len) as the key loaded in m (prefix and,
 * for a long key, the full name its META carries), expiring at expire. */
static int body_put(pk_txn *t, const pk__meta *m, const uint8_t *p, size_t len,
                    uint64_t expire)
{
    uint8_t kb[PK_KEYENC_MAX];
    const void *val;
    size_t off = 0, vlen, fk = m->longkey ? 4 + m->uklen : 0;
    brec r;
    int rc = 0;

    memcpy(kb, m->key, m->plen);
    while (rc == 0 && off < len) {
        brec_next(p, len, &off, &r);
        memcpy(kb + m->plen, r.sub, r.n);
        val = r.val;
        vlen = r.vlen;
        if (r.sub[0] == PK_TAG_META) {
            uint8_t *v;
            vlen = r.vlen + fk;
            t->val.len = 0;
            if (pk__buf_reserve(&t->val, vlen) != 0) {
                return pk__fail(t, PK_ENOMEM);
            }
            v = t->val.p;
            memcpy(v, r.val, PK__META_HDR);
            v[1] = m->longkey ? PK__META_FKEY : 0;
            pk_be64_put(v + 2, expire);
            if (m->longkey) {
                pk_be32_put(v + PK__META_HDR, (uint32_t)m->uklen);
                memcpy(v + PK__META_HDR + 4, m->ukey, m->uklen);
            }
            memcpy(v + PK__META_HDR + fk, r.val + PK__META_HDR,
                   r.vlen - PK__META_HDR);
            val = v;
        }
        rc = pk__rec_put(t, kb, m->plen + r.n, val, vlen);
    }
    return rc;
}

/* Drops the key whose prefix is in m (a loaded META) in the open op. */
static int drop_prefix(pk_txn *t, const pk__meta *m)
{
    return pk__rec_delprefix(t, m->key, m->plen, 0, NULL);
}

int pk_key_copy(pk_txn *t, uint32_t spart, const void *src, size_t slen,
                uint32_t dpart, const void *dst, size_t dlen, unsigned flags,
                uint64_t now_ms, int *done)
{
    pk__meta sm, dm;
    pk__buf *b = &t->scratch;
    size_t maxn = 0;
    int rc;

    if (t->rdonly) {
        return PK_EINVAL;
    }
    if (spart == dpart && slen == dlen && memcmp(src, dst, slen) == 0) {
        return PK_EINVAL;
    }
    b->len = 0;
    rc = collect(t, spart, src, slen, now_ms, b, &sm, &maxn);
    if (rc != 0) {
        return rc;
    }
    if ((rc = pk__op_begin(t, dpart, 0)) != 0) {
        return rc;
    }
    rc = pk__meta_load(t, dpart, dst, dlen, now_ms, &dm);
    if (rc == 0 && dm.plen + maxn > PK_KEYENC_MAX) {
        rc = PK_ERANGE;
    }
    if (rc != 0 || (dm.exists && !(flags & PK_KEYOPS_REPLACE))) {
        *done = 0;
        return pk__op_end(t, rc);
    }
    if (dm.exists) {
        rc = drop_prefix(t, &dm);
    }
    if (rc == 0) {
        rc = body_put(t, &dm, b->p + BODY_HDR, b->len - BODY_HDR, sm.expire);
    }
    if (rc == 0 && (flags & PK_KEYOPS_MOVE) && spart == dpart) {
        rc = drop_prefix(t, &sm);
    }
    rc = pk__op_end(t, rc);
    /* Another partition: its own operation in the same transaction, so
     * both commit together (a failure in between is sticky). */
    if (rc == 0 && (flags & PK_KEYOPS_MOVE) && spart != dpart &&
        (rc = pk__op_begin(t, spart, 0)) == 0) {
        rc = pk__op_end(t, drop_prefix(t, &sm));
    }
    if (rc == 0) {
        *done = 1;
    }
    return rc;
}

int pk_key_dump(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_slice *out)
{
    pk__buf *b = &t->scratch;
    pk__meta m;
    size_t maxn;
    int rc;

    b->len = 0;
    rc = collect(t, part, key, klen, now_ms, b, &m, &maxn);
    if (rc != 0) {
        return rc;
    }
    if (pk__buf_reserve(b, BODY_SUM) != 0) {
        return PK_ENOMEM;
    }
    pk_be64_put(b->p + b->len, pk_hash_xxh3(b->p, b->len));
    b->len += BODY_SUM;
    out->ptr = b->p;
    out->len = b->len;
    return 0;
}

int pk_key_restore(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   const void *payload, size_t len, uint64_t expire_ms,
                   unsigned flags, uint64_t now_ms)
{
    const uint8_t *p = payload;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc == 0 && m.exists && !(flags & PK_KEYOPS_REPLACE)) {
        rc = PK_EEXIST;
    } else if (rc == 0 && len < BODY_HDR + BODY_SUM) {
        rc = PK_ECHECKSUM;
    } else if (rc == 0 && p[0] != PK_DUMP_VERSION) {
        rc = PK_EVERSION;
    } else if (rc == 0 && pk_hash_xxh3(p, len - BODY_SUM) !=
                              pk_be64_get(p + len - BODY_SUM)) {
        rc = PK_ECHECKSUM;
    } else if (rc == 0) {
        rc = body_check(p + BODY_HDR, len - BODY_HDR - BODY_SUM, p[1], m.key,
                        m.plen);
    }
    if (rc == 0 && m.exists) {
        rc = drop_prefix(t, &m);
    }
    /* An expiry already past creates nothing, as in Redis. */
    if (rc == 0 && (expire_ms == 0 || expire_ms > now_ms)) {
        rc =
            body_put(t, &m, p + BODY_HDR, len - BODY_HDR - BODY_SUM, expire_ms);
    }
    return pk__op_end(t, rc);
}

/*
 * The META record of the first key at or after seek[0..n) in part (k, v
 * set), PK_ENOTFOUND past the partition's end.  seek holds
 * PK_KEYENC_MAX + 1 bytes and is overwritten.
 */
static int key_at(pk_txn *t, MDB_cursor *c, uint32_t part, uint8_t *seek,
                  size_t n, MDB_val *k, MDB_val *v)
{
    pk_keyparts kp;
    int rc;

    for (;;) {
        *k = (MDB_val){n, seek};
        rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND ||
            (rc == 0 && (k->mv_size < 4 || pk_be32_get(k->mv_data) != part))) {
            return PK_ENOTFOUND;
        }
        if (rc != 0) {
            return pk__fail(t, pk__err(rc));
        }
        if (pk_keyenc_parse(k->mv_data, k->mv_size, &kp) != 0) {
            return PK_ECORRUPT;
        }
        if (kp.tag == PK_TAG_META) {
            return 0;
        }
        /* Inside a key: skip the rest of its records. */
        memcpy(seek, k->mv_data, kp.prefix_len);
        seek[kp.prefix_len] = 0xFF;
        n = kp.prefix_len + 1;
    }
}

/* Whether the META value v is of a live key. */
static int live(const MDB_val *v, uint64_t now)
{
    uint8_t type;
    uint64_t exp, cnt;

    return pk__meta_parse(v->mv_data, v->mv_size, &type, &exp, &cnt) == 0 &&
           (exp == 0 || exp > now);
}

int pk_key_random(pk_txn *t, uint32_t part, uint64_t rnd, uint64_t now_ms,
                  pk_slice *out)
{
    uint8_t seek[PK_KEYENC_MAX + 1], user[PK_KEYENC_MAX];
    uint64_t steps, geo = 0, r, wraps = 0, seen = 0;
    pk__stat st;
    pk_keyparts kp;
    MDB_cursor *c;
    MDB_val k, v;
    const void *p;
    size_t n;
    int rc = pk__read_begin(t, part);

    if (rc != 0 || (rc = pk__stat_load(t, part, &st)) != 0 ||
        (rc = pk__cursor(t, t->s->data, &c)) != 0) {
        return rc;
    }
    if (st.keys == 0) {
        return PK_ENOTFOUND;
    }
    r = pk__rand_next(&rnd);
    while (geo < st.keys / WALK_SPAN + 1 && (r & 1)) {
        geo++;
        r >>= 1;
    }
    steps = (pk__rand_next(&rnd) % WALK_SPAN + WALK_SPAN * geo) % st.keys;
    pk_be32_put(seek, part);
    pk_be64_put(seek + 4, pk__rand_next(&rnd));
    rc = key_at(t, c, part, seek, 12, &k, &v);
    for (;;) {
        if (rc == PK_ENOTFOUND) {
            /* Past the end: wrap to the partition's first key.  A second
             * wrap without a live key means there is none; with one, the
             * walk ends within steps more live keys. */
            if (++wraps >= 2 && seen == 0) {
                return PK_ENOTFOUND;
            }
            pk_be32_put(seek, part);
            rc = key_at(t, c, part, seek, 4, &k, &v);
            continue;
        }
        if (rc != 0) {
            return rc;
        }
        if (live(&v, now_ms)) {
            seen++;
            if (steps-- == 0) {
                break;
            }
        }
        pk_keyenc_parse(k.mv_data, k.mv_size, &kp);
        memcpy(seek, k.mv_data, kp.prefix_len);
        seek[kp.prefix_len] = 0xFF;
        rc = key_at(t, c, part, seek, kp.prefix_len + 1, &k, &v);
    }
    pk_keyenc_parse(k.mv_data, k.mv_size, &kp);
    n = pk_keyenc_unescape(kp.esc, kp.esc_len, user);
    if ((rc = pk__scratch_copy(t, user, n, &p)) != 0) {
        return rc;
    }
    out->ptr = p;
    out->len = n;
    return 0;
}

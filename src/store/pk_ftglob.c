/*
 * pk_ftglob: global index entries and the outbox that carries them
 * (layout in pk_ftidx.h).
 *
 * A write to a document of a global index keeps its DOC entry here, as a
 * local index does, and appends one outbox record with what the
 * document's entries became: a delete for each entry it lost, a put of
 * each entry it has, carrying the document's copy.  The server ships the
 * records, in order, to the partitions their entries belong to, and trims
 * them once applied there.  Puts and deletes of whole entries make a
 * replay of any prefix of the outbox harmless.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "store/pk_ftidx_int.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"

#define OUT_LEN (PK_KEYENC_SYS_LEN + 1 + 8) /* part | 00 03 | 0x11 | seq */
#define SEQ_SHIFT 20         /* a sequence number: ms << SEQ_SHIFT, or more */
#define RANGE_BUCKETS_MAX 64 /* a numeric range over more: every partition */

/* ---- bytes ------------------------------------------------------------ */

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    int err;
} buf;

static uint8_t *buf_room(buf *b, size_t n)
{
    if (b->err)
        return NULL;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        uint8_t *g;
        while (cap < b->len + n)
            cap *= 2;
        if ((g = realloc(b->p, cap)) == NULL) {
            b->err = PK_ENOMEM;
            return NULL;
        }
        b->p = g;
        b->cap = cap;
    }
    b->len += n;
    return b->p + b->len - n;
}

static void buf_put(buf *b, const void *p, size_t n)
{
    uint8_t *at = buf_room(b, n);

    if (at && n)
        memcpy(at, p, n);
}

static void buf_u16(buf *b, size_t v)
{
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};

    buf_put(b, x, 2);
}

static void buf_u32(buf *b, size_t v)
{
    uint8_t x[4];

    pk_be32_put(x, (uint32_t)v);
    buf_put(b, x, 4);
}

static void buf_u64(buf *b, uint64_t v)
{
    uint8_t x[8];

    pk_be64_put(x, v);
    buf_put(b, x, 8);
}

/* A reader over bytes: each get fails (returns 0) past the end. */
typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static int rd_bytes(rd *r, size_t n, const uint8_t **out)
{
    if (r->n - r->at < n)
        return 0;
    *out = r->p + r->at;
    r->at += n;
    return 1;
}

static int rd_u(rd *r, size_t width, uint64_t *out)
{
    const uint8_t *p;

    if (!rd_bytes(r, width, &p))
        return 0;
    *out = 0;
    for (size_t i = 0; i < width; i++)
        *out = *out << 8 | p[i];
    return 1;
}

/* ---- the copy -------------------------------------------------------- */

/* u32 klen | key | u64 expiry (Unix ms, 0: none) | (u32 flen | field |
 * u32 vlen | value)*, fields in byte order. */

static int copy_add(void *ctx, pk_slice f, pk_slice v)
{
    buf *b = ctx;

    buf_u32(b, f.len);
    buf_put(b, f.ptr, f.len);
    buf_u32(b, v.len);
    buf_put(b, v.ptr, v.len);
    return b->err;
}

int pk_ftglob_copy_each(pk_slice copy, pk_slice *key, uint64_t *expiry,
                        int (*cb)(void *ctx, pk_slice field, pk_slice val),
                        void *ctx)
{
    rd r = {(const uint8_t *)copy.ptr, copy.len, 0};
    const uint8_t *p;
    uint64_t n;
    int rc;

    if (!rd_u(&r, 4, &n) || !rd_bytes(&r, n, &p) || !rd_u(&r, 8, expiry))
        return PK_ECORRUPT;
    *key = (pk_slice){p, n};
    while (r.at < r.n) {
        const uint8_t *fp, *vp;
        uint64_t fl, vl;
        if (!rd_u(&r, 4, &fl) || !rd_bytes(&r, fl, &fp) || !rd_u(&r, 4, &vl) ||
            !rd_bytes(&r, vl, &vp))
            return PK_ECORRUPT;
        if (cb && (rc = cb(ctx, (pk_slice){fp, fl}, (pk_slice){vp, vl})) != 0)
            return rc;
    }
    return 0;
}

typedef struct vals_ctx {
    const pk_ftdef *d;
    pk_slice *vals;
} vals_ctx;

static int val_of(void *ctx, pk_slice f, pk_slice v)
{
    vals_ctx *vc = ctx;

    for (uint32_t i = 0; i < vc->d->nfields; i++)
        if (strlen(vc->d->fields[i].name) == f.len &&
            memcmp(vc->d->fields[i].name, f.ptr, f.len) == 0)
            vc->vals[i] = v;
    return 0;
}

/* The entries of the document copy holds, in index d. */
static int copy_ents(const pk_ftdef *d, pk_slice copy, pk__ents *e)
{
    pk_slice vals[PK_FT_FIELDS_MAX] = {{0}}, key;
    vals_ctx vc = {d, vals};
    uint64_t expiry;
    int rc = pk_ftglob_copy_each(copy, &key, &expiry, val_of, &vc);

    return rc ? rc : pk__ftidx_ents_of(d, vals, e);
}

/* ---- where entries live ------------------------------------------------ */

/* An entry's partition: a hash of its index, field and term (a number:
 * its bucket, the top 12 bits of its score8 -- sign and exponent). */
static uint32_t route(uint64_t id, uint8_t kind, uint8_t field,
                      const uint8_t *mid, size_t len, uint32_t nparts)
{
    uint8_t k[8 + 2 + MID_MAX];

    pk_be64_put(k, id);
    k[8] = kind;
    k[9] = field;
    if (kind == K_NUM) {
        k[10] = mid[0];
        k[11] = mid[1] & 0xF0;
        len = 2;
    } else {
        memcpy(k + 10, mid, len);
    }
    return (uint32_t)(pk_hash_xxh3(k, 10 + len) % nparts);
}

static void bit_set(uint8_t *bits, uint32_t p)
{
    bits[p / 8] |= (uint8_t)(1u << (p % 8));
}

int pk_ftglob_scan_parts(uint64_t id, const pk_ftq_scan *sc, int nsc,
                         uint32_t nparts, uint8_t *bits)
{
    for (int i = 0; i < nsc; i++) {
        uint8_t mid[MID_MAX];
        size_t n;
        if (sc[i].kind == PK_FTQ_PREFIX)
            return 1;
        if (sc[i].kind == PK_FTQ_EXACT) {
            n = pk_keyenc_escape(sc[i].term, sc[i].len, mid, MID_MAX - 2);
            mid[n++] = 0;
            mid[n++] = 0x01;
            bit_set(bits,
                    route(id, K_TERM, (uint8_t)sc[i].field, mid, n, nparts));
            continue;
        }
        /* A range: each bucket from its low end's to its high end's. */
        uint64_t lo = pk_keyenc_score(sc[i].lo) >> 52;
        uint64_t hi = pk_keyenc_score(sc[i].hi) >> 52;
        if (hi < lo)
            continue; /* empty */
        if (hi - lo >= RANGE_BUCKETS_MAX)
            return 1;
        for (uint64_t b = lo; b <= hi; b++) {
            mid[0] = (uint8_t)(b >> 4);
            mid[1] = (uint8_t)(b << 4);
            bit_set(bits,
                    route(id, K_NUM, (uint8_t)sc[i].field, mid, 2, nparts));
        }
    }
    return 0;
}

/* ---- the outbox ------------------------------------------------------- */

static void out_key(uint8_t *k, uint32_t part, uint64_t seq)
{
    pk_be32_put(k, part);
    k[4] = 0;
    k[5] = 0x03;
    k[6] = PK_TAG_FTOUT;
    pk_be64_put(k + 7, seq);
}

/* The first (last) record's sequence number in part's outbox. */
static int out_end(pk_txn *t, uint32_t part, int last, uint64_t *seq)
{
    uint8_t k0[OUT_LEN];
    MDB_cursor *c;
    MDB_val k, v;
    int mrc, rc = pk__cursor(t, t->s->data, &c);

    if (rc != 0)
        return rc;
    out_key(k0, part, last ? UINT64_MAX : 0);
    k = (MDB_val){OUT_LEN, k0};
    mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (last) /* the record before the (never written) greatest */
        mrc = mrc == 0              ? mdb_cursor_get(c, &k, &v, MDB_PREV)
              : mrc == MDB_NOTFOUND ? mdb_cursor_get(c, &k, &v, MDB_LAST)
                                    : mrc;
    if (mrc == MDB_NOTFOUND ||
        (mrc == 0 && (k.mv_size != OUT_LEN || memcmp(k.mv_data, k0, 7) != 0)))
        return PK_ENOTFOUND;
    if (mrc != 0)
        return pk__fail(t, pk__err(mrc));
    *seq = pk_be64_get((const uint8_t *)k.mv_data + 7);
    return 0;
}

/* Appends record b to part's outbox (inside an operation). */
static int out_add(pk_txn *t, uint32_t part, uint64_t now_ms, const buf *b)
{
    uint8_t k[OUT_LEN];
    uint64_t seq = now_ms << SEQ_SHIFT, last;
    int rc = out_end(t, part, 1, &last);

    if (rc != 0 && rc != PK_ENOTFOUND)
        return rc;
    if (rc == 0 && last >= seq)
        seq = last + 1;
    out_key(k, part, seq);
    return pk__rec_put(t, k, OUT_LEN, b->p, b->len);
}

/* A record's head: u64 id | u16 dlen | doc | u32 clen | copy. */
static void rec_head(buf *b, uint64_t id, const uint8_t *doc, size_t dlen,
                     const buf *copy)
{
    buf_u64(b, id);
    buf_u16(b, dlen);
    buf_put(b, doc, dlen);
    buf_u32(b, copy ? copy->len : 0);
    if (copy)
        buf_put(b, copy->p, copy->len);
}

static void rec_op(buf *b, int put, const pk__ent *e)
{
    uint8_t h[3] = {(uint8_t)put, e->kind, e->field};

    buf_put(b, h, 3);
    buf_u16(b, e->len);
    buf_put(b, e->mid, e->len);
}

int pk__ftglob_forget(pk_txn *t, uint32_t part, uint64_t id,
                      const pk__ents *old, const uint8_t *prefix, size_t plen,
                      uint64_t now_ms)
{
    buf b = {0};
    int rc;

    if (old->n == 0)
        return 0;
    rec_head(&b, id, prefix + 4, plen - 4, NULL);
    for (size_t i = 0; i < old->n; i++)
        rec_op(&b, 0, &old->v[i]);
    rc = b.err ? b.err : out_add(t, part, now_ms, &b);
    free(b.p);
    return rc;
}

int pk__ftglob_doc(pk_txn *t, uint32_t part, const pk_ftdef *d, const void *key,
                   size_t klen, const uint8_t *prefix, size_t plen,
                   uint64_t now_ms)
{
    uint8_t dk[PK_KEYENC_MAX], *at;
    pk__ents old = {0}, now = {0};
    buf copy = {0}, list = {0}, rec = {0};
    uint64_t digest = 0;
    int64_t when = -1;
    size_t dklen, head;
    MDB_val v;
    int rc = 0, doc = 0, had;

    /* With its expiry: a query skips a copy whose key has expired, even
     * before active expiry deletes the key and its entries. */
    buf_u32(&copy, klen);
    buf_put(&copy, key, klen);
    buf_u64(&copy, 0);
    head = copy.len;
    if (pk_ftdef_covers(d, key, klen)) {
        rc = pk_hmap_each(t, part, key, klen, now_ms, copy_add, &copy);
        if (rc == PK_STORE_WRONGTYPE)
            rc = 0;
        else if (rc == 0)
            doc = copy.len > head;
    }
    if (rc == 0 && doc && copy.p &&
        (rc = pk_key_expiretime(t, part, key, klen, now_ms, &when)) == 0 &&
        when > 0)
        pk_be64_put(copy.p + head - 8, (uint64_t)when);
    if (rc == 0 && (rc = copy.err) == 0 && doc &&
        (rc = copy_ents(d, (pk_slice){copy.p, copy.len}, &now)) == 0)
        digest = pk_hash_xxh3(copy.p, copy.len);
    if (rc != 0)
        goto done;
    dklen = pk__ftidx_doc_key(dk, part, d->id, prefix, plen);
    rc = pk__rec_get(t, dk, dklen, &v);
    if (rc != 0 && rc != PK_ENOTFOUND)
        goto done;
    had = rc == 0;
    rc = 0;
    if (had &&
        (v.mv_size < 8 || pk__ftidx_list_get((const uint8_t *)v.mv_data + 8,
                                             v.mv_size - 8, &old) != 0)) {
        rc = pk__fail(t, PK_ECORRUPT);
        goto done;
    }
    if (had == doc && (!doc || pk_be64_get(v.mv_data) == digest) &&
        old.n == now.n) {
        size_t i = 0;
        while (i < now.n && pk__ftidx_ent_cmp(&old.v[i], &now.v[i]) == 0)
            i++;
        if (i == now.n)
            goto done; /* nothing changed */
    }
    /* The record: a delete of each entry gone, a put of each there. */
    rec_head(&rec, d->id, prefix + 4, plen - 4, doc ? &copy : NULL);
    for (size_t i = 0, j = 0; i < old.n; i++) {
        while (j < now.n && pk__ftidx_ent_cmp(&now.v[j], &old.v[i]) < 0)
            j++;
        if (j == now.n || pk__ftidx_ent_cmp(&now.v[j], &old.v[i]) != 0)
            rec_op(&rec, 0, &old.v[i]);
    }
    for (size_t j = 0; j < now.n; j++)
        rec_op(&rec, 1, &now.v[j]);
    buf_u64(&list, digest);
    if ((at = buf_room(&list, pk__ftidx_list_len(&now))) != NULL)
        pk__ftidx_list_put(&now, at);
    if ((rc = rec.err ? rec.err : list.err) != 0)
        goto done;
    if ((rc = pk__op_begin(t, part, PK__OP_QUIET)) != 0)
        goto done;
    if (old.n + now.n > 0)
        rc = out_add(t, part, now_ms, &rec);
    if (rc == 0)
        rc = doc ? pk__rec_put(t, dk, dklen, list.p, list.len)
                 : pk__rec_del(t, dk, dklen, NULL);
    rc = pk__op_end(t, rc);
done:
    free(copy.p);
    free(list.p);
    free(rec.p);
    free(old.v);
    free(now.v);
    return rc;
}

int pk_ftout_bounds(pk_txn *t, uint32_t part, uint64_t *first, uint64_t *last)
{
    int rc = t->err ? t->err : pk__part_ready(t, part); /* not a read */

    if (rc == 0)
        rc = out_end(t, part, 0, first);
    if (rc == 0)
        rc = out_end(t, part, 1, last);
    return rc;
}

int pk_ftout_each(pk_txn *t, uint32_t part, size_t max_bytes, pk_ftout_cb cb,
                  void *ctx)
{
    uint8_t k0[OUT_LEN];
    MDB_cursor *c;
    MDB_val k, v;
    size_t seen = 0;
    int mrc, rc = t->err ? t->err : pk__part_ready(t, part);

    if (rc != 0)
        return rc;
    /* A cursor of its own: the callback may use the transaction's. */
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0)
        return pk__fail(t, pk__err(mrc));
    out_key(k0, part, 0);
    k = (MDB_val){OUT_LEN, k0};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
         mrc == 0 && seen < max_bytes && rc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (k.mv_size != OUT_LEN || memcmp(k.mv_data, k0, 7) != 0)
            break;
        seen += v.mv_size + 1;
        rc = cb(ctx, pk_be64_get((const uint8_t *)k.mv_data + 7),
                (pk_slice){v.mv_data, v.mv_size});
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND)
        rc = pk__fail(t, pk__err(mrc));
    return rc;
}

int pk_ftout_trim(pk_txn *t, uint32_t part, uint64_t upto)
{
    uint8_t k0[OUT_LEN];
    MDB_cursor *c;
    MDB_val k, v;
    int mrc, rc = pk__op_begin(t, part, PK__OP_QUIET);

    if (rc != 0)
        return rc;
    if ((rc = pk__cursor(t, t->s->data, &c)) != 0)
        return pk__op_end(t, rc);
    out_key(k0, part, 0);
    for (;;) {
        k = (MDB_val){OUT_LEN, k0};
        mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (mrc != 0 || k.mv_size != OUT_LEN || memcmp(k.mv_data, k0, 7) != 0 ||
            pk_be64_get((const uint8_t *)k.mv_data + 7) > upto)
            break;
        if ((rc = pk__rec_del_here(t, c)) != 0)
            break;
    }
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND)
        rc = pk__fail(t, pk__err(mrc));
    return pk__op_end(t, rc);
}

/* ---- the record's operations, shipped -------------------------------- */

int pk_ftout_ops(pk_slice rec, uint32_t nparts, pk_ftout_op_cb cb, void *ctx)
{
    rd r = {(const uint8_t *)rec.ptr, rec.len, 0};
    const uint8_t *doc, *copy;
    uint64_t id, dlen, clen;
    size_t ops;
    buf b = {0};
    int rc = 0;

    if (!rd_u(&r, 8, &id) || !(id & PK_FTIDX_GLOBAL) || !rd_u(&r, 2, &dlen) ||
        dlen > DOC_MAX || !rd_bytes(&r, dlen, &doc) || !rd_u(&r, 4, &clen) ||
        !rd_bytes(&r, clen, &copy))
        return PK_ECORRUPT;
    ops = r.at;
    /* Read whole first: a record that is not ships nothing. */
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        for (r.at = ops; rc == 0 && r.at < r.n;) {
            const uint8_t *h, *mid;
            uint64_t len;
            uint32_t vp;
            if (!rd_bytes(&r, 3, &h) || !rd_u(&r, 2, &len) || len > MID_MAX ||
                !rd_bytes(&r, len, &mid) || (h[1] != K_TERM && h[1] != K_NUM) ||
                (h[1] == K_NUM && len != 8)) {
                rc = PK_ECORRUPT;
                break;
            }
            if (pass == 0)
                continue;
            /* u32 vp | u64 id | u8 put | u8 kind | u8 field | u16 len |
             * mid | u16 dlen | doc | u32 clen | copy (a put's) */
            vp = route(id, h[1], h[2], mid, len, nparts);
            b.len = 0;
            buf_u32(&b, vp);
            buf_u64(&b, id);
            buf_put(&b, h, 3);
            buf_u16(&b, len);
            buf_put(&b, mid, len);
            buf_u16(&b, dlen);
            buf_put(&b, doc, dlen);
            buf_u32(&b, h[0] ? clen : 0);
            if (h[0])
                buf_put(&b, copy, clen);
            rc = b.err ? b.err : cb(ctx, vp, id, b.p, b.len);
        }
    free(b.p);
    return rc;
}

size_t pk_ftglob_op_parse(const uint8_t *p, size_t n, pk_ftglob_op *op)
{
    rd r = {p, n, 0};
    const uint8_t *h;
    uint64_t vp, len, dlen, clen;

    if (!rd_u(&r, 4, &vp) || !rd_u(&r, 8, &op->id) || !rd_bytes(&r, 3, &h) ||
        !rd_u(&r, 2, &len) || len > MID_MAX || !rd_bytes(&r, len, &op->mid) ||
        (h[1] != K_TERM && h[1] != K_NUM) || (h[1] == K_NUM && len != 8) ||
        !rd_u(&r, 2, &dlen) || dlen > DOC_MAX ||
        !rd_bytes(&r, dlen, &op->doc) || !rd_u(&r, 4, &clen) ||
        !rd_bytes(&r, clen, &op->copy) || !(op->id & PK_FTIDX_GLOBAL))
        return 0;
    op->vp = (uint32_t)vp;
    op->put = h[0];
    op->kind = h[1];
    op->field = h[2];
    op->len = len;
    op->dlen = dlen;
    op->clen = clen;
    return r.at;
}

int pk_ftglob_op_apply(pk_txn *t, const pk_ftglob_op *op)
{
    uint8_t k[PK_KEYENC_MAX];
    pk__ent e = {
        .kind = op->kind, .field = op->field, .len = (uint16_t)op->len};
    size_t n;
    int rc;

    memcpy(e.mid, op->mid, op->len);
    n = pk__ftidx_ent_key(k, op->vp, op->id, &e, op->doc, op->dlen);
    if ((rc = pk__op_begin(t, op->vp, PK__OP_QUIET)) != 0)
        return rc;
    rc = op->put ? pk__rec_put(t, k, n, op->copy, op->clen)
                 : pk__rec_del(t, k, n, NULL);
    return pk__op_end(t, rc == PK_ENOTFOUND ? 0 : rc);
}

/* ---- reading global entries --------------------------------------------- */

/* Whether entry e holds a hit of lookup sc. */
static int ent_hits(const pk__ent *e, const pk_ftq_scan *sc)
{
    uint8_t esc[MID_MAX];
    size_t n;

    if (e->field != sc->field)
        return 0;
    if (sc->kind == PK_FTQ_RANGE) {
        double x;
        if (e->kind != K_NUM)
            return 0;
        x = pk_keyenc_score_decode(pk_be64_get(e->mid));
        return (x > sc->lo || (!sc->lo_excl && x == sc->lo)) &&
               (x < sc->hi || (!sc->hi_excl && x == sc->hi));
    }
    if (e->kind != K_TERM)
        return 0;
    n = pk_keyenc_escape(sc->term, sc->len, esc, MID_MAX - 2);
    if (sc->kind == PK_FTQ_EXACT) {
        esc[n++] = 0;
        esc[n++] = 0x01;
        return e->len == n && memcmp(e->mid, esc, n) == 0;
    }
    return e->len >= n && memcmp(e->mid, esc, n) == 0;
}

/* Whether the hit of lookup i at entry (kind, field, mid) is the one
 * that reports the document: its first entry (in order) that a lookup
 * hits, of the first lookup that hits any -- so that a document with
 * several entries the lookups hit, in several partitions, comes once. */
static int owns(const pk__ents *e, const pk_ftq_scan *sc, int i,
                const pk__ent *hit)
{
    for (int j = 0; j <= i; j++)
        for (size_t k = 0; k < e->n; k++)
            if (ent_hits(&e->v[k], &sc[j]))
                return j == i && pk__ftidx_ent_cmp(&e->v[k], hit) == 0;
    return 0;
}

int pk_ftglob_scan(pk_txn *t, uint32_t part, const pk_ftdef *d,
                   const pk_ftq_scan *sc, int i, uint64_t now_ms,
                   pk_ftglob_cb cb, void *ctx)
{
    uint8_t lo[PK_KEYENC_MAX];
    size_t n = HEAD_LEN + 1, mlen;
    uint8_t kind = sc[i].kind == PK_FTQ_RANGE ? K_NUM : K_TERM;
    MDB_cursor *c;
    MDB_val k, v;
    int mrc, rc = pk__read_begin(t, part);

    if (rc != 0)
        return rc;
    if (sc[i].field >= PK_FT_FIELDS_MAX)
        return PK_EINVAL;
    pk__ftidx_head(lo, part, d->id, kind);
    lo[HEAD_LEN] = (uint8_t)sc[i].field;
    if (kind == K_NUM) {
        pk_be64_put(lo + n, pk_keyenc_score(sc[i].lo));
        mlen = n;
        n += 8;
    } else {
        n += pk_keyenc_escape(sc[i].term, sc[i].len, lo + n, MID_MAX - 2);
        if (sc[i].kind == PK_FTQ_EXACT) {
            lo[n++] = 0;
            lo[n++] = 0x01;
        }
        mlen = n;
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0)
        return pk__fail(t, pk__err(mrc)); /* its own, as pk_ftout_each's */
    k = (MDB_val){n, lo};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0 && rc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        const uint8_t *p = k.mv_data;
        pk__ent hit = {.kind = kind, .field = (uint8_t)sc[i].field};
        pk__ents e = {0};
        size_t at = HEAD_LEN + 1;
        pk_slice copy = {v.mv_data, v.mv_size}, key;
        uint64_t expiry;
        if (k.mv_size <= mlen || memcmp(p, lo, mlen) != 0)
            break;
        if (kind == K_NUM) {
            at += 8;
            if (k.mv_size <= at)
                break;
            double x = pk_keyenc_score_decode(pk_be64_get(p + HEAD_LEN + 1));
            if (x > sc[i].hi || (sc[i].hi_excl && x == sc[i].hi))
                break;
            if (sc[i].lo_excl && x == sc[i].lo)
                continue;
        } else { /* past the term's 00 01 */
            while (at + 1 < k.mv_size && !(p[at] == 0 && p[at + 1] == 0x01))
                at += p[at] == 0 ? 2 : 1;
            at += 2;
            if (at >= k.mv_size)
                break;
        }
        if (at - HEAD_LEN - 1 > MID_MAX) {
            rc = PK_ECORRUPT;
            break;
        }
        hit.len = (uint16_t)(at - HEAD_LEN - 1);
        memcpy(hit.mid, p + HEAD_LEN + 1, hit.len);
        /* The copy (with the document's key) is the value: one copy per
         * entry, so the read touches this partition only. */
        rc = pk_ftglob_copy_each(copy, &key, &expiry, NULL, NULL);
        if (rc == 0 && expiry && expiry <= now_ms)
            continue; /* expired: its deletes are on their way */
        if (rc == 0)
            rc = copy_ents(d, copy, &e);
        if (rc == 0 && owns(&e, sc, i, &hit))
            rc = cb(ctx, key, copy);
        free(e.v);
        if (rc == PK_ECORRUPT)
            rc = pk__fail(t, rc);
    }
    mdb_cursor_close(c);
    if (rc == PK_ECORRUPT)
        rc = pk__fail(t, rc);
    else if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND)
        rc = pk__fail(t, pk__err(mrc));
    return rc;
}

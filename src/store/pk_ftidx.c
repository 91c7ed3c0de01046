/*
 * pk_ftidx: local secondary index entries in a partition's system area
 * (layout in pk_ftidx.h).
 *
 * A document's entries are computed from the hash as it is (its indexed
 * fields read in one pass), sorted, and compared with the list its DOC
 * entry holds: only the difference is written, so an HSET of a field no
 * index covers -- or of a value that indexes the same -- costs two reads.
 */
#include "store/pk_ftidx.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_ftidx_int.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_store_int.h"

void pk__ftidx_head(uint8_t *k, uint32_t part, uint64_t id, uint8_t kind)
{
    pk_be32_put(k, part);
    k[4] = 0;
    k[5] = 0x03;
    k[6] = PK_TAG_FTIDX;
    pk_be64_put(k + AREA_LEN, id);
    k[AREA_LEN + 8] = kind;
}

static int ents_add(pk__ents *e, uint8_t kind, uint8_t field,
                    const uint8_t *mid, size_t len)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        pk__ent *v = realloc(e->v, cap * sizeof(*v));
        if (v == NULL)
            return PK_ENOMEM;
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n].kind = kind;
    e->v[e->n].field = field;
    e->v[e->n].len = (uint16_t)len;
    memcpy(e->v[e->n].mid, mid, len);
    e->n++;
    return 0;
}

size_t pk__ftidx_doc_key(uint8_t *dk, uint32_t part, uint64_t id,
                         const uint8_t *prefix, size_t plen)
{
    pk__ftidx_head(dk, part, id, K_DOC);
    memcpy(dk + HEAD_LEN, prefix + 4, plen - 4);
    return HEAD_LEN + plen - 4;
}

int pk__ftidx_ent_cmp(const void *a, const void *b)
{
    const pk__ent *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c;

    if (x->kind != y->kind)
        return x->kind - y->kind;
    if (x->field != y->field)
        return x->field - y->field;
    if ((c = memcmp(x->mid, y->mid, n)) != 0)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* Sorts e and drops repeats (a word twice in a text). */
static void ents_sort(pk__ents *e)
{
    size_t w = 0;

    if (e->n == 0)
        return;
    qsort(e->v, e->n, sizeof(*e->v), pk__ftidx_ent_cmp);
    for (size_t i = 1; i < e->n; i++)
        if (pk__ftidx_ent_cmp(&e->v[w], &e->v[i]) != 0)
            e->v[++w] = e->v[i];
    e->n = w + 1;
}

typedef struct term_ctx {
    pk__ents *e;
    uint8_t field;
} term_ctx;

static int add_term(void *ctx, const char *term, size_t len)
{
    term_ctx *tc = ctx;
    uint8_t mid[MID_MAX];
    size_t n = pk_keyenc_escape(term, len, mid, MID_MAX - 2);

    mid[n] = 0;
    mid[n + 1] = 0x01;
    return ents_add(tc->e, K_TERM, tc->field, mid, n + 2);
}

/* The entries of the document key in index d as t holds it (none when it
 * is no live hash that d covers).  *doc: 1 when it is a document. */
static int doc_ents(pk_txn *t, uint32_t part, const pk_ftdef *d,
                    const void *key, size_t klen, uint64_t now_ms, pk__ents *e,
                    int *doc)
{
    pk_slice names[PK_FT_FIELDS_MAX], vals[PK_FT_FIELDS_MAX];
    uint64_t len;
    int rc;

    *doc = 0;
    if (!pk_ftdef_covers(d, key, klen))
        return 0;
    for (uint32_t i = 0; i < d->nfields; i++)
        names[i] = (pk_slice){d->fields[i].name, strlen(d->fields[i].name)};
    rc = pk_hmap_mget(t, part, key, klen, d->nfields, names, now_ms, vals);
    if (rc == PK_STORE_WRONGTYPE)
        return 0;
    if (rc != 0)
        return rc;
    /* A field present says a hash; with none, ask whether it exists. */
    for (uint32_t i = 0; i < d->nfields && !*doc; i++)
        *doc = vals[i].ptr != NULL;
    if (!*doc) {
        if ((rc = pk_hmap_len(t, part, key, klen, now_ms, &len)) != 0)
            return rc;
        *doc = len > 0;
    }
    return pk__ftidx_ents_of(d, vals, e);
}

int pk__ftidx_ents_of(const pk_ftdef *d, const pk_slice *vals, pk__ents *e)
{
    char buf[PK_FT_TERM_MAX];
    int rc = 0;

    for (uint32_t i = 0; i < d->nfields && rc == 0; i++) {
        const pk_ftfield *f = &d->fields[i];
        term_ctx tc = {e, (uint8_t)i};
        uint8_t s8[8];
        double num;
        if (vals[i].ptr == NULL || f->noindex)
            continue;
        switch (f->type) {
        case PK_FT_TAG:
            rc = pk_ft_tag_terms(vals[i].ptr, vals[i].len, f->sep, f->casesens,
                                 buf, add_term, &tc);
            break;
        case PK_FT_TEXT:
            rc = pk_ft_text_terms(vals[i].ptr, vals[i].len, buf, add_term, &tc);
            break;
        default:
            if (pk_ft_number(vals[i].ptr, vals[i].len, &num)) {
                pk_be64_put(s8, pk_keyenc_score(num));
                rc = ents_add(e, K_NUM, (uint8_t)i, s8, 8);
            }
            break;
        }
    }
    ents_sort(e);
    return rc;
}

/* The list a DOC entry holds, encoded. */
size_t pk__ftidx_list_len(const pk__ents *e)
{
    size_t n = 0;

    for (size_t i = 0; i < e->n; i++)
        n += 4 + e->v[i].len;
    return n;
}

void pk__ftidx_list_put(const pk__ents *e, uint8_t *p)
{
    for (size_t i = 0; i < e->n; i++) {
        *p++ = e->v[i].kind;
        *p++ = e->v[i].field;
        *p++ = (uint8_t)(e->v[i].len >> 8);
        *p++ = (uint8_t)e->v[i].len;
        memcpy(p, e->v[i].mid, e->v[i].len);
        p += e->v[i].len;
    }
}

int pk__ftidx_list_get(const uint8_t *p, size_t n, pk__ents *e)
{
    size_t at = 0;
    int rc;

    while (at < n) {
        size_t len;
        if (n - at < 4 ||
            (len = (size_t)p[at + 2] << 8 | p[at + 3]) > MID_MAX ||
            n - at - 4 < len)
            return PK_ECORRUPT;
        if ((rc = ents_add(e, p[at], p[at + 1], p + at + 4, len)) != 0)
            return rc;
        at += 4 + len;
    }
    return 0;
}

/* The key of entry x of document doc (dlen bytes) in index id: its
 * length. */
size_t pk__ftidx_ent_key(uint8_t *k, uint32_t part, uint64_t id,
                         const pk__ent *x, const uint8_t *doc, size_t dlen)
{
    pk__ftidx_head(k, part, id, x->kind);
    k[HEAD_LEN] = x->field;
    memcpy(k + HEAD_LEN + 1, x->mid, x->len);
    memcpy(k + HEAD_LEN + 1 + x->len, doc, dlen);
    return HEAD_LEN + 1 + x->len + dlen;
}

/* Writes the difference between old and now (both sorted) for doc. */
static int apply(pk_txn *t, uint32_t part, uint64_t id, const pk__ents *old,
                 const pk__ents *now, const uint8_t *doc, size_t dlen,
                 pk_ftidx_term_fn fn, void *ctx)
{
    uint8_t k[PK_KEYENC_MAX];
    size_t i = 0, j = 0, n;
    int rc = 0;

    while (rc == 0 && (i < old->n || j < now->n)) {
        int c = i == old->n   ? 1
                : j == now->n ? -1
                              : pk__ftidx_ent_cmp(&old->v[i], &now->v[j]);
        if (c < 0) {
            n = pk__ftidx_ent_key(k, part, id, &old->v[i++], doc, dlen);
            rc = pk__rec_del(t, k, n, NULL);
        } else if (c > 0) {
            const pk__ent *e = &now->v[j++];
            n = pk__ftidx_ent_key(k, part, id, e, doc, dlen);
            rc = pk__rec_put(t, k, n, "", 0);
            if (fn && e->kind == K_TERM)
                fn(ctx, e->field, e->mid, e->len);
        } else {
            i++;
            j++;
        }
    }
    return rc;
}

int pk_ftidx_doc(pk_txn *t, uint32_t part, const pk_ftdef *d, const void *key,
                 size_t klen, uint64_t now_ms)
{
    return pk_ftidx_doc_terms(t, part, d, key, klen, now_ms, NULL, NULL);
}

int pk_ftidx_doc_terms(pk_txn *t, uint32_t part, const pk_ftdef *d,
                       const void *key, size_t klen, uint64_t now_ms,
                       pk_ftidx_term_fn fn, void *ctx)
{
    uint8_t dk[PK_KEYENC_MAX], prefix[PK_KEYENC_SHORT], *list = NULL;
    pk__ents old = {0}, now = {0};
    size_t plen, dklen, llen;
    MDB_val v;
    int rc, doc, had;

    if ((rc = pk_keyenc_prefix(part, key, klen, prefix, sizeof(prefix),
                               &plen)) != 0)
        goto done;
    if (d->id & PK_FTIDX_GLOBAL)
        return pk__ftglob_doc(t, part, d, key, klen, prefix, plen, now_ms);
    if ((rc = doc_ents(t, part, d, key, klen, now_ms, &now, &doc)) != 0)
        goto done;
    dklen = pk__ftidx_doc_key(dk, part, d->id, prefix, plen);
    rc = pk__rec_get(t, dk, dklen, &v);
    if (rc != 0 && rc != PK_ENOTFOUND)
        goto done;
    had = rc == 0;
    rc = 0;
    if (had && (rc = pk__ftidx_list_get(v.mv_data, v.mv_size, &old)) != 0) {
        rc = pk__fail(t, rc);
        goto done;
    }
    llen = pk__ftidx_list_len(&now);
    if (had == doc && old.n == now.n) { /* both sorted: entry by entry */
        size_t i = 0;
        while (i < now.n && pk__ftidx_ent_cmp(&old.v[i], &now.v[i]) == 0)
            i++;
        if (i == now.n)
            goto done; /* nothing changed */
    }
    if ((list = malloc(llen ? llen : 1)) == NULL) {
        rc = PK_ENOMEM;
        goto done;
    }
    pk__ftidx_list_put(&now, list);
    if ((rc = pk__op_begin(t, part, PK__OP_QUIET)) != 0)
        goto done;
    rc = apply(t, part, d->id, &old, &now, prefix + 4, plen - 4, fn, ctx);
    if (rc == 0)
        rc = doc ? pk__rec_put(t, dk, dklen, list, llen)
                 : pk__rec_del(t, dk, dklen, NULL);
    rc = pk__op_end(t, rc);
done:
    free(list);
    free(old.v);
    free(now.v);
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

/* Calls cb with the user key of document doc (dlen bytes, a data prefix
 * without its partition). */
static int emit(pk_txn *t, uint32_t part, const uint8_t *doc, size_t dlen,
                pk_ftidx_cb cb, void *ctx)
{
    uint8_t k[PK_KEYENC_SHORT + 1], user[PK_KEYENC_SHORT];
    pk_keyparts kp;
    pk_slice uk;
    MDB_val v;
    int rc;

    pk_be32_put(k, part);
    memcpy(k + 4, doc, dlen);
    k[4 + dlen] = PK_TAG_META;
    if (pk_keyenc_parse(k, 4 + dlen + 1, &kp) != 0 || kp.prefix_len != 4 + dlen)
        return pk__fail(t, PK_ECORRUPT);
    if (!kp.longkey)
        return cb(ctx, (pk_slice){
                           user, pk_keyenc_unescape(kp.esc, kp.esc_len, user)});
    /* A long key: its META record has it whole (none: it is gone, and
     * its entries with it before the transaction ends). */
    rc = pk__rec_get(t, k, 4 + dlen + 1, &v);
    if (rc == PK_ENOTFOUND)
        return 0;
    if (rc != 0)
        return rc;
    pk__meta_body(v.mv_data, v.mv_size, &uk);
    return uk.ptr ? cb(ctx, uk) : pk__fail(t, PK_ECORRUPT);
}

/* Walks the entries from lo (llen bytes) while they begin with its first
 * mlen bytes, and calls cb with the document of each: a DOC entry's
 * follows the head; a TERM's, its term's terminator; a NUM's, its score
 * (the walk ends past sc's upper bound). */
static int walk(pk_txn *t, uint32_t part, const uint8_t *lo, size_t llen,
                size_t mlen, uint8_t kind, const pk_ftq_scan *sc,
                pk_ftidx_cb cb, void *ctx)
{
    MDB_cursor *c;
    MDB_val k = {llen, (void *)lo}, v;
    int mrc, rc = pk__read_begin(t, part);

    if (rc != 0)
        return rc;
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0)
        return pk__fail(t, pk__err(mrc));
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        const uint8_t *p = k.mv_data;
        size_t n = k.mv_size, at = HEAD_LEN;
        if (n <= mlen || memcmp(p, lo, mlen) != 0)
            break;
        if (kind == K_NUM) {
            double x;
            at = HEAD_LEN + 1 + 8;
            if (n <= at)
                break;
            x = pk_keyenc_score_decode(pk_be64_get(p + HEAD_LEN + 1));
            if (x > sc->hi || (sc->hi_excl && x == sc->hi))
                break;
            if (sc->lo_excl && x == sc->lo)
                continue;
        } else if (kind == K_TERM) { /* past the term's 00 01 */
            at = HEAD_LEN + 1;
            while (at + 1 < n && !(p[at] == 0 && p[at + 1] == 0x01))
                at += p[at] == 0 ? 2 : 1;
            at += 2;
            if (at >= n)
                break;
        }
        if ((rc = emit(t, part, p + at, n - at, cb, ctx)) != 0)
            break;
    }
    mdb_cursor_close(c);
    if (rc == 0 && mrc != 0 && mrc != MDB_NOTFOUND)
        rc = pk__fail(t, pk__err(mrc));
    return rc;
}

int pk_ftidx_scan(pk_txn *t, uint32_t part, uint64_t id, const pk_ftq_scan *sc,
                  pk_ftidx_cb cb, void *ctx)
{
    uint8_t lo[PK_KEYENC_MAX];
    size_t n = HEAD_LEN + 1;

    if (sc->field >= PK_FT_FIELDS_MAX)
        return PK_EINVAL;
    pk__ftidx_head(lo, part, id, sc->kind == PK_FTQ_RANGE ? K_NUM : K_TERM);
    lo[HEAD_LEN] = (uint8_t)sc->field;
    if (sc->kind == PK_FTQ_RANGE) {
        pk_be64_put(lo + n, pk_keyenc_score(sc->lo));
        return walk(t, part, lo, n + 8, n, K_NUM, sc, cb, ctx);
    }
    n += pk_keyenc_escape(sc->term, sc->len, lo + n, MID_MAX - 2);
    if (sc->kind == PK_FTQ_EXACT) {
        lo[n++] = 0;
        lo[n++] = 0x01;
    }
    return walk(t, part, lo, n, n, K_TERM, sc, cb, ctx);
}

int pk_ftidx_docs(pk_txn *t, uint32_t part, uint64_t id, pk_ftidx_cb cb,
                  void *ctx)
{
    uint8_t lo[HEAD_LEN];

    pk__ftidx_head(lo, part, id, K_DOC);
    return walk(t, part, lo, HEAD_LEN, HEAD_LEN, K_DOC, NULL, cb, ctx);
}

int pk_ftidx_terms(pk_txn *t, uint32_t part, uint64_t id, pk_ftidx_term_fn fn,
                   void *ctx)
{
    uint8_t lo[HEAD_LEN];
    MDB_cursor *c;
    MDB_val k, v;
    const uint8_t *last = NULL;
    size_t last_len = 0;
    int mrc, rc = t->err ? t->err : pk__part_ready(t, part); /* not a read */

    if (rc != 0)
        return rc;
    pk__ftidx_head(lo, part, id, K_TERM);
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0)
        return pk__fail(t, pk__err(mrc));
    k = (MDB_val){HEAD_LEN, lo};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        const uint8_t *p = k.mv_data;
        size_t n = k.mv_size, at = HEAD_LEN + 1;
        if (n <= HEAD_LEN || memcmp(p, lo, HEAD_LEN) != 0)
            break;
        while (at + 1 < n && !(p[at] == 0 && p[at + 1] == 0x01))
            at += p[at] == 0 ? 2 : 1;
        at += 2; /* field | term | 00 01: once per term, not per document */
        if (at > n || at - HEAD_LEN - 1 > MID_MAX) {
            mdb_cursor_close(c);
            return pk__fail(t, PK_ECORRUPT); /* else a filter would lie */
        }
        if (last == NULL || at - HEAD_LEN != last_len ||
            memcmp(last, p + HEAD_LEN, last_len) != 0)
            fn(ctx, p[HEAD_LEN], p + HEAD_LEN + 1, at - HEAD_LEN - 1);
        last = p + HEAD_LEN; /* LMDB's memory: valid in t */
        last_len = at - HEAD_LEN;
    }
    mdb_cursor_close(c);
    return mrc == 0 || mrc == MDB_NOTFOUND ? 0 : pk__fail(t, pk__err(mrc));
}

int pk_ftidx_count(pk_txn *t, uint32_t part, uint64_t id, uint64_t *docs,
                   uint64_t *bytes)
{
    uint8_t lo[HEAD_LEN];
    MDB_cursor *c;
    MDB_val k, v;
    int mrc, rc = pk__read_begin(t, part);
    size_t skip = (id & PK_FTIDX_GLOBAL) ? 8 : 0; /* the copy's digest */

    *docs = *bytes = 0;
    if (rc != 0)
        return rc;
    /* The DOC entries only: each lists its document's other entries, whose
     * key lengths follow from it (a tenth of the reads of a walk over them
     * all, and none in other partitions for a global index). */
    pk__ftidx_head(lo, part, id, K_DOC);
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0)
        return pk__fail(t, pk__err(mrc));
    k = (MDB_val){HEAD_LEN, lo};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        const uint8_t *p = v.mv_data;
        size_t dlen = k.mv_size - HEAD_LEN;
        if (k.mv_size < HEAD_LEN || memcmp(k.mv_data, lo, HEAD_LEN) != 0)
            break;
        ++*docs;
        *bytes += k.mv_size + v.mv_size;
        for (size_t at = skip; at + 4 <= v.mv_size;) {
            size_t len = (size_t)p[at + 2] << 8 | p[at + 3];
            *bytes += HEAD_LEN + 1 + len + dlen;
            at += 4 + len;
        }
    }
    mdb_cursor_close(c);
    return mrc == 0 || mrc == MDB_NOTFOUND ? 0 : pk__fail(t, pk__err(mrc));
}

/* ---- build and drop ------------------------------------------------------ */

int pk_ftidx_built(pk_txn *t, uint32_t part, const pk_ftdef *d)
{
    uint8_t k[HEAD_LEN];
    MDB_val v;
    int rc = t->err ? t->err : pk__part_ready(t, part); /* not a read */

    if (rc != 0)
        return rc;
    pk__ftidx_head(k, part, d->id, K_BUILT);
    rc = pk__rec_get(t, k, HEAD_LEN, &v);
    if (rc == 0)
        return v.mv_size == 1 && *(const uint8_t *)v.mv_data >= d->nfields;
    return rc == PK_ENOTFOUND ? 0 : rc;
}

/* Indexes the key of META record k -> v in d, if it is a hash: 0 or an
 * error.  A long key is copied out first: indexing writes the map. */
static int build_key(pk_txn *t, uint32_t part, const pk_ftdef *d,
                     const pk_keyparts *kp, const MDB_val *v, uint64_t now_ms)
{
    uint8_t user[PK_KEYENC_SHORT], *own = NULL;
    pk_slice key;
    int rc;

    if (v->mv_size == 0 || ((const uint8_t *)v->mv_data)[0] != PK__T_HASH)
        return 0;
    if (kp->longkey) {
        pk__meta_body(v->mv_data, v->mv_size, &key);
        if (key.ptr == NULL)
            return pk__fail(t, PK_ECORRUPT);
        if ((own = malloc(key.len)) == NULL)
            return PK_ENOMEM;
        memcpy(own, key.ptr, key.len);
        key.ptr = own;
    } else {
        key = (pk_slice){user, pk_keyenc_unescape(kp->esc, kp->esc_len, user)};
    }
    rc = pk_ftdef_covers(d, key.ptr, key.len)
             ? pk_ftidx_doc(t, part, d, key.ptr, key.len, now_ms)
             : 0;
    free(own);
    return rc;
}

int pk_ftidx_build(pk_txn *t, uint32_t part, const pk_ftdef *d, uint8_t *cursor,
                   size_t *clen, uint32_t *budget, uint64_t now_ms, int *done)
{
    uint8_t seek[PK_KEYENC_MAX + 1];
    pk_keyparts kp;
    MDB_cursor *c;
    MDB_val k, v;
    int rc = 0, mrc;

    *done = 0;
    pk_be32_put(seek, part);
    memcpy(seek + 4, cursor, *clen);
    k = (MDB_val){4 + *clen, seek};
    if ((rc = pk__cursor(t, t->s->data, &c)) != 0)
        return rc;
    if (*budget > 0)
        --*budget;
    while (*budget > 0) {
        --*budget;
        mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (mrc == MDB_NOTFOUND ||
            (mrc == 0 && (k.mv_size < 4 || pk_be32_get(k.mv_data) != part))) {
            *done = 1;
            break;
        }
        if (mrc != 0)
            return pk__fail(t, pk__err(mrc));
        if (pk_keyenc_parse(k.mv_data, k.mv_size, &kp) != 0)
            return pk__fail(t, PK_ECORRUPT);
        /* Past this key (or the system area) next time -- once it is
         * indexed: a step that fails leaves the cursor on it. */
        memcpy(seek, k.mv_data, kp.prefix_len);
        seek[kp.prefix_len] = 0xFF;
        if (!kp.sys && kp.tag == PK_TAG_META &&
            (rc = build_key(t, part, d, &kp, &v, now_ms)) != 0)
            return rc;
        *clen = kp.prefix_len + 1 - 4;
        memcpy(cursor, seek + 4, *clen);
        k = (MDB_val){kp.prefix_len + 1, seek};
    }
    if (*done) {
        uint8_t bk[HEAD_LEN], nf = (uint8_t)d->nfields;
        pk__ftidx_head(bk, part, d->id, K_BUILT);
        if ((rc = pk__op_begin(t, part, PK__OP_QUIET)) == 0)
            rc = pk__op_end(t, pk__rec_put(t, bk, HEAD_LEN, &nf, 1));
    }
    return rc;
}

/* pk_ftidx_next_id without counting a read of the partition. */
static int next_id(pk_txn *t, uint32_t part, uint64_t after, uint64_t *id)
{
    uint8_t lo[HEAD_LEN];
    MDB_cursor *c;
    MDB_val k, v;
    int mrc, rc;

    if (after == UINT64_MAX)
        return PK_ENOTFOUND;
    pk__ftidx_head(lo, part, after + 1, 0);
    if ((rc = pk__cursor(t, t->s->data, &c)) != 0)
        return rc;
    k = (MDB_val){AREA_LEN + 8, lo};
    mrc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (mrc == MDB_NOTFOUND ||
        (mrc == 0 && (k.mv_size < HEAD_LEN || memcmp(k.mv_data, lo, AREA_LEN))))
        return PK_ENOTFOUND;
    if (mrc != 0)
        return pk__fail(t, pk__err(mrc));
    *id = pk_be64_get((const uint8_t *)k.mv_data + AREA_LEN);
    return 0;
}

int pk_ftidx_next_id(pk_txn *t, uint32_t part, uint64_t after, uint64_t *id)
{
    /* Housekeeping: not counted as a read of the partition (its load
     * decides splits and merges). */
    int rc = t->err ? t->err : pk__part_ready(t, part);

    return rc ? rc : next_id(t, part, after, id);
}

int pk__ftidx_forget(pk_txn *t, const uint8_t *prefix, size_t plen,
                     uint64_t now_ms)
{
    uint32_t part = pk_be32_get(prefix);
    uint8_t dk[PK_KEYENC_MAX], k[PK_KEYENC_MAX];
    uint64_t id = 0;
    int rc;

    while ((rc = next_id(t, part, id, &id)) == 0) {
        pk__ents old = {0};
        MDB_val v;
        size_t dklen = pk__ftidx_doc_key(dk, part, id, prefix, plen);
        rc = pk__rec_get(t, dk, dklen, &v);
        if (rc == PK_ENOTFOUND)
            continue;
        /* A global index's DOC entry begins with its copy's digest. */
        if (rc == 0 && (id & PK_FTIDX_GLOBAL) && v.mv_size < 8)
            rc = pk__fail(t, PK_ECORRUPT);
        else if (rc == 0 && (id & PK_FTIDX_GLOBAL))
            rc = pk__ftidx_list_get((const uint8_t *)v.mv_data + 8,
                                    v.mv_size - 8, &old);
        else if (rc == 0)
            rc = pk__ftidx_list_get(v.mv_data, v.mv_size, &old);
        if (rc == PK_ECORRUPT)
            rc = pk__fail(t, rc);
        if (rc == 0 && (id & PK_FTIDX_GLOBAL))
            rc = pk__ftglob_forget(t, part, id, &old, prefix, plen, now_ms);
        for (size_t i = 0; rc == 0 && !(id & PK_FTIDX_GLOBAL) && i < old.n; i++)
            rc = pk__rec_del(
                t, k,
                pk__ftidx_ent_key(k, part, id, &old.v[i], prefix + 4, plen - 4),
                NULL);
        free(old.v);
        if (rc == 0)
            rc = pk__rec_del(t, dk, dklen, NULL);
        if (rc != 0)
            return rc;
    }
    return rc == PK_ENOTFOUND ? 0 : rc;
}

int pk_ftidx_drop(pk_txn *t, uint32_t part, uint64_t id)
{
    uint8_t lo[HEAD_LEN];
    int rc;

    pk__ftidx_head(lo, part, id,
                   0); /* the kind byte is not part of the prefix */
    if ((rc = pk__op_begin(t, part, PK__OP_QUIET)) != 0)
        return rc;
    return pk__op_end(t, pk__rec_delprefix(t, lo, AREA_LEN + 8, 0, NULL));
}

/*
 * pk_store_range: PK.RANGE's walk over the META records of one partition.
 *
 * Seeking to a bound's escaped bytes finds its place among the keys,
 * because short prefixes keep the order of user keys (pk_keyenc.h).  Long
 * keys almost do: a long key L sorts after every prefix of its head and
 * before every key extending the head, so L and a key K that also starts
 * with L's head may come out of byte order.  Every such pair shares the
 * first ZONE_LEN bytes of its prefixes (the partition and CUT = 217
 * escaped bytes, which every head holds), and every other pair is in
 * order.  So the walk takes a key whose prefix is longer than ZONE_LEN as
 * a member of its zone -- the contiguous run of prefixes sharing those
 * bytes -- reads the whole zone, keeps its first limit + 1 members in the
 * range by full key (a long key's META record holds it) in a bounded
 * heap, and reports them sorted.  Any other key is reported as the walk
 * meets it:
 *
 *   part | esc(key) | 00 01            prefix <= 221 bytes: on its own
 *   part | 217 escaped bytes | ...     longer: zone of those 221 bytes
 *
 * A bound seeks at part | its escaped bytes cut to CUT (a key >= the bound
 * is at or after that point: a head holds at least CUT escaped bytes); in
 * reverse the walk starts past every key beginning with those bytes.  The
 * walk ends at the first key beyond the far bound that does not begin with
 * the far bound's cut bytes: every later key is then beyond it too.  Keys
 * below the near bound met on the way (sharing its cut bytes) are skipped.
 * A zone costs a read of all its members on every page that meets it:
 * keys sharing their first ~108 to 217 bytes with a long key are rare.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_range.h"

#define CUT (PK_KEYENC_HEAD - 1) /* escaped bytes every long head holds */
#define ZONE_LEN (4 + CUT)

/* A key met by the walk; key and val borrow the map or own. */
typedef struct rkey {
    pk_slice key;
    pk_slice val;
    uint8_t type;
    uint8_t *own; /* owned copy of a short key's bytes, or NULL */
} rkey;

typedef struct rwalk {
    pk_txn *t;
    MDB_cursor *c;
    uint32_t part;
    const pk_zlex *lo, *hi;
    int rev;
    size_t left; /* keys still to report */
    uint64_t now;
    pk_range_cb cb;
    void *ctx;
    int more, done;
    size_t far_cut; /* user bytes of the far bound kept by the cut */
    uint8_t seek[PK_KEYENC_SHORT + 2];
    uint8_t user[PK_KEYENC_SHORT]; /* a short key, unescaped */
    /* A zone's best members so far: a max-heap by walk order. */
    rkey *heap; /* owned, cap entries */
    size_t n, cap;
} rwalk;

/* User bytes of b whose escaped form fits CUT bytes. */
static size_t cut_len(const uint8_t *b, size_t len)
{
    size_t i, e = 0;

    for (i = 0; i < len; i++) {
        e += b[i] == 0 ? 2 : 1;
        if (e > CUT) {
            break;
        }
    }
    return i;
}

/* Writes part | the bound's escaped cut bytes to buf; returns the length. */
static size_t seek_bound(uint32_t part, const pk_zlex *b, uint8_t *buf)
{
    const uint8_t *p = b->ptr;
    size_t n = cut_len(p, b->len), o = 4;

    pk_be32_put(buf, part);
    for (size_t i = 0; i < n; i++) {
        buf[o++] = p[i];
        if (p[i] == 0) {
            buf[o++] = 0xFF;
        }
    }
    return o;
}

static int sl_cmp(pk_slice a, const void *b, size_t blen)
{
    size_t n = a.len < blen ? a.len : blen;
    int c = n ? memcmp(a.ptr, b, n) : 0;

    return c ? c : (a.len > blen) - (a.len < blen);
}

static int in_lo(const rwalk *w, pk_slice k)
{
    const pk_zlex *b = w->lo;

    return b->kind == PK_ZLEX_MIN ||
           (b->kind != PK_ZLEX_MAX &&
            sl_cmp(k, b->ptr, b->len) >= (b->kind == PK_ZLEX_EXCL ? 1 : 0));
}

static int in_hi(const rwalk *w, pk_slice k)
{
    const pk_zlex *b = w->hi;

    return b->kind == PK_ZLEX_MAX ||
           (b->kind != PK_ZLEX_MIN &&
            sl_cmp(k, b->ptr, b->len) <= (b->kind == PK_ZLEX_EXCL ? -1 : 0));
}

/* Whether k, met by the walk, is beyond the far bound and so is every
 * key after it (see the file comment). */
static int past_far(const rwalk *w, pk_slice k)
{
    const pk_zlex *b = w->rev ? w->lo : w->hi;

    if (w->rev ? in_lo(w, k) : in_hi(w, k)) {
        return 0;
    }
    return k.len < w->far_cut || memcmp(k.ptr, b->ptr, w->far_cut) != 0;
}

/* The walk order: ascending, or descending in reverse. */
static int walk_cmp(const rwalk *w, const rkey *a, const rkey *b)
{
    int c = sl_cmp(a->key, b->key.ptr, b->key.len);

    return w->rev ? -c : c;
}

/*
 * Takes the META record (kp, v) apart into *r (key in w->user for a short
 * key) and *live.  0 or PK_ECORRUPT.
 */
static int decode(rwalk *w, const pk_keyparts *kp, const MDB_val *v, rkey *r,
                  int *live)
{
    uint64_t exp, cnt;
    pk_slice full;
    size_t off;

    if (pk__meta_parse(v->mv_data, v->mv_size, &r->type, &exp, &cnt) != 0) {
        return PK_ECORRUPT;
    }
    off = pk__meta_body(v->mv_data, v->mv_size, &full);
    if (kp->longkey) {
        if (full.ptr == NULL) {
            return PK_ECORRUPT;
        }
        r->key = full;
    } else {
        r->key = (pk_slice){w->user,
                            pk_keyenc_unescape(kp->esc, kp->esc_len, w->user)};
    }
    r->val =
        r->type == PK__T_STRING
            ? (pk_slice){(const uint8_t *)v->mv_data + off, v->mv_size - off}
            : (pk_slice){NULL, 0};
    r->own = NULL;
    *live = exp == 0 || exp > w->now;
    return 0;
}

/* Reports a key met on its own. */
static int single(rwalk *w, const pk_keyparts *kp, const MDB_val *v)
{
    rkey r;
    int live, rc = decode(w, kp, v, &r, &live);

    if (rc != 0) {
        return rc;
    }
    if (past_far(w, r.key)) {
        w->done = 1;
        return 0;
    }
    if (!live || !in_lo(w, r.key) || !in_hi(w, r.key)) {
        return 0;
    }
    if (w->left == 0) {
        w->more = w->done = 1;
        return 0;
    }
    w->left--;
    return w->cb(w->ctx, r.key, (pk_type)r.type, r.val);
}

static void sift_down(rwalk *w, size_t i, size_t n)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && walk_cmp(w, &w->heap[l], &w->heap[m]) > 0) {
            m = l;
        }
        if (l + 1 < n && walk_cmp(w, &w->heap[l + 1], &w->heap[m]) > 0) {
            m = l + 1;
        }
        if (m == i) {
            return;
        }
        rkey tmp = w->heap[i];
        w->heap[i] = w->heap[m];
        w->heap[m] = tmp;
        i = m;
    }
}

/* Keeps r among the zone's first left + 1 members in walk order. */
static int offer(rwalk *w, rkey *r)
{
    size_t i;

    if (w->n > w->left && walk_cmp(w, r, &w->heap[0]) >= 0) {
        return 0;
    }
    if (r->key.ptr == w->user) {
        if ((r->own = malloc(r->key.len ? r->key.len : 1)) == NULL) {
            return PK_ENOMEM;
        }
        memcpy(r->own, w->user, r->key.len);
        r->key.ptr = r->own;
    }
    if (w->n > w->left) {
        free(w->heap[0].own);
        w->heap[0] = *r;
        sift_down(w, 0, w->n);
        return 0;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        rkey *h = realloc(w->heap, cap * sizeof(*h));
        if (h == NULL) {
            free(r->own);
            return PK_ENOMEM;
        }
        w->heap = h;
        w->cap = cap;
    }
    /* Sift up. */
    for (i = w->n++; i > 0 && walk_cmp(w, r, &w->heap[(i - 1) / 2]) > 0;
         i = (i - 1) / 2) {
        w->heap[i] = w->heap[(i - 1) / 2];
    }
    w->heap[i] = *r;
    return 0;
}

/* Sorts the zone's members kept, reports them and empties the heap. */
static int flush(rwalk *w)
{
    int rc = 0;

    for (size_t end = w->n; end > 1; end--) {
        rkey tmp = w->heap[0];
        w->heap[0] = w->heap[end - 1];
        w->heap[end - 1] = tmp;
        sift_down(w, 0, end - 1);
    }
    for (size_t i = 0; i < w->n && rc == 0; i++) {
        if (w->left == 0) {
            w->more = w->done = 1;
            break;
        }
        w->left--;
        rc = w->cb(w->ctx, w->heap[i].key, (pk_type)w->heap[i].type,
                   w->heap[i].val);
    }
    for (size_t i = 0; i < w->n; i++) {
        free(w->heap[i].own);
    }
    w->n = 0;
    return rc;
}

/*
 * Reads the zone whose prefixes begin with z (ZONE_LEN bytes) and reports
 * its members in the range.  Leaves the cursor on the first record after
 * the zone, *mrc its LMDB status.
 */
static int zone(rwalk *w, const uint8_t *z, MDB_val *k, MDB_val *v, int *mrc)
{
    pk_keyparts kp;
    rkey r;
    int rc = 0, live, first = 1;

    memcpy(w->seek, z, ZONE_LEN);
    *k = (MDB_val){ZONE_LEN, w->seek};
    *mrc = mdb_cursor_get(w->c, k, v, MDB_SET_RANGE);
    while (*mrc == 0 && k->mv_size > ZONE_LEN &&
           memcmp(k->mv_data, z, ZONE_LEN) == 0) {
        if (pk_keyenc_parse(k->mv_data, k->mv_size, &kp) != 0) {
            rc = PK_ECORRUPT;
            break;
        }
        if (kp.tag == PK_TAG_META) {
            if ((rc = decode(w, &kp, v, &r, &live)) != 0) {
                break;
            }
            /* One member beyond the far bound's cut puts all of them
             * beyond it (they share those bytes). */
            if (first && past_far(w, r.key)) {
                w->done = 1;
                break;
            }
            first = 0;
            if (live && in_lo(w, r.key) && in_hi(w, r.key) &&
                (rc = offer(w, &r)) != 0) {
                break;
            }
        }
        memcpy(w->seek, k->mv_data, kp.prefix_len);
        w->seek[kp.prefix_len] = 0xFF;
        *k = (MDB_val){kp.prefix_len + 1, w->seek};
        *mrc = mdb_cursor_get(w->c, k, v, MDB_SET_RANGE);
    }
    if (rc == 0) {
        rc = flush(w);
    } else {
        for (size_t i = 0; i < w->n; i++) {
            free(w->heap[i].own);
        }
        w->n = 0;
    }
    return rc;
}

/* Takes apart the record k the walk met: 1 for a record of the walk's
 * partition, 0 past it, or PK_ECORRUPT. */
static int key_at(const rwalk *w, const MDB_val *k, pk_keyparts *kp)
{
    if (pk_keyenc_parse(k->mv_data, k->mv_size, kp) != 0) {
        return PK_ECORRUPT;
    }
    return kp->part == w->part;
}

static int walk_fwd(rwalk *w, int *mrc)
{
    uint8_t z[ZONE_LEN];
    pk_keyparts kp;
    MDB_val k, v;
    size_t n = 4;
    int rc = 0;

    pk_be32_put(w->seek, w->part);
    if (w->lo->kind != PK_ZLEX_MIN) {
        n = seek_bound(w->part, w->lo, w->seek);
    }
    k = (MDB_val){n, w->seek};
    *mrc = mdb_cursor_get(w->c, &k, &v, MDB_SET_RANGE);
    while (*mrc == 0 && !w->done && (rc = key_at(w, &k, &kp)) == 1) {
        if (kp.prefix_len > ZONE_LEN) {
            memcpy(z, k.mv_data, ZONE_LEN);
            if ((rc = zone(w, z, &k, &v, mrc)) != 0) {
                return rc;
            }
            continue;
        }
        if (kp.tag == PK_TAG_META && (rc = single(w, &kp, &v)) != 0) {
            return rc;
        }
        memcpy(w->seek, k.mv_data, kp.prefix_len);
        w->seek[kp.prefix_len] = 0xFF;
        k = (MDB_val){kp.prefix_len + 1, w->seek};
        *mrc = mdb_cursor_get(w->c, &k, &v, MDB_SET_RANGE);
    }
    return rc < 0 ? rc : 0;
}

/* Puts the cursor on the last record before the first one >= k. */
static int before(MDB_cursor *c, MDB_val *k, MDB_val *v)
{
    int mrc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);

    if (mrc == MDB_NOTFOUND) {
        return mdb_cursor_get(c, k, v, MDB_LAST);
    }
    return mrc == 0 ? mdb_cursor_get(c, k, v, MDB_PREV) : mrc;
}

static int walk_rev(rwalk *w, int *mrc)
{
    uint8_t z[ZONE_LEN];
    pk_keyparts kp;
    MDB_val k, v;
    size_t n;
    int rc = 0;

    if (w->hi->kind == PK_ZLEX_MAX) {
        pk_be32_put(w->seek, w->part + 1);
        k = (MDB_val){4, w->seek};
        *mrc = w->part == UINT32_MAX ? mdb_cursor_get(w->c, &k, &v, MDB_LAST)
                                     : before(w->c, &k, &v);
    } else {
        /* Past every prefix beginning with the cut bytes: each has a byte
         * below FF within PK_KEYENC_SHORT + 1 bytes. */
        n = seek_bound(w->part, w->hi, w->seek);
        memset(w->seek + n, 0xFF, PK_KEYENC_SHORT + 1 - n);
        k = (MDB_val){PK_KEYENC_SHORT + 1, w->seek};
        *mrc = before(w->c, &k, &v);
    }
    while (*mrc == 0 && !w->done && (rc = key_at(w, &k, &kp)) == 1) {
        if (kp.prefix_len > ZONE_LEN) {
            memcpy(z, k.mv_data, ZONE_LEN);
            if ((rc = zone(w, z, &k, &v, mrc)) != 0) {
                return rc;
            }
            if (*mrc != 0 && *mrc != MDB_NOTFOUND) {
                return 0;
            }
            memcpy(w->seek, z, ZONE_LEN);
            k = (MDB_val){ZONE_LEN, w->seek};
        } else if (kp.sys) { /* no key: on to the records before it */
            memcpy(w->seek, k.mv_data, PK_KEYENC_SYS_LEN);
            k = (MDB_val){PK_KEYENC_SYS_LEN, w->seek};
        } else {
            /* On the key's last record: its META is its first. */
            memcpy(w->seek, k.mv_data, kp.prefix_len);
            w->seek[kp.prefix_len] = PK_TAG_META;
            k = (MDB_val){kp.prefix_len + 1, w->seek};
            *mrc = mdb_cursor_get(w->c, &k, &v, MDB_SET_KEY);
            if (*mrc == MDB_NOTFOUND) {
                return PK_ECORRUPT;
            }
            if (*mrc != 0) {
                return 0;
            }
            if ((rc = single(w, &kp, &v)) != 0) {
                return rc;
            }
            if (!w->done) {
                *mrc = mdb_cursor_get(w->c, &k, &v, MDB_PREV);
            }
            continue;
        }
        if (!w->done) {
            *mrc = before(w->c, &k, &v);
        }
    }
    return rc < 0 ? rc : 0;
}

int pk_store_range(pk_txn *t, uint32_t part, const pk_zlex *lo,
                   const pk_zlex *hi, int rev, size_t limit, uint64_t now_ms,
                   pk_range_cb cb, void *ctx, int *more)
{
    rwalk w = {0};
    int rc, mrc = MDB_NOTFOUND, c;

    if (limit == 0) {
        return PK_EINVAL;
    }
    if ((rc = pk__read_begin(t, part)) != 0) {
        return rc;
    }
    if (lo->kind == PK_ZLEX_MAX || hi->kind == PK_ZLEX_MIN) {
        *more = 0;
        return 0;
    }
    if (lo->kind <= PK_ZLEX_EXCL && hi->kind <= PK_ZLEX_EXCL) {
        c = sl_cmp((pk_slice){lo->ptr, lo->len}, hi->ptr, hi->len);
        if (c > 0 || (c == 0 && (lo->kind | hi->kind) != PK_ZLEX_INCL)) {
            *more = 0;
            return 0;
        }
    }
    w = (rwalk){.t = t,
                .part = part,
                .lo = lo,
                .hi = hi,
                .rev = rev,
                .left = limit,
                .now = now_ms,
                .cb = cb,
                .ctx = ctx};
    {
        const pk_zlex *far = rev ? lo : hi;
        w.far_cut = far->kind <= PK_ZLEX_EXCL ? cut_len(far->ptr, far->len) : 0;
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &w.c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    rc = rev ? walk_rev(&w, &mrc) : walk_fwd(&w, &mrc);
    mdb_cursor_close(w.c);
    free(w.heap);
    if (rc != 0) {
        return rc;
    }
    if (mrc != 0 && mrc != MDB_NOTFOUND) {
        return pk__fail(t, pk__err(mrc));
    }
    *more = w.more;
    return 0;
}

/*
 * pk_store_snap: partition snapshot streams (format in pk_store_snap.h).
 *
 * The exporter produces one item at a time -- header, a record, or the end
 * -- as a small owned head (at most 1 + 2 + 507 + 4 bytes) plus, for a
 * record, its value borrowed from the map, and copies both out as the
 * caller asks; the CRC is updated when an item is produced.
 *
 * The importer treats its input as hostile: it buffers only bytes that
 * have arrived (never a length read from the stream), checks every length
 * against its bound before waiting for more, requires keys in strictly
 * increasing order, and validates each record with the record layer's
 * rules before writing it through the record layer, so counters and
 * expiry index come out as on the source.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_snap.h"

#define SNAP_MAGIC "PKSN"
/* 2: long keys under a digest prefix (pk_keyenc.h, store format 3). */
#define SNAP_VERSION 2
#define SNAP_HDR_LEN 20
#define SNAP_END_LEN 13
#define SNAP_REC 0x01
#define SNAP_END 0xFF
#define SNAP_KEY_MAX (PK_KEYENC_MAX - 4)
#define SNAP_VAL_MAX PK__META_MAX /* the longest data value */
#define SNAP_CHUNK (64u << 10)

static_assert(SNAP_HDR_LEN == 4 + 2 + 2 + 4 + 8, "header layout");
static_assert(SNAP_END_LEN == 1 + 8 + 4, "end layout");
static_assert(SNAP_KEY_MAX <= UINT16_MAX, "klen fits in u16");

static void crc_init(uint32_t tab[256])
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int j = 0; j < 8; j++) {
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        }
        tab[i] = c;
    }
}

static uint32_t crc_update(const uint32_t tab[256], uint32_t crc,
                           const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n-- > 0) {
        crc = tab[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    }
    return ~crc;
}

struct pk_export {
    pk_txn *t; /* borrowed; outlives the exporter */
    MDB_cursor *c;
    uint32_t part;
    int state; /* 0 header next, 1 records, 2 end produced */
    int pos;   /* cursor: 0 on the next record, 1 on the last sent, 2 end */
    uint64_t seq, nrec;
    uint32_t crc;
    uint8_t head[1 + 2 + SNAP_KEY_MAX + 4];
    size_t hlen, hoff;
    const uint8_t *val; /* borrowed from the map */
    size_t vlen, voff;
    uint32_t tab[256];
};

int pk_export_new(pk_txn *t, uint32_t part, pk_export **out)
{
    pk__stat st;
    pk_export *e;
    int rc = t->err;

    rc = rc ? rc : pk__part_ready(t, part);
    rc = rc ? rc : pk__stat_load(t, part, &st);
    if (rc != 0) {
        return rc;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return PK_ENOMEM;
    }
    if ((rc = mdb_cursor_open(t->txn, t->s->data, &e->c)) != 0) {
        free(e);
        return pk__fail(t, pk__err(rc));
    }
    e->t = t;
    e->part = part;
    e->seq = st.log_last;
    crc_init(e->tab);
    *out = e;
    return 0;
}

void pk_export_free(pk_export *e)
{
    if (e == NULL) {
        return;
    }
    mdb_cursor_close(e->c);
    free(e);
}

/* Produces the next item into head (and val); state advances. */
static int export_item(pk_export *e)
{
    uint8_t kb[4];
    MDB_val k = {4, kb}, v;
    uint8_t *h = e->head;
    int rc;

    e->hoff = e->voff = 0;
    e->vlen = 0;
    if (e->state == 0) {
        memcpy(h, SNAP_MAGIC, 4);
        h[4] = 0;
        h[5] = SNAP_VERSION;
        h[6] = h[7] = 0;
        pk_be32_put(h + 8, e->part);
        pk_be64_put(h + 12, e->seq);
        e->hlen = SNAP_HDR_LEN;
        e->state = 1;
        e->crc = crc_update(e->tab, 0, h, e->hlen);
        pk_be32_put(kb, e->part);
        rc = mdb_cursor_get(e->c, &k, &v, MDB_SET_RANGE);
        e->pos = rc == 0 ? 0 : 2;
        return rc == 0 || rc == MDB_NOTFOUND ? 0 : pk__err(rc);
    }
    rc = e->pos == 2   ? MDB_NOTFOUND
         : e->pos == 0 ? mdb_cursor_get(e->c, &k, &v, MDB_GET_CURRENT)
                       : mdb_cursor_get(e->c, &k, &v, MDB_NEXT);
    e->pos = 1;
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return pk__err(rc);
    }
    if (rc != 0 || k.mv_size <= 4 || k.mv_size > PK_KEYENC_MAX ||
        pk_be32_get(k.mv_data) != e->part) {
        h[0] = SNAP_END;
        pk_be64_put(h + 1, e->nrec);
        e->crc = crc_update(e->tab, e->crc, h, 9);
        pk_be32_put(h + 9, e->crc);
        e->hlen = SNAP_END_LEN;
        e->state = 2;
        return 0;
    }
    h[0] = SNAP_REC;
    h[1] = (uint8_t)((k.mv_size - 4) >> 8);
    h[2] = (uint8_t)(k.mv_size - 4);
    memcpy(h + 3, (uint8_t *)k.mv_data + 4, k.mv_size - 4);
    pk_be32_put(h + 3 + k.mv_size - 4, (uint32_t)v.mv_size);
    e->hlen = 3 + k.mv_size - 4 + 4;
    e->val = v.mv_data;
    e->vlen = v.mv_size;
    e->crc = crc_update(e->tab, e->crc, h, e->hlen);
    e->crc = crc_update(e->tab, e->crc, e->val, e->vlen);
    e->nrec++;
    return 0;
}

int pk_export_read(pk_export *e, void *buf, size_t cap, size_t *n)
{
    uint8_t *out = buf;
    size_t done = 0, m;
    int rc;

    if (cap == 0) {
        return PK_EINVAL;
    }
    while (done < cap) {
        if (e->hoff < e->hlen) {
            m = e->hlen - e->hoff < cap - done ? e->hlen - e->hoff : cap - done;
            memcpy(out + done, e->head + e->hoff, m);
            e->hoff += m;
            done += m;
        } else if (e->voff < e->vlen) {
            m = e->vlen - e->voff < cap - done ? e->vlen - e->voff : cap - done;
            memcpy(out + done, e->val + e->voff, m);
            e->voff += m;
            done += m;
        } else if (e->state == 2) {
            break;
        } else if ((rc = export_item(e)) != 0) {
            return rc;
        }
    }
    *n = done;
    return 0;
}

int pk_store_part_export(pk_txn *t, uint32_t part, pk_export_cb cb, void *ctx)
{
    pk_export *e = NULL;
    uint8_t *buf = malloc(SNAP_CHUNK);
    size_t n = 0;
    int rc = buf ? pk_export_new(t, part, &e) : PK_ENOMEM;

    while (rc == 0 && (rc = pk_export_read(e, buf, SNAP_CHUNK, &n)) == 0 &&
           n > 0) {
        rc = cb(ctx, buf, n);
    }
    pk_export_free(e);
    free(buf);
    return rc;
}

struct pk_import {
    uint32_t part;
    int state; /* 0 header next, 1 records, 2 ended, -1 failed */
    uint64_t nrec;
    uint32_t crc;
    pk__buf in;                  /* bytes received, not yet consumed */
    uint8_t last[PK_KEYENC_MAX]; /* previous record's key (with part) */
    size_t last_len;
    uint32_t tab[256];
};

int pk_import_new(uint32_t part, pk_import **out)
{
    pk_import *im = calloc(1, sizeof(*im));

    if (im == NULL) {
        return PK_ENOMEM;
    }
    im->part = part;
    crc_init(im->tab);
    *out = im;
    return 0;
}

void pk_import_free(pk_import *im)
{
    if (im == NULL) {
        return;
    }
    free(im->in.p);
    free(im);
}

static int import_header(pk_import *im, pk_txn *t, const uint8_t *p)
{
    if (memcmp(p, SNAP_MAGIC, 4) != 0 || p[4] != 0 || p[5] != SNAP_VERSION ||
        p[6] != 0 || p[7] != 0 || pk_be32_get(p + 8) != im->part) {
        return PK_ECORRUPT;
    }
    if ((t->st.keys | t->st.bytes | t->st.log_last | t->st.log_trim |
         t->st.log_pos) != 0) {
        return PK_EEXIST;
    }
    t->st.log_last = t->st.log_trim = pk_be64_get(p + 12);
    t->st_dirty = 1;
    im->crc = crc_update(im->tab, 0, p, SNAP_HDR_LEN);
    im->state = 1;
    return 0;
}

/*
 * Consumes one record at p (avail bytes) if complete: *used gets its size,
 * or 0 when more bytes are needed.
 */
static int import_record(pk_import *im, pk_txn *t, const uint8_t *p,
                         size_t avail, size_t *used)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t klen, vlen, n, kl;
    int c;

    *used = 0;
    if (avail < 3) {
        return 0;
    }
    klen = (size_t)p[1] << 8 | p[2];
    if (klen == 0 || klen > SNAP_KEY_MAX) {
        return PK_ECORRUPT;
    }
    if (avail < 3 + klen + 4) {
        return 0;
    }
    vlen = pk_be32_get(p + 3 + klen);
    if (vlen > SNAP_VAL_MAX) {
        return PK_ECORRUPT;
    }
    n = 3 + klen + 4 + vlen;
    if (avail < n) {
        return 0;
    }
    pk_be32_put(kb, im->part);
    memcpy(kb + 4, p + 3, klen);
    kl = 4 + klen;
    c = memcmp(kb, im->last, kl < im->last_len ? kl : im->last_len);
    if (im->nrec > 0 && (c < 0 || (c == 0 && kl <= im->last_len))) {
        return PK_ECORRUPT; /* out of order or repeated */
    }
    if (pk__rec_check(kb, kl, p + 3 + klen + 4, vlen) != 0) {
        return PK_ECORRUPT;
    }
    memcpy(im->last, kb, kl);
    im->last_len = kl;
    im->nrec++;
    im->crc = crc_update(im->tab, im->crc, p, n);
    *used = n;
    return pk__rec_put(t, kb, kl, p + 3 + klen + 4, vlen);
}

static int import_end(pk_import *im, const uint8_t *p)
{
    uint32_t crc = crc_update(im->tab, im->crc, p, 9);

    if (pk_be64_get(p + 1) != im->nrec || pk_be32_get(p + 9) != crc) {
        return PK_ECORRUPT;
    }
    im->state = 2;
    return 0;
}

/* Consumes every complete item in the input buffer. */
static int import_run(pk_import *im, pk_txn *t)
{
    const uint8_t *p = im->in.p;
    size_t off = 0, avail, used;
    int rc = 0;

    while (rc == 0 && off < im->in.len) {
        avail = im->in.len - off;
        used = 0;
        if (im->state == 2) {
            rc = PK_ECORRUPT; /* bytes after the end */
        } else if (im->state == 0) {
            if (avail >= SNAP_HDR_LEN &&
                (rc = import_header(im, t, p + off)) == 0) {
                used = SNAP_HDR_LEN;
            }
        } else if (p[off] == SNAP_END) {
            if (avail >= SNAP_END_LEN && (rc = import_end(im, p + off)) == 0) {
                used = SNAP_END_LEN;
            }
        } else if (p[off] == SNAP_REC) {
            rc = import_record(im, t, p + off, avail, &used);
        } else {
            rc = PK_ECORRUPT;
        }
        if (used == 0) {
            break;
        }
        off += used;
    }
    if (off > 0) {
        memmove(im->in.p, im->in.p + off, im->in.len - off);
        im->in.len -= off;
    }
    return rc;
}

int pk_import_feed(pk_import *im, pk_txn *t, const void *data, size_t len)
{
    int rc;

    if (im->state < 0) {
        return PK_ECORRUPT;
    }
    if ((rc = pk__op_begin(t, im->part, PK__OP_NOLOG | PK__OP_QUIET)) != 0) {
        return rc;
    }
    if (pk__buf_reserve(&im->in, len) != 0) {
        rc = PK_ENOMEM;
    } else {
        if (len > 0) {
            memcpy(im->in.p + im->in.len, data, len);
        }
        im->in.len += len;
        rc = import_run(im, t);
    }
    if (rc != 0 && rc != PK_EEXIST) {
        im->state = -1;
        pk__fail(t, rc);
    }
    return pk__op_end(t, rc);
}

int pk_import_finish(pk_import *im, pk_txn *t)
{
    if (im->state == 2 && im->in.len == 0) {
        return t->err;
    }
    im->state = -1;
    return t->err ? t->err : pk__fail(t, PK_ECORRUPT);
}

int pk_store_part_import(pk_txn *t, uint32_t part, const void *data, size_t len)
{
    pk_import *im = NULL;
    int rc = pk_import_new(part, &im);

    rc = rc ? rc : pk_import_feed(im, t, data, len);
    rc = rc ? rc : pk_import_finish(im, t);
    pk_import_free(im);
    return rc;
}

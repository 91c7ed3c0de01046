/*
 * pk_salted_part: the parts' side of salted strings, hashes and sorted
 * sets; pk_salted_more.c is the side of the node that takes the client's
 * command.  PK.SALTADD and PK.SALTTAKE (pk_salted.c) call these in the
 * part's transaction:
 *
 *   PK.SALTADD name i str stamp value
 *                        the value and its stamp, unless the part holds
 *                        a newer stamp (last writer wins)
 *   PK.SALTADD name i hash|zset field value ...
 *                        each value added to the field's (the member's
 *                        score)
 *   PK.SALTTAKE name ... a part's whole content, as a fold moves it into
 *                        part 0: ["str", stamp, value], ["hash", field,
 *                        value, ...] or ["zset", member, score, ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_salt.h"
#include "server/pk_ctx.h"
#include "server/pk_salted_int.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"

/* The stamp key of name (a part: a sub-key, or the key itself). */
size_t pk__salted_stamp_of(const void *name, size_t len, uint8_t *out)
{
    const void *k;
    size_t kl;
    uint32_t tag;

    if (pk_salt_parse(name, len, &k, &kl, &tag))
        return pk_salt_stamp(k, kl, 1, tag, out, PK__SALT_NAME_CAP);
    return pk_salt_stamp(name, len, 0, 0, out, PK__SALT_NAME_CAP);
}

int pk__salted_add_str(pk_cmd_ctx *x, pk_txn *t)
{
    uint8_t sname[PK__SALT_NAME_CAP];
    size_t sl = pk__salted_stamp_of(x->argv[1].ptr, x->argv[1].len, sname);
    const pk_arg *st = &x->argv[4], *v = &x->argv[5];
    uint32_t part = pk_cmd_part(x, 1);
    pk_set_opts keep = {PK_SET_KEEPTTL, 0};
    pk_slice cur;
    int done, rc;

    if (x->argc != 6 || sl == 0 || st->len != PK__STAMP_LEN)
        return PK_EINVAL;
    rc = pk_str_get(t, part, sname, sl, NOW(x), &cur);
    if (rc == PK_OK && cur.len == PK__STAMP_LEN &&
        memcmp(cur.ptr, st->ptr, PK__STAMP_LEN) >= 0)
        return PK_OK; /* the part holds a newer (or this) write */
    if (rc != PK_OK && rc != PK_ENOTFOUND && rc != PK_STORE_WRONGTYPE)
        return rc;
    /* A fold (part i >= 1 into part 0) keeps part 0's expiry; a SET of a
     * part replaces it, as SET does. */
    rc = pk_str_set(t, PK_KEY(x, 1), v->ptr, v->len,
                    x->argv[2].len == 1 && x->argv[2].ptr[0] == '0' ? NULL
                                                                    : &keep,
                    NOW(x), &done, NULL);
    if (rc == PK_OK)
        rc = pk_str_set(t, part, sname, sl, st->ptr, st->len, NULL, NOW(x),
                        &done, NULL);
    return rc;
}

int pk__salted_take_str(pk_cmd_ctx *x, pk_txn *t)
{
    uint8_t sname[PK__SALT_NAME_CAP];
    size_t sl = pk__salted_stamp_of(x->argv[1].ptr, x->argv[1].len, sname);
    pk_slice st, v;
    char sb[PK__STAMP_LEN];

    if (sl == 0 ||
        pk_str_get(t, pk_cmd_part(x, 1), sname, sl, NOW(x), &st) != PK_OK ||
        st.len != PK__STAMP_LEN)
        return 0;
    memcpy(sb, st.ptr, PK__STAMP_LEN); /* st is scratch until the next get */
    if (pk_str_get(t, PK_KEY(x, 1), NOW(x), &v) != PK_OK) {
        pk_reply_null(x->out, x->c->proto); /* nothing to fold */
        return 1;
    }
    pk_reply_array(x->out, 3);
    pk_reply_bulk(x->out, "str", 3);
    pk_reply_bulk(x->out, sb, PK__STAMP_LEN);
    pk_reply_bulk(x->out, v.ptr, v.len);
    return 1;
}

/* Pairs gathered for PK.SALTTAKE's reply, counted. */
typedef struct pairs {
    pk_obuf buf;
    size_t n;
} pairs;

static int take_field(void *ctx, pk_slice f, pk_slice v)
{
    pairs *p = ctx;

    p->n++;
    pk_reply_bulk(&p->buf, f.ptr, f.len);
    return pk_reply_bulk(&p->buf, v.ptr, v.len);
}

static int take_member(void *ctx, pk_slice m, double score)
{
    pairs *p = ctx;
    char b[40];
    int n = snprintf(b, sizeof(b), "%.17g", score);

    p->n++;
    pk_reply_bulk(&p->buf, m.ptr, m.len);
    return pk_reply_bulk(&p->buf, b, (size_t)n);
}

int pk__salted_take_more(pk_cmd_ctx *x, pk_txn *t)
{
    pk_type type = PK_TYPE_NONE;
    pairs p = {.n = 0};
    pk_zrange all = {
        .kind = PK_ZRANGE_RANK, .start = 0, .stop = -1, .count = -1};
    int rc = pk_key_type(t, PK_KEY(x, 1), NOW(x), &type);

    if (rc != PK_OK || (type != PK_TYPE_HASH && type != PK_TYPE_ZSET))
        return 0;
    pk_obuf_init(&p.buf);
    if (type == PK_TYPE_HASH)
        rc = pk_hmap_each(t, PK_KEY(x, 1), NOW(x), take_field, &p);
    else
        rc = pk_zset_range(t, PK_KEY(x, 1), &all, NOW(x), take_member, &p);
    if (rc == PK_OK && p.buf.err)
        rc = p.buf.err;
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else {
        pk_reply_array(x->out, 2 * p.n + 1);
        pk_reply_bulk(x->out, type == PK_TYPE_HASH ? "hash" : "zset", 4);
        pk_obuf_append(x->out, p.buf.data + p.buf.head,
                       pk_obuf_pending(&p.buf));
    }
    pk_obuf_free(&p.buf);
    return 1;
}

int pk__salted_more_tagged(const pk_cmd_ctx *x)
{
    const pk_arg *a = &x->argv[3];

    return x->argc >= 4 && a->len == 4 && (x->argc - 4) % 2 == 0 &&
           (memcmp(a->ptr, "hash", 4) == 0 || memcmp(a->ptr, "zset", 4) == 0);
}

int pk__salted_add_more(pk_cmd_ctx *x, pk_txn *t)
{
    int zset = x->argv[3].ptr[0] == 'z';
    int rc = PK_OK;

    for (int k = 4; rc == PK_OK && k + 1 < x->argc; k += 2) {
        const pk_arg *f = &x->argv[k], *v = &x->argv[k + 1];
        int64_t iv, out;
        long double fv;
        pk_slice s;
        if (zset) {
            pk_slice m = {f->ptr, f->len};
            pk_zadd_result res;
            double sc = strtod(v->ptr, NULL); /* args are NUL-ended */
            rc = pk_zset_add(t, PK_KEY(x, 1), PK_ZADD_INCR, 1, &sc, &m, NOW(x),
                             &res);
            continue;
        }
        rc = PK_STORE_HASH_NOTINT;
        if (pk_str_parse_int(v->ptr, v->len, &iv) == PK_OK)
            rc = pk_hmap_incrby(t, PK_KEY(x, 1), f->ptr, f->len, iv, NOW(x),
                                &out);
        if (rc == PK_STORE_HASH_NOTINT && pk_hmap_parse_ld(v->ptr, v->len, &fv))
            rc = pk_hmap_incrbyfloat(t, PK_KEY(x, 1), f->ptr, f->len, fv,
                                     NOW(x), &s);
        else if (rc == PK_STORE_HASH_NOTINT) /* not a number: kept whole */
            rc = pk_hmap_set(t, PK_KEY(x, 1), 1, &(pk_slice){f->ptr, f->len},
                             &(pk_slice){v->ptr, v->len}, NOW(x),
                             &(uint64_t){0});
    }
    return rc;
}

/*
 * PK.RANGE start end [LIMIT n] [WITHVALUES] [REV]: the keys of one
 * partition between two bounds, in byte order, a page at a time.
 *
 * Bounds are ZRANGEBYLEX's ("[k", "(k", "-", "+"); with REV start is the
 * high bound, as ZREVRANGEBYLEX takes max first.  The reply is SCAN's
 * shape, [continuation, items]: the continuation is "(" and the last key
 * of the page -- the next call's start, forward or REV -- or "" once the
 * range is exhausted; items are keys, or with WITHVALUES flat key, value
 * pairs (a string's value, nil for the other types).
 *
 * In a cluster the range is one slot's: routing hashes the key bounds
 * (pk_cmd_keys_pk_range) and needs them in one slot (CROSSSLOT), so a
 * range of compound keys under one hash tag ({sensor:17}:2026-11-01 ...)
 * is one partition's sequential read; bounds without a key are refused
 * there.  A node outside a cluster holds everything in partition 0.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_store_range.h"

#define RANGE_PAGE 1000 /* keys per page without LIMIT */

/* A bound that names a key ("[k" or "(k"), not "-" or "+". */
static int keyed_bound(const pk_arg *a)
{
    return a->len > 0 && (a->ptr[0] == '[' || a->ptr[0] == '(');
}

/*
 * Routing sees only the bounds that name keys; the row's PK_CMD_BOUNDS
 * has it hash them without their leading "[" or "(" (with it, a key
 * without a hash tag would land in another slot).
 */
int pk_cmd_keys_pk_range(int argc, const pk_arg *argv, pk_keyrun *r)
{
    int n = 0;

    for (int i = 1; i < 3 && i < argc; i++) {
        if (keyed_bound(&argv[i])) {
            r[n++] = (pk_keyrun){i, i, 1};
        }
    }
    return n;
}

typedef struct range_out {
    pk_cmd_ctx *x;
    pk_obuf *items;
    size_t n; /* elements written to items */
    int withvalues;
    uint8_t *last; /* owned copy of the last key, "(" first */
    size_t last_len, last_cap;
} range_out;

static int range_emit(void *ctx, pk_slice key, pk_type type, pk_slice val)
{
    range_out *o = ctx;

    if (key.len + 1 > o->last_cap) {
        size_t cap =
            key.len + 1 > 2 * o->last_cap ? key.len + 1 : 2 * o->last_cap;
        uint8_t *p = realloc(o->last, cap);
        if (p == NULL) {
            return PK_ENOMEM;
        }
        o->last = p;
        o->last_cap = cap;
    }
    o->last[0] = '(';
    memcpy(o->last + 1, key.ptr, key.len);
    o->last_len = key.len + 1;
    pk_reply_bulk(o->items, key.ptr, key.len);
    o->n++;
    if (o->withvalues) {
        if (type == PK_TYPE_STRING) {
            pk_reply_bulk(o->items, val.ptr, val.len);
        } else {
            pk_reply_null(o->items, o->x->proto);
        }
        o->n++;
    }
    return 0;
}

/* Parses the options after the bounds; 0 after replying an error. */
static int range_opts(pk_cmd_ctx *x, size_t *limit, int *withvalues, int *rev)
{
    int64_t n;

    for (int i = 3; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        if (pk_arg_eq(a, "limit") && i + 1 < x->argc) {
            if (!pk_arg_i64(&x->argv[++i], &n) || n < 1) {
                pk_reply_error(x->out, "ERR LIMIT must be a positive integer");
                return 0;
            }
            *limit = (size_t)n;
        } else if (pk_arg_eq(a, "withvalues")) {
            *withvalues = 1;
        } else if (pk_arg_eq(a, "rev")) {
            *rev = 1;
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    return 1;
}

void pk_cmd_pk_range(pk_cmd_ctx *x)
{
    const pk_arg *first = &x->argv[1], *second = &x->argv[2];
    size_t limit = RANGE_PAGE;
    int withvalues = 0, rev = 0, more = 0, rc;
    pk_zlex a, b;
    uint32_t part;

    if (pk_zlex_parse(first->ptr, first->len, &a) != 0 ||
        pk_zlex_parse(second->ptr, second->len, &b) != 0) {
        pk_reply_error(x->out, "ERR min or max not valid string range item");
        return;
    }
    if (!range_opts(x, &limit, &withvalues, &rev)) {
        return;
    }
    if (x->srv->cluster.enabled && !keyed_bound(first) &&
        !keyed_bound(second)) {
        pk_reply_error(x->out, "ERR PK.RANGE needs a key bound in cluster "
                               "mode: put the keys under one hash tag");
        return;
    }
    if (x->have_part) {
        part = x->part;
    } else {
        const pk_arg *k = keyed_bound(first) ? first : second;
        part = keyed_bound(k) ? pk_srv_part(x->srv, k->ptr + 1, k->len - 1) : 0;
    }
    TXN_OR_RETURN(x, t);
    /* Items are collected aside: the continuation, which comes first in
     * the reply, is known only after the walk. */
    pk_obuf items;
    pk_obuf_init(&items);
    range_out o = {x, &items, 0, withvalues, NULL, 0, 0};
    rc = pk_store_range(t, part, rev ? &b : &a, rev ? &a : &b, rev, limit,
                        NOW(x), range_emit, &o, &more);
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else {
        pk_reply_array(x->out, 2);
        pk_reply_bulk(x->out, more ? o.last : (const uint8_t *)"",
                      more ? o.last_len : 0);
        pk_reply_array(x->out, o.n);
        if (o.n) {
            pk_obuf_append(x->out, items.data + items.head,
                           pk_obuf_pending(&items));
        }
    }
    pk_obuf_free(&items);
    free(o.last);
}

/*
 * PK.RANGE start end [LIMIT n] [WITHVALUES] [REV]: keys between two
 * bounds, in byte order, a page at a time.
 *
 * Bounds are ZRANGEBYLEX's ("[k", "(k", "-", "+"); with REV start is the
 * high bound, as ZREVRANGEBYLEX takes max first.  The reply is SCAN's
 * shape, [continuation, items]: the continuation is the next call's start
 * (forward) or high bound (REV) -- "(" and the last key of the page, or a
 * range's edge when the page ended there -- or "" once the range is
 * exhausted; items are keys, or with WITHVALUES flat key, value pairs (a
 * string's value, nil for the other types).  A page holds at most LIMIT
 * keys, and fewer when it stops at the edge of what this node leads.
 *
 * Which partitions a read touches depends on the scheme:
 *  - range scheme: the read starts in the range holding its first bound
 *    (pk_cmd_pk_range_start, pk_route_range.c, tells routing which), and goes
 * on across the next ranges in key order while this node leads them; where it
 * does not, the page ends there and the continuation names the edge, so the
 *    next call is routed to the range beyond it.  The continuation is a
 *    key, never a partition: a range split, merged or moved between two
 *    calls is read from wherever its keys are then, each key once.
 *  - slots and hash: the range is one partition's: routing hashes the key
 *    bounds (pk_cmd_keys_pk_range) and needs them in one slot
 *    (CROSSSLOT), so a range of compound keys under one hash tag
 *    ({sensor:17}:2026-11-01 ...) is one partition's sequential read;
 *    bounds without a key are refused there.
 * A node outside a cluster holds everything in partition 0.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_range.h"
#include "server/pk_cluster.h"
#include "server/pk_cmd.h"
#include "server/pk_repl.h"
#include "server/pk_route.h"
#include "store/pk_store_range.h"

#define RANGE_PAGE 1000 /* keys per page without LIMIT */

typedef struct range_out {
    pk_cmd_ctx *x;
    pk_obuf *items;
    size_t n; /* elements written to items */
    int withvalues;
    uint8_t *last; /* owned copy of the last key, "(" first */
    size_t last_len, last_cap;
} range_out;

/* The continuation becomes kind ('(' or '[') and the len bytes at p. */
static int set_last(range_out *o, char kind, const void *p, size_t len)
{
    if (len + 1 > o->last_cap) {
        size_t cap = len + 1 > 2 * o->last_cap ? len + 1 : 2 * o->last_cap;
        uint8_t *b = realloc(o->last, cap);
        if (b == NULL) {
            return PK_ENOMEM;
        }
        o->last = b;
        o->last_cap = cap;
    }
    o->last[0] = (uint8_t)kind;
    memcpy(o->last + 1, p, len);
    o->last_len = len + 1;
    return PK_OK;
}

static int range_emit(void *ctx, pk_slice key, pk_type type, pk_slice val)
{
    range_out *o = ctx;

    if (set_last(o, '(', key.ptr, key.len) != PK_OK) {
        return PK_ENOMEM;
    }
    if (pk_acl_conn_hides(o->x->c, key.ptr, key.len))
        return 0; /* outside the user's read patterns, as KEYS */
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

/*
 * Whether the far bound lets the read go past the edge of partition pt:
 * forward, keys at or above its hi; with rev, keys below its lo.
 */
static int past_edge(const pk_partition *pt, const pk_zlex *far, int rev)
{
    int c;

    if (rev ? pt->lo_len == 0 : pt->hi == NULL) {
        return 0; /* the first or last range: nothing lies beyond */
    }
    if (far->kind == (rev ? PK_ZLEX_MIN : PK_ZLEX_MAX)) {
        return 1;
    }
    if (far->kind == PK_ZLEX_MIN || far->kind == PK_ZLEX_MAX) {
        return 0;
    }
    if (rev) {
        return pk_key_cmp(far->ptr, far->len, pt->lo, pt->lo_len) < 0;
    }
    c = pk_key_cmp(far->ptr, far->len, pt->hi, pt->hi_len);
    return c > 0 || (c == 0 && far->kind == PK_ZLEX_INCL);
}

/*
 * The range scheme's read from the start bound near (the high bound with
 * rev) to far: from partition part on, each range clipped to its bounds,
 * across the ranges this node leads.
 */
static int read_ranges(pk_cmd_ctx *x, pk_txn *t, uint32_t part, pk_zlex near,
                       const pk_zlex *far, int rev, size_t limit, range_out *o,
                       int *more)
{
    const pk_cluster *cl = &x->srv->cluster;
    size_t per_key = o->withvalues ? 2 : 1;

    for (;;) {
        const pk_partition *pt = &cl->map->parts[part];
        int beyond = past_edge(pt, far, rev), rc;
        size_t before = o->n;
        pk_zlex clip = *far;
        uint32_t next;

        if (beyond) {
            clip = rev ? (pk_zlex){pt->lo, pt->lo_len, PK_ZLEX_INCL}
                       : (pk_zlex){pt->hi, pt->hi_len, PK_ZLEX_EXCL};
        }
        rc = pk_store_range(t, part, rev ? &clip : &near, rev ? &near : &clip,
                            rev, limit, NOW(x), range_emit, o, more);
        if (rc != PK_OK || *more || !beyond) {
            return rc;
        }
        limit -= (o->n - before) / per_key;
        /* The read goes on from the edge: "[hi" forward, "(lo" reverse. */
        near = rev ? (pk_zlex){pt->lo, pt->lo_len, PK_ZLEX_EXCL}
                   : (pk_zlex){pt->hi, pt->hi_len, PK_ZLEX_INCL};
        next = pk_cmd_pk_range_first(cl->ranges, &near, rev);
        /* The page ends at the edge unless the next range is ours too. */
        if (limit == 0 || pk_pmap_leader(cl->map, next) != cl->self ||
            pk_repl_handing_off(x->srv, next)) {
            *more = 1;
            return set_last(o, rev ? '(' : '[', near.ptr, near.len);
        }
        part = next;
    }
}

void pk_cmd_pk_range(pk_cmd_ctx *x)
{
    const pk_arg *first = &x->argv[1], *second = &x->argv[2];
    const pk_cluster *cl = &x->srv->cluster;
    int ranged = cl->enabled && cl->ranges != NULL;
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
    if (cl->enabled && !ranged && !pk_cmd_pk_range_keyed(first) &&
        !pk_cmd_pk_range_keyed(second)) {
        pk_reply_error(x->out, "ERR PK.RANGE needs a key bound in cluster "
                               "mode: put the keys under one hash tag");
        return;
    }
    if (ranged) {
        part = pk_cmd_pk_range_first(cl->ranges, &a, rev);
    } else if (x->have_part) {
        part = x->part;
    } else {
        const pk_arg *k = pk_cmd_pk_range_keyed(first) ? first : second;
        part = pk_cmd_pk_range_keyed(k)
                   ? pk_srv_part(x->srv, k->ptr + 1, k->len - 1)
                   : 0;
    }
    TXN_OR_RETURN(x, t);
    /* Items are collected aside: the continuation, which comes first in
     * the reply, is known only after the walk. */
    pk_obuf items;
    pk_obuf_init(&items);
    range_out o = {x, &items, 0, withvalues, NULL, 0, 0};
    if (ranged) {
        rc = read_ranges(x, t, part, a, &b, rev, limit, &o, &more);
    } else {
        rc = pk_store_range(t, part, rev ? &b : &a, rev ? &a : &b, rev, limit,
                            NOW(x), range_emit, &o, &more);
    }
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

/*
 * Sorted-set pops: ZPOPMIN ZPOPMAX ZMPOP and the blocking BZPOPMIN
 * BZPOPMAX BZMPOP, which wait on pk_block when no key has members.  A pop
 * is one store call (pk_zset_pop) on the first key with members; a woken
 * client pops from the key that became ready, as Redis serves it.
 */
#include <stdint.h>

#include "core/pk_err.h"
#include "server/pk_block.h"
#include "server/pk_cmd.h"
#include "store/pk_zset.h"
#include "store/pk_zset_ops.h"

/* How a pop replies: ZPOPMIN/MAX flat or (RESP3 with count) pairs. */
typedef struct zpop_out {
    pk_cmd_ctx *x;
    int nested;
} zpop_out;

static int zpop_emit(void *ctx, pk_slice member, double score)
{
    zpop_out *o = ctx;

    if (o->nested)
        pk_reply_array(o->x->out, 2);
    pk_reply_bulk(o->x->out, member.ptr, member.len);
    pk_reply_double(o->x->out, o->x->proto, score);
    return 0;
}

/*
 * Pops up to count from key argument ki into a deferred array header at
 * the end of the output: pairs when nested, else flat.  Returns the store
 * result and *n the members popped.
 */
static int zpop_into(pk_cmd_ctx *x, pk_txn *t, int ki, int from_max,
                     uint64_t count, int nested, uint64_t *n)
{
    zpop_out o = {x, nested};
    size_t pos, mark = pk_obuf_pending(x->out);
    int rc;

    pk_reply_defer(x->out, &pos);
    rc = pk_zset_pop(t, PK_KEY(x, ki), from_max, count, NOW(x), zpop_emit, &o,
                     n);
    if (rc != PK_OK) {
        x->out->len = x->out->head + mark;
        return rc;
    }
    pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY,
                          nested ? *n : 2 * *n);
    return PK_OK;
}

static void zpop_cmd(pk_cmd_ctx *x, int from_max)
{
    int64_t count = 1;
    uint64_t n;
    int rc;

    if (x->argc > 3) {
        pk_reply_syntax(x);
        return;
    }
    if (x->argc == 3) {
        if (!pk_arg_i64(&x->argv[2], &count)) {
            pk_reply_notint(x);
            return;
        }
        if (count < 0) {
            pk_reply_error(x->out, "ERR value is out of range, must be "
                                   "positive");
            return;
        }
    }
    TXN_OR_RETURN(x, t);
    rc = zpop_into(x, t, 1, from_max, (uint64_t)count,
                   x->argc == 3 && x->proto == 3, &n);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
}

void pk_cmd_zpopmin(pk_cmd_ctx *x)
{
    zpop_cmd(x, 0);
}

void pk_cmd_zpopmax(pk_cmd_ctx *x)
{
    zpop_cmd(x, 1);
}

/*
 * The first key argument in first..last whose sorted set has members, in
 * *arg (0: none), as a pop looks for it: during a blocking retry for one
 * key only that key, and a key of another type stops only the first try
 * (Redis serves a woken client from the key that became ready).  Returns
 * 0, or 1 after replying the error.
 */
static int zfirst_ready(pk_cmd_ctx *x, pk_txn *t, int first, int last, int *arg)
{
    int only = pk_block_ready_arg(x), retry = x->c->blk != NULL;
    uint64_t card = 0;

    *arg = 0;
    for (int k = first; k <= last; k++) {
        int rc;
        if (only && k != only)
            continue;
        rc = pk_zset_card(t, PK_KEY(x, k), NOW(x), &card);
        if (rc == PK_STORE_WRONGTYPE && retry)
            continue;
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return 1;
        }
        if (card > 0) {
            *arg = k;
            return 0;
        }
    }
    return 0;
}

static void reply_null_array(pk_cmd_ctx *x)
{
    pk_reply_null_array(x->out, x->proto);
}

/* [B]ZMPOP: "numkeys key... MIN|MAX [COUNT n]" with numkeys at argv[i]. */
static void zmpop(pk_cmd_ctx *x, int i, int blocking, uint64_t deadline)
{
    int64_t nk, count = -1;
    int wi, k, from_max, rc;
    pk_keyrun run;
    uint64_t n;

    if (!pk_arg_i64(&x->argv[i], &nk) || nk < 1) {
        pk_reply_error(x->out, "ERR numkeys should be greater than 0");
        return;
    }
    if (nk > x->argc - i - 2) {
        pk_reply_syntax(x);
        return;
    }
    wi = i + 1 + (int)nk;
    if (pk_arg_eq(&x->argv[wi], "min"))
        from_max = 0;
    else if (pk_arg_eq(&x->argv[wi], "max"))
        from_max = 1;
    else {
        pk_reply_syntax(x);
        return;
    }
    for (int j = wi + 1; j < x->argc; j += 2) {
        if (count != -1 || j + 1 >= x->argc ||
            !pk_arg_eq(&x->argv[j], "count")) {
            pk_reply_syntax(x);
            return;
        }
        if (!pk_arg_i64(&x->argv[j + 1], &count) || count < 1) {
            pk_reply_error(x->out, "ERR count should be greater than 0");
            return;
        }
    }
    count = count == -1 ? 1 : count;
    /* Each key is looked at and popped alone: keys of several partitions
     * are fine on a node without a cluster (routing refuses them in one). */
    TXN_OR_RETURN(x, t);
    if (zfirst_ready(x, t, i + 1, wi - 1, &k))
        return;
    if (k == 0) {
        run = (pk_keyrun){i + 1, wi - 1, 1};
        if (blocking)
            pk_block_wait(x, &run, 1, deadline, reply_null_array);
        else
            reply_null_array(x);
        return;
    }
    size_t mark = pk_obuf_pending(x->out);
    pk_reply_array(x->out, 2);
    pk_reply_bulk(x->out, x->argv[k].ptr, x->argv[k].len);
    rc = zpop_into(x, t, k, from_max, (uint64_t)count, 1, &n);
    if (rc != PK_OK) {
        x->out->len = x->out->head + mark;
        pk_cmd_store_error(x, rc);
    }
}

void pk_cmd_zmpop(pk_cmd_ctx *x)
{
    zmpop(x, 1, 0, 0);
}

void pk_cmd_bzmpop(pk_cmd_ctx *x)
{
    uint64_t deadline;

    if (pk_block_timeout(x, &x->argv[1], &deadline))
        zmpop(x, 2, 1, deadline);
}

/* BZPOPMIN/BZPOPMAX key... timeout: [key, member, score] of the first
 * key with members, waiting for one when none has. */
static void bzpop(pk_cmd_ctx *x, int from_max)
{
    pk_keyrun run = {1, x->argc - 2, 1};
    uint64_t deadline, n;
    zpop_out o = {x, 0};
    size_t mark;
    int k, rc;

    if (!pk_block_timeout(x, &x->argv[x->argc - 1], &deadline))
        return;
    TXN_OR_RETURN(x, t);
    if (zfirst_ready(x, t, run.first, run.last, &k))
        return;
    if (k == 0) {
        pk_block_wait(x, &run, 1, deadline, reply_null_array);
        return;
    }
    mark = pk_obuf_pending(x->out);
    pk_reply_array(x->out, 3);
    pk_reply_bulk(x->out, x->argv[k].ptr, x->argv[k].len);
    rc = pk_zset_pop(t, PK_KEY(x, k), from_max, 1, NOW(x), zpop_emit, &o, &n);
    if (rc != PK_OK) {
        x->out->len = x->out->head + mark;
        pk_cmd_store_error(x, rc);
    }
}

void pk_cmd_bzpopmin(pk_cmd_ctx *x)
{
    bzpop(x, 0);
}

void pk_cmd_bzpopmax(pk_cmd_ctx *x)
{
    bzpop(x, 1);
}

/*
 * List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LINDEX LSET
 * LRANGE LTRIM LREM LINSERT LPOS LMOVE RPOPLPUSH LMPOP and the blocking
 * BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP (pk_block.h), with Redis 7.0's
 * replies and error texts.  Argument errors are replied before the store
 * is touched; the store checks types before it writes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_block.h"
#include "server/pk_cmd.h"
#include "store/pk_list.h"
#include "store/pk_store.h"

#define POSITIVE_ERR "ERR value is out of range, must be positive"

/* "left" / "right" -> 0 / PK_LIST_RIGHT; else replies a syntax error. */
static int parse_where(pk_cmd_ctx *x, const pk_arg *a, unsigned *where)
{
    if (pk_arg_eq(a, "left"))
        *where = 0;
    else if (pk_arg_eq(a, "right"))
        *where = PK_LIST_RIGHT;
    else {
        pk_reply_syntax(x);
        return 0;
    }
    return 1;
}

/* An integer in [min, INT64_MAX], else the error msg (Redis's
 * getRangeLongFromObjectOrReply with a message). */
static int parse_min(pk_cmd_ctx *x, const pk_arg *a, int64_t min, int64_t *v,
                     const char *msg)
{
    if (!pk_arg_i64(a, v) || *v < min) {
        pk_reply_error(x->out, msg);
        return 0;
    }
    return 1;
}

static int parse_long(pk_cmd_ctx *x, const pk_arg *a, int64_t *v)
{
    if (!pk_arg_i64(a, v)) {
        pk_reply_notint(x);
        return 0;
    }
    return 1;
}

static void push(pk_cmd_ctx *x, unsigned flags)
{
    TXN_OR_RETURN(x, t);
    size_t n = (size_t)x->argc - 2;
    pk_slice *v = malloc(n * sizeof(*v));
    uint64_t len = 0;
    int rc;

    for (size_t i = 0; v && i < n; i++)
        v[i] = (pk_slice){x->argv[2 + i].ptr, x->argv[2 + i].len};
    rc = v ? pk_list_push(t, PK_KEY(x, 1), flags, n, v, NOW(x), &len)
           : PK_ENOMEM;
    free(v);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)len);
}

void pk_cmd_lpush(pk_cmd_ctx *x)
{
    push(x, 0);
}

void pk_cmd_rpush(pk_cmd_ctx *x)
{
    push(x, PK_LIST_RIGHT);
}

void pk_cmd_lpushx(pk_cmd_ctx *x)
{
    push(x, PK_LIST_XX);
}

void pk_cmd_rpushx(pk_cmd_ctx *x)
{
    push(x, PK_LIST_RIGHT | PK_LIST_XX);
}

static int reply_elem(void *ctx, pk_slice v)
{
    pk_cmd_ctx *x = ctx;

    pk_reply_bulk(x->out, v.ptr, v.len);
    return 0;
}

/*
 * Pops up to count elements of the key at argv[arg] (known to hold len
 * >= 1 of them), each replied as a bulk string.
 */
static int pop_into_reply(pk_cmd_ctx *x, pk_txn *t, int arg, unsigned where,
                          uint64_t count)
{
    uint64_t n;

    return pk_list_pop(t, PK_KEY(x, arg), where, count, NOW(x), reply_elem, x,
                       &n);
}

static void pop(pk_cmd_ctx *x, unsigned where)
{
    int64_t count = 1;
    uint64_t len;
    int rc;

    if (x->argc > 3) {
        pk_reply_errorf(x->out,
                        "ERR wrong number of arguments for '%s' command",
                        x->c->last_cmd);
        return;
    }
    if (x->argc == 3 && !parse_min(x, &x->argv[2], 0, &count, POSITIVE_ERR))
        return;
    TXN_OR_RETURN(x, t);
    if (x->argc == 2) {
        /* One element needs no array header, so no length first: a
         * missing key pops nothing. */
        rc =
            pk_list_pop(t, PK_KEY(x, 1), where, 1, NOW(x), reply_elem, x, &len);
        if (rc != PK_OK)
            pk_cmd_store_error(x, rc);
        else if (len == 0)
            pk_reply_null(x->out, x->proto);
        return;
    }
    rc = pk_list_len(t, PK_KEY(x, 1), NOW(x), &len);
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return;
    }
    if (len == 0) {
        if (x->argc == 3)
            pk_reply_null_array(x->out, x->proto);
        else
            pk_reply_null(x->out, x->proto);
        return;
    }
    if (x->argc == 3)
        pk_reply_array(x->out, (uint64_t)count < len ? (size_t)count : len);
    if (count > 0 && (rc = pop_into_reply(x, t, 1, where, (uint64_t)count)))
        pk_cmd_store_error(x, rc);
}

void pk_cmd_lpop(pk_cmd_ctx *x)
{
    pop(x, 0);
}

void pk_cmd_rpop(pk_cmd_ctx *x)
{
    pop(x, PK_LIST_RIGHT);
}

void pk_cmd_llen(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t len = 0;
    int rc = pk_list_len(t, PK_KEY(x, 1), NOW(x), &len);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)len);
}

void pk_cmd_lindex(pk_cmd_ctx *x)
{
    int64_t index;
    pk_slice v = {0};

    if (!parse_long(x, &x->argv[2], &index))
        return;
    TXN_OR_RETURN(x, t);
    pk_reply_value(x, pk_list_index(t, PK_KEY(x, 1), index, NOW(x), &v), v);
}

void pk_cmd_lset(pk_cmd_ctx *x)
{
    int64_t index;
    int rc;

    if (!parse_long(x, &x->argv[2], &index))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_list_set(t, PK_KEY(x, 1), index, x->argv[3].ptr, x->argv[3].len,
                     NOW(x));
    if (rc == PK_ENOTFOUND)
        pk_reply_error(x->out, "ERR no such key");
    else if (rc == PK_EINVAL)
        pk_reply_error(x->out, "ERR index out of range");
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_lrange(pk_cmd_ctx *x)
{
    int64_t start, stop;
    uint64_t len = 0;
    int rc;

    if (!parse_long(x, &x->argv[2], &start) ||
        !parse_long(x, &x->argv[3], &stop))
        return;
    TXN_OR_RETURN(x, t);
    if ((rc = pk_list_len(t, PK_KEY(x, 1), NOW(x), &len)) != PK_OK) {
        pk_cmd_store_error(x, rc);
        return;
    }
    /* Redis's clamping; len fits in int64 (a list is at most 2^64 - 1
     * elements, in practice far less). */
    if (start < 0)
        start += (int64_t)len;
    if (stop < 0)
        stop += (int64_t)len;
    if (start < 0)
        start = 0;
    if (start > stop || (uint64_t)start >= len) {
        pk_reply_array(x->out, 0);
        return;
    }
    if ((uint64_t)stop >= len)
        stop = (int64_t)len - 1;
    pk_reply_array(x->out, (size_t)(stop - start + 1));
    rc = pk_list_range(t, PK_KEY(x, 1), (uint64_t)start,
                       (uint64_t)(stop - start + 1), NOW(x), reply_elem, x);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
}

void pk_cmd_ltrim(pk_cmd_ctx *x)
{
    int64_t start, stop;
    int rc;

    if (!parse_long(x, &x->argv[2], &start) ||
        !parse_long(x, &x->argv[3], &stop))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_list_trim(t, PK_KEY(x, 1), start, stop, NOW(x));
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_lrem(pk_cmd_ctx *x)
{
    int64_t count;
    uint64_t removed = 0;
    int rc;

    if (!parse_long(x, &x->argv[2], &count))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_list_rem(t, PK_KEY(x, 1), count, x->argv[3].ptr, x->argv[3].len,
                     NOW(x), &removed);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)removed);
}

void pk_cmd_linsert(pk_cmd_ctx *x)
{
    int after;
    int64_t len = 0;
    int rc;

    if (pk_arg_eq(&x->argv[2], "after"))
        after = 1;
    else if (pk_arg_eq(&x->argv[2], "before"))
        after = 0;
    else {
        pk_reply_syntax(x);
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_list_insert(t, PK_KEY(x, 1), after, x->argv[3].ptr, x->argv[3].len,
                        x->argv[4].ptr, x->argv[4].len, NOW(x), &len);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, len);
}

typedef struct lpos_ctx {
    pk_cmd_ctx *x;
    int counted; /* COUNT given: an array, else the first match */
    int64_t first;
    size_t n; /* matches replied (counted) */
} lpos_ctx;

static int lpos_found(void *ctx, uint64_t index)
{
    lpos_ctx *p = ctx;

    if (!p->counted) {
        p->first = (int64_t)index;
        return 1; /* one is enough */
    }
    pk_reply_int(p->x->out, (int64_t)index);
    p->n++;
    return 0;
}

void pk_cmd_lpos(pk_cmd_ctx *x)
{
    int64_t rank = 1, count = -1, maxlen = 0;
    lpos_ctx p = {x, 0, -1, 0};
    size_t slot = 0;
    uint64_t want;
    int rc;

    for (int j = 3; j < x->argc; j++) {
        int more = j + 1 < x->argc;
        if (pk_arg_eq(&x->argv[j], "rank") && more) {
            if (!parse_long(x, &x->argv[++j], &rank))
                return;
            if (rank == 0) {
                pk_reply_error(x->out,
                               "ERR RANK can't be zero: use 1 to start from "
                               "the first match, 2 from the second ... or use "
                               "negative to start from the end of the list");
                return;
            }
        } else if (pk_arg_eq(&x->argv[j], "count") && more) {
            if (!parse_min(x, &x->argv[++j], 0, &count,
                           "ERR COUNT can't be negative"))
                return;
        } else if (pk_arg_eq(&x->argv[j], "maxlen") && more) {
            if (!parse_min(x, &x->argv[++j], 0, &maxlen,
                           "ERR MAXLEN can't be negative"))
                return;
        } else {
            pk_reply_syntax(x);
            return;
        }
    }
    TXN_OR_RETURN(x, t);
    p.counted = count != -1;
    want = count > 0 ? (uint64_t)count : 0;
    /* Redis 7.0 negates RANK -2^63 into itself: every match counts from
     * the first one from the tail on, and COUNT never stops the walk. */
    if (rank == INT64_MIN) {
        rank = -1;
        want = 0;
    }
    if (p.counted && pk_reply_defer(x->out, &slot) != PK_OK) {
        pk_reply_error(x->out, "ERR out of memory");
        return;
    }
    rc = pk_list_pos(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len, rank,
                     p.counted ? want : 1, (uint64_t)maxlen, NOW(x), lpos_found,
                     &p);
    if (p.counted && rc == PK_OK) {
        pk_reply_set_deferred(x->out, slot, x->proto, PK_REPLY_ARRAY, p.n);
        return;
    }
    if (p.counted) /* drop the slot and the matches after it */
        x->out->len = x->out->head + slot;
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (p.first >= 0)
        pk_reply_int(x->out, p.first);
    else
        pk_reply_null(x->out, x->proto);
}

/* ---- moves ------------------------------------------------------------ */

static void reply_null(pk_cmd_ctx *x)
{
    pk_reply_null(x->out, x->proto);
}

static void reply_null_array(pk_cmd_ctx *x)
{
    pk_reply_null_array(x->out, x->proto);
}

/*
 * LMOVE from argv[1] to argv[2].  Blocking (deadline valid): waits when
 * the source is missing; a retry also waits on a source of another type
 * (Redis 7.0 serves only lists), while a wrong destination is an error.
 */
static void move(pk_cmd_ctx *x, unsigned from, unsigned to, int blocking,
                 uint64_t deadline)
{
    static const pk_keyrun src_run = {1, 1, 1};
    pk_slice v = {0};
    uint64_t len;
    int rc;

    TXN_OR_RETURN(x, t);
    if (blocking) {
        rc = pk_list_len(t, PK_KEY(x, 1), NOW(x), &len);
        if ((rc == PK_STORE_WRONGTYPE && x->c->blk) ||
            (rc == PK_OK && len == 0)) {
            /* Redis answers a null array at the timeout, but a null
             * where it may not block. */
            pk_block_wait(x, &src_run, 1, deadline,
                          x->noblock ? reply_null : reply_null_array);
            return;
        }
    }
    rc = pk_list_move(t, PK_KEY(x, 1), PK_KEY(x, 2), from, to, NOW(x), &v);
    if (rc == PK_ENOTFOUND)
        pk_reply_null(x->out, x->proto);
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_bulk(x->out, v.ptr, v.len);
}

void pk_cmd_lmove(pk_cmd_ctx *x)
{
    unsigned from, to;

    if (parse_where(x, &x->argv[3], &from) && parse_where(x, &x->argv[4], &to))
        move(x, from, to, 0, 0);
}

void pk_cmd_rpoplpush(pk_cmd_ctx *x)
{
    move(x, PK_LIST_RIGHT, 0, 0, 0);
}

void pk_cmd_blmove(pk_cmd_ctx *x)
{
    unsigned from, to;
    uint64_t deadline;

    if (parse_where(x, &x->argv[3], &from) &&
        parse_where(x, &x->argv[4], &to) &&
        pk_block_timeout(x, &x->argv[5], &deadline))
        move(x, from, to, 1, deadline);
}

void pk_cmd_brpoplpush(pk_cmd_ctx *x)
{
    uint64_t deadline;

    if (pk_block_timeout(x, &x->argv[3], &deadline))
        move(x, PK_LIST_RIGHT, 0, 1, deadline);
}

/* ---- pops from the first non-empty key ---------------------------------- */

/*
 * The first key of run r (argv positions) holding a non-empty list: its
 * position in *arg and length in *len, or *arg 0.  A key of another type
 * is an error, except on a retry, where it only does not count.  During
 * a retry for one key, only that key is looked at (Redis serves a client
 * from the key that became ready).  Returns 0, or 1 after replying.
 */
static int first_ready(pk_cmd_ctx *x, pk_txn *t, const pk_keyrun *r, int *arg,
                       uint64_t *len)
{
    int only = pk_block_ready_arg(x), retry = x->c->blk != NULL;

    *arg = 0;
    for (int i = r->first; i <= r->last; i += r->step) {
        int rc;
        if (only && i != only)
            continue;
        rc = pk_list_len(t, PK_KEY(x, i), NOW(x), len);
        if (rc == PK_STORE_WRONGTYPE && retry)
            continue;
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return 1;
        }
        if (*len > 0) {
            *arg = i;
            return 0;
        }
    }
    return 0;
}

/*
 * The pops of BLPOP/BRPOP (mpop 0: [key, element]) and of [B]LMPOP
 * (mpop 1: [key, [elements]]) over the keys of run r.
 */
static void pop_first(pk_cmd_ctx *x, const pk_keyrun *r, unsigned where,
                      uint64_t count, int mpop, int blocking, uint64_t deadline)
{
    uint64_t len = 0;
    int arg, rc;

    TXN_OR_RETURN(x, t);
    if (first_ready(x, t, r, &arg, &len))
        return;
    if (arg == 0) {
        if (blocking)
            pk_block_wait(x, r, 1, deadline, reply_null_array);
        else
            pk_reply_null_array(x->out, x->proto);
        return;
    }
    pk_reply_array(x->out, 2);
    pk_reply_bulk(x->out, x->argv[arg].ptr, x->argv[arg].len);
    if (mpop)
        pk_reply_array(x->out, count < len ? (size_t)count : (size_t)len);
    if ((rc = pop_into_reply(x, t, arg, where, mpop ? count : 1)) != PK_OK)
        pk_cmd_store_error(x, rc);
}

static void bpop(pk_cmd_ctx *x, unsigned where)
{
    pk_keyrun r = {1, x->argc - 2, 1};
    uint64_t deadline;

    if (pk_block_timeout(x, &x->argv[x->argc - 1], &deadline))
        pop_first(x, &r, where, 1, 0, 1, deadline);
}

void pk_cmd_blpop(pk_cmd_ctx *x)
{
    bpop(x, 0);
}

void pk_cmd_brpop(pk_cmd_ctx *x)
{
    bpop(x, PK_LIST_RIGHT);
}

/* LMPOP numkeys key... LEFT|RIGHT [COUNT n], numkeys at argv[i]. */
static void mpop(pk_cmd_ctx *x, int i, int blocking, uint64_t deadline)
{
    int64_t numkeys, count = -1;
    unsigned where;
    pk_keyrun r;
    int w;

    if (!parse_min(x, &x->argv[i], 1, &numkeys,
                   "ERR numkeys should be greater than 0"))
        return;
    if (numkeys >= x->argc - i - 1) {
        pk_reply_syntax(x);
        return;
    }
    w = i + 1 + (int)numkeys;
    if (!parse_where(x, &x->argv[w], &where))
        return;
    for (int j = w + 1; j < x->argc; j++) {
        if (count == -1 && pk_arg_eq(&x->argv[j], "count") && j + 1 < x->argc) {
            if (!parse_min(x, &x->argv[++j], 1, &count,
                           "ERR count should be greater than 0"))
                return;
        } else {
            pk_reply_syntax(x);
            return;
        }
    }
    r = (pk_keyrun){i + 1, w - 1, 1};
    pop_first(x, &r, where, count == -1 ? 1 : (uint64_t)count, 1, blocking,
              deadline);
}

void pk_cmd_lmpop(pk_cmd_ctx *x)
{
    mpop(x, 1, 0, 0);
}

void pk_cmd_blmpop(pk_cmd_ctx *x)
{
    uint64_t deadline;

    if (pk_block_timeout(x, &x->argv[1], &deadline))
        mpop(x, 2, 1, deadline);
}

int pk_cmd_keys_lmpop(int argc, const pk_arg *argv, pk_keyrun *r)
{
    return pk_cmd_keys_numkeys(argc, argv, 1, r);
}

int pk_cmd_keys_blmpop(int argc, const pk_arg *argv, pk_keyrun *r)
{
    return pk_cmd_keys_numkeys(argc, argv, 2, r);
}

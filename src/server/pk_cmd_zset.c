/*
 * Sorted-set commands: ZADD ZREM ZSCORE ZCARD and the ZRANGE family
 * (ZRANGE with BYSCORE/BYLEX/REV/LIMIT/WITHSCORES, ZRANGEBYSCORE,
 * ZREVRANGE, ZRANGEBYLEX), all of which parse into one zrange_spec and
 * share one implementation.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"

void pk_cmd_zadd(pk_cmd_ctx *x)
{
    unsigned flags = 0;
    int i = 2;
    size_t n;
    double *scores;
    pk_slice *members;
    pk_zadd_result res;
    int rc;

    for (; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        if (pk_arg_eq(a, "nx"))
            flags |= PK_ZADD_NX;
        else if (pk_arg_eq(a, "xx"))
            flags |= PK_ZADD_XX;
        else if (pk_arg_eq(a, "gt"))
            flags |= PK_ZADD_GT;
        else if (pk_arg_eq(a, "lt"))
            flags |= PK_ZADD_LT;
        else if (pk_arg_eq(a, "ch"))
            flags |= PK_ZADD_CH;
        else if (pk_arg_eq(a, "incr"))
            flags |= PK_ZADD_INCR;
        else
            break;
    }
    if ((x->argc - i) % 2 != 0 || x->argc == i) {
        pk_reply_syntax(x);
        return;
    }
    if ((flags & PK_ZADD_NX) && (flags & PK_ZADD_XX)) {
        pk_reply_error(x->out, "ERR XX and NX options at the same time are "
                               "not compatible");
        return;
    }
    if (((flags & PK_ZADD_GT) && (flags & (PK_ZADD_LT | PK_ZADD_NX))) ||
        ((flags & PK_ZADD_LT) && (flags & PK_ZADD_NX))) {
        pk_reply_error(x->out, "ERR GT, LT, and/or NX options at the same "
                               "time are not compatible");
        return;
    }
    n = (size_t)(x->argc - i) / 2;
    if ((flags & PK_ZADD_INCR) && n != 1) {
        pk_reply_error(x->out, "ERR INCR option supports a single "
                               "increment-element pair");
        return;
    }
    scores = malloc(n * sizeof(*scores));
    members = malloc(n * sizeof(*members));
    rc = scores && members ? PK_OK : PK_ENOMEM;
    for (size_t k = 0; rc == PK_OK && k < n; k++) {
        const pk_arg *m = &x->argv[i + 1 + 2 * (int)k];
        if (!pk_arg_double(&x->argv[i + 2 * (int)k], &scores[k])) {
            pk_reply_error(x->out, "ERR value is not a valid float");
            goto out;
        }
        members[k].ptr = m->ptr;
        members[k].len = m->len;
    }
    if (rc == PK_OK) {
        pk_txn *t = pk_srv_txn(x);
        if (t == NULL)
            goto out;
        rc = pk_zset_add(t, PK_KEY(x, 1), flags, n, scores, members, NOW(x),
                         &res);
    }
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (!(flags & PK_ZADD_INCR))
        pk_reply_int(x->out, (int64_t)res.count);
    else if (res.has_score)
        pk_reply_double(x->out, x->proto, res.score);
    else
        pk_reply_null(x->out, x->proto);
out:
    free(scores);
    free(members);
}

void pk_cmd_zrem(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    size_t n = (size_t)x->argc - 2;
    pk_slice *m = malloc(n * sizeof(*m));
    uint64_t removed = 0;
    int rc = PK_ENOMEM;

    if (m) {
        for (size_t i = 0; i < n; i++)
            m[i] = (pk_slice){x->argv[2 + i].ptr, x->argv[2 + i].len};
        rc = pk_zset_rem(t, PK_KEY(x, 1), n, m, NOW(x), &removed);
    }
    free(m);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)removed);
}

void pk_cmd_zscore(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    double score;
    int rc = pk_zset_score(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                           NOW(x), &score);

    if (rc == PK_ENOTFOUND)
        pk_reply_null(x->out, x->proto);
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_double(x->out, x->proto, score);
}

void pk_cmd_zcard(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t card;
    int rc = pk_zset_card(t, PK_KEY(x, 1), NOW(x), &card);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)card);
}

enum zkind { Z_RANK, Z_SCORE, Z_LEX };

/* One ZRANGE request, whatever command spelled it. */
typedef struct zrange_spec {
    enum zkind kind;
    int rev, withscores, limit;
    const pk_arg *from, *to; /* as given (REV: from is the high end) */
    int64_t offset, count;
} zrange_spec;

typedef struct zemit {
    pk_cmd_ctx *x;
    int withscores;
    size_t n;
} zemit;

static int emit_member(void *ctx, pk_slice member, double score)
{
    zemit *e = ctx;

    if (e->withscores && e->x->proto == 3)
        pk_reply_array(e->x->out, 2);
    pk_reply_bulk(e->x->out, member.ptr, member.len);
    if (e->withscores)
        pk_reply_double(e->x->out, e->x->proto, score);
    e->n++;
    return 0;
}

static int zrange_run(pk_cmd_ctx *x, pk_txn *t, const zrange_spec *z, zemit *e)
{
    const pk_arg *lo = z->rev ? z->to : z->from;
    const pk_arg *hi = z->rev ? z->from : z->to;

    if (z->kind == Z_RANK) {
        int64_t start, stop;
        if (!pk_arg_i64(z->from, &start) || !pk_arg_i64(z->to, &stop))
            return PK_EINVAL;
        return pk_zset_range_rank(t, PK_KEY(x, 1), start, stop, z->rev, NOW(x),
                                  emit_member, e);
    }
    if (z->kind == Z_SCORE) {
        pk_zbound min, max;
        if (pk_zbound_parse(lo->ptr, lo->len, &min) != PK_OK ||
            pk_zbound_parse(hi->ptr, hi->len, &max) != PK_OK)
            return PK_ERANGE;
        return pk_zset_range_score(t, PK_KEY(x, 1), &min, &max, z->rev,
                                   z->offset, z->count, NOW(x), emit_member, e);
    }
    pk_zlex min, max;
    if (pk_zlex_parse(lo->ptr, lo->len, &min) != PK_OK ||
        pk_zlex_parse(hi->ptr, hi->len, &max) != PK_OK)
        return PK_ECORRUPT;
    return pk_zset_range_lex(t, PK_KEY(x, 1), &min, &max, z->rev, z->offset,
                             z->count, NOW(x), emit_member, e);
}

static void zrange_generic(pk_cmd_ctx *x, const zrange_spec *z)
{
    zemit e = {x, z->withscores, 0};
    size_t pos, mark;
    int rc;

    TXN_OR_RETURN(x, t);
    mark = pk_obuf_pending(x->out);
    pk_reply_defer(x->out, &pos);
    rc = zrange_run(x, t, z, &e);
    if (rc == PK_OK) {
        pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY,
                              e.n * (z->withscores && x->proto == 2 ? 2 : 1));
        return;
    }
    x->out->len = x->out->head + mark; /* drop the deferred header */
    if (rc == PK_EINVAL)
        pk_reply_notint(x);
    else if (rc == PK_ERANGE)
        pk_reply_error(x->out, "ERR min or max is not a float");
    else if (rc == PK_ECORRUPT)
        pk_reply_error(x->out, "ERR min or max not valid string range item");
    else
        pk_cmd_store_error(x, rc);
}

/* Parses the options after "key a b" from argv[i] on. */
static int zrange_options(pk_cmd_ctx *x, int i, zrange_spec *z, int allow)
{
    for (; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        if (pk_arg_eq(a, "withscores") && (allow & 1))
            z->withscores = 1;
        else if (pk_arg_eq(a, "byscore") && (allow & 2) && z->kind == Z_RANK)
            z->kind = Z_SCORE;
        else if (pk_arg_eq(a, "bylex") && (allow & 2) && z->kind == Z_RANK)
            z->kind = Z_LEX;
        else if (pk_arg_eq(a, "rev") && (allow & 2))
            z->rev = 1;
        else if (pk_arg_eq(a, "limit") && (allow & 4) && i + 2 < x->argc) {
            if (!pk_arg_i64(&x->argv[i + 1], &z->offset) ||
                !pk_arg_i64(&x->argv[i + 2], &z->count)) {
                pk_reply_notint(x);
                return 0;
            }
            z->limit = 1;
            i += 2;
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    if (z->limit && z->kind == Z_RANK) {
        pk_reply_error(x->out, "ERR syntax error, LIMIT is only supported in "
                               "combination with either BYSCORE or BYLEX");
        return 0;
    }
    if (z->withscores && z->kind == Z_LEX) {
        pk_reply_error(x->out, "ERR syntax error, WITHSCORES not supported in "
                               "combination with BYLEX");
        return 0;
    }
    return 1;
}

static void zrange_cmd(pk_cmd_ctx *x, enum zkind kind, int rev, int allow)
{
    zrange_spec z = {kind, rev, 0, 0, &x->argv[2], &x->argv[3], 0, -1};

    if (zrange_options(x, 4, &z, allow))
        zrange_generic(x, &z);
}

void pk_cmd_zrange(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_RANK, 0, 1 | 2 | 4);
}

void pk_cmd_zrevrange(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_RANK, 1, 1);
}

void pk_cmd_zrangebyscore(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_SCORE, 0, 1 | 4);
}

void pk_cmd_zrangebylex(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_LEX, 0, 4);
}

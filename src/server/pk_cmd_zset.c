/*
 * Sorted-set commands: ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZRANK
 * ZREVRANK, the ZRANGE family (ZRANGE with BYSCORE/BYLEX/REV/LIMIT/
 * WITHSCORES, ZRANGEBYSCORE, ZREVRANGE, ZREVRANGEBYSCORE, ZRANGEBYLEX,
 * ZREVRANGEBYLEX, ZRANGESTORE, ZCOUNT, ZLEXCOUNT, ZREMRANGEBY*), all of
 * which parse into one zrange_spec, the set algebra (ZUNION ZINTER ZDIFF,
 * their STORE forms, ZINTERCARD), ZRANDMEMBER and ZSCAN; the pops are in
 * pk_cmd_zpop.c.
 *
 * Multi-key commands run on one partition: routing checks that in a
 * cluster (CROSSSLOT); on a node alone every key is in partition 0.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_zset.h"
#include "store/pk_zset_ops.h"
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

/* Spec to store range; PK_EINVAL / PK_ERANGE / PK_ECORRUPT name the
 * argument error (see zrange_error). */
static int zrange_parse(const zrange_spec *z, pk_zrange *r)
{
    const pk_arg *lo = z->rev ? z->to : z->from;
    const pk_arg *hi = z->rev ? z->from : z->to;

    *r = (pk_zrange){.rev = z->rev, .offset = z->offset, .count = z->count};
    if (z->kind == Z_RANK) {
        r->kind = PK_ZRANGE_RANK;
        r->offset = 0;
        r->count = -1;
        if (!pk_arg_i64(z->from, &r->start) || !pk_arg_i64(z->to, &r->stop))
            return PK_EINVAL;
        return PK_OK;
    }
    if (z->kind == Z_SCORE) {
        r->kind = PK_ZRANGE_SCORE;
        if (pk_zbound_parse(lo->ptr, lo->len, &r->smin) != PK_OK ||
            pk_zbound_parse(hi->ptr, hi->len, &r->smax) != PK_OK)
            return PK_ERANGE;
        return PK_OK;
    }
    r->kind = PK_ZRANGE_LEX;
    if (pk_zlex_parse(lo->ptr, lo->len, &r->lmin) != PK_OK ||
        pk_zlex_parse(hi->ptr, hi->len, &r->lmax) != PK_OK)
        return PK_ECORRUPT;
    return PK_OK;
}

static void zrange_error(pk_cmd_ctx *x, int rc)
{
    if (rc == PK_EINVAL)
        pk_reply_notint(x);
    else if (rc == PK_ERANGE)
        pk_reply_error(x->out, "ERR min or max is not a float");
    else if (rc == PK_ECORRUPT)
        pk_reply_error(x->out, "ERR min or max not valid string range item");
    else
        pk_cmd_store_error(x, rc);
}

static void zrange_generic(pk_cmd_ctx *x, const zrange_spec *z)
{
    zemit e = {x, z->withscores, 0};
    size_t pos, mark;
    pk_zrange r;
    int rc = zrange_parse(z, &r);

    if (rc != PK_OK) {
        zrange_error(x, rc);
        return;
    }
    TXN_OR_RETURN(x, t);
    mark = pk_obuf_pending(x->out);
    pk_reply_defer(x->out, &pos);
    rc = pk_zset_range(t, PK_KEY(x, 1), &r, NOW(x), emit_member, &e);
    if (rc == PK_OK) {
        pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY,
                              e.n * (z->withscores && x->proto == 2 ? 2 : 1));
        return;
    }
    x->out->len = x->out->head + mark; /* drop the deferred header */
    zrange_error(x, rc == PK_EINVAL ? PK_ERANGE : rc);
}

/* allow bits for zrange_options. */
#define ZO_WITHSCORES 1
#define ZO_BY 2
#define ZO_LIMIT 4

/* Parses the options after "key a b" from argv[i] on. */
static int zrange_options(pk_cmd_ctx *x, int i, zrange_spec *z, int allow)
{
    for (; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        if (pk_arg_eq(a, "withscores") && (allow & ZO_WITHSCORES))
            z->withscores = 1;
        else if (pk_arg_eq(a, "byscore") && (allow & ZO_BY) &&
                 z->kind == Z_RANK)
            z->kind = Z_SCORE;
        else if (pk_arg_eq(a, "bylex") && (allow & ZO_BY) && z->kind == Z_RANK)
            z->kind = Z_LEX;
        else if (pk_arg_eq(a, "rev") && (allow & ZO_BY))
            z->rev = 1;
        else if (pk_arg_eq(a, "limit") && (allow & ZO_LIMIT) &&
                 i + 2 < x->argc) {
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
    zrange_cmd(x, Z_RANK, 0, ZO_WITHSCORES | ZO_BY | ZO_LIMIT);
}

void pk_cmd_zrevrange(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_RANK, 1, ZO_WITHSCORES);
}

void pk_cmd_zrangebyscore(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_SCORE, 0, ZO_WITHSCORES | ZO_LIMIT);
}

void pk_cmd_zrevrangebyscore(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_SCORE, 1, ZO_WITHSCORES | ZO_LIMIT);
}

void pk_cmd_zrangebylex(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_LEX, 0, ZO_LIMIT);
}

void pk_cmd_zrevrangebylex(pk_cmd_ctx *x)
{
    zrange_cmd(x, Z_LEX, 1, ZO_LIMIT);
}

/* ZCOUNT, ZLEXCOUNT and ZREMRANGEBY*: "key a b" of one kind. */
static int zrange3(pk_cmd_ctx *x, enum zkind kind, pk_zrange *r)
{
    zrange_spec z = {kind, 0, 0, 0, &x->argv[2], &x->argv[3], 0, -1};
    int rc = zrange_parse(&z, r);

    if (rc != PK_OK)
        zrange_error(x, rc);
    return rc == PK_OK;
}

static void zcount_cmd(pk_cmd_ctx *x, enum zkind kind)
{
    pk_zrange r;
    uint64_t n = 0;
    int rc;

    if (!zrange3(x, kind, &r))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_zset_count(t, PK_KEY(x, 1), &r, NOW(x), &n);
    if (rc != PK_OK)
        zrange_error(x, rc == PK_EINVAL ? PK_ERANGE : rc);
    else
        pk_reply_int(x->out, (int64_t)n);
}

void pk_cmd_zcount(pk_cmd_ctx *x)
{
    zcount_cmd(x, Z_SCORE);
}

void pk_cmd_zlexcount(pk_cmd_ctx *x)
{
    zcount_cmd(x, Z_LEX);
}

static void zremrange_cmd(pk_cmd_ctx *x, enum zkind kind)
{
    pk_zrange r;
    uint64_t n = 0;
    int rc;

    if (!zrange3(x, kind, &r))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_zset_remrange(t, PK_KEY(x, 1), &r, NOW(x), &n);
    if (rc != PK_OK)
        zrange_error(x, rc == PK_EINVAL ? PK_ERANGE : rc);
    else
        pk_reply_int(x->out, (int64_t)n);
}

void pk_cmd_zremrangebyscore(pk_cmd_ctx *x)
{
    zremrange_cmd(x, Z_SCORE);
}

void pk_cmd_zremrangebyrank(pk_cmd_ctx *x)
{
    zremrange_cmd(x, Z_RANK);
}

void pk_cmd_zremrangebylex(pk_cmd_ctx *x)
{
    zremrange_cmd(x, Z_LEX);
}

/* A standalone node checks that keys share a partition (see the top). */
static int same_part(pk_cmd_ctx *x, int first, int last, int also)
{
    uint32_t p;

    if (x->have_part)
        return 1;
    p = pk_cmd_part(x, first);
    for (int i = first + 1; i <= last; i++)
        if (pk_cmd_part(x, i) != p)
            goto cross;
    if (also <= 0 || pk_cmd_part(x, also) == p)
        return 1;
cross:
    pk_reply_error(x->out, "CROSSSLOT Keys in request don't hash to the "
                           "same slot");
    return 0;
}

void pk_cmd_zrangestore(pk_cmd_ctx *x)
{
    zrange_spec z = {Z_RANK, 0, 0, 0, &x->argv[3], &x->argv[4], 0, -1};
    pk_zrange r;
    uint64_t n = 0;
    int rc;

    if (!zrange_options(x, 5, &z, ZO_BY | ZO_LIMIT))
        return;
    if ((rc = zrange_parse(&z, &r)) != PK_OK) {
        zrange_error(x, rc);
        return;
    }
    if (!same_part(x, 1, 2, 0))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_zset_rangestore(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len, &r,
                            NOW(x), &n);
    if (rc != PK_OK)
        zrange_error(x, rc == PK_EINVAL ? PK_ERANGE : rc);
    else
        pk_reply_int(x->out, (int64_t)n);
}

void pk_cmd_zincrby(pk_cmd_ctx *x)
{
    pk_slice m = {x->argv[3].ptr, x->argv[3].len};
    pk_zadd_result res;
    double by;
    int rc;

    if (!pk_arg_double(&x->argv[2], &by)) {
        pk_reply_error(x->out, "ERR value is not a valid float");
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_zset_add(t, PK_KEY(x, 1), PK_ZADD_INCR, 1, &by, &m, NOW(x), &res);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_double(x->out, x->proto, res.score);
}

static void zrank_cmd(pk_cmd_ctx *x, int rev)
{
    TXN_OR_RETURN(x, t);
    uint64_t rank;
    double score;
    int rc = pk_zset_rank(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len, rev,
                          NOW(x), &rank, &score);

    if (rc == PK_ENOTFOUND)
        pk_reply_null(x->out, x->proto);
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)rank);
}

void pk_cmd_zrank(pk_cmd_ctx *x)
{
    zrank_cmd(x, 0);
}

void pk_cmd_zrevrank(pk_cmd_ctx *x)
{
    zrank_cmd(x, 1);
}

void pk_cmd_zmscore(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t card;
    double s;
    int rc = pk_zset_card(t, PK_KEY(x, 1), NOW(x), &card);

    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return;
    }
    /* The type is checked: only storage errors remain, and they are
     * sticky (the iteration's reply is replaced). */
    pk_reply_array(x->out, (size_t)x->argc - 2);
    for (int i = 2; i < x->argc; i++) {
        rc = pk_zset_score(t, PK_KEY(x, 1), x->argv[i].ptr, x->argv[i].len,
                           NOW(x), &s);
        if (rc == PK_OK)
            pk_reply_double(x->out, x->proto, s);
        else
            pk_reply_null(x->out, x->proto);
    }
}

/* A parsed ZUNION/ZINTER/ZDIFF[STORE]/ZINTERCARD. */
typedef struct zop_args {
    pk_zop op;
    pk_slice *keys;  /* owned */
    double *weights; /* owned, or NULL */
    int withscores;
    int first; /* argv index of the first input key */
} zop_args;

/*
 * Parses "numkeys key... options" at argv[ni]; the order of checks and
 * the errors are Redis's (input types are checked before options).
 */
static int zop_parse(pk_cmd_ctx *x, pk_txn *t, int ni, int store, int card,
                     zop_args *a)
{
    int64_t n, limit;
    int i;

    if (!pk_arg_i64(&x->argv[ni], &n)) {
        pk_reply_notint(x);
        return 0;
    }
    if (n < 1) {
        pk_reply_errorf(x->out,
                        "ERR at least 1 input key is needed for '%s' command",
                        x->c->last_cmd);
        return 0;
    }
    if (n > x->argc - ni - 1) {
        pk_reply_syntax(x);
        return 0;
    }
    if (!same_part(x, ni + 1, ni + (int)n, store ? 1 : 0))
        return 0;
    a->first = ni + 1;
    a->op.n = (size_t)n;
    a->keys = malloc(a->op.n * sizeof(*a->keys));
    if (a->keys == NULL) {
        pk_cmd_store_error(x, PK_ENOMEM);
        return 0;
    }
    for (size_t k = 0; k < a->op.n; k++)
        a->keys[k] = (pk_slice){x->argv[a->first + (int)k].ptr,
                                x->argv[a->first + (int)k].len};
    a->op.keys = a->keys;
    int rc = pk_zset_check_inputs(t, pk_cmd_part(x, a->first), a->op.n, a->keys,
                                  NOW(x));
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return 0;
    }
    for (i = ni + 1 + (int)n; i < x->argc; i++) {
        int left = x->argc - i;
        const pk_arg *o = &x->argv[i];
        if (a->op.op != PK_ZOP_DIFF && !card && left >= (int)n + 1 &&
            pk_arg_eq(o, "weights")) {
            if (a->weights == NULL)
                a->weights = malloc(a->op.n * sizeof(*a->weights));
            if (a->weights == NULL) {
                pk_cmd_store_error(x, PK_ENOMEM);
                return 0;
            }
            for (size_t k = 0; k < a->op.n; k++) {
                if (!pk_arg_double(&x->argv[i + 1 + (int)k], &a->weights[k])) {
                    pk_reply_error(x->out, "ERR weight value is not a float");
                    return 0;
                }
            }
            a->op.weights = a->weights;
            i += (int)n;
        } else if (a->op.op != PK_ZOP_DIFF && !card && left >= 2 &&
                   pk_arg_eq(o, "aggregate")) {
            const pk_arg *g = &x->argv[++i];
            if (pk_arg_eq(g, "sum"))
                a->op.agg = PK_ZAGG_SUM;
            else if (pk_arg_eq(g, "min"))
                a->op.agg = PK_ZAGG_MIN;
            else if (pk_arg_eq(g, "max"))
                a->op.agg = PK_ZAGG_MAX;
            else {
                pk_reply_syntax(x);
                return 0;
            }
        } else if (!store && !card && pk_arg_eq(o, "withscores")) {
            a->withscores = 1;
        } else if (card && left >= 2 && pk_arg_eq(o, "limit")) {
            if (!pk_arg_i64(&x->argv[++i], &limit) || limit < 0) {
                pk_reply_error(x->out, "ERR LIMIT can't be negative");
                return 0;
            }
            a->op.limit = (uint64_t)limit;
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    return 1;
}

static void zop_cmd(pk_cmd_ctx *x, pk_zop_kind kind, int store, int card)
{
    zop_args a = {.op = {.op = kind}};
    zemit e = {x, 0, 0};
    uint64_t n = 0;
    size_t pos, mark;
    int rc;

    TXN_OR_RETURN(x, t);
    if (!zop_parse(x, t, store ? 2 : 1, store, card, &a))
        goto out;
    if (store) {
        rc = pk_zset_combine_store(t, PK_KEY(x, 1), &a.op, NOW(x), &n);
    } else if (card) {
        rc =
            pk_zset_combine_card(t, pk_cmd_part(x, a.first), &a.op, NOW(x), &n);
    } else {
        e.withscores = a.withscores;
        mark = pk_obuf_pending(x->out);
        pk_reply_defer(x->out, &pos);
        rc = pk_zset_combine(t, pk_cmd_part(x, a.first), &a.op, NOW(x),
                             emit_member, &e);
        if (rc == PK_OK)
            pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY,
                                  e.n *
                                      (e.withscores && x->proto == 2 ? 2 : 1));
        else
            x->out->len = x->out->head + mark;
    }
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (store || card)
        pk_reply_int(x->out, (int64_t)n);
out:
    free(a.keys);
    free(a.weights);
}

void pk_cmd_zunion(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_UNION, 0, 0);
}

void pk_cmd_zinter(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_INTER, 0, 0);
}

void pk_cmd_zdiff(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_DIFF, 0, 0);
}

void pk_cmd_zunionstore(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_UNION, 1, 0);
}

void pk_cmd_zinterstore(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_INTER, 1, 0);
}

void pk_cmd_zdiffstore(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_DIFF, 1, 0);
}

void pk_cmd_zintercard(pk_cmd_ctx *x)
{
    zop_cmd(x, PK_ZOP_INTER, 0, 1);
}

int pk_cmd_keys_num1(int argc, const pk_arg *argv, pk_keyrun *r)
{
    return pk_cmd_keys_numkeys(argc, argv, 1, r);
}

int pk_cmd_keys_dest_num2(int argc, const pk_arg *argv, pk_keyrun *r)
{
    if (argc < 3 || !pk_cmd_keys_numkeys(argc, argv, 2, &r[1]))
        return 0;
    r[0] = (pk_keyrun){1, 1, 1};
    return 2;
}

/* ZRANDMEMBER's picks, streamed: RESP3 nests each pair WITHSCORES. */
typedef struct zrand {
    pk_cmd_ctx *x;
    int with;
} zrand;

static int zrand_emit(void *ctx, pk_slice member, double score)
{
    zrand *z = ctx;

    if (z->with && z->x->proto == 3)
        pk_reply_array(z->x->out, 2);
    pk_reply_bulk(z->x->out, member.ptr, member.len);
    if (z->with)
        pk_reply_double(z->x->out, z->x->proto, score);
    return 0;
}

void pk_cmd_zrandmember(pk_cmd_ctx *x)
{
    int64_t count = 1;
    zrand z = {x, x->argc == 4};
    uint64_t card;
    int rc;

    if (x->argc >= 3 && !pk_cmd_rand_count(x, "withscores", &count))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_zset_card(t, PK_KEY(x, 1), NOW(x), &card);
    if (rc == PK_OK && pk_cmd_rand_head(x, card, count, z.with))
        rc = pk_zset_random(t, PK_KEY(x, 1),
                            (uint64_t)(count < 0 ? -count : count), count < 0,
                            pk_cmd_rand_seed(x), NOW(x), zrand_emit, &z);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
}

typedef struct zscan_out {
    pk_obuf items;
    size_t n;
} zscan_out;

static int zscan_emit(void *ctx, pk_slice member, double score)
{
    zscan_out *o = ctx;

    pk_reply_bulk(&o->items, member.ptr, member.len);
    pk_reply_double(&o->items, 2, score); /* a bulk string, as Redis */
    o->n += 2;
    return 0;
}

void pk_cmd_zscan(pk_cmd_ctx *x)
{
    pk_scan_opts o;
    uint64_t cursor, next = 0;
    zscan_out so = {.n = 0};
    int rc;

    if (!pk_cmd_scan_args(x, &cursor, &o))
        return;
    TXN_OR_RETURN(x, t);
    pk_obuf_init(&so.items);
    rc = pk_zset_scan(t, PK_KEY(x, 1), cursor, &o, NOW(x), zscan_emit, &so,
                      &next);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_cmd_scan_reply(x, next, &so.items, so.n);
    pk_obuf_free(&so.items);
}

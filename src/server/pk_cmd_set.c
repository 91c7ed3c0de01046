/*
 * Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
 * SRANDMEMBER SMOVE SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF
 * SDIFFSTORE SSCAN.  Argument errors are replied before the store is
 * touched, with Redis 7.0's texts; routing has already checked that the
 * keys of the multi-key forms share a slot.  Results of unknown length
 * are written to a side buffer first, so an error found half-way replies
 * just the error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_set.h"

/*
 * SRANDMEMBER with a negative count repeats members, so its reply is as
 * long as the client asks; Redis builds it whatever the size.  partkv
 * refuses counts whose reply alone would take hundreds of megabytes.
 */
#define SRAND_REPEAT_MAX (1ll << 24)

/* argv[from..argc) as slices; NULL when out of memory. */
static pk_slice *args(pk_cmd_ctx *x, int from, size_t *n)
{
    pk_slice *s;

    *n = (size_t)(x->argc - from);
    s = malloc((*n ? *n : 1) * sizeof(*s));
    for (size_t i = 0; s && i < *n; i++)
        s[i] =
            (pk_slice){x->argv[from + (int)i].ptr, x->argv[from + (int)i].len};
    return s;
}

/* Members gathered into a side buffer, counted. */
typedef struct gather {
    pk_obuf buf;
    size_t n;
} gather;

static int gather_cb(void *ctx, pk_slice mem)
{
    gather *g = ctx;

    g->n++;
    return pk_reply_bulk(&g->buf, mem.ptr, mem.len);
}

/* Replies the gathered members as an aggregate of kind, or rc's error. */
static void gather_reply(pk_cmd_ctx *x, gather *g, int rc, int set)
{
    if (rc == PK_OK && g->buf.err)
        rc = g->buf.err;
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else {
        if (set)
            pk_reply_set(x->out, x->proto, g->n);
        else
            pk_reply_array(x->out, g->n);
        if (g->n)
            pk_obuf_append(x->out, g->buf.data + g->buf.head,
                           pk_obuf_pending(&g->buf));
    }
    pk_obuf_free(&g->buf);
}

void pk_cmd_sadd(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    uint64_t added = 0;
    pk_slice *m = args(x, 2, &n);
    int rc = m ? pk_set_add(t, PK_KEY(x, 1), n, m, NOW(x), &added) : PK_ENOMEM;

    free(m);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)added);
}

void pk_cmd_srem(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    uint64_t removed = 0;
    pk_slice *m = args(x, 2, &n);
    int rc =
        m ? pk_set_rem(t, PK_KEY(x, 1), n, m, NOW(x), &removed) : PK_ENOMEM;

    free(m);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)removed);
}

void pk_cmd_scard(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t card;
    int rc = pk_set_card(t, PK_KEY(x, 1), NOW(x), &card);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)card);
}

/* SISMEMBER (one reply) and SMISMEMBER (an array). */
static void ismember(pk_cmd_ctx *x, int multi)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    pk_slice *m = args(x, 2, &n);
    uint8_t *is = malloc(n);
    int rc = m && is ? pk_set_ismember(t, PK_KEY(x, 1), n, m, NOW(x), is)
                     : PK_ENOMEM;

    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else if (!multi) {
        pk_reply_int(x->out, is[0]);
    } else {
        pk_reply_array(x->out, n);
        for (size_t i = 0; i < n; i++)
            pk_reply_int(x->out, is[i]);
    }
    free(m);
    free(is);
}

void pk_cmd_sismember(pk_cmd_ctx *x)
{
    ismember(x, 0);
}

void pk_cmd_smismember(pk_cmd_ctx *x)
{
    ismember(x, 1);
}

void pk_cmd_smembers(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    gather g = {.n = 0};
    int rc;

    pk_obuf_init(&g.buf);
    rc = pk_set_each(t, PK_KEY(x, 1), NOW(x), gather_cb, &g);
    gather_reply(x, &g, rc, 1);
}

void pk_cmd_smove(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    int moved = 0, rc = PK_OK;
    pk_slice mem = {x->argv[3].ptr, x->argv[3].len};
    uint8_t had = 0;

    /* A member the destination holds already changes only the source;
     * Redis then leaves a WATCH on the destination intact. */
    if (x->srv->nwatched)
        rc = pk_set_ismember(t, PK_KEY(x, 2), 1, &mem, NOW(x), &had);
    if (rc == PK_OK)
        rc = pk_set_move(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                         x->argv[3].ptr, x->argv[3].len, NOW(x), &moved);
    if (rc == PK_OK && had)
        x->touch_arg = 1;

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, moved);
}

/* The single-member forms of SPOP / SRANDMEMBER: a bulk, or nil. */
typedef struct one {
    pk_cmd_ctx *x;
    int got;
} one;

static int one_cb(void *ctx, pk_slice mem)
{
    one *o = ctx;

    o->got = 1;
    return pk_reply_bulk(o->x->out, mem.ptr, mem.len);
}

void pk_cmd_spop(pk_cmd_ctx *x)
{
    int64_t count = 1;
    uint64_t n = 0;
    one o = {x, 0};
    gather g = {.n = 0};
    int rc;

    if (x->argc > 3) {
        pk_reply_syntax(x);
        return;
    }
    if (x->argc == 3 && (!pk_arg_i64(&x->argv[2], &count) || count < 0)) {
        pk_reply_error(x->out, "ERR value is out of range, must be positive");
        return;
    }
    TXN_OR_RETURN(x, t);
    if (x->argc == 2) {
        rc = pk_set_pop(t, PK_KEY(x, 1), 1, pk_cmd_rand_seed(x), NOW(x), one_cb,
                        &o, &n);
        if (rc != PK_OK)
            pk_cmd_store_error(x, rc);
        else if (!o.got)
            pk_reply_null(x->out, x->proto);
        return;
    }
    pk_obuf_init(&g.buf);
    rc = pk_set_pop(t, PK_KEY(x, 1), (uint64_t)count, pk_cmd_rand_seed(x),
                    NOW(x), gather_cb, &g, &n);
    gather_reply(x, &g, rc, 1);
}

void pk_cmd_srandmember(pk_cmd_ctx *x)
{
    int64_t count = 1;
    one o = {x, 0};
    gather g = {.n = 0};
    int rc, repeat;

    if (x->argc > 3) {
        pk_reply_syntax(x);
        return;
    }
    if (x->argc == 3 && !pk_arg_i64(&x->argv[2], &count)) {
        pk_reply_notint(x);
        return;
    }
    if (count == INT64_MIN) {
        pk_reply_error(x->out, "ERR value is out of range, value must between "
                               "-9223372036854775807 and "
                               "9223372036854775807");
        return;
    }
    if (count < -SRAND_REPEAT_MAX) {
        pk_reply_errorf(x->out,
                        "ERR value is out of range, partkv repeats at most "
                        "%lld members",
                        (long long)SRAND_REPEAT_MAX);
        return;
    }
    TXN_OR_RETURN(x, t);
    repeat = count < 0;
    if (x->argc == 2) {
        rc = pk_set_random(t, PK_KEY(x, 1), 1, 0, pk_cmd_rand_seed(x), NOW(x),
                           one_cb, &o);
        if (rc != PK_OK)
            pk_cmd_store_error(x, rc);
        else if (!o.got)
            pk_reply_null(x->out, x->proto);
        return;
    }
    pk_obuf_init(&g.buf);
    rc = pk_set_random(t, PK_KEY(x, 1), (uint64_t)(repeat ? -count : count),
                       repeat, pk_cmd_rand_seed(x), NOW(x), gather_cb, &g);
    gather_reply(x, &g, rc, 0);
}

/* SINTER / SUNION / SDIFF: keys from argv[1]. */
static void combine(pk_cmd_ctx *x, pk_set_op op)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    uint64_t card;
    pk_slice *k = args(x, 1, &n);
    gather g = {.n = 0};
    int rc;

    pk_obuf_init(&g.buf);
    rc = k ? pk_set_combine(t, pk_cmd_part(x, 1), op, n, k, 0, NOW(x),
                            gather_cb, &g, &card)
           : PK_ENOMEM;
    free(k);
    gather_reply(x, &g, rc, 1);
}

/* The STORE forms: dst at argv[1], keys from argv[2]. */
static void store(pk_cmd_ctx *x, pk_set_op op)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    uint64_t card = 0;
    pk_slice *k = args(x, 2, &n);
    int rc = k ? pk_set_store(t, pk_cmd_part(x, 1), op, x->argv[1].ptr,
                              x->argv[1].len, n, k, NOW(x), &card)
               : PK_ENOMEM;

    free(k);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)card);
}

void pk_cmd_sinter(pk_cmd_ctx *x)
{
    combine(x, PK_SETOP_INTER);
}

void pk_cmd_sunion(pk_cmd_ctx *x)
{
    combine(x, PK_SETOP_UNION);
}

void pk_cmd_sdiff(pk_cmd_ctx *x)
{
    combine(x, PK_SETOP_DIFF);
}

void pk_cmd_sinterstore(pk_cmd_ctx *x)
{
    store(x, PK_SETOP_INTER);
}

void pk_cmd_sunionstore(pk_cmd_ctx *x)
{
    store(x, PK_SETOP_UNION);
}

void pk_cmd_sdiffstore(pk_cmd_ctx *x)
{
    store(x, PK_SETOP_DIFF);
}

int pk_cmd_sintercard_keys(int argc, const pk_arg *argv, pk_keyrun *r)
{
    return pk_cmd_keys_numkeys(argc, argv, 1, r);
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit] */
void pk_cmd_sintercard(pk_cmd_ctx *x)
{
    int64_t nk, limit = 0;
    uint64_t card = 0;
    pk_slice *k;
    size_t n;
    int rc;

    if (!pk_arg_i64(&x->argv[1], &nk) || nk < 1) {
        pk_reply_error(x->out, "ERR numkeys should be greater than 0");
        return;
    }
    if (nk > x->argc - 2) {
        pk_reply_error(x->out, "ERR Number of keys can't be greater than "
                               "number of args");
        return;
    }
    for (int i = 2 + (int)nk; i < x->argc; i++) {
        if (pk_arg_eq(&x->argv[i], "limit") && i + 1 < x->argc) {
            if (!pk_arg_i64(&x->argv[++i], &limit) || limit < 0) {
                pk_reply_error(x->out, "ERR LIMIT can't be negative");
                return;
            }
        } else {
            pk_reply_syntax(x);
            return;
        }
    }
    TXN_OR_RETURN(x, t);
    n = (size_t)nk;
    k = malloc(n * sizeof(*k));
    for (size_t i = 0; k && i < n; i++)
        k[i] = (pk_slice){x->argv[2 + i].ptr, x->argv[2 + i].len};
    rc = k ? pk_set_combine(t, pk_cmd_part(x, 2), PK_SETOP_INTER, n, k,
                            (uint64_t)limit, NOW(x), NULL, NULL, &card)
           : PK_ENOMEM;
    free(k);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)card);
}

/* Redis's cursor parsing: strtoul over the whole argument. */
static int parse_cursor(const pk_arg *a, uint64_t *cur)
{
    char buf[32], *end;
    unsigned long long v;

    if (a->len >= sizeof(buf))
        return 0;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    if (a->len > 0 && (buf[0] == ' ' || (buf[0] >= '\t' && buf[0] <= '\r')))
        return 0;
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (*end != '\0' || errno == ERANGE)
        return 0;
    *cur = v;
    return 1;
}

/* SSCAN key cursor [MATCH pattern] [COUNT count] */
void pk_cmd_sscan(pk_cmd_ctx *x)
{
    pk_scan_opts so = {NULL, 0, 10, PK_TYPE_NONE, NULL, NULL};
    pk_sscan_opts o;
    uint64_t cursor, next = 0, card;
    gather g = {.n = 0};
    char cur[24];
    int rc;

    if (!parse_cursor(&x->argv[2], &cursor)) {
        pk_reply_error(x->out, "ERR invalid cursor");
        return;
    }
    TXN_OR_RETURN(x, t);
    /* As Redis: a missing key answers an empty scan before the options
     * are looked at. */
    rc = pk_set_card(t, PK_KEY(x, 1), NOW(x), &card);
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return;
    }
    for (int i = 3; card > 0 && i < x->argc; i += 2) {
        int taken = pk_cmd_scan_opt(x, i, &so);
        if (taken <= 0) {
            if (taken == 0)
                pk_reply_syntax(x);
            return;
        }
    }
    o = (pk_sscan_opts){so.match, so.match_len, so.count};
    pk_obuf_init(&g.buf);
    if (card > 0)
        rc = pk_set_scan(t, PK_KEY(x, 1), cursor, &o, NOW(x), gather_cb, &g,
                         &next);
    if (rc == PK_OK && !g.buf.err) {
        snprintf(cur, sizeof(cur), "%llu", (unsigned long long)next);
        pk_reply_array(x->out, 2);
        pk_reply_bulk_str(x->out, cur);
    }
    gather_reply(x, &g, rc, 0);
}

/*
 * Hash commands: HSET (HMSET) HSETNX HGET HMGET HDEL HGETALL HKEYS HVALS
 * HLEN HEXISTS HSTRLEN HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN, and the
 * argument parsing and random picks HSCAN/ZSCAN and HRANDFIELD/ZRANDMEMBER
 * share (pk_cmd_scan_args, pk_cmd_rand_*).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"

/* Field/value argument slices, from argv[from] on with a stride. */
static pk_slice *slices(pk_cmd_ctx *x, int from, int stride, size_t *n)
{
    pk_slice *s;

    *n = (size_t)(x->argc - from + stride - 1) / (size_t)stride;
    s = malloc((*n ? *n : 1) * sizeof(*s));
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < *n; i++) {
        s[i].ptr = x->argv[from + (int)i * stride].ptr;
        s[i].len = x->argv[from + (int)i * stride].len;
    }
    return s;
}

void pk_cmd_hset(pk_cmd_ctx *x)
{
    pk_slice *f, *v;
    size_t n, nv;
    uint64_t added = 0;
    int rc;

    if (x->argc % 2 != 0) {
        pk_reply_errorf(x->out,
                        "ERR wrong number of arguments for '%s' command",
                        x->c->last_cmd);
        return;
    }
    TXN_OR_RETURN(x, t);
    f = slices(x, 2, 2, &n);
    v = slices(x, 3, 2, &nv);
    if (f == NULL || v == NULL)
        rc = PK_ENOMEM;
    else
        rc = pk_hmap_set(t, PK_KEY(x, 1), n, f, v, NOW(x), &added);
    free(f);
    free(v);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (strcmp(x->c->last_cmd, "hmset") == 0)
        pk_reply_simple(x->out, "OK");
    else
        pk_reply_int(x->out, (int64_t)added);
}

void pk_cmd_hget(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice v;
    int rc = pk_hmap_get(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                         NOW(x), &v);

    pk_reply_value(x, rc, v);
}

void pk_cmd_hmget(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    pk_slice *f = slices(x, 2, 1, &n);
    pk_slice *v = malloc(n * sizeof(*v));
    int rc =
        f && v ? pk_hmap_mget(t, PK_KEY(x, 1), n, f, NOW(x), v) : PK_ENOMEM;

    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else {
        pk_reply_array(x->out, n);
        for (size_t i = 0; i < n; i++)
            pk_reply_slice(x, v[i]);
    }
    free(f);
    free(v);
}

void pk_cmd_hdel(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    size_t n;
    uint64_t removed = 0;
    pk_slice *f = slices(x, 2, 1, &n);
    int rc =
        f ? pk_hmap_del(t, PK_KEY(x, 1), n, f, NOW(x), &removed) : PK_ENOMEM;

    free(f);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)removed);
}

/* HGETALL, HKEYS, HVALS: which halves of each pair go out. */
enum { H_FIELD = 1, H_VALUE = 2 };

typedef struct hemit {
    pk_cmd_ctx *x;
    int what;
} hemit;

static int emit_pair(void *ctx, pk_slice field, pk_slice val)
{
    hemit *e = ctx;

    if (e->what & H_FIELD)
        pk_reply_bulk(e->x->out, field.ptr, field.len);
    if (e->what & H_VALUE)
        pk_reply_bulk(e->x->out, val.ptr, val.len);
    return 0;
}

static void hash_all(pk_cmd_ctx *x, int what)
{
    TXN_OR_RETURN(x, t);
    hemit e = {x, what};
    uint64_t len;
    int rc = pk_hmap_len(t, PK_KEY(x, 1), NOW(x), &len);

    if (rc == PK_OK) {
        if (what == (H_FIELD | H_VALUE))
            pk_reply_map(x->out, x->proto, len);
        else
            pk_reply_array(x->out, len);
        rc = pk_hmap_each(t, PK_KEY(x, 1), NOW(x), emit_pair, &e);
    }
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
}

void pk_cmd_hgetall(pk_cmd_ctx *x)
{
    hash_all(x, H_FIELD | H_VALUE);
}

void pk_cmd_hkeys(pk_cmd_ctx *x)
{
    hash_all(x, H_FIELD);
}

void pk_cmd_hvals(pk_cmd_ctx *x)
{
    hash_all(x, H_VALUE);
}

void pk_cmd_hlen(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t len;
    int rc = pk_hmap_len(t, PK_KEY(x, 1), NOW(x), &len);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)len);
}

void pk_cmd_hexists(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    int e = 0;
    int rc = pk_hmap_exists(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                            NOW(x), &e);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, e);
}

void pk_cmd_hincrby(pk_cmd_ctx *x)
{
    int64_t by, v;
    int rc;

    if (!pk_arg_i64(&x->argv[3], &by)) {
        pk_reply_notint(x);
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_hmap_incrby(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len, by,
                        NOW(x), &v);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, v);
}

void pk_cmd_hsetnx(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    int set = 0;
    int rc = pk_hmap_setnx(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                           x->argv[3].ptr, x->argv[3].len, NOW(x), &set);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, set);
}

void pk_cmd_hstrlen(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice v;
    int rc = pk_hmap_get(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                         NOW(x), &v);

    if (rc == PK_ENOTFOUND)
        pk_reply_int(x->out, 0);
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)v.len);
}

void pk_cmd_hincrbyfloat(pk_cmd_ctx *x)
{
    long double by;
    pk_slice v;
    int rc;

    if (!pk_hmap_parse_ld(x->argv[3].ptr, x->argv[3].len, &by)) {
        pk_reply_error(x->out, "ERR value is not a valid float");
        return;
    }
    if (isnan(by) || isinf(by)) {
        pk_reply_error(x->out, "ERR value is NaN or Infinity");
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_hmap_incrbyfloat(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                             by, NOW(x), &v);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_bulk(x->out, v.ptr, v.len);
}

int pk_cmd_scan_args(pk_cmd_ctx *x, uint64_t *cursor, pk_scan_opts *o)
{
    const pk_arg *c = &x->argv[2];
    uint64_t v = 0;

    /* Redis reads the cursor with strtoul: digits, at most 2^64 - 1. */
    for (size_t i = 0; i < c->len; i++) {
        unsigned d = (unsigned)(c->ptr[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            pk_reply_error(x->out, "ERR invalid cursor");
            return 0;
        }
        v = v * 10 + d;
    }
    if (c->len == 0) {
        pk_reply_error(x->out, "ERR invalid cursor");
        return 0;
    }
    *o = (pk_scan_opts){NULL, 0, 10, PK_TYPE_NONE, NULL, NULL};
    for (int i = 3; i < x->argc; i += 2) {
        int taken = pk_cmd_scan_opt(x, i, o);
        if (taken <= 0) {
            if (taken == 0)
                pk_reply_syntax(x);
            return 0;
        }
    }
    *cursor = v;
    return 1;
}

void pk_cmd_scan_reply(pk_cmd_ctx *x, uint64_t next, const pk_obuf *items,
                       size_t n)
{
    char cur[24];

    snprintf(cur, sizeof(cur), "%llu", (unsigned long long)next);
    pk_reply_array(x->out, 2);
    pk_reply_bulk_str(x->out, cur);
    pk_reply_array(x->out, n);
    if (n)
        pk_obuf_append(x->out, items->data + items->head,
                       pk_obuf_pending(items));
}

typedef struct hscan_out {
    pk_obuf items;
    size_t n;
} hscan_out;

static int hscan_emit(void *ctx, pk_slice field, pk_slice val)
{
    hscan_out *o = ctx;

    pk_reply_bulk(&o->items, field.ptr, field.len);
    pk_reply_bulk(&o->items, val.ptr, val.len);
    o->n += 2;
    return 0;
}

void pk_cmd_hscan(pk_cmd_ctx *x)
{
    pk_scan_opts o;
    uint64_t cursor, next = 0;
    hscan_out so = {.n = 0};
    int rc;

    if (!pk_cmd_scan_args(x, &cursor, &o))
        return;
    TXN_OR_RETURN(x, t);
    /* Items are collected aside: the cursor comes first in the reply. */
    pk_obuf_init(&so.items);
    rc = pk_hmap_scan(t, PK_KEY(x, 1), cursor, &o, NOW(x), hscan_emit, &so,
                      &next);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_cmd_scan_reply(x, next, &so.items, so.n);
    pk_obuf_free(&so.items);
}

int pk_cmd_rand_count(pk_cmd_ctx *x, const char *with, int64_t *count)
{
    int64_t l;

    if (!pk_arg_i64(&x->argv[2], &l)) {
        pk_reply_notint(x);
        return 0;
    }
    if (l < -INT64_MAX) {
        pk_reply_error(x->out, "ERR value is out of range, value must between "
                               "-9223372036854775807 and "
                               "9223372036854775807");
        return 0;
    }
    if (x->argc > 4 || (x->argc == 4 && !pk_arg_eq(&x->argv[3], with))) {
        pk_reply_syntax(x);
        return 0;
    }
    /* Redis refuses what would overflow count * 2; partkv also refuses a
     * repeated pick longer than PK_CMD_RAND_MAX, which Redis would try to
     * answer until its memory ran out. */
    if ((x->argc == 4 && (l < -INT64_MAX / 2 || l > INT64_MAX / 2)) ||
        l < -PK_CMD_RAND_MAX) {
        pk_reply_error(x->out, "ERR value is out of range");
        return 0;
    }
    *count = l;
    return 1;
}

uint64_t pk_cmd_rand_seed(const pk_cmd_ctx *x)
{
    /* The store mixes it (splitmix64), so the command counter, clock and
     * connection make each call's draws differ. */
    return x->srv->total_cmds * 0x9e3779b97f4a7c15ull ^ x->srv->now_ms ^
           (x->c->id << 40);
}

int pk_cmd_rand_head(pk_cmd_ctx *x, uint64_t size, int64_t count, int with)
{
    uint64_t k;

    if (size == 0 || count == 0) {
        if (x->argc == 2)
            pk_reply_null(x->out, x->proto);
        else
            pk_reply_array(x->out, 0);
        return 0;
    }
    if (x->argc == 2)
        return 1; /* one bulk, no header */
    k = count < 0                ? (uint64_t)-count
        : (uint64_t)count < size ? (uint64_t)count
                                 : size;
    pk_reply_array(x->out, with && x->proto == 2 ? 2 * k : k);
    return 1;
}

/* HRANDFIELD's picks, streamed: RESP3 nests each pair WITHVALUES. */
typedef struct hrand {
    pk_cmd_ctx *x;
    int with;
} hrand;

static int hrand_emit(void *ctx, pk_slice field, pk_slice val)
{
    hrand *h = ctx;

    if (h->with && h->x->proto == 3)
        pk_reply_array(h->x->out, 2);
    pk_reply_bulk(h->x->out, field.ptr, field.len);
    if (h->with)
        pk_reply_bulk(h->x->out, val.ptr, val.len);
    return 0;
}

void pk_cmd_hrandfield(pk_cmd_ctx *x)
{
    int64_t count = 1;
    hrand h = {x, x->argc == 4};
    uint64_t len;
    int rc;

    if (x->argc >= 3 && !pk_cmd_rand_count(x, "withvalues", &count))
        return;
    TXN_OR_RETURN(x, t);
    rc = pk_hmap_len(t, PK_KEY(x, 1), NOW(x), &len);
    if (rc == PK_OK && pk_cmd_rand_head(x, len, count, h.with))
        rc = pk_hmap_random(t, PK_KEY(x, 1),
                            (uint64_t)(count < 0 ? -count : count), count < 0,
                            pk_cmd_rand_seed(x), NOW(x), hrand_emit, &h);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
}

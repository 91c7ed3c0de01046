/* Hash commands: HSET (HMSET) HGET HMGET HDEL HGETALL HLEN HEXISTS HINCRBY */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_hmap.h"

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

static int emit_pair(void *ctx, pk_slice field, pk_slice val)
{
    pk_cmd_ctx *x = ctx;

    pk_reply_bulk(x->out, field.ptr, field.len);
    pk_reply_bulk(x->out, val.ptr, val.len);
    return 0;
}

void pk_cmd_hgetall(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t len;
    int rc = pk_hmap_len(t, PK_KEY(x, 1), NOW(x), &len);

    if (rc == PK_OK) {
        pk_reply_map(x->out, x->proto, len);
        rc = pk_hmap_each(t, PK_KEY(x, 1), NOW(x), emit_pair, x);
    }
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
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

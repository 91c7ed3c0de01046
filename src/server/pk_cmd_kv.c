/*
 * Generic key commands and the plainer string ones: GET GETDEL MGET MSET
 * DEL EXISTS INCR INCRBY DECR DECRBY APPEND STRLEN EXPIRE PEXPIRE EXPIREAT
 * PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME PERSIST TYPE (SET and the other
 * string commands: pk_cmd_str.c).  Each maps its arguments to one or more
 * store calls in the iteration's transaction (pk_srv_txn).
 */
#include <stdint.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "server/pk_hotread.h"
#include "store/pk_key.h"
#include "store/pk_str.h"

void pk_cmd_get(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice v, key = {x->argv[1].ptr, x->argv[1].len};
    size_t out0 = pk_obuf_pending(x->out);
    uint64_t h = 0;
    int rc;

    if (x->srv->hotread && pk_hotread_cached(x, t, key, &h))
        return;
    rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), &v);
    if (rc == PK_OK)
        x->srv->hits++;
    else if (rc == PK_ENOTFOUND)
        x->srv->misses++;
    pk_reply_value(x, rc, v);
    if (h)
        pk_hotread_keep(x, t, key, h, rc, out0);
}

void pk_cmd_getdel(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice v;
    int rc = pk_str_getdel(t, PK_KEY(x, 1), NOW(x), &v);

    pk_reply_value(x, rc, v);
}

void pk_cmd_mget(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);

    pk_reply_array(x->out, (size_t)x->argc - 1);
    for (int i = 1; i < x->argc; i++) {
        pk_slice v = {NULL, 0};
        /* MGET answers nil for a key of another type, as Redis does. */
        if (pk_str_get(t, PK_KEY(x, i), NOW(x), &v) != PK_OK)
            v.ptr = NULL;
        pk_reply_slice(x, v);
    }
}

void pk_cmd_mset(pk_cmd_ctx *x)
{
    pk_set_opts o = {0, 0};
    int done, rc = PK_OK;

    if (x->argc % 2 == 0) {
        pk_reply_error(x->out,
                       "ERR wrong number of arguments for 'mset' command");
        return;
    }
    TXN_OR_RETURN(x, t);
    for (int i = 1; i < x->argc && rc == PK_OK; i += 2)
        rc = pk_str_set(t, PK_KEY(x, i), x->argv[i + 1].ptr, x->argv[i + 1].len,
                        &o, NOW(x), &done, NULL);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_del(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    int64_t n = 0;

    for (int i = 1; i < x->argc; i++) {
        int deleted = 0, rc = pk_key_del(t, PK_KEY(x, i), NOW(x), &deleted);
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return;
        }
        n += deleted;
    }
    pk_reply_int(x->out, n);
}

void pk_cmd_exists(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    int64_t n = 0;

    for (int i = 1; i < x->argc; i++) {
        int e = 0, rc = pk_key_exists(t, PK_KEY(x, i), NOW(x), &e);
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return;
        }
        n += e;
    }
    pk_reply_int(x->out, n);
}

static void incr_by(pk_cmd_ctx *x, int64_t by)
{
    TXN_OR_RETURN(x, t);
    int64_t v;
    int rc = pk_str_incrby(t, PK_KEY(x, 1), by, NOW(x), &v);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, v);
}

void pk_cmd_incr(pk_cmd_ctx *x)
{
    incr_by(x, 1);
}

void pk_cmd_decr(pk_cmd_ctx *x)
{
    incr_by(x, -1);
}

void pk_cmd_incrby(pk_cmd_ctx *x)
{
    int64_t by;

    if (!pk_arg_i64(&x->argv[2], &by))
        pk_reply_notint(x);
    else
        incr_by(x, by);
}

void pk_cmd_decrby(pk_cmd_ctx *x)
{
    int64_t by;

    if (!pk_arg_i64(&x->argv[2], &by))
        pk_reply_notint(x);
    else if (by == INT64_MIN)
        pk_reply_error(x->out, "ERR decrement would overflow");
    else
        incr_by(x, -by);
}

void pk_cmd_append(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t len;
    int rc = pk_str_append(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                           NOW(x), &len);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)len);
}

void pk_cmd_strlen(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t len;
    int rc = pk_str_strlen(t, PK_KEY(x, 1), NOW(x), &len);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)len);
}

/*
 * EXPIRE PEXPIRE EXPIREAT PEXPIREAT key amount [NX|XX|GT|LT], as Redis's
 * expireGenericCommand: options first, then the amount; unit is 1000 or 1,
 * abs whether the amount is a Unix time rather than relative to now.
 */
static void expire_generic(pk_cmd_ctx *x, int64_t unit, int abs)
{
    int64_t v, base = abs ? 0 : (int64_t)NOW(x);
    unsigned flags = 0;
    int done = 0, rc;

    for (int i = 3; i < x->argc; i++) {
        if (pk_arg_eq(&x->argv[i], "nx"))
            flags |= PK_EXPIRE_NX;
        else if (pk_arg_eq(&x->argv[i], "xx"))
            flags |= PK_EXPIRE_XX;
        else if (pk_arg_eq(&x->argv[i], "gt"))
            flags |= PK_EXPIRE_GT;
        else if (pk_arg_eq(&x->argv[i], "lt"))
            flags |= PK_EXPIRE_LT;
        else {
            pk_reply_errorf(x->out, "ERR Unsupported option %.*s",
                            (int)x->argv[i].len, x->argv[i].ptr);
            return;
        }
    }
    if ((flags & PK_EXPIRE_NX) && (flags & ~PK_EXPIRE_NX)) {
        pk_reply_error(x->out, "ERR NX and XX, GT or LT options at the same "
                               "time are not compatible");
        return;
    }
    if ((flags & PK_EXPIRE_GT) && (flags & PK_EXPIRE_LT)) {
        pk_reply_error(x->out, "ERR GT and LT options at the same time are "
                               "not compatible");
        return;
    }
    if (!pk_arg_i64(&x->argv[2], &v)) {
        pk_reply_notint(x);
        return;
    }
    /* Negative amounts are allowed (they delete the key); only overflow
     * of the unit conversion or of adding now is an error. */
    if ((unit > 1 && (v > INT64_MAX / unit || v < INT64_MIN / unit)) ||
        v * unit > INT64_MAX - base) {
        const pk_cmd *c = pk_cmd_find(x->argv[0].ptr, x->argv[0].len);
        pk_reply_errorf(x->out, "ERR invalid expire time in '%s' command",
                        c->name);
        return;
    }
    TXN_OR_RETURN(x, t);
    /* A time in the past deletes the key; the store treats when <= now so,
     * and 0 means "no expiry" to it. */
    v = v * unit + base;
    rc = pk_key_expire(t, PK_KEY(x, 1), v > 0 ? (uint64_t)v : 1, flags, NOW(x),
                       &done);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, done);
}

void pk_cmd_expire(pk_cmd_ctx *x)
{
    expire_generic(x, 1000, 0);
}

void pk_cmd_pexpire(pk_cmd_ctx *x)
{
    expire_generic(x, 1, 0);
}

void pk_cmd_expireat(pk_cmd_ctx *x)
{
    expire_generic(x, 1000, 1);
}

void pk_cmd_pexpireat(pk_cmd_ctx *x)
{
    expire_generic(x, 1, 1);
}

/* TTL PTTL EXPIRETIME PEXPIRETIME: unit 1000 or 1; abs for *TIME. */
static void ttl_generic(pk_cmd_ctx *x, int64_t unit, int abs)
{
    TXN_OR_RETURN(x, t);
    int64_t when;
    int rc = pk_key_expiretime(t, PK_KEY(x, 1), NOW(x), &when);

    if (rc == PK_OK && when >= 0 && !abs)
        when = when > (int64_t)NOW(x) ? when - (int64_t)NOW(x) : 0;
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, when < 0 ? when : (when + unit / 2) / unit);
}

void pk_cmd_ttl(pk_cmd_ctx *x)
{
    ttl_generic(x, 1000, 0);
}

void pk_cmd_pttl(pk_cmd_ctx *x)
{
    ttl_generic(x, 1, 0);
}

void pk_cmd_expiretime(pk_cmd_ctx *x)
{
    ttl_generic(x, 1000, 1);
}

void pk_cmd_pexpiretime(pk_cmd_ctx *x)
{
    ttl_generic(x, 1, 1);
}

void pk_cmd_persist(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    int done = 0;
    int rc = pk_key_persist(t, PK_KEY(x, 1), NOW(x), &done);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, done);
}

void pk_cmd_type(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_type type;
    int rc = pk_key_type(t, PK_KEY(x, 1), NOW(x), &type);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_simple(x->out, pk_type_name(type));
}

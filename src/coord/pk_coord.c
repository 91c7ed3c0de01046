/*
 * pk_coord: argument checks shared by every backend, then dispatch through
 * the backend's operations table (pk_coord_int.h).
 *
 * Checking here keeps the backends' contracts identical: an argument one
 * backend refuses is refused by all, always with PK_EINVAL and before any
 * callback could run.
 */
#include <stddef.h>
#include <stdint.h>

#include "coord/pk_coord.h"
#include "coord/pk_coord_int.h"
#include "core/pk_err.h"

static int key_ok(const void *key, size_t key_len)
{
    return key != NULL && key_len >= 1 && key_len <= PK_COORD_KEY_MAX;
}

static int prefix_ok(const void *prefix, size_t prefix_len)
{
    return (prefix != NULL || prefix_len == 0) &&
           prefix_len <= PK_COORD_KEY_MAX;
}

static int value_ok(const void *value, size_t value_len)
{
    return (value != NULL || value_len == 0) && value_len <= PK_COORD_VALUE_MAX;
}

int pk_coord_get(pk_coord *c, const void *key, size_t key_len, pk_coord_cb cb,
                 void *ctx)
{
    if (c == NULL || cb == NULL || !key_ok(key, key_len)) {
        return PK_EINVAL;
    }
    return c->ops->get(c, key, key_len, cb, ctx);
}

int pk_coord_range(pk_coord *c, const void *prefix, size_t prefix_len,
                   pk_coord_cb cb, void *ctx)
{
    if (c == NULL || cb == NULL || !prefix_ok(prefix, prefix_len)) {
        return PK_EINVAL;
    }
    return c->ops->range(c, prefix, prefix_len, cb, ctx);
}

int pk_coord_put(pk_coord *c, const void *key, size_t key_len,
                 const void *value, size_t value_len, uint64_t lease,
                 pk_coord_cb cb, void *ctx)
{
    if (c == NULL || cb == NULL || !key_ok(key, key_len) ||
        !value_ok(value, value_len)) {
        return PK_EINVAL;
    }
    return c->ops->put(c, key, key_len, value, value_len, lease, cb, ctx);
}

int pk_coord_delete(pk_coord *c, const void *key, size_t key_len,
                    pk_coord_cb cb, void *ctx)
{
    if (c == NULL || cb == NULL || !key_ok(key, key_len)) {
        return PK_EINVAL;
    }
    return c->ops->del(c, key, key_len, cb, ctx);
}

int pk_coord_cas(pk_coord *c, const void *key, size_t key_len,
                 uint64_t expected_mod_revision, const void *value,
                 size_t value_len, uint64_t lease, pk_coord_cb cb, void *ctx)
{
    if (c == NULL || cb == NULL || !key_ok(key, key_len) ||
        !value_ok(value, value_len)) {
        return PK_EINVAL;
    }
    return c->ops->cas(c, key, key_len, expected_mod_revision, value, value_len,
                       lease, cb, ctx);
}

int pk_coord_lease_grant(pk_coord *c, uint64_t ttl_ms, pk_coord_cb cb,
                         void *ctx)
{
    if (c == NULL || cb == NULL || ttl_ms == 0 ||
        ttl_ms > PK_COORD_TTL_MAX_MS) {
        return PK_EINVAL;
    }
    return c->ops->lease_grant(c, ttl_ms, cb, ctx);
}

int pk_coord_lease_keepalive(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                             void *ctx)
{
    if (c == NULL || cb == NULL) {
        return PK_EINVAL;
    }
    return c->ops->lease_keepalive(c, lease, cb, ctx);
}

int pk_coord_lease_revoke(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                          void *ctx)
{
    if (c == NULL || cb == NULL) {
        return PK_EINVAL;
    }
    return c->ops->lease_revoke(c, lease, cb, ctx);
}

int pk_coord_watch_start(pk_coord *c, const void *prefix, size_t prefix_len,
                         uint64_t from_revision, pk_coord_watch_cb cb,
                         void *ctx, pk_coord_watch **out)
{
    if (c == NULL || cb == NULL || out == NULL ||
        !prefix_ok(prefix, prefix_len)) {
        return PK_EINVAL;
    }
    return c->ops->watch_start(c, prefix, prefix_len, from_revision, cb, ctx,
                               out);
}

void pk_coord_watch_cancel(pk_coord_watch *w)
{
    if (w != NULL) {
        w->coord->ops->watch_cancel(w);
    }
}

void pk_coord_free(pk_coord *c)
{
    if (c != NULL) {
        c->ops->free(c);
    }
}

const char *pk_coord_backend(const pk_coord *c)
{
    return c != NULL ? c->ops->name : "?";
}

uint64_t pk_coord_history_bytes(const pk_coord *c)
{
    return c != NULL && c->ops->history_bytes ? c->ops->history_bytes(c) : 0;
}

/*
 * pk_coord_int: what a coordinator backend implements, and nothing a user
 * of pk_coord.h may touch.
 *
 * A backend allocates a struct whose first member is a struct pk_coord
 * pointing at its static operations table, and watch handles whose first
 * member is a struct pk_coord_watch naming their coordinator; the public
 * functions in pk_coord.c check arguments once for every backend (key and
 * value lengths, TTL range, callbacks present) and then dispatch.  An
 * operation therefore receives only valid arguments and follows the
 * contract in pk_coord.h: return 0 and call cb exactly once, or return an
 * error and never call it.
 *
 *   struct my_backend {          struct my_watch {
 *       pk_coord base;               pk_coord_watch base;
 *       ...                          ...
 *   };                           };
 */
#ifndef PK_COORD_PK_COORD_INT_H
#define PK_COORD_PK_COORD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "coord/pk_coord.h"

typedef struct pk_coord_ops {
    const char *name; /* static, returned by pk_coord_backend */
    int (*get)(pk_coord *c, const void *key, size_t key_len, pk_coord_cb cb,
               void *ctx);
    int (*range)(pk_coord *c, const void *prefix, size_t prefix_len,
                 pk_coord_cb cb, void *ctx);
    int (*put)(pk_coord *c, const void *key, size_t key_len, const void *value,
               size_t value_len, uint64_t lease, pk_coord_cb cb, void *ctx);
    int (*del)(pk_coord *c, const void *key, size_t key_len, pk_coord_cb cb,
               void *ctx);
    int (*cas)(pk_coord *c, const void *key, size_t key_len,
               uint64_t expected_mod_revision, const void *value,
               size_t value_len, uint64_t lease, pk_coord_cb cb, void *ctx);
    int (*lease_grant)(pk_coord *c, uint64_t ttl_ms, pk_coord_cb cb, void *ctx);
    int (*lease_keepalive)(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                           void *ctx);
    int (*lease_revoke)(pk_coord *c, uint64_t lease, pk_coord_cb cb, void *ctx);
    int (*watch_start)(pk_coord *c, const void *prefix, size_t prefix_len,
                       uint64_t from_revision, pk_coord_watch_cb cb, void *ctx,
                       pk_coord_watch **out);
    void (*watch_cancel)(pk_coord_watch *w);
    void (*free)(pk_coord *c);
    /* pk_coord_history_bytes; NULL: the history is not held here. */
    uint64_t (*history_bytes)(const pk_coord *c);
} pk_coord_ops;

struct pk_coord {
    const pk_coord_ops *ops; /* static storage */
};

struct pk_coord_watch {
    pk_coord *coord; /* borrowed; outlives the watch */
};

#endif

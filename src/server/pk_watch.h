/*
 * pk_watch: the WATCH table -- which connections watch which keys -- and
 * its touches, which mark a watching connection so that its next EXEC
 * fails (pk_multi.h has WATCH's semantics; MULTI, EXEC and the WATCH
 * command are pk_multi's).  It depends on the server's state only, so
 * that replication can touch the keys of a partition it receives without
 * depending on transactions.  Internal to src/server.
 */
#ifndef PK_SERVER_PK_WATCH_H
#define PK_SERVER_PK_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "server/pk_srv.h"

/* One watched key of one connection: on a chain of the table (srv->watch)
 * and on its connection's list (c->watched). */
typedef struct pk_wkey {
    struct pk_wkey *next;  /* in its table chain */
    struct pk_wkey *cnext; /* in its connection's list */
    pk_conn *c;            /* borrowed: the entry goes before c does */
    uint64_t hash;
    uint64_t deadline; /* the key's expiry when WATCHed, 0 none */
    uint32_t part;
    size_t len;
    char key[];
} pk_wkey;

/* 1 when c watches key k. */
int pk_watch_has(const pk_conn *c, const pk_arg *k);

/* x's connection watches key k of partition part, whose expiry is
 * deadline (0: none).  Returns 0 or PK_ENOMEM. */
int pk_watch_add(pk_cmd_ctx *x, const pk_arg *k, uint32_t part,
                 uint64_t deadline);

/* UNWATCH: c's entries leave the table; the dirty flag goes too. */
void pk_watch_clear(pk_conn *c);

/* Calls fn on every entry (touches that look beyond one key). */
void pk_watch_each(pk_server *s, void (*fn)(pk_wkey *e, void *ctx), void *ctx);

/* After write command cmd in x changed data: touches its keys. */
void pk_watch_touch_cmd(pk_cmd_ctx *x, const pk_cmd *cmd);

/* Touches every watched key of partition part (a replicated record). */
void pk_watch_touch_part(pk_server *s, uint32_t part);

/* Before FLUSHALL: touches every watched key that exists. */
void pk_watch_touch_flush(pk_cmd_ctx *x);

/* Frees the table (every connection is closed). */
void pk_watch_free(pk_server *s);

#endif

/*
 * pk_salted_int: what pk_salted.c (counters, salting and folding) shares
 * with pk_salted_sets.c (salted sets and HyperLogLogs).  Internal to the
 * two; the rest of the server sees pk_salted.h.
 */
#ifndef PK_SERVER_PK_SALTED_INT_H
#define PK_SERVER_PK_SALTED_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/pk_pmap.h"
#include "core/pk_salt.h"
#include "server/pk_link.h"

typedef struct pk_server pk_server;
typedef struct pk_cmd_ctx pk_cmd_ctx;
typedef struct pk_cmd pk_cmd;
typedef struct pk_conn pk_conn;
typedef struct pk_txn pk_txn;
typedef struct pk_uop pk_uop;

#define PK__SALT_NAME_CAP (PK_SALT_KEY_MAX + PK_SALT_NAME_EXTRA)

/* The kind of a salted key (its parts' tags carry it). */
static inline pk_salt_kind pk__salted_kind(const pk_salt *e)
{
    return pk_salt_tag_kind(e->tags[1]);
}

/* Part i's key name into out (PK__SALT_NAME_CAP bytes; part 0: the key
 * itself); its length, 0 when it does not fit. */
size_t pk__salted_part_name(const pk_salt *e, int i, uint8_t *out);

/* Sends argv on a raw link to the leader of argv[1]'s partition; cb gets
 * ctx.  Returns 0 or an error after which cb is never called. */
int pk__salted_send(pk_server *s, int argc, const char *const *argv,
                    const size_t *lens, pk_link_cb cb, void *ctx);

/* The head of the list of set and HLL operations in flight. */
pk_uop **pk__salted_uops(pk_server *s);

/*
 * pk_salted_sets.c.  pk__salted_sets_route: a read of a salted set or
 * HLL (and SREM of a salted set) started on its parts: 0 (answered or
 * waiting for the parts), or 1 when cmd is not one of those.
 */
int pk__salted_sets_route(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e);

/* c is closing: its operations drop their reply. */
void pk__salted_sets_forget(pk_server *s, pk_conn *c);

/* Frees every operation (their calls were failed by the links' close). */
void pk__salted_sets_free(pk_server *s);

/* PK.SALTTAKE of a part holding a set or an HLL: 1 after replying
 * ["set", member...] or ["hll", value], 0 when the part holds neither
 * (the caller replies the plain value). */
int pk__salted_take(pk_cmd_ctx *x, pk_txn *t);

/* PK.SALTADD key i set member... | hll value: the part's members or
 * registers into part 0 (argument 1).  Returns 0 or a store error. */
int pk__salted_add(pk_cmd_ctx *x, pk_txn *t);

/* 1 when argv[3] of PK.SALTADD names a kind (set, hll): a tagged form. */
int pk__salted_add_tagged(const pk_cmd_ctx *x);

#endif

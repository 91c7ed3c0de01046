/*
 * pk_cmd: the command table -- name, arity, flags and key positions of
 * every command a node serves, as COMMAND reports them to clients -- and
 * the helpers command implementations share.  Internal to src/server.
 */
#ifndef PK_SERVER_PK_CMD_H
#define PK_SERVER_PK_CMD_H

#include <stdint.h>

#include "server/pk_srv.h"
#include "store/pk_slice.h"

#define PK_CMD_WRITE 0x01u
#define PK_CMD_READONLY 0x02u
#define PK_CMD_FAST 0x04u
#define PK_CMD_ADMIN 0x08u
#define PK_CMD_NOAUTH 0x10u /* runs before AUTH */
#define PK_CMD_STALE 0x20u
#define PK_CMD_LOADING 0x40u

typedef void (*pk_cmd_fn)(pk_cmd_ctx *x);

/* A run of key arguments: argv[first], argv[first + step], ... argv[last]
 * (last >= first; an empty run has last < first). */
typedef struct pk_keyrun {
    int first, last, step;
} pk_keyrun;

#define PK_KEYRUNS_MAX 2

/*
 * Key finder of a command whose key positions depend on its arguments
 * (numkeys forms: LMPOP, ZUNIONSTORE, SINTERCARD ...): writes at most
 * PK_KEYRUNS_MAX runs to r and returns how many, or 0 when the arguments
 * do not say (malformed: routing then lets the command reply its own
 * error).  Must not read beyond argv[argc - 1].
 */
typedef int (*pk_cmd_keys_fn)(int argc, const pk_arg *argv, pk_keyrun *r);

typedef struct pk_cmd {
    const char *name; /* lower case; the table is sorted by name */
    int arity;        /* N: exactly N args (name included); -N: at least N */
    unsigned flags;   /* PK_CMD_* */
    int first, last, step; /* key positions as COMMAND reports them */
    const char *acl;       /* ACL categories, space separated, without '@' */
    pk_cmd_fn fn;
    pk_cmd_keys_fn keys; /* NULL: first, last and step say it all */
} pk_cmd;

/*
 * The key runs of command c with these arguments (argc includes the name):
 * from c->keys when set (COMMAND reports such commands as movablekeys),
 * else the one run first..last by step (none when first is 0).  Writes at
 * most PK_KEYRUNS_MAX runs to r, clamped to the arguments present, and
 * returns how many.
 */
int pk_cmd_keyruns(const pk_cmd *c, int argc, const pk_arg *argv, pk_keyrun *r);

/* Finder for "numkeys key..." at argument i (LMPOP: i = 1). */
int pk_cmd_keys_numkeys(int argc, const pk_arg *argv, int i, pk_keyrun *r);

/* The command named by a (any case), or NULL. */
const pk_cmd *pk_cmd_find(const char *name, size_t len);

/* The whole table, sorted; *n receives its length. */
const pk_cmd *pk_cmd_table(size_t *n);

/* Helpers shared by the command files. */
int pk_arg_eq(const pk_arg *a, const char *lit);
int pk_arg_i64(const pk_arg *a, int64_t *v);
int pk_arg_double(const pk_arg *a, double *v);
void pk_reply_syntax(pk_cmd_ctx *x);
void pk_reply_notint(pk_cmd_ctx *x);

void pk_reply_slice(pk_cmd_ctx *x, pk_slice v); /* bulk, or nil */
/* A store read's result: v, nil for PK_ENOTFOUND, or the error. */
void pk_reply_value(pk_cmd_ctx *x, int rc, pk_slice v);

/* The command's clock: wall-clock ms of the read that brought it. */
#define NOW(x) ((x)->srv->now_ms)

/* Declares t as the iteration's transaction, or returns after the error
 * reply pk_srv_txn made. */
#define TXN_OR_RETURN(x, t)                                                    \
    pk_txn *t = pk_srv_txn(x);                                                 \
    if (t == NULL)                                                             \
    return

/* The partition of key argument i: routing's answer when it gave one. */
static inline uint32_t pk_cmd_part(const pk_cmd_ctx *x, int i)
{
    return x->have_part ? x->part
                        : pk_srv_part(x->srv, x->argv[i].ptr, x->argv[i].len);
}

/* The key argument's partition and bytes, for store calls. */
#define PK_KEY(x, i) pk_cmd_part(x, i), (x)->argv[i].ptr, (x)->argv[i].len

/* Command implementations, one file per family. */
/* clang-format off */
#define PK__CMDS(X)                                                            \
    X(append)                                                                  \
    X(auth)                                                                    \
    X(client)                                                                  \
    X(command)                                                                 \
    X(config)                                                                  \
    X(dbsize)                                                                  \
    X(decr) X(decrby) X(del) X(echo) X(exists) X(expire) X(flushall) X(function) X(get)    \
        X(getdel) X(hdel) X(hello) X(hexists) X(hget) X(hgetall) X(hincrby)    \
            X(hlen) X(hmget) X(hset) X(incr) X(incrby) X(info) X(mget) X(mset) \
                X(persist) X(pexpire) X(ping) X(pk_auth) X(pk_coord)           \
                    X(pk_partitions) X(pttl) X(quit) X(reset) X(scan)          \
                        X(select) X(set) X(shutdown) X(strlen) X(ttl) X(type)  \
                            X(zadd) X(zcard) X(zrange) X(zrangebylex)          \
                                X(zrangebyscore) X(zrem) X(zrevrange)          \
                                    X(zscore)
/* clang-format on */
#define PK__CMD_DECL(n) void pk_cmd_##n(pk_cmd_ctx *x);
PK__CMDS(PK__CMD_DECL)
#undef PK__CMD_DECL

/* Introspection (pk_cmd_admin.c). */
void pk_cmd_memory(pk_cmd_ctx *x);
int pk_cmd_keys_memory(int argc, const pk_arg *argv, pk_keyrun *r);

#endif

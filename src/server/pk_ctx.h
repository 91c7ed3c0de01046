/*
 * pk_ctx: what command code shares, wherever it lives: the description of
 * a command (pk_cmd: its flags and key positions, not the table of them,
 * which is pk_cmd.h's), reading arguments, the replies of common
 * outcomes, the iteration's transaction and a key's partition.  It
 * depends on the server's state (pk_srv.h) and lower layers only, so that
 * every module may include it; the command table and dispatch, which
 * call into every module, are pk_cmd.h.  Internal to src/server.
 */
#ifndef PK_SERVER_PK_CTX_H
#define PK_SERVER_PK_CTX_H

#include <stdint.h>

#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_slice.h"

#define PK_CMD_WRITE 0x01u
#define PK_CMD_READONLY 0x02u
#define PK_CMD_FAST 0x04u
#define PK_CMD_ADMIN 0x08u
#define PK_CMD_NOAUTH 0x10u /* runs before AUTH */
#define PK_CMD_STALE 0x20u
#define PK_CMD_LOADING 0x40u
/* Never forwarded (forward mode answers -MOVED): the command sets state
 * of this connection, as WATCH does. */
#define PK_CMD_LOCAL 0x80u
/* Each key argument is a range bound, "[key" or "(key" (PK.RANGE): routing
 * and COMMAND GETKEYS take the key after its first byte (pk_cmd_key). */
#define PK_CMD_BOUNDS 0x100u
/* Inside MULTI: runs at once, not queued (EXEC, DISCARD, MULTI, WATCH,
 * QUIT, RESET; pk_multi.h). */
#define PK_CMD_TXN_NOW 0x200u
/* Refused inside MULTI (SHUTDOWN, SAVE, BGSAVE). */
#define PK_CMD_NO_MULTI 0x400u

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

/* The key in key argument a of command c (without a bound's first byte). */
static inline pk_slice pk_cmd_key(const pk_cmd *c, const pk_arg *a)
{
    size_t skip = (c->flags & PK_CMD_BOUNDS) && a->len > 0 ? 1 : 0;

    return (pk_slice){(const uint8_t *)a->ptr + skip, a->len - skip};
}

/* Reading arguments, and replies shared by command code. */
int pk_arg_eq(const pk_arg *a, const char *lit);
int pk_arg_i64(const pk_arg *a, int64_t *v);
int pk_arg_double(const pk_arg *a, double *v);
void pk_reply_syntax(pk_cmd_ctx *x);
void pk_reply_notint(pk_cmd_ctx *x);

/* argc arguments (the name included) fit arity: N exactly N, -N at least
 * N (pk_cmd's and pk_subcmd's). */
static inline int pk_arity_ok(int arity, int argc)
{
    return arity > 0 ? argc == arity : argc >= -arity;
}

/* A container command's subcommand (CONFIG GET), with its arity counted
 * as pk_cmd's (the container's name included), and the function that
 * runs it (NULL where the container runs it itself). */
typedef struct pk_subcmd {
    const char *name; /* lower case */
    int arity;
    pk_cmd_fn fn;
} pk_subcmd;

/*
 * The index in subs[0..n) of x's subcommand (argv[1]), or -1 after
 * Redis 7.0's answer, which it gives before the command runs: "unknown
 * subcommand 'x'. Try CONTAINER HELP." or "wrong number of arguments for
 * 'container|sub' command" (container: the command's name, lower case).
 */
int pk_cmd_subcommand(pk_cmd_ctx *x, const char *container,
                      const pk_subcmd *subs, size_t n);

void pk_reply_slice(pk_cmd_ctx *x, pk_slice v); /* bulk, or nil */
/* A store call's integer result: v, or the error rc names. */
void pk_reply_int_rc(pk_cmd_ctx *x, int rc, int64_t v);
/* A store read's result: v, nil for PK_ENOTFOUND, or the error. */
void pk_reply_value(pk_cmd_ctx *x, int rc, pk_slice v);

/*
 * The partitions a keyspace-wide read (DBSIZE, SCAN, KEYS, RANDOMKEY)
 * covers, as a filter for the store's *_if calls (context: the server):
 * those this node leads, or, on a connection that sent READONLY, every
 * copy it holds (NULL), as a Redis replica reads its master's keys.
 */
static inline pk_part_filter pk_cmd_keyspace(const pk_cmd_ctx *x)
{
    return x->c->readonly ? NULL : pk_srv_leads;
}

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

/* Replies the error of a store call that returned rc != 0. */
void pk_cmd_store_error(pk_cmd_ctx *x, int rc);

#endif

/*
 * pk_cmd: the command table, dispatch (lookup, arity, authentication) and
 * the COMMAND command, which describes the table to clients: python3-redis
 * `RedisCluster` reads key positions from it and refuses commands it does
 * not list.
 */
#include "server/pk_cmd.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "store/pk_str.h"

#define W PK_CMD_WRITE
#define R PK_CMD_READONLY
#define F PK_CMD_FAST
#define A PK_CMD_ADMIN
#define N PK_CMD_NOAUTH
#define S PK_CMD_STALE
#define L PK_CMD_LOADING

/* Sorted by name: pk_cmd_find is a binary search. */
static const pk_cmd table[] = {
    {"append", 3, W, 1, 1, 1, "write string fast", pk_cmd_append},
    {"asking", 1, F, 0, 0, 0, "fast connection", pk_cmd_asking},
    {"auth", -2, N | F | S | L, 0, 0, 0, "fast connection", pk_cmd_auth},
    {"client", -2, S | L, 0, 0, 0, "slow connection", pk_cmd_client},
    {"cluster", -2, S, 0, 0, 0, "slow", pk_cmd_cluster},
    {"command", -1, S | L, 0, 0, 0, "slow connection", pk_cmd_command},
    {"config", -2, A | S | L, 0, 0, 0, "admin slow dangerous", pk_cmd_config},
    {"dbsize", 1, R | F, 0, 0, 0, "keyspace read fast", pk_cmd_dbsize},
    {"decr", 2, W | F, 1, 1, 1, "write string fast", pk_cmd_decr},
    {"decrby", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_decrby},
    {"del", -2, W, 1, -1, 1, "keyspace write slow", pk_cmd_del},
    {"echo", 2, F, 0, 0, 0, "fast connection", pk_cmd_echo},
    {"exists", -2, R | F, 1, -1, 1, "keyspace read fast", pk_cmd_exists},
    {"expire", -3, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_expire},
    {"flushall", -1, W, 0, 0, 0, "keyspace write slow dangerous",
     pk_cmd_flushall},
    {"function", -2, S, 0, 0, 0, "slow scripting", pk_cmd_function},
    {"get", 2, R | F, 1, 1, 1, "read string fast", pk_cmd_get},
    {"getdel", 2, W | F, 1, 1, 1, "write string fast", pk_cmd_getdel},
    {"hdel", -3, W | F, 1, 1, 1, "write hash fast", pk_cmd_hdel},
    {"hello", -1, N | F | S | L, 0, 0, 0, "fast connection", pk_cmd_hello},
    {"hexists", 3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hexists},
    {"hget", 3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hget},
    {"hgetall", 2, R, 1, 1, 1, "read hash slow", pk_cmd_hgetall},
    {"hincrby", 4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hincrby},
    {"hlen", 2, R | F, 1, 1, 1, "read hash fast", pk_cmd_hlen},
    {"hmget", -3, R | F, 1, 1, 1, "read hash fast", pk_cmd_hmget},
    {"hmset", -4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hset},
    {"hset", -4, W | F, 1, 1, 1, "write hash fast", pk_cmd_hset},
    {"incr", 2, W | F, 1, 1, 1, "write string fast", pk_cmd_incr},
    {"incrby", 3, W | F, 1, 1, 1, "write string fast", pk_cmd_incrby},
    {"info", -1, S | L, 0, 0, 0, "slow dangerous", pk_cmd_info},
    {"mget", -2, R | F, 1, -1, 1, "read string fast", pk_cmd_mget},
    {"mset", -3, W, 1, -1, 2, "write string slow", pk_cmd_mset},
    {"persist", 2, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_persist},
    {"pexpire", -3, W | F, 1, 1, 1, "keyspace write fast", pk_cmd_pexpire},
    {"ping", -1, F | S, 0, 0, 0, "fast connection", pk_cmd_ping},
    {"pk.auth", 2, N | F, 0, 0, 0, "fast connection", pk_cmd_pk_auth},
    {"pk.coord", -3, N, 0, 0, 0, "slow", pk_cmd_pk_coord},
    {"pk.map", 1, R | F, 0, 0, 0, "read fast", pk_cmd_pk_map},
    {"pk.move", -2, N, 0, 0, 0, "slow", pk_cmd_pk_move},
    {"pk.moves", 1, R | F, 0, 0, 0, "read fast", pk_cmd_pk_moves},
    {"pk.partitions", 1, R, 0, 0, 0, "read slow", pk_cmd_pk_partitions},
    {"pk.repl", -2, N, 0, 0, 0, "slow", pk_cmd_pk_repl},
    {"pttl", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_pttl},
    {"quit", -1, N | F | S | L, 0, 0, 0, "fast connection", pk_cmd_quit},
    {"readonly", 1, F | L | S, 0, 0, 0, "fast connection", pk_cmd_readonly},
    {"readwrite", 1, F | L | S, 0, 0, 0, "fast connection", pk_cmd_readwrite},
    {"reset", 1, N | F | S | L, 0, 0, 0, "fast connection", pk_cmd_reset},
    {"scan", -2, R, 0, 0, 0, "keyspace read slow", pk_cmd_scan},
    {"select", 2, F | S | L, 0, 0, 0, "fast connection", pk_cmd_select},
    {"set", -3, W, 1, 1, 1, "write string slow", pk_cmd_set},
    {"shutdown", -1, A | S | L, 0, 0, 0, "admin slow dangerous",
     pk_cmd_shutdown},
    {"strlen", 2, R | F, 1, 1, 1, "read string fast", pk_cmd_strlen},
    {"ttl", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_ttl},
    {"type", 2, R | F, 1, 1, 1, "keyspace read fast", pk_cmd_type},
    {"wait", 3, 0, 0, 0, 0, "slow connection", pk_cmd_wait},
    {"zadd", -4, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zadd},
    {"zcard", 2, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zcard},
    {"zrange", -4, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrange},
    {"zrangebylex", -4, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrangebylex},
    {"zrangebyscore", -4, R, 1, 1, 1, "read sortedset slow",
     pk_cmd_zrangebyscore},
    {"zrem", -3, W | F, 1, 1, 1, "write sortedset fast", pk_cmd_zrem},
    {"zrevrange", -4, R, 1, 1, 1, "read sortedset slow", pk_cmd_zrevrange},
    {"zscore", 3, R | F, 1, 1, 1, "read sortedset fast", pk_cmd_zscore},
};

#define NCMDS (sizeof(table) / sizeof(table[0]))

const pk_cmd *pk_cmd_table(size_t *n)
{
    *n = NCMDS;
    return table;
}

/* Compares a counted, any-case name with a table name. */
static int name_cmp(const char *name, size_t len, const char *tname)
{
    size_t i;

    for (i = 0; i < len && tname[i]; i++) {
        int a = (unsigned char)name[i] | 0x20, b = (unsigned char)tname[i];
        if ((unsigned char)name[i] == '.')
            a = '.';
        if (a != b)
            return a - b;
    }
    if (i < len)
        return 1;
    return tname[i] ? -1 : 0;
}

const pk_cmd *pk_cmd_find(const char *name, size_t len)
{
    size_t lo = 0, hi = NCMDS;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = name_cmp(name, len, table[mid].name);
        if (c == 0)
            return &table[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

int pk_arg_eq(const pk_arg *a, const char *lit)
{
    size_t n = strlen(lit);

    return a->len == n && strncasecmp(a->ptr, lit, n) == 0;
}

int pk_arg_i64(const pk_arg *a, int64_t *v)
{
    return pk_str_parse_int(a->ptr, a->len, v) == PK_OK;
}

/* Redis's float parsing: strtod over the whole argument, no NaN. */
int pk_arg_double(const pk_arg *a, double *v)
{
    char buf[128];
    char *end;
    double d;

    if (a->len == 0 || a->len >= sizeof(buf))
        return 0;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    if (buf[0] == ' ' || buf[0] == '\t')
        return 0;
    d = strtod(buf, &end);
    if (*end != '\0' || isnan(d))
        return 0;
    *v = d;
    return 1;
}

void pk_reply_syntax(pk_cmd_ctx *x)
{
    pk_reply_error(x->out, "ERR syntax error");
}

void pk_reply_notint(pk_cmd_ctx *x)
{
    pk_reply_error(x->out, "ERR value is not an integer or out of range");
}

void pk_reply_slice(pk_cmd_ctx *x, pk_slice v)
{
    if (v.ptr)
        pk_reply_bulk(x->out, v.ptr, v.len);
    else
        pk_reply_null(x->out, x->proto);
}

void pk_reply_value(pk_cmd_ctx *x, int rc, pk_slice v)
{
    if (rc == PK_ENOTFOUND)
        v.ptr = NULL;
    else if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return;
    }
    pk_reply_slice(x, v);
}

void pk_cmd_store_error(pk_cmd_ctx *x, int rc)
{
    const char *status = rc > 0 ? pk_store_strstatus(rc) : NULL;

    if (status)
        pk_reply_error(x->out, status);
    else if (rc == PK_ERANGE)
        pk_reply_error(x->out, "ERR key, field or member too long for the "
                               "store (at most about 500 bytes)");
    else
        pk_reply_errorf(x->out, "ERR storage error: %s", pk_strerror(rc));
}

/* "ERR unknown command 'FOO', with args beginning with: 'bar' " */
static void reply_unknown(pk_cmd_ctx *x)
{
    char msg[1024];
    size_t n = 0;

    n += (size_t)snprintf(msg, sizeof(msg),
                          "ERR unknown command '%.*s', with args beginning "
                          "with: ",
                          (int)(x->argv[0].len > 128 ? 128 : x->argv[0].len),
                          x->argv[0].ptr);
    for (int i = 1; i < x->argc && n < sizeof(msg) - 140; i++)
        n += (size_t)snprintf(
            msg + n, sizeof(msg) - n, "'%.*s' ",
            (int)(x->argv[i].len > 128 ? 128 : x->argv[i].len), x->argv[i].ptr);
    pk_reply_error(x->out, msg);
}

void pk_cmd_dispatch(pk_cmd_ctx *x)
{
    const pk_cmd *cmd = pk_cmd_find(x->argv[0].ptr, x->argv[0].len);

    x->have_part = 0;
    if (cmd == NULL) {
        reply_unknown(x);
        return;
    }
    x->c->last_cmd = cmd->name;
    if ((cmd->arity > 0 && x->argc != cmd->arity) ||
        (cmd->arity < 0 && x->argc < -cmd->arity)) {
        pk_reply_errorf(x->out,
                        "ERR wrong number of arguments for '%s' command",
                        cmd->name);
        return;
    }
    if (!x->c->authed && !(cmd->flags & PK_CMD_NOAUTH)) {
        pk_reply_error(x->out, "NOAUTH Authentication required.");
        return;
    }
    if (!pk_cluster_route(x, cmd))
        return;
    cmd->fn(x);
    if (x->have_part)
        pk_repl_note(x, (cmd->flags & PK_CMD_WRITE) != 0);
}

/* One COMMAND entry, in Redis 7's 10-field shape. */
static void reply_entry(pk_cmd_ctx *x, const pk_cmd *c)
{
    static const struct {
        unsigned flag;
        const char *name;
    } flags[] = {{PK_CMD_WRITE, "write"}, {PK_CMD_READONLY, "readonly"},
                 {PK_CMD_ADMIN, "admin"}, {PK_CMD_NOAUTH, "no_auth"},
                 {PK_CMD_STALE, "stale"}, {PK_CMD_LOADING, "loading"},
                 {PK_CMD_FAST, "fast"}};
    size_t nflags = 0, ncats = 1;
    const char *p;

    pk_reply_array(x->out, 10);
    pk_reply_bulk_str(x->out, c->name);
    pk_reply_int(x->out, c->arity);
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        nflags += (c->flags & flags[i].flag) != 0;
    pk_reply_set(x->out, x->proto, nflags);
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        if (c->flags & flags[i].flag)
            pk_reply_simple(x->out, flags[i].name);
    pk_reply_int(x->out, c->first);
    pk_reply_int(x->out, c->last);
    pk_reply_int(x->out, c->step);
    for (p = c->acl; *p; p++)
        ncats += *p == ' ';
    pk_reply_set(x->out, x->proto, ncats);
    for (p = c->acl; *p;) {
        size_t n = strcspn(p, " ");
        char cat[64];
        snprintf(cat, sizeof(cat), "@%.*s", (int)n, p);
        pk_reply_simple(x->out, cat);
        p += n + (p[n] == ' ');
    }
    pk_reply_set(x->out, x->proto, 0); /* tips */
    pk_reply_array(x->out, 0);         /* key specs */
    pk_reply_array(x->out, 0);         /* subcommands */
}

void pk_cmd_command(pk_cmd_ctx *x)
{
    if (x->argc == 1) {
        pk_reply_array(x->out, NCMDS);
        for (size_t i = 0; i < NCMDS; i++)
            reply_entry(x, &table[i]);
    } else if (pk_arg_eq(&x->argv[1], "count") && x->argc == 2) {
        pk_reply_int(x->out, (int64_t)NCMDS);
    } else if (pk_arg_eq(&x->argv[1], "info")) {
        pk_reply_array(x->out, (size_t)x->argc - 2);
        for (int i = 2; i < x->argc; i++) {
            const pk_cmd *c = pk_cmd_find(x->argv[i].ptr, x->argv[i].len);
            if (c)
                reply_entry(x, c);
            else
                pk_reply_null_array(x->out, x->proto);
        }
    } else if (pk_arg_eq(&x->argv[1], "docs")) {
        /* Clients ask for docs only to show hints; an empty map is what
         * Redis answers for commands without docs. */
        pk_reply_map(x->out, x->proto, 0);
    } else if (pk_arg_eq(&x->argv[1], "list")) {
        pk_reply_array(x->out, NCMDS);
        for (size_t i = 0; i < NCMDS; i++)
            pk_reply_bulk_str(x->out, table[i].name);
    } else if (pk_arg_eq(&x->argv[1], "getkeys") && x->argc >= 3) {
        const pk_cmd *c = pk_cmd_find(x->argv[2].ptr, x->argv[2].len);
        int nargs = x->argc - 2, last, n = 0;
        if (c == NULL) {
            pk_reply_error(x->out, "ERR Invalid command specified");
            return;
        }
        if (c->first == 0) {
            pk_reply_error(x->out, "ERR The command has no key arguments");
            return;
        }
        last = c->last < 0 ? nargs + c->last : c->last;
        for (int i = c->first; i <= last && i < nargs; i += c->step)
            n++;
        pk_reply_array(x->out, (size_t)n);
        for (int i = c->first; i <= last && i < nargs; i += c->step)
            pk_reply_bulk(x->out, x->argv[2 + i].ptr, x->argv[2 + i].len);
    } else {
        pk_reply_errorf(
            x->out, "ERR unknown subcommand '%.*s'. Try COMMAND HELP.",
            (int)(x->argv[1].len > 128 ? 128 : x->argv[1].len), x->argv[1].ptr);
    }
}

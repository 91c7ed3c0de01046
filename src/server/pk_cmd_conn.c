/*
 * Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT.
 * Texts follow Redis 7.0 exactly where clients look at them.
 */
#include <stdio.h>
#include <string.h>

#include "server/pk_acl.h"
#include "server/pk_block.h"
#include "server/pk_climit.h"
#include "server/pk_cmd.h"
#include "server/pk_multi.h"

#define PK_VERSION "0.1.0"
#define PK_REDIS_VERSION "7.0.0" /* the Redis API level partkv speaks */

void pk_cmd_ping(pk_cmd_ctx *x)
{
    if (x->argc > 2)
        pk_reply_error(x->out,
                       "ERR wrong number of arguments for 'ping' command");
    else if (x->argc == 2)
        pk_reply_bulk(x->out, x->argv[1].ptr, x->argv[1].len);
    else
        pk_reply_simple(x->out, "PONG");
}

void pk_cmd_echo(pk_cmd_ctx *x)
{
    pk_reply_bulk(x->out, x->argv[1].ptr, x->argv[1].len);
}

/* AUTH [user] pass: user "default" when not given (pk_cmd_acl.c checks
 * the pair and logs a failure). */
void pk_cmd_auth(pk_cmd_ctx *x)
{
    static const pk_arg def = {"default", 7};

    if (x->argc > 3) {
        pk_reply_syntax(x);
        return;
    }
    if (x->argc == 2 && pk_acl_user_nopass(pk_acl_default(x->srv->acl))) {
        pk_reply_error(x->out,
                       "ERR AUTH <password> called without any password "
                       "configured for the default user. Are you sure "
                       "your configuration is correct?");
        return;
    }
    if (!pk_acl_conn_auth(x, x->argc == 3 ? &x->argv[1] : &def,
                          &x->argv[x->argc - 1])) {
        pk_reply_error(x->out, "WRONGPASS invalid username-password pair or "
                               "user is disabled.");
        return;
    }
    pk_reply_simple(x->out, "OK");
}

static int set_name(pk_cmd_ctx *x, const pk_arg *a)
{
    for (size_t i = 0; i < a->len; i++) {
        if (a->ptr[i] < '!' || a->ptr[i] > '~') {
            pk_reply_error(x->out, "ERR Client names cannot contain spaces, "
                                   "newlines or special characters.");
            return 0;
        }
    }
    snprintf(x->c->name, sizeof(x->c->name), "%.*s", (int)a->len, a->ptr);
    return 1;
}

void pk_cmd_hello(pk_cmd_ctx *x)
{
    int64_t ver = x->c->proto;
    int i = 2;

    if (x->argc >= 2 && (!pk_arg_i64(&x->argv[1], &ver))) {
        pk_reply_error(x->out, "ERR Protocol version is not an integer or "
                               "out of range");
        return;
    }
    if (ver < 2 || ver > 3) {
        pk_reply_error(x->out, "NOPROTO unsupported protocol version");
        return;
    }
    for (; i < x->argc; i++) {
        if (pk_arg_eq(&x->argv[i], "auth") && i + 2 < x->argc) {
            if (!pk_acl_conn_auth(x, &x->argv[i + 1], &x->argv[i + 2])) {
                pk_reply_error(x->out, "WRONGPASS invalid username-password "
                                       "pair or user is disabled.");
                return;
            }
            i += 2;
        } else if (pk_arg_eq(&x->argv[i], "setname") && i + 1 < x->argc) {
            if (!set_name(x, &x->argv[++i]))
                return;
        } else {
            pk_reply_errorf(x->out, "ERR Syntax error in HELLO option '%.*s'",
                            (int)x->argv[i].len, x->argv[i].ptr);
            return;
        }
    }
    if (!x->c->authed) {
        pk_reply_error(x->out,
                       "NOAUTH HELLO must be called with the client already "
                       "authenticated, otherwise the HELLO <proto> AUTH "
                       "<user> <pass> option can be used to authenticate the "
                       "client and select the RESP protocol version at the "
                       "same time");
        return;
    }
    x->c->proto = x->proto = (int)ver;
    pk_reply_map(x->out, x->proto, 7);
    pk_reply_bulk_str(x->out, "server");
    pk_reply_bulk_str(x->out, "redis");
    pk_reply_bulk_str(x->out, "version");
    pk_reply_bulk_str(x->out, PK_REDIS_VERSION);
    pk_reply_bulk_str(x->out, "proto");
    pk_reply_int(x->out, ver);
    pk_reply_bulk_str(x->out, "id");
    pk_reply_int(x->out, (int64_t)x->c->id);
    pk_reply_bulk_str(x->out, "mode");
    pk_reply_bulk_str(x->out,
                      x->srv->cluster.enabled ? "cluster" : "standalone");
    pk_reply_bulk_str(x->out, "role");
    pk_reply_bulk_str(x->out, "master");
    pk_reply_bulk_str(x->out, "modules");
    pk_reply_array(x->out, 0);
}

void pk_cmd_select(pk_cmd_ctx *x)
{
    int64_t db;

    if (!pk_arg_i64(&x->argv[1], &db)) {
        pk_reply_notint(x);
        return;
    }
    if (db != 0) {
        pk_reply_error(x->out, "ERR DB index is out of range");
        return;
    }
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_quit(pk_cmd_ctx *x)
{
    pk_reply_simple(x->out, "OK");
    x->c->closing = 1;
}

void pk_cmd_reset(pk_cmd_ctx *x)
{
    x->c->proto = x->proto = 2;
    x->c->name[0] = '\0';
    pk_acl_conn_start(x->srv, x->c);
    x->c->readonly = 0;
    x->c->asking = 0;
    pk_multi_conn_reset(x->c);
    pk_reply_simple(x->out, "RESET");
}

void pk_cmd_client_info(pk_cmd_ctx *x, pk_conn *c, char *buf, size_t n)
{
    uint64_t now = pk_srv_wall_ms();

    snprintf(buf, n,
             "id=%llu addr=%s laddr=%s fd=-1 name=%s age=%llu idle=%llu "
             "flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=%zu "
             "qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 "
             "oll=0 omem=%zu tot-mem=%zu events=r cmd=%s%s%s user=%s "
             "redir=-1 resp=%d\n",
             (unsigned long long)c->id, c->addr, c->laddr, c->name,
             (unsigned long long)(now - c->created_ms) / 1000,
             (unsigned long long)(now - c->last_ms) / 1000,
             pk_resp_buffered(c->parser), pk_obuf_pending(&c->out),
             pk_resp_memory(c->parser) + c->out.cap + c->wire.cap,
             c->last_cmd ? c->last_cmd : "NULL", c->last_sub ? "|" : "",
             c->last_sub ? c->last_sub : "",
             c->user ? pk_acl_user_name(c->user) : "(none)", c->proto);
    (void)x;
}

/* Redis's client types: "normal", or "replica" (a node's own connection,
 * with the cluster secret); none is a master or in Pub/Sub here. */
static int client_type(const pk_arg *a)
{
    if (pk_arg_eq(a, "normal"))
        return PK_CLIENT_NORMAL;
    if (pk_arg_eq(a, "replica") || pk_arg_eq(a, "slave"))
        return PK_CLIENT_REPLICA;
    if (pk_arg_eq(a, "pubsub"))
        return PK_CLIENT_PUBSUB;
    return pk_arg_eq(a, "master") ? PK_CLIENT_CLASSES : -1;
}

static void reply_unknown_type(pk_cmd_ctx *x, const pk_arg *a)
{
    pk_reply_errorf(x->out, "ERR Unknown client type '%.*s'",
                    (int)(a->len > 128 ? 128 : a->len), a->ptr);
}

/* CLIENT KILL's filters; a zero or NULL field matches every client. */
typedef struct kill_filter {
    uint64_t id;
    int type; /* -1: any */
    const pk_arg *addr, *laddr;
    const pk_acl_user *user;
    int skipme;
} kill_filter;

static int arg_is_str(const pk_arg *a, const char *s)
{
    return a->len == strlen(s) && memcmp(a->ptr, s, a->len) == 0;
}

static int kill_matches(const kill_filter *f, const pk_conn *self,
                        const pk_conn *c)
{
    return !(f->addr && !arg_is_str(f->addr, c->addr)) &&
           !(f->laddr && !arg_is_str(f->laddr, c->laddr)) &&
           !(f->type >= 0 && pk_climit_class(c) != f->type) &&
           !(f->id && c->id != f->id) && !(f->user && c->user != f->user) &&
           !(c == self && f->skipme) && !c->freed;
}

/* Parses CLIENT KILL's filters (the new form); 0 after an error reply. */
static int kill_parse(pk_cmd_ctx *x, kill_filter *f)
{
    for (int i = 2; i + 1 < x->argc; i += 2) {
        const pk_arg *k = &x->argv[i], *v = &x->argv[i + 1];
        int64_t id;
        if (pk_arg_eq(k, "id")) {
            if (!pk_arg_i64(v, &id) || id < 1) {
                pk_reply_error(x->out,
                               "ERR client-id should be greater than 0");
                return 0;
            }
            f->id = (uint64_t)id;
        } else if (pk_arg_eq(k, "type")) {
            if ((f->type = client_type(v)) < 0) {
                reply_unknown_type(x, v);
                return 0;
            }
        } else if (pk_arg_eq(k, "addr")) {
            f->addr = v;
        } else if (pk_arg_eq(k, "laddr")) {
            f->laddr = v;
        } else if (pk_arg_eq(k, "user")) {
            if ((f->user = pk_acl_find(x->srv->acl, v->ptr, v->len)) == NULL) {
                pk_reply_errorf(x->out, "ERR No such user '%.*s'",
                                (int)(v->len > 128 ? 128 : v->len), v->ptr);
                return 0;
            }
        } else if (pk_arg_eq(k, "skipme") &&
                   (pk_arg_eq(v, "yes") || pk_arg_eq(v, "no"))) {
            f->skipme = pk_arg_eq(v, "yes");
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    return 1;
}

/*
 * CLIENT KILL ip:port (+OK, or "No such client"), or CLIENT KILL with
 * filters ID TYPE USER ADDR LADDR SKIPME (the count killed), as Redis
 * 7.0: the connections close at once, the caller's own after its reply.
 */
static void client_kill(pk_cmd_ctx *x)
{
    kill_filter f = {0, -1, NULL, NULL, NULL, 1};
    int64_t killed = 0;

    if (x->argc == 3) {
        f.addr = &x->argv[2];
        f.skipme = 0; /* the old form may kill its caller */
    } else if (x->argc < 4 || x->argc % 2 != 0) {
        pk_reply_syntax(x);
        return;
    } else if (!kill_parse(x, &f)) {
        return;
    }
    for (pk_conn *c = x->srv->conns, *next; c; c = next) {
        next = c->next;
        if (!kill_matches(&f, x->c, c))
            continue;
        killed++;
        if (c == x->c)
            c->closing = 1; /* after this reply */
        else
            pk_conn_close(c);
    }
    if (x->argc > 3)
        pk_reply_int(x->out, killed);
    else if (killed)
        pk_reply_simple(x->out, "OK");
    else
        pk_reply_error(x->out, "ERR No such client");
}

static void list_one(pk_cmd_ctx *x, pk_conn *c, pk_obuf *all)
{
    char line[1024];

    pk_cmd_client_info(x, c, line, sizeof(line));
    pk_obuf_append(all, line, strlen(line));
}

/* CLIENT LIST [TYPE type | ID id ...], as Redis 7.0 (the clients of the
 * ids in the order asked). */
static void client_list(pk_cmd_ctx *x)
{
    int type = -1;
    pk_obuf all;

    if (x->argc == 4 && pk_arg_eq(&x->argv[2], "type")) {
        if ((type = client_type(&x->argv[3])) < 0) {
            reply_unknown_type(x, &x->argv[3]);
            return;
        }
    } else if (x->argc > 3 && pk_arg_eq(&x->argv[2], "id")) {
        for (int i = 3; i < x->argc; i++) {
            int64_t id;
            if (!pk_arg_i64(&x->argv[i], &id)) {
                pk_reply_error(x->out, "ERR Invalid client ID");
                return;
            }
        }
    } else if (x->argc != 2) {
        pk_reply_syntax(x);
        return;
    }
    pk_obuf_init(&all);
    for (int i = 3; x->argc > 3 && type < 0 && i < x->argc; i++) {
        int64_t id;
        pk_arg_i64(&x->argv[i], &id);
        for (pk_conn *c = x->srv->conns; c; c = c->next)
            if ((int64_t)c->id == id && !c->freed)
                list_one(x, c, &all);
    }
    for (pk_conn *c = x->srv->conns; c && (x->argc == 2 || type >= 0);
         c = c->next)
        if (!c->freed && (type < 0 || pk_climit_class(c) == type))
            list_one(x, c, &all);
    pk_reply_verbatim(x->out, x->proto, "txt",
                      all.data ? all.data + all.head : "",
                      pk_obuf_pending(&all)); /* no data: none listed */
    pk_obuf_free(&all);
}

/* CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if that client was blocked. */
static void client_unblock(pk_cmd_ctx *x)
{
    int64_t id;
    int error = 0, done = 0;

    if (x->argc > 4) { /* Redis 7.0's text, the name as it came */
        pk_reply_errorf(x->out,
                        "ERR unknown subcommand or wrong number of arguments "
                        "for '%.*s'. Try CLIENT HELP.",
                        (int)x->argv[1].len, x->argv[1].ptr);
        return;
    }
    if (!pk_arg_i64(&x->argv[2], &id)) {
        pk_reply_notint(x);
        return;
    }
    if (x->argc == 4) {
        if (pk_arg_eq(&x->argv[3], "error"))
            error = 1;
        else if (!pk_arg_eq(&x->argv[3], "timeout")) {
            pk_reply_error(x->out, "ERR CLIENT UNBLOCK reason should be "
                                   "TIMEOUT or ERROR");
            return;
        }
    }
    for (pk_conn *c = x->srv->conns; c && !done; c = c->next)
        if ((int64_t)c->id == id)
            done = pk_block_unblock(x->srv, c, error);
    pk_reply_int(x->out, done);
}

static void client_help(pk_cmd_ctx *x)
{
    static const char *const help[] = {
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "    * ID <id> [<id> ...]",
        "      Return clients of the specified ids.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "GETNAME",
        "    Return the name of the current connection.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "HELP",
        "    Prints this help."};
    pk_reply_simples(x->out, help, sizeof(help) / sizeof(help[0]));
}

static void client_setname(pk_cmd_ctx *x)
{
    if (set_name(x, &x->argv[2]))
        pk_reply_simple(x->out, "OK");
}

static void client_getname(pk_cmd_ctx *x)
{
    if (x->c->name[0])
        pk_reply_bulk_str(x->out, x->c->name);
    else
        pk_reply_null(x->out, x->proto);
}

static void client_id(pk_cmd_ctx *x)
{
    pk_reply_int(x->out, (int64_t)x->c->id);
}

static void client_info(pk_cmd_ctx *x)
{
    char line[1024];

    pk_cmd_client_info(x, x->c, line, sizeof(line));
    pk_reply_verbatim(x->out, x->proto, "txt", line, strlen(line));
}

/* Nothing is evicted here (maxmemory-policy noeviction). */
static void client_no_evict(pk_cmd_ctx *x)
{
    if (pk_arg_eq(&x->argv[2], "on") || pk_arg_eq(&x->argv[2], "off"))
        pk_reply_simple(x->out, "OK");
    else
        pk_reply_syntax(x);
}

/* Client library name and version: taken, kept nowhere. */
static void client_setinfo(pk_cmd_ctx *x)
{
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_client(pk_cmd_ctx *x)
{
    /* Redis 7.0's arities; a subcommand partkv does not serve (PAUSE,
     * REPLY, TRACKING ...) is unknown here. */
    static const pk_subcmd subs[] = {{"getname", 2, client_getname},
                                     {"help", 2, client_help},
                                     {"id", 2, client_id},
                                     {"info", 2, client_info},
                                     {"kill", -3, client_kill},
                                     {"list", -2, client_list},
                                     {"no-evict", 3, client_no_evict},
                                     {"setinfo", 4, client_setinfo},
                                     {"setname", 3, client_setname},
                                     {"unblock", -3, client_unblock}};
    int i =
        pk_cmd_subcommand(x, "client", subs, sizeof(subs) / sizeof(subs[0]));

    if (i >= 0)
        subs[i].fn(x);
}

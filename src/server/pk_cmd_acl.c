/*
 * The ACL command (SETUSER GETUSER DELUSER LIST USERS WHOAMI CAT DRYRUN
 * LOG GENPASS HELP LOAD SAVE), the ACL file (--aclfile, ACL LOAD, ACL
 * SAVE) and, in a cluster, the users kept in the coordinator, over the
 * model of pk_acl.h.  Texts and reply shapes are Redis 7.0.15's.  The
 * checks of commands are pk_cmd_acluser.c.
 *
 * A connection holds its user (c->user, borrowed from srv->acl): the
 * default user from the start, another after AUTH or HELLO AUTH.  A user
 * changed by ACL SETUSER keeps its address, so the next command is
 * checked against the new rules; a deleted user's connections are closed
 * after the reply in flight, as Redis does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "core/pk_err.h"
#include "server/pk_acl.h"
#include "server/pk_agent.h"
#include "server/pk_cmd.h"

/* drop_conns's argument: the server, and the connection running the
 * command (NULL for a change from the coordinator). */
typedef struct drop_ctx {
    pk_server *s;
    pk_conn *self;
} drop_ctx;

/* Closes the connections of a user about to be deleted: each runs
 * nothing more; the one running the command gets its reply first, as do
 * those with replies of this iteration (closed when they are sent). */
static void drop_conns(void *arg, const pk_acl_user *u)
{
    drop_ctx *d = arg;

    for (pk_conn *c = d->s->conns, *next; c; c = next) {
        next = c->next;
        if (c->user != u)
            continue;
        c->user = NULL;
        c->authed = 0;
        c->closing = 1;
        if (c != d->self && !c->in_iter && !c->writing)
            pk_conn_flush(c);
    }
}

void pk_acl_cluster_apply(pk_server *s, const char *text, size_t len)
{
    char *err = NULL;

    drop_ctx d = {s, NULL};

    if (pk_acl_sync_text(s->acl, text, len, drop_conns, &d, &err) != 0)
        fprintf(stderr, "partkv: the cluster's ACL users do not load: %s\n",
                err ? err : "out of memory");
    free(err);
}

/* An edit on its way to the coordinator: the job and its arguments. */
typedef struct acl_job {
    pk_agent_job j; /* first: done() gets it */
    pk_arg *args;   /* owned (pk_conn_args_copy) */
} acl_job;

static void acl_job_done(pk_agent_job *j)
{
    acl_job *aj = (acl_job *)j;

    /* The rules may hold a password in clear (">pass"). */
    for (int i = 0; i < j->acl_argc; i++)
        OPENSSL_cleanse((void *)aj->args[i].ptr, aj->args[i].len);
    free(aj->args);
    free(aj);
}

/*
 * In a cluster, an edit applied here goes to the coordinator too, for
 * every node (op: 0 SETUSER, 1 DELUSER, 2 the whole text; pk_agent.h).
 * Eventually consistent: other nodes take it within PK_ACL_POLL_MS or so.
 */
static void publish(pk_server *s, int op, int argc, const pk_arg *argv)
{
    pk_arg *v;
    char *seed;
    acl_job *aj = NULL;

    /* A proxy without the cluster secret keeps users of its own. */
    if (!s->cluster.enabled || s->agent == NULL ||
        (s->cfg.proxy_of && s->cfg.cluster_secret == NULL))
        return;
    /* The users here seed the coordinator's when it has none yet (the
     * default user's --requirepass with them). */
    seed = pk_acl_save_text(s->acl);
    v = malloc(((size_t)argc + 1) * sizeof(*v));
    if (seed && v) {
        v[0] = (pk_arg){seed, strlen(seed)};
        memcpy(v + 1, argv, (size_t)argc * sizeof(*argv));
        if ((aj = calloc(1, sizeof(*aj))) != NULL)
            aj->args = pk_conn_args_copy(argc + 1, v);
    }
    free(seed);
    free(v);
    if (aj == NULL || aj->args == NULL) {
        free(aj);
        fprintf(stderr, "partkv: out of memory: an ACL change stays on "
                        "this node\n");
        return;
    }
    aj->j.kind = PK_JOB_ACL;
    aj->j.acl_op = op;
    aj->j.acl_argc = argc + 1;
    aj->j.acl_argv = aj->args;
    aj->j.done = acl_job_done;
    pk_agent_commit(s->agent, &aj->j);
}

int pk_acl_set_requirepass(pk_server *s, const char *pw, size_t len, int share)
{
    char *rule = NULL, *err = NULL; /* ">pw" */
    pk_arg r[3] = {{"default", 7}, {"resetpass", 9}, {"nopass", 6}};
    int rc;

    if (len) {
        if ((rule = malloc(len + 1)) == NULL)
            return -1;
        rule[0] = '>';
        memcpy(rule + 1, pw, len);
        r[2] = (pk_arg){rule, len + 1};
    }
    rc = pk_acl_setuser(s->acl, "default", 7, 2, r + 1, &err);
    if (rc == 0 && share)
        publish(s, 0, 3, r);
    if (rule)
        OPENSSL_cleanse(rule, len + 1);
    free(rule);
    free(err);
    return rc == 0 ? 0 : -1;
}

/* commands, keys, channels of selector i (0: the root). */
static void reply_selector(pk_cmd_ctx *x, const pk_acl_user *u, size_t i)
{
    char *cmds = NULL, *keys = NULL, *chans = NULL;

    pk_acl_selector_describe(u, i, &cmds, &keys, &chans);
    pk_reply_bulk_str(x->out, "commands");
    pk_reply_bulk_str(x->out, cmds ? cmds : "");
    pk_reply_bulk_str(x->out, "keys");
    pk_reply_bulk_str(x->out, keys ? keys : "");
    pk_reply_bulk_str(x->out, "channels");
    pk_reply_bulk_str(x->out, chans ? chans : "");
    free(cmds);
    free(keys);
    free(chans);
}

/* GETUSER: flags, passwords, the root selector's three fields, then the
 * other selectors as maps of the same three. */
static void reply_getuser(pk_cmd_ctx *x, const pk_acl_user *u)
{
    const char *flags[5];
    int nflags = pk_acl_user_flags(u, flags);
    size_t npass = pk_acl_user_passwords(u), nsel = pk_acl_user_selectors(u);

    pk_reply_map(x->out, x->proto, 6);
    pk_reply_bulk_str(x->out, "flags");
    pk_reply_set(x->out, x->proto, (size_t)nflags);
    for (int i = 0; i < nflags; i++)
        pk_reply_bulk_str(x->out, flags[i]);
    pk_reply_bulk_str(x->out, "passwords");
    pk_reply_array(x->out, npass);
    for (size_t i = 0; i < npass; i++)
        pk_reply_bulk(x->out, pk_acl_user_pass(u, i), 64);
    reply_selector(x, u, 0);
    pk_reply_bulk_str(x->out, "selectors");
    pk_reply_array(x->out, nsel);
    for (size_t i = 1; i <= nsel; i++) {
        pk_reply_map(x->out, x->proto, 3);
        reply_selector(x, u, i);
    }
}

/* LIST: "user name rules" each; USERS: the names. */
static void reply_list(pk_cmd_ctx *x, int names)
{
    pk_acl *a = x->srv->acl;

    pk_reply_array(x->out, pk_acl_count(a));
    for (pk_acl_user *u = pk_acl_first(a); u; u = pk_acl_next(u)) {
        const char *name = pk_acl_user_name(u);
        char *desc, *line;
        size_t n;

        if (names) {
            pk_reply_bulk_str(x->out, name);
            continue;
        }
        desc = pk_acl_describe(u);
        n = 5 + strlen(name) + 1 + (desc ? strlen(desc) : 0) + 1;
        if ((line = malloc(n)) != NULL) {
            snprintf(line, n, "user %s %s", name, desc ? desc : "");
            pk_reply_bulk_str(x->out, line);
        } else {
            pk_reply_bulk_str(x->out, "");
        }
        free(line);
        free(desc);
    }
}

static void reply_log(pk_cmd_ctx *x)
{
    pk_acl *a = x->srv->acl;
    int64_t count = 10;
    uint64_t now = pk_srv_wall_ms();

    if (x->argc == 3) {
        if (pk_arg_eq(&x->argv[2], "reset")) {
            pk_acl_log_reset(a);
            pk_reply_simple(x->out, "OK");
            return;
        }
        if (!pk_arg_i64(&x->argv[2], &count)) {
            pk_reply_notint(x);
            return;
        }
        if (count < 0)
            count = 0;
    }
    if ((size_t)count > pk_acl_log_len(a))
        count = (int64_t)pk_acl_log_len(a);
    pk_reply_array(x->out, (size_t)count);
    for (size_t i = 0; i < (size_t)count; i++) {
        const pk_acl_log_entry *e = pk_acl_log_get(a, i);
        static const char *const reasons[] = {"unknown", "command", "key",
                                              "auth", "channel"};
        pk_reply_map(x->out, x->proto, 7);
        pk_reply_bulk_str(x->out, "count");
        pk_reply_int(x->out, (int64_t)e->count);
        pk_reply_bulk_str(x->out, "reason");
        pk_reply_bulk_str(x->out, reasons[e->reason]);
        pk_reply_bulk_str(x->out, "context");
        pk_reply_bulk_str(x->out, e->context);
        pk_reply_bulk_str(x->out, "object");
        pk_reply_bulk_str(x->out, e->object);
        pk_reply_bulk_str(x->out, "username");
        pk_reply_bulk_str(x->out, e->username);
        pk_reply_bulk_str(x->out, "age-seconds");
        pk_reply_double(x->out, x->proto,
                        (double)(now > e->ctime_ms ? now - e->ctime_ms : 0) /
                            1000);
        pk_reply_bulk_str(x->out, "client-info");
        pk_reply_bulk_str(x->out, e->cinfo);
    }
}

static void reply_dryrun(pk_cmd_ctx *x)
{
    pk_acl_user *u = pk_acl_find(x->srv->acl, x->argv[2].ptr, x->argv[2].len);
    const pk_arg *args = x->argv + 3;
    int nargs = x->argc - 3, pos = 0, rc;
    const pk_cmd *cmd;
    const char *name;
    char msg[512];

    if (u == NULL) {
        pk_reply_errorf(x->out, "ERR User '%.*s' not found",
                        (int)x->argv[2].len, x->argv[2].ptr);
        return;
    }
    if ((cmd = pk_cmd_find(args[0].ptr, args[0].len)) == NULL) {
        pk_reply_errorf(x->out, "ERR Command '%.*s' not found",
                        (int)args[0].len, args[0].ptr);
        return;
    }
    if ((cmd->arity > 0 && nargs != cmd->arity) ||
        (cmd->arity < 0 && nargs < -cmd->arity)) {
        pk_reply_errorf(x->out,
                        "ERR wrong number of arguments for '%s' command",
                        cmd->name);
        return;
    }
    rc = pk_acl_check(u, cmd, nargs, args, &pos, &name);
    if (rc == PK_ACL_OK) {
        pk_reply_simple(x->out, "OK");
        return;
    }
    if (rc == PK_ACL_DENIED_CMD)
        snprintf(msg, sizeof(msg),
                 "This user has no permissions to run the '%s' command", name);
    else
        snprintf(msg, sizeof(msg),
                 "This user has no permissions to access the '%.*s' key",
                 (int)(args[pos].len > 256 ? 256 : args[pos].len),
                 args[pos].ptr);
    pk_reply_bulk_str(x->out, msg);
}

static void reply_genpass(pk_cmd_ctx *x)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[512];
    char hex[1024];
    int64_t bits = 256;
    size_t chars;

    if (x->argc == 3 && !pk_arg_i64(&x->argv[2], &bits)) {
        pk_reply_notint(x);
        return;
    }
    if (bits <= 0 || bits > 4096) {
        pk_reply_error(x->out, "ERR ACL GENPASS argument must be the number "
                               "of bits for the output password, a positive "
                               "number up to 4096");
        return;
    }
    chars = (size_t)(bits + 3) / 4;
    if (RAND_bytes(raw, (int)((chars + 1) / 2)) != 1) {
        pk_reply_error(x->out, "ERR no random bytes");
        return;
    }
    for (size_t i = 0; i < chars; i++)
        hex[i] = digits[i % 2 ? raw[i / 2] & 15 : raw[i / 2] >> 4];
    pk_reply_bulk(x->out, hex, chars);
}

typedef struct cat_out {
    pk_cmd_ctx *x;
    size_t n;
} cat_out;

static void cat_one(void *arg, const char *name)
{
    cat_out *o = arg;

    pk_reply_bulk_str(o->x->out, name);
    o->n++;
}

static void reply_cat(pk_cmd_ctx *x)
{
    cat_out o = {x, 0};
    size_t pos;

    if (x->argc == 2) {
        int n = 0;
        while (pk_acl_category(n))
            n++;
        pk_reply_array(x->out, (size_t)n);
        for (int i = 0; i < n; i++)
            pk_reply_bulk_str(x->out, pk_acl_category(i));
        return;
    }
    if (pk_acl_cat_cmds(x->argv[2].ptr, x->argv[2].len, NULL, NULL) ==
        PK_ENOTFOUND) {
        pk_reply_errorf(x->out, "ERR Unknown category '%.*s'",
                        (int)(x->argv[2].len > 128 ? 128 : x->argv[2].len),
                        x->argv[2].ptr);
        return;
    }
    pk_reply_defer(x->out, &pos);
    pk_acl_cat_cmds(x->argv[2].ptr, x->argv[2].len, cat_one, &o);
    pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY, o.n);
}

/* Reads the whole file into a malloc'd string; NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t cap = 0, n = 0, r;

    if (f == NULL)
        return NULL;
    do {
        if (n + 4096 + 1 > cap) {
            char *nb = realloc(buf, cap = (n + 4096 + 1) * 2);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        r = fread(buf + n, 1, 4096, f);
        n += r;
    } while (r > 0);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

int pk_acl_load_file(pk_server *s, pk_conn *self, const char *path, char **err)
{
    drop_ctx d = {s, self};
    size_t len = 0;
    char *text = read_file(path, &len);
    int rc;

    *err = NULL;
    if (text == NULL) {
        char msg[1024];
        snprintf(msg, sizeof(msg), "Error loading ACLs, opening file '%s': %s",
                 path, strerror(errno));
        *err = strdup(msg);
        return PK_EIO;
    }
    rc = pk_acl_load_text(s->acl, text, len, path, drop_conns, &d, err);
    free(text);
    return rc;
}

/* ACL SAVE: a temporary file beside path, then rename, as Redis does. */
static int save_file(pk_server *s, const char *path)
{
    char *text = pk_acl_save_text(s->acl), tmp[4096];
    size_t len;
    int fd, rc = PK_EIO;

    if (text == NULL)
        return PK_ENOMEM;
    len = strlen(text);
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d-%llu", path, (int)getpid(),
             (unsigned long long)pk_srv_wall_ms());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0 &&
        close(fd) == 0) {
        fd = -1;
        if (rename(tmp, path) == 0)
            rc = 0;
    }
    if (fd >= 0)
        close(fd);
    if (rc)
        unlink(tmp);
    free(text);
    return rc;
}

/* ACL subcommands and their Redis 7.0 arities (name included). */
static const pk_subcmd acl_subs[] = {
    {"cat", -2, NULL},     {"deluser", -3, NULL}, {"dryrun", -4, NULL},
    {"genpass", -2, NULL}, {"getuser", 3, NULL},  {"help", 2, NULL},
    {"list", 2, NULL},     {"load", 2, NULL},     {"log", -2, NULL},
    {"save", 2, NULL},     {"setuser", -3, NULL}, {"users", 2, NULL},
    {"whoami", 2, NULL}};

static void reply_help(pk_cmd_ctx *x)
{
    static const char *const help[] = {
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command "
        "categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without "
        "executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` "
        "argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help."};
    pk_reply_simples(x->out, help, sizeof(help) / sizeof(help[0]));
}

void pk_cmd_acl(pk_cmd_ctx *x)
{
    const pk_arg *sub = &x->argv[1];
    pk_server *s = x->srv;

    if (pk_cmd_subcommand(x, "acl", acl_subs,
                          sizeof(acl_subs) / sizeof(acl_subs[0])) < 0)
        return;
    if (pk_arg_eq(sub, "setuser")) {
        char *err = NULL;
        int rc;
        for (size_t i = 0; i < x->argv[2].len; i++) {
            char ch = x->argv[2].ptr[i];
            if (ch == 0 || ch == ' ' || (ch >= '\t' && ch <= '\r')) {
                pk_reply_error(x->out, "ERR Usernames can't contain spaces "
                                       "or null characters");
                return;
            }
        }
        rc = pk_acl_setuser(s->acl, x->argv[2].ptr, x->argv[2].len, x->argc - 3,
                            x->argv + 3, &err);
        if (rc == 0) {
            pk_reply_simple(x->out, "OK");
            publish(s, 0, x->argc - 2, x->argv + 2);
        } else if (err)
            pk_reply_errorf(x->out, "ERR %s", err);
        else
            pk_reply_error(x->out, "ERR out of memory");
        free(err);
    } else if (pk_arg_eq(sub, "deluser")) {
        int64_t n = 0;
        for (int i = 2; i < x->argc; i++) {
            if (pk_arg_eq(&x->argv[i], "default") && x->argv[i].len == 7 &&
                memcmp(x->argv[i].ptr, "default", 7) == 0) {
                pk_reply_error(x->out,
                               "ERR The 'default' user cannot be removed");
                return;
            }
        }
        drop_ctx d = {s, x->c};
        for (int i = 2; i < x->argc; i++)
            n += pk_acl_deluser(s->acl, x->argv[i].ptr, x->argv[i].len,
                                drop_conns, &d);
        pk_reply_int(x->out, n);
        if (n > 0)
            publish(s, 1, x->argc - 2, x->argv + 2);
    } else if (pk_arg_eq(sub, "getuser")) {
        const pk_acl_user *u =
            pk_acl_find(s->acl, x->argv[2].ptr, x->argv[2].len);
        if (u == NULL)
            pk_reply_null(x->out, x->proto);
        else
            reply_getuser(x, u);
    } else if (pk_arg_eq(sub, "list") || pk_arg_eq(sub, "users")) {
        reply_list(x, pk_arg_eq(sub, "users"));
    } else if (pk_arg_eq(sub, "whoami")) {
        if (x->c->user)
            pk_reply_bulk_str(x->out, pk_acl_user_name(x->c->user));
        else
            pk_reply_null(x->out, x->proto);
    } else if ((pk_arg_eq(sub, "load") || pk_arg_eq(sub, "save")) &&
               s->cfg.aclfile == NULL) {
        pk_reply_error(x->out,
                       "ERR This Redis instance is not configured to use an "
                       "ACL file. You may want to specify users via the ACL "
                       "SETUSER command and then issue a CONFIG REWRITE "
                       "(assuming you have a Redis configuration file set) "
                       "in order to store users in the Redis configuration.");
    } else if (pk_arg_eq(sub, "load")) {
        char *err = NULL;
        if (pk_acl_load_file(s, x->c, s->cfg.aclfile, &err) == 0) {
            char *text = pk_acl_save_text(s->acl);
            pk_reply_simple(x->out, "OK");
            if (text) {
                pk_arg a = {text, strlen(text)};
                publish(s, 2, 1, &a);
            }
            free(text);
        } else
            pk_reply_errorf(x->out, "ERR %s", err ? err : "out of memory");
        free(err);
    } else if (pk_arg_eq(sub, "save")) {
        if (save_file(s, s->cfg.aclfile) == 0)
            pk_reply_simple(x->out, "OK");
        else
            pk_reply_error(x->out, "ERR There was an error trying to save "
                                   "the ACLs. Please check the server logs "
                                   "for more information");
    } else if (pk_arg_eq(sub, "cat") && x->argc <= 3) {
        reply_cat(x);
    } else if (pk_arg_eq(sub, "genpass") && x->argc <= 3) {
        reply_genpass(x);
    } else if (pk_arg_eq(sub, "log") && x->argc <= 3) {
        reply_log(x);
    } else if (pk_arg_eq(sub, "dryrun")) {
        reply_dryrun(x);
    } else if (pk_arg_eq(sub, "help")) {
        reply_help(x);
    } else {
        pk_reply_errorf(x->out,
                        "ERR unknown subcommand or wrong number of arguments "
                        "for '%.*s'. Try ACL HELP.",
                        (int)(sub->len > 128 ? 128 : sub->len), sub->ptr);
    }
}

/*
 * ACL users at run time: the server's user set made at start
 * (--requirepass, --aclfile), a connection's user, the check of each
 * command before it runs, is queued or is forwarded (pk_cmd_dispatch)
 * and again at EXEC, the filters of commands that list keys, AUTH's user
 * check, and the ACL log entries of denials.  The ACL command is
 * pk_cmd_acl.c, the model pk_acl.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "server/pk_acl.h"
#include "server/pk_cmd.h"

/* The ACL users: "default" with --requirepass as its password, as Redis
 * sets it, then the --aclfile when there is one.  -1 after a message. */
int pk_acl_server_init(pk_server *s)
{
    size_t n;
    const pk_cmd *t = pk_cmd_table(&n);
    char *err = NULL;

    pk_acl_commands(t, n);
    if ((s->acl = pk_acl_new()) == NULL) {
        fprintf(stderr, "partkv: cannot make the ACL users: out of memory\n");
        return -1;
    }
    if (s->cfg.requirepass && *s->cfg.requirepass &&
        pk_acl_set_requirepass(s, s->cfg.requirepass,
                               strlen(s->cfg.requirepass), 0) != 0) {
        fprintf(stderr, "partkv: out of memory\n");
        return -1;
    }
    if (s->cfg.aclfile &&
        pk_acl_load_file(s, NULL, s->cfg.aclfile, &err) != 0) {
        fprintf(stderr, "partkv: aborting because of ACL errors: %s\n",
                err ? err : "out of memory");
        free(err);
        return -1;
    }
    return 0;
}

void pk_acl_conn_start(pk_server *s, pk_conn *c)
{
    pk_acl_user *d = pk_acl_default(s->acl);

    c->user = d;
    c->authed = pk_acl_user_on(d) && pk_acl_user_nopass(d);
}

/* Records a denial in the ACL log. */
static void log_denial(pk_cmd_ctx *x, int reason, const void *obj, size_t len,
                       const char *username)
{
    char info[1024];

    pk_cmd_client_info(x, x->c, info, sizeof(info));
    info[strcspn(info, "\n")] = '\0';
    pk_acl_log_add(x->srv->acl, reason,
                   x->c->multi || x->c->in_exec ? "multi" : "toplevel", obj,
                   len, username, info, pk_srv_wall_ms());
}

int pk_acl_conn_allows(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    const pk_acl_user *u = x->c->user;
    const char *name;
    int pos = 0, rc;

    rc = pk_acl_check(u, cmd, x->argc, x->argv, &pos, &name);
    if (rc == PK_ACL_OK)
        return 1;
    if (rc == PK_ACL_DENIED_CMD) {
        log_denial(x, rc, name, strlen(name), pk_acl_user_name(u));
        pk_reply_errorf(x->out,
                        "NOPERM this user has no permissions to run the "
                        "'%s' command",
                        name);
    } else {
        log_denial(x, rc, x->argv[pos].ptr, x->argv[pos].len,
                   pk_acl_user_name(u));
        pk_reply_error(x->out, "NOPERM this user has no permissions to access "
                               "one of the keys used as arguments");
    }
    return 0;
}

int pk_acl_exec_allows(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    const pk_acl_user *u = x->c->user;
    const char *name;
    int pos = 0, rc;

    if (u == NULL || x->c->internal || pk_acl_user_unrestricted(u))
        return 1;
    rc = pk_acl_check(u, cmd, x->argc, x->argv, &pos, &name);
    if (rc == PK_ACL_OK)
        return 1;
    if (rc == PK_ACL_DENIED_CMD)
        log_denial(x, rc, name, strlen(name), pk_acl_user_name(u));
    else
        log_denial(x, rc, x->argv[pos].ptr, x->argv[pos].len,
                   pk_acl_user_name(u));
    pk_reply_errorf(x->out,
                    "NOPERM ACLs rules changed between the moment the "
                    "transaction was accumulated and the EXEC call. This "
                    "command is no longer allowed for the following reason: "
                    "%s",
                    rc == PK_ACL_DENIED_CMD
                        ? "no permission to execute the command or subcommand"
                        : "no permission to touch the specified keys");
    return 0;
}

int pk_acl_conn_reads_all(pk_cmd_ctx *x)
{
    const pk_acl_user *u = x->c->user;
    const pk_cmd *cmd = pk_cmd_find(x->argv[0].ptr, x->argv[0].len);

    if (u == NULL || x->c->internal || pk_acl_user_unrestricted(u))
        return 1;
    return cmd && pk_acl_reads_all(u, cmd, x->argc, x->argv);
}

int pk_acl_conn_hides(const pk_conn *c, const void *key, size_t len)
{
    return c->user && !c->internal && !pk_acl_user_unrestricted(c->user) &&
           !pk_acl_key_readable(c->user, key, len);
}

int pk_acl_conn_auth(pk_cmd_ctx *x, const pk_arg *user, const pk_arg *pass)
{
    pk_acl_user *u = pk_acl_find(x->srv->acl, user->ptr, user->len);
    char name[256];

    if (u && pk_acl_user_auth(u, pass->ptr, pass->len)) {
        x->c->authed = 1;
        x->c->user = u;
        return 1;
    }
    snprintf(name, sizeof(name), "%.*s", (int)user->len, user->ptr);
    log_denial(x, PK_ACL_DENIED_AUTH, x->argv[0].ptr, x->argv[0].len, name);
    return 0;
}

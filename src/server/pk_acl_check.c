/*
 * pk_acl_check: whether a user may run a command -- one of its selectors
 * allows the command (or subcommand, or first argument) and every key
 * the command names, with the read/write rights Redis 7.0's key specs
 * ask -- and the ACL log of denials.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "server/pk_acl_int.h"
#include "server/pk_ctx.h"
#include "store/pk_glob.h"

/* ---- checks ---- */

static int key_ok(const acl_sel *s, const char *key, size_t len, unsigned need)
{
    if (s->flags & SEL_ALLKEYS)
        return 1;
    for (size_t i = 0; i < s->nkeys; i++) {
        if ((s->keys[i].perm & need) != need)
            continue;
        /* "*" matches every key, the empty one too, as in Redis. */
        if ((s->keys[i].len == 1 && s->keys[i].p[0] == '*') ||
            pk_glob_match(s->keys[i].p, s->keys[i].len, key, len, 0))
            return 1;
    }
    return 0;
}

int pk_acl_key_readable(const pk_acl_user *u, const void *key, size_t len)
{
    for (size_t i = 0; i < u->nsel; i++)
        if (key_ok(&u->sel[i], key, len, PERM_R))
            return 1;
    return 0;
}

static int name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(name, *list) == 0)
            return 1;
    return 0;
}

/* BITFIELD with GET (and OVERFLOW) alone only reads, as Redis 7.0's
 * bitfieldGetKeys decides; anything else (or a syntax error) writes. */
static int bitfield_reads_only(int argc, const pk_arg *argv)
{
    for (int i = 2; i < argc; i++) {
        int more = argc - i - 1;
        if (pk_arg_eq(&argv[i], "get") && more >= 2)
            i += 2;
        else if (pk_arg_eq(&argv[i], "overflow") && more >= 1)
            i += 1;
        else
            return 0;
    }
    return 1;
}

/*
 * The rights key k (0-based, in argument order) of a command needs, as
 * Redis 7.0's key specs say: read for a read-only command; for a write,
 * write, plus read when the command also returns what it held (INCR,
 * LPOP, GETDEL ...); the sources of a "store" command are only read.
 */
static unsigned key_need(const pk_cmd *cmd, int k, int argc, const pk_arg *argv)
{
    static const char *const rw[] = {
        "incr",     "decr",     "incrby",       "decrby",     "incrbyfloat",
        "getdel",   "getex",    "getset",       "lpop",       "rpop",
        "blpop",    "brpop",    "spop",         "zpopmin",    "zpopmax",
        "bzpopmin", "bzpopmax", "lmpop",        "blmpop",     "zmpop",
        "bzmpop",   "hincrby",  "hincrbyfloat", "bitfield",   "pfcount",
        "lmove",    "blmove",   "rpoplpush",    "brpoplpush", "smove",
        "rename",   "renamenx", "pfmerge",      NULL};
    /* First key read and written, the others written only. */
    static const char *const src_dst[] = {"lmove",      "blmove", "rpoplpush",
                                          "brpoplpush", "smove",  "rename",
                                          "renamenx",   NULL};
    /* First key written, the others (sources) read only. */
    static const char *const dst_src[] = {
        "sunionstore", "sinterstore", "sdiffstore",  "zunionstore",
        "zinterstore", "zdiffstore",  "zrangestore", "bitop",
        "pfmerge",     NULL};

    if (!(cmd->flags & PK_CMD_WRITE))
        return PERM_R;
    if (strcmp(cmd->name, "bitfield") == 0 && bitfield_reads_only(argc, argv))
        return PERM_R;
    if (strcmp(cmd->name, "copy") == 0 || strcmp(cmd->name, "sort") == 0)
        return k == 0 ? PERM_R : PERM_W;
    if (name_in(cmd->name, src_dst))
        return k == 0 ? PERM_R | PERM_W : PERM_W;
    if (name_in(cmd->name, dst_src)) {
        if (k > 0)
            return PERM_R;
        return strcmp(cmd->name, "pfmerge") == 0 ? PERM_R | PERM_W : PERM_W;
    }
    if (name_in(cmd->name, rw))
        return PERM_R | PERM_W;
    if (strcmp(cmd->name, "set") == 0) {
        for (int i = 3; i < argc; i++)
            if (argv[i].len == 3 && strncasecmp(argv[i].ptr, "get", 3) == 0)
                return PERM_R | PERM_W;
    }
    return PERM_W;
}

/* Whether s may read every key: allkeys, ~* or %R~*. */
static int sel_reads_all(const acl_sel *s)
{
    if (s->flags & SEL_ALLKEYS)
        return 1;
    for (size_t k = 0; k < s->nkeys; k++)
        if ((s->keys[k].perm & PERM_R) && s->keys[k].len == 1 &&
            s->keys[k].p[0] == '*')
            return 1;
    return 0;
}

/* Commands that return keys and values no argument names (partkv's:
 * Redis 7.0 has no such command but KEYS, SCAN, RANDOMKEY, which filter
 * their keys, as FT.SEARCH filters its hits): they need read access to
 * every key -- FT.AGGREGATE's groups and counts would tell of keys its
 * rows leave out. */
static int reads_unnamed(const pk_cmd *cmd)
{
    static const char *const names[] = {"ft.aggregate", "pk.hotkeys", NULL};

    return name_in(cmd->name, names);
}

static int sel_check(const acl_sel *s, const pk_cmd *cmd, size_t id, int argc,
                     const pk_arg *argv, int *pos)
{
    pk_keyrun r[PK_KEYRUNS_MAX];
    int nruns, k = 0;

    if (!(s->flags & SEL_ALLCOMMANDS) && !(cmd->flags & PK_CMD_NOAUTH) &&
        !sel_bit(s, id)) {
        int ok = 0;
        for (size_t i = 0; argc >= 2 && !ok && i < s->nfargs; i++)
            ok = s->fargs[i].id == id &&
                 strlen(s->fargs[i].arg) == argv[1].len &&
                 strncasecmp(s->fargs[i].arg, argv[1].ptr, argv[1].len) == 0;
        if (!ok)
            return PK_ACL_DENIED_CMD;
    }
    if (s->flags & SEL_ALLKEYS)
        return PK_ACL_OK;
    if (reads_unnamed(cmd) && !sel_reads_all(s)) {
        *pos = 0;
        return PK_ACL_DENIED_KEY;
    }
    nruns = pk_cmd_keyruns(cmd, argc, argv, r);
    for (int j = 0; j < nruns; j++) {
        for (int i = r[j].first; i <= r[j].last; i += r[j].step, k++) {
            pk_slice key = pk_cmd_key(cmd, &argv[i]);
            if (!key_ok(s, (const char *)key.ptr, key.len,
                        key_need(cmd, k, argc, argv))) {
                *pos = i;
                return PK_ACL_DENIED_KEY;
            }
        }
    }
    return PK_ACL_OK;
}

int pk_acl_check(const pk_acl_user *u, const pk_cmd *cmd, int argc,
                 const pk_arg *argv, int *pos, const char **fullname)
{
    size_t id = pk__acl_cmd_id(cmd);
    int worst = PK_ACL_DENIED_CMD, last = 0;

    if (argc >= 2)
        id = pk__acl_sub_id(id, argv[1].ptr, argv[1].len);
    if (fullname)
        *fullname = pk__acl_id_name(id);
    for (size_t i = 0; i < u->nsel; i++) {
        int at = 0, rc = sel_check(&u->sel[i], cmd, id, argc, argv, &at);
        if (rc == PK_ACL_OK)
            return PK_ACL_OK;
        if (rc > worst || (rc == worst && at > last)) {
            worst = rc;
            last = at;
        }
    }
    *pos = last;
    return worst;
}

int pk_acl_reads_all(const pk_acl_user *u, const pk_cmd *cmd, int argc,
                     const pk_arg *argv)
{
    size_t id = pk__acl_cmd_id(cmd);

    if (argc >= 2)
        id = pk__acl_sub_id(id, argv[1].ptr, argv[1].len);
    for (size_t i = 0; i < u->nsel; i++) {
        const acl_sel *s = &u->sel[i];
        int pos = 0;
        if (sel_reads_all(s) &&
            sel_check(s, cmd, id, argc, argv, &pos) == PK_ACL_OK)
            return 1;
    }
    return 0;
}

/* ---- the log ---- */

static void entry_free(pk_acl_log_entry *e)
{
    free(e->object);
    free(e->username);
    free(e->cinfo);
}

void pk_acl_log_add(pk_acl *a, int reason, const char *context,
                    const void *object, size_t olen, const char *username,
                    const char *cinfo, uint64_t now_ms)
{
    pk_acl_log_entry e = {1, reason, context, NULL, NULL, NULL, now_ms};

    /* Like entries of the last minute among the 10 newest are merged. */
    for (size_t i = 0; i < a->nlog && i < 10; i++) {
        pk_acl_log_entry *m = &a->log[i];
        uint64_t dt =
            now_ms > m->ctime_ms ? now_ms - m->ctime_ms : m->ctime_ms - now_ms;
        char *ci;
        if (m->reason != reason || strcmp(m->context, context) != 0 ||
            dt > 60000 || strlen(m->object) != olen ||
            memcmp(m->object, object, olen) != 0 ||
            strcmp(m->username, username) != 0)
            continue;
        if ((ci = strdup(cinfo)) != NULL) {
            free(m->cinfo);
            m->cinfo = ci;
        }
        m->ctime_ms = now_ms;
        m->count++;
        e = *m;
        memmove(&a->log[1], &a->log[0], i * sizeof(a->log[0]));
        a->log[0] = e;
        return;
    }
    e.object = strndup(object, olen);
    e.username = strdup(username);
    e.cinfo = strdup(cinfo);
    if (e.object == NULL || e.username == NULL || e.cinfo == NULL) {
        entry_free(&e);
        return;
    }
    if (a->maxlog == 0) {
        entry_free(&e);
        return;
    }
    if (a->nlog == a->maxlog)
        entry_free(&a->log[--a->nlog]);
    memmove(&a->log[1], &a->log[0], a->nlog * sizeof(a->log[0]));
    a->log[0] = e;
    a->nlog++;
}

int pk_acl_log_limit(pk_acl *a, size_t n)
{
    pk_acl_log_entry *v;

    while (a->nlog > n)
        entry_free(&a->log[--a->nlog]);
    if ((v = realloc(a->log, (n ? n : 1) * sizeof(*v))) == NULL)
        return n <= a->maxlog ? (a->maxlog = n, 0) : PK_ENOMEM;
    a->log = v;
    a->maxlog = n;
    return 0;
}

size_t pk_acl_log_len(const pk_acl *a)
{
    return a->nlog;
}

const pk_acl_log_entry *pk_acl_log_get(const pk_acl *a, size_t i)
{
    return i < a->nlog ? &a->log[i] : NULL;
}

void pk_acl_log_reset(pk_acl *a)
{
    for (size_t i = 0; i < a->nlog; i++)
        entry_free(&a->log[i]);
    a->nlog = 0;
}

/*
 * pk_acl_text: users as text -- the rules that describe a user (ACL LIST,
 * GETUSER), and the ACL file: parsing it with Redis's error messages,
 * loading it (ACL LOAD, --aclfile), taking a cluster's users in place,
 * and writing it (ACL SAVE).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_acl_int.h"

/* ---- descriptions ---- */

typedef struct dstr {
    char *p;
    size_t len;
    int oom;
} dstr;

static void ds_add(dstr *d, const char *s, size_t n)
{
    char *p;

    if (d->oom)
        return;
    if ((p = realloc(d->p, d->len + n + 1)) == NULL) {
        d->oom = 1;
        return;
    }
    memcpy(p + d->len, s, n);
    d->len += n;
    p[d->len] = '\0';
    d->p = p;
}

static void ds_str(dstr *d, const char *s)
{
    ds_add(d, s, strlen(s));
}

static char *ds_done(dstr *d)
{
    if (d->oom) {
        free(d->p);
        return NULL;
    }
    if (d->p == NULL)
        return strdup("");
    return d->p;
}

static void ds_keypat(dstr *d, const acl_pat *p)
{
    /* A read-write "*" that is not allkeys ("~a %RW~*": Redis describes it
     * "~*", which reads back as allkeys and drops "~a") says "%RW~*". */
    int star = p->len == 1 && p->p[0] == '*';

    ds_str(d, p->perm == (PERM_R | PERM_W) ? (star ? "%RW~" : "~")
              : p->perm == PERM_R          ? "%R~"
                                           : "%W~");
    ds_add(d, p->p, p->len);
}

/* ACLDescribeSelector: keys, channels, then command rules. */
static void describe_sel(dstr *d, const acl_sel *s)
{
    char *cmds;

    if (s->flags & SEL_ALLKEYS) {
        ds_str(d, "~* ");
    } else {
        for (size_t i = 0; i < s->nkeys; i++) {
            ds_keypat(d, &s->keys[i]);
            ds_str(d, " ");
        }
    }
    if (s->flags & SEL_ALLCHANNELS) {
        ds_str(d, "&* ");
    } else {
        ds_str(d, "resetchannels ");
        for (size_t i = 0; i < s->nchans; i++) {
            ds_str(d, "&");
            ds_add(d, s->chans[i].p, s->chans[i].len);
            ds_str(d, " ");
        }
    }
    if ((cmds = pk__acl_describe_cmds(s)) == NULL) {
        d->oom = 1;
        return;
    }
    ds_str(d, cmds);
    free(cmds);
}

int pk_acl_user_flags(const pk_acl_user *u, const char *flags[5])
{
    int n = 0;

    if (u->flags & USER_ON)
        flags[n++] = "on";
    if (u->flags & USER_OFF)
        flags[n++] = "off";
    if (u->flags & USER_NOPASS)
        flags[n++] = "nopass";
    if (u->flags & USER_SKIP_SANITIZE)
        flags[n++] = "skip-sanitize-payload";
    if (u->flags & USER_SANITIZE)
        flags[n++] = "sanitize-payload";
    return n;
}

char *pk_acl_describe(const pk_acl_user *u)
{
    dstr d = {0};
    const char *flags[5];
    int n = pk_acl_user_flags(u, flags);

    for (int i = 0; i < n; i++) {
        ds_str(&d, flags[i]);
        ds_str(&d, " ");
    }
    for (size_t i = 0; i < u->npass; i++) {
        ds_str(&d, "#");
        ds_add(&d, u->pass[i], 64);
        ds_str(&d, " ");
    }
    describe_sel(&d, &u->sel[0]);
    for (size_t i = 1; i < u->nsel; i++) {
        ds_str(&d, " (");
        describe_sel(&d, &u->sel[i]);
        ds_str(&d, ")");
    }
    return ds_done(&d);
}

size_t pk_acl_user_passwords(const pk_acl_user *u)
{
    return u->npass;
}

const char *pk_acl_user_pass(const pk_acl_user *u, size_t i)
{
    return u->pass[i];
}

size_t pk_acl_user_selectors(const pk_acl_user *u)
{
    return u->nsel - 1;
}

int pk_acl_selector_describe(const pk_acl_user *u, size_t i, char **cmds,
                             char **keys, char **chans)
{
    const acl_sel *s = &u->sel[i];
    dstr k = {0}, c = {0};

    if (s->flags & SEL_ALLKEYS) {
        ds_str(&k, "~*");
    } else {
        for (size_t j = 0; j < s->nkeys; j++) {
            if (j)
                ds_str(&k, " ");
            ds_keypat(&k, &s->keys[j]);
        }
    }
    if (s->flags & SEL_ALLCHANNELS) {
        ds_str(&c, "&*");
    } else {
        for (size_t j = 0; j < s->nchans; j++) {
            ds_str(&c, j ? " &" : "&");
            ds_add(&c, s->chans[j].p, s->chans[j].len);
        }
    }
    *cmds = pk__acl_describe_cmds(s);
    *keys = ds_done(&k);
    *chans = ds_done(&c);
    if (*cmds && *keys && *chans)
        return 0;
    free(*cmds);
    free(*keys);
    free(*chans);
    return PK_ENOMEM;
}

/* ---- the ACL file ---- */

/* Appends printf-style text to d. */
static void ds_fmt(dstr *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ds_fmt(dstr *d, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        ds_add(d, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* One line "user name rules..." into the set *users; errors to d. */
static void load_line(pk_acl_user **users, char *line, const char *path,
                      int lineno, dstr *d)
{
    pk_arg argv[512];
    int argc = 0, syntax = 0;
    acl_rulev v = {0};
    pk_acl_user *u, **pp;
    char *p = line;

    /* Split on single spaces, as Redis does (empty pieces are no-ops). */
    while (argc < (int)(sizeof(argv) / sizeof(argv[0]))) {
        char *sp = strchr(p, ' ');
        argv[argc].ptr = p;
        argv[argc++].len = sp ? (size_t)(sp - p) : strlen(p);
        if (sp == NULL)
            break;
        p = sp + 1;
    }
    if (argc < 2 || argv[0].len != 4 || memcmp(argv[0].ptr, "user", 4) != 0) {
        ds_fmt(d,
               "%s:%d should start with user keyword followed by the "
               "username. ",
               path, lineno);
        return;
    }
    pp = users;
    for (; *pp; pp = &(*pp)->next) {
        if ((*pp)->nlen == argv[1].len &&
            memcmp((*pp)->name, argv[1].ptr, argv[1].len) == 0) {
            ds_fmt(d, "WARNING: Duplicate user '%.*s' found on line %d. ",
                   (int)argv[1].len, argv[1].ptr, lineno);
            return;
        }
    }
    if ((u = pk__acl_user_new(argv[1].ptr, argv[1].len)) == NULL) {
        d->oom = 1;
        return;
    }
    *pp = u;
    if (pk__acl_rules_merge(argc - 2, argv + 2, &v, &syntax) != 0) {
        ds_fmt(d, "%s:%d: Unmatched parenthesis in selector definition.", path,
               lineno);
        pk__acl_rulev_free(&v);
        return;
    }
    syntax = 0;
    for (int j = 0; j < v.n; j++) {
        const char *why = pk__acl_e_wrong;
        if (pk__acl_user_rule(u, v.s[j], v.len[j], &why) == 0)
            continue;
        if (why == pk__acl_e_noent)
            ds_fmt(d, "%s:%d: Error in applying operation '%s': %s. ", path,
                   lineno, v.s[j], why);
        else if (!syntax)
            ds_fmt(d, "%s:%d: %s. ", path, lineno, why);
        syntax = syntax || why != pk__acl_e_noent;
    }
    pk__acl_rulev_free(&v);
}

/* Parses text into a list of users (unsorted); 0, or PK_EINVAL with
 * *err, or PK_ENOMEM. */
static int parse_text(const char *text, size_t len, const char *path,
                      pk_acl_user **list, char **err)
{
    char *copy = strndup(text, len), *line, *save = NULL;
    dstr d = {0};
    int lineno = 0;

    *list = NULL;
    *err = NULL;
    if (copy == NULL)
        return PK_ENOMEM;
    /* Lines are counted as Redis counts them (blank ones too). */
    for (line = copy; line; line = save) {
        size_t n;
        save = strchr(line, '\n');
        if (save)
            *save++ = '\0';
        lineno++;
        while (*line == ' ' || *line == '\t' || *line == '\r')
            line++;
        n = strlen(line);
        while (n > 0 && strchr(" \t\r", line[n - 1]))
            line[--n] = '\0';
        if (n > 0)
            load_line(list, line, path, lineno, &d);
    }
    free(copy);
    if (!d.oom && d.len == 0)
        return 0;
    pk__acl_users_free(*list);
    *list = NULL;
    if (d.oom) {
        free(d.p);
        return PK_ENOMEM;
    }
    ds_str(&d, "WARNING: ACL errors detected, no change to the previously "
               "active ACL rules was performed");
    if ((*err = ds_done(&d)) == NULL)
        return PK_ENOMEM;
    return PK_EINVAL;
}

int pk_acl_load_text(pk_acl *a, const char *text, size_t len, const char *path,
                     void (*gone)(void *arg, const pk_acl_user *u), void *arg,
                     char **err)
{
    pk_acl_user *list = NULL, *sorted = NULL, *def = NULL;
    int rc = parse_text(text, len, path, &list, err);

    if (rc)
        return rc;
    /* Sort the new users by name; "default" keeps its struct. */
    while (list) {
        pk_acl_user *u = list, **pp = &sorted;
        list = u->next;
        if (u->nlen == 7 && memcmp(u->name, "default", 7) == 0) {
            def = u;
            continue;
        }
        while (*pp && strcmp((*pp)->name, u->name) < 0)
            pp = &(*pp)->next;
        u->next = *pp;
        *pp = u;
    }
    if (def == NULL && (def = pk__acl_default_new()) == NULL) {
        pk__acl_users_free(sorted);
        return PK_ENOMEM;
    }
    pk__acl_take_rights(a->def, def);
    for (pk_acl_user *u = a->users, *next; u; u = next) {
        next = u->next;
        if (u == a->def)
            continue;
        if (gone)
            gone(arg, u);
        pk__acl_user_free(u);
    }
    a->users = NULL;
    a->nusers = 1;
    a->def->next = NULL;
    /* Insert default in order. */
    {
        pk_acl_user **pp = &sorted;
        while (*pp && strcmp((*pp)->name, "default") < 0)
            pp = &(*pp)->next;
        a->def->next = *pp;
        *pp = a->def;
    }
    a->users = sorted;
    a->nusers = 0;
    for (pk_acl_user *u = sorted; u; u = u->next)
        a->nusers++;
    return 0;
}

int pk_acl_sync_text(pk_acl *a, const char *text, size_t len,
                     void (*gone)(void *arg, const pk_acl_user *u), void *arg,
                     char **err)
{
    pk_acl_user *list = NULL, **pp;
    int rc = parse_text(text, len, "coordinator", &list, err);

    if (rc)
        return rc;
    for (pk_acl_user *u = a->users; u; u = u->next)
        u->mark = u == a->def; /* a text without "default" keeps it */
    while (list) {
        pk_acl_user *n = list, *old;
        list = n->next;
        n->next = NULL;
        if ((old = pk_acl_find(a, n->name, n->nlen)) != NULL) {
            pk__acl_take_rights(old, n);
            old->mark = 1;
            continue;
        }
        pp = pk__acl_slot_of(a, n->name, n->nlen);
        n->next = *pp;
        n->mark = 1;
        *pp = n;
        a->nusers++;
    }
    for (pp = &a->users; *pp;) {
        pk_acl_user *u = *pp;
        if (u->mark) {
            pp = &u->next;
            continue;
        }
        if (gone)
            gone(arg, u);
        *pp = u->next;
        a->nusers--;
        pk__acl_user_free(u);
    }
    return 0;
}

char *pk_acl_save_text(const pk_acl *a)
{
    dstr d = {0};

    for (const pk_acl_user *u = a->users; u; u = u->next) {
        char *desc = pk_acl_describe(u);
        if (desc == NULL) {
            free(d.p);
            return NULL;
        }
        ds_str(&d, "user ");
        ds_add(&d, u->name, u->nlen);
        ds_str(&d, " ");
        ds_str(&d, desc);
        ds_str(&d, "\n");
        free(desc);
    }
    return ds_done(&d);
}

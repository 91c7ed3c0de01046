/*
 * pk_acl: the user set and its users -- creation, copies, SETUSER (the
 * rules applied to a copy, swapped in only when every rule applied, so a
 * bad rule changes nothing), DELUSER and AUTH.  The rules themselves are
 * pk_acl_rules.c, the checks and the log pk_acl_check.c, descriptions
 * and the ACL file's text pk_acl_text.c, command ids and categories
 * pk_acl_ids.c.
 *
 * A user's struct keeps its address across changes: connections hold it.
 * Passwords are kept as SHA-256 hex only and compared with CRYPTO_memcmp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/pk_err.h"
#include "server/pk_acl_int.h"

/* ---- users and selectors: creation, copy, free ---- */

void pk__acl_pats_free(acl_pat *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i].p);
    free(p);
}

void pk__acl_sel_clear(acl_sel *s)
{
    pk__acl_pats_free(s->keys, s->nkeys);
    pk__acl_pats_free(s->chans, s->nchans);
    for (size_t i = 0; i < s->nfargs; i++)
        free(s->fargs[i].arg);
    free(s->fargs);
    memset(s, 0, sizeof(*s));
}

static int pats_copy(acl_pat **dst, const acl_pat *src, size_t n)
{
    *dst = NULL;
    if (n == 0)
        return 0;
    if ((*dst = calloc(n, sizeof(**dst))) == NULL)
        return PK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        (*dst)[i] = src[i];
        if (((*dst)[i].p = strdup(src[i].p)) == NULL) {
            pk__acl_pats_free(*dst, i);
            *dst = NULL;
            return PK_ENOMEM;
        }
    }
    return 0;
}

static int sel_copy(acl_sel *d, const acl_sel *s)
{
    memset(d, 0, sizeof(*d));
    d->flags = s->flags;
    memcpy(d->bits, s->bits, sizeof(d->bits));
    if (pats_copy(&d->keys, s->keys, s->nkeys))
        goto fail;
    d->nkeys = s->nkeys;
    if (pats_copy(&d->chans, s->chans, s->nchans))
        goto fail;
    d->nchans = s->nchans;
    if (s->nfargs) {
        if ((d->fargs = calloc(s->nfargs, sizeof(*d->fargs))) == NULL)
            goto fail;
        for (; d->nfargs < s->nfargs; d->nfargs++) {
            d->fargs[d->nfargs].id = s->fargs[d->nfargs].id;
            d->fargs[d->nfargs].arg = strdup(s->fargs[d->nfargs].arg);
            if (d->fargs[d->nfargs].arg == NULL)
                goto fail;
        }
    }
    return 0;
fail:
    pk__acl_sel_clear(d);
    return PK_ENOMEM;
}

/* Frees what u owns (not u itself). */
void pk__acl_user_clear(pk_acl_user *u)
{
    for (size_t i = 0; i < u->nsel; i++)
        pk__acl_sel_clear(&u->sel[i]);
    free(u->sel);
    free(u->pass);
    u->sel = NULL;
    u->pass = NULL;
    u->nsel = u->npass = 0;
}

void pk__acl_user_free(pk_acl_user *u)
{
    if (u == NULL)
        return;
    pk__acl_user_clear(u);
    free(u->name);
    free(u);
}

/* A new user: off, no passwords, a root selector with no rights. */
pk_acl_user *pk__acl_user_new(const char *name, size_t len)
{
    pk_acl_user *u = calloc(1, sizeof(*u));

    if (u == NULL)
        return NULL;
    u->name = malloc(len + 1);
    u->sel = calloc(1, sizeof(*u->sel));
    if (u->name == NULL || u->sel == NULL) {
        free(u->sel);
        free(u->name);
        free(u);
        return NULL;
    }
    memcpy(u->name, name, len);
    u->name[len] = '\0';
    u->nlen = len;
    u->nsel = 1;
    u->flags = USER_OFF;
    return u;
}

/* Copies the rights of s (flags, passwords, selectors) into d, which
 * owns nothing yet. */
static int user_copy_rights(pk_acl_user *d, const pk_acl_user *s)
{
    d->flags = s->flags;
    d->pass = NULL;
    d->npass = 0;
    d->sel = NULL;
    d->nsel = 0;
    if (s->npass) {
        if ((d->pass = malloc(s->npass * sizeof(*d->pass))) == NULL)
            return PK_ENOMEM;
        memcpy(d->pass, s->pass, s->npass * sizeof(*d->pass));
        d->npass = s->npass;
    }
    if ((d->sel = calloc(s->nsel, sizeof(*d->sel))) == NULL)
        return PK_ENOMEM;
    for (; d->nsel < s->nsel; d->nsel++)
        if (sel_copy(&d->sel[d->nsel], &s->sel[d->nsel]))
            return PK_ENOMEM;
    return 0;
}

/* Moves the rights of src into dst (which keeps its name and place);
 * frees src. */
void pk__acl_take_rights(pk_acl_user *dst, pk_acl_user *src)
{
    pk__acl_user_clear(dst);
    dst->flags = src->flags;
    dst->pass = src->pass;
    dst->npass = src->npass;
    dst->sel = src->sel;
    dst->nsel = src->nsel;
    src->pass = NULL;
    src->sel = NULL;
    src->npass = src->nsel = 0;
    pk__acl_user_free(src);
}

pk_acl_user **pk__acl_slot_of(pk_acl *a, const char *name, size_t len)
{
    pk_acl_user **pp = &a->users;

    for (; *pp; pp = &(*pp)->next) {
        size_t m = (*pp)->nlen < len ? (*pp)->nlen : len;
        int c = memcmp((*pp)->name, name, m);
        if (c > 0 || (c == 0 && (*pp)->nlen >= len))
            break;
    }
    return pp;
}

pk_acl_user *pk_acl_find(const pk_acl *a, const char *name, size_t len)
{
    pk_acl_user **pp = pk__acl_slot_of((pk_acl *)a, name, len);

    return *pp && (*pp)->nlen == len && memcmp((*pp)->name, name, len) == 0
               ? *pp
               : NULL;
}

static char *fmt_err(const char *fmt, const char *a, const char *b)
{
    size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
    char *s = malloc(n);

    if (s)
        snprintf(s, n, fmt, a, b);
    return s;
}

/* Applies rules to a staged copy of u (or of a new user) and swaps it in.
 * u NULL: creates the user in a. */
static int setuser(pk_acl *a, pk_acl_user *u, const char *name, size_t nlen,
                   int n, const pk_arg *rules, char **err)
{
    acl_rulev v = {0};
    pk_acl_user tmp = {0};
    int open = 0, rc;
    const char *why = pk__acl_e_wrong;

    *err = NULL;
    rc = pk__acl_rules_merge(n, rules, &v, &open);
    if (rc == PK_EINVAL) {
        char arg[1024];
        snprintf(arg, sizeof(arg), "%.*s", (int)rules[open].len,
                 rules[open].ptr);
        *err = fmt_err("Unmatched parenthesis in acl selector starting at "
                       "'%s'.",
                       arg, NULL);
        goto out;
    }
    if (rc)
        goto out;
    if (u) {
        rc = user_copy_rights(&tmp, u);
    } else {
        tmp.flags = USER_OFF;
        tmp.nsel = 1;
        rc = (tmp.sel = calloc(1, sizeof(*tmp.sel))) ? 0 : PK_ENOMEM;
    }
    for (int j = 0; rc == 0 && j < v.n; j++) {
        rc = pk__acl_user_rule(&tmp, v.s[j], v.len[j], &why);
        if (rc == PK_EINVAL)
            *err =
                fmt_err("Error in ACL SETUSER modifier '%s': %s", v.s[j], why);
    }
    if (rc)
        goto out;
    if (u == NULL) {
        pk_acl_user **pp = pk__acl_slot_of(a, name, nlen);
        if ((u = pk__acl_user_new(name, nlen)) == NULL) {
            rc = PK_ENOMEM;
            goto out;
        }
        u->next = *pp;
        *pp = u;
        a->nusers++;
    }
    pk__acl_user_clear(u);
    u->flags = tmp.flags;
    u->pass = tmp.pass;
    u->npass = tmp.npass;
    u->sel = tmp.sel;
    u->nsel = tmp.nsel;
    memset(&tmp, 0, sizeof(tmp));
out:
    pk__acl_user_clear(&tmp);
    pk__acl_rulev_free(&v);
    if (rc == PK_EINVAL && *err == NULL)
        rc = PK_ENOMEM;
    return rc;
}

int pk_acl_setuser(pk_acl *a, const char *name, size_t nlen, int nrules,
                   const pk_arg *rules, char **err)
{
    return setuser(a, pk_acl_find(a, name, nlen), name, nlen, nrules, rules,
                   err);
}

/* ---- the set ---- */

pk_acl_user *pk__acl_default_new(void)
{
    static const pk_arg rules[] = {
        {"+@all", 5}, {"~*", 2}, {"&*", 2}, {"on", 2}, {"nopass", 6}};
    pk_acl_user *u = pk__acl_user_new("default", 7);
    const char *why;

    if (u == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        if (pk__acl_user_rule(u, rules[i].ptr, rules[i].len, &why)) {
            pk__acl_user_free(u);
            return NULL;
        }
    }
    return u;
}

pk_acl *pk_acl_new(void)
{
    pk_acl *a;

    if (pk__acl_nids() == 0 || (a = calloc(1, sizeof(*a))) == NULL)
        return NULL;
    if ((a->def = a->users = pk__acl_default_new()) == NULL) {
        free(a);
        return NULL;
    }
    a->nusers = 1;
    if (pk_acl_log_limit(a, PK_ACL_LOG_MAX) != 0) {
        pk_acl_free(a);
        return NULL;
    }
    return a;
}

void pk__acl_users_free(pk_acl_user *u)
{
    while (u) {
        pk_acl_user *next = u->next;
        pk__acl_user_free(u);
        u = next;
    }
}

void pk_acl_free(pk_acl *a)
{
    if (a == NULL)
        return;
    pk__acl_users_free(a->users);
    pk_acl_log_reset(a);
    free(a->log);
    free(a);
}

pk_acl_user *pk_acl_default(const pk_acl *a)
{
    return a->def;
}

const char *pk_acl_user_name(const pk_acl_user *u)
{
    return u->name;
}

int pk_acl_user_on(const pk_acl_user *u)
{
    return (u->flags & USER_ON) != 0;
}

int pk_acl_user_nopass(const pk_acl_user *u)
{
    return (u->flags & USER_NOPASS) != 0;
}

int pk_acl_user_unrestricted(const pk_acl_user *u)
{
    const unsigned all = SEL_ALLCOMMANDS | SEL_ALLKEYS | SEL_ALLCHANNELS;

    return (u->sel[0].flags & all) == all;
}

int pk_acl_deluser(pk_acl *a, const char *name, size_t nlen,
                   void (*gone)(void *arg, const pk_acl_user *u), void *arg)
{
    pk_acl_user **pp = pk__acl_slot_of(a, name, nlen), *u = *pp;

    if (u == NULL || u->nlen != nlen || memcmp(u->name, name, nlen) != 0 ||
        u == a->def)
        return 0;
    if (gone)
        gone(arg, u);
    *pp = u->next;
    a->nusers--;
    pk__acl_user_free(u);
    return 1;
}

int pk_acl_user_auth(const pk_acl_user *u, const void *pass, size_t len)
{
    char hex[65];
    int ok = 0;

    if (!(u->flags & USER_ON))
        return 0;
    if (u->flags & USER_NOPASS)
        return 1;
    pk_acl_hash(pass, len, hex);
    for (size_t i = 0; i < u->npass; i++)
        ok |= CRYPTO_memcmp(hex, u->pass[i], 64) == 0;
    OPENSSL_cleanse(hex, sizeof(hex));
    return ok;
}

pk_acl_user *pk_acl_first(const pk_acl *a)
{
    return a->users;
}

pk_acl_user *pk_acl_next(const pk_acl_user *u)
{
    return u->next;
}

size_t pk_acl_count(const pk_acl *a)
{
    return a->nusers;
}

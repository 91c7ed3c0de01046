/*
 * pk_acl: ACL users -- the set, Redis 7.0's SETUSER rules, the check of a
 * command against a user, the description of a user as rules, the ACL
 * log and the ACL file's text.  The command id space and categories are
 * pk_acl_ids.c.
 *
 * A SETUSER applies its rules to a copy of the user and swaps the copy in
 * only when every rule applied, so a bad rule changes nothing.  The
 * user's struct keeps its address across changes: connections hold it.
 * Passwords are kept as SHA-256 hex only and compared with CRYPTO_memcmp.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/pk_err.h"
#include "server/pk_acl_int.h"
#include "server/pk_cmd.h"
#include "store/pk_glob.h"

struct pk_acl {
    pk_acl_user *users; /* owned, in name order; "default" always there */
    pk_acl_user *def;
    size_t nusers;
    pk_acl_log_entry *log; /* owned, newest first; room for maxlog */
    size_t nlog, maxlog;
};

/* ---- users and selectors: creation, copy, free ---- */

static void pats_free(acl_pat *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i].p);
    free(p);
}

static void sel_clear(acl_sel *s)
{
    pats_free(s->keys, s->nkeys);
    pats_free(s->chans, s->nchans);
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
            pats_free(*dst, i);
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
    sel_clear(d);
    return PK_ENOMEM;
}

/* Frees what u owns (not u itself). */
static void user_clear(pk_acl_user *u)
{
    for (size_t i = 0; i < u->nsel; i++)
        sel_clear(&u->sel[i]);
    free(u->sel);
    free(u->pass);
    u->sel = NULL;
    u->pass = NULL;
    u->nsel = u->npass = 0;
}

static void user_free(pk_acl_user *u)
{
    if (u == NULL)
        return;
    user_clear(u);
    free(u->name);
    free(u);
}

/* A new user: off, no passwords, a root selector with no rights. */
static pk_acl_user *user_new(const char *name, size_t len)
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

/* ---- rules ---- */

/* Whether s has a space, a control character or a NUL. */
static int has_spaces(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (isspace((unsigned char)s[i]) || s[i] == 0)
            return 1;
    return 0;
}

void pk_acl_hash(const void *pass, size_t len, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    EVP_Digest(pass, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    OPENSSL_cleanse(md, sizeof(md));
}

static int valid_hash(const char *h, size_t len)
{
    if (len != 64)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((h[i] >= 'a' && h[i] <= 'f') || (h[i] >= '0' && h[i] <= '9')))
            return 0;
    return 1;
}

/* Why a rule failed: Redis's texts (ACLSetUserStringError). */
static const char E_WRONG[] = "Wrong format";
static const char E_NOENT[] = "Unknown command or category name in ACL";
static const char E_SYNTAX[] = "Syntax error";
static const char E_KEYSTAR[] =
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not "
    "valid and does not have any effect. Try 'resetkeys' to start with an "
    "empty list of patterns";
static const char E_CHANSTAR[] =
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is "
    "not valid and does not have any effect. Try 'resetchannels' to start "
    "with an empty list of channels";
static const char E_NODEV[] =
    "The password you are trying to remove from the user does not exist";
static const char E_BADHASH[] =
    "The password hash must be exactly 64 characters and contain only "
    "lowercase hexadecimal characters";
static const char E_CHILD[] =
    "Allowing first-arg of a subcommand is not supported";

static int add_pat(acl_pat **v, size_t *n, const char *p, size_t len,
                   unsigned perm)
{
    acl_pat *nv;

    for (size_t i = 0; i < *n; i++) {
        if ((*v)[i].len == len && memcmp((*v)[i].p, p, len) == 0) {
            (*v)[i].perm |= perm; /* the same pattern is not added twice */
            return 0;
        }
    }
    if ((nv = realloc(*v, (*n + 1) * sizeof(**v))) == NULL)
        return PK_ENOMEM;
    *v = nv;
    if ((nv[*n].p = malloc(len + 1)) == NULL)
        return PK_ENOMEM;
    memcpy(nv[*n].p, p, len);
    nv[*n].p[len] = '\0';
    nv[*n].len = len;
    nv[*n].perm = perm;
    (*n)++;
    return 0;
}

static int add_farg(acl_sel *s, size_t id, const char *arg, size_t len)
{
    acl_farg *nv;

    for (size_t i = 0; i < s->nfargs; i++)
        if (s->fargs[i].id == id && strlen(s->fargs[i].arg) == len &&
            strncasecmp(s->fargs[i].arg, arg, len) == 0)
            return 0;
    if ((nv = realloc(s->fargs, (s->nfargs + 1) * sizeof(*nv))) == NULL)
        return PK_ENOMEM;
    s->fargs = nv;
    if ((nv[s->nfargs].arg = strndup(arg, len)) == NULL)
        return PK_ENOMEM;
    nv[s->nfargs++].id = (uint16_t)id;
    return 0;
}

/* "+name", "+name|sub", "-name", "-name|sub". */
static int sel_cmd_rule(acl_sel *s, const char *op, size_t len,
                        const char **why)
{
    int allow = op[0] == '+';
    const char *name = op + 1, *bar;
    size_t nlen = len - 1;
    long id;

    *why = E_NOENT;
    bar = allow ? NULL : memchr(name, '|', nlen);
    if (allow) {
        for (size_t i = nlen; i > 0; i--)
            if (name[i - 1] == '|') {
                bar = name + i - 1;
                break;
            }
    }
    if (bar == NULL || !allow) {
        if ((id = pk__acl_lookup(name, nlen)) < 0)
            return PK_EINVAL;
        pk__acl_sel_perm(s, (size_t)id, allow);
        return 0;
    }
    /* "+base|arg": a subcommand of a container, or a first argument of
     * any other command; base itself may not be a subcommand. */
    if ((id = pk__acl_lookup(name, (size_t)(bar - name))) < 0)
        return PK_EINVAL;
    if (pk__acl_id_parent((size_t)id) >= 0) {
        *why = E_CHILD;
        return PK_EINVAL;
    }
    if (bar + 1 == name + nlen) {
        *why = E_SYNTAX;
        return PK_EINVAL;
    }
    {
        size_t first, n;
        pk__acl_id_subs((size_t)id, &first, &n);
        if (n > 0) {
            if ((id = pk__acl_lookup(name, nlen)) < 0)
                return PK_EINVAL;
            pk__acl_sel_perm(s, (size_t)id, 1);
            return 0;
        }
    }
    return add_farg(s, (size_t)id, bar + 1, (size_t)(name + nlen - bar - 1));
}

/* One rule of a selector (ACLSetSelector).  *why is set on PK_EINVAL. */
static int sel_rule(acl_sel *s, const char *op, size_t len, const char **why)
{
    *why = E_SYNTAX;
#define IS(lit) (len == sizeof(lit) - 1 && strncasecmp(op, lit, len) == 0)
    if (IS("allkeys") || IS("~*")) {
        s->flags |= SEL_ALLKEYS;
        pats_free(s->keys, s->nkeys);
        s->keys = NULL;
        s->nkeys = 0;
    } else if (IS("resetkeys")) {
        s->flags &= ~SEL_ALLKEYS;
        pats_free(s->keys, s->nkeys);
        s->keys = NULL;
        s->nkeys = 0;
    } else if (IS("allchannels") || IS("&*")) {
        s->flags |= SEL_ALLCHANNELS;
        pats_free(s->chans, s->nchans);
        s->chans = NULL;
        s->nchans = 0;
    } else if (IS("resetchannels")) {
        s->flags &= ~SEL_ALLCHANNELS;
        pats_free(s->chans, s->nchans);
        s->chans = NULL;
        s->nchans = 0;
    } else if (IS("allcommands") || IS("+@all")) {
        memset(s->bits, 0xff, sizeof(s->bits));
        s->flags |= SEL_ALLCOMMANDS;
        for (size_t i = 0; i < s->nfargs; i++)
            free(s->fargs[i].arg);
        s->nfargs = 0;
    } else if (IS("nocommands") || IS("-@all")) {
        memset(s->bits, 0, sizeof(s->bits));
        s->flags &= ~SEL_ALLCOMMANDS;
        for (size_t i = 0; i < s->nfargs; i++)
            free(s->fargs[i].arg);
        s->nfargs = 0;
    } else if (op[0] == '~' || op[0] == '%') {
        unsigned perm = 0;
        size_t off = 1;
        if (s->flags & SEL_ALLKEYS) {
            *why = E_KEYSTAR;
            return PK_EINVAL;
        }
        if (op[0] == '%') {
            for (; off < len; off++) {
                char c = (char)toupper((unsigned char)op[off]);
                if (c == 'R' && !(perm & PERM_R)) {
                    perm |= PERM_R;
                } else if (c == 'W' && !(perm & PERM_W)) {
                    perm |= PERM_W;
                } else if (op[off] == '~') {
                    off++;
                    break;
                } else {
                    return PK_EINVAL;
                }
            }
        } else {
            perm = PERM_R | PERM_W;
        }
        if (has_spaces(op + off, len - off))
            return PK_EINVAL;
        if (add_pat(&s->keys, &s->nkeys, op + off, len - off, perm))
            return PK_ENOMEM;
        s->flags &= ~SEL_ALLKEYS;
    } else if (op[0] == '&') {
        if (s->flags & SEL_ALLCHANNELS) {
            *why = E_CHANSTAR;
            return PK_EINVAL;
        }
        if (has_spaces(op + 1, len - 1))
            return PK_EINVAL;
        if (add_pat(&s->chans, &s->nchans, op + 1, len - 1, 0))
            return PK_ENOMEM;
        s->flags &= ~SEL_ALLCHANNELS;
    } else if ((op[0] == '+' || op[0] == '-') && len > 1 && op[1] != '@') {
        return sel_cmd_rule(s, op, len, why);
    } else if ((op[0] == '+' || op[0] == '-') && len > 1) {
        int cat = pk__acl_cat_find(op + 2, len - 2);
        if (cat < 0) {
            *why = E_NOENT;
            return PK_EINVAL;
        }
        pk__acl_sel_cat(s, cat, op[0] == '+');
    } else {
        return PK_EINVAL;
    }
#undef IS
    return 0;
}

/* "(rule rule ...)": a new selector. */
static int add_selector(pk_acl_user *u, const char *op, size_t len,
                        const char **why)
{
    acl_sel s = {0}, *nv;
    size_t i = 1, end = len - 1;
    int rc = 0;

    while (i < end && rc == 0) {
        size_t j;
        while (i < end && isspace((unsigned char)op[i]))
            i++;
        for (j = i; j < end && !isspace((unsigned char)op[j]); j++)
            ;
        if (j > i)
            rc = sel_rule(&s, op + i, j - i, why);
        i = j;
    }
    if (rc == 0 && (nv = realloc(u->sel, (u->nsel + 1) * sizeof(*nv)))) {
        u->sel = nv;
        nv[u->nsel++] = s;
        return 0;
    }
    sel_clear(&s);
    return rc ? rc : PK_ENOMEM;
}

static int find_pass(const pk_acl_user *u, const char *hex)
{
    for (size_t i = 0; i < u->npass; i++)
        if (memcmp(u->pass[i], hex, 64) == 0)
            return (int)i;
    return -1;
}

/* One rule of a user (ACLSetUser).  *why is set on PK_EINVAL. */
static int user_rule(pk_acl_user *u, const char *op, size_t len,
                     const char **why)
{
    char hex[65];

    *why = E_WRONG;
    if (len == 0)
        return 0;
#define IS(lit) (len == sizeof(lit) - 1 && strncasecmp(op, lit, len) == 0)
    if (IS("on")) {
        u->flags = (u->flags | USER_ON) & ~USER_OFF;
    } else if (IS("off")) {
        u->flags = (u->flags | USER_OFF) & ~USER_ON;
    } else if (IS("skip-sanitize-payload")) {
        u->flags = (u->flags | USER_SKIP_SANITIZE) & ~USER_SANITIZE;
    } else if (IS("sanitize-payload")) {
        u->flags = (u->flags | USER_SANITIZE) & ~USER_SKIP_SANITIZE;
    } else if (IS("nopass") || IS("resetpass")) {
        if (IS("nopass"))
            u->flags |= USER_NOPASS;
        else
            u->flags &= ~USER_NOPASS;
        free(u->pass);
        u->pass = NULL;
        u->npass = 0;
    } else if (op[0] == '>' || op[0] == '#') {
        char(*nv)[65];
        if (op[0] == '>') {
            pk_acl_hash(op + 1, len - 1, hex);
        } else {
            if (!valid_hash(op + 1, len - 1)) {
                *why = E_BADHASH;
                return PK_EINVAL;
            }
            memcpy(hex, op + 1, 64);
            hex[64] = '\0';
        }
        if (find_pass(u, hex) < 0) {
            if ((nv = realloc(u->pass, (u->npass + 1) * sizeof(*nv))) == NULL)
                return PK_ENOMEM;
            u->pass = nv;
            memcpy(nv[u->npass++], hex, 65);
        }
        u->flags &= ~USER_NOPASS;
    } else if (op[0] == '<' || op[0] == '!') {
        int at;
        if (op[0] == '<') {
            pk_acl_hash(op + 1, len - 1, hex);
        } else {
            if (!valid_hash(op + 1, len - 1)) {
                *why = E_BADHASH;
                return PK_EINVAL;
            }
            memcpy(hex, op + 1, 64);
        }
        if ((at = find_pass(u, hex)) < 0) {
            *why = E_NODEV;
            return PK_EINVAL;
        }
        memmove(u->pass[at], u->pass[at + 1],
                (u->npass - (size_t)at - 1) * sizeof(*u->pass));
        u->npass--;
    } else if (op[0] == '(' && op[len - 1] == ')') {
        return add_selector(u, op, len, why);
    } else if (IS("clearselectors")) {
        for (size_t i = 1; i < u->nsel; i++)
            sel_clear(&u->sel[i]);
        u->nsel = 1;
    } else if (IS("reset")) {
        user_rule(u, "resetpass", 9, why);
        user_rule(u, "resetkeys", 9, why);
        user_rule(u, "resetchannels", 13, why);
        user_rule(u, "off", 3, why);
        user_rule(u, "sanitize-payload", 16, why);
        user_rule(u, "clearselectors", 14, why);
        user_rule(u, "-@all", 5, why);
    } else {
        return sel_rule(&u->sel[0], op, len, why);
    }
#undef IS
    return 0;
}

/* Rules as one string each, a selector's parts joined (Redis's
 * ACLMergeSelectorArguments); *out is malloc'd strings and lengths. */
typedef struct rulev {
    char **s;
    size_t *len;
    int n;
} rulev;

static void rulev_free(rulev *v)
{
    for (int i = 0; i < v->n; i++)
        free(v->s[i]);
    free(v->s);
    free(v->len);
}

/* Returns 0, PK_ENOMEM, or PK_EINVAL with *open the argument that began
 * an unclosed selector. */
static int rules_merge(int n, const pk_arg *a, rulev *v, int *open)
{
    int start = -1;
    size_t cur = 0;

    v->s = calloc((size_t)n + 1, sizeof(*v->s));
    v->len = calloc((size_t)n + 1, sizeof(*v->len));
    v->n = 0;
    if (v->s == NULL || v->len == NULL)
        return PK_ENOMEM;
    for (int j = 0; j < n; j++) {
        const char *op = a[j].ptr;
        size_t len = a[j].len;
        int opens = start < 0 && len > 0 && op[0] == '(' && op[len - 1] != ')';
        char *p;

        if (start >= 0) {
            p = realloc(v->s[v->n], cur + 1 + len + 1);
            if (p == NULL)
                return PK_ENOMEM;
            p[cur] = ' ';
            memcpy(p + cur + 1, op, len);
            cur += 1 + len;
            p[cur] = '\0';
            v->s[v->n] = p;
            if (len > 0 && op[len - 1] == ')') {
                v->len[v->n++] = cur;
                start = -1;
            }
            continue;
        }
        if ((p = malloc(len + 1)) == NULL)
            return PK_ENOMEM;
        memcpy(p, op, len);
        p[len] = '\0';
        v->s[v->n] = p;
        if (opens) {
            start = j;
            cur = len;
            continue;
        }
        v->len[v->n++] = len;
    }
    if (start >= 0) {
        v->n++; /* free the partial one too */
        *open = start;
        return PK_EINVAL;
    }
    return 0;
}

static pk_acl_user **slot_of(pk_acl *a, const char *name, size_t len)
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
    pk_acl_user **pp = slot_of((pk_acl *)a, name, len);

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
    rulev v = {0};
    pk_acl_user tmp = {0};
    int open = 0, rc;
    const char *why = E_WRONG;

    *err = NULL;
    rc = rules_merge(n, rules, &v, &open);
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
        rc = user_rule(&tmp, v.s[j], v.len[j], &why);
        if (rc == PK_EINVAL)
            *err =
                fmt_err("Error in ACL SETUSER modifier '%s': %s", v.s[j], why);
    }
    if (rc)
        goto out;
    if (u == NULL) {
        pk_acl_user **pp = slot_of(a, name, nlen);
        if ((u = user_new(name, nlen)) == NULL) {
            rc = PK_ENOMEM;
            goto out;
        }
        u->next = *pp;
        *pp = u;
        a->nusers++;
    }
    user_clear(u);
    u->flags = tmp.flags;
    u->pass = tmp.pass;
    u->npass = tmp.npass;
    u->sel = tmp.sel;
    u->nsel = tmp.nsel;
    memset(&tmp, 0, sizeof(tmp));
out:
    user_clear(&tmp);
    rulev_free(&v);
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

static pk_acl_user *default_new(void)
{
    static const pk_arg rules[] = {
        {"+@all", 5}, {"~*", 2}, {"&*", 2}, {"on", 2}, {"nopass", 6}};
    pk_acl_user *u = user_new("default", 7);
    const char *why;

    if (u == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        if (user_rule(u, rules[i].ptr, rules[i].len, &why)) {
            user_free(u);
            return NULL;
        }
    }
    return u;
}

pk_acl *pk_acl_new(void)
{
    pk_acl *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    if ((a->def = a->users = default_new()) == NULL) {
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

static void users_free(pk_acl_user *u)
{
    while (u) {
        pk_acl_user *next = u->next;
        user_free(u);
        u = next;
    }
}

void pk_acl_free(pk_acl *a)
{
    if (a == NULL)
        return;
    users_free(a->users);
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
    pk_acl_user **pp = slot_of(a, name, nlen), *u = *pp;

    if (u == NULL || u->nlen != nlen || memcmp(u->name, name, nlen) != 0 ||
        u == a->def)
        return 0;
    if (gone)
        gone(arg, u);
    *pp = u->next;
    a->nusers--;
    user_free(u);
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
    ds_str(d, p->perm == (PERM_R | PERM_W) ? "~"
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
    rulev v = {0};
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
    if ((u = user_new(argv[1].ptr, argv[1].len)) == NULL) {
        d->oom = 1;
        return;
    }
    *pp = u;
    if (rules_merge(argc - 2, argv + 2, &v, &syntax) != 0) {
        ds_fmt(d, "%s:%d: Unmatched parenthesis in selector definition.", path,
               lineno);
        rulev_free(&v);
        return;
    }
    syntax = 0;
    for (int j = 0; j < v.n; j++) {
        const char *why = E_WRONG;
        if (user_rule(u, v.s[j], v.len[j], &why) == 0)
            continue;
        if (why == E_NOENT)
            ds_fmt(d, "%s:%d: Error in applying operation '%s': %s. ", path,
                   lineno, v.s[j], why);
        else if (!syntax)
            ds_fmt(d, "%s:%d: %s. ", path, lineno, why);
        syntax = syntax || why != E_NOENT;
    }
    rulev_free(&v);
}

/* Moves the rights of src into dst (which keeps its name and place);
 * frees src. */
static void take_rights(pk_acl_user *dst, pk_acl_user *src)
{
    user_clear(dst);
    dst->flags = src->flags;
    dst->pass = src->pass;
    dst->npass = src->npass;
    dst->sel = src->sel;
    dst->nsel = src->nsel;
    src->pass = NULL;
    src->sel = NULL;
    src->npass = src->nsel = 0;
    user_free(src);
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
    users_free(*list);
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
    if (def == NULL && (def = default_new()) == NULL) {
        users_free(sorted);
        return PK_ENOMEM;
    }
    take_rights(a->def, def);
    for (pk_acl_user *u = a->users, *next; u; u = next) {
        next = u->next;
        if (u == a->def)
            continue;
        if (gone)
            gone(arg, u);
        user_free(u);
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
            take_rights(old, n);
            old->mark = 1;
            continue;
        }
        pp = slot_of(a, n->name, n->nlen);
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
        user_free(u);
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

/*
 * pk_acl_rules: Redis 7.0's ACL SETUSER rules, one at a time, on a user
 * or a selector (ACLSetUser, ACLSetSelector), with Redis's error texts;
 * the merging of a selector's rules spread over arguments; SHA-256 of
 * passwords.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/pk_err.h"
#include "server/pk_acl_int.h"

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
const char pk__acl_e_wrong[] = "Wrong format";
const char pk__acl_e_noent[] = "Unknown command or category name in ACL";
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

    *why = pk__acl_e_noent;
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
    /* A first argument with a space or newline would not read back from
     * ACL LIST or the ACL file (a newline there could even start a
     * user): refused, where Redis 7.0 takes it. */
    if (has_spaces(bar + 1, (size_t)(name + nlen - bar - 1))) {
        *why = E_SYNTAX;
        return PK_EINVAL;
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
        pk__acl_pats_free(s->keys, s->nkeys);
        s->keys = NULL;
        s->nkeys = 0;
    } else if (IS("resetkeys")) {
        s->flags &= ~SEL_ALLKEYS;
        pk__acl_pats_free(s->keys, s->nkeys);
        s->keys = NULL;
        s->nkeys = 0;
    } else if (IS("allchannels") || IS("&*")) {
        s->flags |= SEL_ALLCHANNELS;
        pk__acl_pats_free(s->chans, s->nchans);
        s->chans = NULL;
        s->nchans = 0;
    } else if (IS("resetchannels")) {
        s->flags &= ~SEL_ALLCHANNELS;
        pk__acl_pats_free(s->chans, s->nchans);
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
            /* "%~a" or "%": a pattern without rights (Redis 7.0 takes
             * it, then panics describing it). */
            if (perm == 0)
                return PK_EINVAL;
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
            *why = pk__acl_e_noent;
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
        /* A parenthesis inside a selector would end it early when its
         * description is read back: refused (Redis 7.0 takes it). */
        if (j > i &&
            (memchr(op + i, '(', j - i) || memchr(op + i, ')', j - i))) {
            *why = E_SYNTAX;
            rc = PK_EINVAL;
        } else if (j > i) {
            rc = sel_rule(&s, op + i, j - i, why);
        }
        i = j;
    }
    if (rc == 0 && (nv = realloc(u->sel, (u->nsel + 1) * sizeof(*nv)))) {
        u->sel = nv;
        nv[u->nsel++] = s;
        return 0;
    }
    pk__acl_sel_clear(&s);
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
int pk__acl_user_rule(pk_acl_user *u, const char *op, size_t len,
                      const char **why)
{
    char hex[65];

    *why = pk__acl_e_wrong;
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
            pk__acl_sel_clear(&u->sel[i]);
        u->nsel = 1;
    } else if (IS("reset")) {
        pk__acl_user_rule(u, "resetpass", 9, why);
        pk__acl_user_rule(u, "resetkeys", 9, why);
        pk__acl_user_rule(u, "resetchannels", 13, why);
        pk__acl_user_rule(u, "off", 3, why);
        pk__acl_user_rule(u, "sanitize-payload", 16, why);
        pk__acl_user_rule(u, "clearselectors", 14, why);
        pk__acl_user_rule(u, "-@all", 5, why);
    } else {
        return sel_rule(&u->sel[0], op, len, why);
    }
#undef IS
    return 0;
}

void pk__acl_rulev_free(acl_rulev *v)
{
    for (int i = 0; i < v->n; i++)
        free(v->s[i]);
    free(v->s);
    free(v->len);
}

/* Returns 0, PK_ENOMEM, or PK_EINVAL with *open the argument that began
 * an unclosed selector. */
int pk__acl_rules_merge(int n, const pk_arg *a, acl_rulev *v, int *open)
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

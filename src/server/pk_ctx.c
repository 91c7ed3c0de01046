/*
 * pk_ctx: what command code shares (pk_ctx.h) -- key positions, argument
 * parsing, common replies.
 */
#include "server/pk_ctx.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "store/pk_str.h"

/* Clamps run r to the arguments present; returns 1 if it keeps a key. */
static int keyrun_clamp(pk_keyrun *r, int argc)
{
    if (r->step < 1 || r->first < 1)
        return 0;
    if (r->last >= argc)
        r->last = argc - 1;
    return r->last >= r->first;
}

int pk_cmd_keyruns(const pk_cmd *c, int argc, const pk_arg *argv, pk_keyrun *r)
{
    int n = 0, k;

    if (c->keys) {
        k = c->keys(argc, argv, r);
        for (int i = 0; i < k && i < PK_KEYRUNS_MAX; i++)
            if (keyrun_clamp(&r[i], argc))
                r[n++] = r[i];
        return n;
    }
    if (c->first == 0)
        return 0;
    r[0] =
        (pk_keyrun){c->first, c->last < 0 ? argc + c->last : c->last, c->step};
    return keyrun_clamp(&r[0], argc);
}

int pk_cmd_keys_numkeys(int argc, const pk_arg *argv, int i, pk_keyrun *r)
{
    int64_t n;

    if (i >= argc || !pk_arg_i64(&argv[i], &n) || n < 1 || n > argc - i - 1)
        return 0;
    *r = (pk_keyrun){i + 1, i + (int)n, 1};
    return 1;
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

/* Redis's float parsing: strtod over the whole argument, no NaN, any
 * length (Redis's tests send DBL_MAX written out with decimals). */
int pk_arg_double(const pk_arg *a, double *v)
{
    char small[128], *buf = small, *end;
    double d;
    int ok;

    if (a->len == 0 || a->ptr[0] == ' ' || a->ptr[0] == '\t')
        return 0;
    if (a->len <= 15) { /* plain integers (most scores): exact, no strtod */
        size_t i = a->ptr[0] == '-';
        uint64_t n = 0;
        while (i < a->len && a->ptr[i] >= '0' && a->ptr[i] <= '9')
            n = n * 10 + (uint64_t)(a->ptr[i++] - '0');
        if (i == a->len && a->len > (size_t)(a->ptr[0] == '-')) {
            *v = a->ptr[0] == '-' ? -(double)n : (double)n;
            return 1;
        }
    }
    if (a->len >= sizeof(small) && (buf = malloc(a->len + 1)) == NULL)
        return 0;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    d = strtod(buf, &end);
    ok = end == buf + a->len && !isnan(d); /* a NUL inside is no float */
    if (buf != small)
        free(buf);
    if (ok)
        *v = d;
    return ok;
}

void pk_reply_syntax(pk_cmd_ctx *x)
{
    pk_reply_error(x->out, "ERR syntax error");
}

void pk_reply_notint(pk_cmd_ctx *x)
{
    pk_reply_error(x->out, "ERR value is not an integer or out of range");
}

int pk_cmd_subcommand(pk_cmd_ctx *x, const char *container,
                      const pk_subcmd *subs, size_t n)
{
    const pk_arg *sub = &x->argv[1];
    char upper[32];
    size_t i;

    for (i = 0; i < n && !pk_arg_eq(sub, subs[i].name); i++)
        ;
    if (i == n) {
        for (i = 0; container[i] && i < sizeof(upper) - 1; i++)
            upper[i] = (char)toupper((unsigned char)container[i]);
        upper[i] = '\0';
        pk_reply_errorf(x->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                        (int)(sub->len > 128 ? 128 : sub->len), sub->ptr,
                        upper);
        return -1;
    }
    if (!pk_arity_ok(subs[i].arity, x->argc)) {
        pk_reply_errorf(x->out,
                        "ERR wrong number of arguments for '%s|%s' command",
                        container, subs[i].name);
        return -1;
    }
    if (x->c)
        x->c->last_sub = subs[i].name; /* CLIENT LIST's cmd=client|list */
    return (int)i;
}

void pk_reply_slice(pk_cmd_ctx *x, pk_slice v)
{
    if (v.ptr)
        pk_reply_bulk(x->out, v.ptr, v.len);
    else
        pk_reply_null(x->out, x->proto);
}

void pk_reply_int_rc(pk_cmd_ctx *x, int rc, int64_t v)
{
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, v);
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
        /* Keys, fields and members of any length fit; what the store
         * refuses is one whose digest (128 bits of SHA-256, pk_keyenc.h)
         * another one already holds. */
        pk_reply_error(x->out, "ERR key, field or member collides with "
                               "another one's digest in the store");
    else
        pk_reply_errorf(x->out, "ERR storage error: %s", pk_strerror(rc));
}

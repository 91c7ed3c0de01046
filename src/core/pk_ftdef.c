/*
 * pk_ftdef: index definitions -- FT.CREATE and FT.ALTER arguments, the
 * codec, and how a value splits into the terms an index holds (see
 * pk_ftdef.h).  Arguments are matched case-insensitively, as RediSearch
 * does; names are kept as given.
 */
#include "pk_ftdef.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pk_err.h"

#define FT_VERSION 1

/* ---- names and prefixes ------------------------------------------------ */

const char *pk_ftdef_attr(const pk_ftdef *d, uint32_t i)
{
    return d->fields[i].alias ? d->fields[i].alias : d->fields[i].name;
}

int pk_ftdef_find(const pk_ftdef *d, const char *attr, size_t len)
{
    for (uint32_t i = 0; i < d->nfields; i++) {
        const char *a = pk_ftdef_attr(d, i);
        if (strlen(a) == len && memcmp(a, attr, len) == 0)
            return (int)i;
    }
    return -1;
}

int pk_ftdef_covers(const pk_ftdef *d, const void *key, size_t klen)
{
    if (d->nprefixes == 0)
        return 1;
    for (uint32_t i = 0; i < d->nprefixes; i++)
        if (d->prefix_len[i] <= klen &&
            memcmp(d->prefixes[i], key, d->prefix_len[i]) == 0)
            return 1;
    return 0;
}

void pk_ftdef_free(pk_ftdef *d)
{
    if (d == NULL)
        return;
    for (uint32_t i = 0; i < d->nfields; i++) {
        free(d->fields[i].name);
        free(d->fields[i].alias);
    }
    for (uint32_t i = 0; i < d->nprefixes; i++)
        free(d->prefixes[i]);
    free(d->fields);
    free(d->prefixes);
    free(d->prefix_len);
    free(d->name);
    free(d);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* Appends prefix p (n bytes): 0 or PK_ENOMEM. */
static int add_prefix(pk_ftdef *d, const char *p, size_t n)
{
    char **v = realloc(d->prefixes, (d->nprefixes + 1) * sizeof(*v));
    uint32_t *l;

    if (v == NULL)
        return PK_ENOMEM;
    d->prefixes = v;
    l = realloc(d->prefix_len, (d->nprefixes + 1) * sizeof(*l));
    if (l == NULL)
        return PK_ENOMEM;
    d->prefix_len = l;
    if ((v[d->nprefixes] = dup_n(p, n)) == NULL)
        return PK_ENOMEM;
    l[d->nprefixes++] = (uint32_t)n;
    return 0;
}

/* ---- arguments --------------------------------------------------------- */

typedef struct args {
    int argc, i;
    const char *const *argv;
    const size_t *lens;
    char *err;
    size_t errcap;
} args;

static int fail(args *a, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(a->err, a->errcap, fmt, ap);
    va_end(ap);
    return PK_EINVAL;
}

static int is(const args *a, int i, const char *word)
{
    return i < a->argc && a->lens[i] == strlen(word) &&
           strncasecmp(a->argv[i], word, a->lens[i]) == 0;
}

/* A count argument at a->i, at most max: 0 or PK_EINVAL. */
static int count_arg(args *a, const char *what, long max, long *out)
{
    char *end;
    long v;

    if (a->i >= a->argc)
        return fail(a, "Bad arguments for %s: Expected an argument", what);
    errno = 0;
    v = strtol(a->argv[a->i], &end, 10);
    if (errno || end != a->argv[a->i] + a->lens[a->i] || v < 0 || v > max)
        return fail(a, "Bad arguments for %s: Value is not a valid count",
                    what);
    a->i++;
    *out = v;
    return 0;
}

static int bad_name(const char *s, size_t n)
{
    return n == 0 || n > PK_FT_NAME_MAX || memchr(s, 0, n) != NULL;
}

/* One schema field at a->i, appended to d: 0, PK_EINVAL or PK_ENOMEM. */
static int parse_field(args *a, pk_ftdef *d)
{
    pk_ftfield f = {.sep = ',', .weight = 1};
    const char *name = a->argv[a->i];
    size_t nlen = a->lens[a->i];
    pk_ftfield *v;

    if (bad_name(name, nlen))
        return fail(a, "Field names must be 1 to %d bytes, without NUL",
                    PK_FT_NAME_MAX);
    a->i++;
    if (is(a, a->i, "AS")) {
        if (a->i + 1 >= a->argc ||
            bad_name(a->argv[a->i + 1], a->lens[a->i + 1]))
            return fail(a, "Bad arguments for AS: Expected an attribute");
        if ((f.alias = dup_n(a->argv[a->i + 1], a->lens[a->i + 1])) == NULL)
            return PK_ENOMEM;
        a->i += 2;
    }
    if (is(a, a->i, "TAG"))
        f.type = PK_FT_TAG;
    else if (is(a, a->i, "NUMERIC"))
        f.type = PK_FT_NUMERIC;
    else if (is(a, a->i, "TEXT"))
        f.type = PK_FT_TEXT;
    else {
        free(f.alias);
        return fail(a,
                    "Field `%.*s` has an unsupported type (TAG, NUMERIC "
                    "and TEXT are)",
                    (int)nlen, name);
    }
    a->i++;
    for (;;) {
        if (is(a, a->i, "SORTABLE")) {
            f.sortable = 1;
            a->i += 1 + is(a, a->i + 1, "UNF");
        } else if (is(a, a->i, "NOINDEX")) {
            f.noindex = 1;
            a->i++;
        } else if (f.type == PK_FT_TAG && is(a, a->i, "CASESENSITIVE")) {
            f.casesens = 1;
            a->i++;
        } else if (f.type == PK_FT_TAG && is(a, a->i, "SEPARATOR")) {
            if (a->i + 1 >= a->argc || a->lens[a->i + 1] != 1) {
                free(f.alias);
                return fail(a, "Tag separator must be a single character");
            }
            f.sep = a->argv[a->i + 1][0];
            a->i += 2;
        } else if (f.type == PK_FT_TEXT && is(a, a->i, "WEIGHT")) {
            char *end;
            if (a->i + 1 >= a->argc ||
                (f.weight = strtod(a->argv[a->i + 1], &end),
                 end != a->argv[a->i + 1] + a->lens[a->i + 1]) ||
                !(f.weight >= 0) || isinf(f.weight)) {
                free(f.alias);
                return fail(a, "Could not parse field spec: bad WEIGHT");
            }
            a->i += 2;
        } else if (f.type == PK_FT_TEXT &&
                   (is(a, a->i, "NOSTEM") || is(a, a->i, "WITHSUFFIXTRIE"))) {
            a->i++;
        } else if (is(a, a->i, "INDEXEMPTY") || is(a, a->i, "INDEXMISSING")) {
            a->i++;
        } else {
            break;
        }
    }
    if (f.alias ? pk_ftdef_find(d, f.alias, strlen(f.alias)) >= 0
                : pk_ftdef_find(d, name, nlen) >= 0) {
        free(f.alias);
        return fail(a, "Duplicate field in schema - %.*s", (int)nlen, name);
    }
    if (d->nfields >= PK_FT_FIELDS_MAX) {
        free(f.alias);
        return fail(a, "Schema is limited to %d fields", PK_FT_FIELDS_MAX);
    }
    if ((f.name = dup_n(name, nlen)) == NULL ||
        (v = realloc(d->fields, (d->nfields + 1) * sizeof(*v))) == NULL) {
        free(f.name);
        free(f.alias);
        return PK_ENOMEM;
    }
    d->fields = v;
    v[d->nfields++] = f;
    return 0;
}

/* Fields from a->i to the end: 0, PK_EINVAL or PK_ENOMEM. */
static int parse_fields(args *a, pk_ftdef *d)
{
    int rc;

    if (a->i >= a->argc)
        return fail(a, "Fields arguments are missing");
    while (a->i < a->argc)
        if ((rc = parse_field(a, d)) != 0)
            return rc;
    return 0;
}

/* Options that take one value and change nothing here. */
static const char *const IGNORED1[] = {
    "LANGUAGE",      "LANGUAGE_FIELD", "SCORE", "SCORE_FIELD",
    "PAYLOAD_FIELD", "TEMPORARY",      NULL,
};
static const char *const IGNORED0[] = {
    "MAXTEXTFIELDS", "NOOFFSETS", "NOHL", "NOFIELDS", "NOFREQS", NULL,
};

static int ignored(const args *a, const char *const *list)
{
    for (int k = 0; list[k]; k++)
        if (is(a, a->i, list[k]))
            return 1;
    return 0;
}

static int parse_options(args *a, pk_ftdef *d)
{
    long n;
    int rc;

    while (a->i < a->argc && !is(a, a->i, "SCHEMA")) {
        if (is(a, a->i, "ON")) {
            if (!is(a, a->i + 1, "HASH"))
                return fail(a, "Only ON HASH is supported");
            a->i += 2;
        } else if (is(a, a->i, "PREFIX")) {
            a->i++;
            if ((rc = count_arg(a, "PREFIX", PK_FT_PREFIXES_MAX, &n)) != 0)
                return rc;
            if (a->i + n > a->argc)
                return fail(a, "Bad arguments for PREFIX: Not enough "
                               "arguments");
            for (long k = 0; k < n; k++, a->i++) {
                if (a->lens[a->i] > PK_FT_PREFIX_MAX)
                    return fail(a, "Prefix is longer than %d bytes",
                                PK_FT_PREFIX_MAX);
                if ((rc = add_prefix(d, a->argv[a->i], a->lens[a->i])) != 0)
                    return rc;
            }
        } else if (is(a, a->i, "GLOBAL")) {
            d->global = 1;
            a->i++;
        } else if (is(a, a->i, "STOPWORDS")) {
            a->i++;
            if ((rc = count_arg(a, "STOPWORDS", 1 << 20, &n)) != 0)
                return rc;
            if (a->i + n > a->argc)
                return fail(a, "Bad arguments for STOPWORDS: Not enough "
                               "arguments");
            a->i += (int)n;
        } else if (is(a, a->i, "FILTER")) {
            return fail(a, "FILTER expressions are not supported");
        } else if (ignored(a, IGNORED1) && a->i + 1 < a->argc) {
            a->i += 2;
        } else if (ignored(a, IGNORED0) || is(a, a->i, "SKIPINITIALSCAN")) {
            a->i++;
        } else {
            return fail(a, "Unknown argument `%.*s`", (int)a->lens[a->i],
                        a->argv[a->i]);
        }
    }
    if (a->i >= a->argc)
        return fail(a, "No schema found");
    a->i++; /* SCHEMA */
    return 0;
}

int pk_ftdef_parse(const char *name, int argc, const char *const *argv,
                   const size_t *lens, pk_ftdef **out, char *err, size_t errcap)
{
    args a = {argc, 0, argv, lens, err, errcap};
    pk_ftdef *d;
    int rc;

    if (bad_name(name, strlen(name)))
        return fail(&a, "Index names must be 1 to %d bytes", PK_FT_NAME_MAX);
    if ((d = calloc(1, sizeof(*d))) == NULL ||
        (d->name = strdup(name)) == NULL) {
        pk_ftdef_free(d);
        return PK_ENOMEM;
    }
    if ((rc = parse_options(&a, d)) != 0 || (rc = parse_fields(&a, d)) != 0) {
        pk_ftdef_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

int pk_ftdef_alter(pk_ftdef *d, int argc, const char *const *argv,
                   const size_t *lens, char *err, size_t errcap)
{
    args a = {argc, 0, argv, lens, err, errcap};
    uint32_t n0 = d->nfields;
    int rc = parse_fields(&a, d);

    if (rc != 0) { /* back to what it was */
        for (uint32_t i = n0; i < d->nfields; i++) {
            free(d->fields[i].name);
            free(d->fields[i].alias);
        }
        d->nfields = n0;
    }
    return rc;
}

/* ---- codec ------------------------------------------------------------- */

typedef struct wr {
    uint8_t *p; /* NULL: count only */
    size_t n;
} wr;

static void put(wr *w, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        if (w->p)
            w->p[w->n + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    w->n += bytes;
}

static void put_str(wr *w, const char *s, size_t n)
{
    put(w, n, 2);
    if (w->p && n)
        memcpy(w->p + w->n, s, n);
    w->n += n;
}

static void encode(const pk_ftdef *d, wr *w)
{
    put(w, FT_VERSION, 1);
    put(w, d->id, 8);
    put(w, d->global ? 1 : 0, 1);
    put_str(w, d->name, strlen(d->name));
    put(w, d->nprefixes, 2);
    for (uint32_t i = 0; i < d->nprefixes; i++)
        put_str(w, d->prefixes[i], d->prefix_len[i]);
    put(w, d->nfields, 2);
    for (uint32_t i = 0; i < d->nfields; i++) {
        const pk_ftfield *f = &d->fields[i];
        uint64_t bits;
        memcpy(&bits, &f->weight, 8);
        put_str(w, f->name, strlen(f->name));
        put_str(w, f->alias ? f->alias : "", f->alias ? strlen(f->alias) : 0);
        put(w, f->type, 1);
        put(w,
            (f->sortable ? 1u : 0) | (f->casesens ? 2u : 0) |
                (f->noindex ? 4u : 0),
            1);
        put(w, (uint8_t)f->sep, 1);
        put(w, bits, 8);
    }
}

size_t pk_ftdef_encoded_len(const pk_ftdef *d)
{
    wr w = {NULL, 0};

    encode(d, &w);
    return w.n;
}

void pk_ftdef_encode(const pk_ftdef *d, uint8_t *buf)
{
    wr w = {buf, 0};

    encode(d, &w);
}

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
    int bad;
} rd;

static uint64_t get(rd *r, unsigned bytes)
{
    uint64_t v = 0;

    if (r->bad || r->n - r->at < bytes) {
        r->bad = 1;
        return 0;
    }
    for (unsigned i = 0; i < bytes; i++)
        v = v << 8 | r->p[r->at++];
    return v;
}

/* A string of at most max bytes as a new NUL-terminated copy (*len its
 * length), or NULL (r->bad set, or out of memory: *oom). */
static char *get_str(rd *r, size_t max, size_t *len, int *oom)
{
    size_t n = (size_t)get(r, 2);
    char *s;

    if (r->bad || n > max || r->n - r->at < n) {
        r->bad = 1;
        return NULL;
    }
    if ((s = dup_n((const char *)r->p + r->at, n)) == NULL)
        *oom = 1;
    r->at += n;
    *len = n;
    return s;
}

static int decode_fields(rd *r, pk_ftdef *d, int *oom)
{
    uint32_t n = (uint32_t)get(r, 2);
    size_t len;

    if (r->bad || n > PK_FT_FIELDS_MAX ||
        (n && (d->fields = calloc(n, sizeof(*d->fields))) == NULL))
        return r->bad || n > PK_FT_FIELDS_MAX ? PK_ECORRUPT : PK_ENOMEM;
    while (d->nfields < n) {
        /* Counted before it is filled: a failure frees what it holds. */
        pk_ftfield *f = &d->fields[d->nfields++];
        uint64_t bits;
        unsigned fl;
        f->name = get_str(r, PK_FT_NAME_MAX, &len, oom);
        if (f->name == NULL || len == 0)
            return *oom ? PK_ENOMEM : PK_ECORRUPT;
        f->alias = get_str(r, PK_FT_NAME_MAX, &len, oom);
        if (f->alias == NULL)
            return *oom ? PK_ENOMEM : PK_ECORRUPT;
        if (len == 0) {
            free(f->alias);
            f->alias = NULL;
        }
        f->type = (uint8_t)get(r, 1);
        fl = (unsigned)get(r, 1);
        f->sep = (char)get(r, 1);
        bits = get(r, 8);
        memcpy(&f->weight, &bits, 8);
        f->sortable = fl & 1;
        f->casesens = (fl >> 1) & 1;
        f->noindex = (fl >> 2) & 1;
        if (r->bad || f->type < PK_FT_TAG || f->type > PK_FT_TEXT || fl > 7)
            return PK_ECORRUPT;
    }
    return 0;
}

int pk_ftdef_decode(const uint8_t *buf, size_t len, pk_ftdef **out)
{
    rd r = {buf, len, 0, 0};
    pk_ftdef *d = calloc(1, sizeof(*d));
    int oom = 0, rc = PK_ECORRUPT;
    uint32_t np;
    size_t n;

    if (d == NULL)
        return PK_ENOMEM;
    if (get(&r, 1) != FT_VERSION)
        goto fail;
    d->id = get(&r, 8);
    d->global = (int)get(&r, 1);
    if ((d->name = get_str(&r, PK_FT_NAME_MAX, &n, &oom)) == NULL || n == 0)
        goto fail;
    np = (uint32_t)get(&r, 2);
    if (r.bad || np > PK_FT_PREFIXES_MAX || d->global > 1)
        goto fail;
    for (uint32_t i = 0; i < np; i++) {
        char *p = get_str(&r, PK_FT_PREFIX_MAX, &n, &oom);
        if (p == NULL)
            goto fail;
        rc = add_prefix(d, p, n);
        free(p);
        if (rc != 0)
            goto fail;
        rc = PK_ECORRUPT;
    }
    if ((rc = decode_fields(&r, d, &oom)) != 0)
        goto fail;
    if (r.at != r.n) {
        rc = PK_ECORRUPT;
        goto fail;
    }
    *out = d;
    return 0;
fail:
    pk_ftdef_free(d);
    return oom ? PK_ENOMEM : rc;
}

pk_ftdef *pk_ftdef_dup(const pk_ftdef *d)
{
    size_t n = pk_ftdef_encoded_len(d);
    uint8_t *buf = malloc(n);
    pk_ftdef *copy = NULL;

    if (buf != NULL) {
        pk_ftdef_encode(d, buf);
        if (pk_ftdef_decode(buf, n, &copy) != 0)
            copy = NULL;
        free(buf);
    }
    return copy;
}

/* ---- terms ------------------------------------------------------------- */

static const char *const STOP[] = {
    "a",    "an",   "and",  "are",  "as",   "at",    "be",   "but",   "by",
    "for",  "if",   "in",   "into", "is",   "it",    "no",   "not",   "of",
    "on",   "or",   "such", "that", "the",  "their", "then", "there", "these",
    "they", "this", "to",   "was",  "will", "with",  NULL,
};

int pk_ft_stopword(const char *term, size_t len)
{
    for (int i = 0; STOP[i]; i++)
        if (strlen(STOP[i]) == len && memcmp(STOP[i], term, len) == 0)
            return 1;
    return 0;
}

static int text_sep(unsigned char c)
{
    return isspace(c) ||
           (c < 128 && strchr(",.<>{}[]\"':;!@#$%^&*()-+=~/\\|?", c) != NULL &&
            c != 0);
}

int pk_ft_text_terms(const char *text, size_t len, char *buf, pk_ft_term_cb cb,
                     void *ctx)
{
    size_t i = 0;
    int rc;

    while (i < len) {
        size_t n = 0;
        while (i < len && text[i] != 0 && text_sep((unsigned char)text[i]))
            i++;
        while (i < len && !(text[i] != 0 && text_sep((unsigned char)text[i]))) {
            if (n < PK_FT_TERM_MAX)
                buf[n++] = (char)tolower((unsigned char)text[i]);
            i++;
        }
        if (n > 0 && !pk_ft_stopword(buf, n) && (rc = cb(ctx, buf, n)) != 0)
            return rc;
    }
    return 0;
}

int pk_ft_tag_terms(const char *value, size_t len, char sep, int casesens,
                    char *buf, pk_ft_term_cb cb, void *ctx)
{
    size_t i = 0;
    int rc;

    while (i <= len) {
        size_t start = i, end, n = 0;
        while (i < len && value[i] != sep)
            i++;
        end = i++;
        while (start < end && isspace((unsigned char)value[start]))
            start++;
        while (end > start && isspace((unsigned char)value[end - 1]))
            end--;
        for (size_t k = start; k < end && n < PK_FT_TERM_MAX; k++)
            buf[n++] =
                casesens ? value[k] : (char)tolower((unsigned char)value[k]);
        if (n > 0 && (rc = cb(ctx, buf, n)) != 0)
            return rc;
    }
    return 0;
}

int pk_ft_number(const char *value, size_t len, double *out)
{
    char small[64], *tmp = small, *end;
    double v;
    int ok;

    if (len == 0 || len > 4096) /* longer is no number anyone writes */
        return 0;
    if (len >= sizeof(small) && (tmp = malloc(len + 1)) == NULL)
        return 0;
    memcpy(tmp, value, len);
    tmp[len] = 0;
    errno = 0;
    v = strtod(tmp, &end);
    ok = end == tmp + len && !isnan(v) && !isinf(v) &&
         !isspace((unsigned char)tmp[0]);
    if (tmp != small)
        free(tmp);
    if (ok)
        *out = v;
    return ok;
}

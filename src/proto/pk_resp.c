/*
 * pk_resp: RESP request parser (see pk_resp.h for the contract).
 *
 * The query buffer holds consumed bytes, the command being parsed and
 * bytes not looked at yet:
 *
 *   0          start          pos               len            cap
 *   |-consumed-|--current cmd--|---unparsed-------|---free-------|
 *
 * Invariants: start <= pos <= len <= cap.  Bytes before start belong to
 * commands already returned; the argv of the last one still points there,
 * so they are only reclaimed (moved out by resp_compact) when pk_resp_next
 * finds no further command, or when new input needs the room.  While a
 * multibulk command is incomplete its arguments are kept as offsets from
 * start, so moving the buffer never invalidates them; pointers are made
 * only when the command is returned.
 *
 * Parsing is restartable: each step either consumes a whole element
 * (length line, bulk payload, inline line) or nothing, so feeding the
 * same bytes in any chunking yields the same commands and errors.
 */
#include "pk_resp.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "proto/pk_proto_int.h"

#define PK_RESP_BUF_INIT (16u * 1024)  /* first query buffer */
#define PK_RESP_BUF_KEEP (256u * 1024) /* larger buffers shrink when idle */
#define PK_RESP_BIG_ARG (32u * 1024)   /* Redis PROTO_MBULK_BIG_ARG */
#define PK_RESP_ARGV_INIT 16u
#define PK_RESP_ARGV_KEEP 1024u

struct pk_resp_parser {
    pk_resp_limits lim;
    char *buf; /* owned query buffer of cap bytes, or NULL */
    size_t cap;
    size_t len;   /* bytes received */
    size_t start; /* first byte of the command being parsed */
    size_t pos;   /* next byte to parse */
    size_t seen;  /* bytes from pos searched for a line end in vain */
    size_t left;  /* bulk arguments still expected; 0 between commands */
    int64_t bulk; /* length of the pending bulk payload, -1 if unknown */
    pk_arg *argv; /* owned, argv_cap entries; lens valid, ptrs on return */
    size_t *offs; /* owned, argv_cap entries: argument offsets from start */
    size_t argc;
    size_t argv_cap;
    int unauth;   /* the unauthenticated limits apply */
    int failed;   /* sticky PK_EPROTO or PK_ENOMEM, else 0 */
    char err[64]; /* reply text after PK_EPROTO */
};

pk_resp_limits pk_resp_limits_default(void)
{
    pk_resp_limits lim = {
        .max_bulk_len = 512u * 1024 * 1024,
        .max_args = 1024u * 1024,
        .max_inline = 64u * 1024,
        .max_query_buf = (size_t)1024 * 1024 * 1024,
    };
    return lim;
}

int pk_resp_parser_new(const pk_resp_limits *lim, pk_resp_parser **out)
{
    pk_resp_limits l = lim ? *lim : pk_resp_limits_default();
    pk_resp_parser *p;

    if (!out || !l.max_bulk_len || !l.max_args || !l.max_inline ||
        !l.max_query_buf || l.max_bulk_len > PTRDIFF_MAX / 2 ||
        l.max_args > INT_MAX || l.max_inline > INT_MAX ||
        l.max_query_buf > SIZE_MAX / 4)
        return PK_EINVAL;
    p = calloc(1, sizeof(*p));
    if (!p)
        return PK_ENOMEM;
    p->lim = l;
    p->bulk = -1;
    *out = p;
    return PK_OK;
}

void pk_resp_parser_free(pk_resp_parser *p)
{
    if (!p)
        return;
    free(p->buf);
    free(p->argv);
    free(p->offs);
    free(p);
}

const char *pk_resp_error(const pk_resp_parser *p)
{
    return p->failed == PK_EPROTO ? p->err : NULL;
}

void pk_resp_set_unauth(pk_resp_parser *p, int on)
{
    p->unauth = on != 0;
}

int pk_resp_pending(const pk_resp_parser *p, pk_arg *name)
{
    if (p->failed || p->left == 0 || p->argc == 0)
        return 0;
    name->ptr = p->buf + p->start + p->offs[0];
    name->len = p->argv[0].len;
    return 1;
}

size_t pk_resp_buffered(const pk_resp_parser *p)
{
    return p->len - p->start;
}

size_t pk_resp_memory(const pk_resp_parser *p)
{
    return sizeof(*p) + p->cap +
           p->argv_cap * (sizeof(*p->argv) + sizeof(*p->offs));
}

/* Records a protocol error; the text is what Redis replies. */
static int resp_fail(pk_resp_parser *p, const char *what)
{
    snprintf(p->err, sizeof(p->err), "ERR Protocol error: %s", what);
    p->failed = PK_EPROTO;
    return PK_EPROTO;
}

/*
 * Moves the bytes of returned commands out of the buffer, and gives back
 * memory that one large request made the buffer or argv grow to.
 */
static void resp_compact(pk_resp_parser *p)
{
    if (p->start > 0) {
        memmove(p->buf, p->buf + p->start, p->len - p->start);
        p->len -= p->start;
        p->pos -= p->start;
        p->start = 0;
    }
    if (p->cap > PK_RESP_BUF_KEEP && p->len == 0) {
        free(p->buf);
        p->buf = NULL;
        p->cap = 0;
    } else if (p->cap > PK_RESP_BUF_KEEP && p->len <= p->cap / 4) {
        size_t cap =
            p->len * 2 > PK_RESP_BUF_KEEP ? p->len * 2 : PK_RESP_BUF_KEEP;
        char *b = realloc(p->buf, cap);
        if (b) {
            p->buf = b;
            p->cap = cap;
        }
    }
    if (p->argc == 0 && p->argv_cap > PK_RESP_ARGV_KEEP) {
        free(p->argv);
        free(p->offs);
        p->argv = NULL;
        p->offs = NULL;
        p->argv_cap = 0;
    }
}

/* Where the pending big bulk argument ends (with its CRLF), if one is
 * pending and not complete yet; else 0. */
static size_t resp_big_end(const pk_resp_parser *p)
{
    size_t end;

    if (p->left == 0 || p->bulk < (int64_t)PK_RESP_BIG_ARG)
        return 0;
    end = p->pos + (size_t)p->bulk + 2;
    return end > p->len ? end : 0;
}

/*
 * Makes cap - len >= want, compacting first and then doubling.  While a
 * big bulk argument is pending the buffer is made to end exactly where the
 * argument does (when that is enough), so its bytes are not moved again.
 */
static int resp_grow(pk_resp_parser *p, size_t want)
{
    size_t need, cap, fit;
    char *b;

    if (p->cap - p->len >= want)
        return PK_OK;
    if (p->start > 0) {
        resp_compact(p);
        if (p->cap - p->len >= want)
            return PK_OK;
    }
    need = p->len + want;
    cap = p->cap ? p->cap : PK_RESP_BUF_INIT;
    while (cap < need)
        cap *= 2;
    fit = resp_big_end(p);
    if (fit >= need && fit < cap)
        cap = fit;
    b = realloc(p->buf, cap);
    if (!b)
        return PK_ENOMEM;
    p->buf = b;
    p->cap = cap;
    return PK_OK;
}

int pk_resp_feed(pk_resp_parser *p, const void *data, size_t len)
{
    int rc;

    if (p->failed)
        return p->failed;
    if (len > p->lim.max_query_buf - pk_resp_buffered(p))
        return PK_EFULL;
    rc = resp_grow(p, len);
    if (rc < 0)
        return rc;
    if (len)
        memcpy(p->buf + p->len, data, len);
    p->len += len;
    return PK_OK;
}

int pk_resp_space(pk_resp_parser *p, size_t want, char **buf, size_t *got)
{
    size_t room, end;
    int rc;

    if (p->failed)
        return p->failed;
    room = p->lim.max_query_buf - pk_resp_buffered(p);
    if (room == 0)
        return PK_EFULL;
    if (want == 0)
        want = 1;
    if (want > room)
        want = room;
    /* No need to read past a pending big argument to complete it. */
    end = resp_big_end(p);
    if (end && end - p->len < want)
        want = end - p->len;
    /* A buffer still half free for want is not grown: a partial request
     * at its start (a client dripping bytes) would otherwise be copied
     * into one twice the size at the next read, and its pages touched. */
    if (p->cap == p->len || p->cap - p->len < want / 2) {
        rc = resp_grow(p, want);
        if (rc < 0)
            return rc;
    }
    *buf = p->buf + p->len;
    *got = p->cap - p->len < room ? p->cap - p->len : room;
    return PK_OK;
}

void pk_resp_commit(pk_resp_parser *p, size_t n)
{
    p->len += n < p->cap - p->len ? n : p->cap - p->len;
}

/* Redis's string2ll(); see pk_proto_int.h. */
int pk__resp_int(const char *s, size_t n, int64_t *out)
{
    uint64_t v = 0, max = INT64_MAX;
    size_t i = 0;
    int neg = 0;

    if (n == 0 || n > 20)
        return 0;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        max = (uint64_t)INT64_MAX + 1;
        i = 1;
    }
    if (i == n || s[i] < '1' || s[i] > '9')
        return 0;
    for (; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (max - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = neg ? -(int64_t)(v - 1) - 1 : (int64_t)v;
    return 1;
}

/* Appends an argument at [off, off + n) of the current command. */
static int resp_push(pk_resp_parser *p, size_t off, size_t n)
{
    if (p->argc == p->argv_cap) {
        size_t cap = p->argv_cap ? p->argv_cap * 2 : PK_RESP_ARGV_INIT;
        pk_arg *a = realloc(p->argv, cap * sizeof(*a));
        if (!a)
            return PK_ENOMEM;
        p->argv = a;
        size_t *o = realloc(p->offs, cap * sizeof(*o));
        if (!o)
            return PK_ENOMEM;
        p->offs = o;
        p->argv_cap = cap;
    }
    p->offs[p->argc] = off;
    p->argv[p->argc].len = n;
    p->argc++;
    return PK_OK;
}

/*
 * Looks for c in the line at pos, within its first max_inline + 1 bytes,
 * skipping the bytes an earlier call already searched.  Returns the hit,
 * or NULL and sets *toobig when the window is full without one.
 */
static char *resp_find(pk_resp_parser *p, char c, int *toobig)
{
    size_t avail = p->len - p->pos;
    size_t win = avail <= p->lim.max_inline ? avail : p->lim.max_inline + 1;
    char *hit = NULL;

    if (win > p->seen)
        hit = memchr(p->buf + p->pos + p->seen, c, win - p->seen);
    if (!hit)
        p->seen = win;
    *toobig = !hit && avail > p->lim.max_inline;
    return hit;
}

/* Moves pos to the next element; nothing after it has been searched. */
static void resp_skip(pk_resp_parser *p, size_t to)
{
    p->pos = to;
    p->seen = 0;
}

/*
 * Finds the "\r" ending the count/length line at pos.  Returns 1 with *eol
 * at the "\r" once the byte after it has arrived too, 0 if more bytes are
 * needed, PK_EPROTO (with the text toobig) if the line is too long.
 */
static int resp_line(pk_resp_parser *p, size_t *eol, const char *toobig)
{
    int big;
    char *cr = resp_find(p, '\r', &big);

    if (!cr)
        return big ? resp_fail(p, toobig) : 0;
    *eol = (size_t)(cr - p->buf);
    return *eol + 1 < p->len;
}

/*
 * The usual "<lead><digits>\r\n" line at pos -- a positive count without
 * leading zeros, of at most 18 digits, whole in the buffer and within
 * max_inline -- read in one pass: 1 with *n and pos past the line, else 0
 * and nothing moved (the general path then reads it, and words any
 * error, as it would have from any chunk of it).
 */
static int resp_short_line(pk_resp_parser *p, char lead, int64_t *n)
{
    const char *b = p->buf, *q = b + p->pos + 1, *end = b + p->len;
    int64_t v = 0;
    int digits = 0;

    if (q >= end || b[p->pos] != lead || *q < '0' || *q > '9' ||
        (*q == '0' && q + 1 < end && q[1] != '\r'))
        return 0;
    for (; q < end && *q >= '0' && *q <= '9' && digits < 18; q++, digits++)
        v = v * 10 + (*q - '0');
    /* The general path's window: a "\r" past max_inline is an error. */
    if (end - q < 2 || *q != '\r' ||
        (size_t)(q - (b + p->pos)) > p->lim.max_inline)
        return 0;
    *n = v;
    resp_skip(p, (size_t)(q + 2 - b));
    return 1;
}

/* "*<n>\r\n": starts a multibulk command, or skips an empty one. */
static int resp_header(pk_resp_parser *p)
{
    size_t eol;
    int64_t n;
    int rc;

    if (resp_short_line(p, '*', &n)) {
        if (n > (int64_t)p->lim.max_args)
            return resp_fail(p, "invalid multibulk length");
        if (p->unauth && n > PK_RESP_UNAUTH_ARGS)
            return resp_fail(p, "unauthenticated multibulk length");
        if (n > 0) {
            p->left = (size_t)n;
            p->bulk = -1;
        }
        return 1;
    }
    rc = resp_line(p, &eol, "too big mbulk count string");
    if (rc <= 0)
        return rc;
    if (!pk__resp_int(p->buf + p->pos + 1, eol - p->pos - 1, &n) ||
        n > (int64_t)p->lim.max_args)
        return resp_fail(p, "invalid multibulk length");
    if (p->unauth && n > PK_RESP_UNAUTH_ARGS)
        return resp_fail(p, "unauthenticated multibulk length");
    resp_skip(p, eol + 2);
    if (n > 0) {
        p->left = (size_t)n;
        p->bulk = -1;
    }
    return 1;
}

/* "$<len>\r\n<payload>\r\n": one argument of a multibulk command. */
static int resp_bulk(pk_resp_parser *p)
{
    size_t eol;
    int64_t n;
    int rc;

    if (p->bulk < 0 && resp_short_line(p, '$', &n)) {
        if ((uint64_t)n > p->lim.max_bulk_len)
            return resp_fail(p, "invalid bulk length");
        if (p->unauth && n > PK_RESP_UNAUTH_BULK)
            return resp_fail(p, "unauthenticated bulk length");
        p->bulk = n;
    }
    if (p->bulk < 0) {
        rc = resp_line(p, &eol, "too big bulk count string");
        if (rc <= 0)
            return rc;
        if (p->buf[p->pos] != '$') {
            char what[32], c = p->buf[p->pos];
            /* A NUL would end the text; CR and LF would break the reply. */
            if (c == '\0' || c == '\r' || c == '\n')
                c = ' ';
            snprintf(what, sizeof(what), "expected '$', got '%c'", c);
            return resp_fail(p, what);
        }
        if (!pk__resp_int(p->buf + p->pos + 1, eol - p->pos - 1, &n) || n < 0 ||
            (uint64_t)n > p->lim.max_bulk_len)
            return resp_fail(p, "invalid bulk length");
        if (p->unauth && n > PK_RESP_UNAUTH_BULK)
            return resp_fail(p, "unauthenticated bulk length");
        resp_skip(p, eol + 2);
        p->bulk = n;
    }
    if (p->len - p->pos < (size_t)p->bulk + 2)
        return 0;
    rc = resp_push(p, p->pos - p->start, (size_t)p->bulk);
    if (rc < 0)
        return rc;
    p->buf[p->pos + (size_t)p->bulk] = '\0';
    resp_skip(p, p->pos + (size_t)p->bulk + 2);
    p->bulk = -1;
    p->left--;
    return 1;
}

/* isspace() in the C locale, which sdssplitargs() uses. */
static int resp_isspace(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static int resp_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The character a backslash escape inside "..." stands for. */
static char resp_unescape(char c)
{
    static const char from[] = "nrtba", to[] = "\n\r\t\b\a";
    const char *f = c ? strchr(from, c) : NULL;

    return f ? to[f - from] : c;
}

/*
 * Reads one token at *rp (not blank) with sdssplitargs() rules, writing
 * its unescaped bytes at w; unescaping never lengthens, so w can trail *rp
 * in the same buffer.  Returns the token length, or -1 for unbalanced
 * quotes.  On return *rp is past the token and its terminating blank.
 */
static ptrdiff_t resp_token(char **rp, char *e, char *w)
{
    char *r = *rp, *w0 = w, q = 0;

    for (;;) {
        if (q && r == e)
            return -1;
        if (q == '"' && r[0] == '\\' && e - r > 3 && r[1] == 'x' &&
            resp_hex(r[2]) >= 0 && resp_hex(r[3]) >= 0) {
            *w++ = (char)(resp_hex(r[2]) * 16 + resp_hex(r[3]));
            r += 4;
        } else if (q == '"' && r[0] == '\\' && e - r > 1) {
            *w++ = resp_unescape(r[1]);
            r += 2;
        } else if (q == '\'' && r[0] == '\\' && e - r > 1 && r[1] == '\'') {
            *w++ = '\'';
            r += 2;
        } else if (q && r[0] == q) {
            /* A closing quote must be followed by a blank or the end. */
            if (++r < e && !resp_isspace(*r))
                return -1;
            break;
        } else if (q) {
            *w++ = *r++;
        } else if (r == e || *r == ' ' || *r == '\t' || *r == '\r' ||
                   *r == '\n') {
            break;
        } else if (*r == '"' || *r == '\'') {
            q = *r++;
        } else {
            *w++ = *r++;
        }
    }
    *rp = r < e ? r + 1 : r;
    return w - w0;
}

/* One inline request line, unescaped in place in the query buffer. */
static int resp_inline(pk_resp_parser *p)
{
    int big, rc;
    char *s = p->buf + p->pos, *nl = resp_find(p, '\n', &big), *e, *r;

    if (!nl)
        return big ? resp_fail(p, "too big inline request") : 0;
    e = nl > s && nl[-1] == '\r' ? nl - 1 : nl;
    for (r = s;;) {
        while (r < e && resp_isspace(*r))
            r++;
        if (r == e)
            break;
        char *tok = r;
        ptrdiff_t n = resp_token(&r, e, tok);
        if (n < 0)
            return resp_fail(p, "unbalanced quotes in request");
        rc = resp_push(p, (size_t)(tok - p->buf) - p->start, (size_t)n);
        if (rc < 0)
            return rc;
        tok[n] = '\0';
    }
    resp_skip(p, (size_t)(nl - p->buf) + 1);
    return 1;
}

int pk_resp_next(pk_resp_parser *p, int *argc, const pk_arg **argv)
{
    int rc;

    if (p->failed)
        return p->failed;
    /* The limits were turned on while a command was partly received. */
    if (p->unauth && p->left > 0) {
        if (p->argc + p->left > PK_RESP_UNAUTH_ARGS)
            return resp_fail(p, "unauthenticated multibulk length");
        if (p->bulk > PK_RESP_UNAUTH_BULK)
            return resp_fail(p, "unauthenticated bulk length");
    }
    for (;;) {
        if (p->left == 0) {
            p->start = p->pos;
            p->argc = 0;
            if (p->pos == p->len)
                break;
            rc = p->buf[p->pos] == '*' ? resp_header(p) : resp_inline(p);
        } else {
            rc = resp_bulk(p);
        }
        if (rc < 0) {
            p->failed = rc;
            return rc;
        }
        if (rc == 0)
            break;
        if (p->left == 0 && p->argc > 0) {
            for (size_t i = 0; i < p->argc; i++)
                p->argv[i].ptr = p->buf + p->start + p->offs[i];
            *argc = (int)p->argc;
            *argv = p->argv;
            return 1;
        }
    }
    resp_compact(p);
    return 0;
}

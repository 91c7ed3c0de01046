/*
 * pk_rreply: RESP reply reader and request writer (see pk_rreply.h).
 *
 * The reader works in two passes over the bytes of one reply.  The scan
 * pass runs as bytes arrive: it checks each element, counts the nodes and
 * string bytes the tree will need, and keeps the open aggregates on a
 * stack of remaining-element counts.  Once the outermost element is
 * complete, the build pass walks the same bytes again -- all present and
 * already checked -- into one allocation sized from the counts:
 *
 *   arena: [ root | elems of root | elems of elems[0] | ... | strings ]
 *
 * so a tree is never sized from a declared length, only from bytes that
 * arrived, and freeing a reply is one free().
 *
 * The buffer holds returned bytes, the reply being scanned, and bytes not
 * scanned yet:
 *
 *   0          start          pos               len            cap
 *   |-returned-|--reply so far--|---unscanned------|---free-------|
 *
 * Invariants: start <= pos <= len <= cap; between replies depth == 0 and
 * nodes == strs == 0.  Each scan step consumes a whole element header (and
 * a whole string payload) or nothing, and the line-length windows do not
 * depend on how much is buffered, so any chunking of the input gives the
 * same replies and the same error.
 */
#include "pk_rreply.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "proto/pk_proto_int.h"
#include "proto/pk_reply.h"

#define PK_RR_BUF_INIT (16u * 1024)   /* first buffer */
#define PK_RR_BUF_KEEP (256u * 1024)  /* larger buffers shrink when idle */
#define PK_RR_NUM_LINE 32             /* longest count/length/int line */
#define PK_RR_DBL_LINE 256            /* longest double line */
#define PK_RR_STR_LINE (SIZE_MAX / 4) /* status, error, big number */
#define PK_RR_DEPTH_MAX 1024

/* An open aggregate during the scan. */
typedef struct rr_frame {
    size_t left; /* elements still expected, > 0 */
    int attr;    /* an attribute: not an element of its parent */
} rr_frame;

struct pk_rreply_reader {
    pk_rreply_limits lim;
    char *buf; /* owned, cap bytes, or NULL */
    size_t cap;
    size_t len;      /* bytes received */
    size_t start;    /* first byte of the reply being scanned */
    size_t pos;      /* next element to scan */
    size_t seen;     /* line bytes after pos + 1 with no CRLF in them */
    size_t nodes;    /* tree nodes of the reply so far */
    size_t strs;     /* string bytes of the reply so far, NULs included */
    size_t depth;    /* frames in use */
    size_t attrs;    /* attribute frames among them */
    rr_frame *stack; /* owned, lim.max_depth frames */
    int failed;      /* sticky PK_EPROTO or PK_ENOMEM, else 0 */
    char err[80];    /* text after PK_EPROTO */
};

/* One element's header, as parsed; aggregates' elements follow it. */
typedef struct rr_head {
    int type;        /* the type byte; '_' also for "$-1" and "*-1" */
    int64_t num;     /* INT and BOOL value, aggregate count */
    double dbl;      /* DOUBLE */
    const char *str; /* line text, or string payload */
    size_t len;
    size_t size; /* bytes of the header (and string payload) */
} rr_head;

pk_rreply_limits pk_rreply_limits_default(void)
{
    pk_rreply_limits lim = {
        .max_bulk_len = 512u * 1024 * 1024,
        .max_elements = 1024u * 1024,
        .max_depth = 64,
        .max_buffered = (size_t)1024 * 1024 * 1024,
    };
    return lim;
}

int pk_rreply_reader_new(const pk_rreply_limits *lim, pk_rreply_reader **out)
{
    pk_rreply_limits l = lim ? *lim : pk_rreply_limits_default();
    pk_rreply_reader *r;

    if (!out || !l.max_bulk_len || !l.max_elements || !l.max_depth ||
        !l.max_buffered || l.max_bulk_len > PTRDIFF_MAX / 2 ||
        l.max_elements > INT64_MAX / 2 || l.max_depth > PK_RR_DEPTH_MAX ||
        l.max_buffered > SIZE_MAX / 4)
        return PK_EINVAL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return PK_ENOMEM;
    r->stack = calloc(l.max_depth, sizeof(*r->stack));
    if (!r->stack) {
        free(r);
        return PK_ENOMEM;
    }
    r->lim = l;
    *out = r;
    return PK_OK;
}

void pk_rreply_reader_free(pk_rreply_reader *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r->stack);
    free(r);
}

void pk_rr_free(pk_rr *root)
{
    free(root);
}

const char *pk_rreply_error(const pk_rreply_reader *r)
{
    return r->failed == PK_EPROTO ? r->err : NULL;
}

size_t pk_rreply_buffered(const pk_rreply_reader *r)
{
    return r->len - r->start;
}

size_t pk_rreply_memory(const pk_rreply_reader *r)
{
    return sizeof(*r) + r->cap + r->lim.max_depth * sizeof(*r->stack);
}

/* Drops returned bytes, and gives back memory one large reply took. */
static void rr_compact(pk_rreply_reader *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start;
        r->pos -= r->start;
        r->start = 0;
    }
    if (r->cap > PK_RR_BUF_KEEP && r->len == 0) {
        free(r->buf);
        r->buf = NULL;
        r->cap = 0;
    } else if (r->cap > PK_RR_BUF_KEEP && r->len <= r->cap / 4) {
        size_t cap = r->len * 2 > PK_RR_BUF_KEEP ? r->len * 2 : PK_RR_BUF_KEEP;
        char *b = realloc(r->buf, cap);
        if (b) {
            r->buf = b;
            r->cap = cap;
        }
    }
}

int pk_rreply_feed(pk_rreply_reader *r, const void *data, size_t len)
{
    if (r->failed)
        return r->failed;
    if (len > r->lim.max_buffered - (r->len - r->start))
        return PK_EFULL;
    if (len == 0)
        return PK_OK;
    if (r->cap - r->len < len)
        rr_compact(r);
    if (r->cap - r->len < len) {
        size_t cap = r->cap ? r->cap : PK_RR_BUF_INIT;
        char *b;
        while (cap - r->len < len)
            cap *= 2;
        b = realloc(r->buf, cap);
        if (!b)
            return PK_ENOMEM;
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, len);
    r->len += len;
    return PK_OK;
}

/* ---- parsing one element header -------------------------------------- */

/* A RESP3 double: what strtod() takes whole, not starting with a blank
 * ("1.5", "-3e10", "inf", "-inf", "nan").  Returns 1 and *out, or 0. */
static int rr_double(const char *s, size_t n, double *out)
{
    char tmp[PK_RR_DBL_LINE + 1], *end;

    if (n == 0 || n > PK_RR_DBL_LINE || !strchr("+-.0123456789iInN", s[0]))
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    *out = strtod(tmp, &end);
    return end == tmp + n;
}

/* A RESP3 big number: digits, perhaps after a '-'. */
static int rr_bignum(const char *s, size_t n)
{
    size_t i = n > 0 && s[0] == '-';

    if (i == n)
        return 0;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* The longest line text of a type; 0 for an unknown type byte. */
static size_t rr_line_cap(int type)
{
    switch (type) {
    case '+':
    case '-':
    case '(':
        return PK_RR_STR_LINE;
    case ',':
        return PK_RR_DBL_LINE;
    case ':':
    case '$':
    case '=':
    case '*':
    case '%':
    case '~':
    case '>':
    case '|':
    case '#':
    case '_':
        return PK_RR_NUM_LINE;
    default:
        return 0;
    }
}

/*
 * Finds the CRLF ending the line text at p (avail bytes), which must
 * start within cap bytes.  *seen counts leading bytes known to start no
 * CRLF; it only grows.  Returns 1 with *eol the text length, 0 if more
 * bytes are needed, -1 if the text is longer than cap.  The window
 * searched is at most cap + 2 bytes, so the answer does not depend on how
 * many bytes beyond it are buffered.
 */
static int rr_line(const char *p, size_t avail, size_t cap, size_t *seen,
                   size_t *eol)
{
    size_t win = avail < cap + 2 ? avail : cap + 2;
    size_t i = *seen;

    while (i + 1 < win) {
        const char *cr = memchr(p + i, '\r', win - 1 - i);
        if (!cr) {
            i = win - 1;
            break;
        }
        i = (size_t)(cr - p);
        if (p[i + 1] == '\n') {
            *eol = i;
            return 1;
        }
        i++;
    }
    *seen = i;
    return win == cap + 2 ? -1 : 0;
}

static int rr_bad(char *err, size_t errsz, const char *what)
{
    snprintf(err, errsz, "Protocol error: %s", what);
    return PK_EPROTO;
}

/* The payload of "$<n>" or "=<n>" after its header line of h->size bytes. */
static int rr_string(const pk_rreply_limits *lim, const char *p, size_t avail,
                     rr_head *h, char *err, size_t errsz)
{
    size_t n;

    if (h->num == -1 && h->type == '$') {
        h->type = '_';
        return 1;
    }
    if (h->num < 0 || (uint64_t)h->num > lim->max_bulk_len)
        return rr_bad(err, errsz, "invalid bulk length");
    n = (size_t)h->num;
    if (avail - h->size < n + 2)
        return 0;
    if (p[h->size + n] != '\r' || p[h->size + n + 1] != '\n')
        return rr_bad(err, errsz, "bulk payload not followed by CRLF");
    if (h->type == '=' && (n < 4 || p[h->size + 3] != ':'))
        return rr_bad(err, errsz, "invalid verbatim string");
    h->str = p + h->size;
    h->len = n;
    h->size += n + 2;
    return 1;
}

/* The count of an aggregate or attribute header. */
static int rr_count(const pk_rreply_limits *lim, rr_head *h, char *err,
                    size_t errsz)
{
    if (h->num == -1 && h->type == '*') {
        h->type = '_';
        return 1;
    }
    if (h->num < 0)
        return rr_bad(err, errsz, "invalid aggregate length");
    if ((uint64_t)h->num > lim->max_elements)
        return rr_bad(err, errsz, "too many elements");
    return 1;
}

/*
 * Parses the header of the element at p (avail bytes) and, for strings,
 * its payload.  *seen is rr_line's, for this element.  Returns 1 with *h,
 * 0 if more bytes are needed, PK_EPROTO with the reason in err.
 */
static int rr_head_parse(const pk_rreply_limits *lim, const char *p,
                         size_t avail, size_t *seen, rr_head *h, char *err,
                         size_t errsz)
{
    size_t cap, eol;
    int rc;

    if (avail == 0)
        return 0;
    h->type = (unsigned char)p[0];
    cap = rr_line_cap(h->type);
    if (!cap) {
        snprintf(err, errsz, "Protocol error: unknown type byte 0x%02x",
                 (unsigned)h->type);
        return PK_EPROTO;
    }
    rc = rr_line(p + 1, avail - 1, cap, seen, &eol);
    if (rc < 0)
        return rr_bad(err, errsz, "line too long");
    if (rc == 0)
        return 0;
    h->str = p + 1;
    h->len = eol;
    h->size = 1 + eol + 2;
    h->num = 0;
    switch (h->type) {
    case '+':
    case '-':
        return 1;
    case '(':
        return rr_bignum(h->str, eol)
                   ? 1
                   : rr_bad(err, errsz, "invalid big number");
    case ',':
        return rr_double(h->str, eol, &h->dbl)
                   ? 1
                   : rr_bad(err, errsz, "invalid double");
    case '#':
        if (eol != 1 || (h->str[0] != 't' && h->str[0] != 'f'))
            return rr_bad(err, errsz, "invalid boolean");
        h->num = h->str[0] == 't';
        return 1;
    case '_':
        return eol == 0 ? 1 : rr_bad(err, errsz, "invalid null");
    }
    if (!pk__resp_int(h->str, eol, &h->num))
        return rr_bad(err, errsz,
                      h->type == ':' ? "invalid integer" : "invalid length");
    if (h->type == ':')
        return 1;
    if (h->type == '$' || h->type == '=')
        return rr_string(lim, p, avail, h, err, errsz);
    return rr_count(lim, h, err, errsz);
}

static int rr_has_str(int type)
{
    return type == '+' || type == '-' || type == '$' || type == '=' ||
           type == ',' || type == '(';
}

static int rr_is_aggregate(int type)
{
    return type == '*' || type == '%' || type == '~' || type == '>' ||
           type == '|';
}

/* ---- scan pass ------------------------------------------------------- */

/* One element is complete: closes the aggregates it completes.  Returns 1
 * while the reply goes on, 2 when it is complete. */
static int rr_scan_done(pk_rreply_reader *r)
{
    while (r->depth > 0) {
        rr_frame *f = &r->stack[r->depth - 1];
        if (--f->left > 0)
            return 1;
        r->depth--;
        if (f->attr) {
            /* The annotated element is still to come. */
            r->attrs--;
            return 1;
        }
    }
    return 2;
}

/*
 * Scans the element at pos.  Returns 0 when more bytes are needed, 1 after
 * an element of an unfinished reply, 2 when the reply is complete,
 * PK_EPROTO.
 */
static int rr_scan(pk_rreply_reader *r)
{
    rr_head h;
    int rc;

    if (r->pos == r->len)
        return 0; /* also: no buffer at all */
    rc = rr_head_parse(&r->lim, r->buf + r->pos, r->len - r->pos, &r->seen, &h,
                       r->err, sizeof(r->err));
    if (rc <= 0)
        return rc;
    r->pos += h.size;
    r->seen = 0;
    if (!rr_is_aggregate(h.type)) {
        if (!r->attrs) {
            r->nodes++;
            r->strs += rr_has_str(h.type) ? h.len + 1 : 0;
        }
        return rr_scan_done(r);
    }
    if (r->depth == r->lim.max_depth)
        return rr_bad(r->err, sizeof(r->err), "nesting too deep");
    if (h.type != '|' && !r->attrs)
        r->nodes++;
    if (h.num == 0)
        return h.type == '|' ? 1 : rr_scan_done(r);
    r->stack[r->depth].left =
        (size_t)h.num * (h.type == '%' || h.type == '|' ? 2 : 1);
    r->stack[r->depth].attr = h.type == '|';
    r->depth++;
    r->attrs += h.type == '|';
    return 1;
}

/* ---- build pass ------------------------------------------------------ */

typedef struct rr_build {
    const pk_rreply_limits *lim;
    const char *p;   /* next element */
    const char *end; /* end of the reply */
    pk_rr *nodes;    /* the arena's nodes */
    size_t nnodes;
    size_t next; /* first free node */
    char *s;     /* next free string byte */
    char *send;  /* end of the arena */
    char err[80];
} rr_build;

/* Copies a string into the arena, with a NUL. */
static const char *rr_build_str(rr_build *b, const char *s, size_t n)
{
    char *d = b->s;

    if ((size_t)(b->send - b->s) < n + 1)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    b->s += n + 1;
    return d;
}

static int rr_build_node(rr_build *b, pk_rr *node, const rr_head *h);

/*
 * Builds the element at b->p into node, or only steps over it when node
 * is NULL (inside an attribute).  The bytes were checked by the scan, so
 * failures here mean the two passes disagree.
 */
static int rr_build_one(rr_build *b, pk_rr *node)
{
    rr_head h;
    size_t seen;
    int rc;

    for (;;) {
        seen = 0;
        rc = rr_head_parse(b->lim, b->p, (size_t)(b->end - b->p), &seen, &h,
                           b->err, sizeof(b->err));
        if (rc != 1)
            return PK_EPROTO;
        b->p += h.size;
        if (h.type != '|')
            break;
        for (int64_t i = 0; i < 2 * h.num; i++) {
            rc = rr_build_one(b, NULL);
            if (rc < 0)
                return rc;
        }
    }
    if (!node) {
        int64_t k = h.type == '%' ? 2 * h.num : h.num;
        for (int64_t i = 0; rr_is_aggregate(h.type) && i < k; i++) {
            rc = rr_build_one(b, NULL);
            if (rc < 0)
                return rc;
        }
        return PK_OK;
    }
    return rr_build_node(b, node, &h);
}

/* Fills node from its header, then builds its elements. */
static int rr_build_node(rr_build *b, pk_rr *node, const rr_head *h)
{
    size_t k;

    memset(node, 0, sizeof(*node));
    node->type = h->type;
    if (h->type == '=') {
        memcpy(node->fmt, h->str, 3);
        node->str = rr_build_str(b, h->str + 4, h->len - 4);
        node->len = h->len - 4;
    } else if (rr_has_str(h->type)) {
        node->str = rr_build_str(b, h->str, h->len);
        node->len = h->len;
    }
    if (rr_has_str(h->type) && !node->str)
        return PK_EPROTO;
    node->integer = h->type == ':' || h->type == '#' ? h->num : 0;
    node->dbl = h->type == ',' ? h->dbl : 0;
    if (!rr_is_aggregate(h->type) || h->num == 0)
        return PK_OK;
    node->n = (size_t)h->num;
    k = node->n * (h->type == '%' ? 2 : 1);
    if (k > b->nnodes - b->next)
        return PK_EPROTO;
    node->elems = b->nodes + b->next;
    b->next += k;
    for (size_t i = 0; i < k; i++) {
        int rc = rr_build_one(b, &node->elems[i]);
        if (rc < 0)
            return rc;
    }
    return PK_OK;
}

/* Builds the scanned reply [start, pos) into one allocation. */
static int rr_build_reply(pk_rreply_reader *r, pk_rr **reply)
{
    rr_build b = {.lim = &r->lim};
    size_t size;
    int rc;

    if (r->nodes > (SIZE_MAX - r->strs) / sizeof(pk_rr))
        return PK_ENOMEM;
    size = r->nodes * sizeof(pk_rr) + r->strs;
    b.nodes = malloc(size);
    if (!b.nodes)
        return PK_ENOMEM;
    b.nnodes = r->nodes;
    b.next = 1;
    b.s = (char *)(b.nodes + r->nodes);
    b.send = (char *)b.nodes + size;
    b.p = r->buf + r->start;
    b.end = r->buf + r->pos;
    rc = rr_build_one(&b, b.nodes);
    if (rc == PK_OK && (b.p != b.end || b.next != b.nnodes))
        rc = PK_EPROTO;
    if (rc < 0) {
        free(b.nodes);
        return rr_bad(r->err, sizeof(r->err), "reader out of step");
    }
    *reply = b.nodes;
    return PK_OK;
}

int pk_rreply_next(pk_rreply_reader *r, pk_rr **reply)
{
    int rc;

    if (r->failed)
        return r->failed;
    while ((rc = rr_scan(r)) == 1)
        ;
    if (rc == 0) {
        rr_compact(r);
        return 0;
    }
    if (rc == 2)
        rc = rr_build_reply(r, reply);
    if (rc < 0) {
        r->failed = rc;
        return rc;
    }
    r->start = r->pos;
    r->nodes = 0;
    r->strs = 0;
    return 1;
}

/* ---- request writer -------------------------------------------------- */

/* Writes "<type><n>\r\n" at w unless w is NULL; returns its size. */
static size_t rr_hdr(char *w, char type, size_t n)
{
    char digits[PK_I64_CHARS];
    size_t k = pk_i64_format(digits, (int64_t)n);

    if (w) {
        w[0] = type;
        memcpy(w + 1, digits, k);
        w[k + 1] = '\r';
        w[k + 2] = '\n';
    }
    return k + 3;
}

/* total plus the size of a bulk argument of len bytes, saturated where
 * pk_obuf_reserve() fails anyway. */
static size_t rr_arg_size(size_t total, size_t len)
{
    size_t add =
        len > SIZE_MAX / 4 ? SIZE_MAX / 2 : rr_hdr(NULL, '$', len) + len + 2;

    return add > SIZE_MAX / 2 - total ? SIZE_MAX / 2 : total + add;
}

/* Appends "$<len>\r\n<p>\r\n" into room already reserved. */
static void rr_put_arg(pk_obuf *ob, const char *p, size_t len)
{
    char *w = ob->data + ob->len;
    size_t k = rr_hdr(w, '$', len);

    if (len)
        memcpy(w + k, p, len);
    w[k + len] = '\r';
    w[k + len + 1] = '\n';
    ob->len += k + len + 2;
}

/*
 * Both writers size the whole request first and reserve exactly that, so
 * the request is appended whole or not at all.
 */
int pk_rr_write_cmd(pk_obuf *ob, int argc, const char *const *argv,
                    const size_t *lens)
{
    size_t total;
    int rc;

    if (!ob || !argv || argc < 1)
        return PK_EINVAL;
    total = rr_hdr(NULL, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        if (!argv[i] && (!lens || lens[i] > 0))
            return PK_EINVAL;
        total = rr_arg_size(total, lens ? lens[i] : strlen(argv[i]));
    }
    rc = pk_obuf_reserve(ob, total);
    if (rc < 0)
        return rc;
    ob->len += rr_hdr(ob->data + ob->len, '*', (size_t)argc);
    for (int i = 0; i < argc; i++)
        rr_put_arg(ob, argv[i], lens ? lens[i] : strlen(argv[i]));
    return PK_OK;
}

int pk_rr_write_cmdv(pk_obuf *ob, const char *arg, ...)
{
    va_list ap;
    size_t total = 0, argc = 0;
    int rc;

    if (!ob || !arg)
        return PK_EINVAL;
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        total = rr_arg_size(total, strlen(a));
        argc++;
    }
    va_end(ap);
    if (argc > INT_MAX)
        return PK_EINVAL;
    total += rr_hdr(NULL, '*', argc);
    rc = pk_obuf_reserve(ob, total);
    if (rc < 0)
        return rc;
    ob->len += rr_hdr(ob->data + ob->len, '*', argc);
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *))
        rr_put_arg(ob, a, strlen(a));
    va_end(ap);
    return PK_OK;
}

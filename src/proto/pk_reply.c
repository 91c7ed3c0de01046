/*
 * pk_reply: RESP reply writers (see pk_reply.h for the contract).
 *
 *   0         head                  len              cap
 *   |--sent----|--pending output-----|-----free-------|
 *
 * Invariants: head <= len <= cap; when nothing is pending head == len == 0.
 * Sent bytes are reclaimed lazily: a writer that lacks room first moves
 * the pending bytes to the front, so a slow reader costs one memmove per
 * refill, not one per partial write.  Positions handed out by
 * pk_reply_defer() are offsets from head, which that move preserves.
 *
 * Integers are formatted by pk_i64_format (core/pk_num.h), because every
 * reply carries at least one length.
 */
#include "pk_reply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"

#define PK_OBUF_INIT 1024u
#define PK_OBUF_KEEP (64u * 1024) /* larger buffers are freed when empty */
#define PK_REPLY_SLOT 23          /* "*" + 20 digits + CRLF */
#define PK_REPLY_HDR_MAX 24       /* type + sign + 20 digits + CRLF */

void pk_obuf_init(pk_obuf *ob)
{
    memset(ob, 0, sizeof(*ob));
}

void pk_obuf_free(pk_obuf *ob)
{
    if (!ob)
        return;
    free(ob->data);
    pk_obuf_init(ob);
}

/* Gives back a large buffer once nothing is pending. */
static void obuf_trim(pk_obuf *ob)
{
    ob->head = ob->len = 0;
    if (ob->cap > PK_OBUF_KEEP) {
        free(ob->data);
        ob->data = NULL;
        ob->cap = 0;
    }
}

void pk_obuf_reset(pk_obuf *ob)
{
    obuf_trim(ob);
    ob->err = 0;
}

size_t pk_obuf_pending(const pk_obuf *ob)
{
    return ob->len - ob->head;
}

void pk_obuf_consume(pk_obuf *ob, size_t n)
{
    ob->head += n < ob->len - ob->head ? n : ob->len - ob->head;
    if (ob->head == ob->len)
        obuf_trim(ob);
}

int pk_obuf_reserve(pk_obuf *ob, size_t n)
{
    size_t cap;
    char *d;

    if (ob->err)
        return ob->err;
    if (ob->cap - ob->len >= n)
        return PK_OK;
    if (ob->head > 0) {
        memmove(ob->data, ob->data + ob->head, ob->len - ob->head);
        ob->len -= ob->head;
        ob->head = 0;
        if (ob->cap - ob->len >= n)
            return PK_OK;
    }
    if (n > SIZE_MAX / 2 - ob->len)
        return ob->err = PK_ENOMEM;
    cap = ob->cap ? ob->cap : PK_OBUF_INIT;
    while (cap - ob->len < n)
        cap *= 2;
    d = realloc(ob->data, cap);
    if (!d)
        return ob->err = PK_ENOMEM;
    ob->data = d;
    ob->cap = cap;
    return PK_OK;
}

/* Room for n bytes at the end, or NULL after a (sticky) failure. */
static char *obuf_room(pk_obuf *ob, size_t n)
{
    return pk_obuf_reserve(ob, n) == PK_OK ? ob->data + ob->len : NULL;
}

int pk_obuf_append(pk_obuf *ob, const void *p, size_t n)
{
    char *w;

    /* An empty obuf has no buffer yet: NULL + 0 is no pointer. */
    if (n == 0)
        return ob->err;
    if (!(w = obuf_room(ob, n)))
        return ob->err;
    memcpy(w, p, n);
    ob->len += n;
    return PK_OK;
}

/* "<type><v>\r\n" at w; returns its length. */
static size_t reply_hdr_at(char *w, char type, int64_t v)
{
    size_t n = 1 + pk_i64_format(w + 1, v);

    w[0] = type;
    w[n] = '\r';
    w[n + 1] = '\n';
    return n + 2;
}

static int reply_hdr(pk_obuf *ob, char type, int64_t v)
{
    char *w = obuf_room(ob, PK_REPLY_HDR_MAX);

    if (!w)
        return ob->err;
    ob->len += reply_hdr_at(w, type, v);
    return PK_OK;
}

/* Counts are written as int64_t; no reply can hold more elements. */
static int64_t reply_count(size_t n)
{
    return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

/*
 * "<type>" + s + "\r\n" with CR and LF in s turned into spaces, and for
 * errors also trimmed from both ends first.
 */
static int reply_line(pk_obuf *ob, char type, const char *s, int trim)
{
    size_t n = strlen(s);
    char *w;

    while (trim && n && (s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    while (trim && n && (s[0] == '\r' || s[0] == '\n'))
        s++, n--;
    w = obuf_room(ob, n + 3);
    if (!w)
        return ob->err;
    w[0] = type;
    for (size_t i = 0; i < n; i++)
        w[1 + i] = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
    w[n + 1] = '\r';
    w[n + 2] = '\n';
    ob->len += n + 3;
    return PK_OK;
}

int pk_reply_simple(pk_obuf *ob, const char *s)
{
    return reply_line(ob, '+', s, 0);
}

int pk_reply_simples(pk_obuf *ob, const char *const *lines, size_t n)
{
    int rc = pk_reply_array(ob, n);

    for (size_t i = 0; rc == PK_OK && i < n; i++)
        rc = pk_reply_simple(ob, lines[i]);
    return rc;
}

int pk_reply_error(pk_obuf *ob, const char *err)
{
    return reply_line(ob, '-', err[0] == '-' ? err + 1 : err, 1);
}

int pk_reply_errorf(pk_obuf *ob, const char *fmt, ...)
{
    char small[256], *big = NULL;
    va_list ap;
    int n, rc;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return PK_EINVAL;
    if ((size_t)n >= sizeof(small)) {
        big = malloc((size_t)n + 1);
        if (!big)
            return ob->err = PK_ENOMEM;
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    rc = pk_reply_error(ob, big ? big : small);
    free(big);
    return rc;
}

int pk_reply_int(pk_obuf *ob, int64_t v)
{
    return reply_hdr(ob, ':', v);
}

int pk_reply_bulk(pk_obuf *ob, const void *p, size_t len)
{
    char *w;
    size_t n;

    if (len > SIZE_MAX / 2)
        return ob->err = PK_ENOMEM;
    w = obuf_room(ob, PK_REPLY_HDR_MAX + len + 2);
    if (!w)
        return ob->err;
    n = reply_hdr_at(w, '$', reply_count(len));
    if (len)
        memcpy(w + n, p, len);
    w[n + len] = '\r';
    w[n + len + 1] = '\n';
    ob->len += n + len + 2;
    return PK_OK;
}

int pk_reply_bulk_str(pk_obuf *ob, const char *s)
{
    return pk_reply_bulk(ob, s, strlen(s));
}

int pk_reply_null(pk_obuf *ob, int proto)
{
    return proto == 3 ? pk_obuf_append(ob, "_\r\n", 3)
                      : pk_obuf_append(ob, "$-1\r\n", 5);
}

int pk_reply_null_array(pk_obuf *ob, int proto)
{
    return proto == 3 ? pk_obuf_append(ob, "_\r\n", 3)
                      : pk_obuf_append(ob, "*-1\r\n", 5);
}

int pk_reply_array(pk_obuf *ob, size_t n)
{
    return reply_hdr(ob, '*', reply_count(n));
}

int pk_reply_map(pk_obuf *ob, int proto, size_t n)
{
    if (proto == 3)
        return reply_hdr(ob, '%', reply_count(n));
    return reply_hdr(ob, '*', reply_count(n > SIZE_MAX / 2 ? SIZE_MAX : n * 2));
}

int pk_reply_set(pk_obuf *ob, int proto, size_t n)
{
    return reply_hdr(ob, proto == 3 ? '~' : '*', reply_count(n));
}

int pk_reply_double(pk_obuf *ob, int proto, double d)
{
    char buf[40];
    int n;
    char *w;

    if (isinf(d))
        n = snprintf(buf, sizeof(buf), "%s", d > 0 ? "inf" : "-inf");
    else if (isnan(d))
        n = snprintf(buf, sizeof(buf), "nan");
    else
        n = snprintf(buf, sizeof(buf), "%.17g", d);
    if (proto != 3)
        return pk_reply_bulk(ob, buf, (size_t)n);
    w = obuf_room(ob, (size_t)n + 3);
    if (!w)
        return ob->err;
    w[0] = ',';
    memcpy(w + 1, buf, (size_t)n);
    memcpy(w + 1 + n, "\r\n", 2);
    ob->len += (size_t)n + 3;
    return PK_OK;
}

int pk_reply_bool(pk_obuf *ob, int proto, int b)
{
    if (proto == 3)
        return pk_obuf_append(ob, b ? "#t\r\n" : "#f\r\n", 4);
    return pk_obuf_append(ob, b ? ":1\r\n" : ":0\r\n", 4);
}

int pk_reply_verbatim(pk_obuf *ob, int proto, const char *fmt, const void *p,
                      size_t len)
{
    char *w;
    size_t n;

    if (strlen(fmt) != 3)
        return PK_EINVAL;
    if (proto != 3)
        return pk_reply_bulk(ob, p, len);
    if (len > SIZE_MAX / 2)
        return ob->err = PK_ENOMEM;
    w = obuf_room(ob, PK_REPLY_HDR_MAX + 4 + len + 2);
    if (!w)
        return ob->err;
    n = reply_hdr_at(w, '=', reply_count(len + 4));
    memcpy(w + n, fmt, 3);
    w[n + 3] = ':';
    if (len)
        memcpy(w + n + 4, p, len);
    memcpy(w + n + 4 + len, "\r\n", 2);
    ob->len += n + 4 + len + 2;
    return PK_OK;
}

int pk_reply_defer(pk_obuf *ob, size_t *pos)
{
    char *w = obuf_room(ob, PK_REPLY_SLOT);

    if (!w)
        return ob->err;
    memset(w, 0, PK_REPLY_SLOT);
    *pos = ob->len - ob->head;
    ob->len += PK_REPLY_SLOT;
    return PK_OK;
}

/*
 * The header goes into the slot and the gap left over closes by moving
 * the shorter side: the bytes written after the slot move back, or the
 * pending bytes before it move forward together with head.  Either way
 * the offsets of earlier (outer) slots from head stay the same.
 */
int pk_reply_set_deferred(pk_obuf *ob, size_t pos, int proto,
                          enum pk_reply_kind kind, size_t n)
{
    static const char empty[PK_REPLY_SLOT];
    char hdr[PK_REPLY_HDR_MAX], *base, type = '*';
    size_t h, gap, after;

    if (ob->err)
        return ob->err;
    if (pos > pk_obuf_pending(ob) || pk_obuf_pending(ob) - pos < PK_REPLY_SLOT)
        return PK_EINVAL;
    base = ob->data + ob->head;
    if (memcmp(base + pos, empty, PK_REPLY_SLOT) != 0)
        return PK_EINVAL;
    if (kind == PK_REPLY_MAP && proto == 3)
        type = '%';
    else if (kind == PK_REPLY_MAP)
        n = n > SIZE_MAX / 2 ? SIZE_MAX : n * 2;
    else if (kind == PK_REPLY_SET && proto == 3)
        type = '~';
    else if (kind != PK_REPLY_ARRAY && kind != PK_REPLY_SET)
        return PK_EINVAL;
    h = reply_hdr_at(hdr, type, reply_count(n));
    gap = PK_REPLY_SLOT - h;
    after = pk_obuf_pending(ob) - pos - PK_REPLY_SLOT;
    if (after <= pos) {
        memcpy(base + pos, hdr, h);
        memmove(base + pos + h, base + pos + PK_REPLY_SLOT, after);
        ob->len -= gap;
    } else {
        memcpy(base + pos + gap, hdr, h);
        memmove(base + gap, base, pos);
        ob->head += gap;
    }
    return PK_OK;
}

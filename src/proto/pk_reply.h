/*
 * pk_reply: RESP2/RESP3 reply writers over a growable output buffer.
 *
 * A connection appends its replies to one pk_obuf, sends data[head..len)
 * and drops what the socket took with pk_obuf_consume().  Writers take the
 * protocol version (2 or 3) where the encodings differ, and produce the
 * bytes redis-server 7.0 produces:
 *
 *   writer              RESP2                 RESP3
 *   null                $-1                   _
 *   null_array          *-1                   _
 *   map n               *<2n>                 %<n>
 *   set n               *<n>                  ~<n>
 *   bool                :1 / :0               #t / #f
 *   double              $<len> %.17g          ,%.17g    (inf, -inf, nan)
 *   verbatim "txt"      $<len> payload        =<len+4> txt:payload
 *
 * Every writer reserves all its bytes before writing, so a reply is either
 * appended whole or not at all.  Allocation failure is sticky, as a failed
 * LMDB transaction is: once a writer returned PK_ENOMEM, every writer
 * returns PK_ENOMEM and appends nothing until pk_obuf_reset(), because a
 * half-built aggregate reply could not be completed anyway; the connection
 * should be closed.
 *
 * Simple strings and errors must not contain CR or LF; writers replace
 * them by spaces (after trimming trailing ones from errors), as Redis does
 * for formatted errors, so a reply can never break the stream.
 *
 * An obuf is not thread-safe.
 */
#ifndef PK_PROTO_PK_REPLY_H
#define PK_PROTO_PK_REPLY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Pending output is data[head..len).  data is owned by the obuf and may
 * move on any call that appends, so a pointer into it is valid only until
 * the next call on the obuf other than pk_obuf_consume() of bytes before
 * it.  (A libuv server therefore hands uv_write a buffer it will not
 * append to before the write completes, or copies.)
 */
typedef struct pk_obuf {
    char *data;  /* owned, cap bytes, or NULL */
    size_t head; /* first byte not sent yet */
    size_t len;  /* end of pending output */
    size_t cap;
    int err; /* 0, or sticky PK_ENOMEM */
} pk_obuf;

/* An empty obuf; allocates nothing. */
void pk_obuf_init(pk_obuf *ob);

/* Frees the buffer and leaves an empty obuf; NULL does nothing. */
void pk_obuf_free(pk_obuf *ob);

/* Drops all pending output and a sticky error; keeps a small buffer. */
void pk_obuf_reset(pk_obuf *ob);

/* Bytes pending (len - head). */
size_t pk_obuf_pending(const pk_obuf *ob);

/*
 * Makes room for n more bytes at data + len.  Returns PK_OK or PK_ENOMEM
 * (sticky, see above).
 */
int pk_obuf_reserve(pk_obuf *ob, size_t n);

/* Appends n raw bytes (already RESP, e.g. a forwarded reply). */
int pk_obuf_append(pk_obuf *ob, const void *p, size_t n);

/*
 * Drops the first n pending bytes (those a write took; n is clamped to
 * the pending count).  When nothing is left pending a large buffer is
 * given back.  Never between pk_reply_defer() and pk_reply_set_deferred().
 */
void pk_obuf_consume(pk_obuf *ob, size_t n);

/* Writers: each returns PK_OK, or PK_ENOMEM and appends nothing. */

/* "+s\r\n" (s: C string, borrowed). */
int pk_reply_simple(pk_obuf *ob, const char *s);

/* An array of n simple strings (a subcommand's HELP). */
int pk_reply_simples(pk_obuf *ob, const char *const *lines, size_t n);

/* "-err\r\n"; err starts with its code ("ERR ...", "MOVED ..."); a
 * leading '-' is not doubled. */
int pk_reply_error(pk_obuf *ob, const char *err);

/* pk_reply_error() of a printf-formatted message. */
int pk_reply_errorf(pk_obuf *ob, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ":v\r\n". */
int pk_reply_int(pk_obuf *ob, int64_t v);

/* "$len\r\n" + len bytes at p (borrowed, binary-safe) + "\r\n". */
int pk_reply_bulk(pk_obuf *ob, const void *p, size_t len);

/* pk_reply_bulk() of a C string. */
int pk_reply_bulk_str(pk_obuf *ob, const char *s);

/* A null (bulk) reply: "$-1\r\n" in RESP2, "_\r\n" in RESP3. */
int pk_reply_null(pk_obuf *ob, int proto);

/* A null array: "*-1\r\n" in RESP2, "_\r\n" in RESP3. */
int pk_reply_null_array(pk_obuf *ob, int proto);

/* Aggregate headers; the caller then writes the elements (for a map,
 * n keys each followed by its value). */
int pk_reply_array(pk_obuf *ob, size_t n);
int pk_reply_map(pk_obuf *ob, int proto, size_t n);
int pk_reply_set(pk_obuf *ob, int proto, size_t n);

/* A double, formatted "%.17g" as redis-server 7.0 does; infinities as
 * "inf" / "-inf" and every NaN as "nan". */
int pk_reply_double(pk_obuf *ob, int proto, double d);

/* A boolean: "#t"/"#f" in RESP3, ":1"/":0" in RESP2. */
int pk_reply_bool(pk_obuf *ob, int proto, int b);

/*
 * Verbatim text (INFO, CLUSTER NODES): in RESP3 "=<len+4>\r\nfmt:" + text
 * + "\r\n" where fmt is exactly 3 characters ("txt", "mkd"); in RESP2 a
 * bulk string.  Returns PK_EINVAL (not sticky) if fmt is not 3 characters.
 */
int pk_reply_verbatim(pk_obuf *ob, int proto, const char *fmt, const void *p,
                      size_t len);

/* Aggregate kinds for a deferred header. */
enum pk_reply_kind { PK_REPLY_ARRAY, PK_REPLY_MAP, PK_REPLY_SET };

/*
 * Deferred aggregate length, for replies whose element count is known only
 * after writing them (SCAN, ZRANGE BYSCORE): pk_reply_defer() reserves a
 * header slot and gives its position (an offset from head); the caller
 * writes the elements, then pk_reply_set_deferred() writes the header for
 * n elements of kind into the slot (closing the gap with one memmove).
 * Slots may nest; fill the innermost first.  No pk_obuf_consume() or
 * pk_obuf_reset() may come in between.
 *
 * pk_reply_set_deferred returns PK_OK; PK_EINVAL if pos is not a slot
 * position or kind is unknown (not sticky); PK_ENOMEM if ob failed.
 */
int pk_reply_defer(pk_obuf *ob, size_t *pos);
int pk_reply_set_deferred(pk_obuf *ob, size_t pos, int proto,
                          enum pk_reply_kind kind, size_t n);

#endif

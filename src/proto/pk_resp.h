/*
 * pk_resp: the request parser of the Redis protocol (RESP), as redis-server
 * 7.0 reads requests (networking.c, processMultibulkBuffer and
 * processInlineBuffer).
 *
 * The parser does no I/O: the caller appends received bytes to the parser's
 * query buffer (pk_resp_feed, or pk_resp_space + pk_resp_commit to read(2)
 * straight into it) and then takes complete commands with pk_resp_next until
 * it answers 0.  Many pipelined commands may arrive in one read; each call
 * returns the next one.
 *
 *   received bytes -> [ query buffer ] -> pk_resp_next -> argc, argv
 *                       ^ argv points in here (zero-copy)
 *
 * Two request forms are accepted, chosen by the first byte of a request:
 *
 *   '*'   multibulk: "*<n>\r\n" then n times "$<len>\r\n<len bytes>\r\n".
 *         n <= 0 is an empty request and is skipped.  Binary-safe.
 *   other inline: one line ending at "\n" (a "\r" before it is dropped),
 *         split on blanks with redis-cli's quoting rules (sdssplitargs):
 *         "..." knows \n \r \t \b \a \xHH and \<any>, '...' knows only \'.
 *         A blank line is skipped.
 *
 * Limits, as Redis applies them, bound memory per connection: the length
 * of a count/length line and of an inline line (max_inline), the element
 * count (max_args), the bulk length (max_bulk_len) and the query buffer
 * (max_query_buf).  No allocation is ever sized from a declared length:
 * the buffer grows only with bytes actually received and the argument
 * array only with arguments actually parsed.
 *
 * Where partkv deliberately differs from redis-server 7.0:
 *   - Redis looks for line ends with strchr(), which stops at a NUL byte,
 *     so a NUL before a line end makes Redis wait for more data forever.
 *     partkv treats NUL as an ordinary byte, also inside inline arguments.
 *   - A line (inline request, or "*<n>" / "$<len>") without its end in
 *     its first max_inline + 1 bytes is "too big ..." however the bytes
 *     were split into reads.  Redis only checks when a read leaves no line
 *     end in the buffer, so a longer line may pass (inline) or get
 *     "invalid ... length" (count lines) when its end comes in the same
 *     read.  partkv's answer never depends on how the input was chunked.
 *   - max_args defaults to 1024 * 1024 (Redis 6.2; Redis 7.0 allows up to
 *     INT_MAX).
 * As in Redis, the two bytes after a bulk payload and the byte after a
 * "\r" ending a count/length line are skipped without being checked.
 *
 * Unauthenticated mode (pk_resp_set_unauth): Redis 7.0 refuses, from a
 * connection that has not authenticated, a multibulk count above 10
 * ("unauthenticated multibulk length") and a bulk length above 16384
 * ("unauthenticated bulk length"), so that such a peer never makes the
 * server buffer more than a few small arguments.  The connection says
 * before each pk_resp_next whether it is authenticated; the parser only
 * applies the limits.  Inline requests keep their one limit, max_inline,
 * as in Redis.
 *
 * A parser belongs to one connection and is not thread-safe; distinct
 * parsers are independent.
 */
#ifndef PK_PROTO_PK_RESP_H
#define PK_PROTO_PK_RESP_H

#include <stddef.h>

/* Protocol limits; see pk_resp_limits_default() for the defaults. */
typedef struct pk_resp_limits {
    /* Largest bulk argument in bytes (proto-max-bulk-len), default
     * 512 MiB; at most PTRDIFF_MAX / 2. */
    size_t max_bulk_len;
    /* Largest element count of a multibulk request, default 1024 * 1024;
     * at most INT_MAX. */
    size_t max_args;
    /* Longest inline request and longest "*<n>" / "$<len>" line in bytes
     * (PROTO_INLINE_MAX_SIZE), default 64 KiB. */
    size_t max_inline;
    /* Most bytes buffered and not yet returned as commands
     * (client-query-buffer-limit), default 1 GiB; at most SIZE_MAX / 4. */
    size_t max_query_buf;
} pk_resp_limits;

/* The defaults listed above. */
pk_resp_limits pk_resp_limits_default(void);

/* Redis 7.0's fixed limits for unauthenticated connections
 * (networking.c, processMultibulkBuffer). */
#define PK_RESP_UNAUTH_ARGS 10
#define PK_RESP_UNAUTH_BULK 16384

/* One argument: a borrowed view of len bytes at ptr. */
typedef struct pk_arg {
    const char *ptr;
    size_t len;
} pk_arg;

typedef struct pk_resp_parser pk_resp_parser;

/*
 * Creates a parser with an empty query buffer.
 *
 * lim   copied; NULL means pk_resp_limits_default().
 * out   receives the parser, owned by the caller and freed with
 *       pk_resp_parser_free(); left untouched on failure.
 *
 * Returns PK_OK;
 *   PK_EINVAL  out is NULL, or a limit is 0 or above its maximum;
 *   PK_ENOMEM  out of memory.
 */
int pk_resp_parser_new(const pk_resp_limits *lim, pk_resp_parser **out);

/* Frees the parser and its buffers; NULL does nothing. */
void pk_resp_parser_free(pk_resp_parser *p);

/*
 * Appends len bytes (borrowed for the call only) to the query buffer.
 *
 * Returns PK_OK;
 *   PK_EFULL   the buffered bytes would exceed max_query_buf; nothing was
 *              appended (Redis closes such a client: "closing client that
 *              reached max query buffer length");
 *   PK_ENOMEM  out of memory; nothing was appended;
 *   PK_EPROTO / PK_ENOMEM  the sticky error of an earlier pk_resp_next.
 */
int pk_resp_feed(pk_resp_parser *p, const void *data, size_t len);

/*
 * Zero-copy input, for a libuv alloc_cb / read_cb pair: pk_resp_space
 * makes room at the end of the query buffer and *buf / *got receive where
 * and how much (at least 1 byte, usually at least want / 2, never more
 * than max_query_buf allows; a buffer with that much room is not grown,
 * so a client that sends a few bytes at a time keeps its first buffer,
 * whose untouched pages cost nothing); after reading n <= *got bytes there, the
 * caller calls pk_resp_commit(p, n).  The region stays valid until the next
 * call on p other than pk_resp_commit.  Less than want may be offered while a
 * large bulk argument is pending, so that the buffer ends where the
 * argument does.
 *
 * Returns PK_OK;
 *   PK_EFULL   max_query_buf bytes are already buffered;
 *   PK_ENOMEM  out of memory;
 *   PK_EPROTO / PK_ENOMEM  the sticky error of an earlier pk_resp_next.
 * On failure *buf and *got are left untouched.
 */
int pk_resp_space(pk_resp_parser *p, size_t want, char **buf, size_t *got);

/* Adds n bytes written into the last pk_resp_space region (n <= *got;
 * anything beyond the region is ignored). */
void pk_resp_commit(pk_resp_parser *p, size_t n);

/*
 * Takes the next complete command from the query buffer.
 *
 * argc  receives the argument count, >= 1.
 * argv  receives argc arguments, borrowed from the parser: they point into
 *       the query buffer and stay valid until the next call to
 *       pk_resp_next, pk_resp_feed, pk_resp_space or pk_resp_parser_free.
 *       argv[i].ptr[argv[i].len] is always '\0', so an argument may also
 *       be read as a C string when it holds no NUL itself.  A caller
 *       that keeps a command longer (a blocked client) copies it.
 * Both are left untouched unless 1 is returned.
 *
 * Returns 1 with a command; 0 when more bytes are needed;
 *   PK_EPROTO  the input is not valid RESP: commands before the error have
 *              been returned, pk_resp_error() gives the reply text, and the
 *              connection should be closed after sending it;
 *   PK_ENOMEM  out of memory.
 * Both errors are sticky: every later call on the parser returns them.
 *
 * Steady state allocates nothing: the query buffer and argument array are
 * reused, and bytes of returned commands are reclaimed when the call finds
 * no further complete command (then a buffer that grew large for one big
 * request is also given back).
 */
int pk_resp_next(pk_resp_parser *p, int *argc, const pk_arg **argv);

/*
 * Turns the unauthenticated limits on (on != 0) or off; a new parser has
 * them off.  They apply to every count and bulk length read while on,
 * and also to the command being received when they are turned on: its
 * count and a bulk length already read are checked at the next
 * pk_resp_next, so that a server that learns only from a command's name
 * that its sender may not run it (pk_resp_pending) can refuse a large
 * one before its body arrives.  Commands already returned are not
 * affected.
 */
void pk_resp_set_unauth(pk_resp_parser *p, int on);

/*
 * While a multibulk command is partly received and its first argument
 * (the command name) is complete, *name receives it (borrowed, valid
 * until the next call on p other than pk_resp_pending) and 1 is
 * returned; else 0 and *name is left untouched.
 */
int pk_resp_pending(const pk_resp_parser *p, pk_arg *name);

/*
 * After PK_EPROTO, the error reply Redis sends, without the leading '-' and
 * the final CRLF, e.g. "ERR Protocol error: invalid bulk length"; stored
 * in the parser, valid until it is freed.  NULL if there was no
 * protocol error.
 */
const char *pk_resp_error(const pk_resp_parser *p);

/* Bytes in the query buffer not yet returned as commands (including a
 * partly received command); this is what max_query_buf limits. */
size_t pk_resp_buffered(const pk_resp_parser *p);

/* Bytes of heap memory the parser holds, for INFO and memory tests. */
size_t pk_resp_memory(const pk_resp_parser *p);

#endif

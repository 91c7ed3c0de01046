/*
 * pk_rreply: the client side of the Redis protocol -- a reader that turns
 * the replies a server sends into trees, and a writer of requests.  Nodes
 * use it to talk to other nodes (coordinator calls, forwarding) and the
 * agent's blocking client (server/pk_sclient.h) is built on it.
 *
 * Like pk_resp, the reader does no I/O: the caller appends received bytes
 * (pk_rreply_feed) and takes complete replies (pk_rreply_next) until it
 * answers 0.  Each reply comes back as one tree in one allocation:
 *
 *   received bytes -> [ buffer ] -> pk_rreply_next -> pk_rr tree (owned)
 *
 *   "*2\r\n$3\r\nfoo\r\n:7\r\n"    root  ARRAY n=2 elems -+
 *                                  [0]   BULK "foo" <-----+
 *                                  [1]   INT 7
 *
 * Every RESP2 and RESP3 type is read; the type of a node is its type byte
 * on the wire (PK_RR_ARRAY == '*').  Three encodings of null all give
 * PK_RR_NIL: "$-1" and "*-1" (RESP2) and "_" (RESP3).  Attributes ("|")
 * are read and dropped; the element they annotate is kept.  Streamed
 * strings and aggregates ("$?", "*?"), which Redis never sends, are
 * protocol errors.
 *
 * Limits bound what one reply may cost: the bulk length, the element count
 * of one aggregate, the nesting depth, and the bytes buffered.  No
 * allocation is sized from a declared length: the buffer grows with bytes
 * received, and a tree is allocated only once all its bytes have arrived,
 * so its size is bounded by them (at most about 20 bytes of tree per byte
 * of input, for replies made of empty elements).  Strings are copied into
 * the tree, so a large bulk reply briefly costs its size twice.  Lines
 * that must hold a number (lengths, counts, integers) may be 32 bytes
 * long and doubles 256 bytes; longer ones are errors at once, without
 * waiting for their end.  Doubles are read by strtod(), so LC_NUMERIC
 * must be "C" (the default).
 *
 * A reader belongs to one connection and is not thread-safe; the replies
 * it returns are independent of it and of each other.
 */
#ifndef PK_PROTO_PK_RREPLY_H
#define PK_PROTO_PK_RREPLY_H

#include <stddef.h>
#include <stdint.h>

struct pk_obuf; /* proto/pk_reply.h */

/* Node types: the type byte of the element on the wire. */
enum pk_rr_type {
    PK_RR_STATUS = '+',   /* str: the status text */
    PK_RR_ERROR = '-',    /* str: "ERR ...", "MOVED ..." */
    PK_RR_INT = ':',      /* integer */
    PK_RR_BULK = '$',     /* str, len: binary-safe */
    PK_RR_NIL = '_',      /* "$-1", "*-1" or "_" */
    PK_RR_ARRAY = '*',    /* n elems */
    PK_RR_MAP = '%',      /* n pairs: 2n elems, key then value */
    PK_RR_SET = '~',      /* n elems */
    PK_RR_DOUBLE = ',',   /* dbl; str: the text as sent ("1.5", "inf") */
    PK_RR_BOOL = '#',     /* integer: 1 or 0 */
    PK_RR_VERBATIM = '=', /* fmt ("txt"), str: the text after "txt:" */
    PK_RR_BIGNUM = '(',   /* str: the digits, perhaps after a '-' */
    PK_RR_PUSH = '>',     /* n elems (out-of-band data, RESP3) */
};

/*
 * One node of a reply tree.  All nodes and strings of a reply live in one
 * allocation owned by the root, freed with pk_rr_free(root).  Fields a type
 * does not use are 0 or NULL.
 */
typedef struct pk_rr {
    int type;        /* enum pk_rr_type */
    char fmt[4];     /* PK_RR_VERBATIM: the 3 format bytes, then a NUL */
    int64_t integer; /* PK_RR_INT; PK_RR_BOOL 0 or 1 */
    double dbl;      /* PK_RR_DOUBLE */
    /* STATUS, ERROR, BULK, DOUBLE, VERBATIM, BIGNUM: len bytes, and a NUL
     * after them (so also a C string when they hold no NUL). */
    const char *str;
    size_t len;
    size_t n;            /* aggregates: elements (MAP: pairs) */
    struct pk_rr *elems; /* aggregates: n elements (MAP 2n), or NULL */
} pk_rr;

/* Frees a tree returned by pk_rreply_next() (only its root: elements are
 * part of it); NULL does nothing. */
void pk_rr_free(pk_rr *root);

/* Reader limits; see pk_rreply_limits_default() for the defaults. */
typedef struct pk_rreply_limits {
    /* Largest bulk or verbatim string in bytes, default 512 MiB; at most
     * PTRDIFF_MAX / 2. */
    size_t max_bulk_len;
    /* Largest element count of one aggregate (pairs for a map or an
     * attribute), default 1024 * 1024. */
    size_t max_elements;
    /* Deepest nesting of aggregates, default 64: a reply with 64 nested
     * arrays is read, one with 65 is a protocol error.  At most 1024. */
    size_t max_depth;
    /* Most bytes buffered and not yet returned as replies, default 1 GiB;
     * at most SIZE_MAX / 4. */
    size_t max_buffered;
} pk_rreply_limits;

/* The defaults listed above. */
pk_rreply_limits pk_rreply_limits_default(void);

typedef struct pk_rreply_reader pk_rreply_reader;

/*
 * Creates a reader with an empty buffer.
 *
 * lim   copied; NULL means pk_rreply_limits_default().
 * out   receives the reader, owned by the caller and freed with
 *       pk_rreply_reader_free(); left untouched on failure.
 *
 * Returns PK_OK;
 *   PK_EINVAL  out is NULL, or a limit is 0 or above its maximum;
 *   PK_ENOMEM  out of memory.
 */
int pk_rreply_reader_new(const pk_rreply_limits *lim, pk_rreply_reader **out);

/* Frees the reader and its buffer (not the replies it returned); NULL does
 * nothing. */
void pk_rreply_reader_free(pk_rreply_reader *r);

/*
 * Appends len bytes (borrowed for the call only) to the buffer.
 *
 * Returns PK_OK;
 *   PK_EFULL   the buffered bytes would exceed max_buffered; nothing was
 *              appended (take the complete replies first; if there are
 *              none, one reply is larger than the limit);
 *   PK_ENOMEM  out of memory; nothing was appended;
 *   PK_EPROTO / PK_ENOMEM  the sticky error of an earlier pk_rreply_next.
 */
int pk_rreply_feed(pk_rreply_reader *r, const void *data, size_t len);

/*
 * Takes the next complete reply from the buffer.
 *
 * reply  receives the reply, owned by the caller: it stays valid after
 *        the reader is freed and is released with pk_rr_free().  Left
 *        untouched unless 1 is returned.
 *
 * Returns 1 with a reply; 0 when more bytes are needed;
 *   PK_EPROTO  the input is not valid RESP (replies before the error have
 *              been returned; pk_rreply_error() says what was wrong); the
 *              connection is out of step and should be closed;
 *   PK_ENOMEM  out of memory.
 * Both errors are sticky: every later call on the reader returns them.
 * The result never depends on how the input was split into feeds.
 */
int pk_rreply_next(pk_rreply_reader *r, pk_rr **reply);

/*
 * After PK_EPROTO, what was wrong, e.g. "Protocol error: invalid bulk
 * length"; stored in the reader, valid until it is freed.  NULL if there
 * was no protocol error.
 */
const char *pk_rreply_error(const pk_rreply_reader *r);

/* Bytes buffered and not yet returned as replies (including a partly
 * received reply); this is what max_buffered limits. */
size_t pk_rreply_buffered(const pk_rreply_reader *r);

/* Bytes of heap memory the reader holds (not counting returned replies). */
size_t pk_rreply_memory(const pk_rreply_reader *r);

/*
 * Appends a request "*<argc>\r\n" then "$<len>\r\n<arg>\r\n" per argument,
 * whole or not at all (as the pk_reply writers do).
 *
 * argv  argc >= 1 arguments, borrowed for the call; binary-safe when
 *       lens is given.
 * lens  argc lengths, or NULL when every argv[i] is a C string.
 *
 * Returns PK_OK;
 *   PK_EINVAL  ob or argv is NULL, argc < 1, or an argument is NULL with
 *              a non-zero length (nothing appended, not sticky);
 *   PK_ENOMEM  out of memory (sticky in ob, see pk_reply.h).
 */
int pk_rr_write_cmd(struct pk_obuf *ob, int argc, const char *const *argv,
                    const size_t *lens);

/*
 * pk_rr_write_cmd() of C-string arguments, ended by NULL:
 * pk_rr_write_cmdv(ob, "SET", "k", "v", NULL).  Same return codes;
 * PK_EINVAL also when there is no argument before the NULL.
 */
int pk_rr_write_cmdv(struct pk_obuf *ob, const char *arg, ...)
    __attribute__((sentinel));

#endif

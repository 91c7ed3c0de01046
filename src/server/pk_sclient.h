/*
 * pk_sclient: a blocking, synchronous RESP client over one TCP connection,
 * for threads that may block -- the agent thread, tools, tests -- and not
 * for the event loop (which never blocks).  Plain POSIX sockets: every
 * wait is a poll() bounded by the client's timeout.
 *
 *   pk_sclient_connect -> pk_sclient_call (send one request, read one
 *                         reply) ... -> pk_sclient_free
 *
 * Requests are written by pk_rr_write_cmd and replies read by the
 * pk_rreply reader with its default limits (proto/pk_rreply.h).  One
 * request is in flight at a time.  RESP3 push messages (invalidations
 * after CLIENT TRACKING, say) are out of band and are dropped, as hiredis
 * drops them by default; so the client is not for SUBSCRIBE or MONITOR,
 * whose data come only as pushes.
 *
 * Once a call failed with PK_EIO, PK_EPROTO or PK_EFULL the stream is out
 * of step (a late reply may still arrive), so the client is dead: every
 * later call returns the same code.  Free it and connect again.
 *
 * A client is not thread-safe; use one per thread.
 */
#ifndef PK_SERVER_PK_SCLIENT_H
#define PK_SERVER_PK_SCLIENT_H

#include <stddef.h>

struct pk_rr; /* proto/pk_rreply.h */

typedef struct pk_sclient pk_sclient;

/*
 * Connects to host:port.
 *
 * host        a name or numeric address (IPv4 or IPv6), borrowed.  Name
 *             resolution (getaddrinfo) is not bounded by the timeout.
 * port        1 .. 65535.
 * timeout_ms  the most any one operation may wait, in milliseconds: the
 *             connect here, and each pk_sclient_call as a whole (sending
 *             and receiving); negative waits forever.
 * out         receives the client, owned by the caller and freed with
 *             pk_sclient_free(); left untouched on failure.
 *
 * Returns PK_OK;
 *   PK_EINVAL  host or out NULL, port out of range, timeout_ms == 0;
 *   PK_EIO     the name did not resolve, or no address accepted the
 *              connection within the timeout (refused, unreachable);
 *   PK_ENOMEM  out of memory.
 */
int pk_sclient_connect(const char *host, int port, int timeout_ms,
                       pk_sclient **out);

/*
 * Sends one request of argc arguments and waits for its reply.
 *
 * argv, lens  as for pk_rr_write_cmd(): lens NULL means C strings.
 * reply       receives the reply, owned by the caller (pk_rr_free());
 *             left untouched on failure.  An error reply ("-ERR ...") is
 *             a reply: the call returns PK_OK with type PK_RR_ERROR.
 *
 * Returns PK_OK;
 *   PK_EINVAL  bad arguments (nothing sent; the client stays usable);
 *   PK_EIO     socket error, connection closed, or the timeout passed;
 *   PK_EPROTO  the server sent something that is not RESP;
 *   PK_EFULL   the reply is larger than the reader's max_buffered;
 *   PK_ENOMEM  out of memory.
 * Every code but PK_EINVAL and PK_ENOMEM before sending leaves the
 * client dead (see above).
 */
int pk_sclient_call(pk_sclient *c, int argc, const char *const *argv,
                    const size_t *lens, struct pk_rr **reply);

/* Sets the per-operation timeout of later calls (as at connect; > 0). */
void pk_sclient_set_timeout(pk_sclient *c, int timeout_ms);

/* Closes the connection and frees the client; NULL does nothing. */
void pk_sclient_free(pk_sclient *c);

struct pk_tls; /* server/pk_tls.h */
/* Every later connection of the process speaks TLS with t's client
 * context (NULL: plain TCP again).  Call before threads connect. */
void pk_sclient_use_tls(struct pk_tls *t);

/* Why this thread's last pk_sclient_connect or call failed, as far as
 * known: the connect, the TLS handshake or a TLS alert, the server's
 * close; static, per thread. */
const char *pk_sclient_why(void);

/* pk_sclient_connect from a given local IPv4 address (src NULL: any). */
int pk_sclient_connect_from(const char *src, const char *host, int port,
                            int timeout_ms, pk_sclient **out);

#endif

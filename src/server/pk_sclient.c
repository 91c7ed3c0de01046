/*
 * pk_sclient: blocking RESP client (see pk_sclient.h for the contract).
 *
 * The socket is non-blocking and every wait is a poll() against one
 * deadline per operation, so a call never blocks longer than the timeout
 * whatever the server does (trickles bytes, never answers, stops reading
 * a large request).  A call runs:
 *
 *   request -> out (pk_obuf) -> send until empty -> recv into the reader
 *   until pk_rreply_next gives one reply
 *
 * Invariant: between calls `out` is empty and the reader holds no partial
 * reply; any failure after the first byte was sent breaks that, so it is
 * recorded in `failed` and returned by every later call.
 */
#include "pk_sclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "proto/pk_reply.h"
#include "proto/pk_rreply.h"
#include "server/pk_tls.h"

#define PK_SCLIENT_RECV 16384 /* bytes read per recv() */

struct pk_sclient {
    int fd;
    int timeout_ms;       /* per operation; negative: none */
    int failed;           /* sticky error once out of step, else 0 */
    pk_rreply_reader *rd; /* owned */
    pk_obuf out;          /* the request being sent */
    pk_tls_conn *tls;     /* owned, under pk_sclient_use_tls; else NULL */
    pk_obuf cout;         /* TLS: its ciphertext being sent */
};

static int sc_handshake(pk_sclient *c, int64_t deadline);

/* Why this thread's last connect or call failed (pk_sclient_why). */
static _Thread_local char sc_why[192];

const char *pk_sclient_why(void)
{
    return sc_why[0] ? sc_why : "unknown";
}

/* Set once, before any thread connects (pk_sclient_use_tls). */
static pk_tls *sc_tls;

void pk_sclient_use_tls(pk_tls *t)
{
    sc_tls = t;
}

static int64_t sc_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The deadline of an operation starting now; -1 for none. */
static int64_t sc_deadline(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : sc_now_ms() + timeout_ms;
}

/*
 * Waits until fd is ready for events or the deadline passes.  Returns
 * PK_OK when ready (or in error: the next socket call will say), PK_EIO
 * on timeout or poll failure.
 */
static int sc_wait(int fd, short events, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};

    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - sc_now_ms();
        int rc;

        if (deadline >= 0 && left <= 0)
            return PK_EIO;
        rc = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (rc > 0)
            return PK_OK;
        if (rc < 0 && errno != EINTR)
            return PK_EIO;
    }
}

/* A connected non-blocking socket to one address, or -1. */
static int sc_dial(const struct addrinfo *ai, const char *src, int64_t deadline)
{
    int fd, err = 0, one = 1;
    socklen_t len = sizeof(err);
    struct sockaddr_in sin = {0};

    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                ai->ai_protocol);
    if (fd < 0)
        return -1;
    /* From a given IPv4 source (a node bound to its own address). */
    sin.sin_family = AF_INET;
    if (src && ai->ai_family == AF_INET &&
        inet_pton(AF_INET, src, &sin.sin_addr) == 1 &&
        bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
        close(fd);
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS || sc_wait(fd, POLLOUT, deadline) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            close(fd);
            return -1;
        }
    }
    /* Requests are small and each waits for its reply: no Nagle delay. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int pk_sclient_connect(const char *host, int port, int timeout_ms,
                       pk_sclient **out)
{
    return pk_sclient_connect_from(NULL, host, port, timeout_ms, out);
}

int pk_sclient_connect_from(const char *src, const char *host, int port,
                            int timeout_ms, pk_sclient **out)
{
    struct addrinfo hints = {0}, *res = NULL;
    int64_t deadline = sc_deadline(timeout_ms);
    char service[8];
    pk_sclient *c;
    int rc, fd = -1;

    sc_why[0] = '\0';
    if (!host || !out || port < 1 || port > 65535 || timeout_ms == 0)
        return PK_EINVAL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return PK_ENOMEM;
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    pk_obuf_init(&c->out);
    pk_obuf_init(&c->cout);
    rc = pk_rreply_reader_new(NULL, &c->rd);
    if (rc < 0)
        goto fail;
    snprintf(service, sizeof(service), "%d", port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        rc = rc == EAI_MEMORY ? PK_ENOMEM : PK_EIO;
        goto fail;
    }
    for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = sc_dial(ai, src, deadline);
    freeaddrinfo(res);
    rc = PK_EIO;
    snprintf(sc_why, sizeof(sc_why), "no address accepted a connection");
    if (fd < 0)
        goto fail;
    c->fd = fd;
    if (sc_tls && ((c->tls = pk_tls_conn_client(sc_tls, host)) == NULL ||
                   sc_handshake(c, deadline) != PK_OK)) {
        snprintf(sc_why, sizeof(sc_why), "%s",
                 c->tls ? pk_tls_error(c->tls) : "out of memory");
        goto fail;
    }
    *out = c;
    return PK_OK;
fail:
    pk_sclient_free(c);
    return rc;
}

void pk_sclient_set_timeout(pk_sclient *c, int timeout_ms)
{
    if (c && timeout_ms > 0)
        c->timeout_ms = timeout_ms;
}

void pk_sclient_free(pk_sclient *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    pk_rreply_reader_free(c->rd);
    pk_tls_conn_free(c->tls);
    pk_obuf_free(&c->out);
    pk_obuf_free(&c->cout);
    free(c);
}

/* Sends all of ob.  Returns PK_OK or PK_EIO. */
static int sc_send_buf(pk_sclient *c, pk_obuf *ob, int64_t deadline)
{
    while (pk_obuf_pending(ob) > 0) {
        ssize_t n =
            send(c->fd, ob->data + ob->head, pk_obuf_pending(ob), MSG_NOSIGNAL);
        if (n > 0) {
            pk_obuf_consume(ob, (size_t)n);
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (sc_wait(c->fd, POLLOUT, deadline) < 0)
                return PK_EIO;
        } else if (n < 0 && errno != EINTR) {
            return PK_EIO;
        }
    }
    return PK_OK;
}

/* Sends the request: as it is, or through the TLS session. */
static int sc_send(pk_sclient *c, int64_t deadline)
{
    ssize_t k;

    if (c->tls == NULL)
        return sc_send_buf(c, &c->out, deadline);
    k = pk_tls_write(c->tls, c->out.data + c->out.head,
                     pk_obuf_pending(&c->out));
    if (k < 0)
        return PK_EIO;
    pk_obuf_consume(&c->out, (size_t)k);
    if (pk_tls_drain(c->tls, &c->cout) != PK_OK)
        return PK_ENOMEM;
    return sc_send_buf(c, &c->cout, deadline);
}

/* One recv() (waiting for it), its bytes -- their plaintext under TLS --
 * to the reader.  Returns PK_OK or an error code. */
static int sc_fill(pk_sclient *c, int64_t deadline)
{
    char buf[PK_SCLIENT_RECV];
    ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
    int rc;

    if (n == 0) {
        snprintf(sc_why, sizeof(sc_why), "the server closed the connection");
        return PK_EIO;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return sc_wait(c->fd, POLLIN, deadline);
    if (n < 0)
        return errno == EINTR ? PK_OK : PK_EIO;
    if (c->tls == NULL)
        return pk_rreply_feed(c->rd, buf, (size_t)n);
    if ((rc = pk_tls_in(c->tls, buf, (size_t)n)) != PK_OK)
        return rc;
    while ((n = pk_tls_read(c->tls, buf, sizeof(buf))) > 0)
        if ((rc = pk_rreply_feed(c->rd, buf, (size_t)n)) < 0)
            return rc;
    if (n < 0) /* an alert: the server refused our certificate, say */
        snprintf(sc_why, sizeof(sc_why), "%s", pk_tls_error(c->tls));
    return n < 0 ? PK_EIO : PK_OK;
}

/* The TLS handshake, bounded by the deadline.  PK_OK or PK_EIO. */
static int sc_handshake(pk_sclient *c, int64_t deadline)
{
    for (;;) {
        int rc;
        if (pk_tls_write(c->tls, NULL, 0) < 0)
            return PK_EIO;
        if (pk_tls_drain(c->tls, &c->cout) != PK_OK)
            return PK_ENOMEM;
        if ((rc = sc_send_buf(c, &c->cout, deadline)) != PK_OK)
            return rc;
        if (pk_tls_ready(c->tls))
            return PK_OK;
        if ((rc = sc_fill(c, deadline)) != PK_OK)
            return rc;
    }
}

/* Reads until the reader has a reply other than a push message.  Returns
 * PK_OK or an error code. */
static int sc_recv(pk_sclient *c, int64_t deadline, struct pk_rr **reply)
{
    struct pk_rr *r;

    for (;;) {
        int rc = pk_rreply_next(c->rd, &r);

        if (rc == 1 && r->type == PK_RR_PUSH) {
            pk_rr_free(r);
            continue;
        }
        if (rc == 1)
            *reply = r;
        if (rc != 0)
            return rc == 1 ? PK_OK : rc;
        if ((rc = sc_fill(c, deadline)) != PK_OK)
            return rc;
    }
}

int pk_sclient_call(pk_sclient *c, int argc, const char *const *argv,
                    const size_t *lens, struct pk_rr **reply)
{
    int64_t deadline;
    int rc;

    if (!c || !reply)
        return PK_EINVAL;
    if (c->failed)
        return c->failed;
    pk_obuf_reset(&c->out);
    rc = pk_rr_write_cmd(&c->out, argc, argv, lens);
    if (rc < 0) {
        pk_obuf_reset(&c->out);
        return rc;
    }
    deadline = sc_deadline(c->timeout_ms);
    rc = sc_send(c, deadline);
    if (rc == PK_OK)
        rc = sc_recv(c, deadline, reply);
    if (rc < 0)
        c->failed = rc;
    return rc;
}

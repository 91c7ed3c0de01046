/*
 * pk_conn: one client connection -- reading into the RESP parser, running
 * each complete command, and writing replies in order.
 *
 * Replies go to `out` during an iteration and are handed to the socket only
 * in the check phase, after the group commit (pk_server.c).  A partial
 * write moves `out` to `wire`, which stays untouched until its uv_write
 * completes, so new replies never move memory the kernel is reading.
 *
 * Backpressure: a client with more than PK_CONN_OBUF_HIGH bytes of replies
 * pending (one that pipelines and never reads) is `blocked`: not read from,
 * its buffered commands waiting, until the socket drains; then it is put on
 * srv->resume and its commands run in the next iteration (an idle handle
 * keeps the loop from sleeping meanwhile).  Memory per connection is thus
 * bounded by the parser's limits plus about two high-water marks.  A
 * class with output buffer limits (pk_climit.h) closes a client over
 * them instead; a connection that has not authenticated has Redis's
 * smaller parser limits (next_command).
 *
 * Replies produced in an iteration are uncommitted until its check phase,
 * so output is only ever sent from the check phase, or from a write
 * completion on a connection that has run nothing yet in this iteration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_acl.h"
#include "server/pk_block.h"
#include "server/pk_climit.h"
#include "server/pk_cmd.h"
#include "server/pk_ft.h"
#include "server/pk_link.h"
#include "server/pk_move.h"
#include "server/pk_multi.h"
#include "server/pk_repl.h"
#include "server/pk_salted.h"
#include "server/pk_srv.h"
#include "server/pk_tls.h"

static void process(pk_conn *c);
static void resume_later(pk_conn *c);
static void tls_send(pk_conn *c);
static void tls_flush(pk_conn *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void read_start(pk_conn *c)
{
    if (!c->reading && !c->closing && !c->freed) {
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
        c->reading = 1;
    }
}

static void read_stop(pk_conn *c)
{
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    }
}

size_t pk_conn_pending(const pk_conn *c)
{
    return pk_obuf_pending(&c->out) + pk_obuf_pending(&c->wire) +
           (c->tls ? pk_tls_pending(c->tls) : 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    pk_conn *c = (pk_conn *)h;
    size_t got = 0;
    char *p = NULL;

    if (c->tls) { /* ciphertext: on_read hands it over at once */
        *buf = uv_buf_init(c->srv->tls_rbuf, PK_TLS_RBUF);
        return;
    }
    /* Until it authenticates, a client gets Redis's 16 KiB reads: its
     * requests are small, and a hostile one is refused at its header. */
    if (!c->authed && suggested > PK_RESP_UNAUTH_BULK)
        suggested = PK_RESP_UNAUTH_BULK;
    if (pk_resp_space(c->parser, suggested, &p, &got) != PK_OK) {
        /* Query buffer limit reached or no memory: libuv reports
         * UV_ENOBUFS to on_read, which closes the connection. */
        got = 0;
        p = NULL;
    }
    *buf = uv_buf_init(p, (unsigned)got);
}

/* The TLS session failed: counted, logged at most once a second, and
 * the connection closes after the alert, if any. */
static void tls_failed(pk_conn *c)
{
    pk_server *s = c->srv;
    uint64_t now = pk_srv_wall_ms();

    s->tls_failures++;
    if (now - s->tls_log_ms >= 1000) {
        s->tls_log_ms = now;
        fprintf(stderr, "partkv: TLS connection from %s failed: %s\n", c->addr,
                pk_tls_error(c->tls));
    }
    c->closing_tls = c->closing = 1;
}

/*
 * TLS: the ciphertext read goes in, every whole record comes out into the
 * parser, and what the handshake answers goes out.  0, or -1 when the
 * connection is done for (closed, or closing after an alert).
 */
static int tls_decrypt(pk_conn *c, const uv_buf_t *buf, size_t n)
{
    ssize_t k;

    if (pk_tls_in(c->tls, buf->base, n) != PK_OK) {
        pk_conn_close(c);
        return -1;
    }
    for (;;) {
        char *p = NULL;
        size_t got = 0;
        if (pk_resp_space(c->parser, PK_TLS_RBUF, &p, &got) != PK_OK) {
            pk_conn_close(c); /* query buffer limit, as in on_alloc */
            return -1;
        }
        if ((k = pk_tls_read(c->tls, p, got)) <= 0)
            break;
        pk_resp_commit(c->parser, (size_t)k);
    }
    if (k < 0) {
        tls_failed(c);
        read_stop(c);
    }
    if (c->closing && !c->in_iter)
        tls_flush(c); /* a refusal waited for the handshake */
    else
        tls_send(c);
    return k < 0 ? -1 : 0;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    pk_conn *c = (pk_conn *)st;

    if (nread < 0) {
        pk_conn_close(c);
        return;
    }
    if (nread == 0)
        return;
    if (c->tls) {
        if (tls_decrypt(c, buf, (size_t)nread) != 0)
            return;
    } else {
        pk_resp_commit(c->parser, (size_t)nread);
    }
    c->rx_seq = ++c->srv->rx_seq;
    c->last_ms = c->srv->now_ms = pk_srv_wall_ms();
    process(c);
}

/* Enrols c in this iteration's group commit before its first command. */
static void iter_join(pk_conn *c)
{
    pk_server *s = c->srv;

    if (c->in_iter)
        return;
    c->in_iter = 1;
    c->iter_mark = pk_obuf_pending(&c->out);
    c->iter_cmds = 0;
    c->iter_next = s->iter;
    s->iter = c;
}

/*
 * Takes the next command with Redis's unauthenticated limits while c has
 * not authenticated -- read from c->authed each time, so whatever sets it
 * (AUTH, HELLO, PK.AUTH, an ACL) needs to do nothing else.  An internal
 * command (PK.REPL...) from a connection without the cluster secret gets
 * the same limits once its name is in: a large frame is refused at its
 * header, its body never buffered (one that came whole in one read, at
 * most 64 KiB, is parsed and answered NOAUTH by its command).
 */
static int next_command(pk_conn *c, pk_cmd_ctx *x)
{
    pk_arg name;
    int rc;

    pk_resp_set_unauth(c->parser, !c->authed);
    rc = pk_resp_next(c->parser, &x->argc, &x->argv);
    if (rc == 0 && c->authed && !c->internal && c->srv->cfg.cluster_secret &&
        pk_resp_pending(c->parser, &name) &&
        pk_cmd_internal(name.ptr, name.len)) {
        pk_resp_set_unauth(c->parser, 1);
        rc = pk_resp_next(c->parser, &x->argc, &x->argv);
    }
    return rc;
}

/* Runs every complete buffered command, until backpressure or close. */
static void process(pk_conn *c)
{
    pk_cmd_ctx x = {.srv = c->srv, .c = c, .out = &c->out};
    int rc;

    while (!c->closing && !c->freed && !c->waiting_fwd && !c->waiting_ack &&
           !c->blk) {
        if (pk_climit_check(c))
            return;
        if (pk_conn_pending(c) > PK_CONN_OBUF_HIGH) {
            read_stop(c);
            c->blocked = 1;
            return;
        }
        rc = next_command(c, &x);
        if (rc == 0)
            break;
        iter_join(c);
        if (rc < 0) {
            pk_reply_error(&c->out, rc == PK_EPROTO ? pk_resp_error(c->parser)
                                                    : "ERR out of memory");
            c->closing = 1;
            break;
        }
        c->iter_cmds++;
        x.proto = c->proto;
        pk_cmd_dispatch(&x);
        c->srv->total_cmds++;
        if (c->yield) {
            /* A bulk command (a move's import) ran: let the others have
             * this iteration, and go on in the next. */
            c->yield = 0;
            resume_later(c);
            break;
        }
    }
    if (pk_climit_check(c))
        return;
    /* While a forwarded reply is outstanding, nothing more is read: the
     * client's pipeline waits in the socket, not in our memory.  A
     * blocked connection is read on, so that its close is seen (the
     * parser's limits bound what it buffers). */
    if (c->waiting_fwd || c->waiting_ack)
        read_stop(c);
    else
        read_start(c);
}

static void on_write(uv_write_t *req, int status)
{
    pk_conn *c = req->data;

    c->writing = 0;
    pk_obuf_reset(&c->wire);
    if (c->freed)
        return;
    if (status < 0) {
        pk_conn_close(c);
        return;
    }
    /* `out` holds only committed replies unless c ran commands in this
     * iteration, in which case the check phase sends them; ciphertext is
     * always theirs or the handshake's. */
    if (!c->in_iter)
        pk_conn_flush(c);
    else if (c->tls)
        tls_send(c);
}

static void on_idle(uv_idle_t *h);

/* Queues a connection to run its buffered commands in the next
 * iteration: drained after backpressure, or after a bulk command. */
static void resume_later(pk_conn *c)
{
    pk_server *s = c->srv;

    c->blocked = 0;
    if (c->in_resume)
        return;
    c->in_resume = 1;
    c->resume_gen = s->resume_gen; /* queued during round N: runs in N+1 */
    c->resume_next = s->resume;
    s->resume = c;
    uv_idle_start(&s->idle, on_idle);
}

static void on_idle(uv_idle_t *h)
{
    pk_server *s = h->data;
    uint64_t gen = ++s->resume_gen;
    pk_conn **pp = &s->resume, *c;

    uv_idle_stop(&s->idle);
    /* One at a time from the head, as a connection closed meanwhile
     * unlinks itself; those queued during this round wait for the next. */
    while ((c = *pp) != NULL) {
        if (c->resume_gen >= gen) {
            pp = &c->resume_next;
            continue;
        }
        *pp = c->resume_next;
        c->in_resume = 0;
        c->resume_next = NULL;
        process(c);
        pp = &s->resume;
    }
    if (s->resume)
        uv_idle_start(&s->idle, on_idle);
}

/* After the last byte went out: close, or take the commands that
 * backpressure held. */
static void drained(pk_conn *c)
{
    if (c->closing)
        pk_conn_close(c);
    else if (c->blocked)
        resume_later(c);
}

/*
 * Writes wire (free while no write runs): at once as far as the socket
 * takes it, the rest by a uv_write.  1 while that write runs or after the
 * connection closed, 0 when all of it is out.
 */
static int wire_send(pk_conn *c)
{
    size_t n = pk_obuf_pending(&c->wire);
    uv_buf_t b;
    int w;

    if (n == 0)
        return 0;
    b = uv_buf_init(c->wire.data + c->wire.head, (unsigned)n);
    w = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (w < 0 && w != UV_EAGAIN) {
        pk_conn_close(c);
        return 1;
    }
    pk_obuf_consume(&c->wire, w > 0 ? (size_t)w : 0);
    if ((n = pk_obuf_pending(&c->wire)) == 0)
        return 0;
    b = uv_buf_init(c->wire.data + c->wire.head, (unsigned)n);
    c->wreq.data = c;
    c->writing = 1;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write)) {
        c->writing = 0;
        pk_conn_close(c);
    }
    return 1;
}

/* Sends the ciphertext pk_tls holds. */
static void tls_send(pk_conn *c)
{
    if (c->freed || c->writing)
        return;
    if (pk_tls_drain(c->tls, &c->wire) != PK_OK) {
        pk_conn_close(c);
        return;
    }
    if (!wire_send(c) && (pk_obuf_pending(&c->out) == 0 || c->closing_tls))
        drained(c);
}

/* TLS: the replies are encrypted as they leave `out`. */
static void tls_flush(pk_conn *c)
{
    size_t n = pk_obuf_pending(&c->out);

    if (n && !c->closing_tls) {
        ssize_t k = pk_tls_write(c->tls, c->out.data + c->out.head, n);
        if (k < 0)
            tls_failed(c);
        else
            pk_obuf_consume(&c->out, (size_t)k);
    }
    tls_send(c);
}

void pk_conn_flush(pk_conn *c)
{
    if (c->freed || c->waiting_ack)
        return;
    if (c->tls) {
        tls_flush(c);
        return;
    }
    if (c->writing)
        return;
    if (pk_obuf_pending(&c->out) > 0) { /* wire is empty: they trade */
        pk_obuf tmp = c->wire;
        c->wire = c->out;
        c->out = tmp;
    }
    if (!wire_send(c))
        drained(c);
}

pk_arg *pk_conn_args_copy(int argc, const pk_arg *argv)
{
    size_t bytes = (size_t)argc * sizeof(pk_arg);
    pk_arg *a;
    char *p;

    for (int i = 0; i < argc; i++)
        bytes += argv[i].len + 1;
    if ((a = malloc(bytes)) == NULL)
        return NULL;
    p = (char *)(a + argc);
    for (int i = 0; i < argc; i++) {
        memcpy(p, argv[i].ptr, argv[i].len);
        p[argv[i].len] = '\0';
        a[i].ptr = p;
        a[i].len = argv[i].len;
        p += argv[i].len + 1;
    }
    return a;
}

void pk_conn_hold_on(pk_cmd_ctx *x, pk_conn **list)
{
    pk_conn *c = x->c;

    c->held = pk_conn_args_copy(x->argc, x->argv);
    if (c->held == NULL) {
        pk_reply_error(x->out, "TRYAGAIN partition is moving");
        return;
    }
    c->nheld = x->argc;
    c->held_ms = pk_srv_wall_ms();
    c->waiting_fwd = 1;  /* runs nothing more, reads nothing more */
    c->iter_cmds--;      /* its reply comes when it runs again */
    c->held_next = NULL; /* at the tail: held writes run again in order */
    c->held_on = list;
    while (*list)
        list = &(*list)->held_next;
    *list = c;
}

void pk_conn_hold(pk_cmd_ctx *x)
{
    pk_conn_hold_on(x, &x->srv->held);
}

void pk_conn_hold_expire(pk_server *s, uint64_t max_ms)
{
    uint64_t now = pk_srv_wall_ms();
    pk_conn **pp = &s->held, *c;

    while ((c = *pp) != NULL) {
        if (now - c->held_ms < max_ms) {
            pp = &c->held_next;
            continue;
        }
        *pp = c->held_next; /* answered now; the fence itself stays */
        c->held_next = NULL;
        c->held_on = NULL;
        free(c->held);
        c->held = NULL;
        c->waiting_fwd = 0;
        iter_join(c);
        c->iter_cmds++;
        pk_multi_conn_reset(c); /* a held EXEC: its transaction goes */
        pk_reply_error(&c->out, "TRYAGAIN the partition is switching owner; "
                                "retry");
        process(c);
    }
}

void pk_conn_release(pk_server *s, pk_conn **list)
{
    pk_conn *c = *list;

    *list = NULL;
    while (c) {
        pk_conn *next = c->held_next;
        pk_arg *argv = c->held;
        uint64_t since = c->held_ms;
        pk_cmd_ctx x = {.srv = s, .c = c, .out = &c->out, .proto = c->proto};
        c->held = NULL;
        c->held_next = NULL;
        c->held_on = NULL;
        c->waiting_fwd = 0;
        iter_join(c);
        c->iter_cmds++;
        x.argc = c->nheld;
        x.argv = argv;
        pk_cmd_dispatch(&x); /* may hold again, or forward */
        if (c->held)
            c->held_ms = since; /* held again: the wait stays bounded */
        free(argv);
        process(c);
        c = next;
    }
}

void pk_conn_release_all(pk_server *s)
{
    pk_conn_release(s, &s->held);
}

void pk_conn_join(pk_conn *c)
{
    iter_join(c);
}

void pk_conn_unblocked(pk_conn *c)
{
    if (!c->freed && !c->closing)
        resume_later(c);
}

void pk_conn_resume(pk_conn *c)
{
    if (c->freed)
        return;
    /* The forwarded reply was acknowledged by its owner; replies before
     * it that this iteration produced are sent by the check phase. */
    if (!c->in_iter)
        pk_conn_flush(c);
    process(c);
}

static void on_close(uv_handle_t *h)
{
    pk_conn *c = (pk_conn *)h;

    pk_resp_parser_free(c->parser);
    pk_tls_conn_free(c->tls);
    pk_obuf_free(&c->out);
    pk_obuf_free(&c->wire);
    free(c);
}

void pk_conn_close(pk_conn *c)
{
    pk_server *s = c->srv;

    if (c->freed)
        return;
    c->freed = 1;
    if (c->waiting_fwd) {
        pk_link_forget(s, c);
        pk_salted_forget(s, c);
        pk_ft_forget(s, c);
    }
    if (c->held) {
        pk_conn **pp = c->held_on;
        while (*pp != c)
            pp = &(*pp)->held_next;
        *pp = c->held_next;
        free(c->held);
        c->held = NULL;
    }
    pk_block_conn_closed(s, c);
    pk_move_conn_closed(s, c);
    pk_repl_conn_closed(s, c);
    pk_multi_conn_reset(c);
    pk_coord_conn_closed(c);
    if (c->in_resume) {
        pk_conn **pp = &s->resume;
        while (*pp != c)
            pp = &(*pp)->resume_next;
        *pp = c->resume_next;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void fmt_addr(const struct sockaddr_storage *a, char *buf, size_t n)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)a;
        uv_ip4_name(in, ip, sizeof(ip));
        port = ntohs(in->sin_port);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)a;
        uv_ip6_name(in, ip, sizeof(ip));
        port = ntohs(in->sin6_port);
    }
    snprintf(buf, n, "%s:%d", ip, port);
}

static int is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >>
                24) == 127;
    if (a->ss_family == AF_INET6) {
        const struct in6_addr *in =
            &((const struct sockaddr_in6 *)a)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(in) ||
               (IN6_IS_ADDR_V4MAPPED(in) && in->s6_addr[12] == 127);
    }
    return 0;
}

/* Sends one error to a connection we refuse, then closes it. */
static void refuse(pk_conn *c, const char *err)
{
    c->closing = 1;
    pk_reply_error(&c->out, err);
    pk_conn_flush(c);
    if (c->tls && !c->freed) { /* the error goes out after the handshake */
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
        c->reading = 1;
    }
}

static const char denied[] =
    "DENIED Running in protected mode because protected mode is enabled "
    "and no password is set for the default user. In this mode "
    "connections are only accepted from the loopback interface. Set a "
    "password with --requirepass or disable protected mode with "
    "--protected-mode no.";

static void accept_on(uv_stream_t *listener, int status, int tls)
{
    pk_server *s = listener->data;
    struct sockaddr_storage peer, local;
    int len = sizeof(peer);
    pk_resp_limits lim = pk_resp_limits_default();
    pk_conn *c;

    if (status < 0)
        return;
    lim.max_bulk_len = s->cfg.proto_max_bulk_len;
    lim.max_query_buf = s->cfg.client_query_buffer_limit;
    c = calloc(1, sizeof(*c));
    if (c == NULL || pk_resp_parser_new(&lim, &c->parser) != PK_OK) {
        free(c);
        return;
    }
    uv_tcp_init(&s->loop, &c->tcp);
    c->srv = s;
    if ((tls && (c->tls = pk_tls_conn_server(s->tls)) == NULL) ||
        uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_close);
        return;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    s->total_conns++;
    c->id = s->next_id++;
    c->proto = 2;
    pk_acl_conn_start(s, c);
    c->created_ms = c->last_ms = pk_srv_wall_ms();
    pk_obuf_init(&c->out);
    pk_obuf_init(&c->wire);
    uv_tcp_nodelay(&c->tcp, 1);
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &len);
    fmt_addr(&peer, c->addr, sizeof(c->addr));
    len = sizeof(local);
    uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&local, &len);
    fmt_addr(&local, c->laddr, sizeof(c->laddr));
    /* As Redis 7: protected while the default user needs no password. */
    if (s->cfg.protected_mode && pk_acl_user_nopass(pk_acl_default(s->acl)) &&
        !is_loopback(&peer)) {
        s->rejected_conns++;
        refuse(c, denied);
        return;
    }
    if ((int)s->nconns > s->cfg.maxclients) {
        s->rejected_conns++;
        refuse(c, "ERR max number of clients reached");
        return;
    }
    read_start(c);
}

void pk_conn_accept(uv_stream_t *listener, int status)
{
    accept_on(listener, status, 0);
}

void pk_conn_accept_tls(uv_stream_t *listener, int status)
{
    accept_on(listener, status, 1);
}

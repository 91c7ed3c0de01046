/* pk_link: forwarding to the owning node (see pk_link.h). */
#include "server/pk_link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "proto/pk_rreply.h"
#include "server/pk_srv.h"
#include "server/pk_tls.h"

/*
 * A multi-key command split by owner (forward mode): one single-key
 * sub-command per key, merged into one reply once all have answered.
 */
typedef struct pk_scatter {
    pk_conn *c; /* NULL once the client went away */
    int kind;   /* SC_MGET, SC_COUNT (DEL, EXISTS) or SC_OK (MSET) */
    size_t n, done;
    int64_t sum;
    char *err;     /* first error reply, owned */
    pk_obuf *vals; /* SC_MGET: each key's reply, in key order */
} pk_scatter;

enum { SC_MGET, SC_COUNT, SC_OK };

typedef struct pk_fwd {
    pk_conn *c;  /* NULL once the client went away */
    pk_obuf cmd; /* the request as sent, for a MOVED retry */
    int retried;
    pk_scatter *sc; /* non-NULL for a sub-command of a split command */
    size_t idx;     /* its position in sc */
    pk_link_cb cb;  /* non-NULL for pk_link_call: the reply goes here */
    void *ctx;
    struct pk_fwd *next;
} pk_fwd;

/* A peer is reached over one link per kind: a kind's requests are
 * answered in order, so a reply held on one kind delays none of another. */
enum link_kind {
    LINK_FORWARD, /* clients' commands (pk_link_forward, pk_link_scatter) */
    LINK_CALLS,   /* pk_link_call */
    LINK_RAW,     /* pk_link_call_raw */
    LINK_STREAM,  /* pk_link_call_stream */
    LINK_KINDS
};

typedef struct pk_link {
    uv_tcp_t tcp; /* first member */
    uv_connect_t creq;
    uv_write_t wreq;
    pk_server *srv;
    char addr[64];
    int kind; /* enum link_kind */
    int connected, writing, closed;
    pk_obuf pending; /* requests not yet handed to the socket */
    pk_obuf wire;    /* requests in flight in wreq */
    pk_rreply_reader *rd;
    pk_tls_conn *tls; /* --tls-cluster: owned; else NULL */
    pk_fwd *head, *tail;
    struct pk_link *next;
} pk_link;

static void link_write(pk_link *l);

/* Writes a reply tree as RESP for a client speaking proto (2 or 3). */
static void write_reply(pk_obuf *ob, int proto, const pk_rr *r)
{
    switch (r->type) {
    case PK_RR_STATUS:
        pk_reply_simple(ob, r->str);
        break;
    case PK_RR_ERROR:
        pk_reply_error(ob, r->str);
        break;
    case PK_RR_INT:
        pk_reply_int(ob, r->integer);
        break;
    case PK_RR_BOOL:
        pk_reply_bool(ob, proto, (int)r->integer);
        break;
    case PK_RR_DOUBLE:
        pk_reply_double(ob, proto, r->dbl);
        break;
    case PK_RR_NIL:
        pk_reply_null(ob, proto);
        break;
    case PK_RR_VERBATIM:
        pk_reply_verbatim(ob, proto, r->fmt, r->str, r->len);
        break;
    case PK_RR_MAP:
        pk_reply_map(ob, proto, r->n);
        for (size_t i = 0; i < 2 * r->n; i++)
            write_reply(ob, proto, &r->elems[i]);
        break;
    case PK_RR_SET:
    case PK_RR_ARRAY:
    case PK_RR_PUSH:
        if (r->type == PK_RR_SET)
            pk_reply_set(ob, proto, r->n);
        else
            pk_reply_array(ob, r->n);
        for (size_t i = 0; i < r->n; i++)
            write_reply(ob, proto, &r->elems[i]);
        break;
    default: /* BULK, BIGNUM */
        pk_reply_bulk(ob, r->str, r->len);
    }
}

static pk_link *link_find(pk_server *s, const char *addr, int kind)
{
    for (pk_link *l = s->links; l; l = l->next)
        if (!l->closed && l->kind == kind && strcmp(l->addr, addr) == 0)
            return l;
    return NULL;
}

static void on_link_close(uv_handle_t *h)
{
    pk_link *l = (pk_link *)h;

    pk_obuf_free(&l->pending);
    pk_obuf_free(&l->wire);
    pk_rreply_reader_free(l->rd);
    pk_tls_conn_free(l->tls);
    free(l);
}

static void scatter_free(pk_scatter *sc)
{
    for (size_t i = 0; sc->vals && i < sc->n; i++)
        pk_obuf_free(&sc->vals[i]);
    free(sc->vals);
    free(sc->err);
    free(sc);
}

static void scatter_finish(pk_scatter *sc);

/* Records one sub-reply; the last one writes the merged reply. */
static void scatter_part(pk_fwd *f, const pk_rr *r, const char *err)
{
    pk_scatter *sc = f->sc;
    pk_conn *c = sc->c;

    if (err == NULL && r->type == PK_RR_ERROR)
        err = r->str;
    if (err && sc->err == NULL)
        sc->err = strdup(err);
    else if (err == NULL && sc->kind == SC_MGET)
        /* The part is a one-key MGET: its one element. */
        write_reply(&sc->vals[f->idx], c ? c->proto : 2,
                    r->type == PK_RR_ARRAY && r->n == 1 ? &r->elems[0] : r);
    else if (err == NULL && sc->kind == SC_COUNT && r->type == PK_RR_INT)
        sc->sum += r->integer;
    ++sc->done;
    scatter_finish(sc);
}

/* Writes the merged reply and frees sc once every part has answered. */
static void scatter_finish(pk_scatter *sc)
{
    pk_conn *c = sc->c;

    if (sc->done < sc->n)
        return;
    if (c) {
        if (sc->err)
            pk_reply_error(&c->out, sc->err);
        else if (sc->kind == SC_MGET) {
            pk_reply_array(&c->out, sc->n);
            for (size_t i = 0; i < sc->n; i++)
                pk_obuf_append(&c->out, sc->vals[i].data + sc->vals[i].head,
                               pk_obuf_pending(&sc->vals[i]));
        } else if (sc->kind == SC_COUNT)
            pk_reply_int(&c->out, sc->sum);
        else
            pk_reply_simple(&c->out, "OK");
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
    scatter_free(sc);
}

/* Hands the reply (or an error) to the waiting client, then lets it run. */
static void deliver(pk_fwd *f, const pk_rr *r, const char *err)
{
    pk_conn *c = f->c;

    if (f->cb) {
        f->cb(f->ctx, r, err);
        return;
    }
    if (f->sc) {
        scatter_part(f, r, err);
        return;
    }
    if (c == NULL)
        return;
    if (r)
        write_reply(&c->out, c->proto, r);
    else
        pk_reply_error(&c->out, err);
    c->waiting_fwd = 0;
    pk_conn_resume(c);
}

static void fwd_free(pk_fwd *f)
{
    pk_obuf_free(&f->cmd);
    free(f);
}

/* Fails every waiting command and closes the link. */
static void link_fail(pk_link *l, const char *why)
{
    pk_server *s = l->srv;
    char err[160];
    pk_fwd *f;

    if (l->closed)
        return;
    l->closed = 1;
    for (pk_link **pp = &s->links; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    snprintf(err, sizeof(err), "ERR forwarding to %s failed: %s", l->addr, why);
    while ((f = l->head) != NULL) {
        l->head = f->next;
        deliver(f, NULL, err);
        fwd_free(f);
    }
    uv_close((uv_handle_t *)&l->tcp, on_link_close);
}

static void on_link_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(size);
    buf->len = buf->base ? size : 0;
}

static int is_moved(const pk_rr *r, char *to, size_t cap)
{
    int slot;

    return r->type == PK_RR_ERROR &&
           sscanf(r->str, "MOVED %d %63s", &slot, to) == 2 && cap >= 64;
}

static int enqueue(pk_server *s, pk_conn *c, const char *addr, pk_obuf *cmd,
                   int retried, pk_scatter *sc, size_t idx);

#define TLS_FAILED 1 /* the link failed with the session's error */

/* TLS: ciphertext in, its plaintext to the reader; the handshake's
 * answers and requests it held go out.  PK_OK, a reader's error, or
 * TLS_FAILED. */
static int tls_feed(pk_link *l, const char *buf, size_t n)
{
    char plain[PK_TLS_RBUF];
    ssize_t k;
    int rc = pk_tls_in(l->tls, buf, n);

    while (rc == PK_OK &&
           (k = pk_tls_read(l->tls, plain, sizeof(plain))) != 0) {
        if (k < 0) {
            link_fail(l, pk_tls_error(l->tls));
            return TLS_FAILED;
        }
        rc = pk_rreply_feed(l->rd, plain, (size_t)k);
    }
    if (rc == PK_OK)
        link_write(l);
    return rc;
}

static void on_link_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    pk_link *l = (pk_link *)st;
    pk_rr *r = NULL;
    int rc = PK_OK;

    if (n < 0) {
        free(buf->base);
        link_fail(l, uv_strerror((int)n));
        return;
    }
    if (n > 0 && l->tls)
        rc = tls_feed(l, buf->base, (size_t)n);
    else if (n > 0)
        rc = pk_rreply_feed(l->rd, buf->base, (size_t)n);
    free(buf->base);
    if (rc == TLS_FAILED)
        return;
    while (rc == PK_OK && (rc = pk_rreply_next(l->rd, &r)) == 1) {
        pk_fwd *f = l->head;
        char to[64];
        rc = PK_OK;
        if (f == NULL) {
            pk_rr_free(r);
            link_fail(l, "reply without a request");
            return;
        }
        l->head = f->next;
        if (l->head == NULL)
            l->tail = NULL;
        /* A MOVED that names this node means our map is older than the
         * peer's: following it would loop back here, so it is relayed. */
        if (f->c && !f->retried && is_moved(r, to, sizeof(to)) &&
            strcmp(to, l->srv->cluster.addr) != 0 &&
            enqueue(l->srv, f->c, to, &f->cmd, 1, f->sc, f->idx) == PK_OK) {
            /* f->cmd moved into the new entry; f->c waits on. */
        } else if (f->cb == NULL && is_moved(r, to, sizeof(to))) {
            /* The owner moved again (or the peer's map is behind ours):
             * a client of forward mode cannot follow MOVED, and a cluster
             * client retries TRYAGAIN too. */
            deliver(f, NULL, "TRYAGAIN the key's owner is changing; retry");
        } else {
            deliver(f, r, NULL);
        }
        pk_rr_free(r);
        fwd_free(f);
    }
    if (rc < 0)
        link_fail(l, "bad reply");
}

static void on_link_write(uv_write_t *req, int status)
{
    pk_link *l = req->data;

    l->writing = 0;
    pk_obuf_reset(&l->wire);
    if (status < 0) {
        link_fail(l, uv_strerror(status));
        return;
    }
    link_write(l);
}

/* TLS: the requests go into the session, its ciphertext into wire. */
static int tls_wire(pk_link *l)
{
    size_t n = pk_obuf_pending(&l->pending);
    ssize_t k =
        pk_tls_write(l->tls, n ? l->pending.data + l->pending.head : NULL, n);

    if (k < 0) {
        link_fail(l, pk_tls_error(l->tls));
        return -1;
    }
    pk_obuf_consume(&l->pending, (size_t)k);
    if (pk_tls_drain(l->tls, &l->wire) != PK_OK) {
        link_fail(l, "out of memory");
        return -1;
    }
    return 0;
}

static void link_write(pk_link *l)
{
    pk_obuf tmp;
    uv_buf_t b;

    if (!l->connected || l->writing || l->closed)
        return;
    if (l->tls) {
        if (tls_wire(l) != 0 || pk_obuf_pending(&l->wire) == 0)
            return;
    } else {
        if (pk_obuf_pending(&l->pending) == 0)
            return;
        tmp = l->wire;
        l->wire = l->pending;
        l->pending = tmp;
    }
    b = uv_buf_init(l->wire.data + l->wire.head,
                    (unsigned)pk_obuf_pending(&l->wire));
    l->wreq.data = l;
    l->writing = 1;
    if (uv_write(&l->wreq, (uv_stream_t *)&l->tcp, &b, 1, on_link_write)) {
        l->writing = 0;
        link_fail(l, "write failed");
    }
}

static void on_link_connect(uv_connect_t *req, int status)
{
    pk_link *l = req->data;

    if (status < 0) {
        link_fail(l, uv_strerror(status));
        return;
    }
    l->connected = 1;
    uv_tcp_nodelay(&l->tcp, 1);
    uv_read_start((uv_stream_t *)&l->tcp, on_link_alloc, on_link_read);
    link_write(l);
}

static int link_open(pk_server *s, const char *addr, int kind, pk_link **out)
{
    struct sockaddr_in sa;
    char host[64];
    const char *colon = strrchr(addr, ':');
    pk_link *l;

    if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
        return PK_EINVAL;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
    if (uv_ip4_addr(host, atoi(colon + 1), &sa) != 0)
        return PK_EINVAL;
    l = calloc(1, sizeof(*l));
    if (l == NULL || pk_rreply_reader_new(NULL, &l->rd) != PK_OK) {
        free(l);
        return PK_ENOMEM;
    }
    l->srv = s;
    l->kind = kind;
    if (s->cfg.tls_cluster &&
        (l->tls = pk_tls_conn_client(s->tls, host)) == NULL) {
        pk_rreply_reader_free(l->rd);
        free(l);
        return PK_ENOMEM;
    }
    snprintf(l->addr, sizeof(l->addr), "%s", addr);
    pk_obuf_init(&l->pending);
    pk_obuf_init(&l->wire);
    uv_tcp_init(&s->loop, &l->tcp);
    l->creq.data = l;
    l->next = s->links;
    s->links = l;
    /* Peers may require a password: the cluster secret outranks it.  The
     * reply goes to an entry with no client. */
    if (s->cfg.cluster_secret) {
        pk_fwd *auth = calloc(1, sizeof(*auth));
        if (auth == NULL ||
            pk_rr_write_cmdv(&l->pending, "PK.AUTH", s->cfg.cluster_secret,
                             NULL) != PK_OK) {
            free(auth);
            link_fail(l, "out of memory");
            return PK_ENOMEM;
        }
        pk_obuf_init(&auth->cmd);
        l->head = l->tail = auth;
    }
    /* A raw link (pk_link_call_raw) reaches keys as they are stored. */
    if (kind == LINK_RAW) {
        pk_fwd *raw = calloc(1, sizeof(*raw));
        if (raw == NULL ||
            pk_rr_write_cmdv(&l->pending, "PK.RAWKEYS", NULL) != PK_OK) {
            free(raw);
            link_fail(l, "out of memory");
            return PK_ENOMEM;
        }
        pk_obuf_init(&raw->cmd);
        if (l->tail)
            l->tail->next = raw;
        else
            l->head = raw;
        l->tail = raw;
    }
    /* A node bound to its own address connects from it too, so that a
     * link between two nodes can be told apart (fault tests cut them). */
    if (strcmp(s->cfg.bind, "0.0.0.0") != 0) {
        struct sockaddr_in src;
        if (uv_ip4_addr(s->cfg.bind, 0, &src) == 0)
            uv_tcp_bind(&l->tcp, (struct sockaddr *)&src, 0);
    }
    if (uv_tcp_connect(&l->creq, &l->tcp, (struct sockaddr *)&sa,
                       on_link_connect) != 0) {
        link_fail(l, "connect failed");
        return PK_EIO;
    }
    *out = l;
    return PK_OK;
}

/*
 * Appends an entry for the request in cmd (its bytes copied) to the queue
 * of the link to addr -- a call link or a forwarding one -- opening the
 * link if needed.  Returns the entry, for the caller to fill and then
 * start the write (link_write(*lp): a failure there delivers to every
 * entry at once), or NULL with *rc set.
 */
static pk_fwd *push(pk_server *s, const char *addr, int kind,
                    const pk_obuf *cmd, pk_link **lp, int *rc)
{
    pk_link *l = link_find(s, addr, kind);
    pk_fwd *f;

    if (l == NULL && (*rc = link_open(s, addr, kind, &l)) != PK_OK)
        return NULL;
    f = calloc(1, sizeof(*f));
    if (f == NULL || pk_obuf_append(&l->pending, cmd->data + cmd->head,
                                    pk_obuf_pending(cmd)) != PK_OK) {
        free(f);
        *rc = PK_ENOMEM;
        return NULL;
    }
    pk_obuf_init(&f->cmd);
    if (l->tail)
        l->tail->next = f;
    else
        l->head = f;
    l->tail = f;
    *lp = l;
    return f;
}

/* Queues a forwarded request (taking cmd's bytes) on the link to addr. */
static int enqueue(pk_server *s, pk_conn *c, const char *addr, pk_obuf *cmd,
                   int retried, pk_scatter *sc, size_t idx)
{
    int rc = PK_OK;
    pk_link *l = NULL;
    pk_fwd *f = push(s, addr, LINK_FORWARD, cmd, &l, &rc);

    if (f == NULL)
        return rc;
    f->c = c;
    f->cmd = *cmd; /* kept for a MOVED retry */
    pk_obuf_init(cmd);
    f->retried = retried;
    f->sc = sc;
    f->idx = idx;
    c->waiting_fwd = 1;
    link_write(l);
    return PK_OK;
}

int pk_link_forward(pk_server *s, pk_conn *c, const char *addr, int argc,
                    const pk_arg *argv)
{
    const char *args[64];
    size_t lens[64];
    const char **pa = args;
    size_t *pl = lens;
    pk_obuf cmd;
    int rc;

    if (argc > 64) {
        pa = malloc((size_t)argc * sizeof(*pa));
        pl = malloc((size_t)argc * sizeof(*pl));
    }
    if (pa == NULL || pl == NULL)
        rc = PK_ENOMEM;
    else {
        for (int i = 0; i < argc; i++) {
            pa[i] = argv[i].ptr;
            pl[i] = argv[i].len;
        }
        pk_obuf_init(&cmd);
        rc = pk_rr_write_cmd(&cmd, argc, pa, pl);
        if (rc == PK_OK)
            rc = enqueue(s, c, addr, &cmd, 0, NULL, 0);
        pk_obuf_free(&cmd);
    }
    if (pa != args) {
        free(pa);
        free(pl);
    }
    return rc;
}

int pk_link_scatter(pk_server *s, pk_conn *c, int argc, const pk_arg *argv,
                    const char *const *addrs)
{
    const char *name = argv[0].ptr;
    int mset = argv[0].len == 4 && strncasecmp(name, "mset", 4) == 0;
    int mget = argv[0].len == 4 && strncasecmp(name, "mget", 4) == 0;
    size_t n = (size_t)(argc - 1) / (mset ? 2 : 1);
    pk_scatter *sc = calloc(1, sizeof(*sc));
    int rc = PK_OK;

    if (sc == NULL)
        return PK_ENOMEM;
    sc->c = c;
    sc->n = n;
    sc->kind = mget ? SC_MGET : mset ? SC_OK : SC_COUNT;
    if (mget && (sc->vals = calloc(n, sizeof(*sc->vals))) == NULL) {
        free(sc);
        return PK_ENOMEM;
    }
    for (size_t i = 0; i < n && rc == PK_OK; i++) {
        /* MSET k v -> SET k v; MGET, DEL, EXISTS k -> the same with one
         * key (MGET, not GET: a key of another type is nil, as in
         * Redis). */
        const pk_arg *k = &argv[1 + i * (mset ? 2 : 1)];
        const char *a[3] = {mset ? "SET" : name, k->ptr,
                            mset ? k[1].ptr : NULL};
        size_t lens[3] = {mset ? 3 : argv[0].len, k->len, mset ? k[1].len : 0};
        pk_obuf cmd;
        pk_obuf_init(&cmd);
        rc = pk_rr_write_cmd(&cmd, mset ? 3 : 2, a, lens);
        if (rc == PK_OK)
            rc = enqueue(s, c, addrs[i], &cmd, 0, sc, i);
        pk_obuf_free(&cmd);
        if (rc != PK_OK) {
            /* Sub-commands already queued will complete; account for the
             * ones that never will, so the merge still happens. */
            sc->n = i;
            if (i == 0) {
                scatter_free(sc);
                return rc;
            }
            if (sc->err == NULL)
                sc->err = strdup("ERR split command partly forwarded");
            scatter_finish(sc); /* the queued parts may all be done */
            return PK_OK;
        }
    }
    return PK_OK;
}

static int call(pk_server *s, const char *addr, int kind, pk_obuf *cmd,
                pk_link_cb cb, void *ctx)
{
    int rc = PK_OK;
    pk_link *l = NULL;
    pk_fwd *f = push(s, addr, kind, cmd, &l, &rc);

    if (f == NULL)
        return rc;
    pk_obuf_reset(cmd);
    f->cb = cb;
    f->ctx = ctx;
    f->retried = 1; /* a MOVED is the callee's answer, not a redirect */
    link_write(l);
    return PK_OK;
}

int pk_link_call(pk_server *s, const char *addr, pk_obuf *cmd, pk_link_cb cb,
                 void *ctx)
{
    return call(s, addr, LINK_CALLS, cmd, cb, ctx);
}

int pk_link_call_raw(pk_server *s, const char *addr, pk_obuf *cmd,
                     pk_link_cb cb, void *ctx)
{
    return call(s, addr, LINK_RAW, cmd, cb, ctx);
}

int pk_link_call_stream(pk_server *s, const char *addr, pk_obuf *cmd,
                        pk_link_cb cb, void *ctx)
{
    return call(s, addr, LINK_STREAM, cmd, cb, ctx);
}

void pk_link_drop(pk_server *s, const char *addr)
{
    for (int kind = LINK_CALLS; kind < LINK_KINDS; kind++) {
        pk_link *l = link_find(s, addr, kind);
        if (l)
            link_fail(l, "dropped");
    }
}

void pk_link_drop_all_calls(pk_server *s)
{
    pk_link *l = s->links, *next;

    for (; l; l = next) {
        next = l->next;
        if (l->kind != LINK_FORWARD)
            link_fail(l, "shutting down");
    }
}

void pk_link_forget(pk_server *s, pk_conn *c)
{
    for (pk_link *l = s->links; l; l = l->next)
        for (pk_fwd *f = l->head; f; f = f->next) {
            if (f->c == c)
                f->c = NULL;
            if (f->sc && f->sc->c == c)
                f->sc->c = NULL;
        }
}

void pk_link_close_all(pk_server *s)
{
    while (s->links)
        link_fail(s->links, "shutting down");
}

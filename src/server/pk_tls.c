/* pk_tls: TLS through memory BIOs (pk_tls.h). */
#include "server/pk_tls.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/pk_err.h"
#include "proto/pk_reply.h"

/* Threads that may block (the agent, the controller) open connections
 * too: lock guards the swap of the contexts by a reload. */
struct pk_tls {
    pthread_mutex_t lock;
    SSL_CTX *srv, *cli;
    char *cert, *key, *ca;
    pk_tls_auth auth;
};

struct pk_tls_conn {
    SSL *ssl;
    BIO *in, *out; /* ciphertext from and to the peer; owned by ssl */
    char err[160];
};

/* The reason of the newest OpenSSL error, prefixed by what failed. */
static void ssl_reason(char *buf, size_t cap, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char r[128] = "unknown error";

    if (e)
        ERR_error_string_n(e, r, sizeof(r));
    snprintf(buf, cap, "%s: %s", what, r);
    ERR_clear_error();
}

static int load_ca(SSL_CTX *ctx, const char *ca)
{
    return ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
              : SSL_CTX_set_default_verify_paths(ctx);
}

/* A context for either side, with our certificate and the CA. */
static SSL_CTX *make_ctx(const pk_tls *t, int server, char *err, size_t cap)
{
    static const unsigned char sid[] = "partkv";
    SSL_CTX *ctx =
        SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    const char *what = "cannot create a TLS context";

    if (ctx == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* Not SSL_MODE_RELEASE_BUFFERS: freeing a connection's record buffers
     * whenever they empty costs two allocations per request and answer
     * (Redis keeps them too). */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    what = t->cert;
    if (t->cert && SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1)
        goto fail;
    what = t->key;
    if (t->cert &&
        (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1))
        goto fail;
    what = t->ca ? t->ca : "the system's CA certificates";
    if (load_ca(ctx, t->ca) != 1)
        goto fail;
    if (!server) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        return ctx;
    }
    SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
    if (t->auth == PK_TLS_AUTH_NO) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        return ctx;
    }
    SSL_CTX_set_verify(
        ctx,
        SSL_VERIFY_PEER |
            (t->auth == PK_TLS_AUTH_YES ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
        NULL);
    if (t->ca) { /* clients are told which CAs we take */
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
    }
    ERR_clear_error();
    return ctx;
fail:
    ssl_reason(err, cap, what);
    SSL_CTX_free(ctx);
    return NULL;
}

#define SWAP_CTX(a, b)                                                         \
    do {                                                                       \
        SSL_CTX *tmp_ = (a);                                                   \
        (a) = (b);                                                             \
        (b) = tmp_;                                                            \
    } while (0)

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int pk_tls_reload(pk_tls *t, char *err, size_t cap)
{
    SSL_CTX *srv = NULL, *cli;

    /* Without a certificate only a client, which presents none. */
    if (t->cert && (srv = make_ctx(t, 1, err, cap)) == NULL)
        return -1;
    if ((cli = make_ctx(t, 0, err, cap)) == NULL) {
        SSL_CTX_free(srv);
        return -1;
    }
    /* Open connections hold references to the old ones. */
    pthread_mutex_lock(&t->lock);
    SWAP_CTX(t->srv, srv);
    SWAP_CTX(t->cli, cli);
    pthread_mutex_unlock(&t->lock);
    SSL_CTX_free(srv);
    SSL_CTX_free(cli);
    return 0;
}

int pk_tls_open(const pk_tls_files *f, pk_tls **out, char *err, size_t cap)
{
    pk_tls *t = calloc(1, sizeof(*t));

    if (t == NULL || (f->cert == NULL) != (f->key == NULL)) {
        snprintf(err, cap,
                 t ? "a certificate needs its key, a key its certificate"
                   : "out of memory");
        free(t);
        return -1;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->cert = dup_or_null(f->cert);
    t->key = dup_or_null(f->key);
    t->ca = dup_or_null(f->ca);
    t->auth = f->auth_clients;
    if ((f->cert && t->cert == NULL) || (f->key && t->key == NULL) ||
        (f->ca && t->ca == NULL)) {
        snprintf(err, cap, "out of memory");
        pk_tls_free(t);
        return -1;
    }
    if (pk_tls_reload(t, err, cap) != 0) {
        pk_tls_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void pk_tls_free(pk_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->srv);
    SSL_CTX_free(t->cli);
    free(t->cert);
    free(t->key);
    free(t->ca);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static pk_tls_conn *conn_new(pk_tls *t, int server)
{
    pk_tls_conn *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    pthread_mutex_lock(&t->lock);
    c->ssl = SSL_new(server ? t->srv : t->cli);
    pthread_mutex_unlock(&t->lock);
    c->in = BIO_new(BIO_s_mem());
    c->out = BIO_new(BIO_s_mem());
    if (c->ssl == NULL || c->in == NULL || c->out == NULL) {
        BIO_free(c->in);
        BIO_free(c->out);
        SSL_free(c->ssl);
        free(c);
        ERR_clear_error();
        return NULL;
    }
    /* An empty memory BIO reads as "retry", not as end of file. */
    BIO_set_mem_eof_return(c->in, -1);
    SSL_set_bio(c->ssl, c->in, c->out);
    return c;
}

pk_tls_conn *pk_tls_conn_server(pk_tls *t)
{
    pk_tls_conn *c = t->srv ? conn_new(t, 1) : NULL;

    if (c)
        SSL_set_accept_state(c->ssl);
    return c;
}

pk_tls_conn *pk_tls_conn_client(pk_tls *t, const char *host)
{
    pk_tls_conn *c = conn_new(t, 0);
    unsigned char ip[16];
    int numeric;

    if (c == NULL)
        return NULL;
    numeric =
        inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (!numeric) {
        SSL_set_tlsext_host_name(c->ssl, host);
        SSL_set1_host(c->ssl, host);
    }
    SSL_set_connect_state(c->ssl);
    return c;
}

void pk_tls_conn_free(pk_tls_conn *c)
{
    if (c == NULL)
        return;
    SSL_free(c->ssl); /* and its BIOs */
    free(c);
}

int pk_tls_in(pk_tls_conn *c, const void *buf, size_t n)
{
    while (n > 0) {
        int k = BIO_write(c->in, buf, n > INT_MAX ? INT_MAX : (int)n);
        if (k <= 0)
            return PK_ENOMEM;
        buf = (const char *)buf + k;
        n -= (size_t)k;
    }
    return PK_OK;
}

/* 0 for "again", else the code, with c->err filled. */
static int failed(pk_tls_conn *c, int ret, const char *what)
{
    int e = SSL_get_error(c->ssl, ret);

    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return 0;
    case SSL_ERROR_ZERO_RETURN:
        snprintf(c->err, sizeof(c->err), "%s: the peer closed the session",
                 what);
        return PK_EIO;
    default:
        if (SSL_get_verify_result(c->ssl) != X509_V_OK) {
            snprintf(
                c->err, sizeof(c->err), "%s: certificate: %s", what,
                X509_verify_cert_error_string(SSL_get_verify_result(c->ssl)));
            ERR_clear_error();
        } else {
            ssl_reason(c->err, sizeof(c->err), what);
        }
        return PK_EPROTO;
    }
}

ssize_t pk_tls_read(pk_tls_conn *c, void *buf, size_t cap)
{
    int n;

    ERR_clear_error();
    n = SSL_read(c->ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
    return n > 0 ? n : failed(c, n, "TLS");
}

ssize_t pk_tls_write(pk_tls_conn *c, const void *buf, size_t n)
{
    size_t done = 0;

    ERR_clear_error();
    if (n == 0 && !SSL_is_init_finished(c->ssl)) { /* start or go on */
        int k = SSL_do_handshake(c->ssl);
        return k == 1 ? 0 : failed(c, k, "TLS handshake");
    }
    while (done < n) {
        size_t left = n - done;
        int k = SSL_write(c->ssl, (const char *)buf + done,
                          left > INT_MAX ? INT_MAX : (int)left);
        if (k <= 0) {
            int rc = failed(c, k, "TLS");
            return rc ? rc : (ssize_t)done;
        }
        done += (size_t)k;
    }
    return (ssize_t)done;
}

size_t pk_tls_pending(const pk_tls_conn *c)
{
    return BIO_ctrl_pending(c->out);
}

size_t pk_tls_out(pk_tls_conn *c, void *buf, size_t cap)
{
    int n = BIO_read(c->out, buf, cap > INT_MAX ? INT_MAX : (int)cap);

    return n > 0 ? (size_t)n : 0;
}

int pk_tls_drain(pk_tls_conn *c, pk_obuf *ob)
{
    size_t n;

    while ((n = pk_tls_pending(c)) > 0) {
        if (pk_obuf_reserve(ob, n) != PK_OK)
            return PK_ENOMEM;
        ob->len += pk_tls_out(c, ob->data + ob->len, n);
    }
    return PK_OK;
}

int pk_tls_peer_verified(const pk_tls_conn *c)
{
    X509 *peer = SSL_get1_peer_certificate(c->ssl);
    int ok = peer && SSL_get_verify_result(c->ssl) == X509_V_OK;

    X509_free(peer);
    return ok;
}

int pk_tls_ready(const pk_tls_conn *c)
{
    return SSL_is_init_finished(c->ssl);
}

const char *pk_tls_error(const pk_tls_conn *c)
{
    return c->err[0] ? c->err : "TLS: no error";
}

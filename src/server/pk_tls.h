/*
 * pk_tls: TLS (OpenSSL) for connections the event loop drives, through
 * memory BIOs -- no sockets and no threads here.  The connection hands in
 * the ciphertext it read, reads plaintext out, writes plaintext in, and
 * sends the ciphertext that comes out; the handshake runs inside those
 * calls, so it never blocks the loop.
 *
 *   pk_tls_open         contexts from certificate files (server and client)
 *   pk_tls_reload       the files again (SIGHUP): new connections use them,
 *                       open ones keep theirs
 *   pk_tls_conn_server  one accepted connection
 *   pk_tls_in -> pk_tls_read           ciphertext in, plaintext out
 *   pk_tls_write -> pk_tls_out         plaintext in, ciphertext out
 *
 * Names follow Redis's: --tls-cert-file, --tls-key-file,
 * --tls-ca-cert-file, --tls-auth-clients yes|no|optional.
 */
#ifndef PK_SERVER_PK_TLS_H
#define PK_SERVER_PK_TLS_H

#include <stddef.h>
#include <sys/types.h>

/* --tls-auth-clients: a client certificate is required, not asked for,
 * or checked when one is offered. */
typedef enum pk_tls_auth {
    PK_TLS_AUTH_YES = 0, /* Redis's default */
    PK_TLS_AUTH_NO = 1,
    PK_TLS_AUTH_OPTIONAL = 2,
} pk_tls_auth;

typedef struct pk_tls_files {
    const char *cert; /* PEM certificate (chain) this node presents */
    const char *key;  /* its private key */
    const char *ca;   /* PEM CA bundle peers' certificates are checked
                       * against; NULL: the system's */
    pk_tls_auth auth_clients;
} pk_tls_files;

typedef struct pk_tls pk_tls;
typedef struct pk_tls_conn pk_tls_conn;

/* Reads the files into a server and a client context (without cert and
 * key: a client context alone, which presents no certificate).  The paths
 * are copied.  0, or -1 with a one-line reason in err. */
int pk_tls_open(const pk_tls_files *f, pk_tls **out, char *err, size_t cap);

/* Reads the same files again; on failure the old contexts stay.  0 or -1
 * with the reason in err. */
int pk_tls_reload(pk_tls *t, char *err, size_t cap);

void pk_tls_free(pk_tls *t);

/* A connection accepted on a TLS port; NULL when out of memory or t has
 * no certificate. */
pk_tls_conn *pk_tls_conn_server(pk_tls *t);

/* A connection we open to host (its certificate must name it, unless
 * host is a numeric address, whose certificate need only be signed by our
 * CA); NULL when out of memory. */
pk_tls_conn *pk_tls_conn_client(pk_tls *t, const char *host);

void pk_tls_conn_free(pk_tls_conn *c);

/* Ciphertext read from the peer; all of it is kept.  0 or PK_ENOMEM. */
int pk_tls_in(pk_tls_conn *c, const void *buf, size_t n);

/* Plaintext, up to cap bytes: > 0 bytes, 0 when more ciphertext is
 * needed, PK_EIO when the peer closed the session, PK_EPROTO when the
 * handshake or a record failed (pk_tls_error says why). */
ssize_t pk_tls_read(pk_tls_conn *c, void *buf, size_t cap);

/* Plaintext to send: the bytes taken (all of them once the handshake is
 * done, 0 before), or PK_EPROTO.  n == 0 moves the handshake on. */
ssize_t pk_tls_write(pk_tls_conn *c, const void *buf, size_t n);

/* Ciphertext waiting to be sent. */
size_t pk_tls_pending(const pk_tls_conn *c);

/* Moves up to cap bytes of it to buf; returns how many. */
size_t pk_tls_out(pk_tls_conn *c, void *buf, size_t cap);

struct pk_obuf;
/* Moves all of it to the end of ob.  0 or PK_ENOMEM. */
int pk_tls_drain(pk_tls_conn *c, struct pk_obuf *ob);

/* 1 when the peer presented a certificate our CA signed. */
int pk_tls_peer_verified(const pk_tls_conn *c);

/* 1 once the handshake is done. */
int pk_tls_ready(const pk_tls_conn *c);

/* Why the last call failed, static or in c; never NULL. */
const char *pk_tls_error(const pk_tls_conn *c);

#endif

/*
 * tls_gen: `cluster up --tls` makes a local CA and one certificate every
 * node presents (to clients, and to each other as a client), for
 * 127.0.0.1, ::1 and localhost.  EC P-256 keys, valid ten years.  Not for
 * production: there the operator brings certificates.
 */
#ifndef PK_CLI_TLS_GEN_H
#define PK_CLI_TLS_GEN_H

#define PK_TLS_GEN_CA "ca.crt"
#define PK_TLS_GEN_CERT "node.crt"
#define PK_TLS_GEN_KEY "node.key"

/* Writes ca.key, ca.crt, node.key and node.crt into dir (made if missing),
 * unless node.crt is there already.  0, or -1. */
int pk_tls_gen(const char *dir);

#endif

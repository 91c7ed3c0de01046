/*
 * cli: the subcommands of the partkv binary.  Each takes the argument
 * vector starting at its own name and returns the process exit status:
 * 0 success, 1 failure, 2 usage error (after a one-line message).
 */
#ifndef PK_CLI_CLI_H
#define PK_CLI_CLI_H

int pk_cli_sim(int argc, char **argv);

#include <stddef.h>

/* 1 when s is "host:port" with a port in 1..65535. */
int pk_cli_host_port(const char *s);
struct pk_server_config;
/* --NAME VAL if NAME is one of the TLS flags (tls-port, tls-cert-file,
 * tls-key-file, tls-ca-cert-file, tls-auth-clients, tls-cluster): 1 when
 * taken, -1 after a one-line message for a bad value, 0 for another
 * flag. */
int pk_cli_tls_flag(const char *name, const char *val,
                    struct pk_server_config *c);
/* The TLS flags agree with each other; -1 after a one-line message. */
int pk_cli_tls_check(const char *prog, const struct pk_server_config *c);
/* --tls for the tools: PARTKV_TLS_CA_CERT_FILE (and optionally
 * PARTKV_TLS_CERT_FILE, PARTKV_TLS_KEY_FILE) in the environment make every
 * connection to a node TLS.  0, or -1 after a one-line message. */
int pk_cli_tls_env(void);
/* 1 for "etcd://HOST:PORT[,...]" or "etcds://..." (TLS). */
int pk_cli_is_etcd(const char *s);

/* Splits such a "host:port" into host (cap bytes) and *port; 0, or -1
 * when s is not one. */
int pk_cli_split_host_port(const char *s, char *host, size_t cap, int *port);
int pk_cli_range(int argc, char **argv);
int pk_cli_top(int argc, char **argv);

struct pk_rr;

/* One call to the node at "host:port" (2 s timeouts): 0 with *r (the
 * caller frees it), or an error. */
int pk_cli_call(const char *addr, int argc, const char *const *argv,
                struct pk_rr **r);

struct pk_pmap;

/* The map of the node at target (PK.MAP, decoded): 0, or 1 after a
 * message naming who. */
int pk_cli_fetch_map(const char *who, const char *target, struct pk_pmap **m);

/* A reply value as a number (integer, double or numeric text; 0 else). */
double pk_cli_number(const struct pk_rr *v);
int pk_cli_sim_compare(int argc, char **argv);
int pk_cli_server(int argc, char **argv);
int pk_cli_cluster(int argc, char **argv);
int pk_cli_cluster_view(int argc, char **argv);
int pk_cli_proxy(int argc, char **argv);
int pk_cli_node(int argc, char **argv);
int pk_cli_rebalance(int argc, char **argv);

#endif

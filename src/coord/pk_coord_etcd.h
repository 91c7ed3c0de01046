/*
 * pk_coord_etcd: the coordinator backend that is an etcd cluster, reached
 * through etcd's v3 JSON gateway (etcd 3.4's /v3/... paths) with libcurl
 * driven by a libuv loop.
 *
 * Every operation is one HTTP request; callbacks always come later, from
 * the loop, never before the operation returns.  An operation that cannot
 * reach etcd (every endpoint tried once, each attempt bounded by
 * PK_ETCD_HTTP_TIMEOUT_MS, see pk_etcd_http.h) answers PK_EIO: its outcome
 * is unknown.
 *
 * Where etcd differs from the embedded backend (pk_coord.h allows both):
 *
 *   - Lease TTLs are whole seconds: ttl_ms is rounded up, and the TTL
 *     granted (res->ttl_ms) is what etcd chose -- at least its minimum
 *     TTL, 1.5 election timeouts rounded up to a second (2 s by default).
 *   - Expiry is etcd's: a lease is checked about every 500 ms, so its keys
 *     vanish up to about a second after the TTL.
 *   - Revoking or expiring a lease deletes all its keys in one revision
 *     (several events with the same revision), not one revision per key.
 *   - etcd's header revision of an empty store is 1, not 0.
 *   - The result of an operation that failed (PK_ENOTFOUND for a missing
 *     lease, PK_EIO) has revision 0: etcd's error answers carry none.
 *   - etcd refuses requests larger than its --max-request-bytes (1.5 MiB by
 *     default) with PK_EIO, below PK_COORD_VALUE_MAX.
 *
 * Watches are long-lived streaming requests.  When one breaks (connection
 * lost, member restarted, "no leader") it is opened again, possibly on
 * another endpoint, from the revision after the last event delivered, and
 * events already delivered are dropped, so each still arrives exactly
 * once.  It ends with PK_ERANGE when etcd has compacted the revisions it
 * needs, and with PK_EIO when no endpoint takes it back (each endpoint
 * tried once per loss) or an answer is malformed.
 */
#ifndef PK_COORD_PK_COORD_ETCD_H
#define PK_COORD_PK_COORD_ETCD_H

#include "coord/pk_coord.h"

struct uv_loop_s;

/*
 * Opens a coordinator on the etcd cluster at endpoints, "host:port" or
 * several separated by commas, each optionally prefixed "etcd://" or
 * "http://" ("https://" uses TLS with the system's CAs).  loop is
 * borrowed and must outlive the handle; after pk_coord_free, run it once
 * more (uv_run with UV_RUN_NOWAIT) so the handles it closed are freed.
 * Nothing is sent until the first operation, so an unreachable cluster is
 * not an error here.  Returns 0, PK_EINVAL (no or malformed endpoints),
 * PK_ENOMEM or PK_EIO (libcurl or libuv could not be set up).
 */
int pk_coord_etcd_open(struct uv_loop_s *loop, const char *endpoints,
                       pk_coord **out);

/* Requests leave from this local IP address (a node bound to one address
 * talks to etcd from it; NULL or "": any).  c must be an etcd coordinator. */
void pk_coord_etcd_set_source(pk_coord *c, const char *ip);

/* etcds:// (https) endpoints: the client certificate, key and CA to use
 * (pk_etcd_http_set_tls).  0 or PK_ENOMEM. */
int pk_coord_etcd_set_tls(pk_coord *c, const char *cert, const char *key,
                          const char *ca);

#endif

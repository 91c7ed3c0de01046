/*
 * pk_climit: per-client output buffer limits by class, as Redis 7.0's
 * client-output-buffer-limit (networking.c, checkClientOutputBufferLimits):
 * a connection whose replies not yet taken by the socket reach its
 * class's hard limit, or stay at or above the soft limit for more than
 * the soft seconds, is closed at once, its pending replies dropped, with
 * Redis's log line.  Limits of 0 are off (the "normal" default): such a
 * client that never reads is blocked by pk_conn.c's backpressure
 * (PK_CONN_OBUF_HIGH) instead, as before.  With a limit, the limit is
 * checked before each command, so a client over it is closed rather
 * than blocked; a hard limit above the backpressure mark is only reached
 * by one large reply, as the mark stops a pipeline before it.
 *
 * Classes in partkv: a connection that presented the cluster secret
 * (PK.AUTH: another node, sending forwarded commands, replication and
 * move traffic, and reading the replies) is "replica", the class Redis
 * gives its node-to-node streams, so that a limit meant for clients
 * does not cut the cluster's own links; every other connection is
 * "normal".  partkv has no SUBSCRIBE, so none is "pubsub", whose limits
 * are still kept and shown as Redis does.  (The replication streams
 * themselves leave a leader on its own outgoing links, pk_link.c, with a
 * window of messages in flight, not on these connections.)
 *
 * Internal to src/server; runs on the loop thread.
 */
#ifndef PK_SERVER_PK_CLIMIT_H
#define PK_SERVER_PK_CLIMIT_H

typedef struct pk_conn pk_conn;
typedef struct pk_server pk_server;

/* The class (PK_CLIENT_NORMAL...) whose limits apply to c. */
int pk_climit_class(const pk_conn *c);

/*
 * Checks c against its class's limits, starting or clearing the soft
 * limit's clock.  Over them, logs, closes c (pk_conn_close) and returns
 * 1; the caller must not use c for anything but its freed flag then.
 * Else 0.
 */
int pk_climit_check(pk_conn *c);

/* pk_climit_check on every connection (once a second): the soft limit's
 * time runs out also for a connection that runs nothing meanwhile. */
void pk_climit_sweep(pk_server *s);

#endif

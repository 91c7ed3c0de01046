/*
 * pk_agent: a node's link to the coordinator, on its own thread.
 *
 * The agent registers the node under a lease (/partkv/<cluster>/nodes/
 * <name> = "host:port"), renews the lease, and polls the partition map
 * (/partkv/<cluster>/map) every PK_AGENT_POLL_MS; a map with a new
 * mod_revision is decoded and handed to the event loop through a
 * uv_async, so every router applies a change within about that period.
 * It reconnects by itself when the coordinator is unreachable, and the
 * node keeps serving with the map it holds meanwhile.
 *
 * It uses a blocking client (pk_sclient) so that coordinator latency never
 * stalls the loop.
 */
#ifndef PK_SERVER_PK_AGENT_H
#define PK_SERVER_PK_AGENT_H

#include <stdint.h>

#define PK_AGENT_POLL_MS 30
#define PK_AGENT_LEASE_MS 3000
#define PK_CLUSTER_PREFIX "/partkv/default/"

typedef struct pk_server pk_server;
typedef struct pk_agent pk_agent;

/*
 * Starts the agent of server s: coordinator at host:port, secret for
 * PK.AUTH.  With secret NULL (a proxy), host:port is any cluster node and
 * the agent follows its PK.MAP instead.  The strings are copied.  Returns 0,
 * PK_ENOMEM or PK_EIO (the thread could not start).
 */
int pk_agent_start(pk_server *s, const char *host, int port, const char *secret,
                   pk_agent **out);

/* Stops the thread, revokes nothing (the lease expires), frees.  NULL ok. */
void pk_agent_stop(pk_agent *a);

#endif

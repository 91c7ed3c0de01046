/*
 * pk_ctrl: the failover controller.  Every cluster node runs one on its own
 * thread; the one that holds the controller lease in the coordinator
 * (/partkv/<cluster>/controller, PK_CTRL_LEASE_MS) acts, the others wait
 * for the key to go away.
 *
 * Every PK_CTRL_TICK_MS the acting controller compares the map with the
 * node registrations (each under the node's own lease, pk_agent.h):
 *
 *   - a node whose registration expired is marked DOWN, one that
 *     registered again UP;
 *   - every partition led by a node that is not registered gets a new
 *     leader: the controller fences the partition's followers at leader
 *     epoch + 1 (PK.REPL FENCE, pk_repl.h), which answer the leader epoch
 *     they follow and their last log position; with answers from at least
 *     half of the replicas, the in-sync follower (it follows the current
 *     epoch) with the highest position becomes leader, the others stay
 *     followers, the old leader becomes the last follower; one map CAS;
 *   - a node DOWN for longer than --replace-after loses its follower
 *     places to live nodes that do not hold the partition yet (fewest
 *     replicas first); the new followers copy by snapshot;
 *   - with every node up and nothing else to do, leaderships go from nodes
 *     above their share to followers below it (up to 2048 a second): the
 *     leader stops serving the partition, sends its followers every record
 *     and a release (PK.REPL HANDOFF), and the promotion is the
 *     failover's.  So a node that comes back leads again.
 *
 * A follower refuses the fence while its promise to the old leader runs,
 * so the old leader has stopped serving before anyone is promoted.
 */
#ifndef PK_SERVER_PK_CTRL_H
#define PK_SERVER_PK_CTRL_H

#define PK_CTRL_TICK_MS 100
#define PK_CTRL_LEASE_MS 2000

typedef struct pk_server pk_server;
typedef struct pk_ctrl pk_ctrl;

/* Starts the controller thread of s; coordinator at host:port.  Returns 0,
 * PK_ENOMEM or PK_EIO. */
int pk_ctrl_start(pk_server *s, const char *host, int port, const char *secret,
                  pk_ctrl **out);
/* Stops the thread (the lease, if held, expires) and frees.  NULL ok. */
void pk_ctrl_stop(pk_ctrl *c);

#endif

/*
 * pk_move: partition moves inside a node -- the source's copy sessions,
 * the target's import, the write fence of the switch, and the janitor
 * that drops partitions a node no longer holds.
 *
 * A move of partition p from its leader S to node T is recorded in the
 * map by the rebalance driver (pk_pmap_move_begin: T becomes the move
 * target, and a learner).  S notices it in its map and opens a session to
 * T, grouping every partition moving from S to T:
 *
 *   BEGIN   T checks its own map names it the target of each partition
 *           (else TRYAGAIN: its map is behind) and drops any old copy;
 *   COPY    S exports each partition from one read transaction (a
 *           snapshot at log position seq_p) in chunks, throttled to the
 *           session's share of the cluster-wide rate; T imports them;
 *   TAIL    S ships the change-log records after seq_p (held from trimming
 *           meanwhile) in rounds until a round is small;
 *   FENCE   S holds every new write to the partitions (the commands wait,
 *           they are not refused), and in the next loop iteration -- once
 *           the writes already run are committed -- ships the last records
 *           and asks T to sync them to disk;
 *   COMMIT  S's agent commits the moves in the coordinator's map by CAS
 *           (pk_pmap_move_commit: T leads, leader epoch + 1; a move
 *           cancelled meanwhile stays with S);
 *   PUSH    S sends the new map to T, so T serves before its next poll;
 *           then S lifts the fence: held writes run again and get MOVED
 *           (or are forwarded) to T, and the janitor drops S's copy.
 *
 * Failure before COMMIT -- T unreachable or slow past a deadline, a
 * cancelled move, an error -- lifts the fence with nothing switched; S
 * still owns the partitions and retries later (the map still says they
 * move) unless the move was cancelled.  During COMMIT the fence stays
 * until the coordinator has decided.  A crashed S restarts the session
 * from a snapshot (T drops its partial copy on BEGIN); a crashed T loses
 * nothing S acknowledged.  Exactly one node leads a partition at any
 * time: the map says which, and S writes nothing after the fence.
 *
 * Janitor: a node drops, in bounded steps, the data of partitions its map
 * says it neither holds nor is receiving.  It does nothing while the node
 * is not in its map.
 */
#ifndef PK_SERVER_PK_MOVE_H
#define PK_SERVER_PK_MOVE_H

#include <stdint.h>

typedef struct pk_server pk_server;
typedef struct pk_conn pk_conn;
typedef struct pk_cmd_ctx pk_cmd_ctx;
typedef struct pk_mover pk_mover;

/* Sets up moves for a cluster node with a store.  Returns 0 or ENOMEM. */
int pk_move_init(pk_server *s);
/* Ends every session (fences lifted, nothing committed) and frees. */
void pk_move_free(pk_server *s);

/* A new map is installed -- polled from the coordinator, or pushed by a
 * peer: start, check or end sessions; wake the janitor. */
void pk_move_map_changed(pk_server *s, int polled);

/* 1 while writes to partition part wait for a switch. */
int pk_move_fenced(const pk_server *s, uint32_t part);

/* Whether active expiry may delete keys of part here (a leader, not
 * fenced; every partition outside cluster mode). */
int pk_move_may_expire(void *server, uint32_t part);

/* The connection closed: imports it fed are forgotten. */
void pk_move_conn_closed(pk_server *s, pk_conn *c);

/* PK.MOVE (internal, target side) and PK.MOVES (sessions in flight). */
void pk_cmd_pk_move(pk_cmd_ctx *x);
void pk_cmd_pk_moves(pk_cmd_ctx *x);

#endif

/*
 * pk_multi: transactions -- MULTI, EXEC, DISCARD, WATCH, UNWATCH -- with
 * Redis 7.0's semantics and replies.  Internal to src/server.
 *
 * Queueing.  Between MULTI and EXEC a connection's commands are checked
 * (name, arity, authentication, routing) and copied to its queue with a
 * +QUEUED reply; EXEC, DISCARD, MULTI, WATCH, QUIT and RESET run at once.
 * A command rejected while queueing marks the transaction, and EXEC then
 * answers -EXECABORT without running anything.
 *
 * Cluster.  A transaction runs on one node in one slot: a queued command
 * whose keys this node does not lead gets -MOVED (also in forward mode: a
 * forwarded command could not run inside this node's transaction), one
 * whose slot differs from the transaction's first key's gets -CROSSSLOT;
 * both mark it.  EXEC routes the whole transaction again (a move may
 * have happened meanwhile): -MOVED discards it, a fenced partition holds
 * EXEC until the switch.
 *
 * Atomicity.  EXEC runs every queued command inside the loop iteration's
 * one write transaction, so no other client's command comes in between,
 * and the writes to the transaction's partition form one change record
 * (pk_txn_group_begin, pk_store_log.h): followers and moves see all of
 * an EXEC or none.  Its reply is gated until replicas acknowledge that
 * record, like any write's (pk_repl_note).
 *
 * WATCH.  A table from key bytes to (connection, key) entries, touched
 * after every write command that changed data (pk_txn_changes moved),
 * for the keys of that command (pk_cmd_keyruns); by FLUSHALL for the keys
 * that exist; by replication for every watched key of the partition a
 * record arrives for (this node then follows it: READONLY); and by a new
 * map for keys of partitions this node no longer serves.  Expiry needs
 * no hook: WATCH notes the key's deadline, and EXEC fails once it passed.
 * A touched connection fails its next EXEC with a null array.  With
 * nothing watched the touch costs one compare per write.  The table and
 * its touches are pk_watch.h.
 */
#ifndef PK_SERVER_PK_MULTI_H
#define PK_SERVER_PK_MULTI_H

#include <stdint.h>

typedef struct pk_cmd pk_cmd;
typedef struct pk_cmd_ctx pk_cmd_ctx;
typedef struct pk_conn pk_conn;
typedef struct pk_server pk_server;

/* 1 for the commands that run at once inside MULTI (PK_CMD_TXN_NOW:
 * EXEC, DISCARD, MULTI, WATCH, QUIT, RESET), else 0: those are queued. */
int pk_multi_runs_now(const pk_cmd *cmd);

/* Inside MULTI: checks cmd and queues a copy of x's arguments, replying
 * +QUEUED or the error that marks the transaction. */
void pk_multi_queue(pk_cmd_ctx *x, const pk_cmd *cmd);

/* A command was rejected: inside MULTI, EXEC will abort. */
void pk_multi_reject(pk_conn *c);

/* RESET and close: the transaction is discarded, nothing is watched. */
void pk_multi_conn_reset(pk_conn *c);

/* A new map: touches keys of partitions this node neither leads nor
 * follows any more. */
void pk_watch_map_changed(pk_server *s);

/* The commands. */
void pk_cmd_multi(pk_cmd_ctx *x);
void pk_cmd_exec(pk_cmd_ctx *x);
void pk_cmd_discard(pk_cmd_ctx *x);
void pk_cmd_watch(pk_cmd_ctx *x);
void pk_cmd_unwatch(pk_cmd_ctx *x);

#endif

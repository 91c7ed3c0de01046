/*
 * pk_repl: replication -- every partition's leader streams its change log
 * to the partition's followers, and a reply leaves only once the write it
 * acknowledges is on enough replicas (--acks leader|quorum|all).
 *
 * Leader side.  One stream per follower node, over a call link
 * (pk_link_call): a message carries entries for any of the partitions the
 * two share, and a message with none is a heartbeat (every 100 ms).
 *
 *   PK.REPL PUSH leader_id n  {kind part leader_epoch seq payload} x n
 *     kind H  hello: the follower answers [follow_epoch, last_seq]
 *          A  accept: the follower's log is a prefix of ours up to seq;
 *             it now follows leader_epoch
 *          L  one change-log record at seq (pk_store_log_apply)
 *          S  a snapshot taken at seq: drop the partition, import it
 *          R  release: the leader hands the partition over (PK.REPL
 *             HANDOFF from the controller) and sent every record up to
 *             seq; the follower may be fenced at once
 *   -> one result per entry (last seq, or -FENCED epoch / -RESYNC), then
 *      the partitions this follower was fenced from us: [part, epoch]...
 *
 * A follower continues from its own log only if it is a prefix of the
 * leader's: it followed this leader epoch, or it followed the epoch this
 * leader was promoted from and is not past the position it was promoted
 * at.  Otherwise, or when the leader's log was trimmed, it gets a snapshot.
 *
 * Each follower persists, per partition, the leader epoch it follows and
 * the highest epoch it was fenced at (DIR/repl.state, written before a
 * reply that depends on it leaves).
 *
 * Fencing.  A follower accepts nothing from a leader epoch below its fence
 * epoch.  The controller (pk_ctrl.c) fences the followers of a dead
 * leader (PK.REPL FENCE), which answer their positions; a follower refuses
 * (-BUSY) while its promise to that leader runs: it promised not to be
 * fenced for FOLLOW_LEASE_MS after each message it accepted.  A leader
 * serves a partition -- reads and acknowledgements alike -- only while a
 * majority of its followers' promises run (counted from the time it sent
 * the message), so once the controller could fence a majority, the old
 * leader has stopped answering.
 *
 * Client side.  After the group commit, a connection whose commands
 * touched replicated partitions keeps its replies until each of those
 * partitions has its records on enough replicas (reads too: a read must not
 * show a write that may still be lost) and the leader's promise holds; it
 * runs nothing else meanwhile.  After ACK_TIMEOUT_MS, or when the leader
 * learns it was fenced, those replies become -TRYAGAIN errors.
 *
 * The code is split by side (leader streams, follower, gates and WAIT,
 * persisted state); pk_repl_int.h lists the files.
 */
#ifndef PK_SERVER_PK_REPL_H
#define PK_SERVER_PK_REPL_H

#include <stdint.h>

typedef struct pk_server pk_server;
typedef struct pk_conn pk_conn;
typedef struct pk_cmd_ctx pk_cmd_ctx;
typedef struct pk_repl pk_repl;

#define PK_REPL_FOLLOW_LEASE_MS 1000 /* a follower's promise */
#define PK_REPL_READ_LEASE_MS 800    /* a read lease, at most */
#define PK_REPL_LEASE_MARGIN_MS 200  /* clock-rate slack on a promise */

/* Sets up replication for a cluster node with a store.  0 or ENOMEM. */
int pk_repl_init(pk_server *s);
/* Shutting down: answers that arrive from now on are dropped.  Free only
 * after the loop has closed every handle and link. */
void pk_repl_stop(pk_server *s);
void pk_repl_free(pk_server *s);

/* A new map is installed: streams follow it, gates re-checked. */
void pk_repl_map_changed(pk_server *s);

/* After a keyed command on partition x->part ran here as its leader:
 * the connection's replies wait for that partition's log position. */
void pk_repl_note(pk_cmd_ctx *x, int write);

/* Check phase, before the commit: the records of the open transaction go
 * to the followers now, so that they write them while we commit
 * (Raft's parallel append).  A write is acknowledged once a quorum of
 * copies has it, ours committed among them: the loop runs our commit
 * before any follower's answer. */
void pk_repl_precommit(pk_server *s);

/* 1 while records of the open transaction have gone out (the commit
 * under way failing then may leave the write applied by the others). */
int pk_repl_sent_early(const pk_server *s);

/* Check phase, after a successful commit: state persisted, streams fed. */
void pk_repl_committed(pk_server *s);

/* Check phase: 1 if c's replies must wait (c is then parked), else 0. */
int pk_repl_gate(pk_conn *c);

/* The iteration's commit failed: the state goes back to the file. */
void pk_repl_commit_failed(pk_server *s);

/* The iteration's commit failed: c's waits are moot. */
void pk_repl_forget_needs(pk_conn *c);

/* The connection closed: off every list. */
void pk_repl_conn_closed(pk_server *s, pk_conn *c);

/* 1 while the controller moves the leadership of part away from us. */
int pk_repl_handing_off(const pk_server *s, uint32_t part);

/* READONLY: this node follows partition part (serves stale reads). */
int pk_repl_follows(const pk_server *s, uint32_t part);

/* The leader epoch this node follows part at, or 0 when it does not
 * follow part. */
uint64_t pk_repl_follow_epoch(const pk_server *s, uint32_t part);

/* 1 when this node leads part at epoch and streams it to node: node's log
 * of part is then a prefix of ours (a read index, pk_hotread.h). */
int pk_repl_streams_to(const pk_server *s, uint32_t part, uint64_t epoch,
                       uint32_t node);

/*
 * Read leases (pk_hotread.h): the leader of part lets follower node serve
 * reads of part from its own copy, without asking, for the milliseconds
 * returned (0: no lease) from when node asked -- as quorum leases do.
 * Until the lease ends on the leader's clock, every write of part waits
 * for node's copy as well as for --acks; a lease ends no later than the
 * leader's own (the followers' promises), so no other node can be made
 * leader while it runs; a handoff releases part, and a move switches it,
 * only once its leases ended; and a node that restarts acknowledges
 * nothing until the leases it granted before may have ended (it keeps
 * their end in the file repl.leases).
 */
uint64_t pk_repl_read_lease(pk_server *s, uint32_t part, uint32_t node);

/* Leader: followers read part -- send them its commit position for a
 * while (entries 'C' of the stream). */
void pk_repl_want_commits(pk_server *s, uint32_t part);

/* Follower: the leader committed part up to seq at epoch.  A read served
 * here from part waits until what it saw is committed. */
void pk_repl_commit_seen(pk_server *s, uint32_t part, uint64_t epoch,
                         uint64_t seq);

/* Follower: 1 while a read lease of part may be used here -- we are
 * neither fenced at a newer epoch nor released by part's leader (either
 * way another node may be made leader without our promise). */
int pk_repl_lease_usable(const pk_server *s, uint32_t part);

/* 1 while a read lease of part granted here may run. */
int pk_repl_read_leased(const pk_server *s, uint32_t part);

/* The commit position of part, which this node leads: its records up to
 * it are on enough copies to be acknowledged (0: none known, or not the
 * leader, or its lease has run out). */
uint64_t pk_repl_commit_seq(const pk_server *s, uint32_t part);

/* 1 when every follower of part (which this node leads) streams it and
 * has its records up to seq. */
int pk_repl_all_have(const pk_server *s, uint32_t part, uint64_t seq);

/* PK.REPL (internal) and WAIT. */
void pk_cmd_pk_repl(pk_cmd_ctx *x);
void pk_cmd_wait(pk_cmd_ctx *x);

/* INFO replication section text into b (a pk_obuf). */
struct pk_obuf;
void pk_repl_info(pk_server *s, struct pk_obuf *b);

#endif

/*
 * pk_hotread: reads of a read-hot key served by every replica, not only
 * by the leader -- without a stale read.
 *
 * Each node samples (at --hotkeys-sample) the reads it receives for
 * partitions led elsewhere, in a small top-K tracker of its own.  A key
 * read here more than --hot-key-reads times a second is read-hot: while
 * this node follows the key's partition, a read of it is served from the
 * local copy instead of being forwarded (or answered MOVED), once the
 * copy is known to hold every write the leader acknowledged before the
 * read arrived.
 *
 * That knowledge is a read index (as Raft's ReadIndex): the follower asks
 * the leader, on a node-to-node link, PK.READINDEX part epoch node; the
 * leader answers its log position of part once that position is
 * acknowledged under --acks and its leadership lease holds (the reply is
 * gated like any read's), and only while it leads part at the epoch the
 * follower follows and streams to it (so the follower's log is a prefix
 * of its own).  The follower serves a read locally when the read's bytes
 * arrived before the index was asked for and its own log of part reaches
 * the answer.  A read that finds no answer covering it waits (its
 * connection is held) for an index asked at the end of the loop iteration
 * that brought it: one index per partition and iteration serves every
 * read that arrived by then, and up to four are in flight so that a read
 * waits about one round trip.  An index refused, lost or not answered
 * within a second sends the reads waiting for it to the leader, as
 * before.
 *
 * A proxy (no store) keeps the same tracker of the reads it routes and
 * sends a read of a read-hot key to a random replica of its partition
 * that is up, instead of the leader.
 *
 * Reads served so are linearizable: a write acknowledged before the read
 * began is in the leader's log position the index names; a write the read
 * sees is durable on the leader and this node.
 */
#ifndef PK_SERVER_PK_HOTREAD_H
#define PK_SERVER_PK_HOTREAD_H

#include <stdint.h>

#include "server/pk_ctx.h"

typedef struct pk_server pk_server;
typedef struct pk_obuf pk_obuf;

/* Sets up replica reads when --hot-key-reads > 0 and sampling is on.
 * Returns 0 or PK_ENOMEM. */
int pk_hotread_init(pk_server *s);
void pk_hotread_free(pk_server *s);

/* Once a second: the read-hot keys from the tracker, stuck indexes
 * dropped. */
void pk_hotread_tick(pk_server *s);

/*
 * Routing of a read-only command x (cmd) whose keys are in part, led by
 * another node: -1 when it is not a replica read (route it as before), 1
 * to run it here now, 0 when its connection waits for a read index (or,
 * on a proxy, when it was sent to a replica).
 */
int pk_hotread_route(pk_cmd_ctx *x, const pk_cmd *cmd, uint32_t part);

/* 1 when this node follows part and a read of it here now sees every
 * write acknowledged before (a read lease runs); else 0, and a lease is
 * asked for.  The reply of such a read must wait for the commit
 * (pk_repl_note with x->part).  Salted counters read their parts so. */
int pk_hotread_covered(pk_server *s, uint32_t part);

/* At the end of a loop iteration: one read index asked per partition for
 * the reads that arrived in it. */
void pk_hotread_flush(pk_server *s);

/* After a commit: reads waiting for their log to reach an index run. */
void pk_hotread_committed(pk_server *s);

/*
 * A small cache of GET replies to the keys read-hot on this node (as a
 * replica, or as the leader by its hot-key tracker), so that a read-hot
 * key costs no store lookup.  An entry holds while its partition's log
 * position (every change of a partition's data is a record of its log),
 * the map and the key's expiry do; a reply from it is gated as the read
 * it stands for.  pk_hotread_cached: 1 when x's reply came from it; else
 * *h is key's hash when the reply is to be kept (0: not).
 * pk_hotread_keep (h != 0): after GET of key answered rc, appending from
 * out0.
 */
int pk_hotread_cached(pk_cmd_ctx *x, pk_txn *t, pk_slice key, uint64_t *h);
void pk_hotread_keep(pk_cmd_ctx *x, pk_txn *t, pk_slice key, uint64_t h, int rc,
                     size_t out0);

/* The iteration's commit failed: the cache may hold what it wrote. */
void pk_hotread_commit_failed(pk_server *s);

/* PK.READINDEX part epoch node (node to node). */
void pk_cmd_pk_readindex(pk_cmd_ctx *x);

/* INFO stats lines (hot_reads_*). */
void pk_hotread_info(pk_server *s, pk_obuf *b);

#endif

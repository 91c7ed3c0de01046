/*
 * pk_ft: secondary indexes on a node -- the RediSearch command subset
 * (FT.CREATE, FT.ALTER, FT.INFO, FT._LIST, FT.DROPINDEX, FT.DROP,
 * FT.SEARCH, FT.AGGREGATE) over local indexes kept beside the data
 * (store/pk_ftidx.h) and, in a cluster, global ones partitioned by value
 * and fed asynchronously from per-partition outboxes (pk_ft_global.c).
 *
 * Definitions: in a cluster they ride the partition map (pk_pmap.h,
 * edited by the agent), so every node learns of an index, and of its
 * drop, as it learns of a move; a node alone keeps them in the file
 * `ftdefs` of its data directory.
 *
 * Writes: after every write command a node runs as leader, the hashes it
 * named are re-indexed in the same transaction (pk_ft_note_write), so an
 * index entry is committed, replicated and acknowledged with the write
 * that made it.  Active expiry drops a key's entries itself (store).
 *
 * Background: a janitor indexes the data that was there before an index
 * existed (or before FT.ALTER added a field), a slice at a time, in the
 * partitions this node leads -- writes go on meanwhile -- removes the
 * entries of dropped indexes, builds the term filters that let exact
 * lookups of a local index skip partitions (pk_ft_filter.c), and runs the
 * global indexes' feeder.  FT.INFO's percent_indexed is the share of led
 * partitions done, summed over the cluster.
 *
 * Queries (pk_ft_search.c): the node that receives FT.SEARCH or
 * FT.AGGREGATE asks each node that leads partitions, per its map, to run
 * the query on exactly those partitions (PK.FTQUERY epoch parts ...); a
 * node that no longer leads one of them refuses, and the query runs
 * again on a newer map, so a move or a failover gives neither a
 * duplicate nor a missing document.  Each node answers its best
 * offset + count results (or partial groups); the receiver merges.  A
 * query on a global index asks only the leaders of the partitions its
 * lookups hit (one, for one value).
 */
#ifndef PK_SERVER_PK_FT_H
#define PK_SERVER_PK_FT_H

#include "server/pk_ctx.h"

int pk_ft_init(pk_server *s);
void pk_ft_free(pk_server *s);

/* The connection closed: answers waiting for it are dropped. */
void pk_ft_forget(pk_server *s, pk_conn *c);

/* After write command cmd ran in x: the documents it named re-indexed. */
void pk_ft_note_write(pk_cmd_ctx *x, const pk_cmd *cmd);

void pk_cmd_ft_create(pk_cmd_ctx *x);
void pk_cmd_ft_alter(pk_cmd_ctx *x);
void pk_cmd_ft_dropindex(pk_cmd_ctx *x);
void pk_cmd_ft_drop(pk_cmd_ctx *x);
void pk_cmd_ft_list(pk_cmd_ctx *x);
void pk_cmd_ft_info(pk_cmd_ctx *x);
void pk_cmd_ft_search(pk_cmd_ctx *x);
void pk_cmd_ft_aggregate(pk_cmd_ctx *x);
/* PK.FTQUERY epoch parts verb args... (node to node). */
void pk_cmd_pk_ftquery(pk_cmd_ctx *x);
/* PK.FTGAPPLY epoch sender ops (node to node: global index entries). */
void pk_cmd_pk_ftgapply(pk_cmd_ctx *x);

/* Active expiry deleted keys: the outboxes their deletes went to are
 * looked at by the next round of the global indexes' feeder. */
void pk_ft_note_expired(pk_server *s);

/* 1 when FLUSHALL must be refused: a cluster with a global index. */
int pk_ft_blocks_flush(pk_server *s);

/* INFO's search section. */
void pk_ft_info(pk_server *s, pk_obuf *b);

#endif

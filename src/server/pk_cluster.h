/*
 * pk_cluster: a node's view of the cluster -- who it is, the partition map
 * it currently holds -- and what follows from it: request routing
 * (MOVED, CROSSSLOT, CLUSTERDOWN, ASKING) and the Redis Cluster command
 * family (CLUSTER SLOTS, SHARDS, NODES, INFO, KEYSLOT, MYID,
 * COUNTKEYSINSLOT, GETKEYSINSLOT; READONLY, READWRITE, ASKING).
 *
 * A node without a map (plain `partkv server`) is not in cluster mode and
 * serves every key.  The map is replaced whole (pk_cluster_set_map) when
 * the coordinator publishes a new epoch; lookups are one array index.
 */
#ifndef PK_SERVER_PK_CLUSTER_H
#define PK_SERVER_PK_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/pk_pmap.h"

typedef struct pk_cluster pk_cluster; /* its state: pk_srv.h */
typedef struct pk_cmd pk_cmd;
typedef struct pk_cmd_ctx pk_cmd_ctx;

/* Takes ownership of map (freeing the previous one); finds self by name. */
void pk_cluster_set_map(pk_cluster *cl, pk_pmap *map);

void pk_cluster_free(pk_cluster *cl);

/*
 * Decides whether the command in x may run here.  Returns 1 to run it, or
 * 0 after replying -MOVED, -ASK-less -CROSSSLOT or -CLUSTERDOWN.
 */
int pk_cluster_route(pk_cmd_ctx *x, const pk_cmd *cmd);

/*
 * MULTI: may cmd be queued here?  Its keys must share one slot that this
 * node leads (or, READONLY and cmd a read, follows); *slot gets it (-1:
 * no key, or not a cluster).  Returns 1, or 0 after replying -CROSSSLOT,
 * -MOVED or -CLUSTERDOWN.  Never forwards: a transaction's commands run
 * together here or not at all, so forward mode answers -MOVED too.
 */
int pk_cluster_route_queued(pk_cmd_ctx *x, const pk_cmd *cmd, int *slot);

/*
 * EXEC of a transaction whose keys lie in slot (-1: none): routes it as
 * one command (write: any queued command writes) -- 1 to run it here,
 * with x->have_part set when this node leads slot; 0 after replying
 * -MOVED, -TRYAGAIN, -CLUSTERDOWN, or after holding EXEC on a fenced
 * partition (pk_conn_hold: it runs again after the switch).
 */
int pk_cluster_route_exec(pk_cmd_ctx *x, int slot, int write);

/*
 * The partition of a key: its Redis Cluster slot, hash mod P when the map
 * uses the hash scheme, or the range holding it in the range scheme
 * (npartitions, which no node leads, when the map's bounds are unusable).
 */
uint32_t pk_cluster_part(const pk_cluster *cl, const void *key, size_t len);

/* PK.MAP: the encoded map this node holds (what proxies follow). */
void pk_cmd_pk_map(pk_cmd_ctx *x);

/* The CLUSTER command, and READONLY / READWRITE / ASKING. */
void pk_cmd_cluster(pk_cmd_ctx *x);
void pk_cmd_readonly(pk_cmd_ctx *x);
void pk_cmd_readwrite(pk_cmd_ctx *x);
void pk_cmd_asking(pk_cmd_ctx *x);

/* CLUSTER SLOT-STATS (pk_cmd_slotstats.c), on a node with a map. */
void pk_cmd_cluster_slot_stats(struct pk_cmd_ctx *x);

#endif

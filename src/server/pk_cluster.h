/*
 * pk_cluster: a node's view of the cluster -- who it is, the partition map
 * it currently holds (the struct is in pk_srv.h) -- and the Redis Cluster
 * command family (CLUSTER SLOTS, SHARDS, NODES, INFO, KEYSLOT, MYID,
 * COUNTKEYSINSLOT, GETKEYSINSLOT; READONLY, READWRITE, ASKING).  Request
 * routing by the map (MOVED, CROSSSLOT, CLUSTERDOWN, ASKING) is
 * pk_route.h.
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
typedef struct pk_cmd_ctx pk_cmd_ctx;

/* Takes ownership of map (freeing the previous one); finds self by name. */
void pk_cluster_set_map(pk_cluster *cl, pk_pmap *map);

void pk_cluster_free(pk_cluster *cl);

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

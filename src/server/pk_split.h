/*
 * pk_split: splitting a range of the range scheme, on the node that leads
 * it, and the store-local half on every replica.
 *
 * PK.SPLIT key (cluster secret): the leader of the range P = [lo, hi)
 * holding key splits it at key, lo < key < hi, into P = [lo, key) and a
 * new range Q = [key, hi) on the same replicas with the same leader:
 *
 *   1. fence   writes to P are held (pk_conn_hold), reads go on;
 *   2. drain   it waits until every follower has acknowledged P's last
 *              record, so that all copies of P are alike;
 *   3. edit    the agent commits the map edit (pk_pmap_split) in one CAS;
 *   4. relabel every node that installs a map in which a range it holds
 *              has a new upper bound moves its keys at or above the bound
 *              into the range that now holds them, if it holds that one
 *              too (pk_split_reconcile, pk_store_part_relabel) -- the
 *              leader and the followers alike, each its own copy, before
 *              any command sees the map;
 *   5. lift    held writes run again, routed by the new map.
 *
 * Nothing is copied between nodes.  The map is the only record of the
 * split: a node killed anywhere after the edit relabels when it starts
 * and installs the map (its copy of P was complete at step 2); killed
 * before it, the split did not happen, and held writes were never
 * acknowledged.  A split that cannot drain within PK_SPLIT_WAIT_MS, or
 * whose edit the coordinator refuses (the map changed: a move, a new
 * leader), is abandoned and the fence lifted.
 *
 * Q's id is the next partition number; the range scheme's partition ids
 * stay below PK_SLOTS, the size of the per-partition tables of
 * replication and rates.
 */
#ifndef PK_SERVER_PK_SPLIT_H
#define PK_SERVER_PK_SPLIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_server pk_server;
typedef struct pk_cmd_ctx pk_cmd_ctx;
struct pk_pmap;

#define PK_SPLIT_WAIT_MS 5000

/* PK.SPLIT key: starts a split (reply +OK) or says why it cannot. */
void pk_cmd_pk_split(pk_cmd_ctx *x);

/*
 * Starts a split at key (len bytes, copied) of the range holding it, which
 * this node must lead: NULL, or why not (a Redis-style error text).  What
 * PK.SPLIT and the automatic splits (by load, by size) call.
 */
const char *pk_split_start(pk_server *s, const void *key, size_t len);

/* 1 while writes to part wait for a split. */
int pk_split_fenced(const pk_server *s, uint32_t part);

/*
 * Splits by size, on the write path (a write x to part, which this node
 * leads): a range over --split-size starts a split at its middle key
 * (pk_store_part_middle), and a write to a range over twice that waits
 * (pk_conn_hold) for the split, as CockroachDB holds writes to a range
 * that outgrew its splits, so that no range grows past 2x the size.
 * Returns 1 to run x now, 0 when x waits or an error was replied.
 */
int pk_split_admit(pk_cmd_ctx *x, uint32_t part);

/*
 * Step 4 for the map just installed, old being the one before (NULL at
 * start: every range is checked).  Runs in the loop's thread.
 */
void pk_split_reconcile(pk_server *s, const struct pk_pmap *old);

/* Frees the split state at shutdown (held writes are answered by the
 * connections' close). */
void pk_split_free(pk_server *s);

#endif

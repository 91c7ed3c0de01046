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
 *
 * Merges.  PK.MERGE key, on the leader of the range P holding key, merges
 * P with its right neighbour Q.  They must be co-located first -- the same
 * leader and replicas; when another of the same replicas leads Q, Q is
 * flagged PK_PART_MERGING, the controller hands its leadership to P's
 * leader (pk_ctrl.h: the handoff of leader balancing, no data copied),
 * and the merge waits for it.  The
 * merge then takes the split's steps with both ranges fenced and drained,
 * the edit pk_pmap_merge (P = [lo, hi), Q retired), and the relabel of
 * all of Q's keys to P on every replica.
 *
 * Automatic merges (--merge-delay, default 5 minutes): a range is cold
 * while its reads and writes per second stay under half of --split-qps
 * and its bytes under half of --split-size (each when on).  The leader of
 * a range Q cold for the delay whose left neighbour P is led by another of
 * Q's replicas flags Q PK_PART_MERGING, so that the controller hands Q
 * there; the leader of both merges them once the pair, summed, has been
 * cold for the delay (for a flagged Q: once P has been and the pair is
 * now), and clears the flag of a Q whose merge will not be.  The halves are the
 * hysteresis: a split range is over the thresholds, a merge needs both
 * under half, so a load around a threshold does not flap.  A bound an
 * operator split at (PK.SPLIT) is sticky: no automatic merge removes it
 * until PK.UNSPLIT.
 */
#ifndef PK_SERVER_PK_SPLIT_H
#define PK_SERVER_PK_SPLIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_server pk_server;
typedef struct pk_cmd_ctx pk_cmd_ctx;
struct pk_pmap;

#define PK_SPLIT_WAIT_MS 5000

/*
 * PK.SPLIT key, PK.MERGE key, PK.UNSPLIT key (cluster secret): start a
 * split at key (its bound sticky), a merge of the range holding key with
 * its right neighbour, or clear the stickiness of the bound at key; reply
 * +OK, or say why not.
 */
void pk_cmd_pk_split(pk_cmd_ctx *x);

/*
 * Starts a split at key (len bytes, copied) of the range holding it, which
 * this node must lead: NULL, or why not (a Redis-style error text).  What
 * PK.SPLIT (sticky) and the automatic splits (by load, by size) call.
 */
const char *pk_split_start(pk_server *s, const void *key, size_t len,
                           int sticky);

/*
 * Starts a merge of range p with its right neighbour, both led here on
 * the same replicas: the steps of a split, with both ranges fenced and
 * drained, and the edit pk_pmap_merge.  NULL, or why not.
 */
const char *pk_merge_start(pk_server *s, uint32_t p);

/* 1 with *q the right neighbour of range p (not the last), else 0. */
int pk_split_right(const pk_server *s, uint32_t p, uint32_t *q);

/*
 * Every second: the merge clocks, a PK.MERGE waiting for its move, and the
 * automatic merges (pk_split.h at the top).
 */
void pk_split_tend(pk_server *s);

/* 1 while writes to part wait for a split or merge. */
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

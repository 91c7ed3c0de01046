/*
 * pk_pmap_move: the three map edits a partition move makes, shared by the
 * rebalance driver (which begins and cancels moves) and the source node
 * (which commits them).  Each is a pure edit of one partition; the caller
 * bumps m->epoch once per compare-and-swap of the whole map.
 *
 * A move copies the data of partition p from its leader to node `to`:
 *
 *   begin    to becomes the move target (move_target = to, move_state
 *            COPYING) and, unless it already is a follower, a learner --
 *            so it may hold a copy of p that no janitor drops;
 *   commit   to takes the leader's place: a learner replaces the leader
 *            (the old leader leaves p), a follower swaps roles with it
 *            (leadership transfer); leader_epoch + 1, move cleared;
 *   cancel   the learner and the move are cleared; the leader keeps p.
 *
 * Every function returns 0, PK_EINVAL (p or a node id out of range) or
 * PK_ESTALE (the partition is not in the state the edit needs: already
 * moving, not moving to `to`, to removed or already the leader); on error
 * m is unchanged.
 */
#ifndef PK_CORE_PK_PMAP_MOVE_H
#define PK_CORE_PK_PMAP_MOVE_H

#include <stdint.h>

#include "pk_pmap.h"

int pk_pmap_move_begin(pk_pmap *m, uint32_t p, uint32_t to);
int pk_pmap_move_commit(pk_pmap *m, uint32_t p, uint32_t to);
int pk_pmap_move_cancel(pk_pmap *m, uint32_t p);

/* 1 when partition p is moving (to *to, if to is not NULL), else 0. */
int pk_pmap_moving(const pk_pmap *m, uint32_t p, uint32_t *to);

/*
 * The map edit of a range split (range scheme): partition p = [lo, hi)
 * keeps [lo, at) and a new partition, id m->npartitions (set in *q), gets
 * [at, hi) on the same replicas with the same leader and leader_epoch.
 * at (len bytes) must lie strictly inside p.  Returns 0, PK_EINVAL (not a
 * range map, p out of range, at not inside), PK_ESTALE (p is moving or
 * has learners: its copies are not all alike), PK_EFULL (already
 * PK_PARTITIONS_MAX partitions) or PK_ENOMEM; m is unchanged on error.
 * The caller bumps m->epoch, as for the move edits.
 */
int pk_pmap_split(pk_pmap *m, uint32_t p, const void *at, size_t len,
                  uint32_t *q);

/*
 * The map edit of a range merge: p = [lo, mid) and its right neighbour
 * q = [mid, hi), with the same leader and the same replicas, become
 * p = [lo, hi); q is retired (bounds [mid, mid), no replicas, leader
 * epoch + 1 so that nothing mistakes an old copy for it) and its id is
 * never used again.  p keeps its leader epoch and its flags but
 * PK_PART_MERGING.  Returns 0, PK_EINVAL (not a range map, an id out of
 * range, not neighbours), PK_ESTALE (either is moving or has learners,
 * or their replicas differ: co-locate them first) or PK_ENOMEM; m is
 * unchanged on error.
 */
int pk_pmap_merge(pk_pmap *m, uint32_t p, uint32_t q);

/* 1 when partitions p and q of m are on the same nodes (in any order);
 * pk_pmap_colocated: and have the same leader. */
int pk_pmap_same_replicas(const pk_pmap *m, uint32_t p, uint32_t q);
int pk_pmap_colocated(const pk_pmap *m, uint32_t p, uint32_t q);

#endif

/*
 * pk_plan: the rebalance planner -- from a partition map and a membership
 * change, the list of replica moves that brings every node to its share of
 * partitions while copying no more data than balance requires.
 *
 * Plan, review, apply.  pk_plan_change() records a membership change in the
 * map (a node joins, leaves, drains, changes weight, or R changes) and
 * computes the plan; nothing moves until the caller, having reviewed the
 * plan, calls pk_plan_apply(), which switches the map to the planned
 * assignment in one step (epoch + 1).
 *
 * What a plan guarantees, for the map it was computed from.  A node is
 * *eligible* when its state is PK_NODE_UP and its weight is > 0.
 *
 *   - Every partition ends with exactly R replicas, on R distinct eligible
 *     nodes.  When zones are in use (some eligible node has a non-empty
 *     zone), no zone holds more than ceil(R / nzones) replicas of one
 *     partition, so R <= nzones puts every replica in its own zone.
 *     Eligible nodes with an empty zone then form one more zone.
 *   - Every eligible node holds floor or ceil of its share of the
 *     npartitions * R replicas.  The share is proportional to weight,
 *     capped at npartitions per node (one replica of each partition) and at
 *     ceil(R / nzones) * npartitions per zone; what a cap cuts off is
 *     spread over the others by weight.  These exact shares are in
 *     pk_plan.share.
 *   - Every eligible node leads floor or ceil of its weight share of the
 *     npartitions leaders (pk_plan.leader_share).  Leadership is moved by
 *     transfers between existing replicas (no data copied) where it can be,
 *     and data moves of a leader replica carry the leadership with them.
 *   - Data moves are minimal.  min_data_moves is the lower bound: the sum
 *     over nodes of max(0, replicas before - quota) plus the replicas that
 *     partitions with fewer than R must gain.  Ineligible nodes (draining,
 *     down, weight 0) have quota 0, so all of their replicas move.  Which
 *     nodes round their share up prefers those that already hold the
 *     rounded-up count, so a balanced map yields an empty plan.  When only
 *     the counts constrain the plan, ndata == min_data_moves.  The bound is
 *     not always reachable: if a node that must grow already holds most of
 *     what a leaving node held (distinct nodes), or zones must change
 *     shape, some replicas that could stay must move too.  The planner then
 *     still finds the fewest data moves (it cancels the negative cycles of
 *     the min-cost flow the assignment is) and ndata > min_data_moves.
 *     That last step runs for up to 256 eligible nodes; above that the plan
 *     is balanced and valid but may copy a few more replicas than needed.
 *   - Deterministic: the same map always yields the same plan.
 *
 * Infeasible maps are refused rather than half-served: with no eligible
 * node the planner returns PK_EEMPTY; with fewer eligible nodes than R, or
 * zones that cannot hold R replicas under the zone rule, PK_EINFEASIBLE.
 * In both cases nothing is changed.
 *
 * Cost: O(npartitions * R * nodes) time, O(npartitions * R) memory; more
 * only where distinct nodes or zones constrain the moves (searches over
 * nodes, O(nodes^3) per improving cycle).  Adding a node to 100 nodes with
 * 16384 partitions and R = 3 plans in about 2 ms.
 *
 * Thread-safety: the functions keep no shared state; a map and a plan are
 * each used by one thread at a time.
 */
#ifndef PK_CORE_PK_PLAN_H
#define PK_CORE_PK_PLAN_H

#include <stdint.h>

#include "pk_pmap.h"

typedef enum pk_role {
    PK_ROLE_LEADER = 0,
    PK_ROLE_FOLLOWER = 1,
} pk_role;

/*
 * One step of a plan, about one replica of one partition.
 *
 *   transfer  from      to        meaning
 *   0         node      node      copy the replica from `from` to `to`,
 *                                 which takes its place and its role
 *   0         NONE      node      a new replica (R grew, or a replica was
 *                                 missing); LEADER only for an unowned
 *                                 partition
 *   0         node      NONE      drop the replica on `from` (R shrank)
 *   1         leader    follower  leadership handover, no data copied
 *
 * `role` is the role of the replica the move is about, before the move
 * (for a new replica: the role it gets).  Moves of one partition are listed
 * together and must be applied in plan order.
 */
typedef struct pk_move {
    uint32_t part;    /* partition index */
    uint32_t from;    /* node id or PK_NODE_NONE */
    uint32_t to;      /* node id or PK_NODE_NONE */
    uint8_t role;     /* pk_role */
    uint8_t transfer; /* 1: leadership handover only */
} pk_move;

typedef enum pk_change_kind {
    PK_CHANGE_NONE = 0,     /* rebalance the map as it stands */
    PK_CHANGE_ADD = 1,      /* add node name/addr/zone with weight */
    PK_CHANGE_REMOVE = 2,   /* remove `node` once it holds nothing */
    PK_CHANGE_DRAIN = 3,    /* move everything off `node`, keep it */
    PK_CHANGE_WEIGHT = 4,   /* set the weight of `node` */
    PK_CHANGE_REPLICAS = 5, /* set the target replication factor */
} pk_change_kind;

typedef struct pk_change {
    pk_change_kind kind;
    uint32_t node;    /* REMOVE, DRAIN, WEIGHT */
    double weight;    /* ADD, WEIGHT */
    uint8_t replicas; /* REPLICAS: 1..PK_REPLICAS_MAX */
    /* ADD only; borrowed for the duration of the call.  addr and zone may
     * be NULL. */
    const char *name, *addr, *zone;
} pk_change;

typedef struct pk_plan {
    uint32_t nmoves;
    pk_move *moves;          /* owned, nmoves entries */
    uint32_t ndata;          /* moves with transfer == 0: copies, new
                              * replicas and drops */
    uint32_t ntransfers;     /* moves with transfer == 1 */
    uint32_t min_data_moves; /* the lower bound on ndata (see top) */
    uint32_t retire;         /* node pk_plan_apply marks PK_NODE_REMOVED,
                              * or PK_NODE_NONE */
    /* Per-node arrays, owned, nnodes entries indexed by node id (the map's
     * nnodes when the plan was computed; tombstones included). */
    uint32_t nnodes;
    uint32_t *replicas_before, *replicas_after;
    uint32_t *leaders_before, *leaders_after;
    double *share;        /* exact replica share; 0 for ineligible nodes */
    double *leader_share; /* exact leader share; 0 for ineligible nodes */
    /* max |count - share| over eligible nodes, in partitions */
    double max_dev_before, max_dev_after;               /* replicas */
    double max_leader_dev_before, max_leader_dev_after; /* leaders */
} pk_plan;

/*
 * Plans the moves that balance `m` as it stands: node states, weights and
 * m->replicas express the desired cluster.  m is not modified.  On success
 * *out is a new plan owned by the caller (pk_plan_free); it stays valid
 * independently of m.
 *
 * Returns 0, PK_EINVAL (NULL argument), PK_ECORRUPT (m violates the
 * pk_pmap invariants), PK_EEMPTY (no eligible node), PK_EINFEASIBLE (fewer
 * eligible nodes than R, or zones too few to spread R replicas) or
 * PK_ENOMEM.  *out is set only on success.
 */
int pk_plan_compute(const pk_pmap *m, pk_plan **out);

/* How partition sizes steer which partitions a node hands over. */
typedef enum pk_plan_sizing {
    PK_PLAN_FAIR_BYTES = 1,   /* bytes end near each node's share too */
    PK_PLAN_FEWEST_BYTES = 2, /* the least copying: smallest first */
} pk_plan_sizing;

/*
 * As pk_plan_compute, knowing each partition's size (size[p] bytes for
 * every p < m->npartitions; NULL: all equal).  A node above its share
 * hands over, with PK_PLAN_FAIR_BYTES, the partitions whose sizes bring
 * its bytes nearest its share of all bytes (so a joining node gets its
 * part of the data, not only of the partitions), or with
 * PK_PLAN_FEWEST_BYTES its smallest partitions (the least copying; the
 * big ones stay).  Counts, balance and the number of data moves are as
 * without sizes.  Returns the codes of pk_plan_compute; PK_EINVAL also
 * for an unknown sizing.
 */
int pk_plan_compute_sized(const pk_pmap *m, const uint64_t *size,
                          pk_plan_sizing sizing, pk_plan **out);

/*
 * Records membership change *c in m, then plans as pk_plan_compute.  The
 * change edits membership only -- the moves are applied by pk_plan_apply --
 * and does not bump m->epoch (pk_plan_apply does, once for both):
 *
 *   ADD       adds node c->name (c->addr, c->zone, c->weight) in state UP
 *   REMOVE    an UP node becomes DRAINING (a DOWN one stays DOWN) and
 *             plan->retire names it: pk_plan_apply marks it REMOVED once
 *             it holds nothing
 *   DRAIN     an UP node becomes DRAINING and stays in the map (a DOWN
 *             one stays DOWN); either way its replicas are planned away
 *   WEIGHT    sets the node's weight to c->weight
 *   REPLICAS  sets m->replicas to c->replicas
 *   NONE      nothing; same as pk_plan_compute
 *
 * On any error m is left exactly as it was (a refused change is not
 * recorded) and *out is untouched.  Returns 0, the codes of
 * pk_plan_compute, PK_EINVAL (bad kind, weight or replicas),
 * PK_ENOTFOUND (REMOVE, DRAIN or WEIGHT of an unknown or removed node), or
 * the codes of pk_pmap_node_add (PK_EEXIST, PK_EFULL) for ADD.
 */
int pk_plan_change(pk_pmap *m, const pk_change *c, pk_plan **out);

/*
 * Applies every move of p to m, in order, then marks p->retire REMOVED if
 * it holds no replica or learner, bumps m->epoch by 1 and bumps the
 * leader_epoch of every partition whose leader differs from before.  A node
 * that becomes a replica leaves the partition's learner list.
 *
 * Each move is checked against the map as the earlier moves left it: its
 * `from` must hold the replica in the stated role, its `to` must be a
 * non-removed node not already holding the partition (for a transfer: a
 * follower).  Any mismatch -- the map changed since the plan was made --
 * returns PK_ESTALE.  A move that is malformed in itself (partition out of
 * range, from == to, a drop of the last replica, a transfer that is not a
 * LEADER move) returns PK_EINVAL.  On any error m is unchanged; the work is
 * done on a copy, so PK_ENOMEM is possible too.  Returns 0 on success.
 */
int pk_plan_apply(pk_pmap *m, const pk_plan *p);

/*
 * Assigns every unowned partition and applies the result (epoch + 1; the
 * leader_epoch of every newly led partition + 1).
 *
 * A fresh map (no partition owned) gets a balanced layout: eligible nodes,
 * in id order, lead contiguous runs of partitions sized by weight, the
 * boundaries rounded like redis-cli --cluster create (3 equal nodes and
 * 16384 slots: 0-5460, 5461-10922, 10923-16383); followers for R > 1 go
 * to the nodes furthest below their quota, ties broken round-robin after
 * the leader, respecting zones.  When some partitions are already owned,
 * only the unowned ones are given R replicas, on the nodes furthest below
 * their quota; owned partitions are not touched (pk_plan_compute
 * rebalances them).  A map with no unowned partition is left unchanged.
 *
 * Returns 0, PK_EINVAL, PK_ECORRUPT, PK_EEMPTY, PK_EINFEASIBLE or
 * PK_ENOMEM; on error m is unchanged.
 */
int pk_plan_initial(pk_pmap *m);

/* Frees the plan and everything it owns.  NULL is a no-op. */
void pk_plan_free(pk_plan *p);

#endif

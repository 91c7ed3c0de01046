/*
 * pk_placer: one interface over every key -> node placement, so the
 * simulator (and anything else that compares strategies) can treat modulo,
 * ring, rendezvous, jump, Maglev and fixed partitions alike.
 *
 * A placer is built from a node list and is immutable.  A resize builds the
 * placer for a new node list from an old one: every strategy but `fixed`
 * simply rebuilds (that is the point of them), while `fixed` keeps its
 * partition table and lets the rebalance planner move the fewest partitions.
 */
#ifndef PK_CORE_PK_PLACER_H
#define PK_CORE_PK_PLACER_H

#include <stddef.h>
#include <stdint.h>

#include "pk_hash.h"
#include "pk_place.h"

typedef enum pk_placer_kind {
    PK_PLACER_MODULO = 0,
    PK_PLACER_RING,
    PK_PLACER_RENDEZVOUS,
    PK_PLACER_JUMP,
    PK_PLACER_MAGLEV,
    PK_PLACER_FIXED,
    PK_PLACER_COUNT
} pk_placer_kind;

typedef struct pk_placer_opts {
    pk_hash_kind hash;    /* key hash; also hashes ring points */
    uint32_t vnodes;      /* ring: points per node of weight 1 */
    uint32_t maglev_size; /* Maglev: prime table size */
    uint32_t partitions;  /* fixed: number of partitions */
    uint8_t replicas;     /* fixed: R kept in the partition map */
} pk_placer_opts;

typedef struct pk_placer pk_placer;

/* Defaults: xxh3, 150 vnodes, Maglev 65537, 16384 partitions, R = 1. */
void pk_placer_opts_default(pk_placer_opts *o);

/*
 * Builds a placer of `kind` over nodes[0..n-1] (borrowed for the call; ids
 * are what lookups return, names must be unique).  Returns 0, PK_EINVAL,
 * PK_EEMPTY (n == 0) or PK_ENOMEM.
 */
int pk_placer_new(pk_placer_kind kind, const pk_place_node *nodes, uint32_t n,
                  const pk_placer_opts *o, pk_placer **out);

/*
 * The placer of the same kind and options for a new node list.  Nodes are
 * matched by name; for `fixed` the partitions of nodes that left, and the
 * shares owed to nodes that joined, are moved by the planner, and nothing
 * else.  Returns 0 or an error of pk_placer_new / the planner.
 */
int pk_placer_resize(const pk_placer *old, const pk_place_node *nodes,
                     uint32_t n, pk_placer **out);

void pk_placer_free(pk_placer *p);

/* The hash of a key under the placer's hash kind. */
uint64_t pk_placer_hash(const pk_placer *p, const void *key, size_t len);

/* Id of the node that owns key (h must be pk_placer_hash of the key). */
uint32_t pk_placer_owner(const pk_placer *p, const void *key, size_t len,
                         uint64_t h);

/*
 * Up to R distinct node ids that hold replicas of key, owner first.  How a
 * strategy without its own notion of replicas picks them is documented in
 * pk_placer.c.  out must hold R ids.  Returns 0 or PK_EINVAL.
 */
int pk_placer_replicas(const pk_placer *p, const void *key, size_t len,
                       uint64_t h, uint32_t R, uint32_t *out, uint32_t *nout);

/* Points on the ring for a ring placer, 0 for the others. */
size_t pk_placer_points(const pk_placer *p);

/* "modulo", "ring", "rendezvous", "jump", "maglev", "fixed". */
const char *pk_placer_name(pk_placer_kind kind);

/* Population standard deviation of counts over their mean, in percent. */
double pk_placer_deviation(const uint64_t *counts, uint32_t n);

#endif

/*
 * pk_place: the node description shared by the key-placement modules
 * (pk_ring, pk_rendezvous, pk_maglev).
 *
 * A placement is built once from an array of nodes and is immutable
 * afterwards; lookups return the caller-chosen `id` of the owning node, so
 * callers never see array positions.  Array order matters: it is the order
 * in which nodes are processed during a build and breaks ties, so two
 * builds from the same array always give the same placement.
 */
#ifndef PK_CORE_PK_PLACE_H
#define PK_CORE_PK_PLACE_H

#include <stdint.h>

/*
 * Reserved id: never a valid node id.  Constructors reject a node with this
 * id, so a lookup can use it to say "no owner" where it has no other way to
 * report a failure.
 */
#define PK_PLACE_NONE UINT32_MAX

typedef struct pk_place_node {
    uint32_t id;      /* caller-chosen, returned by lookups; != PK_PLACE_NONE */
    const char *name; /* NUL-terminated; borrowed during the build only */
    double weight;    /* relative capacity; finite and > 0 */
} pk_place_node;

#endif

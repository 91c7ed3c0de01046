/*
 * pk_pmap: the partition map -- which nodes exist and which nodes hold each
 * partition -- and its versioned binary encoding.
 *
 * The map is the one piece of state every node, proxy and smart client
 * shares.  It is changed only by whole-map compare-and-swap in the
 * coordinator; every change bumps `epoch`, and every change of a
 * partition's leader bumps that partition's `leader_epoch`, so a stale
 * owner can always be recognised and fenced.
 *
 *   pk_pmap
 *   +-- nodes[id]       id == index; never reused (removed nodes stay as
 *   |                   PK_NODE_REMOVED tombstones so ids stay stable)
 *   +-- parts[p]        replicas[0] = leader, replicas[1..] = followers,
 *                       learners = copies being built (moves)
 *
 * Invariants (pk_pmap_validate): replica and learner ids name existing,
 * non-removed nodes; no node appears twice in one partition; nreplicas and
 * nlearners <= PK_REPLICAS_MAX; range bounds are present exactly when the
 * scheme is PK_SCHEME_RANGE, with lo < hi -- or lo == hi for a retired
 * range (merged into its left neighbour: no replicas, no keys; its id is
 * never reused, as node ids are not).
 *
 * Not thread-safe; a map is owned by one thread at a time.
 */
#ifndef PK_CORE_PK_PMAP_H
#define PK_CORE_PK_PMAP_H

#include <stddef.h>
#include <stdint.h>

#include "pk_hash.h"

#define PK_REPLICAS_MAX 7
#define PK_NODE_NONE UINT32_MAX
#define PK_NAME_MAX 40 /* Redis Cluster node ids are 40 hex digits */
#define PK_ADDR_MAX 63 /* "host:port" */
#define PK_ZONE_MAX 31
#define PK_PARTITIONS_MAX (1u << 20)
#define PK_NODES_MAX 65536u

typedef enum pk_scheme {
    PK_SCHEME_SLOTS = 0, /* CRC16 mod 16384, hash tags (Redis Cluster) */
    PK_SCHEME_HASH = 1,  /* pk_hash_kind hash of the key (its hash tag,
                          * when it has one) mod npartitions */
    PK_SCHEME_RANGE = 2, /* sorted key ranges [lo, hi) */
} pk_scheme;

typedef enum pk_node_state {
    PK_NODE_UP = 0,       /* serves and may receive partitions */
    PK_NODE_DRAINING = 1, /* serves, but its partitions are to leave */
    PK_NODE_DOWN = 2,     /* lease expired; its partitions need new homes */
    PK_NODE_REMOVED = 3,  /* tombstone; holds nothing */
} pk_node_state;

typedef enum pk_move_state {
    PK_MOVE_NONE = 0,
    PK_MOVE_COPYING = 1,   /* target copies a snapshot */
    PK_MOVE_CATCHUP = 2,   /* target applies the change log */
    PK_MOVE_SWITCHING = 3, /* source fenced, map about to switch */
} pk_move_state;

typedef struct pk_node {
    uint32_t id;                /* == index in pk_pmap.nodes */
    char name[PK_NAME_MAX + 1]; /* unique, NUL-terminated */
    char addr[PK_ADDR_MAX + 1]; /* "host:port", may be "" */
    char zone[PK_ZONE_MAX + 1]; /* "" when zones are not used */
    double weight;              /* >= 0; 1.0 is a standard node */
    uint8_t state;              /* pk_node_state */
} pk_node;

typedef struct pk_partition {
    uint8_t nreplicas;                  /* leader + followers, 0 = unowned */
    uint8_t nlearners;                  /* copies being built by moves */
    uint8_t move_state;                 /* pk_move_state */
    uint32_t move_target;               /* node id or PK_NODE_NONE */
    uint32_t replicas[PK_REPLICAS_MAX]; /* [0] is the leader */
    uint32_t learners[PK_REPLICAS_MAX];
    uint64_t leader_epoch; /* bumped on every leader change */
    /* Range scheme only: the partition holds keys in [lo, hi).  Both are
     * owned by the map.  lo_len == 0 means "from the smallest key";
     * hi == NULL means "to +infinity". */
    uint8_t *lo;
    uint32_t lo_len;
    uint8_t *hi;
    uint32_t hi_len;
    uint8_t flags; /* range scheme: PK_PART_* */
} pk_partition;

/*
 * Range-scheme partition flags.  STICKY: an operator split at lo (or
 * presplit there), and no automatic merge removes that bound.  MERGING:
 * to be merged into its left neighbour; the controller hands its
 * leadership to that one's leader.
 */
#define PK_PART_STICKY 0x01
#define PK_PART_MERGING 0x02
#define PK_PART_FLAGS (PK_PART_STICKY | PK_PART_MERGING)

/*
 * A salted key (hash schemes only): a write-hot key whose writes are spread
 * over n parts.  Part 0 is the key itself; part i >= 1 is the sub-key named
 * by tags[i] (pk_salt.h), a hash tag chosen so that the parts land on
 * partitions led by different nodes.  SALTED: writes go to a random part;
 * FOLDING: writes go to the key, and its leader folds the parts into it.
 * The table is sorted by key, each key once.
 */
#define PK_SALT_PARTS_MAX 64
#define PK_SALT_KEY_MAX 512
#define PK_SALTS_MAX 1024

typedef enum pk_salt_state {
    PK_SALT_SALTED = 0,
    PK_SALT_FOLDING = 1,
} pk_salt_state;

typedef struct pk_salt {
    uint8_t *key; /* owned */
    uint32_t len;
    uint8_t n;     /* parts, a power of two, 2..PK_SALT_PARTS_MAX */
    uint8_t state; /* pk_salt_state */
    uint32_t tags[PK_SALT_PARTS_MAX]; /* [0] unused (the key itself) */
} pk_salt;

/*
 * A secondary index definition (pk_ftdef.h), kept encoded: the map carries
 * them so that every node learns of an index, and of its end, as it
 * learns of a move.  Names are unique; the table is in creation order.
 */
#define PK_FTDEFS_MAX 256

typedef struct pk_ftblob {
    uint8_t *bytes; /* owned, a pk_ftdef encoding */
    uint32_t len;
} pk_ftblob;

typedef struct pk_pmap {
    uint64_t epoch;       /* bumped on every change of the map */
    uint8_t scheme;       /* pk_scheme */
    uint8_t hash;         /* pk_hash_kind, used by PK_SCHEME_HASH */
    uint8_t replicas;     /* target R, 1..PK_REPLICAS_MAX */
    uint32_t nnodes;      /* including removed tombstones */
    uint32_t cap_nodes;   /* allocated length of nodes */
    pk_node *nodes;       /* owned */
    uint32_t npartitions; /* fixed at creation for slots/hash */
    pk_partition *parts;  /* owned, npartitions entries */
    uint32_t nsalts;      /* salted keys, sorted by key */
    pk_salt *salts;       /* owned */
    uint32_t nftdefs;     /* index definitions */
    pk_ftblob *ftdefs;    /* owned */
} pk_pmap;

/*
 * Creates an empty map: no nodes, every partition unowned, epoch 0.
 * npartitions must be PK_SLOTS for PK_SCHEME_SLOTS, and 1..PK_PARTITIONS_MAX
 * otherwise; a range map starts with its partitions' bounds unset (use
 * pk_pmap_set_range).  Returns 0, PK_EINVAL or PK_ENOMEM.
 */
int pk_pmap_new(pk_scheme scheme, pk_hash_kind hash, uint32_t npartitions,
                uint8_t replicas, pk_pmap **out);

/* Frees the map and everything it owns.  NULL is a no-op. */
void pk_pmap_free(pk_pmap *m);

/* Deep copy.  Returns 0 or PK_ENOMEM. */
int pk_pmap_clone(const pk_pmap *m, pk_pmap **out);

/*
 * Adds a node in state PK_NODE_UP and returns its id in *id.  name must be
 * unique among nodes that are not removed, 1..PK_NAME_MAX bytes; addr and
 * zone may be NULL.  Returns 0, PK_EEXIST, PK_EINVAL, PK_EFULL or PK_ENOMEM.
 */
int pk_pmap_node_add(pk_pmap *m, const char *name, const char *addr,
                     const char *zone, double weight, uint32_t *id);

/* Finds a non-removed node by name.  Returns 0 or PK_ENOTFOUND. */
int pk_pmap_node_find(const pk_pmap *m, const char *name, uint32_t *id);

/* The node with this id, or NULL.  Valid until the map is changed. */
const pk_node *pk_pmap_node(const pk_pmap *m, uint32_t id);

/* Returns 0, or PK_ENOTFOUND for a bad id, PK_EINVAL for a bad value. */
int pk_pmap_node_set_state(pk_pmap *m, uint32_t id, pk_node_state state);
int pk_pmap_node_set_weight(pk_pmap *m, uint32_t id, double weight);

/* Number of nodes in state UP or DRAINING. */
uint32_t pk_pmap_live_nodes(const pk_pmap *m);

/* Leader of partition p, or PK_NODE_NONE when unowned or p is out of range */
uint32_t pk_pmap_leader(const pk_pmap *m, uint32_t p);

/*
 * Sets the bounds of partition p of a range map (copies them).  hi == NULL
 * means +infinity.  Returns 0, PK_EINVAL (not a range map, p out of range,
 * lo >= hi) or PK_ENOMEM.
 */
int pk_pmap_set_range(pk_pmap *m, uint32_t p, const void *lo, size_t lo_len,
                      const void *hi, size_t hi_len);

/* 1 when p is a retired range (see the invariants at the top). */
int pk_pmap_retired(const pk_pmap *m, uint32_t p);

/* The partitions that are not retired. */
uint32_t pk_pmap_live_parts(const pk_pmap *m);

/*
 * A copy of m without its retired ranges, the others renumbered in id
 * order; (*ids)[i] is the id in m of partition i of the copy (malloc'd,
 * the caller's).  What the planner works on.  Returns 0 or PK_ENOMEM.
 */
int pk_pmap_compact(const pk_pmap *m, pk_pmap **out, uint32_t **ids);

/*
 * Partition of a key for the slots and hash schemes, both by the key's
 * hash tag when it has one (pk_hash_tag).  Returns 0 or
 * PK_EINVAL for a range map (use pk_range for those).
 */
int pk_pmap_partition_of(const pk_pmap *m, const void *key, size_t len,
                         uint32_t *p);

/* The salt entry of key, or NULL.  Valid until the map is changed. */
const pk_salt *pk_pmap_salt_find(const pk_pmap *m, const void *key, size_t len);

/*
 * Adds or replaces the entry of s->key (copied).  Returns 0, PK_EINVAL
 * (a range map, a bad n, state or key length), PK_EFULL or PK_ENOMEM.
 */
int pk_pmap_salt_set(pk_pmap *m, const pk_salt *s);

/* Removes key's entry.  Returns 0 or PK_ENOTFOUND. */
int pk_pmap_salt_del(pk_pmap *m, const void *key, size_t len);

/* The position of the index definition named name, or -1. */
int pk_pmap_ftdef_find(const pk_pmap *m, const char *name);

/*
 * Adds the index definition encoded in bytes (copied), or replaces the one
 * of the same name.  Returns 0, PK_EINVAL (not a definition), PK_EFULL or
 * PK_ENOMEM.
 */
int pk_pmap_ftdef_set(pk_pmap *m, const uint8_t *bytes, uint32_t len);

/* Removes the definition named name.  Returns 0 or PK_ENOTFOUND. */
int pk_pmap_ftdef_del(pk_pmap *m, const char *name);

/* Checks the invariants listed at the top.  Returns 0 or PK_ECORRUPT. */
int pk_pmap_validate(const pk_pmap *m);

/* 1 when the two maps hold the same content, else 0. */
int pk_pmap_equal(const pk_pmap *a, const pk_pmap *b);

/*
 * Encodes the map (format version 1, big-endian, CRC32C-style checksum over
 * everything before it).  *buf is malloc'd and owned by the caller.
 * Returns 0 or PK_ENOMEM.
 */
int pk_pmap_encode(const pk_pmap *m, uint8_t **buf, size_t *len);

/*
 * Decodes a buffer made by pk_pmap_encode.  Every malformed input -- short,
 * long, bad magic, unknown version, checksum mismatch, out-of-range counts
 * or ids, duplicate replicas, bad bounds -- returns an error (PK_ECORRUPT,
 * PK_EVERSION, PK_ECHECKSUM) and never reads outside buf.  *out is set only
 * on success.
 */
int pk_pmap_decode(const uint8_t *buf, size_t len, pk_pmap **out);

/*
 * The epoch of an encoded map, read from its header without decoding or
 * checking the rest (so a receiver can skip a map it already has).
 * Returns 0, or PK_ECORRUPT for a buffer that is not a version-1 map.
 */
int pk_pmap_peek_epoch(const uint8_t *buf, size_t len, uint64_t *epoch);

#endif

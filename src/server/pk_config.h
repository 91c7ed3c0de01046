/*
 * pk_config: a node's configuration, types only: the options it starts
 * with (pk_server_config, from the command line; public through
 * pk_server.h), and the runtime parameters CONFIG GET and CONFIG SET read
 * and write (pk_config_state; pk_cmd_config.c holds the table and the
 * command).  It includes no other header of src/server, so that the
 * server's state (pk_srv.h) can hold both without depending on the code
 * that runs a node.
 *
 * The runtime parameters are of three kinds: those partkv acts on (maxclients,
 * proto-max-bulk-len, client-query-buffer-limit, protected-mode,
 * client-output-buffer-limit) are
 * copied into the server's pk_server_config when set; those describing
 * Redis's own memory layouts and tuning (hash-max-listpack-entries,
 * lazyfree-*, ...) are validated as Redis does, recorded here and
 * reported back, and change nothing; those fixed at start (port, dir,
 * appendfsync, ...) are reported and refused as immutable.
 */
#ifndef PK_SERVER_PK_CONFIG_H
#define PK_SERVER_PK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "server/pk_tls.h"
#include "store/pk_store.h"

struct pk_server;

/* When a write is acknowledged (--acks): once the leader has it, once a
 * majority of the partition's replicas have it, or once all of them do. */
typedef enum pk_acks {
    PK_ACKS_QUORUM = 0,
    PK_ACKS_LEADER = 1,
    PK_ACKS_ALL = 2,
} pk_acks;

/*
 * Output buffer limits of one class of clients (client-output-buffer-limit,
 * enforced by pk_climit.c): a connection whose replies not yet taken by
 * the socket reach hard bytes, or stay at or above soft bytes for more
 * than soft_s seconds, is closed.  0 turns a limit off.
 */
typedef struct pk_obuf_limit {
    uint64_t hard, soft; /* bytes */
    int64_t soft_s;      /* seconds, >= 0 */
} pk_obuf_limit;

/* Redis's classes in Redis's order, which CONFIG GET keeps. */
enum {
    PK_CLIENT_NORMAL,
    PK_CLIENT_REPLICA, /* "replica" or "slave"; shown as "slave" */
    PK_CLIENT_PUBSUB,
    PK_CLIENT_CLASSES
};

typedef struct pk_server_config {
    const char *bind;        /* listen address, default "127.0.0.1" */
    int port;                /* 0 picks an ephemeral port */
    const char *dir;         /* data directory (created if missing) */
    pk_fsync fsync;          /* durability of acknowledged writes */
    const char *requirepass; /* NULL: no password */
    const char *aclfile;     /* --aclfile: ACL users, or NULL */
    int protected_mode;      /* refuse non-loopback clients without a pass */
    size_t proto_max_bulk_len;
    size_t client_query_buffer_limit; /* a connection's unparsed bytes */
    uint64_t map_size;                /* LMDB map size in bytes, 0 = default */
    int maxclients;
    /* By class; default Redis's "normal 0 0 0 replica 256mb 64mb 60
     * pubsub 32mb 8mb 60". */
    pk_obuf_limit obuf_limits[PK_CLIENT_CLASSES];
    /* Cluster mode: set coordinator to "embedded" to host the coordinator,
     * or join to "host:port" of the node that hosts it. */
    const char *coordinator;
    const char *join;
    const char *cluster_secret; /* required in cluster mode */
    const char *announce;       /* "host:port" others use; default bind */
    int forward;                /* forward keys we do not own (no MOVED) */
    /* List followers as replicas in CLUSTER SLOTS/SHARDS/NODES.  Off by
     * default: a node that leads some partitions and follows others can
     * have only one role in a Redis client's view, and clients that keep
     * the last role they read (redis-py) then take leading nodes for
     * replicas and skip them in broadcasts (DBSIZE, SCAN, FLUSHALL).  On,
     * clients may read from followers (READONLY). */
    int announce_replicas;
    const char *proxy_of; /* proxy: "host:port" of any cluster node */
    pk_acks acks;         /* default quorum */
    /* A node down this long has its replicas re-created elsewhere (the
     * controller; 0: never). */
    uint64_t replace_after_ms;
    /* Range scheme: a range this node leads that serves at least this many
     * requests per second has its load sampled by a split finder
     * (pk_splitfind), whose verdict PK.PARTITIONS shows (0: never). */
    uint64_t split_qps;
    /* Range scheme: a range this node leads that holds more bytes than
     * this is split at its middle key (0: never). */
    uint64_t split_size;
    /* Range scheme: two neighbouring ranges whose reads and writes per
     * second and bytes, summed, stay under half of --split-qps and half
     * of --split-size this long merge (0: never). */
    uint64_t merge_delay_ms;
    /* The fraction of keyed commands sampled for PK.HOTKEYS (pk_hot.h;
     * 0: off). */
    double hotkeys_sample;
    /* Salting (pk_salted.h): a key this node leads written more than this
     * many times a second for hot_key_ms is split into parts (0: never);
     * folded back once under half of it for unsalt_after_ms (0: never);
     * salted_incr_local: INCR answers its part's value, not the total. */
    uint64_t hot_key_writes, hot_key_ms, unsalt_after_ms;
    /* Replica reads (pk_hotread.h): a key read here more than this many
     * times a second, in a partition we follow, is read here (0: never). */
    uint64_t hot_key_reads;
    int salted_incr_local;
    /* Prometheus text on GET /metrics at this port of --bind (pk_metrics.h;
     * 0: a free one, logged; -1: off). */
    int metrics_port;
    /* TLS clients connect to this port (0: a free one; -1: none), with
     * these files (pk_tls.h). */
    int tls_port;
    pk_tls_files tls;
    /* Nodes talk to each other (links, the agent, the controller) over
     * TLS with their certificates, announce their TLS port, and take
     * PK.AUTH only over TLS from a peer with a certificate our CA
     * signed. */
    int tls_cluster;
    /* Test hooks (PK.REPL FAILCOMMITS) are allowed. */
    int enable_debug_command;
    /* With --fsync always, leaders send records before their commit
     * (pk_repl_precommit); 0 turns that off (default 1). */
    int parallel_append;
} pk_server_config;

/* Room for the table's parameters (a static_assert checks it). */
#define PK_CONFIG_MAX 64
/* "save" holds at most this many bytes of "seconds changes" pairs. */
#define PK_CONFIG_SAVE_LEN 256

/* The recorded values, one slot per table row; part of pk_server. */
typedef struct pk_config_state {
    int64_t v[PK_CONFIG_MAX];
    char save[PK_CONFIG_SAVE_LEN]; /* normalized "s c s c", or "" */
} pk_config_state;

/* Fills s->conf with the defaults; reads nothing but s->cfg. */
void pk_config_init(struct pk_server *s);

/* Redis's defaults of client-output-buffer-limit into lim. */
void pk_config_obuf_default(pk_obuf_limit lim[PK_CLIENT_CLASSES]);

/*
 * Parses a client-output-buffer-limit value -- groups of "<class> <hard>
 * <soft> <soft seconds>" split at single spaces, class normal, replica,
 * slave or pubsub (any case), sizes with Redis's units (1mb, 64k) -- as
 * Redis's CONFIG SET and command line read it (len bytes at s, borrowed).
 * The classes named are replaced in lim; the others keep their values.
 *
 * Returns PK_OK; PK_EINVAL with lim untouched and *why set to Redis's
 * reason (a static string), e.g. "Wrong number of arguments in buffer
 * limit configuration.".
 */
int pk_config_obuf_parse(const char *s, size_t len,
                         pk_obuf_limit lim[PK_CLIENT_CLASSES],
                         const char **why);

/* The value as CONFIG GET shows it, "normal 0 0 0 slave 268435456 ...",
 * into buf of n bytes (PK_CONFIG_OBUF_LEN is always enough). */
#define PK_CONFIG_OBUF_LEN 256
void pk_config_obuf_format(const pk_obuf_limit lim[PK_CLIENT_CLASSES],
                           char *buf, size_t n);

#endif

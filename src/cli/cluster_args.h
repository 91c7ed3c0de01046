/*
 * cluster_args: the flags of `partkv cluster up` (pk_up_args), and each
 * node it runs (pk_up_node) with the flags it gives that node; cluster.c
 * runs them.
 */
#ifndef PK_CLI_CLUSTER_ARGS_H
#define PK_CLI_CLUSTER_ARGS_H

#include <sys/types.h>

#include "cli/presplit.h"
#include "core/pk_hash.h"
#include "core/pk_pmap.h"

#define PK_UP_NODES_MAX 64
#define PK_UP_NODE_ARGS_MAX 64

typedef struct pk_up_args {
    unsigned long nodes, base_port, replicas, partitions;
    const char *dir;
    const char *secret;
    pk_scheme scheme;          /* --scheme */
    pk_hash_kind hash;         /* --hash, for the hash scheme */
    pk_presplit presplit;      /* the range scheme's first boundaries */
    unsigned long ranges;      /* --presplit N */
    const char *split_keys;    /* --presplit-keys */
    const char *split_sample;  /* --presplit-sample */
    int forward;               /* nodes forward instead of answering MOVED */
    int announce_replicas;     /* --announce-replicas yes */
    const char *fsync;         /* --fsync for every node, or NULL */
    const char *acks;          /* --acks for every node, or NULL */
    const char *replace_after; /* --replace-after for every node, or NULL */
    const char *split_qps;     /* --split-qps for every node, or NULL */
    const char *split_size;    /* --split-size for every node, or NULL */
    const char *merge_delay;   /* --merge-delay for every node, or NULL */
    const char *hot_sample;    /* --hotkeys-sample for every node, or NULL */
    const char *salting[5];    /* --hot-key-writes, --hot-key-time,
                                * --unsalt-after, --salted-incr-reply,
                                * --hot-key-reads */
    const char *coordinator;   /* "etcd://..." for every node, or NULL */
    const char *debug;         /* --enable-debug-command, or NULL */
    const char *parallel;      /* --parallel-append, or NULL */
    int tls;                   /* --tls */
    char tls_dir[4096];        /* its files: DIR/tls */
    char tls_files[3][4200];   /* ca, cert, key */
} pk_up_args;

/*
 * One node as `cluster up` runs it.  argv points into the buffers here,
 * so it stays valid as long as the pk_up_node; port is rewritten with the
 * port the node got on its first start, which a restart then asks for.
 */
typedef struct pk_up_node {
    char dir[4096], port[16], join[64];
    char *argv[PK_UP_NODE_ARGS_MAX];
    long started_ms; /* mono_ms() when the running process was ready */
    long restart_ms; /* mono_ms() when to start it again, 0 if it runs */
    long delay_ms;   /* delay before the last restart, 0 before any */
    pid_t dead_pid;  /* the process that died, for the report */
    int dead_status; /* its wait status */
} pk_up_node;

/* Parses cluster up's flags (argv[0]: "up") into *a; 0, or -1 after a
 * one-line message. */
int pk_up_parse(int argc, char **argv, pk_up_args *a);

/* Fills n->argv for node i (n->dir set); coord_port is node 0's port (for
 * --join). */
void pk_up_node_argv(const pk_up_args *a, const char *secret, unsigned long i,
                     int coord_port, pk_up_node *n);

#endif

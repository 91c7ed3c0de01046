/*
 * pk_agent: a node's link to the coordinator, on its own thread.
 *
 * The agent registers the node under a lease (/partkv/<cluster>/nodes/
 * <name> = "host:port"), renews the lease, and polls the partition map
 * (/partkv/<cluster>/map) every PK_AGENT_POLL_MS; a map with a new
 * mod_revision is decoded and handed to the event loop through a
 * uv_async, so every router applies a change within about that period.
 * It reconnects by itself when the coordinator is unreachable, and the
 * node keeps serving with the map it holds meanwhile.
 *
 * It uses a blocking client (pk_sclient) so that coordinator latency never
 * stalls the loop.
 *
 * It also does the node's own map edits: a node that joins adds itself to
 * the map (state UP, no partitions) or refreshes its address; a move
 * source commits its finished moves (pk_agent_commit), retrying across
 * compare-and-swap races and reconnections until the coordinator has
 * decided; and it reads the rebalance run record (/partkv/<cluster>/
 * rebalance, "plan=ID state=running|paused|... rate=BYTES ...") so moves
 * follow pause and the bandwidth cap.
 */
#ifndef PK_SERVER_PK_AGENT_H
#define PK_SERVER_PK_AGENT_H

#include <stddef.h>
#include <stdint.h>

#define PK_AGENT_POLL_MS 30
#define PK_AGENT_LEASE_MS 1500 /* a dead node is failed over after this */
#define PK_CLUSTER_PREFIX "/partkv/default/"
#define PK_ACL_POLL_MS 100 /* how often a node reads the cluster's users */

typedef struct pk_server pk_server;
typedef struct pk_agent pk_agent;

/*
 * Starts the agent of server s: coordinator at host:port, secret for
 * PK.AUTH.  For a proxy (s->cfg.proxy_of), host:port is any cluster node
 * and the agent follows its PK.MAP instead; with a secret, it also reads
 * the cluster's users and writes the proxy's ACL edits (PK_JOB_ACL).  The
 * strings are copied (secret may be NULL for a proxy).  Returns 0,
 * PK_ENOMEM or PK_EIO (the thread could not start).
 */
int pk_agent_start(pk_server *s, const char *host, int port, const char *secret,
                   pk_agent **out);

/*
 * A map edit the agent makes for the loop, retrying across compare-and-
 * swap races and reconnections until the coordinator has decided.
 *
 * PK_JOB_COMMIT: a commit of moves whose copies are complete: for each
 * partition parts[i] still led by this node and moving to node `target`,
 * the target takes over (pk_pmap_move_commit), all in one map CAS.
 * switched[i] says which did (also when an earlier attempt already
 * committed it); a partition whose move was cancelled meanwhile stays.
 *
 * The range edits (pk_split.c) are about parts[0], done only if this node
 * still leads it at `epoch`; switched[0] says whether the map holds the
 * edit:
 *   PK_JOB_SPLIT     split at split_at (pk_pmap_split); the new range
 *                    gets `flags` (PK_PART_STICKY for an operator's);
 *   PK_JOB_MERGE     take in its right neighbour `other`, led here at
 *                    other_epoch (pk_pmap_merge);
 *   PK_JOB_FLAGS     its flags lose `clear` and gain `flags` (at `epoch`,
 *                    whoever leads it: PK_PART_MERGING asks the
 *                    controller to hand it to its left neighbour's leader).
 *
 * PK_JOB_SALT edits the salt table (pk_salt.h) for a key of parts[0],
 * only while this node leads parts[0] at `epoch`: `salt` set (added or
 * replaced), or with `unsalt` its key's entry removed.
 *
 * PK_JOB_FTDEF edits the index definitions (pk_ftdef.h): ftmode 0 adds
 * ftdef (refused when its name is taken), 1 replaces the definition of
 * its name and id (FT.ALTER; refused when that one is gone), 2 removes
 * the one named ftname.  switched[0] says whether the map holds the edit.
 *
 * PK_JOB_ACL edits the cluster's ACL users (/partkv/<cluster>/acl, an
 * ACL file's text, pk_acl.h): the agent reads it (acl_argv[0], the
 * node's own users, when there is none yet), applies the edit -- acl_op
 * 0: ACL SETUSER acl_argv[1] with the rules acl_argv[2..]; 1: ACL
 * DELUSER of acl_argv[1..]; 2: the whole text acl_argv[1] (ACL LOAD) --
 * and writes it back by compare-and-swap, again from the read on a race.
 * Every node polls the key and takes the users it holds (pk_acl_sync).
 *
 * `done` runs on the loop after the new map is installed there; the job
 * stays the submitter's.
 */
typedef enum pk_job_kind {
    PK_JOB_COMMIT = 0,
    PK_JOB_SPLIT,
    PK_JOB_MERGE,
    PK_JOB_FLAGS,
    PK_JOB_SALT,
    PK_JOB_FTDEF,
    PK_JOB_ACL,
} pk_job_kind;

typedef struct pk_agent_job {
    pk_job_kind kind;
    uint32_t target, n;
    const uint32_t *parts;
    uint8_t *switched; /* n entries, filled by the agent */
    const uint8_t *split_at;
    size_t split_len;
    uint64_t epoch;
    uint32_t other;
    uint64_t other_epoch;
    uint8_t flags, clear;
    const struct pk_salt *salt; /* PK_JOB_SALT, borrowed */
    int unsalt;
    const uint8_t *ftdef; /* PK_JOB_FTDEF, borrowed: an encoding */
    uint32_t ftdef_len;
    int ftmode;
    const char *ftname; /* borrowed */
    int acl_op;         /* PK_JOB_ACL */
    int acl_argc;
    const struct pk_arg *acl_argv; /* borrowed */
    void (*done)(struct pk_agent_job *j);
    void *ctx;
    struct pk_agent_job *next;
} pk_agent_job;

void pk_agent_commit(pk_agent *a, pk_agent_job *j);

/* The loop side: runs the done callbacks of finished jobs. */
void pk_agent_finish_jobs(pk_server *s);

/* The rebalance run record as last read: paused, and the cluster-wide
 * rate cap in bytes/s (0: none). */
void pk_agent_rebalance(pk_agent *a, int *paused, uint64_t *rate);

#define PK_AGENT_RATE_DEFAULT 50000000ull /* 50 MB/s without a record */

/* Stops the thread, revokes nothing (the lease expires), frees.  NULL ok. */
void pk_agent_stop(pk_agent *a);

#endif

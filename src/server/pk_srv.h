/*
 * pk_srv: the server layer's internal structures, shared by the loop
 * (pk_server.c), connections (pk_conn.c) and commands (pk_cmd*.c).  Not
 * for use outside src/server.
 *
 * Ownership: the server owns the store, the listener and every connection;
 * a connection owns its parser and output buffers.  During one loop
 * iteration every command runs in the server's one write transaction
 * (srv->txn), opened on first use and committed in the check phase.
 */
#ifndef PK_SERVER_PK_SRV_H
#define PK_SERVER_PK_SRV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/pk_pmap.h"
#include "proto/pk_reply.h"
#include "proto/pk_resp.h"
#include "server/pk_config.h"
#include "store/pk_store.h"
#include "store/pk_store_part.h"

#define PK_CONN_OBUF_HIGH (1u << 20) /* stop reading above 1 MiB pending */
#define PK_NAME_LEN 64

typedef struct pk_server pk_server;
typedef struct pk_conn pk_conn;
typedef struct pk_range pk_range;
typedef struct pk_cmd pk_cmd; /* pk_ctx.h */

/* A node's view of the cluster (pk_cluster.h: what follows from it). */
typedef struct pk_cluster {
    int enabled;                /* 1 once the node runs in a cluster */
    char name[PK_NAME_MAX + 1]; /* this node's 40-hex id */
    char addr[PK_ADDR_MAX + 1]; /* "host:port" others reach it at */
    pk_pmap *map;               /* owned; NULL until the first map */
    uint32_t self;              /* our id in map, or PK_NODE_NONE */
    pk_range *ranges;           /* owned; the range scheme's key order */
} pk_cluster;

/* Command durations: partkv_command_duration_seconds (pk_metrics.h). */
#define PK_LAT_BUCKETS 12

/* Latency classes of partkv_command_duration_seconds. */
enum { PK_LAT_READ, PK_LAT_WRITE, PK_LAT_OTHER, PK_LAT_CLASSES };

typedef struct pk_latency {
    uint64_t bucket[PK_LAT_CLASSES][PK_LAT_BUCKETS + 1]; /* last: +Inf */
    uint64_t count[PK_LAT_CLASSES];
    double sum_s[PK_LAT_CLASSES];
} pk_latency;

struct pk_conn {
    uv_tcp_t tcp; /* first member: handle->data is not needed */
    pk_server *srv;
    pk_resp_parser *parser; /* owned */
    pk_obuf out;            /* replies not yet handed to the socket */
    pk_obuf wire;           /* replies in flight in a uv_write */
    uv_write_t wreq;
    uint64_t id;
    int proto;               /* 2 or 3 */
    int authed;              /* 1 when no password is set */
    struct pk_tls_conn *tls; /* owned, on a TLS port; else NULL */
    int closing_tls;         /* the TLS session failed: nothing more out */
    int reading;             /* uv_read_start active */
    int closing;             /* close after pending output is flushed */
    int writing;             /* wreq in flight */
    int freed;               /* uv_close issued */
    uint64_t created_ms, last_ms;
    /* Over its soft output buffer limit since (pk_climit.c), or 0. */
    uint64_t obuf_soft_ms;
    char name[PK_NAME_LEN];
    char addr[64];  /* peer "ip:port" */
    char laddr[64]; /* local "ip:port" */
    /* Group-commit bookkeeping for the current iteration. */
    size_t iter_mark;   /* pending output bytes before its first command */
    uint32_t iter_cmds; /* commands executed this iteration */
    pk_conn *iter_next; /* next connection touched this iteration */
    int in_iter;
    int blocked;     /* reading stopped by backpressure */
    int asking;      /* ASKING: the next command may be imported */
    int readonly;    /* READONLY: reads may be served by followers */
    int internal;    /* presented the cluster secret (PK.AUTH) */
    int raw_keys;    /* PK.RAWKEYS: salted keys' parts as stored */
    int waiting_fwd; /* a forwarded command's reply is outstanding */
    int yield;       /* set by a bulk command: run the rest later */
    pk_arg *held;    /* a command waiting on a fence, or NULL */
    int nheld;
    uint64_t held_ms;     /* when it was held */
    pk_conn *held_next;   /* on *held_on */
    pk_conn **held_on;    /* the list it waits on: srv->held, or another */
    uint64_t rx_seq;      /* srv->rx_seq of its last read */
    int hr_forward;       /* pk_hotread.c: forward the held read */
    pk_conn *resume_next; /* on srv->resume, waiting to run its commands */
    uint64_t resume_gen;  /* the idle round it was queued in */
    int in_resume;
    /* Replication (pk_repl.c): replies wait for replicas' acks. */
    struct rp_need *needs; /* partitions and log positions touched */
    uint32_t nneeds, cap_needs;
    int waiting_ack;        /* replies kept until the needs are met */
    uint64_t ack_ms;        /* since when */
    size_t gate_mark;       /* the kept replies: [gate_mark, gate_end) */
    size_t gate_end;        /* bytes after out.head */
    uint32_t gate_cmds;     /* commands they answer */
    pk_conn *ack_next;      /* on the repl's waiters */
    struct rp_need *writes; /* WAIT: the last writes, part and seq */
    uint32_t nwrites;
    int64_t wait_n;         /* WAIT: replicas asked for */
    uint64_t wait_deadline; /* WAIT: 0 for none */
    int in_wait;
    pk_conn *wait_next;
    struct coord_call *coord_call; /* a PK.COORD answer awaited (etcd) */
    /* The ACL user (borrowed from srv->acl): the default user at first;
     * NULL once its user was deleted (the connection is closing). */
    struct pk_acl_user *user;
    /* MULTI/EXEC and WATCH (pk_multi.h). */
    struct pk_multi *multi;  /* owned; non-NULL between MULTI and EXEC */
    struct pk_multi *spare;  /* owned: the last one, kept for the next */
    struct pk_wkey *watched; /* this connection's watched keys, owned */
    int watch_dirty;         /* a watched key changed: EXEC fails */
    /* Set while EXEC runs the queued commands: a blocking command
     * (BLPOP, BLMOVE, WAIT...) must not block then -- it answers at once,
     * as Redis does inside MULTI, as if its timeout had passed. */
    int in_exec;
    pk_conn *prev, *next;   /* all connections */
    const char *last_cmd;   /* name of the last command, static */
    const char *last_sub;   /* its subcommand (pk_cmd_subcommand) or NULL */
    const pk_cmd *cmd_seen; /* the last command found: a pipeline repeats it */
    /* Waiting in a blocking command (pk_block.c), or NULL. */
    struct bl_waiter *blk;
};

typedef struct pk_part_rate {
    uint64_t reads, writes;       /* counters at the last sample */
    double read_rate, write_rate; /* per second, last interval */
    /* Owned; sampling the requests of a range this node leads while it
     * is over --split-qps (pk_server.c starts and ends it), else NULL. */
    struct pk_splitfind *finder;
    /* Merges (pk_split.c): bytes at the last sample; since when (ms, 0:
     * not) this node leads it and it is cold, under half of --split-qps
     * and of --split-size; and since when it and its right neighbour
     * pair_with, both led here, are so together. */
    uint64_t bytes;
    uint64_t cold_since, pair_since;
    uint32_t pair_with;
    /* Since start, of the commands run here on it (pk_cmd_dispatch): CPU
     * time, request and reply bytes (CLUSTER SLOT-STATS, PK.PARTITIONS). */
    uint64_t cpu_us, net_in, net_out;
} pk_part_rate;

#define PK_TLS_RBUF 16384u /* ciphertext read at a time, and plaintext */

struct pk_server {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_check_t check;
    uv_idle_t idle;      /* runs while connections wait on srv->resume */
    pk_conn *resume;     /* unblocked connections with commands buffered */
    uint64_t resume_gen; /* idle rounds run so far */
    uv_timer_t expire_timer, rate_timer, sync_timer, settle_timer;
    uv_timer_t prefault_timer;
    pk_expire_pos expire_pos; /* where active expiry goes on */
    uv_signal_t sigterm, sigint;
    uv_work_t sync_work;
    int syncing;
    int sync_rc;
    uv_work_t prefault_work; /* pk_store_prefault in the thread pool */
    int prefaulting;
    pk_server_config cfg;
    pk_config_state conf; /* CONFIG SET's values (pk_config.h) */
    pk_store *store;
    pk_cluster cluster;
    struct pk_coord *coord;         /* hosted coordinator, or NULL */
    uv_timer_t coord_timer;         /* lease expiry of the hosted coordinator */
    struct pk_agent *agent;         /* link to the coordinator, or NULL */
    struct pk_link *links;          /* forwarding links to peers */
    uv_async_t map_async;           /* the agent posted a map */
    pthread_mutex_t map_lock;       /* guards map_pending */
    struct pk_pmap *map_pending;    /* owned; taken by the loop */
    struct pk_agent_job *jobs_done; /* finished commits, guarded too */
    char *acl_pending;              /* cluster's users, owned, guarded */
    size_t acl_pending_len;         /* its length */
    struct pk_mover *mover;         /* partition moves (pk_move.h) */
    struct pk_repl *repl;           /* replication (pk_repl.h) */
    struct pk_ctrl *ctrl;           /* failover controller (pk_ctrl.h) */
    struct pk_salted *salted;       /* salted keys (pk_salted.h), or NULL */
    pk_txn *txn;     /* this iteration's write transaction, or NULL */
    pk_conn *iter;   /* connections touched this iteration */
    pk_conn *conns;  /* all connections */
    pk_conn *held;   /* connections holding a command (pk_conn_hold) */
    uint64_t rx_seq; /* socket reads so far (pk_conn.c) */
    uint32_t nconns;
    uint64_t next_id;
    uint64_t now_ms; /* wall clock, refreshed per read batch */
    uint64_t start_ms;
    int port; /* bound port */
    int shutting_down;
    /* TLS (pk_tls.h): the contexts, NULL without --tls-port; the TLS
     * listener and its bound port; one read buffer for every TLS
     * connection (its ciphertext goes into pk_tls at once); SIGHUP. */
    struct pk_tls *tls;
    uv_tcp_t tls_listener;
    int tls_port;
    char *tls_rbuf;
    uv_signal_t sighup;
    uint64_t tls_failures; /* handshakes or records that failed */
    uint64_t tls_log_ms;   /* when the last one was logged */
    /* Stats. */
    uint64_t total_conns, total_cmds, rejected_conns, expired_keys;
    uint64_t hits, misses, commit_failures, commits;
    uint32_t fail_commits; /* PK.REPL FAILCOMMITS: the next ones fail */
    uint64_t ops_last, ops_rate;
    pk_part_rate *rates;   /* owned, PK_SLOTS entries */
    struct pk_wtab *watch; /* WATCHed keys (pk_multi.c), owned, or NULL */
    uint32_t nwatched;     /* entries in it: 0 costs writes nothing */
    /* Blocked connections (pk_block.c), owned, NULL until first used;
     * and the pk_cmd_dispatch calls under way (retries run at 0). */
    struct pk_block *block;
    struct pk_splitter *splitter; /* pk_split.c, owned, NULL until used */
    struct pk_topk *hot;          /* pk_hot.c, owned, NULL when off */
    struct pk_hotread *hotread;   /* pk_hotread.c, owned, NULL when off */
    struct pk_ft *ft;             /* pk_ft.c, owned, NULL on a proxy */
    struct pk_metrics *metrics;   /* pk_metrics.c, owned, NULL when off */
    pk_latency lat;               /* command durations (pk_metrics.h) */
    uint64_t hot_rng;             /* its sampling draws */
    int dispatch_depth;
    struct pk_acl *acl; /* ACL users (pk_acl.h), owned */
    char *requirepass;  /* CONFIG SET's, owned; cfg.requirepass points here */
};

/* Command execution context, one per command. */
typedef struct pk_cmd_ctx {
    pk_server *srv;
    pk_conn *c;
    int argc;
    const pk_arg *argv; /* borrowed from the parser until the next read */
    pk_obuf *out;
    int proto;
    /* Set by routing when every key of the command lies in one partition,
     * so command code does not hash the keys a second time. */
    int have_part;
    uint32_t part;
    /* Set by EXEC: a blocking command answers as if it timed out. */
    int noblock;
    /* Set by a write that changed only one of its keys (SMOVE of a
     * member the destination holds): the argv position of that key, so
     * WATCH sees only it touched; 0 for all of them. */
    int touch_arg;
    /* An index query's share (pk_ft): only the hits whose keys this ACL
     * user may read count; NULL for every hit. */
    const struct pk_acl_user *reader;
} pk_cmd_ctx;

/* pk_conn.c */
void pk_conn_accept(uv_stream_t *listener, int status);
/* The same on the TLS port. */
void pk_conn_accept_tls(uv_stream_t *listener, int status);
/* Output not yet on the socket: replies, bytes in flight, and on a TLS
 * connection the ciphertext waiting behind them. */
size_t pk_conn_pending(const pk_conn *c);
void pk_conn_flush(pk_conn *c);
void pk_conn_close(pk_conn *c);
/* A forwarded reply arrived: send what is committed, run what waits. */
void pk_conn_resume(pk_conn *c);
/* Holds the command in x (copied) until pk_conn_release_all: the
 * connection runs nothing else meanwhile (a write waiting on a fence). */
void pk_conn_hold(pk_cmd_ctx *x);
/* Answers -TRYAGAIN to commands held longer than max_ms (a switch that
 * waits for an unreachable coordinator), and lets their connections go
 * on; Redis clients retry TRYAGAIN. */
void pk_conn_hold_expire(pk_server *s, uint64_t max_ms);
/* Runs every held command again, then what each connection has buffered */
void pk_conn_release_all(pk_server *s);
/* pk_conn_hold and pk_conn_release_all on a list of the caller's. */
void pk_conn_hold_on(pk_cmd_ctx *x, pk_conn **list);
void pk_conn_release(pk_server *s, pk_conn **list);
/* A copy of argv in one allocation (free() it; each argument is also
 * NUL-terminated), or NULL when out of memory. */
pk_arg *pk_conn_args_copy(int argc, const pk_arg *argv);
/* Enrols c in this iteration's group commit (a reply made outside its
 * own read: a blocked command served or timed out). */
void pk_conn_join(pk_conn *c);
/* c waits no more (pk_block): its buffered commands run next. */
void pk_conn_unblocked(pk_conn *c);

/* pk_server.c */
uint64_t pk_srv_wall_ms(void);
/* The iteration's write transaction, begun on first use; NULL after
 * replying an error when the store cannot begin one. */
pk_txn *pk_srv_txn(pk_cmd_ctx *x);
/* Settles every follower record the store deferred (pk_store_log_defer),
 * in the iteration's transaction if one is open, else in its own: before
 * data that was followed is read in a snapshot (a new lead, a move).  The
 * settle timer does the same in slices (pk_server.c). */
void pk_srv_settle(pk_server *s);
/*
 * Whether this node leads partition part (always, outside a cluster): the
 * commands that cover a whole keyspace (DBSIZE, SCAN, KEYS, FLUSHALL,
 * RANDOMKEY, INFO keyspace) cover the partitions a node leads, so that a
 * client summing them over the primaries counts every key once.  A
 * pk_part_filter; server is the pk_server.
 */
int pk_srv_leads(void *server, uint32_t part);
/* The partition of a key: its Redis Cluster slot (or hash partition) in
 * a cluster, 0 on a node alone. */
uint32_t pk_srv_part(const pk_server *s, const void *key, size_t len);
void pk_srv_shutdown(pk_server *s);
/* Installs map m (taking it) unless it is not newer than the one held;
 * then moves and the janitor look at it.  polled: m came from the
 * coordinator (not a peer's push).  Returns 1 if installed. */
int pk_srv_set_map(pk_server *s, struct pk_pmap *m, int polled);

/* pk_cmd_acl.c: pk_acl_server_init makes srv->acl (0, or -1 after a
 * message); a new (or RESET) connection takes the default user,
 * authenticated when it is on and nopass; pk_acl_conn_allows checks a
 * command against c->user, and replies -NOPERM and logs the denial
 * when it is not allowed (returns 0 then); pk_acl_conn_auth makes user
 * the connection's when pass is one of its passwords (returns 1), else
 * logs the failure (returns 0); pk_acl_load_file loads an ACL file
 * (ACL LOAD from connection self, --aclfile with self NULL): 0, or an
 * error code and *err (malloc'd). */
int pk_acl_server_init(pk_server *s);
void pk_acl_conn_start(pk_server *s, pk_conn *c);
int pk_acl_conn_allows(pk_cmd_ctx *x, const pk_cmd *cmd);
int pk_acl_conn_auth(pk_cmd_ctx *x, const pk_arg *user, const pk_arg *pass);
/* EXEC's check of a queued command: 1, or 0 after replying Redis's
 * "-NOPERM ACLs rules changed ..." and logging the denial. */
int pk_acl_exec_allows(pk_cmd_ctx *x, const pk_cmd *cmd);
int pk_acl_load_file(pk_server *s, pk_conn *self, const char *path, char **err);
/* A cluster node: the users the coordinator holds replace its own
 * (pk_acl_sync_text); ACL SETUSER, DELUSER and LOAD are applied here,
 * answered, and sent to the coordinator by the agent (PK_JOB_ACL). */
void pk_acl_cluster_apply(pk_server *s, const char *text, size_t len);
/* --requirepass, and CONFIG SET requirepass with share set: the default
 * user's passwords become pw alone (nopass when len is 0), as Redis sets
 * them; shared, the change goes to the cluster as ACL SETUSER does.  0,
 * or -1 out of memory. */
int pk_acl_set_requirepass(pk_server *s, const char *pw, size_t len, int share);
/* 1 when the connection's user may not read key: KEYS and SCAN leave it
 * out (a partkv deviation: Redis 7.0 lists every key to a user allowed
 * to run them), so that no command tells of keys outside its patterns. */
int pk_acl_conn_hides(const pk_conn *c, const void *key, size_t len);
/* 1 when the connection's user may read every key with this command (a
 * selector allows it and has ~* or %R~*): SORT's BY and GET patterns
 * read keys no argument names, and need it, as in Redis 7.0. */
int pk_acl_conn_reads_all(pk_cmd_ctx *x);

/* pk_cmd_coord.c: the connection closed; an awaited answer is dropped */
void pk_coord_conn_closed(pk_conn *c);

/* pk_cmd.c: the dispatcher, which lower modules call back into (a
 * blocked command retried, EXEC's queued commands, a salted key's part).
 * pk_cmd_run runs cmd (routed already), then touches the WATCHed keys it
 * changed: dispatch and EXEC run every command through it. */
void pk_cmd_dispatch(pk_cmd_ctx *x);
void pk_cmd_run(pk_cmd_ctx *x, const pk_cmd *cmd);

/*
 * Listens on tcp at port (0: a free one) of --bind for cb; *bound is the
 * port.  Returns 0, or -1 after a message (what: " for metrics", ...).
 */
int pk_srv_listen(pk_server *s, uv_tcp_t *tcp, int port, uv_connection_cb cb,
                  const char *what, int *bound);

#endif

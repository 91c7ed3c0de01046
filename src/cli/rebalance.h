/*
 * rebalance: what `partkv node ...` and `partkv rebalance ...` share --
 * the authenticated connection to the coordinator, whole-map
 * compare-and-swap, the run record, the stored plan and its JSON form,
 * per-partition sizes and in-flight move sessions read from the nodes.
 *
 *   node drain|remove|weight  --->  map CAS (epoch + 1)
 *   rebalance plan            --->  map GET, PK.PARTITIONS on every node,
 *                                   plan stored at plans/<id> (JSON)
 *   rebalance apply           --->  run record + map CAS per round (begin
 *                                   moves); the nodes copy and commit
 *   rebalance pause|resume|cancel|status  --->  run record (+ cancel CAS)
 *
 * The run record at PK_CLUSTER_PREFIX "rebalance" is one line of text,
 * "plan=<id> state=<s> rate=<bytes/s> max_concurrent=<K> epoch=<E>", that
 * the nodes parse too (state and rate), so its format is fixed.
 *
 * Everything here runs in one CLI process, single-threaded; every pointer
 * returned is owned by the caller unless stated otherwise.
 */
#ifndef PK_CLI_REBALANCE_H
#define PK_CLI_REBALANCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/pk_pmap.h"
#include "server/pk_agent.h"

struct pk_sclient;
struct pk_rr;

#define RB_PLAN_PREFIX PK_CLUSTER_PREFIX "plans/"
#define RB_RUN_KEY PK_CLUSTER_PREFIX "rebalance"
#define RB_MAP_KEY PK_CLUSTER_PREFIX "map"
#define RB_ID_MAX 40
#define RB_DEFAULT_RATE 50000000ULL /* 50 MB/s */
#define RB_DEFAULT_CONCURRENT 1024u

/* Where to reach the cluster, from --cluster, --secret and --dir. */
typedef struct rb_target {
    const char *cluster; /* "host:port", borrowed from argv */
    const char *secret;  /* NULL: $PARTKV_SECRET, else <dir>/secret */
    const char *dir;     /* default "./data" */
} rb_target;

/* One plan move, with node ids of the map the plan is read against. */
typedef struct rb_move {
    uint32_t part, from, to; /* from/to may be PK_NODE_NONE */
    uint8_t role;            /* pk_role */
    uint8_t transfer;        /* 1: leadership handover only */
    uint64_t keys, bytes;    /* the partition's size on its leader */
} rb_move;

/* Per-node balance before and after a plan. */
typedef struct rb_nodestat {
    uint32_t replicas_before, replicas_after;
    uint32_t leaders_before, leaders_after;
    uint64_t bytes_before, bytes_after;
} rb_nodestat;

typedef struct rb_plan {
    char id[RB_ID_MAX + 1];
    uint64_t epoch;  /* map epoch the plan was made at */
    char policy[16]; /* balanced | ring | rendezvous */
    uint64_t rate;   /* bytes per second, 0 = unlimited */
    uint32_t max_concurrent;
    uint32_t nmoves;
    rb_move *moves;     /* owned */
    uint32_t nnodes;    /* == the map's nnodes */
    rb_nodestat *nodes; /* owned, indexed by node id */
    uint64_t min_bytes; /* least bytes any balanced plan copies */
} rb_plan;

typedef struct rb_totals {
    uint32_t moves, data_moves, transfers, partitions;
    uint64_t keys, bytes;
} rb_totals;

/* The run record; state is one of running, paused, cancelled, done,
 * failed. */
typedef struct rb_run {
    char plan[RB_ID_MAX + 1];
    char state[16];
    uint64_t rate;
    uint32_t max_concurrent;
    uint64_t epoch;
} rb_run;

/* A move session a source node reports in PK.MOVES. */
typedef struct rb_session {
    uint32_t source; /* node id of the reporting node */
    char target[PK_ADDR_MAX + 1];
    int64_t partitions, bytes;
    char state[24];
} rb_session;

/* Move progress as the driver sees it. */
enum { RB_PENDING = 0, RB_FLIGHT = 1, RB_DONE = 2 };

/* --- rebalance_coord.c ------------------------------------------------ */

/* Splits "host:port"; 0 or -1. */
int pk__rb_hostport(const char *s, char *host, size_t cap, int *port);

/* Connects to t->cluster and presents the secret.  Prints the reason
 * (unless who is NULL) and returns 1 on failure (2 for a malformed
 * --cluster), else 0. */
int pk__rb_connect(const rb_target *t, const char *who,
                   struct pk_sclient **out);

/* PK.COORD GET: *val (malloc'd, NUL-terminated) and *mod_rev.  Returns 0,
 * PK_ENOTFOUND, PK_EIO or PK_ENOMEM. */
int pk__rb_kv_get(struct pk_sclient *c, const char *key, char **val,
                  size_t *len, uint64_t *mod_rev);
/* PK.COORD PUT key val 0.  Returns 0 or PK_EIO. */
int pk__rb_kv_put(struct pk_sclient *c, const char *key, const char *val,
                  size_t len);

/* The map and its mod_revision.  0, PK_ENOTFOUND, PK_EIO or a decode
 * error. */
int pk__rb_map_get(struct pk_sclient *c, pk_pmap **m, uint64_t *mod_rev);
/* CAS of the map against mod_rev.  0, PK_ESTALE or PK_EIO. */
int pk__rb_map_cas(struct pk_sclient *c, const pk_pmap *m, uint64_t mod_rev);

/*
 * GET, edit, CAS; again from a fresh map while the CAS says ESTALE.  edit
 * returns 0 to write (it bumps the epoch itself), 1 when there is nothing
 * to write, or a negative code that ends the loop.  *out, if not NULL,
 * receives the map as written (or as read when nothing was written).
 */
typedef int (*rb_edit_fn)(pk_pmap *m, void *ctx);
int pk__rb_map_edit(struct pk_sclient *c, rb_edit_fn edit, void *ctx,
                    pk_pmap **out);

/*
 * A map kept between polls (the driver's): refreshed with a conditional
 * GET, so an unchanged 100+ KB map is not sent, decoded or copied again.
 */
typedef struct rb_mapcache {
    pk_pmap *m;   /* NULL until the first refresh */
    uint64_t rev; /* its mod_revision */
} rb_mapcache;
int pk__rb_map_refresh(struct pk_sclient *c, rb_mapcache *mc);
/* pk__rb_map_edit over the cache; *out is a copy the caller frees. */
int pk__rb_map_edit_cached(struct pk_sclient *c, rb_mapcache *mc,
                           rb_edit_fn edit, void *ctx, pk_pmap **out);
void pk__rb_mapcache_free(rb_mapcache *mc);

/* The options plan and apply share: --cluster, --secret, --dir (in a
 * getopt_long table), and --max-concurrent K. */
/* clang-format off */
#define RB_TARGET_OPTIONS                                                      \
    {"cluster", required_argument, NULL, 'c'},                                 \
    {"secret", required_argument, NULL, 'S'},                                  \
    {"dir", required_argument, NULL, 'd'}
/* clang-format on */
/* Takes option ch (argument arg) into t if it is one of those: 1, else 0. */
int pk__rb_target_opt(int ch, const char *arg, rb_target *t);
/* K of --max-concurrent, 1..100000.  0 or -1. */
int pk__rb_parse_k(const char *s, uint32_t *k);

/* Run record.  get: 0 or PK_ENOTFOUND / PK_EIO / PK_ECORRUPT. */
int pk__rb_run_get(struct pk_sclient *c, rb_run *r);
/* Deletes every stored plan but the one a live run uses.  0 or error. */
int pk__rb_plans_prune(struct pk_sclient *c);
int pk__rb_run_put(struct pk_sclient *c, const rb_run *r);

/* Finds a node by 40-hex name, unique prefix (>= 6) or "host:port".
 * Returns 0, or -1 with a reason in err. */
int pk__rb_node_resolve(const pk_pmap *m, const char *spec, uint32_t *id,
                        char *err, size_t cap);

/* "n3(127.0.0.1:7003)" or "-" for PK_NODE_NONE. */
const char *pk__rb_node_label(const pk_pmap *m, uint32_t id, char *buf,
                              size_t cap);

/* --- rebalance_stats.c ------------------------------------------------ */

/* Keys and bytes of every partition (arrays of m->npartitions, owned),
 * taken from PK.PARTITIONS of each partition's leader. */
int pk__rb_sizes(const pk_pmap *m, uint64_t **keys, uint64_t **bytes);

/* Every session in PK.MOVES of every node; nodes that do not know the
 * command add nothing. */
int pk__rb_sessions(const pk_pmap *m, rb_session **out, size_t *n);

/* Value of field `name` in a RESP3 map or RESP2 flat pair array. */
const struct pk_rr *pk__rb_field(const struct pk_rr *r, const char *name);

/* --- rebalance_json.c ------------------------------------------------- */

/* The plan as one JSON object (malloc'd text): what --json prints, or
 * with stored != 0 the smaller form kept in the coordinator. */
char *pk__rb_plan_json(const rb_plan *p, const pk_pmap *m, int stored);
/* Parses a stored plan against map m (node names to ids).  0, or -1 with
 * a reason in err. */
int pk__rb_plan_parse(const char *text, const pk_pmap *m, rb_plan *p, char *err,
                      size_t cap);
/* Loads plans/<id>; prints the reason and returns 1 on failure. */
int pk__rb_plan_load(struct pk_sclient *c, const char *id, const pk_pmap *m,
                     rb_plan *p);
void pk__rb_plan_free(rb_plan *p);

/* --- rebalance.c ------------------------------------------------------ */

void pk__rb_totals(const rb_plan *p, rb_totals *t);
/* "50MB/s", "10KB", "1GB/s", "123", "0", "unlimited"; 0 or -1. */
int pk__rb_parse_rate(const char *s, uint64_t *bps);
/* "612 B", "12.3 KB", "1.5 GB" (1000-based). */
const char *pk__rb_fmt_bytes(uint64_t b, char *buf, size_t cap);
/* "0:42", "1:02:03". */
const char *pk__rb_fmt_secs(double s, char *buf, size_t cap);
/* The state of every move against m, in plan order per partition (a later
 * move of a partition being done means the earlier ones are).  st has
 * p->nmoves entries; entries already RB_DONE stay done. */
void pk__rb_progress(const rb_plan *p, const pk_pmap *m, uint8_t *st);

/*
 * A move that needs no copy (a follower or new replica, a dropped
 * follower, a leader for an unowned partition; with transfer 1 or
 * to == PK_NODE_NONE) done as a direct edit of m: `to` takes `from`'s
 * place and role.  Also what a data move leaves behind once committed,
 * which is how plan previews count the result.  m->epoch is not bumped.
 * Returns 0, or PK_ESTALE when m does not hold `from` in partition p, or
 * already holds `to`.
 */
int pk__rb_edit_move(pk_pmap *m, const rb_move *mv);

/* 1 when the driver applies mv as a map edit rather than a node move. */
int pk__rb_map_only(const rb_move *mv);

/* --- rebalance_preview.c ---------------------------------------------- */

/* The human preview of a freshly stored plan. */
void pk__rb_preview(const rb_plan *p, const pk_pmap *m, const char *cluster);

/* Unless yes, prints the summary and asks "apply? [y/N]" on the terminal.
 * Returns 0 to go on, 1 when refused, 2 when stdin is not a terminal. */
int pk__rb_confirm(const rb_plan *p, const rb_run *run, int yes);

/* Replicas and leaders of every node in m, one line each. */
void pk__rb_print_counts(const pk_pmap *m);

/* --- rebalance_watch.c ------------------------------------------------ */

/*
 * The driver's view of progress: bytes done (plan bytes of done moves plus
 * what sessions in flight report), the measured rate, the ETA, a warning
 * for moves that stall, and the progress line (redrawn on a terminal, a
 * plain line every 2 s otherwise).  The watch borrows the plan.
 */
typedef struct rb_watch rb_watch;
rb_watch *pk__rb_watch_new(const rb_plan *p, uint64_t rate, int tty);
/* Updates from map m and move states st; draws when it is time. */
void pk__rb_watch_tick(rb_watch *w, const pk_pmap *m, const uint8_t *st,
                       const char *state);
/* Ends the progress line (a newline on a terminal). */
void pk__rb_watch_break(rb_watch *w);
/* Seconds since the watch started. */
double pk__rb_watch_elapsed(const rb_watch *w);
/* Bytes per second copied since the watch started (a resumed run counts
 * only what it saw being copied). */
double pk__rb_watch_average(const rb_watch *w);
void pk__rb_watch_free(rb_watch *w);
double pk__rb_now(void);

/* --- subcommands ------------------------------------------------------- */

int pk__rb_cmd_plan(int argc, char **argv);
int pk__rb_cmd_apply(int argc, char **argv);
int pk__rb_cmd_control(int argc, char **argv); /* pause|resume|cancel */
int pk__rb_cmd_status(int argc, char **argv);

/* Cancels every in-flight move of p in one CAS; the count in *n. */
int pk__rb_cancel_moves(struct pk_sclient *c, const rb_plan *p, uint32_t *n);

#endif

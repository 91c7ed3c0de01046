/*
 * pk_ft_int: what pk_ft.c (definitions, writes, janitor) and
 * pk_ft_search.c (queries) share.  Internal to those two files.
 */
#ifndef PK_SERVER_PK_FT_INT_H
#define PK_SERVER_PK_FT_INT_H

#include <uv.h>

#include "core/pk_ftdef.h"
#include "core/pk_ftq.h"
#include "server/pk_ft.h"
#include "store/pk_keyenc.h"

typedef struct ft_index {
    pk_ftdef *def;  /* owned */
    uint8_t *built; /* per partition: 1 once known built here */
    uint32_t nparts;
    uint32_t next; /* janitor: the partition it looks at next */
    int in_part;   /* a build of `next` is under way */
    uint8_t cursor[PK_KEYENC_MAX];
    size_t clen;
    /* A local index's term filters (pk_ft_filter.c): per partition,
     * PK__FT_FILTER_BYTES of Bloom filter, valid while filter_epoch[p] is
     * its leader epoch + 1.  NULL for a global index. */
    uint8_t *filter;
    uint64_t *filter_epoch;
    uint32_t filter_next; /* the janitor's next partition to build */
} ft_index;

#define PK__FT_FILTER_BYTES 128

struct pk_ftq;
struct pk_rr;
typedef struct pk_ft pk_ft;
typedef struct ft_op ft_op;
typedef struct ft_edit ft_edit;
typedef struct pk__ftfeed pk__ftfeed;

struct pk_ft {
    pk_server *srv;
    ft_index *v; /* owned, n of them */
    uint32_t n;
    uint64_t epoch; /* the map epoch v reflects (a cluster) */
    uv_timer_t timer;
    ft_op *ops;          /* queries waiting for nodes (pk_ft_search.c) */
    ft_edit *edits;      /* definition edits waiting for the map (pk_ft.c) */
    uint32_t sweep;      /* janitor: the partition it checks next for
                          * entries of dropped indexes */
    uint32_t sweep_left; /* partitions left to check (0: none can have
                          * any: set again when an index goes) */
    pk__ftfeed *feed;    /* global indexes' feeder (pk_ft_global.c) */
    uint64_t queries, query_nodes; /* scattered, and the nodes asked */
};

/* Lookups a query plan may hold before a walk of every document. */
#define PK__FT_PLAN_MAX 64

/* The list of indexes follows the map (a cluster), when it changed. */
void pk__ft_sync(pk_server *s);

/* The index named name (synced with the map first), or NULL. */
ft_index *pk__ft_find(pk_server *s, const char *name, size_t len);

/* pk_ft_search.c's share of pk_ft_forget, pk_ft_free and the tick (a
 * query refused by a node that no longer leads a partition runs again). */
void pk__ft_search_tick(pk_server *s);
void pk__ft_search_forget(pk_server *s, pk_conn *c);
void pk__ft_search_free(pk_server *s);

#define PK__FT_PARAMS_MAX 256

/* PARAMS of FT.SEARCH and FT.AGGREGATE, borrowed from the arguments. */
typedef struct pk__ftparams {
    int n;
    const char *name[PK__FT_PARAMS_MAX], *val[PK__FT_PARAMS_MAX];
    size_t nlen[PK__FT_PARAMS_MAX], vlen[PK__FT_PARAMS_MAX];
} pk__ftparams;

/* A count argument within [0, max]: 1 and *out, else 0. */
int pk__ft_count(const pk_arg *a, int64_t max, int64_t *out);

/* "PARAMS n name value ..." at a[i] of argc arguments into p: how many
 * arguments it takes, or -1 when malformed. */
int pk__ft_params(const pk_arg *a, int argc, int i, pk__ftparams *p);

/* Query text q parsed on d with p: 0 and *out (pk_ftq_free), or -1 after
 * the error reply to o (RediSearch's text). */
int pk__ft_query(pk_obuf *o, const pk_ftdef *d, pk_slice q,
                 const pk__ftparams *p, struct pk_ftq **out);

/* A matching document's fields, borrowed from the read transaction. */
typedef struct pk__ftdoc {
    pk_slice *name, *val;
    size_t n, cap;
    const pk_ftdef *d;
} pk__ftdoc;

/* The value of the field a query names by attribute or hash field name,
 * or NULL. */
const pk_slice *pk__ftdoc_named(const pk__ftdoc *doc, pk_slice name);

/* What a visit does with each matching document (key: u32 length |
 * bytes): 0 to go on, else an error code that ends the visit. */
typedef int (*pk__ft_match_fn)(void *ctx, const pk__ftdoc *doc, uint32_t part,
                               const uint8_t *key);

/* Runs q on every partition bit-set in parts (np of them) in one read
 * transaction, calling fn for each matching document (of inkeys, when
 * ninkeys > 0).  0, or an error code. */
int pk__ft_visit(pk_server *s, const pk_ftdef *d, const struct pk_ftq *q,
                 const pk_arg *inkeys, int ninkeys, const uint8_t *parts,
                 uint32_t np, pk__ft_match_fn fn, void *ctx);

/* A kind of scattered question (pk_ft_gather.c): what each node runs on
 * its partitions and how the answers combine into the client's reply.
 * The state is the verb's own, owned by the gathering from
 * pk__ft_gather on. */
typedef struct pk__ftverb {
    const char *name; /* PK.FTQUERY's verb */
    int by_link;      /* it writes: even this node's share goes by a link,
                       * as a command of its own */
    /* A node's share on the partitions bit-set in parts, answered to o;
     * y holds the client's arguments (FT.x idx ...), y->c NULL when run
     * for the gathering node itself. */
    void (*node)(pk_cmd_ctx *y, const pk_ftdef *d, const uint8_t *parts,
                 uint32_t np, pk_obuf *o);
    void (*reset)(void *state); /* before each round (a retry) */
    /* One node's answer (not an error): NULL, or the error to answer. */
    const char *(*take)(void *state, const struct pk_rr *r);
    /* Every node answered: the reply to c; 0 when it comes later (the
     * waiting connection is then someone else's to resume).  c is NULL
     * for a verb that writes (by_link) whose client has gone: it finishes
     * what it started. */
    int (*reply)(void *state, pk_server *s, const pk_ftdef *d, pk_conn *c);
    void (*free)(void *state);
    /* Optional: every node answered; 1 to ask them all again a tick
     * later (a wait), 0 to reply. */
    int (*again)(void *state);
} pk__ftverb;

extern const pk__ftverb pk__ft_search_verb, pk__ft_info_verb, pk__ft_agg_verb,
    pk__ft_del_verb, pk__ft_wait_verb;

/* Asks every leader the client's command in x as v, on (a copy of) index
 * definition d, with state (taken); the client waits for v->reply.  With
 * only (taken; NULL: all) just the leaders of the partitions it bit-sets,
 * about those. */
void pk__ft_gather(pk_cmd_ctx *x, const pk_ftdef *d, const pk__ftverb *v,
                   void *state, uint8_t *only);

/* pk__ft_gather for c, which already waits (its command ran earlier),
 * with the client's argc arguments args (copied): the search verb with
 * state search (taken), after CONSISTENT's wait.  1 when it answered c
 * (an error), 0 when the answer comes later. */
int pk__ft_search_after(pk_server *s, pk_conn *c, const pk_ftdef *d, int argc,
                        const pk_arg *args, void *search, uint8_t *only);

/* ---- term filters (pk_ft_filter.c) ---- */

/* ix's filters, none valid yet (nothing for a global index): 0 or -1. */
int pk__ft_filter_init(ft_index *ix);
void pk__ft_filter_free(ft_index *ix);

/* pk_ftidx_doc of key in ix, adding the terms it writes to part's
 * filter. */
int pk__ft_filter_doc(pk_server *s, pk_txn *t, ft_index *ix, uint32_t part,
                      pk_slice key);

/* 0 when part surely has no entry lookup sc finds (an exact term its
 * valid filter lacks), else 1. */
int pk__ft_filter_may(const pk_server *s, const ft_index *ix, uint32_t part,
                      const pk_ftq_scan *sc);

/* The janitor: builds the filters of a few led, built partitions that
 * have none valid, in t. */
void pk__ft_filter_build(pk_server *s, pk_txn *t, ft_index *ix);

/* The index with id, or NULL. */
ft_index *pk__ft_by_id(pk_server *s, uint64_t id);

/* ---- global indexes (pk_ft_global.c) ---- */

/* 1 when some index is global. */
int pk__ft_any_global(const pk_ft *ft);

/* Partition part's outbox has a record (a write of a global index's
 * document ran, or its build). */
void pk__ft_global_dirty(pk_server *s, uint32_t part);

/* One round of the feeder, unless one is out (the janitor's tick). */
void pk__ft_global_feed(pk_server *s);
void pk__ft_global_free(pk_server *s);

/* The partitions a query q on global index d reads (owned bitmap), or
 * NULL: every partition (a local index, '*', a prefix, a wide range). */
uint8_t *pk__ft_global_parts(pk_server *s, const pk_ftdef *d,
                             const struct pk_ftq *q);

/* FT.SEARCH ... CONSISTENT on global index d: waits for the outboxes,
 * then runs the search (state search and only, taken). */
void pk__ft_consistent(pk_cmd_ctx *x, const pk_ftdef *d, void *search,
                       uint8_t *only);

/* The records of global index d waiting in the outboxes of the
 * partitions parts selects, and the age of the oldest (FT.INFO). */
int pk__ft_global_lag(pk_server *s, pk_txn *t, const pk_ftdef *d,
                      const uint8_t *parts, uint32_t np, int64_t *records,
                      int64_t *lag_ms);

/* An FT error reply.  RediSearch's texts carry no code ("Unknown Index
 * name"); Redis clients and tools expect one, and redis-py strips an
 * "ERR " it finds, so a text without an upper-case code gets "ERR ". */
void pk__ft_error(pk_obuf *o, const char *msg);
void pk__ft_errorf(pk_obuf *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The index FT.x names in argv[1], or NULL after an error reply. */
ft_index *pk__ft_index_arg(pk_cmd_ctx *x);

/* Byte order of two keys held as u32 length | bytes (qsort-shaped). */
int pk__ft_keycmp(const void *a, const void *b);

/* The value of hash field name (not an attribute) in doc, or NULL. */
const pk_slice *pk__ftdoc_get(const pk__ftdoc *doc, const char *name,
                              size_t len);

/* Re-indexes key (of partition part) in every index that covers it, in
 * t: after a write changed it. */
void pk__ft_reindex(pk_server *s, pk_txn *t, uint32_t part, pk_slice key);

/* Deletes the documents of index d in the partitions parts selects, in
 * x's transaction (their writes noted for replication like any write's);
 * *n: how many.  0, or -1 after an error reply to x. */
int pk__ft_delete_docs(pk_cmd_ctx *x, const pk_ftdef *d, const uint8_t *parts,
                       uint32_t np, int64_t *n);

/* FT.DROPINDEX ... DD in a cluster: every leader deletes the documents
 * of ix in its partitions, then pk__ft_drop_waiting. */
void pk__ft_search_deldocs(pk_cmd_ctx *x, ft_index *ix);

/* FT.DROPINDEX ... DD in a cluster, once the documents are gone: index
 * d (its name and id: not one created again since) leaves the map; c
 * (waiting) gets the answer. */
void pk__ft_drop_waiting(pk_server *s, pk_conn *c, const pk_ftdef *d);

/* Whether this node may write partition p now: it leads it, and no move,
 * split or handoff has fenced it (the janitor, DD). */
int pk__ft_writable(pk_server *s, uint32_t p);

/* The partitions a query covers: the number of them, 16384 on a node
 * alone (partition 0 only holds data then). */
uint32_t pk__ft_nparts(const pk_server *s);

#endif

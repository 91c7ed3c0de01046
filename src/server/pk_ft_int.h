/*
 * pk_ft_int: what pk_ft.c (definitions, writes, janitor) and
 * pk_ft_search.c (queries) share.  Internal to those two files.
 */
#ifndef PK_SERVER_PK_FT_INT_H
#define PK_SERVER_PK_FT_INT_H

#include <uv.h>

#include "core/pk_ftdef.h"
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
} ft_index;

struct pk_ftq;
struct pk_rr;
typedef struct pk_ft pk_ft;
typedef struct ft_op ft_op;
typedef struct ft_edit ft_edit;

struct pk_ft {
    pk_server *srv;
    ft_index *v; /* owned, n of them */
    uint32_t n;
    uint64_t epoch; /* the map epoch v reflects (a cluster) */
    uv_timer_t timer;
    ft_op *ops;     /* queries waiting for nodes (pk_ft_search.c) */
    ft_edit *edits; /* definition edits waiting for the map (pk_ft.c) */
    uint32_t sweep; /* janitor: the partition it checks for dropped ids */
};

/* The index named name (synced with the map first), or NULL. */
ft_index *pk__ft_find(pk_server *s, const char *name, size_t len);

/* pk_ft_search.c's share of pk_ft_forget, pk_ft_free and the tick (a
 * query refused by a node that no longer leads a partition runs again). */
void pk__ft_search_tick(pk_server *s);
void pk__ft_search_forget(pk_server *s, pk_conn *c);
void pk__ft_search_free(pk_server *s);

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

/* FT.AGGREGATE (pk_ft_agg.c): a request parsed from y's arguments
 * (FT.AGGREGATE idx query ...), or NULL after an error reply to out; a
 * node's share answered to out; a node's answer merged (NULL, or the
 * error); the client's reply. */
typedef struct pk__ftagg pk__ftagg;
pk__ftagg *pk__ft_agg_new(const pk_cmd_ctx *y, const pk_ftdef *d, pk_obuf *out);
void pk__ft_agg_free(pk__ftagg *a);
void pk__ft_agg_node(pk_server *s, const pk__ftagg *a, const pk_ftdef *d,
                     const uint8_t *parts, uint32_t np, pk_obuf *out);
const char *pk__ft_agg_take(pk__ftagg *a, const struct pk_rr *r);
void pk__ft_agg_reply(pk__ftagg *a, pk_obuf *out);

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

/* FT.DROPINDEX ... DD in a cluster, once the documents are gone: the
 * index named name leaves the map; c (waiting) gets the answer. */
void pk__ft_drop_waiting(pk_server *s, pk_conn *c, const char *name);

/* The partitions a query covers: the number of them, 16384 on a node
 * alone (partition 0 only holds data then). */
uint32_t pk__ft_nparts(const pk_server *s);

#endif

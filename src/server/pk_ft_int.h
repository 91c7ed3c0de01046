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

/* The partitions a query covers: the number of them, 16384 on a node
 * alone (partition 0 only holds data then). */
uint32_t pk__ft_nparts(const pk_server *s);

#endif

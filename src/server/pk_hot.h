/*
 * pk_hot: a node's hot keys, seen live.  Of the keyed commands a node runs
 * (a client's, or forwarded to it as the key's leader), a sample of
 * --hotkeys-sample (default 1 %) goes to a top-K tracker of 128 keys
 * (core/pk_topk.h: Space-Saving over counts that halve every second),
 * with the command's first key, its partition and whether it writes.
 * PK.HOTKEYS [COUNT k] [SLOT s] lists the hottest: key, estimated reads/s
 * and writes/s, the error bound of the estimate, partition, node, and
 * into how many parts the key is salted (pk_salted.h; 0: not).  The
 * cost on the command path is one random draw per keyed command, and for
 * a sampled one a hash and a probe of the tracker's index.
 */
#ifndef PK_SERVER_PK_HOT_H
#define PK_SERVER_PK_HOT_H

typedef struct pk_server pk_server;
typedef struct pk_cmd_ctx pk_cmd_ctx;

/* The keys the tracker keeps, and the most PK.HOTKEYS lists. */
#define PK_HOT_KEYS 128

/* Sets up tracking when --hotkeys-sample > 0.  Returns 0 or PK_ENOMEM. */
int pk_hot_init(pk_server *s);
void pk_hot_free(pk_server *s);

/* Every second: the counts decay. */
void pk_hot_tick(pk_server *s);

/* A command ran here: argv[first] is its first key (first <= 0: none). */
void pk_hot_note(pk_cmd_ctx *x, int first, int write);

/* PK.HOTKEYS (pk_cmd_hotkeys.c). */
void pk_cmd_pk_hotkeys(pk_cmd_ctx *x);

#endif

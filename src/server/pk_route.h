/*
 * pk_route: where a command runs, decided by the partition map a node
 * holds (pk_cluster.h): here, forwarded to the key's leader (forward
 * mode), or answered -MOVED, -CROSSSLOT, -CLUSTERDOWN; held while its
 * partition is fenced (a move's or split's switch, a leadership handoff);
 * a read of a read-hot key (pk_hotread.h) or of a salted key
 * (pk_salted.h) routed as those modules say.  And PK.RANGE's bounds as
 * routing reads them (pk_route_range.c; the command is pk_cmd_range.c).
 * Internal to src/server.
 */
#ifndef PK_SERVER_PK_ROUTE_H
#define PK_SERVER_PK_ROUTE_H

#include "server/pk_ctx.h"
#include "store/pk_zset_range.h"

/*
 * Decides whether the command in x may run here.  Returns 1 to run it, or
 * 0 after replying -MOVED, -ASK-less -CROSSSLOT or -CLUSTERDOWN.
 */
int pk_route(pk_cmd_ctx *x, const pk_cmd *cmd);

/*
 * MULTI: may cmd be queued here?  Its keys must share one slot that this
 * node leads (or, READONLY and cmd a read, follows); *slot gets it (-1:
 * no key, or not a cluster).  Returns 1, or 0 after replying -CROSSSLOT,
 * -MOVED or -CLUSTERDOWN.  Never forwards: a transaction's commands run
 * together here or not at all, so forward mode answers -MOVED too.
 */
int pk_route_queued(pk_cmd_ctx *x, const pk_cmd *cmd, int *slot);

/*
 * EXEC of a transaction whose keys lie in slot (-1: none): routes it as
 * one command (write: any queued command writes) -- 1 to run it here,
 * with x->have_part set when this node leads slot; 0 after replying
 * -MOVED, -TRYAGAIN, -CLUSTERDOWN, or after holding EXEC on a fenced
 * partition (pk_conn_hold: it runs again after the switch).
 */
int pk_route_exec(pk_cmd_ctx *x, int slot, int write);

/* PK.RANGE's key finder: the bounds that name a key ("[k" or "(k"). */
int pk_cmd_keys_pk_range(int argc, const pk_arg *argv, pk_keyrun *r);

/* A bound that names a key ("[k" or "(k"), not "-" or "+". */
int pk_cmd_pk_range_keyed(const pk_arg *a);

/* The range that holds the first key a read from bound b (its start, or
 * with rev its high bound) can return; "-" and "+" are the two ends. */
uint32_t pk_cmd_pk_range_first(const pk_range *r, const pk_zlex *b, int rev);

/* Range scheme: the partition where a PK.RANGE read starts, or -1 when
 * its first bound does not parse (it then runs here and says so). */
int pk_cmd_pk_range_start(const pk_cluster *cl, int argc, const pk_arg *argv);

/* The key span a PK.RANGE covers, low bound first whatever REV says: the
 * bounds' keys without "[" or "(", "" for "-" and "+" (hi "" meaning to
 * the end), for the split finder (pk_splitfind_record). */
void pk_cmd_pk_range_span(int argc, const pk_arg *argv, pk_slice *lo,
                          pk_slice *hi);

#endif

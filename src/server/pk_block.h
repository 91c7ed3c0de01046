/*
 * pk_block: blocking commands (BLPOP, BLMOVE, BLMPOP; later BZPOPMIN and
 * friends) -- a connection waits on a set of keys until one of them is
 * written, or until its timeout.  Internal to src/server, independent of
 * any data type.
 *
 * A blocking command runs as usual; when it finds nothing to serve it
 * calls pk_block_wait, which keeps a copy of its arguments and parks the
 * connection (it runs nothing else meanwhile, but is still read from, so
 * that a close is noticed).  After every write command to one
 * of the keys somebody waits on (pk_block_before/after around it, called
 * by dispatch), the key is ready; pk_block_serve then runs the waiting
 * commands again, oldest first for each key (FIFO), through the normal
 * dispatch: routing, the iteration's transaction, group commit and
 * replication gating apply to the retry as to any command.  A retry that
 * again finds nothing calls pk_block_wait again and keeps its place.
 * When the map changes every waiter is retried, so one whose key moved
 * away is answered -MOVED (or forwarded) by routing.
 *
 * Retries are served when the outermost dispatch returns (after EXEC, not
 * between its commands), then again for keys the retries made ready
 * (BLMOVE's destination), until none is left.
 */
#ifndef PK_SERVER_PK_BLOCK_H
#define PK_SERVER_PK_BLOCK_H

#include <stdint.h>

#include "server/pk_ctx.h"

/* Answers a command that waited in vain (timeout, or may not block). */
typedef void (*pk_block_timeout_fn)(pk_cmd_ctx *x);

/*
 * Parses a timeout in seconds (fractions allowed, 0 forever) into an
 * absolute wall-clock deadline in ms, 0 for none, as Redis does.  Returns
 * 1, or 0 after replying "ERR timeout is not a float or out of range" /
 * "ERR timeout is negative".
 */
int pk_block_timeout(pk_cmd_ctx *x, const pk_arg *a, uint64_t *deadline);

/*
 * The command found nothing to serve.  Unless it may not block (x->noblock,
 * as inside MULTI), the connection now waits on the keys of runs (argv
 * positions; duplicates count once) until deadline, and the command must
 * reply nothing; else on_timeout(x) answers at once.  On a retry the
 * connection keeps waiting in its place.  Out of memory: on_timeout.
 */
void pk_block_wait(pk_cmd_ctx *x, const pk_keyrun *runs, int nruns,
                   uint64_t deadline, pk_block_timeout_fn on_timeout);

/*
 * During a retry triggered by one key: that key's argv position, else 0
 * (first run, or a retry for a map change).  Redis serves a client from
 * the key that became ready.
 */
int pk_block_ready_arg(const pk_cmd_ctx *x);

/*
 * Around a write command (dispatch): before notes which of its keys
 * somebody waits on, after marks them ready.  Cheap when nobody waits.
 */
#define PK_BLOCK_MARKS 8
typedef struct pk_block_mark {
    int n; /* keys noted; -1: more than PK_BLOCK_MARKS, look again */
    int arg[PK_BLOCK_MARKS]; /* their argv positions */
} pk_block_mark;
void pk_block_before(pk_cmd_ctx *x, const pk_cmd *cmd, pk_block_mark *m);
void pk_block_after(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_block_mark *m);

/* Runs the commands waiting on ready keys (no-op while one is running). */
void pk_block_serve(pk_server *s);
/* Every waiter is retried (a new map: keys may have moved away). */
void pk_block_map_changed(pk_server *s);
/*
 * CLIENT UNBLOCK: c's blocked command is answered now, as if its timeout
 * had passed, or (error) with Redis's -UNBLOCKED error.  Returns 1, or 0
 * when c waits for nothing.
 */
int pk_block_unblock(pk_server *s, pk_conn *c, int error);
/* Connection c closes: it waits no more. */
void pk_block_conn_closed(pk_server *s, pk_conn *c);
/* Connections waiting (INFO blocked_clients). */
uint32_t pk_block_count(const pk_server *s);
/* Frees the state (after the loop closed its handles). */
void pk_block_free(pk_server *s);

#endif

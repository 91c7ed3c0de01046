/*
 * pk_server: one partkv node -- a libuv loop serving RESP clients from an
 * LMDB store.
 *
 * All state hangs off one pk_server per event loop (no globals), so a later
 * step can run one loop per core.  The loop body, per iteration:
 *
 *   poll  -> read callbacks: parse every complete command, execute it
 *            against the iteration's write transaction, append its reply
 *            to the connection's output buffer (nothing is sent yet)
 *   check -> commit the transaction once (group commit); on success send
 *            every pending reply, on failure replace the iteration's
 *            replies by errors -- a write is acknowledged only once durable
 *            per --fsync
 *
 * Timers: active expiry (10 Hz), per-partition rates (1 Hz), and with
 * --fsync everysec a background LMDB sync once a second.
 */
#ifndef PK_SERVER_PK_SERVER_H
#define PK_SERVER_PK_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "server/pk_config.h"

/* Defaults as Redis has them where the option exists there. */
void pk_server_config_default(pk_server_config *c);

/*
 * Runs a node until SIGTERM/SIGINT or SHUTDOWN.  Prints one line
 * "partkv: ready on HOST:PORT pid PID" on stdout once listening.  Returns
 * the process exit status: 0 after a clean shutdown, 1 when the node could
 * not start (the reason printed on stderr).
 */
int pk_server_run(const pk_server_config *c);

#endif

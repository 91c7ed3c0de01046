/*
 * pk_coord_embedded: the in-process coordinator backend -- a pk_ckv state
 * machine persisted to one file with pk_coord_file.
 *
 * Every request runs in one pk_ckv batch: due leases are expired first,
 * then the operation is applied, and if either changed persisted state the
 * whole state is encoded and written atomically before the batch is
 * committed.  Only then do watchers see the events and does the callback
 * run; if the write fails the batch is aborted, the callback gets PK_EIO,
 * and the state, revision and watchers are as if the request had never
 * come.  So every acknowledged mutation is on disk, and an unacknowledged
 * one is never seen (after a crash between rename and reply it may
 * survive, unacknowledged, as with any database).
 *
 * Callbacks are called synchronously, before the operation returns.
 *
 * Reads do not expire leases: a key whose lease is due stays visible until
 * the next mutation or pk_coord_embedded_tick removes it, as in etcd.  The
 * event loop should call pk_coord_embedded_tick when the clock reaches
 * pk_coord_embedded_next_deadline.
 *
 * Restart: opening an existing file restores keys, revisions and leases;
 * each lease is granted afresh for its full TTL, and the history starts
 * empty, so a watch from a revision at or below the restored one gets
 * PK_ERANGE (watching from revision + 1 works).
 */
#ifndef PK_COORD_PK_COORD_EMBEDDED_H
#define PK_COORD_PK_COORD_EMBEDDED_H

#include <stdint.h>

#include "coord/pk_coord.h"

/* A monotonic clock in milliseconds. */
typedef uint64_t (*pk_coord_clock_fn)(void *ctx);

typedef struct pk_coord_embedded_opts {
    pk_coord_clock_fn clock;  /* NULL: CLOCK_MONOTONIC */
    void *clock_ctx;          /* borrowed until pk_coord_free */
    uint32_t hist_max_events; /* 0: PK_CKV_HIST_EVENTS (pk_ckv.h) */
    uint64_t hist_max_bytes;  /* 0: PK_CKV_HIST_BYTES */
} pk_coord_embedded_opts;

/*
 * Opens the coordinator whose state lives in the file at path (copied);
 * a missing file is an empty state, written at the first mutation.  o may
 * be NULL.  Returns 0; PK_ECORRUPT, PK_ECHECKSUM or PK_EVERSION for a file
 * that is not a valid state (it is left alone); PK_EFULL, PK_EIO,
 * PK_EINVAL or PK_ENOMEM.
 */
int pk_coord_embedded_open(const char *path, const pk_coord_embedded_opts *o,
                           pk_coord **out);

/*
 * Expires the leases that are due, deleting their keys, and persists the
 * result.  Returns 0, PK_EIO (nothing expired; try again later), PK_ENOMEM,
 * or PK_EINVAL when c is not an embedded coordinator.
 */
int pk_coord_embedded_tick(pk_coord *c);

/*
 * The clock value at which the next lease falls due, or UINT64_MAX when
 * there are no leases (or c is not an embedded coordinator).
 */
uint64_t pk_coord_embedded_next_deadline(const pk_coord *c);

#endif

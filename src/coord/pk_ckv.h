/*
 * pk_ckv: the embedded coordinator's state machine -- keys with revisions,
 * leases, a bounded event history and watchers -- with no I/O and no
 * clock.  Functions that look at lease deadlines take now_ms from the
 * caller (any monotonic millisecond clock; only differences matter).
 *
 *   pk_ckv
 *   +-- keys      sorted array of key -> kv (binary search; sized for
 *   |             hundreds of keys), each kv immutable and shared with
 *   |             the history
 *   +-- leases    sorted by id: ttl_ms, deadline_ms
 *   +-- revision  bumped once per put, delete, successful cas, and per key
 *   |             deleted by a lease revocation or expiry
 *   +-- history   ring of the last hist_max_events events (and at most
 *   |             about hist_max_bytes of them), one per revision:
 *   |             [oldest, revision]
 *   +-- watchers  each with a prefix and the next revision it wants
 *
 * Semantics follow pk_coord.h; this file adds what only the backend sees.
 *
 * Batches.  Outside a batch every mutation is committed at once: watchers
 * receive its events before the function returns.  pk_ckv_begin opens a
 * batch: mutations apply to the state (reads see them) but watchers see
 * nothing until pk_ckv_commit, and pk_ckv_abort undoes every mutation of
 * the batch -- keys, leases, revision, history.  The embedded backend runs
 * each request in a batch and commits only after the new state is on
 * disk, so no watcher or client ever sees a change that could be lost.
 *
 * Leases.  A lease whose deadline is <= now_ms is expired: it cannot be
 * renewed or attached to, although its keys stay until pk_ckv_tick (or a
 * revoke) deletes them -- as in etcd, expiry is an action, not a view.
 *
 * Errors leave the state unchanged, except where a function says so.
 *
 * Lifetimes.  kv pointers returned by reads and mutations borrow the
 * state's memory and stay valid until the next mutation, commit, abort or
 * pk_ckv_free -- counting mutations that watch callbacks make while the
 * call that returned them delivers events.  Event pointers passed to a
 * watch callback are valid during the callback.
 *
 * Re-entrancy.  A watch callback may call any function of its pk_ckv
 * except pk_ckv_free: mutations made during delivery are delivered after
 * the events already due, in revision order, exactly once per watcher.
 *
 * Thread-safety: none; one thread owns a pk_ckv.
 */
#ifndef PK_COORD_PK_CKV_H
#define PK_COORD_PK_CKV_H

#include <stddef.h>
#include <stdint.h>

#include "coord/pk_coord.h"

#define PK_CKV_HIST_EVENTS 10000u
#define PK_CKV_HIST_BYTES (64ull << 20)
#define PK_CKV_HIST_EVENTS_MAX (1u << 24)

typedef struct pk_ckv pk_ckv;
typedef struct pk_ckv_watch pk_ckv_watch;

typedef struct pk_ckv_opts {
    /* Events kept for watches from the past, 1..PK_CKV_HIST_EVENTS_MAX;
     * 0 means PK_CKV_HIST_EVENTS.  The ring is allocated at this size. */
    uint32_t hist_max_events;
    /* Bytes of keys and values the history may hold beyond those; 0 means
     * PK_CKV_HIST_BYTES.  The newest event is kept whatever its size. */
    uint64_t hist_max_bytes;
} pk_ckv_opts;

/* An empty state at revision 0.  o may be NULL.  0, PK_EINVAL, PK_ENOMEM. */
int pk_ckv_new(const pk_ckv_opts *o, pk_ckv **out);

/* Frees the state and its remaining watchers.  NULL is a no-op.  Not from
 * inside a watch callback. */
void pk_ckv_free(pk_ckv *s);

/* The current revision (including uncommitted mutations of a batch). */
uint64_t pk_ckv_revision(const pk_ckv *s);

/*
 * The oldest revision a watch may start from: the oldest event retained,
 * or revision + 1 when the history is empty (as after pk_ckv_decode).
 */
uint64_t pk_ckv_oldest_revision(const pk_ckv *s);

/* Number of keys. */
size_t pk_ckv_count(const pk_ckv *s);

/* The history's size as hist_max_bytes counts it (its events' keys and
 * values). */
uint64_t pk_ckv_history_bytes(const pk_ckv *s);

/* ---- reads ------------------------------------------------------------ */

/* Returns 0 with *out set, PK_ENOTFOUND or PK_EINVAL. */
int pk_ckv_get(const pk_ckv *s, const void *key, size_t key_len,
               pk_coord_kv *out);

/*
 * Keys starting with prefix, sorted: *kvs is a malloc'd array owned by the
 * caller (NULL when *n is 0); the bytes it points to are borrowed (see
 * Lifetimes).  Returns 0, PK_EINVAL or PK_ENOMEM.
 */
int pk_ckv_range(const pk_ckv *s, const void *prefix, size_t prefix_len,
                 pk_coord_kv **kvs, size_t *n);

/*
 * A lease's TTL and the milliseconds left before it expires.  Returns 0,
 * or PK_ENOTFOUND when it does not exist or has expired.
 */
int pk_ckv_lease_ttl(const pk_ckv *s, uint64_t id, uint64_t now_ms,
                     uint64_t *ttl_ms, uint64_t *remaining_ms);

/* The earliest lease deadline, or UINT64_MAX when there are no leases. */
uint64_t pk_ckv_next_deadline(const pk_ckv *s);

/* ---- mutations -------------------------------------------------------- */

/*
 * Puts key (see pk_coord_put).  *out (may be NULL) receives the kv as
 * stored.  Returns 0, PK_ENOTFOUND (lease missing or expired), PK_EINVAL
 * or PK_ENOMEM.
 */
int pk_ckv_put(pk_ckv *s, const void *key, size_t key_len, const void *value,
               size_t value_len, uint64_t lease, uint64_t now_ms,
               pk_coord_kv *out);

/*
 * Deletes key (read it first to know what it was).  Returns 0,
 * PK_ENOTFOUND, PK_EINVAL or PK_ENOMEM.
 */
int pk_ckv_delete(pk_ckv *s, const void *key, size_t key_len);

/*
 * Compare-and-swap (see pk_coord_cas).  On 0, *out receives the kv as
 * stored; on PK_ESTALE, the kv as it is now, or a kv with key NULL when
 * the key does not exist.  Returns 0, PK_ESTALE, PK_ENOTFOUND (lease),
 * PK_EINVAL or PK_ENOMEM.
 */
int pk_ckv_cas(pk_ckv *s, const void *key, size_t key_len,
               uint64_t expected_mod_revision, const void *value,
               size_t value_len, uint64_t lease, uint64_t now_ms,
               pk_coord_kv *out);

/*
 * Grants a lease of ttl_ms (1..PK_COORD_TTL_MAX_MS) expiring at now_ms +
 * ttl_ms; *id is never 0 and never reused.  Returns 0, PK_EINVAL,
 * PK_EFULL (ids exhausted) or PK_ENOMEM.
 */
int pk_ckv_lease_grant(pk_ckv *s, uint64_t ttl_ms, uint64_t now_ms,
                       uint64_t *id);

/* Renews a lease: deadline = now_ms + ttl.  0 or PK_ENOTFOUND. */
int pk_ckv_lease_keepalive(pk_ckv *s, uint64_t id, uint64_t now_ms);

/*
 * Revokes a lease, expired or not, deleting its keys in key order, one
 * revision each.  Returns 0, PK_ENOTFOUND or PK_ENOMEM.
 */
int pk_ckv_lease_revoke(pk_ckv *s, uint64_t id);

/*
 * Expires every lease whose deadline is <= now_ms, in deadline order, as
 * pk_ckv_lease_revoke would; *expired (may be NULL) counts them.  Returns
 * 0 or PK_ENOMEM -- then the leases expired so far stay expired and *expired
 * counts them.
 */
int pk_ckv_tick(pk_ckv *s, uint64_t now_ms, uint32_t *expired);

/* ---- batches ---------------------------------------------------------- */

/* Opens a batch.  Returns 0, PK_EBUSY (one is open) or PK_ENOMEM. */
int pk_ckv_begin(pk_ckv *s);

/*
 * 1 when the open batch changed what pk_ckv_encode writes (keys, the
 * revision, the set of leases or their TTLs), else 0.  Renewals alone do
 * not count: deadlines are not persisted.
 */
int pk_ckv_dirty(const pk_ckv *s);

/* Ends the batch and delivers its events.  No-op outside a batch. */
void pk_ckv_commit(pk_ckv *s);

/* Ends the batch, undoing all of it.  No-op outside a batch. */
void pk_ckv_abort(pk_ckv *s);

/* ---- watches ---------------------------------------------------------- */

/*
 * Watches keys starting with prefix from from_revision (0: the next
 * committed revision).  Events already retained are delivered before this
 * returns -- or, when called from a watch callback, once that callback has
 * returned; *out is set before the first callback.  The watcher is owned by
 * s: pk_ckv_watch_cancel or pk_ckv_free frees it.  A terminal cb(ctx,
 * PK_ERANGE, NULL) comes if the watcher falls behind the history while
 * its own deliveries create more events than the history keeps.
 * Returns 0, PK_ERANGE (from_revision < pk_ckv_oldest_revision), PK_EINVAL
 * or PK_ENOMEM.
 */
int pk_ckv_watch_start(pk_ckv *s, const void *prefix, size_t prefix_len,
                       uint64_t from_revision, pk_coord_watch_cb cb, void *ctx,
                       pk_ckv_watch **out);

/* Stops and frees a watcher, also from inside its callback.  NULL: no-op. */
void pk_ckv_watch_cancel(pk_ckv_watch *w);

/* ---- encoding (pk_ckv_codec.c) ---------------------------------------- */

/*
 * Encodes keys, revisions, leases (id and TTL) and counters: format 1,
 * big-endian, CRC32C.  History, deadlines and watchers are not encoded.
 * *buf is malloc'd, owned by the caller.  Returns 0 or PK_ENOMEM.
 */
int pk_ckv_encode(const pk_ckv *s, uint8_t **buf, size_t *len);

/*
 * Decodes a buffer made by pk_ckv_encode into a new state whose leases are
 * granted afresh (deadline = now_ms + ttl) and whose history is empty.
 * Every malformed input returns PK_ECORRUPT, PK_EVERSION or PK_ECHECKSUM
 * and never reads outside buf.  o may be NULL.  *out is set only on
 * success.  Also PK_EINVAL (bad opts) or PK_ENOMEM.
 */
int pk_ckv_decode(const uint8_t *buf, size_t len, const pk_ckv_opts *o,
                  uint64_t now_ms, pk_ckv **out);

#endif

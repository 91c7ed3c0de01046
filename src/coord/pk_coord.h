/*
 * pk_coord: the coordinator -- a small consistent key-value store with
 * revisions, compare-and-swap, TTL leases and watches, modelled on etcd v3.
 * The partition map, node membership and the controller lease live in it.
 *
 * Everything above src/coord sees only this header.  A pk_coord is a handle
 * with a table of operations behind it (pk_coord_int.h), so the backends
 * look alike:
 *
 *   embedded   in-process state machine persisted to one file
 *              (pk_coord_embedded.h); other nodes reach it over RESP
 *   etcd       etcd's v3 JSON gateway (a later backend)
 *
 * Data model (as etcd's).  The store has one global `revision`, bumped by
 * every mutation: a put, a delete, a successful compare-and-swap, each key
 * deleted by a lease revocation or expiry.  Granting, renewing or revoking
 * a lease alone does not bump it.  Each key carries:
 *
 *   create_revision  revision of the put that created it
 *   mod_revision     revision of its last put (== that event's revision)
 *   version          puts since creation, 1 for a new key
 *   lease            id of the lease it is attached to, 0 for none
 *
 * Keys are 1..PK_COORD_KEY_MAX bytes, compared as unsigned bytes; values
 * are 0..PK_COORD_VALUE_MAX bytes.  Every response carries the revision of
 * the store when the operation was served (the header revision; after a
 * mutation, that mutation's revision).
 *
 * Asynchrony.  Every operation takes a completion callback and a context:
 *
 *   - It returns 0 when the request was taken: the callback is then called
 *     exactly once, possibly before the function returns (the embedded
 *     backend answers synchronously) or later from the event loop.
 *   - It returns a negative PK_E* code when the request was refused before
 *     it started (PK_EINVAL for bad arguments, PK_ENOMEM): the callback is
 *     then never called.
 *
 * The callback's `res` is never NULL.  It and everything it points to are
 * valid only during the callback.  Its `rc` is 0, one of the codes the
 * operation lists, or PK_EIO / PK_ENOMEM: the store could not persist the
 * change, reach its backend or find memory.  Then the operation did not
 * happen -- or, for a remote backend, its outcome is unknown -- and in
 * either case it was not acknowledged; res->revision is the store's
 * current revision if known, else 0.
 *
 * Watches deliver every event on keys with a prefix, with revision >= the
 * revision asked for, in revision order, exactly once.  A watch ends only
 * by being cancelled or by one terminal call cb(ctx, rc < 0, NULL):
 * PK_ERANGE when the events it needs are no longer retained (etcd's
 * "compacted") -- the caller then re-reads with pk_coord_range and watches
 * again from that response's revision + 1 -- or PK_EIO when a remote
 * backend lost its connection.
 *
 * Callbacks may call any pk_coord function on the same handle, including
 * mutations and pk_coord_watch_cancel, but not pk_coord_free.
 *
 * Thread-safety: none.  A handle and its watches belong to one thread (the
 * event loop); callbacks run on it.
 */
#ifndef PK_COORD_PK_COORD_H
#define PK_COORD_PK_COORD_H

#include <stddef.h>
#include <stdint.h>

#define PK_COORD_KEY_MAX 4096u
#define PK_COORD_VALUE_MAX (16u << 20)
/* Lease TTLs are 1..PK_COORD_TTL_MAX_MS (about 34 years). */
#define PK_COORD_TTL_MAX_MS (1ull << 40)

typedef struct pk_coord pk_coord;
typedef struct pk_coord_watch pk_coord_watch;

/* A key and its metadata.  Every pointer is borrowed (see its source). */
typedef struct pk_coord_kv {
    const uint8_t *key; /* key_len >= 1 bytes */
    size_t key_len;
    const uint8_t *value; /* may be NULL when value_len == 0 */
    size_t value_len;
    uint64_t create_revision;
    uint64_t mod_revision;
    uint64_t version;
    uint64_t lease; /* 0: not attached to a lease */
} pk_coord_kv;

typedef enum pk_coord_event_type {
    PK_COORD_PUT = 0,
    PK_COORD_DELETE = 1,
} pk_coord_event_type;

/*
 * One change.  For PK_COORD_PUT, kv is the key as that put stored it.  For
 * PK_COORD_DELETE, kv holds the key and mod_revision == revision; its value
 * is empty and its other fields are 0 (as in etcd).
 */
typedef struct pk_coord_event {
    uint64_t revision; /* == kv.mod_revision */
    uint8_t type;      /* pk_coord_event_type */
    pk_coord_kv kv;
} pk_coord_event;

/*
 * What an operation answers.  Fields an operation does not mention are 0.
 * Valid only during the callback.
 */
typedef struct pk_coord_result {
    uint64_t revision;      /* header revision */
    const pk_coord_kv *kvs; /* borrowed; NULL when nkvs == 0 */
    size_t nkvs;
    uint64_t lease;  /* lease_grant, lease_keepalive: the lease id */
    uint64_t ttl_ms; /* lease_grant, lease_keepalive: the TTL granted */
} pk_coord_result;

typedef void (*pk_coord_cb)(void *ctx, int rc, const pk_coord_result *res);

/* ev is borrowed for the call; NULL exactly when rc < 0 (terminal). */
typedef void (*pk_coord_watch_cb)(void *ctx, int rc, const pk_coord_event *ev);

/*
 * Reads one key.  rc: 0 with kvs[0], or PK_ENOTFOUND.
 */
int pk_coord_get(pk_coord *c, const void *key, size_t key_len, pk_coord_cb cb,
                 void *ctx);

/*
 * Reads every key starting with prefix (prefix_len 0: every key), sorted
 * by key, each with its value and metadata.  rc: 0 (nkvs may be 0).
 */
int pk_coord_range(pk_coord *c, const void *prefix, size_t prefix_len,
                   pk_coord_cb cb, void *ctx);

/*
 * Sets key to value, attached to lease (0: none; a put without a lease
 * detaches the key from its old one).  rc: 0 with kvs[0] as stored, or
 * PK_ENOTFOUND when the lease does not exist or has expired.
 */
int pk_coord_put(pk_coord *c, const void *key, size_t key_len,
                 const void *value, size_t value_len, uint64_t lease,
                 pk_coord_cb cb, void *ctx);

/*
 * Deletes key.  rc: 0 with kvs[0] as it was before, or PK_ENOTFOUND (the
 * revision does not change).
 */
int pk_coord_delete(pk_coord *c, const void *key, size_t key_len,
                    pk_coord_cb cb, void *ctx);

/*
 * Compare-and-swap: puts value (with lease, as pk_coord_put) only if key's
 * mod_revision equals expected_mod_revision; 0 means "key must not
 * exist".  rc: 0 with kvs[0] as stored; PK_ESTALE when the comparison
 * failed, with kvs[0] the key as it is now (nkvs 0 if it does not exist);
 * PK_ENOTFOUND when the lease does not exist or has expired.
 */
int pk_coord_cas(pk_coord *c, const void *key, size_t key_len,
                 uint64_t expected_mod_revision, const void *value,
                 size_t value_len, uint64_t lease, pk_coord_cb cb, void *ctx);

/*
 * Grants a lease of ttl_ms (1..PK_COORD_TTL_MAX_MS).  It expires ttl_ms
 * after the grant unless renewed; expiry deletes its keys.  rc: 0 with
 * lease (never 0) and ttl_ms.
 */
int pk_coord_lease_grant(pk_coord *c, uint64_t ttl_ms, pk_coord_cb cb,
                         void *ctx);

/*
 * Renews a lease for its full TTL from now.  rc: 0 with lease and ttl_ms,
 * or PK_ENOTFOUND when it does not exist or has already expired.
 */
int pk_coord_lease_keepalive(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                             void *ctx);

/*
 * Revokes a lease and deletes every key attached to it (each deletion is a
 * revision and an event).  rc: 0 or PK_ENOTFOUND.
 */
int pk_coord_lease_revoke(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                          void *ctx);

/*
 * Watches keys starting with prefix (prefix_len 0: every key) from
 * from_revision (0: from the next revision) on; see the top of this file
 * for what is delivered.  *out is set before the first call of cb, which
 * may happen before this function returns.  The handle is owned by the
 * caller until pk_coord_watch_cancel, including after a terminal call.
 * Returns 0, PK_EINVAL or PK_ENOMEM (then cb is never called).
 */
int pk_coord_watch_start(pk_coord *c, const void *prefix, size_t prefix_len,
                         uint64_t from_revision, pk_coord_watch_cb cb,
                         void *ctx, pk_coord_watch **out);

/*
 * Cancels and frees a watch: cb is not called again, even if this is
 * called from inside cb.  NULL is a no-op.
 */
void pk_coord_watch_cancel(pk_coord_watch *w);

/*
 * Frees the handle.  Watches not yet cancelled are freed with it (their
 * handles become invalid); a remote backend first completes pending
 * requests with PK_EIO.  NULL is a no-op.  Not from inside a callback.
 */
void pk_coord_free(pk_coord *c);

/* Backend name ("embedded", "etcd"); static storage. */
const char *pk_coord_backend(const pk_coord *c);

/* The keys' and values' bytes of the event history this process holds for
 * watches from the past (the embedded backend, whose pk_ckv_opts bound it:
 * by default the last PK_CKV_HIST_EVENTS events, dropped from the oldest
 * beyond PK_CKV_HIST_BYTES, the newest kept whatever its size); 0 for a
 * remote backend. */
uint64_t pk_coord_history_bytes(const pk_coord *c);

#endif

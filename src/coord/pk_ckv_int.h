/*
 * pk_ckv_int: what the state machine's source files share and nothing
 * outside them may use -- the struct behind pk_ckv, its records, and the
 * history and delivery helpers (pk_ckv_watch.c).
 *
 * A record (pk__ckv_rec) is one version of one key, or one deletion; it is
 * immutable once published and reference-counted, because the same record
 * is held by the key map, by the history ring, by a batch's snapshot and by
 * a delivery in progress.
 *
 * Invariants:
 *   - keys[0..nkeys) are sorted by key, strictly; none is a deletion.
 *   - leases[0..nleases) are sorted by id, strictly; every id < next_lease.
 *   - The history holds the events of revisions [revision - hist_n + 1,
 *     revision], one per revision, oldest at hist_head.
 *   - visible <= revision; outside a batch visible == revision once the
 *     mutation that bumped it returns.
 *   - A watcher's next <= visible + 1 unless it was started in the future.
 */
#ifndef PK_COORD_PK_CKV_INT_H
#define PK_COORD_PK_CKV_INT_H

#include <stddef.h>
#include <stdint.h>

#include "coord/pk_ckv.h"
#include "coord/pk_coord.h"

typedef struct pk__ckv_rec {
    uint32_t refs;
    uint8_t deleted; /* a deletion: only key and mod_rev are meaningful */
    uint32_t klen;
    uint32_t vlen;
    uint64_t create_rev;
    uint64_t mod_rev; /* the revision of the event this record is */
    uint64_t version;
    uint64_t lease;
    uint8_t bytes[]; /* key, then value */
} pk__ckv_rec;

typedef struct pk__ckv_lease {
    uint64_t id;
    uint64_t ttl_ms;      /* 1..PK_COORD_TTL_MAX_MS */
    uint64_t deadline_ms; /* expired when now_ms >= deadline_ms */
} pk__ckv_lease;

struct pk_ckv_watch {
    pk_ckv *s;       /* borrowed: s owns the watcher */
    uint8_t *prefix; /* owned; NULL when prefix_len == 0 */
    size_t prefix_len;
    uint64_t next; /* the next revision to look at */
    pk_coord_watch_cb cb;
    void *ctx;         /* borrowed, passed to cb */
    uint8_t ended;     /* a terminal error was delivered */
    uint8_t cancelled; /* free at the end of the delivery in progress */
};

struct pk_ckv {
    pk__ckv_rec **keys; /* owned references, sorted by key */
    size_t nkeys;
    size_t cap_keys;
    pk__ckv_lease *leases; /* owned, sorted by id */
    size_t nleases;
    size_t cap_leases;
    uint64_t revision;
    uint64_t next_lease; /* >= 1: the id the next grant returns */

    pk__ckv_rec **hist; /* owned ring of references, hist_cap slots */
    uint32_t hist_cap;
    uint32_t hist_head; /* slot of the oldest event */
    uint32_t hist_n;
    uint64_t hist_bytes; /* pk__ckv_rec_size of the events held */
    uint64_t hist_max_bytes;

    pk_ckv_watch **watches; /* owned watchers, in start order */
    size_t nwatches;
    size_t cap_watches;
    uint64_t visible; /* watchers may be given events up to here */
    int notifying;    /* a delivery loop is running (re-entrancy guard) */
    int reap;         /* some watcher was cancelled during delivery */

    int in_batch;
    int dirty;                /* the batch changed persisted state */
    pk__ckv_rec **saved_keys; /* owned references: keys at begin */
    size_t saved_nkeys;
    pk__ckv_lease *saved_leases; /* owned copy: leases at begin */
    size_t saved_nleases;
    uint64_t saved_revision;
    uint64_t saved_next_lease;
};

/* A record with refs 1 and the given bytes; other fields 0.  NULL: ENOMEM */
pk__ckv_rec *pk__ckv_rec_new(const void *key, size_t klen, const void *value,
                             size_t vlen);

/* Drops one reference; frees at 0.  NULL is a no-op. */
void pk__ckv_rec_release(pk__ckv_rec *r);

/* The bytes a record accounts for in the history's byte budget. */
uint64_t pk__ckv_rec_size(const pk__ckv_rec *r);

/* Fills *kv with views of r (valid while r is). */
void pk__ckv_rec_kv(const pk__ckv_rec *r, pk_coord_kv *kv);

/*
 * Deletes keys[i], publishing tomb (a fresh deletion record for the same
 * key, whose reference it takes) as the event of a new revision.  Cannot
 * fail.
 */
void pk__ckv_unlink(pk_ckv *s, size_t i, pk__ckv_rec *tomb);

/* Index of lease id in s->leases, or SIZE_MAX (pk_ckv_lease.c). */
size_t pk__ckv_lease_find(const pk_ckv *s, uint64_t id);

/* After a mutation: outside a batch, commits it (delivers its events). */
void pk__ckv_mutated(pk_ckv *s);

/* Appends the event of revision s->revision (takes its own reference). */
void pk__ckv_hist_push(pk_ckv *s, pk__ckv_rec *r);

/* Drops the n newest events (n <= hist_n), for an abort. */
void pk__ckv_hist_drop_newest(pk_ckv *s, uint64_t n);

/* Delivers events up to s->visible to every watcher; re-entrant. */
void pk__ckv_notify(pk_ckv *s);

/* Frees every watcher (pk_ckv_free). */
void pk__ckv_watch_free_all(pk_ckv *s);

#endif

/*
 * pk_ckv: the key space of the embedded coordinator -- records, the sorted
 * key map, reads, puts, deletes, compare-and-swap, and batches.  Leases
 * live in pk_ckv_lease.c, the history and watchers in pk_ckv_watch.c, the
 * encoding in pk_ckv_codec.c; pk_ckv_int.h lists the invariants.
 *
 * Every mutation first does all that can fail (argument checks, the lease
 * lookup, allocations) and only then changes the state, so an error leaves
 * the state as it was.  A batch keeps a snapshot of the key map (shared
 * references, not copies) and of the lease table, so that aborting it is a
 * swap back plus dropping the batch's events from the history.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord/pk_ckv.h"
#include "coord/pk_ckv_int.h"
#include "coord/pk_coord.h"
#include "core/pk_err.h"

/* ---- records ---------------------------------------------------------- */

pk__ckv_rec *pk__ckv_rec_new(const void *key, size_t klen, const void *value,
                             size_t vlen)
{
    pk__ckv_rec *r = malloc(sizeof(*r) + klen + vlen);

    if (r == NULL) {
        return NULL;
    }
    memset(r, 0, sizeof(*r));
    r->refs = 1;
    r->klen = (uint32_t)klen;
    r->vlen = (uint32_t)vlen;
    memcpy(r->bytes, key, klen);
    if (vlen > 0) {
        memcpy(r->bytes + klen, value, vlen);
    }
    return r;
}

void pk__ckv_rec_release(pk__ckv_rec *r)
{
    if (r != NULL && --r->refs == 0) {
        free(r);
    }
}

uint64_t pk__ckv_rec_size(const pk__ckv_rec *r)
{
    return sizeof(*r) + (uint64_t)r->klen + r->vlen;
}

void pk__ckv_rec_kv(const pk__ckv_rec *r, pk_coord_kv *kv)
{
    kv->key = r->bytes;
    kv->key_len = r->klen;
    kv->value = r->vlen > 0 ? r->bytes + r->klen : NULL;
    kv->value_len = r->vlen;
    kv->create_revision = r->create_rev;
    kv->mod_revision = r->mod_rev;
    kv->version = r->version;
    kv->lease = r->lease;
}

/* ---- the state -------------------------------------------------------- */

int pk_ckv_new(const pk_ckv_opts *o, pk_ckv **out)
{
    uint32_t events = o != NULL ? o->hist_max_events : 0;
    uint64_t bytes = o != NULL ? o->hist_max_bytes : 0;
    pk_ckv *s;

    if (out == NULL || events > PK_CKV_HIST_EVENTS_MAX) {
        return PK_EINVAL;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return PK_ENOMEM;
    }
    s->hist_cap = events != 0 ? events : PK_CKV_HIST_EVENTS;
    s->hist_max_bytes = bytes != 0 ? bytes : PK_CKV_HIST_BYTES;
    s->hist = calloc(s->hist_cap, sizeof(*s->hist));
    if (s->hist == NULL) {
        free(s);
        return PK_ENOMEM;
    }
    s->next_lease = 1;
    *out = s;
    return PK_OK;
}

static void release_keys(pk__ckv_rec **keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pk__ckv_rec_release(keys[i]);
    }
    free(keys);
}

void pk_ckv_free(pk_ckv *s)
{
    if (s == NULL) {
        return;
    }
    pk_ckv_abort(s);
    pk__ckv_watch_free_all(s);
    pk__ckv_hist_drop_newest(s, s->hist_n);
    release_keys(s->keys, s->nkeys);
    free(s->hist);
    free(s->leases);
    free(s);
}

uint64_t pk_ckv_revision(const pk_ckv *s)
{
    return s->revision;
}

uint64_t pk_ckv_oldest_revision(const pk_ckv *s)
{
    return s->revision + 1 - s->hist_n;
}

uint64_t pk_ckv_history_bytes(const pk_ckv *s)
{
    return s->hist_bytes;
}

size_t pk_ckv_count(const pk_ckv *s)
{
    return s->nkeys;
}

void pk__ckv_mutated(pk_ckv *s)
{
    if (!s->in_batch) {
        s->visible = s->revision;
        pk__ckv_notify(s);
    }
}

/* ---- the key map ------------------------------------------------------ */

static int key_cmp(const pk__ckv_rec *r, const void *key, size_t klen)
{
    size_t n = r->klen < klen ? r->klen : klen;
    int c = n > 0 ? memcmp(r->bytes, key, n) : 0;

    if (c != 0) {
        return c;
    }
    return r->klen < klen ? -1 : r->klen > klen;
}

/* Sets *at to the first index whose key is >= key; 1 if it is equal. */
static int find(const pk_ckv *s, const void *key, size_t klen, size_t *at)
{
    size_t lo = 0;
    size_t hi = s->nkeys;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (key_cmp(s->keys[mid], key, klen) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *at = lo;
    return lo < s->nkeys && key_cmp(s->keys[lo], key, klen) == 0;
}

static int grow_keys(pk_ckv *s)
{
    size_t cap = s->cap_keys != 0 ? 2 * s->cap_keys : 16;
    pk__ckv_rec **k;

    if (s->nkeys < s->cap_keys) {
        return PK_OK;
    }
    k = realloc(s->keys, cap * sizeof(*k));
    if (k == NULL) {
        return PK_ENOMEM;
    }
    s->keys = k;
    s->cap_keys = cap;
    return PK_OK;
}

static int key_ok(const void *key, size_t klen)
{
    return key != NULL && klen >= 1 && klen <= PK_COORD_KEY_MAX;
}

static int prefix_ok(const void *prefix, size_t len)
{
    return (prefix != NULL || len == 0) && len <= PK_COORD_KEY_MAX;
}

void pk__ckv_unlink(pk_ckv *s, size_t i, pk__ckv_rec *tomb)
{
    pk__ckv_rec *old = s->keys[i];

    s->revision++;
    tomb->deleted = 1;
    tomb->mod_rev = s->revision;
    memmove(&s->keys[i], &s->keys[i + 1],
            (s->nkeys - i - 1) * sizeof(*s->keys));
    s->nkeys--;
    pk__ckv_hist_push(s, tomb);
    pk__ckv_rec_release(tomb);
    pk__ckv_rec_release(old);
    s->dirty = 1;
}

/* ---- reads ------------------------------------------------------------ */

int pk_ckv_get(const pk_ckv *s, const void *key, size_t key_len,
               pk_coord_kv *out)
{
    size_t i;

    if (!key_ok(key, key_len) || out == NULL) {
        return PK_EINVAL;
    }
    if (!find(s, key, key_len, &i)) {
        return PK_ENOTFOUND;
    }
    pk__ckv_rec_kv(s->keys[i], out);
    return PK_OK;
}

int pk_ckv_range(const pk_ckv *s, const void *prefix, size_t prefix_len,
                 pk_coord_kv **kvs, size_t *n)
{
    pk_coord_kv *v = NULL;
    size_t lo, hi;

    if (!prefix_ok(prefix, prefix_len) || kvs == NULL || n == NULL) {
        return PK_EINVAL;
    }
    find(s, prefix, prefix_len, &lo);
    hi = lo;
    while (hi < s->nkeys && s->keys[hi]->klen >= prefix_len &&
           (prefix_len == 0 ||
            memcmp(s->keys[hi]->bytes, prefix, prefix_len) == 0)) {
        hi++;
    }
    if (hi > lo) {
        v = malloc((hi - lo) * sizeof(*v));
        if (v == NULL) {
            return PK_ENOMEM;
        }
        for (size_t i = lo; i < hi; i++) {
            pk__ckv_rec_kv(s->keys[i], &v[i - lo]);
        }
    }
    *kvs = v;
    *n = hi - lo;
    return PK_OK;
}

/* ---- mutations -------------------------------------------------------- */

/* 1 when lease exists and has not expired at now_ms. */
static int lease_live(const pk_ckv *s, uint64_t id, uint64_t now_ms)
{
    size_t i = pk__ckv_lease_find(s, id);

    return i != SIZE_MAX && now_ms < s->leases[i].deadline_ms;
}

/*
 * Put, or compare-and-swap when cas is set.  See pk_ckv_put/pk_ckv_cas.
 */
static int set(pk_ckv *s, const void *key, size_t klen, int cas,
               uint64_t expected, const void *value, size_t vlen,
               uint64_t lease, uint64_t now_ms, pk_coord_kv *out)
{
    pk__ckv_rec *old = NULL;
    pk__ckv_rec *r;
    size_t i;
    int found;

    if (!key_ok(key, klen) || (value == NULL && vlen > 0) ||
        vlen > PK_COORD_VALUE_MAX) {
        return PK_EINVAL;
    }
    found = find(s, key, klen, &i);
    old = found ? s->keys[i] : NULL;
    if (cas && (old != NULL ? old->mod_rev : 0) != expected) {
        if (out != NULL && old != NULL) {
            pk__ckv_rec_kv(old, out);
        } else if (out != NULL) {
            memset(out, 0, sizeof(*out));
        }
        return PK_ESTALE;
    }
    if (lease != 0 && !lease_live(s, lease, now_ms)) {
        return PK_ENOTFOUND;
    }
    if (!found && grow_keys(s) != PK_OK) {
        return PK_ENOMEM;
    }
    r = pk__ckv_rec_new(key, klen, value, vlen);
    if (r == NULL) {
        return PK_ENOMEM;
    }
    /* Nothing below can fail. */
    s->revision++;
    r->create_rev = old != NULL ? old->create_rev : s->revision;
    r->mod_rev = s->revision;
    r->version = old != NULL ? old->version + 1 : 1;
    r->lease = lease;
    if (found) {
        pk__ckv_rec_release(old);
    } else {
        memmove(&s->keys[i + 1], &s->keys[i],
                (s->nkeys - i) * sizeof(*s->keys));
        s->nkeys++;
    }
    s->keys[i] = r;
    pk__ckv_hist_push(s, r);
    s->dirty = 1;
    if (out != NULL) {
        pk__ckv_rec_kv(r, out);
    }
    pk__ckv_mutated(s);
    return PK_OK;
}

int pk_ckv_put(pk_ckv *s, const void *key, size_t key_len, const void *value,
               size_t value_len, uint64_t lease, uint64_t now_ms,
               pk_coord_kv *out)
{
    return set(s, key, key_len, 0, 0, value, value_len, lease, now_ms, out);
}

int pk_ckv_cas(pk_ckv *s, const void *key, size_t key_len,
               uint64_t expected_mod_revision, const void *value,
               size_t value_len, uint64_t lease, uint64_t now_ms,
               pk_coord_kv *out)
{
    return set(s, key, key_len, 1, expected_mod_revision, value, value_len,
               lease, now_ms, out);
}

int pk_ckv_delete(pk_ckv *s, const void *key, size_t key_len)
{
    pk__ckv_rec *tomb;
    size_t i;

    if (!key_ok(key, key_len)) {
        return PK_EINVAL;
    }
    if (!find(s, key, key_len, &i)) {
        return PK_ENOTFOUND;
    }
    tomb = pk__ckv_rec_new(key, key_len, NULL, 0);
    if (tomb == NULL) {
        return PK_ENOMEM;
    }
    pk__ckv_unlink(s, i, tomb);
    pk__ckv_mutated(s);
    return PK_OK;
}

/* ---- batches ---------------------------------------------------------- */

int pk_ckv_begin(pk_ckv *s)
{
    pk__ckv_rec **keys = NULL;
    pk__ckv_lease *leases = NULL;

    if (s->in_batch) {
        return PK_EBUSY;
    }
    if (s->nkeys > 0) {
        keys = malloc(s->nkeys * sizeof(*keys));
    }
    if (s->nleases > 0) {
        leases = malloc(s->nleases * sizeof(*leases));
    }
    if ((s->nkeys > 0 && keys == NULL) || (s->nleases > 0 && leases == NULL)) {
        free(keys);
        free(leases);
        return PK_ENOMEM;
    }
    for (size_t i = 0; i < s->nkeys; i++) {
        keys[i] = s->keys[i];
        keys[i]->refs++;
    }
    if (s->nleases > 0) {
        memcpy(leases, s->leases, s->nleases * sizeof(*leases));
    }
    s->saved_keys = keys;
    s->saved_nkeys = s->nkeys;
    s->saved_leases = leases;
    s->saved_nleases = s->nleases;
    s->saved_revision = s->revision;
    s->saved_next_lease = s->next_lease;
    s->in_batch = 1;
    s->dirty = 0;
    return PK_OK;
}

int pk_ckv_dirty(const pk_ckv *s)
{
    return s->in_batch && s->dirty;
}

void pk_ckv_commit(pk_ckv *s)
{
    if (!s->in_batch) {
        return;
    }
    release_keys(s->saved_keys, s->saved_nkeys);
    free(s->saved_leases);
    s->saved_keys = NULL;
    s->saved_leases = NULL;
    s->in_batch = 0;
    s->dirty = 0;
    pk__ckv_mutated(s);
}

void pk_ckv_abort(pk_ckv *s)
{
    uint64_t undone;

    if (!s->in_batch) {
        return;
    }
    release_keys(s->keys, s->nkeys);
    s->keys = s->saved_keys;
    s->nkeys = s->cap_keys = s->saved_nkeys;
    free(s->leases);
    s->leases = s->saved_leases;
    s->nleases = s->cap_leases = s->saved_nleases;
    /* The batch's events are the newest; older ones it pushed out of the
     * ring stay gone, which only moves the oldest revision forward. */
    undone = s->revision - s->saved_revision;
    pk__ckv_hist_drop_newest(s, undone < s->hist_n ? undone : s->hist_n);
    s->revision = s->saved_revision;
    s->next_lease = s->saved_next_lease;
    s->saved_keys = NULL;
    s->saved_leases = NULL;
    s->in_batch = 0;
    s->dirty = 0;
}

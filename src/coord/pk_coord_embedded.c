/*
 * pk_coord_embedded: the in-process backend of pk_coord -- each request is
 * a pk_ckv batch that is persisted before it is committed and answered.
 * See pk_coord_embedded.h for the guarantees.
 *
 *   request --> begin --> tick(now) --> op --> dirty? --> encode, write
 *                                                 |          |     |
 *                                                 |       ok v     v fail
 *                                                 +----> commit   abort
 *                                                          |        |
 *                           watchers get the events <------+        |
 *                           cb(ctx, rc, res)  <----------------------+
 *
 * Results are copied out of the state machine before the commit, because
 * callbacks -- watchers' during the commit, the caller's after it -- may
 * mutate the state and free what the state machine lent out.  The header
 * revision of a mutation is taken before the commit for the same reason.
 *
 * Watch handles wrap pk_ckv watchers, which call the user's callback
 * directly (their callback types are the same).  A handle exists apart
 * from its watcher so that a watch refused with PK_ERANGE still has a
 * handle to cancel, and so that pk_coord_free can free forgotten handles.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/pk_ckv.h"
#include "coord/pk_coord.h"
#include "coord/pk_coord_embedded.h"
#include "coord/pk_coord_file.h"
#include "coord/pk_coord_int.h"
#include "core/pk_err.h"

typedef struct emb_watch {
    pk_coord_watch base;
    pk_ckv_watch *w; /* owned by the pk_ckv; NULL if refused at start */
    struct emb_watch *prev;
    struct emb_watch *next;
} emb_watch;

typedef struct emb {
    pk_coord base;
    pk_ckv *kv; /* owned */
    char *path; /* owned */
    pk_coord_clock_fn clock;
    void *clock_ctx;    /* borrowed */
    emb_watch *watches; /* owned list of handles not yet cancelled */
} emb;

static const pk_coord_ops emb_ops;

static uint64_t monotonic_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- results ---------------------------------------------------------- */

/* Deep copy of kvs in one allocation (freed with free()); NULL if n == 0. */
static int copy_kvs(const pk_coord_kv *kvs, size_t n, pk_coord_kv **out)
{
    size_t bytes = n * sizeof(*kvs);
    pk_coord_kv *c;
    uint8_t *p;

    *out = NULL;
    if (n == 0) {
        return PK_OK;
    }
    for (size_t i = 0; i < n; i++) {
        bytes += kvs[i].key_len + kvs[i].value_len;
    }
    c = malloc(bytes);
    if (c == NULL) {
        return PK_ENOMEM;
    }
    p = (uint8_t *)(c + n);
    for (size_t i = 0; i < n; i++) {
        c[i] = kvs[i];
        c[i].key = p;
        memcpy(p, kvs[i].key, kvs[i].key_len);
        p += kvs[i].key_len;
        c[i].value = kvs[i].value_len > 0 ? p : NULL;
        if (kvs[i].value_len > 0) {
            memcpy(p, kvs[i].value, kvs[i].value_len);
        }
        p += kvs[i].value_len;
    }
    *out = c;
    return PK_OK;
}

/* Calls cb with res holding kvs[0..n), then frees kvs. */
static void reply(pk_coord_cb cb, void *ctx, int rc, pk_coord_result *res,
                  pk_coord_kv *kvs, size_t n)
{
    res->kvs = kvs;
    res->nkvs = kvs != NULL ? n : 0;
    cb(ctx, rc, res);
    free(kvs);
}

/* ---- batches ---------------------------------------------------------- */

/* Opens a batch and expires due leases in it; *now is the clock. */
static int batch_begin(emb *e, uint64_t *now)
{
    int rc;

    *now = e->clock(e->clock_ctx);
    rc = pk_ckv_begin(e->kv);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_tick(e->kv, *now, NULL);
    if (rc != PK_OK) {
        pk_ckv_abort(e->kv);
    }
    return rc;
}

static int persist(emb *e)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc;

    rc = pk_ckv_encode(e->kv, &buf, &len);
    if (rc == PK_OK) {
        rc = pk_coord_file_write(e->path, buf, len);
    }
    free(buf);
    return rc == PK_ENOMEM ? PK_ENOMEM : rc != PK_OK ? PK_EIO : PK_OK;
}

/*
 * Writes the batch if it changed persisted state, then commits it, or
 * aborts it if the write failed.  *rev (may be NULL) is the revision the
 * batch ended at, taken before the commit runs any callback.
 */
static int batch_end(emb *e, uint64_t *rev)
{
    int rc = PK_OK;

    if (pk_ckv_dirty(e->kv)) {
        rc = persist(e);
    }
    if (rc != PK_OK) {
        pk_ckv_abort(e->kv);
    }
    if (rev != NULL) {
        *rev = pk_ckv_revision(e->kv);
    }
    if (rc == PK_OK) {
        pk_ckv_commit(e->kv);
    }
    return rc;
}

/*
 * Ends a mutation whose operation returned op_rc and whose answer is kvs
 * (owned, may be NULL): refuses the request when the operation itself
 * failed (nothing happened, the callback is not called), else persists,
 * commits and answers.
 */
static int finish(emb *e, int op_rc, pk_coord_result *res, pk_coord_kv *kvs,
                  size_t n, pk_coord_cb cb, void *ctx)
{
    int rc;

    if (op_rc != PK_OK && op_rc != PK_ESTALE && op_rc != PK_ENOTFOUND) {
        pk_ckv_abort(e->kv);
        free(kvs);
        return op_rc;
    }
    rc = batch_end(e, &res->revision);
    if (rc != PK_OK) {
        free(kvs);
        memset(res, 0, sizeof(*res));
        res->revision = pk_ckv_revision(e->kv);
        reply(cb, ctx, rc, res, NULL, 0);
        return PK_OK;
    }
    reply(cb, ctx, op_rc, res, kvs, n);
    return PK_OK;
}

/* ---- operations ------------------------------------------------------- */

static int emb_get(pk_coord *c, const void *key, size_t key_len, pk_coord_cb cb,
                   void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    pk_coord_kv kv;
    pk_coord_kv *copy = NULL;
    int rc;

    rc = pk_ckv_get(e->kv, key, key_len, &kv);
    if (rc != PK_OK && rc != PK_ENOTFOUND) {
        return rc;
    }
    if (rc == PK_OK && copy_kvs(&kv, 1, &copy) != PK_OK) {
        return PK_ENOMEM;
    }
    res.revision = pk_ckv_revision(e->kv);
    reply(cb, ctx, rc, &res, copy, 1);
    return PK_OK;
}

static int emb_range(pk_coord *c, const void *prefix, size_t prefix_len,
                     pk_coord_cb cb, void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    pk_coord_kv *kvs = NULL;
    pk_coord_kv *copy = NULL;
    size_t n = 0;
    int rc;

    rc = pk_ckv_range(e->kv, prefix, prefix_len, &kvs, &n);
    if (rc == PK_OK) {
        rc = copy_kvs(kvs, n, &copy);
    }
    free(kvs);
    if (rc != PK_OK) {
        return rc;
    }
    res.revision = pk_ckv_revision(e->kv);
    reply(cb, ctx, PK_OK, &res, copy, n);
    return PK_OK;
}

static int emb_cas(pk_coord *c, const void *key, size_t key_len,
                   uint64_t expected, const void *value, size_t value_len,
                   uint64_t lease, pk_coord_cb cb, void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    pk_coord_kv kv = {0};
    pk_coord_kv *copy = NULL;
    uint64_t now;
    int rc;

    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_cas(e->kv, key, key_len, expected, value, value_len, lease, now,
                    &kv);
    if ((rc == PK_OK || rc == PK_ESTALE) && kv.key != NULL &&
        copy_kvs(&kv, 1, &copy) != PK_OK) {
        rc = PK_ENOMEM;
    }
    return finish(e, rc, &res, copy, 1, cb, ctx);
}

static int emb_put(pk_coord *c, const void *key, size_t key_len,
                   const void *value, size_t value_len, uint64_t lease,
                   pk_coord_cb cb, void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    pk_coord_kv kv;
    pk_coord_kv *copy = NULL;
    uint64_t now;
    int rc;

    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_put(e->kv, key, key_len, value, value_len, lease, now, &kv);
    if (rc == PK_OK && copy_kvs(&kv, 1, &copy) != PK_OK) {
        rc = PK_ENOMEM;
    }
    return finish(e, rc, &res, copy, 1, cb, ctx);
}

static int emb_del(pk_coord *c, const void *key, size_t key_len, pk_coord_cb cb,
                   void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    pk_coord_kv kv;
    pk_coord_kv *copy = NULL;
    uint64_t now;
    int rc;

    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_get(e->kv, key, key_len, &kv);
    if (rc == PK_OK) {
        rc = copy_kvs(&kv, 1, &copy);
    }
    if (rc == PK_OK) {
        rc = pk_ckv_delete(e->kv, key, key_len);
    }
    return finish(e, rc, &res, copy, 1, cb, ctx);
}

static int emb_lease_grant(pk_coord *c, uint64_t ttl_ms, pk_coord_cb cb,
                           void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    uint64_t now;
    int rc;

    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_lease_grant(e->kv, ttl_ms, now, &res.lease);
    res.ttl_ms = ttl_ms;
    return finish(e, rc, &res, NULL, 0, cb, ctx);
}

static int emb_lease_keepalive(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                               void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    uint64_t now;
    int rc;

    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_lease_keepalive(e->kv, lease, now);
    if (rc == PK_OK) {
        res.lease = lease;
        pk_ckv_lease_ttl(e->kv, lease, now, &res.ttl_ms, NULL);
    }
    return finish(e, rc, &res, NULL, 0, cb, ctx);
}

static int emb_lease_revoke(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                            void *ctx)
{
    emb *e = (emb *)c;
    pk_coord_result res = {0};
    uint64_t now;
    int rc;

    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    rc = pk_ckv_lease_revoke(e->kv, lease);
    return finish(e, rc, &res, NULL, 0, cb, ctx);
}

/* ---- watches ---------------------------------------------------------- */

static void unlink_watch(emb *e, emb_watch *h)
{
    if (h->prev != NULL) {
        h->prev->next = h->next;
    } else {
        e->watches = h->next;
    }
    if (h->next != NULL) {
        h->next->prev = h->prev;
    }
}

static int emb_watch_start(pk_coord *c, const void *prefix, size_t prefix_len,
                           uint64_t from_revision, pk_coord_watch_cb cb,
                           void *ctx, pk_coord_watch **out)
{
    emb *e = (emb *)c;
    pk_coord_watch *old = *out;
    emb_watch *h = calloc(1, sizeof(*h));
    int rc;

    if (h == NULL) {
        return PK_ENOMEM;
    }
    h->base.coord = c;
    h->next = e->watches;
    if (e->watches != NULL) {
        e->watches->prev = h;
    }
    e->watches = h;
    /* Set before any callback, which may cancel the handle: after the
     * calls below, h may already be freed. */
    *out = &h->base;
    rc = pk_ckv_watch_start(e->kv, prefix, prefix_len, from_revision, cb, ctx,
                            &h->w);
    if (rc == PK_ERANGE) {
        cb(ctx, PK_ERANGE, NULL);
        return PK_OK;
    }
    if (rc != PK_OK) {
        unlink_watch(e, h);
        free(h);
        *out = old;
    }
    return rc;
}

static void emb_watch_cancel(pk_coord_watch *w)
{
    emb_watch *h = (emb_watch *)w;

    pk_ckv_watch_cancel(h->w);
    unlink_watch((emb *)w->coord, h);
    free(h);
}

/* ---- the handle ------------------------------------------------------- */

static uint64_t emb_history_bytes(const pk_coord *c)
{
    return pk_ckv_history_bytes(((const emb *)c)->kv);
}

static void emb_free(pk_coord *c)
{
    emb *e = (emb *)c;

    while (e->watches != NULL) {
        emb_watch_cancel(&e->watches->base);
    }
    pk_ckv_free(e->kv);
    free(e->path);
    free(e);
}

static const pk_coord_ops emb_ops = {
    .name = "embedded",
    .get = emb_get,
    .range = emb_range,
    .put = emb_put,
    .del = emb_del,
    .cas = emb_cas,
    .lease_grant = emb_lease_grant,
    .lease_keepalive = emb_lease_keepalive,
    .lease_revoke = emb_lease_revoke,
    .watch_start = emb_watch_start,
    .watch_cancel = emb_watch_cancel,
    .free = emb_free,
    .history_bytes = emb_history_bytes,
};

int pk_coord_embedded_open(const char *path, const pk_coord_embedded_opts *o,
                           pk_coord **out)
{
    pk_ckv_opts ko = {0};
    uint8_t *buf = NULL;
    size_t len = 0;
    emb *e;
    int rc;

    if (path == NULL || path[0] == '\0' || out == NULL) {
        return PK_EINVAL;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return PK_ENOMEM;
    }
    e->base.ops = &emb_ops;
    e->clock = o != NULL && o->clock != NULL ? o->clock : monotonic_ms;
    e->clock_ctx = o != NULL ? o->clock_ctx : NULL;
    if (o != NULL) {
        ko.hist_max_events = o->hist_max_events;
        ko.hist_max_bytes = o->hist_max_bytes;
    }
    e->path = strdup(path);
    if (e->path == NULL) {
        rc = PK_ENOMEM;
        goto fail;
    }
    rc = pk_coord_file_read(path, &buf, &len);
    if (rc == PK_ENOTFOUND) {
        rc = pk_ckv_new(&ko, &e->kv);
    } else if (rc == PK_OK) {
        rc = pk_ckv_decode(buf, len, &ko, e->clock(e->clock_ctx), &e->kv);
    }
    free(buf);
    if (rc != PK_OK) {
        goto fail;
    }
    *out = &e->base;
    return PK_OK;
fail:
    free(e->path);
    free(e);
    return rc;
}

int pk_coord_embedded_tick(pk_coord *c)
{
    emb *e = (emb *)c;
    uint64_t now;
    int rc;

    if (c == NULL || c->ops != &emb_ops) {
        return PK_EINVAL;
    }
    rc = batch_begin(e, &now);
    if (rc != PK_OK) {
        return rc;
    }
    return batch_end(e, NULL);
}

uint64_t pk_coord_embedded_next_deadline(const pk_coord *c)
{
    if (c == NULL || c->ops != &emb_ops) {
        return UINT64_MAX;
    }
    return pk_ckv_next_deadline(((const emb *)c)->kv);
}

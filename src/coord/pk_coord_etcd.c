/*
 * pk_coord_etcd: pk_coord's operations as requests to etcd's v3 gateway
 * (see pk_coord_etcd.h for the guarantees, pk_etcd_http.h for transport).
 *
 *   get        POST /v3/kv/range        {key}
 *   range      POST /v3/kv/range        {key: prefix, range_end: prefix+1}
 *   put        POST /v3/kv/txn          success: put, range(key, keys_only)
 *   cas        POST /v3/kv/txn          compare MOD(key) == expected,
 *                                       success: put, range(keys_only)
 *                                       failure: range(key)
 *   delete     POST /v3/kv/deleterange  {key, prev_kv}
 *   grant      POST /v3/lease/grant     {TTL: seconds, rounded up}
 *   keepalive  POST /v3/lease/keepalive {ID}: one {"result": ...}
 *   revoke     POST /v3/lease/revoke    {ID}
 *   watch      POST /v3/watch           {create_request: {key, range_end,
 *                                        start_revision}}, streamed
 *
 * A put is a transaction so that its answer can carry the key as stored
 * (create_revision and version come from the range that follows the put
 * in the same transaction; the value is the one sent).  A missing key has
 * mod_revision 0 in etcd's comparisons, which is exactly pk_coord's "0:
 * must not exist".
 *
 * Watches.  Each watch is its own streaming request.  It remembers the
 * first revision it has not delivered (next_rev); when the stream breaks,
 * or etcd has not confirmed it ("created") within PK_ETCD_HTTP_TIMEOUT_MS,
 * it waits PK_ETCD_WATCH_RETRY_MS and opens a new one from next_rev,
 * dropping events below the revision it reopened at, which the old
 * stream already delivered.  etcd never splits one revision across two
 * answers, so resuming at a revision boundary loses nothing.  A watch
 * whose callback is running is not freed by a cancel from inside it; the
 * free waits until the callback returns (depth counts nested calls).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "coord/pk_coord.h"
#include "coord/pk_coord_etcd.h"
#include "coord/pk_coord_int.h"
#include "coord/pk_etcd_http.h"
#include "coord/pk_etcd_json.h"
#include "core/pk_err.h"

/* Pause before a broken watch is opened again. */
#define PK_ETCD_WATCH_RETRY_MS 50

typedef struct etcd_watch etcd_watch;

typedef struct etcd {
    pk_coord base;
    pk_etcd_http *http; /* owned */
    uv_loop_t *loop;    /* borrowed */
    etcd_watch *watches;
    int closing;
} etcd;

struct etcd_watch {
    pk_coord_watch base;
    etcd *e;
    json_t *key; /* base64 JSON strings of the watched range */
    json_t *end;
    uint64_t next_rev; /* first revision not delivered; 0: not known yet */
    uint64_t floor;    /* events below it in this stream were delivered */
    pk_coord_watch_cb cb;
    void *ctx;         /* borrowed */
    pk_etcd_stream *s; /* NULL between streams and after the end */
    uv_timer_t *timer; /* creation timeout, then reopening; owned */
    size_t losses;     /* streams lost since one was last created */
    int depth;         /* calls of cb in progress */
    int cancelled;     /* free when depth drops to 0 */
    etcd_watch *prev;
    etcd_watch *next;
};

enum op_kind {
    OP_GET,
    OP_RANGE,
    OP_PUT,
    OP_CAS,
    OP_DEL,
    OP_GRANT,
    OP_KEEPALIVE,
    OP_REVOKE,
};

/* One operation in flight. */
typedef struct op {
    pk_coord_cb cb;
    void *ctx; /* borrowed */
    int kind;
    size_t value_len;
    uint8_t value[]; /* put, cas: the value sent, for the answer's kv */
} op;

static const pk_coord_ops etcd_ops;

/* ---- requests --------------------------------------------------------- */

/* Sets o[name] = v, taking v (NULL: out of memory).  0 or -1. */
static int set(json_t *o, const char *name, json_t *v)
{
    return json_object_set_new(o, name, v) == 0 ? 0 : -1;
}

/* {"key": key, ["range_end": end,] ["keys_only": true]}, or NULL. */
static json_t *range_req(const void *key, size_t key_len, const void *end,
                         size_t end_len, int keys_only)
{
    json_t *r = json_object();
    int bad = r == NULL;

    bad |= set(r, "key", pk_etcd_json_bytes(key, key_len));
    if (end != NULL) {
        bad |= set(r, "range_end", pk_etcd_json_bytes(end, end_len));
    }
    if (keys_only) {
        bad |= set(r, "keys_only", json_true());
    }
    if (bad) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* A txn putting key and reading it back, with a compare if cas. */
static json_t *put_req(const void *key, size_t key_len, const void *value,
                       size_t value_len, uint64_t lease, int cas,
                       uint64_t expected)
{
    json_t *txn = json_object();
    json_t *put = json_object();
    json_t *success = json_array();
    int bad = txn == NULL || put == NULL || success == NULL;

    bad |= set(put, "key", pk_etcd_json_bytes(key, key_len));
    bad |= set(put, "value", pk_etcd_json_bytes(value, value_len));
    if (lease != 0) {
        /* etcd's lease ids are int64: an id it cannot have granted is
         * sent as a negative one, which it answers "not found". */
        bad |= set(put, "lease", pk_etcd_json_int((int64_t)lease));
    }
    bad |= json_array_append_new(success, json_pack("{s:o}", "request_put",
                                                    json_incref(put))) != 0;
    bad |= json_array_append_new(
               success, json_pack("{s:o}", "request_range",
                                  range_req(key, key_len, NULL, 0, 1))) != 0;
    bad |= set(txn, "success", json_incref(success));
    if (cas) {
        json_t *cmp = json_object();
        json_t *compare = json_array();
        json_t *failure = json_array();

        bad |= set(cmp, "target", json_string("MOD"));
        bad |= set(cmp, "result", json_string("EQUAL"));
        bad |= set(cmp, "key", pk_etcd_json_bytes(key, key_len));
        bad |= set(cmp, "mod_revision", pk_etcd_json_int((int64_t)expected));
        bad |= json_array_append_new(compare, cmp) != 0;
        bad |=
            json_array_append_new(
                failure, json_pack("{s:o}", "request_range",
                                   range_req(key, key_len, NULL, 0, 0))) != 0;
        bad |= set(txn, "compare", compare);
        bad |= set(txn, "failure", failure);
    }
    json_decref(put);
    json_decref(success);
    if (bad) {
        json_decref(txn);
        return NULL;
    }
    return txn;
}

/* {field: v} with v an int64, or NULL. */
static json_t *int_req(const char *field, int64_t v)
{
    json_t *r = json_object();

    if (r != NULL && set(r, field, pk_etcd_json_int(v)) != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/*
 * The end of the range of keys starting with prefix: the prefix with its
 * last byte below 0xff incremented and what follows dropped; "\0" (every
 * key from the start) when there is no such byte.  end has room for
 * max(prefix_len, 1) bytes.
 */
static size_t prefix_end(const uint8_t *prefix, size_t prefix_len, uint8_t *end)
{
    for (size_t i = prefix_len; i > 0; i--) {
        if (prefix[i - 1] != 0xff) {
            memcpy(end, prefix, i - 1);
            end[i - 1] = (uint8_t)(prefix[i - 1] + 1);
            return i;
        }
    }
    end[0] = 0;
    return 1;
}

/* ---- answers ---------------------------------------------------------- */

/*
 * The RangeResponse that is a txn's responses[i], or NULL when there is
 * none: the txn answer is not the one asked for.
 */
static const json_t *txn_range(const json_t *doc, size_t i)
{
    const json_t *r = json_array_get(json_object_get(doc, "responses"), i);
    const json_t *range = json_object_get(r, "response_range");

    return json_is_object(range) ? range : NULL;
}

/*
 * Fills res (and *kvs, owned by the caller) from a successful answer to
 * o; returns the operation's rc, or PK_EIO / PK_ENOMEM.
 */
static int answer(op *o, const json_t *doc, pk_coord_result *res,
                  pk_coord_kv **kvs, size_t *n)
{
    const json_t *range = NULL;
    const json_t *kl = NULL;
    int64_t id = 0, ttl = 0;
    uint64_t deleted = 0;
    int result = PK_OK;
    int rc;

    if (o->kind == OP_KEEPALIVE) {
        /* A stream's single message, {"result": ...} (errors, {"error":
         * ...}, are the transport's). */
        doc = json_object_get(doc, "result");
    }
    /* Every answer has a header, and etcd's revisions start at 1. */
    rc = pk_etcd_json_revision(doc, &res->revision);
    if (rc != PK_OK || res->revision == 0) {
        return PK_EIO;
    }
    switch (o->kind) {
    case OP_GET:
    case OP_RANGE:
        kl = json_object_get(doc, "kvs");
        break;
    case OP_PUT:
    case OP_CAS:
        if (json_is_true(json_object_get(doc, "succeeded"))) {
            range = txn_range(doc, 1);
            kl = json_object_get(range, "kvs");
            if (json_array_size(kl) != 1) {
                return PK_EIO;
            }
        } else if (o->kind == OP_CAS) {
            range = txn_range(doc, 0);
            kl = json_object_get(range, "kvs");
            result = PK_ESTALE;
        }
        if (range == NULL) {
            return PK_EIO;
        }
        break;
    case OP_DEL:
        rc = pk_etcd_json_u64(doc, "deleted", &deleted);
        kl = json_object_get(doc, "prev_kvs");
        if (rc == PK_OK && deleted > 0 && json_array_size(kl) == 0) {
            rc = PK_EIO;
        }
        break;
    case OP_GRANT:
    case OP_KEEPALIVE:
        rc = pk_etcd_json_i64(doc, "ID", &id);
        if (rc == PK_OK) {
            rc = pk_etcd_json_i64(doc, "TTL", &ttl);
        }
        if (rc == PK_OK && (ttl <= 0 || id == 0)) {
            /* Keepalive answers TTL 0 (left out) for a missing lease. */
            rc = o->kind == OP_KEEPALIVE ? PK_ENOTFOUND : PK_EIO;
        }
        if (rc == PK_OK && (uint64_t)ttl > PK_COORD_TTL_MAX_MS / 1000) {
            rc = PK_EIO;
        }
        res->lease = (uint64_t)id;
        res->ttl_ms = (uint64_t)ttl * 1000;
        if (rc != PK_OK) {
            res->lease = res->ttl_ms = 0;
        }
        return rc;
    default: /* OP_REVOKE */
        return PK_OK;
    }
    if (rc == PK_OK) {
        rc = pk_etcd_json_kvs(kl, kvs, n);
    }
    if (rc != PK_OK) {
        return rc;
    }
    if ((o->kind == OP_PUT || o->kind == OP_CAS) && result == PK_OK) {
        /* The range was keys_only: the value is the one sent. */
        (*kvs)[0].value = o->value_len > 0 ? o->value : NULL;
        (*kvs)[0].value_len = o->value_len;
    }
    if ((o->kind == OP_GET || o->kind == OP_DEL) && *n == 0) {
        result = PK_ENOTFOUND;
    }
    if (o->kind == OP_GET || o->kind == OP_DEL) {
        *n = *n > 0 ? 1 : 0;
    }
    return result;
}

static void on_answer(void *ctx, int rc, json_t *doc)
{
    op *o = ctx;
    pk_coord_result res = {0};
    pk_coord_kv *kvs = NULL;
    size_t n = 0;

    if (rc == PK_OK) {
        rc = answer(o, doc, &res, &kvs, &n);
    } else if (rc == PK_ENOTFOUND &&
               (o->kind == OP_PUT || o->kind == OP_CAS ||
                o->kind == OP_KEEPALIVE || o->kind == OP_REVOKE)) {
        /* etcd's "requested lease not found". */
    } else {
        rc = PK_EIO;
    }
    if (rc != PK_OK && rc != PK_ESTALE && rc != PK_ENOTFOUND) {
        free(kvs);
        kvs = NULL;
        n = 0;
        memset(&res, 0, sizeof(res));
    }
    res.kvs = kvs;
    res.nkvs = kvs != NULL ? n : 0;
    o->cb(o->ctx, rc, &res);
    free(kvs);
    free(o);
}

/* Sends req (owned; NULL: out of memory) for a new op; 0 or an error. */
static int send_op(etcd *e, int kind, const char *path, json_t *req,
                   unsigned flags, const void *value, size_t value_len,
                   pk_coord_cb cb, void *ctx)
{
    op *o = NULL;
    int rc = PK_ENOMEM;

    if (e->closing) {
        json_decref(req);
        return PK_EIO;
    }
    if (req != NULL) {
        o = malloc(sizeof(*o) + value_len);
    }
    if (o != NULL) {
        o->cb = cb;
        o->ctx = ctx;
        o->kind = kind;
        o->value_len = value_len;
        if (value_len > 0) {
            memcpy(o->value, value, value_len);
        }
        rc = pk_etcd_http_call(e->http, path, req, flags, on_answer, o);
    }
    json_decref(req);
    if (rc != PK_OK) {
        free(o);
    }
    return rc;
}

/* ---- operations ------------------------------------------------------- */

static int etcd_get(pk_coord *c, const void *key, size_t key_len,
                    pk_coord_cb cb, void *ctx)
{
    return send_op((etcd *)c, OP_GET, "/v3/kv/range",
                   range_req(key, key_len, NULL, 0, 0), PK_ETCD_IDEMPOTENT,
                   NULL, 0, cb, ctx);
}

static int etcd_range(pk_coord *c, const void *prefix, size_t prefix_len,
                      pk_coord_cb cb, void *ctx)
{
    static const uint8_t zero = 0;
    uint8_t *end = malloc(prefix_len > 0 ? prefix_len : 1);
    size_t end_len;
    int rc;

    if (end == NULL) {
        return PK_ENOMEM;
    }
    end_len = prefix_end(prefix, prefix_len, end);
    /* Keys are never empty: "every key" is from "\0" on. */
    rc = send_op((etcd *)c, OP_RANGE, "/v3/kv/range",
                 range_req(prefix_len > 0 ? prefix : &zero,
                           prefix_len > 0 ? prefix_len : 1, end, end_len, 0),
                 PK_ETCD_IDEMPOTENT, NULL, 0, cb, ctx);
    free(end);
    return rc;
}

static int etcd_put(pk_coord *c, const void *key, size_t key_len,
                    const void *value, size_t value_len, uint64_t lease,
                    pk_coord_cb cb, void *ctx)
{
    return send_op((etcd *)c, OP_PUT, "/v3/kv/txn",
                   put_req(key, key_len, value, value_len, lease, 0, 0), 0,
                   value, value_len, cb, ctx);
}

static int etcd_cas(pk_coord *c, const void *key, size_t key_len,
                    uint64_t expected, const void *value, size_t value_len,
                    uint64_t lease, pk_coord_cb cb, void *ctx)
{
    if (expected > INT64_MAX) {
        expected = (uint64_t)INT64_MAX; /* a revision etcd never reaches */
    }
    return send_op((etcd *)c, OP_CAS, "/v3/kv/txn",
                   put_req(key, key_len, value, value_len, lease, 1, expected),
                   0, value, value_len, cb, ctx);
}

static int etcd_del(pk_coord *c, const void *key, size_t key_len,
                    pk_coord_cb cb, void *ctx)
{
    json_t *req = range_req(key, key_len, NULL, 0, 0);

    if (req != NULL && set(req, "prev_kv", json_true()) != 0) {
        json_decref(req);
        req = NULL;
    }
    return send_op((etcd *)c, OP_DEL, "/v3/kv/deleterange", req, 0, NULL, 0, cb,
                   ctx);
}

static int etcd_lease_grant(pk_coord *c, uint64_t ttl_ms, pk_coord_cb cb,
                            void *ctx)
{
    /* Whole seconds, rounded up; a retried grant at worst leaves an
     * unused lease to expire. */
    return send_op((etcd *)c, OP_GRANT, "/v3/lease/grant",
                   int_req("TTL", (int64_t)((ttl_ms + 999) / 1000)),
                   PK_ETCD_IDEMPOTENT, NULL, 0, cb, ctx);
}

static int etcd_lease_keepalive(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                                void *ctx)
{
    return send_op((etcd *)c, OP_KEEPALIVE, "/v3/lease/keepalive",
                   int_req("ID", (int64_t)lease), PK_ETCD_IDEMPOTENT, NULL, 0,
                   cb, ctx);
}

static int etcd_lease_revoke(pk_coord *c, uint64_t lease, pk_coord_cb cb,
                             void *ctx)
{
    return send_op((etcd *)c, OP_REVOKE, "/v3/lease/revoke",
                   int_req("ID", (int64_t)lease), 0, NULL, 0, cb, ctx);
}

/* ---- watches ---------------------------------------------------------- */

static void watch_unlink(etcd_watch *w)
{
    etcd *e = w->e;

    if (w->prev != NULL) {
        w->prev->next = w->next;
    } else if (e->watches == w) {
        e->watches = w->next;
    }
    if (w->next != NULL) {
        w->next->prev = w->prev;
    }
    w->prev = w->next = NULL;
}

static void free_handle(uv_handle_t *handle)
{
    free(handle);
}

static void watch_free(etcd_watch *w)
{
    json_decref(w->key);
    json_decref(w->end);
    free(w);
}

/* Calls the user's callback; returns 0 if the watch was cancelled in it
 * (and is freed now unless an outer call is still running). */
static int deliver(etcd_watch *w, int rc, const pk_coord_event *ev)
{
    w->depth++;
    w->cb(w->ctx, rc, ev);
    w->depth--;
    if (w->cancelled) {
        if (w->depth == 0) {
            watch_free(w);
        }
        return 0;
    }
    return 1;
}

static void watch_end(etcd_watch *w, int rc)
{
    pk_etcd_http_stream_close(w->s);
    w->s = NULL;
    uv_timer_stop(w->timer);
    deliver(w, rc, NULL);
}

static void on_watch_object(void *ctx, json_t *obj);
static void on_watch_end(void *ctx, int rc);
static void on_watch_timer(uv_timer_t *t);
static void watch_lost(etcd_watch *w);

static int watch_open(etcd_watch *w)
{
    json_t *create = json_object();
    json_t *req = NULL;
    int bad = create == NULL;
    int rc = PK_ENOMEM;

    bad |= set(create, "key", json_incref(w->key));
    bad |= set(create, "range_end", json_incref(w->end));
    if (w->next_rev != 0) {
        bad |= set(create, "start_revision",
                   pk_etcd_json_int((int64_t)w->next_rev));
    }
    if (!bad) {
        req = json_pack("{s:O}", "create_request", create);
    }
    if (req != NULL) {
        rc = pk_etcd_http_stream_open(w->e->http, "/v3/watch", req,
                                      on_watch_object, on_watch_end, w, &w->s);
    }
    json_decref(create);
    json_decref(req);
    w->floor = w->next_rev;
    if (rc == PK_OK) {
        /* An endpoint that takes the request but never answers is lost. */
        uv_timer_start(w->timer, on_watch_timer, PK_ETCD_HTTP_TIMEOUT_MS, 0);
    }
    return rc;
}

/* Time to reopen the watch, or its stream was not created in time. */
static void on_watch_timer(uv_timer_t *t)
{
    etcd_watch *w = t->data;

    if (w->s != NULL) {
        watch_lost(w);
    } else if (watch_open(w) != PK_OK) {
        watch_end(w, PK_EIO);
    }
}

/* The stream broke: open another, unless every endpoint had its try. */
static void watch_lost(etcd_watch *w)
{
    pk_etcd_http_stream_close(w->s);
    w->s = NULL;
    if (++w->losses > pk_etcd_http_endpoints(w->e->http)) {
        watch_end(w, PK_EIO);
        return;
    }
    uv_timer_start(w->timer, on_watch_timer, PK_ETCD_WATCH_RETRY_MS, 0);
}

static void on_watch_end(void *ctx, int rc)
{
    etcd_watch *w = ctx;

    w->s = NULL; /* freed by the transport */
    if (rc == PK_EPROTO) {
        watch_end(w, PK_EIO);
    } else {
        watch_lost(w);
    }
}

static void on_watch_object(void *ctx, json_t *obj)
{
    etcd_watch *w = ctx;
    const json_t *res = json_object_get(obj, "result");
    pk_coord_event *evs = NULL;
    uint64_t compacted = 0, rev = 0;
    size_t n = 0;

    if (!json_is_object(res)) {
        /* {"error": ...}: the stream failed (no leader, member stopping). */
        if (json_object_get(obj, "error") != NULL) {
            watch_lost(w);
        } else {
            watch_end(w, PK_EIO);
        }
        return;
    }
    if (pk_etcd_json_u64(res, "compact_revision", &compacted) != PK_OK ||
        pk_etcd_json_revision(res, &rev) != PK_OK ||
        pk_etcd_json_events(json_object_get(res, "events"), &evs, &n) !=
            PK_OK) {
        watch_end(w, PK_EIO);
        return;
    }
    if (compacted != 0 || json_is_true(json_object_get(res, "canceled"))) {
        free(evs);
        watch_end(w, compacted != 0 ? PK_ERANGE : PK_EIO);
        return;
    }
    if (json_is_true(json_object_get(res, "created"))) {
        uv_timer_stop(w->timer);
        w->losses = 0;
        if (w->next_rev == 0) {
            /* From "the next revision": the one after creation. */
            w->next_rev = w->floor = rev + 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (evs[i].revision < w->floor) {
            continue; /* delivered by an earlier stream */
        }
        if (evs[i].revision >= w->next_rev) {
            w->next_rev = evs[i].revision + 1;
        }
        if (!deliver(w, PK_OK, &evs[i])) {
            break;
        }
    }
    free(evs);
}

static int etcd_watch_start(pk_coord *c, const void *prefix, size_t prefix_len,
                            uint64_t from_revision, pk_coord_watch_cb cb,
                            void *ctx, pk_coord_watch **out)
{
    static const uint8_t zero = 0;
    etcd *e = (etcd *)c;
    pk_coord_watch *old = *out;
    uint8_t *end;
    size_t end_len;
    etcd_watch *w;
    int rc;

    if (e->closing) {
        return PK_EIO;
    }
    w = calloc(1, sizeof(*w));
    end = malloc(prefix_len > 0 ? prefix_len : 1);
    if (w != NULL) {
        w->timer = malloc(sizeof(*w->timer));
    }
    if (w == NULL || end == NULL || w->timer == NULL) {
        if (w != NULL) {
            free(w->timer);
        }
        free(w);
        free(end);
        return PK_ENOMEM;
    }
    if (uv_timer_init(e->loop, w->timer) != 0) {
        free(w->timer);
        free(w);
        free(end);
        return PK_EIO;
    }
    w->timer->data = w;
    end_len = prefix_end(prefix, prefix_len, end);
    w->base.coord = c;
    w->e = e;
    w->cb = cb;
    w->ctx = ctx;
    w->next_rev = from_revision > INT64_MAX ? INT64_MAX : from_revision;
    w->key = pk_etcd_json_bytes(prefix_len > 0 ? prefix : &zero,
                                prefix_len > 0 ? prefix_len : 1);
    w->end = pk_etcd_json_bytes(end, end_len);
    free(end);
    *out = &w->base;
    rc = w->key != NULL && w->end != NULL ? watch_open(w) : PK_ENOMEM;
    if (rc != PK_OK) {
        uv_close((uv_handle_t *)w->timer, free_handle);
        watch_free(w);
        *out = old;
        return rc;
    }
    w->next = e->watches;
    if (e->watches != NULL) {
        e->watches->prev = w;
    }
    e->watches = w;
    return PK_OK;
}

static void etcd_watch_cancel(pk_coord_watch *base)
{
    etcd_watch *w = (etcd_watch *)base;

    watch_unlink(w);
    pk_etcd_http_stream_close(w->s);
    w->s = NULL;
    uv_close((uv_handle_t *)w->timer, free_handle);
    w->timer = NULL;
    w->cancelled = 1;
    if (w->depth == 0) {
        watch_free(w);
    }
}

/* ---- the handle ------------------------------------------------------- */

static void etcd_free(pk_coord *c)
{
    etcd *e = (etcd *)c;

    e->closing = 1;
    while (e->watches != NULL) {
        etcd_watch_cancel(&e->watches->base);
    }
    pk_etcd_http_free(e->http);
    free(e);
}

static const pk_coord_ops etcd_ops = {
    .name = "etcd",
    .get = etcd_get,
    .range = etcd_range,
    .put = etcd_put,
    .del = etcd_del,
    .cas = etcd_cas,
    .lease_grant = etcd_lease_grant,
    .lease_keepalive = etcd_lease_keepalive,
    .lease_revoke = etcd_lease_revoke,
    .watch_start = etcd_watch_start,
    .watch_cancel = etcd_watch_cancel,
    .free = etcd_free,
};

void pk_coord_etcd_set_source(pk_coord *c, const char *ip)
{
    pk_etcd_http_set_source(((etcd *)c)->http, ip);
}

int pk_coord_etcd_set_tls(pk_coord *c, const char *cert, const char *key,
                          const char *ca)
{
    return pk_etcd_http_set_tls(((etcd *)c)->http, cert, key, ca);
}

int pk_coord_etcd_open(struct uv_loop_s *loop, const char *endpoints,
                       pk_coord **out)
{
    etcd *e;
    int rc;

    if (loop == NULL || endpoints == NULL || out == NULL) {
        return PK_EINVAL;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return PK_ENOMEM;
    }
    rc = pk_etcd_http_new(loop, endpoints, &e->http);
    if (rc != PK_OK) {
        free(e);
        return rc;
    }
    e->base.ops = &etcd_ops;
    e->loop = loop;
    *out = &e->base;
    return PK_OK;
}

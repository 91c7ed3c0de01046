/*
 * Internal commands: PK.AUTH and the PK.COORD family, through which nodes
 * reach the embedded coordinator hosted by one node (--coordinator
 * embedded).  Every PK.COORD call needs a connection that presented the
 * cluster secret with PK.AUTH.  The embedded backend answers
 * synchronously and persists a mutation before its callback runs, so a
 * reply here is sent only for durable changes.
 *
 *   PK.AUTH secret
 *   PK.COORD GET key [mod_rev]             -> [rev, kv | nil], or [rev]
 *                                             when the key's mod_rev is
 *                                             not above the one given
 *   PK.COORD RANGE prefix                  -> [rev, [kv...]]
 *   PK.COORD PUT key value lease           -> [rev]
 *   PK.COORD CAS key mod_rev value lease   -> [rev] | -ESTALE mod_rev
 *   PK.COORD DEL key                       -> [rev]
 *   PK.COORD GRANT ttl_ms                  -> [rev, lease]
 *   PK.COORD KEEPALIVE lease               -> [rev, lease] | -NOTFOUND
 *   PK.COORD REVOKE lease                  -> [rev]
 *   PK.COORD EVENTS prefix from_rev        -> [[type, rev, kv]...]
 *                                             | -COMPACTED
 *   kv = [key, value, create_rev, mod_rev, version, lease]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <uv.h>

#include "coord/pk_coord.h"
#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "server/pk_link.h"

/*
 * One PK.COORD call.  The embedded backend answers before the operation
 * returns; etcd's answer comes later from the loop, while the connection
 * waits (it runs nothing else, as for a forwarded command).
 */
typedef struct coord_call {
    pk_conn *c; /* the caller; NULL once it closed (async only) */
    int proto;
    char op[12];    /* the subcommand, lower case */
    uint64_t since; /* GET: answer [rev] unless mod_revision > since */
    int replied;
    int async; /* the command returned before the answer came */
    /* EVENTS on etcd: events gathered until the timer fires. */
    pk_coord_watch *watch;
    pk_obuf events;
    size_t nevents;
    int events_rc;
    uv_timer_t timer;
} coord_call;

static void reply_kv(pk_obuf *ob, const pk_coord_kv *kv)
{
    pk_reply_array(ob, 6);
    pk_reply_bulk(ob, kv->key, kv->key_len);
    pk_reply_bulk(ob, kv->value ? (const void *)kv->value : "", kv->value_len);
    pk_reply_int(ob, (int64_t)kv->create_revision);
    pk_reply_int(ob, (int64_t)kv->mod_revision);
    pk_reply_int(ob, (int64_t)kv->version);
    pk_reply_int(ob, (int64_t)kv->lease);
}

static void reply_result(coord_call *c, pk_obuf *ob, int rc,
                         const pk_coord_result *res);

static int op_is(const coord_call *c, const char *op)
{
    return strcmp(c->op, op) == 0;
}

/* The answer is in c->c->out: an async call lets its connection go on. */
static void finish(coord_call *c)
{
    c->replied = 1;
    if (!c->async)
        return; /* the command is still running: it frees c */
    if (c->c) {
        c->c->coord_call = NULL;
        c->c->waiting_fwd = 0;
        pk_conn_resume(c->c);
    }
    pk_obuf_free(&c->events);
    free(c);
}

/* One callback for every operation: the reply shape follows the result. */
static void on_result(void *ctx, int rc, const pk_coord_result *res)
{
    coord_call *c = ctx;
    pk_obuf scratch, *ob = c->c ? &c->c->out : &scratch;

    pk_obuf_init(&scratch);
    reply_result(c, ob, rc, res);
    pk_obuf_free(&scratch);
    finish(c);
}

static void reply_result(coord_call *c, pk_obuf *ob, int rc,
                         const pk_coord_result *res)
{
    if (rc == PK_ESTALE) {
        pk_reply_errorf(ob, "ESTALE %llu",
                        res && res->nkvs
                            ? (unsigned long long)res->kvs[0].mod_revision
                            : 0ULL);
        return;
    }
    if (rc == PK_ENOTFOUND && res && res->lease == 0 && res->nkvs == 0 &&
        op_is(c, "get")) {
        pk_reply_array(ob, 2);
        pk_reply_int(ob, (int64_t)res->revision);
        pk_reply_null(ob, c->proto);
        return;
    }
    if (rc != PK_OK) {
        pk_reply_errorf(ob, "%s %s",
                        rc == PK_ENOTFOUND ? "NOTFOUND" : "ERR coordinator:",
                        pk_strerror(rc));
        return;
    }
    if (op_is(c, "range")) {
        pk_reply_array(ob, 2);
        pk_reply_int(ob, (int64_t)res->revision);
        pk_reply_array(ob, res->nkvs);
        for (size_t i = 0; i < res->nkvs; i++)
            reply_kv(ob, &res->kvs[i]);
    } else if (op_is(c, "get")) {
        /* An unchanged value is not sent again: pollers of the 100+ KB
         * map pay for it only when it changed. */
        int same = c->since && res->kvs[0].mod_revision <= c->since;
        pk_reply_array(ob, same ? 1 : 2);
        pk_reply_int(ob, (int64_t)res->revision);
        if (!same)
            reply_kv(ob, &res->kvs[0]);
    } else if (res->lease) {
        pk_reply_array(ob, 2);
        pk_reply_int(ob, (int64_t)res->revision);
        pk_reply_int(ob, (int64_t)res->lease);
    } else {
        pk_reply_array(ob, 1);
        pk_reply_int(ob, (int64_t)res->revision);
    }
}

static void on_event(void *ctx, int rc, const pk_coord_event *ev)
{
    coord_call *c = ctx;

    if (rc < 0) {
        c->events_rc = rc;
        return;
    }
    pk_reply_array(&c->events, 3);
    pk_reply_int(&c->events, ev->type);
    pk_reply_int(&c->events, (int64_t)ev->revision);
    reply_kv(&c->events, &ev->kv);
    c->nevents++;
}

static void reply_events(coord_call *c)
{
    pk_obuf scratch, *ob = c->c ? &c->c->out : &scratch;

    pk_obuf_init(&scratch);
    if (c->events_rc == PK_ERANGE) {
        pk_reply_error(ob, "COMPACTED history no longer holds that "
                           "revision; range and watch again");
    } else if (c->events_rc != PK_OK) {
        pk_reply_errorf(ob, "ERR coordinator: %s", pk_strerror(c->events_rc));
    } else {
        pk_reply_array(ob, c->nevents);
        if (c->nevents)
            pk_obuf_append(ob, c->events.data + c->events.head,
                           pk_obuf_pending(&c->events));
    }
    pk_obuf_free(&scratch);
}

static void on_events_closed(uv_handle_t *h)
{
    coord_call *c = h->data;

    reply_events(c);
    finish(c);
}

/* etcd: the retained history has arrived by now; answer what came. */
static void on_events_timer(uv_timer_t *t)
{
    coord_call *c = t->data;

    pk_coord_watch_cancel(c->watch);
    c->watch = NULL;
    uv_close((uv_handle_t *)&c->timer, on_events_closed);
}

/* Events from a revision on, without blocking the caller for long: the
 * embedded backend delivers the retained history inside watch_start; an
 * etcd watch is given EVENTS_MS to send it.  The caller polls with the
 * revision after the last event it saw. */
#define EVENTS_MS 300
static void coord_events(pk_cmd_ctx *x, coord_call *c, pk_coord *co,
                         const pk_arg *prefix, uint64_t from)
{
    int rc = pk_coord_watch_start(co, prefix->ptr, prefix->len, from, on_event,
                                  c, &c->watch);

    if (rc != PK_OK)
        c->events_rc = rc;
    if (rc == PK_OK && strcmp(pk_coord_backend(co), "embedded") != 0 &&
        c->events_rc == PK_OK) {
        uv_timer_init(&x->srv->loop, &c->timer);
        c->timer.data = c;
        uv_timer_start(&c->timer, on_events_timer, EVENTS_MS, 0);
        return; /* async */
    }
    pk_coord_watch_cancel(c->watch);
    c->watch = NULL;
    reply_events(c);
    c->replied = 1;
}

void pk_cmd_pk_auth(pk_cmd_ctx *x)
{
    const char *want = x->srv->cfg.cluster_secret;

    if (want == NULL || x->argv[1].len != strlen(want) ||
        CRYPTO_memcmp(x->argv[1].ptr, want, x->argv[1].len) != 0) {
        pk_reply_error(x->out, "WRONGPASS invalid cluster secret");
        return;
    }
    /* --tls-cluster: a node proves itself by its certificate too. */
    if (x->srv->cfg.tls_cluster &&
        (x->c->tls == NULL || !pk_tls_peer_verified(x->c->tls))) {
        pk_reply_error(x->out, "NOAUTH PK.AUTH needs TLS with a certificate "
                               "of the cluster's CA (--tls-cluster yes)");
        return;
    }
    x->c->internal = 1;
    x->c->authed = 1; /* the secret outranks --requirepass */
    pk_reply_simple(x->out, "OK");
}

/* argv[i] as a u64; on failure replies the error and sets *bad. */
static uint64_t u64_arg(pk_cmd_ctx *x, int i, int *bad)
{
    int64_t v = 0;

    if (!*bad && (!pk_arg_i64(&x->argv[i], &v) || v < 0)) {
        pk_reply_notint(x);
        *bad = 1;
    }
    return (uint64_t)v;
}

/* True when the subcommand is op and the command has argc arguments. */
static int shape(pk_cmd_ctx *x, const char *op, int argc)
{
    return pk_arg_eq(&x->argv[1], op) && x->argc == argc;
}

static void run(pk_cmd_ctx *x, pk_coord *co, const pk_arg *k, coord_call *cc,
                int *prc, int *pbad);

void pk_cmd_pk_coord(pk_cmd_ctx *x)
{
    pk_coord *co = x->srv->coord;
    const pk_arg *k = &x->argv[2];
    coord_call *cc;
    int rc = PK_OK, bad = 0;

    if (!x->c->internal) {
        pk_reply_error(x->out, "NOAUTH PK.COORD needs PK.AUTH with the "
                               "cluster secret");
        return;
    }
    if (co == NULL && x->srv->cfg.join &&
        pk_link_forward(x->srv, x->c, x->srv->cfg.join, x->argc, x->argv) ==
            PK_OK) {
        x->c->iter_cmds--; /* the coordinator's host answers */
        return;
    }
    if (co == NULL) {
        pk_reply_error(x->out, "ERR this node does not host the "
                               "coordinator");
        return;
    }
    if ((cc = calloc(1, sizeof(*cc))) == NULL) {
        pk_reply_error(x->out, "ERR out of memory");
        return;
    }
    cc->c = x->c;
    cc->proto = x->proto;
    pk_obuf_init(&cc->events);
    snprintf(cc->op, sizeof(cc->op), "%.*s",
             (int)(x->argv[1].len < sizeof(cc->op) ? x->argv[1].len : 0),
             x->argv[1].ptr);
    for (char *p = cc->op; *p; p++)
        *p = (char)(*p | 0x20);
    run(x, co, k, cc, &rc, &bad);
    if (cc->replied || bad || rc != PK_OK) {
        if (!bad && !cc->replied)
            pk_reply_errorf(x->out, "ERR coordinator: %s", pk_strerror(rc));
        pk_obuf_free(&cc->events);
        free(cc);
        return;
    }
    /* The answer comes from the loop: the connection waits for it. */
    cc->async = 1;
    x->c->coord_call = cc;
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--;
}

void pk_coord_conn_closed(pk_conn *c)
{
    coord_call *cc = c->coord_call;

    if (cc)
        cc->c = NULL; /* its answer is dropped when it comes */
    c->coord_call = NULL;
}

static void run(pk_cmd_ctx *x, pk_coord *co, const pk_arg *k, coord_call *cc,
                int *prc, int *pbad)
{
    int rc = PK_OK, bad = 0;
    coord_call *c = cc;

    if (shape(x, "get", 3) || shape(x, "get", 4)) {
        c->since = x->argc == 4 ? u64_arg(x, 3, &bad) : 0;
        if (!bad)
            rc = pk_coord_get(co, k->ptr, k->len, on_result, c);
    } else if (shape(x, "range", 3)) {
        rc = pk_coord_range(co, k->ptr, k->len, on_result, c);
    } else if (shape(x, "put", 5)) {
        uint64_t lease = u64_arg(x, 4, &bad);
        if (!bad)
            rc = pk_coord_put(co, k->ptr, k->len, x->argv[3].ptr,
                              x->argv[3].len, lease, on_result, c);
    } else if (shape(x, "cas", 6)) {
        uint64_t rev = u64_arg(x, 3, &bad), lease = u64_arg(x, 5, &bad);
        if (!bad)
            rc = pk_coord_cas(co, k->ptr, k->len, rev, x->argv[4].ptr,
                              x->argv[4].len, lease, on_result, c);
    } else if (shape(x, "del", 3)) {
        rc = pk_coord_delete(co, k->ptr, k->len, on_result, c);
    } else if (shape(x, "grant", 3)) {
        uint64_t ttl = u64_arg(x, 2, &bad);
        if (!bad)
            rc = pk_coord_lease_grant(co, ttl, on_result, c);
    } else if (shape(x, "keepalive", 3)) {
        uint64_t lease = u64_arg(x, 2, &bad);
        if (!bad)
            rc = pk_coord_lease_keepalive(co, lease, on_result, c);
    } else if (shape(x, "revoke", 3)) {
        uint64_t lease = u64_arg(x, 2, &bad);
        if (!bad)
            rc = pk_coord_lease_revoke(co, lease, on_result, c);
    } else if (shape(x, "events", 4)) {
        uint64_t from = u64_arg(x, 3, &bad);
        if (!bad)
            coord_events(x, c, co, k, from);
    } else {
        pk_reply_syntax(x);
        bad = 1;
    }
    *prc = rc;
    *pbad = bad;
}

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
#include <string.h>

#include "coord/pk_coord.h"
#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "server/pk_link.h"

typedef struct coord_call {
    pk_cmd_ctx *x;
    int replied;
    uint64_t since; /* GET: answer [rev] unless mod_revision > since */
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

/* One callback for every operation: the reply shape follows the result. */
static void on_result(void *ctx, int rc, const pk_coord_result *res)
{
    coord_call *c = ctx;
    pk_obuf *ob = c->x->out;

    c->replied = 1;
    if (rc == PK_ESTALE) {
        pk_reply_errorf(ob, "ESTALE %llu",
                        res && res->nkvs
                            ? (unsigned long long)res->kvs[0].mod_revision
                            : 0ULL);
        return;
    }
    if (rc == PK_ENOTFOUND && res && res->lease == 0 && res->nkvs == 0 &&
        pk_arg_eq(&c->x->argv[1], "get")) {
        pk_reply_array(ob, 2);
        pk_reply_int(ob, (int64_t)res->revision);
        pk_reply_null(ob, c->x->proto);
        return;
    }
    if (rc != PK_OK) {
        pk_reply_errorf(ob, "%s %s",
                        rc == PK_ENOTFOUND ? "NOTFOUND" : "ERR coordinator:",
                        pk_strerror(rc));
        return;
    }
    if (pk_arg_eq(&c->x->argv[1], "range")) {
        pk_reply_array(ob, 2);
        pk_reply_int(ob, (int64_t)res->revision);
        pk_reply_array(ob, res->nkvs);
        for (size_t i = 0; i < res->nkvs; i++)
            reply_kv(ob, &res->kvs[i]);
    } else if (pk_arg_eq(&c->x->argv[1], "get")) {
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

typedef struct event_list {
    pk_obuf events;
    size_t n;
    int rc;
} event_list;

static void on_event(void *ctx, int rc, const pk_coord_event *ev)
{
    event_list *l = ctx;

    if (rc < 0) {
        l->rc = rc;
        return;
    }
    pk_reply_array(&l->events, 3);
    pk_reply_int(&l->events, ev->type);
    pk_reply_int(&l->events, (int64_t)ev->revision);
    reply_kv(&l->events, &ev->kv);
    l->n++;
}

/* Events from a revision on, without blocking: a watch started and
 * cancelled at once delivers the retained history synchronously.  The
 * caller polls with the revision after the last event it saw. */
static void coord_events(pk_cmd_ctx *x, pk_coord *co, const pk_arg *prefix,
                         uint64_t from)
{
    event_list l = {{0}, 0, 0};
    pk_coord_watch *w = NULL;
    int rc;

    pk_obuf_init(&l.events);
    rc = pk_coord_watch_start(co, prefix->ptr, prefix->len, from, on_event, &l,
                              &w);
    pk_coord_watch_cancel(w);
    if (rc == PK_OK && l.rc == PK_ERANGE) {
        pk_reply_error(x->out, "COMPACTED history no longer holds that "
                               "revision; range and watch again");
    } else if (rc != PK_OK || l.rc != PK_OK) {
        pk_reply_errorf(x->out, "ERR coordinator: %s",
                        pk_strerror(rc != PK_OK ? rc : l.rc));
    } else {
        pk_reply_array(x->out, l.n);
        if (l.n)
            pk_obuf_append(x->out, l.events.data + l.events.head,
                           pk_obuf_pending(&l.events));
    }
    pk_obuf_free(&l.events);
}

void pk_cmd_pk_auth(pk_cmd_ctx *x)
{
    const char *want = x->srv->cfg.cluster_secret;

    if (want == NULL || x->argv[1].len != strlen(want) ||
        memcmp(x->argv[1].ptr, want, x->argv[1].len) != 0) {
        pk_reply_error(x->out, "WRONGPASS invalid cluster secret");
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

void pk_cmd_pk_coord(pk_cmd_ctx *x)
{
    pk_coord *co = x->srv->coord;
    const pk_arg *k = &x->argv[2];
    coord_call c = {x, 0, 0};
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
    if (shape(x, "get", 3) || shape(x, "get", 4)) {
        c.since = x->argc == 4 ? u64_arg(x, 3, &bad) : 0;
        if (!bad)
            rc = pk_coord_get(co, k->ptr, k->len, on_result, &c);
    } else if (shape(x, "range", 3)) {
        rc = pk_coord_range(co, k->ptr, k->len, on_result, &c);
    } else if (shape(x, "put", 5)) {
        uint64_t lease = u64_arg(x, 4, &bad);
        if (!bad)
            rc = pk_coord_put(co, k->ptr, k->len, x->argv[3].ptr,
                              x->argv[3].len, lease, on_result, &c);
    } else if (shape(x, "cas", 6)) {
        uint64_t rev = u64_arg(x, 3, &bad), lease = u64_arg(x, 5, &bad);
        if (!bad)
            rc = pk_coord_cas(co, k->ptr, k->len, rev, x->argv[4].ptr,
                              x->argv[4].len, lease, on_result, &c);
    } else if (shape(x, "del", 3)) {
        rc = pk_coord_delete(co, k->ptr, k->len, on_result, &c);
    } else if (shape(x, "grant", 3)) {
        uint64_t ttl = u64_arg(x, 2, &bad);
        if (!bad)
            rc = pk_coord_lease_grant(co, ttl, on_result, &c);
    } else if (shape(x, "keepalive", 3)) {
        uint64_t lease = u64_arg(x, 2, &bad);
        if (!bad)
            rc = pk_coord_lease_keepalive(co, lease, on_result, &c);
    } else if (shape(x, "revoke", 3)) {
        uint64_t lease = u64_arg(x, 2, &bad);
        if (!bad)
            rc = pk_coord_lease_revoke(co, lease, on_result, &c);
    } else if (shape(x, "events", 4)) {
        uint64_t from = u64_arg(x, 3, &bad);
        if (!bad)
            coord_events(x, co, k, from);
        return;
    } else {
        pk_reply_syntax(x);
        return;
    }
    if (!bad && !c.replied)
        pk_reply_errorf(x->out, "ERR coordinator: %s", pk_strerror(rc));
}

/*
 * pk_multi: MULTI / EXEC / DISCARD and WATCH / UNWATCH (see pk_multi.h
 * for the semantics).
 */
#include "server/pk_multi.h"

#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_ctx.h"
#include "server/pk_repl.h"
#include "server/pk_route.h"
#include "server/pk_salted.h"
#include "server/pk_srv.h"
#include "server/pk_watch.h"
#include "store/pk_key.h"
#include "store/pk_store_log.h"

/* Queued arguments a transaction may hold: Redis bounds them only by
 * maxmemory; a node bounds every connection's memory. */
#define MULTI_MAX_BYTES (256u << 20)
/* A connection's spare transaction keeps an arena up to this size. */
#define MULTI_SPARE_MAX (64u << 10)

/* A queued command: its arguments at arena + off, as argc pk_args and
 * then their bytes, NUL-terminated; the pointers are set by EXEC, once
 * the arena stops moving. */
typedef struct queued {
    const pk_cmd *cmd;
    int argc;
    size_t off;
} queued;

/* One per connection in MULTI; EXEC and DISCARD keep it as the
 * connection's spare, so that a transaction allocates nothing. */
struct pk_multi {
    queued *q; /* owned, cap entries */
    uint32_t n, cap;
    char *arena; /* owned, acap bytes, used of them taken */
    size_t used, acap;
    size_t bytes;  /* argument bytes queued */
    int aborted;   /* a command was rejected while queueing */
    int writes;    /* some queued command writes */
    int slot;      /* cluster: the slot of the first key, -1 none yet */
    int64_t gpart; /* the partition of the first key, -1 none yet */
};

/* ---- WATCH beyond its table (pk_watch.c) ----------------------------- */

static void touch_unserved(pk_wkey *e, void *ctx)
{
    pk_server *s = ctx;

    if (pk_pmap_leader(s->cluster.map, e->part) != s->cluster.self &&
        !pk_repl_follows(s, e->part))
        e->c->watch_dirty = 1;
}

void pk_watch_map_changed(pk_server *s)
{
    if (s->cluster.map)
        pk_watch_each(s, touch_unserved, s);
}

/* A watched key whose expiry passed since WATCH (expiry needs no touch:
 * the deadline WATCH saw is still the key's unless a write touched it). */
static int watch_expired(const pk_conn *c, uint64_t now)
{
    for (const pk_wkey *e = c->watched; e; e = e->cnext)
        if (e->deadline != 0 && e->deadline <= now)
            return 1;
    return 0;
}

/* ---- the queue ----------------------------------------------------------*/

static void multi_free(struct pk_multi *m)
{
    if (m == NULL)
        return;
    free(m->q);
    free(m->arena);
    free(m);
}

/* Ends transaction m of c: kept as c's spare, or freed when large. */
static void multi_done(pk_conn *c, struct pk_multi *m)
{
    if (m == NULL)
        return;
    if (c->spare != NULL || m->acap > MULTI_SPARE_MAX) {
        multi_free(m);
        return;
    }
    m->n = 0;
    m->used = m->bytes = 0;
    c->spare = m;
}

/* Redis's discardTransaction: the queue goes, nothing stays watched. */
static void discard(pk_conn *c)
{
    multi_done(c, c->multi);
    c->multi = NULL;
    pk_watch_clear(c);
}

void pk_multi_conn_reset(pk_conn *c)
{
    discard(c);
    multi_free(c->spare);
    c->spare = NULL;
}

void pk_multi_reject(pk_conn *c)
{
    if (c->multi)
        c->multi->aborted = 1;
}

int pk_multi_runs_now(const pk_cmd *cmd)
{
    return (cmd->flags & PK_CMD_TXN_NOW) != 0;
}

/* The partition of cmd's first key, or -1 (a node out of a cluster
 * frames the group by it; a cluster node by the transaction's slot). */
static int64_t first_part(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    pk_keyrun r[PK_KEYRUNS_MAX];
    pk_slice key;

    if (pk_cmd_keyruns(cmd, x->argc, x->argv, r) == 0)
        return -1;
    key = pk_cmd_key(cmd, &x->argv[r[0].first]);
    return pk_srv_part(x->srv, key.ptr, key.len);
}

static int queue_room(struct pk_multi *m, size_t bytes)
{
    queued *q;
    uint32_t cap;

    if (bytes > MULTI_MAX_BYTES - m->bytes)
        return PK_ERANGE;
    if (m->used + bytes > m->acap) {
        size_t acap = m->acap ? m->acap : 1024;
        char *a;

        while (acap < m->used + bytes)
            acap *= 2;
        if ((a = realloc(m->arena, acap)) == NULL)
            return PK_ENOMEM;
        m->arena = a;
        m->acap = acap;
    }
    if (m->n < m->cap)
        return PK_OK;
    cap = m->cap ? 2 * m->cap : 8;
    if ((q = realloc(m->q, cap * sizeof(*q))) == NULL)
        return PK_ENOMEM;
    m->q = q;
    m->cap = cap;
    return PK_OK;
}

/* Copies x's arguments to the arena (queue_room made room for bytes). */
static void queue_args(struct pk_multi *m, const pk_cmd_ctx *x, size_t bytes)
{
    pk_arg *a = (pk_arg *)(m->arena + m->used);
    char *p = (char *)(a + x->argc);

    for (int i = 0; i < x->argc; i++) {
        memcpy(p, x->argv[i].ptr, x->argv[i].len);
        p[x->argv[i].len] = '\0';
        a[i] = (pk_arg){NULL, x->argv[i].len};
        p += x->argv[i].len + 1;
    }
    m->q[m->n].off = m->used;
    m->used += bytes;
}

/* queued q's arguments, their pointers set into the arena. */
static pk_arg *queued_args(struct pk_multi *m, const queued *q)
{
    pk_arg *a = (pk_arg *)(m->arena + q->off);
    char *p = (char *)(a + q->argc);

    for (int i = 0; i < q->argc; i++) {
        a[i].ptr = p;
        p += a[i].len + 1;
    }
    return a;
}

void pk_multi_queue(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    struct pk_multi *m = x->c->multi;
    size_t bytes = (size_t)x->argc * sizeof(pk_arg);
    int slot, rc;

    if (cmd->flags & PK_CMD_NO_MULTI) {
        pk_reply_error(x->out, "ERR Command not allowed inside a transaction");
        m->aborted = 1;
        return;
    }
    if (!pk_route_queued(x, cmd, &slot)) {
        m->aborted = 1;
        return;
    }
    if (slot >= 0 && m->slot >= 0 && slot != m->slot) {
        pk_reply_error(x->out, "CROSSSLOT Keys in request don't hash to "
                               "the same slot");
        m->aborted = 1;
        return;
    }
    if (slot >= 0)
        m->slot = slot;
    if (m->gpart < 0)
        m->gpart = first_part(x, cmd);
    /* Like Redis: a transaction bound to fail keeps nothing. */
    if (m->aborted || x->c->watch_dirty) {
        pk_reply_simple(x->out, "QUEUED");
        return;
    }
    for (int i = 0; i < x->argc; i++)
        bytes += x->argv[i].len + 1;
    bytes = (bytes + 7) & ~(size_t)7; /* the next pk_arg array aligned */
    rc = queue_room(m, bytes);
    if (rc != PK_OK) {
        pk_reply_error(x->out, rc == PK_ERANGE
                                   ? "ERR transaction too large: queued "
                                     "commands hold more than 256 MiB"
                                   : "ERR out of memory");
        m->aborted = 1;
        return;
    }
    queue_args(m, x, bytes);
    m->q[m->n].cmd = cmd;
    m->q[m->n].argc = x->argc;
    m->n++;
    m->bytes += bytes;
    m->writes |= (cmd->flags & PK_CMD_WRITE) != 0;
    pk_reply_simple(x->out, "QUEUED");
}

/* ---- the commands ------------------------------------------------------ */

void pk_cmd_multi(pk_cmd_ctx *x)
{
    struct pk_multi *m;

    if (x->c->multi) {
        pk_reply_error(x->out, "ERR MULTI calls can not be nested");
        return;
    }
    if ((m = x->c->spare) != NULL) {
        x->c->spare = NULL;
    } else if ((m = calloc(1, sizeof(*m))) == NULL) {
        pk_reply_error(x->out, "ERR out of memory");
        return;
    }
    m->aborted = m->writes = 0;
    m->slot = -1;
    m->gpart = -1;
    x->c->multi = m;
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_discard(pk_cmd_ctx *x)
{
    if (x->c->multi == NULL) {
        pk_reply_error(x->out, "ERR DISCARD without MULTI");
        return;
    }
    discard(x->c);
    pk_reply_simple(x->out, "OK");
}

/* A WATCHed key salted now (pk_salted.h) counts as touched: writes to
 * its parts run on other nodes' partitions, where no watcher sees them.
 * (One salted and folded back since WATCH was touched by the fold's add
 * into it, or by the writes to part 0, the key itself.) */
static int watch_salted(const pk_conn *c)
{
    for (const pk_wkey *e = c->watched; e; e = e->cnext)
        if (pk_salted_parts(c->srv, e->key, (unsigned)e->len))
            return 1;
    return 0;
}

/* A key salted after its command was queued would see or change only
 * part 0: the transaction is refused (-TRYAGAIN) and the key folded back,
 * as when the command was queued.  1 when no queued key is salted. */
static int queue_unsalted(pk_cmd_ctx *x, struct pk_multi *m)
{
    const pk_pmap *map = x->srv->cluster.map;

    if (map == NULL || map->nsalts == 0)
        return 1;
    for (uint32_t i = 0; i < m->n; i++) {
        pk_cmd_ctx y = {.srv = x->srv,
                        .c = x->c,
                        .argc = m->q[i].argc,
                        .argv = queued_args(m, &m->q[i]),
                        .out = x->out,
                        .proto = x->proto};
        if (!pk_salted_route_queued(&y, m->q[i].cmd))
            return 0; /* it replied */
    }
    return 1;
}

/* Runs the queued commands in x's transaction, one reply each. */
static void exec_run(pk_cmd_ctx *x, struct pk_multi *m)
{
    pk_conn *c = x->c;

    c->in_exec = 1;
    pk_reply_array(x->out, m->n);
    for (uint32_t i = 0; i < m->n; i++) {
        pk_cmd_ctx y = {.srv = x->srv,
                        .c = c,
                        .argc = m->q[i].argc,
                        .argv = queued_args(m, &m->q[i]),
                        .out = x->out,
                        .proto = c->proto, /* HELLO may have changed it */
                        .have_part = x->have_part,
                        .part = x->part};
        c->last_cmd = m->q[i].cmd->name;
        c->last_sub = NULL;
        /* The user's rules may have changed since the command was
         * queued: Redis checks again. */
        if (pk_acl_exec_allows(&y, m->q[i].cmd))
            pk_cmd_run(&y, m->q[i].cmd);
    }
    c->in_exec = 0;
}

void pk_cmd_exec(pk_cmd_ctx *x)
{
    pk_conn *c = x->c;
    struct pk_multi *m = c->multi;
    pk_txn *t = NULL;
    int64_t gpart;
    int grouped = 0;

    if (m == NULL) {
        pk_reply_error(x->out, "ERR EXEC without MULTI");
        return;
    }
    if (m->aborted) {
        pk_reply_error(x->out, "EXECABORT Transaction discarded because of "
                               "previous errors.");
        discard(c);
        return;
    }
    if (c->watch_dirty || watch_expired(c, NOW(x)) || watch_salted(c)) {
        pk_reply_null_array(x->out, x->proto);
        discard(c);
        return;
    }
    if (!queue_unsalted(x, m)) {
        discard(c);
        return;
    }
    if (!pk_route_exec(x, m->slot, m->writes)) {
        if (c->held == NULL) /* not held until a switch: redirected */
            discard(c);
        return;
    }
    if (x->srv->store && (t = pk_srv_txn(x)) == NULL) {
        discard(c);
        return;
    }
    /* A cluster node groups the slot it leads; a node out of a cluster
     * has no followers, and groups the first key's partition. */
    gpart = x->have_part              ? (int64_t)x->part
            : x->srv->cluster.enabled ? -1
                                      : m->gpart;
    if (t && gpart >= 0)
        grouped = pk_txn_group_begin(t, (uint32_t)gpart) == PK_OK;
    c->multi = NULL;
    pk_watch_clear(c); /* as Redis does before running: nothing to touch */
    exec_run(x, m);
    /* A failure here is the transaction's sticky error: the commit
     * fails and EXEC's reply becomes its error (pk_server.c). */
    if (grouped)
        pk_txn_group_end(t);
    if (x->have_part)
        pk_repl_note(x, m->writes);
    x->have_part = 0; /* noted: dispatch must not note it again */
    multi_done(c, m);
}

void pk_cmd_watch(pk_cmd_ctx *x)
{
    pk_conn *c = x->c;

    if (c->multi) {
        pk_reply_error(x->out, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    if (c->watch_dirty) { /* EXEC fails anyway */
        pk_reply_simple(x->out, "OK");
        return;
    }
    TXN_OR_RETURN(x, t);
    for (int i = 1; i < x->argc; i++) {
        int64_t ttl = -2;
        int rc = PK_OK;
        if (pk_watch_has(c, &x->argv[i]))
            continue;
        rc = pk_key_pttl(t, PK_KEY(x, i), NOW(x), &ttl);
        if (rc == PK_OK)
            rc = pk_watch_add(x, &x->argv[i], pk_cmd_part(x, i),
                              ttl > 0 ? NOW(x) + (uint64_t)ttl : 0);
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return;
        }
    }
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_unwatch(pk_cmd_ctx *x)
{
    pk_watch_clear(x->c);
    pk_reply_simple(x->out, "OK");
}

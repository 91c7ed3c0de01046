/*
 * pk_ft_gather: scatter a query to the nodes that lead the partitions,
 * gather their answers, answer the client (pk_ft.h).
 *
 *   client --FT.SEARCH--> any node --PK.FTQUERY epoch parts SEARCH ...-->
 *                            |            every leader (itself directly)
 *                            |<-- each node's share (pk__ftverb.node)
 *                            +-- take each, then reply --> client
 *
 * "parts" is a bitmap of the partitions the receiver leads in the
 * sender's map.  A node answers only for partitions it leads itself; if
 * one of the listed is no longer its own it answers -TRYAGAIN and the
 * whole question is asked again (up to RETRIES times, RETRY_MS apart) on
 * the newer map, the gathered state reset first, so each partition is
 * answered exactly once.  A node alone runs its share on partition 0
 * through the same reply format.  What each kind of question does is its
 * verb's (search and info: pk_ft_search.c; aggregate: pk_ft_agg.c;
 * deleting documents: pk_ft_visit.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_acl.h"
#include "server/pk_ft_int.h"
#include "server/pk_link.h"

#define RETRIES 30
#define RETRY_MS 100
/* PK.FTQUERY epoch parts id verb user, then the client's arguments from
 * the index name on.  user: the ACL user whose readable keys bound the
 * hits, or "" for every hit. */
#define HEAD 6

static const pk__ftverb *const VERBS[] = {
    &pk__ft_search_verb, &pk__ft_info_verb, &pk__ft_agg_verb,
    &pk__ft_del_verb,    &pk__ft_wait_verb,
};

struct ft_op {
    pk_server *s;
    pk_conn *c; /* NULL once it closed */
    const pk__ftverb *v;
    void *state; /* the verb's, owned */
    int argc;
    pk_arg *args;  /* owned copy of the client's arguments */
    char *reader;  /* owned: the client's ACL user if restricted, or NULL */
    pk_ftdef *def; /* owned copy */
    uint8_t *only; /* owned: the partitions asked about, or NULL: all */
    int pending, retry, tries;
    int sync;        /* inside the client's command: reply in place */
    int *done;       /* set when finished, for pk__ft_gather */
    uint64_t due_ms; /* a retry's time */
    char *err;       /* the first error, owned */
    ft_op *next;
};

static void op_free(ft_op *op)
{
    pk_ft *ft = op->s->ft;
    ft_op **pp = ft ? &ft->ops : NULL;

    while (pp && *pp && *pp != op)
        pp = &(*pp)->next;
    if (pp && *pp)
        *pp = op->next;
    op->v->free(op->state);
    pk_ftdef_free(op->def);
    free(op->only);
    free(op->args);
    free(op->reader);
    free(op->err);
    free(op);
}

static void op_fail(ft_op *op, const char *err, size_t len)
{
    if (strncmp(err, "TRYAGAIN", 8) == 0 && op->tries < RETRIES)
        op->retry = 1;
    else if (op->err == NULL)
        op->err = strndup(err, len);
}

static void take(ft_op *op, const pk_rr *r)
{
    const char *err;

    if (r->type == PK_RR_ERROR)
        op_fail(op, r->str, r->len);
    else if ((err = op->v->take(op->state, r)) != NULL)
        op_fail(op, err, strlen(err));
}

/* Every node answered: the client's reply, or a retry. */
static void finish(ft_op *op)
{
    pk_conn *c = op->c;

    if (op->retry && op->err == NULL) {
        op->due_ms = op->s->now_ms + RETRY_MS;
        return; /* pk__ft_search_tick starts it again */
    }
    if (op->err == NULL && c && op->v->again && op->v->again(op->state)) {
        op->retry = 1; /* a wait: on the next tick, with tries anew */
        op->tries = 0;
        op->due_ms = op->s->now_ms;
        return;
    }
    if (c) {
        int answered = 1;
        if (op->err)
            pk__ft_error(&c->out, op->err);
        else
            answered = op->v->reply(op->state, op->s, op->def, c);
        if (op->sync && !answered) { /* the reply comes later after all */
            c->waiting_fwd = 1;
            c->iter_cmds--;
        } else if (!op->sync && answered) {
            c->waiting_fwd = 0;
            pk_conn_resume(c);
        }
    } else if (op->err == NULL && op->v->by_link) {
        /* A verb that writes finishes what it started for a client that
         * has gone (DD: the documents are gone, so the index goes). */
        op->v->reply(op->state, op->s, op->def, NULL);
    }
    if (op->done)
        *op->done = 1;
    op_free(op);
}

static void on_reply(void *ctx, const pk_rr *r, const char *err)
{
    ft_op *op = ctx;

    if (err)
        op_fail(op, err, strlen(err));
    else
        take(op, r);
    if (--op->pending == 0)
        finish(op);
}

/* Runs this node's share here and takes its answer as a peer's. */
static void run_here(ft_op *op, const uint8_t *parts, uint32_t np)
{
    pk_cmd_ctx y = {
        .srv = op->s, .argc = op->argc, .argv = op->args, .proto = 2};
    pk_rreply_reader *rd = NULL;
    pk_obuf o;
    pk_rr *r = NULL;

    pk_obuf_init(&o);
    y.out = &o;
    if (op->reader && (y.reader = pk_acl_find(op->s->acl, op->reader,
                                              strlen(op->reader))) == NULL) {
        op_fail(op, "NOPERM the user is gone", 23);
        return;
    }
    op->v->node(&y, op->def, parts, np, &o);
    if (pk_rreply_reader_new(NULL, &rd) != 0 ||
        pk_rreply_feed(rd, o.data + o.head, o.len - o.head) != 0 ||
        pk_rreply_next(rd, &r) != 1)
        op_fail(op, "ERR out of memory", 17);
    else
        take(op, r);
    pk_rr_free(r);
    pk_rreply_reader_free(rd);
    pk_obuf_free(&o);
}

/* PK.FTQUERY epoch parts id verb <the client's arguments but the first>
 * to addr, answered to on_reply: 0 or an error. */
static int send_share(ft_op *op, const pk_pmap *m, const char *addr,
                      const uint8_t *parts, size_t bytes)
{
    int argc = HEAD + op->argc - 1, rc = PK_ENOMEM;
    const char **av = malloc((size_t)argc * sizeof(*av));
    size_t *al = malloc((size_t)argc * sizeof(*al));
    char ep[24], id[24];
    pk_obuf ob;

    snprintf(ep, sizeof(ep), "%llu", (unsigned long long)m->epoch);
    snprintf(id, sizeof(id), "%llu", (unsigned long long)op->def->id);
    if (av && al) {
        av[0] = "PK.FTQUERY";
        av[1] = ep;
        av[2] = (const char *)parts;
        av[3] = id;
        av[4] = op->v->name;
        av[5] = op->reader ? op->reader : "";
        for (int i = 0; i < HEAD; i++)
            al[i] = i == 2 ? bytes : strlen(av[i]);
        for (int i = 1; i < op->argc; i++) {
            av[HEAD - 1 + i] = op->args[i].ptr;
            al[HEAD - 1 + i] = op->args[i].len;
        }
        pk_obuf_init(&ob);
        rc = pk_rr_write_cmd(&ob, argc, av, al);
        if (rc == 0)
            rc = pk_link_call(op->s, addr, &ob, on_reply, op);
        pk_obuf_free(&ob);
    }
    free(av);
    free(al);
    return rc;
}

/* Asks every node that leads partitions (runs our share here, unless
 * the verb writes); the answers come to on_reply. */
static void start(ft_op *op)
{
    pk_server *s = op->s;
    const pk_pmap *m = s->cluster.map;
    uint32_t np = pk__ft_nparts(s), nn;
    size_t bytes = (np + 7) / 8;
    uint8_t *bits;
    int here = 0;

    op->retry = 0;
    op->tries++;
    s->ft->queries++;
    op->pending = 1; /* held until every call went out */
    op->v->reset(op->state);
    if (!s->cluster.enabled) {
        uint8_t one = 1;
        s->ft->query_nodes++;
        run_here(op, &one, 1);
    } else if (m == NULL) {
        op_fail(op, "CLUSTERDOWN no partition map", 28);
    } else if ((bits = calloc((size_t)m->nnodes * bytes, 1)) == NULL) {
        op_fail(op, "ERR out of memory", 17);
    } else {
        nn = m->nnodes;
        for (uint32_t p = 0; p < np; p++) {
            uint32_t l = pk_pmap_leader(m, p);
            if (op->only && !(op->only[p / 8] & (1u << (p % 8))))
                continue;
            if (l >= nn) {
                op_fail(op, "CLUSTERDOWN a partition has no leader", 37);
                break;
            }
            bits[(size_t)l * bytes + p / 8] |= (uint8_t)(1u << (p % 8));
        }
        /* The other nodes' shares go out first: they run meanwhile. */
        for (uint32_t n = 0; op->err == NULL && n < nn; n++) {
            const uint8_t *b = bits + (size_t)n * bytes;
            size_t k = 0;
            while (k < bytes && b[k] == 0)
                k++;
            if (k == bytes)
                continue;
            s->ft->query_nodes++;
            if (n == s->cluster.self && !op->v->by_link) {
                here = 1;
                continue;
            }
            /* Counted first: a call that fails at once answers inside. */
            op->pending++;
            if (send_share(op, m, m->nodes[n].addr, b, bytes) != 0) {
                op->pending--;
                op_fail(op, "TRYAGAIN a node is not reachable", 32);
            }
        }
        if (op->err == NULL && here)
            run_here(op, bits + (size_t)s->cluster.self * bytes, np);
        free(bits);
    }
    if (--op->pending == 0)
        finish(op);
}

void pk__ft_search_tick(pk_server *s)
{
    for (ft_op *op = s->ft ? s->ft->ops : NULL, *next; op; op = next) {
        next = op->next;
        if (op->retry && op->pending == 0 && s->now_ms >= op->due_ms)
            start(op);
    }
}

/* A new question for c (the verb's state and only taken): NULL after
 * freeing them when memory is out. */
static ft_op *op_new(pk_server *s, pk_conn *c, int argc, const pk_arg *args,
                     const pk_ftdef *d, const pk__ftverb *v, void *state,
                     uint8_t *only)
{
    ft_op *op = calloc(1, sizeof(*op));

    if (op == NULL || (op->args = pk_conn_args_copy(argc, args)) == NULL ||
        (op->def = pk_ftdef_dup(d)) == NULL) {
        if (op)
            free(op->args);
        free(op);
        v->free(state);
        free(only);
        return NULL;
    }
    op->s = s;
    op->v = v;
    op->state = state;
    op->only = only;
    op->argc = argc;
    op->next = s->ft->ops;
    s->ft->ops = op;
    op->c = c;
    if (c && c->user && !pk_acl_user_unrestricted(c->user))
        op->reader = strdup(pk_acl_user_name(c->user)); /* NULL: none */
    return op;
}

void pk__ft_gather(pk_cmd_ctx *x, const pk_ftdef *d, const pk__ftverb *v,
                   void *state, uint8_t *only)
{
    ft_op *op = op_new(x->srv, x->c, x->argc, x->argv, d, v, state, only);
    int done = 0;

    if (op == NULL) {
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    /* Answered at once (a node alone, or an error): the reply goes where
     * the command's would, in order; else the connection waits. */
    op->sync = 1;
    op->done = &done;
    start(op);
    if (done)
        return;
    op->sync = 0;
    op->done = NULL;
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--; /* its reply comes when every node answered */
}

int pk__ft_search_after(pk_server *s, pk_conn *c, const pk_ftdef *d, int argc,
                        const pk_arg *args, void *search, uint8_t *only)
{
    ft_op *op = op_new(s, c, argc, args, d, &pk__ft_search_verb, search, only);

    if (op == NULL) { /* answered here, as the waiting verb's reply */
        pk__ft_error(&c->out, "ERR out of memory");
        return 1;
    }
    if (c->waiting_fwd) { /* c's command is over: its reply comes later */
        start(op);
    } else { /* inside c's command: by the tick, as resuming c there would
              * answer out of order */
        op->retry = 1;
        op->due_ms = s->now_ms;
    }
    return 0;
}

void pk__ft_error(pk_obuf *o, const char *msg)
{
    size_t n = 0;

    while (isupper((unsigned char)msg[n]))
        n++;
    if (n >= 2 && (msg[n] == ' ' || msg[n] == 0))
        pk_reply_error(o, msg);
    else
        pk_reply_errorf(o, "ERR %s", msg);
}

void pk__ft_errorf(pk_obuf *o, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pk__ft_error(o, msg);
}

ft_index *pk__ft_index_arg(pk_cmd_ctx *x)
{
    ft_index *ix;

    if (x->srv->ft == NULL || x->srv->store == NULL) {
        pk__ft_error(x->out, "ERR secondary indexes need a node with a "
                             "store (not a proxy)");
        return NULL;
    }
    if (x->c->in_exec && x->srv->cluster.enabled) {
        pk__ft_error(x->out, "ERR FT commands inside MULTI are not "
                             "supported in a cluster");
        return NULL;
    }
    if ((ix = pk__ft_find(x->srv, x->argv[1].ptr, x->argv[1].len)) == NULL)
        pk__ft_errorf(x->out, "%.*s: no such index", (int)x->argv[1].len,
                      x->argv[1].ptr);
    return ix;
}

/* ---- a node's share -------------------------------------------------- */

/* An index id (all 64 bits: a global one's top bit is set). */
static int arg_u64(const pk_arg *a, uint64_t *out)
{
    char buf[24], *end;

    if (a->len == 0 || a->len >= sizeof(buf) || a->ptr[0] == '-')
        return 0;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = 0;
    errno = 0;
    *out = strtoull(buf, &end, 10);
    return errno == 0 && *end == 0;
}

/* PK.FTQUERY epoch parts id verb idx ...: a node's share, only for the
 * partitions it leads, with the index the asker knows (same id) on a map
 * at least as new as the asker's; else TRYAGAIN, and the asker asks again
 * a little later. */
void pk_cmd_pk_ftquery(pk_cmd_ctx *x)
{
    pk_server *s = x->srv;
    uint32_t np = pk__ft_nparts(s);
    const pk_arg *bits = &x->argv[2];
    const pk__ftverb *v = NULL;
    pk_cmd_ctx y = *x;
    int64_t epoch;
    uint64_t id;
    ft_index *ix;

    if (s->cluster.enabled && !x->c->internal) {
        pk__ft_error(x->out, "NOPERM PK.FTQUERY is for nodes");
        return;
    }
    for (size_t i = 0; x->argc > HEAD && i < sizeof(VERBS) / sizeof(VERBS[0]);
         i++)
        if (pk_arg_eq(&x->argv[4], VERBS[i]->name))
            v = VERBS[i];
    if (v == NULL || bits->len != (np + 7) / 8 ||
        !pk_arg_i64(&x->argv[1], &epoch) || !arg_u64(&x->argv[3], &id)) {
        pk_reply_syntax(x);
        return;
    }
    if (s->cluster.map == NULL || s->cluster.map->epoch < (uint64_t)epoch) {
        pk__ft_error(x->out, "TRYAGAIN this node's map is older");
        return;
    }
    for (uint32_t p = 0; p < np; p++)
        if ((((const uint8_t *)bits->ptr)[p / 8] & (1u << (p % 8))) &&
            !(v->by_link ? pk__ft_writable(s, p) : pk_srv_leads(s, p))) {
            pk__ft_errorf(x->out, "TRYAGAIN partition %u is not led here", p);
            return;
        }
    ix = pk__ft_find(s, x->argv[HEAD].ptr, x->argv[HEAD].len);
    if (ix == NULL || ix->def->id != id) {
        pk__ft_errorf(x->out, "TRYAGAIN %.*s: not this index here yet",
                      (int)x->argv[HEAD].len, x->argv[HEAD].ptr);
        return;
    }
    /* The asker's user, as the coordinator gave it to every node. */
    if (x->argv[5].len && (y.reader = pk_acl_find(s->acl, x->argv[5].ptr,
                                                  x->argv[5].len)) == NULL) {
        pk__ft_errorf(x->out, "TRYAGAIN user %.*s: not here yet",
                      (int)x->argv[5].len, x->argv[5].ptr);
        return;
    }
    y.argv = x->argv + HEAD - 1;
    y.argc = x->argc - (HEAD - 1);
    v->node(&y, ix->def, (const uint8_t *)bits->ptr, np, x->out);
}

/* ---- life ------------------------------------------------------------ */

void pk__ft_search_forget(pk_server *s, pk_conn *c)
{
    for (ft_op *op = s->ft->ops; op; op = op->next)
        if (op->c == c)
            op->c = NULL;
}

void pk__ft_search_free(pk_server *s)
{
    /* Calls in flight were failed by the links' close; retries wait. */
    while (s->ft->ops)
        op_free(s->ft->ops);
}

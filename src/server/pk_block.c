/*
 * pk_block: connections waiting on keys (see pk_block.h).
 *
 * State, owned by the server (srv->block, made on first use):
 *
 *   keys   hash table: key bytes -> queue of waiters, oldest first
 *   ready  the keys written since the last serve, in the order written
 *   tmo    the waiters with a deadline, sorted by it (one timer for the
 *          earliest; inserting scans from the tail, where a new waiter
 *          with the usual timeout belongs)
 *
 * A waiter (one per blocked connection, c->blk) owns a copy of its
 * command's arguments and one queue node per distinct key.  A serve walks
 * a ready key's queue and retries each waiter once (tagged with the serve
 * round, as a retry may unlink others); an entry is pinned while walked
 * so that a queue emptied meanwhile is not freed under the walk.
 */
#include "server/pk_block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "server/pk_srv.h"

typedef struct bl_entry bl_entry;
typedef struct bl_waiter bl_waiter;

typedef struct bl_node {
    bl_waiter *w;
    bl_entry *e;
    struct bl_node *prev, *next; /* in e's queue */
    int arg;                     /* argv position of the key */
} bl_node;

struct bl_entry {
    uint64_t hash;
    bl_entry *chain;
    bl_node *head, *tail;
    bl_entry *ready_next;
    int ready; /* on the ready list */
    int any;   /* readied by a map change: no key in particular */
    int pin;   /* walked by a serve */
    size_t len;
    char key[]; /* owned copy */
};

struct bl_waiter {
    pk_conn *c;
    pk_arg *argv; /* owned, with the argument bytes after it */
    int argc;
    uint64_t deadline; /* wall ms, 0 none */
    pk_block_timeout_fn on_timeout;
    bl_waiter *tprev, *tnext; /* on tmo when deadline != 0 */
    uint64_t tried;           /* serve round of the last retry */
    int retrying;             /* a retry runs */
    int still;                /* the retry waits on */
    int ready_arg;            /* the key that triggered the retry */
    int nnodes;
    bl_node nodes[];
};

typedef struct pk_block {
    bl_entry **tab;
    size_t mask, nentries;
    bl_entry *ready, **ready_tail;
    bl_waiter *tmo_head, *tmo_tail;
    uv_timer_t timer;
    uint64_t round;
    uint32_t nwait;
    int serving;
} pk_block;

static uint64_t key_hash(const void *k, size_t n)
{
    return pk_hash_xxh3(k, n);
}

static pk_block *state(pk_server *s)
{
    pk_block *b = s->block;

    if (b) {
        return b;
    }
    if ((b = calloc(1, sizeof(*b))) == NULL ||
        (b->tab = calloc(64, sizeof(*b->tab))) == NULL) {
        free(b);
        return NULL;
    }
    b->mask = 63;
    b->ready_tail = &b->ready;
    uv_timer_init(&s->loop, &b->timer);
    b->timer.data = s;
    s->block = b;
    return b;
}

static bl_entry *entry_find(pk_block *b, const void *k, size_t n)
{
    uint64_t h = key_hash(k, n);

    for (bl_entry *e = b->tab[h & b->mask]; e; e = e->chain) {
        if (e->hash == h && e->len == n && memcmp(e->key, k, n) == 0) {
            return e;
        }
    }
    return NULL;
}

static void grow(pk_block *b)
{
    size_t cap = (b->mask + 1) * 2;
    bl_entry **t = calloc(cap, sizeof(*t));

    if (t == NULL) {
        return; /* longer chains, still correct */
    }
    for (size_t i = 0; i <= b->mask; i++) {
        for (bl_entry *e = b->tab[i], *next; e; e = next) {
            next = e->chain;
            e->chain = t[e->hash & (cap - 1)];
            t[e->hash & (cap - 1)] = e;
        }
    }
    free(b->tab);
    b->tab = t;
    b->mask = cap - 1;
}

static bl_entry *entry_get(pk_block *b, const void *k, size_t n)
{
    bl_entry *e = entry_find(b, k, n);

    if (e) {
        return e;
    }
    if ((e = calloc(1, sizeof(*e) + n + 1)) == NULL) {
        return NULL;
    }
    e->hash = key_hash(k, n);
    e->len = n;
    memcpy(e->key, k, n);
    e->chain = b->tab[e->hash & b->mask];
    b->tab[e->hash & b->mask] = e;
    if (++b->nentries > b->mask) {
        grow(b);
    }
    return e;
}

/* Frees e when nothing refers to it any more. */
static void entry_maybe_free(pk_block *b, bl_entry *e)
{
    bl_entry **pp;

    if (e->head || e->pin || e->ready) {
        return;
    }
    for (pp = &b->tab[e->hash & b->mask]; *pp != e; pp = &(*pp)->chain)
        ;
    *pp = e->chain;
    b->nentries--;
    free(e);
}

static void arm(pk_server *s);

/* Unlinks w from its queues and the timeout list, and frees it. */
static void waiter_free(pk_server *s, bl_waiter *w)
{
    pk_block *b = s->block;

    for (int i = 0; i < w->nnodes; i++) {
        bl_node *n = &w->nodes[i];
        if (n->prev) {
            n->prev->next = n->next;
        } else {
            n->e->head = n->next;
        }
        if (n->next) {
            n->next->prev = n->prev;
        } else {
            n->e->tail = n->prev;
        }
        entry_maybe_free(b, n->e);
    }
    if (w->deadline) {
        if (w->tprev) {
            w->tprev->tnext = w->tnext;
        } else {
            b->tmo_head = w->tnext;
        }
        if (w->tnext) {
            w->tnext->tprev = w->tprev;
        } else {
            b->tmo_tail = w->tprev;
        }
    }
    w->c->blk = NULL;
    b->nwait--;
    free(w->argv);
    free(w);
    arm(s);
}

/* Copies the arguments, bytes NUL-terminated after the array. */
static pk_arg *args_copy(int argc, const pk_arg *argv)
{
    size_t bytes = (size_t)argc * sizeof(pk_arg);
    pk_arg *a;
    char *p;

    for (int i = 0; i < argc; i++) {
        bytes += argv[i].len + 1;
    }
    if ((a = malloc(bytes)) == NULL) {
        return NULL;
    }
    p = (char *)(a + argc);
    for (int i = 0; i < argc; i++) {
        memcpy(p, argv[i].ptr, argv[i].len);
        p[argv[i].len] = '\0';
        a[i].ptr = p;
        a[i].len = argv[i].len;
        p += argv[i].len + 1;
    }
    return a;
}

static int is_dup(const pk_cmd_ctx *x, const bl_waiter *w, int arg)
{
    for (int i = 0; i < w->nnodes; i++) {
        const pk_arg *a = &x->argv[w->nodes[i].arg];
        if (a->len == x->argv[arg].len &&
            memcmp(a->ptr, x->argv[arg].ptr, a->len) == 0) {
            return 1;
        }
    }
    return 0;
}

static void on_timer(uv_timer_t *t);

/* Sets the timer for the earliest deadline, or stops it. */
static void arm(pk_server *s)
{
    pk_block *b = s->block;
    uint64_t now;

    if (b->tmo_head == NULL) {
        uv_timer_stop(&b->timer);
        return;
    }
    now = pk_srv_wall_ms();
    uv_timer_start(
        &b->timer, on_timer,
        b->tmo_head->deadline > now ? b->tmo_head->deadline - now : 0, 0);
}

static void tmo_insert(pk_block *b, bl_waiter *w)
{
    bl_waiter *p = b->tmo_tail;

    while (p && p->deadline > w->deadline) {
        p = p->tprev;
    }
    w->tprev = p;
    w->tnext = p ? p->tnext : b->tmo_head;
    if (w->tnext) {
        w->tnext->tprev = w;
    } else {
        b->tmo_tail = w;
    }
    if (p) {
        p->tnext = w;
    } else {
        b->tmo_head = w;
    }
}

int pk_block_timeout(pk_cmd_ctx *x, const pk_arg *a, uint64_t *deadline)
{
    char buf[5 * 1024 + 1];
    long double d;
    char *end;
    uint64_t now;

    /* Redis's string2ld: all of it, no leading space, not NaN. */
    if (a->len == 0 || a->len >= sizeof(buf) ||
        ((const char *)a->ptr)[0] == ' ' || ((const char *)a->ptr)[0] == '\t') {
        goto notfloat;
    }
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    d = strtold(buf, &end);
    if (*end != '\0' || isnan(d)) {
        goto notfloat;
    }
    d = ceill(d * 1000.0L);
    /* Redis converts to long long; out of range (inf too) comes out as
     * LLONG_MIN on x86-64, which it reports as negative. */
    if (d < 0 || d >= 9223372036854775807.0L) {
        pk_reply_error(x->out, "ERR timeout is negative");
        return 0;
    }
    now = pk_srv_wall_ms();
    *deadline = d == 0                           ? 0
                : (uint64_t)d > UINT64_MAX - now ? UINT64_MAX
                                                 : now + (uint64_t)d;
    return 1;
notfloat:
    pk_reply_error(x->out, "ERR timeout is not a float or out of range");
    return 0;
}

void pk_block_wait(pk_cmd_ctx *x, const pk_keyrun *runs, int nruns,
                   uint64_t deadline, pk_block_timeout_fn on_timeout)
{
    pk_server *s = x->srv;
    pk_conn *c = x->c;
    pk_block *b;
    bl_waiter *w;
    int nkeys = 0;

    if (c->blk && c->blk->retrying) {
        c->blk->still = 1;
        return;
    }
    for (int r = 0; r < nruns; r++) {
        nkeys += (runs[r].last - runs[r].first) / runs[r].step + 1;
    }
    if (x->noblock || nkeys == 0 || (b = state(s)) == NULL ||
        (w = calloc(1, sizeof(*w) + (size_t)nkeys * sizeof(bl_node))) == NULL) {
        on_timeout(x);
        return;
    }
    w->argv = args_copy(x->argc, x->argv);
    if (w->argv == NULL) {
        free(w);
        on_timeout(x);
        return;
    }
    w->c = c;
    w->argc = x->argc;
    w->deadline = deadline;
    w->on_timeout = on_timeout;
    c->blk = w;
    b->nwait++;
    for (int r = 0; r < nruns; r++) {
        for (int i = runs[r].first; i <= runs[r].last; i += runs[r].step) {
            bl_node *n = &w->nodes[w->nnodes];
            if (is_dup(x, w, i) ||
                (n->e = entry_get(b, x->argv[i].ptr, x->argv[i].len)) == NULL) {
                continue; /* out of memory: that key is not watched */
            }
            n->w = w;
            n->arg = i;
            n->prev = n->e->tail;
            n->next = NULL;
            if (n->e->tail) {
                n->e->tail->next = n;
            } else {
                n->e->head = n;
            }
            n->e->tail = n;
            w->nnodes++;
        }
    }
    if (deadline) {
        tmo_insert(b, w);
    }
    arm(s);
    c->iter_cmds--; /* its reply comes when it is served */
}

int pk_block_ready_arg(const pk_cmd_ctx *x)
{
    return x->c->blk && x->c->blk->retrying ? x->c->blk->ready_arg : 0;
}

static void mark_ready(pk_block *b, bl_entry *e, int any)
{
    e->any |= any;
    if (e->ready) {
        return;
    }
    e->ready = 1;
    e->ready_next = NULL;
    *b->ready_tail = e;
    b->ready_tail = &e->ready_next;
}

void pk_block_before(pk_cmd_ctx *x, const pk_cmd *cmd, pk_block_mark *m)
{
    pk_server *s = x->srv;
    pk_keyrun r[PK_KEYRUNS_MAX];
    int nruns;

    m->n = 0;
    if (s->block == NULL || s->block->nwait == 0 ||
        !(cmd->flags & PK_CMD_WRITE)) {
        return;
    }
    nruns = pk_cmd_keyruns(cmd, x->argc, x->argv, r);
    for (int k = 0; k < nruns; k++) {
        for (int i = r[k].first; i <= r[k].last; i += r[k].step) {
            if (m->n == PK_BLOCK_MARKS) {
                m->n = -1; /* too many to note: all of them, after */
                return;
            }
            if (entry_find(s->block, x->argv[i].ptr, x->argv[i].len)) {
                m->arg[m->n++] = i;
            }
        }
    }
}

void pk_block_after(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_block_mark *m)
{
    pk_server *s = x->srv;
    bl_waiter *w = x->c->blk;
    pk_keyrun r[PK_KEYRUNS_MAX];
    bl_entry *e;
    int nruns;

    /*
     * Any write to a key counts: telling a change from a no-op would take
     * the store's view (and MULTI groups its log records), and a retry
     * that finds nothing costs one lookup.  A command that ended up
     * waiting itself changed nothing, and readying its own keys would
     * retry it for ever.
     */
    if (m->n == 0 || (w && (w->still || !w->retrying))) {
        return;
    }
    if (m->n > 0) {
        for (int i = 0; i < m->n; i++) {
            const pk_arg *a = &x->argv[m->arg[i]];
            if ((e = entry_find(s->block, a->ptr, a->len)) != NULL) {
                mark_ready(s->block, e, 0);
            }
        }
        return;
    }
    nruns = pk_cmd_keyruns(cmd, x->argc, x->argv, r);
    for (int k = 0; k < nruns; k++) {
        for (int i = r[k].first; i <= r[k].last; i += r[k].step) {
            e = entry_find(s->block, x->argv[i].ptr, x->argv[i].len);
            if (e != NULL) {
                mark_ready(s->block, e, 0);
            }
        }
    }
}

/* Runs w's command again; unblocks w unless it waits on. */
static void retry(pk_server *s, bl_waiter *w, int arg)
{
    pk_conn *c = w->c;
    pk_cmd_ctx x = {.srv = s, .c = c, .out = &c->out, .proto = c->proto};

    pk_conn_join(c);
    c->iter_cmds++;
    x.argc = w->argc;
    x.argv = w->argv;
    w->retrying = 1;
    w->still = 0;
    w->ready_arg = arg;
    pk_cmd_dispatch(&x);
    w->retrying = 0;
    if (w->still) {
        c->iter_cmds--;
        return;
    }
    waiter_free(s, w);
    pk_conn_unblocked(c);
}

/* Retries each waiter of e once, oldest first. */
static void serve_entry(pk_server *s, bl_entry *e)
{
    pk_block *b = s->block;
    uint64_t round = ++b->round;
    bl_node *n;

    e->pin++;
    for (;;) {
        for (n = e->head; n && n->w->tried == round; n = n->next)
            ;
        if (n == NULL) {
            break;
        }
        n->w->tried = round;
        retry(s, n->w, e->any ? 0 : n->arg);
    }
    e->pin--;
    e->any = 0;
    entry_maybe_free(b, e);
}

void pk_block_serve(pk_server *s)
{
    pk_block *b = s->block;
    bl_entry *e;

    if (b == NULL || b->serving) {
        return;
    }
    b->serving = 1;
    while ((e = b->ready) != NULL) {
        b->ready = e->ready_next;
        if (b->ready == NULL) {
            b->ready_tail = &b->ready;
        }
        e->ready = 0;
        serve_entry(s, e);
    }
    b->serving = 0;
}

void pk_block_map_changed(pk_server *s)
{
    pk_block *b = s->block;

    if (b == NULL || b->nwait == 0) {
        return;
    }
    for (size_t i = 0; i <= b->mask; i++) {
        for (bl_entry *e = b->tab[i]; e; e = e->chain) {
            mark_ready(b, e, 1);
        }
    }
    if (s->dispatch_depth == 0) {
        pk_block_serve(s);
    }
}

/* Answers w's command without serving it -- as timed out, or with
 * error -- and lets its connection go on. */
static void give_up(pk_server *s, bl_waiter *w, const char *error)
{
    pk_conn *c = w->c;
    pk_cmd_ctx x = {.srv = s, .c = c, .out = &c->out, .proto = c->proto};

    pk_conn_join(c);
    c->iter_cmds++;
    x.argc = w->argc;
    x.argv = w->argv;
    if (error)
        pk_reply_error(x.out, error);
    else
        w->on_timeout(&x);
    waiter_free(s, w);
    pk_conn_unblocked(c);
}

static void on_timer(uv_timer_t *t)
{
    pk_server *s = t->data;
    pk_block *b = s->block;
    uint64_t now = pk_srv_wall_ms();
    bl_waiter *w;

    while ((w = b->tmo_head) != NULL && w->deadline <= now)
        give_up(s, w, NULL);
    arm(s);
}

int pk_block_unblock(pk_server *s, pk_conn *c, int error)
{
    if (c->blk == NULL || c->blk->retrying)
        return 0;
    give_up(s, c->blk,
            error ? "UNBLOCKED client unblocked via CLIENT UNBLOCK" : NULL);
    return 1;
}

void pk_block_conn_closed(pk_server *s, pk_conn *c)
{
    if (c->blk) {
        waiter_free(s, c->blk);
    }
}

uint32_t pk_block_count(const pk_server *s)
{
    return s->block ? s->block->nwait : 0;
}

void pk_block_free(pk_server *s)
{
    pk_block *b = s->block;

    if (b == NULL) {
        return;
    }
    /* Connections are closed (and their waiters gone) by now. */
    for (size_t i = 0; i <= b->mask; i++) {
        for (bl_entry *e = b->tab[i], *next; e; e = next) {
            next = e->chain;
            free(e);
        }
    }
    free(b->tab);
    free(b);
    s->block = NULL;
}

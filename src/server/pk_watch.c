/*
 * pk_watch: the WATCH table (pk_watch.h).
 *
 * The table hashes key bytes (XXH3) into chains of entries, one per
 * (connection, key); each entry is also on its connection's list, so that
 * UNWATCH, EXEC, DISCARD, RESET and close remove exactly theirs:
 *
 *   srv->watch  b[h & mask] -> e -> e -> ...    (next)
 *   conn        watched     -> e -> e -> ...    (cnext)
 *
 * A touch only marks connections (watch_dirty); their entries go when
 * they end the transaction, as then nothing else holds a pointer to them.
 */
#include "server/pk_watch.h"

#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "server/pk_ctx.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"

struct pk_wtab {
    pk_wkey **b; /* owned array of mask + 1 chains */
    size_t mask;
};

static pk_wkey **chain(pk_server *s, uint64_t hash)
{
    return &s->watch->b[hash & s->watch->mask];
}

/* Doubles the table once it holds twice as many entries as chains. */
static int wtab_grow(pk_server *s)
{
    struct pk_wtab *w = s->watch;
    size_t n = w ? 2 * (w->mask + 1) : 64;
    pk_wkey **b;

    if (w && s->nwatched < 2 * (w->mask + 1))
        return PK_OK;
    if (w == NULL && (w = s->watch = calloc(1, sizeof(*w))) == NULL)
        return PK_ENOMEM;
    if ((b = calloc(n, sizeof(*b))) == NULL)
        return w->b ? PK_OK : PK_ENOMEM; /* longer chains, still right */
    for (size_t i = 0; w->b && i <= w->mask; i++)
        for (pk_wkey *e = w->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(w->b);
    w->b = b;
    w->mask = n - 1;
    return PK_OK;
}

int pk_watch_has(const pk_conn *c, const pk_arg *k)
{
    for (const pk_wkey *e = c->watched; e; e = e->cnext)
        if (e->len == k->len && memcmp(e->key, k->ptr, k->len) == 0)
            return 1;
    return 0;
}

int pk_watch_add(pk_cmd_ctx *x, const pk_arg *k, uint32_t part,
                 uint64_t deadline)
{
    pk_server *s = x->srv;
    pk_wkey *e, **ch;

    if (wtab_grow(s) != PK_OK || (e = malloc(sizeof(*e) + k->len)) == NULL)
        return PK_ENOMEM;
    memcpy(e->key, k->ptr, k->len);
    e->len = k->len;
    e->hash = pk_hash_xxh3(k->ptr, k->len);
    e->part = part;
    e->deadline = deadline;
    e->c = x->c;
    ch = chain(s, e->hash);
    e->next = *ch;
    *ch = e;
    e->cnext = x->c->watched;
    x->c->watched = e;
    s->nwatched++;
    return PK_OK;
}

void pk_watch_clear(pk_conn *c)
{
    pk_server *s = c->srv;

    while (c->watched) {
        pk_wkey *e = c->watched, **pp = chain(s, e->hash);
        while (*pp != e)
            pp = &(*pp)->next;
        *pp = e->next;
        c->watched = e->cnext;
        s->nwatched--;
        free(e);
    }
    c->watch_dirty = 0;
}

static void touch(pk_server *s, const void *key, size_t len)
{
    uint64_t h = pk_hash_xxh3(key, len);

    for (pk_wkey *e = *chain(s, h); e; e = e->next)
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
            e->c->watch_dirty = 1;
}

void pk_watch_each(pk_server *s, void (*fn)(pk_wkey *e, void *ctx), void *ctx)
{
    if (s->nwatched == 0)
        return;
    for (size_t i = 0; i <= s->watch->mask; i++)
        for (pk_wkey *e = s->watch->b[i]; e; e = e->next)
            fn(e, ctx);
}

void pk_watch_touch_cmd(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    pk_keyrun r[PK_KEYRUNS_MAX];
    int n;

    if (x->srv->nwatched == 0)
        return;
    if (x->touch_arg > 0) {
        touch(x->srv, x->argv[x->touch_arg].ptr, x->argv[x->touch_arg].len);
        return;
    }
    n = pk_cmd_keyruns(cmd, x->argc, x->argv, r);
    for (int k = 0; k < n; k++)
        for (int i = r[k].first; i <= r[k].last; i += r[k].step)
            touch(x->srv, x->argv[i].ptr, x->argv[i].len);
}

static void touch_in_part(pk_wkey *e, void *ctx)
{
    if (e->part == *(const uint32_t *)ctx)
        e->c->watch_dirty = 1;
}

void pk_watch_touch_part(pk_server *s, uint32_t part)
{
    pk_watch_each(s, touch_in_part, &part);
}

static void touch_existing(pk_wkey *e, void *ctx)
{
    pk_cmd_ctx *x = ctx;
    int exists = 0;

    if (pk_key_exists(x->srv->txn, e->part, e->key, e->len, NOW(x), &exists) !=
            PK_OK ||
        exists)
        e->c->watch_dirty = 1;
}

void pk_watch_touch_flush(pk_cmd_ctx *x)
{
    if (x->srv->nwatched && pk_srv_txn(x))
        pk_watch_each(x->srv, touch_existing, x);
}

void pk_watch_free(pk_server *s)
{
    if (s->watch)
        free(s->watch->b);
    free(s->watch);
    s->watch = NULL;
}

/*
 * pk_hot: the node's hot keys (pk_hot.h) -- the sampling on the command
 * path and PK.HOTKEYS.
 */
#include "server/pk_hot.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "core/pk_topk.h"
#include "server/pk_ctx.h"
#include "server/pk_salted.h"
#include "server/pk_srv.h"

#define HOT_KEYS 128
#define HOTKEYS_DEFAULT 10

int pk_hot_init(pk_server *s)
{
    if (s->cfg.hotkeys_sample <= 0)
        return PK_OK;
    s->hot = malloc(sizeof(*s->hot));
    if (s->hot == NULL)
        return PK_ENOMEM;
    if (pk_topk_init(s->hot, HOT_KEYS, s->cfg.hotkeys_sample) != PK_OK) {
        free(s->hot);
        s->hot = NULL;
        return PK_ENOMEM;
    }
    s->hot_rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)s;
    return PK_OK;
}

void pk_hot_free(pk_server *s)
{
    if (s->hot)
        pk_topk_free(s->hot);
    free(s->hot);
    s->hot = NULL;
}

void pk_hot_tick(pk_server *s)
{
    if (s->hot)
        pk_topk_tick(s->hot, 1.0);
}

void pk_hot_note(pk_cmd_ctx *x, int first, int write)
{
    pk_server *s = x->srv;
    uint64_t r;
    const pk_arg *k;

    if (s->hot == NULL || first <= 0 || first >= x->argc)
        return;
    if (s->hot->sampling < 1) { /* every command at 1: no draw */
        r = s->hot_rng;         /* xorshift64 */
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        s->hot_rng = r;
        if (!pk_topk_want(s->hot, (double)(r >> 11) / 9007199254740992.0))
            return;
    }
    k = &x->argv[first];
    pk_topk_add(s->hot, k->ptr, k->len, pk_topk_hash(k->ptr, k->len),
                x->have_part ? x->part : 0, write);
}

/* One entry of the reply: a map of its fields. */
static void reply_entry(pk_cmd_ctx *x, const pk_topk_entry *e)
{
    const pk_topk *t = x->srv->hot;
    const pk_cluster *cl = &x->srv->cluster;
    const char *node = "";

    if (cl->map && cl->self < cl->map->nnodes)
        node = cl->map->nodes[cl->self].addr;
    pk_reply_map(x->out, x->proto, 8);
    pk_reply_bulk_str(x->out, "key");
    pk_reply_bulk(x->out, e->key, e->len);
    pk_reply_bulk_str(x->out, "reads_per_sec");
    pk_reply_double(x->out, x->proto, pk_topk_rate(t, e, 0));
    pk_reply_bulk_str(x->out, "writes_per_sec");
    pk_reply_double(x->out, x->proto, pk_topk_rate(t, e, 1));
    pk_reply_bulk_str(x->out, "error_per_sec");
    pk_reply_double(x->out, x->proto, pk_topk_err(t, e));
    pk_reply_bulk_str(x->out, "partition");
    pk_reply_int(x->out, e->part);
    pk_reply_bulk_str(x->out, "node");
    pk_reply_bulk_str(x->out, node);
    pk_reply_bulk_str(x->out, "truncated");
    pk_reply_int(x->out, e->truncated);
    pk_reply_bulk_str(x->out, "salted"); /* into how many parts, or 0 */
    pk_reply_int(x->out,
                 e->truncated ? 0 : pk_salted_parts(x->srv, e->key, e->len));
}

/*
 * PK.HOTKEYS [COUNT k] [SLOT s]: this node's hottest keys, hottest first
 * -- of partition s only with SLOT.  An error when sampling is off.
 */
void pk_cmd_pk_hotkeys(pk_cmd_ctx *x)
{
    const pk_topk *t = x->srv->hot;
    const pk_topk_entry *all[HOT_KEYS];
    int64_t count = HOTKEYS_DEFAULT, slot = -1;
    uint32_t n, shown = 0;

    for (int i = 1; i < x->argc; i += 2) {
        int64_t *v = NULL;
        if (x->argv[i].len == 5 && strncasecmp(x->argv[i].ptr, "COUNT", 5) == 0)
            v = &count;
        else if (x->argv[i].len == 4 &&
                 strncasecmp(x->argv[i].ptr, "SLOT", 4) == 0)
            v = &slot;
        if (v == NULL || i + 1 >= x->argc || !pk_arg_i64(&x->argv[i + 1], v) ||
            *v < 0 || (v == &count && (*v < 1 || *v > HOT_KEYS))) {
            pk_reply_error(x->out, "ERR syntax error: PK.HOTKEYS [COUNT 1-128] "
                                   "[SLOT partition]");
            return;
        }
    }
    if (t == NULL) {
        pk_reply_error(x->out, "ERR hot key tracking is off "
                               "(--hotkeys-sample 0)");
        return;
    }
    n = pk_topk_top(t, all, HOT_KEYS);
    for (uint32_t i = 0; i < n; i++)
        shown += (slot < 0 || all[i]->part == (uint64_t)slot) &&
                 shown < (uint32_t)count;
    pk_reply_array(x->out, shown);
    for (uint32_t i = 0, k = 0; i < n && k < shown; i++)
        if (slot < 0 || all[i]->part == (uint64_t)slot) {
            reply_entry(x, all[i]);
            k++;
        }
}

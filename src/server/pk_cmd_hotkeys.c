/*
 * PK.HOTKEYS [COUNT k] [SLOT s]: the node's hottest keys, as pk_hot.c
 * samples them (pk_hot.h), with into how many parts each is salted.
 */
#include <strings.h>

#include "core/pk_topk.h"
#include "server/pk_cmd.h"
#include "server/pk_hot.h"
#include "server/pk_salted.h"

#define HOTKEYS_DEFAULT 10

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
    const pk_topk_entry *all[PK_HOT_KEYS];
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
            *v < 0 || (v == &count && (*v < 1 || *v > PK_HOT_KEYS))) {
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
    n = pk_topk_top(t, all, PK_HOT_KEYS);
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

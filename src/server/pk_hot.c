/*
 * pk_hot: the node's hot keys (pk_hot.h) -- the sampling on the command
 * path (PK.HOTKEYS, which lists them, is pk_cmd_hotkeys.c).
 */
#include "server/pk_hot.h"

#include <stdlib.h>

#include "core/pk_err.h"
#include "core/pk_topk.h"
#include "server/pk_srv.h"

int pk_hot_init(pk_server *s)
{
    if (s->cfg.hotkeys_sample <= 0)
        return PK_OK;
    s->hot = malloc(sizeof(*s->hot));
    if (s->hot == NULL)
        return PK_ENOMEM;
    if (pk_topk_init(s->hot, PK_HOT_KEYS, s->cfg.hotkeys_sample) != PK_OK) {
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

/* pk_climit: output buffer limits by client class (see pk_climit.h). */
#include "server/pk_climit.h"

#include <stdio.h>

#include "server/pk_srv.h"

int pk_climit_class(const pk_conn *c)
{
    return c->internal ? PK_CLIENT_REPLICA : PK_CLIENT_NORMAL;
}

/* Whether any class has a limit, so that the sweep can skip the walk. */
static int any_limit(const pk_server *s)
{
    for (int k = 0; k < PK_CLIENT_CLASSES; k++)
        if (s->cfg.obuf_limits[k].hard || s->cfg.obuf_limits[k].soft)
            return 1;
    return 0;
}

int pk_climit_check(pk_conn *c)
{
    const pk_obuf_limit *l = &c->srv->cfg.obuf_limits[pk_climit_class(c)];
    size_t used;
    uint64_t now;
    int hard, soft;

    if (c->freed || (l->hard == 0 && l->soft == 0)) {
        c->obuf_soft_ms = 0;
        return 0;
    }
    used = pk_conn_pending(c);
    hard = l->hard && used >= l->hard;
    soft = l->soft && used >= l->soft;
    if (!soft) {
        c->obuf_soft_ms = 0;
    } else {
        /* Redis: reached continuously for more than the soft seconds;
         * the first time it is seen only starts the clock. */
        now = pk_srv_wall_ms();
        if (c->obuf_soft_ms == 0) {
            c->obuf_soft_ms = now;
            soft = 0;
        } else if (now - c->obuf_soft_ms <= (uint64_t)l->soft_s * 1000) {
            soft = 0;
        }
    }
    if (!hard && !soft)
        return 0;
    fprintf(stderr,
            "partkv: Client id=%llu addr=%s laddr=%s name=%s omem=%zu "
            "cmd=%s scheduled to be closed ASAP for overcoming of output "
            "buffer limits.\n",
            (unsigned long long)c->id, c->addr, c->laddr, c->name, used,
            c->last_cmd ? c->last_cmd : "NULL");
    pk_conn_close(c);
    return 1;
}

void pk_climit_sweep(pk_server *s)
{
    pk_conn *c, *next;

    if (!any_limit(s))
        return;
    for (c = s->conns; c; c = next) {
        next = c->next; /* c may be closed, which unlinks it */
        pk_climit_check(c);
    }
}

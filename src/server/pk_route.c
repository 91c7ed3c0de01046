/*
 * pk_route: where a command runs, by the partition map (pk_route.h).
 */
#include "server/pk_route.h"

#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_splitfind.h"
#include "server/pk_cluster.h"
#include "server/pk_ctx.h"
#include "server/pk_hotread.h"
#include "server/pk_link.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_salted.h"
#include "server/pk_split.h"
#include "server/pk_srv.h"

/* The commands forward mode splits by owner when their keys span
 * partitions. */
static int splittable(const pk_cmd *cmd)
{
    return strcmp(cmd->name, "mget") == 0 || strcmp(cmd->name, "mset") == 0 ||
           strcmp(cmd->name, "del") == 0 || strcmp(cmd->name, "exists") == 0 ||
           strcmp(cmd->name, "unlink") == 0 || strcmp(cmd->name, "touch") == 0;
}

/* Forward mode, keys in several partitions: one sub-command per key. */
static int route_split(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    pk_cluster *cl = &x->srv->cluster;
    int nkeys = (x->argc - 1) / cmd->step, rc = PK_OK;
    const char **addrs = malloc((size_t)nkeys * sizeof(*addrs));

    for (int i = 0; addrs && i < nkeys && rc == PK_OK; i++) {
        const pk_arg *k = &x->argv[1 + i * cmd->step];
        uint32_t leader =
            pk_pmap_leader(cl->map, pk_cluster_part(cl, k->ptr, k->len));
        if (leader == PK_NODE_NONE)
            rc = PK_ENOTFOUND;
        else
            addrs[i] = cl->map->nodes[leader].addr;
    }
    if (addrs == NULL)
        rc = PK_ENOMEM;
    if (rc == PK_OK)
        rc = pk_link_scatter(x->srv, x->c, x->argc, x->argv, addrs);
    free(addrs);
    if (rc == PK_OK) {
        x->c->iter_cmds--; /* its reply comes from the owners */
        return 0;
    }
    if (rc == PK_ENOTFOUND)
        pk_reply_error(x->out, "CLUSTERDOWN Hash slot not served");
    else
        pk_reply_errorf(x->out, "ERR cannot split the command: %s",
                        pk_strerror(rc));
    return 0;
}

/*
 * The one slot of the command's keys: 1 with *slot (-1: no key), or 0
 * after replying -CROSSSLOT or, in forward mode when split is set,
 * splitting the command by owner.
 */
static int keys_slot(pk_cmd_ctx *x, const pk_cmd *cmd, int split, int *slot)
{
    pk_cluster *cl = &x->srv->cluster;
    pk_keyrun r[PK_KEYRUNS_MAX];
    int nruns = pk_cmd_keyruns(cmd, x->argc, x->argv, r);

    /* A range read of the range scheme starts in the range of its first
     * bound and goes on from there (pk_route_range.c). */
    if (cl->ranges && cmd->keys == pk_cmd_keys_pk_range) {
        *slot = pk_cmd_pk_range_start(cl, x->argc, x->argv);
        return 1;
    }
    *slot = -1;
    for (int k = 0; k < nruns; k++) {
        for (int i = r[k].first; i <= r[k].last; i += r[k].step) {
            pk_slice key = pk_cmd_key(cmd, &x->argv[i]);
            int s = (int)pk_cluster_part(cl, key.ptr, key.len);
            if (*slot >= 0 && s != *slot) {
                if (split && x->srv->cfg.forward && splittable(cmd))
                    return route_split(x, cmd);
                pk_reply_error(x->out, "CROSSSLOT Keys in request don't "
                                       "hash to the same slot");
                return 0;
            }
            *slot = s;
        }
    }
    return 1;
}

/* Routes what touches slot (a command, or a whole EXEC): see
 * pk_route; forward: forward mode may forward x. */
static int route_slot(pk_cmd_ctx *x, int slot, int write, int forward)
{
    pk_cluster *cl = &x->srv->cluster;
    uint32_t leader = pk_pmap_leader(cl->map, (uint32_t)slot);

    if (leader == PK_NODE_NONE) {
        pk_reply_error(x->out, "CLUSTERDOWN Hash slot not served");
        return 0;
    }
    if (leader == cl->self) {
        /* A write to a partition in the switch of a move waits for it,
         * and any command waits out a handoff of its leadership (the new
         * leader's map releases it): then it runs here or goes to the new
         * owner, or after a bounded wait is answered -TRYAGAIN. */
        if ((write && (pk_move_fenced(x->srv, (uint32_t)slot) ||
                       pk_split_fenced(x->srv, (uint32_t)slot))) ||
            pk_repl_handing_off(x->srv, (uint32_t)slot)) {
            pk_conn_hold(x);
            return 0;
        }
        x->have_part = 1;
        x->part = (uint32_t)slot;
        return 1;
    }
    /* READONLY: a follower serves reads from its copy, as a Redis replica
     * does -- possibly behind the leader. */
    if (x->c->readonly && !write && pk_repl_follows(x->srv, (uint32_t)slot))
        return 1;
    /* Moves switch ownership atomically, so no node ever answers -ASK and
     * ASKING grants nothing: like Redis for a slot that is not being
     * imported, the owner's address comes back as MOVED. */
    if (forward) {
        int rc = pk_link_forward(x->srv, x->c, cl->map->nodes[leader].addr,
                                 x->argc, x->argv);
        if (rc == PK_OK) {
            x->c->iter_cmds--; /* its reply comes from the owner */
            return 0;
        }
        pk_reply_errorf(x->out, "ERR cannot forward to %s: %s",
                        cl->map->nodes[leader].addr, pk_strerror(rc));
        return 0;
    }
    pk_reply_errorf(x->out, "MOVED %d %s", slot, cl->map->nodes[leader].addr);
    return 0;
}

/* What every keyed routing starts with: 1 to route the keys, else 0 with
 * *run set to whether the command runs (keyless, or not a cluster). */
static int route_keys(pk_cmd_ctx *x, const pk_cmd *cmd, int *run)
{
    pk_cluster *cl = &x->srv->cluster;

    x->c->asking = 0;
    *run = 1;
    if (!cl->enabled || (cmd->first == 0 && cmd->keys == NULL))
        return 0;
    if (cl->map == NULL) {
        pk_reply_error(x->out, "CLUSTERDOWN The cluster is down");
        *run = 0;
        return 0;
    }
    return 1;
}

/* Feeds the request to its range's split finder: a PK.RANGE as the span
 * between its bounds, any other command as its first key. */
static void sample_load(pk_cmd_ctx *x, const pk_cmd *cmd, pk_splitfind *f)
{
    pk_keyrun r[PK_KEYRUNS_MAX];

    if (cmd->keys == pk_cmd_keys_pk_range) {
        pk_slice lo, hi;
        pk_cmd_pk_range_span(x->argc, x->argv, &lo, &hi);
        pk_splitfind_record(f, lo.ptr, lo.len, hi.ptr, hi.len);
    } else if (pk_cmd_keyruns(cmd, x->argc, x->argv, r) > 0) {
        pk_slice k = pk_cmd_key(cmd, &x->argv[r[0].first]);
        pk_splitfind_record(f, k.ptr, k.len, NULL, 0);
    }
}

int pk_route(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    int slot, run, here;

    if (!route_keys(x, cmd, &run))
        return run;
    if (!pk_salted_route(x, cmd))
        return 0;
    if (!keys_slot(x, cmd, 1, &slot))
        return 0;
    if (slot < 0)
        return 1;
    /* A read of a read-hot key led elsewhere may be served here (in
     * either mode: a proxy spreads such reads over the replicas; a
     * READONLY connection reads its copy as it is, below). */
    if (x->srv->hotread && !x->c->readonly &&
        pk_pmap_leader(x->srv->cluster.map, (uint32_t)slot) !=
            x->srv->cluster.self &&
        (here = pk_hotread_route(x, cmd, (uint32_t)slot)) >= 0)
        return here;
    /* A command a peer forwarded here is never forwarded on: two nodes
     * whose maps disagree for a moment would pass it back and forth, each
     * link waiting behind the other's (a deadlock seen with splits and
     * leader moves).  It gets MOVED, and the peer retries the owner once
     * (pk_link.c). */
    here = route_slot(x, slot, (cmd->flags & PK_CMD_WRITE) != 0,
                      x->srv->cfg.forward && !x->c->internal &&
                          !(cmd->flags & PK_CMD_LOCAL));
    if (here && x->have_part && x->part < PK_SLOTS &&
        x->srv->rates[x->part].finder)
        sample_load(x, cmd, x->srv->rates[x->part].finder);
    if (here && x->have_part && (cmd->flags & PK_CMD_WRITE))
        here = pk_split_admit(x, x->part);
    return here;
}

int pk_route_queued(pk_cmd_ctx *x, const pk_cmd *cmd, int *slot)
{
    pk_cluster *cl = &x->srv->cluster;
    uint32_t leader;
    int run;

    *slot = -1;
    if (!route_keys(x, cmd, &run))
        return run;
    if (!pk_salted_route_queued(x, cmd))
        return 0;
    if (!keys_slot(x, cmd, 0, slot))
        return 0;
    if (*slot < 0)
        return 1;
    leader = pk_pmap_leader(cl->map, (uint32_t)*slot);
    if (leader == PK_NODE_NONE) {
        pk_reply_error(x->out, "CLUSTERDOWN Hash slot not served");
        return 0;
    }
    if (leader == cl->self || (x->c->readonly && !(cmd->flags & PK_CMD_WRITE) &&
                               pk_repl_follows(x->srv, (uint32_t)*slot)))
        return 1;
    pk_reply_errorf(x->out, "MOVED %d %s", *slot, cl->map->nodes[leader].addr);
    return 0;
}

int pk_route_exec(pk_cmd_ctx *x, int slot, int write)
{
    x->have_part = 0;
    if (!x->srv->cluster.enabled || slot < 0)
        return 1;
    if (x->srv->cluster.map == NULL) {
        pk_reply_error(x->out, "CLUSTERDOWN The cluster is down");
        return 0;
    }
    return route_slot(x, slot, write, 0);
}

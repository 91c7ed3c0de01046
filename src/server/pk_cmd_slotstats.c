/*
 * CLUSTER SLOT-STATS (Redis 8.2, Valkey 8.0): per-slot statistics of the
 * slots this node leads -- on the hash and range schemes, of the
 * partitions it leads, by partition id.
 *
 *   CLUSTER SLOT-STATS SLOTSRANGE start end
 *   CLUSTER SLOT-STATS ORDERBY metric [LIMIT n] [ASC | DESC]
 *
 * Each entry is [slot, {key-count, cpu-usec, network-bytes-in,
 * network-bytes-out}] as Redis replies (the inner map flat in RESP2):
 * keys from the store's counters; CPU time and request and reply bytes of
 * the commands run here on the slot since the node started (pk_cmd.c).
 * SLOTSRANGE lists slot order; ORDERBY the largest first (DESC, default)
 * or smallest, ties by slot, at most n (default 16).
 */
#include <stdlib.h>
#include <strings.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "server/pk_cluster.h"
#include "server/pk_cmd.h"
#include "server/pk_srv.h"
#include "store/pk_store_part.h"

static const char *const metric_names[] = {
    "key-count", "cpu-usec", "network-bytes-in", "network-bytes-out"};
#define NMETRICS 4

typedef struct slot_stat {
    uint32_t slot;
    uint64_t v[NMETRICS];
} slot_stat;

static int order_metric; /* qsort's: the metric compared */
static int order_asc;

static int by_metric(const void *a, const void *b)
{
    const slot_stat *x = a, *y = b;
    uint64_t vx = x->v[order_metric], vy = y->v[order_metric];

    if (vx != vy)
        return (vx < vy) == order_asc ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The slots of [lo, hi] this node leads, with their figures. */
static int collect(pk_cmd_ctx *x, pk_txn *t, uint32_t lo, uint32_t hi,
                   slot_stat **out, uint32_t *n)
{
    const pk_cluster *cl = &x->srv->cluster;
    const pk_pmap *m = cl->map;
    slot_stat *all = calloc((size_t)(hi - lo + 1), sizeof(*all));
    int rc = PK_OK;

    *n = 0;
    if (all == NULL)
        return PK_ENOMEM;
    for (uint32_t p = lo; p <= hi && p < m->npartitions && rc == PK_OK; p++) {
        const pk_part_rate *r = &x->srv->rates[p];
        pk_part_stats st;
        slot_stat *e;
        if (pk_pmap_leader(m, p) != cl->self ||
            (rc = pk_store_part_stats(t, p, &st)) != PK_OK)
            continue;
        e = &all[(*n)++];
        e->slot = p;
        e->v[0] = st.keys;
        e->v[1] = r->cpu_us;
        e->v[2] = r->net_in;
        e->v[3] = r->net_out;
    }
    if (rc != PK_OK) {
        free(all);
        return rc;
    }
    *out = all;
    return PK_OK;
}

static void reply_stats(pk_cmd_ctx *x, const slot_stat *s, uint32_t n)
{
    pk_reply_array(x->out, n);
    for (uint32_t i = 0; i < n; i++) {
        pk_reply_array(x->out, 2);
        pk_reply_int(x->out, s[i].slot);
        pk_reply_map(x->out, x->proto, NMETRICS);
        for (int k = 0; k < NMETRICS; k++) {
            pk_reply_bulk_str(x->out, metric_names[k]);
            pk_reply_int(x->out, (int64_t)s[i].v[k]);
        }
    }
}

static int slot_arg(pk_cmd_ctx *x, int i, uint32_t *slot)
{
    int64_t v;

    if (!pk_arg_i64(&x->argv[i], &v) || v < 0 || v >= PK_SLOTS) {
        pk_reply_error(x->out, "ERR Invalid or out of range slot");
        return 0;
    }
    *slot = (uint32_t)v;
    return 1;
}

void pk_cmd_cluster_slot_stats(pk_cmd_ctx *x)
{
    const pk_arg *how = x->argc > 2 ? &x->argv[2] : NULL;
    uint32_t lo = 0, hi = PK_SLOTS - 1, n = 0;
    int64_t limit = 16;
    slot_stat *all = NULL;
    int ordered = 0, rc;

    if (how && pk_arg_eq(how, "slotsrange") && x->argc == 5) {
        if (!slot_arg(x, 3, &lo) || !slot_arg(x, 4, &hi))
            return;
        if (lo > hi) {
            pk_reply_errorf(x->out,
                            "ERR Start slot number %u is greater than end "
                            "slot number %u",
                            lo, hi);
            return;
        }
    } else if (how && pk_arg_eq(how, "orderby") && x->argc >= 4) {
        ordered = 1;
        order_asc = 0;
        order_metric = -1;
        for (int k = 0; k < NMETRICS; k++)
            if (pk_arg_eq(&x->argv[3], metric_names[k]))
                order_metric = k;
        if (order_metric < 0) {
            pk_reply_error(x->out, "ERR Unrecognized sort metric for ORDERBY.");
            return;
        }
        for (int i = 4; i < x->argc; i++) {
            if (pk_arg_eq(&x->argv[i], "limit") && i + 1 < x->argc) {
                if (!pk_arg_i64(&x->argv[++i], &limit) || limit < 1 ||
                    limit > PK_SLOTS) {
                    pk_reply_error(x->out, "ERR Limit has to lie in between 1 "
                                           "and 16384 (maximum number of "
                                           "slots).");
                    return;
                }
            } else if (pk_arg_eq(&x->argv[i], "asc")) {
                order_asc = 1;
            } else if (pk_arg_eq(&x->argv[i], "desc")) {
                order_asc = 0;
            } else {
                pk_reply_error(x->out, "ERR syntax error");
                return;
            }
        }
    } else {
        pk_reply_error(x->out, "ERR syntax error: CLUSTER SLOT-STATS "
                               "SLOTSRANGE start end | ORDERBY metric "
                               "[LIMIT n] [ASC|DESC]");
        return;
    }
    TXN_OR_RETURN(x, t);
    if ((rc = collect(x, t, lo, hi, &all, &n)) != PK_OK) {
        pk_cmd_store_error(x, rc);
        return;
    }
    if (ordered) {
        qsort(all, n, sizeof(*all), by_metric);
        if (n > (uint32_t)limit)
            n = (uint32_t)limit;
    }
    reply_stats(x, all, n);
    free(all);
}

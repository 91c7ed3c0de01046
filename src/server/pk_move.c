/*
 * pk_move: the mover's life cycle, the write fence, the janitor and
 * PK.MOVES (see pk_move.h; sessions in pk_move_src.c, the target side in
 * pk_move_dst.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "core/pk_err.h"
#include "core/pk_pmap_move.h"
#include "server/pk_ctx.h"
#include "server/pk_move_int.h"
#include "store/pk_store_part.h"

#define TICK_MS 10
#define IDLE_TICK_MS 100
#define JANITOR_RECORDS 20000 /* per partition and step */
#define JANITOR_PARTS 256

uint64_t pk__mv_now(void)
{
    return pk_srv_wall_ms();
}

/* Grows one per-partition array from mv->cap to n entries, zeroed. */
static int grow(uint8_t **a, uint32_t cap, uint32_t n)
{
    uint8_t *g = realloc(*a, n);

    if (g == NULL)
        return PK_ENOMEM;
    memset(g + cap, 0, n - cap);
    *a = g;
    return PK_OK;
}

/* Grows the per-partition arrays to the map's partition count. */
static int fit(pk_mover *mv, uint32_t n)
{
    if (n <= mv->cap)
        return PK_OK;
    if (grow(&mv->fenced, mv->cap, n) != PK_OK ||
        grow(&mv->busy, mv->cap, n) != PK_OK ||
        grow(&mv->held, mv->cap, n) != PK_OK ||
        grow(&mv->check, mv->cap, n) != PK_OK)
        return PK_ENOMEM;
    mv->cap = n;
    return PK_OK;
}

/* 1 when this node's map says it holds p or is receiving it. */
static int holds(const pk_cluster *cl, uint32_t p)
{
    const pk_partition *pt = &cl->map->parts[p];

    if (pt->move_target == cl->self)
        return 1;
    for (uint32_t i = 0; i < pt->nreplicas; i++)
        if (pt->replicas[i] == cl->self)
            return 1;
    for (uint32_t i = 0; i < pt->nlearners; i++)
        if (pt->learners[i] == cl->self)
            return 1;
    return 0;
}

/* Whether the janitor may drop part here now. */
static int droppable(const pk_mover *mv, uint32_t part)
{
    const pk_cluster *cl = &mv->srv->cluster;

    return part < cl->map->npartitions && part < mv->cap && !mv->busy[part] &&
           !mv->fenced[part] && !holds(cl, part) && !pk__mv_importing(mv, part);
}

/*
 * One janitor step, in its own transaction (timers run between
 * iterations, when none is open): the first, after a start, walks every
 * partition that has data; later ones look only at partitions this node
 * stopped holding (mv->check).  At most JANITOR_PARTS partitions per step,
 * each drop bounded by JANITOR_RECORDS.
 */
static void janitor_step(pk_mover *mv)
{
    pk_server *s = mv->srv;
    const pk_cluster *cl = &s->cluster;
    pk_txn *t = NULL;
    pk_part_stats st;
    uint32_t part, n = 0;
    int more = 0;

    /* Only a map from the coordinator says what this node no longer
     * holds: a peer's push after a restart may be older than what the
     * node held before it stopped. */
    if (cl->map == NULL || cl->self == PK_NODE_NONE || !mv->polled ||
        s->txn != NULL || pk_txn_begin(s->store, 0, &t) != PK_OK)
        return;
    if (!mv->swept) {
        for (uint64_t p = 0; pk_store_part_next(t, p, &part, &st) == PK_OK;
             p = (uint64_t)part + 1)
            if (part < mv->cap && droppable(mv, part))
                mv->check[part] = 1;
        mv->swept = 1;
    }
    for (uint32_t p = 0; p < mv->cap; p++) {
        int done = 0;
        if (!mv->check[p])
            continue;
        if (n == JANITOR_PARTS) {
            more = 1;
            break;
        }
        if (p < cl->map->npartitions && holds(cl, p)) {
            mv->check[p] = 0; /* ours again */
            continue;
        }
        if (!droppable(mv, p)) {
            more = 1; /* busy: later */
            continue;
        }
        if (pk_store_part_drop(t, p, JANITOR_RECORDS, &done) != PK_OK) {
            more = 1;
            break;
        }
        n++;
        more |= !done;
        mv->check[p] = !done;
    }
    mv->janitor = more;
    if (n)
        pk_txn_commit(t);
    else
        pk_txn_abort(t);
}

/*
 * Every TICK_MS while sessions run (throttle, deadlines, the switch's next
 * step); the scan for new moves and the janitor every IDLE_TICK_MS.  With
 * no session and no held write the timer itself slows to IDLE_TICK_MS.
 */
static void on_tick(uv_timer_t *h)
{
    pk_mover *mv = h->data;
    uint64_t now = pk__mv_now();
    int busy;

    pk__mv_check(mv);
    pk__mv_pump_all(mv);
    pk_conn_hold_expire(mv->srv, MV_HOLD_MAX_MS);
    if (now - mv->slow_ms >= IDLE_TICK_MS) {
        mv->slow_ms = now;
        pk__mv_scan(mv);
        if (mv->janitor)
            janitor_step(mv);
    }
    busy = mv->sessions != NULL || mv->srv->held != NULL;
    uv_timer_set_repeat(h, busy ? TICK_MS : IDLE_TICK_MS);
}

/* A session started: tick fast from now on. */
void pk__mv_wake(pk_mover *mv)
{
    if (uv_timer_get_repeat(&mv->tick) != TICK_MS)
        uv_timer_start(&mv->tick, on_tick, IDLE_TICK_MS, IDLE_TICK_MS);
}

int pk_move_init(pk_server *s)
{
    pk_mover *mv = calloc(1, sizeof(*mv));

    if (mv == NULL)
        return PK_ENOMEM;
    mv->srv = s;
    uv_timer_init(&s->loop, &mv->tick);
    mv->tick.data = mv;
    uv_timer_start(&mv->tick, on_tick, IDLE_TICK_MS, IDLE_TICK_MS);
    s->mover = mv;
    return PK_OK;
}

/* The tick handle is closed: nothing of the mover is in the loop now. */
static void on_tick_closed(uv_handle_t *h)
{
    pk_mover *mv = h->data;

    free(mv->fenced);
    free(mv->busy);
    free(mv->held);
    free(mv->check);
    free(mv->retry_at);
    free(mv);
}

void pk_move_free(pk_server *s)
{
    pk_mover *mv = s->mover;

    if (mv == NULL)
        return;
    pk__mv_end_all(mv);
    pk__mv_imports_free(mv);
    s->mover = NULL;
    uv_close((uv_handle_t *)&mv->tick, on_tick_closed); /* frees mv */
}

void pk_move_map_changed(pk_server *s, int polled)
{
    pk_mover *mv = s->mover;
    const pk_pmap *m = s->cluster.map;
    uint8_t *seen;

    if (mv == NULL || m == NULL || fit(mv, m->npartitions) != PK_OK)
        return;
    if (polled && !mv->polled) {
        mv->polled = 1;
        mv->janitor = 1;
    }
    seen = calloc(m->nnodes ? m->nnodes : 1, 1);
    mv->moving = mv->sources = 0;
    for (uint32_t p = 0; p < m->npartitions; p++) {
        uint32_t from = pk_pmap_leader(m, p);
        if (m->parts[p].move_target == PK_NODE_NONE || from == PK_NODE_NONE)
            continue;
        mv->moving++;
        if (seen && !seen[from]) {
            seen[from] = 1;
            mv->sources++;
        }
    }
    free(seen);
    for (uint32_t p = 0;
         m && s->cluster.self != PK_NODE_NONE && p < m->npartitions; p++) {
        uint8_t now = (uint8_t)holds(&s->cluster, p);
        if (mv->held[p] && !now) {
            mv->check[p] = 1;
            mv->janitor = 1;
        }
        mv->held[p] = now;
    }
    mv->janitor |= !mv->swept;
    pk__mv_check(mv);
    pk__mv_scan(mv);
}

int pk_move_fenced(const pk_server *s, uint32_t part)
{
    const pk_mover *mv = s->mover;

    return mv && part < mv->cap && mv->fenced[part];
}

int pk_move_may_expire(void *server, uint32_t part)
{
    pk_server *s = server;
    const pk_cluster *cl = &s->cluster;

    if (!cl->enabled)
        return 1;
    return cl->map && pk_pmap_leader(cl->map, part) == cl->self &&
           !pk_move_fenced(s, part);
}

static const char *phase_name(int phase)
{
    static const char *names[] = {"begin", "copying", "catchup", "fenced",
                                  "final", "sync",    "commit",  "push"};

    return phase >= 0 && phase <= MV_PUSH ? names[phase] : "?";
}

/* PK.MOVES: one entry per session this node runs as a source. */
void pk_cmd_pk_moves(pk_cmd_ctx *x)
{
    pk_mover *mv = x->srv->mover;
    size_t n = 0;
    uint64_t now = pk__mv_now();

    for (pk_msess *ss = mv ? mv->sessions : NULL; ss; ss = ss->next)
        n++;
    pk_reply_array(x->out, n);
    for (pk_msess *ss = mv ? mv->sessions : NULL; ss; ss = ss->next) {
        pk_reply_map(x->out, x->proto, 5);
        pk_reply_bulk_str(x->out, "target");
        pk_reply_bulk_str(x->out, ss->addr);
        pk_reply_bulk_str(x->out, "partitions");
        pk_reply_int(x->out, ss->n);
        pk_reply_bulk_str(x->out, "state");
        pk_reply_bulk_str(x->out, phase_name(ss->phase));
        pk_reply_bulk_str(x->out, "bytes");
        pk_reply_int(x->out, (int64_t)ss->bytes);
        pk_reply_bulk_str(x->out, "elapsed_ms");
        pk_reply_int(x->out, (int64_t)(now - ss->started_ms));
    }
}

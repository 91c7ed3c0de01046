/*
 * rebalance_watch: what `rebalance apply` shows while the nodes copy.
 *
 *   [#####...............] 1234/4096 partitions  12.3/50.0 MB  48.1 MB/s
 *   ETA 0:42  3 in flight
 *
 * Bytes done are the plan bytes of the moves done plus what the move
 * sessions in flight say they have sent (PK.MOVES, asked every
 * SESSION_POLL_S), capped at the plan's total: sessions may count bytes
 * the plan did not (retries, the change log), and that must not push the
 * bar past 100%.  The rate is measured over the last few seconds; until
 * there is one the ETA uses the configured rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/rebalance.h"

#define SESSION_POLL_S 0.5
#define TTY_DRAW_S 0.2
#define PLAIN_DRAW_S 2.0
#define STALL_S 120.0
#define WINDOW 64 /* rate samples, one per tick */
#define BAR 20

struct rb_watch {
    const rb_plan *p; /* borrowed */
    uint64_t rate;
    int tty, drawn; /* drawn: a \r line is on screen */
    double t0, last_draw, last_poll;
    rb_session *sess;
    size_t nsess;
    double *since;   /* per move: last byte progress while in flight */
    int64_t *seen;   /* per move: session bytes at `since` */
    uint8_t *warned; /* per move: stall reported */
    double wt[WINDOW];
    uint64_t wb[WINDOW];
    unsigned wn; /* samples taken */
    uint64_t total;
    uint32_t nparts;
    uint64_t first, last; /* bytes done at the first and the last tick */
    int ticked;
};

double pk__rb_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

rb_watch *pk__rb_watch_new(const rb_plan *p, uint64_t rate, int tty)
{
    rb_watch *w = calloc(1, sizeof(*w));
    size_t n = p->nmoves ? p->nmoves : 1;
    rb_totals t;

    if (w == NULL)
        return NULL;
    w->since = calloc(n, sizeof(*w->since));
    w->seen = calloc(n, sizeof(*w->seen));
    w->warned = calloc(n, sizeof(*w->warned));
    if (w->since == NULL || w->seen == NULL || w->warned == NULL) {
        pk__rb_watch_free(w);
        return NULL;
    }
    pk__rb_totals(p, &t);
    w->p = p;
    w->rate = rate;
    w->tty = tty;
    w->t0 = pk__rb_now();
    w->total = t.bytes;
    w->nparts = t.partitions;
    return w;
}

void pk__rb_watch_free(rb_watch *w)
{
    if (w == NULL)
        return;
    free(w->sess);
    free(w->since);
    free(w->seen);
    free(w->warned);
    free(w);
}

double pk__rb_watch_elapsed(const rb_watch *w)
{
    return pk__rb_now() - w->t0;
}

double pk__rb_watch_average(const rb_watch *w)
{
    double secs = pk__rb_watch_elapsed(w);

    return secs > 0 && w->last > w->first ? (double)(w->last - w->first) / secs
                                          : 0;
}

void pk__rb_watch_break(rb_watch *w)
{
    if (w->drawn)
        printf("\n");
    w->drawn = 0;
    fflush(stdout);
}

static int session_live(const rb_session *s)
{
    static const char *ended[] = {"done", "committed", "failed", "cancelled"};

    for (size_t i = 0; i < sizeof(ended) / sizeof(ended[0]); i++)
        if (strcmp(s->state, ended[i]) == 0)
            return 0;
    return 1;
}

/* Bytes the source of mv reports sending to its target. */
static int64_t pair_bytes(const rb_watch *w, const pk_pmap *m,
                          const rb_move *mv)
{
    int64_t b = 0;

    if (mv->to >= m->nnodes)
        return 0;
    for (size_t i = 0; i < w->nsess; i++)
        if (w->sess[i].source == mv->from &&
            strcmp(w->sess[i].target, m->nodes[mv->to].addr) == 0)
            b += w->sess[i].bytes;
    return b;
}

static void check_stalls(rb_watch *w, const pk_pmap *m, const uint8_t *st,
                         double now)
{
    for (uint32_t i = 0; i < w->p->nmoves; i++) {
        const rb_move *mv = &w->p->moves[i];
        int64_t b;
        if (st[i] != RB_FLIGHT) {
            w->since[i] = 0;
            continue;
        }
        b = pair_bytes(w, m, mv);
        if (w->since[i] == 0 || b != w->seen[i]) {
            w->since[i] = now;
            w->seen[i] = b;
        } else if (now - w->since[i] > STALL_S && !w->warned[i]) {
            char from[96], to[96];
            pk__rb_watch_break(w);
            fprintf(stderr,
                    "warning: partition %u (%s -> %s) has been in flight "
                    "%.0f s with no progress; still waiting (the nodes "
                    "retry by themselves)\n",
                    (unsigned)mv->part,
                    pk__rb_node_label(m, mv->from, from, sizeof(from)),
                    pk__rb_node_label(m, mv->to, to, sizeof(to)),
                    now - w->since[i]);
            w->warned[i] = 1;
        }
    }
}

static uint64_t bytes_done(const rb_watch *w, const uint8_t *st)
{
    uint64_t b = 0;

    for (uint32_t i = 0; i < w->p->nmoves; i++) {
        const rb_move *mv = &w->p->moves[i];
        if (st[i] == RB_DONE && !mv->transfer && mv->to != PK_NODE_NONE)
            b += mv->bytes;
    }
    for (size_t i = 0; i < w->nsess; i++)
        if (session_live(&w->sess[i]) && w->sess[i].bytes > 0)
            b += (uint64_t)w->sess[i].bytes;
    return b < w->total ? b : w->total;
}

static uint32_t parts_done(const rb_watch *w, const uint8_t *st)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < w->p->nmoves; i++) {
        int last = i + 1 == w->p->nmoves ||
                   w->p->moves[i + 1].part != w->p->moves[i].part;
        n += last && st[i] == RB_DONE;
    }
    return n;
}

/* Bytes per second over the sample window, or 0 before there is one. */
static double measured_rate(rb_watch *w, double now, uint64_t done)
{
    unsigned oldest = w->wn >= WINDOW ? w->wn - WINDOW + 1 : 0;
    double rate = 0;

    if (w->wn > oldest && now - w->wt[oldest % WINDOW] > 0.5)
        rate = ((double)done - (double)w->wb[oldest % WINDOW]) /
               (now - w->wt[oldest % WINDOW]);
    w->wt[w->wn % WINDOW] = now;
    w->wb[w->wn % WINDOW] = done;
    w->wn++;
    return rate > 0 ? rate : 0;
}

static void draw(rb_watch *w, const uint8_t *st, uint64_t done, double rate,
                 const char *state)
{
    char bar[BAR + 1], d[32], t[32], r[32], eta[32];
    uint32_t pd = parts_done(w, st), flight = 0;
    double frac = w->total    ? (double)done / (double)w->total
                  : w->nparts ? (double)pd / w->nparts
                              : 1;
    double speed = rate > 0 ? rate : (double)w->rate;

    for (uint32_t i = 0; i < w->p->nmoves; i++)
        flight += st[i] == RB_FLIGHT;
    for (int i = 0; i < BAR; i++)
        bar[i] = i < (int)(frac * BAR + 1e-9) ? '#' : '.';
    bar[BAR] = '\0';
    printf("%s[%s] %u/%u partitions  %s/%s  %s/s  ETA %s  %u in flight%s%s",
           w->tty ? "\r\033[K" : "", bar, pd, w->nparts,
           pk__rb_fmt_bytes(done, d, sizeof(d)),
           pk__rb_fmt_bytes(w->total, t, sizeof(t)),
           pk__rb_fmt_bytes((uint64_t)rate, r, sizeof(r)),
           speed > 0 ? pk__rb_fmt_secs((double)(w->total - done) / speed, eta,
                                       sizeof(eta))
                     : "?",
           flight, strcmp(state, "running") ? "  " : "",
           strcmp(state, "running") ? state : "");
    if (!w->tty)
        printf("\n");
    w->drawn = w->tty;
    fflush(stdout);
}

void pk__rb_watch_tick(rb_watch *w, const pk_pmap *m, const uint8_t *st,
                       const char *state)
{
    double now = pk__rb_now();
    uint64_t done;
    double rate;

    if (now - w->last_poll >= SESSION_POLL_S) {
        rb_session *s = NULL;
        size_t n = 0;
        if (pk__rb_sessions(m, &s, &n) == 0) {
            free(w->sess);
            w->sess = s;
            w->nsess = n;
        } else {
            free(s);
        }
        w->last_poll = now;
    }
    check_stalls(w, m, st, now);
    done = bytes_done(w, st);
    if (!w->ticked)
        w->first = done;
    w->ticked = 1;
    w->last = done;
    rate = measured_rate(w, now, done);
    if (now - w->last_draw >= (w->tty ? TTY_DRAW_S : PLAIN_DRAW_S) ||
        w->last_draw == 0) {
        draw(w, st, done, rate, state);
        w->last_draw = now;
    }
}

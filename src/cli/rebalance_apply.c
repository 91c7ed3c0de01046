/*
 * rebalance_apply: `partkv rebalance apply ID` -- the driver.  It stays in
 * the foreground, begins moves, watches them, and cancels them; the nodes
 * do the copying and each source commits its own moves in the map.
 *
 *   every TICK_MS:  run record --cancelled--> cancel in-flight moves, exit 1
 *                       |paused: start nothing
 *                       |running
 *                   map GET -> progress -> begin up to K leader moves and
 *                   make the map-only edits, all in one CAS (epoch + 1),
 *                   redone on a fresh map if the CAS loses a race
 *
 * Nothing the driver knows lives only in its memory: progress is read off
 * the map and the run record says what to do, so an interrupted driver is
 * resumed by running apply again, and pause/resume/cancel work from any
 * terminal.  SIGINT and SIGTERM are blocked and polled (no handler, no
 * global flag).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap_move.h"
#include "server/pk_sclient.h"

#define TICK_MS 30
#define RB_STALE PK_EINFEASIBLE /* an edit found the plan stale */

typedef struct apply_args {
    rb_target t;
    const char *id;
    uint64_t rate;
    uint32_t k;
    int rate_set, k_set, yes;
} apply_args;

typedef struct driver {
    pk_sclient *c;
    const apply_args *a;
    rb_plan plan;
    rb_run run;
    uint8_t *st;   /* per move: RB_PENDING, RB_FLIGHT, RB_DONE */
    char why[256]; /* why the plan is stale */
    rb_watch *w;
    int broken;     /* the connection failed: reconnect before the next tick */
    rb_mapcache mc; /* the map as of the last tick */
} driver;

/* A leader move to start.  Moves between one pair of nodes go together
 * (the nodes copy them in one session), and the pairs share the room for
 * moves in flight: rank is a move's place among its pair's, so that one
 * node's long list does not hold back every other node's moves. */
typedef struct cand {
    uint32_t rank, from, to, part, idx;
} cand;

static int parse_apply(int argc, char **argv, apply_args *a)
{
    static const struct option opts[] = {
        RB_TARGET_OPTIONS,
        {"rate", required_argument, NULL, 'r'},
        {"max-concurrent", required_argument, NULL, 'k'},
        {"yes", no_argument, NULL, 'y'},
        {NULL, 0, NULL, 0},
    };
    int ch, li = -1;

    memset(a, 0, sizeof(*a));
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, &li)) != -1) {
        switch (ch) {
        case 'r':
            if (pk__rb_parse_rate(optarg, &a->rate) != 0)
                goto bad;
            a->rate_set = 1;
            break;
        case 'k':
            if (pk__rb_parse_k(optarg, &a->k) != 0)
                goto bad;
            a->k_set = 1;
            break;
        case 'y':
            a->yes = 1;
            break;
        default:
            if (!pk__rb_target_opt(ch, optarg, &a->t))
                goto bad;
        }
    }
    if (optind + 1 != argc || a->t.cluster == NULL) {
        fprintf(stderr, "usage: partkv rebalance apply ID --cluster "
                        "HOST:PORT [--rate R] [--max-concurrent K] [--yes]\n");
        return -1;
    }
    a->id = argv[optind];
    return 0;
bad:
    if (ch != '?' && li >= 0 && optarg)
        fprintf(stderr, "partkv rebalance apply: bad value '%s' for --%s\n",
                optarg, opts[li].name);
    else
        fprintf(stderr,
                "partkv rebalance apply: bad or incomplete option '%s'\n",
                argv[optind - 1]);
    return -1;
}

static int cmp_cand(const void *x, const void *y)
{
    const cand *a = x, *b = y;

    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    if (a->to != b->to)
        return a->to < b->to ? -1 : 1;
    return a->part < b->part ? -1 : a->part > b->part;
}

/* Begins move c on m, or says in d->why why the plan is stale. */
static int begin_move(driver *d, pk_pmap *m, const cand *c)
{
    uint32_t leader = pk_pmap_leader(m, c->part);
    char want[96], have[96];
    int rc;

    if (leader != c->from) {
        snprintf(d->why, sizeof(d->why),
                 "partition %u is led by %s, the plan expected %s",
                 (unsigned)c->part, pk__rb_node_label(m, leader, have, 96),
                 pk__rb_node_label(m, c->from, want, 96));
        return RB_STALE;
    }
    rc = pk_pmap_move_begin(m, c->part, c->to);
    if (rc != PK_OK)
        snprintf(d->why, sizeof(d->why), "cannot move partition %u to %s: %s",
                 (unsigned)c->part, pk__rb_node_label(m, c->to, want, 96),
                 pk_strerror(rc));
    return rc == PK_OK ? PK_OK : RB_STALE;
}

/* The map-only edit of move i, or the reason it no longer fits. */
static int edit_move(driver *d, pk_pmap *m, uint32_t i)
{
    char from[96], to[96];

    if (pk__rb_edit_move(m, &d->plan.moves[i]) == PK_OK)
        return PK_OK;
    snprintf(d->why, sizeof(d->why),
             "partition %u: cannot move its %s replica %s -> %s",
             (unsigned)d->plan.moves[i].part,
             d->plan.moves[i].role == PK_ROLE_LEADER ? "leader" : "follower",
             pk__rb_node_label(m, d->plan.moves[i].from, from, 96),
             pk__rb_node_label(m, d->plan.moves[i].to, to, 96));
    return RB_STALE;
}

/*
 * One round on a fresh map: the next move of every partition whose
 * earlier moves are done is a candidate; map-only ones are made at once,
 * leader moves begin up to K in flight.  Returns 0 (write), 1 (nothing to
 * write), RB_STALE or PK_ENOMEM.
 */
static int round_edit(pk_pmap *m, void *ctx)
{
    driver *d = ctx;
    const rb_plan *p = &d->plan;
    cand *cs = malloc((p->nmoves ? p->nmoves : 1) * sizeof(*cs));
    uint32_t nc = 0, flight = 0, edits = 0, room;
    int rc = PK_OK;

    if (cs == NULL)
        return PK_ENOMEM;
    pk__rb_progress(p, m, d->st);
    for (uint32_t i = 0; i < p->nmoves && rc == PK_OK; i++) {
        const rb_move *mv = &p->moves[i];
        int first = i == 0 || p->moves[i - 1].part != mv->part ||
                    d->st[i - 1] == RB_DONE;
        flight += d->st[i] == RB_FLIGHT;
        if (d->st[i] != RB_PENDING || !first || pk_pmap_moving(m, mv->part, 0))
            continue;
        if (pk__rb_map_only(mv)) {
            rc = edit_move(d, m, i);
            edits++;
        } else {
            cs[nc++] = (cand){0, mv->from, mv->to, mv->part, i};
        }
    }
    qsort(cs, nc, sizeof(*cs), cmp_cand); /* by pair (every rank is 0) */
    for (uint32_t i = 1; i < nc; i++)
        if (cs[i].from == cs[i - 1].from && cs[i].to == cs[i - 1].to)
            cs[i].rank = cs[i - 1].rank + 1;
    qsort(cs, nc, sizeof(*cs), cmp_cand); /* pairs interleaved */
    room = d->run.max_concurrent > flight ? d->run.max_concurrent - flight : 0;
    for (uint32_t i = 0; i < nc && i < room && rc == PK_OK; i++, edits++)
        rc = begin_move(d, m, &cs[i]);
    free(cs);
    if (rc != PK_OK)
        return rc;
    if (edits == 0)
        return 1;
    m->epoch++;
    return 0;
}

static int stop_requested(void)
{
    sigset_t pending;

    sigpending(&pending);
    return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM);
}

static int all_done(const driver *d)
{
    for (uint32_t i = 0; i < d->plan.nmoves; i++)
        if (d->st[i] != RB_DONE)
            return 0;
    return 1;
}

static uint32_t count_done(const driver *d)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < d->plan.nmoves; i++)
        n += d->st[i] == RB_DONE;
    return n;
}

static void set_state(driver *d, const char *state)
{
    snprintf(d->run.state, sizeof(d->run.state), "%s", state);
    if (pk__rb_run_put(d->c, &d->run) != PK_OK)
        fprintf(stderr,
                "partkv rebalance apply: could not record state "
                "%s\n",
                state);
}

static void print_done(driver *d, const pk_pmap *m)
{
    char b[32], t[32], r[32];
    rb_totals tot;
    double secs = pk__rb_watch_elapsed(d->w);

    double avg = pk__rb_watch_average(d->w);

    pk__rb_totals(&d->plan, &tot);
    if (avg == 0 && secs > 0) /* done between two progress samples */
        avg = (double)tot.bytes / secs;
    if (secs < 60)
        snprintf(t, sizeof(t), "%.2f s", secs);
    else
        pk__rb_fmt_secs(secs, t, sizeof(t));
    printf("done: %u moves, %s copied in %s (average %s/s)\n", tot.moves,
           pk__rb_fmt_bytes(tot.bytes, b, sizeof(b)), t,
           pk__rb_fmt_bytes((uint64_t)avg, r, sizeof(r)));
    pk__rb_print_counts(m);
}

/* Exit status when the run record says stop, or -1 to go on. */
static int check_record(driver *d)
{
    rb_run r;
    uint32_t n = 0;
    int rc = pk__rb_run_get(d->c, &r);

    if (rc == PK_EIO) {
        d->broken = 1;
        return -1;
    }
    if (rc != PK_OK || strcmp(r.plan, d->plan.id) != 0) {
        pk__rb_watch_break(d->w);
        fprintf(stderr,
                "partkv rebalance apply: the run record no longer "
                "names plan %s; stopping\n",
                d->plan.id);
        return 1;
    }
    d->run = r;
    if (strcmp(r.state, "cancelled") == 0) {
        pk__rb_watch_break(d->w);
        (void)pk__rb_cancel_moves(d->c, &d->plan, &n);
        printf("cancelled: %u of %u moves done, the rest left where they "
               "were\n",
               count_done(d), d->plan.nmoves);
        return 1;
    }
    if (strcmp(r.state, "failed") == 0 || strcmp(r.state, "done") == 0) {
        pk__rb_watch_break(d->w);
        fprintf(stderr, "partkv rebalance apply: the run was marked %s\n",
                r.state);
        return r.state[0] == 'd' ? 0 : 1;
    }
    return -1;
}

/* One tick; the exit status, or -1 to go on. */
static int tick(driver *d)
{
    pk_pmap *m = NULL;
    int rc, status = check_record(d);

    if (status >= 0)
        return status;
    if (strcmp(d->run.state, "running") == 0)
        rc = pk__rb_map_edit_cached(d->c, &d->mc, round_edit, d, &m);
    else if ((rc = pk__rb_map_refresh(d->c, &d->mc)) == PK_OK)
        rc = pk_pmap_clone(d->mc.m, &m);
    if (rc == RB_STALE) {
        pk__rb_watch_break(d->w);
        set_state(d, "failed");
        fprintf(stderr,
                "partkv rebalance apply: the plan is stale: %s; make "
                "a new plan\n",
                d->why);
        return 1;
    }
    if (rc != PK_OK) { /* the coordinator is busy or away: next tick */
        d->broken = rc == PK_EIO;
        return -1;
    }
    pk__rb_progress(&d->plan, m, d->st);
    pk__rb_watch_tick(d->w, m, d->st, d->run.state);
    if (all_done(d)) {
        pk__rb_watch_break(d->w);
        set_state(d, "done");
        print_done(d, m);
        status = 0;
    }
    pk_pmap_free(m);
    return status;
}

/* Replaces a dead connection; quiet, the caller retries next tick. */
static void reconnect(driver *d)
{
    pk_sclient *c = NULL;

    if (pk__rb_connect(&d->a->t, NULL, &c) == 0) {
        pk_sclient_free(d->c);
        d->c = c;
        d->broken = 0;
    }
}

static int drive(driver *d)
{
    sigset_t set;
    int status = -1;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    while (status < 0) {
        if (stop_requested()) {
            pk__rb_watch_break(d->w);
            fprintf(stderr, "interrupted; moves in flight finish by "
                            "themselves; run apply again to resume\n");
            return 130;
        }
        status = tick(d);
        if (status < 0 && d->broken)
            reconnect(d);
        if (status < 0)
            usleep(TICK_MS * 1000);
    }
    return status;
}

/*
 * Decides between a fresh run and resuming an interrupted one, and fills
 * d->run.  Returns 0 or the exit status after printing why not.
 */
static int prepare_run(driver *d, const pk_pmap *m)
{
    rb_run r;
    int rc = pk__rb_run_get(d->c, &r);
    int live = rc == PK_OK && (strcmp(r.state, "running") == 0 ||
                               strcmp(r.state, "paused") == 0);

    if (live && strcmp(r.plan, d->plan.id) != 0) {
        fprintf(stderr,
                "partkv rebalance apply: plan %s is %s; cancel it first "
                "(partkv rebalance cancel)\n",
                r.plan, r.state);
        return 1;
    }
    if (live) {
        d->run = r;
        printf("resuming plan %s (%s)\n", r.plan, r.state);
    } else if (m->epoch != d->plan.epoch) {
        fprintf(stderr,
                "plan %s is stale: made at epoch %llu, the map is at epoch "
                "%llu; make a new plan\n",
                d->plan.id, (unsigned long long)d->plan.epoch,
                (unsigned long long)m->epoch);
        return 1;
    } else {
        memset(&d->run, 0, sizeof(d->run));
        snprintf(d->run.plan, sizeof(d->run.plan), "%s", d->plan.id);
        snprintf(d->run.state, sizeof(d->run.state), "running");
        d->run.rate = d->plan.rate;
        d->run.max_concurrent = d->plan.max_concurrent;
        d->run.epoch = d->plan.epoch;
    }
    if (d->a->rate_set)
        d->run.rate = d->a->rate;
    if (d->a->k_set)
        d->run.max_concurrent = d->a->k;
    if (d->run.max_concurrent == 0)
        d->run.max_concurrent = RB_DEFAULT_CONCURRENT;
    return 0;
}

static int start(driver *d)
{
    pk_pmap *m = NULL;
    uint64_t rev;
    int rc = pk__rb_map_get(d->c, &m, &rev), status;

    if (rc != PK_OK) {
        fprintf(stderr, "partkv rebalance apply: cannot read the map: %s\n",
                pk_strerror(rc));
        return 1;
    }
    status = pk__rb_plan_load(d->c, d->a->id, m, &d->plan);
    if (status == 0)
        status = prepare_run(d, m);
    if (status == 0)
        status = pk__rb_confirm(&d->plan, &d->run, d->a->yes);
    if (status == 0 && pk__rb_run_put(d->c, &d->run) != PK_OK) {
        fprintf(stderr, "partkv rebalance apply: cannot write the run "
                        "record\n");
        status = 1;
    }
    pk_pmap_free(m);
    return status;
}

int pk__rb_cmd_apply(int argc, char **argv)
{
    apply_args a;
    driver d;
    int status;

    if (parse_apply(argc, argv, &a) != 0)
        return 2;
    memset(&d, 0, sizeof(d));
    d.a = &a;
    status = pk__rb_connect(&a.t, "rebalance apply", &d.c);
    if (status == 0)
        status = start(&d);
    if (status == 0) {
        d.st = calloc(d.plan.nmoves ? d.plan.nmoves : 1, sizeof(*d.st));
        d.w = pk__rb_watch_new(&d.plan, d.run.rate, isatty(STDOUT_FILENO));
        if (d.st == NULL || d.w == NULL) {
            fprintf(stderr, "partkv rebalance apply: out of memory\n");
            status = 1;
        }
    }
    if (status == 0)
        status = drive(&d);
    pk__rb_watch_free(d.w);
    pk__rb_mapcache_free(&d.mc);
    free(d.st);
    pk__rb_plan_free(&d.plan);
    pk_sclient_free(d.c);
    return status;
}

/*
 * rebalance_control: `partkv rebalance pause|resume|cancel|status` -- what
 * an operator does from another terminal while `apply` runs.
 *
 * pause and resume only rewrite the state in the run record, keeping its
 * other fields: the driver stops beginning moves and the nodes stop
 * sending as soon as they read it.  cancel records the state first, so a
 * driver cannot begin another move once the record is read, then clears
 * every in-flight move of the plan in one map CAS; the driver, seeing the
 * state, makes the same (idempotent) CAS and stops.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap_move.h"
#include "server/pk_sclient.h"

typedef struct cancel_ctx {
    const rb_plan *p;
    uint32_t n;
} cancel_ctx;

static int cancel_edit(pk_pmap *m, void *ctx)
{
    cancel_ctx *x = ctx;
    uint32_t to;

    x->n = 0;
    for (uint32_t i = 0; i < x->p->nmoves; i++) {
        const rb_move *mv = &x->p->moves[i];
        if (pk__rb_map_only(mv) || !pk_pmap_moving(m, mv->part, &to) ||
            to != mv->to)
            continue;
        if (pk_pmap_move_cancel(m, mv->part) == PK_OK)
            x->n++;
    }
    if (x->n == 0)
        return 1;
    m->epoch++;
    return 0;
}

int pk__rb_cancel_moves(pk_sclient *c, const rb_plan *p, uint32_t *n)
{
    cancel_ctx x = {p, 0};
    int rc = pk__rb_map_edit(c, cancel_edit, &x, NULL);

    *n = rc == PK_OK ? x.n : 0;
    return rc;
}

/* --cluster, --secret, --dir and (status only) --json.  0 or -1. */
static int parse_common(int argc, char **argv, rb_target *t, int *json)
{
    memset(t, 0, sizeof(*t));
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (json && strcmp(o, "--json") == 0) {
            *json = 1;
        } else if (i + 1 < argc && strcmp(o, "--cluster") == 0) {
            t->cluster = argv[++i];
        } else if (i + 1 < argc && strcmp(o, "--secret") == 0) {
            t->secret = argv[++i];
        } else if (i + 1 < argc && strcmp(o, "--dir") == 0) {
            t->dir = argv[++i];
        } else {
            fprintf(stderr, "partkv rebalance %s: bad option '%s'\n", argv[0],
                    o);
            return -1;
        }
    }
    if (t->cluster == NULL) {
        fprintf(stderr,
                "partkv rebalance %s: --cluster HOST:PORT is "
                "required\n",
                argv[0]);
        return -1;
    }
    return 0;
}

/* Cancels the in-flight moves of plan `id`.  An exit status. */
static int cancel_plan(pk_sclient *c, const char *id)
{
    pk_pmap *m = NULL;
    rb_plan p;
    uint64_t rev;
    uint32_t n = 0;
    int rc = pk__rb_map_get(c, &m, &rev), status = 1;

    if (rc == PK_OK && pk__rb_plan_load(c, id, m, &p) == 0) {
        rc = pk__rb_cancel_moves(c, &p, &n);
        if (rc == PK_OK) {
            printf("cancelled plan %s: %u moves in flight stopped, the "
                   "rest left where they were\n",
                   id, n);
            status = 0;
        }
        pk__rb_plan_free(&p);
    }
    if (rc != PK_OK)
        fprintf(stderr, "partkv rebalance cancel: %s\n", pk_strerror(rc));
    pk_pmap_free(m);
    return status;
}

static int control(pk_sclient *c, const char *verb)
{
    int live, rc;
    rb_run r;

    rc = pk__rb_run_get(c, &r);
    if (rc != PK_OK) {
        fprintf(stderr, "partkv rebalance %s: %s\n", verb,
                rc == PK_ENOTFOUND ? "no rebalance has been applied"
                                   : pk_strerror(rc));
        return 1;
    }
    live = strcmp(r.state, "running") == 0 || strcmp(r.state, "paused") == 0;
    if (!live &&
        !(strcmp(verb, "cancel") == 0 && strcmp(r.state, "cancelled") == 0)) {
        fprintf(stderr, "partkv rebalance %s: plan %s is %s, not running\n",
                verb, r.plan, r.state);
        return 1;
    }
    snprintf(r.state, sizeof(r.state), "%s",
             strcmp(verb, "pause") == 0    ? "paused"
             : strcmp(verb, "resume") == 0 ? "running"
                                           : "cancelled");
    if (pk__rb_run_put(c, &r) != PK_OK) {
        fprintf(stderr, "partkv rebalance %s: cannot write the run record\n",
                verb);
        return 1;
    }
    if (strcmp(verb, "cancel") == 0)
        return cancel_plan(c, r.plan);
    printf("plan %s %s\n", r.plan, r.state);
    return 0;
}

int pk__rb_cmd_control(int argc, char **argv)
{
    rb_target t;
    pk_sclient *c = NULL;
    char who[32];
    int status;

    if (parse_common(argc, argv, &t, NULL) != 0)
        return 2;
    snprintf(who, sizeof(who), "rebalance %s", argv[0]);
    status = pk__rb_connect(&t, who, &c);
    if (status == 0)
        status = control(c, argv[0]);
    pk_sclient_free(c);
    return status;
}

static void count_states(const rb_plan *p, const uint8_t *st, uint32_t n[3])
{
    n[0] = n[1] = n[2] = 0;
    for (uint32_t i = 0; i < p->nmoves; i++)
        n[st[i]]++;
}

static void status_json(const rb_run *r, const pk_pmap *m, const uint32_t n[3],
                        const rb_session *s, size_t ns)
{
    json_t *sess = json_array(), *o;
    char *text;

    for (size_t i = 0; i < ns; i++)
        json_array_append_new(
            sess, json_pack("{s:s, s:s, s:s, s:I, s:I, s:s}", "source",
                            m->nodes[s[i].source].name, "source_addr",
                            m->nodes[s[i].source].addr, "target", s[i].target,
                            "partitions", (json_int_t)s[i].partitions, "bytes",
                            (json_int_t)s[i].bytes, "state", s[i].state));
    o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I}, "
                  "s:o}",
                  "plan", r->plan, "state", r->state, "rate",
                  (json_int_t)r->rate, "max_concurrent",
                  (json_int_t)r->max_concurrent, "epoch", (json_int_t)r->epoch,
                  "map_epoch", (json_int_t)m->epoch, "moves", "total",
                  (json_int_t)(n[0] + n[1] + n[2]), "done",
                  (json_int_t)n[RB_DONE], "in_flight", (json_int_t)n[RB_FLIGHT],
                  "pending", (json_int_t)n[RB_PENDING], "sessions", sess);
    text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    printf("%s\n", text ? text : "{}");
    free(text);
    json_decref(o);
}

static void status_text(const rb_run *r, const pk_pmap *m, const uint32_t n[3],
                        const rb_session *s, size_t ns)
{
    char rate[32], label[96], b[32];

    printf("plan %s: %s, rate %s%s, at most %u moves at a time, made at "
           "epoch %llu (map at epoch %llu)\n",
           r->plan, r->state,
           r->rate ? pk__rb_fmt_bytes(r->rate, rate, sizeof(rate))
                   : "unlimited",
           r->rate ? "/s" : "", r->max_concurrent, (unsigned long long)r->epoch,
           (unsigned long long)m->epoch);
    printf("moves: %u done, %u in flight, %u pending (of %u)\n", n[RB_DONE],
           n[RB_FLIGHT], n[RB_PENDING], n[0] + n[1] + n[2]);
    printf("sessions in flight: %zu\n", ns);
    for (size_t i = 0; i < ns; i++)
        printf("  %s -> %s  %lld partitions  %s sent  %s\n",
               pk__rb_node_label(m, s[i].source, label, sizeof(label)),
               s[i].target, (long long)s[i].partitions,
               pk__rb_fmt_bytes(s[i].bytes > 0 ? (uint64_t)s[i].bytes : 0, b,
                                sizeof(b)),
               s[i].state);
}

static int show_status(pk_sclient *c, int json)
{
    pk_pmap *m = NULL;
    rb_plan p;
    rb_run r;
    rb_session *s = NULL;
    size_t ns = 0;
    uint8_t *st = NULL;
    uint32_t n[3];
    uint64_t rev;
    int rc = pk__rb_run_get(c, &r), status = 1;

    if (rc == PK_ENOTFOUND) {
        printf(json ? "{\"state\":\"none\"}\n"
                    : "no rebalance has been applied\n");
        return 0;
    }
    if (rc == PK_OK)
        rc = pk__rb_map_get(c, &m, &rev);
    if (rc != PK_OK) {
        fprintf(stderr, "partkv rebalance status: %s\n", pk_strerror(rc));
        return 1;
    }
    if (pk__rb_plan_load(c, r.plan, m, &p) != 0) {
        pk_pmap_free(m);
        return 1;
    }
    st = calloc(p.nmoves ? p.nmoves : 1, 1);
    if (st)
        pk__rb_progress(&p, m, st);
    if (st && pk__rb_sessions(m, &s, &ns) == PK_OK) {
        count_states(&p, st, n);
        (json ? status_json : status_text)(&r, m, n, s, ns);
        status = 0;
    }
    free(s);
    free(st);
    pk__rb_plan_free(&p);
    pk_pmap_free(m);
    return status;
}

int pk__rb_cmd_status(int argc, char **argv)
{
    rb_target t;
    pk_sclient *c = NULL;
    int json = 0, status;

    if (parse_common(argc, argv, &t, &json) != 0)
        return 2;
    status = pk__rb_connect(&t, "rebalance status", &c);
    if (status == 0)
        status = show_status(c, json);
    pk_sclient_free(c);
    return status;
}

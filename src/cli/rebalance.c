/*
 * rebalance: `partkv rebalance plan|apply|pause|resume|cancel|status` --
 * dispatch, and the small pieces every subcommand shares: totals, rates
 * and their units, the progress of a plan's moves read off the map, and
 * the map edits that need no copy.
 *
 * Units are 1000-based, as operators read them on dashboards: 1 MB =
 * 1,000,000 bytes.
 *
 * Progress is read from the map alone, never remembered in the
 * coordinator, so a driver that was interrupted and started again sees
 * exactly what happened meanwhile:
 *
 *   leader move   done       the partition's leader is `to`
 *                 in flight  the partition is moving to `to`
 *   other move    done       `to` holds the partition and `from` does not
 *   any           pending    otherwise
 *
 * Moves of one partition come together, in the order they must happen; a
 * later one done means the earlier ones are too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap_move.h"

void pk__rb_totals(const rb_plan *p, rb_totals *t)
{
    memset(t, 0, sizeof(*t));
    for (uint32_t i = 0; i < p->nmoves; i++) {
        const rb_move *mv = &p->moves[i];
        t->moves++;
        if (i == 0 || mv->part != p->moves[i - 1].part)
            t->partitions++;
        if (mv->transfer) {
            t->transfers++;
            continue;
        }
        t->data_moves++;
        /* Only a move that makes a new copy copies data. */
        if (mv->to != PK_NODE_NONE) {
            t->keys += mv->keys;
            t->bytes += mv->bytes;
        }
    }
}

int pk__rb_parse_rate(const char *s, uint64_t *bps)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"", 1},    {"b", 1},   {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
                 {"k", 1e3}, {"m", 1e6}, {"g", 1e9},  {"tb", 1e12}};
    char unit[16];
    char *end = NULL;
    double v;
    size_t n;

    if (strcasecmp(s, "unlimited") == 0) {
        *bps = 0;
        return 0;
    }
    v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0 || *s == '-')
        return -1;
    n = strlen(end);
    if (n >= 2 && strcasecmp(end + n - 2, "/s") == 0)
        n -= 2;
    if (n >= sizeof(unit))
        return -1;
    memcpy(unit, end, n);
    unit[n] = '\0';
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(unit, units[i].unit) == 0 && v * units[i].mult < 1e19) {
            *bps = (uint64_t)llround(v * units[i].mult);
            return 0;
        }
    }
    return -1;
}

const char *pk__rb_fmt_bytes(uint64_t b, char *buf, size_t cap)
{
    static const char *units[] = {"KB", "MB", "GB", "TB", "PB"};
    double v = (double)b;
    int u = -1;

    if (b < 1000) {
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
        return buf;
    }
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

const char *pk__rb_fmt_secs(double s, char *buf, size_t cap)
{
    unsigned long long t = s > 0 ? (unsigned long long)llround(s) : 0;

    if (t >= 3600)
        snprintf(buf, cap, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%llu:%02llu", t / 60, t % 60);
    return buf;
}

static int find(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return (int)i;
    return -1;
}

int pk__rb_map_only(const rb_move *mv)
{
    return mv->from == PK_NODE_NONE || mv->to == PK_NODE_NONE ||
           (mv->role == PK_ROLE_FOLLOWER && !mv->transfer);
}

static void drop_learner(pk_partition *pt, uint32_t id)
{
    int li = find(pt->learners, pt->nlearners, id);

    if (li < 0)
        return;
    memmove(&pt->learners[li], &pt->learners[li + 1],
            (size_t)(pt->nlearners - li - 1) * sizeof(pt->learners[0]));
    pt->nlearners--;
}

int pk__rb_edit_move(pk_pmap *m, const rb_move *mv)
{
    pk_partition *pt;
    int fi, ti;

    if (mv->part >= m->npartitions)
        return PK_ESTALE;
    pt = &m->parts[mv->part];
    fi = mv->from == PK_NODE_NONE ? -1
                                  : find(pt->replicas, pt->nreplicas, mv->from);
    ti =
        mv->to == PK_NODE_NONE ? -1 : find(pt->replicas, pt->nreplicas, mv->to);
    if ((mv->from != PK_NODE_NONE && fi < 0) ||
        (mv->to != PK_NODE_NONE && ti >= 0 && !mv->transfer) ||
        (mv->transfer && (fi != 0 || ti <= 0)))
        return PK_ESTALE;
    if (mv->transfer) {
        pt->replicas[ti] = pt->replicas[0];
        pt->replicas[0] = mv->to;
    } else if (mv->to == PK_NODE_NONE) {
        if (pt->nreplicas <= 1)
            return PK_ESTALE;
        memmove(&pt->replicas[fi], &pt->replicas[fi + 1],
                (size_t)(pt->nreplicas - fi - 1) * sizeof(pt->replicas[0]));
        pt->nreplicas--;
    } else if (fi >= 0) {
        pt->replicas[fi] = mv->to;
    } else {
        if (pt->nreplicas >= PK_REPLICAS_MAX)
            return PK_ESTALE;
        fi = pt->nreplicas;
        pt->replicas[pt->nreplicas++] = mv->to;
    }
    if (mv->to != PK_NODE_NONE)
        drop_learner(pt, mv->to);
    if (fi == 0 || mv->transfer)
        pt->leader_epoch++;
    return PK_OK;
}

/* The raw done test of one move (see the top of the file). */
static int move_done(const pk_pmap *m, const rb_move *mv)
{
    const pk_partition *pt = &m->parts[mv->part];
    int has_to = mv->to == PK_NODE_NONE ||
                 find(pt->replicas, pt->nreplicas, mv->to) >= 0;
    int has_from = mv->from != PK_NODE_NONE &&
                   find(pt->replicas, pt->nreplicas, mv->from) >= 0;

    if (mv->role == PK_ROLE_LEADER && mv->to != PK_NODE_NONE)
        return pk_pmap_leader(m, mv->part) == mv->to;
    return has_to && !has_from;
}

/* One run of moves of the same partition, [i0, i1). */
static void progress_run(const rb_plan *p, const pk_pmap *m, uint32_t i0,
                         uint32_t i1, uint8_t *st)
{
    uint32_t last = i0; /* moves before `last` are done */
    uint32_t to;

    for (uint32_t i = i0; i < i1; i++)
        if (st[i] == RB_DONE || move_done(m, &p->moves[i]))
            last = i + 1;
    for (uint32_t i = i0; i < i1; i++)
        st[i] = i < last ? RB_DONE : RB_PENDING;
    if (last < i1 && p->moves[last].role == PK_ROLE_LEADER &&
        !pk__rb_map_only(&p->moves[last]) &&
        pk_pmap_moving(m, p->moves[last].part, &to) && to == p->moves[last].to)
        st[last] = RB_FLIGHT;
}

void pk__rb_progress(const rb_plan *p, const pk_pmap *m, uint8_t *st)
{
    uint32_t i0 = 0;

    for (uint32_t i = 1; i <= p->nmoves; i++) {
        if (i < p->nmoves && p->moves[i].part == p->moves[i0].part)
            continue;
        if (p->moves[i0].part < m->npartitions)
            progress_run(p, m, i0, i, st);
        i0 = i;
    }
}

int pk_cli_rebalance(int argc, char **argv)
{
    const char *sub = argc >= 2 ? argv[1] : "";

    if (strcmp(sub, "plan") == 0)
        return pk__rb_cmd_plan(argc - 1, argv + 1);
    if (strcmp(sub, "apply") == 0)
        return pk__rb_cmd_apply(argc - 1, argv + 1);
    if (strcmp(sub, "pause") == 0 || strcmp(sub, "resume") == 0 ||
        strcmp(sub, "cancel") == 0)
        return pk__rb_cmd_control(argc - 1, argv + 1);
    if (strcmp(sub, "status") == 0)
        return pk__rb_cmd_status(argc - 1, argv + 1);
    fprintf(stderr,
            "usage: partkv rebalance plan|apply|pause|resume|cancel|status "
            "--cluster HOST:PORT [options] (see 'partkv help')\n");
    return 2;
}

int pk__rb_target_opt(int ch, const char *arg, rb_target *t)
{
    switch (ch) {
    case 'c':
        t->cluster = arg;
        return 1;
    case 'S':
        t->secret = arg;
        return 1;
    case 'd':
        t->dir = arg;
        return 1;
    default:
        return 0;
    }
}

int pk__rb_parse_k(const char *s, uint32_t *k)
{
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);

    if (*s == '-' || *end != '\0' || v < 1 || v > 100000)
        return -1;
    *k = (uint32_t)v;
    return 0;
}

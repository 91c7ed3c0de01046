/*
 * rebalance_preview: the human review of a plan before anything moves --
 * the moves (the first PREVIEW_MOVES of them), the totals, the ETA at the
 * chosen rate, each node's balance before and after, and how the bytes
 * copied compare with the least any balanced plan must copy; then the
 * confirmation apply asks for, and the per-node counts it ends with.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/rebalance.h"
#include "core/pk_plan.h"

#define PREVIEW_MOVES 20

static void print_move(const pk_pmap *m, const rb_move *mv)
{
    char from[96], to[96], size[32];

    pk__rb_node_label(m, mv->from, from, sizeof(from));
    pk__rb_node_label(m, mv->to, to, sizeof(to));
    printf("  %s %u  %s -> %s  %s%s  %llu keys  %s\n",
           m->scheme == PK_SCHEME_SLOTS ? "slot" : "partition",
           (unsigned)mv->part, from, to,
           mv->role == PK_ROLE_LEADER ? "leader" : "follower",
           mv->transfer ? " (transfer, no copy)" : "",
           (unsigned long long)mv->keys,
           pk__rb_fmt_bytes(mv->transfer ? 0 : mv->bytes, size, sizeof(size)));
}

static void print_totals(const rb_plan *p)
{
    char bytes[32], rate[32], eta[32];
    rb_totals t;

    pk__rb_totals(p, &t);
    printf("totals: %u moves over %u partitions (%u data moves, %u leader "
           "transfers), %llu keys, %s\n",
           t.moves, t.partitions, t.data_moves, t.transfers,
           (unsigned long long)t.keys,
           pk__rb_fmt_bytes(t.bytes, bytes, sizeof(bytes)));
    if (p->rate == 0)
        printf("ETA: unthrottled (rate unlimited); each batch of moves "
               "between a pair of nodes also costs a session setup and a "
               "switch-over\n");
    else
        printf("ETA: %s at %s/s, plus a per-batch overhead (session setup "
               "and switch-over per source/target pair), at most %u moves "
               "at a time\n",
               pk__rb_fmt_secs((double)t.bytes / (double)p->rate, eta,
                               sizeof(eta)),
               pk__rb_fmt_bytes(p->rate, rate, sizeof(rate)),
               p->max_concurrent);
}

static void print_nodes(const rb_plan *p, const pk_pmap *m)
{
    printf("%-26s  %-8s  %15s  %15s  %23s\n", "node", "state", "replicas",
           "leaders", "bytes");
    for (uint32_t id = 0; id < p->nnodes && id < m->nnodes; id++) {
        const rb_nodestat *s = &p->nodes[id];
        static const char *states[] = {"up", "draining", "down", "removed"};
        char label[96], before[32], after[32], r[40], l[40], b[80];
        if (m->nodes[id].state == PK_NODE_REMOVED && s->replicas_before == 0)
            continue;
        snprintf(r, sizeof(r), "%u -> %u", s->replicas_before,
                 s->replicas_after);
        snprintf(l, sizeof(l), "%u -> %u", s->leaders_before, s->leaders_after);
        snprintf(b, sizeof(b), "%s -> %s",
                 pk__rb_fmt_bytes(s->bytes_before, before, sizeof(before)),
                 pk__rb_fmt_bytes(s->bytes_after, after, sizeof(after)));
        printf("%-26s  %-8s  %15s  %15s  %23s\n",
               pk__rb_node_label(m, id, label, sizeof(label)),
               m->nodes[id].state < 4 ? states[m->nodes[id].state] : "?", r, l,
               b);
    }
}

void pk__rb_preview(const rb_plan *p, const pk_pmap *m, const char *cluster)
{
    char moved[32], least[32];
    rb_totals t;

    pk__rb_totals(p, &t);
    printf("plan %s: policy %s, map epoch %llu, %u moves\n", p->id, p->policy,
           (unsigned long long)p->epoch, p->nmoves);
    if (p->nmoves == 0)
        printf("  nothing to move: the map is already balanced under this "
               "policy\n");
    for (uint32_t i = 0; i < p->nmoves && i < PREVIEW_MOVES; i++)
        print_move(m, &p->moves[i]);
    if (p->nmoves > PREVIEW_MOVES)
        printf("  ... %u more (use --json for all)\n",
               p->nmoves - PREVIEW_MOVES);
    print_totals(p);
    print_nodes(p, m);
    printf("bytes moved: %s; theoretical minimum: %s\n",
           pk__rb_fmt_bytes(t.bytes, moved, sizeof(moved)),
           pk__rb_fmt_bytes(p->min_bytes, least, sizeof(least)));
    printf("plan %s stored (map epoch %llu); apply with: partkv rebalance "
           "apply %s --cluster %s\n",
           p->id, (unsigned long long)p->epoch, p->id, cluster);
}

int pk__rb_confirm(const rb_plan *p, const rb_run *run, int yes)
{
    char line[64], b[32], r[32], eta[32];
    rb_totals t;

    pk__rb_totals(p, &t);
    if (yes)
        return 0;
    if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "partkv rebalance apply: stdin is not a terminal; "
                        "pass --yes to apply without asking\n");
        return 2;
    }
    printf("plan %s: %u moves (%u data moves, %u leader transfers), %s to "
           "copy, ETA %s at %s/s, at most %u moves at a time\n",
           p->id, t.moves, t.data_moves, t.transfers,
           pk__rb_fmt_bytes(t.bytes, b, sizeof(b)),
           run->rate
               ? pk__rb_fmt_secs((double)t.bytes / run->rate, eta, sizeof(eta))
               : "unthrottled",
           run->rate ? pk__rb_fmt_bytes(run->rate, r, sizeof(r)) : "unlimited",
           run->max_concurrent);
    printf("apply? [y/N] ");
    fflush(stdout);
    if (fgets(line, sizeof(line), stdin) == NULL)
        return 1;
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "y") == 0 || strcmp(line, "yes") == 0 ||
        strcmp(line, "Y") == 0 || strcmp(line, "YES") == 0)
        return 0;
    fprintf(stderr, "partkv rebalance apply: not applied\n");
    return 1;
}

void pk__rb_print_counts(const pk_pmap *m)
{
    char label[96];

    for (uint32_t id = 0; id < m->nnodes; id++) {
        uint32_t reps = 0, leads = 0;
        if (m->nodes[id].state == PK_NODE_REMOVED)
            continue;
        for (uint32_t q = 0; q < m->npartitions; q++)
            for (uint32_t k = 0; k < m->parts[q].nreplicas; k++)
                if (m->parts[q].replicas[k] == id) {
                    reps++;
                    leads += k == 0;
                }
        printf("  %-26s  %u replicas, %u leaders\n",
               pk__rb_node_label(m, id, label, sizeof(label)), reps, leads);
    }
}

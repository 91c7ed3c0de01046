/* pk_ctrl_decide: the controller's decisions on the map -- promotions
 * after a failure, leader balance, replica replacement (see pk_ctrl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap_move.h"
#include "core/pk_range.h"
#include "server/pk_ctrl_int.h"

typedef struct cand {
    int answers;   /* followers that accepted the fence */
    int leader;    /* the leader itself did, at the map's epoch */
    uint32_t best; /* in-sync follower with the highest position */
    uint64_t best_pos;
    uint32_t want; /* preferred on a tie (a handoff's target) */
} cand;

/* 1 if f is a replica of pt, which leader leads: a follower, or the
 * leader itself (then f == leader). */
static int fences(const pk_partition *pt, uint32_t f, uint32_t leader)
{
    if (pt->nreplicas == 0 || pt->replicas[0] != leader)
        return 0;
    for (int i = 0; i < pt->nreplicas; i++)
        if (pt->replicas[i] == f)
            return 1;
    return 0;
}

/*
 * Fences, at replica f, every partition in `todo` led by `leader` that f
 * holds; records f's answers in cands.  f == leader fences the leader
 * itself: it stops serving them for good at the epoch it leads.
 */
static void fence_at(pk_ctrl *c, const pk_pmap *m, uint32_t f, uint32_t leader,
                     const uint8_t *todo, cand *cands)
{
    uint32_t n = 0, k = 0;
    const char **argv = NULL;
    char *nums = NULL;
    pk_sclient **cli;
    pk_rr *r = NULL;

    for (uint32_t p = 0; p < m->npartitions; p++)
        n += todo[p] && fences(&m->parts[p], f, leader);
    if (n == 0 || (cli = pk__ctrl_peer_of(c, m->nodes[f].addr)) == NULL)
        return;
    argv = malloc((4 + 2 * (size_t)n) * sizeof(*argv));
    nums = malloc((2 + 2 * (size_t)n) * 24);
    if (argv == NULL || nums == NULL)
        goto out;
    argv[0] = "PK.REPL";
    argv[1] = "FENCE";
    snprintf(nums, 24, "%u", leader);
    argv[2] = nums;
    /* The map that promotes will be newer than this one: until the old
     * leader has it, the follower promises it nothing. */
    snprintf(nums + 24, 24, "%llu", (unsigned long long)(m->epoch + 1));
    argv[3] = nums + 24;
    for (uint32_t p = 0, a = 4; p < m->npartitions; p++) {
        char *s = nums + 24 * (size_t)(a - 2);
        if (!todo[p] || !fences(&m->parts[p], f, leader))
            continue;
        snprintf(s, 24, "%u", p);
        snprintf(s + 24, 24, "%llu",
                 (unsigned long long)(m->parts[p].leader_epoch + 1));
        argv[a++] = s;
        argv[a++] = s + 24;
    }
    if (pk__ctrl_call(cli, &r, 4 + 2 * (int)n, argv, NULL) != PK_OK)
        goto out;
    if (r->type != PK_RR_ARRAY || r->n != n) {
        if (r->type == PK_RR_ERROR)
            fprintf(stderr, "partkv: controller: %s: %s\n", m->nodes[f].addr,
                    r->str);
        goto out;
    }
    for (uint32_t p = 0; p < m->npartitions && k < n; p++) {
        const pk_partition *pt = &m->parts[p];
        const pk_rr *e;
        uint64_t pos;
        if (!todo[p] || !fences(pt, f, leader))
            continue;
        e = &r->elems[k++];
        if (e->type != PK_RR_ARRAY || e->n != 2)
            continue; /* BUSY: its promise to the leader runs */
        if (f == leader) {
            /* Every write acknowledged in this epoch, and before, is in
             * the leader's log: its answer alone suffices. */
            cands[p].leader = (uint64_t)e->elems[0].integer == pt->leader_epoch;
            continue;
        }
        /* Only a follower of this epoch can hold writes acknowledged in
         * it (a replacement that is still copying cannot): only its
         * answer counts toward the quorum that must intersect theirs. */
        if ((uint64_t)e->elems[0].integer != pt->leader_epoch)
            continue;
        cands[p].answers++;
        pos = (uint64_t)e->elems[1].integer;
        if (cands[p].best == PK_NODE_NONE || pos > cands[p].best_pos ||
            (pos == cands[p].best_pos && f == cands[p].want)) {
            cands[p].best = f;
            cands[p].best_pos = pos;
        }
    }
out:
    pk_rr_free(r);
    free(argv);
    free(nums);
}

/*
 * Fences the followers (those ask[] allows) of every partition in todo and
 * makes the in-sync one with the highest position leader, at leader epoch
 * + 1, once at least half of the replicas answered.  want: preferred
 * followers, or NULL.  self: where too few followers of the current epoch
 * answered (a lagging one cannot count), the leader (if ask[] allows) is
 * fenced as well, and if it answers it leads on at epoch + 1 -- a
 * promotion stuck that way is finished once the old leader is back.
 * Returns the partitions changed.
 */
static uint32_t promote(pk_ctrl *c, pk_pmap *m, const uint8_t *todo,
                        const uint8_t *ask, const uint32_t *want, int self)
{
    uint32_t np = m->npartitions, changed = 0;
    cand *cands = calloc(np, sizeof(*cands));
    uint8_t *leads = calloc(m->nnodes ? m->nnodes : 1, 1), *stuck;

    if (cands == NULL || leads == NULL)
        goto out;
    for (uint32_t p = 0; p < np; p++) {
        cands[p].best = PK_NODE_NONE;
        cands[p].want = want ? want[p] : PK_NODE_NONE;
        if (todo[p])
            leads[m->parts[p].replicas[0]] = 1;
    }
    for (uint32_t l = 0; l < m->nnodes; l++)
        for (uint32_t f = 0; leads[l] && f < m->nnodes; f++)
            if (ask[f] && f != l)
                fence_at(c, m, f, l, todo, cands);
    if (self && (stuck = calloc(np, 1)) != NULL) {
        /* The leader only where its followers could not finish it: a
         * handoff left unfinished still goes to a follower. */
        for (uint32_t p = 0; p < np; p++)
            stuck[p] =
                todo[p] && cands[p].answers < (m->parts[p].nreplicas + 1) / 2;
        for (uint32_t l = 0; l < m->nnodes; l++)
            if (leads[l] && ask[l])
                fence_at(c, m, l, l, stuck, cands);
        free(stuck);
    }
    if (c->npend < np) {
        uint64_t *n = realloc(c->pend, np * sizeof(*n));
        if (n != NULL) {
            memset(n + c->npend, 0, (np - c->npend) * sizeof(*n));
            c->pend = n;
            c->npend = np;
        }
    }
    for (uint32_t p = 0; p < np && p < c->npend; p++)
        if (todo[p] && (cands[p].answers || cands[p].leader))
            c->pend[p] = 2 * (m->parts[p].leader_epoch + 1) + (want != NULL);
    for (uint32_t p = 0; p < np; p++) {
        pk_partition *pt = &m->parts[p];
        uint32_t old, to;
        int j = 1;
        if (!todo[p])
            continue;
        if (cands[p].leader) {
            /* It has the highest position of all: it leads on. */
            if (pk_pmap_moving(m, p, &to))
                pk_pmap_move_cancel(m, p);
            pt->leader_epoch++;
            changed++;
            continue;
        }
        if (cands[p].best == PK_NODE_NONE ||
            cands[p].answers < (pt->nreplicas + 1) / 2)
            continue; /* not enough answers yet: next tick */
        if (pk_pmap_moving(m, p, &to))
            pk_pmap_move_cancel(m, p);
        old = pt->replicas[0];
        pt->replicas[0] = cands[p].best;
        for (int i = 1; i < pt->nreplicas; i++)
            if (pt->replicas[i] != cands[p].best)
                pt->replicas[j++] = pt->replicas[i];
        pt->replicas[j] = old;
        pt->leader_epoch++;
        changed++;
    }
out:
    free(cands);
    free(leads);
    return changed;
}

/* Completes promotions whose fences went out earlier, with the leader
 * asked too where too few followers answer (promote's self); a handoff
 * still goes to a follower when enough of them answer.  Returns the
 * partitions changed. */
int pk__ctrl_retry(pk_ctrl *c, pk_pmap *m, const char *names)
{
    uint32_t np = m->npartitions, changed = 0;
    uint8_t *todo = calloc(np ? 2 * (size_t)np : 1, 1);
    uint8_t *ask = calloc(m->nnodes ? m->nnodes : 1, 1);
    int any[2] = {0, 0};

    if (todo == NULL || ask == NULL)
        goto out;
    for (uint32_t i = 0; i < m->nnodes; i++)
        ask[i] = m->nodes[i].state != PK_NODE_REMOVED &&
                 pk__ctrl_is_live(names, m->nodes[i].name);
    for (uint32_t p = 0; p < np && p < c->npend; p++) {
        int h = (int)(c->pend[p] & 1);
        if (c->pend[p] / 2 != m->parts[p].leader_epoch + 1)
            c->pend[p] = 0; /* promoted since, or never */
        else if (m->parts[p].nreplicas >= 2)
            todo[(size_t)h * np + p] = any[h] = 1;
    }
    if (any[0])
        changed += promote(c, m, todo, ask, NULL, 1);
    if (any[1]) { /* still a handoff, with no preferred target now */
        uint32_t *none = malloc(np * sizeof(*none));
        for (uint32_t p = 0; none && p < np; p++)
            none[p] = PK_NODE_NONE;
        /* The leader is fenced too where the followers cannot finish (one
         * is stopped but still registered, or down).  Each fence of its
         * partitions withdraws the answering follower's promise to it --
         * for all its partitions -- until it has the map the fence was
         * for (epoch + 1, pk_repl.h); retried without a map change, the
         * handoff re-fenced at each new map's epoch + 1, and the live
         * leader lost its lease on everything it leads until the missing
         * follower came back.  Leading on at epoch + 1 ends the handoff
         * with a map change. */
        if (none)
            changed += promote(c, m, todo + np, ask, none, 1);
        free(none);
    }
    if (changed > 0)
        fprintf(stderr, "partkv: controller: %u fenced partitions promoted\n",
                changed);
out:
    free(todo);
    free(ask);
    return (int)changed;
}

#define STEPPED_EVERY 10 /* ticks between asking leaders for them */

/* Partitions whose leader was fenced by a controller that died before its
 * CAS: every live leader lists them (PK.REPL STEPPED); they are promoted.
 * Returns the partitions changed. */
int pk__ctrl_orphans(pk_ctrl *c, pk_pmap *m, const char *names)
{
    static const char *const argv[] = {"PK.REPL", "STEPPED"};
    uint32_t np = m->npartitions, changed = 0;
    uint8_t *todo = calloc(np ? np : 1, 1);
    uint8_t *ask = calloc(m->nnodes ? m->nnodes : 1, 1);
    int any = 0;

    if (todo == NULL || ask == NULL || ++c->stepped_tick < STEPPED_EVERY)
        goto out;
    c->stepped_tick = 0;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        pk_sclient **cli;
        pk_rr *r = NULL;
        ask[i] = m->nodes[i].state != PK_NODE_REMOVED &&
                 pk__ctrl_is_live(names, m->nodes[i].name);
        if (!ask[i] || (cli = pk__ctrl_peer_of(c, m->nodes[i].addr)) == NULL ||
            pk__ctrl_call_for(cli, &r, 2, argv, NULL, SHORT_CALL_MS) != PK_OK)
            continue;
        for (size_t k = 0; r->type == PK_RR_ARRAY && k < r->n; k++) {
            int64_t p = r->elems[k].integer;
            if (p >= 0 && (uint64_t)p < np && m->parts[p].nreplicas >= 2 &&
                m->parts[p].replicas[0] == i)
                todo[p] = any = 1;
        }
        pk_rr_free(r);
    }
    if (any && (changed = promote(c, m, todo, ask, NULL, 1)) > 0)
        fprintf(stderr,
                "partkv: controller: %u partitions fenced by an "
                "earlier controller promoted\n",
                changed);
out:
    free(todo);
    free(ask);
    return (int)changed;
}

/* Promotes a follower of every partition whose leader is not registered.
 * Returns the partitions changed. */
int pk__ctrl_failover(pk_ctrl *c, pk_pmap *m, const char *names)
{
    uint32_t np = m->npartitions, changed = 0;
    uint8_t *todo = calloc(np, 1);
    uint8_t *ask = calloc(m->nnodes ? m->nnodes : 1, 1);
    int any = 0;

    if (todo == NULL || ask == NULL)
        goto out;
    for (uint32_t i = 0; i < m->nnodes; i++)
        ask[i] = m->nodes[i].state != PK_NODE_REMOVED &&
                 pk__ctrl_is_live(names, m->nodes[i].name);
    for (uint32_t p = 0; p < np; p++) {
        const pk_partition *pt = &m->parts[p];
        if (pt->nreplicas >= 2 && !ask[pt->replicas[0]])
            todo[p] = any = 1;
    }
    if (any && (changed = promote(c, m, todo, ask, NULL, 0)) > 0)
        fprintf(stderr, "partkv: controller: %u partitions have a new leader\n",
                changed);
out:
    free(todo);
    free(ask);
    return (int)changed;
}

/* PK.REPL HANDOFF to leader l for its partitions in todo. */
static void handoff(pk_ctrl *c, const pk_pmap *m, uint32_t l,
                    const uint8_t *todo)
{
    uint32_t n = 0;
    const char **argv;
    char *nums;
    pk_sclient **cli;
    pk_rr *r = NULL;

    for (uint32_t p = 0; p < m->npartitions; p++)
        n += todo[p] && m->parts[p].replicas[0] == l;
    if (n == 0 || (cli = pk__ctrl_peer_of(c, m->nodes[l].addr)) == NULL)
        return;
    argv = malloc((2 + (size_t)n) * sizeof(*argv));
    nums = malloc((size_t)n * 12);
    if (argv && nums) {
        argv[0] = "PK.REPL";
        argv[1] = "HANDOFF";
        for (uint32_t p = 0, a = 2; p < m->npartitions; p++)
            if (todo[p] && m->parts[p].replicas[0] == l) {
                snprintf(nums + 12 * (a - 2), 12, "%u", p);
                argv[a] = nums + 12 * (a - 2);
                a++;
            }
        if (pk__ctrl_call_for(cli, &r, 2 + (int)n, argv, NULL, SHORT_CALL_MS) ==
            PK_OK)
            pk_rr_free(r);
    }
    free(argv);
    free(nums);
}

#define BALANCE_MAX 2048 /* leader handoffs per round */
/* Ticks between balancing rounds: each costs a map CAS, which the embedded
 * coordinator persists (fsync) on its host's loop. */
#define BALANCE_EVERY 10

/*
 * Range scheme: the ranges flagged PK_PART_MERGING go to the leader of
 * their left neighbour when it is one of their followers (pk_split.h:
 * merges) and the two together are under half of --split-qps by the last
 * poll of the load, into todo / want, the counts adjusted; both are
 * pinned (pin:
 * balancing by counts leaves them, or it could take the neighbour away
 * as fast as the range follows it).  Returns how many.
 */
static uint32_t colocate(const pk_ctrl *c, const pk_pmap *m, const uint8_t *ask,
                         uint32_t *cnt, uint8_t *todo, uint32_t *want,
                         uint8_t *pin)
{
    pk_range *idx = NULL;
    uint32_t n = 0;

    if (m->scheme != PK_SCHEME_RANGE || pk_range_from_pmap(m, &idx) != PK_OK)
        return 0;
    for (uint32_t q = 0; q < m->npartitions; q++) {
        const pk_partition *qt = &m->parts[q];
        uint32_t p, x, l = qt->replicas[0];
        int follows = 0;
        if (!(qt->flags & PK_PART_MERGING) || qt->nreplicas < 2 ||
            qt->lo_len == 0 ||
            pk_range_lookup_below(idx, qt->lo, qt->lo_len, &p) != PK_OK ||
            (x = pk_pmap_leader(m, p)) == PK_NODE_NONE)
            continue;
        pin[p] = pin[q] = 1;
        /* Not while the pair is busy: its leader would only hand it back
         * when the load returns (the node that flagged q knows q's load,
         * not p's). */
        if (x == l || !ask[x] ||
            (c->load_ok && c->srv->cfg.split_qps > 0 && q < c->nload &&
             p < c->nload &&
             c->load[p] + c->load[q] >= (double)c->srv->cfg.split_qps / 2))
            continue;
        for (int i = 1; i < qt->nreplicas; i++)
            follows |= qt->replicas[i] == x;
        if (!follows)
            continue;
        todo[q] = 1;
        want[q] = x;
        cnt[l]--;
        cnt[x]++;
        n++;
    }
    pk_range_free(idx);
    return n;
}

#define LOAD_EVERY 5     /* balancing rounds between polls of the load */
#define LOAD_HOLD 10     /* rounds after a handoff by load before another */
#define LOAD_FLOOR 100.0 /* requests/s: a smaller gain is not worth one */

/* A field of a PK.PARTITIONS entry (name, value, ...) as a number. */
static double entry_number(const pk_rr *e, const char *name)
{
    for (size_t i = 0; e->type == PK_RR_ARRAY && i + 1 < e->n; i += 2) {
        const pk_rr *k = &e->elems[i], *v = &e->elems[i + 1];
        if (k->str == NULL || strcmp(k->str, name) != 0)
            continue;
        return v->type == PK_RR_INT ? (double)v->integer
               : v->str             ? atof(v->str)
                                    : 0;
    }
    return -1;
}

/* Range scheme: every node's PK.PARTITIONS, each range's reads + writes
 * per second from its leader into c->load.  1 when every node answered. */
static int poll_loads(pk_ctrl *c, const pk_pmap *m, const uint8_t *ask)
{
    const char *argv[] = {"PK.PARTITIONS"};

    if (c->nload < m->npartitions) {
        double *n = realloc(c->load, m->npartitions * sizeof(*n));
        if (n == NULL)
            return 0;
        memset(n + c->nload, 0, (m->npartitions - c->nload) * sizeof(*n));
        c->load = n;
        c->nload = m->npartitions;
    }
    for (uint32_t p = 0; p < m->npartitions; p++)
        c->load[p] = 0; /* a range without data is not listed */
    for (uint32_t id = 0; id < m->nnodes; id++) {
        pk_sclient **cli;
        pk_rr *r = NULL;
        if (!ask[id])
            continue;
        if ((cli = pk__ctrl_peer_of(c, m->nodes[id].addr)) == NULL ||
            pk__ctrl_call_for(cli, &r, 1, argv, NULL, SHORT_CALL_MS) != PK_OK)
            return 0;
        for (size_t i = 0; r->type == PK_RR_ARRAY && i < r->n; i++) {
            double p = entry_number(&r->elems[i], "partition");
            if (p >= 0 && p < m->npartitions &&
                pk_pmap_leader(m, (uint32_t)p) == id)
                c->load[(uint32_t)p] =
                    entry_number(&r->elems[i], "reads_per_sec") +
                    entry_number(&r->elems[i], "writes_per_sec");
        }
        pk_rr_free(r);
    }
    return 1;
}

/*
 * One handoff that evens the load (range scheme): of the ranges the node
 * with the most load leads, the one whose move to one of its followers
 * lowers the larger of the two nodes' loads the most -- if by at least
 * LOAD_FLOOR and a tenth.  nl (per node) and cnt follow it.  Returns 1 or 0.
 */
static uint32_t load_move(const pk_ctrl *c, const pk_pmap *m,
                          const uint8_t *ask, const uint8_t *pin, double *nl,
                          uint32_t *cnt, uint8_t *todo, uint32_t *want)
{
    uint32_t h = PK_NODE_NONE, bp = 0, bf = PK_NODE_NONE;
    double gain = 0;

    for (uint32_t id = 0; id < m->nnodes; id++)
        if (ask[id] && (h == PK_NODE_NONE || nl[id] > nl[h]))
            h = id;
    /* The loads are of the map of the last poll: ranges split since
     * have none yet. */
    for (uint32_t p = 0;
         h != PK_NODE_NONE && p < m->npartitions && p < c->nload; p++) {
        const pk_partition *pt = &m->parts[p];
        double l = c->load[p];
        if (pt->nreplicas < 2 || pt->replicas[0] != h || pin[p] || todo[p] ||
            l <= 0)
            continue;
        for (int i = 1; i < pt->nreplicas; i++) {
            uint32_t f = pt->replicas[i];
            double after = nl[h] - l > nl[f] + l ? nl[h] - l : nl[f] + l;
            if (ask[f] && nl[h] - after > gain) {
                gain = nl[h] - after;
                bp = p;
                bf = f;
            }
        }
    }
    if (bf == PK_NODE_NONE || gain < LOAD_FLOOR || gain < nl[h] / 10)
        return 0;
    todo[bp] = 1;
    want[bp] = bf;
    cnt[h]--;
    cnt[bf]++;
    nl[h] -= c->load[bp];
    nl[bf] += c->load[bp];
    return 1;
}

/*
 * With every node up and nothing moving, hands leaderships from nodes that
 * lead more than their share to followers that lead less (a node that came
 * back after a failover leads nothing), and ranges to be merged to their
 * left neighbour's leader (colocate; those are not balanced otherwise).
 * On the range scheme it balances the load too: every LOAD_EVERY rounds it
 * asks each node for its ranges' rates; a range may go from the node with
 * the most load to a follower (load_move, at most one every LOAD_HOLD
 * rounds), and balancing by counts moves no range to a node that would
 * then carry more load than the one it leaves, so the two do not undo
 * each other.  The leader stops serving those partitions and releases
 * them to its followers (PK.REPL HANDOFF); the promotion is then the
 * failover's.  Returns the partitions changed.
 */
int pk__ctrl_balance(pk_ctrl *c, pk_pmap *m, const char *names)
{
    uint32_t np = m->npartitions, nn = m->nnodes ? m->nnodes : 1;
    uint32_t *cnt = calloc(nn, sizeof(*cnt)), *want = NULL;
    uint8_t *todo = NULL, *pin = NULL, *ask = calloc(nn, 1);
    double *nl = NULL; /* range scheme: the load each node leads */
    uint32_t total = 0, up = 0, n = 0, changed = 0, to;

    if (cnt == NULL || ask == NULL || ++c->balance_tick < BALANCE_EVERY)
        goto out;
    c->balance_tick = 0;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        if (m->nodes[i].state == PK_NODE_REMOVED)
            continue;
        if (m->nodes[i].state != PK_NODE_UP ||
            !pk__ctrl_is_live(names, m->nodes[i].name))
            goto out;
        ask[i] = 1;
        up++;
    }
    for (uint32_t p = 0; p < np; p++) {
        if (pk_pmap_moving(m, p, &to))
            goto out;
        if (m->parts[p].nreplicas >= 2) {
            cnt[m->parts[p].replicas[0]]++;
            total++;
        }
    }
    if (up == 0 || total == 0)
        goto out;
    todo = calloc(np, 1);
    pin = calloc(np, 1);
    want = calloc(np, sizeof(*want));
    if (todo == NULL || pin == NULL || want == NULL)
        goto out;
    if (m->scheme == PK_SCHEME_RANGE && (nl = calloc(nn, sizeof(*nl))) &&
        (++c->load_round >= LOAD_EVERY || !c->load_ok)) {
        c->load_round = 0;
        c->load_ok = poll_loads(c, m, ask);
    }
    n = colocate(c, m, ask, cnt, todo, want, pin);
    if (nl) {
        for (uint32_t p = 0; c->load_ok && p < np && p < c->nload; p++)
            if (m->parts[p].nreplicas > 0)
                nl[m->parts[p].replicas[0]] += c->load[p];
        if (c->load_hold > 0)
            c->load_hold--;
        else if (c->load_ok && n == 0 &&
                 (n = load_move(c, m, ask, pin, nl, cnt, todo, want)))
            c->load_hold = LOAD_HOLD;
    }
    for (uint32_t p = 0; p < np && n < BALANCE_MAX; p++) {
        const pk_partition *pt = &m->parts[p];
        uint32_t l = pt->replicas[0], x = PK_NODE_NONE;
        double lp = nl && p < c->nload ? c->load[p] : 0;
        if (pt->nreplicas < 2 || cnt[l] * up <= total || pin[p] || todo[p])
            continue; /* not above its share, or to be merged */
        for (int i = 1; i < pt->nreplicas; i++) {
            uint32_t f = pt->replicas[i];
            if (ask[f] && cnt[f] + 2 <= cnt[l] &&
                (uint64_t)cnt[f] * up < total &&
                (nl == NULL || nl[f] + lp <= nl[l] - lp) &&
                (x == PK_NODE_NONE || cnt[f] < cnt[x]))
                x = f;
        }
        if (x == PK_NODE_NONE)
            continue;
        todo[p] = 1;
        want[p] = x;
        cnt[l]--;
        cnt[x]++;
        if (nl) {
            nl[l] -= lp;
            nl[x] += lp;
        }
        n++;
    }
    if (n == 0)
        goto out;
    for (uint32_t l = 0; l < m->nnodes; l++)
        handoff(c, m, l, todo);
    changed = promote(c, m, todo, ask, want, 0);
    if (changed)
        fprintf(stderr,
                "partkv: controller: %u leaderships handed over to "
                "balance the nodes or to merge ranges\n",
                changed);
out:
    free(cnt);
    free(want);
    free(todo);
    free(pin);
    free(nl);
    free(ask);
    return (int)changed;
}

/* Gives the follower places of nodes DOWN past --replace-after to live
 * nodes that hold the partition not yet.  Returns the places moved. */
int pk__ctrl_replace(pk_ctrl *c, pk_pmap *m)
{
    uint64_t after = c->srv->cfg.replace_after_ms;
    uint32_t *load, moved = 0;
    int64_t now = pk__ctrl_mono_ms();

    if (after == 0 || c->ndowns == 0)
        return 0;
    load = calloc(m->nnodes ? m->nnodes : 1, sizeof(*load));
    if (load == NULL)
        return 0;
    for (uint32_t p = 0; p < m->npartitions; p++)
        for (int i = 0; i < m->parts[p].nreplicas; i++)
            load[m->parts[p].replicas[i]]++;
    for (uint32_t d = 0; d < m->nnodes; d++) {
        down *dn;
        if (m->nodes[d].state != PK_NODE_DOWN ||
            (dn = pk__ctrl_down_of(c, m->nodes[d].name, 0)) == NULL ||
            now - dn->since < (int64_t)after)
            continue;
        for (uint32_t p = 0; p < m->npartitions; p++) {
            pk_partition *pt = &m->parts[p];
            uint32_t best = PK_NODE_NONE;
            for (int i = 1; i < pt->nreplicas; i++) {
                if (pt->replicas[i] != d)
                    continue;
                for (uint32_t n = 0; n < m->nnodes; n++) {
                    int holds = 0;
                    if (m->nodes[n].state != PK_NODE_UP)
                        continue;
                    for (int k = 0; k < pt->nreplicas; k++)
                        holds |= pt->replicas[k] == n;
                    for (int k = 0; k < pt->nlearners; k++)
                        holds |= pt->learners[k] == n;
                    if (!holds &&
                        (best == PK_NODE_NONE || load[n] < load[best]))
                        best = n;
                }
                if (best != PK_NODE_NONE) {
                    pt->replicas[i] = best;
                    load[best]++;
                    load[d]--;
                    moved++;
                }
                break;
            }
        }
    }
    free(load);
    if (moved)
        fprintf(stderr,
                "partkv: controller: %u replicas re-created on other "
                "nodes\n",
                moved);
    return (int)moved;
}

/*
 * Unit tests of pk_plan: one property per test.  Shares are taken from
 * the plan where the test is about something else; the tests about
 * balance compute the expected counts themselves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap.h"

/* A map of P partitions (slots scheme when P == PK_SLOTS), R replicas and
 * n nodes "n0".."n<n-1>" of weight 1, zones zones[i % nzones] when nzones.
 * Not yet assigned. */
static pk_pmap *map_new(uint32_t np, uint8_t r, uint32_t n,
                        const char *const *zones, uint32_t nzones)
{
    pk_pmap *m = NULL;
    pk_scheme scheme = np == PK_SLOTS ? PK_SCHEME_SLOTS : PK_SCHEME_HASH;

    assert_int_equal(pk_pmap_new(scheme, PK_HASH_XXH3, np, r, &m), PK_OK);
    for (uint32_t i = 0; i < n; i++) {
        char name[16];
        uint32_t id;
        snprintf(name, sizeof(name), "n%u", i);
        assert_int_equal(pk_pmap_node_add(m, name, "127.0.0.1:7000",
                                          nzones ? zones[i % nzones] : NULL,
                                          1.0, &id),
                         PK_OK);
        assert_int_equal(id, i);
    }
    return m;
}

static pk_pmap *map_initial(uint32_t np, uint8_t r, uint32_t n)
{
    pk_pmap *m = map_new(np, r, n, NULL, 0);

    assert_int_equal(pk_plan_initial(m), PK_OK);
    return m;
}

static int eligible(const pk_pmap *m, uint32_t n)
{
    return m->nodes[n].state == PK_NODE_UP && m->nodes[n].weight > 0;
}

static void count(const pk_pmap *m, uint32_t *reps, uint32_t *leads)
{
    memset(reps, 0, m->nnodes * sizeof(*reps));
    memset(leads, 0, m->nnodes * sizeof(*leads));
    for (uint32_t p = 0; p < m->npartitions; p++) {
        for (uint32_t i = 0; i < m->parts[p].nreplicas; i++) {
            reps[m->parts[p].replicas[i]]++;
        }
        leads[m->parts[p].replicas[0]]++;
    }
}

static uint32_t lo_of(double s)
{
    return (uint32_t)(s + 1e-6);
}

static uint32_t hi_of(double s)
{
    uint32_t lo = lo_of(s);
    return lo + (s - lo > 1e-6);
}

/* Every partition has R replicas on distinct eligible nodes. */
static void check_placement(const pk_pmap *m)
{
    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        assert_int_equal(pt->nreplicas, m->replicas);
        for (uint32_t i = 0; i < pt->nreplicas; i++) {
            assert_true(eligible(m, pt->replicas[i]));
            for (uint32_t j = 0; j < i; j++) {
                assert_int_not_equal(pt->replicas[i], pt->replicas[j]);
            }
        }
    }
}

/* Counts of m within [floor, ceil] of the plan's shares. */
static void check_balance(const pk_pmap *m, const pk_plan *pl)
{
    uint32_t *reps = calloc(m->nnodes, sizeof(*reps));
    uint32_t *leads = calloc(m->nnodes, sizeof(*leads));

    assert_non_null(reps);
    assert_non_null(leads);
    count(m, reps, leads);
    for (uint32_t n = 0; n < m->nnodes; n++) {
        if (!eligible(m, n)) {
            assert_int_equal(reps[n], 0);
            continue;
        }
        assert_in_range(reps[n], lo_of(pl->share[n]), hi_of(pl->share[n]));
        assert_in_range(leads[n], lo_of(pl->leader_share[n]),
                        hi_of(pl->leader_share[n]));
        assert_int_equal(reps[n], pl->replicas_after[n]);
        assert_int_equal(leads[n], pl->leaders_after[n]);
    }
    free(reps);
    free(leads);
}

static pk_plan *change(pk_pmap *m, pk_change_kind kind, uint32_t node,
                       double weight, uint8_t r)
{
    pk_change c = {.kind = kind,
                   .node = node,
                   .weight = weight,
                   .replicas = r,
                   .name = "new",
                   .addr = "127.0.0.1:7999"};
    pk_plan *pl = NULL;

    assert_int_equal(pk_plan_change(m, &c, &pl), PK_OK);
    assert_non_null(pl);
    return pl;
}

/* Applies pl to m and checks the result and the plan's bound. */
static void apply_check(pk_pmap *m, pk_plan *pl)
{
    assert_int_equal(pl->ndata, pl->min_data_moves);
    assert_int_equal(pk_plan_apply(m, pl), PK_OK);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    check_placement(m);
    check_balance(m, pl);
}

static void test_initial_contiguous(void **state)
{
    pk_pmap *m = map_new(PK_SLOTS, 1, 3, NULL, 0);
    static const uint32_t first[] = {0, 5461, 10923, PK_SLOTS};

    (void)state;
    assert_int_equal(pk_plan_initial(m), PK_OK);
    assert_int_equal(m->epoch, 1);
    for (uint32_t n = 0; n < 3; n++) {
        for (uint32_t p = first[n]; p < first[n + 1]; p++) {
            assert_int_equal(m->parts[p].nreplicas, 1);
            assert_int_equal(m->parts[p].replicas[0], n);
            assert_int_equal(m->parts[p].leader_epoch, 1);
        }
    }
    /* Nothing unowned is left: a second call changes nothing. */
    assert_int_equal(pk_plan_initial(m), PK_OK);
    assert_int_equal(m->epoch, 1);
    pk_pmap_free(m);
}

static void test_initial_balanced_replicated(void **state)
{
    pk_pmap *m = map_initial(1024, 3, 7);
    pk_plan *pl = NULL;

    (void)state;
    check_placement(m);
    assert_int_equal(pk_plan_compute(m, &pl), PK_OK);
    check_balance(m, pl);
    assert_int_equal(pl->nmoves, 0);
    /* Leaders stay in contiguous runs, in node order. */
    for (uint32_t p = 1; p < 1024; p++) {
        assert_in_range(m->parts[p].replicas[0], m->parts[p - 1].replicas[0],
                        m->parts[p - 1].replicas[0] + 1);
    }
    assert_int_equal(m->parts[0].replicas[0], 0);
    assert_int_equal(m->parts[1023].replicas[0], 6);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_initial_partial(void **state)
{
    pk_pmap *m = map_new(64, 2, 4, NULL, 0);
    pk_pmap *before = NULL;

    (void)state;
    for (uint32_t p = 0; p < 8; p++) {
        m->parts[p].nreplicas = 2;
        m->parts[p].replicas[0] = 0;
        m->parts[p].replicas[1] = 1;
    }
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    assert_int_equal(pk_plan_initial(m), PK_OK);
    assert_int_equal(m->epoch, before->epoch + 1);
    check_placement(m);
    for (uint32_t p = 0; p < 8; p++) {
        assert_memory_equal(m->parts[p].replicas, before->parts[p].replicas,
                            2 * sizeof(uint32_t));
    }
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_balanced_map_plans_nothing(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 2, 5);
    pk_plan *pl = NULL;

    (void)state;
    assert_int_equal(pk_plan_compute(m, &pl), PK_OK);
    assert_int_equal(pl->nmoves, 0);
    assert_int_equal(pl->min_data_moves, 0);
    assert_true(pl->max_dev_after < 1.0);
    pk_plan_free(pl);
    /* After a change is applied, the result is balanced: again nothing. */
    pl = change(m, PK_CHANGE_WEIGHT, 3, 2.0, 0);
    apply_check(m, pl);
    pk_plan_free(pl);
    assert_int_equal(pk_plan_compute(m, &pl), PK_OK);
    assert_int_equal(pl->nmoves, 0);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_add_node_10_to_11(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 1, 10);
    pk_plan *pl;

    (void)state;
    pl = change(m, PK_CHANGE_ADD, 0, 1.0, 0);
    assert_in_range(pl->ndata, 1489, 1490);
    assert_int_equal(pl->ntransfers, 0);
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        assert_int_equal(pl->moves[i].to, 10);
        assert_int_equal(pl->moves[i].role, PK_ROLE_LEADER);
    }
    assert_true(pl->max_dev_after <= 1.0);
    print_message("10->11 nodes, P=16384, R=1: %u data moves, max dev "
                  "before %.3f after %.3f\n",
                  pl->ndata, pl->max_dev_before, pl->max_dev_after);
    apply_check(m, pl);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

/* With sizes, a node hands over its smallest partitions: joining a 4th
 * node to 3 moves the same number of partitions, and the fewest bytes. */
static void test_sized_moves_smallest(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 1, 3);
    uint64_t *size = malloc(PK_SLOTS * sizeof(*size));
    uint64_t moved = 0, moved_plain = 0, least = 0;
    pk_plan *sized = NULL, *plain = NULL;
    uint32_t id;

    (void)state;
    assert_non_null(size);
    for (uint32_t p = 0; p < PK_SLOTS; p++) /* a few large partitions */
        size[p] = p % 7 == 0 ? 1000000 + p : 100 + p % 13;
    assert_int_equal(pk_pmap_node_add(m, "n3", NULL, NULL, 1.0, &id), PK_OK);
    assert_int_equal(
        pk_plan_compute_sized(m, size, PK_PLAN_FEWEST_BYTES, &sized), PK_OK);
    assert_int_equal(pk_plan_compute(m, &plain), PK_OK);
    assert_int_equal(sized->ndata, plain->ndata);
    assert_true(sized->max_dev_after <= 1.0);
    for (uint32_t i = 0; i < sized->nmoves; i++)
        moved += size[sized->moves[i].part];
    for (uint32_t i = 0; i < plain->nmoves; i++)
        moved_plain += size[plain->moves[i].part];
    /* The least any balanced plan copies: each node's excess, smallest
     * partitions first -- here all of them are small ones. */
    for (uint32_t n = 0; n < 3; n++) {
        uint32_t excess = sized->replicas_before[n] - sized->replicas_after[n];
        uint64_t *mine = malloc(PK_SLOTS * sizeof(*mine));
        uint32_t k = 0;
        for (uint32_t p = 0; p < PK_SLOTS; p++)
            if (pk_pmap_leader(m, p) == n)
                mine[k++] = size[p];
        for (uint32_t a = 0; a < excess; a++) { /* selection: k is small */
            uint32_t best = a;
            for (uint32_t b = a + 1; b < k; b++)
                if (mine[b] < mine[best])
                    best = b;
            uint64_t t = mine[a];
            mine[a] = mine[best];
            mine[best] = t;
            least += mine[a];
        }
        free(mine);
    }
    print_message("3->4 nodes: bytes moved sized %llu, unsized %llu, least "
                  "%llu\n",
                  (unsigned long long)moved, (unsigned long long)moved_plain,
                  (unsigned long long)least);
    assert_int_equal(moved, least);
    assert_true(moved < moved_plain);
    apply_check(m, sized);
    pk_plan_free(sized);
    pk_plan_free(plain);
    free(size);
    pk_pmap_free(m);
}

/* Fair sizing: the joining node's bytes end near its share of all bytes,
 * whatever the partitions' sizes, with the same partition counts. */
static void test_sized_fair_bytes(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 1, 3);
    uint64_t *size = malloc(PK_SLOTS * sizeof(*size)), total = 0, got = 0;
    pk_plan *fair = NULL, *plain = NULL;
    uint32_t id;

    (void)state;
    assert_non_null(size);
    for (uint32_t p = 0; p < PK_SLOTS; p++) { /* skewed: 1 to ~1000 */
        size[p] = 1 + (uint64_t)(p * 2654435761u % 1000) *
                          (uint64_t)(p * 2654435761u % 1000) / 1000;
        total += size[p];
    }
    assert_int_equal(pk_pmap_node_add(m, "n3", NULL, NULL, 1.0, &id), PK_OK);
    assert_int_equal(pk_plan_compute_sized(m, size, PK_PLAN_FAIR_BYTES, &fair),
                     PK_OK);
    assert_int_equal(pk_plan_compute(m, &plain), PK_OK);
    assert_int_equal(fair->ndata, plain->ndata);
    assert_true(fair->max_dev_after <= 1.0);
    for (uint32_t i = 0; i < fair->nmoves; i++)
        got += size[fair->moves[i].part];
    print_message("3->4 nodes, fair bytes: new node holds %.2f%% of bytes\n",
                  100.0 * (double)got / (double)total);
    assert_true(got > total / 4 - total / 100 && got < total / 4 + total / 100);
    assert_int_equal(pk_plan_compute_sized(m, size, 7, &plain), PK_EINVAL);
    apply_check(m, fair);
    pk_plan_free(fair);
    pk_plan_free(plain);
    free(size);
    pk_pmap_free(m);
}

static void test_remove_moves_only_its_partitions(void **state)
{
    pk_pmap *m = map_initial(4096, 2, 6);
    pk_pmap *before = NULL;
    pk_plan *pl;
    uint32_t held = 0;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    pl = change(m, PK_CHANGE_REMOVE, 2, 0, 0);
    assert_int_equal(m->nodes[2].state, PK_NODE_DRAINING);
    assert_int_equal(pl->retire, 2);
    for (uint32_t p = 0; p < 4096; p++) {
        held += m->parts[p].replicas[0] == 2 || m->parts[p].replicas[1] == 2;
    }
    assert_int_equal(pl->ndata, held);
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        if (!pl->moves[i].transfer) {
            assert_int_equal(pl->moves[i].from, 2);
        }
    }
    apply_check(m, pl);
    assert_int_equal(m->nodes[2].state, PK_NODE_REMOVED);
    for (uint32_t p = 0; p < 4096; p++) {
        const pk_partition *a = &before->parts[p], *b = &m->parts[p];
        if (a->replicas[0] != 2 && a->replicas[1] != 2) {
            assert_int_equal(a->replicas[0], b->replicas[0]);
            assert_int_equal(a->replicas[1], b->replicas[1]);
        }
    }
    pk_plan_free(pl);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_drain(void **state)
{
    pk_pmap *m = map_initial(1024, 3, 5);
    pk_plan *pl;

    (void)state;
    pl = change(m, PK_CHANGE_DRAIN, 4, 0, 0);
    assert_int_equal(pl->retire, PK_NODE_NONE);
    assert_int_equal(pl->ndata, pl->replicas_before[4]);
    assert_int_equal(pl->replicas_after[4], 0);
    apply_check(m, pl);
    assert_int_equal(m->nodes[4].state, PK_NODE_DRAINING);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_down_node_replicas_move(void **state)
{
    pk_pmap *m = map_initial(1024, 2, 4);
    pk_plan *pl = NULL;

    (void)state;
    assert_int_equal(pk_pmap_node_set_state(m, 1, PK_NODE_DOWN), PK_OK);
    assert_int_equal(pk_plan_compute(m, &pl), PK_OK);
    assert_int_equal(pl->ndata, pl->replicas_before[1]);
    apply_check(m, pl);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_weight_doubles_share(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 1, 4);
    pk_plan *pl;

    (void)state;
    pl = change(m, PK_CHANGE_WEIGHT, 0, 2.0, 0);
    /* weights 2,1,1,1: node 0 gets 2/5 of 16384 = 6553.6 */
    assert_in_range(pl->replicas_after[0], 6553, 6554);
    for (uint32_t n = 1; n < 4; n++) {
        assert_in_range(pl->replicas_after[n], 3276, 3277);
        assert_true(pl->replicas_after[n] <= pl->replicas_before[n]);
    }
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        assert_int_equal(pl->moves[i].to, 0);
    }
    apply_check(m, pl);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_replicas_up(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 1, 5);
    pk_pmap *before = NULL;
    pk_plan *pl;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    pl = change(m, PK_CHANGE_REPLICAS, 0, 0, 3);
    assert_int_equal(pl->ndata, 2 * PK_SLOTS);
    assert_int_equal(pl->ntransfers, 0);
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        assert_int_equal(pl->moves[i].from, PK_NODE_NONE);
        assert_int_equal(pl->moves[i].role, PK_ROLE_FOLLOWER);
    }
    apply_check(m, pl);
    for (uint32_t p = 0; p < PK_SLOTS; p++) {
        assert_int_equal(m->parts[p].replicas[0], before->parts[p].replicas[0]);
        assert_int_equal(m->parts[p].leader_epoch,
                         before->parts[p].leader_epoch);
    }
    pk_plan_free(pl);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_replicas_down(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 3, 7);
    pk_pmap *before = NULL;
    pk_plan *pl;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    pl = change(m, PK_CHANGE_REPLICAS, 0, 0, 2);
    assert_int_equal(pl->ndata, PK_SLOTS);
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        assert_int_equal(pl->moves[i].to, PK_NODE_NONE);
        assert_int_equal(pl->moves[i].role, PK_ROLE_FOLLOWER);
        /* drops come from nodes above their new quota */
        assert_true(pl->replicas_before[pl->moves[i].from] >
                    pl->replicas_after[pl->moves[i].from]);
    }
    apply_check(m, pl);
    for (uint32_t p = 0; p < PK_SLOTS; p++) {
        assert_int_equal(m->parts[p].replicas[0], before->parts[p].replicas[0]);
    }
    pk_plan_free(pl);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void check_zones(const pk_pmap *m)
{
    for (uint32_t p = 0; p < m->npartitions; p++) {
        const pk_partition *pt = &m->parts[p];
        for (uint32_t i = 0; i < pt->nreplicas; i++) {
            for (uint32_t j = 0; j < i; j++) {
                assert_string_not_equal(m->nodes[pt->replicas[i]].zone,
                                        m->nodes[pt->replicas[j]].zone);
            }
        }
    }
}

static void test_zones_distinct(void **state)
{
    static const char *const zones[] = {"za", "zb", "zc"};
    pk_pmap *m = map_new(4096, 3, 6, zones, 3);
    pk_plan *pl;

    (void)state;
    assert_int_equal(pk_plan_initial(m), PK_OK);
    check_placement(m);
    check_zones(m);
    /* Removing one of zone a's two nodes leaves the other with every
     * partition's zone-a replica. */
    pl = change(m, PK_CHANGE_REMOVE, 0, 0, 0);
    assert_int_equal(pl->share[3], 4096.0);
    apply_check(m, pl);
    check_zones(m);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_zones_fewer_than_r(void **state)
{
    static const char *const zones[] = {"za", "zb"};
    pk_pmap *m = map_new(1024, 3, 4, zones, 2);

    (void)state;
    assert_int_equal(pk_plan_initial(m), PK_OK);
    check_placement(m);
    for (uint32_t p = 0; p < 1024; p++) {
        uint32_t za = 0;
        for (uint32_t i = 0; i < 3; i++) {
            za += strcmp(m->nodes[m->parts[p].replicas[i]].zone, "za") == 0;
        }
        assert_in_range(za, 1, 2);
    }
    pk_pmap_free(m);
}

static void test_infeasible_leaves_map(void **state)
{
    pk_pmap *m = map_initial(256, 2, 2);
    pk_pmap *before = NULL;
    pk_change c = {.kind = PK_CHANGE_REPLICAS, .replicas = 3};
    pk_plan *pl = (pk_plan *)&c; /* must stay untouched */

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EINFEASIBLE);
    assert_ptr_equal(pl, &c);
    assert_true(pk_pmap_equal(m, before));
    c.kind = PK_CHANGE_REMOVE;
    c.node = 1;
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EINFEASIBLE);
    assert_true(pk_pmap_equal(m, before));
    c.kind = PK_CHANGE_ADD; /* duplicate name */
    c.name = "n0";
    c.weight = 1;
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EEXIST);
    assert_true(pk_pmap_equal(m, before));
    c.kind = PK_CHANGE_DRAIN;
    c.node = 9;
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_ENOTFOUND);
    assert_true(pk_pmap_equal(m, before));
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_no_eligible_node(void **state)
{
    pk_pmap *m = map_initial(64, 1, 1);
    pk_pmap *before = NULL;
    pk_change c = {.kind = PK_CHANGE_DRAIN, .node = 0};
    pk_plan *pl = NULL;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EEMPTY);
    assert_null(pl);
    assert_true(pk_pmap_equal(m, before));
    c.kind = PK_CHANGE_WEIGHT;
    c.weight = 0;
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EEMPTY);
    assert_true(pk_pmap_equal(m, before));
    pk_pmap_free(before);
    pk_pmap_free(m);
    m = map_new(64, 1, 0, NULL, 0);
    assert_int_equal(pk_plan_initial(m), PK_EEMPTY);
    assert_int_equal(m->epoch, 0);
    pk_pmap_free(m);
}

static void test_zone_infeasible(void **state)
{
    /* zones a, b, c, c, c, c and R = 5: at most ceil(5/3) = 2 per zone,
     * so at most 1 + 1 + 2 = 4 places. */
    static const char *const zones[] = {"a", "b", "c", "c", "c", "c"};
    pk_pmap *m = map_new(64, 5, 6, zones, 6);

    (void)state;
    assert_int_equal(pk_plan_initial(m), PK_EINFEASIBLE);
    assert_int_equal(m->epoch, 0);
    assert_int_equal(m->parts[0].nreplicas, 0);
    pk_pmap_free(m);
}

static void test_apply_rejects_stale(void **state)
{
    pk_pmap *m = map_initial(512, 2, 4);
    pk_pmap *before = NULL;
    pk_plan *pl;

    (void)state;
    pl = change(m, PK_CHANGE_DRAIN, 1, 0, 0);
    assert_true(pl->nmoves > 0);
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    /* Someone moved a partition the plan moves off node 1. */
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        pk_partition *pt = &m->parts[pl->moves[i].part];
        if (pl->moves[i].from != 1 || pl->moves[i].transfer) {
            continue;
        }
        for (uint32_t j = 0; j < pt->nreplicas; j++) {
            if (pt->replicas[j] == 1) {
                pt->replicas[j] = pl->moves[i].to;
            }
        }
        break;
    }
    pk_pmap_free(before);
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    assert_int_equal(pk_plan_apply(m, pl), PK_ESTALE);
    assert_true(pk_pmap_equal(m, before));
    pk_plan_free(pl);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_apply_twice_is_stale(void **state)
{
    pk_pmap *m = map_initial(512, 1, 3);
    pk_pmap *before = NULL;
    pk_plan *pl;

    (void)state;
    pl = change(m, PK_CHANGE_ADD, 0, 1, 0);
    assert_int_equal(pk_plan_apply(m, pl), PK_OK);
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    assert_int_equal(pk_plan_apply(m, pl), PK_ESTALE);
    assert_true(pk_pmap_equal(m, before));
    pk_plan_free(pl);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_apply_bumps_epochs(void **state)
{
    pk_pmap *m = map_initial(1024, 2, 4);
    pk_pmap *before = NULL;
    pk_plan *pl;
    uint32_t changed = 0;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), PK_OK);
    pl = change(m, PK_CHANGE_REMOVE, 0, 0, 0);
    apply_check(m, pl);
    assert_int_equal(m->epoch, before->epoch + 1);
    for (uint32_t p = 0; p < 1024; p++) {
        uint64_t e0 = before->parts[p].leader_epoch;
        if (m->parts[p].replicas[0] != before->parts[p].replicas[0]) {
            assert_int_equal(m->parts[p].leader_epoch, e0 + 1);
            changed++;
        } else {
            assert_int_equal(m->parts[p].leader_epoch, e0);
        }
    }
    assert_int_equal(changed, pl->leaders_before[0]);
    pk_plan_free(pl);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_leaders_balanced_by_transfers(void **state)
{
    pk_pmap *m = map_initial(2048, 3, 6);
    pk_plan *pl = NULL;

    (void)state;
    /* Make node 0 lead every partition it holds. */
    for (uint32_t p = 0; p < 2048; p++) {
        pk_partition *pt = &m->parts[p];
        for (uint32_t i = 1; i < pt->nreplicas; i++) {
            if (pt->replicas[i] == 0) {
                pt->replicas[i] = pt->replicas[0];
                pt->replicas[0] = 0;
            }
        }
    }
    assert_int_equal(pk_plan_compute(m, &pl), PK_OK);
    assert_int_equal(pl->ndata, 0);
    assert_true(pl->ntransfers > 0);
    assert_true(pl->max_leader_dev_before > 300);
    assert_true(pl->max_leader_dev_after < 1.0);
    for (uint32_t i = 0; i < pl->nmoves; i++) {
        assert_int_equal(pl->moves[i].transfer, 1);
    }
    apply_check(m, pl);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_bound_unreachable_still_fewest(void **state)
{
    /* n3 drains; its partition 0 already has n0, the only node below its
     * share.  The bound says 1 move; the fewest is 2: n3 -> n1 (or n2),
     * which then hands a partition to n0. */
    static const uint32_t parts[3][2] = {{3, 0}, {1, 2}, {1, 2}};
    pk_pmap *m = map_new(3, 2, 4, NULL, 0);
    pk_plan *pl = NULL;

    (void)state;
    for (uint32_t p = 0; p < 3; p++) {
        m->parts[p].nreplicas = 2;
        memcpy(m->parts[p].replicas, parts[p], sizeof(parts[p]));
    }
    assert_int_equal(pk_pmap_node_set_state(m, 3, PK_NODE_DRAINING), PK_OK);
    assert_int_equal(pk_plan_compute(m, &pl), PK_OK);
    assert_int_equal(pl->min_data_moves, 1);
    assert_int_equal(pl->ndata, 2);
    assert_int_equal(pk_plan_apply(m, pl), PK_OK);
    check_placement(m);
    check_balance(m, pl);
    for (uint32_t n = 0; n < 3; n++) {
        assert_int_equal(pl->replicas_after[n], 2);
        assert_int_equal(pl->leaders_after[n], 1);
    }
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_deterministic(void **state)
{
    pk_pmap *a = map_initial(PK_SLOTS, 3, 9), *b = map_initial(PK_SLOTS, 3, 9);
    pk_plan *pa, *pb;

    (void)state;
    pa = change(a, PK_CHANGE_ADD, 0, 2.0, 0);
    pb = change(b, PK_CHANGE_ADD, 0, 2.0, 0);
    assert_int_equal(pa->nmoves, pb->nmoves);
    assert_memory_equal(pa->moves, pb->moves, pa->nmoves * sizeof(*pa->moves));
    pk_plan_free(pa);
    pk_plan_free(pb);
    pk_pmap_free(a);
    pk_pmap_free(b);
}

static void test_plan_time_100_nodes(void **state)
{
    pk_pmap *m = map_initial(PK_SLOTS, 3, 100);
    pk_change c = {.kind = PK_CHANGE_ADD, .name = "n100", .weight = 1};
    pk_plan *pl = NULL;
    struct timespec t0, t1;
    double ms;

    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    print_message("100->101 nodes, P=16384, R=3: planned in %.1f ms, %u "
                  "data moves (bound %u), %u transfers\n",
                  ms, pl->ndata, pl->min_data_moves, pl->ntransfers);
    assert_true(ms < 1000.0);
    apply_check(m, pl);
    pk_plan_free(pl);
    pk_pmap_free(m);
}

static void test_bad_arguments(void **state)
{
    pk_pmap *m = map_initial(64, 1, 2);
    pk_change c = {.kind = (pk_change_kind)42};
    pk_plan *pl = NULL;
    pk_move bad = {.part = 64, .from = 0, .to = 1};
    pk_plan fake = {.nmoves = 1, .moves = &bad, .retire = PK_NODE_NONE};

    (void)state;
    assert_int_equal(pk_plan_compute(NULL, &pl), PK_EINVAL);
    assert_int_equal(pk_plan_compute(m, NULL), PK_EINVAL);
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EINVAL);
    c.kind = PK_CHANGE_REPLICAS;
    c.replicas = 0;
    assert_int_equal(pk_plan_change(m, &c, &pl), PK_EINVAL);
    assert_int_equal(pk_plan_apply(m, &fake), PK_EINVAL);
    bad.part = 0;
    bad.to = 0;
    assert_int_equal(pk_plan_apply(m, &fake), PK_EINVAL);
    assert_int_equal(m->epoch, 1);
    assert_int_equal(pk_plan_initial(NULL), PK_EINVAL);
    pk_plan_free(NULL);
    pk_pmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initial_contiguous),
        cmocka_unit_test(test_initial_balanced_replicated),
        cmocka_unit_test(test_initial_partial),
        cmocka_unit_test(test_balanced_map_plans_nothing),
        cmocka_unit_test(test_sized_moves_smallest),
        cmocka_unit_test(test_sized_fair_bytes),
        cmocka_unit_test(test_add_node_10_to_11),
        cmocka_unit_test(test_remove_moves_only_its_partitions),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_down_node_replicas_move),
        cmocka_unit_test(test_weight_doubles_share),
        cmocka_unit_test(test_replicas_up),
        cmocka_unit_test(test_replicas_down),
        cmocka_unit_test(test_zones_distinct),
        cmocka_unit_test(test_zones_fewer_than_r),
        cmocka_unit_test(test_infeasible_leaves_map),
        cmocka_unit_test(test_no_eligible_node),
        cmocka_unit_test(test_zone_infeasible),
        cmocka_unit_test(test_apply_rejects_stale),
        cmocka_unit_test(test_apply_twice_is_stale),
        cmocka_unit_test(test_apply_bumps_epochs),
        cmocka_unit_test(test_leaders_balanced_by_transfers),
        cmocka_unit_test(test_bound_unreachable_still_fewest),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_plan_time_100_nodes),
        cmocka_unit_test(test_bad_arguments),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

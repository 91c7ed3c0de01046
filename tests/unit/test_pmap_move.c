/*
 * Tests of the move edits (pk_pmap_move.c): begin, commit and cancel of a
 * partition move, the states each refuses, and that a map stays valid and
 * round-trips through the codec at every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_plan.h"
#include "core/pk_pmap.h"
#include "core/pk_pmap_move.h"
#include "core/pk_range.h"

/* 4 nodes, 8 partitions; p led by p % 3, followed by (p + 1) % 3 when
 * replicas == 2.  Node 3 holds nothing. */
static pk_pmap *make(uint8_t replicas)
{
    pk_pmap *m = NULL;
    uint32_t id;
    char name[8];

    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, PK_HASH_XXH3, 8, replicas, &m),
                     0);
    for (int i = 0; i < 4; i++) {
        name[0] = 'n';
        name[1] = (char)('0' + i);
        name[2] = 0;
        assert_int_equal(pk_pmap_node_add(m, name, NULL, NULL, 1.0, &id), 0);
    }
    for (uint32_t p = 0; p < 8; p++) {
        m->parts[p].nreplicas = replicas;
        m->parts[p].replicas[0] = p % 3;
        if (replicas == 2)
            m->parts[p].replicas[1] = (p + 1) % 3;
    }
    return m;
}

/* Valid, and equal to itself after an encode/decode round trip. */
static void check_valid(const pk_pmap *m)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pk_pmap *back = NULL;
    uint64_t epoch = 0;

    assert_int_equal(pk_pmap_validate(m), 0);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), 0);
    assert_int_equal(pk_pmap_decode(buf, len, &back), 0);
    assert_true(pk_pmap_equal(m, back));
    assert_int_equal(pk_pmap_peek_epoch(buf, len, &epoch), 0);
    assert_int_equal(epoch, m->epoch);
    assert_int_equal(pk_pmap_peek_epoch(buf, 15, &epoch), PK_ECORRUPT);
    pk_pmap_free(back);
    free(buf);
}

static void test_move_to_new_node(void **state)
{
    pk_pmap *m = make(1);
    uint32_t to = 99;
    uint64_t le = m->parts[4].leader_epoch;

    (void)state;
    assert_false(pk_pmap_moving(m, 4, &to));
    m->epoch = 0x0102030405060708ull; /* peek reads all eight bytes */
    assert_int_equal(pk_pmap_move_begin(m, 4, 3), 0);
    assert_true(pk_pmap_moving(m, 4, &to));
    assert_int_equal(to, 3);
    assert_int_equal(m->parts[4].nlearners, 1);
    assert_int_equal(m->parts[4].learners[0], 3);
    assert_int_equal(m->parts[4].move_state, PK_MOVE_COPYING);
    assert_int_equal(pk_pmap_leader(m, 4), 1); /* unchanged until commit */
    check_valid(m);
    /* A second begin of a moving partition is refused. */
    assert_int_equal(pk_pmap_move_begin(m, 4, 2), PK_ESTALE);
    assert_int_equal(pk_pmap_move_commit(m, 4, 2), PK_ESTALE);
    assert_int_equal(pk_pmap_move_commit(m, 4, 3), 0);
    assert_int_equal(pk_pmap_leader(m, 4), 3);
    assert_int_equal(m->parts[4].nreplicas, 1);
    assert_int_equal(m->parts[4].nlearners, 0);
    assert_int_equal(m->parts[4].leader_epoch, le + 1);
    assert_false(pk_pmap_moving(m, 4, NULL));
    check_valid(m);
    /* Committed: a second commit and a cancel find nothing to do. */
    assert_int_equal(pk_pmap_move_commit(m, 4, 3), PK_ESTALE);
    assert_int_equal(pk_pmap_move_cancel(m, 4), PK_ESTALE);
    pk_pmap_free(m);
}

static void test_transfer_to_follower(void **state)
{
    pk_pmap *m = make(2);

    (void)state;
    /* Partition 0: leader 0, follower 1.  Moving to the follower adds no
     * learner; the commit swaps the roles. */
    assert_int_equal(pk_pmap_move_begin(m, 0, 1), 0);
    assert_int_equal(m->parts[0].nlearners, 0);
    check_valid(m);
    assert_int_equal(pk_pmap_move_commit(m, 0, 1), 0);
    assert_int_equal(m->parts[0].replicas[0], 1);
    assert_int_equal(m->parts[0].replicas[1], 0);
    assert_int_equal(m->parts[0].nreplicas, 2);
    check_valid(m);
    pk_pmap_free(m);
}

static void test_cancel(void **state)
{
    pk_pmap *m = make(1), *before = NULL;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), 0);
    assert_int_equal(pk_pmap_move_cancel(m, 2), PK_ESTALE);
    assert_int_equal(pk_pmap_move_begin(m, 2, 3), 0);
    assert_int_equal(pk_pmap_move_cancel(m, 2), 0);
    /* Exactly as before: the leader keeps it, no learner left. */
    assert_true(pk_pmap_equal(m, before));
    assert_int_equal(pk_pmap_move_commit(m, 2, 3), PK_ESTALE);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

static void test_refusals(void **state)
{
    pk_pmap *m = make(1), *before = NULL;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &before), 0);
    assert_int_equal(pk_pmap_move_begin(m, 8, 3), PK_EINVAL); /* no part */
    assert_int_equal(pk_pmap_move_begin(m, 0, 4), PK_EINVAL); /* no node */
    assert_int_equal(pk_pmap_move_begin(m, 0, 0), PK_ESTALE); /* leader */
    assert_int_equal(pk_pmap_move_cancel(m, 9), PK_EINVAL);
    assert_int_equal(pk_pmap_move_commit(m, 9, 3), PK_EINVAL);
    assert_int_equal(pk_pmap_node_set_state(m, 3, PK_NODE_REMOVED), 0);
    assert_int_equal(pk_pmap_move_begin(m, 0, 3), PK_ESTALE); /* removed */
    assert_int_equal(pk_pmap_node_set_state(m, 3, PK_NODE_UP), 0);
    assert_true(pk_pmap_equal(m, before)); /* refusals changed nothing */
    /* An unowned partition cannot move. */
    m->parts[5].nreplicas = 0;
    assert_int_equal(pk_pmap_move_begin(m, 5, 3), PK_ESTALE);
    pk_pmap_free(before);
    pk_pmap_free(m);
}

/* A range map over "g" and "p": three ranges on two replicas each. */
static pk_pmap *make_ranges(void)
{
    pk_pmap *m = NULL;
    pk_range *r = NULL;
    const void *keys[] = {"g", "p"};
    const size_t lens[] = {1, 1};
    uint32_t id;

    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, 3, 2, &m), 0);
    assert_int_equal(pk_pmap_node_add(m, "n0", NULL, NULL, 1.0, &id), 0);
    assert_int_equal(pk_pmap_node_add(m, "n1", NULL, NULL, 1.0, &id), 0);
    for (uint32_t p = 0; p < 3; p++) {
        m->parts[p].nreplicas = 2;
        m->parts[p].replicas[0] = p % 2;
        m->parts[p].replicas[1] = (p + 1) % 2;
        m->parts[p].leader_epoch = 10 + p;
    }
    assert_int_equal(pk_range_new_split(keys, lens, 2, &r), 0);
    assert_int_equal(pk_range_to_pmap(r, m), 0);
    pk_range_free(r);
    return m;
}

static void test_split(void **state)
{
    pk_pmap *m = make_ranges(), *d = NULL;
    pk_range *r = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint32_t q = 0, id = 0;

    (void)state;
    assert_int_equal(pk_pmap_split(m, 1, "k", 1, &q), 0);
    assert_int_equal(q, 3);
    assert_int_equal(m->npartitions, 4);
    assert_int_equal(pk_pmap_validate(m), 0);
    /* Same replicas and leader epoch; bounds g..k and k..p. */
    assert_memory_equal(m->parts[3].replicas, m->parts[1].replicas,
                        sizeof(m->parts[1].replicas));
    assert_int_equal(m->parts[3].leader_epoch, 11);
    assert_int_equal(pk_range_from_pmap(m, &r), 0);
    assert_int_equal(pk_range_lookup(r, "j", 1, &id), 0);
    assert_int_equal(id, 1);
    assert_int_equal(pk_range_lookup(r, "k", 1, &id), 0);
    assert_int_equal(id, 3);
    assert_int_equal(pk_range_lookup(r, "o", 1, &id), 0);
    assert_int_equal(id, 3);
    assert_int_equal(pk_range_lookup(r, "p", 1, &id), 0);
    assert_int_equal(id, 2);
    pk_range_free(r);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), 0);
    assert_int_equal(pk_pmap_decode(buf, len, &d), 0);
    assert_true(pk_pmap_equal(m, d));
    free(buf);
    pk_pmap_free(d);
    /* The last range splits too (its hi is +inf). */
    assert_int_equal(pk_pmap_split(m, 2, "z", 1, &q), 0);
    assert_int_equal(q, 4);
    assert_null(m->parts[4].hi);
    assert_int_equal(pk_pmap_validate(m), 0);
    pk_pmap_free(m);
}

static void test_split_refusals(void **state)
{
    pk_pmap *m = make_ranges(), *c = NULL, *h = make(1);
    uint32_t q = 99;

    (void)state;
    assert_int_equal(pk_pmap_clone(m, &c), 0);
    assert_int_equal(pk_pmap_split(m, 1, "g", 1, &q), PK_EINVAL); /* = lo */
    assert_int_equal(pk_pmap_split(m, 1, "p", 1, &q), PK_EINVAL); /* = hi */
    assert_int_equal(pk_pmap_split(m, 1, "a", 1, &q), PK_EINVAL);
    assert_int_equal(pk_pmap_split(m, 0, "", 0, &q), PK_EINVAL);
    assert_int_equal(pk_pmap_split(m, 7, "x", 1, &q), PK_EINVAL);
    assert_int_equal(pk_pmap_split(h, 1, "x", 1, &q), PK_EINVAL); /* hash */
    m->parts[1].move_state = PK_MOVE_COPYING;
    m->parts[1].move_target = 0;
    assert_int_equal(pk_pmap_split(m, 1, "k", 1, &q), PK_ESTALE);
    m->parts[1].move_state = PK_MOVE_NONE;
    m->parts[1].move_target = PK_NODE_NONE;
    assert_true(pk_pmap_equal(m, c));
    assert_int_equal(q, 99);
    pk_pmap_free(c);
    pk_pmap_free(h);
    pk_pmap_free(m);
}

static void test_merge(void **state)
{
    pk_pmap *m = make_ranges(), *c = NULL, *d = NULL;
    pk_range *r = NULL;
    uint32_t q = 0, id = 0, *ids = NULL;
    pk_plan *pl = NULL;

    (void)state;
    m->parts[1].flags = PK_PART_STICKY;
    assert_int_equal(pk_pmap_split(m, 1, "k", 1, &q), 0);
    assert_int_equal(m->parts[q].flags, 0); /* a new bound, not sticky */
    assert_int_equal(m->parts[1].flags, PK_PART_STICKY);
    check_valid(m);
    /* Not neighbours, or not co-located: refused, the map unchanged. */
    assert_int_equal(pk_pmap_clone(m, &c), 0);
    assert_int_equal(pk_pmap_merge(m, 3, 1), PK_EINVAL);
    assert_int_equal(pk_pmap_merge(m, 0, 3), PK_EINVAL);
    assert_int_equal(pk_pmap_merge(m, 0, 1), PK_ESTALE); /* leaders differ */
    assert_int_equal(pk_pmap_merge(m, 3, 2), PK_ESTALE);
    m->parts[3].nlearners = 1;
    m->parts[3].learners[0] = 1;
    m->parts[3].replicas[1] = 0;
    assert_int_equal(pk_pmap_merge(m, 1, 3), PK_ESTALE);
    m->parts[3].nlearners = 0;
    m->parts[3].replicas[1] = 0;
    assert_true(pk_pmap_equal(m, c));
    /* [g, k) and [k, p) merge back into [g, p); 3 is retired. */
    assert_true(pk_pmap_colocated(m, 1, 3));
    assert_int_equal(pk_pmap_merge(m, 1, 3), 0);
    assert_true(pk_pmap_retired(m, 3));
    assert_false(pk_pmap_retired(m, 1));
    assert_int_equal(m->parts[3].nreplicas, 0);
    assert_int_equal(m->parts[3].leader_epoch, 12);
    assert_int_equal(m->parts[1].leader_epoch, 11);
    assert_int_equal(pk_pmap_live_parts(m), 3);
    check_valid(m);
    assert_int_equal(pk_range_from_pmap(m, &r), 0);
    assert_int_equal(pk_range_count(r), 3);
    assert_int_equal(pk_range_lookup(r, "k", 1, &id), 0);
    assert_int_equal(id, 1);
    assert_int_equal(pk_range_lookup(r, "p", 1, &id), 0);
    assert_int_equal(id, 2);
    pk_range_free(r);
    /* A retired range merges no more; the planner leaves it out. */
    assert_int_equal(pk_pmap_merge(m, 1, 3), PK_EINVAL);
    assert_int_equal(pk_pmap_compact(m, &d, &ids), 0);
    assert_int_equal(d->npartitions, 3);
    assert_int_equal(ids[2], 2);
    assert_int_equal(pk_pmap_node_add(m, "n2", NULL, NULL, 1.0, &id), 0);
    assert_int_equal(pk_plan_compute(m, &pl), 0);
    assert_true(pl->nmoves > 0);
    for (uint32_t i = 0; i < pl->nmoves; i++)
        assert_int_not_equal(pl->moves[i].part, 3);
    assert_int_equal(pk_plan_apply(m, pl), 0);
    assert_int_equal(m->parts[3].nreplicas, 0);
    check_valid(m);
    pk_plan_free(pl);
    free(ids);
    pk_pmap_free(d);
    pk_pmap_free(c);
    pk_pmap_free(m);
}

/* Flags: encoded only when one is set (the canonical form), checked. */
static void test_part_flags(void **state)
{
    pk_pmap *m = make_ranges(), *h = make(1);
    uint8_t *buf = NULL, *plain = NULL;
    size_t len = 0, plain_len = 0;

    (void)state;
    assert_int_equal(pk_pmap_encode(m, &plain, &plain_len), 0);
    assert_int_equal(plain[6] << 8 | plain[7], 0);
    m->parts[2].flags = PK_PART_STICKY | PK_PART_MERGING;
    check_valid(m);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), 0);
    assert_int_equal(buf[6] << 8 | buf[7], 1);
    assert_int_equal(len, plain_len + 3);
    m->parts[2].flags = 0x80;
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    h->parts[0].flags = PK_PART_STICKY; /* range scheme only */
    assert_int_equal(pk_pmap_validate(h), PK_ECORRUPT);
    free(buf);
    free(plain);
    pk_pmap_free(h);
    pk_pmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_move_to_new_node),
        cmocka_unit_test(test_transfer_to_follower),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_refusals),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_part_flags),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

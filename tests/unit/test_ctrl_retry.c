/*
 * The controller's retry of an unfinished promotion (pk_ctrl_decide.c),
 * against fake nodes that answer PK.REPL FENCE as pk_repl.c does.
 *
 * The case it was written for: a leader balance hands partitions of a
 * live leader to a follower while another follower is stopped (still
 * registered, or down by now).  One follower answers the fence, which is
 * not enough, so the promotion is retried every tick -- and each fence
 * makes the answering follower withhold its promise from the leader until
 * the leader has a map newer than the fence's (the fence's map epoch is
 * the current one + 1).  Without a map change the live leader then lost
 * its lease on every partition it led until the stopped node came back
 * (test_failover_time, round 4, once under load).  The retry must end in
 * a map change: a follower promoted, or the leader leading on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_ctrl_int.h"

#define NN 3
#define NP 4
#define LE 5 /* the partitions' leader epoch */

/* ---- fake nodes ------------------------------------------------------ */

static int node_stopped[NN];       /* calls to it fail (a timeout) */
static uint64_t fence_map[NN][NN]; /* [follower][leader]: as pk_repl.c */
static int self_fences;            /* fences a leader took of its own */
static pk_sclient *clis[NN];       /* dummies: the node is the index */
static char dummy;

int64_t pk__ctrl_mono_ms(void)
{
    return 0;
}

int pk__ctrl_is_live(const char *names, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = names; (p = strstr(p, name)) != NULL; p += n)
        if ((p == names || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

down *pk__ctrl_down_of(pk_ctrl *c, const char *name, int add)
{
    (void)c;
    (void)name;
    (void)add;
    return NULL;
}

pk_sclient **pk__ctrl_peer_of(pk_ctrl *c, const char *addr)
{
    (void)c;
    int i = addr[1] - '0';

    return i >= 0 && i < NN ? &clis[i] : NULL;
}

static pk_rr *parse(const char *text)
{
    pk_rreply_reader *rd = NULL;
    pk_rr *r = NULL;

    assert_int_equal(pk_rreply_reader_new(NULL, &rd), PK_OK);
    assert_int_equal(pk_rreply_feed(rd, text, strlen(text)), PK_OK);
    assert_int_equal(pk_rreply_next(rd, &r), 1);
    pk_rreply_reader_free(rd);
    return r;
}

/* PK.REPL FENCE leader mapep {part epoch}...: every node follows (or
 * leads) each partition at LE with 10 records, as repl_fence and
 * fence_self answer. */
int pk__ctrl_call_for(pk_sclient **cli, pk_rr **r, int argc,
                      const char *const *argv, const size_t *lens,
                      int timeout_ms)
{
    int node = (int)(cli - clis);
    unsigned leader = (unsigned)atoi(argv[2]);
    uint64_t mapep = strtoull(argv[3], NULL, 10);
    char text[4096];
    size_t k;

    (void)lens;
    (void)timeout_ms;
    if (node_stopped[node])
        return PK_EIO;
    assert_int_equal(argc % 2, 0);
    assert_string_equal(argv[1], "FENCE");
    k = (size_t)snprintf(text, sizeof(text), "*%d\r\n", (argc - 4) / 2);
    for (int i = 4; i + 1 < argc; i += 2)
        k += (size_t)snprintf(text + k, sizeof(text) - k,
                              "*2\r\n:%d\r\n:10\r\n", LE);
    if ((int)leader == node)
        self_fences++;
    else if (mapep > fence_map[node][leader])
        fence_map[node][leader] = mapep;
    *r = parse(text);
    return PK_OK;
}

int pk__ctrl_call(pk_sclient **cli, pk_rr **r, int argc,
                  const char *const *argv, const size_t *lens)
{
    return pk__ctrl_call_for(cli, r, argc, argv, lens, CALL_MS);
}

/* ---- the cluster ------------------------------------------------------ */

/* Three nodes n0..n2; every partition led by n0 at LE, followed by n1 and
 * n2, at map epoch 9; the controller fenced partitions 0 and 1 for a
 * handoff and has not promoted them. */
static void setup(pk_pmap **mp, pk_ctrl *c)
{
    pk_pmap *m = NULL;
    uint32_t id;

    memset(node_stopped, 0, sizeof(node_stopped));
    memset(fence_map, 0, sizeof(fence_map));
    self_fences = 0;
    for (int i = 0; i < NN; i++)
        clis[i] = (pk_sclient *)&dummy;
    assert_int_equal(pk_pmap_new(PK_SCHEME_HASH, 0, NP, 3, &m), PK_OK);
    for (int i = 0; i < NN; i++) {
        char name[4] = {'n', (char)('0' + i), 0, 0};
        assert_int_equal(pk_pmap_node_add(m, name, name, NULL, 1.0, &id),
                         PK_OK);
    }
    for (uint32_t p = 0; p < NP; p++) {
        m->parts[p].nreplicas = 3;
        for (int i = 0; i < 3; i++)
            m->parts[p].replicas[i] = (uint32_t)i;
        m->parts[p].leader_epoch = LE;
    }
    m->epoch = 9;
    memset(c, 0, sizeof(*c));
    c->pend = calloc(NP, sizeof(uint64_t));
    assert_non_null(c->pend);
    c->npend = NP;
    c->pend[0] = c->pend[1] = 2 * (LE + 1) + 1; /* for a handoff */
    *mp = m;
}

/* Controller ticks: a tick that changed the map writes it at epoch + 1
 * (step in pk_ctrl.c). */
static int ticks(pk_ctrl *c, pk_pmap *m, const char *names, int n)
{
    int total = 0;

    for (int i = 0; i < n; i++) {
        int changed = pk__ctrl_retry(c, m, names);
        if (changed) {
            m->epoch++;
            total += changed;
        }
    }
    return total;
}

/* n2 stopped and already down: n1's answer alone cannot promote; the
 * leader leads on at LE + 1, and n1's fences against it are not newer
 * than the map it gets. */
static void test_handoff_retry_with_a_follower_down(void **state)
{
    pk_pmap *m;
    pk_ctrl c;

    (void)state;
    setup(&m, &c);
    node_stopped[2] = 1;
    assert_true(ticks(&c, m, "n0\nn1\n", 5) > 0);
    assert_true(self_fences > 0);
    for (uint32_t p = 0; p < 2; p++) {
        assert_int_equal(m->parts[p].replicas[0], 0);
        assert_int_equal(m->parts[p].leader_epoch, LE + 1);
    }
    assert_int_equal(m->parts[2].leader_epoch, LE);
    /* n1 promises n0 again once n0 has the map. */
    assert_true(fence_map[1][0] <= m->epoch);
    free(c.pend);
    pk_pmap_free(m);
}

/* n2 stopped but still registered (its fences time out): the same. */
static void test_handoff_retry_with_a_follower_stopped(void **state)
{
    pk_pmap *m;
    pk_ctrl c;

    (void)state;
    setup(&m, &c);
    node_stopped[2] = 1;
    assert_true(ticks(&c, m, "n0\nn1\nn2\n", 5) > 0);
    assert_int_equal(m->parts[0].leader_epoch, LE + 1);
    assert_true(fence_map[1][0] <= m->epoch);
    free(c.pend);
    pk_pmap_free(m);
}

/* Every follower answers: the handoff still goes to a follower, and the
 * leader is not fenced. */
static void test_handoff_retry_goes_to_a_follower(void **state)
{
    pk_pmap *m;
    pk_ctrl c;

    (void)state;
    setup(&m, &c);
    assert_int_equal(ticks(&c, m, "n0\nn1\nn2\n", 1), 2);
    assert_int_equal(self_fences, 0);
    for (uint32_t p = 0; p < 2; p++) {
        assert_int_not_equal(m->parts[p].replicas[0], 0);
        assert_int_equal(m->parts[p].leader_epoch, LE + 1);
    }
    free(c.pend);
    pk_pmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handoff_retry_with_a_follower_down),
        cmocka_unit_test(test_handoff_retry_with_a_follower_stopped),
        cmocka_unit_test(test_handoff_retry_goes_to_a_follower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

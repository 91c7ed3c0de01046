/*
 * pk_set against a real LMDB environment: random operations compared
 * with a naive model (a bitmask per key over a small member pool), the
 * log shipped to a second store ending byte-identical, uniformity of
 * SPOP / SRANDMEMBER (small sets, walked; large ones, through the rank
 * index), the rank index exact under interleaved writes and aborts, SSCAN
 * stability, and the records pk__rec_check accepts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_key.h"
#include "store/pk_set.h"
#include "store/pk_set_int.h"
#include "store/pk_store_int.h" /* pk__rec_check, pk__rank_find, walks */
#include "store/pk_str.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define PART 7u
#define NKEYS 4
#define POOL 24

static const char *keys[NKEYS] = {"a", "b", "c\0x", "d"};
static const size_t klens[NKEYS] = {1, 1, 3, 1};

static pk_slice member(unsigned i, char *buf)
{
    /* Members of different lengths, one empty, one with a NUL byte. */
    int n = snprintf(buf, 16, "m%u", i * 7);

    if (i == 0) {
        return (pk_slice){buf, 0};
    }
    if (i == 1) {
        buf[1] = '\0';
        return (pk_slice){buf, 2};
    }
    return (pk_slice){buf, (size_t)n};
}

static int bit_of(pk_slice m)
{
    char buf[16];

    for (unsigned i = 0; i < POOL; i++) {
        pk_slice c = member(i, buf);
        if (c.len == m.len &&
            (c.len == 0 || memcmp(c.ptr, m.ptr, c.len) == 0)) {
            return (int)i;
        }
    }
    return -1;
}

static int collect_member(void *ctx, pk_slice m)
{
    uint32_t *mask = ctx;
    int b = bit_of(m);

    assert_true(b >= 0);
    assert_false(*mask & (1u << b)); /* never twice */
    *mask |= 1u << b;
    return 0;
}

static unsigned popcount(uint32_t x)
{
    return (unsigned)__builtin_popcount(x);
}

/* The store's view of key k as a mask, checked against its SCARD. */
static uint32_t store_mask(pk_txn *t, int k)
{
    uint32_t mask = 0;
    uint64_t card = 99;

    assert_int_equal(
        pk_set_each(t, PART, keys[k], klens[k], NOW, collect_member, &mask), 0);
    assert_int_equal(pk_set_card(t, PART, keys[k], klens[k], NOW, &card), 0);
    assert_int_equal(card, popcount(mask));
    return mask;
}

static void model_ops(void **state)
{
    tstore *ts = *state;
    uint32_t model[NKEYS] = {0};
    char bufs[4][16];
    pk_slice ms[4], ks[3];
    pk_txn *t = wtxn(ts->s);
    uint64_t n;
    int moved;

    assert_non_null(t);
    for (int step = 0; step < 3000; step++) {
        int k = (int)(trnd() % NKEYS), k2 = (int)(trnd() % NKEYS);
        unsigned nm = 1 + trnd() % 4, op = trnd() % 8;
        uint32_t want = 0, got = 0;

        for (unsigned i = 0; i < nm; i++) {
            unsigned b = trnd() % POOL;
            ms[i] = member(b, bufs[i]);
            want |= 1u << b;
        }
        switch (op) {
        case 0:
        case 1:
            assert_int_equal(
                pk_set_add(t, PART, keys[k], klens[k], nm, ms, NOW, &n), 0);
            assert_int_equal(n, popcount(want & ~model[k]));
            model[k] |= want;
            break;
        case 2:
            assert_int_equal(
                pk_set_rem(t, PART, keys[k], klens[k], nm, ms, NOW, &n), 0);
            assert_int_equal(n, popcount(want & model[k]));
            model[k] &= ~want;
            break;
        case 3:
            assert_int_equal(pk_set_move(t, PART, keys[k], klens[k], keys[k2],
                                         klens[k2], ms[0].ptr, ms[0].len, NOW,
                                         &moved),
                             0);
            assert_int_equal(moved, (model[k] >> bit_of(ms[0])) & 1);
            if (moved && k != k2) {
                model[k] &= ~(1u << bit_of(ms[0]));
                model[k2] |= 1u << bit_of(ms[0]);
            }
            break;
        case 4:
            assert_int_equal(pk_set_pop(t, PART, keys[k], klens[k], nm - 1,
                                        trnd(), NOW, collect_member, &got, &n),
                             0);
            assert_int_equal(n, popcount(got));
            assert_int_equal(got & ~model[k], 0);
            model[k] &= ~got;
            break;
        case 5: {
            pk_set_op o = (pk_set_op)(1 + trnd() % 3);
            uint32_t res = model[k];
            ks[0] = (pk_slice){keys[k], klens[k]};
            ks[1] = (pk_slice){keys[k2], klens[k2]};
            res = o == PK_SETOP_UNION   ? model[k] | model[k2]
                  : o == PK_SETOP_INTER ? model[k] & model[k2]
                                        : model[k] & ~model[k2];
            assert_int_equal(pk_set_combine(t, PART, o, 2, ks, 0, NOW,
                                            collect_member, &got, &n),
                             0);
            assert_int_equal(got, res);
            assert_int_equal(n, popcount(res));
            int dst = (int)(trnd() % NKEYS);
            assert_int_equal(
                pk_set_store(t, PART, o, keys[dst], klens[dst], 2, ks, NOW, &n),
                0);
            assert_int_equal(n, popcount(res));
            model[dst] = res;
            break;
        }
        default: {
            uint8_t is[4];
            assert_int_equal(
                pk_set_ismember(t, PART, keys[k], klens[k], nm, ms, NOW, is),
                0);
            for (unsigned i = 0; i < nm; i++) {
                assert_int_equal(is[i], (model[k] >> bit_of(ms[i])) & 1);
            }
        }
        }
        for (int j = 0; j < NKEYS; j++) {
            int ex = 0;
            assert_int_equal(store_mask(t, j), model[j]);
            assert_int_equal(
                pk_key_exists(t, PART, keys[j], klens[j], NOW, &ex), 0);
            assert_int_equal(ex, model[j] != 0); /* never exists empty */
        }
    }
    assert_int_equal(pk_txn_commit(t), 0);
}

static void replay_identical(void **state)
{
    two *w = *state;
    char bufs[POOL][16];
    pk_slice ms[POOL], ks[2] = {{"x", 1}, {"y", 1}};
    pk_txn *t = wtxn(w->a->s), *tb;
    uint64_t n;
    uint32_t got = 0;
    tship sh;

    for (unsigned i = 0; i < POOL; i++) {
        ms[i] = member(i, bufs[i]);
    }
    assert_int_equal(pk_set_add(t, PART, "x", 1, POOL, ms, NOW, &n), 0);
    assert_int_equal(pk_set_add(t, PART, "y", 1, 5, ms + 3, NOW, &n), 0);
    assert_int_equal(
        pk_set_pop(t, PART, "x", 1, 4, 42, NOW, collect_member, &got, &n), 0);
    assert_int_equal(
        pk_set_store(t, PART, PK_SETOP_DIFF, "z", 1, 2, ks, NOW, &n), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    tb = wtxn(w->b->s);
    t = rtxn(w->a->s);
    sh = (tship){tb, PART, 0, 0};
    assert_int_equal(pk_store_log_read(t, PART, 1, tship_cb, &sh), 0);
    assert_int_equal(sh.n, 4); /* one record per command */
    pk_txn_abort(t);
    assert_int_equal(pk_txn_commit(tb), 0);
    assert_int_equal(tstore_same(w->a->s, w->b->s, PART), 0);
}

typedef struct hist {
    unsigned n[POOL];
} hist;

static int count_cb(void *ctx, pk_slice m)
{
    hist *h = ctx;

    h->n[bit_of(m)]++;
    return 0;
}

/* Chi-square over POOL members: 23 degrees of freedom, 49.7 is p = 0.001. */
static double chi2(const hist *h, double expect)
{
    double c = 0;

    for (unsigned i = 0; i < POOL; i++) {
        c += (h->n[i] - expect) * (h->n[i] - expect) / expect;
    }
    return c;
}

static void random_uniform(void **state)
{
    tstore *ts = *state;
    char bufs[POOL][16];
    pk_slice ms[POOL];
    hist h = {{0}};
    pk_txn *t = wtxn(ts->s);
    uint64_t n;

    for (unsigned i = 0; i < POOL; i++) {
        ms[i] = member(i, bufs[i]);
    }
    assert_int_equal(pk_set_add(t, PART, "r", 1, POOL, ms, NOW, &n), 0);
    for (unsigned i = 0; i < 2400; i++) {
        assert_int_equal(
            pk_set_random(t, PART, "r", 1, 1, 0, trnd(), NOW, count_cb, &h), 0);
    }
    assert_true(chi2(&h, 100) < 49.7);
    memset(&h, 0, sizeof(h));
    for (unsigned i = 0; i < 800; i++) {
        assert_int_equal(
            pk_set_random(t, PART, "r", 1, 3, 0, trnd(), NOW, count_cb, &h), 0);
    }
    assert_true(chi2(&h, 100) < 49.7);
    memset(&h, 0, sizeof(h));
    assert_int_equal(
        pk_set_random(t, PART, "r", 1, 2400, 1, trnd(), NOW, count_cb, &h), 0);
    assert_true(chi2(&h, 100) < 49.7);
    /* SPOP of one member, put back each time. */
    memset(&h, 0, sizeof(h));
    for (unsigned i = 0; i < 2400; i++) {
        uint32_t got = 0;
        assert_int_equal(pk_set_pop(t, PART, "r", 1, 1, trnd(), NOW,
                                    collect_member, &got, &n),
                         0);
        h.n[__builtin_ctz(got)]++;
        assert_int_equal(
            pk_set_add(t, PART, "r", 1, 1, &ms[__builtin_ctz(got)], NOW, &n),
            0);
    }
    assert_true(chi2(&h, 100) < 49.7);
    pk_txn_abort(t);
}

/*
 * Large sets: BIG members "b%05u" (byte order = number order), so picks
 * go through the rank index.  A histogram counts them by number % POOL.
 */
#define BIG 3000u

static pk_slice big_member(unsigned i, char *buf)
{
    return (pk_slice){buf, (size_t)snprintf(buf, 16, "b%05u", i)};
}

static int big_cb(void *ctx, pk_slice m)
{
    hist *h = ctx;
    char buf[16];

    assert_true(m.len == 6 && ((const char *)m.ptr)[0] == 'b');
    memcpy(buf, m.ptr + 1, 5);
    buf[5] = '\0';
    h->n[atoi(buf) % POOL]++;
    return 0;
}

static void big_add(pk_txn *t, const char *key, unsigned from, unsigned to)
{
    char buf[16];
    uint64_t n;

    for (unsigned i = from; i < to; i++) {
        pk_slice m = big_member(i, buf);
        assert_int_equal(pk_set_add(t, PART, key, 1, 1, &m, NOW, &n), 0);
    }
}

static void random_uniform_large(void **state)
{
    tstore *ts = *state;
    hist h = {{0}};
    pk_txn *t = wtxn(ts->s);
    uint64_t n;

    big_add(t, "R", 0, BIG);
    for (unsigned i = 0; i < 2400; i++) {
        assert_int_equal(
            pk_set_random(t, PART, "R", 1, 1, 0, trnd(), NOW, big_cb, &h), 0);
    }
    assert_true(chi2(&h, 100) < 49.7);
    /* A few distinct (Floyd) and a few with repeats, rank by rank. */
    memset(&h, 0, sizeof(h));
    for (unsigned i = 0; i < 240; i++) {
        assert_int_equal(
            pk_set_random(t, PART, "R", 1, 10, 0, trnd(), NOW, big_cb, &h), 0);
    }
    assert_true(chi2(&h, 100) < 49.7);
    memset(&h, 0, sizeof(h));
    for (unsigned i = 0; i < 240; i++) {
        assert_int_equal(
            pk_set_random(t, PART, "R", 1, 10, 1, trnd(), NOW, big_cb, &h), 0);
    }
    assert_true(chi2(&h, 100) < 49.7);
    /* SPOP of 2400 members: a uniform sample without replacement. */
    memset(&h, 0, sizeof(h));
    assert_int_equal(pk_set_card(t, PART, "R", 1, NOW, &n), 0);
    assert_int_equal(n, BIG);
    for (unsigned i = 0; i < 2400; i++) {
        assert_int_equal(
            pk_set_pop(t, PART, "R", 1, 1, trnd(), NOW, big_cb, &h, &n), 0);
        assert_int_equal(n, 1);
    }
    assert_true(chi2(&h, 100) < 49.7);
    assert_int_equal(pk_set_card(t, PART, "R", 1, NOW, &n), 0);
    assert_int_equal(n, BIG - 2400);
    pk_txn_abort(t);
}

/*
 * The member of rank r of key "X" by the rank index, as a number, or -1
 * when the index is not used.
 */
static int rank_member(pk_txn *t, uint64_t count, uint64_t r)
{
    uint8_t prefix[64];
    size_t plen;
    pk_slice start;
    uint64_t skip;
    pk__sub_walk w = {0};
    char buf[16];
    int rc;

    assert_int_equal(
        pk_keyenc_prefix(PART, "X", 1, prefix, sizeof(prefix), &plen), 0);
    rc =
        pk__rank_find(t, prefix, plen, PK_TAG_SMEMBER, count, r, &start, &skip);
    if (rc == PK_ENOTFOUND) {
        return -1;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(
        pk__sub_walk_from(t, &w, prefix, plen, PK_TAG_SMEMBER, start), 0);
    while (w.valid && skip-- > 0) {
        assert_int_equal(pk__sub_walk_next(t, &w, 0), 0);
    }
    assert_true(w.valid && w.mem.len == 6);
    memcpy(buf, w.mem.ptr + 1, 5);
    buf[5] = '\0';
    pk__sub_walk_close(&w);
    return atoi(buf);
}

/* Every rank of "X" against the model: present[i] for member i < 2 BIG. */
static void ranks_match(pk_txn *t, const unsigned char *present)
{
    uint64_t card, r = 0;

    assert_int_equal(pk_set_card(t, PART, "X", 1, NOW, &card), 0);
    for (unsigned i = 0; i < 2 * BIG; i++) {
        if (present[i]) {
            int got = rank_member(t, card, r++);
            assert_true(got == -1 || got == (int)i);
        }
    }
    assert_int_equal(r, card);
}

static int mark_cb(void *ctx, pk_slice m)
{
    unsigned char *present = ctx;
    char buf[16];

    memcpy(buf, m.ptr + 1, 5);
    buf[5] = '\0';
    present[atoi(buf)] = 0;
    return 0;
}

static void rank_index_exact(void **state)
{
    tstore *ts = *state;
    static unsigned char present[2 * BIG];
    char buf[16];
    pk_txn *t = wtxn(ts->s);
    uint64_t n;
    int del;

    memset(present, 0, sizeof(present));
    for (unsigned i = 0; i < 2 * BIG; i += 2) {
        present[i] = 1;
    }
    for (unsigned i = 0; i < 2 * BIG; i += 2) {
        pk_slice m = big_member(i, buf);
        assert_int_equal(pk_set_add(t, PART, "X", 1, 1, &m, NOW, &n), 0);
    }
    assert_int_not_equal(rank_member(t, BIG, 0), -1); /* built */
    ranks_match(t, present);
    /* Adds (before the first member too), removes and pops, interleaved
     * with lookups. */
    for (unsigned round = 0; round < 6; round++) {
        for (unsigned j = 0; j < 400; j++) {
            unsigned i = trnd() % (2 * BIG);
            pk_slice m = big_member(i, buf);

            if (trnd() % 2) {
                assert_int_equal(pk_set_add(t, PART, "X", 1, 1, &m, NOW, &n),
                                 0);
                present[i] = 1;
            } else {
                assert_int_equal(pk_set_rem(t, PART, "X", 1, 1, &m, NOW, &n),
                                 0);
                present[i] = 0;
            }
        }
        assert_int_equal(
            pk_set_pop(t, PART, "X", 1, 7, trnd(), NOW, mark_cb, present, &n),
            0);
        ranks_match(t, present);
    }
    assert_int_equal(pk_txn_commit(t), 0);
    /* Writes in a transaction that aborts are not counted after it: as
     * many members removed as added, so that the count alone would not
     * tell. */
    t = wtxn(ts->s);
    assert_int_equal(pk_set_card(t, PART, "X", 1, NOW, &n), 0);
    assert_int_not_equal(rank_member(t, n, 0), -1);
    for (unsigned i = 0, j = BIG, moved = 0; moved < 300; moved++) {
        pk_slice m;

        while (!present[i]) {
            i++;
        }
        while (present[j]) {
            j++;
        }
        m = big_member(i++, buf); /* low ranks lose, high ones gain */
        assert_int_equal(pk_set_rem(t, PART, "X", 1, 1, &m, NOW, &n), 0);
        m = big_member(j++, buf);
        assert_int_equal(pk_set_add(t, PART, "X", 1, 1, &m, NOW, &n), 0);
    }
    pk_txn_abort(t);
    t = wtxn(ts->s);
    ranks_match(t, present);
    /* A dropped key drops its index; a new set of the name starts over. */
    assert_int_equal(pk_key_del(t, PART, "X", 1, NOW, &del), 0);
    assert_int_equal(del, 1);
    memset(present, 0, sizeof(present));
    for (unsigned i = 1; i < 2 * BIG; i += 3) {
        pk_slice m = big_member(i, buf);
        assert_int_equal(pk_set_add(t, PART, "X", 1, 1, &m, NOW, &n), 0);
        present[i] = 1;
    }
    ranks_match(t, present);
    pk_txn_abort(t);
    /* Read transactions walk instead. */
    t = rtxn(ts->s);
    assert_int_equal(rank_member(t, BIG, 0), -1);
    pk_txn_abort(t);
}

static int scan_cb(void *ctx, pk_slice m)
{
    return collect_member(ctx, m);
}

static void sscan_stable(void **state)
{
    tstore *ts = *state;
    char bufs[POOL][16];
    pk_slice ms[POOL];
    pk_sscan_opts o = {NULL, 0, 2};
    uint32_t seen = 0, keep = 0;
    uint64_t cur = 0, n;
    pk_txn *t = wtxn(ts->s);
    unsigned step = 0;

    for (unsigned i = 0; i < POOL; i++) {
        ms[i] = member(i, bufs[i]);
    }
    for (unsigned i = 0; i < POOL; i += 2) {
        keep |= 1u << i;
        assert_int_equal(pk_set_add(t, PART, "s", 1, 1, &ms[i], NOW, &n), 0);
    }
    do {
        uint32_t got = 0;
        assert_int_equal(
            pk_set_scan(t, PART, "s", 1, cur, &o, NOW, scan_cb, &got, &cur), 0);
        seen |= got;
        /* Odd members come and go between calls. */
        unsigned odd = 1 + 2 * (step++ % (POOL / 2));
        assert_int_equal(pk_set_add(t, PART, "s", 1, 1, &ms[odd], NOW, &n), 0);
        assert_int_equal(
            pk_set_rem(t, PART, "s", 1, 1, &ms[(odd + 10) % POOL], NOW, &n), 0);
    } while (cur != 0);
    assert_int_equal(seen & keep, keep);
    pk_txn_abort(t);
}

static void wrongtype_and_limits(void **state)
{
    tstore *ts = *state;
    pk_txn *t = wtxn(ts->s);
    pk_slice m = {"a", 1}, ks[2] = {{"s", 1}, {"str", 3}};
    char big[600];
    uint64_t n = 77;
    int done;

    memset(big, 'x', sizeof(big));
    assert_int_equal(
        pk_str_set(t, PART, "str", 3, "v", 1, NULL, NOW, &done, NULL), 0);
    assert_int_equal(pk_set_add(t, PART, "str", 3, 1, &m, NOW, &n),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_set_add(t, PART, "s", 1, 1, &m, NOW, &n), 0);
    assert_int_equal(
        pk_set_combine(t, PART, PK_SETOP_UNION, 2, ks, 0, NOW, NULL, NULL, &n),
        PK_STORE_WRONGTYPE);
    assert_int_equal(
        pk_set_store(t, PART, PK_SETOP_UNION, "d", 1, 2, ks, NOW, &n),
        PK_STORE_WRONGTYPE);
    m = (pk_slice){big, sizeof(big)};
    assert_int_equal(pk_set_add(t, PART, "s", 1, 1, &m, NOW, &n), 0);
    assert_int_equal(pk_set_card(t, PART, "s", 1, NOW, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pk_set_add(t, PART, "s", 1, 0, &m, NOW, &n), PK_EINVAL);
    pk_txn_abort(t);
}

static void rec_check(void **state)
{
    uint8_t k[64];
    size_t plen, kl;

    (void)state;
    assert_int_equal(pk_keyenc_prefix(PART, "s", 1, k, sizeof(k), &plen), 0);
    assert_int_equal(
        pk_keyenc_sub(k, sizeof(k), plen, PK_TAG_SMEMBER, "m", 1, &kl), 0);
    assert_int_equal(pk__rec_check(k, kl, (const uint8_t *)"", 0), 0);
    assert_int_equal(pk__rec_check(k, kl, (const uint8_t *)"x", 1),
                     PK_ECORRUPT);
}

static int one_setup(void **state)
{
    *state = tstore_new();
    return *state ? 0 : -1;
}

static int one_teardown(void **state)
{
    tstore_free(*state);
    return 0;
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, one_setup, one_teardown)
    const struct CMUnitTest tests[] = {
        T(model_ops),
        cmocka_unit_test_setup_teardown(replay_identical, two_setup,
                                        two_teardown),
        T(random_uniform),
        T(random_uniform_large),
        T(rank_index_exact),
        T(sscan_stable),
        T(wrongtype_and_limits),
        cmocka_unit_test(rec_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * pk_list against a naive model (an array of short strings) under random
 * pushes, pops, LSET, LINSERT, LREM, LTRIM and LMOVE on two lists of one
 * partition and one of another, checking the whole of every list after
 * each step; plus Redis's edge cases (indices, wrong types, empty lists
 * deleting their key, LPOS ranks) and the log shipping a follower gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_key.h"
#include "store/pk_list.h"
#include "store/pk_str.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define MAXLEN 64

typedef struct model {
    char v[MAXLEN * 4][4];
    int n;
} model;

static int setup(void **state)
{
    *state = tstore_new();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tstore_free(*state);
    return 0;
}

typedef struct lcollect {
    char v[MAXLEN * 4][4];
    int n;
} lcollect;

static int collect_cb(void *ctx, pk_slice e)
{
    lcollect *c = ctx;

    assert_true(e.len < 4);
    memcpy(c->v[c->n], e.ptr, e.len);
    c->v[c->n][e.len] = '\0';
    c->n++;
    return 0;
}

/* The list under key in part equals the model (missing when empty). */
static void check(pk_txn *t, uint32_t part, const char *key, const model *m)
{
    lcollect c = {0};
    uint64_t len = 99;
    pk_type type = PK_TYPE_NONE;
    pk_slice v;

    assert_int_equal(pk_list_len(t, part, S(key), NOW, &len), 0);
    assert_int_equal(len, (uint64_t)m->n);
    assert_int_equal(pk_key_type(t, part, S(key), NOW, &type), 0);
    assert_int_equal(type, m->n ? PK_TYPE_LIST : PK_TYPE_NONE);
    assert_int_equal(
        pk_list_range(t, part, S(key), 0, UINT64_MAX, NOW, collect_cb, &c), 0);
    assert_int_equal(c.n, m->n);
    for (int i = 0; i < m->n; i++) {
        assert_string_equal(c.v[i], m->v[i]);
    }
    if (m->n) {
        int i = (int)(trnd() % (unsigned)m->n);
        assert_int_equal(pk_list_index(t, part, S(key), i, NOW, &v), 0);
        assert_memory_equal(v.ptr, m->v[i], v.len);
        assert_int_equal(pk_list_index(t, part, S(key), i - m->n, NOW, &v), 0);
        assert_memory_equal(v.ptr, m->v[i], v.len);
    }
    assert_int_equal(pk_list_index(t, part, S(key), m->n, NOW, &v),
                     PK_ENOTFOUND);
}

static void m_insert(model *m, int at, const char *v)
{
    memmove(m->v[at + 1], m->v[at], (size_t)(m->n - at) * sizeof(m->v[0]));
    snprintf(m->v[at], 4, "%s", v);
    m->n++;
}

static void m_remove(model *m, int at)
{
    memmove(m->v[at], m->v[at + 1], (size_t)(m->n - at - 1) * sizeof(m->v[0]));
    m->n--;
}

/* Redis index normalisation of LTRIM. */
static void m_trim(model *m, long start, long stop)
{
    long n = m->n;

    if (start < 0)
        start += n;
    if (stop < 0)
        stop += n;
    if (start < 0)
        start = 0;
    if (start > stop || start >= n) {
        m->n = 0;
        return;
    }
    if (stop >= n)
        stop = n - 1;
    memmove(m->v[0], m->v[start], (size_t)(stop - start + 1) * sizeof(m->v[0]));
    m->n = (int)(stop - start + 1);
}

static void one_op(pk_txn *t, const char *keys[3], const uint32_t parts[3],
                   model ms[3])
{
    int k = (int)(trnd() % 3), op = (int)(trnd() % 9);
    model *m = &ms[k];
    char val[4];
    uint64_t len, n;
    pk_slice s;

    snprintf(val, sizeof(val), "%u", trnd() % 5);
    s = (pk_slice){val, strlen(val)};
    switch (op) {
    case 0:
    case 1: {
        unsigned right = op ? PK_LIST_RIGHT : 0;
        if (m->n >= MAXLEN)
            return;
        assert_int_equal(
            pk_list_push(t, parts[k], S(keys[k]), right, 1, &s, NOW, &len), 0);
        m_insert(m, right ? m->n : 0, val);
        assert_int_equal(len, (uint64_t)m->n);
        return;
    }
    case 2: {
        lcollect c = {0};
        unsigned right = trnd() % 2 ? PK_LIST_RIGHT : 0;
        uint64_t count = trnd() % 4;
        assert_int_equal(pk_list_pop(t, parts[k], S(keys[k]), right, count, NOW,
                                     collect_cb, &c, &n),
                         0);
        assert_int_equal(n, count < (uint64_t)m->n ? count : (uint64_t)m->n);
        for (int i = 0; i < (int)n; i++) {
            int at = right ? m->n - 1 : 0;
            assert_string_equal(c.v[i], m->v[at]);
            m_remove(m, at);
        }
        return;
    }
    case 3: {
        int64_t idx = (int64_t)(trnd() % 20) - 10;
        int rc = pk_list_set(t, parts[k], S(keys[k]), idx, S(val), NOW);
        if (m->n == 0) {
            assert_int_equal(rc, PK_ENOTFOUND);
        } else if (idx >= m->n || idx < -m->n) {
            assert_int_equal(rc, PK_EINVAL);
        } else {
            assert_int_equal(rc, 0);
            snprintf(m->v[idx < 0 ? idx + m->n : idx], 4, "%s", val);
        }
        return;
    }
    case 4: {
        char pivot[4];
        int after = (int)(trnd() % 2), at = -1;
        int64_t got;
        if (m->n >= MAXLEN)
            return;
        snprintf(pivot, sizeof(pivot), "%u", trnd() % 5);
        assert_int_equal(pk_list_insert(t, parts[k], S(keys[k]), after,
                                        S(pivot), S(val), NOW, &got),
                         0);
        for (int i = 0; i < m->n && at < 0; i++)
            if (strcmp(m->v[i], pivot) == 0)
                at = i;
        if (m->n == 0) {
            assert_int_equal(got, 0);
        } else if (at < 0) {
            assert_int_equal(got, -1);
        } else {
            m_insert(m, at + after, val);
            assert_int_equal(got, m->n);
        }
        return;
    }
    case 5: {
        int64_t count = (int64_t)(trnd() % 5) - 2;
        uint64_t want = 0, lim = count == 0  ? UINT64_MAX
                                 : count < 0 ? (uint64_t)-count
                                             : (uint64_t)count;
        assert_int_equal(
            pk_list_rem(t, parts[k], S(keys[k]), count, S(val), NOW, &n), 0);
        if (count >= 0) {
            for (int i = 0; i < m->n && want < lim;)
                if (strcmp(m->v[i], val) == 0) {
                    m_remove(m, i);
                    want++;
                } else {
                    i++;
                }
        } else {
            for (int i = m->n - 1; i >= 0 && want < lim; i--)
                if (strcmp(m->v[i], val) == 0) {
                    m_remove(m, i);
                    want++;
                }
        }
        assert_int_equal(n, want);
        return;
    }
    case 6: {
        long a = (long)(trnd() % 12) - 6, b = (long)(trnd() % 12) - 6;
        assert_int_equal(pk_list_trim(t, parts[k], S(keys[k]), a, b, NOW), 0);
        m_trim(m, a, b);
        return;
    }
    case 7:
    case 8: {
        int d = (int)(trnd() % 3);
        unsigned from = trnd() % 2 ? PK_LIST_RIGHT : 0;
        unsigned to = trnd() % 2 ? PK_LIST_RIGHT : 0;
        char moved[4];
        int rc;
        if (ms[d].n >= MAXLEN)
            return;
        rc = pk_list_move(t, parts[k], S(keys[k]), parts[d], S(keys[d]), from,
                          to, NOW, &s);
        if (m->n == 0) {
            assert_int_equal(rc, PK_ENOTFOUND);
            return;
        }
        assert_int_equal(rc, 0);
        snprintf(moved, sizeof(moved), "%s", m->v[from ? m->n - 1 : 0]);
        assert_memory_equal(s.ptr, moved, s.len);
        m_remove(m, from ? m->n - 1 : 0);
        m_insert(&ms[d], to ? ms[d].n : 0, moved);
        return;
    }
    }
}

static void test_model(void **state)
{
    pk_store *st = ((tstore *)*state)->s;
    const char *keys[3] = {"a", "b", "c"};
    const uint32_t parts[3] = {7, 7, 9};
    model ms[3] = {0};

    for (int round = 0; round < 40; round++) {
        pk_txn *t = wtxn(st);
        assert_non_null(t);
        for (int i = 0; i < 100; i++) {
            one_op(t, keys, parts, ms);
            check(t, parts[0], keys[0], &ms[0]);
            check(t, parts[1], keys[1], &ms[1]);
            check(t, parts[2], keys[2], &ms[2]);
        }
        assert_int_equal(pk_txn_commit(t), 0);
    }
}

static void test_edges(void **state)
{
    pk_store *st = ((tstore *)*state)->s;
    pk_txn *t = wtxn(st);
    pk_slice v[3] = {{"x", 1}, {"y", 1}, {"x", 1}};
    uint64_t len = 7, n = 7;
    int64_t got;
    int done;

    /* LPUSHX on a missing key creates nothing. */
    assert_int_equal(pk_list_push(t, 1, S("l"), PK_LIST_XX, 1, v, NOW, &len),
                     0);
    assert_int_equal(len, 0);
    assert_int_equal(pk_list_push(t, 1, S("l"), 0, 0, v, NOW, &len), PK_EINVAL);
    /* LPUSH a b c makes c b a. */
    assert_int_equal(pk_list_push(t, 1, S("l"), 0, 3, v, NOW, &len), 0);
    assert_int_equal(len, 3);
    assert_int_equal(pk_list_index(t, 1, S("l"), INT64_MIN, NOW, v),
                     PK_ENOTFOUND);
    assert_int_equal(pk_list_index(t, 1, S("l"), INT64_MAX, NOW, v),
                     PK_ENOTFOUND);
    /* Wrong types, nothing written. */
    assert_int_equal(pk_str_set(t, 1, S("s"), S("v"), NULL, NOW, &done, NULL),
                     0);
    assert_int_equal(pk_list_push(t, 1, S("s"), 0, 1, v, NOW, &len),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_list_pop(t, 1, S("s"), 0, 1, NOW, NULL, NULL, &n),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_list_move(t, 1, S("l"), 1, S("s"), 0, 0, NOW, v),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_list_move(t, 1, S("s"), 1, S("l"), 0, 0, NOW, v),
                     PK_STORE_WRONGTYPE);
    assert_int_equal(pk_list_len(t, 1, S("l"), NOW, &len), 0);
    assert_int_equal(len, 3);
    assert_int_equal(pk_list_insert(t, 1, S("s"), 0, S("x"), S("y"), NOW, &got),
                     PK_STORE_WRONGTYPE);
    /* LPOS: x y x, ranks from either end. */
    assert_int_equal(
        pk_list_pos(t, 1, S("l"), S("x"), 0, 0, 0, NOW, NULL, NULL), PK_EINVAL);
    /* LTRIM of everything deletes the key. */
    assert_int_equal(pk_list_trim(t, 1, S("l"), INT64_MAX, INT64_MIN, NOW), 0);
    assert_int_equal(pk_list_len(t, 1, S("l"), NOW, &len), 0);
    assert_int_equal(len, 0);
    /* A huge count pops what there is. */
    assert_int_equal(pk_list_push(t, 1, S("l"), PK_LIST_RIGHT, 2, v, NOW, &len),
                     0);
    assert_int_equal(
        pk_list_pop(t, 1, S("l"), 0, UINT64_MAX, NOW, NULL, NULL, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pk_list_len(t, 1, S("l"), NOW, &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

typedef struct idx {
    uint64_t v[8];
    int n;
} idx;

static int idx_cb(void *ctx, uint64_t i)
{
    idx *p = ctx;

    p->v[p->n++] = i;
    return 0;
}

static void test_pos(void **state)
{
    pk_store *st = ((tstore *)*state)->s;
    pk_txn *t = wtxn(st);
    pk_slice v[5] = {{"a", 1}, {"b", 1}, {"a", 1}, {"c", 1}, {"a", 1}};
    uint64_t len;
    idx p = {0};

    assert_int_equal(pk_list_push(t, 1, S("l"), PK_LIST_RIGHT, 5, v, NOW, &len),
                     0);
    assert_int_equal(
        pk_list_pos(t, 1, S("l"), S("a"), 2, 0, 0, NOW, idx_cb, &p), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.v[0], 2);
    assert_int_equal(p.v[1], 4);
    p.n = 0;
    assert_int_equal(
        pk_list_pos(t, 1, S("l"), S("a"), -1, 2, 0, NOW, idx_cb, &p), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.v[0], 4);
    assert_int_equal(p.v[1], 2);
    p.n = 0;
    assert_int_equal(
        pk_list_pos(t, 1, S("l"), S("a"), 1, 0, 2, NOW, idx_cb, &p), 0);
    assert_int_equal(p.n, 1); /* MAXLEN 2 sees a b */
    p.n = 0;
    assert_int_equal(
        pk_list_pos(t, 1, S("l"), S("a"), INT64_MAX, 0, 0, NOW, idx_cb, &p), 0);
    assert_int_equal(p.n, 0);
    assert_int_equal(pk_txn_commit(t), 0);
}

/* A follower that applies the leader's log has the same lists. */
static void test_shipping(void **state)
{
    pk_store *st = ((tstore *)*state)->s;
    tstore *f = tstore_new();
    pk_slice v[3] = {{"1", 1}, {"2", 1}, {"3", 1}};
    uint64_t len, n;
    int64_t got;
    pk_txn *t = wtxn(st);
    tship sh;

    assert_non_null(f);
    assert_int_equal(pk_list_push(t, 3, S("l"), PK_LIST_RIGHT, 3, v, NOW, &len),
                     0);
    assert_int_equal(pk_list_insert(t, 3, S("l"), 0, S("2"), S("x"), NOW, &got),
                     0);
    assert_int_equal(pk_list_rem(t, 3, S("l"), -1, S("1"), NOW, &n), 0);
    assert_int_equal(
        pk_list_move(t, 3, S("l"), 3, S("m"), 0, PK_LIST_RIGHT, NOW, v), 0);
    assert_int_equal(pk_txn_commit(t), 0);
    t = wtxn(st);
    sh = (tship){wtxn(f->s), 3, 0, 0};
    assert_int_equal(pk_store_log_read(t, 3, 1, tship_cb, &sh), 0);
    assert_int_equal(sh.n, 4);
    assert_int_equal(pk_txn_commit(sh.t), 0);
    pk_txn_abort(t);
    assert_int_equal(tstore_same(st, f->s, 3), 0);
    tstore_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pos, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shipping, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

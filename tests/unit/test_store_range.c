/*
 * pk_store_range (PK.RANGE's store walk) against a model: random keys --
 * the empty key, keys with NUL and 0xFF bytes, long keys of up to ~330
 * bytes sharing their head with each other and with shorter keys (so the
 * walk meets zones, pk_store_range.c), expired keys, hashes among strings,
 * neighbours in the partitions on both sides -- and random bound pairs,
 * inclusive, exclusive and open, forward and reverse, read page by page
 * with random limits: the pages joined must equal the model's sorted
 * list, each page but the last full, and every key exactly once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_store_range.h"
#include "store/pk_str.h"
#include "store_testutil.h"

#define NOW 1700000000000ull
#define LATER (NOW + 5000) /* reads: keys set to expire at NOW + 1000 */
#define MAXK 700
#define KLEN 340
#define PART 1

typedef struct mkey {
    uint8_t b[KLEN];
    size_t len;
    uint32_t part;
    int type; /* PK_TYPE_STRING or PK_TYPE_HASH */
    int expired;
    char val[16];
} mkey;

typedef struct model {
    mkey k[MAXK];
    size_t n;
    uint8_t head[KLEN]; /* the shared head of the long keys */
} model;

static const uint8_t alpha[] = {0x00, 0x01, 'a', 'b', 'c', 0xFF};

static uint8_t rbyte(void)
{
    return alpha[trnd() % sizeof(alpha)];
}

static int kcmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;

    return c ? c : (al > bl) - (al < bl);
}

/* A random key: short, or a cut of the shared head plus a few bytes. */
static size_t gen_key(const model *m, uint8_t *out)
{
    size_t len = 0, cut;

    if (trnd() % 2 == 0) {
        len = trnd() % 7; /* 0: the empty key */
        for (size_t i = 0; i < len; i++) {
            out[i] = rbyte();
        }
        return len;
    }
    cut = 100 + trnd() % 230;
    memcpy(out, m->head, cut);
    len = cut + trnd() % 5;
    for (size_t i = cut; i < len; i++) {
        out[i] = rbyte();
    }
    return len;
}

static int find(const model *m, const uint8_t *b, size_t len, uint32_t part)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->k[i].part == part && kcmp(m->k[i].b, m->k[i].len, b, len) == 0)
            return (int)i;
    }
    return -1;
}

static void fill(pk_store *s, model *m)
{
    pk_txn *t = wtxn(s);
    int done;

    assert_non_null(t);
    for (size_t i = 0; i < KLEN; i++) {
        /* Mostly letters, a few NULs and FFs (escaped NULs shift heads). */
        m->head[i] = i % 37 == 5 ? 0x00 : i % 41 == 7 ? 0xFF : 'a' + i % 3;
    }
    while (m->n < MAXK) {
        mkey *k = &m->k[m->n];
        k->len = gen_key(m, k->b);
        k->part = trnd() % 5 == 0 ? trnd() % 3 : PART;
        if (find(m, k->b, k->len, k->part) >= 0) {
            continue;
        }
        k->type = trnd() % 4 == 0 ? PK_TYPE_HASH : PK_TYPE_STRING;
        k->expired = trnd() % 8 == 0;
        snprintf(k->val, sizeof(k->val), "v%zu", m->n);
        if (k->type == PK_TYPE_HASH) {
            pk_slice f[3] = {{(const uint8_t *)"f1", 2},
                             {(const uint8_t *)"f2", 2},
                             {(const uint8_t *)"\xff\xff", 2}};
            uint64_t added;
            assert_int_equal(
                pk_hmap_set(t, k->part, k->b, k->len, 3, f, f, NOW, &added), 0);
            if (k->expired) {
                assert_int_equal(pk_key_expire(t, k->part, k->b, k->len,
                                               NOW + 1000, 0, NOW, &done),
                                 0);
            }
        } else {
            pk_set_opts o = {0, k->expired ? NOW + 1000 : 0};
            assert_int_equal(pk_str_set(t, k->part, k->b, k->len, S(k->val), &o,
                                        NOW, &done, NULL),
                             0);
        }
        m->n++;
    }
    assert_int_equal(pk_txn_commit(t), 0);
}

/* What one read returned, joined over its pages. */
typedef struct got {
    int idx[MAXK + 1];
    size_t n;
    size_t page; /* keys in the current page */
    const model *m;
} got;

static int got_cb(void *ctx, pk_slice key, pk_type type, pk_slice val)
{
    got *g = ctx;
    int i = find(g->m, key.ptr, key.len, PART);

    assert_true(i >= 0);
    assert_int_equal(type, g->m->k[i].type);
    if (type == PK_TYPE_STRING) {
        assert_int_equal(val.len, strlen(g->m->k[i].val));
        assert_memory_equal(val.ptr, g->m->k[i].val, val.len);
    } else {
        assert_null(val.ptr);
    }
    assert_true(g->n < MAXK);
    g->idx[g->n++] = i;
    g->page++;
    return 0;
}

static int in_bound(const mkey *k, const pk_zlex *lo, const pk_zlex *hi)
{
    int a = lo->kind == PK_ZLEX_MIN ||
            (lo->kind != PK_ZLEX_MAX && kcmp(k->b, k->len, lo->ptr, lo->len) >=
                                            (lo->kind == PK_ZLEX_EXCL ? 1 : 0));
    int b =
        hi->kind == PK_ZLEX_MAX ||
        (hi->kind != PK_ZLEX_MIN && kcmp(k->b, k->len, hi->ptr, hi->len) <=
                                        (hi->kind == PK_ZLEX_EXCL ? -1 : 0));
    return a && b;
}

/* The model's answer: indexes of live keys of PART in range, in order. */
static size_t expect(const model *m, const pk_zlex *lo, const pk_zlex *hi,
                     int rev, int *out)
{
    size_t n = 0;

    for (size_t i = 0; i < m->n; i++) {
        const mkey *k = &m->k[i];
        if (k->part == PART && !k->expired && in_bound(k, lo, hi)) {
            size_t j = n++;
            /* Insertion sort: the lists are short. */
            while (j > 0) {
                const mkey *p = &m->k[out[j - 1]];
                int c = kcmp(p->b, p->len, k->b, k->len);
                if (rev ? c > 0 : c < 0)
                    break;
                out[j] = out[j - 1];
                j--;
            }
            out[j] = (int)i;
        }
    }
    return n;
}

/* A random bound: open, an existing key or a fresh one. */
static void gen_bound(const model *m, pk_zlex *b, uint8_t *buf, int low)
{
    unsigned r = trnd() % 10;

    if (r == 0) {
        *b = (pk_zlex){NULL, 0, low ? PK_ZLEX_MIN : PK_ZLEX_MAX};
        return;
    }
    if (r == 1) { /* the wrong end: an empty range */
        *b = (pk_zlex){NULL, 0, low ? PK_ZLEX_MAX : PK_ZLEX_MIN};
        return;
    }
    if (r < 6) {
        const mkey *k = &m->k[trnd() % m->n];
        memcpy(buf, k->b, k->len);
        b->len = k->len;
    } else {
        b->len = gen_key(m, buf);
    }
    b->ptr = buf;
    b->kind = trnd() % 2 ? PK_ZLEX_INCL : PK_ZLEX_EXCL;
}

/* Reads [lo, hi] page by page and checks the pages against the model. */
static void read_pages(pk_txn *t, const model *m, pk_zlex lo, pk_zlex hi,
                       int rev, size_t limit)
{
    static int want[MAXK];
    static got g;
    uint8_t last[KLEN];
    size_t nwant = expect(m, &lo, &hi, rev, want), pages = 0;
    int more = 1;

    g.n = 0;
    g.m = m;
    while (more) {
        g.page = 0;
        assert_int_equal(pk_store_range(t, PART, &lo, &hi, rev, limit, LATER,
                                        got_cb, &g, &more),
                         0);
        assert_true(g.page <= limit);
        if (more) {
            /* A page followed by more is full, and the next is not
             * empty (the look-ahead saw a key). */
            assert_int_equal(g.page, limit);
            const mkey *k = &m->k[g.idx[g.n - 1]];
            memcpy(last, k->b, k->len);
            pk_zlex next = {last, k->len, PK_ZLEX_EXCL};
            if (rev)
                hi = next;
            else
                lo = next;
        }
        assert_true(++pages <= MAXK + 1);
    }
    assert_int_equal(g.n, nwant);
    for (size_t i = 0; i < nwant; i++) {
        assert_int_equal(g.idx[i], want[i]);
    }
}

static void test_model(void **state)
{
    static model m;
    tstore *ts = tstore_new();
    pk_txn *t = NULL;
    uint8_t b1[KLEN], b2[KLEN];

    (void)state;
    assert_non_null(ts);
    m.n = 0;
    fill(ts->s, &m);
    for (int round = 0; round < 400; round++) {
        pk_zlex lo, hi;
        size_t limit = trnd() % 5 == 0 ? 1000 : 1 + trnd() % 9;
        int rev = trnd() % 2;
        gen_bound(&m, &lo, b1, 1);
        gen_bound(&m, &hi, b2, 0);
        if (round % 3 == 0 && lo.kind <= PK_ZLEX_EXCL &&
            hi.kind <= PK_ZLEX_EXCL &&
            kcmp(lo.ptr, lo.len, hi.ptr, hi.len) > 0) {
            pk_zlex tmp = lo; /* mostly non-empty ranges */
            lo = hi;
            hi = tmp;
        }
        /* Read transactions mostly, a write one now and then. */
        assert_int_equal(pk_txn_begin(ts->s, round % 5 != 0, &t), 0);
        read_pages(t, &m, lo, hi, rev, limit);
        pk_txn_abort(t);
    }
    /* The whole partition, forward and back, one key per page. */
    assert_int_equal(pk_txn_begin(ts->s, 1, &t), 0);
    read_pages(t, &m, (pk_zlex){NULL, 0, PK_ZLEX_MIN},
               (pk_zlex){NULL, 0, PK_ZLEX_MAX}, 0, 1);
    read_pages(t, &m, (pk_zlex){NULL, 0, PK_ZLEX_MIN},
               (pk_zlex){NULL, 0, PK_ZLEX_MAX}, 1, 1);
    pk_txn_abort(t);
    tstore_free(ts);
}

/* The empty key and keys of NULs and FFs, exact bounds, limit 0. */
static void test_edges(void **state)
{
    tstore *ts = tstore_new();
    const char *keys[] = {"",     "\x00",     "\x00\x00", "\x00\xff",
                          "\xff", "\xff\x00", "a"};
    const size_t lens[] = {0, 1, 2, 2, 1, 2, 1};
    pk_txn *t;
    got g = {0};
    model *m = calloc(1, sizeof(*m));
    int done, more;

    (void)state;
    assert_non_null(ts);
    assert_non_null(m);
    t = wtxn(ts->s);
    for (int i = 0; i < 7; i++) {
        memcpy(m->k[i].b, keys[i], lens[i]);
        m->k[i].len = lens[i];
        m->k[i].part = PART;
        m->k[i].type = PK_TYPE_STRING;
        snprintf(m->k[i].val, sizeof(m->k[i].val), "v%d", i);
        assert_int_equal(pk_str_set(t, PART, keys[i], lens[i], S(m->k[i].val),
                                    NULL, NOW, &done, NULL),
                         0);
    }
    m->n = 7;
    assert_int_equal(pk_txn_commit(t), 0);
    assert_int_equal(pk_txn_begin(ts->s, 1, &t), 0);
    g.m = m;
    /* "[" .. "[" is the empty key alone; "(" .. "+" all but it. */
    pk_zlex e = {"", 0, PK_ZLEX_INCL}, ex = {"", 0, PK_ZLEX_EXCL};
    pk_zlex mx = {NULL, 0, PK_ZLEX_MAX};
    assert_int_equal(
        pk_store_range(t, PART, &e, &e, 0, 10, NOW, got_cb, &g, &more), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.idx[0], 0);
    assert_int_equal(more, 0);
    g.n = 0;
    assert_int_equal(
        pk_store_range(t, PART, &ex, &mx, 0, 10, NOW, got_cb, &g, &more), 0);
    assert_int_equal(g.n, 6);
    for (int i = 0; i < 6; i++) {
        static const int order[] = {1, 2, 3, 6, 4, 5};
        assert_int_equal(g.idx[i], order[i]);
    }
    /* ("\0" .. ["\xff": strictly after \0, up to \xff, reversed. */
    pk_zlex lo = {"\x00", 1, PK_ZLEX_EXCL}, hi = {"\xff", 1, PK_ZLEX_INCL};
    g.n = 0;
    assert_int_equal(
        pk_store_range(t, PART, &lo, &hi, 1, 10, NOW, got_cb, &g, &more), 0);
    assert_int_equal(g.n, 4);
    assert_int_equal(g.idx[0], 4);
    assert_int_equal(g.idx[3], 2);
    assert_int_equal(
        pk_store_range(t, PART, &lo, &hi, 1, 0, NOW, got_cb, &g, &more),
        PK_EINVAL);
    pk_txn_abort(t);
    free(m);
    tstore_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Tests of local index entries (store/pk_ftidx.c): a hash's entries follow
 * its writes and deletion exactly; lookups by tag, number range, word and
 * prefix find the documents; keys with NULs and long keys come back
 * whole; the entries replicate through the change log and snapshot with
 * the partition; the build indexes what was there; a drop removes every
 * entry; and no walk over keys (SCAN, DBSIZE, RANDOMKEY) sees them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/pk_ftdef.h"
#include "ft_testutil.h"
#include "store/pk_ftidx.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyenc.h"
#include "store/pk_keyops.h"
#include "store_testutil.h"

#define PART 42
#define NOW 1000

static pk_ftdef *mkdef(void)
{
    return ft_mkdef(7);
}

static void hsetn(pk_txn *t, const void *key, size_t klen, const char *f,
                  const char *v, size_t vlen)
{
    pk_slice fs = {f, strlen(f)}, vs = {v, vlen};
    uint64_t added;

    assert_int_equal(pk_hmap_set(t, PART, key, klen, 1, &fs, &vs, NOW, &added),
                     0);
}

static void hset(pk_txn *t, const void *key, size_t klen, const char *f,
                 const char *v)
{
    hsetn(t, key, klen, f, v, strlen(v));
}

static int hit_cb(void *ctx, pk_slice key)
{
    hits *h = ctx;

    hits_add(h, key);
    return 0;
}

static hits look(pk_txn *t, uint8_t kind, uint32_t field, const char *term,
                 double lo, double hi, int lo_excl)
{
    pk_ftq_scan sc = {.kind = kind,
                      .field = field,
                      .term = term,
                      .len = term ? strlen(term) : 0,
                      .lo = lo,
                      .hi = hi,
                      .lo_excl = lo_excl};
    hits h = {.len = 0};

    assert_int_equal(pk_ftidx_scan(t, PART, 7, &sc, hit_cb, &h), 0);
    return h;
}

static void test_follow_writes(void **state)
{
    tstore *ts = tstore_new();
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(ts->s);
    uint64_t docs, bytes, n;
    int del;

    (void)state;
    hset(t, S("doc:1"), "tag", "a, B");
    hset(t, S("doc:1"), "n", "5");
    hset(t, S("doc:1"), "body", "Hello, the world");
    hset(t, S("other:1"), "tag", "a");
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:1"), NOW), 0);
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("other:1"), NOW), 0);
    assert_int_equal(pk_txn_commit(t), 0);

    t = wtxn(ts->s);
    assert_string_equal(look(t, PK_FTQ_EXACT, 0, "b", 0, 0, 0).buf, "doc:1|");
    assert_int_equal(look(t, PK_FTQ_EXACT, 0, "B", 0, 0, 0).n, 0);
    assert_string_equal(look(t, PK_FTQ_RANGE, 1, NULL, 0, 10, 0).buf, "doc:1|");
    assert_int_equal(look(t, PK_FTQ_RANGE, 1, NULL, 5, 10, 1).n, 0);
    assert_int_equal(look(t, PK_FTQ_RANGE, 1, NULL, 6, 10, 0).n, 0);
    assert_string_equal(look(t, PK_FTQ_EXACT, 2, "hello", 0, 0, 0).buf,
                        "doc:1|");
    assert_int_equal(look(t, PK_FTQ_EXACT, 2, "the", 0, 0, 0).n, 0);
    assert_string_equal(look(t, PK_FTQ_PREFIX, 2, "wor", 0, 0, 0).buf,
                        "doc:1|");
    assert_int_equal(look(t, PK_FTQ_EXACT, 2, "wor", 0, 0, 0).n, 0);
    assert_int_equal(pk_ftidx_count(t, PART, 7, &docs, &bytes), 0);
    assert_int_equal(docs, 1);

    /* A new value: the old tag goes, the new one comes. */
    hset(t, S("doc:1"), "tag", "c");
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:1"), NOW), 0);
    assert_int_equal(look(t, PK_FTQ_EXACT, 0, "b", 0, 0, 0).n, 0);
    assert_string_equal(look(t, PK_FTQ_EXACT, 0, "c", 0, 0, 0).buf, "doc:1|");

    /* Deleted: nothing left of it. */
    assert_int_equal(pk_key_del(t, PART, S("doc:1"), NOW, &del), 0);
    assert_int_equal(del, 1);
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:1"), NOW), 0);
    assert_int_equal(pk_ftidx_count(t, PART, 7, &docs, &bytes), 0);
    assert_int_equal(docs, 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(pk_ftidx_next_id(t, PART, 0, &n), PK_ENOTFOUND);
    pk_txn_abort(t);
    pk_ftdef_free(d);
    tstore_free(ts);
}

/* Keys holding NULs, and keys past the short form, come back whole. */
static void test_odd_keys(void **state)
{
    tstore *ts = tstore_new();
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(ts->s);
    char lk[400];
    const char nk[] = "doc:a\0b";
    hits h;

    (void)state;
    memcpy(lk, "doc:", 4);
    memset(lk + 4, 'x', sizeof(lk) - 4);
    hset(t, lk, sizeof(lk), "tag", "t");
    hsetn(t, nk, sizeof(nk) - 1, "tag", "t\0u", 3);
    assert_int_equal(pk_ftidx_doc(t, PART, d, lk, sizeof(lk), NOW), 0);
    assert_int_equal(pk_ftidx_doc(t, PART, d, nk, sizeof(nk) - 1, NOW), 0);
    h = look(t, PK_FTQ_EXACT, 0, "t", 0, 0, 0);
    assert_int_equal(h.n, 1);
    assert_int_equal(h.len, sizeof(lk) + 1);
    assert_memory_equal(h.buf, lk, sizeof(lk));
    h = look(t, PK_FTQ_PREFIX, 0, "t", 0, 0, 0);
    assert_int_equal(h.n, 2);
    {
        pk_ftq_scan sc = {
            .kind = PK_FTQ_EXACT, .field = 0, .term = "t\0u", .len = 3};
        hits g = {.len = 0};
        assert_int_equal(pk_ftidx_scan(t, PART, 7, &sc, hit_cb, &g), 0);
        assert_int_equal(g.n, 1);
        assert_memory_equal(g.buf, nk, sizeof(nk) - 1);
    }
    pk_txn_abort(t);
    pk_ftdef_free(d);
    tstore_free(ts);
}

static int count_key(void *ctx, uint32_t part, pk_slice key)
{
    (void)part;
    (void)key;
    ++*(int *)ctx;
    return 0;
}

/* Walks over keys see no entry; the log and a snapshot carry them. */
static void test_walks_and_copies(void **state)
{
    two *w = *state;
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(w->a->s), *u;
    uint64_t n, next, docs, bytes;
    pk_scan_opts o = {.count = 100};
    tship sh;
    pk_slice rk;
    int seen = 0;

    hset(t, S("doc:1"), "tag", "x");
    hset(t, S("doc:2"), "body", "words here");
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:1"), NOW), 0);
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:2"), NOW), 0);
    assert_int_equal(pk_txn_commit(t), 0);

    t = wtxn(w->a->s);
    assert_int_equal(pk_store_dbsize(t, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(pk_store_scan(t, 0, &o, NOW, count_key, &seen, &next), 0);
    assert_int_equal(seen, 2);
    for (uint64_t r = 0; r < 20; r++) {
        assert_int_equal(pk_key_random(t, PART, r, NOW, &rk), 0);
        assert_true(rk.len == 5 && memcmp(rk.ptr, "doc:", 4) == 0);
    }

    u = wtxn(w->b->s);
    sh = (tship){u, PART, 0, 0};
    assert_int_equal(pk_store_log_read(t, PART, 0, tship_cb, &sh), 0);
    assert_int_equal(pk_txn_commit(u), 0);
    pk_txn_abort(t);
    assert_int_equal(tstore_same(w->a->s, w->b->s, PART), 0);
    u = wtxn(w->b->s);
    assert_string_equal(look(u, PK_FTQ_EXACT, 0, "x", 0, 0, 0).buf, "doc:1|");
    assert_int_equal(pk_ftidx_count(u, PART, 7, &docs, &bytes), 0);
    assert_int_equal(docs, 2);
    pk_txn_abort(u);
    pk_ftdef_free(d);
}

/* The build indexes what was written before; a drop takes it all. */
static void test_build_and_drop(void **state)
{
    tstore *ts = tstore_new();
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(ts->s);
    uint8_t cur[PK_KEYENC_MAX];
    size_t clen = 0;
    uint64_t docs, bytes, id;
    char key[32];
    int done = 0, steps = 0;

    (void)state;
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "%s:%d", i % 5 ? "doc" : "other", i);
        hset(t, key, strlen(key), "n", i % 2 ? "1" : "2");
    }
    assert_int_equal(pk_ftidx_built(t, PART, d), 0);
    while (!done) {
        uint32_t budget = 7;
        assert_int_equal(
            pk_ftidx_build(t, PART, d, cur, &clen, &budget, NOW, &done), 0);
        assert_true(done || budget == 0);
        steps++;
    }
    assert_true(steps >= 50 / 7);
    assert_int_equal(pk_ftidx_built(t, PART, d), 1);
    assert_int_equal(pk_ftidx_count(t, PART, 7, &docs, &bytes), 0);
    assert_int_equal(docs, 40);
    assert_int_equal(look(t, PK_FTQ_RANGE, 1, NULL, 1, 1, 0).n, 20);
    assert_int_equal(pk_ftidx_next_id(t, PART, 0, &id), 0);
    assert_int_equal(id, 7);
    assert_int_equal(pk_ftidx_next_id(t, PART, 7, &id), PK_ENOTFOUND);
    assert_int_equal(pk_ftidx_drop(t, PART, 7), 0);
    assert_int_equal(pk_ftidx_count(t, PART, 7, &docs, &bytes), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(pk_ftidx_built(t, PART, d), 0);
    pk_txn_abort(t);
    pk_ftdef_free(d);
    tstore_free(ts);
}

/* Active expiry takes a document's entries with it. */
static void test_expiry(void **state)
{
    tstore *ts = tstore_new();
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(ts->s);
    uint64_t docs, bytes;
    size_t n;
    int done;

    (void)state;
    hset(t, S("doc:1"), "tag", "x");
    hset(t, S("doc:2"), "tag", "x");
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:1"), NOW), 0);
    assert_int_equal(pk_ftidx_doc(t, PART, d, S("doc:2"), NOW), 0);
    assert_int_equal(
        pk_key_expire(t, PART, S("doc:1"), NOW + 10, 0, NOW, &done), 0);
    assert_int_equal(pk_store_expire_cycle(t, NOW + 20, 10, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_ftidx_count(t, PART, 7, &docs, &bytes), 0);
    assert_int_equal(docs, 1);
    assert_string_equal(look(t, PK_FTQ_EXACT, 0, "x", 0, 0, 0).buf, "doc:2|");
    pk_txn_abort(t);
    pk_ftdef_free(d);
    tstore_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follow_writes),
        cmocka_unit_test(test_odd_keys),
        cmocka_unit_test_setup_teardown(test_walks_and_copies, two_setup,
                                        two_teardown),
        cmocka_unit_test(test_build_and_drop),
        cmocka_unit_test(test_expiry),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

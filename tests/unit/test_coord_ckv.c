/*
 * Tests of the embedded coordinator's state machine (pk_ckv): revisions,
 * reads by key and prefix, compare-and-swap, leases (expiry, renewal,
 * revocation), watches (from the past, in order, exactly once, with
 * events created and watches cancelled during delivery, compaction), and
 * batches (commit delivers, abort undoes).  Outside sanitizer builds,
 * malloc is wrapped to fail the k-th allocation, for every k, to check
 * that a failed mutation changes nothing and leaks nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coord/pk_ckv.h"
#include "coord/pk_coord.h"
#include "core/pk_err.h"
#include "testutil.h"

/* ---- helpers ---------------------------------------------------------- */

#define S(s) (s), strlen(s)

static pk_ckv *ckv_new(uint32_t hist)
{
    pk_ckv_opts o = {hist, 0};
    pk_ckv *s = NULL;

    assert_int_equal(pk_ckv_new(&o, &s), PK_OK);
    return s;
}

static uint64_t put(pk_ckv *s, const char *k, const char *v, uint64_t lease)
{
    pk_coord_kv kv;

    assert_int_equal(pk_ckv_put(s, S(k), S(v), lease, 0, &kv), PK_OK);
    /* Watch callbacks run by the put may have written more since. */
    assert_true(kv.mod_revision <= pk_ckv_revision(s));
    return kv.mod_revision;
}

static void expect_kv(const pk_ckv *s, const char *k, const char *v,
                      uint64_t create, uint64_t mod, uint64_t version)
{
    pk_coord_kv kv;

    assert_int_equal(pk_ckv_get(s, S(k), &kv), PK_OK);
    assert_int_equal(kv.value_len, strlen(v));
    assert_memory_equal(kv.value != NULL ? (const void *)kv.value : "", v,
                        strlen(v));
    assert_int_equal(kv.create_revision, create);
    assert_int_equal(kv.mod_revision, mod);
    assert_int_equal(kv.version, version);
}

static void expect_missing(const pk_ckv *s, const char *k)
{
    pk_coord_kv kv;

    assert_int_equal(pk_ckv_get(s, S(k), &kv), PK_ENOTFOUND);
}

/* A watcher that records what it is given. */
#define REC_MAX 256
typedef struct recorder {
    int n;
    uint64_t rev[REC_MAX];
    uint8_t type[REC_MAX];
    char key[REC_MAX][16];
    int err;       /* terminal rc, 0 if none */
    int after_err; /* calls after a terminal one (must stay 0) */
    /* optional behaviour */
    pk_ckv *s;
    pk_ckv_watch *self;
    int cancel_after; /* cancel self after this many events (0: never) */
} recorder;

static void record(void *ctx, int rc, const pk_coord_event *ev)
{
    recorder *r = ctx;

    if (r->err != 0) {
        r->after_err++;
        return;
    }
    if (rc != PK_OK) {
        assert_null(ev);
        r->err = rc;
        return;
    }
    assert_true(r->n < REC_MAX);
    assert_int_equal(ev->revision, ev->kv.mod_revision);
    r->rev[r->n] = ev->revision;
    r->type[r->n] = ev->type;
    snprintf(r->key[r->n], sizeof(r->key[0]), "%.*s", (int)ev->kv.key_len,
             (const char *)ev->kv.key);
    r->n++;
    if (r->cancel_after != 0 && r->n == r->cancel_after) {
        pk_ckv_watch_cancel(r->self);
    }
}

/* Checks strictly increasing revisions: order and exactly-once. */
static void expect_ordered(const recorder *r)
{
    for (int i = 1; i < r->n; i++) {
        assert_true(r->rev[i - 1] < r->rev[i]);
    }
    assert_int_equal(r->after_err, 0);
}

/* ---- revisions, reads, cas -------------------------------------------- */

static void test_revisions(void **state)
{
    pk_ckv *s = ckv_new(0);
    pk_coord_kv kv;
    uint64_t id;

    (void)state;
    assert_int_equal(pk_ckv_revision(s), 0);
    assert_int_equal(pk_ckv_oldest_revision(s), 1);
    assert_int_equal(put(s, "a", "1", 0), 1);
    expect_kv(s, "a", "1", 1, 1, 1);
    assert_int_equal(put(s, "a", "2", 0), 2);
    expect_kv(s, "a", "2", 1, 2, 2);
    assert_int_equal(put(s, "b", "", 0), 3);
    expect_kv(s, "b", "", 3, 3, 1);
    assert_int_equal(pk_ckv_delete(s, S("a")), PK_OK);
    assert_int_equal(pk_ckv_revision(s), 4);
    expect_missing(s, "a");
    /* A delete of nothing, a failed cas and a lease grant: no revision. */
    assert_int_equal(pk_ckv_delete(s, S("a")), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_cas(s, S("b"), 99, S("x"), 0, 0, &kv), PK_ESTALE);
    assert_int_equal(pk_ckv_lease_grant(s, 1000, 0, &id), PK_OK);
    assert_int_equal(pk_ckv_lease_keepalive(s, id, 1), PK_OK);
    assert_int_equal(pk_ckv_revision(s), 4);
    /* Recreated keys start over. */
    assert_int_equal(put(s, "a", "3", 0), 5);
    expect_kv(s, "a", "3", 5, 5, 1);
    assert_int_equal(pk_ckv_count(s), 2);
    /* Bad arguments. */
    assert_int_equal(pk_ckv_put(s, "", 0, S("x"), 0, 0, NULL), PK_EINVAL);
    assert_int_equal(pk_ckv_put(s, NULL, 1, S("x"), 0, 0, NULL), PK_EINVAL);
    assert_int_equal(pk_ckv_put(s, S("k"), NULL, 1, 0, 0, NULL), PK_EINVAL);
    assert_int_equal(pk_ckv_get(s, "", 0, &kv), PK_EINVAL);
    assert_int_equal(pk_ckv_revision(s), 5);
    pk_ckv_free(s);
}

static void test_get_range_prefix(void **state)
{
    static const char *keys[] = {"a", "ab", "abc", "b", "b/1", "b/2", "c"};
    static const uint8_t bin[][3] = {{'b', 0x00, 1}, {'b', 0xff, 2}};
    pk_ckv *s = ckv_new(0);
    pk_coord_kv *kvs = NULL;
    size_t n = 0;

    (void)state;
    /* Insert in a scrambled order; reads come back sorted. */
    for (int i = 6; i >= 0; i -= 2) {
        put(s, keys[i], keys[i], 0);
    }
    for (int i = 5; i >= 0; i -= 2) {
        put(s, keys[i], keys[i], 0);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pk_ckv_put(s, bin[i], 3, "v", 1, 0, 0, NULL), PK_OK);
    }
    assert_int_equal(pk_ckv_range(s, NULL, 0, &kvs, &n), PK_OK);
    assert_int_equal(n, 9);
    /* a ab abc b b\0\1 b/1 b/2 b\xff\2 c: bytes compare unsigned. */
    assert_int_equal(kvs[0].key_len, 1);
    assert_memory_equal(kvs[3].key, "b", 1);
    assert_memory_equal(kvs[4].key, bin[0], 3);
    assert_memory_equal(kvs[5].key, "b/1", 3);
    assert_memory_equal(kvs[7].key, bin[1], 3);
    assert_memory_equal(kvs[8].key, "c", 1);
    for (size_t i = 0; i < n; i++) {
        if (i != 4 && i != 7) {
            assert_int_equal(kvs[i].value_len, kvs[i].key_len);
            assert_memory_equal(kvs[i].value, kvs[i].key, kvs[i].key_len);
        }
    }
    free(kvs);
    assert_int_equal(pk_ckv_range(s, S("ab"), &kvs, &n), PK_OK);
    assert_int_equal(n, 2);
    assert_memory_equal(kvs[0].key, "ab", 2);
    assert_memory_equal(kvs[1].key, "abc", 3);
    free(kvs);
    assert_int_equal(pk_ckv_range(s, S("b/"), &kvs, &n), PK_OK);
    assert_int_equal(n, 2);
    assert_memory_equal(kvs[1].key, "b/2", 3);
    free(kvs);
    assert_int_equal(pk_ckv_range(s, S("b"), &kvs, &n), PK_OK);
    assert_int_equal(n, 5);
    free(kvs);
    assert_int_equal(pk_ckv_range(s, "b\xff", 2, &kvs, &n), PK_OK);
    assert_int_equal(n, 1);
    free(kvs);
    assert_int_equal(pk_ckv_range(s, S("abcd"), &kvs, &n), PK_OK);
    assert_int_equal(n, 0);
    assert_null(kvs);
    assert_int_equal(pk_ckv_range(s, S("z"), &kvs, &n), PK_OK);
    assert_int_equal(n, 0);
    expect_missing(s, "b/");
    expect_kv(s, "abc", "abc", 3, 3, 1);
    pk_ckv_free(s);
}

static void test_cas(void **state)
{
    pk_ckv *s = ckv_new(0);
    pk_coord_kv kv;
    uint64_t rev;

    (void)state;
    /* 0 means "must not exist". */
    assert_int_equal(pk_ckv_cas(s, S("k"), 0, S("v1"), 0, 0, &kv), PK_OK);
    assert_int_equal(kv.mod_revision, 1);
    memset(&kv, 0, sizeof(kv));
    assert_int_equal(pk_ckv_cas(s, S("k"), 0, S("v2"), 0, 0, &kv), PK_ESTALE);
    assert_int_equal(kv.mod_revision, 1); /* the current kv comes back */
    assert_memory_equal(kv.value, "v1", 2);
    assert_int_equal(pk_ckv_revision(s), 1);
    /* The right revision wins, a stale one loses. */
    rev = put(s, "other", "x", 0);
    assert_int_equal(pk_ckv_cas(s, S("k"), 1, S("v3"), 0, 0, &kv), PK_OK);
    assert_int_equal(kv.mod_revision, rev + 1);
    assert_int_equal(kv.version, 2);
    assert_int_equal(pk_ckv_cas(s, S("k"), 1, S("v4"), 0, 0, &kv), PK_ESTALE);
    assert_int_equal(kv.mod_revision, rev + 1);
    assert_memory_equal(kv.value, "v3", 2);
    /* Expecting a key that does not exist: the current kv is "none". */
    memset(&kv, 0xab, sizeof(kv));
    assert_int_equal(pk_ckv_cas(s, S("nokey"), 7, S("v"), 0, 0, &kv),
                     PK_ESTALE);
    assert_null(kv.key);
    assert_int_equal(kv.mod_revision, 0);
    /* A cas with a missing lease fails without a revision. */
    assert_int_equal(pk_ckv_cas(s, S("k"), rev + 1, S("v"), 42, 0, &kv),
                     PK_ENOTFOUND);
    assert_int_equal(pk_ckv_revision(s), rev + 1);
    expect_kv(s, "k", "v3", 1, rev + 1, 2);
    pk_ckv_free(s);
}

/* ---- leases ----------------------------------------------------------- */

static void test_lease_expiry(void **state)
{
    pk_ckv *s = ckv_new(0);
    recorder r = {0};
    pk_ckv_watch *w = NULL;
    uint64_t id, id2, rev;
    uint32_t n = 9;

    (void)state;
    assert_int_equal(pk_ckv_lease_grant(s, 100, 1000, &id), PK_OK);
    assert_int_equal(pk_ckv_lease_grant(s, 500, 1000, &id2), PK_OK);
    assert_true(id != 0 && id2 != id);
    assert_int_equal(pk_ckv_next_deadline(s), 1100);
    assert_int_equal(pk_ckv_put(s, S("node/b"), S("x"), id, 1000, NULL), 0);
    assert_int_equal(pk_ckv_put(s, S("node/a"), S("x"), id, 1000, NULL), 0);
    assert_int_equal(pk_ckv_put(s, S("node/c"), S("x"), id2, 1000, NULL), 0);
    rev = put(s, "map", "m", 0);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &r, &w), 0);
    assert_int_equal(pk_ckv_tick(s, 1099, &n), PK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(r.n, 0);
    assert_int_equal(pk_ckv_tick(s, 1100, &n), PK_OK);
    assert_int_equal(n, 1);
    /* Two deletions, in key order, one revision each, seen by watchers. */
    assert_int_equal(pk_ckv_revision(s), rev + 2);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.key[0], "node/a");
    assert_string_equal(r.key[1], "node/b");
    assert_int_equal(r.type[0], PK_COORD_DELETE);
    assert_int_equal(r.type[1], PK_COORD_DELETE);
    assert_int_equal(r.rev[0], rev + 1);
    assert_int_equal(r.rev[1], rev + 2);
    expect_missing(s, "node/a");
    expect_missing(s, "node/b");
    expect_kv(s, "node/c", "x", 3, 3, 1);
    expect_kv(s, "map", "m", rev, rev, 1);
    /* The expired lease is gone. */
    assert_int_equal(pk_ckv_lease_keepalive(s, id, 1100), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_lease_revoke(s, id), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_put(s, S("k"), S("v"), id, 1100, NULL),
                     PK_ENOTFOUND);
    assert_int_equal(pk_ckv_next_deadline(s), 1500);
    /* A due lease is expired before tick runs: no renewal, no attach. */
    assert_int_equal(pk_ckv_lease_keepalive(s, id2, 1500), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_put(s, S("k"), S("v"), id2, 1500, NULL),
                     PK_ENOTFOUND);
    expect_kv(s, "node/c", "x", 3, 3, 1); /* still there until the tick */
    assert_int_equal(pk_ckv_tick(s, 5000, &n), PK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.key[2], "node/c");
    assert_int_equal(pk_ckv_next_deadline(s), UINT64_MAX);
    expect_ordered(&r);
    pk_ckv_free(s);
}

static void test_lease_keepalive(void **state)
{
    pk_ckv *s = ckv_new(0);
    uint64_t id, ttl, left;
    uint32_t n;

    (void)state;
    assert_int_equal(pk_ckv_lease_grant(s, 100, 0, &id), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("k"), S("v"), id, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_lease_keepalive(s, id, 90), PK_OK);
    assert_int_equal(pk_ckv_lease_ttl(s, id, 150, &ttl, &left), PK_OK);
    assert_int_equal(ttl, 100);
    assert_int_equal(left, 40);
    assert_int_equal(pk_ckv_tick(s, 150, &n), PK_OK);
    assert_int_equal(n, 0);
    expect_kv(s, "k", "v", 1, 1, 1);
    assert_int_equal(pk_ckv_lease_keepalive(s, id, 189), PK_OK);
    assert_int_equal(pk_ckv_tick(s, 288, &n), PK_OK);
    assert_int_equal(n, 0);
    /* At the deadline exactly, it has expired. */
    assert_int_equal(pk_ckv_lease_ttl(s, id, 289, &ttl, &left), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_lease_keepalive(s, id, 289), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_tick(s, 289, &n), PK_OK);
    assert_int_equal(n, 1);
    expect_missing(s, "k");
    assert_int_equal(pk_ckv_lease_keepalive(s, 12345, 0), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_lease_grant(s, 0, 0, &id), PK_EINVAL);
    assert_int_equal(pk_ckv_lease_grant(s, PK_COORD_TTL_MAX_MS + 1, 0, &id),
                     PK_EINVAL);
    /* A huge TTL near the end of the clock saturates, never wraps. */
    assert_int_equal(
        pk_ckv_lease_grant(s, PK_COORD_TTL_MAX_MS, UINT64_MAX - 5, &id), PK_OK);
    assert_int_equal(pk_ckv_next_deadline(s), UINT64_MAX);
    pk_ckv_free(s);
}

static void test_lease_revoke(void **state)
{
    pk_ckv *s = ckv_new(0);
    recorder r = {0};
    pk_ckv_watch *w = NULL;
    uint64_t id;

    (void)state;
    assert_int_equal(pk_ckv_lease_grant(s, 10000, 0, &id), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("x"), S("1"), id, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("y"), S("1"), id, 0, NULL), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("z"), S("1"), id, 0, NULL), PK_OK);
    /* A put without the lease detaches the key from it. */
    put(s, "y", "2", 0);
    assert_int_equal(pk_ckv_watch_start(s, S("x"), 0, record, &r, &w), 0);
    assert_int_equal(pk_ckv_lease_revoke(s, id), PK_OK);
    assert_int_equal(pk_ckv_revision(s), 6);
    expect_missing(s, "x");
    expect_missing(s, "z");
    expect_kv(s, "y", "2", 2, 4, 2);
    assert_int_equal(r.n, 1); /* the watcher only asked for "x" */
    assert_int_equal(r.rev[0], 5);
    assert_int_equal(r.type[0], PK_COORD_DELETE);
    assert_int_equal(pk_ckv_lease_revoke(s, id), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_put(s, S("x"), S("1"), id, 0, NULL), PK_ENOTFOUND);
    assert_int_equal(pk_ckv_put(s, S("x"), S("1"), 999, 0, NULL), PK_ENOTFOUND);
    /* Ids are not reused. */
    {
        uint64_t id2;

        assert_int_equal(pk_ckv_lease_grant(s, 10, 0, &id2), PK_OK);
        assert_true(id2 > id);
    }
    pk_ckv_watch_cancel(w);
    pk_ckv_free(s);
}

/* ---- watches ---------------------------------------------------------- */

static void test_watch_from_past(void **state)
{
    pk_ckv *s = ckv_new(0);
    recorder all = {0};
    recorder pre = {0};
    pk_ckv_watch *w1 = NULL;
    pk_ckv_watch *w2 = NULL;
    char k[16];

    (void)state;
    for (int i = 0; i < 20; i++) {
        snprintf(k, sizeof(k), "%s/%d", i % 2 ? "w" : "v", i % 5);
        put(s, k, "x", 0);
    }
    assert_int_equal(pk_ckv_delete(s, S("w/1")), PK_OK); /* revision 21 */
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 5, record, &all, &w1), 0);
    assert_int_equal(pk_ckv_watch_start(s, S("w/"), 5, record, &pre, &w2), 0);
    /* Delivered before watch_start returned: revisions 5..21. */
    assert_int_equal(all.n, 17);
    for (int i = 0; i < all.n; i++) {
        assert_int_equal(all.rev[i], 5 + i);
    }
    assert_int_equal(all.type[16], PK_COORD_DELETE);
    /* Only the odd puts (keys "w/...") and the delete match the prefix. */
    assert_int_equal(pre.n, 9);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(pre.rev[i], 6 + 2 * i);
    }
    assert_int_equal(pre.rev[8], 21);
    /* Live events follow, exactly once. */
    put(s, "w/9", "y", 0);
    put(s, "v/9", "y", 0);
    assert_int_equal(all.n, 19);
    assert_int_equal(pre.n, 10);
    assert_int_equal(pre.rev[9], 22);
    expect_ordered(&all);
    expect_ordered(&pre);
    /* From the future: nothing until that revision. */
    {
        recorder fut = {0};
        pk_ckv_watch *w3 = NULL;

        assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 26, record, &fut, &w3),
                         0);
        put(s, "a", "1", 0);
        put(s, "a", "2", 0);
        assert_int_equal(fut.n, 0);
        put(s, "a", "3", 0);
        assert_int_equal(fut.n, 1);
        assert_int_equal(fut.rev[0], 26);
        /* From 0: the next revision. */
        pk_ckv_watch_cancel(w3);
        memset(&fut, 0, sizeof(fut));
        assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &fut, &w3),
                         0);
        assert_int_equal(fut.n, 0);
        put(s, "a", "4", 0);
        assert_int_equal(fut.n, 1);
        assert_int_equal(fut.rev[0], 27);
        pk_ckv_watch_cancel(w3);
        put(s, "a", "5", 0);
        assert_int_equal(fut.n, 1);
    }
    pk_ckv_watch_cancel(w1);
    pk_ckv_watch_cancel(w2);
    put(s, "w/0", "z", 0);
    assert_int_equal(pre.n, 10);
    pk_ckv_free(s);
}

/* A watcher whose callback writes while history is being delivered. */
typedef struct writer {
    recorder r;
    pk_ckv *s;
    int writes_left;
} writer;

static void write_on_event(void *ctx, int rc, const pk_coord_event *ev)
{
    writer *wr = ctx;

    record(&wr->r, rc, ev);
    if (rc == PK_OK && wr->writes_left > 0 && ev->revision % 3 == 0) {
        char k[16];

        snprintf(k, sizeof(k), "n/%d", wr->writes_left--);
        put(wr->s, k, "nested", 0);
    }
}

static void test_watch_events_during_delivery(void **state)
{
    pk_ckv *s = ckv_new(0);
    writer wr = {.s = s, .writes_left = 4};
    recorder live = {0};
    recorder late = {0};
    pk_ckv_watch *wl = NULL;
    pk_ckv_watch *ww = NULL;
    pk_ckv_watch *wx = NULL;

    (void)state;
    /* A live watcher registered first, so it is delivered to first. */
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &live, &wl), 0);
    for (int i = 0; i < 10; i++) {
        put(s, "k", "v", 0);
    }
    /* From revision 1: events 3, 6, 9 trigger puts 11, 12, 13, and 12
     * triggers 14 -- each delivered after everything before it. */
    assert_int_equal(
        pk_ckv_watch_start(s, NULL, 0, 1, write_on_event, &wr, &ww), 0);
    assert_int_equal(pk_ckv_revision(s), 14);
    assert_int_equal(wr.r.n, 14);
    for (int i = 0; i < 14; i++) {
        assert_int_equal(wr.r.rev[i], i + 1);
    }
    assert_int_equal(live.n, 14);
    for (int i = 0; i < 14; i++) {
        assert_int_equal(live.rev[i], i + 1);
    }
    /* Live writes from inside a callback: two watchers, both in order. */
    wr.writes_left = 3;
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &late, &wx), 0);
    /* 15 triggers 16; 18 triggers 19; 21 triggers 22. */
    for (int i = 0; i < 5; i++) {
        put(s, "k", "v", 0);
    }
    assert_int_equal(pk_ckv_revision(s), 22);
    assert_int_equal(wr.r.n, 22);
    assert_int_equal(live.n, 22);
    for (int i = 0; i < 22; i++) {
        assert_int_equal(wr.r.rev[i], i + 1);
        assert_int_equal(live.rev[i], i + 1);
    }
    assert_int_equal(late.n, 22 - 14);
    for (int i = 0; i < late.n; i++) {
        assert_int_equal(late.rev[i], 15 + i);
    }
    expect_ordered(&late);
    pk_ckv_free(s); /* frees the watchers too */
}

static void test_watch_cancel_in_callback(void **state)
{
    pk_ckv *s = ckv_new(0);
    recorder a = {0};
    recorder b = {0};

    (void)state;
    for (int i = 0; i < 10; i++) {
        put(s, "k", "v", 0);
    }
    a.cancel_after = 3;
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 1, record, &a, &a.self), 0);
    assert_int_equal(a.n, 3);
    b.cancel_after = 2;
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &b, &b.self), 0);
    put(s, "k", "v", 0);
    put(s, "k", "v", 0);
    put(s, "k", "v", 0);
    assert_int_equal(a.n, 3);
    assert_int_equal(b.n, 2);
    pk_ckv_free(s);
}

static void test_watch_compacted(void **state)
{
    pk_ckv *s = ckv_new(8);
    recorder r = {0};
    pk_ckv_watch *w = NULL;

    (void)state;
    for (int i = 0; i < 20; i++) {
        put(s, "k", "v", 0);
    }
    assert_int_equal(pk_ckv_oldest_revision(s), 13);
    w = (pk_ckv_watch *)&r; /* untouched on failure */
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 12, record, &r, &w),
                     PK_ERANGE);
    assert_ptr_equal(w, (pk_ckv_watch *)&r);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 1, record, &r, &w),
                     PK_ERANGE);
    assert_int_equal(r.n, 0);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 13, record, &r, &w), 0);
    assert_int_equal(r.n, 8);
    assert_int_equal(r.rev[0], 13);
    assert_int_equal(r.rev[7], 20);
    pk_ckv_watch_cancel(w);
    pk_ckv_free(s);
}

/* Writes 6 events from inside the first callback. */
static void flood(void *ctx, int rc, const pk_coord_event *ev)
{
    recorder *r = ctx;

    record(r, rc, ev);
    if (rc == PK_OK && r->n == 1) {
        for (int i = 0; i < 6; i++) {
            put(r->s, "flood", "x", 0);
        }
    }
}

static void test_watch_falls_behind(void **state)
{
    pk_ckv *s = ckv_new(8);
    recorder r = {.s = NULL};
    recorder live = {0};
    pk_ckv_watch *w = NULL;
    pk_ckv_watch *wl = NULL;

    (void)state;
    r.s = s;
    for (int i = 0; i < 5; i++) {
        put(s, "k", "v", 0);
    }
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &live, &wl), 0);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 1, flood, &r, &w), 0);
    /* Events 2 and 3 were pushed out of the 8-event history (now 4..11)
     * by the flood, before that watcher could be given them. */
    assert_int_equal(r.n, 1);
    assert_int_equal(r.err, PK_ERANGE);
    /* The live watcher needs only 6..11: it sees them all, in order. */
    assert_int_equal(live.n, 6);
    assert_int_equal(live.rev[0], 6);
    assert_int_equal(live.rev[5], 11);
    assert_int_equal(live.err, 0);
    expect_ordered(&live);
    put(s, "k", "v", 0);
    assert_int_equal(r.after_err, 0);
    pk_ckv_watch_cancel(w);
    pk_ckv_free(s);
}

/* ---- batches ---------------------------------------------------------- */

static void test_batches(void **state)
{
    pk_ckv *s = ckv_new(0);
    recorder r = {0};
    pk_ckv_watch *w = NULL;
    uint64_t id, id2;
    uint32_t n;

    (void)state;
    assert_int_equal(pk_ckv_lease_grant(s, 100, 0, &id), PK_OK);
    assert_int_equal(pk_ckv_put(s, S("a"), S("1"), id, 0, NULL), PK_OK);
    put(s, "b", "1", 0);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &r, &w), 0);
    /* Everything a batch does is undone by abort. */
    assert_int_equal(pk_ckv_begin(s), PK_OK);
    assert_int_equal(pk_ckv_begin(s), PK_EBUSY);
    assert_int_equal(pk_ckv_dirty(s), 0);
    assert_int_equal(pk_ckv_tick(s, 100, &n), PK_OK); /* deletes a */
    assert_int_equal(n, 1);
    put(s, "c", "1", 0);
    assert_int_equal(pk_ckv_delete(s, S("b")), PK_OK);
    assert_int_equal(pk_ckv_lease_grant(s, 100, 0, &id2), PK_OK);
    assert_int_equal(pk_ckv_revision(s), 5);
    assert_int_equal(pk_ckv_dirty(s), 1);
    expect_missing(s, "a");   /* reads see the batch */
    assert_int_equal(r.n, 0); /* watchers do not */
    pk_ckv_abort(s);
    assert_int_equal(pk_ckv_revision(s), 2);
    assert_int_equal(pk_ckv_oldest_revision(s), 1);
    expect_kv(s, "a", "1", 1, 1, 1);
    expect_kv(s, "b", "1", 2, 2, 1);
    expect_missing(s, "c");
    assert_int_equal(pk_ckv_lease_ttl(s, id, 50, NULL, NULL), PK_OK);
    assert_int_equal(pk_ckv_lease_ttl(s, id2, 50, NULL, NULL), PK_ENOTFOUND);
    assert_int_equal(r.n, 0);
    /* Commit delivers, in order. */
    assert_int_equal(pk_ckv_begin(s), PK_OK);
    put(s, "c", "2", 0);
    put(s, "d", "2", 0);
    assert_int_equal(r.n, 0);
    pk_ckv_commit(s);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.rev[0], 3);
    assert_int_equal(r.rev[1], 4);
    expect_kv(s, "c", "2", 3, 3, 1);
    /* A renewal alone is not dirty: deadlines are not persisted. */
    assert_int_equal(pk_ckv_begin(s), PK_OK);
    assert_int_equal(pk_ckv_lease_keepalive(s, id, 10), PK_OK);
    assert_int_equal(pk_ckv_dirty(s), 0);
    assert_int_equal(pk_ckv_cas(s, S("c"), 1, S("x"), 0, 0, NULL), PK_ESTALE);
    assert_int_equal(pk_ckv_dirty(s), 0);
    pk_ckv_commit(s);
    assert_int_equal(pk_ckv_dirty(s), 0);
    /* Commit and abort outside a batch do nothing. */
    pk_ckv_commit(s);
    pk_ckv_abort(s);
    assert_int_equal(pk_ckv_revision(s), 4);
    /* An id granted in an aborted batch may be granted again. */
    assert_int_equal(pk_ckv_lease_grant(s, 100, 0, &id2), PK_OK);
    assert_int_equal(id2, id + 1);
    /* Freeing with a batch open undoes it and leaks nothing. */
    assert_int_equal(pk_ckv_begin(s), PK_OK);
    put(s, "e", "1", 0);
    pk_ckv_watch_cancel(w);
    pk_ckv_free(s);
}

/* A batch whose events overflow the history: abort leaves it empty. */
static void test_batch_abort_overflow(void **state)
{
    pk_ckv *s = ckv_new(4);
    recorder r = {0};
    pk_ckv_watch *w = NULL;

    (void)state;
    put(s, "a", "1", 0);
    put(s, "a", "2", 0);
    assert_int_equal(pk_ckv_begin(s), PK_OK);
    for (int i = 0; i < 6; i++) {
        put(s, "b", "x", 0);
    }
    pk_ckv_abort(s);
    assert_int_equal(pk_ckv_revision(s), 2);
    assert_int_equal(pk_ckv_oldest_revision(s), 3);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 2, record, &r, &w),
                     PK_ERANGE);
    assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 3, record, &r, &w), 0);
    put(s, "c", "1", 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.rev[0], 3);
    assert_string_equal(r.key[0], "c");
    pk_ckv_free(s);
}

/* ---- allocation failures ---------------------------------------------- */

#if FAILALLOC
/* Encodes s with allocation failures suspended. */
static void snapshot(const pk_ckv *s, uint8_t **buf, size_t *len)
{
    long saved = fail_countdown;

    fail_countdown = 0;
    assert_int_equal(pk_ckv_encode(s, buf, len), PK_OK);
    fail_countdown = saved;
}

/* Runs one mutation with the k-th allocation failing: either it works, or
 * it says PK_ENOMEM and the state is as before. */
static int try_op(pk_ckv *s, int op, long k, uint64_t lease)
{
    uint8_t *before, *after;
    size_t blen, alen;
    uint32_t n;
    uint64_t id;
    int rc;

    snapshot(s, &before, &blen);
    fail_countdown = k;
    switch (op) {
    case 0:
        rc = pk_ckv_put(s, S("key/new"), S("value"), lease, 0, NULL);
        break;
    case 1:
        rc = pk_ckv_put(s, S("key/1"), S("value2"), 0, 0, NULL);
        break;
    case 2:
        rc = pk_ckv_delete(s, S("key/2"));
        break;
    case 3:
        rc = pk_ckv_lease_revoke(s, lease);
        break;
    case 4:
        rc = pk_ckv_tick(s, 1000000, &n);
        break;
    case 5:
        rc = pk_ckv_lease_grant(s, 10, 0, &id);
        break;
    default:
        rc = pk_ckv_begin(s);
        if (rc == PK_OK) {
            pk_ckv_abort(s);
        }
        break;
    }
    fail_countdown = 0;
    snapshot(s, &after, &alen);
    if (rc == PK_ENOMEM) {
        assert_int_equal(alen, blen);
        assert_memory_equal(after, before, blen);
    } else {
        assert_int_equal(rc, PK_OK);
    }
    free(before);
    free(after);
    return rc;
}
#endif

static void test_alloc_failures(void **state)
{
#if FAILALLOC
    (void)state;
    for (int op = 0; op <= 6; op++) {
        int failed = 1;

        for (long k = 1; failed && k < 100; k++) {
            long live = live_allocs;
            recorder r = {0};
            pk_ckv_watch *w;
            pk_ckv *s = ckv_new(3);
            uint64_t lease;
            char key[16];

            assert_int_equal(pk_ckv_lease_grant(s, 100, 0, &lease), PK_OK);
            for (int i = 0; i < 6; i++) {
                snprintf(key, sizeof(key), "key/%d", i);
                assert_int_equal(
                    pk_ckv_put(s, S(key), S("v"), i % 2 ? lease : 0, 0, NULL),
                    PK_OK);
            }
            assert_int_equal(pk_ckv_watch_start(s, NULL, 0, 0, record, &r, &w),
                             PK_OK);
            failed = try_op(s, op, k, lease) == PK_ENOMEM;
            /* A failed attempt delivered nothing; a success its events. */
            assert_true(failed ? r.n == 0 : r.n >= 0);
            expect_ordered(&r);
            pk_ckv_free(s);
            assert_int_equal(live_allocs, live);
        }
        assert_false(failed); /* every op eventually succeeded */
    }
    /* Failures while starting watches and creating states. */
    for (long k = 1; k < 20; k++) {
        long live = live_allocs;
        pk_ckv *s = NULL;
        recorder r = {0};
        pk_ckv_watch *w = NULL;
        int rc;

        fail_countdown = k;
        rc = pk_ckv_new(NULL, &s);
        if (rc == PK_OK) {
            rc = pk_ckv_watch_start(s, S("p"), 0, record, &r, &w);
        }
        fail_countdown = 0;
        assert_true(rc == PK_OK || rc == PK_ENOMEM);
        pk_ckv_free(s);
        assert_int_equal(live_allocs, live);
    }
#else
    (void)state;
    skip(); /* sanitizers own malloc */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revisions),
        cmocka_unit_test(test_get_range_prefix),
        cmocka_unit_test(test_cas),
        cmocka_unit_test(test_lease_expiry),
        cmocka_unit_test(test_lease_keepalive),
        cmocka_unit_test(test_lease_revoke),
        cmocka_unit_test(test_watch_from_past),
        cmocka_unit_test(test_watch_events_during_delivery),
        cmocka_unit_test(test_watch_cancel_in_callback),
        cmocka_unit_test(test_watch_compacted),
        cmocka_unit_test(test_watch_falls_behind),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_batch_abort_overflow),
        cmocka_unit_test(test_alloc_failures),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

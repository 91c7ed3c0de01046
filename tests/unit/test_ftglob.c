/*
 * Tests of global index entries and the outbox (store/pk_ftglob.c): a
 * write leaves one record with exactly what changed (nothing when nothing
 * did), the record's operations land in the partition their term hashes
 * to (the one pk_ftglob_scan_parts names), a lookup over every partition
 * names each matching document once -- also for ORs whose operands hit
 * one document twice -- shipping the same records twice changes nothing,
 * trimming empties the outbox, and expiry sends the deletes.
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

#define PART 5
#define NPARTS 64
#define NOW 1000
#define ID (PK_FTIDX_GLOBAL | 7)

static pk_ftdef *mkdef(void)
{
    return ft_mkdef(ID);
}

static void hset(pk_txn *t, const char *key, const char *f, const char *v)
{
    pk_slice fs = {f, strlen(f)}, vs = {v, strlen(v)};
    uint64_t added;

    assert_int_equal(
        pk_hmap_set(t, PART, key, strlen(key), 1, &fs, &vs, NOW, &added), 0);
}

static void reindex(pk_txn *t, const pk_ftdef *d, const char *key)
{
    assert_int_equal(pk_ftidx_doc(t, PART, d, key, strlen(key), NOW), 0);
}

/* The outbox's records, counted, and their operations applied. */
typedef struct shipped {
    pk_txn *t;
    int records, ops, puts;
    uint64_t last;
    uint8_t *recs[16]; /* copies: u32 length | bytes (applying writes
                        * the map the records are read from) */
} shipped;

static int apply_op(void *ctx, uint32_t vp, uint64_t id, const uint8_t *op,
                    size_t len)
{
    shipped *sh = ctx;
    pk_ftglob_op o;

    assert_int_equal(id, ID);
    assert_int_equal(pk_ftglob_op_parse(op, len, &o), len);
    assert_int_equal(o.vp, vp);
    assert_true(vp < NPARTS);
    assert_int_equal(pk_ftglob_op_apply(sh->t, &o), 0);
    sh->ops++;
    sh->puts += o.put;
    return 0;
}

static int take_rec(void *ctx, uint64_t seq, pk_slice rec)
{
    shipped *sh = ctx;
    uint8_t *c = malloc(4 + rec.len);

    assert_non_null(c);
    assert_true(seq > sh->last);
    assert_true(sh->records < 16);
    sh->last = seq;
    pk_be32_put(c, (uint32_t)rec.len);
    memcpy(c + 4, rec.ptr, rec.len);
    sh->recs[sh->records++] = c;
    return 0;
}

/* Ships PART's outbox; trims it when trim. */
static shipped ship(pk_txn *t, int trim)
{
    shipped sh = {.t = t};
    uint64_t first, last;

    assert_int_equal(pk_ftout_each(t, PART, SIZE_MAX, take_rec, &sh), 0);
    for (int i = 0; i < sh.records; i++) {
        pk_slice rec = {sh.recs[i] + 4, pk_be32_get(sh.recs[i])};
        assert_int_equal(pk_ftout_ops(rec, NPARTS, apply_op, &sh), 0);
        free(sh.recs[i]);
    }
    if (trim && sh.records) {
        assert_int_equal(pk_ftout_trim(t, PART, sh.last), 0);
        assert_int_equal(pk_ftout_bounds(t, PART, &first, &last), PK_ENOTFOUND);
    }
    return sh;
}

static int hit_cb(void *ctx, pk_slice key, pk_slice copy)
{
    hits *h = ctx;
    pk_slice k2;
    uint64_t expiry;

    assert_int_equal(pk_ftglob_copy_each(copy, &k2, &expiry, NULL, NULL), 0);
    assert_memory_equal(k2.ptr, key.ptr, key.len);
    hits_add(h, key);
    return 0;
}

/* Every lookup of sc in every partition (in lookup order, then
 * partition order); checks that the partitions scan_parts names hold
 * every hit. */
static hits look_at(pk_txn *t, const pk_ftdef *d, const pk_ftq_scan *sc,
                    int nsc, uint64_t now)
{
    uint8_t bits[NPARTS / 8] = {0};
    int all = pk_ftglob_scan_parts(d->id, sc, nsc, NPARTS, bits);
    hits h = {.len = 0};

    for (int i = 0; i < nsc; i++)
        for (uint32_t p = 0; p < NPARTS; p++) {
            int before = h.n;
            assert_int_equal(pk_ftglob_scan(t, p, d, sc, i, now, hit_cb, &h),
                             0);
            if (h.n > before && !all)
                assert_true(bits[p / 8] & (1u << (p % 8)));
        }
    return h;
}

static hits look(pk_txn *t, const pk_ftdef *d, const pk_ftq_scan *sc, int nsc)
{
    return look_at(t, d, sc, nsc, NOW);
}

static pk_ftq_scan tag(const char *term)
{
    return (pk_ftq_scan){
        .kind = PK_FTQ_EXACT, .field = 0, .term = term, .len = strlen(term)};
}

static void test_records_and_lookups(void **state)
{
    tstore *ts = tstore_new();
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(ts->s);
    pk_ftq_scan sc2[2],
        range = {.kind = PK_FTQ_RANGE, .field = 1, .lo = 1, .hi = 10};
    shipped sh;
    uint8_t bits[NPARTS / 8] = {0};

    (void)state;
    hset(t, "doc:1", "tag", "a,b");
    hset(t, "doc:1", "n", "5");
    hset(t, "doc:1", "body", "Hello world");
    reindex(t, d, "doc:1");
    hset(t, "doc:2", "tag", "b");
    reindex(t, d, "doc:2");
    hset(t, "other:1", "tag", "a");
    reindex(t, d, "other:1");
    /* Two documents, one record each; doc:1: 2 tags, 1 number, 2 words. */
    sh = ship(t, 1);
    assert_int_equal(sh.records, 2);
    assert_int_equal(sh.ops, 6);
    assert_int_equal(sh.puts, 6);

    sc2[0] = tag("a");
    assert_string_equal(look(t, d, sc2, 1).buf, "doc:1|");
    /* a | b: doc:1 has both, in two partitions (or one): once. */
    sc2[1] = tag("b");
    hits h = look(t, d, sc2, 2);
    assert_int_equal(h.n, 2);
    assert_true(strstr(h.buf, "doc:1|") && strstr(h.buf, "doc:2|"));
    assert_string_equal(look(t, d, &range, 1).buf, "doc:1|");
    /* One value: one partition. */
    assert_int_equal(pk_ftglob_scan_parts(d->id, sc2, 1, NPARTS, bits), 0);
    int set = 0;
    for (int i = 0; i < NPARTS; i++)
        set += (bits[i / 8] >> (i % 8)) & 1;
    assert_int_equal(set, 1);
    sc2[0] = (pk_ftq_scan){
        .kind = PK_FTQ_PREFIX, .field = 2, .term = "hel", .len = 3};
    assert_int_equal(pk_ftglob_scan_parts(d->id, sc2, 1, NPARTS, bits), 1);
    assert_string_equal(look(t, d, sc2, 1).buf, "doc:1|");

    /* A write that changes nothing: no record. */
    hset(t, "doc:2", "tag", "b");
    reindex(t, d, "doc:2");
    assert_int_equal(ship(t, 1).records, 0);

    /* Another field: the copy changed, every entry put again. */
    hset(t, "doc:2", "extra", "x");
    reindex(t, d, "doc:2");
    sh = ship(t, 1);
    assert_int_equal(sh.records, 1);
    assert_int_equal(sh.ops, 1);

    /* A new tag: the old entry deleted, the new put. */
    hset(t, "doc:1", "tag", "c");
    reindex(t, d, "doc:1");
    sh = ship(t, 0);
    assert_int_equal(sh.ops, 2 + 4);
    assert_int_equal(sh.puts, 4);
    /* Shipped twice (a round that failed after applying): the same. */
    sh = ship(t, 1);
    assert_int_equal(sh.records, 1);
    sc2[0] = tag("a");
    assert_int_equal(look(t, d, sc2, 1).n, 0);
    sc2[0] = tag("b");
    assert_string_equal(look(t, d, sc2, 1).buf, "doc:2|");
    sc2[0] = tag("c");
    assert_string_equal(look(t, d, sc2, 1).buf, "doc:1|");

    /* Deleted: every entry goes. */
    int del;
    assert_int_equal(pk_key_del(t, PART, "doc:1", 5, NOW, &del), 0);
    reindex(t, d, "doc:1");
    sh = ship(t, 1);
    assert_int_equal(sh.ops, 4);
    assert_int_equal(sh.puts, 0);
    assert_int_equal(look(t, d, sc2, 1).n, 0);
    assert_int_equal(look(t, d, &range, 1).n, 0);
    pk_txn_abort(t);
    pk_ftdef_free(d);
    tstore_free(ts);
}

static void test_expiry_sends_deletes(void **state)
{
    tstore *ts = tstore_new();
    pk_ftdef *d = mkdef();
    pk_txn *t = wtxn(ts->s);
    pk_ftq_scan sc = tag("x");
    uint64_t first, last;
    size_t n;
    int done;

    (void)state;
    hset(t, "doc:1", "tag", "x");
    hset(t, "doc:2", "tag", "x");
    reindex(t, d, "doc:1");
    reindex(t, d, "doc:2");
    ship(t, 1);
    assert_int_equal(look(t, d, &sc, 1).n, 2);
    assert_int_equal(
        pk_key_expire(t, PART, "doc:1", 5, NOW + 10, 0, NOW, &done), 0);
    /* EXPIRE is a write: the copies carry the expiry, and a lookup skips
     * an expired one before active expiry deletes its key. */
    reindex(t, d, "doc:1");
    assert_int_equal(ship(t, 1).ops, 1);
    assert_int_equal(look(t, d, &sc, 1).n, 2);
    assert_string_equal(look_at(t, d, &sc, 1, NOW + 10).buf, "doc:2|");
    assert_int_equal(pk_store_expire_cycle(t, NOW + 20, 10, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pk_ftout_bounds(t, PART, &first, &last), 0);
    /* Stamped with the expiry's time, after every earlier record. */
    assert_true(PK_FTOUT_MS(first) >= NOW);
    assert_int_equal(ship(t, 1).ops, 1);
    assert_string_equal(look(t, d, &sc, 1).buf, "doc:2|");
    pk_txn_abort(t);
    pk_ftdef_free(d);
    tstore_free(ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_and_lookups),
        cmocka_unit_test(test_expiry_sends_deletes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

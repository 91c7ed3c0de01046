/*
 * Model test of the embedded coordinator's state machine: random
 * operations -- puts, compare-and-swaps, deletes, lease grants, renewals,
 * revocations, clock ticks, batches that commit or abort, watches started
 * from past, present and future revisions and cancelled at random, and
 * restarts through encode/decode -- applied both to a pk_ckv and to a
 * naive model (an unsorted array per key, a list of leases, a log of
 * every event), comparing every return code and, after every step, the
 * whole visible state.  Each watcher's events must equal the model's log
 * filtered by its prefix over the revisions it covered: in order, exactly
 * once, nothing uncommitted.
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

#define NKEYS 12
#define NLEASES 48
#define NWATCH 4
#define LOG_MAX 40000
#define VMAX 16

/* Keys chosen so that prefixes nest, and bytes 0x00 and 0xff appear. */
static const struct {
    const char *b;
    size_t n;
} keys[NKEYS] = {
    {"a", 1},     {"a/1", 3}, {"a/2", 3},    {"ab", 2},
    {"b", 1},     {"b/x", 3}, {"\x00", 1},   {"\xff\x01", 2},
    {"c/1/2", 5}, {"c/1", 3}, {"a\x00z", 3}, {"\xff", 1},
};
static const char *prefixes[] = {"", "a", "a/", "b", "c/1", "\xff", "zz"};
#define NPREFIXES 7

/* ---- the model -------------------------------------------------------- */

typedef struct mkv {
    int live;
    uint8_t val[VMAX];
    size_t vlen;
    uint64_t create, mod, version, lease;
} mkv;

typedef struct mlease {
    uint64_t id, ttl, deadline;
} mlease;

typedef struct mevent {
    uint8_t type;
    int key;
    uint8_t val[VMAX];
    size_t vlen;
    uint64_t create, version, lease;
} mevent;

typedef struct model {
    mkv kv[NKEYS];
    mlease leases[NLEASES]; /* sorted by id */
    int nleases;
    uint64_t revision;
    uint64_t next_lease;
} model;

typedef struct mwatch {
    int active;
    pk_ckv_watch *w;
    int prefix;
    uint64_t start; /* first revision asked for */
    uint64_t next;  /* the model's cursor, as pk_ckv keeps it */
    int ended;      /* PK_ERANGE was predicted */
    int got_err;
    int n;
    uint64_t rev[LOG_MAX];
    uint8_t type[LOG_MAX];
    int key[LOG_MAX];
} mwatch;

typedef struct world {
    pk_ckv *s;
    model m;
    model saved; /* the model at pk_ckv_begin */
    int in_batch;
    uint64_t visible;
    uint32_t hist;   /* history capacity, in events */
    uint32_t hist_n; /* events the history holds */
    uint64_t now;
    mevent log[LOG_MAX + 1]; /* log[r] is the event of revision r */
    mwatch watch[NWATCH];
    int order[NKEYS]; /* key indexes in key order */
    uint64_t seed;
    long checked_events;
} world;

static uint64_t rnd(world *w, uint64_t n)
{
    w->seed = w->seed * 6364136223846793005ull + 1442695040888963407ull;
    return (w->seed >> 33) % n;
}

static int key_cmp(int a, int b)
{
    size_t n = keys[a].n < keys[b].n ? keys[a].n : keys[b].n;
    int c = memcmp(keys[a].b, keys[b].b, n);

    return c != 0 ? c : (keys[a].n > keys[b].n) - (keys[a].n < keys[b].n);
}

static int has_prefix(int k, int p)
{
    size_t n = strlen(prefixes[p]);

    return keys[k].n >= n && memcmp(keys[k].b, prefixes[p], n) == 0;
}

static mlease *m_lease(model *m, uint64_t id)
{
    for (int i = 0; i < m->nleases; i++) {
        if (m->leases[i].id == id) {
            return &m->leases[i];
        }
    }
    return NULL;
}

static int m_lease_live(model *m, uint64_t id, uint64_t now)
{
    mlease *l = m_lease(m, id);

    return l != NULL && now < l->deadline;
}

static void m_event(world *w, int k, uint8_t type)
{
    mevent *e;

    assert_true(w->m.revision < LOG_MAX);
    w->m.revision++;
    e = &w->log[w->m.revision];
    memset(e, 0, sizeof(*e));
    e->type = type;
    e->key = k;
    if (type == PK_COORD_PUT) {
        memcpy(e->val, w->m.kv[k].val, w->m.kv[k].vlen);
        e->vlen = w->m.kv[k].vlen;
        e->create = w->m.kv[k].create;
        e->version = w->m.kv[k].version;
        e->lease = w->m.kv[k].lease;
    }
    if (w->hist_n < w->hist) {
        w->hist_n++;
    }
}

static void m_set(world *w, int k, const uint8_t *v, size_t vlen,
                  uint64_t lease)
{
    mkv *kv = &w->m.kv[k];

    kv->create = kv->live ? kv->create : w->m.revision + 1;
    kv->version = kv->live ? kv->version + 1 : 1;
    kv->live = 1;
    kv->mod = w->m.revision + 1;
    kv->lease = lease;
    memcpy(kv->val, v, vlen);
    kv->vlen = vlen;
    m_event(w, k, PK_COORD_PUT);
}

static void m_del(world *w, int k)
{
    w->m.kv[k].live = 0;
    m_event(w, k, PK_COORD_DELETE);
}

static void m_revoke(world *w, uint64_t id)
{
    mlease *l = m_lease(&w->m, id);
    int at = (int)(l - w->m.leases);

    memmove(l, l + 1, (size_t)(w->m.nleases - at - 1) * sizeof(*l));
    w->m.nleases--;
    for (int i = 0; i < NKEYS; i++) {
        int k = w->order[i];

        if (w->m.kv[k].live && w->m.kv[k].lease == id) {
            m_del(w, k);
        }
    }
}

static void m_tick(world *w)
{
    for (;;) {
        mlease *due = NULL;

        for (int i = 0; i < w->m.nleases; i++) {
            mlease *l = &w->m.leases[i];

            if (l->deadline <= w->now &&
                (due == NULL || l->deadline < due->deadline)) {
                due = l;
            }
        }
        if (due == NULL) {
            return;
        }
        m_revoke(w, due->id);
    }
}

/* ---- watchers --------------------------------------------------------- */

static void on_event(void *ctx, int rc, const pk_coord_event *ev)
{
    mwatch *mw = ctx;

    assert_false(mw->got_err);
    if (rc != PK_OK) {
        assert_int_equal(rc, PK_ERANGE);
        assert_null(ev);
        mw->got_err = 1;
        return;
    }
    assert_true(mw->n < LOG_MAX);
    mw->rev[mw->n] = ev->revision;
    mw->type[mw->n] = ev->type;
    mw->key[mw->n] = -1;
    for (int k = 0; k < NKEYS; k++) {
        if (ev->kv.key_len == keys[k].n &&
            memcmp(ev->kv.key, keys[k].b, keys[k].n) == 0) {
            mw->key[mw->n] = k;
        }
    }
    mw->n++;
}

/* What pk_ckv does at delivery, for the model's cursors. */
static void m_deliver(world *w)
{
    uint64_t oldest = w->m.revision + 1 - w->hist_n;

    for (int i = 0; i < NWATCH; i++) {
        mwatch *mw = &w->watch[i];

        if (!mw->active || mw->ended || mw->next > w->visible) {
            continue;
        }
        if (mw->next < oldest) {
            mw->ended = 1;
        } else {
            mw->next = w->visible + 1;
        }
    }
}

/* A watcher's events equal the log filtered over [start, next). */
static void check_watch(world *w, mwatch *mw)
{
    int j = 0;

    assert_int_equal(mw->got_err, mw->ended);
    for (uint64_t r = mw->start; r < mw->next; r++) {
        const mevent *e = &w->log[r];

        if (!has_prefix(e->key, mw->prefix)) {
            continue;
        }
        assert_true(j < mw->n);
        assert_int_equal(mw->rev[j], r);
        assert_int_equal(mw->type[j], e->type);
        assert_int_equal(mw->key[j], e->key);
        j++;
    }
    assert_int_equal(j, mw->n);
    w->checked_events += j;
}

static void watch_start(world *w)
{
    int i = (int)rnd(w, NWATCH);
    mwatch *mw = &w->watch[i];
    uint64_t oldest = w->m.revision + 1 - w->hist_n;
    uint64_t from, span;
    int rc;

    if (mw->active) {
        check_watch(w, mw);
        pk_ckv_watch_cancel(mw->w);
        mw->active = 0;
        return;
    }
    /* From a little before the oldest to a little after now, or 0. */
    span = w->visible + 6 > oldest ? w->visible + 6 - oldest : 1;
    from = rnd(w, 8) == 0 ? 0 : oldest + rnd(w, span);
    from = from > 3 ? from - 3 : from;
    memset(mw, 0, sizeof(*mw));
    mw->prefix = (int)rnd(w, NPREFIXES);
    rc = pk_ckv_watch_start(w->s, prefixes[mw->prefix],
                            strlen(prefixes[mw->prefix]), from, on_event, mw,
                            &mw->w);
    from = from != 0 ? from : w->visible + 1;
    if (from < oldest) {
        assert_int_equal(rc, PK_ERANGE);
        return;
    }
    assert_int_equal(rc, PK_OK);
    mw->active = 1;
    mw->start = from;
    mw->next = mw->start;
    m_deliver(w);
}

/* ---- comparing the whole state ---------------------------------------- */

static void check_state(world *w)
{
    int p = (int)rnd(w, NPREFIXES);
    pk_coord_kv *kvs = NULL;
    size_t n = 0;
    size_t j = 0;
    uint64_t next = UINT64_MAX;

    assert_int_equal(pk_ckv_revision(w->s), w->m.revision);
    assert_int_equal(pk_ckv_oldest_revision(w->s),
                     w->m.revision + 1 - w->hist_n);
    assert_int_equal(
        pk_ckv_range(w->s, prefixes[p], strlen(prefixes[p]), &kvs, &n), PK_OK);
    for (int i = 0; i < NKEYS; i++) {
        int k = w->order[i];
        const mkv *m = &w->m.kv[k];

        if (!m->live || !has_prefix(k, p)) {
            continue;
        }
        assert_true(j < n);
        assert_int_equal(kvs[j].key_len, keys[k].n);
        assert_memory_equal(kvs[j].key, keys[k].b, keys[k].n);
        assert_int_equal(kvs[j].value_len, m->vlen);
        if (m->vlen > 0) {
            assert_memory_equal(kvs[j].value, m->val, m->vlen);
        }
        assert_int_equal(kvs[j].create_revision, m->create);
        assert_int_equal(kvs[j].mod_revision, m->mod);
        assert_int_equal(kvs[j].version, m->version);
        assert_int_equal(kvs[j].lease, m->lease);
        j++;
    }
    assert_int_equal(j, n);
    free(kvs);
    for (int i = 0; i < w->m.nleases; i++) {
        const mlease *l = &w->m.leases[i];
        uint64_t ttl, left;
        int rc = pk_ckv_lease_ttl(w->s, l->id, w->now, &ttl, &left);

        next = l->deadline < next ? l->deadline : next;
        if (w->now < l->deadline) {
            assert_int_equal(rc, PK_OK);
            assert_int_equal(ttl, l->ttl);
            assert_int_equal(left, l->deadline - w->now);
        } else {
            assert_int_equal(rc, PK_ENOTFOUND);
        }
    }
    assert_int_equal(pk_ckv_next_deadline(w->s), next);
    assert_int_equal(pk_ckv_lease_ttl(w->s, w->m.next_lease, 0, NULL, NULL),
                     PK_ENOTFOUND);
    for (int i = 0; i < NWATCH; i++) {
        if (w->watch[i].active) {
            check_watch(w, &w->watch[i]);
        }
    }
}

/* ---- operations ------------------------------------------------------- */

/* A lease id: mostly one that exists (live or not), sometimes not. */
static uint64_t pick_lease(world *w)
{
    if (w->m.nleases > 0 && rnd(w, 5) != 0) {
        return w->m.leases[rnd(w, (uint64_t)w->m.nleases)].id;
    }
    return rnd(w, 3) == 0 ? 0 : 1 + rnd(w, w->m.next_lease + 2);
}

/* After a mutation outside a batch, pk_ckv has delivered. */
static void committed(world *w)
{
    if (!w->in_batch) {
        w->visible = w->m.revision;
        m_deliver(w);
    }
}

static void op_put(world *w, int cas)
{
    int k = (int)rnd(w, NKEYS);
    uint8_t v[VMAX];
    size_t vlen = (size_t)rnd(w, VMAX + 1);
    uint64_t lease = rnd(w, 3) == 0 ? pick_lease(w) : 0;
    const mkv *m = &w->m.kv[k];
    uint64_t cur = m->live ? m->mod : 0;
    uint64_t expect = cur;
    pk_coord_kv out;
    int want, rc;

    for (size_t i = 0; i < vlen; i++) {
        v[i] = (uint8_t)rnd(w, 256);
    }
    if (cas && rnd(w, 3) == 0) {
        expect = rnd(w, 2) == 0 ? 0 : rnd(w, w->m.revision + 2);
    }
    if (cas) {
        rc = pk_ckv_cas(w->s, keys[k].b, keys[k].n, expect, v, vlen, lease,
                        w->now, &out);
    } else {
        rc = pk_ckv_put(w->s, keys[k].b, keys[k].n, v, vlen, lease, w->now,
                        &out);
    }
    if (cas && expect != cur) {
        want = PK_ESTALE;
        if (m->live) {
            assert_int_equal(out.mod_revision, m->mod);
        } else {
            assert_null(out.key);
        }
    } else if (lease != 0 && !m_lease_live(&w->m, lease, w->now)) {
        want = PK_ENOTFOUND;
    } else {
        want = PK_OK;
        m_set(w, k, v, vlen, lease);
        assert_int_equal(out.mod_revision, w->m.revision);
    }
    assert_int_equal(rc, want);
    committed(w);
}

static void op_delete(world *w)
{
    int k = (int)rnd(w, NKEYS);
    int rc = pk_ckv_delete(w->s, keys[k].b, keys[k].n);

    if (w->m.kv[k].live) {
        assert_int_equal(rc, PK_OK);
        m_del(w, k);
    } else {
        assert_int_equal(rc, PK_ENOTFOUND);
    }
    committed(w);
}

static void op_lease(world *w)
{
    uint64_t id = pick_lease(w);
    mlease *l = m_lease(&w->m, id);
    uint64_t got;
    int rc;

    switch (rnd(w, 4)) {
    case 0:
        if (w->m.nleases == NLEASES) {
            return;
        }
        got = 5 + rnd(w, 200);
        assert_int_equal(pk_ckv_lease_grant(w->s, got, w->now, &id), PK_OK);
        assert_int_equal(id, w->m.next_lease);
        w->m.leases[w->m.nleases].id = w->m.next_lease++;
        w->m.leases[w->m.nleases].ttl = got;
        w->m.leases[w->m.nleases].deadline = w->now + got;
        w->m.nleases++;
        break;
    case 1:
        rc = pk_ckv_lease_keepalive(w->s, id, w->now);
        if (l != NULL && w->now < l->deadline) {
            assert_int_equal(rc, PK_OK);
            l->deadline = w->now + l->ttl;
        } else {
            assert_int_equal(rc, PK_ENOTFOUND);
        }
        break;
    case 2:
        rc = pk_ckv_lease_revoke(w->s, id);
        if (l != NULL) {
            assert_int_equal(rc, PK_OK);
            m_revoke(w, id);
        } else {
            assert_int_equal(rc, PK_ENOTFOUND);
        }
        committed(w);
        break;
    default:
        assert_int_equal(pk_ckv_tick(w->s, w->now, NULL), PK_OK);
        m_tick(w);
        committed(w);
        break;
    }
}

static void op_batch(world *w)
{
    if (!w->in_batch) {
        assert_int_equal(pk_ckv_begin(w->s), PK_OK);
        w->saved = w->m;
        w->in_batch = 1;
        return;
    }
    if (rnd(w, 3) == 0) {
        uint64_t undone = w->m.revision - w->saved.revision;

        pk_ckv_abort(w->s);
        w->m = w->saved;
        w->hist_n -= (uint32_t)(undone < w->hist_n ? undone : w->hist_n);
    } else {
        pk_ckv_commit(w->s);
    }
    w->in_batch = 0;
    committed(w);
}

/* A restart: encode, decode later; leases get their full TTL again. */
static void op_restart(world *w)
{
    uint8_t *buf = NULL;
    size_t len;
    pk_ckv_opts o = {w->hist, 0};

    if (w->in_batch) {
        return;
    }
    for (int i = 0; i < NWATCH; i++) {
        if (w->watch[i].active) {
            check_watch(w, &w->watch[i]);
            w->watch[i].active = 0;
        }
    }
    assert_int_equal(pk_ckv_encode(w->s, &buf, &len), PK_OK);
    pk_ckv_free(w->s);
    w->s = NULL;
    w->now += rnd(w, 50);
    assert_int_equal(pk_ckv_decode(buf, len, &o, w->now, &w->s), PK_OK);
    free(buf);
    for (int i = 0; i < w->m.nleases; i++) {
        w->m.leases[i].deadline = w->now + w->m.leases[i].ttl;
    }
    w->hist_n = 0;
}

static void run(uint64_t seed, int steps, uint32_t hist)
{
    world *w = calloc(1, sizeof(*w));
    pk_ckv_opts o = {hist, 0};

    assert_non_null(w);
    w->seed = seed;
    w->hist = hist;
    w->m.next_lease = 1;
    w->now = 1000;
    for (int i = 0; i < NKEYS; i++) {
        int j = i;

        while (j > 0 && key_cmp(w->order[j - 1], i) > 0) {
            w->order[j] = w->order[j - 1];
            j--;
        }
        w->order[j] = i;
    }
    assert_int_equal(pk_ckv_new(&o, &w->s), PK_OK);
    for (int step = 0; step < steps && w->m.revision < LOG_MAX - 64; step++) {
        uint64_t x = rnd(w, 100);

        w->now += rnd(w, 4) == 0 ? rnd(w, 40) : 0;
        if (x < 30) {
            op_put(w, 0);
        } else if (x < 45) {
            op_put(w, 1);
        } else if (x < 55) {
            op_delete(w);
        } else if (x < 80) {
            op_lease(w);
        } else if (x < 88) {
            op_batch(w);
        } else if (x < 98) {
            watch_start(w);
        } else {
            op_restart(w);
        }
        check_state(w);
    }
    if (w->in_batch) {
        pk_ckv_commit(w->s);
        w->in_batch = 0;
        committed(w);
    }
    check_state(w);
    assert_true(w->checked_events > 0);
    pk_ckv_free(w->s);
    free(w);
}

static void test_model(void **state)
{
    (void)state;
    /* A small history makes batches outrun it, so watchers get
     * PK_ERANGE; a large one lets them watch from far back. */
    for (uint64_t seed = 1; seed <= 40; seed++) {
        run(seed, 3000, seed % 2 ? 8 : 64);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

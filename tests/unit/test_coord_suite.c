/*
 * The coordinator's contract (pk_coord.h), tested once and run against
 * every backend: an embedded coordinator in a temporary directory, and a
 * real etcd that this binary starts on ephemeral ports (stopped by its PID
 * at the end).  Each test sees only a pk_coord *, drives a uv loop until
 * the answers it waits for arrive (bounded), and uses its own key prefix,
 * so that the tests can share one etcd.
 *
 * Revisions are checked relative to the first one a test sees: etcd's
 * store does not start at 0 and is shared.  Where the backends may differ
 * within the contract (TTLs etcd rounds to seconds, one revision for all
 * the keys of a revoked lease) the tests accept both.  History is
 * compacted through a per-backend hook: etcd's /v3/kv/compaction, and for
 * the embedded backend a restart, after which its history starts empty.
 *
 * After the shared tests come etcd-only ones: endpoint lists, unreachable
 * clusters, watches surviving dropped connections (through a relay), and
 * malformed answers (from a fake server).  When etcd cannot be started,
 * every etcd test fails, saying why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "coord/pk_coord.h"
#include "coord/pk_coord_embedded.h"
#include "coord/pk_coord_etcd.h"
#include "coord/pk_etcd_http.h"
#include "core/pk_err.h"
#include "etcd_testutil.h"

/* How long a test waits for an answer that must come. */
#define WAIT_MS 5000

/* ---- fixture ---------------------------------------------------------- */

typedef struct fx fx;

typedef struct backend {
    const char *name;
    int (*open)(fx *f);                  /* sets f->c */
    int (*compact)(fx *f, uint64_t rev); /* history before rev is gone */
} backend;

struct fx {
    const backend *b;
    uv_loop_t loop;
    uv_timer_t tick; /* embedded lease expiry; bounds each loop turn */
    pk_coord *c;
    char dir[64]; /* embedded: its state lives here */
    char path[96];
    char pfx[16]; /* every key of the test starts with it */
    relay rl;     /* etcd tests: a relay or fake server, one at a time */
};

static etcd_proc g_etcd;
static int g_seq;

static int open_embedded(fx *f)
{
    return pk_coord_embedded_open(f->path, NULL, &f->c);
}

static int compact_embedded(fx *f, uint64_t rev)
{
    (void)rev;
    pk_coord_free(f->c);
    f->c = NULL;
    return open_embedded(f);
}

static int open_etcd(fx *f)
{
    if (g_etcd.pid == 0) {
        fail_msg("etcd is not running: %s", g_etcd.err);
    }
    return pk_coord_etcd_open(&f->loop, g_etcd.endpoint, &f->c);
}

static int compact_etcd(fx *f, uint64_t rev)
{
    (void)f;
    return etcd_compact(&g_etcd, rev);
}

static const backend embedded = {"embedded", open_embedded, compact_embedded};
static const backend etcd = {"etcd", open_etcd, compact_etcd};

static void on_tick(uv_timer_t *t)
{
    fx *f = t->data;

    /* The server does this on its loop; with etcd, expiry is etcd's. */
    if (f->c != NULL && f->b == &embedded &&
        pk_coord_embedded_next_deadline(f->c) <= etcd_now_ms()) {
        pk_coord_embedded_tick(f->c);
    }
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));

    if (f == NULL) {
        return -1;
    }
    f->b = *state;
    snprintf(f->pfx, sizeof(f->pfx), "s%d/", ++g_seq);
    /* tmpfs when there is one: the embedded backend fsyncs every write,
     * and what is tested here is the interface, not the disk. */
    snprintf(f->dir, sizeof(f->dir), "%s/pksuite-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (mkdtemp(f->dir) == NULL || uv_loop_init(&f->loop) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/coord.state", f->dir);
    uv_timer_init(&f->loop, &f->tick);
    f->tick.data = f;
    uv_timer_start(&f->tick, on_tick, 10, 10);
    *state = f;
    return 0;
}

/* Runs the loop until nothing is left on it; 0 when it could be closed. */
static int loop_drain(uv_loop_t *loop)
{
    for (int i = 0; i < 200; i++) {
        uv_run(loop, UV_RUN_NOWAIT);
        if (uv_loop_close(loop) == 0) {
            return 0;
        }
        usleep(1000);
    }
    return -1;
}

static void close_any(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

static int teardown(void **state)
{
    fx *f = *state;
    int rc;

    pk_coord_free(f->c);
    uv_close((uv_handle_t *)&f->tick, NULL);
    rc = loop_drain(&f->loop);
    if (rc != 0) {
        /* Left open by the backend, or by a test that failed midway. */
        uv_walk(&f->loop, close_any, NULL);
        loop_drain(&f->loop);
    }
    nftw(f->dir, etcd_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return rc; /* a handle left open on the loop fails the test */
}

static void fx_open(fx *f)
{
    assert_int_equal(f->b->open(f), PK_OK);
    assert_string_equal(pk_coord_backend(f->c), f->b->name);
}

/* Runs the loop until *done or ms pass. */
#define WAIT_UNTIL(f, cond, ms)                                                \
    do {                                                                       \
        uint64_t deadline_ = etcd_now_ms() + (ms);                             \
        while (!(cond) && etcd_now_ms() < deadline_) {                         \
            uv_run(&(f)->loop, UV_RUN_ONCE);                                   \
        }                                                                      \
    } while (0)

/* Lets the loop run for ms. */
static void idle(fx *f, uint64_t ms)
{
    WAIT_UNTIL(f, 0, ms);
}

/* ---- replies ---------------------------------------------------------- */

typedef struct reply {
    int calls;
    int rc;
    uint64_t rev;
    size_t nkvs;
    pk_coord_kv kv; /* kvs[0], its key and value copied below */
    size_t skip;    /* bytes of test prefix left out of key */
    char key[64];
    char val[64]; /* value_len bytes, then a 0 */
    uint64_t lease;
    uint64_t ttl;
} reply;

static void on_reply(void *ctx, int rc, const pk_coord_result *res)
{
    reply *r = ctx;

    assert_non_null(res);
    r->calls++;
    r->rc = rc;
    r->rev = res->revision;
    r->nkvs = res->nkvs;
    r->lease = res->lease;
    r->ttl = res->ttl_ms;
    memset(&r->kv, 0, sizeof(r->kv));
    r->key[0] = r->val[0] = '\0';
    if (res->nkvs > 0) {
        assert_non_null(res->kvs);
        r->kv = res->kvs[0];
        assert_true(r->kv.key_len >= r->skip);
        snprintf(r->key, sizeof(r->key), "%.*s", (int)(r->kv.key_len - r->skip),
                 (const char *)r->kv.key + r->skip);
        assert_true(r->kv.value_len < sizeof(r->val));
        if (r->kv.value_len > 0) {
            memcpy(r->val, r->kv.value, r->kv.value_len);
        }
        r->val[r->kv.value_len] = '\0';
        r->kv.key = NULL;
        r->kv.value = NULL;
    }
}

/* Writes f->pfx + name to buf (64 bytes); returns its length. */
static size_t K(fx *f, const char *name, char *buf)
{
    snprintf(buf, 64, "%s%s", f->pfx, name);
    return strlen(buf);
}

static void r_init(fx *f, reply *r)
{
    memset(r, 0, sizeof(*r));
    r->skip = strlen(f->pfx);
}

/* Answers received by rs[0..n). */
static int calls(const reply *rs, int n)
{
    int sum = 0;

    for (int i = 0; i < n; i++) {
        sum += rs[i].calls;
    }
    return sum;
}

/* Waits for the one answer of a request that was taken. */
static int r_wait(fx *f, int taken, reply *r)
{
    assert_int_equal(taken, PK_OK);
    WAIT_UNTIL(f, r->calls > 0, WAIT_MS);
    assert_int_equal(r->calls, 1);
    return r->rc;
}

static int c_put(fx *f, const char *k, const char *v, uint64_t lease, reply *r)
{
    char kb[64];

    r_init(f, r);
    return r_wait(
        f,
        pk_coord_put(f->c, kb, K(f, k, kb), v, strlen(v), lease, on_reply, r),
        r);
}

static int c_get(fx *f, const char *k, reply *r)
{
    char kb[64];

    r_init(f, r);
    return r_wait(f, pk_coord_get(f->c, kb, K(f, k, kb), on_reply, r), r);
}

static int c_del(fx *f, const char *k, reply *r)
{
    char kb[64];

    r_init(f, r);
    return r_wait(f, pk_coord_delete(f->c, kb, K(f, k, kb), on_reply, r), r);
}

static int c_cas(fx *f, const char *k, uint64_t expect, const char *v,
                 uint64_t lease, reply *r)
{
    char kb[64];

    r_init(f, r);
    return r_wait(f,
                  pk_coord_cas(f->c, kb, K(f, k, kb), expect, v, strlen(v),
                               lease, on_reply, r),
                  r);
}

static int c_keepalive(fx *f, uint64_t lease, reply *r)
{
    r_init(f, r);
    return r_wait(f, pk_coord_lease_keepalive(f->c, lease, on_reply, r), r);
}

static int c_revoke(fx *f, uint64_t lease, reply *r)
{
    r_init(f, r);
    return r_wait(f, pk_coord_lease_revoke(f->c, lease, on_reply, r), r);
}

static uint64_t c_grant(fx *f, uint64_t ttl)
{
    reply r;

    r_init(f, &r);
    assert_int_equal(
        r_wait(f, pk_coord_lease_grant(f->c, ttl, on_reply, &r), &r), PK_OK);
    assert_true(r.ttl >= ttl);       /* etcd: whole seconds, a minimum */
    assert_true(r.ttl < ttl + 2000); /* ... but not far off */
    assert_true(r.lease != 0);
    return r.lease;
}

/* A range answer, flattened to "k=v/create/mod/version,..." without the
 * test prefix. */
typedef struct listing {
    int calls;
    int rc;
    uint64_t rev;
    size_t n;
    size_t skip;
    char text[4096];
    char keys[512]; /* the keys, each followed by '|' */
    size_t keys_len;
} listing;

static void on_range(void *ctx, int rc, const pk_coord_result *res)
{
    listing *l = ctx;
    size_t used = 0;

    l->calls++;
    l->rc = rc;
    l->rev = res->revision;
    l->n = res->nkvs;
    l->text[0] = '\0';
    for (size_t i = 0; i < res->nkvs; i++) {
        const pk_coord_kv *kv = &res->kvs[i];

        assert_true(kv->key_len >= l->skip);
        used += (size_t)snprintf(
            l->text + used, sizeof(l->text) - used,
            "%s%.*s=%.*s/%llu/%llu/%llu", i ? "," : "",
            (int)(kv->key_len - l->skip), (const char *)kv->key + l->skip,
            (int)kv->value_len,
            kv->value != NULL ? (const char *)kv->value : "",
            (unsigned long long)kv->create_revision,
            (unsigned long long)kv->mod_revision,
            (unsigned long long)kv->version);
        assert_true(used < sizeof(l->text));
        assert_true(l->keys_len + kv->key_len - l->skip < sizeof(l->keys));
        memcpy(l->keys + l->keys_len, kv->key + l->skip, kv->key_len - l->skip);
        l->keys_len += kv->key_len - l->skip;
        l->keys[l->keys_len++] = '|';
    }
}

static void c_range(fx *f, const char *prefix, listing *l)
{
    char kb[64];

    memset(l, 0, sizeof(*l));
    l->skip = strlen(f->pfx);
    assert_int_equal(pk_coord_range(f->c, kb, K(f, prefix, kb), on_range, l),
                     PK_OK);
    WAIT_UNTIL(f, l->calls > 0, WAIT_MS);
    assert_int_equal(l->calls, 1);
    assert_int_equal(l->rc, PK_OK);
}

/* A watcher recording what it is given. */
typedef struct events {
    int n;
    uint64_t rev[128];
    uint8_t type[128];
    char key[128][32];
    size_t skip;
    int err;
    int terminal_calls;
    /* optional: write through c on the first writes_left events */
    fx *f;
    int writes_left;
    reply nested[8];
    int nnested;
    pk_coord_watch *self;
    int cancel_at; /* cancel self when n reaches it (0: never) */
} events;

static void on_event(void *ctx, int rc, const pk_coord_event *ev)
{
    events *e = ctx;

    assert_int_equal(e->err, 0); /* nothing after a terminal call */
    if (rc != PK_OK) {
        assert_null(ev);
        e->err = rc;
        e->terminal_calls++;
        return;
    }
    assert_non_null(ev);
    assert_true(e->n < 128);
    assert_int_equal(ev->revision, ev->kv.mod_revision);
    assert_true(ev->kv.key_len >= e->skip);
    if (ev->type == PK_COORD_DELETE) {
        /* As etcd: the key, its deletion revision, and nothing else. */
        assert_int_equal(ev->kv.value_len, 0);
        assert_int_equal(ev->kv.create_revision, 0);
        assert_int_equal(ev->kv.version, 0);
        assert_int_equal(ev->kv.lease, 0);
    }
    e->rev[e->n] = ev->revision;
    e->type[e->n] = ev->type;
    snprintf(e->key[e->n], sizeof(e->key[0]), "%.*s",
             (int)(ev->kv.key_len - e->skip),
             (const char *)ev->kv.key + e->skip);
    e->n++;
    if (e->f != NULL && e->writes_left > 0) {
        reply *r = &e->nested[e->nnested++];
        char kb[64];

        e->writes_left--;
        r_init(e->f, r);
        assert_int_equal(pk_coord_put(e->f->c, kb, K(e->f, "nested", kb), "x",
                                      1, 0, on_reply, r),
                         PK_OK);
    }
    if (e->cancel_at != 0 && e->n == e->cancel_at) {
        pk_coord_watch_cancel(e->self);
    }
}

static void ev_init(fx *f, events *e)
{
    memset(e, 0, sizeof(*e));
    e->skip = strlen(f->pfx);
}

/* Starts a watch recording into e; its handle is e->self, set before
 * the first event (which the embedded backend delivers at once). */
static pk_coord_watch *c_watch(fx *f, const char *prefix, uint64_t from,
                               events *e)
{
    char kb[64];

    assert_int_equal(pk_coord_watch_start(f->c, kb, K(f, prefix, kb), from,
                                          on_event, e, &e->self),
                     PK_OK);
    assert_non_null(e->self);
    return e->self;
}

/* ---- the shared suite ------------------------------------------------- */

static void test_kv(void **state)
{
    fx *f = *state;
    char want[256];
    uint64_t base;
    listing l;
    reply r;

    fx_open(f);
    assert_int_equal(c_get(f, "a", &r), PK_ENOTFOUND);
    assert_int_equal(r.nkvs, 0);
    c_range(f, "", &l);
    assert_int_equal(l.n, 0);
    /* Each mutation's revision, and the key as it stored it. */
    assert_int_equal(c_put(f, "a", "1", 0, &r), PK_OK);
    base = r.rev;
    assert_true(base >= 1);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.key, "a");
    assert_string_equal(r.val, "1");
    assert_int_equal(r.kv.create_revision, base);
    assert_int_equal(r.kv.mod_revision, base);
    assert_int_equal(r.kv.version, 1);
    assert_int_equal(r.kv.lease, 0);
    assert_int_equal(c_put(f, "a", "2", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 1);
    assert_int_equal(r.kv.create_revision, base);
    assert_int_equal(r.kv.mod_revision, base + 1);
    assert_int_equal(r.kv.version, 2);
    assert_string_equal(r.val, "2");
    assert_int_equal(c_put(f, "b/1", "x", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "b/2", "", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 3);
    assert_int_equal(r.kv.value_len, 0);
    /* Reads answer at the current revision. */
    assert_int_equal(c_get(f, "a", &r), PK_OK);
    assert_int_equal(r.rev, base + 3);
    assert_string_equal(r.val, "2");
    assert_int_equal(r.kv.mod_revision, base + 1);
    assert_int_equal(r.kv.version, 2);
    c_range(f, "b/", &l);
    assert_int_equal(l.rev, base + 3);
    snprintf(want, sizeof(want), "b/1=x/%llu/%llu/1,b/2=/%llu/%llu/1",
             (unsigned long long)base + 2, (unsigned long long)base + 2,
             (unsigned long long)base + 3, (unsigned long long)base + 3);
    assert_string_equal(l.text, want);
    c_range(f, "", &l);
    assert_int_equal(l.n, 3);
    c_range(f, "b", &l);
    assert_int_equal(l.n, 2);
    c_range(f, "c", &l);
    assert_int_equal(l.n, 0);
    /* A delete answers with what was there; deleting nothing changes
     * nothing. */
    assert_int_equal(c_del(f, "b/1", &r), PK_OK);
    assert_int_equal(r.rev, base + 4);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.key, "b/1");
    assert_string_equal(r.val, "x");
    assert_int_equal(r.kv.mod_revision, base + 2);
    assert_int_equal(c_del(f, "b/1", &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, base + 4);
    assert_int_equal(r.nkvs, 0);
    assert_int_equal(c_get(f, "b/1", &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, base + 4);
    /* A deleted key comes back as new. */
    assert_int_equal(c_put(f, "b/1", "y", 0, &r), PK_OK);
    assert_int_equal(r.kv.create_revision, base + 5);
    assert_int_equal(r.kv.version, 1);
    /* Bad arguments are refused before anything is sent. */
    r_init(f, &r);
    assert_int_equal(pk_coord_put(f->c, "", 0, "v", 1, 0, on_reply, &r),
                     PK_EINVAL);
    assert_int_equal(pk_coord_get(f->c, NULL, 1, on_reply, &r), PK_EINVAL);
    assert_int_equal(pk_coord_lease_grant(f->c, 0, on_reply, &r), PK_EINVAL);
    idle(f, 20);
    assert_int_equal(r.calls, 0);
}

/* Keys and values are bytes: 0x00 and 0xff inside, and prefixes ending
 * in 0xff (whose range end carries into the byte before). */
static void test_binary(void **state)
{
    static const struct {
        const char *bytes;
        size_t len;
    } names[] = {{"\xff", 1}, {"\xff\xff", 2},  {"\xff\x01", 2},
                 {"\xfe", 1}, {"\x01\x00z", 3}, {"\xff\xff\xff", 3}};
    fx *f = *state;
    size_t plen = strlen(f->pfx);
    char kb[64];
    listing l;
    reply r;

    fx_open(f);
    memcpy(kb, f->pfx, plen);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        memcpy(kb + plen, names[i].bytes, names[i].len);
        r_init(f, &r);
        assert_int_equal(r_wait(f,
                                pk_coord_put(f->c, kb, plen + names[i].len,
                                             "\0v\xff", 3, 0, on_reply, &r),
                                &r),
                         PK_OK);
        assert_int_equal(r.kv.key_len, plen + names[i].len);
        assert_int_equal(r.kv.value_len, 3);
    }
    c_range(f, "\xff", &l);
    assert_int_equal(l.keys_len, 12);
    assert_memory_equal(l.keys, "\xff|\xff\x01|\xff\xff|\xff\xff\xff|", 12);
    c_range(f, "\xff\xff", &l);
    assert_int_equal(l.keys_len, 7);
    assert_memory_equal(l.keys, "\xff\xff|\xff\xff\xff|", 7);
    c_range(f, "\xff\xff\xff", &l);
    assert_int_equal(l.n, 1);
    c_range(f, "\xfe", &l);
    assert_int_equal(l.n, 1);
    /* Every key, in unsigned byte order. */
    c_range(f, "", &l);
    assert_int_equal(l.keys_len, 18);
    assert_memory_equal(
        l.keys, "\x01\x00z|\xfe|\xff|\xff\x01|\xff\xff|\xff\xff\xff|", 18);
    /* The key with a 0 byte reads back whole, and so does the value. */
    memcpy(kb + plen, "\x01\x00z", 3);
    r_init(f, &r);
    assert_int_equal(
        r_wait(f, pk_coord_get(f->c, kb, plen + 3, on_reply, &r), &r), PK_OK);
    assert_int_equal(r.kv.key_len, plen + 3);
    assert_int_equal(r.kv.value_len, 3);
    assert_memory_equal(r.val, "\0v\xff", 3);
}

static void test_cas(void **state)
{
    fx *f = *state;
    uint64_t base;
    reply r;

    fx_open(f);
    assert_int_equal(c_put(f, "a", "1", 0, &r), PK_OK);
    base = r.rev;
    assert_int_equal(c_cas(f, "a", base, "2", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 1);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.key, "a");
    assert_string_equal(r.val, "2");
    assert_int_equal(r.kv.mod_revision, base + 1);
    assert_int_equal(r.kv.create_revision, base);
    assert_int_equal(r.kv.version, 2);
    /* A stale expectation: the key as it is now, nothing written. */
    assert_int_equal(c_cas(f, "a", base, "3", 0, &r), PK_ESTALE);
    assert_int_equal(r.rev, base + 1);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.val, "2");
    assert_int_equal(r.kv.mod_revision, base + 1);
    assert_int_equal(r.kv.version, 2);
    /* 0: the key must not exist. */
    assert_int_equal(c_cas(f, "a", 0, "4", 0, &r), PK_ESTALE);
    assert_string_equal(r.val, "2");
    assert_int_equal(c_cas(f, "new", 0, "n", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 2);
    assert_int_equal(r.kv.create_revision, base + 2);
    assert_int_equal(r.kv.version, 1);
    assert_string_equal(r.val, "n");
    assert_int_equal(c_cas(f, "none", base, "n", 0, &r), PK_ESTALE);
    assert_int_equal(r.nkvs, 0);
    assert_int_equal(r.rev, base + 2);
    assert_int_equal(c_get(f, "a", &r), PK_OK);
    assert_string_equal(r.val, "2");
    assert_int_equal(c_get(f, "none", &r), PK_ENOTFOUND);
    /* After a delete, 0 matches again. */
    assert_int_equal(c_del(f, "new", &r), PK_OK);
    assert_int_equal(c_cas(f, "new", 0, "again", 0, &r), PK_OK);
    assert_int_equal(r.kv.version, 1);
}

static void test_leases(void **state)
{
    fx *f = *state;
    const uint64_t bogus = 0x5eed5eed5eedull;
    pk_coord_watch *w;
    uint64_t l1, l2;
    events ev;
    reply r;

    fx_open(f);
    l1 = c_grant(f, 3000);
    l2 = c_grant(f, 1500);
    assert_true(l1 != l2);
    /* Keys attached to a lease, and detached by a put without one. */
    assert_int_equal(c_put(f, "k1", "v", l1, &r), PK_OK);
    assert_int_equal(r.kv.lease, l1);
    assert_int_equal(c_get(f, "k1", &r), PK_OK);
    assert_int_equal(r.kv.lease, l1);
    assert_int_equal(c_put(f, "k1", "v", 0, &r), PK_OK);
    assert_int_equal(r.kv.lease, 0);
    assert_int_equal(c_cas(f, "k1", r.rev, "w", l1, &r), PK_OK);
    assert_int_equal(r.kv.lease, l1);
    /* Leases that do not exist. */
    assert_int_equal(c_put(f, "k2", "v", bogus, &r), PK_ENOTFOUND);
    assert_int_equal(c_get(f, "k2", &r), PK_ENOTFOUND);
    assert_int_equal(c_cas(f, "k2", 0, "v", bogus, &r), PK_ENOTFOUND);
    assert_int_equal(c_get(f, "k2", &r), PK_ENOTFOUND);
    assert_int_equal(c_keepalive(f, bogus, &r), PK_ENOTFOUND);
    assert_int_equal(c_revoke(f, bogus, &r), PK_ENOTFOUND);
    /* Keepalive renews for the whole TTL. */
    assert_int_equal(c_keepalive(f, l1, &r), PK_OK);
    assert_int_equal(r.lease, l1);
    assert_true(r.ttl >= 3000 && r.ttl <= 4000);
    /* Revoking deletes the attached keys, each an event. */
    assert_int_equal(c_put(f, "x/1", "a", l2, &r), PK_OK);
    assert_int_equal(c_put(f, "x/2", "b", l2, &r), PK_OK);
    assert_int_equal(c_put(f, "x/3", "c", 0, &r), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "x/", r.rev + 1, &ev);
    assert_int_equal(c_revoke(f, l2, &r), PK_OK);
    assert_true(r.rev >= 1);
    WAIT_UNTIL(f, ev.n >= 2, WAIT_MS);
    assert_int_equal(ev.n, 2);
    assert_int_equal(ev.type[0], PK_COORD_DELETE);
    assert_int_equal(ev.type[1], PK_COORD_DELETE);
    assert_string_equal(ev.key[0], "x/1");
    assert_string_equal(ev.key[1], "x/2");
    assert_true(ev.rev[0] <= ev.rev[1]); /* etcd: one revision for both */
    assert_int_equal(ev.rev[1], r.rev);
    assert_int_equal(c_get(f, "x/1", &r), PK_ENOTFOUND);
    assert_int_equal(c_get(f, "x/3", &r), PK_OK);
    assert_int_equal(c_revoke(f, l2, &r), PK_ENOTFOUND);
    assert_int_equal(c_keepalive(f, l2, &r), PK_ENOTFOUND);
    assert_int_equal(c_put(f, "x/4", "v", l2, &r), PK_ENOTFOUND);
    pk_coord_watch_cancel(w);
    assert_int_equal(ev.err, 0);
}

/* Expiry in real time: a lease kept alive outlives one left alone. */
static void test_lease_expiry(void **state)
{
    fx *f = *state;
    pk_coord_watch *w;
    uint64_t la, lb, deadline;
    int b_gone = 0, a_gone = 0;
    events ev;
    reply r;

    fx_open(f);
    la = c_grant(f, 1000);
    lb = c_grant(f, 1000);
    assert_int_equal(c_put(f, "a", "1", la, &r), PK_OK);
    assert_int_equal(c_put(f, "b", "1", lb, &r), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "", r.rev + 1, &ev);
    deadline = etcd_now_ms() + 4000;
    while (!b_gone && etcd_now_ms() < deadline) {
        assert_int_equal(c_keepalive(f, la, &r), PK_OK);
        idle(f, 200);
        b_gone = c_get(f, "b", &r) == PK_ENOTFOUND;
    }
    assert_true(b_gone);
    assert_int_equal(c_get(f, "a", &r), PK_OK);
    assert_int_equal(c_keepalive(f, lb, &r), PK_ENOTFOUND);
    /* Now a, left alone. */
    deadline = etcd_now_ms() + 4000;
    while (!a_gone && etcd_now_ms() < deadline) {
        idle(f, 100);
        a_gone = c_get(f, "a", &r) == PK_ENOTFOUND;
    }
    assert_true(a_gone);
    WAIT_UNTIL(f, ev.n >= 2, WAIT_MS);
    assert_int_equal(ev.n, 2);
    assert_string_equal(ev.key[0], "b");
    assert_string_equal(ev.key[1], "a");
    assert_int_equal(ev.type[0], PK_COORD_DELETE);
    assert_int_equal(ev.type[1], PK_COORD_DELETE);
    assert_true(ev.rev[0] < ev.rev[1]);
    assert_int_equal(c_keepalive(f, la, &r), PK_ENOTFOUND);
    pk_coord_watch_cancel(w);
}

/* A watch from a past revision: the history, then what follows, each
 * event once and in order. */
static void test_watch_history(void **state)
{
    static const char *want_keys[] = {"b", "a", "b", "c", "d", "a"};
    static const uint8_t want_types[] = {PK_COORD_PUT,    PK_COORD_PUT,
                                         PK_COORD_DELETE, PK_COORD_PUT,
                                         PK_COORD_PUT,    PK_COORD_PUT};
    fx *f = *state;
    pk_coord_watch *w;
    uint64_t base;
    events ev;
    reply r;

    fx_open(f);
    assert_int_equal(c_put(f, "a", "1", 0, &r), PK_OK);
    base = r.rev;
    assert_int_equal(c_put(f, "b", "1", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "a", "2", 0, &r), PK_OK);
    assert_int_equal(c_del(f, "b", &r), PK_OK);
    assert_int_equal(c_put(f, "c", "1", 0, &r), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "", base + 1, &ev);
    WAIT_UNTIL(f, ev.n >= 4, WAIT_MS);
    assert_int_equal(ev.n, 4);
    assert_int_equal(c_put(f, "d", "1", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "a", "3", 0, &r), PK_OK);
    WAIT_UNTIL(f, ev.n >= 6, WAIT_MS);
    idle(f, 100); /* nothing more comes */
    assert_int_equal(ev.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(ev.rev[i], base + 1 + (uint64_t)i);
        assert_string_equal(ev.key[i], want_keys[i]);
        assert_int_equal(ev.type[i], want_types[i]);
    }
    assert_int_equal(ev.err, 0);
    pk_coord_watch_cancel(w);
}

/* Only keys under the prefix; a watch from "now" (revision 0). */
static void test_watch_prefix(void **state)
{
    fx *f = *state;
    pk_coord_watch *w, *w0;
    events ev, ev0;
    int probes = 0;
    reply r;

    fx_open(f);
    assert_int_equal(c_put(f, "x", "1", 0, &r), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "x/", r.rev + 1, &ev);
    ev_init(f, &ev0);
    w0 = c_watch(f, "x/", 0, &ev0);
    assert_int_equal(c_put(f, "x/1", "1", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "y/1", "1", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "x", "2", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "xx/1", "2", 0, &r), PK_OK);
    assert_int_equal(c_put(f, "x/2", "1", 0, &r), PK_OK);
    WAIT_UNTIL(f, ev.n >= 2, WAIT_MS);
    idle(f, 50);
    assert_int_equal(ev.n, 2);
    assert_string_equal(ev.key[0], "x/1");
    assert_string_equal(ev.key[1], "x/2");
    assert_int_equal(ev.rev[1], r.rev);
    /* From 0, a watch starts once the backend has it (for etcd, when the
     * server created it): write until something arrives, then every
     * revision after the first one it saw arrives once. */
    while (ev0.n == 0 && probes++ < 50) {
        assert_int_equal(c_put(f, "x/probe", "p", 0, &r), PK_OK);
        idle(f, 20);
    }
    assert_true(ev0.n > 0);
    assert_int_equal(c_put(f, "x/last", "1", 0, &r), PK_OK);
    WAIT_UNTIL(f, ev0.n > 0 && ev0.rev[ev0.n - 1] == r.rev, WAIT_MS);
    assert_int_equal(ev0.rev[ev0.n - 1], r.rev);
    for (int i = 1; i < ev0.n; i++) {
        assert_true(ev0.rev[i] > ev0.rev[i - 1]);
    }
    assert_int_equal(ev0.err, 0);
    pk_coord_watch_cancel(w0);
    pk_coord_watch_cancel(w);
}

/* Callbacks that cancel their own watch, or write through the handle. */
static void test_watch_reentrant(void **state)
{
    fx *f = *state;
    pk_coord_watch *w;
    events gone, writer;
    uint64_t base;
    reply r;

    fx_open(f);
    assert_int_equal(c_put(f, "w", "0", 0, &r), PK_OK);
    base = r.rev;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c_put(f, "w", "1", 0, &r), PK_OK);
    }
    ev_init(f, &gone);
    gone.cancel_at = 2;
    c_watch(f, "w", base, &gone);
    ev_init(f, &writer);
    writer.f = f;
    writer.writes_left = 3;
    w = c_watch(f, "", base, &writer);
    /* 4 puts of w, then 3 nested ones, one per event of the first 3. */
    WAIT_UNTIL(f, writer.n >= 7, WAIT_MS);
    idle(f, 100);
    assert_int_equal(writer.n, 7);
    for (int i = 0; i < writer.n; i++) {
        assert_int_equal(writer.rev[i], base + (uint64_t)i);
    }
    assert_string_equal(writer.key[6], "nested");
    WAIT_UNTIL(f, calls(writer.nested, 3) == 3, WAIT_MS);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(writer.nested[i].calls, 1);
        assert_int_equal(writer.nested[i].rc, PK_OK);
    }
    /* The watch that cancelled itself got 2 events and nothing since. */
    assert_int_equal(gone.n, 2);
    assert_int_equal(c_put(f, "w", "2", 0, &r), PK_OK);
    WAIT_UNTIL(f, writer.n >= 8, WAIT_MS);
    assert_int_equal(writer.n, 8);
    assert_int_equal(gone.n, 2);
    assert_int_equal(gone.err, 0);
    pk_coord_watch_cancel(w);
}

/* Several puts in flight at once: consecutive revisions, each delivered
 * once, in revision order. */
static void test_watch_consecutive(void **state)
{
    enum { N = 12 };
    fx *f = *state;
    reply rs[N];
    pk_coord_watch *w;
    uint64_t base;
    int done = 0;
    events ev;
    reply r;

    fx_open(f);
    assert_int_equal(c_put(f, "start", "", 0, &r), PK_OK);
    base = r.rev;
    ev_init(f, &ev);
    w = c_watch(f, "k", base + 1, &ev);
    for (int i = 0; i < N; i++) {
        char kb[64], name[8];

        snprintf(name, sizeof(name), "k%02d", i);
        r_init(f, &rs[i]);
        assert_int_equal(
            pk_coord_put(f->c, kb, K(f, name, kb), "v", 1, 0, on_reply, &rs[i]),
            PK_OK);
    }
    WAIT_UNTIL(f, (done = calls(rs, N)) == N, WAIT_MS);
    assert_int_equal(done, N);
    WAIT_UNTIL(f, ev.n >= N, WAIT_MS);
    idle(f, 50);
    assert_int_equal(ev.n, N);
    for (int i = 0; i < N; i++) {
        int found = 0;

        assert_int_equal(ev.rev[i], base + 1 + (uint64_t)i);
        for (int j = 0; j < N; j++) {
            if (rs[j].rev == ev.rev[i]) {
                assert_int_equal(rs[j].rc, PK_OK);
                assert_string_equal(rs[j].key, ev.key[i]);
                found++;
            }
        }
        assert_int_equal(found, 1);
    }
    pk_coord_watch_cancel(w);
}

/* A watch from before the retained history ends with PK_ERANGE; the
 * recovery is a range, then a watch from its revision + 1. */
static void test_watch_compacted(void **state)
{
    fx *f = *state;
    pk_coord_watch *w;
    events ev, ok;
    uint64_t last;
    listing l;
    reply r;

    fx_open(f);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c_put(f, "k", "v", 0, &r), PK_OK);
    }
    last = r.rev;
    assert_int_equal(f->b->compact(f, last), 0);
    ev_init(f, &ev);
    w = c_watch(f, "", last - 1, &ev);
    WAIT_UNTIL(f, ev.err != 0, WAIT_MS);
    assert_int_equal(ev.err, PK_ERANGE);
    assert_int_equal(ev.terminal_calls, 1);
    assert_int_equal(ev.n, 0);
    idle(f, 50);
    assert_int_equal(ev.terminal_calls, 1);
    pk_coord_watch_cancel(w); /* still ours after the terminal call */
    c_range(f, "", &l);
    assert_true(l.rev >= last);
    assert_int_equal(l.n, 1);
    ev_init(f, &ok);
    w = c_watch(f, "", l.rev + 1, &ok);
    assert_int_equal(c_put(f, "k", "v", 0, &r), PK_OK);
    WAIT_UNTIL(f, ok.n >= 1, WAIT_MS);
    assert_int_equal(ok.n, 1);
    assert_int_equal(ok.rev[0], l.rev + 1);
    assert_int_equal(ok.err, 0);
    pk_coord_watch_cancel(w);
}

/* ---- etcd only -------------------------------------------------------- */

static void test_etcd_endpoints(void **state)
{
    static const char *bad[] = {
        "",     ",", " , ", "ftp://127.0.0.1:1", "127.0.0.1:1,,127.0.0.1:2",
        "a b:1"};
    fx *f = *state;
    pk_coord *c = NULL;
    pk_coord_watch *w;
    char eps[256];
    uint64_t base;
    events ev;
    reply r;

    fx_open(f);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(pk_coord_etcd_open(&f->loop, bad[i], &c), PK_EINVAL);
    }
    assert_null(c);
    assert_int_equal(pk_coord_etcd_open(NULL, g_etcd.endpoint, &c), PK_EINVAL);
    assert_int_equal(c_put(f, "a", "1", 0, &r), PK_OK);
    base = r.rev;
    /* A dead endpoint first: the watch, then requests, move on to the
     * next one. */
    pk_coord_free(f->c);
    snprintf(eps, sizeof(eps), "etcd://127.0.0.1:%d, http://%s/",
             etcd_free_port(), g_etcd.endpoint);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "", base + 1, &ev);
    assert_int_equal(c_put(f, "a", "2", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 1);
    assert_int_equal(c_get(f, "a", &r), PK_OK);
    assert_string_equal(r.val, "2");
    WAIT_UNTIL(f, ev.n >= 1, WAIT_MS);
    assert_int_equal(ev.n, 1);
    assert_int_equal(ev.rev[0], base + 1);
    assert_int_equal(ev.err, 0);
    pk_coord_watch_cancel(w);
    /* Freeing with requests in flight answers them PK_EIO, at once;
     * watches go silently. */
    r_init(f, &r);
    assert_int_equal(pk_coord_get(f->c, "k", 1, on_reply, &r), PK_OK);
    ev_init(f, &ev);
    c_watch(f, "", 0, &ev);
    pk_coord_free(f->c);
    f->c = NULL;
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.rc, PK_EIO);
    assert_int_equal(r.rev, 0);
    idle(f, 20);
    assert_int_equal(ev.n + ev.err, 0);
}

static void test_etcd_unreachable(void **state)
{
    fx *f = *state;
    char eps[128];
    uint64_t t0;
    events ev;
    reply r;

    snprintf(eps, sizeof(eps), "127.0.0.1:%d,127.0.0.1:%d", etcd_free_port(),
             etcd_free_port());
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    t0 = etcd_now_ms();
    assert_int_equal(c_get(f, "a", &r), PK_EIO);
    assert_int_equal(r.rev, 0);
    assert_int_equal(r.nkvs, 0);
    assert_int_equal(c_put(f, "a", "1", 0, &r), PK_EIO);
    assert_int_equal(c_cas(f, "a", 0, "1", 0, &r), PK_EIO);
    assert_int_equal(c_del(f, "a", &r), PK_EIO);
    assert_int_equal(c_keepalive(f, 1, &r), PK_EIO);
    assert_int_equal(c_revoke(f, 1, &r), PK_EIO);
    assert_true(etcd_now_ms() - t0 < 3000);
    ev_init(f, &ev);
    c_watch(f, "", 0, &ev); /* freed with the handle */
    WAIT_UNTIL(f, ev.err != 0, WAIT_MS);
    assert_int_equal(ev.err, PK_EIO);
    idle(f, 100);
    assert_int_equal(ev.terminal_calls, 1);
}

/* Watches through a relay that drops every connection: they come back
 * where they left off (events written meanwhile included, none twice),
 * and end with PK_EIO once nothing answers. */
static void test_etcd_watch_resume(void **state)
{
    enum { ROUNDS = 3 };
    fx *f = *state;
    pk_coord *direct, *relayed;
    pk_coord_watch *w;
    uint64_t base;
    char eps[64];
    events ev;
    reply r;

    fx_open(f);
    direct = f->c;
    assert_int_equal(relay_start(&f->rl, &f->loop,
                                 atoi(strchr(g_etcd.endpoint, ':') + 1), NULL),
                     0);
    snprintf(eps, sizeof(eps), "127.0.0.1:%d", f->rl.port);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &relayed), PK_OK);
    f->c = relayed;
    assert_int_equal(c_put(f, "a", "0", 0, &r), PK_OK);
    base = r.rev;
    ev_init(f, &ev);
    w = c_watch(f, "", base + 1, &ev);
    for (int round = 0; round < ROUNDS; round++) {
        int seen = 4 * round;

        for (int i = 0; i < 3; i++) {
            assert_int_equal(c_put(f, "a", "v", 0, &r), PK_OK);
        }
        WAIT_UNTIL(f, ev.n >= seen + 3, WAIT_MS);
        assert_int_equal(ev.n, seen + 3);
        relay_drop(&f->rl);
        /* Written while the watch is down, through the other handle. */
        f->c = direct;
        assert_int_equal(c_put(f, "b", "v", 0, &r), PK_OK);
        f->c = relayed;
        WAIT_UNTIL(f, ev.n >= seen + 4, WAIT_MS);
        assert_int_equal(ev.n, seen + 4);
        assert_string_equal(ev.key[seen + 3], "b");
    }
    idle(f, 100);
    assert_int_equal(ev.n, 4 * ROUNDS);
    for (int i = 0; i < ev.n; i++) {
        assert_int_equal(ev.rev[i], base + 1 + (uint64_t)i);
    }
    assert_int_equal(ev.err, 0);
    assert_true(f->rl.accepted >= ROUNDS + 1);
    /* Nothing answers any more: the watch ends. */
    relay_stop(&f->rl);
    WAIT_UNTIL(f, ev.err != 0, WAIT_MS);
    assert_int_equal(ev.err, PK_EIO);
    assert_int_equal(ev.terminal_calls, 1);
    pk_coord_watch_cancel(w);
    pk_coord_free(relayed);
    WAIT_UNTIL(f, f->rl.closed, WAIT_MS);
    f->c = direct;
}

/* An HTTP/1.1 answer with status (e.g. "200 OK") and body, in buf (512). */
static const char *http_answer(char *buf, const char *status, const char *body)
{
    snprintf(buf, 512, "HTTP/1.1 %s\r\nContent-Length: %zu\r\n\r\n%s", status,
             strlen(body), body);
    return buf;
}

/*
 * A first endpoint that answers "no leader" (as a member cut off from its
 * quorum does, asked with hasleader): every request and watch moves on to
 * the next.  Another "unavailable" (etcd's "request timed out": the write
 * may have happened) moves on only what is safe to send twice, and so
 * does silence, once the timeout is up.
 */
static void test_etcd_failover(void **state)
{
    static const char no_leader[] =
        "{\"error\":\"etcdserver: no leader\",\"message\":\"etcdserver: no "
        "leader\",\"code\":14}";
    static const char stream_no_leader[] =
        "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":"
        "\"etcdserver: no leader\",\"http_status\":\"Service Unavailable\"}}";
    static const char timed_out[] =
        "{\"message\":\"etcdserver: request timed out\",\"code\":14}";
    fx *f = *state;
    pk_coord *direct;
    pk_coord_watch *w;
    char answer[512];
    char eps[128];
    uint64_t base, t0, lease;
    events ev;
    reply r, g;

    fx_open(f);
    direct = f->c;
    assert_int_equal(c_put(f, "a", "0", 0, &r), PK_OK);
    base = r.rev;
    http_answer(answer, "503 Service Unavailable", no_leader);
    assert_int_equal(relay_start(&f->rl, &f->loop, 0, answer), 0);
    snprintf(eps, sizeof(eps), "127.0.0.1:%d,%s", f->rl.port, g_etcd.endpoint);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "", base + 1, &ev);
    assert_int_equal(c_put(f, "a", "1", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 1);
    WAIT_UNTIL(f, ev.n >= 1, WAIT_MS);
    assert_int_equal(ev.n, 1);
    assert_int_equal(f->rl.accepted, 2); /* the watch and the put */
    pk_coord_watch_cancel(w);
    pk_coord_free(f->c);
    relay_stop(&f->rl);
    WAIT_UNTIL(f, f->rl.closed, WAIT_MS);
    /* The same as a streaming method says it (200, then an error). */
    f->c = direct;
    lease = c_grant(f, 5000);
    http_answer(answer, "200 OK", stream_no_leader);
    assert_int_equal(relay_start(&f->rl, &f->loop, 0, answer), 0);
    snprintf(eps, sizeof(eps), "127.0.0.1:%d,%s", f->rl.port, g_etcd.endpoint);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    ev_init(f, &ev);
    w = c_watch(f, "", base + 1, &ev);
    assert_int_equal(c_keepalive(f, lease, &r), PK_OK);
    assert_int_equal(r.lease, lease);
    WAIT_UNTIL(f, ev.n >= 1, WAIT_MS);
    assert_int_equal(ev.n, 1);
    assert_int_equal(ev.rev[0], base + 1);
    assert_int_equal(f->rl.accepted, 2);
    pk_coord_watch_cancel(w);
    pk_coord_free(f->c);
    f->c = direct;
    assert_int_equal(c_revoke(f, lease, &r), PK_OK);
    relay_stop(&f->rl);
    WAIT_UNTIL(f, f->rl.closed, WAIT_MS);
    /* "timed out": reads move on, writes do not. */
    http_answer(answer, "503 Service Unavailable", timed_out);
    assert_int_equal(relay_start(&f->rl, &f->loop, 0, answer), 0);
    snprintf(eps, sizeof(eps), "127.0.0.1:%d,%s", f->rl.port, g_etcd.endpoint);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    r_init(f, &g);
    assert_int_equal(pk_coord_get(f->c, "x", 1, on_reply, &g), PK_OK);
    assert_int_equal(c_put(f, "a", "2", 0, &r), PK_EIO);
    WAIT_UNTIL(f, g.calls > 0, WAIT_MS);
    assert_int_equal(g.rc, PK_ENOTFOUND); /* went on to the next */
    assert_int_equal(f->rl.accepted, 2);
    /* The member is marked down: requests now start at the next one. */
    assert_int_equal(c_put(f, "a", "2", 0, &r), PK_OK);
    assert_int_equal(c_get(f, "a", &r), PK_OK);
    assert_string_equal(r.val, "2");
    assert_int_equal(f->rl.accepted, 2);
    pk_coord_free(f->c);
    relay_stop(&f->rl);
    WAIT_UNTIL(f, f->rl.closed, WAIT_MS);
    /* An endpoint that never answers: after the timeout, the same. */
    assert_int_equal(relay_start(&f->rl, &f->loop, 0, ""), 0);
    snprintf(eps, sizeof(eps), "127.0.0.1:%d,%s", f->rl.port, g_etcd.endpoint);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    ev_init(f, &ev);
    t0 = etcd_now_ms();
    w = c_watch(f, "", base + 2, &ev);
    assert_int_equal(c_put(f, "a", "3", 0, &r), PK_EIO);
    assert_true(etcd_now_ms() - t0 >= PK_ETCD_HTTP_TIMEOUT_MS - 100);
    assert_int_equal(c_put(f, "a", "3", 0, &r), PK_OK);
    assert_int_equal(r.rev, base + 3);
    WAIT_UNTIL(f, ev.n >= 2, WAIT_MS);
    assert_int_equal(ev.n, 2);
    assert_int_equal(ev.rev[0], base + 2);
    assert_int_equal(ev.rev[1], base + 3);
    assert_int_equal(ev.err, 0);
    assert_true(etcd_now_ms() - t0 < 3 * PK_ETCD_HTTP_TIMEOUT_MS);
    pk_coord_free(f->c);
    relay_stop(&f->rl);
    WAIT_UNTIL(f, f->rl.closed, WAIT_MS);
    f->c = direct;
}

/* Answers that are not what etcd sends end in PK_EIO, not a crash. */
enum { M_KV = 1, M_WRITE = 2, M_WATCH = 4, M_ALL = 7 };

static void malformed_case(fx *f, const char *answer, int ops)
{
    char eps[64];
    listing l;
    events ev;
    reply r;

    assert_int_equal(relay_start(&f->rl, &f->loop, 0, answer), 0);
    snprintf(eps, sizeof(eps), "127.0.0.1:%d", f->rl.port);
    assert_int_equal(pk_coord_etcd_open(&f->loop, eps, &f->c), PK_OK);
    if (ops & M_KV) {
        assert_int_equal(c_get(f, "a", &r), PK_EIO);
        memset(&l, 0, sizeof(l));
        assert_int_equal(pk_coord_range(f->c, "", 0, on_range, &l), PK_OK);
        WAIT_UNTIL(f, l.calls > 0, WAIT_MS);
        assert_int_equal(l.rc, PK_EIO);
        assert_int_equal(l.n, 0);
    }
    if (ops & M_WRITE) {
        assert_int_equal(c_put(f, "a", "1", 0, &r), PK_EIO);
        assert_int_equal(c_cas(f, "a", 3, "1", 0, &r), PK_EIO);
        assert_int_equal(c_del(f, "a", &r), PK_EIO);
        assert_int_equal(c_keepalive(f, 7, &r), PK_EIO);
        /* A bare header is a valid answer to a revoke. */
        c_revoke(f, 7, &r);
        assert_true(r.rc == PK_OK || r.rc == PK_EIO);
        r_init(f, &r);
        assert_int_equal(
            r_wait(f, pk_coord_lease_grant(f->c, 10, on_reply, &r), &r),
            PK_EIO);
        assert_int_equal(r.lease, 0);
    }
    if (ops & M_WATCH) {
        ev_init(f, &ev);
        c_watch(f, "", 1, &ev);
        WAIT_UNTIL(f, ev.err != 0, WAIT_MS);
        assert_int_equal(ev.err, PK_EIO);
        assert_int_equal(ev.n, 0);
    }
    pk_coord_free(f->c);
    f->c = NULL;
    relay_stop(&f->rl);
    WAIT_UNTIL(f, f->rl.closed, WAIT_MS);
}

static void test_etcd_malformed(void **state)
{
    static const struct {
        const char *body;
        int ops;
    } bodies[] = {
        {"{bad}", M_ALL},
        {"[]", M_ALL},
        {"{}", M_ALL},
        {"{\"header\":{\"revision\":\"x\"}}", M_ALL},
        {"{\"header\":{\"revision\":\"-5\"}}", M_ALL},
        {"{\"header\":{\"revision\":5.5}}", M_ALL},
        {"{\"header\":{\"revision\":\"5\"},\"kvs\":7,\"prev_kvs\":7,"
         "\"deleted\":\"1\",\"responses\":7,\"result\":7,\"ID\":\"q\"}",
         M_ALL},
        {"{\"header\":{\"revision\":\"5\"},\"succeeded\":true,\"responses\":"
         "[{},{\"response_range\":{\"kvs\":[]}}],\"prev_kvs\":[],"
         "\"deleted\":\"2\",\"result\":{\"TTL\":\"3\"},\"ID\":\"1\"}",
         M_WRITE},
        {"{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":\"!!!!\"}]}",
         M_KV},
        {"{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":\"YQ\"}]}", M_KV},
        {"{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"value\":\"\"}]}", M_KV},
        {"{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":\"YQ==\","
         "\"version\":\"-1\"}]}",
         M_KV},
        {"{\"result\":{\"events\":[{\"type\":\"NOPE\",\"kv\":{\"key\":"
         "\"YQ==\",\"mod_revision\":\"3\"}}]}}",
         M_WATCH},
        {"{\"result\":{\"events\":[{\"kv\":{\"key\":\"YQ==\"}}]}}", M_WATCH},
        {"{\"result\":{\"events\":{}}}", M_WATCH},
        {"{\"result\":{\"canceled\":true}}", M_WATCH},
    };
    fx *f = *state;
    char answer[512];

    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        malformed_case(f, http_answer(answer, "200 OK", bodies[i].body),
                       bodies[i].ops);
    }
    malformed_case(f, http_answer(answer, "500 Oops", "bad"), M_ALL);
    malformed_case(f, http_answer(answer, "404 Not Found", "{}{}"), M_ALL);
    /* Cut short, then not HTTP at all. */
    malformed_case(f, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{\"x",
                   M_ALL);
    malformed_case(f, "garbage\r\n\r\n", M_ALL);
}

/* ---- main ------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (etcd_start(&g_etcd) != 0) {
        fprintf(stderr, "etcd: %s\n", g_etcd.err);
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    etcd_stop(&g_etcd);
    curl_global_cleanup();
    return 0;
}

/* One test on one backend, named "backend/test". */
/* clang-format off */
#define CASE(b, fn) {#b "/" #fn, fn, setup, teardown, (void *)&(b)}
/* clang-format on */
#define BOTH(fn) CASE(embedded, fn), CASE(etcd, fn)

int main(void)
{
    struct CMUnitTest tests[] = {
        BOTH(test_kv),
        BOTH(test_binary),
        BOTH(test_cas),
        BOTH(test_leases),
        BOTH(test_lease_expiry),
        BOTH(test_watch_history),
        BOTH(test_watch_prefix),
        BOTH(test_watch_reentrant),
        BOTH(test_watch_consecutive),
        BOTH(test_watch_compacted),
        CASE(etcd, test_etcd_endpoints),
        CASE(etcd, test_etcd_unreachable),
        CASE(etcd, test_etcd_watch_resume),
        CASE(etcd, test_etcd_failover),
        CASE(etcd, test_etcd_malformed),
    };

    return cmocka_run_group_tests_name("coord suite", tests, group_setup,
                                       group_teardown);
}

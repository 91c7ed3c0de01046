/*
 * Tests of the embedded coordinator through the pk_coord interface, on
 * real files in mkdtemp directories (removed afterwards), with a fake
 * clock: the atomic file (pk_coord_file), every operation and its
 * response, leases driven by the clock, watches (including re-entrant
 * callbacks and PK_ERANGE through the callback), restarts that keep
 * revisions and grant leases afresh, write failures that must not be
 * acknowledged, and random operations with restarts in between.
 *
 * Each mutation costs an fsync, so the tests count their writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "coord/pk_coord.h"
#include "coord/pk_coord_embedded.h"
#include "coord/pk_coord_file.h"
#include "core/pk_err.h"

#define S(s) (s), strlen(s)

/* ---- fixture: a temporary directory and a fake clock ------------------ */

typedef struct fx {
    char dir[64];
    char path[96];
    uint64_t now; /* the fake clock, in ms */
    pk_coord *c;
} fx;

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static uint64_t fake_clock(void *ctx)
{
    return ((fx *)ctx)->now;
}

static void fx_open(fx *f)
{
    pk_coord_embedded_opts o = {fake_clock, f, 0, 0};

    assert_int_equal(pk_coord_embedded_open(f->path, &o, &f->c), PK_OK);
    assert_string_equal(pk_coord_backend(f->c), "embedded");
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));

    if (f == NULL) {
        return -1;
    }
    snprintf(f->dir, sizeof(f->dir), "/tmp/pkcoord-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/coord.state", f->dir);
    f->now = 1000000;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;

    pk_coord_free(f->c);
    nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void restart(fx *f, uint64_t advance_ms)
{
    pk_coord_free(f->c);
    f->c = NULL;
    f->now += advance_ms;
    fx_open(f);
}

/* ---- replies ---------------------------------------------------------- */

typedef struct reply {
    int calls;
    int rc;
    uint64_t rev;
    size_t nkvs;
    pk_coord_kv kv; /* kvs[0], with key and value copied below */
    char key[64];
    char val[64];
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
        r->kv = res->kvs[0];
        snprintf(r->key, sizeof(r->key), "%.*s", (int)r->kv.key_len,
                 (const char *)r->kv.key);
        snprintf(r->val, sizeof(r->val), "%.*s", (int)r->kv.value_len,
                 r->kv.value != NULL ? (const char *)r->kv.value : "");
        r->kv.key = NULL;
        r->kv.value = NULL;
    }
}

/* Each helper checks that the request was taken and answered once. */
#define DONE(call, r)                                                          \
    do {                                                                       \
        memset((r), 0, sizeof(*(r)));                                          \
        assert_int_equal((call), PK_OK);                                       \
        assert_int_equal((r)->calls, 1);                                       \
    } while (0)

static int c_put(pk_coord *c, const char *k, const char *v, uint64_t lease,
                 reply *r)
{
    DONE(pk_coord_put(c, S(k), S(v), lease, on_reply, r), r);
    return r->rc;
}

static int c_get(pk_coord *c, const char *k, reply *r)
{
    DONE(pk_coord_get(c, S(k), on_reply, r), r);
    return r->rc;
}

static int c_del(pk_coord *c, const char *k, reply *r)
{
    DONE(pk_coord_delete(c, S(k), on_reply, r), r);
    return r->rc;
}

static int c_cas(pk_coord *c, const char *k, uint64_t expect, const char *v,
                 reply *r)
{
    DONE(pk_coord_cas(c, S(k), expect, S(v), 0, on_reply, r), r);
    return r->rc;
}

static uint64_t c_grant(pk_coord *c, uint64_t ttl)
{
    reply r;

    DONE(pk_coord_lease_grant(c, ttl, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_OK);
    assert_int_equal(r.ttl, ttl);
    assert_true(r.lease != 0);
    return r.lease;
}

/* A range answer, flattened to "k=v,k=v" with its revision. */
typedef struct listing {
    int calls;
    uint64_t rev;
    size_t n;
    char text[4096];
} listing;

static void on_range(void *ctx, int rc, const pk_coord_result *res)
{
    listing *l = ctx;
    size_t used = 0;

    assert_int_equal(rc, PK_OK);
    l->calls++;
    l->rev = res->revision;
    l->n = res->nkvs;
    l->text[0] = '\0';
    for (size_t i = 0; i < res->nkvs; i++) {
        const pk_coord_kv *kv = &res->kvs[i];

        used += (size_t)snprintf(
            l->text + used, sizeof(l->text) - used,
            "%s%.*s=%.*s/%llu/%llu/%llu", i ? "," : "", (int)kv->key_len,
            (const char *)kv->key, (int)kv->value_len,
            kv->value != NULL ? (const char *)kv->value : "",
            (unsigned long long)kv->create_revision,
            (unsigned long long)kv->mod_revision,
            (unsigned long long)kv->version);
        assert_true(used < sizeof(l->text));
    }
}

static void c_range(pk_coord *c, const char *prefix, listing *l)
{
    memset(l, 0, sizeof(*l));
    assert_int_equal(pk_coord_range(c, S(prefix), on_range, l), PK_OK);
    assert_int_equal(l->calls, 1);
}

/* A watcher that records revisions and types. */
typedef struct events {
    int n;
    uint64_t rev[128];
    uint8_t type[128];
    char key[128][16];
    int err;
    /* optional: write through c while events arrive */
    pk_coord *c;
    int writes_left;
    pk_coord_watch *self;
    int cancel_at; /* cancel self when n reaches it (0: never) */
} events;

static void on_event(void *ctx, int rc, const pk_coord_event *ev)
{
    events *e = ctx;

    if (rc != PK_OK) {
        assert_null(ev);
        assert_int_equal(e->err, 0);
        e->err = rc;
        return;
    }
    assert_int_equal(e->err, 0); /* nothing after a terminal call */
    assert_true(e->n < 128);
    e->rev[e->n] = ev->revision;
    e->type[e->n] = ev->type;
    snprintf(e->key[e->n], sizeof(e->key[0]), "%.*s", (int)ev->kv.key_len,
             (const char *)ev->kv.key);
    e->n++;
    if (e->c != NULL && e->writes_left > 0 && ev->revision % 2 == 0) {
        reply r;

        e->writes_left--;
        assert_int_equal(c_put(e->c, "nested", "x", 0, &r), PK_OK);
    }
    if (e->cancel_at != 0 && e->n == e->cancel_at) {
        pk_coord_watch_cancel(e->self);
    }
}

/* ---- the file --------------------------------------------------------- */

static void test_file(void **state)
{
    fx *f = *state;
    char tmp[128];
    uint8_t *buf = NULL;
    size_t len = 0;
    struct stat st;

    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_ENOTFOUND);
    assert_int_equal(pk_coord_file_write(f->path, "hello", 5), PK_OK);
    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(buf, "hello", 5);
    free(buf);
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* Replaced whole, including by something shorter or empty. */
    assert_int_equal(pk_coord_file_write(f->path, "hi", 2), PK_OK);
    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_OK);
    assert_int_equal(len, 2);
    free(buf);
    assert_int_equal(pk_coord_file_write(f->path, NULL, 0), PK_OK);
    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_OK);
    assert_int_equal(len, 0);
    assert_non_null(buf);
    free(buf);
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
    assert_int_equal(access(tmp, F_OK), -1); /* no temporary left behind */
    /* A write that cannot happen reports PK_EIO and leaves the old file:
     * a directory where the temporary file goes fails even for root. */
    assert_int_equal(pk_coord_file_write(f->path, "old", 3), PK_OK);
    assert_int_equal(mkdir(tmp, 0700), 0);
    assert_int_equal(pk_coord_file_write(f->path, "new", 3), PK_EIO);
    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_OK);
    assert_memory_equal(buf, "old", 3);
    free(buf);
    assert_int_equal(rmdir(tmp), 0);
    /* A missing directory, a directory as the file, bad arguments. */
    snprintf(tmp, sizeof(tmp), "%s/nodir/state", f->dir);
    assert_int_equal(pk_coord_file_write(tmp, "x", 1), PK_EIO);
    assert_int_equal(pk_coord_file_read(f->dir, &buf, &len), PK_EIO);
    assert_int_equal(pk_coord_file_write("", "x", 1), PK_EINVAL);
    assert_int_equal(pk_coord_file_write(f->path, NULL, 1), PK_EINVAL);
    assert_int_equal(pk_coord_file_read(NULL, &buf, &len), PK_EINVAL);
    /* A relative path (directory ".") works too. */
    {
        char cwd[256];

        assert_non_null(getcwd(cwd, sizeof(cwd)));
        assert_int_equal(chdir(f->dir), 0);
        assert_int_equal(pk_coord_file_write("rel", "r", 1), PK_OK);
        assert_int_equal(chdir(cwd), 0);
        snprintf(tmp, sizeof(tmp), "%s/rel", f->dir);
        assert_int_equal(pk_coord_file_read(tmp, &buf, &len), PK_OK);
        assert_int_equal(len, 1);
        free(buf);
    }
}

/* ---- operations ------------------------------------------------------- */

static void test_ops(void **state)
{
    fx *f = *state;
    reply r;
    listing l;

    fx_open(f);
    /* Reads of an empty store; nothing is written until a mutation. */
    assert_int_equal(c_get(f->c, "a", &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, 0);
    assert_int_equal(access(f->path, F_OK), -1);
    c_range(f->c, "", &l);
    assert_int_equal(l.n, 0);
    /* Revisions, and the kv each mutation answers with. */
    assert_int_equal(c_put(f->c, "a", "1", 0, &r), PK_OK);
    assert_int_equal(r.rev, 1);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.key, "a");
    assert_string_equal(r.val, "1");
    assert_int_equal(r.kv.mod_revision, 1);
    assert_int_equal(access(f->path, F_OK), 0);
    assert_int_equal(c_put(f->c, "a", "2", 0, &r), PK_OK);
    assert_int_equal(r.kv.version, 2);
    assert_int_equal(r.kv.create_revision, 1);
    assert_int_equal(c_put(f->c, "b/1", "x", 0, &r), PK_OK);
    assert_int_equal(c_put(f->c, "b/2", "", 0, &r), PK_OK);
    assert_int_equal(r.rev, 4);
    assert_int_equal(c_get(f->c, "a", &r), PK_OK);
    assert_int_equal(r.rev, 4);
    assert_string_equal(r.val, "2");
    assert_int_equal(r.kv.mod_revision, 2);
    c_range(f->c, "b/", &l);
    assert_int_equal(l.rev, 4);
    assert_string_equal(l.text, "b/1=x/3/3/1,b/2=/4/4/1");
    c_range(f->c, "", &l);
    assert_int_equal(l.n, 3);
    /* Delete answers with what was there. */
    assert_int_equal(c_del(f->c, "b/1", &r), PK_OK);
    assert_int_equal(r.rev, 5);
    assert_string_equal(r.val, "x");
    assert_int_equal(c_del(f->c, "b/1", &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, 5);
    assert_int_equal(r.nkvs, 0);
    /* CAS: success, conflict returning the current kv, must-not-exist. */
    assert_int_equal(c_cas(f->c, "a", 2, "3", &r), PK_OK);
    assert_int_equal(r.rev, 6);
    assert_int_equal(r.kv.mod_revision, 6);
    assert_int_equal(c_cas(f->c, "a", 2, "4", &r), PK_ESTALE);
    assert_int_equal(r.rev, 6);
    assert_int_equal(r.nkvs, 1);
    assert_string_equal(r.val, "3");
    assert_int_equal(r.kv.mod_revision, 6);
    assert_int_equal(c_cas(f->c, "a", 0, "5", &r), PK_ESTALE);
    assert_string_equal(r.val, "3");
    assert_int_equal(c_cas(f->c, "new", 0, "n", &r), PK_OK);
    assert_int_equal(r.rev, 7);
    assert_int_equal(c_cas(f->c, "none", 3, "n", &r), PK_ESTALE);
    assert_int_equal(r.nkvs, 0);
    /* Bad arguments are refused up front: the callback is not called. */
    memset(&r, 0, sizeof(r));
    assert_int_equal(pk_coord_put(f->c, "", 0, "v", 1, 0, on_reply, &r),
                     PK_EINVAL);
    assert_int_equal(pk_coord_get(f->c, NULL, 1, on_reply, &r), PK_EINVAL);
    assert_int_equal(pk_coord_put(f->c, "k", 1, "v", 1, 0, NULL, &r),
                     PK_EINVAL);
    assert_int_equal(pk_coord_put(f->c, "k", 1, NULL, 1, 0, on_reply, &r),
                     PK_EINVAL);
    assert_int_equal(pk_coord_lease_grant(f->c, 0, on_reply, &r), PK_EINVAL);
    assert_int_equal(pk_coord_range(f->c, NULL, 3, on_reply, &r), PK_EINVAL);
    assert_int_equal(r.calls, 0);
    /* Putting with a lease that does not exist. */
    assert_int_equal(c_put(f->c, "k", "v", 77, &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, 7);
    assert_int_equal(pk_coord_embedded_tick(NULL), PK_EINVAL);
}

static void test_leases(void **state)
{
    fx *f = *state;
    events ev = {0};
    pk_coord_watch *w = NULL;
    uint64_t l1, l2;
    reply r;

    fx_open(f);
    assert_int_equal(pk_coord_embedded_next_deadline(f->c), UINT64_MAX);
    l1 = c_grant(f->c, 100);
    l2 = c_grant(f->c, 1000);
    assert_true(l2 > l1);
    assert_int_equal(pk_coord_embedded_next_deadline(f->c), f->now + 100);
    assert_int_equal(c_put(f->c, "node/1", "a", l1, &r), PK_OK);
    assert_int_equal(r.kv.lease, l1);
    assert_int_equal(c_put(f->c, "node/2", "b", l1, &r), PK_OK);
    assert_int_equal(c_put(f->c, "node/3", "c", l2, &r), PK_OK);
    assert_int_equal(
        pk_coord_watch_start(f->c, S("node/"), 0, on_event, &ev, &w), PK_OK);
    /* Keepalive extends by the full TTL from now. */
    f->now += 90;
    DONE(pk_coord_lease_keepalive(f->c, l1, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_OK);
    assert_int_equal(r.lease, l1);
    assert_int_equal(r.ttl, 100);
    f->now += 99; /* 189: due at 190 */
    assert_int_equal(pk_coord_embedded_tick(f->c), PK_OK);
    assert_int_equal(ev.n, 0);
    f->now += 1;
    /* Reads do not expire; the tick does, and watchers see it. */
    assert_int_equal(c_get(f->c, "node/1", &r), PK_OK);
    assert_int_equal(pk_coord_embedded_tick(f->c), PK_OK);
    assert_int_equal(ev.n, 2);
    assert_int_equal(ev.type[0], PK_COORD_DELETE);
    assert_string_equal(ev.key[0], "node/1");
    assert_string_equal(ev.key[1], "node/2");
    assert_int_equal(ev.rev[0], 4);
    assert_int_equal(ev.rev[1], 5);
    assert_int_equal(c_get(f->c, "node/1", &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, 5);
    DONE(pk_coord_lease_keepalive(f->c, l1, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_ENOTFOUND);
    /* A mutation expires due leases first, in the same write. */
    f->now += 1000;
    assert_int_equal(c_put(f->c, "other", "x", 0, &r), PK_OK);
    assert_int_equal(r.rev, 7);
    assert_int_equal(ev.n, 3);
    assert_string_equal(ev.key[2], "node/3");
    assert_int_equal(ev.rev[2], 6);
    /* Revoke deletes the attached keys. */
    l1 = c_grant(f->c, 10000);
    assert_int_equal(c_put(f->c, "node/4", "d", l1, &r), PK_OK);
    DONE(pk_coord_lease_revoke(f->c, l1, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_OK);
    assert_int_equal(r.rev, 9);
    assert_int_equal(ev.n, 5);
    assert_int_equal(ev.type[4], PK_COORD_DELETE);
    DONE(pk_coord_lease_revoke(f->c, l1, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_ENOTFOUND);
    pk_coord_watch_cancel(w);
}

/* ---- watches ---------------------------------------------------------- */

static void test_watch(void **state)
{
    fx *f = *state;
    events past = {0};
    events live = {0};
    events gone = {0};
    pk_coord_watch *wp = NULL;
    pk_coord_watch *wl = NULL;
    reply r;

    fx_open(f);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(c_put(f->c, i % 2 ? "a" : "b", "v", 0, &r), PK_OK);
    }
    assert_int_equal(
        pk_coord_watch_start(f->c, NULL, 0, 0, on_event, &live, &wl), PK_OK);
    /* From revision 2, writing on every even revision while history is
     * delivered: every revision arrives once, in order. */
    past.c = f->c;
    past.writes_left = 3;
    assert_int_equal(
        pk_coord_watch_start(f->c, NULL, 0, 2, on_event, &past, &wp), PK_OK);
    /* 2 -> 7, 4 -> 8, 6 -> 9 */
    assert_int_equal(past.n, 8);
    for (int i = 0; i < past.n; i++) {
        assert_int_equal(past.rev[i], 2 + i);
    }
    assert_int_equal(live.n, 3);
    for (int i = 0; i < live.n; i++) {
        assert_int_equal(live.rev[i], 7 + i);
    }
    /* A watch that cancels itself from inside its callback. */
    gone.self = NULL;
    gone.cancel_at = 2;
    assert_int_equal(
        pk_coord_watch_start(f->c, NULL, 0, 1, on_event, &gone, &gone.self),
        PK_OK);
    assert_int_equal(gone.n, 2);
    assert_int_equal(c_put(f->c, "a", "v", 0, &r), PK_OK);
    assert_int_equal(gone.n, 2);
    assert_int_equal(live.n, 4);
    assert_int_equal(past.n, 9);
    pk_coord_watch_cancel(wp);
    /* Watches left running are freed with the handle (teardown). */
}

static void test_watch_compacted(void **state)
{
    fx *f = *state;
    pk_coord_embedded_opts o = {fake_clock, f, 4, 0};
    events ev = {0};
    events ok = {0};
    pk_coord_watch *w = NULL;
    pk_coord_watch *w2 = NULL;
    listing l;
    reply r;

    assert_int_equal(pk_coord_embedded_open(f->path, &o, &f->c), PK_OK);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(c_put(f->c, "k", "v", 0, &r), PK_OK);
    }
    /* History keeps revisions 5..8: from 4 is compacted.  The answer comes
     * through the callback, and the handle still needs cancelling. */
    assert_int_equal(pk_coord_watch_start(f->c, NULL, 0, 4, on_event, &ev, &w),
                     PK_OK);
    assert_int_equal(ev.err, PK_ERANGE);
    assert_int_equal(ev.n, 0);
    assert_non_null(w);
    pk_coord_watch_cancel(w);
    /* The recovery: range, then watch from its revision + 1. */
    c_range(f->c, "", &l);
    assert_int_equal(l.rev, 8);
    assert_int_equal(
        pk_coord_watch_start(f->c, NULL, 0, l.rev + 1, on_event, &ok, &w2),
        PK_OK);
    assert_int_equal(c_put(f->c, "k", "v", 0, &r), PK_OK);
    assert_int_equal(ok.n, 1);
    assert_int_equal(ok.rev[0], 9);
    pk_coord_watch_cancel(w2);
}

/* ---- restarts and failures -------------------------------------------- */

static void test_restart(void **state)
{
    fx *f = *state;
    events ev = {0};
    pk_coord_watch *w = NULL;
    listing before, after;
    uint64_t l1, l2;
    reply r;

    fx_open(f);
    l1 = c_grant(f->c, 500);
    l2 = c_grant(f->c, 60000);
    assert_int_equal(c_put(f->c, "map", "m1", 0, &r), PK_OK);
    assert_int_equal(c_put(f->c, "map", "m2", 0, &r), PK_OK);
    assert_int_equal(c_put(f->c, "node/a", "x", l1, &r), PK_OK);
    assert_int_equal(c_put(f->c, "node/b", "y", l2, &r), PK_OK);
    assert_int_equal(c_put(f->c, "tmp", "t", 0, &r), PK_OK);
    assert_int_equal(c_del(f->c, "tmp", &r), PK_OK);
    c_range(f->c, "", &before);
    assert_int_equal(before.rev, 6);
    /* Down for 400 ms: l1 had 100 ms left, and gets its 500 again. */
    f->now += 400;
    restart(f, 0);
    c_range(f->c, "", &after);
    assert_int_equal(after.rev, 6);
    assert_string_equal(after.text, before.text);
    assert_int_equal(pk_coord_embedded_next_deadline(f->c), f->now + 500);
    f->now += 499;
    assert_int_equal(pk_coord_embedded_tick(f->c), PK_OK);
    assert_int_equal(c_get(f->c, "node/a", &r), PK_OK);
    assert_int_equal(r.kv.lease, l1);
    f->now += 1;
    assert_int_equal(pk_coord_embedded_tick(f->c), PK_OK);
    assert_int_equal(c_get(f->c, "node/a", &r), PK_ENOTFOUND);
    assert_int_equal(r.rev, 7);
    /* The other lease survived and can be renewed. */
    DONE(pk_coord_lease_keepalive(f->c, l2, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_OK);
    /* Ids are not reused after a restart. */
    assert_true(c_grant(f->c, 10) > l2);
    /* History starts empty: from the restored revision is compacted, the
     * next one is fine. */
    restart(f, 10);
    assert_int_equal(pk_coord_watch_start(f->c, NULL, 0, 7, on_event, &ev, &w),
                     PK_OK);
    assert_int_equal(ev.err, PK_ERANGE);
    pk_coord_watch_cancel(w);
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(pk_coord_watch_start(f->c, NULL, 0, 8, on_event, &ev, &w),
                     PK_OK);
    assert_int_equal(c_put(f->c, "map", "m3", 0, &r), PK_OK);
    assert_int_equal(r.rev, 8);
    assert_int_equal(r.kv.version, 3);
    assert_int_equal(ev.n, 1);
    assert_int_equal(ev.rev[0], 8);
    pk_coord_watch_cancel(w);
}

static void test_write_failure(void **state)
{
    fx *f = *state;
    events ev = {0};
    pk_coord_watch *w = NULL;
    char tmp[128];
    listing l;
    uint64_t lease;
    reply r;

    fx_open(f);
    lease = c_grant(f->c, 100);
    assert_int_equal(c_put(f->c, "a", "1", lease, &r), PK_OK);
    assert_int_equal(c_put(f->c, "b", "1", 0, &r), PK_OK);
    assert_int_equal(pk_coord_watch_start(f->c, NULL, 0, 0, on_event, &ev, &w),
                     PK_OK);
    /* From now on every write fails. */
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
    assert_int_equal(mkdir(tmp, 0700), 0);
    assert_int_equal(c_put(f->c, "b", "2", 0, &r), PK_EIO);
    assert_int_equal(r.rev, 2);
    assert_int_equal(r.nkvs, 0);
    assert_int_equal(c_del(f->c, "b", &r), PK_EIO);
    assert_int_equal(c_cas(f->c, "b", 2, "3", &r), PK_EIO);
    DONE(pk_coord_lease_grant(f->c, 100, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_EIO);
    DONE(pk_coord_lease_revoke(f->c, lease, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_EIO);
    /* Requests that change nothing on disk still work. */
    assert_int_equal(c_cas(f->c, "b", 1, "3", &r), PK_ESTALE);
    DONE(pk_coord_lease_keepalive(f->c, lease, on_reply, &r), &r);
    assert_int_equal(r.rc, PK_OK);
    /* Expiry that cannot be written does not happen either, nor does a
     * request that would have to write it first. */
    f->now += 100;
    assert_int_equal(pk_coord_embedded_tick(f->c), PK_EIO);
    assert_int_equal(c_cas(f->c, "b", 1, "3", &r), PK_EIO);
    /* Nothing was acknowledged, seen by a watcher, or left in memory;
     * reads keep being served. */
    assert_int_equal(ev.n, 0);
    assert_int_equal(c_get(f->c, "b", &r), PK_OK);
    assert_string_equal(r.val, "1");
    assert_int_equal(r.rev, 2);
    c_range(f->c, "", &l);
    assert_string_equal(l.text, "a=1/1/1/1,b=1/2/2/1");
    /* Once the disk is back, the same requests work, with the revisions
     * the failed ones never took. */
    assert_int_equal(rmdir(tmp), 0);
    assert_int_equal(c_put(f->c, "b", "2", 0, &r), PK_OK);
    assert_int_equal(ev.n, 2); /* expiry of "a" (3), then the put (4) */
    assert_int_equal(ev.rev[0], 3);
    assert_string_equal(ev.key[0], "a");
    assert_int_equal(ev.rev[1], 4);
    assert_int_equal(r.rev, 4);
    pk_coord_watch_cancel(w);
    restart(f, 0);
    c_range(f->c, "", &l);
    assert_int_equal(l.rev, 4);
    assert_string_equal(l.text, "b=2/2/4/2");
}

static void test_corrupt_file(void **state)
{
    fx *f = *state;
    pk_coord *c = (pk_coord *)&c;
    uint8_t *buf = NULL;
    size_t len;
    reply r;

    fx_open(f);
    assert_int_equal(c_put(f->c, "a", "1", 0, &r), PK_OK);
    pk_coord_free(f->c);
    f->c = NULL;
    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_OK);
    buf[len / 2] ^= 0x10;
    assert_int_equal(pk_coord_file_write(f->path, buf, len), PK_OK);
    assert_int_equal(pk_coord_embedded_open(f->path, NULL, &c), PK_ECHECKSUM);
    assert_ptr_equal(c, (pk_coord *)&c);
    assert_int_equal(pk_coord_file_write(f->path, "junk", 4), PK_OK);
    assert_int_equal(pk_coord_embedded_open(f->path, NULL, &c), PK_ECORRUPT);
    assert_int_equal(pk_coord_embedded_open("", NULL, &c), PK_EINVAL);
    /* The bad file was left alone for an operator to look at. */
    free(buf);
    assert_int_equal(pk_coord_file_read(f->path, &buf, &len), PK_OK);
    assert_int_equal(len, 4);
    free(buf);
}

/* Random operations, restarting every so often: after each restart the
 * store reads back exactly as before it. */
static void test_random_restarts(void **state)
{
    fx *f = *state;
    uint64_t seed = 12345;
    uint64_t leases[4] = {0};
    listing before, after;
    reply r;

    fx_open(f);
    for (int i = 0; i < 4; i++) {
        leases[i] = c_grant(f->c, 50 + 50 * (uint64_t)i);
    }
    for (int step = 0; step < 120; step++) {
        char key[8];
        uint64_t x;

        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x = seed >> 33;
        snprintf(key, sizeof(key), "k%u", (unsigned)(x % 7));
        f->now += x % 13;
        switch ((x >> 8) % 6) {
        case 0:
        case 1:
            c_put(f->c, key, "v", 0, &r);
            break;
        case 2:
            c_put(f->c, key, "l", leases[(x >> 12) % 4], &r);
            break;
        case 3:
            c_del(f->c, key, &r);
            break;
        case 4:
            c_get(f->c, key, &r);
            c_cas(f->c, key, r.rc == PK_OK ? r.kv.mod_revision : 0, "c", &r);
            break;
        default:
            DONE(pk_coord_lease_keepalive(f->c, leases[(x >> 12) % 4], on_reply,
                                          &r),
                 &r);
            if (r.rc == PK_ENOTFOUND) {
                leases[(x >> 12) % 4] = c_grant(f->c, 30 + x % 100);
            }
            break;
        }
        assert_true(r.rc == PK_OK || r.rc == PK_ENOTFOUND || r.rc == PK_ESTALE);
        if (step % 15 == 14) {
            c_range(f->c, "", &before);
            restart(f, 0);
            c_range(f->c, "", &after);
            assert_int_equal(after.rev, before.rev);
            assert_string_equal(after.text, before.text);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_compacted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_restarts, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

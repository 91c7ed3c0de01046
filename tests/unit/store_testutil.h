/*
 * Helpers shared by the store's cmocka tests: a store in a fresh mkdtemp
 * directory, removed again afterwards, and short forms for the calls every
 * test makes.  Header-only so that each test binary stays one file.
 */
#ifndef PK_TESTS_STORE_TESTUTIL_H
#define PK_TESTS_STORE_TESTUTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "store/pk_slice.h"
#include "store/pk_store.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

#define S(s) (s), strlen(s)

typedef struct tstore {
    char dir[64];
    pk_store *s;
} tstore;

static inline int rm_entry(const char *path, const struct stat *sb, int flag,
                           struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void rm_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Opens a store in a new temporary directory (small map: tests are tiny). */
static inline tstore *tstore_new(void)
{
    pk_store_opts o = {64ull << 20, PK_FSYNC_NO};
    tstore *ts = calloc(1, sizeof(*ts));

    if (ts == NULL) {
        return NULL;
    }
    snprintf(ts->dir, sizeof(ts->dir), "/tmp/pkstore-XXXXXX");
    if (mkdtemp(ts->dir) == NULL || pk_store_open(ts->dir, &o, &ts->s)) {
        free(ts);
        return NULL;
    }
    return ts;
}

static inline int tstore_reopen(tstore *ts)
{
    pk_store_opts o = {64ull << 20, PK_FSYNC_NO};

    pk_store_close(ts->s);
    ts->s = NULL;
    return pk_store_open(ts->dir, &o, &ts->s);
}

static inline void tstore_free(tstore *ts)
{
    if (ts == NULL) {
        return;
    }
    pk_store_close(ts->s);
    rm_tree(ts->dir);
    free(ts);
}

static inline pk_txn *wtxn(pk_store *s)
{
    pk_txn *t = NULL;

    return pk_txn_begin(s, 0, &t) == 0 ? t : NULL;
}

/* Collects range results as "member:score " into a buffer. */
typedef struct collect {
    char buf[8192];
    size_t len;
    int n;
} collect;

static inline int collect_z(void *ctx, pk_slice m, double score)
{
    collect *c = ctx;

    c->len +=
        (size_t)snprintf(c->buf + c->len, sizeof(c->buf) - c->len, "%.*s:%g ",
                         (int)m.len, (const char *)m.ptr, score);
    c->n++;
    return 0;
}

/* A xorshift generator: tests repeat exactly. */
static uint64_t trnd_state = 88172645463325252ull;

static inline uint32_t trnd(void)
{
    trnd_state ^= trnd_state << 13;
    trnd_state ^= trnd_state >> 7;
    trnd_state ^= trnd_state << 17;
    return (uint32_t)(trnd_state >> 11);
}

/* Bytes gathered by an export callback (tbuf_cb); p is owned. */
typedef struct tbuf {
    uint8_t *p;
    size_t len;
} tbuf;

static inline int tbuf_cb(void *ctx, const void *chunk, size_t len)
{
    tbuf *b = ctx;
    uint8_t *p = realloc(b->p, b->len + len);

    if (p == NULL) {
        return PK_ENOMEM;
    }
    memcpy(p + b->len, chunk, len);
    b->p = p;
    b->len += len;
    return 0;
}

/* A pk_store_log_read callback that ships records into t: applied, or
 * deferred (pk_store_log_defer) when defer is set; n counts them. */
typedef struct tship {
    pk_txn *t;
    uint32_t part;
    int n;
    int defer;
} tship;

static inline int tship_cb(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    tship *sh = ctx;

    sh->n++;
    return sh->defer ? pk_store_log_defer(sh->t, sh->part, seq, rec, len)
                     : pk_store_log_apply(sh->t, sh->part, seq, rec, len);
}

/*
 * 0 when partition part is byte-identical on both stores (snapshot
 * streams) with the same keys, bytes and last log seq; else 1 (streams
 * differ), 2 (stats differ) or an export's error.
 */
static inline int tstore_same(pk_store *a, pk_store *b, uint32_t part)
{
    tbuf x = {NULL, 0}, y = {NULL, 0};
    pk_part_stats sa, sb;
    pk_txn *ta = NULL, *tb = NULL;
    int rc = pk_txn_begin(a, 1, &ta);

    rc = rc ? rc : pk_txn_begin(b, 1, &tb);
    rc = rc ? rc : pk_store_part_export(ta, part, tbuf_cb, &x);
    rc = rc ? rc : pk_store_part_export(tb, part, tbuf_cb, &y);
    rc = rc ? rc : pk_store_part_stats(ta, part, &sa);
    rc = rc ? rc : pk_store_part_stats(tb, part, &sb);
    if (rc == 0 && (x.len != y.len || memcmp(x.p, y.p, x.len) != 0)) {
        rc = 1;
    } else if (rc == 0 && (sa.keys != sb.keys || sa.bytes != sb.bytes ||
                           sa.log_last != sb.log_last)) {
        rc = 2;
    }
    pk_txn_abort(ta);
    pk_txn_abort(tb);
    free(x.p);
    free(y.p);
    return rc;
}

/* Two stores, for tests that ship one's log to the other (cmocka
 * setup/teardown). */
typedef struct two {
    tstore *a, *b;
} two;

static inline void two_free(two *w)
{
    if (w != NULL) {
        tstore_free(w->a);
        tstore_free(w->b);
        free(w);
    }
}

static inline int two_setup(void **state)
{
    two *w = calloc(1, sizeof(*w));

    if (w == NULL || (w->a = tstore_new()) == NULL ||
        (w->b = tstore_new()) == NULL) {
        two_free(w);
        return -1;
    }
    *state = w;
    return 0;
}

static inline int two_teardown(void **state)
{
    two_free(*state);
    return 0;
}

static inline pk_txn *rtxn(pk_store *s)
{
    pk_txn *t = NULL;

    return pk_txn_begin(s, 1, &t) == 0 ? t : NULL;
}

#endif

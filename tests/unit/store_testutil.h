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
#include "store/pk_store.h"

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

static inline pk_txn *rtxn(pk_store *s)
{
    pk_txn *t = NULL;

    return pk_txn_begin(s, 1, &t) == 0 ? t : NULL;
}

#endif

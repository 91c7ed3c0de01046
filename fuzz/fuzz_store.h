/*
 * The store shared by the libFuzzer targets that run store operations: one
 * LMDB environment in a temporary directory made on first use and removed
 * at exit.  Inputs run in write transactions that they abort, so what the
 * environment holds is what fuzz_store_get's caller committed once.
 * Header-only, so that each target still builds from its one .c file.
 */
#ifndef PK_FUZZ_FUZZ_STORE_H
#define PK_FUZZ_FUZZ_STORE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "store/pk_store.h"

static pk_store *fuzz_store;
static char fuzz_store_dir[64];

static inline int fuzz_rm_entry(const char *path, const struct stat *sb,
                                int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void fuzz_store_cleanup(void)
{
    pk_store_close(fuzz_store);
    fuzz_store = NULL;
    nftw(fuzz_store_dir, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The process's store; *fresh = 1 on the call that opened it (the caller
 * then commits its fixture), else 0.
 */
static inline pk_store *fuzz_store_get(int *fresh)
{
    pk_store_opts o = {256ull << 20, PK_FSYNC_NO};

    *fresh = fuzz_store == NULL;
    if (fuzz_store == NULL) {
        snprintf(fuzz_store_dir, sizeof(fuzz_store_dir), "/tmp/pkfuzz-XXXXXX");
        CHECK(mkdtemp(fuzz_store_dir) != NULL);
        CHECK(pk_store_open(fuzz_store_dir, &o, &fuzz_store) == 0);
        atexit(fuzz_store_cleanup);
    }
    return fuzz_store;
}

#endif

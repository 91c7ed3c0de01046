/*
 * pk_store: the LMDB environment and transactions.
 *
 * pk_store_open creates the five named DBs (pk_store.h) and checks the
 * format version in "info"; a transaction wraps an MDB_txn with the state
 * the record layer needs (pk_store_int.h) and a sticky error.  The rule
 * for stickiness lives in pk__fail: any negative code reported inside a
 * write transaction by code that may already have written fails it, so a
 * half-applied command can never be committed.  pk_store_open brings the
 * stats up to the journal (after a crash, or a close between checkpoints)
 * and a commit may be a checkpoint (pk_store_stcache.c); either way the
 * stats reach the disk in the same LMDB commit as the data they count.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "store/pk_store_int.h"
#include "store/pk_store_log.h"

/* 2: one journal for all partitions' logs; packed, checkpointed stats.
 * 3: keys longer than about 230 bytes stored under a digest prefix with
 * the full key in META (pk_keyenc.h); a version 2 store could hold keys
 * of 231..497 bytes in the short form, which version 3 no longer finds;
 * also fields and members of 240 bytes or more under a head and digest
 * sub-key with the full bytes in the record's value (pk_keyenc.h), which
 * version 2 refused (no version 2 store holds one to misread). */
#define PK__FORMAT 3u

static_assert(PK_PARTITIONS_MAX % PK__CTR_PAGE == 0, "counter pages");

const char *pk_store_strstatus(int status)
{
    switch (status) {
    case PK_STORE_WRONGTYPE:
        return "WRONGTYPE Operation against a key holding the wrong kind "
               "of value";
    case PK_STORE_NOTINT:
        return "ERR value is not an integer or out of range";
    case PK_STORE_HASH_NOTINT:
        return "ERR hash value is not an integer";
    case PK_STORE_OVERFLOW:
        return "ERR increment or decrement would overflow";
    case PK_STORE_NAN:
        return "ERR resulting score is not a number (NaN)";
    case PK_STORE_HASH_NOTFLOAT:
        return "ERR hash value is not a float";
    case PK_STORE_INCR_NANINF:
    case PK_STORE_TOOBIG:
        return "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    case PK_STORE_NOTFLOAT:
        return "ERR value is not a valid float";
    case PK_STORE_NANINF:
        return "ERR increment would produce NaN or Infinity";
    }
    return NULL;
}

int pk__err(int rc)
{
    switch (rc) {
    case 0:
        return 0;
    case MDB_NOTFOUND:
        return PK_ENOTFOUND;
    case ENOMEM:
        return PK_ENOMEM;
    case EINVAL:
    case MDB_BAD_TXN:
    case MDB_BAD_VALSIZE:
    case MDB_BAD_DBI:
        return PK_EINVAL;
    case MDB_MAP_FULL:
    case MDB_TXN_FULL:
    case MDB_PAGE_FULL:
    case MDB_CURSOR_FULL:
    case MDB_DBS_FULL:
    case MDB_READERS_FULL:
    case ENOSPC:
    case EDQUOT:
        return PK_EFULL;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_INCOMPATIBLE:
        return PK_ECORRUPT;
    case MDB_VERSION_MISMATCH:
        return PK_EVERSION;
    case MDB_MAP_RESIZED:
        return PK_EBUSY;
    }
    return PK_EIO;
}

int pk__fail(pk_txn *t, int rc)
{
    if (rc < 0 && !t->rdonly && t->err == 0) {
        t->err = rc;
    }
    return rc;
}

int pk__buf_reserve(pk__buf *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 256;
    uint8_t *p;

    if (extra > SIZE_MAX / 2 - b->len) {
        return PK_ENOMEM;
    }
    if (b->len + extra <= b->cap) {
        return 0;
    }
    while (cap < b->len + extra) {
        cap *= 2;
    }
    p = realloc(b->p, cap);
    if (p == NULL) {
        return PK_ENOMEM;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

uint64_t pk__rand_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

pk__ctr *pk__ctr_get(pk_store *s, uint32_t part)
{
    pk__ctr **page;

    if (part >= PK_PARTITIONS_MAX) {
        return NULL;
    }
    page = &s->ctr[part / PK__CTR_PAGE];
    if (*page == NULL) {
        *page = calloc(PK__CTR_PAGE, sizeof(**page));
        if (*page == NULL) {
            return NULL; /* counting is best effort */
        }
    }
    return &(*page)[part % PK__CTR_PAGE];
}

static int open_dbs(pk_store *s)
{
    MDB_txn *txn;
    MDB_val k = {6, "format"}, v;
    uint8_t ver[4];
    int rc;

    rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc != 0) {
        return pk__err(rc);
    }
    if ((rc = mdb_dbi_open(txn, "data", MDB_CREATE, &s->data)) != 0 ||
        (rc = mdb_dbi_open(txn, "log", MDB_CREATE, &s->log)) != 0 ||
        (rc = mdb_dbi_open(txn, "expiry", MDB_CREATE, &s->expiry)) != 0 ||
        (rc = mdb_dbi_open(txn, "stats", MDB_CREATE, &s->stats)) != 0 ||
        (rc = mdb_dbi_open(txn, "info", MDB_CREATE, &s->info)) != 0) {
        goto fail;
    }
    rc = mdb_get(txn, s->info, &k, &v);
    if (rc == MDB_NOTFOUND) {
        pk_be32_put(ver, PK__FORMAT);
        v.mv_size = sizeof(ver);
        v.mv_data = ver;
        rc = mdb_put(txn, s->info, &k, &v, 0);
    } else if (rc == 0 &&
               (v.mv_size != 4 || pk_be32_get(v.mv_data) != PK__FORMAT)) {
        mdb_txn_abort(txn);
        return PK_EVERSION;
    }
    if (rc != 0) {
        goto fail;
    }
    return pk__err(mdb_txn_commit(txn));
fail:
    mdb_txn_abort(txn);
    return pk__err(rc);
}

/*
 * Takes dir's lock file, partkv.lock, for as long as the store is open.
 * LMDB lets several processes open one environment; two nodes on one
 * directory (one restarted by hand while `cluster up` restarts it too)
 * would each take the other's records for their own.  A process killed a
 * moment ago holds the lock until its last thread is gone (one may be in
 * the middle of faulting pages in), so a held lock is tried again for up
 * to LOCK_WAIT_MS.  PK_EBUSY when another open store holds it, PK_EIO if
 * it cannot be made.
 */
#define LOCK_WAIT_MS 2000

static int dir_lock(const char *dir, int *out)
{
    char path[PATH_MAX];
    int fd, waited = 0;

    if (snprintf(path, sizeof(path), "%s/partkv.lock", dir) >=
        (int)sizeof(path)) {
        return PK_EINVAL;
    }
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        return errno == ENOMEM ? PK_ENOMEM : PK_EIO;
    }
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;

        if (busy && waited < LOCK_WAIT_MS) {
            nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
            waited += 20;
            continue;
        }
        close(fd);
        return busy ? PK_EBUSY : PK_EIO;
    }
    *out = fd;
    return 0;
}

int pk_store_open(const char *dir, const pk_store_opts *opts, pk_store **out)
{
    pk_store_opts o = {0, PK_FSYNC_ALWAYS};
    /* WRITEMAP: commits touch the map directly instead of pwrite()ing
     * every dirty page -- the difference between ~25k and far more group
     * commits per second. */
    unsigned flags = MDB_NOTLS | MDB_WRITEMAP;
    pk_store *s;
    int rc, dead;

    if (opts != NULL) {
        o = *opts;
    }
    if (dir == NULL || o.fsync > PK_FSYNC_NO) {
        return PK_EINVAL;
    }
    if (o.fsync == PK_FSYNC_EVERYSEC) {
        flags |= MDB_NOSYNC;
    } else if (o.fsync == PK_FSYNC_NO) {
        flags |= MDB_NOSYNC | MDB_NOMETASYNC;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        return errno == ENOMEM ? PK_ENOMEM : PK_EIO;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return PK_ENOMEM;
    }
    if ((rc = dir_lock(dir, &s->lock_fd)) != 0) {
        free(s);
        return rc;
    }
    rc = mdb_env_create(&s->env);
    if (rc != 0) {
        close(s->lock_fd);
        free(s);
        return pk__err(rc);
    }
    if ((rc = mdb_env_set_mapsize(
             s->env, o.map_size ? o.map_size : PK_STORE_MAP_SIZE_DEFAULT)) !=
            0 ||
        (rc = mdb_env_set_maxdbs(s->env, 5)) != 0 ||
        (rc = mdb_env_open(s->env, dir, flags, 0600)) != 0) {
        rc = pk__err(rc);
        goto fail;
    }
    mdb_reader_check(s->env, &dead); /* slots left by a crashed process */
    s->log_keep = PK_STORE_LOG_KEEP_DEFAULT(
        o.map_size ? o.map_size : PK_STORE_MAP_SIZE_DEFAULT);
    if ((rc = open_dbs(s)) != 0 || (rc = pk__stat_recover(s)) != 0 ||
        (rc = pk__settle_open(s)) != 0) {
        goto fail;
    }
    *out = s;
    return 0;
fail:
    mdb_env_close(s->env);
    close(s->lock_fd);
    free(s);
    return rc;
}

void pk_store_close(pk_store *s)
{
    if (s == NULL) {
        return;
    }
    mdb_env_close(s->env);
    close(s->lock_fd); /* after LMDB is closed: the lock guards it */
    pk__stat_free(s);
    for (size_t i = 0; i < PK__WCACHE_WAYS; i++) {
        free(s->wcache[i].pos);
    }
    pk__sbatch_free(s->sb);
    pk__rank_clear(s);
    for (size_t i = 0; i < PK_PARTITIONS_MAX / PK__CTR_PAGE; i++) {
        free(s->ctr[i]);
    }
    free(s);
}

int pk_store_sync(pk_store *s)
{
    return mdb_env_sync(s->env, 1) == 0 ? 0 : PK_EIO;
}

void pk_store_writeback(pk_store *s)
{
    mdb_filehandle_t fd;

    if (mdb_env_get_fd(s->env, &fd) == 0)
        (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The address LMDB mapped the data file at (mdb_env_info tells it only
 * for MDB_FIXEDMAP): the mapping of the file's inode that is mapsize long,
 * from /proc/self/maps.  NULL when none is found. */
static char *map_addr(pk_store *s, size_t mapsize)
{
    mdb_filehandle_t fd;
    struct stat st;
    unsigned long lo, hi, ino;
    char line[512];
    char *addr = NULL;
    FILE *f;

    if (mdb_env_get_fd(s->env, &fd) != 0 || fstat(fd, &st) != 0 ||
        (f = fopen("/proc/self/maps", "r")) == NULL)
        return NULL;
    while (addr == NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &lo, &hi, &ino) == 3 &&
            ino == (unsigned long)st.st_ino && hi - lo == mapsize)
            addr = (char *)lo;
    fclose(f);
    return addr;
}

int64_t pk_store_prefault(pk_store *s, size_t ahead)
{
    const size_t chunk = 256 << 10; /* a SIGKILL waits for one call */
    MDB_envinfo ei;
    MDB_stat st;
    uint64_t used, end, at;
    int64_t done = 0;

    if (s->pf_off)
        return PK_EINVAL;
    if (mdb_env_info(s->env, &ei) != 0 || mdb_env_stat(s->env, &st) != 0)
        return 0;
    if (s->pf_map == NULL && (s->pf_map = map_addr(s, ei.me_mapsize)) == NULL) {
        s->pf_off = 1;
        return PK_EINVAL;
    }
    /* The committed last page; a transaction under way allocates past
     * it, which is why this runs ahead by more than one commit takes. */
    used = ((uint64_t)ei.me_last_pgno + 1) * st.ms_psize;
    end = used + ahead < ei.me_mapsize ? used + ahead : ei.me_mapsize;
    at = s->pf_upto > used ? s->pf_upto : used;
    for (; at < end; at += chunk) {
        size_t n = end - at < chunk ? end - at : chunk;
        if (madvise(s->pf_map + at, n, MADV_POPULATE_WRITE) != 0) {
            if (errno == EINVAL) {
                s->pf_off = 1;
                return PK_EINVAL;
            }
            break; /* ENOMEM, EFAULT: again next time */
        }
        s->pf_upto = at + n;
        done += (int64_t)n;
    }
    return done;
}

int pk_txn_begin(pk_store *s, int rdonly, pk_txn **out)
{
    pk_txn *t;
    int rc;

    if (!rdonly && s->wtxn_open) {
        return PK_EBUSY;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return PK_ENOMEM;
    }
    rc = mdb_txn_begin(s->env, NULL, rdonly ? MDB_RDONLY : 0, &t->txn);
    if (rc != 0) {
        free(t);
        return pk__err(rc);
    }
    t->s = s;
    t->rdonly = rdonly != 0;
    s->wtxn_open |= !rdonly;
    *out = t;
    return 0;
}

/* *c, opened on dbi on first use. */
static int cursor_slot(pk_txn *t, MDB_dbi dbi, MDB_cursor **c, MDB_cursor **out)
{
    int rc;

    if (*c == NULL && (rc = mdb_cursor_open(t->txn, dbi, c)) != 0) {
        *c = NULL;
        return pk__fail(t, pk__err(rc));
    }
    *out = *c;
    return 0;
}

int pk__cursor(pk_txn *t, MDB_dbi dbi, MDB_cursor **out)
{
    assert(dbi == t->s->data || dbi == t->s->log);
    return cursor_slot(t, dbi, dbi == t->s->data ? &t->dc : &t->lc, out);
}

int pk__meta_cursor(pk_txn *t, MDB_cursor **out)
{
    return cursor_slot(t, t->s->data, &t->mc, out);
}

/* Closes t's cursors; must run before its MDB_txn ends. */
static void cursors_close(pk_txn *t)
{
    if (t->dc != NULL) {
        mdb_cursor_close(t->dc);
    }
    if (t->lc != NULL) {
        mdb_cursor_close(t->lc);
    }
    if (t->mc != NULL) {
        mdb_cursor_close(t->mc);
    }
    t->dc = t->lc = t->mc = NULL;
}

static void txn_free(pk_txn *t, int committed)
{
    if (!t->rdonly) {
        if (!committed && t->ins_del > 0) {
            pk__rank_clear(t->s); /* they count the writes undone */
        }
        pk__settle_end(t, committed);
        pk__stat_end(t, committed);
        t->s->wtxn_open = 0;
    }
    free(t->undo);
    free(t->ovl);
    free(t->rgrp);
    free(t->log.p);
    free(t->grp_log.p);
    free(t->val.p);
    free(t->scratch.p);
    free(t->subv.p);
    free(t);
}

int pk_txn_commit(pk_txn *t)
{
    int rc = t->err;

    if (rc == 0 && t->grp_open) {
        rc = pk_txn_group_end(t);
    }
    rc = rc ? rc : pk__stat_commit(t);
    cursors_close(t);
    if (rc != 0) {
        mdb_txn_abort(t->txn);
    } else {
        rc = pk__err(mdb_txn_commit(t->txn));
    }
    txn_free(t, rc == 0);
    return rc;
}

void pk_txn_abort(pk_txn *t)
{
    if (t == NULL) {
        return;
    }
    cursors_close(t);
    mdb_txn_abort(t->txn);
    txn_free(t, 0);
}

int pk_txn_error(const pk_txn *t)
{
    return t->err;
}

/* pk_repl_state: what replication keeps across a restart. */
#include "server/pk_repl_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pk_err.h"

#define STATE_MAGIC 0x504b5253u /* "PKRS" */

/* repl.leases is saved a second ahead of the leases it covers. */
#define LEASES_HOLD_MAX (PK_REPL_READ_LEASE_MS + 1000)

uint32_t pk__crc32c(const void *data, size_t len); /* pk_pmap_codec.c */

static void state_path(pk_repl *rp, char *p, size_t n)
{
    snprintf(p, n, "%s/repl.state", rp->srv->cfg.dir);
}

/*
 * repl.running: there while the node runs, removed when it stops cleanly
 * (every record it sent was committed first).  Found at start, it says
 * the last run ended otherwise: records sent before a commit that never
 * came may be on followers (pk_repl_precommit).
 */
static void running_path(pk_repl *rp, char *p, size_t n)
{
    snprintf(p, n, "%s/repl.running", rp->srv->cfg.dir);
}

int pk__repl_running_mark(pk_repl *rp)
{
    char path[4096];
    int fd, was;

    running_path(rp, path, sizeof(path));
    was = access(path, F_OK) == 0;
    if ((fd = open(path, O_WRONLY | O_CREAT, 0644)) >= 0)
        close(fd);
    return was;
}

void pk__repl_running_clear(pk_repl *rp)
{
    char path[4096];

    running_path(rp, path, sizeof(path));
    unlink(path);
}

/*
 * repl.leases: the wall-clock ms until which read leases this node granted
 * may run.  Written before a lease that runs later is granted (no fsync:
 * it must survive the process, and a machine takes longer to boot than a
 * lease lasts), read at start: until then the node acknowledges nothing,
 * for it forgot which followers hold leases.  Saved a second ahead, so
 * that renewals write it about once a second.
 */
static void leases_path(pk_repl *rp, char *p, size_t n)
{
    snprintf(p, n, "%s/repl.leases", rp->srv->cfg.dir);
}

int pk__repl_leases_save(pk_repl *rp, uint64_t until_wall)
{
    char path[4096], tmp[4100], text[32];
    int fd, n, ok;

    leases_path(rp, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)until_wall);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
        return -1;
    ok = write(fd, text, (size_t)n) == n;
    /* Renamed: a failed write leaves the previous end in place. */
    return close(fd) == 0 && ok && rename(tmp, path) == 0 ? 0 : -1;
}

void pk__repl_leases_load(pk_repl *rp)
{
    char path[4096], text[32] = "";
    uint64_t wall = pk_srv_wall_ms(), until;
    FILE *f;

    leases_path(rp, path, sizeof(path));
    if ((f = fopen(path, "r")) == NULL)
        return;
    if (fgets(text, sizeof(text), f) &&
        sscanf(text, "%llu", (unsigned long long *)&until) == 1 && until > wall)
        /* At most what a save can say: a clock set back meanwhile must
         * not hold the node for long. */
        rp->hold_ms =
            rp_now() +
            (until - wall < LEASES_HOLD_MAX ? until - wall : LEASES_HOLD_MAX);
    fclose(f);
}

/*
 * The state file: magic, np, then per partition (follow epoch, fence
 * epoch), then the number of node slots and each node's fence map epoch,
 * then a CRC32C of everything before it.  Native byte order: it never
 * leaves the node.
 */
static size_t state_size(uint32_t np, uint32_t nn)
{
    return 8 + (size_t)np * 16 + 4 + (size_t)nn * 8 + 4;
}

/* Writes the state: tmp, fsync, rename, directory fsync.  0 or -1. */
int pk__repl_state_save(pk_repl *rp)
{
    char path[4096], tmp[4200];
    size_t n = state_size(rp->np, rp->npromise);
    uint8_t *b = malloc(n), *p = b;
    uint32_t crc;
    int fd, ok;

    if (b == NULL)
        return -1;
    memcpy(p, &(uint32_t){STATE_MAGIC}, 4);
    memcpy(p + 4, &rp->np, 4);
    p += 8;
    for (uint32_t i = 0; i < rp->np; i++, p += 16) {
        memcpy(p, &rp->follow_epoch[i], 8);
        memcpy(p + 8, &rp->fence_epoch[i], 8);
    }
    memcpy(p, &rp->npromise, 4);
    p += 4;
    if (rp->npromise)
        memcpy(p, rp->fence_map, (size_t)rp->npromise * 8);
    p += (size_t)rp->npromise * 8;
    crc = pk__crc32c(b, n - 4);
    memcpy(p, &crc, 4);
    state_path(rp, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ok = fd >= 0 && write(fd, b, n) == (ssize_t)n && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    ok = ok && rename(tmp, path) == 0;
    free(b);
    if (ok && (fd = open(rp->srv->cfg.dir, O_RDONLY)) >= 0) {
        ok = fsync(fd) == 0;
        close(fd);
    }
    if (!ok) {
        fprintf(stderr, "partkv: cannot write %s\n", path);
        return -1;
    }
    rp->state_dirty = 0;
    return 0;
}

/* Loads the state file if it is whole and of this np; else everything is
 * zero (a new node). */
void pk__repl_state_load(pk_repl *rp)
{
    char path[4096];
    uint8_t *b = NULL;
    uint32_t magic, np, nn, crc;
    long len;
    FILE *f;

    memset(rp->follow_epoch, 0, rp->np * sizeof(uint64_t));
    memset(rp->fence_epoch, 0, rp->np * sizeof(uint64_t));
    if (rp->npromise)
        memset(rp->fence_map, 0, rp->npromise * sizeof(uint64_t));
    state_path(rp, path, sizeof(path));
    if ((f = fopen(path, "rb")) == NULL)
        return;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 16 &&
        fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)len)) != NULL &&
        fread(b, 1, (size_t)len, f) == (size_t)len) {
        memcpy(&magic, b, 4);
        memcpy(&np, b + 4, 4);
        memcpy(&crc, b + len - 4, 4);
        nn = 0;
        if ((size_t)len >= state_size(np, 0))
            memcpy(&nn, b + 8 + (size_t)np * 16, 4);
        if (magic == STATE_MAGIC && np == rp->np &&
            (size_t)len == state_size(np, nn) &&
            crc == pk__crc32c(b, (size_t)len - 4) &&
            (nn == 0 || pk__repl_node_room(rp, nn - 1) == PK_OK)) {
            for (uint32_t i = 0; i < np; i++) {
                memcpy(&rp->follow_epoch[i], b + 8 + (size_t)i * 16, 8);
                memcpy(&rp->fence_epoch[i], b + 16 + (size_t)i * 16, 8);
            }
            if (nn)
                memcpy(rp->fence_map, b + 12 + (size_t)np * 16, (size_t)nn * 8);
        }
    }
    free(b);
    fclose(f);
}

/* Room for node id `node` in promise and fence_map.  0 or ENOMEM. */
int pk__repl_node_room(pk_repl *rp, uint32_t node)
{
    uint32_t n = node + 16;
    uint64_t *a, *b;

    if (node < rp->npromise)
        return PK_OK;
    a = realloc(rp->promise, n * sizeof(*a));
    if (a == NULL)
        return PK_ENOMEM;
    rp->promise = a;
    b = realloc(rp->fence_map, n * sizeof(*b));
    if (b == NULL)
        return PK_ENOMEM;
    rp->fence_map = b;
    memset(a + rp->npromise, 0, (n - rp->npromise) * sizeof(*a));
    memset(b + rp->npromise, 0, (n - rp->npromise) * sizeof(*b));
    rp->npromise = n;
    return PK_OK;
}

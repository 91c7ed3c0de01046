/*
 * pk_set_rand: SPOP and SRANDMEMBER, uniform random choices over a set,
 * made by the store's shared random picks (pk_store_rand.c: rank index,
 * Floyd's algorithm, selection sampling, sorted batches of draws), which
 * HRANDFIELD and ZRANDMEMBER use too.  Distinct members come in byte
 * order.
 *
 * SPOP reads before it writes: the chosen members are copied out while
 * the walk runs and deleted after it is closed, so no cursor walks over
 * records being deleted and no borrowed byte outlives a write; a single
 * member is reported and then deleted under the walk's cursor, which
 * takes no further step.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_set_int.h"

/* A pk_set_cb behind a pk__rand_cb (a member's record has no rest). */
typedef struct to_set {
    pk_set_cb cb;
    void *ctx;
} to_set;

static int set_pick(void *ctx, pk_slice mem, pk_slice rest)
{
    const to_set *s = ctx;

    (void)rest;
    return s->cb(s->ctx, mem);
}

/* Members chosen by SPOP: reported to cb, then copied out of the map to
 * delete once the walk that chose them is closed. */
typedef struct popped {
    pk_set_cb cb;
    void *ctx;
    pk__buf buf; /* owned; see pk__set_buf_add */
} popped;

static int pop_keep(void *ctx, pk_slice mem, pk_slice rest)
{
    popped *pp = ctx;
    int rc = pp->cb(pp->ctx, mem);

    (void)rest;
    return rc ? rc : pk__set_buf_add(&pp->buf, mem);
}

int pk_set_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t count, uint64_t seed, uint64_t now_ms, pk_set_cb cb,
               void *ctx, uint64_t *n)
{
    popped pp = {cb, ctx, {NULL, 0, 0}};
    pk__meta m;
    pk_slice mem;
    int rc = pk__op_begin(t, part, 0), gone;

    if (rc != 0) {
        return rc;
    }
    rc = pk__set_load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists || count == 0) {
        if (rc == 0) {
            *n = 0;
        }
        goto out;
    }
    if (count >= m.count) {
        /* Everything: report the members, then drop the key. */
        count = m.count;
        rc = pk__set_each(t, &m, cb, ctx);
        rc = rc ? rc : pk__key_drop(t, &m);
    } else if (count == 1) {
        /* One member: reported, then deleted where the walk found it. */
        pk__sub_walk w = {0};

        rc = pk__rand_walk(t, &m, PK_TAG_SMEMBER, &seed, &w);
        rc = rc ? rc : cb(ctx, w.mem);
        rc = rc ? rc : pk__rec_del_here(t, w.c);
        pk__sub_walk_close(&w);
        m.count--;
        rc = rc ? rc : pk__set_save(t, &m);
    } else {
        rc = pk__rand_pick(t, &m, PK_TAG_SMEMBER, count, 0, &seed, pop_keep,
                           &pp);
    }
    for (size_t off = 0; rc == 0 && pk__set_buf_next(&pp.buf, &off, &mem);) {
        rc = pk__set_rem_one(t, &m, mem.ptr, mem.len, &gone);
    }
    if (rc == 0 && pp.buf.len > 0) {
        rc = pk__set_save(t, &m);
    }
    if (rc == 0) {
        *n = count;
    }
    free(pp.buf.p);
out:
    return pk__op_end(t, rc);
}

int pk_set_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                  pk_set_cb cb, void *ctx)
{
    pk__meta m;
    to_set s = {cb, ctx};
    int rc = pk__set_load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0 || !m.exists) {
        return rc;
    }
    return pk__rand_pick(t, &m, PK_TAG_SMEMBER, count, repeat, &seed, set_pick,
                         &s);
}

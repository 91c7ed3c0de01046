/*
 * pk_set: set commands on top of the record layer.
 *
 * Invariant: the META count equals the number of SMEMBER records of the
 * key, and is never 0 (the last SREM / SPOP / SMOVE drops the key).
 *
 * The set algebra streams: an intersection walks the smallest set and
 * looks each member up in the others, a difference walks the first set,
 * a union merges the sets' cursors (members are stored in byte order, so
 * a k-way merge yields each member once).  Only the STORE forms hold the
 * result in memory, because writing dst may move the pages the cursors
 * read.  Random choices are uniform over ranks (see pk_set.h for the
 * cost); the generator is splitmix64 seeded by the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_glob.h"
#include "store/pk_set.h"
#include "store/pk_store_int.h"

#define GROUP_MAX 7 /* member bytes an SSCAN cursor holds */

static int member_key(const uint8_t *prefix, size_t plen, const void *mem,
                      size_t mlen, uint8_t *buf, size_t *len)
{
    if (plen + 1 + mlen > PK_KEYENC_MAX) {
        return PK_ERANGE;
    }
    memcpy(buf, prefix, plen);
    return pk_keyenc_sub(buf, PK_KEYENC_MAX, plen, PK_TAG_SMEMBER, mem, mlen,
                         len);
}

/* Loads a set; a missing (or too long) key reads as empty. */
static int load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now, pk__meta *m)
{
    int rc = pk__meta_load(t, part, key, klen, now, m);

    if (rc == PK_ERANGE) {
        m->exists = 0;
        m->plen = PK_KEYENC_MAX; /* no member fits under it */
        return 0;
    }
    if (rc == 0 && m->exists && m->type != PK__T_SET) {
        return PK_STORE_WRONGTYPE;
    }
    return rc;
}

static int load_read(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     uint64_t now, pk__meta *m)
{
    int rc = pk__read_begin(t, part);

    return rc ? rc : load(t, part, key, klen, now, m);
}

/* 1 when the set whose prefix is given holds mem, 0 if not, or an error. */
static int has(pk_txn *t, const uint8_t *prefix, size_t plen, const void *mem,
               size_t mlen)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    MDB_val v;
    int rc;

    if (member_key(prefix, plen, mem, mlen, kb, &kl) != 0) {
        return 0; /* too long to be stored, so not a member */
    }
    rc = pk__rec_get(t, kb, kl, &v);
    return rc == 0 ? 1 : rc == PK_ENOTFOUND ? 0 : rc;
}

/* Writes m's META record with its (changed) count, or drops an empty set. */
static int meta_save(pk_txn *t, pk__meta *m)
{
    return m->count == 0 ? pk__key_drop(t, m)
                         : pk__meta_put(t, m, NULL, 0, NULL, 0);
}

/*
 * A cursor over one set's members, in byte order (rev: from the last).
 * mem borrows the map until the next write.
 */
typedef struct walk {
    MDB_cursor *c;
    const uint8_t *prefix; /* borrowed; plen bytes, then the tag */
    size_t plen;
    int valid;
    pk_slice mem;
} walk;

static int walk_check(pk_txn *t, walk *w, int mrc, MDB_val *k)
{
    size_t n = w->plen + 1;

    w->valid = 0;
    if (mrc == MDB_NOTFOUND) {
        return 0;
    }
    if (mrc != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    if (k->mv_size < n || memcmp(k->mv_data, w->prefix, w->plen) != 0 ||
        ((const uint8_t *)k->mv_data)[w->plen] != PK_TAG_SMEMBER) {
        return 0;
    }
    w->valid = 1;
    w->mem = (pk_slice){(const uint8_t *)k->mv_data + n, k->mv_size - n};
    return 0;
}

/* Opens w on the set at prefix (plen bytes) at the first member >= from. */
static int walk_open(pk_txn *t, walk *w, const uint8_t *prefix, size_t plen,
                     const void *from, size_t flen, int rev)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    MDB_val k, v;
    int mrc;

    w->prefix = prefix;
    w->plen = plen;
    w->valid = 0;
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &w->c)) != 0) {
        w->c = NULL;
        return pk__fail(t, pk__err(mrc));
    }
    if (member_key(prefix, plen, from, flen, kb, &kl) != 0) {
        kl = plen + 1;
    }
    if (rev) {
        kb[plen] = PK_TAG_SMEMBER + 1; /* just past the members */
        kl = plen + 1;
    }
    k = (MDB_val){kl, kb};
    mrc = mdb_cursor_get(w->c, &k, &v, MDB_SET_RANGE);
    if (rev) {
        mrc = mdb_cursor_get(w->c, &k, &v,
                             mrc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
    }
    return walk_check(t, w, mrc, &k);
}

static int walk_next(pk_txn *t, walk *w, int rev)
{
    MDB_val k, v;

    return walk_check(
        t, w, mdb_cursor_get(w->c, &k, &v, rev ? MDB_PREV : MDB_NEXT), &k);
}

static void walk_close(walk *w)
{
    if (w->c != NULL) {
        mdb_cursor_close(w->c);
        w->c = NULL;
    }
}

/* Calls cb for each member of a loaded set, in byte order. */
static int each(pk_txn *t, const pk__meta *m, pk_set_cb cb, void *ctx)
{
    walk w;
    int rc = walk_open(t, &w, m->key, m->plen, NULL, 0, 0);

    while (rc == 0 && w.valid && (rc = cb(ctx, w.mem)) == 0) {
        rc = walk_next(t, &w, 0);
    }
    walk_close(&w);
    return rc;
}

int pk_set_add(pk_txn *t, uint32_t part, const void *key, size_t klen, size_t n,
               const pk_slice *members, uint64_t now_ms, uint64_t *added)
{
    uint8_t kb[PK_KEYENC_MAX];
    uint64_t count0;
    size_t kl;
    pk__meta m;
    MDB_val v;
    int rc;

    if (n == 0) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc == 0 && m.exists && m.type != PK__T_SET) {
        rc = PK_STORE_WRONGTYPE;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (member_key(m.key, m.plen, members[i].ptr, members[i].len, kb,
                       &kl) != 0) {
            rc = PK_ERANGE;
        }
    }
    if (rc != 0) {
        goto out;
    }
    if (!m.exists) {
        m.type = PK__T_SET;
        m.expire = 0;
        m.count = 0;
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        member_key(m.key, m.plen, members[i].ptr, members[i].len, kb, &kl);
        rc = pk__rec_get(t, kb, kl, &v);
        if (rc == PK_ENOTFOUND) {
            m.count++;
            rc = pk__rec_put(t, kb, kl, "", 0);
        }
    }
    if (rc == 0 && m.count != count0) {
        rc = pk__meta_put(t, &m, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        *added = m.count - count0;
    }
out:
    return pk__op_end(t, rc);
}

/* Deletes member mem of the loaded set m; *gone = 1 when it was there. */
static int rem_one(pk_txn *t, pk__meta *m, const void *mem, size_t mlen,
                   int *gone)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    int del = 0, rc = 0;

    if (member_key(m->key, m->plen, mem, mlen, kb, &kl) == 0) {
        rc = pk__rec_del(t, kb, kl, &del);
    }
    m->count -= del && m->count > 0;
    *gone = del;
    return rc;
}

int pk_set_rem(pk_txn *t, uint32_t part, const void *key, size_t klen, size_t n,
               const pk_slice *members, uint64_t now_ms, uint64_t *removed)
{
    uint64_t count0;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0), del;

    if (rc != 0) {
        return rc;
    }
    rc = load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists) {
        if (rc == 0) {
            *removed = 0;
        }
        goto out;
    }
    count0 = m.count;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = rem_one(t, &m, members[i].ptr, members[i].len, &del);
    }
    if (rc == 0 && m.count != count0) {
        rc = meta_save(t, &m);
    }
    if (rc == 0) {
        *removed = count0 - m.count;
    }
out:
    return pk__op_end(t, rc);
}

int pk_set_card(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *card)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *card = m.exists ? m.count : 0;
    }
    return rc;
}

int pk_set_ismember(pk_txn *t, uint32_t part, const void *key, size_t klen,
                    size_t n, const pk_slice *members, uint64_t now_ms,
                    uint8_t *is)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m), h;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        h = m.exists ? has(t, m.key, m.plen, members[i].ptr, members[i].len)
                     : 0;
        if (h < 0) {
            return h;
        }
        is[i] = (uint8_t)h;
    }
    return rc;
}

int pk_set_each(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, pk_set_cb cb, void *ctx)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    return rc != 0 || !m.exists ? rc : each(t, &m, cb, ctx);
}

int pk_set_move(pk_txn *t, uint32_t part, const void *src, size_t slen,
                const void *dst, size_t dlen, const void *member, size_t mlen,
                uint64_t now_ms, int *moved)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    pk__meta s, d;
    int rc = pk__op_begin(t, part, 0), gone = 0, h;

    if (rc != 0) {
        return rc;
    }
    rc = load(t, part, src, slen, now_ms, &s);
    if (rc == 0 && !s.exists) {
        *moved = 0; /* as Redis: dst's type is not looked at then */
        goto out;
    }
    rc = rc ? rc : load(t, part, dst, dlen, now_ms, &d);
    if (rc != 0) {
        goto out;
    }
    if (slen == dlen && memcmp(src, dst, slen) == 0) {
        h = has(t, s.key, s.plen, member, mlen);
        rc = h < 0 ? h : 0;
        *moved = h > 0;
        goto out;
    }
    /* A member that fits under src may not fit under a longer dst. */
    if (has(t, s.key, s.plen, member, mlen) > 0 &&
        member_key(d.key, d.plen, member, mlen, kb, &kl) != 0) {
        rc = PK_ERANGE;
        goto out;
    }
    rc = rem_one(t, &s, member, mlen, &gone);
    if (rc == 0 && gone) {
        rc = meta_save(t, &s);
    }
    if (rc == 0 && gone) {
        rc = has(t, d.key, d.plen, member, mlen);
        if (rc == 0) {
            if (!d.exists) {
                d.type = PK__T_SET;
                d.expire = 0;
                d.count = 0;
            }
            d.count++;
            member_key(d.key, d.plen, member, mlen, kb, &kl);
            rc = pk__rec_put(t, kb, kl, "", 0);
            rc = rc ? rc : pk__meta_put(t, &d, NULL, 0, NULL, 0);
        } else if (rc > 0) {
            rc = 0;
        }
    }
    if (rc == 0) {
        *moved = gone;
    }
out:
    return pk__op_end(t, rc);
}

/* splitmix64: a good 64-bit generator in one word of state. */
static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias (rejection). */
static uint64_t rnd_below(uint64_t *s, uint64_t n)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, r;

    do {
        r = rnd(s);
    } while (r >= lim);
    return r % n;
}

/* Opens w at the member of rank r (0-based) of the loaded set m. */
static int walk_rank(pk_txn *t, const pk__meta *m, uint64_t r, walk *w)
{
    int rev = r >= m->count / 2;
    uint64_t steps = rev ? m->count - 1 - r : r;
    int rc = walk_open(t, w, m->key, m->plen, NULL, 0, rev);

    while (rc == 0 && w->valid && steps-- > 0) {
        rc = walk_next(t, w, rev);
    }
    if (rc == 0 && !w->valid) {
        rc = pk__fail(t, PK_ECORRUPT); /* fewer members than the count */
    }
    return rc;
}

/*
 * Selection sampling (Knuth's algorithm S): walks the loaded set once and
 * calls fn for k of its members, each k-subset equally likely.
 */
static int choose(pk_txn *t, const pk__meta *m, uint64_t k, uint64_t *seed,
                  pk_set_cb fn, void *ctx)
{
    uint64_t seen = 0, left = k;
    walk w;
    int rc = walk_open(t, &w, m->key, m->plen, NULL, 0, 0);

    while (rc == 0 && w.valid && left > 0 && seen < m->count) {
        if (rnd_below(seed, m->count - seen) < left) {
            left--;
            rc = fn(ctx, w.mem);
        }
        seen++;
        rc = rc ? rc : walk_next(t, &w, 0);
    }
    walk_close(&w);
    return rc;
}

/* Members chosen by SPOP, copied out of the map, to delete afterwards. */
typedef struct popped {
    pk_set_cb cb;
    void *ctx;
    uint8_t *p; /* owned: (u32 length | bytes)* */
    size_t len, cap;
} popped;

static int pop_keep(void *ctx, pk_slice mem)
{
    popped *pp = ctx;
    size_t need = pp->len + 4 + mem.len;
    uint8_t *p;
    int rc = pp->cb(pp->ctx, mem);

    if (rc != 0) {
        return rc;
    }
    if (need > pp->cap) {
        size_t cap = pp->cap ? pp->cap * 2 : 256;
        while (cap < need) {
            cap *= 2;
        }
        if ((p = realloc(pp->p, cap)) == NULL) {
            return PK_ENOMEM;
        }
        pp->p = p;
        pp->cap = cap;
    }
    pk_be32_put(pp->p + pp->len, (uint32_t)mem.len);
    if (mem.len > 0) {
        memcpy(pp->p + pp->len + 4, mem.ptr, mem.len);
    }
    pp->len = need;
    return 0;
}

int pk_set_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
               uint64_t count, uint64_t seed, uint64_t now_ms, pk_set_cb cb,
               void *ctx, uint64_t *n)
{
    popped pp = {cb, ctx, NULL, 0, 0};
    pk__meta m;
    walk w = {0};
    int rc = pk__op_begin(t, part, 0), gone;

    if (rc != 0) {
        return rc;
    }
    rc = load(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists || count == 0) {
        if (rc == 0) {
            *n = 0;
        }
        goto out;
    }
    if (count >= m.count) {
        /* Everything: report the members, then drop the key. */
        count = m.count;
        rc = each(t, &m, cb, ctx);
        rc = rc ? rc : pk__key_drop(t, &m);
    } else if (count == 1) {
        rc = walk_rank(t, &m, rnd_below(&seed, m.count), &w);
        rc = rc ? rc : pop_keep(&pp, w.mem);
        walk_close(&w);
    } else {
        rc = choose(t, &m, count, &seed, pop_keep, &pp);
    }
    for (size_t off = 0; rc == 0 && off < pp.len;) {
        size_t len = pk_be32_get(pp.p + off);
        rc = rem_one(t, &m, pp.p + off + 4, len, &gone);
        off += 4 + len;
    }
    if (rc == 0 && pp.len > 0) {
        rc = meta_save(t, &m);
    }
    if (rc == 0) {
        *n = count;
    }
    free(pp.p);
out:
    return pk__op_end(t, rc);
}

/* One draw of SRANDMEMBER with repeats: a rank and its place in the
 * reply. */
typedef struct draw {
    uint64_t rank;
    uint32_t pos;
} draw;

static int draw_cmp(const void *a, const void *b)
{
    const draw *x = a, *y = b;

    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * n independent uniform draws (n <= PK_SET_RAND_BATCH): sorts the ranks,
 * resolves them in one walk, reports them in draw order.  out and d hold
 * n entries.
 */
static int draw_batch(pk_txn *t, const pk__meta *m, uint64_t n, uint64_t *seed,
                      draw *d, pk_slice *out, pk_set_cb cb, void *ctx)
{
    uint64_t rank = 0;
    size_t i = 0;
    walk w;
    int rc;

    for (uint32_t j = 0; j < n; j++) {
        d[j] = (draw){rnd_below(seed, m->count), j};
    }
    qsort(d, n, sizeof(*d), draw_cmp);
    rc = walk_open(t, &w, m->key, m->plen, NULL, 0, 0);
    while (rc == 0 && w.valid && i < n) {
        while (i < n && d[i].rank == rank) {
            out[d[i++].pos] = w.mem;
        }
        rank++;
        rc = walk_next(t, &w, 0);
    }
    walk_close(&w);
    if (rc == 0 && i < n) {
        rc = pk__fail(t, PK_ECORRUPT);
    }
    for (i = 0; rc == 0 && i < n; i++) {
        rc = cb(ctx, out[i]);
    }
    return rc;
}

int pk_set_random(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t count, int repeat, uint64_t seed, uint64_t now_ms,
                  pk_set_cb cb, void *ctx)
{
    pk__meta m;
    draw *d = NULL;
    pk_slice *out = NULL;
    uint64_t b;
    walk w = {0};
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0 || !m.exists || count == 0) {
        return rc;
    }
    if (!repeat && count >= m.count) {
        return each(t, &m, cb, ctx);
    }
    if (!repeat && count > 1) {
        return choose(t, &m, count, &seed, cb, ctx);
    }
    if (count == 1) {
        rc = walk_rank(t, &m, rnd_below(&seed, m.count), &w);
        rc = rc ? rc : cb(ctx, w.mem);
        walk_close(&w);
        return rc;
    }
    b = count < PK_SET_RAND_BATCH ? count : PK_SET_RAND_BATCH;
    d = malloc(b * sizeof(*d));
    out = malloc(b * sizeof(*out));
    rc = d && out ? 0 : PK_ENOMEM;
    while (rc == 0 && count > 0) {
        b = count < PK_SET_RAND_BATCH ? count : PK_SET_RAND_BATCH;
        rc = draw_batch(t, &m, b, &seed, d, out, cb, ctx);
        count -= b;
    }
    free(d);
    free(out);
    return rc;
}

/* The keys of a set operation, loaded: prefixes live in one block. */
typedef struct srcs {
    size_t n;
    uint8_t *blk;    /* owned: every prefix */
    size_t *off;     /* owned: prefix i at blk + off[i] */
    size_t *plen;    /* owned */
    uint64_t *count; /* owned: 0 for a missing key */
} srcs;

static void srcs_free(srcs *s)
{
    free(s->blk);
    free(s->off);
    free(s->plen);
    free(s->count);
}

static const uint8_t *src_prefix(const srcs *s, size_t i)
{
    return s->blk + s->off[i];
}

/* Loads every key, checking types before anything reads members. */
static int srcs_load(pk_txn *t, uint32_t part, size_t nkeys,
                     const pk_slice *keys, uint64_t now, srcs *s)
{
    size_t total = 0;
    pk__meta m;
    int rc = 0;

    s->n = nkeys;
    for (size_t i = 0; i < nkeys; i++) {
        total += pk_keyenc_prefix_len(keys[i].ptr, keys[i].len);
    }
    s->blk = malloc(total + 1);
    s->off = malloc(nkeys * sizeof(*s->off));
    s->plen = malloc(nkeys * sizeof(*s->plen));
    s->count = malloc(nkeys * sizeof(*s->count));
    if (!s->blk || !s->off || !s->plen || !s->count) {
        return PK_ENOMEM;
    }
    total = 0;
    for (size_t i = 0; rc == 0 && i < nkeys; i++) {
        rc = load(t, part, keys[i].ptr, keys[i].len, now, &m);
        s->off[i] = total;
        s->plen[i] = m.exists ? m.plen : 0;
        s->count[i] = m.exists ? m.count : 0;
        if (rc == 0 && m.exists) {
            memcpy(s->blk + total, m.key, m.plen);
            total += m.plen;
        }
    }
    return rc;
}

/* Whether mem belongs in the result, given it is in set `from`. */
static int keep(pk_txn *t, const srcs *s, pk_set_op op, size_t from,
                pk_slice mem)
{
    for (size_t i = 0; i < s->n; i++) {
        int h;
        if (i == from || (op == PK_SETOP_DIFF && s->count[i] == 0)) {
            continue;
        }
        h = has(t, src_prefix(s, i), s->plen[i], mem.ptr, mem.len);
        if (h < 0 || (op == PK_SETOP_INTER && h == 0) ||
            (op == PK_SETOP_DIFF && h == 1)) {
            return h < 0 ? h : 0;
        }
    }
    return 1;
}

/* Intersection or difference: walk one set, probe the others. */
static int probe(pk_txn *t, const srcs *s, pk_set_op op, uint64_t limit,
                 pk_set_cb cb, void *ctx, uint64_t *card)
{
    size_t from = 0;
    uint64_t n = 0;
    walk w;
    int rc, k;

    for (size_t i = 0; op == PK_SETOP_INTER && i < s->n; i++) {
        if (s->count[i] == 0) {
            *card = 0;
            return 0;
        }
        from = s->count[i] < s->count[from] ? i : from;
    }
    if (s->count[from] == 0) {
        *card = 0;
        return 0;
    }
    rc = walk_open(t, &w, src_prefix(s, from), s->plen[from], NULL, 0, 0);
    while (rc == 0 && w.valid && (limit == 0 || n < limit)) {
        /* Only `from` itself is skipped: SDIFF a a probes the copy. */
        k = keep(t, s, op, from, w.mem);
        if (k < 0) {
            rc = k;
        } else if (k > 0) {
            n++;
            rc = cb ? cb(ctx, w.mem) : 0;
        }
        rc = rc ? rc : walk_next(t, &w, 0);
    }
    walk_close(&w);
    if (rc == 0) {
        *card = n;
    }
    return rc;
}

static int slice_cmp(pk_slice a, pk_slice b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;

    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* Union: a k-way merge of the sets' cursors. */
static int merge(pk_txn *t, const srcs *s, pk_set_cb cb, void *ctx,
                 uint64_t *card)
{
    walk *w = calloc(s->n, sizeof(*w));
    uint64_t n = 0;
    int rc = w ? 0 : PK_ENOMEM;
    pk_slice min = {NULL, 0};
    size_t best;

    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        if (s->count[i] > 0) {
            rc = walk_open(t, &w[i], src_prefix(s, i), s->plen[i], NULL, 0, 0);
        }
    }
    while (rc == 0) {
        best = s->n;
        for (size_t i = 0; i < s->n; i++) {
            if (w[i].valid && (best == s->n || slice_cmp(w[i].mem, min) < 0)) {
                best = i;
                min = w[i].mem;
            }
        }
        if (best == s->n) {
            break;
        }
        n++;
        rc = cb ? cb(ctx, min) : 0;
        /* min points into the map: compare before moving its cursor. */
        for (size_t i = s->n; rc == 0 && i-- > 0;) {
            if (i != best && w[i].valid && slice_cmp(w[i].mem, min) == 0) {
                rc = walk_next(t, &w[i], 0);
            }
        }
        rc = rc ? rc : walk_next(t, &w[best], 0);
    }
    for (size_t i = 0; w != NULL && i < s->n; i++) {
        walk_close(&w[i]);
    }
    free(w);
    if (rc == 0) {
        *card = n;
    }
    return rc;
}

static int combine(pk_txn *t, uint32_t part, pk_set_op op, size_t nkeys,
                   const pk_slice *keys, uint64_t limit, uint64_t now,
                   pk_set_cb cb, void *ctx, uint64_t *card)
{
    srcs s = {0};
    int rc;

    if (nkeys == 0 || op < PK_SETOP_UNION || op > PK_SETOP_DIFF) {
        return PK_EINVAL;
    }
    rc = srcs_load(t, part, nkeys, keys, now, &s);
    if (rc == 0) {
        rc = op == PK_SETOP_UNION ? merge(t, &s, cb, ctx, card)
                                  : probe(t, &s, op, limit, cb, ctx, card);
    }
    srcs_free(&s);
    return rc;
}

int pk_set_combine(pk_txn *t, uint32_t part, pk_set_op op, size_t nkeys,
                   const pk_slice *keys, uint64_t limit, uint64_t now_ms,
                   pk_set_cb cb, void *ctx, uint64_t *card)
{
    int rc = pk__read_begin(t, part);

    return rc ? rc
              : combine(t, part, op, nkeys, keys, limit, now_ms, cb, ctx, card);
}

/* A STORE form's result, copied out of the map (same layout as popped). */
typedef struct result {
    const uint8_t *dprefix; /* dst's prefix, to check member lengths */
    size_t dplen;
    popped buf;
    int too_long;
} result;

static int nop_cb(void *ctx, pk_slice mem)
{
    (void)ctx;
    (void)mem;
    return 0;
}

static int result_add(void *ctx, pk_slice mem)
{
    result *r = ctx;
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;

    if (member_key(r->dprefix, r->dplen, mem.ptr, mem.len, kb, &kl) != 0) {
        r->too_long = 1;
        return PK_ERANGE;
    }
    return pop_keep(&r->buf, mem);
}

int pk_set_store(pk_txn *t, uint32_t part, pk_set_op op, const void *dst,
                 size_t dlen, size_t nkeys, const pk_slice *keys,
                 uint64_t now_ms, uint64_t *card)
{
    uint8_t kb[PK_KEYENC_MAX];
    result r = {NULL, 0, {nop_cb, NULL, NULL, 0, 0}, 0};
    uint64_t n = 0;
    size_t kl;
    pk__meta d;
    int rc = pk__op_begin(t, part, 0), drc;

    if (rc != 0) {
        return rc;
    }
    /* dst's prefix, for the length check; its META is reloaded below,
     * after the sources (one of which may be dst). */
    drc = pk__meta_load(t, part, dst, dlen, now_ms, &d);
    if (drc != 0 && drc != PK_ERANGE) {
        rc = drc;
        goto out;
    }
    r.dprefix = d.key;
    r.dplen = d.plen;
    rc = combine(t, part, op, nkeys, keys, 0, now_ms,
                 drc == 0 ? result_add : nop_cb, &r, &n);
    if (rc == 0 && drc != 0 && n > 0) {
        rc = PK_ERANGE;
    }
    if (rc != 0 || drc != 0) {
        goto done;
    }
    if ((rc = pk__meta_load(t, part, dst, dlen, now_ms, &d)) != 0) {
        goto done;
    }
    if (d.exists) {
        rc = pk__key_drop(t, &d);
    }
    for (size_t off = 0; rc == 0 && off < r.buf.len;) {
        size_t len = pk_be32_get(r.buf.p + off);
        member_key(d.key, d.plen, r.buf.p + off + 4, len, kb, &kl);
        rc = pk__rec_put(t, kb, kl, "", 0);
        off += 4 + len;
    }
    if (rc == 0 && n > 0) {
        d.type = PK__T_SET;
        d.expire = 0;
        d.count = n;
        rc = pk__meta_put(t, &d, NULL, 0, NULL, 0);
    }
done:
    if (rc == 0) {
        *card = n;
    }
    free(r.buf.p);
out:
    return pk__op_end(t, rc);
}

/* The SSCAN group of a member: its first GROUP_MAX bytes, or all. */
static size_t group_len(pk_slice mem)
{
    return mem.len < GROUP_MAX ? mem.len : GROUP_MAX;
}

static uint64_t group_cursor(pk_slice mem)
{
    uint8_t b[8] = {0};
    size_t g = group_len(mem);

    if (g > 0) {
        memcpy(b, mem.ptr, g);
    }
    b[7] = (uint8_t)(g + 1);
    return pk_be64_get(b);
}

static int same_group(pk_slice a, pk_slice b)
{
    size_t g = group_len(a);

    return g == group_len(b) && (g == 0 || memcmp(a.ptr, b.ptr, g) == 0);
}

int pk_set_scan(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t cursor, const pk_sscan_opts *opts, uint64_t now_ms,
                pk_set_cb cb, void *ctx, uint64_t *next)
{
    pk_sscan_opts o = {NULL, 0, 10};
    uint8_t from[8], last[GROUP_MAX];
    pk_slice lastg = {last, 0};
    size_t flen = 0, examined = 0;
    pk__meta m;
    walk w = {0};
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0 || !m.exists) {
        if (rc == 0) {
            *next = 0;
        }
        return rc;
    }
    if (opts != NULL) {
        o = *opts;
        o.count = o.count ? o.count : 10;
    }
    if (cursor != 0) {
        pk_be64_put(from, cursor);
        flen = (size_t)(cursor & 0xff) - 1;
        flen = flen > GROUP_MAX ? GROUP_MAX : flen;
    }
    *next = 0;
    rc = walk_open(t, &w, m.key, m.plen, from, flen, 0);
    while (rc == 0 && w.valid) {
        if (examined >= o.count && !same_group(w.mem, lastg)) {
            *next = group_cursor(w.mem);
            break;
        }
        examined++;
        lastg.len = group_len(w.mem);
        if (lastg.len > 0) {
            memcpy(last, w.mem.ptr, lastg.len);
        }
        if (o.match == NULL ||
            pk_glob_match(o.match, o.match_len, w.mem.ptr, w.mem.len, 0)) {
            rc = cb(ctx, w.mem);
        }
        rc = rc ? rc : walk_next(t, &w, 0);
    }
    walk_close(&w);
    return rc;
}

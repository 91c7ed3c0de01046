/*
 * pk_list: list commands on top of the record layer.  The META record
 * keeps count and head; the elements sit at positions head .. head +
 * count - 1 with no gaps (pk_store_int.h, pk_list.h), which is what lets
 * LINDEX and LSET go straight to an element and LRANGE seek once.  Every
 * write keeps that invariant within its one operation: pops and LTRIM
 * only move the ends, LINSERT shifts the shorter side by one, LREM closes
 * the gaps it makes in the same pass that finds the matches.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_list.h"
#include "store/pk_store_int.h"

/* Where a new list's first element goes: the middle of the u64 space, so
 * that both ends have room for 2^63 pushes. */
#define HEAD0 (UINT64_C(1) << 63)

/* Builds prefix | LITEM | be64(pos) into buf (PK_KEYENC_MAX bytes). */
static int item_key(const pk__meta *m, uint64_t pos, uint8_t *buf, size_t *len)
{
    uint8_t sub[8];

    pk_be64_put(sub, pos);
    memcpy(buf, m->key, m->plen);
    return pk_keyenc_sub(buf, PK_KEYENC_MAX, m->plen, PK_TAG_LITEM, sub, 8,
                         len);
}

static int get_at(pk_txn *t, const pk__meta *m, uint64_t pos, MDB_val *v)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    int rc = item_key(m, pos, kb, &kl);

    rc = rc ? rc : pk__rec_get(t, kb, kl, v);
    /* The META record promised this element. */
    return rc == PK_ENOTFOUND ? pk__fail(t, PK_ECORRUPT) : rc;
}

static int put_at(pk_txn *t, const pk__meta *m, uint64_t pos, const void *v,
                  size_t vlen)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    int rc = item_key(m, pos, kb, &kl);

    return rc ? rc : pk__rec_put(t, kb, kl, v, vlen);
}

/* put_at for a position outside the list, where no element should be:
 * one search instead of pk__rec_put's two.  A stray record there is
 * overwritten, as put_at would. */
static int add_at(pk_txn *t, const pk__meta *m, uint64_t pos, const void *v,
                  size_t vlen)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    int rc = item_key(m, pos, kb, &kl), added;

    rc = rc ? rc : pk__rec_add(t, kb, kl, v, vlen, &added);
    return rc || added ? rc : pk__rec_put(t, kb, kl, v, vlen);
}

static int del_at(pk_txn *t, const pk__meta *m, uint64_t pos)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    int rc = item_key(m, pos, kb, &kl);

    return rc ? rc : pk__rec_del(t, kb, kl, NULL);
}

/* Copies the element at from to position to (a renumbering step): the
 * value is copied out first, as a put may move the page it sits in. */
static int copy_at(pk_txn *t, const pk__meta *m, uint64_t from, uint64_t to,
                   pk__buf *b)
{
    MDB_val v;
    int rc = get_at(t, m, from, &v);

    if (rc != 0) {
        return rc;
    }
    b->len = 0;
    if (pk__buf_reserve(b, v.mv_size + 1) != 0) {
        return pk__fail(t, PK_ENOMEM);
    }
    memcpy(b->p, v.mv_data, v.mv_size);
    return put_at(t, m, to, b->p, v.mv_size);
}

/* Redis index -> 0-based offset from the head; 0 when out of range. */
static int norm_index(int64_t index, uint64_t count, uint64_t *off)
{
    if (index < 0) {
        /* -1 is the last; -index fits in u64 even for INT64_MIN. */
        uint64_t back = (uint64_t)(-(index + 1)) + 1;
        if (back > count) {
            return 0;
        }
        *off = count - back;
        return 1;
    }
    if ((uint64_t)index >= count) {
        return 0;
    }
    *off = (uint64_t)index;
    return 1;
}

/* Loads key inside a read or write: missing (also too long) or a list. */
static int load(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now, pk__meta *m)
{
    int rc = pk__meta_load(t, part, key, klen, now, m);

    if (rc == PK_ERANGE) {
        m->exists = 0;
        return 0;
    }
    if (rc == 0 && m->exists && m->type != PK__T_LIST) {
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

/* Makes m a new empty list (the caller writes it once it has elements). */
static void init_list(pk__meta *m)
{
    m->type = PK__T_LIST;
    m->expire = 0;
    m->count = 0;
    m->head = HEAD0;
}

/* Pushes one value at an end of a loaded list. */
static int push_one(pk_txn *t, pk__meta *m, unsigned flags, const void *v,
                    size_t vlen)
{
    uint64_t pos;
    int rc;

    if (m->count == 0) {
        pos = m->head;
    } else if (flags & PK_LIST_RIGHT) {
        if (m->head + m->count - 1 == UINT64_MAX) {
            return PK_EFULL;
        }
        pos = m->head + m->count;
    } else {
        if (m->head == 0) {
            return PK_EFULL;
        }
        pos = m->head - 1;
    }
    if ((rc = add_at(t, m, pos, v, vlen)) != 0) {
        return rc;
    }
    if (!(flags & PK_LIST_RIGHT)) {
        m->head = pos;
    }
    m->count++;
    return 0;
}

/* Whether n pushes fit at that end of m (checked before the first). */
static int room(const pk__meta *m, unsigned flags, uint64_t n)
{
    if (m->count == 0) {
        return 1;
    }
    if (flags & PK_LIST_RIGHT) {
        return UINT64_MAX - (m->head + m->count - 1) >= n;
    }
    return m->head >= n;
}

int pk_list_push(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 unsigned flags, size_t n, const pk_slice *vals,
                 uint64_t now_ms, uint64_t *len)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl;
    pk__meta m;
    int rc;

    if (n == 0) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    rc = pk__meta_load(t, part, key, klen, now_ms, &m);
    if (rc == 0 && m.exists && m.type != PK__T_LIST) {
        rc = PK_STORE_WRONGTYPE;
    }
    if (rc == PK_ERANGE && (flags & PK_LIST_XX)) {
        m.exists = 0; /* too long to exist: nothing to push onto */
        rc = 0;
    }
    if (rc != 0) {
        goto out;
    }
    if (!m.exists) {
        if (flags & PK_LIST_XX) {
            *len = 0;
            goto out;
        }
        init_list(&m);
    }
    if ((rc = item_key(&m, 0, kb, &kl)) != 0) {
        goto out;
    }
    if (!room(&m, flags, n)) {
        rc = PK_EFULL;
        goto out;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = push_one(t, &m, flags, vals[i].ptr, vals[i].len);
    }
    rc = rc ? rc : pk__meta_put(t, &m, NULL, 0, NULL, 0);
    if (rc == 0) {
        *len = m.count;
    }
out:
    return pk__op_end(t, rc);
}

/* Pops up to count elements from one end of loaded list m. */
static int pop_loaded(pk_txn *t, pk__meta *m, unsigned flags, uint64_t count,
                      pk_list_cb cb, void *ctx, uint64_t *n)
{
    uint64_t done = 0, pos;
    MDB_val v;
    int rc = 0;

    if (count > m->count) {
        count = m->count;
    }
    while (rc == 0 && done < count) {
        pos = (flags & PK_LIST_RIGHT) ? m->head + m->count - 1 : m->head;
        rc = get_at(t, m, pos, &v);
        if (rc == 0 && cb != NULL &&
            (rc = cb(ctx, (pk_slice){v.mv_data, v.mv_size})) != 0) {
            rc = pk__fail(t, rc);
            break;
        }
        /* The last one goes with the key, below. */
        if (rc == 0 && m->count > 1) {
            rc = del_at(t, m, pos);
        }
        if (rc == 0) {
            m->head += !(flags & PK_LIST_RIGHT) && m->count > 1;
            m->count--;
            done++;
        }
    }
    if (rc == 0 && done > 0) {
        rc = m->count == 0 ? pk__key_drop(t, m)
                           : pk__meta_put(t, m, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        *n = done;
    }
    return rc;
}

int pk_list_pop(pk_txn *t, uint32_t part, const void *key, size_t klen,
                unsigned flags, uint64_t count, uint64_t now_ms, pk_list_cb cb,
                void *ctx, uint64_t *n)
{
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = load(t, part, key, klen, now_ms, &m)) == 0) {
        if (m.exists) {
            rc = pop_loaded(t, &m, flags, count, cb, ctx, n);
        } else {
            *n = 0;
        }
    }
    return pk__op_end(t, rc);
}

int pk_list_len(pk_txn *t, uint32_t part, const void *key, size_t klen,
                uint64_t now_ms, uint64_t *len)
{
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc == 0) {
        *len = m.exists ? m.count : 0;
    }
    return rc;
}

int pk_list_index(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  int64_t index, uint64_t now_ms, pk_slice *val)
{
    uint64_t off;
    pk__meta m;
    MDB_val v;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0) {
        return rc;
    }
    if (!m.exists || !norm_index(index, m.count, &off)) {
        return PK_ENOTFOUND;
    }
    if ((rc = get_at(t, &m, m.head + off, &v)) == 0) {
        *val = (pk_slice){v.mv_data, v.mv_size};
    }
    return rc;
}

int pk_list_set(pk_txn *t, uint32_t part, const void *key, size_t klen,
                int64_t index, const void *val, size_t vlen, uint64_t now_ms)
{
    uint64_t off;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    if (!m.exists) {
        rc = PK_ENOTFOUND;
    } else if (!norm_index(index, m.count, &off)) {
        rc = PK_EINVAL;
    } else {
        rc = put_at(t, &m, m.head + off, val, vlen);
    }
out:
    return pk__op_end(t, rc);
}

/*
 * Walks n elements of m from offset from, forward or backward (rev), with
 * a cursor of its own, calling fn with each element's offset.
 */
static int walk(pk_txn *t, const pk__meta *m, uint64_t from, uint64_t n,
                int rev, int (*fn)(void *ctx, uint64_t off, pk_slice v),
                void *ctx)
{
    uint8_t kb[PK_KEYENC_MAX];
    size_t kl, plen = m->plen + 1;
    MDB_cursor *c;
    MDB_val k, v;
    uint64_t off = from;
    int rc = 0, mrc;

    if (n == 0) {
        return 0;
    }
    if ((rc = item_key(m, m->head + from, kb, &kl)) != 0) {
        return rc;
    }
    if ((mrc = mdb_cursor_open(t->txn, t->s->data, &c)) != 0) {
        return pk__fail(t, pk__err(mrc));
    }
    k = (MDB_val){kl, kb};
    for (mrc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY); mrc == 0 && n > 0;
         mrc = mdb_cursor_get(c, &k, &v, rev ? MDB_PREV : MDB_NEXT)) {
        if (k.mv_size != kl || memcmp(k.mv_data, kb, plen) != 0) {
            mrc = MDB_NOTFOUND;
            break;
        }
        if ((rc = fn(ctx, off, (pk_slice){v.mv_data, v.mv_size})) != 0) {
            break;
        }
        off += rev ? (uint64_t)-1 : 1;
        n--;
    }
    mdb_cursor_close(c);
    if (rc == 0 && n > 0) {
        /* The META record promised more elements than there are. */
        rc = pk__fail(t, mrc == 0 || mrc == MDB_NOTFOUND ? PK_ECORRUPT
                                                         : pk__err(mrc));
    }
    return rc;
}

typedef struct range_ctx {
    pk_list_cb cb;
    void *ctx;
} range_ctx;

static int range_step(void *ctx, uint64_t off, pk_slice v)
{
    range_ctx *r = ctx;

    (void)off;
    return r->cb(r->ctx, v);
}

int pk_list_range(pk_txn *t, uint32_t part, const void *key, size_t klen,
                  uint64_t from, uint64_t n, uint64_t now_ms, pk_list_cb cb,
                  void *ctx)
{
    range_ctx r = {cb, ctx};
    pk__meta m;
    int rc = load_read(t, part, key, klen, now_ms, &m);

    if (rc != 0 || !m.exists || from >= m.count) {
        return rc;
    }
    if (n > m.count - from) {
        n = m.count - from;
    }
    return walk(t, &m, from, n, 0, range_step, &r);
}

/* Deletes the elements at positions [a, b] of m. */
static int del_span(pk_txn *t, const pk__meta *m, uint64_t a, uint64_t b)
{
    int rc = 0;

    for (uint64_t p = a; rc == 0 && p <= b; p++) {
        rc = del_at(t, m, p);
        if (p == UINT64_MAX) {
            break;
        }
    }
    return rc;
}

int pk_list_trim(pk_txn *t, uint32_t part, const void *key, size_t klen,
                 int64_t start, int64_t stop, uint64_t now_ms)
{
    uint64_t from, to, n;
    pk__meta m;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = load(t, part, key, klen, now_ms, &m)) != 0 || !m.exists) {
        goto out;
    }
    n = m.count;
    /* Redis: negative indices from the tail, clamped at the head. */
    from = start < 0 ? ((uint64_t) - (start + 1) + 1 > n
                            ? 0
                            : n - ((uint64_t) - (start + 1) + 1))
                     : (uint64_t)start;
    if (stop < 0) {
        uint64_t back = (uint64_t) - (stop + 1) + 1;
        if (back > n) {
            rc = pk__key_drop(t, &m);
            goto out;
        }
        to = n - back;
    } else {
        to = (uint64_t)stop >= n ? n - 1 : (uint64_t)stop;
    }
    if (from > to || from >= n) {
        rc = pk__key_drop(t, &m);
        goto out;
    }
    if (from == 0 && to == n - 1) {
        goto out;
    }
    if (from > 0) {
        rc = del_span(t, &m, m.head, m.head + from - 1);
    }
    if (rc == 0 && to < n - 1) {
        rc = del_span(t, &m, m.head + to + 1, m.head + n - 1);
    }
    m.head += from;
    m.count = to - from + 1;
    rc = rc ? rc : pk__meta_put(t, &m, NULL, 0, NULL, 0);
out:
    return pk__op_end(t, rc);
}

static int same(const MDB_val *v, const void *p, size_t n)
{
    return v->mv_size == n && (n == 0 || memcmp(v->mv_data, p, n) == 0);
}

int pk_list_rem(pk_txn *t, uint32_t part, const void *key, size_t klen,
                int64_t count, const void *val, size_t vlen, uint64_t now_ms,
                uint64_t *removed)
{
    uint64_t limit, done = 0, w, i;
    int rev = count < 0;
    pk__buf b = {0};
    pk__meta m;
    MDB_val v;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = load(t, part, key, klen, now_ms, &m)) != 0 || !m.exists) {
        if (rc == 0) {
            *removed = 0;
        }
        goto out;
    }
    limit = count == 0 ? UINT64_MAX
            : rev      ? (uint64_t) - (count + 1) + 1
                       : (uint64_t)count;
    /*
     * One pass in the direction of the removal: offset i reads, w is
     * where the next survivor goes, so the gaps close toward the end the
     * walk started from and the elements before the first match are not
     * touched.  Offsets count from that end.
     */
    for (i = w = 0; rc == 0 && i < m.count; i++) {
        uint64_t pos = rev ? m.head + m.count - 1 - i : m.head + i;
        if ((rc = get_at(t, &m, pos, &v)) != 0) {
            break;
        }
        if (done < limit && same(&v, val, vlen)) {
            done++;
            continue;
        }
        if (w != i) {
            rc = copy_at(t, &m, pos,
                         rev ? m.head + m.count - 1 - w : m.head + w, &b);
        }
        w++;
    }
    if (rc == 0 && done > 0) {
        if (w == 0) {
            rc = pk__key_drop(t, &m);
        } else {
            /* The last done slots of the walk's far end are stale. */
            rc = rev ? del_span(t, &m, m.head, m.head + done - 1)
                     : del_span(t, &m, m.head + w, m.head + m.count - 1);
            m.head += rev ? done : 0;
            m.count = w;
            rc = rc ? rc : pk__meta_put(t, &m, NULL, 0, NULL, 0);
        }
    }
    if (rc == 0) {
        *removed = done;
    }
out:
    free(b.p);
    return pk__op_end(t, rc);
}

int pk_list_insert(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   int after, const void *pivot, size_t plen, const void *val,
                   size_t vlen, uint64_t now_ms, int64_t *len)
{
    uint64_t i, j, p;
    pk__buf b = {0};
    pk__meta m;
    MDB_val v;
    int rc = pk__op_begin(t, part, 0);

    if (rc != 0) {
        return rc;
    }
    if ((rc = load(t, part, key, klen, now_ms, &m)) != 0 || !m.exists) {
        if (rc == 0) {
            *len = 0;
        }
        goto out;
    }
    for (i = 0; i < m.count; i++) {
        if ((rc = get_at(t, &m, m.head + i, &v)) != 0) {
            goto out;
        }
        if (same(&v, pivot, plen)) {
            break;
        }
    }
    if (i == m.count) {
        *len = -1;
        goto out;
    }
    j = i + (after != 0); /* the new element's offset */
    if (j <= m.count - j) {
        /* Shift elements 0 .. j-1 one position toward the head. */
        if (m.head == 0) {
            rc = PK_EFULL;
            goto out;
        }
        for (p = 0; rc == 0 && p < j; p++) {
            rc = copy_at(t, &m, m.head + p, m.head + p - 1, &b);
        }
        m.head--;
    } else {
        /* Shift elements j .. count-1 one position toward the tail. */
        if (m.head + m.count - 1 == UINT64_MAX) {
            rc = PK_EFULL;
            goto out;
        }
        for (p = m.count; rc == 0 && p > j; p--) {
            rc = copy_at(t, &m, m.head + p - 1, m.head + p, &b);
        }
    }
    m.count++;
    rc = rc ? rc : put_at(t, &m, m.head + j, val, vlen);
    rc = rc ? rc : pk__meta_put(t, &m, NULL, 0, NULL, 0);
    if (rc == 0) {
        *len = (int64_t)m.count;
    }
out:
    free(b.p);
    return pk__op_end(t, rc);
}

typedef struct pos_ctx {
    const void *val;
    size_t vlen;
    uint64_t skip, count, found, n;
    int (*fn)(void *ctx, uint64_t index);
    void *ctx;
} pos_ctx;

#define POS_DONE 1 /* walk callback: enough matches */

static int pos_step(void *ctx, uint64_t off, pk_slice v)
{
    pos_ctx *p = ctx;
    int rc;

    if (v.len != p->vlen || (v.len && memcmp(v.ptr, p->val, v.len) != 0)) {
        return 0;
    }
    if (p->skip > 0) {
        p->skip--;
        return 0;
    }
    if ((rc = p->fn(p->ctx, off)) != 0) {
        return rc;
    }
    return ++p->found == p->count ? POS_DONE : 0;
}

int pk_list_pos(pk_txn *t, uint32_t part, const void *key, size_t klen,
                const void *val, size_t vlen, int64_t rank, uint64_t count,
                uint64_t maxlen, uint64_t now_ms,
                int (*found)(void *ctx, uint64_t index), void *ctx)
{
    pos_ctx p = {val, vlen, 0, count, 0, 0, found, ctx};
    pk__meta m;
    uint64_t n;
    int rc;

    if (rank == 0) {
        return PK_EINVAL;
    }
    rc = load_read(t, part, key, klen, now_ms, &m);
    if (rc != 0 || !m.exists) {
        return rc;
    }
    p.skip = rank > 0 ? (uint64_t)rank - 1 : (uint64_t) - (rank + 1);
    n = maxlen == 0 || maxlen > m.count ? m.count : maxlen;
    rc = walk(t, &m, rank > 0 ? 0 : m.count - 1, n, rank < 0, pos_step, &p);
    return rc == POS_DONE ? 0 : rc;
}

/* LMOVE between keys of different partitions (a node without cluster
 * mode holds them all): the pop and the push are one operation each, as
 * each partition has its own log; both keys are checked first. */
static int move_apart(pk_txn *t, uint32_t spart, const void *src, size_t slen,
                      uint32_t dpart, const void *dst, size_t dlen,
                      unsigned from, unsigned to, uint64_t now_ms,
                      pk_slice *val)
{
    uint64_t len, n;
    pk_slice v;
    void *copy;
    int rc = pk_list_len(t, dpart, dst, dlen, now_ms, &len);

    rc = rc ? rc : pk_list_len(t, spart, src, slen, now_ms, &len);
    if (rc != 0) {
        return rc;
    }
    if (len == 0) {
        return PK_ENOTFOUND;
    }
    rc = pk_list_index(t, spart, src, slen, (from & PK_LIST_RIGHT) ? -1 : 0,
                       now_ms, &v);
    rc = rc ? rc : pk__scratch_copy(t, v.ptr, v.len, (const void **)&copy);
    if (rc != 0) {
        return rc;
    }
    v.ptr = copy;
    rc = pk_list_pop(t, spart, src, slen, from, 1, now_ms, NULL, NULL, &n);
    rc = rc ? rc : pk_list_push(t, dpart, dst, dlen, to, 1, &v, now_ms, &len);
    if (rc == 0) {
        *val = v;
    }
    return rc == 0 ? 0 : pk__fail(t, rc); /* the pop is done */
}

int pk_list_move(pk_txn *t, uint32_t spart, const void *src, size_t slen,
                 uint32_t dpart, const void *dst, size_t dlen, unsigned from,
                 unsigned to, uint64_t now_ms, pk_slice *val)
{
    uint8_t kb[PK_KEYENC_MAX];
    pk__meta ms, md, *d = &md;
    uint64_t pos, n;
    size_t kl;
    MDB_val v;
    const void *copy;
    int rc, one;

    if (pk_keyenc_prefix_len(dst, dlen) + 1 + 8 > PK_KEYENC_MAX) {
        return PK_ERANGE;
    }
    if (spart != dpart) {
        return move_apart(t, spart, src, slen, dpart, dst, dlen, from, to,
                          now_ms, val);
    }
    if ((rc = pk__op_begin(t, spart, 0)) != 0) {
        return rc;
    }
    one = slen == dlen && memcmp(src, dst, slen) == 0;
    if ((rc = load(t, spart, src, slen, now_ms, &ms)) != 0) {
        goto out;
    }
    if (one) {
        d = &ms;
    } else if ((rc = pk__meta_load(t, dpart, dst, dlen, now_ms, &md)) == 0 &&
               md.exists && md.type != PK__T_LIST) {
        rc = PK_STORE_WRONGTYPE;
    }
    if (rc == 0 && !ms.exists) {
        rc = PK_ENOTFOUND;
    }
    if (rc != 0) {
        goto out;
    }
    if (!d->exists) {
        init_list(d);
    }
    if ((rc = item_key(d, 0, kb, &kl)) != 0) {
        goto out;
    }
    if (one && ms.count == 1) {
        /* Rotating a list of one changes nothing. */
        rc = get_at(t, &ms, ms.head, &v);
        rc = rc ? rc : pk__scratch_copy(t, v.mv_data, v.mv_size, &copy);
        if (rc == 0) {
            *val = (pk_slice){copy, v.mv_size};
        }
        goto out;
    }
    /* One key, one end: the element goes back where it was. */
    if (!(one && (from & PK_LIST_RIGHT) == (to & PK_LIST_RIGHT)) &&
        !room(d, to, 1)) {
        rc = PK_EFULL;
        goto out;
    }
    pos = (from & PK_LIST_RIGHT) ? ms.head + ms.count - 1 : ms.head;
    rc = get_at(t, &ms, pos, &v);
    rc = rc ? rc : pk__scratch_copy(t, v.mv_data, v.mv_size, &copy);
    if (rc != 0) {
        goto out;
    }
    *val = (pk_slice){copy, v.mv_size};
    rc = pop_loaded(t, &ms, from, 1, NULL, NULL, &n);
    rc = rc ? rc : push_one(t, d, to, copy, val->len);
    rc = rc ? rc : pk__meta_put(t, d, NULL, 0, NULL, 0);
out:
    return pk__op_end(t, rc);
}

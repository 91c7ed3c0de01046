/*
 * The store against a naive in-memory model under thousands of random
 * string, hash, sorted-set and expiry commands with a controlled clock.
 * Every command's result is checked as it runs; every few hundred
 * commands the whole keyspace is compared (type, value, fields, members
 * in order, TTL) and the stats as read and write transactions see them,
 * and now and then the store is reopened; at the end active expiry,
 * DBSIZE, counters and SCAN are checked, and the change log is replayed
 * on a second store that must end up byte-identical.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_range.h"
#include "store_testutil.h"

#define NP 3  /* partitions */
#define NK 24 /* keys per partition */
#define NF 6  /* hash fields / zset members per key */
#define OPS 6000

typedef struct mkey {
    int type; /* pk_type */
    uint64_t expire;
    char s[256];
    size_t slen;
    int hf[NF];
    char hv[NF][24];
    size_t hvl[NF];
    int zm[NF];
    double zs[NF];
} mkey;

typedef struct world {
    tstore *a, *b;
    mkey m[NP][NK];
    uint64_t now;
    uint64_t rng;
} world;

static uint32_t rnd(world *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (uint32_t)(w->rng >> 11);
}

/* Key names, two of them binary. */
static size_t key_name(int i, char *buf)
{
    if (i == NK - 2) {
        memcpy(buf, "\0x", 2);
        return 2;
    }
    if (i == NK - 1) {
        memcpy(buf, "k1\0", 3);
        return 3;
    }
    return (size_t)sprintf(buf, "k%d", i);
}

static size_t sub_name(char c, int i, char *buf)
{
    return (size_t)sprintf(buf, "%c%d", c, i);
}

/* The model's view of a key at time now: expired keys vanish. */
static mkey *mget(world *w, int p, int k)
{
    mkey *m = &w->m[p][k];

    if (m->type && m->expire && m->expire <= w->now) {
        memset(m, 0, sizeof(*m));
    }
    return m;
}

/* Redis' canonical int64 rule, written independently of the store. */
static int canon_int(const char *s, size_t n, int64_t *out)
{
    char buf[32];
    size_t i = s[0] == '-';

    if (n == 0 || n > 20 || (n == 1 && s[0] == '0')) {
        *out = 0;
        return n == 1;
    }
    if (i == n || s[i] < '1' || s[i] > '9') {
        return 0;
    }
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }
    memcpy(buf, s, n);
    buf[n] = 0;
    *out = strtoll(buf, NULL, 10); /* values here stay far from limits */
    return 1;
}

typedef struct zlist {
    char mem[NF][8];
    size_t len[NF];
    double score[NF];
    int n;
} zlist;

static int zcollect(void *ctx, pk_slice m, double score)
{
    zlist *z = ctx;

    assert_true(z->n < NF && m.len < 8);
    memcpy(z->mem[z->n], m.ptr, m.len);
    z->len[z->n] = m.len;
    z->score[z->n++] = score;
    return 0;
}

/* The model's members of a zset in (score, member) order. */
static void model_zsorted(const mkey *m, zlist *z)
{
    memset(z, 0, sizeof(*z));
    for (int i = 0; i < NF; i++) {
        if (m->zm[i]) {
            int j = z->n++;
            z->len[j] = sub_name('m', i, z->mem[j]);
            z->score[j] = m->zs[i];
            /* insertion sort: scores, then member bytes (single digits) */
            while (j > 0 && (z->score[j - 1] > z->score[j] ||
                             (z->score[j - 1] == z->score[j] &&
                              strcmp(z->mem[j - 1], z->mem[j]) > 0))) {
                zlist t = *z;
                memcpy(z->mem[j], t.mem[j - 1], 8);
                memcpy(z->mem[j - 1], t.mem[j], 8);
                z->len[j] = t.len[j - 1];
                z->len[j - 1] = t.len[j];
                z->score[j] = t.score[j - 1];
                z->score[j - 1] = t.score[j];
                j--;
            }
        }
    }
}

static int hcollect(void *ctx, pk_slice f, pk_slice v)
{
    mkey *got = ctx;
    int i;

    assert_int_equal(f.len, 2);
    i = ((const char *)f.ptr)[1] - '0';
    assert_true(i >= 0 && i < NF && !got->hf[i]);
    got->hf[i] = 1;
    memcpy(got->hv[i], v.ptr, v.len);
    got->hvl[i] = v.len;
    return 0;
}

/* Compares one key of the store with the model. */
static void check_key(world *w, pk_txn *t, int p, int k)
{
    mkey *m = mget(w, p, k), got;
    char kn[8];
    size_t kl = key_name(k, kn);
    pk_type ty;
    int64_t ttl;

    assert_int_equal(pk_key_type(t, (uint32_t)p, kn, kl, w->now, &ty), 0);
    assert_int_equal(ty, m->type);
    assert_int_equal(pk_key_pttl(t, (uint32_t)p, kn, kl, w->now, &ttl), 0);
    assert_int_equal(ttl, !m->type         ? -2
                          : m->expire == 0 ? -1
                                           : (int64_t)(m->expire - w->now));
    if (m->type == PK_TYPE_STRING) {
        pk_slice v;
        assert_int_equal(pk_str_get(t, (uint32_t)p, kn, kl, w->now, &v), 0);
        assert_int_equal(v.len, m->slen);
        assert_memory_equal(v.ptr, m->s, v.len);
    } else if (m->type == PK_TYPE_HASH) {
        memset(&got, 0, sizeof(got));
        assert_int_equal(
            pk_hmap_each(t, (uint32_t)p, kn, kl, w->now, hcollect, &got), 0);
        for (int i = 0; i < NF; i++) {
            assert_int_equal(got.hf[i], m->hf[i]);
            if (m->hf[i]) {
                assert_int_equal(got.hvl[i], m->hvl[i]);
                assert_memory_equal(got.hv[i], m->hv[i], m->hvl[i]);
            }
        }
    } else if (m->type == PK_TYPE_ZSET) {
        zlist want, have = {0};
        model_zsorted(m, &want);
        assert_int_equal(pk_zset_range_rank(t, (uint32_t)p, kn, kl, 0, -1, 0,
                                            w->now, zcollect, &have),
                         0);
        assert_int_equal(have.n, want.n);
        for (int i = 0; i < want.n; i++) {
            assert_string_equal(have.mem[i], want.mem[i]);
            assert_true(have.score[i] == want.score[i]);
        }
    }
}

static void check_all(world *w, pk_txn *t)
{
    for (int p = 0; p < NP; p++) {
        for (int k = 0; k < NK; k++) {
            check_key(w, t, p, k);
        }
    }
}

static void op_set(world *w, pk_txn *t, int p, int k, const char *kn, size_t kl)
{
    mkey *m = mget(w, p, k);
    unsigned fl[] = {0,          PK_SET_NX,      PK_SET_XX,
                     PK_SET_GET, PK_SET_KEEPTTL, PK_SET_GET | PK_SET_XX};
    pk_set_opts o = {fl[rnd(w) % 6], 0};
    char val[24];
    size_t vl;
    pk_slice old;
    int done = -1, rc, exists = m->type != 0;

    if (!(o.flags & PK_SET_KEEPTTL) && rnd(w) % 4 == 0) {
        o.expire_at = w->now + 1 + rnd(w) % 300;
    }
    vl = rnd(w) % 2 ? (size_t)sprintf(val, "%d", (int)(rnd(w) % 200) - 100)
                    : (size_t)sprintf(val, "v%u", rnd(w) % 100);
    rc = pk_str_set(t, (uint32_t)p, kn, kl, val, vl, &o, w->now, &done, &old);
    if ((o.flags & PK_SET_GET) && exists && m->type != PK_TYPE_STRING) {
        assert_int_equal(rc, PK_STORE_WRONGTYPE);
        return;
    }
    assert_int_equal(rc, 0);
    if (o.flags & PK_SET_GET) {
        if (m->type == PK_TYPE_STRING) {
            assert_int_equal(old.len, m->slen);
            assert_memory_equal(old.ptr, m->s, m->slen);
        } else {
            assert_null(old.ptr);
        }
    }
    if (((o.flags & PK_SET_NX) && exists) ||
        ((o.flags & PK_SET_XX) && !exists)) {
        assert_int_equal(done, 0);
        return;
    }
    assert_int_equal(done, 1);
    uint64_t exp = (o.flags & PK_SET_KEEPTTL) ? m->expire : o.expire_at;
    memset(m, 0, sizeof(*m));
    m->type = PK_TYPE_STRING;
    m->expire = exp;
    memcpy(m->s, val, vl);
    m->slen = vl;
}

static void op_string(world *w, pk_txn *t, int p, int k, const char *kn,
                      size_t kl)
{
    mkey *m = mget(w, p, k);
    int wrong = m->type && m->type != PK_TYPE_STRING, rc;
    int64_t out, cur;
    uint64_t len;
    pk_slice v;

    switch (rnd(w) % 4) {
    case 0:
        rc = pk_str_incrby(t, (uint32_t)p, kn, kl, (int)(rnd(w) % 21) - 10,
                           w->now, &out);
        if (wrong) {
            assert_int_equal(rc, PK_STORE_WRONGTYPE);
        } else if (m->type && !canon_int(m->s, m->slen, &cur)) {
            assert_int_equal(rc, PK_STORE_NOTINT);
        } else {
            assert_int_equal(rc, 0);
            if (!m->type) {
                m->type = PK_TYPE_STRING;
                cur = 0;
            }
            m->slen = (size_t)sprintf(m->s, "%lld", (long long)out);
            assert_true(out - cur >= -10 && out - cur <= 10);
        }
        break;
    case 1:
        if (m->slen > 200) {
            break;
        }
        rc = pk_str_append(t, (uint32_t)p, kn, kl, S("ab"), w->now, &len);
        assert_int_equal(rc, wrong ? PK_STORE_WRONGTYPE : 0);
        if (!wrong) {
            m->type = PK_TYPE_STRING;
            memcpy(m->s + m->slen, "ab", 2);
            m->slen += 2;
            assert_int_equal(len, m->slen);
        }
        break;
    case 2:
        rc = pk_str_getdel(t, (uint32_t)p, kn, kl, w->now, &v);
        assert_int_equal(rc, wrong      ? PK_STORE_WRONGTYPE
                             : !m->type ? PK_ENOTFOUND
                                        : 0);
        if (rc == 0) {
            assert_int_equal(v.len, m->slen);
            assert_memory_equal(v.ptr, m->s, m->slen);
            memset(m, 0, sizeof(*m));
        }
        break;
    default:
        rc = pk_str_get(t, (uint32_t)p, kn, kl, w->now, &v);
        assert_int_equal(rc, wrong      ? PK_STORE_WRONGTYPE
                             : !m->type ? PK_ENOTFOUND
                                        : 0);
        break;
    }
}

static void op_hash(world *w, pk_txn *t, int p, int k, const char *kn,
                    size_t kl)
{
    mkey *m = mget(w, p, k);
    int wrong = m->type && m->type != PK_TYPE_HASH, rc, idx[3];
    char fn[3][4], vn[3][24];
    pk_slice f[3], v[3];
    size_t n = 1 + rnd(w) % 3;
    uint64_t cnt, expect = 0;
    int64_t out, cur;

    for (size_t i = 0; i < n; i++) {
        idx[i] = (int)(rnd(w) % NF);
        f[i] = (pk_slice){fn[i], sub_name('f', idx[i], fn[i])};
        v[i] = (pk_slice){vn[i], (size_t)sprintf(vn[i], "%u", rnd(w) % 50)};
    }
    switch (rnd(w) % 3) {
    case 0:
        rc = pk_hmap_set(t, (uint32_t)p, kn, kl, n, f, v, w->now, &cnt);
        assert_int_equal(rc, wrong ? PK_STORE_WRONGTYPE : 0);
        if (wrong) {
            break;
        }
        m->type = PK_TYPE_HASH;
        for (size_t i = 0; i < n; i++) {
            expect += !m->hf[idx[i]];
            m->hf[idx[i]] = 1;
            memcpy(m->hv[idx[i]], vn[i], v[i].len);
            m->hvl[idx[i]] = v[i].len;
        }
        assert_int_equal(cnt, expect);
        break;
    case 1:
        rc = pk_hmap_del(t, (uint32_t)p, kn, kl, n, f, w->now, &cnt);
        assert_int_equal(rc, wrong ? PK_STORE_WRONGTYPE : 0);
        if (wrong || !m->type) {
            assert_true(wrong || cnt == 0);
            break;
        }
        int left = 0;
        for (size_t i = 0; i < n; i++) {
            expect += m->hf[idx[i]];
            m->hf[idx[i]] = 0;
        }
        for (int i = 0; i < NF; i++) {
            left += m->hf[i];
        }
        assert_int_equal(cnt, expect);
        if (!left) {
            memset(m, 0, sizeof(*m));
        }
        break;
    default:
        rc = pk_hmap_incrby(t, (uint32_t)p, kn, kl, fn[0], f[0].len, 7, w->now,
                            &out);
        if (wrong) {
            assert_int_equal(rc, PK_STORE_WRONGTYPE);
        } else if (m->hf[idx[0]] &&
                   !canon_int(m->hv[idx[0]], m->hvl[idx[0]], &cur)) {
            assert_int_equal(rc, PK_STORE_HASH_NOTINT);
        } else {
            assert_int_equal(rc, 0);
            cur = m->hf[idx[0]] ? cur : 0;
            assert_int_equal(out, cur + 7);
            m->type = PK_TYPE_HASH;
            m->hf[idx[0]] = 1;
            m->hvl[idx[0]] =
                (size_t)sprintf(m->hv[idx[0]], "%lld", (long long)out);
        }
        break;
    }
}

static void op_zset(world *w, pk_txn *t, int p, int k, const char *kn,
                    size_t kl)
{
    static const unsigned fl[] = {0,          PK_ZADD_NX,
                                  PK_ZADD_XX, PK_ZADD_GT,
                                  PK_ZADD_LT, PK_ZADD_XX | PK_ZADD_GT};
    mkey *m = mget(w, p, k);
    int wrong = m->type && m->type != PK_TYPE_ZSET, rc, idx[3];
    unsigned flags = fl[rnd(w) % 6] | (rnd(w) % 2 ? PK_ZADD_CH : 0);
    char mn[3][4];
    pk_slice mem[3];
    double sc[3];
    size_t n = 1 + rnd(w) % 3;
    pk_zadd_result r;
    uint64_t cnt, added = 0, changed = 0;

    for (size_t i = 0; i < n; i++) {
        idx[i] = (int)(rnd(w) % NF);
        mem[i] = (pk_slice){mn[i], sub_name('m', idx[i], mn[i])};
        sc[i] = rnd(w) % 20 == 0 ? INFINITY : (double)(rnd(w) % 11) - 5;
    }
    if (rnd(w) % 3 == 0) {
        rc = pk_zset_rem(t, (uint32_t)p, kn, kl, n, mem, w->now, &cnt);
        assert_int_equal(rc, wrong ? PK_STORE_WRONGTYPE : 0);
        if (wrong || !m->type) {
            return;
        }
        int left = 0;
        for (size_t i = 0; i < n; i++) {
            added += m->zm[idx[i]];
            m->zm[idx[i]] = 0;
        }
        for (int i = 0; i < NF; i++) {
            left += m->zm[i];
        }
        assert_int_equal(cnt, added);
        if (!left) {
            memset(m, 0, sizeof(*m));
        }
        return;
    }
    if (rnd(w) % 4 == 0) {
        flags |= PK_ZADD_INCR;
        n = 1;
        sc[0] = rnd(w) % 10 == 0 ? -INFINITY : sc[0];
    }
    rc = pk_zset_add(t, (uint32_t)p, kn, kl, flags, n, sc, mem, w->now, &r);
    if (wrong) {
        assert_int_equal(rc, PK_STORE_WRONGTYPE);
        return;
    }
    /* The model, as Redis' zsetAdd decides. */
    mkey nm = *m;
    int has = 0;
    double res = 0;
    nm.type = PK_TYPE_ZSET;
    for (size_t i = 0; i < n; i++) {
        int j = idx[i];
        if (nm.zm[j]) {
            double cur = nm.zs[j], nu = sc[i];
            if (flags & PK_ZADD_NX) {
                continue;
            }
            if (flags & PK_ZADD_INCR) {
                nu = cur + sc[i];
                if (isnan(nu)) {
                    assert_int_equal(rc, PK_STORE_NAN);
                    return;
                }
            }
            if (((flags & PK_ZADD_GT) && !(nu > cur)) ||
                ((flags & PK_ZADD_LT) && !(nu < cur))) {
                continue;
            }
            has = 1;
            res = nu;
            changed += nu != cur;
            nm.zs[j] = nu;
        } else if (!(flags & PK_ZADD_XX)) {
            nm.zm[j] = 1;
            nm.zs[j] = sc[i];
            added++;
            has = 1;
            res = sc[i];
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(r.count, added + ((flags & PK_ZADD_CH) ? changed : 0));
    if (flags & PK_ZADD_INCR) {
        assert_int_equal(r.has_score, has);
        assert_true(!has || r.score == res);
    }
    if (m->type || added) {
        *m = nm;
    }
}

static void op_expire(world *w, pk_txn *t, int p, int k, const char *kn,
                      size_t kl)
{
    mkey *m = mget(w, p, k);
    int done, rc;

    if (rnd(w) % 4 == 0) {
        rc = pk_key_persist(t, (uint32_t)p, kn, kl, w->now, &done);
        assert_int_equal(rc, 0);
        assert_int_equal(done, m->type && m->expire);
        m->expire = 0;
    } else if (rnd(w) % 5 == 0) {
        rc = pk_key_del(t, (uint32_t)p, kn, kl, w->now, &done);
        assert_int_equal(rc, 0);
        assert_int_equal(done, m->type != 0);
        memset(m, 0, sizeof(*m));
    } else {
        uint64_t when = w->now - 5 + rnd(w) % 400;
        rc = pk_key_expire(t, (uint32_t)p, kn, kl, when, 0, w->now, &done);
        assert_int_equal(rc, 0);
        assert_int_equal(done, m->type != 0);
        if (m->type) {
            m->expire = when;
            mget(w, p, k); /* a past time deletes at once */
        }
    }
}

static int scan_count(void *ctx, uint32_t part, pk_slice key)
{
    (void)part;
    (void)key;
    (*(uint64_t *)ctx)++;
    return 0;
}

typedef struct shipper {
    pk_txn *t;
    uint32_t part;
} shipper;

static int ship_cb(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    shipper *sh = ctx;

    return pk_store_log_apply(sh->t, sh->part, seq, rec, len);
}

typedef tbuf buf;

static void final_checks(world *w)
{
    pk_store *s = w->a->s;
    pk_txn *t = wtxn(s), *tb;
    uint64_t live = 0, size, sum = 0, seen = 0, cur = 0;
    pk_part_stats ps;
    uint32_t part;
    size_t n;

    assert_int_equal(pk_store_expire_cycle(t, w->now, 1000000, &n), 0);
    for (int p = 0; p < NP; p++) {
        for (int k = 0; k < NK; k++) {
            live += mget(w, p, k)->type != 0;
        }
    }
    assert_int_equal(pk_store_dbsize(t, &size), 0);
    assert_int_equal(size, live);
    for (uint64_t p = 0; pk_store_part_next(t, p, &part, &ps) == 0;
         p = (uint64_t)part + 1) {
        sum += ps.keys;
        assert_true(ps.writes > 0 && ps.reads > 0);
    }
    assert_int_equal(sum, live);
    pk_scan_opts o = {NULL, 0, 5, PK_TYPE_NONE, NULL, NULL};
    do {
        assert_int_equal(
            pk_store_scan(t, cur, &o, w->now, scan_count, &seen, &cur), 0);
    } while (cur != 0);
    assert_int_equal(seen, live);
    check_all(w, t);
    assert_int_equal(pk_txn_commit(t), 0);

    /* Replay every partition's log on B: same bytes. */
    for (uint32_t p = 0; p < NP; p++) {
        buf x = {NULL, 0}, y = {NULL, 0};
        shipper sh = {wtxn(w->b->s), p};
        t = rtxn(s);
        assert_int_equal(pk_store_log_read(t, p, 1, ship_cb, &sh), 0);
        assert_int_equal(pk_txn_commit(sh.t), 0);
        assert_int_equal(pk_store_part_export(t, p, tbuf_cb, &x), 0);
        pk_txn_abort(t);
        tb = rtxn(w->b->s);
        assert_int_equal(pk_store_part_export(tb, p, tbuf_cb, &y), 0);
        pk_txn_abort(tb);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.p, y.p, x.len);
        free(x.p);
        free(y.p);
    }
}

/* Keeps every log record of the model's partitions (holds are memory). */
static void hold_logs(world *w)
{
    for (uint32_t p = 0; p < NP; p++) {
        assert_int_equal(pk_store_log_hold(w->a->s, p, 1), 0);
    }
}

/* Read and write transactions agree on the stats. */
static void check_stats(world *w)
{
    pk_txn *r = rtxn(w->a->s), *t = wtxn(w->a->s);
    pk_part_stats sr, sw;

    for (uint32_t p = 0; p < NP; p++) {
        assert_int_equal(pk_store_part_stats(r, p, &sr), 0);
        assert_int_equal(pk_store_part_stats(t, p, &sw), 0);
        assert_int_equal(sr.keys, sw.keys);
        assert_int_equal(sr.bytes, sw.bytes);
        assert_int_equal(sr.log_first, 1);
        assert_int_equal(sr.log_first, sw.log_first);
        assert_int_equal(sr.log_last, sw.log_last);
    }
    pk_txn_abort(r);
    pk_txn_abort(t);
}

static void run_model(uint64_t seed)
{
    world *w = calloc(1, sizeof(*w));
    pk_txn *t = NULL;
    char kn[8];

    assert_non_null(w);
    w->a = tstore_new();
    w->b = tstore_new();
    assert_true(w->a && w->b);
    w->now = 1700000000000ull;
    w->rng = seed;
    hold_logs(w);
    for (int i = 0; i < OPS; i++) {
        int p = (int)(rnd(w) % NP), k = (int)(rnd(w) % NK);
        size_t kl = key_name(k, kn);

        if (t == NULL) {
            t = wtxn(w->a->s);
        }
        switch (rnd(w) % 6) {
        case 0:
            op_set(w, t, p, k, kn, kl);
            break;
        case 1:
            op_string(w, t, p, k, kn, kl);
            break;
        case 2:
            op_hash(w, t, p, k, kn, kl);
            break;
        case 3:
        case 4:
            op_zset(w, t, p, k, kn, kl);
            break;
        default:
            op_expire(w, t, p, k, kn, kl);
            break;
        }
        assert_int_equal(pk_txn_error(t), 0);
        w->now += rnd(w) % 4;
        if (rnd(w) % 16 == 0) {
            size_t n;
            assert_int_equal(pk_store_expire_cycle(t, w->now, 3, &n), 0);
        }
        if (rnd(w) % 20 == 0) {
            assert_int_equal(pk_txn_commit(t), 0);
            t = NULL;
        }
        if (i % 500 == 499) {
            if (t != NULL) {
                assert_int_equal(pk_txn_commit(t), 0);
                t = NULL;
            }
            pk_txn *r = rtxn(w->a->s);
            check_all(w, r);
            pk_txn_abort(r);
            check_stats(w);
            if (i % 1500 == 1499 && i + 1 < OPS) {
                assert_int_equal(tstore_reopen(w->a), 0);
                hold_logs(w);
                check_stats(w);
            }
        }
    }
    if (t != NULL) {
        assert_int_equal(pk_txn_commit(t), 0);
    }
    final_checks(w);
    tstore_free(w->a);
    tstore_free(w->b);
    free(w);
}

static void test_random_ops_match_model(void **state)
{
    static const uint64_t seeds[] = {0x2545F4914F6CDD1Dull, 1, 0xDEADBEEFull,
                                     0x123456789ull};

    (void)state;
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
        run_model(seeds[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ops_match_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

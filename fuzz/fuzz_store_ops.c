/*
 * libFuzzer target for the store's type commands: the input is a small
 * program of operations on four keys, run in one write transaction that
 * is aborted at the end (so the store stays empty).
 *
 *   input:   (op | key | operands ...)*
 *
 * Each operation takes its operands from the bytes after it (past the
 * end, they read as zero): small integers, a flag byte, indexes into
 * tables of scores and offsets chosen to hit the edges (infinities, NaN,
 * -0, offsets at the size limits), and short strings (a length byte, at
 * most 7 bytes) for members, fields, values and glob patterns.  The keys
 * are "k0".."k3" in one partition; COPY and RENAME may also write them in
 * a second one.
 *
 * Every call must return 0, a positive status (WRONGTYPE, not an
 * integer, ...) or an argument error, and leave the transaction healthy;
 * a call that fails must not have logged a change.  After the program:
 * SCAN returns as many keys as DBSIZE and the partition counts say, every
 * key's type is a real one, a hash, set or sorted set holds as many
 * elements as its count says (walked in every order the store has), a
 * sorted set's score order is ordered, and a DUMP of every key RESTOREs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "fuzz_store.h"
#include "fuzz_util.h"
#include "store/pk_bits.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyops.h"
#include "store/pk_set.h"
#include "store/pk_store.h"
#include "store/pk_store_part.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"
#include "store/pk_zset_ops.h"
#include "store/pk_zset_range.h"

#define NOW 1700000000000ull
#define PART 7u
#define PART2 8u /* COPY / RENAME destinations only */
#define NKEYS 4
#define NMAX 4 /* members, fields, keys, BITFIELD ops per operation */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[NKEYS] = {"k0", "k1", "k2", "k3"};

static const double scores[16] = {0,        -0.0,      1,     -1,     1.5,    2,
                                  INFINITY, -INFINITY, 1e308, -1e308, 5e-324, 3,
                                  10,       0.1,       -2.5,  1e-300};

static const char *const floats[8] = {"1.5", "-0",   "1e308", "inf",
                                      "nan", " 1.0", "0x10",  "3.0e-5"};

/* The program being decoded; past the end every read gives 0. */
typedef struct prog {
    const uint8_t *p;
    size_t n, off;
    char buf[NMAX * 2][8]; /* string operands of one operation */
    int nbuf;
} prog;

static unsigned u8(prog *g)
{
    return g->off < g->n ? g->p[g->off++] : 0;
}

static uint64_t u16(prog *g)
{
    uint64_t v = u8(g);

    return v << 8 | u8(g);
}

static int64_t i64(prog *g)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++) {
        v = v << 8 | u8(g);
    }
    return (int64_t)v;
}

/* A small signed number, often negative (ranks, BITCOUNT indexes). */
static int64_t small(prog *g)
{
    unsigned b = u8(g);

    if (b == 0x80) {
        return i64(g); /* extreme values */
    }
    return (int8_t)b;
}

/* A short string: a length byte (mod 8) and that many bytes. */
static pk_slice str(prog *g)
{
    char *b = g->buf[g->nbuf++ % (NMAX * 2)];
    size_t len = u8(g) % 8;

    for (size_t i = 0; i < len; i++) {
        b[i] = (char)u8(g);
    }
    return (pk_slice){b, len};
}

/*
 * An offset for SETRANGE (bytes) or SETBIT / BITFIELD (bits): below
 * small_max mostly, else at or just past limit -- the first offset that
 * must be refused, without allocating -- or at 2^64 - 1.  Offsets just
 * below the limit would be accepted, and allocate 512 MB.
 */
static uint64_t offset(prog *g, uint64_t small_max, uint64_t limit)
{
    unsigned b = u8(g);

    if (b == 0xff) {
        return UINT64_MAX - (u8(g) & 7);
    }
    if (b >= 0xfc) {
        return limit + (b - 0xfc) * ((uint64_t)u8(g) + 1);
    }
    return (b << 8 | u8(g)) % small_max;
}

static pk_slice key_at(unsigned i)
{
    return (pk_slice){keys[i % NKEYS], 2};
}

#define KEY(s) (s).ptr, (s).len

static int count_m(void *ctx, pk_slice m)
{
    (void)m;
    ++*(uint64_t *)ctx;
    return 0;
}

static int count_hv(void *ctx, pk_slice f, pk_slice v)
{
    (void)f;
    (void)v;
    ++*(uint64_t *)ctx;
    return 0;
}

/* Counts members and checks that scores are never NaN. */
static int count_z(void *ctx, pk_slice m, double score)
{
    (void)m;
    CHECK(!isnan(score));
    ++*(uint64_t *)ctx;
    return 0;
}

/* A walk in score order: scores must not go down. */
typedef struct zwalk {
    uint64_t n;
    double last;
} zwalk;

static int zwalk_cb(void *ctx, pk_slice m, double score)
{
    zwalk *w = ctx;

    (void)m;
    CHECK(!isnan(score) && (w->n == 0 || score >= w->last));
    w->last = score;
    w->n++;
    return 0;
}

/* The string operations, BITFIELD and the pure bit functions. */
static int op_string(pk_txn *t, prog *g, unsigned op, pk_slice k)
{
    pk_bitfield_op bf[NMAX];
    pk_bitfield_res res[NMAX];
    pk_set_opts so;
    pk_slice v, old;
    uint64_t len;
    int64_t n;
    int done, rc;
    size_t nbf;

    switch (op) {
    case 0: /* SET with NX XX GET KEEPTTL EX */
        so.flags = u8(g) & 15;
        so.expire_at = (so.flags & PK_SET_KEEPTTL) ? 0 : u8(g) * 1000ull;
        so.expire_at += so.expire_at ? NOW - 1000 : 0;
        v = str(g);
        return pk_str_set(t, PART, KEY(k), KEY(v), &so, NOW, &done, &old);
    case 1: /* APPEND */
        v = str(g);
        return pk_str_append(t, PART, KEY(k), KEY(v), NOW, &len);
    case 2: /* SETRANGE */
        len = offset(g, 64, PK_STORE_VALUE_MAX);
        v = str(g);
        return pk_str_setrange(t, PART, KEY(k), len, KEY(v), NOW, &len);
    case 3: /* SETBIT */
        len = offset(g, 512, PK_BITS_OFFSET_MAX);
        return pk_bits_setbit(t, PART, KEY(k), len, u8(g) % 3, NOW, &done);
    case 4: /* BITFIELD: any mix, overflow modes and widths, some bad */
        nbf = 1 + u8(g) % NMAX;
        for (size_t i = 0; i < nbf; i++) {
            unsigned b = u8(g);
            bf[i].opcode = b % 3;
            bf[i].ow = (b >> 2) % 3;
            bf[i].sign = (b >> 4) & 1;
            bf[i].bits = (uint8_t)(u8(g) % 66);
            bf[i].offset = offset(g, 300, PK_BITS_OFFSET_MAX);
            bf[i].arg = small(g);
        }
        return pk_bits_bitfield(t, PART, KEY(k), bf, nbf, NOW, res);
    case 5: /* INCRBYFLOAT */
        v = str(g);
        if (v.len == 0) {
            unsigned f = u8(g) % 8;
            v = (pk_slice){floats[f], strlen(floats[f])};
        }
        return pk_str_incrbyfloat(t, PART, KEY(k), KEY(v), NOW, &old);
    case 6: /* INCRBY */
        return pk_str_incrby(t, PART, KEY(k), small(g), NOW, &n);
    default: /* GETRANGE, GETBIT, BITCOUNT, BITPOS on what GET returns */
        rc = pk_str_get(t, PART, KEY(k), NOW, &v);
        if (rc == PK_ENOTFOUND) {
            return 0;
        }
        if (rc == 0) {
            const uint8_t *p = v.ptr;
            int64_t a = small(g), b = small(g), c, want = 0, first1 = -1;
            int isbit = u8(g) & 1;

            c = pk_bits_count(p, v.len, a, b, isbit);
            CHECK(c >= 0 && (uint64_t)c <= v.len * 8);
            c = pk_bits_pos(p, v.len, (int)(a & 1), a, b, (int)(b & 1), isbit);
            CHECK(c >= -1 && c <= (int64_t)(v.len * 8));
            (void)pk_bits_get(p, v.len, (uint64_t)a);
            /* The whole string against a naive count. */
            for (size_t i = 0; i < v.len * 8; i++) {
                int bit = p[i / 8] >> (7 - i % 8) & 1;
                want += bit;
                CHECK(pk_bits_get(p, v.len, i) == bit);
                if (bit && first1 < 0) {
                    first1 = (int64_t)i;
                }
            }
            CHECK(pk_bits_count(p, v.len, 0, -1, 0) == want);
            CHECK(pk_bits_count(p, v.len, 0, -1, 1) == want);
            CHECK(pk_bits_pos(p, v.len, 1, 0, -1, 0, 0) == first1);
        }
        return rc;
    }
}

static int op_set(pk_txn *t, prog *g, unsigned op, pk_slice k)
{
    pk_slice m[NMAX], ks[NMAX];
    pk_sscan_opts so = {NULL, 0, 0};
    uint64_t n = 0, cnt;
    size_t nm = 1 + u8(g) % NMAX;
    int moved, repeat;

    for (size_t i = 0; i < nm; i++) {
        m[i] = str(g);
        ks[i] = key_at(u8(g));
    }
    switch (op) {
    case 0:
        return pk_set_add(t, PART, KEY(k), nm, m, NOW, &n);
    case 1:
        return pk_set_rem(t, PART, KEY(k), nm, m, NOW, &n);
    case 2: /* SPOP; counts up to 2^64 - 1 take what there is */
        cnt = u8(g) == 0xff ? UINT64_MAX : u8(g) % 8;
        return pk_set_pop(t, PART, KEY(k), cnt, u16(g), NOW, count_m, &n, &n);
    case 3: /* SRANDMEMBER: distinct ones with any count, or draws */
        repeat = u8(g) & 1;
        cnt = !repeat && u8(g) == 0xff ? UINT64_MAX : u8(g) % 16;
        return pk_set_random(t, PART, KEY(k), cnt, repeat, u16(g), NOW, count_m,
                             &n);
    case 4: /* SINTER / SUNION / SDIFF [CARD LIMIT] */
        return pk_set_combine(t, PART, (pk_set_op)(1 + u8(g) % 3), nm, ks,
                              u8(g) % 4, NOW, count_m, &n, &cnt);
    case 5:
        return pk_set_store(t, PART, (pk_set_op)(1 + u8(g) % 3), KEY(k), nm, ks,
                            NOW, &n);
    case 6:
        return pk_set_move(t, PART, KEY(k), KEY(ks[0]), KEY(m[0]), NOW, &moved);
    default: /* SSCAN, the whole way, with a pattern */
        so.count = u8(g) % 4;
        if (u8(g) & 1) {
            so.match = m[0].ptr;
            so.match_len = m[0].len;
        }
        cnt = 0;
        do {
            int rc =
                pk_set_scan(t, PART, KEY(k), cnt, &so, NOW, count_m, &n, &cnt);
            if (rc != 0) {
                return rc;
            }
        } while (cnt != 0);
        return 0;
    }
}

static void lex_bound(prog *g, pk_zlex *b)
{
    pk_slice s = str(g);

    b->ptr = s.ptr;
    b->len = s.len;
    b->kind = (pk_zlex_kind)(u8(g) % 4);
}

static int op_zset(pk_txn *t, prog *g, unsigned op, pk_slice k)
{
    pk_slice m[NMAX], ks[NMAX];
    double sc[NMAX], w[NMAX];
    pk_zadd_result zr;
    pk_zrange r;
    pk_zop z;
    uint64_t n = 0;
    size_t nm = 1 + u8(g) % NMAX;
    unsigned b;

    for (size_t i = 0; i < nm; i++) {
        m[i] = str(g);
        sc[i] = scores[u8(g) % 16];
        w[i] = scores[u8(g) % 16];
        ks[i] = key_at(u8(g));
    }
    if (u8(g) == 0xff) {
        sc[0] = NAN;
    }
    memset(&r, 0, sizeof(r));
    b = u8(g);
    r.kind = (pk_zrange_kind)(b % 3);
    r.rev = (b >> 2) & 1;
    r.start = small(g);
    r.stop = small(g);
    r.smin = (pk_zbound){sc[0], (b >> 3) & 1};
    r.smax = (pk_zbound){sc[nm - 1], (b >> 4) & 1};
    lex_bound(g, &r.lmin);
    lex_bound(g, &r.lmax);
    r.offset = small(g);
    r.count = small(g);
    switch (op) {
    case 0: /* ZADD NX XX GT LT CH INCR */
        return pk_zset_add(t, PART, KEY(k), u8(g) & 63, (u8(g) & 1) ? 1 : nm,
                           sc, m, NOW, &zr);
    case 1:
        return pk_zset_rem(t, PART, KEY(k), nm, m, NOW, &n);
    case 2: /* ZPOPMIN / ZPOPMAX */
        b = u8(g);
        return pk_zset_pop(t, PART, KEY(k), b & 1,
                           (b & 2) ? UINT64_MAX : (b >> 2) % 8, NOW, count_z,
                           &n, &n);
    case 3: /* ZRANGE, ZCOUNT, ZRANK, ZRANDMEMBER */
        (void)pk_zset_count(t, PART, KEY(k), &r, NOW, &n);
        (void)pk_zset_rank(t, PART, KEY(k), KEY(m[0]), r.rev, NOW, &n, sc);
        (void)pk_zset_random(t, PART, KEY(k), u8(g) % 8, u8(g) & 1, u8(g), NOW,
                             count_z, &n);
        return pk_zset_range(t, PART, KEY(k), &r, NOW, count_z, &n);
    case 4:
        return pk_zset_remrange(t, PART, KEY(k), &r, NOW, &n);
    case 5:
        return pk_zset_rangestore(t, PART, KEY(k), KEY(ks[0]), &r, NOW, &n);
    case 6: /* ZUNION / ZINTER / ZDIFF [STORE], ZINTERCARD */
    default:
        b = u8(g);
        z = (pk_zop){(pk_zop_kind)(b % 3),
                     (pk_zagg)((b >> 2) % 3),
                     nm,
                     ks,
                     (b & 16) ? w : NULL,
                     (b >> 5)};
        if (op == 6) {
            (void)pk_zset_combine_card(t, PART, &z, NOW, &n);
            return pk_zset_combine(t, PART, &z, NOW, count_z, &n);
        }
        return pk_zset_combine_store(t, PART, KEY(k), &z, NOW, &n);
    }
}

static int op_hash(pk_txn *t, prog *g, unsigned op, pk_slice k)
{
    static const long double by[8] = {1.5L, -0.0L, 1e300L,   -1e4000L,
                                      0.1L, 3,     INFINITY, 1e-20L};
    pk_slice f[NMAX], v[NMAX], out;
    pk_scan_opts so;
    uint64_t n = 0, cur;
    size_t nf = 1 + u8(g) % NMAX;
    int64_t i;

    for (size_t j = 0; j < nf; j++) {
        f[j] = str(g);
        v[j] = str(g);
    }
    switch (op) {
    case 0:
        return pk_hmap_set(t, PART, KEY(k), nf, f, v, NOW, &n);
    case 1:
        return pk_hmap_del(t, PART, KEY(k), nf, f, NOW, &n);
    case 2:
        return pk_hmap_incrbyfloat(t, PART, KEY(k), KEY(f[0]), by[u8(g) % 8],
                                   NOW, &out);
    case 3:
        return pk_hmap_incrby(t, PART, KEY(k), KEY(f[0]), small(g), NOW, &i);
    default: /* HSCAN, then HRANDFIELD */
        memset(&so, 0, sizeof(so));
        so.count = u8(g) % 4;
        if (u8(g) & 1) {
            so.match = f[0].ptr;
            so.match_len = f[0].len;
        }
        cur = 0;
        do {
            int rc = pk_hmap_scan(t, PART, KEY(k), cur, &so, NOW, count_hv, &n,
                                  &cur);
            if (rc != 0) {
                return rc;
            }
        } while (cur != 0);
        return pk_hmap_random(t, PART, KEY(k), u8(g) % 8, u8(g) & 1, u8(g), NOW,
                              count_hv, &n);
    }
}

static int op_key(pk_txn *t, prog *g, unsigned op, pk_slice k)
{
    pk_slice dst = key_at(u8(g)), d;
    unsigned b = u8(g);
    uint32_t dpart = (b & 1) ? PART2 : PART;
    unsigned flags = (b & 2) ? PK_KEYOPS_REPLACE : 0;
    uint8_t *copy;
    int done, rc;

    switch (op) {
    case 0: /* COPY */
        return pk_key_copy(t, PART, KEY(k), dpart, KEY(dst), flags, NOW, &done);
    case 1: /* RENAME / RENAMENX */
        return pk_key_copy(t, PART, KEY(k), dpart, KEY(dst),
                           flags | PK_KEYOPS_MOVE, NOW, &done);
    case 2: /* DUMP, then RESTORE elsewhere (the payload is scratch) */
        rc = pk_key_dump(t, PART, KEY(k), NOW, &d);
        if (rc != 0) {
            return rc;
        }
        copy = malloc(d.len);
        CHECK(copy != NULL);
        memcpy(copy, d.ptr, d.len);
        rc = pk_key_restore(t, PART, KEY(dst), copy, d.len,
                            (b & 4) ? NOW + 1000 : 0, flags, NOW);
        CHECK(rc == 0 || rc == PK_EEXIST);
        free(copy);
        return rc;
    case 3:
        return pk_key_del(t, PART, KEY(k), NOW, &done);
    default: /* PEXPIREAT (in the past: a delete), PERSIST */
        if (b & 4) {
            return pk_key_persist(t, PART, KEY(k), NOW, &done);
        }
        return pk_key_expire(t, PART, KEY(k), (b & 8) ? NOW - 1 : NOW + 5000,
                             (b >> 4) & 15, NOW, &done);
    }
}

/* One operation: 0, a status, or an argument error; never sticky. */
static void step(pk_txn *t, prog *g)
{
    unsigned op = u8(g);
    pk_slice k = key_at(u8(g));
    uint64_t before = pk_txn_changes(t);
    int r;

    g->nbuf = 0;
    switch (op % 5) {
    case 0:
        r = op_string(t, g, (op / 5) % 8, k);
        break;
    case 1:
        r = op_set(t, g, (op / 5) % 8, k);
        break;
    case 2:
        r = op_zset(t, g, (op / 5) % 8, k);
        break;
    case 3:
        r = op_hash(t, g, (op / 5) % 5, k);
        break;
    default:
        r = op_key(t, g, (op / 5) % 5, k);
        break;
    }
    CHECK(r >= 0 || r == PK_ENOTFOUND || r == PK_EINVAL || r == PK_ERANGE ||
          r == PK_EEXIST);
    CHECK(pk_txn_error(t) == 0);
    CHECK(r == 0 || pk_txn_changes(t) == before);
}

/* The keys SCAN returns, copied. */
typedef struct keylist {
    struct {
        uint32_t part;
        char name[8];
        size_t len;
    } k[2 * NKEYS];
    size_t n;
} keylist;

static int scan_cb(void *ctx, uint32_t part, pk_slice key)
{
    keylist *l = ctx;

    CHECK(l->n < 2 * NKEYS && key.len <= 8);
    CHECK(part == PART || part == PART2);
    l->k[l->n].part = part;
    memcpy(l->k[l->n].name, key.ptr, key.len);
    l->k[l->n].len = key.len;
    l->n++;
    return 0;
}

/* The invariants of one key (see the file comment). */
static void check_key(pk_txn *t, uint32_t part, const char *key, size_t klen)
{
    pk_zbound lo = {-INFINITY, 0}, hi = {INFINITY, 0};
    pk_zlex lmin = {NULL, 0, PK_ZLEX_MIN}, lmax = {NULL, 0, PK_ZLEX_MAX};
    uint64_t card = 0, n = 0, m = 0;
    zwalk zw = {0, 0};
    pk_slice v, d;
    pk_type type;
    uint8_t *copy;

    CHECK(pk_key_type(t, part, key, klen, NOW, &type) == 0);
    switch (type) {
    case PK_TYPE_STRING:
        CHECK(pk_str_get(t, part, key, klen, NOW, &v) == 0);
        CHECK(pk_str_strlen(t, part, key, klen, NOW, &n) == 0 && n == v.len);
        break;
    case PK_TYPE_HASH:
        CHECK(pk_hmap_len(t, part, key, klen, NOW, &card) == 0 && card > 0);
        CHECK(pk_hmap_each(t, part, key, klen, NOW, count_hv, &n) == 0);
        CHECK(n == card);
        break;
    case PK_TYPE_SET:
        CHECK(pk_set_card(t, part, key, klen, NOW, &card) == 0 && card > 0);
        CHECK(pk_set_each(t, part, key, klen, NOW, count_m, &n) == 0);
        CHECK(n == card);
        break;
    case PK_TYPE_ZSET:
        CHECK(pk_zset_card(t, part, key, klen, NOW, &card) == 0 && card > 0);
        CHECK(pk_zset_range_rank(t, part, key, klen, 0, -1, 0, NOW, zwalk_cb,
                                 &zw) == 0);
        CHECK(zw.n == card);
        CHECK(pk_zset_range_score(t, part, key, klen, &lo, &hi, 1, 0, -1, NOW,
                                  count_z, &n) == 0);
        CHECK(n == card);
        CHECK(pk_zset_range_lex(t, part, key, klen, &lmin, &lmax, 0, 0, -1, NOW,
                                count_z, &m) == 0);
        CHECK(m == card);
        break;
    default:
        CHECK(0); /* lists are not written by this program */
    }
    /* Whatever the store wrote, its DUMP is a payload RESTORE takes. */
    CHECK(pk_key_dump(t, part, key, klen, NOW, &d) == 0);
    copy = malloc(d.len);
    CHECK(copy != NULL);
    memcpy(copy, d.ptr, d.len);
    CHECK(pk_key_restore(t, part, "dumpcheck", 9, copy, d.len, 0,
                         PK_KEYOPS_REPLACE, NOW) == 0);
    CHECK(pk_key_del(t, part, "dumpcheck", 9, NOW, &(int){0}) == 0);
    free(copy);
}

static void check_all(pk_txn *t)
{
    pk_scan_opts so;
    pk_part_stats a, b;
    keylist l;
    uint64_t cur = 0, dbsize = 0;

    memset(&so, 0, sizeof(so));
    l.n = 0;
    do {
        CHECK(pk_store_scan(t, cur, &so, NOW, scan_cb, &l, &cur) == 0);
    } while (cur != 0);
    CHECK(pk_store_part_stats(t, PART, &a) == 0);
    CHECK(pk_store_part_stats(t, PART2, &b) == 0);
    CHECK(a.keys + b.keys == l.n);
    CHECK(pk_store_dbsize(t, &dbsize) == 0 && dbsize == l.n);
    for (size_t i = 0; i < l.n; i++) {
        check_key(t, l.k[i].part, l.k[i].name, l.k[i].len);
    }
    CHECK(pk_txn_error(t) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_store *s;
    pk_txn *t = NULL;
    prog g = {data, size, 0, {{0}}, 0};
    int fresh, steps = 0;

    s = fuzz_store_get(&fresh);
    CHECK(pk_txn_begin(s, 0, &t) == 0);
    while (g.off < g.n && steps++ < 64) {
        step(t, &g);
    }
    check_all(t);
    pk_txn_abort(t);
    return 0;
}

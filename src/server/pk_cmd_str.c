/*
 * String commands beyond GET/MGET/MSET/INCR/APPEND (pk_cmd_kv.c): SET and
 * its forms (SETNX SETEX PSETEX GETSET), GETEX, MSETNX, INCRBYFLOAT,
 * SETRANGE, GETRANGE (SUBSTR), LCS.  Bit commands are in pk_cmd_bits.c.
 *
 * Arguments are checked in the order Redis 7.0 checks them, because that
 * order decides which error a malformed command gets: syntax first, then
 * the key's type, then numbers that Redis parses after its lookup.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_str.h"

/* Option flags of SET and GETEX, as Redis's parser tracks them. */
#define OPT_NX 0x01u
#define OPT_XX 0x02u
#define OPT_GET 0x04u
#define OPT_KEEPTTL 0x08u
#define OPT_PERSIST 0x10u
#define OPT_EX 0x20u
#define OPT_PX 0x40u
#define OPT_EXAT 0x80u
#define OPT_PXAT 0x100u
#define OPT_TIMES (OPT_EX | OPT_PX | OPT_EXAT | OPT_PXAT)

/* SET's and GETEX's options, parsed but for the expiry's number. */
typedef struct str_opts {
    unsigned flags;
    const pk_arg *expire; /* the EX/PX/EXAT/PXAT argument, or NULL */
} str_opts;

/*
 * Parses the options from argv[first] (SET: 3, GETEX: 2) as Redis's
 * parseExtendedStringArgumentsOrReply does: an option may repeat, a time
 * excludes the other times, KEEPTTL and PERSIST.  0 after a syntax error.
 */
static int str_options(pk_cmd_ctx *x, int first, int is_set, str_opts *o)
{
    static const struct {
        const char *name;
        unsigned flag;
    } times[] = {
        {"ex", OPT_EX}, {"px", OPT_PX}, {"exat", OPT_EXAT}, {"pxat", OPT_PXAT}};

    memset(o, 0, sizeof(*o));
    for (int i = first; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        unsigned f = 0;
        for (size_t k = 0; k < sizeof(times) / sizeof(times[0]); k++)
            if (pk_arg_eq(a, times[k].name))
                f = times[k].flag;
        if (f != 0) {
            if ((o->flags & (OPT_TIMES & ~f)) ||
                (o->flags & (OPT_KEEPTTL | OPT_PERSIST)) || i + 1 >= x->argc)
                goto syntax;
            o->flags |= f;
            o->expire = &x->argv[++i];
        } else if (is_set && pk_arg_eq(a, "nx") && !(o->flags & OPT_XX))
            o->flags |= OPT_NX;
        else if (is_set && pk_arg_eq(a, "xx") && !(o->flags & OPT_NX))
            o->flags |= OPT_XX;
        else if (is_set && pk_arg_eq(a, "get"))
            o->flags |= OPT_GET;
        else if (is_set && pk_arg_eq(a, "keepttl") && !(o->flags & OPT_TIMES))
            o->flags |= OPT_KEEPTTL;
        else if (!is_set && pk_arg_eq(a, "persist") && !(o->flags & OPT_TIMES))
            o->flags |= OPT_PERSIST;
        else
            goto syntax;
    }
    return 1;
syntax:
    pk_reply_syntax(x);
    return 0;
}

/*
 * The absolute expiry in ms that a's number means (relative for EX/PX,
 * seconds for EX/EXAT), checked as Redis's getExpireMillisecondsOrReply
 * does; 0 after replying an error naming command cmd.
 */
static int expire_ms(pk_cmd_ctx *x, const pk_arg *a, unsigned flag,
                     const char *cmd, uint64_t *out)
{
    int64_t v, now = (int64_t)NOW(x);
    int secs = flag == OPT_EX || flag == OPT_EXAT;

    if (!pk_arg_i64(a, &v)) {
        pk_reply_notint(x);
        return 0;
    }
    if (v <= 0 || (secs && v > INT64_MAX / 1000))
        goto bad;
    v *= secs ? 1000 : 1;
    if (flag == OPT_EX || flag == OPT_PX) {
        if (v > INT64_MAX - now)
            goto bad;
        v += now;
    }
    *out = (uint64_t)v;
    return 1;
bad:
    pk_reply_errorf(x->out, "ERR invalid expire time in '%s' command", cmd);
    return 0;
}

/*
 * The SET family: key at 1, value at argument val; replies "OK"/nil, or
 * the old value with OPT_GET, or ok/abort integers for SETNX (ok >= 0).
 */
static void set_generic(pk_cmd_ctx *x, int val, const str_opts *so,
                        const char *cmd, int64_t ok, int64_t abort)
{
    pk_set_opts o = {0, 0};
    pk_slice old = {NULL, 0};
    int done = 0, rc;

    if (so->expire &&
        !expire_ms(x, so->expire, so->flags & OPT_TIMES, cmd, &o.expire_at))
        return;
    o.flags = ((so->flags & OPT_NX) ? PK_SET_NX : 0) |
              ((so->flags & OPT_XX) ? PK_SET_XX : 0) |
              ((so->flags & OPT_GET) ? PK_SET_GET : 0) |
              ((so->flags & OPT_KEEPTTL) ? PK_SET_KEEPTTL : 0);
    TXN_OR_RETURN(x, t);
    rc = pk_str_set(t, PK_KEY(x, 1), x->argv[val].ptr, x->argv[val].len, &o,
                    NOW(x), &done, &old);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (o.flags & PK_SET_GET)
        pk_reply_slice(x, old);
    else if (ok >= 0)
        pk_reply_int(x->out, done ? ok : abort);
    else if (done)
        pk_reply_simple(x->out, "OK");
    else
        pk_reply_null(x->out, x->proto);
}

void pk_cmd_set(pk_cmd_ctx *x)
{
    str_opts o;

    if (str_options(x, 3, 1, &o))
        set_generic(x, 2, &o, "set", -1, -1);
}

void pk_cmd_setnx(pk_cmd_ctx *x)
{
    str_opts o = {OPT_NX, NULL};

    set_generic(x, 2, &o, "setnx", 1, 0);
}

void pk_cmd_setex(pk_cmd_ctx *x)
{
    str_opts o = {OPT_EX, &x->argv[2]};

    set_generic(x, 3, &o, "setex", -1, -1);
}

void pk_cmd_psetex(pk_cmd_ctx *x)
{
    str_opts o = {OPT_PX, &x->argv[2]};

    set_generic(x, 3, &o, "psetex", -1, -1);
}

void pk_cmd_getset(pk_cmd_ctx *x)
{
    str_opts o = {OPT_GET, NULL};

    set_generic(x, 2, &o, "getset", -1, -1);
}

void pk_cmd_getex(pk_cmd_ctx *x)
{
    uint64_t at = 0;
    pk_slice v;
    str_opts o;
    int rc, mode;

    if (!str_options(x, 2, 0, &o))
        return;
    TXN_OR_RETURN(x, t);
    /* Redis looks the key up before it reads the expiry's number. */
    rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), &v);
    if (rc != PK_OK || !(o.flags & (OPT_TIMES | OPT_PERSIST))) {
        pk_reply_value(x, rc, v);
        return;
    }
    if (o.expire && !expire_ms(x, o.expire, o.flags & OPT_TIMES, "getex", &at))
        return;
    mode = o.expire ? PK_GETEX_AT : PK_GETEX_PERSIST;
    rc = pk_str_getex(t, PK_KEY(x, 1), mode, at, NOW(x), &v);
    pk_reply_value(x, rc, v);
}

void pk_cmd_msetnx(pk_cmd_ctx *x)
{
    pk_slice *kv;
    uint32_t *parts;
    int done = 0, rc;

    if (x->argc % 2 == 0) {
        pk_reply_error(x->out,
                       "ERR wrong number of arguments for 'msetnx' command");
        return;
    }
    TXN_OR_RETURN(x, t);
    /* argc is bounded by the request already in memory. */
    kv = malloc(sizeof(*kv) * (size_t)(x->argc - 1));
    parts = malloc(sizeof(*parts) * (size_t)(x->argc / 2));
    if (kv == NULL || parts == NULL) {
        free(kv);
        free(parts);
        pk_cmd_store_error(x, PK_ENOMEM);
        return;
    }
    for (int i = 1; i < x->argc; i++)
        kv[i - 1] = (pk_slice){x->argv[i].ptr, x->argv[i].len};
    for (int i = 1; i < x->argc; i += 2)
        parts[i / 2] = pk_cmd_part(x, i);
    rc = pk_str_msetnx(t, parts, kv, (size_t)(x->argc - 1) / 2, NOW(x), &done);
    free(kv);
    free(parts);
    pk_reply_int_rc(x, rc, done);
}

void pk_cmd_incrbyfloat(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice v;
    int rc = pk_str_incrbyfloat(t, PK_KEY(x, 1), x->argv[2].ptr, x->argv[2].len,
                                NOW(x), &v);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_bulk(x->out, v.ptr, v.len);
}

void pk_cmd_setrange(pk_cmd_ctx *x)
{
    int64_t off;
    uint64_t len;
    int rc;

    if (!pk_arg_i64(&x->argv[2], &off)) {
        pk_reply_notint(x);
        return;
    }
    if (off < 0) {
        pk_reply_error(x->out, "ERR offset is out of range");
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_str_setrange(t, PK_KEY(x, 1), (uint64_t)off, x->argv[3].ptr,
                         x->argv[3].len, NOW(x), &len);
    pk_reply_int_rc(x, rc, (int64_t)len);
}

/* GETRANGE and SUBSTR key start end (inclusive, negative from the end). */
void pk_cmd_getrange(pk_cmd_ctx *x)
{
    int64_t start, end, n;
    pk_slice v = {NULL, 0};
    int rc;

    if (!pk_arg_i64(&x->argv[2], &start) || !pk_arg_i64(&x->argv[3], &end)) {
        pk_reply_notint(x);
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), &v);
    if (rc != PK_OK && rc != PK_ENOTFOUND) {
        pk_cmd_store_error(x, rc);
        return;
    }
    n = (int64_t)v.len;
    if (start < 0 && end < 0 && start > end) {
        pk_reply_bulk(x->out, "", 0);
        return;
    }
    start = start < 0 ? (start < -n ? 0 : n + start) : start;
    end = end < 0 ? (end < -n ? 0 : n + end) : end;
    if (end >= n)
        end = n - 1;
    if (start > end || n == 0)
        pk_reply_bulk(x->out, "", 0);
    else
        pk_reply_bulk(x->out, (const char *)v.ptr + start,
                      (size_t)(end - start + 1));
}

/* LCS's options. */
typedef struct lcs_opts {
    int len, idx, withlen;
    int64_t minlen;
} lcs_opts;

/* The LCS table entry for prefixes a[0..i) and b[0..j). */
#define LCS(i, j) tab[(size_t)(j) + (size_t)(i) * (blen + 1)]

/*
 * Writes LCS's IDX reply (RESP2: array "matches" [...] "len" n), walking
 * the table back from the end as Redis does: a run of matches grows while
 * both strings go back together and is emitted when it breaks or reaches
 * the start of either string.
 */
static void lcs_reply_idx(pk_cmd_ctx *x, const uint8_t *a, const uint8_t *b,
                          size_t alen, size_t blen, const uint32_t *tab,
                          const lcs_opts *o)
{
    size_t i = alen, j = blen, pos, n = 0, as = 0, ae = 0, bs = 0;
    int open = 0;

    pk_reply_map(x->out, x->proto, 2);
    pk_reply_bulk_str(x->out, "matches");
    pk_reply_defer(x->out, &pos);
    while (i > 0 && j > 0) {
        int emit;
        if (a[i - 1] == b[j - 1]) {
            /* After a match the next one is always contiguous: a gap
             * passes through the other branch, which closes the run. */
            if (!open)
                open = 1, as = ae = i - 1, bs = j - 1;
            else
                as--, bs--;
            emit = as == 0 || bs == 0;
            i--, j--;
        } else {
            if (LCS(i - 1, j) > LCS(i, j - 1))
                i--;
            else
                j--;
            emit = open;
        }
        if (!emit)
            continue;
        open = 0;
        if (o->minlen > 0 && (int64_t)(ae - as + 1) < o->minlen)
            continue;
        pk_reply_array(x->out, 2 + (size_t)o->withlen);
        pk_reply_array(x->out, 2);
        pk_reply_int(x->out, (int64_t)as);
        pk_reply_int(x->out, (int64_t)ae);
        pk_reply_array(x->out, 2);
        pk_reply_int(x->out, (int64_t)bs);
        pk_reply_int(x->out, (int64_t)(bs + ae - as));
        if (o->withlen)
            pk_reply_int(x->out, (int64_t)(ae - as + 1));
        n++;
    }
    pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY, n);
    pk_reply_bulk_str(x->out, "len");
    pk_reply_int(x->out, LCS(alen, blen));
}

/* The LCS string itself, read back from the table into out. */
static void lcs_string(const uint8_t *a, const uint8_t *b, size_t alen,
                       size_t blen, const uint32_t *tab, uint8_t *out)
{
    size_t i = alen, j = blen, k = LCS(alen, blen);

    while (i > 0 && j > 0) {
        if (a[i - 1] == b[j - 1])
            out[--k] = a[i - 1], i--, j--;
        else if (LCS(i - 1, j) > LCS(i, j - 1))
            i--;
        else
            j--;
    }
}

/* LCS's options from argument 3; 0 after replying an error. */
static int lcs_options(pk_cmd_ctx *x, lcs_opts *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = 3; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        if (pk_arg_eq(a, "idx"))
            o->idx = 1;
        else if (pk_arg_eq(a, "len"))
            o->len = 1;
        else if (pk_arg_eq(a, "withmatchlen"))
            o->withlen = 1;
        else if (pk_arg_eq(a, "minmatchlen") && i + 1 < x->argc) {
            if (!pk_arg_i64(&x->argv[++i], &o->minlen)) {
                pk_reply_notint(x);
                return 0;
            }
            if (o->minlen < 0)
                o->minlen = 0;
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    if (o->len && o->idx) {
        pk_reply_error(x->out, "ERR If you want both the length and indexes, "
                               "please just use IDX.");
        return 0;
    }
    return 1;
}

void pk_cmd_lcs(pk_cmd_ctx *x)
{
    pk_slice a = {NULL, 0}, b = {NULL, 0};
    uint32_t *tab;
    size_t alen, blen;
    uint64_t cells;
    lcs_opts o;
    int ra, rb;

    TXN_OR_RETURN(x, t);
    ra = pk_str_get(t, PK_KEY(x, 1), NOW(x), &a);
    rb = pk_str_get(t, PK_KEY(x, 2), NOW(x), &b);
    /* The second read may have settled the partition, moving the map's
     * pages under a; a third read writes nothing. */
    if (ra == PK_OK)
        ra = pk_str_get(t, PK_KEY(x, 1), NOW(x), &a);
    if (ra == PK_STORE_WRONGTYPE || rb == PK_STORE_WRONGTYPE) {
        pk_reply_error(x->out,
                       "ERR The specified keys must contain string values");
        return;
    }
    if ((ra != PK_OK && ra != PK_ENOTFOUND) ||
        (rb != PK_OK && rb != PK_ENOTFOUND)) {
        pk_cmd_store_error(x, ra != PK_OK && ra != PK_ENOTFOUND ? ra : rb);
        return;
    }
    if (!lcs_options(x, &o))
        return;
    alen = ra == PK_OK ? a.len : 0;
    blen = rb == PK_OK ? b.len : 0;
    /* Redis's bound on the table: proto-max-bulk-len bytes. */
    cells = (uint64_t)(alen + 1) * (blen + 1);
    if (cells > PK_STORE_VALUE_MAX / sizeof(uint32_t)) {
        pk_reply_error(x->out, "ERR Insufficient memory, transient memory for "
                               "LCS exceeds proto-max-bulk-len");
        return;
    }
    tab = malloc((size_t)cells * sizeof(*tab));
    if (tab == NULL) {
        pk_reply_error(x->out, "ERR Insufficient memory, failed allocating "
                               "transient memory for LCS");
        return;
    }
    const uint8_t *pa = a.ptr, *pb = b.ptr;
    for (size_t i = 0; i <= alen; i++)
        for (size_t j = 0; j <= blen; j++) {
            if (i == 0 || j == 0)
                LCS(i, j) = 0;
            else if (pa[i - 1] == pb[j - 1])
                LCS(i, j) = LCS(i - 1, j - 1) + 1;
            else
                LCS(i, j) = LCS(i - 1, j) > LCS(i, j - 1) ? LCS(i - 1, j)
                                                          : LCS(i, j - 1);
        }
    if (o.idx) {
        lcs_reply_idx(x, pa, pb, alen, blen, tab, &o);
    } else if (o.len) {
        pk_reply_int(x->out, LCS(alen, blen));
    } else {
        uint8_t *s = malloc((size_t)LCS(alen, blen) + 1);
        if (s == NULL) {
            pk_cmd_store_error(x, PK_ENOMEM);
        } else {
            lcs_string(pa, pb, alen, blen, tab, s);
            pk_reply_bulk(x->out, s, LCS(alen, blen));
            free(s);
        }
    }
    free(tab);
}

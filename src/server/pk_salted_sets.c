/*
 * pk_salted_sets: salted sets and HyperLogLogs (see pk_salted.h) -- the
 * reads that merge every part, SREM on every part, and the fold's take
 * and add of a set or HLL part.  SADD and PFADD go to one random part by
 * pk_salted.c's write path, like a counter's local write.
 *
 *   SISMEMBER SMISMEMBER   SMISMEMBER of every part, OR-ed
 *   SMEMBERS SCARD         SMEMBERS of every part; their union, or its
 *                          exact size (members sorted, duplicates dropped)
 *   SREM                   SREM of every part; with one member the reply
 *                          is whether a part held it, with more the
 *                          members some part held, read first (SMISMEMBER)
 *   PFCOUNT key            GET of every part's raw value, registers merged
 *                          by max: exactly the registers of one HLL that
 *                          got every PFADD, so the same count
 *   EXISTS TYPE            EXISTS of every part
 *
 * A read asks parts 1..n-1 first and part 0 last, as a counter's read
 * does: a fold only moves members or registers from a part into part 0,
 * so what a part held is seen in it or, later, in part 0.  Union and
 * register max are idempotent, so a part folded but not yet dropped does
 * no harm and these reads need no fold markers.  A part's members travel
 * in one reply (at most 1,048,576 of them, the link's reader limit).
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"
#include "proto/pk_rreply.h"
#include "server/pk_ctx.h"
#include "server/pk_salted_int.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_set.h"
#include "store/pk_str.h"

/* What an operation answers its client. */
enum {
    U_MEMBERS,   /* SMEMBERS: the union */
    U_CARD,      /* SCARD: the union's size */
    U_ISMEMBER,  /* SISMEMBER */
    U_MISMEMBER, /* SMISMEMBER */
    U_EXISTS,    /* EXISTS key */
    U_TYPE,      /* TYPE */
    U_PFCOUNT,   /* PFCOUNT key */
    U_SREM,      /* SREM */
};

/* Phases: the reads of parts 1..n-1, then part 0, then (SREM) the
 * removal from every part. */
enum { UP_PARTS, UP_BASE, UP_SREM };

typedef struct ucall {
    pk_uop *op;
    int idx;
} ucall;

struct pk_uop {
    pk_server *s;
    pk_conn *c; /* NULL once the client went away */
    int want, phase, pending;
    pk_salt e; /* the entry when it started; e.key -> key */
    uint8_t key[PK_SALT_KEY_MAX];
    char *err;    /* first error, owned */
    pk_arg *args; /* the members asked, owned (one allocation) */
    int nargs;
    uint8_t *is;  /* per member asked: some part holds it; owned */
    int any;      /* EXISTS: some part exists */
    int removed;  /* SREM of one member: some part held it */
    uint8_t *mem; /* SMEMBERS read: u32 length, bytes, ...; owned */
    size_t mlen, mcap;
    size_t nmem;
    uint8_t *reg, *tmp; /* PFCOUNT: merged and one part's registers */
    ucall calls[PK_SALT_PARTS_MAX];
    pk_uop *next;
};

static void u_free(pk_uop *op)
{
    for (pk_uop **pp = pk__salted_uops(op->s); *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    free(op->err);
    free(op->args);
    free(op->is);
    free(op->mem);
    free(op->reg);
    free(op->tmp);
    free(op);
}

static void u_fail(pk_uop *op, const char *err)
{
    /* A part's leader with a newer map (MOVED), or one whose map has the
     * key folding (SALTFOLD, to SREM): the client tries again. */
    if (strncmp(err, "MOVED", 5) == 0 || strncmp(err, "SALTFOLD", 8) == 0)
        err = "TRYAGAIN the salted key is moving or changing; retry";
    if (op->err == NULL)
        op->err = strdup(err ? err : "ERR out of memory");
}

static void on_u_reply(void *ctx, const pk_rr *r, const char *err);

/* Sends cmd of part idx, with the members asked when args. */
static void u_send(pk_uop *op, int idx, const char *cmd, int args)
{
    uint8_t name[PK__SALT_NAME_CAP];
    int argc = 2 + (args ? op->nargs : 0), rc = PK_ENOMEM;
    const char **argv = malloc((size_t)argc * sizeof(*argv));
    size_t *lens = malloc((size_t)argc * sizeof(*lens));

    if (argv && lens) {
        argv[0] = cmd;
        lens[0] = strlen(cmd);
        argv[1] = (const char *)name;
        lens[1] = pk__salted_part_name(&op->e, idx, name);
        for (int k = 2; k < argc; k++) {
            argv[k] = op->args[k - 2].ptr;
            lens[k] = op->args[k - 2].len;
        }
        op->calls[idx] = (ucall){op, idx};
        rc = lens[1] ? pk__salted_send(op->s, argc, argv, lens, on_u_reply,
                                       &op->calls[idx])
                     : PK_ERANGE;
    }
    free(argv);
    free(lens);
    if (rc == PK_OK)
        op->pending++;
    else
        u_fail(op, "ERR a part of the salted key is not reachable");
}

/* The read command of each part for op->want. */
static void u_read(pk_uop *op, int idx)
{
    switch (op->want) {
    case U_MEMBERS:
    case U_CARD:
        u_send(op, idx, "SMEMBERS", 0);
        break;
    case U_EXISTS:
    case U_TYPE:
        u_send(op, idx, "EXISTS", 0);
        break;
    case U_PFCOUNT:
        u_send(op, idx, "GET", 0);
        break;
    default: /* SISMEMBER SMISMEMBER SREM */
        u_send(op, idx, "SMISMEMBER", 1);
        break;
    }
}

/* The next phase's calls sent: 1, or 0 when op is done. */
static int u_next(pk_uop *op)
{
    if (op->phase == UP_PARTS) {
        op->phase = UP_BASE;
        u_read(op, 0);
    } else if (op->phase == UP_BASE && op->want == U_SREM) {
        op->phase = UP_SREM;
        for (int i = 0; i < op->e.n; i++)
            u_send(op, i, "SREM", 1);
    }
    return op->pending > 0;
}

static int mem_add(pk_uop *op, const char *p, size_t len)
{
    uint32_t n = (uint32_t)len;

    if (op->mlen + 4 + len > op->mcap) {
        size_t cap = op->mcap ? op->mcap : 4096;
        uint8_t *m;
        while (cap < op->mlen + 4 + len)
            cap *= 2;
        if ((m = realloc(op->mem, cap)) == NULL)
            return PK_ENOMEM;
        op->mem = m;
        op->mcap = cap;
    }
    memcpy(op->mem + op->mlen, &n, 4);
    memcpy(op->mem + op->mlen + 4, p, len);
    op->mlen += 4 + len;
    op->nmem++;
    return PK_OK;
}

/* Takes in one part's reply. */
static void u_take(pk_uop *op, const pk_rr *r)
{
    int aggr = r->type == PK_RR_ARRAY || r->type == PK_RR_SET;

    if (op->phase == UP_SREM && r->type == PK_RR_INT) {
        op->removed |= r->integer > 0;
    } else if ((op->want == U_MEMBERS || op->want == U_CARD) && aggr) {
        for (size_t k = 0; k < r->n; k++)
            if (mem_add(op, r->elems[k].str, r->elems[k].len) != PK_OK)
                u_fail(op, "ERR out of memory");
    } else if ((op->want == U_EXISTS || op->want == U_TYPE) &&
               r->type == PK_RR_INT) {
        op->any |= r->integer > 0;
    } else if (op->want == U_PFCOUNT && r->type == PK_RR_NIL) {
        return; /* a part not written yet */
    } else if (op->want == U_PFCOUNT && r->type == PK_RR_BULK) {
        int rc = pk_hll_decode((const uint8_t *)r->str, r->len, op->tmp);
        if (rc == PK_OK)
            pk_hll_merge(op->reg, op->tmp);
        else
            u_fail(op, rc == PK_ECORRUPT ? "INVALIDOBJ Corrupted HLL object "
                                           "detected"
                                         : "WRONGTYPE Key is not a valid "
                                           "HyperLogLog string value.");
    } else if (aggr && r->n == (size_t)op->nargs && op->is) {
        for (size_t k = 0; k < r->n; k++)
            op->is[k] |=
                r->elems[k].type == PK_RR_INT && r->elems[k].integer > 0;
    } else {
        u_fail(op, "ERR unexpected reply from a part of the salted key");
    }
}

/* Byte order, as the store keeps a set's members. */
static int cmp_bytes(const uint8_t *a, uint32_t al, const uint8_t *b,
                     uint32_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);

    return c ? c : (al > bl) - (al < bl);
}

static int cmp_mem(const void *x, const void *y)
{
    const uint8_t *a = *(const uint8_t *const *)x;
    const uint8_t *b = *(const uint8_t *const *)y;
    uint32_t al, bl;

    memcpy(&al, a, 4);
    memcpy(&bl, b, 4);
    return cmp_bytes(a + 4, al, b + 4, bl);
}

static int cmp_arg(const void *x, const void *y)
{
    const pk_arg *a = *(const pk_arg *const *)x;
    const pk_arg *b = *(const pk_arg *const *)y;

    return cmp_bytes((const uint8_t *)a->ptr, (uint32_t)a->len,
                     (const uint8_t *)b->ptr, (uint32_t)b->len);
}

/* The union read: members sorted, duplicates dropped; replied as the want
 * says (SMEMBERS: the members, SCARD: how many). */
static void reply_union(pk_uop *op, pk_obuf *out)
{
    const uint8_t **v = malloc((op->nmem ? op->nmem : 1) * sizeof(*v));
    size_t n = 0;

    if (v == NULL) {
        pk_reply_error(out, "ERR out of memory");
        return;
    }
    for (size_t at = 0, k = 0; k < op->nmem; k++) {
        uint32_t len;
        v[k] = op->mem + at;
        memcpy(&len, op->mem + at, 4);
        at += 4 + len;
    }
    qsort(v, op->nmem, sizeof(*v), cmp_mem);
    for (size_t k = 0; k < op->nmem; k++)
        if (n == 0 || cmp_mem(&v[n - 1], &v[k]) != 0)
            v[n++] = v[k];
    if (op->want == U_CARD) {
        pk_reply_int(out, (int64_t)n);
    } else {
        pk_reply_set(out, op->c->proto, n);
        for (size_t k = 0; k < n; k++) {
            uint32_t len;
            memcpy(&len, v[k], 4);
            pk_reply_bulk(out, v[k] + 4, len);
        }
    }
    free(v);
}

/* SREM of several members: how many distinct ones some part held. */
static int64_t removed_many(const pk_uop *op)
{
    const pk_arg **v = malloc((size_t)op->nargs * sizeof(*v));
    int64_t n = 0;
    int k, m = 0;

    if (v == NULL)
        return -1;
    for (k = 0; k < op->nargs; k++)
        if (op->is[k])
            v[m++] = &op->args[k];
    qsort(v, (size_t)m, sizeof(*v), cmp_arg);
    for (k = 0; k < m; k++)
        n += k == 0 || cmp_arg(&v[k - 1], &v[k]) != 0;
    free(v);
    return n;
}

/* What TYPE says of a salted key that exists. */
static const char *type_name(const pk_salt *e)
{
    switch (pk__salted_kind(e)) {
    case PK_SALT_SET:
        return "set";
    case PK_SALT_HASH:
        return "hash";
    case PK_SALT_ZSET:
        return "zset";
    default:
        return "string";
    }
}

static void u_reply(pk_uop *op, pk_obuf *out)
{
    int64_t n;

    switch (op->want) {
    case U_MEMBERS:
    case U_CARD:
        reply_union(op, out);
        break;
    case U_ISMEMBER:
        pk_reply_int(out, op->is[0]);
        break;
    case U_MISMEMBER:
        pk_reply_array(out, (size_t)op->nargs);
        for (int k = 0; k < op->nargs; k++)
            pk_reply_int(out, op->is[k]);
        break;
    case U_EXISTS:
        pk_reply_int(out, op->any);
        break;
    case U_TYPE:
        pk_reply_simple(out, !op->any ? "none" : type_name(&op->e));
        break;
    case U_PFCOUNT:
        pk_reply_int(out, (int64_t)pk_hll_count(op->reg));
        break;
    default: /* U_SREM */
        n = op->nargs == 1 ? op->removed : removed_many(op);
        if (n < 0)
            pk_reply_error(out, "ERR out of memory");
        else
            pk_reply_int(out, n);
        break;
    }
}

/* Answers the client (if still there) and frees op. */
static void u_finish(pk_uop *op)
{
    pk_conn *c = op->c;

    if (c) {
        if (op->err)
            pk_reply_error(&c->out, op->err);
        else
            u_reply(op, &c->out);
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
    u_free(op);
}

static void on_u_reply(void *ctx, const pk_rr *r, const char *err)
{
    ucall *call = ctx;
    pk_uop *op = call->op;

    op->pending--;
    if (err == NULL && r->type == PK_RR_ERROR)
        err = r->str;
    if (err)
        u_fail(op, err);
    else
        u_take(op, r);
    if (op->pending > 0 || (!op->err && u_next(op)))
        return;
    u_finish(op);
}

static pk_uop *u_new(pk_cmd_ctx *x, const pk_salt *e, int want)
{
    pk_uop *op = calloc(1, sizeof(*op));
    int members = want == U_ISMEMBER || want == U_MISMEMBER || want == U_SREM;

    if (op == NULL)
        return NULL;
    op->s = x->srv;
    op->want = want;
    pk__salted_own_entry(&op->e, op->key, e);
    if (members) {
        op->nargs = x->argc - 2;
        op->args = pk_conn_args_copy(op->nargs, x->argv + 2);
        op->is = calloc((size_t)op->nargs, 1);
    }
    if (want == U_PFCOUNT) {
        op->reg = calloc(PK_HLL_REGS, 1);
        op->tmp = malloc(PK_HLL_REGS);
    }
    if ((members && (op->args == NULL || op->is == NULL)) ||
        (want == U_PFCOUNT && (op->reg == NULL || op->tmp == NULL))) {
        u_free(op);
        return NULL;
    }
    return op;
}

static int u_start(pk_cmd_ctx *x, const pk_salt *e, int want)
{
    pk_uop **ops = pk__salted_uops(x->srv);
    pk_uop *op = u_new(x, e, want);

    if (op == NULL) {
        pk_reply_error(x->out, "ERR out of memory");
        return 0;
    }
    /* Listed first: u_free unlinks it, also when nothing went out. */
    op->next = *ops;
    *ops = op;
    if (want == U_SREM && op->nargs == 1) {
        op->phase = UP_SREM; /* its own reply says whether it was there */
        for (int i = 0; i < e->n; i++)
            u_send(op, i, "SREM", 1);
    } else {
        op->phase = UP_PARTS;
        for (int i = 1; i < e->n; i++)
            u_read(op, i);
    }
    if (op->pending == 0) {
        pk_reply_error(x->out, op->err ? op->err
                                       : "ERR the salted key's parts are "
                                         "not reachable");
        u_free(op);
        return 0;
    }
    op->c = x->c;
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--; /* its reply comes when the parts have answered */
    return 0;
}

int pk__salted_sets_route(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e)
{
    pk_salt_kind kind = pk__salted_kind(e);
    const char *n = cmd->name;
    int want = -1;

    if (strcmp(n, "exists") == 0 && x->argc == 2)
        want = U_EXISTS;
    else if (strcmp(n, "type") == 0)
        want = U_TYPE;
    else if (kind == PK_SALT_SET && strcmp(n, "smembers") == 0)
        want = U_MEMBERS;
    else if (kind == PK_SALT_SET && strcmp(n, "scard") == 0)
        want = U_CARD;
    else if (kind == PK_SALT_SET && strcmp(n, "sismember") == 0)
        want = U_ISMEMBER;
    else if (kind == PK_SALT_SET && strcmp(n, "smismember") == 0)
        want = U_MISMEMBER;
    /* Folding, a part's members may be on their way into part 0: SREM
     * waits for the fold rather than miss them there. */
    else if (kind == PK_SALT_SET && strcmp(n, "srem") == 0 &&
             e->state == PK_SALT_SALTED)
        want = U_SREM;
    else if (kind == PK_SALT_HLL && strcmp(n, "pfcount") == 0 && x->argc == 2)
        want = U_PFCOUNT;
    return want < 0 ? 1 : u_start(x, e, want);
}

void pk__salted_sets_forget(pk_server *s, pk_conn *c)
{
    for (pk_uop *op = *pk__salted_uops(s); op; op = op->next)
        if (op->c == c)
            op->c = NULL;
}

void pk__salted_sets_free(pk_server *s)
{
    pk_uop **ops = pk__salted_uops(s);

    while (*ops)
        u_free(*ops);
}

/* ---- folding ----------------------------------------------------------- */

/* Members gathered for PK.SALTTAKE's reply, counted. */
typedef struct take_buf {
    pk_obuf buf;
    size_t n;
} take_buf;

static int take_cb(void *ctx, pk_slice mem)
{
    take_buf *tb = ctx;

    tb->n++;
    return pk_reply_bulk(&tb->buf, mem.ptr, mem.len);
}

int pk__salted_take(pk_cmd_ctx *x, pk_txn *t)
{
    pk_type type = PK_TYPE_NONE;
    take_buf tb = {.n = 0};
    pk_slice v;
    int rc = pk_key_type(t, PK_KEY(x, 1), NOW(x), &type);

    if (rc == PK_OK && type == PK_TYPE_STRING) {
        rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), &v);
        if (rc != PK_OK || pk_hll_check(v.ptr, v.len) != PK_OK)
            return 0;
        pk_reply_array(x->out, 2);
        pk_reply_bulk(x->out, "hll", 3);
        pk_reply_bulk(x->out, v.ptr, v.len);
        return 1;
    }
    if (rc != PK_OK || type != PK_TYPE_SET)
        return 0;
    /* Into a side buffer first: an error half-way replies just that. */
    pk_obuf_init(&tb.buf);
    rc = pk_set_each(t, PK_KEY(x, 1), NOW(x), take_cb, &tb);
    if (rc == PK_OK && tb.buf.err)
        rc = tb.buf.err;
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else {
        pk_reply_array(x->out, tb.n + 1);
        pk_reply_bulk(x->out, "set", 3);
        pk_obuf_append(x->out, tb.buf.data + tb.buf.head,
                       pk_obuf_pending(&tb.buf));
    }
    pk_obuf_free(&tb.buf);
    return 1;
}

int pk__salted_add_tagged(const pk_cmd_ctx *x)
{
    const pk_arg *a = &x->argv[3];

    return x->argc >= 4 && a->len == 3 &&
           (memcmp(a->ptr, "set", 3) == 0 || memcmp(a->ptr, "hll", 3) == 0);
}

/* An HLL part's registers into part 0's, by max (a missing part 0 is
 * all zeros); dense if either was, as PFMERGE does. */
static int add_hll(pk_cmd_ctx *x, pk_txn *t)
{
    uint8_t *reg = malloc(PK_HLL_REGS), *tmp = malloc(PK_HLL_REGS);
    uint8_t *enc = malloc(PK_HLL_DENSE_LEN);
    const uint8_t *in = (const uint8_t *)x->argv[4].ptr;
    pk_set_opts o = {PK_SET_KEEPTTL, 0};
    int dense = 0, done, rc = PK_ENOMEM;
    pk_slice v;

    if (reg && tmp && enc)
        rc = pk_hll_decode(in, x->argv[4].len, tmp);
    if (rc == PK_OK) {
        dense = in[4] == 0;
        rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), &v);
        if (rc == PK_ENOTFOUND) {
            memset(reg, 0, PK_HLL_REGS);
            rc = PK_OK;
        } else if (rc == PK_OK) {
            rc = pk_hll_decode(v.ptr, v.len, reg);
            dense |= rc == PK_OK && ((const uint8_t *)v.ptr)[4] == 0;
        }
    }
    if (rc == PK_OK) {
        pk_hll_merge(reg, tmp);
        rc = pk_str_set(t, PK_KEY(x, 1), enc,
                        pk_hll_encode(reg, !dense, 0, 0, enc), &o, NOW(x),
                        &done, NULL);
    }
    free(reg);
    free(tmp);
    free(enc);
    return rc;
}

int pk__salted_add(pk_cmd_ctx *x, pk_txn *t)
{
    pk_slice *m;
    uint64_t added;
    size_t n = (size_t)(x->argc - 4);
    int rc;

    if (x->argv[3].ptr[0] == 'h')
        return x->argc == 5 ? add_hll(x, t) : PK_EINVAL;
    if (n == 0)
        return PK_OK;
    if ((m = malloc(n * sizeof(*m))) == NULL)
        return PK_ENOMEM;
    for (size_t k = 0; k < n; k++)
        m[k] = (pk_slice){x->argv[4 + k].ptr, x->argv[4 + k].len};
    rc = pk_set_add(t, PK_KEY(x, 1), n, m, NOW(x), &added);
    free(m);
    return rc;
}

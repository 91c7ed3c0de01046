/*
 * pk_salted_count: a salted counter's operations on its parts -- a write
 * of one part and the total of all, a read (GET, EXISTS, TYPE) or a DEL
 * of every part -- as calls to the parts' leaders, or inside this node's
 * transaction when it may read them all here (pk__salted_total_here).
 * The command path that starts them is pk_salted.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "core/pk_salt.h"
#include "proto/pk_rreply.h"
#include "server/pk_cluster.h"
#include "server/pk_ctx.h"
#include "server/pk_hot.h"
#include "server/pk_hotread.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_salted.h"
#include "server/pk_salted_int.h"
#include "server/pk_split.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_store_log.h"
#include "store/pk_str.h"

#define NAME_CAP PK__SALT_NAME_CAP
#define VAL_CAP PK__SALT_VAL_CAP

typedef struct sop sop;

/* One call of an operation: the part it asked. */
typedef struct sop_call {
    sop *op;
    int idx;
} sop_call;

/* Phases: the write of one part, the reads of parts 1..n-1, then part 0
 * with the fold markers (MGET, one partition). */
enum { PH_WRITE, PH_PARTS, PH_BASE, PH_DEL };

struct sop {
    pk_server *s;
    pk_conn *c; /* NULL once the client went away */
    int want, phase, pending;
    int fell_back; /* the write went to part 0 after -SALTFOLD */
    int as_float;  /* INCR on float parts: 1 reading, 2 written */
    pk_salt e;     /* the entry when it started; e.key -> key */
    uint8_t key[PK_SALT_KEY_MAX];
    char *err;     /* first error, owned */
    pk_arg *wargv; /* the write, key argument replaced later */
    int wargc;
    uint8_t have[PK_SALT_PARTS_MAX];   /* part i exists */
    uint8_t folded[PK_SALT_PARTS_MAX]; /* part i is in part 0 already */
    char val[PK_SALT_PARTS_MAX][VAL_CAP];
    uint8_t vlen[PK_SALT_PARTS_MAX];
    int deleted;
    sop_call calls[PK_SALT_PARTS_MAX + 1];
    sop *next;
};

/* What pk__salted_total_here read of one part this transaction (part
 * UINT32_MAX: nothing). */
typedef struct seen_part {
    uint32_t part;     /* its partition */
    uint64_t seq;      /* the partition's log position then */
    int64_t expire_ms; /* the value's expiry, -1 for none */
    uint8_t have, vlen;
    char val[VAL_CAP];
} seen_part;

/*
 * pk__salted_total_here's reads of a salted key's parts and fold markers, kept
 * for the rest of the loop's transaction: a hot counter's hundred INCRs in one
 * group commit read each other part once.  A part read is good while its
 * partition's log has not moved (nothing else changes a partition's data: the
 * log has a record of every write, expiry and fold, and a follower's settling
 * applies records the log already counts), no record of this transaction may
 * take the place of its last (pk_store_log_keepable), and its value has not
 * expired.
 */
typedef struct tot_seen {
    uint64_t commits, mapep; /* the transaction (pk_server.commits), map */
    uint32_t klen;
    uint8_t key[PK_SALT_KEY_MAX];
    seen_part p[PK_SALT_PARTS_MAX];
    seen_part marks; /* part 0's partition: folded[] good while it holds */
    uint8_t folded[PK_SALT_PARTS_MAX];
} tot_seen;

/* The counters' operations in flight and what this transaction read. */
struct pk__salt_counts {
    sop *ops;
    tot_seen seen; /* pk__salted_total_here's reads, this transaction */
    uint64_t writes_here, writes_called; /* totals replied each way */
};

/* ---- where a write goes ---------------------------------------------- */

/* A part of e for a write, given each part's partition (parts[i]). */
static int pick_of(pk_server *s, const pk_salt *e, const uint32_t *parts,
                   int spread)
{
    const pk_pmap *m = s->cluster.map;
    int mine[PK_SALT_PARTS_MAX], n = 0;

    /* A hop would hold the rest of the client's pipeline until its reply
     * and cost this node about what the write itself does: the clients
     * spread over the nodes spread the writes. */
    for (int i = 0; m && !spread && i < e->n; i++)
        if (parts[i] != UINT32_MAX &&
            pk_pmap_leader(m, parts[i]) == s->cluster.self)
            mine[n++] = i;
    if (n > 0)
        return mine[pk__salted_rnd(s) % (uint64_t)n];
    return (int)(pk__salted_rnd(s) % (uint64_t)e->n);
}

/* Part i's name into name, its length into *len, and its partition
 * (UINT32_MAX when the name does not fit). */
static uint32_t part_place(const pk_server *s, const pk_salt *e, int i,
                           uint8_t *name, size_t *len)
{
    *len = pk__salted_part_name(e, i, name);
    return *len ? pk_cluster_part(&s->cluster, name, *len) : UINT32_MAX;
}

/* Each part's name and partition: 1 when every name fits. */
static int part_places(const pk_server *s, const pk_salt *e,
                       uint8_t (*names)[NAME_CAP], size_t *lens,
                       uint32_t *parts)
{
    int all = 1;

    for (int i = 0; i < e->n; i++)
        all &=
            (parts[i] = part_place(s, e, i, names[i], &lens[i])) != UINT32_MAX;
    return all;
}

int pk__salted_pick(pk_server *s, const pk_salt *e, int spread)
{
    uint8_t name[NAME_CAP];
    uint32_t parts[PK_SALT_PARTS_MAX];
    size_t len;

    for (int i = 0; !spread && i < e->n; i++)
        parts[i] = part_place(s, e, i, name, &len);
    return pick_of(s, e, parts, spread);
}

/* ---- operations on a salted key ---------------------------------------- */

static void op_free(sop *op)
{
    pk__salt_counts *sd = pk__salted_counts(op->s);

    for (sop **pp = &sd->ops; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    free(op->wargv);
    free(op->err);
    free(op);
}

static void op_fail(sop *op, const char *err)
{
    /* A part's leader that says MOVED has a newer map than ours: the
     * client tries again (Redis clients retry TRYAGAIN). */
    if (strncmp(err, "MOVED", 5) == 0)
        err = "TRYAGAIN a part of the salted key is moving; retry";
    if (op->err == NULL)
        op->err = strdup(err);
}

/* The sum of the parts read: 0, or -1 with out replied an error (a part
 * not a number, an overflow).  *floats: a part holds a float. */
static int sum_parts(sop *op, int64_t *isum, long double *fsum, int *floats,
                     int *any, pk_obuf *out)
{
    int64_t iv;
    long double fv;

    *isum = 0;
    *fsum = 0;
    *floats = *any = 0;
    for (int i = 0; i < op->e.n; i++) {
        int k;
        if (!op->have[i] || (i > 0 && op->folded[i]))
            continue;
        *any = 1;
        if (op->want == PK__R_EXISTS || op->want == PK__R_TYPE)
            continue;
        k = pk__salted_parse_num(op->val[i], op->vlen[i], &iv, &fv);
        if (k == 0) {
            pk_reply_error(out, "ERR a part of the salted key is not a "
                                "number");
            return -1;
        }
        *floats |= k == 2;
        *fsum += fv;
        if (k == 1 && __builtin_add_overflow(*isum, iv, isum)) {
            pk_reply_error(out, "ERR increment or decrement would overflow");
            return -1;
        }
    }
    return 0;
}

/* A float total that is a whole number (INCR takes it, as Redis does). */
static int whole(long double f, int64_t *v)
{
    if (!(f == floorl(f)) || fabsl(f) >= 9.2e18L)
        return 0;
    *v = (int64_t)f;
    return 1;
}

/* The total of the parts read, as the reply wants it. */
static void reply_total(sop *op, pk_obuf *out)
{
    int64_t isum;
    long double fsum;
    int any, floats;
    char buf[VAL_CAP];
    size_t n;

    if (sum_parts(op, &isum, &fsum, &floats, &any, out) != 0)
        return;
    switch (op->want) {
    case PK__R_EXISTS:
        pk_reply_int(out, any);
        return;
    case PK__R_TYPE:
        pk_reply_simple(out, any ? "string" : "none");
        return;
    case PK__R_INT:
        if (floats && !whole(fsum, &isum))
            pk_reply_error(out, "ERR value is not an integer or out of range");
        else
            pk_reply_int(out, isum);
        return;
    default:
        break;
    }
    if (!any && op->want == PK__R_GET) {
        pk_reply_null(out, op->c ? op->c->proto : 2);
        return;
    }
    if (floats || op->want == PK__R_FLOAT)
        n = pk_ld_format(buf, sizeof(buf), fsum);
    else
        n = (size_t)snprintf(buf, sizeof(buf), "%lld", (long long)isum);
    pk_reply_bulk(out, buf, n);
}

static int float_write(sop *op);

/* Answers the client (if still there) and frees op. */
static void op_finish(sop *op)
{
    pk_conn *c = op->c;

    if (op->as_float == 1 && !op->err && float_write(op))
        return;
    if (c) {
        if (op->err)
            pk_reply_error(&c->out, op->err);
        else if (op->want == PK__R_DEL)
            pk_reply_int(&c->out, op->deleted > 0);
        else
            reply_total(op, &c->out);
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
    op_free(op);
}

static void on_op_reply(void *ctx, const pk_rr *r, const char *err);

/* Sends part idx's request: argv with the part's name at argument 1. */
static int op_send(sop *op, int idx, int argc, const char **argv, size_t *lens)
{
    uint8_t name[NAME_CAP];
    size_t len = pk__salted_part_name(&op->e, idx, name);
    int rc;

    if (len == 0)
        return PK_ERANGE;
    argv[1] = (const char *)name;
    lens[1] = len;
    op->calls[idx] = (sop_call){op, idx};
    rc = pk__salted_send_to(op->s, pk__salted_leader_of(op->s, name, len), argc,
                            argv, lens, on_op_reply, &op->calls[idx]);
    op->pending += rc == PK_OK;
    return rc;
}

/* The read of parts 1..n-1 (phase PARTS); returns the calls pending. */
static int op_read_parts(sop *op)
{
    op->phase = PH_PARTS;
    for (int i = 1; i < op->e.n; i++) {
        const char *argv[2] = {"GET", NULL};
        size_t lens[2] = {3, 0};
        if (op_send(op, i, 2, argv, lens) != PK_OK)
            op_fail(op, "ERR a part of the salted key is not reachable");
    }
    return op->pending;
}

/* Part 0 and the fold markers, in one MGET of one partition. */
static int op_read_base(sop *op)
{
    uint8_t marks[PK_SALT_PARTS_MAX][NAME_CAP];
    const char *argv[PK_SALT_PARTS_MAX + 1];
    size_t lens[PK_SALT_PARTS_MAX + 1];

    op->phase = PH_BASE;
    argv[0] = "MGET";
    lens[0] = 4;
    for (int i = 1; i < op->e.n; i++) {
        lens[i + 1] = pk_salt_marker(op->e.key, op->e.len, (unsigned)i,
                                     marks[i], NAME_CAP);
        argv[i + 1] = (const char *)marks[i];
    }
    if (op_send(op, 0, op->e.n + 1, argv, lens) != PK_OK)
        op_fail(op, "ERR the salted key's partition is not reachable");
    return op->pending;
}

/* INCR/DECR/INCRBY/DECRBY of a total that is whole but held in float
 * parts: the increment goes to part 0 as INCRBYFLOAT; 1 when sent, else
 * 0 with op->err set. */
static int float_write(sop *op)
{
    int64_t isum;
    long double fsum;
    int any, floats;
    pk_obuf scratch;
    char delta[40];
    const pk_arg *a = op->wargv;
    const char *argv[3] = {"INCRBYFLOAT", NULL, delta};
    size_t lens[3] = {11, 0, 0};
    int neg = strncasecmp(a[0].ptr, "decr", 4) == 0;

    pk_obuf_init(&scratch);
    if (sum_parts(op, &isum, &fsum, &floats, &any, &scratch) != 0 ||
        (floats && !whole(fsum, &isum))) {
        pk_obuf_free(&scratch);
        op_fail(op, "ERR value is not an integer or out of range");
        return 0;
    }
    pk_obuf_free(&scratch);
    if (a[0].len == 4) /* INCR, DECR */
        lens[2] = (size_t)snprintf(delta, sizeof(delta), neg ? "-1" : "1");
    else if (a[2].len < sizeof(delta) - 2 && neg && a[2].len &&
             a[2].ptr[0] == '-')
        lens[2] = (size_t)snprintf(delta, sizeof(delta), "%.*s",
                                   (int)a[2].len - 1, a[2].ptr + 1);
    else if (a[2].len < sizeof(delta) - 2)
        lens[2] = (size_t)snprintf(delta, sizeof(delta), "%s%.*s",
                                   neg ? "-" : "", (int)a[2].len, a[2].ptr);
    memset(op->have, 0, sizeof(op->have));
    memset(op->folded, 0, sizeof(op->folded));
    op->as_float = 2;
    op->phase = PH_WRITE;
    op->fell_back = 1; /* part 0 takes it in any state */
    if (op_send(op, 0, 3, argv, lens) != PK_OK) {
        op_fail(op, "ERR the salted key's partition is not reachable");
        return 0;
    }
    return 1;
}

/* The increment of op's INCR/DECR/INCRBY/DECRBY is an integer: only then
 * does a part's "not an integer" mean that the part holds a float. */
static int whole_delta(const sop *op)
{
    int64_t v;

    return op->wargc < 3 || pk_arg_i64(&op->wargv[2], &v);
}

static void on_op_reply(void *ctx, const pk_rr *r, const char *err)
{
    sop_call *call = ctx;
    sop *op = call->op;
    int i = call->idx;

    op->pending--;
    if (err == NULL && r->type == PK_RR_ERROR)
        err = r->str;
    if (op->phase == PH_WRITE) {
        if (err && strncmp(err, "SALTFOLD", 8) == 0 && !op->fell_back) {
            /* The part's leader does not take it (its map says folding,
             * or it has not the salting yet): part 0 takes any write. */
            op->fell_back = 1;
            const char *argv[8];
            size_t lens[8];
            for (int k = 0; k < op->wargc; k++) {
                argv[k] = op->wargv[k].ptr;
                lens[k] = op->wargv[k].len;
            }
            if (op_send(op, 0, op->wargc, argv, lens) == PK_OK)
                return;
            err = "ERR the salted key's partition is not reachable";
        }
        if (err && op->want == PK__R_INT && !op->as_float &&
            strstr(err, "not an integer") && whole_delta(op)) {
            /* A part holds a float: INCR goes on if the total is whole. */
            op->as_float = 1;
            if (op_read_parts(op) > 0)
                return;
        }
        if (err)
            op_fail(op, err);
        else if (op_read_parts(op) > 0) /* the total: every part read */
            return;
        op_finish(op);
        return;
    }
    if (op->phase == PH_DEL) {
        /* A part's leader whose map is not at this salting (just made, or
         * folding already) refuses; the client tries again. */
        if (err && strncmp(err, "SALTFOLD", 8) == 0)
            err = "TRYAGAIN the salted key is changing; retry";
        if (err)
            op_fail(op, err);
        else if (r->type == PK_RR_INT)
            op->deleted += r->integer > 0;
        if (op->pending == 0)
            op_finish(op);
        return;
    }
    if (err)
        op_fail(op, err);
    else if (op->phase == PH_PARTS && r->type != PK_RR_NIL) {
        op->have[i] = 1;
        pk__salted_keep_value(op->val[i], &op->vlen[i], r);
    } else if (op->phase == PH_BASE && r->type == PK_RR_ARRAY &&
               r->n == (size_t)op->e.n) {
        if (r->elems[0].type != PK_RR_NIL) {
            op->have[0] = 1;
            pk__salted_keep_value(op->val[0], &op->vlen[0], &r->elems[0]);
        }
        for (int k = 1; k < op->e.n; k++)
            op->folded[k] = r->elems[k].type != PK_RR_NIL;
    } else if (op->phase == PH_BASE) {
        op_fail(op, "ERR unexpected reply from the salted key's partition");
    }
    if (op->pending > 0)
        return;
    if (op->phase == PH_PARTS && !op->err && op_read_base(op) > 0)
        return;
    op_finish(op);
}

static sop *op_new(pk_cmd_ctx *x, const pk_salt *e, int want)
{
    sop *op = calloc(1, sizeof(*op));

    if (op == NULL)
        return NULL;
    op->s = x->srv;
    op->want = want;
    pk__salted_own_entry(&op->e, op->key, e);
    return op;
}

/* op was started from x: x's connection waits for it, or (nothing sent)
 * x gets the error now. */
static int op_started(pk_cmd_ctx *x, sop *op)
{
    pk__salt_counts *sd = pk__salted_counts(x->srv);

    if (op->pending == 0) {
        pk_reply_error(x->out, op->err ? op->err
                                       : "ERR the salted key's parts are "
                                         "not reachable");
        op->c = NULL;
        op_free(op);
        return 0;
    }
    op->c = x->c;
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--; /* its reply comes when the parts have answered */
    op->next = sd->ops;
    sd->ops = op;
    return 0;
}

/* The write of one part (pk__salted_pick; part 0 with base), then the
 * total. */
int pk__salted_start_write(pk_cmd_ctx *x, const pk_salt *e, int want, int base)
{
    sop *op = op_new(x, e, want);
    const char *argv[8];
    size_t lens[8];
    int part;

    if (op == NULL || x->argc > 8 ||
        (op->wargv = pk_conn_args_copy(x->argc, x->argv)) == NULL) {
        if (op)
            op_free(op);
        pk_reply_error(x->out, "ERR out of memory");
        return 0;
    }
    /* argv is the parser's until the next read: the fall-back to part 0
     * sends the copy. */
    op->wargc = x->argc;
    for (int k = 0; k < x->argc; k++) {
        argv[k] = x->argv[k].ptr;
        lens[k] = x->argv[k].len;
    }
    part = base ? 0 : pk__salted_pick(x->srv, e, 0);
    op->phase = PH_WRITE;
    pk__salted_counts(x->srv)->writes_called++;
    if (op_send(op, part, x->argc, argv, lens) != PK_OK)
        op_fail(op, "ERR a part of the salted key is not reachable");
    return op_started(x, op);
}

/* The seen entry for e in this transaction, emptied when it was not. */
static tot_seen *seen_of(pk_server *s, const pk_salt *e)
{
    tot_seen *v = &pk__salted_counts(s)->seen;

    if (v->commits != s->commits || v->mapep != s->cluster.map->epoch ||
        v->klen != e->len || memcmp(v->key, e->key, e->len) != 0) {
        v->commits = s->commits;
        v->mapep = s->cluster.map->epoch;
        v->klen = (uint32_t)e->len;
        memcpy(v->key, e->key, e->len);
        for (int i = 0; i < PK_SALT_PARTS_MAX; i++)
            v->p[i].part = UINT32_MAX;
        v->marks.part = UINT32_MAX;
    }
    return v;
}

/* 1 when what sp kept of part still holds at now_ms. */
static int seen_holds(pk_txn *t, const seen_part *sp, uint32_t part,
                      uint64_t now_ms)
{
    uint64_t seq;

    return sp->part == part &&
           (sp->expire_ms < 0 || (int64_t)now_ms < sp->expire_ms) &&
           pk_store_log_keepable(t, part, &seq) == PK_OK && seq == sp->seq;
}

/* Keeps in sp that part was read now (unless a record of this
 * transaction may still take the place of its last). */
static void seen_keep(pk_txn *t, seen_part *sp, uint32_t part,
                      int64_t expire_ms)
{
    sp->part =
        pk_store_log_keepable(t, part, &sp->seq) == PK_OK ? part : UINT32_MAX;
    sp->expire_ms = expire_ms;
}

/* pk__salted_total_here's reads: every part's value (the one just written,
 * pick, afresh) and the fold markers, into op; PK_OK or an error. */
static int read_parts(pk_cmd_ctx *x, pk_txn *t, const pk_salt *e,
                      uint8_t (*names)[NAME_CAP], const size_t *lens,
                      const uint32_t *parts, int pick, sop *op)
{
    tot_seen *v = seen_of(x->srv, e);
    uint64_t now = NOW(x);

    for (int i = 0; i < e->n; i++) {
        seen_part *sp = &v->p[i];
        int64_t when = -1;
        pk_slice val;
        int rc;
        if (i != pick && seen_holds(t, sp, parts[i], now)) {
            op->have[i] = sp->have;
            op->vlen[i] = sp->vlen;
            memcpy(op->val[i], sp->val, sp->vlen);
            continue;
        }
        rc = pk_str_get(t, parts[i], names[i], lens[i], now, &val);
        if (rc == PK_OK) {
            op->have[i] = 1;
            op->vlen[i] = (uint8_t)(val.len < VAL_CAP ? val.len : VAL_CAP - 1);
            memcpy(op->val[i], val.ptr, op->vlen[i]);
        } else if (rc != PK_ENOTFOUND) {
            return rc;
        }
        if (i == pick ||
            (op->have[i] && pk_key_expiretime(t, parts[i], names[i], lens[i],
                                              now, &when) != PK_OK))
            continue;
        seen_keep(t, sp, parts[i], when >= 0 ? when : -1);
        sp->have = op->have[i];
        sp->vlen = op->vlen[i];
        memcpy(sp->val, op->val[i], op->vlen[i]);
    }
    /* The fold markers, in part 0's partition. */
    if (seen_holds(t, &v->marks, parts[0], now)) {
        memcpy(op->folded, v->folded, sizeof(op->folded));
        return PK_OK;
    }
    for (int i = 1; i < e->n; i++) {
        uint8_t mark[NAME_CAP];
        size_t ml = pk_salt_marker(e->key, e->len, (unsigned)i, mark, NAME_CAP);
        pk_slice val;
        op->folded[i] = pk_str_get(t, parts[0], mark, ml, now, &val) == PK_OK;
    }
    seen_keep(t, &v->marks, parts[0], -1);
    memcpy(v->folded, op->folded, sizeof(v->folded));
    return PK_OK;
}

/*
 * A counter's write with the total as the reply, all here: when this node
 * leads the part picked and can read every other part in its own copy (it
 * leads its partition, or follows it under a read lease,
 * pk_hotread_covered), the write runs here and the parts are read here --
 * no hop.  The reply waits until the write is acknowledged and what was
 * read is committed (pk_repl_note per partition), so it counts the same
 * increments as the reads of the parts' leaders would.  1 when x is
 * answered, 0 to go the way of the calls (nothing was done).
 */
int pk__salted_total_here(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e,
                          int want)
{
    pk_server *s = x->srv;
    uint8_t names[PK_SALT_PARTS_MAX][NAME_CAP];
    size_t lens[PK_SALT_PARTS_MAX], out0;
    uint32_t parts[PK_SALT_PARTS_MAX];
    const pk_arg *argv = x->argv;
    int pick, rc;
    sop op;
    pk_txn *t;

    if (!part_places(s, e, names, lens, parts))
        return 0;
    pick = pick_of(s, e, parts, 0);
    for (int i = 0; i < e->n; i++) {
        if (pk_pmap_leader(s->cluster.map, parts[i]) == s->cluster.self
                ? pk_repl_handing_off(s, parts[i]) ||
                      (i == pick && (pk_move_fenced(s, parts[i]) ||
                                     pk_split_fenced(s, parts[i])))
                : i == pick || !pk_hotread_covered(s, parts[i]))
            return 0;
    }
    if ((t = pk_srv_txn(x)) == NULL)
        return 1; /* replied */
    if (!pk__salted_rename_key(x, names[pick], lens[pick]))
        return 0;
    out0 = pk_obuf_pending(x->out);
    x->have_part = 1;
    x->part = parts[pick];
    pk_cmd_run(x, cmd);
    pk_hot_note(x, cmd->first, 1);
    x->argv = (pk_arg *)argv;
    if (x->out->len > x->out->head + out0 &&
        x->out->data[x->out->head + out0] == '-') {
        x->have_part = 0;
        if (!memmem(x->out->data + x->out->head + out0,
                    x->out->len - x->out->head - out0, "not an integer", 14))
            return 1; /* its error is the reply */
        /* A part holds a float: the calls go on with it. */
        x->out->len = x->out->head + out0;
        return 0;
    }
    pk_repl_note(x, 1);
    memset(&op, 0, sizeof(op));
    op.want = want;
    op.e = *e;
    if ((rc = read_parts(x, t, e, names, lens, parts, pick, &op)) != PK_OK) {
        x->out->len = x->out->head + out0;
        pk_cmd_store_error(x, rc);
        x->have_part = 0;
        return 1;
    }
    for (int i = 0; i < e->n; i++)
        if (i != pick) { /* the reply waits for what was read */
            x->part = parts[i];
            pk_repl_note(x, 0);
        }
    x->have_part = 0;
    x->out->len = x->out->head + out0; /* the part's own value */
    reply_total(&op, x->out);
    pk__salted_counts(s)->writes_here++;
    return 1;
}

void pk_salted_info(pk_server *s, pk_obuf *b)
{
    char line[128];
    int n;

    if (s->salted == NULL)
        return;
    n = snprintf(line, sizeof(line),
                 "salted_writes_here:%llu\r\nsalted_writes_called:%llu\r\n",
                 (unsigned long long)pk__salted_counts(s)->writes_here,
                 (unsigned long long)pk__salted_counts(s)->writes_called);
    pk_obuf_append(b, line, (size_t)n);
}

int pk__salted_start_read(pk_cmd_ctx *x, const pk_salt *e, int want)
{
    sop *op = op_new(x, e, want);

    if (op == NULL) {
        pk_reply_error(x->out, "ERR out of memory");
        return 0;
    }
    if (op_read_parts(op) == 0 && !op->err)
        op_read_base(op);
    return op_started(x, op);
}

int pk__salted_start_del(pk_cmd_ctx *x, const pk_salt *e)
{
    sop *op = op_new(x, e, PK__R_DEL);

    if (op == NULL) {
        pk_reply_error(x->out, "ERR out of memory");
        return 0;
    }
    op->phase = PH_DEL;
    for (int i = 0; i < e->n; i++) {
        const char *argv[2] = {"DEL", NULL};
        size_t lens[2] = {3, 0};
        if (op_send(op, i, 2, argv, lens) != PK_OK)
            op_fail(op, "ERR a part of the salted key is not reachable");
    }
    return op_started(x, op);
}

/* ---- lifetime ---------------------------------------------------------- */

pk__salt_counts *pk__salted_counts_new(void)
{
    return calloc(1, sizeof(pk__salt_counts));
}

void pk__salted_counts_forget(pk__salt_counts *sd, pk_conn *c)
{
    for (sop *op = sd->ops; op; op = op->next)
        if (op->c == c)
            op->c = NULL;
}

void pk__salted_counts_free(pk__salt_counts *sd)
{
    if (sd == NULL)
        return;
    while (sd->ops)
        op_free(sd->ops); /* their calls were failed by the links' close */
    free(sd);
}

/* pk_salted: salted keys on the command path, salting and folding (see
 * pk_salted.h). */
#include "server/pk_salted.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"
#include "core/pk_num.h"
#include "core/pk_salt.h"
#include "core/pk_topk.h"
#include "proto/pk_rreply.h"
#include "server/pk_agent.h"
#include "server/pk_cluster.h"
#include "server/pk_ctx.h"
#include "server/pk_hot.h"
#include "server/pk_hotread.h"
#include "server/pk_link.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_salted_int.h"
#include "server/pk_split.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_store_log.h"
#include "store/pk_str.h"

#define NAME_CAP PK__SALT_NAME_CAP
#define VAL_CAP 64       /* a part's value: a number */
#define STEP_RETRY_MS 50 /* a fold or salting step that failed goes again */
#define ANSWER_TRIES 100 /* after so many, the client asking is answered */
#define COOL_MS 60000    /* a key folded for a command stays unsalted */
#define WATCHED 32       /* keys followed for --hot-key-time / unsalt */

typedef struct sop sop;

/* One call of an operation: the part it asked. */
typedef struct sop_call {
    sop *op;
    int idx;
} sop_call;

/* What an operation answers its client. */
enum {
    R_INT,    /* INCR INCRBY DECR DECRBY: the total as an integer */
    R_FLOAT,  /* INCRBYFLOAT: the total as a float */
    R_GET,    /* GET: the total, nil when no part exists */
    R_EXISTS, /* EXISTS: 1 when a part exists */
    R_TYPE,   /* TYPE */
    R_DEL,    /* DEL UNLINK: 1 when a part existed */
};

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

/* A salting or a fold of one key, run by the leader of its partition. */
enum {
    ST_CLEAN,
    ST_ADD,
    ST_MARK,
    ST_TAKE,
    ST_PUT,
    ST_DROP,
    ST_REMOVE,
    ST_CLEANUP,
    ST_DONE
};

typedef struct salting {
    pk_server *s;
    int fold;    /* 1: fold back, 0: salt */
    int step, i; /* the step, and the part it is at */
    int busy;    /* a call or map edit outstanding */
    int warned;  /* a failed step was logged */
    int tries;   /* failed steps */
    uint64_t retry_ms;
    pk_salt e; /* the entry to write (salt) or as found (fold) */
    uint8_t key[PK_SALT_KEY_MAX];
    uint32_t part; /* the key's partition, led here at epoch */
    uint64_t epoch;
    uint64_t map_epoch; /* fold: the FOLDING map's epoch */
    /* fold: the PK.SALTADD of part i's value, as sent (owned) */
    char *put;
    size_t putlen;
    pk_conn *c; /* PK.SALT / PK.UNSALT waiting, or NULL */
    pk_agent_job job;
    uint8_t switched;
    struct salting *next;
} salting;

/* A key followed by the tick: hot (not salted) or cold (salted) since. */
typedef struct watch {
    uint8_t key[PK_SALT_KEY_MAX];
    uint32_t len;
    uint64_t since_ms;
    int seen;
    int sets; /* hot: a SET of it was seen (salted as a string) */
} watch;

/* What total_here read of one part this transaction (part UINT32_MAX:
 * nothing). */
typedef struct seen_part {
    uint32_t part;     /* its partition */
    uint64_t seq;      /* the partition's log position then */
    int64_t expire_ms; /* the value's expiry, -1 for none */
    uint8_t have, vlen;
    char val[VAL_CAP];
} seen_part;

/*
 * total_here's reads of a salted key's parts and fold markers, kept for
 * the rest of the loop's transaction: a hot counter's hundred INCRs in
 * one group commit read each other part once.  A part read is good while
 * its partition's log has not moved (nothing else changes a partition's
 * data: the log has a record of every write, expiry and fold, and a
 * follower's settling applies records the log already counts), no record
 * of this transaction may take the place of its last (pk_store_log_keepable),
 * and its value has not expired.
 */
typedef struct tot_seen {
    uint64_t commits, mapep; /* the transaction (pk_server.commits), map */
    uint32_t klen;
    uint8_t key[PK_SALT_KEY_MAX];
    seen_part p[PK_SALT_PARTS_MAX];
    seen_part marks; /* part 0's partition: folded[] good while it holds */
    uint8_t folded[PK_SALT_PARTS_MAX];
} tot_seen;

typedef struct pk_salted {
    sop *ops;
    pk_uop *uops; /* sets' and HLLs' reads (pk_salted_sets.c) */
    pk_mop *mops; /* strings' and expiry ops (pk_salted_more.c) */
    pk__hlc hlc;  /* this node's clock for strings' stamps */
    salting *runs;
    uv_timer_t timer;
    uint64_t rng;
    watch hot[WATCHED], cold[WATCHED];
    watch cool[WATCHED]; /* folded for a command or by hand: not salted
                          * again by the tick for COOL_MS */
    pk_arg *argv; /* write_local: the command with a part's name; owned */
    int argv_cap;
    uint64_t writes_here, writes_called; /* counters' total replies */
    tot_seen seen; /* total_here's reads, this transaction */
    uint8_t name[NAME_CAP];
} pk_salted;

static uint64_t rnd(pk_salted *sd)
{
    sd->rng ^= sd->rng << 13;
    sd->rng ^= sd->rng >> 7;
    sd->rng ^= sd->rng << 17;
    return sd->rng;
}

/* ---- names and places ---------------------------------------------- */

static size_t part_name(const pk_salt *e, int i, uint8_t *out)
{
    if (i == 0) {
        memcpy(out, e->key, e->len);
        return e->len;
    }
    return pk_salt_subkey(e->key, e->len, e->tags[i], out, NAME_CAP);
}

/* The address of the leader of name's partition, or NULL. */
static const char *leader_of(const pk_server *s, const void *name, size_t len)
{
    const pk_cluster *cl = &s->cluster;
    uint32_t p = pk_cluster_part(cl, name, len);
    uint32_t l = pk_pmap_leader(cl->map, p);

    return l == PK_NODE_NONE ? NULL : cl->map->nodes[l].addr;
}

static int leads(const pk_server *s, const void *key, size_t len,
                 uint32_t *part)
{
    const pk_cluster *cl = &s->cluster;

    *part = pk_cluster_part(cl, key, len);
    return pk_pmap_leader(cl->map, *part) == cl->self;
}

size_t pk__salted_part_name(const pk_salt *e, int i, uint8_t *out)
{
    return part_name(e, i, out);
}

pk_uop **pk__salted_uops(pk_server *s)
{
    return &s->salted->uops;
}

pk_mop **pk__salted_mops(pk_server *s)
{
    return &s->salted->mops;
}

pk__hlc *pk__salted_hlc(pk_server *s)
{
    return &s->salted->hlc;
}

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
        return mine[rnd(s->salted) % (uint64_t)n];
    return (int)(rnd(s->salted) % (uint64_t)e->n);
}

/* Part i's name into name, its length into *len, and its partition
 * (UINT32_MAX when the name does not fit). */
static uint32_t part_place(const pk_server *s, const pk_salt *e, int i,
                           uint8_t *name, size_t *len)
{
    *len = part_name(e, i, name);
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

int pk__salted_leads(const pk_server *s, const void *key, size_t len)
{
    uint32_t part;

    return leads(s, key, len, &part);
}

/* Sends argv (argc items) on a raw link to addr; cb gets ctx. */
static int send_raw(pk_server *s, const char *addr, int argc,
                    const char *const *argv, const size_t *lens, pk_link_cb cb,
                    void *ctx)
{
    pk_obuf ob;
    int rc;

    if (addr == NULL)
        return PK_ENOTFOUND;
    pk_obuf_init(&ob);
    rc = pk_rr_write_cmd(&ob, argc, argv, lens);
    if (rc == PK_OK)
        rc = pk_link_call_raw(s, addr, &ob, cb, ctx);
    pk_obuf_free(&ob);
    return rc;
}

int pk__salted_send(pk_server *s, int argc, const char *const *argv,
                    const size_t *lens, pk_link_cb cb, void *ctx)
{
    return send_raw(s, leader_of(s, argv[1], lens[1]), argc, argv, lens, cb,
                    ctx);
}

/* ---- numbers ----------------------------------------------------------- */

/* A value as an int64 (1), a finite float (2), or neither (0). */
static int parse_num(const char *v, size_t len, int64_t *i, long double *f)
{
    char buf[VAL_CAP], *end;

    if (len == 0 || len >= sizeof(buf))
        return 0;
    memcpy(buf, v, len);
    buf[len] = '\0';
    errno = 0;
    *i = strtoll(buf, &end, 10);
    if (*end == '\0' && errno == 0 && !(buf[0] == '0' && len > 1) &&
        !(buf[0] == '-' && (len == 1 || buf[1] == '0')) && buf[0] != '+' &&
        buf[0] != ' ') {
        *f = (long double)*i;
        return 1;
    }
    errno = 0;
    *f = strtold(buf, &end);
    if (*end != '\0' || errno != 0 || isspace((unsigned char)buf[0]) ||
        !isfinite(*f))
        return 0;
    return 2;
}

/* ---- operations on a salted key ---------------------------------------- */

static void op_free(sop *op)
{
    pk_salted *sd = op->s->salted;

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
        if (op->want == R_EXISTS || op->want == R_TYPE)
            continue;
        k = parse_num(op->val[i], op->vlen[i], &iv, &fv);
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
    case R_EXISTS:
        pk_reply_int(out, any);
        return;
    case R_TYPE:
        pk_reply_simple(out, any ? "string" : "none");
        return;
    case R_INT:
        if (floats && !whole(fsum, &isum))
            pk_reply_error(out, "ERR value is not an integer or out of range");
        else
            pk_reply_int(out, isum);
        return;
    default:
        break;
    }
    if (!any && op->want == R_GET) {
        pk_reply_null(out, op->c ? op->c->proto : 2);
        return;
    }
    if (floats || op->want == R_FLOAT)
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
        else if (op->want == R_DEL)
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
    size_t len = part_name(&op->e, idx, name);
    int rc;

    if (len == 0)
        return PK_ERANGE;
    argv[1] = (const char *)name;
    lens[1] = len;
    op->calls[idx] = (sop_call){op, idx};
    rc = send_raw(op->s, leader_of(op->s, name, len), argc, argv, lens,
                  on_op_reply, &op->calls[idx]);
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

static void keep_value(char *dst, uint8_t *dlen, const pk_rr *r)
{
    size_t n = r->type == PK_RR_INT ? (size_t)snprintf(dst, VAL_CAP, "%lld",
                                                       (long long)r->integer)
               : r->len < VAL_CAP   ? r->len
                                    : VAL_CAP - 1;

    if (r->type != PK_RR_INT)
        memcpy(dst, r->str, n);
    *dlen = (uint8_t)n;
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
        if (err && op->want == R_INT && !op->as_float &&
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
        keep_value(op->val[i], &op->vlen[i], r);
    } else if (op->phase == PH_BASE && r->type == PK_RR_ARRAY &&
               r->n == (size_t)op->e.n) {
        if (r->elems[0].type != PK_RR_NIL) {
            op->have[0] = 1;
            keep_value(op->val[0], &op->vlen[0], &r->elems[0]);
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
    op->e = *e;
    memcpy(op->key, e->key, e->len);
    op->e.key = op->key;
    return op;
}

/* op was started from x: x's connection waits for it, or (nothing sent)
 * x gets the error now. */
static int op_started(pk_cmd_ctx *x, sop *op)
{
    pk_salted *sd = x->srv->salted;

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
static int start_write(pk_cmd_ctx *x, const pk_salt *e, int want, int base)
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
    x->srv->salted->writes_called++;
    if (op_send(op, part, x->argc, argv, lens) != PK_OK)
        op_fail(op, "ERR a part of the salted key is not reachable");
    return op_started(x, op);
}

/* x's argv with argument 1 replaced by name (valid while the command
 * runs or until it is copied); 0 when out of memory. */
static int rename_key(pk_cmd_ctx *x, const uint8_t *name, size_t len)
{
    pk_salted *sd = x->srv->salted;

    if (x->argc > sd->argv_cap) {
        pk_arg *a = realloc(sd->argv, (size_t)x->argc * sizeof(*a));
        if (a == NULL)
            return 0;
        sd->argv = a;
        sd->argv_cap = x->argc;
    }
    memmove(sd->name, name, len);
    memcpy(sd->argv, x->argv, (size_t)x->argc * sizeof(pk_arg));
    sd->argv[1].ptr = (const char *)sd->name;
    sd->argv[1].len = len;
    x->argv = sd->argv;
    return 1;
}

/* The seen entry for e in this transaction, emptied when it was not. */
static tot_seen *seen_of(pk_server *s, const pk_salt *e)
{
    tot_seen *v = &s->salted->seen;

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

/* total_here's reads: every part's value (the one just written, pick,
 * afresh) and the fold markers, into op; PK_OK or an error. */
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
static int total_here(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e,
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
    if (!rename_key(x, names[pick], lens[pick]))
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
    s->salted->writes_here++;
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
                 (unsigned long long)s->salted->writes_here,
                 (unsigned long long)s->salted->writes_called);
    pk_obuf_append(b, line, (size_t)n);
}

static int start_read(pk_cmd_ctx *x, const pk_salt *e, int want)
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

static int start_del(pk_cmd_ctx *x, const pk_salt *e)
{
    sop *op = op_new(x, e, R_DEL);

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

/* ---- salting and folding, at the key's leader --------------------------- */

static void run_step(salting *r);

static salting *run_find(pk_salted *sd, const void *key, size_t len)
{
    for (salting *r = sd->runs; r; r = r->next)
        if (r->e.len == len && memcmp(r->key, key, len) == 0)
            return r;
    return NULL;
}

/* The PK.SALT / PK.UNSALT waiting for r, if any, gets err (NULL: OK). */
static void run_answer(salting *r, const char *err)
{
    if (r->c == NULL)
        return;
    if (err)
        pk_reply_error(&r->c->out, err);
    else
        pk_reply_simple(&r->c->out, "OK");
    r->c->waiting_fwd = 0;
    pk_conn_resume(r->c);
    r->c = NULL;
}

static void run_end(salting *r, const char *err)
{
    pk_salted *sd = r->s->salted;

    run_answer(r, err);
    if (err)
        fprintf(stderr, "partkv: %s of a %u-byte key stopped: %s\n",
                r->fold ? "fold" : "salting", (unsigned)r->e.len, err);
    else
        fprintf(stderr, "partkv: a %u-byte key %s\n", (unsigned)r->e.len,
                r->fold ? "folded back into one" : "salted");
    for (salting **pp = &sd->runs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    free(r->put);
    free(r);
}

/* A step failed: the same step again a little later (a part's leader
 * changing, a map not there yet), unless the key's partition left us. */
static void run_retry(salting *r, const char *why)
{
    const pk_pmap *m = r->s->cluster.map;

    r->busy = 0;
    if (m == NULL || pk_pmap_leader(m, r->part) != r->s->cluster.self ||
        m->parts[r->part].leader_epoch != r->epoch) {
        run_end(r, "this node no longer leads the key's partition");
        return;
    }
    if (!r->warned) /* once per run: the step is retried until it goes */
        fprintf(stderr,
                "partkv: %s of a %u-byte key waits (step %d, part "
                "%d): %s\n",
                r->fold ? "fold" : "salting", (unsigned)r->e.len, r->step, r->i,
                why);
    r->warned = 1;
    r->retry_ms = pk_srv_wall_ms() + STEP_RETRY_MS;
    /* A step that keeps failing (a part's leader away, a total that does
     * not fit) must not hold the PK.SALT / PK.UNSALT that asked for it. */
    if (++r->tries == ANSWER_TRIES)
        run_answer(r, r->fold ? "TRYAGAIN the fold waits and goes on: see "
                                "the node's log"
                              : "TRYAGAIN the salting waits and goes on: "
                                "see the node's log");
}

static void on_run_job(pk_agent_job *j)
{
    salting *r = j->ctx;

    r->busy = 0;
    if (!r->switched) {
        run_end(r, "the map changed under it");
        return;
    }
    if (!r->fold) { /* salting: the entry is in the map */
        run_end(r, NULL);
        return;
    }
    if (r->step == ST_MARK) {
        r->map_epoch = r->s->cluster.map->epoch;
        r->i = 1;
    }
    r->step++;
    run_step(r);
}

static void submit(salting *r, int unsalt)
{
    r->job = (pk_agent_job){0};
    r->job.kind = PK_JOB_SALT;
    r->job.n = 1;
    r->job.parts = &r->part;
    r->job.switched = &r->switched;
    r->job.epoch = r->epoch;
    r->job.salt = &r->e;
    r->job.unsalt = unsalt;
    r->job.done = on_run_job;
    r->job.ctx = r;
    r->switched = 0;
    r->busy = 1;
    pk_agent_commit(r->s->agent, &r->job);
}

/* Part r->i's value as PK.SALTTAKE answered it (nil: none; a string: a
 * counter's; an array: "set" and the members, or "hll" and the value)
 * into r->put, the PK.SALTADD that adds it to part 0: the same arguments
 * after the key and the part.  0 or PK_ENOMEM. */
static int put_build(salting *r, const pk_rr *rr)
{
    size_t nv = rr->type == PK_RR_ARRAY ? rr->n : 1, argc = 3 + nv;
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *lens = malloc(argc * sizeof(*lens));
    char ix[8], num[VAL_CAP];
    uint8_t nlen = 0;
    pk_obuf ob;
    int rc = PK_ENOMEM;

    pk_obuf_init(&ob);
    if (argv && lens) {
        argv[0] = "PK.SALTADD";
        lens[0] = 10;
        argv[1] = (const char *)r->e.key;
        lens[1] = r->e.len;
        argv[2] = ix;
        lens[2] = (size_t)snprintf(ix, sizeof(ix), "%d", r->i);
        for (size_t k = 0; rr->type == PK_RR_ARRAY && k < nv; k++) {
            argv[3 + k] = rr->elems[k].str;
            lens[3 + k] = rr->elems[k].len;
        }
        if (rr->type != PK_RR_ARRAY && rr->type != PK_RR_NIL)
            keep_value(num, &nlen, rr);
        if (rr->type != PK_RR_ARRAY) {
            argv[3] = num;
            lens[3] = nlen;
        }
        rc = pk_rr_write_cmd(&ob, (int)argc, argv, lens);
    }
    free(argv);
    free(lens);
    if (rc == PK_OK) {
        free(r->put);
        r->putlen = pk_obuf_pending(&ob);
        r->put = malloc(r->putlen);
        if (r->put)
            memcpy(r->put, ob.data + ob.head, r->putlen);
        rc = r->put ? PK_OK : PK_ENOMEM;
    }
    pk_obuf_free(&ob);
    return rc;
}

static void on_run_reply(void *ctx, const pk_rr *rr, const char *err)
{
    salting *r = ctx;

    if (err == NULL && rr->type == PK_RR_ERROR)
        err = rr->str;
    if (err == NULL && r->step == ST_TAKE && put_build(r, rr) != PK_OK)
        err = "out of memory";
    if (err) {
        run_retry(r, err);
        return;
    }
    r->busy = 0;
    if (r->step == ST_DROP && ++r->i < r->e.n) {
        r->step = ST_TAKE;
    } else {
        r->step++;
    }
    run_step(r);
}

/* DEL of the key's fold markers (before salting, after folding). */
static int send_clean(salting *r)
{
    uint8_t marks[PK_SALT_PARTS_MAX + 1][NAME_CAP];
    const char *argv[PK_SALT_PARTS_MAX + 1];
    size_t lens[PK_SALT_PARTS_MAX + 1];

    argv[0] = "DEL";
    lens[0] = 3;
    for (int i = 1; i < r->e.n; i++) {
        lens[i] =
            pk_salt_marker(r->e.key, r->e.len, (unsigned)i, marks[i], NAME_CAP);
        argv[i] = (const char *)marks[i];
    }
    /* A salted string's stamp of part 0 goes with the markers. */
    lens[r->e.n] =
        pk_salt_stamp(r->e.key, r->e.len, 0, 0, marks[r->e.n], NAME_CAP);
    argv[r->e.n] = (const char *)marks[r->e.n];
    return send_raw(r->s, leader_of(r->s, r->e.key, r->e.len), r->e.n + 1, argv,
                    lens, on_run_reply, r);
}

/* Runs r's current step (its call or map edit outstanding after). */
static void run_step(salting *r)
{
    pk_server *s = r->s;
    uint8_t name[NAME_CAP];
    char num[24];
    size_t len = 0;
    int rc = PK_OK;

    r->busy = 1;
    if (r->step >= ST_TAKE && r->step <= ST_DROP)
        len = part_name(&r->e, r->i, name);
    switch (r->step) {
    case ST_CLEAN: /* salting: no marker left from an earlier fold */
    case ST_CLEANUP:
        rc = send_clean(r);
        break;
    case ST_ADD: /* salting: the entry goes in */
        submit(r, 0);
        return;
    case ST_MARK: { /* fold: writes go to part 0 from now on */
        const pk_salt *cur =
            pk_pmap_salt_find(s->cluster.map, r->e.key, r->e.len);
        if (cur && cur->state == PK_SALT_FOLDING) {
            r->map_epoch = s->cluster.map->epoch;
            r->step = ST_TAKE;
            r->i = 1;
            run_step(r);
            return;
        }
        r->e.state = PK_SALT_FOLDING;
        submit(r, 0);
        return;
    }
    case ST_TAKE: {
        const char *argv[3] = {"PK.SALTTAKE", (const char *)name, num};
        size_t lens[3] = {11, len, 0};
        lens[2] = (size_t)snprintf(num, sizeof(num), "%llu",
                                   (unsigned long long)r->map_epoch);
        rc = send_raw(s, leader_of(s, name, len), 3, argv, lens, on_run_reply,
                      r);
        break;
    }
    case ST_PUT: { /* the link consumes the bytes: a retry copies again */
        const char *addr = leader_of(s, r->e.key, r->e.len);
        pk_obuf ob;
        pk_obuf_init(&ob);
        rc = addr == NULL ? PK_ENOTFOUND
                          : pk_obuf_append(&ob, r->put, r->putlen);
        if (rc == PK_OK)
            rc = pk_link_call_raw(s, addr, &ob, on_run_reply, r);
        pk_obuf_free(&ob);
        break;
    }
    case ST_DROP: {
        const char *argv[2] = {"PK.SALTDROP", (const char *)name};
        size_t lens[2] = {11, len};
        rc = send_raw(s, leader_of(s, name, len), 2, argv, lens, on_run_reply,
                      r);
        break;
    }
    case ST_REMOVE:
        submit(r, 1);
        return;
    default: /* ST_DONE */
        r->busy = 0;
        run_end(r, NULL);
        return;
    }
    if (rc != PK_OK)
        run_retry(r, pk_strerror(rc));
}

static void on_timer(uv_timer_t *t)
{
    pk_salted *sd = t->data;
    uint64_t now = pk_srv_wall_ms();

    for (salting *r = sd->runs, *next; r; r = next) {
        next = r->next;
        if (!r->busy && r->retry_ms && now >= r->retry_ms) {
            r->retry_ms = 0;
            run_step(r);
        }
    }
}

static salting *run_new(pk_server *s, const void *key, size_t len, int fold)
{
    pk_salted *sd = s->salted;
    salting *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->s = s;
    r->fold = fold;
    memcpy(r->key, key, len);
    r->e.key = r->key;
    r->e.len = (uint32_t)len;
    r->part = pk_cluster_part(&s->cluster, key, len);
    r->epoch = s->cluster.map->parts[r->part].leader_epoch;
    r->next = sd->runs;
    sd->runs = r;
    return r;
}

/* Starts folding key back (its partition is led here); NULL or why not. */
static const char *fold_start(pk_server *s, const void *key, size_t len,
                              pk_conn *c)
{
    const pk_salt *e = pk_pmap_salt_find(s->cluster.map, key, len);
    salting *r = run_find(s->salted, key, len);
    uint32_t part;

    if (e == NULL)
        return "ERR the key is not salted";
    if (!leads(s, key, len, &part))
        return "ERR this node does not lead the key's partition: ask its "
               "leader";
    if (r && r->fold)
        return c ? "TRYAGAIN the key is being folded back" : NULL;
    if (r)
        return "TRYAGAIN the key is being salted";
    if ((r = run_new(s, key, len, 1)) == NULL)
        return "ERR out of memory";
    r->e = *e;
    r->e.key = r->key;
    r->step = ST_MARK;
    r->c = c;
    run_step(r);
    return NULL;
}

/* The tags of n parts of a key of kind: part i >= 1 on a partition led
 * by another node where there is one (round robin over the live nodes,
 * this one last), never the key's own partition, no two parts on one
 * partition. */
static int pick_tags(pk_server *s, uint32_t kpart, pk_salt_kind kind,
                     pk_salt *e)
{
    uint32_t base = pk_salt_tag_base(kind);
    const pk_cluster *cl = &s->cluster;
    const pk_pmap *m = cl->map;
    uint32_t order[64], nn = 0, used[PK_SALT_PARTS_MAX];
    uint32_t j = (uint32_t)(rnd(s->salted) % 1000000u);

    for (uint32_t id = 0; id < m->nnodes && nn < 63; id++)
        if (id != cl->self && (m->nodes[id].state == PK_NODE_UP ||
                               m->nodes[id].state == PK_NODE_DRAINING))
            order[nn++] = id;
    order[nn++] = cl->self;
    used[0] = kpart;
    for (int i = 1; i < e->n; i++) {
        uint32_t want = order[(uint32_t)(i - 1) % nn], tries = 0, p = 0;
        int ok = 0;
        for (; tries < 400000 && !ok; tries++, j++) {
            char tag[16];
            int n = snprintf(tag, sizeof(tag), "s%u", (unsigned)(base + j));
            p = pk_cluster_part(cl, tag, (size_t)n);
            ok = pk_pmap_leader(m, p) == want || tries >= 200000;
            for (int k = 0; ok && k < i; k++)
                ok = used[k] != p;
        }
        if (!ok)
            return PK_ENOTFOUND;
        used[i] = p;
        e->tags[i] = base + j - 1;
    }
    return PK_OK;
}

/* Why key cannot be salted into n parts here, or NULL and *kind what it
 * holds (a missing key is a counter to be). */
static const char *salt_refusal(pk_server *s, pk_txn *t, const void *key,
                                size_t len, int n, int sets, pk_salt_kind *kind)
{
    static const char only[] = "ERR only strings (counters and others), "
                               "hashes, sorted sets, sets and "
                               "HyperLogLogs are salted";
    uint8_t mark[NAME_CAP];
    uint32_t part;
    pk_type type = PK_TYPE_NONE;
    pk_slice v;
    int64_t iv;
    long double fv;
    int rc;

    if (s->cluster.map->scheme == PK_SCHEME_RANGE)
        return "ERR the range scheme does not salt keys";
    if (n < 2 || n > PK_SALT_PARTS_MAX || (n & (n - 1)))
        return "ERR the parts must be a power of two from 2 to 64";
    if (len > PK_SALT_KEY_MAX || pk_salt_internal(key, len) ||
        pk_salt_marker(key, len, 1, mark, sizeof(mark)) == 0)
        return "ERR this key cannot be salted (too long, or a '}' without "
               "a hash tag)";
    if (!leads(s, key, len, &part))
        return "ERR this node does not lead the key's partition: ask its "
               "leader";
    if (pk_pmap_salt_find(s->cluster.map, key, len))
        return "ERR the key is salted already";
    if (run_find(s->salted, key, len))
        return "TRYAGAIN the key is being folded back or salted";
    if (s->cluster.map->nsalts >= PK_SALTS_MAX)
        return "ERR too many salted keys";
    *kind = PK_SALT_COUNTER;
    rc = pk_key_type(t, part, key, len, s->now_ms, &type);
    if (rc == PK_OK && type == PK_TYPE_SET)
        *kind = PK_SALT_SET;
    else if (rc == PK_OK && type == PK_TYPE_HASH)
        *kind = PK_SALT_HASH; /* fields summed: counters, HINCRBY */
    else if (rc == PK_OK && type == PK_TYPE_ZSET)
        *kind = PK_SALT_ZSET; /* scores summed: ZINCRBY */
    else if (rc == PK_OK && type == PK_TYPE_STRING)
        rc = pk_str_get(t, part, key, len, s->now_ms, &v);
    else if (rc == PK_OK && type != PK_TYPE_NONE)
        return only;
    if (rc != PK_OK)
        return "ERR cannot read the key";
    if (type == PK_TYPE_STRING && pk_hll_check(v.ptr, v.len) == PK_OK)
        *kind = PK_SALT_HLL;
    else if (type == PK_TYPE_STRING &&
             (sets || parse_num(v.ptr, v.len, &iv, &fv) == 0))
        *kind = PK_SALT_STRING; /* SET wins by its stamp */
    else if (type == PK_TYPE_NONE && sets)
        *kind = PK_SALT_STRING;
    return NULL;
}

static const char *salt_start(pk_server *s, pk_txn *t, const void *key,
                              size_t len, int n, int sets, pk_conn *c)
{
    pk_salt_kind kind;
    const char *why = salt_refusal(s, t, key, len, n, sets, &kind);
    salting *r;

    if (why)
        return why;
    if ((r = run_new(s, key, len, 0)) == NULL)
        return "ERR out of memory";
    r->e.n = (uint8_t)n;
    r->e.state = PK_SALT_SALTED;
    if (pick_tags(s, r->part, kind, &r->e) != PK_OK) {
        run_end(r, NULL);
        return "ERR no partitions to place the parts on";
    }
    r->c = c;
    r->step = ST_CLEAN;
    run_step(r);
    return NULL;
}

/* ---- the command path -------------------------------------------------- */

/* A key folded back for a command that cannot be split (or by hand): a
 * workload that mixes such commands with hot writes would otherwise be
 * salted and folded over and over, each fold holding its clients.  The
 * tick does not salt it again for COOL_MS (PK.SALT still does). */
static void cool_mark(pk_salted *sd, const void *key, size_t len)
{
    uint64_t now = pk_srv_wall_ms();
    watch *free_slot = NULL, *oldest = &sd->cool[0];

    if (len > PK_SALT_KEY_MAX)
        return;
    for (int i = 0; i < WATCHED; i++) {
        watch *w = &sd->cool[i];
        if (w->len == len && memcmp(w->key, key, len) == 0) {
            w->since_ms = now;
            return;
        }
        if (w->len == 0 && free_slot == NULL)
            free_slot = w;
        if (w->since_ms < oldest->since_ms)
            oldest = w;
    }
    if (free_slot == NULL)
        free_slot = oldest;
    memcpy(free_slot->key, key, len);
    free_slot->len = (uint32_t)len;
    free_slot->since_ms = now;
}

/* Whether key was folded back for a command less than COOL_MS ago. */
static int cooling(pk_salted *sd, const void *key, size_t len, uint64_t now)
{
    for (int i = 0; i < WATCHED; i++) {
        watch *w = &sd->cool[i];
        if (w->len && now - w->since_ms >= COOL_MS)
            w->len = 0;
        else if (w->len == len && memcmp(w->key, key, len) == 0)
            return 1;
    }
    return 0;
}

/* Asks the key's leader to fold it back (this node or another). */
static void ask_fold(pk_server *s, const pk_salt *e)
{
    uint32_t part;

    if (leads(s, e->key, e->len, &part)) {
        cool_mark(s->salted, e->key, e->len);
        fold_start(s, e->key, e->len, NULL);
        return;
    }
    const char *argv[2] = {"PK.UNSALT", (const char *)e->key};
    size_t lens[2] = {9, e->len};
    send_raw(s, leader_of(s, e->key, e->len), 2, argv, lens, NULL, NULL);
}

static int is(const pk_cmd *cmd, const char *name)
{
    return strcmp(cmd->name, name) == 0;
}

/* A write to a part (from a raw link, a peer or a client): taken only
 * while the key is salted in this node's map with that part. */
static int part_check(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    const pk_arg *k = &x->argv[cmd->first];
    const pk_salt *e;
    const void *key;
    size_t klen;
    uint32_t tag;
    int ok = 0;

    if (!(cmd->flags & PK_CMD_WRITE) || cmd->fn == pk_cmd_pk_saltdrop ||
        !pk_salt_parse(k->ptr, k->len, &key, &klen, &tag))
        return 1;
    e = pk_pmap_salt_find(x->srv->cluster.map, key, klen);
    for (int i = 1; e && e->state == PK_SALT_SALTED && i < e->n; i++)
        ok |= e->tags[i] == tag;
    /* A part this map does not know is empty (salted after it, or folded
     * and dropped before it): deleting it is safe, writing it is not. */
    ok |= e == NULL && (is(cmd, "del") || is(cmd, "unlink"));
    if (!ok)
        pk_reply_error(x->out, x->c->raw_keys
                                   ? "SALTFOLD the key is not salted into "
                                     "this part here"
                                   : "TRYAGAIN the salted key is changing; "
                                     "retry");
    return ok;
}

/* A SET of key: a hot key it writes is salted as a string. */
static void note_set(pk_salted *sd, const void *key, size_t len)
{
    for (int i = 0; i < WATCHED; i++)
        if (sd->hot[i].len == len && len &&
            memcmp(sd->hot[i].key, key, len) == 0)
            sd->hot[i].sets = 1;
}

/* SADD, PFADD, and INCR with --salted-incr-reply local: the write goes
 * to a random part as an ordinary command on the part's name (run here or
 * forwarded like any other), and its reply is the part's. */
static int write_local(pk_cmd_ctx *x, const pk_salt *e)
{
    int part = pk__salted_pick(x->srv, e, 0);
    uint8_t name[NAME_CAP];
    size_t len;

    if (part != 0 && (len = part_name(e, part, name)) != 0)
        rename_key(x, name, len); /* else part 0 takes any write */
    return 1;
}

/* The entry of a salted key among x's keys after its first, or NULL. */
static const pk_salt *later_salted(const pk_cmd_ctx *x, const pk_cmd *cmd,
                                   const pk_pmap *m)
{
    pk_keyrun r[PK_KEYRUNS_MAX];
    int n = pk_cmd_keyruns(cmd, x->argc, x->argv, r);

    for (int i = 0; i < n; i++)
        for (int a = r[i].first; a <= r[i].last;
             a += r[i].step > 0 ? r[i].step : 1) {
            const pk_salt *e;
            pk_slice k;
            if (a == cmd->first)
                continue;
            k = pk_cmd_key(cmd, &x->argv[a]);
            if ((e = pk_pmap_salt_find(m, k.ptr, k.len)) != NULL)
                return e;
        }
    return NULL;
}

int pk_salted_route(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    const pk_pmap *m = x->srv->cluster.map;
    const pk_salt *e;
    const pk_arg *k;
    pk_salt_kind kind;
    int write, incr = 0, more;

    if ((cmd->first <= 0 && cmd->keys == NULL) || x->argc <= cmd->first ||
        x->srv->salted == NULL || cmd->fn == pk_cmd_pk_salt)
        return 1;
    if (cmd->first > 0 && !part_check(x, cmd))
        return 0;
    if (x->c->raw_keys)
        return 1;
    k = &x->argv[cmd->first];
    if (cmd->first > 0 && is(cmd, "set"))
        note_set(x->srv->salted, k->ptr, k->len);
    if (m->nsalts == 0)
        return 1;
    if ((e = later_salted(x, cmd, m)) != NULL) {
        /* A command on several keys (DEL a b, RENAME's destination,
         * SUNIONSTORE ...) runs on them folded back into one: it sees and
         * replaces a salted key whole, parts included. */
        ask_fold(x->srv, e);
        pk_conn_hold(x);
        return 0;
    }
    if (cmd->first <= 0 || (e = pk_pmap_salt_find(m, k->ptr, k->len)) == NULL)
        return 1;
    kind = pk__salted_kind(e);
    if ((more = pk__salted_more_route(x, cmd, e)) != 1)
        return more == 2;
    if (kind == PK_SALT_COUNTER) {
        incr = is(cmd, "incr") || is(cmd, "incrby") || is(cmd, "decr") ||
               is(cmd, "decrby");
        write = incr || is(cmd, "incrbyfloat");
    } else {
        write = (kind == PK_SALT_SET && is(cmd, "sadd")) ||
                (kind == PK_SALT_HLL && is(cmd, "pfadd"));
    }
    if (kind != PK_SALT_COUNTER && !pk__salted_sets_route(x, cmd, e))
        return 0;
    if (kind == PK_SALT_COUNTER &&
        (is(cmd, "get") || (is(cmd, "exists") && x->argc == 2)))
        return start_read(x, e, is(cmd, "get") ? R_GET : R_EXISTS);
    if (kind == PK_SALT_COUNTER && is(cmd, "type"))
        return start_read(x, e, R_TYPE);
    if (e->state == PK_SALT_SALTED) {
        /* A peer that forwarded a write here meant part 0 (its map is
         * older, or part 0 was its pick): part 0 is here, so it goes no
         * hop further -- with the total as the reply, unless local.  SADD
         * and PFADD always answer their part's reply: a member or an
         * element new to the part written counts, even if another part
         * holds it (pk_salted.h). */
        if (write && (kind != PK_SALT_COUNTER || x->srv->cfg.salted_incr_local))
            return x->c->internal ? 1 : write_local(x, e);
        if (write && !x->c->internal &&
            total_here(x, cmd, e, incr ? R_INT : R_FLOAT))
            return 0;
        if (write)
            return start_write(x, e, incr ? R_INT : R_FLOAT, x->c->internal);
        if ((is(cmd, "del") || is(cmd, "unlink")) && x->argc == 2)
            return start_del(x, e);
    } else if (write) {
        return 1; /* folding: part 0 takes the writes */
    }
    /* Anything else runs on the key folded back into one: it waits for
     * that (pk_conn_hold: released by the map without the entry, or
     * -TRYAGAIN after a while). */
    ask_fold(x->srv, e);
    pk_conn_hold(x);
    return 0;
}

int pk_salted_route_queued(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    const pk_pmap *m = x->srv->cluster.map;
    const pk_salt *e;

    if (m == NULL || m->nsalts == 0 || (cmd->first <= 0 && cmd->keys == NULL) ||
        x->argc <= cmd->first || x->srv->salted == NULL)
        return 1;
    e = cmd->first > 0 ? pk_pmap_salt_find(m, x->argv[cmd->first].ptr,
                                           x->argv[cmd->first].len)
                       : NULL;
    if (e == NULL && (e = later_salted(x, cmd, m)) == NULL)
        return 1;
    ask_fold(x->srv, e);
    pk_reply_error(x->out, "TRYAGAIN the key is salted and is being folded "
                           "back for the transaction; retry");
    return 0;
}

/* ---- the tick ---------------------------------------------------------- */

static watch *watch_get(watch *w, const void *key, size_t len, uint64_t now)
{
    watch *free_slot = NULL;

    for (int i = 0; i < WATCHED; i++) {
        if (w[i].len == len && memcmp(w[i].key, key, len) == 0)
            return &w[i];
        if (w[i].len == 0 && free_slot == NULL)
            free_slot = &w[i];
    }
    if (free_slot) {
        memcpy(free_slot->key, key, len);
        free_slot->len = (uint32_t)len;
        free_slot->since_ms = now;
        free_slot->sets = 0;
    }
    return free_slot;
}

/* Forgets the keys not seen this tick; clears the marks of the others. */
static void watch_sweep(watch *w)
{
    for (int i = 0; i < WATCHED; i++) {
        if (!w[i].seen)
            w[i].len = 0;
        w[i].seen = 0;
    }
}

/* Parts for a write rate: a power of two, about twice the rate over the
 * threshold, at most twice the live nodes. */
static int parts_for(const pk_server *s, double rate)
{
    uint32_t live = pk_pmap_live_nodes(s->cluster.map), cap = 2;
    double want = 2 * rate / (double)s->cfg.hot_key_writes;
    int n = 2;

    while (cap * 2 <= 2 * live && cap * 2 <= PK_SALT_PARTS_MAX)
        cap *= 2;
    while (n < (int)cap && n < want)
        n *= 2;
    return n;
}

void pk_salted_tick(pk_server *s)
{
    pk_salted *sd = s->salted;
    const pk_pmap *m = s->cluster.map;
    const pk_topk_entry *top[128];
    uint64_t now = pk_srv_wall_ms();
    double thr = (double)s->cfg.hot_key_writes;
    uint32_t nt = 0, part;
    pk_txn *t = NULL;

    if (sd == NULL || m == NULL || m->scheme == PK_SCHEME_RANGE ||
        s->agent == NULL)
        return;
    if (s->hot)
        nt = pk_topk_top(s->hot, top, 128);
    /* Salted keys led here: resume a fold, or fold what stays cold. */
    for (uint32_t i = 0; i < m->nsalts; i++) {
        const pk_salt *e = &m->salts[i];
        double rate = 0;
        watch *w;
        if (!leads(s, e->key, e->len, &part) || run_find(sd, e->key, e->len))
            continue;
        if (e->state == PK_SALT_FOLDING) {
            fold_start(s, e->key, e->len, NULL);
            continue;
        }
        if (thr <= 0 || s->cfg.unsalt_after_ms == 0)
            continue;
        for (uint32_t k = 0; k < nt; k++)
            if (!top[k]->truncated && top[k]->len == e->len &&
                memcmp(top[k]->key, e->key, e->len) == 0)
                rate = pk_topk_rate(s->hot, top[k], 1) * e->n;
        if (rate >= thr / 2 ||
            (w = watch_get(sd->cold, e->key, e->len, now)) == NULL)
            continue;
        w->seen = 1;
        if (now - w->since_ms >= s->cfg.unsalt_after_ms)
            fold_start(s, e->key, e->len, NULL);
    }
    watch_sweep(sd->cold);
    if (thr <= 0 || s->hot == NULL)
        return;
    for (uint32_t k = 0; k < nt; k++) {
        const pk_topk_entry *te = top[k];
        double rate = pk_topk_rate(s->hot, te, 1);
        watch *w;
        if (rate < thr || te->truncated || pk_salt_internal(te->key, te->len) ||
            pk_pmap_salt_find(m, te->key, te->len) ||
            !leads(s, te->key, te->len, &part) ||
            cooling(sd, te->key, te->len, now) ||
            (w = watch_get(sd->hot, te->key, te->len, now)) == NULL)
            continue;
        w->seen = 1;
        if (now - w->since_ms < s->cfg.hot_key_ms)
            continue;
        if (t == NULL && pk_txn_begin(s->store, 1, &t) != PK_OK)
            break;
        salt_start(s, s->txn ? s->txn : t, te->key, te->len, parts_for(s, rate),
                   w->sets, NULL);
        w->len = 0;
    }
    if (t)
        pk_txn_abort(t);
    watch_sweep(sd->hot);
}

/* ---- commands ---------------------------------------------------------- */

void pk_cmd_pk_salt(pk_cmd_ctx *x)
{
    int unsalt = x->argv[0].len == 9;
    int64_t n = 0;
    const char *why;

    if (!x->srv->cluster.enabled || x->srv->cluster.map == NULL ||
        x->srv->salted == NULL) {
        pk_reply_error(x->out, "ERR salting needs a cluster");
        return;
    }
    if ((unsalt && x->argc != 2) ||
        (!unsalt && (x->argc != 3 || !pk_arg_i64(&x->argv[2], &n)))) {
        pk_reply_error(x->out, unsalt ? "ERR syntax error: PK.UNSALT key"
                                      : "ERR syntax error: PK.SALT key parts");
        return;
    }
    if (unsalt) {
        cool_mark(x->srv->salted, x->argv[1].ptr, x->argv[1].len);
        why = fold_start(x->srv, x->argv[1].ptr, x->argv[1].len,
                         x->c->raw_keys ? NULL : x->c);
    } else {
        TXN_OR_RETURN(x, t);
        why = salt_start(x->srv, t, x->argv[1].ptr, x->argv[1].len, (int)n, 0,
                         x->c);
    }
    if (why) {
        pk_reply_error(x->out, why);
        return;
    }
    if (x->c->raw_keys && unsalt) {
        pk_reply_simple(x->out, "OK");
        return;
    }
    x->c->waiting_fwd = 1; /* answered when the map holds the change */
    x->c->iter_cmds--;
}

void pk_cmd_pk_rawkeys(pk_cmd_ctx *x)
{
    if (!x->c->internal) {
        pk_reply_error(x->out, "NOPERM PK.RAWKEYS is for cluster nodes");
        return;
    }
    x->c->raw_keys = 1;
    pk_reply_simple(x->out, "OK");
}

/* PK.SALTTAKE key epoch n: the array [marks, value] begins with which of
 * parts 1..n-1 are folded into key ('1' at i, in n bytes); 1 when it did,
 * else 0 after an error reply. */
static int take_marks(pk_cmd_ctx *x, pk_txn *t)
{
    uint8_t mark[NAME_CAP];
    char m[PK_SALT_PARTS_MAX];
    int64_t n;

    if (!pk_arg_i64(&x->argv[3], &n) || n < 1 || n > PK_SALT_PARTS_MAX) {
        pk_reply_error(x->out, "ERR PK.SALTTAKE is for cluster nodes");
        return 0;
    }
    m[0] = '0';
    for (int i = 1; i < n; i++) {
        size_t ml = pk_salt_marker(x->argv[1].ptr, x->argv[1].len, (unsigned)i,
                                   mark, sizeof(mark));
        int e = 0,
            rc = ml ? pk_key_exists(t, pk_cmd_part(x, 1), mark, ml, NOW(x), &e)
                    : PK_OK;
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return 0;
        }
        m[i] = e ? '1' : '0';
    }
    pk_reply_array(x->out, 2);
    pk_reply_bulk(x->out, m, (size_t)n);
    return 1;
}

/* PK.SALTTAKE subkey epoch [n]: the part's value, at a map at least that
 * new (so no later write reaches it); with n, part 0's fold markers
 * first (take_marks). */
void pk_cmd_pk_salttake(pk_cmd_ctx *x)
{
    int64_t ep;
    pk_slice v;
    int rc;

    if (!x->c->raw_keys || !pk_arg_i64(&x->argv[2], &ep) || ep < 0) {
        pk_reply_error(x->out, "ERR PK.SALTTAKE is for cluster nodes");
        return;
    }
    if (x->srv->cluster.map->epoch < (uint64_t)ep) {
        pk_reply_errorf(x->out,
                        "TRYAGAIN this node's map is older (epoch %llu, the "
                        "fold's %lld)",
                        (unsigned long long)x->srv->cluster.map->epoch,
                        (long long)ep);
        return;
    }
    TXN_OR_RETURN(x, t);
    if (x->argc == 4 && !take_marks(x, t))
        return;
    if (pk__salted_take_str(x, t) || pk__salted_take_more(x, t) ||
        pk__salted_take(x, t))
        return;
    rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), &v);
    pk_reply_value(x, rc, v);
}

/* PK.SALTADD key i value | set member... | hll value: part i's value
 * (empty: none) into part 0, once: the marker says it is there. */
void pk_cmd_pk_saltadd(pk_cmd_ctx *x)
{
    uint8_t mark[NAME_CAP];
    int64_t i, iv;
    long double fv;
    size_t mlen = 0;
    int e = 0, done = 0, rc;

    int str = x->argc == 6 && x->argv[3].len == 3 &&
              memcmp(x->argv[3].ptr, "str", 3) == 0;

    /* Part 0 with "str": a salted string's SET of one part (no marker). */
    if (!x->c->raw_keys || !pk_arg_i64(&x->argv[2], &i) || i < !str ||
        (x->argc > 4 && !str && !pk__salted_add_tagged(x) &&
         !pk__salted_more_tagged(x)) ||
        i >= PK_SALT_PARTS_MAX ||
        (i > 0 &&
         (mlen = pk_salt_marker(x->argv[1].ptr, x->argv[1].len, (unsigned)i,
                                mark, sizeof(mark))) == 0)) {
        pk_reply_error(x->out, "ERR PK.SALTADD is for cluster nodes");
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = i == 0 ? PK_OK
                : pk_key_exists(t, pk_cmd_part(x, 1), mark, mlen, NOW(x), &e);
    if (rc == PK_OK && !e && str) {
        rc = pk__salted_add_str(x, t);
    } else if (rc == PK_OK && !e && pk__salted_more_tagged(x)) {
        rc = pk__salted_add_more(x, t);
    } else if (rc == PK_OK && !e && pk__salted_add_tagged(x)) {
        rc = pk__salted_add(x, t);
    } else if (rc == PK_OK && !e && x->argv[3].len) {
        pk_slice out;
        int k = parse_num(x->argv[3].ptr, x->argv[3].len, &iv, &fv);
        if (k == 1)
            rc = pk_str_incrby(t, PK_KEY(x, 1), iv, NOW(x), &iv);
        /* An integer part into a float part 0 adds as a float. */
        if (k == 2 || (k == 1 && rc == PK_STORE_NOTINT))
            rc = pk_str_incrbyfloat(t, PK_KEY(x, 1), x->argv[3].ptr,
                                    x->argv[3].len, NOW(x), &out);
    }
    if (rc == PK_OK && !e && i > 0)
        rc = pk_str_set(t, pk_cmd_part(x, 1), mark, mlen, "1", 1, NULL, NOW(x),
                        &done, NULL);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_pk_saltdrop(pk_cmd_ctx *x)
{
    int deleted = 0, rc;

    if (!x->c->raw_keys) {
        pk_reply_error(x->out, "ERR PK.SALTDROP is for cluster nodes");
        return;
    }
    uint8_t sname[NAME_CAP];
    size_t sl = pk__salted_stamp_of(x->argv[1].ptr, x->argv[1].len, sname);
    int sdel = 0;

    TXN_OR_RETURN(x, t);
    rc = pk_key_del(t, PK_KEY(x, 1), NOW(x), &deleted);
    if (rc == PK_OK && sl) /* a salted string's part: its stamp too */
        rc = pk_key_del(t, pk_cmd_part(x, 1), sname, sl, NOW(x), &sdel);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, deleted);
}

/* ---- lifetime ---------------------------------------------------------- */

int pk_salted_parts(const pk_server *s, const void *key, unsigned len)
{
    const pk_salt *e;

    if (s->cluster.map == NULL || s->cluster.map->nsalts == 0)
        return 0;
    e = pk_pmap_salt_find(s->cluster.map, key, len);
    return e ? e->n : 0;
}

void pk_salted_forget(pk_server *s, pk_conn *c)
{
    pk_salted *sd = s->salted;

    if (sd == NULL)
        return;
    for (sop *op = sd->ops; op; op = op->next)
        if (op->c == c)
            op->c = NULL;
    pk__salted_sets_forget(s, c);
    pk__salted_more_forget(s, c);
    for (salting *r = sd->runs; r; r = r->next)
        if (r->c == c)
            r->c = NULL;
}

int pk_salted_init(pk_server *s)
{
    pk_salted *sd = calloc(1, sizeof(*sd));

    if (sd == NULL)
        return PK_ENOMEM;
    sd->rng = pk_srv_wall_ms() * 2654435761u + (uint64_t)getpid() + 1;
    uv_timer_init(&s->loop, &sd->timer);
    sd->timer.data = sd;
    uv_timer_start(&sd->timer, on_timer, STEP_RETRY_MS, STEP_RETRY_MS);
    s->salted = sd;
    return PK_OK;
}

static void on_timer_close(uv_handle_t *h)
{
    free(h->data);
}

void pk_salted_free(pk_server *s)
{
    pk_salted *sd = s->salted;

    if (sd == NULL)
        return;
    while (sd->ops)
        op_free(sd->ops); /* their calls were failed by the links' close */
    pk__salted_sets_free(s);
    pk__salted_more_free(s);
    while (sd->runs) {
        salting *r = sd->runs;
        sd->runs = r->next;
        free(r->put);
        free(r);
    }
    free(sd->argv);
    s->salted = NULL;
    uv_close((uv_handle_t *)&sd->timer, on_timer_close);
}

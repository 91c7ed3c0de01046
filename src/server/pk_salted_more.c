/*
 * pk_salted_more: salted strings (last writer wins by a hybrid logical
 * clock), and the expiry commands fanned out to the parts of a salted key
 * of any kind (see pk_salted.h).
 *
 *   SET key value        at the leader of the key's partition: a stamp
 *                        from its clock, then PK.SALTADD part 0 str stamp
 *                        value to one random part (part 0 after a
 *                        -SALTFOLD), which writes the value and its stamp
 *                        key in one transaction unless the part holds a
 *                        newer stamp; +OK once that part acknowledged
 *   GET key              MGET part stamp of parts 1..n-1, then of part 0;
 *                        the value with the newest stamp (a part without
 *                        a stamp, part 0 from before the salting, is the
 *                        oldest)
 *   EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST
 *                        the command on every part (while salted, not
 *                        folding); 1 when some part answered 1
 *   TTL PTTL             every part: -2 when none exists, -1 when one
 *                        has no expiry, else the longest
 *
 * Stamps are 20 hex digits, milliseconds (12), logical counter (4) and
 * node (4), so that byte order is stamp order.  One node -- the key's
 * partition's leader -- stamps every SET of a key, so that a SET that
 * starts after another was acknowledged gets a later stamp whatever node
 * the client used; every node's clock moves past the stamps it reads, so
 * a new leader after a failover stamps later than what it has seen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "proto/pk_rreply.h"
#include "server/pk_cmd.h"
#include "server/pk_salted_int.h"
#include "server/pk_srv.h"
#include "store/pk_str.h"

/* What an operation answers its client. */
enum {
    M_GET,     /* GET of a salted string: the newest value */
    M_SET,     /* SET of a salted string: +OK */
    M_FAN_ANY, /* EXPIRE* PERSIST: 1 when some part said 1 */
    M_FAN_TTL, /* TTL PTTL */
};

/* Phases: the write of one part, the reads of parts 1..n-1 then part 0,
 * or the command on every part at once. */
enum { MP_WRITE, MP_PARTS, MP_BASE, MP_FAN };

typedef struct mcall {
    pk_mop *op;
    int idx;
} mcall;

struct pk_mop {
    pk_server *s;
    pk_conn *c; /* NULL once the client went away */
    int want, phase, pending;
    int fell_back; /* SET: the write went to part 0 after -SALTFOLD */
    pk_salt e;     /* the entry when it started; e.key -> key */
    uint8_t key[PK_SALT_KEY_MAX];
    char *err;    /* first error, owned */
    pk_arg *args; /* the client's command, owned (one allocation) */
    int nargs;
    char stamp[PK__STAMP_LEN + 1]; /* SET: its stamp; GET: the best's */
    char *best;                    /* GET: the newest value, owned */
    size_t bestlen;
    int have;    /* GET: a part holds a value; FAN: some part said 1 */
    int64_t ttl; /* FAN_TTL: the answer so far */
    mcall calls[PK_SALT_PARTS_MAX];
    pk_mop *next;
};

/* ---- the clock --------------------------------------------------------- */

void pk__salted_hlc_stamp(pk_server *s, char *out)
{
    pk__hlc *h = pk__salted_hlc(s);
    uint64_t pt = pk_srv_wall_ms();

    if (pt > h->ms) {
        h->ms = pt;
        h->lc = 0;
    } else if (++h->lc > 0xffffu) {
        h->ms++;
        h->lc = 0;
    }
    snprintf(out, PK__STAMP_LEN + 1, "%012llx%04x%04x",
             (unsigned long long)(h->ms & 0xffffffffffffull), (unsigned)h->lc,
             (unsigned)(s->cluster.self & 0xffffu));
}

/* The milliseconds and counter of a stamp; 0 when it is not one. */
static int stamp_parse(const char *p, size_t len, uint64_t *ms, uint32_t *lc)
{
    uint64_t v = 0;

    if (len != PK__STAMP_LEN)
        return 0;
    for (size_t i = 0; i < 16; i++) {
        char ch = p[i];
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                         : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    *ms = v >> 16;
    *lc = (uint32_t)(v & 0xffffu);
    return 1;
}

void pk__salted_hlc_see(pk_server *s, const char *p, size_t len)
{
    pk__hlc *h = pk__salted_hlc(s);
    uint64_t ms;
    uint32_t lc;

    if (!stamp_parse(p, len, &ms, &lc))
        return;
    if (ms > h->ms || (ms == h->ms && lc > h->lc)) {
        h->ms = ms;
        h->lc = lc;
    }
}

/* ---- operations -------------------------------------------------------- */

static void m_free(pk_mop *op)
{
    for (pk_mop **pp = pk__salted_mops(op->s); *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    free(op->err);
    free(op->args);
    free(op->best);
    free(op);
}

static void m_fail(pk_mop *op, const char *err)
{
    /* A part's leader with a newer map (MOVED), or one whose map has the
     * key folding or not salted yet (SALTFOLD): the client tries again. */
    if (err &&
        (strncmp(err, "MOVED", 5) == 0 || strncmp(err, "SALTFOLD", 8) == 0))
        err = "TRYAGAIN the salted key is moving or changing; retry";
    if (op->err == NULL)
        op->err = strdup(err ? err : "ERR out of memory");
}

static void on_m_reply(void *ctx, const pk_rr *r, const char *err);

/* Sends argv to part idx's leader, argument 1 the part's name and, with
 * stamp, argument 2 the part's stamp key. */
static void m_send(pk_mop *op, int idx, int argc, const char **argv,
                   size_t *lens, int stamp)
{
    uint8_t name[PK__SALT_NAME_CAP], sname[PK__SALT_NAME_CAP];
    int rc = PK_ERANGE;

    lens[1] = pk__salted_part_name(&op->e, idx, name);
    argv[1] = (const char *)name;
    if (stamp) {
        lens[2] = pk_salt_stamp(op->e.key, op->e.len, (unsigned)idx,
                                op->e.tags[idx], sname, sizeof(sname));
        argv[2] = (const char *)sname;
    }
    op->calls[idx] = (mcall){op, idx};
    if (lens[1] && (!stamp || lens[2]))
        rc = pk__salted_send(op->s, argc, argv, lens, on_m_reply,
                             &op->calls[idx]);
    if (rc == PK_OK)
        op->pending++;
    else
        m_fail(op, "ERR a part of the salted key is not reachable");
}

static void m_read(pk_mop *op, int idx)
{
    const char *argv[3] = {"MGET", NULL, NULL};
    size_t lens[3] = {4, 0, 0};

    m_send(op, idx, 3, argv, lens, 1);
}

static void m_write(pk_mop *op, int idx)
{
    const char *argv[6] = {"PK.SALTADD", NULL,      "0",
                           "str",        op->stamp, op->args[2].ptr};
    size_t lens[6] = {10, 0, 1, 3, PK__STAMP_LEN, op->args[2].len};

    m_send(op, idx, 6, argv, lens, 0);
}

/* The client's command on every part. */
static void m_fan(pk_mop *op)
{
    const char **argv = malloc((size_t)op->nargs * sizeof(*argv));
    size_t *lens = malloc((size_t)op->nargs * sizeof(*lens));

    op->phase = MP_FAN;
    if (argv == NULL || lens == NULL) {
        m_fail(op, NULL);
    } else {
        for (int i = 0; i < op->e.n; i++) {
            for (int k = 0; k < op->nargs; k++) {
                argv[k] = op->args[k].ptr;
                lens[k] = op->args[k].len;
            }
            m_send(op, i, op->nargs, argv, lens, 0);
        }
    }
    free(argv);
    free(lens);
}

/* One part's MGET part stamp: kept when newer than the best so far. */
static void take_string(pk_mop *op, const pk_rr *r)
{
    const pk_rr *v, *st;
    const char *sp = "";
    size_t sl = 0;

    if (r->type != PK_RR_ARRAY || r->n != 2) {
        m_fail(op, "ERR unexpected reply from a part of the salted key");
        return;
    }
    v = &r->elems[0];
    st = &r->elems[1];
    if (st->type == PK_RR_BULK && st->len == PK__STAMP_LEN) {
        sp = st->str;
        sl = st->len;
        pk__salted_hlc_see(op->s, sp, sl);
    }
    if (v->type != PK_RR_BULK)
        return; /* no value (a stamp left by DEL or expiry) */
    if (op->have && memcmp(sp, op->stamp, sl) < 0)
        return;
    if (op->have && sl == 0)
        return; /* unstamped: older than anything kept */
    char *b = malloc(v->len ? v->len : 1);
    if (b == NULL) {
        m_fail(op, NULL);
        return;
    }
    memcpy(b, v->str, v->len);
    free(op->best);
    op->best = b;
    op->bestlen = v->len;
    memcpy(op->stamp, sp, sl);
    op->stamp[sl] = '\0';
    op->have = 1;
}

static void m_reply(pk_mop *op, pk_obuf *out)
{
    switch (op->want) {
    case M_GET:
        if (op->have)
            pk_reply_bulk(out, op->best, op->bestlen);
        else
            pk_reply_null(out, op->c->proto);
        break;
    case M_SET:
        pk_reply_simple(out, "OK");
        break;
    case M_FAN_ANY:
        pk_reply_int(out, op->have);
        break;
    default:
        pk_reply_int(out, op->ttl);
        break;
    }
}

static void m_finish(pk_mop *op)
{
    pk_conn *c = op->c;

    if (c) {
        if (op->err)
            pk_reply_error(&c->out, op->err);
        else
            m_reply(op, &c->out);
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
    m_free(op);
}

static void on_m_reply(void *ctx, const pk_rr *r, const char *err)
{
    mcall *call = ctx;
    pk_mop *op = call->op;

    op->pending--;
    if (err == NULL && r->type == PK_RR_ERROR)
        err = r->str;
    if (op->phase == MP_WRITE && err && strncmp(err, "SALTFOLD", 8) == 0 &&
        !op->fell_back) {
        /* The part's leader does not take it (its map says folding, or it
         * has not the salting yet): part 0 takes any write. */
        op->fell_back = 1;
        m_write(op, 0);
        if (op->pending > 0)
            return;
    } else if (err) {
        m_fail(op, err);
    } else if (op->phase == MP_PARTS || op->phase == MP_BASE) {
        take_string(op, r);
    } else if (op->phase == MP_FAN && r->type != PK_RR_INT) {
        m_fail(op, "ERR unexpected reply from a part of the salted key");
    } else if (op->phase == MP_FAN && op->want == M_FAN_ANY) {
        op->have |= r->integer > 0;
    } else if (op->phase == MP_FAN) {
        /* -2 < -1 < the longest expiry; -1 beats a finite one. */
        if (r->integer == -1 || op->ttl == -1)
            op->ttl = -1;
        else if (r->integer > op->ttl)
            op->ttl = r->integer;
    }
    if (op->pending > 0)
        return;
    if (op->phase == MP_PARTS && !op->err) {
        op->phase = MP_BASE;
        m_read(op, 0);
        if (op->pending > 0)
            return;
    }
    m_finish(op);
}

static pk_mop *m_new(pk_cmd_ctx *x, const pk_salt *e, int want)
{
    pk_mop *op = calloc(1, sizeof(*op));
    pk_mop **ops = pk__salted_mops(x->srv);

    if (op == NULL)
        return NULL;
    op->s = x->srv;
    op->want = want;
    op->e = *e;
    memcpy(op->key, e->key, e->len);
    op->e.key = op->key;
    op->ttl = -2;
    op->nargs = x->argc;
    if ((op->args = pk_conn_args_copy(x->argc, x->argv)) == NULL) {
        free(op);
        return NULL;
    }
    /* Listed first: m_free unlinks it, also when nothing went out. */
    op->next = *ops;
    *ops = op;
    return op;
}

/* op's calls went out from x: x's connection waits for them, or (none
 * went) x gets the error now.  Returns 0 (the command is answered or
 * waiting). */
static int m_started(pk_cmd_ctx *x, pk_mop *op)
{
    if (op->pending == 0) {
        pk_reply_error(x->out, op->err ? op->err
                                       : "ERR the salted key's parts are "
                                         "not reachable");
        m_free(op);
        return 0;
    }
    op->c = x->c;
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--; /* its reply comes when the parts have answered */
    return 0;
}

static int m_start(pk_cmd_ctx *x, const pk_salt *e, int want)
{
    pk_mop *op = m_new(x, e, want);

    if (op == NULL) {
        pk_reply_error(x->out, "ERR out of memory");
        return 0;
    }
    if (want == M_SET) {
        op->phase = MP_WRITE;
        pk__salted_hlc_stamp(x->srv, op->stamp);
        if (e->state != PK_SALT_SALTED)
            op->fell_back = 1; /* folding: part 0 takes the writes */
        m_write(op, op->fell_back ? 0 : pk__salted_pick(x->srv, e->n));
    } else if (want == M_GET) {
        op->phase = MP_PARTS;
        for (int i = 1; i < e->n; i++)
            m_read(op, i);
    } else {
        m_fan(op);
    }
    return m_started(x, op);
}

static int is(const pk_cmd *cmd, const char *name)
{
    return strcmp(cmd->name, name) == 0;
}

int pk__salted_more_route(pk_cmd_ctx *x, const pk_cmd *cmd, const pk_salt *e)
{
    pk_salt_kind kind = pk__salted_kind(e);

    if (is(cmd, "ttl") || is(cmd, "pttl"))
        return m_start(x, e, M_FAN_TTL);
    /* Folding, a part's value may be on its way into part 0: these wait
     * for the fold rather than miss it there. */
    if ((is(cmd, "expire") || is(cmd, "pexpire") || is(cmd, "expireat") ||
         is(cmd, "pexpireat") || is(cmd, "persist")) &&
        e->state == PK_SALT_SALTED)
        return m_start(x, e, M_FAN_ANY);
    if (kind != PK_SALT_STRING)
        return 1;
    if (is(cmd, "get") && x->argc == 2)
        return m_start(x, e, M_GET);
    if (is(cmd, "set") && x->argc == 3) {
        /* One clock stamps a key's SETs: its partition's leader's. */
        if (!pk__salted_leads(x->srv, e->key, e->len))
            return 2;
        return m_start(x, e, M_SET);
    }
    return 1;
}

void pk__salted_more_forget(pk_server *s, pk_conn *c)
{
    for (pk_mop *op = *pk__salted_mops(s); op; op = op->next)
        if (op->c == c)
            op->c = NULL;
}

void pk__salted_more_free(pk_server *s)
{
    pk_mop **ops = pk__salted_mops(s);

    while (*ops)
        m_free(*ops);
}

/* ---- the parts' side --------------------------------------------------- */

/* The stamp key of name (a part: a sub-key, or the key itself). */
static size_t stamp_of(const void *name, size_t len, uint8_t *out)
{
    const void *k;
    size_t kl;
    uint32_t tag;

    if (pk_salt_parse(name, len, &k, &kl, &tag))
        return pk_salt_stamp(k, kl, 1, tag, out, PK__SALT_NAME_CAP);
    return pk_salt_stamp(name, len, 0, 0, out, PK__SALT_NAME_CAP);
}

int pk__salted_add_str(pk_cmd_ctx *x, pk_txn *t)
{
    uint8_t sname[PK__SALT_NAME_CAP];
    size_t sl = stamp_of(x->argv[1].ptr, x->argv[1].len, sname);
    const pk_arg *st = &x->argv[4], *v = &x->argv[5];
    uint32_t part = pk_cmd_part(x, 1);
    pk_slice cur;
    int done, rc;

    if (x->argc != 6 || sl == 0 || st->len != PK__STAMP_LEN)
        return PK_EINVAL;
    rc = pk_str_get(t, part, sname, sl, NOW(x), &cur);
    if (rc == PK_OK && cur.len == PK__STAMP_LEN &&
        memcmp(cur.ptr, st->ptr, PK__STAMP_LEN) >= 0)
        return PK_OK; /* the part holds a newer (or this) write */
    if (rc != PK_OK && rc != PK_ENOTFOUND && rc != PK_STORE_WRONGTYPE)
        return rc;
    rc = pk_str_set(t, PK_KEY(x, 1), v->ptr, v->len, NULL, NOW(x), &done, NULL);
    if (rc == PK_OK)
        rc = pk_str_set(t, part, sname, sl, st->ptr, st->len, NULL, NOW(x),
                        &done, NULL);
    return rc;
}

int pk__salted_take_str(pk_cmd_ctx *x, pk_txn *t)
{
    uint8_t sname[PK__SALT_NAME_CAP];
    size_t sl = stamp_of(x->argv[1].ptr, x->argv[1].len, sname);
    pk_slice st, v;
    char sb[PK__STAMP_LEN];

    if (sl == 0 ||
        pk_str_get(t, pk_cmd_part(x, 1), sname, sl, NOW(x), &st) != PK_OK ||
        st.len != PK__STAMP_LEN)
        return 0;
    memcpy(sb, st.ptr, PK__STAMP_LEN); /* st is scratch until the next get */
    if (pk_str_get(t, PK_KEY(x, 1), NOW(x), &v) != PK_OK) {
        pk_reply_null(x->out, x->c->proto); /* nothing to fold */
        return 1;
    }
    pk_reply_array(x->out, 3);
    pk_reply_bulk(x->out, "str", 3);
    pk_reply_bulk(x->out, sb, PK__STAMP_LEN);
    pk_reply_bulk(x->out, v.ptr, v.len);
    return 1;
}

size_t pk__salted_stamp_of(const void *name, size_t len, uint8_t *out)
{
    return stamp_of(name, len, out);
}

/*
 * pk_salted_more: salted strings (last writer wins by a hybrid logical
 * clock), salted hashes and sorted sets (sums per field or member), and
 * the expiry commands fanned out to the parts of a salted key of any kind
 * (see pk_salted.h).  This is the side of the node that took the client's
 * command; pk_salted_part.c is the parts' side.
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
 *   HINCRBY HINCRBYFLOAT ZINCRBY
 *                        the increment to one random part (part 0
 *                        while folding), then the field's (member's)
 *                        total over every part
 *   HGET ZSCORE HGETALL HLEN
 *                        every part (parts 1..n-1, then part 0): totals
 *                        per field or member; HLEN counts the fields
 *                        some part holds
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
#include "core/pk_hash.h"
#include "core/pk_num.h"
#include "proto/pk_rreply.h"
#include "server/pk_cluster.h"
#include "server/pk_ctx.h"
#include "server/pk_salted_int.h"
#include "server/pk_srv.h"
#include "store/pk_hmap.h"
#include "store/pk_str.h"

/* What an operation answers its client. */
enum {
    M_GET,     /* GET of a salted string: the newest value */
    M_SET,     /* SET of a salted string: +OK */
    M_FAN_ANY, /* EXPIRE* PERSIST: 1 when some part said 1 */
    M_FAN_TTL, /* TTL PTTL */
    M_HINCR,   /* HINCRBY: the field's total, an integer */
    M_HINCRF,  /* HINCRBYFLOAT: the field's total, a float */
    M_ZINCR,   /* ZINCRBY: the member's total score */
    M_HGET,    /* HGET: the field's total */
    M_ZSCORE,  /* ZSCORE: the member's total score */
    M_HGETALL, /* HGETALL: every field's total */
    M_HLEN,    /* HLEN: the fields in some part */
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
    int warming;   /* SET: its parts' stamps are read first (warm) */
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
    /* Hashes, sorted sets: what the parts hold of the field(s) asked,
     * records u8 part | u32 len | field | u32 len | value; owned. */
    uint8_t *rec;
    size_t rlen, rcap;
    uint8_t folded[PK_SALT_PARTS_MAX]; /* part i is in part 0 already */
    const pk_arg *field; /* the field or member asked, in args, or NULL */
    mcall calls[PK_SALT_PARTS_MAX];
    pk_mop *next;
};

/* Hashes and sorted sets (sums per field or member). */
static int hashy(int want)
{
    return want >= M_HINCR;
}

static int zsety(int want)
{
    return want == M_ZINCR || want == M_ZSCORE;
}

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
    free(op->rec);
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
    const char *argv[4] = {"MGET", NULL, NULL, NULL};
    size_t lens[4] = {4, 0, 0, 0};
    char n[8];

    if (!hashy(op->want)) {
        m_send(op, idx, 3, argv, lens, 1);
        return;
    }
    if (idx == 0) { /* part 0 with the fold markers, in one read */
        argv[0] = "PK.SALTTAKE";
        argv[2] = "0";
        argv[3] = n;
        lens[0] = 11;
        lens[2] = 1;
        lens[3] = (size_t)snprintf(n, sizeof(n), "%d", op->e.n);
        m_send(op, idx, 4, argv, lens, 0);
        return;
    }
    if (op->field == NULL) {
        argv[0] = "HGETALL";
        lens[0] = 7;
        m_send(op, idx, 2, argv, lens, 0);
        return;
    }
    argv[0] = zsety(op->want) ? "ZSCORE" : "HGET";
    lens[0] = strlen(argv[0]);
    argv[2] = op->field->ptr;
    lens[2] = op->field->len;
    m_send(op, idx, 3, argv, lens, 0);
}

/* HINCRBY HINCRBYFLOAT ZINCRBY: the client's command on part idx. */
static void m_write_cmd(pk_mop *op, int idx)
{
    const char *argv[4];
    size_t lens[4];

    for (int k = 0; k < 4; k++) {
        argv[k] = op->args[k].ptr;
        lens[k] = op->args[k].len;
    }
    m_send(op, idx, 4, argv, lens, 0);
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

/* ---- hashes and sorted sets: sums per field ----------------------------- */

static int rec_add(pk_mop *op, int part, const char *f, size_t fl,
                   const char *v, size_t vl)
{
    size_t need = 1 + 4 + fl + 4 + vl;
    uint32_t n;

    if (op->rlen + need > op->rcap) {
        size_t cap = op->rcap ? op->rcap : 1024;
        uint8_t *m;
        while (cap < op->rlen + need)
            cap *= 2;
        if ((m = realloc(op->rec, cap)) == NULL)
            return PK_ENOMEM;
        op->rec = m;
        op->rcap = cap;
    }
    op->rec[op->rlen] = (uint8_t)part;
    n = (uint32_t)fl;
    memcpy(op->rec + op->rlen + 1, &n, 4);
    memcpy(op->rec + op->rlen + 5, f, fl);
    n = (uint32_t)vl;
    memcpy(op->rec + op->rlen + 5 + fl, &n, 4);
    memcpy(op->rec + op->rlen + 9 + fl, v, vl);
    op->rlen += need;
    return PK_OK;
}

/* A value as a part answered it: a bulk string, or a double (RESP3). */
static int rr_text(const pk_rr *r, char *buf, size_t cap, const char **p,
                   size_t *len)
{
    if (r->type == PK_RR_BULK || r->type == PK_RR_STATUS) {
        *p = r->str;
        *len = r->len;
        return 1;
    }
    if (r->type == PK_RR_DOUBLE || r->type == PK_RR_INT) {
        int n = r->type == PK_RR_INT
                    ? snprintf(buf, cap, "%lld", (long long)r->integer)
                    : snprintf(buf, cap, "%.17g", r->dbl);
        *p = buf;
        *len = (size_t)n;
        return 1;
    }
    return 0;
}

/* Field/value pairs of part idx (elems[0..n-1], alternating). */
static void take_pairs(pk_mop *op, int idx, const pk_rr *el, size_t n)
{
    char fb[40], vb[40];

    for (size_t k = 0; k + 1 < n; k += 2) {
        const char *f, *v;
        size_t fl, vl;
        if (!rr_text(&el[k], fb, sizeof(fb), &f, &fl) ||
            !rr_text(&el[k + 1], vb, sizeof(vb), &v, &vl)) {
            m_fail(op, "ERR unexpected reply from a part of the salted key");
            return;
        }
        if (op->field &&
            (fl != op->field->len || memcmp(f, op->field->ptr, fl) != 0))
            continue;
        if (rec_add(op, idx, f, fl, v, vl) != PK_OK)
            m_fail(op, NULL);
    }
}

/* One part's answer: HGET/ZSCORE (a value or nil), HGETALL (pairs), or
 * part 0's PK.SALTTAKE key 0 n ([fold markers, ["hash"|"zset", pairs]
 * or nil]). */
static void take_sums(pk_mop *op, int idx, const pk_rr *r)
{
    char vb[40];
    const char *v;
    size_t vl;

    if (op->phase == MP_BASE) {
        const pk_rr *t;
        if (r->type != PK_RR_ARRAY || r->n != 2 ||
            r->elems[0].type != PK_RR_BULK ||
            r->elems[0].len != (size_t)op->e.n) {
            m_fail(op, "ERR unexpected reply from the salted key's "
                       "partition");
            return;
        }
        for (int i = 1; i < op->e.n; i++)
            op->folded[i] = r->elems[0].str[i] == '1';
        t = &r->elems[1];
        if (t->type == PK_RR_ARRAY && t->n >= 1)
            take_pairs(op, 0, t->elems + 1, t->n - 1);
        else if (t->type != PK_RR_NIL)
            m_fail(op, "WRONGTYPE Operation against a key holding the "
                       "wrong kind of value");
        return;
    }
    if (r->type == PK_RR_NIL)
        return;
    if (r->type == PK_RR_ARRAY || r->type == PK_RR_MAP) {
        take_pairs(op, idx, r->elems, r->type == PK_RR_MAP ? 2 * r->n : r->n);
    } else if (rr_text(r, vb, sizeof(vb), &v, &vl) && op->field) {
        if (rec_add(op, idx, op->field->ptr, op->field->len, v, vl) != PK_OK)
            m_fail(op, NULL);
    } else {
        m_fail(op, "ERR unexpected reply from a part of the salted key");
    }
}

static int cmp_rec(const void *x, const void *y)
{
    const uint8_t *a = *(const uint8_t *const *)x;
    const uint8_t *b = *(const uint8_t *const *)y;
    uint32_t al, bl;
    int c;

    memcpy(&al, a + 1, 4);
    memcpy(&bl, b + 1, 4);
    c = memcmp(a + 5, b + 5, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

/* The total of one field: the records v[0..n-1] (n >= 1) summed into
 * out (a lone value as it is); its length, or 0 with *err set. */
static size_t field_total(pk_mop *op, const uint8_t *const *v, size_t n,
                          char *out, size_t cap, const char **err)
{
    int64_t isum = 0, iv;
    long double fsum = 0, fv;
    double dsum = 0;
    int ints = 1;

    for (size_t k = 0; k < n; k++) {
        uint32_t fl, vl;
        const char *p;
        memcpy(&fl, v[k] + 1, 4);
        memcpy(&vl, v[k] + 5 + fl, 4);
        p = (const char *)v[k] + 9 + fl;
        if (n == 1 && !zsety(op->want)) {
            if (vl >= cap) {
                *err = "ERR a value of the salted key is too long";
                return 0;
            }
            memcpy(out, p, vl);
            return vl;
        }
        if (zsety(op->want)) {
            char b[64];
            memcpy(b, p, vl < 63 ? vl : 63);
            b[vl < 63 ? vl : 63] = '\0';
            dsum += strtod(b, NULL);
            continue;
        }
        if (ints && pk_str_parse_int(p, vl, &iv) == PK_OK &&
            !__builtin_add_overflow(isum, iv, &isum)) {
            fsum += (long double)iv;
            continue;
        }
        ints = 0;
        if (!pk_hmap_parse_ld(p, vl, &fv)) {
            *err = "ERR hash value is not a number in a part of the salted "
                   "key";
            return 0;
        }
        fsum += fv;
    }
    if (zsety(op->want))
        return (size_t)snprintf(out, cap, "%.17g", dsum);
    if (ints && op->want != M_HINCRF)
        return (size_t)snprintf(out, cap, "%lld", (long long)isum);
    return pk_ld_format(out, cap, fsum);
}

/* The answer of a hash or sorted-set read from the records. */
static void reply_sums(pk_mop *op, pk_obuf *out)
{
    size_t nr = 0, ng = 0;
    const uint8_t **v;
    const char *err = NULL;
    char tot[PK_HMAP_FLOAT_MAX + 64];
    size_t tl = 0;
    int proto = op->c->proto;

    for (size_t at = 0; at < op->rlen; nr++) {
        uint32_t fl, vl;
        memcpy(&fl, op->rec + at + 1, 4);
        memcpy(&vl, op->rec + at + 5 + fl, 4);
        at += 9 + fl + vl;
    }
    if ((v = malloc((nr ? nr : 1) * sizeof(*v))) == NULL) {
        pk_reply_error(out, "ERR out of memory");
        return;
    }
    nr = 0;
    for (size_t at = 0; at < op->rlen;) {
        uint32_t fl, vl;
        memcpy(&fl, op->rec + at + 1, 4);
        memcpy(&vl, op->rec + at + 5 + fl, 4);
        if (op->rec[at] == 0 || !op->folded[op->rec[at]])
            v[nr++] = op->rec + at;
        at += 9 + fl + vl;
    }
    qsort(v, nr, sizeof(*v), cmp_rec);
    for (size_t k = 0; k < nr; k++)
        ng += k == 0 || cmp_rec(&v[k - 1], &v[k]) != 0;
    if (op->want == M_HLEN) {
        pk_reply_int(out, (int64_t)ng);
    } else if (op->want == M_HGETALL) {
        pk_obuf ob;
        pk_obuf_init(&ob);
        for (size_t k = 0, g; k < nr && !err; k = g) {
            uint32_t fl;
            for (g = k + 1; g < nr && cmp_rec(&v[k], &v[g]) == 0; g++)
                ;
            tl = field_total(op, v + k, g - k, tot, sizeof(tot), &err);
            memcpy(&fl, v[k] + 1, 4);
            pk_reply_bulk(&ob, v[k] + 5, fl);
            pk_reply_bulk(&ob, tot, tl);
        }
        if (err) {
            pk_reply_error(out, err);
        } else {
            pk_reply_map(out, proto, ng);
            pk_obuf_append(out, ob.data + ob.head, pk_obuf_pending(&ob));
        }
        pk_obuf_free(&ob);
    } else if (nr == 0) {
        /* ZINCRBY and HINCRBY always find their own write. */
        pk_reply_null(out, proto);
    } else {
        tl = field_total(op, v, nr, tot, sizeof(tot), &err);
        if (err) {
            pk_reply_error(out, err);
        } else if (op->want == M_HINCR) {
            int64_t iv;
            if (pk_str_parse_int(tot, tl, &iv) == PK_OK)
                pk_reply_int(out, iv);
            else
                pk_reply_error(out, "ERR hash value is not an integer");
        } else if (zsety(op->want)) {
            pk_reply_double(out, proto, strtod(tot, NULL));
        } else {
            pk_reply_bulk(out, tot, tl);
        }
    }
    free(v);
}

static void m_reply(pk_mop *op, pk_obuf *out)
{
    if (hashy(op->want)) {
        reply_sums(op, out);
        return;
    }
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

/* Whether this node, leading key's partition, has read the key's stamps
 * in the present leader epoch; set: remember that it has. */
static int warm(pk_server *s, const pk_salt *e, int set)
{
    pk__hlc *h = pk__salted_hlc(s);
    const pk_pmap *m = s->cluster.map;
    uint64_t hash = pk_hash_xxh3(e->key, e->len);
    uint64_t ep =
        m->parts[pk_cluster_part(&s->cluster, e->key, e->len)].leader_epoch;
    uint32_t i = (uint32_t)(hash % PK__HLC_WARM);

    if (set) {
        h->warm_hash[i] = hash;
        h->warm_epoch[i] = ep;
    }
    return h->warm_hash[i] == hash && h->warm_epoch[i] == ep;
}

/* The SET's write: stamped now, to one part (part 0 while folding). */
static void m_set_write(pk_mop *op)
{
    op->phase = MP_WRITE;
    pk__salted_hlc_stamp(op->s, op->stamp);
    if (op->e.state != PK_SALT_SALTED)
        op->fell_back = 1; /* folding: part 0 takes the writes */
    m_write(op, op->fell_back ? 0 : pk__salted_pick(op->s, &op->e, 1));
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
        if (hashy(op->want))
            m_write_cmd(op, 0);
        else
            m_write(op, 0);
        if (op->pending > 0)
            return;
    } else if (err) {
        m_fail(op, err);
    } else if (op->phase == MP_WRITE && hashy(op->want)) {
        /* Written: the total is read from every part. */
        op->phase = MP_PARTS;
        for (int i = 1; i < op->e.n; i++)
            m_read(op, i);
        if (op->pending > 0)
            return;
    } else if ((op->phase == MP_PARTS || op->phase == MP_BASE) &&
               hashy(op->want)) {
        take_sums(op, call->idx, r);
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
    if (op->warming && op->phase == MP_BASE && !op->err) {
        op->warming = 0; /* every part's stamp seen: now the write */
        warm(op->s, &op->e, 1);
        m_set_write(op);
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
    pk__salted_own_entry(&op->e, op->key, e);
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
    if (want == M_HINCR || want == M_HINCRF || want == M_ZINCR) {
        op->phase = MP_WRITE;
        op->field = &op->args[want == M_ZINCR ? 3 : 2];
        if (e->state != PK_SALT_SALTED)
            op->fell_back = 1; /* folding: part 0 takes the writes */
        m_write_cmd(op, op->fell_back ? 0 : pk__salted_pick(x->srv, e, 0));
    } else if (hashy(want)) {
        op->phase = MP_PARTS;
        op->field = want == M_HGET || want == M_ZSCORE ? &op->args[2] : NULL;
        for (int i = 1; i < e->n; i++)
            m_read(op, i);
    } else if (want == M_SET && !warm(x->srv, e, 0)) {
        /* The first SET of the key in this term reads the parts' stamps
         * first (m_set_write then), so that it stamps past every SET an
         * earlier leader acknowledged, whatever the clocks say. */
        op->warming = 1;
        op->phase = MP_PARTS;
        for (int i = 1; i < e->n; i++)
            m_read(op, i);
    } else if (want == M_SET) {
        m_set_write(op);
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
    if (kind == PK_SALT_HASH) {
        if ((is(cmd, "hincrby") || is(cmd, "hincrbyfloat")) && x->argc == 4)
            return m_start(x, e, is(cmd, "hincrby") ? M_HINCR : M_HINCRF);
        if (is(cmd, "hget") && x->argc == 3)
            return m_start(x, e, M_HGET);
        if (is(cmd, "hgetall") && x->argc == 2)
            return m_start(x, e, M_HGETALL);
        if (is(cmd, "hlen") && x->argc == 2)
            return m_start(x, e, M_HLEN);
    }
    if (kind == PK_SALT_ZSET) {
        if (is(cmd, "zincrby") && x->argc == 4)
            return m_start(x, e, M_ZINCR);
        if (is(cmd, "zscore") && x->argc == 3)
            return m_start(x, e, M_ZSCORE);
    }
    if (kind != PK_SALT_STRING)
        return 1;
    if (is(cmd, "get") && x->argc == 2)
        return m_start(x, e, M_GET);
    if (is(cmd, "set") && x->argc == 3) {
        /* One clock stamps a key's SETs: its partition's leader's. */
        if (!pk__salted_leads(x->srv, e->key, e->len, NULL))
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

/*
 * pk_salted: salted keys on the command path (pk_salted_route), what the
 * parts' side answers a salting or a fold (PK.SALTTAKE, PK.SALTADD,
 * PK.SALTDROP), and the helpers the other pk_salted_*.c share: parts'
 * names and leaders, calls on raw links, numbers (pk_salted_int.h).
 * See pk_salted.h for the whole.
 */
#include "server/pk_salted.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "core/pk_salt.h"
#include "proto/pk_rreply.h"
#include "server/pk_cluster.h"
#include "server/pk_ctx.h"
#include "server/pk_link.h"
#include "server/pk_salted_int.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_str.h"

#define NAME_CAP PK__SALT_NAME_CAP
#define VAL_CAP PK__SALT_VAL_CAP

typedef struct pk_salted {
    pk__salt_counts *counts; /* counters' operations (pk_salted_count.c) */
    pk_uop *uops;            /* sets' and HLLs' reads (pk_salted_sets.c) */
    pk_mop *mops;            /* strings' and expiry ops (pk_salted_more.c) */
    pk__hlc hlc;             /* this node's clock for strings' stamps */
    pk__salt_runs *runs;     /* salting and folding (pk_salted_run.c) */
    uint64_t rng;
    pk_arg *argv; /* pk__salted_rename_key's command; owned */
    int argv_cap;
    uint8_t name[NAME_CAP];
} pk_salted;

uint64_t pk__salted_rnd(pk_server *s)
{
    pk_salted *sd = s->salted;

    sd->rng ^= sd->rng << 13;
    sd->rng ^= sd->rng >> 7;
    sd->rng ^= sd->rng << 17;
    return sd->rng;
}

/* ---- names and places ---------------------------------------------- */

size_t pk__salted_part_name(const pk_salt *e, int i, uint8_t *out)
{
    if (i == 0) {
        memcpy(out, e->key, e->len);
        return e->len;
    }
    return pk_salt_subkey(e->key, e->len, e->tags[i], out, NAME_CAP);
}

const char *pk__salted_leader_of(const pk_server *s, const void *name,
                                 size_t len)
{
    const pk_cluster *cl = &s->cluster;
    uint32_t p = pk_cluster_part(cl, name, len);
    uint32_t l = pk_pmap_leader(cl->map, p);

    return l == PK_NODE_NONE ? NULL : cl->map->nodes[l].addr;
}

int pk__salted_leads(const pk_server *s, const void *key, size_t len,
                     uint32_t *part)
{
    const pk_cluster *cl = &s->cluster;
    uint32_t p = pk_cluster_part(cl, key, len);

    if (part)
        *part = p;
    return pk_pmap_leader(cl->map, p) == cl->self;
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

int pk__salted_send_to(pk_server *s, const char *addr, int argc,
                       const char *const *argv, const size_t *lens,
                       pk_link_cb cb, void *ctx)
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
    return pk__salted_send_to(s, pk__salted_leader_of(s, argv[1], lens[1]),
                              argc, argv, lens, cb, ctx);
}

/* ---- numbers ----------------------------------------------------------- */

int pk__salted_parse_num(const char *v, size_t len, int64_t *i, long double *f)
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

void pk__salted_keep_value(char *dst, uint8_t *dlen, const pk_rr *r)
{
    size_t n = r->type == PK_RR_INT ? (size_t)snprintf(dst, VAL_CAP, "%lld",
                                                       (long long)r->integer)
               : r->len < VAL_CAP   ? r->len
                                    : VAL_CAP - 1;

    if (r->type != PK_RR_INT)
        memcpy(dst, r->str, n);
    *dlen = (uint8_t)n;
}

/* x's argv with argument 1 replaced by name (valid while the command
 * runs or until it is copied); 0 when out of memory. */
int pk__salted_rename_key(pk_cmd_ctx *x, const uint8_t *name, size_t len)
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

/* ---- the command path -------------------------------------------------- */

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

/* SADD, PFADD, and INCR with --salted-incr-reply local: the write goes
 * to a random part as an ordinary command on the part's name (run here or
 * forwarded like any other), and its reply is the part's. */
static int write_local(pk_cmd_ctx *x, const pk_salt *e)
{
    int part = pk__salted_pick(x->srv, e, 0);
    uint8_t name[NAME_CAP];
    size_t len;

    if (part != 0 && (len = pk__salted_part_name(e, part, name)) != 0)
        pk__salted_rename_key(x, name, len); /* else part 0 takes any write */
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
        pk__salted_note_set(x->srv, k->ptr, k->len);
    if (m->nsalts == 0)
        return 1;
    if ((e = later_salted(x, cmd, m)) != NULL) {
        /* A command on several keys (DEL a b, RENAME's destination,
         * SUNIONSTORE ...) runs on them folded back into one: it sees and
         * replaces a salted key whole, parts included. */
        pk__salted_ask_fold(x->srv, e);
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
        return pk__salted_start_read(x, e,
                                     is(cmd, "get") ? PK__R_GET : PK__R_EXISTS);
    if (kind == PK_SALT_COUNTER && is(cmd, "type"))
        return pk__salted_start_read(x, e, PK__R_TYPE);
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
            pk__salted_total_here(x, cmd, e, incr ? PK__R_INT : PK__R_FLOAT))
            return 0;
        if (write)
            return pk__salted_start_write(x, e, incr ? PK__R_INT : PK__R_FLOAT,
                                          x->c->internal);
        if ((is(cmd, "del") || is(cmd, "unlink")) && x->argc == 2)
            return pk__salted_start_del(x, e);
    } else if (write) {
        return 1; /* folding: part 0 takes the writes */
    }
    /* Anything else runs on the key folded back into one: it waits for
     * that (pk_conn_hold: released by the map without the entry, or
     * -TRYAGAIN after a while). */
    pk__salted_ask_fold(x->srv, e);
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
    pk__salted_ask_fold(x->srv, e);
    pk_reply_error(x->out, "TRYAGAIN the key is salted and is being folded "
                           "back for the transaction; retry");
    return 0;
}

/* ---- the parts' side: what a salting or a fold asks ------------ */

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
        int k = pk__salted_parse_num(x->argv[3].ptr, x->argv[3].len, &iv, &fv);
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
    pk__salted_counts_forget(sd->counts, c);
    pk__salted_sets_forget(s, c);
    pk__salted_more_forget(s, c);
    pk__salted_runs_forget(sd->runs, c);
}

int pk_salted_init(pk_server *s)
{
    pk_salted *sd = calloc(1, sizeof(*sd));

    if (sd == NULL || (sd->counts = pk__salted_counts_new()) == NULL ||
        (sd->runs = pk__salted_runs_new(&s->loop)) == NULL) {
        if (sd)
            pk__salted_counts_free(sd->counts);
        free(sd);
        return PK_ENOMEM;
    }
    sd->rng = pk_srv_wall_ms() * 2654435761u + (uint64_t)getpid() + 1;
    s->salted = sd;
    return PK_OK;
}

/* Every operation's calls were failed by the links' close. */
void pk_salted_free(pk_server *s)
{
    pk_salted *sd = s->salted;

    if (sd == NULL)
        return;
    pk__salted_counts_free(sd->counts);
    pk__salted_sets_free(s);
    pk__salted_more_free(s);
    pk__salted_runs_free(sd->runs);
    free(sd->argv);
    free(sd);
    s->salted = NULL;
}

pk__salt_counts *pk__salted_counts(pk_server *s)
{
    return s->salted->counts;
}

pk__salt_runs *pk__salted_runs(pk_server *s)
{
    return s->salted->runs;
}

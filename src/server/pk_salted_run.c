/*
 * pk_salted_run: salting a key and folding it back, run by the leader of
 * the key's partition one step at a time (a call to a part's leader or a
 * map edit through the agent), the tick that starts them for keys that
 * run hot or stay cold, and PK.SALT / PK.UNSALT, which start them by
 * hand (pk_salted.h).  The command path, and the parts' side of a fold
 * (PK.SALTTAKE, PK.SALTADD, PK.SALTDROP), are pk_salted.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"
#include "core/pk_salt.h"
#include "core/pk_topk.h"
#include "proto/pk_rreply.h"
#include "server/pk_agent.h"
#include "server/pk_cluster.h"
#include "server/pk_ctx.h"
#include "server/pk_link.h"
#include "server/pk_salted.h"
#include "server/pk_salted_int.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_str.h"

#define NAME_CAP PK__SALT_NAME_CAP
#define VAL_CAP PK__SALT_VAL_CAP
#define STEP_RETRY_MS 50 /* a fold or salting step that failed goes again */
#define ANSWER_TRIES 100 /* after so many, the client asking is answered */
#define COOL_MS 60000    /* a key folded for a command stays unsalted */
#define WATCHED 32       /* keys followed for --hot-key-time / unsalt */

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

/* The runs of this node, and the keys the tick follows. */
struct pk__salt_runs {
    salting *runs;
    uv_timer_t timer; /* retries failed steps */
    watch hot[WATCHED], cold[WATCHED];
    watch cool[WATCHED]; /* folded for a command or by hand: not salted
                          * again by the tick for COOL_MS */
};

/* ---- salting and folding, at the key's leader --------------------------- */

static void run_step(salting *r);

static salting *run_find(pk__salt_runs *sd, const void *key, size_t len)
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
    pk__salt_runs *sd = pk__salted_runs(r->s);

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
            pk__salted_keep_value(num, &nlen, rr);
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
    return pk__salted_send_to(r->s,
                              pk__salted_leader_of(r->s, r->e.key, r->e.len),
                              r->e.n + 1, argv, lens, on_run_reply, r);
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
        len = pk__salted_part_name(&r->e, r->i, name);
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
        rc = pk__salted_send_to(s, pk__salted_leader_of(s, name, len), 3, argv,
                                lens, on_run_reply, r);
        break;
    }
    case ST_PUT: { /* the link consumes the bytes: a retry copies again */
        const char *addr = pk__salted_leader_of(s, r->e.key, r->e.len);
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
        rc = pk__salted_send_to(s, pk__salted_leader_of(s, name, len), 2, argv,
                                lens, on_run_reply, r);
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
    pk__salt_runs *sd = t->data;
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
    pk__salt_runs *sd = pk__salted_runs(s);
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
    salting *r = run_find(pk__salted_runs(s), key, len);
    uint32_t part;

    if (e == NULL)
        return "ERR the key is not salted";
    if (!pk__salted_leads(s, key, len, &part))
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
    uint32_t j = (uint32_t)(pk__salted_rnd(s) % 1000000u);

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
    if (!pk__salted_leads(s, key, len, &part))
        return "ERR this node does not lead the key's partition: ask its "
               "leader";
    if (pk_pmap_salt_find(s->cluster.map, key, len))
        return "ERR the key is salted already";
    if (run_find(pk__salted_runs(s), key, len))
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
             (sets || pk__salted_parse_num(v.ptr, v.len, &iv, &fv) == 0))
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

/* ---- hot and cold keys ---------------------------------------------- */

/* A key folded back for a command that cannot be split (or by hand): a
 * workload that mixes such commands with hot writes would otherwise be
 * salted and folded over and over, each fold holding its clients.  The
 * tick does not salt it again for COOL_MS (PK.SALT still does). */
static void cool_mark(pk__salt_runs *sd, const void *key, size_t len)
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
static int cooling(pk__salt_runs *sd, const void *key, size_t len, uint64_t now)
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

void pk__salted_ask_fold(pk_server *s, const pk_salt *e)
{
    uint32_t part;

    if (pk__salted_leads(s, e->key, e->len, &part)) {
        cool_mark(pk__salted_runs(s), e->key, e->len);
        fold_start(s, e->key, e->len, NULL);
        return;
    }
    const char *argv[2] = {"PK.UNSALT", (const char *)e->key};
    size_t lens[2] = {9, e->len};
    pk__salted_send_to(s, pk__salted_leader_of(s, e->key, e->len), 2, argv,
                       lens, NULL, NULL);
}

void pk__salted_note_set(pk_server *s, const void *key, size_t len)
{
    pk__salt_runs *sd = pk__salted_runs(s);

    for (int i = 0; i < WATCHED; i++)
        if (sd->hot[i].len == len && len &&
            memcmp(sd->hot[i].key, key, len) == 0)
            sd->hot[i].sets = 1;
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
    const pk_pmap *m = s->cluster.map;
    const pk_topk_entry *top[128];
    uint64_t now = pk_srv_wall_ms();
    double thr = (double)s->cfg.hot_key_writes;
    uint32_t nt = 0, part;
    pk_txn *t = NULL;
    pk__salt_runs *sd;

    if (s->salted == NULL || m == NULL || m->scheme == PK_SCHEME_RANGE ||
        s->agent == NULL)
        return;
    sd = pk__salted_runs(s);
    if (s->hot)
        nt = pk_topk_top(s->hot, top, 128);
    /* Salted keys led here: resume a fold, or fold what stays cold. */
    for (uint32_t i = 0; i < m->nsalts; i++) {
        const pk_salt *e = &m->salts[i];
        double rate = 0;
        watch *w;
        if (!pk__salted_leads(s, e->key, e->len, &part) ||
            run_find(sd, e->key, e->len))
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
            !pk__salted_leads(s, te->key, te->len, &part) ||
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
        cool_mark(pk__salted_runs(x->srv), x->argv[1].ptr, x->argv[1].len);
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

/* ---- lifetime ---------------------------------------------------------- */

pk__salt_runs *pk__salted_runs_new(uv_loop_t *loop)
{
    pk__salt_runs *sd = calloc(1, sizeof(*sd));

    if (sd == NULL)
        return NULL;
    uv_timer_init(loop, &sd->timer);
    sd->timer.data = sd;
    uv_timer_start(&sd->timer, on_timer, STEP_RETRY_MS, STEP_RETRY_MS);
    return sd;
}

void pk__salted_runs_forget(pk__salt_runs *sd, pk_conn *c)
{
    for (salting *r = sd->runs; r; r = r->next)
        if (r->c == c)
            r->c = NULL;
}

static void on_timer_close(uv_handle_t *h)
{
    free(h->data);
}

void pk__salted_runs_free(pk__salt_runs *sd)
{
    if (sd == NULL)
        return;
    while (sd->runs) {
        salting *r = sd->runs;
        sd->runs = r->next;
        free(r->put);
        free(r);
    }
    uv_close((uv_handle_t *)&sd->timer, on_timer_close);
}

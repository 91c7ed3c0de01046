/* pk_agent: registration, lease renewal and map polling (see pk_agent.h). */
#include "server/pk_agent.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/pk_err.h"
#include "core/pk_ftdef.h"
#include "core/pk_pmap.h"
#include "core/pk_pmap_move.h"
#include "core/pk_range.h"
#include "proto/pk_rreply.h"
#include "server/pk_acl.h"
#include "server/pk_sclient.h"
#include "server/pk_srv.h"

#define KEEPALIVE_MS 300
#define CALL_TIMEOUT_MS 2000
#define RECORD_POLL_MS 200

struct pk_agent {
    pk_server *srv;
    pthread_t thread;
    atomic_int stop;
    char host[256];
    int port;
    char secret[256];
    pk_sclient *cli;  /* NULL while disconnected */
    char why[192];    /* the last reason a connect failed, logged once */
    uint64_t lease;   /* 0 while unregistered */
    uint64_t map_rev; /* mod_revision of the last map handed over */
    int64_t last_keepalive;
    int proxy;     /* follow a node's PK.MAP instead of the coordinator */
    pk_pmap *last; /* proxy: the map last posted */
    pthread_mutex_t lock; /* guards jobs */
    pthread_cond_t wake;  /* a job was submitted */
    pk_agent_job *jobs;   /* commits to run, oldest first */
    int job_backoff;      /* the first job failed: retry after a wait */
    int64_t last_record;  /* when the rebalance record was last read */
    uint64_t acl_rev;     /* mod_revision of the users last handed over */
    int64_t last_acl;     /* when they were last read */
    atomic_int rb_paused;
    atomic_ullong rb_rate;
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Sleeps up to ms, waking early when a job is submitted. */
static void wait_ms(pk_agent *a, int ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&a->lock);
    if (a->jobs == NULL || a->job_backoff)
        pthread_cond_timedwait(&a->wake, &a->lock, &ts);
    pthread_mutex_unlock(&a->lock);
}

/* One call; a transport failure drops the connection. */
static int call(pk_agent *a, pk_rr **reply, int argc, const char *const *argv,
                const size_t *lens)
{
    int rc = pk_sclient_call(a->cli, argc, argv, lens, reply);

    if (rc != PK_OK) {
        pk_sclient_free(a->cli);
        a->cli = NULL;
        a->lease = 0;
    }
    return rc;
}

/* The first integer of an array reply ([rev, ...]) at index i, or -1. */
static int64_t elem_int(const pk_rr *r, size_t i)
{
    if (r->type != PK_RR_ARRAY || r->n <= i || r->elems[i].type != PK_RR_INT)
        return -1;
    return r->elems[i].integer;
}

static int ensure_member(pk_agent *a);
static void post_map(pk_agent *a, pk_pmap *m);

static int connect_and_register(pk_agent *a)
{
    pk_cluster *cl = &a->srv->cluster;
    char key[PK_NAME_MAX + 64], ttl[24], lease[24];
    const char *auth[] = {"PK.AUTH", a->secret};
    const char *grant[] = {"PK.COORD", "GRANT", ttl};
    pk_rr *r = NULL;
    int64_t id;

    if (pk_sclient_connect_from(a->srv->cfg.bind, a->host, a->port,
                                CALL_TIMEOUT_MS, &a->cli) != PK_OK ||
        call(a, &r, 2, auth, NULL) != PK_OK) {
        /* Once per reason, not per retry. */
        if (strcmp(a->why, pk_sclient_why()) != 0) {
            snprintf(a->why, sizeof(a->why), "%s", pk_sclient_why());
            fprintf(stderr,
                    "partkv: cannot reach the coordinator at %s:%d: "
                    "%s\n",
                    a->host, a->port, a->why);
        }
        return -1;
    }
    a->why[0] = '\0';
    if (r->type != PK_RR_STATUS) {
        fprintf(stderr, "partkv: coordinator refused the secret: %s\n",
                r->str ? r->str : "?");
        pk_rr_free(r);
        pk_sclient_free(a->cli);
        a->cli = NULL;
        return -1;
    }
    pk_rr_free(r);
    snprintf(ttl, sizeof(ttl), "%d", PK_AGENT_LEASE_MS);
    if (call(a, &r, 3, grant, NULL) != PK_OK)
        return -1;
    id = elem_int(r, 1);
    pk_rr_free(r);
    if (id <= 0)
        return -1;
    snprintf(lease, sizeof(lease), "%lld", (long long)id);
    snprintf(key, sizeof(key), PK_CLUSTER_PREFIX "nodes/%s", cl->name);
    const char *put[] = {"PK.COORD", "PUT", key, cl->addr, lease};
    if (call(a, &r, 5, put, NULL) != PK_OK)
        return -1;
    pk_rr_free(r);
    a->lease = (uint64_t)id;
    a->last_keepalive = mono_ms();
    a->map_rev = 0; /* a coordinator restarted on new state starts over */
    return ensure_member(a);
}

static void keepalive(pk_agent *a)
{
    char lease[24];
    const char *argv[] = {"PK.COORD", "KEEPALIVE", lease};
    pk_rr *r = NULL;

    snprintf(lease, sizeof(lease), "%llu", (unsigned long long)a->lease);
    if (call(a, &r, 3, argv, NULL) != PK_OK)
        return;
    if (r->type == PK_RR_ERROR) /* expired: register again */
        a->lease = 0;
    pk_rr_free(r);
    a->last_keepalive = mono_ms();
}

/* Hands a decoded map to the loop; the loop frees any it did not take. */
static void post_map(pk_agent *a, pk_pmap *m)
{
    pk_server *s = a->srv;

    pthread_mutex_lock(&s->map_lock);
    pk_pmap_free(s->map_pending);
    s->map_pending = m;
    pthread_mutex_unlock(&s->map_lock);
    uv_async_send(&s->map_async);
}

/*
 * The map and its mod_revision.  Returns 0, PK_ENOTFOUND (no map yet),
 * PK_ECORRUPT, or a transport error (the connection is then dropped).
 */
static int get_map_since(pk_agent *a, uint64_t since, pk_pmap **m,
                         uint64_t *rev)
{
    char s[24];
    const char *argv[] = {"PK.COORD", "GET", PK_CLUSTER_PREFIX "map", s};
    pk_rr *r = NULL, *kv;
    int rc;

    snprintf(s, sizeof(s), "%llu", (unsigned long long)since);
    rc = call(a, &r, since ? 4 : 3, argv, NULL);
    if (rc != PK_OK)
        return rc;
    if (since && r->type == PK_RR_ARRAY && r->n == 1) {
        pk_rr_free(r);
        return PK_EEXIST; /* unchanged since mod_revision `since` */
    }
    rc = PK_ENOTFOUND;
    if (r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        kv = &r->elems[1];
        *rev = (uint64_t)kv->elems[3].integer;
        rc = pk_pmap_decode((const uint8_t *)kv->elems[1].str, kv->elems[1].len,
                            m);
    }
    pk_rr_free(r);
    return rc;
}

static int get_map(pk_agent *a, pk_pmap **m, uint64_t *rev)
{
    return get_map_since(a, 0, m, rev);
}

/*
 * Writes m over the map at mod_revision rev.  Returns 0 and posts m to the
 * loop (taking it), PK_ESTALE (someone else changed the map first), or
 * another error; m stays the caller's on error.
 */
static int cas_map(pk_agent *a, pk_pmap *m, uint64_t rev)
{
    char srev[24];
    uint8_t *buf = NULL;
    size_t len = 0;
    pk_rr *r = NULL;
    int rc = pk_pmap_encode(m, &buf, &len);

    if (rc != PK_OK)
        return rc;
    snprintf(srev, sizeof(srev), "%llu", (unsigned long long)rev);
    const char *argv[] = {
        "PK.COORD",        "CAS", PK_CLUSTER_PREFIX "map", srev,
        (const char *)buf, "0"};
    size_t lens[] = {8, 3, strlen(argv[2]), strlen(srev), len, 1};
    rc = call(a, &r, 6, argv, lens);
    free(buf);
    if (rc != PK_OK)
        return rc;
    if (r->type == PK_RR_ARRAY && r->n >= 1 && r->elems[0].type == PK_RR_INT) {
        a->map_rev = (uint64_t)r->elems[0].integer;
        post_map(a, m);
    } else {
        rc = r->type == PK_RR_ERROR && strncmp(r->str, "ESTALE", 6) == 0
                 ? PK_ESTALE
                 : PK_EPROTO;
    }
    pk_rr_free(r);
    return rc;
}

static void poll_record(pk_agent *a);

static void poll_map(pk_agent *a)
{
    pk_pmap *m = NULL;
    uint64_t rev = 0;

    if (get_map_since(a, a->map_rev, &m, &rev) != PK_OK)
        return;
    if (rev != a->map_rev) {
        a->map_rev = rev;
        a->last_record = 0; /* a new move may come with a new rate: */
        poll_record(a);     /* read it before the loop sees the move */
        post_map(a, m);
    } else {
        pk_pmap_free(m);
    }
}

/*
 * A node that joins adds itself to an existing map (UP, weight 1, no
 * partitions: a rebalance gives it some) and a known node whose address
 * changed records the new one.  No map yet: `cluster up` makes it.
 */
static int ensure_member(pk_agent *a)
{
    pk_cluster *cl = &a->srv->cluster;

    for (;;) {
        pk_pmap *m = NULL;
        uint64_t rev = 0;
        uint32_t id;
        int rc = get_map(a, &m, &rev);
        if (rc == PK_ENOTFOUND || rc == PK_ECORRUPT)
            return 0;
        if (rc != PK_OK)
            return -1;
        if (pk_pmap_node_find(m, cl->name, &id) == PK_OK) {
            if (strcmp(m->nodes[id].addr, cl->addr) == 0) {
                pk_pmap_free(m);
                return 0;
            }
            snprintf(m->nodes[id].addr, sizeof(m->nodes[id].addr), "%s",
                     cl->addr);
        } else if (pk_pmap_node_add(m, cl->name, cl->addr, NULL, 1.0, &id) !=
                   PK_OK) {
            pk_pmap_free(m);
            return -1;
        }
        m->epoch++;
        rc = cas_map(a, m, rev);
        if (rc == PK_OK)
            return 0;
        pk_pmap_free(m);
        if (rc != PK_ESTALE)
            return -1;
    }
}

/* The loop must hold the map m as read before it lifts a fence: posts it
 * unless it is the one the agent last gave (frees it then). */
static void post_if_new(pk_agent *a, pk_pmap *m, uint64_t rev)
{
    if (rev != a->map_rev) {
        a->map_rev = rev;
        post_map(a, m);
    } else {
        pk_pmap_free(m);
    }
}

/* 1 when p is led by self at epoch in m. */
static int led_at(const pk_pmap *m, uint32_t p, uint32_t self, uint64_t epoch)
{
    return pk_pmap_leader(m, p) == self && m->parts[p].leader_epoch == epoch;
}

/*
 * A range edit (see pk_agent_job) on m: 1 when m holds it already (an
 * earlier attempt whose reply was lost wrote it), 0 when made now, -1
 * when the map changed so that it cannot be made.
 */
static int range_edit(const pk_agent_job *j, pk_pmap *m, uint32_t self)
{
    uint32_t p = j->parts[0], q;
    pk_partition *pt = p < m->npartitions ? &m->parts[p] : NULL;

    if (pt == NULL || m->scheme != PK_SCHEME_RANGE)
        return -1;
    switch (j->kind) {
    case PK_JOB_SPLIT:
        if (pt->hi &&
            pk_key_cmp(pt->hi, pt->hi_len, j->split_at, j->split_len) == 0)
            return 1;
        if (!led_at(m, p, self, j->epoch) ||
            pk_pmap_split(m, p, j->split_at, j->split_len, &q) != PK_OK)
            return -1;
        m->parts[q].flags = j->flags;
        return 0;
    case PK_JOB_MERGE:
        if (pk_pmap_retired(m, j->other))
            return pt->hi == NULL ||
                           pk_key_cmp(pt->hi, pt->hi_len, m->parts[j->other].lo,
                                      m->parts[j->other].lo_len) != 0
                       ? 1
                       : -1;
        if (!led_at(m, p, self, j->epoch) ||
            !led_at(m, j->other, self, j->other_epoch) ||
            pk_pmap_merge(m, p, j->other) != PK_OK)
            return -1;
        return 0;
    case PK_JOB_FLAGS:
        if (((pt->flags & ~j->clear) | j->flags) == pt->flags)
            return 1;
        if (pt->leader_epoch != j->epoch || pk_pmap_retired(m, p))
            return -1;
        pt->flags = (uint8_t)((pt->flags & ~j->clear) | j->flags);
        return 0;
    default:
        return -1;
    }
}

/* A salt table edit (PK_JOB_SALT), answering as range_edit does. */
static int salt_edit(const pk_agent_job *j, pk_pmap *m, uint32_t self)
{
    const pk_salt *want = j->salt, *have;

    have = pk_pmap_salt_find(m, want->key, want->len);
    if (j->unsalt ? have == NULL
                  : have && have->n == want->n && have->state == want->state &&
                        memcmp(have->tags, want->tags,
                               want->n * sizeof(want->tags[0])) == 0)
        return 1;
    if (!led_at(m, j->parts[0], self, j->epoch))
        return -1;
    if (j->unsalt)
        return pk_pmap_salt_del(m, want->key, want->len) == PK_OK ? 0 : -1;
    return pk_pmap_salt_set(m, want) == PK_OK ? 0 : -1;
}

/* An index definition edit (PK_JOB_FTDEF), answering as range_edit
 * does.  An add seen already (the same encoding) is done. */
static int ftdef_edit(const pk_agent_job *j, pk_pmap *m)
{
    int at = pk_pmap_ftdef_find(m, j->ftname);
    const pk_ftblob *b = at >= 0 ? &m->ftdefs[at] : NULL;
    pk_ftdef *have = NULL, *want = NULL;
    int r;

    if (j->ftmode == 2)
        return b == NULL ? 1 : pk_pmap_ftdef_del(m, j->ftname) ? -1 : 0;
    if (b && b->len == j->ftdef_len &&
        memcmp(b->bytes, j->ftdef, j->ftdef_len) == 0)
        return 1;
    if (j->ftmode == 0 && b)
        return -1;
    if (j->ftmode == 1 &&
        (b == NULL || pk_ftdef_decode(b->bytes, b->len, &have) != 0 ||
         pk_ftdef_decode(j->ftdef, j->ftdef_len, &want) != 0 ||
         have->id != want->id)) {
        pk_ftdef_free(have);
        pk_ftdef_free(want);
        return -1;
    }
    pk_ftdef_free(have);
    pk_ftdef_free(want);
    r = pk_pmap_ftdef_set(m, j->ftdef, j->ftdef_len);
    return r == PK_OK ? 0 : -1;
}

/* A range, salt or index edit's attempt on map m (taken). */
static int run_range_edit(pk_agent *a, pk_agent_job *j, pk_pmap *m,
                          uint64_t rev, uint32_t self)
{
    int rc, r = j->kind == PK_JOB_SALT    ? salt_edit(j, m, self)
                : j->kind == PK_JOB_FTDEF ? ftdef_edit(j, m)
                                          : range_edit(j, m, self);

    j->switched[0] = r == 1;
    if (r != 0) {
        post_if_new(a, m, rev);
        return PK_OK;
    }
    m->epoch++;
    rc = cas_map(a, m, rev);
    if (rc != PK_OK) {
        pk_pmap_free(m);
        return rc;
    }
    j->switched[0] = 1;
    return PK_OK;
}

/* One attempt at a commit job: 0 done, else retry later. */
/* The cluster's users: 0 with *text (malloc'd, NULL when there is no
 * key yet) and its mod_revision, or an error. */
static int get_acl(pk_agent *a, uint64_t since, char **text, size_t *len,
                   uint64_t *rev)
{
    char s[24];
    const char *argv[] = {"PK.COORD", "GET", PK_CLUSTER_PREFIX "acl", s};
    pk_rr *r = NULL;
    int rc;

    *text = NULL;
    *len = 0;
    *rev = 0;
    snprintf(s, sizeof(s), "%llu", (unsigned long long)since);
    if ((rc = call(a, &r, since ? 4 : 3, argv, NULL)) != PK_OK)
        return rc;
    if (since && r->type == PK_RR_ARRAY && r->n == 1) {
        *rev = since; /* unchanged */
    } else if (r->type == PK_RR_ARRAY && r->n == 2 &&
               r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        const pk_rr *kv = &r->elems[1];
        *rev = (uint64_t)kv->elems[3].integer;
        if ((*text = malloc(kv->elems[1].len + 1)) == NULL) {
            rc = PK_ENOMEM;
        } else {
            memcpy(*text, kv->elems[1].str ? kv->elems[1].str : "",
                   kv->elems[1].len);
            (*text)[kv->elems[1].len] = '\0';
            *len = kv->elems[1].len;
        }
    } else if (r->type != PK_RR_ARRAY) {
        rc = PK_EPROTO;
    }
    pk_rr_free(r);
    return rc;
}

/* Hands the users' text to the loop (taking it). */
static void post_acl(pk_agent *a, char *text, size_t len)
{
    pk_server *s = a->srv;

    pthread_mutex_lock(&s->map_lock);
    free(s->acl_pending);
    s->acl_pending = text;
    s->acl_pending_len = len;
    pthread_mutex_unlock(&s->map_lock);
    uv_async_send(&s->map_async);
}

static void poll_acl(pk_agent *a)
{
    char *text = NULL;
    size_t len = 0;
    uint64_t rev = 0;

    if (mono_ms() - a->last_acl < PK_ACL_POLL_MS)
        return;
    a->last_acl = mono_ms();
    if (get_acl(a, a->acl_rev, &text, &len, &rev) != PK_OK)
        return;
    if (text && rev != a->acl_rev) {
        a->acl_rev = rev;
        post_acl(a, text, len);
        return;
    }
    free(text);
}

/* PK_JOB_ACL: the edit applied to the users the coordinator holds, and
 * written back if nobody wrote them meanwhile (else PK_ESTALE: again). */
static int run_acl_job(pk_agent *a, pk_agent_job *j)
{
    char *text = NULL, *err = NULL, *out = NULL, srev[24];
    size_t len = 0;
    uint64_t rev = 0;
    pk_acl *acl = pk_acl_new();
    pk_rr *r = NULL;
    int rc;

    if (acl == NULL)
        return PK_ENOMEM;
    rc = get_acl(a, 0, &text, &len, &rev);
    if (rc != PK_OK)
        goto out;
    /* A text that does not parse (not written by partkv) is replaced. */
    if (text == NULL) {
        text = strndup(j->acl_argv[0].ptr, j->acl_argv[0].len);
        len = j->acl_argv[0].len;
    }
    if (text && pk_acl_load_text(acl, text, len, "coordinator", NULL, NULL,
                                 &err) == PK_ENOMEM) {
        rc = PK_ENOMEM;
        goto out;
    }
    free(err);
    err = NULL;
    if (j->acl_op == 0) {
        pk_acl_setuser(acl, j->acl_argv[1].ptr, j->acl_argv[1].len,
                       j->acl_argc - 2, j->acl_argv + 2, &err);
    } else if (j->acl_op == 1) {
        for (int i = 1; i < j->acl_argc; i++)
            pk_acl_deluser(acl, j->acl_argv[i].ptr, j->acl_argv[i].len, NULL,
                           NULL);
    } else {
        pk_acl_load_text(acl, j->acl_argv[1].ptr, j->acl_argv[1].len,
                         "ACL LOAD", NULL, NULL, &err);
    }
    if ((out = pk_acl_save_text(acl)) == NULL) {
        rc = PK_ENOMEM;
        goto out;
    }
    snprintf(srev, sizeof(srev), "%llu", (unsigned long long)rev);
    {
        const char *argv[] = {"PK.COORD", "CAS", PK_CLUSTER_PREFIX "acl",
                              srev,       out,   "0"};
        if ((rc = call(a, &r, 6, argv, NULL)) != PK_OK)
            goto out;
    }
    if (r->type == PK_RR_ERROR)
        rc = strncmp(r->str, "ESTALE", 6) == 0 ? PK_ESTALE : PK_EPROTO;
    a->last_acl = 0; /* read it back at once */
out:
    pk_rr_free(r);
    free(out);
    free(err);
    free(text);
    pk_acl_free(acl);
    return rc;
}

static int run_job(pk_agent *a, pk_agent_job *j)
{
    pk_pmap *m = NULL;
    uint64_t rev = 0;
    uint32_t self;
    int rc, changed = 0;

    if (j->kind == PK_JOB_ACL)
        return run_acl_job(a, j);
    rc = get_map(a, &m, &rev);

    if (rc == PK_ENOTFOUND || rc == PK_ECORRUPT) {
        memset(j->switched, 0, j->n); /* no map: nothing is moving */
        return PK_OK;
    }
    if (rc != PK_OK)
        return rc;
    if (pk_pmap_node_find(m, a->srv->cluster.name, &self) != PK_OK) {
        pk_pmap_free(m);
        memset(j->switched, 0, j->n);
        return PK_OK; /* not in the map: nothing of ours to commit */
    }
    if (j->kind != PK_JOB_COMMIT)
        return run_range_edit(a, j, m, rev, self);
    for (uint32_t i = 0; i < j->n; i++) {
        uint32_t p = j->parts[i], leader = pk_pmap_leader(m, p);
        j->switched[i] = leader == j->target; /* an earlier attempt did */
        if (leader == self && pk_pmap_move_commit(m, p, j->target) == PK_OK)
            j->switched[i] = changed = 1;
    }
    if (!changed) {
        /* Nothing left to write -- but an earlier attempt whose reply was
         * lost may have written it: the loop must hold that map before it
         * lifts the fence, or it would take writes as the old leader. */
        post_if_new(a, m, rev);
        return PK_OK;
    }
    m->epoch++;
    rc = cas_map(a, m, rev);
    if (rc != PK_OK)
        pk_pmap_free(m);
    return rc;
}

/* Runs queued jobs until one must wait for a reconnection. */
static void run_jobs(pk_agent *a)
{
    pk_server *s = a->srv;

    for (;;) {
        pk_agent_job *j;
        pthread_mutex_lock(&a->lock);
        j = a->jobs;
        pthread_mutex_unlock(&a->lock);
        if (j == NULL || a->cli == NULL)
            return;
        if (run_job(a, j) != PK_OK) {
            a->job_backoff = 1; /* wait a poll period before the retry */
            return;
        }
        a->job_backoff = 0;
        pthread_mutex_lock(&a->lock);
        a->jobs = j->next;
        pthread_mutex_unlock(&a->lock);
        pthread_mutex_lock(&s->map_lock);
        j->next = NULL;
        pk_agent_job **pp = &s->jobs_done;
        while (*pp)
            pp = &(*pp)->next;
        *pp = j;
        pthread_mutex_unlock(&s->map_lock);
        uv_async_send(&s->map_async);
    }
}

void pk_agent_commit(pk_agent *a, pk_agent_job *j)
{
    pthread_mutex_lock(&a->lock);
    j->next = NULL;
    pk_agent_job **pp = &a->jobs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = j;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
}

void pk_agent_finish_jobs(pk_server *s)
{
    pk_agent_job *j;

    pthread_mutex_lock(&s->map_lock);
    j = s->jobs_done;
    s->jobs_done = NULL;
    pthread_mutex_unlock(&s->map_lock);
    while (j) {
        pk_agent_job *next = j->next;
        j->done(j);
        j = next;
    }
}

/* Reads the rebalance run record: state and rate, for throttling. */
static void poll_record(pk_agent *a)
{
    const char *argv[] = {"PK.COORD", "GET", PK_CLUSTER_PREFIX "rebalance"};
    unsigned long long rate = PK_AGENT_RATE_DEFAULT;
    int paused = 0;
    pk_rr *r = NULL;

    if (mono_ms() - a->last_record < RECORD_POLL_MS)
        return;
    a->last_record = mono_ms();
    if (call(a, &r, 3, argv, NULL) != PK_OK)
        return;
    if (r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        const pk_rr *v = &r->elems[1].elems[1];
        char text[256], *at;
        snprintf(text, sizeof(text), "%.*s", (int)(v->len < 255 ? v->len : 255),
                 v->str ? v->str : "");
        paused = strstr(text, "state=paused") != NULL;
        if ((at = strstr(text, "rate=")) != NULL)
            rate = strtoull(at + 5, NULL, 10);
    }
    pk_rr_free(r);
    atomic_store(&a->rb_paused, paused);
    atomic_store(&a->rb_rate, rate);
}

void pk_agent_rebalance(pk_agent *a, int *paused, uint64_t *rate)
{
    *paused = a ? atomic_load(&a->rb_paused) : 0;
    *rate = a ? atomic_load(&a->rb_rate) : PK_AGENT_RATE_DEFAULT;
}

/*
 * The seed is unreachable: follow the next live node of the last map
 * instead, so a proxy outlives the node it was started with.
 */
static void next_seed(pk_agent *a)
{
    const pk_pmap *m = a->last;
    uint32_t start = 0;

    if (m == NULL || m->nnodes == 0)
        return;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        char cur[300];
        snprintf(cur, sizeof(cur), "%s:%d", a->host, a->port);
        if (strcmp(m->nodes[i].addr, cur) == 0)
            start = i + 1;
    }
    for (uint32_t k = 0; k < m->nnodes; k++) {
        const pk_node *n = &m->nodes[(start + k) % m->nnodes];
        const char *colon = strrchr(n->addr, ':');
        if (n->state == PK_NODE_REMOVED || colon == NULL)
            continue;
        snprintf(a->host, sizeof(a->host), "%.*s", (int)(colon - n->addr),
                 n->addr);
        a->port = atoi(colon + 1);
        return;
    }
}

/*
 * Proxy mode: the map exactly as any node holds it (PK.MAP, a read-only
 * public command), so a proxy needs no secret and follows every scheme.
 * With the secret, the connection presents it first (PK.AUTH), for the
 * users' calls (PK.COORD) and for nodes whose default user has a
 * password.
 */
static int proxy_connect(pk_agent *a)
{
    const char *auth[] = {"PK.AUTH", a->secret};
    pk_rr *r = NULL;
    int ok;

    if (pk_sclient_connect(a->host, a->port, CALL_TIMEOUT_MS, &a->cli) != PK_OK)
        return -1;
    if (a->secret[0] == '\0')
        return 0;
    if (call(a, &r, 2, auth, NULL) != PK_OK)
        return -1;
    ok = r->type == PK_RR_STATUS;
    if (!ok && strcmp(a->why, "secret") != 0) {
        snprintf(a->why, sizeof(a->why), "secret");
        fprintf(stderr, "partkv: %s:%d refused the cluster secret: %s\n",
                a->host, a->port, r->str ? r->str : "?");
    }
    pk_rr_free(r);
    if (!ok) {
        pk_sclient_free(a->cli);
        a->cli = NULL;
        return -1;
    }
    a->why[0] = '\0';
    return 0;
}

static void poll_public_map(pk_agent *a)
{
    const char *argv[] = {"PK.MAP"};
    pk_rr *r = NULL;
    pk_pmap *m = NULL;

    if (a->cli == NULL && proxy_connect(a) != 0) {
        next_seed(a);
        sleep_ms(200);
        return;
    }
    if (call(a, &r, 1, argv, NULL) != PK_OK)
        return;
    if (r->type == PK_RR_BULK &&
        pk_pmap_decode((const uint8_t *)r->str, r->len, &m) == PK_OK) {
        if (a->last && pk_pmap_equal(a->last, m)) {
            pk_pmap_free(m);
        } else {
            pk_pmap *copy = NULL;
            if (pk_pmap_clone(m, &copy) == PK_OK) {
                pk_pmap_free(a->last);
                a->last = copy;
            }
            post_map(a, m);
        }
    }
    pk_rr_free(r);
}

static void *agent_main(void *arg)
{
    pk_agent *a = arg;

    while (a->proxy && !atomic_load(&a->stop)) {
        poll_public_map(a);
        if (a->cli && a->secret[0]) {
            run_jobs(a);
            if (a->cli)
                poll_acl(a);
        }
        wait_ms(a, PK_AGENT_POLL_MS);
    }
    while (!a->proxy && !atomic_load(&a->stop)) {
        if (a->cli == NULL || a->lease == 0) {
            pk_sclient_free(a->cli);
            a->cli = NULL;
            if (connect_and_register(a) != 0) {
                sleep_ms(200);
                continue;
            }
        }
        run_jobs(a);
        if (a->cli)
            poll_map(a);
        if (a->cli)
            poll_record(a);
        if (a->cli)
            poll_acl(a);
        if (a->cli && mono_ms() - a->last_keepalive >= KEEPALIVE_MS)
            keepalive(a);
        wait_ms(a, PK_AGENT_POLL_MS);
    }
    pk_sclient_free(a->cli);
    pk_pmap_free(a->last);
    return NULL;
}

int pk_agent_start(pk_server *s, const char *host, int port, const char *secret,
                   pk_agent **out)
{
    pk_agent *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return PK_ENOMEM;
    a->srv = s;
    snprintf(a->host, sizeof(a->host), "%s", host);
    snprintf(a->secret, sizeof(a->secret), "%s", secret ? secret : "");
    a->port = port;
    a->proxy = s->cfg.proxy_of != NULL;
    atomic_init(&a->stop, 0);
    atomic_init(&a->rb_paused, 0);
    atomic_init(&a->rb_rate, PK_AGENT_RATE_DEFAULT);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->wake, NULL);
    if (pthread_create(&a->thread, NULL, agent_main, a) != 0) {
        free(a);
        return PK_EIO;
    }
    *out = a;
    return PK_OK;
}

void pk_agent_stop(pk_agent *a)
{
    if (a == NULL)
        return;
    atomic_store(&a->stop, 1);
    pthread_mutex_lock(&a->lock);
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->wake);
    free(a);
}

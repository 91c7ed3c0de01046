/*
 * pk_server: the loop of one node -- listener, group commit in the check
 * phase, timers and signals.  See pk_server.h for the iteration model.
 */
#include "server/pk_server.h"
#include "server/pk_hotread.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "coord/pk_coord_embedded.h"
#include "coord/pk_coord_etcd.h"
#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_splitfind.h"
#include "server/pk_acl.h"
#include "server/pk_agent.h"
#include "server/pk_block.h"
#include "server/pk_climit.h"
#include "server/pk_cluster.h"
#include "server/pk_ctrl.h"
#include "server/pk_ft.h"
#include "server/pk_hot.h"
#include "server/pk_link.h"
#include "server/pk_metrics.h"
#include "server/pk_move.h"
#include "server/pk_multi.h"
#include "server/pk_repl.h"
#include "server/pk_salted.h"
#include "server/pk_sclient.h"
#include "server/pk_split.h"
#include "server/pk_srv.h"
#include "server/pk_tls.h"
#include "server/pk_watch.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"

/* A node outside a cluster has no follower and no partition to move, so
 * nothing reads its journal: it keeps Redis's default backlog
 * (repl-backlog-size 1mb) rather than the cluster's budget, and so a
 * smaller working set. */
#define STANDALONE_LOG_KEEP (1ull << 20)
#define EXPIRE_HZ_MS 100
#define EXPIRE_MAX_KEYS 200
/* A follower's deferred records (pk_store_log_defer) reach its data in
 * batches, at least every SETTLE_MS or once SETTLE_BATCH wait: the larger
 * the batch, the more of its keys share leaf pages (pk_store_settle.c).
 * A batch goes in slices of SETTLE_SLICE changes, one a loop iteration,
 * so that the node answers in between: a long pause would also hold the
 * promises that its leaders' leases rest on. */
#define SETTLE_MS 1000
/* New pages of the map are faulted in PREFAULT_AHEAD bytes ahead of the
 * last one in use, checked every PREFAULT_MS, in the thread pool: the
 * kernel zeroes and allocates a page on first touch, which in a command's
 * commit cost a node writing new data ~10% of its loop's time. */
#define PREFAULT_MS 10
#define PREFAULT_AHEAD (32u << 20)
#define SETTLE_BATCH 262144u
#define SETTLE_SLICE 16384u

void pk_server_config_default(pk_server_config *c)
{
    memset(c, 0, sizeof(*c));
    c->bind = "127.0.0.1";
    c->port = 6379;
    c->dir = ".";
    c->fsync = PK_FSYNC_EVERYSEC;
    c->protected_mode = 1;
    c->proto_max_bulk_len = 512u << 20;
    c->client_query_buffer_limit = (size_t)1 << 30;
    c->maxclients = 10000;
    pk_config_obuf_default(c->obuf_limits);
    c->acks = PK_ACKS_QUORUM;
    c->replace_after_ms = 60000;
    c->split_qps = 2500; /* CockroachDB's kv.range_split.load_qps_threshold */
    c->merge_delay_ms = 300000;
    c->hot_key_writes = 5000;
    c->hot_key_ms = 2000;
    c->hot_key_reads = 5000;
    c->unsalt_after_ms = 300000;
    c->hotkeys_sample = 0.01;
    c->metrics_port = -1;
    c->tls_port = -1;
    c->parallel_append = 1;
    c->split_size = 64ull << 20;
}

uint64_t pk_srv_wall_ms(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

uint32_t pk_srv_part(const pk_server *s, const void *key, size_t len)
{
    /* A node alone holds one partition, so that every multi-key command
     * (SMOVE, SINTERSTORE, ZUNIONSTORE, RENAME...) takes any keys, as on
     * a standalone Redis; in a cluster keys live in their slots. */
    if (!s->cluster.enabled)
        return 0;
    return pk_cluster_part(&s->cluster, key, len);
}

pk_txn *pk_srv_txn(pk_cmd_ctx *x)
{
    pk_server *s = x->srv;
    int rc;

    if (s->txn)
        return s->txn;
    if (s->store == NULL) {
        pk_reply_error(x->out, "ERR this proxy stores no data; it forwards "
                               "keyed commands to their owners");
        return NULL;
    }
    rc = pk_txn_begin(s->store, 0, &s->txn);
    if (rc != PK_OK) {
        s->txn = NULL;
        pk_reply_errorf(x->out, "ERR storage unavailable: %s", pk_strerror(rc));
        return NULL;
    }
    return s->txn;
}

/*
 * Replaces the replies of every command of this iteration by an error: the
 * transaction that held their effects (and what their reads saw) is gone.
 */
static void fail_iteration(pk_server *s, int rc)
{
    /* Records that went out before the commit may yet be applied by the
     * followers, one of which the controller promotes. */
    const char *what = pk_repl_sent_early(s)
                           ? "ERR write not committed here, but its records "
                             "reached replicas: it may or may not be "
                             "applied: %s"
                           : "ERR write not committed, nothing was changed: "
                             "%s";

    pk_hotread_commit_failed(s);
    for (pk_conn *c = s->iter; c; c = c->iter_next) {
        pk_repl_forget_needs(c);
        c->out.len = c->out.head + c->iter_mark;
        for (uint32_t i = 0; i < c->iter_cmds; i++)
            pk_reply_errorf(&c->out, what, pk_strerror(rc));
    }
    s->commit_failures++;
}

/* The iteration's commit; --enable-debug-command lets PK.REPL FAILCOMMITS
 * make the next ones fail (tests of that path). */
static int commit_iteration(pk_server *s)
{
    if (s->fail_commits > 0) {
        s->fail_commits--;
        pk_txn_abort(s->txn);
        return PK_EIO;
    }
    return pk_txn_commit(s->txn);
}

static void on_settle(uv_timer_t *t);

/* The check phase: commit, then send.  Runs once per loop iteration. */
static void on_check(uv_check_t *h)
{
    pk_server *s = h->data;
    pk_conn *c, *next;

    pk_hotread_flush(s); /* before the commit: the index goes out sooner */
    if (s->txn && pk_store_log_unsettled(s->txn) >= SETTLE_BATCH &&
        !pk_store_log_settling(s->store))
        uv_timer_start(&s->settle_timer, on_settle, 0, 0);
    if (s->txn) {
        int rc;
        pk_repl_precommit(s); /* the followers write while we commit */
        rc = commit_iteration(s);
        s->txn = NULL;
        s->commits++;
        if (rc != PK_OK) {
            fail_iteration(s, rc);
            pk_repl_commit_failed(s);
        } else {
            pk_repl_committed(s);
            pk_hotread_committed(s);
        }
    }
    for (c = s->iter; c; c = next) {
        next = c->iter_next;
        c->iter_next = NULL;
        c->in_iter = 0;
        if (!pk_repl_gate(c))
            pk_conn_flush(c);
        c->iter_cmds = 0;
    }
    s->iter = NULL;
    if (s->shutting_down)
        uv_stop(&s->loop);
}

/* Active expiry: deletes a bounded number of due keys per tick. */
static void on_expire(uv_timer_t *t)
{
    pk_server *s = t->data;
    pk_txn *txn = s->txn;
    size_t n = 0;
    int own = txn == NULL;

    if (s->store == NULL)
        return;
    if (own && pk_txn_begin(s->store, 0, &txn) != PK_OK)
        return;
    if (pk_store_expire_cycle_if(txn, pk_srv_wall_ms(), EXPIRE_MAX_KEYS,
                                 pk_move_may_expire, s, &s->expire_pos,
                                 &n) == PK_OK)
        s->expired_keys += n;
    if (n) /* their global entries' deletes wait in outboxes */
        pk_ft_note_expired(s);
    if (own) {
        if (n)
            pk_txn_commit(txn);
        else
            pk_txn_abort(txn);
    }
}

int pk_srv_leads(void *server, uint32_t part)
{
    const pk_cluster *cl = &((pk_server *)server)->cluster;

    if (!cl->enabled)
        return 1;
    return cl->map && part < cl->map->npartitions &&
           pk_pmap_leader(cl->map, part) == cl->self;
}

void pk_srv_settle(pk_server *s)
{
    pk_txn *txn = s->txn;

    if (s->store == NULL ||
        (txn == NULL && pk_txn_begin(s->store, 0, &txn) != PK_OK))
        return;
    if (txn == s->txn) {
        pk_store_log_settle(txn, 0, NULL); /* the check phase commits */
        return;
    }
    if (pk_store_log_unsettled(txn) > 0 &&
        pk_store_log_settle(txn, 0, NULL) == PK_OK)
        pk_txn_commit(txn);
    else
        pk_txn_abort(txn);
}

/* One slice of the batch under way, or a new batch; then the next. */
static void on_settle(uv_timer_t *t)
{
    pk_server *s = t->data;
    pk_txn *txn;

    if (s->store == NULL)
        return;
    if (s->txn == NULL && pk_txn_begin(s->store, 0, &txn) == PK_OK) {
        if (pk_store_log_settle(txn, SETTLE_SLICE, NULL) == PK_OK)
            pk_txn_commit(txn);
        else
            pk_txn_abort(txn);
    }
    uv_timer_start(&s->settle_timer, on_settle,
                   pk_store_log_settling(s->store) ? 0 : SETTLE_MS, 0);
}

/* Samples per-partition counters once a second for reads/s, writes/s. */
/*
 * Starts a split finder for each range this node leads at --split-qps or
 * more, and ends it once the range is below half of that (or no longer
 * ours), so that a load hovering at the threshold keeps its sample.  A
 * finder that found where to split starts the split (pk_split.h) and
 * ends: each half then gets a new sample if it is still over.
 */
static void tend_finders(pk_server *s)
{
    const pk_cluster *cl = &s->cluster;
    double on = (double)s->cfg.split_qps;
    int ranged = cl->ranges != NULL && on > 0;

    for (uint32_t p = 0; p < PK_SLOTS; p++) {
        pk_part_rate *r = &s->rates[p];
        double qps = r->read_rate + r->write_rate;
        int lead = ranged && p < cl->map->npartitions &&
                   pk_pmap_leader(cl->map, p) == cl->self;
        if (lead && qps >= on && r->finder == NULL) {
            r->finder = malloc(sizeof(*r->finder));
            if (r->finder)
                pk_splitfind_init(r->finder, s->now_ms, 0, 0,
                                  s->now_ms ^ ((uint64_t)p << 32));
        } else if (r->finder && (!lead || qps < on / 2)) {
            free(r->finder);
            r->finder = NULL;
        } else if (r->finder) {
            pk_splitfind_result f;
            pk_splitfind_key(r->finder, s->now_ms, &f);
            if (f.verdict == PK_SPLITFIND_FOUND &&
                pk_split_start(s, f.key, f.len, 0) == NULL) {
                free(r->finder);
                r->finder = NULL;
            }
        }
    }
}

static void on_rate(uv_timer_t *t)
{
    pk_server *s = t->data;
    pk_txn *txn;
    pk_part_stats st;
    uint32_t part;

    s->ops_rate = s->total_cmds - s->ops_last;
    s->ops_last = s->total_cmds;
    pk_hotread_tick(s); /* a proxy's too: it spreads read-hot keys */
    pk_climit_sweep(s);
    if (s->store == NULL || pk_txn_begin(s->store, 1, &txn) != PK_OK)
        return;
    for (uint32_t p = 0; p < PK_SLOTS; p++)
        s->rates[p].bytes = 0; /* a range without data is not listed */
    for (uint64_t p = 0;
         p < PK_SLOTS && pk_store_part_next(txn, p, &part, &st) == PK_OK;
         p = (uint64_t)part + 1) {
        pk_part_rate *r;
        if (part >= PK_SLOTS)
            break;
        r = &s->rates[part];
        r->read_rate = (double)(st.reads - r->reads);
        r->write_rate = (double)(st.writes - r->writes);
        r->reads = st.reads;
        r->writes = st.writes;
        r->bytes = st.bytes;
    }
    pk_txn_abort(txn);
    tend_finders(s);
    pk_split_tend(s);
    pk_salted_tick(s);
    pk_hot_tick(s);
}

static void sync_work(uv_work_t *w)
{
    pk_server *s = w->data;

    s->sync_rc = pk_store_sync(s->store);
}

static void sync_done(uv_work_t *w, int status)
{
    pk_server *s = w->data;

    (void)status;
    s->syncing = 0;
    if (s->sync_rc != PK_OK)
        fprintf(stderr, "partkv: background sync failed: %s\n",
                pk_strerror(s->sync_rc));
}

/* --fsync everysec: write-out started here, in the loop's thread (see
 * pk_store_writeback), then the flush waited for in the thread pool, one
 * sync in flight. */
static void on_sync(uv_timer_t *t)
{
    pk_server *s = t->data;

    if (s->syncing)
        return;
    s->syncing = 1;
    pk_store_writeback(s->store);
    s->sync_work.data = s;
    uv_queue_work(&s->loop, &s->sync_work, sync_work, sync_done);
}

static void prefault_work(uv_work_t *w)
{
    pk_server *s = w->data;

    if (pk_store_prefault(s->store, PREFAULT_AHEAD) == PK_EINVAL)
        s->prefaulting = -1; /* the kernel cannot: stop */
}

static void prefault_done(uv_work_t *w, int status)
{
    pk_server *s = w->data;

    (void)status;
    if (s->prefaulting == -1)
        uv_timer_stop(&s->prefault_timer);
    else
        s->prefaulting = 0;
}

static void on_prefault(uv_timer_t *t)
{
    pk_server *s = t->data;

    if (s->prefaulting || s->shutting_down)
        return;
    s->prefaulting = 1;
    s->prefault_work.data = s;
    uv_queue_work(&s->loop, &s->prefault_work, prefault_work, prefault_done);
}

static void on_coord_tick(uv_timer_t *t)
{
    pk_server *s = t->data;

    pk_coord_embedded_tick(s->coord);
}

/* The agent posted a map, or finished commits: the map first. */
static void on_map(uv_async_t *h)
{
    pk_server *s = h->data;
    pk_pmap *m;
    char *acl;
    size_t acl_len;

    pthread_mutex_lock(&s->map_lock);
    m = s->map_pending;
    s->map_pending = NULL;
    acl = s->acl_pending;
    acl_len = s->acl_pending_len;
    s->acl_pending = NULL;
    pthread_mutex_unlock(&s->map_lock);
    if (m)
        pk_srv_set_map(s, m, 1);
    if (acl)
        pk_acl_cluster_apply(s, acl, acl_len);
    free(acl);
    pk_agent_finish_jobs(s);
}

int pk_srv_set_map(pk_server *s, pk_pmap *m, int polled)
{
    const pk_pmap *cur = s->cluster.map;

    /* Epochs only grow, and every change bumps it: a map not newer than
     * ours (a poll that raced a push) is one we have or had. */
    if (cur && m->epoch <= cur->epoch) {
        pk_pmap_free(m);
        if (polled) /* the coordinator confirms what we hold */
            pk_move_map_changed(s, 1);
        return 0;
    }
    /* The old map stays for the split check, which must run before
     * anything serves by the new one. */
    pk_pmap *old = s->cluster.map;
    s->cluster.map = NULL;
    pk_cluster_set_map(&s->cluster, m);
    pk_split_reconcile(s, old);
    pk_pmap_free(old);
    pk_repl_map_changed(s);
    pk_move_map_changed(s, polled);
    pk_watch_map_changed(s);
    pk_block_map_changed(s); /* waiters on keys that moved get MOVED */
    if (s->held) /* a handoff ended here: its commands run or go on */
        pk_conn_release_all(s);
    return 1;
}

/*
 * The node's cluster id: 40 hex digits kept in DIR/node.id so that a
 * restarted node keeps its place in the map.
 */
static int node_id(const char *dir, char *id)
{
    char path[4096];
    unsigned char raw[20];
    int fd, ok;

    snprintf(path, sizeof(path), "%s/node.id", dir);
    fd = open(path, O_RDONLY);
    if (fd >= 0) {
        ok = read(fd, id, PK_NAME_MAX) == PK_NAME_MAX;
        close(fd);
        id[PK_NAME_MAX] = '\0';
        return ok ? 0 : -1;
    }
    fd = open("/dev/urandom", O_RDONLY);
    ok = fd >= 0 && read(fd, raw, sizeof(raw)) == (ssize_t)sizeof(raw);
    if (fd >= 0)
        close(fd);
    if (!ok)
        return -1;
    for (int i = 0; i < 20; i++)
        snprintf(id + 2 * i, 3, "%02x", raw[i]);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ok = fd >= 0 && write(fd, id, PK_NAME_MAX) == PK_NAME_MAX && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

/* Cluster mode: identity, the hosted coordinator, the agent. */
static int start_cluster(pk_server *s)
{
    const pk_server_config *c = &s->cfg;
    char host[256], path[4096];
    int port = c->tls_cluster ? s->tls_port : s->port, rc;

    if (c->coordinator == NULL && c->join == NULL && c->proxy_of == NULL)
        return 0;
    if (c->proxy_of) {
        /* A proxy owns nothing and forwards every keyed command. */
        const char *colon = strrchr(c->proxy_of, ':');
        snprintf(s->cluster.name, sizeof(s->cluster.name), "proxy");
        s->cluster.enabled = 1;
        s->cfg.forward = 1;
        snprintf(host, sizeof(host), "%.*s", (int)(colon - c->proxy_of),
                 c->proxy_of);
        port = atoi(colon + 1);
    } else if (node_id(c->dir, s->cluster.name) != 0) {
        fprintf(stderr, "partkv: cannot read or create %s/node.id\n", c->dir);
        return -1;
    }
    s->cluster.enabled = 1;
    if (c->announce)
        snprintf(s->cluster.addr, sizeof(s->cluster.addr), "%s", c->announce);
    else
        snprintf(s->cluster.addr, sizeof(s->cluster.addr), "%s:%d",
                 strcmp(c->bind, "0.0.0.0") ? c->bind : "127.0.0.1", port);
    snprintf(host, sizeof(host), "%s",
             strcmp(c->bind, "0.0.0.0") ? c->bind : "127.0.0.1");
    if (c->proxy_of) {
        /* host and port name the node to follow */
    } else if (c->coordinator && strncmp(c->coordinator, "etcd", 4) == 0) {
        /* Every node is an etcd client and serves PK.COORD from it: its
         * agent and controller talk to the node itself. */
        rc = pk_coord_etcd_open(&s->loop, c->coordinator, &s->coord);
        if (rc != PK_OK) {
            fprintf(stderr, "partkv: bad --coordinator %s: %s\n",
                    c->coordinator, pk_strerror(rc));
            return -1;
        }
        if (strcmp(c->bind, "0.0.0.0") != 0)
            pk_coord_etcd_set_source(s->coord, c->bind);
        if (c->tls_port >= 0 &&
            pk_coord_etcd_set_tls(s->coord, c->tls.cert, c->tls.key,
                                  c->tls.ca) != PK_OK)
            return -1;
    } else if (c->coordinator) {
        snprintf(path, sizeof(path), "%s/coord.state", c->dir);
        rc = pk_coord_embedded_open(path, NULL, &s->coord);
        if (rc != PK_OK) {
            fprintf(stderr, "partkv: cannot open coordinator state %s: %s\n",
                    path, pk_strerror(rc));
            return -1;
        }
        uv_timer_init(&s->loop, &s->coord_timer);
        s->coord_timer.data = s;
        uv_timer_start(&s->coord_timer, on_coord_tick, 100, 100);
    } else {
        const char *colon = strrchr(c->join, ':');
        snprintf(host, sizeof(host), "%.*s", (int)(colon - c->join), c->join);
        port = atoi(colon + 1);
    }
    if (!c->proxy_of && s->store &&
        (pk_move_init(s) != PK_OK || pk_repl_init(s) != PK_OK ||
         pk_salted_init(s) != PK_OK))
        return -1;
    pthread_mutex_init(&s->map_lock, NULL);
    uv_async_init(&s->loop, &s->map_async, on_map);
    s->map_async.data = s;
    rc = pk_agent_start(s, host, port, c->cluster_secret, &s->agent);
    if (rc == PK_OK && !c->proxy_of && s->store)
        rc = pk_ctrl_start(s, host, port, c->cluster_secret, &s->ctrl);
    if (rc != PK_OK) {
        fprintf(stderr, "partkv: cannot start the coordinator agent\n");
        return -1;
    }
    return 0;
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    pk_srv_shutdown(h->data);
}

void pk_srv_shutdown(pk_server *s)
{
    s->shutting_down = 1;
    uv_stop(&s->loop);
}

int pk_srv_listen(pk_server *s, uv_tcp_t *tcp, int port, uv_connection_cb cb,
                  const char *what, int *bound)
{
    struct sockaddr_storage addr;
    int len = sizeof(addr);
    int rc;

    if (uv_ip4_addr(s->cfg.bind, port, (struct sockaddr_in *)&addr) &&
        uv_ip6_addr(s->cfg.bind, port, (struct sockaddr_in6 *)&addr)) {
        fprintf(stderr, "partkv: bad --bind address '%s'\n", s->cfg.bind);
        return -1;
    }
    uv_tcp_init(&s->loop, tcp);
    tcp->data = s;
    rc = uv_tcp_bind(tcp, (struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)tcp, 511, cb);
    if (rc != 0) {
        fprintf(stderr, "partkv: cannot listen%s on %s:%d: %s\n", what,
                s->cfg.bind, port, uv_strerror(rc));
        return -1;
    }
    uv_tcp_getsockname(tcp, (struct sockaddr *)&addr, &len);
    *bound = ntohs(addr.ss_family == AF_INET6
                       ? ((struct sockaddr_in6 *)&addr)->sin6_port
                       : ((struct sockaddr_in *)&addr)->sin_port);
    return 0;
}

/* SIGHUP: the certificate files again (pk_tls_reload). */
static void on_sighup(uv_signal_t *h, int signum)
{
    pk_server *s = h->data;
    char err[256];

    (void)signum;
    if (pk_tls_reload(s->tls, err, sizeof(err)) != 0)
        fprintf(stderr,
                "partkv: TLS files not reloaded, the old ones "
                "stay: %s\n",
                err);
    else
        fprintf(stderr, "partkv: TLS files reloaded\n");
}

static int listen_tls(pk_server *s)
{
    char err[256];

    /* Peers present certificates even where clients need not. */
    if (s->cfg.tls_cluster && s->cfg.tls.auth_clients == PK_TLS_AUTH_NO)
        s->cfg.tls.auth_clients = PK_TLS_AUTH_OPTIONAL;
    if (pk_tls_open(&s->cfg.tls, &s->tls, err, sizeof(err)) != 0) {
        fprintf(stderr, "partkv: TLS: %s\n", err);
        return -1;
    }
    if ((s->tls_rbuf = malloc(PK_TLS_RBUF)) == NULL ||
        pk_srv_listen(s, &s->tls_listener, s->cfg.tls_port, pk_conn_accept_tls,
                      " (TLS)", &s->tls_port) != 0)
        return -1;
    uv_signal_init(&s->loop, &s->sighup);
    s->sighup.data = s;
    uv_signal_start(&s->sighup, on_sighup, SIGHUP);
    if (s->cfg.tls_cluster)
        pk_sclient_use_tls(s->tls);
    return 0;
}

static int listen_on(pk_server *s)
{
    if (pk_srv_listen(s, &s->listener, s->cfg.port, pk_conn_accept, "",
                      &s->port) != 0)
        return -1;
    return s->cfg.tls_port >= 0 ? listen_tls(s) : 0;
}

static void init_handles(pk_server *s)
{
    uv_check_start(&s->check, on_check);
    uv_timer_init(&s->loop, &s->expire_timer);
    s->expire_timer.data = s;
    uv_timer_start(&s->expire_timer, on_expire, EXPIRE_HZ_MS, EXPIRE_HZ_MS);
    uv_timer_init(&s->loop, &s->settle_timer);
    s->settle_timer.data = s;
    uv_timer_start(&s->settle_timer, on_settle, SETTLE_MS, 0);
    uv_timer_init(&s->loop, &s->rate_timer);
    s->rate_timer.data = s;
    uv_timer_start(&s->rate_timer, on_rate, 1000, 1000);
    uv_timer_init(&s->loop, &s->sync_timer);
    s->sync_timer.data = s;
    if (s->store && s->cfg.fsync == PK_FSYNC_EVERYSEC)
        uv_timer_start(&s->sync_timer, on_sync, 1000, 1000);
    uv_timer_init(&s->loop, &s->prefault_timer);
    s->prefault_timer.data = s;
    if (s->store)
        uv_timer_start(&s->prefault_timer, on_prefault, 0, PREFAULT_MS);
    uv_signal_init(&s->loop, &s->sigterm);
    s->sigterm.data = s;
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_signal_init(&s->loop, &s->sigint);
    s->sigint.data = s;
    uv_signal_start(&s->sigint, on_signal, SIGINT);
}

/* The remaining handles are embedded in pk_server: nothing to free. */
static void close_handle(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/*
 * Commits and answers what the last iteration executed, closes every
 * connection (their close callbacks free them) and every other handle.
 */
static void teardown(pk_server *s)
{
    pk_ctrl_stop(s->ctrl);
    s->ctrl = NULL;
    pk_agent_stop(s->agent); /* before the async handle closes */
    s->agent = NULL;
    pk_move_free(s);      /* fences lifted, nothing committed */
    pk_repl_stop(s);      /* freed once the loop has closed its handles */
    s->shutting_down = 0; /* on_check must not stop the closing run */
    on_check(&s->check);
    while (s->conns)
        pk_conn_close(s->conns);
    pk_link_close_all(s);
    pk_salted_free(s); /* after the links: their calls are answered */
    pk_ft_free(s);
    pk_hotread_free(s);
    pk_metrics_stop(s);
    /* The etcd backend's handles close with it, before the loop's. */
    pk_coord_free(s->coord);
    s->coord = NULL;
    uv_walk(&s->loop, close_handle, NULL);
    while (uv_run(&s->loop, UV_RUN_DEFAULT) != 0)
        ;
    if (s->store && s->cfg.fsync != PK_FSYNC_NO)
        pk_store_sync(s->store);
}

int pk_server_run(const pk_server_config *cfg)
{
    pk_server *s = calloc(1, sizeof(*s));
    pk_store_opts so = {cfg->map_size, cfg->fsync};
    int rc, status = 1;

    if (s == NULL)
        return 1;
    /* A peer that closed its end makes a write fail with EPIPE, which
     * every writer handles; the signal would kill the whole node. */
    signal(SIGPIPE, SIG_IGN);
    s->cfg = *cfg;
    pk_config_init(s);
    s->rates = calloc(PK_SLOTS, sizeof(*s->rates));
    if (s->rates == NULL || pk_hot_init(s) != PK_OK ||
        pk_hotread_init(s) != PK_OK || uv_loop_init(&s->loop) != 0) {
        pk_hot_free(s);
        pk_hotread_free(s);
        free(s->rates);
        free(s);
        return 1;
    }
    uv_check_init(&s->loop, &s->check);
    s->check.data = s;
    uv_idle_init(&s->loop, &s->idle);
    s->idle.data = s;
    rc = cfg->dir ? pk_store_open(cfg->dir, &so, &s->store) : PK_OK;
    if (rc != PK_OK) {
        fprintf(stderr, "partkv: cannot open store in '%s': %s%s\n", cfg->dir,
                pk_strerror(rc),
                rc == PK_EVERSION
                    ? " (the directory was written by another partkv "
                      "version; start with an empty --dir and let the "
                      "node copy its partitions from its replicas)"
                : rc == PK_EBUSY ? " (another partkv process has it open)"
                                 : "");
        goto out;
    }
    if (pk_acl_server_init(s) != 0 || listen_on(s) != 0 ||
        pk_metrics_start(s) != 0)
        goto out;
    init_handles(s);
    if (start_cluster(s) != 0 || (s->store && pk_ft_init(s) != 0))
        goto out;
    if (!s->cluster.enabled && s->store)
        pk_store_log_retain(s->store, STANDALONE_LOG_KEEP);
    s->start_ms = s->now_ms = pk_srv_wall_ms();
    s->next_id = 1;
    printf("partkv: ready on %s:%d pid %d\n", cfg->bind, s->port,
           (int)uv_os_getpid());
    if (s->tls) /* after the ready line, which tools read first */
        printf("partkv: tls on %s:%d\n", cfg->bind, s->tls_port);
    fflush(stdout);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    status = 0;
out:
    teardown(s);
    uv_loop_close(&s->loop);
    pk_repl_free(s);
    pk_block_free(s);
    pk_store_close(s->store);
    pk_cluster_free(&s->cluster);
    pk_pmap_free(s->map_pending);
    free(s->acl_pending);
    free(s->requirepass);
    pk_coord_free(s->coord);
    pk_watch_free(s);
    pk_split_free(s);
    pk_hot_free(s);
    pk_metrics_free(s);
    pk_tls_free(s->tls);
    free(s->tls_rbuf);
    pk_acl_free(s->acl);
    for (uint32_t p = 0; s->rates && p < PK_SLOTS; p++)
        free(s->rates[p].finder);
    free(s->rates);
    free(s);
    return status;
}

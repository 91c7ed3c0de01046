/* pk_metrics: the Prometheus endpoint (see pk_metrics.h). */
#include "server/pk_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_topk.h"
#include "server/pk_srv.h"
#include "store/pk_store_part.h"

#define REQ_MAX 8192

/* Upper bounds of the buckets, in microseconds. */
static const uint64_t bounds_us[PK_LAT_BUCKETS] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 100000, 1000000};
static const char *const class_names[PK_LAT_CLASSES] = {"read", "write",
                                                        "other"};

typedef struct mconn {
    uv_tcp_t tcp;
    pk_server *srv;
    char req[REQ_MAX];
    size_t len;
    uv_write_t wr;
    char *resp;
    struct mconn *next;
} mconn;

typedef struct pk_metrics {
    uv_tcp_t listener;
    mconn *conns;
} pk_metrics;

void pk_metrics_observe(pk_latency *l, int cls, uint64_t us)
{
    int b = 0;

    while (b < PK_LAT_BUCKETS && us > bounds_us[b])
        b++;
    l->bucket[cls][b]++;
    l->count[cls]++;
    l->sum_s[cls] += (double)us / 1e6;
}

/* A growing text buffer; on allocation failure it stays short (err). */
typedef struct text {
    char *p;
    size_t len, cap;
    int err;
} text;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        size_t room = t->cap - t->len;
        va_start(ap, fmt);
        n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0 || t->err)
            return;
        if ((size_t)n < room && t->p) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 16384;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *q = realloc(t->p, cap);
        if (q == NULL) {
            t->err = 1;
            return;
        }
        t->p = q;
        t->cap = cap;
    }
}

/* A label value: \, " and newline escaped, other bytes as they are
 * (non-UTF-8 bytes as \xNN, which the format allows as text). */
static void add_label(text *t, const uint8_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t c = v[i];
        if (c == '\\' || c == '"')
            add(t, "\\%c", c);
        else if (c == '\n')
            add(t, "\\n");
        else if (c < 0x20 || c >= 0x7f)
            add(t, "\\\\x%02x", c);
        else
            add(t, "%c", c);
    }
}

static void head(text *t, const char *name, const char *type, const char *help)
{
    add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void node_series(text *t, pk_server *s, uint64_t keys, uint32_t led,
                        uint32_t followed)
{
    head(t, "partkv_commands_total", "counter", "Commands run since start.");
    add(t, "partkv_commands_total %llu\n", (unsigned long long)s->total_cmds);
    head(t, "partkv_connected_clients", "gauge", "Open client connections.");
    add(t, "partkv_connected_clients %u\n", s->nconns);
    head(t, "partkv_keys", "gauge", "Keys in the partitions held here.");
    add(t, "partkv_keys %llu\n", (unsigned long long)keys);
    head(t, "partkv_partitions", "gauge", "Partitions held, by role.");
    add(t, "partkv_partitions{role=\"leader\"} %u\n", led);
    add(t, "partkv_partitions{role=\"follower\"} %u\n", followed);
    head(t, "partkv_command_duration_seconds", "histogram",
         "Time a command runs on this node, by class.");
    for (int c = 0; c < PK_LAT_CLASSES; c++) {
        uint64_t cum = 0;
        for (int b = 0; b <= PK_LAT_BUCKETS; b++) {
            cum += s->lat.bucket[c][b];
            if (b < PK_LAT_BUCKETS)
                add(t,
                    "partkv_command_duration_seconds_bucket{class=\"%s\","
                    "le=\"%g\"} %llu\n",
                    class_names[c], (double)bounds_us[b] / 1e6,
                    (unsigned long long)cum);
            else
                add(t,
                    "partkv_command_duration_seconds_bucket{class=\"%s\","
                    "le=\"+Inf\"} %llu\n",
                    class_names[c], (unsigned long long)cum);
        }
        add(t, "partkv_command_duration_seconds_sum{class=\"%s\"} %.9g\n",
            class_names[c], s->lat.sum_s[c]);
        add(t, "partkv_command_duration_seconds_count{class=\"%s\"} %llu\n",
            class_names[c], (unsigned long long)s->lat.count[c]);
    }
}

static const char *role_of(const pk_server *s, uint32_t p)
{
    const pk_cluster *cl = &s->cluster;

    if (!cl->enabled || cl->map == NULL)
        return "leader";
    if (pk_pmap_leader(cl->map, p) == cl->self)
        return "leader";
    return "follower";
}

/* The per-partition families, one series per partition with data. */
static void part_series(text *t, pk_server *s, pk_txn *txn, uint64_t *keys,
                        uint32_t *led, uint32_t *followed)
{
    static const char *const names[] = {
        "partkv_partition_keys",
        "partkv_partition_bytes",
        "partkv_partition_reads_per_second",
        "partkv_partition_writes_per_second",
        "partkv_partition_cpu_seconds_total",
        "partkv_partition_network_bytes_in_total",
        "partkv_partition_network_bytes_out_total",
        "partkv_partition_log_last_seq"};
    static const char *const types[] = {"gauge",   "gauge",   "gauge",
                                        "gauge",   "counter", "counter",
                                        "counter", "gauge"};
    static const char *const helps[] = {
        "Keys of the partition.",
        "Bytes of its keys and values.",
        "Reads per second, last second.",
        "Writes per second, last second.",
        "CPU time of its commands run here.",
        "Request bytes of its commands run here.",
        "Reply bytes of its commands run here.",
        "Last change-log position (replication)."};
    pk_part_stats st;
    uint32_t part;

    for (int f = 0; f < 8; f++) {
        head(t, names[f], types[f], helps[f]);
        for (uint64_t p = 0;
             txn && pk_store_part_next(txn, p, &part, &st) == PK_OK;
             p = (uint64_t)part + 1) {
            const pk_part_rate *r = part < PK_SLOTS ? &s->rates[part] : NULL;
            double v = 0;
            const char *role = role_of(s, part);
            switch (f) {
            case 0:
                v = (double)st.keys;
                *keys += st.keys;
                *(role[0] == 'l' ? led : followed) += 1;
                break;
            case 1:
                v = (double)st.bytes;
                break;
            case 2:
                v = r ? r->read_rate : 0;
                break;
            case 3:
                v = r ? r->write_rate : 0;
                break;
            case 4:
                v = r ? (double)r->cpu_us / 1e6 : 0;
                break;
            case 5:
                v = r ? (double)r->net_in : 0;
                break;
            case 6:
                v = r ? (double)r->net_out : 0;
                break;
            default:
                v = (double)st.log_last;
            }
            add(t, "%s{partition=\"%u\",role=\"%s\"} %.17g\n", names[f], part,
                role, v);
        }
    }
}

static void hot_series(text *t, pk_server *s)
{
    const pk_topk_entry *top[32];
    uint32_t n = s->hot ? pk_topk_top(s->hot, top, 32) : 0;

    for (int w = 0; w < 2; w++) {
        const char *name = w ? "partkv_hot_key_writes_per_second"
                             : "partkv_hot_key_reads_per_second";
        head(t, name, "gauge", "Estimated rate of a hot key (sampled).");
        for (uint32_t i = 0; i < n; i++) {
            add(t, "%s{key=\"", name);
            add_label(t, top[i]->key, top[i]->len);
            add(t, "\",partition=\"%u\"} %.6g\n", top[i]->part,
                pk_topk_rate(s->hot, top[i], w));
        }
    }
}

/* The whole response for a GET of path. */
static char *respond(pk_server *s, const char *path)
{
    text body = {0}, out = {0};
    pk_txn *txn = NULL;
    uint64_t keys = 0;
    uint32_t led = 0, followed = 0;

    if (strcmp(path, "/metrics") != 0) {
        add(&out, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                  "Content-Length: 10\r\nConnection: close\r\n\r\nnot found\n");
        return out.err ? (free(out.p), NULL) : out.p;
    }
    if (s->store && pk_txn_begin(s->store, 1, &txn) != PK_OK)
        txn = NULL;
    text parts = {0};
    part_series(&parts, s, txn, &keys, &led, &followed);
    if (txn)
        pk_txn_abort(txn);
    node_series(&body, s, keys, led, followed);
    if (parts.p)
        add(&body, "%s", parts.p);
    hot_series(&body, s);
    free(parts.p);
    if (!body.err && !parts.err)
        add(&out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
            "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n"
            "%s",
            body.len, body.p ? body.p : "");
    free(body.p);
    if (out.err || out.p == NULL) {
        free(out.p);
        return NULL;
    }
    return out.p;
}

static void on_closed(uv_handle_t *h)
{
    mconn *c = h->data;
    pk_metrics *m = c->srv->metrics;

    for (mconn **pp = &m->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    free(c->resp);
    free(c);
}

static void close_conn(mconn *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_written(uv_write_t *w, int status)
{
    (void)status;
    close_conn(w->data);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    mconn *c = h->data;

    (void)suggested;
    *buf = uv_buf_init(c->req + c->len, (unsigned)(REQ_MAX - 1 - c->len));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    mconn *c = st->data;
    char path[256];
    uv_buf_t b;

    (void)buf;
    if (n < 0 || (n == 0 && c->len >= REQ_MAX - 1)) {
        close_conn(c);
        return;
    }
    c->len += (size_t)n;
    c->req[c->len] = '\0';
    if (strstr(c->req, "\r\n\r\n") == NULL) {
        if (c->len >= REQ_MAX - 1)
            close_conn(c);
        return;
    }
    uv_read_stop(st);
    if (sscanf(c->req, "GET %255s HTTP/1.", path) != 1 ||
        (c->resp = respond(c->srv, path)) == NULL) {
        close_conn(c);
        return;
    }
    b = uv_buf_init(c->resp, (unsigned)strlen(c->resp));
    c->wr.data = c;
    if (uv_write(&c->wr, st, &b, 1, on_written) != 0)
        close_conn(c);
}

static void on_accept(uv_stream_t *l, int status)
{
    pk_server *s = l->data;
    pk_metrics *m = s->metrics;
    mconn *c;

    if (status < 0 || (c = calloc(1, sizeof(*c))) == NULL)
        return;
    c->srv = s;
    uv_tcp_init(&s->loop, &c->tcp);
    c->tcp.data = c;
    c->next = m->conns;
    m->conns = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
        close_conn(c);
}

int pk_metrics_start(pk_server *s)
{
    pk_metrics *m;
    int port;

    if (s->cfg.metrics_port < 0)
        return 0;
    if ((m = calloc(1, sizeof(*m))) == NULL)
        return -1;
    s->metrics = m;
    if (pk_srv_listen(s, &m->listener, s->cfg.metrics_port, on_accept,
                      " for metrics", &port) != 0)
        return -1;
    fprintf(stderr, "partkv: metrics on %s:%d\n", s->cfg.bind, port);
    return 0;
}

void pk_metrics_stop(pk_server *s)
{
    pk_metrics *m = s->metrics;

    if (m == NULL)
        return;
    for (mconn *c = m->conns; c; c = c->next)
        close_conn(c);
    uv_close((uv_handle_t *)&m->listener, NULL);
}

void pk_metrics_free(pk_server *s)
{
    free(s->metrics);
    s->metrics = NULL;
}

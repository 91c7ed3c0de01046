/*
 * Helpers for tests that need a real etcd: start one on 127.0.0.1 with
 * ephemeral ports and a data directory under /tmp, wait until it answers,
 * compact it, and stop it by its PID.  Also a TCP relay on a libuv loop
 * that can drop every connection it carries or refuse new ones (to break
 * watches on purpose), and that can instead play a server answering every
 * request with canned bytes (to feed malformed answers).
 *
 * Header-only, for one test file per binary.  The etcd binary is
 * /usr/bin/etcd (Debian's etcd-server) unless PARTKV_ETCD names another.
 */
#ifndef PK_TESTS_ETCD_TESTUTIL_H
#define PK_TESTS_ETCD_TESTUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uv.h>

typedef struct etcd_proc {
    pid_t pid; /* 0: not running */
    char dir[64];
    char endpoint[64]; /* "127.0.0.1:port" */
    char err[512];     /* why it is not running */
} etcd_proc;

static uint64_t etcd_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A TCP port on 127.0.0.1 that was free a moment ago, or -1. */
static int etcd_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port = -1;

    if (fd < 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}

static size_t etcd_sink(char *p, size_t size, size_t n, void *userp)
{
    char *out = userp;
    size_t have = strlen(out);
    size_t take = size * n;

    if (take > 4095 - have) {
        take = 4095 - have;
    }
    memcpy(out + have, p, take);
    out[have + take] = '\0';
    return size * n;
}

/*
 * POSTs body to http://endpoint/path, blocking (at most 2 s); the answer's
 * first 4 KiB go to out (4096 bytes, may be NULL).  Returns the HTTP
 * status, or -1 when there was none.
 */
static long etcd_post(const char *endpoint, const char *path, const char *body,
                      char *out)
{
    char url[256];
    char sink[4096] = "";
    CURL *e = curl_easy_init();
    long status = -1;

    if (e == NULL) {
        return -1;
    }
    snprintf(url, sizeof(url), "http://%s%s", endpoint, path);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, etcd_sink);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, sink);
    if (curl_easy_perform(e) == CURLE_OK) {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    }
    curl_easy_cleanup(e);
    if (out != NULL) {
        memcpy(out, sink, sizeof(sink));
    }
    return status;
}

static int etcd_rm_entry(const char *path, const struct stat *sb, int flag,
                         struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Stops p (SIGTERM, then SIGKILL after 5 s) and removes its directory. */
static void etcd_stop(etcd_proc *p)
{
    if (p->pid > 0) {
        uint64_t deadline = etcd_now_ms() + 5000;
        int status;

        kill(p->pid, SIGTERM);
        while (waitpid(p->pid, &status, WNOHANG) == 0) {
            if (etcd_now_ms() > deadline) {
                kill(p->pid, SIGKILL);
                waitpid(p->pid, &status, 0);
                break;
            }
            usleep(10000);
        }
        p->pid = 0;
    }
    if (p->dir[0] != '\0') {
        nftw(p->dir, etcd_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        p->dir[0] = '\0';
    }
}

/* The last lines of the etcd log, into p->err after prefix. */
static void etcd_log_tail(etcd_proc *p, const char *prefix)
{
    char path[96];
    char buf[400] = "";
    FILE *fp;

    snprintf(path, sizeof(path), "%s/etcd.log", p->dir);
    fp = fopen(path, "r");
    if (fp != NULL) {
        long size;

        fseek(fp, 0, SEEK_END);
        size = ftell(fp);
        fseek(fp, size > 300 ? size - 300 : 0, SEEK_SET);
        buf[fread(buf, 1, sizeof(buf) - 1, fp)] = '\0';
        fclose(fp);
    }
    snprintf(p->err, sizeof(p->err), "%s; log ends: %s", prefix, buf);
}

/* One try at starting etcd on fresh ports: 0, or -1 with p->err. */
static int etcd_start_once(etcd_proc *p, const char *bin)
{
    char client[64], peer[64], cluster[96], data[96], log[96];
    uint64_t deadline;
    int cport = etcd_free_port();
    int pport = etcd_free_port();

    if (cport < 0 || pport < 0 || cport == pport) {
        snprintf(p->err, sizeof(p->err), "no free ports");
        return -1;
    }
    snprintf(p->dir, sizeof(p->dir), "/tmp/pketcd-XXXXXX");
    if (mkdtemp(p->dir) == NULL) {
        snprintf(p->err, sizeof(p->err), "mkdtemp: %s", strerror(errno));
        p->dir[0] = '\0';
        return -1;
    }
    snprintf(p->endpoint, sizeof(p->endpoint), "127.0.0.1:%d", cport);
    snprintf(client, sizeof(client), "http://127.0.0.1:%d", cport);
    snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", pport);
    snprintf(cluster, sizeof(cluster), "default=%s", peer);
    snprintf(data, sizeof(data), "%s/data", p->dir);
    snprintf(log, sizeof(log), "%s/etcd.log", p->dir);
    p->pid = fork();
    if (p->pid < 0) {
        snprintf(p->err, sizeof(p->err), "fork: %s", strerror(errno));
        p->pid = 0;
        return -1;
    }
    if (p->pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        /* Dies with the test, whatever kills the test. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(bin, bin, "--name", "default", "--data-dir", data,
              "--listen-client-urls", client, "--advertise-client-urls", client,
              "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
              "--initial-cluster", cluster, "--election-timeout", "500",
              "--heartbeat-interval", "50", (char *)NULL);
        _exit(127);
    }
    deadline = etcd_now_ms() + 15000;
    while (etcd_now_ms() < deadline) {
        int status;

        if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
            p->pid = 0;
            etcd_log_tail(p, "etcd exited at start");
            return -1;
        }
        if (etcd_post(p->endpoint, "/v3/kv/range", "{\"key\":\"AA==\"}",
                      NULL) == 200) {
            return 0;
        }
        usleep(50000);
    }
    etcd_log_tail(p, "etcd did not answer within 15 s");
    return -1;
}

/* Starts etcd (three tries, for port races): 0, or -1 with p->err. */
static int etcd_start(etcd_proc *p)
{
    const char *bin = getenv("PARTKV_ETCD");

    memset(p, 0, sizeof(*p));
    if (bin == NULL || bin[0] == '\0') {
        bin = "/usr/bin/etcd";
    }
    if (access(bin, X_OK) != 0) {
        snprintf(p->err, sizeof(p->err),
                 "%s is not installed (Debian's etcd-server; `make test` "
                 "installs it)",
                 bin);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        char err[sizeof(p->err)];

        if (etcd_start_once(p, bin) == 0) {
            return 0;
        }
        memcpy(err, p->err, sizeof(err));
        etcd_stop(p);
        memcpy(p->err, err, sizeof(err));
    }
    return -1;
}

/* Compacts p's history before rev: 0, or -1. */
static int etcd_compact(const etcd_proc *p, uint64_t rev)
{
    char body[96];

    snprintf(body, sizeof(body), "{\"revision\":\"%llu\",\"physical\":true}",
             (unsigned long long)rev);
    return etcd_post(p->endpoint, "/v3/kv/compaction", body, NULL) == 200 ? 0
                                                                          : -1;
}

/* ---- a TCP relay on a uv loop ----------------------------------------- */

typedef struct relay relay;

typedef struct relay_conn {
    uv_tcp_t down; /* from the client */
    uv_tcp_t up;   /* to the server (unused when canned) */
    uv_connect_t connect;
    relay *r;
    int up_open;  /* up was initialized */
    int closing;  /* handles left to close before freeing */
    int shutting; /* close requested */
    struct relay_conn *prev;
    struct relay_conn *next;
} relay_conn;

struct relay {
    uv_loop_t *loop;
    uv_tcp_t listener;
    int listening;
    int closed; /* the listener's close completed: r may go */
    int port;
    int upstream_port;  /* relay to 127.0.0.1:upstream_port */
    const char *canned; /* non-NULL: answer every request with it, close */
    relay_conn *conns;
    int accepted; /* connections so far */
};

typedef struct relay_write {
    uv_write_t req;
    relay_conn *c;
    int close_after;
    char data[];
} relay_write;

static void relay_conn_closed(uv_handle_t *h)
{
    relay_conn *c = h->data;

    if (--c->closing == 0) {
        free(c);
    }
}

static void relay_conn_close(relay_conn *c)
{
    relay *r = c->r;

    if (c->shutting) {
        return;
    }
    c->shutting = 1;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        r->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    c->closing = 1 + c->up_open;
    uv_close((uv_handle_t *)&c->down, relay_conn_closed);
    if (c->up_open) {
        uv_close((uv_handle_t *)&c->up, relay_conn_closed);
    }
}

static void relay_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(hint);
    buf->len = buf->base != NULL ? hint : 0;
}

static void relay_written(uv_write_t *req, int status)
{
    relay_write *w = (relay_write *)req;

    if (w->close_after || status < 0) {
        if (status != UV_ECANCELED) {
            relay_conn_close(w->c);
        }
    }
    free(w);
}

static void relay_send(relay_conn *c, uv_tcp_t *to, const char *p, size_t n,
                       int close_after)
{
    relay_write *w = malloc(sizeof(*w) + n);
    uv_buf_t b;

    if (w == NULL) {
        relay_conn_close(c);
        return;
    }
    w->c = c;
    w->close_after = close_after;
    memcpy(w->data, p, n);
    b = uv_buf_init(w->data, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)to, &b, 1, relay_written) != 0) {
        free(w);
        relay_conn_close(c);
    }
}

static void relay_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    relay_conn *c = s->data;

    if (n < 0) {
        relay_conn_close(c);
    } else if (n > 0 && c->r->canned != NULL) {
        if (c->r->canned[0] != '\0') { /* "": never answer */
            relay_send(c, &c->down, c->r->canned, strlen(c->r->canned), 1);
            uv_read_stop(s);
        }
    } else if (n > 0) {
        relay_send(c, s == (uv_stream_t *)&c->down ? &c->up : &c->down,
                   buf->base, (size_t)n, 0);
    }
    free(buf->base);
}

static void relay_connected(uv_connect_t *req, int status)
{
    relay_conn *c = req->data;

    if (status == UV_ECANCELED) {
        return;
    }
    if (status < 0) {
        relay_conn_close(c);
        return;
    }
    uv_read_start((uv_stream_t *)&c->down, relay_alloc, relay_read);
    uv_read_start((uv_stream_t *)&c->up, relay_alloc, relay_read);
}

static void relay_accept(uv_stream_t *server, int status)
{
    relay *r = server->data;
    relay_conn *c;

    if (status < 0 || (c = calloc(1, sizeof(*c))) == NULL) {
        return;
    }
    c->r = r;
    uv_tcp_init(r->loop, &c->down);
    c->down.data = c;
    c->next = r->conns;
    if (r->conns != NULL) {
        r->conns->prev = c;
    }
    r->conns = c;
    if (uv_accept(server, (uv_stream_t *)&c->down) != 0) {
        relay_conn_close(c);
        return;
    }
    r->accepted++;
    if (r->canned != NULL) {
        uv_read_start((uv_stream_t *)&c->down, relay_alloc, relay_read);
        return;
    }
    {
        struct sockaddr_in a;

        uv_ip4_addr("127.0.0.1", r->upstream_port, &a);
        uv_tcp_init(r->loop, &c->up);
        c->up.data = c;
        c->up_open = 1;
        c->connect.data = c;
        if (uv_tcp_connect(&c->connect, &c->up, (struct sockaddr *)&a,
                           relay_connected) != 0) {
            relay_conn_close(c);
        }
    }
}

/*
 * Starts listening on an ephemeral port of 127.0.0.1 (r->port), relaying
 * to upstream_port, or answering canned when it is not NULL (never, when
 * it is "").  0 or -1.
 */
static int relay_start(relay *r, uv_loop_t *loop, int upstream_port,
                       const char *canned)
{
    struct sockaddr_in a;
    int len = sizeof(a);

    memset(r, 0, sizeof(*r));
    r->loop = loop;
    r->upstream_port = upstream_port;
    r->canned = canned;
    uv_ip4_addr("127.0.0.1", 0, &a);
    if (uv_tcp_init(loop, &r->listener) != 0) {
        return -1;
    }
    r->listener.data = r;
    r->listening = 1;
    r->closed = 0;
    if (uv_tcp_bind(&r->listener, (struct sockaddr *)&a, 0) != 0 ||
        uv_listen((uv_stream_t *)&r->listener, 64, relay_accept) != 0 ||
        uv_tcp_getsockname(&r->listener, (struct sockaddr *)&a, &len) != 0) {
        return -1;
    }
    r->port = ntohs(a.sin_port);
    return 0;
}

/* Closes every connection the relay carries. */
static void relay_drop(relay *r)
{
    while (r->conns != NULL) {
        relay_conn_close(r->conns);
    }
}

static void relay_listener_closed(uv_handle_t *h)
{
    ((relay *)h->data)->closed = 1;
}

/*
 * Stops listening (new connections are refused) and drops the rest.  The
 * loop must run until r->closed before r goes away or is started again.
 */
static void relay_stop(relay *r)
{
    if (r->listening) {
        uv_close((uv_handle_t *)&r->listener, relay_listener_closed);
        r->listening = 0;
    }
    relay_drop(r);
}

#endif

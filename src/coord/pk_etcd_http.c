/*
 * pk_etcd_http: libcurl's multi interface on a libuv loop, for etcd's JSON
 * gateway (see pk_etcd_http.h for what it promises).
 *
 * The glue is libcurl's standard event-loop integration:
 *
 *   libcurl --socket cb--> one uv_poll_t per socket --readable/writable-->
 *   libcurl --timer cb---> one uv_timer_t ------------fires------------->
 *           curl_multi_socket_action --> report()
 *
 * libcurl calls back into us (socket, timer, write callbacks) only to
 * record things: bytes are appended to the request's buffer, requests
 * with something to say go on the ready list.  report() runs after
 * curl_multi_socket_action has returned: it collects finished transfers
 * and then hands each ready request to its owner, whose callbacks are
 * therefore free to add and remove transfers -- which libcurl forbids
 * from inside its own callbacks.
 *
 * Lifetimes.  uv handles are closed asynchronously, so each one lives in
 * its own allocation that its close callback frees; the client itself can
 * then be freed at once.  A stream closed from inside its own on_object is
 * marked closed and freed when that dispatch returns.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <uv.h>

#include "coord/pk_etcd_http.h"
#include "core/pk_err.h"

/* One request: a call or a stream (a call is a stream's simpler kind). */
typedef struct pk_etcd_stream xfer;

typedef struct sock {
    uv_poll_t poll;
    curl_socket_t fd;
    pk_etcd_http *h;
    struct sock *prev;
    struct sock *next;
} sock;

struct pk_etcd_http {
    uv_loop_t *loop; /* borrowed */
    CURLM *multi;
    uv_timer_t *timer; /* owned; freed by its close callback */
    struct curl_slist *headers;
    char **urls; /* "http://host:port", no trailing slash */
    size_t nurls;
    size_t preferred; /* index into urls: where requests start */
    xfer *all;        /* every request not yet ended */
    xfer *ready_head; /* requests with something to report, FIFO */
    xfer *ready_tail;
    sock *socks; /* sockets libcurl asked us to watch */
    int closing;
    char iface[80]; /* CURLOPT_INTERFACE "host!IP", or "" */
    /* https: the client certificate, its key and the CA (owned, or NULL:
     * none, and the system's CAs). */
    char *cert, *key, *ca;
};

struct pk_etcd_stream {
    pk_etcd_http *h;
    CURL *easy;
    const char *path; /* static */
    char *body;       /* owned JSON text */
    int is_stream;
    unsigned flags;
    size_t ep;    /* endpoint of the current attempt */
    size_t tries; /* attempts before the current one */
    int active;   /* added to the multi handle */
    int finished; /* the transfer ended, with result */
    CURLcode result;
    int ready;       /* on the ready list */
    int closed;      /* stream: closed, to be freed after dispatch */
    int dispatching; /* stream: inside its callbacks */
    /* The answer so far; streams consume it from off. */
    char *buf;
    size_t len;
    size_t cap;
    /* Stream object scanner: buf[off..pos) is an object not yet closed. */
    size_t off;
    size_t pos;
    size_t depth;
    int in_str;
    int esc;
    pk_etcd_call_cb call_cb;
    pk_etcd_object_cb on_object;
    pk_etcd_end_cb on_end;
    void *ctx; /* borrowed */
    xfer *prev;
    xfer *next;
    xfer *rnext;
    xfer *rprev;
};

static void report(pk_etcd_http *h);

/* ---- lists ------------------------------------------------------------ */

static void ready_push(pk_etcd_http *h, xfer *x)
{
    if (x->ready) {
        return;
    }
    x->ready = 1;
    x->rnext = NULL;
    x->rprev = h->ready_tail;
    if (h->ready_tail != NULL) {
        h->ready_tail->rnext = x;
    } else {
        h->ready_head = x;
    }
    h->ready_tail = x;
}

static void ready_remove(pk_etcd_http *h, xfer *x)
{
    if (!x->ready) {
        return;
    }
    x->ready = 0;
    if (x->rprev != NULL) {
        x->rprev->rnext = x->rnext;
    } else {
        h->ready_head = x->rnext;
    }
    if (x->rnext != NULL) {
        x->rnext->rprev = x->rprev;
    } else {
        h->ready_tail = x->rprev;
    }
}

static void xfer_unlink(xfer *x)
{
    pk_etcd_http *h = x->h;

    ready_remove(h, x);
    if (x->prev != NULL) {
        x->prev->next = x->next;
    } else if (h->all == x) {
        h->all = x->next;
    }
    if (x->next != NULL) {
        x->next->prev = x->prev;
    }
    x->prev = x->next = NULL;
}

static void xfer_free(xfer *x)
{
    curl_easy_cleanup(x->easy);
    free(x->body);
    free(x->buf);
    free(x);
}

/* Takes x off the multi handle if it is on it. */
static void xfer_stop(xfer *x)
{
    if (x->active) {
        curl_multi_remove_handle(x->h->multi, x->easy);
        x->active = 0;
    }
}

/* ---- libcurl <-> libuv ------------------------------------------------ */

static void free_handle(uv_handle_t *handle)
{
    free(handle);
}

static void sock_close(pk_etcd_http *h, sock *s)
{
    if (s->prev != NULL) {
        s->prev->next = s->next;
    } else {
        h->socks = s->next;
    }
    if (s->next != NULL) {
        s->next->prev = s->prev;
    }
    /* Stops polling now (before libcurl closes the fd); frees later.
     * The poll handle is the first member, so freeing it frees s. */
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, free_handle);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    sock *s = p->data;
    pk_etcd_http *h = s->h;
    int flags = 0;
    int running;

    if (status < 0) {
        flags |= CURL_CSELECT_ERR;
    }
    if (events & UV_READABLE) {
        flags |= CURL_CSELECT_IN;
    }
    if (events & UV_WRITABLE) {
        flags |= CURL_CSELECT_OUT;
    }
    curl_multi_socket_action(h->multi, s->fd, flags, &running);
    report(h);
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
                     void *socketp)
{
    pk_etcd_http *h = userp;
    sock *s = socketp;
    int events = 0;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (s != NULL) {
            sock_close(h, s);
            if (!h->closing) {
                curl_multi_assign(h->multi, fd, NULL);
            }
        }
        return 0;
    }
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL) {
            return -1;
        }
        if (uv_poll_init_socket(h->loop, &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->poll.data = s;
        s->fd = fd;
        s->h = h;
        s->next = h->socks;
        if (h->socks != NULL) {
            h->socks->prev = s;
        }
        h->socks = s;
        curl_multi_assign(h->multi, fd, s);
    }
    if (what & CURL_POLL_IN) {
        events |= UV_READABLE;
    }
    if (what & CURL_POLL_OUT) {
        events |= UV_WRITABLE;
    }
    return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
}

static void on_timeout(uv_timer_t *t)
{
    pk_etcd_http *h = t->data;
    int running;

    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    report(h);
}

static int on_timer_set(CURLM *multi, long timeout_ms, void *userp)
{
    pk_etcd_http *h = userp;

    (void)multi;
    if (timeout_ms < 0) {
        uv_timer_stop(h->timer);
        return 0;
    }
    /* 0 means "now": the next loop iteration, outside libcurl. */
    return uv_timer_start(h->timer, on_timeout, (uint64_t)timeout_ms, 0) == 0
               ? 0
               : -1;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userp)
{
    xfer *x = userp;
    size_t n = size * nmemb;

    if (n > PK_ETCD_HTTP_BODY_MAX - (x->len - x->off)) {
        return 0; /* too big: libcurl fails the transfer */
    }
    if (x->len + n > x->cap) {
        size_t cap = x->cap != 0 ? x->cap : 4096;
        char *buf;

        while (cap < x->len + n) {
            cap *= 2;
        }
        buf = realloc(x->buf, cap);
        if (buf == NULL) {
            return 0;
        }
        x->buf = buf;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, data, n);
    x->len += n;
    if (x->is_stream) {
        ready_push(x->h, x);
    }
    return n;
}

/* ---- requests --------------------------------------------------------- */

/* Starts the current attempt of x on endpoint x->ep. */
static int attempt(xfer *x)
{
    pk_etcd_http *h = x->h;
    char url[PK_ETCD_HTTP_ENDPOINT_MAX + 64];

    x->len = x->off = x->pos = x->depth = 0;
    x->in_str = x->esc = 0;
    x->finished = 0;
    x->result = CURLE_OK;
    snprintf(url, sizeof(url), "%s%s", h->urls[x->ep], x->path);
    if (curl_easy_setopt(x->easy, CURLOPT_URL, url) != CURLE_OK ||
        curl_multi_add_handle(h->multi, x->easy) != CURLM_OK) {
        return PK_EIO;
    }
    x->active = 1;
    return PK_OK;
}

static int xfer_new(pk_etcd_http *h, const char *path, const json_t *req,
                    int is_stream, xfer **out)
{
    xfer *x;
    CURL *e;
    int ok = 1;

    if (h->closing) {
        return PK_EIO;
    }
    x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return PK_ENOMEM;
    }
    x->h = h;
    x->path = path;
    x->is_stream = is_stream;
    x->ep = h->preferred;
    x->body = json_dumps(req, JSON_COMPACT);
    x->easy = e = curl_easy_init();
    if (x->body == NULL || e == NULL) {
        xfer_free(x);
        return PK_ENOMEM;
    }
    ok &= curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)x) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(x->body)) ==
          CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_WRITEDATA, x) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
    if (h->iface[0])
        ok &= curl_easy_setopt(e, CURLOPT_INTERFACE, h->iface) == CURLE_OK;
    if (h->cert)
        ok &= curl_easy_setopt(e, CURLOPT_SSLCERT, h->cert) == CURLE_OK;
    if (h->key)
        ok &= curl_easy_setopt(e, CURLOPT_SSLKEY, h->key) == CURLE_OK;
    if (h->ca)
        ok &= curl_easy_setopt(e, CURLOPT_CAINFO, h->ca) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                           (long)CURL_HTTP_VERSION_1_1) == CURLE_OK;
    ok &= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                           (long)PK_ETCD_HTTP_TIMEOUT_MS) == CURLE_OK;
    if (is_stream) {
        /* A watch may be silent for hours: no overall timeout, but TCP
         * keepalives notice a peer that vanished. */
        ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
        ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 5L) == CURLE_OK;
        ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 5L) == CURLE_OK;
    } else {
        ok &= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                               (long)PK_ETCD_HTTP_TIMEOUT_MS) == CURLE_OK;
    }
    if (!ok || attempt(x) != PK_OK) {
        xfer_free(x);
        return PK_EIO;
    }
    x->next = h->all;
    if (h->all != NULL) {
        h->all->prev = x;
    }
    h->all = x;
    *out = x;
    return PK_OK;
}

/* Endpoint ep failed: later requests start at the next one. */
static void endpoint_failed(pk_etcd_http *h, size_t ep)
{
    if (h->preferred == ep) {
        h->preferred = (ep + 1) % h->nurls;
    }
}

/*
 * The code for an error answer, from the gRPC status in its body: {"error":
 * text, "message": text, "code": N} with an HTTP error status, or, from a
 * streaming method such as keepalive, {"error": {"grpc_code": N,
 * "message": text, ...}} with status 200.  *down is set when the member
 * is unavailable (gRPC 14, or an HTTP 5xx without a status), and *retry
 * when another endpoint may then do better: the request was refused
 * before it was looked at ("no leader") or may be sent twice.
 */
static int grpc_error(const json_t *doc, long status, int idempotent, int *down,
                      int *retry)
{
    const json_t *err = json_object_get(doc, "error");
    const json_t *code = json_object_get(doc, "code");
    const char *msg;
    int unavailable;

    if (json_is_object(err)) {
        doc = err;
        code = json_object_get(err, "grpc_code");
    }
    msg = json_string_value(json_object_get(doc, "message"));

    if (json_is_integer(code)) {
        switch (json_integer_value(code)) {
        case 5: /* NotFound */
            return PK_ENOTFOUND;
        case 11: /* OutOfRange */
            return PK_ERANGE;
        case 14: /* Unavailable */
            unavailable = 1;
            break;
        default:
            unavailable = 0;
            break;
        }
    } else {
        unavailable = status >= 500;
    }
    *down = unavailable;
    *retry = unavailable &&
             (idempotent || (msg != NULL && strstr(msg, "no leader") != NULL));
    return PK_EIO;
}

static void finish_call(xfer *x)
{
    pk_etcd_http *h = x->h;
    json_t *doc = NULL;
    long status = 0;
    long sent = 0;
    int idempotent = (x->flags & PK_ETCD_IDEMPOTENT) != 0;
    int down = 0;
    int retry = 0;
    int rc;

    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
    if (x->result != CURLE_OK) {
        /* Nothing sent (refused, unresolvable, connect timeout) is safe to
         * send elsewhere; anything else only if it is idempotent. */
        rc = PK_EIO;
        down = 1;
        retry = sent == 0 || idempotent;
    } else {
        doc = json_loadb(x->buf != NULL ? x->buf : "", x->len, 0, NULL);
        if (status == 200 && json_is_object(json_object_get(doc, "error"))) {
            rc = grpc_error(doc, status, idempotent, &down, &retry);
        } else if (status == 200) {
            rc = json_is_object(doc) ? PK_OK : PK_EIO;
        } else {
            rc = grpc_error(doc, status, idempotent, &down, &retry);
        }
    }
    if (down) {
        endpoint_failed(h, x->ep);
    } else if (rc != PK_EIO) {
        h->preferred = x->ep; /* it answered */
    }
    if (retry && x->tries + 1 < h->nurls && !h->closing) {
        json_decref(doc);
        x->tries++;
        x->ep = (x->ep + 1) % h->nurls;
        if (attempt(x) == PK_OK) {
            return;
        }
        doc = NULL;
    }
    xfer_unlink(x);
    x->call_cb(x->ctx, rc, rc == PK_OK ? doc : NULL);
    json_decref(doc);
    xfer_free(x);
}

/*
 * The next complete JSON object of a stream, or *obj NULL when none is
 * complete yet.  The gateway writes one object per line, but objects are
 * found by their braces (outside strings), so concatenated objects work
 * too.  Returns 0, or PK_EPROTO for bytes that are not an object.
 */
static int next_object(xfer *x, json_t **obj)
{
    *obj = NULL;
    while (x->pos < x->len) {
        char ch = x->buf[x->pos++];

        if (x->depth == 0) {
            if (isspace((unsigned char)ch)) {
                x->off = x->pos;
                continue;
            }
            if (ch != '{') {
                return PK_EPROTO;
            }
            x->depth = 1;
        } else if (x->in_str) {
            if (x->esc) {
                x->esc = 0;
            } else if (ch == '\\') {
                x->esc = 1;
            } else if (ch == '"') {
                x->in_str = 0;
            }
        } else if (ch == '"') {
            x->in_str = 1;
        } else if (ch == '{' || ch == '[') {
            x->depth++;
        } else if ((ch == '}' || ch == ']') && --x->depth == 0) {
            *obj = json_loadb(x->buf + x->off, x->pos - x->off, 0, NULL);
            x->off = x->pos;
            return json_is_object(*obj) ? PK_OK : PK_EPROTO;
        }
    }
    /* Keep only the unfinished object. */
    if (x->off > 0) {
        memmove(x->buf, x->buf + x->off, x->len - x->off);
        x->len -= x->off;
        x->pos -= x->off;
        x->off = 0;
    }
    return PK_OK;
}

static void dispatch_stream(xfer *x)
{
    long status = 0;
    int rc = PK_OK;

    x->dispatching = 1;
    while (!x->closed) {
        json_t *obj;

        rc = next_object(x, &obj);
        if (obj != NULL && rc == PK_OK) {
            x->on_object(x->ctx, obj);
        }
        json_decref(obj);
        if (rc != PK_OK || obj == NULL) {
            break;
        }
    }
    if (!x->closed && (x->finished || rc != PK_OK)) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        if (rc == PK_OK) {
            rc = x->result == CURLE_OK && status == 200 ? PK_OK : PK_EIO;
        }
        xfer_stop(x);
        endpoint_failed(x->h, x->ep);
        x->closed = 1;
        xfer_unlink(x);
        x->on_end(x->ctx, rc);
    }
    x->dispatching = 0;
    if (x->closed) {
        xfer_free(x);
    }
}

/* Collects finished transfers, then lets every ready request report. */
static void report(pk_etcd_http *h)
{
    CURLMsg *m;
    xfer *x;
    int left;

    while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
        CURL *easy = m->easy_handle;
        CURLcode result = m->data.result;
        char *priv = NULL;

        if (m->msg != CURLMSG_DONE) {
            continue;
        }
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
        x = (xfer *)priv;
        xfer_stop(x); /* m is invalid from here on */
        x->finished = 1;
        x->result = result;
        ready_push(h, x);
    }
    while ((x = h->ready_head) != NULL) {
        ready_remove(h, x);
        if (x->is_stream) {
            dispatch_stream(x);
        } else if (x->finished) {
            finish_call(x);
        }
    }
}

/* ---- the client ------------------------------------------------------- */

/* Appends the endpoint spec[0..len), trimmed and as a URL, to h->urls. */
static int add_endpoint(pk_etcd_http *h, const char *spec, size_t len)
{
    const char *scheme = "http://";
    size_t url_len;
    char *url;

    while (len > 0 && isspace((unsigned char)spec[0])) {
        spec++;
        len--;
    }
    while (len > 0 &&
           (isspace((unsigned char)spec[len - 1]) || spec[len - 1] == '/')) {
        len--;
    }
    if (len >= 7 && strncmp(spec, "etcd://", 7) == 0) {
        spec += 7;
        len -= 7;
    } else if (len >= 8 && strncmp(spec, "etcds://", 8) == 0) {
        scheme = "https://";
        spec += 8;
        len -= 8;
    }
    if ((len > 7 && strncmp(spec, "http://", 7) == 0) ||
        (len > 8 && strncmp(spec, "https://", 8) == 0)) {
        scheme = "";
    } else if (memmem(spec, len, "://", 3) != NULL) {
        return PK_EINVAL; /* some other scheme */
    }
    if (len == 0 || len > PK_ETCD_HTTP_ENDPOINT_MAX ||
        h->nurls == PK_ETCD_HTTP_ENDPOINTS_MAX) {
        return PK_EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        if (!isgraph((unsigned char)spec[i]) || spec[i] == '?' ||
            spec[i] == '#') {
            return PK_EINVAL;
        }
    }
    url_len = strlen(scheme) + len;
    url = malloc(url_len + 1);
    if (url == NULL) {
        return PK_ENOMEM;
    }
    snprintf(url, url_len + 1, "%s%.*s", scheme, (int)len, spec);
    h->urls[h->nurls++] = url;
    return PK_OK;
}

static int parse_endpoints(pk_etcd_http *h, const char *spec)
{
    h->urls = calloc(PK_ETCD_HTTP_ENDPOINTS_MAX, sizeof(*h->urls));
    if (h->urls == NULL) {
        return PK_ENOMEM;
    }
    for (;;) {
        const char *comma = strchr(spec, ',');
        size_t len = comma != NULL ? (size_t)(comma - spec) : strlen(spec);
        int rc = add_endpoint(h, spec, len);

        if (rc != PK_OK) {
            return rc;
        }
        if (comma == NULL) {
            return PK_OK;
        }
        spec = comma + 1;
    }
}

static void client_free(pk_etcd_http *h)
{
    if (h->multi != NULL) {
        curl_multi_cleanup(h->multi);
    }
    /* Whatever libcurl did not remove itself. */
    while (h->socks != NULL) {
        sock_close(h, h->socks);
    }
    if (h->timer != NULL) {
        uv_close((uv_handle_t *)h->timer, free_handle);
    }
    curl_slist_free_all(h->headers);
    for (size_t i = 0; h->urls != NULL && i < h->nurls; i++) {
        free(h->urls[i]);
    }
    free(h->urls);
    free(h->cert);
    free(h->key);
    free(h->ca);
    free(h);
    curl_global_cleanup();
}

void pk_etcd_http_set_source(pk_etcd_http *h, const char *ip)
{
    snprintf(h->iface, sizeof(h->iface), "%s%s", ip && *ip ? "host!" : "",
             ip && *ip ? ip : "");
}

static int set_path(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
    return src && *dst == NULL ? PK_ENOMEM : PK_OK;
}

int pk_etcd_http_set_tls(pk_etcd_http *h, const char *cert, const char *key,
                         const char *ca)
{
    int rc = set_path(&h->cert, cert);

    rc = rc ? rc : set_path(&h->key, key);
    return rc ? rc : set_path(&h->ca, ca);
}

int pk_etcd_http_new(uv_loop_t *loop, const char *endpoints, pk_etcd_http **out)
{
    pk_etcd_http *h;
    struct curl_slist *hd;
    int rc;

    if (loop == NULL || endpoints == NULL || out == NULL) {
        return PK_EINVAL;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return PK_EIO;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        curl_global_cleanup();
        return PK_ENOMEM;
    }
    h->loop = loop;
    h->closing = 1; /* until set up: nothing to call back */
    rc = parse_endpoints(h, endpoints);
    if (rc != PK_OK) {
        goto fail;
    }
    rc = PK_ENOMEM;
    hd = curl_slist_append(NULL, "Content-Type: application/json");
    h->headers = hd;
    hd = hd != NULL ? curl_slist_append(hd, "Grpc-Metadata-hasleader: true")
                    : NULL;
    /* No "Expect: 100-continue" round trip for large bodies. */
    hd = hd != NULL ? curl_slist_append(hd, "Expect:") : NULL;
    h->timer = malloc(sizeof(*h->timer));
    h->multi = curl_multi_init();
    if (hd == NULL || h->timer == NULL || h->multi == NULL) {
        goto fail;
    }
    if (uv_timer_init(loop, h->timer) != 0) {
        free(h->timer);
        h->timer = NULL;
        rc = PK_EIO;
        goto fail;
    }
    h->timer->data = h;
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer_set);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    h->closing = 0;
    *out = h;
    return PK_OK;
fail:
    client_free(h);
    return rc;
}

void pk_etcd_http_free(pk_etcd_http *h)
{
    if (h == NULL) {
        return;
    }
    h->closing = 1;
    while (h->all != NULL) {
        xfer *x = h->all;

        xfer_stop(x);
        xfer_unlink(x);
        if (!x->is_stream) {
            x->call_cb(x->ctx, PK_EIO, NULL);
        }
        xfer_free(x);
    }
    client_free(h);
}

size_t pk_etcd_http_endpoints(const pk_etcd_http *h)
{
    return h->nurls;
}

int pk_etcd_http_call(pk_etcd_http *h, const char *path, const json_t *req,
                      unsigned flags, pk_etcd_call_cb cb, void *ctx)
{
    xfer *x;
    int rc = xfer_new(h, path, req, 0, &x);

    if (rc == PK_OK) {
        x->flags = flags;
        x->call_cb = cb;
        x->ctx = ctx;
    }
    return rc;
}

int pk_etcd_http_stream_open(pk_etcd_http *h, const char *path,
                             const json_t *req, pk_etcd_object_cb on_object,
                             pk_etcd_end_cb on_end, void *ctx,
                             pk_etcd_stream **out)
{
    xfer *x;
    int rc = xfer_new(h, path, req, 1, &x);

    if (rc == PK_OK) {
        x->on_object = on_object;
        x->on_end = on_end;
        x->ctx = ctx;
        *out = x;
    }
    return rc;
}

void pk_etcd_http_stream_close(pk_etcd_stream *x)
{
    if (x == NULL || x->closed) {
        return;
    }
    x->closed = 1;
    xfer_stop(x);
    xfer_unlink(x);
    if (!x->dispatching) {
        xfer_free(x);
    }
}

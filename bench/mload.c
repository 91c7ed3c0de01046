/*
 * mload: a MULTI/EXEC load for bench/vs-redis.sh, which redis-benchmark
 * cannot make (it repeats one command).  C clients, each on its own
 * thread and blocking socket, send pipelines of P transactions
 *
 *   MULTI | SET key:<12 digits> xxx | INCR ctr:<same digits> | EXEC
 *
 * (the two keys share a {hash tag}-free slot only by chance, so run it
 * against a single node) and read the 4 replies of each back before the
 * next pipeline.  It prints redis-benchmark's --csv shape, so the bench
 * scripts parse both alike:
 *
 *   "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",...
 *   "MULTI","123456.78","0.401","0.100","0.380","0.700","1.100","5.000"
 *
 * where a request is one transaction and its latency is its pipeline's
 * round trip.  An error reply inside a transaction ends the run (exit 1):
 * a benchmark of failing transactions would measure nothing.
 *
 *   mload -h HOST -p PORT [-c CLIENTS] [-n TRANSACTIONS] [-P PIPE]
 *         [-r KEYSPACE]
 */
#include <pthread.h>
#include <stdio.h>

#include "bnet.h"

#define REPLIES_PER_TX 4

typedef struct mload_args {
    const char *host;
    int port, clients, pipe;
    long total, keyspace;
} mload_args;

typedef struct client {
    const mload_args *a;
    pthread_t th;
    long txs;    /* transactions to run */
    double *lat; /* owned: ms per transaction */
    long nlat;
    int failed;   /* an error reply or a broken connection */
    uint64_t rng; /* xorshift state */
    char err[128];
} client;

static void *run(void *arg)
{
    client *c = arg;
    const mload_args *a = c->a;
    size_t cap = (size_t)a->pipe * 160 + 1024, rcap = 1 << 16;
    char *out = malloc(cap), *in = malloc(rcap);
    int fd = bn_connect(a->host, a->port);

    if (out == NULL || in == NULL || fd < 0) {
        snprintf(c->err, sizeof(c->err), "cannot connect to %s:%d", a->host,
                 a->port);
        c->failed = 1;
        goto done;
    }
    for (long done = 0; done < c->txs;) {
        long batch = c->txs - done < a->pipe ? c->txs - done : a->pipe;
        size_t n = 0, at = 0;
        long want = batch * REPLIES_PER_TX, errors = 0;
        double t0;
        for (long i = 0; i < batch; i++) {
            long k = (long)(bn_rand(&c->rng) % (uint64_t)a->keyspace);
            n += (size_t)snprintf(
                out + n, cap - n,
                "*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$16\r\nkey:%012ld\r\n"
                "$3\r\nxxx\r\n*2\r\n$4\r\nINCR\r\n$16\r\nctr:%012ld\r\n"
                "*1\r\n$4\r\nEXEC\r\n",
                k, k);
        }
        t0 = bn_now_ms();
        if (bn_send_all(fd, out, n) != 0) {
            snprintf(c->err, sizeof(c->err), "write failed");
            c->failed = 1;
            goto done;
        }
        if (bn_read_replies(fd, want, in, rcap, &errors, &at) != 0) {
            snprintf(c->err, sizeof(c->err), "connection closed");
            c->failed = 1;
            goto done;
        }
        if (errors) {
            snprintf(c->err, sizeof(c->err), "error reply: %.80s", in + at);
            c->failed = 1;
            goto done;
        }
        for (long i = 0; i < batch; i++)
            c->lat[c->nlat++] = bn_now_ms() - t0;
        done += batch;
    }
done:
    if (fd >= 0)
        close(fd);
    free(out);
    free(in);
    return NULL;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

static int usage(void)
{
    fprintf(stderr, "usage: mload -h HOST -p PORT [-c CLIENTS] "
                    "[-n TRANSACTIONS] [-P PIPE] [-r KEYSPACE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    mload_args a = {"127.0.0.1", 0, 50, 16, 100000, 100000};
    client *cl;
    double t0, secs, *all, sum = 0;
    long n = 0;
    int opt, failed = 0;

    while ((opt = getopt(argc, argv, "h:p:c:n:P:r:")) != -1) {
        long v = optarg ? strtol(optarg, NULL, 10) : 0;
        switch (opt) {
        case 'h':
            a.host = optarg;
            break;
        case 'p':
            a.port = (int)v;
            break;
        case 'c':
            a.clients = (int)v;
            break;
        case 'n':
            a.total = v;
            break;
        case 'P':
            a.pipe = (int)v;
            break;
        case 'r':
            a.keyspace = v;
            break;
        default:
            return usage();
        }
    }
    if (a.port <= 0 || a.port > 65535 || a.clients < 1 || a.clients > 1000 ||
        a.total < a.clients || a.pipe < 1 || a.pipe > 10000 || a.keyspace < 1)
        return usage();
    cl = calloc((size_t)a.clients, sizeof(*cl));
    all = malloc((size_t)a.total * sizeof(*all));
    if (cl == NULL || all == NULL)
        return 1;
    for (int i = 0; i < a.clients; i++) {
        cl[i].a = &a;
        cl[i].txs = a.total / a.clients + (i < a.total % a.clients);
        cl[i].lat = malloc((size_t)cl[i].txs * sizeof(double));
        cl[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        if (cl[i].lat == NULL)
            return 1;
    }
    t0 = bn_now_ms();
    for (int i = 0; i < a.clients; i++)
        pthread_create(&cl[i].th, NULL, run, &cl[i]);
    for (int i = 0; i < a.clients; i++)
        pthread_join(cl[i].th, NULL);
    secs = (bn_now_ms() - t0) / 1e3;
    for (int i = 0; i < a.clients; i++) {
        if (cl[i].failed && !failed) {
            fprintf(stderr, "mload: client %d: %s\n", i, cl[i].err);
            failed = 1;
        }
        memcpy(all + n, cl[i].lat, (size_t)cl[i].nlat * sizeof(double));
        n += cl[i].nlat;
        free(cl[i].lat);
    }
    free(cl);
    if (failed || n == 0) {
        free(all);
        return 1;
    }
    qsort(all, (size_t)n, sizeof(*all), cmp_double);
    for (long i = 0; i < n; i++)
        sum += all[i];
    printf("\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\","
           "\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\","
           "\"max_latency_ms\"\n");
    printf("\"MULTI\",\"%.2f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\","
           "\"%.3f\"\n",
           (double)n / secs, sum / (double)n, all[0], all[n / 2],
           all[(long)(n * 0.95)], all[(long)(n * 0.99)], all[n - 1]);
    free(all);
    return 0;
}

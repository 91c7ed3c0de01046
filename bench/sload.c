/*
 * sload: the skewed load of bench/salting-auto.sh -- one write-hot
 * counter among Zipf-distributed keys, which redis-benchmark cannot make.
 * C clients, each on its own thread and blocking socket, spread
 * round-robin over the PORTs, send pipelines of P requests for SECS
 * seconds: each is INCR of KEY with probability HOT, else GET of
 * "{TAG}z:<rank>", rank drawn from Zipf(S) over 1..KEYSPACE and TAG the
 * client's port's in -t (a hash tag of a slot that node leads, so that the
 * GET goes where a cluster client would send it; none without -t); and
 * read the replies back before the next pipeline.  With -L LPORT a client
 * sends its INCRs on a second connection, to LPORT (the key's leader,
 * where a cluster client sends them).  Every second it prints
 *
 *   sload t=T hot=H other=O errors=E
 *
 * (INCRs of KEY acknowledged in that second, other replies, error
 * replies), and at the end
 *
 *   sload acked=A hot=H other=O errors=E
 *
 * with A the INCRs of KEY answered without an error over the whole run
 * (what GET KEY must then say, from 0) and the rates per second.  An error
 * reply (-TRYAGAIN while a key is salted or folded) counts and the run goes
 * on; a broken connection ends the run (exit 1).
 *
 *   sload -p PORT[,PORT...] -k KEY [-h HOST] [-c CLIENTS] [-P PIPE]
 *         [-s SECS] [-f HOT] [-r KEYSPACE] [-z S] [-t TAG[,TAG...]]
 *         [-L LPORT]
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "bnet.h"

#define PORTS_MAX 16

typedef struct sload_args {
    const char *host, *key;
    int ports[PORTS_MAX], nports, clients, pipe, lport, ntags;
    char tags[PORTS_MAX][32];
    double secs, hot, zipf_s;
    long keyspace;
    double *cdf; /* Zipf: cdf[i] = P(rank <= i + 1) */
    volatile int stop;
} sload_args;

typedef struct client {
    sload_args *a;
    pthread_t th;
    int port, failed;
    const char *tag;
    uint64_t rng;
    long acked, hot, other, errors; /* read by the main thread */
} client;

static long zipf_rank(const sload_args *a, uint64_t r)
{
    double u = (double)(r >> 11) / 9007199254740992.0;
    long lo = 0, hi = a->keyspace - 1;

    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (a->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo + 1;
}

/* Reads the replies of what was sent on fd (hot[i]: an INCR of KEY) into
 * c's counts: 0, or -1 when the connection broke. */
static int count_replies(client *c, int fd, const unsigned char *hot, long n,
                         char *in, size_t rcap, unsigned char *err)
{
    long errors;
    size_t at;

    if (n == 0)
        return 0;
    if (bn_read_replies_each(fd, n, in, rcap, &errors, &at, err) != 0)
        return -1;
    for (long i = 0; i < n; i++) {
        if (err[i])
            __atomic_fetch_add(&c->errors, 1, __ATOMIC_RELAXED);
        else if (hot[i])
            __atomic_fetch_add(&c->hot, 1, __ATOMIC_RELAXED);
        else
            __atomic_fetch_add(&c->other, 1, __ATOMIC_RELAXED);
    }
    return 0;
}

static void *run(void *arg)
{
    client *c = arg;
    sload_args *a = c->a;
    size_t klen = strlen(a->key), cap = (size_t)a->pipe * (klen + 96) + 1024;
    size_t rcap = 1 << 16;
    char *out = malloc(cap), *wout = malloc(cap), *in = malloc(rcap);
    unsigned char *hot = malloc((size_t)a->pipe),
                  *ones = malloc((size_t)a->pipe);
    unsigned char *err = malloc((size_t)a->pipe);
    int fd = bn_connect(a->host, c->port);
    int wfd = a->lport ? bn_connect(a->host, a->lport) : fd;

    if (out == NULL || wout == NULL || in == NULL || hot == NULL ||
        ones == NULL || err == NULL || fd < 0 || wfd < 0) {
        c->failed = 1;
        goto done;
    }
    memset(ones, 1, (size_t)a->pipe);
    while (!a->stop) {
        size_t n = 0, wn = 0;
        long reqs = 0, incrs = 0;
        for (int i = 0; i < a->pipe; i++) {
            uint64_t r = bn_rand(&c->rng);
            if ((double)(r >> 11) / 9007199254740992.0 < a->hot) {
                char *o = wfd == fd ? out : wout;
                size_t *on = wfd == fd ? &n : &wn;
                *on += (size_t)snprintf(o + *on, cap - *on,
                                        "*2\r\n$4\r\nINCR\r\n$%zu\r\n%s\r\n",
                                        klen, a->key);
                if (wfd == fd)
                    hot[reqs++] = 1;
                else
                    incrs++;
            } else {
                char k[64];
                int kl =
                    snprintf(k, sizeof(k), "%s%s%sz:%ld", c->tag ? "{" : "",
                             c->tag ? c->tag : "", c->tag ? "}" : "",
                             zipf_rank(a, bn_rand(&c->rng)));
                n +=
                    (size_t)snprintf(out + n, cap - n,
                                     "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, k);
                hot[reqs++] = 0;
            }
        }
        if ((n && bn_send_all(fd, out, n) != 0) ||
            (wn && bn_send_all(wfd, wout, wn) != 0) ||
            count_replies(c, fd, hot, reqs, in, rcap, err) != 0 ||
            (wfd != fd && count_replies(c, wfd, ones, incrs, in, rcap, err))) {
            c->failed = 1;
            goto done;
        }
    }
done:
    if (wfd >= 0 && wfd != fd)
        close(wfd);
    if (fd >= 0)
        close(fd);
    free(out);
    free(wout);
    free(in);
    free(hot);
    free(ones);
    free(err);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: sload -p PORT[,PORT...] -k KEY [-h HOST] "
                    "[-c CLIENTS] [-P PIPE] [-s SECS] [-f HOT] "
                    "[-r KEYSPACE] [-z S] [-t TAG[,TAG...]] [-L LPORT]\n");
    return 2;
}

static int parse_tags(sload_args *a, const char *s)
{
    for (a->ntags = 0; *s && a->ntags < PORTS_MAX; a->ntags++) {
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof(a->tags[0]))
            return -1;
        memcpy(a->tags[a->ntags], s, len);
        a->tags[a->ntags][len] = 0;
        s += len + (s[len] == ',');
    }
    return *s ? -1 : 0;
}

static int make_cdf(sload_args *a)
{
    double sum = 0, run = 0;

    a->cdf = malloc((size_t)a->keyspace * sizeof(double));
    if (a->cdf == NULL)
        return -1;
    for (long i = 1; i <= a->keyspace; i++)
        sum += pow((double)i, -a->zipf_s);
    for (long i = 1; i <= a->keyspace; i++) {
        run += pow((double)i, -a->zipf_s);
        a->cdf[i - 1] = run / sum;
    }
    a->cdf[a->keyspace - 1] = 1.0;
    return 0;
}

/* The sums of the clients' counts. */
static void totals(client *cl, int n, long *hot, long *other, long *errors)
{
    *hot = *other = *errors = 0;
    for (int i = 0; i < n; i++) {
        *hot += __atomic_load_n(&cl[i].hot, __ATOMIC_RELAXED);
        *other += __atomic_load_n(&cl[i].other, __ATOMIC_RELAXED);
        *errors += __atomic_load_n(&cl[i].errors, __ATOMIC_RELAXED);
    }
}

int main(int argc, char **argv)
{
    sload_args a = {.host = "127.0.0.1",
                    .clients = 48,
                    .pipe = 16,
                    .secs = 20,
                    .hot = 0.5,
                    .zipf_s = 1.2,
                    .keyspace = 1000000};
    long hot = 0, other = 0, errors = 0, ph = 0, po = 0, pe = 0;
    client *cl;
    double t0, secs;
    int opt, failed = 0;

    while ((opt = getopt(argc, argv, "h:p:k:c:P:s:f:r:z:t:L:")) != -1) {
        switch (opt) {
        case 'h':
            a.host = optarg;
            break;
        case 'p':
            if ((a.nports = bn_parse_ports(a.ports, PORTS_MAX, optarg)) < 0)
                return usage();
            break;
        case 'k':
            a.key = optarg;
            break;
        case 'c':
            a.clients = atoi(optarg);
            break;
        case 'P':
            a.pipe = atoi(optarg);
            break;
        case 's':
            a.secs = atof(optarg);
            break;
        case 'f':
            a.hot = atof(optarg);
            break;
        case 'r':
            a.keyspace = atol(optarg);
            break;
        case 'z':
            a.zipf_s = atof(optarg);
            break;
        case 't':
            if (parse_tags(&a, optarg) != 0)
                return usage();
            break;
        case 'L':
            a.lport = atoi(optarg);
            break;
        default:
            return usage();
        }
    }
    if (optind != argc || a.nports == 0 || a.key == NULL ||
        strlen(a.key) > 256 || a.clients < 1 || a.clients > 1000 ||
        a.pipe < 1 || a.pipe > 10000 || !(a.secs >= 1) || !(a.hot >= 0) ||
        !(a.hot <= 1) || a.keyspace < 1 || a.keyspace > 100000000 ||
        !(a.zipf_s > 0) || (a.ntags && a.ntags != a.nports) || a.lport < 0 ||
        a.lport > 65535)
        return usage();
    cl = calloc((size_t)a.clients, sizeof(*cl));
    if (cl == NULL || make_cdf(&a) != 0)
        return 1;
    for (int i = 0; i < a.clients; i++) {
        cl[i].a = &a;
        cl[i].port = a.ports[i % a.nports];
        cl[i].tag = a.ntags ? a.tags[i % a.nports] : NULL;
        cl[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    }
    t0 = bn_now_ms();
    for (int i = 0; i < a.clients; i++)
        pthread_create(&cl[i].th, NULL, run, &cl[i]);
    for (int t = 1; t <= (int)a.secs; t++) {
        double wake = t0 + t * 1e3, now;
        while ((now = bn_now_ms()) < wake) {
            struct timespec ts = {0, (long)((wake - now) * 1e6)};
            nanosleep(&ts, NULL);
        }
        totals(cl, a.clients, &hot, &other, &errors);
        printf("sload t=%d hot=%ld other=%ld errors=%ld\n", t, hot - ph,
               other - po, errors - pe);
        fflush(stdout);
        ph = hot, po = other, pe = errors;
    }
    a.stop = 1;
    for (int i = 0; i < a.clients; i++)
        pthread_join(cl[i].th, NULL);
    secs = (bn_now_ms() - t0) / 1e3;
    for (int i = 0; i < a.clients; i++) {
        if (cl[i].failed && !failed)
            fprintf(stderr, "sload: client %d (port %d): connection failed\n",
                    i, cl[i].port);
        failed |= cl[i].failed;
    }
    totals(cl, a.clients, &hot, &other, &errors);
    printf("sload acked=%ld hot=%.0f other=%.0f errors=%ld\n", hot,
           (double)hot / secs, (double)other / secs, errors);
    free(cl);
    free(a.cdf);
    return failed;
}

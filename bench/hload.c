/*
 * hload: a mixed load on one read-hot key, for bench/hotread.sh, which
 * redis-benchmark cannot make (it repeats one command, so a mix of GETs
 * and SETs from separate processes drifts with their latencies).  C
 * clients, each on its own thread and blocking socket, spread round-robin
 * over the PORTs, send pipelines of P requests for SECS seconds: each is
 * GET of KEY with probability GETS, else SET -- of KEY itself (-w hot)
 * or of a random "key:<12 digits>" below KEYSPACE (-w other) -- and read
 * the replies back before the next pipeline.  With -L LPORT a client sends
 * its SETs on a second connection, to LPORT (the key's leader, where a
 * cluster client sends writes), and its GETs to its own port.  The mix is fixed
 * by the draw, whatever the latencies.  At the end it prints one line:
 *
 *   hload rps=R gets=G sets=S errors=E
 *
 * (per second, over the whole run; an error reply, such as -TRYAGAIN,
 * counts and the run goes on; a broken connection ends the run, exit 1).
 *
 *   hload -p PORT[,PORT...] -k KEY [-h HOST] [-c CLIENTS] [-P PIPE]
 *         [-s SECS] [-g GETS] [-w hot|other] [-r KEYSPACE] [-L LPORT]
 */
#include <pthread.h>
#include <stdio.h>

#include "bnet.h"

#define PORTS_MAX 16

typedef struct hload_args {
    const char *host, *key;
    int ports[PORTS_MAX], nports, clients, pipe, other, lport;
    double secs, gets;
    long keyspace;
} hload_args;

typedef struct client {
    const hload_args *a;
    pthread_t th;
    int port;
    long gets, sets, errors;
    int failed;
    uint64_t rng;
} client;

/* Reads n replies from fd into c's counts: 0, or -1 when it broke. */
static int read_replies(client *c, int fd, long n, char *in, size_t rcap)
{
    long errors;
    size_t at;
    int rc = bn_read_replies(fd, n, in, rcap, &errors, &at);

    c->errors += errors;
    return rc;
}

static void *run(void *arg)
{
    client *c = arg;
    const hload_args *a = c->a;
    size_t klen = strlen(a->key), cap = (size_t)a->pipe * (klen + 96) + 1024;
    size_t rcap = 1 << 16;
    char *out = malloc(cap), *wout = malloc(cap), *in = malloc(rcap);
    int fd = bn_connect(a->host, c->port);
    int wfd = a->lport ? bn_connect(a->host, a->lport) : fd;
    double end = bn_now_ms() + a->secs * 1e3;

    if (out == NULL || wout == NULL || in == NULL || fd < 0 || wfd < 0) {
        c->failed = 1;
        goto done;
    }
    while (bn_now_ms() < end) {
        size_t n = 0, wn = 0;
        long gets = 0, sets = 0;
        for (int i = 0; i < a->pipe; i++) {
            char *o = wfd == fd ? out : wout;
            size_t *on = wfd == fd ? &n : &wn;
            if ((double)(bn_rand(&c->rng) >> 11) / 9007199254740992.0 <
                a->gets) {
                n += (size_t)snprintf(out + n, cap - n,
                                      "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", klen,
                                      a->key);
                gets++;
                continue;
            }
            sets++;
            if (a->other) {
                long k = (long)(bn_rand(&c->rng) % (uint64_t)a->keyspace);
                *on += (size_t)snprintf(o + *on, cap - *on,
                                        "*3\r\n$3\r\nSET\r\n$16\r\n"
                                        "key:%012ld\r\n$3\r\nxxx\r\n",
                                        k);
            } else {
                *on += (size_t)snprintf(o + *on, cap - *on,
                                        "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n"
                                        "$3\r\nxxx\r\n",
                                        klen, a->key);
            }
        }
        if ((n && bn_send_all(fd, out, n) != 0) ||
            (wn && bn_send_all(wfd, wout, wn) != 0) ||
            read_replies(c, fd, wfd == fd ? gets + sets : gets, in, rcap) ||
            (wfd != fd && read_replies(c, wfd, sets, in, rcap))) {
            c->failed = 1;
            goto done;
        }
        c->gets += gets;
        c->sets += sets;
    }
done:
    if (wfd >= 0 && wfd != fd)
        close(wfd);
    if (fd >= 0)
        close(fd);
    free(out);
    free(wout);
    free(in);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: hload -p PORT[,PORT...] -k KEY [-h HOST] "
                    "[-c CLIENTS] [-P PIPE] [-s SECS] [-g GETS] "
                    "[-w hot|other] [-r KEYSPACE] [-L LPORT]\n");
    return 2;
}

int main(int argc, char **argv)
{
    hload_args a = {"127.0.0.1", NULL, {0}, 0, 50, 16, 0, 0, 10, 0.9, 1000000};
    long gets = 0, sets = 0, errors = 0;
    client *cl;
    double t0, secs;
    int opt, failed = 0;

    while ((opt = getopt(argc, argv, "h:p:k:c:P:s:g:w:r:L:")) != -1) {
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
        case 'g':
            a.gets = atof(optarg);
            break;
        case 'w':
            if (strcmp(optarg, "hot") != 0 && strcmp(optarg, "other") != 0)
                return usage();
            a.other = strcmp(optarg, "other") == 0;
            break;
        case 'r':
            a.keyspace = atol(optarg);
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
        a.pipe < 1 || a.pipe > 10000 || !(a.secs > 0) || !(a.gets >= 0) ||
        !(a.gets <= 1) || a.keyspace < 1 || a.lport < 0 || a.lport > 65535)
        return usage();
    cl = calloc((size_t)a.clients, sizeof(*cl));
    if (cl == NULL)
        return 1;
    for (int i = 0; i < a.clients; i++) {
        cl[i].a = &a;
        cl[i].port = a.ports[i % a.nports];
        cl[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    }
    t0 = bn_now_ms();
    for (int i = 0; i < a.clients; i++)
        pthread_create(&cl[i].th, NULL, run, &cl[i]);
    for (int i = 0; i < a.clients; i++)
        pthread_join(cl[i].th, NULL);
    secs = (bn_now_ms() - t0) / 1e3;
    for (int i = 0; i < a.clients; i++) {
        if (cl[i].failed && !failed)
            fprintf(stderr, "hload: client %d (port %d): connection failed\n",
                    i, cl[i].port);
        failed |= cl[i].failed;
        gets += cl[i].gets;
        sets += cl[i].sets;
        errors += cl[i].errors;
    }
    free(cl);
    printf("hload rps=%.0f gets=%.0f sets=%.0f errors=%ld\n",
           (double)(gets + sets) / secs, (double)gets / secs,
           (double)sets / secs, errors);
    return failed;
}

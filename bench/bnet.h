/*
 * bnet.h: what the bench load generators (mload, hload) share -- a
 * monotonic clock, a xorshift generator, blocking TCP sends and a RESP2
 * reply skipper.  Header-only: each tool is one file.
 */
#ifndef PK_BENCH_BNET_H
#define PK_BENCH_BNET_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline double bn_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline uint64_t bn_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Skips one RESP2 reply at buf[*off..len): 1 when whole (*err set for an
 * error reply), 0 when more bytes are needed. */
static inline int bn_skip_reply(const char *buf, size_t len, size_t *off,
                                int *err)
{
    const char *p = buf + *off, *end = buf + len, *nl;
    long n;

    if (p >= end)
        return 0;
    nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
        return 0;
    n = strtol(p + 1, NULL, 10);
    switch (*p) {
    case '-':
        *err = 1;
        /* fall through */
    case '+':
    case ':':
        *off = (size_t)(nl + 1 - buf);
        return 1;
    case '$':
        if (n < 0) {
            *off = (size_t)(nl + 1 - buf);
            return 1;
        }
        if ((size_t)(end - (nl + 1)) < (size_t)n + 2)
            return 0;
        *off = (size_t)(nl + 1 - buf) + (size_t)n + 2;
        return 1;
    case '*': {
        size_t o = (size_t)(nl + 1 - buf);
        for (long i = 0; i < n; i++)
            if (!bn_skip_reply(buf, len, &o, err))
                return 0;
        *off = o;
        return 1;
    }
    }
    *err = 1; /* not RESP2 */
    *off = len;
    return 1;
}

/* A blocking TCP connection to host:port with TCP_NODELAY, or -1. */
static inline int bn_connect(const char *host, int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static inline int bn_send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads n replies from fd through in[rcap]: 0, or -1 when the connection
 * broke.  *errors counts the error replies among them; the first one's
 * text starts at in + *err_at (valid until in is used again).  With each
 * (n bytes), each[i] says whether reply i was an error. */
static inline int bn_read_replies_each(int fd, long n, char *in, size_t rcap,
                                       long *errors, size_t *err_at,
                                       unsigned char *each)
{
    size_t rlen = 0, off = 0;
    long got = 0;

    *errors = 0;
    while (got < n) {
        ssize_t r;
        if (rlen == rcap) { /* keep the unread tail only */
            memmove(in, in + off, rlen - off);
            rlen -= off;
            off = 0;
        }
        r = read(fd, in + rlen, rcap - rlen);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        rlen += (size_t)r;
        for (size_t at = off; got < n; at = off) {
            int err = 0;
            if (!bn_skip_reply(in, rlen, &off, &err))
                break;
            if (each)
                each[got] = (unsigned char)err;
            got++;
            if (err && (*errors)++ == 0)
                *err_at = at;
        }
    }
    return 0;
}

static inline int bn_read_replies(int fd, long n, char *in, size_t rcap,
                                  long *errors, size_t *err_at)
{
    return bn_read_replies_each(fd, n, in, rcap, errors, err_at, NULL);
}

/* Parses "PORT[,PORT...]" into ports[max]: their number, or -1. */
static inline int bn_parse_ports(int *ports, int max, const char *s)
{
    char *end;
    int n = 0;

    for (; *s && n < max; s = end + (*end == ',')) {
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 65535 || (*end && *end != ','))
            return -1;
        ports[n++] = (int)v;
    }
    return *s || n == 0 ? -1 : n;
}

#endif

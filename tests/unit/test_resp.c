/*
 * Tests of the RESP request parser: every request shape, every protocol
 * error text redis-server 7.0 sends, the limits, memory bounds, and the
 * property that makes it safe behind a socket: however the input is cut
 * into reads, the same commands and errors come out.
 *
 * Most tests compare transcripts: run() feeds an input in chunks and
 * writes what the parser returned as text, one line per command
 * ("SET|key|value"), with bytes outside [A-Za-z0-9 _.-] as \xHH, and a
 * final line for the protocol error or the unparsed byte count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "proto/pk_resp.h"

#define L(s) (s), sizeof(s) - 1

/* A growable string for transcripts and generated inputs. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void text_add(text *t, const void *p, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    memcpy(t->s + t->len, p, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void text_addf(text *t, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    text_add(t, buf, (size_t)n);
}

static void text_free(text *t)
{
    free(t->s);
    memset(t, 0, sizeof(*t));
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Appends one command to the transcript. */
static void log_cmd(text *t, int argc, const pk_arg *argv)
{
    for (int i = 0; i < argc; i++) {
        /* The parser promises a NUL after every argument. */
        assert_int_equal(argv[i].ptr[argv[i].len], '\0');
        if (i)
            text_add(t, "|", 1);
        for (size_t j = 0; j < argv[i].len; j++) {
            unsigned char c = (unsigned char)argv[i].ptr[j];
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == ' ' || c == '_' || c == '.' ||
                c == '-')
                text_add(t, &c, 1);
            else
                text_addf(t, "\\x%02x", c);
        }
    }
    text_add(t, "\n", 1);
}

/* Takes every complete command; returns 0, or the error. */
static int drain(pk_resp_parser *p, text *t)
{
    int argc, rc;
    const pk_arg *argv;

    while ((rc = pk_resp_next(p, &argc, &argv)) == 1) {
        assert_true(argc >= 1);
        log_cmd(t, argc, argv);
    }
    if (rc == PK_EPROTO)
        text_addf(t, "error: %s\n", pk_resp_error(p));
    return rc;
}

/*
 * Feeds in[0..n) into a new parser with default limits, in chunks: one
 * shot when seed is 0, else chunk sizes 1..maxchunk drawn from seed.
 * zerocopy uses pk_resp_space/commit instead of pk_resp_feed.
 */
static void run(const char *in, size_t n, uint64_t seed, size_t maxchunk,
                int zerocopy, text *t)
{
    pk_resp_parser *p = NULL;
    size_t off = 0;
    int rc = 0;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    while (off < n && rc == 0) {
        size_t c = seed ? 1 + rng_next(&seed) % maxchunk : n - off;
        if (c > n - off)
            c = n - off;
        if (zerocopy) {
            char *dst;
            size_t got;
            assert_int_equal(pk_resp_space(p, c, &dst, &got), PK_OK);
            assert_true(got >= 1);
            c = got < c ? got : c;
            memcpy(dst, in + off, c);
            pk_resp_commit(p, c);
        } else {
            assert_int_equal(pk_resp_feed(p, in + off, c), PK_OK);
        }
        off += c;
        rc = drain(p, t);
    }
    if (rc == 0)
        text_addf(t, "rest: %zu\n", pk_resp_buffered(p));
    pk_resp_parser_free(p);
}

/* The transcript of a one-shot run, as a C string to compare with. */
static char *once(const char *in, size_t n)
{
    text t = {0};
    run(in, n, 0, 0, 0, &t);
    return t.s;
}

static void check(const char *in, size_t n, const char *want)
{
    char *got = once(in, n);
    assert_string_equal(got, want);
    free(got);
}

static void test_simple_multibulk(void **state)
{
    (void)state;
    check(L("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"),
          "SET|key|value\nrest: 0\n");
    check(L("*1\r\n$4\r\nPING\r\n"), "PING\nrest: 0\n");
    /* A partial command stays buffered. */
    check(L("*2\r\n$3\r\nGET\r\n$3\r\nke"), "rest: 19\n");
}

static void test_pipelined(void **state)
{
    (void)state;
    text in = {0}, want = {0};
    for (int i = 0; i < 1000; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "key:%d", i);
        text_addf(&in, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", n, key);
        text_addf(&want, "GET|key\\x3a%d\n", i);
    }
    text_add(&want, "rest: 0\n", 8);
    check(in.s, in.len, want.s);
    text_free(&in);
    text_free(&want);
}

/* An input with every request shape the parser knows. */
static void mixed_input(text *in)
{
    static const char big[] = "0123456789abcdef";

    text_add(in, L("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\0\r\nx\r\n"));
    text_add(in, L("PING\r\n"));
    text_add(in, L("*0\r\n*-1\r\n\r\n"));
    text_add(in, L("SET \"a b\" 'c\\'d' \"\\x41\\n\"\n"));
    text_add(in, L("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"));
    text_add(in, L("   \t \n"));
    text_add(in, L("*2\r\n$4\r\nECHO\r\n$40000\r\n"));
    for (int i = 0; i < 2500; i++)
        text_add(in, big, 16);
    text_add(in, L("\r\n"));
    text_add(in, L("GET x\r\n*1\r\n$4\r\nPI"));
}

static void test_every_split_point(void **state)
{
    (void)state;
    text in = {0};
    /* Without the 40 KB argument, so that n^2 work stays small. */
    text_add(&in, L("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\0\r\nx\r\n"
                    "PING\r\n*0\r\n*-1\r\n\r\nSET \"a b\" 'c\\'d' x\n"
                    "*2\r\n$4\r\nECHO\r\n$0\r\n\r\nGET x\r\n*1\r\n$4\r\nPI"));
    char *want = once(in.s, in.len);
    for (size_t cut = 0; cut <= in.len; cut++) {
        pk_resp_parser *p;
        text t = {0};
        assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
        assert_int_equal(pk_resp_feed(p, in.s, cut), PK_OK);
        assert_int_equal(drain(p, &t), 0);
        assert_int_equal(pk_resp_feed(p, in.s + cut, in.len - cut), PK_OK);
        assert_int_equal(drain(p, &t), 0);
        text_addf(&t, "rest: %zu\n", pk_resp_buffered(p));
        assert_string_equal(t.s, want);
        text_free(&t);
        pk_resp_parser_free(p);
    }
    free(want);
    text_free(&in);
}

static void test_chunkings_agree(void **state)
{
    (void)state;
    text in = {0};
    mixed_input(&in);
    char *want = once(in.s, in.len);
    assert_non_null(strstr(want, "SET|a b|c\\x27d|A\\x0a\n"));
    assert_non_null(strstr(want, "ECHO|\n"));
    assert_non_null(strstr(want, "GET|x\nrest: 10\n"));

    text t = {0};
    run(in.s, in.len, 1, 1, 0, &t); /* byte by byte */
    assert_string_equal(t.s, want);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        text_free(&t);
        run(in.s, in.len, seed * 7919, seed % 2 ? 7 : 5000, seed % 3 == 0, &t);
        assert_string_equal(t.s, want);
    }
    text_free(&t);
    free(want);
    text_free(&in);
}

static void test_binary_payloads(void **state)
{
    (void)state;
    pk_resp_parser *p;
    int argc;
    const pk_arg *argv;
    static const char in[] = "*2\r\n$3\r\n\0\r\n\r\n$0\r\n\r\n";

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, in, sizeof(in) - 1), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argc, 2);
    assert_int_equal(argv[0].len, 3);
    assert_memory_equal(argv[0].ptr, "\0\r\n", 3);
    assert_int_equal(argv[1].len, 0);
    assert_int_equal(argv[1].ptr[0], '\0');
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    assert_int_equal(pk_resp_buffered(p), 0);
    pk_resp_parser_free(p);
}

static void test_inline(void **state)
{
    (void)state;
    check(L("SET \"a b\" 'c d'\r\n"), "SET|a b|c d\nrest: 0\n");
    check(L("ECHO \"\\x41\\x4a\\n\\r\\t\\b\\a\\\\\\\"\\q\"\n"),
          "ECHO|AJ\\x0a\\x0d\\x09\\x08\\x07\\x5c\\x22q\n"
          "rest: 0\n");
    /* Single quotes know only \'. */
    check(L("ECHO 'it\\'s \\n'\n"), "ECHO|it\\x27s \\x5cn\nrest: 0\n");
    /* Empty quoted arguments, blanks of every kind, a quote mid-token. */
    check(L("  A \"\" '' \t B\"c d\"\n"), "A|||Bc d\nrest: 0\n");
    /* \x with too few hex digits is \x then the rest. */
    check(L("ECHO \"\\x4\"\n"), "ECHO|x4\nrest: 0\n");
    /* \v and \f are blanks between tokens but not inside one. */
    check(L("A\vB \fC\n"), "A\\x0bB|C\nrest: 0\n");
    /* LF-only lines, and a "\r" only stripped at the end. */
    check(L("PING\nPING\r\nA\rB\n"), "PING\nPING\nA|B\nrest: 0\n");
    /* NUL is an ordinary byte (redis-server would wait forever). */
    check(L("ECHO a\0b\n"), "ECHO|a\\x00b\nrest: 0\n");
    /* An unfinished line waits. */
    check(L("PING"), "rest: 4\n");
}

static void test_empty_requests_skipped(void **state)
{
    (void)state;
    /* Redis's "Handle an empty query" and "Negative multibulk length". */
    check(L("\r\n*0\r\n*-1\r\n*-10\r\n\n   \r\n*1\r\n$4\r\nPING\r\n"),
          "PING\nrest: 0\n");
}

static void test_lenient_terminators(void **state)
{
    (void)state;
    /* As in redis-server 7.0 (checked against it): the byte after a "\r"
     * ending a length line and the two after a payload are not checked. */
    check(L("*1\rX$4\r\nPING\r\n"), "PING\nrest: 0\n");
    check(L("*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n"), "PING\nPING\nrest: 0\n");
}

static void test_protocol_errors(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *err;
    } v[] = {
        {"*3000000000\r\n", "invalid multibulk length"},
        {"*1048577\r\n", "invalid multibulk length"},
        {"*abc\r\n", "invalid multibulk length"},
        {"*01\r\n", "invalid multibulk length"},
        {"*+1\r\n", "invalid multibulk length"},
        {"*-0\r\n", "invalid multibulk length"},
        {"*\r\n", "invalid multibulk length"},
        {"*1 \r\n", "invalid multibulk length"},
        {"*99999999999999999999999\r\n", "invalid multibulk length"},
        {"*1\r\n$-1\r\n", "invalid bulk length"},
        {"*1\r\n$abc\r\n", "invalid bulk length"},
        {"*1\r\n$04\r\nPING\r\n", "invalid bulk length"},
        {"*1\r\n$-0\r\n", "invalid bulk length"},
        {"*1\r\n$\r\n", "invalid bulk length"},
        {"*1\r\n$536870913\r\n", "invalid bulk length"},
        {"*1\r\n$9223372036854775808\r\n", "invalid bulk length"},
        {"*1\r\nfoo\r\n", "expected '$', got 'f'"},
        {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "expected '$', got 'f'"},
        {"*1\r\n*1\r\n$4\r\nPING\r\n", "expected '$', got '*'"},
        {"*1\r\n\r\n", "expected '$', got ' '"},
        {"*1\r\n:1\r\n", "expected '$', got ':'"},
        {"SET \"abc\n", "unbalanced quotes in request"},
        {"SET \"a\"b\n", "unbalanced quotes in request"},
        {"SET 'abc\n", "unbalanced quotes in request"},
        {"SET 'a'b\n", "unbalanced quotes in request"},
        {"SET \"a\\\"\n", "unbalanced quotes in request"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want), "PING\nerror: ERR Protocol error: %s\n",
                 v[i].err);
        /* A command before the bad one is still returned. */
        text in = {0};
        text_add(&in, L("PING\r\n"));
        text_add(&in, v[i].in, strlen(v[i].in));
        check(in.s, in.len, want);
        text_free(&in);
    }
}

static void test_error_is_sticky(void **state)
{
    (void)state;
    pk_resp_parser *p;
    int argc = -7;
    const pk_arg *argv = NULL;
    char *buf = NULL;
    size_t got = 0;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_null(pk_resp_error(p));
    assert_int_equal(pk_resp_feed(p, L("*1\r\n$x\r\n")), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), PK_EPROTO);
    assert_string_equal(pk_resp_error(p),
                        "ERR Protocol error: invalid bulk length");
    assert_int_equal(pk_resp_next(p, &argc, &argv), PK_EPROTO);
    assert_int_equal(pk_resp_feed(p, L("PING\r\n")), PK_EPROTO);
    assert_int_equal(pk_resp_space(p, 10, &buf, &got), PK_EPROTO);
    /* Out-parameters are untouched on failure. */
    assert_int_equal(argc, -7);
    assert_null(argv);
    assert_null(buf);
    pk_resp_parser_free(p);
}

/* A line of n bytes of c, then tail. */
static void long_line(text *t, const char *head, char c, size_t n,
                      const char *tail)
{
    text_add(t, head, strlen(head));
    for (size_t i = 0; i < n; i++)
        text_add(t, &c, 1);
    text_add(t, tail, strlen(tail));
}

static void test_too_big_lines(void **state)
{
    (void)state;
    static const struct {
        const char *head, *tail, *err;
        char fill;
    } v[] = {
        {"*", "", "too big mbulk count string", '9'},
        {"*", "\r\n", "too big mbulk count string", '9'},
        {"*1\r\n$", "", "too big bulk count string", '9'},
        {"*1\r\n$", "\r\n", "too big bulk count string", '9'},
        {"GET ", "", "too big inline request", 'a'},
        {"GET ", "\n", "too big inline request", 'a'},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        text in = {0}, t = {0};
        char want[128];
        long_line(&in, v[i].head, v[i].fill, 70 * 1024, v[i].tail);
        snprintf(want, sizeof(want), "error: ERR Protocol error: %s\n",
                 v[i].err);
        check(in.s, in.len, want);
        /* Same answer in small reads, with the parser's memory bounded. */
        pk_resp_parser *p;
        assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
        int rc = 0;
        for (size_t off = 0; off < in.len && rc == 0; off += 1000) {
            size_t c = in.len - off < 1000 ? in.len - off : 1000;
            assert_int_equal(pk_resp_feed(p, in.s + off, c), PK_OK);
            rc = drain(p, &t);
            assert_true(pk_resp_memory(p) < 256 * 1024);
        }
        assert_string_equal(t.s, want);
        pk_resp_parser_free(p);
        text_free(&t);
        text_free(&in);
    }
}

/* A header that ends exactly at the buffer's end: the bulk after it has
 * not come, and nothing past the buffer is read meanwhile (under ASan). */
static void test_header_at_buffer_end(void **state)
{
    pk_resp_parser *p;
    text t = {0};
    char *dst;
    size_t got;

    (void)state;
    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_space(p, 1, &dst, &got), PK_OK);
    assert_true(got >= 4);
    memset(dst, '\n', got - 4); /* empty requests, skipped */
    memcpy(dst + got - 4, "*1\r\n", 4);
    pk_resp_commit(p, got);
    assert_int_equal(drain(p, &t), 0);
    assert_int_equal(pk_resp_feed(p, L("$4\r\nPING\r\n")), PK_OK);
    assert_int_equal(drain(p, &t), 0);
    assert_string_equal(t.s, "PING\n");
    pk_resp_parser_free(p);
    text_free(&t);
}

static void test_limits_boundaries(void **state)
{
    (void)state;
    pk_resp_limits lim = pk_resp_limits_default();
    pk_resp_parser *p;
    text t = {0};

    assert_int_equal(lim.max_bulk_len, 512u * 1024 * 1024);
    assert_int_equal(lim.max_args, 1024 * 1024);
    assert_int_equal(lim.max_inline, 64 * 1024);
    assert_int_equal(lim.max_query_buf, (size_t)1 << 30);

    lim.max_args = 3;
    lim.max_bulk_len = 5;
    lim.max_inline = 10;
    assert_int_equal(pk_resp_parser_new(&lim, &p), PK_OK);
    assert_int_equal(
        pk_resp_feed(p, L("*3\r\n$5\r\nabcde\r\n$0\r\n\r\n$1\r\nx\r\n"
                          "0123456789\n*4\r\n")),
        PK_OK);
    assert_int_equal(drain(p, &t), PK_EPROTO);
    assert_string_equal(t.s, "abcde||x\n0123456789\n"
                             "error: ERR Protocol error: "
                             "invalid multibulk length\n");
    pk_resp_parser_free(p);
    text_free(&t);

    /* The last: a whole length line, its "\r" one byte past max_inline,
     * fails as it does when its bytes come one at a time. */
    static const char *bad[] = {"*1\r\n$6\r\n", "01234567890\n",
                                "*1\r\n$1234567890", "*1\r\n$1234567890\r\n"};
    static const char *err[] = {"invalid bulk length", "too big inline request",
                                "too big bulk count string",
                                "too big bulk count string"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pk_resp_parser_new(&lim, &p), PK_OK);
        assert_int_equal(pk_resp_feed(p, bad[i], strlen(bad[i])), PK_OK);
        assert_int_equal(drain(p, &t), PK_EPROTO);
        assert_non_null(strstr(t.s, err[i]));
        pk_resp_parser_free(p);
        text_free(&t);
    }
}

static void test_bad_limits(void **state)
{
    (void)state;
    pk_resp_limits lim = pk_resp_limits_default();
    pk_resp_parser *p = NULL;

    assert_int_equal(pk_resp_parser_new(NULL, NULL), PK_EINVAL);
    lim.max_args = 0;
    assert_int_equal(pk_resp_parser_new(&lim, &p), PK_EINVAL);
    lim = pk_resp_limits_default();
    lim.max_args = (size_t)INT32_MAX + 1;
    assert_int_equal(pk_resp_parser_new(&lim, &p), PK_EINVAL);
    lim = pk_resp_limits_default();
    lim.max_query_buf = SIZE_MAX;
    assert_int_equal(pk_resp_parser_new(&lim, &p), PK_EINVAL);
    assert_null(p);
    pk_resp_parser_free(NULL);
}

static void test_declared_huge_bulk_allocates_nothing(void **state)
{
    (void)state;
    pk_resp_parser *p;
    int argc;
    const pk_arg *argv;
    char *buf;
    size_t got, sent = 0;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, L("*2\r\n$3\r\nSET\r\n$500000000\r\nab")),
                     PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    assert_true(pk_resp_memory(p) < 32 * 1024);
    /* A megabyte of it, read the libuv way: memory follows what came. */
    while (sent < 1024 * 1024) {
        assert_int_equal(pk_resp_space(p, 65536, &buf, &got), PK_OK);
        assert_true(got >= 1);
        memset(buf, 'v', got);
        pk_resp_commit(p, got);
        sent += got;
        assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    }
    assert_true(pk_resp_memory(p) < 3 * sent);
    pk_resp_parser_free(p);

    /* Half a million declared arguments, three sent. */
    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, L("*500000\r\n$1\r\na\r\n$1\r\nb\r\n"
                                       "$1\r\nc\r\n")),
                     PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    assert_true(pk_resp_memory(p) < 32 * 1024);
    pk_resp_parser_free(p);
}

static void test_query_buffer_limit(void **state)
{
    (void)state;
    pk_resp_limits lim = pk_resp_limits_default();
    pk_resp_parser *p;
    char *buf;
    size_t got;
    int argc;
    const pk_arg *argv;

    lim.max_query_buf = 100;
    assert_int_equal(pk_resp_parser_new(&lim, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, L("*2\r\n$4\r\nECHO\r\n$70\r\n")), PK_OK);
    assert_int_equal(pk_resp_buffered(p), 19);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    /* 81 more bytes would make 100: allowed; one more is not. */
    char fill[82];
    memset(fill, 'x', sizeof(fill));
    assert_int_equal(pk_resp_feed(p, fill, 82), PK_EFULL);
    assert_int_equal(pk_resp_buffered(p), 19);
    assert_int_equal(pk_resp_space(p, 1000, &buf, &got), PK_OK);
    assert_int_equal(got, 81);
    memcpy(buf, fill, 70);
    memcpy(buf + 70, "\r\nPING\r\nPIN", 11);
    pk_resp_commit(p, 81);
    assert_int_equal(pk_resp_buffered(p), 100);
    assert_int_equal(pk_resp_feed(p, "G", 1), PK_EFULL);
    /* Taking commands frees room. */
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argc, 2);
    assert_int_equal(argv[1].len, 70);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    assert_int_equal(pk_resp_buffered(p), 3);
    assert_int_equal(pk_resp_feed(p, L("G\r\n")), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    pk_resp_parser_free(p);

    /* A command that cannot fit: space reports EFULL once full. */
    assert_int_equal(pk_resp_parser_new(&lim, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, L("*1\r\n$200\r\n")), PK_OK);
    assert_int_equal(pk_resp_space(p, 1000, &buf, &got), PK_OK);
    assert_int_equal(got, 100 - 10);
    pk_resp_commit(p, got);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    assert_int_equal(pk_resp_space(p, 1, &buf, &got), PK_EFULL);
    pk_resp_parser_free(p);
}

static void test_memory_shrinks_after_big_bulk(void **state)
{
    (void)state;
    enum { BIG = 10 * 1024 * 1024 };
    pk_resp_parser *p;
    char *buf, hdr[64];
    size_t got, sent = 0, peak = 0, base;
    int argc, n = 0;
    const pk_arg *argv;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, L("PING\r\n")), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    base = pk_resp_memory(p);
    int h = snprintf(hdr, sizeof(hdr), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n",
                     BIG);
    assert_int_equal(pk_resp_feed(p, hdr, (size_t)h), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    while (sent < BIG + 2) {
        assert_int_equal(pk_resp_space(p, 65536, &buf, &got), PK_OK);
        size_t c = BIG + 2 - sent < got ? BIG + 2 - sent : got;
        for (size_t i = 0; i < c; i++)
            buf[i] = (char)('a' + (sent + i) % 26);
        pk_resp_commit(p, c);
        sent += c;
        if (pk_resp_memory(p) > peak)
            peak = pk_resp_memory(p);
        while (pk_resp_next(p, &argc, &argv) == 1) {
            n++;
            assert_int_equal(argc, 3);
            assert_int_equal(argv[2].len, BIG);
            for (size_t i = 0; i < BIG; i += 4099)
                assert_int_equal(argv[2].ptr[i], 'a' + i % 26);
        }
    }
    assert_int_equal(n, 1);
    /* The buffer was made to fit the argument: no doubling past it. */
    assert_true(peak < BIG + 64 * 1024);
    assert_true(pk_resp_memory(p) <= base);
    pk_resp_parser_free(p);
}

static void test_many_args(void **state)
{
    (void)state;
    enum { N = 200000 };
    pk_resp_parser *p;
    text in = {0};
    int argc;
    const pk_arg *argv;

    text_addf(&in, "*%d\r\n", N);
    for (int i = 0; i < N; i++)
        text_add(&in, L("$1\r\nx\r\n"));
    text_add(&in, L("PING\r\n"));
    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_feed(p, in.s, in.len), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argc, N);
    assert_int_equal(argv[N - 1].len, 1);
    assert_int_equal(argv[N - 1].ptr[0], 'x');
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argc, 1);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    /* The argument array and buffer went back to their usual size. */
    assert_true(pk_resp_memory(p) < 300 * 1024);
    pk_resp_parser_free(p);
    text_free(&in);
}

static void test_steady_state_reuses_memory(void **state)
{
    (void)state;
    pk_resp_parser *p;
    int argc;
    const pk_arg *argv;
    size_t mem = 0;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 10; i++)
            assert_int_equal(
                pk_resp_feed(p, L("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$3\r\nval"
                                  "\r\n")),
                PK_OK);
        for (int i = 0; i < 10; i++)
            assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
        assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
        assert_int_equal(pk_resp_buffered(p), 0);
        if (round == 0)
            mem = pk_resp_memory(p);
        assert_int_equal(pk_resp_memory(p), mem);
    }
    pk_resp_parser_free(p);
}

/* Feeds in[0..n) to a parser in unauthenticated mode, in chunks of 1 to
 * maxchunk bytes drawn from seed (one shot when seed is 0). */
static char *run_unauth(const char *in, size_t n, uint64_t seed,
                        size_t maxchunk)
{
    pk_resp_parser *p = NULL;
    text t = {0};
    size_t off = 0;
    int rc = 0;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    pk_resp_set_unauth(p, 1);
    while (off < n && rc == 0) {
        size_t c = seed ? 1 + rng_next(&seed) % maxchunk : n - off;
        if (c > n - off)
            c = n - off;
        assert_int_equal(pk_resp_feed(p, in + off, c), PK_OK);
        off += c;
        rc = drain(p, &t);
    }
    if (rc == 0)
        text_addf(&t, "rest: %zu\n", pk_resp_buffered(p));
    pk_resp_parser_free(p);
    return t.s;
}

/* "*<n>\r\n" and n arguments "a". */
static void add_mbulk(text *t, int n)
{
    text_addf(t, "*%d\r\n", n);
    for (int i = 0; i < n; i++)
        text_add(t, L("$1\r\na\r\n"));
}

/* "*1\r\n$<n>\r\n" and n bytes 'x' and CRLF (the payload only if body). */
static void add_bulk(text *t, size_t n, int body)
{
    text_addf(t, "*1\r\n$%zu\r\n", n);
    for (size_t i = 0; body && i < n; i++)
        text_add(t, "x", 1);
    if (body)
        text_add(t, L("\r\n"));
}

static void test_unauth_limits(void **state)
{
    (void)state;
    char *ten_a = NULL, *ok_bulk = NULL;
    text in = {0}, want = {0};

    /* Up to 10 arguments and 16384 bytes pass, in any chunking. */
    add_mbulk(&in, 10);
    add_bulk(&in, PK_RESP_UNAUTH_BULK, 1);
    text_add(&want, L("a|a|a|a|a|a|a|a|a|a\n"));
    for (int i = 0; i < PK_RESP_UNAUTH_BULK; i++)
        text_add(&want, "x", 1);
    text_add(&want, L("\nrest: 0\n"));
    for (uint64_t seed = 0; seed < 40; seed++) {
        char *got = run_unauth(in.s, in.len, seed, seed % 2 ? 7 : 3000);
        assert_string_equal(got, want.s);
        free(got);
    }
    text_free(&in);
    text_free(&want);

    /* One more is refused at the header: no argument is waited for. */
    static const struct {
        const char *in, *want;
    } v[] = {
        {"*11\r\n", "error: ERR Protocol error: unauthenticated multibulk "
                    "length\n"},
        {"*2\r\n$4\r\nPING\r\n$16385\r\n",
         "error: ERR Protocol error: unauthenticated bulk length\n"},
        {"*1\r\n$9999999\r\n", "error: ERR Protocol error: unauthenticated "
                               "bulk length\n"},
        /* Redis checks the general limits first. */
        {"*1048577\r\n", "error: ERR Protocol error: invalid multibulk "
                         "length\n"},
        {"*1\r\n$536870913\r\n", "error: ERR Protocol error: invalid bulk "
                                 "length\n"},
        {"*1\r\n$-1\r\n", "error: ERR Protocol error: invalid bulk length\n"},
        /* Empty and negative counts stay empty requests. */
        {"*0\r\n*-1\r\n", "rest: 0\n"},
        /* Inline requests keep their own limit only, as in Redis. */
        {"a b c d e f g h i j k l m n o p\r\n",
         "a|b|c|d|e|f|g|h|i|j|k|l|m|n|o|p\nrest: 0\n"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        for (uint64_t seed = 0; seed < 8; seed++) {
            char *got = run_unauth(v[i].in, strlen(v[i].in), seed, 4);
            assert_string_equal(got, v[i].want);
            free(got);
        }
    }

    /* Off (the default), the same inputs pass. */
    add_mbulk(&in, 11);
    ten_a = once(in.s, in.len);
    assert_string_equal(ten_a, "a|a|a|a|a|a|a|a|a|a|a\nrest: 0\n");
    text_free(&in);
    add_bulk(&in, PK_RESP_UNAUTH_BULK + 1, 1);
    ok_bulk = once(in.s, in.len);
    assert_int_equal(strlen(ok_bulk),
                     PK_RESP_UNAUTH_BULK + 1 + strlen("\nrest: 0\n"));
    text_free(&in);
    free(ten_a);
    free(ok_bulk);
}

/* A hostile header costs the parser nothing beyond its first buffer. */
static void test_unauth_header_buffers_nothing(void **state)
{
    (void)state;
    pk_resp_parser *p;
    const pk_arg *argv;
    int argc;
    text in = {0};

    add_bulk(&in, 100u * 1024 * 1024, 0);
    for (int i = 0; i < 1000; i++)
        text_add(&in, "x", 1);
    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    pk_resp_set_unauth(p, 1);
    assert_int_equal(pk_resp_feed(p, in.s, in.len), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), PK_EPROTO);
    assert_true(pk_resp_memory(p) < 32 * 1024);
    /* Sticky, like every protocol error. */
    assert_int_equal(pk_resp_feed(p, "x", 1), PK_EPROTO);
    pk_resp_parser_free(p);
    text_free(&in);
}

/* The connection authenticates between two pipelined commands: the
 * second is read with the limits of the moment it is parsed. */
static void test_unauth_switch_between_commands(void **state)
{
    (void)state;
    pk_resp_parser *p;
    const pk_arg *argv;
    int argc;
    text in = {0};

    text_add(&in, L("*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"));
    add_bulk(&in, 20000, 1);
    add_mbulk(&in, 11);
    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    pk_resp_set_unauth(p, 1);
    assert_int_equal(pk_resp_feed(p, in.s, in.len), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argc, 2);
    pk_resp_set_unauth(p, 0);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argv[0].len, 20000);
    /* Logged out again (RESET): the next command is limited. */
    pk_resp_set_unauth(p, 1);
    assert_int_equal(pk_resp_next(p, &argc, &argv), PK_EPROTO);
    assert_string_equal(pk_resp_error(p),
                        "ERR Protocol error: unauthenticated multibulk length");
    pk_resp_parser_free(p);
    text_free(&in);
}

/* Turned on while a command is partly received, once its name is known
 * (an internal command from a peer without the cluster secret). */
static void test_unauth_turned_on_mid_command(void **state)
{
    (void)state;
    static const struct {
        const char *in, *err; /* err NULL: the command completes */
    } v[] = {
        {"*3\r\n$7\r\nPK.REPL\r\n$100000\r\nabc",
         "unauthenticated bulk length"},
        {"*12\r\n$7\r\nPK.REPL\r\n", "unauthenticated multibulk length"},
        {"*12\r\n$7\r\nPK.REPL\r\n$100000\r\n",
         "unauthenticated multibulk length"},
        {"*2\r\n$7\r\nPK.REPL\r\n$3\r\nab", NULL},
        {"*2\r\n$7\r\nPK.REPL\r\n", NULL},
    };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        pk_resp_parser *p;
        const pk_arg *argv;
        pk_arg name = {NULL, 0};
        int argc;

        assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
        assert_int_equal(pk_resp_feed(p, v[i].in, strlen(v[i].in)), PK_OK);
        assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
        assert_int_equal(pk_resp_pending(p, &name), 1);
        assert_int_equal(name.len, 7);
        assert_memory_equal(name.ptr, "PK.REPL", 7);
        pk_resp_set_unauth(p, 1);
        if (v[i].err) {
            char want[96];
            snprintf(want, sizeof(want), "ERR Protocol error: %s", v[i].err);
            assert_int_equal(pk_resp_next(p, &argc, &argv), PK_EPROTO);
            assert_string_equal(pk_resp_error(p), want);
            assert_int_equal(pk_resp_pending(p, &name), 0);
        } else {
            const char *rest =
                strchr(v[i].in + 14, '$') ? "c\r\n" : "$3\r\nabc\r\n";
            assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
            assert_int_equal(pk_resp_feed(p, rest, strlen(rest)), PK_OK);
            assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
            assert_int_equal(argc, 2);
            assert_int_equal(pk_resp_pending(p, &name), 0);
        }
        pk_resp_parser_free(p);
    }
}

/* A client that drips a request a byte per read keeps its first buffer
 * (bench/hostile-conns.py: each read grew and copied it before). */
static void test_drip_keeps_first_buffer(void **state)
{
    (void)state;
    static const char head[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16384\r\n";
    pk_resp_parser *p;
    const pk_arg *argv;
    size_t got, mem;
    char *buf;
    int argc;

    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    assert_int_equal(pk_resp_space(p, 65536, &buf, &got), PK_OK);
    assert_true(got >= 65536);
    memcpy(buf, head, sizeof(head) - 1);
    pk_resp_commit(p, sizeof(head) - 1);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
    mem = pk_resp_memory(p);
    for (int i = 0; i < 16384; i++) {
        assert_int_equal(pk_resp_space(p, 65536, &buf, &got), PK_OK);
        buf[0] = 'x';
        pk_resp_commit(p, 1);
        assert_int_equal(pk_resp_next(p, &argc, &argv), 0);
        assert_int_equal(pk_resp_memory(p), mem);
    }
    assert_int_equal(pk_resp_feed(p, L("\r\n")), PK_OK);
    assert_int_equal(pk_resp_next(p, &argc, &argv), 1);
    assert_int_equal(argv[2].len, 16384);
    pk_resp_parser_free(p);
}

/* pk_resp_pending answers only once a name is whole. */
static void test_pending_name(void **state)
{
    (void)state;
    static const char *const none[] = {
        "",      "*3\r\n", "*3\r\n$3\r\n",         "*3\r\n$3\r\nSE",
        "SET k", "*0\r\n", "*1\r\n$4\r\nPING\r\n",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        pk_resp_parser *p;
        const pk_arg *argv;
        pk_arg name = {NULL, 0};
        int argc;

        assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
        assert_int_equal(pk_resp_feed(p, none[i], strlen(none[i])), PK_OK);
        while (pk_resp_next(p, &argc, &argv) == 1)
            ;
        assert_int_equal(pk_resp_pending(p, &name), 0);
        assert_null(name.ptr);
        pk_resp_parser_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_multibulk),
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_every_split_point),
        cmocka_unit_test(test_chunkings_agree),
        cmocka_unit_test(test_binary_payloads),
        cmocka_unit_test(test_inline),
        cmocka_unit_test(test_empty_requests_skipped),
        cmocka_unit_test(test_lenient_terminators),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_error_is_sticky),
        cmocka_unit_test(test_too_big_lines),
        cmocka_unit_test(test_header_at_buffer_end),
        cmocka_unit_test(test_limits_boundaries),
        cmocka_unit_test(test_bad_limits),
        cmocka_unit_test(test_declared_huge_bulk_allocates_nothing),
        cmocka_unit_test(test_query_buffer_limit),
        cmocka_unit_test(test_memory_shrinks_after_big_bulk),
        cmocka_unit_test(test_many_args),
        cmocka_unit_test(test_steady_state_reuses_memory),
        cmocka_unit_test(test_unauth_limits),
        cmocka_unit_test(test_unauth_header_buffers_nothing),
        cmocka_unit_test(test_unauth_switch_between_commands),
        cmocka_unit_test(test_unauth_turned_on_mid_command),
        cmocka_unit_test(test_pending_name),
        cmocka_unit_test(test_drip_keeps_first_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

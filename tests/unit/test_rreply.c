/*
 * Tests of the client side of the protocol: the reply reader and request
 * writer (proto/pk_rreply.c) and the blocking client (server/pk_sclient.c).
 *
 * Replies are compared through a canonical dump -- the tree written back
 * as RESP3, attributes dropped, every null as "_" -- so a case is just
 * input and expected dump.  Every case is also parsed split at every byte
 * boundary and one byte at a time, and random reply streams written by
 * the pk_reply writers (RESP2 and RESP3, with random attributes) are
 * parsed in random chunks against the stream the writers produced.
 * Malformed input must give PK_EPROTO, the same error whatever the
 * chunking, with no allocation sized from a declared length.  Outside
 * sanitizer builds malloc is wrapped to fail the k-th allocation, for
 * every k, and to record the largest request.
 *
 * pk_sclient runs against a real redis-server started on a free port in a
 * temporary directory (and stopped by PID); DEBUG PROTOCOL makes it send
 * every RESP3 type.  The tests skip if /usr/bin/redis-server is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "proto/pk_reply.h"
#include "proto/pk_resp.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"
#include "testutil.h"

#define L(s) (s), sizeof(s) - 1
#define REDIS_SERVER "/usr/bin/redis-server"

/* ---- canonical dump and parse drivers -------------------------------- */

static void put(pk_obuf *ob, const void *p, size_t n)
{
    assert_int_equal(pk_obuf_append(ob, p, n), PK_OK);
}

static void putf(pk_obuf *ob, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void putf(pk_obuf *ob, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof(buf));
    put(ob, buf, (size_t)n);
}

/* Writes r as canonical RESP3, checking the node invariants on the way. */
static void dump(pk_obuf *ob, const pk_rr *r)
{
    size_t k;

    switch (r->type) {
    case PK_RR_STATUS:
    case PK_RR_ERROR:
    case PK_RR_DOUBLE:
    case PK_RR_BIGNUM:
    case PK_RR_BULK:
    case PK_RR_VERBATIM:
        assert_non_null(r->str);
        assert_int_equal(r->str[r->len], '\0');
        assert_null(r->elems);
        if (r->type == PK_RR_BULK)
            putf(ob, "$%zu\r\n", r->len);
        else if (r->type == PK_RR_VERBATIM)
            putf(ob, "=%zu\r\n%.3s:", r->len + 4, r->fmt);
        else
            putf(ob, "%c", r->type);
        put(ob, r->str, r->len);
        put(ob, L("\r\n"));
        return;
    case PK_RR_INT:
        putf(ob, ":%" PRId64 "\r\n", r->integer);
        return;
    case PK_RR_BOOL:
        assert_true(r->integer == 0 || r->integer == 1);
        putf(ob, "#%c\r\n", r->integer ? 't' : 'f');
        return;
    case PK_RR_NIL:
        put(ob, L("_\r\n"));
        return;
    case PK_RR_ARRAY:
    case PK_RR_MAP:
    case PK_RR_SET:
    case PK_RR_PUSH:
        assert_null(r->str);
        assert_true((r->n == 0) == (r->elems == NULL));
        putf(ob, "%c%zu\r\n", r->type, r->n);
        k = r->type == PK_RR_MAP ? 2 * r->n : r->n;
        for (size_t i = 0; i < k; i++)
            dump(ob, &r->elems[i]);
        return;
    default:
        fail_msg("bad node type %d", r->type);
    }
}

/* Chunk sizes for run(): fixed, or pseudo-random from a seed. */
typedef struct chunking {
    size_t fixed;  /* bytes per feed; 0: all at once */
    size_t first;  /* if set, the first feed's size (a split point) */
    uint64_t seed; /* if set, random sizes 1 .. fixed */
} chunking;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t chunk_size(chunking *ch, size_t i, size_t left)
{
    size_t c = ch->fixed ? ch->fixed : left;

    if (i == 0 && ch->first)
        c = ch->first;
    else if (ch->seed)
        c = 1 + rnd(&ch->seed) % ch->fixed;
    return c < left ? c : left;
}

/*
 * Parses in[0..n) fed in chunks; writes the dumps of all replies to out,
 * then "!" and the error text, or "~" and the bytes left buffered.
 * Returns the last pk_rreply_next result (0 or an error).
 */
static int run(const pk_rreply_limits *lim, const char *in, size_t n,
               chunking ch, pk_obuf *out)
{
    pk_rreply_reader *r;
    pk_rr *rep;
    size_t off = 0;
    int rc = 0;

    assert_int_equal(pk_rreply_reader_new(lim, &r), PK_OK);
    for (size_t i = 0; off < n && rc == 0; i++) {
        size_t c = chunk_size(&ch, i, n - off);
        assert_int_equal(pk_rreply_feed(r, in + off, c), PK_OK);
        off += c;
        while ((rc = pk_rreply_next(r, &rep)) == 1) {
            dump(out, rep);
            pk_rr_free(rep);
        }
    }
    if (rc < 0) {
        assert_int_equal(rc, PK_EPROTO);
        assert_non_null(pk_rreply_error(r));
        putf(out, "!%s", pk_rreply_error(r));
        /* Sticky. */
        assert_int_equal(pk_rreply_next(r, &rep), PK_EPROTO);
        assert_int_equal(pk_rreply_feed(r, L("+OK\r\n")), PK_EPROTO);
    } else {
        assert_null(pk_rreply_error(r));
        putf(out, "~%zu", pk_rreply_buffered(r));
    }
    pk_rreply_reader_free(r);
    return rc;
}

/* Asserts that got holds want[0..wn); prints both, escaped, if not. */
static void expect_buf(const pk_obuf *got, const char *want, size_t wn)
{
    size_t gn = pk_obuf_pending(got);
    const char *g = got->data + got->head;

    if (gn == wn && memcmp(g, want, wn) == 0)
        return;
    print_error("got  (%zu): ", gn);
    for (size_t i = 0; i < gn && i < 400; i++)
        print_error(g[i] >= 32 && g[i] < 127 ? "%c" : "\\x%02x",
                    (unsigned char)g[i]);
    print_error("\nwant (%zu): ", wn);
    for (size_t i = 0; i < wn && i < 400; i++)
        print_error(want[i] >= 32 && want[i] < 127 ? "%c" : "\\x%02x",
                    (unsigned char)want[i]);
    print_error("\n");
    fail();
}

/*
 * Parses in with default limits, at once, split at every byte boundary,
 * and one byte at a time; each must give want (dumps and a "~" / "!"
 * trailer, as run() writes it).
 */
static void check_lim(const pk_rreply_limits *lim, const char *in, size_t n,
                      const char *want, size_t wn)
{
    pk_obuf out;

    pk_obuf_init(&out);
    run(lim, in, n, (chunking){0}, &out);
    expect_buf(&out, want, wn);
    for (size_t cut = 1; cut < n; cut++) {
        pk_obuf_reset(&out);
        run(lim, in, n, (chunking){.first = cut}, &out);
        expect_buf(&out, want, wn);
    }
    pk_obuf_reset(&out);
    run(lim, in, n, (chunking){.fixed = 1}, &out);
    expect_buf(&out, want, wn);
    pk_obuf_free(&out);
}

static void check(const char *in, size_t n, const char *want, size_t wn)
{
    check_lim(NULL, in, n, want, wn);
}

/* CHECK(input, expected dumps): no error, nothing left buffered. */
#define CHECK(in, want) check(L(in), L(want "~0"))
/* SAME(input): a canonical reply reads back as itself. */
#define SAME(in) CHECK(in, in)
/* BAD(input, error text): PK_EPROTO, whatever the chunking. */
#define BAD(in, why) check(L(in), L("!Protocol error: " why))

/* Parses one complete reply of in at once and returns it. */
static pk_rr *parse1(const char *in, size_t n)
{
    pk_rreply_reader *r;
    pk_rr *rep = NULL;

    assert_int_equal(pk_rreply_reader_new(NULL, &r), PK_OK);
    assert_int_equal(pk_rreply_feed(r, in, n), PK_OK);
    assert_int_equal(pk_rreply_next(r, &rep), 1);
    assert_int_equal(pk_rreply_next(r, &rep), 0);
    pk_rreply_reader_free(r); /* the reply outlives its reader */
    return rep;
}

/* ---- reader: every type ---------------------------------------------- */

static void test_resp2_types(void **state)
{
    (void)state;
    SAME("+OK\r\n");
    SAME("+\r\n");
    SAME("+a\rb\nc\r\n"); /* a lone CR or LF is text */
    SAME("-ERR unknown command 'x'\r\n");
    SAME("-MOVED 3999 127.0.0.1:6381\r\n");
    SAME(":0\r\n");
    SAME(":-1\r\n");
    SAME(":9223372036854775807\r\n");
    SAME(":-9223372036854775808\r\n");
    SAME("$5\r\nhello\r\n");
    SAME("$0\r\n\r\n");
    SAME("$7\r\na\r\n\0b\r\n\r\n"); /* binary, CRLF inside */
    SAME("*0\r\n");
    SAME("*3\r\n$3\r\nfoo\r\n:7\r\n+x\r\n");
    CHECK("$-1\r\n", "_\r\n");
    CHECK("*-1\r\n", "_\r\n");
    CHECK("*2\r\n$-1\r\n*-1\r\n", "*2\r\n_\r\n_\r\n");
    /* Pipelined replies, and a partial one left buffered. */
    check(L("+a\r\n:1\r\n$2\r\nhi\r\n$5\r\nab"),
          L("+a\r\n:1\r\n$2\r\nhi\r\n~6"));
}

static void test_resp3_types(void **state)
{
    (void)state;
    SAME("_\r\n");
    SAME("%0\r\n");
    SAME("%2\r\n+a\r\n:1\r\n$1\r\nb\r\n#f\r\n");
    SAME("~3\r\n:1\r\n:2\r\n:3\r\n");
    SAME(",1.5\r\n");
    SAME(",inf\r\n");
    SAME(",-inf\r\n");
    SAME(",nan\r\n");
    SAME(",-3e-10\r\n");
    SAME(",+10\r\n");
    SAME("#t\r\n");
    SAME("#f\r\n");
    SAME("=15\r\ntxt:Some string\r\n");
    SAME("=4\r\nmkd:\r\n");
    SAME("=8\r\ntxt:a\r\nb\r\n");
    SAME("(3492890328409238509324850943850943825024385\r\n");
    SAME("(-1\r\n");
    SAME("(0\r\n");
    SAME(">3\r\n+message\r\n+chan\r\n$3\r\nmsg\r\n");
    SAME(">0\r\n");
}

static void test_attributes_dropped(void **state)
{
    (void)state;
    /* As DEBUG PROTOCOL attrib sends it. */
    CHECK("|1\r\n+key-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
          "$2\r\nhi\r\n",
          "$2\r\nhi\r\n");
    CHECK("|0\r\n:5\r\n", ":5\r\n");
    CHECK("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", "*2\r\n:1\r\n:2\r\n");
    CHECK("*2\r\n:1\r\n|1\r\n+a\r\n+b\r\n:2\r\n", "*2\r\n:1\r\n:2\r\n");
    /* An attribute on a key of an attribute, before a map key. */
    CHECK("%1\r\n|1\r\n|1\r\n+x\r\n+y\r\n+k\r\n*1\r\n:1\r\n:2\r\n"
          "$1\r\nv\r\n",
          "%1\r\n:2\r\n$1\r\nv\r\n");
    /* Two attributes in a row, then the reply. */
    CHECK("|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n%1\r\n+d\r\n+e\r\n#t\r\n", "#t\r\n");
    /* An attribute alone is not a reply yet. */
    check(L("|1\r\n+a\r\n+b\r\n"), L("~12"));
}

static void test_nested(void **state)
{
    (void)state;
    SAME("*3\r\n*2\r\n:1\r\n*0\r\n%1\r\n~1\r\n_\r\n*1\r\n,2.5\r\n"
         "*1\r\n*1\r\n*1\r\n$3\r\nend\r\n");
    SAME(">2\r\n+invalidate\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    SAME("%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nmodules\r\n*0\r\n");
}

static void test_field_values(void **state)
{
    (void)state;
    static const char in[] =
        "*9\r\n:-42\r\n,-2.5e3\r\n,inf\r\n,nan\r\n#t\r\n=8\r\ntxt:a\0bc\r\n"
        "%1\r\n+k\r\n$-1\r\n$3\r\nx\0y\r\n(-12\r\n";
    pk_rr *r = parse1(L(in)), *e;

    assert_int_equal(r->type, PK_RR_ARRAY);
    assert_int_equal(r->n, 9);
    e = r->elems;
    assert_int_equal(e[0].type, PK_RR_INT);
    assert_int_equal(e[0].integer, -42);
    assert_int_equal(e[1].type, PK_RR_DOUBLE);
    assert_true(e[1].dbl == -2500.0);
    assert_string_equal(e[1].str, "-2.5e3");
    assert_true(isinf(e[2].dbl) && e[2].dbl > 0);
    assert_true(isnan(e[3].dbl));
    assert_int_equal(e[4].type, PK_RR_BOOL);
    assert_int_equal(e[4].integer, 1);
    assert_int_equal(e[5].type, PK_RR_VERBATIM);
    assert_string_equal(e[5].fmt, "txt");
    assert_int_equal(e[5].len, 4);
    assert_memory_equal(e[5].str, "a\0bc", 5);
    assert_int_equal(e[6].type, PK_RR_MAP);
    assert_int_equal(e[6].n, 1);
    assert_int_equal(e[6].elems[0].type, PK_RR_STATUS);
    assert_string_equal(e[6].elems[0].str, "k");
    assert_int_equal(e[6].elems[1].type, PK_RR_NIL);
    assert_null(e[6].elems[1].str);
    assert_int_equal(e[7].type, PK_RR_BULK);
    assert_int_equal(e[7].len, 3);
    assert_memory_equal(e[7].str, "x\0y", 4);
    assert_int_equal(e[8].type, PK_RR_BIGNUM);
    assert_string_equal(e[8].str, "-12");
    pk_rr_free(r);
    pk_rr_free(NULL);
}

/* ---- reader: chunking ------------------------------------------------ */

/* A stream of many replies of every type. */
static const char corpus[] =
    "+OK\r\n-ERR x\r\n:123\r\n$3\r\nfoo\r\n$-1\r\n*-1\r\n_\r\n"
    "*2\r\n$1\r\na\r\n*1\r\n:1\r\n%1\r\n+k\r\n~2\r\n#t\r\n#f\r\n"
    ",3.25\r\n=7\r\ntxt:abc\r\n(99999999999999999999999\r\n"
    "|1\r\n+ttl\r\n:3\r\n>2\r\n+p\r\n$0\r\n\r\n"
    "*3\r\n*0\r\n%0\r\n~0\r\n$10\r\n0123456789\r\n";

static void test_every_split_point(void **state)
{
    (void)state;
    pk_obuf want;

    /* check() itself splits at every byte boundary. */
    pk_obuf_init(&want);
    run(NULL, L(corpus), (chunking){0}, &want);
    check(L(corpus), want.data, pk_obuf_pending(&want));
    pk_obuf_free(&want);
}

static void test_random_chunks(void **state)
{
    (void)state;
    pk_obuf want, got;
    char in[sizeof(corpus) * 8];
    size_t n = 0;

    for (int i = 0; i < 8; i++, n += sizeof(corpus) - 1)
        memcpy(in + n, corpus, sizeof(corpus) - 1);
    pk_obuf_init(&want);
    pk_obuf_init(&got);
    run(NULL, in, n, (chunking){0}, &want);
    for (uint64_t seed = 1; seed <= 500; seed++) {
        pk_obuf_reset(&got);
        run(NULL, in, n, (chunking){.fixed = 1 + seed % 64, .seed = seed},
            &got);
        expect_buf(&got, want.data, pk_obuf_pending(&want));
    }
    pk_obuf_free(&want);
    pk_obuf_free(&got);
}

/* ---- reader: against the pk_reply writers (model) -------------------- */

/*
 * Random replies written twice by the pk_reply writers: to wire in the
 * protocol under test (RESP3 with random attributes), and to want as the
 * reader's dump shows them (the same writers; nulls always "_").
 */
typedef struct gen {
    uint64_t s;
    int proto;
    pk_obuf *w; /* wire */
    pk_obuf *v; /* want, or scratch inside an attribute */
    pk_obuf scratch;
} gen;

static void gen_text(gen *g, char *buf, size_t max, size_t *n)
{
    *n = rnd(&g->s) % max;
    for (size_t i = 0; i < *n; i++)
        buf[i] = (char)('a' + rnd(&g->s) % 26);
    buf[*n] = '\0';
}

static void gen_elem(gen *g, int depth, int top);

/* An attribute: written to wire only. */
static void gen_attr(gen *g, int depth)
{
    size_t k = rnd(&g->s) % 3;
    pk_obuf *v = g->v;

    g->v = &g->scratch;
    putf(g->w, "|%zu\r\n", k);
    for (size_t i = 0; i < 2 * k; i++)
        gen_elem(g, depth + 1, 0);
    g->v = v;
}

static void gen_elem(gen *g, int depth, int top)
{
    static const double dbls[] = {0.0,    1.5,      -0.25,     1e300,
                                  -3e-20, INFINITY, -INFINITY, NAN};
    char text[64];
    size_t n, k = 0;
    uint64_t x;
    int t = (int)(rnd(&g->s) % (depth < 4 ? 13 : 8));
    pk_obuf *w = g->w, *v = g->v;

    if (g->proto == 3 && rnd(&g->s) % 8 == 0)
        gen_attr(g, depth);
    x = rnd(&g->s);
    switch (t) {
    case 0:
        gen_text(g, text, sizeof(text), &n);
        pk_reply_simple(w, text);
        pk_reply_simple(v, text);
        break;
    case 1:
        gen_text(g, text, sizeof(text), &n);
        pk_reply_errorf(w, "ERR %s", text);
        pk_reply_errorf(v, "ERR %s", text);
        break;
    case 2:
        pk_reply_int(w, (int64_t)x);
        pk_reply_int(v, (int64_t)x);
        break;
    case 3:
        gen_text(g, text, sizeof(text), &n);
        text[0] = '\r'; /* binary-safe */
        pk_reply_bulk(w, text, n);
        pk_reply_bulk(v, text, n);
        break;
    case 4:
        pk_reply_null(w, g->proto);
        pk_reply_null(v, 3);
        break;
    case 5:
        pk_reply_double(w, g->proto, dbls[x % 8]);
        pk_reply_double(v, g->proto, dbls[x % 8]);
        break;
    case 6:
        pk_reply_bool(w, g->proto, (int)(x % 2));
        pk_reply_bool(v, g->proto, (int)(x % 2));
        break;
    case 7:
        gen_text(g, text, sizeof(text), &n);
        pk_reply_verbatim(w, g->proto, "txt", text, n);
        pk_reply_verbatim(v, g->proto, "txt", text, n);
        break;
    case 8:
        pk_reply_null_array(w, g->proto);
        pk_reply_null(v, 3);
        break;
    case 9:
    case 10:
        k = x % 5;
        pk_reply_array(w, k);
        pk_reply_array(v, k);
        break;
    case 11:
        k = x % 4;
        pk_reply_map(w, g->proto, k);
        pk_reply_map(v, g->proto, k);
        k *= 2;
        break;
    case 12:
        k = x % 4;
        if (g->proto == 3 && top) {
            putf(w, ">%zu\r\n", k);
            putf(v, ">%zu\r\n", k);
        } else {
            pk_reply_set(w, g->proto, k);
            pk_reply_set(v, g->proto, k);
        }
        break;
    }
    for (size_t i = 0; i < k; i++)
        gen_elem(g, depth + 1, 0);
}

static void test_model(void **state)
{
    (void)state;
    pk_obuf wire, want, got;

    pk_obuf_init(&wire);
    pk_obuf_init(&want);
    pk_obuf_init(&got);
    for (uint64_t seed = 1; seed <= 400; seed++) {
        gen g = {.s = seed * 0x9e3779b97f4a7c15ULL,
                 .proto = 2 + (int)(seed % 2),
                 .w = &wire,
                 .v = &want};

        pk_obuf_init(&g.scratch);
        for (int i = 0; i < 6; i++)
            gen_elem(&g, 0, 1);
        pk_obuf_free(&g.scratch);
        assert_int_equal(wire.err, 0);
        put(&want, L("~0"));
        pk_obuf_reset(&got);
        run(NULL, wire.data, wire.len,
            (chunking){.fixed = 1 + seed % 40, .seed = seed}, &got);
        expect_buf(&got, want.data, want.len);
        pk_obuf_reset(&got);
        run(NULL, wire.data, wire.len, (chunking){0}, &got);
        expect_buf(&got, want.data, want.len);
        pk_obuf_reset(&wire);
        pk_obuf_reset(&want);
    }
    pk_obuf_free(&wire);
    pk_obuf_free(&want);
    pk_obuf_free(&got);
}

/* ---- reader: malformed input and limits ------------------------------ */

static void test_malformed(void **state)
{
    (void)state;
    BAD("?x\r\n", "unknown type byte 0x3f");
    BAD("\r\n", "unknown type byte 0x0d");
    BAD("x", "unknown type byte 0x78");
    BAD("$-2\r\n", "invalid bulk length");
    BAD("$-100\r\n", "invalid bulk length");
    BAD("=-1\r\n", "invalid bulk length");
    BAD("*-2\r\n", "invalid aggregate length");
    BAD("%-1\r\n", "invalid aggregate length");
    BAD("~-1\r\n", "invalid aggregate length");
    BAD("|-1\r\n", "invalid aggregate length");
    BAD("$abc\r\n", "invalid length");
    BAD("$?\r\n", "invalid length"); /* streamed strings */
    BAD("*?\r\n", "invalid length");
    BAD("$\r\n", "invalid length");
    BAD("$ 3\r\n", "invalid length");
    BAD("$03\r\nabc\r\n", "invalid length");
    BAD("*1x\r\n", "invalid length");
    BAD(":12a\r\n", "invalid integer");
    BAD(":+1\r\n", "invalid integer");
    BAD(":01\r\n", "invalid integer");
    BAD(":-0\r\n", "invalid integer");
    BAD(":\r\n", "invalid integer");
    BAD(":9223372036854775808\r\n", "invalid integer");
    BAD(":-9223372036854775809\r\n", "invalid integer");
    BAD("$3\r\nabcde\r\n", "bulk payload not followed by CRLF");
    BAD("$3\r\nabc\n\r", "bulk payload not followed by CRLF");
    BAD("$536870913\r\n", "invalid bulk length");
    BAD("$99999999999999999999\r\n", "invalid length");
    BAD("*1048577\r\n", "too many elements");
    BAD("%1048577\r\n", "too many elements");
    BAD("*9223372036854775807\r\n", "too many elements");
    BAD("#x\r\n", "invalid boolean");
    BAD("#tt\r\n", "invalid boolean");
    BAD("#\r\n", "invalid boolean");
    BAD("_x\r\n", "invalid null");
    BAD(",abc\r\n", "invalid double");
    BAD(", 1\r\n", "invalid double");
    BAD(",1.5x\r\n", "invalid double");
    BAD(",\r\n", "invalid double");
    BAD("(12a\r\n", "invalid big number");
    BAD("(\r\n", "invalid big number");
    BAD("(-\r\n", "invalid big number");
    BAD("=3\r\ntxt\r\n", "invalid verbatim string");
    BAD("=5\r\ntxtx1\r\n", "invalid verbatim string");
    /* Count and number lines are short: no need to wait for their end. */
    BAD(":1234567890123456789012345678901234567890", "line too long");
    BAD("$0000000000000000000000000000000000000000", "line too long");
    BAD("*1\r\n*1\r\n$000000000000000000000000000000000000000000",
        "line too long");
    BAD(",00000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000",
        "line too long");
    /* Replies before the error are returned; the error is sticky. */
    check(L("+OK\r\n:1\r\n$-2\r\n+never\r\n"),
          L("+OK\r\n:1\r\n!Protocol error: invalid bulk length"));
    check(L("*2\r\n:1\r\n?"), L("!Protocol error: unknown type byte 0x3f"));
}

/* n nested one-element arrays around ":1". */
static size_t nest(char *buf, size_t n, const char *open)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        memcpy(buf + len, open, strlen(open));
        len += strlen(open);
    }
    memcpy(buf + len, ":1\r\n", 4);
    return len + 4;
}

static void test_depth(void **state)
{
    (void)state;
    static char in[8192];
    pk_obuf want;
    size_t n;

    pk_obuf_init(&want);
    /* 64 levels are read, 65 are not. */
    n = nest(in, 64, "*1\r\n");
    put(&want, in, n);
    put(&want, L("~0"));
    check(in, n, want.data, want.len);
    n = nest(in, 65, "*1\r\n");
    check(in, n, L("!Protocol error: nesting too deep"));
    /* Attributes count as levels; empty aggregates too. */
    n = nest(in, 64, "*1\r\n") - 4;
    memcpy(in + n, "|0\r\n:1\r\n", 8);
    check(in, n + 8, L("!Protocol error: nesting too deep"));
    n = nest(in, 64, "*1\r\n") - 4;
    memcpy(in + n, "*0\r\n", 4);
    check(in, n + 4, L("!Protocol error: nesting too deep"));
    /* A deep reply with a small max_depth. */
    pk_rreply_limits lim = pk_rreply_limits_default();
    lim.max_depth = 3;
    check_lim(&lim, L("*1\r\n%1\r\n~1\r\n:1\r\n:2\r\n"),
              L("*1\r\n%1\r\n~1\r\n:1\r\n:2\r\n~0"));
    check_lim(&lim, L("*1\r\n%1\r\n~1\r\n*0\r\n:2\r\n"),
              L("!Protocol error: nesting too deep"));
    pk_obuf_free(&want);
}

static void test_limits(void **state)
{
    (void)state;
    pk_rreply_limits lim = pk_rreply_limits_default();
    pk_rreply_reader *r = NULL;
    pk_rr *rep;

    assert_int_equal(lim.max_bulk_len, 512u * 1024 * 1024);
    assert_int_equal(lim.max_elements, 1024u * 1024);
    assert_int_equal(lim.max_depth, 64);
    lim.max_bulk_len = 4;
    lim.max_elements = 2;
    check_lim(&lim,
              L("$4\r\nabcd\r\n=4\r\ntxt:\r\n*2\r\n:1\r\n%2\r\n"
                "_\r\n_\r\n_\r\n_\r\n"),
              L("$4\r\nabcd\r\n=4\r\ntxt:\r\n*2\r\n:1\r\n%2\r\n"
                "_\r\n_\r\n_\r\n_\r\n~0"));
    check_lim(&lim, L("$5\r\n"), L("!Protocol error: invalid bulk length"));
    check_lim(&lim, L("=5\r\n"), L("!Protocol error: invalid bulk length"));
    check_lim(&lim, L("~3\r\n"), L("!Protocol error: too many elements"));
    check_lim(&lim, L("|3\r\n"), L("!Protocol error: too many elements"));

    /* max_buffered: a feed past it is refused whole, not sticky. */
    lim = pk_rreply_limits_default();
    lim.max_buffered = 9;
    assert_int_equal(pk_rreply_reader_new(&lim, &r), PK_OK);
    assert_int_equal(pk_rreply_feed(r, L("+OK\r\n$3\r\n")), PK_OK);
    assert_int_equal(pk_rreply_feed(r, L("a")), PK_EFULL);
    assert_int_equal(pk_rreply_buffered(r), 9);
    assert_int_equal(pk_rreply_next(r, &rep), 1);
    pk_rr_free(rep);
    assert_int_equal(pk_rreply_buffered(r), 4);
    assert_int_equal(pk_rreply_feed(r, L("abc\r\n")), PK_OK);
    assert_int_equal(pk_rreply_next(r, &rep), 1);
    assert_int_equal(rep->len, 3);
    pk_rr_free(rep);
    assert_int_equal(pk_rreply_buffered(r), 0);
    assert_int_equal(pk_rreply_feed(r, L("0123456789")), PK_EFULL);
    pk_rreply_reader_free(r);

    /* Bad limits. */
    r = NULL;
    static const size_t big = SIZE_MAX / 2;
    for (int i = 0; i < 8; i++) {
        lim = pk_rreply_limits_default();
        size_t *f = i % 4 == 0   ? &lim.max_bulk_len
                    : i % 4 == 1 ? &lim.max_elements
                    : i % 4 == 2 ? &lim.max_depth
                                 : &lim.max_buffered;
        *f = i < 4 ? 0 : big;
        assert_int_equal(pk_rreply_reader_new(&lim, &r), PK_EINVAL);
        assert_null(r);
    }
    lim = pk_rreply_limits_default();
    lim.max_depth = 1025;
    assert_int_equal(pk_rreply_reader_new(&lim, &r), PK_EINVAL);
    lim.max_depth = 1024;
    assert_int_equal(pk_rreply_reader_new(&lim, &r), PK_OK);
    pk_rreply_reader_free(r);
    assert_int_equal(pk_rreply_reader_new(NULL, NULL), PK_EINVAL);
    pk_rreply_reader_free(NULL);
}

/* Declared lengths and counts near the limits allocate nothing. */
static void test_declared_huge_allocates_nothing(void **state)
{
    (void)state;
    static const char *const heads[] = {
        "$536870912\r\n", "=536870912\r\n", "*1048576\r\n", "%1048576\r\n",
        "~1048576\r\n",   ">1048576\r\n",   "|1048576\r\n",
    };
    pk_rreply_reader *r;
    pk_rr *rep;

    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
#if FAILALLOC
        max_alloc = 0;
#endif
        assert_int_equal(pk_rreply_reader_new(NULL, &r), PK_OK);
        assert_int_equal(pk_rreply_feed(r, heads[i], strlen(heads[i])), PK_OK);
        for (int j = 0; j < 1000; j++) {
            assert_int_equal(pk_rreply_feed(r, L("_\r\n")), PK_OK);
            assert_int_equal(pk_rreply_next(r, &rep), 0);
        }
        assert_true(pk_rreply_memory(r) < 64 * 1024);
#if FAILALLOC
        assert_true(max_alloc < 64 * 1024);
#endif
        pk_rreply_reader_free(r);
    }
}

/* A big reply: arrives in pieces, and the buffer is given back after. */
static void test_big_reply(void **state)
{
    (void)state;
    enum { N = 3 << 20 };
    pk_rreply_reader *r;
    pk_rr *rep;
    char *payload = malloc(N), hdr[32];
    size_t base;

    assert_non_null(payload);
    for (size_t i = 0; i < N; i++)
        payload[i] = (char)(i * 7);
    assert_int_equal(pk_rreply_reader_new(NULL, &r), PK_OK);
    base = pk_rreply_memory(r);
    snprintf(hdr, sizeof(hdr), "*2\r\n:1\r\n$%d\r\n", N);
    assert_int_equal(pk_rreply_feed(r, hdr, strlen(hdr)), PK_OK);
    for (size_t off = 0; off < N; off += 4096) {
        assert_int_equal(pk_rreply_next(r, &rep), 0);
        assert_int_equal(pk_rreply_feed(r, payload + off, 4096), PK_OK);
    }
    assert_int_equal(pk_rreply_next(r, &rep), 0);
    assert_int_equal(pk_rreply_feed(r, L("\r\n+x\r\n")), PK_OK);
    assert_int_equal(pk_rreply_next(r, &rep), 1);
    assert_int_equal(rep->elems[1].len, N);
    assert_memory_equal(rep->elems[1].str, payload, N);
    pk_rr_free(rep);
    assert_int_equal(pk_rreply_next(r, &rep), 1);
    assert_string_equal(rep->str, "x");
    pk_rr_free(rep);
    assert_int_equal(pk_rreply_next(r, &rep), 0);
    assert_int_equal(pk_rreply_buffered(r), 0);
    assert_int_equal(pk_rreply_memory(r), base);
    pk_rreply_reader_free(r);
    free(payload);
}

static void test_alloc_failures(void **state)
{
#if FAILALLOC
    static const char in[] = "*3\r\n$3\r\nfoo\r\n%1\r\n+k\r\n,1.5\r\n:7\r\n";
    (void)state;
    if (!failalloc_works())
        skip(); /* the wrappers are not in effect */
    for (long k = 1;; k++) {
        long live = live_allocs;
        pk_rreply_reader *r = NULL;
        pk_rr *a = NULL, *b = NULL;
        int rc;

        fail_countdown = k;
        rc = pk_rreply_reader_new(NULL, &r);
        if (rc == PK_OK) {
            rc = pk_rreply_feed(r, L(in));
            if (rc == PK_ENOMEM) /* nothing appended */
                assert_int_equal(pk_rreply_buffered(r), 0);
        }
        if (rc == PK_OK)
            rc = pk_rreply_next(r, &a);
        if (rc == 1)
            rc = pk_rreply_next(r, &b);
        fail_countdown = 0;
        if (rc == PK_ENOMEM && r) /* sticky, or nothing appended */
            assert_true(pk_rreply_next(r, &b) == PK_ENOMEM ||
                        pk_rreply_buffered(r) == 0);
        assert_null(b);
        pk_rr_free(a);
        pk_rreply_reader_free(r);
        assert_int_equal(live_allocs, live);
        if (rc == 0)
            break;
        assert_int_equal(rc, PK_ENOMEM);
        assert_null(a);
    }

    /* The writer: whole or nothing, then sticky. */
    pk_obuf ob;
    pk_obuf_init(&ob);
    fail_countdown = 1;
    assert_int_equal(pk_rr_write_cmdv(&ob, "GET", "k", NULL), PK_ENOMEM);
    fail_countdown = 0;
    assert_int_equal(pk_obuf_pending(&ob), 0);
    assert_int_equal(pk_rr_write_cmdv(&ob, "GET", "k", NULL), PK_ENOMEM);
    pk_obuf_free(&ob);
#else
    (void)state;
    skip(); /* sanitizers own malloc */
#endif
}

/* ---- request writer -------------------------------------------------- */

static void expect_out(pk_obuf *ob, const char *want, size_t n)
{
    assert_int_equal(ob->err, 0);
    expect_buf(ob, want, n);
    pk_obuf_reset(ob);
}

static void test_writer(void **state)
{
    (void)state;
    static const char *const set[] = {"SET", "key", "value"};
    static const char *const bin[] = {"SET", "a\0\r\nb", "", NULL};
    static const size_t binlen[] = {3, 5, 0, 0};
    const char *const bad[] = {"GET", NULL};
    pk_obuf ob;

    pk_obuf_init(&ob);
    assert_int_equal(pk_rr_write_cmd(&ob, 3, set, NULL), PK_OK);
    expect_out(&ob, L("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"));
    assert_int_equal(pk_rr_write_cmd(&ob, 4, bin, binlen), PK_OK);
    expect_out(&ob, L("*4\r\n$3\r\nSET\r\n$5\r\na\0\r\nb\r\n$0\r\n\r\n"
                      "$0\r\n\r\n"));
    assert_int_equal(pk_rr_write_cmd(&ob, 1, set, NULL), PK_OK);
    expect_out(&ob, L("*1\r\n$3\r\nSET\r\n"));
    assert_int_equal(pk_rr_write_cmdv(&ob, "SET", "k", "v", NULL), PK_OK);
    expect_out(&ob, L("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"));
    assert_int_equal(pk_rr_write_cmdv(&ob, "PING", NULL), PK_OK);
    expect_out(&ob, L("*1\r\n$4\r\nPING\r\n"));

    /* Twelve arguments: two-digit counts. */
    const char *many[12];
    for (int i = 0; i < 12; i++)
        many[i] = "x";
    assert_int_equal(pk_rr_write_cmd(&ob, 12, many, NULL), PK_OK);
    assert_memory_equal(ob.data + ob.head, "*12\r\n$1\r\nx\r\n", 12);
    assert_int_equal(pk_obuf_pending(&ob), 5 + 12 * 7);
    pk_obuf_reset(&ob);

    /* Invalid arguments append nothing. */
    assert_int_equal(pk_rr_write_cmd(&ob, 0, set, NULL), PK_EINVAL);
    assert_int_equal(pk_rr_write_cmd(&ob, -1, set, NULL), PK_EINVAL);
    assert_int_equal(pk_rr_write_cmd(&ob, 1, NULL, NULL), PK_EINVAL);
    assert_int_equal(pk_rr_write_cmd(NULL, 1, set, NULL), PK_EINVAL);
    assert_int_equal(pk_rr_write_cmd(&ob, 2, bad, NULL), PK_EINVAL);
    assert_int_equal(pk_rr_write_cmdv(&ob, NULL, NULL), PK_EINVAL);
    assert_int_equal(pk_rr_write_cmdv(NULL, "PING", NULL), PK_EINVAL);
    assert_int_equal(pk_obuf_pending(&ob), 0);
    assert_int_equal(ob.err, 0);
    pk_obuf_free(&ob);
}

/* The server's request parser reads back what the writer wrote. */
static void test_writer_roundtrip(void **state)
{
    (void)state;
    uint64_t s = 42;
    pk_resp_parser *p;
    pk_obuf ob;

    pk_obuf_init(&ob);
    assert_int_equal(pk_resp_parser_new(NULL, &p), PK_OK);
    for (int round = 0; round < 200; round++) {
        char bytes[8][40];
        const char *argv[8];
        size_t lens[8];
        int argc = 1 + (int)(rnd(&s) % 8), got;
        const pk_arg *back;

        for (int i = 0; i < argc; i++) {
            lens[i] = rnd(&s) % sizeof(bytes[i]);
            for (size_t j = 0; j < lens[i]; j++)
                bytes[i][j] = (char)rnd(&s);
            argv[i] = bytes[i];
        }
        assert_int_equal(pk_rr_write_cmd(&ob, argc, argv, lens), PK_OK);
        assert_int_equal(
            pk_resp_feed(p, ob.data + ob.head, pk_obuf_pending(&ob)), PK_OK);
        pk_obuf_reset(&ob);
        assert_int_equal(pk_resp_next(p, &got, &back), 1);
        assert_int_equal(got, argc);
        for (int i = 0; i < argc; i++) {
            assert_int_equal(back[i].len, lens[i]);
            assert_memory_equal(back[i].ptr, argv[i], lens[i]);
        }
    }
    pk_resp_parser_free(p);
    pk_obuf_free(&ob);
}

/* ---- pk_sclient against redis-server --------------------------------- */

typedef struct redis {
    pid_t pid;
    int port;
    char dir[64];
} redis;

/* A port nothing listens on just now. */
static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

static pid_t redis_spawn(const redis *rs)
{
    char port[16], log[128];
    pid_t pid, parent = getpid();

    snprintf(port, sizeof(port), "%d", rs->port);
    snprintf(log, sizeof(log), "%s/redis.log", rs->dir);
    pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        /* If the test dies (a failed assertion under a sanitizer aborts
         * it), the server goes too. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(REDIS_SERVER, "redis-server", "--port", port, "--bind",
              "127.0.0.1", "--dir", rs->dir, "--save", "", "--appendonly", "no",
              "--daemonize", "no", "--enable-debug-command", "yes",
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Waits up to 10 s for the server to answer PING; 0 if it did not. */
static int redis_ready(redis *rs)
{
    for (int i = 0; i < 1000; i++) {
        pk_sclient *c;
        int status;

        if (waitpid(rs->pid, &status, WNOHANG) == rs->pid) {
            rs->pid = -1;
            return 0;
        }
        if (pk_sclient_connect("127.0.0.1", rs->port, 1000, &c) == PK_OK) {
            static const char *const ping[] = {"PING"};
            pk_rr *r = NULL;
            int rc = pk_sclient_call(c, 1, ping, NULL, &r);
            int ok = rc == PK_OK && r->type == PK_RR_STATUS;
            pk_rr_free(r);
            pk_sclient_free(c);
            if (ok)
                return 1;
        }
        usleep(10 * 1000);
    }
    return 0;
}

static void redis_stop(redis *rs)
{
    if (rs->pid > 0) {
        kill(rs->pid, SIGTERM);
        waitpid(rs->pid, NULL, 0);
        rs->pid = -1;
    }
}

/* Starts redis-server for a test; state NULL if it is not installed. */
static int redis_setup(void **state)
{
    redis *rs;

    *state = NULL;
    if (access(REDIS_SERVER, X_OK) != 0)
        return 0;
    rs = calloc(1, sizeof(*rs));
    if (!rs)
        return -1;
    strcpy(rs->dir, "/tmp/pk_rreply_XXXXXX");
    if (!mkdtemp(rs->dir)) {
        free(rs);
        return -1;
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        rs->port = free_port();
        rs->pid = redis_spawn(rs);
        if (rs->pid > 0 && redis_ready(rs)) {
            *state = rs;
            return 0;
        }
        redis_stop(rs);
    }
    rm_dir(rs->dir);
    free(rs);
    return -1;
}

static int redis_teardown(void **state)
{
    redis *rs = *state;

    if (rs) {
        redis_stop(rs);
        rm_dir(rs->dir);
        free(rs);
    }
    return 0;
}

/* Calls a command of C-string arguments and returns its reply. */
static pk_rr *call(pk_sclient *c, int argc, const char *const *argv)
{
    pk_rr *r = NULL;

    assert_int_equal(pk_sclient_call(c, argc, argv, NULL, &r), PK_OK);
    assert_non_null(r);
    return r;
}

#define CALL(c, ...)                                                           \
    call((c), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)),   \
         (const char *const[]){__VA_ARGS__})

/* Asserts the reply's dump and frees it. */
static void expect_reply(pk_rr *r, const char *want, size_t n)
{
    pk_obuf ob;

    pk_obuf_init(&ob);
    dump(&ob, r);
    expect_buf(&ob, want, n);
    pk_obuf_free(&ob);
    pk_rr_free(r);
}

#define EXPECT_REPLY(r, s) expect_reply((r), L(s))

static void test_sclient_commands(void **state)
{
    redis *rs = *state;
    pk_sclient *c;

    if (!rs)
        skip();
    assert_int_equal(pk_sclient_connect("127.0.0.1", rs->port, 5000, &c),
                     PK_OK);
    EXPECT_REPLY(CALL(c, "PING"), "+PONG\r\n");
    EXPECT_REPLY(CALL(c, "SET", "k", "v"), "+OK\r\n");
    EXPECT_REPLY(CALL(c, "GET", "k"), "$1\r\nv\r\n");
    EXPECT_REPLY(CALL(c, "GET", "nokey"), "_\r\n");
    EXPECT_REPLY(CALL(c, "INCR", "k"),
                 "-ERR value is not an integer or out of range\r\n");
    EXPECT_REPLY(CALL(c, "NOSUCHCMD"),
                 "-ERR unknown command 'NOSUCHCMD', with args beginning "
                 "with: \r\n");
    EXPECT_REPLY(CALL(c, "RPUSH", "l", "a", "b"), ":2\r\n");
    EXPECT_REPLY(CALL(c, "LRANGE", "l", "0", "-1"),
                 "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    EXPECT_REPLY(CALL(c, "BLPOP", "nolist", "0.01"), "_\r\n");

    /* Binary-safe, and larger than one read. */
    enum { N = 1 << 20 };
    char *big = malloc(N);
    assert_non_null(big);
    for (size_t i = 0; i < N; i++)
        big[i] = "ab\r\n\0"[i % 5];
    const char *set[] = {"SET", "big", big};
    const size_t lens[] = {3, 3, N};
    pk_rr *r = NULL;
    assert_int_equal(pk_sclient_call(c, 3, set, lens, &r), PK_OK);
    EXPECT_REPLY(r, "+OK\r\n");
    r = CALL(c, "GET", "big");
    assert_int_equal(r->type, PK_RR_BULK);
    assert_int_equal(r->len, N);
    assert_memory_equal(r->str, big, N);
    pk_rr_free(r);
    free(big);

    /* Bad arguments send nothing and leave the client usable. */
    r = NULL;
    assert_int_equal(pk_sclient_call(c, 0, set, NULL, &r), PK_EINVAL);
    assert_int_equal(pk_sclient_call(c, 1, set, NULL, NULL), PK_EINVAL);
    assert_null(r);
    EXPECT_REPLY(CALL(c, "PING"), "+PONG\r\n");

    /* The server closes after QUIT: later calls fail, stickily. */
    EXPECT_REPLY(CALL(c, "QUIT"), "+OK\r\n");
    assert_int_equal(pk_sclient_call(c, 1, set, NULL, &r), PK_EIO);
    assert_int_equal(pk_sclient_call(c, 1, set, NULL, &r), PK_EIO);
    assert_null(r);
    pk_sclient_free(c);
    pk_sclient_free(NULL);
}

/* Every RESP3 type as redis-server 7.0 sends it (DEBUG PROTOCOL). */
static void test_sclient_resp3(void **state)
{
    redis *rs = *state;
    pk_sclient *c;
    pk_rr *r;

    if (!rs)
        skip();
    assert_int_equal(pk_sclient_connect("localhost", rs->port, 5000, &c),
                     PK_OK);
    r = CALL(c, "HELLO", "3");
    assert_int_equal(r->type, PK_RR_MAP);
    assert_true(r->n >= 3);
    assert_string_equal(r->elems[0].str, "server");
    assert_string_equal(r->elems[1].str, "redis");
    assert_string_equal(r->elems[4].str, "proto");
    assert_int_equal(r->elems[5].integer, 3);
    pk_rr_free(r);
    EXPECT_REPLY(CALL(c, "GET", "nokey"), "_\r\n");
    EXPECT_REPLY(CALL(c, "ZADD", "z", "1.5", "m"), ":1\r\n");
    r = CALL(c, "ZSCORE", "z", "m");
    assert_int_equal(r->type, PK_RR_DOUBLE);
    assert_true(r->dbl == 1.5);
    pk_rr_free(r);
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "string"),
                 "$11\r\nHello World\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "integer"), ":12345\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "double"), ",3.141\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "bignum"),
                 "(1234567999999999999999999999999999999\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "null"), "_\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "array"),
                 "*3\r\n:0\r\n:1\r\n:2\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "set"),
                 "~3\r\n:0\r\n:1\r\n:2\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "map"),
                 "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "true"), "#t\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "false"), "#f\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "verbatim"),
                 "=29\r\ntxt:This is a verbatim\nstring\r\n");
    /* The attribute is dropped; the push message is skipped. */
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "attrib"),
                 "$39\r\nSome real reply following the attribute\r\n");
    EXPECT_REPLY(CALL(c, "DEBUG", "PROTOCOL", "push"),
                 "$40\r\nSome real reply following the push reply\r\n");
    EXPECT_REPLY(CALL(c, "PING"), "+PONG\r\n");
    pk_sclient_free(c);
}

static double elapsed_ms(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
           (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A reply that takes longer than the timeout: PK_EIO, then dead. */
static void test_sclient_timeout(void **state)
{
    redis *rs = *state;
    static const char *const ping[] = {"PING"};
    struct timespec t0;
    pk_sclient *c;
    pk_rr *r = NULL;
    double ms;

    if (!rs)
        skip();
    assert_int_equal(pk_sclient_connect("127.0.0.1", rs->port, 200, &c), PK_OK);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(
        pk_sclient_call(c, 3, (const char *const[]){"BLPOP", "nolist", "5"},
                        NULL, &r),
        PK_EIO);
    ms = elapsed_ms(&t0);
    assert_true(ms >= 190 && ms < 2000);
    assert_null(r);
    assert_int_equal(pk_sclient_call(c, 1, ping, NULL, &r), PK_EIO);
    pk_sclient_free(c);
}

static void test_sclient_no_server(void **state)
{
    (void)state;
    static const char *const ping[] = {"PING"};
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    struct timespec t0;
    pk_sclient *c = NULL;
    pk_rr *r = NULL;
    int fd;

    /* Nothing listens: refused at once. */
    assert_int_equal(pk_sclient_connect("127.0.0.1", free_port(), 500, &c),
                     PK_EIO);
    assert_null(c);
    assert_int_equal(pk_sclient_connect("no.such.host.invalid", 6379, 500, &c),
                     PK_EIO);
    assert_null(c);

    /* A listener that never answers: the call times out. */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(
        pk_sclient_connect("127.0.0.1", ntohs(a.sin_port), 150, &c), PK_OK);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(pk_sclient_call(c, 1, ping, NULL, &r), PK_EIO);
    assert_true(elapsed_ms(&t0) >= 140);
    assert_null(r);
    pk_sclient_free(c);
    close(fd);

    /* Bad arguments. */
    c = NULL;
    assert_int_equal(pk_sclient_connect(NULL, 6379, 100, &c), PK_EINVAL);
    assert_int_equal(pk_sclient_connect("127.0.0.1", 0, 100, &c), PK_EINVAL);
    assert_int_equal(pk_sclient_connect("127.0.0.1", 65536, 100, &c),
                     PK_EINVAL);
    assert_int_equal(pk_sclient_connect("127.0.0.1", 6379, 0, &c), PK_EINVAL);
    assert_int_equal(pk_sclient_connect("127.0.0.1", 6379, 100, NULL),
                     PK_EINVAL);
    assert_null(c);
    assert_int_equal(pk_sclient_call(NULL, 1, ping, NULL, &r), PK_EINVAL);
}

/* A server that sends garbage: PK_EPROTO, then dead. */
static void test_sclient_bad_reply(void **state)
{
    (void)state;
    static const char *const ping[] = {"PING"};
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    pk_sclient *c = NULL;
    pk_rr *r = NULL;
    int lfd, fd;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(
        pk_sclient_connect("127.0.0.1", ntohs(a.sin_port), 2000, &c), PK_OK);
    fd = accept(lfd, NULL, NULL);
    assert_true(fd >= 0);
    /* Queued before the request: the reply is read after sending. */
    assert_int_equal(write(fd, "$-5\r\n", 5), 5);
    assert_int_equal(pk_sclient_call(c, 1, ping, NULL, &r), PK_EPROTO);
    assert_int_equal(pk_sclient_call(c, 1, ping, NULL, &r), PK_EPROTO);
    assert_null(r);
    pk_sclient_free(c);
    close(fd);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resp2_types),
        cmocka_unit_test(test_resp3_types),
        cmocka_unit_test(test_attributes_dropped),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_field_values),
        cmocka_unit_test(test_every_split_point),
        cmocka_unit_test(test_random_chunks),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_declared_huge_allocates_nothing),
        cmocka_unit_test(test_big_reply),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_writer),
        cmocka_unit_test(test_writer_roundtrip),
        cmocka_unit_test_setup_teardown(test_sclient_commands, redis_setup,
                                        redis_teardown),
        cmocka_unit_test_setup_teardown(test_sclient_resp3, redis_setup,
                                        redis_teardown),
        cmocka_unit_test_setup_teardown(test_sclient_timeout, redis_setup,
                                        redis_teardown),
        cmocka_unit_test(test_sclient_no_server),
        cmocka_unit_test(test_sclient_bad_reply),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Tests of the RESP reply writers: the exact bytes of every writer in
 * RESP2 and RESP3 (as redis-server 7.0 sends them), error sanitising,
 * deferred lengths, the output buffer's partial-write bookkeeping, the
 * sticky out-of-memory state, and the hand-written integer formatter
 * against snprintf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <inttypes.h>
#include <math.h>

#include "core/pk_err.h"
#include "core/pk_num.h"
#include "proto/pk_reply.h"

#define L(s) (s), sizeof(s) - 1

/* Checks the pending bytes (printed as strings on failure), then empties
 * the buffer. */
static void expect(pk_obuf *ob, const char *want, size_t n)
{
    char got[512];
    size_t len = pk_obuf_pending(ob);

    assert_int_equal(ob->err, 0);
    assert_true(len < sizeof(got));
    memcpy(got, ob->data + ob->head, len);
    got[len] = '\0';
    if (len != n || memcmp(got, want, n) != 0)
        assert_string_equal(got, want);
    pk_obuf_reset(ob);
}

#define EXPECT(ob, s) expect((ob), L(s))

static void test_simple_and_int(void **state)
{
    (void)state;
    pk_obuf ob;
    pk_obuf_init(&ob);

    assert_int_equal(pk_reply_simple(&ob, "OK"), PK_OK);
    EXPECT(&ob, "+OK\r\n");
    assert_int_equal(pk_reply_simple(&ob, ""), PK_OK);
    EXPECT(&ob, "+\r\n");
    /* CR and LF can never break the stream. */
    assert_int_equal(pk_reply_simple(&ob, "a\r\nb"), PK_OK);
    EXPECT(&ob, "+a  b\r\n");
    assert_int_equal(pk_reply_int(&ob, 0), PK_OK);
    assert_int_equal(pk_reply_int(&ob, -1), PK_OK);
    assert_int_equal(pk_reply_int(&ob, INT64_MAX), PK_OK);
    assert_int_equal(pk_reply_int(&ob, INT64_MIN), PK_OK);
    EXPECT(&ob, ":0\r\n:-1\r\n:9223372036854775807\r\n"
                ":-9223372036854775808\r\n");
    pk_obuf_free(&ob);
}

static void test_errors(void **state)
{
    (void)state;
    pk_obuf ob;
    pk_obuf_init(&ob);

    assert_int_equal(pk_reply_error(&ob, "ERR unknown command"), PK_OK);
    EXPECT(&ob, "-ERR unknown command\r\n");
    assert_int_equal(pk_reply_error(&ob, "-WRONGTYPE Operation"), PK_OK);
    EXPECT(&ob, "-WRONGTYPE Operation\r\n");
    /* Trailing and leading newlines go, inner ones become spaces. */
    assert_int_equal(pk_reply_error(&ob, "\nERR a\r\nb\nc\r\n"), PK_OK);
    EXPECT(&ob, "-ERR a  b c\r\n");
    assert_int_equal(
        pk_reply_errorf(&ob, "MOVED %d %s:%d", 3999, "127.0.0.1", 6381), PK_OK);
    EXPECT(&ob, "-MOVED 3999 127.0.0.1:6381\r\n");
    assert_int_equal(pk_reply_errorf(&ob, "ERR bad\n%s\n", "x"), PK_OK);
    EXPECT(&ob, "-ERR bad x\r\n");

    /* A message longer than the formatter's stack buffer. */
    char arg[300];
    memset(arg, 'z', sizeof(arg) - 1);
    arg[sizeof(arg) - 1] = '\0';
    assert_int_equal(pk_reply_errorf(&ob, "ERR %s!", arg), PK_OK);
    assert_int_equal(pk_obuf_pending(&ob), 1 + 4 + 299 + 1 + 2);
    assert_memory_equal(ob.data + ob.head + 304, "!\r\n", 3);
    pk_obuf_free(&ob);
}

static void test_bulk(void **state)
{
    (void)state;
    pk_obuf ob;
    pk_obuf_init(&ob);

    assert_int_equal(pk_reply_bulk(&ob, "a\0\r\nb", 5), PK_OK);
    EXPECT(&ob, "$5\r\na\0\r\nb\r\n");
    assert_int_equal(pk_reply_bulk(&ob, NULL, 0), PK_OK);
    EXPECT(&ob, "$0\r\n\r\n");
    assert_int_equal(pk_reply_bulk_str(&ob, "hello"), PK_OK);
    EXPECT(&ob, "$5\r\nhello\r\n");

    /* A big value, and the buffer given back once it has been sent. */
    static char big[1 << 20];
    memset(big, 'q', sizeof(big));
    assert_int_equal(pk_reply_bulk(&ob, big, sizeof(big)), PK_OK);
    assert_int_equal(pk_obuf_pending(&ob), 10 + sizeof(big) + 2);
    assert_memory_equal(ob.data, "$1048576\r\nqq", 12);
    pk_obuf_consume(&ob, 1000);
    assert_int_equal(pk_obuf_pending(&ob), 10 + sizeof(big) + 2 - 1000);
    pk_obuf_consume(&ob, SIZE_MAX);
    assert_int_equal(pk_obuf_pending(&ob), 0);
    assert_int_equal(ob.cap, 0);
    pk_obuf_free(&ob);
}

static void test_resp2_resp3_types(void **state)
{
    (void)state;
    pk_obuf ob;
    pk_obuf_init(&ob);

    assert_int_equal(pk_reply_null(&ob, 2), PK_OK);
    EXPECT(&ob, "$-1\r\n");
    assert_int_equal(pk_reply_null(&ob, 3), PK_OK);
    EXPECT(&ob, "_\r\n");
    assert_int_equal(pk_reply_null_array(&ob, 2), PK_OK);
    EXPECT(&ob, "*-1\r\n");
    assert_int_equal(pk_reply_null_array(&ob, 3), PK_OK);
    EXPECT(&ob, "_\r\n");
    assert_int_equal(pk_reply_array(&ob, 0), PK_OK);
    assert_int_equal(pk_reply_array(&ob, 12), PK_OK);
    EXPECT(&ob, "*0\r\n*12\r\n");
    assert_int_equal(pk_reply_map(&ob, 2, 3), PK_OK);
    EXPECT(&ob, "*6\r\n");
    assert_int_equal(pk_reply_map(&ob, 3, 3), PK_OK);
    EXPECT(&ob, "%3\r\n");
    assert_int_equal(pk_reply_set(&ob, 2, 4), PK_OK);
    EXPECT(&ob, "*4\r\n");
    assert_int_equal(pk_reply_set(&ob, 3, 4), PK_OK);
    EXPECT(&ob, "~4\r\n");
    assert_int_equal(pk_reply_bool(&ob, 2, 1), PK_OK);
    assert_int_equal(pk_reply_bool(&ob, 2, 0), PK_OK);
    EXPECT(&ob, ":1\r\n:0\r\n");
    assert_int_equal(pk_reply_bool(&ob, 3, 7), PK_OK);
    assert_int_equal(pk_reply_bool(&ob, 3, 0), PK_OK);
    EXPECT(&ob, "#t\r\n#f\r\n");
    assert_int_equal(pk_reply_verbatim(&ob, 2, "txt", L("Some string")), PK_OK);
    EXPECT(&ob, "$11\r\nSome string\r\n");
    assert_int_equal(pk_reply_verbatim(&ob, 3, "txt", L("Some string")), PK_OK);
    EXPECT(&ob, "=15\r\ntxt:Some string\r\n");
    assert_int_equal(pk_reply_verbatim(&ob, 3, "text", L("x")), PK_EINVAL);
    assert_int_equal(pk_obuf_pending(&ob), 0);
    assert_int_equal(ob.err, 0);
    pk_obuf_free(&ob);
}

static void test_double(void **state)
{
    (void)state;
    pk_obuf ob;
    pk_obuf_init(&ob);

    /* redis-server 7.0 prints scores with "%.17g". */
    assert_int_equal(pk_reply_double(&ob, 2, 1.5), PK_OK);
    EXPECT(&ob, "$3\r\n1.5\r\n");
    assert_int_equal(pk_reply_double(&ob, 2, 0.1), PK_OK);
    EXPECT(&ob, "$19\r\n0.10000000000000001\r\n");
    assert_int_equal(pk_reply_double(&ob, 3, 0.1), PK_OK);
    EXPECT(&ob, ",0.10000000000000001\r\n");
    assert_int_equal(pk_reply_double(&ob, 3, 10), PK_OK);
    EXPECT(&ob, ",10\r\n");
    assert_int_equal(pk_reply_double(&ob, 3, -0.0), PK_OK);
    EXPECT(&ob, ",-0\r\n");
    assert_int_equal(pk_reply_double(&ob, 3, 1e300), PK_OK);
    EXPECT(&ob, ",1.0000000000000001e+300\r\n");
    assert_int_equal(pk_reply_double(&ob, 3, -2.2250738585072014e-308), PK_OK);
    EXPECT(&ob, ",-2.2250738585072014e-308\r\n");
    assert_int_equal(pk_reply_double(&ob, 2, INFINITY), PK_OK);
    assert_int_equal(pk_reply_double(&ob, 2, -INFINITY), PK_OK);
    assert_int_equal(pk_reply_double(&ob, 2, NAN), PK_OK);
    assert_int_equal(pk_reply_double(&ob, 2, -NAN), PK_OK);
    EXPECT(&ob, "$3\r\ninf\r\n$4\r\n-inf\r\n$3\r\nnan\r\n$3\r\nnan\r\n");
    assert_int_equal(pk_reply_double(&ob, 3, INFINITY), PK_OK);
    assert_int_equal(pk_reply_double(&ob, 3, -INFINITY), PK_OK);
    assert_int_equal(pk_reply_double(&ob, 3, -NAN), PK_OK);
    EXPECT(&ob, ",inf\r\n,-inf\r\n,nan\r\n");
    pk_obuf_free(&ob);
}

static void test_format_i64(void **state)
{
    (void)state;
    int64_t v[200];
    size_t n = 0;

    v[n++] = 0;
    v[n++] = INT64_MAX;
    v[n++] = INT64_MIN;
    v[n++] = INT64_MIN + 1;
    v[n++] = INT64_MAX - 1;
    /* Every power of ten, one either side, and their negatives. */
    for (int64_t p = 1; n < 120; p *= 10) {
        v[n++] = p;
        v[n++] = p - 1;
        v[n++] = p + 1;
        v[n++] = -p;
        v[n++] = -p + 1;
        v[n++] = -p - 1;
        if (p > INT64_MAX / 10)
            break;
    }
    uint64_t s = 88172645463325252ULL;
    while (n < sizeof(v) / sizeof(v[0])) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v[n++] = (int64_t)(s >> (s % 64));
    }
    for (size_t i = 0; i < n; i++) {
        char got[PK_I64_CHARS], want[32];
        int wn = snprintf(want, sizeof(want), "%" PRId64, v[i]);
        size_t gn = pk_i64_format(got, v[i]);
        assert_string_equal(got, want);
        assert_int_equal(gn, wn);
    }
}

static void test_deferred(void **state)
{
    (void)state;
    pk_obuf ob;
    size_t outer, inner, pos;
    pk_obuf_init(&ob);

    /* Bytes after the slot move back (few after, many before). */
    assert_int_equal(pk_reply_simple(&ob, "a long reply before the slot"),
                     PK_OK);
    assert_int_equal(pk_reply_defer(&ob, &pos), PK_OK);
    assert_int_equal(pk_reply_int(&ob, 1), PK_OK);
    assert_int_equal(pk_reply_int(&ob, 2), PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, pos, 2, PK_REPLY_ARRAY, 2),
                     PK_OK);
    EXPECT(&ob, "+a long reply before the slot\r\n*2\r\n:1\r\n:2\r\n");

    /* Bytes before the slot move forward (many after, few before). */
    assert_int_equal(pk_reply_simple(&ob, "x"), PK_OK);
    assert_int_equal(pk_reply_defer(&ob, &pos), PK_OK);
    for (int i = 0; i < 10; i++)
        assert_int_equal(pk_reply_bulk_str(&ob, "member"), PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, pos, 3, PK_REPLY_SET, 10),
                     PK_OK);
    assert_int_equal(pk_obuf_pending(&ob), 4 + 5 + 10 * 12);
    assert_memory_equal(ob.data + ob.head, "+x\r\n~10\r\n$6\r\nmember\r\n", 21);

    /* Nested slots, filled innermost first; RESP2 maps count twice. */
    pk_obuf_reset(&ob);
    assert_int_equal(pk_reply_defer(&ob, &outer), PK_OK);
    assert_int_equal(pk_reply_bulk_str(&ob, "k"), PK_OK);
    assert_int_equal(pk_reply_defer(&ob, &inner), PK_OK);
    assert_int_equal(pk_reply_int(&ob, 7), PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, inner, 2, PK_REPLY_ARRAY, 1),
                     PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, outer, 2, PK_REPLY_MAP, 1),
                     PK_OK);
    EXPECT(&ob, "*2\r\n$1\r\nk\r\n*1\r\n:7\r\n");
    assert_int_equal(pk_reply_defer(&ob, &outer), PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, outer, 3, PK_REPLY_MAP, 0),
                     PK_OK);
    EXPECT(&ob, "%0\r\n");

    /* A position that is not a slot, or already filled. */
    assert_int_equal(pk_reply_defer(&ob, &pos), PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, pos + 1, 2, PK_REPLY_ARRAY, 1),
                     PK_EINVAL);
    assert_int_equal(pk_reply_set_deferred(&ob, pos, 2, PK_REPLY_ARRAY, 0),
                     PK_OK);
    assert_int_equal(pk_reply_set_deferred(&ob, pos, 2, PK_REPLY_ARRAY, 0),
                     PK_EINVAL);
    assert_int_equal(pk_reply_set_deferred(&ob, 1000, 2, PK_REPLY_ARRAY, 0),
                     PK_EINVAL);
    EXPECT(&ob, "*0\r\n");
    pk_obuf_free(&ob);
}

static void test_partial_writes(void **state)
{
    (void)state;
    pk_obuf ob;
    char sent[4096];
    size_t nsent = 0;
    pk_obuf_init(&ob);

    /* A socket that takes 7 bytes at a time while replies keep coming:
     * what goes out is exactly what was written, in order. */
    for (int i = 0; i < 100; i++) {
        assert_int_equal(pk_reply_int(&ob, i), PK_OK);
        size_t n = pk_obuf_pending(&ob) < 7 ? pk_obuf_pending(&ob) : 7;
        memcpy(sent + nsent, ob.data + ob.head, n);
        nsent += n;
        pk_obuf_consume(&ob, n);
    }
    memcpy(sent + nsent, ob.data + ob.head, pk_obuf_pending(&ob));
    nsent += pk_obuf_pending(&ob);
    pk_obuf_consume(&ob, pk_obuf_pending(&ob));

    char want[4096];
    size_t nwant = 0;
    for (int i = 0; i < 100; i++)
        nwant +=
            (size_t)snprintf(want + nwant, sizeof(want) - nwant, ":%d\r\n", i);
    assert_int_equal(nsent, nwant);
    assert_memory_equal(sent, want, nwant);
    assert_int_equal(ob.head, 0);
    assert_int_equal(ob.len, 0);
    pk_obuf_free(&ob);
    pk_obuf_free(NULL);
}

static void test_enomem_is_sticky(void **state)
{
    (void)state;
    pk_obuf ob;
    size_t pos = 77;
    pk_obuf_init(&ob);

    assert_int_equal(pk_reply_simple(&ob, "OK"), PK_OK);
    assert_int_equal(pk_obuf_reserve(&ob, SIZE_MAX / 2), PK_ENOMEM);
    assert_int_equal(ob.err, PK_ENOMEM);
    /* Every writer now fails and appends nothing. */
    assert_int_equal(pk_reply_int(&ob, 1), PK_ENOMEM);
    assert_int_equal(pk_reply_bulk(&ob, "x", 1), PK_ENOMEM);
    assert_int_equal(pk_reply_null(&ob, 3), PK_ENOMEM);
    assert_int_equal(pk_reply_error(&ob, "ERR x"), PK_ENOMEM);
    assert_int_equal(pk_reply_double(&ob, 3, 1.0), PK_ENOMEM);
    assert_int_equal(pk_reply_defer(&ob, &pos), PK_ENOMEM);
    assert_int_equal(pos, 77);
    assert_int_equal(pk_obuf_append(&ob, "x", 1), PK_ENOMEM);
    assert_int_equal(pk_obuf_pending(&ob), 5);
    /* Reset starts afresh. */
    pk_obuf_reset(&ob);
    assert_int_equal(pk_reply_simple(&ob, "OK"), PK_OK);
    EXPECT(&ob, "+OK\r\n");
    pk_obuf_free(&ob);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_and_int),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bulk),
        cmocka_unit_test(test_resp2_resp3_types),
        cmocka_unit_test(test_double),
        cmocka_unit_test(test_format_i64),
        cmocka_unit_test(test_deferred),
        cmocka_unit_test(test_partial_writes),
        cmocka_unit_test(test_enomem_is_sticky),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

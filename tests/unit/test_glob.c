/*
 * pk_glob against the behaviour of Redis' stringmatchlen: the cases of
 * Redis' own util tests and KEYS/SCAN MATCH tests, binary input, and the
 * pathological patterns Redis 7 guards against.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store/pk_glob.h"

#define M(p, s) pk_glob_match((p), strlen(p), (s), strlen(s), 0)

static void test_basic(void **state)
{
    (void)state;
    /* As in Redis' stringmatchlen, "*" needs a byte to match; SCAN
     * treats the pattern "*" as no pattern (pk_store_scan does too). */
    assert_false(M("*", ""));
    assert_true(M("*", "anything"));
    assert_true(M("foo*", "foo"));
    assert_true(M("foo*", "foobar"));
    assert_false(M("foo*", "fo"));
    assert_true(M("*bar", "foobar"));
    assert_true(M("f?o", "foo"));
    assert_false(M("f?o", "fo"));
    assert_true(M("h[ae]llo", "hello"));
    assert_true(M("h[ae]llo", "hallo"));
    assert_false(M("h[ae]llo", "hillo"));
    assert_true(M("h[^e]llo", "hallo"));
    assert_false(M("h[^e]llo", "hello"));
    assert_true(M("h[a-b]llo", "hbllo"));
    assert_true(M("h[b-a]llo", "hallo")); /* reversed range */
    assert_false(M("h[a-b]llo", "hcllo"));
    assert_true(M("a\\*b", "a*b"));
    assert_false(M("a\\*b", "axb"));
    assert_true(M("[\\]]", "]"));
    assert_true(M("key:*:x", "key:123:x"));
    assert_false(M("", "a"));
    assert_true(M("", ""));
    assert_true(M("a**b", "ab"));
    assert_true(M("a*", "a"));
}

static void test_redis_edge_cases(void **state)
{
    (void)state;
    /* An unterminated class ends with the pattern (Redis behaviour). */
    assert_true(M("[a", "a"));
    assert_false(M("[a", "b"));
    assert_false(M("a[", "a")); /* the class still wants a byte */
    /* A trailing backslash matches itself. */
    assert_true(M("a\\", "a\\"));
    /* Case folding only when asked. */
    assert_false(M("HELLO", "hello"));
    assert_true(pk_glob_match("HE[L-L]LO", 9, "hello", 5, 1));
    assert_true(pk_glob_match("h*O", 3, "HELLO", 5, 1));
}

static void test_binary(void **state)
{
    (void)state;
    assert_true(pk_glob_match("a\0*", 3, "a\0bc", 4, 0));
    assert_false(pk_glob_match("a\0*", 3, "a\1bc", 4, 0));
    assert_true(pk_glob_match("?\xff", 2, "\0\xff", 2, 0));
}

static void test_pathological_is_fast(void **state)
{
    char pat[200], str[200];

    (void)state;
    /* "a*a*a*...b" against "aaaa..." is exponential without pruning. */
    for (int i = 0; i < 100; i++) {
        pat[2 * i] = 'a';
        pat[2 * i + 1] = '*';
    }
    pat[199] = 'b';
    memset(str, 'a', sizeof(str));
    assert_false(pk_glob_match(pat, sizeof(pat), str, sizeof(str), 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_redis_edge_cases),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_pathological_is_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The command table: sorted (lookup is a binary search), every name found
 * in any case, key positions consistent with arity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "server/pk_cmd.h"

static void test_sorted_and_found(void **state)
{
    size_t n;
    const pk_cmd *t = pk_cmd_table(&n);

    (void)state;
    assert_true(n > 40);
    for (size_t i = 0; i < n; i++) {
        char upper[64];
        size_t len = strlen(t[i].name);
        if (i > 0)
            assert_true(strcmp(t[i - 1].name, t[i].name) < 0);
        assert_ptr_equal(pk_cmd_find(t[i].name, len), &t[i]);
        for (size_t k = 0; k <= len; k++)
            upper[k] = (char)(t[i].name[k] >= 'a' && t[i].name[k] <= 'z'
                                  ? t[i].name[k] - 32
                                  : t[i].name[k]);
        assert_ptr_equal(pk_cmd_find(upper, len), &t[i]);
    }
    assert_null(pk_cmd_find("gets", 4));
    assert_null(pk_cmd_find("ge", 2));
    assert_null(pk_cmd_find("", 0));
}

static void test_key_positions(void **state)
{
    size_t n;
    const pk_cmd *t = pk_cmd_table(&n);

    (void)state;
    for (size_t i = 0; i < n; i++) {
        int need = t[i].arity < 0 ? -t[i].arity : t[i].arity;
        if (t[i].first == 0) {
            assert_int_equal(t[i].last, 0);
            continue;
        }
        assert_true(t[i].step >= 1);
        assert_true(t[i].first < need);
        assert_true(t[i].last < 0 || t[i].last >= t[i].first);
        /* A command with keys is a read or a write, never both; one
         * that only sets connection state (WATCH) is neither, as in
         * Redis. */
        if (t[i].flags & PK_CMD_LOCAL) {
            assert_false(t[i].flags & (PK_CMD_WRITE | PK_CMD_READONLY));
            continue;
        }
        assert_true(!!(t[i].flags & PK_CMD_WRITE) !=
                    !!(t[i].flags & PK_CMD_READONLY));
    }
}

/* argv of C strings, for the key finders. */
static int mkargv(pk_arg *a, const char *const *w)
{
    int n = 0;

    for (; w[n]; n++)
        a[n] = (pk_arg){w[n], strlen(w[n])};
    return n;
}

/* SORT's finder: the source, and the argument after the last STORE, with
 * the arguments of LIMIT, GET and BY skipped (Redis's sortGetKeys). */
static void test_sort_keys(void **state)
{
    static const char *const plain[] = {"sort", "k", "alpha", NULL};
    static const char *const store[] = {"sort",  "k", "STORE", "a",
                                        "store", "b", NULL};
    static const char *const skip[] = {"sort",  "k",     "get",   "store",
                                       "by",    "store", "limit", "store",
                                       "store", "x",     NULL};
    static const char *const last[] = {"sort", "k", "store", NULL};
    pk_arg a[16];
    pk_keyrun r[PK_KEYRUNS_MAX];
    int n;

    (void)state;
    n = mkargv(a, plain);
    assert_int_equal(pk_cmd_keys_sort(n, a, r), 1);
    assert_int_equal(r[0].first, 1);
    assert_int_equal(r[0].last, 1);
    n = mkargv(a, store);
    assert_int_equal(pk_cmd_keys_sort(n, a, r), 2);
    assert_int_equal(r[1].first, 5);
    assert_int_equal(r[1].last, 5);
    n = mkargv(a, skip);
    assert_int_equal(pk_cmd_keys_sort(n, a, r), 1);
    n = mkargv(a, last);
    assert_int_equal(pk_cmd_keys_sort(n, a, r), 1);
    assert_int_equal(pk_cmd_keys_sort(1, a, r), 0);
    assert_int_equal(pk_cmd_keys_sort_ro(n, a, r), 1);
    assert_int_equal(r[0].first, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sorted_and_found),
        cmocka_unit_test(test_key_positions),
        cmocka_unit_test(test_sort_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

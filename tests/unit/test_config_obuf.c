/*
 * client-output-buffer-limit's value, parsed and shown as Redis 7.0's
 * config.c does (updateClientOutputBufferLimit and its CONFIG GET):
 * classes and aliases, units, all-or-nothing errors with Redis's texts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "server/pk_config.h"

#define DEFAULT                                                                \
    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"

static void show(const pk_obuf_limit *lim, char *buf)
{
    pk_config_obuf_format(lim, buf, PK_CONFIG_OBUF_LEN);
}

static void test_default(void **state)
{
    (void)state;
    pk_obuf_limit lim[PK_CLIENT_CLASSES];
    char buf[PK_CONFIG_OBUF_LEN];

    pk_config_obuf_default(lim);
    show(lim, buf);
    assert_string_equal(buf, DEFAULT);
}

static void test_parse(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } v[] = {
        {"", DEFAULT},
        {"replica 1mb 512kb 10", "normal 0 0 0 slave 1048576 524288 10 "
                                 "pubsub 33554432 8388608 60"},
        {"SLAVE 1k 2K 3 Normal 4gb 5b 0",
         "normal 4294967296 5 0 slave 1000 2000 3 pubsub 33554432 8388608 "
         "60"},
        /* The last group of a class wins. */
        {"pubsub 1 1 1 pubsub 2 2 2",
         "normal 0 0 0 slave 268435456 67108864 60 pubsub 2 2 2"},
        /* strtoll's reading of the seconds: an empty token is 0. */
        {"normal 7 8 ", "normal 7 8 0 slave 268435456 67108864 60 pubsub "
                        "33554432 8388608 60"},
        {"normal 7 8 +9", "normal 7 8 9 slave 268435456 67108864 60 pubsub "
                          "33554432 8388608 60"},
        {"normal 18446744073709551615 0 0",
         "normal 18446744073709551615 0 0 slave 268435456 67108864 60 "
         "pubsub 33554432 8388608 60"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        pk_obuf_limit lim[PK_CLIENT_CLASSES];
        char buf[PK_CONFIG_OBUF_LEN];
        const char *why = NULL;

        pk_config_obuf_default(lim);
        assert_int_equal(
            pk_config_obuf_parse(v[i].in, strlen(v[i].in), lim, &why), PK_OK);
        show(lim, buf);
        assert_string_equal(buf, v[i].want);
    }
}

static void test_errors(void **state)
{
    (void)state;
    static const char wrong[] = "Wrong number of arguments in buffer limit "
                                "configuration.",
                      class[] = "Invalid client class specified in buffer "
                                "limit configuration.",
                      value[] = "Error in hard, soft or soft_seconds setting "
                                "in buffer limit configuration.";
    static const struct {
        const char *in, *why;
    } v[] = {
        {"normal", wrong},
        {"normal 0 0", wrong},
        {"normal  0 0 0", wrong}, /* two spaces: an empty token */
        {" normal 0 0 0", wrong},
        {"normal 1 1 1 pubsub 1 1", wrong},
        {"master 0 0 0", class},
        {"replicas 0 0 0", class},
        {"normal 1 1 1 bogus 1 1 1", class},
        {"normal -1 0 0", value},
        {"normal 0 1x 0", value},
        {"normal 0 0 -1", value},
        {"normal 0 0 1s", value},
        {"normal 0 0 1.5", value},
        {"normal 1tb 0 0", value},
        /* Redis saturates this at 2^64 - 1 (strtoull); partkv refuses
         * a memory value past 64 bits for every parameter. */
        {"normal 99999999999999999999 0 0", value},
        /* Redis checks every group before it changes any. */
        {"pubsub 1 1 1 normal x 0 0", value},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        pk_obuf_limit lim[PK_CLIENT_CLASSES];
        char buf[PK_CONFIG_OBUF_LEN];
        const char *why = NULL;

        pk_config_obuf_default(lim);
        assert_int_equal(
            pk_config_obuf_parse(v[i].in, strlen(v[i].in), lim, &why),
            PK_EINVAL);
        assert_non_null(why);
        assert_string_equal(why, v[i].why);
        show(lim, buf);
        assert_string_equal(buf, DEFAULT);
    }
}

/* The longest value fits PK_CONFIG_OBUF_LEN. */
static void test_longest_fits(void **state)
{
    (void)state;
    pk_obuf_limit lim[PK_CLIENT_CLASSES];
    char buf[PK_CONFIG_OBUF_LEN];

    for (int c = 0; c < PK_CLIENT_CLASSES; c++) {
        lim[c].hard = lim[c].soft = UINT64_MAX;
        lim[c].soft_s = INT64_MAX;
    }
    show(lim, buf);
    assert_true(strlen(buf) < sizeof(buf) - 1);
    assert_non_null(strstr(buf, "pubsub 18446744073709551615 "
                                "18446744073709551615 9223372036854775807"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_longest_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

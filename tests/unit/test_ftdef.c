/*
 * Tests of index definitions (core/pk_ftdef.c): FT.CREATE's arguments as
 * python3-redis sends them, and RediSearch-style refusals; FT.ALTER
 * appends or changes nothing; the codec round-trips and refuses every cut
 * and flipped byte it can tell; and how values split into the terms an
 * index holds (words, stop words, tags, numbers).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_ftdef.h"

#define ARGS(...)                                                              \
    (const char *[]){__VA_ARGS__},                                             \
        (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))

/* Parses argv (n of them) as FT.CREATE's arguments after the name. */
static int parse(const char *const *argv, int n, pk_ftdef **d, char *err)
{
    size_t lens[64];

    for (int i = 0; i < n; i++)
        lens[i] = strlen(argv[i]);
    return pk_ftdef_parse("idx", n, argv, lens, d, err, 256);
}

static int alter(pk_ftdef *d, const char *const *argv, int n, char *err)
{
    size_t lens[64];

    for (int i = 0; i < n; i++)
        lens[i] = strlen(argv[i]);
    return pk_ftdef_alter(d, n, argv, lens, err, 256);
}

static void test_create(void **state)
{
    char err[256];
    pk_ftdef *d = NULL;

    (void)state;
    /* What python3-redis sends for TagField, NumericField, TextField. */
    assert_int_equal(
        parse(ARGS("ON", "HASH", "PREFIX", "2", "a:", "b:", "SCHEMA", "color",
                   "TAG", "SEPARATOR", ";", "CASESENSITIVE", "price", "AS", "p",
                   "NUMERIC", "SORTABLE", "title", "TEXT", "WEIGHT", "2.5",
                   "NOSTEM"),
              &d, err),
        0);
    assert_int_equal(d->nprefixes, 2);
    assert_int_equal(d->nfields, 3);
    assert_int_equal(d->fields[0].type, PK_FT_TAG);
    assert_int_equal(d->fields[0].sep, ';');
    assert_true(d->fields[0].casesens);
    assert_string_equal(pk_ftdef_attr(d, 1), "p");
    assert_int_equal(pk_ftdef_find(d, "p", 1), 1);
    assert_int_equal(pk_ftdef_find(d, "price", 5), -1); /* by attribute */
    assert_true(d->fields[1].sortable);
    assert_true(d->fields[2].weight == 2.5);
    assert_true(pk_ftdef_covers(d, "b:1", 3));
    assert_false(pk_ftdef_covers(d, "c:1", 3));
    pk_ftdef_free(d);

    /* No prefix covers every key; option words in any case. */
    assert_int_equal(parse(ARGS("on", "hash", "NOOFFSETS", "stopwords", "0",
                                "schema", "t", "tag"),
                           &d, err),
                     0);
    assert_true(pk_ftdef_covers(d, "", 0));
    pk_ftdef_free(d);
}

static void test_refusals(void **state)
{
    char err[256];
    pk_ftdef *d = NULL;

    (void)state;
    assert_int_equal(parse(ARGS("ON", "JSON", "SCHEMA", "t", "TAG"), &d, err),
                     PK_EINVAL);
    assert_int_equal(parse(ARGS("PREFIX", "1", "a:"), &d, err), PK_EINVAL);
    assert_string_equal(err, "No schema found");
    assert_int_equal(parse(ARGS("SCHEMA"), &d, err), PK_EINVAL);
    assert_int_equal(parse(ARGS("BOGUS", "SCHEMA", "t", "TAG"), &d, err),
                     PK_EINVAL);
    assert_string_equal(err, "Unknown argument `BOGUS`");
    assert_int_equal(parse(ARGS("SCHEMA", "t", "GEO"), &d, err), PK_EINVAL);
    assert_int_equal(parse(ARGS("SCHEMA", "t", "TAG", "t", "TEXT"), &d, err),
                     PK_EINVAL);
    assert_string_equal(err, "Duplicate field in schema - t");
    assert_int_equal(
        parse(ARGS("SCHEMA", "t", "TAG", "SEPARATOR", "ab"), &d, err),
        PK_EINVAL);
    assert_int_equal(
        parse(ARGS("SCHEMA", "t", "TEXT", "WEIGHT", "-1"), &d, err), PK_EINVAL);
    assert_int_equal(
        parse(ARGS("PREFIX", "3", "a", "SCHEMA", "t", "TAG"), &d, err),
        PK_EINVAL);
    assert_int_equal(parse(ARGS("SCHEMA", "t", "AS"), &d, err), PK_EINVAL);
}

static void test_alter(void **state)
{
    char err[256];
    pk_ftdef *d = NULL;

    (void)state;
    assert_int_equal(parse(ARGS("SCHEMA", "t", "TAG"), &d, err), 0);
    assert_int_equal(alter(d, ARGS("n", "NUMERIC", "b", "TEXT"), err), 0);
    assert_int_equal(d->nfields, 3);
    /* A bad field leaves the definition as it was, good ones included. */
    assert_int_equal(alter(d, ARGS("x", "TAG", "t", "TEXT"), err), PK_EINVAL);
    assert_int_equal(d->nfields, 3);
    assert_int_equal(pk_ftdef_find(d, "x", 1), -1);
    pk_ftdef_free(d);
}

static void test_codec(void **state)
{
    char err[256];
    pk_ftdef *d = NULL, *e = NULL;
    uint8_t *buf, *again;
    size_t n;

    (void)state;
    assert_int_equal(
        parse(ARGS("PREFIX", "1", "k\x01:", "SCHEMA", "t", "AS", "tt", "TAG",
                   "SEPARATOR", "|", "n", "NUMERIC", "NOINDEX", "b", "TEXT"),
              &d, err),
        0);
    d->id = 0x0102030405060708ull;
    n = pk_ftdef_encoded_len(d);
    buf = malloc(n);
    again = malloc(n);
    pk_ftdef_encode(d, buf);
    assert_int_equal(pk_ftdef_decode(buf, n, &e), 0);
    assert_true(e->id == d->id);
    assert_string_equal(pk_ftdef_attr(e, 0), "tt");
    assert_true(e->fields[1].noindex);
    assert_int_equal(pk_ftdef_encoded_len(e), n);
    pk_ftdef_encode(e, again);
    assert_memory_equal(buf, again, n);
    pk_ftdef_free(e);
    /* Every cut is refused; so is a trailing byte. */
    for (size_t k = 0; k < n; k++)
        assert_int_equal(pk_ftdef_decode(buf, k, &e), PK_ECORRUPT);
    buf[0] = 2; /* an unknown version */
    assert_int_equal(pk_ftdef_decode(buf, n, &e), PK_ECORRUPT);
    free(buf);
    free(again);
    e = pk_ftdef_dup(d);
    assert_non_null(e);
    assert_int_equal(e->nfields, 3);
    pk_ftdef_free(e);
    pk_ftdef_free(d);
}

typedef struct terms {
    char buf[1024];
    size_t len;
    int n;
} terms;

static int take(void *ctx, const char *term, size_t len)
{
    terms *t = ctx;

    memcpy(t->buf + t->len, term, len);
    t->len += len;
    t->buf[t->len++] = '|';
    t->buf[t->len] = 0;
    t->n++;
    return 0;
}

static void test_terms(void **state)
{
    char buf[PK_FT_TERM_MAX], long_word[300];
    terms t = {.len = 0};
    double x;

    (void)state;
    pk_ft_text_terms("The Quick,brown-fox; is in THE box!", 35, buf, take, &t);
    assert_string_equal(t.buf, "quick|brown|fox|box|");
    t = (terms){.len = 0};
    memset(long_word, 'a', sizeof(long_word));
    pk_ft_text_terms(long_word, sizeof(long_word), buf, take, &t);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.len, PK_FT_TERM_MAX + 1); /* cut */
    t = (terms){.len = 0};
    pk_ft_tag_terms(" Red , blue,,GREEN ", 19, ',', 0, buf, take, &t);
    assert_string_equal(t.buf, "red|blue|green|");
    t = (terms){.len = 0};
    pk_ft_tag_terms("Red;Blue", 8, ';', 1, buf, take, &t);
    assert_string_equal(t.buf, "Red|Blue|");
    assert_true(pk_ft_stopword("the", 3));
    assert_false(pk_ft_stopword("thee", 4));
    assert_true(pk_ft_number("-1.5e3", 6, &x) && x == -1500);
    assert_false(pk_ft_number("nan", 3, &x));
    assert_false(pk_ft_number("inf", 3, &x));
    assert_false(pk_ft_number(" 1", 2, &x));
    assert_false(pk_ft_number("1x", 2, &x));
    assert_false(pk_ft_number("", 0, &x));
    assert_true(pk_ft_number("000000000000000000000000000000000000000000000000"
                             "000000000000000000042",
                             69, &x) &&
                x == 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_alter),  cmocka_unit_test(test_codec),
        cmocka_unit_test(test_terms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

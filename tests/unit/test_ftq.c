/*
 * Tests of the query module (core/pk_ftq.c): RediSearch's error texts
 * for bad queries; DIALECT 2 precedence (OR looser than AND, '-' and
 * '@field:' on one atom); tags with python3-redis escaping, prefixes and
 * case rules; words, prefixes, phrases and stop words; numeric ranges
 * with exclusive and infinite bounds; PARAMS; FILTER; the lookups plan
 * chooses; 10,000-term ORs (parsed, planned and matched in linear time)
 * and 10,000-deep nesting; and a model test: random documents and
 * random queries from a small grammar (wide ORs among them), matched by
 * pk_ftq_match and by a naive evaluator of the query's own tree, with
 * every matching document hit by a lookup of the plan.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_ftdef.h"
#include "core/pk_ftq.h"

/* The schema's fields, in order. */
enum { F_TITLE, F_BODY, F_NOTE, F_TAGS, F_CS, F_PRICE, F_RANK, NF };

static const char *const SCHEMA[] = {
    "ON",        "HASH", "PREFIX",  "1",       "doc:",     "SCHEMA",
    "title",     "TEXT", "body",    "TEXT",    "note",     "TEXT",
    "NOINDEX",   "tags", "TAG",     "cs",      "TAG",      "CASESENSITIVE",
    "SEPARATOR", ";",    "price",   "NUMERIC", "SORTABLE", "rank",
    "AS",        "r",    "NUMERIC", "NOINDEX",
};

static pk_ftdef *def;

static int setup(void **state)
{
    size_t lens[sizeof(SCHEMA) / sizeof(SCHEMA[0])];
    int n = (int)(sizeof(SCHEMA) / sizeof(SCHEMA[0]));
    char err[256];

    (void)state;
    for (int i = 0; i < n; i++)
        lens[i] = strlen(SCHEMA[i]);
    if (pk_ftdef_parse("idx", n, SCHEMA, lens, &def, err, sizeof(err)) != 0) {
        print_error("schema: %s\n", err);
        return -1;
    }
    return def->nfields == NF ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pk_ftdef_free(def);
    return 0;
}

/* ---- helpers ----------------------------------------------------------- */

typedef struct doc {
    const char *v[NF]; /* raw field values; NULL: the hash lacks it */
} doc;

static int doc_get(void *ctx, uint32_t f, const char **val, size_t *len)
{
    const doc *d = ctx;

    if (f >= NF || d->v[f] == NULL)
        return 0;
    *val = d->v[f];
    *len = strlen(d->v[f]);
    return 1;
}

static int parse_p(const char *q, int np, const char *const *names,
                   const char *const *vals, pk_ftq **out, char *err,
                   size_t errcap)
{
    size_t nl[8] = {0}, vl[8] = {0};

    for (int i = 0; i < np; i++) {
        nl[i] = strlen(names[i]);
        vl[i] = strlen(vals[i]);
    }
    return pk_ftq_parse(def, q, strlen(q), np, names, nl, vals, vl, out, err,
                        errcap);
}

static pk_ftq *ok(const char *q)
{
    pk_ftq *x = NULL;
    char err[256] = "";

    if (parse_p(q, 0, NULL, NULL, &x, err, sizeof(err)) != 0) {
        print_error("query \"%.80s\": %s\n", q, err);
        fail();
    }
    return x;
}

static void bad(const char *q, const char *want)
{
    pk_ftq *x = NULL;
    char err[256] = "";

    assert_int_equal(parse_p(q, 0, NULL, NULL, &x, err, sizeof(err)),
                     PK_EINVAL);
    assert_null(x);
    assert_string_equal(err, want);
}

static int hit(const char *q, const doc *d)
{
    pk_ftq *x = ok(q);
    int r = pk_ftq_match(x, doc_get, (void *)d);

    pk_ftq_free(x);
    return r;
}

static int plan(const char *q, pk_ftq_scan *out, int cap)
{
    pk_ftq *x = ok(q);
    int n = pk_ftq_plan(x, out, cap);

    /* The terms are borrowed from x: copy what the callers check. */
    pk_ftq_free(x);
    for (int i = 0; i < n; i++)
        out[i].term = NULL;
    return n;
}

/* ---- errors ------------------------------------------------------------ */

static void test_errors(void **state)
{
    pk_ftq *x = NULL;

    (void)state;
    bad("@nosuch:{x}", "Unknown field at offset 0 near nosuch");
    bad("hello @nosuch:x", "Unknown field at offset 6 near nosuch");
    bad("(red", "Syntax error at offset 0 near (: unbalanced '('");
    bad("red)", "Syntax error at offset 3 near )");
    bad("red | | blue", "Syntax error at offset 6 near |");
    bad("red |", "Syntax error at offset 4 near |");
    bad("()", "Syntax error at offset 1 near )");
    bad("{red}", "Syntax error at offset 0 near {");
    bad("~red", "Syntax error at offset 0 near ~");
    bad("%red%", "Syntax error at offset 0 near %");
    bad("*red", "Syntax error at offset 0 near *: '*' stands alone");
    bad("@title:*", "Syntax error at offset 7 near *: '*' stands alone");
    bad("\"red blue", "Syntax error at offset 0 near \": unterminated phrase");
    bad("red\\", "Syntax error at offset 3 near \\: escape at the end");
    bad("@tags:{red", "Syntax error at offset 6 near {: unterminated tag list");
    bad("@tags:{}", "Syntax error at offset 7 near }: empty tag");
    bad("@tags:{a||b}", "Syntax error at offset 9 near |: empty tag");
    bad("@tags red", "Syntax error at offset 6 near red: expected ':' after "
                     "the field");
    bad("@:red", "Syntax error at offset 0 near @: expected a field name");
    bad("@price:{x}",
        "Syntax error at offset 0 near @price: a NUMERIC field takes [lo hi]");
    bad("@tags:red", "Syntax error at offset 0 near @tags: a TAG field takes "
                     "{tags}");
    bad("@title:{red}",
        "Syntax error at offset 0 near @title: a TEXT field takes words");
    bad("@title:[1 2]",
        "Syntax error at offset 0 near @title: a TEXT field takes words");
    bad("@price:[nan 5]", "Bad lower range: nan");
    bad("@price:[(NaN 5]", "Bad lower range: NaN");
    bad("@price:[1 abc]", "Bad upper range: abc");
    bad("@price:[1 2", "Syntax error at offset 7 near [: expected ']'");
    bad("@price:[1 2 3]", "Syntax error at offset 12 near 3: expected ']'");
    bad("@price:[]", "Syntax error at offset 8 near ]: expected a number");
    bad("$x", "No such parameter `x`");
    bad("@tags:{$x}", "No such parameter `x`");
    bad("@price:[$x 1]", "No such parameter `x`");
    bad("$", "Syntax error at offset 0 near $: a parameter needs a name");

    /* Nothing but blanks and fillers is a query that matches nothing. */
    x = ok("  , . ");
    assert_int_equal(pk_ftq_match(x, doc_get, &(doc){{"x"}}), 0);
    pk_ftq_free(x);
    x = ok("");
    assert_int_equal(pk_ftq_plan(x, NULL, 0), 0);
    pk_ftq_free(x);

    /* A small errcap truncates, and a NULL err is fine. */
    {
        char e[8];
        assert_int_equal(parse_p("(", 0, NULL, NULL, &x, e, sizeof(e)),
                         PK_EINVAL);
        assert_string_equal(e, "Syntax ");
        assert_int_equal(parse_p("(", 0, NULL, NULL, &x, NULL, 0), PK_EINVAL);
    }
}

/* ---- precedence --------------------------------------------------------- */

static void test_precedence(void **state)
{
    doc rg = {{"red green"}}, bc = {{"blue cat"}}, rc = {{"red cat"}};
    doc r = {{"red"}}, b = {{"blue"}};
    doc split = {{"red", "green"}}, swap = {{"green", "red"}};

    (void)state;
    /* OR is looser than AND: (red green) | (blue cat). */
    assert_true(hit("red green | blue cat", &rg));
    assert_true(hit("red green | blue cat", &bc));
    assert_false(hit("red green | blue cat", &rc));
    assert_true(hit("red (green | blue) cat", &rc) == 0);
    assert_true(hit("(red | blue) cat", &rc));

    /* '-' takes one atom. */
    assert_false(hit("-red green", &rg));
    assert_true(hit("-red green", &(doc){{"green"}}));
    assert_false(hit("-red | blue", &r));
    assert_true(hit("-red | blue", &b));
    assert_true(hit("-red | blue", &(doc){{"cat"}}));
    assert_true(hit("--red", &r));
    assert_false(hit("- - - red", &r));
    assert_false(hit("-(red | blue)", &b));

    /* '@field:' takes one atom too. */
    assert_true(hit("@title:red green", &split));
    assert_false(hit("@title:red green", &swap));
    assert_false(hit("@title:(red green)", &split));
    assert_true(hit("@title:(red | green) @body:green", &split));
    assert_true(hit("@body:(-red green)", &split));
    assert_true(hit("@title:(@body:green)", &split));

    /* '*' is every document. */
    assert_true(hit("*", &(doc){{NULL}}));
    assert_true(hit("* red", &r));
    assert_false(hit("* red", &b));
    assert_false(hit("-*", &r));
    assert_true(hit("(*)", &r));
}

/* ---- tags --------------------------------------------------------------- */

static void test_tags(void **state)
{
    doc d = {{NULL}};

    (void)state;
    d.v[F_TAGS] = " New York ,LA,, x-y , hello.world,a b,C++";
    d.v[F_CS] = "Foo Bar; baz ;Q,R";
    assert_true(hit("@tags:{new\\ york}", &d));
    assert_true(hit("@tags:{NEW\\ YORK}", &d));
    assert_true(hit("@tags:{ new york }", &d));
    assert_true(hit("@tags:{la}", &d));
    assert_false(hit("@tags:{l}", &d));
    assert_true(hit("@tags:{x\\-y}", &d));
    assert_true(hit("@tags:{hello\\.world}", &d));
    assert_true(hit("@tags:{a\\ b}", &d));
    assert_true(hit("@tags:{c\\+\\+}", &d));
    assert_false(hit("@tags:{york}", &d));
    assert_true(hit("@tags:{ny | la}", &d));
    assert_false(hit("@tags:{ny | sf}", &d));
    assert_true(hit("@tags:{new*}", &d));
    assert_true(hit("@tags:{New\\ Y*}", &d));
    assert_false(hit("@tags:{york*}", &d));
    assert_false(hit("@tags:{new\\*}", &d)); /* an escaped '*' is a byte */
    bad("@tags:{*}", "Syntax error at offset 7 near *: empty tag");

    /* CASESENSITIVE, with ';' as the separator: ',' is a byte. */
    assert_true(hit("@cs:{Foo\\ Bar}", &d));
    assert_false(hit("@cs:{foo\\ bar}", &d));
    assert_true(hit("@cs:{Fo*}", &d));
    assert_false(hit("@cs:{fo*}", &d));
    assert_true(hit("@cs:{baz}", &d));
    assert_true(hit("@cs:{Q\\,R}", &d));
    assert_true(hit("@cs:{Q,R}", &d));

    /* A tag with the separator in it is no tag a document can hold. */
    d.v[F_TAGS] = "a,b";
    assert_false(hit("@tags:{a\\,b}", &d));
    assert_true(hit("@tags:{a\\,b | b}", &d));
    assert_true(hit("-@tags:{a\\,b}", &d));

    /* No such field in the hash: no positive leaf matches. */
    d.v[F_TAGS] = NULL;
    assert_false(hit("@tags:{a}", &d));
    assert_true(hit("-@tags:{a}", &d));
}

/* ---- words -------------------------------------------------------------- */

static void test_words(void **state)
{
    doc d = {{"The quick brown fox", "jumps over the lazy dog", "secret"}};
    doc th = {{"a theory of the thing"}};

    (void)state;
    assert_true(hit("quick", &d));
    assert_true(hit("QUICK", &d));
    assert_true(hit("@title:quick", &d));
    assert_false(hit("@body:quick", &d));
    assert_true(hit("quick lazy", &d));
    assert_false(hit("quick cat", &d));

    /* Phrases: adjacent, in order, in one field; stop words left out. */
    assert_true(hit("\"quick brown\"", &d));
    assert_true(hit("\"Quick, Brown!\"", &d));
    assert_false(hit("\"brown quick\"", &d));
    assert_false(hit("\"quick fox\"", &d));
    assert_false(hit("\"fox jumps\"", &d));
    assert_true(hit("\"the quick\"", &d));
    assert_true(hit("\"over the lazy\"", &d));
    assert_true(hit("@body:\"over lazy\"", &d));
    assert_false(hit("@title:\"over lazy\"", &d));
    assert_true(hit("\"qui* bro*\"", &d));
    assert_false(hit("\"bro* qui*\"", &d));

    /* An escaped separator joins words into a phrase; a bare one parts
     * them, as RediSearch's lexer does. */
    assert_true(hit("quick\\ brown", &d));
    assert_false(hit("quick\\ fox", &d));
    assert_true(hit("quick.fox", &d));
    assert_true(hit("fox,quick", &d));
    assert_false(hit("quick-fox", &d)); /* quick AND NOT fox */
    assert_true(hit("quick-cat", &d));

    /* Stop words: dropped; a query of nothing else matches nothing. */
    assert_false(hit("the", &d));
    assert_false(hit("\"the of\"", &d));
    assert_true(hit("the quick", &d));
    assert_true(hit("the | quick", &d));
    assert_false(hit("-the", &d));
    assert_true(hit("quick -the", &d));

    /* Prefixes, also of a stop word. */
    assert_true(hit("qui*", &d));
    assert_true(hit("QUI*", &d));
    assert_false(hit("quo*", &d));
    assert_true(hit("the*", &th));
    assert_false(hit("the*", &(doc){{"that one"}}));
    assert_true(hit("@title:thi*", &th));
    assert_true(hit("\"a\\ the*\"", &th)); /* the prefix is "the" */
    assert_true(hit("theory\\ thi*", &th));
    assert_false(hit("theory\\ the*", &th)); /* "thing" follows */
    assert_true(hit("thing\\-*", &th));      /* nothing left to extend */

    /* A NOINDEX TEXT field: only by name. */
    assert_false(hit("secret", &d));
    assert_true(hit("@note:secret", &d));

    /* Terms longer than the index holds compare by their first
     * PK_FT_TERM_MAX bytes, as the index does. */
    {
        char lw[400], q[420];
        memset(lw, 'k', sizeof(lw) - 1);
        lw[sizeof(lw) - 1] = 0;
        snprintf(q, sizeof(q), "%.300s", lw);
        doc l = {{lw}};
        assert_true(hit(q, &l));
    }
}

/* ---- numbers ------------------------------------------------------------ */

static void test_numbers(void **state)
{
    doc d = {{NULL}};

    (void)state;
    d.v[F_PRICE] = "10";
    d.v[F_RANK] = "1.5";
    assert_true(hit("@price:[10 10]", &d));
    assert_true(hit("@price:[10]", &d));
    assert_false(hit("@price:[(10 20]", &d));
    assert_false(hit("@price:[0 (10]", &d));
    assert_true(hit("@price:[(9.5 (10.5]", &d));
    assert_true(hit("@price:[-inf +inf]", &d));
    assert_true(hit("@price:[-INF inf]", &d));
    assert_false(hit("@price:[inf inf]", &d));
    assert_false(hit("@price:[-inf 9.5]", &d));
    assert_true(hit("@price:[5, 15]", &d));
    assert_true(hit("@price:[ 1e1 1e1 ]", &d));
    assert_false(hit("@price:[20 0]", &d));
    assert_true(hit("@r:[1 2]", &d)); /* by alias; NOINDEX still matches */
    bad("@rank:[1 2]", "Unknown field at offset 0 near rank");

    d.v[F_PRICE] = "abc";
    assert_false(hit("@price:[-inf inf]", &d));
    assert_true(hit("-@price:[-inf inf]", &d));
    d.v[F_PRICE] = "nan";
    assert_false(hit("@price:[-inf inf]", &d));
    d.v[F_PRICE] = NULL;
    assert_false(hit("@price:[-inf inf]", &d));
}

/* ---- PARAMS and FILTER -------------------------------------------------- */

static int hit_p(const char *q, const doc *d)
{
    static const char *const names[] = {"w", "t", "lo", "hi", "p", "s"};
    static const char *const vals[] = {"Quick", "New York", "(5",
                                       "+inf",  "qu",       "brown fox"};
    pk_ftq *x = NULL;
    char err[256] = "";
    int r;

    if (parse_p(q, 6, names, vals, &x, err, sizeof(err)) != 0) {
        print_error("query \"%s\": %s\n", q, err);
        fail();
    }
    r = pk_ftq_match(x, doc_get, (void *)d);
    pk_ftq_free(x);
    return r;
}

static void test_params(void **state)
{
    doc d = {{"the quick brown fox"}};
    const char *n1[] = {"w"}, *v1[] = {"abc"};
    pk_ftq *x = NULL;
    char err[256];

    (void)state;
    d.v[F_TAGS] = "new york";
    d.v[F_PRICE] = "10";
    assert_true(hit_p("$w", &d));
    assert_true(hit_p("@title:$w", &d));
    assert_false(hit_p("@body:$w", &d));
    assert_true(hit_p("$p*", &d));
    assert_true(hit_p("$s", &d)); /* a value of many words: a phrase */
    assert_true(hit_p("\"$w $s\"", &d));
    assert_true(hit_p("@tags:{$t}", &d));
    assert_true(hit_p("@tags:{ $t | la }", &d));
    assert_true(hit_p("@tags:{$w | new*}", &d));
    assert_true(hit_p("@price:[$lo $hi]", &d));
    d.v[F_PRICE] = "5";
    assert_false(hit_p("@price:[$lo $hi]", &d));
    assert_true(hit_p("\\$w", &(doc){{"w"}})); /* escaped: a word */

    assert_int_equal(parse_p("@price:[$w 1]", 1, n1, v1, &x, err, sizeof(err)),
                     PK_EINVAL);
    assert_string_equal(err, "Bad lower range: abc");
    assert_int_equal(parse_p("@price:[1 $w]", 1, n1, v1, &x, err, sizeof(err)),
                     PK_EINVAL);
    assert_string_equal(err, "Bad upper range: abc");
    assert_int_equal(parse_p("$nope", 1, n1, v1, &x, err, sizeof(err)),
                     PK_EINVAL);
    assert_string_equal(err, "No such parameter `nope`");
}

static void test_filter(void **state)
{
    doc d = {{"quick"}};
    pk_ftq_scan s[4];
    pk_ftq *x = ok("quick");

    (void)state;
    assert_int_equal(pk_ftq_add_filter(x, F_PRICE, 5, 0, 10, 1), 0);
    d.v[F_PRICE] = "10";
    assert_false(pk_ftq_match(x, doc_get, &d));
    d.v[F_PRICE] = "5";
    assert_true(pk_ftq_match(x, doc_get, &d));
    assert_int_equal(pk_ftq_add_filter(x, F_PRICE, 6, 0, 100, 0), 0);
    assert_false(pk_ftq_match(x, doc_get, &d));
    /* AND(range, range, quick): a range before a word. */
    assert_int_equal(pk_ftq_plan(x, s, 4), 1);
    assert_int_equal(s[0].kind, PK_FTQ_RANGE);
    pk_ftq_free(x);

    /* A field the index lacks: the filter matches nothing. */
    x = ok("quick");
    assert_int_equal(pk_ftq_add_filter(x, NF, 0, 0, 1, 0), 0);
    assert_false(pk_ftq_match(x, doc_get, &d));
    assert_int_equal(pk_ftq_plan(x, s, 4), 2);
    pk_ftq_free(x);

    x = ok("*");
    assert_int_equal(pk_ftq_plan(x, s, 4), 0);
    assert_int_equal(pk_ftq_add_filter(x, F_PRICE, 1, 1, 2, 0), 0);
    assert_int_equal(pk_ftq_plan(x, s, 4), 1);
    assert_int_equal(s[0].kind, PK_FTQ_RANGE);
    assert_int_equal(s[0].field, F_PRICE);
    assert_true(s[0].lo == 1 && s[0].lo_excl && s[0].hi == 2 && !s[0].hi_excl);
    pk_ftq_free(x);

    /* A query of stop words stays empty under a filter. */
    x = ok("the");
    assert_int_equal(pk_ftq_add_filter(x, F_PRICE, 0, 0, 100, 0), 0);
    assert_false(pk_ftq_match(x, doc_get, &d));
    pk_ftq_free(x);
}

/* ---- plan --------------------------------------------------------------- */

static void test_plan(void **state)
{
    pk_ftq_scan s[8];
    pk_ftq *x;

    (void)state;
    /* AND: an exact tag before a range before a word. */
    assert_int_equal(plan("quick @price:[1 2] @tags:{a}", s, 8), 1);
    assert_int_equal(s[0].kind, PK_FTQ_EXACT);
    assert_int_equal(s[0].field, F_TAGS);
    assert_int_equal(plan("quick @price:[1 2]", s, 8), 1);
    assert_int_equal(s[0].kind, PK_FTQ_RANGE);
    assert_int_equal(plan("-@tags:{a} @price:[1 2]", s, 8), 1);
    assert_int_equal(s[0].kind, PK_FTQ_RANGE);

    /* A word: one lookup per indexed TEXT field (not NOINDEX note). */
    x = ok("QUICK");
    assert_int_equal(pk_ftq_plan(x, s, 8), 2);
    assert_int_equal(s[0].kind, PK_FTQ_EXACT);
    assert_int_equal(s[0].field, F_TITLE);
    assert_int_equal(s[1].field, F_BODY);
    assert_int_equal(s[0].len, 5);
    assert_memory_equal(s[0].term, "quick", 5);
    pk_ftq_free(x);
    assert_int_equal(plan("@body:quick", s, 8), 1);
    assert_int_equal(s[0].field, F_BODY);
    x = ok("\"qui* brown\"");
    assert_int_equal(pk_ftq_plan(x, s, 8), 2);
    assert_int_equal(s[0].kind, PK_FTQ_EXACT);
    assert_memory_equal(s[0].term, "brown", 5);
    pk_ftq_free(x);
    x = ok("@tags:{Ab*}");
    assert_int_equal(pk_ftq_plan(x, s, 8), 1);
    assert_int_equal(s[0].kind, PK_FTQ_PREFIX);
    assert_int_equal(s[0].len, 2);
    assert_memory_equal(s[0].term, "ab", 2);
    pk_ftq_free(x);

    /* OR: the union. */
    assert_int_equal(plan("quick | @tags:{a|b}", s, 8), 4);
    assert_int_equal(plan("(@tags:{a} red) | @price:[1 2]", s, 8), 2);
    assert_int_equal(s[0].kind, PK_FTQ_EXACT);
    assert_int_equal(s[1].kind, PK_FTQ_RANGE);

    /* NOT and '*': walk everything, unless an AND bounds them. */
    assert_int_equal(plan("-quick", s, 8), 0);
    assert_int_equal(plan("*", s, 8), 0);
    assert_int_equal(plan("quick | -fox", s, 8), 0);
    assert_int_equal(plan("quick | *", s, 8), 0);
    assert_int_equal(plan("-quick @tags:{a}", s, 8), 1);
    assert_int_equal(plan("* @tags:{a}", s, 8), 1);

    /* NOINDEX fields have no entries: they bound nothing. */
    assert_int_equal(plan("@note:secret", s, 8), 0);
    assert_int_equal(plan("@r:[1 2]", s, 8), 0);
    assert_int_equal(plan("@r:[1 2] @price:[1 2]", s, 8), 1);
    assert_int_equal(s[0].field, F_PRICE);

    /* Over the cap: -1; a query that matches nothing: 0. */
    assert_int_equal(plan("@tags:{a|b|c}", s, 2), -1);
    assert_int_equal(plan("@tags:{a|b|c}", s, 3), 3);
    assert_int_equal(plan("quick", NULL, 0), -1);
    assert_int_equal(plan("the", s, 8), 0);
    assert_int_equal(plan("@tags:{a\\,b} quick", s, 8), 2);
}

/* ---- size and depth ----------------------------------------------------- */

static char *repeat_join(const char *pre, const char *fmt, const char *sep,
                         int n, const char *post)
{
    size_t cap = strlen(pre) + strlen(post) + (size_t)n * 24 + 1, len = 0;
    char *s = malloc(cap);

    assert_non_null(s);
    len += (size_t)snprintf(s, cap, "%s", pre);
    for (int i = 0; i < n; i++) {
        if (i > 0)
            len += (size_t)snprintf(s + len, cap - len, "%s", sep);
        len += (size_t)snprintf(s + len, cap - len, fmt, i);
    }
    snprintf(s + len, cap - len, "%s", post);
    return s;
}

static void test_big(void **state)
{
    static pk_ftq_scan s[20000];
    doc d = {{"zzz a9999"}};
    clock_t t0 = clock();
    char *q;
    pk_ftq *x;

    (void)state;
    d.v[F_TAGS] = "a9999";
    q = repeat_join("@tags:{", "a%d", "|", 10000, "}");
    x = ok(q);
    assert_int_equal(pk_ftq_plan(x, s, 20000), 10000);
    assert_int_equal(pk_ftq_plan(x, s, 9999), -1);
    assert_true(pk_ftq_match(x, doc_get, &d));
    pk_ftq_free(x);
    free(q);

    q = repeat_join("", "a%d", "|", 10000, "");
    x = ok(q);
    assert_int_equal(pk_ftq_plan(x, s, 20000), 20000);
    assert_true(pk_ftq_match(x, doc_get, &d));

    /* Matching reads each field once, not once per operand. */
    d.v[F_TITLE] = "zzz yyy xxx www vvv uuu ttt sss";
    for (int i = 0; i < 2000; i++)
        assert_false(pk_ftq_match(x, doc_get, &d));
    pk_ftq_free(x);
    free(q);

    q = repeat_join("", "a%d", " ", 10000, "");
    x = ok(q);
    assert_false(pk_ftq_match(x, doc_get, &d));
    pk_ftq_free(x);
    free(q);
    /* All of that in well under a second (it is linear). */
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 2.0);

    q = repeat_join("", "a%d", " ", 60000, "");
    bad(q, "Query too complex: more than 100000 nodes and terms");
    free(q);
    q = repeat_join("\"", "a%d", " ", 65, "\"");
    bad(q, "Syntax error at offset 0 near \": phrase of more than 64 words");
    free(q);
    q = repeat_join("\"", "a%d", " ", 64, "\"");
    pk_ftq_free(ok(q));
    free(q);
}

/* "red" inside k parentheses, in q (2 * k + 4 bytes). */
static char *nested(char *q, int k)
{
    memset(q, '(', (size_t)k);
    memcpy(q + k, "red", 3);
    memset(q + k + 3, ')', (size_t)k);
    q[2 * k + 3] = 0;
    return q;
}

static void test_deep(void **state)
{
    char *q = malloc(80008);
    doc d = {{"red"}};
    size_t n = 0;

    (void)state;
    assert_non_null(q);
    bad(nested(q, 10000),
        "Syntax error at offset 64 near (: nested deeper than 64");
    bad(nested(q, 65), "Syntax error at offset 64 near (: nested deeper than "
                       "64");
    assert_true(hit(nested(q, 64), &d));
    nested(q, 20)[23] = 0; /* no ')' */
    bad(q, "Syntax error at offset 19 near (: unbalanced '('");

    /* Field modifiers nest too. */
    for (int i = 0; i < 10000; i++)
        n += (size_t)sprintf(q + n, "@title:");
    sprintf(q + n, "red");
    bad(q, "Syntax error at offset 448 near @title: nested deeper than 64");

    /* A '-' chain is a loop, not nesting. */
    memset(q, '-', 10001);
    strcpy(q + 10001, "red");
    assert_false(hit(q, &d));
    assert_true(hit(q + 1, &d));
    free(q);
}

/* ---- the model test ----------------------------------------------------- */

/*
 * Documents are built from known words, so the test knows their terms
 * without tokenising: TEXT values are vocabulary words in random case
 * between random separators, TAG values known tags between separators
 * and blanks, NUMERIC values known strings.  Queries are trees of the
 * test's own (qn), rendered to a string, and evaluated by eval() on the
 * known terms, with RediSearch's rule for stop words: they drop out of
 * AND, OR and phrases, NOT of nothing is nothing, and nothing at the top
 * matches no document.
 */

static const char *const WORDS[] = {"red", "green", "blue",   "cat",
                                    "dog", "fast",  "theory", "the",
                                    "of",  "then",  "redo",   "category"};
#define NWORDS (int)(sizeof(WORDS) / sizeof(WORDS[0]))
static const char *const TAGS[] = {"new york", "la",   "sf",
                                   "x-y",      "blue", "new"};
#define NTAGS (int)(sizeof(TAGS) / sizeof(TAGS[0]))
static const char *const CSTAGS[] = {"New York", "new york", "LA",
                                     "la",       "x-y",      "X-Y"};
#define NCSTAGS (int)(sizeof(CSTAGS) / sizeof(CSTAGS[0]))
static const char *const NUMS[] = {"-3", "0", "1", "2", "2.5", "5", "abc", ""};
#define NNUMS (int)(sizeof(NUMS) / sizeof(NUMS[0]))

#define MAXT 8

typedef struct mdoc {
    char v[NF][128];
    int has[NF];
    int nt[NF];              /* terms (TEXT) or tags (TAG) */
    const char *t[NF][MAXT]; /* normalised, static strings or own */
    char own[NF][MAXT][16];  /* tags as the field normalises them */
    int numeric;             /* price is a number */
    double num;
} mdoc;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int pick(uint64_t *s, int n)
{
    return (int)(rnd(s) % (uint64_t)n);
}

static int stopword(const char *w)
{
    return pk_ft_stopword(w, strlen(w));
}

/* w in a random case. */
static void cased(uint64_t *s, const char *w, char *out)
{
    int how = pick(s, 3);
    size_t i;

    for (i = 0; w[i]; i++) {
        char c = w[i];
        if (how == 1 || (how == 2 && i == 0))
            c = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
        out[i] = c;
    }
    out[i] = 0;
}

static void lower(const char *w, char *out)
{
    size_t i;

    for (i = 0; w[i]; i++)
        out[i] = (w[i] >= 'A' && w[i] <= 'Z') ? (char)(w[i] + 32) : w[i];
    out[i] = 0;
}

static void gen_text(uint64_t *s, mdoc *d, int f)
{
    static const char *const SEP[] = {" ", ", ", "-", ". ", "  ", "|"};
    int n = pick(s, 6);
    size_t len = 0;

    for (int i = 0; i < n; i++) {
        const char *w = WORDS[pick(s, NWORDS)];
        char c[32];
        cased(s, w, c);
        len +=
            (size_t)sprintf(d->v[f] + len, "%s%s", i ? SEP[pick(s, 6)] : "", c);
        if (!stopword(w))
            d->t[f][d->nt[f]++] = w;
    }
}

static void gen_tags(uint64_t *s, mdoc *d, int f)
{
    int n = pick(s, 4), cs = f == F_CS;
    char sep = cs ? ';' : ',';
    size_t len = 0;

    for (int i = 0; i < n; i++) {
        const char *t = cs ? CSTAGS[pick(s, NCSTAGS)] : TAGS[pick(s, NTAGS)];
        char c[32];
        if (cs)
            strcpy(c, t);
        else
            cased(s, t, c);
        len += (size_t)sprintf(
            d->v[f] + len, "%s%s%s%s", i ? (pick(s, 4) ? "" : " ") : "",
            pick(s, 3) ? "" : " ", c, pick(s, 3) ? "" : "  ");
        if (cs)
            strcpy(d->own[f][d->nt[f]], c);
        else
            lower(c, d->own[f][d->nt[f]]);
        d->t[f][d->nt[f]] = d->own[f][d->nt[f]];
        d->nt[f]++;
        if (i + 1 < n)
            len += (size_t)sprintf(d->v[f] + len, "%c%s", sep,
                                   pick(s, 5) ? "" : &"  "[pick(s, 2)]);
    }
    if (n > 0 && pick(s, 5) == 0) /* an empty tag at the end */
        sprintf(d->v[f] + len, "%c ", sep);
}

static void gen_doc(uint64_t *s, mdoc *d)
{
    memset(d, 0, sizeof(*d));
    for (int f = 0; f < NF; f++) {
        if (pick(s, 5) == 0)
            continue;
        d->has[f] = 1;
        if (f <= F_NOTE)
            gen_text(s, d, f);
        else if (f <= F_CS)
            gen_tags(s, d, f);
        else {
            const char *v = NUMS[pick(s, NNUMS)];
            strcpy(d->v[f], v);
            if (f == F_PRICE && v[0] && strcmp(v, "abc") != 0) {
                d->numeric = 1;
                d->num = strtod(v, NULL);
            }
        }
    }
}

static int mdoc_get(void *ctx, uint32_t f, const char **val, size_t *len)
{
    const mdoc *d = ctx;

    if (f >= NF || !d->has[f])
        return 0;
    *val = d->v[f];
    *len = strlen(d->v[f]);
    return 1;
}

/* A query tree of the test's own. */
enum { Q_WORD, Q_PHRASE, Q_TAG, Q_RANGE, Q_NOT, Q_AND, Q_OR, Q_ALL };

typedef struct qn {
    int kind, field; /* WORD, PHRASE: -1 any TEXT field */
    int n;           /* words, tags, or operands */
    const char *w[3];
    int prefix[3]; /* WORD, TAG: a prefix of w of plen bytes */
    size_t plen[3];
    int param[3]; /* given as $pN */
    double lo, hi;
    int lx, hx, lparam, hparam;
    struct qn *kid[12];
} qn;

typedef struct qgen {
    uint64_t *s;
    char names[16][8];
    char vals[16][48];
    int np;
} qgen;

/* A PARAMS entry for value v: its name. */
static const char *add_param(qgen *g, const char *v)
{
    snprintf(g->names[g->np], sizeof(g->names[0]), "p%d", g->np);
    snprintf(g->vals[g->np], sizeof(g->vals[0]), "%s", v);
    return g->names[g->np++];
}

static qn *gen_q(qgen *g, int depth);

static void gen_words(qgen *g, qn *q, int n)
{
    q->n = n;
    for (int i = 0; i < n; i++) {
        q->w[i] = WORDS[pick(g->s, NWORDS)];
        if (pick(g->s, 4) == 0) {
            q->prefix[i] = 1;
            q->plen[i] = 1 + (size_t)pick(g->s, (int)strlen(q->w[i]));
        }
        q->param[i] = g->np < 12 && pick(g->s, 6) == 0;
    }
}

static void gen_tag_q(qgen *g, qn *q)
{
    q->field = pick(g->s, 2) ? F_TAGS : F_CS;
    q->n = 1 + pick(g->s, 3);
    for (int i = 0; i < q->n; i++) {
        q->w[i] = q->field == F_CS ? CSTAGS[pick(g->s, NCSTAGS)]
                                   : TAGS[pick(g->s, NTAGS)];
        if (pick(g->s, 4) == 0) {
            size_t l = 1 + (size_t)pick(g->s, (int)strlen(q->w[i]));
            while (l > 1 && q->w[i][l - 1] == ' ')
                l--;
            q->prefix[i] = 1;
            q->plen[i] = l;
        }
        q->param[i] = g->np < 12 && !q->prefix[i] && pick(g->s, 6) == 0;
    }
}

static double gen_bound(qgen *g)
{
    int r = pick(g->s, 12);

    if (r == 0)
        return -INFINITY;
    if (r == 1)
        return INFINITY;
    return (double)(r - 6) / (pick(g->s, 3) ? 1 : 2);
}

static qn *gen_q(qgen *g, int depth)
{
    qn *q = calloc(1, sizeof(*q));
    int k = pick(g->s, depth >= 3 ? 4 : 9);

    assert_non_null(q);
    q->field = -1;
    switch (k) {
    case 0:
    case 1:
        q->kind = Q_WORD;
        q->field = pick(g->s, 3) ? -1 : pick(g->s, 3); /* title body note */
        gen_words(g, q, 1);
        break;
    case 2:
        q->kind = Q_PHRASE;
        q->field = pick(g->s, 2) ? -1 : pick(g->s, 2);
        gen_words(g, q, 2 + pick(g->s, 2));
        break;
    case 3:
        if (pick(g->s, 2)) {
            q->kind = Q_TAG;
            gen_tag_q(g, q);
        } else {
            q->kind = Q_RANGE;
            q->field = F_PRICE;
            q->lo = gen_bound(g);
            q->hi = gen_bound(g);
            q->lx = pick(g->s, 3) == 0;
            q->hx = pick(g->s, 3) == 0;
            q->lparam = g->np < 12 && pick(g->s, 5) == 0;
            q->hparam = g->np < 12 && pick(g->s, 5) == 0;
        }
        break;
    case 4:
        q->kind = Q_NOT;
        q->n = 1;
        q->kid[0] = gen_q(g, depth + 1);
        break;
    case 5:
    case 6:
    case 7:
        q->kind = k == 7 ? Q_OR : pick(g->s, 2) ? Q_AND : Q_OR;
        q->n = 2 + pick(g->s, 2);
        if (q->kind == Q_OR && pick(g->s, 3) == 0) { /* wide: keyed */
            q->n = 8 + pick(g->s, 5);
            for (int i = 0; i < q->n; i++)
                q->kid[i] = gen_q(g, 3);
            break;
        }
        for (int i = 0; i < q->n; i++)
            q->kid[i] = gen_q(g, depth + 1);
        break;
    default:
        q->kind = pick(g->s, 3) ? Q_OR : Q_ALL;
        if (q->kind == Q_OR) {
            q->n = 2;
            for (int i = 0; i < 2; i++)
                q->kid[i] = gen_q(g, depth + 1);
        }
        break;
    }
    return q;
}

static void free_q(qn *q)
{
    for (int i = 0; q->kind >= Q_NOT && i < q->n; i++)
        free_q(q->kid[i]);
    free(q);
}

/* ---- rendering ---------------------------------------------------------- */

typedef struct out {
    char *s;
    size_t len, cap;
} out;

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(o->s + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < o->cap - o->len)
            break;
        o->cap = o->cap * 2 + (size_t)n;
        o->s = realloc(o->s, o->cap);
        assert_non_null(o->s);
    }
    o->len += (size_t)n;
}

static const char *const FIELD_NAMES[] = {"title", "body",  "note", "tags",
                                          "cs",    "price", "r"};

/* A tag as python3-redis writes it: punctuation and blanks escaped. */
static void put_tag(out *o, const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(o, "%s%c", (t[i] == ' ' || t[i] == '-') ? "\\" : "", t[i]);
}

static void put_bound(qgen *g, out *o, double v, int excl, int param)
{
    char b[32];

    if (isinf(v))
        snprintf(b, sizeof(b), "%s%sinf", excl ? "(" : "",
                 v < 0 ? "-" : (pick(g->s, 2) ? "+" : ""));
    else
        snprintf(b, sizeof(b), "%s%g", excl ? "(" : "", v);
    if (param)
        put(o, "$%s", add_param(g, b));
    else
        put(o, "%s", b);
}

static void render(qgen *g, out *o, const qn *q, int parent);

static void render_word(qgen *g, out *o, const qn *q, int i)
{
    char c[32];

    cased(g->s, q->w[i], c);
    if (q->prefix[i])
        c[q->plen[i]] = 0;
    if (q->param[i])
        put(o, "$%s", add_param(g, c));
    else
        put(o, "%s", c);
    if (q->prefix[i])
        put(o, "*");
}

static void render_leaf(qgen *g, out *o, const qn *q)
{
    if (q->field >= 0)
        put(o, "@%s:", FIELD_NAMES[q->field]);
    switch (q->kind) {
    case Q_WORD:
        render_word(g, o, q, 0);
        break;
    case Q_PHRASE:
        put(o, "\"");
        for (int i = 0; i < q->n; i++) {
            put(o, i ? " " : "");
            render_word(g, o, q, i);
        }
        put(o, "\"");
        break;
    case Q_TAG:
        put(o, "{");
        for (int i = 0; i < q->n; i++) {
            char c[32];
            put(o, i ? (pick(g->s, 2) ? " | " : "|") : "");
            if (q->field == F_CS)
                strcpy(c, q->w[i]);
            else
                cased(g->s, q->w[i], c);
            if (q->param[i])
                put(o, "$%s", add_param(g, c));
            else
                put_tag(o, c, q->prefix[i] ? q->plen[i] : strlen(c));
            if (q->prefix[i])
                put(o, "*");
        }
        put(o, "}");
        break;
    default:
        put(o, "[");
        put_bound(g, o, q->lo, q->lx, q->lparam);
        put(o, " ");
        put_bound(g, o, q->hi, q->hx, q->hparam);
        put(o, "]");
        break;
    }
}

/* Parentheses where the precedence needs them (an OR inside an AND, any
 * compound under '-'), and now and then where it does not. */
static void render(qgen *g, out *o, const qn *q, int parent)
{
    int paren = (q->kind == Q_OR && parent == Q_AND) ||
                (q->kind >= Q_AND && q->kind <= Q_OR && parent == Q_NOT) ||
                pick(g->s, 8) == 0;

    if (paren)
        put(o, "(");
    if (q->kind == Q_NOT) {
        put(o, "-");
        render(g, o, q->kid[0], Q_NOT);
    } else if (q->kind == Q_AND || q->kind == Q_OR) {
        for (int i = 0; i < q->n; i++) {
            if (i)
                put(o, q->kind == Q_OR ? " | " : " ");
            render(g, o, q->kid[i], q->kind);
        }
    } else if (q->kind == Q_ALL) {
        put(o, "*");
    } else {
        render_leaf(g, o, q);
    }
    if (paren)
        put(o, ")");
}

/* ---- the naive evaluator ----------------------------------------------- */

enum { V_FALSE, V_TRUE, V_EMPTY };

static int term_is(const char *doc_t, const char *w, int prefix, size_t plen)
{
    char lw[32];

    lower(w, lw);
    if (prefix)
        return strncmp(doc_t, lw, plen) == 0;
    return strcmp(doc_t, lw) == 0;
}

/* The words of q that stay in the query: prefixes always, other words
 * unless they are stop words. */
static int kept(const qn *q, int i)
{
    return q->prefix[i] || !stopword(q->w[i]);
}

static int phrase_in(const mdoc *d, int f, const qn *q)
{
    int idx[3], m = 0;

    for (int i = 0; i < q->n; i++)
        if (kept(q, i))
            idx[m++] = i;
    for (int st = 0; st + m <= d->nt[f]; st++) {
        int k = 0;
        while (k < m && term_is(d->t[f][st + k], q->w[idx[k]],
                                q->prefix[idx[k]], q->plen[idx[k]]))
            k++;
        if (k == m)
            return 1;
    }
    return 0;
}

static int eval_text(const qn *q, const mdoc *d)
{
    int any = 0;

    for (int i = 0; i < q->n; i++)
        any |= kept(q, i);
    if (!any)
        return V_EMPTY;
    for (int f = F_TITLE; f <= F_NOTE; f++) {
        if (q->field >= 0 ? f != q->field : f == F_NOTE)
            continue;
        if (d->has[f] && phrase_in(d, f, q))
            return V_TRUE;
    }
    return V_FALSE;
}

static int eval_tag(const qn *q, const mdoc *d)
{
    int f = q->field;

    for (int i = 0; i < q->n; i++) {
        char w[32];
        size_t n = q->prefix[i] ? q->plen[i] : strlen(q->w[i]);
        if (f == F_CS)
            strcpy(w, q->w[i]);
        else
            lower(q->w[i], w);
        for (int k = 0; d->has[f] && k < d->nt[f]; k++)
            if (q->prefix[i] ? strncmp(d->t[f][k], w, n) == 0
                             : strcmp(d->t[f][k], w) == 0)
                return V_TRUE;
    }
    return V_FALSE;
}

static int in_range(double v, double lo, int lx, double hi, int hx)
{
    return (lx ? v > lo : v >= lo) && (hx ? v < hi : v <= hi);
}

static int eval(const qn *q, const mdoc *d)
{
    int r, seen = 0, yes = 0, no = 0;

    switch (q->kind) {
    case Q_WORD:
    case Q_PHRASE:
        return eval_text(q, d);
    case Q_TAG:
        return eval_tag(q, d);
    case Q_RANGE:
        return d->has[F_PRICE] && d->numeric &&
               in_range(d->num, q->lo, q->lx, q->hi, q->hx);
    case Q_NOT:
        r = eval(q->kid[0], d);
        return r == V_EMPTY ? V_EMPTY : !r;
    case Q_ALL:
        return V_TRUE;
    default:
        for (int i = 0; i < q->n; i++) {
            if ((r = eval(q->kid[i], d)) == V_EMPTY)
                continue;
            seen = 1;
            yes |= r == V_TRUE;
            no |= r == V_FALSE;
        }
        if (!seen)
            return V_EMPTY;
        return q->kind == Q_AND ? !no : yes;
    }
}

/* 1 when lookup s finds d: the document's normalised terms or number,
 * as the index would hold them, checked without pk_ftq. */
static int scan_finds(const pk_ftq_scan *s, const mdoc *d)
{
    uint32_t f = s->field;

    assert_true(f < NF);
    if (!d->has[f])
        return 0;
    if (s->kind == PK_FTQ_RANGE)
        return f == F_PRICE && d->numeric &&
               in_range(d->num, s->lo, s->lo_excl, s->hi, s->hi_excl);
    assert_true(s->kind == PK_FTQ_EXACT || s->kind == PK_FTQ_PREFIX);
    for (int k = 0; k < d->nt[f]; k++) {
        size_t n = strlen(d->t[f][k]);
        if (s->kind == PK_FTQ_EXACT ? n == s->len : n >= s->len)
            if (memcmp(d->t[f][k], s->term, s->len) == 0)
                return 1;
    }
    return 0;
}

static pk_ftq *model_parse(qgen *g, const char *text)
{
    const char *names[16], *vals[16];
    size_t nl[16], vl[16];
    pk_ftq *x = NULL;
    char err[256] = "";

    for (int i = 0; i < g->np; i++) {
        names[i] = g->names[i];
        vals[i] = g->vals[i];
        nl[i] = strlen(names[i]);
        vl[i] = strlen(vals[i]);
    }
    if (pk_ftq_parse(def, text, strlen(text), g->np, names, nl, vals, vl, &x,
                     err, sizeof(err)) != 0) {
        print_error("query \"%s\": %s\n", text, err);
        fail();
    }
    return x;
}

#define NDOCS 48

static void test_model(void **state)
{
    static mdoc docs[NDOCS];
    static pk_ftq_scan scans[512];
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    long matched = 0, planned = 0, checked = 0;

    (void)state;
    for (int it = 0; it < 6000; it++) {
        qgen g = {&s, {{0}}, {{0}}, 0};
        qn *q;
        out o = {NULL, 0, 0};
        pk_ftq *x;
        int n, filter = pick(&s, 6) == 0;
        double flo = gen_bound(&g), fhi = gen_bound(&g);

        if (it % 200 == 0)
            for (int i = 0; i < NDOCS; i++)
                gen_doc(&s, &docs[i]);
        q = gen_q(&g, 0);
        o.cap = 64;
        o.s = malloc(o.cap);
        assert_non_null(o.s);
        render(&g, &o, q, -1);
        x = model_parse(&g, o.s);
        if (filter)
            assert_int_equal(pk_ftq_add_filter(x, F_PRICE, flo, 0, fhi, 1), 0);
        n = pk_ftq_plan(x, scans, 512);
        assert_true(n >= -1 && n <= 512);
        planned += n > 0;
        for (int i = 0; i < NDOCS; i++) {
            const mdoc *d = &docs[i];
            int want = eval(q, d) == V_TRUE, got, found = 0;
            if (filter)
                want = want && d->has[F_PRICE] && d->numeric &&
                       in_range(d->num, flo, 0, fhi, 1);
            got = pk_ftq_match(x, mdoc_get, (void *)d);
            if (got != want) {
                print_error("query \"%s\" (filter %d) on title \"%s\" body "
                            "\"%s\" note \"%s\" tags \"%s\" cs \"%s\" price "
                            "\"%s\": got %d, want %d\n",
                            o.s, filter, d->v[0], d->v[1], d->v[2], d->v[3],
                            d->v[4], d->v[5], got, want);
                fail();
            }
            matched += got;
            if (!got || n <= 0)
                continue;
            for (int k = 0; k < n && !found; k++)
                found = scan_finds(&scans[k], d);
            if (!found) {
                print_error("query \"%s\": no lookup of %d finds document "
                            "%d\n",
                            o.s, n, i);
                fail();
            }
            checked++;
        }
        pk_ftq_free(x);
        free(o.s);
        free_q(q);
    }
    /* The grammar is not degenerate: many matches, many plans. */
    print_message("model: %ld matches, %ld plans, %ld hits checked\n", matched,
                  planned, checked);
    assert_true(matched > 10000 && planned > 1000 && checked > 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),  cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_tags),    cmocka_unit_test(test_words),
        cmocka_unit_test(test_numbers), cmocka_unit_test(test_params),
        cmocka_unit_test(test_filter),  cmocka_unit_test(test_plan),
        cmocka_unit_test(test_big),     cmocka_unit_test(test_deep),
        cmocka_unit_test(test_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

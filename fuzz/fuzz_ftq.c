/*
 * libFuzzer target for the query parser (core/pk_ftq.c).
 *
 * The input is a query against a fixed definition (two TEXT fields, one
 * of them NOINDEX, a TAG field, a CASESENSITIVE TAG field with ';' as its
 * separator, and a NUMERIC field), with fixed PARAMS.  A query that does
 * not parse must say why in a RediSearch-style message.  One that parses
 * is planned and matched on a few fixed documents, and then:
 *   - every lookup names an indexed field of the kind it looks up, with
 *     a term no longer than the index holds;
 *   - the plan needs exactly the room it reports (one less is -1);
 *   - each document that matches is found by some lookup of the plan,
 *     checked on the document's terms from pk_ftdef.h, not by pk_ftq;
 *   - a FILTER never makes a document match that did not.
 * Leaks are reported by LeakSanitizer; deep nesting and huge ORs must
 * neither overflow the stack nor take quadratic time.
 *
 * Built by `make fuzz` (the layers core to coord linked in), or by hand from
 * src/core/pk_ftq.c, pk_ftdef.c and pk_err.c with
 * -fsanitize=fuzzer,address,undefined.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_ftdef.h"
#include "core/pk_ftq.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { F_TITLE, F_NOTE, F_TAGS, F_CS, F_PRICE, NF };

static char n_title[] = "title", n_note[] = "note", n_tags[] = "tags",
            n_cs[] = "cs", n_price[] = "price", a_price[] = "p",
            n_idx[] = "idx";

static pk_ftfield fields[NF] = {
    {.name = n_title, .type = PK_FT_TEXT, .sep = ',', .weight = 1},
    {.name = n_note, .type = PK_FT_TEXT, .noindex = 1, .sep = ','},
    {.name = n_tags, .type = PK_FT_TAG, .sep = ','},
    {.name = n_cs, .type = PK_FT_TAG, .casesens = 1, .sep = ';'},
    {.name = n_price, .alias = a_price, .type = PK_FT_NUMERIC, .sep = ','},
};

static const pk_ftdef def = {.name = n_idx, .nfields = NF, .fields = fields};

static const char *const pnames[] = {"w", "t", "n", "e"};
static const char *const pvals[] = {"Hello World", "a,b", "(5", ""};
static const size_t pnlens[] = {1, 1, 1, 1};
static const size_t pvlens[] = {11, 3, 2, 0};

#define NDOCS 3
static const char *const docs[NDOCS][NF] = {
    {"Hello world, foo-bar: the theory", "secret", " a, b ,hello world",
     "A;b c;x-y", "5"},
    {"world hello", NULL, "x-y", NULL, "-1.5e3"},
    {NULL, "hello", "", "B", "abc"},
};

static int doc_get(void *ctx, uint32_t f, const char **val, size_t *len)
{
    const char *const *d = ctx;

    CHECK(f < NF);
    if (d[f] == NULL)
        return 0;
    *val = d[f];
    *len = strlen(d[f]);
    return 1;
}

static int term_cb(void *ctx, const char *term, size_t len)
{
    const pk_ftq_scan *s = ctx;

    if (s->kind == PK_FTQ_EXACT ? len != s->len : len < s->len)
        return 0;
    return memcmp(term, s->term, s->len) == 0;
}

/* 1 when lookup s finds document d, by the terms the index holds. */
static int scan_finds(const pk_ftq_scan *s, const char *const *d)
{
    const pk_ftfield *f = &fields[s->field];
    const char *v = d[s->field];
    char buf[PK_FT_TERM_MAX];
    double x;

    if (v == NULL)
        return 0;
    if (s->kind == PK_FTQ_RANGE)
        return pk_ft_number(v, strlen(v), &x) &&
               (s->lo_excl ? x > s->lo : x >= s->lo) &&
               (s->hi_excl ? x < s->hi : x <= s->hi);
    if (f->type == PK_FT_TAG)
        return pk_ft_tag_terms(v, strlen(v), f->sep, f->casesens, buf, term_cb,
                               (void *)s) != 0;
    return pk_ft_text_terms(v, strlen(v), buf, term_cb, (void *)s) != 0;
}

static void check_scans(const pk_ftq_scan *s, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(s[i].field < NF && !fields[s[i].field].noindex);
        if (s[i].kind == PK_FTQ_RANGE) {
            CHECK(fields[s[i].field].type == PK_FT_NUMERIC);
            continue;
        }
        CHECK(s[i].kind == PK_FTQ_EXACT || s[i].kind == PK_FTQ_PREFIX);
        CHECK(fields[s[i].field].type != PK_FT_NUMERIC);
        CHECK(s[i].term && s[i].len > 0 && s[i].len <= PK_FT_TERM_MAX);
    }
}

static void check_error(const char *err)
{
    static const char *const ok[] = {
        "Syntax error at offset ", "Unknown field at offset ",
        "No such parameter `",     "Bad lower range: ",
        "Bad upper range: ",       "Query too complex: ",
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strncmp(err, ok[i], strlen(ok[i])) == 0)
            return;
    CHECK(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pk_ftq_scan scans[256];
    char err[256] = "";
    int match[NDOCS], n, rc;
    pk_ftq *q = NULL;

    rc = pk_ftq_parse(&def, (const char *)data, size, 4, pnames, pnlens, pvals,
                      pvlens, &q, err, sizeof(err));
    if (rc != 0) {
        CHECK(rc == PK_EINVAL && q == NULL);
        check_error(err);
        return 0;
    }
    n = pk_ftq_plan(q, scans, 256);
    CHECK(n >= -1 && n <= 256);
    if (n > 0) {
        check_scans(scans, n);
        CHECK(pk_ftq_plan(q, scans, n) == n);
        CHECK(pk_ftq_plan(q, scans, n - 1) == -1);
    }
    for (int i = 0; i < NDOCS; i++) {
        int found = 0;
        match[i] = pk_ftq_match(q, doc_get, (void *)docs[i]);
        CHECK(match[i] == 0 || match[i] == 1);
        for (int k = 0; match[i] && k < n && !found; k++)
            found = scan_finds(&scans[k], docs[i]);
        CHECK(!match[i] || n <= 0 || found);
    }
    CHECK(pk_ftq_add_filter(q, F_PRICE, -10, 0, 10, 1) == 0);
    for (int i = 0; i < NDOCS; i++)
        CHECK(pk_ftq_match(q, doc_get, (void *)docs[i]) <= match[i]);
    CHECK(pk_ftq_plan(q, scans, 256) >= -1);
    pk_ftq_free(q);
    return 0;
}

/*
 * What the index tests share: the index they use (prefix doc:, fields tag
 * TAG, n NUMERIC, body TEXT) and a gatherer of the keys lookups find.
 */
#ifndef PK_TESTS_FT_TESTUTIL_H
#define PK_TESTS_FT_TESTUTIL_H

#include <string.h>

#include "core/pk_ftdef.h"
#include "store/pk_slice.h"

static inline pk_ftdef *ft_mkdef(uint64_t id)
{
    const char *argv[] = {"ON",  "HASH", "PREFIX", "1",       "doc:", "SCHEMA",
                          "tag", "TAG",  "n",      "NUMERIC", "body", "TEXT"};
    size_t lens[12];
    pk_ftdef *d = NULL;
    char err[128];

    for (int i = 0; i < 12; i++)
        lens[i] = strlen(argv[i]);
    assert_int_equal(
        pk_ftdef_parse("idx", 12, argv, lens, &d, err, sizeof(err)), 0);
    d->id = id;
    return d;
}

/* The keys lookups found, "key|key|...". */
typedef struct hits {
    char buf[4096];
    size_t len;
    int n;
} hits;

static inline void hits_add(hits *h, pk_slice key)
{
    assert_true(h->len + key.len + 2 < sizeof(h->buf));
    memcpy(h->buf + h->len, key.ptr, key.len);
    h->len += key.len;
    h->buf[h->len++] = '|';
    h->buf[h->len] = 0;
    h->n++;
}

#endif

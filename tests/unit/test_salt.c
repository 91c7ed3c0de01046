/*
 * Tests of salted keys in the core: the part and marker names
 * (core/pk_salt.c) place a part by its tag and a marker beside its key;
 * the map's salt table (core/pk_pmap.c) stays sorted and refuses bad
 * entries; the codec carries it both ways, canonically, and refuses a
 * table out of order or on a range map.
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
#include "core/pk_ftdef.h"
#include "core/pk_hash.h"
#include "core/pk_pmap.h"
#include "core/pk_salt.h"

uint32_t pk__crc32c(const void *data, size_t len);

static void test_names(void **state)
{
    uint8_t b[128], m[128];
    char tag[16];
    const void *k;
    size_t kl, n;
    uint32_t t;

    (void)state;
    n = pk_salt_subkey("ctr", 3, 4711, b, sizeof(b));
    assert_int_equal(n, strlen("{s4711}") + 6 + 3);
    snprintf(tag, sizeof(tag), "s4711");
    assert_int_equal(pk_hash_slot(b, n), pk_hash_slot(tag, strlen(tag)));
    assert_true(pk_salt_parse(b, n, &k, &kl, &t));
    assert_int_equal(kl, 3);
    assert_memory_equal(k, "ctr", 3);
    assert_int_equal(t, 4711);
    assert_true(pk_salt_internal(b, n));
    assert_false(pk_salt_internal("ctr", 3));
    assert_false(pk_salt_parse("{s12}salt", 9, &k, &kl, &t));
    assert_false(pk_salt_parse("{s}\0salt\0x", 10, &k, &kl, &t));
    assert_false(pk_salt_parse("{s012}\0salt\0x", 13, &k, &kl, &t));
    assert_int_equal(pk_salt_subkey("ctr", 3, 1, b, 8), 0);

    /* A marker lives in its key's slot, tagged or not. */
    n = pk_salt_marker("ctr", 3, 3, m, sizeof(m));
    assert_true(n > 0);
    assert_int_equal(pk_hash_slot(m, n), pk_hash_slot("ctr", 3));
    assert_true(pk_salt_internal(m, n));
    n = pk_salt_marker("{u1}:hits", 9, 7, m, sizeof(m));
    assert_true(n > 0);
    assert_int_equal(pk_hash_slot(m, n), pk_hash_slot("{u1}:hits", 9));
    assert_int_equal(pk_salt_marker("a}b", 3, 1, m, sizeof(m)), 0);
    assert_int_equal(pk_salt_marker("", 0, 1, m, sizeof(m)), 0);

    /* A stamp lives in its part's slot, and is internal. */
    n = pk_salt_stamp("ctr", 3, 2, 4711, m, sizeof(m));
    assert_true(n > 0);
    assert_int_equal(pk_hash_slot(m, n), pk_hash_slot(tag, strlen(tag)));
    assert_true(pk_salt_internal(m, n));
    assert_false(pk_salt_parse(m, n, &k, &kl, &t));
    n = pk_salt_stamp("ctr", 3, 0, 0, m, sizeof(m));
    assert_true(n > 0);
    assert_int_equal(pk_hash_slot(m, n), pk_hash_slot("ctr", 3));
    assert_true(pk_salt_internal(m, n));
    n = pk_salt_stamp("{u1}:hits", 9, 0, 0, m, sizeof(m));
    assert_int_equal(pk_hash_slot(m, n), pk_hash_slot("{u1}:hits", 9));
    assert_int_equal(pk_salt_stamp("a}b", 3, 0, 0, m, sizeof(m)), 0);
}

/* Kinds 0..2 keep the top two bits they always had (maps written before
 * strings were salted read the same); 3 and up use three more bits. */
static void test_kinds(void **state)
{
    (void)state;
    assert_int_equal(pk_salt_tag_kind(4711), PK_SALT_COUNTER);
    assert_int_equal(pk_salt_tag_kind((1u << 30) + 99), PK_SALT_SET);
    assert_int_equal(pk_salt_tag_kind((2u << 30) + 99), PK_SALT_HLL);
    for (int k = PK_SALT_COUNTER; k <= PK_SALT_ZSET; k++) {
        uint32_t b = pk_salt_tag_base((pk_salt_kind)k);
        assert_int_equal(pk_salt_tag_kind(b), k);
        assert_int_equal(pk_salt_tag_kind(b + PK_SALT_TAG_SPAN - 1), k);
    }
    assert_int_equal(pk_salt_tag_base(PK_SALT_SET), 1u << 30);
    assert_int_equal(pk_salt_tag_base(PK_SALT_STRING), 3u << 30);
}

static pk_pmap *slots_map(void)
{
    pk_pmap *m;
    uint32_t id;

    assert_int_equal(
        pk_pmap_new(PK_SCHEME_SLOTS, PK_HASH_XXH3, PK_SLOTS, 1, &m), PK_OK);
    assert_int_equal(pk_pmap_node_add(m, "n1", "127.0.0.1:1", NULL, 1.0, &id),
                     PK_OK);
    return m;
}

static pk_salt salt(const char *key, uint8_t n)
{
    pk_salt s = {.key = (uint8_t *)key, .len = (uint32_t)strlen(key), .n = n};

    for (unsigned i = 1; i < n; i++)
        s.tags[i] = 100 + i;
    return s;
}

static void test_table(void **state)
{
    pk_pmap *m = slots_map(), *c;
    pk_salt s;

    (void)state;
    s = salt("b", 4);
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_OK);
    s = salt("a", 2);
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_OK);
    s = salt("c", 8);
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_OK);
    assert_int_equal(m->nsalts, 3);
    assert_memory_equal(m->salts[0].key, "a", 1);
    assert_memory_equal(m->salts[2].key, "c", 1);
    s = salt("b", 2);
    s.state = PK_SALT_FOLDING;
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_OK); /* replaces */
    assert_int_equal(m->nsalts, 3);
    assert_int_equal(pk_pmap_salt_find(m, "b", 1)->n, 2);
    assert_int_equal(pk_pmap_salt_find(m, "b", 1)->state, PK_SALT_FOLDING);
    assert_null(pk_pmap_salt_find(m, "d", 1));
    assert_int_equal(pk_pmap_validate(m), PK_OK);

    s = salt("x", 3); /* not a power of two */
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_EINVAL);
    s = salt("x", 1);
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_EINVAL);
    s = salt("x", 2);
    s.state = 9;
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_EINVAL);

    assert_int_equal(pk_pmap_clone(m, &c), PK_OK);
    assert_true(pk_pmap_equal(m, c));
    assert_int_equal(pk_pmap_salt_del(c, "a", 1), PK_OK);
    assert_int_equal(pk_pmap_salt_del(c, "a", 1), PK_ENOTFOUND);
    assert_false(pk_pmap_equal(m, c));
    assert_int_equal(c->nsalts, 2);
    assert_memory_equal(c->salts[0].key, "b", 1);
    pk_pmap_free(c);
    pk_pmap_free(m);
}

static void reseal(uint8_t *buf, size_t len)
{
    uint32_t crc = pk__crc32c(buf, len - 4);

    for (int i = 0; i < 4; i++)
        buf[len - 4 + i] = (uint8_t)(crc >> (24 - 8 * i));
}

static void test_codec(void **state)
{
    pk_pmap *m = slots_map(), *d;
    uint8_t *buf, *again;
    size_t len, len2;
    pk_salt s;

    (void)state;
    /* No table: the flag is clear and the encoding is as before. */
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    assert_int_equal(buf[7] & 2, 0);
    free(buf);

    s = salt("hot:ctr", 4);
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_OK);
    s = salt("hot:set", 2);
    s.state = PK_SALT_FOLDING;
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_OK);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    assert_int_equal(buf[7] & 2, 2);
    assert_int_equal(pk_pmap_decode(buf, len, &d), PK_OK);
    assert_true(pk_pmap_equal(m, d));
    assert_int_equal(pk_pmap_encode(d, &again, &len2), PK_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, again, len);
    free(again);
    pk_pmap_free(d);

    /* "hot:ztr" sorts after "hot:set": the table is out of order. */
    for (size_t i = 0; i + 7 < len; i++) {
        if (memcmp(buf + i, "hot:ctr", 7) == 0)
            buf[i + 4] = 'z';
    }
    reseal(buf, len);
    assert_int_equal(pk_pmap_decode(buf, len, &d), PK_ECORRUPT);
    /* The flag without a table, or a table without the flag. */
    buf[7] &= (uint8_t)~2;
    reseal(buf, len);
    assert_int_equal(pk_pmap_decode(buf, len, &d), PK_ECORRUPT);
    free(buf);
    pk_pmap_free(m);

    /* A range map has no salt table. */
    assert_int_equal(pk_pmap_new(PK_SCHEME_RANGE, PK_HASH_XXH3, 1, 1, &m),
                     PK_OK);
    s = salt("k", 2);
    assert_int_equal(pk_pmap_salt_set(m, &s), PK_EINVAL);
    pk_pmap_free(m);
}

/* Index definitions ride the map: kept through the codec and a clone,
 * replaced by name, refused when they do not decode or repeat a name. */
static void test_ftdefs(void **state)
{
    const char *args[] = {"PREFIX", "1", "doc:", "SCHEMA", "t", "TAG"};
    size_t lens[6], len, n1, n2;
    pk_pmap *m = slots_map(), *d, *c;
    pk_ftdef *a, *b;
    uint8_t *buf, *e1, *e2;
    char err[128];

    (void)state;
    for (int i = 0; i < 6; i++)
        lens[i] = strlen(args[i]);
    assert_int_equal(pk_ftdef_parse("one", 6, args, lens, &a, err, sizeof(err)),
                     0);
    assert_int_equal(pk_ftdef_parse("two", 6, args, lens, &b, err, sizeof(err)),
                     0);
    a->id = 1;
    b->id = 2;
    e1 = malloc(n1 = pk_ftdef_encoded_len(a));
    e2 = malloc(n2 = pk_ftdef_encoded_len(b));
    pk_ftdef_encode(a, e1);
    pk_ftdef_encode(b, e2);
    assert_int_equal(pk_pmap_ftdef_set(m, e1, (uint32_t)n1), PK_OK);
    assert_int_equal(pk_pmap_ftdef_set(m, e2, (uint32_t)n2), PK_OK);
    assert_int_equal(pk_pmap_ftdef_set(m, e1, (uint32_t)n1), PK_OK);
    assert_int_equal(m->nftdefs, 2);
    assert_int_equal(pk_pmap_ftdef_find(m, "two"), 1);
    assert_int_equal(pk_pmap_ftdef_set(m, (const uint8_t *)"junk", 4),
                     PK_EINVAL);
    assert_int_equal(pk_pmap_encode(m, &buf, &len), PK_OK);
    assert_int_equal(buf[7] & 4, 4);
    assert_int_equal(pk_pmap_decode(buf, len, &d), PK_OK);
    assert_true(pk_pmap_equal(m, d));
    assert_int_equal(pk_pmap_clone(d, &c), PK_OK);
    assert_true(pk_pmap_equal(m, c));
    pk_pmap_free(c);
    pk_pmap_free(d);
    free(buf);
    /* Two definitions of one id: not a map. */
    b->id = 1;
    free(e2);
    e2 = malloc(n2 = pk_ftdef_encoded_len(b));
    pk_ftdef_encode(b, e2);
    assert_int_equal(pk_pmap_ftdef_set(m, e2, (uint32_t)n2), PK_OK);
    assert_int_equal(pk_pmap_validate(m), PK_ECORRUPT);
    assert_int_equal(pk_pmap_ftdef_del(m, "two"), PK_OK);
    assert_int_equal(pk_pmap_ftdef_del(m, "two"), PK_ENOTFOUND);
    assert_int_equal(pk_pmap_validate(m), PK_OK);
    free(e1);
    free(e2);
    pk_ftdef_free(a);
    pk_ftdef_free(b);
    pk_pmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),  cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_table),  cmocka_unit_test(test_codec),
        cmocka_unit_test(test_ftdefs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

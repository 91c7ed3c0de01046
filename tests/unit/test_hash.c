/*
 * Known-answer tests for every hash partkv places keys with, taken from the
 * published specifications and from the systems partkv must agree with
 * (Redis Cluster's slot vectors, Cassandra's Murmur3 tokens).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"

#define S(s) (s), strlen(s)

static void test_crc16_check_value(void **state)
{
    (void)state;
    /* The CRC16/XMODEM check value from the CRC catalogue. */
    assert_int_equal(pk_hash_crc16(S("123456789")), 0x31C3);
    assert_int_equal(pk_hash_crc16("", 0), 0);
}

static void test_redis_slots(void **state)
{
    (void)state;
    /* Vectors from `redis-cli cluster keyslot` on Redis 7.0. */
    static const struct {
        const char *key;
        unsigned slot;
    } v[] = {
        {"123456789", 12739},
        {"foo", 12182},
        {"{user1000}.following", 3443},
        {"{user1000}.followers", 3443},
        {"foo{}{bar}", 8363},
        {"foo{{bar}}zap", 4015},
        {"{bar", 4015},
        {"foo{bar}{zap}", 5061},
        {"a{b}c", 3300},
        {"{b}", 3300},
        {"key:{8M}}:000000000056", 5461},
        {"key:{06S}:000000000001", 0},
        {"key:{63n}:000000000001", 10923},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        assert_int_equal(pk_hash_slot(S(v[i].key)), v[i].slot);
}

static void test_slot_tag_edges(void **state)
{
    (void)state;
    /* An unclosed '{' hashes the whole key. */
    assert_int_equal(pk_hash_slot(S("foo{bar")),
                     pk_hash_crc16(S("foo{bar")) & 0x3FFF);
    /* '}' before '{' does not form a tag. */
    assert_int_equal(pk_hash_slot(S("}x{")), pk_hash_crc16(S("}x{")) & 0x3FFF);
    /* Tags are binary-safe. */
    assert_int_equal(pk_hash_slot("a{\0b}c", 6),
                     pk_hash_crc16("\0b", 2) & 0x3FFF);
}

static void test_md5_64(void **state)
{
    (void)state;
    /* RFC 1321 test suite, first 8 bytes big-endian. */
    assert_int_equal(pk_hash_md5_64("", 0), 0xd41d8cd98f00b204ULL);
    assert_int_equal(pk_hash_md5_64(S("abc")), 0x900150983cd24fb0ULL);
    assert_int_equal(pk_hash_md5_64(S("message digest")),
                     0xf96b697d7cb7938dULL);
}

static void test_xxh3(void **state)
{
    (void)state;
    /* XXH3_64bits of the empty input, from the xxHash sanity tests. */
    assert_int_equal(pk_hash_xxh3("", 0), 0x2D06800538D394C2ULL);
    assert_int_equal(pk_hash_get(PK_HASH_XXH3)(S("abc")),
                     pk_hash_xxh3(S("abc")));
}

static void test_murmur3_reference(void **state)
{
    uint64_t h[2];

    (void)state;
    /* MurmurHash3_x64_128, seed 0, reference implementation vectors. */
    pk_hash_murmur3_128(S("The quick brown fox jumps over the lazy dog"), h);
    assert_int_equal(h[0], 0xe34bbc7bbc071b6cULL);
    assert_int_equal(h[1], 0x7a433ca9c49a9347ULL);
    pk_hash_murmur3_128(S("hello"), h);
    assert_int_equal(h[0], 0xcbd8a7b341bd9b02ULL);
    assert_int_equal(h[1], 0x5b1e906a48ae1d19ULL);
    pk_hash_murmur3_128("", 0, h);
    assert_int_equal(h[0], 0);
    assert_int_equal(h[1], 0);
}

static void test_cassandra_tokens(void **state)
{
    (void)state;
    /* Tokens Cassandra's Murmur3Partitioner gives; "kremówki" has bytes
     * >= 0x80 in its tail, where Cassandra sign-extends. */
    assert_int_equal(pk_hash_cassandra_token(S("test")),
                     -6017608668500074083LL);
    assert_int_equal(pk_hash_cassandra_token(S("xd")), 4507812186440344727LL);
    assert_int_equal(pk_hash_cassandra_token(S("primary_key")),
                     -1632642444691073360LL);
    assert_int_equal(pk_hash_cassandra_token(S("krem\xc3\xb3wki")),
                     4354931215268080151LL);
}

static void test_names(void **state)
{
    pk_hash_kind k = PK_HASH_XXH3;

    (void)state;
    assert_int_equal(pk_hash_parse("md5", &k), PK_OK);
    assert_int_equal(k, PK_HASH_MD5);
    assert_int_equal(pk_hash_parse("murmur3", &k), PK_OK);
    assert_int_equal(k, PK_HASH_MURMUR3);
    assert_int_equal(pk_hash_parse("sha1", &k), PK_EINVAL);
    assert_int_equal(k, PK_HASH_MURMUR3);
    assert_string_equal(pk_hash_name(PK_HASH_XXH3), "xxh3");
    assert_null(pk_hash_get((pk_hash_kind)9));
}

static void test_errors(void **state)
{
    (void)state;
    assert_string_equal(pk_strerror(PK_ENOMEM), "out of memory");
    assert_string_equal(pk_errname(PK_ENOTFOUND), "PK_ENOTFOUND");
    assert_string_equal(pk_strerror(12345), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_check_value),
        cmocka_unit_test(test_redis_slots),
        cmocka_unit_test(test_slot_tag_edges),
        cmocka_unit_test(test_md5_64),
        cmocka_unit_test(test_xxh3),
        cmocka_unit_test(test_murmur3_reference),
        cmocka_unit_test(test_cassandra_tokens),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * libFuzzer target for RESTORE (pk_key_restore, store/pk_keyops.h): a
 * payload from a client, validated record by record before anything is
 * written.
 *
 *   input:  | mode | payload ... |
 *
 *   mode bits 0-2  the target key: 0 a missing key, 1-4 an existing
 *                  string, hash, sorted set, set, 5 an expired key
 *            3     REPLACE
 *            4     rewrite the last 8 bytes to the right checksum, so
 *                  that mutations reach the record checks
 *            5     rewrite the version byte to PK_DUMP_VERSION
 *            6-7   the expiry: none, in the future, already past, none
 *
 * The store lives in a temporary directory made once per process; the
 * fixture keys are committed once, and each input runs in a write
 * transaction that is aborted, so the store never grows.  A rejected
 * payload must leave the transaction healthy and the store unchanged
 * (the change count, the partition's key and byte counts, the target's
 * DUMP).  An accepted one must DUMP back to exactly the payload: DUMP
 * zeroes the expiry in META, and RESTORE accepts only a zero one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "fuzz_store.h"
#include "fuzz_util.h"
#include "store/pk_hmap.h"
#include "store/pk_key.h"
#include "store/pk_keyops.h"
#include "store/pk_set.h"
#include "store/pk_store.h"
#include "store/pk_store_part.h"
#include "store/pk_str.h"
#include "store/pk_zset.h"

#define NOW 1700000000000ull
#define PART 42u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pk_store *store;

/* The target keys, by mode bits 0-2 (6 and 7 wrap to 0 and 1). */
static const char *const keys[] = {"new", "str", "hash", "zset", "set", "old"};

/* One key of every type (and an expired one), committed once. */
static void fixture(void)
{
    pk_slice f[3] = {{"a", 1}, {"b", 1}, {"c", 1}};
    pk_slice vals[3] = {{"1", 1}, {"", 0}, {"xyz", 3}};
    double sc[3] = {1.5, -2, 1e300};
    pk_set_opts gone = {0, NOW - 1000};
    pk_zadd_result zr;
    pk_txn *t = NULL;
    uint64_t n;
    int done;

    CHECK(pk_txn_begin(store, 0, &t) == 0);
    CHECK(pk_str_set(t, PART, "str", 3, "value", 5, NULL, NOW - 5000, &done,
                     NULL) == 0);
    CHECK(pk_hmap_set(t, PART, "hash", 4, 3, f, vals, NOW, &n) == 0);
    CHECK(pk_zset_add(t, PART, "zset", 4, 0, 3, sc, f, NOW, &zr) == 0);
    CHECK(pk_set_add(t, PART, "set", 3, 3, f, NOW, &n) == 0);
    CHECK(pk_str_set(t, PART, "old", 3, "x", 1, &gone, NOW - 5000, &done,
                     NULL) == 0);
    CHECK(pk_txn_commit(t) == 0);
}

/* What "unchanged" compares: the partition's counts and the key. */
typedef struct snap {
    uint64_t keys, bytes, changes;
    int exists;
    uint8_t *dump; /* owned copy, NULL when missing */
    size_t dlen;
} snap;

static void snap_take(pk_txn *t, const char *key, snap *s)
{
    pk_part_stats st;
    pk_slice d;
    int rc;

    CHECK(pk_store_part_stats(t, PART, &st) == 0);
    s->keys = st.keys;
    s->bytes = st.bytes;
    s->changes = pk_txn_changes(t);
    CHECK(pk_key_exists(t, PART, key, strlen(key), NOW, &s->exists) == 0);
    s->dump = NULL;
    s->dlen = 0;
    rc = pk_key_dump(t, PART, key, strlen(key), NOW, &d);
    CHECK(rc == 0 || rc == PK_ENOTFOUND);
    CHECK((rc == 0) == s->exists);
    if (rc == 0) {
        s->dump = malloc(d.len);
        CHECK(s->dump != NULL);
        memcpy(s->dump, d.ptr, d.len);
        s->dlen = d.len;
    }
}

static void snap_same(const snap *a, const snap *b)
{
    CHECK(a->keys == b->keys && a->bytes == b->bytes);
    CHECK(a->changes == b->changes && a->exists == b->exists);
    CHECK(a->dlen == b->dlen);
    CHECK(a->dlen == 0 || memcmp(a->dump, b->dump, a->dlen) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t expiry[4] = {0, NOW + 60000, NOW - 1, 0};
    const char *key;
    uint64_t exp;
    unsigned flags;
    snap before, after;
    pk_txn *t = NULL;
    uint8_t *p;
    size_t len;
    pk_slice d;
    pk_type type;
    int64_t ttl;
    int rc, stale;

    if (store == NULL) {
        int fresh;

        store = fuzz_store_get(&fresh);
        if (fresh) {
            fixture();
        }
    }
    if (size == 0) {
        return 0;
    }
    key = keys[(data[0] & 7) % 6];
    stale = strcmp(key, "old") == 0;
    flags = (data[0] & 8) ? PK_KEYOPS_REPLACE : 0;
    exp = expiry[data[0] >> 6];
    len = size - 1;
    /* An exact-size copy, so that ASan catches reads past the end. */
    p = malloc(len ? len : 1);
    CHECK(p != NULL);
    memcpy(p, data + 1, len);
    if ((data[0] & 32) && len > 0) {
        p[0] = PK_DUMP_VERSION;
    }
    if ((data[0] & 16) && len >= 10) {
        uint64_t h = pk_hash_xxh3(p, len - 8);

        for (int i = 0; i < 8; i++) {
            p[len - 8 + (size_t)i] = (uint8_t)(h >> (56 - 8 * i));
        }
    }

    CHECK(pk_txn_begin(store, 0, &t) == 0);
    snap_take(t, key, &before);
    rc = pk_key_restore(t, PART, key, strlen(key), p, len, exp, flags, NOW);
    CHECK(rc == 0 || rc == PK_EEXIST || rc == PK_EVERSION ||
          rc == PK_ECHECKSUM || rc == PK_ECORRUPT || rc == PK_ERANGE);
    CHECK(pk_txn_error(t) == 0);
    snap_take(t, key, &after);
    if (rc != 0 && stale) {
        /* A write drops an expired key first, whatever comes next (as
         * Redis's lookup does): that much may change. */
        CHECK(rc != PK_EEXIST && !after.exists);
        CHECK(after.keys + 1 == before.keys);
    } else if (rc != 0) {
        CHECK(rc != PK_EEXIST || (before.exists && !flags));
        snap_same(&before, &after);
    } else if (exp != 0 && exp <= NOW) {
        /* Already expired: the old key is dropped, nothing created. */
        CHECK(!after.exists);
        CHECK(after.keys == before.keys - (uint64_t)(before.exists || stale));
    } else {
        CHECK(before.exists == 0 || flags);
        CHECK(after.exists);
        CHECK(after.keys == before.keys + (uint64_t)!before.exists - stale);
        CHECK(after.dlen == len && memcmp(after.dump, p, len) == 0);
        CHECK(pk_key_type(t, PART, key, strlen(key), NOW, &type) == 0);
        CHECK(type == p[1] && type >= PK_TYPE_STRING && type <= PK_TYPE_SET);
        CHECK(pk_key_pttl(t, PART, key, strlen(key), NOW, &ttl) == 0);
        CHECK(exp == 0 ? ttl == -1 : ttl == 60000);
        /* A second RESTORE of the same payload is BUSYKEY without
         * REPLACE, and with it writes the same key again. */
        CHECK(pk_key_restore(t, PART, key, strlen(key), p, len, exp, 0, NOW) ==
              PK_EEXIST);
        CHECK(pk_key_restore(t, PART, key, strlen(key), p, len, 0,
                             PK_KEYOPS_REPLACE, NOW) == 0);
        CHECK(pk_key_dump(t, PART, key, strlen(key), NOW, &d) == 0);
        CHECK(d.len == len && memcmp(d.ptr, p, len) == 0);
    }
    CHECK(pk_txn_error(t) == 0);
    pk_txn_abort(t);
    free(before.dump);
    free(after.dump);
    free(p);
    return 0;
}

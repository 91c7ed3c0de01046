/*
 * libFuzzer target for the coordinator's etcd codec (pk_etcd_json.h): the
 * readers of what etcd's gateway answers, which a node must take apart
 * without trusting it.
 *
 *   input:  JSON text, parsed by jansson as pk_etcd_http does
 *
 * The document's header revision and the integer fields the etcd backend
 * reads must come back as 0 or PK_EIO, and its "kvs" and "events" arrays
 * (and the document itself, when it is an array) as decoded arrays or
 * PK_EIO, with the out-parameters untouched on failure.  What decodes must
 * keep the codec's promises -- keys not empty, event revisions the
 * kv's mod_revision and not 0 -- and encode back, through
 * pk_etcd_json_bytes and pk_etcd_json_int, to JSON that decodes to the
 * same key-values.
 *
 * Seeds in fuzz/seeds/fuzz_etcd_json/ are answers of etcd 3.4's gateway.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord/pk_coord.h"
#include "coord/pk_etcd_json.h"
#include "core/pk_err.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_kv(const pk_coord_kv *a, const pk_coord_kv *b)
{
    return a->key_len == b->key_len &&
           memcmp(a->key, b->key, a->key_len) == 0 &&
           a->value_len == b->value_len &&
           (a->value_len == 0 ||
            memcmp(a->value, b->value, a->value_len) == 0) &&
           a->create_revision == b->create_revision &&
           a->mod_revision == b->mod_revision && a->version == b->version &&
           a->lease == b->lease;
}

/* kv as the gateway would write it (zero values left out or not). */
static json_t *kv_json(const pk_coord_kv *kv, int zeros)
{
    json_t *o = json_object();

    CHECK(o != NULL);
    CHECK(json_object_set_new(o, "key",
                              pk_etcd_json_bytes(kv->key, kv->key_len)) == 0);
    if (zeros || kv->value_len > 0) {
        CHECK(json_object_set_new(
                  o, "value", pk_etcd_json_bytes(kv->value, kv->value_len)) ==
              0);
    }
    CHECK(json_object_set_new(o, "create_revision",
                              pk_etcd_json_int((int64_t)kv->create_revision)) ==
          0);
    CHECK(json_object_set_new(o, "mod_revision",
                              pk_etcd_json_int((int64_t)kv->mod_revision)) ==
          0);
    CHECK(json_object_set_new(o, "version",
                              pk_etcd_json_int((int64_t)kv->version)) == 0);
    CHECK(json_object_set_new(o, "lease",
                              pk_etcd_json_int((int64_t)kv->lease)) == 0);
    return o;
}

static void check_kvs(const json_t *arr)
{
    pk_coord_kv *kvs = (pk_coord_kv *)&kvs, *again = NULL;
    size_t n = 12345, n2 = 0;
    json_t *re;
    int rc = pk_etcd_json_kvs(arr, &kvs, &n);

    if (rc != PK_OK) {
        CHECK(rc == PK_EIO || rc == PK_ENOMEM);
        CHECK(kvs == (pk_coord_kv *)&kvs && n == 12345);
        return;
    }
    CHECK((n == 0) == (kvs == NULL));
    re = json_array();
    CHECK(re != NULL);
    for (size_t i = 0; i < n; i++) {
        CHECK(kvs[i].key != NULL && kvs[i].key_len >= 1);
        CHECK(json_array_append_new(re, kv_json(&kvs[i], (int)(i & 1))) == 0);
    }
    CHECK(pk_etcd_json_kvs(re, &again, &n2) == PK_OK && n2 == n);
    for (size_t i = 0; i < n; i++) {
        CHECK(same_kv(&kvs[i], &again[i]));
    }
    json_decref(re);
    free(again);
    free(kvs);
}

static void check_events(const json_t *arr)
{
    pk_coord_event *evs = (pk_coord_event *)&evs, *again = NULL;
    size_t n = 12345, n2 = 0;
    json_t *re;
    int rc = pk_etcd_json_events(arr, &evs, &n);

    if (rc != PK_OK) {
        CHECK(rc == PK_EIO || rc == PK_ENOMEM);
        CHECK(evs == (pk_coord_event *)&evs && n == 12345);
        return;
    }
    CHECK((n == 0) == (evs == NULL));
    re = json_array();
    CHECK(re != NULL);
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_object();

        CHECK(evs[i].kv.key != NULL && evs[i].kv.key_len >= 1);
        CHECK(evs[i].revision != 0 &&
              evs[i].revision == evs[i].kv.mod_revision);
        CHECK(evs[i].type == PK_COORD_PUT || evs[i].type == PK_COORD_DELETE);
        CHECK(ev != NULL);
        if (evs[i].type == PK_COORD_DELETE) {
            CHECK(json_object_set_new(ev, "type", json_string("DELETE")) == 0);
        }
        CHECK(json_object_set_new(ev, "kv", kv_json(&evs[i].kv, 0)) == 0);
        CHECK(json_array_append_new(re, ev) == 0);
    }
    CHECK(pk_etcd_json_events(re, &again, &n2) == PK_OK && n2 == n);
    for (size_t i = 0; i < n; i++) {
        CHECK(again[i].type == evs[i].type);
        CHECK(same_kv(&evs[i].kv, &again[i].kv));
    }
    json_decref(re);
    free(again);
    free(evs);
}

static void check_int(const json_t *doc, const char *name)
{
    int64_t i = 77;
    uint64_t u = 77;
    int rc = pk_etcd_json_i64(doc, name, &i);

    CHECK(rc == PK_OK || (rc == PK_EIO && i == 77));
    rc = pk_etcd_json_u64(doc, name, &u);
    CHECK(rc == PK_OK || (rc == PK_EIO && u == 77));
    CHECK(rc != PK_OK || (uint64_t)i == u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t rev = 77;
    json_t *doc;
    int rc;

    doc = json_loadb((const char *)data, size, 0, NULL);
    if (doc == NULL) {
        return 0;
    }
    rc = pk_etcd_json_revision(doc, &rev);
    CHECK(rc == PK_OK || (rc == PK_EIO && rev == 77));
    check_int(doc, "deleted");
    check_int(doc, "ID");
    check_int(doc, "TTL");
    check_int(doc, "compact_revision");
    check_kvs(json_object_get(doc, "kvs"));
    check_events(json_object_get(doc, "events"));
    if (json_is_array(doc)) {
        check_kvs(doc);
        check_events(doc);
    }
    json_decref(doc);
    return 0;
}

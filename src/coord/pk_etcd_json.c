/*
 * pk_etcd_json: base64 bytes, int64-as-string numbers and key-value or
 * event arrays in etcd's gateway JSON (see pk_etcd_json.h).
 *
 * An array is decoded in two passes so that its answer is one allocation:
 * the first checks every entry and adds up how many bytes its base64 can
 * decode to (3 per 4 characters), the second decodes into the block that
 * follows the array of structs:
 *
 *   [ kv 0 | kv 1 | ... | kv n-1 ][ key 0 | value 0 | key 1 | ... ]
 *
 * Base64 goes through OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock, which
 * work on whole blocks: the decoder counts '=' padding as zero bytes, so
 * the padding is subtracted from its length.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "coord/pk_coord.h"
#include "coord/pk_etcd_json.h"
#include "core/pk_err.h"

json_t *pk_etcd_json_bytes(const void *bytes, size_t len)
{
    size_t enc_len = (len + 2) / 3 * 4;
    json_t *j;
    char *s;

    if (len > (size_t)INT_MAX / 4 * 3 - 3) {
        return NULL;
    }
    s = malloc(enc_len + 1);
    if (s == NULL) {
        return NULL;
    }
    if (len > 0) {
        EVP_EncodeBlock((unsigned char *)s, bytes, (int)len);
    }
    s[enc_len] = '\0';
    j = json_stringn_nocheck(s, enc_len);
    free(s);
    return j;
}

json_t *pk_etcd_json_int(int64_t v)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return json_string(buf);
}

int pk_etcd_json_i64(const json_t *obj, const char *name, int64_t *out)
{
    const json_t *f = json_object_get(obj, name);
    const char *s;
    char *end;
    long long v;

    if (f == NULL) {
        *out = 0;
        return PK_OK;
    }
    if (json_is_integer(f)) {
        *out = (int64_t)json_integer_value(f);
        return PK_OK;
    }
    if (!json_is_string(f)) {
        return PK_EIO;
    }
    s = json_string_value(f);
    if (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
        return PK_EIO;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        return PK_EIO;
    }
    *out = (int64_t)v;
    return PK_OK;
}

int pk_etcd_json_u64(const json_t *obj, const char *name, uint64_t *out)
{
    int64_t v;
    int rc = pk_etcd_json_i64(obj, name, &v);

    if (rc != PK_OK || v < 0) {
        return PK_EIO;
    }
    *out = (uint64_t)v;
    return PK_OK;
}

int pk_etcd_json_revision(const json_t *obj, uint64_t *out)
{
    return pk_etcd_json_u64(json_object_get(obj, "header"), "revision", out);
}

/* ---- key-values ------------------------------------------------------- */

/*
 * Checks that field name of kv is base64 text (or missing, unless
 * required) and adds the most it can decode to, to *need.
 */
static int b64_need(const json_t *kv, const char *name, int required,
                    size_t *need)
{
    const json_t *f = json_object_get(kv, name);
    size_t len;

    if (f == NULL) {
        return required ? PK_EIO : PK_OK;
    }
    if (!json_is_string(f)) {
        return PK_EIO;
    }
    len = json_string_length(f);
    if (len % 4 != 0 || len > INT_MAX || (required && len == 0)) {
        return PK_EIO;
    }
    *need += len / 4 * 3;
    return PK_OK;
}

/* Decodes field name of kv (checked by b64_need) to *p, advancing it. */
static int b64_take(const json_t *kv, const char *name, const uint8_t **out,
                    size_t *out_len, uint8_t **p)
{
    const json_t *f = json_object_get(kv, name);
    const char *s;
    size_t len;
    int n;

    *out = NULL;
    *out_len = 0;
    if (f == NULL || json_string_length(f) == 0) {
        return PK_OK;
    }
    s = json_string_value(f);
    len = json_string_length(f);
    n = EVP_DecodeBlock(*p, (const unsigned char *)s, (int)len);
    if (n < 0) {
        return PK_EIO;
    }
    n -= (s[len - 1] == '=') + (s[len - 2] == '=');
    if (n < 0) {
        return PK_EIO;
    }
    *out = *p;
    *out_len = (size_t)n;
    *p += n;
    return PK_OK;
}

static int kv_need(const json_t *kv, size_t *need)
{
    int rc;

    if (!json_is_object(kv)) {
        return PK_EIO;
    }
    rc = b64_need(kv, "key", 1, need);
    if (rc == PK_OK) {
        rc = b64_need(kv, "value", 0, need);
    }
    return rc;
}

static int kv_take(const json_t *kv, pk_coord_kv *out, uint8_t **p)
{
    int64_t lease = 0;
    int rc;

    rc = b64_take(kv, "key", &out->key, &out->key_len, p);
    if (rc == PK_OK && out->key_len == 0) {
        rc = PK_EIO;
    }
    if (rc == PK_OK) {
        rc = b64_take(kv, "value", &out->value, &out->value_len, p);
    }
    if (rc == PK_OK) {
        rc = pk_etcd_json_u64(kv, "create_revision", &out->create_revision);
    }
    if (rc == PK_OK) {
        rc = pk_etcd_json_u64(kv, "mod_revision", &out->mod_revision);
    }
    if (rc == PK_OK) {
        rc = pk_etcd_json_u64(kv, "version", &out->version);
    }
    /* Lease ids are int64 in etcd; pk_coord carries their bits. */
    if (rc == PK_OK) {
        rc = pk_etcd_json_i64(kv, "lease", &lease);
    }
    out->lease = (uint64_t)lease;
    return rc;
}

/*
 * The allocation for n entries of size each followed by need bytes, or
 * NULL (overflow or out of memory).
 */
static void *block(size_t n, size_t size, size_t need)
{
    if (n > (SIZE_MAX - need) / size) {
        return NULL;
    }
    return calloc(1, n * size + need + 1);
}

int pk_etcd_json_kvs(const json_t *arr, pk_coord_kv **kvs, size_t *n)
{
    size_t count = arr != NULL ? json_array_size(arr) : 0;
    size_t need = 0;
    pk_coord_kv *out;
    uint8_t *p;

    if (arr != NULL && !json_is_array(arr)) {
        return PK_EIO;
    }
    for (size_t i = 0; i < count; i++) {
        if (kv_need(json_array_get(arr, i), &need) != PK_OK) {
            return PK_EIO;
        }
    }
    if (count == 0) {
        *kvs = NULL;
        *n = 0;
        return PK_OK;
    }
    out = block(count, sizeof(*out), need);
    if (out == NULL) {
        return PK_ENOMEM;
    }
    p = (uint8_t *)(out + count);
    for (size_t i = 0; i < count; i++) {
        if (kv_take(json_array_get(arr, i), &out[i], &p) != PK_OK) {
            free(out);
            return PK_EIO;
        }
    }
    *kvs = out;
    *n = count;
    return PK_OK;
}

int pk_etcd_json_events(const json_t *arr, pk_coord_event **evs, size_t *n)
{
    size_t count = arr != NULL ? json_array_size(arr) : 0;
    size_t need = 0;
    pk_coord_event *out;
    uint8_t *p;

    if (arr != NULL && !json_is_array(arr)) {
        return PK_EIO;
    }
    for (size_t i = 0; i < count; i++) {
        const json_t *ev = json_array_get(arr, i);

        if (!json_is_object(ev) ||
            kv_need(json_object_get(ev, "kv"), &need) != PK_OK) {
            return PK_EIO;
        }
    }
    if (count == 0) {
        *evs = NULL;
        *n = 0;
        return PK_OK;
    }
    out = block(count, sizeof(*out), need);
    if (out == NULL) {
        return PK_ENOMEM;
    }
    p = (uint8_t *)(out + count);
    for (size_t i = 0; i < count; i++) {
        const json_t *ev = json_array_get(arr, i);
        const json_t *type = json_object_get(ev, "type");

        /* PUT is 0, the enum's zero value, so it is left out. */
        if (type == NULL || (json_is_string(type) &&
                             strcmp(json_string_value(type), "PUT") == 0)) {
            out[i].type = PK_COORD_PUT;
        } else if (json_is_string(type) &&
                   strcmp(json_string_value(type), "DELETE") == 0) {
            out[i].type = PK_COORD_DELETE;
        } else {
            free(out);
            return PK_EIO;
        }
        if (kv_take(json_object_get(ev, "kv"), &out[i].kv, &p) != PK_OK ||
            out[i].kv.mod_revision == 0) {
            free(out);
            return PK_EIO;
        }
        out[i].revision = out[i].kv.mod_revision;
    }
    *evs = out;
    *n = count;
    return PK_OK;
}

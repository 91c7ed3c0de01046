/*
 * pk_etcd_json: the JSON shapes of etcd's v3 gateway, for the etcd backend
 * of pk_coord (pk_coord_etcd.c).
 *
 * The gateway speaks protobuf's JSON mapping: bytes (keys, values, range
 * ends) are standard base64 with padding, 64-bit integers are decimal
 * strings, and a field at its zero value is left out -- so a missing
 * number reads as 0 and a missing array as empty.  Readers here are strict
 * about what is present (a number that is not one, base64 that does not
 * decode, a key-value without a key) and answer PK_EIO for it: a malformed
 * answer means the outcome of the request is unknown.
 */
#ifndef PK_COORD_PK_ETCD_JSON_H
#define PK_COORD_PK_ETCD_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "coord/pk_coord.h"

/*
 * A JSON string holding bytes[0..len) in base64 (len 0: ""), or NULL when
 * out of memory.  The caller owns the reference.
 */
json_t *pk_etcd_json_bytes(const void *bytes, size_t len);

/* A JSON string holding v in decimal, as the gateway writes int64. */
json_t *pk_etcd_json_int(int64_t v);

/*
 * Reads the integer field name of obj (a decimal string or a JSON
 * integer) into *out: 0 when the field is missing or obj is not an object.
 * Returns 0, or PK_EIO when the field is not an integer that fits.
 */
int pk_etcd_json_i64(const json_t *obj, const char *name, int64_t *out);

/* As pk_etcd_json_i64, for a field that must not be negative. */
int pk_etcd_json_u64(const json_t *obj, const char *name, uint64_t *out);

/* obj.header.revision, as pk_etcd_json_u64. */
int pk_etcd_json_revision(const json_t *obj, uint64_t *out);

/*
 * Decodes arr, an array of mvccpb.KeyValue objects (NULL: none), into
 * *kvs[0..*n) whose keys and values point into the same allocation; the
 * caller frees *kvs with free() (NULL when *n == 0).  Returns 0, PK_EIO
 * for a malformed entry, or PK_ENOMEM; *kvs and *n are untouched on
 * failure.
 */
int pk_etcd_json_kvs(const json_t *arr, pk_coord_kv **kvs, size_t *n);

/*
 * Decodes arr, an array of mvccpb.Event objects (NULL: none), into
 * *evs[0..*n), as pk_etcd_json_kvs; each event's revision is its
 * kv.mod_revision, which must not be 0.
 */
int pk_etcd_json_events(const json_t *arr, pk_coord_event **evs, size_t *n);

#endif

/*
 * Internal to the proto layer: helpers that the request parser
 * (pk_resp.c) and the reply reader (pk_rreply.c) share.  Not part of any
 * public header; the pk__ prefix marks them as internal.
 */
#ifndef PK_PROTO_PK_PROTO_INT_H
#define PK_PROTO_PK_PROTO_INT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parses s[0, n) as a strict decimal int64, as redis-server writes and
 * reads them (Redis's string2ll()): an optional '-', then digits without
 * a leading zero ("0" alone is fine, "-0" is not), at most 20 characters,
 * within int64_t.  Returns 1 and sets *out, or returns 0 and leaves *out
 * untouched.  s is borrowed for the call; no allocation.  Thread-safe.
 */
int pk__resp_int(const char *s, size_t n, int64_t *out);

#endif

/*
 * pk_etcd_http: JSON over HTTP/1.1 to etcd's v3 gateway, with libcurl's
 * multi interface driven by a libuv loop.  It knows endpoints, timeouts,
 * retries and how etcd's gateway reports errors; pk_coord_etcd.c knows
 * what the requests mean.
 *
 *   call    one request, one JSON answer.  A request goes to the preferred
 *           endpoint (the last one that answered, or the one after the
 *           last one that failed) and, when that endpoint cannot be
 *           reached, has no leader or is unavailable, to the next one:
 *           each endpoint at most once, then PK_EIO.  An attempt gives
 *           up after PK_ETCD_HTTP_TIMEOUT_MS.  A request that may already
 *           have reached etcd is retried only if it is idempotent: a CAS
 *           that timed out after being sent might have been applied, and
 *           sending it again would answer PK_ESTALE for our own write.
 *   stream  one request, then JSON objects for as long as the server
 *           sends them (etcd's watch); one attempt on the preferred
 *           endpoint, the owner decides whether to open another.
 *
 * Every request carries "Grpc-Metadata-hasleader: true", so that a member
 * cut off from its quorum refuses at once ("no leader") instead of
 * waiting for a leader that may not come.
 *
 * Callbacks run from the loop, never from inside libcurl, so they may
 * start calls and streams and close streams (including their own).
 *
 * Thread-safety: none; everything belongs to the loop's thread.
 */
#ifndef PK_COORD_PK_ETCD_HTTP_H
#define PK_COORD_PK_ETCD_HTTP_H

#include <stddef.h>

#include <jansson.h>
#include <uv.h>

/* One attempt of a call, and the connect phase of a stream. */
#define PK_ETCD_HTTP_TIMEOUT_MS 2000
/* The largest answer body, and the largest object in a stream. */
#define PK_ETCD_HTTP_BODY_MAX (512u << 20)
/* Longest endpoint ("host:port" or a URL), and most endpoints. */
#define PK_ETCD_HTTP_ENDPOINT_MAX 255u
#define PK_ETCD_HTTP_ENDPOINTS_MAX 16u

typedef struct pk_etcd_http pk_etcd_http;
typedef struct pk_etcd_stream pk_etcd_stream;

/* Flags of a call. */
#define PK_ETCD_IDEMPOTENT 1u

/*
 * A call's answer: rc 0 with doc, the answer (a JSON object, borrowed for
 * the callback); else doc is NULL and rc is PK_ENOTFOUND (gRPC NotFound),
 * PK_ERANGE (gRPC OutOfRange: compacted or future revision) or PK_EIO
 * (unreachable, other errors, malformed answers).
 */
typedef void (*pk_etcd_call_cb)(void *ctx, int rc, json_t *doc);

/* One object of a stream, borrowed for the callback. */
typedef void (*pk_etcd_object_cb)(void *ctx, json_t *obj);

/*
 * The end of a stream, after its last object: rc 0 (the server ended it),
 * PK_EIO (the connection failed) or PK_EPROTO (it sent something that is
 * not a JSON object).  The stream is freed after this returns: do not
 * close it.
 */
typedef void (*pk_etcd_end_cb)(void *ctx, int rc);

/*
 * Parses endpoints -- "host:port[,host:port...]", each optionally with
 * "etcd://", "http://", "etcds://" or "https://" (TLS) in front -- and
 * sets up a client on
 * loop (borrowed; it must outlive the client).  Nothing is sent yet.
 * Returns 0, PK_EINVAL (no or bad endpoints), PK_ENOMEM or PK_EIO (libcurl
 * or libuv could not be set up).
 */
int pk_etcd_http_new(uv_loop_t *loop, const char *endpoints,
                     pk_etcd_http **out);

/*
 * Frees the client: pending calls get their callback with PK_EIO (during
 * which new requests are refused), open streams are closed without one.
 * Handles of the loop are closed; their memory is freed by their close
 * callbacks, so the loop should run once more before uv_loop_close.
 * NULL is a no-op.  Not from inside a callback.
 */
void pk_etcd_http_free(pk_etcd_http *h);

/* Requests leave from this local IP address (NULL or "": any). */
void pk_etcd_http_set_source(pk_etcd_http *h, const char *ip);

/* https endpoints: present this client certificate and key, and check
 * the server's against this CA (NULL: none; the system's CAs).  The paths
 * are copied.  0 or PK_ENOMEM. */
int pk_etcd_http_set_tls(pk_etcd_http *h, const char *cert, const char *key,
                         const char *ca);

/* How many endpoints the client has (>= 1). */
size_t pk_etcd_http_endpoints(const pk_etcd_http *h);

/*
 * POSTs req (borrowed; serialized before this returns) to path (static
 * storage, e.g. "/v3/kv/range") and calls cb exactly once, always from the
 * loop.  flags: PK_ETCD_IDEMPOTENT or 0.  Returns 0, PK_ENOMEM, or PK_EIO
 * while the client is being freed (then cb is never called).
 */
int pk_etcd_http_call(pk_etcd_http *h, const char *path, const json_t *req,
                      unsigned flags, pk_etcd_call_cb cb, void *ctx);

/*
 * POSTs req to path and calls on_object for each JSON object of the
 * answer, then on_end once.  *out is the handle until on_end or
 * pk_etcd_http_stream_close.  Returns 0, PK_ENOMEM or PK_EIO (as above).
 */
int pk_etcd_http_stream_open(pk_etcd_http *h, const char *path,
                             const json_t *req, pk_etcd_object_cb on_object,
                             pk_etcd_end_cb on_end, void *ctx,
                             pk_etcd_stream **out);

/*
 * Stops a stream: no callback comes after this returns, even when called
 * from the stream's own on_object.  NULL is a no-op.
 */
void pk_etcd_http_stream_close(pk_etcd_stream *s);

#endif

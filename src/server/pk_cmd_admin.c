/*
 * Server commands: DBSIZE FLUSHALL FUNCTION MEMORY SHUTDOWN SCAN and
 * PK.PARTITIONS (per-partition keys, bytes, reads/s, writes/s, and the
 * load split finder's verdict and key on the range scheme).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_range.h"
#include "core/pk_salt.h"
#include "core/pk_splitfind.h"
#include "server/pk_cmd.h"
#include "server/pk_ft.h"
#include "server/pk_watch.h"
#include "store/pk_glob.h"
#include "store/pk_key.h"
#include "store/pk_store_part.h"

#define PK_VERSION "0.1.0"

void pk_cmd_dbsize(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    uint64_t n;
    int rc = pk_store_dbsize_if(t, pk_cmd_keyspace(x), x->srv, &n);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)n);
}

void pk_cmd_flushall(pk_cmd_ctx *x)
{
    if (x->argc > 2 || (x->argc == 2 && !pk_arg_eq(&x->argv[1], "sync") &&
                        !pk_arg_eq(&x->argv[1], "async"))) {
        pk_reply_syntax(x);
        return;
    }
    /* A global index holds copies of documents on other nodes, and
     * entries of documents elsewhere here: a flush would leave both wrong,
     * with nothing to tell the others. */
    if (pk_ft_blocks_flush(x->srv)) {
        pk_reply_error(x->out, "ERR FLUSHALL with a GLOBAL secondary index in "
                               "a cluster: drop the index first "
                               "(FT.DROPINDEX idx)");
        return;
    }
    TXN_OR_RETURN(x, t);
    pk_watch_touch_flush(x); /* before the keys go */
    int rc = pk_store_flushall_if(t, pk_srv_leads, x->srv);

    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_simple(x->out, "OK");
}

/* partkv runs no scripts: FUNCTION LIST is empty and FLUSH has nothing to
 * do (Redis's test harness sends it before every test group). */
void pk_cmd_function(pk_cmd_ctx *x)
{
    if (pk_arg_eq(&x->argv[1], "flush") && x->argc <= 3)
        pk_reply_simple(x->out, "OK");
    else if (pk_arg_eq(&x->argv[1], "list"))
        pk_reply_array(x->out, 0);
    else
        pk_reply_errorf(
            x->out, "ERR unknown subcommand '%.*s'. Try FUNCTION HELP.",
            (int)(x->argv[1].len > 64 ? 64 : x->argv[1].len), x->argv[1].ptr);
}

/* MEMORY USAGE's key is argument 2 (the harness's memory_usage). */
int pk_cmd_keys_memory(int argc, const pk_arg *argv, pk_keyrun *r)
{
    if (argc < 3 || !pk_arg_eq(&argv[1], "usage"))
        return 0;
    *r = (pk_keyrun){2, 2, 1};
    return 1;
}

/* MEMORY USAGE key [SAMPLES n]: pk_key_usage's estimate; partkv samples
 * nothing, so n is only checked. */
void pk_cmd_memory(pk_cmd_ctx *x)
{
    static const pk_subcmd subs[] = {{"usage", -3, NULL}};
    uint64_t bytes;
    int64_t n;

    if (pk_cmd_subcommand(x, "memory", subs, 1) < 0)
        return;
    for (int i = 3; i < x->argc; i += 2) {
        if (!pk_arg_eq(&x->argv[i], "samples") || i + 1 >= x->argc) {
            pk_reply_syntax(x);
            return;
        }
        if (!pk_arg_i64(&x->argv[i + 1], &n)) {
            pk_reply_notint(x);
            return;
        }
        if (n < 0) {
            pk_reply_syntax(x);
            return;
        }
    }
    TXN_OR_RETURN(x, t);
    int rc = pk_key_usage(t, PK_KEY(x, 2), NOW(x), &bytes);

    if (rc == PK_ENOTFOUND)
        pk_reply_null(x->out, x->proto);
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)bytes);
}

/*
 * SAVE / BGSAVE: partkv has no snapshot file to write -- every commit is
 * already in LMDB -- so both flush what is committed to disk (fsync),
 * whatever --fsync says, and answer as Redis does once its dump is done.
 */
void pk_cmd_save(pk_cmd_ctx *x)
{
    int rc = pk_store_sync(x->srv->store);

    if (rc != PK_OK)
        pk_reply_errorf(x->out, "ERR %s", pk_strerror(rc));
    else if (pk_arg_eq(&x->argv[0], "bgsave"))
        pk_reply_simple(x->out, "Background saving started");
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_shutdown(pk_cmd_ctx *x)
{
    /* The connection gets no reply, as with Redis: the server commits the
     * iteration, closes every connection and exits 0. */
    x->c->closing = 1;
    pk_srv_shutdown(x->srv);
}

typedef struct scan_out {
    pk_cmd_ctx *x;
    pk_obuf *keys;
    size_t n;
} scan_out;

static int scan_emit(void *ctx, uint32_t part, pk_slice key)
{
    scan_out *o = ctx;

    (void)part;
    if (!o->x->c->raw_keys && pk_salt_internal(key.ptr, key.len))
        return 0; /* a salted key's part: the key is listed once */
    if (pk_acl_conn_hides(o->x->c, key.ptr, key.len))
        return 0; /* outside the user's read patterns */
    pk_reply_bulk(o->keys, key.ptr, key.len);
    o->n++;
    return 0;
}

/* The first range at or after part, in key order, that this node leads
 * (PK_NODE_NONE when none); from its successor with after set. */
static uint32_t led_from(const pk_cluster *cl, uint32_t part, int after)
{
    while (part != PK_NODE_NONE) {
        const pk_partition *pt = &cl->map->parts[part];
        if (!after && pk_pmap_leader(cl->map, part) == cl->self)
            return part;
        after = 0;
        if (pt->hi == NULL ||
            pk_range_lookup(cl->ranges, pt->hi, pt->hi_len, &part) != PK_OK)
            part = PK_NODE_NONE;
    }
    return part;
}

static int only_part(void *ctx, uint32_t part)
{
    return part == *(const uint32_t *)ctx;
}

/*
 * SCAN of the range scheme: the ranges this node leads in key order, so
 * that its keys come in order.  The cursor keeps the store's layout
 * (pk_store_scan: a partition, here the range being read, then a
 * position in it); when a range is done the next one starts at the next
 * call or in this one.  Range 0 always starts at "" (a split gives the
 * upper part a new id), so cursor 0 is the start.  A range split between
 * two calls goes on in its lower part and then reaches the upper one as
 * the next range: each key once.
 */
static int scan_ranges(pk_cmd_ctx *x, pk_txn *t, uint64_t cursor,
                       const pk_scan_opts *o, scan_out *so, uint64_t *next)
{
    const pk_cluster *cl = &x->srv->cluster;
    uint32_t part = (uint32_t)(cursor >> 32);
    pk_scan_opts one = *o;
    uint64_t n = 0;
    int rc;

    *next = 0;
    if (part >= cl->map->npartitions)
        return PK_OK; /* a cursor from another map: nothing more */
    if ((uint32_t)cursor == 0)
        part = led_from(cl, part, 0);
    one.may = only_part;
    one.may_ctx = &part;
    while (part != PK_NODE_NONE) {
        rc = pk_store_scan(t, cursor, &one, NOW(x), scan_emit, so, &n);
        if (rc != PK_OK)
            return rc;
        if (n != 0 && (uint32_t)(n >> 32) == part) {
            *next = n; /* more of this range */
            return PK_OK;
        }
        part = led_from(cl, part, 1);
        cursor = part == PK_NODE_NONE ? 0 : (uint64_t)part << 32;
        if (so->n >= (o->count ? o->count : 10)) {
            *next = cursor;
            return PK_OK;
        }
    }
    return PK_OK;
}

void pk_cmd_scan(pk_cmd_ctx *x)
{
    pk_scan_opts o = {NULL, 0, 10, PK_TYPE_NONE, pk_cmd_keyspace(x), x->srv};
    int64_t cursor;
    uint64_t next = 0;
    char cur[24];

    if (!pk_arg_i64(&x->argv[1], &cursor)) {
        pk_reply_error(x->out, "ERR invalid cursor");
        return;
    }
    for (int i = 2; i < x->argc; i += 2) {
        const pk_arg *a = &x->argv[i];
        int taken = pk_cmd_scan_opt(x, i, &o);
        if (taken < 0)
            return;
        if (taken > 0)
            continue;
        if (pk_arg_eq(a, "type")) {
            const pk_arg *ty = &x->argv[i + 1];
            o.type = pk_arg_eq(ty, "string") ? PK_TYPE_STRING
                     : pk_arg_eq(ty, "hash") ? PK_TYPE_HASH
                     : pk_arg_eq(ty, "zset") ? PK_TYPE_ZSET
                     : pk_arg_eq(ty, "list") ? PK_TYPE_LIST
                     : pk_arg_eq(ty, "set")  ? PK_TYPE_SET
                                             : (pk_type)99;
        } else {
            pk_reply_syntax(x);
            return;
        }
    }
    TXN_OR_RETURN(x, t);
    /* Keys are collected aside: the cursor, which comes first in the
     * reply, is known only after the walk. */
    pk_obuf keys;
    pk_obuf_init(&keys);
    scan_out so = {x, &keys, 0};
    int rc = o.type == (pk_type)99 ? PK_OK
             : x->srv->cluster.enabled && x->srv->cluster.ranges
                 ? scan_ranges(x, t, (uint64_t)cursor, &o, &so, &next)
                 : pk_store_scan(t, (uint64_t)cursor, &o, NOW(x), scan_emit,
                                 &so, &next);
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
    } else {
        snprintf(cur, sizeof(cur), "%llu", (unsigned long long)next);
        pk_reply_array(x->out, 2);
        pk_reply_bulk_str(x->out, cur);
        pk_reply_array(x->out, so.n);
        if (so.n)
            pk_obuf_append(x->out, keys.data + keys.head,
                           pk_obuf_pending(&keys));
    }
    pk_obuf_free(&keys);
}

void pk_cmd_pk_partitions(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_part_stats st;
    uint32_t part;
    size_t pos, n = 0;
    int rc = PK_OK;

    pk_reply_defer(x->out, &pos);
    for (uint64_t p = 0; (rc = pk_store_part_next(t, p, &part, &st)) == PK_OK;
         p = (uint64_t)part + 1) {
        const pk_part_rate *r = part < PK_SLOTS ? &x->srv->rates[part] : NULL;
        pk_splitfind_result lf = {PK_SPLITFIND_WAIT, NULL, 0, 1, 0};
        if (r && r->finder)
            pk_splitfind_key(r->finder, NOW(x), &lf);
        pk_reply_map(x->out, x->proto, 10);
        pk_reply_bulk_str(x->out, "partition");
        pk_reply_int(x->out, part);
        pk_reply_bulk_str(x->out, "keys");
        pk_reply_int(x->out, (int64_t)st.keys);
        pk_reply_bulk_str(x->out, "bytes");
        pk_reply_int(x->out, (int64_t)st.bytes);
        pk_reply_bulk_str(x->out, "reads_per_sec");
        pk_reply_double(x->out, x->proto, r ? r->read_rate : 0);
        pk_reply_bulk_str(x->out, "writes_per_sec");
        pk_reply_double(x->out, x->proto, r ? r->write_rate : 0);
        /* The load split finder's verdict while it samples ("off" when it
         * does not), and its split key, or for a hot key that key. */
        pk_reply_bulk_str(x->out, "load_split");
        pk_reply_bulk_str(
            x->out, r && r->finder ? pk_splitfind_reason(lf.verdict) : "off");
        pk_reply_bulk_str(x->out, "split_key");
        if (lf.key)
            pk_reply_bulk(x->out, lf.key, lf.len);
        else
            pk_reply_null(x->out, x->proto);
        /* Of the commands run here on it since start (CLUSTER
         * SLOT-STATS has the same). */
        pk_reply_bulk_str(x->out, "cpu_usec");
        pk_reply_int(x->out, r ? (int64_t)r->cpu_us : 0);
        pk_reply_bulk_str(x->out, "network_bytes_in");
        pk_reply_int(x->out, r ? (int64_t)r->net_in : 0);
        pk_reply_bulk_str(x->out, "network_bytes_out");
        pk_reply_int(x->out, r ? (int64_t)r->net_out : 0);
        n++;
    }
    pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY, n);
}

/*
 * Keyspace commands: KEYS RANDOMKEY RENAME RENAMENX COPY DUMP RESTORE
 * OBJECT TIME, with Redis 7.0's argument order, replies and error texts.
 * (FLUSHDB is FLUSHALL -- one database --, TOUCH is EXISTS and UNLINK is
 * DEL: their rows in pk_cmd.c point at those functions.)
 *
 * What partkv does not track, it says so in its answers rather than
 * inventing numbers: OBJECT IDLETIME is 0 (no access times are kept),
 * OBJECT FREQ fails as Redis does without an LFU maxmemory-policy (the
 * policy is noeviction), REFCOUNT is 1 (values are never shared), RESTORE
 * accepts IDLETIME and FREQ and keeps nothing of them.  OBJECT ENCODING
 * names what Redis would pick for a string from its value alone ("int",
 * "embstr" up to 44 bytes, "raw"; Redis also answers "raw" for short
 * strings built by APPEND or SETRANGE) and for aggregates the encoding
 * Redis uses once they are large (hashtable, skiplist, quicklist,
 * hashtable for sets): they are all B-tree records here.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_num.h"
#include "core/pk_salt.h"
#include "server/pk_cmd.h"
#include "store/pk_key.h"
#include "store/pk_keyops.h"
#include "store/pk_store_part.h"
#include "store/pk_str.h"

#define EMBSTR_MAX 44 /* Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT */

typedef struct keys_out {
    pk_cmd_ctx *x;
    size_t n;
} keys_out;

static int keys_emit(void *ctx, uint32_t part, pk_slice key)
{
    keys_out *o = ctx;

    (void)part;
    if (!o->x->c->raw_keys && pk_salt_internal(key.ptr, key.len))
        return 0; /* a salted key's part: the key is listed once */
    if (pk_acl_conn_hides(o->x->c, key.ptr, key.len))
        return 0; /* outside the user's read patterns */
    pk_reply_bulk(o->x->out, key.ptr, key.len);
    o->n++;
    return 0;
}

void pk_cmd_keys(pk_cmd_ctx *x)
{
    pk_scan_opts o = {x->argv[1].ptr, x->argv[1].len,     SIZE_MAX,
                      PK_TYPE_NONE,   pk_cmd_keyspace(x), x->srv};
    keys_out ko = {x, 0};
    uint64_t cur = 0, next;
    size_t pos;
    int rc;

    TXN_OR_RETURN(x, t);
    pk_reply_defer(x->out, &pos);
    do {
        rc = pk_store_scan(t, cur, &o, NOW(x), keys_emit, &ko, &next);
        cur = next;
    } while (rc == PK_OK && next != 0);
    if (rc != PK_OK) {
        /* Cut off the slot and the keys written after it. */
        x->out->len = x->out->head + pos;
        pk_cmd_store_error(x, rc);
        return;
    }
    pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_ARRAY, ko.n);
}

/* A random number for RANDOMKEY: the monotonic clock and the command
 * count through XXH3 (the server keeps no generator state). */
static uint64_t rnd(const pk_server *s, uint64_t salt)
{
    uint64_t in[3] = {uv_hrtime(), s->total_cmds, salt};

    return pk_hash_xxh3(in, sizeof(in));
}

/*
 * RANDOMKEY: a partition chosen with probability proportional to its key
 * count, then a key of it (pk_key_random); a partition whose keys have
 * all expired passes the pick on to the next ones.
 */
/* One random key of the partitions this node leads (weighted by their
 * key counts): PK_OK with *key, PK_ENOTFOUND when there is none, or an
 * error. */
static int random_key(pk_cmd_ctx *x, pk_txn *t, uint64_t salt, pk_slice *key)
{
    uint64_t total = 0, target, acc = 0;
    pk_part_stats st;
    uint32_t part, first = UINT32_MAX;
    int rc, wrapped = 0;

    for (uint64_t p = 0; (rc = pk_store_part_next(t, p, &part, &st)) == PK_OK;
         p = (uint64_t)part + 1)
        if (pk_srv_leads(x->srv, part))
            total += st.keys;
    if (rc != PK_ENOTFOUND || total == 0)
        return rc; /* an error, or no key (PK_ENOTFOUND) */
    target = rnd(x->srv, salt) % total;
    for (uint64_t p = 0;;) {
        rc = pk_store_part_next(t, p, &part, &st);
        if (rc == PK_ENOTFOUND && !wrapped) {
            wrapped = 1, p = 0;
            continue;
        }
        if (rc != PK_OK || part == first)
            break;
        p = (uint64_t)part + 1;
        if (!pk_srv_leads(x->srv, part) || st.keys == 0 ||
            (first == UINT32_MAX && (acc += st.keys) <= target))
            continue;
        if (first == UINT32_MAX)
            first = part;
        rc = pk_key_random(t, part, rnd(x->srv, part + salt), NOW(x), key);
        if (rc != PK_ENOTFOUND)
            break;
    }
    return rc;
}

/* RANDOMKEY: a user limited to some keys gets one of those (100 draws,
 * then nil), so that it learns of no other key. */
void pk_cmd_randomkey(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice key = {NULL, 0};
    int rc = PK_ENOTFOUND;

    for (uint64_t draw = 0; draw < 100; draw++) {
        rc = random_key(x, t, draw, &key);
        if (rc != PK_OK || !pk_acl_conn_hides(x->c, key.ptr, key.len))
            break;
        rc = PK_ENOTFOUND;
    }
    if (rc != PK_OK && rc != PK_ENOTFOUND)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_slice(x, rc == PK_OK ? key : (pk_slice){NULL, 0});
}

static int same_key(const pk_cmd_ctx *x)
{
    return x->argv[1].len == x->argv[2].len &&
           memcmp(x->argv[1].ptr, x->argv[2].ptr, x->argv[1].len) == 0;
}

/* RENAME / RENAMENX (nx): Redis checks the source before the same-name
 * case, so "RENAME k k" of a missing k is "no such key". */
static void rename_generic(pk_cmd_ctx *x, int nx)
{
    TXN_OR_RETURN(x, t);
    int done = 0, rc;

    if (same_key(x)) {
        rc = pk_key_exists(t, PK_KEY(x, 1), NOW(x), &done);
        if (rc == PK_OK && !done)
            rc = PK_ENOTFOUND;
        done = 0;
    } else {
        rc = pk_key_copy(t, PK_KEY(x, 1), PK_KEY(x, 2),
                         PK_KEYOPS_MOVE | (nx ? 0 : PK_KEYOPS_REPLACE), NOW(x),
                         &done);
    }
    if (rc == PK_ENOTFOUND)
        pk_reply_error(x->out, "ERR no such key");
    else if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (nx)
        pk_reply_int(x->out, done);
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_rename(pk_cmd_ctx *x)
{
    rename_generic(x, 0);
}

void pk_cmd_renamenx(pk_cmd_ctx *x)
{
    rename_generic(x, 1);
}

/* Redis's getIntFromObjectOrReply: an int64 that fits an int. */
static int arg_int(pk_cmd_ctx *x, const pk_arg *a, int64_t *v)
{
    if (!pk_arg_i64(a, v) || *v < INT32_MIN || *v > INT32_MAX) {
        pk_reply_notint(x);
        return 0;
    }
    return 1;
}

/* COPY source destination [DB destination-db] [REPLACE] */
void pk_cmd_copy(pk_cmd_ctx *x)
{
    unsigned flags = 0;
    int64_t db;
    int done = 0, rc;

    for (int i = 3; i < x->argc; i++) {
        if (pk_arg_eq(&x->argv[i], "replace")) {
            flags |= PK_KEYOPS_REPLACE;
        } else if (pk_arg_eq(&x->argv[i], "db") && i + 1 < x->argc) {
            if (!arg_int(x, &x->argv[++i], &db))
                return;
            /* One database, as with "databases 1" in Redis. */
            if (db != 0) {
                pk_reply_error(x->out, "ERR DB index is out of range");
                return;
            }
        } else {
            pk_reply_syntax(x);
            return;
        }
    }
    if (same_key(x)) {
        pk_reply_error(x->out,
                       "ERR source and destination objects are the same");
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_key_copy(t, PK_KEY(x, 1), PK_KEY(x, 2), flags, NOW(x), &done);
    if (rc != PK_OK && rc != PK_ENOTFOUND)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, done);
}

void pk_cmd_dump(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    pk_slice v;
    int rc = pk_key_dump(t, PK_KEY(x, 1), NOW(x), &v);

    pk_reply_value(x, rc, v);
}

/* RESTORE's options (from argument 4 on); 0 after replying an error. */
static int restore_options(pk_cmd_ctx *x, unsigned *flags, int *abs)
{
    int64_t idle = -1, freq = -1;

    for (int i = 4; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        int more = i + 1 < x->argc;
        if (pk_arg_eq(a, "replace")) {
            *flags |= PK_KEYOPS_REPLACE;
        } else if (pk_arg_eq(a, "absttl")) {
            *abs = 1;
        } else if (pk_arg_eq(a, "idletime") && more && freq == -1) {
            if (!pk_arg_i64(&x->argv[++i], &idle)) {
                pk_reply_notint(x);
                return 0;
            }
            if (idle < 0) {
                pk_reply_error(x->out, "ERR Invalid IDLETIME value, must be "
                                       ">= 0");
                return 0;
            }
        } else if (pk_arg_eq(a, "freq") && more && idle == -1) {
            if (!pk_arg_i64(&x->argv[++i], &freq)) {
                pk_reply_notint(x);
                return 0;
            }
            if (freq < 0 || freq > 255) {
                pk_reply_error(x->out, "ERR Invalid FREQ value, must be >= 0 "
                                       "and <= 255");
                return 0;
            }
        } else {
            pk_reply_syntax(x);
            return 0;
        }
    }
    return 1;
}

/* RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f] */
void pk_cmd_restore(pk_cmd_ctx *x)
{
    unsigned flags = 0;
    int abs = 0, exists = 0, rc;
    int64_t ttl;
    uint64_t when;

    if (!restore_options(x, &flags, &abs))
        return;
    TXN_OR_RETURN(x, t);
    /* Redis's order: BUSYKEY, then the TTL, then the payload. */
    if (!(flags & PK_KEYOPS_REPLACE)) {
        rc = pk_key_exists(t, PK_KEY(x, 1), NOW(x), &exists);
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return;
        }
        if (exists) {
            pk_reply_error(x->out, "BUSYKEY Target key name already exists.");
            return;
        }
    }
    if (!pk_arg_i64(&x->argv[2], &ttl)) {
        pk_reply_notint(x);
        return;
    }
    if (ttl < 0) {
        pk_reply_error(x->out, "ERR Invalid TTL value, must be >= 0");
        return;
    }
    /* A relative TTL so large that now + ttl overflows never expires. */
    when = (uint64_t)ttl;
    if (ttl != 0 && !abs)
        when = ttl > INT64_MAX - (int64_t)NOW(x) ? (uint64_t)INT64_MAX
                                                 : when + NOW(x);
    rc = pk_key_restore(t, PK_KEY(x, 1), x->argv[3].ptr, x->argv[3].len, when,
                        flags, NOW(x));
    if (rc == PK_OK)
        pk_reply_simple(x->out, "OK");
    else if (rc == PK_EEXIST)
        pk_reply_error(x->out, "BUSYKEY Target key name already exists.");
    else if (pk_txn_error(t) == PK_OK &&
             (rc == PK_EVERSION || rc == PK_ECHECKSUM))
        pk_reply_error(x->out, "ERR DUMP payload version or checksum are "
                               "wrong");
    else if (pk_txn_error(t) == PK_OK && rc == PK_ECORRUPT)
        pk_reply_error(x->out, "ERR Bad data format");
    else
        pk_cmd_store_error(x, rc);
}

/* OBJECT ENCODING's answer for a key of type (string value v). */
static const char *encoding(pk_type type, pk_slice v)
{
    int64_t n;

    switch (type) {
    case PK_TYPE_STRING:
        if (v.len <= 20 && pk_str_parse_int(v.ptr, v.len, &n) == PK_OK)
            return "int";
        return v.len <= EMBSTR_MAX ? "embstr" : "raw";
    case PK_TYPE_ZSET:
        return "skiplist";
    case PK_TYPE_LIST:
        return "quicklist";
    default:
        return "hashtable"; /* hashes and sets */
    }
}

static void object_help(pk_cmd_ctx *x)
{
    static const char *const help[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to "
        "store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned "
        "integer is",
        "    proportional to the logarithm of the recent access frequency of "
        "the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated "
        "number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the "
        "specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    };
    pk_reply_simples(x->out, help, sizeof(help) / sizeof(help[0]));
}

void pk_cmd_object(pk_cmd_ctx *x)
{
    const pk_arg *sub = &x->argv[1];
    pk_slice v = {NULL, 0};
    pk_type type;
    int rc;

    static const pk_subcmd subs[] = {{"encoding", 3, NULL},
                                     {"freq", 3, NULL},
                                     {"help", 2, NULL},
                                     {"idletime", 3, NULL},
                                     {"refcount", 3, NULL}};
    int i =
        pk_cmd_subcommand(x, "object", subs, sizeof(subs) / sizeof(subs[0]));

    if (i < 0)
        return;
    if (strcmp(subs[i].name, "help") == 0) {
        object_help(x);
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_key_type(t, PK_KEY(x, 2), NOW(x), &type);
    if (rc == PK_OK && type == PK_TYPE_STRING)
        rc = pk_str_get(t, PK_KEY(x, 2), NOW(x), &v);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else if (type == PK_TYPE_NONE)
        pk_reply_null(x->out, x->proto);
    else if (pk_arg_eq(sub, "encoding"))
        pk_reply_bulk_str(x->out, encoding(type, v));
    else if (pk_arg_eq(sub, "refcount"))
        pk_reply_int(x->out, 1);
    else if (pk_arg_eq(sub, "idletime"))
        pk_reply_int(x->out, 0); /* access times are not tracked */
    else
        pk_reply_error(x->out,
                       "ERR An LFU maxmemory policy is not selected, access "
                       "frequency not tracked. Please note that when "
                       "switching between policies at runtime LRU and LFU "
                       "data will take some time to adjust.");
}

/* TIME: Unix seconds and microseconds, two bulk strings. */
void pk_cmd_time(pk_cmd_ctx *x)
{
    struct timeval tv;
    char s[PK_I64_CHARS], us[PK_I64_CHARS];

    gettimeofday(&tv, NULL);
    pk_i64_format(s, (int64_t)tv.tv_sec);
    pk_i64_format(us, (int64_t)tv.tv_usec);
    pk_reply_array(x->out, 2);
    pk_reply_bulk_str(x->out, s);
    pk_reply_bulk_str(x->out, us);
}

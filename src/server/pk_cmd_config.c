/*
 * CONFIG GET | SET | RESETSTAT | REWRITE | HELP, over one table of
 * parameters with Redis 7.0's names, aliases, types, ranges and error
 * texts (pk_config.h says which parameters act on partkv).
 *
 * CONFIG SET of several pairs is atomic as in Redis 7: every name is
 * looked up, then every value parsed into a scratch copy, and only when
 * all are valid are they stored.  The first error found wins, in Redis's
 * order: unknown name, immutable or duplicate name, then the values.
 */
#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "server/pk_acl.h"
#include "server/pk_cmd.h"
#include "server/pk_config.h"
#include "store/pk_glob.h"

enum cfg_kind { K_BOOL, K_INT, K_MEM, K_ENUM, K_SAVE, K_STR, K_OBUF };
enum cfg_how {
    H_ACCEPT, /* validated, recorded and reported; no effect on partkv */
    H_LIVE,   /* recorded and copied into srv->cfg */
    H_FIXED   /* set at start: refused as immutable */
};
/* Values that live in the server rather than in pk_config_state. */
enum cfg_src {
    S_SLOT,
    S_PORT,
    S_FSYNC,
    S_BIND,
    S_DIR,
    S_PASS,
    S_MAXCLIENTS,
    S_BULK,
    S_QBUF,
    S_PROTECTED,
    S_OBUF,
    S_ACLLOG
};

#define HIDDEN 1 /* CONFIG GET reports it for its exact name only */

typedef struct cfg_param {
    const char *name, *alias;
    unsigned char kind, how, src, flags;
    int64_t lo, hi, def;
    const char *const *enums; /* K_ENUM: NULL-terminated, Redis's order */
} cfg_param;

static const char *const fsync_enum[] = {"everysec", "always", "no", NULL};
static const char *const loglevel_enum[] = {"debug", "verbose", "notice",
                                            "warning", NULL};
static const char *const policy_enum[] = {
    "volatile-lru",   "volatile-lfu", "volatile-random",
    "volatile-ttl",   "allkeys-lru",  "allkeys-lfu",
    "allkeys-random", "noeviction",   NULL};
static const char *const sanitize_enum[] = {"no", "yes", "clients", NULL};

#define MB (1024 * 1024)
#define BOOL(n, a, how, src, def)                                              \
    {                                                                          \
        n, a, K_BOOL, how, src, 0, 0, 1, def, NULL                             \
    }
#define INT(n, a, how, src, lo, hi, def)                                       \
    {                                                                          \
        n, a, K_INT, how, src, 0, lo, hi, def, NULL                            \
    }
#define MEM(n, a, how, src, lo, hi, def)                                       \
    {                                                                          \
        n, a, K_MEM, how, src, 0, lo, hi, def, NULL                            \
    }
#define ENUM(n, how, src, def, e)                                              \
    {                                                                          \
        n, NULL, K_ENUM, how, src, 0, 0, 0, def, e                             \
    }
#define STR(n, src)                                                            \
    {                                                                          \
        n, NULL, K_STR, H_FIXED, src, 0, 0, 0, 0, NULL                         \
    }
#define A H_ACCEPT
#define L H_LIVE
#define X H_FIXED

/* Sorted by name for the reader; lookups are linear (a few dozen rows,
 * run only by CONFIG). */
static const cfg_param params[] = {
    INT("acllog-max-len", NULL, L, S_ACLLOG, 0, LONG_MAX, 128),
    INT("active-expire-effort", NULL, A, S_SLOT, 1, 10, 1),
    BOOL("activerehashing", NULL, A, S_SLOT, 1),
    ENUM("appendfsync", X, S_FSYNC, 0, fsync_enum),
    BOOL("appendonly", NULL, X, S_SLOT, 0),
    STR("bind", S_BIND),
    INT("busy-reply-threshold", "lua-time-limit", A, S_SLOT, 0, LONG_MAX, 5000),
    {"client-output-buffer-limit", NULL, K_OBUF, L, S_OBUF, 0, 0, 0, 0, NULL},
    MEM("client-query-buffer-limit", NULL, L, S_QBUF, MB, LONG_MAX, 1024 * MB),
    BOOL("cluster-enabled", NULL, X, S_SLOT, 0),
    INT("databases", NULL, X, S_SLOT, 1, INT_MAX, 1),
    STR("dir", S_DIR),
    INT("hash-max-listpack-entries", "hash-max-ziplist-entries", A, S_SLOT, 0,
        LONG_MAX, 512),
    MEM("hash-max-listpack-value", "hash-max-ziplist-value", A, S_SLOT, 0,
        LONG_MAX, 64),
    MEM("hll-sparse-max-bytes", NULL, A, S_SLOT, 0, LONG_MAX, 3000),
    INT("latency-monitor-threshold", NULL, A, S_SLOT, 0, LLONG_MAX, 0),
    BOOL("lazyfree-lazy-eviction", NULL, A, S_SLOT, 0),
    BOOL("lazyfree-lazy-expire", NULL, A, S_SLOT, 0),
    BOOL("lazyfree-lazy-server-del", NULL, A, S_SLOT, 0),
    BOOL("lazyfree-lazy-user-del", NULL, A, S_SLOT, 0),
    BOOL("lazyfree-lazy-user-flush", NULL, A, S_SLOT, 0),
    INT("list-compress-depth", NULL, A, S_SLOT, 0, INT_MAX, 0),
    INT("list-max-listpack-size", "list-max-ziplist-size", A, S_SLOT, INT_MIN,
        INT_MAX, -2),
    ENUM("loglevel", A, S_SLOT, 2, loglevel_enum),
    INT("maxclients", NULL, L, S_MAXCLIENTS, 1, UINT_MAX, 10000),
    MEM("maxmemory", NULL, X, S_SLOT, 0, LLONG_MAX, 0),
    ENUM("maxmemory-policy", A, S_SLOT, 7, policy_enum),
    INT("maxmemory-samples", NULL, A, S_SLOT, 1, INT_MAX, 5),
    INT("min-replicas-max-lag", "min-slaves-max-lag", X, S_SLOT, 0, INT_MAX,
        10),
    INT("min-replicas-to-write", "min-slaves-to-write", X, S_SLOT, 0, INT_MAX,
        0),
    INT("port", NULL, X, S_PORT, 0, 65535, 6379),
    BOOL("protected-mode", NULL, L, S_PROTECTED, 1),
    MEM("proto-max-bulk-len", NULL, L, S_BULK, MB, LONG_MAX, 512 * MB),
    {"rdb-key-save-delay", NULL, K_INT, A, S_SLOT, HIDDEN, INT_MIN, INT_MAX, 0,
     NULL},
    BOOL("replica-read-only", "slave-read-only", A, S_SLOT, 1),
    BOOL("replica-serve-stale-data", "slave-serve-stale-data", A, S_SLOT, 1),
    /* The default user's password (pk_acl_set_requirepass). */
    {"requirepass", NULL, K_STR, H_LIVE, S_PASS, 0, 0, 0, 0, NULL},
    ENUM("sanitize-dump-payload", A, S_SLOT, 0, sanitize_enum),
    {"save", NULL, K_SAVE, A, S_SLOT, 0, 0, 0, 0, NULL},
    INT("set-max-intset-entries", NULL, A, S_SLOT, 0, LONG_MAX, 512),
    INT("slowlog-log-slower-than", NULL, A, S_SLOT, -1, LLONG_MAX, 10000),
    INT("slowlog-max-len", NULL, A, S_SLOT, 0, LONG_MAX, 128),
    MEM("stream-node-max-bytes", NULL, A, S_SLOT, 0, LONG_MAX, 4096),
    INT("stream-node-max-entries", NULL, A, S_SLOT, 0, LLONG_MAX, 100),
    INT("tcp-keepalive", NULL, A, S_SLOT, 0, INT_MAX, 300),
    INT("timeout", NULL, X, S_SLOT, 0, INT_MAX, 0),
    INT("zset-max-listpack-entries", "zset-max-ziplist-entries", A, S_SLOT, 0,
        LONG_MAX, 128),
    MEM("zset-max-listpack-value", "zset-max-ziplist-value", A, S_SLOT, 0,
        LONG_MAX, 64),
};

#define NPARAMS (sizeof(params) / sizeof(params[0]))
static_assert(NPARAMS <= PK_CONFIG_MAX, "raise PK_CONFIG_MAX");

/* The most CONFIG SET pairs one command may carry: each needs a slot of
 * scratch space, and Redis has fewer parameters than this anyway. */
#define MAX_PAIRS 256

/* The RESP parser refuses limits above these (pk_resp_parser_new):
 * larger settings are recorded as given and applied clamped. */
#define BULK_CAP ((int64_t)(PTRDIFF_MAX / 2))
#define QBUF_CAP                                                               \
    ((int64_t)(SIZE_MAX / 4 < INT64_MAX ? SIZE_MAX / 4 : INT64_MAX))

/* The value of a parameter partkv acts on, as s->cfg holds it. */
static int64_t live_get(const pk_server *s, int src)
{
    switch (src) {
    case S_MAXCLIENTS:
        return s->cfg.maxclients;
    case S_BULK:
        return (int64_t)s->cfg.proto_max_bulk_len;
    case S_QBUF:
        return (int64_t)s->cfg.client_query_buffer_limit;
    case S_OBUF: /* lives in s->cfg.obuf_limits alone */
        return 0;
    case S_ACLLOG:
        return PK_ACL_LOG_MAX; /* the ACL users are made after */
    default:
        return s->cfg.protected_mode;
    }
}

void pk_config_init(pk_server *s)
{
    for (size_t i = 0; i < NPARAMS; i++)
        s->conf.v[i] = params[i].how == H_LIVE ? live_get(s, params[i].src)
                                               : params[i].def;
    s->conf.save[0] = '\0';
}

static int64_t value_get(const pk_server *s, size_t i)
{
    switch (params[i].src) {
    case S_PORT:
        return s->port;
    case S_FSYNC: /* pk_fsync's order is always, everysec, no */
        return s->cfg.fsync == PK_FSYNC_ALWAYS     ? 1
               : s->cfg.fsync == PK_FSYNC_EVERYSEC ? 0
                                                   : 2;
    default:
        return s->conf.v[i];
    }
}

/* Records v; a live parameter is copied into s->cfg, where new
 * connections (maxclients, the parser limits) and accept() read it. */
static void value_set(pk_server *s, size_t i, int64_t v)
{
    s->conf.v[i] = v;
    switch (params[i].src) {
    case S_MAXCLIENTS: /* the table's range is UINT_MAX, the field an int */
        s->cfg.maxclients = v > INT_MAX ? INT_MAX : (int)v;
        break;
    case S_BULK:
        s->cfg.proto_max_bulk_len = (size_t)(v > BULK_CAP ? BULK_CAP : v);
        break;
    case S_QBUF:
        s->cfg.client_query_buffer_limit =
            (size_t)(v > QBUF_CAP ? QBUF_CAP : v);
        break;
    case S_PROTECTED:
        s->cfg.protected_mode = (int)v;
        break;
    case S_ACLLOG: /* kept as given; the log holds at most 1 << 20 */
        if (s->acl)
            pk_acl_log_limit(s->acl, (size_t)(v > (1 << 20) ? 1 << 20 : v));
        break;
    default:
        break;
    }
}

/* Formats parameter i's value into buf (size n); returns it. */
static const char *value_str(const pk_server *s, size_t i, char *buf, size_t n)
{
    const cfg_param *p = &params[i];
    int64_t v;

    if (p->kind == K_SAVE)
        return s->conf.save;
    if (p->kind == K_OBUF) {
        pk_config_obuf_format(s->cfg.obuf_limits, buf, n);
        return buf;
    }
    if (p->kind == K_STR) {
        const char *str = p->src == S_BIND  ? s->cfg.bind
                          : p->src == S_DIR ? s->cfg.dir
                                            : s->cfg.requirepass;
        return str ? str : "";
    }
    v = value_get(s, i);
    if (p->kind == K_BOOL)
        return v ? "yes" : "no";
    if (p->kind == K_ENUM)
        return p->enums[v];
    snprintf(buf, n, "%lld", (long long)v);
    return buf;
}

static int name_is(const char *name, const pk_arg *a)
{
    return name && strlen(name) == a->len &&
           strncasecmp(name, a->ptr, a->len) == 0;
}

/* The row named (or aliased) a, or -1; *as (if not NULL) receives the
 * spelling that matched.  Redis 7.0 holds an alias as a config of its
 * own: errors name it, and a name and its alias are not duplicates. */
static int lookup(const pk_arg *a, const char **as)
{
    for (size_t i = 0; i < NPARAMS; i++) {
        const char *m = name_is(params[i].name, a)    ? params[i].name
                        : name_is(params[i].alias, a) ? params[i].alias
                                                      : NULL;
        if (m) {
            if (as)
                *as = m;
            return (int)i;
        }
    }
    return -1;
}

/* Redis's memtoull(): digits and an optional unit (b k kb m mb g gb,
 * any case), no sign.  Unlike Redis, an overflow of 64 bits is an error
 * rather than a wrapped value. */
static int parse_mem_u64(const pk_arg *a, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {{"", 1},           {"b", 1},
                 {"k", 1000},       {"kb", 1024},
                 {"m", 1000000},    {"mb", 1024 * 1024},
                 {"g", 1000000000}, {"gb", 1024ull * 1024 * 1024}};
    size_t d = 0;
    uint64_t v = 0;

    while (d < a->len && a->ptr[d] >= '0' && a->ptr[d] <= '9') {
        unsigned digit = (unsigned)(a->ptr[d] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return 0;
        v = v * 10 + digit;
        d++;
    }
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        pk_arg rest = {a->ptr + d, a->len - d};
        if (name_is(units[u].unit, &rest)) {
            if (v > UINT64_MAX / units[u].mul)
                return 0;
            *out = v * units[u].mul;
            return 1;
        }
    }
    return 0;
}

/* parse_mem_u64 for the table's signed values: at most INT64_MAX. */
static int parse_mem(const pk_arg *a, int64_t *out)
{
    uint64_t v;

    if (!parse_mem_u64(a, &v) || v > (uint64_t)INT64_MAX)
        return 0;
    *out = (int64_t)v;
    return 1;
}

/* Redis's "save" syntax: "" or pairs "seconds changes" (seconds >= 1,
 * changes >= 0) split at single spaces, where an empty token reads as 0
 * as strtoll() leaves it; written back normalized into out. */
static int parse_save(const pk_arg *a, char out[PK_CONFIG_SAVE_LEN])
{
    size_t i = 0, used = 0;
    int ntok = 0;

    out[0] = '\0';
    while (a->len > 0 && i <= a->len) {
        const char *sp = memchr(a->ptr + i, ' ', a->len - i);
        size_t end = sp ? (size_t)(sp - a->ptr) : a->len;
        pk_arg tok = {a->ptr + i, end - i};
        int64_t v = 0;
        char num[32];

        if ((tok.len > 0 && !pk_arg_i64(&tok, &v)) || v < ((ntok & 1) ? 0 : 1))
            return 0;
        int n =
            snprintf(num, sizeof(num), "%s%lld", ntok ? " " : "", (long long)v);
        if (used + (size_t)n >= PK_CONFIG_SAVE_LEN)
            return 0;
        memcpy(out + used, num, (size_t)n + 1);
        used += (size_t)n;
        ntok++;
        i = end + 1;
    }
    return (ntok & 1) == 0;
}

void pk_config_obuf_default(pk_obuf_limit lim[PK_CLIENT_CLASSES])
{
    static const pk_obuf_limit def[PK_CLIENT_CLASSES] = {
        {0, 0, 0},
        {256ull * MB, 64ull * MB, 60},
        {32ull * MB, 8ull * MB, 60},
    };

    memcpy(lim, def, sizeof(def));
}

/* Redis's getClientTypeByName(), without "master" (which Redis refuses
 * for limits): the class, or -1. */
static int obuf_class(const pk_arg *a)
{
    static const char *const names[] = {"normal", "slave", "replica", "pubsub"};
    static const int classes[] = {PK_CLIENT_NORMAL, PK_CLIENT_REPLICA,
                                  PK_CLIENT_REPLICA, PK_CLIENT_PUBSUB};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (pk_arg_eq(a, names[i]))
            return classes[i];
    return -1;
}

/* strtoll(tok, &end, 10) with *end == '\0', as Redis reads the soft
 * seconds: blanks and a sign may lead, and an empty token reads as 0. */
static int obuf_seconds(const pk_arg *a, int64_t *out)
{
    char buf[32], *end;

    if (a->len >= sizeof(buf) || memchr(a->ptr, '\0', a->len))
        return 0;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    *out = strtoll(buf, &end, 10);
    return *end == '\0';
}

/* The token at *i of s (len bytes), split at single spaces as Redis's
 * sdssplitlen does; *i moves past it and its space. */
static pk_arg obuf_token(const char *s, size_t len, size_t *i)
{
    const char *sp = memchr(s + *i, ' ', len - *i);
    size_t end = sp ? (size_t)(sp - s) : len;
    pk_arg t = {s + *i, end - *i};

    *i = end + 1;
    return t;
}

/* How many tokens: "" has none, and two spaces make an empty one. */
static size_t obuf_ntokens(const char *s, size_t len)
{
    size_t n = 0, i = 0;

    while (len > 0 && i <= len) {
        obuf_token(s, len, &i);
        n++;
    }
    return n;
}

/* One group "<class> <hard> <soft> <seconds>" into *out: its class, or
 * -1 with Redis's reason in *why. */
static int obuf_group(const pk_arg t[4], pk_obuf_limit *out, const char **why)
{
    int c = obuf_class(&t[0]);

    if (c < 0) {
        *why = "Invalid client class specified in buffer limit "
               "configuration.";
        return -1;
    }
    if (!parse_mem_u64(&t[1], &out->hard) ||
        !parse_mem_u64(&t[2], &out->soft) ||
        !obuf_seconds(&t[3], &out->soft_s) || out->soft_s < 0) {
        *why = "Error in hard, soft or soft_seconds setting in buffer "
               "limit configuration.";
        return -1;
    }
    return c;
}

int pk_config_obuf_parse(const char *s, size_t len,
                         pk_obuf_limit lim[PK_CLIENT_CLASSES], const char **why)
{
    pk_obuf_limit v[PK_CLIENT_CLASSES];
    int set[PK_CLIENT_CLASSES] = {0};
    size_t n = obuf_ntokens(s, len), i = 0;

    if (n % 4 != 0) {
        *why = "Wrong number of arguments in buffer limit configuration.";
        return PK_EINVAL;
    }
    /* Every group is checked before any class changes, as in Redis. */
    for (size_t g = 0; g < n / 4; g++) {
        pk_arg t[4];
        pk_obuf_limit one;
        int c;

        for (int k = 0; k < 4; k++)
            t[k] = obuf_token(s, len, &i);
        if ((c = obuf_group(t, &one, why)) < 0)
            return PK_EINVAL;
        v[c] = one;
        set[c] = 1;
    }
    for (int c = 0; c < PK_CLIENT_CLASSES; c++)
        if (set[c])
            lim[c] = v[c];
    return PK_OK;
}

void pk_config_obuf_format(const pk_obuf_limit lim[PK_CLIENT_CLASSES],
                           char *buf, size_t n)
{
    static const char *const names[] = {"normal", "slave", "pubsub"};
    size_t used = 0;

    buf[0] = '\0';
    for (int c = 0; c < PK_CLIENT_CLASSES && used < n; c++)
        used += (size_t)snprintf(
            buf + used, n - used, "%s%s %llu %llu %lld", c ? " " : "", names[c],
            (unsigned long long)lim[c].hard, (unsigned long long)lim[c].soft,
            (long long)lim[c].soft_s);
}

/* The new values of parameters not held in an int64_t, each set at most
 * once per CONFIG SET (neither has an alias, duplicates are refused). */
typedef struct cfg_scratch {
    char save[PK_CONFIG_SAVE_LEN];
    pk_obuf_limit obuf[PK_CLIENT_CLASSES];
    const pk_arg *pass; /* requirepass */
} cfg_scratch;

/* Parses a for row i into *v (or the scratch); on failure writes Redis's
 * reason to err (size n) and returns 0. */
static int parse_value(const pk_server *s, size_t i, const pk_arg *a,
                       int64_t *v, cfg_scratch *sc, char *err, size_t n)
{
    static const pk_arg invalid = {"\x01", 1};
    const cfg_param *p = &params[i];

    if (p->kind == K_STR) { /* requirepass: any bytes, as in Redis */
        sc->pass = a;
        return 1;
    }
    /* Redis reads values as C strings; one with a NUL is never valid. */
    if (memchr(a->ptr, '\0', a->len) != NULL)
        a = &invalid;
    switch (p->kind) {
    case K_BOOL:
        if (pk_arg_eq(a, "yes") || pk_arg_eq(a, "no")) {
            *v = pk_arg_eq(a, "yes");
            return 1;
        }
        snprintf(err, n, "argument must be 'yes' or 'no'");
        return 0;
    case K_ENUM: {
        size_t used;
        for (int64_t e = 0; p->enums[e]; e++) {
            if (pk_arg_eq(a, p->enums[e])) {
                *v = e;
                return 1;
            }
        }
        used = (size_t)snprintf(err, n,
                                "argument(s) must be one of the following: ");
        for (int e = 0; p->enums[e] && used < n; e++)
            used += (size_t)snprintf(err + used, n - used, "%s%s",
                                     e ? ", " : "", p->enums[e]);
        return 0;
    }
    case K_SAVE:
        if (parse_save(a, sc->save))
            return 1;
        snprintf(err, n, "Invalid save parameters");
        return 0;
    case K_OBUF: {
        const char *why;
        memcpy(sc->obuf, s->cfg.obuf_limits, sizeof(sc->obuf));
        if (pk_config_obuf_parse(a->ptr, a->len, sc->obuf, &why) == PK_OK)
            return 1;
        snprintf(err, n, "%s", why);
        return 0;
    }
    case K_MEM:
        if (!parse_mem(a, v)) {
            snprintf(err, n, "argument must be a memory value");
            return 0;
        }
        break;
    default:
        if (!pk_arg_i64(a, v)) {
            snprintf(err, n, "argument couldn't be parsed into an integer");
            return 0;
        }
    }
    if (*v < p->lo || *v > p->hi) {
        snprintf(err, n, "argument must be between %lld and %lld inclusive",
                 (long long)p->lo, (long long)p->hi);
        return 0;
    }
    return 1;
}

/* The argument as an error text shows it: Redis prints it with %s. */
static int arg_width(const pk_arg *a)
{
    const char *nul = memchr(a->ptr, '\0', a->len);
    size_t n = nul ? (size_t)(nul - a->ptr) : a->len;

    return (int)(n > 128 ? 128 : n);
}

/* The default user's password (all over the cluster), and CONFIG GET's
 * answer (up to a NUL the password may hold); 0 out of memory. */
static int set_requirepass(pk_server *s, const pk_arg *pw)
{
    char *copy = malloc(pw->len + 1);

    if (copy == NULL || pk_acl_set_requirepass(s, pw->ptr, pw->len, 1) != 0) {
        free(copy);
        return 0;
    }
    memcpy(copy, pw->ptr, pw->len);
    copy[pw->len] = '\0';
    free(s->requirepass);
    s->requirepass = copy;
    s->cfg.requirepass = copy;
    return 1;
}

static void config_set(pk_cmd_ctx *x)
{
    int npairs = (x->argc - 2) / 2, row[MAX_PAIRS];
    const char *as[MAX_PAIRS];
    int64_t val[MAX_PAIRS];
    cfg_scratch sc;
    char err[256];
    const pk_arg *bad = NULL;
    const char *why = NULL;

    if (x->argc % 2 != 0) {
        pk_reply_syntax(x);
        return;
    }
    if (npairs > MAX_PAIRS) {
        pk_reply_error(x->out, "ERR too many parameters for CONFIG SET");
        return;
    }
    for (int k = 0; k < npairs && !bad; k++) {
        const pk_arg *name = &x->argv[2 + 2 * k];
        row[k] = lookup(name, &as[k]);
        if (row[k] < 0) {
            pk_reply_errorf(x->out,
                            "ERR Unknown option or number of arguments for "
                            "CONFIG SET - '%.*s'",
                            arg_width(name), name->ptr);
            return;
        }
        if (params[row[k]].how == H_FIXED) {
            bad = name;
            why = "can't set immutable config";
        }
        for (int j = 0; j < k && !bad; j++)
            if (as[j] == as[k]) {
                bad = name;
                why = "duplicate parameter";
            }
    }
    if (bad) {
        pk_reply_errorf(x->out,
                        "ERR CONFIG SET failed (possibly related to argument "
                        "'%.*s') - %s",
                        arg_width(bad), bad->ptr, why);
        return;
    }
    /* A duplicate was refused above and "save" and
     * "client-output-buffer-limit" have no alias, so each appears at most
     * once and one scratch holds its new value.  A name and its alias
     * may both appear: the last one wins. */
    for (int k = 0; k < npairs; k++) {
        if (!parse_value(x->srv, (size_t)row[k], &x->argv[3 + 2 * k], &val[k],
                         &sc, err, sizeof(err))) {
            pk_reply_errorf(x->out,
                            "ERR CONFIG SET failed (possibly related to "
                            "argument '%s') - %s",
                            as[k], err);
            return;
        }
    }
    for (int k = 0; k < npairs; k++) {
        if (params[row[k]].kind == K_STR && !set_requirepass(x->srv, sc.pass)) {
            pk_reply_error(x->out, "ERR out of memory");
            return;
        }
    }
    for (int k = 0; k < npairs; k++) {
        if (params[row[k]].kind == K_SAVE)
            memcpy(x->srv->conf.save, sc.save, sizeof(sc.save));
        else if (params[row[k]].kind == K_OBUF)
            memcpy(x->srv->cfg.obuf_limits, sc.obuf, sizeof(sc.obuf));
        else if (params[row[k]].kind != K_STR) /* set above */
            value_set(x->srv, (size_t)row[k], val[k]);
    }
    pk_reply_simple(x->out, "OK");
}

static int has_glob(const pk_arg *a)
{
    for (size_t i = 0; i < a->len; i++)
        if (a->ptr[i] == '*' || a->ptr[i] == '?' || a->ptr[i] == '[')
            return 1;
    return 0;
}

static int glob_is(const pk_arg *pat, const char *name)
{
    return name &&
           pk_glob_match(pat->ptr, pat->len, name, strlen(name), 1) != 0;
}

/* CONFIG GET: each parameter matched by any pattern once, under the name
 * that matched (an alias only when the name itself does not); an exact
 * name (no glob characters) is answered under the spelling asked. */
static void config_get(pk_cmd_ctx *x)
{
    unsigned char seen[NPARAMS] = {0};
    size_t pos, n = 0;
    char buf[PK_CONFIG_OBUF_LEN];

    pk_reply_defer(x->out, &pos);
    for (int a = 2; a < x->argc; a++) {
        const pk_arg *pat = &x->argv[a];
        if (!has_glob(pat)) {
            int i = lookup(pat, NULL);
            if (i >= 0 && !seen[i]) {
                seen[i] = 1;
                pk_reply_bulk(x->out, pat->ptr, pat->len);
                pk_reply_bulk_str(
                    x->out, value_str(x->srv, (size_t)i, buf, sizeof(buf)));
                n++;
            }
            continue;
        }
        for (size_t i = 0; i < NPARAMS; i++) {
            const char *as = glob_is(pat, params[i].name)    ? params[i].name
                             : glob_is(pat, params[i].alias) ? params[i].alias
                                                             : NULL;
            if (seen[i] || as == NULL || (params[i].flags & HIDDEN))
                continue;
            seen[i] = 1;
            pk_reply_bulk_str(x->out, as);
            pk_reply_bulk_str(x->out, value_str(x->srv, i, buf, sizeof(buf)));
            n++;
        }
    }
    pk_reply_set_deferred(x->out, pos, x->proto, PK_REPLY_MAP, n);
}

static void config_resetstat(pk_cmd_ctx *x)
{
    x->srv->total_cmds = x->srv->hits = x->srv->misses = 0;
    pk_reply_simple(x->out, "OK");
}

/* partkv takes its settings from the command line only. */
static void config_rewrite(pk_cmd_ctx *x)
{
    pk_reply_error(x->out, "ERR The server is running without a config file");
}

static void config_help(pk_cmd_ctx *x)
{
    static const char *const help[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        ("    Return parameters matching the glob-like <pattern> and their "
         "values."),
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    };
    pk_reply_simples(x->out, help, sizeof(help) / sizeof(help[0]));
}

void pk_cmd_config(pk_cmd_ctx *x)
{
    /* As the config|sub entries of Redis's COMMAND. */
    static const pk_subcmd subs[] = {{"get", -3, config_get},
                                     {"help", 2, config_help},
                                     {"resetstat", 2, config_resetstat},
                                     {"rewrite", 2, config_rewrite},
                                     {"set", -4, config_set}};
    int i =
        pk_cmd_subcommand(x, "config", subs, sizeof(subs) / sizeof(subs[0]));

    if (i >= 0)
        subs[i].fn(x);
}

/*
 * INFO: the sections Redis clients and tools read (server, clients,
 * memory, persistence, stats, replication, cpu, cluster, keyspace) and
 * partkv's own `partitions` section.  Per-partition lines appear only when
 * the section is asked for by name; the default output carries a summary,
 * since clients call INFO on every connection.
 */
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "coord/pk_coord.h"
#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "server/pk_block.h"
#include "server/pk_cmd.h"
#include "server/pk_ft.h"
#include "server/pk_hotread.h"
#include "server/pk_repl.h"
#include "server/pk_salted.h"
#include "store/pk_store_part.h"

#define PK_VERSION "0.1.0"

static void add(pk_obuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(pk_obuf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        pk_obuf_append(b, line,
                       (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static uint64_t rss_bytes(void)
{
    unsigned long size = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%lu %lu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* A sanitizer's allocator (ASan in `make check`), when the binary is
 * built with one (a weak reference: NULL otherwise); malloc then does not
 * go through glibc's. */
extern size_t __sanitizer_get_current_allocated_bytes(void)
    __attribute__((weak));

/* The bytes malloc has handed out and not had back, as Redis's
 * used_memory counts its allocator's: what the process holds, without
 * what the allocator keeps for later (in RSS).  mallinfo2 walks glibc's
 * arenas (one or two here: the server is one thread) in microseconds.
 * Without glibc 2.33's mallinfo2: RSS, as before. */
static uint64_t heap_bytes(void)
{
    if (__sanitizer_get_current_allocated_bytes)
        return __sanitizer_get_current_allocated_bytes();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 mi = mallinfo2();

    return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
#else
    return rss_bytes();
#endif
}

static void sec_server(pk_cmd_ctx *x, pk_obuf *b)
{
    pk_server *s = x->srv;
    struct utsname u;
    uint64_t up = (pk_srv_wall_ms() - s->start_ms) / 1000;

    uname(&u);
    add(b,
        "# Server\r\nredis_version:7.0.0\r\npartkv_version:%s\r\n"
        "redis_mode:%s\r\nos:%s %s %s\r\narch_bits:%d\r\n"
        "multiplexing_api:libuv\r\nprocess_id:%d\r\ntcp_port:%d\r\n"
        "uptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n"
        "executable:partkv\r\n\r\n",
        PK_VERSION, s->cluster.enabled ? "cluster" : "standalone", u.sysname,
        u.release, u.machine, (int)(sizeof(void *) * 8), (int)getpid(), s->port,
        (unsigned long long)up, (unsigned long long)up / 86400);
}

static void sec_clients(pk_cmd_ctx *x, pk_obuf *b)
{
    add(b,
        "# Clients\r\nconnected_clients:%u\r\nmaxclients:%d\r\n"
        "blocked_clients:%u\r\n\r\n",
        x->srv->nconns, x->srv->cfg.maxclients, pk_block_count(x->srv));
}

/* The data itself is LMDB's map (file pages, in RSS as they are read),
 * not the heap: used_memory is the heap only.  Of it, a hosted
 * coordinator keeps its recent events for watches (bounded). */
static void sec_memory(pk_cmd_ctx *x, pk_obuf *b)
{
    uint64_t rss = rss_bytes(), heap = heap_bytes();

    add(b,
        "# Memory\r\nused_memory:%llu\r\nused_memory_human:%.2fM\r\n"
        "used_memory_rss:%llu\r\nused_memory_rss_human:%.2fM\r\n"
        "maxmemory:0\r\nmaxmemory_policy:noeviction\r\n"
        "mem_allocator:%s\r\ncoordinator_history_bytes:%llu\r\n\r\n",
        (unsigned long long)heap, (double)heap / 1048576.0,
        (unsigned long long)rss, (double)rss / 1048576.0,
        __sanitizer_get_current_allocated_bytes ? "sanitizer" : "libc",
        (unsigned long long)pk_coord_history_bytes(x->srv->coord));
}

static void sec_persistence(pk_cmd_ctx *x, pk_obuf *b)
{
    static const char *const fsyncs[] = {"always", "everysec", "no"};
    pk_server *s = x->srv;

    add(b,
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
        "rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n"
        "aof_enabled:0\r\nstorage_engine:lmdb\r\nfsync:%s\r\n"
        "commits:%llu\r\ncommit_failures:%llu\r\n\r\n",
        fsyncs[s->cfg.fsync], (unsigned long long)s->commits,
        (unsigned long long)s->commit_failures);
}

static void sec_stats(pk_cmd_ctx *x, pk_obuf *b)
{
    pk_server *s = x->srv;

    add(b,
        "# Stats\r\ntotal_connections_received:%llu\r\n"
        "total_commands_processed:%llu\r\ninstantaneous_ops_per_sec:%llu\r\n"
        "rejected_connections:%llu\r\nexpired_keys:%llu\r\n"
        "keyspace_hits:%llu\r\nkeyspace_misses:%llu\r\n",
        (unsigned long long)s->total_conns, (unsigned long long)s->total_cmds,
        (unsigned long long)s->ops_rate, (unsigned long long)s->rejected_conns,
        (unsigned long long)s->expired_keys, (unsigned long long)s->hits,
        (unsigned long long)s->misses);
    pk_hotread_info(s, b);
    pk_salted_info(s, b);
    pk_obuf_append(b, "\r\n", 2);
}

static void sec_cpu(pk_cmd_ctx *x, pk_obuf *b)
{
    struct rusage ru;

    (void)x;
    getrusage(RUSAGE_SELF, &ru);
    add(b, "# CPU\r\nused_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n\r\n",
        (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec,
        (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
}

static void sec_keyspace(pk_cmd_ctx *x, pk_obuf *b, pk_txn *t)
{
    uint64_t n = 0;

    add(b, "# Keyspace\r\n");
    if (t && pk_store_dbsize_if(t, pk_srv_leads, x->srv, &n) == PK_OK && n > 0)
        add(b, "db0:keys=%llu,expires=0,avg_ttl=0\r\n", (unsigned long long)n);
    add(b, "\r\n");
}

static void sec_partitions(pk_cmd_ctx *x, pk_obuf *b, pk_txn *t, int full)
{
    pk_part_stats st;
    uint32_t part;
    uint64_t nparts = 0, keys = 0, bytes = 0, max_keys = 0;

    const pk_pmap *m = x->srv->cluster.map;
    static const char *const names[] = {"slots", "hash", "range"};

    add(b, "# Partitions\r\nscheme:%s\r\npartitions:%u\r\n",
        m && m->scheme < 3 ? names[m->scheme] : "slots",
        m ? pk_pmap_live_parts(m) : PK_SLOTS);
    for (uint64_t p = 0; t && pk_store_part_next(t, p, &part, &st) == PK_OK;
         p = (uint64_t)part + 1) {
        const pk_part_rate *r = &x->srv->rates[part % PK_SLOTS];
        nparts++;
        keys += st.keys;
        bytes += st.bytes;
        max_keys = st.keys > max_keys ? st.keys : max_keys;
        if (full)
            add(b,
                "partition_%u:keys=%llu,bytes=%llu,reads_per_sec=%.0f,"
                "writes_per_sec=%.0f\r\n",
                part, (unsigned long long)st.keys, (unsigned long long)st.bytes,
                r->read_rate, r->write_rate);
    }
    add(b,
        "partitions_with_data:%llu\r\npartition_keys_total:%llu\r\n"
        "partition_bytes_total:%llu\r\npartition_keys_max:%llu\r\n\r\n",
        (unsigned long long)nparts, (unsigned long long)keys,
        (unsigned long long)bytes, (unsigned long long)max_keys);
}

static int wants(pk_cmd_ctx *x, const char *name, int in_default)
{
    if (x->argc == 1)
        return in_default;
    for (int i = 1; i < x->argc; i++) {
        if (pk_arg_eq(&x->argv[i], name) || pk_arg_eq(&x->argv[i], "all") ||
            pk_arg_eq(&x->argv[i], "everything") ||
            (in_default && pk_arg_eq(&x->argv[i], "default")))
            return 1;
    }
    return 0;
}

void pk_cmd_info(pk_cmd_ctx *x)
{
    pk_txn *t = x->srv->store ? pk_srv_txn(x) : NULL;
    pk_obuf b;

    if (x->srv->store && t == NULL)
        return;
    pk_obuf_init(&b);
    if (wants(x, "server", 1))
        sec_server(x, &b);
    if (wants(x, "clients", 1))
        sec_clients(x, &b);
    if (wants(x, "memory", 1))
        sec_memory(x, &b);
    if (wants(x, "persistence", 1))
        sec_persistence(x, &b);
    if (wants(x, "stats", 1))
        sec_stats(x, &b);
    if (wants(x, "replication", 1))
        pk_repl_info(x->srv, &b);
    if (wants(x, "cpu", 1))
        sec_cpu(x, &b);
    if (wants(x, "cluster", 1))
        add(&b, "# Cluster\r\ncluster_enabled:%d\r\n\r\n",
            x->srv->cluster.enabled);
    if (wants(x, "keyspace", 1))
        sec_keyspace(x, &b, t);
    if (wants(x, "partitions", 1))
        sec_partitions(x, &b, t, x->argc > 1);
    if (wants(x, "search", 1))
        pk_ft_info(x->srv, &b);
    /* Redis ends INFO with the last section's blank line removed. */
    if (pk_obuf_pending(&b) >= 2)
        b.len -= 2;
    /* No section asked for exists: the buffer was never allocated. */
    pk_reply_verbatim(x->out, x->proto, "txt", b.data ? b.data + b.head : "",
                      pk_obuf_pending(&b));
    pk_obuf_free(&b);
}

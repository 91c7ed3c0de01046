/*
 * pk_cluster: the node's view of the cluster and the Redis Cluster
 * commands (routing by it is pk_route.c).
 * Reply shapes follow Redis 7.0 as real clients parse them (see
 * ../shared/REDIS-CLUSTER-NOTES.md): CLUSTER NODES lines end in "\n",
 * CLUSTER INFO lines in "\r\n", node entries in CLUSTER SLOTS are
 * [ip, port, id].
 */
#include "server/pk_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hash.h"
#include "core/pk_range.h"
#include "server/pk_ctx.h"
#include "server/pk_srv.h"
#include "store/pk_key.h"
#include "store/pk_store_part.h"

void pk_cluster_set_map(pk_cluster *cl, pk_pmap *map)
{
    pk_pmap_free(cl->map);
    pk_range_free(cl->ranges);
    cl->map = map;
    cl->ranges = NULL;
    cl->self = PK_NODE_NONE;
    if (map && pk_pmap_node_find(map, cl->name, &cl->self) != PK_OK)
        cl->self = PK_NODE_NONE;
    /* Bounds that do not tile the keyspace (or no memory) leave ranges
     * NULL, and then no key of the range scheme is served. */
    if (map && map->scheme == PK_SCHEME_RANGE &&
        pk_range_from_pmap(map, &cl->ranges) != PK_OK)
        cl->ranges = NULL;
}

void pk_cluster_free(pk_cluster *cl)
{
    pk_cluster_set_map(cl, NULL);
}

/* "host:port" of a node, split for replies; port 0 if malformed. */
static void split_addr(const pk_node *n, char *host, size_t cap, int *port)
{
    const char *colon = strrchr(n->addr, ':');
    size_t len = colon ? (size_t)(colon - n->addr) : strlen(n->addr);

    snprintf(host, cap, "%.*s", (int)len, n->addr);
    *port = colon ? atoi(colon + 1) : 0;
}

/* PK.MAP: the encoded partition map this node holds, or nil. */
void pk_cmd_pk_map(pk_cmd_ctx *x)
{
    const pk_pmap *m = x->srv->cluster.map;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc;

    if (m == NULL) {
        pk_reply_null(x->out, x->proto);
        return;
    }
    rc = pk_pmap_encode(m, &buf, &len);
    if (rc != PK_OK)
        pk_reply_errorf(x->out, "ERR map: %s", pk_strerror(rc));
    else
        pk_reply_bulk(x->out, buf, len);
    free(buf);
}

uint32_t pk_cluster_part(const pk_cluster *cl, const void *key, size_t len)
{
    uint32_t p;

    if (cl->map == NULL || cl->map->scheme == PK_SCHEME_SLOTS)
        return pk_hash_slot(key, len);
    if (cl->map->scheme == PK_SCHEME_RANGE)
        return cl->ranges && pk_range_lookup(cl->ranges, key, len, &p) == PK_OK
                   ? p
                   : cl->map->npartitions; /* no leader: not served */
    if (pk_pmap_partition_of(cl->map, key, len, &p) == PK_OK)
        return p;
    return pk_hash_slot(key, len);
}

void pk_cmd_readonly(pk_cmd_ctx *x)
{
    x->c->readonly = 1;
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_readwrite(pk_cmd_ctx *x)
{
    x->c->readonly = 0;
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_asking(pk_cmd_ctx *x)
{
    x->c->asking = 1;
    pk_reply_simple(x->out, "OK");
}

/*
 * The topology clients see.  Redis Cluster gives a node one role: a
 * master of its slots or a replica of one master.  A partkv node leads
 * some partitions and follows others, so by default every node is shown
 * as the master of the partitions it leads, with no replicas, and every
 * client then sends each key to its leader and each broadcast to every
 * leading node once.  --announce-replicas lists the followers too (for
 * READONLY reads from them), at the cost that clients which keep one role
 * per node take a node that leads and follows for a replica.
 */
static int announce(const pk_cmd_ctx *x)
{
    return x->srv->cfg.announce_replicas;
}

/* Calls fn for each maximal run of slots [start, end] with one leader
 * (and, when followers are announced, the same followers). */
typedef void (*run_fn)(pk_cmd_ctx *x, uint32_t start, uint32_t end,
                       uint32_t leader);

static int same_replicas(const pk_pmap *m, uint32_t a, uint32_t b)
{
    return m->parts[a].nreplicas == m->parts[b].nreplicas &&
           memcmp(m->parts[a].replicas, m->parts[b].replicas,
                  m->parts[a].nreplicas * sizeof(uint32_t)) == 0;
}

static size_t each_run(pk_cmd_ctx *x, const pk_pmap *m, uint32_t only,
                       run_fn fn)
{
    size_t runs = 0;
    int followers = announce(x);

    for (uint32_t s = 0; s < m->npartitions;) {
        uint32_t leader = pk_pmap_leader(m, s), e = s;
        while (e + 1 < m->npartitions && pk_pmap_leader(m, e + 1) == leader &&
               (!followers || same_replicas(m, s, e + 1)))
            e++;
        if (leader != PK_NODE_NONE &&
            (only == PK_NODE_NONE || only == leader)) {
            if (fn)
                fn(x, s, e, leader);
            runs++;
        }
        s = e + 1;
    }
    return runs;
}

static void reply_node_entry(pk_cmd_ctx *x, const pk_node *n)
{
    char host[PK_ADDR_MAX + 1];
    int port;

    split_addr(n, host, sizeof(host), &port);
    pk_reply_array(x->out, 3);
    pk_reply_bulk_str(x->out, host);
    pk_reply_int(x->out, port);
    pk_reply_bulk_str(x->out, n->name);
}

static void slots_run(pk_cmd_ctx *x, uint32_t start, uint32_t end,
                      uint32_t leader)
{
    const pk_pmap *m = x->srv->cluster.map;
    const pk_partition *p = &m->parts[start];
    uint32_t shown = announce(x) ? p->nreplicas : 1;

    pk_reply_array(x->out, 2 + (size_t)shown);
    pk_reply_int(x->out, start);
    pk_reply_int(x->out, end);
    reply_node_entry(x, &m->nodes[leader]);
    for (uint32_t i = 0; i < p->nreplicas && shown > 1; i++)
        if (p->replicas[i] != leader)
            reply_node_entry(x, &m->nodes[p->replicas[i]]);
}

static void cluster_slots(pk_cmd_ctx *x)
{
    const pk_pmap *m = x->srv->cluster.map;
    if (m->scheme != PK_SCHEME_SLOTS) {
        pk_reply_errorf(x->out,
                        "ERR CLUSTER SLOTS is only served with the slots "
                        "scheme: this cluster places keys by %s, which Redis "
                        "Cluster clients cannot compute; use forward mode "
                        "or the proxy",
                        m->scheme == PK_SCHEME_RANGE ? "key range"
                                                     : "hash mod P");
        return;
    }
    pk_reply_array(x->out, each_run(x, m, PK_NODE_NONE, NULL));
    each_run(x, m, PK_NODE_NONE, slots_run);
}

/* Appends " a-b" (or " a") for a run of slots to x->out. */ static void
nodes_run(pk_cmd_ctx *x, uint32_t start, uint32_t end, uint32_t leader)
{
    char r[32];
    int n = start == end ? snprintf(r, sizeof(r), " %u", start)
                         : snprintf(r, sizeof(r), " %u-%u", start, end);

    (void)leader;
    pk_obuf_append(x->out, r, (size_t)n);
}

/* The leader of the first partition node id follows, or PK_NODE_NONE. */
static uint32_t followed_leader(const pk_pmap *m, uint32_t id)
{
    for (uint32_t p = 0; p < m->npartitions; p++)
        for (uint32_t i = 1; i < m->parts[p].nreplicas; i++)
            if (m->parts[p].replicas[i] == id)
                return m->parts[p].replicas[0];
    return PK_NODE_NONE;
}

static void cluster_nodes(pk_cmd_ctx *x)
{
    const pk_pmap *m = x->srv->cluster.map;
    pk_obuf *saved = x->out, text;

    pk_obuf_init(&text);
    x->out = &text; /* nodes_run appends the ranges here */
    for (uint32_t id = 0; id < m->nnodes; id++) {
        const pk_node *n = &m->nodes[id];
        char host[PK_ADDR_MAX + 1], line[512];
        int port, len, leads;
        uint32_t master;
        if (n->state == PK_NODE_REMOVED)
            continue;
        split_addr(n, host, sizeof(host), &port);
        leads = each_run(x, m, id, NULL) > 0;
        master = leads || !announce(x) ? PK_NODE_NONE : followed_leader(m, id);
        len = snprintf(line, sizeof(line), "%s %s:%d@%d %s%s%s %s 0 0 %llu %s",
                       n->name, host, port, port + 10000,
                       id == x->srv->cluster.self ? "myself," : "",
                       master == PK_NODE_NONE ? "master" : "slave",
                       n->state == PK_NODE_DOWN ? ",fail" : "",
                       master == PK_NODE_NONE ? "-" : m->nodes[master].name,
                       (unsigned long long)m->epoch,
                       n->state == PK_NODE_DOWN ? "disconnected" : "connected");
        pk_obuf_append(&text, line, (size_t)len);
        each_run(x, m, id, nodes_run);
        pk_obuf_append(&text, "\n", 1);
    }
    x->out = saved;
    pk_reply_verbatim(x->out, x->proto, "txt", text.data + text.head,
                      pk_obuf_pending(&text));
    pk_obuf_free(&text);
}

static void cluster_info(pk_cmd_ctx *x)
{
    const pk_pmap *m = x->srv->cluster.map;
    char buf[1024];
    uint32_t assigned = 0, masters = 0, known = 0;
    int n;

    uint32_t live = pk_pmap_live_parts(m); /* merged ranges retire */

    for (uint32_t p = 0; p < m->npartitions; p++)
        assigned += m->parts[p].nreplicas > 0;
    for (uint32_t id = 0; id < m->nnodes; id++) {
        known += m->nodes[id].state != PK_NODE_REMOVED;
        masters += each_run(x, m, id, NULL) > 0;
    }
    n = snprintf(buf, sizeof(buf),
                 "cluster_state:%s\r\ncluster_slots_assigned:%u\r\n"
                 "cluster_slots_ok:%u\r\ncluster_slots_pfail:0\r\n"
                 "cluster_slots_fail:0\r\ncluster_known_nodes:%u\r\n"
                 "cluster_size:%u\r\ncluster_current_epoch:%llu\r\n"
                 "cluster_my_epoch:%llu\r\ncluster_stats_messages_sent:0\r\n"
                 "cluster_stats_messages_received:0\r\n"
                 "total_cluster_links_buffer_limit_exceeded:0\r\n",
                 assigned == live ? "ok" : "fail", assigned, assigned, known,
                 masters, (unsigned long long)m->epoch,
                 (unsigned long long)m->epoch);
    pk_reply_verbatim(x->out, x->proto, "txt", buf, (size_t)n);
}

static void shard_run(pk_cmd_ctx *x, uint32_t start, uint32_t end,
                      uint32_t leader)
{
    (void)leader;
    pk_reply_int(x->out, start);
    pk_reply_int(x->out, end);
}

static void shard_node(pk_cmd_ctx *x, const pk_node *n, const char *role)
{
    char host[PK_ADDR_MAX + 1];
    int port;

    split_addr(n, host, sizeof(host), &port);
    pk_reply_map(x->out, x->proto, 7);
    pk_reply_bulk_str(x->out, "id");
    pk_reply_bulk_str(x->out, n->name);
    pk_reply_bulk_str(x->out, "port");
    pk_reply_int(x->out, port);
    pk_reply_bulk_str(x->out, "ip");
    pk_reply_bulk_str(x->out, host);
    pk_reply_bulk_str(x->out, "endpoint");
    pk_reply_bulk_str(x->out, host);
    pk_reply_bulk_str(x->out, "role");
    pk_reply_bulk_str(x->out, role);
    pk_reply_bulk_str(x->out, "replication-offset");
    pk_reply_int(x->out, 0);
    pk_reply_bulk_str(x->out, "health");
    pk_reply_bulk_str(x->out, n->state == PK_NODE_DOWN ? "fail" : "online");
}

/* The first partition node id leads (it leads one). */
static uint32_t first_led(const pk_pmap *m, uint32_t id)
{
    uint32_t p = 0;

    while (p + 1 < m->npartitions && pk_pmap_leader(m, p) != id)
        p++;
    return p;
}

/* One shard per leading node; with announced followers, those of its
 * first partition are its replicas. */
static void cluster_shards(pk_cmd_ctx *x)
{
    const pk_pmap *m = x->srv->cluster.map;
    size_t nshards = 0;

    for (uint32_t id = 0; id < m->nnodes; id++)
        nshards += each_run(x, m, id, NULL) > 0;
    pk_reply_array(x->out, nshards);
    for (uint32_t id = 0; id < m->nnodes; id++) {
        size_t runs = each_run(x, m, id, NULL);
        const pk_partition *p;
        uint32_t nfollow;
        if (runs == 0)
            continue;
        p = &m->parts[first_led(m, id)];
        nfollow = announce(x) ? p->nreplicas - 1 : 0;
        pk_reply_map(x->out, x->proto, 2);
        pk_reply_bulk_str(x->out, "slots");
        pk_reply_array(x->out, 2 * runs);
        each_run(x, m, id, shard_run);
        pk_reply_bulk_str(x->out, "nodes");
        pk_reply_array(x->out, 1 + (size_t)nfollow);
        shard_node(x, &m->nodes[id], "master");
        for (uint32_t i = 1; i <= nfollow; i++)
            shard_node(x, &m->nodes[p->replicas[i]], "replica");
    }
}

typedef struct slot_keys {
    pk_cmd_ctx *x;
    pk_obuf *keys;
    uint32_t slot;
    int64_t want, n;
} slot_keys;

#define STOP_SCAN PK_ERANGE /* callback sentinel: the slot is done */

static int collect_key(void *ctx, uint32_t part, pk_slice key)
{
    slot_keys *k = ctx;

    if (part != k->slot || k->n >= k->want)
        return STOP_SCAN;
    if (pk_acl_conn_hides(k->x->c, key.ptr, key.len))
        return 0; /* outside the user's read patterns, as KEYS */
    pk_reply_bulk(k->keys, key.ptr, key.len);
    k->n++;
    return 0;
}

static int slot_ok(const pk_arg *a, int64_t *slot)
{
    return pk_arg_i64(a, slot) && *slot >= 0 && *slot < PK_SLOTS;
}

static void cluster_getkeysinslot(pk_cmd_ctx *x)
{
    int64_t slot, count;
    pk_scan_opts o = {NULL, 0, 1024, PK_TYPE_NONE, NULL, NULL};
    pk_obuf keys;
    slot_keys k = {x, &keys, 0, 0, 0};
    uint64_t cursor, next = 0;
    int rc = PK_OK;

    if (!slot_ok(&x->argv[2], &slot) || !pk_arg_i64(&x->argv[3], &count) ||
        count < 0) {
        pk_reply_error(x->out, "ERR Invalid slot or number of keys");
        return;
    }
    k.slot = (uint32_t)slot;
    k.want = count;
    cursor = (uint64_t)slot << 32;
    TXN_OR_RETURN(x, t);
    pk_obuf_init(&keys);
    do {
        rc = pk_store_scan(t, cursor, &o, NOW(x), collect_key, &k, &next);
        cursor = next;
    } while (rc == PK_OK && next != 0 && (next >> 32) == (uint64_t)slot);
    if (rc != PK_OK && rc != STOP_SCAN) {
        pk_cmd_store_error(x, rc);
    } else {
        pk_reply_array(x->out, (size_t)k.n);
        if (k.n)
            pk_obuf_append(x->out, keys.data + keys.head,
                           pk_obuf_pending(&keys));
    }
    pk_obuf_free(&keys);
}

static void cluster_help(pk_cmd_ctx *x)
{
    static const char *const help[] = {
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by current node in a slot.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MYID",
        "    Return the node id.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> "
        "<slot> ...",
        "SHARDS",
        "    Return information about slot range mappings and the nodes "
        "associated with them.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is "
        "made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        "SLOT-STATS SLOTSRANGE <start> <end> | ORDERBY <metric> [LIMIT <n>] "
        "[ASC|DESC]",
        "    Return per-slot statistics (partkv: keys, reads and writes).",
        "HELP",
        "    Prints this help."};
    pk_reply_simples(x->out, help, sizeof(help) / sizeof(help[0]));
}

static void cluster_keyslot(pk_cmd_ctx *x)
{
    pk_reply_int(x->out, pk_hash_slot(x->argv[2].ptr, x->argv[2].len));
}

static void cluster_myid(pk_cmd_ctx *x)
{
    pk_reply_bulk_str(x->out, x->srv->cluster.name);
}

static void cluster_countkeysinslot(pk_cmd_ctx *x)
{
    pk_part_stats st;
    int64_t slot;
    int rc;

    if (!slot_ok(&x->argv[2], &slot)) {
        pk_reply_error(x->out, "ERR Invalid slot");
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_store_part_stats(t, (uint32_t)slot, &st);
    if (rc != PK_OK)
        pk_cmd_store_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)st.keys);
}

void pk_cmd_cluster(pk_cmd_ctx *x)
{
    /* Redis 7.0's arities (SLOT-STATS: partkv's, checked by itself), in
     * three groups: the first answer without cluster support, the next
     * need it, the rest need the partition map too. */
    enum { NEED_CLUSTER = 2, NEED_MAP = 5 };
    static const pk_subcmd subs[] = {
        {"help", 2, cluster_help},
        {"keyslot", 3, cluster_keyslot},
        {"myid", 2, cluster_myid},
        {"countkeysinslot", 3, cluster_countkeysinslot},
        {"getkeysinslot", 4, cluster_getkeysinslot},
        {"info", 2, cluster_info},
        {"nodes", 2, cluster_nodes},
        {"shards", 2, cluster_shards},
        {"slot-stats", -2, pk_cmd_cluster_slot_stats},
        {"slots", 2, cluster_slots}};
    int i =
        pk_cmd_subcommand(x, "cluster", subs, sizeof(subs) / sizeof(subs[0]));

    if (i < 0)
        return;
    if (i >= NEED_CLUSTER && !x->srv->cluster.enabled)
        pk_reply_error(x->out, "ERR This instance has cluster support "
                               "disabled");
    else if (i >= NEED_MAP && x->srv->cluster.map == NULL)
        pk_reply_error(x->out, "CLUSTERDOWN The cluster is down");
    else
        subs[i].fn(x);
}

/*
 * pk_acl_ids: the command ids ACL bitmaps index -- the command table's
 * entries, then the subcommands of its container commands, which Redis
 * 7.0 permits one by one ("+config|get", "-client|kill") -- the 21
 * categories and the ids in each, and the description of a selector's
 * command bitmap as rules ("-@all +@set +acl"), found as Redis does: the
 * category that best fits what is left, again and again, then the single
 * commands that still differ.
 *
 * Invariant: the ids fit in PK_ACL_BITS - 1 (the last bit is "future
 * commands", set only by +@all); checked when the space is built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pk_err.h"
#include "server/pk_acl_int.h"
#include "server/pk_ctx.h"

static const char *const cats[PK_ACL_NCATS] = {
    "keyspace", "read",     "write",     "set",        "sortedset",
    "list",     "hash",     "string",    "bitmap",     "hyperloglog",
    "geo",      "stream",   "pubsub",    "admin",      "fast",
    "slow",     "blocking", "dangerous", "connection", "transaction",
    "scripting"};

/* Subcommands of the container commands partkv serves, with Redis 7.0's
 * categories for each.  Grouped by parent, in the order listed. */
#define ADM "admin slow dangerous"
#define ADMC "admin slow dangerous connection"
#define SC "slow connection"
static const struct {
    const char *parent, *sub, *cats;
} subs[] = {
    {"acl", "cat", "slow"},
    {"acl", "deluser", ADM},
    {"acl", "dryrun", ADM},
    {"acl", "genpass", "slow"},
    {"acl", "getuser", ADM},
    {"acl", "help", "slow"},
    {"acl", "list", ADM},
    {"acl", "load", ADM},
    {"acl", "log", ADM},
    {"acl", "save", ADM},
    {"acl", "setuser", ADM},
    {"acl", "users", ADM},
    {"acl", "whoami", "slow"},
    {"client", "caching", SC},
    {"client", "getname", SC},
    {"client", "getredir", SC},
    {"client", "help", SC},
    {"client", "id", SC},
    {"client", "info", SC},
    {"client", "kill", ADMC},
    {"client", "list", ADMC},
    {"client", "no-evict", ADMC},
    {"client", "pause", ADMC},
    {"client", "reply", SC},
    {"client", "setinfo", SC},
    {"client", "setname", SC},
    {"client", "tracking", SC},
    {"client", "trackinginfo", SC},
    {"client", "unblock", ADMC},
    {"client", "unpause", ADMC},
    {"cluster", "addslots", ADM},
    {"cluster", "addslotsrange", ADM},
    {"cluster", "bumpepoch", ADM},
    {"cluster", "count-failure-reports", ADM},
    {"cluster", "countkeysinslot", "slow"},
    {"cluster", "delslots", ADM},
    {"cluster", "delslotsrange", ADM},
    {"cluster", "failover", ADM},
    {"cluster", "flushslots", ADM},
    {"cluster", "forget", ADM},
    {"cluster", "getkeysinslot", "slow"},
    {"cluster", "help", "slow"},
    {"cluster", "info", "slow"},
    {"cluster", "keyslot", "slow"},
    {"cluster", "links", "slow"},
    {"cluster", "meet", ADM},
    {"cluster", "myid", "slow"},
    {"cluster", "nodes", "slow"},
    {"cluster", "replicas", ADM},
    {"cluster", "replicate", ADM},
    {"cluster", "reset", ADM},
    {"cluster", "saveconfig", ADM},
    {"cluster", "set-config-epoch", ADM},
    {"cluster", "setslot", ADM},
    {"cluster", "shards", "slow"},
    {"cluster", "slaves", ADM},
    {"cluster", "slot-stats", "slow"},
    {"cluster", "slots", "slow"},
    {"command", "count", SC},
    {"command", "docs", SC},
    {"command", "getkeys", SC},
    {"command", "getkeysandflags", SC},
    {"command", "help", SC},
    {"command", "info", SC},
    {"command", "list", SC},
    {"config", "get", ADM},
    {"config", "help", "slow"},
    {"config", "resetstat", ADM},
    {"config", "rewrite", ADM},
    {"config", "set", ADM},
    {"function", "delete", "write slow scripting"},
    {"function", "dump", "slow scripting"},
    {"function", "flush", "write slow scripting"},
    {"function", "help", "slow scripting"},
    {"function", "kill", "slow scripting"},
    {"function", "list", "slow scripting"},
    {"function", "load", "write slow scripting"},
    {"function", "restore", "write slow scripting"},
    {"function", "stats", "slow scripting"},
    {"memory", "doctor", "slow"},
    {"memory", "help", "slow"},
    {"memory", "malloc-stats", "slow"},
    {"memory", "purge", "slow"},
    {"memory", "stats", "slow"},
    {"memory", "usage", "read slow"},
    {"object", "encoding", "keyspace read slow"},
    {"object", "freq", "keyspace read slow"},
    {"object", "help", "keyspace slow"},
    {"object", "idletime", "keyspace read slow"},
    {"object", "refcount", "keyspace read slow"},
};
#define NSUBS (sizeof(subs) / sizeof(subs[0]))

/* Built once by pk_acl_commands, on the loop before any other thread
 * starts; read-only after. */
static struct {
    size_t ntable, nids;
    const pk_cmd *table;
    const char *name[PK_ACL_BITS];
    int parent[PK_ACL_BITS];
    size_t sub_first[PK_ACL_BITS], sub_n[PK_ACL_BITS];
    uint64_t cat[PK_ACL_NCATS][PK_ACL_WORDS];
    char fullname[NSUBS][48];
} ids;

int pk__acl_cat_find(const char *name, size_t len)
{
    for (int i = 0; i < PK_ACL_NCATS; i++)
        if (strlen(cats[i]) == len && strncasecmp(cats[i], name, len) == 0)
            return i;
    return -1;
}

static void set_cats(size_t id, const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, " ");
        int c = pk__acl_cat_find(p, n);

        if (c >= 0)
            ids.cat[c][id / 64] |= 1ull << (id % 64);
        p += n + (p[n] == ' ');
    }
}

/* The table entry named name (any case), or NULL: a binary search, the
 * table being sorted by name (only letters fold). */
static const pk_cmd *find_cmd(const char *name, size_t len)
{
    size_t lo = 0, hi = ids.ntable;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2, i;
        const char *t = ids.table[mid].name;
        int c = 0;
        for (i = 0; i < len && t[i] && c == 0; i++) {
            int a = (unsigned char)name[i];
            if (a >= 'A' && a <= 'Z')
                a |= 0x20;
            c = a - (unsigned char)t[i];
        }
        if (c == 0)
            c = i < len ? 1 : t[i] ? -1 : 0;
        if (c == 0)
            return &ids.table[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

void pk_acl_commands(const pk_cmd *table, size_t n)
{
    /* Too many commands for the bitmaps: no ACL (pk_acl_new fails). */
    if (ids.table || n + NSUBS >= PK_ACL_FUTURE)
        return;
    ids.table = table;
    ids.ntable = n;
    for (size_t i = 0; i < n; i++) {
        ids.name[i] = ids.table[i].name;
        ids.parent[i] = -1;
        set_cats(i, ids.table[i].acl);
    }
    ids.nids = n;
    for (size_t j = 0; j < NSUBS; j++) {
        const pk_cmd *p = find_cmd(subs[j].parent, strlen(subs[j].parent));
        size_t id = ids.nids, pid;

        if (p == NULL)
            continue;
        pid = (size_t)(p - ids.table);
        if (ids.sub_n[pid] == 0)
            ids.sub_first[pid] = id;
        ids.sub_n[pid]++;
        ids.parent[id] = (int)pid;
        snprintf(ids.fullname[j], sizeof(ids.fullname[j]), "%s|%s",
                 subs[j].parent, subs[j].sub);
        ids.name[id] = ids.fullname[j];
        set_cats(id, subs[j].cats);
        ids.nids++;
    }
}

size_t pk__acl_nids(void)
{
    return ids.nids;
}

const char *pk__acl_id_name(size_t id)
{
    return id < ids.nids ? ids.name[id] : "";
}

int pk__acl_id_parent(size_t id)
{
    return id < ids.nids ? ids.parent[id] : -1;
}

void pk__acl_id_subs(size_t id, size_t *first, size_t *n)
{
    *first = id < ids.ntable ? ids.sub_first[id] : 0;
    *n = id < ids.ntable ? ids.sub_n[id] : 0;
}

size_t pk__acl_cmd_id(const pk_cmd *cmd)
{
    return (size_t)(cmd - ids.table);
}

size_t pk__acl_sub_id(size_t id, const char *sub, size_t len)
{
    size_t first, n, plen;

    pk__acl_id_subs(id, &first, &n);
    plen = strlen(ids.name[id]) + 1;
    for (size_t i = first; i < first + n; i++) {
        const char *s = ids.name[i] + plen;
        if (strlen(s) == len && strncasecmp(s, sub, len) == 0)
            return i;
    }
    return id;
}

long pk__acl_lookup(const char *name, size_t len)
{
    const char *bar = memchr(name, '|', len);
    const pk_cmd *c;
    size_t id, sid;

    c = find_cmd(name, bar ? (size_t)(bar - name) : len);
    if (c == NULL)
        return -1;
    id = pk__acl_cmd_id(c);
    if (bar == NULL)
        return (long)id;
    /* "name|sub": only a container's subcommands, never deeper. */
    sid = pk__acl_sub_id(id, bar + 1, len - (size_t)(bar + 1 - name));
    return sid == id ? -1 : (long)sid;
}

const uint64_t *pk__acl_cat_bits(int cat)
{
    return ids.cat[cat];
}

const char *pk_acl_category(int i)
{
    return i >= 0 && i < PK_ACL_NCATS ? cats[i] : NULL;
}

int pk_acl_cat_cmds(const char *name, size_t len,
                    void (*fn)(void *arg, const char *name), void *arg)
{
    int c = pk__acl_cat_find(name, len);

    if (c < 0)
        return PK_ENOTFOUND;
    for (size_t id = 0; fn && id < ids.nids; id++)
        if ((ids.cat[c][id / 64] >> (id % 64)) & 1u)
            fn(arg, ids.name[id]);
    return 0;
}

static void bit_set(acl_sel *s, size_t id, int v)
{
    if (v) {
        s->bits[id / 64] |= 1ull << (id % 64);
    } else {
        s->bits[id / 64] &= ~(1ull << (id % 64));
        s->flags &= ~SEL_ALLCOMMANDS;
    }
}

/* The first arguments allowed for id go when its permission is set. */
static void fargs_drop(acl_sel *s, size_t id)
{
    size_t k = 0;

    for (size_t i = 0; i < s->nfargs; i++) {
        if (s->fargs[i].id == id)
            free(s->fargs[i].arg);
        else
            s->fargs[k++] = s->fargs[i];
    }
    s->nfargs = k;
}

void pk__acl_sel_perm(acl_sel *s, size_t id, int allow)
{
    size_t first, n;

    bit_set(s, id, allow);
    fargs_drop(s, id);
    pk__acl_id_subs(id, &first, &n);
    for (size_t i = first; i < first + n; i++)
        bit_set(s, i, allow);
}

void pk__acl_sel_cat(acl_sel *s, int cat, int allow)
{
    for (size_t id = 0; id < ids.nids; id++)
        if ((ids.cat[cat][id / 64] >> (id % 64)) & 1u)
            pk__acl_sel_perm(s, id, allow);
}

/* A growing string; on allocation failure it stays NULL. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void count_cat(const uint64_t *bits, int cat, size_t *on, size_t *off)
{
    const uint64_t *c = pk__acl_cat_bits(cat);

    *on = *off = 0;
    for (size_t w = 0; w < PK_ACL_WORDS; w++) {
        *on += (size_t)__builtin_popcountll(bits[w] & c[w]);
        *off += (size_t)__builtin_popcountll(~bits[w] & c[w]);
    }
}

static void rule(sbuf *b, int plus, const char *name)
{
    sb_add(b, plus ? "+" : "-", 1);
    sb_str(b, name);
    sb_add(b, " ", 1);
}

char *pk__acl_describe_cmds(const acl_sel *s)
{
    acl_sel fake = {0}, temp = {0};
    int additive = !sel_bit(s, PK_ACL_FUTURE), applied[PK_ACL_NCATS] = {0};
    sbuf b = {0};

    if (additive) {
        sb_str(&b, "-@all ");
    } else {
        sb_str(&b, "+@all ");
        memset(fake.bits, 0xff, sizeof(fake.bits));
    }
    memcpy(temp.bits, s->bits, sizeof(temp.bits));
    for (;;) {
        int best = -1;
        size_t mindiff = (size_t)-1, maxsame = 0;

        for (int j = 0; j < PK_ACL_NCATS; j++) {
            size_t on, off, diff, same;

            if (applied[j])
                continue;
            count_cat(temp.bits, j, &on, &off);
            diff = additive ? off : on;
            same = additive ? on : off;
            if (same > diff &&
                (diff < mindiff || (diff == mindiff && same > maxsame))) {
                best = j;
                mindiff = diff;
                maxsame = same;
            }
        }
        if (best < 0)
            break;
        pk__acl_sel_cat(&fake, best, additive);
        pk__acl_sel_cat(&temp, best, !additive);
        sb_add(&b, additive ? "+@" : "-@", 2);
        sb_str(&b, cats[best]);
        sb_add(&b, " ", 1);
        applied[best] = 1;
    }
    /* The single commands that still differ, each container followed by
     * its subcommands, then the first arguments of denied commands. */
    for (size_t id = 0; id < ids.ntable; id++) {
        int ubit = sel_bit(s, id);
        size_t first, n;

        if (ubit != sel_bit(&fake, id)) {
            rule(&b, ubit, ids.name[id]);
            pk__acl_sel_perm(&fake, id, ubit);
        }
        pk__acl_id_subs(id, &first, &n);
        for (size_t k = first; k < first + n; k++) {
            int sbit = sel_bit(s, k);
            if (sbit != sel_bit(&fake, k)) {
                rule(&b, sbit, ids.name[k]);
                pk__acl_sel_perm(&fake, k, sbit);
            }
        }
        for (size_t i = 0; !ubit && i < s->nfargs; i++) {
            if (s->fargs[i].id != id)
                continue;
            sb_add(&b, "+", 1);
            sb_str(&b, ids.name[id]);
            sb_add(&b, "|", 1);
            sb_str(&b, s->fargs[i].arg);
            sb_add(&b, " ", 1);
        }
    }
    free(fake.fargs);
    free(temp.fargs);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    b.p[--b.len] = '\0'; /* the last space */
    return b.p;
}

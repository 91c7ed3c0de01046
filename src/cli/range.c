/*
 * partkv range split KEY --cluster HOST:PORT [--secret S] [--dir D]:
 * asks the leader of the range holding KEY to split it there (PK.SPLIT,
 * pk_split.h) and waits until the map shows the new range.  The new bound
 * is sticky: no automatic merge removes it.
 *
 * partkv range merge KEY ...: the range holding KEY and its right
 * neighbour become one (PK.MERGE; the neighbour first moves to the same
 * leader if it must), waiting until the map shows it.
 *
 * partkv range unsplit KEY ...: the bound at KEY is no longer sticky
 * (PK.UNSPLIT), so automatic merges may remove it.
 *
 * partkv range list --cluster HOST:PORT [--json]: the ranges of a
 * range-scheme cluster in key order -- bounds, leader, keys, bytes and the
 * leader's reads/s and writes/s -- from the public commands: PK.MAP on
 * the node named, then PK.PARTITIONS on every live node, each range's
 * figures taken from its leader.
 *
 * The last column is the load split finder's verdict for a range over
 * the nodes' --split-qps ("off" below it; --json adds "hot": true over
 * it): "found at KEY", "wait", "hot key at KEY", "increasing",
 * "decreasing", "spanning" or "imbalanced".
 *
 * Bounds print as text with bytes outside printable ASCII (and '\')
 * as \xNN; the first range starts at -inf and the last ends at +inf.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "core/pk_range.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"

#define SPLIT_WAIT_MS 15000 /* the leader drains for up to 5 s */
#define MERGE_WAIT_MS 75000 /* and a merge may wait 60 s for a move */

typedef struct range_row {
    int known; /* its leader answered for it */
    long long keys, bytes;
    double reads, writes;
    char load[24]; /* the split finder's verdict, "off" when it is idle */
    char *key;     /* owned: its split (or hot) key as text, or NULL */
    uint8_t flags; /* PK_PART_* from the map */
} range_row;

/* A bound as text (see the top); "-inf"/"+inf" for the open ends. */
static char *bound_text(const uint8_t *b, size_t len, int open, int low)
{
    char *out = malloc(len * 4 + 5), *p = out;

    if (out == NULL)
        return NULL;
    if (open) {
        strcpy(out, low ? "-inf" : "+inf");
        return out;
    }
    for (size_t i = 0; i < len; i++) {
        if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\')
            *p++ = (char)b[i];
        else
            p += sprintf(p, "\\x%02x", b[i]);
    }
    *p = '\0';
    return out;
}

/* Fills rows[p] for every partition p node leads, from its PK.PARTITIONS. */
static void node_rows(const pk_pmap *m, uint32_t node, range_row *rows)
{
    const char *argv[] = {"PK.PARTITIONS"};
    pk_rr *r = NULL;

    if (pk_cli_call(m->nodes[node].addr, 1, argv, &r) == PK_OK &&
        r->type == PK_RR_ARRAY) {
        for (size_t i = 0; i < r->n; i++) {
            const pk_rr *e = &r->elems[i];
            uint32_t p = (uint32_t)pk_cli_number(pk__rb_field(e, "partition"));
            if (p >= m->npartitions || pk_pmap_leader(m, p) != node)
                continue;
            rows[p].known = 1;
            rows[p].keys = (long long)pk_cli_number(pk__rb_field(e, "keys"));
            rows[p].bytes = (long long)pk_cli_number(pk__rb_field(e, "bytes"));
            rows[p].reads = pk_cli_number(pk__rb_field(e, "reads_per_sec"));
            rows[p].writes = pk_cli_number(pk__rb_field(e, "writes_per_sec"));
            const pk_rr *v = pk__rb_field(e, "load_split"),
                        *k = pk__rb_field(e, "split_key");
            snprintf(rows[p].load, sizeof(rows[p].load), "%s",
                     v && v->str ? v->str : "off");
            free(rows[p].key);
            rows[p].key =
                k && k->type == PK_RR_BULK
                    ? bound_text((const uint8_t *)k->str, k->len, 0, 0)
                    : NULL;
        }
    }
    pk_rr_free(r);
}

/* The map of the node at target; 0, or 1 after a message. */
static int fetch_map(const char *target, pk_pmap **m)
{
    if (pk_cli_fetch_map("partkv range", target, m) != 0)
        return 1;
    if ((*m)->scheme != PK_SCHEME_RANGE) {
        fprintf(stderr, "partkv range: %s is not a range-scheme cluster\n",
                target);
        pk_pmap_free(*m);
        return 1;
    }
    return 0;
}

/* One range; in JSON the open ends are null (a key may be "-inf"). */
static void print_row(json_t *arr, uint32_t id, const char *lo, const char *hi,
                      const char *leader, const range_row *r)
{
    if (arr) {
        json_t *o =
            json_pack("{s:i,s:o,s:o,s:s}", "range", (json_int_t)id, "lo",
                      lo ? json_string(lo) : json_null(), "hi",
                      hi ? json_string(hi) : json_null(), "leader", leader);
        if (r->known) {
            json_object_set_new(o, "keys", json_integer(r->keys));
            json_object_set_new(o, "bytes", json_integer(r->bytes));
            json_object_set_new(o, "reads_per_sec", json_real(r->reads));
            json_object_set_new(o, "writes_per_sec", json_real(r->writes));
            json_object_set_new(o, "load_split", json_string(r->load));
            /* Over --split-qps: its finder samples it. */
            json_object_set_new(o, "hot",
                                json_boolean(strcmp(r->load, "off") != 0));
            json_object_set_new(o, "split_key",
                                r->key ? json_string(r->key) : json_null());
        }
        json_object_set_new(o, "sticky",
                            json_boolean(r->flags & PK_PART_STICKY));
        json_object_set_new(o, "merging",
                            json_boolean(r->flags & PK_PART_MERGING));
        json_array_append_new(arr, o);
        return;
    }
    if (r->known)
        printf("%-6u %-24s %-24s %-21s %10lld %12lld %9.0f %9.0f  %s%s%s%s%s\n",
               id, lo, hi, leader, r->keys, r->bytes, r->reads, r->writes,
               r->load, r->key ? " at " : "", r->key ? r->key : "",
               r->flags & PK_PART_STICKY ? " (sticky)" : "",
               r->flags & PK_PART_MERGING ? " (merging)" : "");
    else
        printf("%-6u %-24s %-24s %-21s %10s %12s %9s %9s  ?%s%s\n", id, lo, hi,
               leader, "?", "?", "?", "?",
               r->flags & PK_PART_STICKY ? " (sticky)" : "",
               r->flags & PK_PART_MERGING ? " (merging)" : "");
}

static int list(const char *target, int json)
{
    pk_pmap *m = NULL;
    pk_range *idx = NULL;
    range_row *rows;
    json_t *arr = json ? json_array() : NULL;
    int status = 0;

    if (fetch_map(target, &m) != 0)
        return 1;
    rows = calloc(m->npartitions, sizeof(*rows));
    if (rows == NULL || pk_range_from_pmap(m, &idx) != PK_OK) {
        fprintf(stderr, "partkv range: the map's bounds are unusable\n");
        status = 1;
        goto done;
    }
    for (uint32_t n = 0; n < m->nnodes; n++)
        if (m->nodes[n].state == PK_NODE_UP ||
            m->nodes[n].state == PK_NODE_DRAINING)
            node_rows(m, n, rows);
    if (!json)
        printf("%-6s %-24s %-24s %-21s %10s %12s %9s %9s  %s\n", "range",
               "from", "to", "leader", "keys", "bytes", "reads/s", "writes/s",
               "load split");
    for (uint32_t i = 0; i < pk_range_count(idx); i++) {
        uint32_t id, leader;
        const uint8_t *lo, *hi;
        size_t lo_len, hi_len;
        pk_range_get(idx, i, &id, &lo, &lo_len, &hi, &hi_len);
        leader = pk_pmap_leader(m, id);
        rows[id].flags = m->parts[id].flags;
        char *l = bound_text(lo, lo_len, lo_len == 0, 1);
        char *h = bound_text(hi, hi_len, hi == NULL, 0);
        if (l && h)
            print_row(arr, id, arr && lo_len == 0 ? NULL : l,
                      arr && hi == NULL ? NULL : h,
                      leader == PK_NODE_NONE ? "-" : m->nodes[leader].addr,
                      &rows[id]);
        free(l);
        free(h);
    }
    if (arr) {
        char *s = json_dumps(arr, JSON_INDENT(2));
        if (s)
            puts(s);
        free(s);
    }
done:
    for (uint32_t p = 0; rows && p < m->npartitions; p++)
        free(rows[p].key);
    json_decref(arr);
    pk_range_free(idx);
    free(rows);
    pk_pmap_free(m);
    return status;
}

/* What a range edit waits for in the map (see edit_seen). */
typedef enum edit_kind { EDIT_SPLIT, EDIT_MERGE, EDIT_UNSPLIT } edit_kind;

static const char *const edit_cmd[] = {"PK.SPLIT", "PK.MERGE", "PK.UNSPLIT"};
static const char *const edit_who[] = {
    "partkv range split", "partkv range merge", "partkv range unsplit"};

/* The id of the range starting at key (len bytes) in m, or -1. */
static long starting_at(const pk_pmap *m, const void *key, size_t len)
{
    for (uint32_t p = 0; p < m->npartitions; p++)
        if (!pk_pmap_retired(m, p) &&
            pk_key_cmp(m->parts[p].lo, m->parts[p].lo_len, key, len) == 0)
            return p;
    return -1;
}

/*
 * Whether target's map shows the edit done: a range starting at key (a
 * split), none starting at bound (a merge: bound was where the right
 * neighbour started), or the range at key not sticky.  -1 without a map.
 */
static int edit_seen(const char *target, edit_kind kind, const char *key,
                     const uint8_t *bound, size_t bound_len)
{
    pk_pmap *m = NULL;
    long id;
    int seen;

    if (fetch_map(target, &m) != 0)
        return -1;
    if (kind == EDIT_MERGE) {
        seen = starting_at(m, bound, bound_len) < 0;
    } else {
        id = starting_at(m, key, strlen(key));
        seen = kind == EDIT_SPLIT
                   ? id >= 0
                   : id >= 0 && !(m->parts[id].flags & PK_PART_STICKY);
    }
    pk_pmap_free(m);
    return seen;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/*
 * The edit's command on the leader of the range holding key, with the
 * secret; 0 or 1 after a message.  For a merge, the bound it removes goes
 * to bound (cap PK_BOUND_CAP bytes) -- or, asked again, must still be the
 * upper bound of the key's range.
 */
#define PK_BOUND_CAP 1024
#define REASK_MS 3000
static int ask(const rb_target *t, edit_kind kind, const char *key,
               uint8_t *bound, size_t *bound_len, int again)
{
    pk_pmap *m = NULL;
    pk_range *idx = NULL;
    uint32_t id, leader;
    int status = 1;

    if (fetch_map(t->cluster, &m) != 0)
        return 1;
    if (pk_range_from_pmap(m, &idx) != PK_OK ||
        pk_range_lookup(idx, key, strlen(key), &id) != PK_OK ||
        (leader = pk_pmap_leader(m, id)) == PK_NODE_NONE) {
        fprintf(stderr, "%s: no leader for the range of the key\n",
                edit_who[kind]);
    } else if (kind == EDIT_MERGE && (m->parts[id].hi == NULL ||
                                      m->parts[id].hi_len > PK_BOUND_CAP)) {
        fprintf(stderr, "%s: the last range has no right neighbour\n",
                edit_who[kind]);
    } else {
        rb_target lt = *t;
        pk_sclient *c = NULL;
        pk_rr *r = NULL;
        const char *argv[] = {edit_cmd[kind], key};
        if (kind == EDIT_MERGE && !again) {
            memcpy(bound, m->parts[id].hi, m->parts[id].hi_len);
            *bound_len = m->parts[id].hi_len;
        }
        lt.cluster = m->nodes[leader].addr;
        if ((kind != EDIT_MERGE || !again ||
             (bound_len && *bound_len == m->parts[id].hi_len &&
              memcmp(bound, m->parts[id].hi, *bound_len) == 0)) &&
            pk__rb_connect(&lt, edit_who[kind], &c) == 0) {
            if (pk_sclient_call(c, 2, argv, NULL, &r) != PK_OK)
                fprintf(stderr, "%s: %s did not answer\n", edit_who[kind],
                        lt.cluster);
            else if (r->type == PK_RR_ERROR)
                fprintf(stderr, "%s: %s\n", edit_who[kind], r->str);
            else
                status = 0;
        }
        pk_rr_free(r);
        pk_sclient_free(c);
    }
    pk_range_free(idx);
    pk_pmap_free(m);
    return status;
}

static int edit(const rb_target *t, edit_kind kind, const char *key)
{
    static const char *const done[] = {"split: a range starts at the key",
                                       "merged",
                                       "unsplit: the bound is not sticky"};
    uint8_t bound[PK_BOUND_CAP];
    size_t bound_len = 0;
    long wait = kind == EDIT_MERGE ? MERGE_WAIT_MS : SPLIT_WAIT_MS;

    if (kind != EDIT_MERGE && edit_seen(t->cluster, kind, key, NULL, 0) == 1) {
        printf("%s already\n", done[kind]);
        return 0;
    }
    if (ask(t, kind, key, bound, &bound_len, 0) != 0)
        return 1;
    /* Asked again now and then: a leader that failed or lost its place
     * meanwhile forgot the edit (asking twice does no harm; a refusal
     * now, e.g. TRYAGAIN while a move runs, is printed and waited out). */
    for (long waited = 0; waited < wait; waited += 50) {
        if (edit_seen(t->cluster, kind, key, bound, bound_len) == 1) {
            printf("%s\n", done[kind]);
            return 0;
        }
        sleep_ms(50);
        if (waited > 0 && waited % REASK_MS == 0)
            ask(t, kind, key, bound, &bound_len, 1);
    }
    fprintf(stderr,
            "%s: the map does not show it (the leader's log says "
            "why)\n",
            edit_who[kind]);
    return 1;
}

/*
 * The options of `range list` (json non-NULL: --json) and `range split`
 * (--secret, --dir) from argv[first] on, into t; 0, or 2 after a
 * one-line message.
 */
static int parse_opts(const char *who, int argc, char **argv, int first,
                      rb_target *t, int *json)
{
    for (int i = first; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (json && strcmp(argv[i], "--json") == 0) {
            *json = 1;
            continue;
        }
        if (v && strcmp(argv[i], "--cluster") == 0 && pk_cli_host_port(v))
            t->cluster = v;
        else if (!json && v && strcmp(argv[i], "--secret") == 0)
            t->secret = v;
        else if (!json && v && strcmp(argv[i], "--dir") == 0)
            t->dir = v;
        else {
            fprintf(stderr, "partkv range %s: bad option '%s'\n", who, argv[i]);
            return 2;
        }
        i++;
    }
    if (t->cluster == NULL) {
        fprintf(stderr, "partkv range %s: --cluster HOST:PORT is required\n",
                who);
        return 2;
    }
    return 0;
}

int pk_cli_range(int argc, char **argv)
{
    static const char *const names[] = {"split", "merge", "unsplit"};
    rb_target t = {NULL, NULL, "./data"};
    int json = 0;

    for (int k = 0; argc >= 2 && k < 3; k++) {
        if (strcmp(argv[1], names[k]) != 0)
            continue;
        if (argc < 3 || argv[2][0] == '-') {
            fprintf(stderr,
                    "partkv range %s: usage: partkv range %s KEY "
                    "--cluster HOST:PORT [--secret S] [--dir D]\n",
                    names[k], names[k]);
            return 2;
        }
        return parse_opts(names[k], argc, argv, 3, &t, NULL)
                   ? 2
                   : edit(&t, (edit_kind)k, argv[2]);
    }
    if (argc < 2 || strcmp(argv[1], "list") != 0) {
        fprintf(stderr, "partkv range: usage: partkv range "
                        "list|split|merge|unsplit --cluster HOST:PORT ...\n");
        return 2;
    }
    return parse_opts("list", argc, argv, 2, &t, &json) ? 2
                                                        : list(t.cluster, json);
}

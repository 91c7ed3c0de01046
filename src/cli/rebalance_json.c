/*
 * rebalance_json: a plan as JSON -- what `rebalance plan --json` prints
 * and what the coordinator stores at plans/<id>, read back by apply,
 * cancel and status.
 *
 * Printed, a move is an object naming its nodes by their 40-hex names and
 * addresses.  Stored, it is an array [partition, from, to, leader,
 * transfer, keys, bytes] with map node ids (never reused), about a tenth
 * of the size: the embedded coordinator rewrites its whole state on every
 * map change of a rebalance, plans included.  Parsing takes both; a named
 * node that is no longer in the map makes the plan unusable.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "core/pk_plan.h"

static json_t *node_name(const pk_pmap *m, uint32_t id)
{
    return id < m->nnodes ? json_string(m->nodes[id].name) : json_null();
}

static json_t *node_addr(const pk_pmap *m, uint32_t id)
{
    return id < m->nnodes ? json_string(m->nodes[id].addr) : json_null();
}

static json_t *move_json(const rb_move *mv, const pk_pmap *m)
{
    return json_pack("{s:I, s:o, s:o, s:o, s:o, s:s, s:b, s:I, s:I}",
                     "partition", (json_int_t)mv->part, "from",
                     node_name(m, mv->from), "to", node_name(m, mv->to),
                     "from_addr", node_addr(m, mv->from), "to_addr",
                     node_addr(m, mv->to), "role",
                     mv->role == PK_ROLE_LEADER ? "leader" : "follower",
                     "transfer", (int)mv->transfer, "keys",
                     (json_int_t)mv->keys, "bytes", (json_int_t)mv->bytes);
}

static json_t *node_json(const pk_pmap *m, uint32_t id, const rb_nodestat *s)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "id",
                     m->nodes[id].name, "addr", m->nodes[id].addr,
                     "replicas_before", (json_int_t)s->replicas_before,
                     "replicas_after", (json_int_t)s->replicas_after,
                     "leaders_before", (json_int_t)s->leaders_before,
                     "leaders_after", (json_int_t)s->leaders_after,
                     "bytes_before", (json_int_t)s->bytes_before, "bytes_after",
                     (json_int_t)s->bytes_after);
}

static json_int_t id_json(uint32_t id)
{
    return id == PK_NODE_NONE ? -1 : (json_int_t)id;
}

static json_t *move_compact(const rb_move *mv)
{
    return json_pack("[I, I, I, b, b, I, I]", (json_int_t)mv->part,
                     id_json(mv->from), id_json(mv->to),
                     mv->role == PK_ROLE_LEADER, (int)mv->transfer,
                     (json_int_t)mv->keys, (json_int_t)mv->bytes);
}

static json_t *plan_object(const rb_plan *p, const pk_pmap *m, int stored)
{
    json_t *moves = json_array(), *nodes = json_array();
    rb_totals t;

    pk__rb_totals(p, &t);
    for (uint32_t i = 0; i < p->nmoves; i++)
        json_array_append_new(moves, stored ? move_compact(&p->moves[i])
                                            : move_json(&p->moves[i], m));
    for (uint32_t id = 0; id < p->nnodes && id < m->nnodes; id++) {
        const rb_nodestat *s = &p->nodes[id];
        if (m->nodes[id].state != PK_NODE_REMOVED || s->replicas_before)
            json_array_append_new(nodes, node_json(m, id, s));
    }
    return json_pack(
        "{s:s, s:I, s:s, s:I, s:I, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}, "
        "s:o, s:I, s:o}",
        "id", p->id, "epoch", (json_int_t)p->epoch, "policy", p->policy, "rate",
        (json_int_t)p->rate, "max_concurrent", (json_int_t)p->max_concurrent,
        "moves", moves, "totals", "moves", (json_int_t)t.moves, "data_moves",
        (json_int_t)t.data_moves, "leader_transfers", (json_int_t)t.transfers,
        "partitions", (json_int_t)t.partitions, "keys", (json_int_t)t.keys,
        "bytes", (json_int_t)t.bytes, "nodes", nodes, "min_bytes",
        (json_int_t)p->min_bytes, "eta_seconds",
        p->rate ? json_real((double)t.bytes / (double)p->rate) : json_null());
}

char *pk__rb_plan_json(const rb_plan *p, const pk_pmap *m, int stored)
{
    json_t *o = plan_object(p, m, stored);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    json_decref(o);
    return text;
}

/* Node id by exact name; a live node wins over a tombstone. */
static int find_name(const pk_pmap *m, const json_t *v, uint32_t *id)
{
    const char *name = json_string_value(v);
    uint32_t hit = PK_NODE_NONE;

    if (json_is_null(v)) {
        *id = PK_NODE_NONE;
        return 0;
    }
    if (name == NULL)
        return -1;
    for (uint32_t i = 0; i < m->nnodes; i++) {
        if (strcmp(m->nodes[i].name, name) != 0)
            continue;
        hit = i;
        if (m->nodes[i].state != PK_NODE_REMOVED)
            break;
    }
    *id = hit;
    return hit == PK_NODE_NONE ? -1 : 0;
}

/* A stored move: [partition, from, to, leader, transfer, keys, bytes]. */
static int parse_compact(json_t *o, const pk_pmap *m, rb_move *mv)
{
    json_int_t part = -1, from, to, keys, bytes;
    int leader, transfer;

    if (json_unpack(o, "[I, I, I, b, b, I, I]", &part, &from, &to, &leader,
                    &transfer, &keys, &bytes) != 0 ||
        part < 0 || (uint64_t)part >= m->npartitions)
        return -1;
    if (from < -1 || to < -1 || from >= (json_int_t)m->nnodes ||
        to >= (json_int_t)m->nnodes)
        return -2;
    mv->part = (uint32_t)part;
    mv->from = from < 0 ? PK_NODE_NONE : (uint32_t)from;
    mv->to = to < 0 ? PK_NODE_NONE : (uint32_t)to;
    mv->role = leader ? PK_ROLE_LEADER : PK_ROLE_FOLLOWER;
    mv->transfer = (uint8_t)(transfer != 0);
    mv->keys = (uint64_t)keys;
    mv->bytes = (uint64_t)bytes;
    return 0;
}

static int parse_move(json_t *o, const pk_pmap *m, rb_move *mv)
{
    json_int_t part = -1, keys = 0, bytes = 0;
    json_t *from = NULL, *to = NULL;
    const char *role = NULL;
    int transfer = 0;

    if (json_is_array(o))
        return parse_compact(o, m, mv);

    if (json_unpack(o, "{s:I, s:o, s:o, s:s, s:b, s?I, s?I}", "partition",
                    &part, "from", &from, "to", &to, "role", &role, "transfer",
                    &transfer, "keys", &keys, "bytes", &bytes) != 0 ||
        part < 0 || (uint64_t)part >= m->npartitions)
        return -1;
    if (find_name(m, from, &mv->from) != 0 || find_name(m, to, &mv->to) != 0)
        return -2;
    mv->part = (uint32_t)part;
    mv->role = strcmp(role, "leader") == 0 ? PK_ROLE_LEADER : PK_ROLE_FOLLOWER;
    mv->transfer = (uint8_t)(transfer != 0);
    mv->keys = (uint64_t)keys;
    mv->bytes = (uint64_t)bytes;
    return 0;
}

static void parse_nodes(const json_t *arr, const pk_pmap *m, rb_plan *p)
{
    size_t i;
    json_t *o;

    json_array_foreach(arr, i, o)
    {
        uint32_t id;
        json_int_t v[6] = {0};
        if (find_name(m, json_object_get(o, "id"), &id) != 0 ||
            id == PK_NODE_NONE ||
            json_unpack(o, "{s?I, s?I, s?I, s?I, s?I, s?I}", "replicas_before",
                        &v[0], "replicas_after", &v[1], "leaders_before", &v[2],
                        "leaders_after", &v[3], "bytes_before", &v[4],
                        "bytes_after", &v[5]) != 0)
            continue;
        p->nodes[id] =
            (rb_nodestat){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2],
                          (uint32_t)v[3], (uint64_t)v[4], (uint64_t)v[5]};
    }
}

static int parse_object(json_t *o, const pk_pmap *m, rb_plan *p, char *err,
                        size_t cap)
{
    json_int_t epoch = 0, rate = 0, k = 0, min = 0;
    const char *id = NULL, *policy = NULL;
    json_t *moves = NULL, *nodes = NULL;
    size_t i;
    json_t *e;

    if (json_unpack(o, "{s:s, s:I, s:s, s:I, s:I, s:o, s?o, s?I}", "id", &id,
                    "epoch", &epoch, "policy", &policy, "rate", &rate,
                    "max_concurrent", &k, "moves", &moves, "nodes", &nodes,
                    "min_bytes", &min) != 0 ||
        !json_is_array(moves)) {
        snprintf(err, cap, "the stored plan is malformed");
        return -1;
    }
    snprintf(p->id, sizeof(p->id), "%s", id);
    snprintf(p->policy, sizeof(p->policy), "%s", policy);
    p->epoch = (uint64_t)epoch;
    p->rate = (uint64_t)rate;
    p->max_concurrent = (uint32_t)k;
    p->min_bytes = (uint64_t)min;
    p->nmoves = (uint32_t)json_array_size(moves);
    p->moves = calloc(p->nmoves ? p->nmoves : 1, sizeof(*p->moves));
    p->nnodes = m->nnodes;
    p->nodes = calloc(m->nnodes ? m->nnodes : 1, sizeof(*p->nodes));
    if (p->moves == NULL || p->nodes == NULL) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    json_array_foreach(moves, i, e)
    {
        int rc = parse_move(e, m, &p->moves[i]);
        if (rc != 0) {
            snprintf(err, cap,
                     rc == -2 ? "move %zu names a node no longer in the map"
                              : "move %zu of the stored plan is malformed",
                     i);
            return -1;
        }
    }
    if (json_is_array(nodes))
        parse_nodes(nodes, m, p);
    return 0;
}

int pk__rb_plan_parse(const char *text, const pk_pmap *m, rb_plan *p, char *err,
                      size_t cap)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    int rc;

    memset(p, 0, sizeof(*p));
    if (o == NULL) {
        snprintf(err, cap, "the stored plan is not JSON: %s", jerr.text);
        return -1;
    }
    rc = parse_object(o, m, p, err, cap);
    json_decref(o);
    if (rc != 0)
        pk__rb_plan_free(p);
    return rc;
}

int pk__rb_plan_load(struct pk_sclient *c, const char *id, const pk_pmap *m,
                     rb_plan *p)
{
    char key[128], err[160], *text = NULL;
    int rc;

    snprintf(key, sizeof(key), RB_PLAN_PREFIX "%s", id);
    rc = pk__rb_kv_get(c, key, &text, NULL, NULL);
    if (rc == PK_ENOTFOUND) {
        fprintf(stderr,
                "partkv rebalance: no plan '%s' (make one with "
                "'partkv rebalance plan')\n",
                id);
        return 1;
    }
    if (rc != PK_OK) {
        fprintf(stderr, "partkv rebalance: cannot read plan '%s': %s\n", id,
                pk_strerror(rc));
        return 1;
    }
    rc = pk__rb_plan_parse(text, m, p, err, sizeof(err));
    free(text);
    if (rc != 0) {
        fprintf(stderr, "partkv rebalance: plan '%s': %s\n", id, err);
        return 1;
    }
    return 0;
}

void pk__rb_plan_free(rb_plan *p)
{
    if (p == NULL)
        return;
    free(p->moves);
    free(p->nodes);
    p->moves = NULL;
    p->nodes = NULL;
    p->nmoves = p->nnodes = 0;
}

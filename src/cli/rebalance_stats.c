/*
 * rebalance_stats: what the nodes themselves report, asked of each node in
 * the map by its public commands -- partition sizes (PK.PARTITIONS) for
 * plans, and the move sessions in flight (PK.MOVES) for progress.
 *
 * Replies are read in either protocol: a RESP3 map, or the flat
 * [key, value, key, value...] array RESP2 gives for one.  A node that is
 * down, or does not know a command, simply contributes nothing: sizes are
 * estimates for a preview and progress, never a condition of correctness.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"

#define NODE_TIMEOUT_MS 2000

const pk_rr *pk__rb_field(const pk_rr *r, const char *name)
{
    size_t n;

    if (r == NULL)
        return NULL;
    if (r->type == PK_RR_MAP)
        n = r->n;
    else if (r->type == PK_RR_ARRAY && r->n % 2 == 0)
        n = r->n / 2;
    else
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const pk_rr *k = &r->elems[2 * i];
        if (k->str && strcmp(k->str, name) == 0)
            return &r->elems[2 * i + 1];
    }
    return NULL;
}

static int64_t field_int(const pk_rr *r, const char *name, int64_t dflt)
{
    const pk_rr *v = pk__rb_field(r, name);

    if (v == NULL)
        return dflt;
    if (v->type == PK_RR_INT)
        return v->integer;
    if (v->type == PK_RR_DOUBLE)
        return (int64_t)v->dbl;
    if (v->str)
        return strtoll(v->str, NULL, 10);
    return dflt;
}

/* One command to the node with id `id`; the reply or NULL. */
static pk_rr *ask_node(const pk_pmap *m, uint32_t id, const char *cmd)
{
    char host[256];
    int port;
    pk_sclient *c = NULL;
    pk_rr *r = NULL;
    const char *argv[] = {cmd};

    if (pk__rb_hostport(m->nodes[id].addr, host, sizeof(host), &port) != 0)
        return NULL;
    if (pk_sclient_connect(host, port, NODE_TIMEOUT_MS, &c) == PK_OK &&
        pk_sclient_call(c, 1, argv, NULL, &r) == PK_OK &&
        r->type != PK_RR_ARRAY && r->type != PK_RR_SET) {
        pk_rr_free(r);
        r = NULL;
    }
    pk_sclient_free(c);
    return r;
}

static void take_sizes(const pk_pmap *m, uint32_t id, const pk_rr *r,
                       uint64_t *keys, uint64_t *bytes)
{
    for (size_t i = 0; i < r->n; i++) {
        const pk_rr *e = &r->elems[i];
        int64_t p = field_int(e, "partition", -1);
        if (p < 0 || (uint64_t)p >= m->npartitions ||
            pk_pmap_leader(m, (uint32_t)p) != id)
            continue;
        keys[p] = (uint64_t)field_int(e, "keys", 0);
        bytes[p] = (uint64_t)field_int(e, "bytes", 0);
    }
}

int pk__rb_sizes(const pk_pmap *m, uint64_t **keys, uint64_t **bytes)
{
    uint64_t *k = calloc(m->npartitions ? m->npartitions : 1, sizeof(*k));
    uint64_t *b = calloc(m->npartitions ? m->npartitions : 1, sizeof(*b));

    if (k == NULL || b == NULL) {
        free(k);
        free(b);
        return PK_ENOMEM;
    }
    for (uint32_t id = 0; id < m->nnodes; id++) {
        if (m->nodes[id].state == PK_NODE_REMOVED)
            continue;
        pk_rr *r = ask_node(m, id, "PK.PARTITIONS");
        if (r)
            take_sizes(m, id, r, k, b);
        pk_rr_free(r);
    }
    *keys = k;
    *bytes = b;
    return PK_OK;
}

static int add_sessions(uint32_t id, const pk_rr *r, rb_session **out,
                        size_t *n)
{
    for (size_t i = 0; i < r->n; i++) {
        const pk_rr *e = &r->elems[i], *t = pk__rb_field(e, "target");
        const pk_rr *st = pk__rb_field(e, "state");
        rb_session *grown = realloc(*out, (*n + 1) * sizeof(**out));
        if (grown == NULL)
            return PK_ENOMEM;
        *out = grown;
        rb_session *s = &grown[(*n)++];
        memset(s, 0, sizeof(*s));
        s->source = id;
        snprintf(s->target, sizeof(s->target), "%s",
                 t && t->str ? t->str : "?");
        snprintf(s->state, sizeof(s->state), "%s",
                 st && st->str ? st->str : "?");
        s->partitions = field_int(e, "partitions", 0);
        s->bytes = field_int(e, "bytes", 0);
    }
    return PK_OK;
}

int pk__rb_sessions(const pk_pmap *m, rb_session **out, size_t *n)
{
    int rc = PK_OK;

    *out = NULL;
    *n = 0;
    for (uint32_t id = 0; id < m->nnodes && rc == PK_OK; id++) {
        if (m->nodes[id].state == PK_NODE_REMOVED)
            continue;
        pk_rr *r = ask_node(m, id, "PK.MOVES");
        if (r)
            rc = add_sessions(id, r, out, n);
        pk_rr_free(r);
    }
    return rc;
}

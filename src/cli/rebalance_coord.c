/*
 * rebalance_coord: the coordinator side of `partkv node` and `partkv
 * rebalance` -- an authenticated connection, key GET/PUT, whole-map
 * compare-and-swap with retry, the run record, and node lookup.
 *
 * Every map change here is a CAS against the mod_revision the map was
 * read at, so a change made meanwhile by a node (a committed move) or by
 * another operator is never overwritten: the edit is redone on the fresh
 * map instead.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/rebalance.h"
#include "core/pk_err.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"

#define CAS_TRIES 50

int pk__rb_hostport(const char *s, char *host, size_t cap, int *port)
{
    const char *colon = s ? strrchr(s, ':') : NULL;
    char *end = NULL;
    long v;

    if (colon == NULL || colon == s || (size_t)(colon - s) >= cap)
        return -1;
    v = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || v < 1 || v > 65535)
        return -1;
    snprintf(host, cap, "%.*s", (int)(colon - s), s);
    *port = (int)v;
    return 0;
}

/* --secret, else $PARTKV_SECRET, else the first line of <dir>/secret. */
static int load_secret(const rb_target *t, char *buf, size_t cap)
{
    const char *env = getenv("PARTKV_SECRET");
    char path[4096];
    FILE *f;

    if (t->secret || (env && *env)) {
        snprintf(buf, cap, "%s", t->secret ? t->secret : env);
        return 0;
    }
    snprintf(path, sizeof(path), "%s/secret", t->dir ? t->dir : "./data");
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    if (fgets(buf, (int)cap, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? 0 : -1;
}

int pk__rb_connect(const rb_target *t, const char *who, pk_sclient **out)
{
    char host[256], secret[256];
    int port, ok;
    pk_rr *r = NULL;
    pk_sclient *c = NULL;

    if (pk__rb_hostport(t->cluster, host, sizeof(host), &port) != 0) {
        if (who)
            fprintf(stderr, "partkv %s: --cluster needs HOST:PORT, got '%s'\n",
                    who, t->cluster ? t->cluster : "");
        return 2;
    }
    if (load_secret(t, secret, sizeof(secret)) != 0) {
        if (who)
            fprintf(stderr,
                    "partkv %s: no cluster secret (pass --secret, set "
                    "PARTKV_SECRET or point --dir at the cluster's data)\n",
                    who);
        return 1;
    }
    const char *auth[] = {"PK.AUTH", secret};
    if (pk_sclient_connect(host, port, 5000, &c) != PK_OK ||
        pk_sclient_call(c, 2, auth, NULL, &r) != PK_OK) {
        if (who)
            fprintf(stderr, "partkv %s: cannot reach %s\n", who, t->cluster);
        pk_sclient_free(c);
        return 1;
    }
    ok = r->type == PK_RR_STATUS;
    if (!ok && who)
        fprintf(stderr, "partkv %s: %s refused the secret: %s\n", who,
                t->cluster, r->str ? r->str : "?");
    pk_rr_free(r);
    if (!ok) {
        pk_sclient_free(c);
        return 1;
    }
    *out = c;
    return 0;
}

int pk__rb_kv_get(pk_sclient *c, const char *key, char **val, size_t *len,
                  uint64_t *mod_rev)
{
    const char *argv[] = {"PK.COORD", "GET", key};
    pk_rr *r = NULL, *kv;
    int rc;

    if (pk_sclient_call(c, 3, argv, NULL, &r) != PK_OK)
        return PK_EIO;
    rc = PK_EIO;
    if (r->type != PK_RR_ARRAY || r->n != 2)
        goto out;
    kv = &r->elems[1];
    rc = PK_ENOTFOUND;
    if (kv->type != PK_RR_ARRAY || kv->n != 6)
        goto out;
    rc = PK_ENOMEM;
    *val = malloc(kv->elems[1].len + 1);
    if (*val == NULL)
        goto out;
    memcpy(*val, kv->elems[1].str, kv->elems[1].len);
    (*val)[kv->elems[1].len] = '\0';
    if (len)
        *len = kv->elems[1].len;
    if (mod_rev)
        *mod_rev = (uint64_t)kv->elems[3].integer;
    rc = PK_OK;
out:
    pk_rr_free(r);
    return rc;
}

int pk__rb_kv_put(pk_sclient *c, const char *key, const char *val, size_t len)
{
    const char *argv[] = {"PK.COORD", "PUT", key, val, "0"};
    size_t lens[] = {8, 3, strlen(key), len, 1};
    pk_rr *r = NULL;
    int rc;

    if (pk_sclient_call(c, 5, argv, lens, &r) != PK_OK)
        return PK_EIO;
    rc = r->type == PK_RR_ARRAY ? PK_OK : PK_EIO;
    pk_rr_free(r);
    return rc;
}

int pk__rb_map_get(pk_sclient *c, pk_pmap **m, uint64_t *mod_rev)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = pk__rb_kv_get(c, RB_MAP_KEY, &buf, &len, mod_rev);

    if (rc == PK_OK)
        rc = pk_pmap_decode((const uint8_t *)buf, len, m);
    free(buf);
    return rc;
}

/* CAS of m over mod_rev; *new_rev (may be NULL) gets the map's new
 * mod_revision. */
static int map_cas(pk_sclient *c, const pk_pmap *m, uint64_t mod_rev,
                   uint64_t *new_rev)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    char rev[24];
    pk_rr *r = NULL;
    int rc = pk_pmap_encode(m, &buf, &len);

    if (rc != PK_OK)
        return rc;
    snprintf(rev, sizeof(rev), "%" PRIu64, mod_rev);
    const char *argv[] = {"PK.COORD",        "CAS", RB_MAP_KEY, rev,
                          (const char *)buf, "0"};
    size_t lens[] = {8, 3, strlen(argv[2]), strlen(rev), len, 1};
    rc = pk_sclient_call(c, 6, argv, lens, &r);
    free(buf);
    if (rc != PK_OK)
        return PK_EIO;
    if (r->type == PK_RR_ARRAY && r->n >= 1 && r->elems[0].type == PK_RR_INT) {
        rc = PK_OK;
        if (new_rev)
            *new_rev = (uint64_t)r->elems[0].integer;
    } else if (r->type == PK_RR_ERROR && r->str &&
               strncmp(r->str, "ESTALE", 6) == 0) {
        rc = PK_ESTALE;
    } else {
        rc = PK_EIO;
    }
    pk_rr_free(r);
    return rc;
}

int pk__rb_map_cas(pk_sclient *c, const pk_pmap *m, uint64_t mod_rev)
{
    return map_cas(c, m, mod_rev, NULL);
}

int pk__rb_map_refresh(pk_sclient *c, rb_mapcache *mc)
{
    char since[24];
    const char *argv[] = {"PK.COORD", "GET", RB_MAP_KEY, since};
    pk_rr *r = NULL;
    pk_pmap *m = NULL;
    uint64_t rev = 0;
    int rc;

    if (mc->m == NULL)
        mc->rev = 0;
    snprintf(since, sizeof(since), "%" PRIu64, mc->rev);
    if (pk_sclient_call(c, mc->rev ? 4 : 3, argv, NULL, &r) != PK_OK)
        return PK_EIO;
    if (mc->rev && r->type == PK_RR_ARRAY && r->n == 1) {
        pk_rr_free(r); /* unchanged: the cached map is current */
        return PK_OK;
    }
    rc = PK_EIO;
    if (r->type == PK_RR_ARRAY && r->n == 2 &&
        r->elems[1].type == PK_RR_ARRAY && r->elems[1].n == 6) {
        const pk_rr *kv = &r->elems[1];
        rev = (uint64_t)kv->elems[3].integer;
        rc = pk_pmap_decode((const uint8_t *)kv->elems[1].str, kv->elems[1].len,
                            &m);
    } else if (r->type == PK_RR_ARRAY && r->n == 2) {
        rc = PK_ENOTFOUND;
    }
    pk_rr_free(r);
    if (rc == PK_OK) {
        pk_pmap_free(mc->m);
        mc->m = m;
        mc->rev = rev;
    }
    return rc;
}

void pk__rb_mapcache_free(rb_mapcache *mc)
{
    pk_pmap_free(mc->m);
    mc->m = NULL;
    mc->rev = 0;
}

int pk__rb_map_edit_cached(pk_sclient *c, rb_mapcache *mc, rb_edit_fn edit,
                           void *ctx, pk_pmap **out)
{
    for (int i = 0; i < CAS_TRIES; i++) {
        pk_pmap *m = NULL;
        uint64_t rev = 0;
        int rc = pk__rb_map_refresh(c, mc);
        if (rc == PK_OK)
            rc = pk_pmap_clone(mc->m, &m);
        if (rc == PK_OK) {
            rc = edit(m, ctx);
            if (rc == 0 && (rc = map_cas(c, m, mc->rev, &rev)) == PK_OK) {
                pk_pmap *keep = NULL; /* the cache follows our own write */
                if (pk_pmap_clone(m, &keep) == PK_OK) {
                    pk_pmap_free(mc->m);
                    mc->m = keep;
                    mc->rev = rev;
                } else {
                    pk__rb_mapcache_free(mc);
                }
            } else if (rc == 1) {
                rc = PK_OK;
            }
        }
        if (rc == PK_OK && out)
            *out = m;
        else
            pk_pmap_free(m);
        if (rc == PK_ESTALE)
            pk__rb_mapcache_free(mc); /* read it whole again */
        else
            return rc;
    }
    return PK_ESTALE;
}

int pk__rb_map_edit(pk_sclient *c, rb_edit_fn edit, void *ctx, pk_pmap **out)
{
    rb_mapcache mc = {NULL, 0};
    int rc = pk__rb_map_edit_cached(c, &mc, edit, ctx, out);

    pk__rb_mapcache_free(&mc);
    return rc;
}

/* Copies the value of "name=" in the record line into buf. */
static int field(const char *line, const char *name, char *buf, size_t cap)
{
    size_t n = strlen(name);

    for (const char *p = line; p && *p; p = strchr(p, ' ')) {
        while (*p == ' ')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == '=') {
            size_t len = strcspn(p + n + 1, " \r\n");
            if (len >= cap)
                return -1;
            memcpy(buf, p + n + 1, len);
            buf[len] = '\0';
            return 0;
        }
    }
    return -1;
}

int pk__rb_run_get(pk_sclient *c, rb_run *r)
{
    char *text = NULL, num[32];
    rb_run tmp;
    int rc = pk__rb_kv_get(c, RB_RUN_KEY, &text, NULL, NULL);

    if (rc != PK_OK)
        return rc;
    memset(&tmp, 0, sizeof(tmp));
    rc = PK_ECORRUPT;
    if (field(text, "plan", tmp.plan, sizeof(tmp.plan)) != 0 ||
        field(text, "state", tmp.state, sizeof(tmp.state)) != 0)
        goto out;
    if (field(text, "rate", num, sizeof(num)) == 0)
        tmp.rate = strtoull(num, NULL, 10);
    if (field(text, "max_concurrent", num, sizeof(num)) == 0)
        tmp.max_concurrent = (uint32_t)strtoul(num, NULL, 10);
    if (field(text, "epoch", num, sizeof(num)) == 0)
        tmp.epoch = strtoull(num, NULL, 10);
    *r = tmp;
    rc = PK_OK;
out:
    free(text);
    return rc;
}

int pk__rb_run_put(pk_sclient *c, const rb_run *r)
{
    char text[256];
    int n = snprintf(text, sizeof(text),
                     "plan=%s state=%s rate=%" PRIu64
                     " max_concurrent=%u epoch=%" PRIu64,
                     r->plan, r->state, r->rate, r->max_concurrent, r->epoch);

    return pk__rb_kv_put(c, RB_RUN_KEY, text, (size_t)n);
}

/* 1 when spec is a prefix of name. */
static int prefix_of(const char *spec, const char *name)
{
    return strncmp(spec, name, strlen(spec)) == 0;
}

int pk__rb_node_resolve(const pk_pmap *m, const char *spec, uint32_t *id,
                        char *err, size_t cap)
{
    uint32_t found = PK_NODE_NONE, hits = 0;
    size_t n = strlen(spec);

    /* A live node wins over a tombstone of the same name or address. */
    for (int pass = 0; pass < 2 && hits == 0; pass++) {
        for (uint32_t i = 0; i < m->nnodes; i++) {
            const pk_node *nd = &m->nodes[i];
            int removed = nd->state == PK_NODE_REMOVED;
            if (removed != pass)
                continue;
            if (strcmp(nd->name, spec) == 0 || strcmp(nd->addr, spec) == 0) {
                *id = i;
                return 0;
            }
            if (n >= 6 && prefix_of(spec, nd->name)) {
                found = i;
                hits++;
            }
        }
    }
    if (hits == 1) {
        *id = found;
        return 0;
    }
    if (hits > 1)
        snprintf(err, cap, "'%s' matches %u nodes; give more of the id", spec,
                 (unsigned)hits);
    else if (n < 6 && strchr(spec, ':') == NULL)
        snprintf(err, cap,
                 "'%s': give the node id (at least 6 characters) or "
                 "host:port",
                 spec);
    else
        snprintf(err, cap, "no node '%s' in the map", spec);
    return -1;
}

const char *pk__rb_node_label(const pk_pmap *m, uint32_t id, char *buf,
                              size_t cap)
{
    if (id == PK_NODE_NONE || id >= m->nnodes)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "n%u(%s)", (unsigned)id,
                 m->nodes[id].addr[0] ? m->nodes[id].addr : "?");
    return buf;
}

/*
 * Deletes the stored plans that no run is using: a plan is kept for the
 * run it was made for, and the embedded coordinator rewrites everything
 * it holds on each change.  Returns 0 or an error.
 */
int pk__rb_plans_prune(pk_sclient *c)
{
    const char *argv[] = {"PK.COORD", "RANGE", RB_PLAN_PREFIX};
    pk_rr *r = NULL;
    rb_run run;
    int live =
        pk__rb_run_get(c, &run) == PK_OK &&
        (strcmp(run.state, "running") == 0 || strcmp(run.state, "paused") == 0);
    int rc = pk_sclient_call(c, 3, argv, NULL, &r);

    if (rc != PK_OK)
        return rc;
    for (size_t i = 0; r->type == PK_RR_ARRAY && r->n == 2 &&
                       r->elems[1].type == PK_RR_ARRAY && i < r->elems[1].n;
         i++) {
        const pk_rr *kv = &r->elems[1].elems[i];
        const pk_rr *key =
            kv->type == PK_RR_ARRAY && kv->n == 6 ? &kv->elems[0] : NULL;
        char name[160];
        pk_rr *d = NULL;
        if (key == NULL || key->len >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)key->len, key->str);
        if (live && strcmp(name + strlen(RB_PLAN_PREFIX), run.plan) == 0)
            continue;
        const char *del[] = {"PK.COORD", "DEL", name};
        if (pk_sclient_call(c, 3, del, NULL, &d) == PK_OK)
            pk_rr_free(d);
    }
    pk_rr_free(r);
    return PK_OK;
}

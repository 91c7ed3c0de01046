/*
 * pk_ft: index definitions, the write hook and the janitor (see pk_ft.h).
 *
 * The list of indexes follows the map (a cluster) or the file `ftdefs`
 * (a node alone).  Each index remembers which partitions are known to be
 * built here, so that a write costs no marker lookup and the janitor
 * looks at each led partition once; the BUILT entry beside the data is
 * the truth (it moves with the partition), the memory only a cache.
 */
#include "server/pk_ft.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "server/pk_agent.h"
#include "server/pk_ft_int.h"
#include "server/pk_move.h"
#include "server/pk_repl.h"
#include "server/pk_split.h"
#include "store/pk_ftidx.h"
#include "store/pk_store.h"

#define TICK_MS 20
#define BUILD_BUDGET 2000 /* keys a tick indexes, at most */
#define CHECKS 512        /* partitions a tick looks at, per index */
#define SWEEP 64          /* partitions a tick checks for dropped ids */

/* A definition edit waiting for the map (a cluster). */
struct ft_edit {
    pk_agent_job job;
    pk_server *s;
    pk_conn *c; /* NULL once it closed */
    uint8_t *blob;
    char name[PK_FT_NAME_MAX + 1];
    uint8_t switched;
    ft_edit *next;
};

/* ---- the list ----------------------------------------------------------- */

static void index_free(ft_index *ix)
{
    pk_ftdef_free(ix->def);
    free(ix->built);
    pk__ft_filter_free(ix);
}

ft_index *pk__ft_by_id(pk_server *s, uint64_t id)
{
    for (uint32_t i = 0; s->ft && i < s->ft->n; i++)
        if (s->ft->v[i].def->id == id)
            return &s->ft->v[i];
    return NULL;
}

int pk__ft_writable(pk_server *s, uint32_t p)
{
    return pk_srv_leads(s, p) && !pk_move_fenced(s, p) &&
           !pk_split_fenced(s, p) && !pk_repl_handing_off(s, p);
}

uint32_t pk__ft_nparts(const pk_server *s)
{
    return s->cluster.enabled && s->cluster.map ? s->cluster.map->npartitions
                                                : 1;
}

/* A new entry for def (taken): 0, or PK_ENOMEM (def freed). */
static int index_new(pk_server *s, pk_ftdef *def, ft_index *out)
{
    *out = (ft_index){.def = def, .nparts = pk__ft_nparts(s)};
    out->built = calloc(out->nparts, 1);
    if (out->built == NULL || pk__ft_filter_init(out) != 0) {
        free(out->built);
        pk_ftdef_free(def);
        return PK_ENOMEM;
    }
    return 0;
}

static int same_def(const pk_ftdef *a, const uint8_t *blob, uint32_t len)
{
    size_t n = pk_ftdef_encoded_len(a);
    uint8_t *mine = malloc(n);
    int same;

    if (mine == NULL)
        return 0;
    pk_ftdef_encode(a, mine);
    same = n == len && memcmp(mine, blob, n) == 0;
    free(mine);
    return same;
}

/* The list from the map, when the map changed: an unchanged index keeps
 * what it knows; an altered one starts over. */
static void sync_map(pk_server *s)
{
    pk_ft *ft = s->ft;
    const pk_pmap *m = s->cluster.map;
    uint32_t nd, n = 0;
    pk_ftdef **defs;
    int32_t *from;
    ft_index *v;

    if (!s->cluster.enabled || m == NULL || m->epoch == ft->epoch)
        return;
    nd = m->nftdefs;
    defs = calloc(nd + 1, sizeof(*defs));
    from = calloc(nd + 1, sizeof(*from));
    v = calloc(nd + 1, sizeof(*v));
    /* Everything that can fail first: a definition this node cannot load
     * must not read as dropped (the sweep would delete its entries), so on
     * a failure nothing changes and the next tick tries again. */
    for (uint32_t i = 0; defs && from && v && i < nd; i++, n++) {
        const pk_ftblob *b = &m->ftdefs[i];
        if (pk_ftdef_decode(b->bytes, b->len, &defs[i]) != 0)
            break;
        from[i] = -1;
        for (uint32_t k = 0; k < ft->n && from[i] < 0; k++)
            if (ft->v[k].def->id == defs[i]->id &&
                ft->v[k].nparts == m->npartitions &&
                same_def(ft->v[k].def, b->bytes, b->len))
                from[i] = (int32_t)k;
        if (from[i] < 0 && index_new(s, defs[i], &v[i]) != 0) {
            defs[i] = NULL; /* freed by index_new */
            break;
        }
    }
    if (defs == NULL || from == NULL || v == NULL || n < nd) {
        for (uint32_t i = 0; defs && from && v && i < n; i++)
            if (from[i] < 0)
                index_free(&v[i]);
            else
                pk_ftdef_free(defs[i]);
        free(defs);
        free(from);
        free(v);
        return;
    }
    for (uint32_t i = 0; i < nd; i++)
        if (from[i] >= 0) { /* unchanged: keeps what it knows */
            v[i] = ft->v[from[i]];
            ft->v[from[i]].def = NULL;
            ft->v[from[i]].built = NULL;
            ft->v[from[i]].filter = NULL;
            ft->v[from[i]].filter_epoch = NULL;
            pk_ftdef_free(defs[i]);
        }
    for (uint32_t k = 0; k < ft->n; k++)
        index_free(&ft->v[k]);
    free(ft->v);
    free(defs);
    free(from);
    ft->v = v;
    ft->n = nd;
    ft->epoch = m->epoch;
    /* Once round after any change: an index gone, or partitions newly
     * led whose old leader had no time to sweep them. */
    ft->sweep_left = m->npartitions;
}

void pk__ft_sync(pk_server *s)
{
    if (s->ft)
        sync_map(s);
}

ft_index *pk__ft_find(pk_server *s, const char *name, size_t len)
{
    pk_ft *ft = s->ft;

    sync_map(s);
    for (uint32_t i = 0; ft && i < ft->n; i++)
        if (strlen(ft->v[i].def->name) == len &&
            memcmp(ft->v[i].def->name, name, len) == 0)
            return &ft->v[i];
    return NULL;
}

/* ---- a node alone: the file ---------------------------------------------- */

static void file_path(const pk_server *s, char *buf, size_t cap, int tmp)
{
    snprintf(buf, cap, "%s/ftdefs%s", s->cfg.dir, tmp ? ".tmp" : "");
}

/* Writes every definition: u32 length | encoding, each.  tmp + fsync +
 * rename + directory fsync, so a crash leaves the old file or the new. */
static int file_save(pk_server *s)
{
    pk_ft *ft = s->ft;
    char path[4096], tmp[4096];
    int fd, rc = PK_EIO;
    FILE *f;

    file_path(s, path, sizeof(path), 0);
    file_path(s, tmp, sizeof(tmp), 1);
    if ((f = fopen(tmp, "wb")) == NULL)
        return PK_EIO;
    for (uint32_t i = 0; i < ft->n; i++) {
        size_t n = pk_ftdef_encoded_len(ft->v[i].def);
        uint8_t *b = malloc(n), hdr[4];
        if (b == NULL)
            goto out;
        pk_ftdef_encode(ft->v[i].def, b);
        pk_be32_put(hdr, (uint32_t)n);
        if (fwrite(hdr, 4, 1, f) != 1 || fwrite(b, n, 1, f) != 1) {
            free(b);
            goto out;
        }
        free(b);
    }
    if (fflush(f) == 0 && fsync(fileno(f)) == 0)
        rc = 0;
out:
    if (fclose(f) != 0)
        rc = PK_EIO;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = PK_EIO;
    if (rc == 0 && (fd = open(s->cfg.dir, O_RDONLY)) >= 0) {
        fsync(fd);
        close(fd);
    }
    return rc;
}

static int file_load(pk_server *s)
{
    pk_ft *ft = s->ft;
    char path[4096];
    uint8_t hdr[4], *b;
    FILE *f;
    int rc = 0;

    file_path(s, path, sizeof(path), 0);
    if ((f = fopen(path, "rb")) == NULL)
        return errno == ENOENT ? 0 : PK_EIO;
    while (rc == 0 && fread(hdr, 4, 1, f) == 1) {
        uint32_t n = pk_be32_get(hdr);
        ft_index *v;
        pk_ftdef *d;
        if (n > (1u << 20) || (b = malloc(n ? n : 1)) == NULL) {
            rc = PK_ECORRUPT;
            break;
        }
        if (fread(b, n, 1, f) != 1) {
            free(b);
            rc = PK_ECORRUPT;
            break;
        }
        rc = pk_ftdef_decode(b, n, &d);
        free(b);
        if (rc != 0)
            break;
        if ((v = realloc(ft->v, (ft->n + 1) * sizeof(*v))) == NULL) {
            pk_ftdef_free(d);
            rc = PK_ENOMEM;
            break;
        }
        ft->v = v;
        if ((rc = index_new(s, d, &ft->v[ft->n])) == 0)
            ft->n++;
    }
    fclose(f);
    return rc;
}

/* ---- writes ---------------------------------------------------------------
 */

static int is_flush(const pk_cmd *cmd)
{
    return strcmp(cmd->name, "flushall") == 0 ||
           strcmp(cmd->name, "flushdb") == 0;
}

void pk__ft_reindex(pk_server *s, pk_txn *t, uint32_t part, pk_slice key)
{
    pk_ft *ft = s->ft;

    /* An error fails t: the writes of its group get error replies. */
    for (uint32_t i = 0; i < ft->n; i++)
        if (pk_ftdef_covers(ft->v[i].def, key.ptr, key.len)) {
            pk__ft_filter_doc(s, t, &ft->v[i], part, key);
            if (ft->v[i].def->id & PK_FTIDX_GLOBAL)
                pk__ft_global_dirty(s, part);
        }
}

void pk_ft_note_write(pk_cmd_ctx *x, const pk_cmd *cmd)
{
    pk_server *s = x->srv;
    pk_ft *ft = s->ft;
    pk_keyrun r[PK_KEYRUNS_MAX];
    int nr;

    if (ft == NULL || s->store == NULL)
        return;
    sync_map(s);
    if (ft->n == 0 || s->txn == NULL)
        return;
    nr = pk_cmd_keyruns(cmd, x->argc, x->argv, r);
    if (nr == 0 && is_flush(cmd)) /* every marker went with the data */
        for (uint32_t i = 0; i < ft->n; i++)
            memset(ft->v[i].built, 0, ft->v[i].nparts);
    for (int k = 0; k < nr; k++)
        for (int a = r[k].first; a <= r[k].last && a < x->argc;
             a += r[k].step) {
            pk_slice key = pk_cmd_key(cmd, &x->argv[a]);
            pk__ft_reindex(
                s, s->txn,
                x->have_part ? x->part : pk_srv_part(s, key.ptr, key.len), key);
            if (r[k].step <= 0)
                break;
        }
}

/* ---- the janitor ------------------------------------------------------- */

/* Builds what ix lacks here, up to *budget keys: 1 when it wrote. */
static int build_some(pk_server *s, pk_txn *t, ft_index *ix, int *budget)
{
    int wrote = 0;

    for (uint32_t checks = 0; checks<CHECKS && * budget> 0; checks++) {
        uint32_t p = ix->next, b;
        int done = 0, rc;
        if (ix->built[p] || !pk__ft_writable(s, p)) {
            ix->next = (p + 1) % ix->nparts;
            ix->in_part = 0;
            continue;
        }
        if (!ix->in_part) {
            if ((rc = pk_ftidx_built(t, p, ix->def)) < 0)
                return wrote;
            if (rc == 1) {
                ix->built[p] = 1;
                continue;
            }
            ix->in_part = 1;
            ix->clen = 0;
        }
        b = (uint32_t)*budget;
        rc = pk_ftidx_build(t, p, ix->def, ix->cursor, &ix->clen, &b, s->now_ms,
                            &done);
        *budget = (int)b;
        if (rc != 0)
            return wrote;
        wrote = 1;
        if (ix->def->id & PK_FTIDX_GLOBAL)
            pk__ft_global_dirty(s, p);
        if (!done)
            return wrote; /* on from the cursor next tick */
        ix->built[p] = 1;
        ix->in_part = 0;
    }
    return wrote;
}

/* Entries of indexes that no longer exist, in a few led partitions. */
static int sweep_some(pk_server *s, pk_txn *t)
{
    pk_ft *ft = s->ft;
    uint32_t np = pk__ft_nparts(s);
    int wrote = 0;

    for (int k = 0; k < SWEEP && ft->sweep_left > 0; k++, ft->sweep_left--) {
        uint32_t p = ft->sweep = (ft->sweep + 1) % np;
        uint64_t id = 0;
        if (!pk__ft_writable(s, p))
            continue;
        while (pk_ftidx_next_id(t, p, id, &id) == 0) {
            uint32_t i = 0;
            while (i < ft->n && ft->v[i].def->id != id)
                i++;
            if (i == ft->n && pk_ftidx_drop(t, p, id) == 0)
                wrote = 1;
        }
    }
    return wrote;
}

static void on_tick(uv_timer_t *h)
{
    pk_ft *ft = h->data;
    pk_server *s = ft->srv;
    pk_txn *t = s->txn;
    int own = t == NULL, wrote = 0, budget = BUILD_BUDGET;

    pk__ft_search_tick(s);
    if (s->store == NULL || (s->cluster.enabled && s->cluster.map == NULL))
        return;
    sync_map(s);
    if (own && pk_txn_begin(s->store, 0, &t) != PK_OK)
        return;
    for (uint32_t i = 0; i < ft->n && budget > 0; i++)
        wrote |= build_some(s, t, &ft->v[i], &budget);
    for (uint32_t i = 0; i < ft->n; i++)
        pk__ft_filter_build(s, t, &ft->v[i]);
    wrote |= sweep_some(s, t);
    if (own) {
        if (wrote && pk_txn_commit(t) != PK_OK)
            for (uint32_t i = 0; i < ft->n; i++) /* the markers are gone */
                memset(ft->v[i].built, 0, ft->v[i].nparts);
        else if (!wrote)
            pk_txn_abort(t);
    }
    if (own) /* what the build and the writes left in the outboxes */
        pk__ft_global_feed(s);
}

/* ---- definitions ---------------------------------------------------- */

/* The edit's map change is in (or refused): the client's answer. */
static void edit_done(pk_agent_job *j)
{
    ft_edit *e = j->ctx;
    pk_ft *ft = e->s->ft; /* NULL when it ends during shutdown */
    ft_edit **pp = ft ? &ft->edits : NULL;

    while (pp && *pp && *pp != e)
        pp = &(*pp)->next;
    if (pp && *pp)
        *pp = e->next;
    if (ft && e->c) {
        pk_conn *c = e->c;
        if (e->switched)
            pk_reply_simple(&c->out, "OK");
        else if (e->job.ftmode == 0)
            pk__ft_error(&c->out, "Index already exists");
        else
            pk__ft_error(&c->out, "Unknown Index name");
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
    free(e->blob);
    free(e);
}

/* Sends def's edit (mode as PK_JOB_FTDEF's) to the map for c, which
 * waits: 0, or the error to answer. */
static const char *edit_send(pk_server *s, pk_conn *c, const pk_ftdef *def,
                             int mode)
{
    ft_edit *e = calloc(1, sizeof(*e));
    size_t n = pk_ftdef_encoded_len(def);

    if (e == NULL || (e->blob = malloc(n)) == NULL || s->agent == NULL) {
        if (e)
            free(e->blob);
        free(e);
        return s->agent ? "ERR out of memory" : "CLUSTERDOWN no coordinator";
    }
    pk_ftdef_encode(def, e->blob);
    snprintf(e->name, sizeof(e->name), "%s", def->name);
    e->s = s;
    e->c = c;
    e->job = (pk_agent_job){.kind = PK_JOB_FTDEF,
                            .n = 1,
                            .switched = &e->switched,
                            .ftdef = e->blob,
                            .ftdef_len = (uint32_t)n,
                            .ftmode = mode,
                            .ftname = e->name,
                            .done = edit_done,
                            .ctx = e};
    e->next = s->ft->edits;
    s->ft->edits = e;
    pk_agent_commit(s->agent, &e->job);
    return NULL;
}

/* edit_send for the command in x: its reply comes with the map. */
static void edit_map(pk_cmd_ctx *x, const pk_ftdef *def, int mode)
{
    const char *err = edit_send(x->srv, x->c, def, mode);

    if (err) {
        pk__ft_error(x->out, err);
        return;
    }
    x->c->waiting_fwd = 1;
    x->c->iter_cmds--;
}

void pk__ft_drop_waiting(pk_server *s, pk_conn *c, const pk_ftdef *gone)
{
    ft_index *ix = pk__ft_find(s, gone->name, strlen(gone->name));
    pk_ftdef *d = ix && ix->def->id == gone->id ? pk_ftdef_dup(ix->def) : NULL;
    const char *err = ix == NULL || ix->def->id != gone->id
                          ? "Unknown Index name"
                      : d == NULL ? "ERR out of memory"
                                  : edit_send(s, c, d, 2);

    pk_ftdef_free(d);
    if (err && c) {
        pk__ft_error(&c->out, err);
        c->waiting_fwd = 0;
        pk_conn_resume(c);
    }
}

/* Arguments as pk_ftdef_parse takes them, from argv[from]. */
typedef struct argvec {
    const char **v;
    size_t *lens;
    int n;
} argvec;

static int args_from(const pk_cmd_ctx *x, int from, argvec *a)
{
    a->n = x->argc - from;
    a->v = malloc((size_t)(a->n ? a->n : 1) * sizeof(*a->v));
    a->lens = malloc((size_t)(a->n ? a->n : 1) * sizeof(*a->lens));
    if (a->v == NULL || a->lens == NULL) {
        free(a->v);
        free(a->lens);
        return PK_ENOMEM;
    }
    for (int i = 0; i < a->n; i++) {
        a->v[i] = x->argv[from + i].ptr;
        a->lens[i] = x->argv[from + i].len;
    }
    return 0;
}

static uint64_t new_id(pk_server *s)
{
    return (s->now_ms << 16) ^ ((uint64_t)rand() & 0xffff);
}

static int ready(pk_cmd_ctx *x)
{
    pk_server *s = x->srv;

    if (s->ft == NULL || s->store == NULL) {
        pk__ft_error(x->out, "ERR secondary indexes need a node with a "
                             "store (not a proxy)");
        return 0;
    }
    if (s->cluster.enabled && x->c->in_exec) {
        pk__ft_error(x->out, "ERR FT commands inside MULTI are not "
                             "supported in a cluster");
        return 0;
    }
    if (s->cluster.enabled &&
        (s->cluster.map == NULL || s->cluster.map->scheme == PK_SCHEME_RANGE)) {
        pk__ft_error(x->out, s->cluster.map
                                 ? "ERR secondary indexes need a hash "
                                   "partitioning scheme"
                                 : "CLUSTERDOWN no partition map yet");
        return 0;
    }
    sync_map(s);
    return 1;
}

/* A node alone: def (taken) added, or replacing index ix. */
static void local_put(pk_cmd_ctx *x, pk_ftdef *def, ft_index *ix)
{
    pk_ft *ft = x->srv->ft;
    ft_index *v;

    if (ix) { /* altered: the build starts over for the new fields */
        pk_ftdef_free(ix->def);
        ix->def = def;
        memset(ix->built, 0, ix->nparts);
        if (ix->filter_epoch) /* field numbers may name others now */
            memset(ix->filter_epoch, 0, ix->nparts * sizeof(uint64_t));
        ix->in_part = 0;
        ix->clen = 0;
    } else if ((v = realloc(ft->v, (ft->n + 1) * sizeof(*v))) == NULL ||
               (ft->v = v, index_new(x->srv, def, &ft->v[ft->n])) != 0) {
        pk__ft_error(x->out, "ERR out of memory");
        return;
    } else {
        ft->n++;
    }
    if (file_save(x->srv) != 0)
        pk__ft_error(x->out, "ERR cannot write the index definitions");
    else
        pk_reply_simple(x->out, "OK");
}

void pk_cmd_ft_create(pk_cmd_ctx *x)
{
    char name[PK_FT_NAME_MAX + 1], err[256];
    pk_ftdef *def = NULL;
    argvec a;
    int rc;

    if (!ready(x))
        return;
    if (x->argv[1].len > PK_FT_NAME_MAX ||
        memchr(x->argv[1].ptr, 0, x->argv[1].len)) {
        pk__ft_error(x->out, "Bad index name");
        return;
    }
    if (pk__ft_find(x->srv, x->argv[1].ptr, x->argv[1].len)) {
        pk__ft_error(x->out, "Index already exists");
        return;
    }
    snprintf(name, sizeof(name), "%.*s", (int)x->argv[1].len, x->argv[1].ptr);
    if (args_from(x, 2, &a) != 0) {
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    rc = pk_ftdef_parse(name, a.n, a.v, a.lens, &def, err, sizeof(err));
    free(a.v);
    free(a.lens);
    if (rc != 0) {
        pk__ft_error(x->out, rc == PK_EINVAL ? err : "ERR out of memory");
        return;
    }
    def->id = new_id(x->srv);
    /* A node alone has one partition: its GLOBAL index is a local one. */
    if (def->global && x->srv->cluster.enabled)
        def->id |= PK_FTIDX_GLOBAL;
    if (x->srv->cluster.enabled) {
        edit_map(x, def, 0);
        pk_ftdef_free(def);
    } else {
        local_put(x, def, NULL);
    }
}

void pk_cmd_ft_alter(pk_cmd_ctx *x)
{
    ft_index *ix;
    pk_ftdef *def;
    char err[256];
    argvec a;
    int rc, add = 2;

    if (!ready(x))
        return;
    if ((ix = pk__ft_find(x->srv, x->argv[1].ptr, x->argv[1].len)) == NULL) {
        pk__ft_error(x->out, "Unknown index name");
        return;
    }
    if (x->argc > 2 && pk_arg_eq(&x->argv[2], "skipinitialscan"))
        add++;
    if (x->argc < add + 3 || !pk_arg_eq(&x->argv[add], "schema") ||
        !pk_arg_eq(&x->argv[add + 1], "add")) {
        pk__ft_error(x->out, "ERR wrong number of arguments for "
                             "'FT.ALTER' command");
        return;
    }
    if ((def = pk_ftdef_dup(ix->def)) == NULL ||
        args_from(x, add + 2, &a) != 0) {
        pk_ftdef_free(def);
        pk__ft_error(x->out, "ERR out of memory");
        return;
    }
    rc = pk_ftdef_alter(def, a.n, a.v, a.lens, err, sizeof(err));
    free(a.v);
    free(a.lens);
    if (rc != 0) {
        pk_ftdef_free(def);
        pk__ft_error(x->out, rc == PK_EINVAL ? err : "ERR out of memory");
        return;
    }
    if (x->srv->cluster.enabled) {
        edit_map(x, def, 1);
        pk_ftdef_free(def);
    } else {
        local_put(x, def, ix);
    }
}

/* Removes index ix: its entries go with the janitor's sweep. */
static void drop(pk_cmd_ctx *x, ft_index *ix)
{
    pk_ft *ft = x->srv->ft;

    if (x->srv->cluster.enabled) {
        pk_ftdef *d = pk_ftdef_dup(ix->def);
        if (d == NULL) {
            pk__ft_error(x->out, "ERR out of memory");
            return;
        }
        edit_map(x, d, 2);
        pk_ftdef_free(d);
        return;
    }
    index_free(ix);
    *ix = ft->v[--ft->n];
    ft->sweep_left = pk__ft_nparts(x->srv);
    if (file_save(x->srv) != 0)
        pk__ft_error(x->out, "ERR cannot write the index definitions");
    else
        pk_reply_simple(x->out, "OK");
}

/* FT.DROPINDEX idx [DD], FT.DROP idx [KEEPDOCS | ""]. */
static void drop_cmd(pk_cmd_ctx *x, int dd)
{
    ft_index *ix;

    if (!ready(x))
        return;
    if ((ix = pk__ft_find(x->srv, x->argv[1].ptr, x->argv[1].len)) == NULL) {
        pk__ft_error(x->out, "Unknown Index name");
        return;
    }
    if (dd && x->srv->cluster.enabled) { /* every leader deletes its */
        pk__ft_search_deldocs(x, ix);
        return;
    }
    if (dd) {
        uint8_t one = 1;
        int64_t n;
        if (pk__ft_delete_docs(x, ix->def, &one, 1, &n) != 0)
            return;
    }
    drop(x, ix);
}

void pk_cmd_ft_dropindex(pk_cmd_ctx *x)
{
    if (x->argc > 3 || (x->argc == 3 && !pk_arg_eq(&x->argv[2], "dd"))) {
        pk_reply_syntax(x);
        return;
    }
    drop_cmd(x, x->argc == 3);
}

void pk_cmd_ft_drop(pk_cmd_ctx *x)
{
    if (x->argc > 3 || (x->argc == 3 && x->argv[2].len &&
                        !pk_arg_eq(&x->argv[2], "keepdocs"))) {
        pk_reply_syntax(x);
        return;
    }
    drop_cmd(x, x->argc == 2 || x->argv[2].len == 0);
}

void pk_cmd_ft_list(pk_cmd_ctx *x)
{
    pk_ft *ft = x->srv->ft;

    if (ft)
        sync_map(x->srv);
    pk_reply_set(x->out, x->proto, ft ? ft->n : 0);
    for (uint32_t i = 0; ft && i < ft->n; i++)
        pk_reply_bulk_str(x->out, ft->v[i].def->name);
}

/* ---- life ------------------------------------------------------------------
 */

int pk_ft_init(pk_server *s)
{
    pk_ft *ft = calloc(1, sizeof(*ft));
    int rc;

    if (ft == NULL)
        return PK_ENOMEM;
    ft->srv = s;
    uv_timer_init(&s->loop, &ft->timer); /* first: pk_ft_free closes it */
    ft->timer.data = ft;
    ft->sweep_left = 1; /* whatever a past run left: once round (a node
                         * alone has one partition; a map sets more) */
    s->ft = ft;
    if (!s->cluster.enabled && s->cfg.dir && (rc = file_load(s)) != 0) {
        fprintf(stderr, "partkv: cannot read %s/ftdefs: %s\n", s->cfg.dir,
                pk_strerror(rc));
        return rc;
    }
    uv_timer_start(&ft->timer, on_tick, TICK_MS, TICK_MS);
    return 0;
}

void pk_ft_forget(pk_server *s, pk_conn *c)
{
    pk_ft *ft = s->ft;

    if (ft == NULL)
        return;
    for (ft_edit *e = ft->edits; e; e = e->next)
        if (e->c == c)
            e->c = NULL;
    pk__ft_search_forget(s, c);
}

static void on_close(uv_handle_t *h)
{
    free(h->data);
}

void pk_ft_free(pk_server *s)
{
    pk_ft *ft = s->ft;

    if (ft == NULL)
        return;
    for (uint32_t i = 0; i < ft->n; i++)
        index_free(&ft->v[i]);
    free(ft->v);
    ft->n = 0;
    pk__ft_search_free(s);
    pk__ft_global_free(s);
    /* Edits belong to the agent until done (edit_done frees them).  It
     * is stopped first (teardown), so the ones still listed -- never
     * finished, or finished with their done callback never run -- are
     * nobody's now: out of the server's finished jobs, then freed (else
     * LeakSanitizer reports each FT.CREATE, FT.ALTER or FT.DROPINDEX
     * that was waiting at shutdown).  There are edits only where there
     * was an agent, and so a map_lock. */
    if (ft->edits) {
        pthread_mutex_lock(&s->map_lock);
        for (pk_agent_job **pp = &s->jobs_done; *pp;) {
            if ((*pp)->done == edit_done)
                *pp = (*pp)->next;
            else
                pp = &(*pp)->next;
        }
        pthread_mutex_unlock(&s->map_lock);
    }
    while (ft->edits) {
        ft_edit *e = ft->edits;

        ft->edits = e->next;
        free(e->blob);
        free(e);
    }
    s->ft = NULL;
    uv_close((uv_handle_t *)&ft->timer, on_close);
}

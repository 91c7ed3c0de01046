/*
 * pk_move_dst: the target side of partition moves -- PK.MOVE, an internal
 * command (it needs the cluster secret) that the source sends:
 *
 *   PK.MOVE BEGIN epoch part...       drop old copies, start imports
 *   PK.MOVE DATA part bytes           the next bytes of part's snapshot
 *   PK.MOVE DONE part                 part's snapshot is complete
 *   PK.MOVE LOG part seq rec [seq rec ...]   change-log records
 *   PK.MOVE SYNC                      what was applied is on disk
 *   PK.MOVE ABORT part...             forget these imports
 *   PK.MOVE PUSHMAP map               a newer map (the committed move)
 *
 * Each runs in the iteration's transaction, so its +OK leaves only once
 * its writes are committed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap_move.h"
#include "server/pk_ctx.h"
#include "server/pk_move_int.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

static mv_import *find(pk_mover *mv, uint32_t part)
{
    for (uint32_t i = 0; i < mv->nimports; i++)
        if (mv->imports[i].part == part)
            return &mv->imports[i];
    return NULL;
}

int pk__mv_importing(const pk_mover *mv, uint32_t part)
{
    return find((pk_mover *)mv, part) != NULL;
}

static void forget(pk_mover *mv, mv_import *im)
{
    pk_import_free(im->im);
    *im = mv->imports[--mv->nimports];
}

void pk__mv_imports_free(pk_mover *mv)
{
    while (mv->nimports)
        forget(mv, &mv->imports[0]);
    free(mv->imports);
    mv->imports = NULL;
}

void pk_move_conn_closed(pk_server *s, pk_conn *c)
{
    pk_mover *mv = s->mover;

    for (uint32_t i = 0; mv && i < mv->nimports;)
        if (mv->imports[i].c == c)
            forget(mv, &mv->imports[i]);
        else
            i++;
}

static int part_arg(pk_cmd_ctx *x, int i, uint32_t *part)
{
    int64_t v;
    const pk_pmap *m = x->srv->cluster.map;

    return pk_arg_i64(&x->argv[i], &v) && v >= 0 && m &&
           (uint64_t)v < m->npartitions && (*part = (uint32_t)v, 1);
}

static void move_begin(pk_cmd_ctx *x, pk_mover *mv, pk_txn *t)
{
    const pk_cluster *cl = &x->srv->cluster;
    int64_t epoch;
    uint32_t part, to;

    if (!pk_arg_i64(&x->argv[2], &epoch) || cl->map == NULL ||
        (uint64_t)epoch > cl->map->epoch) {
        pk_reply_error(x->out, "TRYAGAIN this node's map is older than "
                               "the move");
        return;
    }
    for (int i = 3; i < x->argc; i++)
        if (!part_arg(x, i, &part) || !pk_pmap_moving(cl->map, part, &to) ||
            to != cl->self) {
            pk_reply_errorf(x->out,
                            "ERR this node is not the target of "
                            "partition %.*s",
                            (int)x->argv[i].len, x->argv[i].ptr);
            return;
        }
    for (int i = 3; i < x->argc; i++) {
        mv_import *im;
        int done = 0, rc;
        part_arg(x, i, &part);
        if ((im = find(mv, part)) != NULL)
            forget(mv, im);
        rc = pk_store_part_drop(t, part, 0, &done);
        if (rc == PK_OK && mv->nimports == mv->cap_imports) {
            uint32_t cap = mv->cap_imports ? 2 * mv->cap_imports : 64;
            mv_import *n = realloc(mv->imports, cap * sizeof(*n));
            if (n == NULL)
                rc = PK_ENOMEM;
            else {
                mv->imports = n;
                mv->cap_imports = cap;
            }
        }
        im = &mv->imports[mv->nimports];
        if (rc == PK_OK && (rc = pk_import_new(part, &im->im)) == PK_OK) {
            im->part = part;
            im->c = x->c;
            mv->nimports++;
        }
        if (rc != PK_OK) {
            pk_cmd_store_error(x, rc);
            return;
        }
    }
    pk_reply_simple(x->out, "OK");
}

/* The import of argv[2] fed by this connection, or NULL after replying. */
static mv_import *import_arg(pk_cmd_ctx *x, pk_mover *mv)
{
    uint32_t part;
    mv_import *im = NULL;

    if (part_arg(x, 2, &part))
        im = find(mv, part);
    if (im == NULL || im->c != x->c || im->im == NULL) {
        pk_reply_error(x->out, "ERR no import of that partition is open");
        return NULL;
    }
    return im;
}

static void move_log(pk_cmd_ctx *x, pk_txn *t)
{
    const pk_cluster *cl = &x->srv->cluster;
    uint32_t part, to;
    int rc = PK_OK;

    if (!part_arg(x, 2, &part) || x->argc % 2 == 0) {
        pk_reply_syntax(x);
        return;
    }
    /* Late records of a cancelled move would bring back what the janitor
     * dropped. */
    if (!pk_pmap_moving(cl->map, part, &to) || to != cl->self) {
        pk_reply_error(x->out, "ERR this node is not the target of that "
                               "partition");
        return;
    }
    for (int i = 3; i + 1 < x->argc && (rc == PK_OK || rc == PK_EEXIST);
         i += 2) {
        int64_t seq;
        if (!pk_arg_i64(&x->argv[i], &seq) || seq <= 0) {
            pk_reply_syntax(x);
            return;
        }
        rc = pk_store_log_apply(t, part, (uint64_t)seq, x->argv[i + 1].ptr,
                                x->argv[i + 1].len);
    }
    if (rc == PK_OK || rc == PK_EEXIST)
        pk_reply_simple(x->out, "OK");
    else
        pk_reply_errorf(x->out, "ERR log apply: %s", pk_strerror(rc));
}

static void move_pushmap(pk_cmd_ctx *x)
{
    const pk_pmap *cur = x->srv->cluster.map;
    const uint8_t *buf = (const uint8_t *)x->argv[2].ptr;
    pk_pmap *m = NULL;
    uint64_t epoch;
    int rc;

    /* Most pushes bring a map this node already polled: skip decoding. */
    if (pk_pmap_peek_epoch(buf, x->argv[2].len, &epoch) == PK_OK && cur &&
        epoch <= cur->epoch) {
        pk_reply_simple(x->out, "OK");
        return;
    }
    rc = pk_pmap_decode(buf, x->argv[2].len, &m);

    if (rc != PK_OK) {
        pk_reply_errorf(x->out, "ERR map: %s", pk_strerror(rc));
        return;
    }
    pk_srv_set_map(x->srv, m, 0);
    pk_reply_simple(x->out, "OK");
}

void pk_cmd_pk_move(pk_cmd_ctx *x)
{
    pk_mover *mv = x->srv->mover;
    const pk_arg *sub = &x->argv[1];
    mv_import *im;
    uint32_t part;
    int rc;

    if (!x->c->internal) {
        pk_reply_error(x->out, "NOAUTH PK.MOVE needs PK.AUTH with the "
                               "cluster secret");
        return;
    }
    if (mv == NULL) {
        pk_reply_error(x->out, "ERR this node takes no partitions");
        return;
    }
    if (pk_arg_eq(sub, "pushmap") && x->argc == 3) {
        move_pushmap(x);
        return;
    }
    if (pk_arg_eq(sub, "abort")) {
        for (int i = 2; i < x->argc; i++) {
            if (!part_arg(x, i, &part))
                continue;
            if ((im = find(mv, part)) != NULL && im->c == x->c)
                forget(mv, im);
            if (part < mv->cap) /* dropped unless the map still says ours */
                mv->check[part] = 1;
        }
        mv->janitor = 1;
        pk_reply_simple(x->out, "OK");
        return;
    }
    if (pk_arg_eq(sub, "sync") && x->argc == 2) {
        /* The records were committed before their replies left, which the
         * source waited for; this puts them on disk as well. */
        rc = x->srv->cfg.fsync == PK_FSYNC_NO ? PK_OK
                                              : pk_store_sync(x->srv->store);
        if (rc == PK_OK)
            pk_reply_simple(x->out, "OK");
        else
            pk_reply_errorf(x->out, "ERR sync: %s", pk_strerror(rc));
        return;
    }
    TXN_OR_RETURN(x, t);
    x->c->yield = 1; /* one bulk step per iteration: clients go first */
    if (pk_arg_eq(sub, "begin") && x->argc >= 4) {
        move_begin(x, mv, t);
    } else if (pk_arg_eq(sub, "data") && x->argc == 4) {
        if ((im = import_arg(x, mv)) == NULL)
            return;
        rc = pk_import_feed(im->im, t, x->argv[3].ptr, x->argv[3].len);
        if (rc != PK_OK) {
            forget(mv, im);
            pk_reply_errorf(x->out, "ERR import: %s", pk_strerror(rc));
        } else {
            pk_reply_simple(x->out, "OK");
        }
    } else if (pk_arg_eq(sub, "done") && x->argc == 3) {
        if ((im = import_arg(x, mv)) == NULL)
            return;
        rc = pk_import_finish(im->im, t);
        forget(mv, im); /* the copy is whole; the map protects it now */
        if (rc != PK_OK)
            pk_reply_errorf(x->out, "ERR import: %s", pk_strerror(rc));
        else
            pk_reply_simple(x->out, "OK");
    } else if (pk_arg_eq(sub, "log") && x->argc >= 3) {
        move_log(x, t);
    } else {
        pk_reply_syntax(x);
    }
}

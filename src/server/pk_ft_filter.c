/*
 * pk_ft_filter: a Bloom filter per local index and led partition of the
 * terms (tags and words) with entries there, so that an exact lookup --
 * the selective query, `@tag:{x}` -- skips the partitions that surely
 * lack its term instead of searching each of them (a third of 16,384 per
 * node).  Only a hint: a filter says "maybe" for every term it was given,
 * and a partition whose filter is not valid is searched as before.
 *
 * A filter is valid while this node leads the partition at the leader
 * epoch it was built for: built by the janitor from the partition's term
 * entries (pk_ftidx_terms) once the index is built there, then kept up by
 * the writes this node makes as leader (pk__ft_reindex).  A change of
 * leader bumps the epoch, so a filter never misses what another leader
 * wrote.  Deleted terms stay in it (a false "maybe", never a miss).
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_hash.h"
#include "core/pk_pmap.h"
#include "server/pk_ft_int.h"
#include "store/pk_ftidx.h"

#define BITS (PK__FT_FILTER_BYTES * 8)
#define BUILDS 64 /* partitions a tick looks at */

static uint64_t hash_term(uint8_t field, const uint8_t *mid, size_t len)
{
    uint8_t k[1 + 2 * PK_FT_TERM_MAX + 2];

    k[0] = field;
    memcpy(k + 1, mid, len);
    return pk_hash_xxh3(k, 1 + len);
}

/* The leader epoch a valid filter of p records (+1: 0 is "none"). */
static uint64_t epoch_of(const pk_server *s, uint32_t p)
{
    const pk_pmap *m = s->cluster.map;

    return s->cluster.enabled && m ? m->parts[p].leader_epoch + 1 : 1;
}

int pk__ft_filter_init(ft_index *ix)
{
    if (ix->def->id & PK_FTIDX_GLOBAL)
        return 0; /* its lookups read one partition already */
    ix->filter = calloc(ix->nparts, PK__FT_FILTER_BYTES);
    ix->filter_epoch = calloc(ix->nparts, sizeof(*ix->filter_epoch));
    if (ix->filter == NULL || ix->filter_epoch == NULL) {
        pk__ft_filter_free(ix);
        return -1;
    }
    return 0;
}

void pk__ft_filter_free(ft_index *ix)
{
    free(ix->filter);
    free(ix->filter_epoch);
    ix->filter = NULL;
    ix->filter_epoch = NULL;
}

typedef struct add_ctx {
    ft_index *ix;
    uint32_t part;
} add_ctx;

static void add(void *ctx, uint8_t field, const uint8_t *mid, size_t len)
{
    const add_ctx *a = ctx;
    uint8_t *f = a->ix->filter + (size_t)a->part * PK__FT_FILTER_BYTES;
    uint64_t h = hash_term(field, mid, len);

    for (int i = 0; i < 3; i++, h >>= 21)
        f[(h % BITS) / 8] |= (uint8_t)(1u << (h % 8));
}

int pk__ft_filter_doc(pk_server *s, pk_txn *t, ft_index *ix, uint32_t part,
                      pk_slice key)
{
    add_ctx a = {ix, part};

    return pk_ftidx_doc_terms(t, part, ix->def, key.ptr, key.len, s->now_ms,
                              ix->filter && part < ix->nparts ? add : NULL, &a);
}

int pk__ft_filter_may(const pk_server *s, const ft_index *ix, uint32_t part,
                      const pk_ftq_scan *sc)
{
    uint8_t mid[2 * PK_FT_TERM_MAX + 2];
    const uint8_t *f;
    uint64_t h;
    size_t n;

    if (ix == NULL || ix->filter == NULL || sc->kind != PK_FTQ_EXACT ||
        part >= ix->nparts || ix->filter_epoch[part] != epoch_of(s, part) ||
        sc->field >= PK_FT_FIELDS_MAX)
        return 1;
    n = pk_keyenc_escape(sc->term, sc->len, mid, sizeof(mid) - 2);
    mid[n++] = 0;
    mid[n++] = 0x01;
    f = ix->filter + (size_t)part * PK__FT_FILTER_BYTES;
    h = hash_term((uint8_t)sc->field, mid, n);
    for (int i = 0; i < 3; i++, h >>= 21)
        if (!(f[(h % BITS) / 8] & (1u << (h % 8))))
            return 0;
    return 1;
}

void pk__ft_filter_build(pk_server *s, pk_txn *t, ft_index *ix)
{
    for (int k = 0; ix->filter && k < BUILDS; k++) {
        uint32_t p = ix->filter_next = (ix->filter_next + 1) % ix->nparts;
        add_ctx a = {ix, p};
        uint64_t ep = epoch_of(s, p);
        if (ix->filter_epoch[p] == ep || !ix->built[p] || !pk_srv_leads(s, p))
            continue;
        memset(ix->filter + (size_t)p * PK__FT_FILTER_BYTES, 0,
               PK__FT_FILTER_BYTES);
        if (pk_ftidx_terms(t, p, ix->def->id, add, &a) == 0)
            ix->filter_epoch[p] = ep;
    }
}

/*
 * HyperLogLog commands: PFADD PFCOUNT PFMERGE.  An HLL is a string value
 * (core/pk_hll.h holds the format and the maths); these commands read it
 * with GET, work on unpacked registers and write it back with SET
 * KEEPTTL, so each write is one store operation and the key keeps its
 * expiry.  PFCOUNT of one key stores the estimate in the value's cache,
 * as Redis does.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"
#include "server/pk_cmd.h"
#include "store/pk_str.h"

/* Unpacked registers and a packing buffer, owned by one command. */
typedef struct hll_work {
    uint8_t reg[PK_HLL_REGS];
    uint8_t tmp[PK_HLL_REGS];
    uint8_t enc[PK_HLL_DENSE_LEN];
} hll_work;

static void reply_hll_error(pk_cmd_ctx *x, int rc)
{
    if (rc == PK_EINVAL)
        pk_reply_error(x->out, "WRONGTYPE Key is not a valid HyperLogLog "
                               "string value.");
    else if (rc == PK_ECORRUPT)
        pk_reply_error(x->out, "INVALIDOBJ Corrupted HLL object detected");
    else
        pk_cmd_store_error(x, rc);
}

/*
 * Reads key argument i into reg (zeros for a missing key, *found = 0).
 * *dense = 1 for a dense value.  *v gets the value itself (the map's
 * bytes, valid until the next write).  Returns 0 or the reply's error.
 */
static int hll_load(pk_cmd_ctx *x, pk_txn *t, int i, uint8_t *reg, int *found,
                    int *dense, pk_slice *v)
{
    int rc = pk_str_get(t, PK_KEY(x, i), NOW(x), v);

    *found = 0;
    if (rc == PK_ENOTFOUND) {
        memset(reg, 0, PK_HLL_REGS);
        return 0;
    }
    if (rc != PK_OK)
        return rc;
    *found = 1;
    rc = pk_hll_decode(v->ptr, v->len, reg);
    if (rc == PK_OK)
        *dense = ((const uint8_t *)v->ptr)[4] == 0;
    return rc;
}

static int hll_save(pk_cmd_ctx *x, pk_txn *t, int i, const void *v, size_t n)
{
    pk_set_opts o = {PK_SET_KEEPTTL, 0};
    int done;

    return pk_str_set(t, PK_KEY(x, i), v, n, &o, NOW(x), &done, NULL);
}

void pk_cmd_pfadd(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    hll_work *w = malloc(sizeof(*w));
    int found = 0, dense = 0, changed = 0, rc;
    pk_slice v;
    size_t n;

    rc = w ? hll_load(x, t, 1, w->reg, &found, &dense, &v) : PK_ENOMEM;
    for (int i = 2; rc == PK_OK && i < x->argc; i++)
        changed |= pk_hll_add(w->reg, x->argv[i].ptr, x->argv[i].len);
    if (rc == PK_OK && (changed || !found)) {
        n = pk_hll_encode(w->reg, !dense, 0, !changed, w->enc);
        rc = hll_save(x, t, 1, w->enc, n);
    }
    if (rc != PK_OK)
        reply_hll_error(x, rc);
    else
        pk_reply_int(x->out, changed || !found);
    free(w);
}

void pk_cmd_pfcount(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    hll_work *w = malloc(sizeof(*w));
    int found = 0, dense = 0, rc = w ? PK_OK : PK_ENOMEM;
    uint64_t card = 0;
    pk_slice v;

    if (rc == PK_OK && x->argc == 2) {
        rc = hll_load(x, t, 1, w->reg, &found, &dense, &v);
        if (rc == PK_OK && found && !pk_hll_cached(v.ptr, &card)) {
            /* Patch the cache into a copy: v points into the map. */
            card = pk_hll_count(w->reg);
            memcpy(w->enc, v.ptr, v.len);
            for (int i = 0; i < 8; i++)
                w->enc[8 + i] = (uint8_t)(card >> (8 * i));
            rc = hll_save(x, t, 1, w->enc, v.len);
        }
    } else if (rc == PK_OK) {
        memset(w->reg, 0, PK_HLL_REGS);
        for (int i = 1; rc == PK_OK && i < x->argc; i++) {
            rc = hll_load(x, t, i, w->tmp, &found, &dense, &v);
            if (rc == PK_OK)
                pk_hll_merge(w->reg, w->tmp);
        }
        card = pk_hll_count(w->reg);
    }
    if (rc != PK_OK)
        reply_hll_error(x, rc);
    else
        pk_reply_int(x->out, (int64_t)card);
    free(w);
}

void pk_cmd_pfmerge(pk_cmd_ctx *x)
{
    TXN_OR_RETURN(x, t);
    hll_work *w = malloc(sizeof(*w));
    int found = 0, dense = 0, any_dense = 0, rc = w ? PK_OK : PK_ENOMEM;
    pk_slice v;
    size_t n;

    /* dst (argv[1]) is merged in too, as Redis does; any dense input
     * makes the result dense. */
    if (rc == PK_OK)
        memset(w->reg, 0, PK_HLL_REGS);
    for (int i = 1; rc == PK_OK && i < x->argc; i++) {
        dense = 0;
        rc = hll_load(x, t, i, w->tmp, &found, &dense, &v);
        any_dense |= dense;
        if (rc == PK_OK)
            pk_hll_merge(w->reg, w->tmp);
    }
    if (rc == PK_OK) {
        n = pk_hll_encode(w->reg, !any_dense, 0, 0, w->enc);
        rc = hll_save(x, t, 1, w->enc, n);
    }
    if (rc != PK_OK)
        reply_hll_error(x, rc);
    else
        pk_reply_simple(x->out, "OK");
    free(w);
}

/*
 * pk_rendezvous: highest-random-weight hashing.
 *
 * Each node's "name|" prefix is stored once, back to back in one buffer.  A
 * lookup copies the key once into a scratch buffer right after room for the
 * longest prefix, then, per node, copies only that node's prefix in front
 * of the key and hashes the contiguous bytes:
 *
 *   scratch: [ .... pad .... | n a m e | ] [ k e y ... ]
 *                             ^ hashed from here     ^ to here
 *
 * so the per-node cost is a short memcpy and a hash, with no allocation.
 *
 * That memcpy costs more than it looks: the hash's first word loads span
 * bytes stored a moment earlier, so they wait for the stores to commit
 * (a store-forwarding stall; perf puts a third of XXH3's time on that
 * load).  Laying out a batch of nodes' slots before hashing any of them
 * was tried and measured no faster, so the simple layout stays.
 *
 * Scores are compared as uint64_t.  Weighted scores are positive doubles
 * (possibly +inf), whose IEEE-754 bit patterns order the same way as their
 * values, so both variants share one comparison.
 */
#include "pk_rendezvous.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"

/* pk_hrw_top keeps scores for up to this many winners on the stack. */
#define HRW_TOP_STACK 64u

struct pk_hrw {
    uint32_t n;
    int weighted;      /* 0 when every weight is exactly 1.0 */
    pk_hash_fn hash;   /* borrowed function pointer */
    uint32_t *ids;     /* owned; n entries */
    double *weights;   /* owned; n entries */
    size_t *pre_off;   /* owned; offset of node i's prefix in `prefix` */
    uint32_t *pre_len; /* owned; strlen(name) + 1, for the '|' */
    char *prefix;      /* owned; every "name|", not NUL-terminated */
    size_t maxpre;     /* longest prefix */
};

int pk_hrw_new(const pk_place_node *nodes, uint32_t n, pk_hash_fn hash,
               pk_hrw **out)
{
    pk_hrw *h = NULL;
    size_t total = 0;
    int rc = PK_EINVAL;

    if (out == NULL) {
        return PK_EINVAL;
    }
    if (n == 0) {
        return PK_EEMPTY;
    }
    if (nodes == NULL || hash == NULL) {
        return PK_EINVAL;
    }
    for (uint32_t i = 0; i < n; i++) {
        double w = nodes[i].weight;

        if (nodes[i].name == NULL || nodes[i].id == PK_PLACE_NONE ||
            !isfinite(w) || !(w > 0.0)) {
            return PK_EINVAL;
        }
        size_t len = strlen(nodes[i].name);
        if (len >= UINT32_MAX) {
            return PK_EINVAL;
        }
        total += len + 1;
    }
    rc = PK_ENOMEM;
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        goto done;
    }
    h->n = n;
    h->hash = hash;
    h->ids = malloc(sizeof(*h->ids) * n);
    h->weights = malloc(sizeof(*h->weights) * n);
    h->pre_off = malloc(sizeof(*h->pre_off) * n);
    h->pre_len = malloc(sizeof(*h->pre_len) * n);
    h->prefix = malloc(total);
    if (h->ids == NULL || h->weights == NULL || h->pre_off == NULL ||
        h->pre_len == NULL || h->prefix == NULL) {
        goto done;
    }
    total = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t len = strlen(nodes[i].name);

        h->ids[i] = nodes[i].id;
        h->weights[i] = nodes[i].weight;
        if (nodes[i].weight != 1.0) {
            h->weighted = 1;
        }
        memcpy(h->prefix + total, nodes[i].name, len);
        h->prefix[total + len] = '|';
        h->pre_off[i] = total;
        h->pre_len[i] = (uint32_t)(len + 1);
        if (len + 1 > h->maxpre) {
            h->maxpre = len + 1;
        }
        total += len + 1;
    }
    *out = h;
    h = NULL;
    rc = PK_OK;
done:
    pk_hrw_free(h);
    return rc;
}

/*
 * Scratch space for one lookup: the key sits at buf + maxpre.  Uses the
 * caller's stack array when it is big enough, else mallocs.  Returns NULL
 * only when that malloc fails.
 */
static char *hrw_scratch(const pk_hrw *h, const void *key, size_t len,
                         char *stack, size_t cap)
{
    char *buf = stack;

    if (len > SIZE_MAX - h->maxpre) {
        return NULL;
    }
    if (h->maxpre + len > cap) {
        buf = malloc(h->maxpre + len);
        if (buf == NULL) {
            return NULL;
        }
    }
    if (len > 0) {
        memcpy(buf + h->maxpre, key, len);
    }
    return buf;
}

/* Node i's score for the key already in buf (see hrw_scratch). */
static inline uint64_t hrw_score(const pk_hrw *h, uint32_t i, char *buf,
                                 size_t len)
{
    uint32_t pl = h->pre_len[i];
    char *p = buf + h->maxpre - pl;
    uint64_t v;
    double u, s;

    memcpy(p, h->prefix + h->pre_off[i], pl);
    v = h->hash(p, pl + len);
    if (!h->weighted) {
        return v;
    }
    u = ((double)(v >> 11) + 0.5) * 0x1p-53;
    s = -h->weights[i] / log(u);
    memcpy(&v, &s, sizeof(v));
    return v;
}

uint32_t pk_hrw_lookup(const pk_hrw *h, const void *key, size_t len)
{
    char stack[PK_HRW_STACK_BYTES];
    char *buf = hrw_scratch(h, key, len, stack, sizeof(stack));
    uint64_t best;
    uint32_t win = 0;

    if (buf == NULL) {
        return PK_PLACE_NONE;
    }
    best = hrw_score(h, 0, buf, len);
    for (uint32_t i = 1; i < h->n; i++) {
        uint64_t s = hrw_score(h, i, buf, len);

        if (s > best) {
            best = s;
            win = i;
        }
    }
    if (buf != stack) {
        free(buf);
    }
    return h->ids[win];
}

int pk_hrw_top(const pk_hrw *h, const void *key, size_t len, uint32_t R,
               uint32_t *out, uint32_t *nout)
{
    char stack[PK_HRW_STACK_BYTES];
    uint64_t sc_stack[HRW_TOP_STACK];
    uint64_t *sc = sc_stack;
    char *buf = NULL;
    uint32_t want, got = 0;
    int rc = PK_EINVAL;

    if (h == NULL || nout == NULL || (out == NULL && R > 0) ||
        (key == NULL && len > 0)) {
        return PK_EINVAL;
    }
    want = R < h->n ? R : h->n;
    rc = PK_ENOMEM;
    if (want > HRW_TOP_STACK) {
        sc = malloc(sizeof(*sc) * want);
        if (sc == NULL) {
            goto done;
        }
    }
    buf = hrw_scratch(h, key, len, stack, sizeof(stack));
    if (buf == NULL) {
        goto done;
    }
    /* Insertion into a sorted top list; equal scores stay behind the
     * earlier (lower-index) node. */
    for (uint32_t i = 0; i < h->n && want > 0; i++) {
        uint64_t s = hrw_score(h, i, buf, len);
        uint32_t pos;

        if (got == want && s <= sc[want - 1]) {
            continue;
        }
        pos = got < want ? got : want - 1;
        while (pos > 0 && sc[pos - 1] < s) {
            sc[pos] = sc[pos - 1];
            out[pos] = out[pos - 1];
            pos--;
        }
        sc[pos] = s;
        out[pos] = i;
        if (got < want) {
            got++;
        }
    }
    for (uint32_t j = 0; j < got; j++) {
        out[j] = h->ids[out[j]];
    }
    *nout = got;
    rc = PK_OK;
done:
    if (buf != stack) {
        free(buf);
    }
    if (sc != sc_stack) {
        free(sc);
    }
    return rc;
}

void pk_hrw_free(pk_hrw *h)
{
    if (h == NULL) {
        return;
    }
    free(h->ids);
    free(h->weights);
    free(h->pre_off);
    free(h->pre_len);
    free(h->prefix);
    free(h);
}

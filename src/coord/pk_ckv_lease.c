/*
 * pk_ckv_lease: TTL leases of the embedded coordinator -- grant, renewal,
 * revocation and expiry.
 *
 * A lease is (id, ttl_ms, deadline_ms) in an array sorted by id.  Ids come
 * from a counter that only grows and is persisted, so an id is never given
 * out twice, and a grant is always an append.  Keys name their lease; a
 * lease does not list its keys, because revoking scans the key map, which
 * is small (hundreds of keys) and revoking is rare.
 *
 * Revoking deletes the lease's keys in key order, one revision and one
 * event each; the deletion records are allocated before anything changes,
 * so a revocation happens whole or not at all.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord/pk_ckv.h"
#include "coord/pk_ckv_int.h"
#include "coord/pk_coord.h"
#include "core/pk_err.h"

size_t pk__ckv_lease_find(const pk_ckv *s, uint64_t id)
{
    size_t lo = 0;
    size_t hi = s->nleases;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->leases[mid].id < id) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < s->nleases && s->leases[lo].id == id ? lo : SIZE_MAX;
}

static uint64_t deadline(uint64_t now_ms, uint64_t ttl_ms)
{
    return now_ms > UINT64_MAX - ttl_ms ? UINT64_MAX : now_ms + ttl_ms;
}

int pk_ckv_lease_grant(pk_ckv *s, uint64_t ttl_ms, uint64_t now_ms,
                       uint64_t *id)
{
    pk__ckv_lease *l;

    if (id == NULL || ttl_ms == 0 || ttl_ms > PK_COORD_TTL_MAX_MS) {
        return PK_EINVAL;
    }
    if (s->next_lease == UINT64_MAX) {
        return PK_EFULL;
    }
    if (s->nleases == s->cap_leases) {
        size_t cap = s->cap_leases != 0 ? 2 * s->cap_leases : 8;

        l = realloc(s->leases, cap * sizeof(*l));
        if (l == NULL) {
            return PK_ENOMEM;
        }
        s->leases = l;
        s->cap_leases = cap;
    }
    l = &s->leases[s->nleases++];
    l->id = s->next_lease++;
    l->ttl_ms = ttl_ms;
    l->deadline_ms = deadline(now_ms, ttl_ms);
    s->dirty = 1;
    *id = l->id;
    return PK_OK;
}

int pk_ckv_lease_keepalive(pk_ckv *s, uint64_t id, uint64_t now_ms)
{
    size_t i = pk__ckv_lease_find(s, id);

    if (i == SIZE_MAX || now_ms >= s->leases[i].deadline_ms) {
        return PK_ENOTFOUND;
    }
    s->leases[i].deadline_ms = deadline(now_ms, s->leases[i].ttl_ms);
    return PK_OK;
}

int pk_ckv_lease_ttl(const pk_ckv *s, uint64_t id, uint64_t now_ms,
                     uint64_t *ttl_ms, uint64_t *remaining_ms)
{
    size_t i = pk__ckv_lease_find(s, id);

    if (i == SIZE_MAX || now_ms >= s->leases[i].deadline_ms) {
        return PK_ENOTFOUND;
    }
    if (ttl_ms != NULL) {
        *ttl_ms = s->leases[i].ttl_ms;
    }
    if (remaining_ms != NULL) {
        *remaining_ms = s->leases[i].deadline_ms - now_ms;
    }
    return PK_OK;
}

uint64_t pk_ckv_next_deadline(const pk_ckv *s)
{
    uint64_t d = UINT64_MAX;

    for (size_t i = 0; i < s->nleases; i++) {
        if (s->leases[i].deadline_ms < d) {
            d = s->leases[i].deadline_ms;
        }
    }
    return d;
}

/* Revokes leases[at] and deletes its keys; all or nothing. */
static int revoke_at(pk_ckv *s, size_t at)
{
    uint64_t id = s->leases[at].id;
    pk__ckv_rec **tombs = NULL;
    size_t n = 0;
    size_t k = 0;
    int rc = PK_OK;

    for (size_t i = 0; i < s->nkeys; i++) {
        n += s->keys[i]->lease == id;
    }
    if (n > 0) {
        tombs = calloc(n, sizeof(*tombs));
        if (tombs == NULL) {
            return PK_ENOMEM;
        }
    }
    for (size_t i = 0; i < s->nkeys && k < n; i++) {
        const pk__ckv_rec *r = s->keys[i];

        if (r->lease != id) {
            continue;
        }
        tombs[k] = pk__ckv_rec_new(r->bytes, r->klen, NULL, 0);
        if (tombs[k++] == NULL) {
            rc = PK_ENOMEM;
            goto done;
        }
    }
    /* Nothing below can fail. */
    memmove(&s->leases[at], &s->leases[at + 1],
            (s->nleases - at - 1) * sizeof(*s->leases));
    s->nleases--;
    s->dirty = 1;
    k = 0;
    for (size_t i = 0; i < s->nkeys && k < n;) {
        if (s->keys[i]->lease == id) {
            pk__ckv_unlink(s, i, tombs[k]);
            tombs[k++] = NULL;
        } else {
            i++;
        }
    }
done:
    for (size_t i = 0; i < n; i++) {
        pk__ckv_rec_release(tombs != NULL ? tombs[i] : NULL);
    }
    free(tombs);
    return rc;
}

int pk_ckv_lease_revoke(pk_ckv *s, uint64_t id)
{
    size_t i = pk__ckv_lease_find(s, id);
    int rc;

    if (i == SIZE_MAX) {
        return PK_ENOTFOUND;
    }
    rc = revoke_at(s, i);
    pk__ckv_mutated(s);
    return rc;
}

int pk_ckv_tick(pk_ckv *s, uint64_t now_ms, uint32_t *expired)
{
    uint32_t n = 0;
    int rc = PK_OK;

    for (;;) {
        size_t due = SIZE_MAX;

        /* The earliest due deadline first; among equals, the lowest id. */
        for (size_t i = 0; i < s->nleases; i++) {
            if (s->leases[i].deadline_ms <= now_ms &&
                (due == SIZE_MAX ||
                 s->leases[i].deadline_ms < s->leases[due].deadline_ms)) {
                due = i;
            }
        }
        if (due == SIZE_MAX) {
            break;
        }
        rc = revoke_at(s, due);
        if (rc != PK_OK) {
            break;
        }
        n++;
    }
    if (expired != NULL) {
        *expired = n;
    }
    pk__ckv_mutated(s);
    return rc;
}

/*
 * pk_ckv_watch: the event history and the watchers of the embedded
 * coordinator.
 *
 * Every revision has exactly one event, so the history is a ring of
 * consecutive revisions ending at the current one, and the event of
 * revision r sits at a computed slot:
 *
 *   hist  [ r-2 | r-1 | r   | ... | oldest | ... ]
 *                            ^hist_head
 *   oldest = revision - hist_n + 1
 *
 * The ring drops its oldest event when it is full or holds more than
 * hist_max_bytes; a watcher that would need a dropped event is told
 * PK_ERANGE, the coordinator's "compacted".
 *
 * Delivery.  A watcher is nothing but a cursor: the next revision it has
 * not looked at.  Delivering means moving each cursor up to `visible`,
 * reading events from the ring, so that
 *
 *   - each watcher sees its events in revision order, exactly once: the
 *     cursor moves past an event before the callback runs;
 *   - a mutation made inside a callback is not delivered from inside that
 *     callback (which would overtake the events still due to the other
 *     watchers): a nested pk__ckv_notify only returns, and the loop that
 *     is running goes round again until no cursor can move;
 *   - a watcher cancelled inside a callback is only marked, and freed
 *     when the loop ends, so no cursor is ever read after a free;
 *   - the record being delivered holds a reference, so a callback that
 *     overwrites or deletes its key, or pushes it out of the ring, does
 *     not free the bytes its event points to.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord/pk_ckv.h"
#include "coord/pk_ckv_int.h"
#include "coord/pk_coord.h"
#include "core/pk_err.h"

/* ---- history ---------------------------------------------------------- */

static void drop_oldest(pk_ckv *s)
{
    pk__ckv_rec *r = s->hist[s->hist_head];

    s->hist[s->hist_head] = NULL;
    s->hist_head = (s->hist_head + 1) % s->hist_cap;
    s->hist_n--;
    s->hist_bytes -= pk__ckv_rec_size(r);
    pk__ckv_rec_release(r);
}

void pk__ckv_hist_push(pk_ckv *s, pk__ckv_rec *r)
{
    if (s->hist_n == s->hist_cap) {
        drop_oldest(s);
    }
    r->refs++;
    s->hist[(s->hist_head + s->hist_n) % s->hist_cap] = r;
    s->hist_n++;
    s->hist_bytes += pk__ckv_rec_size(r);
    while (s->hist_n > 1 && s->hist_bytes > s->hist_max_bytes) {
        drop_oldest(s);
    }
}

void pk__ckv_hist_drop_newest(pk_ckv *s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint32_t at = (s->hist_head + s->hist_n - 1) % s->hist_cap;
        pk__ckv_rec *r = s->hist[at];

        s->hist[at] = NULL;
        s->hist_n--;
        s->hist_bytes -= pk__ckv_rec_size(r);
        pk__ckv_rec_release(r);
    }
}

/* The event of revision rev; pk_ckv_oldest_revision(s) <= rev <= revision */
static pk__ckv_rec *hist_at(const pk_ckv *s, uint64_t rev)
{
    uint64_t off = rev - pk_ckv_oldest_revision(s);

    return s->hist[(s->hist_head + off) % s->hist_cap];
}

/* ---- delivery --------------------------------------------------------- */

static int matches(const pk_ckv_watch *w, const pk__ckv_rec *r)
{
    return r->klen >= w->prefix_len &&
           (w->prefix_len == 0 ||
            memcmp(r->bytes, w->prefix, w->prefix_len) == 0);
}

static void deliver(pk_ckv_watch *w, pk__ckv_rec *r)
{
    pk_coord_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.revision = r->mod_rev;
    ev.type = r->deleted ? PK_COORD_DELETE : PK_COORD_PUT;
    pk__ckv_rec_kv(r, &ev.kv);
    r->refs++;
    w->cb(w->ctx, PK_OK, &ev);
    pk__ckv_rec_release(r);
}

/* Moves w's cursor to its next matching event and delivers it. */
static void step(pk_ckv *s, pk_ckv_watch *w)
{
    if (w->next < pk_ckv_oldest_revision(s)) {
        w->ended = 1;
        w->cb(w->ctx, PK_ERANGE, NULL);
        return;
    }
    while (w->next <= s->visible) {
        pk__ckv_rec *r = hist_at(s, w->next);

        w->next++;
        if (matches(w, r)) {
            deliver(w, r);
            return;
        }
    }
}

static void watch_free(pk_ckv_watch *w)
{
    free(w->prefix);
    free(w);
}

/* Frees the watchers cancelled during delivery. */
static void reap(pk_ckv *s)
{
    size_t j = 0;

    for (size_t i = 0; i < s->nwatches; i++) {
        if (s->watches[i]->cancelled) {
            watch_free(s->watches[i]);
        } else {
            s->watches[j++] = s->watches[i];
        }
    }
    s->nwatches = j;
    s->reap = 0;
}

void pk__ckv_notify(pk_ckv *s)
{
    int moved;

    if (s->notifying) {
        return; /* the running loop will see the new events */
    }
    s->notifying = 1;
    do {
        moved = 0;
        /* s->nwatches and s->watches may change inside callbacks. */
        for (size_t i = 0; i < s->nwatches; i++) {
            pk_ckv_watch *w = s->watches[i];

            while (!w->ended && !w->cancelled && w->next <= s->visible) {
                step(s, w);
                moved = 1;
            }
        }
    } while (moved);
    s->notifying = 0;
    if (s->reap) {
        reap(s);
    }
}

/* ---- watchers --------------------------------------------------------- */

int pk_ckv_watch_start(pk_ckv *s, const void *prefix, size_t prefix_len,
                       uint64_t from_revision, pk_coord_watch_cb cb, void *ctx,
                       pk_ckv_watch **out)
{
    pk_ckv_watch *w = NULL;
    uint64_t from = from_revision != 0 ? from_revision : s->visible + 1;

    if (cb == NULL || out == NULL || (prefix == NULL && prefix_len > 0) ||
        prefix_len > PK_COORD_KEY_MAX) {
        return PK_EINVAL;
    }
    if (from < pk_ckv_oldest_revision(s)) {
        return PK_ERANGE;
    }
    if (s->nwatches == s->cap_watches) {
        size_t cap = s->cap_watches != 0 ? 2 * s->cap_watches : 8;
        pk_ckv_watch **ws = realloc(s->watches, cap * sizeof(*ws));

        if (ws == NULL) {
            return PK_ENOMEM;
        }
        s->watches = ws;
        s->cap_watches = cap;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return PK_ENOMEM;
    }
    if (prefix_len > 0) {
        w->prefix = malloc(prefix_len);
        if (w->prefix == NULL) {
            free(w);
            return PK_ENOMEM;
        }
        memcpy(w->prefix, prefix, prefix_len);
    }
    w->s = s;
    w->prefix_len = prefix_len;
    w->next = from;
    w->cb = cb;
    w->ctx = ctx;
    s->watches[s->nwatches++] = w;
    *out = w;
    pk__ckv_notify(s);
    return PK_OK;
}

void pk_ckv_watch_cancel(pk_ckv_watch *w)
{
    pk_ckv *s;

    if (w == NULL) {
        return;
    }
    s = w->s;
    w->cancelled = 1;
    if (s->notifying) {
        s->reap = 1;
        return;
    }
    reap(s);
}

void pk__ckv_watch_free_all(pk_ckv *s)
{
    for (size_t i = 0; i < s->nwatches; i++) {
        watch_free(s->watches[i]);
    }
    free(s->watches);
    s->watches = NULL;
    s->nwatches = s->cap_watches = 0;
}

/*
 * pk_ftq_eval: a parsed query (pk_ftq_int.h) matched on one document, and
 * turned into the index lookups whose hits hold every document it
 * matches (pk_ftq.h; the plan's two passes are described in pk_ftq.c).
 */
#include <stdlib.h>
#include <string.h>

#include "pk_err.h"
#include "pk_ftq_int.h"

/* ---- matching ---------------------------------------------------------- */

/* A word without a field is looked for in every indexed TEXT field. */
static int any_text(const pk_ftdef *d, uint32_t f)
{
    return d->fields[f].type == PK_FT_TEXT && !d->fields[f].noindex;
}

/* 1 when a leaf on field (-1: any TEXT field) reads field f. */
static int reads(const pk_ftq *q, int32_t field, uint32_t f)
{
    return field >= 0 ? f == (uint32_t)field : any_text(q->d, f);
}

static int term_hit(const pk_ftq *q, const ftq_term *t, const char *s,
                    size_t len)
{
    const char *b = q->bytes + t->off;

    if (t->prefix)
        return len >= t->len && memcmp(s, b, t->len) == 0;
    return len == t->len && memcmp(s, b, len) == 0;
}

/* The tags (TAG) or words (TEXT) of the document's field f, to cb: its
 * first nonzero return, or 0 (also when the document lacks f). */
static int field_terms(const pk_ftq *q, int kind, uint32_t f, pk_ftq_get get,
                       void *ctx, pk_ft_term_cb cb, void *w)
{
    const pk_ftfield *fd = &q->d->fields[f];
    char tb[PK_FT_TERM_MAX];
    const char *val;
    size_t len;

    if (!get(ctx, f, &val, &len))
        return 0;
    if (kind == N_TAG)
        return pk_ft_tag_terms(val, len, fd->sep, fd->casesens, tb, cb, w);
    return pk_ft_text_terms(val, len, tb, cb, w);
}

/* A tag, word or phrase over one field's terms, shift-and style: bit k
 * of live says the last k + 1 terms matched the first k + 1 of t. */
typedef struct text_walk {
    const pk_ftq *q;
    const ftq_term *t;
    uint32_t n;
    uint64_t live;
} text_walk;

static int text_cb(void *ctx, const char *term, size_t len)
{
    text_walk *w = ctx;
    uint64_t want = (w->live << 1) | 1, got = 0;

    for (uint32_t k = 0; k < w->n; k++)
        if (((want >> k) & 1) && term_hit(w->q, &w->t[k], term, len))
            got |= (uint64_t)1 << k;
    w->live = got;
    return (int)((got >> (w->n - 1)) & 1);
}

static int match_range(const ftq_node *n, pk_ftq_get get, void *ctx)
{
    const char *val;
    size_t len;
    double v;

    return get(ctx, (uint32_t)n->field, &val, &len) &&
           pk_ft_number(val, len, &v) &&
           (n->lo_excl ? v > n->lo : v >= n->lo) &&
           (n->hi_excl ? v < n->hi : v <= n->hi);
}

/* A TAG or TEXT leaf: a field it reads holds its term, or its phrase. */
static int match_terms(const pk_ftq *q, const ftq_node *n, pk_ftq_get get,
                       void *ctx)
{
    text_walk w = {q, &q->terms[n->term], n->nterms, 0};

    for (uint32_t f = 0; f < q->d->nfields; f++) {
        w.live = 0; /* a phrase lies within one field */
        if (reads(q, n->field, f) &&
            field_terms(q, n->kind, f, get, ctx, text_cb, &w))
            return 1;
    }
    return 0;
}

/* Keys of one (kind, field), as a term callback: 1 when term is one. */
typedef struct key_walk {
    const ftq_key *k;
    size_t n;
} key_walk;

static int key_cb(void *ctx, const char *term, size_t len)
{
    const key_walk *w = ctx;
    size_t lo = 0, hi = w->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = pk__ftq_term_cmp(w->k[mid].t, w->k[mid].len, term, len);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* 1 when the document has a term of one of OR node n's keys. */
static int match_keys(const pk_ftq *q, const ftq_node *n, pk_ftq_get get,
                      void *ctx)
{
    const ftq_key *k = q->keys + n->term, *end = k + n->nterms;

    while (k < end) {
        key_walk w = {k, 0};
        while (k < end && k->kind == w.k->kind && k->field == w.k->field)
            k++;
        w.n = (size_t)(k - w.k);
        for (uint32_t f = 0; f < q->d->nfields; f++)
            if (reads(q, w.k->field, f) &&
                field_terms(q, w.k->kind, f, get, ctx, key_cb, &w))
                return 1;
    }
    return 0;
}

static int match_node(const pk_ftq *q, uint32_t i, pk_ftq_get get, void *ctx)
{
    const ftq_node *n = &q->nodes[i];
    uint32_t k;

    switch (n->kind) {
    case N_ALL:
        return 1;
    case N_AND:
        for (k = n->kid; k != NIL; k = q->nodes[k].next)
            if (!match_node(q, k, get, ctx))
                return 0;
        return 1;
    case N_OR:
        if (n->nterms > 0 && match_keys(q, n, get, ctx))
            return 1;
        for (k = n->kid; k != NIL; k = q->nodes[k].next)
            if (!q->nodes[k].keyed && match_node(q, k, get, ctx))
                return 1;
        return 0;
    case N_NOT:
        return !match_node(q, n->kid, get, ctx);
    case N_TAG:
    case N_TEXT:
        return match_terms(q, n, get, ctx);
    case N_RANGE:
        return match_range(n, get, ctx);
    default:
        return 0;
    }
}

int pk_ftq_match(const pk_ftq *q, pk_ftq_get get, void *ctx)
{
    return match_node(q, q->root, get, ctx);
}

/* ---- planning ---------------------------------------------------------- */

/* Kinds of lookup, from the fewest hits expected to the most. */
enum { C_TAG, C_RANGE, C_WORD, C_TAG_PREFIX, C_WORD_PREFIX };

typedef struct cost {
    int bounded; /* 0: the node needs a walk of every document */
    int64_t n;   /* lookups */
    int worst;   /* C_*: the broadest of them */
} cost;

static cost node_cost(const pk_ftq *q, uint32_t i);

/* The term of a phrase to look up: an exact one where there is one. */
static uint32_t text_key(const pk_ftq *q, const ftq_node *n)
{
    for (uint32_t k = 0; k < n->nterms; k++)
        if (!q->terms[n->term + k].prefix)
            return n->term + k;
    return n->term;
}

static int64_t text_fields(const pk_ftq *q, const ftq_node *n)
{
    int64_t c = 0;

    if (n->field >= 0)
        return 1;
    for (uint32_t f = 0; f < q->d->nfields; f++)
        c += any_text(q->d, f);
    return c;
}

static cost leaf_cost(const pk_ftq *q, const ftq_node *n)
{
    cost c = {1, 1, C_RANGE};

    if (n->field >= 0 && q->d->fields[n->field].noindex)
        return (cost){0, 0, 0};
    if (n->kind == N_TAG)
        c.worst = q->terms[n->term].prefix ? C_TAG_PREFIX : C_TAG;
    if (n->kind == N_TEXT) {
        c.n = text_fields(q, n);
        c.worst = q->terms[text_key(q, n)].prefix ? C_WORD_PREFIX : C_WORD;
    }
    return c;
}

/* The operand of AND node n whose lookups to use, and their cost: the
 * best (kind, count) among those with lookups; NIL and a bounded cost of
 * 0 when the only bounded operands have none; NIL and unbounded when no
 * operand is bounded. */
static uint32_t and_pick(const pk_ftq *q, const ftq_node *n, cost *out)
{
    cost best = {0, 0, 0};
    uint32_t pick = NIL;
    int none = 0;

    for (uint32_t k = n->kid; k != NIL; k = q->nodes[k].next) {
        cost c = node_cost(q, k);
        if (!c.bounded)
            continue;
        if (c.n == 0)
            none = 1;
        else if (pick == NIL || c.worst < best.worst ||
                 (c.worst == best.worst && c.n < best.n)) {
            best = c;
            pick = k;
        }
    }
    if (pick == NIL)
        best = (cost){none, 0, 0};
    *out = best;
    return pick;
}

static cost node_cost(const pk_ftq *q, uint32_t i)
{
    const ftq_node *n = &q->nodes[i];
    cost c = {1, 0, 0}, k;

    switch (n->kind) {
    case N_NONE:
        return c;
    case N_AND:
        and_pick(q, n, &c);
        return c;
    case N_OR:
        for (uint32_t j = n->kid; j != NIL; j = q->nodes[j].next) {
            if (!(k = node_cost(q, j)).bounded)
                return k;
            c.n += k.n;
            c.worst = k.worst > c.worst ? k.worst : c.worst;
        }
        return c;
    case N_TAG:
    case N_RANGE:
    case N_TEXT:
        return leaf_cost(q, n);
    default: /* ALL, NOT */
        return (cost){0, 0, 0};
    }
}

static void scan_term(const pk_ftq *q, pk_ftq_scan *s, uint32_t f, uint32_t t)
{
    memset(s, 0, sizeof(*s));
    s->kind = q->terms[t].prefix ? PK_FTQ_PREFIX : PK_FTQ_EXACT;
    s->field = f;
    s->term = q->bytes + q->terms[t].off;
    s->len = q->terms[t].len;
}

/* Writes the lookups of bounded node i from out[pos]: the new pos. */
static int emit(const pk_ftq *q, uint32_t i, pk_ftq_scan *out, int pos)
{
    const ftq_node *n = &q->nodes[i];
    cost c;

    switch (n->kind) {
    case N_TAG:
        scan_term(q, &out[pos++], (uint32_t)n->field, n->term);
        break;
    case N_TEXT:
        for (uint32_t f = 0; f < q->d->nfields; f++)
            if (reads(q, n->field, f))
                scan_term(q, &out[pos++], f, text_key(q, n));
        break;
    case N_RANGE:
        memset(&out[pos], 0, sizeof(out[pos]));
        out[pos].kind = PK_FTQ_RANGE;
        out[pos].field = (uint32_t)n->field;
        out[pos].lo = n->lo;
        out[pos].hi = n->hi;
        out[pos].lo_excl = n->lo_excl;
        out[pos++].hi_excl = n->hi_excl;
        break;
    case N_OR:
        for (uint32_t k = n->kid; k != NIL; k = q->nodes[k].next)
            pos = emit(q, k, out, pos);
        break;
    case N_AND:
        if ((i = and_pick(q, n, &c)) != NIL)
            pos = emit(q, i, out, pos);
        break;
    default:
        break;
    }
    return pos;
}

int pk_ftq_plan(const pk_ftq *q, pk_ftq_scan *out, int cap)
{
    cost c = node_cost(q, q->root);

    if (!c.bounded || c.n == 0)
        return 0;
    if (c.n > (int64_t)(cap > 0 ? cap : 0))
        return -1;
    return emit(q, q->root, out, 0);
}

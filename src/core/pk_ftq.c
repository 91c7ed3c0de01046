/*
 * pk_ftq: RediSearch query strings -- parsed into flat arrays (see
 * pk_ftq.h); reading bytes and words is pk_ftq_lex.c's, matching and
 * planning pk_ftq_eval.c's.
 *
 * A parsed query is a few flat arrays, so that freeing it is a few calls
 * and nothing points into a buffer that may move while parsing:
 *
 *   nodes[]   kind | field | kid (first child) | next (sibling)
 *             | term, nterms (into terms[]; an OR's into keys[])
 *             | lo, hi (RANGE)
 *   terms[]   off, len (into bytes[]) | prefix
 *   bytes[]   every normalised term and tag, back to back
 *   keys[]    built once parsed: per OR with KEYS_MIN or more operands
 *             that are one exact tag or word, those terms sorted, so a
 *             document's field is read once and each of its terms looked
 *             up (an OR of 10,000 tags costs one read, not 10,000)
 *
 * AND, OR and NOT hold their operands as a sibling list (kid, then next
 * ...), so an OR of 10,000 words is one node with 10,000 children built
 * in one pass.  TAG holds one tag; TEXT holds one word, or a phrase of up
 * to PHRASE_MAX words that must be adjacent and in order; RANGE holds a
 * numeric range.  NONE matches nothing (a query that was only stop
 * words, a tag holding its field's separator); ALL matches everything
 * ('*').
 *
 * The parser is recursive descent over the grammar of pk_ftq.h.  Only
 * '(' and '@field:' recurse, and each adds one to a depth that may not
 * pass PK_FTQ_DEPTH_MAX; '-' chains and AND/OR lists are loops.  So the
 * tree is at most about 3 * PK_FTQ_DEPTH_MAX deep, and match and plan
 * recurse over it freely.  Stop words parse to "empty", which AND and OR
 * drop and NOT keeps empty, as RediSearch does; an empty query is NONE.
 *
 * Planning is two passes over the tree.  node_cost() says, without
 * writing, whether a node is bounded by lookups, how many, and the
 * broadest kind among them (exact tag < range < exact word < tag prefix
 * < word prefix).  An AND takes the operand with the best (kind, count)
 * -- one with lookups before one with none, since none at the top means
 * "walk everything"; an OR is bounded only when every operand is; a
 * phrase by one of its words.  emit() then writes the chosen lookups,
 * once their number is known to fit.  A leaf on a NOINDEX field is
 * matched but bounds nothing: the index holds no entries for it.
 */
#include "pk_ftq.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pk_err.h"
#include "pk_ftq_int.h"

#define EMPTY (-1) /* parse result: nothing (stop words) */

/* ---- building ---------------------------------------------------------- */

/* Room for need elements of sz bytes: arr itself when its capacity *cap
 * holds them, else a larger copy (*cap updated, arr freed) or NULL (arr
 * untouched). */
void *pk__ftq_grow(void *arr, size_t *cap, size_t need, size_t sz)
{
    size_t n = *cap ? *cap : 16;
    void *v;

    if (need <= *cap)
        return arr;
    while (n < need)
        n *= 2;
    if ((v = realloc(arr, n * sz)) != NULL)
        *cap = n;
    return v;
}

/* Appends a node of kind; its index, or NIL when out of memory. */
static uint32_t node_add(pk_ftq *q, int kind)
{
    ftq_node *n = pk__ftq_grow(q->nodes, &q->cnodes, q->nnodes + 1, sizeof(*n));

    if (n == NULL)
        return NIL;
    q->nodes = n;
    n += q->nnodes;
    memset(n, 0, sizeof(*n));
    n->kind = (uint8_t)kind;
    n->field = -1;
    n->kid = n->next = NIL;
    return (uint32_t)q->nnodes++;
}

static int term_add(pk_ftq *q, const char *t, size_t len, int prefix)
{
    ftq_term *e = pk__ftq_grow(q->terms, &q->cterms, q->nterms + 1, sizeof(*e));
    char *b;

    if (e == NULL)
        return PK_ENOMEM;
    q->terms = e;
    if ((b = pk__ftq_grow(q->bytes, &q->cbytes, q->nbytes + len + 1, 1)) ==
        NULL)
        return PK_ENOMEM;
    q->bytes = b;
    e += q->nterms++;
    e->off = (uint32_t)q->nbytes;
    e->len = (uint32_t)len;
    e->prefix = (uint8_t)prefix;
    memcpy(b + q->nbytes, t, len);
    q->nbytes += len;
    return 0;
}

/* ---- nodes ------------------------------------------------------------- */

/* The budget counts terms too: a PARAMS value used many times must not
 * make a short query large. */
static int budget(parser *p)
{
    if (p->q->nnodes + p->q->nterms >= PK_FTQ_NODES_MAX)
        return pk__ftq_fail(p,
                            "Query too complex: more than %d nodes and terms",
                            PK_FTQ_NODES_MAX);
    return 0;
}

static int new_node(parser *p, int kind)
{
    uint32_t i;

    if (budget(p) != 0)
        return FAIL;
    if ((i = node_add(p->q, kind)) == NIL)
        return pk__ftq_oom(p);
    return (int)i;
}

/* A leaf of kind on field over terms[t0 .. nterms). */
static int new_leaf(parser *p, int kind, int field, size_t t0)
{
    int i = new_node(p, kind);

    if (i >= 0) {
        p->q->nodes[i].field = field;
        p->q->nodes[i].term = (uint32_t)t0;
        p->q->nodes[i].nterms = (uint32_t)(p->q->nterms - t0);
    }
    return i;
}

/* Operands of an AND or OR, linked as they are parsed. */
typedef struct list {
    uint32_t first, last, n;
} list;

static void list_add(pk_ftq *q, list *l, int x)
{
    if (x < 0)
        return; /* empty: AND and OR drop it */
    if (l->n++ == 0)
        l->first = (uint32_t)x;
    else
        q->nodes[l->last].next = (uint32_t)x;
    l->last = (uint32_t)x;
}

/* The node for l: EMPTY, its one operand, or a new AND/OR over all. */
static int list_node(parser *p, int kind, const list *l)
{
    int i;

    if (l->n <= 1)
        return l->n ? (int)l->first : EMPTY;
    if ((i = new_node(p, kind)) >= 0)
        p->q->nodes[i].kid = l->first;
    return i;
}

/* ---- words and phrases ------------------------------------------------- */

/* Terms of one value going into terms[], up to a limit: a phrase holds
 * at most PHRASE_MAX, a tag one, so a long PARAMS value costs no more
 * than that. */
typedef struct collect {
    pk_ftq *q;
    int prefix;   /* the flag each term gets */
    size_t limit; /* nterms at which to stop (with TOO_MANY) */
} collect;

#define TOO_MANY 1

static int collect_cb(void *ctx, const char *term, size_t len)
{
    collect *c = ctx;

    if (c->q->nterms >= c->limit)
        return TOO_MANY;
    return term_add(c->q, term, len, c->prefix);
}

/* The prefix of a prefix word is its last run of non-separators; when
 * that is a stop word, pk_ft_text_terms dropped it, but "the*" still
 * means then, there, theory: it goes back in, lower-cased.  1 when it
 * did, 0 when w is no stop word, or FAIL. */
static int stop_prefix(parser *p, const char *w, size_t n)
{
    char low[16];

    if (n == 0 || n > sizeof(low))
        return 0;
    for (size_t i = 0; i < n; i++)
        low[i] = (w[i] >= 'A' && w[i] <= 'Z') ? (char)(w[i] + 32) : w[i];
    if (!pk_ft_stopword(low, n))
        return 0;
    return term_add(p->q, low, n, 1) != 0 ? pk__ftq_oom(p) : 1;
}

/* Appends the indexed terms of w (n bytes) to the phrase that began at
 * terms[t0] and at offset at: 0 or FAIL.  The last term of a prefix word
 * is the prefix. */
static int word_terms(parser *p, const char *w, size_t n, int prefix, size_t t0,
                      size_t at)
{
    char tb[PK_FT_TERM_MAX];
    collect c = {p->q, 0, t0 + PHRASE_MAX};
    size_t before = p->q->nterms, k = n;
    int rc = pk_ft_text_terms(w, n, tb, collect_cb, &c);

    if (rc == TOO_MANY)
        return pk__ftq_syntax(p, at, "phrase of more than 64 words");
    if (rc != 0)
        return pk__ftq_oom(p);
    if (!prefix)
        return 0;
    while (k > 0 && !pk__ftq_is_sep((unsigned char)w[k - 1]))
        k--;
    if ((rc = stop_prefix(p, w + k, n - k)) != 0)
        return rc < 0 ? FAIL : 0;
    if (k < n && p->q->nterms > before)
        p->q->terms[p->q->nterms - 1].prefix = 1;
    return 0;
}

/* A word or "$param" at pos, '*' after it making a prefix, appended to
 * the phrase at t0, at: 0 or FAIL. */
static int scan_word_terms(parser *p, size_t t0, size_t at)
{
    const char *w;
    size_t n;
    int prefix;

    if (budget(p) != 0)
        return FAIL;
    if (peek(p) == '$') {
        if (pk__ftq_scan_param(p, &w, &n) != 0)
            return FAIL;
        prefix = peek(p) == '*';
        p->pos += (size_t)prefix;
    } else {
        if (pk__ftq_scan_word(p, &prefix) != 0)
            return FAIL;
        w = p->buf;
        n = p->nbuf;
    }
    return word_terms(p, w, n, prefix, t0, at);
}

/* A TEXT leaf over terms[t0 ..]: one word, a phrase, or EMPTY. */
static int text_leaf(parser *p, int field, size_t t0, size_t at)
{
    if (p->q->nterms == t0)
        return EMPTY;
    if (p->q->nterms - t0 > PHRASE_MAX) /* a stop-word prefix last */
        return pk__ftq_syntax(p, at, "phrase of more than 64 words");
    return new_leaf(p, N_TEXT, field, t0);
}

static int parse_word(parser *p, int field)
{
    size_t t0 = p->q->nterms, at = p->pos;

    if (scan_word_terms(p, t0, at) != 0)
        return FAIL;
    return text_leaf(p, field, t0, at);
}

/* '"' words '"': the terms of every word, adjacent and in order. */
static int parse_phrase(parser *p, int field)
{
    size_t at = p->pos, t0 = p->q->nterms;
    unsigned char c;

    pk__ftq_take(p, 1);
    for (;;) {
        while (!at_end(p) && (c = peek(p)) != '"' && c != '\\' && c != '$' &&
               pk__ftq_is_sep(c))
            p->pos++;
        if (at_end(p))
            return pk__ftq_syntax(p, at, "unterminated phrase");
        if (peek(p) == '"')
            break;
        if (scan_word_terms(p, t0, at) != 0)
            return FAIL;
    }
    pk__ftq_take(p, 1);
    return text_leaf(p, field, t0, at);
}

/* ---- tags -------------------------------------------------------------- */

/* A tag's bytes at pos into buf, unescaped, up to an unescaped '|' or
 * '}'.  A last unescaped '*' (before trailing blanks) makes a prefix. */
static int scan_tag(parser *p, int *prefix)
{
    size_t mark = 0;
    int star = 0;

    p->nbuf = 0;
    p->last_off = p->pos;
    while (!at_end(p) && peek(p) != '|' && peek(p) != '}') {
        unsigned char c = peek(p);
        int esc = c == '\\';
        if (esc) {
            if (p->pos + 1 >= p->len)
                return pk__ftq_syntax(p, p->pos, "escape at the end");
            c = (unsigned char)p->s[++p->pos];
        }
        if (esc || !is_space(c)) {
            star = !esc && c == '*';
            mark = p->nbuf;
        }
        if (pk__ftq_buf_put(p, (char)c) != 0)
            return FAIL;
        p->pos++;
    }
    if (star)
        p->nbuf = mark;
    *prefix = star;
    return 0;
}

/* A whole tag that is "$name", maybe with '*': 1 and the value; 0 (pos
 * unchanged) when the tag is something else; or FAIL. */
static int tag_param(parser *p, const char **w, size_t *n, int *prefix)
{
    size_t at = p->pos, i = at + 1;

    while (i < p->len && pk__ftq_is_name((unsigned char)p->s[i]))
        i++;
    *prefix = i < p->len && p->s[i] == '*';
    i += (size_t)*prefix;
    while (i < p->len && is_space((unsigned char)p->s[i]))
        i++;
    if (i == at + 1 + (size_t)*prefix ||
        (i < p->len && p->s[i] != '|' && p->s[i] != '}'))
        return 0;
    if (pk__ftq_scan_param(p, w, n) != 0)
        return FAIL;
    p->pos = i;
    return 1;
}

/* The tag w (n bytes) of field f as a leaf: normalised as the field
 * indexes it.  A tag that splits in two at the separator is no one tag
 * a document can hold: NONE. */
static int tag_leaf(parser *p, int f, const char *w, size_t n, int prefix,
                    size_t at)
{
    const pk_ftfield *fd = &p->q->d->fields[f];
    char tb[PK_FT_TERM_MAX];
    size_t t0 = p->q->nterms;
    collect c = {p->q, prefix, t0 + 1};
    int rc;

    if (budget(p) != 0)
        return FAIL;
    rc = pk_ft_tag_terms(w, n, fd->sep, fd->casesens, tb, collect_cb, &c);
    if (rc != 0 && rc != TOO_MANY)
        return pk__ftq_oom(p);
    if (p->q->nterms == t0)
        return pk__ftq_syntax(p, at, "empty tag");
    if (rc == 0)
        return new_leaf(p, N_TAG, f, t0);
    p->q->nbytes = p->q->terms[t0].off;
    p->q->nterms = t0;
    return new_node(p, N_NONE);
}

static int parse_tag(parser *p, int f)
{
    const char *w = NULL;
    size_t n = 0, at;
    int prefix = 0, r = 0;

    pk__ftq_skip_space(p);
    at = p->pos;
    if (peek(p) == '$' && (r = tag_param(p, &w, &n, &prefix)) < 0)
        return FAIL;
    if (r == 0) {
        if (scan_tag(p, &prefix) != 0)
            return FAIL;
        w = p->buf;
        n = p->nbuf;
    }
    return tag_leaf(p, f, w, n, prefix, at);
}

/* '{' tag ('|' tag)* '}' on TAG field f: an OR of its tags. */
static int parse_tags(parser *p, int f)
{
    size_t at = p->pos;
    list l = {0, 0, 0};
    int x;

    pk__ftq_take(p, 1);
    for (;;) {
        if ((x = parse_tag(p, f)) == FAIL)
            return FAIL;
        list_add(p->q, &l, x);
        if (at_end(p))
            return pk__ftq_syntax(p, at, "unterminated tag list");
        pk__ftq_take(p, 1);
        if (p->s[p->last_off] == '}')
            break;
    }
    return list_node(p, N_OR, &l);
}

/* ---- numeric ranges ---------------------------------------------------- */

/* 1 and *v when w (n bytes) is inf, +inf or -inf (any case). */
static int is_inf(const char *w, size_t n, double *v)
{
    int neg = n == 4 && w[0] == '-';

    if (n == 4 && (w[0] == '+' || w[0] == '-')) {
        w++;
        n--;
    }
    if (n != 3 || strncasecmp(w, "inf", 3) != 0)
        return 0;
    *v = neg ? -INFINITY : INFINITY;
    return 1;
}

int pk_ftq_bound(const char *w, size_t n, double *v, int *excl)
{
    size_t skip = n > 0 && w[0] == '(';

    if (!is_inf(w + skip, n - skip, v) &&
        !(n > skip && pk_ft_number(w + skip, n - skip, v)))
        return 0;
    *excl |= (int)skip;
    return 1;
}

/* A bound's text w (n bytes); a PARAMS value may start with '(' too.  0
 * or FAIL ("Bad lower range: x"). */
static int bound_value(parser *p, const char *w, size_t n, int lower, double *v,
                       int *excl)
{
    if (pk_ftq_bound(w, n, v, excl))
        return 0;
    return pk__ftq_fail(p, "Bad %s range: %.*s", lower ? "lower" : "upper",
                        (int)n, w);
}

static int is_bound_end(unsigned char c)
{
    return is_space(c) || c == ',' || c == ']' || c == '[' || c == '(' ||
           c == ')';
}

static void skip_range_space(parser *p)
{
    while (!at_end(p) && (is_space(peek(p)) || peek(p) == ','))
        p->pos++;
}

/* ['('] (number | inf | $param) at pos. */
static int parse_bound(parser *p, int lower, double *v, int *excl)
{
    const char *w;
    size_t n, at;

    skip_range_space(p);
    *excl = peek(p) == '(' && !at_end(p);
    if (*excl)
        pk__ftq_take(p, 1);
    at = p->pos;
    if (!at_end(p) && peek(p) == '$')
        return pk__ftq_scan_param(p, &w, &n) != 0
                   ? FAIL
                   : bound_value(p, w, n, lower, v, excl);
    while (!at_end(p) && !is_bound_end(peek(p)))
        p->pos++;
    if (p->pos == at)
        return pk__ftq_syntax(p, at, "expected a number");
    p->last_off = at;
    return bound_value(p, p->s + at, p->pos - at, lower, v, excl);
}

/* '[' lo hi ']' (or '[' x ']') on NUMERIC field f. */
static int parse_range(parser *p, int f)
{
    size_t at = p->pos;
    double lo, hi;
    int lx, hx, i;

    pk__ftq_take(p, 1);
    if (parse_bound(p, 1, &lo, &lx) != 0)
        return FAIL;
    skip_range_space(p);
    if (!at_end(p) && peek(p) == ']') {
        hi = lo;
        hx = lx;
    } else if (parse_bound(p, 0, &hi, &hx) != 0) {
        return FAIL;
    }
    skip_range_space(p);
    if (at_end(p) || peek(p) != ']')
        return pk__ftq_syntax(p, at_end(p) ? at : p->pos, "expected ']'");
    pk__ftq_take(p, 1);
    if ((i = new_leaf(p, N_RANGE, f, p->q->nterms)) >= 0) {
        ftq_node *n = &p->q->nodes[i];
        n->lo = lo;
        n->hi = hi;
        n->lo_excl = (uint8_t)lx;
        n->hi_excl = (uint8_t)hx;
    }
    return i;
}

/* ---- expressions ------------------------------------------------------- */

static int parse_or(parser *p, int field, int depth);
static int parse_unary(parser *p, int field, int depth);

static int starts_atom(const parser *p)
{
    unsigned char c = peek(p);

    return !at_end(p) && (c == '(' || c == '@' || c == '"' || c == '*' ||
                          c == '$' || c == '\\' || !pk__ftq_is_sep(c));
}

static int too_deep(parser *p, size_t at)
{
    return pk__ftq_syntax(p, at, "nested deeper than 64");
}

/* '@' attr ':' then what the field's type takes. */
static int parse_field(parser *p, int depth)
{
    size_t at = p->pos;
    const pk_ftfield *fd;
    int prefix, f;
    unsigned char c;

    if (depth >= PK_FTQ_DEPTH_MAX)
        return too_deep(p, at);
    pk__ftq_take(p, 1);
    if (pk__ftq_scan_word(p, &prefix) != 0)
        return FAIL;
    if (p->nbuf == 0 || prefix)
        return pk__ftq_syntax(p, at, "expected a field name");
    if ((f = pk_ftdef_find(p->q->d, p->buf, p->nbuf)) < 0)
        return pk__ftq_fail(p, "Unknown field at offset %zu near %.*s", at,
                            (int)p->nbuf, p->buf);
    pk__ftq_skip_space(p);
    if (at_end(p) || peek(p) != ':')
        return pk__ftq_syntax(p, p->pos, "expected ':' after the field");
    pk__ftq_take(p, 1);
    pk__ftq_skip_space(p);
    fd = &p->q->d->fields[f];
    c = at_end(p) ? 0 : peek(p);
    if (fd->type == PK_FT_TAG)
        return c == '{' ? parse_tags(p, f)
                        : pk__ftq_syntax(p, at, "a TAG field takes {tags}");
    if (fd->type == PK_FT_NUMERIC)
        return c == '['
                   ? parse_range(p, f)
                   : pk__ftq_syntax(p, at, "a NUMERIC field takes [lo hi]");
    if (c == '{' || c == '[')
        return pk__ftq_syntax(p, at, "a TEXT field takes words");
    return parse_unary(p, f, depth + 1);
}

/* '(' or ')': a group, one level deeper. */
static int parse_group(parser *p, int field, int depth)
{
    size_t at = p->pos;
    int x;

    if (depth >= PK_FTQ_DEPTH_MAX)
        return too_deep(p, at);
    pk__ftq_take(p, 1);
    if ((x = parse_or(p, field, depth + 1)) == FAIL)
        return FAIL;
    pk__ftq_skip_filler(p);
    if (at_end(p))
        return pk__ftq_syntax(p, at, "unbalanced '('");
    if (peek(p) != ')')
        return pk__ftq_syntax(p, p->pos, NULL);
    pk__ftq_take(p, 1);
    return x;
}

/* A lone '*': every document.  '*' before a word (a suffix) is not
 * supported, and a field takes words. */
static int parse_star(parser *p, int field)
{
    size_t at = p->pos;
    unsigned char c;

    pk__ftq_take(p, 1);
    c = peek(p);
    if (field >= 0 || !(at_end(p) || pk__ftq_is_filler(c) || c == ')' ||
                        c == '|' || c == '-'))
        return pk__ftq_syntax(p, at, "'*' stands alone");
    return new_node(p, N_ALL);
}

static int parse_atom(parser *p, int field, int depth)
{
    switch (peek(p)) {
    case '(':
        return parse_group(p, field, depth);
    case '@':
        return parse_field(p, depth);
    case '"':
        return parse_phrase(p, field);
    case '*':
        return parse_star(p, field);
    default:
        return parse_word(p, field);
    }
}

/* '-'* atom: a NOT when the '-' are odd in number. */
static int parse_unary(parser *p, int field, int depth)
{
    int neg = 0, x, i;

    pk__ftq_skip_filler(p);
    while (!at_end(p) && peek(p) == '-') {
        pk__ftq_take(p, 1);
        neg ^= 1;
        pk__ftq_skip_filler(p);
    }
    if (!starts_atom(p))
        return pk__ftq_syntax(p, p->pos, NULL);
    if ((x = parse_atom(p, field, depth)) < 0 || !neg)
        return x;
    if ((i = new_node(p, N_NOT)) >= 0)
        p->q->nodes[i].kid = (uint32_t)x;
    return i;
}

static int parse_and(parser *p, int field, int depth)
{
    list l = {0, 0, 0};
    int x;

    do {
        if ((x = parse_unary(p, field, depth)) == FAIL)
            return FAIL;
        list_add(p->q, &l, x);
        pk__ftq_skip_filler(p);
    } while (starts_atom(p) || (!at_end(p) && peek(p) == '-'));
    return list_node(p, N_AND, &l);
}

static int parse_or(parser *p, int field, int depth)
{
    list l = {0, 0, 0};
    int x;

    for (;;) {
        if ((x = parse_and(p, field, depth)) == FAIL)
            return FAIL;
        list_add(p->q, &l, x);
        pk__ftq_skip_filler(p);
        if (at_end(p) || peek(p) != '|')
            break;
        pk__ftq_take(p, 1);
    }
    return list_node(p, N_OR, &l);
}

static int parse_query(parser *p)
{
    int x;

    pk__ftq_skip_filler(p);
    if (at_end(p))
        return new_node(p, N_NONE);
    if ((x = parse_or(p, -1, 0)) == FAIL)
        return FAIL;
    pk__ftq_skip_filler(p);
    if (!at_end(p))
        return pk__ftq_syntax(p, p->pos, NULL);
    return x == EMPTY ? new_node(p, N_NONE) : x;
}

/* ---- keys of wide ORs -------------------------------------------------- */

static int key_order(const void *a, const void *b)
{
    const ftq_key *x = a, *y = b;

    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->field != y->field)
        return x->field < y->field ? -1 : 1;
    return pk__ftq_term_cmp(x->t, x->len, y->t, y->len);
}

static int exact_one(const pk_ftq *q, const ftq_node *n)
{
    return (n->kind == N_TAG || n->kind == N_TEXT) && n->nterms == 1 &&
           !q->terms[n->term].prefix;
}

/* Sorts the exact one-term operands of each OR with KEYS_MIN or more of
 * them into keys[] (see ftq_key): 0 or PK_ENOMEM. */
static int index_ors(pk_ftq *q)
{
    for (size_t i = 0; i < q->nnodes; i++) {
        ftq_node *n = &q->nodes[i];
        size_t m = 0, at = q->nkeys;
        ftq_key *k;
        if (n->kind != N_OR)
            continue;
        for (uint32_t j = n->kid; j != NIL; j = q->nodes[j].next)
            m += (size_t)exact_one(q, &q->nodes[j]);
        if (m < KEYS_MIN)
            continue;
        if ((k = pk__ftq_grow(q->keys, &q->ckeys, at + m, sizeof(*k))) == NULL)
            return PK_ENOMEM;
        q->keys = k;
        for (uint32_t j = n->kid; j != NIL; j = q->nodes[j].next) {
            ftq_node *c = &q->nodes[j];
            const ftq_term *t = &q->terms[c->term];
            if (!exact_one(q, c))
                continue;
            c->keyed = 1;
            k[q->nkeys++] =
                (ftq_key){q->bytes + t->off, t->len, c->kind, c->field};
        }
        qsort(k + at, m, sizeof(*k), key_order);
        n->term = (uint32_t)at;
        n->nterms = (uint32_t)m;
    }
    return 0;
}

int pk_ftq_parse(const pk_ftdef *d, const char *query, size_t len, int nparams,
                 const char *const *pnames, const size_t *pnlens,
                 const char *const *pvals, const size_t *pvlens, pk_ftq **out,
                 char *err, size_t errcap)
{
    parser p = {0};
    int root;

    p.s = query;
    p.len = len;
    p.nparams = nparams;
    p.pnames = pnames;
    p.pnlens = pnlens;
    p.pvals = pvals;
    p.pvlens = pvlens;
    p.err = err;
    p.errcap = err ? errcap : 0;
    if ((p.q = calloc(1, sizeof(*p.q))) == NULL)
        return PK_ENOMEM;
    p.q->d = d;
    root = parse_query(&p);
    free(p.buf);
    if (root != FAIL && index_ors(p.q) != 0)
        root = pk__ftq_oom(&p);
    if (root == FAIL) {
        pk_ftq_free(p.q);
        return p.rc;
    }
    p.q->root = (uint32_t)root;
    *out = p.q;
    return 0;
}

void pk_ftq_free(pk_ftq *q)
{
    if (q == NULL)
        return;
    free(q->nodes);
    free(q->terms);
    free(q->bytes);
    free(q->keys);
    free(q);
}

int pk_ftq_add_filter(pk_ftq *q, uint32_t field, double lo, int lo_excl,
                      double hi, int hi_excl)
{
    /* A field d lacks is the caller's slip: match nothing, quietly. */
    int bad = field >= q->d->nfields;
    uint32_t r = node_add(q, bad ? N_NONE : N_RANGE), a;
    ftq_node *root;

    if (r == NIL)
        return PK_ENOMEM;
    if (!bad) {
        q->nodes[r].field = (int32_t)field;
        q->nodes[r].lo = lo;
        q->nodes[r].hi = hi;
        q->nodes[r].lo_excl = lo_excl != 0;
        q->nodes[r].hi_excl = hi_excl != 0;
    }
    root = &q->nodes[q->root];
    if (root->kind == N_AND) {
        /* Flat, so that many filters do not deepen the tree. */
        q->nodes[r].next = root->kid;
        root->kid = r;
        return 0;
    }
    if ((a = node_add(q, N_AND)) == NIL) {
        q->nnodes--;
        return PK_ENOMEM;
    }
    q->nodes[a].kid = r;
    q->nodes[r].next = q->root;
    q->root = a;
    return 0;
}

int pk__ftq_term_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    return c ? c : (alen > blen) - (alen < blen);
}

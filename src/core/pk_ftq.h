/*
 * pk_ftq: FT.SEARCH / FT.AGGREGATE query strings -- parsed against an
 * index definition, evaluated on one document, and turned into the index
 * lookups whose hits hold every document the query matches.
 *
 * Grammar (RediSearch's, as python3-redis writes it; DIALECT 2
 * precedence for every dialect: OR binds looser than AND):
 *
 *   query   := or
 *   or      := and ('|' and)*
 *   and     := unary (unary)*              -- juxtaposition is AND
 *   unary   := '-' unary | atom
 *   atom    := '(' or ')' | '*' | field | words
 *   field   := '@' attr ':' ( '{' tags '}' | '[' num [num] ']'
 *                           | unary )       -- unary's words on attr only
 *   tags    := tag ('|' tag)*               -- a tag may end in '*' (prefix)
 *   num     := ['('] (number | '-inf' | '+inf' | 'inf' | '$param')
 *   words   := word | phrase                -- on every TEXT field
 *   word    := bytes up to a separator; may end in '*' (prefix);
 *              '\' escapes the next byte; '$name' is a PARAMS value
 *   phrase  := '"' word* '"'                -- the words adjacent, in order
 *
 * A word or tag is normalised as the field indexes it (pk_ftdef.h:
 * lower-cased unless a CASESENSITIVE tag; words split as
 * pk_ft_text_terms splits text, stop words dropped).  A query whose only
 * terms are stop words, or that is empty, matches nothing.  In detail:
 *   - Separators other than the grammar's (, . : ; ! and so on) part
 *     words, as in RediSearch ("a.b" is a AND b); an escaped one joins
 *     them into a phrase ("a\.b" is "a b"), as does a PARAMS value of
 *     several words.  A phrase holds at most 64 terms.
 *   - A prefix that is a stop word is kept ("the*" finds "theory").
 *   - A tag is the bytes up to an unescaped '|' or '}', trimmed; a tag
 *     holding its field's separator matches nothing (no document holds
 *     it).  A whole tag "$name" is a PARAMS value, taken as it is.
 *   - A field must be of the kind its syntax asks for: {} TAG, []
 *     NUMERIC, words TEXT.  A word without a field looks in every TEXT
 *     field but NOINDEX ones; a NOINDEX field named in the query is still
 *     matched (and never bounds a plan: the index has no entries for it).
 *   - '[x]' is '[x x]'; a ',' may part the bounds.  lo > hi matches
 *     nothing.
 *   - Not supported (a syntax error): '~' optional, '%' fuzzy, '*' before
 *     a word (suffix), '@a|b:' field lists, '=>' attributes.
 *
 * Errors get RediSearch's texts where it has them ("Syntax error at
 * offset N near X", "Unknown field at offset N near F" with N the '@',
 * "No such parameter `x`", "Bad lower range: x", "Bad upper range: x").
 * Others read "Syntax error at offset N near X: why" (a field of the
 * wrong kind, nesting past PK_FTQ_DEPTH_MAX, an unterminated phrase) or
 * "Query too complex: ..." (over PK_FTQ_NODES_MAX nodes and terms).  The
 * parser never recurses past PK_FTQ_DEPTH_MAX levels of '(' and '@f:'.
 *
 * No I/O.  A pk_ftq is immutable once parsed and filtered: pk_ftq_match
 * and pk_ftq_plan keep no state in it, so any number of threads may use
 * one at once.
 */
#ifndef PK_CORE_PK_FTQ_H
#define PK_CORE_PK_FTQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/pk_ftdef.h"

#define PK_FTQ_DEPTH_MAX 64
#define PK_FTQ_NODES_MAX 100000

typedef struct pk_ftq pk_ftq;

/*
 * Parses query (len bytes) against d.  params: nparams name/value pairs
 * (PARAMS of FT.SEARCH; names without '$'), borrowed during the call.
 * Returns 0 and *out (pk_ftq_free), PK_EINVAL with a message in err
 * (errcap bytes, no leading '-'), or PK_ENOMEM.  d must outlive *out.
 */
int pk_ftq_parse(const pk_ftdef *d, const char *query, size_t len, int nparams,
                 const char *const *pnames, const size_t *pnlens,
                 const char *const *pvals, const size_t *pvlens, pk_ftq **out,
                 char *err, size_t errcap);

void pk_ftq_free(pk_ftq *q);

/*
 * FILTER field lo hi of FT.SEARCH (and NumericFilter): q becomes q AND
 * lo <= field <= hi (strict where *_excl).  field is a NUMERIC field's
 * number (one that d does not have makes q match nothing).  0 or
 * PK_ENOMEM.
 */
int pk_ftq_add_filter(pk_ftq *q, uint32_t field, double lo, int lo_excl,
                      double hi, int hi_excl);

/*
 * A numeric bound as a range or FILTER writes it (w, n bytes): a number,
 * inf, +inf or -inf, after a '(' when exclusive.  1 and *v (*excl set
 * when the '(' is there; left alone otherwise), or 0 when it is none.
 */
int pk_ftq_bound(const char *w, size_t n, double *v, int *excl);

/*
 * A document as the evaluator sees it: the raw value of field number f
 * (pk_ftdef field order), 1 and *val, *len when the hash has that field,
 * 0 when not.  val stays valid until the evaluation returns.
 */
typedef int (*pk_ftq_get)(void *ctx, uint32_t f, const char **val, size_t *len);

/* 1 when the document matches q, 0 when not. */
int pk_ftq_match(const pk_ftq *q, pk_ftq_get get, void *ctx);

/* One index lookup: the documents with an entry of field whose term is
 * term (EXACT), starts with it (PREFIX), or whose number lies in
 * [lo, hi] (RANGE; strict where *_excl). */
typedef enum pk_ftq_scan_kind {
    PK_FTQ_EXACT = 1,
    PK_FTQ_PREFIX = 2,
    PK_FTQ_RANGE = 3,
} pk_ftq_scan_kind;

typedef struct pk_ftq_scan {
    uint8_t kind; /* pk_ftq_scan_kind */
    uint32_t field;
    const char *term; /* EXACT, PREFIX: normalised, borrowed from q */
    size_t len;
    double lo, hi; /* RANGE */
    int lo_excl, hi_excl;
} pk_ftq_scan;

/*
 * The lookups whose hits, together, hold every document q matches (a
 * superset: each hit is then checked with pk_ftq_match).  For an AND, the
 * lookups of one operand that has them (an exact tag before a range
 * before a word); for an OR, those of every operand; a word without a
 * field, one lookup per indexed TEXT field; a phrase, those of one of its
 * words.  Writes up to cap lookups to out and
 * returns how many; 0 when no lookup bounds q (it holds '*' or a NOT
 * outside an AND with a bounded operand: walk every document of the
 * index), -1 when it needs more than cap.  A lookup may appear twice
 * ("a | a"); the caller unions hits.  0 also for a query that matches
 * nothing (stop words only): the walk then finds nothing.
 */
int pk_ftq_plan(const pk_ftq *q, pk_ftq_scan *out, int cap);

#endif

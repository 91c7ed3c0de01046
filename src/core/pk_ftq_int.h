/*
 * pk_ftq_int: the parsed query's layout, shared by the parser (pk_ftq.c)
 * and the matcher and planner (pk_ftq_eval.c).  See pk_ftq.c for what
 * each array holds.
 */
#ifndef PK_CORE_PK_FTQ_INT_H
#define PK_CORE_PK_FTQ_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pk_ftq.h"

#define NIL UINT32_MAX
#define PHRASE_MAX 64 /* words in a phrase: one bit each in match */

enum { N_NONE, N_ALL, N_AND, N_OR, N_NOT, N_TAG, N_TEXT, N_RANGE };

typedef struct ftq_node {
    uint8_t kind;
    uint8_t lo_excl, hi_excl;
    uint8_t keyed;         /* matched through its OR's keys */
    int32_t field;         /* TAG, RANGE, TEXT; TEXT -1: every TEXT field */
    uint32_t kid, next;    /* first operand, next sibling; NIL: none */
    uint32_t term, nterms; /* TAG, TEXT: terms[term .. term + nterms); */
                           /* OR: keys[term .. term + nterms) */
    double lo, hi;         /* RANGE */
} ftq_node;

typedef struct ftq_term {
    uint32_t off, len; /* in bytes[] */
    uint8_t prefix;
} ftq_term;

/* An OR's operand that is one exact tag or word, sorted with its like
 * by (kind, field, term): an OR of 10,000 of them then reads a field of
 * the document once and looks each of its terms up, rather than reading
 * it 10,000 times. */
typedef struct ftq_key {
    const char *t; /* in bytes[], final once parsed */
    uint32_t len;
    uint8_t kind;
    int32_t field;
} ftq_key;

#define KEYS_MIN 8 /* an OR's operands worth sorting */

struct pk_ftq {
    const pk_ftdef *d; /* borrowed: outlives the query */
    ftq_node *nodes;
    ftq_term *terms;
    char *bytes;
    ftq_key *keys;
    size_t nnodes, cnodes, nterms, cterms, nbytes, cbytes, nkeys, ckeys;
    uint32_t root;
};

/* Byte order, then length. */
int pk__ftq_term_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* ---- the parser's state and its reading of bytes (pk_ftq_lex.c) ----- */

#define FAIL (-2) /* parse result: error, in p->rc */

typedef struct parser {
    pk_ftq *q;
    const char *s;
    size_t len, pos;
    int nparams;
    const char *const *pnames, *const *pvals;
    const size_t *pnlens, *pvlens;
    char *err;
    size_t errcap;
    int rc;          /* 0, then PK_EINVAL or PK_ENOMEM */
    size_t last_off; /* the last token taken, for errors at end */
    char *buf;       /* an unescaped word, tag or name */
    size_t nbuf, cbuf;
} parser;

static inline int is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline int at_end(const parser *p)
{
    return p->pos >= p->len;
}

static inline unsigned char peek(const parser *p)
{
    return at_end(p) ? 0 : (unsigned char)p->s[p->pos];
}

/* Grows arr (of *cap elements of sz bytes) to hold need: the new array,
 * or NULL (arr left) when out of memory. */
void *pk__ftq_grow(void *arr, size_t *cap, size_t need, size_t sz);

/* The separators of pk_ft_text_terms (words part at them); those that
 * mean nothing to the grammar; the bytes of a name. */
int pk__ftq_is_sep(unsigned char c);
int pk__ftq_is_filler(unsigned char c);
int pk__ftq_is_name(unsigned char c);
/* Moves pos past spaces, or past fillers. */
void pk__ftq_skip_space(parser *p);
void pk__ftq_skip_filler(parser *p);
/* Takes n bytes as one token (the last taken, for errors at the end). */
void pk__ftq_take(parser *p, size_t n);
/* The length of the token at off, for an error's "near". */
size_t pk__ftq_token_len(const parser *p, size_t off);
/* The first error of the parse (its message kept, later ones dropped), a
 * memory failure, or "Syntax error at offset N near X[: why]": FAIL. */
int pk__ftq_fail(parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int pk__ftq_oom(parser *p);
int pk__ftq_syntax(parser *p, size_t off, const char *why);
/* Appends c to buf: 0 or FAIL. */
int pk__ftq_buf_put(parser *p, char c);
/* A word at pos into buf, unescaped; *prefix when a '*' follows.  The
 * value of "$name" at pos.  0 or FAIL. */
int pk__ftq_scan_word(parser *p, int *prefix);
int pk__ftq_scan_param(parser *p, const char **val, size_t *vlen);

#endif

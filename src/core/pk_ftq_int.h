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

#endif

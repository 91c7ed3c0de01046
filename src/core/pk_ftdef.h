/*
 * pk_ftdef: secondary index definitions (FT.CREATE ... ON HASH), their
 * wire/disk codec, and what a hash field's value is indexed as.
 *
 * An index covers the hashes whose key starts with one of its prefixes
 * (every hash when it has none).  Each schema field names a hash field
 * (its identifier) and, with AS, the attribute the queries use; fields
 * are numbered in schema order and FT.ALTER only appends, so a field's
 * number never changes while the index lives: index entries carry it.
 *
 * An index's id is unique for the life of the cluster and never reused
 * (the map epoch that created it): entries of a dropped index, and of an
 * index dropped and created again under the same name, are told apart
 * from the new one's by it.
 *
 * Encoding (big-endian; a string is u16 length | bytes):
 *
 *   u8 version (1) | u64 id | u8 flags (bit 0 GLOBAL) | string name
 *   | u16 nprefixes, string* | u16 nfields, field*
 *   field: string name | string alias (empty: none) | u8 type
 *          | u8 flags (bit 0 SORTABLE, bit 1 CASESENSITIVE, bit 2 NOINDEX)
 *          | u8 separator | u64 bits of the weight
 *
 * No I/O.  Not thread-safe per object; the functions keep no state.
 */
#ifndef PK_CORE_PK_FTDEF_H
#define PK_CORE_PK_FTDEF_H

#include <stddef.h>
#include <stdint.h>

#define PK_FT_NAME_MAX 255   /* longest index, field or attribute name */
#define PK_FT_FIELDS_MAX 128 /* fields per index (an entry holds a u8) */
#define PK_FT_PREFIXES_MAX 64
#define PK_FT_PREFIX_MAX 1024 /* longest prefix */

typedef enum pk_ft_type {
    PK_FT_TAG = 1,
    PK_FT_NUMERIC = 2,
    PK_FT_TEXT = 3,
} pk_ft_type;

typedef struct pk_ftfield {
    char *name;   /* the hash field, owned, NUL-terminated */
    char *alias;  /* the attribute (AS), owned, or NULL: name */
    uint8_t type; /* pk_ft_type */
    uint8_t sortable, casesens, noindex;
    char sep;      /* TAG separator, ',' by default */
    double weight; /* TEXT weight, 1 by default */
} pk_ftfield;

typedef struct pk_ftdef {
    char *name; /* owned */
    uint64_t id;
    int global;
    uint32_t nprefixes;
    char **prefixes;      /* owned, each NUL-terminated (binary-safe by */
    uint32_t *prefix_len; /* prefix_len) */
    uint32_t nfields;
    pk_ftfield *fields; /* owned */
} pk_ftdef;

/* The name a query uses for field i: its alias, else its name. */
const char *pk_ftdef_attr(const pk_ftdef *d, uint32_t i);

/* The number of the field a query names attr (alias, else name; case
 * sensitive, as RediSearch), or -1. */
int pk_ftdef_find(const pk_ftdef *d, const char *attr, size_t len);

/* 1 when key lies under one of d's prefixes (or d has none). */
int pk_ftdef_covers(const pk_ftdef *d, const void *key, size_t klen);

/*
 * FT.CREATE's arguments after the index name (argv[0] is "ON" or the
 * first option): ON HASH, PREFIX n p..., GLOBAL, the options python3-redis
 * may send and that change nothing here (NOOFFSETS NOHL NOFIELDS NOFREQS
 * SKIPINITIALSCAN MAXTEXTFIELDS, STOPWORDS n w..., LANGUAGE l, SCORE s,
 * TEMPORARY t are refused or ignored as documented in the README), then
 * SCHEMA with at least one field:
 *
 *   identifier [AS attribute] TAG [SEPARATOR c] [CASESENSITIVE] [SORTABLE]
 *                           | NUMERIC [SORTABLE] [NOINDEX]
 *                           | TEXT [WEIGHT w] [NOSTEM] [SORTABLE] [NOINDEX]
 *
 * On success *out is a new definition (pk_ftdef_free) named name with
 * id 0 (the caller sets it).  On error returns PK_EINVAL and writes a
 * RediSearch-style message (no leading '-') to err (errcap bytes).
 * PK_ENOMEM when out of memory.
 */
int pk_ftdef_parse(const char *name, int argc, const char *const *argv,
                   const size_t *lens, pk_ftdef **out, char *err,
                   size_t errcap);

/* FT.ALTER idx SCHEMA ADD field...: the arguments after ADD appended to
 * d's fields.  0, or PK_EINVAL with err (d unchanged), or PK_ENOMEM. */
int pk_ftdef_alter(pk_ftdef *d, int argc, const char *const *argv,
                   const size_t *lens, char *err, size_t errcap);

/* A deep copy of d, or NULL when out of memory. */
pk_ftdef *pk_ftdef_dup(const pk_ftdef *d);

void pk_ftdef_free(pk_ftdef *d);

/* Bytes pk_ftdef_encode writes for d. */
size_t pk_ftdef_encoded_len(const pk_ftdef *d);

/* Writes d's encoding to buf (pk_ftdef_encoded_len bytes). */
void pk_ftdef_encode(const pk_ftdef *d, uint8_t *buf);

/* Decodes len bytes into *out: 0, PK_ECORRUPT or PK_ENOMEM. */
int pk_ftdef_decode(const uint8_t *buf, size_t len, pk_ftdef **out);

/* ---- what a value is indexed as ------------------------------------- */

/* Longest term or tag an index entry holds; longer ones are cut to this
 * many bytes in the entry (a query re-checks every hit on the document). */
#define PK_FT_TERM_MAX 120

/* Called with each term or tag (borrowed: valid during the call).
 * Return 0 to go on; any other value stops the walk and is returned. */
typedef int (*pk_ft_term_cb)(void *ctx, const char *term, size_t len);

/*
 * TEXT: the lower-cased words of text, in order, repeats included: runs
 * of bytes that are not separators, where separators are ASCII
 * whitespace and the punctuation ,.<>{}[]"':;!@#$%^&*()-+=~/\|? (as
 * RediSearch's default), and the English stop words RediSearch drops
 * (a, an, and, are, as, at, be, but, by, for, if, in, into, is, it, no,
 * not, of, on, or, such, that, the, their, then, there, these, they,
 * this, to, was, will, with) left out.  buf (PK_FT_TERM_MAX bytes)
 * holds each term while cb runs; longer words are cut.
 */
int pk_ft_text_terms(const char *text, size_t len, char *buf, pk_ft_term_cb cb,
                     void *ctx);

/* 1 when term (already lower-cased) is a stop word. */
int pk_ft_stopword(const char *term, size_t len);

/*
 * TAG: the tags of value split at sep, each trimmed of ASCII whitespace,
 * empty ones skipped, lower-cased unless casesens (into buf, of
 * PK_FT_TERM_MAX bytes; longer tags are cut).
 */
int pk_ft_tag_terms(const char *value, size_t len, char sep, int casesens,
                    char *buf, pk_ft_term_cb cb, void *ctx);

/* NUMERIC: 1 and *out when value is a finite number as RediSearch reads
 * one (strtod on the whole string, no NaN, no inf), else 0 -- the
 * document is then not indexed on that field. */
int pk_ft_number(const char *value, size_t len, double *out);

#endif

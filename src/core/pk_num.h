/*
 * pk_num: numbers to decimal text (pk_num.c).
 */
#ifndef PK_CORE_PK_NUM_H
#define PK_CORE_PK_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Longest pk_i64_format() output, with its NUL. */
#define PK_I64_CHARS 21

/*
 * Writes v in decimal, NUL-terminated, to buf (at least PK_I64_CHARS
 * bytes) and returns the digit count; the same text as "%" PRId64.
 */
size_t pk_i64_format(char *buf, int64_t v);

/*
 * Writes v as Redis writes a long double to a client (INCRBYFLOAT,
 * HINCRBYFLOAT): "%.17Lf" with trailing zeros and a bare point dropped,
 * "-0" as "0", NUL-terminated, to buf (cap bytes).  Returns the length,
 * or 0 when it does not fit.
 */
size_t pk_ld_format(char *buf, size_t cap, long double v);

#endif

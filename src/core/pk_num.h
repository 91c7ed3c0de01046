/*
 * pk_num: integers to decimal text without printf (pk_num.c).
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

#endif

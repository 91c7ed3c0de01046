/*
 * pk_glob: Redis-compatible glob matching (stringmatchlen) for SCAN MATCH
 * and KEYS.
 *
 *   *        any run of bytes, also empty
 *   ?        any one byte
 *   [abc]    one of the bytes; [^abc] none of them; [a-z] a range (ends
 *            may be given in either order); \x inside brackets is x
 *   \x       the byte x itself
 *
 * Pattern and string are binary (length-delimited).  Like Redis 7, bytes
 * compare as signed chars in ranges, an unterminated '[' ends the class at
 * the pattern's end, and recursion is capped and pruned so that patterns
 * like "a*a*a*a*...b" finish quickly.  Also like Redis, an empty string
 * matches no non-empty pattern, not even "*": SCAN and KEYS treat the
 * pattern "*" as "no pattern".  Pure, thread-safe.
 */
#ifndef PK_STORE_PK_GLOB_H
#define PK_STORE_PK_GLOB_H

#include <stddef.h>

/* 1 when string matches pattern, else 0; nocase folds ASCII letters. */
int pk_glob_match(const void *pattern, size_t plen, const void *string,
                  size_t slen, int nocase);

#endif

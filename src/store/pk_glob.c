/*
 * pk_glob: a port of Redis' stringmatchlen_impl (util.c, 7.x) that never
 * reads past either length -- Redis relies on a NUL after the pattern.
 * skip_longer is Redis' pruning: once the rest of the pattern after a '*'
 * matches nowhere in the rest of the string, no earlier '*' can help.
 */
#include "store/pk_glob.h"

#define PK__GLOB_NESTING 1000

static int fold(int c, int nocase)
{
    return nocase && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Byte at p as Redis sees it: a (signed on x86) char. */
static int ch(const unsigned char *p)
{
    return (signed char)*p;
}

/* Whether x lies between the range ends a and b, in either order. */
static int in_range(int a, int b, int x)
{
    return a <= b ? x >= a && x <= b : x >= b && x <= a;
}

/* Matches one [...] class at *pp against c; advances *pp to its ']'. */
static int match_class(const unsigned char **pp, long *plenp, int c, int nocase)
{
    const unsigned char *p = *pp + 1;
    long plen = *plenp - 1;
    int neg, match = 0;

    neg = plen > 0 && p[0] == '^';
    if (neg) {
        p++;
        plen--;
    }
    for (;;) {
        if (plen >= 2 && p[0] == '\\') {
            p++;
            plen--;
            match |= p[0] == (unsigned char)c;
        } else if (plen == 0) {
            p--; /* unterminated: the class ends with the pattern */
            plen++;
            break;
        } else if (p[0] == ']') {
            break;
        } else if (plen >= 3 && p[1] == '-') {
            match |= in_range(fold(ch(p), nocase), fold(ch(p + 2), nocase),
                              fold((signed char)c, nocase));
            p += 2;
            plen -= 2;
        } else {
            match |= fold(p[0], nocase) == fold((unsigned char)c, nocase);
        }
        p++;
        plen--;
    }
    *pp = p;
    *plenp = plen;
    return neg ? !match : match;
}

/* Matches the pattern element at *pp (not '*') against byte c; leaves *pp
 * on the element's last byte. */
static int match_one(const unsigned char **pp, long *plenp, int c, int nocase)
{
    switch ((*pp)[0]) {
    case '?':
        return 1;
    case '[':
        return match_class(pp, plenp, c, nocase);
    case '\\':
        if (*plenp >= 2) {
            (*pp)++;
            (*plenp)--;
        }
        break;
    }
    return fold((*pp)[0], nocase) == fold(c, nocase);
}

static int glob(const unsigned char *p, long plen, const unsigned char *s,
                long slen, int nocase, int *skip_longer, int nesting);

/* A '*' at p[0]: tries the rest of the pattern at every suffix of s. */
static int glob_star(const unsigned char *p, long plen, const unsigned char *s,
                     long slen, int nocase, int *skip_longer, int nesting)
{
    while (plen > 1 && p[1] == '*') {
        p++;
        plen--;
    }
    if (plen == 1) {
        return 1;
    }
    for (; slen > 0; s++, slen--) {
        if (glob(p + 1, plen - 1, s, slen, nocase, skip_longer, nesting + 1)) {
            return 1;
        }
        if (*skip_longer) {
            return 0;
        }
    }
    *skip_longer = 1;
    return 0;
}

static int glob(const unsigned char *p, long plen, const unsigned char *s,
                long slen, int nocase, int *skip_longer, int nesting)
{
    const unsigned char *s0 = s;

    if (nesting > PK__GLOB_NESTING) {
        return 0;
    }
    while (plen > 0 && slen > 0) {
        if (p[0] == '*') {
            return glob_star(p, plen, s, slen, nocase, skip_longer, nesting);
        }
        if (!match_one(&p, &plen, s[0], nocase)) {
            return 0;
        }
        s++;
        slen--;
        p++;
        plen--;
    }
    /* Trailing stars match the empty rest -- but, as in Redis, only once
     * the string was consumed here: "*" does not match "". */
    while (slen == 0 && s != s0 && plen > 0 && p[0] == '*') {
        p++;
        plen--;
    }
    return plen == 0 && slen == 0;
}

int pk_glob_match(const void *pattern, size_t plen, const void *string,
                  size_t slen, int nocase)
{
    int skip_longer = 0;

    return glob(pattern, (long)plen, string, (long)slen, nocase, &skip_longer,
                0);
}

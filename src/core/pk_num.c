/*
 * pk_num: integers to decimal text, by hand, two digits per step (as
 * Redis's ll2string does): replies carry lengths and counts, and INCR
 * stores its result as text, so printf's cost would be on every request.
 */
#include "core/pk_num.h"

#include <stdio.h>
#include <string.h>

/* Decimal digits of v. */
static size_t digits(uint64_t v)
{
    size_t n = 1;

    for (;;) {
        if (v < 10)
            return n;
        if (v < 100)
            return n + 1;
        if (v < 1000)
            return n + 2;
        if (v < 10000)
            return n + 3;
        v /= 10000;
        n += 4;
    }
}

/* Writes v in decimal at buf, without NUL; returns the digit count. */
static size_t format_u64(char *buf, uint64_t v)
{
    static const char pairs[] = "00010203040506070809"
                                "10111213141516171819"
                                "20212223242526272829"
                                "30313233343536373839"
                                "40414243444546474849"
                                "50515253545556575859"
                                "60616263646566676869"
                                "70717273747576777879"
                                "80818283848586878889"
                                "90919293949596979899";
    size_t n = digits(v), i = n;

    while (v >= 100) {
        size_t k = (size_t)(v % 100) * 2;
        v /= 100;
        buf[--i] = pairs[k + 1];
        buf[--i] = pairs[k];
    }
    if (v >= 10) {
        buf[--i] = pairs[v * 2 + 1];
        buf[--i] = pairs[v * 2];
    } else {
        buf[--i] = (char)('0' + v);
    }
    return n;
}

size_t pk_i64_format(char *buf, int64_t v)
{
    size_t n = 0;

    if (v < 0)
        buf[n++] = '-';
    n += format_u64(buf + n, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    buf[n] = '\0';
    return n;
}

size_t pk_ld_format(char *buf, size_t cap, long double v)
{
    int n = snprintf(buf, cap, "%.17Lf", v);
    size_t len;

    if (n < 0 || (size_t)n >= cap)
        return 0;
    len = (size_t)n;
    if (memchr(buf, '.', len) != NULL) {
        while (len > 0 && buf[len - 1] == '0')
            len--;
        if (len > 0 && buf[len - 1] == '.')
            len--;
    }
    if (len == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        len = 1;
    }
    buf[len] = '\0';
    return len;
}

/*
 * pk_ftq_lex: the query parser's reading of bytes -- characters that part
 * words, words with their escapes, "$name" parameters, and the errors
 * that name the token at fault ("Syntax error at offset N near X").
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pk_err.h"
#include "pk_ftq_int.h"

/* The separators of pk_ft_text_terms: a query word is a run of the other
 * bytes, so that it never holds less than one indexed term. */
int pk__ftq_is_sep(unsigned char c)
{
    return is_space(c) ||
           (c != 0 && strchr(",.<>{}[]\"':;!@#$%^&*()-+=~/\\|?", c) != NULL);
}

/* Separators that mean nothing to the query grammar: they only part
 * words, as in RediSearch's lexer. */
int pk__ftq_is_filler(unsigned char c)
{
    return is_space(c) || (c != 0 && strchr(",.<>:;!#^&=+?/'", c) != NULL);
}

int pk__ftq_is_name(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

void pk__ftq_skip_space(parser *p)
{
    while (!at_end(p) && is_space((unsigned char)p->s[p->pos]))
        p->pos++;
}

void pk__ftq_skip_filler(parser *p)
{
    while (!at_end(p) && pk__ftq_is_filler((unsigned char)p->s[p->pos]))
        p->pos++;
}

/* Takes n bytes as one token. */
void pk__ftq_take(parser *p, size_t n)
{
    p->last_off = p->pos;
    p->pos += n;
}

/* The length of the token at off, for "near": a word (with escapes), a
 * "$name" or "@name", or one byte. */
size_t pk__ftq_token_len(const parser *p, size_t off)
{
    size_t i = off;
    unsigned char c = (unsigned char)p->s[off];

    if (c == '$' || c == '@')
        i++;
    else if (pk__ftq_is_sep(c) && c != '\\')
        return 1;
    while (i < p->len) {
        c = (unsigned char)p->s[i];
        if (c == '\\' && i + 1 < p->len)
            i += 2;
        else if (!pk__ftq_is_sep(c))
            i++;
        else
            break;
    }
    return i > off ? i - off : 1;
}

int pk__ftq_fail(parser *p, const char *fmt, ...)
{
    va_list ap;

    if (p->rc == 0 && p->errcap > 0) {
        va_start(ap, fmt);
        vsnprintf(p->err, p->errcap, fmt, ap);
        va_end(ap);
    }
    if (p->rc == 0)
        p->rc = PK_EINVAL;
    return FAIL;
}

int pk__ftq_oom(parser *p)
{
    if (p->rc == 0 && p->errcap > 0)
        snprintf(p->err, p->errcap, "Out of memory");
    p->rc = PK_ENOMEM;
    return FAIL;
}

/* "Syntax error at offset N near X" for the token at off (the last one
 * taken when off is the end), with an explanation after a colon. */
int pk__ftq_syntax(parser *p, size_t off, const char *why)
{
    size_t n;

    if (p->len == 0)
        return pk__ftq_fail(p, "Syntax error at offset 0 near %s",
                            why ? why : "");
    if (off >= p->len)
        off = p->last_off < p->len ? p->last_off : p->len - 1;
    n = pk__ftq_token_len(p, off);
    n = n > 100 ? 100 : n;
    return pk__ftq_fail(p, "Syntax error at offset %zu near %.*s%s%s", off,
                        (int)n, p->s + off, why ? ": " : "", why ? why : "");
}

int pk__ftq_buf_put(parser *p, char c)
{
    char *b = pk__ftq_grow(p->buf, &p->cbuf, p->nbuf + 1, 1);

    if (b == NULL)
        return pk__ftq_oom(p);
    p->buf = b;
    b[p->nbuf++] = c;
    return 0;
}

/* A word at pos into buf, unescaped: the bytes up to a separator, '\'
 * taking the next byte as it is.  Sets *prefix when a '*' follows. */
int pk__ftq_scan_word(parser *p, int *prefix)
{
    p->nbuf = 0;
    p->last_off = p->pos;
    while (!at_end(p)) {
        unsigned char c = peek(p);
        if (c == '\\') {
            if (p->pos + 1 >= p->len)
                return pk__ftq_syntax(p, p->pos, "escape at the end");
            c = (unsigned char)p->s[++p->pos];
        } else if (pk__ftq_is_sep(c)) {
            break;
        }
        if (pk__ftq_buf_put(p, (char)c) != 0)
            return FAIL;
        p->pos++;
    }
    *prefix = peek(p) == '*';
    p->pos += (size_t)*prefix;
    return 0;
}

/* "$name" at pos: *val and *vlen get the PARAMS value. */
int pk__ftq_scan_param(parser *p, const char **val, size_t *vlen)
{
    size_t at = p->pos, n;

    pk__ftq_take(p, 1);
    while (!at_end(p) && pk__ftq_is_name(peek(p)))
        p->pos++;
    n = p->pos - at - 1;
    if (n == 0)
        return pk__ftq_syntax(p, at, "a parameter needs a name");
    for (int i = 0; i < p->nparams; i++) {
        if (p->pnlens[i] == n && memcmp(p->pnames[i], p->s + at + 1, n) == 0) {
            *val = p->pvals[i];
            *vlen = p->pvlens[i];
            return 0;
        }
    }
    return pk__ftq_fail(p, "No such parameter `%.*s`", (int)n, p->s + at + 1);
}

/* pk_salt: names of a salted key's parts (see pk_salt.h). */
#include "pk_salt.h"

#include <string.h>

#include "pk_hash.h"
#include "pk_num.h"

static const char SUB_MID[] = "}\0salt\0"; /* after "{s<tag>" */
#define SUB_MID_LEN 7
static const char MARK_MID[] = "\0salt-folded\0";
#define MARK_MID_LEN 13

static const char STAMP_MID[] = "\0salt-hlc\0";
#define STAMP_MID_LEN 10

/* "{s<tag>" into out (PK_I64_CHARS + 2 bytes): its length.  (On every
 * salted write: no printf.) */
static size_t tag_head(uint32_t tag, char *out)
{
    out[0] = '{';
    out[1] = 's';
    return 2 + pk_i64_format(out + 2, (int64_t)tag);
}

pk_salt_kind pk_salt_tag_kind(uint32_t tag)
{
    uint32_t k = tag >> PK_SALT_KIND_SHIFT;

    if (k < 3)
        return (pk_salt_kind)k;
    return (pk_salt_kind)(3 + ((tag >> PK_SALT_EXT_SHIFT) & 7u));
}

uint32_t pk_salt_tag_base(pk_salt_kind kind)
{
    if ((unsigned)kind < 3)
        return (uint32_t)kind << PK_SALT_KIND_SHIFT;
    return (3u << PK_SALT_KIND_SHIFT) |
           (((uint32_t)kind - 3u) << PK_SALT_EXT_SHIFT);
}

size_t pk_salt_subkey(const void *key, size_t len, uint32_t tag, uint8_t *out,
                      size_t cap)
{
    char head[PK_I64_CHARS + 2];
    size_t n = tag_head(tag, head);

    if (n + SUB_MID_LEN + len > cap)
        return 0;
    memcpy(out, head, n);
    memcpy(out + n, SUB_MID, SUB_MID_LEN);
    memcpy(out + n + SUB_MID_LEN, key, len);
    return (size_t)n + SUB_MID_LEN + len;
}

/* Writes key so that a name that goes on with rest (rlen bytes) lands in
 * key's own slot: key itself when it has a hash tag, else "{key}"; then
 * rest.  Returns the name's length, or 0 when it does not fit or key has
 * no such name (empty, or a '}' without a hash tag). */
static size_t own_slot(const void *key, size_t len, const void *rest,
                       size_t rlen, uint8_t *out, size_t cap)
{
    const void *tag;
    int tagged = pk_hash_tag(key, len, &tag) != len || tag != key;
    size_t at = 0, need = len + rlen + (tagged ? 0 : 2);

    if (len == 0 || need > cap || (!tagged && memchr(key, '}', len)))
        return 0;
    if (!tagged)
        out[at++] = '{';
    memcpy(out + at, key, len);
    at += len;
    if (!tagged)
        out[at++] = '}';
    memcpy(out + at, rest, rlen);
    return need;
}

size_t pk_salt_marker(const void *key, size_t len, unsigned i, uint8_t *out,
                      size_t cap)
{
    char rest[MARK_MID_LEN + PK_I64_CHARS];
    size_t n = pk_i64_format(rest + MARK_MID_LEN, (int64_t)i);

    memcpy(rest, MARK_MID, MARK_MID_LEN);
    return own_slot(key, len, rest, MARK_MID_LEN + n, out, cap);
}

size_t pk_salt_stamp(const void *key, size_t len, unsigned i, uint32_t tag,
                     uint8_t *out, size_t cap)
{
    char head[PK_I64_CHARS + 3];
    size_t n, need;

    if (i > 0) { /* the part's hash tag, then the mid and K */
        n = tag_head(tag, head);
        head[n++] = '}';
        need = n + STAMP_MID_LEN + len;
        if (need > cap)
            return 0;
        memcpy(out, head, n);
        memcpy(out + n, STAMP_MID, STAMP_MID_LEN);
        memcpy(out + n + STAMP_MID_LEN, key, len);
        return need;
    }
    return own_slot(key, len, STAMP_MID, STAMP_MID_LEN, out, cap);
}

int pk_salt_parse(const void *name, size_t len, const void **key, size_t *klen,
                  uint32_t *tag)
{
    const uint8_t *p = name;
    size_t i = 2;
    uint64_t t = 0;

    if (len < 3 || p[0] != '{' || p[1] != 's')
        return 0;
    for (; i < len && p[i] >= '0' && p[i] <= '9' && i < 12; i++)
        t = t * 10 + (uint64_t)(p[i] - '0');
    if (i == 2 || t > UINT32_MAX || (p[2] == '0' && i > 3) ||
        len - i < SUB_MID_LEN + 1 || memcmp(p + i, SUB_MID, SUB_MID_LEN) != 0)
        return 0;
    *key = p + i + SUB_MID_LEN;
    *klen = len - i - SUB_MID_LEN;
    *tag = (uint32_t)t;
    return 1;
}

int pk_salt_internal(const void *name, size_t len)
{
    const void *k;
    size_t kl;
    uint32_t t;

    /* Both names hold a NUL; ordinary keys seldom do, so look for that
     * first. */
    if (memchr(name, 0, len) == NULL)
        return 0;
    return pk_salt_parse(name, len, &k, &kl, &t) ||
           memmem(name, len, MARK_MID, MARK_MID_LEN) != NULL ||
           memmem(name, len, STAMP_MID, STAMP_MID_LEN) != NULL;
}

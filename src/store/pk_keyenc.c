/*
 * pk_keyenc: prefix escaping and score mapping; see pk_keyenc.h for the
 * layout.  The invariant every function keeps: memcmp order of encoded keys
 * equals the order of (part, user key, tag, sub-key).
 */
#include <assert.h>
#include <float.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_keyenc.h"

static_assert(sizeof(double) == sizeof(uint64_t) && FLT_RADIX == 2,
              "scores are IEEE-754 binary64");
static_assert(PK_KEYENC_PREFIX_MAX + 8 == PK_KEYENC_MAX,
              "expiry index keys fit in an LMDB key");

size_t pk_keyenc_prefix_len(const void *key, size_t klen)
{
    const uint8_t *k = key;
    size_t n = 4 + klen + 2;

    for (size_t i = 0; i < klen; i++) {
        n += k[i] == 0;
    }
    return n;
}

int pk_keyenc_prefix(uint32_t part, const void *key, size_t klen, uint8_t *buf,
                     size_t cap, size_t *len)
{
    const uint8_t *k = key;
    size_t n = pk_keyenc_prefix_len(key, klen), o = 4;

    if (n > PK_KEYENC_PREFIX_MAX || n > cap) {
        return PK_ERANGE;
    }
    pk_be32_put(buf, part);
    for (size_t i = 0; i < klen; i++) {
        buf[o++] = k[i];
        if (k[i] == 0) {
            buf[o++] = 0xFF;
        }
    }
    buf[o++] = 0x00;
    buf[o++] = 0x01;
    *len = o;
    return 0;
}

int pk_keyenc_sub(uint8_t *buf, size_t cap, size_t plen, uint8_t tag,
                  const void *sub, size_t sub_len, size_t *len)
{
    size_t n = plen + 1 + sub_len;

    if (n > PK_KEYENC_MAX || n > cap) {
        return PK_ERANGE;
    }
    buf[plen] = tag;
    if (sub_len > 0) {
        memcpy(buf + plen + 1, sub, sub_len);
    }
    *len = n;
    return 0;
}

int pk_keyenc_parse(const uint8_t *key, size_t klen, pk_keyparts *out)
{
    size_t i = 4;

    if (klen < 4 + 2 + 1) {
        return PK_ECORRUPT;
    }
    for (;;) {
        if (i + 1 >= klen) {
            return PK_ECORRUPT; /* no terminator */
        }
        if (key[i] != 0) {
            i++;
        } else if (key[i + 1] == 0xFF) {
            i += 2;
        } else if (key[i + 1] == 0x01) {
            break;
        } else {
            return PK_ECORRUPT;
        }
    }
    /* i is at the terminator; a tag must follow it. */
    if (i + 2 >= klen) {
        return PK_ECORRUPT;
    }
    if (key[i + 2] < PK_TAG_META || key[i + 2] > PK_TAG_LAST) {
        return PK_ECORRUPT;
    }
    out->part = pk_be32_get(key);
    out->esc = key + 4;
    out->esc_len = i - 4;
    out->prefix_len = i + 2;
    out->tag = key[i + 2];
    out->sub = key + i + 3;
    out->sub_len = klen - (i + 3);
    return 0;
}

size_t pk_keyenc_unescape(const uint8_t *esc, size_t esc_len, uint8_t *dst)
{
    size_t n = 0;

    for (size_t i = 0; i < esc_len; i++) {
        dst[n++] = esc[i];
        i += esc[i] == 0; /* skip the FF of an escaped NUL */
    }
    return n;
}

uint64_t pk_keyenc_score(double score)
{
    uint64_t u;

    if (score == 0) {
        score = 0; /* -0 and +0 are one score */
    }
    memcpy(&u, &score, sizeof(u));
    return (u >> 63) ? ~u : u | (1ull << 63);
}

double pk_keyenc_score_decode(uint64_t u)
{
    double d;

    u = (u >> 63) ? u & ~(1ull << 63) : ~u;
    memcpy(&d, &u, sizeof(d));
    return d;
}

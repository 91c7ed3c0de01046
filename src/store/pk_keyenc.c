/*
 * pk_keyenc: prefix escaping and score mapping; see pk_keyenc.h for the
 * layout.  The invariant every function keeps: memcmp order of encoded keys
 * equals the order of (part, user key, tag, sub-key) for short keys, and
 * no prefix is a prefix of another, long or short (proof in pk_keyenc.h).
 */
#include <assert.h>
#include <float.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "core/pk_err.h"
#include "store/pk_keyenc.h"

static_assert(sizeof(double) == sizeof(uint64_t) && FLT_RADIX == 2,
              "scores are IEEE-754 binary64");
static_assert(PK_KEYENC_SHORT + 8 <= PK_KEYENC_MAX,
              "expiry index keys (u64 when | prefix) fit in an LMDB key");
static_assert(PK_KEYENC_SHORT + 1 + 8 + PK_KEYENC_SUB <= PK_KEYENC_MAX,
              "a ZSCORE record (prefix | tag | score8 | member) fits");
static_assert(PK_KEYENC_SUBHEAD >= 8,
              "a long member's head fills a sub-key SCAN group");
static_assert(PK_KEYENC_MAX - 4 <= UINT16_MAX,
              "a data key without its part fits a change record's u16 klen");
static_assert(PK_KEYENC_HEAD >= 4 + 1,
              "a long key's head fills SCAN's four group bytes");
static_assert(PK_KEYENC_DIGEST <= SHA256_DIGEST_LENGTH, "digest is SHA-256");

/* 4 + escaped key + 2, the length of the short form. */
static size_t short_len(const uint8_t *k, size_t klen)
{
    size_t n = 4 + klen + 2;

    for (size_t i = 0; i < klen; i++) {
        n += k[i] == 0;
    }
    return n;
}

int pk_keyenc_long(const void *key, size_t klen)
{
    /* Without counting NULs when the key is long anyway, or short anyway. */
    if (klen + 6 > PK_KEYENC_SHORT) {
        return 1;
    }
    return 2 * klen + 6 > PK_KEYENC_SHORT &&
           short_len(key, klen) > PK_KEYENC_SHORT;
}

size_t pk_keyenc_escape(const void *key, size_t klen, uint8_t *out, size_t cap)
{
    const uint8_t *k = key;
    size_t o = 0;

    if (klen <= cap && (klen == 0 || memchr(k, 0, klen) == NULL)) {
        if (klen > 0) {
            memcpy(out, k, klen); /* nothing to escape: most keys */
        }
        return klen;
    }
    for (size_t i = 0; i < klen && o + 1 + (k[i] == 0) <= cap; i++) {
        out[o++] = k[i];
        if (k[i] == 0) {
            out[o++] = 0xFF;
        }
    }
    return o;
}

size_t pk_keyenc_prefix_len(const void *key, size_t klen)
{
    const uint8_t *k = key;
    size_t n = 0;

    if (!pk_keyenc_long(key, klen)) {
        return short_len(key, klen);
    }
    for (size_t i = 0; i < klen && n + 1 + (k[i] == 0) <= PK_KEYENC_HEAD; i++) {
        n += 1 + (k[i] == 0);
    }
    return 4 + n + 2 + PK_KEYENC_DIGEST;
}

int pk_keyenc_digest(const void *key, size_t klen, uint8_t *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (EVP_Digest(key, klen, md, &n, EVP_sha256(), NULL) != 1 ||
        n != SHA256_DIGEST_LENGTH) {
        return PK_ENOMEM;
    }
    memcpy(out, md, PK_KEYENC_DIGEST);
    return 0;
}

int pk_keyenc_prefix(uint32_t part, const void *key, size_t klen, uint8_t *buf,
                     size_t cap, size_t *len)
{
    int longkey = pk_keyenc_long(key, klen);
    uint8_t tmp[PK_KEYENC_SHORT];
    size_t o = 4;
    int rc;

    /* Built in tmp so that buf is left when cap is too small. */
    pk_be32_put(tmp, part);
    o += pk_keyenc_escape(key, klen, tmp + 4,
                          longkey ? PK_KEYENC_HEAD : PK_KEYENC_SHORT - 6);
    tmp[o++] = 0x00;
    tmp[o++] = longkey ? 0x02 : 0x01;
    if (longkey) {
        if ((rc = pk_keyenc_digest(key, klen, tmp + o)) != 0) {
            return rc;
        }
        o += PK_KEYENC_DIGEST;
    }
    if (o > cap) {
        return PK_ERANGE;
    }
    memcpy(buf, tmp, o);
    *len = o;
    return 0;
}

int pk_keyenc_member(const void *mem, size_t mlen, uint8_t *out)
{
    if (mlen < PK_KEYENC_SUB) {
        if (mlen > 0) {
            memcpy(out, mem, mlen);
        }
        return (int)mlen;
    }
    memcpy(out, mem, PK_KEYENC_SUBHEAD);
    if (pk_keyenc_digest(mem, mlen, out + PK_KEYENC_SUBHEAD) != 0) {
        return PK_ENOMEM;
    }
    return PK_KEYENC_SUB;
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
    size_t i = 4, plen;

    if (klen < 4 + 2 + 1) {
        return PK_ECORRUPT;
    }
    if (key[4] == 0 && key[5] == 0x03) { /* the system area */
        if (key[6] != PK_TAG_FTIDX && key[6] != PK_TAG_FTOUT) {
            return PK_ECORRUPT;
        }
        *out = (pk_keyparts){.part = pk_be32_get(key),
                             .prefix_len = PK_KEYENC_SYS_LEN,
                             .esc = key + 4,
                             .sys = 1,
                             .tag = key[6],
                             .sub = key + 7,
                             .sub_len = klen - 7};
        return 0;
    }
    for (;;) {
        if (i + 1 >= klen) {
            return PK_ECORRUPT; /* no terminator */
        }
        if (key[i] != 0) {
            i++;
        } else if (key[i + 1] == 0xFF) {
            i += 2;
        } else if (key[i + 1] == 0x01 || key[i + 1] == 0x02) {
            break;
        } else {
            return PK_ECORRUPT;
        }
    }
    /* i is at the terminator; a long form's digest and a tag follow. */
    plen = i + 2 + (key[i + 1] == 0x02 ? PK_KEYENC_DIGEST : 0);
    if (plen > PK_KEYENC_SHORT || plen >= klen) {
        return PK_ECORRUPT;
    }
    if (key[plen] < PK_TAG_META || key[plen] > PK_TAG_LAST) {
        return PK_ECORRUPT;
    }
    out->part = pk_be32_get(key);
    out->esc = key + 4;
    out->esc_len = i - 4;
    out->sys = 0;
    out->longkey = key[i + 1] == 0x02;
    out->digest = out->longkey ? key + i + 2 : NULL;
    out->prefix_len = plen;
    out->tag = key[plen];
    out->sub = key + plen + 1;
    out->sub_len = klen - (plen + 1);
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

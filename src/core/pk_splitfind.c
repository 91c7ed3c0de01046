/*
 * pk_splitfind: the load split finder.  See pk_splitfind.h.
 */
#include "core/pk_splitfind.h"

#include <string.h>

#include "core/pk_range.h" /* pk_key_cmp */

#define MIN_MS_DEFAULT 5000u

/* splitmix64: the reservoir's draws. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void pk_splitfind_init(pk_splitfind *f, uint64_t now_ms, uint64_t min_ms,
                       uint64_t min_count, uint64_t seed)
{
    f->start_ms = now_ms;
    f->min_ms = min_ms ? min_ms : MIN_MS_DEFAULT;
    f->min_count = min_count ? min_count : PK_SPLITFIND_MIN_COUNT;
    f->count = 0;
    f->rng = seed;
    f->n = 0;
}

static void sample_set(pk_splitfind_sample *s, const void *key, size_t len,
                       int span)
{
    s->span = (uint8_t)span;
    s->len =
        (uint16_t)(len < PK_SPLITFIND_KEY_MAX ? len : PK_SPLITFIND_KEY_MAX);
    if (s->len > 0) {
        memcpy(s->key, key, s->len);
    }
    s->left = s->right = s->contained = 0;
}

void pk_splitfind_record(pk_splitfind *f, const void *key, size_t len,
                         const void *end, size_t end_len)
{
    uint32_t fresh = PK_SPLITFIND_SAMPLES; /* the slot just (re)filled */

    f->count++;
    if (f->n < PK_SPLITFIND_SAMPLES) {
        fresh = f->n++;
    } else {
        uint64_t j = next_rand(&f->rng) % f->count;

        if (j < PK_SPLITFIND_SAMPLES) {
            fresh = (uint32_t)j;
        }
    }
    if (fresh < PK_SPLITFIND_SAMPLES) {
        sample_set(&f->s[fresh], key, len, end != NULL);
    }
    for (uint32_t i = 0; i < f->n; i++) {
        pk_splitfind_sample *s = &f->s[i];

        if (i == fresh) {
            continue;
        }
        if (pk_key_cmp(s->key, s->len, key, len) <= 0) {
            s->right++; /* starts at or after s: the right half's */
        } else if (end != NULL &&
                   (end_len == 0 ||
                    pk_key_cmp(s->key, s->len, end, end_len) < 0)) {
            s->contained++; /* starts before s and ends after it */
        } else {
            s->left++;
        }
    }
}

/* Why no candidate passes: the shape of the load over the samples;
 * cut is how many balanced candidates cut too many spans. */
static pk_splitfind_verdict why_not(const pk_splitfind *f, uint32_t cut,
                                    uint32_t *hot)
{
    uint64_t left = 0, right = 0, contained = 0;
    uint32_t best = 0, best_n = 0, spans = 0;

    for (uint32_t i = 0; i < f->n; i++) {
        uint32_t same = 0;

        spans += f->s[i].span;
        for (uint32_t j = 0; j < f->n; j++) {
            same += pk_key_cmp(f->s[i].key, f->s[i].len, f->s[j].key,
                               f->s[j].len) == 0;
        }
        if (same > best_n) {
            best = i;
            best_n = same;
        }
        left += f->s[i].left;
        right += f->s[i].right;
        contained += f->s[i].contained;
    }
    *hot = best;
    if (cut > 0 || 2 * spans > f->n || contained > left + right) {
        return PK_SPLITFIND_SPANNING; /* mostly scans */
    }
    if (2 * best_n > f->n) {
        return PK_SPLITFIND_HOT_KEY;
    }
    /* Imbalanced everywhere: monotonic when one side takes nearly all. */
    if (right > 4 * left) {
        return PK_SPLITFIND_INCREASING;
    }
    if (left > 4 * right) {
        return PK_SPLITFIND_DECREASING;
    }
    return PK_SPLITFIND_IMBALANCED;
}

void pk_splitfind_key(const pk_splitfind *f, uint64_t now_ms,
                      pk_splitfind_result *out)
{
    uint32_t best = PK_SPLITFIND_SAMPLES, ready = 0, cut = 0, hot;
    double best_bal = 1.0, best_cont = 1.0;

    memset(out, 0, sizeof(*out));
    out->balance = out->contained = 1.0;
    for (uint32_t i = 0; i < f->n; i++) {
        const pk_splitfind_sample *s = &f->s[i];
        uint64_t sides = s->left + s->right, all = sides + s->contained;
        double bal, cont;

        if (all < f->min_count) {
            continue;
        }
        ready++;
        bal = sides ? (double)(s->left > s->right ? s->left - s->right
                                                  : s->right - s->left) /
                          (double)sides
                    : 1.0;
        cont = (double)s->contained / (double)all;
        if (bal < PK_SPLITFIND_BALANCE_MAX &&
            cont >= PK_SPLITFIND_CONTAINED_MAX) {
            cut++;
        }
        if (bal >= PK_SPLITFIND_BALANCE_MAX ||
            cont >= PK_SPLITFIND_CONTAINED_MAX || s->len == 0) {
            continue; /* "" starts the range: no split there */
        }
        if (bal < best_bal || (bal == best_bal && cont < best_cont)) {
            best = i;
            best_bal = bal;
            best_cont = cont;
        }
    }
    if (now_ms < f->start_ms + f->min_ms || ready == 0) {
        out->verdict = PK_SPLITFIND_WAIT;
        return;
    }
    if (best < PK_SPLITFIND_SAMPLES) {
        out->verdict = PK_SPLITFIND_FOUND;
        out->key = f->s[best].key;
        out->len = f->s[best].len;
        out->balance = best_bal;
        out->contained = best_cont;
        return;
    }
    out->verdict = why_not(f, cut, &hot);
    if (out->verdict == PK_SPLITFIND_HOT_KEY) {
        out->key = f->s[hot].key;
        out->len = f->s[hot].len;
    }
}

const char *pk_splitfind_reason(pk_splitfind_verdict v)
{
    switch (v) {
    case PK_SPLITFIND_FOUND:
        return "found";
    case PK_SPLITFIND_WAIT:
        return "wait";
    case PK_SPLITFIND_HOT_KEY:
        return "hot key";
    case PK_SPLITFIND_INCREASING:
        return "increasing";
    case PK_SPLITFIND_DECREASING:
        return "decreasing";
    case PK_SPLITFIND_SPANNING:
        return "spanning";
    case PK_SPLITFIND_IMBALANCED:
        return "imbalanced";
    }
    return "unknown";
}

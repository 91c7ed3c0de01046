/*
 * libFuzzer target for the HyperLogLog value codec and estimator
 * (core/pk_hll.h): what PFADD, PFCOUNT and PFMERGE run on a string that
 * a client may have written with SET.
 *
 *   input:  | mode | candidate value ... |
 *
 * Mode bit 0 replaces the value's first 5 bytes by a valid header
 * ("HYLL" and the encoding in mode bit 1: dense or sparse), so that the
 * mutations reach the register codec rather than dying on the magic.
 * The value is copied to a heap buffer of its exact size, so that ASan
 * sees any read past its end.  A value that pk_hll_decode accepts must
 * then give a count, survive a merge and adds, and re-encode (sparse
 * when allowed) to a value that decodes to the same registers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_hll.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Registers of the input, of their merge, and of the re-encoded value;
 * the encoded value itself.  Static: 64 KiB is too much for a frame. */
static uint8_t reg[PK_HLL_REGS], acc[PK_HLL_REGS], back[PK_HLL_REGS];
static uint8_t enc[PK_HLL_DENSE_LEN];

/* Encodes r (sparse when sparse_ok), checks the value, decodes it again
 * and demands the same registers (above 63 they cannot be stored). */
static void roundtrip(const uint8_t *r, int sparse_ok)
{
    size_t n = pk_hll_encode(r, sparse_ok, 12345, 1, enc);
    uint64_t card = 0;

    CHECK(n >= PK_HLL_HDR && n <= PK_HLL_DENSE_LEN);
    CHECK(n == PK_HLL_DENSE_LEN || sparse_ok);
    CHECK(pk_hll_check(enc, n) == 0);
    CHECK(pk_hll_cached(enc, &card) == 1 && card == 12345);
    CHECK(pk_hll_decode(enc, n, back) == 0);
    CHECK(memcmp(r, back, PK_HLL_REGS) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t card = 0, before, after;
    uint8_t *v;
    size_t len;
    int rc, grew = 0;

    if (size == 0) {
        return 0;
    }
    len = size - 1;
    v = malloc(len ? len : 1);
    if (v == NULL) {
        return 0;
    }
    memcpy(v, data + 1, len);
    if ((data[0] & 1) && len >= 5) {
        memcpy(v, "HYLL", 4);
        v[4] = (data[0] >> 1) & 1;
    }
    rc = pk_hll_check(v, len);
    if (rc == 0) {
        (void)pk_hll_cached(v, &card);
    }
    rc = pk_hll_decode(v, len, reg);
    CHECK(rc == 0 || rc == PK_EINVAL || rc == PK_ECORRUPT);
    CHECK(rc != 0 || pk_hll_check(v, len) == 0);
    if (rc != 0) {
        free(v);
        return 0;
    }
    for (uint32_t i = 0; i < PK_HLL_REGS; i++) {
        CHECK(reg[i] <= 63);
    }
    before = pk_hll_count(reg);
    roundtrip(reg, 1);
    roundtrip(reg, 0);

    /* PFMERGE of the value with itself changes nothing; with registers
     * of its own adds it can only grow. */
    memcpy(acc, reg, PK_HLL_REGS);
    pk_hll_merge(acc, reg);
    CHECK(memcmp(acc, reg, PK_HLL_REGS) == 0);
    CHECK(pk_hll_count(acc) == before);

    /* PFADD of the value's bytes, sliced: a register only grows. */
    for (size_t off = 0; off < len && off < 256; off += 16) {
        size_t n = len - off < 16 ? len - off : 16;
        grew |= pk_hll_add(acc, v + off, n);
    }
    for (uint32_t i = 0; i < PK_HLL_REGS; i++) {
        CHECK(acc[i] >= reg[i]);
    }
    CHECK(grew == (memcmp(acc, reg, PK_HLL_REGS) != 0));
    after = pk_hll_count(acc);
    (void)after;
    roundtrip(acc, 1);
    pk_hll_merge(reg, acc);
    CHECK(memcmp(acc, reg, PK_HLL_REGS) == 0);
    free(v);
    return 0;
}

/*
 * libFuzzer target for pk_ckv_decode, the embedded coordinator's state
 * file format.
 *
 *   input:  | mode | candidate encoding ... |
 *
 * As in fuzz_pmap_decode: an odd mode byte rewrites the last 4 bytes to
 * the right CRC32C (big-endian) so the parser proper sees mutated bytes.
 * Whatever decodes must re-encode to exactly the decoded bytes (the format
 * is canonical; lease deadlines are not part of it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord/pk_ckv.h"
#include "core/pk_err.h"

/* Internal to the core library (pk_pmap_codec.c). */
uint32_t pk__crc32c(const void *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf, *again = NULL;
    size_t len, again_len = 0;
    pk_ckv *s = NULL;

    if (size == 0)
        return 0;
    len = size - 1;
    buf = malloc(len ? len : 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data + 1, len);
    if ((data[0] & 1) && len >= 4) {
        uint32_t crc = pk__crc32c(buf, len - 4);

        buf[len - 4] = (uint8_t)(crc >> 24);
        buf[len - 3] = (uint8_t)(crc >> 16);
        buf[len - 2] = (uint8_t)(crc >> 8);
        buf[len - 1] = (uint8_t)crc;
    }
    if (pk_ckv_decode(buf, len, NULL, 1000, &s) == PK_OK) {
        if (pk_ckv_encode(s, &again, &again_len) != PK_OK || again_len != len ||
            memcmp(again, buf, len) != 0)
            abort();
        free(again);
        pk_ckv_free(s);
    }
    free(buf);
    return 0;
}

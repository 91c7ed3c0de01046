/*
 * libFuzzer target for pk_pmap_decode.
 *
 *   input:  | mode | candidate encoding ... |
 *
 * A random mutation almost never keeps the trailing CRC32C right, so with
 * raw input only the checksum check would ever run.  The low bit of the
 * first byte therefore picks a mode: 0 decodes the rest as it is, 1 first
 * rewrites its last 4 bytes to the correct checksum, so that the parser
 * proper sees the mutated bytes.  Whatever decodes must be a valid map
 * that re-encodes to exactly the decoded bytes (the format is canonical).
 *
 * Seeds in fuzz/seeds/fuzz_pmap_decode/ are valid encodings behind a mode
 * byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"

/* Internal to the core library (pk_pmap_codec.c). */
uint32_t pk__crc32c(const void *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf, *again = NULL;
    size_t len, again_len = 0;
    pk_pmap *m = NULL;
    int rc;

    if (size == 0)
        return 0;
    len = size - 1;
    /* A copy of exactly len bytes, so ASan sees any read past the end. */
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
    rc = pk_pmap_decode(buf, len, &m);
    if (rc == PK_OK) {
        if (pk_pmap_validate(m) != PK_OK)
            abort();
        if (pk_pmap_encode(m, &again, &again_len) != PK_OK)
            abort();
        if (again_len != len || memcmp(again, buf, len) != 0)
            abort();
        free(again);
        pk_pmap_free(m);
    } else if (m != NULL || (rc != PK_ECORRUPT && rc != PK_EVERSION &&
                             rc != PK_ECHECKSUM && rc != PK_ENOMEM)) {
        abort(); /* out touched on failure, or an undocumented code */
    }
    free(buf);
    return 0;
}

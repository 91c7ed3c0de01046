/*
 * libFuzzer target for the bytes global indexes ship and keep
 * (store/pk_ftglob.c): a PK.FTGAPPLY body -- (u32 source | operation)* --
 * an outbox record, and a document's copy, each read from untrusted
 * bytes.  Reading must never go past the input, and:
 *   - an operation that parses names a global index, a TERM or NUM entry
 *     (a NUM's term 8 bytes), and lengths within the input;
 *   - every operation a record expands to parses back to itself, whole,
 *     with the partition the record's entry hashes to below nparts;
 *   - a copy that parses gives a key inside the input.
 *
 * Built by `make fuzz` (the layers core, proto, store and coord linked in).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "fuzz_util.h"
#include "store/pk_ftidx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NPARTS 64

static void check_op(const pk_ftglob_op *op, const uint8_t *p, size_t n,
                     size_t used)
{
    CHECK(used <= n && (op->id & PK_FTIDX_GLOBAL));
    CHECK(op->kind == 1 || (op->kind == 2 && op->len == 8)); /* TERM, NUM */
    CHECK(op->mid >= p && op->mid + op->len <= p + n);
    CHECK(op->doc >= p && op->doc + op->dlen <= p + n);
    CHECK(op->copy >= p && op->copy + op->clen <= p + n);
}

static int expanded(void *ctx, uint32_t vp, uint64_t id, const uint8_t *op,
                    size_t len)
{
    pk_ftglob_op o;

    (void)ctx;
    CHECK(vp < NPARTS && pk_ftglob_op_parse(op, len, &o) == len);
    CHECK(o.vp == vp && o.id == id);
    check_op(&o, op, len, len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1); /* exact size: ASan sees past */
    pk_ftglob_op op;
    pk_slice key;
    uint64_t expiry;
    size_t used;

    if (p == NULL)
        return 0;
    memcpy(p, data, size);
    /* As PK.FTGAPPLY reads its body. */
    for (size_t at = 0; at + 4 <= size; at += 4 + used) {
        used = pk_ftglob_op_parse(p + at + 4, size - at - 4, &op);
        if (used == 0)
            break;
        check_op(&op, p + at + 4, size - at - 4, used);
    }
    /* As the feeder reads an outbox record. */
    pk_ftout_ops((pk_slice){p, size}, NPARTS, expanded, NULL);
    /* As a query reads a copy. */
    if (pk_ftglob_copy_each((pk_slice){p, size}, &key, &expiry, NULL, NULL) ==
        0)
        CHECK((const uint8_t *)key.ptr >= p &&
              (const uint8_t *)key.ptr + key.len <= p + size);
    free(p);
    return 0;
}

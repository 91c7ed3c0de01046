/*
 * pk_bits: bit commands.  The pure functions work on borrowed bytes; the
 * store operations load the string (pk__str_load), build the new value in
 * the transaction's scratch memory (pk__str_grow) and write it with one
 * META put, so each command is one operation whose errors are all found
 * before that put.  BITOP, whose keys may lie in several partitions of a
 * single node, reads its sources first and then writes with one SET.
 *
 * Range arithmetic follows Redis 7.0's bitops.c: negative indexes count
 * from the end, ranges are clamped to the string, and a bit range turns
 * into a byte range plus masks of the bits outside it in its first and
 * last byte.
 */
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "store/pk_bits.h"
#include "store/pk_key.h"
#include "store/pk_store_int.h"
#include "store/pk_str.h"

__extension__ typedef __int128 i128;

int pk_bits_get(const uint8_t *p, size_t len, uint64_t offset)
{
    uint64_t byte = offset >> 3;

    return byte < len ? (p[byte] >> (7 - (offset & 7))) & 1 : 0;
}

static void bit_put(uint8_t *p, uint64_t offset, int bit)
{
    uint8_t m = (uint8_t)(1u << (7 - (offset & 7)));

    p[offset >> 3] =
        bit ? (uint8_t)(p[offset >> 3] | m) : (uint8_t)(p[offset >> 3] & ~m);
}

/* The bits-wide big-endian field at offset (bits past len read 0). */
static uint64_t field_get(const uint8_t *p, size_t len, uint64_t offset,
                          unsigned bits)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bits; i++) {
        v = (v << 1) | (uint64_t)pk_bits_get(p, len, offset + i);
    }
    return v;
}

static void field_put(uint8_t *p, uint64_t offset, unsigned bits, uint64_t v)
{
    for (unsigned i = 0; i < bits; i++) {
        bit_put(p, offset + i, (int)((v >> (bits - 1 - i)) & 1));
    }
}

/*
 * Clamps a byte or bit range to a string of len bytes as Redis does.
 * Returns 0 for an empty range; else sets the byte range *b0..*b1 and the
 * bit range *bit0..*bit1 it covers.
 */
static int clamp_range(size_t len, int64_t start, int64_t end, int isbit,
                       int64_t *b0, int64_t *b1, int64_t *bit0, int64_t *bit1)
{
    int64_t tot = (int64_t)len * (isbit ? 8 : 1);

    if (start < 0) {
        start = start < -tot ? 0 : tot + start;
    }
    if (end < 0) {
        end = end < -tot ? 0 : tot + end;
    }
    if (end >= tot) {
        end = tot - 1;
    }
    if (start > end) {
        return 0;
    }
    *bit0 = isbit ? start : start * 8;
    *bit1 = isbit ? end : end * 8 + 7;
    *b0 = *bit0 >> 3;
    *b1 = *bit1 >> 3;
    return 1;
}

static int popcount8(uint8_t b)
{
    return __builtin_popcount(b);
}

int64_t pk_bits_count(const uint8_t *p, size_t len, int64_t start, int64_t end,
                      int isbit)
{
    int64_t b0, b1, bit0, bit1, n = 0;
    size_t i;

    if ((start < 0 && end < 0 && start > end) ||
        !clamp_range(len, start, end, isbit, &b0, &b1, &bit0, &bit1)) {
        return 0;
    }
    for (i = (size_t)b0; i + 8 <= (size_t)b1 + 1; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        n += __builtin_popcountll(w);
    }
    for (; i <= (size_t)b1; i++) {
        n += popcount8(p[i]);
    }
    /* Bits of the first and last byte outside a bit range. */
    n -= popcount8((uint8_t)(p[b0] & ~(0xffu >> (bit0 & 7))));
    n -= popcount8((uint8_t)(p[b1] & (0xffu >> ((bit1 & 7) + 1))));
    return n;
}

int64_t pk_bits_pos(const uint8_t *p, size_t len, int bit, int64_t start,
                    int64_t end, int end_given, int isbit)
{
    uint8_t skip = bit ? 0x00 : 0xff;
    int64_t b0, b1, bit0, bit1, i;

    if (!clamp_range(len, start, end, isbit, &b0, &b1, &bit0, &bit1)) {
        return -1;
    }
    for (i = bit0; i <= bit1;) {
        if ((i & 7) == 0 && i + 7 <= bit1 && p[i >> 3] == skip) {
            i += 8;
            continue;
        }
        if (pk_bits_get(p, len, (uint64_t)i) == bit) {
            return i;
        }
        i++;
    }
    /* Without an end, the string goes on with zeros. */
    return bit == 0 && !end_given ? bit1 + 1 : -1;
}

int pk_bits_setbit(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t offset, int bit, uint64_t now_ms, int *old)
{
    size_t need = (size_t)(offset >> 3) + 1;
    uint8_t *p;
    pk__meta m;
    int rc, was;

    if (offset >= PK_BITS_OFFSET_MAX || (bit != 0 && bit != 1)) {
        return PK_EINVAL;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    if ((rc = pk__str_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    was = pk_bits_get(m.val, m.vlen, offset);
    *old = was;
    if (m.exists && need <= m.vlen && was == bit) {
        goto out; /* nothing changes */
    }
    if ((rc = pk__str_grow(t, &m, need > m.vlen ? need : m.vlen, &p)) != 0) {
        goto out;
    }
    bit_put(p, offset, bit);
    m.type = PK__T_STRING;
    rc = pk__meta_put(t, &m, p, need > m.vlen ? need : m.vlen, NULL, 0);
out:
    return pk__op_end(t, rc);
}

/*
 * The result of adding incr to value in a field of bits bits, under
 * overflow rule ow.  Returns 0, or 1 on an overflow either way (*out then
 * holds the wrapped or saturated value; FAIL leaves it unset).  SET
 * checks the value to store with incr 0; an unsigned SET of a negative
 * value overflows as the huge unsigned number it is, as in Redis.
 */
static int field_add(uint64_t value, int64_t incr, unsigned bits, int sign,
                     int ow, uint64_t *out)
{
    i128 max, min, r;

    if (sign) {
        max = ((i128)1 << (bits - 1)) - 1;
        min = -max - 1;
        r = (i128)(int64_t)value + incr;
    } else {
        max = ((i128)1 << bits) - 1;
        min = 0;
        r = (i128)value + incr;
    }
    if (r >= min && r <= max) {
        *out = (uint64_t)r;
        return 0;
    }
    if (ow == PK_BF_SAT) {
        *out = (uint64_t)(r > max ? max : min);
    } else if (ow == PK_BF_WRAP) {
        uint64_t w = value + (uint64_t)incr;
        uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        w &= mask;
        if (sign && bits < 64 && (w >> (bits - 1)) & 1) {
            w |= ~mask; /* sign-extend */
        }
        *out = w;
    }
    return 1;
}

/* A field read back as the integer it holds. */
static int64_t field_value(uint64_t raw, unsigned bits, int sign)
{
    if (sign && bits < 64 && (raw >> (bits - 1)) & 1) {
        raw |= UINT64_MAX << bits;
    }
    return (int64_t)raw;
}

/* Runs op on p (len bytes, long enough for a write) into *res; returns
 * whether it changed the string. */
static int bitfield_run(uint8_t *p, size_t len, const pk_bitfield_op *op,
                        pk_bitfield_res *res)
{
    uint64_t raw = field_get(p, len, op->offset, op->bits), nv;
    int64_t old = field_value(raw, op->bits, op->sign);
    int over;

    res->nil = 0;
    if (op->opcode == PK_BF_GET) {
        res->v = old;
        return 0;
    }
    if (op->opcode == PK_BF_INCRBY) {
        over =
            field_add((uint64_t)old, op->arg, op->bits, op->sign, op->ow, &nv);
    } else {
        over = field_add((uint64_t)op->arg, 0, op->bits, op->sign, op->ow, &nv);
    }
    if (over && op->ow == PK_BF_FAIL) {
        res->nil = 1;
        return 0;
    }
    res->v = op->opcode == PK_BF_INCRBY ? (int64_t)nv : old;
    field_put(p, op->offset, op->bits, nv);
    return field_get(p, len, op->offset, op->bits) != raw;
}

static int bitfield_valid(const pk_bitfield_op *op)
{
    return op->opcode <= PK_BF_INCRBY && op->ow <= PK_BF_FAIL &&
           op->bits >= 1 && op->bits <= (op->sign ? 64 : 63) &&
           op->offset < PK_BITS_OFFSET_MAX;
}

int pk_bits_bitfield(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     const pk_bitfield_op *ops, size_t n, uint64_t now_ms,
                     pk_bitfield_res *res)
{
    uint64_t top = 0; /* bytes the writes need */
    size_t len;
    uint8_t *p;
    pk__meta m;
    int rc, changed = 0;

    for (size_t i = 0; i < n; i++) {
        uint64_t end = ops[i].offset + ops[i].bits;
        if (!bitfield_valid(&ops[i])) {
            return PK_EINVAL;
        }
        if (ops[i].opcode != PK_BF_GET && (end + 7) / 8 > top) {
            top = (end + 7) / 8;
        }
    }
    if (top == 0) {
        pk_slice v = {NULL, 0};
        rc = pk_str_get(t, part, key, klen, now_ms, &v);
        if (rc != 0 && rc != PK_ENOTFOUND) {
            return rc;
        }
        for (size_t i = 0; i < n; i++) {
            bitfield_run((uint8_t *)v.ptr, v.len, &ops[i], &res[i]);
        }
        return 0;
    }
    if (top > PK_STORE_VALUE_MAX) {
        return PK_STORE_TOOBIG;
    }
    if ((rc = pk__op_begin(t, part, 0)) != 0) {
        return rc;
    }
    if ((rc = pk__str_load(t, part, key, klen, now_ms, &m)) != 0) {
        goto out;
    }
    len = top > m.vlen ? (size_t)top : m.vlen;
    changed = !m.exists || len > m.vlen;
    if ((rc = pk__str_grow(t, &m, len, &p)) != 0) {
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        changed |= bitfield_run(p, len, &ops[i], &res[i]);
    }
    if (changed) {
        m.type = PK__T_STRING;
        rc = pk__meta_put(t, &m, p, len, NULL, 0);
    }
out:
    return pk__op_end(t, rc);
}

static uint8_t bitop_byte(int op, uint8_t acc, uint8_t b)
{
    switch (op) {
    case PK_BITOP_AND:
        return acc & b;
    case PK_BITOP_OR:
        return acc | b;
    default:
        return acc ^ b;
    }
}

/*
 * Reads every source (pass 0: types and *maxlen) or folds them into res
 * (pass 1).  Reading a partition brings it up to date, which may write;
 * after pass 0 every source partition is current, so pass 1's reads write
 * nothing and each source's bytes stay valid while they are folded.
 */
static int bitop_pass(pk_txn *t, const pk_bitop_src *src, size_t nsrc, int op,
                      uint64_t now, size_t *maxlen, uint8_t *res)
{
    for (size_t i = 0; i < nsrc; i++) {
        pk_slice v = {NULL, 0};
        int rc =
            pk_str_get(t, src[i].part, src[i].key.ptr, src[i].key.len, now, &v);
        if (rc != 0 && rc != PK_ENOTFOUND) {
            return rc;
        }
        if (rc == PK_ENOTFOUND) {
            v.len = 0;
        }
        if (res == NULL) {
            *maxlen = v.len > *maxlen ? v.len : *maxlen;
            continue;
        }
        for (size_t j = 0; j < *maxlen; j++) {
            uint8_t b = j < v.len ? ((const uint8_t *)v.ptr)[j] : 0;
            res[j] = i == 0 ? b : bitop_byte(op, res[j], b);
        }
    }
    return 0;
}

int pk_bits_bitop(pk_txn *t, int op, uint32_t dpart, const void *dest,
                  size_t dlen, const pk_bitop_src *src, size_t nsrc,
                  uint64_t now_ms, uint64_t *len)
{
    size_t maxlen = 0;
    uint8_t *res = NULL;
    int rc, done;

    if (op < PK_BITOP_AND || op > PK_BITOP_NOT || nsrc == 0 ||
        (op == PK_BITOP_NOT && nsrc != 1)) {
        return PK_EINVAL;
    }
    if ((rc = bitop_pass(t, src, nsrc, op, now_ms, &maxlen, NULL)) != 0) {
        return rc;
    }
    if (maxlen > 0 && (res = malloc(maxlen)) == NULL) {
        return PK_ENOMEM;
    }
    if (maxlen > 0 &&
        (rc = bitop_pass(t, src, nsrc, op, now_ms, &maxlen, res)) != 0) {
        goto out;
    }
    for (size_t j = 0; op == PK_BITOP_NOT && j < maxlen; j++) {
        res[j] = (uint8_t)~res[j];
    }
    /* One write: SET of the result (dropping dest's type and expiry) or,
     * for an empty one, DEL. */
    rc = maxlen > 0 ? pk_str_set(t, dpart, dest, dlen, res, maxlen, NULL,
                                 now_ms, &done, NULL)
                    : pk_key_del(t, dpart, dest, dlen, now_ms, &done);
    if (rc == 0) {
        *len = maxlen;
    }
out:
    free(res);
    return rc;
}

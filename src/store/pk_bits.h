/*
 * pk_bits: Redis's bit commands over strings -- SETBIT, BITFIELD, BITOP
 * (store operations) and the pure bit arithmetic behind GETBIT, BITCOUNT,
 * BITPOS and BITFIELD's GET, which the command layer runs on the bytes
 * pk_str_get returns.
 *
 * Bits are numbered as Redis does: bit 0 is the most significant bit of
 * byte 0, and a bitfield of n bits at offset o is the big-endian integer
 * of bits o .. o + n - 1.  Bytes past a string's end read as zero.  Bit
 * offsets are below PK_STORE_VALUE_MAX * 8 (2^32), so that a write never
 * grows a string beyond PK_STORE_VALUE_MAX; callers check them.
 *
 * Store operations follow pk_str.h: PK_STORE_WRONGTYPE for a key of
 * another type (nothing written), PK_ERANGE for a key too long to store,
 * or a sticky error.
 */
#ifndef PK_STORE_PK_BITS_H
#define PK_STORE_PK_BITS_H

#include <stddef.h>
#include <stdint.h>

#include "store/pk_slice.h"

typedef struct pk_txn pk_txn;

/* Bit offsets are below this: PK_STORE_VALUE_MAX * 8, as Redis checks
 * offset >> 3 < proto-max-bulk-len. */
#define PK_BITS_OFFSET_MAX (512ull << 23)

/* Bit number `offset` of p[0..len) (0 past the end). */
int pk_bits_get(const uint8_t *p, size_t len, uint64_t offset);

/*
 * BITCOUNT's answer for p[0..len) with a range: start and end are byte
 * (isbit 0) or bit indexes, negative from the end, clamped as Redis does.
 */
int64_t pk_bits_count(const uint8_t *p, size_t len, int64_t start, int64_t end,
                      int isbit);

/*
 * BITPOS: the first bit equal to bit in p[0..len) within start..end (byte
 * or bit indexes as for pk_bits_count), or -1.  Without end_given, the
 * string counts as followed by zeros when bit is 0 (answering len * 8 if
 * all its bits are 1).
 */
int64_t pk_bits_pos(const uint8_t *p, size_t len, int bit, int64_t start,
                    int64_t end, int end_given, int isbit);

/*
 * SETBIT: sets bit number offset (< PK_BITS_OFFSET_MAX) to bit (0 or 1),
 * zero-padding or creating the string, keeping the expiry; *old = the
 * bit's previous value.  Returns 0, PK_EINVAL (offset or bit out of
 * range), PK_STORE_WRONGTYPE, PK_ERANGE or a sticky error.
 */
int pk_bits_setbit(pk_txn *t, uint32_t part, const void *key, size_t klen,
                   uint64_t offset, int bit, uint64_t now_ms, int *old);

enum pk_bitfield_opcode { PK_BF_GET = 0, PK_BF_SET = 1, PK_BF_INCRBY = 2 };
enum pk_bitfield_overflow { PK_BF_WRAP = 0, PK_BF_SAT = 1, PK_BF_FAIL = 2 };

/* One BITFIELD subcommand, as parsed. */
typedef struct pk_bitfield_op {
    uint64_t offset; /* first bit; offset + bits <= PK_BITS_OFFSET_MAX */
    int64_t arg;     /* SET's value or INCRBY's increment */
    uint8_t opcode;  /* enum pk_bitfield_opcode */
    uint8_t ow;      /* enum pk_bitfield_overflow in force */
    uint8_t bits;    /* 1..64 signed, 1..63 unsigned */
    uint8_t sign;    /* 1: signed (i<bits>), 0: unsigned (u<bits>) */
} pk_bitfield_op;

/* One BITFIELD reply element: v, or nil (an overflow under FAIL). */
typedef struct pk_bitfield_res {
    int64_t v;
    int nil;
} pk_bitfield_res;

/*
 * BITFIELD: runs ops[0..n) in order on the string and writes res[0..n).
 * With only GETs it only reads (a missing key reads as zeros); otherwise
 * the string is created or zero-padded up to the highest bit a SET or
 * INCRBY touches, even when those all fail, as Redis does.  Returns 0,
 * PK_EINVAL (a malformed op), PK_STORE_WRONGTYPE, PK_STORE_TOOBIG (a
 * field ending past PK_STORE_VALUE_MAX bytes, which Redis would allow by
 * up to 8 bytes), PK_ERANGE or a sticky error.
 */
int pk_bits_bitfield(pk_txn *t, uint32_t part, const void *key, size_t klen,
                     const pk_bitfield_op *ops, size_t n, uint64_t now_ms,
                     pk_bitfield_res *res);

enum pk_bitop { PK_BITOP_AND = 0, PK_BITOP_OR, PK_BITOP_XOR, PK_BITOP_NOT };

/* A BITOP source: its partition and key (borrowed). */
typedef struct pk_bitop_src {
    uint32_t part;
    pk_slice key;
} pk_bitop_src;

/*
 * BITOP: stores op over the strings of the source keys (missing keys are
 * empty; NOT takes one) under dest, in partition dpart, replacing it
 * whatever its type and dropping its expiry; an empty result deletes
 * dest.  Keys may be in different partitions (a single node's keyspace):
 * the sources are read, then dest is written by one operation (a SET or
 * a DEL).  *len = the result's length.  Returns 0, PK_EINVAL (bad op, no
 * source, NOT with several), PK_STORE_WRONGTYPE (a source is not a
 * string; nothing written), PK_ENOMEM, PK_ERANGE or a sticky error.
 */
int pk_bits_bitop(pk_txn *t, int op, uint32_t dpart, const void *dest,
                  size_t dlen, const pk_bitop_src *src, size_t nsrc,
                  uint64_t now_ms, uint64_t *len);

#endif

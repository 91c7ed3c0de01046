/*
 * Bit commands: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.
 * Reads run pk_bits' pure functions on the bytes pk_str_get returns;
 * writes are one store operation each (pk_bits.h).  Errors and the order
 * in which arguments are checked follow Redis 7.0's bitops.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_cmd.h"
#include "store/pk_bits.h"
#include "store/pk_str.h"

static const char BADOFFSET[] = "ERR bit offset is not an integer or out of "
                                "range";

/*
 * A bit offset argument: 0 <= offset < PK_BITS_OFFSET_MAX; with bits > 0,
 * "#N" means N * bits (BITFIELD).  0 after replying the error.
 */
static int bit_offset(pk_cmd_ctx *x, const pk_arg *a, unsigned bits,
                      uint64_t *out)
{
    int hash = bits > 0 && a->len > 0 && a->ptr[0] == '#';
    pk_arg num = {a->ptr + hash, a->len - (size_t)hash};
    int64_t v;

    if (!pk_arg_i64(&num, &v) || v < 0 ||
        (hash && v > (int64_t)(PK_BITS_OFFSET_MAX / bits)) ||
        (uint64_t)v * (hash ? bits : 1) >= PK_BITS_OFFSET_MAX) {
        pk_reply_error(x->out, BADOFFSET);
        return 0;
    }
    *out = (uint64_t)v * (hash ? bits : 1);
    return 1;
}

/* The string of key argument 1 for a read: missing is empty (*found 0). */
static int read_string(pk_cmd_ctx *x, pk_txn *t, pk_slice *v, int *found)
{
    int rc = pk_str_get(t, PK_KEY(x, 1), NOW(x), v);

    *found = rc == PK_OK;
    if (rc == PK_ENOTFOUND) {
        *v = (pk_slice){NULL, 0};
        return 1;
    }
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        return 0;
    }
    return 1;
}

void pk_cmd_setbit(pk_cmd_ctx *x)
{
    static const char badbit[] = "ERR bit is not an integer or out of range";
    uint64_t off;
    int64_t bit;
    int old = 0, rc;

    if (!bit_offset(x, &x->argv[2], 0, &off))
        return;
    if (!pk_arg_i64(&x->argv[3], &bit) || (bit & ~1)) {
        pk_reply_error(x->out, badbit);
        return;
    }
    TXN_OR_RETURN(x, t);
    rc = pk_bits_setbit(t, PK_KEY(x, 1), off, (int)bit, NOW(x), &old);
    pk_reply_int_rc(x, rc, old);
}

void pk_cmd_getbit(pk_cmd_ctx *x)
{
    uint64_t off;
    pk_slice v;
    int found;

    if (!bit_offset(x, &x->argv[2], 0, &off))
        return;
    TXN_OR_RETURN(x, t);
    if (read_string(x, t, &v, &found))
        pk_reply_int(x->out, pk_bits_get(v.ptr, v.len, off));
}

/* BYTE or BIT at argument i into *isbit; 0 after a syntax error. */
static int range_unit(pk_cmd_ctx *x, int i, int *isbit)
{
    if (pk_arg_eq(&x->argv[i], "bit"))
        *isbit = 1;
    else if (pk_arg_eq(&x->argv[i], "byte"))
        *isbit = 0;
    else {
        pk_reply_syntax(x);
        return 0;
    }
    return 1;
}

void pk_cmd_bitcount(pk_cmd_ctx *x)
{
    int64_t start = 0, end = -1;
    int isbit = 0, found;
    pk_slice v;

    TXN_OR_RETURN(x, t);
    /* Redis answers 0 for a missing key before it looks at the range. */
    if (!read_string(x, t, &v, &found))
        return;
    if (!found) {
        pk_reply_int(x->out, 0);
        return;
    }
    if (x->argc == 4 || x->argc == 5) {
        if (!pk_arg_i64(&x->argv[2], &start) ||
            !pk_arg_i64(&x->argv[3], &end)) {
            pk_reply_notint(x);
            return;
        }
        if (start < 0 && end < 0 && start > end) {
            pk_reply_int(x->out, 0);
            return;
        }
        if (x->argc == 5 && !range_unit(x, 4, &isbit))
            return;
    } else if (x->argc != 2) {
        pk_reply_syntax(x);
        return;
    }
    pk_reply_int(x->out, pk_bits_count(v.ptr, v.len, start, end, isbit));
}

void pk_cmd_bitpos(pk_cmd_ctx *x)
{
    int64_t bit, start = 0, end = -1;
    int isbit = 0, found, end_given = 0;
    pk_slice v;

    if (!pk_arg_i64(&x->argv[2], &bit)) {
        pk_reply_notint(x);
        return;
    }
    if (bit != 0 && bit != 1) {
        pk_reply_error(x->out, "ERR The bit argument must be 1 or 0.");
        return;
    }
    TXN_OR_RETURN(x, t);
    if (!read_string(x, t, &v, &found))
        return;
    if (!found) {
        /* A missing key is an endless run of zeros. */
        pk_reply_int(x->out, bit ? -1 : 0);
        return;
    }
    if (x->argc > 6) {
        pk_reply_syntax(x);
        return;
    }
    if (x->argc >= 4 && !pk_arg_i64(&x->argv[3], &start)) {
        pk_reply_notint(x);
        return;
    }
    if (x->argc == 6 && !range_unit(x, 5, &isbit))
        return;
    if (x->argc >= 5) {
        if (!pk_arg_i64(&x->argv[4], &end)) {
            pk_reply_notint(x);
            return;
        }
        end_given = 1;
    }
    pk_reply_int(x->out, pk_bits_pos(v.ptr, v.len, (int)bit, start, end,
                                     end_given, isbit));
}

void pk_cmd_bitop(pk_cmd_ctx *x)
{
    static const char *ops[] = {"and", "or", "xor", "not"};
    int op = -1, rc;
    pk_bitop_src *src;
    uint64_t len = 0;

    for (int i = 0; i < 4; i++)
        if (pk_arg_eq(&x->argv[1], ops[i]))
            op = i;
    if (op < 0) {
        pk_reply_syntax(x);
        return;
    }
    if (op == PK_BITOP_NOT && x->argc != 4) {
        pk_reply_error(
            x->out, "ERR BITOP NOT must be called with a single source key.");
        return;
    }
    TXN_OR_RETURN(x, t);
    /* argc is bounded by the request already in memory. */
    src = malloc(sizeof(*src) * (size_t)(x->argc - 3));
    if (src == NULL) {
        pk_cmd_store_error(x, PK_ENOMEM);
        return;
    }
    for (int i = 3; i < x->argc; i++)
        src[i - 3] =
            (pk_bitop_src){pk_cmd_part(x, i), {x->argv[i].ptr, x->argv[i].len}};
    rc = pk_bits_bitop(t, op, PK_KEY(x, 2), src, (size_t)(x->argc - 3), NOW(x),
                       &len);
    free(src);
    pk_reply_int_rc(x, rc, (int64_t)len);
}

/* A bitfield type "i<1..64>" or "u<1..63>"; 0 after replying the error. */
static int bitfield_type(pk_cmd_ctx *x, const pk_arg *a, pk_bitfield_op *op)
{
    pk_arg num = {a->ptr + 1, a->len > 0 ? a->len - 1 : 0};
    int64_t bits;

    if (a->len < 2 || (a->ptr[0] != 'i' && a->ptr[0] != 'u') ||
        !pk_arg_i64(&num, &bits) || bits < 1 ||
        bits > (a->ptr[0] == 'i' ? 64 : 63)) {
        pk_reply_error(x->out, "ERR Invalid bitfield type. Use something "
                               "like i16 u8. Note that u64 is not supported "
                               "but i64 is.");
        return 0;
    }
    op->sign = a->ptr[0] == 'i';
    op->bits = (uint8_t)bits;
    return 1;
}

/* Parses BITFIELD's subcommands into ops; returns how many, or -1 after
 * replying an error.  *writes is set when one is SET or INCRBY. */
static int bitfield_parse(pk_cmd_ctx *x, pk_bitfield_op *ops, int *writes)
{
    int n = 0, ow = PK_BF_WRAP;

    *writes = 0;
    for (int i = 2; i < x->argc; i++) {
        const pk_arg *a = &x->argv[i];
        int left = x->argc - i - 1;
        pk_bitfield_op *op = &ops[n];
        if (pk_arg_eq(a, "overflow") && left >= 1) {
            const pk_arg *w = &x->argv[++i];
            if (pk_arg_eq(w, "wrap"))
                ow = PK_BF_WRAP;
            else if (pk_arg_eq(w, "sat"))
                ow = PK_BF_SAT;
            else if (pk_arg_eq(w, "fail"))
                ow = PK_BF_FAIL;
            else {
                pk_reply_error(x->out, "ERR Invalid OVERFLOW type specified");
                return -1;
            }
            continue;
        }
        memset(op, 0, sizeof(*op));
        if (pk_arg_eq(a, "get") && left >= 2)
            op->opcode = PK_BF_GET;
        else if (pk_arg_eq(a, "set") && left >= 3)
            op->opcode = PK_BF_SET;
        else if (pk_arg_eq(a, "incrby") && left >= 3)
            op->opcode = PK_BF_INCRBY;
        else {
            pk_reply_syntax(x);
            return -1;
        }
        op->ow = (uint8_t)ow;
        if (!bitfield_type(x, &x->argv[i + 1], op) ||
            !bit_offset(x, &x->argv[i + 2], op->bits, &op->offset))
            return -1;
        if (op->opcode != PK_BF_GET) {
            *writes = 1;
            if (!pk_arg_i64(&x->argv[i + 3], &op->arg)) {
                pk_reply_notint(x);
                return -1;
            }
        }
        i += op->opcode == PK_BF_GET ? 2 : 3;
        n++;
    }
    return n;
}

static void bitfield_generic(pk_cmd_ctx *x, int ro)
{
    /* Each subcommand takes at least two arguments. */
    size_t cap = (size_t)x->argc / 2 + 1;
    pk_bitfield_op *ops = malloc(sizeof(*ops) * cap);
    pk_bitfield_res *res = malloc(sizeof(*res) * cap);
    int n, writes, rc;
    pk_txn *t;

    if (ops == NULL || res == NULL) {
        pk_cmd_store_error(x, PK_ENOMEM);
        goto out;
    }
    if ((n = bitfield_parse(x, ops, &writes)) < 0)
        goto out;
    if (ro && writes) {
        pk_reply_error(x->out,
                       "ERR BITFIELD_RO only supports the GET subcommand");
        goto out;
    }
    if ((t = pk_srv_txn(x)) == NULL)
        goto out;
    rc = pk_bits_bitfield(t, PK_KEY(x, 1), ops, (size_t)n, NOW(x), res);
    if (rc != PK_OK) {
        pk_cmd_store_error(x, rc);
        goto out;
    }
    pk_reply_array(x->out, (size_t)n);
    for (int i = 0; i < n; i++) {
        if (res[i].nil)
            pk_reply_null(x->out, x->proto);
        else
            pk_reply_int(x->out, res[i].v);
    }
out:
    free(ops);
    free(res);
}

void pk_cmd_bitfield(pk_cmd_ctx *x)
{
    bitfield_generic(x, 0);
}

void pk_cmd_bitfield_ro(pk_cmd_ctx *x)
{
    bitfield_generic(x, 1);
}

/*
 * libFuzzer target for the RESP reply reader and request writer
 * (pk_rreply).
 *
 * The input is read twice: in one piece, and in chunks whose sizes come
 * from a hash of the input's first bytes.  Both runs must return the same
 * replies (compared by their canonical dump: RESP3, attributes dropped,
 * nulls as "_") and the same error text.  Limits are sometimes tiny so
 * that every limit path is reached.  Along the way:
 *   - every string has a NUL after it, and a tree has at most one node per
 *     3 bytes fed and no more string bytes than were fed;
 *   - the reader's memory stays within a bound of the bytes fed (nothing
 *     is allocated from a declared length);
 *   - each reply's dump reads back as one reply with the same dump;
 *   - the input, cut into arguments and written by pk_rr_write_cmd, is
 *     read back by the server's request parser to the same arguments.
 * Leaks are reported by LeakSanitizer.
 *
 * Built by `make fuzz` (the layers core to coord linked in), or by hand
 * from the sources of src/proto and src/core/pk_err.c with
 * -fsanitize=fuzzer,address,undefined.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "fuzz_util.h"
#include "proto/pk_reply.h"
#include "proto/pk_resp.h"
#include "proto/pk_rreply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(pk_obuf *ob, const void *p, size_t n)
{
    CHECK(pk_obuf_append(ob, p, n) == PK_OK);
}

static void put_head(pk_obuf *ob, int type, size_t n)
{
    char buf[32];
    int len = snprintf(buf, sizeof(buf), "%c%zu\r\n", type, n);

    put(ob, buf, (size_t)len);
}

/* Sizes of a tree, to check it against the bytes it came from. */
typedef struct tally {
    size_t nodes;
    size_t strs;
} tally;

/* Writes r as canonical RESP3. */
static void dump(pk_obuf *ob, const pk_rr *r, tally *t)
{
    char buf[48];
    size_t k;

    t->nodes++;
    switch (r->type) {
    case PK_RR_BULK:
    case PK_RR_VERBATIM:
        put_head(ob, r->type, r->len + (r->type == PK_RR_VERBATIM ? 4 : 0));
        if (r->type == PK_RR_VERBATIM) {
            CHECK(r->fmt[3] == '\0');
            put(ob, r->fmt, 3);
            put(ob, ":", 1);
        }
        /* fall through */
    case PK_RR_STATUS:
    case PK_RR_ERROR:
    case PK_RR_DOUBLE:
    case PK_RR_BIGNUM:
        CHECK(r->str && r->str[r->len] == '\0' && !r->elems);
        if (r->type != PK_RR_BULK && r->type != PK_RR_VERBATIM) {
            char c = (char)r->type;
            put(ob, &c, 1);
        }
        put(ob, r->str, r->len);
        put(ob, "\r\n", 2);
        t->strs += r->len;
        return;
    case PK_RR_INT:
        put(ob, buf,
            (size_t)snprintf(buf, sizeof(buf), ":%lld\r\n",
                             (long long)r->integer));
        return;
    case PK_RR_BOOL:
        CHECK(r->integer == 0 || r->integer == 1);
        put(ob, r->integer ? "#t\r\n" : "#f\r\n", 4);
        return;
    case PK_RR_NIL:
        put(ob, "_\r\n", 3);
        return;
    case PK_RR_ARRAY:
    case PK_RR_MAP:
    case PK_RR_SET:
    case PK_RR_PUSH:
        CHECK(!r->str && (r->n == 0) == (r->elems == NULL));
        put_head(ob, r->type, r->n);
        k = r->type == PK_RR_MAP ? 2 * r->n : r->n;
        for (size_t i = 0; i < k; i++)
            dump(ob, &r->elems[i], t);
        return;
    default:
        abort();
    }
}

/* Reads a reply's dump back: one reply, the same dump. */
static void reread(const pk_obuf *d)
{
    pk_rreply_reader *r;
    pk_rr *rep;
    pk_obuf again;
    tally t = {0};

    pk_obuf_init(&again);
    CHECK(pk_rreply_reader_new(NULL, &r) == PK_OK);
    CHECK(pk_rreply_feed(r, d->data + d->head, pk_obuf_pending(d)) == PK_OK);
    CHECK(pk_rreply_next(r, &rep) == 1);
    dump(&again, rep, &t);
    pk_rr_free(rep);
    CHECK(pk_rreply_next(r, &rep) == 0 && pk_rreply_buffered(r) == 0);
    CHECK(pk_obuf_pending(&again) == pk_obuf_pending(d) &&
          memcmp(again.data, d->data + d->head, pk_obuf_pending(d)) == 0);
    pk_rreply_reader_free(r);
    pk_obuf_free(&again);
}

/* Takes every complete reply into log; returns 0 or the error. */
static int drain(pk_rreply_reader *r, pk_obuf *log, size_t fed, int deep)
{
    pk_obuf one;
    pk_rr *rep;
    int rc;

    pk_obuf_init(&one);
    while ((rc = pk_rreply_next(r, &rep)) == 1) {
        tally t = {0};
        pk_obuf_reset(&one);
        dump(&one, rep, &t);
        pk_rr_free(rep);
        CHECK(t.nodes * 3 <= fed && t.strs <= fed);
        put(log, one.data + one.head, pk_obuf_pending(&one));
        if (deep)
            reread(&one);
    }
    pk_obuf_free(&one);
    CHECK(pk_rreply_memory(r) <= 64 * 1024 + 4 * fed);
    if (rc == PK_EPROTO) {
        const char *e = pk_rreply_error(r);
        CHECK(e && strncmp(e, "Protocol error: ", 16) == 0);
        put(log, "!", 1);
        put(log, e, strlen(e));
    }
    CHECK(rc == 0 || rc == PK_EPROTO);
    return rc;
}

static void run(const uint8_t *data, size_t size, const pk_rreply_limits *lim,
                uint64_t seed, pk_obuf *log)
{
    pk_rreply_reader *r;
    fuzz_chunks ch = fuzz_chunks_init(seed, size);
    size_t off = 0;
    int rc = 0;

    CHECK(pk_rreply_reader_new(lim, &r) == PK_OK);
    while (off < size && rc == 0) {
        size_t c = fuzz_chunk_next(&ch, size - off);
        CHECK(pk_rreply_feed(r, data + off, c) == PK_OK);
        off += c;
        rc = drain(r, log, off, ch.seed == 0);
    }
    if (rc == 0) {
        char buf[32];
        put(log, buf,
            (size_t)snprintf(buf, sizeof(buf), "~%zu", pk_rreply_buffered(r)));
    }
    pk_rreply_reader_free(r);
}

/* The input cut into up to 8 arguments, written as a request and parsed
 * back by the server's parser. */
static void write_cmd(const uint8_t *data, size_t size)
{
    const char *argv[8];
    size_t lens[8], off = 0;
    int argc = size ? 1 + data[0] % 8 : 1, n;
    pk_resp_parser *p;
    const pk_arg *back;
    pk_obuf ob;

    for (int i = 0; i < argc; i++) {
        lens[i] = (size - off) / (size_t)(argc - i);
        argv[i] = (const char *)data + off;
        off += lens[i];
    }
    pk_obuf_init(&ob);
    CHECK(pk_rr_write_cmd(&ob, argc, argv, lens) == PK_OK);
    CHECK(pk_resp_parser_new(NULL, &p) == PK_OK);
    CHECK(pk_resp_feed(p, ob.data + ob.head, pk_obuf_pending(&ob)) == PK_OK);
    CHECK(pk_resp_next(p, &n, &back) == 1 && n == argc);
    for (int i = 0; i < argc; i++)
        CHECK(back[i].len == lens[i] &&
              (lens[i] == 0 || memcmp(back[i].ptr, argv[i], lens[i]) == 0));
    CHECK(pk_resp_next(p, &n, &back) == 0 && pk_resp_buffered(p) == 0);
    pk_resp_parser_free(p);
    pk_obuf_free(&ob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_rreply_limits lim = pk_rreply_limits_default();
    uint64_t h = fuzz_seed(data, size);
    pk_obuf one, chunked;

    if (h % 4 == 0) {
        lim.max_depth = 1 + (h >> 8) % 8;
        lim.max_elements = 1 + (h >> 16) % 8;
        lim.max_bulk_len = 1 + (h >> 24) % 128;
    }
    pk_obuf_init(&one);
    pk_obuf_init(&chunked);
    run(data, size, &lim, 0, &one);
    run(data, size, &lim, h | 1, &chunked);
    CHECK(pk_obuf_pending(&one) == pk_obuf_pending(&chunked));
    CHECK(memcmp(one.data, chunked.data, pk_obuf_pending(&one)) == 0);
    pk_obuf_free(&one);
    pk_obuf_free(&chunked);
    write_cmd(data, size);
    return 0;
}

/*
 * libFuzzer target for the RESP request parser.
 *
 * The input is parsed twice: in one piece, and in chunks whose sizes (and
 * whether pk_resp_feed or pk_resp_space/commit is used) come from a hash
 * of the input's first bytes.  Both runs must return the same commands
 * and the same error text.  Limits are sometimes tiny so that every
 * limit path is reached.  Along the way:
 *   - every argument is NUL-terminated and lies inside the input's size;
 *   - the parser's memory stays within a bound of the bytes fed (nothing
 *     is allocated from a declared length);
 *   - each command, written back with pk_reply_array/pk_reply_bulk, is a
 *     request that a second parser reads back to the same arguments.
 * Leaks are reported by LeakSanitizer.
 *
 * Built by `make fuzz` (the layers core to coord linked in), or by hand
 * from the sources of src/proto and src/core/pk_err.c with
 * -fsanitize=fuzzer,address,undefined.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "fuzz_util.h"
#include "proto/pk_reply.h"
#include "proto/pk_resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The commands and error of one run, flattened: per command the argument
 * count, then per argument its length and bytes. */
typedef struct trace {
    pk_obuf log;
    pk_obuf echo; /* scratch: a command re-encoded as a request */
} trace;

static void trace_u64(pk_obuf *ob, uint64_t v)
{
    CHECK(pk_obuf_append(ob, &v, sizeof(v)) == PK_OK);
}

/* Writes argv back as a multibulk request and parses it again. */
static void roundtrip(trace *t, int argc, const pk_arg *argv)
{
    pk_resp_parser *p;
    const pk_arg *back;
    int n;

    pk_obuf_reset(&t->echo);
    CHECK(pk_reply_array(&t->echo, (size_t)argc) == PK_OK);
    for (int i = 0; i < argc; i++)
        CHECK(pk_reply_bulk(&t->echo, argv[i].ptr, argv[i].len) == PK_OK);
    CHECK(pk_resp_parser_new(NULL, &p) == PK_OK);
    CHECK(pk_resp_feed(p, t->echo.data + t->echo.head,
                       pk_obuf_pending(&t->echo)) == PK_OK);
    CHECK(pk_resp_next(p, &n, &back) == 1 && n == argc);
    for (int i = 0; i < argc; i++)
        CHECK(back[i].len == argv[i].len &&
              memcmp(back[i].ptr, argv[i].ptr, argv[i].len) == 0);
    CHECK(pk_resp_next(p, &n, &back) == 0 && pk_resp_buffered(p) == 0);
    pk_resp_parser_free(p);
}

/* Takes every complete command into t; returns 0 or the error. */
static int drain(pk_resp_parser *p, trace *t, size_t fed, int echo)
{
    const pk_arg *argv;
    int argc, rc;

    while ((rc = pk_resp_next(p, &argc, &argv)) == 1) {
        CHECK(argc >= 1);
        trace_u64(&t->log, (uint64_t)argc);
        for (int i = 0; i < argc; i++) {
            CHECK(argv[i].len <= fed && argv[i].ptr[argv[i].len] == '\0');
            trace_u64(&t->log, argv[i].len);
            CHECK(pk_obuf_append(&t->log, argv[i].ptr, argv[i].len) == PK_OK);
        }
        if (echo)
            roundtrip(t, argc, argv);
    }
    CHECK(pk_resp_memory(p) <= 512 * 1024 + 64 * fed);
    if (rc == PK_EPROTO) {
        const char *e = pk_resp_error(p);
        CHECK(e && strncmp(e, "ERR Protocol error: ", 20) == 0);
        CHECK(pk_obuf_append(&t->log, e, strlen(e)) == PK_OK);
    }
    CHECK(rc == 0 || rc == PK_EPROTO);
    return rc;
}

static void run(const uint8_t *data, size_t size, const pk_resp_limits *lim,
                uint64_t seed, trace *t)
{
    pk_resp_parser *p;
    fuzz_chunks ch = fuzz_chunks_init(seed, size);
    size_t off = 0;
    int rc = 0;

    CHECK(pk_resp_parser_new(lim, &p) == PK_OK);
    while (off < size && rc == 0) {
        size_t c = fuzz_chunk_next(&ch, size - off);
        if (ch.seed && (ch.seed >> 32) % 2) {
            char *dst;
            size_t got;
            CHECK(pk_resp_space(p, c, &dst, &got) == PK_OK && got >= 1);
            c = got < c ? got : c;
            memcpy(dst, data + off, c);
            pk_resp_commit(p, c);
        } else {
            CHECK(pk_resp_feed(p, data + off, c) == PK_OK);
        }
        off += c;
        rc = drain(p, t, off, ch.seed == 0);
    }
    trace_u64(&t->log, rc == 0 ? pk_resp_buffered(p) : 0);
    pk_resp_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_resp_limits lim = pk_resp_limits_default();
    uint64_t h = fuzz_seed(data, size);
    trace one = {0}, chunked = {0};

    if (h % 4 == 0) {
        lim.max_inline = 1 + (h >> 8) % 64;
        lim.max_args = 1 + (h >> 16) % 8;
        lim.max_bulk_len = 1 + (h >> 24) % 128;
    }
    run(data, size, &lim, 0, &one);
    run(data, size, &lim, h | 1, &chunked);
    CHECK(pk_obuf_pending(&one.log) == pk_obuf_pending(&chunked.log));
    CHECK(memcmp(one.log.data, chunked.log.data, pk_obuf_pending(&one.log)) ==
          0);
    pk_obuf_free(&one.log);
    pk_obuf_free(&one.echo);
    pk_obuf_free(&chunked.log);
    pk_obuf_free(&chunked.echo);
    return 0;
}

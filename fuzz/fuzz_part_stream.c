/*
 * libFuzzer target for the two streams a node takes from its peers for a
 * partition: a snapshot (pk_import_feed, pk_store_snap.h), as a moving or
 * new replica gets it, and change-log records (pk_store_log_apply and
 * pk_store_log_defer, pk_store_log.h), as replication PUSHes them.
 *
 *   input:  | mode | stream ... |
 *
 *   mode bit 0  0: the rest is a snapshot stream, fed to an importer in
 *               chunks drawn from the input (fuzz_util.h)
 *               1: the rest is log records, each as u16 len | record,
 *               applied under the next sequence numbers
 *   mode bit 1  snapshot: the last 4 bytes are first rewritten to the
 *               stream's CRC32C, so the importer's parser sees mutations
 *               past its checksum; log: records are deferred, then
 *               settled, instead of applied
 *
 * Runs in one write transaction that is aborted.  A snapshot that
 * imports exports again to exactly its bytes (the format is canonical); a
 * failed import fails the transaction.  A log record that is refused
 * leaves the transaction healthy and nothing logged; one that is taken
 * reads back from the log byte for byte.
 *
 * Seeds in fuzz/seeds/fuzz_part_stream/ are exports and log records of a
 * partition holding one key of each type, behind a mode byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "fuzz_store.h"
#include "fuzz_util.h"
#include "store/pk_keyenc.h"
#include "store/pk_store.h"
#include "store/pk_store_log.h"
#include "store/pk_store_part.h"
#include "store/pk_store_snap.h"

#define PART 9u
#define NREC_MAX 64 /* log records per input */

/* Internal to the core library (pk_pmap_codec.c). */
uint32_t pk__crc32c(const void *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An export collected in memory. */
typedef struct outbuf {
    uint8_t *p; /* owned */
    size_t len, cap;
} outbuf;

static int collect(void *ctx, const void *chunk, size_t len)
{
    outbuf *o = ctx;

    if (o->len + len > o->cap) {
        size_t cap = (o->len + len) * 2;
        uint8_t *p = realloc(o->p, cap);

        CHECK(p != NULL);
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, chunk, len);
    o->len += len;
    return 0;
}

static void snapshot(pk_txn *t, const uint8_t *p, size_t len, uint64_t seed)
{
    fuzz_chunks ch = fuzz_chunks_init(seed, len);
    pk_import *im = NULL;
    outbuf o = {NULL, 0, 0};
    size_t off = 0;
    int rc = 0;

    CHECK(pk_import_new(PART, &im) == 0);
    while (rc == 0 && off < len) {
        size_t n = fuzz_chunk_next(&ch, len - off);

        rc = pk_import_feed(im, t, p + off, n);
        off += n;
    }
    if (rc == 0) {
        rc = pk_import_finish(im, t);
    }
    pk_import_free(im);
    if (rc != 0) {
        /* The partition was empty, so never PK_EEXIST. */
        CHECK(rc == PK_ECORRUPT);
        CHECK(pk_txn_error(t) == rc);
        return;
    }
    CHECK(pk_txn_error(t) == 0);
    CHECK(pk_store_part_export(t, PART, collect, &o) == 0);
    CHECK(o.len == len && memcmp(o.p, p, len) == 0);
    free(o.p);
}

/* The records taken, to compare with what the log reads back. */
typedef struct taken {
    const uint8_t *rec[NREC_MAX]; /* borrowed from the input copy */
    size_t len[NREC_MAX];
    size_t n, next;
} taken;

static int read_back(void *ctx, uint64_t seq, const void *rec, size_t len)
{
    taken *k = ctx;

    CHECK(seq == k->next + 1 && k->next < k->n);
    CHECK(len == k->len[k->next] && memcmp(rec, k->rec[k->next], len) == 0);
    k->next++;
    return 0;
}

static void log_records(pk_txn *t, const uint8_t *p, size_t len, int defer)
{
    pk_part_stats st;
    taken k = {{NULL}, {0}, 0, 0};
    size_t off = 0;

    while (off + 2 <= len && k.n < NREC_MAX) {
        size_t n = (size_t)p[off] << 8 | p[off + 1];
        const uint8_t *rec = p + off + 2;
        uint8_t *copy;
        int rc;

        off += 2;
        n = n < len - off ? n : len - off;
        off += n;
        /* A copy of exactly n bytes, so ASan sees any read past it. */
        copy = malloc(n ? n : 1);
        CHECK(copy != NULL);
        memcpy(copy, rec, n);
        if (defer) {
            rc = pk_store_log_defer(t, PART, k.n + 1, copy, n);
        } else {
            rc = pk_store_log_apply(t, PART, k.n + 1, copy, n);
        }
        free(copy);
        CHECK(rc == 0 || rc == PK_ECORRUPT);
        CHECK(pk_txn_error(t) == 0);
        CHECK(pk_store_part_stats(t, PART, &st) == 0);
        if (rc == 0) {
            k.rec[k.n] = rec;
            k.len[k.n] = n;
            k.n++;
        }
        CHECK(st.log_last == k.n);
    }
    if (defer) {
        CHECK(pk_store_log_settle(t, 0, NULL) == 0);
        CHECK(pk_store_log_unsettled(t) == 0);
    }
    CHECK(pk_store_log_read(t, PART, 1, read_back, &k) == 0);
    CHECK(k.next == k.n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_store *s;
    pk_txn *t = NULL;
    uint8_t *p;
    size_t len;
    int fresh;

    if (size == 0) {
        return 0;
    }
    s = fuzz_store_get(&fresh);
    len = size - 1;
    /* An exact-size copy, so that ASan catches reads past the end. */
    p = malloc(len ? len : 1);
    CHECK(p != NULL);
    memcpy(p, data + 1, len);
    CHECK(pk_txn_begin(s, 0, &t) == 0);
    if (data[0] & 1) {
        log_records(t, p, len, (data[0] & 2) != 0);
    } else {
        if ((data[0] & 2) && len >= 4) {
            uint32_t crc = pk__crc32c(p, len - 4);

            pk_be32_put(p + len - 4, crc);
        }
        snapshot(t, p, len, fuzz_seed(data, size));
    }
    pk_txn_abort(t);
    free(p);
    return 0;
}

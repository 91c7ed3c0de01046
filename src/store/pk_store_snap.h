/*
 * pk_store_snap: a partition as a byte stream -- export from one read
 * transaction (a consistent snapshot), import on another node.
 *
 *   stream  header record* end
 *   header  "PKSN" | u16 version (1) | u16 flags (0) | u32 part
 *           | u64 log seq the snapshot was taken at          (20 bytes)
 *   record  u8 0x01 | u16 klen | key without part | u32 vlen | value
 *           (data-DB records in key order)
 *   end     u8 0xFF | u64 record count | u32 CRC32C          (13 bytes)
 *
 * Integers are big-endian.  The CRC32C (Castagnoli) covers every byte
 * before it.  After importing a snapshot taken at seq S, the partition's
 * log continues at S + 1: a moving or new replica imports, then applies the
 * source's log from S + 1 (pk_store_log_apply).
 *
 * Export is pull-based so the server can throttle it (bytes/s) and spread
 * it over loop iterations while the read transaction pins the snapshot;
 * import takes chunks of any size, across any number of write
 * transactions.
 */
#ifndef PK_STORE_PK_STORE_SNAP_H
#define PK_STORE_PK_STORE_SNAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_txn pk_txn;
typedef struct pk_export pk_export;
typedef struct pk_import pk_import;

/*
 * Starts exporting partition part from t (normally a read transaction;
 * it must stay open until pk_export_free).  Returns 0 and *out (owned),
 * PK_ENOMEM or an error.
 */
int pk_export_new(pk_txn *t, uint32_t part, pk_export **out);

/*
 * Copies the next bytes of the stream, at most cap (>= 1), to buf and
 * sets *n to how many; *n == 0 means the stream is complete.  Returns 0,
 * PK_EINVAL (cap == 0) or an error (the exporter is then unusable).
 */
int pk_export_read(pk_export *e, void *buf, size_t cap, size_t *n);

/* Frees an exporter; NULL ok.  Call before its transaction ends. */
void pk_export_free(pk_export *e);

/* Export callback: one chunk, valid during the call; non-zero stops. */
typedef int (*pk_export_cb)(void *ctx, const void *chunk, size_t len);

/*
 * Exports the whole partition to cb in chunks of up to 64 KiB.  Returns 0,
 * the callback's non-zero value, PK_ENOMEM or an error.
 */
int pk_store_part_export(pk_txn *t, uint32_t part, pk_export_cb cb, void *ctx);

/* Starts an import into partition part.  Returns 0 and *out or ENOMEM. */
int pk_import_new(uint32_t part, pk_import **out);

/*
 * Feeds the next len bytes of the stream, writing complete records in
 * write transaction t.  The partition must hold nothing when the header
 * arrives (drop it first).  Returns 0, PK_EEXIST (partition not empty;
 * nothing written), PK_ECORRUPT (malformed: bad header, wrong partition,
 * bad record, keys out of order, wrong count or checksum, bytes after the
 * end), PK_ENOMEM or a sticky error.  After any error but PK_EEXIST, t is
 * failed and the importer unusable: abort t, and drop the partition if
 * earlier transactions committed part of the stream.
 */
int pk_import_feed(pk_import *im, pk_txn *t, const void *data, size_t len);

/*
 * Checks that the stream ended with a valid end record.  Returns 0 or
 * PK_ECORRUPT (truncated); t as for pk_import_feed.
 */
int pk_import_finish(pk_import *im, pk_txn *t);

/* Frees an importer; NULL ok. */
void pk_import_free(pk_import *im);

/* Imports a whole stream held in memory: new + feed + finish + free. */
int pk_store_part_import(pk_txn *t, uint32_t part, const void *data,
                         size_t len);

#endif

/*
 * pk_coord_file: one file holding the embedded coordinator's whole state,
 * replaced atomically on every write.
 *
 * A write goes to "<path>.tmp", which is fsync'd, renamed over <path>, and
 * then the directory is fsync'd so that the rename itself is durable.
 * After a crash at any point, <path> holds either the previous contents or
 * the new ones, never a mixture; a stale "<path>.tmp" is simply
 * overwritten by the next write.  The contents are opaque here: the
 * caller's encoding carries its own checksum (pk_ckv_codec.c).
 *
 * Thread-safety: the functions keep no state; two writers of one path at
 * once are the caller's bug.
 */
#ifndef PK_COORD_PK_COORD_FILE_H
#define PK_COORD_PK_COORD_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Largest file pk_coord_file_read accepts. */
#define PK_COORD_FILE_MAX (1ull << 30)

/*
 * Reads the whole file at path into *buf (malloc'd, owned by the caller;
 * non-NULL even when *len is 0).  Returns 0, PK_ENOTFOUND (no such file),
 * PK_EFULL (larger than PK_COORD_FILE_MAX), PK_EIO, PK_EINVAL or
 * PK_ENOMEM.  *buf and *len are set only on success.
 */
int pk_coord_file_read(const char *path, uint8_t **buf, size_t *len);

/*
 * Replaces the file at path with buf[0..len) as described above, mode
 * 0600.  Returns 0 once the new contents and the rename are durable,
 * PK_EIO (open, write, fsync, rename or directory fsync failed: <path>
 * holds the old or, if only the directory fsync failed, the new
 * contents), PK_EINVAL or PK_ENOMEM.
 */
int pk_coord_file_write(const char *path, const void *buf, size_t len);

#endif

/*
 * pk_coord_file: atomic replacement of one file (tmp + fsync + rename +
 * directory fsync) and reading it back.  See pk_coord_file.h.
 *
 * Every system call is checked, short reads and writes are continued and
 * EINTR is retried; close() is checked too, since NFS and some FUSE file
 * systems report write errors only there.  On any failure before the
 * rename, the temporary file is removed so that a full disk is not made
 * fuller.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord/pk_coord_file.h"
#include "core/pk_err.h"

static int read_all(int fd, uint8_t *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = read(fd, buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return PK_EIO; /* error, or the file shrank under us */
        }
        done += (size_t)n;
    }
    return PK_OK;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return PK_EIO;
        }
        done += (size_t)n;
    }
    return PK_OK;
}

int pk_coord_file_read(const char *path, uint8_t **buf, size_t *len)
{
    struct stat st;
    uint8_t *b = NULL;
    int fd;
    int rc = PK_OK;

    if (path == NULL || buf == NULL || len == NULL) {
        return PK_EINVAL;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT ? PK_ENOTFOUND : PK_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = PK_EIO;
        goto done;
    }
    if ((uint64_t)st.st_size > PK_COORD_FILE_MAX) {
        rc = PK_EFULL;
        goto done;
    }
    b = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (b == NULL) {
        rc = PK_ENOMEM;
        goto done;
    }
    rc = read_all(fd, b, (size_t)st.st_size);
    if (rc == PK_OK) {
        *buf = b;
        *len = (size_t)st.st_size;
        b = NULL;
    }
done:
    free(b);
    close(fd);
    return rc;
}

/* fsyncs the directory holding path, so that a rename in it is durable. */
static int sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;
    int rc = PK_OK;

    if (slash == NULL) {
        dir = strdup(".");
    } else if (slash == path) {
        dir = strdup("/");
    } else {
        dir = strndup(path, (size_t)(slash - path));
    }
    if (dir == NULL) {
        return PK_ENOMEM;
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        rc = PK_EIO;
    }
    if (fd >= 0) {
        close(fd);
    }
    free(dir);
    return rc;
}

int pk_coord_file_write(const char *path, const void *buf, size_t len)
{
    size_t plen;
    char *tmp;
    int fd;
    int rc;

    if (path == NULL || path[0] == '\0' || (buf == NULL && len > 0)) {
        return PK_EINVAL;
    }
    plen = strlen(path);
    tmp = malloc(plen + sizeof(".tmp"));
    if (tmp == NULL) {
        return PK_ENOMEM;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", sizeof(".tmp"));
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = PK_EIO;
        goto done;
    }
    rc = write_all(fd, buf, len);
    if (rc == PK_OK && fsync(fd) != 0) {
        rc = PK_EIO;
    }
    if (close(fd) != 0 && rc == PK_OK) {
        rc = PK_EIO;
    }
    if (rc == PK_OK && rename(tmp, path) != 0) {
        rc = PK_EIO;
    }
    if (rc != PK_OK) {
        unlink(tmp);
        goto done;
    }
    rc = sync_dir(path);
done:
    free(tmp);
    return rc;
}

/*
 * pk_err: the one list of partkv error codes.
 *
 * Fallible functions return 0 (PK_OK) or one of the negative codes below.
 * The list is an X-macro so that the enum, pk_strerror() and pk_errname()
 * can never disagree.  Codes are stable: they may appear in logs and on the
 * wire, so new codes are appended, never renumbered.
 */
#ifndef PK_CORE_PK_ERR_H
#define PK_CORE_PK_ERR_H

#define PK_ERRNO_MAP(X)                                                        \
    X(ENOMEM, -1, "out of memory")                                             \
    X(EINVAL, -2, "invalid argument")                                          \
    X(ENOTFOUND, -3, "not found")                                              \
    X(EEXIST, -4, "already exists")                                            \
    X(ERANGE, -5, "value out of range")                                        \
    X(ECORRUPT, -6, "corrupted or truncated data")                             \
    X(EVERSION, -7, "unsupported format version")                              \
    X(ECHECKSUM, -8, "checksum mismatch")                                      \
    X(EFULL, -9, "capacity exceeded")                                          \
    X(EEMPTY, -10, "no eligible nodes")                                        \
    X(EINFEASIBLE, -11, "constraints cannot be met")                           \
    X(EIO, -12, "input/output error")                                          \
    X(ESTALE, -13, "stale epoch")                                              \
    X(EPROTO, -14, "protocol error")                                           \
    X(EBUSY, -15, "resource busy")

enum pk_err {
    PK_OK = 0,
#define PK__ERR_ENUM(name, code, text) PK_##name = (code),
    PK_ERRNO_MAP(PK__ERR_ENUM)
#undef PK__ERR_ENUM
};

/* Human-readable text for an error code; never NULL, static storage. */
const char *pk_strerror(int err);

/* Symbolic name ("PK_ENOMEM") for an error code; never NULL, static. */
const char *pk_errname(int err);

#endif

/*
 * keyset: the keys a simulation runs on -- generated from a printf pattern
 * or read from a file, one key per line -- held in one arena.
 */
#ifndef PK_CLI_KEYSET_H
#define PK_CLI_KEYSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct pk_keyset {
    size_t n;
    char **key;    /* n pointers into arena, borrowed from it */
    uint32_t *len; /* n lengths */
    char *arena;   /* owned */
} pk_keyset;

/* Keys pattern % i for i in 1..count; pattern takes one int.  0/PK_ENOMEM */
int pk_keyset_gen(pk_keyset *ks, const char *pattern, size_t count);

/*
 * Reads path, one key per line (a trailing "\r" is dropped, empty lines are
 * skipped).  Returns 0, PK_EIO (errno says why) or PK_ENOMEM.
 */
int pk_keyset_load(pk_keyset *ks, const char *path);

void pk_keyset_free(pk_keyset *ks);

/* 1 when a[0..na) and b[0..nb) hold the same ids in any order. */
int pk_keyset_same_set(const uint32_t *a, uint32_t na, const uint32_t *b,
                       uint32_t nb);

#endif

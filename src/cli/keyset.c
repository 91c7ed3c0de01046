/* keyset: generated or file-backed key lists for the simulator. */
#include "cli/keyset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"

/* Fills key/len by splitting arena[0..size) at '\n'. */
static int index_lines(pk_keyset *ks, size_t size)
{
    size_t lines = 1;

    for (size_t i = 0; i < size; i++)
        lines += ks->arena[i] == '\n';
    ks->key = malloc(lines * sizeof(*ks->key));
    ks->len = malloc(lines * sizeof(*ks->len));
    if (ks->key == NULL || ks->len == NULL)
        return PK_ENOMEM;
    ks->n = 0;
    for (size_t i = 0; i < size;) {
        char *nl = memchr(ks->arena + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - ks->arena) : size;
        size_t len = end - i;
        if (len && ks->arena[i + len - 1] == '\r')
            len--;
        if (len) {
            ks->key[ks->n] = ks->arena + i;
            ks->len[ks->n++] = (uint32_t)len;
        }
        i = end + 1;
    }
    return PK_OK;
}

int pk_keyset_gen(pk_keyset *ks, const char *pattern, size_t count)
{
    size_t cap = 64, size = 0;

    memset(ks, 0, sizeof(*ks));
    ks->arena = malloc(cap);
    if (ks->arena == NULL)
        return PK_ENOMEM;
    for (size_t i = 1; i <= count; i++) {
        if (cap - size < 128) {
            char *a = realloc(ks->arena, cap * 2);
            if (a == NULL)
                goto nomem;
            ks->arena = a;
            cap *= 2;
        }
        size += (size_t)snprintf(ks->arena + size, 127, pattern, (int)i);
        ks->arena[size++] = '\n';
    }
    if (index_lines(ks, size) == PK_OK)
        return PK_OK;
nomem:
    pk_keyset_free(ks);
    return PK_ENOMEM;
}

int pk_keyset_load(pk_keyset *ks, const char *path)
{
    FILE *f = fopen(path, "rb");
    long size;
    int rc = PK_EIO;

    memset(ks, 0, sizeof(*ks));
    if (f == NULL)
        return PK_EIO;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0)
        goto out;
    rc = PK_ENOMEM;
    ks->arena = malloc((size_t)size + 1);
    if (ks->arena == NULL)
        goto out;
    rc = PK_EIO;
    if (fread(ks->arena, 1, (size_t)size, f) != (size_t)size)
        goto out;
    rc = index_lines(ks, (size_t)size);
out:
    fclose(f);
    if (rc != PK_OK)
        pk_keyset_free(ks);
    return rc;
}

void pk_keyset_free(pk_keyset *ks)
{
    free(ks->key);
    free(ks->len);
    free(ks->arena);
    memset(ks, 0, sizeof(*ks));
}

int pk_keyset_same_set(const uint32_t *a, uint32_t na, const uint32_t *b,
                       uint32_t nb)
{
    if (na != nb)
        return 0;
    for (uint32_t i = 0; i < na; i++) {
        int found = 0;
        for (uint32_t j = 0; j < nb && !found; j++)
            found = a[i] == b[j];
        if (!found)
            return 0;
    }
    return 1;
}

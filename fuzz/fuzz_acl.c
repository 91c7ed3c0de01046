/*
 * libFuzzer target for the ACL model (pk_acl.h): SETUSER rules and the
 * ACL file's text.
 *
 *   input:  | mode | bytes ... |
 *
 * Even mode: the bytes are an ACL file; what loads must save to a text
 * that loads again and saves the same (the saved form is a fixpoint).
 * Odd mode: the bytes, split at NUL bytes, are the rules of one ACL
 * SETUSER; a user they make is described, and the description, split at
 * spaces as ACL LOAD splits, must apply to a fresh user and describe the
 * same.  Either way the user is checked against a few commands.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "server/pk_acl.h"
#include "server/pk_cmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_some(const pk_acl *a)
{
    static const pk_arg get[] = {{"GET", 3}, {"k", 1}};
    static const pk_arg cfg[] = {{"config", 6}, {"set", 3}, {"a", 1}, {"b", 1}};
    int pos;

    for (pk_acl_user *u = pk_acl_first(a); u; u = pk_acl_next(u)) {
        pk_acl_check(u, pk_cmd_find("get", 3), 2, get, &pos, NULL);
        pk_acl_check(u, pk_cmd_find("config", 6), 4, cfg, &pos, NULL);
        pk_acl_key_readable(u, "k", 1);
    }
}

static void file_mode(const uint8_t *data, size_t size)
{
    pk_acl *a = pk_acl_new(), *b = pk_acl_new();
    char *err = NULL, *t1 = NULL, *t2 = NULL;

    if (a == NULL || b == NULL)
        goto out;
    if (pk_acl_load_text(a, (const char *)data, size, "f", NULL, NULL, &err) !=
        0)
        goto out;
    check_some(a);
    if ((t1 = pk_acl_save_text(a)) == NULL)
        goto out;
    if (pk_acl_load_text(b, t1, strlen(t1), "f", NULL, NULL, &err) != 0)
        abort(); /* what partkv saved must load */
    if ((t2 = pk_acl_save_text(b)) != NULL && strcmp(t1, t2) != 0)
        abort();
out:
    free(err);
    free(t1);
    free(t2);
    pk_acl_free(a);
    pk_acl_free(b);
}

static void rules_mode(const uint8_t *data, size_t size)
{
    pk_acl *a = pk_acl_new();
    pk_arg rules[64], back[512];
    int n = 0, nb = 0;
    char *err = NULL, *d1 = NULL, *d2 = NULL, *copy = NULL, *p;
    size_t start = 0;

    if (a == NULL)
        return;
    for (size_t i = 0; i <= size && n < 64; i++) {
        if (i == size || data[i] == 0) {
            rules[n++] = (pk_arg){(const char *)data + start, i - start};
            start = i + 1;
        }
    }
    if (pk_acl_setuser(a, "u", 1, n, rules, &err) != 0)
        goto out;
    check_some(a);
    if ((d1 = pk_acl_describe(pk_acl_find(a, "u", 1))) == NULL ||
        (copy = strdup(d1)) == NULL)
        goto out;
    for (p = strtok(copy, " "); p && nb < 512; p = strtok(NULL, " "))
        back[nb++] = (pk_arg){p, strlen(p)};
    if (nb == 512)
        goto out;
    if (pk_acl_setuser(a, "v", 1, nb, back, &err) != 0)
        abort(); /* a description must apply */
    if ((d2 = pk_acl_describe(pk_acl_find(a, "v", 1))) != NULL &&
        strcmp(d1, d2) != 0)
        abort();
out:
    free(err);
    free(d1);
    free(d2);
    free(copy);
    pk_acl_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;

    if (!ready) {
        size_t n;
        const pk_cmd *t = pk_cmd_table(&n);
        pk_acl_commands(t, n);
        ready = 1;
    }
    if (size == 0 || size > 4096)
        return 0;
    if (data[0] & 1)
        rules_mode(data + 1, size - 1);
    else
        file_mode(data + 1, size - 1);
    return 0;
}

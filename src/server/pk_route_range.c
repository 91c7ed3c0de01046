/*
 * PK.RANGE's bounds as routing reads them (pk_route.h); the command itself
 * is pk_cmd_range.c.
 */
#include "core/pk_err.h"
#include "core/pk_range.h"
#include "server/pk_route.h"

int pk_cmd_pk_range_keyed(const pk_arg *a)
{
    return a->len > 0 && (a->ptr[0] == '[' || a->ptr[0] == '(');
}

/*
 * Routing sees only the bounds that name keys; the row's PK_CMD_BOUNDS
 * has it hash them without their leading "[" or "(" (with it, a key
 * without a hash tag would land in another slot).
 */
int pk_cmd_keys_pk_range(int argc, const pk_arg *argv, pk_keyrun *r)
{
    int n = 0;

    for (int i = 1; i < 3 && i < argc; i++) {
        if (pk_cmd_pk_range_keyed(&argv[i])) {
            r[n++] = (pk_keyrun){i, i, 1};
        }
    }
    return n;
}

uint32_t pk_cmd_pk_range_first(const pk_range *r, const pk_zlex *b, int rev)
{
    uint32_t id = 0;

    if (b->kind == PK_ZLEX_MIN || b->kind == PK_ZLEX_MAX) {
        pk_range_get(r, b->kind == PK_ZLEX_MIN ? 0 : pk_range_count(r) - 1, &id,
                     NULL, NULL, NULL, NULL);
    } else if (!rev || b->kind == PK_ZLEX_INCL ||
               pk_range_lookup_below(r, b->ptr, b->len, &id) != PK_OK) {
        /* (nothing is below "(": the first range answers, empty) */
        pk_range_lookup(r, b->ptr, b->len, &id);
    }
    return id;
}

/* 1 when REV is among the options (LIMIT's count skipped). */
static int has_rev(int argc, const pk_arg *argv)
{
    for (int i = 3; i < argc; i++) {
        if (pk_arg_eq(&argv[i], "limit")) {
            i++;
        } else if (pk_arg_eq(&argv[i], "rev")) {
            return 1;
        }
    }
    return 0;
}

/* A bound's key: its bytes after "[" or "(", "" for "-" and "+". */
static pk_slice bound_key(const pk_arg *a)
{
    if (pk_cmd_pk_range_keyed(a)) {
        return (pk_slice){a->ptr + 1, a->len - 1};
    }
    return (pk_slice){"", 0};
}

void pk_cmd_pk_range_span(int argc, const pk_arg *argv, pk_slice *lo,
                          pk_slice *hi)
{
    int rev = has_rev(argc, argv);

    *lo = bound_key(&argv[rev ? 2 : 1]);
    *hi = bound_key(&argv[rev ? 1 : 2]);
}

int pk_cmd_pk_range_start(const pk_cluster *cl, int argc, const pk_arg *argv)
{
    pk_zlex z;

    /* The first bound is where the read starts, REV or not. */
    if (cl->ranges == NULL ||
        pk_zlex_parse(argv[1].ptr, argv[1].len, &z) != 0) {
        return -1;
    }
    return (int)pk_cmd_pk_range_first(cl->ranges, &z, has_rev(argc, argv));
}

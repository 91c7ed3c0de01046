/* call: one-shot calls to a node for the CLI's views (see cli.h). */
#include <stdlib.h>

#include "cli/cli.h"
#include <stdio.h>

#include "core/pk_err.h"
#include "core/pk_pmap.h"
#include "proto/pk_rreply.h"
#include "server/pk_sclient.h"

#define CALL_MS 2000

int pk_cli_call(const char *addr, int argc, const char *const *argv, pk_rr **r)
{
    char host[64];
    int port, rc;
    pk_sclient *c = NULL;

    if (pk_cli_split_host_port(addr, host, sizeof(host), &port) != 0)
        return PK_EINVAL;
    rc = pk_sclient_connect(host, port, CALL_MS, &c);
    if (rc == PK_OK)
        rc = pk_sclient_call(c, argc, argv, NULL, r);
    pk_sclient_free(c);
    return rc;
}

double pk_cli_number(const pk_rr *v)
{
    if (v == NULL)
        return 0;
    if (v->type == PK_RR_INT)
        return (double)v->integer;
    if (v->type == PK_RR_DOUBLE)
        return v->dbl;
    return v->str ? atof(v->str) : 0;
}

int pk_cli_fetch_map(const char *who, const char *target, pk_pmap **m)
{
    const char *argv[] = {"PK.MAP"};
    pk_rr *r = NULL;
    int rc = pk_cli_call(target, 1, argv, &r);

    if (rc == PK_OK && r->type == PK_RR_BULK)
        rc = pk_pmap_decode((const uint8_t *)r->str, r->len, m);
    else if (rc == PK_OK)
        rc = PK_ENOTFOUND;
    pk_rr_free(r);
    if (rc != PK_OK) {
        fprintf(stderr, "%s: no map from %s: %s\n", who, target,
                pk_strerror(rc));
        return 1;
    }
    return 0;
}

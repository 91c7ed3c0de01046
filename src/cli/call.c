/* call: one-shot calls to a node for the CLI's views (see cli.h). */
#include <stdlib.h>

#include "cli/cli.h"
#include "core/pk_err.h"
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

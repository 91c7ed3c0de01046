/* tls_env: the tools' connections over TLS, from the environment
 * (pk_cli_tls_env in cli.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "server/pk_sclient.h"
#include "server/pk_tls.h"

int pk_cli_tls_env(void)
{
    static pk_tls *tls; /* for the life of the process */
    pk_tls_files f = {0};
    char err[256];

    f.ca = getenv("PARTKV_TLS_CA_CERT_FILE");
    f.cert = getenv("PARTKV_TLS_CERT_FILE");
    f.key = getenv("PARTKV_TLS_KEY_FILE");
    if (f.ca == NULL)
        return 0;
    if (pk_tls_open(&f, &tls, err, sizeof(err)) != 0) {
        fprintf(stderr, "partkv: PARTKV_TLS_*: %s\n", err);
        return -1;
    }
    pk_sclient_use_tls(tls);
    return 0;
}

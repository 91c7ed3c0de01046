/*
 * partkv proxy --cluster HOST:PORT [--port P] [--bind ADDR]: a routing
 * tier that owns nothing.  It follows the map any cluster node shows
 * (CLUSTER SLOTS) and forwards every keyed command to its owner, so a
 * plain Redis client sees one keyspace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "server/pk_server.h"

int pk_cli_proxy(int argc, char **argv)
{
    pk_server_config c;

    pk_server_config_default(&c);
    c.dir = NULL;
    c.protected_mode = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (v && strcmp(argv[i], "--cluster") == 0) {
            if (!pk_cli_host_port(v)) {
                fprintf(stderr,
                        "partkv proxy: --cluster needs HOST:PORT, "
                        "got '%s'\n",
                        v);
                return 2;
            }
            c.proxy_of = v;
        } else if (v && strcmp(argv[i], "--port") == 0) {
            long p = strtol(v, &end, 10);
            if (*v == '\0' || *end || p < 0 || p > 65535) {
                fprintf(stderr,
                        "partkv proxy: --port needs 0..65535, got "
                        "'%s'\n",
                        v);
                return 2;
            }
            c.port = (int)p;
        } else if (v && strcmp(argv[i], "--bind") == 0) {
            c.bind = v;
        } else {
            fprintf(stderr, "partkv proxy: bad or incomplete option '%s'\n",
                    argv[i]);
            return 2;
        }
    }
    if (c.proxy_of == NULL) {
        fprintf(stderr, "partkv proxy: --cluster HOST:PORT is required\n");
        return 2;
    }
    return pk_server_run(&c);
}

/*
 * partkv proxy --cluster HOST:PORT [--port P] [--bind ADDR]
 *              [--hot-key-reads N] [--hotkeys-sample RATE]
 *              [--cluster-secret S]
 *              [--tls-port P --tls-cert-file F ... [--tls-cluster yes]]: a
 * routing tier that owns nothing.  It follows the map any cluster node holds
 * (PK.MAP) and forwards every keyed command to its owner, so a plain
 * Redis client sees one keyspace; a read of a key read more than N times
 * a second (default 5000, 0: never) goes to any replica of its
 * partition, which serves it by read index (server/pk_hotread.h).  With
 * the cluster secret it checks its clients against the cluster's ACL
 * users (and writes their edits there), and its links to the nodes
 * authenticate as the nodes' own do; without it, it keeps users of its
 * own.
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
        } else if (v && strcmp(argv[i], "--cluster-secret") == 0) {
            c.cluster_secret = v;
        } else if (v && strcmp(argv[i], "--hot-key-reads") == 0) {
            unsigned long long n = strtoull(v, &end, 10);
            if (*v == '\0' || *v == '-' || *end) {
                fprintf(stderr,
                        "partkv proxy: --hot-key-reads needs a count, got "
                        "'%s'\n",
                        v);
                return 2;
            }
            c.hot_key_reads = n;
        } else if (v && strcmp(argv[i], "--hotkeys-sample") == 0) {
            double f = strtod(v, &end);
            if (*v == '\0' || *end || !(f >= 0 && f <= 1)) {
                fprintf(stderr,
                        "partkv proxy: --hotkeys-sample needs 0..1, got "
                        "'%s'\n",
                        v);
                return 2;
            }
            c.hotkeys_sample = f;
        } else {
            int t = v && strncmp(argv[i], "--", 2) == 0
                        ? pk_cli_tls_flag(argv[i] + 2, v, &c)
                        : 0;
            if (t == 1)
                continue;
            if (t == 0)
                fprintf(stderr, "partkv proxy: bad or incomplete option '%s'\n",
                        argv[i]);
            return 2;
        }
    }
    if (c.proxy_of == NULL) {
        fprintf(stderr, "partkv proxy: --cluster HOST:PORT is required\n");
        return 2;
    }
    if (pk_cli_tls_check("partkv proxy", &c) != 0)
        return 2;
    return pk_server_run(&c);
}

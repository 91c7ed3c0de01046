/*
 * partkv server: runs one node in the foreground.
 *
 *   partkv server [--port P] [--bind ADDR] [--dir D]
 *                 [--fsync always|everysec|no] [--requirepass PW]
 *                 [--protected-mode yes|no] [--proto-max-bulk-len N]
 *                 [--maxclients N] [--map-size BYTES]
 *                 [--client-output-buffer-limit 'CLASS HARD SOFT SECS ...']
 *                 [--coordinator embedded|etcd[s]://HOST:PORT[,...] |
 *                  --join HOST:PORT]
 *                 [--cluster-secret S] [--announce HOST:PORT]
 *                 [--route redirect|forward] [--announce-replicas yes|no]
 *                 [--acks leader|quorum|all] [--replace-after SECONDS]
 *                 [--split-qps N] [--split-size BYTES]
 *                 [--merge-delay SECONDS] [--hotkeys-sample RATE]
 *                 [--metrics-port P] [--hot-key-writes N]
 *                 [--hot-key-time SECONDS] [--unsalt-after SECONDS]
 *                 [--hot-key-reads N]
 *                 [--salted-incr-reply total|local] [--aclfile PATH]
 *                 [--tls-port P --tls-cert-file F --tls-key-file F
 *                  [--tls-ca-cert-file F] [--tls-auth-clients yes|no|optional]
 *                  [--tls-cluster yes|no]]
 *                 [--enable-debug-command yes|no] [--parallel-append yes|no]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/pk_err.h"
#include "server/pk_server.h"

static int bad(const char *flag, const char *val, const char *want)
{
    fprintf(stderr, "partkv server: %s %s, got '%s'\n", flag, want, val);
    return -1;
}

static int num(const char *flag, const char *s, unsigned long long lo,
               unsigned long long hi, unsigned long long *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *end || errno || v < lo || v > hi) {
        char want[96];
        snprintf(want, sizeof(want), "needs a number from %llu to %llu", lo,
                 hi);
        return bad(flag, s, want);
    }
    *out = v;
    return 0;
}

static int yes_no(const char *flag, const char *s, int *out)
{
    if (strcmp(s, "yes") != 0 && strcmp(s, "no") != 0)
        return bad(flag, s, "must be yes or no");
    *out = strcmp(s, "yes") == 0;
    return 0;
}

int pk_cli_tls_flag(const char *name, const char *val, pk_server_config *c)
{
    unsigned long long v;

    if (strcmp(name, "tls-port") == 0) {
        if (num("--tls-port", val, 0, 65535, &v) != 0)
            return -1;
        c->tls_port = (int)v;
    } else if (strcmp(name, "tls-cert-file") == 0) {
        c->tls.cert = val;
    } else if (strcmp(name, "tls-key-file") == 0) {
        c->tls.key = val;
    } else if (strcmp(name, "tls-ca-cert-file") == 0) {
        c->tls.ca = val;
    } else if (strcmp(name, "tls-auth-clients") == 0) {
        if (strcmp(val, "yes") == 0)
            c->tls.auth_clients = PK_TLS_AUTH_YES;
        else if (strcmp(val, "no") == 0)
            c->tls.auth_clients = PK_TLS_AUTH_NO;
        else if (strcmp(val, "optional") == 0)
            c->tls.auth_clients = PK_TLS_AUTH_OPTIONAL;
        else
            return bad("--tls-auth-clients", val,
                       "must be yes, no or optional");
    } else if (strcmp(name, "tls-cluster") == 0) {
        return yes_no("--tls-cluster", val, &c->tls_cluster) == 0 ? 1 : -1;
    } else {
        return 0;
    }
    return 1;
}

int pk_cli_tls_check(const char *prog, const pk_server_config *c)
{
    if (c->tls_port >= 0 && (!c->tls.cert || !c->tls.key)) {
        fprintf(stderr,
                "%s: --tls-port needs --tls-cert-file and "
                "--tls-key-file\n",
                prog);
        return -1;
    }
    if (c->tls_cluster && c->tls_port < 0) {
        fprintf(stderr, "%s: --tls-cluster yes needs --tls-port\n", prog);
        return -1;
    }
    return 0;
}

int pk_cli_is_etcd(const char *s)
{
    return (strncmp(s, "etcd://", 7) == 0 && s[7]) ||
           (strncmp(s, "etcds://", 8) == 0 && s[8]);
}

int pk_cli_host_port(const char *s)
{
    const char *colon = strrchr(s, ':');
    char *end;
    long port;

    if (colon == NULL || colon == s)
        return 0;
    port = strtol(colon + 1, &end, 10);
    return *end == '\0' && port > 0 && port <= 65535;
}

int pk_cli_split_host_port(const char *s, char *host, size_t cap, int *port)
{
    const char *colon = strrchr(s, ':');

    if (!pk_cli_host_port(s))
        return -1;
    snprintf(host, cap, "%.*s", (int)(colon - s), s);
    *port = atoi(colon + 1);
    return 0;
}

static int parse(int argc, char **argv, pk_server_config *c)
{
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'},
        {"bind", required_argument, NULL, 'b'},
        {"dir", required_argument, NULL, 'd'},
        {"fsync", required_argument, NULL, 'f'},
        {"requirepass", required_argument, NULL, 'a'},
        {"protected-mode", required_argument, NULL, 'P'},
        {"proto-max-bulk-len", required_argument, NULL, 'B'},
        {"maxclients", required_argument, NULL, 'm'},
        {"client-output-buffer-limit", required_argument, NULL, 'O'},
        {"map-size", required_argument, NULL, 'M'},
        {"coordinator", required_argument, NULL, 'C'},
        {"join", required_argument, NULL, 'J'},
        {"cluster-secret", required_argument, NULL, 'S'},
        {"announce", required_argument, NULL, 'A'},
        {"route", required_argument, NULL, 'R'},
        {"announce-replicas", required_argument, NULL, 'N'},
        {"acks", required_argument, NULL, 'k'},
        {"replace-after", required_argument, NULL, 'r'},
        {"split-qps", required_argument, NULL, 'q'},
        {"split-size", required_argument, NULL, 'z'},
        {"merge-delay", required_argument, NULL, 'g'},
        {"hotkeys-sample", required_argument, NULL, 'H'},
        {"metrics-port", required_argument, NULL, 'W'},
        {"hot-key-writes", required_argument, NULL, '0'},
        {"hot-key-time", required_argument, NULL, '1'},
        {"unsalt-after", required_argument, NULL, '2'},
        {"salted-incr-reply", required_argument, NULL, '3'},
        {"hot-key-reads", required_argument, NULL, '4'},
        {"tls-port", required_argument, NULL, '5'},
        {"tls-cert-file", required_argument, NULL, '6'},
        {"tls-key-file", required_argument, NULL, '7'},
        {"tls-ca-cert-file", required_argument, NULL, '8'},
        {"tls-auth-clients", required_argument, NULL, '9'},
        {"tls-cluster", required_argument, NULL, 'T'},
        {"enable-debug-command", required_argument, NULL, 'D'},
        {"parallel-append", required_argument, NULL, 'E'},
        {"aclfile", required_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    unsigned long long v;
    int ch, idx = 0, rc = 0;

    opterr = 0;
    optind = 1;
    while (rc == 0 && (ch = getopt_long(argc, argv, "", opts, &idx)) != -1) {
        switch (ch) {
        case 'p':
            rc = num("--port", optarg, 0, 65535, &v);
            c->port = (int)v;
            break;
        case 'b': {
            unsigned char a[16];
            c->bind = optarg;
            if (inet_pton(AF_INET, optarg, a) != 1 &&
                inet_pton(AF_INET6, optarg, a) != 1)
                rc = bad("--bind", optarg, "needs an IPv4 or IPv6 address");
            break;
        }
        case 'd':
            c->dir = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "always") == 0)
                c->fsync = PK_FSYNC_ALWAYS;
            else if (strcmp(optarg, "everysec") == 0)
                c->fsync = PK_FSYNC_EVERYSEC;
            else if (strcmp(optarg, "no") == 0)
                c->fsync = PK_FSYNC_NO;
            else
                rc = bad("--fsync", optarg, "must be always, everysec or no");
            break;
        case 'a':
            c->requirepass = *optarg ? optarg : NULL;
            break;
        case 'F':
            c->aclfile = *optarg ? optarg : NULL;
            break;
        case 'P':
            rc = yes_no("--protected-mode", optarg, &c->protected_mode);
            break;
        case 'B':
            rc = num("--proto-max-bulk-len", optarg, 1024, 1ull << 40, &v);
            c->proto_max_bulk_len = (size_t)v;
            break;
        case 'm':
            rc = num("--maxclients", optarg, 1, 1000000, &v);
            c->maxclients = (int)v;
            break;
        case 'O': {
            const char *why;
            if (pk_config_obuf_parse(optarg, strlen(optarg), c->obuf_limits,
                                     &why) != PK_OK) {
                fprintf(stderr,
                        "partkv server: --client-output-buffer-limit '%s': "
                        "%s\n",
                        optarg, why);
                rc = -1;
            }
            break;
        }
        case 'M':
            rc = num("--map-size", optarg, 1ull << 20, 1ull << 44, &v);
            c->map_size = v;
            break;
        case 'C':
            if (strcmp(optarg, "embedded") != 0 && !pk_cli_is_etcd(optarg))
                rc = bad("--coordinator", optarg,
                         "must be 'embedded' or etcd://HOST:PORT[,...] "
                         "(etcds:// for TLS)");
            c->coordinator = optarg;
            break;
        case 'J':
            c->join = optarg;
            if (!pk_cli_host_port(optarg))
                rc = bad("--join", optarg, "needs HOST:PORT");
            break;
        case 'S':
            c->cluster_secret = optarg;
            break;
        case 'R':
            if (strcmp(optarg, "forward") == 0 ||
                strcmp(optarg, "redirect") == 0)
                c->forward = strcmp(optarg, "forward") == 0;
            else
                rc = bad("--route", optarg, "must be redirect or forward");
            break;
        case 'N':
            rc = yes_no("--announce-replicas", optarg, &c->announce_replicas);
            break;
        case 'k':
            if (strcmp(optarg, "leader") == 0)
                c->acks = PK_ACKS_LEADER;
            else if (strcmp(optarg, "quorum") == 0)
                c->acks = PK_ACKS_QUORUM;
            else if (strcmp(optarg, "all") == 0)
                c->acks = PK_ACKS_ALL;
            else
                rc = bad("--acks", optarg, "must be leader, quorum or all");
            break;
        case 'r':
            rc = num("--replace-after", optarg, 0, 86400 * 365, &v);
            c->replace_after_ms = v * 1000;
            break;
        case 'q':
            rc = num("--split-qps", optarg, 0, 1000000000, &v);
            c->split_qps = v;
            break;
        case 'z':
            rc = num("--split-size", optarg, 0, 1ull << 50, &v);
            c->split_size = v;
            break;
        case 'H': {
            char *end = NULL;
            double f = strtod(optarg, &end);
            if (end == optarg || *end || !(f >= 0 && f <= 1))
                rc = bad("--hotkeys-sample", optarg,
                         "must be a fraction from 0 (off) to 1");
            else
                c->hotkeys_sample = f;
            break;
        }
        case 'W':
            rc = num("--metrics-port", optarg, 0, 65535, &v);
            c->metrics_port = (int)v;
            break;
        case 'g':
            rc = num("--merge-delay", optarg, 0, 86400 * 365, &v);
            c->merge_delay_ms = v * 1000;
            break;
        case '0':
            rc = num("--hot-key-writes", optarg, 0, 1ull << 40, &v);
            c->hot_key_writes = v;
            break;
        case '1':
            rc = num("--hot-key-time", optarg, 0, 86400, &v);
            c->hot_key_ms = v * 1000;
            break;
        case '2':
            rc = num("--unsalt-after", optarg, 0, 86400 * 365, &v);
            c->unsalt_after_ms = v * 1000;
            break;
        case '4':
            rc = num("--hot-key-reads", optarg, 0, 1ull << 40, &v);
            c->hot_key_reads = v;
            break;
        case '3':
            if (strcmp(optarg, "total") == 0 || strcmp(optarg, "local") == 0)
                c->salted_incr_local = strcmp(optarg, "local") == 0;
            else
                rc = bad("--salted-incr-reply", optarg,
                         "must be total or local");
            break;
        case '5':
        case '6':
        case '7':
        case '8':
        case '9':
        case 'T':
            rc = pk_cli_tls_flag(opts[idx].name, optarg, c) == 1 ? 0 : -1;
            break;
        case 'D':
            rc = yes_no("--enable-debug-command", optarg,
                        &c->enable_debug_command);
            break;
        case 'E':
            rc = yes_no("--parallel-append", optarg, &c->parallel_append);
            break;
        case 'A':
            c->announce = optarg;
            if (!pk_cli_host_port(optarg))
                rc = bad("--announce", optarg, "needs HOST:PORT");
            break;
        default:
            fprintf(stderr,
                    "partkv server: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            rc = -1;
        }
    }
    if (rc == 0 && c->coordinator && c->join) {
        fprintf(stderr, "partkv server: use --coordinator embedded or "
                        "--join HOST:PORT, not both\n");
        rc = -1;
    }
    if (rc == 0 && (c->coordinator || c->join) && !c->cluster_secret) {
        fprintf(stderr, "partkv server: cluster mode needs "
                        "--cluster-secret\n");
        rc = -1;
    }
    if (rc == 0 && pk_cli_tls_check("partkv server", c) != 0)
        rc = -1;
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "partkv server: unexpected argument '%s'\n",
                argv[optind]);
        rc = -1;
    }
    return rc;
}

int pk_cli_server(int argc, char **argv)
{
    pk_server_config c;
    struct stat st;

    pk_server_config_default(&c);
    if (parse(argc, argv, &c) != 0)
        return 2;
    if (stat(c.dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "partkv server: --dir '%s' is not a directory\n",
                c.dir);
        return 2;
    }
    return pk_server_run(&c);
}

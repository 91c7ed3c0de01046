/*
 * cluster_args: the flags of `partkv cluster up` (see cluster.c for what
 * they mean), and the flags it gives each node it starts.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cluster_args.h"
#include "cli/keyset.h"
#include "cli/presplit.h"
#include "cli/spawn.h"
#include "core/pk_err.h"

#define REPLACE_AFTER_MAX (86400UL * 365) /* as `partkv server` has it */

static const char *const SCHEMES[] = {"slots", "hash", "range"};

/* Sets *out to the pk_scheme named s; 0, or -1 for no such name. */
static int scheme_of(const char *s, pk_scheme *out)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(s, SCHEMES[i]) == 0) {
            *out = (pk_scheme)i;
            return 0;
        }
    }
    return -1;
}

/* The range scheme's boundaries from the --presplit flags (after the
 * other checks); -1 after a one-line message. */
static int range_args(pk_up_args *a)
{
    pk_keyset ks = {0};
    int rc;

    if (a->partitions) {
        fprintf(stderr, "partkv cluster up: the range scheme starts from "
                        "--presplit, not --partitions\n");
        return -1;
    }
    if (a->split_keys && (a->ranges || a->split_sample)) {
        fprintf(stderr, "partkv cluster up: --presplit-keys or --presplit N, "
                        "not both\n");
        return -1;
    }
    if (a->split_sample && !a->ranges) {
        fprintf(stderr, "partkv cluster up: --presplit-sample needs "
                        "--presplit N\n");
        return -1;
    }
    if (a->split_keys) {
        rc = pk_presplit_keys(a->split_keys, &a->presplit);
    } else if (a->split_sample) {
        rc = pk_keyset_load(&ks, a->split_sample);
        if (rc == PK_OK)
            rc = pk_presplit_sample(&ks, (uint32_t)a->ranges, &a->presplit);
        pk_keyset_free(&ks);
    } else {
        rc =
            pk_presplit_even(a->ranges ? (uint32_t)a->ranges : 1, &a->presplit);
    }
    if (rc != PK_OK) {
        fprintf(stderr,
                "partkv cluster up: no boundaries from --presplit%s: %s\n",
                a->split_keys     ? "-keys (empty or repeated keys?)"
                : a->split_sample ? "-sample"
                                  : "",
                pk_strerror(rc));
        return -1;
    }
    a->partitions = a->presplit.n + 1;
    return 0;
}

int pk_up_parse(int argc, char **argv, pk_up_args *a)
{
    static const struct option opts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"base-port", required_argument, NULL, 'p'},
        {"dir", required_argument, NULL, 'd'},
        {"replicas", required_argument, NULL, 'r'},
        {"coordinator", required_argument, NULL, 'c'},
        {"scheme", required_argument, NULL, 's'},
        {"secret", required_argument, NULL, 'S'},
        {"partitions", required_argument, NULL, 'P'},
        {"hash", required_argument, NULL, 'H'},
        {"route", required_argument, NULL, 'R'},
        {"announce-replicas", required_argument, NULL, 'N'},
        {"fsync", required_argument, NULL, 'f'},
        {"acks", required_argument, NULL, 'k'},
        {"replace-after", required_argument, NULL, 'A'},
        {"split-qps", required_argument, NULL, 'Q'},
        {"split-size", required_argument, NULL, 'Z'},
        {"merge-delay", required_argument, NULL, 'M'},
        {"hotkeys-sample", required_argument, NULL, 'Y'},
        {"hot-key-writes", required_argument, NULL, '0'},
        {"hot-key-time", required_argument, NULL, '1'},
        {"unsalt-after", required_argument, NULL, '2'},
        {"salted-incr-reply", required_argument, NULL, '3'},
        {"hot-key-reads", required_argument, NULL, '4'},
        {"presplit", required_argument, NULL, 'T'},
        {"presplit-keys", required_argument, NULL, 'K'},
        {"presplit-sample", required_argument, NULL, 'X'},
        {"tls", no_argument, NULL, 'L'},
        {"enable-debug-command", required_argument, NULL, 'G'},
        {"parallel-append", required_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int ch;

    memset(a, 0, sizeof(*a));
    a->nodes = 3;
    a->base_port = 7000;
    a->dir = "./data";
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        unsigned long v = optarg ? strtoul(optarg, &end, 10) : 0;
        int num_ok = optarg && *optarg && *optarg != '-' && *end == '\0';
        switch (ch) {
        case 'n':
            if (!num_ok || v < 1 || v > PK_UP_NODES_MAX)
                goto bad;
            a->nodes = v;
            break;
        case 'p':
            if (!num_ok || v > 65535 - PK_UP_NODES_MAX)
                goto bad;
            a->base_port = v;
            break;
        case 'r':
            if (!num_ok || v < 1 || v > PK_REPLICAS_MAX)
                goto bad;
            a->replicas = v;
            break;
        case 'd':
            a->dir = optarg;
            break;
        case 'c':
            if (pk_cli_is_etcd(optarg))
                a->coordinator = optarg;
            else if (strcmp(optarg, "embedded") != 0)
                goto bad;
            break;
        case 's':
            if (scheme_of(optarg, &a->scheme) != 0)
                goto bad;
            break;
        case 'K':
            a->split_keys = optarg;
            break;
        case 'Q':
        case 'Z':
        case 'M':
            if (!num_ok)
                goto bad;
            *(ch == 'Q'   ? &a->split_qps
              : ch == 'Z' ? &a->split_size
                          : &a->merge_delay) = optarg;
            break;
        case 'X':
            a->split_sample = optarg;
            break;
        case 'L':
            a->tls = 1;
            break;
        case 'G': /* checked by each node */
            a->debug = optarg;
            break;
        case 'V': /* checked by each node */
            a->parallel = optarg;
            break;
        case 'Y': /* checked by each node */
            a->hot_sample = optarg;
            break;
        case '0': /* the salting flags: checked by each node */
        case '1':
        case '2':
        case '3':
        case '4':
            a->salting[ch - '0'] = optarg;
            break;
        case 'P': /* --partitions P */
        case 'T': /* --presplit N */
            if (!num_ok || v < 1 || v > PK_PARTITIONS_MAX)
                goto bad;
            *(ch == 'P' ? &a->partitions : &a->ranges) = v;
            break;
        case 'H':
            if (pk_hash_parse(optarg, &a->hash) != PK_OK)
                goto bad;
            break;
        case 'R':
            if (strcmp(optarg, "forward") != 0 &&
                strcmp(optarg, "redirect") != 0)
                goto bad;
            a->forward = strcmp(optarg, "forward") == 0;
            break;
        case 'N':
            if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0)
                goto bad;
            a->announce_replicas = strcmp(optarg, "yes") == 0;
            break;
        case 'S':
            a->secret = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "always") != 0 &&
                strcmp(optarg, "everysec") != 0 && strcmp(optarg, "no") != 0)
                goto bad;
            a->fsync = optarg;
            break;
        case 'k':
            if (strcmp(optarg, "leader") != 0 &&
                strcmp(optarg, "quorum") != 0 && strcmp(optarg, "all") != 0) {
                fprintf(stderr,
                        "partkv cluster up: --acks must be leader, quorum "
                        "or all, got '%s'\n",
                        optarg);
                return -1;
            }
            a->acks = optarg;
            break;
        case 'A':
            if (!num_ok || v > REPLACE_AFTER_MAX) {
                fprintf(stderr,
                        "partkv cluster up: --replace-after needs a number "
                        "of seconds from 0 to %lu, got '%s'\n",
                        REPLACE_AFTER_MAX, optarg);
                return -1;
            }
            a->replace_after = optarg;
            break;
        default:
            goto bad;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "partkv cluster up: unexpected argument '%s'\n",
                argv[optind]);
        return -1;
    }
    if (a->replicas == 0)
        a->replicas = a->nodes < 3 ? a->nodes : 3;
    /* Clients cannot compute hash-mod-P partitions or ranges: nodes must
     * forward. */
    if (a->scheme != PK_SCHEME_SLOTS)
        a->forward = 1;
    if (a->replicas > a->nodes) {
        fprintf(stderr,
                "partkv cluster up: --replicas %lu needs at least "
                "as many nodes\n",
                a->replicas);
        return -1;
    }
    if (a->scheme == PK_SCHEME_RANGE)
        return range_args(a);
    if (a->ranges || a->split_keys || a->split_sample) {
        fprintf(stderr, "partkv cluster up: --presplit goes with --scheme "
                        "range\n");
        return -1;
    }
    if (a->partitions == 0)
        a->partitions = a->scheme == PK_SCHEME_HASH ? 1024 : PK_SLOTS;
    if (a->scheme == PK_SCHEME_SLOTS && a->partitions != PK_SLOTS) {
        fprintf(stderr,
                "partkv cluster up: the slots scheme has %d "
                "partitions; --partitions goes with --scheme hash\n",
                PK_SLOTS);
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "partkv cluster up: bad or incomplete option '%s'\n",
            argv[optind - 1]);
    return -1;
}

void pk_up_node_argv(const pk_up_args *a, const char *secret, unsigned long i,
                     int coord_port, pk_up_node *n)
{
    char **argv = n->argv;
    int k = 0;

    snprintf(n->port, sizeof(n->port), "%lu",
             a->base_port ? a->base_port + i : 0);
    argv[k++] = (char *)pk_self_exe();
    argv[k++] = "server";
    argv[k++] = "--port";
    argv[k++] = a->tls ? "0" : n->port;
    if (a->tls) { /* the node's port, for the cluster, is its TLS port */
        argv[k++] = "--tls-port";
        argv[k++] = n->port;
        argv[k++] = "--tls-ca-cert-file";
        argv[k++] = (char *)a->tls_files[0];
        argv[k++] = "--tls-cert-file";
        argv[k++] = (char *)a->tls_files[1];
        argv[k++] = "--tls-key-file";
        argv[k++] = (char *)a->tls_files[2];
        argv[k++] = "--tls-cluster";
        argv[k++] = "yes";
        argv[k++] = "--tls-auth-clients";
        argv[k++] = "optional";
    }
    argv[k++] = "--dir";
    argv[k++] = n->dir;
    argv[k++] = "--cluster-secret";
    argv[k++] = (char *)secret;
    if (a->forward) {
        argv[k++] = "--route";
        argv[k++] = "forward";
    }
    if (a->announce_replicas) {
        argv[k++] = "--announce-replicas";
        argv[k++] = "yes";
    }
    /* The flags every node takes as cluster up was given them. */
    const struct {
        const char *flag, *val;
    } pass[] = {{"--fsync", a->fsync},
                {"--acks", a->acks},
                {"--replace-after", a->replace_after},
                {"--split-qps", a->split_qps},
                {"--split-size", a->split_size},
                {"--merge-delay", a->merge_delay},
                {"--hotkeys-sample", a->hot_sample},
                {"--hot-key-writes", a->salting[0]},
                {"--hot-key-time", a->salting[1]},
                {"--unsalt-after", a->salting[2]},
                {"--salted-incr-reply", a->salting[3]},
                {"--hot-key-reads", a->salting[4]},
                {"--enable-debug-command", a->debug},
                {"--parallel-append", a->parallel}};
    for (size_t j = 0; j < sizeof(pass) / sizeof(pass[0]); j++)
        if (pass[j].val) {
            argv[k++] = (char *)pass[j].flag;
            argv[k++] = (char *)pass[j].val;
        }
    if (a->coordinator) { /* every node reaches etcd itself */
        argv[k++] = "--coordinator";
        argv[k++] = (char *)a->coordinator;
    } else if (i == 0) {
        argv[k++] = "--coordinator";
        argv[k++] = "embedded";
    } else {
        snprintf(n->join, sizeof(n->join), "127.0.0.1:%d", coord_port);
        argv[k++] = "--join";
        argv[k++] = n->join;
    }
    argv[k] = NULL;
}

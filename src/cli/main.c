/*
 * partkv: the one binary.  main() only dispatches to a subcommand; each
 * subcommand lives in its own file and returns an exit status (0 ok,
 * 1 failure, 2 usage error).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: partkv <command> [options]\n"
            "\n"
            "commands:\n"
            "  server [options]         run one node (see README)\n"
            "  cluster up [options]     run a local cluster\n"
            "  cluster status|map|nodes --cluster HOST:PORT [--json]\n"
            "  proxy --cluster HOST:PORT [--port P]  one keyspace\n"
            "  node drain|remove ID --cluster HOST:PORT\n"
            "  node weight ID W --cluster HOST:PORT\n"
            "                           edit membership (ID: node id, a\n"
            "                           prefix of >= 6 chars, or host:port)\n"
            "  rebalance plan --cluster HOST:PORT [--policy balanced|\n"
            "                 cheapest|ring|rendezvous] [--rate R]\n"
            "                 [--max-concurrent K]\n"
            "                 [--json]  preview and store a plan\n"
            "  rebalance apply ID --cluster HOST:PORT [--rate R]\n"
            "                 [--max-concurrent K] [--yes]  run a plan\n"
            "  rebalance pause|resume|cancel|status --cluster HOST:PORT\n"
            "                           (status also takes --json)\n"
            "                           rates: 50MB/s, 10KB, 1GB/s, bytes,\n"
            "                           0 or unlimited; 1 MB = 1000000 B\n"
            "                           secret: --secret S, $PARTKV_SECRET\n"
            "                           or DIR/secret (--dir, ./data)\n"
            "  range list --cluster HOST:PORT [--json]\n"
            "                           the ranges of a range-scheme\n"
            "                           cluster: bounds, leader, keys,\n"
            "                           bytes, reads/s and writes/s\n"
            "  range split|merge|unsplit KEY --cluster HOST:PORT\n"
            "                           split a range there, merge it\n"
            "                           with its right neighbour, clear\n"
            "                           a split's stickiness\n"
            "  top --cluster HOST:PORT [--interval S] [--once] [--json]\n"
            "                           live view: nodes, partition heat,\n"
            "                           hot keys, moves\n"
            "  sim reference            run the reference experiments\n"
            "  sim compare [options]    compare placements on your keys\n"
            "  help                     this text\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "proxy") != 0 &&
        pk_cli_tls_env() != 0)
        return 2;
    if (strcmp(argv[1], "sim") == 0)
        return pk_cli_sim(argc - 1, argv + 1);
    if (strcmp(argv[1], "server") == 0)
        return pk_cli_server(argc - 1, argv + 1);
    if (strcmp(argv[1], "cluster") == 0)
        return pk_cli_cluster(argc - 1, argv + 1);
    if (strcmp(argv[1], "proxy") == 0)
        return pk_cli_proxy(argc - 1, argv + 1);
    if (strcmp(argv[1], "node") == 0)
        return pk_cli_node(argc - 1, argv + 1);
    if (strcmp(argv[1], "rebalance") == 0)
        return pk_cli_rebalance(argc - 1, argv + 1);
    if (strcmp(argv[1], "range") == 0)
        return pk_cli_range(argc - 1, argv + 1);
    if (strcmp(argv[1], "top") == 0)
        return pk_cli_top(argc - 1, argv + 1);
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "partkv: unknown command '%s' (try 'partkv help')\n",
            argv[1]);
    return 2;
}

#include "cli/cli.h"
int pk_cli_sim(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 1;
}

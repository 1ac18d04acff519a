/* gpuq simulate: placeholder until its module lands. */
#include <stdio.h>

#include "cmd/cmd.h"

int cmd_simulate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "gpuq simulate: not built yet\n");
	return 1;
}

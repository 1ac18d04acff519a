/* gpuq store: placeholder until its module lands. */
#include <stdio.h>

#include "cmd/cmd.h"

int cmd_store(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "gpuq store: not built yet\n");
	return 1;
}

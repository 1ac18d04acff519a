/* gpuq serve: placeholder until its module lands. */
#include <stdio.h>

#include "cmd/cmd.h"

int cmd_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "gpuq serve: not built yet\n");
	return 1;
}

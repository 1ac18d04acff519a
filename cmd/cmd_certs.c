/* gpuq certs: placeholder until its module lands. */
#include <stdio.h>

#include "cmd/cmd.h"

int cmd_certs(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "gpuq certs: not built yet\n");
	return 1;
}

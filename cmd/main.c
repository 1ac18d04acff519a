/* gpuq: the single binary; dispatches to subcommands. */
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cmd/cmd.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"serve", cmd_serve, "run the TLS admission webhook"},
    {"certs", cmd_certs, "make a CA and a serving certificate"},
    {"simulate", cmd_simulate, "replay a workload trace through the queueing core"},
    {"store", cmd_store, "check or dump a state store"},
    {"report", cmd_report, "GPU-hours and cost from a state store (report usage)"},
    {"status", cmd_status, "show the queues and why each workload waits (from the apiserver)"},
    {"policy", cmd_policy, "check policy manifests without serving (gpuq policy check)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: gpuq COMMAND [OPTIONS]\n\n"
		     "gpuq is a multi-tenant GPU quota and queueing admission webhook for\n"
		     "Kubernetes. Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun `gpuq COMMAND --help` for a command's options.\n");
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
	/* Blocks of 128 KiB and more come from mmap, always: glibc otherwise
	 * raises that threshold (up to 32 MiB) after the first such block is
	 * freed, and an array as large as the queue then grows by copying in
	 * the heap, the old and the new copy both resident, not by mremap. */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "gpuq: unknown command \"%s\"\n\n", argv[1]);
	usage(stderr);
	return 2;
}

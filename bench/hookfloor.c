/*
 * hookfloor: gpuq's webhook server with no review behind it, for
 * bench_webhook.sh. The same http/ server `gpuq serve` runs (libmicrohttpd,
 * GnuTLS, its connection guards, body collection and metrics), with a post
 * hook that answers every POST with a fixed body read from a file (gpuq's
 * own answer to the bench fixture). Measured beside nginx and `gpuq serve`,
 * it splits gpuq's cost per request into the transport's (this) and the
 * review's (gpuq serve minus this).
 *
 *   hookfloor --port P --cert-dir D --body FILE [--threads N]
 *
 * Runs until SIGTERM or SIGINT. --threads defaults to what `gpuq serve`
 * takes (the online CPUs, at least 2). Exit: 0 stopped, 1 could not run,
 * 2 usage.
 * Build: cc -std=c11 -D_GNU_SOURCE -O2 -I. bench/hookfloor.c
 *        build/release/libgpuq.a $(pkg-config --libs ...) -lpthread -lm
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "http/http.h"
#include "slurp.h"

/* The fixed answer. */
typedef struct {
	char *body; /* malloc'd (NUL-terminated) */
	size_t len; /* bytes in body */
} floor_answer_t;

static void answer(void *ctx, const http_post_t *rq)
{
	const floor_answer_t *a = ctx;

	http_post_reply(rq, 200, "application/json", a->body, a->len, true);
}

static int usage(void)
{
	fprintf(stderr, "usage: hookfloor --port P --cert-dir D --body FILE [--threads N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *cert_dir = NULL, *body = NULL;
	long port = 0, threads = sysconf(_SC_NPROCESSORS_ONLN);
	floor_answer_t a = {NULL, 0};
	http_server_config_t cfg;
	http_server_t *srv;
	gpuq_diag_t diag = {{0}};
	sigset_t set;
	int sig;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--port"))
			port = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--cert-dir"))
			cert_dir = argv[i + 1];
		else if (!strcmp(argv[i], "--body"))
			body = argv[i + 1];
		else if (!strcmp(argv[i], "--threads"))
			threads = strtol(argv[i + 1], NULL, 10);
		else
			return usage();
	}
	if (argc % 2 == 0 || port < 1 || port > 65535 || !cert_dir || !body)
		return usage();
	if (threads < 2)
		threads = 2;
	if (threads > HTTP_THREADS_MAX)
		threads = HTTP_THREADS_MAX;
	a.body = bench_slurp("hookfloor", body, &a.len);
	memset(&cfg, 0, sizeof cfg);
	cfg.listen = "127.0.0.1";
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)port;
	cfg.cert_dir = cert_dir;
	cfg.threads = (unsigned)threads;
	cfg.poll_ms = HTTP_POLL_MS_DEFAULT;
	cfg.body_budget = HTTP_BODY_BUDGET_DEFAULT;
	/* Signals go to sigwait below, not to the server's threads. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (http_server_create(&cfg, &srv, &diag)) {
		fprintf(stderr, "hookfloor: %s\n", diag.msg);
		return 1;
	}
	http_server_post_set(srv, answer, &a);
	if (http_server_start(srv, &diag)) {
		fprintf(stderr, "hookfloor: %s\n", diag.msg);
		http_server_destroy(srv);
		return 1;
	}
	sigwait(&set, &sig);
	http_server_stop(srv, 1000);
	http_server_destroy(srv);
	free(a.body);
	return 0;
}

/* gpuq serve: run the HTTPS admission webhook until SIGTERM or SIGINT.
 *
 * Signals are blocked in every thread before any starts, and this thread
 * takes them synchronously with sigwait(): SIGHUP reloads the policy, SIGTERM
 * and SIGINT stop gracefully. No code runs in a signal handler. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "webhook/webhook.h"

int cmd_serve(int argc, char **argv)
{
	webhook_serve_opts_t opts;
	webhook_server_t *srv = NULL;
	gpuq_diag_t diag = {{0}};
	sigset_t sigs;
	int rc, sig;

	rc = webhook_serve_opts_parse(argc, argv, &opts, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		return 2;
	}
	if (opts.help) {
		fputs(webhook_serve_usage(), stdout);
		return 0;
	}
	gpuq_log_set_level(opts.log_level);
	rc = webhook_serve_opts_check(&opts, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		return 2;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL)) {
		fprintf(stderr, "gpuq serve: cannot block signals\n");
		return 1;
	}
	rc = webhook_server_create(&opts, &srv, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		return 1;
	}
	rc = webhook_server_start(srv, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		webhook_server_destroy(srv);
		return 1;
	}
	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGHUP) {
			gpuq_log(GPUQ_LOG_INFO, "serve", "SIGHUP: reloading the policy");
			webhook_server_policy_reload(srv);
			continue;
		}
		gpuq_log(GPUQ_LOG_INFO, "serve", "%s: stopping",
			 sig == SIGINT ? "SIGINT" : "SIGTERM");
		break;
	}
	webhook_server_stop(srv, WEBHOOK_DRAIN_MS_DEFAULT);
	webhook_server_destroy(srv);
	gpuq_log(GPUQ_LOG_INFO, "serve", "stopped");
	return 0;
}

/* gpuq serve: run the HTTPS admission webhook until SIGTERM or SIGINT.
 *
 * Signals are blocked in every thread before any starts, and this thread
 * takes them synchronously with sigwait(): SIGHUP reloads the policy, SIGTERM
 * and SIGINT stop gracefully. No code runs in a signal handler. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "cmd/cmd.h"
#include "controller/controller.h"
#include "kube/kube.h"
#include "webhook/webhook.h"

/* The controller beside the server, when the policy comes from a cluster. */
static int start_controller(const webhook_serve_opts_t *opts, webhook_server_t *srv,
			    kube_config_t **cfg, controller_t **ctl, gpuq_diag_t *diag)
{
	controller_opts_t co;
	int rc;

	rc = opts->source == WEBHOOK_SOURCE_KUBECONFIG
		 ? kube_config_load(opts->kubeconfig, cfg, diag)
		 : kube_config_in_cluster(NULL, cfg, diag);
	if (rc)
		return rc;
	controller_opts_default(&co);
	co.kube = *cfg;
	co.client.qps = opts->qps;
	co.client.burst = opts->burst;
	co.state_dir = opts->state_dir;
	co.server = srv;
	co.review_cfg.gpu_resources = opts->gpu_resources;
	co.review_cfg.n_gpu_resources = opts->n_gpu_resources;
	co.review_cfg.controller_user = opts->controller_user;
	co.leader_elect = opts->leader_elect;
	co.lease_namespace = opts->lease_namespace;
	co.lease_name = opts->lease_name;
	co.identity = opts->identity;
	co.core.fair_sharing = opts->fair_sharing;
	co.core.ready_timeout_ms = opts->ready_timeout_ms;
	co.core.backoff_base_ms = opts->requeue_backoff_ms;
	if (co.core.backoff_max_ms < co.core.backoff_base_ms)
		co.core.backoff_max_ms = co.core.backoff_base_ms;
	rc = controller_create(&co, ctl, diag);
	if (!rc)
		rc = controller_start(*ctl, diag);
	return rc;
}

int cmd_serve(int argc, char **argv)
{
	webhook_serve_opts_t opts;
	webhook_server_t *srv = NULL;
	controller_t *ctl = NULL;
	kube_config_t *kcfg = NULL;
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
	if (!rc && opts.source != WEBHOOK_SOURCE_DIR)
		rc = start_controller(&opts, srv, &kcfg, &ctl, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		controller_destroy(ctl);
		webhook_server_destroy(srv);
		kube_config_destroy(kcfg);
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
	controller_destroy(ctl); /* gives the Lease up first */
	webhook_server_stop(srv, WEBHOOK_DRAIN_MS_DEFAULT);
	webhook_server_destroy(srv);
	kube_config_destroy(kcfg);
	gpuq_log(GPUQ_LOG_INFO, "serve", "stopped");
	return 0;
}

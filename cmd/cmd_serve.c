/* gpuq serve: run the HTTPS server (admission, metrics, the web view) and,
 * with a cluster, the controller, until SIGTERM or SIGINT.
 *
 * Signals are blocked in every thread before any starts, and this thread
 * takes them synchronously with sigwait(): SIGHUP reloads the policy, SIGTERM
 * and SIGINT stop gracefully. No code runs in a signal handler. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "certkeeper/certkeeper.h"
#include "certs/certs.h"
#include "cmd/cmd.h"
#include "controller/controller.h"
#include "dcgm/dcgm.h"
#include "engine/engine.h"
#include "kube/kube.h"
#include "cmd/serve_opts.h"
#include "http/http.h"
#include "webhook/webhook.h"
#include "webui/webui.h"

/* The cluster a cluster source names. */
static int load_kube(const cmd_serve_opts_t *opts, kube_config_t **cfg, gpuq_diag_t *diag)
{
	return opts->source == CMD_SERVE_SOURCE_KUBECONFIG
		   ? kube_config_load(opts->kubeconfig, cfg, diag)
		   : kube_config_in_cluster(NULL, cfg, diag);
}

/* From a cluster: gpuq's own username, when --controller-user does not
 * name it, is the one the apiserver gives it (a SelfSubjectReview: in a Pod
 * its ServiceAccount, out of cluster the kubeconfig's user; a wrong one
 * made gpuq's webhook refuse gpuq's own release patches); and the Lease's
 * namespace (also the usage checkpoints') must exist: gpuq does not create
 * namespaces, and without it no replica would ever lead. user[0..cap) holds
 * the name learned (opts->controller_user then points to it). */
static int cluster_identity(cmd_serve_opts_t *opts, const kube_config_t *cfg, char *user,
			    size_t cap, gpuq_diag_t *diag)
{
	kube_client_t *c = NULL;
	int rc = kube_client_create(cfg, NULL, &c, diag);

	if (!rc && !opts->controller_user_set) {
		rc = kube_self_user(c, user, cap, diag);
		if (rc) {
			gpuq_diag_prefix(diag,
					 "cannot learn gpuq's own username from the apiserver "
					 "(give --controller-user): ");
		} else {
			opts->controller_user = user;
			gpuq_log(GPUQ_LOG_INFO, "serve",
				 "gpuq's own user, as the apiserver says (SelfSubjectReview): %s",
				 user);
		}
	}
	if (!rc) {
		rc = kube_namespace_check(c, opts->lease_namespace, diag);
		if (rc == GPUQ_ENOTFOUND)
			gpuq_diag_prefix(diag,
					 "--lease-namespace %s: create it (gpuq does not) or "
					 "name another: ",
					 opts->lease_namespace);
	}
	kube_client_destroy(c);
	return rc;
}

/* A comma-separated --cert-dns/--cert-ip list into names[] (split in buf). */
static int split_list(const char *flag, const char *list, char *buf, size_t cap, const char **names,
		      size_t *n, gpuq_diag_t *diag)
{
	*n = 0;
	if (!list)
		return GPUQ_OK;
	if (gpuq_strlcpy(buf, list, cap))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: list too long", flag);
	return certs_names_split(flag, buf, names, n, diag);
}

/* What the cert keeper borrows while it runs (lives in cmd_serve's frame). */
typedef struct {
	char dns_buf[4096], ip_buf[4096], def_dns[128];
	const char *dns[CERTS_SAN_MAX], *ips[CERTS_SAN_MAX];
	certkeeper_opts_t ko;
} keeper_args_t;

/* The serving certificate kept in a Secret (--cert-secret), before the
 * server reads --cert-dir. */
static int start_certkeeper(const cmd_serve_opts_t *opts, const kube_config_t *cfg,
			    keeper_args_t *a, certkeeper_t **out, gpuq_diag_t *diag)
{
	certkeeper_opts_t ko;
	const char **dns = a->dns, **ips = a->ips;
	certs_serving_spec_t spec;
	kube_client_opts_t co;
	int rc;

	certkeeper_opts_default(&ko);
	ko.namespace_ = opts->cert_secret_ns;
	ko.name = opts->cert_secret_name;
	ko.cert_dir = opts->cert_dir;
	ko.webhook_config = opts->webhook_config;
	rc = split_list("--cert-dns", opts->cert_dns, a->dns_buf, sizeof(a->dns_buf), dns,
			&ko.n_dns, diag);
	if (!rc)
		rc = split_list("--cert-ip", opts->cert_ip, a->ip_buf, sizeof(a->ip_buf), ips,
				&ko.n_ips, diag);
	if (rc)
		return rc;
	if (!opts->cert_dns && !opts->cert_ip) {
		snprintf(a->def_dns, sizeof(a->def_dns), "gpuq-webhook.%s.svc",
			 opts->cert_secret_ns);
		dns[0] = a->def_dns;
		ko.n_dns = 1;
	}
	ko.dns = dns;
	ko.ips = ips;
	spec = (certs_serving_spec_t){dns, ko.n_dns, ips, ko.n_ips, ko.days};
	rc = certs_serving_spec_check(&spec, diag);
	if (rc) {
		gpuq_diag_prefix(diag, "--cert-dns/--cert-ip: ");
		return rc;
	}
	kube_client_opts_default(&co);
	a->ko = ko;
	return certkeeper_start(cfg, &co, &a->ko, out, diag);
}

/* Liveness: what /healthz says, set once by a part that gave up (the
 * controller whose store kept failing); read by the server's threads. */
typedef struct {
	atomic_bool failed;	       /* why holds the reason (written before it is set) */
	char why[GPUQ_DIAG_MAX + 256]; /* "not alive: ...\n" */
} serve_health_t;

static const char *health_why(void *ctx)
{
	serve_health_t *h = ctx;

	return atomic_load(&h->failed) ? h->why : NULL;
}

/* The controller gave up leading for good: /healthz fails from now on. */
static void health_give_up(void *ctx, const char *why)
{
	serve_health_t *h = ctx;

	if (atomic_load(&h->failed))
		return;
	snprintf(h->why, sizeof(h->why), "not alive: the controller gave up: %s\n", why);
	atomic_store(&h->failed, true);
}

/* The controller beside the server, when the policy comes from a cluster. */
static int start_controller(const cmd_serve_opts_t *opts, http_server_t *srv,
			    webhook_admission_t *adm, webui_t *ui, const kube_config_t *cfg,
			    dcgm_scraper_t *dcgm, serve_health_t *health, controller_t **ctl,
			    gpuq_diag_t *diag)
{
	controller_opts_t co;
	int rc;

	controller_opts_default(&co);
	co.give_up = health_give_up;
	co.give_up_ctx = health;
	co.kube = cfg;
	co.client.qps = opts->qps;
	co.client.burst = opts->burst;
	co.state_dir = opts->state_dir;
	co.adm = adm;
	co.metrics = http_server_metrics(srv);
	co.ui = ui;
	co.review_cfg.gpu_resources = opts->gpu_resources;
	co.review_cfg.n_gpu_resources = opts->n_gpu_resources;
	co.review_cfg.controller_user = opts->controller_user;
	co.review_cfg.creators = opts->child_creators;
	co.review_cfg.n_creators = opts->n_child_creators;
	co.leader_elect = opts->leader_elect;
	co.lease_namespace = opts->lease_namespace;
	co.lease_name = opts->lease_name;
	co.identity = opts->identity;
	if (dcgm) { /* idle GPU time per LocalQueue too */
		co.pod_queues = dcgm_pod_queues_set;
		co.pod_queues_ctx = dcgm;
		co.workload_utils = dcgm_workload_utils; /* idle reclaim */
		co.workload_utils_ctx = dcgm;
		co.core.idle_fresh_ms = dcgm_fresh_ms(opts->dcgm_interval_ms);
	}
	co.core.fair_sharing = opts->fair_sharing;
	co.core.ready_timeout_ms = opts->ready_timeout_ms;
	co.core.backoff_base_ms = opts->requeue_backoff_ms;
	if (opts->usage_half_life_ms > 0)
		co.core.tenant_half_life_ms = opts->usage_half_life_ms;
	if (opts->usage_sampling_ms > 0)
		co.core.tenant_sample_ms = opts->usage_sampling_ms;
	co.usage_checkpoint_ms = opts->usage_checkpoint_ms;
	if (co.core.backoff_max_ms < co.core.backoff_base_ms)
		co.core.backoff_max_ms = co.core.backoff_base_ms;
	rc = controller_create(&co, ctl, diag);
	if (!rc)
		rc = controller_start(*ctl, diag);
	return rc;
}

/* Idle GPU time (--dcgm-url): its own scraping thread, its families on
 * the server's /metrics. */
static int start_dcgm(const cmd_serve_opts_t *opts, http_server_t *srv, dcgm_scraper_t **out,
		      gpuq_diag_t *diag)
{
	dcgm_opts_t o;

	dcgm_opts_default(&o);
	o.url = opts->dcgm_url;
	o.interval_ms = opts->dcgm_interval_ms;
	o.threshold_pct = opts->idle_threshold_pct;
	o.metrics = http_server_metrics(srv);
	return dcgm_scraper_start(&o, out, diag);
}

/* Offline (--policy-dir) there is no controller: the web view shows the
 * policy's queues and quotas (no workloads) as the policy was at start. */
static void ui_offline(webui_t *ui, const char *dir)
{
	policy_t *p = NULL;
	queue_t *q = NULL;
	gpuq_diag_t diag = {{0}};

	if (policy_load_dir(dir, NULL, &p, &diag) == GPUQ_OK &&
	    engine_core_build(p, NULL, &q, &diag) == GPUQ_OK) {
		webui_leader_set(ui, true);
		if (webui_prices_from_policy(ui, p) || webui_publish_fixed(ui, q, kube_now_ms()))
			gpuq_log(GPUQ_LOG_WARN, "serve", "web UI: out of memory");
	} else {
		gpuq_log(GPUQ_LOG_WARN, "serve", "web UI: no queues to show: %s", diag.msg);
	}
	queue_destroy(q);
	policy_unref(p);
}

/* The web view (--ui true) and the visibility API (--visibility, a
 * cluster source) on srv's routes, before the server starts. */
static int start_ui(const cmd_serve_opts_t *opts, http_server_t *srv, const kube_config_t *kcfg,
		    webui_t **ui, gpuq_diag_t *diag)
{
	bool vis = opts->visibility && opts->source != CMD_SERVE_SOURCE_DIR;
	int rc =
	    webui_create(opts->ui_auth_none ? WEBUI_AUTH_NONE : WEBUI_AUTH_REVIEW, kcfg, ui, diag);

	if (!rc) {
		webui_routes_set(*ui, opts->ui, vis);
		webui_idle_set(*ui, opts->ui_idle_ms);
		webui_attach(*ui, srv);
	}
	return rc;
}

/* SIGTERM's grace: /readyz answers 503 while reviews are served as before,
 * for grace_ms or until SIGTERM, SIGINT (or SIGHUP's reload) says otherwise:
 * a second SIGTERM or a SIGINT ends it at once. */
static void grace(http_server_t *srv, webhook_admission_t *adm, const sigset_t *sigs,
		  int64_t grace_ms)
{
	int64_t end = gpuq_mono_ms() + grace_ms;

	if (grace_ms <= 0)
		return;
	http_server_unready(srv);
	for (;;) {
		int64_t ms = end - gpuq_mono_ms();
		struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
		int sig;

		if (ms <= 0)
			return;
		sig = sigtimedwait(sigs, NULL, &left);
		if (sig == SIGHUP) {
			webhook_admission_policy_reload(adm);
			continue;
		}
		if (sig == SIGTERM || sig == SIGINT) {
			gpuq_log(GPUQ_LOG_INFO, "serve", "%s: grace cut short",
				 sig == SIGINT ? "SIGINT" : "SIGTERM");
			return;
		}
		if (sig < 0 && errno == EAGAIN)
			return;
	}
}

/* What gpuq serve runs: the process state, owned by cmd_serve's frame. */
typedef struct {
	cmd_serve_opts_t opts;			/* the flags */
	http_server_config_t hcfg;		/* the server's part of them */
	webhook_config_t review_cfg;		/* admission's part */
	kube_config_t *kcfg;			/* the cluster (a cluster source only) */
	keeper_args_t kargs;			/* what the cert keeper borrows */
	certkeeper_t *keeper;			/* --cert-secret, or NULL */
	http_server_t *srv;			/* the HTTPS server */
	webhook_admission_t *adm;		/* admission on it */
	webui_t *ui;				/* --ui, or NULL */
	dcgm_scraper_t *dcgm;			/* --dcgm-url, or NULL */
	controller_t *ctl;			/* a cluster source's controller, or NULL */
	serve_health_t health;			/* /healthz */
	char self_user[CMD_SERVE_NAME_MAX + 1]; /* gpuq's own username, when learned */
} serve_t;

/* Start every part, in order: each finds the ones it needs running. */
static int serve_start(serve_t *s, gpuq_diag_t *diag)
{
	const cmd_serve_opts_t *o = &s->opts;
	int rc = GPUQ_OK;

	if (o->source != CMD_SERVE_SOURCE_DIR)
		rc = load_kube(o, &s->kcfg, diag);
	if (!rc && o->source != CMD_SERVE_SOURCE_DIR)
		rc = cluster_identity(&s->opts, s->kcfg, s->self_user, sizeof(s->self_user), diag);
	if (!rc && o->cert_secret_name)
		rc = start_certkeeper(o, s->kcfg, &s->kargs, &s->keeper, diag);
	cmd_serve_http_config(o, &s->hcfg);
	s->review_cfg = cmd_serve_review_config(o);
	if (!rc)
		rc = http_server_create(&s->hcfg, &s->srv, diag);
	if (!rc)
		http_server_health_set(s->srv, health_why, &s->health);
	if (!rc)
		rc = webhook_admission_create(s->srv, o->policy_dir, &s->review_cfg, &s->adm, diag);
	if (!rc && (o->ui || (o->visibility && o->source != CMD_SERVE_SOURCE_DIR)))
		rc = start_ui(o, s->srv, s->kcfg, &s->ui, diag);
	if (!rc)
		rc = http_server_start(s->srv, diag);
	if (!rc && o->source != CMD_SERVE_SOURCE_DIR && !o->internal_listen)
		gpuq_log(GPUQ_LOG_WARN, "serve",
			 "/metrics and the APIs are served on --listen, the port the apiserver "
			 "must reach: their series name every tenant's namespaces and queues; "
			 "give --internal-listen to serve them on a port of their own");
	if (!rc && o->dcgm_url)
		rc = start_dcgm(o, s->srv, &s->dcgm, diag);
	if (!rc && o->source != CMD_SERVE_SOURCE_DIR)
		rc = start_controller(o, s->srv, s->adm, s->ui, s->kcfg, s->dcgm, &s->health,
				      &s->ctl, diag);
	else if (!rc && s->ui)
		ui_offline(s->ui, o->policy_dir);
	return rc;
}

/* Stop and free every part that started, in the reverse order: requests in
 * flight get drain_ms to finish. */
static void serve_stop(serve_t *s, unsigned drain_ms)
{
	controller_destroy(s->ctl); /* gives the Lease up first */
	dcgm_scraper_stop(s->dcgm);
	if (s->srv)
		http_server_stop(s->srv, drain_ms);
	webhook_admission_destroy(s->adm); /* after the stop: no review runs any more */
	http_server_destroy(s->srv);
	webui_destroy(s->ui); /* after the server: no request reads it any more */
	certkeeper_stop(s->keeper);
	kube_config_destroy(s->kcfg);
}

int cmd_serve(int argc, char **argv)
{
	serve_t s; /* about 10 KiB: the flags, the keeper's lists */
	gpuq_diag_t diag = {{0}};
	sigset_t sigs;
	int rc, sig;

	memset(&s, 0, sizeof(s));
	rc = cmd_serve_opts_parse(argc, argv, &s.opts, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		return 2;
	}
	if (s.opts.help) {
		fputs(cmd_serve_usage(), stdout);
		return 0;
	}
	gpuq_log_set_level(s.opts.log_level);
	rc = cmd_serve_opts_check(&s.opts, &diag);
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
	rc = serve_start(&s, &diag);
	if (rc) {
		fprintf(stderr, "gpuq serve: %s\n", diag.msg);
		serve_stop(&s, 0);
		return 1;
	}
	for (;;) {
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGHUP) {
			gpuq_log(GPUQ_LOG_INFO, "serve", "SIGHUP: reloading the policy");
			webhook_admission_policy_reload(s.adm);
			continue;
		}
		gpuq_log(GPUQ_LOG_INFO, "serve", "%s: stopping",
			 sig == SIGINT ? "SIGINT" : "SIGTERM");
		if (sig == SIGTERM)
			grace(s.srv, s.adm, &sigs, s.opts.shutdown_grace_ms);
		break;
	}
	serve_stop(&s, HTTP_DRAIN_MS_DEFAULT);
	gpuq_log(GPUQ_LOG_INFO, "serve", "stopped");
	return 0;
}

/*
 * cmd/serve_opts.h: the flags of `gpuq serve` (cmd/serve_opts.c), parsed
 * and checked into one struct that cmd_serve.c hands out piece by piece:
 * the HTTP server's config (cmd_serve_http_config), admission's policy
 * source and review config, the controller's, the web view's and DCGM's
 * options.
 *
 * The design decision that matters: parsing is pure (no I/O, no
 * environment: what the defaults come from is an argument), so every flag,
 * default and refusal is table-tested without a process; the file system is
 * looked at once, afterwards (cmd_serve_opts_check). Every refusal names the
 * flag (or the environment variable) and the value.
 */
#ifndef GPUQ_CMD_SERVE_OPTS_H
#define GPUQ_CMD_SERVE_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "dcgm/dcgm.h"
#include "http/http.h"
#include "webhook/webhook.h"

/* Caps of the command line. */
#define CMD_SERVE_GPU_RESOURCES_MAX 32 /* --gpu-resource flags */
#define CMD_SERVE_NAME_MAX 253	       /* a resource or user name (a DNS subdomain's length) */
#define CMD_SERVE_CHILD_CREATORS_MAX                                                               \
	32 /* --child-creator flags (at most                                                       \
	      WEBHOOK_CREATORS_MAX for one kind) */

/* Where the policy comes from: exactly one source. */
typedef enum {
	CMD_SERVE_SOURCE_DIR = 0,	 /* --policy-dir: manifests on disk (offline mode) */
	CMD_SERVE_SOURCE_KUBECONFIG = 1, /* --kubeconfig: the cluster a kubeconfig names */
	CMD_SERVE_SOURCE_IN_CLUSTER = 2, /* neither flag, KUBERNETES_SERVICE_HOST set: the
					  cluster gpuq runs in (its service account) */
} cmd_serve_source_t;

/* Defaults of the cluster flags. */
#define CMD_SERVE_LEASE_NAMESPACE_DEFAULT "gpuq-system" /* without $POD_NAMESPACE */
#define CMD_SERVE_LEASE_NAME_DEFAULT "gpuq-controller"
#define CMD_SERVE_QPS_DEFAULT 50.0 /* apiserver requests per second, sustained */
#define CMD_SERVE_READY_TIMEOUT_MS_DEFAULT (30LL * 60 * 1000) /* Kueue's waitForPodsReady */
#define CMD_SERVE_REQUEUE_BACKOFF_MS_DEFAULT (60LL * 1000)
#define CMD_SERVE_DURATION_FLAG_MAX_MS (7LL * 86400 * 1000) /* duration flags: at most 7 days */
#define CMD_SERVE_UI_IDLE_MAX_MS (3600LL * 1000)	    /* --ui-idle: at most 1 h */
/* --usage-half-life-time and --usage-sampling-interval: at most a year
 * (Kueue's examples use a week; months of memory are plausible, years not) */
#define CMD_SERVE_USAGE_FLAG_MAX_MS (365LL * 86400 * 1000)
/* --usage-checkpoint-interval: how often the leader checkpoints its usage
 * ledger to ConfigMaps (a failover loses at most about this much) */
#define CMD_SERVE_USAGE_CHECKPOINT_MS_DEFAULT (60LL * 1000)
#define CMD_SERVE_QPS_MAX 10000.0 /* --qps above this is refused (a typo, not a plan) */
#define CMD_SERVE_BURST_DEFAULT 100u
#define CMD_SERVE_BURST_MAX 100000u
/* What the cluster flags default from, as the process environment has it.
 * Each member NULL (or "") when unset. */
typedef struct {
	const char *pod_namespace; /* $POD_NAMESPACE (the downward API): --lease-namespace */
	const char *pod_name;	   /* $POD_NAME: --identity */
	const char *hostname;	   /* gethostname(): --identity without $POD_NAME */
	const char *service_host;  /* $KUBERNETES_SERVICE_HOST: set in every Pod; with
				      neither --policy-dir nor --kubeconfig, in-cluster */
} cmd_serve_env_t;

/* What `gpuq serve` was asked to do. Strings point into argv, into the
 * environment's strings, or are static: valid as long as those. */
typedef struct {
	const char *listen;		   /* --listen HOST:PORT as given */
	char host[CMD_SERVE_NAME_MAX + 1]; /* HOST part ("" = every address); [v6] brackets
					    stripped */
	uint16_t port;			   /* PORT part, 1..65535 */
	const char *internal_listen;	   /* --internal-listen HOST:PORT as given, or NULL:
					      /metrics and the web view on --listen */
	char internal_host[CMD_SERVE_NAME_MAX + 1]; /* its HOST part, as host */
	uint16_t internal_port;			    /* its PORT part (not --listen's) */
	const char *cert_dir;	   /* --cert-dir: holds tls.crt and tls.key (PEM) */
	cmd_serve_source_t source; /* where the policy comes from */
	const char *policy_dir;	   /* --policy-dir: manifests for policy_load_dir()
				      (CMD_SERVE_SOURCE_DIR only; else NULL) */
	const char *kubeconfig;	   /* --kubeconfig (CMD_SERVE_SOURCE_KUBECONFIG only;
				      else NULL) */
	const char *state_dir;	   /* --state-dir: created 0700 when missing */
	const char *gpu_resources[CMD_SERVE_GPU_RESOURCES_MAX]; /* --gpu-resource, in order */
	size_t n_gpu_resources;					/* entries in gpu_resources */
	const char *controller_user;				/* --controller-user (default
								   WEBHOOK_CONTROLLER_USER_DEFAULT; gpuq serve replaces
								   it, from a cluster, with what a SelfSubjectReview
								   says unless controller_user_set) */
	bool controller_user_set;				/* --controller-user was given */
	webhook_creator_t child_creators[CMD_SERVE_CHILD_CREATORS_MAX]; /* --child-creator
								   KIND=USER, in order: a
								   kind named has only these
								   (webhook_config_t) */
	size_t n_child_creators;    /* entries in child_creators */
	unsigned threads;	    /* --threads 1..HTTP_THREADS_MAX (default: online CPUs,
				       at least 2) */
	gpuq_log_level_t log_level; /* --log-level debug|info|warn|error (default info) */
	int64_t shutdown_grace_ms;  /* --shutdown-grace, 0 = none (default
				       HTTP_SHUTDOWN_GRACE_MS_DEFAULT) */
	bool help;		    /* --help or -h was given: print usage, do nothing else */
	const char *dcgm_url;	    /* --dcgm-url: where GPU utilization is scraped
				       (NULL: no idle GPU accounting) */
	int64_t dcgm_interval_ms;   /* --dcgm-interval (default 30 s, 100 ms..1 h) */
	double idle_threshold_pct;  /* --idle-threshold, percent 0..100 (default 10) */
	bool ui;		    /* --ui true: the web view on /ui/ and /api/v1/ */
	bool ui_auth_none;	    /* --ui-auth none: no auth (a loopback --listen only) */
	int64_t ui_idle_ms;	    /* --ui-idle (0: the web view's default, 60 s) */
	/* The cluster flags (a cluster source only; --policy-dir refuses them). */
	bool leader_elect;		       /* --leader-elect true|false (default true) */
	const char *lease_namespace;	       /* --lease-namespace, a DNS label (default
						  $POD_NAMESPACE, else "gpuq-system") */
	const char *lease_name;		       /* --lease-name, a DNS subdomain (default
						  "gpuq-controller") */
	char identity[CMD_SERVE_NAME_MAX + 1]; /* --identity, the Lease holder (default
						$POD_NAME, else the hostname) */
	double qps;			       /* --qps: apiserver requests per second,
						  (0, CMD_SERVE_QPS_MAX] (default 50) */
	unsigned burst;			       /* --burst: requests at once above qps,
						  1..CMD_SERVE_BURST_MAX (default 100) */
	bool fair_sharing;		       /* --fair-sharing true|false (default false) */
	int64_t ready_timeout_ms;	       /* --pods-ready-timeout, 0 = off (default
						  CMD_SERVE_READY_TIMEOUT_MS_DEFAULT) */
	int64_t requeue_backoff_ms;	       /* --requeue-backoff, >= 1 ms (default
						  CMD_SERVE_REQUEUE_BACKOFF_MS_DEFAULT) */
	int64_t usage_half_life_ms;	       /* --usage-half-life-time, 1 ms to
						  CMD_SERVE_USAGE_FLAG_MAX_MS; 0 = not given
						  (the core's default, 1 h) */
	int64_t usage_sampling_ms;	       /* --usage-sampling-interval, the same
						  range; 0 = not given (the core's
						  default, 5 min) */
	int64_t usage_checkpoint_ms;	       /* --usage-checkpoint-interval, 0 (off)
						  to 7 days (default
						  CMD_SERVE_USAGE_CHECKPOINT_MS_DEFAULT) */
	bool visibility;		       /* --visibility true|false (default true):
						  the visibility API (webui/) */
	char cert_secret_ns[64];	       /* --cert-secret NS/NAME: NS ("" = not given) */
	const char *cert_secret_name;	       /* ... and NAME (NULL = not given) */
	const char *cert_dns;		       /* --cert-dns, comma-separated (NULL: default) */
	const char *cert_ip;		       /* --cert-ip, comma-separated (NULL: none) */
	const char *webhook_config;	       /* --webhook-config (NULL: caBundle left alone) */
	unsigned poll_ms;		       /* change polling interval (not a flag;
						  HTTP_POLL_MS_DEFAULT) */
	size_t body_budget;		       /* body bytes buffered at once (not a flag;
						  HTTP_BODY_BUDGET_DEFAULT) */
} cmd_serve_opts_t;

/* Parse `serve` flags: argv[0] is the subcommand's name; every flag takes its
 * value as the next argument or after '='. Pure (no I/O, no environment:
 * env gives what the defaults come from; env may be NULL, as if empty).
 * GPUQ_OK, or GPUQ_EINVAL with diag naming the flag (or the environment
 * variable) and the value: unknown flag, missing value, missing required
 * flag, bad port, bad number, bad name, too many --gpu-resource, both
 * --policy-dir and --kubeconfig, neither of them outside a Pod, a cluster
 * flag with --policy-dir. With --help the other flags are not required. */
int cmd_serve_opts_parse_env(int argc, char **argv, const cmd_serve_env_t *env,
			     cmd_serve_opts_t *opts, gpuq_diag_t *diag);

/* cmd_serve_opts_parse_env with the process's own environment
 * (POD_NAMESPACE, POD_NAME, KUBERNETES_SERVICE_HOST, the hostname). */
int cmd_serve_opts_parse(int argc, char **argv, cmd_serve_opts_t *opts, gpuq_diag_t *diag);

/* Check the opts against the file system: cert dir exists and is a
 * directory, tls.crt and tls.key are readable files, the policy dir (when
 * the source) is a directory, the kubeconfig (when the source) a readable
 * file, the state dir exists or is created (mode 0700) and is a writable
 * directory. GPUQ_OK or GPUQ_EINVAL / GPUQ_EIO with diag naming the flag and
 * the path. */
int cmd_serve_opts_check(const cmd_serve_opts_t *opts, gpuq_diag_t *diag);

/* The usage text of `gpuq serve` (static). */
const char *cmd_serve_usage(void);

/* The HTTP server's part of opts: listen addresses, cert dir, threads, poll
 * interval, body budget. Its strings point into opts: valid while opts is. */
void cmd_serve_http_config(const cmd_serve_opts_t *opts, http_server_config_t *out);
/* Admission's review config from opts: GPU names, controller user, child
 * creators (no owners or ledger yet: the admission sets those per review).
 * Its pointers point into opts. */
webhook_config_t cmd_serve_review_config(const cmd_serve_opts_t *opts);

#endif

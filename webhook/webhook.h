/*
 * webhook: the HTTPS admission server (libmicrohttpd over GnuTLS, TLS 1.2 and
 * 1.3, certificates reloaded from disk without dropping a request), the
 * AdmissionReview codec, and gpuq's mutation and validation rules for GPU
 * Pods and batch/v1 Jobs.
 *
 * The design decision that matters: a review is decided purely from an
 * immutable policy snapshot in memory (never a call to the apiserver while it
 * waits on us), so the decision functions are deterministic, testable
 * without a server, and answer in microseconds. Without a snapshot nothing
 * is decided: Pod and Job reviews fail closed (503). Objects are read by
 * workload/, the decoding the controller uses too, so the two never
 * disagree about what a workload asks for.
 */
#ifndef GPUQ_WEBHOOK_H
#define GPUQ_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"
#include "jv/jv.h"

/* ==== Section A: admission decisions (admit.c, mutate.c, validate.c) ==== */

/*
 * An AdmissionReview (admission.k8s.io/v1) in, a reply out. /mutate defaults
 * GPU Jobs (suspend, LimitRange defaults, queue label) and gates GPU Pods;
 * /validate refuses what can never run or would bypass the queue. The rules,
 * labels and messages are in docs/admission.md.
 */
#include "policy/policy.h"
#include "workload/workload.h"

/* Labels, annotations and the scheduling gate gpuq reads and writes (the
 * workload layer's names: workload/workload.h). */
#define WEBHOOK_LABEL_QUEUE WORKLOAD_LABEL_QUEUE
#define WEBHOOK_LABEL_KUEUE_QUEUE WORKLOAD_LABEL_KUEUE_QUEUE
#define WEBHOOK_LABEL_MANAGED WORKLOAD_LABEL_MANAGED
#define WEBHOOK_ANNOT_ADMITTED WORKLOAD_ANNOT_ADMITTED
/* where the workload stands, coarse (queue_workload_status): first written
 * by /mutate, then by the controller when its state changes */
#define WEBHOOK_ANNOT_STATUS "gpuq.dev/status"
#define WEBHOOK_GATE WORKLOAD_GATE
#define WEBHOOK_DEFAULT_QUEUE "default" /* queue when none is named */
#define WEBHOOK_CONTROLLER_USER_DEFAULT "system:serviceaccount:gpuq-system:gpuq"

/* Deepest JSON nesting accepted in a review body (a Pod with managedFields
 * nests about 20 deep inside the envelope); checked by a first scan, so the
 * parser's stack of open containers (jv/parse.c) is sized before it runs. */
#define WEBHOOK_JSON_DEPTH_MAX JV_DEPTH_MAX
/* Largest review body accepted (the apiserver's own request cap is 3 MiB). */
#define WEBHOOK_REVIEW_MAX (3u << 20)

typedef enum {
	WEBHOOK_MUTATE = 0,   /* POST /mutate */
	WEBHOOK_VALIDATE = 1, /* POST /validate */
} webhook_endpoint_t;

typedef struct {
	const char *const *gpu_resources; /* extra GPU resource names (--gpu-resource) */
	size_t n_gpu_resources;		  /* entries in gpu_resources */
	const char *controller_user;	  /* userInfo.username of gpuq's controller;
					     NULL means WEBHOOK_CONTROLLER_USER_DEFAULT */
} webhook_config_t;

typedef struct {
	int http_status;	  /* 200 (a review), 400 (bad input), 503 (no policy) */
	char *body;		  /* owned: AdmissionReview JSON or a text/plain sentence */
	size_t len;		  /* bytes in body (no NUL counted; body is NUL-terminated) */
	const char *kind;	  /* static: "Pod", "Job" or "other" (a metrics label) */
	const char *decision;	  /* static: "allowed", "patched", "denied", "invalid" or
				     "unavailable" (no policy) */
	const char *content_type; /* static: "application/json" or "text/plain; charset=utf-8" */
} webhook_reply_t;

/* Decide one AdmissionReview. body[0..len) is the request body (need not be
 * NUL-terminated); policy is the snapshot to decide against (read only, may
 * be shared by threads), NULL when there is none yet; cfg may be NULL (no
 * extra GPU names, default controller user). Pure: no I/O, no clock, no
 * globals; thread-safe.
 *
 * Returns GPUQ_OK with *out filled for every input, good or bad:
 * - 200 with a v1 AdmissionReview echoing request.uid: allowed, patched
 *   (mutate only), or denied (status code 403 Forbidden for a policy refusal,
 *   400 BadRequest for a malformed object, e.g. an unparsable quantity, a
 *   `spec` that is not an object, or a missing or unknown
 *   request.operation);
 * - 400 with a text/plain sentence when the body is not a usable review (not
 *   JSON, nested deeper than WEBHOOK_JSON_DEPTH_MAX, larger than
 *   WEBHOOK_REVIEW_MAX, wrong apiVersion/kind, no request.uid);
 * - 503 with a text/plain sentence when policy is NULL and the review is a
 *   Pod or Job CREATE or UPDATE (fail closed: a webhook that cannot decide
 *   never waves GPU work through; the apiserver's failurePolicy applies).
 *   Only reviews whose answer never depends on a policy are answered without
 *   one: other kinds, DELETE and CONNECT, subresources (all allowed), and
 *   the 400s above.
 * Returns GPUQ_ENOMEM (out zeroed, nothing to free) when memory ran out; the
 * caller answers 500. The caller frees out with webhook_reply_deinit. */
int webhook_review_handle(webhook_endpoint_t ep, const policy_t *policy,
			  const webhook_config_t *cfg, const char *body, size_t len,
			  webhook_reply_t *out);

/* Free out->body and zero *out. Accepts a zeroed or already freed reply. */
void webhook_reply_deinit(webhook_reply_t *out);

/* ==== Section B: the HTTPS server and metrics (server.c, metrics.c) ==== */

/*
 * The server: libmicrohttpd with a thread pool over GnuTLS, TLS 1.2 and 1.3
 * only. Routes: POST /mutate and /validate (application/json, body capped at
 * WEBHOOK_REVIEW_MAX), GET /healthz, /readyz, /metrics. The serving pair
 * (tls.crt, tls.key in the cert dir) and the policy snapshot are each held
 * by reference count and swapped under a short lock: a watcher thread polls
 * the files every poll interval and loads a changed pair or policy beside the
 * old one; only one that loads completely (the key matching the certificate,
 * the policy passing policy_load_dir) replaces it. Without a policy dir the
 * snapshot comes from outside (webhook_server_policy_set, the controller) and
 * until it does the server fails closed. A TLS connection keeps a
 * reference to the pair it was handshaken with until it closes, and a decision
 * holds a reference to the snapshot it started on, so a swap never drops or
 * changes a request in flight.
 */

/* Caps for the command line and the server (peers never grow these). */
#define WEBHOOK_GPU_RESOURCES_MAX 32 /* --gpu-resource flags */
#define WEBHOOK_NAME_MAX 253	     /* a resource or user name (a DNS subdomain's length) */
#define WEBHOOK_THREADS_MAX 256	     /* --threads */
#define WEBHOOK_CONNECTIONS_MAX 1024 /* open connections; the rest are refused at accept */
/* Open connections from one client address: one client cannot take every
 * slot (the apiserver's own pool stays far below it; three quarters are
 * left to the others). */
#define WEBHOOK_CONNECTIONS_PER_IP (WEBHOOK_CONNECTIONS_MAX / 4)
/* A connection that has not sent a request's headers this long after its
 * accept (TLS handshake included) is closed: a deadline, not an idle timer.
 * (The apiserver sends its request at once on a new connection.) */
#define WEBHOOK_HEADER_DEADLINE_S 5
/* Request body bytes buffered at once over all connections (each body is
 * capped at WEBHOOK_REVIEW_MAX; 1024 connections could otherwise hold 3 GiB).
 * Past it a review is answered 503 and the apiserver retries. */
#define WEBHOOK_BODY_BUDGET_DEFAULT (256u << 20)
/* An idle keep-alive connection is closed after this many seconds (the
 * apiserver's own client drops idle connections after 90 s). */
#define WEBHOOK_IDLE_TIMEOUT_S 90
#define WEBHOOK_POLL_MS_DEFAULT 1000 /* cert and policy change polling interval */
/* Graceful stop: the longest wait for requests in flight, in ms (the
 * apiserver's default webhook timeout is 10 s). */
#define WEBHOOK_DRAIN_MS_DEFAULT 10000

/* After SIGTERM, how long the server keeps answering with /readyz at 503
 * (--shutdown-grace), so load balancers and the apiserver stop sending
 * first: shorter than the Pod's terminationGracePeriodSeconds (deploy/). */
#define WEBHOOK_SHUTDOWN_GRACE_MS_DEFAULT 5000

/* TLS 1.2 and 1.3 only, AEAD ciphers with forward secrecy only (Mozilla's
 * "intermediate" set: ECDHE with AES-GCM or ChaCha20-Poly1305; no CBC, no
 * SHA-1 MAC, no static RSA key exchange), in our order. */
#define WEBHOOK_TLS_PRIORITIES                                                                     \
	"NONE:+VERS-TLS1.3:+VERS-TLS1.2:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AEAD:"       \
	"+ECDHE-ECDSA:+ECDHE-RSA:+SIGN-ALL:+GROUP-ALL:+COMP-NULL:+CTYPE-X509:%SERVER_PRECEDENCE"

/* Where the policy comes from: exactly one source. */
typedef enum {
	WEBHOOK_SOURCE_DIR = 0,	       /* --policy-dir: manifests on disk (offline mode) */
	WEBHOOK_SOURCE_KUBECONFIG = 1, /* --kubeconfig: the cluster a kubeconfig names */
	WEBHOOK_SOURCE_IN_CLUSTER = 2, /* neither flag, KUBERNETES_SERVICE_HOST set: the
					  cluster gpuq runs in (its service account) */
} webhook_policy_source_t;

/* Defaults of the cluster flags. */
#define WEBHOOK_LEASE_NAMESPACE_DEFAULT "gpuq-system" /* without $POD_NAMESPACE */
#define WEBHOOK_LEASE_NAME_DEFAULT "gpuq-controller"
#define WEBHOOK_QPS_DEFAULT 50.0 /* apiserver requests per second, sustained */
#define WEBHOOK_READY_TIMEOUT_MS_DEFAULT (30LL * 60 * 1000) /* Kueue's waitForPodsReady */
#define WEBHOOK_REQUEUE_BACKOFF_MS_DEFAULT (60LL * 1000)
#define WEBHOOK_DURATION_FLAG_MAX_MS (7LL * 86400 * 1000) /* duration flags: at most 7 days */
#define WEBHOOK_UI_IDLE_MAX_MS (3600LL * 1000)		  /* --ui-idle: at most 1 h */
/* --usage-half-life-time and --usage-sampling-interval: at most a year
 * (Kueue's examples use a week; months of memory are plausible, years not) */
#define WEBHOOK_USAGE_FLAG_MAX_MS (365LL * 86400 * 1000)
/* --usage-checkpoint-interval: how often the leader checkpoints its usage
 * ledger to ConfigMaps (a failover loses at most about this much) */
#define WEBHOOK_USAGE_CHECKPOINT_MS_DEFAULT (60LL * 1000)
#define WEBHOOK_QPS_MAX 10000.0 /* --qps above this is refused (a typo, not a plan) */
#define WEBHOOK_BURST_DEFAULT 100u
#define WEBHOOK_BURST_MAX 100000u
/* Idle GPU time (--dcgm-url, dcgm/): the scrape interval's range and
 * default, the URL's length at most, the idle threshold's default. */
#define WEBHOOK_DCGM_INTERVAL_MS_MIN 100LL
#define WEBHOOK_DCGM_INTERVAL_MS_MAX (3600LL * 1000)
#define WEBHOOK_DCGM_INTERVAL_MS_DEFAULT (30LL * 1000)
#define WEBHOOK_DCGM_URL_MAX 2048
#define WEBHOOK_IDLE_THRESHOLD_DEFAULT 10.0

/* What the cluster flags default from, as the process environment has it.
 * Each member NULL (or "") when unset. */
typedef struct {
	const char *pod_namespace; /* $POD_NAMESPACE (the downward API): --lease-namespace */
	const char *pod_name;	   /* $POD_NAME: --identity */
	const char *hostname;	   /* gethostname(): --identity without $POD_NAME */
	const char *service_host;  /* $KUBERNETES_SERVICE_HOST: set in every Pod; with
				      neither --policy-dir nor --kubeconfig, in-cluster */
} webhook_serve_env_t;

/* What `gpuq serve` was asked to do. Strings point into argv, into the
 * environment's strings, or are static: valid as long as those. */
typedef struct {
	const char *listen;		 /* --listen HOST:PORT as given */
	char host[WEBHOOK_NAME_MAX + 1]; /* HOST part ("" = every address); [v6] brackets
					    stripped */
	uint16_t port;			 /* PORT part, 1..65535 */
	const char *cert_dir;		 /* --cert-dir: holds tls.crt and tls.key (PEM) */
	webhook_policy_source_t source;	 /* where the policy comes from */
	const char *policy_dir;		 /* --policy-dir: manifests for policy_load_dir()
					    (WEBHOOK_SOURCE_DIR only; else NULL) */
	const char *kubeconfig;		 /* --kubeconfig (WEBHOOK_SOURCE_KUBECONFIG only;
					    else NULL) */
	const char *state_dir;		 /* --state-dir: created 0700 when missing */
	const char *gpu_resources[WEBHOOK_GPU_RESOURCES_MAX]; /* --gpu-resource, in order */
	size_t n_gpu_resources;				      /* entries in gpu_resources */
	const char *controller_user;			      /* --controller-user (default
								 WEBHOOK_CONTROLLER_USER_DEFAULT; gpuq serve replaces
								 it, from a cluster, with what a SelfSubjectReview
								 says unless controller_user_set) */
	bool controller_user_set;			      /* --controller-user was given */
	unsigned threads;	    /* --threads 1..WEBHOOK_THREADS_MAX (default: online CPUs,
				       at least 2) */
	gpuq_log_level_t log_level; /* --log-level debug|info|warn|error (default info) */
	int64_t shutdown_grace_ms;  /* --shutdown-grace, 0 = none (default
				       WEBHOOK_SHUTDOWN_GRACE_MS_DEFAULT) */
	bool help;		    /* --help or -h was given: print usage, do nothing else */
	const char *dcgm_url;	    /* --dcgm-url: where GPU utilization is scraped
				       (NULL: no idle GPU accounting) */
	int64_t dcgm_interval_ms;   /* --dcgm-interval (default 30 s, 100 ms..1 h) */
	double idle_threshold_pct;  /* --idle-threshold, percent 0..100 (default 10) */
	bool ui;		    /* --ui true: the web view on /ui/ and /api/v1/ */
	bool ui_auth_none;	    /* --ui-auth none: no auth (a loopback --listen only) */
	int64_t ui_idle_ms;	    /* --ui-idle (0: the web view's default, 60 s) */
	/* The cluster flags (a cluster source only; --policy-dir refuses them). */
	bool leader_elect;		     /* --leader-elect true|false (default true) */
	const char *lease_namespace;	     /* --lease-namespace, a DNS label (default
						$POD_NAMESPACE, else "gpuq-system") */
	const char *lease_name;		     /* --lease-name, a DNS subdomain (default
						"gpuq-controller") */
	char identity[WEBHOOK_NAME_MAX + 1]; /* --identity, the Lease holder (default
						$POD_NAME, else the hostname) */
	double qps;			     /* --qps: apiserver requests per second,
						(0, WEBHOOK_QPS_MAX] (default 50) */
	unsigned burst;			     /* --burst: requests at once above qps,
						1..WEBHOOK_BURST_MAX (default 100) */
	bool fair_sharing;		     /* --fair-sharing true|false (default false) */
	int64_t ready_timeout_ms;	     /* --pods-ready-timeout, 0 = off (default
						WEBHOOK_READY_TIMEOUT_MS_DEFAULT) */
	int64_t requeue_backoff_ms;	     /* --requeue-backoff, >= 1 ms (default
						WEBHOOK_REQUEUE_BACKOFF_MS_DEFAULT) */
	int64_t usage_half_life_ms;	     /* --usage-half-life-time, 1 ms to
						WEBHOOK_USAGE_FLAG_MAX_MS; 0 = not given
						(the core's default, 1 h) */
	int64_t usage_sampling_ms;	     /* --usage-sampling-interval, the same
						range; 0 = not given (the core's
						default, 5 min) */
	int64_t usage_checkpoint_ms;	     /* --usage-checkpoint-interval, 0 (off)
						to 7 days (default
						WEBHOOK_USAGE_CHECKPOINT_MS_DEFAULT) */
	bool visibility;		     /* --visibility true|false (default true):
						the visibility API (webui/) */
	char cert_secret_ns[64];	     /* --cert-secret NS/NAME: NS ("" = not given) */
	const char *cert_secret_name;	     /* ... and NAME (NULL = not given) */
	const char *cert_dns;		     /* --cert-dns, comma-separated (NULL: default) */
	const char *cert_ip;		     /* --cert-ip, comma-separated (NULL: none) */
	const char *webhook_config;	     /* --webhook-config (NULL: caBundle left alone) */
	unsigned poll_ms;		     /* change polling interval (not a flag;
						WEBHOOK_POLL_MS_DEFAULT) */
	size_t body_budget;		     /* body bytes buffered at once (not a flag;
						WEBHOOK_BODY_BUDGET_DEFAULT) */
} webhook_serve_opts_t;

/* Parse `serve` flags: argv[0] is the subcommand's name; every flag takes its
 * value as the next argument or after '='. Pure (no I/O, no environment:
 * env gives what the defaults come from; env may be NULL, as if empty).
 * GPUQ_OK, or GPUQ_EINVAL with diag naming the flag (or the environment
 * variable) and the value: unknown flag, missing value, missing required
 * flag, bad port, bad number, bad name, too many --gpu-resource, both
 * --policy-dir and --kubeconfig, neither of them outside a Pod, a cluster
 * flag with --policy-dir. With --help the other flags are not required. */
int webhook_serve_opts_parse_env(int argc, char **argv, const webhook_serve_env_t *env,
				 webhook_serve_opts_t *opts, gpuq_diag_t *diag);

/* webhook_serve_opts_parse_env with the process's own environment
 * (POD_NAMESPACE, POD_NAME, KUBERNETES_SERVICE_HOST, the hostname). */
int webhook_serve_opts_parse(int argc, char **argv, webhook_serve_opts_t *opts, gpuq_diag_t *diag);

/* Check the opts against the file system: cert dir exists and is a
 * directory, tls.crt and tls.key are readable files, the policy dir (when
 * the source) is a directory, the kubeconfig (when the source) a readable
 * file, the state dir exists or is created (mode 0700) and is a writable
 * directory. GPUQ_OK or GPUQ_EINVAL / GPUQ_EIO with diag naming the flag and
 * the path. */
int webhook_serve_opts_check(const webhook_serve_opts_t *opts, gpuq_diag_t *diag);

/* The usage text of `gpuq serve` (static). */
const char *webhook_serve_usage(void);

/* ---- The serving pair ---- */

/* A parsed certificate chain with its private key, ready for GnuTLS.
 * Immutable once loaded; shared by reference count (atomic). */
typedef struct webhook_tls_pair webhook_tls_pair_t;

/* Load dir/tls.crt (PEM chain, leaf first) and dir/tls.key (PEM key) and
 * check that the key belongs to the leaf certificate. On success *out holds
 * one reference. GPUQ_EIO (unreadable), GPUQ_ETLS (unparsable, or the key
 * does not match), GPUQ_ENOMEM; diag names the file. */
int webhook_tls_pair_load(const char *dir, webhook_tls_pair_t **out, gpuq_diag_t *diag);

/* Take a reference (atomic); returns pair. NULL is returned as NULL. */
webhook_tls_pair_t *webhook_tls_pair_ref(webhook_tls_pair_t *pair);

/* Drop a reference; the last one frees the pair. NULL is a no-op. */
void webhook_tls_pair_unref(webhook_tls_pair_t *pair);

/* The leaf's serial number as upper-case hex, as `openssl x509 -serial`
 * prints it (storage of the pair, valid while a reference is held), and its
 * notAfter in Unix seconds. */
const char *webhook_tls_pair_serial(const webhook_tls_pair_t *pair);
int64_t webhook_tls_pair_not_after(const webhook_tls_pair_t *pair);

/* The current serving pair of a cert dir, reloaded when its files change. */
typedef struct webhook_tls webhook_tls_t;

/* Load the pair of dir (as webhook_tls_pair_load) and remember the files'
 * identity (inode, size, mtime of both). dir is copied. */
int webhook_tls_create(const char *dir, webhook_tls_t **out, gpuq_diag_t *diag);

/* Destroy; pairs still referenced elsewhere live on. NULL is a no-op. */
void webhook_tls_destroy(webhook_tls_t *tls);

/* The current pair with a new reference the caller must drop. Thread-safe. */
webhook_tls_pair_t *webhook_tls_current(webhook_tls_t *tls);

typedef enum {
	WEBHOOK_TLS_UNCHANGED = 0, /* files as last seen: nothing done */
	WEBHOOK_TLS_RELOADED = 1,  /* a new pair was loaded and now serves */
	WEBHOOK_TLS_PENDING = 2,   /* files changed but do not load yet (a rotation
				      half written?): the old pair serves; retried on
				      the next poll */
	WEBHOOK_TLS_REFUSED = 3,   /* files changed, still do not load one poll later:
				      the old pair serves, diag says why */
} webhook_tls_poll_t;

/* Compare the files with what was last seen and reload the pair when they
 * changed. A pair that fails to load gets one more poll to settle (PENDING),
 * then is REFUSED (reported once per change of the files). Only one thread
 * may poll at a time; webhook_tls_current() may run concurrently. */
webhook_tls_poll_t webhook_tls_poll(webhook_tls_t *tls, gpuq_diag_t *diag);

/* ---- Metrics (Prometheus text exposition format 0.0.4) ---- */

/* Routes, the `path` label of gpuq_http_requests_total. */
typedef enum {
	WEBHOOK_ROUTE_MUTATE = 0,
	WEBHOOK_ROUTE_VALIDATE = 1,
	WEBHOOK_ROUTE_HEALTHZ = 2,
	WEBHOOK_ROUTE_READYZ = 3,
	WEBHOOK_ROUTE_METRICS = 4,
	WEBHOOK_ROUTE_UI = 5,	 /* /ui, /ui/..., /api/..., /apis/...: the app's routes below */
	WEBHOOK_ROUTE_OTHER = 6, /* any other path: label "other", never the peer's path */
	WEBHOOK_ROUTE_COUNT = 7,
} webhook_route_t;

/* Counters and gauges, all lock-free (C11 atomics, relaxed), with fixed label
 * sets: a value a peer could choose never becomes a label. (The one lock
 * guards the source below, taken once per scrape.) */
typedef struct webhook_metrics webhook_metrics_t;

/* GPUQ_OK or GPUQ_ENOMEM. */
int webhook_metrics_create(webhook_metrics_t **out);
void webhook_metrics_destroy(webhook_metrics_t *m); /* NULL is a no-op */

/* One decided review: kind is "Pod", "Job" or "other", decision "allowed",
 * "patched", "denied", "invalid", "unavailable" (503: no policy) or "error"
 * (anything else counts as "other" kind / "error" decision). elapsed_ns from the request's headers
 * to its reply. */
void webhook_metrics_admission_observe(webhook_metrics_t *m, webhook_endpoint_t ep,
				       const char *kind, const char *decision, uint64_t elapsed_ns);

/* One HTTP reply outside a decided review (other routes, and errors on the
 * admission routes). Codes outside a fixed set count as code "other". */
void webhook_metrics_http_count(webhook_metrics_t *m, webhook_route_t route, unsigned code);

/* n connections closed at the header deadline (WEBHOOK_HEADER_DEADLINE_S). */
void webhook_metrics_deadline_count(webhook_metrics_t *m, unsigned n);
void webhook_metrics_policy_reload_count(webhook_metrics_t *m, bool ok);
void webhook_metrics_cert_reload_count(webhook_metrics_t *m, bool ok);
void webhook_metrics_policy_generation_set(webhook_metrics_t *m, uint64_t generation);
void webhook_metrics_cert_not_after_set(webhook_metrics_t *m, int64_t unix_seconds);

/* Render every metric (plus process_resident_memory_bytes, read from
 * /proc/self/statm), then what the source appends (below), as text. *text
 * is malloc'd, NUL-terminated, owned by the caller. GPUQ_OK or GPUQ_ENOMEM.
 * Thread-safe. The whole text is capped at WEBHOOK_METRICS_TEXT_MAX: a
 * source whose part would pass it is left out of that scrape (logged once),
 * the webhook's own metrics are still served. */
int webhook_metrics_render(webhook_metrics_t *m, char **text, size_t *len);

/* The most text one scrape renders. The webhook's own part is about 50 KiB;
 * the rest is room for a source's series (the controller's queue metrics at
 * their stated caps: qmetrics/qmetrics.h). */
#define WEBHOOK_METRICS_TEXT_MAX (64u << 20)

/* ---- Metrics from outside the webhook ----
 *
 * Sources (the controller's queue metrics, idle GPU time) append their own
 * metric families to every scrape, so /metrics stays one endpoint. The webhook
 * knows nothing of what it renders: it hands the source the text being
 * built. */

/* The text of one scrape being rendered (opaque). */
typedef struct webhook_metrics_text webhook_metrics_text_t;

/* Append printf-style text to t. The first failure (no memory, the cap
 * above) is kept and ends the source's part; later calls do nothing. */
void webhook_metrics_printf(webhook_metrics_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A source: appends whole metric families (# HELP, # TYPE, then every
 * sample of each), named apart from the webhook's own, with label values
 * escaped (webhook_metrics_label_escape). It runs on a server thread during
 * a scrape, so it must be quick, must not call the apiserver, and must not
 * wait on the thread it reports about for long (the controller hands over a
 * snapshot). It must not call webhook_metrics_source_set. */
typedef void (*webhook_metrics_source_fn)(void *ctx, webhook_metrics_text_t *t);

/* Make fn(ctx) the source (NULL: none). Returns once no scrape is still
 * running the previous source, so its ctx may be freed then. Thread-safe. */
void webhook_metrics_source_set(webhook_metrics_t *m, webhook_metrics_source_fn fn, void *ctx);

/* Sources by slot, rendered in this order, each cut out whole on its own
 * when it would pass WEBHOOK_METRICS_TEXT_MAX. webhook_metrics_source_set
 * sets the queue slot. */
typedef enum {
	WEBHOOK_METRICS_SOURCE_QUEUE = 0, /* the controller's queue metrics */
	WEBHOOK_METRICS_SOURCE_IDLE = 1,  /* idle GPU time (gpuq serve --dcgm-url) */
} webhook_metrics_slot_t;
#define WEBHOOK_METRICS_SOURCES 2

/* webhook_metrics_source_set for one slot. */
void webhook_metrics_source_slot_set(webhook_metrics_t *m, webhook_metrics_slot_t slot,
				     webhook_metrics_source_fn fn, void *ctx);

/* Render fn(ctx)'s families alone, without the webhook's, for a tool that
 * writes them to a file (gpuq simulate --metrics). *text is malloc'd,
 * NUL-terminated, the caller's. GPUQ_OK, GPUQ_ENOMEM, or GPUQ_ELIMIT past
 * WEBHOOK_METRICS_TEXT_MAX (*text NULL then). */
int webhook_metrics_source_render(webhook_metrics_source_fn fn, void *ctx, char **text,
				  size_t *len);

/* Escape a label value for the text format (\ -> \\, " -> \", newline ->
 * \n) into out[0..cap). GPUQ_OK, or GPUQ_ELIMIT when it does not fit (out
 * then holds "" ). */
int webhook_metrics_label_escape(const char *value, char *out, size_t cap);

typedef struct webhook_server webhook_server_t;

/* ---- Routes from outside the webhook (the web UI) ----
 *
 * One app (webui/) may answer GET and HEAD on /ui, /ui/..., /api/... and
 * /apis/... (a path the server accepts: plain characters, no escapes, at
 * most WEBHOOK_APP_PATH_MAX bytes; its query's arguments as sent (no percent-decoding), at most
 * WEBHOOK_APP_QUERY_MAX bytes, else 414). The webhook knows nothing of what it serves.
 * An app answer that needs slow work (the apiserver's TokenReview and
 * SubjectAccessReview) never runs on a server thread: the app says
 * WEBHOOK_APP_SLOW, the server suspends the connection (its thread goes on
 * serving admission reviews), one worker thread of the server runs the
 * app's slow function, then resumes the connection and asks the app again.
 * At most WEBHOOK_APP_SLOW_MAX requests wait for the worker; past that the
 * answer is 503. Every app reply carries Content-Security-Policy
 * WEBHOOK_APP_CSP, X-Content-Type-Options nosniff, Referrer-Policy
 * no-referrer and X-Frame-Options DENY. */

#define WEBHOOK_APP_PATH_MAX 512  /* bytes of an app path */
#define WEBHOOK_APP_QUERY_MAX 512 /* bytes of an app request's query arguments, joined */
#define WEBHOOK_APP_AUTH_MAX                                                                       \
	16448			/* bytes of an Authorization header kept                           \
				   ("Bearer " and a KUBE_TOKEN_MAX token) */
#define WEBHOOK_APP_SLOW_MAX 64 /* requests waiting for the slow worker */
#define WEBHOOK_APP_CSP                                                                            \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "                \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* A request for the app: strings valid for the call only. */
typedef struct {
	const char *path;	   /* e.g. "/api/v1/cluster" (no query string) */
	const char *authorization; /* the Authorization header, NULL when absent
				      (or longer than WEBHOOK_APP_AUTH_MAX) */
	bool head;		   /* HEAD (the body is not sent) */
	const char *query;	   /* the query's arguments as sent (not percent-decoded), joined as
				      "k=v&k=v" in the order sent, or NULL when
				      none (a value holding '&' or '=' is not told
				      apart) */
} webhook_app_request_t;

/* The app's answer. */
typedef struct {
	unsigned status;	      /* HTTP status */
	const char *content_type;     /* static */
	const char *cache_control;    /* static, or NULL for "no-store" */
	const char *www_authenticate; /* static WWW-Authenticate value, or NULL */
	const char *location;	      /* static Location (a redirect), or NULL */
	const void *body;	      /* body_owned ? malloc'd : static */
	size_t len;		      /* bytes in body */
	bool body_owned;	      /* the server frees body */
} webhook_app_reply_t;

#define WEBHOOK_APP_SLOW 1 /* app_fn's "run slow_fn first, then ask again" */

/* Answer rq into *out and return GPUQ_OK; or return WEBHOOK_APP_SLOW (only
 * when retry is false) to have slow_fn(ctx, rq) run on the worker first and
 * then be called again with retry true (it must answer then). Runs on a
 * server thread: quick, no apiserver calls. Any other code: a 500. */
typedef int (*webhook_app_fn)(void *ctx, const webhook_app_request_t *rq, bool retry,
			      webhook_app_reply_t *out);
/* The slow part (the worker thread only; may call the apiserver). */
typedef void (*webhook_app_slow_fn)(void *ctx, const webhook_app_request_t *rq);

/* Serve the app fn/slow_fn with ctx (fn NULL: none, its paths 404). Call
 * before webhook_server_start; ctx must outlive the server. */
void webhook_server_app_set(webhook_server_t *srv, webhook_app_fn fn, webhook_app_slow_fn slow_fn,
			    void *ctx);

/* ---- The server ---- */

/* Load the serving pair and, when opts->policy_dir is set, the policy
 * (refusing a bad policy: diag holds policy_load_dir's message), and prepare,
 * without listening yet. Without a policy dir the server starts with no
 * policy and fails closed (reviews of Pods and Jobs answered 503, /readyz
 * 503 "no policy") until webhook_server_policy_set gives it one. opts must
 * outlive the server. GPUQ_OK, GPUQ_ETLS/GPUQ_EIO (certs), the policy's
 * codes, GPUQ_ENOMEM. */
int webhook_server_create(const webhook_serve_opts_t *opts, webhook_server_t **out,
			  gpuq_diag_t *diag);

/* Listen on opts->host:port and start the thread pool and the watcher.
 * GPUQ_OK, GPUQ_EIO (address unusable or in use: diag says which). */
int webhook_server_start(webhook_server_t *srv, gpuq_diag_t *diag);

/* Reload the policy dir now (SIGHUP). A policy that fails to load is logged
 * with its diagnostic and counted; the old one keeps serving. Returns the
 * load's code; GPUQ_EINVAL (nothing done) for a server without a policy dir.
 * Thread-safe (serialised with the watcher and webhook_server_policy_set). */
int webhook_server_policy_reload(webhook_server_t *srv);

/* Serve policy p from now on: an external feed (the controller builds
 * snapshots from the cluster). p must be finished (policy_finish); the
 * server takes its own reference (the caller keeps its own). Swapped in
 * exactly as a dir reload is: reviews already deciding finish on the old
 * snapshot, gpuq_policy_generation goes up by one and a successful reload is
 * counted. GPUQ_OK; GPUQ_EINVAL (nothing done, logged) when p is NULL or the
 * server reads a policy dir (one policy source only). Thread-safe. */
int webhook_server_policy_set(webhook_server_t *srv, policy_t *p);

/* Drop the policy: back to failing closed (Pod and Job reviews 503, /readyz
 * 503) until the next webhook_server_policy_set. For the controller when it
 * can no longer vouch for its snapshot, e.g. its watches have been down
 * longer than it allows: deciding from a stale policy could admit work the
 * cluster's quotas no longer allow. gpuq_policy_generation is left as is. A
 * no-op (logged) for a server that reads a policy dir. Thread-safe. */
void webhook_server_policy_clear(webhook_server_t *srv);

/* The first step of a graceful stop: /readyz answers 503 ("shutting
 * down") while everything else is served as before. Idempotent. */
void webhook_server_unready(webhook_server_t *srv);

/* Graceful stop: stop accepting, /readyz answers 503, wait up to drain_ms
 * for requests in flight to finish, then close every connection and join
 * every thread. Idempotent. */
void webhook_server_stop(webhook_server_t *srv, unsigned drain_ms);

/* Stop (if running) and free. NULL is a no-op. */
void webhook_server_destroy(webhook_server_t *srv);

/* The metrics of a server (borrowed, valid until destroy). */
webhook_metrics_t *webhook_server_metrics(webhook_server_t *srv);

#endif

/* webhook admission: the AdmissionReview routes on the HTTP server (http/),
 * the policy snapshot they decide against, and its reloads. See webhook.h,
 * "Admission on the HTTP server". */
#include "webhook/webhook.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MODULE "webhook"

struct webhook_admission {
	http_server_t *srv;	     /* the server it answers on (borrowed) */
	char *policy_dir;	     /* owned copy, or NULL: fed from outside */
	webhook_config_t review_cfg; /* webhook_review_handle's config (arrays borrowed) */
	webhook_metrics_t *metrics;  /* decisions and reloads (owned) */

	pthread_mutex_t policy_lock; /* guards policy and owners */
	policy_t *policy;	     /* the snapshot requests start on (one reference);
					NULL: none yet, reviews fail closed */
	webhook_owners_t *owners;    /* the admitted parents (one reference); NULL:
					none known, a Pod claiming one is refused */
	webhook_allows_t *allows;    /* exempt Pods let pass, not yet counted (owned) */
	pthread_mutex_t reload_lock; /* one policy reload at a time; guards the next four */
	uint64_t policy_generation;  /* successful loads so far */
	uint64_t policy_seen_fp;     /* fingerprint of the dir as last acted on */
	bool policy_pending;	     /* the dir at policy_seen_fp failed to load once */
	bool policy_fp_failed;	     /* the last fingerprint failed (logged once) */
};

static policy_t *policy_current(webhook_admission_t *a)
{
	policy_t *p;

	pthread_mutex_lock(&a->policy_lock);
	p = policy_ref(a->policy);
	pthread_mutex_unlock(&a->policy_lock);
	return p;
}

void webhook_admission_owners_publish(webhook_admission_t *a, webhook_owners_t *owners,
				      bool (*seen)(void *ctx, const char *pod_uid), void *ctx)
{
	if (owners)
		webhook_allows_publish(a->allows, owners, gpuq_mono_ms(), seen, ctx);
	webhook_admission_owners_set(a, owners);
}

void webhook_admission_owners_set(webhook_admission_t *a, webhook_owners_t *owners)
{
	webhook_owners_t *old;

	owners = webhook_owners_ref(owners);
	pthread_mutex_lock(&a->policy_lock);
	old = a->owners;
	a->owners = owners;
	pthread_mutex_unlock(&a->policy_lock);
	webhook_owners_unref(old);
}

/* Serve p (its reference moves in; NULL: none). Returns whether a policy
 * was serving before. */
static bool policy_swap(webhook_admission_t *a, policy_t *p)
{
	policy_t *old;

	pthread_mutex_lock(&a->policy_lock);
	old = a->policy;
	a->policy = p;
	pthread_mutex_unlock(&a->policy_lock);
	policy_unref(old);
	return old != NULL;
}

/* Load the policy dir; on success swap it in. Caller holds reload_lock.
 * report: log and count a failure now (else leave it pending for one poll). */
static int policy_reload_locked(webhook_admission_t *a, bool report)
{
	gpuq_diag_t diag = {{0}};
	policy_t *p = NULL;
	uint64_t fp = 0;
	int rc;

	if (policy_dir_fingerprint(a->policy_dir, &fp, NULL))
		fp = 0;
	rc = policy_load_dir(a->policy_dir, NULL, &p, &diag);
	if (rc == GPUQ_OK) {
		a->policy_seen_fp = policy_fingerprint(p);
		a->policy_pending = false;
		a->policy_generation++;
		policy_swap(a, p);
		webhook_metrics_policy_reload_count(a->metrics, true);
		webhook_metrics_policy_generation_set(a->metrics, a->policy_generation);
		gpuq_log(GPUQ_LOG_INFO, MODULE, "policy reloaded from %s (generation %" PRIu64 ")",
			 a->policy_dir, a->policy_generation);
		return GPUQ_OK;
	}
	a->policy_seen_fp = fp;
	if (!report) {
		a->policy_pending = true;
		gpuq_log(GPUQ_LOG_DEBUG, MODULE, "policy dir changed but does not load yet: %s",
			 diag.msg);
		return rc;
	}
	a->policy_pending = false;
	webhook_metrics_policy_reload_count(a->metrics, false);
	gpuq_log(GPUQ_LOG_ERROR, MODULE,
		 "policy reload refused (%s), generation %" PRIu64 " keeps serving: %s",
		 gpuq_strerror(rc), a->policy_generation, diag.msg);
	return rc;
}

int webhook_admission_policy_reload(webhook_admission_t *a)
{
	int rc;

	if (!a->policy_dir) {
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "no --policy-dir: the policy comes from the cluster, nothing to reload");
		return GPUQ_EINVAL;
	}
	pthread_mutex_lock(&a->reload_lock);
	rc = policy_reload_locked(a, true);
	pthread_mutex_unlock(&a->reload_lock);
	return rc;
}

int webhook_admission_policy_set(webhook_admission_t *a, policy_t *p)
{
	if (!p || a->policy_dir) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE, "policy feed refused: %s",
			 p ? "this server reads --policy-dir (one policy source only)"
			   : "no policy given");
		return GPUQ_EINVAL;
	}
	pthread_mutex_lock(&a->reload_lock);
	a->policy_generation++;
	policy_swap(a, policy_ref(p));
	webhook_metrics_policy_reload_count(a->metrics, true);
	webhook_metrics_policy_generation_set(a->metrics, a->policy_generation);
	gpuq_log(GPUQ_LOG_INFO, MODULE, "policy set from the cluster (generation %" PRIu64 ")",
		 a->policy_generation);
	pthread_mutex_unlock(&a->reload_lock);
	return GPUQ_OK;
}

void webhook_admission_policy_clear(webhook_admission_t *a)
{
	if (a->policy_dir) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE,
			 "policy clear ignored: this server reads --policy-dir");
		return;
	}
	pthread_mutex_lock(&a->reload_lock);
	if (policy_swap(a, NULL))
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "policy dropped (generation %" PRIu64 " was serving): Pod and Job "
			 "reviews are answered 503 until the controller syncs again",
			 a->policy_generation);
	pthread_mutex_unlock(&a->reload_lock);
}

/* The server's watcher: reload a changed policy dir. */
static void poll_policy(void *ctx)
{
	webhook_admission_t *a = ctx;
	gpuq_diag_t diag = {{0}};
	uint64_t fp;

	if (!a->policy_dir)
		return; /* fed from outside: nothing on disk to watch */
	pthread_mutex_lock(&a->reload_lock);
	if (policy_dir_fingerprint(a->policy_dir, &fp, &diag)) {
		if (!a->policy_fp_failed)
			gpuq_log(GPUQ_LOG_ERROR, MODULE, "cannot watch --policy-dir: %s", diag.msg);
		a->policy_fp_failed = true;
	} else {
		a->policy_fp_failed = false;
		if (fp != a->policy_seen_fp)
			/* A first failure waits one poll: an editor may be mid-write. */
			policy_reload_locked(a, false);
		else if (a->policy_pending)
			policy_reload_locked(a, true);
	}
	pthread_mutex_unlock(&a->reload_lock);
}

/* /readyz: not ready without a policy. */
static const char *ready(void *ctx)
{
	policy_t *policy = policy_current(ctx);

	policy_unref(policy);
	return policy ? NULL : "not ready: no policy: not synced with the apiserver\n";
}

/* The whole body of a POST /mutate or /validate is in: decide it against
 * the current policy. */
static void decide(void *ctx, const http_post_t *rq)
{
	webhook_admission_t *a = ctx;
	webhook_endpoint_t ep =
	    rq->route == HTTP_ROUTE_VALIDATE ? WEBHOOK_VALIDATE : WEBHOOK_MUTATE;
	const char *path = ep == WEBHOOK_VALIDATE ? "/validate" : "/mutate";
	webhook_config_t cfg = a->review_cfg; /* with this review's owners */
	webhook_owners_t *owners;
	webhook_reply_t out;
	policy_t *policy;
	uint64_t elapsed;
	int rc;

	memset(&out, 0, sizeof(out));
	pthread_mutex_lock(&a->policy_lock);
	policy = policy_ref(a->policy);
	owners = webhook_owners_ref(a->owners);
	pthread_mutex_unlock(&a->policy_lock);
	cfg.owners = owners;
	cfg.allows = a->allows;
	cfg.now_ms = gpuq_mono_ms();
	rc = webhook_review_handle(ep, policy, &cfg, rq->body, rq->len, &out);
	policy_unref(policy);
	webhook_owners_unref(owners);
	if (rc) {
		static const char msg[] = "internal error: the review could not be decided\n";

		gpuq_log(GPUQ_LOG_ERROR, MODULE, "%s: review failed: %s", path, gpuq_strerror(rc));
		http_post_reply(rq, 500, "text/plain; charset=utf-8", msg, sizeof(msg) - 1, true);
		webhook_metrics_admission_observe(a->metrics, ep, "other", "error",
						  http_post_elapsed_ns(rq));
		return;
	}
	http_post_reply(rq, (unsigned)out.http_status,
			out.content_type ? out.content_type : "application/json",
			out.body ? out.body : "", out.len, out.http_status != 200);
	elapsed = http_post_elapsed_ns(rq);
	webhook_metrics_admission_observe(a->metrics, ep, out.kind, out.decision, elapsed);
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "%s: %d %s %s, %zu bytes in %" PRIu64 " us", path,
		 out.http_status, out.kind ? out.kind : "-", out.decision ? out.decision : "-",
		 rq->len, elapsed / 1000);
	webhook_reply_deinit(&out);
}

int webhook_admission_create(http_server_t *srv, const char *policy_dir,
			     const webhook_config_t *cfg, webhook_admission_t **out,
			     gpuq_diag_t *diag)
{
	webhook_admission_t *a;
	int rc;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return GPUQ_ENOMEM;
	pthread_mutex_init(&a->policy_lock, NULL);
	pthread_mutex_init(&a->reload_lock, NULL);
	if (cfg)
		a->review_cfg = *cfg;
	rc = webhook_metrics_create(&a->metrics);
	if (!rc)
		rc = webhook_allows_create(&a->allows);
	if (!rc && policy_dir && !(a->policy_dir = strdup(policy_dir)))
		rc = GPUQ_ENOMEM;
	if (!rc && policy_dir) {
		rc = policy_load_dir(policy_dir, NULL, &a->policy, diag);
		if (rc)
			gpuq_diag_prefix(diag, "--policy-dir \"%s\": ", policy_dir);
	}
	if (rc) {
		webhook_admission_destroy(a);
		return rc;
	}
	if (a->policy) {
		a->policy_seen_fp = policy_fingerprint(a->policy);
		a->policy_generation = 1;
	}
	/* else no policy: fail closed until webhook_admission_policy_set */
	webhook_metrics_policy_generation_set(a->metrics, a->policy_generation);
	a->srv = srv;
	http_server_post_set(srv, decide, a);
	http_server_ready_set(srv, ready, a);
	http_server_watch_set(srv, poll_policy, a);
	http_metrics_source_slot_set(http_server_metrics(srv), HTTP_METRICS_SOURCE_ADMISSION,
				     webhook_metrics_render, a->metrics);
	gpuq_log(GPUQ_LOG_INFO, MODULE, "admission on /mutate and /validate: %s",
		 a->policy_dir ? "policy from --policy-dir"
			       : "no policy until the controller syncs (failing closed)");
	*out = a;
	return GPUQ_OK;
}

void webhook_admission_destroy(webhook_admission_t *a)
{
	if (!a)
		return;
	if (a->srv)
		http_metrics_source_slot_set(http_server_metrics(a->srv),
					     HTTP_METRICS_SOURCE_ADMISSION, NULL, NULL);
	policy_unref(a->policy);
	webhook_owners_unref(a->owners);
	webhook_allows_destroy(a->allows);
	webhook_metrics_destroy(a->metrics);
	pthread_mutex_destroy(&a->policy_lock);
	pthread_mutex_destroy(&a->reload_lock);
	free(a->policy_dir);
	free(a);
}

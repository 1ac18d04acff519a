/*
 * webhook: admission. The AdmissionReview codec, gpuq's mutation and
 * validation rules for GPU Pods and batch/v1 Jobs, the object decoder the
 * controller shares, and the policy snapshot reviews are decided from,
 * served on the daemon's HTTP server (http/: /mutate and /validate) as one
 * of its peers.
 *
 * The design decision that matters: a review is decided purely from an
 * immutable policy snapshot in memory (never a call to the apiserver while it
 * waits on us), so the decision functions are deterministic, testable
 * without a server, and answer in microseconds. Without a snapshot nothing
 * is decided: Pod and Job reviews fail closed (503). The same decoding of a
 * Pod or Job is offered to the controller (webhook_object_decode), so the
 * two never disagree about what a workload asks for.
 */
#ifndef GPUQ_WEBHOOK_H
#define GPUQ_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"

/* ==== Section A: admission decisions (admit.c, mutate.c, validate.c) ==== */

/*
 * An AdmissionReview (admission.k8s.io/v1) in, a reply out. /mutate defaults
 * GPU Jobs (suspend, LimitRange defaults, queue label) and gates GPU Pods;
 * /validate refuses what can never run or would bypass the queue. The rules,
 * labels and messages are in docs/admission.md.
 */
#include "policy/policy.h"

/* Labels, annotations and the scheduling gate gpuq reads and writes. */
#define WEBHOOK_LABEL_QUEUE "gpuq.dev/queue-name"	      /* LocalQueue of the workload */
#define WEBHOOK_LABEL_KUEUE_QUEUE "kueue.x-k8s.io/queue-name" /* accepted as the same */
#define WEBHOOK_LABEL_MANAGED "gpuq.dev/managed"	      /* "true" on a gpuq Job's template */
#define WEBHOOK_ANNOT_ADMITTED "gpuq.dev/admitted" /* "true": set by the controller only */
#define WEBHOOK_GATE "gpuq.dev/admission"	   /* Pod scheduling gate */
#define WEBHOOK_DEFAULT_QUEUE "default"		   /* queue when none is named */
#define WEBHOOK_CONTROLLER_USER_DEFAULT "system:serviceaccount:gpuq-system:gpuq"

/* Deepest JSON nesting accepted in a review body (a Pod with managedFields
 * nests about 20 deep inside the envelope); checked by a first scan, so the
 * parser's stack of open containers (admit_json.c) is sized before it runs. */
#define WEBHOOK_JSON_DEPTH_MAX 64
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

/* ---- Objects as the admission rules see them, for the controller ---- */

/*
 * One Pod or batch/v1 Job as the apiserver returns it in a LIST or a WATCH
 * event (the object itself, not a review), decoded by the very code the
 * admission rules use (the same fast reader, the same GPU detection, pod
 * count, queue label, LimitRange defaulting and effective pod request), so
 * the controller and the webhook can never disagree about what a workload
 * asks for.
 */

typedef enum {
	WEBHOOK_KIND_OTHER = 0, /* neither of the below */
	WEBHOOK_KIND_POD = 1,	/* core/v1 Pod */
	WEBHOOK_KIND_JOB = 2,	/* batch/v1 Job */
} webhook_kind_t;

/* Caps of webhook_object_decode; anything past one is refused (GPUQ_EINVAL,
 * naming the field), never truncated. */
/* JSON bytes of one object (the apiserver stores at most 1.5 MiB). */
#define WEBHOOK_OBJECT_MAX WEBHOOK_REVIEW_MAX
/* Bytes of any string kept (the longest valid one is a label key or
 * toleration key: a 253-byte prefix, '/', a 63-byte name). */
#define WEBHOOK_OBJECT_STR_MAX 317
/* nodeSelector entries and tolerations of the pod spec (the queue core keeps
 * at most 32 per pod set, QUEUE_SELECTORS_MAX; real pods have a handful). */
#define WEBHOOK_OBJECT_SELECTOR_MAX 32
#define WEBHOOK_OBJECT_TOLERATIONS_MAX 32

/* One resource of the effective per-pod request. */
typedef struct {
	char name[QUOTA_RES_NAME_MAX]; /* resource, e.g. "nvidia.com/gpu", "cpu" */
	quota_qty_t qty;	       /* its quantity, per pod */
	int64_t amount;		       /* quota_qty_amount(name, qty): millicores for cpu,
					  whole units (rounded up) for the rest */
} webhook_request_t;

/* One nodeSelector entry. */
typedef struct {
	const char *key;   /* label key */
	const char *value; /* label value ("" allowed) */
} webhook_node_label_t;

/* One toleration; members NULL when absent (tolerationSeconds is not kept). */
typedef struct {
	const char *key;    /* key (NULL: every key, with operator Exists) */
	const char *op;	    /* operator: "Equal" (default) or "Exists" */
	const char *value;  /* value */
	const char *effect; /* NoSchedule, PreferNoSchedule, NoExecute; NULL: all */
} webhook_toleration_t;

/* Every string is owned by the object (one allocation, freed by
 * webhook_object_deinit) and NUL-terminated; NULL where noted. About 7 KiB
 * (the arrays are inline): fine on a stack. */
typedef struct {
	webhook_kind_t kind;	      /* WEBHOOK_KIND_POD or WEBHOOK_KIND_JOB */
	const char *namespace_;	      /* metadata.namespace (required) */
	const char *name;	      /* metadata.name (required) */
	const char *uid;	      /* metadata.uid (required) */
	const char *resource_version; /* metadata.resourceVersion ("" when absent) */
	int64_t created_ms;	      /* metadata.creationTimestamp (required), ms since
					 the epoch */
	const char *queue;	      /* label gpuq.dev/queue-name, else
					 kueue.x-k8s.io/queue-name; NULL when neither */
	bool gpu;		      /* asks for a GPU (resources or DRA claims) */
	int64_t pods;		      /* pods admitted at once: a Job's parallelism
					 (default 1), or min(parallelism, completions) when
					 completions is set; a Pod: 1 */
	const char *pod_group;	      /* Pod: label kueue.x-k8s.io/pod-group-name; NULL */
	int64_t pod_group_total;      /* Pod in a group: annotation
					 kueue.x-k8s.io/pod-group-total-count (1..100000);
					 else 0 */
	bool suspend;		      /* Job: spec.suspend */
	bool gated;		      /* Pod: carries the gpuq.dev/admission gate */
	bool admitted;		      /* annotation gpuq.dev/admitted is "true" on the object */
	int32_t priority;	      /* the pod spec's priority if set; else its
					 priorityClassName's value; else the global default
					 PriorityClass's; else 0 */
	const char *priority_class;   /* the class the priority came from (the global
					 default's name when none is named); NULL when none */
	bool priority_class_unknown;  /* priorityClassName names no PriorityClass of the
					 policy: priority is 0 (the apiserver will refuse
					 the Job's Pods) */
	/* The effective request of one pod: quota_pod_requests (sidecar-aware,
	 * overhead included) of a Job's template with the namespace's
	 * LimitRange defaults its Pods will get, or of a Pod as it is; plus the
	 * GPUs of DRA claims as nvidia.com/gpu. */
	webhook_request_t requests[QUOTA_RESLIST_MAX];
	size_t n_requests;						  /* entries in requests */
	webhook_node_label_t node_selector[WEBHOOK_OBJECT_SELECTOR_MAX];  /* the pod spec's */
	size_t n_node_selector;						  /* entries used */
	webhook_toleration_t tolerations[WEBHOOK_OBJECT_TOLERATIONS_MAX]; /* the pod spec's */
	size_t n_tolerations;						  /* entries used */
	int64_t active;		       /* Job: status.active (0 when absent) */
	int64_t succeeded;	       /* Job: status.succeeded */
	int64_t failed;		       /* Job: status.failed */
	int64_t ready_pods;	       /* Job: status.ready; Pod: 1 when ready, else 0 */
	bool finished;		       /* Job: a Complete or Failed condition with status
					  "True"; Pod: phase Succeeded or Failed */
	bool ready;		       /* Pod: condition Ready is "True" */
	const char *phase;	       /* Pod: status.phase; NULL when absent, and for Jobs */
	const char *node_name;	       /* Pod: spec.nodeName; NULL when absent */
	const char *owner_api_version; /* the ownerReference with controller: true
					  (a Job's Pod: "batch/v1"); NULL when none */
	const char *owner_kind;	       /* its kind ("Job"); NULL when none */
	const char *owner_name;	       /* its name; NULL when none */
	const char *owner_uid;	       /* its uid; NULL when none */
	char *mem;		       /* owned: every string above */
} webhook_object_t;

/* Decode json[0..len) (need not be NUL-terminated), one v1 Pod or batch/v1
 * Job, into *out, against policy (read only; may be NULL: then no LimitRange
 * defaults, no DRA claims, no PriorityClasses) and cfg (may be NULL: no extra
 * GPU names). Pure and thread-safe. GPUQ_OK; GPUQ_EINVAL for any input it
 * refuses (not JSON, another kind, a missing required field, a field of the
 * wrong type, a bad quantity or timestamp, a cap above), with diag naming the
 * field and the value; GPUQ_ENOMEM. On error *out is zeroed (deinit is still
 * safe). Free with webhook_object_deinit. */
int webhook_object_decode(const policy_t *policy, const webhook_config_t *cfg, const char *json,
			  size_t len, webhook_object_t *out, gpuq_diag_t *diag);

/* Free o's strings and zero *o. Accepts a zeroed or already freed object. */
void webhook_object_deinit(webhook_object_t *o);

/* ==== Section B: admission on the HTTP server (admission.c,
 * admission_metrics.c) ==== */

/*
 * The AdmissionReview routes (POST /mutate, /validate) on the daemon's HTTP
 * server (http/), which reads and caps the body and knows nothing of what
 * it carries. The policy snapshot reviews are decided against is held here
 * by reference count and swapped under a short lock: with a policy dir the
 * server's watcher polls it every poll interval and loads a changed policy
 * beside the old one; only one that loads completely (passing
 * policy_load_dir) replaces it. Without a policy dir the snapshot comes from
 * outside (webhook_admission_policy_set, the controller) and until it does
 * reviews fail closed and /readyz answers 503. A decision holds a reference
 * to the snapshot it started on, so a swap never changes a review in flight.
 */
#include "http/http.h"

/* Admission's own metrics: reviews decided by endpoint, kind and decision,
 * their latency, policy reloads and the generation serving. Lock-free. */
typedef struct webhook_metrics webhook_metrics_t;

/* GPUQ_OK or GPUQ_ENOMEM. */
int webhook_metrics_create(webhook_metrics_t **out);
void webhook_metrics_destroy(webhook_metrics_t *m); /* NULL is a no-op */

/* One decided review: kind is "Pod", "Job" or "other", decision "allowed",
 * "patched", "denied", "invalid", "unavailable" (503: no policy) or "error"
 * (anything else counts as "other" kind / "error" decision). elapsed_ns from
 * the request's headers to its reply. */
void webhook_metrics_admission_observe(webhook_metrics_t *m, webhook_endpoint_t ep,
				       const char *kind, const char *decision, uint64_t elapsed_ns);
void webhook_metrics_policy_reload_count(webhook_metrics_t *m, bool ok);
void webhook_metrics_policy_generation_set(webhook_metrics_t *m, uint64_t generation);

/* The families above as a /metrics source (an http_metrics_source_fn; ctx
 * is the webhook_metrics_t): gpuq_admission_requests_total,
 * gpuq_admission_duration_seconds, gpuq_policy_reloads_total,
 * gpuq_policy_generation. */
void webhook_metrics_render(void *ctx, http_metrics_text_t *t);

/* Admission on one HTTP server. */
typedef struct webhook_admission webhook_admission_t;

/* Answer /mutate and /validate on srv (its post hook), make /readyz wait
 * for a policy (its ready hook), watch policy_dir on its watcher (when
 * given) and render the metrics above in its HTTP_METRICS_SOURCE_ADMISSION
 * slot. Before http_server_start. policy_dir (copied) is loaded now,
 * refusing a bad policy (diag holds policy_load_dir's message, prefixed
 * with --policy-dir); NULL: no policy until webhook_admission_policy_set,
 * and reviews of Pods and Jobs are answered 503 until then. cfg is copied
 * (its arrays borrowed: they must outlive the admission); NULL: defaults.
 * GPUQ_OK, the policy's codes, GPUQ_ENOMEM. */
int webhook_admission_create(http_server_t *srv, const char *policy_dir,
			     const webhook_config_t *cfg, webhook_admission_t **out,
			     gpuq_diag_t *diag);

/* Free, after http_server_stop and before http_server_destroy (its metrics
 * source is taken off the server's registry). NULL is a no-op. */
void webhook_admission_destroy(webhook_admission_t *a);

/* Reload the policy dir now (SIGHUP). A policy that fails to load is logged
 * with its diagnostic and counted; the old one keeps serving. Returns the
 * load's code; GPUQ_EINVAL (nothing done) without a policy dir.
 * Thread-safe (serialised with the watcher and webhook_admission_policy_set). */
int webhook_admission_policy_reload(webhook_admission_t *a);

/* Serve policy p from now on: an external feed (the controller builds
 * snapshots from the cluster). p must be finished (policy_finish); the
 * admission takes its own reference (the caller keeps its own). Swapped in
 * exactly as a dir reload is: reviews already deciding finish on the old
 * snapshot, gpuq_policy_generation goes up by one and a successful reload is
 * counted. GPUQ_OK; GPUQ_EINVAL (nothing done, logged) when p is NULL or the
 * admission reads a policy dir (one policy source only). Thread-safe. */
int webhook_admission_policy_set(webhook_admission_t *a, policy_t *p);

/* Drop the policy: back to failing closed (Pod and Job reviews 503, /readyz
 * 503) until the next webhook_admission_policy_set. For the controller when
 * it can no longer vouch for its snapshot, e.g. its watches have been down
 * longer than it allows: deciding from a stale policy could admit work the
 * cluster's quotas no longer allow. gpuq_policy_generation is left as is. A
 * no-op (logged) for an admission that reads a policy dir. Thread-safe. */
void webhook_admission_policy_clear(webhook_admission_t *a);

#endif

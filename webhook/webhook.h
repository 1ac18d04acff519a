/*
 * webhook: admission. The AdmissionReview codec, gpuq's mutation and
 * validation rules for GPU Pods and batch/v1 Jobs, and the policy snapshot
 * reviews are decided from, served on the daemon's HTTP server (http/:
 * /mutate and /validate) as one of its peers.
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

/* Identities per parent kind (the table's have at most two;
 * cmd/serve_opts.c refuses more --child-creator entries for one kind). */
#define WEBHOOK_CREATORS_MAX 8

/* One controller identity whose children of a kind pass as that kind's
 * (`gpuq serve --child-creator KIND=USER`): the Pods a Job controller makes,
 * the Jobs of a JobSet, ... */
typedef struct {
	workload_kind_t parent; /* the held parent kind whose children it makes */
	const char *user;	/* its userInfo.username (borrowed) */
} webhook_creator_t;

/* The held parents gpuq admitted and left running, as this replica's
 * controller last saw them in its watch cache (their metadata.uid): the
 * evidence an exempt Pod's ownerReference must meet. Each names the
 * workload its Pods count against (itself, or the JobSet or TrainJob above
 * it) with the GPUs that workload was admitted for and the GPUs its
 * unfinished Pods hold: an exempt Pod passes only while it fits in the
 * difference (a Pod made beside one it replaces, still terminating, would
 * run two Pods on one Pod's quota). Immutable once published, reference
 * counted, read by review threads while the controller builds the next
 * one. Capped by the controller's cache (one uid per cached parent). */
typedef struct webhook_owners webhook_owners_t;

/* The Pods an exempt review let pass that no published set counts yet
 * (the controller has not seen them): their GPUs are taken from their
 * workload's room until a set that counts them is served. One per
 * admission, shared by its review threads (a mutex). */
typedef struct webhook_allows webhook_allows_t;

/* An empty set with room for cap uids (and cap workloads). GPUQ_OK,
 * GPUQ_ENOMEM. */
int webhook_owners_create(size_t cap, webhook_owners_t **out);
/* Add a workload owners count against: uid, and for messages "kind ns/name",
 * copied; admitted and held its GPUs; its index in *top. GPUQ_OK,
 * GPUQ_ENOMEM, GPUQ_ELIMIT (cap reached). */
int webhook_owners_top(webhook_owners_t *o, const char *uid, const char *kind, const char *ns,
		       const char *name, int64_t admitted, int64_t held, size_t *top);
/* Add owner uid (copied) whose Pods count against workload top (an index
 * from webhook_owners_top; SIZE_MAX: not weighed), before
 * webhook_owners_finish. GPUQ_OK, GPUQ_ENOMEM, GPUQ_ELIMIT (cap reached). */
int webhook_owners_add_weighed(webhook_owners_t *o, const char *uid, size_t top);
/* ... not weighed. */
int webhook_owners_add(webhook_owners_t *o, const char *uid);
/* Sort: the set is read only from now on (webhook_owners_has). */
void webhook_owners_finish(webhook_owners_t *o);
/* Whether uid is in the finished set o (NULL: an empty set). Thread-safe. */
bool webhook_owners_has(const webhook_owners_t *o, const char *uid);
/* One more reference (NULL passes through); release with _unref (frees at
 * the last; NULL is a no-op). Thread-safe. */
webhook_owners_t *webhook_owners_ref(webhook_owners_t *o);
void webhook_owners_unref(webhook_owners_t *o);

/* What an exempt Pod was weighed against (borrowed from the set). */
typedef struct {
	const char *what; /* its workload, "Kind ns/name"; NULL: not weighed */
	int64_t admitted; /* the GPUs it was admitted for */
	int64_t held;	  /* held by its unfinished Pods, as the set counts them */
	int64_t pending;  /* taken by Pods let pass that the set does not count yet */
} webhook_room_t;

/* Pod pod_uid (of owner_uid in finished set o) takes gpus of its workload's
 * room at now_ms, remembered in l (NULL: weighed against o alone): GPUQ_OK
 * (taken; or not weighed, or gpus <= 0), GPUQ_EDENIED (they do not fit: *out
 * says why), GPUQ_EAGAIN (l is full), GPUQ_ENOTFOUND (owner_uid not in o).
 * Thread-safe. */
int webhook_owners_take(const webhook_owners_t *o, webhook_allows_t *l, const char *owner_uid,
			const char *pod_uid, int64_t gpus, int64_t now_ms, webhook_room_t *out);

/* An empty ledger. GPUQ_OK, GPUQ_ENOMEM. */
int webhook_allows_create(webhook_allows_t **out);
void webhook_allows_destroy(webhook_allows_t *l);
/* Set o (finished, not yet served) is about to be served: it is stamped
 * with the ledger's next generation, and every Pod let pass that seen(ctx,
 * pod uid) says o counts is taken from o on only by o's count (reviews on an
 * older set still count it as pending). Entries no review needs any more go.
 * No-op when l is NULL. */
void webhook_allows_publish(webhook_allows_t *l, webhook_owners_t *o, int64_t now_ms,
			    bool (*seen)(void *ctx, const char *pod_uid), void *ctx);
/* Pods let pass that no set counts yet (for tests and diagnostics). */
size_t webhook_allows_pending(webhook_allows_t *l);

typedef struct {
	const char *const *gpu_resources;  /* extra GPU resource names (--gpu-resource) */
	size_t n_gpu_resources;		   /* entries in gpu_resources */
	const char *controller_user;	   /* userInfo.username of gpuq's controller;
					      NULL means WEBHOOK_CONTROLLER_USER_DEFAULT */
	const webhook_creator_t *creators; /* who makes each held parent's children
					     (--child-creator; borrowed): a parent
					     kind named here has only these, the
					     others keep the integration table's
					     (workload/kinds.c); NULL: all the table's */
	size_t n_creators;		   /* entries in creators */
	const webhook_owners_t *owners;	   /* the admitted, running parents (borrowed
					      for one review); NULL: none known, and a
					      Pod claiming one is refused (fail closed) */
	webhook_allows_t *allows;	   /* the exempt Pods let pass and not yet
					      counted (borrowed; the one state a
					      review writes, under its lock); NULL:
					      each weighed against owners alone */
	int64_t now_ms;			   /* the review's time for allows (the
					      caller's clock: the review reads none) */
} webhook_config_t;

/* The identities that make children of parent under cfg (its --child-creator
 * entries, else the integration table's), written into out[0..cap) (borrowed
 * strings); returns how many. */
size_t webhook_creators_of(const webhook_config_t *cfg, const workload_integration_t *parent,
			   const char **out, size_t cap);

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
 * globals; thread-safe. The one state it writes is cfg->allows (an exempt
 * Pod let pass, under the ledger's lock).
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

/* Serve owners (finished) as the admitted parents from now on; the
 * admission takes its own reference (the caller keeps its own); NULL: none
 * known (every Pod that claims an admitted owner is refused until the next
 * set). Reviews already deciding finish on the set they took. Thread-safe. */
void webhook_admission_owners_set(webhook_admission_t *a, webhook_owners_t *owners);
/* ... first stamping owners with the admission's ledger
 * (webhook_allows_publish: seen(ctx, pod uid) says whether owners counts a
 * Pod the webhook let pass). */
void webhook_admission_owners_publish(webhook_admission_t *a, webhook_owners_t *owners,
				      bool (*seen)(void *ctx, const char *pod_uid), void *ctx);

/* Drop the policy: back to failing closed (Pod and Job reviews 503, /readyz
 * 503) until the next webhook_admission_policy_set. For the controller when
 * it can no longer vouch for its snapshot, e.g. its watches have been down
 * longer than it allows: deciding from a stale policy could admit work the
 * cluster's quotas no longer allow. gpuq_policy_generation is left as is. A
 * no-op (logged) for an admission that reads a policy dir. Thread-safe. */
void webhook_admission_policy_clear(webhook_admission_t *a);

#endif

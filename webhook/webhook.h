/*
 * webhook: the HTTPS admission server (libmicrohttpd over GnuTLS, TLS 1.2 and
 * 1.3, certificates reloaded from disk without dropping a request), the
 * AdmissionReview codec, and gpuq's mutation and validation rules for GPU
 * Pods and batch/v1 Jobs.
 *
 * The design decision that matters: a review is decided purely from an
 * immutable policy snapshot in memory (never a call to the apiserver while it
 * waits on us), so the decision functions are deterministic, testable
 * without a server, and answer in microseconds.
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
#define WEBHOOK_LABEL_QUEUE "gpuq.dev/queue-name"        /* LocalQueue of the workload */
#define WEBHOOK_LABEL_KUEUE_QUEUE "kueue.x-k8s.io/queue-name" /* accepted as the same */
#define WEBHOOK_LABEL_MANAGED "gpuq.dev/managed"         /* "true" on a gpuq Job's template */
#define WEBHOOK_ANNOT_ADMITTED "gpuq.dev/admitted"       /* "true": set by the controller only */
#define WEBHOOK_GATE "gpuq.dev/admission"                /* Pod scheduling gate */
#define WEBHOOK_DEFAULT_QUEUE "default"                  /* queue when none is named */
#define WEBHOOK_CONTROLLER_USER_DEFAULT "system:serviceaccount:gpuq-system:gpuq"

/* Deepest JSON nesting accepted in a review body (a Pod with managedFields
 * nests about 20 deep inside the envelope); checked by a scan before parsing
 * so the recursive parser never sees a hostile depth. */
#define WEBHOOK_JSON_DEPTH_MAX 64
/* Largest review body accepted (the apiserver's own request cap is 3 MiB). */
#define WEBHOOK_REVIEW_MAX (3u << 20)

typedef enum {
	WEBHOOK_MUTATE = 0,   /* POST /mutate */
	WEBHOOK_VALIDATE = 1, /* POST /validate */
} webhook_endpoint_t;

typedef struct {
	const char *const *gpu_resources; /* extra GPU resource names (--gpu-resource) */
	size_t n_gpu_resources;           /* entries in gpu_resources */
	const char *controller_user;      /* userInfo.username of gpuq's controller;
	                                     NULL means WEBHOOK_CONTROLLER_USER_DEFAULT */
} webhook_config_t;

typedef struct {
	int http_status;          /* 200 (a review), 400 (bad input) */
	char *body;               /* owned: AdmissionReview JSON or a text/plain sentence */
	size_t len;               /* bytes in body (no NUL counted; body is NUL-terminated) */
	const char *kind;         /* static: "Pod", "Job" or "other" (a metrics label) */
	const char *decision;     /* static: "allowed", "patched", "denied" or "invalid" */
	const char *content_type; /* static: "application/json" or "text/plain; charset=utf-8" */
} webhook_reply_t;

/* Decide one AdmissionReview. body[0..len) is the request body (need not be
 * NUL-terminated); policy is the snapshot to decide against (read only, may
 * be shared by threads); cfg may be NULL (no extra GPU names, default
 * controller user). Pure: no I/O, no clock, no globals; thread-safe.
 *
 * Returns GPUQ_OK with *out filled for every input, good or bad:
 * - 200 with a v1 AdmissionReview echoing request.uid: allowed, patched
 *   (mutate only), or denied (status code 403 Forbidden for a policy refusal,
 *   400 BadRequest for a malformed object, e.g. an unparsable quantity);
 * - 400 with a text/plain sentence when the body is not a usable review (not
 *   JSON, nested deeper than WEBHOOK_JSON_DEPTH_MAX, larger than
 *   WEBHOOK_REVIEW_MAX, wrong apiVersion/kind, no request.uid).
 * Returns GPUQ_ENOMEM (out zeroed, nothing to free) when memory ran out; the
 * caller answers 500. The caller frees out with webhook_reply_deinit. */
int webhook_review_handle(webhook_endpoint_t ep, const policy_t *policy,
			  const webhook_config_t *cfg, const char *body, size_t len,
			  webhook_reply_t *out);

/* Free out->body and zero *out. Accepts a zeroed or already freed reply. */
void webhook_reply_deinit(webhook_reply_t *out);

/* ==== Section B: the HTTPS server and metrics (server.c, metrics.c) ==== */

#endif

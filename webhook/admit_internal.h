/*
 * webhook/admit_internal.h: shared by the admission decision files only
 * (admit.c, patch.c, mutate.c, validate.c); not part of the module's public
 * interface (that is webhook.h, Section A).
 *
 * A review is decoded once into a webhook_review_t (the request envelope,
 * borrowed from one jv_doc_t, jv/'s value tree: a reader of its own, not
 * jansson, because jansson needs about 7x the instructions per review,
 * bench/bench_parse) and each object into a workload_view_t (workload/: its
 * pod sets' containers as quota sees them, the same decoding the controller
 * uses). Mutations are appended as JSON Patch text; a decision is one
 * verdict plus one message.
 */
#ifndef GPUQ_WEBHOOK_ADMIT_INTERNAL_H
#define GPUQ_WEBHOOK_ADMIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jv/jv.h"
#include "quota/quota.h"
#include "webhook/webhook.h"
#include "workload/workload.h"

/* Largest JSON Patch gpuq writes: a few labels plus LimitRange defaults for
 * every container, far below this. */
#define WEBHOOK_PATCH_MAX (256u << 10)
/* Largest reply body (the patch in base64 plus the envelope). */
#define WEBHOOK_REPLY_MAX ((size_t)WEBHOOK_PATCH_MAX * 2)
/* Warnings per reply; the apiserver shows each, each under 120 bytes. */
#define WEBHOOK_WARNINGS_MAX 4
#define WEBHOOK_WARNING_MAX 120

/* ---- Text buffer (patch.c) ---- */

typedef struct {
	char *p;    /* text, NUL-terminated */
	size_t len; /* bytes used (without the NUL) */
	size_t cap; /* bytes allocated */
	size_t max; /* cap on len + 1; more sets err = GPUQ_ELIMIT */
	bool heap;  /* p is malloc'd (else caller's stack buffer) */
	int err;    /* sticky: first failure, GPUQ_OK while fine */
} webhook_buf_t;

/* Start with the caller's stack buffer (may be NULL/0); grow on the heap. */
void webhook_buf_init(webhook_buf_t *b, char *stack, size_t stack_cap, size_t max);
void webhook_buf_deinit(webhook_buf_t *b);
/* Make room for n more bytes now (one allocation instead of several). */
void webhook_buf_reserve(webhook_buf_t *b, size_t n);
void webhook_buf_putn(webhook_buf_t *b, const char *s, size_t n);
void webhook_buf_puts(webhook_buf_t *b, const char *s);
void webhook_buf_printf(webhook_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s as a quoted JSON string. */
void webhook_buf_put_jstr(webhook_buf_t *b, const char *s);
/* s JSON-escaped, without quotes. */
void webhook_buf_put_jtext(webhook_buf_t *b, const char *s);
/* token as an RFC 6901 reference token (~0, ~1), JSON-escaped. */
void webhook_buf_put_ptr_token(webhook_buf_t *b, const char *token);
/* src[0..n) in base64 (RFC 4648, padded). */
void webhook_buf_put_base64(webhook_buf_t *b, const char *src, size_t n);

/* ---- JSON Patch (patch.c) ---- */

typedef struct {
	webhook_buf_t text; /* "[{...},{...}]" once finished */
	size_t n_ops;	    /* operations appended */
} webhook_patch_t;

void webhook_patch_init(webhook_patch_t *p, char *stack, size_t stack_cap);
void webhook_patch_deinit(webhook_patch_t *p);
/* Append {"op":"add","path":prefix[/token],"value":value_json}. prefix is a
 * JSON Pointer whose tokens need no escaping ("/spec/template/metadata");
 * token (may be NULL) is escaped (label keys, resource names). value_json is
 * JSON text. */
void webhook_patch_add(webhook_patch_t *p, const char *prefix, const char *token,
		       const char *value_json);
/* The same op with its value written by the caller: webhook_patch_open
 * appends {"op":"add","path":prefix[/token],"value": and returns the patch
 * text (owned by p) to write the value's JSON text into;
 * webhook_patch_close ends the op. A value built in place needs no buffer of
 * its own. */
webhook_buf_t *webhook_patch_open(webhook_patch_t *p, const char *prefix, const char *token);
void webhook_patch_close(webhook_patch_t *p);
/* Close the array; GPUQ_OK or the buffer's sticky error. */
int webhook_patch_finish(webhook_patch_t *p);

/* ---- The review (admit.c) ---- */

typedef enum {
	WEBHOOK_ALLOW = 0,   /* allowed (with a patch when one was built) */
	WEBHOOK_DENY = 1,    /* a policy refusal: 403 Forbidden */
	WEBHOOK_INVALID = 2, /* a malformed object: 400 BadRequest */
} webhook_verdict_t;

typedef struct {
	const policy_t *policy;	     /* snapshot decided against */
	const webhook_config_t *cfg; /* never NULL (a default when the caller gave none) */
	const char *controller_user; /* cfg's, or the default */
	webhook_endpoint_t ep;	     /* which endpoint */
	jv_doc_t doc;		     /* owned: the parsed body */
	const char *uid;	     /* request.uid (borrowed from root) */
	const char *op;		     /* request.operation */
	const char *ns;		     /* request.namespace ("" when absent) */
	const char *username;	     /* request.userInfo.username ("" when absent) */
	const char *sub_resource;    /* request.subResource ("" when absent) */
	workload_kind_t kind;	     /* from request.kind */
	const jv_t *obj;	     /* request.object (NULL when absent/null) */
	const jv_t *old;	     /* request.oldObject (NULL when absent/null) */
	webhook_verdict_t verdict;   /* the decision so far */
	char msg[GPUQ_DIAG_MAX];     /* denial message */
	webhook_patch_t patch;	     /* mutations (mutate only) */
	char warnings[WEBHOOK_WARNINGS_MAX][WEBHOOK_WARNING_MAX]; /* reply warnings */
	size_t n_warnings;					  /* entries used in warnings */
} webhook_review_t;

/* Set the verdict (DENY or INVALID) and message; the first one wins. */
void webhook_review_refuse(webhook_review_t *r, webhook_verdict_t v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add the warning "queued in <namespace>/<queue>: <a><b><c>", the namespace
 * and queue cut at 40 bytes each, the whole at WEBHOOK_WARNING_MAX - 1
 * bytes (as snprintf would cut "%.40s/%.40s"); dropped past
 * WEBHOOK_WARNINGS_MAX. Joined without a format parse: one per mutated
 * review. */
void webhook_review_warn_queued(webhook_review_t *r, const char *queue, const char *a,
				const char *b, const char *c);
/* Whether the requester is gpuq's own controller. */
bool webhook_review_by_controller(const webhook_review_t *r);
/* Whether the review's user makes parent's children (webhook_creators_of
 * under r->cfg), and the first such identity (for messages; "" when none). */
bool webhook_review_creator(const webhook_review_t *r, const workload_integration_t *parent);
const char *webhook_review_creator_first(const webhook_review_t *r,
					 const workload_integration_t *parent);

/* ---- Workloads ---- */

/* The workload layer's view of the review's object (cfg's GPU names). */
static inline workload_config_t webhook_workload_cfg(const webhook_config_t *cfg)
{
	return (workload_config_t){cfg ? cfg->gpu_resources : NULL, cfg ? cfg->n_gpu_resources : 0};
}
/* Whether the Pod is a child of an admitted parent whose own controller
 * made it: a Pod with a controller ownerReference to a held parent that
 * makes Pods (a batch/v1 Job, a RayCluster), label gpuq.dev/managed=true
 * and annotation gpuq.dev/admitted=true (copied from the admitted parent's
 * template), created by that parent's controller (the Job controller,
 * KubeRay's operator). */
typedef enum {
	WEBHOOK_EXEMPT_NO = 0,	    /* not claimed: a Pod like any other */
	WEBHOOK_EXEMPT_YES = 1,	    /* an admitted, running parent's Pod, made by
				       its controller: outside the queue */
	WEBHOOK_EXEMPT_UNPROVEN = 2 /* claimed (owner, marks and creator all say
				       so) but the owner's uid is not among the
				       admitted parents this replica has seen:
				       refused (webhook_pod_exempt_refuse) */
} webhook_exempt_t;

webhook_exempt_t webhook_pod_job_admitted(const webhook_review_t *r, const workload_view_t *w);
/* Refuse a WEBHOOK_EXEMPT_UNPROVEN Pod, naming its owner and why a retry
 * succeeds once the owner's release is in this replica's watch. */
void webhook_pod_exempt_refuse(webhook_review_t *r, const workload_view_t *w);
/* Whether Pod w is a member of a pod group gpuq holds, whatever it asks
 * for: it carries kueue.x-k8s.io/pod-group-name, is no held parent's Pod (a
 * Job's), and names a queue or its namespace has the LocalQueue the
 * webhook labels it with (Kueue's rule: every Pod of a group that queues is
 * gated). A member's creation cannot tell what the others ask for (a
 * CPU-only driver may come first), so every one is gated and counted; a
 * complete group that asks for no GPU is let through by the controller. */
bool webhook_pod_group_member(const webhook_review_t *r, const workload_view_t *w);
/* The row of the held parent w is a child of (a JobSet for its Jobs: the
 * controller ownerReference's kind), or NULL. */
const workload_integration_t *webhook_child_parent(const workload_view_t *w);

/* Refuse w's CREATE (or the UPDATE that gives it a GPU) when gpuq's
 * controller does not watch what holding it needs (policy_watch_has on the
 * review's snapshot): its own collection (a JobSet's jobsets), or its
 * child's where its pod sets or its Pods are the child's (a TrainJob's
 * JobSet, a Deployment's Pods). Held, it would wait for good; let through, it
 * would run uncounted: refused, saying why and when to retry. Returns true
 * when refused. */
bool webhook_review_unwatched(webhook_review_t *r, const workload_view_t *w);

/* ---- The rules ---- */

/* /mutate for r->obj (Pod or Job). Appends to r->patch, may refuse. */
int webhook_mutate_run(webhook_review_t *r);
/* /validate for r->obj / r->old. May refuse. */
int webhook_validate_run(webhook_review_t *r);

#endif

/*
 * webhook/admit_internal.h: shared by the admission decision files only
 * (admit.c, workload.c, patch.c, mutate.c, validate.c, fields.c, and
 * object.c, which decodes a Pod or Job for the controller with the same
 * code); not part of the module's public interface (that is webhook.h,
 * Section A).
 *
 * A review is decoded once into a webhook_review_t (the request envelope,
 * borrowed from one webhook_jdoc_t, admit_json.c's value tree: a reader of
 * its own, not jansson, because jansson needs about 7x the instructions per
 * review, bench/bench_parse) and each object into a webhook_workload_t (its
 * pod spec's containers as quota sees them), read through one set of typed
 * getters (fields.c). Mutations are appended as JSON Patch text; a decision
 * is one verdict plus one message.
 */
#ifndef GPUQ_WEBHOOK_ADMIT_INTERNAL_H
#define GPUQ_WEBHOOK_ADMIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quota/quota.h"
#include "webhook/webhook.h"

/* Largest JSON Patch gpuq writes: a few labels plus LimitRange defaults for
 * every container, far below this. */
#define WEBHOOK_PATCH_MAX (256u << 10)
/* Largest reply body (the patch in base64 plus the envelope). */
#define WEBHOOK_REPLY_MAX ((size_t)WEBHOOK_PATCH_MAX * 2)
/* JSON values (keys included) in one review body: a real Pod with
 * managedFields has a few thousand; each costs 40 bytes of memory. More is
 * refused with a 400, so a 3 MiB body of `[1,1,...]` cannot cost 60 MiB. */
#define WEBHOOK_JSON_VALUES_MAX 262144
/* Containers (init + app) decoded from one pod spec; Kubernetes has no cap,
 * real pods have a handful. More is refused with a clear denial. */
#define WEBHOOK_CONTAINERS_MAX 64
/* Warnings per reply; the apiserver shows each, each under 120 bytes. */
#define WEBHOOK_WARNINGS_MAX 4
#define WEBHOOK_WARNING_MAX 120
/* Pod resourceClaims decoded per pod spec (Kubernetes caps them at 32). */
#define WEBHOOK_CLAIMS_MAX 32

/* Kueue's plain-Pod gangs: Pods sharing this label form one workload of
 * the annotation's count of Pods. */
#define WEBHOOK_LABEL_POD_GROUP "kueue.x-k8s.io/pod-group-name"
#define WEBHOOK_ANNOT_POD_GROUP_COUNT "kueue.x-k8s.io/pod-group-total-count"
/* Largest pod-group count accepted (Kueue has no cap; no gang is larger). */
#define WEBHOOK_POD_GROUP_MAX 100000

/* Usernames of the Job controller in kube-controller-manager (with and
 * without --use-service-account-credentials): the only creators whose Pods
 * may carry gpuq.dev/admitted. */
#define WEBHOOK_JOB_CONTROLLER_SA "system:serviceaccount:kube-system:job-controller"
#define WEBHOOK_KCM_USER "system:kube-controller-manager"

/* ---- A read-only JSON document (admit_json.c) ---- */

typedef enum {
	WEBHOOK_JV_NULL = 0,
	WEBHOOK_JV_FALSE = 1,
	WEBHOOK_JV_TRUE = 2,
	WEBHOOK_JV_NUMBER = 3,
	WEBHOOK_JV_STRING = 4,
	WEBHOOK_JV_ARRAY = 5,
	WEBHOOK_JV_OBJECT = 6,
} webhook_jv_type_t;

typedef struct webhook_jv {
	webhook_jv_type_t type;		/* kind of value */
	bool fraction;			/* number: has a fraction or an exponent */
	uint32_t n;			/* array: elements; object: members */
	uint32_t len;			/* string/number: bytes in s (bodies are
					   under WEBHOOK_REVIEW_MAX) */
	const char *s;			/* string (decoded) or number (as written),
					   NUL-terminated; NULL for other kinds */
	const struct webhook_jv *first; /* array: first element; object: first key */
	const struct webhook_jv *next;	/* next element or key; a key's next is its value */
} webhook_jv_t;

typedef struct {
	webhook_jv_t *root; /* the top value (NULL after an error) */
	char *mem;	    /* owned: every node and string, one allocation */
} webhook_jdoc_t;

/* Parse buf[0..len) (need not be NUL-terminated). GPUQ_OK; GPUQ_EINVAL (not
 * JSON, or not UTF-8) or GPUQ_ELIMIT (nested deeper than
 * WEBHOOK_JSON_DEPTH_MAX, found by a scan before any parsing) with a sentence
 * in err; GPUQ_ENOMEM. Nodes live until webhook_jdoc_free. */
int webhook_jdoc_parse(webhook_jdoc_t *d, const char *buf, size_t len, char *err, size_t cap);
void webhook_jdoc_free(webhook_jdoc_t *d);
/* Member key of obj (the first one of that name), or NULL (obj NULL or not
 * an object, or no such key). */
const webhook_jv_t *webhook_jv_get(const webhook_jv_t *obj, const char *key);
/* Element i of arr, or NULL. O(i). */
const webhook_jv_t *webhook_jv_at(const webhook_jv_t *arr, size_t i);
/* An integral number (no fraction, no exponent) within int64 into *out. */
bool webhook_jv_int(const webhook_jv_t *v, int64_t *out);

static inline bool webhook_jv_is(const webhook_jv_t *v, webhook_jv_type_t type)
{
	return v && v->type == type;
}

/* Elements of an array (0 for anything else). */
static inline size_t webhook_jv_count(const webhook_jv_t *v)
{
	return webhook_jv_is(v, WEBHOOK_JV_ARRAY) ? v->n : 0;
}

/* The first element of an array (follow ->next), or NULL. */
static inline const webhook_jv_t *webhook_jv_first(const webhook_jv_t *v)
{
	return v && v->type == WEBHOOK_JV_ARRAY ? v->first : NULL;
}

/* The text of a string value, or NULL. */
static inline const char *webhook_jv_str(const webhook_jv_t *v)
{
	return webhook_jv_is(v, WEBHOOK_JV_STRING) ? v->s : NULL;
}

/* ---- Typed members of a document (fields.c) ----
 *
 * The one getter set over the reader's tree, for the rules' decoding
 * (workload.c) and the controller's (object.c). Lenient reads return NULL for
 * anything not of the asked type; checked reads refuse a member of another
 * type with GPUQ_EINVAL and one sentence naming the object, the field and
 * the value, and read an absent or null member as absent. */

/* The object whose members are read, named in every refusal:
 * `<kind> "<name>": <path>: <what>`. */
typedef struct {
	const char *kind_name; /* "Pod", "Job" ("object" until the kind is known) */
	const char *name;      /* its name ("" until known; at most 253 bytes shown) */
	gpuq_diag_t *diag;     /* where refusals go */
} webhook_fields_t;

/* What v is, for messages: "null", "false", "true", "a number", "a string",
 * "an array" or "an object". */
const char *webhook_jv_type_name(const webhook_jv_t *v);
/* Member key of obj as a string, or NULL (absent, null, or not a string). */
const char *webhook_json_str(const webhook_jv_t *obj, const char *key);
/* Member key of obj as an object, or NULL (absent, null, or not an object). */
const webhook_jv_t *webhook_json_obj(const webhook_jv_t *obj, const char *key);

/* Refuse: GPUQ_EINVAL with `<kind> "<name>": <path>: <fmt...>`. */
int webhook_fields_refuse(const webhook_fields_t *f, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Refuse v at path for not being of type (an object, an array or a string):
 * "must be an object, not a string \"x\"" (a string's or number's text
 * shown, cut at 64 bytes). */
int webhook_fields_want(const webhook_fields_t *f, const char *path, const webhook_jv_t *v,
			webhook_jv_type_t type);
/* Member key of obj of type (object, array or string) into *out; NULL when
 * absent or null; refused (webhook_fields_want) when of another type. */
int webhook_fields_typed(const webhook_fields_t *f, const webhook_jv_t *obj, const char *key,
			 webhook_jv_type_t type, const char *path, const webhook_jv_t **out);
/* A string member, borrowed from the document: NULL when absent or null;
 * when required, absent, null and "" are refused ("Required value"). */
int webhook_fields_str(const webhook_fields_t *f, const webhook_jv_t *obj, const char *key,
		       const char *path, bool required, const char **out);
/* An integral number member within [min, max] (no fraction, no exponent);
 * def when absent or null. Refused: "invalid value \"2.5\": must be a
 * non-negative integer" (or a 32-bit integer, or a whole number from min to
 * max). */
int webhook_fields_int(const webhook_fields_t *f, const webhook_jv_t *obj, const char *key,
		       const char *path, int64_t def, int64_t min, int64_t max, int64_t *out);

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
	webhook_jdoc_t doc;	     /* owned: the parsed body */
	const char *uid;	     /* request.uid (borrowed from root) */
	const char *op;		     /* request.operation */
	const char *ns;		     /* request.namespace ("" when absent) */
	const char *username;	     /* request.userInfo.username ("" when absent) */
	const char *sub_resource;    /* request.subResource ("" when absent) */
	webhook_kind_t kind;	     /* from request.kind */
	const webhook_jv_t *obj;     /* request.object (NULL when absent/null) */
	const webhook_jv_t *old;     /* request.oldObject (NULL when absent/null) */
	webhook_verdict_t verdict;   /* the decision so far */
	char msg[GPUQ_DIAG_MAX];     /* denial message */
	webhook_patch_t patch;	     /* mutations (mutate only) */
	char warnings[WEBHOOK_WARNINGS_MAX][WEBHOOK_WARNING_MAX]; /* reply warnings */
	size_t n_warnings;					  /* entries used in warnings */
} webhook_review_t;

/* Set the verdict (DENY or INVALID) and message; the first one wins. */
void webhook_review_refuse(webhook_review_t *r, webhook_verdict_t v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Add a warning (truncated to WEBHOOK_WARNING_MAX - 1 bytes; dropped past
 * WEBHOOK_WARNINGS_MAX). */
void webhook_review_warn(webhook_review_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Whether the requester is gpuq's own controller. */
bool webhook_review_by_controller(const webhook_review_t *r);

/* ---- Workloads (workload.c) ---- */

typedef struct {
	bool init;		  /* in spec.initContainers (else spec.containers) */
	size_t index;		  /* index in that array */
	const webhook_jv_t *json; /* the container object (borrowed) */
} webhook_cref_t;

typedef struct {
	webhook_kind_t kind;		       /* POD or JOB */
	const char *kind_name;		       /* "Pod" / "Job" */
	const webhook_jv_t *obj;	       /* the object (borrowed) */
	const char *name;		       /* metadata.name, else generateName, else "" */
	const webhook_jv_t *labels;	       /* metadata.labels (NULL when absent) */
	const webhook_jv_t *annotations;       /* metadata.annotations (NULL when absent) */
	const webhook_jv_t *pod_labels;	       /* Job: template labels; Pod: = labels */
	const webhook_jv_t *pod_annotations;   /* Job: template annotations; Pod: = annotations */
	const webhook_jv_t *pod_spec;	       /* Job: spec.template.spec; Pod: spec (NULL: none) */
	const char *spec_field;		       /* "spec.template.spec" / "spec" (messages) */
	const char *spec_ptr;		       /* "/spec/template/spec" / "/spec" (patches) */
	quota_pod_t pod;		       /* containers as declared (init first) */
	webhook_cref_t *refs;		       /* refs[i] locates pod.containers[i] */
	bool gpu;			       /* requests a GPU (resources or DRA) */
	char gpu_resource[QUOTA_RES_NAME_MAX]; /* first GPU resource seen (messages) */
	int64_t dra_gpus;		       /* devices asked for through GPU DRA claims */
	int64_t pods;			       /* pods counted: 1, a Job's min(parallelism,
						  completions), or a Pod group's total count */
	const char *pod_group;		       /* Pod: kueue.x-k8s.io/pod-group-name, or NULL */
	int64_t parallelism;		       /* Job spec.parallelism (default 1) */
	bool suspend;			       /* Job spec.suspend */
	const char *queue;		       /* queue label value, gpuq's then Kueue's; NULL */
	bool admitted;			       /* gpuq.dev/admitted = "true" on the object */
	bool tmpl_admitted;		       /* Job: the same on its pod template */
} webhook_workload_t;

/* Decode obj (a Pod or a Job, per kind) in namespace ns against policy
 * (NULL: no DRA claims seen) and cfg (NULL: no extra GPU names). Quantities
 * are parsed; GPU use is detected (resources named in cfg or NVIDIA's, or DRA
 * claims through a ResourceClaimTemplate of class gpu.nvidia.com /
 * mig.nvidia.com). GPUQ_EINVAL with diag naming the field and value (bad
 * quantity, too many containers, a field of the wrong type: metadata,
 * labels, annotations, spec, template, pod spec, containers and each
 * container, resources, requests, limits, overhead, resourceClaims,
 * schedulingGates); GPUQ_ENOMEM. Free with webhook_workload_deinit, also
 * after an error. Used by the rules and by webhook_object_decode alike. */
int webhook_workload_decode(webhook_workload_t *w, const policy_t *policy,
			    const webhook_config_t *cfg, const char *ns, webhook_kind_t kind,
			    const webhook_jv_t *obj, gpuq_diag_t *diag);
/* Give every container what defaulting and LimitRanger would
 * (quota_limitrange_default with ns's LimitRanges, none without a policy:
 * a limit alone still becomes the request), in place. GPUQ_OK or
 * GPUQ_ELIMIT (a list would pass QUOTA_RESLIST_MAX). */
int webhook_workload_default(webhook_workload_t *w, const policy_t *policy, const char *ns);
/* One pod's effective requests: requests as ResourceQuota counts them
 * (quota_pod_requests), one the same plus the DRA GPUs as nvidia.com/gpu (what
 * a ClusterQueue is charged). GPUQ_OK, GPUQ_ELIMIT, GPUQ_ERANGE. */
int webhook_workload_pod_request(const webhook_workload_t *w, quota_reslist_t *requests,
				 quota_reslist_t *one);
void webhook_workload_deinit(webhook_workload_t *w);

/* Whether name is a GPU resource: nvidia.com/gpu, nvidia.com/gpu.shared,
 * nvidia.com/mig-*, or one of cfg's extra names. */
bool webhook_is_gpu_resource(const webhook_config_t *cfg, const char *name);
/* The workload's queue from labels: gpuq.dev/queue-name, else
 * kueue.x-k8s.io/queue-name, else NULL. */
const char *webhook_labels_queue(const webhook_jv_t *labels);
/* Whether the Pod is an admitted gpuq Job's Pod: a controller ownerReference
 * to a batch/v1 Job, label gpuq.dev/managed=true and annotation
 * gpuq.dev/admitted=true (copied from the admitted Job's template), created
 * by the Job controller (WEBHOOK_JOB_CONTROLLER_SA or WEBHOOK_KCM_USER). */
bool webhook_pod_job_admitted(const webhook_review_t *r, const webhook_workload_t *w);
/* Whether a pod spec carries the gpuq.dev/admission scheduling gate. */
bool webhook_pod_gated(const webhook_jv_t *pod_spec);

/* ---- The rules ---- */

/* /mutate for r->obj (Pod or Job). Appends to r->patch, may refuse. */
int webhook_mutate_run(webhook_review_t *r);
/* /validate for r->obj / r->old. May refuse. */
int webhook_validate_run(webhook_review_t *r);

#endif

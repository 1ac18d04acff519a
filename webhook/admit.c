/* webhook/admit.c: the AdmissionReview codec. Checks the body (size, and
 * JSON depth by jv/parse.c's first scan), decodes the request
 * envelope, runs the mutate or validate rules, and writes the reply text:
 * a v1 AdmissionReview echoing the uid, or a 400 sentence for a body that is
 * not a usable review. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/admit_internal.h"

static const char *const CT_JSON = "application/json";
static const char *const CT_TEXT = "text/plain; charset=utf-8";

/* Stack space for the patch text: a typical Job's patch is under 1 KiB. */
#define PATCH_STACK 2048
/* Bytes of a namespace or queue name a warning shows: two of them and the
 * words around fit WEBHOOK_WARNING_MAX. */
#define WARN_NAME_MAX 40

void webhook_review_refuse(webhook_review_t *r, webhook_verdict_t v, const char *fmt, ...)
{
	va_list ap;

	if (r->verdict != WEBHOOK_ALLOW)
		return;
	r->verdict = v;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

/* Append s (at most limit bytes of it) to the warning w of *used bytes,
 * cut as snprintf cuts at WEBHOOK_WARNING_MAX. */
static void warn_put(char *w, size_t *used, const char *s, size_t limit)
{
	size_t n = strnlen(s, limit), room = WEBHOOK_WARNING_MAX - 1 - *used;

	if (n > room)
		n = room;
	memcpy(w + *used, s, n);
	*used += n;
}

void webhook_review_warn_queued(webhook_review_t *r, const char *queue, const char *a,
				const char *b, const char *c)
{
	char *w;
	size_t used = 0;

	if (r->n_warnings >= WEBHOOK_WARNINGS_MAX)
		return;
	w = r->warnings[r->n_warnings++];
	warn_put(w, &used, "queued in ", SIZE_MAX);
	warn_put(w, &used, r->ns, WARN_NAME_MAX);
	warn_put(w, &used, "/", SIZE_MAX);
	warn_put(w, &used, queue, WARN_NAME_MAX);
	warn_put(w, &used, ": ", SIZE_MAX);
	warn_put(w, &used, a, SIZE_MAX);
	warn_put(w, &used, b, SIZE_MAX);
	warn_put(w, &used, c, SIZE_MAX);
	w[used] = '\0';
}

bool webhook_review_by_controller(const webhook_review_t *r)
{
	return !strcmp(r->username, r->controller_user);
}

bool webhook_review_creator(const webhook_review_t *r, const workload_integration_t *parent)
{
	const char *users[WEBHOOK_CREATORS_MAX];
	size_t n = webhook_creators_of(r->cfg, parent, users, WEBHOOK_CREATORS_MAX);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(r->username, users[i]))
			return true;
	return false;
}

const char *webhook_review_creator_first(const webhook_review_t *r,
					 const workload_integration_t *parent)
{
	const char *users[1];

	return webhook_creators_of(r->cfg, parent, users, 1) ? users[0] : "";
}

/* A text/plain reply of one sentence (always NUL-terminated). */
static int reply_sentence(webhook_reply_t *out, int status, const char *decision, const char *fmt,
			  va_list ap) __attribute__((format(printf, 4, 0)));
static int reply_sentence(webhook_reply_t *out, int status, const char *decision, const char *fmt,
			  va_list ap)
{
	char msg[GPUQ_DIAG_MAX];
	int n;

	n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	out->body = malloc((size_t)n + 1);
	if (!out->body)
		return GPUQ_ENOMEM;
	memcpy(out->body, msg, (size_t)n);
	out->body[n] = '\0';
	out->len = (size_t)n;
	out->http_status = status;
	out->decision = decision;
	out->content_type = CT_TEXT;
	return GPUQ_OK;
}

/* A 400 reply: the body is not a usable review. Returns GPUQ_EINVAL (the
 * input was bad, the reply is written) or GPUQ_ENOMEM. */
static int reply_text(webhook_reply_t *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int reply_text(webhook_reply_t *out, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = reply_sentence(out, 400, "invalid", fmt, ap);
	va_end(ap);
	return rc ? rc : GPUQ_EINVAL;
}

/* The 503 of a review that needs a policy when there is none. */
static int reply_no_policy(webhook_reply_t *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int reply_no_policy(webhook_reply_t *out, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = reply_sentence(out, 503, "unavailable", fmt, ap);
	va_end(ap);
	return rc;
}

/* Group/version/kind of request.kind (falls back to the object's own
 * apiVersion and kind). */
static workload_kind_t decode_kind(const jv_t *req, const jv_t *obj)
{
	const jv_t *k = jv_get(req, "kind");
	const char *kind = jv_member_str(k, "kind");

	if (!kind && obj)
		return workload_kind_of(jv_member_str(obj, "apiVersion"),
					jv_member_str(obj, "kind"));
	return workload_kind_gvk(jv_member_str(k, "group"), jv_member_str(k, "version"), kind);
}

static const char *str_or_empty(const jv_t *obj, const char *key)
{
	const char *s = jv_member_str(obj, key);

	return s ? s : "";
}

/* Members no review reads, at any depth, left out when a review is parsed
 * (jv_doc_parse_skipping): the review's own account of what was asked and
 * its options, a container's command line, environment, ports, mounts,
 * probes, hooks and security context, a pod's volumes and DNS, pull and
 * readiness settings, and every object's managedFields. They are most of a
 * real review (264 of the 436 values of bench/fixtures/job_review.json, 2.6
 * of its 4.3 KB): passed over 64 bytes at a time, that review's /mutate
 * costs 57,956 instructions instead of 68,743 (bench_admission, c0bd564).
 * No decoder on the review path may name one (make lint);
 * test_webhook's unread_members_change_nothing adds them all to every
 * golden case and wants the same replies. */
static const jv_key_t review_unread[] = {
    /* the review's own: what was asked (request.kind is read), options */
    JV_KEY("resource"),
    JV_KEY("requestKind"),
    JV_KEY("requestResource"),
    JV_KEY("options"),
    JV_KEY("groups"),
    JV_KEY("extra"),
    /* an object's */
    JV_KEY("managedFields"),
    /* a pod spec's and a container's */
    JV_KEY("command"),
    JV_KEY("args"),
    JV_KEY("env"),
    JV_KEY("envFrom"),
    JV_KEY("ports"),
    JV_KEY("volumeMounts"),
    JV_KEY("volumeDevices"),
    JV_KEY("livenessProbe"),
    JV_KEY("readinessProbe"),
    JV_KEY("startupProbe"),
    JV_KEY("lifecycle"),
    JV_KEY("securityContext"),
    JV_KEY("volumes"),
    JV_KEY("imagePullSecrets"),
    JV_KEY("dnsConfig"),
    JV_KEY("hostAliases"),
    JV_KEY("readinessGates"),
    {NULL, 0},
};

/* Parse and check the envelope. On bad input, writes the 400 reply and
 * returns GPUQ_EINVAL. */
static int decode_envelope(webhook_review_t *r, const char *body, size_t len, webhook_reply_t *out)
{
	const jv_t *req, *obj, *old;
	const char *api, *kind;
	char err[GPUQ_DIAG_MAX / 2];
	int rc;

	if (len > WEBHOOK_REVIEW_MAX)
		return reply_text(out, "invalid AdmissionReview: body of %zu bytes exceeds %u", len,
				  WEBHOOK_REVIEW_MAX);
	rc = jv_doc_parse_skipping(&r->doc, body, len, review_unread, err, sizeof(err));
	if (rc == GPUQ_ENOMEM)
		return rc;
	if (rc == GPUQ_ELIMIT)
		return reply_text(out, "invalid AdmissionReview: %s", err);
	if (rc)
		return reply_text(out, "invalid AdmissionReview: not JSON: %s", err);
	api = jv_member_str(r->doc.root, "apiVersion");
	kind = jv_member_str(r->doc.root, "kind");
	if (!api || strcmp(api, "admission.k8s.io/v1") != 0)
		return reply_text(
		    out,
		    "invalid AdmissionReview: apiVersion is \"%s\", gpuq speaks "
		    "\"admission.k8s.io/v1\" only (set admissionReviewVersions: [v1])",
		    api ? api : "");
	if (!kind || strcmp(kind, "AdmissionReview") != 0)
		return reply_text(
		    out, "invalid AdmissionReview: kind is \"%s\", want \"AdmissionReview\"",
		    kind ? kind : "");
	req = jv_get(r->doc.root, "request");
	if (!jv_is(req, JV_OBJECT))
		return reply_text(out,
				  "invalid AdmissionReview: request is missing or not an object");
	r->uid = jv_member_str(req, "uid");
	if (!r->uid || !*r->uid)
		return reply_text(out, "invalid AdmissionReview: request.uid is missing or empty");
	r->op = str_or_empty(req, "operation");
	r->ns = str_or_empty(req, "namespace");
	r->sub_resource = str_or_empty(req, "subResource");
	r->username = str_or_empty(jv_get(req, "userInfo"), "username");
	obj = jv_get(req, "object");
	old = jv_get(req, "oldObject");
	r->obj = jv_is(obj, JV_OBJECT) ? obj : NULL;
	r->old = jv_is(old, JV_OBJECT) ? old : NULL;
	r->kind = decode_kind(req, r->obj ? r->obj : r->old);
	return GPUQ_OK;
}

/* request.operation must be one the apiserver sends: a review without one
 * cannot be judged (the rules would skip it), so it is refused rather than
 * allowed unchanged. Returns true when refused. */
static bool check_operation(webhook_review_t *r)
{
	static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};

	for (size_t i = 0; i < sizeof(ops) / sizeof(*ops); i++)
		if (!strcmp(r->op, ops[i]))
			return false;
	webhook_review_refuse(r, WEBHOOK_INVALID,
			      "request.operation: %s%.64s%s: must be CREATE, UPDATE, DELETE or "
			      "CONNECT",
			      *r->op ? "invalid value \"" : "Required value", r->op,
			      *r->op ? "\"" : "");
	return true;
}

/* The row whose collection holding a w-like object needs and the
 * controller does not watch, or NULL: the kind's own (the Pods of a kind held
 * by none, a Deployment, are its child's), and the child's too when its pod
 * sets are read from the child. */
static const workload_integration_t *unwatched_row(const policy_t *p,
						   const workload_integration_t *in)
{
	const workload_integration_t *child = workload_integration(in->child_kind);

	if (in->hold != WORKLOAD_HOLD_NONE && !policy_watch_has(p, in->group, in->resource))
		return in;
	if ((in->hold == WORKLOAD_HOLD_NONE || in->podsets_of_child) &&
	    child->kind != WORKLOAD_KIND_OTHER &&
	    !policy_watch_has(p, child->group, child->resource))
		return child;
	return NULL;
}

bool webhook_review_unwatched(webhook_review_t *r, const workload_view_t *w)
{
	const workload_integration_t *miss = unwatched_row(r->policy, w->integ);

	if (!miss)
		return false;
	webhook_review_refuse(
	    r, WEBHOOK_DENY,
	    "%s \"%s\": refused: gpuq does not watch %s%s%s%s (not served by the apiserver, or "
	    "not listed yet), so nothing would queue it, and held it would wait for good; a kind "
	    "whose CRD is installed after gpuq started is watched within seconds: retry shortly "
	    "(if this persists, gpuq's log says why)",
	    w->kind_name, w->name, miss->resource, *miss->group ? "." : "", miss->group,
	    miss != w->integ ? ", through which it is queued" : "");
	return true;
}

/* Whether the rules would read the policy for r: a Pod or Job CREATE or
 * UPDATE of the object itself. Every other review is allowed unchanged
 * whatever the policy says. */
static bool needs_policy(const webhook_review_t *r)
{
	return r->kind != WORKLOAD_KIND_OTHER && !*r->sub_resource &&
	       (!strcmp(r->op, "CREATE") || !strcmp(r->op, "UPDATE"));
}

/* A stored Pod or Job always has metadata and spec objects: one that does
 * not is not a Pod or Job gpuq can read, in a namespace it does not manage
 * either. Returns true when refused. */
static bool shape_refused(webhook_review_t *r, const jv_t *obj, const char *where)
{
	static const char *const members[] = {"metadata", "spec"};

	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		if (jv_is(jv_get(obj, members[i]), JV_OBJECT))
			continue;
		webhook_review_refuse(r, WEBHOOK_INVALID, "%s.%s: missing or not an object", where,
				      members[i]);
		return true;
	}
	return false;
}

/* A Pod or Job CREATE/UPDATE must carry its object (and an UPDATE the old
 * one): the apiserver always sends them, so their absence is a broken
 * review, refused rather than waved through. Returns true when refused. */
static bool check_objects(webhook_review_t *r)
{
	bool create = !strcmp(r->op, "CREATE"), update = !strcmp(r->op, "UPDATE");

	if ((create || update) && !r->obj && !*r->sub_resource) {
		webhook_review_refuse(r, WEBHOOK_INVALID,
				      "request.object: missing or not an object for a %s of a %s",
				      r->op, workload_integration(r->kind)->kind_name);
		return true;
	}
	if (update && !r->old && !*r->sub_resource) {
		webhook_review_refuse(
		    r, WEBHOOK_INVALID,
		    "request.oldObject: missing or not an object for an UPDATE of a %s",
		    workload_integration(r->kind)->kind_name);
		return true;
	}
	/* (a managed namespace's decoder names the field and its type itself) */
	if ((create || update) && !*r->sub_resource && !policy_namespace_managed(r->policy, r->ns))
		return shape_refused(r, r->obj, "request.object") ||
		       (update && shape_refused(r, r->old, "request.oldObject"));
	return false;
}

/* The metrics label of a kind: "Pod", "Job", else "other" (the label set is
 * fixed: docs/metrics.md). */
static const char *kind_label(workload_kind_t k)
{
	return k == WORKLOAD_KIND_POD || k == WORKLOAD_KIND_JOB ? workload_integration(k)->kind_name
								: "other";
}

/* Write the AdmissionReview reply for r into out. */
static int reply_review(webhook_review_t *r, webhook_reply_t *out)
{
	webhook_buf_t b;
	bool patched = r->verdict == WEBHOOK_ALLOW && r->patch.n_ops > 0;

	webhook_buf_init(&b, NULL, 0, WEBHOOK_REPLY_MAX);
	/* Envelope ~200 bytes; uid and message escaped at most 6x (\u00XX);
	 * base64 4/3 of the patch; warnings. One allocation in practice. */
	webhook_buf_reserve(&b, 256 + strlen(r->uid) + strlen(r->msg) * 2 +
				    (r->patch.text.len + 2) / 3 * 4 +
				    r->n_warnings * (WEBHOOK_WARNING_MAX + 4));
	webhook_buf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
			     "\"response\":{\"uid\":");
	webhook_buf_put_jstr(&b, r->uid);
	if (r->verdict == WEBHOOK_ALLOW) {
		webhook_buf_puts(&b, ",\"allowed\":true");
	} else {
		webhook_buf_puts(&b, r->verdict == WEBHOOK_DENY
					 ? ",\"allowed\":false,\"status\":{\"code\":403,"
					   "\"reason\":\"Forbidden\",\"message\":"
					 : ",\"allowed\":false,\"status\":{\"code\":400,"
					   "\"reason\":\"BadRequest\",\"message\":");
		webhook_buf_put_jstr(&b, r->msg);
		webhook_buf_puts(&b, "}");
	}
	if (patched) {
		webhook_buf_puts(&b, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
		webhook_buf_put_base64(&b, r->patch.text.p, r->patch.text.len);
		webhook_buf_puts(&b, "\"");
	}
	for (size_t i = 0; i < r->n_warnings; i++) {
		webhook_buf_puts(&b, i ? "," : ",\"warnings\":[");
		webhook_buf_put_jstr(&b, r->warnings[i]);
	}
	webhook_buf_puts(&b, r->n_warnings ? "]}}" : "}}");
	if (b.err) {
		webhook_buf_deinit(&b);
		return GPUQ_ENOMEM;
	}
	GPUQ_ASSERT(b.heap);
	out->body = b.p;
	out->len = b.len;
	out->http_status = 200;
	out->content_type = CT_JSON;
	out->decision = r->verdict == WEBHOOK_DENY	? "denied"
			: r->verdict == WEBHOOK_INVALID ? "invalid"
			: patched			? "patched"
							: "allowed";
	return GPUQ_OK;
}

int webhook_review_handle(webhook_endpoint_t ep, const policy_t *policy,
			  const webhook_config_t *cfg, const char *body, size_t len,
			  webhook_reply_t *out)
{
	static const webhook_config_t no_cfg = {.gpu_resources = NULL};
	webhook_review_t review, *r = &review;
	char patch_stack[PATCH_STACK];
	int rc;

	memset(out, 0, sizeof(*out));
	out->kind = "other";
	memset(r, 0, sizeof(*r));
	r->ep = ep;
	r->policy = policy;
	r->cfg = cfg ? cfg : &no_cfg;
	r->controller_user =
	    r->cfg->controller_user ? r->cfg->controller_user : WEBHOOK_CONTROLLER_USER_DEFAULT;
	webhook_patch_init(&r->patch, patch_stack, sizeof(patch_stack));
	rc = decode_envelope(r, body ? body : "", body ? len : 0, out);
	if (rc) {
		rc = rc == GPUQ_EINVAL ? GPUQ_OK : rc;
		goto done;
	}
	out->kind = kind_label(r->kind);
	if (check_operation(r)) {
		/* refused: a review of nothing */
	} else if (!policy && needs_policy(r)) {
		/* Fail closed: without a policy gpuq cannot tell a managed
		 * namespace or a queue from another, so it decides nothing and
		 * lets the apiserver's failurePolicy act. */
		rc = reply_no_policy(out, "gpuq cannot decide: it has no policy yet (not synced "
					  "with the apiserver); retry");
		goto done;
	} else if (r->kind != WORKLOAD_KIND_OTHER && !check_objects(r)) {
		rc = ep == WEBHOOK_MUTATE ? webhook_mutate_run(r) : webhook_validate_run(r);
	}
	if (!rc && ep == WEBHOOK_MUTATE)
		rc = webhook_patch_finish(&r->patch);
	if (rc == GPUQ_ELIMIT) {
		webhook_review_refuse(r, WEBHOOK_INVALID,
				      "gpuq: the patch for this object "
				      "exceeds %u bytes",
				      WEBHOOK_PATCH_MAX);
		rc = GPUQ_OK;
	}
	if (!rc)
		rc = reply_review(r, out);
done:
	if (rc) {
		webhook_reply_deinit(out);
		out->kind = NULL;
	}
	webhook_patch_deinit(&r->patch);
	jv_doc_free(&r->doc);
	return rc;
}

void webhook_reply_deinit(webhook_reply_t *out)
{
	if (!out)
		return;
	free(out->body);
	memset(out, 0, sizeof(*out));
}

/* webhook/mutate.c: the /mutate rules. A GPU Job created in a managed
 * namespace is suspended, gets the namespace's LimitRange Container defaults
 * written into its pod template (LimitRanger never looks at templates), the
 * template label gpuq.dev/managed=true, the queue label when it names no
 * queue, and its first gpuq.dev/status (waiting for quota in its
 * ClusterQueue). A GPU Pod that is not an admitted Job's pod gets the
 * scheduling gate gpuq.dev/admission, the same queue label and, outside a
 * pod group, the same status. Every patch only adds what is missing, so
 * applying it and mutating again adds nothing. */
#include <stdio.h>
#include <string.h>

#include "queue/queue.h"
#include "webhook/admit_internal.h"

/* JSON Pointer prefixes are built from fixed words and indexes only. */
#define PTR_MAX 96

/* {"k":"v",...} of every entry of list (quantities in canonical form). */
static void json_map(webhook_buf_t *b, const quota_reslist_t *list)
{
	for (size_t i = 0; i < list->n; i++) {
		char v[QUOTA_QTY_FMT_MAX];

		if (quota_qty_format(&list->items[i].qty, v, sizeof(v)))
			gpuq_strlcpy(v, "0", sizeof(v));
		webhook_buf_puts(b, i ? "," : "{");
		webhook_buf_put_jstr(b, list->items[i].name);
		webhook_buf_putn(b, ":", 1);
		webhook_buf_put_jstr(b, v);
	}
	webhook_buf_puts(b, list->n ? "}" : "{}");
}

/* Add the entries of add under res_ptr/<which>: one op per entry when the
 * map exists, else one op creating the map. */
static void patch_map(webhook_review_t *r, const char *res_ptr, const webhook_jv_t *res,
		      const char *which, const quota_reslist_t *add)
{
	char ptr[PTR_MAX + 16], vb[512];
	webhook_buf_t v;

	if (!add->n)
		return;
	webhook_buf_init(&v, vb, sizeof(vb), WEBHOOK_PATCH_MAX);
	if (webhook_jv_is(webhook_jv_get(res, which), WEBHOOK_JV_OBJECT)) {
		snprintf(ptr, sizeof(ptr), "%s/%s", res_ptr, which);
		for (size_t i = 0; i < add->n; i++) {
			char q[QUOTA_QTY_FMT_MAX];

			if (quota_qty_format(&add->items[i].qty, q, sizeof(q)))
				continue;
			v.len = 0;
			webhook_buf_put_jstr(&v, q);
			webhook_patch_add(&r->patch, ptr, add->items[i].name, v.p);
		}
	} else {
		json_map(&v, add);
		webhook_patch_add(&r->patch, res_ptr, which, v.p);
	}
	if (v.err)
		r->patch.text.err = v.err;
	webhook_buf_deinit(&v);
}

/* LimitRange defaults for container i of a Job's template: what the Job's
 * Pods would get from their own defaulting and LimitRanger (the apiserver
 * never applies either to a template). */
static void patch_container_defaults(webhook_review_t *r, const webhook_workload_t *w, size_t i,
				     const policy_namespace_t *ns)
{
	const webhook_cref_t *ref = &w->refs[i];
	const webhook_jv_t *res = webhook_jv_get(ref->json, "resources");
	quota_reslist_t add_req, add_lim;
	char cptr[PTR_MAX], rptr[PTR_MAX + 16], vb[1024];
	webhook_buf_t v;

	if (quota_limitrange_default(ns->limitranges, ns->n_limitranges, &w->pod.containers[i],
				     &add_req, &add_lim)) {
		webhook_review_refuse(r, WEBHOOK_INVALID,
				      "Job \"%s\": %s: too many resources once LimitRange defaults "
				      "are added (at most %d per container)",
				      w->name, w->spec_field, QUOTA_RESLIST_MAX);
		return;
	}
	if (!add_req.n && !add_lim.n)
		return;
	snprintf(cptr, sizeof(cptr), "%s/%s/%zu", w->spec_ptr,
		 ref->init ? "initContainers" : "containers", ref->index);
	if (webhook_jv_is(res, WEBHOOK_JV_OBJECT)) {
		snprintf(rptr, sizeof(rptr), "%s/resources", cptr);
		patch_map(r, rptr, res, "limits", &add_lim);
		patch_map(r, rptr, res, "requests", &add_req);
		return;
	}
	/* No resources object: one op carrying both maps. */
	webhook_buf_init(&v, vb, sizeof(vb), WEBHOOK_PATCH_MAX);
	webhook_buf_putn(&v, "{", 1);
	if (add_lim.n) {
		webhook_buf_puts(&v, "\"limits\":");
		json_map(&v, &add_lim);
	}
	if (add_req.n) {
		webhook_buf_puts(&v, add_lim.n ? ",\"requests\":" : "\"requests\":");
		json_map(&v, &add_req);
	}
	webhook_buf_putn(&v, "}", 1);
	webhook_patch_add(&r->patch, cptr, "resources", v.p);
	if (v.err)
		r->patch.text.err = v.err;
	webhook_buf_deinit(&v);
}

/* Set key=value in the map `which` ("labels" or "annotations") at meta_ptr
 * (a metadata object pointer), creating metadata and the map when absent. */
static void patch_meta(webhook_review_t *r, const char *meta_ptr, const webhook_jv_t *meta,
		       const char *which, const char *key, const char *value)
{
	char ptr[PTR_MAX], vbuf[256];
	webhook_buf_t v;
	const webhook_jv_t *map =
	    webhook_jv_is(meta, WEBHOOK_JV_OBJECT) ? webhook_jv_get(meta, which) : NULL;

	webhook_buf_init(&v, vbuf, sizeof(vbuf), WEBHOOK_PATCH_MAX);
	if (webhook_jv_is(map, WEBHOOK_JV_OBJECT)) {
		snprintf(ptr, sizeof(ptr), "%s/%s", meta_ptr, which);
		webhook_buf_put_jstr(&v, value);
		webhook_patch_add(&r->patch, ptr, key, v.p);
	} else if (webhook_jv_is(meta, WEBHOOK_JV_OBJECT)) {
		webhook_buf_putn(&v, "{", 1);
		webhook_buf_put_jstr(&v, key);
		webhook_buf_putn(&v, ":", 1);
		webhook_buf_put_jstr(&v, value);
		webhook_buf_putn(&v, "}", 1);
		webhook_patch_add(&r->patch, meta_ptr, which, v.p);
	} else {
		webhook_buf_putn(&v, "{", 1);
		webhook_buf_put_jstr(&v, which);
		webhook_buf_puts(&v, ":{");
		webhook_buf_put_jstr(&v, key);
		webhook_buf_putn(&v, ":", 1);
		webhook_buf_put_jstr(&v, value);
		webhook_buf_puts(&v, "}}");
		webhook_patch_add(&r->patch, meta_ptr, NULL, v.p);
	}
	if (v.err)
		r->patch.text.err = v.err;
	webhook_buf_deinit(&v);
}

static void patch_label(webhook_review_t *r, const char *meta_ptr, const webhook_jv_t *meta,
			const char *key, const char *value)
{
	patch_meta(r, meta_ptr, meta, "labels", key, value);
}

/* The queue the workload goes to (named, or the default). */
static const char *queue_of(const webhook_workload_t *w)
{
	return w->queue ? w->queue : WEBHOOK_DEFAULT_QUEUE;
}

/* The workload's first gpuq.dev/status, the coarse status the controller
 * gives a workload waiting for quota in its ClusterQueue
 * (queue_status_waiting), written with the object so the controller has
 * nothing to write until its state changes: a burst of Jobs costs no
 * status writes. Left out when the LocalQueue is unknown (/validate
 * refuses the object then) or the object already says so. */
static void patch_status(webhook_review_t *r, const webhook_workload_t *w, const webhook_jv_t *meta)
{
	const policy_lq_t *lq = policy_lq_find(r->policy, r->ns, queue_of(w));
	const webhook_jv_t *ann =
	    webhook_jv_is(meta, WEBHOOK_JV_OBJECT) ? webhook_jv_get(meta, "annotations") : NULL;
	const char *now = webhook_json_str(ann, WEBHOOK_ANNOT_STATUS);
	char text[QUEUE_NAME_MAX + 64];

	if (!lq || queue_status_waiting(lq->cq_name, text, sizeof(text)))
		return;
	if (now && !strcmp(now, text))
		return;
	patch_meta(r, "/metadata", meta, "annotations", WEBHOOK_ANNOT_STATUS, text);
}

static void mutate_job(webhook_review_t *r, webhook_workload_t *w)
{
	const webhook_jv_t *meta = webhook_jv_get(w->obj, "metadata");
	const webhook_jv_t *tmpl = webhook_jv_get(webhook_jv_get(w->obj, "spec"), "template");
	const webhook_jv_t *tmeta =
	    webhook_jv_is(tmpl, WEBHOOK_JV_OBJECT) ? webhook_jv_get(tmpl, "metadata") : NULL;
	const char *managed = webhook_json_str(w->pod_labels, WEBHOOK_LABEL_MANAGED);
	const policy_namespace_t *ns = policy_namespace_find(r->policy, r->ns);

	if (!w->suspend)
		webhook_patch_add(&r->patch, "/spec", "suspend", "true");
	if (!w->queue)
		patch_label(r, "/metadata", meta, WEBHOOK_LABEL_QUEUE, WEBHOOK_DEFAULT_QUEUE);
	if (webhook_jv_is(tmpl, WEBHOOK_JV_OBJECT) && (!managed || strcmp(managed, "true") != 0))
		patch_label(r, "/spec/template/metadata", tmeta, WEBHOOK_LABEL_MANAGED, "true");
	for (size_t i = 0; ns && i < w->pod.n_containers; i++)
		patch_container_defaults(r, w, i, ns);
	patch_status(r, w, meta);
	webhook_review_warn(r, "queued in %.40s/%.40s: Job created suspended until gpuq admits it",
			    r->ns, queue_of(w));
}

/* Whether the Pod belongs to an admitted Job that gpuq manages: a batch/v1
 * Job controller ownerReference, the template label gpuq.dev/managed=true and
 * annotation gpuq.dev/admitted=true (both copied from the admitted Job's
 * template), created by the Job controller itself. */
bool webhook_pod_job_admitted(const webhook_review_t *r, const webhook_workload_t *w)
{
	const webhook_jv_t *owners =
	    webhook_jv_get(webhook_jv_get(w->obj, "metadata"), "ownerReferences");
	const char *managed = webhook_json_str(w->labels, WEBHOOK_LABEL_MANAGED);
	bool owned = false;

	for (const webhook_jv_t *o = webhook_jv_first(owners); o; o = o->next) {
		const char *api = webhook_json_str(o, "apiVersion");
		const char *kind = webhook_json_str(o, "kind");

		if (webhook_jv_is(webhook_jv_get(o, "controller"), WEBHOOK_JV_TRUE) && api &&
		    kind && !strcmp(api, "batch/v1") && !strcmp(kind, "Job"))
			owned = true;
	}
	return owned && managed && !strcmp(managed, "true") && w->admitted &&
	       (!strcmp(r->username, WEBHOOK_JOB_CONTROLLER_SA) ||
		!strcmp(r->username, WEBHOOK_KCM_USER));
}

/* Whether the pod spec carries gpuq's scheduling gate. */
bool webhook_pod_gated(const webhook_jv_t *pod_spec)
{
	const webhook_jv_t *gates = webhook_jv_is(pod_spec, WEBHOOK_JV_OBJECT)
					? webhook_jv_get(pod_spec, "schedulingGates")
					: NULL;

	for (const webhook_jv_t *g = webhook_jv_first(gates); g; g = g->next) {
		const char *n = webhook_json_str(g, "name");

		if (n && !strcmp(n, WEBHOOK_GATE))
			return true;
	}
	return false;
}

static void mutate_pod(webhook_review_t *r, webhook_workload_t *w)
{
	const webhook_jv_t *gates = webhook_jv_get(w->pod_spec, "schedulingGates");
	const char *node = webhook_json_str(w->pod_spec, "nodeName");

	if (webhook_pod_job_admitted(r, w))
		return;
	if (node && *node)
		return; /* a gate is invalid with nodeName; /validate refuses the Pod */
	if (!webhook_pod_gated(w->pod_spec)) {
		if (webhook_jv_is(gates, WEBHOOK_JV_ARRAY))
			webhook_patch_add(&r->patch, "/spec/schedulingGates/-", NULL,
					  "{\"name\":\"" WEBHOOK_GATE "\"}");
		else
			webhook_patch_add(&r->patch, "/spec", "schedulingGates",
					  "[{\"name\":\"" WEBHOOK_GATE "\"}]");
	}
	if (!w->queue)
		patch_label(r, "/metadata", webhook_jv_get(w->obj, "metadata"), WEBHOOK_LABEL_QUEUE,
			    WEBHOOK_DEFAULT_QUEUE);
	if (!w->pod_group) /* a group's status counts its members: the controller's */
		patch_status(r, w, webhook_jv_get(w->obj, "metadata"));
	webhook_review_warn(r, "queued in %.40s/%.40s: Pod gated until gpuq admits it", r->ns,
			    queue_of(w));
}

int webhook_mutate_run(webhook_review_t *r)
{
	webhook_workload_t w;
	gpuq_diag_t diag = {""};
	int rc;

	if (strcmp(r->op, "CREATE") != 0 || !r->obj || *r->sub_resource)
		return GPUQ_OK;
	if (!policy_namespace_managed(r->policy, r->ns))
		return GPUQ_OK;
	rc = webhook_workload_decode(&w, r->policy, r->cfg, r->ns, r->kind, r->obj, &diag);
	if (rc == GPUQ_EINVAL) {
		webhook_review_refuse(r, WEBHOOK_INVALID, "%s", diag.msg);
		rc = GPUQ_OK;
	} else if (!rc && w.gpu && w.kind == WEBHOOK_KIND_JOB) {
		mutate_job(r, &w);
	} else if (!rc && w.gpu) {
		mutate_pod(r, &w);
	}
	webhook_workload_deinit(&w);
	return rc;
}

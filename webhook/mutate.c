/* webhook/mutate.c: the /mutate rules. A GPU Job created in a managed
 * namespace is suspended, gets the namespace's LimitRange Container defaults
 * written into its pod template (LimitRanger never looks at templates), the
 * template label gpuq.dev/managed=true, the queue label when it names no
 * queue, and its first gpuq.dev/status (waiting for quota in its
 * ClusterQueue). A GPU Pod that is not an admitted Job's pod, and every
 * member of a pod group that queues (CPU-only ones too), gets the
 * scheduling gate gpuq.dev/admission, the same queue label and, outside a
 * pod group, the same status. A GPU object of a kind gpuq's controller does
 * not watch (its CRD not served yet, or gone) is refused rather than held:
 * nothing would ever release it. Every patch only adds what is missing, so
 * applying it and mutating again adds nothing. */
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
 * map exists, else one op creating the map. Values are written straight
 * into the patch. */
static void patch_map(webhook_review_t *r, const char *res_ptr, const jv_t *res, const char *which,
		      const quota_reslist_t *add)
{
	char ptr[PTR_MAX + 16];

	if (!add->n)
		return;
	if (jv_is(jv_get(res, which), JV_OBJECT)) {
		gpuq_strjoin(ptr, sizeof(ptr), res_ptr, "/", which);
		for (size_t i = 0; i < add->n; i++) {
			char q[QUOTA_QTY_FMT_MAX];

			if (quota_qty_format(&add->items[i].qty, q, sizeof(q)))
				continue;
			webhook_buf_put_jstr(webhook_patch_open(&r->patch, ptr, add->items[i].name),
					     q);
			webhook_patch_close(&r->patch);
		}
	} else {
		json_map(webhook_patch_open(&r->patch, res_ptr, which), add);
		webhook_patch_close(&r->patch);
	}
}

/* LimitRange defaults for container i of a Job's template: what the Job's
 * Pods would get from their own defaulting and LimitRanger (the apiserver
 * never applies either to a template). */
static void patch_container_defaults(webhook_review_t *r, const workload_view_t *w,
				     const workload_view_podset_t *ps, size_t i,
				     const policy_namespace_t *ns)
{
	const workload_cref_t *ref = &ps->refs[i];
	const jv_t *res = jv_get(ref->json, "resources");
	quota_reslist_t add_req, add_lim;
	char cptr[PTR_MAX + WORKLOAD_FIELD_MAX], rptr[PTR_MAX + WORKLOAD_FIELD_MAX + 16];
	char index[GPUQ_U64_TEXT_MAX];
	webhook_buf_t *v;

	if (quota_limitrange_default(ns->limitranges, ns->n_limitranges, &ps->pod.containers[i],
				     &add_req, &add_lim)) {
		webhook_review_refuse(r, WEBHOOK_INVALID,
				      "%s \"%s\": %s: too many resources once LimitRange defaults "
				      "are added (at most %d per container)",
				      w->kind_name, w->name, ps->spec_field, QUOTA_RESLIST_MAX);
		return;
	}
	if (!add_req.n && !add_lim.n)
		return;
	gpuq_u64_text(ref->index, index);
	gpuq_strjoin(cptr, sizeof(cptr), ps->tmpl_ptr,
		     ref->init ? "/spec/initContainers/" : "/spec/containers/", index);
	if (jv_is(res, JV_OBJECT)) {
		gpuq_strjoin(rptr, sizeof(rptr), cptr, "/resources", "");
		patch_map(r, rptr, res, "limits", &add_lim);
		patch_map(r, rptr, res, "requests", &add_req);
		return;
	}
	/* No resources object: one op carrying both maps. */
	v = webhook_patch_open(&r->patch, cptr, "resources");
	webhook_buf_putn(v, "{", 1);
	if (add_lim.n) {
		webhook_buf_puts(v, "\"limits\":");
		json_map(v, &add_lim);
	}
	if (add_req.n) {
		webhook_buf_puts(v, add_lim.n ? ",\"requests\":" : "\"requests\":");
		json_map(v, &add_req);
	}
	webhook_buf_putn(v, "}", 1);
	webhook_patch_close(&r->patch);
}

/* Set key=value in the map `which` ("labels" or "annotations") at meta_ptr
 * (a metadata object pointer), creating metadata and the map when absent. */
static void patch_meta(webhook_review_t *r, const char *meta_ptr, const jv_t *meta,
		       const char *which, const char *key, const char *value)
{
	char ptr[PTR_MAX];
	webhook_buf_t *v;
	const jv_t *map = jv_is(meta, JV_OBJECT) ? jv_get(meta, which) : NULL;

	if (jv_is(map, JV_OBJECT)) {
		gpuq_strjoin(ptr, sizeof(ptr), meta_ptr, "/", which);
		v = webhook_patch_open(&r->patch, ptr, key);
		webhook_buf_put_jstr(v, value);
	} else if (jv_is(meta, JV_OBJECT)) {
		v = webhook_patch_open(&r->patch, meta_ptr, which);
		webhook_buf_putn(v, "{", 1);
		webhook_buf_put_jstr(v, key);
		webhook_buf_putn(v, ":", 1);
		webhook_buf_put_jstr(v, value);
		webhook_buf_putn(v, "}", 1);
	} else {
		v = webhook_patch_open(&r->patch, meta_ptr, NULL);
		webhook_buf_putn(v, "{", 1);
		webhook_buf_put_jstr(v, which);
		webhook_buf_puts(v, ":{");
		webhook_buf_put_jstr(v, key);
		webhook_buf_putn(v, ":", 1);
		webhook_buf_put_jstr(v, value);
		webhook_buf_puts(v, "}}");
	}
	webhook_patch_close(&r->patch);
}

static void patch_label(webhook_review_t *r, const char *meta_ptr, const jv_t *meta,
			const char *key, const char *value)
{
	patch_meta(r, meta_ptr, meta, "labels", key, value);
}

/* The queue the workload goes to (named, or the default). */
static const char *queue_of(const workload_view_t *w)
{
	return w->queue ? w->queue : WEBHOOK_DEFAULT_QUEUE;
}

/* The workload's first gpuq.dev/status, the coarse status the controller
 * gives a workload waiting for quota in its ClusterQueue
 * (queue_status_waiting), written with the object so the controller has
 * nothing to write until its state changes: a burst of Jobs costs no
 * status writes. Left out when the LocalQueue is unknown (/validate
 * refuses the object then) or the object already says so. */
static void patch_status(webhook_review_t *r, const workload_view_t *w, const jv_t *meta)
{
	const policy_lq_t *lq = policy_lq_find(r->policy, r->ns, queue_of(w));
	const char *now = jv_member_str(w->annotations, WEBHOOK_ANNOT_STATUS);
	char text[QUEUE_NAME_MAX + 64];

	if (!lq || queue_status_waiting(lq->cq_name, text, sizeof(text)))
		return;
	if (now && !strcmp(now, text))
		return;
	patch_meta(r, "/metadata", meta, "annotations", WEBHOOK_ANNOT_STATUS, text);
}

/* A kind that replaces its Pods itself (a Job: its row's replace_member)
 * replaces one only once it has terminated: a terminating Pod still holds
 * its GPUs, and its successor beside it would run on one Pod's quota (the
 * apiserver defaults a Job without a podFailurePolicy to
 * TerminatingOrFailed before this webhook sees it). */
static void patch_replacement(webhook_review_t *r, const workload_view_t *w)
{
	const char *m = w->integ->replace_member;
	const char *now = m ? jv_member_str(jv_member_obj(w->obj, "spec"), m) : NULL;

	if (m && !(now && !strcmp(now, WORKLOAD_REPLACE_FAILED)))
		webhook_patch_add(&r->patch, "/spec", m, "\"" WORKLOAD_REPLACE_FAILED "\"");
}

/* A parent held by its suspend field (a Job, a JobSet): suspended, the queue
 * label, its first coarse status, and each pod template marked managed with
 * the LimitRange defaults its Pods will get. */
static void mutate_parent(webhook_review_t *r, workload_view_t *w)
{
	const jv_t *meta = jv_get(w->obj, "metadata");
	const policy_namespace_t *ns = policy_namespace_find(r->policy, r->ns);

	if (!w->suspend)
		webhook_patch_add(&r->patch, "/spec", "suspend", "true");
	if (!w->queue)
		patch_label(r, "/metadata", meta, WEBHOOK_LABEL_QUEUE, WEBHOOK_DEFAULT_QUEUE);
	patch_replacement(r, w);
	for (size_t p = 0; p < w->n_podsets; p++) {
		const workload_view_podset_t *ps = &w->podsets[p];
		const jv_t *tmeta =
		    jv_is(ps->tmpl, JV_OBJECT) ? jv_get(ps->tmpl, "metadata") : NULL;
		const char *managed = jv_member_str(ps->pod_labels, WEBHOOK_LABEL_MANAGED);
		char mptr[WORKLOAD_FIELD_MAX + 16];

		if (ps->counted_only)
			continue; /* another controller's template: counted, not written */
		gpuq_strjoin(mptr, sizeof(mptr), ps->tmpl_ptr, "/metadata", "");
		if (jv_is(ps->tmpl, JV_OBJECT) && (!managed || strcmp(managed, "true") != 0))
			patch_label(r, mptr, tmeta, WEBHOOK_LABEL_MANAGED, "true");
		for (size_t i = 0; ns && i < ps->pod.n_containers && ps->refs[i].json; i++)
			patch_container_defaults(r, w, ps, i, ns);
	}
	patch_status(r, w, meta);
	webhook_review_warn_queued(r, queue_of(w), w->kind_name,
				   " created suspended until gpuq admits it", "");
}

webhook_exempt_t webhook_pod_job_admitted(const webhook_review_t *r, const workload_view_t *w)
{
	const jv_t *owner = workload_controller_owner(w->obj);
	const char *managed = jv_member_str(w->labels, WEBHOOK_LABEL_MANAGED);
	const workload_integration_t *parent = workload_integration(
	    workload_kind_of(jv_member_str(owner, "apiVersion"), jv_member_str(owner, "kind")));

	/* a Pod of a held parent that makes Pods itself (a Job, a RayCluster),
	   made by that parent's controller from the template gpuq released */
	if (parent->hold != WORKLOAD_HOLD_SUSPEND || parent->child_kind != WORKLOAD_KIND_POD ||
	    !managed || strcmp(managed, "true") != 0 || !w->admitted ||
	    !webhook_review_creator(r, parent))
		return WEBHOOK_EXEMPT_NO;
	/* and that parent exists, admitted and running, in the controller's
	   cache: the marks and the creator's name alone are claims anyone who
	   may run as that identity could make */
	return webhook_owners_has(r->cfg->owners, jv_member_str(owner, "uid"))
		   ? WEBHOOK_EXEMPT_YES
		   : WEBHOOK_EXEMPT_UNPROVEN;
}

void webhook_pod_exempt_refuse(webhook_review_t *r, const workload_view_t *w)
{
	const jv_t *owner = workload_controller_owner(w->obj);
	const char *uid = jv_member_str(owner, "uid");

	webhook_review_refuse(
	    r, WEBHOOK_DENY,
	    "Pod \"%s\": its owner %s \"%.80s\" (uid %.40s) is not among the %ss gpuq "
	    "admitted and runs, as this replica's controller has seen them: not exempt from "
	    "the queue. A %s gpuq just released is seen within moments: retry",
	    w->name, jv_member_str(owner, "kind"), jv_member_str(owner, "name"),
	    uid && *uid ? uid : "none", jv_member_str(owner, "kind"), jv_member_str(owner, "kind"));
}

bool webhook_pod_group_member(const webhook_review_t *r, const workload_view_t *w)
{
	const jv_t *owner = workload_controller_owner(w->obj);
	const workload_integration_t *parent = workload_integration(
	    workload_kind_of(jv_member_str(owner, "apiVersion"), jv_member_str(owner, "kind")));

	if (w->kind != WORKLOAD_KIND_POD || !w->pod_group ||
	    (parent->hold == WORKLOAD_HOLD_SUSPEND && parent->child_kind == WORKLOAD_KIND_POD))
		return false;
	return w->queue || policy_lq_find(r->policy, r->ns, WEBHOOK_DEFAULT_QUEUE);
}

static void mutate_pod(webhook_review_t *r, workload_view_t *w)
{
	const jv_t *pod_spec = w->podsets[0].pod_spec;
	const jv_t *gates = jv_get(pod_spec, "schedulingGates");
	const char *node = jv_member_str(pod_spec, "nodeName");

	switch (webhook_pod_job_admitted(r, w)) {
	case WEBHOOK_EXEMPT_YES:
		return;
	case WEBHOOK_EXEMPT_UNPROVEN: /* fail closed: the Job controller retries */
		webhook_pod_exempt_refuse(r, w);
		return;
	case WEBHOOK_EXEMPT_NO:
		break;
	}
	if (node && *node)
		return; /* a gate is invalid with nodeName; /validate refuses the Pod */
	if (!workload_pod_gated(pod_spec)) {
		if (jv_is(gates, JV_ARRAY))
			webhook_patch_add(&r->patch, "/spec/schedulingGates/-", NULL,
					  "{\"name\":\"" WEBHOOK_GATE "\"}");
		else
			webhook_patch_add(&r->patch, "/spec", "schedulingGates",
					  "[{\"name\":\"" WEBHOOK_GATE "\"}]");
	}
	if (!w->queue)
		patch_label(r, "/metadata", jv_get(w->obj, "metadata"), WEBHOOK_LABEL_QUEUE,
			    WEBHOOK_DEFAULT_QUEUE);
	if (!w->pod_group) /* a group's status counts its members: the controller's */
		patch_status(r, w, jv_get(w->obj, "metadata"));
	webhook_review_warn_queued(r, queue_of(w), "Pod gated until gpuq admits ",
				   w->pod_group ? "its pod group" : "it", "");
}

const workload_integration_t *webhook_child_parent(const workload_view_t *w)
{
	const jv_t *owner = workload_controller_owner(w->obj);

	return owner ? workload_parent_of(w->kind, jv_member_str(owner, "apiVersion"),
					  jv_member_str(owner, "kind"))
		     : NULL;
}

/* A set whose Pods gpuq gates (a StatefulSet, a LeaderWorkerSet) or whose
 * Pods are each a workload (a Deployment): the queue label on it, and on
 * every pod template, so its Pods queue where it does (a Pod's own label
 * is what the Pod rules read). */
static void mutate_set(webhook_review_t *r, workload_view_t *w)
{
	const char *q = queue_of(w);

	if (!w->queue)
		patch_label(r, "/metadata", jv_get(w->obj, "metadata"), WEBHOOK_LABEL_QUEUE, q);
	for (size_t p = 0; p < w->n_podsets; p++) {
		const workload_view_podset_t *ps = &w->podsets[p];
		const char *tq = workload_labels_queue(ps->pod_labels);
		char mptr[WORKLOAD_FIELD_MAX + 16];

		if (!jv_is(ps->tmpl, JV_OBJECT) ||
		    (tq && !strcmp(tq, q) && jv_member_str(ps->pod_labels, WEBHOOK_LABEL_QUEUE)))
			continue;
		gpuq_strjoin(mptr, sizeof(mptr), ps->tmpl_ptr, "/metadata", "");
		patch_label(r, mptr, jv_get(ps->tmpl, "metadata"), WEBHOOK_LABEL_QUEUE, q);
	}
	webhook_review_warn_queued(r, q, w->kind_name, "'s Pods gated until gpuq admits ",
				   w->integ->hold == WORKLOAD_HOLD_NONE ? "each of them" : "them");
}

int webhook_mutate_run(webhook_review_t *r)
{
	const workload_config_t wcfg = webhook_workload_cfg(r->cfg);
	workload_view_t w;
	gpuq_diag_t diag = {""};
	int rc;

	if (strcmp(r->op, "CREATE") != 0 || !r->obj || *r->sub_resource)
		return GPUQ_OK;
	if (!policy_namespace_managed(r->policy, r->ns))
		return GPUQ_OK;
	rc = workload_view_decode(&w, r->policy, &wcfg, r->ns, r->kind, r->obj, &diag);
	if (rc == GPUQ_EINVAL) {
		webhook_review_refuse(r, WEBHOOK_INVALID, "%s", diag.msg);
		rc = GPUQ_OK;
	} else if (!rc && w.gpu && webhook_child_parent(&w)) {
		/* a held parent's child (a JobSet's Job): its parent was held and
		 * admitted, /validate checks who made it; it replaces its Pods
		 * as a Job of gpuq's does */
		patch_replacement(r, &w);
	} else if (!rc && w.gpu && webhook_review_unwatched(r, &w)) {
		/* refused: a kind gpuq does not watch is never held */
	} else if (!rc && w.gpu && w.integ->hold == WORKLOAD_HOLD_SUSPEND) {
		mutate_parent(r, &w);
	} else if (!rc &&
		   ((w.gpu && w.kind == WORKLOAD_KIND_POD) || webhook_pod_group_member(r, &w))) {
		mutate_pod(r, &w); /* a pod group's member is gated whatever it asks */
	} else if (!rc && w.gpu) {
		mutate_set(r, &w);
	}
	workload_view_deinit(&w);
	return rc;
}

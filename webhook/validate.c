/* webhook/validate.c: the /validate rules. In a managed namespace (one some
 * ClusterQueue selects), a GPU Pod or Job, or any member of a pod group that
 * queues (judged alone: the group's other members may ask for something
 * else), is refused when it has nowhere to queue, breaks a LimitRange or the
 * extended-resource rules, asks on its own for more than a ResourceQuota
 * allows, or could never fit its ClusterQueue even borrowing all it may; and
 * nobody but gpuq's controller may unsuspend an unadmitted Job, remove the
 * admission gate, set gpuq.dev/admitted, move an admitted workload to
 * another queue or change what makes a Pod a member of its pod group. Every
 * refusal names the object, the field and the values, and says how to fix
 * it. */
#include <stdio.h>
#include <string.h>

#include "webhook/admit_internal.h"

static bool streq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The label key that named the queue (for messages). */
static const char *queue_key(const workload_view_t *w)
{
	return jv_member_str(w->labels, WEBHOOK_LABEL_QUEUE) || !w->queue
		   ? WEBHOOK_LABEL_QUEUE
		   : WEBHOOK_LABEL_KUEUE_QUEUE;
}

/* The workload's LocalQueue must exist, not be left out of the policy
 * (policy_leftout_find: its ClusterQueue is gone, ...), and its
 * ClusterQueue must select the namespace. Sets *cq on success. */
static bool check_queue(webhook_review_t *r, const workload_view_t *w, const policy_cq_t **cq)
{
	const char *q = w->queue ? w->queue : WEBHOOK_DEFAULT_QUEUE;
	const policy_lq_t *lq = policy_lq_find(r->policy, r->ns, q);
	const policy_leftout_t *out;

	*cq = NULL;
	/* The refusals name no other queue: a review posted to the webhook by
	 * anyone but the apiserver may name any namespace, so the namespace's
	 * LocalQueues are left for kubectl (and RBAC) to list. */
	if (!lq && (out = policy_leftout_find(r->policy, "LocalQueue", r->ns, q))) {
		/* it exists, but the policy left it out: say which and why */
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "%s \"%s\": LocalQueue %s/%s is inactive (%s): %s; use another "
		    "LocalQueue, or ask a cluster admin to fix it",
		    w->kind_name, w->name, r->ns, q, out->reason, out->message);
		return false;
	}
	if (!lq) {
		if (w->queue)
			webhook_review_refuse(r, WEBHOOK_DENY,
					      "%s \"%s\": label %s is \"%s\", but namespace %s has "
					      "no LocalQueue \"%s\"; set the label to an existing "
					      "LocalQueue (kubectl get localqueues -n %s)",
					      w->kind_name, w->name, queue_key(w), q, r->ns, q,
					      r->ns);
		else
			webhook_review_refuse(r, WEBHOOK_DENY,
					      "%s \"%s\" names no queue and namespace %s has no "
					      "LocalQueue \"%s\"; set label %s to an existing "
					      "LocalQueue (kubectl get localqueues -n %s)",
					      w->kind_name, w->name, r->ns, q, WEBHOOK_LABEL_QUEUE,
					      r->ns);
		return false;
	}
	if (!policy_cq_selects(r->policy, lq->cq, r->ns)) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": LocalQueue %s/%s points to ClusterQueue \"%s\", "
				      "whose namespaceSelector does not select namespace %s; use a "
				      "LocalQueue whose ClusterQueue selects %s, or ask a cluster "
				      "admin to fix the selector",
				      w->kind_name, w->name, r->ns, q, lq->cq_name, r->ns, r->ns);
		return false;
	}
	*cq = lq->cq;
	return true;
}

/* The namespace's LimitRanges and ResourceQuotas (none when unknown). */
static const policy_namespace_t *ns_of(const webhook_review_t *r)
{
	return policy_namespace_find(r->policy, r->ns);
}

/* Extended resources (nvidia.com/gpu and the like): whole numbers, request
 * equal to limit, a limit whenever there is a request. Checked on the
 * containers as declared. */
static bool check_extended(webhook_review_t *r, const workload_view_t *w)
{
	gpuq_diag_t diag;

	diag.msg[0] = '\0'; /* not the whole 1 KiB: every review comes here */
	for (size_t i = 0; i < w->n_podsets; i++) {
		const workload_view_podset_t *ps = &w->podsets[i];

		if (quota_extended_validate(&ps->pod, ps->spec_field, &diag) == GPUQ_OK)
			continue;
		webhook_review_refuse(r, WEBHOOK_DENY, "%s \"%s\": %s", w->kind_name, w->name,
				      diag.msg);
		return false;
	}
	return true;
}

/* Totals of the whole workload: requests, limits, and the requests the
 * ClusterQueue sees (GPUs asked for through DRA counted as nvidia.com/gpu).
 * The LimitRange check leaves its own totals of a lone pod set here, so
 * they are not made twice. */
typedef struct {
	quota_reslist_t one;		 /* one pod's requests, DRA GPUs included */
	quota_reslist_t requests;	 /* all pods' requests (what ResourceQuota counts) */
	quota_reslist_t limits;		 /* all pods' limits */
	quota_reslist_t fit;		 /* all pods' requests, DRA GPUs included */
	quota_reslist_t judged_requests; /* a pod's requests without overhead (check_limits) */
	quota_reslist_t judged_limits;	 /* its limits without overhead (check_limits) */
	bool judged; /* they are pod set 0's one pod: the only pod set, no overhead */
} totals_t;

/* Fill in defaults as the Pods will get them (requests from limits, then
 * the namespace's LimitRange defaults, and their RuntimeClass's overhead)
 * and check the LimitRanges. A template whose Pods the RuntimeClass plugin
 * would refuse is refused now, in its words. */
static bool check_limits(webhook_review_t *r, workload_view_t *w, totals_t *t)
{
	const policy_namespace_t *ns = ns_of(r);
	const quota_limitrange_t *const *lrs = ns ? ns->limitranges : NULL;
	size_t n_lrs = ns ? ns->n_limitranges : 0;
	gpuq_diag_t diag;
	size_t i = 0;
	int rc;

	diag.msg[0] = '\0';
	rc = workload_view_default(w, r->policy, r->ns, &i, &diag);
	if (rc == GPUQ_ENOTFOUND || rc == GPUQ_EDENIED) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s: %s (the apiserver refuses every Pod this "
				      "template makes); %s",
				      w->kind_name, w->name, w->podsets[i].spec_field, diag.msg,
				      rc == GPUQ_ENOTFOUND ? "create the RuntimeClass first or "
							     "change runtimeClassName"
							   : "leave spec.overhead unset: the "
							     "RuntimeClass sets it");
		return false;
	}
	i = rc ? i + 1 : 0; /* the defaulting refused pod set i */
	for (; !rc && i < w->n_podsets; i++)
		rc = quota_limitrange_validate_totals(
		    lrs, n_lrs, &w->podsets[i].pod, &t->judged_requests, &t->judged_limits, &diag);
	/* without overhead, a lone pod set's totals are the workload's own */
	t->judged = rc == GPUQ_OK && w->n_podsets == 1 && w->podsets[0].pod.overhead.n == 0;
	if (rc == GPUQ_OK)
		return true;
	i = i ? i - 1 : 0; /* the pod set refused */
	if (rc == GPUQ_EDENIED)
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s: %s; change the %s's resources to fit the "
				      "LimitRanges of namespace %s",
				      w->kind_name, w->name, w->podsets[i].spec_field, diag.msg,
				      w->kind == WORKLOAD_KIND_POD ? "Pod" : "pod template", r->ns);
	else
		webhook_review_refuse(r, WEBHOOK_INVALID,
				      "%s \"%s\": %s: too many resources or a sum above 2^63-1 "
				      "once LimitRange defaults are applied",
				      w->kind_name, w->name, w->podsets[i].spec_field);
	return false;
}

/* "(2 per pod x 8 pods)" for a Job or Pod group of several pods, else "". */
static void per_pod(const workload_view_t *w, const quota_reslist_t *one, const char *res,
		    char *buf, size_t cap)
{
	const quota_qty_t *q = quota_reslist_get(one, res);
	char v[QUOTA_QTY_FMT_MAX];

	buf[0] = '\0';
	if (w->pods == 1 || w->n_podsets != 1 || !q || quota_qty_format(q, v, sizeof(v)))
		return;
	snprintf(buf, cap, " (%s per pod x %lld pods)", v, (long long)w->pods);
}

/* dst[name] += src[name] for every entry of src; into an empty dst (the
 * first pod set's share) a copy, src's names being unique. */
static int add_all(quota_reslist_t *dst, const quota_reslist_t *src)
{
	int rc = GPUQ_OK;

	if (dst->n == 0) {
		quota_reslist_copy(dst, src);
		return GPUQ_OK;
	}
	for (size_t k = 0; !rc && k < src->n; k++)
		rc = quota_reslist_add(dst, src->items[k].name, &src->items[k].qty);
	return rc;
}

/* One pod set's share of the totals: its pods times one pod's requests. A
 * single pod set counts the workload's pods (a Pod in a group stands for
 * the whole group). */
static int podset_totals(const workload_view_t *w, size_t i, totals_t *t)
{
	const workload_view_podset_t *ps = &w->podsets[i];
	int64_t pods = w->n_podsets == 1 ? w->pods : ps->count;
	quota_reslist_t req, one, lim;
	int rc;

	if (i == 0 && t->judged) {
		quota_reslist_copy(&req, &t->judged_requests);
		quota_reslist_copy(&lim, &t->judged_limits);
		rc = workload_view_pod_one(ps, &req, &one);
	} else {
		rc = workload_view_pod_request(ps, &req, &one);
		if (!rc)
			rc = quota_pod_limits(&ps->pod, &lim);
	}
	if (!rc && i == 0)
		quota_reslist_copy(&t->one, &one);
	if (!rc)
		rc = quota_reslist_scale(&req, pods);
	if (!rc)
		rc = quota_reslist_scale(&lim, pods);
	if (!rc)
		rc = quota_reslist_scale(&one, pods);
	if (!rc)
		rc = add_all(&t->requests, &req);
	if (!rc)
		rc = add_all(&t->limits, &lim);
	if (!rc)
		rc = add_all(&t->fit, &one);
	return rc;
}

/* A kind whose pod sets are its child's (a TrainJob) has none here: the
 * GPUs its object says its nodes get (said_gpus on said_nodes), the least
 * its child will ask, stand for them in the fit (a ClusterQueue that could
 * never hold that refuses it). */
static int said_totals(const workload_view_t *w, totals_t *t)
{
	int rc;

	if (w->n_podsets || quota_qty_is_zero(&w->said_gpus))
		return GPUQ_OK;
	rc = quota_reslist_set(&t->one, w->gpu_resource, &w->said_gpus);
	if (!rc)
		rc = quota_reslist_set(&t->fit, w->gpu_resource, &w->said_gpus);
	if (!rc)
		rc = quota_reslist_scale(&t->fit, w->said_nodes);
	return rc;
}

static bool workload_totals(webhook_review_t *r, const workload_view_t *w, totals_t *t)
{
	int rc = GPUQ_OK;

	t->requests.n = t->limits.n = t->fit.n = t->one.n = 0;
	for (size_t i = 0; !rc && i < w->n_podsets; i++)
		rc = podset_totals(w, i, t);
	if (!rc)
		rc = said_totals(w, t);
	if (!rc)
		return true;
	webhook_review_refuse(r, WEBHOOK_INVALID,
			      "%s \"%s\": its total request overflows (more than %d resources, "
			      "or a quantity above 2^63-1 once multiplied by %lld pods)",
			      w->kind_name, w->name, QUOTA_RESLIST_MAX, (long long)w->pods);
	return false;
}

/* The request alone must fit under every ResourceQuota hard limit that
 * counts its Pods (a quota scoped to a PriorityClass counts only that
 * class's: the usual way to keep a class for some namespaces). */
static bool check_quota(webhook_review_t *r, const workload_view_t *w, const totals_t *t)
{
	const policy_namespace_t *ns = ns_of(r);
	gpuq_diag_t diag;
	quota_pod_scope_t scope;

	diag.msg[0] = '\0';
	workload_view_quota_scope(w, r->policy, &t->requests, &t->limits, &scope);
	if (!ns ||
	    quota_resourcequota_check(ns->quotas, ns->n_quotas, &scope, &t->requests, &t->limits,
				      w->pods, QUOTA_RQ_IGNORE_USED, &diag) == GPUQ_OK)
		return true;
	webhook_review_refuse(
	    r, WEBHOOK_DENY,
	    "%s \"%s\": %s; its request alone is over the namespace's hard "
	    "limit, so it could never run: ask for less%s or have the quota raised",
	    w->kind_name, w->name, diag.msg,
	    w->integ->hold == WORKLOAD_HOLD_SUSPEND ? " (per pod, or fewer pods)" : "");
	return false;
}

/* Whether flavor f of group g can hold every requested resource g covers. */
static bool flavor_fits(const policy_cq_t *cq, const policy_resource_group_t *g,
			const policy_flavor_quota_t *f, const quota_reslist_t *total,
			const char **short_res)
{
	for (size_t i = 0; i < g->n_covered; i++) {
		const quota_qty_t *want = quota_reslist_get(total, g->covered[i]);
		int64_t max;

		if (!want || quota_qty_is_zero(want))
			continue;
		/* in the core's units, as the core compares (quota_max_fit) */
		if (policy_cq_max_fit(cq, f->name, g->covered[i], &max) ||
		    quota_qty_amount(g->covered[i], want) > max) {
			*short_res = g->covered[i];
			return false;
		}
	}
	return true;
}

/* "h100: 64, a100: 16" of the most each flavor of g could give of res. */
static void flavor_maxes(const policy_cq_t *cq, const policy_resource_group_t *g, const char *res,
			 char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t f = 0; f < g->n_flavors; f++) {
		int64_t max;
		char v[32];
		int k;

		if (policy_cq_max_fit(cq, g->flavors[f].name, res, &max))
			max = 0;
		quota_amount_format(res, max, v, sizeof(v));
		k = snprintf(buf + len, cap - len, "%s%s: %s", f ? ", " : "", g->flavors[f].name,
			     v);
		if (k < 0 || (size_t)k >= cap - len)
			break;
		len += (size_t)k;
	}
}

/* The workload must fit its ClusterQueue in some flavor of every resource
 * group it uses, counting all it could borrow; a requested resource no group
 * covers never fits. */
static bool check_fit(webhook_review_t *r, const workload_view_t *w, const policy_cq_t *cq,
		      const quota_reslist_t *one, const quota_reslist_t *total)
{
	char v[QUOTA_QTY_FMT_MAX], pp[96], maxes[256];

	for (size_t i = 0; i < total->n; i++) {
		const quota_res_t *e = &total->items[i];

		if (quota_qty_is_zero(&e->qty) || policy_cq_group(cq, e->name))
			continue;
		if (quota_qty_format(&e->qty, v, sizeof(v)))
			gpuq_strlcpy(v, "?", sizeof(v));
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "%s \"%s\" can never be admitted: it requests %s=%s but no "
		    "resource group of ClusterQueue \"%s\" covers %s; remove that "
		    "request or use a LocalQueue whose ClusterQueue offers %s",
		    w->kind_name, w->name, e->name, v, cq->name, e->name, e->name);
		return false;
	}
	for (size_t gi = 0; gi < cq->n_groups; gi++) {
		const policy_resource_group_t *g = &cq->groups[gi];
		const char *res = NULL, *first = NULL;
		bool used = false, fits = false;

		for (size_t i = 0; i < g->n_covered && !used; i++) {
			const quota_qty_t *want = quota_reslist_get(total, g->covered[i]);

			used = want && !quota_qty_is_zero(want);
		}
		for (size_t f = 0; used && f < g->n_flavors && !fits; f++) {
			fits = flavor_fits(cq, g, &g->flavors[f], total, &res);
			if (!first)
				first = res;
		}
		if (!used || fits)
			continue;
		if (!first)
			first = g->covered[0];
		if (quota_qty_format(quota_reslist_get(total, first), v, sizeof(v)))
			gpuq_strlcpy(v, "?", sizeof(v));
		per_pod(w, one, first, pp, sizeof(pp));
		flavor_maxes(cq, g, first, maxes, sizeof(maxes));
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "%s \"%s\" can never be admitted: it requests %s=%s in total%s, "
		    "more than ClusterQueue \"%s\" could give in any flavor even "
		    "borrowing all it may (%s); ask for less%s",
		    w->kind_name, w->name, first, v, pp, cq->name, maxes,
		    w->integ->hold == WORKLOAD_HOLD_SUSPEND ? " per pod or run fewer pods" : "");
		return false;
	}
	return true;
}

/* The checks every new GPU workload, and every member of a pod group,
 * goes through. exempt: an admitted Job's Pod (its Job went through the
 * queue checks already). A member of a pod group that asks for no GPU is
 * not judged against its ClusterQueue: its group may ask for none (then it
 * is not the queue's); the core judges the complete group. */
/* An exempt Pod (its admitted parent's controller made it) takes its GPUs
 * from what its workload was admitted for, less what the workload's
 * unfinished Pods hold and what Pods let pass a moment ago take (owners.c):
 * a Pod made beside one it replaces that still terminates (a JobSet's Job
 * deleted and made again at once, under the same name, by the JobSet
 * controller) would run two Pods on one Pod's quota. Refused; its
 * controller retries, and passes once the other ended. */
static void check_room(webhook_review_t *r, const workload_view_t *w, const quota_reslist_t *one)
{
	const workload_config_t gcfg = webhook_workload_cfg(r->cfg);
	const jv_t *owner = workload_controller_owner(w->obj);
	int64_t gpus = workload_reslist_gpus(&gcfg, one);
	webhook_room_t room;
	int rc;

	if (gpus <= 0 || !r->cfg)
		return;
	rc = webhook_owners_take(r->cfg->owners, r->cfg->allows, jv_member_str(owner, "uid"),
				 jv_member_str(jv_get(w->obj, "metadata"), "uid"), gpus,
				 r->cfg->now_ms, &room);
	if (rc == GPUQ_EDENIED)
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "Pod \"%s\" asks for %lld GPUs, and %s was admitted for %lld: its "
		    "unfinished Pods hold %lld, and Pods let pass a moment ago %lld more. A Pod "
		    "this one replaces has not ended yet; its controller retries, and it is let "
		    "pass once that Pod is gone",
		    w->name, (long long)gpus, room.what, (long long)room.admitted,
		    (long long)room.held, (long long)room.pending);
	else if (rc == GPUQ_EAGAIN)
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": more Pods were let pass at once than gpuq can "
				      "count before it sees them: retry",
				      w->name);
}

static void check_workload(webhook_review_t *r, workload_view_t *w, bool exempt)
{
	const policy_cq_t *cq = NULL;
	totals_t t;

	if (!exempt && !check_queue(r, w, &cq))
		return;
	if (!check_extended(r, w) || !check_limits(r, w, &t))
		return;
	if (!workload_totals(r, w, &t) || !check_quota(r, w, &t))
		return;
	if (exempt)
		check_room(r, w, &t.one);
	else if (w->gpu)
		check_fit(r, w, cq, &t.one, &t.fit);
}

/* The field of ps's template then tail ("spec.template" +
 * ".metadata.labels") into buf (cap > 0), cut short as snprintf would: the
 * template's field is its spec's without ".spec". Runs on every review
 * (check_keys), so no snprintf. */
static const char *tmpl_field(const workload_view_podset_t *ps, const char *tail, char *buf,
			      size_t cap)
{
	size_t n = strlen(ps->spec_field);

	n = n > 5 ? n - 5 : n;
	n = n < cap ? n : cap - 1;
	memcpy(buf, ps->spec_field, n);
	gpuq_strlcpy(buf + n, tail, cap - n);
	return buf;
}

/* The field of the first pod template of w carrying gpuq.dev/admitted
 * ("spec.template.metadata.annotations"), into buf. */
static const char *tmpl_admitted_field(const workload_view_t *w, char *buf, size_t cap)
{
	for (size_t i = 0; i < w->n_podsets; i++)
		if (w->podsets[i].tmpl_admitted)
			return tmpl_field(&w->podsets[i], ".metadata.annotations", buf, cap);
	gpuq_strlcpy(buf, "metadata.annotations", cap);
	return buf;
}

/* A held parent's child (a JobSet's Job) on CREATE: only the parent's
 * controller makes them, and only an admitted parent's run. */
static void validate_child(webhook_review_t *r, const workload_view_t *w,
			   const workload_integration_t *parent)
{
	const jv_t *owner = workload_controller_owner(w->obj);

	if (!webhook_review_creator(r, parent))
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "%s \"%s\": metadata.ownerReferences names %s \"%s\" as its controller, but "
		    "a %s's %ss are made by its controller only (%s), not by %s; create the %s "
		    "instead and let gpuq admit it",
		    w->kind_name, w->name, parent->kind_name, jv_member_str(owner, "name"),
		    parent->kind_name, w->kind_name, webhook_review_creator_first(r, parent),
		    r->username, parent->kind_name);
	else if (!w->suspend && !w->tmpl_admitted)
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": a %s's %s runs only once gpuq admitted the %s; "
				      "its pod template lacks %s",
				      w->kind_name, w->name, parent->kind_name, w->kind_name,
				      parent->kind_name, WEBHOOK_ANNOT_ADMITTED);
}

/* A created workload held by suspension: created suspended and not marked
 * admitted by anyone but gpuq. False once r is refused. */
static bool suspended_create_ok(webhook_review_t *r, const workload_view_t *w)
{
	char field[WORKLOAD_FIELD_MAX + 32];

	if (w->admitted || w->tmpl_admitted) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s[%s] may be set only by gpuq's "
				      "controller (%s); remove it and let the queue admit the %s",
				      w->kind_name, w->name,
				      w->admitted ? "metadata.annotations"
						  : tmpl_admitted_field(w, field, sizeof(field)),
				      WEBHOOK_ANNOT_ADMITTED, r->controller_user, w->kind_name);
		return false;
	}
	if (!w->suspend) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": spec.suspend is false; a GPU %s in a "
				      "managed namespace must be created suspended (gpuq's "
				      "mutating webhook sets it: check that it is installed)",
				      w->kind_name, w->name, w->kind_name);
		return false;
	}
	return true;
}

/* A created Pod marked admitted that is not exempt: refused in the words
 * of the parent that may mark it (a RayCluster), else a Job's. */
static void refuse_pod_marked(webhook_review_t *r, const workload_view_t *w)
{
	const jv_t *owner = workload_controller_owner(w->obj);
	const workload_integration_t *p = workload_integration(
	    workload_kind_of(jv_member_str(owner, "apiVersion"), jv_member_str(owner, "kind")));

	if (p->hold != WORKLOAD_HOLD_SUSPEND || p->child_kind != WORKLOAD_KIND_POD)
		p = workload_integration(WORKLOAD_KIND_JOB);
	webhook_review_refuse(r, WEBHOOK_DENY,
			      "Pod \"%s\": annotation %s is honoured only on Pods the "
			      "%s controller creates for a %s gpuq admitted (label %s="
			      "true and a %s %s owner); remove it and let the "
			      "queue admit the Pod",
			      w->name, WEBHOOK_ANNOT_ADMITTED, p->kind_name, p->kind_name,
			      WEBHOOK_LABEL_MANAGED, p->api_version, p->kind_name);
}

/* A created Pod held by its scheduling gate: exempt (*exempt set), or
 * gated, unmarked and not bound. False once r is refused. */
static bool gated_create_ok(webhook_review_t *r, workload_view_t *w, bool *exempt)
{
	const char *what = w->gpu ? "a GPU Pod" : "a Pod of a pod group";
	const char *node = jv_member_str(w->podsets[0].pod_spec, "nodeName");

	/* a pod group's member is judged alone (the others may ask for
	   something else, a CPU-only driver: the core judges the complete
	   group), as ResourceQuota charges it */
	w->pods = 1;
	switch (webhook_pod_job_admitted(r, w)) {
	case WEBHOOK_EXEMPT_UNPROVEN:
		webhook_pod_exempt_refuse(r, w);
		return false;
	case WEBHOOK_EXEMPT_YES:
		*exempt = true;
		return true;
	case WEBHOOK_EXEMPT_NO:
		break;
	}
	if (w->admitted) {
		refuse_pod_marked(r, w);
		return false;
	}
	if (node && *node) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": spec.nodeName is \"%s\"; %s in a "
				      "managed namespace must go through gpuq's queue: remove "
				      "spec.nodeName (use a nodeSelector instead)",
				      w->name, node, what);
		return false;
	}
	if (!workload_pod_gated(w->podsets[0].pod_spec)) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": spec.schedulingGates lacks %s; %s in a "
				      "managed namespace must wait for gpuq's queue (gpuq's "
				      "mutating webhook adds the gate: check that it is installed)",
				      w->name, WEBHOOK_GATE, what);
		return false;
	}
	return true;
}

static void validate_create(webhook_review_t *r, workload_view_t *w)
{
	bool exempt = false;

	if (w->unsupported) {
		webhook_review_refuse(r, WEBHOOK_DENY, "%s \"%s\": %s", w->kind_name, w->name,
				      w->unsupported);
		return;
	}
	if (w->integ->hold == WORKLOAD_HOLD_SUSPEND ? suspended_create_ok(r, w)
						    : gated_create_ok(r, w, &exempt))
		check_workload(r, w, exempt);
}

/* Whether one Pod of pod sets a and b asks for the same: containers,
 * requests, limits, overhead, the RuntimeClass that gives it its overhead,
 * and DRA devices (its shape). */
static bool same_shape(const workload_view_podset_t *pa, const workload_view_podset_t *pb)
{
	if (pa->dra_gpus != pb->dra_gpus || pa->pod.n_containers != pb->pod.n_containers ||
	    !quota_reslist_same(&pa->pod.overhead, &pb->pod.overhead) ||
	    !streq(pa->runtime_class, pb->runtime_class))
		return false;
	for (size_t i = 0; i < pa->pod.n_containers; i++) {
		const quota_container_t *x = &pa->pod.containers[i];
		const quota_container_t *y = &pb->pod.containers[i];

		if (x->kind != y->kind || !quota_reslist_same(&x->requests, &y->requests) ||
		    !quota_reslist_same(&x->limits, &y->limits))
			return false;
	}
	return true;
}

/* Whether two decodings of a workload ask for the same resources: the same
 * pod count and pod sets of the same shape. Only then may an UPDATE of a
 * queued Job skip the CREATE checks (controllers that touch metadata, such
 * as the garbage collector, never change these). */
static bool same_request(const workload_view_t *a, const workload_view_t *b)
{
	if (a->pods != b->pods || a->n_podsets != b->n_podsets || a->said_nodes != b->said_nodes ||
	    quota_qty_cmp(&a->said_gpus, &b->said_gpus) != 0)
		return false;
	for (size_t p = 0; p < a->n_podsets; p++)
		if (a->podsets[p].count != b->podsets[p].count ||
		    !same_shape(&a->podsets[p], &b->podsets[p]) ||
		    !workload_topology_same(&a->podsets[p].topology, &b->podsets[p].topology))
			return false;
	return true;
}

static const workload_view_podset_t *podset_named(const workload_view_t *w, const char *name)
{
	for (size_t p = 0; p < w->n_podsets; p++)
		if (!strcmp(w->podsets[p].name, name))
			return &w->podsets[p];
	return NULL;
}

/* What the edit from old to w changes that the row's answers (shape: one
 * Pod's requests; count: how many Pods) refuse, said into why for a
 * message ("pod set \"workers\" (spec.template.spec) grows from 1 to 6
 * pods"); false when they allow all of it. Pod sets are matched by name: a
 * new one is more Pods, a removed one fewer. */
static bool edit_refused(const workload_view_t *w, const workload_view_t *old,
			 workload_edit_t shape, workload_edit_t count, char *why, size_t cap)
{
	/* a kind whose pod sets are its child's: what it says of its nodes */
	if (w->integ->gpu_field && shape == WORKLOAD_EDIT_REFUSE &&
	    quota_qty_cmp(&w->said_gpus, &old->said_gpus) != 0) {
		snprintf(why, cap, "what a node asks for (%s) changed", w->integ->gpu_field);
		return true;
	}
	if (w->integ->said_count_field &&
	    ((count == WORKLOAD_EDIT_SHRINK && w->said_nodes > old->said_nodes) ||
	     (count == WORKLOAD_EDIT_REFUSE && w->said_nodes != old->said_nodes))) {
		snprintf(why, cap, "%s %s from %lld to %lld", w->integ->said_count_field,
			 w->said_nodes > old->said_nodes ? "grows" : "shrinks",
			 (long long)old->said_nodes, (long long)w->said_nodes);
		return true;
	}
	for (size_t p = 0; p < w->n_podsets; p++) {
		const workload_view_podset_t *n = &w->podsets[p];
		const workload_view_podset_t *o = podset_named(old, n->name);

		if (!o && count != WORKLOAD_EDIT_FOLLOW) {
			snprintf(why, cap, "pod set \"%s\" (%s) of %lld pods is new", n->name,
				 n->spec_field, (long long)n->count);
			return true;
		}
		if (!o)
			continue;
		if (shape == WORKLOAD_EDIT_REFUSE &&
		    !workload_topology_same(&o->topology, &n->topology)) {
			snprintf(why, cap,
				 "the topology annotations of pod set \"%s\" (%s: "
				 "podset-*-topology, slice size, group) changed",
				 n->name, n->spec_field);
			return true;
		}
		if (shape == WORKLOAD_EDIT_REFUSE && !same_shape(o, n)) {
			snprintf(why, cap,
				 "what a Pod of pod set \"%s\" asks for (%s: its containers' "
				 "requests and limits, overhead, GPU claims) changed",
				 n->name, n->spec_field);
			return true;
		}
		if ((count == WORKLOAD_EDIT_SHRINK && n->count > o->count) ||
		    (count == WORKLOAD_EDIT_REFUSE && n->count != o->count)) {
			snprintf(why, cap, "pod set \"%s\" (%s) %s from %lld to %lld pods", n->name,
				 n->spec_field, n->count > o->count ? "grows" : "shrinks",
				 (long long)o->count, (long long)n->count);
			return true;
		}
	}
	return false;
}

/* The row's replace_member (a Job's podReplacementPolicy) moved away from
 * what gpuq's webhook set at its creation: refused, said into r. */
static bool replacement_changed(webhook_review_t *r, const workload_view_t *w,
				const workload_view_t *old)
{
	const char *m = w->integ->replace_member;
	const char *was = m ? jv_member_str(jv_member_obj(old->obj, "spec"), m) : NULL;
	const char *now = m ? jv_member_str(jv_member_obj(w->obj, "spec"), m) : NULL;

	if (!was || strcmp(was, WORKLOAD_REPLACE_FAILED) != 0 || streq(was, now))
		return false;
	webhook_review_refuse(r, WEBHOOK_DENY,
			      "%s \"%s\": spec.%s cannot change from \"%s\" (now \"%.40s\"): gpuq "
			      "keeps it so a Pod's successor starts once the Pod has terminated "
			      "(a terminating Pod holds its GPUs; both would run on one Pod's "
			      "quota)",
			      w->kind_name, w->name, m, was, now ? now : "");
	return true;
}

/* A set's replicas (its row's replicas_member of spec, default 1); 0 when
 * the kind is no set. */
static int64_t set_replicas(const workload_view_t *w)
{
	int64_t n = 1;

	if (!w->integ->replicas_member)
		return 0;
	(void)jv_int(jv_get(jv_member_obj(w->obj, "spec"), w->integ->replicas_member), &n);
	return n;
}

static void validate_update_parent(webhook_review_t *r, workload_view_t *w,
				   const workload_view_t *old)
{
	char field[WORKLOAD_FIELD_MAX + 32], why[WORKLOAD_FIELD_MAX + 256];

	if (replacement_changed(r, w, old))
		return;
	if ((w->admitted && !old->admitted) || (w->tmpl_admitted && !old->tmpl_admitted)) {
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "%s \"%s\": %s[%s] may be set only by gpuq's controller (%s); gpuq sets it "
		    "when the queue admits the %s",
		    w->kind_name, w->name,
		    w->admitted && !old->admitted ? "metadata.annotations"
						  : tmpl_admitted_field(w, field, sizeof(field)),
		    WEBHOOK_ANNOT_ADMITTED, r->controller_user, w->kind_name);
	} else if (w->unsupported && (!old->admitted || !old->unsupported)) {
		webhook_review_refuse(r, WEBHOOK_DENY, "%s \"%s\": %s", w->kind_name, w->name,
				      w->unsupported);
	} else if (old->suspend && !w->suspend && !old->admitted) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": spec.suspend may change from true to false only "
				      "by gpuq (%s): the %s waits in queue %s/%s until gpuq admits "
				      "it; leave spec.suspend true",
				      w->kind_name, w->name, r->controller_user, w->kind_name,
				      r->ns, old->queue ? old->queue : WEBHOOK_DEFAULT_QUEUE);
	} else if (old->admitted && !streq(old->queue, w->queue)) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": label %s cannot change after admission (was "
				      "\"%s\", now \"%s\"); delete and recreate the %s to move it",
				      w->kind_name, w->name, queue_key(w),
				      old->queue ? old->queue : "", w->queue ? w->queue : "",
				      w->kind_name);
	} else if (old->admitted && w->kind == WORKLOAD_KIND_JOB &&
		   w->podsets[0].parallelism > old->podsets[0].parallelism) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Job \"%s\": spec.parallelism cannot grow after admission "
				      "(was %lld, now %lld): gpuq reserved quota for %lld pods; "
				      "lower it or recreate the Job",
				      w->name, (long long)old->podsets[0].parallelism,
				      (long long)w->podsets[0].parallelism,
				      (long long)old->podsets[0].parallelism);
	} else if (old->admitted && edit_refused(w, old, w->integ->shape_admitted,
						 w->integ->count_admitted, why, sizeof(why))) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s while gpuq admits it: gpuq reserved quota for "
				      "what it asked when admitted; undo the change, or delete and "
				      "recreate the %s to queue it anew",
				      w->kind_name, w->name, why, w->kind_name);
	} else if (!old->admitted && edit_refused(w, old, w->integ->shape_queued,
						  WORKLOAD_EDIT_FOLLOW, why, sizeof(why))) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s while it waits in queue %s/%s; delete and "
				      "recreate the %s to change it",
				      w->kind_name, w->name, why, r->ns,
				      old->queue ? old->queue : WEBHOOK_DEFAULT_QUEUE,
				      w->kind_name);
	} else if (!old->admitted && (!same_request(old, w) || !streq(old->queue, w->queue))) {
		/* edited or moved while queued: judged anew, for its new queue as
		   if created there (a ClusterQueue that could never hold it refuses
		   it now, in the words of a CREATE); the controller follows (issue
		   31) */
		check_workload(r, w, false);
	}
}

/* What makes a Pod a member of its pod group may not change once it is
 * one (Kueue's rules): the group's name (a Pod cannot gain the gate after
 * its creation, nor leave the count of the group it was counted in), its
 * total count, and a retriable-in-group "false" (the group may already
 * have ended by it). Says why into why; false when nothing of it changed. */
static bool group_edit_refused(const workload_view_t *w, const workload_view_t *old, char *why,
			       size_t cap)
{
	const char *on = jv_member_str(old->annotations, WORKLOAD_ANNOT_POD_GROUP_COUNT);
	const char *nn = jv_member_str(w->annotations, WORKLOAD_ANNOT_POD_GROUP_COUNT);
	const char *orr = jv_member_str(old->annotations, WORKLOAD_ANNOT_RETRIABLE);
	const char *nr = jv_member_str(w->annotations, WORKLOAD_ANNOT_RETRIABLE);

	if (!streq(old->pod_group, w->pod_group))
		snprintf(why, cap,
			 "label %s is set when the Pod is created, never after (was "
			 "\"%s\", now \"%s\")",
			 WORKLOAD_LABEL_POD_GROUP, old->pod_group ? old->pod_group : "",
			 w->pod_group ? w->pod_group : "");
	else if (w->pod_group && !streq(on, nn))
		snprintf(why, cap, "annotation %s cannot change (was \"%s\", now \"%s\")",
			 WORKLOAD_ANNOT_POD_GROUP_COUNT, on ? on : "", nn ? nn : "");
	else if (w->pod_group && streq(orr, "false") && !streq(nr, "false"))
		snprintf(why, cap,
			 "annotation %s cannot change from \"false\": a group that is "
			 "not retriable stays so",
			 WORKLOAD_ANNOT_RETRIABLE);
	else
		return false;
	return true;
}

static void validate_update_pod(webhook_review_t *r, workload_view_t *w, const workload_view_t *old)
{
	bool old_gated = workload_pod_gated(old->podsets[0].pod_spec);
	char why[2 * WORKLOAD_STR_MAX + 128];

	if (group_edit_refused(w, old, why, sizeof(why))) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": %s; delete and recreate the Pod to change it",
				      w->name, why);
	} else if (old_gated && !workload_pod_gated(w->podsets[0].pod_spec)) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": scheduling gate %s may be removed only by gpuq "
				      "(%s), when queue %s/%s admits the Pod; keep the gate",
				      w->name, WEBHOOK_GATE, r->controller_user, r->ns,
				      old->queue ? old->queue : WEBHOOK_DEFAULT_QUEUE);
	} else if (w->admitted && !old->admitted) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": annotation %s may be set only by gpuq's "
				      "controller (%s); remove it: gpuq admits the Pod from queue "
				      "%s/%s",
				      w->name, WEBHOOK_ANNOT_ADMITTED, r->controller_user, r->ns,
				      old->queue ? old->queue : WEBHOOK_DEFAULT_QUEUE);
	} else if (!old_gated &&
		   !workload_topology_same(&old->podsets[0].topology, &w->podsets[0].topology)) {
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "Pod \"%s\": its topology annotations (podset-*-topology, "
		    "slice size, group) cannot change after admission; delete and "
		    "recreate the Pod to change them",
		    w->name);
	} else if (!old_gated && !streq(old->queue, w->queue)) {
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "Pod \"%s\": label %s cannot change after admission (was "
				      "\"%s\", now \"%s\"); delete and recreate the Pod to move it",
				      w->name, queue_key(w), old->queue ? old->queue : "",
				      w->queue ? w->queue : "");
	} else if (old_gated && !streq(old->queue, w->queue)) {
		/* moved while gated: judged anew, for its new queue as if created
		   there (as a Job is: a ClusterQueue that could never hold it
		   refuses it in the words of a CREATE); the controller follows */
		check_workload(r, w, false);
	}
}

/* Whether a set's Pods are numbered anew (a StatefulSet's spec.ordinals.start
 * moved: its controller makes Pods of other ordinals before it deletes the
 * ones admitted, which gpuq counts by ordinal): why, into why. */
static bool renumbered(const workload_view_t *w, const workload_view_t *old, char *why, size_t cap)
{
	if (w->first_ordinal == old->first_ordinal)
		return false;
	snprintf(why, cap,
		 "its Pods' first ordinal (spec.ordinals.start) changed from %lld to %lld",
		 (long long)old->first_ordinal, (long long)w->first_ordinal);
	return true;
}

/* A set (StatefulSet, LeaderWorkerSet, a Deployment) edited: while it has
 * replicas, its Pods wait or run under gpuq with the shape they were
 * admitted for, so what its row refuses (Kueue: the pod template, and an
 * LWS's size, immutable while managed) is refused, with the way out, and
 * so is a new first ordinal; at 0 replicas anything goes. What it asks for
 * anew (a scale-up) is judged whole. */
static void validate_update_set(webhook_review_t *r, workload_view_t *w, const workload_view_t *old)
{
	char why[WORKLOAD_FIELD_MAX + 256];
	int64_t replicas = set_replicas(old);

	if (replicas > 0 && (renumbered(w, old, why, sizeof(why)) ||
			     edit_refused(w, old, w->integ->shape_admitted,
					  w->integ->count_admitted, why, sizeof(why))))
		webhook_review_refuse(
		    r, WEBHOOK_DENY,
		    "%s \"%s\": %s while its %lld replicas wait or run under gpuq; scale it to 0 "
		    "first (spec.%s: 0) and change it then, or delete and recreate the %s",
		    w->kind_name, w->name, why, (long long)replicas, w->integ->replicas_member,
		    w->kind_name);
	else if (!same_request(old, w) || !streq(old->queue, w->queue))
		/* edited, or moved to another queue: judged anew, for its new
		   queue as a CREATE there would be (a move to a ClusterQueue
		   that could never hold it was taken: its next slice waited
		   for good) */
		check_workload(r, w, false);
}

/* A held parent's child changed by someone other than its parent's
 * controller: it may not start running nor claim an admission. */
static void validate_update_child(webhook_review_t *r, const workload_view_t *w,
				  const workload_view_t *old, const workload_integration_t *parent)
{
	if (replacement_changed(r, w, old))
		return;
	if (old->suspend && !w->suspend)
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": spec.suspend may change from true to false only "
				      "by the %s controller (%s) once gpuq admitted the %s; leave "
				      "spec.suspend true",
				      w->kind_name, w->name, parent->kind_name,
				      webhook_review_creator_first(r, parent), parent->kind_name);
	else if ((w->admitted && !old->admitted) || (w->tmpl_admitted && !old->tmpl_admitted))
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s may be set only by gpuq's controller (%s) and "
				      "copied by the %s controller",
				      w->kind_name, w->name, WEBHOOK_ANNOT_ADMITTED,
				      r->controller_user, parent->kind_name);
}

/* Whether the requester is the controller that makes w from a template gpuq
 * wrote (the Job controller for a Job's Pods, the JobSet controller for a
 * JobSet's Jobs): it copies gpuq's keys, as gpuq wrote them. */
static bool by_maker(const webhook_review_t *r, const workload_view_t *w)
{
	const jv_t *owner = workload_controller_owner(w->obj);

	return owner && webhook_review_creator(r, workload_integration(workload_kind_of(
						      jv_member_str(owner, "apiVersion"),
						      jv_member_str(owner, "kind"))));
}

/* One map of w judged by workload_keys_check (field: where it is, e.g.
 * "spec.template.metadata.annotations"); refuses the first breach. */
static bool keys_map(webhook_review_t *r, const workload_view_t *w, const jv_t *now,
		     const jv_t *was, bool label, const char *field)
{
	workload_key_breach_t b;

	if (!workload_keys_check(now, was, label, !r->old, &b))
		return true;
	if (b.why == WORKLOAD_KEY_BREACH_SIZE)
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s[%s] is %zu bytes, at most %zu; shorten it",
				      w->kind_name, w->name, field, b.key, b.len, b.max);
	else
		webhook_review_refuse(r, WEBHOOK_DENY,
				      "%s \"%s\": %s[%s] is gpuq's: it may be set, changed or "
				      "removed only by gpuq (%s); leave it as gpuq wrote it%s",
				      w->kind_name, w->name, field, b.key, r->controller_user,
				      r->old ? "" : " (remove it from the new object)");
	return false;
}

/* gpuq's keys are gpuq's (workload_key_owner, the one list): on CREATE and
 * UPDATE by anyone but gpuq and the controller that makes w from gpuq's
 * template, no gpuq.dev/ key gpuq owns of w's metadata or of a pod
 * template's may be set, changed or removed, and a tenant's input is
 * capped. What the controller reads back from them (the flavors a running
 * workload was released on, its placement before) is then gpuq's word. */
static void check_keys(webhook_review_t *r, const workload_view_t *w, const workload_view_t *old)
{
	char field[WORKLOAD_FIELD_MAX + 48];

	if (by_maker(r, w) ||
	    !keys_map(r, w, w->labels, old ? old->labels : NULL, true, "metadata.labels") ||
	    !keys_map(r, w, w->annotations, old ? old->annotations : NULL, false,
		      "metadata.annotations"))
		return;
	for (size_t p = 0; p < w->n_podsets; p++) {
		const workload_view_podset_t *ps = &w->podsets[p];
		const workload_view_podset_t *o = old ? podset_named(old, ps->name) : NULL;

		if (!ps->tmpl_ptr[0])
			continue; /* a Pod: its own metadata, judged above */
		if (!keys_map(r, w, ps->pod_labels, o ? o->pod_labels : NULL, true,
			      tmpl_field(ps, ".metadata.labels", field, sizeof(field))) ||
		    !keys_map(r, w, ps->pod_annotations, o ? o->pod_annotations : NULL, false,
			      tmpl_field(ps, ".metadata.annotations", field, sizeof(field))))
			return;
	}
}

int webhook_validate_run(webhook_review_t *r)
{
	const workload_config_t wcfg = webhook_workload_cfg(r->cfg);
	const workload_integration_t *parent;
	workload_view_t w, old;
	gpuq_diag_t diag;
	bool update = !strcmp(r->op, "UPDATE"), member, old_member;
	int rc;

	diag.msg[0] = '\0';
	if ((!update && strcmp(r->op, "CREATE") != 0) || !r->obj || *r->sub_resource)
		return GPUQ_OK;
	if (webhook_review_by_controller(r) || !policy_namespace_managed(r->policy, r->ns))
		return GPUQ_OK;
	workload_view_init(&old);
	rc = workload_view_decode(&w, r->policy, &wcfg, r->ns, r->kind, r->obj, &diag);
	if (!rc && update && r->old)
		rc = workload_view_decode(&old, r->policy, &wcfg, r->ns, r->kind, r->old, &diag);
	member = !rc && webhook_pod_group_member(r, &w);
	old_member = !rc && update && r->old && webhook_pod_group_member(r, &old);
	if (rc == GPUQ_EINVAL) {
		webhook_review_refuse(r, WEBHOOK_INVALID, "%s", diag.msg);
		rc = GPUQ_OK;
	} else if (!rc && (w.gpu || old.gpu) && (parent = webhook_child_parent(&w))) {
		/* a held parent's child (a JobSet's Job): its parent was judged */
		if (!update)
			validate_child(r, &w, parent);
		else if (!webhook_review_creator(r, parent))
			validate_update_child(r, &w, &old, parent);
	} else if (!rc && w.gpu && (!update || (r->old && !old.gpu)) &&
		   webhook_review_unwatched(r, &w)) {
		/* refused: a kind gpuq does not watch is never held (as /mutate) */
	} else if (!rc && w.gpu && w.kind != WORKLOAD_KIND_POD &&
		   w.integ->hold != WORKLOAD_HOLD_SUSPEND) {
		/* a set whose Pods are gated (or are each a workload): judged
		   whole when made and when what it asks for changes (a
		   scale-up); its Pods carry the marks */
		if (w.integ->hold == WORKLOAD_HOLD_NONE)
			w.pods = 1;
		if (update && r->old && old.gpu)
			validate_update_set(r, &w, &old);
		else
			check_workload(r, &w, false);
	} else if (!rc && ((w.gpu && (!update || (r->old && !old.gpu))) || (member && !update))) {
		/* A workload that asks for a GPU only from this UPDATE on (a
		 * suspended Job's resources, or a claim, edited) is judged as if
		 * created now: otherwise a CPU-only Job created with
		 * gpuq.dev/admitted could gain GPUs and skip the queue. A pod
		 * group's member is judged whatever it asks. */
		validate_create(r, &w);
	} else if (!rc && update && r->old && (w.gpu || old.gpu || member || old_member)) {
		if (w.integ->hold == WORKLOAD_HOLD_SUSPEND)
			validate_update_parent(r, &w, &old);
		else
			validate_update_pod(r, &w, &old);
	}
	if (!rc && r->verdict == WEBHOOK_ALLOW && (w.gpu || old.gpu || member || old_member))
		check_keys(r, &w, update && r->old ? &old : NULL);
	workload_view_deinit(&w);
	workload_view_deinit(&old);
	return rc;
}

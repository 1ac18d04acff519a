/* workload/resolve.c: what the policy makes of a decoded workload: each pod
 * set's effective per-pod request (a template gets the namespace's
 * LimitRange defaults its Pods will get, as /validate judges it; a Pod is
 * taken as it is, LimitRanger ran when it was created), the GPUs of its DRA
 * claims, and the priority the Priority admission plugin would give. No JSON
 * is read: a policy change re-resolves every cached workload from what
 * workload_decode kept. */
#include <stdlib.h>
#include <string.h>

#include "workload/internal.h"

/* The containers and overhead of ps as quota sees them (containers
 * allocated: the caller frees pod->containers). */
static int pod_of(const workload_podset_t *ps, quota_pod_t *pod)
{
	int rc = GPUQ_OK;

	memset(pod, 0, sizeof(*pod));
	if (ps->n_containers) {
		pod->containers = calloc(ps->n_containers, sizeof(*pod->containers));
		if (!pod->containers)
			return GPUQ_ENOMEM;
	}
	pod->n_containers = ps->n_containers;
	for (size_t i = 0; !rc && i < ps->n_containers; i++) {
		const workload_container_t *c = &ps->containers[i];
		quota_container_t *qc = &pod->containers[i];

		gpuq_strlcpy(qc->name, c->name, sizeof(qc->name));
		qc->kind = c->kind;
		for (size_t k = 0; !rc && k < c->n_requests; k++) {
			const quota_qty_t q = workload_qty(&c->requests[k]);

			rc = quota_reslist_set(&qc->requests, c->requests[k].name, &q);
		}
		for (size_t k = 0; !rc && k < c->n_limits; k++) {
			const quota_qty_t q = workload_qty(&c->limits[k]);

			rc = quota_reslist_set(&qc->limits, c->limits[k].name, &q);
		}
	}
	for (size_t k = 0; !rc && k < ps->n_overhead; k++) {
		const quota_qty_t q = workload_qty(&ps->overhead[k]);

		rc = quota_reslist_set(&pod->overhead, ps->overhead[k].name, &q);
	}
	return rc;
}

/* LimitRange defaults (and a limit alone becoming the request) in place. */
static int defaults(quota_pod_t *pod, const policy_t *policy, const char *ns)
{
	const policy_namespace_t *pns = policy ? policy_namespace_find(policy, ns) : NULL;
	const quota_limitrange_t *const *lrs = pns ? pns->limitranges : NULL;
	size_t n_lrs = pns ? pns->n_limitranges : 0;
	int rc = GPUQ_OK;

	for (size_t i = 0; !rc && i < pod->n_containers; i++) {
		quota_container_t *c = &pod->containers[i];
		quota_reslist_t add_req, add_lim;

		rc = quota_limitrange_default(lrs, n_lrs, c, &add_req, &add_lim);
		for (size_t k = 0; !rc && k < add_req.n; k++)
			rc = quota_reslist_set(&c->requests, add_req.items[k].name,
					       &add_req.items[k].qty);
		for (size_t k = 0; !rc && k < add_lim.n; k++)
			rc = quota_reslist_set(&c->limits, add_lim.items[k].name,
					       &add_lim.items[k].qty);
	}
	return rc;
}

/* GPUs of ps's DRA claims, through the namespace's claim templates. */
static int64_t dra_gpus(const workload_podset_t *ps, const policy_t *policy, const char *ns)
{
	int64_t n = 0;

	for (size_t i = 0; policy && i < ps->n_claim_templates; i++) {
		const policy_claimtemplate_t *t =
		    policy_claimtemplate_find(policy, ns, ps->claim_templates[i]);

		n += t ? workload_template_gpus(t) : 0;
	}
	return n;
}

/* One pod's effective request of pod set i into one[i]: a template's
 * with the LimitRange defaults and the RuntimeClass overhead its Pods will
 * get (a Pod has both since its creation). */
static int podset_request(const workload_t *w, size_t i, const policy_t *policy,
			  quota_reslist_t *one, int64_t *dra, gpuq_diag_t *why)
{
	const workload_podset_t *ps = &w->podsets[i];
	quota_pod_t pod;
	quota_qty_t g;
	int rc = pod_of(ps, &pod);

	if (!rc && w->kind != WORKLOAD_KIND_POD)
		rc = defaults(&pod, policy, w->namespace_);
	if (!rc && w->kind != WORKLOAD_KIND_POD)
		rc = workload_runtime_overhead(policy, ps->runtime_class, &pod.overhead, why);
	if (!rc)
		rc = quota_pod_requests(&pod, one);
	free(pod.containers);
	*dra = dra_gpus(ps, policy, w->namespace_);
	g = quota_qty_from_units(*dra, QUOTA_QTY_DECIMAL_SI);
	if (!rc && *dra)
		rc = quota_reslist_add(one, "nvidia.com/gpu", &g);
	return rc;
}

/* The priority as the Priority admission plugin gives it to the Pods, from
 * the PriorityClass only: the first pod set that names a class decides, else
 * the global default class, else 0. A pod spec's own `priority` integer is
 * never read: in a template it is the tenant's to write (the apiserver
 * refuses the Pods it would make, but a queue that trusted it would have
 * preempted for it already); in a Pod the Priority plugin set it from the
 * class anyway. */
static void priority(workload_t *w, const policy_t *policy, const char **cls)
{
	const policy_priorityclass_t *pc = NULL;

	w->priority = 0;
	w->priority_class_unknown = false;
	*cls = NULL;
	for (size_t i = 0; i < w->n_podsets; i++) {
		const workload_podset_t *ps = &w->podsets[i];

		if (!ps->priority_class)
			continue;
		*cls = ps->priority_class;
		pc = policy ? policy_priorityclass_find(policy, ps->priority_class) : NULL;
		w->priority_class_unknown = !pc;
		w->priority = pc ? pc->value : 0;
		return;
	}
	if (policy && (pc = policy_priorityclass_default(policy))) {
		*cls = pc->name;
		w->priority = pc->value;
	}
}

/* Pod set i's request refused (rc from podset_request, why its words):
 * GPUQ_ENOMEM as it is, else GPUQ_EINVAL with diag naming the pod set. */
static int refuse(const workload_t *w, size_t i, int rc, const gpuq_diag_t *why, gpuq_diag_t *diag)
{
	jv_fields_t f = {.kind_name = w->integ->kind_name, .name = w->name, .diag = diag};

	if (rc == GPUQ_ENOMEM)
		return rc;
	if (rc == GPUQ_ENOTFOUND || rc == GPUQ_EDENIED) /* the RuntimeClass plugin's */
		return jv_fields_refuse(&f, w->podsets[i].spec_field,
					"%s: its Pods would be refused, so it waits outside the "
					"queue until they would not",
					why->msg);
	return jv_fields_refuse(&f, w->podsets[i].spec_field,
				"too many resources (at most %d) or a request above 2^63-1 once "
				"containers and LimitRange defaults are added",
				QUOTA_RESLIST_MAX);
}

int workload_resolve(workload_t *w, const policy_t *policy, gpuq_diag_t *diag)
{
	quota_reslist_t *one = calloc(w->n_podsets + 1, sizeof(*one));
	int64_t dra[WORKLOAD_PODSETS_MAX] = {0};
	size_t bytes = 0, n = 0;
	const char *cls;
	char *blk, *names;
	int rc = GPUQ_OK;

	if (!one)
		return GPUQ_ENOMEM;
	for (size_t i = 0; !rc && i < w->n_podsets; i++) {
		gpuq_diag_t why = {""};

		rc = podset_request(w, i, policy, &one[i], &dra[i], &why);
		if (rc) {
			free(one);
			return refuse(w, i, rc, &why, diag);
		}
		for (size_t k = 0; k < one[i].n; k++)
			if (!workload_known_resource(one[i].items[k].name))
				bytes += strlen(one[i].items[k].name) + 1;
		n += one[i].n;
	}
	priority(w, policy, &cls);
	bytes += cls ? strlen(cls) + 1 : 0;
	/* the first resolve uses the room left in the workload's block; a
	 * later one (a policy change) allocates its own */
	blk = workload_tail_alloc(w, n * sizeof(workload_request_t) + bytes + 1);
	if (!blk) {
		blk = malloc(n * sizeof(workload_request_t) + bytes + 1);
		if (!blk) {
			free(one);
			return GPUQ_ENOMEM;
		}
		free(w->resolved);
		w->resolved = blk;
	}
	names = blk + n * sizeof(workload_request_t);
	w->gpu = w->gpu_said; /* a TrainJob's pod sets are its JobSet's */
	for (size_t i = 0, at = 0; i < w->n_podsets; i++) {
		workload_podset_t *ps = &w->podsets[i];

		ps->requests = (workload_request_t *)blk + at;
		ps->n_requests = (uint16_t)one[i].n; /* <= QUOTA_RESLIST_MAX */
		ps->dra_gpus = dra[i];
		ps->gpu = ps->gpu_named || dra[i] > 0;
		w->gpu = w->gpu || ps->gpu;
		for (size_t k = 0; k < one[i].n; k++, at++) {
			workload_request_t *r = &ps->requests[k];
			size_t len = strlen(one[i].items[k].name) + 1;

			r->name = workload_known_resource(one[i].items[k].name);
			if (!r->name) {
				memcpy(names, one[i].items[k].name, len);
				r->name = names;
				names += len;
			}
			r->qty = one[i].items[k].qty;
			r->amount = quota_qty_amount(r->name, &r->qty);
		}
	}
	w->priority_class = NULL;
	if (cls) {
		memcpy(names, cls, strlen(cls) + 1);
		w->priority_class = names;
	}
	free(one);
	return GPUQ_OK;
}

void workload_quota_scope(const workload_t *w, quota_pod_scope_t *out)
{
	const workload_podset_t *ps = w->n_podsets ? &w->podsets[0] : NULL;

	memset(out, 0, sizeof(*out));
	out->priority_class = w->priority_class;
	out->best_effort = true;
	if (!ps)
		return;
	out->terminating = ps->terminating;
	out->cross_ns_affinity = ps->cross_ns_affinity;
	for (size_t i = 0; i < ps->n_requests; i++)
		if (!strcmp(ps->requests[i].name, "cpu") || !strcmp(ps->requests[i].name, "memory"))
			out->best_effort = false;
}

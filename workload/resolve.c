/* workload/resolve.c: what the policy makes of a decoded workload: each pod
 * set's effective per-pod request (workload_pod_default and
 * workload_pod_request, runtime.c: the rule /validate judges by), the GPUs
 * of its DRA claims, and the priority the Priority admission plugin would give. No JSON
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

/* One pod's effective request of pod set i into one[i], with the
 * LimitRange defaults and the RuntimeClass overhead its Pods will get. */
static int podset_request(const workload_t *w, size_t i, const policy_t *policy,
			  quota_reslist_t *one, int64_t *dra, gpuq_diag_t *why)
{
	const workload_podset_t *ps = &w->podsets[i];
	quota_reslist_t requests;
	quota_pod_t pod;
	int rc = pod_of(ps, &pod);

	*dra = 0;
	for (size_t k = 0; k < ps->n_claim_templates; k++)
		*dra += workload_claim_gpus(policy, w->namespace_, ps->claim_templates[k]);
	if (!rc && w->kind != WORKLOAD_KIND_POD) /* the cached Pod is taken as it is */
		rc =
		    workload_pod_default(&pod, policy, w->namespace_, true, ps->runtime_class, why);
	if (!rc)
		rc = workload_pod_request(&pod, *dra, &requests, one);
	free(pod.containers);
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

/* workload/runtime.c: what one pod of a pod set will really ask, the one
 * rule the admission rules' view (view.c) and the controller's resolve
 * (resolve.c) both apply: a template's containers get the LimitRange
 * defaults (LimitRanger's), its pod the RuntimeClass's overhead (the
 * RuntimeClass admission plugin's: a Pod naming a RuntimeClass gets the
 * class's overhead.podFixed as spec.overhead, and is refused when the class
 * does not exist or its own overhead is not the class's), and the request
 * adds the GPUs of its DRA claims. A Pod had both plugins at its creation:
 * the controller takes its cached Pod as it is; /validate gives a Pod's
 * containers the LimitRange defaults again, which changes nothing
 * LimitRanger gave (a default fills only what is missing). A leaf: it calls no other file of the
 * module. */
#include "workload/internal.h"

int workload_runtime_overhead(const policy_t *policy, const char *runtime_class,
			      quota_reslist_t *overhead, gpuq_diag_t *diag)
{
	const policy_runtimeclass_t *rt;

	if (!policy)
		return GPUQ_OK;
	rt = runtime_class ? policy_runtimeclass_find(policy, runtime_class) : NULL;
	if (runtime_class && !rt)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "pod rejected: RuntimeClass \"%s\" not found", runtime_class);
	if (!rt || !rt->overhead.n)
		return overhead->n ? gpuq_diag_set(diag, GPUQ_EDENIED,
						   "pod rejected: Pod Overhead set without "
						   "corresponding RuntimeClass defined Overhead")
				   : GPUQ_OK;
	if (!overhead->n) {
		quota_reslist_copy(overhead, &rt->overhead);
		return GPUQ_OK;
	}
	return quota_reslist_same(overhead, &rt->overhead)
		   ? GPUQ_OK
		   : gpuq_diag_set(diag, GPUQ_EDENIED,
				   "pod rejected: Pod's Overhead doesn't match RuntimeClass's "
				   "defined Overhead");
}

/* LimitRange defaults (and a limit alone becoming the request) in place. */
static int limitrange_defaults(quota_pod_t *pod, const policy_t *policy, const char *ns)
{
	const policy_namespace_t *pns = policy ? policy_namespace_find(policy, ns) : NULL;
	const quota_limitrange_t *const *lrs = pns ? pns->limitranges : NULL;
	size_t n_lrs = pns ? pns->n_limitranges : 0;
	int rc = GPUQ_OK;

	for (size_t i = 0; !rc && i < pod->n_containers; i++) {
		quota_container_t *c = &pod->containers[i];
		quota_reslist_t add_req, add_lim;

		/* Also without ranges: a limit alone becomes the request. */
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

int workload_pod_default(quota_pod_t *pod, const policy_t *policy, const char *ns, bool overhead,
			 const char *runtime_class, gpuq_diag_t *diag)
{
	int rc = limitrange_defaults(pod, policy, ns);

	if (rc || !overhead)
		return rc;
	return workload_runtime_overhead(policy, runtime_class, &pod->overhead, diag);
}

int workload_pod_one(const quota_reslist_t *requests, int64_t dra_gpus, quota_reslist_t *one)
{
	quota_qty_t g = quota_qty_from_units(dra_gpus, QUOTA_QTY_DECIMAL_SI);

	quota_reslist_copy(one, requests);
	return dra_gpus ? quota_reslist_add(one, "nvidia.com/gpu", &g) : GPUQ_OK;
}

int workload_pod_request(const quota_pod_t *pod, int64_t dra_gpus, quota_reslist_t *requests,
			 quota_reslist_t *one)
{
	int rc = quota_pod_requests(pod, requests);

	return rc ? rc : workload_pod_one(requests, dra_gpus, one);
}

int64_t workload_claim_gpus(const policy_t *policy, const char *ns, const char *template_name)
{
	const policy_claimtemplate_t *t =
	    policy && template_name ? policy_claimtemplate_find(policy, ns, template_name) : NULL;
	int64_t n = 0;

	for (size_t i = 0; t && i < t->n_requests; i++) {
		const policy_device_request_t *rq = &t->requests[i];

		for (size_t c = 0; c < rq->n_choices; c++) {
			const policy_device_choice_t *ch = &rq->choices[c];

			if (workload_gpu_device_class(ch->device_class)) {
				n += ch->mode == POLICY_ALLOC_ALL ? 1 : ch->count;
				break;
			}
		}
	}
	return n;
}

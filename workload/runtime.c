/* workload/runtime.c: the one rule for a pod's overhead, the RuntimeClass
 * admission plugin's: a Pod naming a RuntimeClass gets the class's
 * overhead.podFixed as spec.overhead, and is refused when the class does
 * not exist or its own overhead is not the class's. The admission rules'
 * view (view.c) and the controller's resolve (resolve.c) both apply it to
 * a template, so both count what its Pods will really ask. A leaf: it
 * calls no other file of the module. */
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
		*overhead = rt->overhead;
		return GPUQ_OK;
	}
	return quota_reslist_same(overhead, &rt->overhead)
		   ? GPUQ_OK
		   : gpuq_diag_set(diag, GPUQ_EDENIED,
				   "pod rejected: Pod's Overhead doesn't match RuntimeClass's "
				   "defined Overhead");
}

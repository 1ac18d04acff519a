/* workload/gpu.c: which resources and DRA device classes are GPUs. The one
 * place gpuq answers it (admission, the controller's status, the views). */
#include <string.h>

#include "workload/internal.h"

bool workload_gpu_resource(const workload_config_t *cfg, const char *name)
{
	const char *vendor = "nvidia.com/";

	if (!name)
		return false;
	/* every resource of every container asks: "cpu" is told at its first byte */
	if (name[0] == 'n' && !strncmp(name, vendor, 11) &&
	    (!strcmp(name + 11, "gpu") || !strcmp(name + 11, "gpu.shared") ||
	     !strncmp(name + 11, "mig-", 4)))
		return true;
	for (size_t i = 0; cfg && i < cfg->n_gpu_resources; i++)
		if (cfg->gpu_resources[i] && !strcmp(name, cfg->gpu_resources[i]))
			return true;
	return false;
}

bool workload_gpu_device_class(const char *device_class)
{
	return device_class &&
	       (!strcmp(device_class, "gpu.nvidia.com") || !strcmp(device_class, "mig.nvidia.com"));
}

int64_t workload_podset_gpus(const workload_config_t *cfg, const workload_podset_t *ps)
{
	int64_t n = 0;

	for (size_t i = 0; ps->requests && i < ps->n_requests; i++)
		if (workload_gpu_resource(cfg, ps->requests[i].name))
			n += ps->requests[i].amount;
	return n;
}

int64_t workload_reslist_gpus(const workload_config_t *cfg, const quota_reslist_t *one)
{
	int64_t n = 0;

	for (size_t i = 0; i < one->n; i++)
		if (workload_gpu_resource(cfg, one->items[i].name))
			n += quota_qty_amount(one->items[i].name, &one->items[i].qty);
	return n;
}

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

/* Fuzz target for idle_prom_parse and idle_acct_observe: any body either
 * parses, each sample's strings NUL-terminated within their caps and its
 * line within the body, or is refused with a message naming a line (or the
 * body's size); the samples then go through the accumulator twice (the
 * second time 1 s later), whose totals must stay non-negative with idle
 * time never above allocated time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idle/idle.h"

static void check_sample(const idle_sample_t *s, size_t size)
{
	if (!memchr(s->namespace_, '\0', sizeof(s->namespace_)) ||
	    !memchr(s->pod, '\0', sizeof(s->pod)) ||
	    !memchr(s->container, '\0', sizeof(s->container)) ||
	    !memchr(s->local_queue, '\0', sizeof(s->local_queue)) ||
	    !memchr(s->device, '\0', sizeof(s->device)))
		abort();
	if (s->line < 1 || s->line > size + 1)
		abort();
}

static void account(const idle_sample_t *s, size_t n)
{
	idle_acct_t *a;
	idle_tenant_view_t v;

	if (idle_acct_create(NULL, &a))
		return;
	if (idle_acct_observe(a, s, n, 0, NULL) == GPUQ_OK &&
	    idle_acct_observe(a, s, n, 1000, NULL) == GPUQ_OK)
		for (size_t i = 0; idle_acct_tenant(a, i, &v) == GPUQ_OK; i++)
			if (v.allocated_gpu_ms < 0 || v.idle_gpu_ms < 0 ||
			    v.idle_gpu_ms > v.allocated_gpu_ms ||
			    v.allocated_gpu_ms > 1000 * (int64_t)n)
				abort();
	idle_acct_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	idle_sample_t *s;
	size_t n;
	gpuq_diag_t diag = {{0}};
	int rc = idle_prom_parse((const char *)data, size, IDLE_METRIC_DEFAULT, 64, &s, &n, &diag);

	if (rc) {
		if ((rc != GPUQ_EINVAL && rc != GPUQ_ELIMIT && rc != GPUQ_ENOMEM) || s || n)
			abort();
		if (rc != GPUQ_ENOMEM && strncmp(diag.msg, "line ", 5) &&
		    strncmp(diag.msg, "body ", 5))
			abort();
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		check_sample(&s[i], size);
	account(s, n);
	free(s);
	return 0;
}

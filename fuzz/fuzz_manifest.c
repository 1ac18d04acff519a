/* Fuzz target for policy manifests: parse the input (YAML, or JSON when it
 * starts with 'J', which is dropped) into a fresh policy, finish it, and run
 * the lookups over whatever loaded; then again as the controller builds it
 * (leave_out_broken), where every LocalQueue left in must reach a
 * ClusterQueue left in, and every object left out be found by name. Any
 * input must end in GPUQ_OK or a clean error, never a crash, leak or
 * undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static void exercise(const policy_t *p)
{
	static const char *const names[] = {"team-a", "default", "x", ""};

	for (size_t i = 0; i < policy_cq_count(p); i++) {
		const policy_cq_t *cq = policy_cq_at(p, i);

		for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++)
			(void)policy_cq_selects(p, cq, names[n]);
		for (size_t g = 0; g < cq->n_groups; g++)
			for (size_t f = 0; f < cq->groups[g].n_flavors; f++) {
				const policy_flavor_quota_t *fq = &cq->groups[g].flavors[f];
				int64_t fit;

				for (size_t r = 0; r < fq->n_resources; r++)
					(void)policy_cq_max_fit(cq, fq->name,
								fq->resources[r].resource, &fit);
			}
	}
	for (size_t i = 0; i < policy_namespace_count(p); i++) {
		const policy_namespace_t *ns = policy_namespace_at(p, i);

		(void)policy_namespace_managed(p, ns->name);
		(void)policy_lq_find(p, ns->name, "default");
	}
	for (size_t i = 0; i < policy_flavor_count(p); i++) {
		const policy_flavor_t *f = policy_flavor_at(p, i);

		for (size_t t = 0; t < f->n_taints; t++)
			for (size_t o = 0; o < f->n_tolerations; o++)
				(void)policy_toleration_tolerates(&f->tolerations[o],
								  &f->taints[t]);
	}
	(void)policy_namespace_managed(p, "not-declared");
	(void)policy_priorityclass_default(p);
}

/* What a policy built with leave_out_broken promises: nothing left in
 * names an object left out. Aborts (a broken invariant) otherwise. */
static void check_left_out(const policy_t *p)
{
	for (size_t i = 0; i < policy_lq_count(p); i++) {
		const policy_lq_t *lq = policy_lq_at(p, i);

		if (!lq->cq || policy_cq_find(p, lq->cq_name) != lq->cq) {
			fprintf(stderr, "LocalQueue %s/%s left in without its ClusterQueue\n",
				lq->namespace_, lq->name);
			abort();
		}
	}
	for (size_t i = 0; i < policy_leftout_count(p); i++) {
		const policy_leftout_t *l = policy_leftout_at(p, i);

		if (!policy_leftout_find(p, l->kind, l->namespace_, l->name) || !l->reason[0]) {
			fprintf(stderr, "%s %s not found as left out\n", l->kind, l->name);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const policy_opts_t leave_out = {.leave_out_broken = true};
	const char *name = "fuzz.yaml";
	policy_t *p;
	gpuq_diag_t diag;

	if (size > 0 && data[0] == 'J') {
		name = "fuzz.json";
		data++;
		size--;
	}
	if (policy_create(NULL, &p))
		return 0;
	if (policy_add_manifest(p, name, (const char *)data, size, &diag) == GPUQ_OK &&
	    policy_finish(p, &diag) == GPUQ_OK)
		exercise(p);
	policy_unref(p);
	if (policy_create(&leave_out, &p))
		return 0;
	if (policy_add_manifest(p, name, (const char *)data, size, &diag) == GPUQ_OK &&
	    policy_finish(p, &diag) == GPUQ_OK) {
		check_left_out(p);
		exercise(p);
	}
	policy_unref(p);
	return 0;
}

/* unit/policy_fixtures.h: what the policy tests share (test_policy.c,
 * test_policy_refusals.c). Header-only, included by test files only. */
#ifndef GPUQ_UNIT_POLICY_FIXTURES_H
#define GPUQ_UNIT_POLICY_FIXTURES_H

#include <string.h>

#include "policy/policy.h"

/* Build a finished policy from one manifest named "t.yaml". */
static inline int load_str(const char *text, const policy_opts_t *opts, policy_t **out,
			   gpuq_diag_t *d)
{
	policy_t *p;
	int rc = policy_create(opts, &p);

	memset(d, 0, sizeof(*d));
	*out = NULL;
	if (rc)
		return rc;
	rc = policy_add_manifest(p, "t.yaml", text, strlen(text), d);
	if (rc == GPUQ_OK)
		rc = policy_finish(p, d);
	if (rc) {
		policy_unref(p);
		return rc;
	}
	*out = p;
	return GPUQ_OK;
}

#endif

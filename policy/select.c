/*
 * Label selectors and taint tolerations, as Kubernetes evaluates them. Pure
 * functions over the public types.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static int key_cmp(const void *key, const void *item)
{
	return strcmp(key, ((const policy_label_t *)item)->key);
}

const char *policy_labels_get(const policy_labels_t *labels, const char *key)
{
	const policy_label_t *l;

	if (!labels->n)
		return NULL;
	l = bsearch(key, labels->items, labels->n, sizeof(*labels->items), key_cmp);
	return l ? l->value : NULL;
}

static bool one_of(const char *v, const policy_sel_req_t *req)
{
	for (size_t i = 0; i < req->n_values; i++)
		if (!strcmp(v, req->values[i]))
			return true;
	return false;
}

static bool req_holds(const policy_sel_req_t *req, const policy_labels_t *labels)
{
	const char *v = policy_labels_get(labels, req->key);

	switch (req->op) {
	case POLICY_SEL_IN:
		return v && one_of(v, req);
	case POLICY_SEL_NOT_IN:
		return !v || !one_of(v, req);
	case POLICY_SEL_EXISTS:
		return v != NULL;
	default:
		return v == NULL;
	}
}

bool policy_selector_matches(const policy_selector_t *sel, const policy_labels_t *labels)
{
	if (!sel->present)
		return false;
	for (size_t i = 0; i < sel->n_reqs; i++)
		if (!req_holds(&sel->reqs[i], labels))
			return false;
	return true;
}

const char *const POLICY_EFFECT_NAMES[] = {
    [POLICY_EFFECT_ANY] = "",
    [POLICY_EFFECT_NO_SCHEDULE] = "NoSchedule",
    [POLICY_EFFECT_PREFER_NO_SCHEDULE] = "PreferNoSchedule",
    [POLICY_EFFECT_NO_EXECUTE] = "NoExecute",
    [POLICY_EFFECT_NO_EXECUTE + 1] = NULL,
};

int policy_effect_named(const char *name, policy_effect_t *out)
{
	if (!name)
		name = "";
	for (int e = POLICY_EFFECT_ANY; POLICY_EFFECT_NAMES[e]; e++)
		if (!strcmp(name, POLICY_EFFECT_NAMES[e])) {
			*out = (policy_effect_t)e;
			return GPUQ_OK;
		}
	return GPUQ_EINVAL;
}

bool policy_toleration_tolerates(const policy_toleration_t *tol, const policy_taint_t *taint)
{
	if (tol->effect != POLICY_EFFECT_ANY && tol->effect != taint->effect)
		return false;
	if (*tol->key && strcmp(tol->key, taint->key) != 0)
		return false;
	if (tol->exists)
		return true;
	return !strcmp(tol->value, taint->value);
}

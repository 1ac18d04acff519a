/* engine/apply.c: a policy change taken by the live core in place when its
 * shape allows (engine_core_apply), so that a quota edit costs the changed
 * ClusterQueues, not every workload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* NULL and "" are the same absent name. */
static bool name_eq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static bool labels_eq(const policy_labels_t *a, const policy_labels_t *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!name_eq(a->items[i].key, b->items[i].key) ||
		    !name_eq(a->items[i].value, b->items[i].value))
			return false;
	return true;
}

/* What the core keeps of a flavor: its node labels, taints and
 * tolerations (the price is economics, re-applied in place). */
static bool flavor_eq(const policy_flavor_t *a, const policy_flavor_t *b)
{
	if (!name_eq(a->name, b->name) || !labels_eq(&a->node_labels, &b->node_labels) ||
	    a->n_taints != b->n_taints || a->n_tolerations != b->n_tolerations)
		return false;
	for (size_t i = 0; i < a->n_taints; i++)
		if (!name_eq(a->taints[i].key, b->taints[i].key) ||
		    !name_eq(a->taints[i].value, b->taints[i].value) ||
		    a->taints[i].effect != b->taints[i].effect)
			return false;
	for (size_t i = 0; i < a->n_tolerations; i++) {
		const policy_toleration_t *x = &a->tolerations[i], *y = &b->tolerations[i];
		if (!name_eq(x->key, y->key) || x->exists != y->exists ||
		    !name_eq(x->value, y->value) || x->effect != y->effect ||
		    x->has_seconds != y->has_seconds || x->seconds != y->seconds)
			return false;
	}
	return true;
}

static bool quota_eq(const policy_res_quota_t *a, const policy_res_quota_t *b)
{
	queue_quota_spec_t x = engine_quota_of(a), y = engine_quota_of(b);

	return x.nominal == y.nominal && x.borrowing_limit == y.borrowing_limit &&
	       x.lending_limit == y.lending_limit;
}

/* Same resource groups: covered resources and flavors in the same order;
 * with quotas, the same quotas too. */
static bool groups_eq(const policy_resource_group_t *a, size_t na, const policy_resource_group_t *b,
		      size_t nb, bool quotas)
{
	if (na != nb)
		return false;
	for (size_t g = 0; g < na; g++) {
		if (a[g].n_covered != b[g].n_covered || a[g].n_flavors != b[g].n_flavors)
			return false;
		for (size_t r = 0; r < a[g].n_covered; r++)
			if (!name_eq(a[g].covered[r], b[g].covered[r]))
				return false;
		for (size_t f = 0; f < a[g].n_flavors; f++) {
			const policy_flavor_quota_t *x = &a[g].flavors[f], *y = &b[g].flavors[f];
			if (!name_eq(x->name, y->name) || x->n_resources != y->n_resources)
				return false;
			for (size_t r = 0; r < x->n_resources; r++)
				if (!name_eq(x->resources[r].resource, y->resources[r].resource) ||
				    (quotas && !quota_eq(&x->resources[r], &y->resources[r])))
					return false;
		}
	}
	return true;
}

static bool cohort_eq(const policy_cohort_t *a, const policy_cohort_t *b)
{
	return name_eq(a->name, b->name) && name_eq(a->parent_name, b->parent_name) &&
	       a->fair_weight_milli == b->fair_weight_milli &&
	       groups_eq(a->groups, a->n_groups, b->groups, b->n_groups, true);
}

static bool lq_eq(const policy_lq_t *a, const policy_lq_t *b)
{
	return name_eq(a->namespace_, b->namespace_) && name_eq(a->name, b->name) &&
	       name_eq(a->cq_name, b->cq_name) && a->fair_weight_milli == b->fair_weight_milli;
}

/* Why newp's objects cannot be taken by a core built from oldp in place
 * (into why, cap bytes), or false when they can: the same flavors (as the
 * core keeps them), the same cohorts with the same quotas and weights, the
 * same ClusterQueues in the same order under the same cohorts with resource
 * groups of the same shape, the same LocalQueues. */
static bool structural(const policy_t *oldp, const policy_t *newp, char *why, size_t cap)
{
	if (policy_flavor_count(oldp) != policy_flavor_count(newp) ||
	    policy_cohort_count(oldp) != policy_cohort_count(newp) ||
	    policy_cq_count(oldp) != policy_cq_count(newp) ||
	    policy_lq_count(oldp) != policy_lq_count(newp)) {
		snprintf(why, cap, "objects added or removed");
		return true;
	}
	for (size_t i = 0; i < policy_flavor_count(newp); i++)
		if (!flavor_eq(policy_flavor_at(oldp, i), policy_flavor_at(newp, i))) {
			snprintf(why, cap, "ResourceFlavor %s changed",
				 policy_flavor_at(newp, i)->name);
			return true;
		}
	for (size_t i = 0; i < policy_cohort_count(newp); i++)
		if (!cohort_eq(policy_cohort_at(oldp, i), policy_cohort_at(newp, i))) {
			snprintf(why, cap, "Cohort %s changed", policy_cohort_at(newp, i)->name);
			return true;
		}
	for (size_t i = 0; i < policy_cq_count(newp); i++) {
		const policy_cq_t *a = policy_cq_at(oldp, i), *b = policy_cq_at(newp, i);
		if (!name_eq(a->name, b->name) || !name_eq(a->cohort_name, b->cohort_name) ||
		    !groups_eq(a->groups, a->n_groups, b->groups, b->n_groups, false)) {
			snprintf(why, cap, "ClusterQueue %s changed its cohort or resource groups",
				 b->name);
			return true;
		}
	}
	for (size_t i = 0; i < policy_lq_count(newp); i++)
		if (!lq_eq(policy_lq_at(oldp, i), policy_lq_at(newp, i))) {
			snprintf(why, cap, "LocalQueue %s/%s changed",
				 policy_lq_at(newp, i)->namespace_, policy_lq_at(newp, i)->name);
			return true;
		}
	return false;
}

/* The two specs say the same (their names and group shapes are known
 * equal): every scalar of the spec, every quota. A field added to
 * queue_cq_spec_t must be compared here: the assertion below is the
 * reminder. */
_Static_assert(sizeof(queue_cq_spec_t) == 136, "compare the new field in cq_spec_eq");
static bool cq_spec_eq(const engine_cq_spec_t *a, const engine_cq_spec_t *b)
{
	const queue_cq_spec_t *x = &a->spec, *y = &b->spec;

	if (x->strategy != y->strategy || x->within != y->within || x->reclaim != y->reclaim ||
	    x->borrow != y->borrow ||
	    x->has_max_priority_threshold != y->has_max_priority_threshold ||
	    x->max_priority_threshold != y->max_priority_threshold ||
	    x->weight_milli != y->weight_milli || x->weight_zero != y->weight_zero ||
	    x->stop != y->stop || x->when_can_borrow != y->when_can_borrow ||
	    x->when_can_preempt != y->when_can_preempt || x->preference != y->preference ||
	    x->admission_fair_sharing != y->admission_fair_sharing ||
	    x->min_runtime_ms != y->min_runtime_ms || x->idle_action != y->idle_action ||
	    x->idle_threshold_pct != y->idle_threshold_pct ||
	    x->idle_after_ms != y->idle_after_ms || x->max_exec_ms != y->max_exec_ms ||
	    x->starvation_ms != y->starvation_ms || a->n_quotas != b->n_quotas)
		return false;
	for (size_t i = 0; i < a->n_quotas; i++)
		if (a->quotas[i].nominal != b->quotas[i].nominal ||
		    a->quotas[i].borrowing_limit != b->quotas[i].borrowing_limit ||
		    a->quotas[i].lending_limit != b->quotas[i].lending_limit)
			return false;
	return true;
}

/* Update q's ClusterQueue i where newp's differs from oldp's. */
static int cq_apply(queue_t *q, const policy_cq_t *a, const policy_cq_t *b, size_t *updated,
		    gpuq_diag_t *diag)
{
	engine_cq_spec_t x, y;
	int rc = engine_cq_spec_init(&x, a);

	if (rc)
		return gpuq_diag_set(diag, rc, "out of memory");
	rc = engine_cq_spec_init(&y, b);
	if (rc) {
		engine_cq_spec_deinit(&x);
		return gpuq_diag_set(diag, rc, "out of memory");
	}
	if (!cq_spec_eq(&x, &y)) {
		rc = queue_cq_update(q, &y.spec, diag);
		if (!rc)
			(*updated)++;
	}
	engine_cq_spec_deinit(&x);
	engine_cq_spec_deinit(&y);
	return rc;
}

int engine_core_apply(queue_t *q, const policy_t *oldp, const policy_t *newp,
		      engine_apply_report_t *rep, gpuq_diag_t *diag)
{
	int rc;

	memset(rep, 0, sizeof(*rep));
	if (structural(oldp, newp, rep->why, sizeof(rep->why)))
		return GPUQ_EINVAL;
	for (size_t i = 0; i < policy_cq_count(newp); i++) {
		rc = cq_apply(q, policy_cq_at(oldp, i), policy_cq_at(newp, i), &rep->cqs_updated,
			      diag);
		if (rc)
			return rc;
	}
	return engine_core_econ(q, newp, diag);
}

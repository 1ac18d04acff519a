/* engine/build.c: the policy snapshot -> queue core translation. */
#include "engine/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quota/quota.h"

queue_effect_t engine_effect_of(policy_effect_t e)
{
	switch (e) {
	case POLICY_EFFECT_NO_SCHEDULE:
		return QUEUE_EFFECT_NO_SCHEDULE;
	case POLICY_EFFECT_PREFER_NO_SCHEDULE:
		return QUEUE_EFFECT_PREFER_NO_SCHEDULE;
	case POLICY_EFFECT_NO_EXECUTE:
		return QUEUE_EFFECT_NO_EXECUTE;
	default:
		return QUEUE_EFFECT_ANY;
	}
}

int engine_effect_named(const char *name, queue_effect_t *out)
{
	policy_effect_t e;
	int rc = policy_effect_named(name, &e);

	if (!rc)
		*out = engine_effect_of(e);
	return rc;
}

static int add_flavor(queue_t *q, const policy_flavor_t *f, gpuq_diag_t *diag)
{
	queue_label_t labels[POLICY_NODE_LABELS_MAX];
	queue_taint_t taints[POLICY_TAINTS_MAX];
	queue_toleration_t tols[POLICY_TAINTS_MAX];
	queue_flavor_spec_t spec = {.name = f->name};

	for (size_t i = 0; i < f->node_labels.n && i < POLICY_NODE_LABELS_MAX; i++) {
		labels[i].key = f->node_labels.items[i].key;
		labels[i].value = f->node_labels.items[i].value;
		spec.n_node_labels++;
	}
	for (size_t i = 0; i < f->n_taints && i < POLICY_TAINTS_MAX; i++) {
		taints[i].key = f->taints[i].key;
		taints[i].value = f->taints[i].value;
		taints[i].effect = engine_effect_of(f->taints[i].effect);
		spec.n_node_taints++;
	}
	for (size_t i = 0; i < f->n_tolerations && i < POLICY_TAINTS_MAX; i++) {
		tols[i].key = f->tolerations[i].key;
		tols[i].op =
		    f->tolerations[i].exists ? QUEUE_TOLERATE_EXISTS : QUEUE_TOLERATE_EQUAL;
		tols[i].value = f->tolerations[i].value;
		tols[i].effect = engine_effect_of(f->tolerations[i].effect);
		spec.n_tolerations++;
	}
	spec.node_labels = labels;
	spec.node_taints = taints;
	spec.tolerations = tols;
	spec.topology = f->topology ? f->topology->name : NULL;
	return queue_flavor_add(q, &spec, NULL, diag);
}

/* Preemption and stop policies of a ClusterQueue, policy enums to queue enums. */
static void set_policies(const policy_cq_t *cq, queue_cq_spec_t *spec)
{
	switch (cq->preemption.within_cluster_queue) {
	case POLICY_PREEMPT_LOWER_PRIORITY:
		spec->within = QUEUE_WITHIN_LOWER_PRIORITY;
		break;
	case POLICY_PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY:
		spec->within = QUEUE_WITHIN_LOWER_OR_NEWER;
		break;
	default:
		spec->within = QUEUE_WITHIN_NEVER;
	}
	switch (cq->preemption.reclaim_within_cohort) {
	case POLICY_PREEMPT_LOWER_PRIORITY:
		spec->reclaim = QUEUE_RECLAIM_LOWER_PRIORITY;
		break;
	case POLICY_PREEMPT_ANY:
		spec->reclaim = QUEUE_RECLAIM_ANY;
		break;
	default:
		spec->reclaim = QUEUE_RECLAIM_NEVER;
	}
	spec->borrow = cq->preemption.borrow_within_cohort == POLICY_PREEMPT_LOWER_PRIORITY
			   ? QUEUE_BORROW_LOWER_PRIORITY
			   : QUEUE_BORROW_NEVER;
	spec->when_can_borrow = cq->fungibility.when_can_borrow == POLICY_FUNGIBLE_TRY_NEXT_FLAVOR
				    ? QUEUE_FUNGIBLE_TRY_NEXT
				    : QUEUE_FUNGIBLE_MAY_STOP;
	spec->when_can_preempt = cq->fungibility.when_can_preempt == POLICY_FUNGIBLE_TRY_NEXT_FLAVOR
				     ? QUEUE_FUNGIBLE_TRY_NEXT
				     : QUEUE_FUNGIBLE_MAY_STOP;
	spec->preference = cq->fungibility.preference == POLICY_PREFER_PREEMPTION
			       ? QUEUE_PREFER_PREEMPTION
			       : QUEUE_PREFER_BORROWING;
	spec->stop = cq->stop == POLICY_STOP_HOLD	      ? QUEUE_STOP_HOLD
		     : cq->stop == POLICY_STOP_HOLD_AND_DRAIN ? QUEUE_STOP_HOLD_AND_DRAIN
							      : QUEUE_STOP_NONE;
}

/* The core's quota triple of one policy resource quota. */
queue_quota_spec_t engine_quota_of(const policy_res_quota_t *rq)
{
	queue_quota_spec_t qs;

	qs.nominal = quota_qty_amount(rq->resource, &rq->nominal);
	qs.borrowing_limit = rq->has_borrowing_limit
				 ? quota_qty_amount(rq->resource, &rq->borrowing_limit)
				 : QUEUE_UNLIMITED;
	qs.lending_limit = rq->has_lending_limit
			       ? quota_qty_amount(rq->resource, &rq->lending_limit)
			       : QUEUE_UNLIMITED;
	return qs;
}

/* The core's groups of a policy's resource groups (CQ or Cohort) in out's
 * arrays. GPUQ_ENOMEM. */
static int groups_of(engine_cq_spec_t *out, const policy_resource_group_t *groups, size_t n)
{
	size_t nq = 0;

	for (size_t g = 0; g < n; g++)
		for (size_t f = 0; f < groups[g].n_flavors; f++)
			nq += groups[g].flavors[f].n_resources;
	out->quotas = calloc(nq + 1, sizeof(*out->quotas));
	if (!out->quotas)
		return GPUQ_ENOMEM;
	nq = 0;
	for (size_t g = 0; g < n && g < POLICY_GROUPS_MAX; g++) {
		const policy_resource_group_t *pg = &groups[g];
		out->groups[g].covered = pg->covered;
		out->groups[g].n_covered = pg->n_covered;
		out->groups[g].flavors = out->flavors[g];
		out->groups[g].n_flavors = pg->n_flavors;
		for (size_t f = 0; f < pg->n_flavors && f < POLICY_GROUP_FLAVORS_MAX; f++) {
			const policy_flavor_quota_t *pf = &pg->flavors[f];
			out->flavors[g][f].flavor = pf->name;
			out->flavors[g][f].quotas = &out->quotas[nq];
			for (size_t r = 0; r < pf->n_resources; r++)
				out->quotas[nq++] = engine_quota_of(&pf->resources[r]);
		}
	}
	out->n_quotas = nq;
	return GPUQ_OK;
}

int engine_cq_spec_init(engine_cq_spec_t *out, const policy_cq_t *cq)
{
	memset(&out->spec, 0, sizeof(out->spec));
	out->spec.name = cq->name;
	out->spec.cohort = cq->cohort_name;
	out->spec.groups = out->groups;
	out->spec.n_groups = cq->n_groups;
	out->spec.strategy = cq->queueing == POLICY_QUEUEING_STRICT_FIFO ? QUEUE_STRICT_FIFO
									 : QUEUE_BEST_EFFORT_FIFO;
	out->spec.weight_milli = cq->fair_weight_milli;
	out->spec.weight_zero = cq->fair_weight_milli == 0; /* a weight of 0 (Kueue) */
	out->spec.admission_fair_sharing = cq->admission_fair_sharing;
	out->spec.has_max_priority_threshold = cq->preemption.has_max_priority_threshold;
	out->spec.max_priority_threshold = cq->preemption.max_priority_threshold;
	out->spec.min_runtime_ms = cq->min_runtime_ms;
	out->spec.max_exec_ms = cq->max_exec_ms;
	out->spec.starvation_ms = cq->starvation_ms;
	out->spec.idle_action = cq->idle.action == POLICY_IDLE_PREEMPT	? QUEUE_IDLE_PREEMPT
				: cq->idle.action == POLICY_IDLE_REPORT ? QUEUE_IDLE_REPORT
									: QUEUE_IDLE_OFF;
	out->spec.idle_threshold_pct = cq->idle.below_pct;
	out->spec.idle_after_ms = cq->idle.for_ms;
	set_policies(cq, &out->spec);
	return groups_of(out, cq->groups, cq->n_groups);
}

void engine_cq_spec_deinit(engine_cq_spec_t *spec)
{
	free(spec->quotas);
	spec->quotas = NULL;
}

static int add_cq(queue_t *q, const policy_cq_t *cq, gpuq_diag_t *diag)
{
	engine_cq_spec_t s;
	int rc = engine_cq_spec_init(&s, cq);

	if (rc)
		return rc;
	rc = queue_cq_add(q, &s.spec, NULL, diag);
	engine_cq_spec_deinit(&s);
	return rc;
}

static int add_cohort(queue_t *q, const policy_cohort_t *c, gpuq_diag_t *diag)
{
	engine_cq_spec_t s; /* its groups and quotas */
	queue_cohort_spec_t spec = {
	    c->name,  c->parent_name, c->fair_weight_milli, c->fair_weight_milli == 0,
	    s.groups, c->n_groups};
	int rc = groups_of(&s, c->groups, c->n_groups);

	if (rc)
		return gpuq_diag_set(diag, rc, "out of memory");
	rc = queue_cohort_add(q, &spec, NULL, diag);
	engine_cq_spec_deinit(&s);
	return rc;
}

/* Add p's objects to q: Topologies, flavors, cohorts, ClusterQueues,
 * LocalQueues. */
static int add_objects(queue_t *q, const policy_t *p, gpuq_diag_t *diag)
{
	int rc;

	for (size_t i = 0; i < policy_topology_count(p); i++) {
		const policy_topology_t *t = policy_topology_at(p, i);
		queue_topology_spec_t spec = {t->name, t->levels, t->n_levels};

		rc = queue_topology_add(q, &spec, diag);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < policy_flavor_count(p); i++) {
		rc = add_flavor(q, policy_flavor_at(p, i), diag);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < policy_cohort_count(p); i++) {
		rc = add_cohort(q, policy_cohort_at(p, i), diag);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < policy_cq_count(p); i++) {
		rc = add_cq(q, policy_cq_at(p, i), diag);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < policy_lq_count(p); i++) {
		const policy_lq_t *lq = policy_lq_at(p, i);
		/* a weight of 0 (Kueue) is one, not the default */
		rc = queue_lq_add(q, lq->namespace_, lq->name, lq->cq_name,
				  lq->fair_weight_milli ? lq->fair_weight_milli : QUEUE_WEIGHT_ZERO,
				  NULL, diag);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* One policy budget as the core's: on ClusterQueue cq, or LocalQueue lq
 * (its namespace's with scope Namespace). */
static queue_budget_spec_t budget_of(const policy_budget_t *b, const policy_cq_t *cq,
				     const policy_lq_t *lq, char *name, size_t cap)
{
	queue_budget_spec_t s = {0};

	if (cq || !lq) {
		s.scope = QUEUE_BUDGET_CLUSTERQUEUE;
		snprintf(name, cap, "%s", cq ? cq->name : "");
	} else if (b->namespace_scope) {
		s.scope = QUEUE_BUDGET_NAMESPACE;
		snprintf(name, cap, "%s", lq->namespace_);
	} else {
		s.scope = QUEUE_BUDGET_LOCALQUEUE;
		snprintf(name, cap, "%s/%s", lq->namespace_, lq->name);
	}
	s.name = name;
	s.cost = b->cost;
	s.limit = b->limit;
	s.window_days = b->window_days;
	s.warn_pct = b->warn_pct;
	s.action = b->action == POLICY_BUDGET_HOLD    ? QUEUE_BUDGET_HOLD
		   : b->action == POLICY_BUDGET_LOWER ? QUEUE_BUDGET_LOWER
						      : QUEUE_BUDGET_WARN;
	return s;
}

#define BUDGET_NAME_MAX (2 * POLICY_STRING_MAX + 2) /* "namespace/name" */

static int set_budgets(queue_t *q, const policy_t *p, gpuq_diag_t *diag)
{
	size_t n_cq = policy_cq_count(p), n_lq = policy_lq_count(p), n = 0, n_prices = 0;
	queue_budget_spec_t *b = calloc(n_cq + n_lq + 1, sizeof(*b));
	char(*names)[BUDGET_NAME_MAX] = calloc(n_cq + n_lq + 1, sizeof(*names));
	ledger_price_t *prices = calloc(policy_flavor_count(p) + 1, sizeof(*prices));
	int rc = GPUQ_OK;

	if (!b || !names || !prices) {
		(void)gpuq_diag_set(diag, GPUQ_ENOMEM, "budgets: out of memory");
		rc = GPUQ_ENOMEM;
	}
	for (size_t i = 0; !rc && i < n_cq; i++)
		if (policy_cq_at(p, i)->budget.present)
			b[n] = budget_of(&policy_cq_at(p, i)->budget, policy_cq_at(p, i), NULL,
					 names[n], BUDGET_NAME_MAX),
			n++;
	for (size_t i = 0; !rc && i < n_lq; i++)
		if (policy_lq_at(p, i)->budget.present)
			b[n] = budget_of(&policy_lq_at(p, i)->budget, NULL, policy_lq_at(p, i),
					 names[n], BUDGET_NAME_MAX),
			n++;
	for (size_t i = 0; !rc && i < policy_flavor_count(p); i++) {
		const policy_flavor_t *f = policy_flavor_at(p, i);
		if (f->has_price)
			prices[n_prices++] = (ledger_price_t){f->name, f->price_per_hour};
	}
	if (!rc && (n || queue_budget_count(q)))
		rc = queue_budgets_set(q, b, n, prices, n_prices, diag);
	free(b);
	free(names);
	free(prices);
	return rc;
}

int engine_core_econ(queue_t *q, const policy_t *p, gpuq_diag_t *diag)
{
	queue_prio_runtime_t rt[POLICY_PRIORITYCLASSES_MAX];
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < policy_priorityclass_count(p) && n < POLICY_PRIORITYCLASSES_MAX;
	     i++) {
		const policy_priorityclass_t *pc = policy_priorityclass_at(p, i);
		if (pc->min_runtime_ms > 0)
			rt[n++] = (queue_prio_runtime_t){pc->value, pc->min_runtime_ms};
	}
	rc = queue_min_runtimes_set(q, rt, n);
	if (rc)
		return gpuq_diag_set(diag, rc, "PriorityClasses' %s: %s", POLICY_ANNOT_MIN_RUNTIME,
				     gpuq_strerror(rc));
	return set_budgets(q, p, diag);
}

int engine_core_build(const policy_t *p, const queue_config_t *cfg, queue_t **out,
		      gpuq_diag_t *diag)
{
	queue_t *q = NULL;
	int rc = queue_create(cfg, &q);

	*out = NULL;
	if (rc)
		return gpuq_diag_set(diag, rc, "queue_create: %s", gpuq_strerror(rc));
	rc = add_objects(q, p, diag);
	if (!rc)
		rc = engine_core_econ(q, p, diag);
	if (rc) {
		queue_destroy(q);
		return rc;
	}
	*out = q;
	return GPUQ_OK;
}

/*
 * Decoding the queueing kinds: ResourceFlavor, Topology, ClusterQueue,
 * LocalQueue and Cohort (gpuq.dev/v1beta1, shaped like Kueue's v1beta2;
 * Kueue's v1beta1 and v1beta2 read too). Unknown spec fields are refused: a misspelt
 * borrowingLimit must not silently become "unlimited".
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"

static const char *const STOP_POLICIES[] = {"None", "Hold", "HoldAndDrain", NULL};

static int enomem(policy_dec_t *d)
{
	gpuq_diag_set(d->j.diag, GPUQ_ENOMEM, "out of memory");
	return GPUQ_ENOMEM; /* a constant the static analyzer can follow */
}

/* The mapping at obj[key] (pushed on the path as *old), or NULL. */
static int enter(policy_dec_t *d, const json_t *obj, const char *key, const char *const *keys,
		 const json_t **out, size_t *old)
{
	int rc = policy_jdec_obj(&d->j, obj, key, false, out);

	*old = d->j.plen;
	if (rc || !*out)
		return rc;
	*old = policy_jdec_key(&d->j, key);
	rc = policy_jdec_keys(&d->j, *out, keys, NULL);
	if (rc)
		policy_jdec_pop(&d->j, *old);
	return rc;
}

/* fairSharing: {weight} into *milli (default 1000). */
static int fair_sharing(policy_dec_t *d, const json_t *spec, int64_t *milli)
{
	static const char *const keys[] = {"weight", NULL};
	const json_t *fs = NULL;
	size_t old;
	int rc = enter(d, spec, "fairSharing", keys, &fs, &old);

	*milli = 1000;
	if (rc || !fs)
		return rc;
	rc = policy_dec_weight(d, fs, "weight", milli);
	policy_jdec_pop(&d->j, old);
	return rc;
}

/* ---- ResourceFlavor ---- */

static int taint(policy_dec_t *d, const json_t *v, policy_taint_t *t)
{
	static const char *const keys[] = {"key", "value", "effect", "timeAdded", NULL};
	int effect = 0, rc;

	t->value = "";
	rc = policy_jdec_keys(&d->j, v, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "key", true, POLICY_STRING_MAX, &t->key);
	if (rc == GPUQ_OK && !policy_name_is_label_key(t->key))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "key: invalid taint key \"%s\"", t->key);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "value", false, POLICY_STRING_MAX, &t->value);
	if (rc == GPUQ_OK && !policy_name_is_label_value(t->value))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "value: invalid taint value \"%s\"",
				      t->value);
	if (rc == GPUQ_OK && !json_is_string(json_object_get(v, "effect")))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "effect: required");
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, v, "effect", POLICY_EFFECT_NAMES, &effect);
	if (rc == GPUQ_OK && effect == 0)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "effect: required");
	t->effect = (policy_effect_t)effect;
	return rc;
}

static int toleration(policy_dec_t *d, const json_t *v, policy_toleration_t *t)
{
	static const char *const keys[] = {"key",    "operator",	  "value",
					   "effect", "tolerationSeconds", NULL};
	static const char *const ops[] = {"Equal", "Exists", NULL};
	int op = 0, effect = 0, rc;

	t->key = t->value = "";
	rc = policy_jdec_keys(&d->j, v, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "key", false, POLICY_STRING_MAX, &t->key);
	if (rc == GPUQ_OK && *t->key && !policy_name_is_label_key(t->key))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "key: invalid toleration key \"%s\"",
				      t->key);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, v, "operator", ops, &op);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "value", false, POLICY_STRING_MAX, &t->value);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, v, "effect", POLICY_EFFECT_NAMES, &effect);
	if (rc == GPUQ_OK && json_object_get(v, "tolerationSeconds") &&
	    !json_is_null(json_object_get(v, "tolerationSeconds"))) {
		t->has_seconds = true;
		rc = policy_jdec_int(&d->j, v, "tolerationSeconds", false, INT64_MIN, INT64_MAX,
				     &t->seconds);
		if (rc == GPUQ_OK && effect != POLICY_EFFECT_NO_EXECUTE)
			rc = policy_jdec_fail(
			    &d->j, GPUQ_EINVAL,
			    "tolerationSeconds: only allowed with effect NoExecute");
	}
	t->exists = op == 1;
	t->effect = (policy_effect_t)effect;
	if (rc == GPUQ_OK && t->exists && *t->value)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "value: must be empty with operator Exists");
	if (rc == GPUQ_OK && !*t->key && !t->exists)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "operator: must be Exists when key is empty");
	return rc;
}

/* A list of taints or tolerations at spec[key]. */
static int flavor_list(policy_dec_t *d, const json_t *spec, const char *key, bool taints,
		       void **out, size_t *n)
{
	const json_t *list = NULL;
	size_t size = taints ? sizeof(policy_taint_t) : sizeof(policy_toleration_t);
	unsigned char *items;
	size_t old;
	int rc = policy_jdec_arr(&d->j, spec, key, false, POLICY_TAINTS_MAX, &list);

	*n = 0;
	if (rc || !list || !json_array_size(list))
		return rc;
	items = policy_arena_alloc(&d->p->arena, json_array_size(list) * size);
	if (!items)
		return enomem(d);
	old = policy_jdec_key(&d->j, key);
	for (size_t i = 0; i < json_array_size(list) && rc == GPUQ_OK; i++) {
		size_t o2 = policy_jdec_idx(&d->j, i);

		if (taints)
			rc =
			    taint(d, json_array_get(list, i), (policy_taint_t *)(items + i * size));
		else
			rc = toleration(d, json_array_get(list, i),
					(policy_toleration_t *)(items + i * size));
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	*out = items;
	*n = json_array_size(list);
	return rc;
}

int policy_decode_flavor(policy_dec_t *d, const json_t *obj)
{
	static const char *const keys[] = {"nodeLabels", "nodeTaints", "tolerations",
					   "topologyName", NULL};
	const json_t *spec = NULL;
	policy_flavor_t *f;
	const char *name;
	void *list = NULL;
	size_t old;
	int rc = policy_dec_meta(d, obj, "ResourceFlavor", false, false, NULL, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", false, &spec);
	if (rc)
		return rc;
	f = policy_arena_alloc(&d->p->arena, sizeof(*f));
	if (!f || !(f->name = policy_arena_strdup(&d->p->arena, name)))
		return enomem(d);
	f->origin = policy_dec_origin(d);
	rc = policy_dec_price_lenient(d, obj, &f->has_price, &f->price_per_hour, &f->price_error);
	if (rc == GPUQ_OK && spec) {
		old = policy_jdec_key(&d->j, "spec");
		rc = policy_jdec_keys(&d->j, spec, keys, NULL);
		if (rc == GPUQ_OK)
			rc = policy_dec_labels(d, spec, "nodeLabels", POLICY_NODE_LABELS_MAX,
					       &f->node_labels);
		if (rc == GPUQ_OK)
			rc = policy_dec_str(d, spec, "topologyName", false, 253, &f->topology_name);
		if (rc == GPUQ_OK && f->topology_name &&
		    !policy_name_is_subdomain(f->topology_name)) {
			size_t o2 = policy_jdec_key(&d->j, "topologyName");

			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
					      "invalid name \"%s\" (want a DNS-1123 subdomain)",
					      f->topology_name);
			policy_jdec_pop(&d->j, o2);
		}
		if (rc == GPUQ_OK)
			rc = flavor_list(d, spec, "nodeTaints", true, &list, &f->n_taints);
		f->taints = list;
		if (rc == GPUQ_OK)
			rc = flavor_list(d, spec, "tolerations", false, &list, &f->n_tolerations);
		f->tolerations = list;
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK)
		rc = policy_dec_register(d, POLICY_K_FLAVOR, "", f->name, f);
	return rc;
}

/* ---- Topology ---- */

/* A refusal of the nodeLabel of the level on the path. */
static int level_fail(policy_dec_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int level_fail(policy_dec_t *d, const char *fmt, ...)
{
	char msg[GPUQ_DIAG_MAX];
	size_t old = policy_jdec_key(&d->j, "nodeLabel");
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "%s", msg);
	policy_jdec_pop(&d->j, old);
	return rc;
}

/* levels[i] = spec.levels[i].nodeLabel: a label key (Kueue: 1..316 bytes),
 * none twice, kubernetes.io/hostname only last. */
static int topology_level(policy_dec_t *d, const json_t *v, size_t i, size_t n, const char **levels)
{
	static const char *const keys[] = {"nodeLabel", NULL};
	int rc = policy_jdec_keys(&d->j, v, keys, NULL);

	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "nodeLabel", true, 316, &levels[i]);
	if (rc)
		return rc;
	if (!policy_name_is_label_key(levels[i]))
		return level_fail(d, "invalid label key \"%s\"", levels[i]);
	for (size_t k = 0; k < i; k++)
		if (!strcmp(levels[k], levels[i]))
			return level_fail(d, "\"%s\" is already level %zu", levels[i], k);
	if (!strcmp(levels[i], POLICY_LABEL_HOSTNAME) && i + 1 != n)
		return level_fail(d, "\"%s\" may only be the last (narrowest) level", levels[i]);
	return GPUQ_OK;
}

int policy_decode_topology(policy_dec_t *d, const json_t *obj)
{
	static const char *const keys[] = {"levels", NULL};
	const json_t *spec = NULL, *list = NULL;
	policy_topology_t *t;
	const char **levels;
	const char *name;
	size_t old, n;
	int rc = policy_dec_meta(d, obj, "Topology", false, false, NULL, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", true, &spec);
	if (rc)
		return rc;
	old = policy_jdec_key(&d->j, "spec");
	rc = policy_jdec_keys(&d->j, spec, keys, NULL);
	if (rc == GPUQ_OK)
		rc =
		    policy_jdec_arr(&d->j, spec, "levels", true, POLICY_TOPOLOGY_LEVELS_MAX, &list);
	n = list ? json_array_size(list) : 0;
	if (rc == GPUQ_OK && n == 0) {
		size_t o2 = policy_jdec_key(&d->j, "levels");

		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "at least one level is required");
		policy_jdec_pop(&d->j, o2);
	}
	t = rc ? NULL : policy_arena_alloc(&d->p->arena, sizeof(*t));
	levels = rc ? NULL : policy_arena_alloc(&d->p->arena, n * sizeof(*levels));
	if (rc == GPUQ_OK &&
	    (!t || !levels || !(t->name = policy_arena_strdup(&d->p->arena, name))))
		rc = enomem(d);
	if (rc == GPUQ_OK) {
		size_t o2 = policy_jdec_key(&d->j, "levels");

		for (size_t i = 0; i < n && rc == GPUQ_OK; i++) {
			size_t o3 = policy_jdec_idx(&d->j, i);

			rc = topology_level(d, json_array_get(list, i), i, n, levels);
			policy_jdec_pop(&d->j, o3);
		}
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	if (rc)
		return rc;
	t->levels = levels;
	t->n_levels = n;
	t->origin = policy_dec_origin(d);
	return policy_dec_register(d, POLICY_K_TOPOLOGY, "", t->name, t);
}

/* ---- ClusterQueue ---- */

/* One resources[] entry of a flavor: name must be covered[r]. */
static int res_quota(policy_dec_t *d, const json_t *v, const char *covered, const char *orphan,
		     bool is_cohort, policy_res_quota_t *q)
{
	static const char *const keys[] = {"name", "nominalQuota", "borrowingLimit", "lendingLimit",
					   NULL};
	const char *name = NULL;
	int rc;

	rc = policy_jdec_keys(&d->j, v, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "name", true, QUOTA_RES_NAME_MAX, &name);
	if (rc == GPUQ_OK && strcmp(name, covered) != 0)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "name: \"%s\" is not \"%s\", the coveredResources entry in "
				      "the same position",
				      name, covered);
	q->resource = covered;
	if (rc == GPUQ_OK)
		rc = policy_dec_qty(d, v, "nominalQuota", true, &q->nominal, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_qty(d, v, "borrowingLimit", false, &q->borrowing_limit,
				    &q->has_borrowing_limit);
	if (rc == GPUQ_OK)
		rc = policy_dec_qty(d, v, "lendingLimit", false, &q->lending_limit,
				    &q->has_lending_limit);
	if (rc == GPUQ_OK && orphan && (q->has_borrowing_limit || q->has_lending_limit))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "%s: must not be set without a %s",
				      q->has_borrowing_limit ? "borrowingLimit" : "lendingLimit",
				      orphan);
	/* a Cohort's lendingLimit bounds its subtree quota, not its own nominal */
	if (rc == GPUQ_OK && !is_cohort && q->has_lending_limit &&
	    quota_qty_cmp(&q->lending_limit, &q->nominal) > 0) {
		char a[QUOTA_QTY_FMT_MAX], b[QUOTA_QTY_FMT_MAX];

		quota_qty_format(&q->lending_limit, a, sizeof(a));
		quota_qty_format(&q->nominal, b, sizeof(b));
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "lendingLimit: %s is more than nominalQuota %s", a, b);
	}
	return rc;
}

static int flavor_quota(policy_dec_t *d, const json_t *v, const policy_resource_group_t *g,
			const char *orphan, bool is_cohort, policy_flavor_quota_t *fq)
{
	static const char *const keys[] = {"name", "resources", NULL};
	const json_t *res = NULL;
	policy_res_quota_t *qs;
	size_t old;
	int rc;

	rc = policy_jdec_keys(&d->j, v, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, v, "name", true, 253, &fq->name);
	if (rc == GPUQ_OK && !policy_name_is_subdomain(fq->name))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "name: invalid name \"%s\" (want a DNS-1123 subdomain)",
				      fq->name);
	if (rc == GPUQ_OK)
		rc = policy_jdec_arr(&d->j, v, "resources", true, POLICY_COVERED_MAX, &res);
	if (rc == GPUQ_OK && json_array_size(res) != g->n_covered)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "resources: %zu entries, but coveredResources has %zu",
				      json_array_size(res), g->n_covered);
	if (rc)
		return rc;
	qs = policy_arena_alloc(&d->p->arena, g->n_covered * sizeof(*qs));
	if (!qs)
		return enomem(d);
	old = policy_jdec_key(&d->j, "resources");
	for (size_t r = 0; r < g->n_covered && rc == GPUQ_OK; r++) {
		size_t o2 = policy_jdec_idx(&d->j, r);

		rc = res_quota(d, json_array_get(res, r), g->covered[r], orphan, is_cohort, &qs[r]);
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	fq->resources = qs;
	fq->n_resources = g->n_covered;
	return rc;
}

static int covered_resources(policy_dec_t *d, const json_t *v, policy_resource_group_t *g)
{
	const json_t *list = NULL;
	const char **names;
	size_t old;
	int rc = policy_jdec_arr(&d->j, v, "coveredResources", true, POLICY_COVERED_MAX, &list);

	if (rc)
		return rc;
	if (json_array_size(list) == 0)
		return policy_jdec_fail(&d->j, GPUQ_EINVAL, "coveredResources: must not be empty");
	names = policy_arena_alloc(&d->p->arena, json_array_size(list) * sizeof(*names));
	if (!names)
		return enomem(d);
	old = policy_jdec_key(&d->j, "coveredResources");
	for (size_t i = 0; i < json_array_size(list) && rc == GPUQ_OK; i++) {
		const json_t *e = json_array_get(list, i);
		size_t o2 = policy_jdec_idx(&d->j, i);
		char val[128];

		policy_jdec_value(e, val, sizeof(val));
		if (!json_is_string(e))
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "must be a string, not %s", val);
		else if (!policy_name_is_resource(json_string_value(e)))
			rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "invalid resource name %s", val);
		else if (!(names[i] = policy_arena_strdup(&d->p->arena, json_string_value(e))))
			rc = enomem(d);
		for (size_t j = 0; rc == GPUQ_OK && j < i; j++)
			if (!strcmp(names[j], names[i]))
				rc =
				    policy_jdec_fail(&d->j, GPUQ_EINVAL, "%s is listed twice", val);
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	g->covered = names;
	g->n_covered = json_array_size(list);
	return rc;
}

/* One resourceGroups entry. orphan: NULL when the object has a parent
 * (borrowingLimit and lendingLimit allowed), else the field that would give
 * it one ("cohortName", "parentName"). */
static int resource_group(policy_dec_t *d, const json_t *v, const char *orphan, bool is_cohort,
			  policy_resource_group_t *g)
{
	static const char *const keys[] = {"coveredResources", "flavors", NULL};
	const json_t *flavors = NULL;
	policy_flavor_quota_t *fqs;
	size_t old;
	int rc;

	rc = policy_jdec_keys(&d->j, v, keys, NULL);
	if (rc == GPUQ_OK)
		rc = covered_resources(d, v, g);
	if (rc == GPUQ_OK)
		rc = policy_jdec_arr(&d->j, v, "flavors", true, POLICY_GROUP_FLAVORS_MAX, &flavors);
	if (rc == GPUQ_OK && json_array_size(flavors) == 0)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "flavors: must not be empty");
	if (rc)
		return rc;
	fqs = policy_arena_alloc(&d->p->arena, json_array_size(flavors) * sizeof(*fqs));
	if (!fqs)
		return enomem(d);
	old = policy_jdec_key(&d->j, "flavors");
	for (size_t f = 0; f < json_array_size(flavors) && rc == GPUQ_OK; f++) {
		size_t o2 = policy_jdec_idx(&d->j, f);

		rc = flavor_quota(d, json_array_get(flavors, f), g, orphan, is_cohort, &fqs[f]);
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	g->flavors = fqs;
	g->n_flavors = json_array_size(flavors);
	return rc;
}

/* A resource in two groups, or a flavor in two places, of one CQ or Cohort. */
static int groups_disjoint(policy_dec_t *d, const policy_resource_group_t *groups, size_t n)
{
	for (size_t g = 0; g < n; g++) {
		const policy_resource_group_t *a = &groups[g];

		for (size_t h = 0; h <= g; h++) {
			const policy_resource_group_t *b = &groups[h];

			for (size_t i = 0; h < g && i < a->n_covered; i++)
				for (size_t j = 0; j < b->n_covered; j++)
					if (!strcmp(a->covered[i], b->covered[j]))
						return policy_jdec_fail(
						    &d->j, GPUQ_EINVAL,
						    "resourceGroups[%zu].coveredResources[%zu]: "
						    "\"%s\" is already covered by "
						    "resourceGroups[%zu]",
						    g, i, a->covered[i], h);
			for (size_t i = 0; i < a->n_flavors; i++)
				for (size_t j = 0; j < (h < g ? b->n_flavors : i); j++)
					if (!strcmp(a->flavors[i].name, b->flavors[j].name))
						return policy_jdec_fail(
						    &d->j, GPUQ_EINVAL,
						    "resourceGroups[%zu].flavors[%zu].name: "
						    "flavor \"%s\" already appears in "
						    "resourceGroups[%zu]",
						    g, i, a->flavors[i].name, h);
		}
	}
	return GPUQ_OK;
}

static int preemption(policy_dec_t *d, const json_t *spec, policy_preemption_t *pr)
{
	static const char *const keys[] = {"withinClusterQueue", "reclaimWithinCohort",
					   "borrowWithinCohort", NULL};
	static const char *const bkeys[] = {"policy", "maxPriorityThreshold", NULL};
	static const char *const within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority",
					     NULL};
	static const char *const reclaim[] = {"Never", "LowerPriority", "Any", NULL};
	static const char *const borrow[] = {"Never", "LowerPriority", NULL};
	const json_t *p = NULL, *b = NULL;
	int w = 0, r = 0, bp = 0;
	int64_t thr = 0;
	size_t old, old2;
	int rc = enter(d, spec, "preemption", keys, &p, &old);

	if (rc || !p)
		return rc;
	rc = policy_jdec_enum(&d->j, p, "withinClusterQueue", within, &w);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, p, "reclaimWithinCohort", reclaim, &r);
	if (rc == GPUQ_OK)
		rc = enter(d, p, "borrowWithinCohort", bkeys, &b, &old2);
	if (rc == GPUQ_OK && b) {
		rc = policy_jdec_enum(&d->j, b, "policy", borrow, &bp);
		if (rc == GPUQ_OK && json_object_get(b, "maxPriorityThreshold") &&
		    !json_is_null(json_object_get(b, "maxPriorityThreshold"))) {
			pr->has_max_priority_threshold = true;
			rc = policy_jdec_int(&d->j, b, "maxPriorityThreshold", true, INT32_MIN,
					     INT32_MAX, &thr);
		}
		policy_jdec_pop(&d->j, old2);
	}
	pr->within_cluster_queue = (policy_preempt_t)w;
	pr->reclaim_within_cohort = r == 2 ? POLICY_PREEMPT_ANY : (policy_preempt_t)r;
	pr->borrow_within_cohort = (policy_preempt_t)bp;
	pr->max_priority_threshold = (int32_t)thr;
	if (rc == GPUQ_OK && bp && !r)
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "borrowWithinCohort.policy: LowerPriority needs "
				      "reclaimWithinCohort other than Never");
	policy_jdec_pop(&d->j, old);
	return rc;
}

static int fungibility(policy_dec_t *d, const json_t *spec, policy_fungibility_t *fu)
{
	static const char *const keys[] = {"whenCanBorrow", "whenCanPreempt", "preference", NULL};
	static const char *const borrow[] = {"Borrow", "MayStopSearch", "TryNextFlavor", NULL};
	static const char *const preempt[] = {"Preempt", "MayStopSearch", "TryNextFlavor", NULL};
	static const char *const prefer[] = {"BorrowingOverPreemption", "PreemptionOverBorrowing",
					     NULL};
	const json_t *f = NULL;
	int b = 0, p = 2, pr = -1;
	size_t old;
	int rc = enter(d, spec, "flavorFungibility", keys, &f, &old);

	fu->when_can_borrow = POLICY_FUNGIBLE_STOP;
	fu->when_can_preempt = POLICY_FUNGIBLE_TRY_NEXT_FLAVOR;
	fu->preference = POLICY_PREFER_BORROWING;
	if (rc || !f)
		return rc;
	rc = policy_jdec_enum(&d->j, f, "whenCanBorrow", borrow, &b);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, f, "whenCanPreempt", preempt, &p);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, f, "preference", prefer, &pr);
	/* Kueue's validation: a preference needs both searches to go on */
	if (rc == GPUQ_OK && pr >= 0 && (b != 2 || p != 2))
		rc = policy_jdec_fail_at(&d->j, "preference", GPUQ_EINVAL,
					 "\"%s\" can only be set when both whenCanBorrow and "
					 "whenCanPreempt are TryNextFlavor",
					 prefer[pr]);
	fu->when_can_borrow = b == 2 ? POLICY_FUNGIBLE_TRY_NEXT_FLAVOR : POLICY_FUNGIBLE_STOP;
	fu->when_can_preempt = p == 2 ? POLICY_FUNGIBLE_TRY_NEXT_FLAVOR : POLICY_FUNGIBLE_STOP;
	fu->preference = pr == 1 ? POLICY_PREFER_PREEMPTION : POLICY_PREFER_BORROWING;
	policy_jdec_pop(&d->j, old);
	return rc;
}

/* spec.admissionScope: {admissionMode} (Kueue's AdmissionScope; admissionMode
 * is required there). *afs: UsageBasedAdmissionFairSharing. */
static int admission_scope(policy_dec_t *d, const json_t *spec, bool *afs)
{
	static const char *const keys[] = {"admissionMode", NULL};
	static const char *const modes[] = {"NoAdmissionFairSharing",
					    "UsageBasedAdmissionFairSharing", NULL};
	const json_t *scope = NULL, *mode = NULL;
	int m = 0;
	size_t old;
	int rc = enter(d, spec, "admissionScope", keys, &scope, &old);

	*afs = false;
	if (rc || !scope)
		return rc;
	rc = policy_jdec_member(&d->j, scope, "admissionMode", true, &mode);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, scope, "admissionMode", modes, &m);
	*afs = rc == GPUQ_OK && m == 1;
	policy_jdec_pop(&d->j, old);
	return rc;
}

/* spec.cohortName (v1beta1: spec.cohort); NULL when alone. */
static int cohort_name(policy_dec_t *d, const json_t *spec, const char **out)
{
	const char *a = NULL, *b = NULL;
	int rc = policy_dec_str(d, spec, "cohortName", false, 253, &a);

	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, spec, "cohort", false, 253, &b);
	if (rc)
		return rc;
	if (a && b && strcmp(a, b) != 0)
		return policy_jdec_fail(&d->j, GPUQ_EINVAL,
					"cohortName \"%s\" and cohort \"%s\" differ", a, b);
	*out = a ? a : b;
	if (*out && !**out)
		*out = NULL; /* "" means no cohort */
	if (*out && !policy_name_is_subdomain(*out))
		return policy_jdec_fail(&d->j, GPUQ_EINVAL,
					"%s: invalid name \"%s\" (want a DNS-1123 subdomain)",
					a ? "cohortName" : "cohort", *out);
	return GPUQ_OK;
}

/* spec.resourceGroups of a CQ or Cohort (orphan: see resource_group). */
static int spec_groups(policy_dec_t *d, const json_t *spec, const char *orphan, bool is_cohort,
		       const policy_resource_group_t **out, size_t *n_out)
{
	const json_t *groups = NULL;
	policy_resource_group_t *gs;
	size_t old;
	int rc = policy_jdec_arr(&d->j, spec, "resourceGroups", false, POLICY_GROUPS_MAX, &groups);

	if (rc || !groups || !json_array_size(groups))
		return rc;
	gs = policy_arena_alloc(&d->p->arena, json_array_size(groups) * sizeof(*gs));
	if (!gs)
		return enomem(d);
	old = policy_jdec_key(&d->j, "resourceGroups");
	for (size_t g = 0; g < json_array_size(groups) && rc == GPUQ_OK; g++) {
		size_t o2 = policy_jdec_idx(&d->j, g);

		rc = resource_group(d, json_array_get(groups, g), orphan, is_cohort, &gs[g]);
		policy_jdec_pop(&d->j, o2);
	}
	policy_jdec_pop(&d->j, old);
	*out = gs;
	*n_out = json_array_size(groups);
	return rc == GPUQ_OK ? groups_disjoint(d, gs, *n_out) : rc;
}

int policy_decode_cq(policy_dec_t *d, const json_t *obj)
{
	static const char *const keys[] = {"cohortName",
					   "cohort",
					   "resourceGroups",
					   "queueingStrategy",
					   "namespaceSelector",
					   "preemption",
					   "flavorFungibility",
					   "fairSharing",
					   "stopPolicy",
					   "admissionScope",
					   "budget",
					   "minRuntime",
					   "idleReclaim",
					   "maxExecutionTime",
					   "starvationLimit",
					   NULL};
	static const char *const unsupported[] = {"admissionChecks", "admissionChecksStrategy",
						  "concurrentAdmissionPolicy", NULL};
	static const char *const strategies[] = {"BestEffortFIFO", "StrictFIFO", NULL};
	const json_t *spec = NULL;
	policy_cq_t *cq;
	const char *name;
	int strategy = 0, stop = 0;
	size_t old;
	int rc = policy_dec_meta(d, obj, "ClusterQueue", false, false, NULL, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", true, &spec);
	if (rc)
		return rc;
	cq = policy_arena_alloc(&d->p->arena, sizeof(*cq));
	if (!cq || !(cq->name = policy_arena_strdup(&d->p->arena, name)))
		return enomem(d);
	cq->origin = policy_dec_origin(d);
	old = policy_jdec_key(&d->j, "spec");
	rc = policy_jdec_keys(&d->j, spec, keys, unsupported);
	if (rc == GPUQ_OK)
		rc = cohort_name(d, spec, &cq->cohort_name);
	if (rc == GPUQ_OK)
		rc = spec_groups(d, spec, cq->cohort_name ? NULL : "cohortName", false, &cq->groups,
				 &cq->n_groups);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, spec, "queueingStrategy", strategies, &strategy);
	if (rc == GPUQ_OK)
		rc = policy_dec_selector(d, spec, "namespaceSelector", &cq->namespace_selector);
	if (rc == GPUQ_OK)
		rc = preemption(d, spec, &cq->preemption);
	if (rc == GPUQ_OK)
		rc = fungibility(d, spec, &cq->fungibility);
	if (rc == GPUQ_OK)
		rc = fair_sharing(d, spec, &cq->fair_weight_milli);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, spec, "stopPolicy", STOP_POLICIES, &stop);
	if (rc == GPUQ_OK)
		rc = admission_scope(d, spec, &cq->admission_fair_sharing);
	if (rc == GPUQ_OK)
		rc = policy_dec_budget(d, spec, false, &cq->budget);
	if (rc == GPUQ_OK)
		rc = policy_dec_min_runtime(d, spec, &cq->min_runtime_ms);
	if (rc == GPUQ_OK)
		rc = policy_dec_idle(d, spec, &cq->idle);
	if (rc == GPUQ_OK)
		rc = policy_dec_max_exec(d, spec, &cq->max_exec_ms);
	if (rc == GPUQ_OK)
		rc = policy_dec_starvation(d, spec, &cq->starvation_ms);
	policy_jdec_pop(&d->j, old);
	cq->queueing = (policy_queueing_t)strategy;
	cq->stop = (policy_stop_t)stop;
	cq->index = d->p->cqs.n;
	if (rc == GPUQ_OK)
		rc = policy_dec_register(d, POLICY_K_CQ, "", cq->name, cq);
	return rc;
}

/* ---- LocalQueue ---- */

int policy_decode_lq(policy_dec_t *d, const json_t *obj)
{
	static const char *const keys[] = {"clusterQueue", "stopPolicy", "fairSharing", "budget",
					   NULL};
	const json_t *spec = NULL;
	policy_lq_t *lq;
	const char *ns, *name;
	int stop = 0;
	size_t old;
	int rc = policy_dec_meta(d, obj, "LocalQueue", true, true, &ns, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", true, &spec);
	if (rc)
		return rc;
	lq = policy_arena_alloc(&d->p->arena, sizeof(*lq));
	if (!lq || !(lq->name = policy_arena_strdup(&d->p->arena, name)) ||
	    !(lq->namespace_ = policy_arena_strdup(&d->p->arena, ns)))
		return enomem(d);
	lq->origin = policy_dec_origin(d);
	old = policy_jdec_key(&d->j, "spec");
	rc = policy_jdec_keys(&d->j, spec, keys, NULL);
	if (rc == GPUQ_OK)
		rc = policy_dec_str(d, spec, "clusterQueue", true, 253, &lq->cq_name);
	if (rc == GPUQ_OK && !policy_name_is_subdomain(lq->cq_name))
		rc = policy_jdec_fail(
		    &d->j, GPUQ_EINVAL,
		    "clusterQueue: invalid name \"%s\" (want a DNS-1123 subdomain)", lq->cq_name);
	if (rc == GPUQ_OK)
		rc = policy_jdec_enum(&d->j, spec, "stopPolicy", STOP_POLICIES, &stop);
	if (rc == GPUQ_OK)
		rc = fair_sharing(d, spec, &lq->fair_weight_milli);
	if (rc == GPUQ_OK)
		rc = policy_dec_budget(d, spec, true, &lq->budget);
	policy_jdec_pop(&d->j, old);
	lq->stop = (policy_stop_t)stop;
	if (rc)
		return rc;
	{
		policy_ns_entry_t *e;

		rc = policy_ns_ensure(d->p, ns, &e);
		if (rc == GPUQ_ELIMIT)
			return policy_jdec_fail(&d->j, rc, "more than %d Namespaces",
						POLICY_NAMESPACES_MAX);
		if (rc)
			return enomem(d);
	}
	return policy_dec_register(d, POLICY_K_LQ, lq->namespace_, lq->name, lq);
}

/* ---- Cohort ---- */

/* spec.parentName: a DNS-1123 subdomain other than the Cohort's own name. */
static int parent_name(policy_dec_t *d, const policy_cohort_t *c)
{
	size_t old = policy_jdec_key(&d->j, "parentName");
	int rc = GPUQ_OK;

	if (!policy_name_is_subdomain(c->parent_name))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL,
				      "invalid name \"%s\" (want a DNS-1123 subdomain)",
				      c->parent_name);
	else if (!strcmp(c->parent_name, c->name))
		rc = policy_jdec_fail(&d->j, GPUQ_EINVAL, "\"%s\" is the Cohort itself", c->name);
	policy_jdec_pop(&d->j, old);
	return rc;
}

int policy_decode_cohort(policy_dec_t *d, const json_t *obj)
{
	static const char *const keys[] = {"parentName", "resourceGroups", "fairSharing", NULL};
	static const char *const unsupported[] = {"parent", NULL};
	const json_t *spec = NULL;
	policy_cohort_t *c;
	const char *name;
	size_t old;
	int rc = policy_dec_meta(d, obj, "Cohort", false, false, NULL, &name);

	if (rc == GPUQ_OK)
		rc = policy_jdec_obj(&d->j, obj, "spec", false, &spec);
	if (rc)
		return rc;
	c = policy_arena_alloc(&d->p->arena, sizeof(*c));
	if (!c || !(c->name = policy_arena_strdup(&d->p->arena, name)))
		return enomem(d);
	c->declared = true;
	c->fair_weight_milli = 1000;
	c->origin = policy_dec_origin(d);
	if (spec) {
		old = policy_jdec_key(&d->j, "spec");
		rc = policy_jdec_keys(&d->j, spec, keys, unsupported);
		if (rc == GPUQ_OK)
			rc = policy_dec_str(d, spec, "parentName", false, 253, &c->parent_name);
		if (rc == GPUQ_OK && c->parent_name && !*c->parent_name)
			c->parent_name = NULL; /* "" means a root */
		if (rc == GPUQ_OK && c->parent_name)
			rc = parent_name(d, c);
		if (rc == GPUQ_OK)
			rc = spec_groups(d, spec, c->parent_name ? NULL : "parentName", true,
					 &c->groups, &c->n_groups);
		if (rc == GPUQ_OK)
			rc = fair_sharing(d, spec, &c->fair_weight_milli);
		policy_jdec_pop(&d->j, old);
	}
	if (rc == GPUQ_OK)
		rc = policy_dec_register(d, POLICY_K_COHORT, "", c->name, c);
	return rc;
}

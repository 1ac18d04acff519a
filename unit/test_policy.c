/* Unit tests for policy: decoding every kind (manifest parsing:
 * test_manifest.c; exact messages for bad manifests:
 * test_policy_refusals.c), checks across objects,
 * selectors, lookups, max_fit, reference counts, directory loads and
 * fingerprints, and examples/policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "policy/policy_json.h"

/* ---- helpers ---- */

#include "unit/policy_fixtures.h"

static void caps_enforced(void **state)
{
	size_t cap = (POLICY_CQ_MAX + 1) * 100 + 1, off = 0;
	char *buf = malloc(cap);
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	for (int i = 0; i <= POLICY_CQ_MAX; i++)
		off += (size_t)snprintf(buf + off, cap - off,
					"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\n"
					"metadata: {name: q%d}\nspec: {}\n",
					i);
	assert_int_equal(load_str(buf, NULL, &p, &d), GPUQ_ELIMIT);
	assert_string_equal(
	    d.msg, "t.yaml: document 1001: ClusterQueue \"q1000\": more than 1000 ClusterQueues");
	free(buf);
}

static void options(void **state)
{
	policy_opts_t opts = {.skip_unknown_kinds = true};
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(load_str("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"
				  "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: "
				  "a, name: q}\nspec:\n  hard: {pods: 4}\n  scopes: [BestEffort]\n"
				  "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: "
				  "a, name: r}\nspec:\n  hard: {pods: 4}\nstatus:\n  used: {pods: "
				  "1}\n",
				  &opts, &p, &d),
			 GPUQ_OK);
	/* a scoped quota is kept with its scopes (quota_resourcequota_applies) */
	assert_int_equal(policy_quota_count(p), 2);
	assert_string_equal(policy_quota_at(p, 0)->name, "q");
	assert_int_equal(policy_quota_at(p, 0)->n_scopes, 1);
	assert_int_equal(policy_quota_at(p, 0)->scopes[0].scope, QUOTA_SCOPE_BEST_EFFORT);
	assert_string_equal(policy_quota_at(p, 1)->name, "r");
	assert_int_equal(policy_quota_at(p, 1)->n_scopes, 0);
	assert_int_equal(quota_qty_units(quota_reslist_get(&policy_quota_at(p, 1)->used, "pods")),
			 1);
	assert_int_equal(policy_namespace_find(p, "a")->n_quotas, 2);
	policy_unref(p);
}

/* ---- selectors and tolerations ---- */

static void selectors(void **state)
{
	policy_label_t items[] = {{"env", "prod"}, {"team", "a"}, {"tier", ""}};
	policy_labels_t labels = {items, 3}, none = {NULL, 0};
	const char *ab[] = {"a", "b"}, *c[] = {"c"};
	policy_sel_req_t in = {"team", POLICY_SEL_IN, ab, 2};
	policy_sel_req_t in_c = {"team", POLICY_SEL_IN, c, 1};
	policy_sel_req_t notin = {"team", POLICY_SEL_NOT_IN, c, 1};
	policy_sel_req_t notin_a = {"team", POLICY_SEL_NOT_IN, ab, 2};
	policy_sel_req_t exists = {"tier", POLICY_SEL_EXISTS, NULL, 0};
	policy_sel_req_t dne = {"gpu", POLICY_SEL_DOES_NOT_EXIST, NULL, 0};
	policy_sel_req_t dne_env = {"env", POLICY_SEL_DOES_NOT_EXIST, NULL, 0};
	policy_sel_req_t all_ok[] = {in, notin, exists, dne};
	policy_selector_t absent = {false, NULL, 0}, everything = {true, NULL, 0};
	policy_selector_t sel = {true, all_ok, 4};

	(void)state;
	assert_string_equal(policy_labels_get(&labels, "tier"), "");
	assert_null(policy_labels_get(&labels, "gpu"));
	assert_null(policy_labels_get(&none, "gpu"));
	assert_false(policy_selector_matches(&absent, &labels));
	assert_true(policy_selector_matches(&everything, &labels));
	assert_true(policy_selector_matches(&everything, &none));
	assert_true(policy_selector_matches(&sel, &labels));
	sel.reqs = &in_c, sel.n_reqs = 1;
	assert_false(policy_selector_matches(&sel, &labels));
	sel.reqs = &notin_a;
	assert_false(policy_selector_matches(&sel, &labels));
	assert_true(policy_selector_matches(&sel, &none)); /* NotIn holds when the key is absent */
	sel.reqs = &dne_env;
	assert_false(policy_selector_matches(&sel, &labels));
	sel.reqs = &in;
	assert_false(policy_selector_matches(&sel, &none));
}

static void tolerations(void **state)
{
	policy_taint_t gpu = {"nvidia.com/gpu", "present", POLICY_EFFECT_NO_SCHEDULE};
	policy_toleration_t exists = {"nvidia.com/gpu",		 true,	"",
				      POLICY_EFFECT_NO_SCHEDULE, false, 0};
	policy_toleration_t equal = {"nvidia.com/gpu",	false, "present",
				     POLICY_EFFECT_ANY, false, 0};
	policy_toleration_t wrong_value = {"nvidia.com/gpu",  false, "absent",
					   POLICY_EFFECT_ANY, false, 0};
	policy_toleration_t wrong_effect = {"nvidia.com/gpu",	      true,  "",
					    POLICY_EFFECT_NO_EXECUTE, false, 0};
	policy_toleration_t all = {"", true, "", POLICY_EFFECT_ANY, false, 0};
	policy_toleration_t other = {"other", true, "", POLICY_EFFECT_ANY, false, 0};

	(void)state;
	assert_true(policy_toleration_tolerates(&exists, &gpu));
	assert_true(policy_toleration_tolerates(&equal, &gpu));
	assert_false(policy_toleration_tolerates(&wrong_value, &gpu));
	assert_false(policy_toleration_tolerates(&wrong_effect, &gpu));
	assert_true(policy_toleration_tolerates(&all, &gpu));
	assert_false(policy_toleration_tolerates(&other, &gpu));
}

/* The one taint-effect map: "" and NULL are every effect, the three names
 * theirs, both ways; any other name is refused, for the policy, the
 * simulator and the controller alike (engine_effect_named: the core's). */
static void effect_names_one_map(void **state)
{
	static const char *const names[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
	static const queue_effect_t core[] = {
	    QUEUE_EFFECT_NO_SCHEDULE, QUEUE_EFFECT_PREFER_NO_SCHEDULE, QUEUE_EFFECT_NO_EXECUTE};
	policy_effect_t e = POLICY_EFFECT_NO_SCHEDULE;
	queue_effect_t q = QUEUE_EFFECT_NO_SCHEDULE;

	(void)state;
	assert_int_equal(policy_effect_named(NULL, &e), GPUQ_OK);
	assert_int_equal(e, POLICY_EFFECT_ANY);
	assert_int_equal(policy_effect_named("", &e), GPUQ_OK);
	assert_int_equal(e, POLICY_EFFECT_ANY);
	assert_string_equal(POLICY_EFFECT_NAMES[POLICY_EFFECT_ANY], "");
	assert_int_equal(engine_effect_named("", &q), GPUQ_OK);
	assert_int_equal(q, QUEUE_EFFECT_ANY);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(policy_effect_named(names[i], &e), GPUQ_OK);
		assert_string_equal(POLICY_EFFECT_NAMES[e], names[i]);
		assert_int_equal(engine_effect_named(names[i], &q), GPUQ_OK);
		assert_int_equal(q, core[i]);
	}
	assert_null(POLICY_EFFECT_NAMES[POLICY_EFFECT_NO_EXECUTE + 1]);
	e = POLICY_EFFECT_NO_SCHEDULE;
	q = QUEUE_EFFECT_NO_SCHEDULE;
	assert_int_equal(policy_effect_named("noexecute", &e), GPUQ_EINVAL); /* case counts */
	assert_int_equal(policy_effect_named("Sometimes", &e), GPUQ_EINVAL);
	assert_int_equal(engine_effect_named("Sometimes", &q), GPUQ_EINVAL);
	assert_int_equal(e, POLICY_EFFECT_NO_SCHEDULE); /* untouched */
	assert_int_equal(q, QUEUE_EFFECT_NO_SCHEDULE);
}

/* ---- the examples, and lookups on them ---- */

static int examples_setup(void **state)
{
	policy_t *p = NULL;
	gpuq_diag_t d = {{0}};
	int rc = policy_load_dir("examples/policy", NULL, &p, &d);

	if (rc)
		print_error("examples/policy: %s\n", d.msg);
	*state = p;
	return rc;
}

static int examples_teardown(void **state)
{
	policy_unref(*state);
	return 0;
}

static int64_t units(const quota_qty_t *q)
{
	return quota_qty_units(q);
}

static void examples_counts(void **state)
{
	const policy_t *p = *state;

	assert_int_equal(policy_namespace_count(p), 3);
	assert_int_equal(policy_priorityclass_count(p), 3);
	assert_int_equal(policy_flavor_count(p), 3);
	assert_int_equal(policy_cq_count(p), 2);
	assert_int_equal(policy_cohort_count(p), 1);
	assert_int_equal(policy_lq_count(p), 4);
	assert_int_equal(policy_limitrange_count(p), 3);
	assert_int_equal(policy_quota_count(p), 3);
	assert_int_equal(policy_claimtemplate_count(p), 2);
	/* declaration order */
	assert_string_equal(policy_cq_at(p, 0)->name, "training");
	assert_int_equal(policy_cq_at(p, 1)->index, 1);
	assert_string_equal(policy_flavor_at(p, 2)->name, "l4");
	assert_string_equal(policy_priorityclass_at(p, 2)->name, "inference");
	assert_string_equal(policy_lq_at(p, 3)->name, "inference");
	assert_null(policy_cq_at(p, 2));
	assert_null(policy_namespace_at(p, 3));
	assert_true(strstr(policy_cq_at(p, 0)->origin.file, "30-queues.yaml") != NULL);
	assert_int_equal(policy_cq_at(p, 0)->origin.doc, 2);
	assert_true(policy_fingerprint(p) != 0);
}

static void examples_lookups(void **state)
{
	const policy_t *p = *state;
	const policy_namespace_t *ns = policy_namespace_find(p, "team-c");
	const policy_priorityclass_t *pc;
	const policy_lq_t *lq;
	const policy_flavor_t *f;
	const policy_claimtemplate_t *t;

	assert_non_null(ns);
	assert_true(ns->declared);
	assert_string_equal(policy_labels_get(&ns->labels, "gpuq.dev/tenant"), "team-c");
	assert_string_equal(policy_labels_get(&ns->labels, "kubernetes.io/metadata.name"),
			    "team-c");
	assert_int_equal(ns->n_limitranges, 1);
	assert_int_equal(ns->limitranges[0]->items[0].type, QUOTA_LR_CONTAINER);
	assert_int_equal(ns->limitranges[0]->items[1].type, QUOTA_LR_POD);
	assert_int_equal(
	    units(quota_reslist_get(&ns->limitranges[0]->items[1].max, "nvidia.com/mig-1g.10gb")),
	    7);
	assert_int_equal(
	    quota_qty_milli(quota_reslist_get(&ns->limitranges[0]->items[0].def_request, "cpu")),
	    250);
	assert_int_equal(ns->n_quotas, 1);
	assert_int_equal(units(quota_reslist_get(&ns->quotas[0]->hard, "requests.nvidia.com/gpu")),
			 8);
	assert_null(policy_namespace_find(p, "kube-system"));

	pc = policy_priorityclass_default(p);
	assert_non_null(pc);
	assert_string_equal(pc->name, "training-low");
	pc = policy_priorityclass_find(p, "inference");
	assert_int_equal(pc->value, 10000);
	assert_false(pc->global_default);
	assert_null(policy_priorityclass_find(p, "nope"));

	lq = policy_lq_find(p, "team-a", "inference");
	assert_non_null(lq);
	assert_string_equal(lq->cq->name, "inference");
	assert_int_equal(lq->fair_weight_milli, 500);
	assert_int_equal(policy_lq_find(p, "team-b", "default")->cq->index, 0);
	assert_null(policy_lq_find(p, "team-c", "inference"));
	assert_null(policy_lq_find(p, "team-x", "default"));

	f = policy_flavor_find(p, "h100-80gb");
	assert_string_equal(policy_labels_get(&f->node_labels, "nvidia.com/gpu.product"),
			    "NVIDIA-H100-80GB-HBM3");
	assert_int_equal(f->n_taints, 1);
	assert_int_equal(f->n_tolerations, 1);
	assert_true(policy_toleration_tolerates(&f->tolerations[0], &f->taints[0]));
	assert_true(f->has_price); /* gpuq.dev/price-per-hour: "2.50" */
	assert_true(f->price_per_hour == 2.5);
	assert_false(policy_flavor_find(p, "a100-mig")->has_price);
	assert_null(policy_flavor_find(p, "v100"));

	t = policy_claimtemplate_find(p, "team-c", "small-gpu");
	assert_non_null(t);
	assert_int_equal(t->n_requests, 1);
	assert_true(t->requests[0].first_available);
	assert_int_equal(t->requests[0].n_choices, 2);
	assert_string_equal(t->requests[0].choices[0].device_class, "mig.nvidia.com");
	assert_int_equal(t->requests[0].choices[0].count, 1);
	t = policy_claimtemplate_find(p, "team-a", "one-gpu");
	assert_false(t->requests[0].first_available);
	assert_string_equal(t->requests[0].choices[0].device_class, "gpu.nvidia.com");
	assert_null(policy_claimtemplate_find(p, "team-a", "small-gpu"));
}

static void examples_queues(void **state)
{
	const policy_t *p = *state;
	const policy_cq_t *tr = policy_cq_find(p, "training"),
			  *inf = policy_cq_find(p, "inference");
	const policy_cohort_t *co = policy_cohort_find(p, "gpu-pool");
	const policy_res_quota_t *q;
	int64_t fit;

	assert_non_null(tr);
	assert_non_null(inf);
	assert_null(policy_cq_find(p, "nope"));
	assert_true(co->declared);
	assert_int_equal(co->n_members, 2);
	assert_ptr_equal(co->members[0], tr);
	assert_ptr_equal(tr->cohort, co);
	assert_int_equal(tr->fair_weight_milli, 2000);
	assert_int_equal(tr->queueing, POLICY_QUEUEING_BEST_EFFORT_FIFO);
	assert_int_equal(inf->queueing, POLICY_QUEUEING_STRICT_FIFO);
	assert_int_equal(tr->preemption.within_cluster_queue, POLICY_PREEMPT_LOWER_PRIORITY);
	assert_int_equal(tr->preemption.reclaim_within_cohort, POLICY_PREEMPT_ANY);
	assert_int_equal(tr->preemption.borrow_within_cohort, POLICY_PREEMPT_LOWER_PRIORITY);
	assert_true(tr->preemption.has_max_priority_threshold);
	assert_int_equal(tr->preemption.max_priority_threshold, 100);
	assert_int_equal(inf->preemption.within_cluster_queue,
			 POLICY_PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY);
	assert_int_equal(tr->fungibility.when_can_borrow, POLICY_FUNGIBLE_STOP);
	assert_int_equal(tr->fungibility.when_can_preempt, POLICY_FUNGIBLE_TRY_NEXT_FLAVOR);
	assert_ptr_equal(inf->groups[0].flavors[1].flavor, policy_flavor_find(p, "h100-80gb"));

	/* namespaceSelector */
	assert_true(policy_cq_selects(p, tr, "team-a"));
	assert_false(policy_cq_selects(p, tr, "team-c"));
	assert_true(policy_cq_selects(p, inf, "team-c"));
	assert_false(policy_cq_selects(p, inf, "kube-system"));
	assert_true(policy_namespace_managed(p, "team-b"));
	assert_false(policy_namespace_managed(p, "default"));

	/* groups and quotas */
	assert_ptr_equal(policy_cq_group(inf, "nvidia.com/mig-1g.10gb"), &inf->groups[1]);
	assert_null(policy_cq_group(tr, "nvidia.com/mig-1g.10gb"));
	q = policy_cq_quota(tr, "h100-80gb", "nvidia.com/gpu");
	assert_int_equal(units(&q->nominal), 32);
	assert_true(q->has_lending_limit);
	assert_int_equal(units(&q->lending_limit), 16);
	assert_false(q->has_borrowing_limit);
	assert_null(policy_cq_quota(tr, "l4", "nvidia.com/gpu"));

	/* the most one workload can ever get */
	assert_int_equal(policy_cq_max_fit(inf, "h100-80gb", "nvidia.com/gpu", &fit), GPUQ_OK);
	assert_int_equal(fit, 8); /* 0 nominal + min(8, 16 lent by training) */
	assert_int_equal(policy_cq_max_fit(inf, "h100-80gb", "memory", &fit), GPUQ_OK);
	assert_int_equal(fit, 1LL << 40); /* min(1Ti, 4Ti) */
	assert_int_equal(policy_cq_max_fit(tr, "h100-80gb", "nvidia.com/gpu", &fit), GPUQ_OK);
	assert_int_equal(fit, 32); /* inference lends no H100 */
	assert_int_equal(policy_cq_max_fit(inf, "l4", "nvidia.com/gpu", &fit), GPUQ_OK);
	assert_int_equal(fit, 16);
	assert_int_equal(policy_cq_max_fit(tr, "l4", "nvidia.com/gpu", &fit), GPUQ_ENOTFOUND);
}

/* max_fit with three CQs: unlimited borrowing, lendingLimit, no cohort. */
static void max_fit_cohort(void **state)
{
	static const char *const text =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n"
	    "spec:\n  cohort: pool\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: b}\n"
	    "spec:\n  cohortName: pool\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 10, "
	    "lendingLimit: 3, borrowingLimit: 2}]}]\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: c}\n"
	    "spec:\n  cohortName: pool\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 5}]}]\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: d}\n"
	    "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
	    "  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 7}]}]\n";
	policy_t *p;
	gpuq_diag_t d;
	int64_t fit;

	(void)state;
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_OK);
	/* a: 4 + (3 lent by b + 5 lent by c), no borrowing limit */
	assert_int_equal(policy_cq_max_fit(policy_cq_find(p, "a"), "f", "nvidia.com/gpu", &fit), 0);
	assert_int_equal(fit, 12);
	/* b: 10 + min(2, 4 + 5) */
	assert_int_equal(policy_cq_max_fit(policy_cq_find(p, "b"), "f", "nvidia.com/gpu", &fit), 0);
	assert_int_equal(fit, 12);
	/* c: 5 + 4 + 3 */
	assert_int_equal(policy_cq_max_fit(policy_cq_find(p, "c"), "f", "nvidia.com/gpu", &fit), 0);
	assert_int_equal(fit, 12);
	/* d: alone */
	assert_int_equal(policy_cq_max_fit(policy_cq_find(p, "d"), "f", "nvidia.com/gpu", &fit), 0);
	assert_int_equal(fit, 7);
	/* the implied cohort */
	assert_int_equal(policy_cohort_count(p), 1);
	assert_false(policy_cohort_at(p, 0)->declared);
	assert_int_equal(policy_cohort_at(p, 0)->n_members, 3);
	assert_int_equal(policy_cohort_at(p, 0)->fair_weight_milli, 1000);
	/* {} selects every namespace, known or not */
	assert_true(policy_namespace_managed(p, "anything"));
	assert_false(policy_cq_selects(p, policy_cq_find(p, "a"), "anything"));
	policy_unref(p);
}

/* flavorFungibility.preference, with Kueue's rule that it needs both
 * searches set to TryNextFlavor. */
static void fungibility_preference(void **state)
{
	static const char *const head =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
	    "spec:\n  flavorFungibility: {%s}\n  resourceGroups:\n"
	    "  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]\n";
	char text[1024];
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	snprintf(text, sizeof(text), head,
		 "whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, "
		 "preference: PreemptionOverBorrowing");
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_OK);
	assert_int_equal(policy_cq_find(p, "cq")->fungibility.preference, POLICY_PREFER_PREEMPTION);
	policy_unref(p);
	snprintf(text, sizeof(text), head, "whenCanBorrow: TryNextFlavor");
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_OK);
	assert_int_equal(policy_cq_find(p, "cq")->fungibility.preference, POLICY_PREFER_BORROWING);
	policy_unref(p);
	snprintf(text, sizeof(text), head, "preference: BorrowingOverPreemption");
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "spec.flavorFungibility.preference: "
				      "\"BorrowingOverPreemption\" can only be set when both"));
	snprintf(text, sizeof(text), head, "preference: Sometimes");
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "preference"));
}

/* spec.admissionScope.admissionMode: UsageBasedAdmissionFairSharing turns
 * admission fair sharing on; NoAdmissionFairSharing, null or no field leave
 * it off; in Kueue's v1beta1 and v1beta2 and gpuq's group alike. The
 * LocalQueue's fairSharing.weight is its weight in it. */
static void admission_scope(void **state)
{
	static const char *const head =
	    "apiVersion: %s\nkind: ClusterQueue\nmetadata: {name: cq}\n"
	    "spec:\n  namespaceSelector: {}\n%s"
	    "---\napiVersion: %s\nkind: LocalQueue\nmetadata: {namespace: a, name: lq}\n"
	    "spec: {clusterQueue: cq, fairSharing: {weight: \"2.5\"}}\n";
	static const struct {
		const char *field; /* the spec line, "" for none */
		bool afs;	   /* expected */
	} cases[] = {
	    {"  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n", true},
	    {"  admissionScope: {admissionMode: NoAdmissionFairSharing}\n", false},
	    {"  admissionScope: null\n", false},
	    {"", false},
	};
	static const char *const apis[] = {"gpuq.dev/v1beta1", "kueue.x-k8s.io/v1beta1",
					   "kueue.x-k8s.io/v1beta2"};
	char text[1024];
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	for (size_t a = 0; a < sizeof(apis) / sizeof(apis[0]); a++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			snprintf(text, sizeof(text), head, apis[a], cases[i].field, apis[a]);
			if (load_str(text, NULL, &p, &d) != GPUQ_OK)
				fail_msg("%s %s: %s", apis[a], cases[i].field, d.msg);
			assert_int_equal(policy_cq_find(p, "cq")->admission_fair_sharing,
					 cases[i].afs);
			assert_int_equal(policy_lq_find(p, "a", "lq")->fair_weight_milli, 2500);
			policy_unref(p);
		}
	}
}

/* Fields the examples do not use: v1beta1 claims, firstAvailable, fungibility,
 * stop policies, cohort weights, tolerationSeconds, system priorities. */
static void decode_details(void **state)
{
	static const char *const text =
	    "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaimTemplate\n"
	    "metadata: {namespace: a, name: flat}\nspec:\n  spec:\n    devices:\n      requests:\n"
	    "      - {name: all, deviceClassName: gpu.nvidia.com, allocationMode: All}\n"
	    "      - {name: two, deviceClassName: gpu.nvidia.com, count: 2, selectors: [{cel: "
	    "{expression: x}}]}\n"
	    "      - name: either\n        firstAvailable:\n"
	    "        - {name: big, deviceClassName: gpu.nvidia.com, count: 4}\n"
	    "        - {name: small, deviceClassName: mig.nvidia.com, allocationMode: All}\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: spot}\n"
	    "spec:\n  tolerations:\n  - {key: spot, operator: Exists, effect: NoExecute, "
	    "tolerationSeconds: 30}\n  - {operator: Exists}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: pool}\n"
	    "spec: {fairSharing: {weight: \"2.5\"}}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n"
	    "spec:\n  cohortName: pool\n  stopPolicy: HoldAndDrain\n"
	    "  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: MayStopSearch}\n"
	    "  fairSharing: {weight: 0}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
	    "metadata: {namespace: a, name: lq}\nspec: {clusterQueue: q, stopPolicy: Hold}\n"
	    "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
	    "metadata: {name: system-node-critical}\nvalue: 2000001000\npreemptionPolicy: Never\n";
	const policy_claimtemplate_t *t;
	const policy_flavor_t *f;
	const policy_cq_t *cq;
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_OK);
	t = policy_claimtemplate_find(p, "a", "flat");
	assert_int_equal(t->n_requests, 3);
	assert_int_equal(t->requests[0].choices[0].mode, POLICY_ALLOC_ALL);
	assert_int_equal(t->requests[0].choices[0].count, 0);
	assert_int_equal(t->requests[1].choices[0].count, 2);
	assert_string_equal(t->requests[1].choices[0].name, "");
	assert_true(t->requests[2].first_available);
	assert_string_equal(t->requests[2].choices[1].name, "small");
	assert_int_equal(t->requests[2].choices[0].count, 4);
	f = policy_flavor_find(p, "spot");
	assert_int_equal(f->n_tolerations, 2);
	assert_true(f->tolerations[0].has_seconds);
	assert_int_equal(f->tolerations[0].seconds, 30);
	assert_int_equal(f->tolerations[0].effect, POLICY_EFFECT_NO_EXECUTE);
	assert_string_equal(f->tolerations[1].key, "");
	assert_int_equal(f->tolerations[1].effect, POLICY_EFFECT_ANY);
	assert_int_equal(policy_cohort_find(p, "pool")->fair_weight_milli, 2500);
	cq = policy_cq_find(p, "q");
	assert_int_equal(cq->stop, POLICY_STOP_HOLD_AND_DRAIN);
	assert_int_equal(cq->fungibility.when_can_borrow, POLICY_FUNGIBLE_TRY_NEXT_FLAVOR);
	assert_int_equal(cq->fungibility.when_can_preempt, POLICY_FUNGIBLE_STOP);
	assert_int_equal(cq->fair_weight_milli, 0);
	assert_int_equal(cq->n_groups, 0);
	assert_false(cq->namespace_selector.present);
	assert_false(policy_namespace_managed(p, "a"));
	assert_int_equal(policy_lq_find(p, "a", "lq")->stop, POLICY_STOP_HOLD);
	assert_int_equal(policy_priorityclass_find(p, "system-node-critical")->value, 2000001000);
	assert_true(policy_priorityclass_find(p, "system-node-critical")->preempt_never);
	assert_null(policy_priorityclass_default(p));
	policy_unref(p);
}

static void implied_namespaces(void **state)
{
	policy_t *p;
	gpuq_diag_t d;
	const policy_namespace_t *ns;

	(void)state;
	assert_int_equal(
	    load_str("apiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: ml, name: q}\n"
		     "spec: {hard: {requests.nvidia.com/gpu: 2}}\n---\napiVersion: v1\n"
		     "kind: Namespace\nmetadata: {name: ml, labels: {team: x}}\n"
		     "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: "
		     "c}\nspec:\n  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "
		     "ml}}\n",
		     NULL, &p, &d),
	    GPUQ_OK);
	ns = policy_namespace_find(p, "ml");
	assert_true(ns->declared);
	assert_string_equal(policy_labels_get(&ns->labels, "team"), "x");
	assert_int_equal(ns->n_quotas, 1);
	assert_true(policy_namespace_managed(p, "ml"));
	assert_false(policy_namespace_managed(p, "other"));
	assert_int_equal(ns->origin.doc, 2);
	policy_unref(p);
}

static void refcounts(void **state)
{
	policy_t *p, *q;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(policy_load_dir("examples/policy", NULL, &p, &d), GPUQ_OK);
	q = policy_ref(p);
	assert_ptr_equal(p, q);
	policy_unref(p);
	/* still alive through q */
	assert_string_equal(policy_cq_find(q, "training")->name, "training");
	policy_unref(q);
	assert_null(policy_ref(NULL));
	policy_unref(NULL);
}

/* Readers on several threads take and drop references and read while the
 * owner drops its own: the last one out frees (ASan/valgrind check). */
static void *reader(void *arg)
{
	policy_t *p = arg;

	for (int i = 0; i < 20000; i++) {
		policy_t *r = policy_ref(p);

		if (!policy_lq_find(r, "team-a", "default") ||
		    !policy_namespace_managed(r, "team-a"))
			abort();
		policy_unref(r);
	}
	policy_unref(p); /* the reference the owner handed over */
	return NULL;
}

static void refcounts_threads(void **state)
{
	pthread_t t[4];
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(policy_load_dir("examples/policy", NULL, &p, &d), GPUQ_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, policy_ref(p)), 0);
	policy_unref(p); /* a reload swapped it out */
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

static void frozen_after_finish(void **state)
{
	policy_t *p;
	gpuq_diag_t d;
	json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			      "metadata", "name", "late");

	(void)state;
	assert_int_equal(load_str("", NULL, &p, &d), GPUQ_OK);
	assert_int_equal(policy_add_json(p, o, &d), GPUQ_EINVAL);
	assert_string_equal(d.msg, "policy is finished; it cannot change");
	assert_int_equal(policy_finish(p, &d), GPUQ_EINVAL);
	assert_null(policy_namespace_find(p, "late"));
	json_decref(o);
	policy_unref(p);
}

static void add_json_direct(void **state)
{
	policy_t *p;
	gpuq_diag_t d = {{0}};
	json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:i}", "apiVersion", "scheduling.k8s.io/v1",
			      "kind", "PriorityClass", "metadata", "name", "x", "value", 7);

	(void)state;
	assert_int_equal(policy_create(NULL, &p), GPUQ_OK);
	assert_int_equal(policy_add_json(p, o, &d), GPUQ_OK);
	assert_int_equal(policy_add_json(p, o, &d), GPUQ_EEXIST);
	assert_string_equal(d.msg, "PriorityClass \"x\": duplicate name");
	assert_int_equal(policy_finish(p, &d), GPUQ_OK);
	assert_int_equal(policy_priorityclass_find(p, "x")->value, 7);
	assert_null(policy_priorityclass_find(p, "x")->origin.file);
	json_decref(o);
	policy_unref(p);
}

/* ---- the shared field decoder (policy_json.h; also the Trace's) ---- */

/* call refuses with want_rc and exactly want_msg in diag. */
#define ASSERT_REFUSED(call, want_rc, want_msg)                                                    \
	do {                                                                                       \
		assert_int_equal((call), (want_rc));                                               \
		assert_string_equal(diag.msg, (want_msg));                                         \
	} while (0)

static void field_decoder(void **state)
{
	static const char *const allowed[] = {"n", "s", "b", "e", "t", "l", NULL};
	static const char *const names[] = {"", "Equal", "Exists", NULL};
	json_t *doc = json_loads("{\"n\": 5, \"s\": \"abcd\", \"b\": \"yes\", \"e\": \"x\", "
				 "\"t\": \"1.5s\", \"l\": [1, 2, 3], \"z\": null}",
				 0, NULL);
	gpuq_diag_t diag = {{0}};
	policy_jdec_t d;
	const json_t *v = NULL;
	const char *str = NULL;
	int64_t n = 0;
	bool b = false;
	int e = -1;
	size_t old;

	(void)state;
	assert_non_null(doc);
	/* no object named: messages start with the path, or the sentence at the root */
	policy_jdec_init(&d, &diag, NULL);
	ASSERT_REFUSED(policy_jdec_fail(&d, GPUQ_EINVAL, "at the root"), GPUQ_EINVAL,
		       "at the root");
	ASSERT_REFUSED(policy_jdec_member(&d, doc, "z", true, &v), GPUQ_EINVAL, "z: required");
	old = policy_jdec_key(&d, "spec");
	ASSERT_REFUSED(policy_jdec_keys(&d, doc, allowed, NULL), GPUQ_EINVAL,
		       "spec.z: unknown field");
	ASSERT_REFUSED(policy_jdec_keys(&d, json_object_get(doc, "l"), allowed, NULL), GPUQ_EINVAL,
		       "spec: must be a mapping, not a list");
	ASSERT_REFUSED(policy_jdec_int(&d, doc, "n", true, 1, 3, &n), GPUQ_ERANGE,
		       "spec.n: 5 is out of range [1, 3]");
	ASSERT_REFUSED(policy_jdec_int(&d, doc, "s", true, 1, 3, &n), GPUQ_EINVAL,
		       "spec.s: must be an integer, not \"abcd\"");
	ASSERT_REFUSED(policy_jdec_str(&d, doc, "s", true, 3, &str), GPUQ_EINVAL,
		       "spec.s: 4 bytes long, more than 3");
	assert_int_equal(policy_jdec_str(&d, doc, "s", true, 4, &str), GPUQ_OK);
	assert_string_equal(str, "abcd");
	ASSERT_REFUSED(policy_jdec_bool(&d, doc, "b", &b), GPUQ_EINVAL,
		       "spec.b: must be true or false, not \"yes\"");
	ASSERT_REFUSED(policy_jdec_enum(&d, doc, "e", names, &e), GPUQ_EINVAL,
		       "spec.e: unknown value \"x\" (want \"\", Equal or Exists)");
	ASSERT_REFUSED(policy_jdec_arr(&d, doc, "l", false, 2, &v), GPUQ_ELIMIT,
		       "spec.l: 3 entries, more than the 2 allowed");
	ASSERT_REFUSED(policy_jdec_obj(&d, doc, "l", false, &v), GPUQ_EINVAL,
		       "spec.l: must be a mapping, not a list");
	/* absent or null: GPUQ_OK, out untouched */
	n = 42;
	assert_int_equal(policy_jdec_int(&d, doc, "z", false, 1, 3, &n), GPUQ_OK);
	assert_int_equal(n, 42);
	assert_int_equal(policy_jdec_duration(&d, doc, "t", true, &n), GPUQ_OK);
	assert_int_equal(n, 1500);
	ASSERT_REFUSED(policy_jdec_duration(&d, doc, "b", true, &n), GPUQ_EINVAL,
		       "spec.b: bad duration \"yes\" (want e.g. 250, \"250ms\", \"1.5s\", \"2m\", "
		       "\"1h\")");
	ASSERT_REFUSED(policy_jdec_duration(&d, doc, "l", true, &n), GPUQ_EINVAL,
		       "spec.l: must be milliseconds or a string like \"1.5s\", not a list");
	json_object_set_new(doc, "t", json_integer(-1));
	ASSERT_REFUSED(policy_jdec_duration(&d, doc, "t", true, &n), GPUQ_ERANGE,
		       "spec.t: -1 ms is outside 0..10 years");
	json_object_set_new(doc, "t", json_integer(GPUQ_DURATION_MAX_MS));
	assert_int_equal(policy_jdec_duration(&d, doc, "t", true, &n), GPUQ_OK);
	assert_int_equal(n, GPUQ_DURATION_MAX_MS);
	/* an object named comes first; the path pops back */
	policy_jdec_init(&d, &diag, "Trace \"t\"");
	old = policy_jdec_idx(&d, 3);
	ASSERT_REFUSED(policy_jdec_fail_at(&d, "x", GPUQ_EINVAL, "bad"), GPUQ_EINVAL,
		       "Trace \"t\": [3].x: bad");
	policy_jdec_pop(&d, old);
	assert_int_equal(d.plen, 0);
	ASSERT_REFUSED(policy_jdec_fail(&d, GPUQ_EINVAL, "whole"), GPUQ_EINVAL,
		       "Trace \"t\": whole");
	json_decref(doc);
}

/* ---- directories ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void load_dir_all_or_nothing(void **state)
{
	char dir[] = "/tmp/gpuq-policy-XXXXXX";
	policy_t *p;
	gpuq_diag_t d;
	uint64_t f1, f2, f3;
	char path[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_file(dir, "a.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n");
	write_file(dir, "b.json",
		   "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": "
		   "\"b\"}}");
	write_file(dir, ".hidden.yaml", "garbage: [\n");
	write_file(dir, "notes.txt", "garbage: [\n");
	assert_int_equal(policy_load_dir(dir, NULL, &p, &d), GPUQ_OK);
	assert_int_equal(policy_namespace_count(p), 2);
	assert_string_equal(policy_namespace_at(p, 1)->name, "b");
	assert_int_equal(policy_dir_fingerprint(dir, &f1, &d), GPUQ_OK);
	assert_true(f1 == policy_fingerprint(p));
	policy_unref(p);

	/* unchanged dir, same fingerprint; a new file changes it */
	assert_int_equal(policy_dir_fingerprint(dir, &f2, &d), GPUQ_OK);
	assert_true(f1 == f2);
	write_file(dir, "c.yml",
		   "apiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n---\n"
		   "apiVersion: v1\nkind: Namespace\nmetadata: {name: C}\n");
	assert_int_equal(policy_dir_fingerprint(dir, &f3, &d), GPUQ_OK);
	assert_true(f3 != f1);
	/* one bad file: nothing loads, and the message names the file */
	assert_int_equal(policy_load_dir(dir, NULL, &p, &d), GPUQ_EINVAL);
	assert_null(p);
	snprintf(path, sizeof(path),
		 "%s/c.yml: document 2: Namespace: metadata.name: invalid name \"C\" (want a "
		 "DNS-1123 label)",
		 dir);
	assert_string_equal(d.msg, path);

	snprintf(path, sizeof(path), "%s/a.yaml", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/b.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/c.yml", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/.hidden.yaml", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);

	assert_int_equal(policy_load_dir("/nonexistent/gpuq", NULL, &p, &d), GPUQ_EIO);
	assert_string_equal(d.msg, "/nonexistent/gpuq: cannot open directory: No such file or "
				   "directory");
	assert_int_equal(policy_dir_fingerprint("/nonexistent/gpuq", &f1, &d), GPUQ_EIO);
}

/* policy_load_files: files in the order given, all or nothing, one policy;
 * skip_workloads lists Jobs and Pods instead of refusing them, and only
 * those. */
static void load_files_and_workloads(void **state)
{
	static const char job[] = "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: j-}\n";
	char dir[] = "/tmp/gpuq-policy-XXXXXX";
	char a[512], b[512], msg[1024];
	const char *paths[2] = {a, b};
	policy_opts_t skip = {.skip_workloads = true};
	const policy_skipped_t *sk;
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/queues.yaml", dir);
	snprintf(b, sizeof(b), "%s/flavor.txt", dir); /* any name */
	write_file(dir, "queues.yaml",
		   "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
		   "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n"
		   "    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]\n"
		   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\n");
	write_file(dir, "flavor.txt",
		   "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
		   "metadata: {name: f}\n---\n");
	/* the flavor is in the second file: checked across both */
	assert_int_equal(policy_load_files(paths, 2, &skip, &p, &d), GPUQ_OK);
	assert_int_equal(policy_cq_count(p), 1);
	assert_int_equal(policy_flavor_count(p), 1);
	assert_int_equal(policy_skipped_count(p), 1);
	sk = policy_skipped_at(p, 0);
	assert_string_equal(sk->kind, "Pod");
	assert_string_equal(sk->api_version, "v1");
	assert_string_equal(sk->origin.file, a);
	assert_int_equal(sk->origin.doc, 2);
	assert_null(policy_skipped_at(p, 1));
	policy_unref(p);
	/* without the option the Pod is refused, as --policy-dir refuses it */
	assert_int_equal(policy_load_files(paths, 2, NULL, &p, &d), GPUQ_EINVAL);
	assert_null(p);
	snprintf(
	    msg, sizeof(msg),
	    "%s: document 2: kind \"Pod\" (apiVersion \"v1\") is not a policy object; gpuq "
	    "reads Namespace, LimitRange, ResourceQuota, PriorityClass, ResourceFlavor, "
	    "Topology, ClusterQueue, LocalQueue, Cohort, ResourceClaimTemplate and RuntimeClass",
	    a);
	assert_string_equal(d.msg, msg);
	/* the first file alone lacks its flavor */
	assert_int_equal(policy_load_files(paths, 1, &skip, &p, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "ResourceFlavor \"f\" not found"));
	/* only batch/v1 Jobs and v1 Pods are workloads */
	write_file(dir, "flavor.txt", job);
	assert_int_equal(policy_load_files(paths + 1, 1, &skip, &p, &d), GPUQ_OK);
	assert_int_equal(policy_skipped_count(p), 1);
	assert_string_equal(policy_skipped_at(p, 0)->kind, "Job");
	policy_unref(p);
	write_file(dir, "flavor.txt", "apiVersion: batch/v2\nkind: Job\nmetadata: {name: j}\n");
	assert_int_equal(policy_load_files(paths + 1, 1, &skip, &p, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "kind \"Job\" (apiVersion \"batch/v2\") is not a policy"));
	assert_int_equal(policy_load_files(paths, 0, NULL, &p, &d), GPUQ_EINVAL);
	assert_string_equal(d.msg, "0 manifest files (want 1..1000)");
	unlink(a);
	assert_int_equal(policy_load_files(paths, 1, NULL, &p, &d), GPUQ_EIO);
	assert_non_null(strstr(d.msg, "cannot open"));
	unlink(b);
	assert_int_equal(rmdir(dir), 0);
}

/* price_lenient (the controller's snapshot): a bad price annotation keeps
 * the flavor, unpriced, with the refusal to log; a good one prices it. */
static void price_lenient(void **state)
{
	static const char text[] =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: bad, "
	    "annotations: "
	    "{gpuq.dev/price-per-hour: \"two\"}}\n---\napiVersion: gpuq.dev/v1beta1\nkind: "
	    "ResourceFlavor\nmetadata: {name: good, annotations: {gpuq.dev/price-per-hour: "
	    "\"0.75\"}}\n";
	policy_opts_t lenient = {.price_lenient = true};
	const policy_flavor_t *f;
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_EINVAL); /* refused by default */
	assert_non_null(strstr(d.msg, "price \"two\": not a decimal number"));
	assert_int_equal(load_str(text, &lenient, &p, &d), GPUQ_OK);
	f = policy_flavor_find(p, "bad");
	assert_non_null(f);
	assert_false(f->has_price);
	assert_string_equal(
	    f->price_error,
	    "ResourceFlavor \"bad\": metadata.annotations[\"gpuq.dev/price-per-hour\"]: "
	    "price \"two\": not a decimal number (want e.g. \"2.50\")");
	f = policy_flavor_find(p, "good");
	assert_true(f->has_price && f->price_per_hour == 0.75);
	assert_null(f->price_error);
	policy_unref(p);
}

/* The workload collections a snapshot names as watched: none declared (a
 * policy dir) is every one; declared, only those named, copied at creation
 * (the caller's strings may go); past POLICY_WATCHED_MAX refused. */
static void watched_collections(void **state)
{
	char group[32] = "jobset.x-k8s.io", resource[32] = "jobsets";
	policy_api_t apis[POLICY_WATCHED_MAX + 1] = {
	    {"batch", "jobs"}, {"", "pods"}, {group, resource}};
	policy_opts_t o = {.watch_declared = true, .watched = apis, .n_watched = 3};
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(load_str("", NULL, &p, &d), GPUQ_OK);
	assert_true(policy_watch_has(p, "ray.io", "rayjobs"));
	policy_unref(p);

	assert_int_equal(load_str("", &o, &p, &d), GPUQ_OK);
	memset(group, 'x', sizeof(group) - 1);
	memset(resource, 'y', sizeof(resource) - 1);
	assert_true(policy_watch_has(p, "batch", "jobs"));
	assert_true(policy_watch_has(p, "", "pods"));
	assert_true(policy_watch_has(p, NULL, "pods"));
	assert_true(policy_watch_has(p, "jobset.x-k8s.io", "jobsets"));
	assert_false(policy_watch_has(p, "ray.io", "rayjobs"));
	assert_false(policy_watch_has(p, "batch", "pods"));
	policy_unref(p);

	o.n_watched = 0; /* declared, and nothing watched */
	assert_int_equal(load_str("", &o, &p, &d), GPUQ_OK);
	assert_false(policy_watch_has(p, "batch", "jobs"));
	policy_unref(p);

	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
		apis[i] = (policy_api_t){"g", "r"};
	o.n_watched = POLICY_WATCHED_MAX + 1;
	assert_int_equal(policy_create(&o, &p), GPUQ_ELIMIT);
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(caps_enforced),
	    cmocka_unit_test(options),
	    cmocka_unit_test(selectors),
	    cmocka_unit_test(tolerations),
	    cmocka_unit_test(effect_names_one_map),
	    cmocka_unit_test_setup_teardown(examples_counts, examples_setup, examples_teardown),
	    cmocka_unit_test_setup_teardown(examples_lookups, examples_setup, examples_teardown),
	    cmocka_unit_test_setup_teardown(examples_queues, examples_setup, examples_teardown),
	    cmocka_unit_test(max_fit_cohort),
	    cmocka_unit_test(decode_details),
	    cmocka_unit_test(fungibility_preference),
	    cmocka_unit_test(admission_scope),
	    cmocka_unit_test(implied_namespaces),
	    cmocka_unit_test(refcounts),
	    cmocka_unit_test(refcounts_threads),
	    cmocka_unit_test(frozen_after_finish),
	    cmocka_unit_test(add_json_direct),
	    cmocka_unit_test(field_decoder),
	    cmocka_unit_test(load_dir_all_or_nothing),
	    cmocka_unit_test(load_files_and_workloads),
	    cmocka_unit_test(price_lenient),
	    cmocka_unit_test(watched_collections),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}

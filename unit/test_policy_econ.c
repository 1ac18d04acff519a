/* gpuq's economics fields (docs/economics.md) through the policy decoder
 * and the engine: spec.budget of ClusterQueues and LocalQueues,
 * spec.minRuntime and spec.idleReclaim of ClusterQueues, the PriorityClass
 * annotation gpuq.dev/min-runtime; every refusal's exact words; and what
 * engine_core_build puts into the core. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "unit/policy_fixtures.h"

#define HEAD                                                                                       \
	"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: h100\n"            \
	"  annotations: {gpuq.dev/price-per-hour: \"2.50\"}\n---\n"
#define CQ(extra)                                                                                  \
	"apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"          \
	"  namespaceSelector: {}\n"                                                                \
	"  preemption: {withinClusterQueue: LowerPriority}\n"                                      \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"                              \
	"    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: "             \
	"8}]}]\n" extra "---\n"
#define LQ(ns, name, extra)                                                                        \
	"apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: " name                   \
	", namespace: " ns "}\nspec:\n  clusterQueue: cq\n" extra "---\n"

static const char GOOD[] = HEAD CQ(
    "  minRuntime: 10m\n"
    "  maxExecutionTime: 8h\n"
    "  starvationLimit: 20m\n"
    "  idleReclaim: {utilizationBelow: 5, for: 30m, action: Preempt}\n"
    "  budget: {gpuHours: 1000, window: 30d, warnAt: 90, action: Lower}\n")
    LQ("team-a", "train", "  budget: {cost: \"2500.50\", action: Hold}\n") LQ("team-a", "dev", "")
	LQ("team-b", "lq",
	   "  budget: {gpuHours: \"12.5\", scope: Namespace}\n") "apiVersion: "
								 "scheduling.k8s.io/v1\nkind: "
								 "PriorityClass\nmetadata:\n"
								 "  name: prod\n  annotations: "
								 "{gpuq.dev/min-runtime: "
								 "45m}\nvalue: 1000\n";

static void decoded(void **state)
{
	policy_t *p;
	gpuq_diag_t d;
	const policy_cq_t *cq;
	const policy_lq_t *lq;

	(void)state;
	if (load_str(GOOD, NULL, &p, &d))
		fail_msg("%s", d.msg);
	cq = policy_cq_find(p, "cq");
	assert_int_equal(cq->min_runtime_ms, 600000);
	assert_int_equal(cq->max_exec_ms, 8 * 3600000);
	assert_int_equal(cq->starvation_ms, 20 * 60000);
	assert_int_equal(cq->idle.action, POLICY_IDLE_PREEMPT);
	assert_true(cq->idle.below_pct == 5.0);
	assert_int_equal(cq->idle.for_ms, 1800000);
	assert_true(cq->budget.present && !cq->budget.cost && cq->budget.limit == 1000.0);
	assert_int_equal(cq->budget.window_days, 30);
	assert_int_equal(cq->budget.warn_pct, 90);
	assert_int_equal(cq->budget.action, POLICY_BUDGET_LOWER);
	lq = policy_lq_find(p, "team-a", "train");
	assert_true(lq->budget.present && lq->budget.cost && lq->budget.limit == 2500.5);
	assert_int_equal(lq->budget.window_days, 0); /* Month */
	assert_int_equal(lq->budget.warn_pct, 80);
	assert_int_equal(lq->budget.action, POLICY_BUDGET_HOLD);
	assert_false(policy_lq_find(p, "team-a", "dev")->budget.present);
	assert_true(policy_lq_find(p, "team-b", "lq")->budget.namespace_scope);
	assert_int_equal(policy_priorityclass_find(p, "prod")->min_runtime_ms, 2700000);
	policy_unref(p);
}

typedef struct {
	const char *text;
	const char *msg; /* the diagnostic, exactly */
} bad_t;

static const bad_t BAD[] = {
    {HEAD CQ("  budget: {window: Month}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget: give exactly one of gpuHours and "
     "cost"},
    {HEAD CQ("  budget: {gpuHours: 1, cost: 1}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget: give exactly one of gpuHours and "
     "cost"},
    {HEAD CQ("  budget: {gpuHours: \"1e3\"}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.gpuHours: \"1e3\" is not a decimal "
     "number (want e.g. \"2500\" or 120.5)"},
    {HEAD CQ("  budget: {gpuHours: -4}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.gpuHours: -4 is outside 0..1e+12"},
    {HEAD CQ("  budget: {gpuHours: 4, window: 2w}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.window: \"2w\": want Month or a "
     "number of days, 1d..366d (e.g. \"30d\")"},
    {HEAD CQ("  budget: {gpuHours: 4, warnAt: 0}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.warnAt: 0 is out of range "
     "[1, 100]"},
    {HEAD CQ("  budget: {gpuHours: 4, action: Stop}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.action: unknown value \"Stop\" "
     "(want Warn, Lower or Hold)"},
    {HEAD CQ("  budget: {gpuHours: 4, scope: Namespace}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.scope: a LocalQueue's budget only "
     "(a ClusterQueue's covers the ClusterQueue)"},
    {HEAD CQ("  budget: {gpuHours: 4, limit: 3}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.budget.limit: unknown field"},
    {HEAD CQ("  minRuntime: 31d\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.minRuntime: bad duration \"31d\" (want "
     "e.g. 250, \"250ms\", \"1.5s\", \"2m\", \"1h\")"},
    {HEAD CQ("  minRuntime: 721h\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.minRuntime: longer than 30 days (720h)"},
    {HEAD CQ("  maxExecutionTime: 90 minutes\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.maxExecutionTime: bad duration \"90 "
     "minutes\" (want e.g. 250, \"250ms\", \"1.5s\", \"2m\", \"1h\")"},
    {HEAD CQ("  maxExecutionTime: 500ms\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.maxExecutionTime: shorter than 1s (leave "
     "it out for no limit)"},
    {HEAD CQ("  maxExecutionTime: 8761h\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.maxExecutionTime: longer than 365 days "
     "(8760h)"},
    {HEAD CQ("  starvationLimit: 500ms\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.starvationLimit: shorter than 1s (leave "
     "it out for no limit)"},
    {HEAD CQ("  starvationLimit: 8761h\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.starvationLimit: longer than 365 days "
     "(8760h)"},
    {HEAD "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: k}\n"
	  "spec: {starvationLimit: 20s}\n",
     "t.yaml: document 2: ClusterQueue \"k\": spec.starvationLimit: a field of gpuq.dev/v1beta1 "
     "only (kueue.x-k8s.io/v1beta2 has no such field); write the object as apiVersion "
     "gpuq.dev/v1beta1"},
    {HEAD "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: k}\n"
	  "spec: {maxExecutionTime: 1h}\n",
     "t.yaml: document 2: ClusterQueue \"k\": spec.maxExecutionTime: a field of gpuq.dev/v1beta1 "
     "only (kueue.x-k8s.io/v1beta2 has no such field); write the object as apiVersion "
     "gpuq.dev/v1beta1"},
    {HEAD CQ("  idleReclaim: {utilizationBelow: 5}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.idleReclaim.for: required"},
    {HEAD CQ("  idleReclaim: {for: 100ms}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.idleReclaim.for: want 1s..720h"},
    {HEAD CQ("  idleReclaim: {for: 1m, utilizationBelow: 101}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.idleReclaim.utilizationBelow: 101 is "
     "outside 0..100"},
    {HEAD CQ("  idleReclaim: {for: 1m, action: Evict}\n"),
     "t.yaml: document 2: ClusterQueue \"cq\": spec.idleReclaim.action: unknown value "
     "\"Evict\" (want Report or Preempt)"},
    {HEAD "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: k}\n"
	  "spec: {budget: {gpuHours: 4}}\n",
     "t.yaml: document 2: ClusterQueue \"k\": spec.budget: a field of gpuq.dev/v1beta1 only "
     "(kueue.x-k8s.io/v1beta2 has no such field); write the object as apiVersion "
     "gpuq.dev/v1beta1"},
    {HEAD CQ("") "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: l, "
		 "namespace: n}\nspec: {clusterQueue: cq, budget: {gpuHours: 4}}\n",
     "t.yaml: document 3: LocalQueue \"n/l\": spec.budget: a field of gpuq.dev/v1beta1 only "
     "(kueue.x-k8s.io/v1beta1 has no such field); write the object as apiVersion "
     "gpuq.dev/v1beta1"},
    {HEAD CQ("") LQ("n", "a", "  budget: {gpuHours: 1, scope: Namespace}\n")
	 LQ("n", "b", "  budget: {gpuHours: 2, scope: Namespace}\n"),
     "t.yaml: document 4: LocalQueue \"n/b\": spec.budget.scope: namespace n has a Namespace "
     "budget already (LocalQueue a, t.yaml: document 3)"},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: p\n"
     "  annotations: {gpuq.dev/min-runtime: soon}\nvalue: 1\n",
     "t.yaml: document 1: PriorityClass \"p\": metadata.annotations[\"gpuq.dev/min-runtime\"]: "
     "bad duration \"soon\" (want e.g. 250, \"250ms\", \"1.5s\", \"2m\", \"1h\")"},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: p\n"
     "  annotations: {gpuq.dev/min-runtime: 10}\nvalue: 1\n",
     "t.yaml: document 1: PriorityClass \"p\": metadata.annotations[\"gpuq.dev/min-runtime\"]: "
     "must be a duration string such as \"10m\", not 10"},
};

static void refusals(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		policy_t *p;
		gpuq_diag_t d;
		int rc = load_str(BAD[i].text, NULL, &p, &d);

		if (rc == GPUQ_OK)
			fail_msg("case %zu accepted", i);
		if (strcmp(d.msg, BAD[i].msg) != 0) {
			print_message("# case %zu:\n#  got  %s\n#  want %s\n", i, d.msg,
				      BAD[i].msg);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* engine_core_build carries all of it into the core. */
static void into_the_core(void **state)
{
	policy_t *p;
	gpuq_diag_t d;
	queue_t *q;
	queue_budget_view_t v;

	(void)state;
	if (load_str(GOOD, NULL, &p, &d))
		fail_msg("%s", d.msg);
	if (engine_core_build(p, NULL, &q, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(queue_budget_count(q), 3);
	assert_int_equal(queue_budget_view(q, 0, &v), GPUQ_OK);
	assert_int_equal(v.scope, QUEUE_BUDGET_CLUSTERQUEUE);
	assert_string_equal(v.name, "cq");
	assert_int_equal(v.window_days, 30);
	assert_int_equal(v.action, QUEUE_BUDGET_LOWER);
	assert_int_equal(queue_budget_view(q, 1, &v), GPUQ_OK);
	assert_int_equal(v.scope, QUEUE_BUDGET_LOCALQUEUE);
	assert_string_equal(v.name, "team-a/train");
	assert_true(v.cost && v.limit == 2500.5);
	assert_int_equal(queue_budget_view(q, 2, &v), GPUQ_OK);
	assert_int_equal(v.scope, QUEUE_BUDGET_NAMESPACE);
	assert_string_equal(v.name, "team-b");
	{ /* the minimum runtimes: the CQ's 10 min, class prod's 45 min */
		queue_request_t r = {"nvidia.com/gpu", 1};
		queue_podset_spec_t ps = {
		    .name = "main", .count = 1, .requests = &r, .n_requests = 1};
		queue_workload_spec_t w = {.namespace_ = "team-a",
					   .name = "a",
					   .uid = "a",
					   .local_queue = "dev",
					   .priority = 1000,
					   .podsets = &ps,
					   .n_podsets = 1};
		queue_workload_spec_t w2 = w;
		queue_result_t res;
		queue_workload_view_t wv;
		queue_wl_t id;

		w2.uid = w2.name = "b";
		w2.priority = 0;
		assert_int_equal(queue_workload_add(q, &w, 0, NULL, NULL), GPUQ_OK);
		assert_int_equal(queue_workload_add(q, &w2, 0, NULL, NULL), GPUQ_OK);
		assert_int_equal(queue_cycle_run(q, 0, &res), GPUQ_OK);
		assert_int_equal(res.n_admissions, 2);
		assert_int_equal(queue_workload_find(q, "a", &id), GPUQ_OK);
		assert_int_equal(queue_workload_view(q, id, &wv), GPUQ_OK);
		assert_int_equal(wv.protected_ms, 2700000);
		assert_int_equal(wv.max_exec_ms, 8 * 3600000); /* the CQ's default */
		assert_int_equal(queue_workload_find(q, "b", &id), GPUQ_OK);
		assert_int_equal(queue_workload_view(q, id, &wv), GPUQ_OK);
		assert_int_equal(wv.protected_ms, 600000);
		/* idleReclaim: idle below 5 % */
		assert_int_equal(queue_workload_utilization(q, "b", 4, 0), GPUQ_OK);
		assert_int_equal(queue_workload_view(q, id, &wv), GPUQ_OK);
		assert_int_equal(wv.idle_since_ms, 0);
	}
	queue_destroy(q);
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(decoded),
	    cmocka_unit_test(refusals),
	    cmocka_unit_test(into_the_core),
	};

	return cmocka_run_group_tests_name("policy_econ", tests, NULL, NULL);
}

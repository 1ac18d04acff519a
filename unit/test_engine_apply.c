/* Unit tests for engine_core_apply: a policy change that keeps the core's
 * shape is taken in place and leaves the core exactly where a rebuild
 * would; every change of shape is refused, naming it, with the core
 * untouched. */
#include "unit/engine_fixtures.h"

/* BASE with cq-a's a100 GPU quota raised from 4 to 8 and cq-b's strategy
 * made StrictFIFO. */
#define CQA_RAISED CQ("cq-a", "pool", FQ("a100", "64", "8") FQ("h100", "64", "4"))
#define CQB_STRICT                                                                                 \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq-b}\n"          \
	"spec:\n  cohortName: pool\n  queueingStrategy: StrictFIFO\n"                              \
	"  preemption: {withinClusterQueue: LowerPriority}\n"                                      \
	"  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n" FQ(       \
	    "a100", "64", "4")
#define LQS LQ("team-a", "cq-a") LQ("team-b", "cq-a") LQ("team-c", "cq-b")

/* Apply newp to q (built from oldp) and expect it taken in place. */
static void apply_ok(queue_t *q, const policy_t *oldp, const policy_t *newp, size_t updated)
{
	engine_apply_report_t rep;
	gpuq_diag_t d = {{0}};

	if (engine_core_apply(q, oldp, newp, &rep, &d))
		fail_msg("engine_core_apply: %s / %s", rep.why, d.msg);
	assert_int_equal(rep.cqs_updated, updated);
}

/* In place and rebuilt agree: the same records, views and decisions, now
 * and after the next cycles. */
static void apply_equals_rebuild(void **state)
{
	policy_t *p = policy_of(BASE);
	policy_t *p2 = policy_of(BASE_OBJECTS CQA_RAISED CQB_STRICT LQS);
	queue_t *live = busy_core(p), *old = busy_core(p), *rebuilt;
	engine_rebuild_report_t rep = {0};
	char adm_live[256], adm_rebuilt[256];

	(void)state;
	rebuilt = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost + rep.cqs_reset, 0);
	apply_ok(live, p, p2, 2);
	same_records(live, rebuilt, false);
	same_views(live, rebuilt);
	cycle_admits(live, 5000, adm_live, sizeof(adm_live));
	cycle_admits(rebuilt, 5000, adm_rebuilt, sizeof(adm_rebuilt));
	print_message("# admitted after the change: %s\n", adm_live);
	assert_true(adm_live[0] != '\0'); /* the raised quota let a set-aside one in */
	assert_string_equal(adm_live, adm_rebuilt);
	assert_int_equal(queue_workload_finish(live, "hi", 6000), GPUQ_OK);
	assert_int_equal(queue_workload_finish(rebuilt, "hi", 6000), GPUQ_OK);
	cycle_admits(live, 6000, adm_live, sizeof(adm_live));
	cycle_admits(rebuilt, 6000, adm_rebuilt, sizeof(adm_rebuilt));
	assert_string_equal(adm_live, adm_rebuilt);
	same_records(live, rebuilt, false);
	same_views(live, rebuilt);
	/* and back: the old policy in place again */
	apply_ok(live, p2, p, 2);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(rebuilt);
	queue_destroy(old);
	queue_destroy(live);
	policy_unref(p);
	policy_unref(p2);
}

/* The same policy again changes nothing: no record is marked changed. */
static void apply_same_policy_is_nothing(void **state)
{
	policy_t *p = policy_of(BASE), *again = policy_of(BASE);
	queue_t *q = busy_core(p);

	(void)state;
	queue_dirty_clear(q);
	apply_ok(q, p, again, 0);
	assert_int_equal(queue_dirty_count(q), 0);
	queue_destroy(q);
	policy_unref(p);
	policy_unref(again);
}

/* Every change of shape is refused with what changed, the core untouched. */
static void apply_refuses_shape_changes(void **state)
{
	static const struct {
		const char *policy;
		const char *why;
	} cases[] = {
	    {BASE LQ("team-d", "cq-b"), "objects added or removed"},
	    {BASE_OBJECTS BASE_CQA BASE_CQB LQ("team-a", "cq-a") LQ("team-b", "cq-b")
		 LQ("team-c", "cq-b"),
	     "LocalQueue team-b/lq changed"},
	    {BASE_OBJECTS BASE_CQA CQ("cq-b", "", FQ("a100", "64", "4")) LQS,
	     "ClusterQueue cq-b changed its cohort or resource groups"},
	    {BASE_OBJECTS BASE_CQA CQ("cq-b", "pool", FQ("h100", "64", "4")) LQS,
	     "ClusterQueue cq-b changed its cohort or resource groups"},
	    {FLAVOR("a100") "---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\n"
			    "metadata: {name: h100}\nspec: {nodeLabels: {gpu: h100}}\n" COHORT(
				"pool") BASE_CQA BASE_CQB LQS,
	     "ResourceFlavor h100 changed"},
	    {FLAVOR("a100") FLAVOR("h100") "---\napiVersion: gpuq.dev/v1beta1\nkind: Cohort\n"
					   "metadata: {name: pool}\nspec: {fairSharing: {weight: "
					   "2}}\n" BASE_CQA BASE_CQB LQS,
	     "Cohort pool changed"},
	};
	policy_t *p = policy_of(BASE);
	queue_t *q = busy_core(p);
	static uint8_t before[1 << 16], after[1 << 16];
	size_t nb, dirty;

	(void)state;
	nb = fingerprint(q, before, sizeof(before));
	dirty = queue_dirty_count(q);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		policy_t *p2 = policy_of(cases[i].policy);
		engine_apply_report_t rep;
		gpuq_diag_t d = {{0}};

		assert_int_equal(engine_core_apply(q, p, p2, &rep, &d), GPUQ_EINVAL);
		print_message("# %s\n", rep.why);
		assert_string_equal(rep.why, cases[i].why);
		assert_int_equal(fingerprint(q, after, sizeof(after)), nb);
		assert_memory_equal(before, after, nb);
		assert_int_equal(queue_dirty_count(q), dirty);
		policy_unref(p2);
	}
	queue_destroy(q);
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(apply_equals_rebuild),
	    cmocka_unit_test(apply_same_policy_is_nothing),
	    cmocka_unit_test(apply_refuses_shape_changes),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests_name("engine_apply", tests, NULL, NULL);
}

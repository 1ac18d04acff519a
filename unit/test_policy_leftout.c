/* Unit tests for policy: a policy built with leave_out_broken (the
 * controller's) leaves out each queue object that fails its decoding or a
 * check across objects, and whatever depends on it, with a reason and a
 * message, and loads the rest (issue 32: one bad input costs one object,
 * never the cluster); without the option the same input refuses the whole
 * policy in the same words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/policy_fixtures.h"

#define RF(name)                                                                                   \
	"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: " name "}\n---\n"
#define CQ(name, flavor, extra)                                                                    \
	"apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: " name "}\nspec:\n"    \
	"  namespaceSelector: {}\n" extra "  resourceGroups:\n"                                    \
	"  - coveredResources: [nvidia.com/gpu]\n"                                                 \
	"    flavors: [{name: " flavor ", resources: [{name: nvidia.com/gpu, nominalQuota: "       \
	"8}]}]\n---\n"
#define LQ(ns, name, cq, extra)                                                                    \
	"apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: " name                   \
	", namespace: " ns "}\nspec:\n  clusterQueue: " cq "\n" extra "---\n"
#define COHORT(name, parent)                                                                       \
	"apiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: " name "}\nspec: "           \
	"{parentName: " parent "}\n---\n"
#define NSBUDGET "  budget: {gpuHours: 1, scope: Namespace}\n"
#define PC(name)                                                                                   \
	"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: " name "}\n"      \
	"value: 1\nglobalDefault: true\n---\n"

typedef struct {
	const char *what; /* the case, for a failure's message */
	const char *text; /* manifest t.yaml */
	const char *out;  /* the left-out list: "Kind ns/name Reason; ..." in order */
	const char *kept; /* what loads: "cq: a b; lq: ns/x; cohort: c(members); pc: p" */
	const char *msg;  /* the first left-out object's message, or NULL: not checked */
} case_t;

static const case_t CASES[] = {
    {"a LocalQueue naming a deleted ClusterQueue",
     RF("gpu") CQ("a", "gpu", "") LQ("t", "good", "a", "") LQ("t", "orphan", "gone", ""),
     "LocalQueue t/orphan ClusterQueueDoesNotExist", "cq: a; lq: t/good",
     "LocalQueue \"t/orphan\": spec.clusterQueue: ClusterQueue \"gone\" not found"},
    {"two Namespace budgets in one namespace: the first declared keeps it",
     RF("gpu") CQ("a", "gpu", "") LQ("t", "one", "a", NSBUDGET) LQ("t", "two", "a", NSBUDGET)
	 LQ("u", "three", "a", NSBUDGET),
     "LocalQueue t/two NamespaceBudgetConflict", "cq: a; lq: t/one u/three",
     "LocalQueue \"t/two\": spec.budget.scope: namespace t has a Namespace budget already "
     "(LocalQueue one, t.yaml: document 3)"},
    {"a ClusterQueue naming a missing flavor, and its LocalQueue",
     RF("gpu") CQ("a", "gpu", "") CQ("b", "nope", "") LQ("t", "qa", "a", "") LQ("t", "qb", "b", ""),
     "ClusterQueue /b FlavorNotFound; LocalQueue t/qb ClusterQueueIsInactive", "cq: a; lq: t/qa",
     "ClusterQueue \"b\": spec.resourceGroups[0].flavors[0].name: ResourceFlavor \"nope\" not "
     "found"},
    {"a cohort cycle: the cohorts on it, under it, their ClusterQueues and LocalQueues",
     RF("gpu") COHORT("x", "y") COHORT("y", "x") COHORT("z", "x")
	 CQ("a", "gpu", "  cohortName: z\n") CQ("b", "gpu", "") LQ("t", "qa", "a", "")
	     LQ("t", "qb", "b", ""),
     "Cohort /x CohortCycle; Cohort /y CohortCycle; Cohort /z CohortIsInactive; ClusterQueue "
     "/a CohortIsInactive; LocalQueue t/qa ClusterQueueIsInactive",
     "cq: b; lq: t/qb", "Cohort \"x\": spec.parentName: \"y\" makes a cycle (x -> y -> x)"},
    {"a Cohort naming a missing flavor: its members go, its siblings stay",
     RF("gpu") "apiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: bad}\nspec:\n"
	       "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
	       "    - name: nope\n      resources: [{name: nvidia.com/gpu, nominalQuota: "
	       "1}]\n---\n" CQ("a", "gpu", "  cohortName: bad\n")
		   CQ("b", "gpu", "  cohortName: good\n") CQ("c", "gpu", "  cohortName: good\n"),
     "Cohort /bad FlavorNotFound; ClusterQueue /a CohortIsInactive",
     "cq: b c; lq:; cohort: good(b c)", NULL},
    {"a second global default PriorityClass", PC("first") PC("second") RF("gpu") CQ("a", "gpu", ""),
     "PriorityClass /second GlobalDefaultConflict", "cq: a; lq:; pc: first", NULL},
    {"a ClusterQueue its decoder refuses, and the LocalQueue naming it",
     RF("gpu") CQ("a", "gpu", "") CQ("b", "gpu", "  queueingStrategy: Fastest\n")
	 LQ("t", "qa", "a", "") LQ("t", "qb", "b", ""),
     "ClusterQueue /b InvalidSpec; LocalQueue t/qb ClusterQueueIsInactive", "cq: a; lq: t/qa",
     "ClusterQueue \"b\": spec.queueingStrategy: unknown value \"Fastest\" (want "
     "BestEffortFIFO or StrictFIFO)"},
    {"a duplicate LocalQueue: the first stays",
     RF("gpu") CQ("a", "gpu", "") LQ("t", "q", "a", "") LQ("t", "q", "a", ""),
     "LocalQueue t/q InvalidSpec", "cq: a; lq: t/q", NULL},
    {"a flavor naming a missing Topology: it, the ClusterQueue naming it and its LocalQueue",
     RF("gpu") "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: tas}\n"
	       "spec: {topologyName: racks}\n---\n" CQ("a", "gpu", "") CQ("b", "tas", "")
		   LQ("t", "qa", "a", "") LQ("t", "qb", "b", ""),
     "ResourceFlavor /tas TopologyNotFound; ClusterQueue /b TopologyNotFound; LocalQueue t/qb "
     "ClusterQueueIsInactive",
     "cq: a; lq: t/qa", "ResourceFlavor \"tas\": spec.topologyName: Topology \"racks\" not found"},
    {"a flavor naming a Topology its decoder refused",
     "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: racks}\n"
     "spec: {levels: []}\n---\n"
     "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: tas}\n"
     "spec: {topologyName: racks}\n---\n" CQ("b", "tas", ""),
     "Topology /racks InvalidSpec; ResourceFlavor /tas TopologyNotFound; ClusterQueue /b "
     "TopologyNotFound",
     "cq:; lq:", "Topology \"racks\": spec.levels: at least one level is required"},
    {"nothing wrong: nothing left out", RF("gpu") CQ("a", "gpu", "") LQ("t", "q", "a", ""), "",
     "cq: a; lq: t/q", NULL},
};

static void append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

/* What p left out, as CASES writes it. */
static void describe_out(const policy_t *p, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0; i < policy_leftout_count(p); i++) {
		const policy_leftout_t *l = policy_leftout_at(p, i);

		append(buf, cap, "%s%s %s/%s %s", i ? "; " : "", l->kind, l->namespace_, l->name,
		       l->reason);
		/* each is found by its kind and name */
		assert_ptr_equal(policy_leftout_find(p, l->kind, l->namespace_, l->name), l);
	}
}

/* What p holds, as CASES writes it; checks the lookups agree. */
static void describe_kept(const policy_t *p, char *buf, size_t cap)
{
	snprintf(buf, cap, "cq:");
	for (size_t i = 0; i < policy_cq_count(p); i++) {
		const policy_cq_t *cq = policy_cq_at(p, i);

		assert_int_equal(cq->index, i);
		assert_ptr_equal(policy_cq_find(p, cq->name), cq);
		append(buf, cap, " %s", cq->name);
	}
	append(buf, cap, "; lq:");
	for (size_t i = 0; i < policy_lq_count(p); i++) {
		const policy_lq_t *lq = policy_lq_at(p, i);

		assert_ptr_equal(policy_lq_find(p, lq->namespace_, lq->name), lq);
		assert_ptr_equal(policy_cq_find(p, lq->cq_name), lq->cq);
		append(buf, cap, " %s/%s", lq->namespace_, lq->name);
	}
	for (size_t i = 0; i < policy_cohort_count(p); i++) {
		const policy_cohort_t *c = policy_cohort_at(p, i);

		append(buf, cap, "%s %s(", i ? "" : "; cohort:", c->name);
		for (size_t k = 0; k < c->n_members; k++)
			append(buf, cap, "%s%s", k ? " " : "", c->members[k]->name);
		append(buf, cap, ")");
	}
	for (size_t i = 0; i < policy_priorityclass_count(p); i++)
		append(buf, cap, "%s %s", i ? "" : "; pc:", policy_priorityclass_at(p, i)->name);
}

/* One case: GPUQ_OK when p left out and kept what it says, else printed. */
static int check_case(size_t i, const case_t *c, const policy_opts_t *opts)
{
	char out[2048], kept[1024];
	policy_t *p;
	gpuq_diag_t d;
	int rc = load_str(c->text, opts, &p, &d);
	const char *msg;

	if (rc) {
		print_error("case %zu (%s): refused: rc %d: %s\n", i, c->what, rc, d.msg);
		return rc;
	}
	describe_out(p, out, sizeof(out));
	describe_kept(p, kept, sizeof(kept));
	msg = policy_leftout_count(p) ? policy_leftout_at(p, 0)->message : "";
	rc = strcmp(out, c->out) || strcmp(kept, c->kept) || (c->msg && strcmp(msg, c->msg));
	if (rc)
		print_error("case %zu (%s):\n  out  \"%s\"\n  kept \"%s\"\n  msg  \"%s\"\n", i,
			    c->what, out, kept, msg);
	policy_unref(p);
	return rc ? GPUQ_EINVAL : GPUQ_OK;
}

/* Left out, what stays, and the message, case by case (every case run,
 * every failing one printed). */
static void left_out(void **state)
{
	const policy_opts_t opts = {.leave_out_broken = true};
	size_t failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++)
		failed += check_case(i, &CASES[i], &opts) != GPUQ_OK;
	assert_int_equal(failed, 0);
}

/* Without the option, every case but the clean one refuses the whole
 * policy, naming the first object as its record does (the one rule, in
 * the same words, either way). */
static void all_or_nothing(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const case_t *c = &CASES[i];
		policy_t *p;
		gpuq_diag_t d;
		int rc = load_str(c->text, NULL, &p, &d);

		if (!c->out[0]) {
			assert_int_equal(rc, GPUQ_OK);
			policy_unref(p);
			continue;
		}
		assert_int_not_equal(rc, GPUQ_OK);
		assert_null(p);
		if (c->msg)
			assert_non_null(strstr(d.msg, c->msg));
	}
}

/* A ClusterQueue left out lends nothing to its cohort: the others' most
 * they could get is their own quota and each other's. */
/* The daemon places no pods on topology domains yet: with
 * topology_unplaced a flavor naming a Topology (even one that exists) is
 * left out, and the ClusterQueue naming it, with the reason saying so. */
static void topology_unplaced_leaves_out(void **state)
{
	const policy_opts_t opts = {.leave_out_broken = true, .topology_unplaced = true};
	const case_t c = {
	    "a flavor naming a Topology, in the daemon",
	    "apiVersion: gpuq.dev/v1beta1\nkind: Topology\nmetadata: {name: racks}\n"
	    "spec: {levels: [{nodeLabel: topology.gpuq.dev/rack}]}\n---\n" RF(
		"gpu") "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: tas}\n"
		       "spec: {topologyName: racks}\n---\n" CQ("a", "gpu", "") CQ("b", "tas", "")
			   LQ("t", "qa", "a", "") LQ("t", "qb", "b", ""),
	    "ResourceFlavor /tas TopologyUnplaced; ClusterQueue /b TopologyUnplaced; LocalQueue "
	    "t/qb ClusterQueueIsInactive",
	    "cq: a; lq: t/qa",
	    "ResourceFlavor \"tas\": spec.topologyName \"racks\": the daemon does not place "
	    "pods on a Topology's domains yet (gpuq simulate does: docs/topology.md)"};

	(void)state;
	assert_int_equal(check_case(0, &c, &opts), GPUQ_OK);
}

/* Fail closed: a namespace whose only ClusterQueue is left out (and its
 * LocalQueue with it) stays managed, so its GPU work is held or refused
 * saying why, not let through unqueued; a namespace with no LocalQueue
 * and no ClusterQueue selecting it is not gpuq's. Declared (Namespace
 * object) or not. */
static void leftout_queue_keeps_namespace_managed(void **state)
{
	const policy_opts_t opts = {.leave_out_broken = true};
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(
	    load_str(RF("gpu") "apiVersion: v1\nkind: Namespace\nmetadata: {name: t}\n---\n"
			       "apiVersion: v1\nkind: Namespace\nmetadata: {name: u}\n---\n" CQ(
				   "b", "nope", "") LQ("t", "qb", "b", "") LQ("t2", "qb", "b", ""),
		     &opts, &p, &d),
	    GPUQ_OK);
	assert_null(policy_cq_find(p, "b"));
	assert_true(policy_namespace_managed(p, "t"));	/* declared */
	assert_true(policy_namespace_managed(p, "t2")); /* implied by its LocalQueue */
	assert_false(policy_namespace_managed(p, "u"));
	assert_false(policy_namespace_managed(p, "v"));
	policy_unref(p);
}

static void leftout_lends_nothing(void **state)
{
	const policy_opts_t opts = {.leave_out_broken = true};
	policy_t *p;
	gpuq_diag_t d;
	int64_t fit = 0;

	(void)state;
	assert_int_equal(
	    load_str(
		RF("gpu") CQ("lender", "gpu", "  cohortName: pool\n") CQ(
		    "borrower", "gpu",
		    "  cohortName: pool\n") "apiVersion: gpuq.dev/v1beta1\nkind: "
					    "ClusterQueue\nmetadata: {name: gone}\n"
					    "spec:\n  cohortName: pool\n  resourceGroups:\n"
					    "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
					    "    - {name: gpu, resources: [{name: nvidia.com/gpu, "
					    "nominalQuota: 8}]}\n"
					    "    - {name: nope, resources: [{name: nvidia.com/gpu, "
					    "nominalQuota: 8}]}\n",
		&opts, &p, &d),
	    GPUQ_OK);
	assert_null(policy_cq_find(p, "gone"));
	assert_string_equal(policy_leftout_find(p, "ClusterQueue", NULL, "gone")->reason,
			    POLICY_REASON_FLAVOR_MISSING);
	assert_int_equal(policy_cohort_find(p, "pool")->n_members, 2);
	assert_int_equal(
	    policy_cq_max_fit(policy_cq_find(p, "borrower"), "gpu", "nvidia.com/gpu", &fit),
	    GPUQ_OK);
	assert_int_equal(fit, 16);
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(topology_unplaced_leaves_out),
	    cmocka_unit_test(left_out),
	    cmocka_unit_test(all_or_nothing),
	    cmocka_unit_test(leftout_lends_nothing),
	    cmocka_unit_test(leftout_queue_keeps_namespace_managed),
	};

	return cmocka_run_group_tests_name("policy_leftout", tests, NULL, NULL);
}

/*
 * unit/test_queue_tree.c: hierarchical cohorts in the queueing core (Kueue's
 * Cohort with spec.parentName and its own resourceGroups): borrowing and
 * lending limits at every level, what may be reclaimed through the tree,
 * and the tree's shape checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "queue/queue.h"
#include "unit/queue_fixtures.h"

/* Add cohort name under parent (NULL: a root) with its own gpu quota on
 * `flavor` (nominal < 0: none); returns queue_cohort_add's code. */
static int put_cohort_on(queue_t *q, const char *name, const char *parent, const char *flavor,
			 int64_t nominal, int64_t blimit, int64_t llimit, gpuq_diag_t *diag)
{
	static const char *const cov[] = {"gpu"};
	queue_quota_spec_t qs = {nominal, blimit, llimit};
	queue_flavor_quota_spec_t fl = {flavor, &qs};
	queue_group_spec_t g = {cov, 1, &fl, 1};
	queue_cohort_spec_t s = {name, parent, 0, false, &g, nominal < 0 ? 0 : 1};

	return queue_cohort_add(q, &s, NULL, diag);
}

/* put_cohort_on flavor "f". */
static int put_cohort(queue_t *q, const char *name, const char *parent, int64_t nominal,
		      int64_t blimit, int64_t llimit, gpuq_diag_t *diag)
{
	return put_cohort_on(q, name, parent, "f", nominal, blimit, llimit, diag);
}

static void add_cohort(queue_t *q, const char *name, const char *parent, int64_t nominal,
		       int64_t blimit, int64_t llimit)
{
	gpuq_diag_t diag = {{0}};

	if (put_cohort(q, name, parent, nominal, blimit, llimit, &diag))
		fail_msg("cohort %s: %s", name, diag.msg);
}

static queue_quota_view_t view(queue_t *q, const char *cq)
{
	uint32_t c, f, r;
	queue_quota_view_t v;

	assert_int_equal(queue_cq_find(q, cq, &c), GPUQ_OK);
	assert_int_equal(queue_flavor_find(q, "f", &f), GPUQ_OK);
	assert_int_equal(queue_resource_find(q, "gpu", &r), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, c, f, r, &v), GPUQ_OK);
	return v;
}

/* org (own 4) <- dept (borrowingLimit 2) <- a (4); b (0) directly in org.
 * a may hold its 4 and 2 more from above; b the org's 4 and all dept lends. */
static void borrowing_limits_at_every_level(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t da = {.cohort = "dept", .flavors = {{"f", 4, U, U}}};
	cqdef_t db = {.cohort = "org", .flavors = {{"f", 0, U, U}}};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f");
	add_cohort(q, "org", NULL, 4, U, U);
	add_cohort(q, "dept", "org", 0, 2, U);
	add_cq(q, "a", &da);
	add_cq(q, "b", &db);
	assert_int_equal(view(q, "a").max_capacity, 6);
	assert_int_equal(view(q, "a").available, 6);
	assert_int_equal(view(q, "b").max_capacity, 8);
	add_lq(q, "ns", "la", "a");
	add_lq(q, "ns", "lb", "b");
	add_wl(q, "w1", "ns", "la", 0, 1, 6); /* all a may ever hold */
	add_wl(q, "w2", "ns", "la", 0, 2, 1); /* one more is past dept's limit */
	cycle(q, 10, &r);
	assert_true(admitted_in(&r, "w1"));
	assert_false(admitted_in(&r, "w2"));
	assert_int_equal(view(q, "b").available, 2); /* 8 minus the 6 a holds */
	add_wl(q, "w3", "ns", "lb", 0, 3, 2);
	cycle(q, 11, &r);
	assert_true(admitted_in(&r, "w3"));
	assert_int_equal(view(q, "b").available, 0);
	add_wl(q, "w4", "ns", "la", 0, 4, 7); /* more than a could ever hold */
	cycle(q, 12, &r);
	assert_int_equal(wait_of(q, "w4"), QUEUE_WAIT_NO_FIT);
	queue_destroy(q);
}

/* A lendingLimit keeps quota inside a subtree: dept lends the org only 1
 * of a's 4, so b outside gets 1, while a sibling c inside gets all 4. */
static void lending_limit_keeps_quota_in_subtree(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t da = {.cohort = "dept", .flavors = {{"f", 4, U, U}}};
	cqdef_t dc = {.cohort = "dept", .flavors = {{"f", 0, U, U}}};
	cqdef_t db = {.cohort = "org", .flavors = {{"f", 0, U, U}}};

	(void)st;
	add_flavor(q, "f");
	add_cohort(q, "org", NULL, -1, U, U);
	add_cohort(q, "dept", "org", 0, U, 1);
	add_cq(q, "a", &da);
	add_cq(q, "c", &dc);
	add_cq(q, "b", &db);
	assert_int_equal(view(q, "b").max_capacity, 1);
	assert_int_equal(view(q, "c").max_capacity, 4);
	assert_int_equal(view(q, "a").max_capacity, 4);
	queue_destroy(q);
}

/* Cycles and depth are refused naming the cohort; limits need a parent. */
static void tree_shape_refused(void **st)
{
	queue_t *q = mkq(false);
	gpuq_diag_t diag = {{0}};
	char name[16], parent[16];

	(void)st;
	add_flavor(q, "f");
	add_cohort(q, "a", "b", -1, U, U); /* b made, undeclared */
	add_cohort(q, "b", "c", -1, U, U);
	assert_int_equal(put_cohort(q, "c", "a", -1, U, U, &diag), GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "cohort \"c\": parent \"a\" makes a cycle"));
	assert_int_equal(put_cohort(q, "a", NULL, -1, U, U, &diag), GPUQ_EEXIST);
	assert_int_equal(put_cohort(q, "r", NULL, 4, 2, U, &diag), GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "limits need a parent"));
	for (int i = 0; i < QUEUE_TREE_DEPTH_MAX + 2; i++) {
		snprintf(name, sizeof(name), "d%d", i + 1);
		snprintf(parent, sizeof(parent), "d%d", i);
		if (put_cohort(q, name, i ? parent : NULL, -1, U, U, &diag)) {
			assert_int_equal(i, QUEUE_TREE_DEPTH_MAX);
			assert_non_null(strstr(diag.msg, "more than 16 cohorts"));
			break;
		}
	}
	queue_destroy(q);
}

/* Kueue's hierarchical reclaim: x (dept1) borrows dept2's idle quota; z in
 * dept2 asking within its own nominal quota takes it back through the org,
 * even from a workload of higher priority (reclaimWithinCohort: Any). */
static void reclaim_through_the_tree(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t dx = {.cohort = "dept1", .reclaim = QUEUE_RECLAIM_ANY, .flavors = {{"f", 4, U, U}}};
	cqdef_t dz = {.cohort = "dept2", .reclaim = QUEUE_RECLAIM_ANY, .flavors = {{"f", 4, U, U}}};
	adm_t ax[] = {{"x1", 9, 1, 4}, {"x2", 9, 2, 4}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cohort(q, "org", NULL, -1, U, U);
	add_cohort(q, "dept1", "org", -1, U, U);
	add_cohort(q, "dept2", "org", -1, U, U);
	add_cq(q, "x", &dx);
	add_cq(q, "z", &dz);
	add_lq(q, "ns", "lx", "x");
	add_lq(q, "ns", "lz", "z");
	admit_all(q, "lx", ax, 2, &now); /* x2 borrows z's 4 through the org */
	add_wl(q, "z1", "ns", "lz", 1, 50, 4);
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].victim_uid, "x2");
	assert_string_equal(r.evictions[0].reason_name, "InCohortReclamation");
	queue_destroy(q);
}

/* Classical reclaim follows the tree: x borrows y's quota inside dept1,
 * which as a whole stays within its own subtree quota, so a preemptor in
 * dept2 may not take from x (only from w, which borrows from the org),
 * though x's workload has the lower priority. */
static void reclaim_only_from_borrowing_subtrees(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t dx = {.cohort = "dept1", .flavors = {{"f", 4, U, U}}};
	cqdef_t dy = {.cohort = "dept1", .flavors = {{"f", 4, U, U}}};
	cqdef_t dz = {.cohort = "dept2",
		      .reclaim = QUEUE_RECLAIM_LOWER_PRIORITY,
		      .flavors = {{"f", 4, U, U}}};
	cqdef_t dw = {.cohort = "dept2", .flavors = {{"f", 0, U, U}}};
	adm_t ax[] = {{"x1", 1, 1, 8}, {NULL, 0, 0, 0}};
	adm_t aw[] = {{"w1", 5, 2, 4}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cohort(q, "org", NULL, -1, U, U);
	add_cohort(q, "dept1", "org", -1, U, U);
	add_cohort(q, "dept2", "org", -1, U, U);
	add_cq(q, "x", &dx);
	add_cq(q, "y", &dy);
	add_cq(q, "z", &dz);
	add_cq(q, "w", &dw);
	add_lq(q, "ns", "lx", "x");
	add_lq(q, "ns", "lw", "w");
	add_lq(q, "ns", "lz", "z");
	admit_all(q, "lx", ax, 2, &now);
	admit_all(q, "lw", aw, 2, &now);
	add_wl(q, "z1", "ns", "lz", 9, 50, 4);
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].victim_uid, "w1");
	queue_destroy(q);
}

/* Hierarchical fair sharing (Kueue's tournament): under the org's 8 GPUs,
 * department A (one CQ) and department B (two CQs) borrow alike, so each
 * department gets half, B's half split between its CQs, not a third each. */
static void fair_sharing_by_level(void **st)
{
	queue_t *q = mkq(true);
	cqdef_t d = {.flavors = {{"f", 0, U, U}}};
	const char *cqs[] = {"a", "b1", "b2"};
	int n[3] = {0, 0, 0};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f");
	add_cohort(q, "org", NULL, 8, U, U);
	add_cohort(q, "dept-a", "org", -1, U, U);
	add_cohort(q, "dept-b", "org", -1, U, U);
	for (int i = 0; i < 3; i++) {
		char uid[16];

		d.cohort = i ? "dept-b" : "dept-a";
		add_cq(q, cqs[i], &d);
		add_lq(q, "ns", cqs[i], cqs[i]);
		for (int k = 0; k < 8; k++) {
			snprintf(uid, sizeof(uid), "%s-%d", cqs[i], k);
			add_wl(q, uid, "ns", cqs[i], 0, 3 * k + i, 1);
		}
	}
	cycle(q, 100, &r);
	assert_int_equal(r.n_admissions, 8);
	for (size_t i = 0; i < r.n_admissions; i++)
		for (int c = 0; c < 3; c++)
			n[c] += !strncmp(r.admissions[i].uid, cqs[c], strlen(cqs[c])) &&
				r.admissions[i].uid[strlen(cqs[c])] == '-';
	assert_int_equal(n[0], 4);
	assert_int_equal(n[1], 2);
	assert_int_equal(n[2], 2);
	queue_destroy(q);
}

/* Kueue's head order in a tree (its classical iterator over the borrowing
 * level, FindHeightOfLowestSubtreeThatFits): of two heads that borrow, the
 * one that finds the quota nearer, in its own department, goes first,
 * whatever the priorities. a (in dept, which owns 4) and b (directly in
 * the org) both want dept's 4 GPUs: a borrows at dept's height 1, b at the
 * org's 2, so a is admitted though b's priority is higher. At equal
 * levels (a second CQ c in dept) priority decides again. */
static void borrowers_by_tree_level(void **st)
{
	for (int same_level = 0; same_level < 2; same_level++) {
		queue_t *q = mkq(false);
		cqdef_t da = {.cohort = "dept", .flavors = {{"f", 0, U, U}}};
		cqdef_t db = {.cohort = same_level ? "dept" : "org", .flavors = {{"f", 0, U, U}}};
		queue_result_t r;

		(void)st;
		add_flavor(q, "f");
		add_cohort(q, "org", NULL, -1, U, U);
		add_cohort(q, "dept", "org", 4, U, U);
		add_cq(q, "a", &da);
		add_cq(q, "b", &db);
		add_lq(q, "ns", "la", "a");
		add_lq(q, "ns", "lb", "b");
		add_wl(q, "a1", "ns", "la", 0, 1, 4);
		add_wl(q, "b1", "ns", "lb", 10, 2, 4);
		cycle(q, 10, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, same_level ? "b1" : "a1");
		assert_true(r.admissions[0].borrows);
		queue_destroy(q);
	}
}

/* The same rule picks among a CQ's flavors (Kueue's isPreferred compares
 * borrowing levels): with whenCanBorrow TryNextFlavor the search goes past
 * f1, whose quota only the org owns (level 2), to f2, which dept owns
 * (level 1), though f1 comes first. */
static void flavor_by_tree_level(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t da = {.cohort = "dept",
		      .when_can_borrow = QUEUE_FUNGIBLE_TRY_NEXT,
		      .flavors = {{"f1", 0, U, U}, {"f2", 0, U, U}}};
	gpuq_diag_t diag = {{0}};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f1");
	add_flavor(q, "f2");
	assert_int_equal(put_cohort_on(q, "org", NULL, "f1", 4, U, U, &diag), GPUQ_OK);
	assert_int_equal(put_cohort_on(q, "dept", "org", "f2", 4, U, U, &diag), GPUQ_OK);
	add_cq(q, "a", &da);
	add_lq(q, "ns", "la", "a");
	add_wl(q, "a1", "ns", "la", 0, 1, 4);
	cycle(q, 10, &r);
	assert_true(admitted_in(&r, "a1"));
	assert_string_equal(flavor_of(q, "a1"), "f2");
	queue_destroy(q);
}

/* Kueue's hierarchical reclaim of quota a cohort owns (its test "preempt
 * with hierarchical advantage"): q has no nominal quota of its own, but
 * its department owns 4 GPUs, which x, directly in the org, borrows. q's
 * 4 fit within the department's subtree quota, so q reclaims them from x
 * (lower priority, reclaimWithinCohort LowerPriority) and runs once x is
 * gone. Quota the root owns is nobody's guarantee: with the 4 GPUs owned
 * by the org itself, q (in the org) has nothing to reclaim and waits, as
 * in Kueue (preemption needs the request within nominal quota, or within
 * a cohort below the root). */
static void reclaim_cohort_quota_from_nominal_zero(void **st)
{
	for (int root_owns = 0; root_owns < 2; root_owns++) {
		queue_t *q = mkq(false);
		cqdef_t dq = {.cohort = root_owns ? "org" : "dept",
			      .reclaim = QUEUE_RECLAIM_LOWER_PRIORITY,
			      .within = QUEUE_WITHIN_LOWER_PRIORITY,
			      .flavors = {{"f", 0, U, U}}};
		cqdef_t dx = {.cohort = "org", .flavors = {{"f", 0, U, U}}};
		adm_t ax[] = {{"x1", 0, 1, 4}, {NULL, 0, 0, 0}};
		queue_result_t r;
		int64_t now = 1;

		(void)st;
		add_flavor(q, "f");
		add_cohort(q, "org", NULL, root_owns ? 4 : -1, U, U);
		add_cohort(q, "dept", "org", root_owns ? -1 : 4, U, U);
		add_cq(q, "q", &dq);
		add_cq(q, "x", &dx);
		add_lq(q, "ns", "lq", "q");
		add_lq(q, "ns", "lx", "x");
		admit_all(q, "lx", ax, 1, &now); /* x borrows all 4 */
		add_wl(q, "q1", "ns", "lq", 5, 50, 4);
		cycle(q, ++now, &r);
		if (root_owns) {
			assert_int_equal(r.n_evictions, 0);
			assert_int_equal(state_of(q, "q1"), QUEUE_WL_PENDING);
			queue_destroy(q);
			continue;
		}
		assert_int_equal(r.n_evictions, 1);
		assert_string_equal(r.evictions[0].victim_uid, "x1");
		assert_string_equal(r.evictions[0].reason_name, "InCohortReclamation");
		cycle(q, ++now, &r); /* x1's quota was released at the cycle's end */
		assert_true(admitted_in(&r, "q1"));
		queue_destroy(q);
	}
}

/* A CQ covering gpu and cpu on flavor "f", nominal 0 for both, in cohort;
 * reclaimWithinCohort and borrowWithinCohort LowerPriority when `borrow`. */
static void add_cq_gpu_cpu(queue_t *q, const char *name, const char *cohort, bool borrow)
{
	static const char *const cov[] = {"gpu", "cpu"};
	queue_quota_spec_t qs[2] = {{0, U, U}, {0, U, U}};
	queue_flavor_quota_spec_t fl = {"f", qs};
	queue_group_spec_t g = {cov, 2, &fl, 1};
	queue_cq_spec_t s = {.name = name, .cohort = cohort, .groups = &g, .n_groups = 1};
	gpuq_diag_t diag = {{0}};

	if (borrow) {
		s.reclaim = QUEUE_RECLAIM_LOWER_PRIORITY;
		s.borrow = QUEUE_BORROW_LOWER_PRIORITY;
	}
	if (queue_cq_add(q, &s, NULL, &diag))
		fail_msg("cq %s: %s", name, diag.msg);
}

/* A workload of `gpus` gpu and `cpus` cpu in ns/lq. */
static void add_wl_gpu_cpu(queue_t *q, const char *uid, const char *lq, int32_t prio,
			   int64_t created, int64_t gpus, int64_t cpus)
{
	queue_request_t req[2] = {{"gpu", gpus}, {"cpu", cpus}};
	queue_podset_spec_t ps = {.name = "main",
				  .count = 1,
				  .requests = gpus ? req : req + 1,
				  .n_requests = gpus && cpus ? 2 : 1};
	queue_workload_spec_t w = {.namespace_ = "ns",
				   .name = uid,
				   .uid = uid,
				   .local_queue = lq,
				   .priority = prio,
				   .created_ms = created,
				   .podsets = &ps,
				   .n_podsets = 1};

	assert_int_equal(queue_workload_add(q, &w, created, NULL, NULL), GPUQ_OK);
}

/* A preemptor that borrows (borrowWithinCohort) takes from another
 * department only what that department borrows. dept owns 4 gpu and no
 * cpu; a in it (nominal 0) runs v1 (4 gpu, dept's) and c1, c2 (2 cpu each,
 * the org's), so dept borrows cpu. p1 (in the org, nominal 0) asks 4 gpu
 * and 2 cpu: taking c1 and v1 would fit it, but without v1 dept would use
 * none of its own gpu, and v1 would take them back at once by hierarchical
 * advantage, and p1 them again (the loop test_queue_props seed 10101
 * found: Kueue's candidate check asks only that dept still borrow in some
 * contested resource, cpu here). So p1 takes nothing and waits. */
static void borrowing_preemptor_spares_department_quota(void **st)
{
	queue_t *q = mkq(false);
	gpuq_diag_t diag = {{0}};
	static const char *const cov[] = {"gpu", "cpu"};
	queue_quota_spec_t own[2][2] = {{{0, U, U}, {4, U, U}}, {{4, U, U}, {0, U, U}}};
	queue_flavor_quota_spec_t fl[2] = {{"f", own[0]}, {"f", own[1]}};
	queue_group_spec_t g[2] = {{cov, 2, &fl[0], 1}, {cov, 2, &fl[1], 1}};
	queue_cohort_spec_t org = {"org", NULL, 0, false, &g[0], 1};
	queue_cohort_spec_t dept = {"dept", "org", 0, false, &g[1], 1};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f");
	assert_int_equal(queue_cohort_add(q, &org, NULL, &diag), GPUQ_OK);
	assert_int_equal(queue_cohort_add(q, &dept, NULL, &diag), GPUQ_OK);
	add_cq_gpu_cpu(q, "a", "dept", false);
	add_cq_gpu_cpu(q, "p", "org", true);
	add_lq(q, "ns", "la", "a");
	add_lq(q, "ns", "lp", "p");
	add_wl_gpu_cpu(q, "v1", "la", 0, 1, 4, 0);
	add_wl_gpu_cpu(q, "c2", "la", 9, 2, 0, 2); /* above p1: no candidate */
	add_wl_gpu_cpu(q, "c1", "la", 0, 3, 0, 2);
	cycle(q, 10, &r);
	assert_int_equal(r.n_admissions, 3);
	add_wl_gpu_cpu(q, "p1", "lp", 5, 50, 4, 2);
	cycle(q, 11, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(state_of(q, "p1"), QUEUE_WL_PENDING);
	assert_int_equal(state_of(q, "v1"), QUEUE_WL_ADMITTED);
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(borrowing_limits_at_every_level),
	    cmocka_unit_test(lending_limit_keeps_quota_in_subtree),
	    cmocka_unit_test(tree_shape_refused),
	    cmocka_unit_test(reclaim_through_the_tree),
	    cmocka_unit_test(reclaim_only_from_borrowing_subtrees),
	    cmocka_unit_test(fair_sharing_by_level),
	    cmocka_unit_test(borrowers_by_tree_level),
	    cmocka_unit_test(flavor_by_tree_level),
	    cmocka_unit_test(reclaim_cohort_quota_from_nominal_zero),
	    cmocka_unit_test(borrowing_preemptor_spares_department_quota),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

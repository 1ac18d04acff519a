/* Unit tests for queue: one table or scenario per Kueue rule the core keeps
 * (flavors, borrowing and lending, queueing strategies, order, fair-sharing
 * order, tenant decay, gangs, Ready timeouts, explanations).
 * Records, the changed set and memory are in test_queue_records.c.
 * Preemption is in test_queue_preempt.c; builders in unit/queue_fixtures.h. */
#include <math.h>

#include "unit/queue_fixtures.h"

static void flavor_first_fit_in_order(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"a", 4, U, U}, {"b", 4, U, U}}};
	queue_result_t r;

	(void)st;
	add_flavor(q, "a");
	add_flavor(q, "b");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "w1", "ns", "lq", 0, 1, 3);
	add_wl(q, "w2", "ns", "lq", 0, 2, 3);
	add_wl(q, "w3", "ns", "lq", 0, 3, 3);
	cycle(q, 10, &r);
	assert_int_equal(r.n_admissions, 2);
	assert_string_equal(flavor_of(q, "w1"), "a");
	assert_string_equal(flavor_of(q, "w2"), "b");
	assert_int_equal(state_of(q, "w3"), QUEUE_WL_PENDING);
	assert_int_equal(wait_of(q, "w3"), QUEUE_WAIT_QUOTA);
	assert_int_equal(r.n_changes, 1);
	assert_string_equal(r.changes[0].uid, "w3");
	/* the decision names the flavor per resource per pod set */
	assert_int_equal(r.admissions[0].n_assign, 1);
	assert_int_equal(r.admissions[0].assign[0].amount, 3);
	queue_destroy(q);
}

/* Taints, tolerations, nodeSelector and affinity against nodeLabels. */
static void flavor_taints_and_selectors(void **st)
{
	static const queue_label_t la[] = {{"zone", "x"}, {"gpu.product", "h100"}};
	static const queue_label_t lb[] = {{"zone", "y"}};
	static const queue_taint_t ta[] = {{"dedicated", "ml", QUEUE_EFFECT_NO_SCHEDULE}};
	static const queue_taint_t tc[] = {{"soft", "1", QUEUE_EFFECT_PREFER_NO_SCHEDULE}};
	static const queue_toleration_t tol_ml[] = {
	    {"dedicated", QUEUE_TOLERATE_EQUAL, "ml", QUEUE_EFFECT_NO_SCHEDULE}};
	static const queue_toleration_t tol_any[] = {
	    {"", QUEUE_TOLERATE_EXISTS, NULL, QUEUE_EFFECT_ANY}};
	static const queue_toleration_t tol_wrong[] = {
	    {"dedicated", QUEUE_TOLERATE_EQUAL, "web", QUEUE_EFFECT_NO_SCHEDULE}};
	static const queue_label_t sel_y[] = {{"zone", "y"}};
	static const queue_label_t sel_other[] = {{"rack", "7"}};
	static const char *const vx[] = {"x", "z"};
	static const queue_affinity_t aff_x[] = {{"zone", vx, 2}};
	static const struct {
		const char *uid;
		wlopt_t o;
		const char *want; /* flavor, or "-" for not admitted */
	} cases[] = {
	    {"plain", {0}, "b"},				  /* taint on a skips it */
	    {"tolerates", {.tol = tol_ml, .n_tol = 1}, "a"},	  /* Equal toleration */
	    {"exists-all", {.tol = tol_any, .n_tol = 1}, "a"},	  /* Exists, empty key */
	    {"wrong-value", {.tol = tol_wrong, .n_tol = 1}, "b"}, /* value mismatch */
	    {"sel-y", {.tol = tol_ml, .n_tol = 1, .sel = sel_y, .n_sel = 1}, "b"},
	    {"sel-unknown-key", {.tol = tol_ml, .n_tol = 1, .sel = sel_other, .n_sel = 1}, "a"},
	    {"aff-x", {.aff = aff_x, .n_aff = 1}, "-"}, /* a tainted, b zone y */
	    {"aff-x-tol", {.tol = tol_ml, .n_tol = 1, .aff = aff_x, .n_aff = 1}, "a"},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		queue_t *q = mkq(false);
		queue_flavor_spec_t fa = {"a", la, 2, ta, 1, NULL, 0, NULL};
		queue_flavor_spec_t fb = {"b", lb, 1, NULL, 0, NULL, 0, NULL};
		queue_flavor_spec_t fc = {"c", NULL, 0, tc, 1, NULL, 0, NULL};
		cqdef_t d = {.flavors = {{"a", 8, U, U}, {"b", 8, U, U}}};
		queue_result_t r;

		assert_int_equal(queue_flavor_add(q, &fa, NULL, NULL), GPUQ_OK);
		assert_int_equal(queue_flavor_add(q, &fb, NULL, NULL), GPUQ_OK);
		assert_int_equal(queue_flavor_add(q, &fc, NULL, NULL), GPUQ_OK);
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		assert_int_equal(add_wl_opt(q, cases[i].uid, "ns", "lq", 0, 1, 1, 1, &cases[i].o),
				 GPUQ_OK);
		cycle(q, 5, &r);
		if (strcmp(flavor_of(q, cases[i].uid), cases[i].want))
			fail_msg("case %s: got flavor %s, want %s", cases[i].uid,
				 flavor_of(q, cases[i].uid), cases[i].want);
		if (!strcmp(cases[i].want, "-"))
			assert_int_equal(wait_of(q, cases[i].uid), QUEUE_WAIT_NO_FIT);
		queue_destroy(q);
	}
	/* a flavor's own tolerations count for its taints; PreferNoSchedule never blocks */
	{
		queue_t *q = mkq(false);
		queue_flavor_spec_t fa = {"a", NULL, 0, ta, 1, tol_ml, 1, NULL};
		queue_flavor_spec_t fc = {"c", NULL, 0, tc, 1, NULL, 0, NULL};
		cqdef_t d = {.flavors = {{"a", 1, U, U}, {"c", 1, U, U}}};
		queue_result_t r;

		assert_int_equal(queue_flavor_add(q, &fa, NULL, NULL), GPUQ_OK);
		assert_int_equal(queue_flavor_add(q, &fc, NULL, NULL), GPUQ_OK);
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		add_wl(q, "w1", "ns", "lq", 0, 1, 1);
		add_wl(q, "w2", "ns", "lq", 0, 2, 1);
		cycle(q, 5, &r);
		assert_string_equal(flavor_of(q, "w1"), "a");
		assert_string_equal(flavor_of(q, "w2"), "c");
		queue_destroy(q);
	}
}

/* A flavor the CQ names but no ResourceFlavor defines is passed over until
 * it is added; a resource no group covers is NoFit; request 0 is fine. */
static void flavor_missing_and_uncovered(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"later", 4, U, U}}};
	wlopt_t cpu = {.res = "cpu"};
	queue_result_t r;
	char buf[256];

	(void)st;
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "w1", "ns", "lq", 0, 1, 2);
	assert_int_equal(add_wl_opt(q, "w2", "ns", "lq", 0, 2, 1, 500, &cpu), GPUQ_OK);
	assert_int_equal(add_wl_opt(q, "w3", "ns", "lq", 0, 3, 1, 0, &cpu), GPUQ_OK);
	cycle(q, 5, &r);
	assert_int_equal(wait_of(q, "w1"), QUEUE_WAIT_NO_FIT);
	assert_int_equal(wait_of(q, "w2"), QUEUE_WAIT_NO_FIT);
	assert_int_equal(state_of(q, "w3"), QUEUE_WL_ADMITTED); /* requests nothing it lacks */
	assert_int_equal(queue_workload_explain(q, "w2", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 2 of 2 in ns/lq: requests cpu, which ClusterQueue cq "
				 "does not cover");
	add_flavor(q, "later");
	cycle(q, 6, &r);
	assert_int_equal(state_of(q, "w1"), QUEUE_WL_ADMITTED);
	assert_string_equal(flavor_of(q, "w1"), "later");
	queue_destroy(q);
}

/* ---- borrowing and lending ---- */

static void borrowing_and_lending_limits(void **st)
{
	static const struct {
		const char *what;
		int64_t blimit1; /* cq1 borrowingLimit */
		int64_t llimit2; /* cq2 lendingLimit */
		int64_t w1, w2;	 /* two workloads in cq1 */
		bool adm1, adm2; /* expected */
		int64_t max_cap; /* cq1 max capacity */
	} cases[] = {
	    {"unlimited borrow", U, U, 6, 2, true, true, 8},
	    {"borrowing limit 1", 1, U, 3, 3, true, false, 5},
	    {"lending limit 1", U, 1, 4, 2, true, false, 5},
	    {"lending limit 2 fits", U, 2, 4, 2, true, true, 6},
	    {"above max capacity", 1, U, 6, 1, false, true, 5},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		queue_t *q = mkq(false);
		cqdef_t d1 = {.cohort = "co", .flavors = {{"f", 4, cases[i].blimit1, U}}};
		cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 4, U, cases[i].llimit2}}};
		queue_quota_view_t qv;
		queue_cohort_view_t cv;
		uint32_t cq1, f, res, co;
		queue_result_t r;

		add_flavor(q, "f");
		add_cq(q, "cq1", &d1);
		add_cq(q, "cq2", &d2);
		add_lq(q, "ns", "lq", "cq1");
		add_wl(q, "w1", "ns", "lq", 0, 1, cases[i].w1);
		add_wl(q, "w2", "ns", "lq", 0, 2, cases[i].w2);
		cycle(q, 5, &r);
		if ((state_of(q, "w1") == QUEUE_WL_ADMITTED) != cases[i].adm1 ||
		    (state_of(q, "w2") == QUEUE_WL_ADMITTED) != cases[i].adm2)
			fail_msg("case %s: w1 %d w2 %d", cases[i].what, state_of(q, "w1"),
				 state_of(q, "w2"));
		assert_int_equal(queue_cq_find(q, "cq1", &cq1), GPUQ_OK);
		assert_int_equal(queue_flavor_find(q, "f", &f), GPUQ_OK);
		assert_int_equal(queue_resource_find(q, "gpu", &res), GPUQ_OK);
		assert_int_equal(queue_cq_quota(q, cq1, f, res, &qv), GPUQ_OK);
		assert_int_equal(qv.max_capacity, cases[i].max_cap);
		assert_int_equal(queue_cohort_find(q, "co", &co), GPUQ_OK);
		assert_int_equal(queue_cohort_quota(q, co, f, res, &cv), GPUQ_OK);
		assert_true(cv.borrowed <= cv.lendable);
		queue_destroy(q);
	}
}

/* ---- queueing strategies and order ---- */

static void strict_vs_best_effort(void **st)
{
	for (int strict = 0; strict < 2; strict++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.strategy = strict ? QUEUE_STRICT_FIFO : QUEUE_BEST_EFFORT_FIFO,
			     .flavors = {{"f", 4, U, U}}};
		queue_result_t r;

		(void)st;
		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		add_wl(q, "x", "ns", "lq", 9, 0, 3);
		cycle(q, 1, &r);
		add_wl(q, "big", "ns", "lq", 0, 2, 2);	 /* older, does not fit */
		add_wl(q, "small", "ns", "lq", 0, 3, 1); /* newer, fits */
		cycle(q, 4, &r);
		if (strict) {
			assert_int_equal(r.n_admissions, 0);
			assert_int_equal(wait_of(q, "big"), QUEUE_WAIT_QUOTA);
			assert_int_equal(wait_of(q, "small"), QUEUE_WAIT_BEHIND_HEAD);
		} else {
			assert_true(admitted_in(&r, "small"));
			assert_int_equal(wait_of(q, "big"), QUEUE_WAIT_QUOTA);
		}
		/* nothing changed: the next cycle does nothing and reports nothing */
		cycle(q, 5, &r);
		assert_int_equal(r.n_admissions + r.n_changes + r.n_evictions, 0);
		/* capacity returns: big goes first */
		assert_int_equal(queue_workload_finish(q, "x", 6), GPUQ_OK);
		cycle(q, 7, &r);
		assert_true(admitted_in(&r, "big"));
		queue_destroy(q);
	}
}

/* A deep BestEffortFIFO queue after a finish: the set-aside work that may
 * fit is retried, the first in order that fit are admitted, and the rest
 * go back aside untried once the freed quota is taken. Their records are
 * not rewritten: only what changed goes to the store (each retried
 * workload's record used to be marked after every finish, 200 here). */
static void best_effort_deep_retry(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.strategy = QUEUE_BEST_EFFORT_FIFO, .flavors = {{"f", 4, U, U}}};
	queue_result_t r;
	char uid[32];

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_lq(q, "ns", "lq2", "cq");
	add_wl(q, "run", "ns", "lq", 9, 0, 4);
	cycle(q, 1, &r);
	for (int i = 0; i < 200; i++) { /* 2, 1, 2, 1, ... GPUs; two queues */
		snprintf(uid, sizeof(uid), "w%03d", i);
		add_wl(q, uid, "ns", i % 3 ? "lq" : "lq2", 0, 2 + i, 1 + (i % 2 == 0));
	}
	cycle(q, 300, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(wait_of(q, "w199"), QUEUE_WAIT_QUOTA);
	queue_dirty_clear(q);
	assert_int_equal(queue_workload_finish(q, "run", 301), GPUQ_OK);
	cycle(q, 302, &r);
	/* in order: w000 (2) and w001 (1) fit, w002 (2) no longer does,
	   w003 (1) does; then nothing of the 4 is left */
	assert_int_equal(r.n_admissions, 3);
	assert_true(admitted_in(&r, "w000"));
	assert_true(admitted_in(&r, "w001"));
	assert_true(admitted_in(&r, "w003"));
	assert_int_equal(state_of(q, "w002"), QUEUE_WL_PENDING);
	assert_int_equal(wait_of(q, "w002"), QUEUE_WAIT_QUOTA);
	/* written: the finished, the three admitted, the queues' and meta
	   records; not the 196 set aside again */
	assert_true(queue_dirty_count(q) < 16);
	/* they wait for the next finish as before: w002 goes first */
	cycle(q, 303, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(queue_workload_finish(q, "w000", 304), GPUQ_OK);
	cycle(q, 305, &r);
	assert_true(admitted_in(&r, "w002"));
	queue_destroy(q);
}

/* Set aside under BestEffortFIFO, then the ClusterQueue turns StrictFIFO:
 * after a finish, the set-aside work goes back in order and the first that
 * does not fit blocks the ones behind it, whether it is too big for what
 * the finish freed after A (3) or for the ClusterQueue (5). A review found
 * B passed over and C admitted ahead of it: the may-fit test sent B back
 * aside untried. */
static void strict_fifo_set_aside_keeps_order(void **st)
{
	for (int big = 0; big < 2; big++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.strategy = QUEUE_BEST_EFFORT_FIFO, .flavors = {{"f", 4, U, U}}};
		queue_result_t r;

		(void)st;
		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		add_wl(q, "run", "ns", "lq", 9, 0, 4);
		cycle(q, 1, &r);
		add_wl(q, "A", "ns", "lq", 0, 2, 2);
		add_wl(q, "B", "ns", "lq", 0, 3, big ? 5 : 3); /* 5: never fits */
		add_wl(q, "C", "ns", "lq", 0, 4, 1);
		cycle(q, 5, &r);
		assert_int_equal(r.n_admissions, 0);
		d.strategy = QUEUE_STRICT_FIFO;
		assert_int_equal(put_cq(q, "cq", &d, true), GPUQ_OK);
		cycle(q, 6, &r);
		assert_int_equal(queue_workload_finish(q, "run", 7), GPUQ_OK);
		cycle(q, 8, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_true(admitted_in(&r, "A"));
		assert_int_equal(state_of(q, "B"), QUEUE_WL_PENDING);
		assert_int_equal(state_of(q, "C"), QUEUE_WL_PENDING);
		queue_destroy(q);
	}
}

/* A head that can never fit: set aside under BestEffortFIFO; under
 * StrictFIFO it stays the head and blocks (Kueue requeues a StrictFIFO
 * head at once for every reason but a namespace mismatch) until the quota
 * changes. */
static void strict_fifo_nofit_head_blocks(void **st)
{
	for (int strict = 0; strict < 2; strict++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.strategy = strict ? QUEUE_STRICT_FIFO : QUEUE_BEST_EFFORT_FIFO,
			     .flavors = {{"f", 4, U, U}}};
		queue_result_t r;

		(void)st;
		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		add_wl(q, "huge", "ns", "lq", 0, 1, 5);	 /* above the CQ's 4: never fits */
		add_wl(q, "small", "ns", "lq", 0, 2, 1); /* newer, fits */
		cycle(q, 3, &r);
		assert_int_equal(wait_of(q, "huge"), QUEUE_WAIT_NO_FIT);
		if (strict) {
			assert_int_equal(r.n_admissions, 0);
			assert_int_equal(wait_of(q, "small"), QUEUE_WAIT_BEHIND_HEAD);
		} else {
			assert_true(admitted_in(&r, "small"));
		}
		/* the quota grows: the head fits and goes first */
		d.flavors[0].nominal = 6;
		assert_int_equal(put_cq(q, "cq", &d, true), GPUQ_OK);
		cycle(q, 4, &r);
		assert_true(admitted_in(&r, "huge"));
		assert_int_equal(state_of(q, "small"), QUEUE_WL_ADMITTED); /* 5 + 1 of 6 */
		queue_destroy(q);
	}
}

/* flavorFungibility, as Kueue's flavor search: whenCanBorrow,
 * whenCanPreempt and preference decide between a first flavor that is not
 * ideal and a later one. */
static void flavor_fungibility(void **st)
{
	static const struct {
		const char *what;
		queue_fungible_t borrow, preempt;
		queue_preference_t pref;
		int64_t f1, f2; /* a's nominal quota on each flavor */
		bool low_on_f2; /* a low-priority workload of a's own fills f2 */
		const char *want;
	} cases[] = {
	    /* w (3) fits f1 only by borrowing, f2 (4) without */
	    {"borrow: may stop (default)", 0, 0, 0, 2, 4, false, "f1"},
	    {"borrow: try next", QUEUE_FUNGIBLE_TRY_NEXT, 0, 0, 2, 4, false, "f2"},
	    /* w fits f1 only by borrowing; on f2 it must preempt a's own */
	    {"borrowing over preemption (default)", QUEUE_FUNGIBLE_TRY_NEXT,
	     QUEUE_FUNGIBLE_TRY_NEXT, QUEUE_PREFER_BORROWING, 2, 4, true, "f1"},
	    {"preemption over borrowing", QUEUE_FUNGIBLE_TRY_NEXT, QUEUE_FUNGIBLE_TRY_NEXT,
	     QUEUE_PREFER_PREEMPTION, 2, 4, true, "f2"},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		queue_t *q = mkq(false);
		cqdef_t a = {.cohort = "co",
			     .within = QUEUE_WITHIN_LOWER_PRIORITY,
			     .when_can_borrow = cases[i].borrow,
			     .when_can_preempt = cases[i].preempt,
			     .preference = cases[i].pref,
			     .flavors = {{"f1", cases[i].f1, U, U}, {"f2", cases[i].f2, U, U}}};
		cqdef_t lender = {.cohort = "co", .flavors = {{"f1", 4, U, U}}};
		queue_result_t r;

		add_flavor(q, "f1");
		add_flavor(q, "f2");
		add_cq(q, "a", &a);
		add_cq(q, "lender", &lender);
		add_lq(q, "ns", "a", "a");
		if (cases[i].low_on_f2) {
			/* f1 full with a's own 2, so the low one lands on f2 */
			add_wl(q, "own", "ns", "a", 5, 1, 2);
			add_wl(q, "low", "ns", "a", 0, 2, 4);
			cycle(q, 3, &r);
			assert_string_equal(flavor_of(q, "low"), "f2");
			assert_int_equal(queue_workload_finish(q, "own", 4), GPUQ_OK);
		}
		add_wl(q, "w", "ns", "a", 9, 10, 3);
		cycle(q, 11, &r);
		if (admitted_in(&r, "w")) {
			if (strcmp(flavor_of(q, "w"), cases[i].want) != 0)
				fail_msg("%s: admitted on %s, want %s", cases[i].what,
					 flavor_of(q, "w"), cases[i].want);
		} else {
			/* preempting: its victim says which flavor it chose */
			assert_int_equal(r.n_evictions, 1);
			if (strcmp(cases[i].want, "f2") != 0)
				fail_msg("%s: preempted on f2, want %s", cases[i].what,
					 cases[i].want);
		}
		queue_destroy(q);
	}
}

static void priority_then_creation_then_uid(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 1, U, U}}};
	static const char *const want[] = {"hi", "old", "a-same", "b-same"};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "b-same", "ns", "lq", 0, 50, 1);
	add_wl(q, "a-same", "ns", "lq", 0, 50, 1);
	add_wl(q, "old", "ns", "lq", 0, 10, 1);
	add_wl(q, "hi", "ns", "lq", 5, 99, 1);
	for (int i = 0; i < 4; i++) {
		cycle(q, 100 + i * 2, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, want[i]);
		assert_int_equal(queue_workload_finish(q, want[i], 101 + i * 2), GPUQ_OK);
	}
	queue_destroy(q);
}

/* A cycle goes on past the head and admits everything that fits. */
static void cycle_admits_everything_that_fits(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 100, U, U}}};
	queue_result_t r;
	char uid[16];

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	for (int i = 0; i < 60; i++) {
		snprintf(uid, sizeof(uid), "w%02d", i);
		add_wl(q, uid, "ns", "lq", 0, i, 2);
	}
	cycle(q, 100, &r);
	assert_int_equal(r.n_admissions, 50);
	assert_string_equal(r.admissions[0].uid, "w00");
	assert_string_equal(r.admissions[49].uid, "w49");
	queue_destroy(q);
}

/* Two heads want the same last GPUs: a1 (higher priority) takes them; b1,
 * which fitted when it became head, was skipped (Kueue: "no longer fits
 * after processing another workload") and stays in the active queue: the
 * next cycle tries it again at once, with no event in between, and only
 * then sets it aside with its real reason. (It used to be set aside in the
 * first cycle, retried only once capacity grew.) */
static void skipped_head_retried_next_cycle(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t dx = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
	cqdef_t d0 = {.cohort = "co", .flavors = {{"f", 0, U, U}}};
	queue_result_t r;
	char why[256];

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "x", &dx); /* lends its idle 4 */
	add_cq(q, "a", &d0);
	add_cq(q, "b", &d0);
	add_lq(q, "ns", "la", "a");
	add_lq(q, "ns", "lb", "b");
	add_wl(q, "a1", "ns", "la", 5, 1, 4);
	add_wl(q, "b1", "ns", "lb", 0, 2, 4);
	cycle(q, 10, &r);
	assert_true(admitted_in(&r, "a1"));
	assert_int_equal(wait_of(q, "b1"), QUEUE_WAIT_QUOTA);
	assert_int_equal(queue_workload_explain(q, "b1", why, sizeof(why)), GPUQ_OK);
	if (!strstr(why, "another workload took the quota it fitted in this cycle"))
		fail_msg("b1 was not skipped: %s", why);
	cycle(q, 11, &r); /* nothing happened in between */
	assert_int_equal(r.n_changes, 1);
	assert_string_equal(r.changes[0].uid, "b1");
	assert_int_equal(r.changes[0].reason, QUEUE_WAIT_QUOTA);
	assert_int_equal(queue_workload_explain(q, "b1", why, sizeof(why)), GPUQ_OK);
	if (!strstr(why, "cohort borrowing limit reached") || strstr(why, "tries again"))
		fail_msg("b1 not set aside in the second cycle: %s", why);
	cycle(q, 12, &r); /* set aside now: retried once capacity grows */
	assert_int_equal(r.n_changes, 0);
	assert_int_equal(queue_workload_finish(q, "a1", 13), GPUQ_OK);
	cycle(q, 14, &r);
	assert_true(admitted_in(&r, "b1"));
	queue_destroy(q);
}

/* A workload found running in the cluster is adopted on its flavor: it holds
 * quota past nominal if need be, and the next cycle admits only what is left. */
static void adopt_running_workload(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"a", 4, U, U}, {"b", 4, U, U}}};
	queue_adopt_t on_b = {.podset = 0, .resource = "gpu", .flavor = "b"};
	queue_adopt_t bad = {.podset = 0, .resource = "gpu", .flavor = "nope"};
	queue_quota_view_t v;
	queue_result_t r;
	uint32_t cq, fb, res;

	(void)st;
	add_flavor(q, "a");
	add_flavor(q, "b");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "run", "ns", "lq", 0, 1, 3);
	add_wl(q, "big", "ns", "lq", 0, 2, 6);
	add_wl(q, "next", "ns", "lq", 0, 3, 1);
	assert_int_equal(queue_workload_adopt(q, "nobody", &on_b, 1, 5), GPUQ_ENOTFOUND);
	assert_int_equal(queue_workload_adopt(q, "run", &bad, 1, 5), GPUQ_ENOTFOUND);
	assert_int_equal(state_of(q, "run"), QUEUE_WL_PENDING);
	assert_int_equal(queue_workload_adopt(q, "run", &on_b, 1, 5), GPUQ_OK);
	assert_int_equal(state_of(q, "run"), QUEUE_WL_ADMITTED);
	assert_string_equal(flavor_of(q, "run"), "b");
	assert_int_equal(queue_workload_adopt(q, "run", &on_b, 1, 6), GPUQ_EINVAL);
	assert_int_equal(queue_cq_find(q, "cq", &cq), GPUQ_OK);
	assert_int_equal(queue_flavor_find(q, "b", &fb), GPUQ_OK);
	assert_int_equal(queue_resource_find(q, "gpu", &res), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, cq, fb, res, &v), GPUQ_OK);
	assert_int_equal(v.usage, 3);
	/* "big" (6) no longer fits anywhere, "next" (1) fits on a */
	cycle(q, 10, &r);
	assert_false(admitted_in(&r, "run"));
	assert_true(admitted_in(&r, "next"));
	assert_int_equal(state_of(q, "big"), QUEUE_WL_PENDING);
	/* adopting past nominal is allowed: the cluster's truth wins */
	assert_int_equal(queue_workload_adopt(q, "big", &on_b, 1, 11), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, cq, fb, res, &v), GPUQ_OK);
	assert_int_equal(v.usage, 9);
	assert_int_equal(queue_workload_finish(q, "big", 20), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, cq, fb, res, &v), GPUQ_OK);
	assert_int_equal(v.usage, 3);
	queue_destroy(q);
}

/* ---- preemption ---- */

/* Fair-sharing weights: at equal borrowing, the heavier CQ has the lower
 * weighted share and goes first. */
static void fair_sharing_weights(void **st)
{
	queue_t *q = mkq(true);
	cqdef_t da = {.cohort = "co", .weight = 1000, .flavors = {{"f", 2, U, U}}};
	cqdef_t db = {.cohort = "co", .weight = 3000, .flavors = {{"f", 2, U, U}}};
	cqdef_t dl = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
	queue_result_t r;
	uint32_t cqa, cqb;
	queue_stats_t sa, sb;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq-a", &da);
	add_cq(q, "cq-b", &db);
	add_cq(q, "lender", &dl);
	add_lq(q, "ns", "la", "cq-a");
	add_lq(q, "ns", "lb", "cq-b");
	/* both borrow 2 of the lender's 2 (and of each other's): only one fits */
	add_wl(q, "a1", "ns", "la", 5, 1, 4);
	add_wl(q, "b1", "ns", "lb", 0, 2, 4);
	cycle(q, 10, &r);
	assert_int_equal(r.n_admissions, 1);
	assert_string_equal(r.admissions[0].uid, "b1");
	assert_true(r.admissions[0].borrows);
	assert_int_equal(queue_cq_find(q, "cq-a", &cqa), GPUQ_OK);
	assert_int_equal(queue_cq_find(q, "cq-b", &cqb), GPUQ_OK);
	assert_int_equal(queue_cq_stats(q, cqa, &sa), GPUQ_OK);
	assert_int_equal(queue_cq_stats(q, cqb, &sb), GPUQ_OK);
	assert_int_equal(sa.weighted_share, 0);
	assert_int_equal(sb.weighted_share, 111111); /* 2 of 6 lendable = 333,333 ppm, weight 3 */
	queue_destroy(q);
}

/* Listing: pending in the order the next cycle tries them, admitted by
 * admission time; history counters follow. */
static void listing_and_counters(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 2, U, U}}};
	queue_result_t r;
	queue_wl_t ids[8];
	queue_workload_view_t v;
	queue_stats_t cs, ls;
	uint32_t cq, lq;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "w1", "ns", "lq", 0, 1, 1);
	add_wl(q, "w2", "ns", "lq", 0, 2, 1);
	add_wl(q, "w3", "ns", "lq", 0, 3, 1);
	add_wl(q, "w4", "ns", "lq", 9, 4, 1);
	cycle(q, 10, &r);
	assert_int_equal(queue_cq_find(q, "cq", &cq), GPUQ_OK);
	assert_int_equal(queue_cq_workloads(q, cq, QUEUE_WL_ADMITTED, ids, 8), 2);
	assert_int_equal(queue_workload_view(q, ids[0], &v), GPUQ_OK);
	assert_string_equal(v.uid, "w1"); /* same time: by uid */
	assert_int_equal(queue_cq_workloads(q, cq, QUEUE_WL_PENDING, ids, 1), 2);
	assert_int_equal(queue_workload_view(q, ids[0], &v), GPUQ_OK);
	assert_string_equal(v.uid, "w2");
	assert_int_equal(queue_workload_finish(q, "w4", 20), GPUQ_OK);
	cycle(q, 21, &r);
	assert_true(admitted_in(&r, "w2"));
	assert_int_equal(queue_cq_stats(q, cq, &cs), GPUQ_OK);
	assert_int_equal(cs.admissions, 3);
	assert_int_equal(cs.finishes, 1);
	assert_int_equal(cs.pending, 1);
	assert_int_equal(cs.admitted, 2);
	assert_int_equal(queue_lq_find(q, "ns", "lq", &lq), GPUQ_OK);
	assert_int_equal(queue_lq_stats(q, lq, &ls), GPUQ_OK);
	assert_true(ls.used_ms == 10.0); /* 1 gpu for 10 ms */
	assert_int_equal(queue_cq_workloads(q, cq, QUEUE_WL_FINISHED, ids, 8), 1);
	queue_destroy(q);
}

/* ---- tenants ---- */

/* Admission fair sharing: the tenant with less decayed usage goes first; a
 * heavy user is not starved once its usage decays. */
static void tenant_decay_order_and_no_starvation(void **st)
{
	queue_config_t cfg;
	queue_t *q = NULL;
	cqdef_t d = {.flavors = {{"f", 4, U, U}}, .afs = true};
	queue_result_t r;
	uint32_t la, lb;
	queue_stats_t sa, sb;
	char uid[16];
	int64_t now = 0;

	(void)st;
	queue_config_default(&cfg);
	cfg.tenant_half_life_ms = 1000;
	cfg.tenant_sample_ms = 100;
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "a", "lq", "cq");
	add_lq(q, "b", "lq", "cq");
	assert_int_equal(queue_lq_find(q, "a", "lq", &la), GPUQ_OK);
	assert_int_equal(queue_lq_find(q, "b", "lq", &lb), GPUQ_OK);
	cycle(q, now, &r);
	/* tenant a uses the whole CQ for a while */
	add_wl(q, "a-hog", "a", "lq", 0, 0, 4);
	cycle(q, now += 1, &r);
	assert_true(admitted_in(&r, "a-hog"));
	for (int i = 0; i < 20; i++)
		assert_int_equal(queue_tick(q, now += 100, NULL), GPUQ_OK);
	assert_int_equal(queue_workload_finish(q, "a-hog", now), GPUQ_OK);
	queue_tick(q, now, NULL);
	assert_int_equal(queue_lq_stats(q, la, &sa), GPUQ_OK);
	assert_int_equal(queue_lq_stats(q, lb, &sb), GPUQ_OK);
	assert_true(sa.decayed_usage > 0.5);
	assert_true(sb.decayed_usage == 0.0);
	/* equal priority, a's workload older: b still goes first, then they interleave */
	for (int i = 0; i < 4; i++) {
		snprintf(uid, sizeof(uid), "a%d", i);
		add_wl(q, uid, "a", "lq", 0, now + i, 1);
		snprintf(uid, sizeof(uid), "b%d", i);
		add_wl(q, uid, "b", "lq", 0, now + 10 + i, 1);
	}
	cycle(q, now += 1, &r);
	assert_int_equal(r.n_admissions, 4);
	for (size_t k = 0; k < 4; k++)
		assert_int_equal(r.admissions[k].uid[0], 'b');
	/* now b holds the whole CQ for a long time while a's usage decays: a,
	 * which used less recently, goes first next (no starvation) */
	for (int i = 0; i < 40; i++)
		queue_tick(q, now += 100, NULL);
	for (int i = 0; i < 4; i++) {
		snprintf(uid, sizeof(uid), "b%d", i);
		assert_int_equal(queue_workload_finish(q, uid, now), GPUQ_OK);
	}
	assert_int_equal(queue_lq_stats(q, la, &sa), GPUQ_OK);
	assert_int_equal(queue_lq_stats(q, lb, &sb), GPUQ_OK);
	assert_true(sa.decayed_usage < sb.decayed_usage);
	add_wl(q, "b9", "b", "lq", 0, 0, 1); /* older than every a */
	cycle(q, now += 1, &r);
	assert_int_equal(r.n_admissions, 4);
	assert_int_equal(r.admissions[0].uid[0], 'a');
	queue_destroy(q);
}

/* A new leader's fresh core takes the usage a former leader reported: a
 * tenant seeded with usage goes after one with none, as it would have on the
 * old core; a tenant with history of its own keeps it. */
static void tenant_usage_seeded(void **st)
{
	queue_config_t cfg;
	queue_t *q = NULL;
	cqdef_t d = {.flavors = {{"f", 2, U, U}}, .afs = true};
	queue_result_t r;
	queue_stats_t sa;
	uint32_t la, lb;

	(void)st;
	queue_config_default(&cfg);
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "a", "lq", "cq");
	add_lq(q, "b", "lq", "cq");
	assert_int_equal(queue_lq_find(q, "a", "lq", &la), GPUQ_OK);
	assert_int_equal(queue_lq_find(q, "b", "lq", &lb), GPUQ_OK);
	assert_int_equal(queue_lq_usage_seed(q, la, 0.75), GPUQ_OK);
	assert_int_equal(queue_lq_stats(q, la, &sa), GPUQ_OK);
	assert_true(sa.decayed_usage == 0.75);
	assert_int_equal(queue_lq_usage_seed(q, la, 0.1), GPUQ_EEXIST); /* kept */
	assert_int_equal(queue_lq_usage_seed(q, lb, -1), GPUQ_EINVAL);
	assert_int_equal(queue_lq_usage_seed(q, lb, NAN), GPUQ_EINVAL);
	assert_int_equal(queue_lq_usage_seed(q, 99, 1), GPUQ_ENOTFOUND);
	/* a's workloads are older, b has no usage: b first */
	add_wl(q, "a0", "a", "lq", 0, 0, 1);
	add_wl(q, "a1", "a", "lq", 0, 1, 1);
	add_wl(q, "b0", "b", "lq", 0, 10, 1);
	cycle(q, 20, &r);
	assert_int_equal(r.n_admissions, 2);
	assert_string_equal(r.admissions[0].uid, "b0");
	queue_destroy(q);
}

/* The pending workloads of CQ "cq" in listing order, as "uid uid ...". */
static void pending_order(queue_t *q, char *buf, size_t cap)
{
	queue_wl_t ids[16];
	uint32_t cq;
	size_t n, used = 0;

	assert_int_equal(queue_cq_find(q, "cq", &cq), GPUQ_OK);
	n = queue_cq_workloads(q, cq, QUEUE_WL_PENDING, ids, 16);
	buf[0] = '\0';
	for (size_t i = 0; i < n && i < 16 && used < cap; i++) {
		queue_workload_view_t v;

		assert_int_equal(queue_workload_view(q, ids[i], &v), GPUQ_OK);
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? " " : "", v.uid);
	}
}

/* Admission fair sharing is a switch of each ClusterQueue (Kueue's
 * admissionScope UsageBasedAdmissionFairSharing). Without it the CQ takes
 * priority, then creation, whatever its LocalQueues used (Kueue's default
 * order); with it the tenant key (decayed usage / weight) comes first, before
 * priority. The listing follows the cycle's order. */
static void admission_fair_sharing_switch(void **st)
{
	static const char *const order[2] = {"a-high a-old b-new", "b-new a-high a-old"};
	static const char *const first[2] = {"a-high", "b-new"};

	(void)st;
	for (int afs = 0; afs < 2; afs++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.flavors = {{"f", 1, U, U}}, .afs = afs};
		queue_result_t r;
		uint32_t la;
		char buf[128];

		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		add_lq(q, "a", "lq", "cq");
		add_lq(q, "b", "lq", "cq");
		assert_int_equal(queue_lq_find(q, "a", "lq", &la), GPUQ_OK);
		assert_int_equal(queue_lq_usage_seed(q, la, 0.5), GPUQ_OK);
		/* a used half the CQ recently; its workloads are older, one of
		 * them of a higher priority; b used nothing */
		add_wl(q, "a-old", "a", "lq", 0, 0, 1);
		add_wl(q, "a-high", "a", "lq", 5, 1, 1);
		add_wl(q, "b-new", "b", "lq", 0, 2, 1);
		pending_order(q, buf, sizeof(buf));
		assert_string_equal(buf, order[afs]);
		cycle(q, 10, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, first[afs]);
		queue_destroy(q);
	}
}

/* The LocalQueue's weight divides its usage: a tenant of weight 4 that used
 * 0.5 (key 0.125) goes before one of weight 1 that used 0.2. */
static void admission_fair_sharing_weight(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 1, U, U}}, .afs = true};
	queue_result_t r;
	uint32_t la, lb;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	assert_int_equal(queue_lq_add(q, "a", "lq", "cq", 4000, &la, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "b", "lq", "cq", 1000, &lb, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_usage_seed(q, la, 0.5), GPUQ_OK);
	assert_int_equal(queue_lq_usage_seed(q, lb, 0.2), GPUQ_OK);
	add_wl(q, "b0", "b", "lq", 0, 0, 1);
	add_wl(q, "a0", "a", "lq", 0, 1, 1);
	cycle(q, 10, &r);
	assert_int_equal(r.n_admissions, 1);
	assert_string_equal(r.admissions[0].uid, "a0");
	queue_destroy(q);
}

/* A LocalQueue weight of 0 (Kueue's fairSharing.weight: 0) is kept, not
 * taken for the default: with any usage its workloads go after every other
 * tenant's, even one that used far more; with none it is not held back. */
static void admission_fair_sharing_weight_zero(void **st)
{
	for (int used = 0; used < 2; used++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.flavors = {{"f", 1, U, U}}, .afs = true};
		queue_result_t r;
		uint32_t la, lb;

		(void)st;
		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		assert_int_equal(queue_lq_add(q, "a", "lq", "cq", QUEUE_WEIGHT_ZERO, &la, NULL),
				 GPUQ_OK);
		assert_int_equal(queue_lq_add(q, "b", "lq", "cq", 1000, &lb, NULL), GPUQ_OK);
		if (used)
			assert_int_equal(queue_lq_usage_seed(q, la, 0.001), GPUQ_OK);
		assert_int_equal(queue_lq_usage_seed(q, lb, 50.0), GPUQ_OK);
		add_wl(q, "a0", "a", "lq", 0, 0, 1);
		add_wl(q, "b0", "b", "lq", 0, 1, 1);
		cycle(q, 10, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, used ? "b0" : "a0");
		queue_destroy(q);
	}
}

/* queue_cq_update turns the switch on and off in place: the pending order
 * follows at once. */
static void admission_fair_sharing_update(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 0, U, U}}};
	uint32_t la;
	char buf[128];

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "a", "lq", "cq");
	add_lq(q, "b", "lq", "cq");
	assert_int_equal(queue_lq_find(q, "a", "lq", &la), GPUQ_OK);
	assert_int_equal(queue_lq_usage_seed(q, la, 0.5), GPUQ_OK);
	add_wl(q, "a0", "a", "lq", 0, 0, 1);
	add_wl(q, "a1", "a", "lq", 0, 1, 1);
	add_wl(q, "b0", "b", "lq", 0, 2, 1);
	pending_order(q, buf, sizeof(buf));
	assert_string_equal(buf, "a0 a1 b0");
	d.afs = true;
	assert_int_equal(put_cq(q, "cq", &d, true), GPUQ_OK);
	pending_order(q, buf, sizeof(buf));
	assert_string_equal(buf, "b0 a0 a1");
	d.afs = false;
	assert_int_equal(put_cq(q, "cq", &d, true), GPUQ_OK);
	pending_order(q, buf, sizeof(buf));
	assert_string_equal(buf, "a0 a1 b0");
	queue_destroy(q);
}

/* StrictFIFO with admission fair sharing: a planned preemptor goes first.
 * Its victim, of a LocalQueue with less usage, would otherwise come back
 * ahead of it by its tenant key, take the quota it freed, and be preempted
 * again, at one instant. */
static void admission_fair_sharing_strict_preemptor_first(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 1, U, U}},
		     .strategy = QUEUE_STRICT_FIFO,
		     .within = QUEUE_WITHIN_LOWER_PRIORITY,
		     .afs = true};
	queue_result_t r;
	uint32_t la;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "a", "lq", "cq");
	add_lq(q, "b", "lq", "cq");
	assert_int_equal(queue_lq_find(q, "a", "lq", &la), GPUQ_OK);
	assert_int_equal(queue_lq_usage_seed(q, la, 0.9), GPUQ_OK);
	add_wl(q, "low", "b", "lq", 0, 0, 1);
	cycle(q, 1, &r);
	assert_true(admitted_in(&r, "low"));
	add_wl(q, "high", "a", "lq", 5, 2, 1);
	cycle(q, 3, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].victim_uid, "low");
	for (int i = 0; i < 3; i++) {
		cycle(q, 3, &r);
		assert_int_equal(r.n_evictions, 0);
		if (r.n_admissions)
			break;
	}
	assert_int_equal(state_of(q, "high"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "low"), QUEUE_WL_PENDING);
	queue_destroy(q);
}

/* ---- gangs ---- */

static void gang_all_or_nothing(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 6, U, U}}};
	wlopt_t gang = {.gang_total = 4, .pods_present = 2};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	/* a Job of parallelism 8 x 1 gpu does not fit in 6: nothing admitted */
	assert_int_equal(add_wl_opt(q, "job8", "ns", "lq", 0, 1, 8, 1, NULL), GPUQ_OK);
	/* a pod group of 4, 2 pods present */
	assert_int_equal(add_wl_opt(q, "grp", "ns", "lq", 0, 2, 4, 1, &gang), GPUQ_OK);
	cycle(q, 10, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(wait_of(q, "job8"), QUEUE_WAIT_NO_FIT);
	assert_int_equal(wait_of(q, "grp"), QUEUE_WAIT_GANG);
	assert_int_equal(queue_workload_pods_add(q, "grp", 1, 11), GPUQ_OK);
	cycle(q, 12, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(queue_workload_pods_add(q, "grp", 5, 13), GPUQ_OK); /* capped at 4 */
	cycle(q, 14, &r);
	assert_true(admitted_in(&r, "grp"));
	assert_int_equal(r.admissions[0].assign[0].amount, 4);
	assert_int_equal(queue_workload_pods_add(q, "job8", 1, 15), GPUQ_EINVAL);
	queue_destroy(q);
}

static void gang_ready_timeout_backoff(void **st)
{
	queue_config_t cfg;
	queue_t *q = NULL;
	cqdef_t d = {.flavors = {{"f", 4, U, U}}};
	wlopt_t gang = {.gang_total = 2, .pods_present = 2};
	queue_result_t r;
	queue_wl_t id;
	queue_workload_view_t v;
	char buf[256];

	(void)st;
	queue_config_default(&cfg);
	cfg.ready_timeout_ms = 1000;
	cfg.backoff_base_ms = 100;
	cfg.backoff_max_ms = 250;
	cfg.tenant_sample_ms = 0;
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	assert_int_equal(add_wl_opt(q, "g", "ns", "lq", 0, 0, 2, 1, &gang), GPUQ_OK);
	cycle(q, 0, &r);
	assert_true(admitted_in(&r, "g"));
	assert_int_equal(queue_next_event(q, 0), 1000);
	assert_int_equal(queue_tick(q, 999, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_tick(q, 1000, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].reason_name, "PodsReadyTimeout");
	assert_null(r.evictions[0].preemptor_uid);
	assert_int_equal(wait_of(q, "g"), QUEUE_WAIT_BACKOFF);
	assert_int_equal(queue_workload_explain(q, "g", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 1 of 1 in ns/lq: requeued after 1 PodsReady "
				 "timeout(s); not eligible before 1100 ms");
	cycle(q, 1099, &r);
	assert_int_equal(r.n_admissions, 0);
	cycle(q, 1100, &r);
	assert_true(admitted_in(&r, "g"));
	/* second timeout: backoff doubles (200), third: capped at 250 */
	queue_tick(q, 2100, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_int_equal(queue_workload_find(q, "g", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.eligible_ms, 2300);
	cycle(q, 2300, &r);
	assert_true(admitted_in(&r, "g"));
	queue_tick(q, 3300, &r);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.eligible_ms, 3550);
	cycle(q, 3550, &r);
	assert_true(admitted_in(&r, "g"));
	/* Ready in time: no eviction, and the backoff resets */
	assert_int_equal(queue_workload_pods_ready(q, "g", 3600), GPUQ_OK);
	queue_tick(q, 9999, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.requeues, 0);
	queue_destroy(q);
}

/* ---- explanations ---- */

static void explain_strings(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d1 = {.cohort = "co", .flavors = {{"h100-80gb", 4, 2, U}}};
	cqdef_t d2 = {.cohort = "co", .flavors = {{"h100-80gb", 4, U, U}}};
	cqdef_t d3 = {.flavors = {{"h100-80gb", 2, U, U}}};
	queue_result_t r;
	char buf[256];

	(void)st;
	add_flavor(q, "h100-80gb");
	add_cq(q, "gpu", &d1);
	add_cq(q, "other", &d2);
	add_cq(q, "solo", &d3);
	add_lq(q, "team-a", "gpu", "gpu");
	add_lq(q, "team-a", "solo", "solo");
	add_wl(q, "w1", "team-a", "gpu", 0, 1, 2);
	add_wl(q, "w2", "team-a", "gpu", 0, 2, 8);
	add_wl(q, "w3", "team-a", "gpu", 0, 3, 5);
	add_wl(q, "s1", "team-a", "solo", 0, 1, 2);
	add_wl(q, "s2", "team-a", "solo", 0, 2, 1);
	assert_int_equal(queue_workload_explain(q, "w3", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 3 of 3 in team-a/gpu: waiting for the next admission "
				 "cycle");
	cycle(q, 5, &r);
	assert_int_equal(queue_workload_explain(q, "w1", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "admitted in ClusterQueue gpu: 2 gpu on flavor h100-80gb");
	assert_int_equal(queue_workload_explain(q, "w2", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 1 of 2 in team-a/gpu: needs 8 gpu on flavor "
				 "h100-80gb, more than ClusterQueue gpu could ever hold (6)");
	assert_int_equal(queue_workload_explain(q, "w3", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 2 of 2 in team-a/gpu: needs 5 gpu on flavor "
				 "h100-80gb, 4 free; borrowing limit of ClusterQueue gpu reached");
	assert_int_equal(queue_workload_explain(q, "s2", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 1 of 1 in team-a/solo: needs 1 gpu on flavor "
				 "h100-80gb, 0 free; nominal quota of ClusterQueue solo reached");
	/* truncation is reported, and every cut is the text's prefix */
	assert_int_equal(queue_workload_explain(q, "s2", buf, 10), GPUQ_ELIMIT);
	assert_int_equal(strlen(buf), 9);
	{
		char full[256], cut[256];
		size_t n;

		assert_int_equal(queue_workload_explain(q, "w3", full, sizeof(full)), GPUQ_OK);
		n = strlen(full);
		for (size_t cap = 1; cap <= n; cap++) {
			assert_int_equal(queue_workload_explain(q, "w3", cut, cap), GPUQ_ELIMIT);
			assert_int_equal(strlen(cut), cap - 1);
			assert_memory_equal(cut, full, cap - 1);
		}
	}
	assert_int_equal(queue_workload_explain(q, "nope", buf, sizeof(buf)), GPUQ_ENOTFOUND);
	queue_destroy(q);
}

/* The coarse status (gpuq.dev/status): the state and a reason that the
 * position and the free figures never change, so admissions ahead of a
 * workload cost its annotation no write. */
static void status_coarse(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d1 = {.cohort = "co", .flavors = {{"h100-80gb", 4, 2, U}}};
	cqdef_t d2 = {.cohort = "co", .flavors = {{"h100-80gb", 4, U, U}}};
	cqdef_t d3 = {.flavors = {{"h100-80gb", 2, U, U}}};
	queue_result_t r;
	queue_wl_t id;
	char buf[256], before[256], waiting[256];

	(void)st;
	add_flavor(q, "h100-80gb");
	add_cq(q, "gpu", &d1);
	add_cq(q, "other", &d2);
	add_cq(q, "solo", &d3);
	add_lq(q, "team-a", "gpu", "gpu");
	add_lq(q, "team-a", "solo", "solo");
	add_wl(q, "w1", "team-a", "gpu", 0, 1, 2);
	add_wl(q, "w2", "team-a", "gpu", 0, 2, 8);
	add_wl(q, "w3", "team-a", "gpu", 0, 3, 5);
	add_wl(q, "s1", "team-a", "solo", 0, 1, 2);
	add_wl(q, "s2", "team-a", "solo", 0, 2, 2);
	add_wl(q, "s3", "team-a", "solo", 0, 3, 2);
	assert_int_equal(queue_status_waiting("gpu", waiting, sizeof(waiting)), GPUQ_OK);
	assert_string_equal(waiting, "pending in ClusterQueue gpu: waiting for quota");
	assert_int_equal(queue_workload_find(q, "w3", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, waiting); /* eligible, not tried yet */
	cycle(q, 5, &r);
	assert_int_equal(queue_workload_find(q, "w1", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "admitted in ClusterQueue gpu: 2 gpu on flavor h100-80gb");
	/* it can never fit: the policy's figures, which the queue does not move */
	assert_int_equal(queue_workload_find(q, "w2", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "pending in ClusterQueue gpu: needs 8 gpu on flavor h100-80gb, "
				 "more than ClusterQueue gpu could ever hold (6)");
	/* no quota now: waiting, without the free figure or the position */
	assert_int_equal(queue_workload_find(q, "w3", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, waiting);
	/* s3 moves from position 2 to 1 as s2 is admitted: its explanation
	 * changes, its status does not */
	assert_int_equal(queue_workload_find(q, "s3", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, before, sizeof(before)), GPUQ_OK);
	assert_int_equal(queue_status_waiting("solo", waiting, sizeof(waiting)), GPUQ_OK);
	assert_string_equal(before, waiting);
	assert_int_equal(queue_workload_explain(q, "s3", buf, sizeof(buf)), GPUQ_OK);
	assert_non_null(strstr(buf, "position 2 of 2"));
	assert_int_equal(queue_workload_finish(q, "s1", 6), GPUQ_OK);
	cycle(q, 7, &r);
	assert_int_equal(r.n_admissions, 1);
	assert_int_equal(queue_workload_explain(q, "s3", buf, sizeof(buf)), GPUQ_OK);
	assert_non_null(strstr(buf, "position 1 of 1"));
	assert_int_equal(queue_workload_status(q, id, buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, before);
	/* truncation and dead ids */
	assert_int_equal(queue_workload_status(q, id, buf, 10), GPUQ_ELIMIT);
	assert_int_equal(strlen(buf), 9);
	assert_int_equal(queue_status_waiting("solo", buf, 10), GPUQ_ELIMIT);
	assert_int_equal(queue_workload_status(q, 100000, buf, sizeof(buf)), GPUQ_ENOTFOUND);
	queue_destroy(q);
}

static void explain_cohort_limit(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d1 = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
	cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
	adm_t a[] = {{"x", 0, 1, 3}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;
	char buf[256];

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "c1", &d1);
	add_cq(q, "c2", &d2);
	add_lq(q, "ns", "l1", "c1");
	add_lq(q, "ns", "l2", "c2");
	admit_all(q, "l2", a, 2, &now);
	add_wl(q, "w", "ns", "l1", 0, 5, 6);
	cycle(q, ++now, &r);
	assert_int_equal(queue_workload_explain(q, "w", buf, sizeof(buf)), GPUQ_OK);
	assert_string_equal(buf, "position 1 of 1 in ns/l1: needs 6 gpu on flavor f, 5 free; "
				 "cohort borrowing limit reached");
	queue_destroy(q);
}

/* ---- stop policy and updates ---- */

static void stop_policy_and_quota_update(void **st)
{
	queue_t *q = mkq(false);
	static const char *const cov[] = {"gpu"};
	queue_quota_spec_t qs = {2, U, U};
	queue_flavor_quota_spec_t fl = {"f", &qs};
	queue_group_spec_t g = {cov, 1, &fl, 1};
	queue_cq_spec_t s = {.name = "cq", .groups = &g, .n_groups = 1};
	queue_result_t r;

	(void)st;
	add_flavor(q, "f");
	assert_int_equal(queue_cq_add(q, &s, NULL, NULL), GPUQ_OK);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "w1", "ns", "lq", 0, 1, 2);
	add_wl(q, "w2", "ns", "lq", 0, 2, 2);
	s.stop = QUEUE_STOP_HOLD;
	assert_int_equal(queue_cq_update(q, &s, NULL), GPUQ_OK);
	cycle(q, 3, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(wait_of(q, "w1"), QUEUE_WAIT_STOPPED);
	s.stop = QUEUE_STOP_NONE;
	assert_int_equal(queue_cq_update(q, &s, NULL), GPUQ_OK);
	cycle(q, 4, &r);
	assert_int_equal(r.n_admissions, 1);
	qs.nominal = 4; /* quota grows: w2 now fits */
	assert_int_equal(queue_cq_update(q, &s, NULL), GPUQ_OK);
	cycle(q, 5, &r);
	assert_true(admitted_in(&r, "w2"));
	s.stop = QUEUE_STOP_HOLD_AND_DRAIN;
	assert_int_equal(queue_cq_update(q, &s, NULL), GPUQ_OK);
	assert_int_equal(queue_tick(q, 6, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 2);
	assert_string_equal(r.evictions[0].reason_name, "ClusterQueueStopped");
	assert_int_equal(state_of(q, "w1"), QUEUE_WL_PENDING);
	/* structural change refused */
	fl.flavor = "g";
	assert_int_equal(queue_cq_update(q, &s, NULL), GPUQ_EINVAL);
	queue_destroy(q);
}

static void input_errors(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 2, U, U}}};
	queue_request_t req = {"gpu", -1};
	queue_podset_spec_t ps = {.name = "m", .count = 1, .requests = &req, .n_requests = 1};
	queue_workload_spec_t s = {.namespace_ = "ns",
				   .name = "x",
				   .uid = "x",
				   .local_queue = "lq",
				   .podsets = &ps,
				   .n_podsets = 1};
	gpuq_diag_t diag = {{0}};

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	assert_int_equal(queue_workload_add(q, &s, 0, NULL, &diag), GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "negative request"));
	req.amount = 1;
	s.local_queue = "missing";
	assert_int_equal(queue_workload_add(q, &s, 0, NULL, &diag), GPUQ_ENOTFOUND);
	s.local_queue = "lq";
	assert_int_equal(queue_workload_add(q, &s, 0, NULL, &diag), GPUQ_OK);
	assert_int_equal(queue_workload_add(q, &s, 0, NULL, &diag), GPUQ_EEXIST);
	ps.count = 0;
	s.uid = "y";
	assert_int_equal(queue_workload_add(q, &s, 0, NULL, &diag), GPUQ_EINVAL);
	assert_int_equal(queue_lq_add(q, "ns", "lq", "cq", 0, NULL, NULL), GPUQ_EEXIST);
	assert_int_equal(queue_lq_add(q, "ns", "l2", "nope", 0, NULL, NULL), GPUQ_ENOTFOUND);
	assert_int_equal(queue_cycle_run(q, 10, NULL), GPUQ_OK);
	assert_int_equal(queue_cycle_run(q, 9, NULL), GPUQ_EINVAL); /* time goes forward */
	assert_int_equal(queue_workload_finish(q, "nope", 11), GPUQ_ENOTFOUND);
	assert_int_equal(queue_workload_delete(q, "x", 11), GPUQ_OK);
	assert_int_equal(queue_workload_delete(q, "x", 11), GPUQ_ENOTFOUND);
	/* amounts stay where int64 sums cannot overflow */
	ps.count = 4;
	req.amount = QUEUE_AMOUNT_MAX / 2;
	s.uid = "huge";
	assert_int_equal(queue_workload_add(q, &s, 12, NULL, &diag), GPUQ_ERANGE);
	req.amount = 1;
	s.created_ms = QUEUE_TIME_MAX + 1;
	assert_int_equal(queue_workload_add(q, &s, 12, NULL, &diag), GPUQ_ERANGE);
	assert_int_equal(queue_cycle_run(q, QUEUE_TIME_MAX + 1, NULL), GPUQ_ERANGE);
	assert_int_equal(queue_tick(q, -QUEUE_TIME_MAX - 1, NULL), GPUQ_ERANGE);
	queue_destroy(q);
	queue_destroy(NULL);
}

static void quota_caps(void **st)
{
	queue_t *q = mkq(false);
	static const char *const cov[] = {"gpu"};
	queue_quota_spec_t qs = {QUEUE_AMOUNT_MAX, U, U};
	queue_flavor_quota_spec_t fl = {"f", &qs};
	queue_group_spec_t g = {cov, 1, &fl, 1};
	queue_cq_spec_t cs = {.cohort = "co", .groups = &g, .n_groups = 1};
	char name[16];
	int rc = GPUQ_OK, n = 0;

	(void)st;
	add_flavor(q, "f");
	{
		queue_quota_spec_t bad = {QUEUE_AMOUNT_MAX + 1, U, U};
		queue_flavor_quota_spec_t bfl = {"f", &bad};
		queue_group_spec_t bg = {cov, 1, &bfl, 1};
		queue_cq_spec_t bcs = {.name = "too-big", .groups = &bg, .n_groups = 1};

		assert_int_equal(queue_cq_add(q, &bcs, NULL, NULL), GPUQ_EINVAL);
	}
	/* 2^11 CQs of 2^50 fill a cohort's 2^61; the next one is refused */
	while (rc == GPUQ_OK && n < 5000) {
		snprintf(name, sizeof(name), "cq%d", n++);
		cs.name = name;
		rc = queue_cq_add(q, &cs, NULL, NULL);
	}
	assert_int_equal(rc, GPUQ_ELIMIT);
	assert_int_equal(n, 2049);
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(flavor_first_fit_in_order),
	    cmocka_unit_test(flavor_taints_and_selectors),
	    cmocka_unit_test(flavor_missing_and_uncovered),
	    cmocka_unit_test(borrowing_and_lending_limits),
	    cmocka_unit_test(strict_vs_best_effort),
	    cmocka_unit_test(strict_fifo_nofit_head_blocks),
	    cmocka_unit_test(best_effort_deep_retry),
	    cmocka_unit_test(strict_fifo_set_aside_keeps_order),
	    cmocka_unit_test(flavor_fungibility),
	    cmocka_unit_test(priority_then_creation_then_uid),
	    cmocka_unit_test(cycle_admits_everything_that_fits),
	    cmocka_unit_test(skipped_head_retried_next_cycle),
	    cmocka_unit_test(adopt_running_workload),
	    cmocka_unit_test(fair_sharing_weights),
	    cmocka_unit_test(listing_and_counters),
	    cmocka_unit_test(tenant_decay_order_and_no_starvation),
	    cmocka_unit_test(tenant_usage_seeded),
	    cmocka_unit_test(admission_fair_sharing_switch),
	    cmocka_unit_test(admission_fair_sharing_weight),
	    cmocka_unit_test(admission_fair_sharing_weight_zero),
	    cmocka_unit_test(admission_fair_sharing_update),
	    cmocka_unit_test(admission_fair_sharing_strict_preemptor_first),
	    cmocka_unit_test(gang_all_or_nothing),
	    cmocka_unit_test(gang_ready_timeout_backoff),
	    cmocka_unit_test(explain_strings),
	    cmocka_unit_test(explain_cohort_limit),
	    cmocka_unit_test(status_coarse),
	    cmocka_unit_test(stop_policy_and_quota_update),
	    cmocka_unit_test(input_errors),
	    cmocka_unit_test(quota_caps),
	};

	return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}

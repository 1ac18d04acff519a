/* Unit tests for queue preemption: within a ClusterQueue, reclaim and
 * borrowing within a cohort, victim sets, fair-sharing preemption, and the
 * ping-pong and livelock regressions. Builders in unit/queue_fixtures.h. */
#include "unit/queue_fixtures.h"

static void preemption_within_cq(void **st)
{
	static const struct {
		const char *what;
		queue_within_t within;
		adm_t running[4];
		adm_t pre;
		const char *victims; /* space-separated, "" = none */
	} cases[] = {
	    {"never", QUEUE_WITHIN_NEVER, {{"low", 0, 1, 4}}, {"p", 5, 10, 4}, ""},
	    {"lower priority",
	     QUEUE_WITHIN_LOWER_PRIORITY,
	     {{"low", 0, 1, 4}},
	     {"p", 5, 10, 4},
	     "low"},
	    {"equal priority is not lower",
	     QUEUE_WITHIN_LOWER_PRIORITY,
	     {{"eq", 5, 20, 4}},
	     {"p", 5, 10, 4},
	     ""},
	    {"newer equal priority",
	     QUEUE_WITHIN_LOWER_OR_NEWER,
	     {{"eq", 5, 20, 4}},
	     {"p", 5, 10, 4},
	     "eq"},
	    {"older equal priority stays",
	     QUEUE_WITHIN_LOWER_OR_NEWER,
	     {{"eq", 5, 1, 4}},
	     {"p", 5, 10, 4},
	     ""},
	    /* minimal set: v1 is removed first (lowest), v2 too; v1 is added back */
	    {"minimal set",
	     QUEUE_WITHIN_LOWER_PRIORITY,
	     {{"v1", 0, 1, 1}, {"v2", 1, 2, 2}, {"v3", 2, 3, 1}},
	     {"p", 5, 10, 2},
	     "v2"},
	    /* most recently admitted first among equal priority */
	    {"newest first",
	     QUEUE_WITHIN_LOWER_PRIORITY,
	     {{"old", 0, 1, 2}, {"new", 0, 2, 2}},
	     {"p", 5, 10, 2},
	     "new"},
	    /* no pointless preemption: removing every candidate still leaves 1 free < 4 */
	    {"pointless",
	     QUEUE_WITHIN_LOWER_PRIORITY,
	     {{"hi", 9, 1, 3}, {"lo", 0, 2, 1}},
	     {"p", 5, 10, 4},
	     ""},
	    /* above nominal without borrowWithinCohort: no preemption */
	    {"above nominal", QUEUE_WITHIN_LOWER_PRIORITY, {{"lo", 0, 1, 4}}, {"p", 5, 10, 5}, ""},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.within = cases[i].within, .flavors = {{"f", 4, U, U}}};
		queue_result_t r;
		int64_t now = 100;
		char got[128] = "";

		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		admit_all(q, "lq", cases[i].running, 4, &now);
		add_wl(q, cases[i].pre.uid, "ns", "lq", cases[i].pre.prio, cases[i].pre.created,
		       cases[i].pre.gpus);
		cycle(q, ++now, &r);
		for (size_t k = 0; k < r.n_evictions; k++) {
			size_t len = strlen(got);

			snprintf(got + len, sizeof(got) - len, "%s%s", len ? " " : "",
				 r.evictions[k].victim_uid);
			assert_string_equal(r.evictions[k].reason_name, "InClusterQueue");
			assert_string_equal(r.evictions[k].preemptor_uid, "p");
		}
		if (strcmp(got, cases[i].victims))
			fail_msg("case %s: victims \"%s\", want \"%s\"", cases[i].what, got,
				 cases[i].victims);
		/* a preemptor is not admitted in the cycle it preempts */
		assert_false(admitted_in(&r, "p"));
		if (*cases[i].victims) {
			assert_int_equal(wait_of(q, "p"), QUEUE_WAIT_PREEMPTING);
			cycle(q, ++now, &r);
			assert_true(admitted_in(&r, "p"));
		}
		queue_destroy(q);
	}
}

static void preemption_reclaim_within_cohort(void **st)
{
	static const struct {
		const char *what;
		queue_reclaim_t reclaim;
		int32_t borrower_prio;
		const char *reason; /* NULL = no preemption */
	} cases[] = {
	    {"never", QUEUE_RECLAIM_NEVER, 0, NULL},
	    {"any", QUEUE_RECLAIM_ANY, 10, "InCohortReclamation"},
	    {"lower priority, borrower higher", QUEUE_RECLAIM_LOWER_PRIORITY, 10, NULL},
	    {"lower priority, borrower lower", QUEUE_RECLAIM_LOWER_PRIORITY, 0,
	     "InCohortReclamation"},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		queue_t *q = mkq(false);
		cqdef_t d1 = {
		    .cohort = "co", .reclaim = cases[i].reclaim, .flavors = {{"f", 4, U, U}}};
		cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
		adm_t b[] = {{"b1", cases[i].borrower_prio, 1, 4},
			     {"b2", cases[i].borrower_prio, 2, 4},
			     {NULL, 0, 0, 0}};
		queue_result_t r;
		int64_t now = 10;

		add_flavor(q, "f");
		add_cq(q, "cq1", &d1);
		add_cq(q, "cq2", &d2);
		add_lq(q, "ns", "l1", "cq1");
		add_lq(q, "ns", "l2", "cq2");
		admit_all(q, "l2", b, 3, &now); /* cq2 borrows all of cq1's 4 */
		add_wl(q, "p", "ns", "l1", 5, 50, 4);
		cycle(q, ++now, &r);
		if (!cases[i].reason) {
			assert_int_equal(r.n_evictions, 0);
		} else {
			assert_int_equal(r.n_evictions, 1);
			/* most recently admitted first */
			assert_string_equal(r.evictions[0].victim_uid, "b2");
			assert_string_equal(r.evictions[0].reason_name, cases[i].reason);
			cycle(q, ++now, &r);
			assert_true(admitted_in(&r, "p"));
		}
		queue_destroy(q);
	}
}

/* A CQ within its nominal never loses workloads to reclaim. */
static void reclaim_spares_cq_within_nominal(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d1 = {.cohort = "co", .reclaim = QUEUE_RECLAIM_ANY, .flavors = {{"f", 4, U, U}}};
	cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
	adm_t a1[] = {{"mine", 0, 1, 2}, {NULL, 0, 0, 0}};
	adm_t a2[] = {{"theirs", 0, 2, 4}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq1", &d1);
	add_cq(q, "cq2", &d2);
	add_lq(q, "ns", "l1", "cq1");
	add_lq(q, "ns", "l2", "cq2");
	admit_all(q, "l1", a1, 2, &now);
	admit_all(q, "l2", a2, 2, &now);
	add_wl(q, "p", "ns", "l1", 9, 50, 4); /* would need cq2's nominal */
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 0);
	queue_destroy(q);
}

/* A preemptor that borrows (borrowWithinCohort) takes only what the
 * victim's CQ borrows: cq2 holds 5 on a nominal 4 (workloads of 3 and 2);
 * taking either would leave cq2 below its nominal quota, and a workload
 * back within its CQ's nominal would reclaim it from the borrowing
 * preemptor at once (a loop the property tests found in a cohort tree).
 * Kueue would take the 2. So p waits. */
static void borrowing_preemptor_takes_only_borrowed(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d1 = {.cohort = "co",
		      .reclaim = QUEUE_RECLAIM_LOWER_PRIORITY,
		      .borrow = QUEUE_BORROW_LOWER_PRIORITY,
		      .flavors = {{"f", 2, U, U}}};
	cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
	adm_t a2[] = {{"b1", 1, 1, 3}, {"b2", 1, 2, 2}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq1", &d1);
	add_cq(q, "cq2", &d2);
	add_lq(q, "ns", "l1", "cq1");
	add_lq(q, "ns", "l2", "cq2");
	admit_all(q, "l2", a2, 2, &now);
	add_wl(q, "p", "ns", "l1", 5, 50, 3); /* 1 above cq1's nominal */
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(wait_of(q, "p"), QUEUE_WAIT_QUOTA);
	queue_destroy(q);
}

/* borrowWithinCohort lets a preemptor borrow while reclaiming from CQs
 * with strictly lower priority workloads (up to maxPriorityThreshold). */
static void borrow_within_cohort(void **st)
{
	for (int policy = 0; policy < 2; policy++) {
		queue_t *q = mkq(false);
		cqdef_t d1 = {.cohort = "co",
			      .reclaim = QUEUE_RECLAIM_LOWER_PRIORITY,
			      .within = QUEUE_WITHIN_LOWER_PRIORITY,
			      .borrow = policy ? QUEUE_BORROW_LOWER_PRIORITY : QUEUE_BORROW_NEVER,
			      .flavors = {{"f", 2, U, U}}};
		cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 6, U, U}}};
		cqdef_t d3 = {.cohort = "co", .flavors = {{"f", 0, U, U}}};
		adm_t a3[] = {{"borrower", 0, 1, 6}, {NULL, 0, 0, 0}};
		queue_result_t r;
		int64_t now = 1;

		(void)st;
		add_flavor(q, "f");
		add_cq(q, "cq1", &d1);
		add_cq(q, "cq2", &d2);
		add_cq(q, "cq3", &d3);
		add_lq(q, "ns", "l1", "cq1");
		add_lq(q, "ns", "l3", "cq3");
		admit_all(q, "l3", a3, 2, &now);
		add_wl(q, "p", "ns", "l1", 5, 50, 4); /* above cq1's nominal 2 */
		cycle(q, ++now, &r);
		if (policy) {
			assert_int_equal(r.n_evictions, 1);
			assert_string_equal(r.evictions[0].reason_name,
					    "InCohortReclaimWhileBorrowing");
		} else {
			assert_int_equal(r.n_evictions, 0);
		}
		queue_destroy(q);
	}
}

/* Kueue's head order across a cohort without fair sharing: a head that fits
 * within its CQ's nominal goes before one that would borrow, whatever their
 * priorities. */
static void head_order_non_borrowing_first(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t da = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
	cqdef_t db = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
	adm_t a[] = {{"b0", 0, 0, 1}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq-a", &da);
	add_cq(q, "cq-b", &db);
	add_lq(q, "ns", "la", "cq-a");
	add_lq(q, "ns", "lb", "cq-b");
	admit_all(q, "lb", a, 2, &now);		     /* 3 free in the cohort */
	add_wl(q, "a-borrows", "ns", "la", 9, 1, 3); /* 3 > cq-a's nominal 2 */
	add_wl(q, "b-fits", "ns", "lb", 0, 2, 1);    /* within cq-b's nominal */
	cycle(q, ++now, &r);
	assert_int_equal(r.n_admissions, 1);
	assert_string_equal(r.admissions[0].uid, "b-fits");
	assert_false(r.admissions[0].borrows);
	assert_int_equal(wait_of(q, "a-borrows"), QUEUE_WAIT_QUOTA);
	queue_destroy(q);
}

/* Two preemptors never share a victim; each victim is evicted once. */
static void overlapping_preemptors(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.within = QUEUE_WITHIN_LOWER_PRIORITY, .flavors = {{"f", 4, U, U}}};
	adm_t a[] = {{"low", 0, 1, 4}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	admit_all(q, "lq", a, 2, &now);
	add_wl(q, "p1", "ns", "lq", 5, 50, 4);
	add_wl(q, "p2", "ns", "lq", 5, 51, 4);
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].preemptor_uid, "p1");
	cycle(q, ++now, &r);
	assert_true(admitted_in(&r, "p1"));
	assert_false(admitted_in(&r, "p2"));
	assert_int_equal(r.n_evictions, 0); /* p2 has nothing lower to preempt */
	queue_destroy(q);
}

/* Several preemptions in one cycle: two ClusterQueues each reclaim their
 * own nominal quota from a third that borrows it; the victim the first
 * picks counts as gone when the second checks its fit, so both preempt in
 * the same cycle, neither double counts a victim, and neither is parked. */
static void two_reclaimers_one_cycle(void **st)
{
	for (int release = 0; release < 2; release++) {
		queue_config_t cfg;
		queue_t *q = NULL;
		cqdef_t own = {
		    .cohort = "co", .reclaim = QUEUE_RECLAIM_ANY, .flavors = {{"f", 4, U, U}}};
		cqdef_t lender = {.cohort = "co", .flavors = {{"f", 0, U, U}}};
		queue_result_t r;

		(void)st;
		queue_config_default(&cfg);
		cfg.release_on_evict = release;
		assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
		add_flavor(q, "f");
		add_cq(q, "a", &own);
		add_cq(q, "b", &own);
		add_cq(q, "c", &lender);
		add_lq(q, "ns", "a", "a");
		add_lq(q, "ns", "b", "b");
		add_lq(q, "ns", "c", "c");
		add_wl(q, "c1", "ns", "c", 0, 1, 4);
		add_wl(q, "c2", "ns", "c", 0, 2, 4);
		cycle(q, 3, &r);
		assert_int_equal(r.n_admissions, 2); /* c borrows all 8 */
		add_wl(q, "pa", "ns", "a", 0, 10, 4);
		add_wl(q, "pb", "ns", "b", 0, 11, 4);
		cycle(q, 12, &r);
		assert_int_equal(r.n_evictions, 2);
		assert_string_not_equal(r.evictions[0].victim_uid, r.evictions[1].victim_uid);
		assert_string_not_equal(r.evictions[0].preemptor_uid, r.evictions[1].preemptor_uid);
		if (release) {
			/* victims gone at the end of the cycle: both admitted next */
			cycle(q, 13, &r);
			assert_true(admitted_in(&r, "pa"));
			assert_true(admitted_in(&r, "pb"));
		} else {
			assert_int_equal(wait_of(q, "pa"), QUEUE_WAIT_PREEMPTING);
			assert_int_equal(wait_of(q, "pb"), QUEUE_WAIT_PREEMPTING);
			assert_int_equal(queue_workload_evicted(q, "c1", 13), GPUQ_OK);
			assert_int_equal(queue_workload_evicted(q, "c2", 13), GPUQ_OK);
			cycle(q, 14, &r);
			assert_true(admitted_in(&r, "pa"));
			assert_true(admitted_in(&r, "pb"));
		}
		queue_destroy(q);
	}
}

/* A head whose victims another preemptor took earlier in the cycle is
 * skipped, not set aside: it stays in the active queue for the next cycle
 * (Kueue: "overlapping preemption targets"), and its explanation says
 * why. */
static void overlapping_head_stays_active(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t a = {.cohort = "co", .reclaim = QUEUE_RECLAIM_ANY, .flavors = {{"f", 4, U, U}}};
	cqdef_t b = {
	    .cohort = "co", .reclaim = QUEUE_RECLAIM_LOWER_PRIORITY, .flavors = {{"f", 4, U, U}}};
	cqdef_t c = {.cohort = "co", .flavors = {{"f", 0, U, U}}};
	queue_result_t r;
	char why[256];

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "a", &a);
	add_cq(q, "b", &b);
	add_cq(q, "c", &c);
	add_lq(q, "ns", "a", "a");
	add_lq(q, "ns", "b", "b");
	add_lq(q, "ns", "c", "c");
	add_wl(q, "c1", "ns", "c", 0, 1, 6);  /* c borrows the whole cohort, */
	add_wl(q, "c2", "ns", "c", 10, 2, 2); /* above pb's priority */
	cycle(q, 3, &r);
	assert_int_equal(r.n_admissions, 2);
	add_wl(q, "pa", "ns", "a", 5, 10, 4); /* higher: goes first */
	add_wl(q, "pb", "ns", "b", 3, 11, 4);
	cycle(q, 12, &r);
	/* pa takes c1; pb could only have had c1 too (c2 is above it) */
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].victim_uid, "c1");
	assert_int_equal(wait_of(q, "pb"), QUEUE_WAIT_QUOTA);
	assert_int_equal(queue_workload_explain(q, "pb", why, sizeof(why)), GPUQ_OK);
	if (!strstr(why, "preemption took the victims it needed"))
		fail_msg("pb was set aside, not skipped: %s", why);
	queue_destroy(q);
}

/* Flavor ranking when preempting, as Kueue's oracle: a flavor is "reclaim"
 * only if none of the victims it would take are in the preemptor's own
 * ClusterQueue. On f1 the borrower's candidate is not enough and a's own
 * workload would go too (preempt); on f2 the borrower's alone frees it
 * (reclaim): f2 wins although f1 comes first. (Before, f1 ranked as reclaim
 * because a borrowing CQ had a candidate there, and won the tie.) On equal
 * rank the earlier flavor wins. */
static void preempting_flavor_rank_by_victims(void **st)
{
	for (int equal = 0; equal < 2; equal++) {
		queue_t *q = mkq(false);
		cqdef_t a = {.cohort = "co",
			     .within = QUEUE_WITHIN_LOWER_PRIORITY,
			     .reclaim = QUEUE_RECLAIM_ANY,
			     .flavors = {{"f1", 4, U, U}, {"f2", 4, U, U}}};
		cqdef_t b = {.cohort = "co", .flavors = {{"f1", 0, U, U}, {"f2", 0, U, U}}};
		queue_result_t r;

		(void)st;
		add_flavor(q, "f1");
		add_flavor(q, "f2");
		add_cq(q, "a", &a);
		add_cq(q, "b", &b);
		add_lq(q, "ns", "a", "a");
		add_lq(q, "ns", "b", "b");
		if (!equal) {
			add_wl(q, "a_low", "ns", "a", 0, 1, 3); /* on f1 */
			cycle(q, 2, &r);
			assert_string_equal(flavor_of(q, "a_low"), "f1");
		}
		add_wl(q, "b1", "ns", "b", 0, 3, equal ? 4 : 1); /* borrows f1's rest */
		cycle(q, 4, &r);
		add_wl(q, "b2", "ns", "b", 0, 5, 4); /* f1 full: borrows all of f2 */
		cycle(q, 6, &r);
		assert_string_equal(flavor_of(q, "b1"), "f1");
		assert_string_equal(flavor_of(q, "b2"), "f2");
		add_wl(q, "p", "ns", "a", 5, 10, 4);
		cycle(q, 11, &r);
		assert_int_equal(r.n_evictions, 1);
		/* equal (no a_low): b1 alone frees f1, both rank reclaim: f1 */
		assert_string_equal(r.evictions[0].victim_uid, equal ? "b1" : "b2");
		queue_destroy(q);
	}
}

/* release_on_evict false: quota stays held until queue_workload_evicted,
 * and the preemptor does not pick more victims meanwhile. */
static void eviction_confirmation(void **st)
{
	queue_config_t cfg;
	queue_t *q = NULL;
	cqdef_t d = {.within = QUEUE_WITHIN_LOWER_PRIORITY, .flavors = {{"f", 4, U, U}}};
	adm_t a[] = {{"l1", 0, 1, 2}, {"l2", 0, 2, 2}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;

	(void)st;
	queue_config_default(&cfg);
	cfg.release_on_evict = false;
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	admit_all(q, "lq", a, 3, &now);
	add_wl(q, "p", "ns", "lq", 5, 50, 2);
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].victim_uid, "l2");
	assert_int_equal(state_of(q, "l2"), QUEUE_WL_EVICTING);
	add_wl(q, "other", "ns", "lq", 0, 60, 1); /* a change in the cohort */
	cycle(q, ++now, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(queue_workload_evicted(q, "l2", now), GPUQ_OK);
	assert_int_equal(state_of(q, "l2"), QUEUE_WL_PENDING);
	cycle(q, ++now, &r);
	assert_true(admitted_in(&r, "p"));
	queue_destroy(q);
}

/* ---- fair sharing ---- */

/* Admission order across CQs by weighted DRS: lower share first. */
static void fair_sharing_order(void **st)
{
	queue_t *q = mkq(true);
	cqdef_t da = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
	cqdef_t db = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
	cqdef_t dl = {.cohort = "co", .flavors = {{"f", 6, U, U}}};
	adm_t a[] = {{"a0", 0, 1, 4}, {NULL, 0, 0, 0}}; /* cq-a borrows 2 */
	queue_result_t r;
	uint32_t cqa, cqb;
	queue_stats_t sa, sb;
	int64_t now = 1;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq-a", &da);
	add_cq(q, "cq-b", &db);
	add_cq(q, "lender", &dl);
	add_lq(q, "ns", "la", "cq-a");
	add_lq(q, "ns", "lb", "cq-b");
	admit_all(q, "la", a, 2, &now);
	/* 6 free in the cohort; both want 4 (both would borrow 2): b goes first */
	add_wl(q, "a1", "ns", "la", 9, 10, 4); /* higher priority, older */
	add_wl(q, "b1", "ns", "lb", 0, 20, 4);
	cycle(q, ++now, &r);
	assert_int_equal(r.n_admissions, 1);
	assert_string_equal(r.admissions[0].uid, "b1");
	assert_int_equal(queue_cq_find(q, "cq-a", &cqa), GPUQ_OK);
	assert_int_equal(queue_cq_find(q, "cq-b", &cqb), GPUQ_OK);
	assert_int_equal(queue_cq_stats(q, cqa, &sa), GPUQ_OK);
	assert_int_equal(queue_cq_stats(q, cqb, &sb), GPUQ_OK);
	/* each borrows 2 of the cohort's 10 lendable: 200,000 ppm */
	assert_int_equal(sa.weighted_share, 200000);
	assert_int_equal(sb.weighted_share, 200000);
	queue_destroy(q);
}

/* Fair-share preemption: take from a CQ only while the preemptor's share
 * stays <= the victim CQ's share after the move. */
static void fair_sharing_preemption(void **st)
{
	static const struct {
		const char *what;
		int64_t a_running[3]; /* cq-a running sizes (borrowing) */
		int64_t want;	      /* cq-b preemptor size */
		int victims;	      /* expected evictions */
	} cases[] = {
	    /* a borrows 4 (share 4/8); b needs 4 (would borrow 2 => 2/8 <= a after
	     * losing 2 => 2/8): one victim */
	    {"equalizes", {2, 2, 2}, 4, 1},
	    /* a borrows 2 (2/8); b wants 6 (would borrow 4 => 4/8 > a after 0/8) */
	    {"would exceed", {2, 2, 0}, 6, 0},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		queue_t *q = mkq(true);
		cqdef_t da = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
		cqdef_t db = {.cohort = "co",
			      .reclaim = QUEUE_RECLAIM_ANY,
			      .within = QUEUE_WITHIN_LOWER_PRIORITY,
			      .flavors = {{"f", 2, U, U}}};
		cqdef_t dl = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
		adm_t a[4] = {{NULL, 0, 0, 0}};
		const char *names[] = {"a0", "a1", "a2"};
		queue_result_t r;
		int64_t now = 1;
		size_t n = 0;

		for (; n < 3 && cases[i].a_running[n]; n++)
			a[n] = (adm_t){names[n], 0, (int64_t)n, cases[i].a_running[n]};
		add_flavor(q, "f");
		add_cq(q, "cq-a", &da);
		add_cq(q, "cq-b", &db);
		add_cq(q, "lender", &dl);
		add_lq(q, "ns", "la", "cq-a");
		add_lq(q, "ns", "lb", "cq-b");
		admit_all(q, "la", a, 4, &now);
		add_wl(q, "p", "ns", "lb", 0, 50, cases[i].want);
		cycle(q, ++now, &r);
		if ((int)r.n_evictions != cases[i].victims)
			fail_msg("case %s: %zu evictions, want %d", cases[i].what, r.n_evictions,
				 cases[i].victims);
		for (size_t k = 0; k < r.n_evictions; k++)
			assert_string_equal(r.evictions[k].reason_name, "InCohortFairSharing");
		queue_destroy(q);
	}
}

/* Fair sharing as Kueue's: a preemptor within its nominal quota reclaims
 * from a borrower (reason InCohortReclamation; its share, 0, passes the
 * share rule); borrowWithinCohort plays no part, so a
 * high-priority head that would borrow does not take a low-priority
 * borrower's workload by priority (it used to, as
 * InCohortReclaimWhileBorrowing, and the victim's CQ took it back by share
 * at once: test_queue_props seed 888). */
static void fair_sharing_within_nominal_and_no_borrow_within(void **st)
{
	for (int want = 4; want <= 7; want += 3) {
		queue_t *q = mkq(true);
		cqdef_t dx = {.cohort = "co",
			      .reclaim = QUEUE_RECLAIM_ANY,
			      .borrow = QUEUE_BORROW_LOWER_PRIORITY,
			      .flavors = {{"f", 6, U, U}}};
		cqdef_t dy = {.cohort = "co", .flavors = {{"f", 2, U, U}}};
		queue_result_t r;

		(void)st;
		add_flavor(q, "f");
		add_cq(q, "x", &dx);
		add_cq(q, "y", &dy);
		add_lq(q, "ns", "x", "x");
		add_lq(q, "ns", "y", "y");
		add_wl(q, "yv", "ns", "y", 0, 1, 5); /* y borrows 3 of x's */
		add_wl(q, "xs", "ns", "x", 0, 2, 3);
		cycle(q, 3, &r);
		assert_int_equal(r.n_admissions, 2);
		add_wl(q, "xh", "ns", "x", 10, 4, want - 3);
		cycle(q, 5, &r);
		if (want == 4) { /* 3 + 1 within x's nominal 6: a reclaim */
			assert_int_equal(r.n_evictions, 1);
			assert_string_equal(r.evictions[0].victim_uid, "yv");
			assert_string_equal(r.evictions[0].reason_name, "InCohortReclamation");
		} else { /* 3 + 4 = 7 borrows: the shares decide, and say no */
			assert_int_equal(r.n_evictions, 0);
		}
		queue_destroy(q);
	}
}

/* Fair-share preemption must not ping-pong. cq-b's small preemptor p sits
 * behind a big head that cannot be admitted; it reclaims a2 from cq-a. Once
 * a2's quota is released, a2 (requeued, its CQ's share low again) used to be
 * readmitted ahead of p, and p preempted it again: one eviction every other
 * cycle, forever. Now the preemptor is first to the quota it freed: one
 * eviction, p admitted, a2 waits and does not preempt back. */
static void fair_sharing_no_ping_pong(void **st)
{
	queue_t *q = mkq(true);
	cqdef_t da = {.cohort = "co",
		      .reclaim = QUEUE_RECLAIM_ANY,
		      .within = QUEUE_WITHIN_LOWER_PRIORITY,
		      .flavors = {{"f", 2, U, U}}};
	cqdef_t db = da;
	cqdef_t dl = {.cohort = "co", .flavors = {{"f", 4, U, U}}};
	adm_t a[] = {{"v", 0, 1, 4}, {"a2", 0, 2, 2}, {NULL, 0, 0, 0}};
	adm_t b[] = {{"b1", 10, 3, 2}, {NULL, 0, 0, 0}};
	queue_result_t r;
	int64_t now = 1;
	size_t evictions = 0, a2_evicted = 0, p_admitted = 0;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq-a", &da);
	add_cq(q, "cq-b", &db);
	add_cq(q, "lender", &dl);
	add_lq(q, "ns", "la", "cq-a");
	add_lq(q, "ns", "lb", "cq-b");
	admit_all(q, "la", a, 3, &now);		  /* cq-a uses 6 of its 2: borrows 4 */
	admit_all(q, "lb", b, 2, &now);		  /* the cohort's 8 are all in use */
	add_wl(q, "big", "ns", "lb", 100, 50, 8); /* cq-b's head, never fits */
	add_wl(q, "p", "ns", "lb", 0, 51, 1);
	for (int i = 0; i < 40; i++) {
		cycle(q, ++now, &r);
		evictions += r.n_evictions;
		for (size_t k = 0; k < r.n_evictions; k++) {
			assert_string_equal(r.evictions[k].reason_name, "InCohortFairSharing");
			assert_string_equal(r.evictions[k].preemptor_uid, "p");
			a2_evicted += !strcmp(r.evictions[k].victim_uid, "a2");
		}
		p_admitted += admitted_in(&r, "p");
	}
	if (evictions != 1 || a2_evicted != 1)
		fail_msg("%zu evictions (a2 %zu times) in 40 cycles, want 1", evictions,
			 a2_evicted);
	assert_int_equal(p_admitted, 1);
	assert_int_equal(state_of(q, "p"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "a2"), QUEUE_WL_PENDING);
	assert_int_equal(state_of(q, "v"), QUEUE_WL_ADMITTED);
	queue_destroy(q);
}

/* Under BestEffortFIFO a preemptor with a plan is first in its queue; when
 * the CQ turns StrictFIFO its queue is reordered: the higher priority
 * workload that arrived meanwhile is the head again. */
static void planned_preemptor_order_follows_strategy(void **st)
{
	static const int strict[] = {0, 1};

	(void)st;
	for (size_t i = 0; i < 2; i++) {
		queue_t *q = mkq(false);
		cqdef_t d = {.within = QUEUE_WITHIN_LOWER_PRIORITY, .flavors = {{"f", 4, U, U}}};
		adm_t a[] = {{"low", 0, 1, 4}, {NULL, 0, 0, 0}};
		queue_result_t r;
		int64_t now = 1;

		add_flavor(q, "f");
		add_cq(q, "cq", &d);
		add_lq(q, "ns", "lq", "cq");
		admit_all(q, "lq", a, 2, &now);
		add_wl(q, "p", "ns", "lq", 5, 50, 4);
		cycle(q, ++now, &r);
		assert_int_equal(r.n_evictions, 1); /* p preempts low, keeps its plan */
		add_wl(q, "hi", "ns", "lq", 10, 60, 4);
		if (strict[i]) {
			d.strategy = QUEUE_STRICT_FIFO;
			assert_int_equal(put_cq(q, "cq", &d, true), GPUQ_OK);
		}
		cycle(q, ++now, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, strict[i] ? "hi" : "p");
		queue_destroy(q);
	}
}

/* No livelock at one instant without fair sharing (kueue-large's shape in
 * miniature: a cohort of CQs with nominal 4, reclaimWithinCohort Any,
 * withinClusterQueue LowerPriority, small and medium workloads). A head with
 * no victims of its own (its CQ above nominal, nothing lower in it) used to
 * wait for quota that other preemptors' evictions were freeing: it kept a
 * plan, went first next cycle, borrowed that quota, and a requeued victim
 * reclaimed it, again and again at the same instant (400 evictions in 200
 * cycles). Now it is set aside: 5 evictions, then the cohort is quiet. */
static void reclaim_no_livelock_at_one_instant(void **st)
{
	static const struct {
		const char *uid;
		int cq;
		int32_t prio;
		int64_t gpus;
	} wl[] = {
	    {"w0", 0, 100, 2}, {"w1", 1, 100, 2}, {"w2", 2, 50, 1},   {"w3", 1, 100, 2},
	    {"w4", 2, 100, 2}, {"w5", 0, 100, 2}, {"w6", 3, 50, 1},   {"w7", 0, 100, 2},
	    {"w8", 1, 50, 1},  {"w9", 3, 100, 2}, {"w10", 2, 100, 2}, {"w11", 3, 100, 2},
	};
	static const char *const cqs[] = {"cq0", "cq1", "cq2", "cq3"};
	queue_t *q = mkq(false);
	cqdef_t d = {.cohort = "co",
		     .reclaim = QUEUE_RECLAIM_ANY,
		     .within = QUEUE_WITHIN_LOWER_PRIORITY,
		     .flavors = {{"f", 4, U, U}}};
	queue_result_t r;
	size_t evictions = 0, worst = 0, per[12] = {0};
	int cycles = 0;
	bool quiet = false;

	(void)st;
	add_flavor(q, "f");
	for (int i = 0; i < 4; i++) {
		add_cq(q, cqs[i], &d);
		add_lq(q, "ns", cqs[i], cqs[i]);
	}
	for (size_t i = 0; i < 8; i++)
		add_wl(q, wl[i].uid, "ns", cqs[wl[i].cq], wl[i].prio, 1, wl[i].gpus);
	cycle(q, 2, &r); /* 14 of the cohort's 16 in use, cq0 borrows 2 */
	assert_int_equal(r.n_admissions, 8);
	assert_int_equal(r.n_evictions, 0);
	for (size_t i = 8; i < 12; i++)
		add_wl(q, wl[i].uid, "ns", cqs[wl[i].cq], wl[i].prio, 2, wl[i].gpus);
	while (cycles < 200 && !quiet) {
		cycle(q, 3, &r); /* one instant, as a simulator with cycleInterval 0 */
		cycles++;
		quiet = !r.n_evictions && !r.n_admissions;
		evictions += r.n_evictions;
		for (size_t k = 0; k < r.n_evictions; k++) {
			size_t v = (size_t)strtoul(r.evictions[k].victim_uid + 1, NULL, 10);

			assert_true(v < 12);
			if (++per[v] > worst)
				worst = per[v];
		}
	}
	if (!quiet || evictions > 8 || worst > 2)
		fail_msg("%zu evictions in %d cycles at one instant (a victim %zu times), "
			 "quiet %d; want <= 8, each victim <= 2, quiet",
			 evictions, cycles, worst, quiet);
	queue_destroy(q);
}

/* StrictFIFO with LowerOrNewerEqualPriority and two LocalQueues: a preemptor
 * with a plan goes before an equal priority workload of a LocalQueue with a
 * lower tenant key. Before, its victim (that workload) was picked first,
 * took the quota back, and was preempted again, cycle after cycle at one
 * instant (found by test_queue_props, seed 708). */
static void strict_planned_before_equal_priority(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.strategy = QUEUE_STRICT_FIFO,
		     .within = QUEUE_WITHIN_LOWER_OR_NEWER,
		     .flavors = {{"f", 4, U, U}}};
	queue_result_t r;
	size_t evictions = 0, p_admitted = 0;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "la", "cq");
	add_lq(q, "ns", "lb", "cq");
	add_wl(q, "a0", "ns", "la", 5, 1, 3); /* la's tenant key is the higher */
	add_wl(q, "v", "ns", "lb", 0, 20, 1);
	cycle(q, 2, &r);
	assert_int_equal(r.n_admissions, 2);
	add_wl(q, "p", "ns", "la", 0, 10, 1); /* older than v: may preempt it */
	for (int i = 0; i < 20; i++) {
		cycle(q, 3, &r);
		evictions += r.n_evictions;
		p_admitted += admitted_in(&r, "p");
	}
	if (evictions != 1 || p_admitted != 1)
		fail_msg("%zu evictions, p admitted %zu times in 20 cycles; want 1 and 1",
			 evictions, p_admitted);
	assert_int_equal(state_of(q, "p"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "v"), QUEUE_WL_PENDING);
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(preemption_within_cq),
	    cmocka_unit_test(preemption_reclaim_within_cohort),
	    cmocka_unit_test(reclaim_spares_cq_within_nominal),
	    cmocka_unit_test(borrow_within_cohort),
	    cmocka_unit_test(borrowing_preemptor_takes_only_borrowed),
	    cmocka_unit_test(overlapping_preemptors),
	    cmocka_unit_test(two_reclaimers_one_cycle),
	    cmocka_unit_test(overlapping_head_stays_active),
	    cmocka_unit_test(preempting_flavor_rank_by_victims),
	    cmocka_unit_test(head_order_non_borrowing_first),
	    cmocka_unit_test(eviction_confirmation),
	    cmocka_unit_test(fair_sharing_order),
	    cmocka_unit_test(fair_sharing_preemption),
	    cmocka_unit_test(fair_sharing_within_nominal_and_no_borrow_within),
	    cmocka_unit_test(fair_sharing_no_ping_pong),
	    cmocka_unit_test(planned_preemptor_order_follows_strategy),
	    cmocka_unit_test(reclaim_no_livelock_at_one_instant),
	    cmocka_unit_test(strict_planned_before_equal_priority),
	};

	return cmocka_run_group_tests_name("queue_preempt", tests, NULL, NULL);
}

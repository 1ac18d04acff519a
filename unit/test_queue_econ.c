/* The queue core's GPU economics (docs/economics.md): minimum runtime
 * before preemption (per ClusterQueue and per priority), budgets (warn,
 * lower, hold; windows; cost; their records), idle GPUs (reports and
 * reclaim) and the predicted start in explanations. Deterministic: every
 * time is an argument. */
#include <math.h>

#include "unit/queue_fixtures.h"

#define MIN 60000LL
#define HOUR 3600000LL
/* 2025-01-31 00:00 UTC: a month turns 24 h later */
#define JAN31 1738281600000LL
#define FEB1 (JAN31 + 24 * HOUR)

/* A CQ "cq" of `gpus` on flavor f (alone, or in cohort co), preemption
 * within LowerPriority, with the economics given. */
typedef struct {
	const char *cohort;
	int64_t gpus;
	int64_t min_runtime_ms;
	queue_idle_action_t idle;
	double idle_pct;
	int64_t idle_after_ms;
	queue_reclaim_t reclaim;
	int64_t max_exec_ms;
	queue_strategy_t strategy;
} econ_cq_t;

static void econ_cq(queue_t *q, const char *name, const econ_cq_t *e, bool update)
{
	static const char *const cov[] = {"gpu"};
	queue_quota_spec_t quota = {e->gpus, QUEUE_UNLIMITED, QUEUE_UNLIMITED};
	queue_flavor_quota_spec_t fl = {"f", &quota};
	queue_group_spec_t g = {cov, 1, &fl, 1};
	queue_cq_spec_t s = {0};
	gpuq_diag_t diag = {{0}};

	s.name = name;
	s.cohort = e->cohort;
	s.groups = &g;
	s.n_groups = 1;
	s.within = QUEUE_WITHIN_LOWER_PRIORITY;
	s.reclaim = e->reclaim;
	s.min_runtime_ms = e->min_runtime_ms;
	s.idle_action = e->idle;
	s.idle_threshold_pct = e->idle_pct;
	s.idle_after_ms = e->idle_after_ms;
	s.max_exec_ms = e->max_exec_ms;
	s.strategy = e->strategy;
	if (update ? queue_cq_update(q, &s, &diag) : queue_cq_add(q, &s, NULL, &diag))
		fail_msg("cq %s: %s", name, diag.msg);
}

/* A core whose clock moves only for what is tested (no tenant usage
 * samples in the way). */
static queue_t *mkq_quiet(void)
{
	queue_config_t cfg;
	queue_t *q = NULL;

	queue_config_default(&cfg);
	cfg.tenant_sample_ms = 1000 * 24 * HOUR;
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	return q;
}

static queue_t *econ_queue(const econ_cq_t *e)
{
	queue_t *q = mkq_quiet();

	add_flavor(q, "f");
	econ_cq(q, "cq", e, false);
	add_lq(q, "ns", "lq", "cq");
	return q;
}

static void explain(queue_t *q, const char *uid, char *buf, size_t cap)
{
	assert_int_equal(queue_workload_explain(q, uid, buf, cap), GPUQ_OK);
}

static bool evicted_in(const queue_result_t *r, const char *uid, queue_evict_reason_t why)
{
	for (size_t i = 0; i < r->n_evictions; i++)
		if (!strcmp(r->evictions[i].victim_uid, uid) && r->evictions[i].reason == why)
			return true;
	return false;
}

/* ---- minimum runtime ---- */

static void min_runtime_delays_preemption(void **state)
{
	econ_cq_t e = {.gpus = 4, .min_runtime_ms = 10 * MIN};
	queue_t *q = econ_queue(&e);
	queue_result_t r;
	char why[512];
	queue_wl_t id;
	queue_workload_view_t v;

	(void)state;
	add_wl(q, "low", "ns", "lq", 0, 0, 4);
	cycle(q, 0, &r);
	assert_true(admitted_in(&r, "low"));
	assert_int_equal(queue_workload_find(q, "low", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.protected_ms, 10 * MIN);
	add_wl(q, "high", "ns", "lq", 100, MIN, 4);
	cycle(q, 2 * MIN, &r);
	assert_int_equal(r.n_evictions, 0); /* protected: 8 min left */
	explain(q, "high", why, sizeof(why));
	assert_non_null(strstr(why, "waits for ns/low's minimum runtime: 8 min left"));
	/* the clock says when the protection ends, and that cycle preempts */
	assert_int_equal(queue_next_event(q, 2 * MIN), 10 * MIN);
	cycle(q, 10 * MIN - 1, &r);
	assert_int_equal(r.n_evictions, 0);
	explain(q, "high", why, sizeof(why));
	assert_non_null(strstr(why, "1 s left"));
	assert_int_equal(queue_tick(q, 10 * MIN, &r), GPUQ_OK);
	cycle(q, 10 * MIN, &r);
	assert_true(evicted_in(&r, "low", QUEUE_EVICT_IN_CQ));
	cycle(q, 10 * MIN, &r);
	assert_true(admitted_in(&r, "high"));
	queue_destroy(q);
}

static void min_runtime_by_priority(void **state)
{
	econ_cq_t e = {.gpus = 2};
	queue_t *q = econ_queue(&e);
	queue_prio_runtime_t rt[] = {{5, 30 * MIN}, {5, 20 * MIN}, {7, MIN}};
	queue_prio_runtime_t bad[] = {{1, 0}};
	queue_result_t r;

	(void)state;
	assert_int_equal(queue_min_runtimes_set(q, bad, 1), GPUQ_EINVAL);
	assert_int_equal(queue_min_runtimes_set(q, rt, 3), GPUQ_OK);
	add_wl(q, "five", "ns", "lq", 5, 0, 1); /* 30 min: the longest of value 5 */
	add_wl(q, "zero", "ns", "lq", 0, 0, 1); /* no minimum */
	cycle(q, 0, &r);
	assert_int_equal(r.n_admissions, 2);
	add_wl(q, "p9", "ns", "lq", 9, MIN, 1);
	add_wl(q, "p8", "ns", "lq", 8, MIN, 1);
	cycle(q, MIN, &r);
	/* one victim only: the unprotected one */
	assert_int_equal(r.n_evictions, 1);
	assert_true(evicted_in(&r, "zero", QUEUE_EVICT_IN_CQ));
	cycle(q, 29 * MIN, &r);
	assert_true(admitted_in(&r, "p9"));
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(wait_of(q, "p8"), QUEUE_WAIT_QUOTA);
	cycle(q, 30 * MIN, &r);
	assert_true(evicted_in(&r, "five", QUEUE_EVICT_IN_CQ));
	queue_destroy(q);
}

/* The protection is derived from the records: a restored core wakes up at
 * the same time and explains the same way. */
static void min_runtime_survives_restore(void **state)
{
	econ_cq_t e = {.gpus = 1, .min_runtime_ms = 5 * MIN};
	queue_t *q = econ_queue(&e), *p = econ_queue(&e);
	queue_result_t r;
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen;
	char a[512], b[512];

	(void)state;
	add_wl(q, "low", "ns", "lq", 0, 0, 1);
	cycle(q, 0, &r);
	add_wl(q, "high", "ns", "lq", 1, MIN, 1);
	cycle(q, MIN, &r);
	assert_int_equal(queue_dirty_all(q), GPUQ_OK);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		uint8_t val[4096];
		size_t len;

		if (queue_record_encode(q, type, key, klen, val, sizeof(val), &len))
			continue;
		assert_int_equal(queue_record_apply(p, type, key, klen, val, len, NULL), GPUQ_OK);
	}
	assert_int_equal(queue_restore_done(p, NULL), GPUQ_OK);
	explain(q, "high", a, sizeof(a));
	explain(p, "high", b, sizeof(b));
	assert_string_equal(a, b);
	assert_int_equal(queue_next_event(p, MIN), 5 * MIN);
	queue_destroy(q);
	queue_destroy(p);
}

/* ---- wall-clock limits ---- */

#define SEC 1000LL

static void add_limited(queue_t *q, const char *uid, int32_t prio, int64_t at, int64_t gpus,
			int32_t max_exec_s)
{
	wlopt_t o = {.max_exec_s = max_exec_s};

	assert_int_equal(add_wl_opt(q, uid, "ns", "lq", prio, at, 1, gpus, &o), GPUQ_OK);
}

static queue_workload_view_t view_of(queue_t *q, const char *uid)
{
	queue_wl_t id;
	queue_workload_view_t v;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	return v;
}

/* The limit in force is the shorter of the label and the ClusterQueue's
 * default; the workload is stopped at the first tick at admission + limit,
 * not a millisecond before. */
static void max_exec_limit_in_force(void **state)
{
	static const struct {
		int32_t label_s;
		int64_t cq_ms;
		int64_t want_ms; /* 0: no limit */
	} cases[] = {
	    {0, 0, 0},		       /* neither */
	    {20, 0, 20 * SEC},	       /* the label alone */
	    {0, 90 * SEC, 90 * SEC},   /* the default alone */
	    {20, 90 * SEC, 20 * SEC},  /* the label shorter: it wins */
	    {300, 90 * SEC, 90 * SEC}, /* the default shorter: it holds */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		econ_cq_t e = {.gpus = 1, .max_exec_ms = cases[i].cq_ms};
		queue_t *q = econ_queue(&e);
		queue_result_t r;
		queue_workload_view_t v;
		int64_t t0 = 5 * SEC;

		add_limited(q, "w", 0, 0, 1, cases[i].label_s);
		cycle(q, t0, &r);
		assert_true(admitted_in(&r, "w"));
		v = view_of(q, "w");
		assert_int_equal(v.max_exec_ms, cases[i].want_ms);
		if (!cases[i].want_ms) {
			assert_int_equal(v.exec_deadline_ms, -1);
			assert_int_equal(queue_tick(q, 400 * SEC, &r), GPUQ_OK);
			assert_int_equal(state_of(q, "w"), QUEUE_WL_ADMITTED);
			queue_destroy(q);
			continue;
		}
		assert_int_equal(v.exec_deadline_ms, t0 + cases[i].want_ms);
		assert_int_equal(queue_next_event(q, t0), t0 + cases[i].want_ms);
		assert_int_equal(queue_tick(q, t0 + cases[i].want_ms - 1, &r), GPUQ_OK);
		assert_int_equal(r.n_evictions, 0);
		assert_int_equal(queue_tick(q, t0 + cases[i].want_ms, &r), GPUQ_OK);
		assert_true(evicted_in(&r, "w", QUEUE_EVICT_MAX_EXEC));
		assert_string_equal(r.evictions[0].reason_name, "MaximumExecutionTimeExceeded");
		assert_int_equal(wait_of(q, "w"), QUEUE_WAIT_DEACTIVATED);
		queue_destroy(q);
	}
}

/* Time counts only while admitted, summed over admissions (a preemption in
 * between); past the limit the workload is out of the queue, its quota goes
 * to the next, and only a change of its limit brings it back, clock at 0. */
static void max_exec_accumulates_and_deactivates(void **state)
{
	econ_cq_t e = {.gpus = 1};
	queue_t *q = econ_queue(&e);
	queue_result_t r;
	queue_workload_view_t v;
	queue_request_t req = {"gpu", 1};
	queue_podset_spec_t ps = {.name = "main", .count = 1, .requests = &req, .n_requests = 1};
	queue_workload_spec_t s = {.namespace_ = "ns",
				   .name = "low",
				   .uid = "low",
				   .local_queue = "lq",
				   .podsets = &ps,
				   .n_podsets = 1,
				   .max_exec_s = 10};
	char st[512];
	bool changed = false;

	(void)state;
	add_limited(q, "low", 0, 0, 1, 10);
	cycle(q, 0, &r);
	assert_true(admitted_in(&r, "low"));
	add_wl(q, "high", "ns", "lq", 100, 4 * SEC, 1); /* preempts low at 4 s */
	cycle(q, 4 * SEC, &r);
	assert_true(evicted_in(&r, "low", QUEUE_EVICT_IN_CQ));
	cycle(q, 4 * SEC, &r);
	assert_true(admitted_in(&r, "high"));
	assert_int_equal(view_of(q, "low").exec_ms, 4 * SEC);
	assert_int_equal(queue_workload_finish(q, "high", 6 * SEC), GPUQ_OK);
	cycle(q, 6 * SEC, &r);
	assert_true(admitted_in(&r, "low"));
	/* 4 s run before, 6 s left from 6 s: stopped at 12 s, not 10 or 16 */
	v = view_of(q, "low");
	assert_int_equal(v.exec_deadline_ms, 12 * SEC);
	add_wl(q, "next", "ns", "lq", 0, 7 * SEC, 1);
	assert_int_equal(queue_tick(q, 12 * SEC - 1, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_tick(q, 12 * SEC, &r), GPUQ_OK);
	assert_true(evicted_in(&r, "low", QUEUE_EVICT_MAX_EXEC));
	assert_int_equal(r.evictions[0].preemptor, QUEUE_NONE);
	cycle(q, 12 * SEC, &r);
	assert_true(admitted_in(&r, "next")); /* its quota goes to the next */
	assert_int_equal(wait_of(q, "low"), QUEUE_WAIT_DEACTIVATED);
	{
		queue_wl_t id;

		assert_int_equal(queue_workload_find(q, "low", &id), GPUQ_OK);
		assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
		assert_non_null(strstr(st, "pending in ClusterQueue cq: deactivated: it ran 10 s, "
					   "its maximum execution time is 10 s"));
		explain(q, "low", st, sizeof(st)); /* in no queue: no position */
		assert_true(!strncmp(st, "in ns/lq: deactivated: it ran 10 s", 34));
	}
	/* free quota, still out of the queue: no cycle admits it */
	assert_int_equal(queue_workload_finish(q, "next", 13 * SEC), GPUQ_OK);
	cycle(q, 14 * SEC, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(state_of(q, "low"), QUEUE_WL_PENDING);
	/* an edit that leaves its limit as it is leaves it deactivated */
	s.priority = 5;
	assert_int_equal(queue_workload_update(q, &s, 15 * SEC, &changed, NULL), GPUQ_OK);
	cycle(q, 15 * SEC, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(wait_of(q, "low"), QUEUE_WAIT_DEACTIVATED);
	/* a person raises its limit: back in the queue, its clock at 0 */
	s.max_exec_s = 30;
	assert_int_equal(queue_workload_update(q, &s, 16 * SEC, &changed, NULL), GPUQ_OK);
	assert_true(changed);
	cycle(q, 16 * SEC, &r);
	assert_true(admitted_in(&r, "low"));
	assert_int_equal(view_of(q, "low").exec_deadline_ms, 46 * SEC);
	assert_int_equal(queue_check(q, st, sizeof(st)), GPUQ_OK);
	queue_destroy(q);
}

/* The daemon's way (release_on_evict false): the workload holds its quota
 * until its pods are gone, and only then is deactivated. A limit lowered
 * while it runs applies at the next tick. */
static void max_exec_daemon_and_lowered_limit(void **state)
{
	queue_config_t cfg;
	queue_t *q = NULL;
	queue_result_t r;
	econ_cq_t e = {.gpus = 1};
	queue_request_t req = {"gpu", 1};
	queue_podset_spec_t ps = {.name = "main", .count = 1, .requests = &req, .n_requests = 1};
	queue_workload_spec_t s = {.namespace_ = "ns",
				   .name = "w",
				   .uid = "w",
				   .local_queue = "lq",
				   .podsets = &ps,
				   .n_podsets = 1,
				   .max_exec_s = 3600};
	bool changed = false;

	(void)state;
	queue_config_default(&cfg);
	cfg.release_on_evict = false;
	cfg.tenant_sample_ms = 1000 * 24 * HOUR;
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	add_flavor(q, "f");
	econ_cq(q, "cq", &e, false);
	add_lq(q, "ns", "lq", "cq");
	assert_int_equal(queue_workload_add(q, &s, 0, NULL, NULL), GPUQ_OK);
	cycle(q, 0, &r);
	assert_true(admitted_in(&r, "w"));
	s.max_exec_s = 20; /* lowered while it runs, past already at 30 s */
	assert_int_equal(queue_workload_update(q, &s, 30 * SEC, &changed, NULL), GPUQ_OK);
	assert_true(changed);
	assert_int_equal(queue_tick(q, 30 * SEC, &r), GPUQ_OK);
	assert_true(evicted_in(&r, "w", QUEUE_EVICT_MAX_EXEC));
	assert_int_equal(state_of(q, "w"), QUEUE_WL_EVICTING);
	assert_int_equal(queue_workload_evicted(q, "w", 31 * SEC), GPUQ_OK);
	assert_int_equal(wait_of(q, "w"), QUEUE_WAIT_DEACTIVATED);
	assert_int_equal(view_of(q, "w").exec_ms, 31 * SEC);
	cycle(q, 32 * SEC, &r);
	assert_int_equal(r.n_admissions, 0);
	/* the limit alone, as the controller sends it for a released object:
	   the same leaves it out, another brings it back, clock at 0 */
	assert_int_equal(queue_workload_limit_set(q, "w", 20, 33 * SEC, &changed), GPUQ_OK);
	assert_false(changed);
	assert_int_equal(queue_workload_limit_set(q, "w", -1, 33 * SEC, NULL), GPUQ_EINVAL);
	assert_int_equal(queue_workload_limit_set(q, "nobody", 5, 33 * SEC, NULL), GPUQ_ENOTFOUND);
	assert_int_equal(wait_of(q, "w"), QUEUE_WAIT_DEACTIVATED);
	assert_int_equal(queue_workload_limit_set(q, "w", 60, 34 * SEC, &changed), GPUQ_OK);
	assert_true(changed);
	cycle(q, 34 * SEC, &r);
	assert_true(admitted_in(&r, "w"));
	assert_int_equal(view_of(q, "w").exec_deadline_ms, 94 * SEC);
	/* lowered while admitted, past the time run: stopped at the next tick */
	assert_int_equal(queue_workload_limit_set(q, "w", 5, 40 * SEC, &changed), GPUQ_OK);
	assert_int_equal(queue_tick(q, 40 * SEC, &r), GPUQ_OK);
	assert_true(evicted_in(&r, "w", QUEUE_EVICT_MAX_EXEC));
	queue_destroy(q);
}

/* Copy every record of q into a fresh core of the same policy. */
static queue_t *restored(queue_t *q, const econ_cq_t *e)
{
	queue_t *p = econ_queue(e);
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen;

	assert_int_equal(queue_dirty_all(q), GPUQ_OK);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		uint8_t val[4096];
		size_t len;

		if (queue_record_encode(q, type, key, klen, val, sizeof(val), &len))
			continue;
		assert_int_equal(queue_record_apply(p, type, key, klen, val, len, NULL), GPUQ_OK);
	}
	assert_int_equal(queue_restore_done(p, NULL), GPUQ_OK);
	return p;
}

/* A leader that dies loses no deadline: the time run before (a requeue)
 * and the limit are in the workload's record; a deactivated workload stays
 * out of the queue in the restored core. */
static void max_exec_survives_restore(void **state)
{
	econ_cq_t e = {.gpus = 1, .max_exec_ms = 60 * SEC};
	queue_t *q = econ_queue(&e), *p, *p2;
	queue_result_t r;

	(void)state;
	add_limited(q, "w", 0, 0, 1, 10);
	add_limited(q, "x", 0, 0, 1, 0); /* the default's 60 s */
	cycle(q, 0, &r);
	add_wl(q, "high", "ns", "lq", 100, 3 * SEC, 1);
	cycle(q, 3 * SEC, &r); /* preempts the newest admitted: w or x, by uid */
	cycle(q, 3 * SEC, &r);
	assert_int_equal(queue_workload_finish(q, "high", 5 * SEC), GPUQ_OK);
	cycle(q, 5 * SEC, &r);
	p = restored(q, &e);
	assert_int_equal(view_of(p, "w").exec_deadline_ms, view_of(q, "w").exec_deadline_ms);
	assert_int_equal(view_of(p, "w").exec_ms, view_of(q, "w").exec_ms);
	assert_int_equal(queue_next_event(p, 5 * SEC), queue_next_event(q, 5 * SEC));
	assert_int_equal(queue_tick(p, view_of(p, "w").exec_deadline_ms, &r), GPUQ_OK);
	assert_true(evicted_in(&r, "w", QUEUE_EVICT_MAX_EXEC));
	p2 = restored(p, &e);
	assert_int_equal(wait_of(p2, "w"), QUEUE_WAIT_DEACTIVATED);
	cycle(p2, 100 * SEC, &r);
	assert_false(admitted_in(&r, "w"));
	queue_destroy(q);
	queue_destroy(p);
	queue_destroy(p2);
}

/* A workload its driver deletes and adopts again as it stands (a set's
 * slice resized) takes back its admission time and earlier admitted time:
 * its wall-clock deadline stays where it was, and the restored core has it
 * too. Not for a pending workload, nor a later admission. */
static void carry_keeps_the_deadline(void **state)
{
	econ_cq_t e = {.gpus = 2};
	queue_t *q = econ_queue(&e), *p;
	queue_result_t r;
	queue_adopt_t a = {0, "gpu", "f"};
	int64_t deadline;

	(void)state;
	add_limited(q, "w", 0, 0, 2, 60);
	add_limited(q, "v", 0, 0, 4, 0); /* never fits: stays pending */
	cycle(q, 0, &r);
	deadline = view_of(q, "w").exec_deadline_ms;
	assert_int_equal(deadline, 60 * SEC);
	assert_int_equal(queue_workload_delete(q, "w", 20 * SEC), GPUQ_OK);
	add_limited(q, "w", 0, 0, 1, 60);
	assert_int_equal(queue_workload_adopt(q, "w", &a, 1, 20 * SEC), GPUQ_OK);
	assert_int_equal(view_of(q, "w").exec_deadline_ms, 80 * SEC); /* a new admission */
	assert_int_equal(queue_workload_carry(q, "v", 0, 0), GPUQ_EINVAL);
	assert_int_equal(queue_workload_carry(q, "w", 21 * SEC, 0), GPUQ_EINVAL);
	assert_int_equal(queue_workload_carry(q, "w", 0, -1), GPUQ_EINVAL);
	assert_int_equal(queue_workload_carry(q, "nope", 0, 0), GPUQ_ENOTFOUND);
	assert_int_equal(queue_workload_carry(q, "w", 0, 0), GPUQ_OK);
	assert_int_equal(view_of(q, "w").exec_deadline_ms, deadline);
	assert_int_equal(queue_next_event(q, 20 * SEC), deadline);
	p = restored(q, &e);
	assert_int_equal(view_of(p, "w").exec_deadline_ms, deadline);
	assert_int_equal(queue_tick(q, deadline, &r), GPUQ_OK);
	assert_true(evicted_in(&r, "w", QUEUE_EVICT_MAX_EXEC));
	queue_destroy(q);
	queue_destroy(p);
}

/* ---- budgets ---- */

static queue_budget_spec_t budget(queue_budget_scope_t scope, const char *name, double limit,
				  queue_budget_action_t action)
{
	queue_budget_spec_t b = {scope, name, false, limit, 0, 0, action};

	return b;
}

static void budget_hold_until_the_month_turns(void **state)
{
	econ_cq_t e = {.gpus = 8};
	queue_t *q = econ_queue(&e);
	queue_budget_spec_t b = budget(QUEUE_BUDGET_LOCALQUEUE, "ns/lq", 1.0, QUEUE_BUDGET_HOLD);
	queue_budget_view_t v;
	queue_result_t r;
	queue_wl_t id;
	char why[512];

	(void)state;
	assert_int_equal(queue_budgets_set(q, &b, 1, NULL, 0, NULL), GPUQ_OK);
	add_wl(q, "a", "ns", "lq", 0, JAN31, 2);
	cycle(q, JAN31, &r);
	assert_true(admitted_in(&r, "a"));
	assert_int_equal(queue_budget_view(q, 0, &v), GPUQ_OK);
	assert_int_equal(v.state, QUEUE_BUDGET_OK);
	assert_int_equal(v.window_start_ms, JAN31 - 30 * 24 * HOUR); /* January */
	assert_int_equal(v.window_end_ms, FEB1);
	/* 24 min of 2 GPUs: 0.8 GPU-hours, the warning share (80%) */
	assert_int_equal(queue_tick(q, JAN31 + 24 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_budget_changes, 1);
	assert_int_equal(r.budget_changes[0].to, QUEUE_BUDGET_WARNING);
	/* 30 min: 1 GPU-hour, over: held */
	add_wl(q, "b", "ns", "lq", 0, JAN31 + 25 * MIN, 1);
	assert_int_equal(queue_tick(q, JAN31 + 30 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_budget_changes, 1);
	assert_int_equal(r.budget_changes[0].to, QUEUE_BUDGET_OVER);
	assert_int_equal(queue_lq_standing(q, 0), QUEUE_LQ_HELD);
	cycle(q, JAN31 + 30 * MIN, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(wait_of(q, "b"), QUEUE_WAIT_BUDGET);
	explain(q, "b", why, sizeof(why));
	assert_non_null(strstr(why,
			       "held: LocalQueue ns/lq is over its budget (1 of 1 "
			       "GPU-hours this month; action Hold) until 2025-02-01 00:00 UTC"));
	/* the coarse status names the budget, not its figures (they grow while
	 * the running one runs; the status is written only when it changes) */
	assert_int_equal(queue_workload_find(q, "b", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, why, sizeof(why)), GPUQ_OK);
	assert_string_equal(why, "pending in ClusterQueue cq: held: LocalQueue ns/lq is over "
				 "its budget (action Hold) until 2025-02-01 00:00 UTC");
	/* the running one runs on; at the turn of the month the hold lifts */
	assert_int_equal(queue_next_event(q, JAN31 + 30 * MIN), JAN31 + 31 * MIN);
	assert_int_equal(queue_workload_finish(q, "a", JAN31 + HOUR), GPUQ_OK);
	cycle(q, FEB1 - 1, &r);
	assert_int_equal(r.n_admissions, 0);
	cycle(q, FEB1, &r);
	assert_true(admitted_in(&r, "b"));
	assert_int_equal(queue_budget_view(q, 0, &v), GPUQ_OK);
	assert_int_equal(v.state, QUEUE_BUDGET_OK);
	assert_int_equal(v.window_start_ms, FEB1);
	queue_destroy(q);
}

/* Lower: an over-budget LocalQueue's workloads wait behind those within
 * budget, whatever their priority, and do not borrow. */
static void budget_lower_orders_and_forbids_borrowing(void **state)
{
	econ_cq_t e = {.cohort = "co", .gpus = 2};
	econ_cq_t lender = {.cohort = "co", .gpus = 4};
	queue_t *q = mkq_quiet();
	queue_budget_spec_t b = budget(QUEUE_BUDGET_NAMESPACE, "poor", 0, QUEUE_BUDGET_LOWER);
	queue_result_t r;
	char why[512];

	(void)state;
	add_flavor(q, "f");
	econ_cq(q, "cq", &e, false);
	econ_cq(q, "other", &lender, false);
	add_lq(q, "poor", "lq", "cq");
	add_lq(q, "rich", "lq", "cq");
	assert_int_equal(queue_budgets_set(q, &b, 1, NULL, 0, NULL), GPUQ_OK);
	add_wl(q, "p1", "poor", "lq", 100, 0, 1);
	add_wl(q, "r1", "rich", "lq", 0, 1, 2);
	add_wl(q, "p2", "poor", "lq", 100, 2, 2);
	cycle(q, 10, &r); /* limit 0: over at once */
	assert_int_equal(queue_lq_standing(q, 0), QUEUE_LQ_LOWERED);
	/* rich's goes first though younger and lower; poor's takes the
	 * nominal left, not what the cohort lends */
	assert_int_equal(r.n_admissions, 1);
	assert_string_equal(r.admissions[0].uid, "r1");
	assert_int_equal(state_of(q, "p1"), QUEUE_WL_PENDING);
	explain(q, "p1", why, sizeof(why));
	assert_non_null(strstr(why, "over its budget (Lower): it may not borrow"));
	assert_non_null(strstr(why, "namespace poor is over its budget"));
	/* the limit rises: no longer lowered, it borrows */
	b.limit = 100;
	assert_int_equal(queue_budgets_set(q, &b, 1, NULL, 0, NULL), GPUQ_OK);
	cycle(q, 20, &r);
	assert_int_equal(r.n_admissions, 2);
	assert_true(r.admissions[0].borrows || r.admissions[1].borrows);
	queue_destroy(q);
}

/* Lower: a lowered workload preempts none of a LocalQueue within budget in
 * its ClusterQueue, under either strategy, whatever its priority. Under
 * StrictFIFO the victim, requeued, came first again and took the quota
 * back: seeds 1209, 14907 and 18165 of test_queue_props ping-ponged so,
 * cycle after cycle at one instant. */
static void budget_lower_preempts_within_budget_only_once(void **state)
{
	for (int strict = 0; strict <= 1; strict++) {
		econ_cq_t e = {.gpus = 2,
			       .strategy = strict ? QUEUE_STRICT_FIFO : QUEUE_BEST_EFFORT_FIFO};
		queue_t *q = mkq_quiet();
		queue_budget_spec_t b =
		    budget(QUEUE_BUDGET_NAMESPACE, "poor", 0, QUEUE_BUDGET_LOWER);
		queue_result_t r;
		size_t evictions = 0, admissions = 0;

		(void)state;
		add_flavor(q, "f");
		econ_cq(q, "cq", &e, false);
		add_lq(q, "poor", "lq", "cq");
		add_lq(q, "rich", "lq", "cq");
		assert_int_equal(queue_budgets_set(q, &b, 1, NULL, 0, NULL), GPUQ_OK);
		add_wl(q, "r1", "rich", "lq", 0, 0, 2);
		cycle(q, 10, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_int_equal(queue_lq_standing(q, 0), QUEUE_LQ_LOWERED);
		add_wl(q, "p1", "poor", "lq", 100, 1, 2);
		for (int i = 0; i < 8; i++) { /* cycles at one instant */
			cycle(q, 20, &r);
			evictions += r.n_evictions;
			admissions += r.n_admissions;
		}
		/* either strategy: the lowered one preempts nothing of a
		   LocalQueue within budget, whatever its priority */
		assert_int_equal(evictions, 0);
		assert_int_equal(admissions, 0);
		assert_int_equal(state_of(q, "r1"), QUEUE_WL_ADMITTED);
		assert_int_equal(state_of(q, "p1"), QUEUE_WL_PENDING);
		queue_destroy(q);
	}
}

/* Cost budgets charge at the flavors' prices; a ClusterQueue budget covers
 * every LocalQueue of it; warn only reports. */
static void budget_cost_and_clusterqueue(void **state)
{
	econ_cq_t e = {.gpus = 4};
	queue_t *q = econ_queue(&e);
	queue_budget_spec_t b = {QUEUE_BUDGET_CLUSTERQUEUE, "cq", true, 10.0, 7, 50,
				 QUEUE_BUDGET_WARN};
	ledger_price_t price = {"f", 2.5};
	queue_budget_view_t v;
	queue_result_t r;

	(void)state;
	assert_int_equal(queue_budgets_set(q, &b, 1, &price, 1, NULL), GPUQ_OK);
	add_wl(q, "a", "ns", "lq", 0, 0, 2);
	cycle(q, 0, &r);
	/* 2 GPUs x 1 h x 2.50 = 5.00: the 50% warning share */
	assert_int_equal(queue_tick(q, HOUR, &r), GPUQ_OK);
	assert_int_equal(queue_budget_view(q, 0, &v), GPUQ_OK);
	assert_true(v.cost);
	assert_true(v.used > 4.99 && v.used < 5.01);
	assert_int_equal(v.state, QUEUE_BUDGET_WARNING);
	assert_int_equal(v.window_start_ms, 0); /* 7-day windows from the epoch */
	assert_int_equal(v.window_end_ms, 7 * 24 * HOUR);
	assert_int_equal(queue_tick(q, 2 * HOUR, &r), GPUQ_OK);
	assert_int_equal(r.n_budget_changes, 1);
	assert_int_equal(r.budget_changes[0].to, QUEUE_BUDGET_OVER);
	assert_int_equal(queue_lq_standing(q, 0), QUEUE_LQ_IN_BUDGET); /* Warn: reported only */
	queue_destroy(q);
}

static void budget_refusals(void **state)
{
	econ_cq_t e = {.gpus = 4};
	queue_t *q = econ_queue(&e);
	queue_budget_spec_t two[2] = {budget(QUEUE_BUDGET_LOCALQUEUE, "ns/lq", 1, 0),
				      budget(QUEUE_BUDGET_LOCALQUEUE, "ns/lq", 2, 0)};
	queue_budget_spec_t nolq = budget(QUEUE_BUDGET_LOCALQUEUE, "ns/none", 1, 0);
	queue_budget_spec_t neg = budget(QUEUE_BUDGET_CLUSTERQUEUE, "cq", -1, 0);
	gpuq_diag_t diag = {{0}};

	(void)state;
	assert_int_equal(queue_budgets_set(q, two, 2, NULL, 0, &diag), GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "declared twice"));
	assert_int_equal(queue_budgets_set(q, &nolq, 1, NULL, 0, &diag), GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "no LocalQueue \"ns/none\""));
	assert_int_equal(queue_budgets_set(q, &neg, 1, NULL, 0, &diag), GPUQ_EINVAL);
	assert_int_equal(queue_budget_count(q), 0);
	queue_destroy(q);
}

/* A budget's state is a record: a restored core holds the same state and
 * evaluates at the same time; a record written under another limit is
 * evaluated again at once. */
static void budget_record_round_trip(void **state)
{
	econ_cq_t e = {.gpus = 4};
	queue_t *q = econ_queue(&e), *p = econ_queue(&e), *s = econ_queue(&e);
	queue_budget_spec_t b = budget(QUEUE_BUDGET_LOCALQUEUE, "ns/lq", 0.5, QUEUE_BUDGET_HOLD);
	queue_budget_spec_t b2 = b;
	uint8_t val[256], trunc[256];
	size_t len;
	queue_result_t r;

	(void)state;
	b2.limit = 50;
	assert_int_equal(queue_budgets_set(q, &b, 1, NULL, 0, NULL), GPUQ_OK);
	assert_int_equal(queue_budgets_set(p, &b, 1, NULL, 0, NULL), GPUQ_OK);
	assert_int_equal(queue_budgets_set(s, &b2, 1, NULL, 0, NULL), GPUQ_OK);
	add_wl(q, "a", "ns", "lq", 0, 0, 1);
	cycle(q, 0, &r);
	assert_int_equal(queue_tick(q, HOUR, &r), GPUQ_OK);
	assert_int_equal(queue_lq_standing(q, 0), QUEUE_LQ_HELD);
	assert_int_equal(queue_record_encode(q, QUEUE_REC_BUDGET, (const uint8_t *)"l/ns/lq", 7,
					     val, sizeof(val), &len),
			 GPUQ_OK);
	assert_int_equal(queue_record_encode(q, QUEUE_REC_BUDGET, (const uint8_t *)"l/ns/x", 6, val,
					     sizeof(val), &len),
			 GPUQ_ENOTFOUND);
	assert_int_equal(queue_record_encode(q, QUEUE_REC_BUDGET, (const uint8_t *)"l/ns/lq", 7,
					     val, sizeof(val), &len),
			 GPUQ_OK);
	for (size_t n = 0; n < len; n++) { /* every truncation refused */
		memcpy(trunc, val, n);
		assert_int_not_equal(queue_record_apply(p, QUEUE_REC_BUDGET,
							(const uint8_t *)"l/ns/lq", 7, trunc, n,
							NULL),
				     GPUQ_OK);
	}
	assert_int_equal(
	    queue_record_apply(p, QUEUE_REC_BUDGET, (const uint8_t *)"l/ns/lq", 7, val, len, NULL),
	    GPUQ_OK);
	/* a record of a budget the policy no longer has is left alone */
	assert_int_equal(
	    queue_record_apply(p, QUEUE_REC_BUDGET, (const uint8_t *)"c/gone", 6, val, len, NULL),
	    GPUQ_OK);
	assert_int_equal(queue_restore_done(p, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_standing(p, 0), QUEUE_LQ_HELD);
	/* nothing runs in p: its usage stands still; the next evaluation is at
	 * the month's turn (a hold lifts then) */
	assert_int_equal(queue_next_event(p, HOUR), 31 * 24 * HOUR);
	assert_int_equal(
	    queue_record_apply(s, QUEUE_REC_BUDGET, (const uint8_t *)"l/ns/lq", 7, val, len, NULL),
	    GPUQ_OK);
	assert_int_equal(queue_restore_done(s, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_standing(s, 0), QUEUE_LQ_HELD); /* as recorded ... */
	assert_int_equal(queue_next_event(s, HOUR), HOUR + 1);	  /* ... until evaluated now */
	assert_int_equal(queue_tick(s, HOUR + 1, &r), GPUQ_OK);
	assert_int_equal(queue_lq_standing(s, 0), QUEUE_LQ_IN_BUDGET);
	queue_destroy(q);
	queue_destroy(p);
	queue_destroy(s);
}

/* ---- idle GPUs ---- */

static void idle_reported_then_reclaimed(void **state)
{
	econ_cq_t e = {.gpus = 4,
		       .idle = QUEUE_IDLE_PREEMPT,
		       .idle_pct = 10,
		       .idle_after_ms = 30 * MIN,
		       .min_runtime_ms = 40 * MIN};
	queue_t *q = econ_queue(&e);
	queue_result_t r;
	queue_wl_t id;
	queue_workload_view_t v;
	char why[512];

	(void)state;
	add_wl(q, "idle", "ns", "lq", 0, 0, 4);
	cycle(q, 0, &r);
	assert_int_equal(queue_workload_utilization(q, "idle", 50, MIN), GPUQ_OK);
	assert_int_equal(queue_workload_utilization(q, "idle", 3, 2 * MIN), GPUQ_OK);
	assert_int_equal(queue_workload_utilization(q, "idle", 2, 5 * MIN),
			 GPUQ_OK); /* spell kept */
	assert_int_equal(queue_workload_utilization(q, "idle", NAN, 6 * MIN), GPUQ_OK);
	assert_int_equal(queue_workload_find(q, "idle", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.idle_since_ms, 2 * MIN);
	assert_int_equal(queue_next_event(q, 6 * MIN), 32 * MIN);
	assert_int_equal(queue_tick(q, 32 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_idles, 1); /* reported once */
	assert_string_equal(r.idles[0].uid, "idle");
	assert_int_equal(r.idles[0].idle_since_ms, 2 * MIN);
	assert_int_equal(r.n_evictions, 0); /* nobody waits */
	assert_int_equal(queue_tick(q, 33 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_idles, 0);
	/* someone waits for its flavor: not before its minimum runtime */
	add_wl(q, "wait", "ns", "lq", 0, 34 * MIN, 2);
	cycle(q, 34 * MIN, &r);
	assert_int_equal(wait_of(q, "wait"), QUEUE_WAIT_QUOTA);
	assert_int_equal(queue_next_event(q, 34 * MIN), 40 * MIN);
	assert_int_equal(queue_tick(q, 39 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_tick(q, 40 * MIN, &r), GPUQ_OK);
	assert_true(evicted_in(&r, "idle", QUEUE_EVICT_IDLE_RECLAIM));
	assert_non_null(strstr(r.evictions[0].message, "below 10% utilization"));
	assert_string_equal(r.evictions[0].reason_name, "IdleReclaim");
	/* requeued behind a backoff; the waiting one goes first */
	assert_int_equal(wait_of(q, "idle"), QUEUE_WAIT_BACKOFF);
	explain(q, "idle", why, sizeof(why));
	assert_non_null(strstr(why, "idle GPUs were reclaimed (IdleReclaim)"));
	cycle(q, 40 * MIN, &r);
	assert_true(admitted_in(&r, "wait"));
	assert_int_equal(queue_workload_find(q, "idle", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.preemptions, 1);
	queue_destroy(q);
}

static void idle_report_only_and_busy_again(void **state)
{
	econ_cq_t e = {
	    .gpus = 4, .idle = QUEUE_IDLE_REPORT, .idle_pct = 10, .idle_after_ms = 10 * MIN};
	queue_t *q = econ_queue(&e);
	queue_result_t r;

	(void)state;
	add_wl(q, "a", "ns", "lq", 0, 0, 4);
	cycle(q, 0, &r);
	assert_int_equal(queue_workload_utilization(q, "a", 0, 0), GPUQ_OK);
	assert_int_equal(queue_workload_utilization(q, "a", 90, 5 * MIN), GPUQ_OK); /* busy */
	assert_int_equal(queue_tick(q, 11 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_idles, 0);
	assert_int_equal(queue_workload_utilization(q, "a", 1, 12 * MIN), GPUQ_OK);
	add_wl(q, "w", "ns", "lq", 0, 12 * MIN, 1);
	cycle(q, 12 * MIN, &r);
	assert_int_equal(queue_tick(q, 22 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_idles, 1);
	assert_int_equal(r.n_evictions, 0); /* Report: never evicted */
	assert_int_equal(queue_workload_utilization(q, "w", 1, 0), GPUQ_EINVAL); /* pending */
	assert_int_equal(queue_workload_utilization(q, "nope", 1, 0), GPUQ_ENOTFOUND);
	queue_destroy(q);
}

/* ---- predicted start ---- */

static void predicted_start_in_the_explanation(void **state)
{
	econ_cq_t e = {.gpus = 1};
	queue_t *q = econ_queue(&e);
	queue_result_t r;
	char why[512];

	(void)state;
	add_wl(q, "a", "ns", "lq", 0, 0, 1);
	add_wl(q, "b", "ns", "lq", 0, 1, 1);
	cycle(q, 1, &r);
	assert_int_equal(queue_workload_predict_set(q, "a", 0), GPUQ_EINVAL); /* running */
	assert_int_equal(queue_workload_predict_set(q, "b", 1 + 25 * MIN), GPUQ_OK);
	explain(q, "b", why, sizeof(why));
	assert_non_null(
	    strstr(why, "position 1 of 1 in ns/lq; expected to start in about 25 min: "));
	assert_int_equal(queue_workload_predict_set(q, "b", -5), GPUQ_OK);
	explain(q, "b", why, sizeof(why));
	assert_null(strstr(why, "expected"));
	queue_destroy(q);
}

/* The coarse status (gpuq.dev/status, plain `gpuq status`) says the
 * predicted start, rounded up to 5 minutes, of a workload the driver picked
 * (the first few of its LocalQueue, within the hour): the annotation is
 * rewritten only when that text changes. */
static void predicted_start_in_the_status(void **state)
{
	const int64_t t0 = 1795964400000LL; /* 2026-11-29 15:00:00 UTC */
	econ_cq_t e = {.gpus = 1};
	queue_t *q = econ_queue(&e);
	queue_result_t r;
	queue_wl_t id;
	char st[512];
	bool was = true;

	(void)state;
	add_wl(q, "a", "ns", "lq", 0, t0, 1);
	add_wl(q, "b", "ns", "lq", 0, t0 + 1, 1);
	cycle(q, t0, &r);
	assert_int_equal(queue_workload_find(q, "b", &id), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
	assert_string_equal(st, "pending in ClusterQueue cq: waiting for quota");
	assert_int_equal(queue_workload_predict_set(q, "b", t0 + 25 * MIN + 1), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
	assert_string_equal(st, "pending in ClusterQueue cq: waiting for quota"); /* not picked */
	assert_int_equal(queue_workload_predict_show(q, "b", true, &was), GPUQ_OK);
	assert_false(was);
	assert_int_equal(queue_workload_predict_show(q, "a", true, NULL),
			 GPUQ_EINVAL); /* running */
	assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
	assert_string_equal(st, "pending in ClusterQueue cq: waiting for quota; expected to start "
				"by about 2026-11-29 15:30 UTC");
	/* moved within its 5 minutes: the same words */
	assert_int_equal(queue_workload_predict_set(q, "b", t0 + 29 * MIN), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
	assert_non_null(strstr(st, "by about 2026-11-29 15:30 UTC"));
	/* none: not said */
	assert_int_equal(queue_workload_predict_set(q, "b", -1), GPUQ_OK);
	assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
	assert_string_equal(st, "pending in ClusterQueue cq: waiting for quota");
	/* no longer picked: not said */
	assert_int_equal(queue_workload_predict_set(q, "b", t0 + 25 * MIN), GPUQ_OK);
	assert_int_equal(queue_workload_predict_show(q, "b", false, &was), GPUQ_OK);
	assert_true(was);
	assert_int_equal(queue_workload_status(q, id, st, sizeof(st)), GPUQ_OK);
	assert_string_equal(st, "pending in ClusterQueue cq: waiting for quota");
	queue_destroy(q);
}

/* Pods becoming Ready void the workload's Ready timer (its epoch moves), not
 * the end of its minimum runtime nor its idle spell's deadline: both still
 * wake the core (the controller feeds Ready pods; the simulator did not). */
static void pods_ready_keeps_min_runtime_and_idle_spell(void **state)
{
	econ_cq_t e = {.gpus = 4,
		       .min_runtime_ms = 10 * MIN,
		       .idle = QUEUE_IDLE_REPORT,
		       .idle_pct = 10,
		       .idle_after_ms = 5 * MIN};
	queue_t *q = econ_queue(&e);
	queue_result_t r;

	(void)state;
	add_wl(q, "low", "ns", "lq", 0, 0, 4);
	cycle(q, 0, &r);
	assert_true(admitted_in(&r, "low"));
	assert_int_equal(queue_workload_utilization(q, "low", 2, MIN), GPUQ_OK);
	assert_int_equal(queue_workload_pods_ready(q, "low", 2 * MIN), GPUQ_OK);
	add_wl(q, "high", "ns", "lq", 100, 3 * MIN, 4);
	cycle(q, 3 * MIN, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_next_event(q, 3 * MIN), 6 * MIN);
	assert_int_equal(queue_tick(q, 6 * MIN, &r), GPUQ_OK);
	assert_int_equal(r.n_idles, 1);
	assert_int_equal(queue_next_event(q, 6 * MIN), 10 * MIN);
	assert_int_equal(queue_tick(q, 10 * MIN, &r), GPUQ_OK);
	cycle(q, 10 * MIN, &r);
	assert_true(evicted_in(&r, "low", QUEUE_EVICT_IN_CQ));
	queue_destroy(q);
}

/* ---- idle GPUs: only on fresh evidence ---- */

/* One run of readings: pct at from, from + step, ..., up to to. */
typedef struct {
	int64_t from, to, step;
	double pct;
} reads_t;

typedef struct {
	const char *name;
	int64_t fresh_ms;   /* the core's idle_fresh_ms */
	reads_t runs[2];    /* readings (a run with step 0: none) */
	int64_t waiter_at;  /* a 2-GPU workload waits from then on */
	int64_t ticks[4];   /* ticks, in order (0 ends the list, after the first) */
	size_t want_idles;  /* spells reported over every tick */
	bool want_evicted;  /* reclaimed (IdleReclaim) at one of them */
	int64_t want_since; /* its idle_since_ms after the last tick (-1: not idle) */
} fresh_case_t;

/* Minutes, to keep each row on a line. */
#define M MIN
static const fresh_case_t FRESH[] = {
    /* one low reading, then an outage: no report, nobody preempted */
    {"outage", 2 * M, {{0, 0, M, 3}}, 0, {10 * M, 20 * M}, 0, false, -1},
    /* the same without the bound: one reading carries the spell (the simulator's way) */
    {"unbounded", 0, {{0, 0, M, 3}}, 0, {10 * M}, 1, true, 0},
    /* a low reading every minute: reported and reclaimed */
    {"fresh", 2 * M, {{0, 10 * M, M, 3}}, 0, {10 * M}, 1, true, -1},
    /* the readings stop halfway: the spell ends before its deadline */
    {"stopped", 2 * M, {{0, 5 * M, M, 3}}, 0, {10 * M}, 0, false, -1},
    /* a gap longer than the bound starts the spell again (deadline 15, not 10) */
    {"gap", 2 * M, {{0, 2 * M, M, 3}, {5 * M, 15 * M, M, 3}}, 0, {12 * M, 15 * M}, 1, true, -1},
    /* reported, then the readings stop: not reclaimed when someone waits later */
    {"stale-reported", 2 * M, {{0, 10 * M, M, 3}}, 13 * M, {10 * M, 13 * M}, 1, false, -1},
    /* NaN readings say nothing: the spell ends when its evidence is stale */
    {"nan", 2 * M, {{0, 0, M, 3}, {M, 10 * M, M, NAN}}, 0, {10 * M}, 0, false, -1},
    /* a busy reading ends it, as before */
    {"busy", 2 * M, {{0, 4 * M, M, 3}, {5 * M, 10 * M, M, 90}}, 0, {10 * M}, 0, false, -1},
};
#undef M

/* Feed c's readings up to and including `until` (from *next on, in time
 * order across the runs). */
static void fresh_feed(queue_t *q, const fresh_case_t *c, int64_t until, int64_t *next)
{
	for (;;) {
		int64_t best = INT64_MAX;
		double pct = 0;

		for (size_t k = 0; k < 2; k++) {
			const reads_t *r = &c->runs[k];
			if (!r->step)
				continue;
			for (int64_t t = r->from; t <= r->to; t += r->step)
				if (t >= *next && t < best) {
					best = t;
					pct = r->pct;
				}
		}
		if (best > until)
			return;
		assert_int_equal(queue_workload_utilization(q, "idle", pct, best), GPUQ_OK);
		*next = best + 1;
	}
}

static void idle_spell_needs_fresh_evidence(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(FRESH) / sizeof(FRESH[0]); i++) {
		const fresh_case_t *c = &FRESH[i];
		econ_cq_t e = {.gpus = 4,
			       .idle = QUEUE_IDLE_PREEMPT,
			       .idle_pct = 10,
			       .idle_after_ms = 10 * MIN};
		queue_config_t cfg;
		queue_t *q = NULL;
		queue_result_t r;
		queue_wl_t id;
		queue_workload_view_t v;
		size_t idles = 0;
		bool evicted = false, waiting = false;
		int64_t next = 0;

		queue_config_default(&cfg);
		cfg.tenant_sample_ms = 1000 * 24 * HOUR;
		cfg.idle_fresh_ms = c->fresh_ms;
		assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
		add_flavor(q, "f");
		econ_cq(q, "cq", &e, false);
		add_lq(q, "ns", "lq", "cq");
		add_wl(q, "idle", "ns", "lq", 0, 0, 4);
		cycle(q, 0, &r);
		for (size_t t = 0; t < 4 && (t == 0 || c->ticks[t]); t++) {
			int64_t at = c->ticks[t];

			if (!waiting && c->waiter_at <= at) {
				fresh_feed(q, c, c->waiter_at, &next);
				add_wl(q, "wait", "ns", "lq", 0, c->waiter_at, 2);
				cycle(q, c->waiter_at, &r);
				waiting = true;
			}
			fresh_feed(q, c, at, &next);
			assert_int_equal(queue_tick(q, at, &r), GPUQ_OK);
			idles += r.n_idles;
			evicted = evicted || evicted_in(&r, "idle", QUEUE_EVICT_IDLE_RECLAIM);
		}
		assert_int_equal(queue_workload_find(q, "idle", &id), GPUQ_OK);
		assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
		if (idles != c->want_idles || evicted != c->want_evicted ||
		    (!evicted && v.idle_since_ms != c->want_since))
			fail_msg("%s: %zu reported (want %zu), %s (want %s), idle since %lld (want "
				 "%lld)",
				 c->name, idles, c->want_idles, evicted ? "evicted" : "not evicted",
				 c->want_evicted ? "evicted" : "not", (long long)v.idle_since_ms,
				 (long long)c->want_since);
		queue_destroy(q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(min_runtime_delays_preemption),
	    cmocka_unit_test(min_runtime_by_priority),
	    cmocka_unit_test(min_runtime_survives_restore),
	    cmocka_unit_test(pods_ready_keeps_min_runtime_and_idle_spell),
	    cmocka_unit_test(budget_hold_until_the_month_turns),
	    cmocka_unit_test(budget_lower_orders_and_forbids_borrowing),
	    cmocka_unit_test(budget_lower_preempts_within_budget_only_once),
	    cmocka_unit_test(budget_cost_and_clusterqueue),
	    cmocka_unit_test(budget_refusals),
	    cmocka_unit_test(budget_record_round_trip),
	    cmocka_unit_test(idle_reported_then_reclaimed),
	    cmocka_unit_test(idle_report_only_and_busy_again),
	    cmocka_unit_test(idle_spell_needs_fresh_evidence),
	    cmocka_unit_test(predicted_start_in_the_explanation),
	    cmocka_unit_test(predicted_start_in_the_status),
	    cmocka_unit_test(max_exec_limit_in_force),
	    cmocka_unit_test(max_exec_accumulates_and_deactivates),
	    cmocka_unit_test(max_exec_daemon_and_lowered_limit),
	    cmocka_unit_test(max_exec_survives_restore),
	    cmocka_unit_test(carry_keeps_the_deadline),
	};

	return cmocka_run_group_tests_name("queue_econ", tests, NULL, NULL);
}

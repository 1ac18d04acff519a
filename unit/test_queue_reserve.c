/* The bounded wait (queue/reserve.c): a ClusterQueue's starvation limit
 * reserves capacity for the workload that waited past it. Cases, then a
 * property trace: a stream of small jobs and big gangs with known runtimes,
 * the quota invariants checked after every step, and every reservation
 * bounded: its holder starts by the time the workloads running when it
 * began to reserve have all ended (by their limits or run bounds, else
 * their runtimes). The same trace again in a cohort: half the small jobs
 * come from a second ClusterQueue that has no GPUs of its own and borrows
 * every one it runs from the first; the reservation holds the cohort's
 * lent quota too. */
#include "unit/queue_fixtures.h"

#define SEC 1000
#define LIMIT (20 * SEC)

static queue_t *stream_queue(int64_t starvation_ms)
{
	cqdef_t d = {.flavors = {{"f", 16, U, U}}, .starvation_ms = starvation_ms};
	queue_t *q = mkq(false);

	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	return q;
}

/* stream_queue's "cq" in cohort "co" beside "borrower" (LocalQueue nb/lq),
 * which has no quota of its own and may borrow all of it. */
static queue_t *cohort_queue(int64_t starvation_ms)
{
	cqdef_t a = {.cohort = "co", .flavors = {{"f", 16, U, U}}, .starvation_ms = starvation_ms};
	cqdef_t b = {.cohort = "co", .flavors = {{"f", 0, U, U}}};
	queue_t *q = mkq(false);

	add_flavor(q, "f");
	add_cq(q, "cq", &a);
	add_cq(q, "borrower", &b);
	add_lq(q, "ns", "lq", "cq");
	add_lq(q, "nb", "lq", "borrower");
	return q;
}

static void check_ok(queue_t *q)
{
	char why[256];

	if (queue_check(q, why, sizeof(why)))
		fail_msg("queue_check: %s", why);
}

static bool reserving(queue_t *q, const char *uid, queue_workload_view_t *v)
{
	queue_wl_t id;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, v), GPUQ_OK);
	return v->reserving;
}

/* 16 one-GPU jobs hold the queue; a 16-GPU job arrives. Before the limit a
 * new small job takes a freed GPU; past it the freed GPUs stay free for
 * the big one, which starts when the last small one ends. */
static void reserve_holds_freed_quota(void **state)
{
	queue_t *q = stream_queue(LIMIT);
	queue_workload_view_t v;
	char uid[32], text[512];
	int64_t now = 0;

	(void)state;
	for (int i = 0; i < 16; i++) {
		snprintf(uid, sizeof(uid), "s%02d", i);
		add_wl(q, uid, "ns", "lq", 0, now, 1);
	}
	cycle(q, now, NULL);
	add_wl(q, "big", "ns", "lq", 0, 1 * SEC, 16);
	cycle(q, 1 * SEC, NULL);
	assert_int_equal(state_of(q, "big"), QUEUE_WL_PENDING);
	/* before the limit: a freed GPU goes to the next small job */
	assert_int_equal(queue_workload_finish(q, "s00", 5 * SEC), GPUQ_OK);
	add_wl(q, "t0", "ns", "lq", 0, 5 * SEC, 1);
	cycle(q, 5 * SEC, NULL);
	assert_int_equal(state_of(q, "t0"), QUEUE_WL_ADMITTED);
	assert_false(reserving(q, "big", &v));
	/* past it: freed GPUs stay free */
	now = 22 * SEC;
	assert_int_equal(queue_workload_finish(q, "s01", now), GPUQ_OK);
	add_wl(q, "t1", "ns", "lq", 0, now, 1);
	cycle(q, now, NULL);
	check_ok(q);
	assert_int_equal(state_of(q, "t1"), QUEUE_WL_PENDING);
	assert_true(reserving(q, "big", &v));
	assert_int_equal(v.reserved_ahead, 15);	   /* 15 still run */
	assert_int_equal(v.reserved_start_ms, -1); /* none has a limit */
	assert_int_equal(queue_workload_explain(q, "t1", text, sizeof(text)), GPUQ_OK);
	assert_non_null(strstr(text, "for ns/big"));
	assert_int_equal(queue_workload_explain(q, "big", text, sizeof(text)), GPUQ_OK);
	assert_non_null(strstr(text, "reserved: starts when 15 running workloads end"));
	for (int i = 2; i < 16; i++) {
		snprintf(uid, sizeof(uid), "s%02d", i);
		assert_int_equal(queue_workload_finish(q, uid, now + i * SEC), GPUQ_OK);
		cycle(q, now + i * SEC, NULL);
		assert_int_equal(state_of(q, "big"), QUEUE_WL_PENDING); /* t0 still runs */
	}
	assert_int_equal(queue_workload_finish(q, "t0", 40 * SEC), GPUQ_OK);
	cycle(q, 40 * SEC, NULL);
	assert_int_equal(state_of(q, "big"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "t1"), QUEUE_WL_PENDING);
	/* t1, retried when t0's GPU came free and set aside again once big
	   took it, waits for quota now, not for a reservation that ended */
	assert_int_equal(queue_workload_explain(q, "t1", text, sizeof(text)), GPUQ_OK);
	assert_null(strstr(text, "starvation limit"));
	assert_non_null(strstr(text, "needs 1 gpu on flavor f, 0 free"));
	check_ok(q);
	queue_destroy(q);
}

/* The wait is the time pending, not the age: a workload preempted after a
 * long run does not reserve at once when it queues again, but once it has
 * waited past the limit since (with what it waited before its admission). */
static void reserve_counts_the_wait_not_the_age(void **state)
{
	cqdef_t d = {.flavors = {{"f", 16, U, U}},
		     .within = QUEUE_WITHIN_LOWER_PRIORITY,
		     .starvation_ms = LIMIT};
	queue_t *q = mkq(false);
	queue_workload_view_t v;
	queue_result_t r;

	(void)state;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "blocker", "ns", "lq", 0, 0, 16);
	cycle(q, 0, NULL);
	add_wl(q, "w", "ns", "lq", 0, 1 * SEC, 16);
	cycle(q, 1 * SEC, NULL);
	/* w waits 5 s, runs 100 s */
	assert_int_equal(queue_workload_finish(q, "blocker", 6 * SEC), GPUQ_OK);
	cycle(q, 6 * SEC, NULL);
	assert_int_equal(state_of(q, "w"), QUEUE_WL_ADMITTED);
	add_wl(q, "hi", "ns", "lq", 10, 106 * SEC, 16);
	assert_int_equal(queue_cycle_run(q, 106 * SEC, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 1); /* requeued at once (release_on_evict) */
	cycle(q, 107 * SEC, NULL);
	assert_int_equal(state_of(q, "hi"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "w"), QUEUE_WL_PENDING);
	/* 107 s old, 5 s waited before and 2 s now: no reservation yet */
	add_wl(q, "s", "ns", "lq", 0, 108 * SEC, 1);
	cycle(q, 108 * SEC, NULL);
	assert_false(reserving(q, "w", &v));
	/* 13 s more waited: 20 in all, the limit; 1 ms past it, reserved */
	cycle(q, 121 * SEC, NULL);
	assert_false(reserving(q, "w", &v));
	add_wl(q, "t", "ns", "lq", 0, 121 * SEC + 1, 1);
	cycle(q, 121 * SEC + 1, NULL);
	check_ok(q);
	assert_true(reserving(q, "w", &v));
	queue_destroy(q);
}

/* Backfill: a small job whose wall-clock limit ends it by the reserved
 * start is admitted; one whose limit ends later, or that has none, is not.
 * Without a starvation limit all are. */
static void reserve_backfills_by_limit(void **state)
{
	for (int off = 0; off < 2; off++) {
		queue_t *q = stream_queue(off ? 0 : LIMIT);
		wlopt_t lim30 = {.max_exec_s = 30}, lim5 = {.max_exec_s = 5};
		queue_workload_view_t v;

		(void)state;
		/* 15 GPUs until 30 s (their limits), 1 free */
		for (int i = 0; i < 15; i++) {
			char uid[16];

			snprintf(uid, sizeof(uid), "s%02d", i);
			assert_int_equal(add_wl_opt(q, uid, "ns", "lq", 0, 0, 1, 1, &lim30),
					 GPUQ_OK);
		}
		cycle(q, 0, NULL);
		add_wl(q, "big", "ns", "lq", 0, 0, 16);
		cycle(q, 0, NULL);
		assert_int_equal(add_wl_opt(q, "long", "ns", "lq", 0, 21 * SEC, 1, 1, &lim30),
				 GPUQ_OK);
		add_wl(q, "nolimit", "ns", "lq", 0, 21 * SEC, 1);
		cycle(q, 21 * SEC, NULL);
		assert_int_equal(state_of(q, "long"), off ? QUEUE_WL_ADMITTED : QUEUE_WL_PENDING);
		assert_int_equal(reserving(q, "big", &v), !off);
		if (off) {
			queue_destroy(q);
			continue;
		}
		assert_int_equal(v.reserved_ahead, 15);
		assert_int_equal(v.reserved_start_ms, 30 * SEC);
		assert_int_equal(state_of(q, "nolimit"), QUEUE_WL_PENDING);
		assert_int_equal(add_wl_opt(q, "short", "ns", "lq", 0, 22 * SEC, 1, 1, &lim5),
				 GPUQ_OK);
		cycle(q, 22 * SEC, NULL);
		assert_int_equal(state_of(q, "short"), QUEUE_WL_ADMITTED); /* ends at 27 s */
		check_ok(q);
		queue_destroy(q);
	}
}

/* A run bound (a Job's activeDeadlineSeconds, enforced by the Job
 * controller) counts as a limit does: the runners' bounds give the
 * reserved start, and a small job whose bound ends it by then is
 * backfilled; one whose bound ends later is not. A bound learnt by an
 * update (the controller's resync) counts from then on. */
static void reserve_backfills_by_run_bound(void **state)
{
	queue_t *q = stream_queue(LIMIT);
	wlopt_t b30 = {.run_bound_s = 30}, b5 = {.run_bound_s = 5}, b60 = {.run_bound_s = 60};
	queue_workload_view_t v;
	queue_podset_spec_t ps;
	queue_request_t r = {"gpu", 1};
	queue_workload_spec_t s = {0};
	bool changed = false;

	(void)state;
	/* 15 GPUs until 30 s (their bounds), 1 free */
	for (int i = 0; i < 15; i++) {
		char uid[16];

		snprintf(uid, sizeof(uid), "s%02d", i);
		assert_int_equal(add_wl_opt(q, uid, "ns", "lq", 0, 0, 1, 1, &b30), GPUQ_OK);
	}
	cycle(q, 0, NULL);
	add_wl(q, "big", "ns", "lq", 0, 0, 16);
	cycle(q, 0, NULL);
	assert_int_equal(add_wl_opt(q, "long", "ns", "lq", 0, 21 * SEC, 1, 1, &b60), GPUQ_OK);
	cycle(q, 21 * SEC, NULL);
	assert_true(reserving(q, "big", &v));
	assert_int_equal(v.reserved_ahead, 15);
	assert_int_equal(v.reserved_start_ms, 30 * SEC); /* from the runners' bounds */
	assert_int_equal(state_of(q, "long"), QUEUE_WL_PENDING);
	assert_int_equal(add_wl_opt(q, "short", "ns", "lq", 0, 22 * SEC, 1, 1, &b5), GPUQ_OK);
	cycle(q, 22 * SEC, NULL);
	assert_int_equal(state_of(q, "short"), QUEUE_WL_ADMITTED); /* ends by 27 s */
	check_ok(q);
	/* "long" learns a bound of 5 s by an update: backfilled once a GPU frees */
	ps = (queue_podset_spec_t){.name = "main", .count = 1, .requests = &r, .n_requests = 1};
	s = (queue_workload_spec_t){.namespace_ = "ns",
				    .name = "long",
				    .uid = "long",
				    .local_queue = "lq",
				    .created_ms = 21 * SEC,
				    .podsets = &ps,
				    .n_podsets = 1,
				    .run_bound_s = 5};
	assert_int_equal(queue_workload_update(q, &s, 23 * SEC, &changed, NULL), GPUQ_OK);
	assert_true(changed);
	assert_int_equal(queue_workload_finish(q, "short", 24 * SEC), GPUQ_OK);
	cycle(q, 24 * SEC, NULL);
	assert_int_equal(state_of(q, "long"), QUEUE_WL_ADMITTED);
	check_ok(q);
	queue_destroy(q);
}

/* The reservation is not persisted: a core restored from the records
 * reserves for the same workload and keeps out the same one. */
static void reserve_recomputed_after_restore(void **state)
{
	queue_t *q = stream_queue(LIMIT), *p = stream_queue(LIMIT);
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, len;
	uint8_t buf[4096];
	gpuq_diag_t diag = {{0}};
	queue_workload_view_t v;

	(void)state;
	for (int i = 0; i < 16; i++) {
		char uid[16];

		snprintf(uid, sizeof(uid), "s%02d", i);
		add_wl(q, uid, "ns", "lq", 0, 0, 1);
	}
	cycle(q, 0, NULL);
	add_wl(q, "big", "ns", "lq", 0, 0, 16);
	cycle(q, 0, NULL);
	assert_int_equal(queue_workload_finish(q, "s00", 25 * SEC), GPUQ_OK);
	cycle(q, 25 * SEC, NULL);
	assert_true(reserving(q, "big", &v));
	assert_int_equal(queue_dirty_all(q), GPUQ_OK);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		if (queue_record_encode(q, type, key, klen, buf, sizeof(buf), &len))
			continue;
		if (queue_record_apply(p, type, key, klen, buf, len, &diag))
			fail_msg("apply: %s", diag.msg);
	}
	assert_int_equal(queue_restore_done(p, &diag), GPUQ_OK);
	add_wl(p, "t", "ns", "lq", 0, 26 * SEC, 1);
	cycle(p, 26 * SEC, NULL);
	assert_true(reserving(p, "big", &v));
	assert_int_equal(state_of(p, "t"), QUEUE_WL_PENDING);
	check_ok(p);
	queue_destroy(q);
	queue_destroy(p);
}

/* Across a cohort: "cq" (12 GPUs) reserves for a 12-GPU job while
 * "borrower" (8 of its own) runs 8 and borrows 4 more. The reserved start
 * counts what "borrower" gives back of its borrowing, not its own quota;
 * "borrower" may not borrow more ahead of the holder (unless its limit
 * ends it first), and keeps the use of its own quota. */
static void reserve_holds_the_cohort(void **state)
{
	cqdef_t a = {.cohort = "co", .flavors = {{"f", 12, U, U}}, .starvation_ms = LIMIT};
	cqdef_t b = {.cohort = "co", .flavors = {{"f", 8, U, U}}};
	wlopt_t l40 = {.max_exec_s = 40}, l60 = {.max_exec_s = 60}, l80 = {.max_exec_s = 80},
		l30 = {.max_exec_s = 30};
	queue_workload_view_t v;
	queue_t *q = mkq(false);
	char text[512];

	(void)state;
	add_flavor(q, "f");
	add_cq(q, "cq", &a);
	add_cq(q, "borrower", &b);
	add_lq(q, "ns", "lq", "cq");
	add_lq(q, "nb", "lq", "borrower");
	assert_int_equal(add_wl_opt(q, "a1", "ns", "lq", 0, 0, 1, 4, &l80), GPUQ_OK);
	assert_int_equal(add_wl_opt(q, "b1", "nb", "lq", 0, 0, 1, 8, &l40), GPUQ_OK);
	cycle(q, 0, NULL);
	assert_int_equal(add_wl_opt(q, "b2", "nb", "lq", 0, 1, 1, 4, &l60), GPUQ_OK);
	cycle(q, 1, NULL);
	assert_int_equal(state_of(q, "b2"), QUEUE_WL_ADMITTED); /* borrows 4 of cq's */
	add_wl(q, "big", "ns", "lq", 0, 1 * SEC, 12);
	cycle(q, 1 * SEC, NULL);
	assert_int_equal(state_of(q, "big"), QUEUE_WL_PENDING);
	/* past the limit: b1's end gives back b2's borrowing (4), b2's end
	   nothing more, a1's the rest */
	add_wl(q, "bn", "nb", "lq", 0, 22 * SEC, 2);
	assert_int_equal(add_wl_opt(q, "bf", "nb", "lq", 0, 22 * SEC, 1, 2, &l30), GPUQ_OK);
	cycle(q, 22 * SEC, NULL);
	check_ok(q);
	assert_true(reserving(q, "big", &v));
	assert_int_equal(v.reserved_ahead, 3);
	assert_int_equal(v.reserved_start_ms, 80 * SEC);
	assert_int_equal(state_of(q, "bn"), QUEUE_WL_PENDING);	/* would borrow */
	assert_int_equal(state_of(q, "bf"), QUEUE_WL_ADMITTED); /* ends at 52 s */
	assert_int_equal(queue_workload_explain(q, "bn", text, sizeof(text)), GPUQ_OK);
	assert_non_null(strstr(text, "ClusterQueue cq of its cohort holds what it would borrow "
				     "for ns/big"));
	/* b1 ends: borrower is back within its own 8 (b2 4, bf 2): bn takes
	   2 of them */
	assert_int_equal(queue_workload_finish(q, "b1", 41 * SEC), GPUQ_OK);
	cycle(q, 41 * SEC, NULL);
	check_ok(q);
	assert_int_equal(state_of(q, "bn"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "big"), QUEUE_WL_PENDING);
	queue_destroy(q);
}

/* ---- the property trace ---- */

#define TWL 300 /* workloads per trace */

typedef struct {
	char uid[16];
	int64_t arrive, runtime; /* ms */
	int32_t gpus, limit_s;	 /* limit 0: none */
	int32_t run_bound_s;	 /* a run bound (activeDeadlineSeconds), 0: none */
	bool borrower;		 /* from the borrowing ClusterQueue (cohort traces) */
	int64_t admitted, end;	 /* -1 until admitted */
	int64_t bound;		 /* reserving: admitted by then; -1 not yet seen */
} tw_t;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int64_t between(uint64_t *s, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rng(s) % (uint64_t)(hi - lo + 1));
}

static void trace_make(uint64_t seed, tw_t *w)
{
	uint64_t s = seed * 2654435761u + 1;
	int64_t t = 0;

	for (int i = 0; i < TWL; i++) {
		bool big = between(&s, 0, 24) == 0;

		snprintf(w[i].uid, sizeof(w[i].uid), "w%03d", i);
		t += between(&s, 0, 3 * SEC);
		w[i].arrive = t;
		w[i].gpus = big ? (int32_t)between(&s, 8, 16) : (int32_t)between(&s, 1, 2);
		w[i].runtime = between(&s, 1 * SEC, 40 * SEC);
		/* a limit at or above the runtime, half the time */
		w[i].limit_s =
		    between(&s, 0, 1) ? (int32_t)(w[i].runtime / SEC + between(&s, 1, 20)) : 0;
		/* of the others, half declare a run bound at or above the runtime */
		w[i].run_bound_s = !w[i].limit_s && between(&s, 0, 1)
				       ? (int32_t)(w[i].runtime / SEC + between(&s, 1, 20))
				       : 0;
		w[i].borrower = !big && between(&s, 0, 1);
		w[i].admitted = w[i].end = w[i].bound = -1;
	}
}

/* When running workload x ends at the latest: its limit or its run bound,
 * else its runtime. */
static int64_t end_bound(const tw_t *x)
{
	if (x->limit_s)
		return x->admitted + (int64_t)x->limit_s * SEC;
	return x->run_bound_s ? x->admitted + (int64_t)x->run_bound_s * SEC : x->end;
}

static int64_t next_time(const tw_t *w, int n_in, queue_t *q, int64_t now)
{
	int64_t t = queue_next_event(q, now);

	for (int i = 0; i < TWL; i++) {
		if (i >= n_in) {
			t = w[i].arrive < t ? w[i].arrive : t;
			break;
		}
		if (w[i].end > now && w[i].end < t)
			t = w[i].end;
		/* just past the limit: the reservation begins */
		if (w[i].admitted < 0 && w[i].arrive + LIMIT + 1 > now &&
		    w[i].arrive + LIMIT + 1 < t)
			t = w[i].arrive + LIMIT + 1;
	}
	return t;
}

/* After a cycle at now: note admissions, a new reservation's bound, and
 * check every admission of a reservation holder against its bound. */
static void observe(queue_t *q, tw_t *w, int n_in, const queue_result_t *r, int64_t now,
		    uint64_t seed)
{
	for (size_t a = 0; a < r->n_admissions; a++) {
		int i = (int)strtol(r->admissions[a].uid + 1, NULL, 10); /* "w%03d" */

		w[i].admitted = now;
		w[i].end = now + w[i].runtime;
		if (w[i].bound >= 0 && now > w[i].bound)
			fail_msg("seed %llu: %s reserved with bound %lld, admitted at %lld",
				 (unsigned long long)seed, w[i].uid, (long long)w[i].bound,
				 (long long)now);
	}
	for (int i = 0; i < n_in; i++) {
		queue_workload_view_t v;

		if (w[i].admitted >= 0 || w[i].bound >= 0 || !reserving(q, w[i].uid, &v))
			continue;
		w[i].bound = now;
		for (int k = 0; k < n_in; k++)
			if (w[k].admitted >= 0 && w[k].end > now && end_bound(&w[k]) > w[i].bound)
				w[i].bound = end_bound(&w[k]);
	}
}

/* Every workload arrived, ran and ended (the core's own timers, tenant
 * usage samples, go on for ever). */
static bool all_done(const tw_t *w, int n_in, int64_t now)
{
	if (n_in < TWL)
		return false;
	for (int i = 0; i < TWL; i++)
		if (w[i].admitted < 0 || w[i].end > now)
			return false;
	return true;
}

static int run_trace(uint64_t seed, bool reserve, bool cohort)
{
	static tw_t w[TWL];
	queue_t *q = cohort ? cohort_queue(reserve ? LIMIT : 0) : stream_queue(reserve ? LIMIT : 0);
	queue_result_t r;
	int64_t now = 0, big_wait = 0;
	int n_in = 0, steps = 0;

	trace_make(seed, w);
	while (steps++ < 20 * TWL) {
		for (int i = 0; i < n_in; i++)
			if (w[i].end == now) {
				assert_int_equal(queue_workload_finish(q, w[i].uid, now), GPUQ_OK);
				check_ok(q);
			}
		for (; n_in < TWL && w[n_in].arrive == now; n_in++) {
			wlopt_t o = {.max_exec_s = w[n_in].limit_s,
				     .run_bound_s = w[n_in].run_bound_s};

			const char *ns = cohort && w[n_in].borrower ? "nb" : "ns";

			assert_int_equal(
			    add_wl_opt(q, w[n_in].uid, ns, "lq", 0, now, 1, w[n_in].gpus, &o),
			    GPUQ_OK);
		}
		assert_int_equal(queue_tick(q, now, &r), GPUQ_OK);
		assert_int_equal(r.n_evictions, 0); /* runtimes are within limits */
		assert_int_equal(queue_cycle_run(q, now, &r), GPUQ_OK);
		check_ok(q);
		observe(q, w, n_in, &r, now, seed);
		if (all_done(w, n_in, now))
			break;
		now = next_time(w, n_in, q, now);
	}
	for (int i = 0; i < TWL; i++) {
		assert_true(w[i].admitted >= 0); /* no lost workload */
		if (w[i].gpus >= 8 && w[i].admitted - w[i].arrive > big_wait)
			big_wait = w[i].admitted - w[i].arrive;
	}
	queue_destroy(q);
	return (int)(big_wait / SEC);
}

static void property_traces(bool cohort)
{
	long worse = 0, better = 0;

	for (uint64_t seed = 1; seed <= 100; seed++) {
		int with = run_trace(seed, true, cohort), without = run_trace(seed, false, cohort);

		better += with < without;
		worse += with > without;
	}
	/* the point of it: the longest wait of a big gang is shorter more
	   often than not */
	assert_true(better > worse);
}

static void reserve_property_traces(void **state)
{
	(void)state;
	property_traces(false);
}

/* The bound holds with half the stream borrowing from the cohort. */
static void reserve_property_traces_cohort(void **state)
{
	(void)state;
	property_traces(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reserve_holds_freed_quota),
	    cmocka_unit_test(reserve_counts_the_wait_not_the_age),
	    cmocka_unit_test(reserve_backfills_by_limit),
	    cmocka_unit_test(reserve_backfills_by_run_bound),
	    cmocka_unit_test(reserve_recomputed_after_restore),
	    cmocka_unit_test(reserve_holds_the_cohort),
	    cmocka_unit_test(reserve_property_traces),
	    cmocka_unit_test(reserve_property_traces_cohort),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Builders and probes shared by the queue unit tests (test_queue.c,
 * test_queue_preempt.c): a small policy, workloads of GPUs, one cycle, and
 * questions about a workload's state. static inline, so a test that leaves
 * some unused does not warn. */
#ifndef GPUQ_UNIT_QUEUE_FIXTURES_H
#define GPUQ_UNIT_QUEUE_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"

/* ---- builders ---- */

typedef struct {
	const char *name; /* flavor */
	int64_t nominal;  /* gpu nominal */
	int64_t blimit;	  /* borrowing limit or QUEUE_UNLIMITED */
	int64_t llimit;	  /* lending limit or QUEUE_UNLIMITED */
} fq_t;

typedef struct {
	const char *cohort; /* cohort or NULL */
	queue_strategy_t strategy;
	queue_within_t within;
	queue_reclaim_t reclaim;
	queue_borrow_t borrow;
	int64_t weight;
	fq_t flavors[4]; /* up to 4 flavors, ends at name NULL */
	queue_fungible_t when_can_borrow, when_can_preempt;
	queue_preference_t preference;
	bool afs;	       /* admission fair sharing */
	const char *res;       /* the resource covered, default "gpu" */
	int64_t starvation_ms; /* starvationLimit, ms (0: none) */
} cqdef_t;

static inline queue_t *mkq(bool fair)
{
	queue_config_t cfg;
	queue_t *q = NULL;

	queue_config_default(&cfg);
	cfg.fair_sharing = fair;
	assert_int_equal(queue_create(&cfg, &q), GPUQ_OK);
	return q;
}

static inline void add_flavor(queue_t *q, const char *name)
{
	queue_flavor_spec_t f = {.name = name};

	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
}

static inline int put_cq(queue_t *q, const char *name, const cqdef_t *d, bool update);

static inline void add_cq(queue_t *q, const char *name, const cqdef_t *d)
{
	(void)put_cq(q, name, d, false);
}

/* queue_cq_add (update false) or queue_cq_update from a cqdef_t. */
static inline int put_cq(queue_t *q, const char *name, const cqdef_t *d, bool update)
{
	const char *const cov[] = {d->res ? d->res : "gpu"};
	queue_quota_spec_t quotas[4];
	queue_flavor_quota_spec_t fl[4];
	queue_group_spec_t g = {.covered = cov, .n_covered = 1, .flavors = fl};
	queue_cq_spec_t s = {0};
	gpuq_diag_t diag = {{0}};
	size_t n = 0;

	for (; n < 4 && d->flavors[n].name; n++) {
		quotas[n].nominal = d->flavors[n].nominal;
		quotas[n].borrowing_limit = d->flavors[n].blimit;
		quotas[n].lending_limit = d->flavors[n].llimit;
		fl[n].flavor = d->flavors[n].name;
		fl[n].quotas = &quotas[n];
	}
	g.n_flavors = n;
	s.name = name;
	s.cohort = d->cohort;
	s.groups = &g;
	s.n_groups = 1;
	s.strategy = d->strategy;
	s.within = d->within;
	s.reclaim = d->reclaim;
	s.borrow = d->borrow;
	s.weight_milli = d->weight;
	s.when_can_borrow = d->when_can_borrow;
	s.when_can_preempt = d->when_can_preempt;
	s.preference = d->preference;
	s.admission_fair_sharing = d->afs;
	s.starvation_ms = d->starvation_ms;
	if (update)
		return queue_cq_update(q, &s, &diag);
	if (queue_cq_add(q, &s, NULL, &diag))
		fail_msg("cq_add %s: %s", name, diag.msg);
	return GPUQ_OK;
}

static inline void add_lq(queue_t *q, const char *ns, const char *name, const char *cq)
{
	assert_int_equal(queue_lq_add(q, ns, name, cq, 0, NULL, NULL), GPUQ_OK);
}

typedef struct {
	const queue_label_t *sel;
	size_t n_sel;
	const queue_affinity_t *aff;
	size_t n_aff;
	const queue_toleration_t *tol;
	size_t n_tol;
	int32_t gang_total, pods_present;
	const char *res;     /* resource, default "gpu" */
	int32_t max_exec_s;  /* its own wall-clock limit, s (0: none) */
	int32_t run_bound_s; /* what ends each run by its age, s (0: none) */
} wlopt_t;

static inline int add_wl_opt(queue_t *q, const char *uid, const char *ns, const char *lq,
			     int32_t prio, int64_t created, int32_t count, int64_t per_pod,
			     const wlopt_t *o)
{
	queue_request_t r = {o && o->res ? o->res : "gpu", per_pod};
	queue_podset_spec_t ps = {.name = "main", .count = count, .requests = &r, .n_requests = 1};
	queue_workload_spec_t s = {0};

	if (o) {
		ps.node_selector = o->sel;
		ps.n_node_selector = o->n_sel;
		ps.affinity = o->aff;
		ps.n_affinity = o->n_aff;
		ps.tolerations = o->tol;
		ps.n_tolerations = o->n_tol;
		s.gang_total = o->gang_total;
		s.pods_present = o->pods_present;
		s.max_exec_s = o->max_exec_s;
		s.run_bound_s = o->run_bound_s;
	}
	s.namespace_ = ns;
	s.name = uid;
	s.uid = uid;
	s.local_queue = lq;
	s.priority = prio;
	s.created_ms = created;
	s.podsets = &ps;
	s.n_podsets = 1;
	return queue_workload_add(q, &s, created, NULL, NULL);
}

static inline void add_wl(queue_t *q, const char *uid, const char *ns, const char *lq, int32_t prio,
			  int64_t created, int64_t gpus)
{
	assert_int_equal(add_wl_opt(q, uid, ns, lq, prio, created, 1, gpus, NULL), GPUQ_OK);
}

static inline queue_wl_state_t state_of(queue_t *q, const char *uid)
{
	queue_wl_t id;
	queue_workload_view_t v;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	return v.state;
}

static inline queue_wait_t wait_of(queue_t *q, const char *uid)
{
	queue_wl_t id;
	queue_workload_view_t v;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	return v.wait;
}

static inline const char *flavor_of(queue_t *q, const char *uid)
{
	queue_wl_t id;
	uint32_t res, f;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	assert_int_equal(queue_resource_find(q, "gpu", &res), GPUQ_OK);
	if (queue_workload_flavor(q, id, 0, res, &f))
		return "-";
	return queue_flavor_name(q, f);
}

static inline bool admitted_in(const queue_result_t *r, const char *uid)
{
	for (size_t i = 0; i < r->n_admissions; i++)
		if (!strcmp(r->admissions[i].uid, uid))
			return true;
	return false;
}

static inline void cycle(queue_t *q, int64_t now, queue_result_t *r)
{
	assert_int_equal(queue_cycle_run(q, now, r), GPUQ_OK);
}

#define U QUEUE_UNLIMITED

/* ---- flavors ---- */

typedef struct {
	const char *uid;
	int32_t prio;
	int64_t created;
	int64_t gpus;
} adm_t;

/* Admit each of `a` in order (one cycle each) into CQ "cq" via ns/lq. */
static inline void admit_all(queue_t *q, const char *lq, const adm_t *a, size_t n, int64_t *now)
{
	queue_result_t r;

	for (size_t i = 0; i < n && a[i].uid; i++) {
		add_wl(q, a[i].uid, "ns", lq, a[i].prio, a[i].created, a[i].gpus);
		cycle(q, ++*now, &r);
		if (!admitted_in(&r, a[i].uid))
			fail_msg("setup: %s not admitted", a[i].uid);
	}
}

#endif

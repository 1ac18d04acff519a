/* Property tests for the queue core: 1,000 seeded random traces (random
 * policies, arrivals, gangs, finishes, deletions, evictions, timeouts), with
 * the invariants checked after EVERY cycle and tick:
 *   - no CQ/flavor/resource above nominal + what it may borrow, and usage
 *     equal to the sum of its admitted workloads;
 *   - no cohort above its capacity (borrowed <= lendable, usage <= nominal);
 *   - no workload lost or duplicated: each live workload is exactly one of
 *     pending / admitted (or evicting) / finished, as the trace expects;
 *   - StrictFIFO: nothing admitted ahead of an eligible pending workload of
 *     higher priority in its CQ, or older at equal priority in its queue;
 *   - gangs and jobs all or nothing: an admitted workload has every pod of
 *     every pod set assigned, and a gang has all its pods present;
 *   - no livelock: a workload is preempted at most 3 times at one instant
 *     (some steps run cycles at one instant until nothing changes), and
 *     never twice by fair sharing for the same preemptor, in every trace;
 *   - encode-all + apply into a fresh queue gives identical state and the
 *     same next cycle;
 *   - the records written as they were marked changed (a store kept as the
 *     controller keeps it) equal the full encoding, byte for byte;
 *   - GPU economics (a third of the traces, from a stream of their own:
 *     budgets with Warn, Lower and Hold on LocalQueues, namespaces and
 *     ClusterQueues whose daily window turns mid-trace, minimum runtimes per
 *     ClusterQueue and per priority, idle reclaim with utilization readings):
 *     nothing admitted from a held LocalQueue, nothing borrowed by a lowered
 *     one, no workload preempted or reclaimed before its minimum runtime, no
 *     idle reclaim but with Preempt and after idleReclaim.for.
 * Policies are random too: cohorts, limits, strategies, the three
 * preemption policies, fair sharing with weights of 0, fractions and very
 * large ones, and flavorFungibility (whenCanBorrow, whenCanPreempt,
 * preference).
 * One cmocka test per 100 traces, so the TAP output stays at ten lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"

#define TRACES_PER_TEST 100
#define N_TESTS 10
#define MAX_WL 256

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static int64_t rnd(uint64_t *s, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* ---- a random policy, rebuildable for restores ---- */

static const char *const flavor_names[] = {"f0", "f1", "f2"};
static const char *const res_names[] = {"gpu", "cpu"};
static const char *const cohort_names[] = {"co0", "co1"};

typedef struct {
	int n_flavors;
	int n_cqs;
	int cohort[6];		  /* -1 none */
	int n_flv[6];		  /* flavors per CQ (first n of a rotation) */
	int flv_first[6];	  /* rotation start */
	int64_t nominal[6][3][2]; /* per CQ, flavor slot, resource */
	int64_t blimit[6][3][2];
	int64_t llimit[6][3][2];
	queue_strategy_t strategy[6];
	queue_within_t within[6];
	queue_reclaim_t reclaim[6];
	queue_borrow_t borrow[6];
	int64_t weight[6];
	bool weight_zero[6];
	queue_fungible_t when_borrow[6], when_preempt[6];
	queue_preference_t preference[6];
	bool afs[6];	      /* admission fair sharing (changed by the trace) */
	int n_lq[6];	      /* LocalQueues per CQ */
	queue_stop_t stop[6]; /* stopPolicy (changed by the trace) */
	queue_config_t cfg;
	bool zone_labels;	     /* f1 carries zone=b */
	bool tree;		     /* co0 and co1 under a root cohort "org", each cohort
					with quota and limits of its own (hierarchical) */
	int64_t co_nominal[3][3][2]; /* co0, co1, org: per flavor, resource */
	int64_t co_blimit[3][3][2];
	int64_t co_llimit[3][3][2];
	/* GPU economics (econ traces only) */
	bool econ;			 /* this trace has them */
	int64_t min_rt[6];		 /* per CQ, ms */
	queue_idle_action_t idle[6];	 /* per CQ */
	int64_t idle_after[6];		 /* per CQ, ms */
	int64_t prio_rt[4];		 /* per priority 0..3, ms (0: none) */
	queue_budget_spec_t budgets[16]; /* names point into budget_names */
	char budget_names[16][24];	 /* their names */
	size_t n_budgets;		 /* entries */
	int64_t max_exec[6];		 /* per CQ: maxExecutionTime, ms (0: none) */
} policy_t;

/* An econ trace's clock starts this long before its daily budget window
 * turns, so the turn (holds lifted) falls inside the trace. */
#define ECON_START (86400000LL - 600)

static void policy_random(uint64_t *s, policy_t *p)
{
	memset(p, 0, sizeof(*p));
	queue_config_default(&p->cfg);
	p->cfg.fair_sharing = rnd(s, 0, 2) == 0;
	p->cfg.release_on_evict = rnd(s, 0, 3) != 0;
	p->cfg.ready_timeout_ms = rnd(s, 0, 1) ? 40 : 0;
	p->cfg.ready_scope = rnd(s, 0, 1) ? QUEUE_READY_ALL : QUEUE_READY_GANGS;
	p->cfg.backoff_base_ms = 10;
	p->cfg.backoff_max_ms = 35;
	p->cfg.tenant_sample_ms = 20;
	p->cfg.tenant_half_life_ms = 100;
	p->n_flavors = (int)rnd(s, 1, 3);
	p->n_cqs = (int)rnd(s, 1, 6);
	p->zone_labels = rnd(s, 0, 1);
	for (int c = 0; c < p->n_cqs; c++) {
		p->cohort[c] = (int)rnd(s, -1, 1);
		p->n_flv[c] = (int)rnd(s, 1, p->n_flavors);
		p->flv_first[c] = (int)rnd(s, 0, p->n_flavors - 1);
		for (int f = 0; f < 3; f++) {
			for (int r = 0; r < 2; r++) {
				int64_t nom = rnd(s, 0, 8) * (r ? 1000 : 1);

				p->nominal[c][f][r] = nom;
				p->blimit[c][f][r] =
				    rnd(s, 0, 2) ? QUEUE_UNLIMITED : rnd(s, 0, 4) * (r ? 1000 : 1);
				p->llimit[c][f][r] =
				    rnd(s, 0, 2) ? QUEUE_UNLIMITED : rnd(s, 0, nom);
			}
		}
		p->strategy[c] = (queue_strategy_t)rnd(s, 0, 1);
		p->within[c] = (queue_within_t)rnd(s, 0, 2);
		p->reclaim[c] = (queue_reclaim_t)rnd(s, 0, 2);
		p->borrow[c] = (queue_borrow_t)rnd(s, 0, 1);
		/* weights as Kueue takes them: 0, fractions, very large */
		p->weight[c] =
		    (int64_t[]){500, 1000, 1500, 333, INT64_C(1000000000000)}[rnd(s, 0, 4)];
		p->weight_zero[c] = rnd(s, 0, 5) == 0;
		/* flavorFungibility at random; a preference only with both
		 * TryNextFlavor, as Kueue's validation says */
		p->when_borrow[c] = (queue_fungible_t)rnd(s, 0, 2);
		p->when_preempt[c] = (queue_fungible_t)rnd(s, 0, 2);
		p->preference[c] = p->when_borrow[c] == QUEUE_FUNGIBLE_TRY_NEXT &&
					   p->when_preempt[c] == QUEUE_FUNGIBLE_TRY_NEXT
				       ? (queue_preference_t)rnd(s, 0, 1)
				       : QUEUE_PREFER_BORROWING;
		p->n_lq[c] = (int)rnd(s, 1, 3);
	}
	{ /* from a stream of its own, so the traces of a seed stay as they were */
		uint64_t a = *s ^ 0x5bd1e9955bd1e995ull;

		for (int c = 0; c < p->n_cqs; c++)
			p->afs[c] = rnd(&a, 0, 1);
	}
	{ /* wall-clock limits, from a stream of their own: one CQ in four
	   * has a default of 20..300 ms (a trace runs about a second) */
		uint64_t x = *s ^ 0x94d049bb133111ebull;

		for (int c = 0; c < p->n_cqs; c++)
			p->max_exec[c] = rnd(&x, 0, 3) ? 0 : rnd(&x, 20, 300);
	}
	{ /* GPU economics, from a stream of their own too: the traces of a
	   * seed without them stay as they were */
		uint64_t e = *s ^ 0xc2b2ae3d27d4eb4full;

		p->econ = rnd(&e, 0, 2) == 0;
		p->cfg.budget_interval_ms = 5;
		for (int c = 0; p->econ && c < p->n_cqs; c++) {
			p->min_rt[c] = rnd(&e, 0, 2) ? 0 : rnd(&e, 1, 60);
			p->idle[c] = (queue_idle_action_t)rnd(&e, 0, 2);
			p->idle_after[c] = rnd(&e, 1, 30);
		}
		for (int pr = 0; p->econ && pr < 4; pr++)
			p->prio_rt[pr] = rnd(&e, 0, 3) ? 0 : rnd(&e, 1, 80);
		for (int c = 0; p->econ && c < p->n_cqs; c++) {
			/* per CQ: maybe its own budget, its namespace's, its first
			 * LocalQueue's (the test's namespaces are "cq<c>") */
			for (int k = 0; k < 3 && p->n_budgets < 16; k++) {
				queue_budget_spec_t *b = &p->budgets[p->n_budgets];
				char *nm = p->budget_names[p->n_budgets];

				if (rnd(&e, 0, 2))
					continue;
				if (k == 0)
					snprintf(nm, 24, "cq%d", c);
				else if (k == 1)
					snprintf(nm, 24, "cq%d", c);
				else
					snprintf(nm, 24, "cq%d/lq0", c);
				b->scope = k == 0   ? QUEUE_BUDGET_CLUSTERQUEUE
					   : k == 1 ? QUEUE_BUDGET_NAMESPACE
						    : QUEUE_BUDGET_LOCALQUEUE;
				b->name = nm;
				b->cost = rnd(&e, 0, 3) == 0;
				/* tiny: a few GPU-seconds, crossed within the trace */
				b->limit = (double)rnd(&e, 0, 12) * 1e-4;
				b->window_days = 1;
				b->warn_pct = (int32_t)rnd(&e, 1, 100);
				b->action = (queue_budget_action_t)rnd(&e, 0, 2);
				p->n_budgets++;
			}
		}
	}
	{ /* hierarchical cohorts, from a stream of their own too */
		uint64_t h = *s ^ 0x9e3779b97f4a7c15ull;

		p->tree = rnd(&h, 0, 2) == 0;
		for (int co = 0; co < 3; co++) {
			for (int f = 0; f < 3; f++) {
				for (int r = 0; r < 2; r++) {
					int64_t u = r ? 1000 : 1;

					p->co_nominal[co][f][r] = rnd(&h, 0, 4) * u;
					p->co_blimit[co][f][r] = co == 2 || rnd(&h, 0, 1)
								     ? QUEUE_UNLIMITED
								     : rnd(&h, 0, 4) * u;
					p->co_llimit[co][f][r] = co == 2 || rnd(&h, 0, 1)
								     ? QUEUE_UNLIMITED
								     : rnd(&h, 0, 6) * u;
				}
			}
		}
	}
}

/* Declare the tree's cohorts: org (the root), co0 and co1 under it. */
static void cohorts_put(queue_t *q, const policy_t *p)
{
	static const char *const names[] = {"co0", "co1", "org"};

	for (int co = 2; p->tree && co >= 0; co--) {
		queue_quota_spec_t qs[3][2];
		queue_flavor_quota_spec_t fl[3];
		queue_group_spec_t g = {res_names, 2, fl, (size_t)p->n_flavors};
		queue_cohort_spec_t cs = {names[co], co == 2 ? NULL : "org", 1000, false, &g, 1};
		gpuq_diag_t diag = {{0}};

		for (int f = 0; f < p->n_flavors; f++) {
			for (int r = 0; r < 2; r++)
				qs[f][r] = (queue_quota_spec_t){p->co_nominal[co][f][r],
								p->co_blimit[co][f][r],
								p->co_llimit[co][f][r]};
			fl[f].flavor = flavor_names[f];
			fl[f].quotas = qs[f];
		}
		if (queue_cohort_add(q, &cs, NULL, &diag))
			fail_msg("cohort %s: %s", names[co], diag.msg);
	}
}

/* Add CQ c of the policy, or update it to the policy's current quotas. */
static void cq_put(queue_t *q, const policy_t *p, int c, bool update)
{
	char name[16];
	queue_quota_spec_t qs[3][2];
	queue_flavor_quota_spec_t fl[3];
	queue_group_spec_t g = {.covered = res_names, .n_covered = 2, .flavors = fl};
	queue_cq_spec_t cs = {0};
	gpuq_diag_t diag = {{0}};

	for (int f = 0; f < p->n_flv[c]; f++) {
		int fid = (p->flv_first[c] + f) % p->n_flavors;

		for (int r = 0; r < 2; r++) {
			qs[f][r].nominal = p->nominal[c][f][r];
			qs[f][r].borrowing_limit = p->blimit[c][f][r];
			qs[f][r].lending_limit = p->llimit[c][f][r];
		}
		fl[f].flavor = flavor_names[fid];
		fl[f].quotas = qs[f];
	}
	g.n_flavors = (size_t)p->n_flv[c];
	snprintf(name, sizeof(name), "cq%d", c);
	cs.name = name;
	cs.cohort = p->cohort[c] >= 0 ? cohort_names[p->cohort[c]] : NULL;
	cs.groups = &g;
	cs.n_groups = 1;
	cs.strategy = p->strategy[c];
	cs.within = p->within[c];
	cs.reclaim = p->reclaim[c];
	cs.borrow = p->borrow[c];
	cs.weight_milli = p->weight[c];
	cs.weight_zero = p->weight_zero[c];
	cs.when_can_borrow = p->when_borrow[c];
	cs.when_can_preempt = p->when_preempt[c];
	cs.preference = p->preference[c];
	cs.stop = p->stop[c];
	cs.admission_fair_sharing = p->afs[c];
	cs.min_runtime_ms = p->min_rt[c];
	cs.idle_action = p->idle[c];
	cs.idle_threshold_pct = 50;
	cs.idle_after_ms = p->idle_after[c];
	cs.max_exec_ms = p->max_exec[c];
	if ((update ? queue_cq_update(q, &cs, &diag) : queue_cq_add(q, &cs, NULL, &diag)) != 0)
		fail_msg("cq %s: %s", update ? "update" : "add", diag.msg);
}

static queue_t *policy_build(const policy_t *p)
{
	queue_t *q = NULL;
	static const queue_label_t zone_b[] = {{"zone", "b"}};
	static const queue_taint_t taint[] = {{"dedicated", "x", QUEUE_EFFECT_NO_SCHEDULE}};

	assert_int_equal(queue_create(&p->cfg, &q), GPUQ_OK);
	for (int f = 0; f < p->n_flavors; f++) {
		queue_flavor_spec_t fs = {.name = flavor_names[f]};

		if (f == 1 && p->zone_labels) {
			fs.node_labels = zone_b;
			fs.n_node_labels = 1;
		}
		if (f == 2) {
			fs.node_taints = taint;
			fs.n_node_taints = 1;
		}
		assert_int_equal(queue_flavor_add(q, &fs, NULL, NULL), GPUQ_OK);
	}
	cohorts_put(q, p);
	for (int c = 0; c < p->n_cqs; c++) {
		char name[16], lq[16];

		cq_put(q, p, c, false);
		snprintf(name, sizeof(name), "cq%d", c);
		for (int l = 0; l < p->n_lq[c]; l++) {
			snprintf(lq, sizeof(lq), "lq%d", l);
			assert_int_equal(
			    queue_lq_add(q, name, lq, name, (l + 1) * 1000, NULL, NULL), GPUQ_OK);
		}
	}
	for (int c = 0; c < p->n_cqs; c++) {
		/* "mv": the namespace's LocalQueue of the next ClusterQueue, which
		   only an update moves a workload to (its label edited) */
		char ns[16], cq[16];

		snprintf(ns, sizeof(ns), "cq%d", c);
		snprintf(cq, sizeof(cq), "cq%d", (c + 1) % p->n_cqs);
		assert_int_equal(queue_lq_add(q, ns, "mv", cq, 1000, NULL, NULL), GPUQ_OK);
	}
	if (p->econ) {
		queue_prio_runtime_t rt[4];
		ledger_price_t price = {"f0", 2.0};
		size_t n = 0;
		gpuq_diag_t diag = {{0}};

		for (int pr = 0; pr < 4; pr++)
			if (p->prio_rt[pr])
				rt[n++] = (queue_prio_runtime_t){pr, p->prio_rt[pr]};
		assert_int_equal(queue_min_runtimes_set(q, rt, n), GPUQ_OK);
		if (queue_budgets_set(q, p->budgets, p->n_budgets, &price, 1, &diag))
			fail_msg("budgets: %s", diag.msg);
	}
	return q;
}

/* ---- what the trace expects of each workload ---- */

typedef enum { X_NONE = 0, X_LIVE, X_FINISHED, X_DELETED } expect_t;

typedef struct {
	char uid[16];
	expect_t ex;   /* live (pending/admitted/evicting) or finished */
	int gang;      /* gang total or 0 */
	int cq;	       /* its CQ (another after a move to "mv") */
	int ns;	       /* its namespace, cq<ns> */
	bool deact;    /* seen deactivated (its wall-clock limit): stays so until
			  an update changes its limit */
	int32_t label; /* its own limit, s (the spec's max_exec_s) */
} twl_t;

typedef struct {
	policy_t pol;
	queue_t *q;
	twl_t wl[MAX_WL];
	int n_wl;
	int64_t now;
	uint64_t seed;
	uint8_t fair_pair[MAX_WL * MAX_WL / 8]; /* bit (preemptor, victim): evicted
						   by fair sharing already */
	bool planned[MAX_WL];			/* waited as Preempting at the last step */
	int64_t pre_at[MAX_WL];			/* instant of a workload's last preemption */
	int pre_n[MAX_WL];			/* its preemptions at that instant */
	uint64_t econ_rng;			/* econ traces: their own stream */
	int64_t adm_at[MAX_WL];			/* its last admission, from the results */
	uint64_t exec_rng;			/* workloads' own limits: their own stream */
	queue_wl_t order[MAX_WL + 2];		/* the last step's pending order, and junk */
	size_t n_order;
} trace_t;

static void check(bool ok, const trace_t *t, const char *what)
{
	if (!ok)
		fail_msg("seed %llu at t=%lld: %s", (unsigned long long)t->seed, (long long)t->now,
			 what);
}

/* ---- invariants ---- */

/* Whether cohort co is the parent of another. */
static bool tree_has_kids(const queue_t *q, uint32_t co)
{
	for (uint32_t k = 0; k < queue_cohort_count(q); k++)
		if (queue_cohort_parent(q, k) == co)
			return true;
	return false;
}

static void check_quota(const trace_t *t)
{
	queue_t *q = t->q;
	size_t nf = queue_flavor_count(q), nr = queue_resource_count(q), nc = queue_cq_count(q);
	int64_t sum[6][4][4];
	queue_wl_t id = QUEUE_NONE;

	memset(sum, 0, sizeof(sum));
	check(nf <= 4 && nr <= 4 && nc <= 6, t, "ids in range");
	while ((id = queue_workload_next(q, id)) != QUEUE_NONE) {
		queue_workload_view_t v;

		assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
		if (v.state != QUEUE_WL_ADMITTED && v.state != QUEUE_WL_EVICTING)
			continue;
		check(v.gang_total == 0 || v.pods_present == v.gang_total, t,
		      "gang admitted with all pods present");
		for (size_t p = 0; p < v.n_podsets; p++) {
			for (uint32_t r = 0; r < nr; r++) {
				int64_t per;
				int32_t cnt;
				uint32_t f;

				assert_int_equal(queue_workload_request(q, id, p, r, &per, &cnt),
						 GPUQ_OK);
				if (!per)
					continue;
				check(queue_workload_flavor(q, id, p, r, &f) == GPUQ_OK, t,
				      "every requested resource of every pod set assigned");
				sum[v.cq][f][r] += per * cnt;
			}
		}
	}
	for (uint32_t c = 0; c < nc; c++) {
		bool cohort = queue_cq_cohort(q, c) != QUEUE_NONE;

		for (uint32_t f = 0; f < nf; f++) {
			for (uint32_t r = 0; r < nr; r++) {
				queue_quota_view_t v;

				if (queue_cq_quota(q, c, f, r, &v)) {
					check(sum[c][f][r] == 0, t, "usage outside the CQ's quota");
					continue;
				}
				check(v.usage == sum[c][f][r], t, "usage = sum of admitted");
				if (!cohort)
					check(v.usage <= v.nominal, t, "lone CQ within nominal");
				else if (v.borrowing_limit >= 0)
					check(v.usage <= v.nominal + v.borrowing_limit, t,
					      "within nominal + borrowingLimit");
			}
		}
	}
	for (uint32_t co = 0; co < queue_cohort_count(q); co++) {
		for (uint32_t f = 0; f < nf; f++) {
			for (uint32_t r = 0; r < nr; r++) {
				queue_cohort_view_t v;

				assert_int_equal(queue_cohort_quota(q, co, f, r, &v), GPUQ_OK);
				if (queue_cohort_parent(q, co) == QUEUE_NONE)
					check(v.borrowed <= v.lendable, t,
					      "a root lends at most its subtree quota");
				else if (v.borrowing_limit >= 0)
					check(v.borrowed <= v.lendable + v.borrowing_limit, t,
					      "a cohort within its subtree quota + borrowingLimit");
				if (v.own == 0 && queue_cohort_parent(q, co) == QUEUE_NONE &&
				    !tree_has_kids(q, co))
					check(v.usage <= v.nominal, t,
					      "cohort within its capacity");
			}
		}
	}
}

static void check_accounting(const trace_t *t)
{
	queue_t *q = t->q;
	size_t live = 0, listed = 0;
	static queue_wl_t ids[MAX_WL];
	static int seen[MAX_WL];

	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < t->n_wl; i++) {
		queue_wl_t id;
		int rc = queue_workload_find(q, t->wl[i].uid, &id);
		queue_workload_view_t v;

		if (t->wl[i].ex == X_DELETED) {
			check(rc == GPUQ_ENOTFOUND, t, "deleted workload gone");
			continue;
		}
		check(rc == GPUQ_OK, t, "workload not lost");
		assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
		live++;
		if (t->wl[i].ex == X_FINISHED)
			check(v.state == QUEUE_WL_FINISHED, t, "finished stays finished");
		else
			check(v.state != QUEUE_WL_FINISHED, t, "live is not finished");
	}
	for (uint32_t c = 0; c < queue_cq_count(q); c++) {
		for (int s = QUEUE_WL_PENDING; s <= QUEUE_WL_FINISHED; s++) {
			size_t n;

			if (s == QUEUE_WL_EVICTING)
				continue; /* listed with ADMITTED */
			n = queue_cq_workloads(q, c, (queue_wl_state_t)s, ids, MAX_WL);
			check(n <= MAX_WL, t, "list fits");
			for (size_t k = 0; k < n; k++) {
				queue_workload_view_t v;

				assert_int_equal(queue_workload_view(q, ids[k], &v), GPUQ_OK);
				check(v.cq == c, t, "listed in its own CQ");
				check(strlen(v.uid) > 1, t, "uid");
				seen[strtol(v.uid + 1, NULL, 10)]++; /* test uids are "w<n>" */
				listed++;
			}
		}
	}
	check(listed == live, t, "each workload listed exactly once");
	for (int i = 0; i < t->n_wl; i++)
		check(seen[i] == (t->wl[i].ex != X_DELETED), t, "no duplicate");
}

/* Pending and in the StrictFIFO order: a NoFit head blocks too. */
static bool eligible_pending(queue_wait_t w)
{
	return w == QUEUE_WAIT_NONE || w == QUEUE_WAIT_QUOTA || w == QUEUE_WAIT_NO_FIT ||
	       w == QUEUE_WAIT_BEHIND_HEAD || w == QUEUE_WAIT_PREEMPTING;
}

/* With admission fair sharing the order across LocalQueues is by tenant key
 * (which the cycle's own admissions move), and a planned preemptor goes
 * first: only the order within a LocalQueue of others is checked. */
static void check_strict_order(const trace_t *t, const queue_result_t *r)
{
	queue_t *q = t->q;

	for (size_t i = 0; i < r->n_admissions; i++) {
		queue_workload_view_t a;
		queue_wl_t id = QUEUE_NONE;
		bool afs;

		assert_int_equal(queue_workload_view(q, r->admissions[i].wl, &a), GPUQ_OK);
		if (t->pol.strategy[a.cq] != QUEUE_STRICT_FIFO)
			continue;
		afs = t->pol.afs[a.cq];
		if (afs && t->planned[strtol(a.uid + 1, NULL, 10)])
			continue;
		while ((id = queue_workload_next(q, id)) != QUEUE_NONE) {
			queue_workload_view_t p;

			assert_int_equal(queue_workload_view(q, id, &p), GPUQ_OK);
			bool victim = false;

			if (p.cq != a.cq || p.state != QUEUE_WL_PENDING ||
			    !eligible_pending(p.wait) || (afs && p.lq != a.lq))
				continue;
			/* over a budget with Lower: behind those within budget */
			if (queue_lq_standing(q, p.lq) == QUEUE_LQ_LOWERED &&
			    queue_lq_standing(q, a.lq) != QUEUE_LQ_LOWERED)
				continue;
			/* a victim of this cycle was running, not waiting, when a was admitted */
			for (size_t k = 0; k < r->n_evictions; k++)
				victim |= r->evictions[k].victim == id;
			if (victim)
				continue;
			check(p.priority <= a.priority, t,
			      "StrictFIFO: admitted ahead of a higher priority");
			if (p.lq == a.lq && p.priority == a.priority &&
			    !(p.created_ms > a.created_ms ||
			      (p.created_ms == a.created_ms && strcmp(p.uid, a.uid) > 0)))
				print_message("# admitted %s (prio %d created %lld) ahead of %s "
					      "(prio %d created %lld wait %s)\n",
					      a.uid, a.priority, (long long)a.created_ms, p.uid,
					      p.priority, (long long)p.created_ms,
					      queue_wait_name(p.wait));
			if (p.lq == a.lq && p.priority == a.priority)
				check(
				    p.created_ms > a.created_ms ||
					(p.created_ms == a.created_ms && strcmp(p.uid, a.uid) > 0),
				    t, "StrictFIFO: admitted ahead of an older one in its queue");
		}
	}
}

/* A workload evicted for any reason (preempted, a Ready timeout, a drain)
 * starts afresh: the victims it took by fair sharing before may be its
 * victims again (it lost the quota it had freed; seeds 13756 and 23536:
 * a preemptor timed out, or was preempted in its own CQ, and met its old
 * victim again later). */
static void fair_forget(trace_t *t, const char *uid)
{
	long p = strtol(uid + 1, NULL, 10); /* test uids are "w<n>" */

	for (long v = 0; p >= 0 && p < MAX_WL && v < MAX_WL; v++) {
		size_t bit = (size_t)p * MAX_WL + (size_t)v;

		t->fair_pair[bit / 8] &= (uint8_t) ~(1u << (bit % 8));
	}
}

/* No fair-sharing ping-pong: a preemptor evicts the same victim by fair
 * sharing at most once (it then goes first to the quota it freed, so the
 * victim cannot take it back and be preempted by it again) until the
 * preemptor itself is evicted. */
static void check_fair_once(trace_t *t, const queue_result_t *r)
{

	for (size_t i = 0; i < r->n_evictions; i++) {
		const queue_eviction_t *e = &r->evictions[i];
		long v, p;
		size_t bit;

		fair_forget(t, e->victim_uid); /* evicted: it starts afresh */
		if (e->reason != QUEUE_EVICT_FAIR_SHARING || !e->preemptor_uid)
			continue;
		v = strtol(e->victim_uid + 1, NULL, 10); /* test uids are "w<n>" */
		p = strtol(e->preemptor_uid + 1, NULL, 10);
		check(v >= 0 && v < MAX_WL && p >= 0 && p < MAX_WL, t, "uids");
		bit = (size_t)p * MAX_WL + (size_t)v;
		check(!(t->fair_pair[bit / 8] & (1u << (bit % 8))), t,
		      "fair sharing: same preemptor evicts the same victim twice");
		t->fair_pair[bit / 8] |= (uint8_t)(1u << (bit % 8));
	}
}

/* No livelock at one instant: a workload is preempted at most
 * PREEMPT_PER_INSTANT times at the same `now` (kueue-large livelocked so:
 * heads without victims waited for quota reclaimed for others, borrowed it,
 * and were reclaimed in turn, cycle after cycle at one instant). */
#define PREEMPT_PER_INSTANT 3

static void check_preempt_bound(trace_t *t, const queue_result_t *r)
{
	for (size_t i = 0; i < r->n_evictions; i++) {
		const queue_eviction_t *e = &r->evictions[i];
		long v;

		if (!e->preemptor_uid)
			continue;
		v = strtol(e->victim_uid + 1, NULL, 10); /* test uids are "w<n>" */
		check(v >= 0 && v < MAX_WL, t, "uids");
		if (t->pre_at[v] != t->now) {
			t->pre_at[v] = t->now;
			t->pre_n[v] = 0;
		}
		check(++t->pre_n[v] <= PREEMPT_PER_INSTANT, t,
		      "a workload preempted more than PREEMPT_PER_INSTANT times at one instant");
	}
}

/* The minimum runtime the trace's policy gives a workload of CQ c and
 * priority pr (the longer of the two). */
static int64_t min_rt_of(const policy_t *p, int c, int pr)
{
	int64_t m = p->min_rt[c];

	if (pr >= 0 && pr < 4 && p->prio_rt[pr] > m)
		m = p->prio_rt[pr];
	return m;
}

static bool preemption_reason(queue_evict_reason_t r)
{
	return r <= QUEUE_EVICT_RECLAIM_WHILE_BORROWING || r == QUEUE_EVICT_IDLE_RECLAIM;
}

/* Idle spells before a tick (from the views), to judge its reclaims. */
static int64_t idle_from[MAX_WL];

static void note_idle(trace_t *t)
{
	for (int i = 0; i < t->n_wl; i++) {
		queue_wl_t id;
		queue_workload_view_t v;

		idle_from[i] = -1;
		if (t->wl[i].ex != X_DELETED && !queue_workload_find(t->q, t->wl[i].uid, &id) &&
		    !queue_workload_view(t->q, id, &v))
			idle_from[i] = v.idle_since_ms;
	}
}

/* Budgets, minimum runtimes, idle reclaim: what a call did obeys them. */
static void check_econ(trace_t *t, const queue_result_t *r)
{
	queue_t *q = t->q;

	for (size_t i = 0; i < r->n_admissions; i++) {
		queue_workload_view_t a;
		queue_lq_standing_t st;

		assert_int_equal(queue_workload_view(q, r->admissions[i].wl, &a), GPUQ_OK);
		st = queue_lq_standing(q, a.lq);
		check(st != QUEUE_LQ_HELD, t, "budgets: admitted from a held LocalQueue");
		check(st != QUEUE_LQ_LOWERED || !r->admissions[i].borrows, t,
		      "budgets: a lowered LocalQueue borrowed");
		t->adm_at[strtol(a.uid + 1, NULL, 10)] = t->now; /* test uids are "w<n>" */
	}
	for (size_t i = 0; i < r->n_evictions; i++) {
		const queue_eviction_t *e = &r->evictions[i];
		long v = strtol(e->victim_uid + 1, NULL, 10);
		queue_workload_view_t x;

		if (!preemption_reason(e->reason))
			continue;
		assert_int_equal(queue_workload_view(q, e->victim, &x), GPUQ_OK);
		check(t->now - t->adm_at[v] >= min_rt_of(&t->pol, t->wl[v].cq, x.priority), t,
		      "minimum runtime: preempted before it");
		if (e->reason != QUEUE_EVICT_IDLE_RECLAIM)
			continue;
		check(t->pol.idle[t->wl[v].cq] == QUEUE_IDLE_PREEMPT, t,
		      "idle reclaim without idleReclaim Preempt");
		check(idle_from[v] >= 0 && t->now - idle_from[v] >= t->pol.idle_after[t->wl[v].cq],
		      t, "idle reclaim before idleReclaim.for");
	}
}

/* Econ traces: a utilization reading of a random admitted workload now and
 * then (from the trace's own stream). */
static void econ_step(trace_t *t)
{
	uint64_t *e = &t->econ_rng;
	int cand[MAX_WL], n = 0;

	if (!t->pol.econ || rnd(e, 0, 2))
		return;
	for (int i = 0; i < t->n_wl; i++) {
		queue_wl_t id;
		queue_workload_view_t v;

		if (t->wl[i].ex != X_DELETED && !queue_workload_find(t->q, t->wl[i].uid, &id) &&
		    !queue_workload_view(t->q, id, &v) && v.state == QUEUE_WL_ADMITTED)
			cand[n++] = i;
	}
	if (!n)
		return;
	{
		int i = cand[rnd(e, 0, n - 1)];
		int64_t pct = rnd(e, 0, 2) ? rnd(e, 0, 20) : rnd(e, 50, 100);

		assert_int_equal(queue_workload_utilization(t->q, t->wl[i].uid, (double)pct,
							    t->now - rnd(e, 0, 5)),
				 GPUQ_OK);
	}
}

/* ---- restore ---- */

typedef struct {
	queue_rec_type_t type;
	uint8_t key[QUEUE_KEY_MAX];
	size_t klen;
	uint8_t val[8192];
	size_t vlen;
} rec_t;

static rec_t recs[4 * MAX_WL];

/* The store as the controller keeps it: each record as it was encoded
 * when it was last marked changed (queue_dirty_next), never a full
 * snapshot. restore_copy checks it equals the full encoding, so no change
 * goes unmarked: what a crash would leave is what the core holds. */
static rec_t mirror[4 * MAX_WL];
static size_t n_mirror;

static rec_t *mirror_find(queue_rec_type_t type, const uint8_t *key, size_t klen)
{
	for (size_t i = 0; i < n_mirror; i++)
		if (mirror[i].type == type && mirror[i].klen == klen &&
		    !memcmp(mirror[i].key, key, klen))
			return &mirror[i];
	return NULL;
}

/* Write the records marked changed since the last sync into the mirror
 * (a record gone leaves it), as the controller's commit would. */
static void mirror_sync(const trace_t *t)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen;
	int rc;

	while ((rc = queue_dirty_next(t->q, &it, &type, &key, &klen)) == GPUQ_OK) {
		rec_t *m = mirror_find(type, key, klen);

		if (!m) {
			assert_true(n_mirror < sizeof(mirror) / sizeof(mirror[0]));
			m = &mirror[n_mirror++];
			m->type = type;
			memcpy(m->key, key, klen);
			m->klen = klen;
		}
		rc = queue_record_encode(t->q, type, key, klen, m->val, sizeof(m->val), &m->vlen);
		if (rc == GPUQ_ENOTFOUND) {
			*m = mirror[--n_mirror];
			continue;
		}
		assert_int_equal(rc, GPUQ_OK);
	}
	assert_int_equal(rc, GPUQ_ENOTFOUND); /* no mark lost to memory here */
}

/* The mirror holds exactly recs[0..n), byte for byte. */
static void mirror_check(const trace_t *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const rec_t *m = mirror_find(recs[i].type, recs[i].key, recs[i].klen);

		if (!m || m->vlen != recs[i].vlen || memcmp(m->val, recs[i].val, m->vlen))
			fail_msg("seed %llu at t=%lld: record %d \"%.*s\" %s since it was last "
				 "marked changed",
				 (unsigned long long)t->seed, (long long)t->now, (int)recs[i].type,
				 (int)recs[i].klen, (const char *)recs[i].key,
				 m ? "changed" : "never written, or deleted,");
	}
	if (n_mirror != n)
		fail_msg("seed %llu at t=%lld: %zu records written, %zu live",
			 (unsigned long long)t->seed, (long long)t->now, n_mirror, n);
}

static queue_t *restore_copy(const trace_t *t)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, n = 0;
	queue_t *p;
	gpuq_diag_t diag = {{0}};

	mirror_sync(t);
	assert_int_equal(queue_dirty_all(t->q), GPUQ_OK);
	while (queue_dirty_next(t->q, &it, &type, &key, &klen) == GPUQ_OK) {
		int rc;

		assert_true(n < sizeof(recs) / sizeof(recs[0]));
		recs[n].type = type;
		memcpy(recs[n].key, key, klen);
		recs[n].klen = klen;
		rc = queue_record_encode(t->q, type, key, klen, recs[n].val, sizeof(recs[n].val),
					 &recs[n].vlen);
		if (rc == GPUQ_ENOTFOUND)
			continue;
		assert_int_equal(rc, GPUQ_OK);
		n++;
	}
	queue_dirty_clear(t->q);
	mirror_check(t, n);
	p = policy_build(&t->pol);
	/* apply in reverse to show order does not matter */
	for (size_t i = n; i-- > 0;)
		if (queue_record_apply(p, recs[i].type, recs[i].key, recs[i].klen, recs[i].val,
				       recs[i].vlen, &diag))
			fail_msg("seed %llu: apply: %s", (unsigned long long)t->seed, diag.msg);
	if (queue_restore_done(p, &diag))
		fail_msg("seed %llu: restore: %s", (unsigned long long)t->seed, diag.msg);
	/* utilization is the driver's to feed again (never persisted) */
	for (int i = 0; t->pol.econ && i < t->n_wl; i++) {
		queue_wl_t id;
		queue_workload_view_t v;

		if (t->wl[i].ex != X_DELETED && !queue_workload_find(t->q, t->wl[i].uid, &id) &&
		    !queue_workload_view(t->q, id, &v) && v.idle_since_ms >= 0)
			assert_int_equal(
			    queue_workload_utilization(p, t->wl[i].uid, 0, v.idle_since_ms),
			    GPUQ_OK);
	}
	return p;
}

static void check_same(const trace_t *t, queue_t *p)
{
	queue_t *q = t->q;
	char e1[512], e2[512];

	check(queue_cycle_count(q) == queue_cycle_count(p), t, "restored cycle count");
	for (int i = 0; i < t->n_wl; i++) {
		queue_wl_t a, b;
		queue_workload_view_t x, y;

		if (t->wl[i].ex == X_DELETED)
			continue;
		assert_int_equal(queue_workload_find(q, t->wl[i].uid, &a), GPUQ_OK);
		check(queue_workload_find(p, t->wl[i].uid, &b) == GPUQ_OK, t, "restored exists");
		queue_workload_view(q, a, &x);
		queue_workload_view(p, b, &y);
		check(x.state == y.state && x.priority == y.priority && x.cq == y.cq &&
			  x.lq == y.lq && x.admitted_ms == y.admitted_ms &&
			  x.eligible_ms == y.eligible_ms && x.requeues == y.requeues &&
			  x.preemptions == y.preemptions && x.pods_present == y.pods_present &&
			  x.ready == y.ready && x.created_ms == y.created_ms,
		      t, "restored workload identical");
		/* wait reasons that depend on the last cycle's block flag are derived */
		if (x.wait != QUEUE_WAIT_BEHIND_HEAD && y.wait != QUEUE_WAIT_BEHIND_HEAD)
			check(x.wait == y.wait, t, "restored wait reason");
		queue_workload_explain(q, t->wl[i].uid, e1, sizeof(e1));
		queue_workload_explain(p, t->wl[i].uid, e2, sizeof(e2));
		if (x.wait != QUEUE_WAIT_BEHIND_HEAD && y.wait != QUEUE_WAIT_BEHIND_HEAD)
			check(!strcmp(e1, e2), t, "restored explanation");
	}
	for (uint32_t c = 0; c < queue_cq_count(q); c++) {
		queue_stats_t a, b;

		queue_cq_stats(q, c, &a);
		queue_cq_stats(p, c, &b);
		check(a.pending == b.pending && a.admitted == b.admitted &&
			  a.admissions == b.admissions && a.preemptions == b.preemptions &&
			  a.evictions == b.evictions && a.finishes == b.finishes &&
			  a.weighted_share == b.weighted_share,
		      t, "restored CQ stats");
	}
	for (uint32_t l = 0; l < queue_lq_count(q); l++) {
		queue_stats_t a, b;

		queue_lq_stats(q, l, &a);
		queue_lq_stats(p, l, &b);
		check(a.pending == b.pending && a.admitted == b.admitted &&
			  a.decayed_usage == b.decayed_usage && a.used_ms == b.used_ms &&
			  a.admissions == b.admissions,
		      t, "restored tenant ledger");
	}
}

static void check_same_future(const trace_t *t, queue_t *p)
{
	queue_result_t a, b;

	if (getenv("QUEUE_PROPS_SEED")) {
		char e[512];

		for (int i = 0; i < t->n_wl; i++) {
			if (t->wl[i].ex == X_DELETED)
				continue;
			queue_workload_explain(t->q, t->wl[i].uid, e, sizeof(e));
			print_message("# %s [cq%d] A: %s\n", t->wl[i].uid, t->wl[i].cq, e);
			queue_workload_explain(p, t->wl[i].uid, e, sizeof(e));
			print_message("# %s [cq%d] B: %s\n", t->wl[i].uid, t->wl[i].cq, e);
		}
	}
	assert_int_equal(queue_cycle_run(t->q, t->now, &a), GPUQ_OK);
	assert_int_equal(queue_cycle_run(p, t->now, &b), GPUQ_OK);
	if (a.n_admissions != b.n_admissions || a.n_evictions != b.n_evictions) {
		for (size_t i = 0; i < a.n_admissions; i++)
			print_message("# original admits %s\n", a.admissions[i].uid);
		for (size_t i = 0; i < b.n_admissions; i++)
			print_message("# restored admits %s\n", b.admissions[i].uid);
		for (size_t i = 0; i < a.n_evictions; i++)
			print_message("# original evicts %s\n", a.evictions[i].victim_uid);
		for (size_t i = 0; i < b.n_evictions; i++)
			print_message("# restored evicts %s\n", b.evictions[i].victim_uid);
	}
	check(a.n_admissions == b.n_admissions && a.n_evictions == b.n_evictions, t,
	      "restored queue decides the same");
	for (size_t i = 0; i < a.n_admissions; i++) {
		check(!strcmp(a.admissions[i].uid, b.admissions[i].uid), t, "same admissions");
		check(a.admissions[i].n_assign == b.admissions[i].n_assign, t, "same assignment");
		for (size_t k = 0; k < a.admissions[i].n_assign; k++)
			check(a.admissions[i].assign[k].flavor ==
				      b.admissions[i].assign[k].flavor &&
				  a.admissions[i].assign[k].amount ==
				      b.admissions[i].assign[k].amount,
			      t, "same flavors");
	}
	for (size_t i = 0; i < a.n_evictions; i++)
		check(!strcmp(a.evictions[i].victim_uid, b.evictions[i].victim_uid), t,
		      "same victims");
}

/* ---- the trace ---- */

/* What the traces exercised (a property test that never preempts proves
 * little): totals over all traces, checked by the last block. */
static struct {
	uint64_t cycles, admissions, evictions[8], changes, restores, strict_admissions,
	    afs_admissions, idles, budget_changes, held_waits, lowered_admissions, econ_traces,
	    updates, moves, reasons_memo, reasons_made, hinted_orders;
} seen_total;

/* The pending order is the same from a hint: the last step's order with
 * an id past the end and a duplicate after it (check_reasons' order). */
static void check_order_hint(trace_t *t, const queue_wl_t *want, size_t n)
{
	queue_wl_t got[MAX_WL];
	size_t m;

	if (t->n_order) {
		t->order[t->n_order] = UINT32_MAX - 1;
		t->order[t->n_order + 1] = t->order[0];
	}
	m = queue_workloads_by_cq_hint(t->q, QUEUE_WL_PENDING, t->order,
				       t->n_order ? t->n_order + 2 : 0, got, MAX_WL);
	check(m == n && !memcmp(got, want, n * sizeof(*got)), t,
	      "the pending order from the last step's as a hint differs");
	memcpy(t->order, want, n * sizeof(*want));
	t->n_order = n;
	seen_total.hinted_orders += n > 1;
}

/* The memo's reasons (queue_workload_reason_memo) are queue_workload_reason's,
 * every live workload in the web view's order (by ClusterQueue, each in its
 * order): one made afresh, and one the memo kept. */
static void check_reasons(trace_t *t)
{
	queue_wl_t ids[MAX_WL];
	size_t n = queue_workloads_by_cq(t->q, QUEUE_WL_PENDING, ids, MAX_WL);
	static queue_reason_memo_t m; /* 4 KiB: off the stack; zeroed per step */

	memset(&m, 0, sizeof(m));
	check(n <= MAX_WL, t, "more pending workloads than the trace made");
	check_order_hint(t, ids, n);
	for (size_t i = 0; i < n; i++) {
		char want[QUEUE_REASON_TEXT];
		const char *got;
		uint32_t slot;
		bool fresh;
		int rw = queue_workload_reason(t->q, ids[i], want, sizeof(want));
		int rg = queue_workload_reason_memo(t->q, ids[i], &m, &got, &slot, &fresh);

		if (rw != rg || strcmp(want, got))
			fail_msg(
			    "seed %llu at t=%lld: workload %u's reason from the memo (slot %u, "
			    "%s) is \"%s\", not \"%s\"",
			    (unsigned long long)t->seed, (long long)t->now, (unsigned)ids[i],
			    (unsigned)slot, fresh ? "made" : "kept", got, want);
		seen_total.reasons_memo += !fresh;
		seen_total.reasons_made += fresh;
	}
}

/* A random spec for workload x in namespace cq<c> (its pod sets in ps and
 * req, which the spec points to), on one of that namespace's LocalQueues or
 * (move) its "mv". */
static void random_spec(trace_t *t, uint64_t *s, const twl_t *x, int c, bool move,
			queue_workload_spec_t *w, queue_podset_spec_t ps[2],
			queue_request_t req[2][2], char ns[16], char lq[16])
{
	static const queue_label_t zone_b[] = {{"zone", "b"}};
	static const queue_label_t zone_c[] = {{"zone", "c"}};
	static const queue_toleration_t tol[] = {
	    {"dedicated", QUEUE_TOLERATE_EXISTS, NULL, QUEUE_EFFECT_ANY}};
	int pods = 0;

	memset(ps, 0, 2 * sizeof(*ps));
	memset(w, 0, sizeof(*w));
	snprintf(ns, 16, "cq%d", c);
	if (move)
		snprintf(lq, 16, "mv");
	else
		snprintf(lq, 16, "lq%d", (int)rnd(s, 0, t->pol.n_lq[c] - 1));
	w->n_podsets = (size_t)rnd(s, 1, 2);
	for (size_t p = 0; p < w->n_podsets; p++) {
		int nreq = 0;

		req[p][nreq++] = (queue_request_t){"gpu", rnd(s, 0, 3)};
		if (rnd(s, 0, 1))
			req[p][nreq++] = (queue_request_t){"cpu", rnd(s, 1, 4) * 500};
		ps[p].name = p ? "worker" : "main";
		ps[p].count = (int32_t)rnd(s, 1, 3);
		ps[p].requests = req[p];
		ps[p].n_requests = (size_t)nreq;
		if (rnd(s, 0, 4) == 0) {
			ps[p].node_selector = rnd(s, 0, 1) ? zone_b : zone_c;
			ps[p].n_node_selector = 1;
		}
		if (rnd(s, 0, 2) == 0) {
			ps[p].tolerations = tol;
			ps[p].n_tolerations = 1;
		}
		pods += ps[p].count;
	}
	w->namespace_ = ns;
	w->name = x->uid;
	w->uid = x->uid;
	w->local_queue = lq;
	w->priority = (int32_t)rnd(s, 0, 3);
	w->created_ms = t->now * 10 + rnd(s, 0, 5);
	w->podsets = ps;
	if (rnd(s, 0, 4) == 0) {
		w->gang_total = pods;
		w->pods_present = (int32_t)rnd(s, 0, pods);
	}
	/* one in six with a label of its own: 1 s, or 2 s (an update changing it) */
	w->max_exec_s = rnd(&t->exec_rng, 0, 5) ? 0 : (int32_t)rnd(&t->exec_rng, 1, 2);
}

static void add_random_wl(trace_t *t, uint64_t *s)
{
	queue_request_t req[2][2];
	queue_podset_spec_t ps[2];
	queue_workload_spec_t w;
	int c = (int)rnd(s, 0, t->pol.n_cqs - 1);
	char ns[16], lq[16];
	twl_t *x = &t->wl[t->n_wl];

	snprintf(x->uid, sizeof(x->uid), "w%d", t->n_wl);
	random_spec(t, s, x, c, false, &w, ps, req, ns, lq);
	assert_int_equal(queue_workload_add(t->q, &w, t->now, NULL, NULL), GPUQ_OK);
	x->ex = X_LIVE;
	x->gang = w.gang_total;
	x->label = w.max_exec_s;
	x->cq = x->ns = c;
	t->n_wl++;
}

/* A pending workload's object edited (queue_workload_update): what it asks
 * for, its priority, its LocalQueue (moved to "mv", the next ClusterQueue's,
 * one time in four); a changed creation time now and then. */
static void update_random_wl(trace_t *t, uint64_t *s, int i)
{
	queue_request_t req[2][2];
	queue_podset_spec_t ps[2];
	queue_workload_spec_t w;
	twl_t *x = &t->wl[i];
	char ns[16], lq[16];
	bool move = rnd(s, 0, 3) == 0, changed = false, was_deact;
	queue_wl_t id;
	queue_workload_view_t v;

	random_spec(t, s, x, x->ns, move, &w, ps, req, ns, lq);
	assert_int_equal(queue_workload_find(t->q, x->uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(t->q, id, &v), GPUQ_OK);
	was_deact = v.wait == QUEUE_WAIT_DEACTIVATED;
	assert_int_equal(queue_workload_update(t->q, &w, t->now, &changed, NULL), GPUQ_OK);
	assert_int_equal(queue_workload_view(t->q, id, &v), GPUQ_OK);
	if (was_deact)
		check((v.wait == QUEUE_WAIT_DEACTIVATED) == (w.max_exec_s == x->label), t,
		      "a deactivated workload comes back when its limit changes, and only then");
	x->deact = v.wait == QUEUE_WAIT_DEACTIVATED;
	x->label = w.max_exec_s;
	check(v.state == QUEUE_WL_PENDING && v.priority == w.priority &&
		  v.n_podsets == w.n_podsets && v.gang_total == w.gang_total,
	      t, "an update applies whole");
	x->gang = w.gang_total;
	x->cq = move ? (x->ns + 1) % t->pol.n_cqs : x->ns;
	check((int)v.cq == x->cq, t, "an update moves a workload to its LocalQueue's CQ");
	seen_total.updates += changed;
	seen_total.moves += changed && move && t->pol.n_cqs > 1;
}

/* A random live workload in the given state, or -1. */
static int pick(trace_t *t, uint64_t *s, int state)
{
	int cand[MAX_WL], n = 0;

	for (int i = 0; i < t->n_wl; i++) {
		queue_wl_t id;
		queue_workload_view_t v;

		if (t->wl[i].ex == X_DELETED || queue_workload_find(t->q, t->wl[i].uid, &id))
			continue;
		queue_workload_view(t->q, id, &v);
		if (state < 0 || (int)v.state == state)
			cand[n++] = i;
	}
	return n ? cand[rnd(s, 0, n - 1)] : -1;
}

/* Which workloads wait as preemptors now, for the next cycle's order check. */
static void note_planned(trace_t *t)
{
	for (int i = 0; i < t->n_wl; i++) {
		queue_wl_t id;
		queue_workload_view_t v;

		t->planned[i] = t->wl[i].ex != X_DELETED &&
				queue_workload_find(t->q, t->wl[i].uid, &id) == GPUQ_OK &&
				queue_workload_view(t->q, id, &v) == GPUQ_OK &&
				v.state == QUEUE_WL_PENDING && v.wait == QUEUE_WAIT_PREEMPTING;
	}
}

/* Wall-clock limits: after a tick no admitted workload is at or past its
 * deadline (after_tick); a workload once deactivated stays pending and
 * deactivated, in no queue, until an update (update_random_wl clears the
 * mark); its deadline is its admission plus its limit less the time it ran
 * before. */
static void check_exec(trace_t *t, bool after_tick)
{
	for (queue_wl_t id = queue_workload_next(t->q, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(t->q, id)) {
		queue_workload_view_t v;
		twl_t *x;
		int i;

		assert_int_equal(queue_workload_view(t->q, id, &v), GPUQ_OK);
		i = (int)strtol(v.uid + 1, NULL, 10); /* "w<i>" */
		x = &t->wl[i];
		if (v.state == QUEUE_WL_ADMITTED && v.max_exec_ms) {
			check(v.exec_deadline_ms == v.admitted_ms + v.max_exec_ms - v.exec_ms, t,
			      "a deadline is admission + limit - time run before");
			check(!after_tick || v.exec_deadline_ms > t->now, t,
			      "no admitted workload past its wall-clock limit after a tick");
		}
		check(!x->deact ||
			  (v.state == QUEUE_WL_PENDING && v.wait == QUEUE_WAIT_DEACTIVATED),
		      t, "a deactivated workload stays deactivated until its limit changes");
		if (v.state == QUEUE_WL_PENDING && v.wait == QUEUE_WAIT_DEACTIVATED)
			x->deact = true;
	}
}

static void after_step(trace_t *t, const queue_result_t *r)
{
	if (r) {
		seen_total.cycles++;
		seen_total.admissions += r->n_admissions;
		seen_total.changes += r->n_changes;
		for (size_t i = 0; i < r->n_admissions; i++) {
			queue_workload_view_t a;

			seen_total.strict_admissions +=
			    t->pol.strategy[r->admissions[i].cq] == QUEUE_STRICT_FIFO;
			seen_total.afs_admissions += t->pol.afs[r->admissions[i].cq];
			if (!queue_workload_view(t->q, r->admissions[i].wl, &a))
				seen_total.lowered_admissions +=
				    queue_lq_standing(t->q, a.lq) == QUEUE_LQ_LOWERED;
		}
		seen_total.budget_changes += r->n_budget_changes;
		for (queue_wl_t id = queue_workload_next(t->q, QUEUE_NONE); id != QUEUE_NONE;
		     id = queue_workload_next(t->q, id)) {
			queue_workload_view_t v;

			if (!queue_workload_view(t->q, id, &v) && v.wait == QUEUE_WAIT_BUDGET)
				seen_total.held_waits++;
		}
	}
	for (size_t i = 0; r && i < r->n_evictions; i++)
		seen_total.evictions[r->evictions[i].reason]++;
	check_quota(t);
	{ /* the core's own statement of the same invariants agrees */
		char why[512];
		if (queue_check(t->q, why, sizeof(why)) != GPUQ_OK)
			fail_msg("seed %llu at t=%lld: queue_check: %s",
				 (unsigned long long)t->seed, (long long)t->now, why);
	}
	check_accounting(t);
	check_exec(t, false);
	check_reasons(t);
	if (r) {
		check_strict_order(t, r);
		check_fair_once(t, r);
		check_preempt_bound(t, r);
		check_econ(t, r);
	}
	note_planned(t);
}

/* The seed of the trace running (0: none), for the sweep's teardown. */
static uint64_t g_seed_running;

static void run_trace(uint64_t seed)
{
	trace_t *t = calloc(1, sizeof(*t));
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 12345;
	int steps;

	assert_non_null(t);
	g_seed_running = seed;
	t->seed = seed;
	policy_random(&s, &t->pol);
	t->q = policy_build(&t->pol);
	n_mirror = 0; /* a new store starts from a full snapshot, as the engine's */
	assert_int_equal(queue_dirty_all(t->q), GPUQ_OK);
	mirror_sync(t);
	queue_dirty_clear(t->q);
	t->econ_rng = seed * 0xbf58476d1ce4e5b9ull + 777;
	t->exec_rng = seed * 0xd6e8feb86659fd93ull + 4242;
	if (t->pol.econ)
		t->now = ECON_START;
	steps = (int)rnd(&s, 40, 150);
	for (int step = 0; step < steps; step++) {
		int a = (int)rnd(&s, 0, 99), i;
		queue_result_t r;

		t->now += rnd(&s, 0, 15);
		econ_step(t);
		if (a < 31 && t->n_wl < MAX_WL) {
			add_random_wl(t, &s);
		} else if (a < 35 && (i = pick(t, &s, QUEUE_WL_PENDING)) >= 0) {
			update_random_wl(t, &s, i);
			after_step(t, NULL);
		} else if (a < 50) {
			assert_int_equal(queue_cycle_run(t->q, t->now, &r), GPUQ_OK);
			after_step(t, &r);
		} else if (a < 60 && (i = pick(t, &s, QUEUE_WL_ADMITTED)) >= 0) {
			assert_int_equal(queue_workload_finish(t->q, t->wl[i].uid, t->now),
					 GPUQ_OK);
			t->wl[i].ex = X_FINISHED;
		} else if (a < 65 && (i = pick(t, &s, -1)) >= 0) {
			assert_int_equal(queue_workload_delete(t->q, t->wl[i].uid, t->now),
					 GPUQ_OK);
			t->wl[i].ex = X_DELETED;
		} else if (a < 70 && (i = pick(t, &s, QUEUE_WL_EVICTING)) >= 0) {
			assert_int_equal(queue_workload_evicted(t->q, t->wl[i].uid, t->now),
					 GPUQ_OK);
		} else if (a < 75 && (i = pick(t, &s, QUEUE_WL_ADMITTED)) >= 0) {
			assert_int_equal(queue_workload_pods_ready(t->q, t->wl[i].uid, t->now),
					 GPUQ_OK);
		} else if (a < 80 && (i = pick(t, &s, QUEUE_WL_PENDING)) >= 0 && t->wl[i].gang) {
			assert_int_equal(queue_workload_pods_add(t->q, t->wl[i].uid,
								 (int32_t)rnd(&s, 0, 3), t->now),
					 GPUQ_OK);
		} else if (a < 88) {
			note_idle(t);
			assert_int_equal(queue_tick(t->q, t->now, &r), GPUQ_OK);
			for (size_t k = 0; k < r.n_evictions; k++)
				seen_total.evictions[r.evictions[k].reason]++;
			for (size_t k = 0; k < r.n_evictions; k++)
				fair_forget(t, r.evictions[k].victim_uid);
			check_econ(t, &r);
			check_exec(t, true);
			seen_total.idles += r.n_idles;
			seen_total.budget_changes += r.n_budget_changes;
			after_step(t, NULL);
		} else if (a < 89 && rnd(&s, 0, 2) == 0) {
			/* quota grows, the stop policy changes, or admission fair sharing
			 * turns on or off */
			int c = (int)rnd(&s, 0, t->pol.n_cqs - 1);

			if (rnd(&s, 0, 1))
				t->pol.nominal[c][rnd(&s, 0, t->pol.n_flv[c] - 1)][rnd(&s, 0, 1)] +=
				    rnd(&s, 1, 3);
			else if (rnd(&s, 0, 3))
				t->pol.stop[c] =
				    rnd(&s, 0, 3) ? QUEUE_STOP_NONE : (queue_stop_t)rnd(&s, 1, 2);
			else
				t->pol.afs[c] = !t->pol.afs[c];
			cq_put(t->q, &t->pol, c, true);
		} else if (a < 90) {
			queue_t *p = restore_copy(t);

			check_same(t, p);
			check_same_future(t, p);
			after_step(t, NULL);
			queue_destroy(p);
		} else {
			/* cycles at one instant until nothing changes (a
			 * simulator with cycleInterval 0 runs them so); seed 888
			 * at t=845 ping-ponged here while fair sharing honoured
			 * borrowWithinCohort (Kueue's does not) */
			int n = 0, max = 30;

			do {
				assert_int_equal(queue_cycle_run(t->q, t->now, &r), GPUQ_OK);
				after_step(t, &r);
			} while ((r.n_admissions || r.n_evictions) && ++n < max);
		}
	}
	seen_total.restores++;
	seen_total.econ_traces += t->pol.econ;
	{
		queue_t *p = restore_copy(t);

		check_same(t, p);
		check_same_future(t, p);
		queue_destroy(p);
	}
	queue_destroy(t->q);
	free(t);
	g_seed_running = 0;
}

static void traces(void **state)
{
	int block = (int)(intptr_t)*state;
	const char *one = getenv("QUEUE_PROPS_SEED"); /* debug: run one seed */

	if (one) {
		if (block == 0)
			run_trace((uint64_t)strtoull(one, NULL, 10));
		return;
	}

	for (int i = 0; i < TRACES_PER_TEST; i++)
		run_trace((uint64_t)(block * TRACES_PER_TEST + i + 1));
	if (block == N_TESTS - 1) {
		print_message("# economics: %llu traces, %llu budget changes, %llu waits held "
			      "by a budget, %llu lowered admissions, %llu idle reports, %llu idle "
			      "reclaims\n",
			      (unsigned long long)seen_total.econ_traces,
			      (unsigned long long)seen_total.budget_changes,
			      (unsigned long long)seen_total.held_waits,
			      (unsigned long long)seen_total.lowered_admissions,
			      (unsigned long long)seen_total.idles,
			      (unsigned long long)seen_total.evictions[6]);
		assert_true(seen_total.econ_traces > 0 && seen_total.budget_changes > 0 &&
			    seen_total.held_waits > 0 && seen_total.lowered_admissions > 0 &&
			    seen_total.idles > 0 && seen_total.evictions[6] > 0);
		print_message("# %llu traces, %llu cycles, %llu admissions (%llu StrictFIFO, "
			      "%llu with admission fair sharing), "
			      "%llu set aside, evictions: %llu in-CQ, %llu reclaim, %llu fair, "
			      "%llu reclaim-while-borrowing, %llu ready-timeout, %llu drained\n",
			      (unsigned long long)seen_total.restores,
			      (unsigned long long)seen_total.cycles,
			      (unsigned long long)seen_total.admissions,
			      (unsigned long long)seen_total.strict_admissions,
			      (unsigned long long)seen_total.afs_admissions,
			      (unsigned long long)seen_total.changes,
			      (unsigned long long)seen_total.evictions[0],
			      (unsigned long long)seen_total.evictions[1],
			      (unsigned long long)seen_total.evictions[2],
			      (unsigned long long)seen_total.evictions[3],
			      (unsigned long long)seen_total.evictions[4],
			      (unsigned long long)seen_total.evictions[5]);
		print_message("# %llu stopped at their wall-clock limit "
			      "(MaximumExecutionTimeExceeded)\n",
			      (unsigned long long)seen_total.evictions[7]);
		assert_true(seen_total.evictions[7] > 0);
		print_message("# %llu updates of pending workloads, %llu moved to another "
			      "ClusterQueue\n",
			      (unsigned long long)seen_total.updates,
			      (unsigned long long)seen_total.moves);
		assert_true(seen_total.updates > 0 && seen_total.moves > 0);
		print_message("# reasons: %llu made, %llu from the memo (each checked against "
			      "queue_workload_reason)\n",
			      (unsigned long long)seen_total.reasons_made,
			      (unsigned long long)seen_total.reasons_memo);
		assert_true(seen_total.reasons_made > 0 && seen_total.reasons_memo > 0 &&
			    seen_total.hinted_orders > 0);
		assert_true(seen_total.restores == N_TESTS * TRACES_PER_TEST);
		assert_true(seen_total.evictions[0] > 0 && seen_total.evictions[1] > 0 &&
			    seen_total.evictions[2] > 0 && seen_total.evictions[4] > 0 &&
			    seen_total.evictions[5] > 0);
		assert_true(seen_total.strict_admissions > 0 && seen_total.changes > 0 &&
			    seen_total.afs_admissions > 0);
	}
}

#define BLOCK(n)                                                                                   \
	{                                                                                          \
		"traces_" #n, traces, NULL, NULL, (void *)(intptr_t)(n)                            \
	}

/* The sweep (make sweep, unit/sweep.sh): QUEUE_PROPS_SEEDS=FIRST-LAST runs
 * those traces in one test; the first that fails ends it, named by the
 * teardown ("# sweep: seed N failed"), and the script goes on after it. */
static void sweep(void **state)
{
	const char *range = getenv("QUEUE_PROPS_SEEDS");
	unsigned long long first = 0, last = 0;

	(void)state;
	if (!range || sscanf(range, "%llu-%llu", &first, &last) != 2 || !first || last < first)
		fail_msg("QUEUE_PROPS_SEEDS \"%s\": want FIRST-LAST, 1 <= FIRST <= LAST",
			 range ? range : "");
	for (unsigned long long seed = first; seed <= last; seed++)
		run_trace(seed);
	print_message("# sweep: seeds %llu-%llu pass\n", first, last);
}

static int sweep_teardown(void **state)
{
	(void)state;
	if (g_seed_running)
		print_message("# sweep: seed %llu failed\n", (unsigned long long)g_seed_running);
	return 0;
}

int main(void)
{
	if (getenv("QUEUE_PROPS_SEEDS")) {
		const struct CMUnitTest one[] = {cmocka_unit_test_teardown(sweep, sweep_teardown)};

		return cmocka_run_group_tests_name("queue_props_sweep", one, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
	    BLOCK(0), BLOCK(1), BLOCK(2), BLOCK(3), BLOCK(4),
	    BLOCK(5), BLOCK(6), BLOCK(7), BLOCK(8), BLOCK(9),
	};

	return cmocka_run_group_tests_name("queue_props", tests, NULL, NULL);
}

/* predict/: a pass copies the live core through its records and runs it
 * forward in virtual time. Deterministic: `now` and the runtimes are the
 * test's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "predict/predict.h"
#include "unit/policy_fixtures.h"

#define MIN 60000LL

static const char POLICY[] =
    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\nspec:\n"
    "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [gpu]\n"
    "    flavors: [{name: f, resources: [{name: gpu, nominalQuota: 2}]}]\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: b}\nspec:\n"
    "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [gpu]\n"
    "    flavors: [{name: f, resources: [{name: gpu, nominalQuota: 2}]}]\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: na}\n"
    "spec: {clusterQueue: a}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: nb}\n"
    "spec: {clusterQueue: b}\n";

typedef struct {
	policy_t *p;
	queue_t *q;
	queue_config_t cfg;
} fx_t;

static void fx_init(fx_t *f, const char *extra)
{
	gpuq_diag_t d;
	char text[4096];

	snprintf(text, sizeof(text), "%s%s", POLICY, extra);
	if (load_str(text, NULL, &f->p, &d))
		fail_msg("%s", d.msg);
	queue_config_default(&f->cfg);
	f->cfg.release_on_evict = false; /* as the controller runs it */
	if (engine_core_build(f->p, &f->cfg, &f->q, &d))
		fail_msg("%s", d.msg);
}

static void fx_deinit(fx_t *f)
{
	queue_destroy(f->q);
	policy_unref(f->p);
}

static void wl(fx_t *f, const char *uid, const char *ns, int64_t at, int64_t gpus)
{
	queue_request_t r = {"gpu", gpus};
	queue_podset_spec_t ps = {.name = "main", .count = 1, .requests = &r, .n_requests = 1};
	queue_workload_spec_t s = {.namespace_ = ns,
				   .name = uid,
				   .uid = uid,
				   .local_queue = "lq",
				   .created_ms = at,
				   .podsets = &ps,
				   .n_podsets = 1};

	assert_int_equal(queue_workload_add(f->q, &s, at, NULL, NULL), GPUQ_OK);
}

/* Runtimes by the first letter of the uid: "x..." 30 min, "y..." 10 min,
 * others unknown. */
static int64_t runtimes(void *ctx, const queue_workload_view_t *v)
{
	(void)ctx;
	return v->uid[0] == 'x' ? 30 * MIN : v->uid[0] == 'y' ? 10 * MIN : -1;
}

static int64_t start_of(const predict_result_t *r, const char *uid)
{
	const predict_entry_t *e = predict_find(r, uid);

	assert_non_null(e);
	return e->start_ms;
}

static void forward_in_virtual_time(void **state)
{
	fx_t f;
	predict_result_t r;
	queue_result_t res;
	size_t dirty;
	char before[512], after[512];

	(void)state;
	fx_init(&f, "");
	wl(&f, "x-run", "na", 0, 2);
	assert_int_equal(queue_cycle_run(f.q, 0, &res), GPUQ_OK);
	wl(&f, "y-next", "na", MIN, 2);
	wl(&f, "x-then", "na", 2 * MIN, 2);
	wl(&f, "z-last", "na", 3 * MIN, 2);
	assert_int_equal(queue_cycle_run(f.q, 10 * MIN, &res), GPUQ_OK);
	dirty = queue_dirty_count(f.q);
	assert_int_equal(queue_workload_explain(f.q, "z-last", before, sizeof(before)), GPUQ_OK);
	assert_int_equal(
	    predict_run(f.q, f.p, &f.cfg, 10 * MIN, NULL, runtimes, NULL, NULL, &r, NULL), GPUQ_OK);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.simulated, 3);
	assert_int_equal(r.started, 3);
	assert_int_equal(start_of(&r, "y-next"), 30 * MIN); /* when x-run ends */
	assert_int_equal(start_of(&r, "x-then"), 40 * MIN); /* 10 min later */
	assert_int_equal(start_of(&r, "z-last"), 70 * MIN); /* 30 min later */
	assert_null(predict_find(&r, "x-run"));		    /* running: not predicted */
	predict_result_deinit(&r);
	/* the live core is only read */
	assert_int_equal(queue_dirty_count(f.q), dirty);
	assert_int_equal(queue_workload_explain(f.q, "z-last", after, sizeof(after)), GPUQ_OK);
	assert_string_equal(before, after);
	{
		queue_wl_t id;
		queue_workload_view_t v;

		assert_int_equal(queue_workload_find(f.q, "x-run", &id), GPUQ_OK);
		assert_int_equal(queue_workload_view(f.q, id, &v), GPUQ_OK);
		assert_int_equal(v.state, QUEUE_WL_ADMITTED);
	}
	fx_deinit(&f);
}

/* A running workload's wall-clock limit ends it at its deadline in the
 * pass as in the live core: x-run is expected to run 30 minutes but its
 * limit is 12, so y-next starts at 12 minutes. A ClusterQueue default
 * counts the same. */
/* In ns of f: x-run (2 GPUs, 30 minutes by runtimes(), its own limit
 * limit_s, 0: none) admitted at 0, y-next behind it; y-next's predicted
 * start at 2 minutes. */
static int64_t next_start(fx_t *f, const char *ns, int32_t limit_s)
{
	queue_request_t rq = {"gpu", 2};
	queue_podset_spec_t ps = {.name = "main", .count = 1, .requests = &rq, .n_requests = 1};
	queue_workload_spec_t s = {.namespace_ = ns,
				   .name = "x-run",
				   .uid = "x-run",
				   .local_queue = "lq",
				   .podsets = &ps,
				   .n_podsets = 1,
				   .max_exec_s = limit_s};
	predict_result_t r;
	queue_result_t res;
	int64_t at;

	assert_int_equal(queue_workload_add(f->q, &s, 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_cycle_run(f->q, 0, &res), GPUQ_OK);
	wl(f, "y-next", ns, MIN, 2);
	assert_int_equal(queue_cycle_run(f->q, 2 * MIN, &res), GPUQ_OK);
	assert_int_equal(
	    predict_run(f->q, f->p, &f->cfg, 2 * MIN, NULL, runtimes, NULL, NULL, &r, NULL),
	    GPUQ_OK);
	at = start_of(&r, "y-next");
	predict_result_deinit(&r);
	return at;
}

static void limits_end_runs(void **state)
{
	fx_t f;

	(void)state;
	fx_init(&f, "");
	assert_int_equal(next_start(&f, "na", 12 * 60), 12 * MIN);
	fx_deinit(&f);
	/* a ClusterQueue's default: 5 minutes */
	fx_init(&f, "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: c}\n"
		    "spec:\n  maxExecutionTime: 5m\n  namespaceSelector: {}\n  resourceGroups:\n"
		    "  - coveredResources: [gpu]\n    flavors: [{name: f, resources: [{name: gpu, "
		    "nominalQuota: 2}]}]\n---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\n"
		    "metadata: {name: lq, namespace: nc}\nspec: {clusterQueue: c}\n");
	assert_int_equal(next_start(&f, "nc", 0), 5 * MIN);
	fx_deinit(&f);
}

/* Unknown runtimes: the LocalQueue's median, else the default; a workload
 * past its runtime ends soon. */
static void history_default_and_overrun(void **state)
{
	fx_t f;
	predict_history_t *h;
	predict_opts_t o;
	predict_result_t r;
	queue_result_t res;

	(void)state;
	fx_init(&f, "");
	assert_int_equal(predict_history_create(&h), GPUQ_OK);
	assert_int_equal(predict_history_median(h, "na/lq"), -1);
	assert_int_equal(predict_history_add(h, "na/lq", 5 * MIN), GPUQ_OK);
	assert_int_equal(predict_history_add(h, "na/lq", 50 * MIN), GPUQ_OK);
	assert_int_equal(predict_history_add(h, "na/lq", 20 * MIN), GPUQ_OK);
	assert_int_equal(predict_history_median(h, "na/lq"), 20 * MIN);
	assert_int_equal(predict_history_add(h, "na/lq", 30 * MIN), GPUQ_OK);
	assert_int_equal(predict_history_median(h, "na/lq"), 20 * MIN); /* the lower middle */
	assert_int_equal(predict_history_add(h, "", 1), GPUQ_EINVAL);
	for (int i = 0; i < 40; i++) /* a ring: the last 32 */
		assert_int_equal(predict_history_add(h, "nb/lq", 7 * MIN), GPUQ_OK);
	assert_int_equal(predict_history_median(h, "nb/lq"), 7 * MIN);

	wl(&f, "a-run", "na", 0, 2); /* 20 min by history */
	wl(&f, "b-run", "nb", 0, 2); /* 7 min by history: overrun at 10 min */
	assert_int_equal(queue_cycle_run(f.q, 0, &res), GPUQ_OK);
	wl(&f, "a-wait", "na", MIN, 2);
	wl(&f, "b-wait", "nb", MIN, 2);
	predict_opts_default(&o);
	assert_int_equal(predict_run(f.q, f.p, &f.cfg, 10 * MIN, &o, runtimes, NULL, h, &r, NULL),
			 GPUQ_OK);
	assert_int_equal(start_of(&r, "a-wait"), 20 * MIN);
	assert_int_equal(start_of(&r, "b-wait"), 11 * MIN); /* a tenth of 7 min, at least 1 min */
	predict_result_deinit(&r);
	/* without a history: the default (1 h) */
	assert_int_equal(predict_run(f.q, f.p, &f.cfg, 10 * MIN, &o, NULL, NULL, NULL, &r, NULL),
			 GPUQ_OK);
	assert_int_equal(start_of(&r, "a-wait"), 60 * MIN);
	predict_result_deinit(&r);
	predict_history_destroy(h);
	fx_deinit(&f);
}

/* The caps: workloads beyond workloads_max (position by position over the
 * ClusterQueues) and past the horizon are not predicted. */
static void caps(void **state)
{
	fx_t f;
	predict_opts_t o;
	predict_result_t r;
	queue_result_t res;

	(void)state;
	fx_init(&f, "");
	wl(&f, "x-a0", "na", 0, 2);
	wl(&f, "x-b0", "nb", 0, 2);
	assert_int_equal(queue_cycle_run(f.q, 0, &res), GPUQ_OK);
	wl(&f, "y-a1", "na", 1, 2);
	wl(&f, "y-a2", "na", 2, 2);
	wl(&f, "y-a3", "na", 3, 2);
	wl(&f, "y-b1", "nb", 1, 2);
	predict_opts_default(&o);
	o.workloads_max = 2; /* positions 1 of both CQs (2), not 2 (1 more) */
	assert_int_equal(predict_run(f.q, f.p, &f.cfg, 0, &o, runtimes, NULL, NULL, &r, NULL),
			 GPUQ_OK);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.simulated, 2);
	assert_int_equal(start_of(&r, "y-a1"), 30 * MIN);
	assert_int_equal(start_of(&r, "y-b1"), 30 * MIN);
	assert_int_equal(start_of(&r, "y-a2"), -1);
	predict_result_deinit(&r);
	/* kept_only: the same pass lists only what its copy kept */
	o.kept_only = true;
	assert_int_equal(predict_run(f.q, f.p, &f.cfg, 0, &o, runtimes, NULL, NULL, &r, NULL),
			 GPUQ_OK);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.simulated, 2);
	assert_int_equal(start_of(&r, "y-a1"), 30 * MIN);
	assert_int_equal(start_of(&r, "y-b1"), 30 * MIN);
	assert_null(predict_find(&r, "y-a2"));
	assert_null(predict_find(&r, "y-a3"));
	predict_result_deinit(&r);
	o.kept_only = false;
	o.workloads_max = 10;
	o.horizon_ms = 45 * MIN; /* y-a2 starts at 40 min, y-a3 at 50 min */
	assert_int_equal(predict_run(f.q, f.p, &f.cfg, 0, &o, runtimes, NULL, NULL, &r, NULL),
			 GPUQ_OK);
	assert_int_equal(start_of(&r, "y-a2"), 40 * MIN);
	assert_int_equal(start_of(&r, "y-a3"), -1);
	assert_true(r.capped);
	predict_result_deinit(&r);
	fx_deinit(&f);
}

static uint32_t cq_of(const queue_t *q, queue_wl_t id)
{
	queue_workload_view_t v;

	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	return v.cq;
}

/* queue_pending_beyond (selection within each CQ) leaves out exactly what
 * the full sort did: over random queues of two CQs with ties in creation
 * time, some admitted, for caps from none to all; the first 20 in random
 * order (the heap's selection gives way to quickselect), the last 4 long
 * and mostly in arrival order, as a live queue's slots are (the heap's). */
static void beyond_as_the_sort(void **state)
{
	unsigned seed = 7;

	(void)state;
	for (int round = 0; round < 24; round++) {
		fx_t f;
		queue_result_t res;
		bool arrival = round >= 20;
		size_t n_wl = arrival ? 1500 + (size_t)(rand_r(&seed) % 1500)
				      : 1 + (size_t)(rand_r(&seed) % 300);
		size_t n_ids, total;
		char uid[32];

		fx_init(&f, "");
		for (size_t i = 0; i < n_wl; i++) {
			int64_t at = rand_r(&seed) % 15;

			if (arrival && rand_r(&seed) % 50) /* a few out of order */
				at = (int64_t)i / 10;
			snprintf(uid, sizeof(uid), "w%03zu",
				 (size_t)rand_r(&seed) % 1000 * 10000 + i);
			wl(&f, uid, rand_r(&seed) % 3 ? "na" : "nb", at, 1 + rand_r(&seed) % 2);
		}
		assert_int_equal(queue_cycle_run(f.q, 20, &res), GPUQ_OK);
		total = queue_workloads_by_cq(f.q, QUEUE_WL_PENDING, NULL, 0);
		for (size_t cap = 0; cap <= total + 2; cap += 1 + cap / (arrival ? 2 : 4)) {
			queue_wl_t *ids = calloc(total + 1, sizeof(*ids));
			size_t n = queue_workloads_by_cq(f.q, QUEUE_WL_PENDING, ids, total);
			size_t cnt[2] = {0, 0}, keep = 0, sum = 0, pos = 0;
			uint32_t cur = QUEUE_NONE;
			uint8_t *beyond;

			for (size_t i = 0; i < n; i++) /* the positions as the sort gives them */
				cnt[cq_of(f.q, ids[i])]++;
			while (1) {
				size_t at = (cnt[0] > keep) + (cnt[1] > keep);

				if (!at || sum + at > cap)
					break;
				sum += at;
				keep++;
			}
			assert_int_equal(queue_pending_beyond(f.q, cap, &beyond, &n_ids), GPUQ_OK);
			for (size_t i = 0; i < n; i++) {
				uint32_t cq = cq_of(f.q, ids[i]);

				pos = cq == cur ? pos + 1 : 1;
				cur = cq;
				assert_true(ids[i] < n_ids);
				assert_int_equal(beyond[ids[i]], pos > keep);
			}
			{ /* pending ones only */
				uint8_t *pending = calloc(n_ids + 1, 1);

				assert_non_null(pending);
				for (size_t i = 0; i < n; i++)
					pending[ids[i]] = 1;
				for (size_t id = 0; id < n_ids; id++)
					if (!pending[id])
						assert_int_equal(beyond[id], 0);
				free(pending);
			}
			free(beyond);
			free(ids);
		}
		fx_deinit(&f);
	}
}

/* The copy decides by the core's own rules: a budget held until its window
 * turns delays the start to the turn. */
static void budgets_and_min_runtime_count(void **state)
{
	fx_t f;
	predict_result_t r;
	queue_result_t res;
	int64_t day = 24 * 60 * MIN;

	(void)state;
	fx_init(&f, "---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\n"
		    "metadata: {name: held, namespace: na}\nspec:\n  clusterQueue: a\n"
		    "  budget: {gpuHours: \"0.5\", window: 1d, action: Hold}\n");
	wl(&f, "x-a", "na", 0, 2); /* in LocalQueue na/lq */
	{
		queue_request_t rq = {"gpu", 1};
		queue_podset_spec_t ps = {
		    .name = "m", .count = 1, .requests = &rq, .n_requests = 1};
		queue_workload_spec_t s = {.namespace_ = "na",
					   .name = "held-1",
					   .uid = "held-1",
					   .local_queue = "held",
					   .created_ms = 1,
					   .podsets = &ps,
					   .n_podsets = 1};

		assert_int_equal(queue_workload_add(f.q, &s, 0, NULL, NULL), GPUQ_OK);
		s.name = s.uid = "held-2";
		rq.amount = 2;
		assert_int_equal(queue_workload_add(f.q, &s, 0, NULL, NULL), GPUQ_OK);
	}
	assert_int_equal(queue_cycle_run(f.q, 0, &res), GPUQ_OK);
	/* x-a holds both GPUs for 30 min; held-1 (1 GPU) runs 1 h from then
	 * (the default) and has spent the budget (0.5 GPU-hours) at 60 min:
	 * held-2 (2 GPUs), which fits once held-1 ends at 90 min, waits for the
	 * day to turn */
	assert_int_equal(predict_run(f.q, f.p, &f.cfg, 0, NULL, runtimes, NULL, NULL, &r, NULL),
			 GPUQ_OK);
	assert_int_equal(start_of(&r, "held-1"), 30 * MIN);
	assert_int_equal(start_of(&r, "held-2"), day);
	predict_result_deinit(&r);
	fx_deinit(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(forward_in_virtual_time),
	    cmocka_unit_test(history_default_and_overrun),
	    cmocka_unit_test(limits_end_runs),
	    cmocka_unit_test(caps),
	    cmocka_unit_test(beyond_as_the_sort),
	    cmocka_unit_test(budgets_and_min_runtime_count),
	};

	return cmocka_run_group_tests_name("predict", tests, NULL, NULL);
}

/* The queue metrics (qmetrics/): a core built with the queue's own API runs
 * cycles the way the controller runs them, the results are counted, a
 * snapshot is published and rendered, and every series is checked against
 * numbers worked out by hand: pending by reason and admitted per
 * ClusterQueue and LocalQueue, quota used, borrowed and lent per flavor and
 * resource (cpu in cores), admissions, evictions and preemptions by reason,
 * the time to admission, cycle and commit durations, and the leader gauge.
 * Then: counters carried by name to a rebuilt core, label values escaped,
 * the caps on series. promtool checks the same text in suite_metrics.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmetrics/qmetrics.h"
#include "http/http.h"

/* ---- a small cluster: one cohort, two ClusterQueues, three tenants ---- */

/* CQ name in cohort (NULL: none) with cpu and nvidia.com/gpu quotas on
 * flavor h100 (gpu lending limit llimit, QUEUE_UNLIMITED for none). */
static void add_cq(queue_t *q, const char *name, const char *cohort, int64_t cpu_milli,
		   int64_t gpus, int64_t llimit, queue_within_t within)
{
	static const char *const cov[] = {"cpu", "nvidia.com/gpu"};
	queue_quota_spec_t quotas[2] = {{cpu_milli, QUEUE_UNLIMITED, QUEUE_UNLIMITED},
					{gpus, QUEUE_UNLIMITED, llimit}};
	queue_flavor_quota_spec_t fl = {"h100", quotas};
	queue_group_spec_t g = {.covered = cov, .n_covered = 2, .flavors = &fl, .n_flavors = 1};
	queue_cq_spec_t s = {.name = name,
			     .cohort = cohort,
			     .groups = &g,
			     .n_groups = 1,
			     .within = within,
			     .reclaim = QUEUE_RECLAIM_ANY,
			     /* idle below 10% for an hour: reported (the gauge of
				the idle ones counts them from the first reading) */
			     .idle_action = QUEUE_IDLE_REPORT,
			     .idle_threshold_pct = 10,
			     .idle_after_ms = 3600000};
	gpuq_diag_t d = {{0}};

	if (queue_cq_add(q, &s, NULL, &d))
		fail_msg("cq %s: %s", name, d.msg);
}

static queue_t *cluster(void)
{
	queue_flavor_spec_t f = {.name = "h100"};
	queue_t *q = NULL;

	assert_int_equal(queue_create(NULL, &q), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	add_cq(q, "train", "pool", 8000, 8, QUEUE_UNLIMITED, QUEUE_WITHIN_LOWER_PRIORITY);
	add_cq(q, "infer", "pool", 4000, 4, QUEUE_UNLIMITED, QUEUE_WITHIN_NEVER);
	assert_int_equal(queue_lq_add(q, "team-a", "default", "train", 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "team-b", "default", "train", 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "team-c", "default", "infer", 0, NULL, NULL), GPUQ_OK);
	return q;
}

/* A one-pod workload uid in ns's LocalQueue default asking for gpus GPUs
 * and cpu_milli of cpu. */
static void add_wl(queue_t *q, const char *uid, const char *ns, int32_t prio, int64_t created,
		   int64_t gpus, int64_t cpu_milli)
{
	queue_request_t r[2] = {{"nvidia.com/gpu", gpus}, {"cpu", cpu_milli}};
	queue_podset_spec_t ps = {.name = "main", .count = 1, .requests = r, .n_requests = 2};
	queue_workload_spec_t s = {.namespace_ = ns,
				   .name = uid,
				   .uid = uid,
				   .local_queue = "default",
				   .priority = prio,
				   .created_ms = created,
				   .podsets = &ps,
				   .n_podsets = 1};

	assert_int_equal(queue_workload_add(q, &s, created, NULL, NULL), GPUQ_OK);
}

/* One cycle as the controller runs it: counted, its duration observed. */
static void cycle(qmetrics_t *m, queue_t *q, int64_t now, queue_result_t *res)
{
	assert_int_equal(queue_cycle_run(q, now, res), GPUQ_OK);
	for (size_t i = 0; i < res->n_evictions; i++)
		qmetrics_eviction_count(m, q, &res->evictions[i]);
	for (size_t i = 0; i < res->n_admissions; i++)
		qmetrics_admission_count(m, q, &res->admissions[i], 0, now);
	qmetrics_cycle_observe(m, res->n_admissions > 0, 2000000); /* 2 ms */
}

static void source(void *m, http_metrics_text_t *t)
{
	qmetrics_render(m, t);
}

/* A scrape: the webhook's text with the queue metrics as its source. */
static char *render(qmetrics_t *m)
{
	http_metrics_t *w;
	char *text;
	size_t len;

	assert_int_equal(http_metrics_create(&w), GPUQ_OK);
	http_metrics_source_set(w, source, m);
	assert_int_equal(http_metrics_render(w, &text, &len), GPUQ_OK);
	http_metrics_destroy(w);
	return text;
}

/* The value of the sample that is exactly `series` (name and labels). */
static const char *sample(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; (p = strstr(p, series)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return p + n + 1;
	return NULL;
}

static double value(const char *text, const char *series)
{
	const char *v = sample(text, series);

	if (!v)
		fail_msg("no sample %s", series);
	return strtod(v, NULL);
}

#define assert_value(text, series, want)                                                           \
	do {                                                                                       \
		double got_ = value(text, series);                                                 \
		if (got_ != (want))                                                                \
			fail_msg("%s: %g, want %g", series, got_, (double)(want));                 \
	} while (0)

/* How many samples start with prefix. */
static int samples(const char *text, const char *prefix)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, prefix)); p++)
		if (p == text || p[-1] == '\n')
			n++;
	return n;
}

/* ---- the series, number by number ---- */

static void gauges_and_counters(void **state)
{
	qmetrics_t *m;
	queue_t *q = cluster();
	queue_result_t res;
	char *text;

	(void)state;
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	/* The cohort has 12 GPUs. a1 (4) and a2 (6) fill train's 8 and borrow 2
	 * of infer's; c1 (1) fits infer; b1 (8) does not fit (1 left). */
	add_wl(q, "a1", "team-a", 0, 1000, 4, 2500);
	add_wl(q, "a2", "team-a", 0, 2000, 6, 500);
	add_wl(q, "b1", "team-b", 0, 3000, 8, 0);
	add_wl(q, "c1", "team-c", 0, 4900, 1, 0);
	cycle(m, q, 5000, &res);
	assert_int_equal(res.n_admissions, 3);
	qmetrics_commit_observe(m, true, 800000); /* 0.8 ms */
	qmetrics_commit_observe(m, false, 0);
	/* one release: queued 3 ms, handle 0.2, cycle 0.04, commit 0.8, patch 6 */
	qmetrics_release_stages_observe(m, (const uint64_t[QMETRICS_STAGES]){
					       3000000, 200000, 40000, 800000, 6000000, 10040000});
	qmetrics_loop_tail_observe(m, 70000);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);

	assert_value(text, "gpuq_controller_leader", 1);
	/* pending and admitted */
	assert_value(text,
		     "gpuq_cluster_queue_pending_workloads{cluster_queue=\"train\","
		     "reason=\"Quota\"}",
		     1);
	assert_value(text,
		     "gpuq_cluster_queue_pending_workloads{cluster_queue=\"train\","
		     "reason=\"Eligible\"}",
		     0);
	assert_int_equal(samples(text, "gpuq_cluster_queue_pending_workloads{"), 2 * 10);
	assert_value(text, "gpuq_cluster_queue_admitted_workloads{cluster_queue=\"train\"}", 2);
	assert_value(text, "gpuq_cluster_queue_admitted_workloads{cluster_queue=\"infer\"}", 1);
	assert_value(text,
		     "gpuq_local_queue_pending_workloads{namespace=\"team-b\","
		     "local_queue=\"default\",cluster_queue=\"train\",reason=\"Quota\"}",
		     1);
	assert_value(text,
		     "gpuq_local_queue_admitted_workloads{namespace=\"team-a\","
		     "local_queue=\"default\",cluster_queue=\"train\"}",
		     2);
	assert_value(text,
		     "gpuq_local_queue_admissions_total{namespace=\"team-c\","
		     "local_queue=\"default\",cluster_queue=\"infer\"}",
		     1);
	/* quota: train holds 10 GPUs on 8 nominal, borrowing 2, all lent by
	 * infer (the only lender); cpu in cores: 2.5 + 0.5 */
	const char *tg = "{cluster_queue=\"train\",cohort=\"pool\",flavor=\"h100\","
			 "resource=\"nvidia.com/gpu\"}";
	const char *ig = "{cluster_queue=\"infer\",cohort=\"pool\",flavor=\"h100\","
			 "resource=\"nvidia.com/gpu\"}";
	char series[256];
#define S(name, labels) (snprintf(series, sizeof(series), "%s%s", name, labels), series)
	assert_value(text, S("gpuq_cluster_queue_nominal_quota", tg), 8);
	assert_value(text, S("gpuq_cluster_queue_resource_usage", tg), 10);
	assert_value(text, S("gpuq_cluster_queue_resource_borrowed", tg), 2);
	assert_value(text, S("gpuq_cluster_queue_resource_lent", tg), 0);
	assert_value(text, S("gpuq_cluster_queue_resource_usage", ig), 1);
	assert_value(text, S("gpuq_cluster_queue_resource_borrowed", ig), 0);
	assert_value(text, S("gpuq_cluster_queue_resource_lent", ig), 2);
	assert_non_null(strstr(text, "gpuq_cluster_queue_resource_usage{cluster_queue=\"train\","
				     "cohort=\"pool\",flavor=\"h100\",resource=\"cpu\"} 3.000\n"));
	assert_non_null(strstr(text, "gpuq_cluster_queue_nominal_quota{cluster_queue=\"infer\","
				     "cohort=\"pool\",flavor=\"h100\",resource=\"cpu\"} 4.000\n"));
	assert_value(text,
		     "gpuq_local_queue_resource_usage{namespace=\"team-a\",local_queue=\"default\","
		     "cluster_queue=\"train\",flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     10);
	assert_value(text,
		     "gpuq_local_queue_resource_usage{namespace=\"team-b\",local_queue=\"default\","
		     "cluster_queue=\"train\",flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     0);
	/* counters and the time to admission: a1 waited 4 s, a2 3 s, c1 0.1 s */
	assert_value(text, "gpuq_cluster_queue_admissions_total{cluster_queue=\"train\"}", 2);
	const char *tw = "gpuq_cluster_queue_admission_wait_seconds";
	assert_value(text, S(tw, "_bucket{cluster_queue=\"train\",le=\"2.5\"}"), 0);
	assert_value(text, S(tw, "_bucket{cluster_queue=\"train\",le=\"5\"}"), 2);
	assert_value(text, S(tw, "_bucket{cluster_queue=\"train\",le=\"+Inf\"}"), 2);
	assert_value(text, S(tw, "_count{cluster_queue=\"train\"}"), 2);
	assert_non_null(strstr(text, S(tw, "_sum{cluster_queue=\"train\"} 7.000\n")));
	assert_value(text, S(tw, "_bucket{cluster_queue=\"infer\",le=\"0.1\"}"), 1);
	/* the cycle and the store */
	const char *cy = "gpuq_controller_cycle_duration_seconds";
	assert_value(text, S(cy, "_bucket{result=\"success\",le=\"0.001\"}"), 0);
	assert_value(text, S(cy, "_bucket{result=\"success\",le=\"0.005\"}"), 1);
	assert_value(text, S(cy, "_count{result=\"inadmissible\"}"), 0);
	assert_non_null(strstr(text, S(cy, "_sum{result=\"success\"} 0.002000000\n")));
	assert_value(text, "gpuq_store_commit_duration_seconds_bucket{le=\"0.001\"}", 1);
	assert_value(text, "gpuq_store_commit_duration_seconds_count", 1);
	assert_value(text, "gpuq_store_commit_failures_total", 1);
	/* where the release's time went, by stage */
	const char *rs = "gpuq_controller_release_stage_seconds";
	assert_value(text, S(rs, "_bucket{stage=\"queued\",le=\"0.002\"}"), 0);
	assert_value(text, S(rs, "_bucket{stage=\"queued\",le=\"0.004\"}"), 1);
	assert_value(text, S(rs, "_bucket{stage=\"cycle\",le=\"5e-05\"}"), 1);
	assert_value(text, S(rs, "_bucket{stage=\"commit\",le=\"0.001\"}"), 1);
	assert_value(text, S(rs, "_bucket{stage=\"patch\",le=\"0.004\"}"), 0);
	assert_value(text, S(rs, "_bucket{stage=\"patch\",le=\"0.008\"}"), 1);
	assert_value(text, S(rs, "_bucket{stage=\"total\",le=\"0.016\"}"), 1);
	assert_non_null(strstr(text, S(rs, "_sum{stage=\"handle\"} 0.000200000\n")));
	assert_value(text, S(rs, "_count{stage=\"total\"}"), 1);
	assert_value(text, "gpuq_controller_loop_tail_seconds_bucket{le=\"0.0001\"}", 1);
	assert_value(text, "gpuq_controller_loop_tail_seconds_count", 1);
	assert_value(text, "gpuq_queue_metrics_omitted{kind=\"local_queue\"}", 0);
	free(text);

	/* p1 (priority 10, 8 GPUs) in train preempts a2 and a1 (lower priority,
	 * same ClusterQueue) and is admitted once their quota is free. */
	add_wl(q, "p1", "team-b", 10, 6000, 8, 0);
	cycle(m, q, 6000, &res);
	assert_int_equal(res.n_evictions, 2);
	assert_int_equal(res.evictions[0].reason, QUEUE_EVICT_IN_CQ);
	cycle(m, q, 6500, &res);
	assert_int_equal(res.n_admissions, 1);
	assert_string_equal(res.admissions[0].uid, "p1");
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text,
		     "gpuq_cluster_queue_evictions_total{cluster_queue=\"train\","
		     "reason=\"Preempted\"}",
		     2);
	assert_value(text,
		     "gpuq_cluster_queue_evictions_total{cluster_queue=\"train\","
		     "reason=\"PodsReadyTimeout\"}",
		     0);
	assert_value(text,
		     "gpuq_cluster_queue_preemptions_total{preempting_cluster_queue=\"train\","
		     "reason=\"InClusterQueue\"}",
		     2);
	assert_value(text,
		     "gpuq_cluster_queue_preemptions_total{preempting_cluster_queue=\"infer\","
		     "reason=\"InClusterQueue\"}",
		     0);
	assert_value(text, "gpuq_cluster_queue_admissions_total{cluster_queue=\"train\"}", 3);
	assert_value(text, S(tw, "_bucket{cluster_queue=\"train\",le=\"0.5\"}"), 1); /* p1: 0.5 s */
	assert_value(text, S(cy, "_count{result=\"inadmissible\"}"), 1);
	free(text);
#undef S
	qmetrics_destroy(m);
	queue_destroy(q);
}

/* What a cohort's ClusterQueues borrow is lent by the others in proportion
 * to what each could lend (unused quota up to its lending limit), so lent
 * adds up to borrowed. */
static void lent_shared_by_lenders(void **state)
{
	qmetrics_t *m;
	queue_t *q = NULL;
	queue_flavor_spec_t f = {.name = "h100"};
	queue_result_t res;
	char *text;

	(void)state;
	assert_int_equal(queue_create(NULL, &q), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	add_cq(q, "a", "pool", 0, 10, 4, QUEUE_WITHIN_NEVER); /* lends at most 4 */
	add_cq(q, "b", "pool", 0, 6, QUEUE_UNLIMITED, QUEUE_WITHIN_NEVER);
	add_cq(q, "c", "pool", 0, 2, QUEUE_UNLIMITED, QUEUE_WITHIN_NEVER);
	assert_int_equal(queue_lq_add(q, "ns-a", "default", "a", 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "ns-c", "default", "c", 0, NULL, NULL), GPUQ_OK);
	add_wl(q, "w-a", "ns-a", 0, 1000, 3, 0);
	add_wl(q, "w-c", "ns-c", 0, 1000, 7, 0);
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	cycle(m, q, 2000, &res);
	assert_int_equal(res.n_admissions, 2);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	/* c borrows 5; a could lend 4 (its limit), b 6: a lends 2, b 3 */
	assert_value(text,
		     "gpuq_cluster_queue_resource_borrowed{cluster_queue=\"c\",cohort=\"pool\","
		     "flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     5);
	assert_value(text,
		     "gpuq_cluster_queue_resource_lent{cluster_queue=\"a\",cohort=\"pool\","
		     "flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     2);
	assert_value(text,
		     "gpuq_cluster_queue_resource_lent{cluster_queue=\"b\",cohort=\"pool\","
		     "flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     3);
	assert_value(text,
		     "gpuq_cluster_queue_resource_lent{cluster_queue=\"c\",cohort=\"pool\","
		     "flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     0);
	free(text);
	qmetrics_destroy(m);
	queue_destroy(q);
}

/* The wait runs from the latest of creation, the driver's requeue time and
 * the end of the backoff. */
static void wait_from_requeue(void **state)
{
	qmetrics_t *m;
	queue_t *q = cluster();
	queue_result_t res;
	char *text;

	(void)state;
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	add_wl(q, "c1", "team-c", 0, 1000, 1, 0);
	assert_int_equal(queue_cycle_run(q, 700000, &res), GPUQ_OK);
	/* created 1 s, put back in the queue at 650 s: it waited 50 s */
	qmetrics_admission_count(m, q, &res.admissions[0], 650000, 700000);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text,
		     "gpuq_cluster_queue_admission_wait_seconds_bucket{cluster_queue=\"infer\","
		     "le=\"30\"}",
		     0);
	assert_value(text,
		     "gpuq_cluster_queue_admission_wait_seconds_bucket{cluster_queue=\"infer\","
		     "le=\"60\"}",
		     1);
	free(text);
	qmetrics_destroy(m);
	queue_destroy(q);
}

/* A follower shows the leader gauge at 0 and nothing else. */
static void follower_shows_leader_only(void **state)
{
	qmetrics_t *m;
	queue_t *q = cluster();
	char *text;

	(void)state;
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK); /* not leading: not shown */
	text = render(m);
	assert_value(text, "gpuq_controller_leader", 0);
	assert_null(strstr(text, "gpuq_cluster_queue"));
	assert_null(strstr(text, "gpuq_store_commit"));
	free(text);
	qmetrics_leader_set(m, true); /* leads, nothing published since */
	text = render(m);
	assert_value(text, "gpuq_controller_leader", 1);
	assert_null(strstr(text, "gpuq_cluster_queue"));
	free(text);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text, "gpuq_cluster_queue_admitted_workloads{cluster_queue=\"train\"}", 0);
	free(text);
	qmetrics_leader_set(m, false); /* the snapshot is withdrawn */
	qmetrics_leader_set(m, true);
	text = render(m);
	assert_null(strstr(text, "gpuq_cluster_queue"));
	free(text);
	qmetrics_destroy(m);
	qmetrics_destroy(NULL);
	queue_destroy(q);
}

/* A new core (a policy change) keeps the counters of the queues that keep
 * their names; a queue gone takes its series with it. */
static void counters_follow_names(void **state)
{
	qmetrics_t *m;
	queue_t *q = cluster(), *q2 = NULL;
	queue_flavor_spec_t f = {.name = "h100"};
	queue_result_t res;
	char *text;

	(void)state;
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	add_wl(q, "a1", "team-a", 0, 1000, 1, 0);
	add_wl(q, "c1", "team-c", 0, 1000, 1, 0);
	cycle(m, q, 2000, &res);
	assert_int_equal(res.n_admissions, 2);
	/* the new policy: infer gone, a new CQ "batch" before train */
	assert_int_equal(queue_create(NULL, &q2), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q2, &f, NULL, NULL), GPUQ_OK);
	add_cq(q2, "batch", NULL, 1000, 1, QUEUE_UNLIMITED, QUEUE_WITHIN_NEVER);
	add_cq(q2, "train", "pool", 8000, 8, QUEUE_UNLIMITED, QUEUE_WITHIN_NEVER);
	assert_int_equal(queue_lq_add(q2, "team-a", "default", "train", 0, NULL, NULL), GPUQ_OK);
	queue_destroy(q); /* qmetrics copied what it needs */
	assert_int_equal(qmetrics_core_set(m, q2), GPUQ_OK);
	assert_int_equal(qmetrics_publish(m, q2), GPUQ_OK);
	text = render(m);
	assert_value(text, "gpuq_cluster_queue_admissions_total{cluster_queue=\"train\"}", 1);
	assert_value(text, "gpuq_cluster_queue_admissions_total{cluster_queue=\"batch\"}", 0);
	assert_null(strstr(text, "\"infer\""));
	assert_value(text,
		     "gpuq_local_queue_admissions_total{namespace=\"team-a\","
		     "local_queue=\"default\",cluster_queue=\"train\"}",
		     1);
	assert_value(text,
		     "gpuq_cluster_queue_nominal_quota{cluster_queue=\"batch\",cohort=\"\","
		     "flavor=\"h100\",resource=\"nvidia.com/gpu\"}",
		     1);
	free(text);
	/* no core: no queue series, the controller's own stay */
	assert_int_equal(qmetrics_core_set(m, NULL), GPUQ_OK);
	assert_int_equal(qmetrics_publish(m, NULL), GPUQ_OK);
	text = render(m);
	assert_null(strstr(text, "gpuq_cluster_queue"));
	assert_value(text, "gpuq_store_commit_failures_total", 0);
	free(text);
	qmetrics_destroy(m);
	queue_destroy(q2);
}

/* A name with a quote, a backslash and a newline stays one label value. */
static void label_values_escaped(void **state)
{
	qmetrics_t *m;
	queue_t *q = NULL;
	queue_flavor_spec_t f = {.name = "fl\"a\\v"};
	char *text;

	(void)state;
	assert_int_equal(queue_create(NULL, &q), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	{
		static const char *const cov[] = {"gpu"};
		queue_quota_spec_t quota = {3, QUEUE_UNLIMITED, QUEUE_UNLIMITED};
		queue_flavor_quota_spec_t fl = {"fl\"a\\v", &quota};
		queue_group_spec_t g = {
		    .covered = cov, .n_covered = 1, .flavors = &fl, .n_flavors = 1};
		queue_cq_spec_t s = {.name = "c\nq", .groups = &g, .n_groups = 1};
		assert_int_equal(queue_cq_add(q, &s, NULL, NULL), GPUQ_OK);
	}
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text,
		     "gpuq_cluster_queue_nominal_quota{cluster_queue=\"c\\nq\",cohort=\"\","
		     "flavor=\"fl\\\"a\\\\v\",resource=\"gpu\"}",
		     3);
	free(text);
	qmetrics_destroy(m);
	queue_destroy(q);
}

/* Past QMETRICS_CQS_MAX ClusterQueues the rest are left out and counted;
 * so are their LocalQueues. */
static void series_capped(void **state)
{
	qmetrics_t *m;
	queue_t *q = NULL;
	queue_flavor_spec_t f = {.name = "h100"};
	char name[32], *text;

	(void)state;
	assert_int_equal(queue_create(NULL, &q), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	for (int i = 0; i < QMETRICS_CQS_MAX + 2; i++) {
		snprintf(name, sizeof(name), "cq-%d", i);
		add_cq(q, name, NULL, 1000, 1, QUEUE_UNLIMITED, QUEUE_WITHIN_NEVER);
	}
	snprintf(name, sizeof(name), "cq-%d", QMETRICS_CQS_MAX + 1);
	assert_int_equal(queue_lq_add(q, "late", "default", name, 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "early", "default", "cq-0", 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text, "gpuq_queue_metrics_omitted{kind=\"cluster_queue\"}", 2);
	assert_value(text, "gpuq_queue_metrics_omitted{kind=\"local_queue\"}", 1);
	assert_int_equal(samples(text, "gpuq_cluster_queue_admitted_workloads{"), QMETRICS_CQS_MAX);
	assert_int_equal(samples(text, "gpuq_local_queue_admitted_workloads{"), 1);
	assert_non_null(strstr(text, "namespace=\"early\""));
	free(text);
	qmetrics_destroy(m);
	queue_destroy(q);
}

/* GPU economics: a budget's series, idle workloads now, idle reports and
 * reclaims, prediction passes. */
static void economics_series(void **state)
{
	qmetrics_t *m;
	queue_t *q = cluster();
	queue_budget_spec_t b = {QUEUE_BUDGET_LOCALQUEUE, "team-a/default", false, 1.0, 0, 50,
				 QUEUE_BUDGET_HOLD};
	queue_result_t res;
	char *text;

	(void)state;
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	assert_int_equal(qmetrics_core_set(m, q), GPUQ_OK);
	assert_int_equal(queue_budgets_set(q, &b, 1, NULL, 0, NULL), GPUQ_OK);
	add_wl(q, "a", "team-a", 0, 0, 2, 100);
	cycle(m, q, 0, &res);
	assert_int_equal(queue_tick(q, 3600000, &res), GPUQ_OK); /* 2 GPU-hours: over */
	qmetrics_idle_count(m, q, &res);
	qmetrics_predict_observe(m, 1500000, 40, 38, true);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text,
		     "gpuq_budget_used{scope=\"LocalQueue\",name=\"team-a/default\",unit=\"gpu_"
		     "hours\"}",
		     2);
	assert_value(text,
		     "gpuq_budget_limit{scope=\"LocalQueue\",name=\"team-a/default\",unit=\"gpu_"
		     "hours\"}",
		     1);
	assert_value(text, "gpuq_budget_used_ratio{scope=\"LocalQueue\",name=\"team-a/default\"}",
		     2);
	assert_value(text, "gpuq_budget_state{scope=\"LocalQueue\",name=\"team-a/default\"}", 2);
	assert_value(text, "gpuq_cluster_queue_idle_workloads{cluster_queue=\"train\"}", 0);
	assert_value(text, "gpuq_prediction_passes_total{result=\"capped\"}", 1);
	free(text);
	/* its GPUs at 4%: idle now, counted by the next snapshot */
	assert_int_equal(queue_workload_utilization(q, "a", 4, 3600000), GPUQ_OK);
	assert_int_equal(qmetrics_publish(m, q), GPUQ_OK);
	text = render(m);
	assert_value(text, "gpuq_cluster_queue_idle_workloads{cluster_queue=\"train\"}", 1);
	assert_value(text, "gpuq_cluster_queue_idle_workloads{cluster_queue=\"infer\"}", 0);
	assert_value(text, "gpuq_prediction_workloads{state=\"started\"}", 38);
	assert_value(text, "gpuq_prediction_last_pass_seconds", 0.0015);
	assert_value(
	    text,
	    "gpuq_cluster_queue_evictions_total{cluster_queue=\"train\",reason=\"IdleReclaim\"}",
	    0);
	free(text);
	qmetrics_destroy(m);
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gauges_and_counters),   cmocka_unit_test(lent_shared_by_lenders),
	    cmocka_unit_test(wait_from_requeue),     cmocka_unit_test(follower_shows_leader_only),
	    cmocka_unit_test(counters_follow_names), cmocka_unit_test(label_values_escaped),
	    cmocka_unit_test(series_capped),	     cmocka_unit_test(economics_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

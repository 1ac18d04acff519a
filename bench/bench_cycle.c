/*
 * bench_cycle: the cost of the queue core's admission cycle, measured in
 * process (no I/O), for bench/bench_cycle.sh.
 *
 *   bench_cycle nochange [pending]   a cycle in which nothing changed over
 *                                    `pending` (default 100,000) pending
 *                                    workloads: BestEffortFIFO (set aside) and
 *                                    StrictFIFO (blocked heads) halves
 *   bench_cycle onefinish [pending] [cqs]  the cycle after one workload
 *                                    finished in one cohort (its set-aside work
 *                                    is retried), over `cqs` CQs (default 100;
 *                                    1: every pending workload in one
 *                                    BestEffortFIFO CQ), and the records it
 *                                    leaves for the store to write
 *   bench_cycle drain [workloads] [cqs]  Kueue's large-scale shape: 50,000
 *                                    workloads in 1,000 CQs (cohorts of 10),
 *                                    drained in virtual time
 *
 * Prints `key value` lines. The functions named bench_* are the ones
 * callgrind's --toggle-collect measures.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue/queue.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_cycle: %s: %s\n", what, gpuq_strerror(rc));
	exit(1);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* n_cqs CQs in cohorts of `per_cohort` (0 = no cohort), each with one LQ
 * and `nominal` GPUs on one flavor. */
static queue_t *build(int n_cqs, int per_cohort, int64_t nominal, bool strict_half)
{
	static const char *const cov[] = {"nvidia.com/gpu"};
	queue_flavor_spec_t f = {.name = "h100"};
	queue_t *q = NULL;
	queue_config_t cfg;
	int rc;

	queue_config_default(&cfg);
	cfg.tenant_sample_ms = 0;
	cfg.ready_timeout_ms = 0;
	rc = queue_create(&cfg, &q);
	if (rc)
		die("create", rc);
	rc = queue_flavor_add(q, &f, NULL, NULL);
	if (rc)
		die("flavor", rc);
	for (int c = 0; c < n_cqs; c++) {
		queue_quota_spec_t qs = {nominal, QUEUE_UNLIMITED, QUEUE_UNLIMITED};
		queue_flavor_quota_spec_t fl = {"h100", &qs};
		queue_group_spec_t g = {cov, 1, &fl, 1};
		queue_cq_spec_t s = {0};
		char name[32], cohort[32];

		snprintf(name, sizeof(name), "cq%d", c);
		snprintf(cohort, sizeof(cohort), "co%d", per_cohort ? c / per_cohort : 0);
		s.name = name;
		s.cohort = per_cohort ? cohort : NULL;
		s.groups = &g;
		s.n_groups = 1;
		s.strategy = strict_half && c % 2 ? QUEUE_STRICT_FIFO : QUEUE_BEST_EFFORT_FIFO;
		rc = queue_cq_add(q, &s, NULL, NULL);
		if (!rc)
			rc = queue_lq_add(q, "ns", name, name, 0, NULL, NULL);
		if (rc)
			die("cq", rc);
	}
	return q;
}

static void add(queue_t *q, int i, int cq, int64_t gpus, int count, int64_t now)
{
	queue_request_t r = {"nvidia.com/gpu", gpus};
	queue_podset_spec_t ps = {.name = "main", .count = count, .requests = &r, .n_requests = 1};
	queue_workload_spec_t s = {0};
	char uid[48], lq[32];
	int rc;

	snprintf(uid, sizeof(uid), "0a1b2c3d-%08d-4e5f-8a9b-%012d", i, i);
	snprintf(lq, sizeof(lq), "cq%d", cq);
	s.namespace_ = "ns";
	s.name = uid;
	s.uid = uid;
	s.local_queue = lq;
	s.priority = (int32_t)(next_rand() % 4);
	s.created_ms = now;
	s.podsets = &ps;
	s.n_podsets = 1;
	rc = queue_workload_add(q, &s, now, NULL, NULL);
	if (rc)
		die("add", rc);
}

/* n_cqs CQs (cohorts of 10, every other one StrictFIFO) x (pending /
 * n_cqs) workloads; every CQ full, so nothing fits. */
static queue_t *setup_full(int pending, int n_cqs, int64_t *now)
{
	queue_t *q = build(n_cqs, 10, 8, true);
	queue_result_t r;
	int i = 0;

	for (int c = 0; c < n_cqs; c++)
		add(q, i++, c, 8, 1, 0); /* fills the CQ */
	if (queue_cycle_run(q, ++*now, &r))
		die("cycle", 1);
	for (; i < pending + n_cqs; i++)
		add(q, i, i % n_cqs, 1 + (int64_t)(next_rand() % 4), 1, *now);
	if (queue_cycle_run(q, ++*now, &r))
		die("cycle", 1);
	queue_dirty_clear(q);
	return q;
}

double bench_nochange_cycles(queue_t *q, int64_t *now, int n);
double bench_nochange_cycles(queue_t *q, int64_t *now, int n)
{
	queue_result_t r;
	double t0 = now_ms();

	for (int k = 0; k < n; k++)
		if (queue_cycle_run(q, ++*now, &r) || r.n_admissions)
			die("nochange cycle", 1);
	return (now_ms() - t0) / n;
}

static int cmd_nochange(int pending)
{
	int64_t now = 0;
	double t0 = now_ms(), per;
	queue_t *q = setup_full(pending, 100, &now);

	printf("setup_ms %.1f\n", now_ms() - t0);
	printf("pending %d\n", pending);
	per = bench_nochange_cycles(q, &now, 1000);
	printf("nochange_cycle_us %.3f\n", per * 1000.0);
	printf("bytes_per_workload %zu\n", queue_memory_bytes(q) / (size_t)(pending + 100));
	queue_destroy(q);
	return 0;
}

double bench_onefinish_cycle(queue_t *q, int64_t *now);
double bench_onefinish_cycle(queue_t *q, int64_t *now)
{
	queue_result_t r;
	double t0;

	if (queue_workload_finish(q, "0a1b2c3d-00000000-4e5f-8a9b-000000000000", ++*now))
		die("finish", 1);
	t0 = now_ms();
	if (queue_cycle_run(q, ++*now, &r))
		die("cycle", 1);
	return now_ms() - t0;
}

static int cmd_onefinish(int pending, int n_cqs)
{
	int64_t now = 0;
	queue_t *q = setup_full(pending, n_cqs, &now);

	printf("onefinish_cycle_ms %.3f\n", bench_onefinish_cycle(q, &now));
	printf("onefinish_records %zu\n", queue_dirty_count(q)); /* the store's writes */
	queue_destroy(q);
	return 0;
}

typedef struct {
	int64_t at;   /* finish time */
	char uid[48]; /* workload */
} run_t;

static int run_cmp(const void *a, const void *b)
{
	const run_t *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* Drain: small/medium/large jobs as in Kueue's performance configs (1, 5,
 * 20 GPUs for 20/10/5 s... scaled), all arriving at t=0; finish on time. */
double bench_drain(queue_t *q, int workloads, int64_t *makespan, uint64_t *cycles);
double bench_drain(queue_t *q, int workloads, int64_t *makespan, uint64_t *cycles)
{
	run_t *running = calloc((size_t)workloads, sizeof(*running));
	size_t n_run = 0, head = 0;
	int64_t now = 0;
	int done = 0;
	double cycle_ms = 0.0;

	if (!running)
		die("alloc", GPUQ_ENOMEM);
	*cycles = 0;
	while (done < workloads) {
		queue_result_t r;
		double t0 = now_ms();

		if (queue_cycle_run(q, now, &r))
			die("drain cycle", 1);
		cycle_ms += now_ms() - t0;
		(*cycles)++;
		for (size_t i = 0; i < r.n_admissions; i++) {
			queue_wl_t id = r.admissions[i].wl;
			queue_workload_view_t v;

			queue_workload_view(q, id, &v);
			running[n_run].at = now + ((int64_t)v.priority + 1) * 1000 +
					    (int64_t)(r.admissions[i].assign[0].amount * 100);
			snprintf(running[n_run].uid, sizeof(running[n_run].uid), "%s", v.uid);
			n_run++;
		}
		if (head == n_run) {
			fprintf(stderr, "bench_cycle: drain stalled with %d done\n", done);
			exit(1);
		}
		/* next event: the earliest finish; finish everything due then */
		qsort(running + head, n_run - head, sizeof(*running), run_cmp);
		now = running[head].at;
		while (head < n_run && running[head].at <= now) {
			if (queue_workload_finish(q, running[head].uid, now))
				die("finish", 1);
			head++;
			done++;
		}
	}
	*makespan = now;
	free(running);
	return cycle_ms;
}

static int cmd_drain(int workloads, int n_cqs)
{
	queue_t *q = build(n_cqs, 10, 20, false);
	static const int64_t sizes[] = {1, 5, 20};
	double t0 = now_ms(), ms;
	int64_t makespan;
	uint64_t cycles;

	for (int i = 0; i < workloads; i++)
		add(q, i, i % n_cqs, sizes[next_rand() % 3], 1, i / 1000);
	printf("drain_setup_ms %.1f\n", now_ms() - t0);
	t0 = now_ms();
	ms = bench_drain(q, workloads, &makespan, &cycles);
	printf("drain_workloads %d\n", workloads);
	printf("drain_cqs %d\n", n_cqs);
	printf("drain_wall_ms %.1f\n", now_ms() - t0);
	printf("drain_cycle_ms_total %.1f\n", ms);
	printf("drain_cycles %" PRIu64 "\n", cycles);
	printf("drain_cycle_us_mean %.1f\n", ms * 1000.0 / (double)cycles);
	printf("drain_virtual_makespan_s %.1f\n", (double)makespan / 1000.0);
	queue_destroy(q);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "nochange";
	int n = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 0;

	if (!strcmp(cmd, "nochange"))
		return cmd_nochange(n > 0 ? n : 100000);
	if (!strcmp(cmd, "onefinish"))
		return cmd_onefinish(n > 0 ? n : 100000,
				     argc > 3 ? (int)strtol(argv[3], NULL, 10) : 100);
	if (!strcmp(cmd, "drain"))
		return cmd_drain(n > 0 ? n : 50000,
				 argc > 3 ? (int)strtol(argv[3], NULL, 10) : 1000);
	fprintf(stderr, "usage: bench_cycle nochange|onefinish|drain [n] [cqs]\n");
	return 2;
}

/*
 * bench_apply: the controller's cost per Job watch event, for
 * bench/bench_apply.sh. A stream of watch events (bench/apply_events.py) is
 * fed through kube/'s watch-stream decoder into the controller's apply path
 * exactly as the watch thread and the controller thread take it (the
 * informer's per-event step, then the controller's handling of the event:
 * the Job cache, the decode, the core), against a controller with a policy
 * and a core but no apiserver. What follows an event later (a cycle, the
 * patches of actuation) is not counted.
 *
 *   bench_apply EVENTS POLICY_DIR [rounds]   ns per event, best of rounds
 *                                            (default 5), and the heap the
 *                                            controller holds per Job after
 *                                            the replay (glibc's mallinfo2:
 *                                            the cache, the core, the maps)
 *   bench_apply EVENTS POLICY_DIR count       one replay (for callgrind,
 *                                            --toggle-collect=bench_replay)
 *
 * Built twice by bench_apply.sh: against this tree, and with
 * -DGPUQ_BENCH_BASELINE against the baseline commit's library (the path
 * before one decode per event: jansson's tree, pruned, dumped to text and
 * decoded again), so both figures come from one invocation.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/internal.h"
#ifdef CONTROLLER_RES_OF /* the Jobs' collection, by their row's kind */
#define CONTROLLER_RES_JOBS CONTROLLER_RES_OF(WORKLOAD_KIND_JOB)
#endif
#include "engine/engine.h"
#include "kube/kube.h"
#include "slurp.h"

#ifdef GPUQ_BENCH_BASELINE
/* The baseline's controller names, from before the module's prefix
 * (issue 22 item 3). */
#define controller_cevent_t cevent_t
#define controller_jobs_apply jobs_apply
#define controller_jobs_free_all jobs_free_all
#define controller_map_deinit map_deinit
#define controller_map_init map_init
#define controller_pods_free_all pods_free_all
#define CONTROLLER_RES_COUNT RES_COUNT
#define CONTROLLER_RES_JOBS RES_JOBS
#endif

static size_t g_events;

/* The controller's core: before, a bare core it built itself; now, an
 * engine (memory only here). */
static int core_open(struct controller *c, policy_t *p, gpuq_diag_t *d)
{
#ifdef GPUQ_BENCH_BASELINE
	queue_config_default(&c->qcfg);
	c->qcfg.release_on_evict = false;
	c->qcfg.ready_scope = QUEUE_READY_GANGS;
	return engine_core_build(p, &c->qcfg, &c->q, d);
#else
	queue_config_t cfg;

	queue_config_default(&cfg);
	cfg.release_on_evict = false;
	cfg.ready_scope = QUEUE_READY_GANGS;
	return engine_open(p, &cfg, NULL, &c->e, d);
#endif
}

static void core_close(struct controller *c)
{
#ifdef GPUQ_BENCH_BASELINE
	queue_destroy(c->q);
#else
	engine_close(c->e);
#endif
}

static struct controller *fake_controller(policy_t *p)
{
	struct controller *c = calloc(1, sizeof(*c));
	gpuq_diag_t d = {{0}};

	if (!c)
		return NULL;
	controller_opts_default(&c->o);
	controller_map_init(&c->jobs);
	controller_map_init(&c->groups);
	controller_map_init(&c->pod_group);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		controller_map_init(&c->objs[r]);
	c->policy = p;
	atomic_store(&c->leader, true);
	if (core_open(c, p, &d)) {
		fprintf(stderr, "bench_apply: core: %s\n", d.msg);
		exit(1);
	}
	return c;
}

#ifdef GPUQ_BENCH_BASELINE
/* Before: the watch thread pruned jansson's tree; the controller thread
 * took it into the Job cache (dumped to text) and decoded the text. */
static int on_event(void *ctx, const kube_event_t *ev)
{
	controller_cevent_t ce = {.res = CONTROLLER_RES_JOBS, .type = ev->type};

	ce.object = controller_prune(json_incref((json_t *)ev->object));
	controller_jobs_apply(ctx, &ce);
	json_decref(ce.object);
	g_events++;
	return 0;
}

static int decoder_new(struct controller *c, kube_watch_decoder_t **d)
{
	return kube_watch_decoder_create(0, on_event, c, d);
}
#else
/* Now: the watch thread decodes each event once (controller_informer_event); the
 * controller thread takes the decoded workload (controller_handle). */
static int on_event(void *ctx, const kube_event_t *ev)
{
	controller_cevent_t ce;

	controller_informer_event(CONTROLLER_RES_JOBS, &((struct controller *)ctx)->o.review_cfg,
				  ev, &ce);
	controller_handle(ctx, &ce);
	g_events++;
	return 0;
}

static int decoder_new(struct controller *c, kube_watch_decoder_t **d)
{
	int rc = kube_watch_decoder_create(0, on_event, c, d);

	if (!rc)
		kube_watch_decoder_fast(*d, true);
	return rc;
}
#endif

/* One replay of the whole stream into a fresh controller (what callgrind
 * counts: the controller's setup is outside). */
__attribute__((noinline)) static int bench_replay(struct controller *c, const char *buf, size_t len)
{
	kube_watch_decoder_t *d = NULL;
	gpuq_diag_t diag = {{0}};
	int rc = decoder_new(c, &d);

	if (!rc)
		rc = kube_watch_decoder_feed(d, buf, len, &diag);
	if (rc)
		fprintf(stderr, "bench_apply: %s\n", diag.msg);
	kube_watch_decoder_destroy(d);
	return rc;
}

static void fake_destroy(struct controller *c)
{
	controller_jobs_free_all(c);
	controller_pods_free_all(c);
	for (size_t i = 0; i < c->n_touched; i++)
		free(c->touched[i]);
	free(c->touched);
	for (size_t i = 0; i < c->n_explain; i++)
		free(c->explain[i]);
	free(c->explain);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		controller_map_deinit(&c->objs[r]);
	core_close(c);
	free(c);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	gpuq_diag_t d = {{0}};
	policy_t *p = NULL;
	size_t len;
	char *buf;
	int rounds = argc > 3 && strcmp(argv[3], "count") != 0 ? (int)strtol(argv[3], NULL, 10) : 5;
	double best = 0;
	size_t heap = 0, jobs = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_apply EVENTS POLICY_DIR [rounds|count]\n");
		return 2;
	}
	gpuq_log_set_level(GPUQ_LOG_ERROR);
	buf = bench_slurp("bench_apply", argv[1], &len);
	if (policy_load_dir(argv[2], NULL, &p, &d)) {
		fprintf(stderr, "bench_apply: policy: %s\n", d.msg);
		return 1;
	}
	if (argc > 3 && !strcmp(argv[3], "count"))
		rounds = 1;
	for (int r = 0; r < rounds; r++) {
		struct controller *c;
		size_t heap0 = mallinfo2().uordblks;
		double t0;

		c = fake_controller(p);
		g_events = 0;
		t0 = now_ns();
		if (bench_replay(c, buf, len))
			return 1;
		t0 = now_ns() - t0;
		if (!r || t0 < best)
			best = t0;
		heap = mallinfo2().uordblks - heap0;
		jobs = c->jobs.n;
		fake_destroy(c);
	}
	printf("events %zu\nns_per_event %.0f\njobs %zu\nheap_per_job %zu\n", g_events,
	       best / (double)g_events, jobs, jobs ? heap / jobs : 0);
	policy_unref(p);
	free(buf);
	return 0;
}

/*
 * bench_release: the controller's JSON work per released Job, for
 * bench/bench_release.sh. Each Job of a stream of three lines per Job
 * (bench_release.sh writes them from bench/apply_events.py's events) goes
 * through what a release shows the controller:
 *   1. the watch event of the Job created, suspended (the watch decoder,
 *      the watch thread's decode, the controller thread's apply);
 *   2. the release PATCH's reply, the released object as the apiserver
 *      answers it, taken into the Job cache (decoded and resolved);
 *   3. the watch event echoing the release (the same object).
 * The PATCH body gpuq builds is the same in both builds and is not counted.
 *
 *   bench_release LINES POLICY_DIR count    one replay (for callgrind,
 *                                           --toggle-collect=bench_replay)
 *
 * Built twice by bench_release.sh: against this tree, and with
 * -DGPUQ_BENCH_BASELINE against the baseline commit's library, where
 * kube_patch handed the reply over as jansson's tree and controller_decode
 * dumped it to text to decode it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#ifdef CONTROLLER_RES_OF /* the Jobs' collection, by their row's kind */
#define CONTROLLER_RES_JOBS CONTROLLER_RES_OF(WORKLOAD_KIND_JOB)
#endif
#include "engine/engine.h"
#include "kube/kube.h"
#include "slurp.h"

static struct controller *fake_controller(policy_t *p)
{
	struct controller *c = calloc(1, sizeof(*c));
#ifdef GPUQ_BENCH_BASELINE /* the engine's own names of the core's config */
	engine_config_t cfg;
#else
	queue_config_t cfg;
#endif
	gpuq_diag_t d = {{0}};

	if (!c)
		exit(1);
	controller_opts_default(&c->o);
	controller_map_init(&c->jobs);
	controller_map_init(&c->groups);
	controller_map_init(&c->pod_group);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		controller_map_init(&c->objs[r]);
	c->policy = p;
	atomic_store(&c->leader, true);
#ifdef GPUQ_BENCH_BASELINE
	engine_config_default(&cfg);
	cfg.ready_scope = ENGINE_READY_GANGS;
#else
	queue_config_default(&cfg);
	cfg.ready_scope = QUEUE_READY_GANGS;
#endif
	cfg.release_on_evict = false;
	if (engine_open(p, &cfg, NULL, &c->e, &d)) {
		fprintf(stderr, "bench_release: core: %s\n", d.msg);
		exit(1);
	}
	return c;
}

/* A watch event, as the watch thread and the controller thread take it. */
static int on_event(void *ctx, const kube_event_t *ev)
{
	controller_cevent_t ce;

	controller_informer_event(CONTROLLER_RES_JOBS, &((struct controller *)ctx)->o.review_cfg,
				  ev, &ce);
	controller_handle(ctx, &ce);
	return 0;
}

/* The reply to a release PATCH of the Job whose uid it holds, taken into
 * the cache as controller/actuate.c's patch_answered takes it. */
static void on_reply(struct controller *c, const char *text, size_t len)
{
	gpuq_diag_t d = {{0}};
	workload_t *wl = NULL;
	controller_job_t *j;
	int rc;

#ifdef GPUQ_BENCH_BASELINE
	json_t *reply = json_loadb(text, len, 0, NULL); /* kube_patch's parse */

	rc = controller_decode(c, reply, &wl, &d);
	json_decref(reply);
#else
	rc = controller_decode(c, text, len, &wl, &d);
#endif
	j = wl ? controller_job(c, wl->uid) : NULL;
	if (rc || !j) {
		fprintf(stderr, "bench_release: reply: %s\n", rc ? d.msg : "no such Job");
		exit(1);
	}
	controller_job_take(c, j, wl);
}

/* The whole stream: lines of three (created event, reply, echo). */
__attribute__((noinline)) static size_t bench_replay(struct controller *c, char *buf)
{
	kube_watch_decoder_t *d = NULL;
	gpuq_diag_t diag = {{0}};
	size_t n = 0;
	char *line = buf, *end;

	if (kube_watch_decoder_create(0, on_event, c, &d))
		exit(1);
	kube_watch_decoder_fast(d, true);
	for (int k = 0; (end = strchr(line, '\n')); k = (k + 1) % 3, line = end + 1) {
		if (k == 1) {
			on_reply(c, line, (size_t)(end - line));
			n++;
		} else if (kube_watch_decoder_feed(d, line, (size_t)(end - line) + 1, &diag)) {
			fprintf(stderr, "bench_release: %s\n", diag.msg);
			exit(1);
		}
	}
	kube_watch_decoder_destroy(d);
	return n;
}

int main(int argc, char **argv)
{
	gpuq_diag_t d = {{0}};
	policy_t *p = NULL;
	struct controller *c;
	char *buf;
	size_t n, len;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_release LINES POLICY_DIR [count]\n");
		return 2;
	}
	gpuq_log_set_level(GPUQ_LOG_ERROR);
	buf = bench_slurp("bench_release", argv[1], &len);
	if (policy_load_dir(argv[2], NULL, &p, &d)) {
		fprintf(stderr, "bench_release: policy: %s\n", d.msg);
		return 1;
	}
	c = fake_controller(p);
	n = bench_replay(c, buf);
	printf("releases %zu\njobs %zu\n", n, c->jobs.n);
	free(buf);
	return 0;
}

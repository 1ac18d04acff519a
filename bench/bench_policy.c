/*
 * bench_policy: what one policy-object change costs the controller thread
 * with N workloads queued, for bench/bench_policy.sh (issue 22). A
 * controller with a store (a fresh LMDB directory) but no apiserver is given
 * a policy (Namespace team-a, PriorityClass, ResourceFlavor h100,
 * ClusterQueue cq selecting team-a by label, LocalQueue team-a/default) and
 * N suspended GPU Jobs queued to that LocalQueue, all as watch events through
 * kube/'s watch-stream decoder and the controller's own handling; one
 * admission cycle admits what the quota holds (a small share) and the store
 * is written whole. Then two changes are measured, each alternating between
 * two values:
 *   quota: a MODIFIED ClusterQueue cq whose nvidia.com/gpu nominalQuota
 *          differs from the last;
 *   label: a MODIFIED Namespace team-a whose cost-center label (read by no
 *          selector) differs from the last;
 * each as the controller thread takes it: controller_handle of the decoded
 * event, the snapshot rebuild the loop runs when the policy is dirty, and the
 * store commit the loop makes next (the whole store when a rebuild asked for
 * it). The watch thread's decode is outside; so is what follows later (the
 * cycle, acting on the touched workloads, status writes).
 *
 * Then (this tree only) a prediction pass as the controller thread runs it
 * every CONTROLLER_PREDICT_MS (controller_econ_step: the pass over a fork of
 * the core and its results applied to the core), best of ROUNDS, checked:
 * the first pending workload must have a predicted start after it; and a
 * build of the web view's snapshot (webui_snap_build, every second while
 * the web view or the visibility API is in use), best of ROUNDS, checked to
 * hold every workload. Issue 35: periodic work must not hold the thread
 * that releases.
 *
 *   bench_policy JOBS STATE_DIR ROUNDS   ms per change, best of ROUNDS
 *   bench_policy JOBS STATE_DIR count    one change of each, counted by
 *                                        callgrind (run with
 *                                        --instr-atstart=no: the setup
 *                                        runs uninstrumented; each change is
 *                                        a dump of its own, named by
 *                                        CALLGRIND_DUMP_STATS_AT)
 *
 * STATE_DIR must not exist (the store is created there). Every change is
 * checked: the ClusterQueue's quota in the core after a quota change must
 * be the new value, and the core must still hold all N workloads; any miss
 * exits 1 naming it. Built twice by bench_policy.sh: against this tree, and
 * with -DGPUQ_BENCH_BASELINE against the baseline commit's library, from
 * this one source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
/* callgrind's client requests (scripts/setup.sh installs valgrind); no-ops
 * outside valgrind */
#include <valgrind/callgrind.h>

#include "controller/internal.h"
#ifdef CONTROLLER_RES_OF /* the Jobs' collection, by their row's kind */
#define CONTROLLER_RES_JOBS CONTROLLER_RES_OF(WORKLOAD_KIND_JOB)
#endif
#include "engine/engine.h"
#include "kube/kube.h"

#define CHUNK_JOBS 2000		  /* Job events decoded per buffer (about 1.3 KB each) */
#define EVENT_MAX 4096		  /* one policy event's text, bytes */
#define MAP_MAX ((size_t)8 << 30) /* as the controller's store: 8 GiB */
#define QUOTA_GPUS 4000		  /* room for 266 Jobs of 15 GPUs on average: the rest wait */
#define QUOTA_GPUS_ALT 4032	  /* the other value of the quota change */

/* Where decoded events go: straight into the controller (setup), or kept
 * for the measured step (the watch thread's share done beforehand). */
typedef struct {
	struct controller *c;
	controller_res_t res;	   /* the collection the stream is */
	controller_cevent_t *keep; /* non-NULL: store the one event here */
	size_t events;		   /* events seen */
} feed_t;

typedef struct {
	double handle_ms, rebuild_ms, persist_ms, total_ms; /* one change */
	bool rebuilt;					    /* the policy was dirty */
	bool full;					    /* the commit rewrote everything */
} phase_t;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "bench_policy: %s: %s\n", what, why);
	exit(1);
}

static int on_event(void *ctx, const kube_event_t *ev)
{
	feed_t *f = ctx;
	controller_cevent_t ce;

	controller_informer_event(f->res, &f->c->o.review_cfg, ev, &ce);
	f->events++;
	if (f->keep) {
		*f->keep = ce;
		return 0;
	}
	controller_handle(f->c, &ce);
	return 0;
}

/* Decode buf (watch lines of collection res) as the watch thread does:
 * workload collections with the fast decoder, policy ones with jansson. */
static size_t feed(struct controller *c, controller_res_t res, const char *buf, size_t len,
		   controller_cevent_t *keep)
{
	feed_t f = {.c = c, .res = res, .keep = keep};
	kube_watch_decoder_t *d = NULL;
	gpuq_diag_t diag = {{0}};

	if (kube_watch_decoder_create(0, on_event, &f, &d))
		die("decoder", "no memory");
	if (res == CONTROLLER_RES_JOBS)
		kube_watch_decoder_fast(d, true);
	if (kube_watch_decoder_feed(d, buf, len, &diag))
		die("watch stream", diag.msg);
	kube_watch_decoder_destroy(d);
	return f.events;
}

static void feed_str(struct controller *c, controller_res_t res, const char *line)
{
	char buf[EVENT_MAX];
	int n = snprintf(buf, sizeof(buf), "%s\n", line);

	if (n < 0 || (size_t)n >= sizeof(buf) || feed(c, res, buf, (size_t)n, NULL) != 1)
		die("policy event", line);
}

/* The ClusterQueue as a watch event: gpus of nvidia.com/gpu, rv its
 * resourceVersion. */
static void cq_event(char *buf, size_t cap, const char *type, int gpus, unsigned rv)
{
	snprintf(buf, cap,
		 "{\"type\":\"%s\",\"object\":{\"apiVersion\":\"gpuq.dev/v1beta1\","
		 "\"kind\":\"ClusterQueue\",\"metadata\":{\"name\":\"cq\",\"uid\":\"cq-uid\","
		 "\"resourceVersion\":\"%u\",\"generation\":%u},\"spec\":{\"namespaceSelector\":"
		 "{\"matchLabels\":{\"gpuq.dev/tenant\":\"team-a\"}},\"resourceGroups\":[{"
		 "\"coveredResources\":[\"cpu\",\"memory\",\"nvidia.com/gpu\"],\"flavors\":[{"
		 "\"name\":\"h100\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"100000\"},"
		 "{\"name\":\"memory\",\"nominalQuota\":\"1000Ti\"},{\"name\":\"nvidia.com/gpu\","
		 "\"nominalQuota\":\"%d\"}]}]}]}}}\n",
		 type, rv, rv, gpus);
}

/* Namespace team-a as a watch event, its cost-center label `cost`. */
static void ns_event(char *buf, size_t cap, const char *type, const char *cost, unsigned rv)
{
	snprintf(buf, cap,
		 "{\"type\":\"%s\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
		 "\"metadata\":{\"name\":\"team-a\",\"uid\":\"ns-uid\",\"resourceVersion\":\"%u\","
		 "\"labels\":{\"gpuq.dev/tenant\":\"team-a\",\"kubernetes.io/metadata.name\":"
		 "\"team-a\",\"cost-center\":\"%s\"}},\"spec\":{\"finalizers\":[\"kubernetes\"]},"
		 "\"status\":{\"phase\":\"Active\"}}}\n",
		 type, rv, cost);
}

static void feed_policy(struct controller *c)
{
	char buf[EVENT_MAX];

	ns_event(buf, sizeof(buf), "ADDED", "cc-0", 10);
	feed(c, CONTROLLER_RES_NAMESPACES, buf, strlen(buf), NULL);
	feed_str(c, CONTROLLER_RES_PRIORITYCLASSES,
		 "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"scheduling.k8s.io/v1\","
		 "\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"training-high\","
		 "\"resourceVersion\":\"11\"},\"value\":1000}}");
	feed_str(c, CONTROLLER_RES_PRIORITYCLASSES,
		 "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"scheduling.k8s.io/v1\","
		 "\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"training-low\","
		 "\"resourceVersion\":\"15\"},\"value\":100}}");
	feed_str(c, CONTROLLER_RES_FLAVORS,
		 "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"gpuq.dev/v1beta1\","
		 "\"kind\":\"ResourceFlavor\",\"metadata\":{\"name\":\"h100\",\"resourceVersion\":"
		 "\"12\"},\"spec\":{\"nodeLabels\":{\"nvidia.com/gpu.product\":"
		 "\"NVIDIA-H100-80GB-HBM3\"}}}}");
	cq_event(buf, sizeof(buf), "ADDED", QUOTA_GPUS, 13);
	feed(c, CONTROLLER_RES_CLUSTERQUEUES, buf, strlen(buf), NULL);
	feed_str(c, CONTROLLER_RES_LOCALQUEUES,
		 "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"gpuq.dev/v1beta1\","
		 "\"kind\":\"LocalQueue\",\"metadata\":{\"name\":\"default\",\"namespace\":"
		 "\"team-a\",\"resourceVersion\":\"14\"},\"spec\":{\"clusterQueue\":\"cq\"}}}");
}

/* One suspended GPU Job queued to team-a/default, as an ADDED watch event
 * (4 pods of 8, 4, 2 or 1 GPUs in turn; priority class training-high, every
 * third training-low: a queue of mixed shapes and priorities; the flavor's
 * node selector). */
static int job_event(char *out, size_t cap, size_t i)
{
	const char *prio = i % 3 == 2 ? "low" : "high";
	unsigned gpus = 8u >> (i % 4);

	return snprintf(
	    out, cap,
	    "{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
	    "\"metadata\":{\"name\":\"train-%06zu\",\"namespace\":\"team-a\",\"uid\":"
	    "\"0f6c1c55-0000-4a7e-9d2b-%012zx\",\"resourceVersion\":\"%zu\",\"generation\":1,"
	    "\"creationTimestamp\":\"2026-11-%02zuT%02zu:%02zu:%02zuZ\",\"labels\":{"
	    "\"gpuq.dev/queue-name\":\"default\",\"experiment\":\"sft\"}},\"spec\":{"
	    "\"parallelism\":4,\"completions\":4,\"completionMode\":\"Indexed\","
	    "\"backoffLimit\":3,\"suspend\":true,\"template\":{\"metadata\":{\"labels\":{"
	    "\"app\":\"train\"}},\"spec\":{\"restartPolicy\":\"Never\",\"priorityClassName\":"
	    "\"training-%s\",\"nodeSelector\":{\"nvidia.com/gpu.product\":"
	    "\"NVIDIA-H100-80GB-HBM3\"},\"tolerations\":[{\"key\":\"nvidia.com/gpu\","
	    "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":"
	    "\"trainer\",\"image\":\"nvcr.io/nvidia/pytorch:24.05-py3\",\"resources\":{"
	    "\"requests\":{\"cpu\":\"48\",\"memory\":\"640Gi\",\"nvidia.com/gpu\":\"%u\"},"
	    "\"limits\":{\"memory\":\"640Gi\",\"nvidia.com/gpu\":\"%u\"}}}]}}},\"status\":{}}}\n",
	    i, i, 1000 + i, 10 + i / 86400, i / 3600 % 24, i / 60 % 60, i % 60, prio, gpus, gpus);
}

static void feed_jobs(struct controller *c, size_t n)
{
	size_t cap = (size_t)CHUNK_JOBS * 2048, len = 0, fed = 0;
	char *buf = malloc(cap);

	if (!buf)
		die("jobs", "no memory");
	for (size_t i = 0; i < n; i++) {
		int k = job_event(buf + len, cap - len, i);
		if (k < 0 || (size_t)k >= cap - len)
			die("jobs", "event too long");
		len += (size_t)k;
		if ((i + 1) % CHUNK_JOBS == 0 || i + 1 == n) {
			fed += feed(c, CONTROLLER_RES_JOBS, buf, len, NULL);
			len = 0;
		}
	}
	free(buf);
	if (fed != n)
		die("jobs", "the decoder saw fewer events than were written");
}

#ifdef GPUQ_BENCH_BASELINE
/* The baseline's controller held a bare core and store. */
#define T_TERM STORE_TYPE_DRIVER_FIRST /* the controller's own record type (loop.c) */
#define CORE(c) ((c)->q)

static int core_open(struct controller *c, const char *state_dir, gpuq_diag_t *d)
{
	store_opts_t so;

	c->qcfg = c->o.core;
	c->qcfg.release_on_evict = false;
	c->qcfg.ready_scope = QUEUE_READY_GANGS;
	c->qcfg.budget_interval_ms = CONTROLLER_BUDGET_MS;
	store_opts_init(&so);
	engine_store_types(&so);
	so.types[T_TERM] = "controller";
	so.nosync = true;
	so.map_max = MAP_MAX;
	return store_open(state_dir, &so, &c->store, d);
}

static void core_close(struct controller *c)
{
	queue_destroy(c->q);
	store_close(c->store);
}

static int cycle(struct controller *c, queue_result_t *res)
{
	return queue_cycle_run(c->q, controller_now(c), res);
}

static void commit_full_next(struct controller *c)
{
	c->persist_full = true;
}

/* The loop's commit after a change: the whole store when the rebuild asked
 * for it, else what the core changed (controller/loop.c's persist). */
static int persist(struct controller *c, bool *full)
{
	gpuq_diag_t d = {{0}};
	int rc;

	*full = c->persist_full;
	if (!c->q || (queue_dirty_count(c->q) == 0 && !c->persist_full))
		return GPUQ_OK;
	if (c->persist_full) {
		rc = engine_persist_full(c->store, c->q, NULL, &d);
		if (!rc)
			c->persist_full = false;
	} else {
		rc = engine_persist(c->store, c->q, NULL, &d);
	}
	if (rc)
		fprintf(stderr, "bench_policy: store commit: %s\n", d.msg);
	return rc;
}
#else
/* The controller holds an engine (its store opened now, its core built by
 * the first snapshot). */
#define CORE(c) engine_core((c)->e)

static int core_open(struct controller *c, const char *state_dir, gpuq_diag_t *d)
{
	queue_config_t cfg = c->o.core;
	engine_opts_t eo;

	cfg.release_on_evict = false;
	cfg.ready_scope = QUEUE_READY_GANGS;
	cfg.budget_interval_ms = CONTROLLER_BUDGET_MS;
	engine_opts_init(&eo);
	eo.state_dir = state_dir;
	eo.driver_types[0] = "controller"; /* the controller's own record type (loop.c) */
	eo.nosync = true;
	eo.map_max = MAP_MAX;
	return engine_open(NULL, &cfg, &eo, &c->e, d);
}

static void core_close(struct controller *c)
{
	engine_close(c->e);
}

/* engine_step's act hook: the cycle's result into *ctx. */
static void take(void *ctx, engine_phase_t phase, const queue_result_t *res)
{
	if (phase == ENGINE_STEP_CYCLE)
		*(queue_result_t *)ctx = *res;
}

/* The controller's step: a tick and one cycle, committed; *res the cycle's. */
static int cycle(struct controller *c, queue_result_t *res)
{
	engine_step_opts_t so = {.cycles = 1, .cycle_due = true, .act = take, .ctx = res};

	memset(res, 0, sizeof(*res));
	return engine_step(c->e, controller_now(c), &so, NULL, NULL);
}

static void commit_full_next(struct controller *c)
{
	engine_commit_full_next(c->e);
}

/* The loop's commit after a change (controller/loop.c's persist): the
 * whole store when the rebuild asked for it, else what the core changed. */
static int persist(struct controller *c, bool *full)
{
	gpuq_diag_t d = {{0}};
	int rc;

	*full = engine_commit_full_due(c->e);
	if (!engine_commit_due(c->e))
		return GPUQ_OK;
	rc = engine_commit(c->e, NULL, NULL, &d);
	if (rc)
		fprintf(stderr, "bench_policy: store commit: %s\n", d.msg);
	return rc;
}
#endif

static struct controller *controller_new(const char *state_dir)
{
	struct controller *c = calloc(1, sizeof(*c));
	gpuq_diag_t d = {{0}};

	if (!c)
		die("controller", "no memory");
	controller_opts_default(&c->o);
	c->o.state_dir = state_dir;
	controller_map_init(&c->jobs);
	controller_map_init(&c->groups);
	controller_map_init(&c->sets);
	controller_map_init(&c->pod_group);
	controller_map_init(&c->pods_early);
	controller_map_init(&c->econ_runs);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		controller_map_init(&c->objs[r]);
	if (qmetrics_create(&c->metrics))
		die("metrics", "no memory");
	atomic_store(&c->leader, true);
	if (core_open(c, state_dir, &d))
		die("store", d.msg);
	c->epoch_mono_ms = gpuq_mono_ms();
	c->epoch_wall_ms = kube_now_ms();
	return c;
}

/* What the loop does between changes and is not measured: it acts on the
 * touched workloads and writes their status, emptying both lists. */
static void drain(struct controller *c)
{
	for (size_t i = 0; i < c->n_touched; i++) {
		controller_job_t *j = controller_job(c, c->touched[i]);
		if (j)
			j->touched = false;
		free(c->touched[i]);
	}
	c->n_touched = 0;
	for (size_t i = 0; i < c->n_explain; i++) {
		controller_job_t *j = controller_job(c, c->explain[i]);
		if (j)
			j->explain_queued = false;
		free(c->explain[i]);
	}
	c->n_explain = 0;
}

/* The measured step: one decoded policy event through the controller
 * thread, the rebuild it calls for, the commit after. */
__attribute__((noinline)) static int bench_change(struct controller *c, controller_cevent_t *ev,
						  phase_t *ph)
{
	double t0 = now_ms(), t1, t2;
	int rc = GPUQ_OK;

	controller_handle(c, ev);
	t1 = now_ms();
	ph->rebuilt = c->policy_dirty;
	if (c->policy_dirty)
		rc = controller_snapshot_rebuild(c);
	t2 = now_ms();
	if (!rc)
		rc = persist(c, &ph->full);
	ph->handle_ms = t1 - t0;
	ph->rebuild_ms = t2 - t1;
	ph->persist_ms = now_ms() - t2;
	ph->total_ms = now_ms() - t0;
	return rc;
}

typedef struct {
	uint32_t cq, flavor, gpu; /* ids in the core */
	size_t workloads;	  /* live workloads in the core */
	queue_stats_t st;	  /* cq's counts */
	int64_t nominal;	  /* cq's nvidia.com/gpu nominalQuota on h100 */
} core_state_t;

static void core_read(const struct controller *c, core_state_t *s)
{
	const queue_t *q = CORE(c);
	queue_quota_view_t v;

	memset(s, 0, sizeof(*s));
	if (!q || queue_cq_find(q, "cq", &s->cq) || queue_flavor_find(q, "h100", &s->flavor) ||
	    queue_resource_find(q, "nvidia.com/gpu", &s->gpu) || queue_cq_stats(q, s->cq, &s->st) ||
	    queue_cq_quota(q, s->cq, s->flavor, s->gpu, &v))
		die("core", "no ClusterQueue cq with nvidia.com/gpu on h100");
	s->nominal = v.nominal;
	for (queue_wl_t w = queue_workload_next(q, QUEUE_NONE); w != QUEUE_NONE;
	     w = queue_workload_next(q, w))
		s->workloads++;
}

/* Build the controller with n Jobs queued, one cycle run, all committed. */
static struct controller *setup(const char *state_dir, size_t n, core_state_t *s)
{
	struct controller *c = controller_new(state_dir);
	queue_result_t res;
	bool full;

	feed_policy(c);
	if (controller_snapshot_rebuild(c))
		die("policy", "the snapshot did not build (see the log above)");
	feed_jobs(c, n);
	if (cycle(c, &res))
		die("cycle", "failed");
	commit_full_next(c);
	if (persist(c, &full))
		die("store", "the first commit failed");
	drain(c);
	core_read(c, s);
	if (s->workloads != n || s->st.pending + s->st.admitted != n) {
		fprintf(stderr,
			"bench_policy: %zu Jobs fed but the core holds %zu (%u pending, %u "
			"admitted)\n",
			n, s->workloads, s->st.pending, s->st.admitted);
		exit(1);
	}
	return c;
}

/* Whether the cached Namespace team-a carries cost-center=cost. */
static bool ns_cost_is(struct controller *c, const char *cost)
{
	const controller_pobj_t *o =
	    controller_map_get(&c->objs[CONTROLLER_RES_NAMESPACES], "team-a");
	const json_t *labels =
	    o ? json_object_get(json_object_get(o->obj, "metadata"), "labels") : NULL;
	const char *v = json_string_value(json_object_get(labels, "cost-center"));

	return v && !strcmp(v, cost);
}

/* One change of each kind, round r: decoded outside, measured inside, its
 * effect on the core checked after. */
static void round_run(struct controller *c, unsigned r, size_t n, int64_t gpu_unit, bool count,
		      phase_t *quota, phase_t *label)
{
	char buf[EVENT_MAX], cost[32];
	controller_cevent_t ev;
	int gpus = r % 2 ? QUOTA_GPUS : QUOTA_GPUS_ALT;
	uint64_t gen = c->policy_generation;
	core_state_t s;

	cq_event(buf, sizeof(buf), "MODIFIED", gpus, 100 + 2 * r);
	if (feed(c, CONTROLLER_RES_CLUSTERQUEUES, buf, strlen(buf), &ev) != 1)
		die("quota change", "no event");
	drain(c);
	if (count) {
		CALLGRIND_START_INSTRUMENTATION;
		CALLGRIND_ZERO_STATS;
	}
	if (bench_change(c, &ev, quota))
		die("quota change", "failed");
	if (count) {
		CALLGRIND_DUMP_STATS_AT("quota");
		CALLGRIND_STOP_INSTRUMENTATION;
	}
	core_read(c, &s);
	if (c->policy_generation != gen + 1)
		die("quota change", "no new policy snapshot was built");
	if (s.nominal != (int64_t)gpus * gpu_unit)
		die("quota change", "the core's ClusterQueue cq does not show the new quota");
	if (s.workloads != n)
		die("quota change", "the core lost workloads");

	snprintf(cost, sizeof(cost), "cc-%u", r + 1);
	ns_event(buf, sizeof(buf), "MODIFIED", cost, 101 + 2 * r);
	if (feed(c, CONTROLLER_RES_NAMESPACES, buf, strlen(buf), &ev) != 1)
		die("label change", "no event");
	gen = c->policy_generation;
	drain(c);
	if (count) {
		CALLGRIND_START_INSTRUMENTATION;
		CALLGRIND_ZERO_STATS;
	}
	if (bench_change(c, &ev, label))
		die("label change", "failed");
	if (count) {
		CALLGRIND_DUMP_STATS_AT("label");
		CALLGRIND_STOP_INSTRUMENTATION;
	}
	core_read(c, &s);
	if (!ns_cost_is(c, cost) || c->policy_generation > gen + 1)
		die("label change", "the cached Namespace team-a does not carry the new label");
	if (s.workloads != n)
		die("label change", "the core lost workloads");
}

static void print_phase(const char *what, const phase_t *p)
{
	printf("%s_ms %.3f\n%s_handle_ms %.3f\n%s_rebuild_ms %.3f\n%s_persist_ms %.3f\n"
	       "%s_rebuilt %d\n%s_persist_full %d\n",
	       what, p->total_ms, what, p->handle_ms, what, p->rebuild_ms, what, p->persist_ms,
	       what, p->rebuilt, what, p->full);
}

#ifndef GPUQ_BENCH_BASELINE
/* One prediction pass as the loop runs it when it is due: the controller
 * thread's part, ms (the steps that begin it and take its result, the run
 * forward on the runner's thread between them not counted); dies when no
 * pending workload got a predicted start. */
static double predict_round(struct controller *c)
{
	const queue_t *q = CORE(c);
	queue_workload_view_t v;
	double t0, ms = 0;

	c->econ_predict_ms = 0; /* due now */
	do {			/* begun, then taken once run forward on the runner's thread */
		t0 = now_ms();
		controller_econ_step(c);
		ms += now_ms() - t0;
		if (controller_econ_busy(c))
			usleep(200);
	} while (controller_econ_busy(c));
	for (queue_wl_t w = queue_workload_next(q, QUEUE_NONE); w != QUEUE_NONE;
	     w = queue_workload_next(q, w))
		if (!queue_workload_view(q, w, &v) && v.state == QUEUE_WL_PENDING &&
		    v.predicted_ms >= 0)
			return ms;
	die("prediction pass", "no pending workload has a predicted start");
	return ms;
}

/* One snapshot as the loop builds it for the web view alone (no
 * visibility request lately: no list of every pending workload), published
 * (webui_publish_fixed: built whatever the idle clock says), ms. */
static double pages_round(struct controller *c, webui_t *ui)
{
	double t0 = now_ms();

	if (webui_publish_fixed(ui, CORE(c), controller_now(c)))
		die("web view snapshot", "failed");
	return now_ms() - t0;
}

/* One metrics snapshot (qmetrics_publish, every second while leading,
 * whether anything scrapes or not), ms. */
static double metrics_round(struct controller *c)
{
	double t0 = now_ms();

	qmetrics_leader_set(c->metrics, true);
	if (qmetrics_publish(c->metrics, CORE(c)))
		die("metrics snapshot", "failed");
	return now_ms() - t0;
}

/* One build of the web view's snapshot, as the loop makes it every second
 * while the web view or the visibility API is in use (every pending
 * workload in it, for the visibility API; ui holds the last build's order,
 * as the loop's does), ms; dies when its cluster page does not count the n
 * pending workloads. */
static double snap_round(struct controller *c, webui_t *ui, size_t n)
{
	webui_snap_t *s = NULL;
	webui_access_t all = {.cluster = true};
	unsigned status = 0;
	char *body = NULL, want[64];
	size_t len;
	double t0 = now_ms();

	if (webui_snap_build(ui, CORE(c), controller_now(c), &s))
		die("web view snapshot", "failed");
	t0 = now_ms() - t0;
	snprintf(want, sizeof(want), "\"pending\":%zu", n);
	if (webui_render(s, "/api/v1/cluster", &all, &status, &body, &len) || status != 200 ||
	    !strstr(body, want))
		die("web view snapshot", "its cluster page does not count every pending workload");
	free(body);
	webui_snap_unref(s);
	return t0;
}
#endif

static void controller_free(struct controller *c)
{
	drain(c);
	free(c->touched);
	free(c->explain);
	controller_jobs_free_all(c);
	controller_pods_free_all(c);
	controller_sets_free_all(c);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++) {
		size_t pos = 0;
		controller_map_slot_t *s;
		while ((s = controller_map_next(&c->objs[r], &pos))) {
			controller_pobj_t *o = s->value;
			json_decref(o->obj);
			free(o);
		}
		controller_map_deinit(&c->objs[r]);
	}
	controller_econ_free(c);
	core_close(c);
	qmetrics_destroy(c->metrics);
	policy_unref(c->policy);
	free(c);
}

int main(int argc, char **argv)
{
	bool count = argc > 3 && !strcmp(argv[3], "count");
	long rounds = argc > 3 && !count ? strtol(argv[3], NULL, 10) : 1;
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	phase_t best_q = {0}, best_l = {0};
	struct controller *c;
	core_state_t s0;
	int64_t gpu_unit;
	double t0;

	if (argc < 4 || n < 0 || rounds < 1 || rounds > 1000) {
		fprintf(stderr, "usage: bench_policy JOBS STATE_DIR ROUNDS|count\n");
		return 2;
	}
	gpuq_log_set_level(GPUQ_LOG_ERROR);
	t0 = now_ms();
	c = setup(argv[2], (size_t)n, &s0);
	/* the core's unit of nvidia.com/gpu, from the quota it was given */
	gpu_unit = s0.nominal / QUOTA_GPUS;
	if (gpu_unit <= 0 || s0.nominal != gpu_unit * QUOTA_GPUS)
		die("core", "the ClusterQueue's quota is not the one written");
	printf("jobs %ld\nsetup_ms %.0f\ncore_workloads %zu\npending %u\nadmitted %u\n", n,
	       now_ms() - t0, s0.workloads, s0.st.pending, s0.st.admitted);
	for (unsigned r = 0; r < (unsigned)rounds; r++) {
		phase_t q = {0}, l = {0};

		round_run(c, r, (size_t)n, gpu_unit, count, &q, &l);
		if (!r || q.total_ms < best_q.total_ms)
			best_q = q;
		if (!r || l.total_ms < best_l.total_ms)
			best_l = l;
	}
	print_phase("quota", &best_q);
	print_phase("label", &best_l);
#ifndef GPUQ_BENCH_BASELINE
	if (!count) {
		double best = 0;

		for (unsigned r = 0; r < (unsigned)rounds; r++) {
			double t = predict_round(c);

			if (!r || t < best)
				best = t;
		}
		printf("predict_ms %.3f\n", best);
		webui_t *ui = NULL;

		if (webui_create(WEBUI_AUTH_NONE, NULL, &ui, NULL))
			die("web view snapshot", "no web view");
		for (unsigned r = 0; r < (unsigned)rounds; r++) {
			double t = snap_round(c, ui, s0.st.pending);

			if (!r || t < best)
				best = t;
		}
		printf("webui_snap_ms %.3f\n", best);
		webui_routes_set(ui, true, false); /* the pages only */
		webui_leader_set(ui, true);
		for (unsigned r = 0; r < (unsigned)rounds; r++) {
			double t = pages_round(c, ui);

			if (!r || t < best)
				best = t;
		}
		printf("webui_pages_ms %.3f\n", best);
		for (unsigned r = 0; r < (unsigned)rounds; r++) {
			double t = metrics_round(c);

			if (!r || t < best)
				best = t;
		}
		printf("metrics_ms %.3f\n", best);
		webui_destroy(ui);
	}
#endif
	controller_free(c);
	return 0;
}

/* controller/loop.c: the controller thread. It drains watch events into the
 * caches, publishes policy snapshots, runs the core's cycles, commits their
 * records, then acts; and it holds (or waits for) the Lease. */
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "engine/engine.h"
#include "predict/predict.h"

#define BATCH_MAX 4096 /* events taken from the queue at once */
#define SWEEP_MS 30000 /* compare every Job with the core this often */
#define TRIM_MS                                                                                    \
	30000			     /* give freed heap back to the system this often (a burst of  \
					watch events parses far more than the cache keeps) */
#define DB_MAP_MAX ((size_t)8 << 30) /* state store cap: 8 GiB */
/* Queue metrics are published this often while leading (O(live workloads)
 * each time; Prometheus scrapes every 15-60 s). */
#define METRICS_MS 1000
/* a pass longer than the web view's publish interval is said, at most once
 * a minute */
#define SLOW_PASS_NS (1000ULL * 1000000ULL)
#define SLOW_SAID_MS 60000
/* The controller's own store record: key "term", the Lease's transitions
 * when this replica last took it (decimal). */
#define T_TERM ENGINE_TYPE_DRIVER_FIRST

void controller_opts_default(controller_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	kube_client_opts_default(&o->client);
	o->leader_elect = true;
	o->lease_namespace = "gpuq-system";
	o->lease_name = "gpuq-controller";
	o->identity = "gpuq";
	o->lease_duration_s = 15;
	o->cycle_interval_ms = 1000;
	o->usage_checkpoint_ms = 60000;
	o->predict_interval_ms = CONTROLLER_PREDICT_MS;
	o->predict_workloads = PREDICT_WORKLOADS_DEFAULT;
	queue_config_default(&o->core);
}

static void touch_uid(struct controller *c, const char *uid)
{
	controller_touch_key(c, uid);
}

/* Compare and act on every touched Job, while the Lease holds: the rest
 * stay touched (a replica that stands by drops them; the sweep after it
 * leads again compares everything). */
static void act_touched(struct controller *c)
{
	size_t i;

	for (i = 0; i < c->n_touched; i++) {
		controller_job_t *j;
		controller_pgroup_t *g;
		if (!kube_fence_held(c->fence, gpuq_mono_ms()))
			break;
		j = controller_job(c, c->touched[i]);
		g = j ? NULL : controller_group(c, c->touched[i]);
		if (j) {
			j->touched = false;
			controller_actuate_job(c, j);
		} else if (g) {
			g->touched = false;
			controller_actuate_group(c, g);
		}
		free(c->touched[i]);
	}
	memmove(c->touched, c->touched + i, (c->n_touched - i) * sizeof(*c->touched));
	c->n_touched -= i;
	controller_actuate_flush(c);
}

static void sweep(struct controller *c)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&c->jobs, &pos)))
		controller_touch(c, s->value);
	pos = 0;
	while ((s = controller_map_next(&c->groups, &pos)))
		controller_touch_key(c, s->key);
}

static void lead_set(struct controller *c, bool is);
static void untouch_all(struct controller *c);

/* The store kept failing: stop acting for good, have the Lease thread give
 * the Lease up (a standby takes it at its next round), and tell the daemon,
 * whose /healthz fails from now on (the kubelet restarts this replica,
 * which opens its store afresh or moves a corrupt one aside). */
static void give_up(struct controller *c, const char *why)
{
	char text[GPUQ_DIAG_MAX + 128];

	snprintf(text, sizeof(text),
		 "state store %s: %d commits failed in a row, the store reopened after each: %s",
		 c->o.state_dir ? c->o.state_dir : "(memory)", CONTROLLER_STORE_TRIES, why);
	gpuq_log(GPUQ_LOG_ERROR, "controller",
		 "%s; giving the Lease up and acting on nothing from now on (/healthz fails: a "
		 "restart opens the store afresh)",
		 text);
	atomic_store(&c->gave_up, true);
	kube_fence_drop(c->fence); /* no write of this replica's starts from here */
	if (atomic_load(&c->leader))
		lead_set(c, false);
	untouch_all(c);
	if (c->o.give_up)
		c->o.give_up(c->o.give_up_ctx, text);
}

/* A commit failed (why): act on nothing, reopen the store (a corrupt one is
 * moved aside, the queues then rebuilt from the cluster by the term check)
 * and try again CONTROLLER_STORE_RETRY_MS later; give up after
 * CONTROLLER_STORE_TRIES in a row. */
static void commit_failed(struct controller *c, const char *why)
{
	gpuq_diag_t diag = {{0}};
	uint32_t n = ++c->commit_failures;

	gpuq_log(GPUQ_LOG_ERROR, "controller",
		 "store commit failed (%u of %d in a row), acting on nothing until one "
		 "succeeds: %s",
		 n, CONTROLLER_STORE_TRIES, why);
	if (n >= CONTROLLER_STORE_TRIES) {
		give_up(c, why);
		return;
	}
	c->commit_retry_ms = gpuq_mono_ms() + CONTROLLER_STORE_RETRY_MS;
	if (engine_store_reopen(c->e, &diag)) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "reopening the state store: %s",
			 diag.msg[0] ? diag.msg : "failed");
		return;
	}
	if (engine_store_moved_aside(c->e)) {
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "the state store was corrupt: moved aside to %s; rebuilding the queues "
			 "from the cluster",
			 engine_store_moved_aside(c->e));
		c->check_term = true; /* no term in the new store: the rebuild path */
	}
}

/* A commit's outcome (rc, after ns): observed; a failure handled
 * (commit_failed), a success after failures said. */
static void commit_done(struct controller *c, int rc, uint64_t ns, const gpuq_diag_t *diag)
{
	c->step_commit_ns += ns;
	qmetrics_commit_observe(c->metrics, rc == GPUQ_OK, ns);
	if (rc) {
		commit_failed(c, diag->msg[0] ? diag->msg : gpuq_strerror(rc));
		return;
	}
	if (c->commit_failures)
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "store commit succeeded after %u failed: acting again",
			 c->commit_failures);
	c->commit_failures = 0;
}

/* Commit the core's changed records and what stage adds, one try at most
 * every CONTROLLER_STORE_RETRY_MS after a failure (GPUQ_EAGAIN meanwhile);
 * nothing is acted on before this succeeds. */
static int commit(struct controller *c, engine_stage_fn stage, void *ctx)
{
	gpuq_diag_t diag = {{0}};
	uint64_t t0;
	int rc;

	if (atomic_load(&c->gave_up) || (c->commit_failures && gpuq_mono_ms() < c->commit_retry_ms))
		return GPUQ_EAGAIN;
	t0 = gpuq_mono_ns();
	rc = engine_commit(c->e, stage, ctx, &diag);
	commit_done(c, rc, gpuq_mono_ns() - t0, &diag);
	return rc;
}

/* Commit the core's changed records; nothing is acted on before this. */
static int persist(struct controller *c)
{
	if (!engine_commit_due(c->e))
		return GPUQ_OK;
	return commit(c, NULL, NULL);
}

/* A cycle's (or tick's) admissions and evictions into the queue metrics. */
static void count(struct controller *c, const queue_result_t *res, int64_t now)
{
	if (c->o.ui)
		webui_events_note(c->o.ui, engine_core(c->e), res, now);
	controller_econ_result(c, res); /* budgets' and idle GPUs' Events */
	for (size_t i = 0; i < res->n_evictions; i++)
		qmetrics_eviction_count(c->metrics, engine_core(c->e), &res->evictions[i]);
	for (size_t i = 0; i < res->n_admissions; i++) {
		const controller_job_t *j = controller_job(c, res->admissions[i].uid);
		qmetrics_admission_count(c->metrics, engine_core(c->e), &res->admissions[i],
					 j ? j->requeued_ms : 0, now);
	}
}

/* The step's clock (engine_step_opts_t.clock_ns). */
static uint64_t step_clock(void *ctx)
{
	(void)ctx;
	return gpuq_mono_ns();
}

/* engine_step's book hook: a result into the metrics, the Jobs it touched
 * (patched in act_touched once committed) and the statuses it changed. */
static int book(void *ctx, engine_phase_t phase, const queue_result_t *res, gpuq_diag_t *diag)
{
	struct controller *c = ctx;
	int64_t now = controller_now(c);

	(void)diag;
	count(c, res, now);
	if (phase == ENGINE_STEP_TICK) {
		for (size_t i = 0; i < res->n_evictions; i++)
			touch_uid(c, res->evictions[i].victim_uid);
		return GPUQ_OK;
	}
	c->step_admitted = res->n_admissions > 0;
	for (size_t i = 0; i < res->n_admissions; i++) {
		touch_uid(c, res->admissions[i].uid);
		controller_status_note(c, res->admissions[i].uid);
	}
	for (size_t i = 0; i < res->n_evictions; i++) {
		touch_uid(c, res->evictions[i].victim_uid);
		controller_status_note(c, res->evictions[i].victim_uid);
	}
	for (size_t i = 0; i < res->n_changes; i++)
		controller_status_note(c, res->changes[i].uid);
	return GPUQ_OK;
}

/* engine_step's act hook, once committed: the result's Events (queued; the
 * patches follow in act_touched). */
static void act(void *ctx, engine_phase_t phase, const queue_result_t *res)
{
	(void)phase;
	controller_actuate_result(ctx, res);
}

/* One step of the engine: a tick and one cycle at controller_now, committed
 * before anything is acted on. While a failed commit waits for its retry
 * (commit) the core does not step: it decides nothing the store cannot
 * hold. */
static void cycle(struct controller *c)
{
	engine_step_opts_t so = {.cycles = 1,
				 .cycle_due = true,
				 .book = book,
				 .act = act,
				 .clock_ns = step_clock,
				 .ctx = c};
	engine_step_report_t rep;
	gpuq_diag_t diag = {{0}};
	int rc;

	c->core_dirty = false;
	c->last_cycle_ms = gpuq_mono_ms();
	if (atomic_load(&c->gave_up) || (c->commit_failures && gpuq_mono_ms() < c->commit_retry_ms))
		return;
	c->step_admitted = false;
	/* On GPUQ_ENOMEM the core stopped early but what it did is booked,
	   committed and acted on; the rest goes again in the next cycle. */
	rc = engine_step(c->e, controller_now(c), &so, &rep, &diag);
	qmetrics_cycle_observe(c->metrics, c->step_admitted, rep.core_ns);
	if (rep.commit_tried)
		commit_done(c, rep.commit_rc, rep.commit_ns, &diag);
	if (rep.core_rc) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "step: %s", gpuq_strerror(rep.core_rc));
		c->core_dirty = true; /* go again soon */
	} else if (rc && !rep.commit_rc) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "step: %s",
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	}
}

/* Drop the touched list (a replica standing by acts on nothing). */
static void untouch_all(struct controller *c)
{
	for (size_t i = 0; i < c->n_touched; i++) {
		controller_job_t *j = controller_job(c, c->touched[i]);
		controller_pgroup_t *g = controller_group(c, c->touched[i]);
		if (j)
			j->touched = false;
		if (g)
			g->touched = false;
		free(c->touched[i]);
	}
	c->n_touched = 0;
}

static void lead_set(struct controller *c, bool is)
{
	atomic_store(&c->leader, is);
	qmetrics_leader_set(c->metrics, is); /* a follower shows no queue series */
	controller_usage_lost(c);	     /* a new term merges the checkpoints before writing */
	if (c->o.ui)
		webui_leader_set(c->o.ui, is); /* a follower's web API answers 503 */
}

/* Follow the Lease thread: lead while the fence holds. A term that changed
 * while this thread was busy (the lease lapsed and was taken again, maybe
 * after another replica led) is a step down and a new start, term check
 * included. */
static void follow(struct controller *c)
{
	/* held first, then the term: a hold between the two reads is then seen
	 * as the newer term, never as the older one */
	bool is = !atomic_load(&c->gave_up) && kube_fence_held(c->fence, gpuq_mono_ms());
	uint64_t term = kube_fence_term(c->fence);
	bool was = atomic_load(&c->leader);

	controller_elect_follow(c);
	if (was && (!is || term != c->lease_term)) {
		if (is)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "%s: the Lease lapsed and was taken again: starting over",
				 c->o.identity);
		else if (strcmp(c->lease.holder, c->o.identity) == 0)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "%s lost the lease: it ran out before a renewal succeeded; "
				 "standing by",
				 c->o.identity);
		else
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "%s lost the lease to \"%s\": standing by", c->o.identity,
				 c->lease.holder);
		lead_set(c, false);
		untouch_all(c);
		was = false;
	}
	if (is && !was) {
		gpuq_log(GPUQ_LOG_INFO, "controller", "%s leads: admitting", c->o.identity);
		c->lease_term = term;
		lead_set(c, true);
		controller_swriter_forget(c->swriter); /* another leader may have written since */
		c->core_dirty = true;
		c->check_term = c->o.leader_elect;
		sweep(c);
	}
}

/* On taking the lease: the store is this replica's own, written while it
 * led. If another replica led since (the Lease's transitions moved on from
 * the count recorded with the store), what the store says may be stale: a
 * Job it shows admitted may have been preempted meanwhile. Then the core is
 * rebuilt from the cluster alone (running Jobs adopted from their
 * annotations, waiting ones queued) and the store rewritten. */
/* Stage the term record (ctx: its decimal text) into the commit's batch. */
static int stage_term(void *ctx, engine_batch_t *b)
{
	const char *want = ctx;

	return engine_record_put(b, T_TERM, "term", 4, want, strlen(want));
}

static void term_check(struct controller *c)
{
	char want[32];
	void *val = NULL;
	size_t len = 0;
	bool stale;
	gpuq_diag_t diag = {{0}};

	snprintf(want, sizeof(want), "%u", c->lease.transitions);
	stale = engine_record_get(c->e, T_TERM, "term", 4, &val, &len) != GPUQ_OK ||
		len != strlen(want) || memcmp(val, want, len) != 0;
	if (stale) {
		gpuq_log(GPUQ_LOG_INFO, "controller", "%s: rebuilding the queues from the cluster",
			 val ? "another replica led since this store was written"
			     : "this store holds no term (a new store, or one moved aside)");
		if (engine_core_reset(c->e, &diag) != GPUQ_OK) {
			gpuq_log(GPUQ_LOG_ERROR, "controller", "core build: %s", diag.msg);
			return;
		}
		controller_snapshot_seed_usage(c); /* the history the other replica wrote */
		(void)qmetrics_core_set(c->metrics,
					engine_core(c->e)); /* no memory: no queue series */
		controller_nodes_feed(c, true); /* before the workloads: placements name them */
		controller_jobs_resync(c, NULL);
		controller_sets_resync(c, NULL);
		controller_pods_resync(c, NULL);
	}
	free(val);
	/* the term goes with the core's records it vouches for, before any act */
	if (commit(c, stage_term, want) != GPUQ_OK)
		return;
	c->check_term = false;
}

/* Whether every collection has listed once, or said it is not served (the
 * first snapshot waits for that much; a kind that comes later joins when it
 * lists). */
static bool all_listed(const struct controller *c)
{
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		if (controller_res_at(r).path && !c->listed[r] && !c->unserved[r])
			return false;
	return true;
}

/* ev into the cache of its collection: the Nodes', the policy's, else the one its
 * kind's row says holds it (a set's, the Pods held by their own gates,
 * the parents held by their suspend field). */
static void dispatch(struct controller *c, controller_cevent_t *ev)
{
	const controller_res_info_t res = controller_res_at(ev->res);
	const workload_integration_t *in = workload_integration(res.kind);

	if (ev->res == CONTROLLER_RES_NODES)
		controller_nodes_apply(c, ev);
	else if (res.policy)
		controller_snapshot_apply(c, ev);
	else if (in->set != WORKLOAD_SET_NONE)
		controller_sets_apply(c, ev);
	else if (in->hold == WORKLOAD_HOLD_GATES)
		controller_pods_apply(c, ev);
	else
		controller_jobs_apply(c, ev);
}

/* Collection r is not served (KUBE_EV_UNSERVED: no CRD, or its CRD went):
 * let it go. What it cached goes as after a relist that showed nothing (its
 * workloads leave the core, its policy objects the policy), and the next
 * snapshot no longer names it, so the webhook stops holding its kind. */
static void let_go(struct controller *c, controller_res_t r)
{
	controller_cevent_t reset = {.res = r, .type = KUBE_EV_RESET};
	controller_cevent_t synced = {.res = r, .type = KUBE_EV_SYNCED};
	bool had = c->listed[r];

	if (c->unserved[r])
		return;
	dispatch(c, &reset);
	dispatch(c, &synced);
	c->listed[r] = false;
	c->unserved[r] = true;
	c->policy_dirty = true;
	if (had)
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "%s: no longer served by the apiserver (its CRD removed?): let go, its "
			 "cached objects and their workloads dropped; watched again once served",
			 controller_res_at(r).name);
	else
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "%s: not served by the apiserver: watched once it is (asked every %d s)",
			 controller_res_at(r).name, KUBE_UNSERVED_POLL_MS / 1000);
}

void controller_handle(struct controller *c, controller_cevent_t *ev)
{
	controller_res_t r = ev->res;
	bool came = ev->type == KUBE_EV_SYNCED && c->unserved[r];

	if (ev->type == KUBE_EV_UNSERVED)
		let_go(c, r);
	else
		dispatch(c, ev);
	controller_cevent_deinit(ev);
	if (!came)
		return;
	/* served now (its CRD installed after gpuq started): the next snapshot
	 * names it, and the webhook holds its kind from then on */
	c->unserved[r] = false;
	c->policy_dirty = true;
	gpuq_log(GPUQ_LOG_INFO, "controller",
		 "%s: served by the apiserver now: watched, without a restart",
		 controller_res_at(r).name);
}

static int64_t next_deadline(struct controller *c)
{
	int64_t now = gpuq_mono_ms(), d = now + 1000;

	if (engine_core(c->e) && atomic_load(&c->leader)) {
		int64_t cyc = c->last_cycle_ms + c->o.cycle_interval_ms;
		int64_t ev = queue_next_event(engine_core(c->e), controller_now(c));
		if (c->core_dirty)
			cyc = now; /* coalesce what arrives meanwhile: no wait beyond this batch */
		if (cyc < d)
			d = cyc;
		if (ev != INT64_MAX && now + (ev - controller_now(c)) < d)
			d = now + (ev - controller_now(c));
	}
	if (c->n_settling && c->settle_next_ms < d) /* a deleted parent settles */
		d = c->settle_next_ms;
	/* a lease that runs out unrenewed: stand by the moment it does */
	if (atomic_load(&c->leader) && kube_fence_until(c->fence) < d)
		d = kube_fence_until(c->fence);
	return d > now ? d : now;
}

/* Return the heap's free pages to the system, at most every TRIM_MS and
 * only between bursts (n events just handled): the watch threads' arenas
 * keep what a burst of parsed events freed (glibc; a no-op elsewhere). */
static void trim(struct controller *c, size_t n)
{
#ifdef __GLIBC__
	int64_t now = gpuq_mono_ms();

	if (n >= BATCH_MAX / 2 || now < c->next_trim_ms)
		return;
	c->next_trim_ms = now + TRIM_MS;
	(void)malloc_trim(0);
#else
	(void)c;
	(void)n;
#endif
}

/* One pass of the loop, timed (gpuq_mono_ns): its stages are observed
 * when it released something (qmetrics_release_stages_observe). */
typedef struct {
	uint64_t arrived;      /* the oldest event of the batch reached gpuq */
	uint64_t popped;       /* the loop took the batch */
	uint64_t handled;      /* events applied, the policy snapshot rebuilt */
	uint64_t cycled;       /* the core's cycle done (and committed) */
	uint64_t cycle_commit; /* ... of which in commits */
	uint64_t acted;	       /* the patches sent and answered */
} step_t;

static void step_begin(struct controller *c, step_t *st, const controller_cevent_t *batch, size_t n)
{
	*st = (step_t){.popped = gpuq_mono_ns()};
	st->arrived = st->popped;
	for (size_t i = 0; i < n; i++)
		if (batch[i].arrived_ns && batch[i].arrived_ns < st->arrived)
			st->arrived = batch[i].arrived_ns;
	st->handled = st->cycled = st->acted = st->popped;
	c->step_commit_ns = 0;
	c->step_released = 0;
}

/* The pass ends: its release stages when it released, and its tail (what
 * it did after the patches, which delays whatever arrived meanwhile). */
static void step_end(struct controller *c, const step_t *st)
{
	uint64_t end = gpuq_mono_ns();

	if (c->step_released) {
		uint64_t ns[QMETRICS_STAGES] = {
		    [QMETRICS_STAGE_QUEUED] = st->popped - st->arrived,
		    [QMETRICS_STAGE_HANDLE] = st->handled - st->popped,
		    [QMETRICS_STAGE_CYCLE] = st->cycled - st->handled - st->cycle_commit,
		    [QMETRICS_STAGE_COMMIT] = c->step_commit_ns,
		    [QMETRICS_STAGE_PATCH] =
			st->acted - st->cycled - (c->step_commit_ns - st->cycle_commit),
		    [QMETRICS_STAGE_TOTAL] = st->acted - st->arrived,
		};
		qmetrics_release_stages_observe(c->metrics, ns);
	}
	qmetrics_loop_tail_observe(c->metrics, end - st->acted);
	if (end - st->popped >= SLOW_PASS_NS && gpuq_mono_ms() >= c->slow_said_ms + SLOW_SAID_MS) {
		c->slow_said_ms = gpuq_mono_ms();
		gpuq_log(
		    GPUQ_LOG_WARN, "controller",
		    "a pass took %llu ms (events %llu, cycle %llu, patches %llu, LMDB commits "
		    "among those %llu, then status, metrics and snapshots %llu): releases and the "
		    "web view's snapshots waited that long",
		    (unsigned long long)((end - st->popped) / 1000000),
		    (unsigned long long)((st->handled - st->popped) / 1000000),
		    (unsigned long long)((st->cycled - st->handled) / 1000000),
		    (unsigned long long)((st->acted - st->cycled) / 1000000),
		    (unsigned long long)(c->step_commit_ns / 1000000),
		    (unsigned long long)((end - st->acted) / 1000000));
	}
}

static void *loop_main(void *arg)
{
	struct controller *c = arg;
	controller_cevent_t *batch = calloc(BATCH_MAX, sizeof(*batch));

	if (!batch) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "out of memory");
		return NULL;
	}
	/* a restarted leader must know it leads before it reads the cluster
	 * (jobs.c treats Jobs differently) */
	controller_elect_wait_first(c);
	while (!atomic_load(&c->stop)) {
		size_t n = controller_equeue_pop(&c->events, batch, BATCH_MAX, next_deadline(c));
		int64_t now;
		step_t st;

		step_begin(c, &st, batch, n);
		follow(c);
		for (size_t i = 0; i < n; i++)
			controller_handle(c, &batch[i]);
		if (c->n_settling && gpuq_mono_ms() >= c->settle_next_ms)
			c->settle_next_ms = controller_jobs_settle(c);
		if (n) /* what the webhook lets pass outside the queue */
			controller_owners_publish(c);
		trim(c, n);
		if (c->policy_dirty && all_listed(c) && controller_snapshot_rebuild(c) == GPUQ_OK &&
		    !atomic_load(&c->synced)) {
			atomic_store(&c->synced, true);
			gpuq_log(
			    GPUQ_LOG_INFO, "controller",
			    "synced: %zu Jobs, policy generation %llu; the webhook decides now",
			    c->jobs.n, (unsigned long long)c->policy_generation);
		}
		st.handled = gpuq_mono_ns();
		if (!engine_core(c->e) || !atomic_load(&c->leader)) {
			untouch_all(c);
			continue;
		}
		if (c->check_term && c->policy)
			term_check(c);
		if (c->check_term)
			continue;
		controller_usage_step(c);
		now = gpuq_mono_ms();
		if (now >= c->next_sweep_ms) {
			c->next_sweep_ms = now + SWEEP_MS;
			sweep(c);
		}
		if (c->core_dirty || now >= c->last_cycle_ms + c->o.cycle_interval_ms ||
		    queue_next_event(engine_core(c->e), controller_now(c)) <= controller_now(c))
			cycle(c);
		st.cycled = gpuq_mono_ns();
		st.cycle_commit = c->step_commit_ns;
		if (persist(c) == GPUQ_OK)
			act_touched(c);
		st.acted = gpuq_mono_ns();
		controller_status_jobs(c);
		controller_status_queues(c);
		if (now >= c->metrics_next_ms) {
			c->metrics_next_ms = now + METRICS_MS;
			(void)qmetrics_publish(c->metrics,
					       engine_core(c->e)); /* no memory: the last stays */
			if (c->o.ui)
				(void)webui_publish(c->o.ui, engine_core(c->e), controller_now(c));
		}
		controller_econ_step(c);
		if (c->o.pod_queues && now >= c->podmap_next_ms) {
			c->podmap_next_ms = now + CONTROLLER_PODMAP_MS;
			controller_podmap_publish(c);
		}
		step_end(c, &st);
	}
	free(batch);
	return NULL;
}

int controller_create(const controller_opts_t *o, controller_t **out, gpuq_diag_t *diag)
{
	struct controller *c = calloc(1, sizeof(*c));
	queue_config_t cfg;
	engine_opts_t eo;
	int rc;

	if (!c)
		return GPUQ_ENOMEM;
	c->o = *o;
	queue_config_default(&cfg);
	cfg.fair_sharing = o->core.fair_sharing;
	cfg.ready_timeout_ms = o->core.ready_timeout_ms;
	cfg.backoff_base_ms = o->core.backoff_base_ms;
	cfg.backoff_max_ms = o->core.backoff_max_ms;
	cfg.tenant_half_life_ms = o->core.tenant_half_life_ms;
	cfg.tenant_sample_ms = o->core.tenant_sample_ms;
	cfg.idle_fresh_ms = o->core.idle_fresh_ms;
	cfg.release_on_evict = false; /* pods take time to go */
	cfg.budget_interval_ms = CONTROLLER_BUDGET_MS;
	controller_map_init(&c->econ_runs);
	cfg.ready_scope = QUEUE_READY_GANGS;
	controller_map_init(&c->jobs);
	controller_map_init(&c->groups);
	controller_map_init(&c->sets);
	controller_map_init(&c->pod_group);
	controller_map_init(&c->pods_early);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		controller_map_init(&c->objs[r]);
	rc = qmetrics_create(&c->metrics);
	if (!rc)
		rc = controller_equeue_init(&c->events);
	if (rc) {
		qmetrics_destroy(c->metrics);
		free(c);
		return rc;
	}
	engine_opts_init(&eo);
	eo.state_dir = o->state_dir;
	eo.driver_types[T_TERM - ENGINE_TYPE_DRIVER_FIRST] = "controller";
	eo.nosync = o->db_nosync;
	eo.map_max = DB_MAP_MAX;
	eo.set_aside_corrupt = true; /* the cluster holds what rebuilds it */
	pthread_mutex_init(&c->lease_mu, NULL);
	pthread_cond_init(&c->lease_cv, NULL);
	rc = kube_fence_create(&c->fence);
	if (rc) {
		controller_destroy(c);
		return rc;
	}
	if (!o->leader_elect)
		kube_fence_hold(c->fence, INT64_MAX); /* one replica: leads for good */
	/* the store now; the core with the first policy snapshot */
	rc = engine_open(NULL, &cfg, &eo, &c->e, diag);
	if (!rc)
		rc = kube_client_create(o->kube, &o->client, &c->client, diag);
	if (!rc) {
		/* every write of the controller thread needs the Lease */
		kube_client_fence(c->client, c->fence, KUBE_FENCE_WRITES);
		rc = controller_swriter_start(o->kube, &o->client, o->identity, c->fence,
					      &c->swriter, diag);
	}
	if (!rc) {
		/* the releases' connections share the controller's rate */
		kube_client_opts_t po = o->client;

		po.qps /= CONTROLLER_PATCHERS;
		po.burst = po.burst / CONTROLLER_PATCHERS ? po.burst / CONTROLLER_PATCHERS : 1;
		rc = controller_patcher_start(o->kube, &po, c->fence, &c->patcher, diag);
	}
	if (rc) {
		controller_destroy(c);
		return rc;
	}
	c->epoch_mono_ms = gpuq_mono_ms();
	c->epoch_wall_ms = kube_now_ms();
	*out = c;
	return GPUQ_OK;
}

/* The server's /metrics source: the queue metrics, rendered on the
 * scrape's thread from the last published snapshot. */
static void metrics_source(void *ctx, http_metrics_text_t *t)
{
	qmetrics_render(ctx, t);
}

int controller_start(controller_t *c, gpuq_diag_t *diag)
{
	int rc = controller_informer_start(c, diag);

	if (!rc)
		rc = controller_elect_start(c, diag);
	if (!rc && pthread_create(&c->thread, NULL, loop_main, c) != 0)
		rc = gpuq_diag_set(diag, GPUQ_ENOMEM, "cannot start the controller thread");
	if (rc) {
		controller_stop(c);
		return rc;
	}
	c->running = true;
	if (c->o.metrics)
		http_metrics_source_set(c->o.metrics, metrics_source, c->metrics);
	return GPUQ_OK;
}

void controller_stop(controller_t *c)
{
	if (!c || c->stopped)
		return;
	c->stopped = true;
	if (c->o.metrics)
		http_metrics_source_set(c->o.metrics, NULL, NULL);
	/* every thread: its waits and requests end at once (a write in flight is
	 * cut off), then it is joined */
	atomic_store(&c->stop, true);
	if (c->fence)
		kube_fence_stop(c->fence);
	controller_equeue_kick(&c->events);
	controller_elect_wake(c);
	controller_informer_stop(c);
	if (c->running) {
		pthread_join(c->thread, NULL);
		c->running = false;
	}
	controller_elect_stop(c);
	controller_swriter_stop(c->swriter);
	c->swriter = NULL;
	controller_patcher_stop(c->patcher);
	c->patcher = NULL;
	if (!c->fence)
		return;
	/* the last words, alone now: the usage checkpoint (a leader's write,
	 * still fenced by the lease's deadline), then the Lease given up */
	kube_fence_resume(c->fence);
	if (c->e && engine_core(c->e) && atomic_load(&c->leader) &&
	    kube_fence_held(c->fence, gpuq_mono_ms()))
		controller_usage_final(c); /* the thread is gone: its core and client are ours */
	controller_elect_release(c);
	atomic_store(&c->leader, false);
	kube_fence_stop(c->fence); /* idempotent from here on */
}

void controller_destroy(controller_t *c)
{
	if (!c)
		return;
	controller_stop(c);
	controller_jobs_free_all(c);
	controller_pods_free_all(c);
	controller_nodes_free_all(c);
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
	for (size_t i = 0; i < c->n_touched; i++)
		free(c->touched[i]);
	free(c->touched);
	free(c->batch); /* empty: every pass flushes it */
	for (size_t i = 0; i < c->n_explain; i++)
		free(c->explain[i]);
	free(c->explain);
	controller_equeue_deinit(&c->events);
	controller_econ_free(c);
	qmetrics_destroy(c->metrics);
	policy_unref(c->policy);
	kube_client_destroy(c->client);
	kube_client_destroy(c->lease_client);
	kube_fence_destroy(c->fence);
	pthread_cond_destroy(&c->lease_cv);
	pthread_mutex_destroy(&c->lease_mu);
	engine_close(c->e); /* the core, its policy reference, the store */
	free(c);
}

bool controller_synced(const controller_t *c)
{
	return atomic_load(&c->synced);
}

bool controller_leader(const controller_t *c)
{
	return atomic_load(&c->leader);
}

bool controller_gave_up(const controller_t *c)
{
	return atomic_load(&c->gave_up);
}

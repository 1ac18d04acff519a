/* controller/econ.c: GPU economics on the controller thread
 * (docs/economics.md). The utilization readings of idle reclaim go into the
 * core; the core's budget changes and idle reports become Events; a budget
 * shows in its queue's status; the LocalQueues' finished runtimes feed the
 * prediction history; and a prediction pass every CONTROLLER_PREDICT_MS,
 * capped in wall time, hands each pending workload its predicted start
 * (the core's explanation says it, and so the Job's gpuq.dev/status and the
 * web view). Everything here runs while leading, never on the admission
 * path. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "predict/predict.h"

#define ECON_SCAN_MS 5000 /* the history scan's period (runtimes to within it) */
/* A prediction pass's caps in the daemon: workloads and steps as predict/'s
 * defaults, and at most this much wall time (the controller thread waits
 * that long at most, every CONTROLLER_PREDICT_MS). */
#define PREDICT_WALL_MS 250
/* gpuq.dev/status says the predicted start of the first few of each
 * LocalQueue, when it is this near (queue_workload_predict_show). */
#define STATUS_PREDICT_MS ((int64_t)60 * 60 * 1000)
#define STATUS_PREDICT_FIRST 10

typedef struct {
	int64_t admitted_ms; /* its admission, core time */
	char lq[2 * 254];    /* its LocalQueue "namespace/name" */
} run_t;

static void runner_free(struct controller *c);

void controller_econ_free(struct controller *c)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	runner_free(c);
	for (size_t i = 0; i < c->econ_pred_n; i++)
		free(c->econ_pred[i]);
	free(c->econ_pred);
	c->econ_pred = NULL;
	c->econ_pred_n = 0;

	while ((s = controller_map_next(&c->econ_runs, &pos)))
		free(s->value);
	controller_map_deinit(&c->econ_runs);
	predict_history_destroy(c->econ_hist);
	c->econ_hist = NULL;
}

/* ---- utilization ---- */

static void on_util(void *arg, const char *uid, double pct)
{
	struct controller *c = arg;

	/* a workload that is not admitted (any more) says nothing */
	(void)engine_change_apply(c->e,
				  &(engine_change_t){.kind = ENGINE_CHANGE_UTILIZATION,
						     .uid = uid,
						     .value = pct,
						     .now = controller_now(c)},
				  NULL);
}

/* ---- Events ---- */

static const char *const UNIT_WORDS[] = {"GPU-hours", "cost"};

/* The uid of a cached policy object of collection r (key "ns/name" or
 * "name"), or NULL. */
static const char *obj_uid(struct controller *c, controller_res_t r, const char *key)
{
	const controller_pobj_t *o = controller_map_get(&c->objs[r], key);

	return o ? json_string_value(json_object_get(json_object_get(o->obj, "metadata"), "uid"))
		 : NULL;
}

/* The LocalQueue (ns, name) declaring the Namespace budget of ns. */
static const policy_lq_t *ns_budget_lq(const struct controller *c, const char *ns)
{
	for (size_t i = 0; c->policy && i < policy_lq_count(c->policy); i++) {
		const policy_lq_t *l = policy_lq_at(c->policy, i);

		if (l->budget.present && l->budget.namespace_scope && !strcmp(l->namespace_, ns))
			return l;
	}
	return NULL;
}

/* An Event about budget v's object: its LocalQueue, the LocalQueue that
 * declares a Namespace budget, or its ClusterQueue (cluster scope: the
 * Event goes to "default"). */
static void budget_event(struct controller *c, const queue_budget_view_t *v, const char *type,
			 const char *reason, const char *note)
{
	char ns[256] = "", key[512];
	const char *name = v->name, *slash = strchr(v->name, '/');

	if (v->scope == QUEUE_BUDGET_CLUSTERQUEUE) {
		(void)controller_swriter_event_ref(
		    c->swriter, "gpuq.dev/v1beta1", "ClusterQueue", "", name,
		    obj_uid(c, CONTROLLER_RES_CLUSTERQUEUES, name), type, reason, "Budget", note);
		return;
	}
	if (v->scope == QUEUE_BUDGET_NAMESPACE) {
		const policy_lq_t *l = ns_budget_lq(c, v->name);

		if (!l)
			return;
		snprintf(ns, sizeof(ns), "%s", l->namespace_);
		name = l->name;
	} else if (slash && (size_t)(slash - v->name) < sizeof(ns)) {
		memcpy(ns, v->name, (size_t)(slash - v->name));
		ns[slash - v->name] = '\0';
		name = slash + 1;
	} else {
		return;
	}
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	(void)controller_swriter_event_ref(c->swriter, "gpuq.dev/v1beta1", "LocalQueue", ns, name,
					   obj_uid(c, CONTROLLER_RES_LOCALQUEUES, key), type,
					   reason, "Budget", note);
}

static void budget_changed(struct controller *c, const queue_budget_change_t *ch)
{
	static const char *const scope[] = {"LocalQueue", "namespace", "ClusterQueue"};
	static const char *const action[] = {"Warn: reported only",
					     ("Lower: its workloads wait behind those within "
					      "budget and may not borrow"),
					     "Hold: no new admission"};
	queue_budget_view_t v;
	char note[768], end[32];

	if (queue_budget_view(engine_core(c->e), ch->budget, &v))
		return;
	gpuq_time_format(v.window_end_ms, GPUQ_TIME_MICROS, end, sizeof(end));
	if (ch->to == QUEUE_BUDGET_OK) {
		snprintf(note, sizeof(note), "%s %s is within its budget again: %.6g of %.6g %s",
			 scope[v.scope], v.name, v.used, v.limit, UNIT_WORDS[v.cost]);
		budget_event(c, &v, "Normal", "BudgetReset", note);
	} else if (ch->to == QUEUE_BUDGET_WARNING) {
		snprintf(note, sizeof(note),
			 "%s %s has used %.6g of its %.6g %s (warnAt %d%%); the window ends %s",
			 scope[v.scope], v.name, v.used, v.limit, UNIT_WORDS[v.cost], v.warn_pct,
			 end);
		budget_event(c, &v, "Warning", "BudgetWarning", note);
	} else {
		snprintf(note, sizeof(note),
			 "%s %s is over its budget: %.6g of %.6g %s; action %s until the window "
			 "ends %s",
			 scope[v.scope], v.name, v.used, v.limit, UNIT_WORDS[v.cost],
			 action[v.action], end);
		budget_event(c, &v, "Warning", "BudgetExceeded", note);
	}
}

/* An idle report: an Event on the Job. */
static void idle_reported(struct controller *c, const queue_idle_t *e)
{
	const controller_job_t *j = controller_job(c, e->uid);
	queue_workload_view_t v;
	char note[512], since[32];

	if (!j || !j->wl || queue_workload_view(engine_core(c->e), e->wl, &v))
		return;
	gpuq_time_format(e->idle_since_ms, GPUQ_TIME_MICROS, since, sizeof(since));
	snprintf(note, sizeof(note),
		 "Its GPUs have been idle since %s (below ClusterQueue %s's idleReclaim "
		 "threshold)",
		 since, queue_cq_name(engine_core(c->e), v.cq));
	(void)controller_swriter_event(c->swriter, controller_job_ns(j), controller_job_name(j),
				       e->uid, "Warning", "IdleGPU", "Report", note);
}

void controller_econ_result(struct controller *c, const queue_result_t *res)
{
	for (size_t i = 0; i < res->n_budget_changes; i++)
		budget_changed(c, &res->budget_changes[i]);
	for (size_t i = 0; i < res->n_idles; i++)
		idle_reported(c, &res->idles[i]);
	qmetrics_idle_count(c->metrics, engine_core(c->e), res);
}

/* ---- status ---- */

void controller_econ_status(struct controller *c, json_t *st, bool cq, uint32_t id)
{
	const char *name =
	    cq ? queue_cq_name(engine_core(c->e), id) : queue_lq_name(engine_core(c->e), id);
	char ns[256] = "", a[32], b[32];

	if (!name)
		return;
	if (!cq && strchr(name, '/') && (size_t)(strchr(name, '/') - name) < sizeof(ns)) {
		memcpy(ns, name, (size_t)(strchr(name, '/') - name));
		ns[strchr(name, '/') - name] = '\0';
	}
	for (uint32_t i = 0; i < queue_budget_count(engine_core(c->e)); i++) {
		static const char *const state[] = {"OK", "Warning", "Over"};
		static const char *const action[] = {"Warn", "Lower", "Hold"};
		queue_budget_view_t v;

		if (queue_budget_view(engine_core(c->e), i, &v) ||
		    !(cq ? v.scope == QUEUE_BUDGET_CLUSTERQUEUE && !strcmp(v.name, name)
			 : (v.scope == QUEUE_BUDGET_LOCALQUEUE && !strcmp(v.name, name)) ||
			       (v.scope == QUEUE_BUDGET_NAMESPACE && !strcmp(v.name, ns))))
			continue;
		if (v.evaluated_ms == INT64_MIN)
			return; /* not evaluated yet: nothing to say */
		gpuq_time_format(v.window_start_ms, GPUQ_TIME_MICROS, a, sizeof(a));
		gpuq_time_format(v.window_end_ms, GPUQ_TIME_MICROS, b, sizeof(b));
		json_object_set_new(st, "budget",
				    json_pack("{s:s, s:s, s:f, s:f, s:s, s:s, s:s, s:s}", "scope",
					      v.scope == QUEUE_BUDGET_NAMESPACE ? "Namespace"
					      : cq				? "ClusterQueue"
										: "LocalQueue",
					      "unit", UNIT_WORDS[v.cost], "limit", v.limit, "used",
					      floor(v.used * 1000 + 0.5) / 1000, "state",
					      state[v.state], "action", action[v.action],
					      "windowStart", a, "windowEnd", b));
		return;
	}
}

/* ---- the history of runtimes ---- */

/* Every admitted workload is remembered with its admission; one seen
 * finished adds what it ran to its LocalQueue's history; one gone without
 * finishing is forgotten. */
static void history_scan(struct controller *c, int64_t now)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	for (size_t id = 0; id < queue_workload_id_limit(engine_core(c->e)); id++) {
		queue_wl_state_t st;
		queue_workload_view_t v;
		run_t *r;

		/* the pending ones (most, with a long queue) change nothing here:
		 * their state is all that is read of them */
		if (queue_workload_state(engine_core(c->e), (queue_wl_t)id, &st) ||
		    (st != QUEUE_WL_ADMITTED && st != QUEUE_WL_FINISHED) ||
		    queue_workload_view(engine_core(c->e), (queue_wl_t)id, &v))
			continue;
		r = controller_map_get(&c->econ_runs, v.uid);
		if (v.state == QUEUE_WL_ADMITTED && (!r || r->admitted_ms != v.admitted_ms)) {
			if (!r && !(r = calloc(1, sizeof(*r))))
				return;
			r->admitted_ms = v.admitted_ms;
			snprintf(r->lq, sizeof(r->lq), "%s",
				 queue_lq_name(engine_core(c->e), v.lq));
			if (controller_map_put(&c->econ_runs, v.uid, r, NULL)) {
				free(r);
				return;
			}
		} else if (v.state == QUEUE_WL_FINISHED && r) {
			(void)predict_history_add(c->econ_hist, r->lq, now - r->admitted_ms);
			free(controller_map_del(&c->econ_runs, v.uid));
		}
	}
	while ((s = controller_map_next(&c->econ_runs,
					&pos))) { /* gone: deleted, or evicted and gone */
		queue_wl_t id;

		if (queue_workload_find(engine_core(c->e), s->key, &id) == GPUQ_OK)
			continue;
		free(controller_map_del(&c->econ_runs, s->key));
	}
}

/* ---- predictions ---- */

/* What a Job says it runs for: its gpuq.dev/expected-runtime annotation,
 * else its activeDeadlineSeconds (an upper bound), else -1. */
static int64_t declared(void *ctx, const queue_workload_view_t *v)
{
	struct controller *c = ctx;
	const controller_job_t *j = controller_job(c, v->uid);
	int64_t ms = -1;

	if (!j || !j->wl)
		return -1;
	if (j->wl->x->expected_runtime &&
	    gpuq_duration_parse(j->wl->x->expected_runtime, &ms, NULL) == GPUQ_OK && ms > 0)
		return ms;
	return j->wl->deadline_s > 0 && j->wl->deadline_s < INT64_MAX / 1000
		   ? j->wl->deadline_s * 1000
		   : -1;
}

static bool wall_over(void *ctx)
{
	return gpuq_mono_ms() >= *(const int64_t *)ctx;
}

/* A predicted start near enough for gpuq.dev/status, and its LocalQueue. */
typedef struct {
	uint32_t lq;
	int64_t start_ms;
	size_t i; /* its entry in the result */
} near_t;

static int near_cmp(const void *a, const void *b)
{
	const near_t *x = a, *y = b;

	if (x->lq != y->lq)
		return x->lq < y->lq ? -1 : 1;
	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Which entries of r gpuq.dev/status may state: the first
 * STATUS_PREDICT_FIRST of each LocalQueue predicted to start within
 * STATUS_PREDICT_MS (show[i]; calloc'd, NULL without memory: none). */
static bool *near_first(struct controller *c, const predict_result_t *r, int64_t now)
{
	near_t *n = calloc(r->n ? r->n : 1, sizeof(*n));
	bool *show = calloc(r->n ? r->n : 1, sizeof(*show));
	size_t k = 0, rank = 0;

	for (size_t i = 0; n && show && i < r->n; i++) {
		queue_wl_t id;
		queue_workload_view_t v;
		int64_t is = r->v[i].start_ms;

		if (is >= 0 && is - now <= STATUS_PREDICT_MS &&
		    !queue_workload_find(engine_core(c->e), r->v[i].uid, &id) &&
		    !queue_workload_view(engine_core(c->e), id, &v))
			n[k++] = (near_t){v.lq, is, i};
	}
	if (n && show)
		qsort(n, k, sizeof(*n), near_cmp);
	for (size_t j = 0; n && show && j < k; j++) {
		rank = j && n[j].lq == n[j - 1].lq ? rank + 1 : 0;
		show[n[j].i] = rank < STATUS_PREDICT_FIRST;
	}
	free(n);
	return show;
}

/* uid's predicted start and whether its status says it, into the core;
 * its status noted when it says one, or said one before. */
static void predict_set(struct controller *c, const char *uid, int64_t start_ms, bool show)
{
	bool was = false;

	if (engine_change_apply(c->e,
				&(engine_change_t){.kind = ENGINE_CHANGE_PREDICT_SET,
						   .uid = uid,
						   .start_ms = start_ms},
				NULL) ||
	    engine_change_apply(
		c->e,
		&(engine_change_t){
		    .kind = ENGINE_CHANGE_PREDICT_SHOW, .uid = uid, .show = show, .was = &was},
		NULL))
		return; /* gone, or no longer pending */
	if (show || was)
		controller_status_note(c, uid);
}

/* Forget the last pass's list; take r's entries with a start or a status
 * line as the new one (a copy: without memory, an empty list). */
static void predict_keep(struct controller *c, const predict_result_t *r, const bool *show)
{
	size_t n = 0;

	for (size_t i = 0; i < c->econ_pred_n; i++)
		free(c->econ_pred[i]);
	free(c->econ_pred);
	c->econ_pred_n = 0;
	c->econ_pred = calloc(r->n ? r->n : 1, sizeof(*c->econ_pred));
	for (size_t i = 0; c->econ_pred && i < r->n; i++)
		if ((r->v[i].start_ms >= 0 || (show && show[i])) &&
		    (c->econ_pred[n] = strdup(r->v[i].uid)))
			n++;
	c->econ_pred_n = n;
}

/* A pass's predictions into the core (the views read them), and into
 * gpuq.dev/status for those near_first picks: noted while they are picked
 * and once when they no longer are (the writer writes only a text that
 * changed), so a deep queue costs no status write per Job and pass. The
 * pass lists only what its copy kept (kept_only): what the last pass set
 * and this one does not list is reset to none, so the work follows the
 * passes' caps, not the queue's depth. */
static void predict_apply(struct controller *c, const predict_result_t *r, int64_t now)
{
	bool *show = near_first(c, r, now);

	for (size_t i = 0; i < c->econ_pred_n; i++)
		if (!predict_find(r, c->econ_pred[i]))
			predict_set(c, c->econ_pred[i], -1, false);
	for (size_t i = 0; i < r->n; i++)
		predict_set(c, r->v[i].uid, r->v[i].start_ms, show && show[i]);
	predict_keep(c, r, show);
	free(show);
}

/* The thread that runs a begun pass forward (predict_finish) beside the
 * controller's: the controller begins a pass (reading the core: the kept
 * records encoded) and applies its result at a later step; the copy built
 * from the records and the run, 14 ms at the default cap, no longer hold
 * the thread that releases (issue 35). */
typedef struct econ_runner {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	predict_pass_t *job;	 /* handed over, running (under mu) */
	bool done;		 /* res, rc, why hold a finished run (under mu) */
	bool stop;		 /* the thread must end (under mu) */
	predict_result_t res;	 /* its result */
	int rc;			 /* its code */
	char why[GPUQ_DIAG_MAX]; /* its diag */
	int64_t now;		 /* the core time it began at */
	int64_t deadline_ms;	 /* its wall cap (monotonic; the stop hook's) */
	uint64_t t0;		 /* when it began (ns, monotonic) */
} econ_runner_t;

static void *runner_main(void *arg)
{
	econ_runner_t *r = arg;

	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		predict_pass_t *pp = r->job;
		predict_result_t res;
		gpuq_diag_t diag = {{0}};
		int rc;

		if (!pp) {
			pthread_cond_wait(&r->cv, &r->mu);
			continue;
		}
		pthread_mutex_unlock(&r->mu);
		rc = predict_finish(pp, &res, &diag);
		pthread_mutex_lock(&r->mu);
		r->job = NULL;
		r->res = res;
		r->rc = rc;
		gpuq_strlcpy(r->why, diag.msg, sizeof(r->why));
		r->done = true;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* c's runner, started at its first use; NULL when it cannot start (the
 * pass then runs on the controller's thread, as before). */
static econ_runner_t *runner(struct controller *c)
{
	econ_runner_t *r = c->econ_run;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&r->th, NULL, runner_main, r)) {
		pthread_cond_destroy(&r->cv);
		pthread_mutex_destroy(&r->mu);
		free(r);
		return NULL;
	}
	c->econ_run = r;
	return r;
}

static void runner_free(struct controller *c)
{
	econ_runner_t *r = c->econ_run;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL); /* a run under way ends first (its wall cap) */
	predict_pass_free(r->job);
	if (r->done)
		predict_result_deinit(&r->res);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
	c->econ_run = NULL;
}

bool controller_econ_busy(struct controller *c)
{
	econ_runner_t *r = c->econ_run;
	bool busy;

	if (!r)
		return false;
	pthread_mutex_lock(&r->mu);
	busy = r->job || r->done;
	pthread_mutex_unlock(&r->mu);
	return busy;
}

/* A finished pass (begun at core time now, monotonic t0 ns) counted, and
 * its result applied unless it began more than two intervals ago; res is
 * freed. */
static void predict_use(struct controller *c, predict_result_t *res, int64_t now, uint64_t t0)
{
	qmetrics_predict_observe(c->metrics, gpuq_mono_ns() - t0, res->simulated, res->started,
				 res->stopped || res->capped);
	if (controller_now(c) - now <= 2 * c->o.predict_interval_ms)
		predict_apply(c, res, now);
	predict_result_deinit(res);
}

/* A finished run's result taken from the runner (the controller's
 * thread). */
static void predict_take(struct controller *c)
{
	econ_runner_t *r = c->econ_run;
	predict_result_t res;
	char why[GPUQ_DIAG_MAX];
	int64_t now;
	uint64_t t0;
	int rc;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	if (!r->done) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	res = r->res;
	rc = r->rc;
	now = r->now;
	t0 = r->t0;
	gpuq_strlcpy(why, r->why, sizeof(why));
	memset(&r->res, 0, sizeof(r->res));
	r->done = false;
	pthread_mutex_unlock(&r->mu);
	if (rc) {
		gpuq_log(GPUQ_LOG_WARN, "controller", "prediction pass: %s", why);
		return;
	}
	predict_use(c, &res, now, t0);
}

static void predict_opts(struct controller *c, predict_opts_t *o, int64_t *deadline)
{
	predict_opts_default(o);
	o->stop = wall_over;
	o->stop_ctx = deadline;
	o->kept_only = true;
	if (c->o.predict_workloads)
		o->workloads_max = c->o.predict_workloads;
}

/* Begin a pass (the core read: the controller's thread) and hand the rest
 * to the runner; without a runner, run it here. */
static void predict_pass(struct controller *c)
{
	econ_runner_t *r = runner(c);
	predict_opts_t o;
	predict_pass_t *pp;
	gpuq_diag_t diag = {{0}};
	int64_t now = controller_now(c), deadline = gpuq_mono_ms() + PREDICT_WALL_MS;
	uint64_t t0 = gpuq_mono_ns();
	int rc;

	if (r && controller_econ_busy(c))
		return; /* the last one is still running: this round is skipped */
	predict_opts(c, &o, r ? &r->deadline_ms : &deadline);
	rc = predict_begin(engine_core(c->e), c->policy, engine_config(c->e), now, &o, declared, c,
			   c->econ_hist, &pp, &diag);
	if (rc) {
		gpuq_log(GPUQ_LOG_WARN, "controller", "prediction pass: %s", diag.msg);
		return;
	}
	if (!r) {
		predict_result_t res;

		if (predict_finish(pp, &res, &diag)) {
			gpuq_log(GPUQ_LOG_WARN, "controller", "prediction pass: %s", diag.msg);
			return;
		}
		predict_use(c, &res, now, t0);
		return;
	}
	pthread_mutex_lock(&r->mu);
	r->job = pp;
	r->deadline_ms = deadline; /* the stop hook's, read by the runner from now on */
	r->now = now;
	r->t0 = t0;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void controller_econ_step(struct controller *c)
{
	int64_t mono = gpuq_mono_ms();

	if (c->o.workload_utils)
		c->o.workload_utils(c->o.workload_utils_ctx, on_util, c, &c->econ_util_seen);
	if (!c->econ_hist && predict_history_create(&c->econ_hist))
		return;
	if (mono >= c->econ_scan_ms) {
		c->econ_scan_ms = mono + ECON_SCAN_MS;
		history_scan(c, controller_now(c));
	}
	predict_take(c);
	if (c->o.predict_interval_ms > 0 && c->policy && mono >= c->econ_predict_ms) {
		c->econ_predict_ms = mono + c->o.predict_interval_ms;
		predict_pass(c);
	}
}

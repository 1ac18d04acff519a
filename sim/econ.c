/* sim/econ.c: the simulator's side of GPU economics (docs/economics.md):
 * idle GPUs (a workload's idleAfter: its GPUs read 0% utilization from
 * then on, as the driver reports it to the core), prediction passes
 * (predict/) and the first prediction of each workload, and the budgets as
 * the run leaves them. The figures are written by report.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "sim/internal.h"

#define UID_MAX 24	      /* "w" + a 32-bit index */
#define PRED_UNSEEN INT64_MIN /* a workload no pass has seen pending yet */

static uint32_t wid_of(const char *uid)
{
	return uid && uid[0] == 'w' ? (uint32_t)strtoul(uid + 1, NULL, 10) : UINT32_MAX;
}

bool sim_trace_econ(const sim_trace_t *t)
{
	const policy_t *p = t->policy;

	if (t->opt.predict_interval_ms > 0)
		return true;
	for (size_t i = 0; i < t->n_shapes; i++)
		if (t->shapes[i].idle_after_ms >= 0 || t->shapes[i].expected_ms >= 0)
			return true;
	for (size_t i = 0; i < policy_cq_count(p); i++) {
		const policy_cq_t *c = policy_cq_at(p, i);
		if (c->budget.present || c->min_runtime_ms || c->idle.action != POLICY_IDLE_OFF)
			return true;
	}
	for (size_t i = 0; i < policy_lq_count(p); i++)
		if (policy_lq_at(p, i)->budget.present)
			return true;
	for (size_t i = 0; i < policy_priorityclass_count(p); i++)
		if (policy_priorityclass_at(p, i)->min_runtime_ms)
			return true;
	return false;
}

int sim_econ_setup(struct sim *s, const sim_run_options_t *opt, gpuq_diag_t *diag)
{
	sim_report_t *r = s->r;

	r->predict_interval_ms = opt && opt->predict_interval_ms > 0
				     ? opt->predict_interval_ms
				     : s->t->opt.predict_interval_ms;
	r->predict_history =
	    opt && opt->predict_runtimes ? opt->predict_runtimes == 2 : s->t->opt.predict_history;
	r->econ = sim_trace_econ(s->t) || r->predict_interval_ms > 0;
	if (r->predict_interval_ms <= 0)
		return GPUQ_OK;
	if (opt && opt->state_dir)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s: spec.options.prediction: not with --state-dir (the "
				     "predictions are not persisted)",
				     s->t->path);
	s->r->predicted = malloc((s->r->n_wl + 1) * sizeof(*s->r->predicted));
	if (!s->r->predicted || predict_history_create(&s->hist))
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < s->r->n_wl; i++)
		s->r->predicted[i] = PRED_UNSEEN;
	return GPUQ_OK;
}

void sim_econ_free(struct sim *s)
{
	predict_history_destroy(s->hist);
	s->hist = NULL;
}

/* ---- idle GPUs ---- */

/* When the run admitted at `admitted` (Ready after delay) goes idle, or -1. */
static int64_t idle_at(const struct sim *s, uint32_t wid, int64_t admitted, int64_t delay)
{
	const sim_arrival_t *a = &s->t->arrivals[wid];
	int64_t after = s->t->shapes[a->shape].idle_after_ms;

	if (after < 0 || after >= a->runtime_ms)
		return -1; /* busy to its end */
	return admitted + delay + after;
}

int sim_econ_admitted(struct sim *s, uint32_t wid, int64_t delay)
{
	int64_t at = idle_at(s, wid, s->now, delay);

	if (at < 0)
		return GPUQ_OK;
	return sim_heap_push(
	    s, (event_t){.at = at, .wid = wid, .run = s->r->wl[wid].preemptions, .kind = EV_IDLE});
}

static int tell_idle(struct sim *s, uint32_t wid, int64_t since, gpuq_diag_t *diag)
{
	char uid[UID_MAX];
	int rc;

	snprintf(uid, sizeof(uid), "w%" PRIu32, wid);
	CORE(s, engine_change_apply(
		    s->e,
		    &(engine_change_t){
			.kind = ENGINE_CHANGE_UTILIZATION, .uid = uid, .value = 0.0, .now = since},
		    diag));
	return rc;
}

int sim_econ_idle(struct sim *s, const event_t *ev, gpuq_diag_t *diag)
{
	return tell_idle(s, ev->wid, s->now, diag);
}

int sim_econ_restore(struct sim *s)
{
	for (uint32_t wid = 0; wid < s->r->n_wl; wid++) {
		const sim_outcome_t *o = &s->r->wl[wid];
		int64_t at;
		int rc;

		if (o->state != SIM_WL_ADMITTED)
			continue;
		at = idle_at(s, wid, o->last_admit_ms, sim_ready_delay(s, wid));
		if (at < 0)
			continue;
		rc = at <= s->now ? tell_idle(s, wid, at, NULL)
				  : sim_heap_push(s, (event_t){.at = at,
							       .wid = wid,
							       .run = o->preemptions,
							       .kind = EV_IDLE});
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* ---- predictions ---- */

/* "namespace/name" of workload wid's LocalQueue. */
static void lq_key(const struct sim *s, uint32_t wid, char *buf, size_t cap)
{
	const policy_lq_t *lq = policy_lq_at(s->t->policy, s->t->arrivals[wid].lq);

	snprintf(buf, cap, "%s/%s", lq->namespace_, lq->name);
}

void sim_econ_finished(struct sim *s, uint32_t wid)
{
	char lq[2 * SIM_NAME_MAX + 2];

	if (!s->hist)
		return;
	lq_key(s, wid, lq, sizeof(lq));
	/* what it held its quota for: its Ready delay and its runtime (a
	 * LocalQueue past the history's cap is not kept: the default serves) */
	(void)predict_history_add(s->hist, lq,
				  sim_ready_delay(s, wid) + s->t->arrivals[wid].runtime_ms);
}

/* Declared runtimes: a workload's expectedRuntime, else its runtime (from
 * admission: its Ready delay included); -1 under History. */
static int64_t declared(void *ctx, const queue_workload_view_t *v)
{
	const struct sim *s = ctx;
	uint32_t wid = wid_of(v->uid);
	const sim_arrival_t *a;
	int64_t rt;

	if (s->r->predict_history || wid >= s->r->n_wl)
		return -1;
	a = &s->t->arrivals[wid];
	rt = s->t->shapes[a->shape].expected_ms;
	return sim_ready_delay(s, wid) + (rt >= 0 ? rt : a->runtime_ms);
}

int sim_econ_step(struct sim *s, gpuq_diag_t *diag)
{
	int64_t iv = s->r->predict_interval_ms;
	predict_result_t res;
	double t0;
	int rc;

	if (iv <= 0 || s->now < s->next_predict || !s->n_pending)
		return GPUQ_OK;
	s->next_predict = (s->now / iv + 1) * iv;
	t0 = sim_cpu_now();
	rc = predict_run(engine_core(s->e), s->t->policy, engine_config(s->e), s->now, NULL,
			 declared, s, s->hist, &res, diag);
	t0 = sim_cpu_now() - t0;
	s->r->predict_cpu_s += t0;
	if (t0 > s->r->predict_cpu_max_s)
		s->r->predict_cpu_max_s = t0;
	if (rc)
		return rc;
	s->r->predict_passes++;
	for (size_t i = 0; i < res.n; i++) {
		uint32_t wid = wid_of(res.v[i].uid);

		if (wid < s->r->n_wl && s->r->predicted[wid] == PRED_UNSEEN)
			s->r->predicted[wid] = res.v[i].start_ms; /* its first: at submission */
	}
	predict_result_deinit(&res);
	return GPUQ_OK;
}

/* ---- the budgets at the end ---- */

int sim_econ_report(struct sim *s)
{
	size_t n = queue_budget_count(engine_core(s->e));
	sim_report_t *r = s->r;

	if (!n)
		return GPUQ_OK;
	r->budgets = calloc(n, sizeof(*r->budgets));
	r->budget_names = calloc(n, sizeof(*r->budget_names));
	if (!r->budgets || !r->budget_names)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (queue_budget_view(engine_core(s->e), i, &r->budgets[i]))
			continue;
		r->budget_names[i] = strdup(r->budgets[i].name);
		if (!r->budget_names[i])
			return GPUQ_ENOMEM;
		r->budgets[i].name = r->budget_names[i];
		r->n_budgets = i + 1;
	}
	return GPUQ_OK;
}

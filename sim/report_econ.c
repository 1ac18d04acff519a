/* sim/report_econ.c: the report's "economics" section (a trace that uses
 * budgets, minimum runtimes, idle reclaim, idleAfter or predictions; the
 * others' reports are as they were) and its summary line. Every figure is
 * computed from the outcomes, the eviction log and the core's budgets at
 * the end, so a resumed run reports the same. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "sim/internal.h"

#define HOUR_MS 3600000.0

/* GPU time of the runs of the trace (utilization resource x ms). */
#define IDLE_CQS_MAX 64 /* ClusterQueues the idle hours are listed for (the first ones) */

typedef struct {
	double idle;		      /* held while idle (idleAfter), every run */
	double idle_cq[IDLE_CQS_MAX]; /* ... per ClusterQueue (policy order) */
	double returned;	      /* what idle reclaim freed: the rest of the runs it ended */
	size_t reclaims;	      /* IdleReclaim evictions */
	size_t preempts;	      /* preemptions (minimum runtime applies to them) */
	int64_t min_ran;	      /* the shortest run a preemption ended, or -1 */
	int64_t min_ran_cq[IDLE_CQS_MAX]; /* ... per victim's ClusterQueue */
} idle_fig_t;

static bool preempting_reason(const char *reason)
{
	static const char *const r[] = {"InClusterQueue", "InCohortReclamation",
					"InCohortFairSharing", "InCohortReclaimWhileBorrowing",
					"IdleReclaim"};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (!strcmp(reason, r[i]))
			return true;
	return false;
}

/* Idle ms of workload wid's run [start, end). */
static int64_t idle_ms(const sim_report_t *r, uint32_t wid, int64_t start, int64_t end)
{
	const sim_trace_t *t = r->trace;
	const sim_arrival_t *a = &t->arrivals[wid];
	int64_t after = t->shapes[a->shape].idle_after_ms, from;

	if (after < 0 || after >= a->runtime_ms)
		return 0;
	from = start + sim_trace_ready_delay(t, wid) + after;
	return end > from ? end - from : 0;
}

/* What reclaim i freed: from the reclaim until the victim held quota again
 * (its next run), or until its run would have ended, whichever came
 * first. */
static int64_t freed_ms(const sim_report_t *r, size_t i, int64_t would_end)
{
	const sim_preemption_t *p = &r->preempt[i];
	const sim_outcome_t *o = &r->wl[p->victim];
	int64_t back = -1;

	for (size_t k = i + 1; k < r->n_preempt && back < 0; k++)
		if (r->preempt[k].victim == p->victim)
			back = r->preempt[k].admitted_ms; /* its next run, evicted too */
	if (back < 0 && (o->state == SIM_WL_FINISHED || o->state == SIM_WL_ADMITTED) &&
	    o->last_admit_ms >= p->at_ms)
		back = o->last_admit_ms;
	if (back < 0 || back > would_end)
		back = would_end;
	return back > p->at_ms ? back - p->at_ms : 0;
}

static void idle_add(const sim_report_t *r, idle_fig_t *f, uint32_t wid, double gpu_ms)
{
	f->idle += gpu_ms;
	if (r->wl[wid].cq < IDLE_CQS_MAX)
		f->idle_cq[r->wl[wid].cq] += gpu_ms;
}

static void idle_figures(const sim_report_t *r, idle_fig_t *f)
{
	const sim_trace_t *t = r->trace;

	memset(f, 0, sizeof(*f));
	f->min_ran = -1;
	for (size_t c = 0; c < IDLE_CQS_MAX; c++)
		f->min_ran_cq[c] = -1;
	for (size_t i = 0; i < r->n_preempt; i++) { /* the runs that evictions ended */
		const sim_preemption_t *p = &r->preempt[i];
		const sim_arrival_t *a = &t->arrivals[p->victim];
		double amount = (double)r->wl[p->victim].amount;
		int64_t ran = p->at_ms - p->admitted_ms;

		idle_add(r, f, p->victim,
			 amount * (double)idle_ms(r, p->victim, p->admitted_ms, p->at_ms));
		if (!preempting_reason(p->reason))
			continue;
		f->preempts++;
		if (f->min_ran < 0 || ran < f->min_ran)
			f->min_ran = ran;
		if (r->wl[p->victim].cq < IDLE_CQS_MAX &&
		    (f->min_ran_cq[r->wl[p->victim].cq] < 0 ||
		     ran < f->min_ran_cq[r->wl[p->victim].cq]))
			f->min_ran_cq[r->wl[p->victim].cq] = ran;
		if (strcmp(p->reason, "IdleReclaim") != 0)
			continue;
		f->reclaims++;
		f->returned +=
		    amount *
		    (double)freed_ms(
			r, i, p->admitted_ms + sim_trace_ready_delay(t, p->victim) + a->runtime_ms);
	}
	for (uint32_t w = 0; w < r->n_wl; w++) { /* the last runs */
		const sim_outcome_t *o = &r->wl[w];

		if (o->state == SIM_WL_FINISHED || o->state == SIM_WL_ADMITTED)
			idle_add(r, f, w,
				 (double)o->amount * (double)idle_ms(r, w, o->last_admit_ms,
								     o->state == SIM_WL_FINISHED
									 ? o->finish_ms
									 : r->end_ms));
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The first predictions against the starts that happened. */
typedef struct {
	size_t seen, beyond, n;
	int64_t median, p90;
	double mean;
} pred_fig_t;

/* Each workload's first predicted start against its first admission: the
 * absolute errors' median, p90 and mean over those that started. */
static int prediction_figures(const sim_report_t *r, pred_fig_t *f)
{
	int64_t *err = calloc(r->n_wl + 1, sizeof(*err));
	double sum = 0;

	memset(f, 0, sizeof(*f));
	if (!err)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < r->n_wl; i++) {
		int64_t p = r->predicted[i], s = r->wl[i].first_admit_ms;

		if (p == INT64_MIN)
			continue; /* never pending at a pass */
		f->seen++;
		if (p < 0) {
			f->beyond++;
			continue;
		}
		if (s < 0)
			continue; /* never started */
		err[f->n] = p > s ? p - s : s - p;
		sum += (double)err[f->n++];
	}
	qsort(err, f->n, sizeof(*err), cmp_i64);
	f->median = sim_stats_percentile(err, f->n, 50);
	f->p90 = sim_stats_percentile(err, f->n, 90);
	f->mean = f->n ? sum / (double)f->n : 0.0;
	free(err);
	return GPUQ_OK;
}

static int put_prediction(const sim_report_t *r, FILE *out)
{
	pred_fig_t f;

	if (prediction_figures(r, &f))
		return GPUQ_ENOMEM;
	fprintf(out,
		"    \"prediction\": {\"intervalMs\": %" PRId64
		", \"runtimes\": \"%s\", \"passes\": "
		"%" PRIu64 ", \"predicted\": %zu, \"beyondCaps\": %zu, \"started\": %zu, "
		"\"medianAbsErrorMs\": %" PRId64 ", \"p90AbsErrorMs\": %" PRId64
		", \"meanAbsErrorMs\": %.0f}\n",
		r->predict_interval_ms, r->predict_history ? "History" : "Declared",
		r->predict_passes, f.seen, f.beyond, f.n, f.median, f.p90, f.mean);
	return GPUQ_OK;
}

static void put_budgets(const sim_report_t *r, FILE *out)
{
	static const char *const scope[] = {"LocalQueue", "Namespace", "ClusterQueue"};
	static const char *const state[] = {"OK", "Warning", "Over"};
	static const char *const action[] = {"Warn", "Lower", "Hold"};

	fprintf(out, "    \"budgets\": [");
	for (size_t i = 0; i < r->n_budgets; i++) {
		const queue_budget_view_t *b = &r->budgets[i];

		fprintf(out,
			"%s\n      {\"scope\": \"%s\", \"name\": \"%s\", \"unit\": \"%s\", "
			"\"limit\": %.6f, \"used\": %.6f, \"state\": \"%s\", \"action\": \"%s\", "
			"\"windowStartMs\": %" PRId64 ", \"windowEndMs\": %" PRId64 "}",
			i ? "," : "", scope[b->scope], b->name, b->cost ? "cost" : "GPU-hours",
			b->limit, b->used, state[b->state], action[b->action], b->window_start_ms,
			b->window_end_ms);
	}
	fprintf(out, "%s],\n", r->n_budgets ? "\n    " : "");
}

int sim_report_econ_json(const sim_report_t *r, FILE *out)
{
	idle_fig_t f;

	if (!r->econ)
		return GPUQ_OK;
	idle_figures(r, &f);
	fprintf(out, "  \"economics\": {\n");
	put_budgets(r, out);
	fprintf(out,
		"    \"idle\": {\"resource\": \"%s\", \"idleHours\": %.6f, \"reclaims\": %zu, "
		"\"returnedHours\": %.6f, \"idleHoursByClusterQueue\": {",
		r->trace->opt.util_resource, f.idle / HOUR_MS, f.reclaims, f.returned / HOUR_MS);
	for (size_t c = 0; c < r->trace->n_cqs && c < IDLE_CQS_MAX; c++)
		fprintf(out, "%s\"%s\": %.6f", c ? ", " : "",
			policy_cq_at(r->trace->policy, c)->name, f.idle_cq[c] / HOUR_MS);
	fprintf(out, "}},\n");
	fprintf(out,
		"    \"minRuntime\": {\"preemptions\": %zu, \"shortestVictimRunMs\": %" PRId64
		", \"shortestVictimRunMsByClusterQueue\": {",
		f.preempts, f.min_ran);
	for (size_t c = 0; c < r->trace->n_cqs && c < IDLE_CQS_MAX; c++)
		fprintf(out, "%s\"%s\": %" PRId64, c ? ", " : "",
			policy_cq_at(r->trace->policy, c)->name, f.min_ran_cq[c]);
	fprintf(out, "}}%s\n", r->predicted ? "," : "");
	if (r->predicted && put_prediction(r, out))
		return GPUQ_ENOMEM;
	fprintf(out, "  },\n");
	return GPUQ_OK;
}

void sim_report_econ_summary(const sim_report_t *r, FILE *out)
{
	idle_fig_t f;
	pred_fig_t p;

	if (!r->econ)
		return;
	idle_figures(r, &f);
	fprintf(out,
		"  economics: %.3f %s-hours held idle, %zu idle reclaim(s) returning %.3f; %zu "
		"preemption(s), the shortest victim run %" PRId64 " ms\n",
		f.idle / HOUR_MS, r->trace->opt.util_resource, f.reclaims, f.returned / HOUR_MS,
		f.preempts, f.min_ran);
	for (size_t i = 0; i < r->n_budgets; i++) {
		const queue_budget_view_t *b = &r->budgets[i];

		fprintf(out, "  budget %-28s %10.3f of %10.3f %s (%s)\n", b->name, b->used,
			b->limit, b->cost ? "cost" : "GPU-hours",
			b->state == QUEUE_BUDGET_OVER	   ? "over"
			: b->state == QUEUE_BUDGET_WARNING ? "warning"
							   : "ok");
	}
	if (!r->predicted)
		return;
	fprintf(out, "  predictions: %" PRIu64 " passes, %.3f s CPU (the longest %.3f s)\n",
		r->predict_passes, r->predict_cpu_s, r->predict_cpu_max_s);
	if (prediction_figures(r, &p) == GPUQ_OK)
		fprintf(out,
			"  predicted start (%s runtimes): %zu workloads pending at a pass, %zu "
			"beyond the caps; over the %zu predicted that started, absolute error "
			"median %.1f min, p90 %.1f min, mean %.1f min\n",
			r->predict_history ? "history" : "declared", p.seen, p.beyond, p.n,
			(double)p.median / 60000.0, (double)p.p90 / 60000.0, p.mean / 60000.0);
}

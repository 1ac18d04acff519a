/* qmetrics/econ.c: GPU economics' series (docs/economics.md, docs/metrics.md):
 * each budget's use, limit, share and state; the admitted workloads whose
 * GPUs are idle now, per ClusterQueue; idle reports; the prediction passes.
 * Copied from the core through its views when a snapshot is built, rendered
 * from the snapshot on a scrape's thread. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmetrics/internal.h"

#define put http_metrics_printf

void qm_econ_free(qm_econ_t *e)
{
	for (size_t i = 0; i < e->n_budgets; i++)
		free(e->budgets[i].name);
	free(e->budgets);
	free(e->idle);
	memset(e, 0, sizeof(*e));
}

static int fill_budgets(const queue_t *q, qm_econ_t *e)
{
	static const char *const scope[] = {"LocalQueue", "Namespace", "ClusterQueue"};
	size_t n = queue_budget_count(q);

	e->budgets = calloc(n ? n : 1, sizeof(*e->budgets));
	if (!e->budgets)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		queue_budget_view_t v;
		qm_budget_t *b = &e->budgets[e->n_budgets];
		size_t cap;

		if (queue_budget_view(q, i, &v))
			continue;
		cap = 2 * strlen(v.name) + 1; /* escaping at most doubles */
		b->name = malloc(cap);
		if (!b->name || http_metrics_label_escape(v.name, b->name, cap)) {
			free(b->name);
			return GPUQ_ENOMEM;
		}
		b->scope = (char *)scope[v.scope];
		b->unit = v.cost ? "cost" : "gpu_hours";
		b->used = v.used;
		b->limit = v.limit;
		b->state = (int)v.state;
		b->evaluated = v.evaluated_ms != INT64_MIN;
		e->n_budgets++;
	}
	return GPUQ_OK;
}

int qm_econ_fill(const queue_t *q, const qm_layout_t *l, const qm_econ_counts_t *c, uint32_t *idle,
		 qm_econ_t *e)
{
	e->counts = *c;
	if (!q || !l) {
		free(idle);
		return GPUQ_OK;
	}
	e->idle = idle;
	return fill_budgets(q, e);
}

static void family(http_metrics_text_t *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_budgets(const qm_econ_t *e, http_metrics_text_t *t)
{
	family(t, "gpuq_budget_used", "gauge",
	       "What a budget's LocalQueue, namespace or ClusterQueue used in its window so far "
	       "(GPU-hours, or cost at the flavors' prices), at its last evaluation.");
	for (size_t i = 0; i < e->n_budgets; i++)
		if (e->budgets[i].evaluated)
			put(t, "gpuq_budget_used{scope=\"%s\",name=\"%s\",unit=\"%s\"} %.6f\n",
			    e->budgets[i].scope, e->budgets[i].name, e->budgets[i].unit,
			    e->budgets[i].used);
	family(t, "gpuq_budget_limit", "gauge", "A budget's limit over its window.");
	for (size_t i = 0; i < e->n_budgets; i++)
		put(t, "gpuq_budget_limit{scope=\"%s\",name=\"%s\",unit=\"%s\"} %.6f\n",
		    e->budgets[i].scope, e->budgets[i].name, e->budgets[i].unit,
		    e->budgets[i].limit);
	family(t, "gpuq_budget_used_ratio", "gauge",
	       "A budget's use over its limit (1 or more: over it, its action applies; +Inf "
	       "for a limit of 0 with any use).");
	for (size_t i = 0; i < e->n_budgets; i++) {
		const qm_budget_t *b = &e->budgets[i];

		if (!b->evaluated)
			continue;
		if (b->limit > 0)
			put(t, "gpuq_budget_used_ratio{scope=\"%s\",name=\"%s\"} %.6f\n", b->scope,
			    b->name, b->used / b->limit);
		else
			put(t, "gpuq_budget_used_ratio{scope=\"%s\",name=\"%s\"} %s\n", b->scope,
			    b->name, b->used > 0 ? "+Inf" : "0");
	}
	family(t, "gpuq_budget_state", "gauge",
	       "A budget's state at its last evaluation: 0 within it, 1 past its warning share, "
	       "2 over its limit.");
	for (size_t i = 0; i < e->n_budgets; i++)
		if (e->budgets[i].evaluated)
			put(t, "gpuq_budget_state{scope=\"%s\",name=\"%s\"} %d\n",
			    e->budgets[i].scope, e->budgets[i].name, e->budgets[i].state);
}

void qm_econ_render(const qm_snap_t *s, http_metrics_text_t *t)
{
	const qm_econ_t *e = &s->econ;
	const qm_layout_t *l = s->layout;

	render_budgets(e, t);
	family(t, "gpuq_cluster_queue_idle_workloads", "gauge",
	       "Admitted workloads of a ClusterQueue with idleReclaim whose GPUs are below its "
	       "threshold now (gpuq serve --dcgm-url).");
	for (size_t c = 0; l && e->idle && c < l->n_cqs; c++)
		put(t, "gpuq_cluster_queue_idle_workloads{cluster_queue=\"%s\"} %" PRIu32 "\n",
		    l->cqs[c].label, e->idle[c]);
	family(t, "gpuq_idle_reports_total", "counter",
	       "Idle spells reported: an admitted workload idle for its ClusterQueue's "
	       "idleReclaim.for (an Event each).");
	put(t, "gpuq_idle_reports_total %" PRIu64 "\n", e->counts.idle_reports);
	family(t, "gpuq_prediction_passes_total", "counter",
	       "Prediction passes (the start of every pending workload), and those a cap "
	       "ended.");
	put(t, "gpuq_prediction_passes_total{result=\"complete\"} %" PRIu64 "\n",
	    e->counts.predict_passes - e->counts.predict_capped);
	put(t, "gpuq_prediction_passes_total{result=\"capped\"} %" PRIu64 "\n",
	    e->counts.predict_capped);
	family(t, "gpuq_prediction_last_pass_seconds", "gauge",
	       "How long the last prediction pass took (wall time on the controller thread).");
	put(t, "gpuq_prediction_last_pass_seconds %.6f\n", (double)e->counts.predict_last_ns / 1e9);
	family(t, "gpuq_prediction_workloads", "gauge",
	       "Pending workloads the last prediction pass simulated, and of them those it "
	       "saw start within its caps.");
	put(t, "gpuq_prediction_workloads{state=\"simulated\"} %" PRIu64 "\n",
	    e->counts.predict_simulated);
	put(t, "gpuq_prediction_workloads{state=\"started\"} %" PRIu64 "\n",
	    e->counts.predict_started);
}

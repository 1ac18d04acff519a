/* sim/report.c: statistics over a finished run, the JSON report and the summary. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "quota/quota.h"
#include "sim/internal.h"
#include "sim/sim.h"

int64_t sim_stats_percentile(const int64_t *sorted, size_t n, double p)
{
	double rank;
	size_t k;

	if (n == 0)
		return 0;
	if (p <= 0)
		return sorted[0];
	rank = ceil(p / 100.0 * (double)n);
	k = rank < 1 ? 1 : (size_t)rank;
	if (k > n)
		k = n;
	return sorted[k - 1];
}

double sim_stats_jain(const double *x, const double *w, size_t n)
{
	double sum = 0, sq = 0;

	for (size_t i = 0; i < n; i++) {
		double v = w && w[i] > 0 ? x[i] / w[i] : x[i];
		if (v < 0)
			v = 0;
		sum += v;
		sq += v * v;
	}
	if (n == 0 || sq == 0)
		return 1.0;
	return sum * sum / ((double)n * sq);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- groups of workloads: waits and usage per class, tenant, CQ ---- */

typedef struct {
	int64_t *waits; /* waits of admitted workloads (sorted before use) */
	size_t n, cap;	/* entries / allocated */
	size_t members; /* workloads in the group */
	double usage;	/* cluster share x ms admitted (see shape_shares) */
} group_t;

static int group_add(group_t *g, int64_t wait)
{
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 16;
		int64_t *grown = realloc(g->waits, ncap * sizeof(*grown));
		if (!grown)
			return GPUQ_ENOMEM;
		g->waits = grown;
		g->cap = ncap;
	}
	g->waits[g->n++] = wait;
	return GPUQ_OK;
}

static void groups_free(group_t *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++)
		free(g[i].waits);
	free(g);
}

static int64_t run_end(const sim_report_t *r, const sim_outcome_t *o)
{
	return o->state == SIM_WL_FINISHED ? o->finish_ms : r->end_ms;
}

/* Time admitted over all runs, including a run still going at the end. */
static int64_t admitted_ms(const sim_report_t *r, const sim_outcome_t *o)
{
	int64_t t = o->run_ms;

	if (o->state == SIM_WL_FINISHED || o->state == SIM_WL_ADMITTED)
		t += run_end(r, o) - o->last_admit_ms;
	return t;
}

struct stats {
	group_t all;			   /* every workload */
	group_t *cls;			   /* per class */
	group_t *lq;			   /* per LocalQueue (tenant) */
	group_t *cq;			   /* per ClusterQueue */
	int64_t makespan;		   /* last completion */
	int64_t capacity;		   /* nominal quota of the utilization resource, all CQs */
	double usage;			   /* utilization-resource amount x ms held, all runs */
	double useful;			   /* ... of runs that finished (no preempted work) */
	size_t counts[SIM_WL_DROPPED + 1]; /* workloads per final state */
	size_t n_cls, n_lq, n_cq;	   /* entries in cls, lq, cq */
};

/* Nominal quota of every trace resource summed over all CQs and flavors. */
static void resource_capacity(const sim_trace_t *t, int64_t *cap)
{
	for (size_t c = 0; c < t->n_cqs; c++) {
		const policy_cq_t *cq = policy_cq_at(t->policy, c);
		for (size_t g = 0; g < cq->n_groups; g++)
			for (size_t f = 0; f < cq->groups[g].n_flavors; f++) {
				const policy_flavor_quota_t *fq = &cq->groups[g].flavors[f];
				for (size_t k = 0; k < fq->n_resources; k++)
					for (size_t r = 0; r < t->n_res; r++)
						if (!strcmp(fq->resources[k].resource,
							    t->res_names[r]))
							cap[r] += quota_qty_amount(
							    t->res_names[r],
							    &fq->resources[k].nominal);
			}
	}
}

/* Per shape: the share of the cluster one workload holds, summed over
 * resources (each request over that resource's total nominal quota), so
 * tenants on different resources (GPUs, MIG slices) compare fairly. */
static int shape_shares(const sim_trace_t *t, double **out)
{
	int64_t *cap = calloc(t->n_res + 1, sizeof(*cap));
	double *share = calloc(t->n_shapes + 1, sizeof(*share));

	if (!cap || !share) {
		free(cap);
		free(share);
		return GPUQ_ENOMEM;
	}
	resource_capacity(t, cap);
	for (size_t i = 0; i < t->n_shapes; i++) {
		const sim_shape_t *sh = &t->shapes[i];
		for (size_t p = 0; p < sh->n_podsets; p++)
			for (size_t k = 0; k < sh->podsets[p].n_req; k++) {
				const sim_req_t *rq = &sh->podsets[p].req[k];
				if (cap[rq->res] > 0)
					share[i] += (double)rq->amount * sh->podsets[p].count /
						    (double)cap[rq->res];
			}
	}
	free(cap);
	*out = share;
	return GPUQ_OK;
}

static int stats_build(const sim_report_t *r, struct stats *st)
{
	const sim_trace_t *t = r->trace;
	double *share = NULL;
	int rc = GPUQ_OK;

	memset(st, 0, sizeof(*st));
	st->cls = calloc(t->n_classes + 1, sizeof(*st->cls));
	st->lq = calloc(t->n_lqs + 1, sizeof(*st->lq));
	st->cq = calloc(t->n_cqs + 1, sizeof(*st->cq));
	if (!st->cls || !st->lq || !st->cq || shape_shares(t, &share))
		return GPUQ_ENOMEM;
	st->n_cls = t->n_classes;
	st->n_lq = t->n_lqs;
	st->n_cq = t->n_cqs;
	for (size_t i = 0; i < r->n_wl && !rc; i++) {
		const sim_outcome_t *o = &r->wl[i];
		const sim_arrival_t *a = &t->arrivals[i];
		group_t *gs[4] = {&st->all, &st->cls[a->class_id], &st->lq[a->lq], &st->cq[o->cq]};
		double held = share[a->shape] * (double)admitted_ms(r, o);
		st->counts[o->state]++;
		st->usage += (double)o->amount * (double)admitted_ms(r, o);
		if (o->state == SIM_WL_FINISHED) {
			st->useful += (double)o->amount * (double)(o->finish_ms - o->last_admit_ms);
			if (o->finish_ms > st->makespan)
				st->makespan = o->finish_ms;
		}
		for (size_t g = 0; g < 4; g++) {
			if (g == 3 && o->cq >= t->n_cqs)
				continue;
			gs[g]->members++;
			gs[g]->usage += held;
			if (o->first_admit_ms >= 0 && !rc)
				rc = group_add(gs[g], o->first_admit_ms - a->at_ms);
		}
	}
	if (st->makespan == 0)
		st->makespan = r->end_ms;
	for (size_t k = 0; k < t->n_res; k++)
		if (!strcmp(t->res_names[k], t->opt.util_resource)) {
			int64_t *cap = calloc(t->n_res + 1, sizeof(*cap));
			if (!cap) {
				rc = GPUQ_ENOMEM;
				break;
			}
			resource_capacity(t, cap);
			st->capacity = cap[k];
			free(cap);
		}
	free(share);
	return rc;
}

static void stats_free(struct stats *st)
{
	free(st->all.waits);
	groups_free(st->cls, st->n_cls);
	groups_free(st->lq, st->n_lq);
	groups_free(st->cq, st->n_cq);
}

/* ---- JSON output ---- */

static void put_group(FILE *out, group_t *g)
{
	double sum = 0;

	qsort(g->waits, g->n, sizeof(*g->waits), cmp_i64);
	for (size_t i = 0; i < g->n; i++)
		sum += (double)g->waits[i];
	fprintf(out,
		"{\"workloads\": %zu, \"admitted\": %zu, \"meanMs\": %.1f, \"p50Ms\": %" PRId64
		", \"p99Ms\": %" PRId64 ", \"maxMs\": %" PRId64 "}",
		g->members, g->n, g->n ? sum / (double)g->n : 0.0,
		sim_stats_percentile(g->waits, g->n, 50), sim_stats_percentile(g->waits, g->n, 99),
		g->n ? g->waits[g->n - 1] : 0);
}

static void put_waits(FILE *out, const sim_report_t *r, struct stats *st)
{
	const sim_trace_t *t = r->trace;
	bool first = true;

	fprintf(out, "  \"waits\": {\n    \"all\": ");
	put_group(out, &st->all);
	fprintf(out, ",\n    \"byClass\": {");
	for (size_t c = 0; c < t->n_classes; c++) {
		if (!t->classes[c][0] || !st->cls[c].members)
			continue;
		fprintf(out, "%s\n      ", first ? "" : ",");
		gpuq_json_fputs(out, t->classes[c]);
		fprintf(out, ": ");
		put_group(out, &st->cls[c]);
		first = false;
	}
	fprintf(out, "%s},\n    \"byTenant\": {", first ? "" : "\n    ");
	first = true;
	for (size_t i = 0; i < t->n_lqs; i++) {
		const policy_lq_t *lq = policy_lq_at(t->policy, i);
		if (!st->lq[i].members)
			continue;
		fprintf(out, "%s\n      \"%s/%s\": ", first ? "" : ",", lq->namespace_, lq->name);
		put_group(out, &st->lq[i]);
		first = false;
	}
	fprintf(out, "%s},\n    \"byClusterQueue\": {", first ? "" : "\n    ");
	first = true;
	for (size_t i = 0; i < t->n_cqs; i++) {
		if (!st->cq[i].members)
			continue;
		fprintf(out, "%s\n      ", first ? "" : ",");
		gpuq_json_fputs(out, policy_cq_at(t->policy, i)->name);
		fprintf(out, ": ");
		put_group(out, &st->cq[i]);
		first = false;
	}
	fprintf(out, "%s}\n  },\n", first ? "" : "\n    ");
}

typedef struct {
	int64_t at;    /* time */
	int64_t delta; /* amount starting (+) or ending (-) */
} edge_t;

static int cmp_edge(const void *a, const void *b)
{
	const edge_t *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->delta < y->delta ? -1 : x->delta > y->delta;
}

/* amount x ms over capacity x makespan */
/* The longest wait of an admitted workload, ms. */
static int64_t longest_wait(const struct stats *st)
{
	int64_t m = 0;

	for (size_t i = 0; i < st->all.n; i++)
		m = st->all.waits[i] > m ? st->all.waits[i] : m;
	return m;
}

static double ratio(double used, const struct stats *st)
{
	if (!st->capacity || !st->makespan)
		return 0.0;
	return used / ((double)st->capacity * (double)st->makespan);
}

/* Usage of the utilization resource sampled every interval from 0 to the makespan. */
static int put_utilization(FILE *out, const sim_report_t *r, const struct stats *st)
{
	int64_t si = r->trace->opt.sample_interval_ms, used = 0;
	size_t n = 0, e = 0;
	edge_t *edges = calloc(2 * (r->n_wl + r->n_preempt) + 1, sizeof(*edges));

	if (!edges)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < r->n_wl; i++) {
		const sim_outcome_t *o = &r->wl[i];
		if (!o->amount || (o->state != SIM_WL_ADMITTED && o->state != SIM_WL_FINISHED))
			continue;
		edges[n++] = (edge_t){o->last_admit_ms, o->amount};
		edges[n++] = (edge_t){run_end(r, o), -o->amount};
	}
	for (size_t i = 0; i < r->n_preempt; i++) {
		const sim_preemption_t *p = &r->preempt[i];
		int64_t amount = r->wl[p->victim].amount;
		if (!amount)
			continue;
		edges[n++] = (edge_t){p->admitted_ms, amount};
		edges[n++] = (edge_t){p->at_ms, -amount};
	}
	qsort(edges, n, sizeof(*edges), cmp_edge);
	while (st->makespan / si >= SIM_SAMPLES_MAX)
		si *= 2; /* keep the series within its cap */
	fprintf(out,
		"  \"utilization\": {\"resource\": \"%s\", \"capacity\": %" PRId64
		", \"average\": %.4f, \"useful\": %.4f, \"sampleIntervalMs\": %" PRId64
		",\n    \"samples\": [",
		r->trace->opt.util_resource, st->capacity, ratio(st->usage, st),
		ratio(st->useful, st), si);
	for (int64_t k = 0; k * si <= st->makespan; k++) {
		while (e < n && edges[e].at <= k * si)
			used += edges[e++].delta;
		fprintf(out, "%s%s%" PRId64, k ? "," : "", k && k % 20 == 0 ? "\n      " : "",
			used);
	}
	fprintf(out, "]},\n");
	free(edges);
	return GPUQ_OK;
}

static int put_fairness(FILE *out, const sim_report_t *r, const struct stats *st)
{
	const sim_trace_t *t = r->trace;
	size_t cap = (t->n_lqs > t->n_cqs ? t->n_lqs : t->n_cqs) + 1, n = 0;
	double *x = calloc(cap, sizeof(*x)), *w = calloc(cap, sizeof(*w)), jt, jc;

	if (!x || !w) {
		free(x);
		free(w);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < t->n_lqs; i++) {
		const policy_lq_t *lq = policy_lq_at(t->policy, i);
		if (!st->lq[i].members || lq->fair_weight_milli <= 0)
			continue;
		x[n] = st->lq[i].usage;
		w[n++] = (double)lq->fair_weight_milli / 1000.0;
	}
	jt = sim_stats_jain(x, w, n);
	fprintf(out, "  \"fairness\": {\"tenants\": {\"n\": %zu, \"jain\": %.4f}, ", n, jt);
	n = 0;
	for (size_t i = 0; i < t->n_cqs; i++) {
		const policy_cq_t *cq = policy_cq_at(t->policy, i);
		if (!st->cq[i].members || cq->fair_weight_milli <= 0)
			continue;
		x[n] = st->cq[i].usage;
		w[n++] = (double)cq->fair_weight_milli / 1000.0;
	}
	jc = sim_stats_jain(x, w, n);
	fprintf(out, "\"clusterQueues\": {\"n\": %zu, \"jain\": %.4f}},\n", n, jc);
	free(x);
	free(w);
	return GPUQ_OK;
}

/* ---- chargeback: the core's ledger over the whole run ---- */

/* Usage over the run grouped by `by` (ledger_window: the rule
 * `gpuq report usage` follows), priced. */
static int charge_window(const sim_report_t *r, ledger_by_t by, ledger_report_t *out)
{
	ledger_query_t q = {0, r->end_ms, r->end_ms, by, r->prices, r->n_prices};

	return ledger_window(r->ledger, &q, out);
}

static void put_charge_rows(FILE *out, const char *key, const char *group, const ledger_report_t *w)
{
	bool first = true;

	fprintf(out, "    \"%s\": [", key);
	for (size_t i = 0; i < w->n_rows; i++) {
		const ledger_row_t *row = &w->rows[i];
		if (!row->accelerator)
			continue;
		fprintf(out, "%s\n      {\"%s\": ", first ? "" : ",", group);
		gpuq_json_fputs(out, row->group);
		fprintf(out, ", \"resource\": ");
		gpuq_json_fputs(out, row->resource);
		fprintf(out, ", \"nominalHours\": %.6f, \"borrowedHours\": %.6f, \"cost\": %.4f}",
			row->nominal_hours, row->borrowed_hours, row->cost);
		first = false;
	}
	fprintf(out, "%s]", first ? "" : "\n    ");
}

/* GPU-hours (every accelerator resource) and their cost per tenant
 * (LocalQueue), namespace and ClusterQueue, borrowed apart from nominal. */
static int put_chargeback(FILE *out, const sim_report_t *r)
{
	static const struct {
		ledger_by_t by;
		const char *key, *group;
	} views[] = {{LEDGER_BY_LOCALQUEUE, "byTenant", "localQueue"},
		     {LEDGER_BY_NAMESPACE, "byNamespace", "namespace"},
		     {LEDGER_BY_CLUSTERQUEUE, "byClusterQueue", "clusterQueue"}};
	ledger_report_t w;
	double nom = 0, bor = 0, cost = 0;
	int rc = GPUQ_OK;

	fprintf(out, "  \"chargeback\": {\"prices\": {");
	for (size_t i = 0; i < r->n_prices; i++) {
		fprintf(out, "%s", i ? ", " : "");
		gpuq_json_fputs(out, r->prices[i].flavor);
		fprintf(out, ": %.4f", r->prices[i].per_hour);
	}
	fprintf(out, "},\n");
	for (size_t v = 0; v < sizeof(views) / sizeof(views[0]) && !rc; v++) {
		rc = charge_window(r, views[v].by, &w);
		if (rc)
			break;
		put_charge_rows(out, views[v].key, views[v].group, &w);
		fprintf(out, ",\n");
		for (size_t i = 0; v == 0 && i < w.n_rows; i++)
			if (w.rows[i].accelerator) {
				nom += w.rows[i].nominal_hours;
				bor += w.rows[i].borrowed_hours;
				cost += w.rows[i].cost;
			}
		ledger_report_deinit(&w);
	}
	if (!rc)
		fprintf(out,
			"    \"all\": {\"nominalHours\": %.6f, \"borrowedHours\": %.6f, "
			"\"cost\": %.4f}},\n",
			nom, bor, cost);
	return rc;
}

static void put_span(FILE *out, const sim_report_t *r, const sim_topo_span_t *sp)
{
	fprintf(out, "{\"placed\": %" PRIu64, sp->placed);
	for (size_t i = 0; i < r->n_topo_levels; i++) {
		fprintf(out, ", ");
		gpuq_json_fputs(out, r->topo_levels[i]);
		fprintf(out, ": {\"mean\": %.2f, \"max\": %" PRIu32 ", \"inOne\": %" PRIu64 "}",
			sp->placed ? (double)sp->sum[i] / (double)sp->placed : 0.0, sp->max[i],
			sp->one[i]);
	}
	fprintf(out, "}");
}

/* "topology": over the admissions placed on a topology-aware flavor, the
 * domains each spanned at each level, over all and per class (only when
 * there were any). */
static void put_topology(FILE *out, const sim_report_t *r)
{
	const sim_trace_t *t = r->trace;

	if (!r->topo_all.placed)
		return;
	fprintf(out, "  \"topology\": {\"domainsSpanned\": ");
	put_span(out, r, &r->topo_all);
	fprintf(out, ",\n    \"byClass\": {");
	for (size_t c = 0, n = 0; r->topo_cls && c < t->n_classes; c++) {
		if (!t->classes[c][0] || !r->topo_cls[c].placed)
			continue;
		fprintf(out, "%s\n      ", n++ ? "," : "");
		gpuq_json_fputs(out, t->classes[c]);
		fprintf(out, ": ");
		put_span(out, r, &r->topo_cls[c]);
	}
	fprintf(out, "}},\n");
}

static void put_workload_ref(FILE *out, const sim_report_t *r, uint32_t wid)
{
	const sim_trace_t *t = r->trace;
	char name[SIM_NAME_MAX + 64], full[2 * SIM_NAME_MAX + 64];

	if (wid >= r->n_wl) {
		fprintf(out, "null");
		return;
	}
	sim_trace_workload_name(t, wid, name, sizeof(name));
	snprintf(full, sizeof(full), "%s/%s",
		 policy_lq_at(t->policy, t->arrivals[wid].lq)->namespace_, name);
	gpuq_json_fputs(out, full);
}

static void put_preemptions(FILE *out, const sim_report_t *r)
{
	const char *seen[64];
	size_t counts[64], n_seen = 0;

	fprintf(out, "  \"preemptions\": {\"total\": %zu, \"byReason\": {", r->n_preempt);
	for (size_t i = 0; i < r->n_preempt; i++) {
		size_t k = 0;
		while (k < n_seen && strcmp(seen[k], r->preempt[i].reason) != 0)
			k++;
		if (k == n_seen && n_seen < 64) {
			seen[n_seen] = r->preempt[i].reason;
			counts[n_seen++] = 0;
		}
		if (k < n_seen)
			counts[k]++;
	}
	for (size_t k = 0; k < n_seen; k++) {
		fprintf(out, "%s", k ? ", " : "");
		gpuq_json_fputs(out, seen[k]);
		fprintf(out, ": %zu", counts[k]);
	}
	fprintf(out, "},\n    \"events\": [");
	for (size_t i = 0; i < r->n_preempt; i++) {
		const sim_preemption_t *p = &r->preempt[i];
		fprintf(out, "%s\n      {\"atMs\": %" PRId64 ", \"victim\": ", i ? "," : "",
			p->at_ms);
		put_workload_ref(out, r, p->victim);
		fprintf(out, ", \"by\": ");
		put_workload_ref(out, r, p->by);
		fprintf(out, ", \"reason\": ");
		gpuq_json_fputs(out, p->reason);
		fprintf(out, ", \"ranMs\": %" PRId64 "}", p->at_ms - p->admitted_ms);
	}
	fprintf(out, "%s]},\n", r->n_preempt ? "\n    " : "");
}

static const char *state_name(uint8_t s)
{
	static const char *const names[] = {"Future",	"Pending",	"Admitted",
					    "Finished", "Inadmissible", "Dropped"};
	return s <= SIM_WL_DROPPED ? names[s] : "?";
}

static void put_workloads(FILE *out, const sim_report_t *r)
{
	const sim_trace_t *t = r->trace;
	size_t why = 0;

	fprintf(out, "  \"workloads\": [");
	for (size_t i = 0; i < r->n_wl; i++) {
		const sim_outcome_t *o = &r->wl[i];
		const sim_arrival_t *a = &t->arrivals[i];
		const policy_lq_t *lq = policy_lq_at(t->policy, a->lq);
		fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
		put_workload_ref(out, r, (uint32_t)i);
		fprintf(out, ", \"localQueue\": \"%s/%s\", \"clusterQueue\": ", lq->namespace_,
			lq->name);
		gpuq_json_fputs(out, o->cq < t->n_cqs ? policy_cq_at(t->policy, o->cq)->name : "");
		fprintf(out, ", \"class\": ");
		gpuq_json_fputs(out, t->classes[a->class_id]);
		fprintf(out,
			", \"priority\": %" PRId32 ", \"arrivalMs\": %" PRId64
			", \"admittedMs\": %" PRId64 ", \"finishedMs\": %" PRId64
			", \"waitMs\": %" PRId64 ", \"preemptions\": %u, \"state\": \"%s\"",
			a->priority, a->at_ms, o->first_admit_ms,
			o->state == SIM_WL_FINISHED ? o->finish_ms : -1,
			o->first_admit_ms >= 0 ? o->first_admit_ms - a->at_ms : -1,
			(unsigned)o->preemptions, state_name(o->state));
		while (why < r->n_why && r->why_wl[why] < i)
			why++;
		if (why < r->n_why && r->why_wl[why] == i) {
			fprintf(out, ", \"why\": ");
			gpuq_json_fputs(out, r->why[why]);
		}
		fputc('}', out);
	}
	fprintf(out, "%s],\n", r->n_wl ? "\n  " : "");
}

/* The same trace run with no starvation limit (r->without), beside this
 * run: its makespan, utilization and waits, as this report gives them, so
 * one report shows what the bounded wait changed. */
static int put_without(FILE *out, const sim_report_t *r)
{
	struct stats st;
	int rc;

	if (!r->without)
		return GPUQ_OK;
	rc = stats_build(r->without, &st);
	if (!rc) {
		fprintf(out,
			"  \"withoutStarvationLimit\": {\n  \"makespanMs\": %" PRId64
			", \"utilization\": {\"average\": %.4f, \"useful\": %.4f}, "
			"\"preemptions\": %zu,\n",
			st.makespan, ratio(st.usage, &st), ratio(st.useful, &st),
			r->without->n_preempt);
		put_waits(out, r->without, &st);
		fprintf(out, "  \"cycles\": %" PRIu64 "},\n", r->without->cycles);
	}
	stats_free(&st);
	return rc;
}

int sim_report_write_json(const sim_report_t *r, FILE *out)
{
	struct stats st;
	int rc = stats_build(r, &st);

	if (rc)
		goto done;
	fprintf(out, "{\n  \"trace\": ");
	gpuq_json_fputs(out, r->trace->trace_name);
	fprintf(out,
		",\n  \"counts\": {\"workloads\": %zu, \"finished\": %zu, \"admitted\": %zu, "
		"\"pending\": %zu, \"inadmissible\": %zu, \"dropped\": %zu, \"neverArrived\": "
		"%zu, \"preemptions\": %zu, \"cycles\": %" PRIu64 ", \"steps\": %" PRIu64
		", \"cycleCapHits\": %" PRIu64 "},\n",
		r->n_wl, st.counts[SIM_WL_FINISHED], st.counts[SIM_WL_ADMITTED],
		st.counts[SIM_WL_PENDING], st.counts[SIM_WL_INADMISSIBLE],
		st.counts[SIM_WL_DROPPED], st.counts[SIM_WL_FUTURE], r->n_preempt, r->cycles,
		r->steps, r->cycle_cap_hits);
	fprintf(out, "  \"makespanMs\": %" PRId64 ",\n  \"endMs\": %" PRId64 ",\n", st.makespan,
		r->end_ms);
	put_waits(out, r, &st);
	rc = put_without(out, r);
	if (!rc)
		rc = put_utilization(out, r, &st);
	if (!rc)
		rc = put_fairness(out, r, &st);
	if (!rc)
		rc = put_chargeback(out, r);
	if (rc)
		goto done;
	put_preemptions(out, r);
	put_topology(out, r);
	rc = sim_report_econ_json(r, out);
	if (rc)
		goto done;
	put_workloads(out, r);
	fprintf(out,
		"  \"cpu\": {\"coreSeconds\": %.3f, \"persistSeconds\": %.3f, \"totalSeconds\": "
		"%.3f, \"resumedSteps\": %" PRIu64 ", \"coreBytes\": %zu, \"maxRssKiB\": %ld",
		r->core_cpu_s, r->persist_cpu_s, r->total_cpu_s, r->resumed_steps, r->core_bytes,
		r->max_rss_kb);
	if (r->predicted) /* a prediction pass's cost: CPU, so on this line */
		fprintf(out, ", \"predictSeconds\": %.3f, \"predictPassMaxSeconds\": %.3f",
			r->predict_cpu_s, r->predict_cpu_max_s);
	fprintf(out, "}\n}\n");
	if (fflush(out) || ferror(out))
		rc = GPUQ_EIO;
done:
	stats_free(&st);
	return rc;
}

/* GPU-hours and cost per tenant and per ClusterQueue, one line each. */
static void summary_charges(FILE *out, const sim_report_t *r)
{
	static const struct {
		ledger_by_t by;
		const char *what;
	} views[] = {{LEDGER_BY_LOCALQUEUE, "tenant"}, {LEDGER_BY_CLUSTERQUEUE, "ClusterQueue"}};
	ledger_report_t w;

	for (size_t v = 0; v < 2; v++) {
		if (charge_window(r, views[v].by, &w))
			return;
		for (size_t i = 0; i < w.n_rows; i++) {
			const ledger_row_t *row = &w.rows[i];
			if (!row->accelerator)
				continue;
			fprintf(out,
				"  %-12s %-24s %-24s %10.3f GPU-h nominal %10.3f borrowed "
				"cost %.2f\n",
				views[v].what, row->group, row->resource, row->nominal_hours,
				row->borrowed_hours, row->cost);
		}
		ledger_report_deinit(&w);
	}
}

void sim_report_write_summary(const sim_report_t *r, FILE *out)
{
	struct stats st;
	const sim_trace_t *t = r->trace;

	if (stats_build(r, &st)) {
		stats_free(&st);
		return;
	}
	fprintf(out,
		"simulate %s: %zu workloads, %zu finished, %zu pending, %zu inadmissible, %zu "
		"preemptions, %" PRIu64 " cycles\n",
		t->trace_name, r->n_wl, st.counts[SIM_WL_FINISHED], st.counts[SIM_WL_PENDING],
		st.counts[SIM_WL_INADMISSIBLE], r->n_preempt, r->cycles);
	fprintf(out,
		"  makespan %.3f s, %s utilization %.1f%% of %" PRId64
		" (%.1f%% in runs that finished)\n",
		(double)st.makespan / 1000.0, t->opt.util_resource, 100.0 * ratio(st.usage, &st),
		st.capacity, 100.0 * ratio(st.useful, &st));
	for (size_t c = 0; c < t->n_classes; c++) {
		double sum = 0;
		if (!t->classes[c][0] || !st.cls[c].n)
			continue;
		for (size_t i = 0; i < st.cls[c].n; i++)
			sum += (double)st.cls[c].waits[i];
		fprintf(out, "  class %-12s mean wait %.3f s over %zu admitted\n", t->classes[c],
			sum / (double)st.cls[c].n / 1000.0, st.cls[c].n);
	}
	if (r->without) {
		struct stats w;

		if (!stats_build(r->without, &w))
			fprintf(out,
				"  without its starvation limits: makespan %.3f s, %s utilization "
				"%.1f%%, the longest wait %.3f s (with them: %.3f s)\n",
				(double)w.makespan / 1000.0, t->opt.util_resource,
				100.0 * ratio(w.usage, &w), (double)longest_wait(&w) / 1000.0,
				(double)longest_wait(&st) / 1000.0);
		stats_free(&w);
	}
	summary_charges(out, r);
	sim_report_econ_summary(r, out);
	fprintf(out, "  CPU: core %.3f s, persistence %.3f s, total %.3f s\n", r->core_cpu_s,
		r->persist_cpu_s, r->total_cpu_s);
	if (r->cycle_cap_hits)
		fprintf(out,
			"  WARNING: at %" PRIu64 " instant(s) admission cycles kept preempting "
			"until the cap of 1000 in a row moved time on: a preemption livelock in "
			"the queue core (the figures above are not trustworthy)\n",
			r->cycle_cap_hits);
	stats_free(&st);
}

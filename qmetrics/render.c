/* qmetrics/render.c: a snapshot as Prometheus text, family by family (every
 * sample of a family together, as the format requires). Label values come
 * escaped from the layout; the rest are fixed words. */
#include <inttypes.h>
#include <stdio.h>

#include "qmetrics/internal.h"

#define put http_metrics_printf

static const char *const evict_names[QM_EVICTS] = {"Preempted",
						   "PodsReadyTimeout",
						   "ClusterQueueStopped",
						   "IdleReclaim",
						   "MaximumExecutionTimeExceeded",
						   "NodeFailures"};
static const char *const preempt_names[QM_PREEMPTS] = {"InClusterQueue", "InCohortReclamation",
						       "InCohortFairSharing",
						       "InCohortReclaimWhileBorrowing"};

static void family(http_metrics_text_t *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A histogram's samples. labels: "" or `a="b",...`; le in the observations'
 * unit, which is 10^-decimals seconds (3: ms, 9: ns). */
static void hist(http_metrics_text_t *t, const char *name, const char *labels, const qm_hist_t *h,
		 const int64_t *le, size_t n, int decimals)
{
	uint64_t cum = 0, div = decimals == 3 ? 1000u : 1000000000u;
	const char *sep = labels[0] ? "," : "";

	for (size_t b = 0; b <= n; b++) {
		cum += h->buckets[b];
		if (b < n)
			put(t, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep,
			    (double)le[b] / (double)div, cum);
		else
			put(t, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
	}
	if (labels[0]) {
		put(t, "%s_sum{%s} %" PRIu64 ".%0*" PRIu64 "\n", name, labels, h->sum / div,
		    decimals, h->sum % div);
		put(t, "%s_count{%s} %" PRIu64 "\n", name, labels, cum);
	} else {
		put(t, "%s_sum %" PRIu64 ".%0*" PRIu64 "\n", name, h->sum / div, decimals,
		    h->sum % div);
		put(t, "%s_count %" PRIu64 "\n", name, cum);
	}
}

/* An amount in the metric's unit: cpu's millicores as cores, exactly. */
static const char *amount(int64_t v, bool milli, char *buf, size_t cap)
{
	if (!milli)
		snprintf(buf, cap, "%" PRId64, v);
	else
		snprintf(buf, cap, "%s%" PRId64 ".%03" PRId64, v < 0 ? "-" : "",
			 (v < 0 ? -v : v) / 1000, (v < 0 ? -v : v) % 1000);
	return buf;
}

/* Where a release's time goes (qmetrics_stage_t), and the loop's tails. */
static void render_release(const qm_snap_t *s, http_metrics_text_t *t)
{
	static const char *const stage[QMETRICS_STAGES] = {"queued", "handle", "cycle",
							   "commit", "patch",  "total"};

	family(t, "gpuq_controller_release_stage_seconds", "histogram",
	       "Where the time of a controller pass that released a workload went, from the "
	       "watch event reaching gpuq to the release PATCH answered, by stage: queued, "
	       "handle, cycle, commit, patch, and total.");
	for (int i = 0; i < QMETRICS_STAGES; i++) {
		char labels[32];

		snprintf(labels, sizeof(labels), "stage=\"%s\"", stage[i]);
		hist(t, "gpuq_controller_release_stage_seconds", labels, &s->stages[i], qm_stage_le,
		     QM_STAGE_BUCKETS, 9);
	}
	family(t, "gpuq_controller_loop_tail_seconds", "histogram",
	       "Time each controller pass spent after its patches (status writes queued, "
	       "metrics and web view snapshots, predictions): events that arrive meanwhile "
	       "wait for it.");
	hist(t, "gpuq_controller_loop_tail_seconds", "", &s->tail, qm_stage_le, QM_STAGE_BUCKETS,
	     9);
}

static void render_controller(const qm_snap_t *s, http_metrics_text_t *t)
{
	static const char *const result[2] = {"inadmissible", "success"};

	family(t, "gpuq_controller_cycle_duration_seconds", "histogram",
	       "Time the queueing core took for one admission cycle (its clock tick and its "
	       "admission pass), by whether it admitted a workload (success) or none "
	       "(inadmissible).");
	for (int r = 0; r < 2; r++) {
		char labels[32];

		snprintf(labels, sizeof(labels), "result=\"%s\"", result[r]);
		hist(t, "gpuq_controller_cycle_duration_seconds", labels, &s->cycle[r], qm_cycle_le,
		     QM_CYCLE_BUCKETS, 9);
	}
	family(t, "gpuq_store_commit_duration_seconds", "histogram",
	       "Time to commit the queueing core's changed records to the state store, which "
	       "happens before any decision is acted on.");
	hist(t, "gpuq_store_commit_duration_seconds", "", &s->commit, qm_commit_le,
	     QM_COMMIT_BUCKETS, 9);
	family(t, "gpuq_store_commit_failures_total", "counter",
	       "State store commits that failed; nothing is acted on until one succeeds.");
	put(t, "gpuq_store_commit_failures_total %" PRIu64 "\n", s->commit_failures);
	render_release(s, t);
}

/* Workload counts and counters per ClusterQueue. */
static void render_cq_workloads(const qm_snap_t *s, http_metrics_text_t *t)
{
	const qm_layout_t *l = s->layout;

	family(t, "gpuq_cluster_queue_pending_workloads", "gauge",
	       "Workloads waiting in a ClusterQueue, by why they wait (the queueing core's "
	       "reason).");
	for (size_t c = 0; c < l->n_cqs; c++)
		for (unsigned w = 0; w < QM_WAITS; w++)
			put(t,
			    "gpuq_cluster_queue_pending_workloads{cluster_queue=\"%s\","
			    "reason=\"%s\"} %" PRIu32 "\n",
			    l->cqs[c].label, queue_wait_name((queue_wait_t)w), s->cq[c].pending[w]);
	family(t, "gpuq_cluster_queue_admitted_workloads", "gauge",
	       "Workloads holding quota in a ClusterQueue: admitted, or evicted with pods "
	       "still stopping.");
	for (size_t c = 0; c < l->n_cqs; c++)
		put(t, "gpuq_cluster_queue_admitted_workloads{cluster_queue=\"%s\"} %" PRIu32 "\n",
		    l->cqs[c].label, s->cq[c].admitted);
	family(t, "gpuq_cluster_queue_admissions_total", "counter",
	       "Workloads a ClusterQueue admitted (a workload admitted again after an eviction "
	       "counts again).");
	for (size_t c = 0; c < l->n_cqs; c++)
		put(t, "gpuq_cluster_queue_admissions_total{cluster_queue=\"%s\"} %" PRIu64 "\n",
		    l->cqs[c].label, s->cq_ctr[c].admissions);
	family(t, "gpuq_cluster_queue_evictions_total", "counter",
	       "Workloads of a ClusterQueue evicted, by reason.");
	for (size_t c = 0; c < l->n_cqs; c++)
		for (int r = 0; r < QM_EVICTS; r++)
			put(t,
			    "gpuq_cluster_queue_evictions_total{cluster_queue=\"%s\",reason=\"%s\"}"
			    " "
			    "%" PRIu64 "\n",
			    l->cqs[c].label, evict_names[r], s->cq_ctr[c].evictions[r]);
	family(t, "gpuq_cluster_queue_preemptions_total", "counter",
	       "Workloads preempted to make room for a workload of this ClusterQueue, by "
	       "reason.");
	for (size_t c = 0; c < l->n_cqs; c++)
		for (int r = 0; r < QM_PREEMPTS; r++)
			put(t,
			    "gpuq_cluster_queue_preemptions_total{preempting_cluster_queue=\"%s\","
			    "reason=\"%s\"} %" PRIu64 "\n",
			    l->cqs[c].label, preempt_names[r], s->cq_ctr[c].preemptions[r]);
	family(t, "gpuq_cluster_queue_admission_wait_seconds", "histogram",
	       "Time from a workload's creation, or its return to the queue after an eviction, "
	       "to its admission, per ClusterQueue.");
	for (size_t c = 0; c < l->n_cqs; c++) {
		char labels[600]; /* an escaped name is at most 2 * 253 bytes */

		snprintf(labels, sizeof(labels), "cluster_queue=\"%s\"", l->cqs[c].label);
		hist(t, "gpuq_cluster_queue_admission_wait_seconds", labels, &s->cq_ctr[c].wait,
		     qm_wait_le, QM_WAIT_BUCKETS, 3);
	}
}

enum { Q_NOMINAL, Q_USAGE, Q_BORROWED, Q_LENT, Q_KINDS };

/* One quota family over every slot. */
static void render_quota_family(const qm_snap_t *s, http_metrics_text_t *t, int kind)
{
	static const char *const names[Q_KINDS] = {
	    "gpuq_cluster_queue_nominal_quota", "gpuq_cluster_queue_resource_usage",
	    "gpuq_cluster_queue_resource_borrowed", "gpuq_cluster_queue_resource_lent"};
	static const char *const helps[Q_KINDS] = {
	    "A ClusterQueue's nominal quota of a resource on a flavor (cpu in cores, memory in "
	    "bytes, other resources in units).",
	    "Quota of a resource on a flavor held by a ClusterQueue's admitted workloads.",
	    "The part of a ClusterQueue's usage above its nominal quota: borrowed from its "
	    "cohort.",
	    "The part of a ClusterQueue's unused quota that its cohort's other ClusterQueues "
	    "borrow now: each cohort's borrowing shared among the lenders in proportion to "
	    "what each could lend."};
	const qm_layout_t *l = s->layout;

	family(t, names[kind], "gauge", helps[kind]);
	for (size_t c = 0; c < l->n_cqs; c++)
		for (uint32_t i = l->cqs[c].slot0; i < l->cqs[c].slot0 + l->cqs[c].n_slots; i++) {
			const qm_slot_t *sl = &l->slots[i];
			const qm_quota_t *v = &s->quota[i];
			int64_t over = v->usage > v->nominal ? v->usage - v->nominal : 0;
			char num[40];

			if (kind == Q_LENT)
				snprintf(num, sizeof(num), "%.10g",
					 sl->milli ? v->lent / 1000.0 : v->lent);
			else
				amount(kind == Q_NOMINAL ? v->nominal
				       : kind == Q_USAGE ? v->usage
							 : over,
				       sl->milli, num, sizeof(num));
			put(t,
			    "%s{cluster_queue=\"%s\",cohort=\"%s\",flavor=\"%s\",resource=\"%s\"} "
			    "%s\n",
			    names[kind], l->cqs[c].label, l->cqs[c].cohort, sl->flavor_l, sl->res_l,
			    num);
		}
}

/* The labels of LocalQueue i (its CQ's series exist). */
static void lq_labels(const qm_layout_t *l, size_t i, char *buf, size_t cap)
{
	const qm_lq_t *q = &l->lqs[i];

	snprintf(buf, cap, "namespace=\"%s\",local_queue=\"%s\",cluster_queue=\"%s\"", q->ns,
		 q->label, l->cqs[q->cq].label);
}

static void render_lq(const qm_snap_t *s, http_metrics_text_t *t)
{
	const qm_layout_t *l = s->layout;
	char lb[1700]; /* three escaped names of at most 2 * 253 bytes */

	family(t, "gpuq_local_queue_pending_workloads", "gauge",
	       "Workloads waiting in a LocalQueue, by why they wait.");
	for (size_t i = 0; i < l->n_lqs; i++) {
		if (l->lqs[i].cq == UINT32_MAX)
			continue;
		lq_labels(l, i, lb, sizeof(lb));
		for (unsigned w = 0; w < QM_WAITS; w++)
			put(t, "gpuq_local_queue_pending_workloads{%s,reason=\"%s\"} %" PRIu32 "\n",
			    lb, queue_wait_name((queue_wait_t)w), s->lq[i].pending[w]);
	}
	family(t, "gpuq_local_queue_admitted_workloads", "gauge",
	       "Workloads of a LocalQueue holding quota.");
	for (size_t i = 0; i < l->n_lqs; i++) {
		if (l->lqs[i].cq == UINT32_MAX)
			continue;
		lq_labels(l, i, lb, sizeof(lb));
		put(t, "gpuq_local_queue_admitted_workloads{%s} %" PRIu32 "\n", lb,
		    s->lq[i].admitted);
	}
	family(t, "gpuq_local_queue_admissions_total", "counter",
	       "Workloads of a LocalQueue admitted.");
	for (size_t i = 0; i < l->n_lqs; i++) {
		if (l->lqs[i].cq == UINT32_MAX)
			continue;
		lq_labels(l, i, lb, sizeof(lb));
		put(t, "gpuq_local_queue_admissions_total{%s} %" PRIu64 "\n", lb,
		    s->lq_admissions[i]);
	}
	family(t, "gpuq_local_queue_resource_usage", "gauge",
	       "Quota of a resource on a flavor held by a LocalQueue's admitted workloads.");
	for (size_t i = 0; i < l->n_lqs; i++) {
		const qm_lq_t *q = &l->lqs[i];
		if (q->cq == UINT32_MAX)
			continue;
		lq_labels(l, i, lb, sizeof(lb));
		for (uint32_t k = 0; k < l->cqs[q->cq].n_slots; k++) {
			const qm_slot_t *sl = &l->slots[l->cqs[q->cq].slot0 + k];
			char num[40];
			put(t,
			    "gpuq_local_queue_resource_usage{%s,flavor=\"%s\",resource=\"%s\"} "
			    "%s\n",
			    lb, sl->flavor_l, sl->res_l,
			    amount(s->lq_usage[q->uslot0 + k], sl->milli, num, sizeof(num)));
		}
	}
}

void qm_render(const qm_snap_t *s, bool leader, http_metrics_text_t *t)
{
	family(t, "gpuq_controller_leader", "gauge",
	       "1 when this replica holds the controller's Lease and acts (always, without "
	       "leader election), 0 when it stands by. Only the leader has queue series.");
	put(t, "gpuq_controller_leader %d\n", leader ? 1 : 0);
	if (!s)
		return;
	render_controller(s, t);
	if (!s->layout)
		return;
	render_cq_workloads(s, t);
	for (int k = 0; k < Q_KINDS; k++)
		render_quota_family(s, t, k);
	render_lq(s, t);
	qm_econ_render(s, t);
	family(t, "gpuq_queue_metrics_omitted", "gauge",
	       "ClusterQueues and LocalQueues left without series by the caps on series.");
	put(t, "gpuq_queue_metrics_omitted{kind=\"cluster_queue\"} %" PRIu32 "\n",
	    s->layout->omitted_cqs);
	put(t, "gpuq_queue_metrics_omitted{kind=\"local_queue\"} %" PRIu32 "\n",
	    s->layout->omitted_lqs);
}

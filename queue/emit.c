/*
 * queue/emit.c: what a call tells its caller: evictions (with their
 * messages), idle workloads and budget changes appended to the result
 * buffers the next result hands out (cycle.c resets and finishes them).
 * A leaf of queue/: it calls no other file of the module.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append a message; returns its offset, or SIZE_MAX on allocation failure. */
#define EVICT_MSG_MAX 512 /* res_msgf's longest message, NUL included */

static size_t res_msgf(queue_t *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static size_t res_msgf(queue_t *q, const char *fmt, ...)
{
	char tmp[EVICT_MSG_MAX];
	va_list ap;
	size_t off = q->n_res_msg, len;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	len = strlen(tmp) + 1;
	if (queue_grow(&q->res_msg, &q->cap_res_msg, q->n_res_msg + len, 1))
		return SIZE_MAX;
	memcpy(q->res_msg + off, tmp, len);
	q->n_res_msg += len;
	return off;
}

const char *const queue_evict_names[] = {
    "InClusterQueue",	   "InCohortReclamation",
    "InCohortFairSharing", "InCohortReclaimWhileBorrowing",
    "PodsReadyTimeout",	   "ClusterQueueStopped",
    "IdleReclaim",	   "MaximumExecutionTimeExceeded",
    "NodeFailures",
};

static const char *const evict_why[] = {
    "prioritization in the ClusterQueue",
    "reclamation within the cohort",
    "Fair Sharing within the cohort",
    "reclamation within the cohort while borrowing",
};

int queue_emit_reserve(queue_t *q, size_t n)
{
	if (queue_grow(&q->res_ev, &q->cap_res_ev, q->n_res_ev + n, sizeof(*q->res_ev)) ||
	    queue_grow(&q->res_msg, &q->cap_res_msg, q->n_res_msg + n * EVICT_MSG_MAX, 1))
		return GPUQ_ENOMEM;
	return GPUQ_OK;
}

int queue_emit_eviction(queue_t *q, uint32_t victim, uint32_t preemptor, int reason)
{
	queue_eviction_t *e;
	size_t off;

	if (queue_grow(&q->res_ev, &q->cap_res_ev, q->n_res_ev + 1, sizeof(*q->res_ev)))
		return GPUQ_ENOMEM;
	if (preemptor != QUEUE_NONE)
		off = res_msgf(q, "Preempted to accommodate a workload (UID: %s) due to %s",
			       wl_uid(W(q, preemptor)), evict_why[reason]);
	else if (reason == QUEUE_EVICT_READY_TIMEOUT)
		off = res_msgf(q, "Exceeded the PodsReady timeout %" PRId64 " ms",
			       q->cfg.ready_timeout_ms);
	else if (reason == QUEUE_EVICT_IDLE_RECLAIM)
		off = res_msgf(q,
			       "Reclaimed: its GPUs stayed below %g%% utilization for %" PRId64
			       " ms while other workloads waited for its flavor",
			       q->cqs[W(q, victim)->cq].idle_thr,
			       q->cqs[W(q, victim)->cq].idle_after);
	else if (reason == QUEUE_EVICT_NODE_FAILED && q->nodes[q->failed_node].gone)
		off = res_msgf(q, "Node %s it was placed on was deleted",
			       q->node_names.s[q->failed_node]);
	else if (reason == QUEUE_EVICT_NODE_FAILED)
		off = res_msgf(q, "Node %s it was placed on was not Ready for %" PRId64 " s",
			       q->node_names.s[q->failed_node], q->cfg.node_failure_ms / 1000);
	else if (reason == QUEUE_EVICT_MAX_EXEC)
		off = res_msgf(q,
			       "Exceeded its maximum execution time of %" PRId64
			       " s: deactivated until its limit is changed",
			       queue_exec_limit(q, W(q, victim)) / 1000);
	else
		off = res_msgf(q, "The ClusterQueue is stopped");
	if (off == SIZE_MAX)
		return GPUQ_ENOMEM;
	e = &q->res_ev[q->n_res_ev++];
	e->victim = victim;
	e->victim_uid = wl_uid(W(q, victim));
	e->preemptor = preemptor;
	e->preemptor_uid = preemptor != QUEUE_NONE ? wl_uid(W(q, preemptor)) : NULL;
	e->reason = (queue_evict_reason_t)reason;
	e->reason_name = queue_evict_names[reason];
	e->message = (const char *)(uintptr_t)off; /* fixed up in res_finish */
	return GPUQ_OK;
}

int queue_emit_idle(queue_t *q, uint32_t wid)
{
	queue_idle_t *e;

	if (queue_grow(&q->res_idle, &q->cap_res_idle, q->n_res_idle + 1, sizeof(*q->res_idle)))
		return GPUQ_ENOMEM;
	e = &q->res_idle[q->n_res_idle++];
	e->wl = wid;
	e->uid = wl_uid(W(q, wid));
	e->idle_since_ms = W(q, wid)->idle_since;
	return GPUQ_OK;
}

int queue_emit_budget_change(queue_t *q, uint32_t b, uint8_t from, uint8_t to)
{
	if (queue_grow(&q->res_bch, &q->cap_res_bch, q->n_res_bch + 1, sizeof(*q->res_bch)))
		return GPUQ_ENOMEM;
	q->res_bch[q->n_res_bch++] =
	    (queue_budget_change_t){b, (queue_budget_state_t)from, (queue_budget_state_t)to};
	return GPUQ_OK;
}

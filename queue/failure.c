/* queue/failure.c: a node failed under admitted workloads (issue 33,
 * docs/topology.md). A node deleted, or not Ready for cfg.node_failure_ms
 * (Kueue's TAS rule: NodeFailureDelay, 30 s, from the Ready condition's
 * lastTransitionTime; a node with no Ready condition or gone fails at once),
 * takes its workloads' pods with it: each admitted workload placed on it
 * is evicted with reason NodeFailures and requeued, so the next cycle
 * places it again on healthy nodes. Kueue first tries to swap the one
 * failed node for another in the same domain; gpuq evicts and admits
 * again, which finds such a node when there is one. A cordon
 * (spec.unschedulable) alone evicts nothing. */
#include <inttypes.h>
#include <stdlib.h>

#include "queue/internal.h"

/* Whether node nid counts as failed at now. */
static bool node_failed(const queue_t *q, uint32_t nid, int64_t now)
{
	const node_t *n = &q->nodes[nid];

	if (n->gone)
		return true;
	return n->not_ready && n->not_ready_since <= now &&
	       (uint64_t)now - (uint64_t)n->not_ready_since >= (uint64_t)q->cfg.node_failure_ms;
}

/* The first failed node workload w is placed on, or QUEUE_NONE. */
static uint32_t failed_node_of(const queue_t *q, const wl_t *w, int64_t now)
{
	for (uint32_t k = 0; w->place && k < w->place->n; k++)
		if (node_failed(q, w->place->e[k].node, now))
			return w->place->e[k].node;
	return QUEUE_NONE;
}

/* Mark every failed node that no admitted workload holds any more settled
 * (nothing will be placed on it again until it is set anew). held[] marks
 * the nodes an admitted workload holds. */
static void settle(queue_t *q, const uint8_t *held, int64_t now)
{
	for (size_t i = 0; i < q->node_names.n; i++) {
		node_t *n = &q->nodes[i];

		if (n->settled || held[i] || !node_failed(q, (uint32_t)i, now))
			continue;
		n->settled = true;
		q->n_nodes_down--;
	}
}

/* The admitted workloads placed on a failed node into *due; held[] marks
 * every node an admitted workload (not one of due's) holds. */
static int collect(queue_t *q, int64_t now, u32vec_t *due, uint8_t *held)
{
	for (size_t c = 0; c < q->cq_names.n; c++)
		for (size_t i = 0; i < q->cqs[c].adm.n; i++) {
			uint32_t wid = q->cqs[c].adm.v[i];
			const wl_t *w = Wc(q, wid);

			if (w->state != QUEUE_WL_ADMITTED || !w->place)
				continue;
			if (failed_node_of(q, w, now) == QUEUE_NONE) {
				for (uint32_t k = 0; k < w->place->n; k++)
					held[w->place->e[k].node] = 1;
				continue;
			}
			if (queue_emit_reserve(q, due->n + 1) || queue_vpush(due, wid))
				return GPUQ_ENOMEM;
		}
	return GPUQ_OK;
}

int queue_topo_failures(queue_t *q, int64_t now)
{
	u32vec_t due = {0};
	uint8_t *held;
	int rc;

	if (!q->n_nodes_down)
		return GPUQ_OK;
	held = calloc(q->node_names.n + 1, 1);
	if (!held)
		return GPUQ_ENOMEM;
	rc = collect(q, now, &due, held);
	if (due.n > 1)
		qsort_r(due.v, due.n, sizeof(uint32_t), queue_adm_cmp, q);
	for (size_t i = 0; i < due.n; i++) {
		int erc;

		q->failed_node = failed_node_of(q, Wc(q, due.v[i]), now);
		erc = queue_wl_evict(q, due.v[i], QUEUE_NONE, QUEUE_EVICT_NODE_FAILED);
		GPUQ_ASSERT(erc == GPUQ_OK); /* its report has room */
		if (q->cfg.release_on_evict && queue_wl_release(q, due.v[i], now)) {
			q->release_lost = true; /* still EVICTING: see release_lost() */
			rc = GPUQ_ENOMEM;
		}
	}
	if (!rc)
		settle(q, held, now);
	free(due.v);
	free(held);
	return rc;
}

int64_t queue_topo_failures_next(const queue_t *q, int64_t now)
{
	int64_t t = INT64_MAX;

	for (size_t i = 0; q->n_nodes_down && i < q->node_names.n; i++) {
		const node_t *n = &q->nodes[i];
		int64_t at;

		if (n->settled || (!n->gone && !n->not_ready))
			continue;
		if (n->gone || n->not_ready_since > INT64_MAX - q->cfg.node_failure_ms)
			at = n->gone ? now : INT64_MAX;
		else
			at = n->not_ready_since + q->cfg.node_failure_ms;
		if (at < t)
			t = at;
	}
	return t;
}

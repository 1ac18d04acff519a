/* engine/change.c: engine_change_apply, the one call by which a driver
 * changes the core outside a step: a tagged change applied under the
 * core's rules, refused without a core, each refusal said once. */
#include "engine/internal.h"

/* How a change is named in its refusal ("finish of workload ..."). */
static const char *const change_names[ENGINE_CHANGE_COUNT] = {
    [ENGINE_CHANGE_ADD] = "add",
    [ENGINE_CHANGE_UPDATE] = "update",
    [ENGINE_CHANGE_LIMIT] = "wall-clock limit",
    [ENGINE_CHANGE_PODS_READY] = "pods ready",
    [ENGINE_CHANGE_FINISH] = "finish",
    [ENGINE_CHANGE_DELETE] = "delete",
    [ENGINE_CHANGE_UTILIZATION] = "utilization",
    [ENGINE_CHANGE_ADOPT] = "adoption",
    [ENGINE_CHANGE_CARRY] = "carried admission",
    [ENGINE_CHANGE_PODS_ADD] = "pods added",
    [ENGINE_CHANGE_EVICTED] = "eviction done",
    [ENGINE_CHANGE_PREDICT_SET] = "predicted start",
    [ENGINE_CHANGE_PREDICT_SHOW] = "predicted start shown",
    [ENGINE_CHANGE_LQ_USAGE_SEED] = "usage seed",
    [ENGINE_CHANGE_LEDGER_MERGE] = "ledger merge",
    [ENGINE_CHANGE_NODE_SET] = "node",
    [ENGINE_CHANGE_NODE_DELETE] = "node deletion",
};

/* ch applied to core q: the core's return code. *said: the core wrote
 * diag itself (its own words, for the changes whose calls take one). */
static int apply(queue_t *q, const engine_change_t *ch, bool *said, gpuq_diag_t *diag)
{
	switch (ch->kind) {
	case ENGINE_CHANGE_ADD:
		*said = true;
		return queue_workload_add(q, ch->spec, ch->now, ch->id, diag);
	case ENGINE_CHANGE_UPDATE:
		*said = true;
		return queue_workload_update(q, ch->spec, ch->now, ch->changed, diag);
	case ENGINE_CHANGE_LIMIT:
		return queue_workload_limit_set(q, ch->uid, ch->max_exec_s, ch->now, ch->changed);
	case ENGINE_CHANGE_PODS_READY:
		return queue_workload_pods_ready(q, ch->uid, ch->now);
	case ENGINE_CHANGE_FINISH:
		return queue_workload_finish(q, ch->uid, ch->now);
	case ENGINE_CHANGE_DELETE:
		return queue_workload_delete(q, ch->uid, ch->now);
	case ENGINE_CHANGE_UTILIZATION:
		return queue_workload_utilization(q, ch->uid, ch->value, ch->now);
	case ENGINE_CHANGE_ADOPT:
		return queue_workload_adopt(q, ch->uid, ch->adopt, ch->n_adopt, ch->now);
	case ENGINE_CHANGE_CARRY:
		return queue_workload_carry(q, ch->uid, ch->admitted_ms, ch->exec_ms);
	case ENGINE_CHANGE_PODS_ADD:
		return queue_workload_pods_add(q, ch->uid, ch->pods, ch->now);
	case ENGINE_CHANGE_EVICTED:
		return queue_workload_evicted(q, ch->uid, ch->now);
	case ENGINE_CHANGE_PREDICT_SET:
		return queue_workload_predict_set(q, ch->uid, ch->start_ms);
	case ENGINE_CHANGE_PREDICT_SHOW:
		return queue_workload_predict_show(q, ch->uid, ch->show, ch->was);
	case ENGINE_CHANGE_LQ_USAGE_SEED:
		return queue_lq_usage_seed(q, ch->lq, ch->value);
	case ENGINE_CHANGE_LEDGER_MERGE:
		*said = true;
		return queue_ledger_merge(q, ch->part, ch->len, ch->merged, diag);
	case ENGINE_CHANGE_NODE_SET:
		*said = true;
		return queue_node_set(q, ch->node_spec, diag);
	case ENGINE_CHANGE_NODE_DELETE:
		return queue_node_delete(q, ch->node);
	case ENGINE_CHANGE_COUNT:
		break;
	}
	return GPUQ_EINVAL;
}

int engine_change_apply(engine_t *e, const engine_change_t *ch, gpuq_diag_t *diag)
{
	bool said = false;
	int rc;

	if ((unsigned)ch->kind >= ENGINE_CHANGE_COUNT)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "engine: no change of kind %d",
				     (int)ch->kind);
	if (!e->q)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "engine: %s of workload \"%s\": no policy in force yet",
				     change_names[ch->kind], ch->uid ? ch->uid : "");
	rc = apply(e->q, ch, &said, diag);
	if (!rc || said)
		return rc;
	if (ch->kind == ENGINE_CHANGE_LQ_USAGE_SEED)
		return gpuq_diag_set(diag, rc, "%s of LocalQueue %u: %s", change_names[ch->kind],
				     ch->lq, gpuq_strerror(rc));
	if (ch->kind == ENGINE_CHANGE_NODE_DELETE)
		return gpuq_diag_set(diag, rc, "%s of \"%s\": %s", change_names[ch->kind],
				     ch->node ? ch->node : "", gpuq_strerror(rc));
	return gpuq_diag_set(diag, rc, "%s of workload \"%s\": %s", change_names[ch->kind],
			     ch->uid ? ch->uid : "", gpuq_strerror(rc));
}

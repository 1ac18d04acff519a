/*
 * engine internals, shared by the .c files of engine/ only (never included from outside
 * engine/): the policy -> core translation of one ClusterQueue, used to add
 * it (engine_core_build), to re-apply it (engine_core_rebuild) and to
 * compare two (engine_core_apply); the full rewrite of a store's core
 * records, for engine_persist_full and engine_commit.
 */
#ifndef GPUQ_ENGINE_INTERNAL_H
#define GPUQ_ENGINE_INTERNAL_H

#include "engine/engine.h"

/* The core's spec of one ClusterQueue, pointing into the policy (names) and
 * into itself (groups, flavors, quotas). */
typedef struct {
	queue_cq_spec_t spec;				     /* what queue_cq_add takes */
	queue_group_spec_t groups[POLICY_GROUPS_MAX];	     /* spec.groups */
	queue_flavor_quota_spec_t flavors[POLICY_GROUPS_MAX] /* each group's flavors */
					 [POLICY_GROUP_FLAVORS_MAX];
	queue_quota_spec_t *quotas; /* every quota, group then flavor then resource
				       order (malloc'd: engine_cq_spec_deinit) */
	size_t n_quotas;	    /* entries in quotas */
} engine_cq_spec_t;

/* The core's quota triple of one policy resource quota (quota_qty_amount
 * units; an absent limit is QUEUE_UNLIMITED). */
queue_quota_spec_t engine_quota_of(const policy_res_quota_t *rq);

/* Fill out from cq: policies, groups, quotas converted by quota_qty_amount.
 * GPUQ_ENOMEM (nothing to free then). */
int engine_cq_spec_init(engine_cq_spec_t *out, const policy_cq_t *cq);

/* Free what engine_cq_spec_init allocated. */
void engine_cq_spec_deinit(engine_cq_spec_t *spec);

/* engine_persist_full's batch (persist.c): mark every record of q changed,
 * add a delete of every stored core record of s whose object q does not
 * hold, and stage q's records (engine_stage) into txn. The batch's sticky
 * error, or a scan's. */
int engine_stage_full(store_t *s, store_txn_t *txn, queue_t *q);

#endif

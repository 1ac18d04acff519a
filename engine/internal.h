/*
 * engine internals, shared by the .c files of engine/ only (never included from outside
 * engine/): the policy -> core translation of one ClusterQueue, used to add
 * it (engine_core_build), to re-apply it (engine_core_rebuild) and to
 * compare two (engine_core_apply); the one commit path of engine_commit,
 * engine_persist and engine_persist_full; engine_t itself.
 */
#ifndef GPUQ_ENGINE_INTERNAL_H
#define GPUQ_ENGINE_INTERNAL_H

#include "engine/engine.h"
#include "engine/engine_store.h"

/* The batch a driver's stage function is handed: the store's own. */
struct engine_batch {
	store_txn_t *txn; /* the commit's write batch */
};

/* A vector of T: items, how many, room for how many. */
#define ENGINE_VEC(T)                                                                              \
	struct {                                                                                   \
		T *items;                                                                          \
		size_t n_items, cap;                                                               \
	}

/* One result of a step, kept for the driver's acts (step.c). */
typedef struct {
	engine_phase_t phase;  /* the tick's or a cycle's */
	queue_result_t res;    /* pointing into the kept lists once linked */
	size_t admissions;     /* its first admission in engine_kept_t.admissions */
	size_t evictions;      /* ... eviction */
	size_t changes;	       /* ... pending change */
	size_t idles;	       /* ... idle workload */
	size_t budget_changes; /* ... budget change */
} engine_kept_result_t;

/* A step's results, copied out of the core's per-call arrays (only when the
 * driver acts on them); reused from step to step, freed at engine_close. */
typedef struct {
	ENGINE_VEC(engine_kept_result_t) results;	  /* in the order booked */
	ENGINE_VEC(queue_admission_t) admissions;	  /* every result's, in order */
	ENGINE_VEC(size_t) assign_at;			  /* per admission: its first assign */
	ENGINE_VEC(queue_assign_t) assigns;		  /* the admissions' assignments */
	ENGINE_VEC(queue_eviction_t) evictions;		  /* every result's, in order */
	ENGINE_VEC(size_t) text_at;			  /* per eviction: its message in text */
	ENGINE_VEC(char) text;				  /* the evictions' messages, NUL-ended */
	ENGINE_VEC(queue_pending_change_t) changes;	  /* every result's */
	ENGINE_VEC(queue_idle_t) idles;			  /* every result's */
	ENGINE_VEC(queue_budget_change_t) budget_changes; /* every result's */
} engine_kept_t;

/* Free what k holds and zero it. */
void engine_kept_free(engine_kept_t *k);

/* What a driver holds (engine.c; engine_policy_set and engine_core_reset
 * in policyset.c). */
struct engine {
	policy_t *policy;   /* the policy in force (one reference) */
	queue_t *q;	    /* the core */
	store_t *store;	    /* the state store; NULL: memory only */
	queue_config_t cfg; /* the core's configuration */
	bool read_only;	    /* the store is open to read only */
	bool resumed;	    /* engine_open restored core records */
	bool full_next;	    /* the next commit rewrites every core record */
	bool restore_due;   /* opened without a policy over a store holding core
			       records: the first engine_policy_set restores them */
	engine_kept_t kept; /* the last step's results, for its acts (step.c) */
};

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

/* The one commit path (persist.c): begin a batch of s, stage q's changed
 * records (engine_stage) or, when full, all of them plus a delete of every
 * stored core record whose object q does not hold, then what stage (may be
 * NULL) adds; commit (*seq, may be NULL, as store_txn_commit); on success
 * clear q's changed set. On failure the changed set is kept and diag names
 * the step: "state store: no batch: ...", "state store: building the
 * batch: ...", "state store: commit failed: ...". */
int engine_batch_commit(store_t *s, queue_t *q, bool full, engine_stage_fn stage, void *ctx,
			uint64_t *seq, gpuq_diag_t *diag);

/* engine_core_rebuild for a throwaway copy (a prediction pass): carries
 * only the workloads keep(ctx, id) accepts (keep NULL: all of them; a
 * workload left out is neither carried nor reported lost), and leaves the
 * copy's changed set empty (it is never persisted). A copy that needs a few
 * thousand of 100,000 pending workloads costs what those few take, not a
 * second core. Returns as engine_core_rebuild. */
int engine_core_copy(const queue_t *old, policy_t *newp, const queue_config_t *cfg,
		     engine_copy_keep_fn keep, void *ctx, queue_t **out,
		     engine_rebuild_report_t *rep, gpuq_diag_t *diag);
/* engine_core_copy in its two halves (engine_fork_begin, engine_fork_end):
 * _read reads old, each record it keeps encoded and held, the copy's core
 * built from newp (a reference held) with old's nodes and ledger; _finish
 * applies the records, on any thread, and frees cp whatever it returns;
 * _free drops one not finished (NULL taken). */
typedef struct engine_core_copy engine_core_copy_t;
int engine_core_copy_read(const queue_t *old, policy_t *newp, const queue_config_t *cfg,
			  engine_copy_keep_fn keep, void *ctx, engine_core_copy_t **out,
			  gpuq_diag_t *diag);
int engine_core_copy_finish(engine_core_copy_t *cp, queue_t **out, engine_rebuild_report_t *rep,
			    gpuq_diag_t *diag);
void engine_core_copy_free(engine_core_copy_t *cp);

#endif

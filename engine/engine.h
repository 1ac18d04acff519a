/*
 * engine: where the policy snapshot, the queueing core and the state store
 * meet. It translates a policy_t into a queue core (flavors, cohorts,
 * ClusterQueues with their quotas, LocalQueues), persists the core's changed
 * records into a store batch and restores them, and rebuilds a core when the
 * cluster's policy objects change shape, carrying every workload, usage and
 * ledger over. Both drivers use it: `gpuq simulate` (sim/) and the daemon's
 * controller; neither has its own copy of any of this. policy/, queue/ and
 * store/ do not know about each other; only this module includes all three.
 *
 * The design decision that matters: the core's records (queue_record_encode /
 * queue_record_apply, keyed by names, never ids) are the only bridge between
 * two cores and between a core and the store. A restart restores records
 * into a core built from the policy; a policy change moves records from the
 * old core into a core built from the new policy (engine_core_rebuild). So a
 * rebuilt core and a restarted one are the same thing, and what cannot be
 * carried over (a record naming an object the new policy lacks) is found in
 * one place and handed back to the caller instead of being lost silently.
 *
 * No clock and no globals; it does I/O only through the store it is given
 * and logs only an encode failure (engine_stage) and reports it is asked to
 * log. Not thread-safe: a queue_t and a store_t are used by one thread at a
 * time.
 */
#ifndef GPUQ_ENGINE_H
#define GPUQ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "policy/policy.h"
#include "queue/queue.h"
#include "store/store.h"

/* ---- Building a core from a policy snapshot ---- */

/* Create a queue core (queue_create with cfg; NULL: queue_config_default)
 * holding p's objects, in p's order: every ResourceFlavor (nodeLabels,
 * nodeTaints, tolerations), every Cohort (fair-sharing weight), every
 * ClusterQueue (cohort, resource groups with nominal / borrowing / lending
 * quotas converted by quota_qty_amount, queueing strategy, preemption, stop
 * policy, weight), every LocalQueue (its ClusterQueue, weight). Ids in the
 * core follow that order, so two builds from one policy agree. p must be
 * finished (policy_finish); the core copies what it keeps, so p may be
 * released afterwards. LocalQueue stop policies and namespace selectors are
 * not the core's (the caller checks policy_cq_selects before adding a
 * workload). On GPUQ_OK *out is the caller's (queue_destroy); on failure
 * *out is NULL and diag names the object: GPUQ_ENOMEM, or the core's refusal
 * (GPUQ_EINVAL, GPUQ_ELIMIT, GPUQ_EEXIST) of an object the policy accepted. */
int engine_core_build(const policy_t *p, const queue_config_t *cfg, queue_t **out,
		      gpuq_diag_t *diag);

/* A workload's toleration effect by name into the core's: policy's one map
 * (policy_effect_named; NULL or "" is every effect). GPUQ_OK, or
 * GPUQ_EINVAL for a name Kubernetes does not know: that toleration
 * tolerates no taint, so the driver leaves it out of the pod set. */
int engine_effect_named(const char *name, queue_effect_t *out);

/* The policy's economics into q (engine_core_build does it; docs/
 * economics.md): the PriorityClasses' gpuq.dev/min-runtime by value
 * (queue_min_runtimes_set), and every budget (queue_budgets_set): each
 * ClusterQueue's spec.budget, each LocalQueue's (scope LocalQueue or
 * Namespace), charging cost budgets at the flavors' price annotations.
 * (ClusterQueues' minRuntime and idleReclaim travel with their spec.) The
 * core's refusal, naming the object, or GPUQ_ENOMEM. */
int engine_core_econ(queue_t *q, const policy_t *p, gpuq_diag_t *diag);

/* ---- The core's records in a store ----
 *
 * Record type ids 1..6 are the core's queue_rec_type_t values, kept in the
 * sub-databases "queue_meta", "clusterqueues", "tenants", "workloads",
 * "usage" (the usage ledger) and "budgets" (each budget's state; tools
 * recognize core records by id). A driver's own records use ids
 * from STORE_TYPE_DRIVER_FIRST up, in the same batches. */

/* Name the core's record types in opts->types (other ids untouched). */
void engine_store_types(store_opts_t *opts);

/* Structural check of a stored core record without a policy: a core type, a
 * key of 1..QUEUE_KEY_MAX bytes ("meta" for the meta record), a value of
 * 1..QUEUE_RECORD_MAX bytes starting with a known encoding version (1). Deep
 * decoding needs a core (queue_record_apply). GPUQ_OK, or GPUQ_ECORRUPT with
 * diag naming the problem. */
int engine_record_check(unsigned type, const void *key, size_t klen, const void *val, size_t vlen,
			gpuq_diag_t *diag);

/* Add every record q changed since queue_dirty_clear to the batch: a put of
 * its encoding, or a delete when the object is gone. Sticky like store_put
 * (an encode failure becomes the batch's error, logged once). Does not clear
 * q's changed set: do that (queue_dirty_clear) after the commit succeeded.
 * For drivers that commit their own records in the same batch. */
int engine_stage(store_txn_t *txn, const queue_t *q);

/* engine_stage in a new batch, commit it, and on success queue_dirty_clear;
 * *seq (may be NULL) as store_txn_commit. On failure the changed set is
 * kept, so a later call retries it, and diag (may be NULL) names the step:
 * store_txn_begin's, engine_stage's or store_txn_commit's code (LMDB
 * failures are also logged once by the store). An empty changed set commits
 * nothing. */
int engine_persist(store_t *s, queue_t *q, uint64_t *seq, gpuq_diag_t *diag);

/* Make the store's core records exactly q's, in one batch: mark every live
 * record of q changed (queue_dirty_all), delete every stored core record
 * whose object q does not hold (a ClusterQueue, LocalQueue or workload the
 * core dropped), put every record of q; commit; on success clear q's changed
 * set. Costs a scan of the four core tables: use it after
 * engine_core_rebuild (which may drop objects whose records engine_persist
 * would leave behind, and a restore from such a store fails) and when the
 * store's content is in doubt, not per cycle. Returns as engine_persist,
 * plus store_scan's errors. */
int engine_persist_full(store_t *s, queue_t *q, uint64_t *seq, gpuq_diag_t *diag);

/* Apply every stored core record into q (built from the policy the records
 * were written under, holding no workloads), in type order (meta,
 * ClusterQueues, tenants, workloads) and key order, then queue_restore_done.
 * Returns GPUQ_OK, the store's error, or the core's (GPUQ_ECORRUPT /
 * GPUQ_ENOTFOUND / GPUQ_EEXIST) with diag naming the record type and key
 * ("state store: workloads record \"uid-7\": ..."). After a failure q is
 * unusable: destroy it. */
int engine_restore(store_t *s, queue_t *q, gpuq_diag_t *diag);

/* ---- A policy change the core takes in place ---- */

typedef struct {
	size_t cqs_updated; /* ClusterQueues whose spec changed (queue_cq_update) */
	char why[160];	    /* GPUQ_EINVAL: what needs a rebuild ("Cohort x changed") */
} engine_apply_report_t;

/* Take newp into q, a core built from oldp (by engine_core_build or
 * engine_core_rebuild), without touching its workloads, when newp keeps the
 * core's shape: the same ResourceFlavors as the core keeps them (node
 * labels, taints, tolerations), the same cohorts with the same quotas,
 * parents and weights, the same ClusterQueues in the same order under the
 * same cohorts with resource groups of the same shape (covered resources,
 * flavors), the same LocalQueues (ClusterQueue, weight). Then every
 * ClusterQueue whose spec changed (quotas, limits, strategy, preemption,
 * fair sharing, stop policy, minimum runtime, idle reclaim) is updated with
 * queue_cq_update (which marks its cohort changed, so the next cycle tries
 * what was set aside) and the economics re-applied (engine_core_econ:
 * budgets keep their state, prices and minimum runtimes are replaced). The
 * cost is the policy's objects, not the core's workloads; the changed
 * records are the updated ClusterQueues' (engine_persist writes them).
 *
 * GPUQ_OK with rep->cqs_updated; GPUQ_EINVAL with rep->why when the shape
 * differs (q untouched: rebuild with engine_core_rebuild); the core's
 * refusal of an update or engine_core_econ's error with diag (q may hold
 * some of the updates then: a rebuild from it with newp is still right,
 * since a rebuild carries records, not specs). */
int engine_core_apply(queue_t *q, const policy_t *oldp, const policy_t *newp,
		      engine_apply_report_t *rep, gpuq_diag_t *diag);

/* ---- Rebuilding the core after a policy change ---- */

typedef enum {
	ENGINE_LOST_LOCALQUEUE = 1,   /* its LocalQueue is not in the new policy */
	ENGINE_LOST_CLUSTERQUEUE = 2, /* its ClusterQueue is gone (with its LocalQueues), or
					 it holds quota under a ClusterQueue that no longer
					 serves its LocalQueue */
	ENGINE_LOST_FLAVOR = 3,	      /* it holds quota on a flavor its ClusterQueue no
					 longer lists for that resource (the flavor, or the
					 resource, left the ClusterQueue or the policy) */
} engine_lost_reason_t;

/* A workload of the old core that the new core does not hold. Strings are
 * owned by the report. */
typedef struct {
	const char *uid;	     /* metadata.uid */
	const char *namespace_;	     /* metadata.namespace */
	const char *name;	     /* metadata.name */
	const char *local_queue;     /* its LocalQueue in the old core, "namespace/name" */
	const char *cluster_queue;   /* its ClusterQueue in the old core */
	const char *flavor;	     /* ENGINE_LOST_FLAVOR: the flavor it holds; else NULL */
	const char *resource;	     /* ENGINE_LOST_FLAVOR: ... for this resource; else NULL */
	queue_wl_state_t state;	     /* its state in the old core */
	engine_lost_reason_t reason; /* why it was not carried over */
} engine_lost_t;

typedef struct {
	engine_lost_t *lost;	/* workloads not carried over, in uid order (owned) */
	size_t n_lost;		/* entries in lost */
	size_t workloads;	/* workloads carried over */
	size_t cqs_dropped;	/* ClusterQueue records dropped: not in the new policy */
	size_t tenants_dropped; /* tenant records dropped: LocalQueue not in the new policy */
	size_t cqs_reset;	/* ClusterQueues kept whose history counters restart at 0
				   (their flavors/resources shrank, or their admitted
				   workloads changed: see engine_core_rebuild) */
} engine_rebuild_report_t;

/* Free what a report owns and zero it. NULL is fine. */
void engine_rebuild_report_deinit(engine_rebuild_report_t *rep);

/* Lost workloads logged at most, one line each; the rest are counted. */
#define ENGINE_LOG_LOST_MAX 20

/* Log a report: one INFO line with the counts, and one WARN line per lost
 * workload (uid, namespace/name, old ClusterQueue, state, reason) for the
 * first ENGINE_LOG_LOST_MAX, then one line with how many more. */
void engine_rebuild_report_log(const engine_rebuild_report_t *rep);

/* A static word for a reason: "LocalQueueGone", "ClusterQueueGone",
 * "FlavorGone"; "Unknown" for other values. */
const char *engine_lost_reason_name(engine_lost_reason_t reason);

/* Build a fresh core from newp (engine_core_build with cfg) and carry every
 * record of `old` over (read through its public views and
 * queue_record_encode; old is not modified and stays usable), for a policy
 * change the core cannot take in place (queue_cq_update refuses structural
 * changes: a ClusterQueue added, removed, moved to another cohort or given
 * other flavors or resources; a LocalQueue added, removed or pointed at
 * another ClusterQueue; flavors added or removed). With the policy old was
 * built from, the new core holds the same workloads in the same states,
 * orders, usage, ledgers, counters and clock.
 *
 * What is carried and what is not:
 *  - the meta record (cycle count, clock, tenant-sample time): always;
 *  - tenant records (decayed usage, ledger, counters) of LocalQueues in
 *    newp: kept, also when the LocalQueue now feeds another ClusterQueue;
 *    others dropped and counted (rep->tenants_dropped);
 *  - workloads: carried in their state (pending ones keep their wait reason,
 *    backoff and place; admitted ones their admission, Ready timer and
 *    flavors) unless their LocalQueue is gone (ENGINE_LOST_LOCALQUEUE, or
 *    ENGINE_LOST_CLUSTERQUEUE when its ClusterQueue went too), or they hold
 *    quota (admitted, evicting) and either their LocalQueue now feeds another
 *    ClusterQueue (ENGINE_LOST_CLUSTERQUEUE) or a flavor they hold is not
 *    listed for that resource by their ClusterQueue any more
 *    (ENGINE_LOST_FLAVOR). A lost workload is not in the new core at all:
 *    it is reported in rep->lost, in any state (finished ones too), and the
 *    caller decides (the controller evicts what still runs, tells the user,
 *    and re-adds with queue_workload_add what should queue again). A pending
 *    workload whose LocalQueue now feeds another ClusterQueue moves with
 *    it. Admitted workloads stay admitted even where the new quota is lower
 *    than their usage (nothing is evicted; new admissions stop);
 *  - ClusterQueue records (history counters; usage is derived from the
 *    carried workloads): of ClusterQueues not in newp, dropped and counted
 *    (rep->cqs_dropped); of the others, kept when the ClusterQueue still
 *    lists every flavor/resource it had and its carried workloads hold
 *    exactly the usage it had; otherwise its counters restart at 0
 *    (rep->cqs_reset) while its usage is the carried workloads'.
 * Every cohort is then marked changed with capacity up (queue_cq_update
 * with the ClusterQueue's unchanged spec), so the next cycle retries every
 * set-aside workload against the new quotas. The new core's changed set
 * holds every live record: persist it with engine_persist_full, which also
 * deletes the stored records of what was dropped.
 *
 * On GPUQ_OK *out is the new core (the caller's: it destroys `old` when it
 * switches) and *rep is filled (engine_rebuild_report_deinit). On failure
 * *out is NULL, *rep is empty, old is as it was, and diag says why:
 *   GPUQ_EAGAIN  old's meta record names a cohort newp lacks (one whose
 *                set-aside workloads were due a retry when a ClusterQueue
 *                left it): run a cycle on old (queue_cycle_run), which
 *                clears that, and rebuild again;
 *   GPUQ_ENOMEM; engine_core_build's errors; the core's refusal of a
 *   carried record (GPUQ_ELIMIT past the new cfg's workloads_max, ...),
 *   naming it. */
int engine_core_rebuild(const queue_t *old, const policy_t *newp, const queue_config_t *cfg,
			queue_t **out, engine_rebuild_report_t *rep, gpuq_diag_t *diag);

#endif

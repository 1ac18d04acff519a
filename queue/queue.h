/*
 * queue: gpuq's queueing core. ResourceFlavors, cohorts, ClusterQueues (CQs),
 * LocalQueues (tenants) and workloads; the admission cycle that assigns
 * flavors, borrows within cohorts and picks minimal preemption victim sets;
 * gang admission with a Ready timeout and exponential requeue backoff; the
 * usage ledger; and the records that let a store persist all of it.
 *
 * Semantics are Kueue's (docs/queueing.md lists every rule), with one change:
 * a cycle does not stop at the first head of each ClusterQueue, it goes on and
 * admits everything that fits, in order.
 *
 * Pure: no I/O, no clock (every call that needs the time takes `now`, int64
 * milliseconds of virtual or real time, never decreasing), no globals,
 * deterministic: the same calls give the same outputs, ties broken by uid.
 * Not thread-safe: one queue_t is used by one thread at a time.
 *
 * The design decision that matters: the runtime model is compact and
 * incremental. Names are interned to small integer ids, amounts are int64 in
 * the caller's units (millicores for cpu, whole units otherwise: see
 * quota_qty_amount), identical pod sets share one template, and every
 * mutation marks both the cohort it affects (so a cycle in which nothing
 * changed costs O(cohorts), not O(workloads)) and the records it changed (so
 * the store commits exactly those, and a restart rebuilds the same state).
 *
 * Objects are identified publicly by name (uid for workloads) and, for speed,
 * by small integer ids: resource, flavor, cohort, CQ and LQ ids are dense,
 * assigned in the order the objects were added, and never reused; a workload
 * id (queue_wl_t) is valid until that workload is deleted and may be reused
 * after. Ids are not persisted: records use names, so a queue built from the
 * same policy in the same order restores to the same ids.
 */
#ifndef GPUQ_QUEUE_H
#define GPUQ_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "ledger/ledger.h"

/* ---- Caps (each refused with GPUQ_ELIMIT and a diagnostic) ---- */

#define QUEUE_NAME_MAX 253	   /* bytes in any name, key or value (DNS subdomain) */
#define QUEUE_RESOURCES_MAX 64	   /* distinct resource names in one queue */
#define QUEUE_FLAVORS_MAX 1024	   /* ResourceFlavors */
#define QUEUE_CQS_MAX 65535	   /* ClusterQueues (and cohorts) */
#define QUEUE_LQS_MAX 1000000	   /* LocalQueues */
#define QUEUE_GROUPS_MAX 16	   /* resource groups per CQ (Kueue's cap) */
#define QUEUE_GROUP_FLAVORS_MAX 16 /* flavors per resource group (Kueue's cap) */
#define QUEUE_GROUP_RES_MAX 16	   /* covered resources per group (Kueue's cap) */
#define QUEUE_PODSETS_MAX 18	   /* pod sets per workload (Kueue v1beta2's cap) */
#define QUEUE_PODSET_RES_MAX 16	   /* resources requested by one pod set */
#define QUEUE_SELECTORS_MAX                                                                        \
	32			     /* nodeSelector entries, affinity terms or                    \
					tolerations per pod set or flavor */
#define QUEUE_AFFINITY_VALUES_MAX 32 /* values in one affinity term */
#define QUEUE_TAINTS_MAX 32	     /* taints per flavor */
#define QUEUE_KEY_MAX 512	     /* bytes in a record key (ns/name fits) */
#define QUEUE_RECORD_MAX (1 << 20)   /* bytes in one encoded record value */
/* The newest record encoding version this build writes and reads (every
 * older one is read too): a workload record's (3: varints, well-known
 * resource names by index; 4: and its execution time and limit at the
 * end; 5: and its pod sets' topology and its placement, one byte when it
 * has neither), every other record's (1). */
#define QUEUE_RECORD_VERSION_WORKLOAD 5
#define QUEUE_RECORD_VERSION 1
/* Largest quota (nominal, borrowingLimit) and largest pod set request
 * (count * per-pod amount): 2^50, a PiB in bytes or 10^12 cores in
 * millicores. A cohort's summed quota is capped at 2^61. Together they keep
 * every sum the core forms inside int64. */
#define QUEUE_AMOUNT_MAX ((int64_t)1 << 50)
#define QUEUE_COHORT_AMOUNT_MAX ((int64_t)1 << 61)
#define QUEUE_TREE_DEPTH_MAX 16 /* cohorts on a path from a CQ to its root */
/* Times (`now`, creation times) lie within +-2^62 ms (146 million years
 * either side of the epoch), so time arithmetic cannot overflow; a `now`
 * outside is GPUQ_ERANGE. */
#define QUEUE_TIME_MAX ((int64_t)1 << 62)

/* "No limit" for borrowing_limit / lending_limit, "no such object" for ids. */
#define QUEUE_UNLIMITED (-1)
#define QUEUE_NONE UINT32_MAX

typedef struct queue queue_t; /* opaque: the whole queueing state */
typedef uint32_t queue_wl_t;  /* a workload id; QUEUE_NONE for none */

/* ---- Configuration (fixed at queue_create) ---- */

typedef enum {
	QUEUE_READY_GANGS = 0, /* the Ready timeout applies to gang workloads only */
	QUEUE_READY_ALL = 1,   /* ... to every admitted workload (Kueue's waitForPodsReady) */
} queue_ready_scope_t;

typedef struct {
	bool fair_sharing;		 /* order CQs of a cohort by weighted DRS and
					    use fair-share preemption (Kueue fairSharing) */
	int64_t tenant_half_life_ms;	 /* half-life of decayed tenant usage (default 1 h;
					    Kueue's admissionFairSharing.usageHalfLifeTime).
					    Every tenant's usage is kept; it orders
					    workloads only in CQs with
					    admission_fair_sharing */
	int64_t tenant_sample_ms;	 /* how often tenant usage is sampled into the
					    decay (default 5 min, Kueue's
					    usageSamplingInterval and its default) */
	int64_t ready_timeout_ms;	 /* evict admitted workloads not Ready by then;
					    0 disables (default 30 min, Kueue's) */
	queue_ready_scope_t ready_scope; /* which workloads the timeout watches */
	int64_t backoff_base_ms;	 /* first requeue backoff after a Ready timeout
					    (default 60 s); doubles each time */
	int64_t backoff_max_ms;		 /* backoff ceiling (default 1 h) */
	bool release_on_evict;		 /* true (default): an eviction frees its quota
					    at once (simulator); false: quota stays held
					    until queue_workload_evicted (daemon, whose
					    pods take time to terminate) */
	uint32_t workloads_max;		 /* live workloads held at most (default 1,000,000);
					    queue_workload_add beyond it: GPUQ_ELIMIT */
	int64_t budget_interval_ms;	 /* budgets are evaluated from the ledger this
					    often (default 60 s; at least 1 ms): the
					    most a budget overshoots is what runs for
					    one interval */
	int64_t idle_fresh_ms;		 /* how long a utilization reading below the
					    idle threshold stands: an idle spell lives
					    only on readings at most this far apart, and
					    its last one at most this old when it is
					    reported or reclaimed; a later gap (a scrape
					    missed, an endpoint down, a pod's series gone)
					    ends it. 0 (default): a reading stands until
					    the next (the simulator feeds one per spell);
					    the daemon sets it from its scrape interval */
	int64_t node_failure_ms;	 /* how long a node holding placements stays
					    not Ready before their workloads are
					    evicted (QUEUE_EVICT_NODE_FAILED; default
					    30 s, Kueue's NodeFailureDelay); 0: at once */
	bool reservations_off;		 /* every ClusterQueue's starvation limit
					    ignored: no reservation is made (gpuq
					    simulate's second run, to print what the
					    limit changed); false (default): in force */
} queue_config_t;

/* Fill cfg with the defaults named above. */
void queue_config_default(queue_config_t *cfg);

/* ---- Policy objects (strings in, interned on add; the caller keeps
 * ownership of every spec and may free it when the call returns) ---- */

typedef enum {
	QUEUE_EFFECT_NO_SCHEDULE = 0,	     /* NoSchedule */
	QUEUE_EFFECT_PREFER_NO_SCHEDULE = 1, /* PreferNoSchedule (never blocks) */
	QUEUE_EFFECT_NO_EXECUTE = 2,	     /* NoExecute */
	QUEUE_EFFECT_ANY = 3,		     /* tolerations only: every effect */
} queue_effect_t;

typedef struct {
	const char *key;   /* label key, e.g. "nvidia.com/gpu.product" */
	const char *value; /* label value ("" allowed) */
} queue_label_t;

typedef struct {
	const char *key;       /* taint key */
	const char *value;     /* taint value ("" allowed) */
	queue_effect_t effect; /* NoSchedule, PreferNoSchedule or NoExecute */
} queue_taint_t;

typedef enum {
	QUEUE_TOLERATE_EQUAL = 0,  /* key and value match */
	QUEUE_TOLERATE_EXISTS = 1, /* key matches (an empty key: every taint) */
} queue_tolerate_op_t;

typedef struct {
	const char *key;	/* taint key; "" only with EXISTS (all keys) */
	queue_tolerate_op_t op; /* Equal or Exists */
	const char *value;	/* with EQUAL; ignored with EXISTS (may be NULL) */
	queue_effect_t effect;	/* the effect tolerated, or QUEUE_EFFECT_ANY */
} queue_toleration_t;

/* One required node-affinity term: `key In [values]`. Terms are AND-ed. */
typedef struct {
	const char *key;	   /* node label key */
	const char *const *values; /* accepted values */
	size_t n_values;	   /* 1..QUEUE_AFFINITY_VALUES_MAX */
} queue_affinity_t;

/* ---- Topology (issue 33, docs/topology.md) ----
 *
 * A Topology names node labels from the widest level to the narrowest
 * (block, rack, host); a flavor naming it is topology-aware: the nodes
 * matching its nodeLabels and carrying every level's label are its nodes
 * (queue_node_set), and a workload assigned to it is admitted only when
 * its quota fits AND its pods fit on those nodes as each pod set asks
 * (REQUIRED: one domain at a level; PREFERRED: as few as it can;
 * UNCONSTRAINED, the default on such a flavor: anywhere). The placement
 * (pods per node) is chosen at admission, held until the workload's quota
 * is freed, and read by queue_workload_placement. A node's free capacity
 * is its allocatable less what the caller says pods gpuq did not admit
 * use, less the placements. */

#define QUEUE_TOPOLOGIES_MAX 64	 /* Topologies */
#define QUEUE_TOPO_LEVELS_MAX 16 /* levels in one (Kueue's cap) */
#define QUEUE_NODES_MAX 65536	 /* nodes known at once */
#define QUEUE_NODE_LABELS_MAX 64 /* labels of one node the core keeps */

typedef enum {
	QUEUE_TOPO_NONE = 0,	      /* no annotation: unconstrained on a
					 topology-aware flavor */
	QUEUE_TOPO_REQUIRED = 1,      /* podset-required-topology */
	QUEUE_TOPO_PREFERRED = 2,     /* podset-preferred-topology */
	QUEUE_TOPO_UNCONSTRAINED = 3, /* podset-unconstrained-topology */
} queue_topo_mode_t;

typedef struct {
	const char *name;	   /* Topology name */
	const char *const *levels; /* spec.levels[].nodeLabel, widest first */
	size_t n_levels;	   /* 1..QUEUE_TOPO_LEVELS_MAX */
} queue_topology_spec_t;

/* Add a Topology. GPUQ_EEXIST, GPUQ_EINVAL (no levels, a level twice, a
 * bad key), GPUQ_ELIMIT; diag says which. Topologies are added before the
 * flavors that name them and never change (a changed Topology is a policy
 * change of shape: the engine rebuilds the core). */
int queue_topology_add(queue_t *q, const queue_topology_spec_t *spec, gpuq_diag_t *diag);

typedef struct {
	const char *name;		       /* ResourceFlavor name */
	const queue_label_t *node_labels;      /* nodeLabels */
	size_t n_node_labels;		       /* entries in node_labels */
	const queue_taint_t *node_taints;      /* nodeTaints */
	size_t n_node_taints;		       /* entries in node_taints */
	const queue_toleration_t *tolerations; /* tolerations injected on release;
						  they also tolerate this flavor's taints */
	size_t n_tolerations;		       /* entries in tolerations */
	const char *topology;		       /* spec.topologyName: a Topology added
						  before (queue_topology_add), or NULL
						  / "" for none: see "Topology" below */
} queue_flavor_spec_t;

/* Add a ResourceFlavor. GPUQ_EEXIST (name taken), GPUQ_EINVAL (empty name,
 * NULL key), GPUQ_ENOTFOUND (a topology never added), GPUQ_ELIMIT (a cap
 * above); diag says which. *id (may be NULL)
 * gets the flavor id. A CQ may name a flavor that does not exist (yet): that
 * flavor is then passed over, as Kueue does. */
int queue_flavor_add(queue_t *q, const queue_flavor_spec_t *spec, uint32_t *id, gpuq_diag_t *diag);

typedef enum {
	QUEUE_BEST_EFFORT_FIFO = 0, /* set aside what does not fit; the rest go on */
	QUEUE_STRICT_FIFO = 1,	    /* the head blocks everything behind it */
} queue_strategy_t;

typedef enum {
	QUEUE_WITHIN_NEVER = 0,		 /* withinClusterQueue: Never */
	QUEUE_WITHIN_LOWER_PRIORITY = 1, /* LowerPriority (strictly lower) */
	QUEUE_WITHIN_LOWER_OR_NEWER = 2, /* LowerOrNewerEqualPriority */
} queue_within_t;

typedef enum {
	QUEUE_RECLAIM_NEVER = 0,	  /* reclaimWithinCohort: Never */
	QUEUE_RECLAIM_LOWER_PRIORITY = 1, /* LowerPriority */
	QUEUE_RECLAIM_ANY = 2,		  /* Any */
} queue_reclaim_t;

typedef enum {
	QUEUE_BORROW_NEVER = 0,		 /* borrowWithinCohort.policy: Never */
	QUEUE_BORROW_LOWER_PRIORITY = 1, /* LowerPriority */
} queue_borrow_t;

typedef enum {
	QUEUE_STOP_NONE = 0,	       /* stopPolicy None: admitting */
	QUEUE_STOP_HOLD = 1,	       /* Hold: admit nothing new */
	QUEUE_STOP_HOLD_AND_DRAIN = 2, /* HoldAndDrain: also evict the admitted */
} queue_stop_t;

/* flavorFungibility.whenCanBorrow / whenCanPreempt. 0 is the field's
 * Kueue default: MayStopSearch for whenCanBorrow, TryNextFlavor for
 * whenCanPreempt. */
typedef enum {
	QUEUE_FUNGIBLE_DEFAULT = 0,
	QUEUE_FUNGIBLE_MAY_STOP = 1, /* MayStopSearch: take this flavor */
	QUEUE_FUNGIBLE_TRY_NEXT = 2, /* TryNextFlavor: look at the next one first */
} queue_fungible_t;

/* flavorFungibility.preference: which is worse when no flavor is ideal. */
typedef enum {
	QUEUE_PREFER_BORROWING = 0,  /* BorrowingOverPreemption (default): the
					better preemption mode first, then less
					borrowing */
	QUEUE_PREFER_PREEMPTION = 1, /* PreemptionOverBorrowing: less borrowing
					first, then the better mode */
} queue_preference_t;

typedef struct {
	int64_t nominal;	 /* nominalQuota (>= 0) */
	int64_t borrowing_limit; /* borrowingLimit, or QUEUE_UNLIMITED */
	int64_t lending_limit;	 /* lendingLimit (<= nominal), or QUEUE_UNLIMITED */
} queue_quota_spec_t;

typedef struct {
	const char *flavor;		  /* ResourceFlavor name */
	const queue_quota_spec_t *quotas; /* one per covered resource, in the
					     group's covered order */
} queue_flavor_quota_spec_t;

typedef struct {
	const char *const *covered;		  /* coveredResources */
	size_t n_covered;			  /* 1..QUEUE_GROUP_RES_MAX */
	const queue_flavor_quota_spec_t *flavors; /* flavors in preference order */
	size_t n_flavors;			  /* 1..QUEUE_GROUP_FLAVORS_MAX */
} queue_group_spec_t;

/* A cohort (Kueue's Cohort, hierarchical): a node of a tree of cohorts
 * whose leaves are ClusterQueues. Its own quota (spec.resourceGroups) adds
 * to what its ClusterQueues and child cohorts lend it; it lends its subtree
 * quota to its parent up to its lendingLimit and takes from its parent up
 * to its borrowingLimit (both only with a parent). */
typedef struct {
	const char *name;		  /* metadata.name */
	const char *parent;		  /* spec.parentName; NULL or "" for a root */
	int64_t weight_milli;		  /* fairSharing weight, thousandths (<= 0: 1000) */
	bool weight_zero;		  /* a weight of 0 (weight_milli ignored) */
	const queue_group_spec_t *groups; /* its own quota; a flavor and resource
					     at most once */
	size_t n_groups;		  /* entries (<= QUEUE_GROUPS_MAX) */
} queue_cohort_spec_t;

/* Add (declare) a cohort. A name a ClusterQueue or another cohort named
 * before is declared now (its members kept); a parent never added is made
 * (no quota, weight 1000) and may be declared later. GPUQ_EEXIST (declared
 * twice), GPUQ_EINVAL (bad name or quota; limits without a parent; a parent
 * that makes a cycle), GPUQ_ELIMIT (a cap: more than QUEUE_TREE_DEPTH_MAX
 * cohorts on a path, sums above QUEUE_COHORT_AMOUNT_MAX); diag says which
 * field. Marks the tree changed. */
int queue_cohort_add(queue_t *q, const queue_cohort_spec_t *spec, uint32_t *id, gpuq_diag_t *diag);

/* spec.idleReclaim.action: what happens to an admitted workload whose GPUs
 * stay idle (docs/economics.md). */
typedef enum {
	QUEUE_IDLE_OFF = 0,	/* no idle reclaim */
	QUEUE_IDLE_REPORT = 1,	/* Report: said once per idle spell (queue_result_t.idles) */
	QUEUE_IDLE_PREEMPT = 2, /* Preempt: also evicted (IdleReclaim) when another
				   workload waits for a flavor it holds, its minimum
				   runtime served; requeued after backoff_base_ms */
} queue_idle_action_t;

/* The longest maximum execution time, a workload's label or a
 * ClusterQueue's default: Kueue's int32 of seconds (about 68 years). */
#define QUEUE_MAX_EXEC_S_MAX INT32_MAX
#define QUEUE_MAX_EXEC_MS_MAX ((int64_t)INT32_MAX * 1000)

/* The longest minimum runtime (ClusterQueue or PriorityClass): 30 days. */
#define QUEUE_MIN_RUNTIME_MAX ((int64_t)30 * 24 * 3600 * 1000)

typedef struct {
	const char *name;		   /* ClusterQueue name */
	const char *cohort;		   /* cohort name, or NULL / "" for none */
	const queue_group_spec_t *groups;  /* resourceGroups; a resource in two
					      groups is GPUQ_EINVAL */
	size_t n_groups;		   /* 0..QUEUE_GROUPS_MAX */
	queue_strategy_t strategy;	   /* queueingStrategy */
	queue_within_t within;		   /* preemption.withinClusterQueue */
	queue_reclaim_t reclaim;	   /* preemption.reclaimWithinCohort */
	queue_borrow_t borrow;		   /* preemption.borrowWithinCohort.policy */
	bool has_max_priority_threshold;   /* borrowWithinCohort.maxPriorityThreshold set */
	int32_t max_priority_threshold;	   /* ... its value */
	int64_t weight_milli;		   /* fairSharing.weight in thousandths;
					      <= 0 means the default 1000 */
	bool weight_zero;		   /* fairSharing.weight is 0 (weight_milli
					      ignored): never ahead of others while
					      it borrows, as in Kueue */
	queue_stop_t stop;		   /* stopPolicy */
	queue_fungible_t when_can_borrow;  /* flavorFungibility.whenCanBorrow */
	queue_fungible_t when_can_preempt; /* flavorFungibility.whenCanPreempt */
	queue_preference_t preference;	   /* flavorFungibility.preference */
	bool admission_fair_sharing;	   /* admissionScope.admissionMode
					      UsageBasedAdmissionFairSharing: its
					      LocalQueues' workloads are taken by
					      tenant key (decayed usage / weight)
					      before priority; false (Kueue's default):
					      priority, then creation, whatever the
					      LocalQueue */
	int64_t min_runtime_ms;		   /* spec.minRuntime (gpuq): its admitted
					      workloads are neither preempted nor
					      reclaimed before running this long
					      (0: no minimum; at most
					      QUEUE_MIN_RUNTIME_MAX) */
	queue_idle_action_t idle_action;   /* spec.idleReclaim.action (QUEUE_IDLE_OFF:
					      idle GPUs are not looked at) */
	double idle_threshold_pct;	   /* spec.idleReclaim.utilizationBelow:
					      idle while the busiest of its GPUs is
					      below this (0..100) */
	int64_t idle_after_ms;		   /* spec.idleReclaim.for: idle this long
					      before the action (>= 1 ms with an
					      action) */
	int64_t max_exec_ms;		   /* spec.maxExecutionTime (gpuq): the
					      default wall-clock limit of its
					      workloads, ms (0: none; at most
					      QUEUE_MAX_EXEC_MS_MAX); a workload's
					      own shorter limit wins */
	int64_t starvation_ms;		   /* spec.starvationLimit (gpuq): a pending
					      workload waiting longer reserves its
					      capacity, ms (0: off; at most
					      QUEUE_MAX_EXEC_MS_MAX): see "Bounded
					      wait" below */
} queue_cq_spec_t;

/* Add a ClusterQueue. GPUQ_EEXIST, GPUQ_EINVAL (bad limits, duplicate
 * resource or flavor), GPUQ_ELIMIT. Marks its cohort changed (a new CQ can
 * lend), so set-aside workloads of the cohort are tried again. */
int queue_cq_add(queue_t *q, const queue_cq_spec_t *spec, uint32_t *id, gpuq_diag_t *diag);

/* Change an existing CQ (found by spec->name): quotas, limits, strategy,
 * preemption, weight, stop policy, admission fair sharing. The resource groups must keep the same
 * shape (same covered resources and flavors in the same order) and the same
 * cohort, else GPUQ_EINVAL ("structural change"): such a change needs a
 * fresh queue rebuilt from records. Lowering quota below usage evicts nothing
 * (Kueue neither); it only stops new admissions. Marks the cohort changed.
 * GPUQ_ENOTFOUND when no such CQ. */
int queue_cq_update(queue_t *q, const queue_cq_spec_t *spec, gpuq_diag_t *diag);

/* A LocalQueue's fair-share weight of 0 (Kueue's fairSharing.weight: 0):
 * any usage at all puts its workloads after every other tenant's. */
#define QUEUE_WEIGHT_ZERO INT64_MIN

/* Add a LocalQueue (a tenant) namespace/name feeding ClusterQueue `cq`, with
 * a fair-share weight in thousandths (QUEUE_WEIGHT_ZERO: 0; otherwise <= 0:
 * 1000). GPUQ_ENOTFOUND (no such CQ), GPUQ_EEXIST, GPUQ_EINVAL, GPUQ_ELIMIT. */
int queue_lq_add(queue_t *q, const char *namespace_, const char *name, const char *cq,
		 int64_t weight_milli, uint32_t *id, gpuq_diag_t *diag);

/* ---- Lifecycle ---- */

/* Create an empty queue with a copy of cfg (NULL: defaults). GPUQ_ENOMEM,
 * GPUQ_EINVAL (negative durations, backoff_max < backoff_base). The caller
 * owns *out and frees it with queue_destroy. */
int queue_create(const queue_config_t *cfg, queue_t **out);

/* Free everything. NULL is fine. Every pointer the queue handed out dies. */
void queue_destroy(queue_t *q);

/* ---- Workloads ---- */

typedef struct {
	const char *resource; /* resource name, e.g. "nvidia.com/gpu", "cpu" */
	int64_t amount;	      /* per-pod request in the caller's units (>= 0) */
} queue_request_t;

typedef struct {
	const char *name;		       /* pod set name ("main", "worker") */
	int32_t count;			       /* pods (>= 1): all or nothing */
	const queue_request_t *requests;       /* per-pod requests */
	size_t n_requests;		       /* 0..QUEUE_PODSET_RES_MAX */
	const queue_label_t *node_selector;    /* spec.nodeSelector */
	size_t n_node_selector;		       /* entries in node_selector */
	const queue_affinity_t *affinity;      /* required node affinity, AND-ed */
	size_t n_affinity;		       /* entries in affinity */
	const queue_toleration_t *tolerations; /* spec.tolerations */
	size_t n_tolerations;		       /* entries in tolerations */
	queue_topo_mode_t topology;	       /* how its pods are kept together on a
						  flavor with a topology (Kueue's
						  podset-*-topology annotations) */
	const char *topology_level;	       /* REQUIRED, PREFERRED: the level's node
						  label key */
	const char *slice_level;	       /* slice_size > 0: the level each slice
						  lies in (podset-slice-required-
						  topology); NULL: none */
	int32_t slice_size;		       /* pods per slice (0: no slices; divides
						  count) */
	const char *group;		       /* podset-group-name: pod sets of one
						  group, REQUIRED at one level, lie in
						  one domain together; NULL: none */
} queue_podset_spec_t;

typedef struct {
	const char *namespace_;		    /* metadata.namespace (also the LQ's) */
	const char *name;		    /* metadata.name */
	const char *uid;		    /* metadata.uid: the workload's key */
	const char *local_queue;	    /* LocalQueue name in namespace_ */
	int32_t priority;		    /* priority (higher first) */
	int64_t created_ms;		    /* creationTimestamp */
	const queue_podset_spec_t *podsets; /* pod sets, 1..QUEUE_PODSETS_MAX */
	size_t n_podsets;		    /* entries in podsets */
	int32_t gang_total;		    /* 0: not a gang; else the pods the
					       group needs before it is admissible
					       (pod-group-total-count) */
	int32_t pods_present;		    /* gang pods already present at add
					       (0..gang_total); ignored if not a gang */
	int32_t max_exec_s;		    /* its own wall-clock limit, seconds
					       (max-exec-time-seconds; 0: none,
					       1..QUEUE_MAX_EXEC_S_MAX): see
					       "Wall-clock limits" below */
	int32_t run_bound_s;		    /* what ends each of its runs by its
					       age, seconds, enforced by its own
					       controller (a Job's spec.
					       activeDeadlineSeconds: the Job
					       controller fails it then, its
					       clock restarting at each resume);
					       0: none. The bounded wait trusts it
					       as it trusts a wall-clock limit
					       (backfill, the reserved start);
					       not persisted: see "Bounded wait" */
} queue_workload_spec_t;

/* A workload arrives (pending). Copies everything it needs. GPUQ_EEXIST (uid
 * taken), GPUQ_ENOTFOUND (no such LocalQueue), GPUQ_EINVAL (empty uid, count
 * < 1, negative amount, gang counts out of range), GPUQ_ELIMIT (a cap or
 * workloads_max). A workload that can never fit (a requested resource no
 * group covers, more than the CQ could ever get) is accepted and marked
 * inadmissible with that reason at the next cycle. *id may be NULL. */
int queue_workload_add(queue_t *q, const queue_workload_spec_t *spec, int64_t now, queue_wl_t *id,
		       gpuq_diag_t *diag);

/* What a pending workload asks for changed (its object was edited while it
 * queued, or a gang's pods came and went): spec replaces, whole, its pod
 * sets, LocalQueue (in the same namespace; another ClusterQueue's moves it
 * there), priority, creation time and gang counts (fewer pods present puts
 * a complete gang back to waiting for its pods). It keeps its place where its queue and order key
 * stay (the order is the heap's: priority, then creation time), a backoff it serves and its history
 * (requeues, preemptions); a preemptor's plan is dropped (it was for what it asked before) and its
 * cohort retried. A spec the same as the workload changes nothing (*changed false; changed may be
 * NULL). All or nothing: on any error the workload is as it was.
 * GPUQ_ENOTFOUND (no such uid, or LocalQueue), GPUQ_EAGAIN (not pending,
 * and spec asks for something other than it holds: an admitted workload's
 * request is its object's to keep, Kueue's rule; the caller refuses the
 * edit, or evicts or requeues it first; the same spec is GPUQ_OK, nothing
 * changed), GPUQ_EINVAL (a bad spec, a
 * namespace change), GPUQ_ENOMEM, GPUQ_ELIMIT (a template cap). */
int queue_workload_update(queue_t *q, const queue_workload_spec_t *spec, int64_t now, bool *changed,
			  gpuq_diag_t *diag);

/* Workload uid's own wall-clock limit is now max_exec_s (0: none), whatever
 * else its object says: the one field a running workload's owner may change
 * (an admitted workload's spec is otherwise its object's to keep, and a
 * released object differs from its admitted spec by the flavor's placement).
 * Admitted, the new limit applies at once (past it, stopped at the next
 * queue_tick); deactivated, a changed limit reactivates it, clock at 0, as
 * queue_workload_update does; otherwise it is kept for its next admission.
 * *changed (may be NULL) says whether it changed. GPUQ_ENOTFOUND,
 * GPUQ_EINVAL (negative), GPUQ_ENOMEM (nothing changed). */
int queue_workload_limit_set(queue_t *q, const char *uid, int32_t max_exec_s, int64_t now,
			     bool *changed);

/* `n` more pods of a gang workload arrived (capped at gang_total). When all
 * are present it becomes eligible. GPUQ_ENOTFOUND, GPUQ_EINVAL (not a gang,
 * n < 0). */
int queue_workload_pods_add(queue_t *q, const char *uid, int32_t n, int64_t now);

/* All pods of an admitted workload are Ready: stops its Ready timeout and
 * resets its requeue backoff. GPUQ_ENOTFOUND, GPUQ_EINVAL (not admitted). */
int queue_workload_pods_ready(queue_t *q, const char *uid, int64_t now);

/* An admitted workload completed: frees its quota, charges its
 * resource-milliseconds to the tenant ledger, counts it finished. It stays
 * as FINISHED (for history and the store) until queue_workload_delete.
 * GPUQ_ENOTFOUND, GPUQ_EINVAL (not admitted or evicting). */
int queue_workload_finish(queue_t *q, const char *uid, int64_t now);

/* With release_on_evict false: the pods of an EVICTING workload are gone;
 * frees its quota and requeues it (pending; after a Ready timeout, not
 * before its backoff expires). GPUQ_ENOTFOUND, GPUQ_EINVAL (not evicting). */
int queue_workload_evicted(queue_t *q, const char *uid, int64_t now);

/* Forget a workload in any state (an admitted one frees its quota, with no
 * finish counted). Its id and uid pointer die. GPUQ_ENOTFOUND. */
int queue_workload_delete(queue_t *q, const char *uid, int64_t now);

/* One request of an adopted workload: pod set `podset`'s `resource` runs on
 * `flavor`. */
typedef struct {
	uint16_t podset;      /* index in the workload's pod sets */
	const char *resource; /* resource name */
	const char *flavor;   /* flavor name */
} queue_adopt_t;

/* A pending workload turns out to be running already (a controller that
 * lost its store, or a new leader, finds it released in the cluster): admit
 * it on the flavors given, at once and outside a cycle, charging its quota
 * even past nominal or limits (the cluster's truth wins; later cycles see
 * the usage and admit less). Every non-zero request of every pod set must
 * be named. On a topology-aware flavor it holds no placement (where its
 * pods run is the cluster's; the daemon, which would adopt there, leaves
 * such flavors out until it reads pods' nodes: docs/topology.md), so
 * queue_topology_check counts its pods unplaced. GPUQ_ENOTFOUND (no such
 * uid, resource or flavor, or the CQ has no quota slot for that flavor and
 * resource), GPUQ_EINVAL (not pending), GPUQ_ENOMEM (the workload stays
 * pending). Not reported by a cycle. */
/* An admitted workload its driver re-added as it stands (deleted, added and
 * adopted: a set's slice resized, queue_workload_adopt) is the same
 * admission: it takes back its admission time and the time it was admitted
 * before (from queue_workload_view before the delete), so its minimum
 * runtime and wall-clock limit count from where they were. Its usage and
 * ledger stay as adopted (the amounts changed now). GPUQ_ENOTFOUND,
 * GPUQ_EINVAL (not admitted; admitted_ms after its admission or negative;
 * exec_ms negative), GPUQ_ENOMEM (nothing changed). */
int queue_workload_carry(queue_t *q, const char *uid, int64_t admitted_ms, int64_t exec_ms);

int queue_workload_adopt(queue_t *q, const char *uid, const queue_adopt_t *a, size_t n,
			 int64_t now);

/* The id of workload `uid`, or GPUQ_ENOTFOUND. */
int queue_workload_find(const queue_t *q, const char *uid, queue_wl_t *id);

/* ---- Nodes of topology-aware flavors (see "Topology" above) ---- */

typedef struct {
	const char *name;		    /* metadata.name */
	const queue_label_t *labels;	    /* metadata.labels (the ones that
					       matter: flavors' nodeLabels, topology
					       levels, selectors; at most
					       QUEUE_NODE_LABELS_MAX) */
	size_t n_labels;		    /* entries */
	const queue_request_t *allocatable; /* status.allocatable, in the core's
					       units ("pods" is the pod cap) */
	size_t n_allocatable;		    /* entries */
	const queue_request_t *used;	    /* what pods gpuq did not admit use on
					       it (never a placement's pods) */
	size_t n_used;			    /* entries */
	int32_t pods_used;		    /* how many such pods */
	const queue_request_t *own;	    /* what pods gpuq admitted, bound to it
					       now, use: the node has allocatable -
					       used - max(own, its placements) free,
					       so gpuq's pods running where no
					       placement says (a workload adopted
					       with none, a pod the scheduler put on
					       another node of its domain) count, and
					       a placement's own pods not twice */
	size_t n_own;			    /* entries */
	int32_t pods_own;		    /* how many such pods */
	const queue_taint_t *taints;	    /* spec.taints */
	size_t n_taints;		    /* entries (<= QUEUE_TAINTS_MAX) */
	bool unschedulable;		    /* spec.unschedulable (cordoned): takes
					       nothing new; what runs there stays */
	bool not_ready;			    /* its Ready condition is not True (or
					       it has none): takes nothing new, and
					       once not_ready_since is node_failure_ms
					       old the workloads placed on it are
					       evicted (QUEUE_EVICT_NODE_FAILED) */
	int64_t not_ready_since;	    /* not_ready: when (the Ready condition's
					       lastTransitionTime, in the clock of
					       queue_tick's now, ms); a node with no
					       Ready condition at all: 0 (failed at
					       once, as Kueue takes it) */
} queue_node_spec_t;

/* Add a node or replace what is known of it. Placements on a node that
 * shrank or was cordoned stay (they are running); it takes nothing new.
 * A node not Ready takes nothing new either, and node_failure_ms after it
 * turned so (not_ready_since) the next queue_tick evicts every workload
 * placed on it (QUEUE_EVICT_NODE_FAILED, requeued at once) unless it is
 * set Ready again first. Node state is not stored: a driver sets its nodes
 * again after a restart.
 * Marks every cohort changed when the node belongs to a topology-aware
 * flavor. GPUQ_EINVAL (bad name or amounts), GPUQ_ELIMIT, GPUQ_ENOMEM; diag
 * says which. */
int queue_node_set(queue_t *q, const queue_node_spec_t *spec, gpuq_diag_t *diag);

/* Node `name` is gone: the next queue_tick evicts every admitted workload
 * placed on it (QUEUE_EVICT_NODE_FAILED; the placements stay held until
 * their workloads' quota is freed). GPUQ_ENOTFOUND (never set, or deleted
 * already: a node deleted while the driver was down, held by placements
 * restored from records, is not noticed). */
int queue_node_delete(queue_t *q, const char *name);

/* Level i of flavor's Topology (its node label key), or NULL past the last
 * level or for a flavor with no topology. */
const char *queue_flavor_level(const queue_t *q, uint32_t flavor, size_t i);

/* How many domains at level `level` of flavor's Topology workload id's pods
 * on that flavor span (0: none placed there). O(entries^2). */
size_t queue_workload_domains(const queue_t *q, queue_wl_t id, uint32_t flavor, size_t level);

/* Every node src knows, set in dst as src knows it (a core rebuilt or
 * forked from src). Errors as queue_node_set's. */
int queue_nodes_copy(queue_t *dst, const queue_t *src, gpuq_diag_t *diag);

/* `count` pods of pod set `podset` of an admitted workload on node `node`
 * of flavor `flavor`'s topology. */
typedef struct {
	const char *node; /* node name (valid until the next call that changes q) */
	uint32_t flavor;  /* flavor id */
	uint16_t podset;  /* index in the workload's pod sets */
	int32_t count;	  /* pods */
} queue_place_t;

/* Workload id's placement: up to cap entries into out, *n the total (0
 * for a workload on no topology-aware flavor, or not admitted). */
void queue_workload_placement(const queue_t *q, queue_wl_t id, queue_place_t *out, size_t cap,
			      size_t *n);

/* The domain pod set `podset` of workload id was placed in on
 * topology-aware flavor `flavor`: the values, widest level first, of the
 * levels of the flavor's Topology (queue_flavor_level names them) at which
 * all the pod set's nodes there share one, up to the first where they part
 * (a rack-required pod set on two nodes of rack r2 of block b1: b1, r2; on
 * one node of a Topology ending in kubernetes.io/hostname: that node too).
 * At most cap values into values (borrowed: valid until q changes); returns
 * how many (0: its nodes share not even the widest level, none is placed
 * there, or a node is no longer known). What a release pins the pod set
 * to (docs/topology.md). O(entries x levels). */
size_t queue_podset_domain(const queue_t *q, queue_wl_t id, size_t podset, uint32_t flavor,
			   const char **values, size_t cap);

/* The label value of node `node` at level `level` of flavor's topology,
 * or NULL (no such flavor, topology level or node). */
const char *queue_node_domain(const queue_t *q, uint32_t flavor, const char *node,
			      const char *level);

/* ---- The admission cycle and the clock ---- */

typedef struct {
	uint16_t podset;   /* index in the workload's pod sets */
	uint16_t resource; /* resource id */
	uint32_t flavor;   /* flavor id chosen for this resource of this pod set */
	int64_t amount;	   /* count * per-pod request */
} queue_assign_t;

typedef struct {
	queue_wl_t wl;		      /* the admitted workload */
	const char *uid;	      /* its uid (valid until it is deleted) */
	uint32_t cq;		      /* its ClusterQueue id */
	bool borrows;		      /* above nominal in some flavor/resource */
	const queue_assign_t *assign; /* flavor per resource per pod set, in pod
					 set then request order; owned by q */
	size_t n_assign;	      /* entries in assign */
} queue_admission_t;

typedef enum {
	QUEUE_EVICT_IN_CQ = 0,	      /* InClusterQueue: preempted by priority in its CQ */
	QUEUE_EVICT_RECLAIM = 1,      /* InCohortReclamation: its CQ was borrowing */
	QUEUE_EVICT_FAIR_SHARING = 2, /* InCohortFairSharing */
	QUEUE_EVICT_RECLAIM_WHILE_BORROWING = 3, /* InCohortReclaimWhileBorrowing */
	QUEUE_EVICT_READY_TIMEOUT = 4,		 /* PodsReadyTimeout: requeued with backoff */
	QUEUE_EVICT_STOPPED = 5,		 /* ClusterQueueStopped (HoldAndDrain) */
	QUEUE_EVICT_IDLE_RECLAIM = 6,		 /* IdleReclaim: its GPUs stayed below its
						    CQ's idle threshold while others waited
						    for a flavor it held; requeued with
						    backoff_base_ms of backoff */
	QUEUE_EVICT_MAX_EXEC = 7,		 /* MaximumExecutionTimeExceeded: it was
						    admitted for its wall-clock limit in
						    all; deactivated, not requeued */
	QUEUE_EVICT_NODE_FAILED = 8,		 /* NodeFailures: a node it was placed on
						    was deleted or not Ready for
						    node_failure_ms; requeued at once, to be
						    placed again on healthy nodes */
} queue_evict_reason_t;

typedef struct {
	queue_wl_t victim;	     /* the evicted workload */
	const char *victim_uid;	     /* its uid */
	queue_wl_t preemptor;	     /* who it makes room for; QUEUE_NONE for
					Ready timeouts and drains */
	const char *preemptor_uid;   /* its uid, or NULL */
	queue_evict_reason_t reason; /* why */
	const char *reason_name;     /* Kueue's reason word ("InClusterQueue",
					"InCohortReclamation", "InCohortFairSharing",
					"InCohortReclaimWhileBorrowing",
					"PodsReadyTimeout", "ClusterQueueStopped",
					"IdleReclaim", "MaximumExecutionTimeExceeded") */
	const char *message;	     /* a sentence for the Evicted condition, e.g.
					"Preempted to accommodate a workload (UID: u)
					due to prioritization in the ClusterQueue";
					owned by q */
} queue_eviction_t;

typedef enum {
	QUEUE_WAIT_NONE = 0,	    /* eligible, not tried since it last changed */
	QUEUE_WAIT_QUOTA = 1,	    /* does not fit now (set aside under
				       BestEffortFIFO; the blocking head under StrictFIFO) */
	QUEUE_WAIT_NO_FIT = 2,	    /* can never fit with the CQ's current quota
				       (uncovered resource, above maximum
				       capacity, no flavor matches): set aside
				       under BestEffortFIFO; under StrictFIFO the
				       blocking head, as Kueue keeps it */
	QUEUE_WAIT_BEHIND_HEAD = 3, /* StrictFIFO: behind a blocked head */
	QUEUE_WAIT_PREEMPTING = 4,  /* victims chosen, waiting for their quota */
	QUEUE_WAIT_GANG = 5,	    /* gang pods not all present */
	QUEUE_WAIT_BACKOFF = 6,	    /* requeued; not eligible before its backoff ends */
	QUEUE_WAIT_STOPPED = 7,	    /* its CQ's stopPolicy holds admission */
	QUEUE_WAIT_BUDGET = 8,	    /* a budget over its limit with action Hold covers
				       its LocalQueue, namespace or ClusterQueue */
	QUEUE_WAIT_DEACTIVATED = 9, /* stopped at its wall-clock limit: out of the
				       queue until its limit is changed
				       (queue_workload_update) */
} queue_wait_t;

typedef struct {
	queue_wl_t wl;	     /* the pending workload */
	const char *uid;     /* its uid */
	queue_wait_t reason; /* its new reason (QUOTA or NO_FIT): set aside, it
				now says why once and is not retried until
				capacity changes; or (QUOTA) skipped: another
				workload took what it needed this cycle, and the
				next cycle tries it again */
} queue_pending_change_t;

/* An admitted workload idle past its CQ's idleReclaim.for. */
typedef struct {
	queue_wl_t wl;	       /* the workload */
	const char *uid;       /* its uid */
	int64_t idle_since_ms; /* since when the busiest of its GPUs was below the
				  threshold */
} queue_idle_t;

typedef enum {
	QUEUE_BUDGET_OK = 0,	  /* below its warning share */
	QUEUE_BUDGET_WARNING = 1, /* at or above its warning share, below its limit */
	QUEUE_BUDGET_OVER = 2,	  /* at or above its limit: its action applies */
} queue_budget_state_t;

/* A budget's state changed (index: queue_budget_view). */
typedef struct {
	uint32_t budget;	   /* its index */
	queue_budget_state_t from; /* the state before */
	queue_budget_state_t to;   /* ... and now */
} queue_budget_change_t;

typedef struct {
	const queue_admission_t *admissions;	     /* admitted this call, in order */
	size_t n_admissions;			     /* entries */
	const queue_eviction_t *evictions;	     /* evictions issued this call */
	size_t n_evictions;			     /* entries */
	const queue_pending_change_t *changes;	     /* pending workloads newly set aside
							or skipped, or newly holding their
							ClusterQueue's reservation */
	size_t n_changes;			     /* entries */
	const queue_idle_t *idles;		     /* admitted workloads whose GPUs have
							now been idle for their CQ's
							idleReclaim.for (once per idle spell) */
	size_t n_idles;				     /* entries */
	const queue_budget_change_t *budget_changes; /* budgets whose state changed
							at this call's evaluation */
	size_t n_budget_changes;		     /* entries */
} queue_result_t;

/* ---- Wall-clock limits ----
 *
 * A workload's limit is the shorter of its own (spec max_exec_s, a label)
 * and its ClusterQueue's default (max_exec_ms); either may be absent. Its
 * execution time is the time it was admitted (ADMITTED or EVICTING, from
 * admission to the release of its quota), summed over every admission, as
 * Kueue's accumulatedPastExecutionTimeSeconds plus the current span; it is
 * persisted with the workload's record, so a restored core keeps the
 * deadline. At the first queue_tick at or past admission + (limit - time
 * already run), an ADMITTED workload is evicted with
 * QUEUE_EVICT_MAX_EXEC; once its quota is released it is PENDING with wait
 * QUEUE_WAIT_DEACTIVATED, in no queue: no cycle looks at it. An update
 * (queue_workload_update) that changes its own limit (raised, lowered,
 * removed) reactivates it with its execution time back at 0; any other
 * update leaves it deactivated. A limit changed while it is admitted
 * applies at once (a deadline already past stops it at the next tick).
 */

/* ---- Bounded wait (a reservation) ----
 *
 * Under BestEffortFIFO a ClusterQueue with a starvation limit gives the
 * first of its pending workloads in queue order that has waited longer
 * than the limit (since its creation, less the time it held quota in
 * earlier admissions: a workload preempted or requeued goes on from the
 * wait it had; a reactivated one, whose admitted time starts afresh,
 * counts from its creation), and that is neither inadmissible as the
 * quota stands nor out of the queue (backoff, gang, deactivated), a
 * reservation: at each cycle, until it is admitted, no other workload of
 * its ClusterQueue with a priority at or below its own that requests a
 * resource it requests is admitted, unless that workload's wall-clock
 * limit (its own or its ClusterQueue's) or its run bound (spec run_bound_s)
 * ends it at or before the reserved start (backfill). The reserved start is
 * when, the admitted workloads of its ClusterQueue ending at their
 * wall-clock deadlines or run bounds (earliest first; one with neither
 * ends at an unknown time), enough of its
 * ClusterQueue's quota is free for it: the number of running workloads
 * that must end and, when all of them have limits, the time. Workloads
 * of a higher priority still go first, and preemption is unchanged.
 *
 * The reservation is not persisted: each cycle recomputes it from what
 * the records hold (creation times, priorities, admissions, execution
 * times, limits), so a restored core reserves what the core it came from
 * did. Run bounds are not in the records: a restored core learns a
 * pending workload's again from its caller's update, and until then its
 * runners without one end at unknown times (a later reserved start, fewer
 * backfills: never a shorter wait promised than kept). A workload kept out by it waits with
 * QUEUE_WAIT_QUOTA (set aside: tried again when capacity frees). Across the cohort
 * tree: a workload of another ClusterQueue of it whose assignment borrows (goes above its
 * ClusterQueue's nominal quota) a resource the holder requests is kept out on the same terms
 * (priority, backfill); within its own nominal quota it is not. The reserved start then counts
 * the other ClusterQueues' admitted workloads too, each freeing only what its ClusterQueue holds
 * above its nominal quota, and never more than the reserving ClusterQueue could hold (the tree
 * empty). The cost: a cycle of a cohort with such a ClusterQueue looks at all of that
 * ClusterQueue's pending workloads, and at the tree's admitted ones, once; a borrowing admission
 * looks at each ClusterQueue of its tree.
 */

/* Run one admission cycle at `now` (>= the last `now` seen, else
 * GPUQ_EINVAL). Considers every ClusterQueue whose cohort changed since the
 * last cycle (a cycle with no change costs O(cohorts)): orders each CQ's
 * pending workloads by priority, then tenant fair share, then creation,
 * then uid; orders CQs in a cohort by weighted DRS (fair sharing) or
 * borrowing level (non-borrowing first, then quota nearer in the cohort
 * tree), priority, creation (Kueue head order); assigns
 * flavors, borrows, preempts, and admits every workload that fits. `out`
 * (may be NULL) points into arrays owned by q, valid until the next
 * queue_cycle_run or queue_tick. GPUQ_ENOMEM leaves the queue consistent:
 * the cycle stops early (nothing half-admitted, a victim set evicted whole
 * or not at all) and the cohorts it did not finish go again in the next
 * cycle, so calling again at the same `now` decides what one whole cycle
 * would have. `out` is filled on GPUQ_ENOMEM too: what the call did before
 * it stopped (admissions, evictions) happened, and the caller acts on it. */
int queue_cycle_run(queue_t *q, int64_t now, queue_result_t *out);

/* Advance the clock without admitting: evict admitted workloads whose Ready
 * timeout expired (requeued with backoff base * 2^(n-1), capped at max) and
 * those at or past their wall-clock limit (QUEUE_EVICT_MAX_EXEC, by
 * admission time then uid; deactivated once released),
 * evict those placed on a node deleted or not Ready for node_failure_ms
 * (QUEUE_EVICT_NODE_FAILED, by admission time then uid; requeued at once),
 * drain CQs under HoldAndDrain, and sample tenant usage into the decay when
 * tenant_sample_ms has passed. `out` as for queue_cycle_run (evictions
 * only; filled on GPUQ_ENOMEM too). The earliest time queue_tick has work is queue_next_event. */
int queue_tick(queue_t *q, int64_t now, queue_result_t *out);

/* The earliest future time (> now) at which queue_tick or queue_cycle_run
 * would act on its own (a Ready deadline, a wall-clock deadline, a backoff
 * expiry, a tenant usage
 * sample, a node failing; now + 1 when one is already due), or INT64_MAX if
 * none. Lets a simulator jump time. O(1) unless a timer went stale (then
 * O(timers)) or a node is down (then O(nodes)). */
int64_t queue_next_event(const queue_t *q, int64_t now);

/* ---- GPU economics (docs/economics.md) ----
 *
 * Minimum runtime: an admitted workload is not a preemption candidate, nor
 * reclaimed for idling, before it has run max(its CQ's min_runtime_ms, the
 * minimum of its priority) since its admission. A preemptor that has no
 * victim set only because of it waits, and says for whom and how long; its
 * cohort is looked at again when that time is up.
 *
 * Budgets: GPU-hours (every accelerator resource, ledger_resource_accelerator)
 * or their cost, per LocalQueue, namespace or ClusterQueue over a window (a
 * calendar month in UTC, or N days counted from the Unix epoch), read from
 * the core's own ledger through ledger_window every budget_interval_ms of
 * `now`. Over its limit, a budget's action applies to every LocalQueue it
 * covers: Warn (reported only), Lower (their workloads come after those of
 * LocalQueues within budget in their CQ and in its cohort's head order, and
 * are admitted only within their CQ's nominal quota: they may not borrow), or
 * Hold (none is admitted until the window turns or the limit rises). A
 * budget's state is a record of its own (QUEUE_REC_BUDGET), so a restore
 * decides as the core it came from did.
 *
 * Idle GPUs: the driver feeds each admitted workload's utilization (the
 * busiest of its GPUs); a workload below its CQ's threshold for idle_after_ms
 * is reported, and with QUEUE_IDLE_PREEMPT evicted (IdleReclaim) at a tick
 * when another workload of its cohort tree is pending for a flavor and
 * resource it holds. Utilization is not persisted: after a restore a
 * workload is idle again only from the next reading that says so. With
 * idle_fresh_ms, a spell also needs fresh evidence throughout: readings
 * below the threshold at most idle_fresh_ms apart, the last one at most
 * idle_fresh_ms before the spell is reported and before each reclaim;
 * otherwise the spell ends (never a preemption on old data).
 *
 * Predicted start: a number the driver computes off the core (predict/) and
 * hands back for explanations and views; never persisted, never read by a
 * decision.
 */

/* A PriorityClass's minimum runtime (gpuq.dev/min-runtime), by its value. */
typedef struct {
	int32_t priority;	/* the class's value */
	int64_t min_runtime_ms; /* 1..QUEUE_MIN_RUNTIME_MAX */
} queue_prio_runtime_t;

/* Replace the minimum runtimes by priority (n at most QUEUE_PRIORITIES_MAX;
 * a value given twice keeps the longest). Workloads admitted earlier are
 * judged by the new table from now on. GPUQ_EINVAL (a runtime out of
 * range), GPUQ_ELIMIT, GPUQ_ENOMEM (the old table stays). */
#define QUEUE_PRIORITIES_MAX 1000
int queue_min_runtimes_set(queue_t *q, const queue_prio_runtime_t *v, size_t n);

typedef enum {
	QUEUE_BUDGET_LOCALQUEUE = 0,   /* name "namespace/name" */
	QUEUE_BUDGET_NAMESPACE = 1,    /* name: a namespace: all its LocalQueues */
	QUEUE_BUDGET_CLUSTERQUEUE = 2, /* name: a ClusterQueue: all its LocalQueues */
} queue_budget_scope_t;

typedef enum {
	QUEUE_BUDGET_WARN = 0,	/* over its limit: reported only */
	QUEUE_BUDGET_LOWER = 1, /* over: after the others, and no borrowing */
	QUEUE_BUDGET_HOLD = 2,	/* over: no admission until the window turns */
} queue_budget_action_t;

/* Budgets held at most: one per LocalQueue, namespace and ClusterQueue of
 * the policy's caps (10,000 + 10,000 + 1,000). */
#define QUEUE_BUDGETS_MAX 21000
/* The largest budget: 10^12 GPU-hours or price units. */
#define QUEUE_BUDGET_LIMIT_MAX 1e12
#define QUEUE_BUDGET_DAYS_MAX 366 /* the longest N-day window */

typedef struct {
	queue_budget_scope_t scope;   /* what it covers */
	const char *name;	      /* LocalQueue "ns/name", namespace, or ClusterQueue */
	bool cost;		      /* limit in price units (the flavors' prices,
					 queue_budgets_set); else GPU-hours */
	double limit;		      /* 0..QUEUE_BUDGET_LIMIT_MAX */
	int32_t window_days;	      /* 0: the calendar month (UTC); else
					 1..QUEUE_BUDGET_DAYS_MAX days from the epoch */
	int32_t warn_pct;	      /* warning share, 1..100 (0: 80) */
	queue_budget_action_t action; /* at or over its limit */
} queue_budget_spec_t;

/* Replace every budget with b[0..n) and the prices cost budgets charge at
 * (copied; a flavor without a price costs nothing). A budget that keeps its
 * scope and name keeps its state until the next evaluation, which comes at
 * the next queue_tick or queue_cycle_run. GPUQ_EINVAL (a bad field, a name
 * the core does not hold, a scope and name twice; diag says which),
 * GPUQ_ELIMIT, GPUQ_ENOMEM (the old budgets stay). */
int queue_budgets_set(queue_t *q, const queue_budget_spec_t *b, size_t n,
		      const ledger_price_t *prices, size_t n_prices, gpuq_diag_t *diag);

typedef struct {
	queue_budget_scope_t scope;   /* what it covers */
	const char *name;	      /* its name (borrowed: until the next queue_budgets_set) */
	bool cost;		      /* limit and used in price units, else GPU-hours */
	double limit;		      /* its limit */
	double used;		      /* used in its window at the last evaluation */
	int32_t window_days;	      /* 0: calendar month */
	int32_t warn_pct;	      /* warning share */
	queue_budget_action_t action; /* its action */
	queue_budget_state_t state;   /* at the last evaluation */
	int64_t window_start_ms;      /* the window evaluated */
	int64_t window_end_ms;	      /* ... its end: when a hold lifts */
	int64_t evaluated_ms;	      /* when (INT64_MIN: not yet) */
} queue_budget_view_t;

size_t queue_budget_count(const queue_t *q);
/* Budget i (in queue_budgets_set's order). GPUQ_ENOTFOUND past the end. */
int queue_budget_view(const queue_t *q, uint32_t i, queue_budget_view_t *out);

typedef enum {
	QUEUE_LQ_IN_BUDGET = 0, /* no budget over its limit with Lower or Hold covers it */
	QUEUE_LQ_LOWERED = 1,	/* Lower applies */
	QUEUE_LQ_HELD = 2,	/* Hold applies */
} queue_lq_standing_t;

/* What the budgets covering LocalQueue lq do to its workloads now. */
queue_lq_standing_t queue_lq_standing(const queue_t *q, uint32_t lq);

/* The utilization of admitted workload uid's GPUs, the busiest of them, as
 * a reading taken at `at` (ms; any time after its admission: a reading from
 * before is taken as from its admission). Below its CQ's idle threshold it
 * is idle from `at` unless idle already (with idle_fresh_ms: unless idle
 * already on a reading at most idle_fresh_ms before `at`; after a longer
 * gap the spell starts again at `at`); at or above it, it is not idle.
 * NaN says nothing (ignored: with idle_fresh_ms the spell ends when its
 * last reading grows stale). A spell that reached idleReclaim.for by the
 * core's last `now` counts as reported already (a driver telling a restored
 * core what the core it came from knew: its tick reported it then).
 * GPUQ_ENOTFOUND, GPUQ_EINVAL (not admitted). */
int queue_workload_utilization(queue_t *q, const char *uid, double util_pct, int64_t at);

/* Set pending workload uid's predicted start (ms; -1: none), for
 * explanations and views. GPUQ_ENOTFOUND, GPUQ_EINVAL (not pending). */
int queue_workload_predict_set(queue_t *q, const char *uid, int64_t start_ms);

/* Whether pending workload uid's coarse status (queue_workload_status) may
 * say its predicted start: the driver says so of the few it writes there
 * (the first of each LocalQueue, within the hour: controller/econ.c), so a
 * deep queue of short jobs costs no status write per Job and pass. *was (may be NULL): what it
 * was. GPUQ_ENOTFOUND, GPUQ_EINVAL (not pending). */
int queue_workload_predict_show(queue_t *q, const char *uid, bool show, bool *was);

/* ---- Explanations ---- */

/* Write a sentence about workload `uid` into buf (always NUL-terminated,
 * truncated to cap), e.g. "position 3 of 12 in team-a/gpu: needs 8
 * nvidia.com/gpu on flavor h100-80gb, 4 free; cohort borrowing limit
 * reached". Admitted and finished workloads say so and name their flavors.
 * GPUQ_ENOTFOUND, GPUQ_ELIMIT (truncated). Costs O(live workloads). */
int queue_workload_explain(const queue_t *q, const char *uid, char *buf, size_t cap);

/* queue_workload_explain without the position, by id, in O(1) (plus the
 * workload's flavor assignments): for a pending workload what it waits for
 * ("needs 8 nvidia.com/gpu on flavor h100-80gb, 4 free; cohort borrowing
 * limit reached"), for the others where and on what they run. For a caller
 * that lists many workloads and knows their positions itself (the web UI).
 * GPUQ_ENOTFOUND (dead id), GPUQ_ELIMIT (truncated). */
int queue_workload_reason(const queue_t *q, queue_wl_t id, char *buf, size_t cap);

/* The last QUEUE_REASON_MEMO reasons queue_workload_reason_memo made, by
 * what each was made of: the pending workloads of a ClusterQueue mostly
 * wait for the same thing (the same shape, the same quota reached), and the
 * web view's snapshot asks for every one's. The caller's, zeroed before its
 * first use, good while q does not change; no allocation. */
#define QUEUE_REASON_MEMO 8
#define QUEUE_REASON_TEXT 512 /* bytes of a memo's text (longer: truncated) */
typedef struct {
	struct {
		uint64_t key[6];	      /* what the text was made of (0: unused) */
		char text[QUEUE_REASON_TEXT]; /* queue_workload_reason's text */
		int rc;			      /* and what it returned */
	} e[QUEUE_REASON_MEMO];
	char scratch[QUEUE_REASON_TEXT]; /* a text no entry keeps */
	uint32_t n;			 /* entries used */
	uint32_t next;			 /* the entry to replace next (a ring) */
} queue_reason_memo_t;

/* queue_workload_reason's text for workload id into *text (m's, good until
 * m's next call), taken from m when a workload with the same inputs made
 * one; *slot: its entry in m (equal slots and !*fresh: the same text as
 * the last call with that slot returned); *fresh: made by this call. A
 * reason that names other workloads or reads the clock (a reservation, a
 * minimum runtime, a topology, a wall-clock limit) is made every time, its
 * slot QUEUE_REASON_MEMO (no entry).
 * GPUQ_ENOTFOUND (dead id), GPUQ_ELIMIT (truncated). */
int queue_workload_reason_memo(const queue_t *q, queue_wl_t id, queue_reason_memo_t *m,
			       const char **text, uint32_t *slot, bool *fresh);

/* The workload's coarse status: where it stands in words that change
 * rarely, never with its position (which moves at every admission ahead of
 * it), for a per-object annotation (gpuq.dev/status) whose every change is
 * an apiserver write. A pending workload: "pending in ClusterQueue CQ: "
 * and what holds it as a kind, not a figure: "waiting for quota" (eligible,
 * no quota free now, StrictFIFO behind its head, preempting), or the reason
 * that only the policy or the workload itself changes (it can never fit:
 * queue_workload_reason's sentence; its pod group's pods; a backoff; a
 * stopped ClusterQueue). One waiting for quota whose predicted start
 * (queue_workload_predict_set) may be said (queue_workload_predict_show)
 * adds it, rounded up to QUEUE_STATUS_ROUND_MS so it changes only when the
 * prediction does: "; expected to start by about 2026-11-29 15:45 UTC".
 * Admitted, evicting and finished ones: as queue_workload_reason ("admitted
 * in ClusterQueue CQ: 8 nvidia.com/gpu on flavor h100"). Positions and live
 * figures are for the visibility API. O(1) plus the flavor assignments.
 * GPUQ_ENOTFOUND (dead id), GPUQ_ELIMIT (truncated). */
#define QUEUE_STATUS_ROUND_MS ((int64_t)5 * 60 * 1000)
int queue_workload_status(const queue_t *q, queue_wl_t id, char *buf, size_t cap);

/* The coarse status of a workload that waits for quota in ClusterQueue cq:
 * the text queue_workload_status gives then, for a caller without a core
 * (the admission webhook writes it on a Job it creates suspended, so the
 * controller has nothing to write until the workload's state changes).
 * GPUQ_OK, GPUQ_ELIMIT (truncated). */
int queue_status_waiting(const char *cq, char *buf, size_t cap);

/* Static names: "Pending", "Admitted", ...; "Quota", "NoFit", ... */
const char *queue_wait_name(queue_wait_t w);

/* ---- Invariants ----
 *
 * queue_check: the quota invariants after any call, from the introspection
 * below: every CQ's usage per flavor and resource equals the sum of its
 * admitted (and evicting) workloads and stays within nominal (no cohort) or
 * nominal + borrowingLimit; every cohort lends at most what its CQs may lend
 * and uses at most their nominal; every admitted workload has a flavor for
 * each resource it requests and a gang has all its pods; on topology-aware
 * flavors every pod of an admitted workload is placed once, a REQUIRED pod
 * set's in one domain at its level, and no node's placements hold more than
 * it has free (a node that shrank under them fails it: the simulator's
 * nodes never change). GPUQ_OK, or
 * GPUQ_ECORRUPT with why (cap bytes) naming the CQ or workload and the
 * numbers; GPUQ_ENOMEM. Reads only; O(workloads + CQs x flavors x
 * resources). The property tests run it after every call; `gpuq simulate
 * --check` after every step. */
int queue_check(const queue_t *q, char *why, size_t cap);

/* queue_check's topology part (above), on its own. */
int queue_topology_check(const queue_t *q, char *why, size_t cap);

/* ---- Introspection (for invariant checks, reports and the controller) ---- */

typedef enum {
	QUEUE_WL_PENDING = 0,  /* waiting: see queue_wait_t */
	QUEUE_WL_ADMITTED = 1, /* holds quota */
	QUEUE_WL_EVICTING = 2, /* evicted, still holds quota (release_on_evict false) */
	QUEUE_WL_FINISHED = 3, /* completed; holds nothing */
} queue_wl_state_t;

const char *queue_wl_state_name(queue_wl_state_t s);

typedef struct {
	const char *uid;	   /* metadata.uid (borrowed: valid until deleted) */
	const char *namespace_;	   /* metadata.namespace */
	const char *name;	   /* metadata.name */
	uint32_t lq;		   /* LocalQueue id */
	uint32_t cq;		   /* ClusterQueue id */
	int32_t priority;	   /* priority */
	int64_t created_ms;	   /* creation time */
	queue_wl_state_t state;	   /* lifecycle state */
	queue_wait_t wait;	   /* why pending (QUEUE_WAIT_NONE otherwise) */
	size_t n_podsets;	   /* pod sets */
	int32_t pods;		   /* total pods over pod sets */
	int32_t gang_total;	   /* 0 when not a gang */
	int32_t pods_present;	   /* gang pods present */
	bool ready;		   /* PodsReady seen since the last admission */
	int64_t admitted_ms;	   /* last admission time (-1 never) */
	int64_t eligible_ms;	   /* not eligible before this (backoff), or 0 */
	uint32_t requeues;	   /* Ready-timeout evictions (drives the backoff) */
	uint32_t preemptions;	   /* times preempted */
	int64_t protected_ms;	   /* admitted: neither preempted nor reclaimed before
				      this (admission + its minimum runtime); 0: no
				      minimum runtime */
	int64_t idle_since_ms;	   /* admitted: the busiest of its GPUs below its CQ's
				      idle threshold since then; -1: not idle, or no
				      utilization seen since its admission */
	int64_t predicted_ms;	   /* pending: its predicted start
				      (queue_workload_predict_set); -1: none */
	int64_t exec_ms;	   /* time admitted in earlier admissions (the
				      current span not included) */
	int32_t max_exec_s;	   /* its own wall-clock limit (the spec's), s; 0: none */
	int32_t run_bound_s;	   /* its run bound (the spec's), s; 0: none */
	int64_t max_exec_ms;	   /* its wall-clock limit in force (the shorter of
				      its own and its CQ's), ms; 0: none */
	int64_t exec_deadline_ms;  /* admitted with a limit: when it is stopped;
				      else -1 */
	bool reserving;		   /* pending and holding its ClusterQueue's
				      reservation (bounded wait), as of the last
				      cycle of its cohort */
	uint32_t reserved_ahead;   /* reserving: running workloads that must end
				      before it fits (0: unknown) */
	int64_t reserved_start_ms; /* reserving: when they all end by their
				      wall-clock limits; -1: unknown */
} queue_workload_view_t;

/* What a list of every workload reads of each (the web view's snapshot,
 * each second): queue_workload_view's fields of the same names. */
typedef struct {
	const char *uid;	/* metadata.uid (borrowed: valid until deleted) */
	const char *namespace_; /* metadata.namespace */
	const char *name;	/* metadata.name */
	uint32_t lq;		/* LocalQueue id */
	uint32_t cq;		/* ClusterQueue id */
	int32_t priority;	/* priority */
	int64_t created_ms;	/* creation time */
	queue_wl_state_t state; /* lifecycle state */
	queue_wait_t wait;	/* why pending (QUEUE_WAIT_NONE otherwise) */
	int64_t predicted_ms;	/* pending: its predicted start; -1: none */
	uint64_t ident;		/* its slot's epoch and its uid's hash: another
				   workload in the same slot (id reused) has
				   another epoch; a reader that keeps a copy of
				   the strings by id compares this and the uid's
				   address before reusing it */
} queue_workload_brief_t;

/* Fill *out for workload id. GPUQ_ENOTFOUND for a dead id. */
int queue_workload_view(const queue_t *q, queue_wl_t id, queue_workload_view_t *out);
/* The same, the few fields of queue_workload_brief_t only: a third of its
 * cost. GPUQ_ENOTFOUND when id is not live. */
int queue_workload_brief(const queue_t *q, queue_wl_t id, queue_workload_brief_t *out);

/* The per-pod request of pod set `podset` for resource id `resource` (0 when
 * it does not request it), and the pod count. GPUQ_ENOTFOUND. */
int queue_workload_request(const queue_t *q, queue_wl_t id, size_t podset, uint32_t resource,
			   int64_t *per_pod, int32_t *count);

/* The name and pod count of pod set `podset` of workload id (*name
 * borrowed: valid while the workload lives). GPUQ_ENOTFOUND. */
int queue_workload_podset(const queue_t *q, queue_wl_t id, size_t podset, const char **name,
			  int32_t *count);

/* The flavor assigned to (podset, resource) of an admitted or evicting
 * workload: GPUQ_OK and *flavor, or GPUQ_ENOTFOUND (not admitted, or that
 * pod set does not request the resource). */
int queue_workload_flavor(const queue_t *q, queue_wl_t id, size_t podset, uint32_t resource,
			  uint32_t *flavor);

/* Iterate live workloads: start with QUEUE_NONE, returns the next id (in
 * id order, which is NOT deterministic across restores) or QUEUE_NONE. */
queue_wl_t queue_workload_next(const queue_t *q, queue_wl_t prev);
/* Workload id's state into *out: its first cache line alone, for a walk
 * of every id that wants a few states (GPUQ_ENOTFOUND when not live). */
int queue_workload_state(const queue_t *q, queue_wl_t id, queue_wl_state_t *out);
/* How many live workloads there are (what queue_workload_next visits). */
size_t queue_workload_count(const queue_t *q);
/* One past the highest id a workload may have: a caller that can rule ids
 * out by its own arrays (without reading the workloads) loops to it and
 * asks about the others (queue_workload_brief: GPUQ_ENOTFOUND when not
 * live). */
size_t queue_workload_id_limit(const queue_t *q);

/* Counts and names. Names are borrowed for the queue's lifetime; ids out of
 * range give NULL. find functions return GPUQ_OK or GPUQ_ENOTFOUND. */
size_t queue_resource_count(const queue_t *q);
const char *queue_resource_name(const queue_t *q, uint32_t id);
int queue_resource_find(const queue_t *q, const char *name, uint32_t *id);
size_t queue_flavor_count(const queue_t *q);
const char *queue_flavor_name(const queue_t *q, uint32_t id);
int queue_flavor_find(const queue_t *q, const char *name, uint32_t *id);
size_t queue_cohort_count(const queue_t *q);
const char *queue_cohort_name(const queue_t *q, uint32_t id);
int queue_cohort_find(const queue_t *q, const char *name, uint32_t *id);
/* The parent cohort id of a cohort, or QUEUE_NONE for a root. */
uint32_t queue_cohort_parent(const queue_t *q, uint32_t id);
size_t queue_cq_count(const queue_t *q);
const char *queue_cq_name(const queue_t *q, uint32_t id);
int queue_cq_find(const queue_t *q, const char *name, uint32_t *id);
/* The cohort id of a CQ, or QUEUE_NONE. */
uint32_t queue_cq_cohort(const queue_t *q, uint32_t cq);
size_t queue_lq_count(const queue_t *q);
/* "namespace/name" of a LocalQueue. */
const char *queue_lq_name(const queue_t *q, uint32_t id);
int queue_lq_find(const queue_t *q, const char *namespace_, const char *name, uint32_t *id);
uint32_t queue_lq_cq(const queue_t *q, uint32_t lq);

/* Carry a tenant's decayed usage over from elsewhere (a LocalQueue status a
 * former leader wrote) into a tenant with no history here: its usage and
 * ledger are both 0. Sets it (the tenant record is dirty, its cohort is
 * touched) and returns GPUQ_OK; GPUQ_EEXIST when the tenant has history of
 * its own (kept); GPUQ_EINVAL for a usage that is not finite or is outside
 * [0, 1e9]; GPUQ_ENOTFOUND for a bad id. */
int queue_lq_usage_seed(queue_t *q, uint32_t lq, double usage);

typedef struct {
	int64_t nominal;	 /* nominalQuota */
	int64_t borrowing_limit; /* borrowingLimit or QUEUE_UNLIMITED */
	int64_t lending_limit;	 /* lendingLimit or QUEUE_UNLIMITED */
	int64_t usage;		 /* admitted + evicting workloads' amounts */
	int64_t available;	 /* what one more workload could take now,
				    counting what the cohort can lend */
	int64_t max_capacity;	 /* the most this CQ could ever hold here:
				    nominal + what it may borrow */
} queue_quota_view_t;

/* Quota and usage of (cq, flavor, resource). GPUQ_ENOTFOUND when the CQ
 * does not list that flavor for that resource. */
int queue_cq_quota(const queue_t *q, uint32_t cq, uint32_t flavor, uint32_t resource,
		   queue_quota_view_t *out);

typedef struct {
	int64_t nominal;	 /* sum of its member CQs' nominal */
	int64_t own;		 /* its own nominalQuota (Cohort resourceGroups) */
	int64_t borrowing_limit; /* its own borrowingLimit or QUEUE_UNLIMITED */
	int64_t lending_limit;	 /* its own lendingLimit or QUEUE_UNLIMITED */
	int64_t lendable;	 /* its subtree quota: own + what its CQs and child
				    cohorts lend it (Kueue's SubtreeQuota) */
	int64_t usage;		 /* sum of its member CQs' usage */
	int64_t borrowed;	 /* usage counted against lendable: what its CQs and
				    child cohorts use beyond what they keep (at a
				    root it stays <= lendable) */
} queue_cohort_view_t;

/* Totals of a cohort for (flavor, resource); zeros when no CQ lists it.
 * GPUQ_ENOTFOUND for a bad cohort id. */
int queue_cohort_quota(const queue_t *q, uint32_t cohort, uint32_t flavor, uint32_t resource,
		       queue_cohort_view_t *out);

typedef struct {
	uint32_t pending;	/* pending now (all wait reasons) */
	uint32_t admitted;	/* admitted or evicting now */
	uint64_t admissions;	/* history: admissions */
	uint64_t preemptions;	/* history: workloads preempted */
	uint64_t evictions;	/* history: evictions of any reason */
	uint64_t finishes;	/* history: workloads finished */
	int64_t weighted_share; /* CQ only: weighted DRS in ppm (fairshare_drs) */
	double decayed_usage;	/* LQ only: decayed usage (fairshare_decay) */
	double used_ms;		/* LQ only: sum of amount * runtime ms of finished
				   workloads, all resources, in caller units */
	int64_t weight_milli;	/* its fair-sharing weight, thousandths */
} queue_stats_t;

int queue_cq_stats(const queue_t *q, uint32_t cq, queue_stats_t *out);
int queue_lq_stats(const queue_t *q, uint32_t lq, queue_stats_t *out);

/* Workload ids of a CQ in the given state into ids[0..cap); returns how many
 * there are (may exceed cap). Pending ones come in admission order (the order
 * the next cycle would try them, tenant keys as of now); admitted ones by
 * admission time then uid. */
size_t queue_cq_workloads(const queue_t *q, uint32_t cq, queue_wl_state_t state, queue_wl_t *ids,
			  size_t cap);

/* Every CQ's lists at once, in one pass (queue_cq_workloads for each CQ
 * costs a pass each): the live workloads in state (ADMITTED includes
 * EVICTING) into ids[0..cap), grouped by CQ id ascending, each CQ's in
 * queue_cq_workloads' order. Returns how many there are; when that exceeds
 * cap, ids holds an unordered prefix: call again with room for all.
 * O(workloads log workloads); O(workloads) when the slots are in that order
 * already, as they mostly are (gpuq_sort_u32 follows the runs there). */
size_t queue_workloads_by_cq(const queue_t *q, queue_wl_state_t state, queue_wl_t *ids, size_t cap);
/* The same, the ids of hint[0..n_hint) (a previous answer: any ids, each
 * taken once when it is still live and in state) placed first in their
 * order, the others after: O(workloads) when the order changed little
 * since (the web view's snapshot each second, queues of mixed priority). */
size_t queue_workloads_by_cq_hint(const queue_t *q, queue_wl_state_t state, const queue_wl_t *hint,
				  size_t n_hint, queue_wl_t *ids, size_t cap);
/* The pending workloads past position P of every ClusterQueue's order
 * (queue_cq_workloads'), P the largest that keeps positions 1..P of every
 * CQ at most total_max in all: (*beyond)[id] is 1 for each, 0 for every
 * other id below *n_ids (calloc'd, the caller's). By selection within each
 * CQ, not a sort of all: O(pending workloads) on average, where
 * queue_workloads_by_cq is O(n log n). GPUQ_OK or GPUQ_ENOMEM (*beyond
 * NULL). */
int queue_pending_beyond(const queue_t *q, size_t total_max, uint8_t **beyond, size_t *n_ids);

/* Cycles run so far and the last `now` seen. */
uint64_t queue_cycle_count(const queue_t *q);
int64_t queue_last_now(const queue_t *q);

/* ---- Persistence ----
 *
 * Records: META (key "meta": cycle count, last now, counters), CQ (key = CQ
 * name: usage per flavor/resource and history counters), TENANT (key =
 * "namespace/name": decayed usage, ledger, counters), WORKLOAD (key = uid:
 * the spec, state, admission and timers). Values start with a one-byte
 * version (1), then little-endian fixed-width fields and length-prefixed
 * strings; a WORKLOAD record is version 3: the same fields, its integers
 * and string lengths as zigzag varints (base/bytes.h), a resource name of
 * quota_known_resources as its index (a negative length, -(k+1)); versions
 * 1 (fixed widths) and 2 (varints, names as text) are still read. A record whose object no longer
 * exists (a deleted workload) encodes as GPUQ_ENOTFOUND: the store deletes that key.
 */
typedef enum {
	QUEUE_REC_META = 1,	/* the queue's counters and clock */
	QUEUE_REC_CQ = 2,	/* one ClusterQueue's usage and history */
	QUEUE_REC_TENANT = 3,	/* one LocalQueue's ledger */
	QUEUE_REC_WORKLOAD = 4, /* one workload */
	QUEUE_REC_USAGE = 5,	/* the usage ledger's records (ledger.h: keys
				   "0meta", "1series/..", "2hour/..", "3open/<uid>") */
	QUEUE_REC_BUDGET = 6,	/* one budget's state (key "l/ns/name", "n/ns" or
				   "c/name": its scope and name) */
} queue_rec_type_t;

typedef struct {
	size_t pos; /* cursor; zero-initialize before the first call */
} queue_dirty_iter_t;

/* Next record changed since the last queue_dirty_clear: GPUQ_OK with *type
 * and key[0..*key_len) (borrowed: valid until queue_dirty_clear or the next
 * mutating call), or GPUQ_ENOTFOUND when done. Each record appears once.
 * GPUQ_ENOMEM on the first call: a change could not be recorded (allocation
 * failure); call queue_dirty_all and iterate again. */
int queue_dirty_next(const queue_t *q, queue_dirty_iter_t *it, queue_rec_type_t *type,
		     const uint8_t **key, size_t *key_len);

/* Records changed since the last queue_dirty_clear. */
size_t queue_dirty_count(const queue_t *q);

/* Forget the changed set (after the store committed it). */
void queue_dirty_clear(queue_t *q);

/* Mark every live record changed (for a full snapshot). GPUQ_ENOMEM. */
int queue_dirty_all(queue_t *q);

/* Encode the current value of record (type, key) into buf[0..cap); *len gets
 * the length, or the length needed with GPUQ_ELIMIT (never above
 * QUEUE_RECORD_MAX). GPUQ_ENOTFOUND: the record no longer exists. */
int queue_record_encode(const queue_t *q, queue_rec_type_t type, const uint8_t *key, size_t key_len,
			uint8_t *buf, size_t cap, size_t *len);

/* Restore one record into a queue built from the same policy (flavors,
 * cohorts, CQs, LQs) and holding no workloads yet. Records may come in any
 * order; call queue_restore_done after the last. GPUQ_ECORRUPT (bad
 * version, truncated, out-of-range field, trailing bytes: never a crash),
 * GPUQ_ENOTFOUND (names a CQ, LQ, flavor or resource the policy lacks),
 * GPUQ_EEXIST (a workload twice); diag says which. A failed apply leaves the
 * queue as it was. */
int queue_record_apply(queue_t *q, queue_rec_type_t type, const uint8_t *key, size_t key_len,
		       const uint8_t *val, size_t val_len, gpuq_diag_t *diag);

/* Finish a restore: recompute derived state (cohort sums, orders) and check
 * that CQ usage records equal the sum of their admitted workloads
 * (GPUQ_ECORRUPT with a diagnostic if not). Clears the changed set and marks
 * every cohort changed, so the next cycle re-examines everything. */
int queue_restore_done(queue_t *q, gpuq_diag_t *diag);

/* ---- Usage ledger (chargeback) ----
 *
 * The core feeds its ledger (ledger/ledger.h) itself: an admission (in a
 * cycle or by queue_workload_adopt) opens an interval for the workload at
 * `now` with, per assigned flavor and resource, the part within its CQ's
 * nominal quota and the part above it (the CQ's usage after the admission
 * minus nominal, at most the workload's amount): the borrowed part is
 * decided then and kept until the interval closes. The interval closes when
 * the quota is freed: finish, delete, or (release_on_evict false) the
 * evicted workload's pods gone; with release_on_evict the eviction itself.
 * Its records are QUEUE_REC_USAGE, in the changed set like the others. A
 * ledger failure (out of memory) never fails the queue call: that work is
 * not recorded. queue_restore_done closes, at the core's last `now`, every
 * interval whose workload is not admitted or evicting (a store from before
 * a rebuild that lost it); those changes stay in the changed set. */

/* The core's ledger (borrowed: valid until queue_destroy); read it with
 * ledger_window. */
const ledger_t *queue_ledger(const queue_t *q);

/* Replace dst's ledger with a copy of src's (engine_core_rebuild carries
 * usage history over this way; the copy is in dst's changed set only after
 * queue_dirty_all). GPUQ_ENOMEM (dst keeps its own). */
int queue_ledger_copy(queue_t *dst, const queue_t *src);

/* Merge a usage checkpoint part (ledger_checkpoint_merge: nothing counted
 * twice) into the core's ledger; what it changes joins the changed set, to
 * be committed with the core's records. Its codes. */
int queue_ledger_merge(queue_t *q, const uint8_t *part, size_t len, ledger_merge_info_t *info,
		       gpuq_diag_t *diag);

/* Bytes the queue holds on the heap now (for the 1 KiB per workload budget). */
size_t queue_memory_bytes(const queue_t *q);

#endif

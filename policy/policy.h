/*
 * policy: the in-memory snapshot of the cluster objects gpuq decides from
 * (Namespaces, LimitRanges, ResourceQuotas, PriorityClasses, ResourceFlavors,
 * Topologies, ClusterQueues, LocalQueues, Cohorts, ResourceClaimTemplates),
 * loaded from Kubernetes manifests (YAML, multi-document, or JSON), and which workload
 * collections the controller that built it watches (policy_watch_has).
 *
 * An adapter over jansson (manifests are read by manifest/, the one YAML
 * reader); reads files, never the clock. No jansson type crosses this
 * header: what takes or hands out a json_t (policy_add_json, the field
 * decoder) is in policy/policy_json.h,
 * for the few modules that hold jansson values themselves. The design
 * decision that matters: a policy_t is built once, checked as a whole (every
 * cross reference resolved, every cap enforced), then frozen and shared by
 * reference count. A reload builds a new snapshot beside the old one and
 * the server swaps the pointer; requests in flight finish on the old snapshot
 * and drop it with policy_unref(). A directory loads all or nothing; the
 * cluster's objects (policy_opts_t.leave_out_broken) object by object: one
 * that fails is left out and listed with its reason, the rest loads. Every
 * refusal names the file, the document (1-based), the object, the field path
 * and the value:
 *
 *   queues.yaml: document 3: ClusterQueue "team-a":
 *     spec.resourceGroups[0].flavors[1].resources[0].nominalQuota: invalid quantity "1Gb"
 *
 * Thread rules: building (policy_create .. policy_finish) is single-threaded.
 * After policy_finish() every read function is safe from any number of threads
 * without locks; policy_ref/policy_unref are atomic. Every pointer returned by
 * a read function is borrowed from the snapshot and valid while the caller
 * holds a reference to it.
 */
#ifndef GPUQ_POLICY_H
#define GPUQ_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "manifest/manifest.h"
#include "quota/quota.h"

/* ---- Caps (a policy dir is written by an admin, but a typo or a generator
 * gone wrong must not exhaust the daemon; each cap sits well above any real
 * cluster: Kueue's large-scale benchmark has 1,000 ClusterQueues) ---- */

#define POLICY_FILE_MAX MANIFEST_FILE_MAX   /* bytes in one manifest file */
#define POLICY_DIR_BYTES_MAX (64u << 20)    /* bytes over all files of a dir */
#define POLICY_DIR_FILES_MAX 1000	    /* manifest files in one dir */
#define POLICY_DEPTH_MAX MANIFEST_DEPTH_MAX /* nesting of maps/sequences in a document */
#define POLICY_DOCS_MAX MANIFEST_DOCS_MAX   /* documents (and List items) per file */
#define POLICY_OBJECTS_MAX 50000	    /* objects in one policy, all kinds */
#define POLICY_NAMESPACES_MAX 10000	    /* Namespaces, declared or implied */
#define POLICY_CQ_MAX 1000		    /* ClusterQueues */
#define POLICY_LQ_MAX 10000		    /* LocalQueues */
#define POLICY_FLAVORS_MAX 256		    /* ResourceFlavors */
#define POLICY_TOPOLOGIES_MAX 256	    /* Topologies (one per flavor at most is used) */
#define POLICY_TOPOLOGY_LEVELS_MAX 16	    /* spec.levels per Topology (Kueue's cap) */
#define POLICY_COHORTS_MAX 1000		    /* Cohorts, declared or named by a CQ */
#define POLICY_COHORT_DEPTH_MAX 16	    /* cohorts on a path from a ClusterQueue to its root */
#define POLICY_PRIORITYCLASSES_MAX 1000	    /* PriorityClasses */
#define POLICY_LIMITRANGES_MAX 10000	    /* LimitRanges */
#define POLICY_QUOTAS_MAX 10000		    /* ResourceQuotas */
#define POLICY_CLAIMTEMPLATES_MAX 10000	    /* ResourceClaimTemplates */
#define POLICY_RUNTIMECLASSES_MAX 1000	    /* RuntimeClasses */
#define POLICY_GROUPS_MAX 16		    /* resourceGroups per CQ (Kueue's cap) */
#define POLICY_GROUP_FLAVORS_MAX 16	    /* flavors per resource group */
#define POLICY_COVERED_MAX 16		    /* coveredResources per group (Kueue's cap) */
#define POLICY_LABELS_MAX 64		    /* metadata.labels per Namespace */
#define POLICY_NODE_LABELS_MAX 8	    /* nodeLabels per ResourceFlavor (Kueue's cap) */
#define POLICY_SELECTOR_REQS_MAX 32	    /* matchLabels + matchExpressions per selector */
#define POLICY_SELECTOR_VALUES_MAX 64	    /* values per matchExpressions entry */
#define POLICY_TAINTS_MAX 8	      /* nodeTaints, and tolerations, per flavor (Kueue's cap) */
#define POLICY_LR_ITEMS_MAX 16	      /* spec.limits[] per LimitRange */
#define POLICY_DEVICE_REQUESTS_MAX 32 /* devices.requests[] per claim template */
#define POLICY_SUBREQUESTS_MAX 8      /* firstAvailable[] per device request */
/* Any other string field; Kubernetes names are at most 253 bytes, label keys 317. */
#define POLICY_STRING_MAX 1024

/* ---- Labels and selectors (k8s metav1.LabelSelector) ---- */

typedef struct {
	const char *key;   /* e.g. "gpuq.dev/tenant" */
	const char *value; /* e.g. "team-a" (may be "") */
} policy_label_t;

typedef struct {
	const policy_label_t *items; /* sorted by key, keys unique */
	size_t n;		     /* entries in items */
} policy_labels_t;

typedef enum {
	POLICY_SEL_IN = 0,	       /* key's value is one of values */
	POLICY_SEL_NOT_IN = 1,	       /* key absent, or its value is none of values */
	POLICY_SEL_EXISTS = 2,	       /* key present (values empty) */
	POLICY_SEL_DOES_NOT_EXIST = 3, /* key absent (values empty) */
} policy_sel_op_t;

typedef struct {
	const char *key;	   /* label key */
	policy_sel_op_t op;	   /* operator */
	const char *const *values; /* In/NotIn: at least one value */
	size_t n_values;	   /* entries in values */
} policy_sel_req_t;

typedef struct {
	bool present;		      /* false: the field was absent or null, which
					 selects nothing; true with n_reqs 0 ({}) selects
					 everything */
	const policy_sel_req_t *reqs; /* matchLabels (as In with one value) then
					 matchExpressions, all ANDed */
	size_t n_reqs;		      /* entries in reqs */
} policy_selector_t;

/* Kubernetes' name rules, the one copy of each, for the policy's objects,
 * the workloads' topology annotations and the simulator's nodes alike:
 * a label key is an optional DNS-1123 subdomain prefix (<= 253 bytes) and
 * '/', then a name of 1..63 bytes of [A-Za-z0-9._-] starting and ending
 * alphanumeric; a label value is "" or such a name; a DNS-1123 subdomain
 * (a Node's or an object's name) is 1..253 bytes of [a-z0-9.-], each
 * dot-separated part starting and ending alphanumeric. */
bool policy_name_is_label_key(const char *s);
bool policy_name_is_label_value(const char *s);
bool policy_name_is_subdomain(const char *s);

/* The value of key in labels, or NULL. O(log n). */
const char *policy_labels_get(const policy_labels_t *labels, const char *key);

/* Whether sel selects an object carrying labels (absent selects nothing,
 * {} everything, otherwise every requirement must hold). */
bool policy_selector_matches(const policy_selector_t *sel, const policy_labels_t *labels);

/* ---- Objects ---- */

/* Where an object came from, for messages: "queues.yaml: document 3: ". */
typedef struct {
	const char *file; /* manifest name as given to the loader; NULL when the
			     object came from policy_add_json() */
	size_t doc;	  /* 1-based document number in file; 0 when unknown */
} policy_origin_t;

/* A Namespace. Every namespace named by a namespaced object exists here, even
 * without a Namespace object in the manifests ("implied"). Every namespace
 * carries the label kubernetes.io/metadata.name=<name>, as the apiserver
 * sets it, so selectors on that key work. */
typedef struct {
	const char *name;			      /* metadata.name */
	bool declared;				      /* a Namespace object exists */
	policy_labels_t labels;			      /* metadata.labels + the name label */
	const quota_limitrange_t *const *limitranges; /* this namespace's LimitRanges */
	size_t n_limitranges;			      /* entries in limitranges */
	const quota_resourcequota_t *const *quotas;   /* this namespace's ResourceQuotas */
	size_t n_quotas;			      /* entries in quotas */
	policy_origin_t origin;			      /* where declared (or first implied) */
} policy_namespace_t;

/* The PriorityClass annotation giving workloads of its value a minimum
 * runtime before they may be preempted or reclaimed (a duration, "10m";
 * at most 30 days): docs/economics.md. */
#define POLICY_ANNOT_MIN_RUNTIME "gpuq.dev/min-runtime"
/* A workload's own estimate of its runtime (a Job's annotation, "45m"),
 * for the predicted start of the workloads behind it. */
#define POLICY_ANNOT_EXPECTED_RUNTIME "gpuq.dev/expected-runtime"
/* The longest minimum runtime: 30 days (QUEUE_MIN_RUNTIME_MAX). */
#define POLICY_MIN_RUNTIME_MAX_MS ((int64_t)30 * 24 * 3600 * 1000)
/* The longest ClusterQueue spec.maxExecutionTime: 365 days (8760h); a
 * workload's own label may say more, up to Kueue's int32 of seconds. */
#define POLICY_MAX_EXEC_MAX_MS ((int64_t)365 * 24 * 3600 * 1000)

/* scheduling.k8s.io/v1 PriorityClass. */
typedef struct {
	const char *name;	/* metadata.name */
	int32_t value;		/* value; user classes must stay <= 1,000,000,000 */
	bool global_default;	/* globalDefault (at most one class sets it) */
	bool preempt_never;	/* preemptionPolicy: Never (default PreemptLowerPriority) */
	policy_origin_t origin; /* where declared */
	int64_t min_runtime_ms; /* POLICY_ANNOT_MIN_RUNTIME, 0 when absent */
} policy_priorityclass_t;

typedef enum {
	POLICY_EFFECT_ANY = 0,		      /* toleration effect "" (matches all) */
	POLICY_EFFECT_NO_SCHEDULE = 1,	      /* NoSchedule */
	POLICY_EFFECT_PREFER_NO_SCHEDULE = 2, /* PreferNoSchedule */
	POLICY_EFFECT_NO_EXECUTE = 3,	      /* NoExecute */
} policy_effect_t;

typedef struct {
	const char *key;	/* taint key */
	const char *value;	/* taint value ("" when absent) */
	policy_effect_t effect; /* never POLICY_EFFECT_ANY for a taint */
} policy_taint_t;

typedef struct {
	const char *key;	/* "" with exists = all keys */
	bool exists;		/* operator Exists (else Equal) */
	const char *value;	/* Equal: the value ("" when absent) */
	policy_effect_t effect; /* POLICY_EFFECT_ANY: every effect */
	bool has_seconds;	/* tolerationSeconds set (NoExecute only) */
	int64_t seconds;	/* tolerationSeconds */
} policy_toleration_t;

/* Whether toleration tol tolerates taint (Kubernetes' ToleratesTaint rule). */
bool policy_toleration_tolerates(const policy_toleration_t *tol, const policy_taint_t *taint);

/* The one taint-effect map, names <-> policy_effect_t (select.c): every
 * reader of an effect (the policy's decoder, the simulator's Trace, the
 * controller's Jobs) and every writer (the tolerations a release adds)
 * uses it. POLICY_EFFECT_NAMES[e] is e's name ("" for POLICY_EFFECT_ANY),
 * NULL-terminated for policy_jdec_enum. */
extern const char *const POLICY_EFFECT_NAMES[];

/* name's effect: NULL or "" is POLICY_EFFECT_ANY (a toleration's "every
 * effect"), the three names Kubernetes knows theirs. GPUQ_OK, or
 * GPUQ_EINVAL for any other name (*out untouched): the apiserver refuses
 * one, and were it there it would tolerate no taint (ToleratesTaint
 * compares effects exactly and no taint has another), so a caller drops
 * such a toleration rather than read it as every effect or as NoExecute. */
int policy_effect_named(const char *name, policy_effect_t *out);

/* The ResourceFlavor annotation giving its price per accelerator unit-hour
 * ("2.50": one GPU, or one MIG slice, of this flavor held for an hour), a
 * decimal 0..1,000,000 (ledger_price_parse). Chargeback reports use it;
 * `--price FLAVOR=PRICE` flags win over it (ledger_prices_merge). */
#define POLICY_ANNOT_PRICE "gpuq.dev/price-per-hour"

/* The node label every node carries with its own name: a Topology may name
 * it only as its narrowest (last) level (Kueue's rule). */
#define POLICY_LABEL_HOSTNAME "kubernetes.io/hostname"

/* Topology (Kueue's kueue.x-k8s.io/v1beta2 shape, in gpuq.dev/v1beta1 too;
 * cluster-scoped): the node labels that make a cluster's domains, from the
 * widest level (a block) to the narrowest (a rack, a host). A ResourceFlavor
 * names one by spec.topologyName; the pod sets admitted on that flavor are
 * placed within its domains (docs/policy.md). */
typedef struct {
	const char *name;	   /* metadata.name */
	const char *const *levels; /* spec.levels[].nodeLabel, widest first: label
				      keys, unique, POLICY_LABEL_HOSTNAME only
				      last */
	size_t n_levels;	   /* 1..POLICY_TOPOLOGY_LEVELS_MAX */
	policy_origin_t origin;	   /* where declared */
} policy_topology_t;

/* The level of t whose node label is key (0 the widest), or -1. */
int policy_topology_level(const policy_topology_t *t, const char *key);

/* ResourceFlavor (Kueue). */
typedef struct {
	const char *name;			/* metadata.name */
	const char *topology_name;		/* spec.topologyName; NULL when absent */
	const policy_topology_t *topology;	/* the Topology it names (never NULL
						   after policy_finish when topology_name
						   is set: a flavor naming a missing one is
						   refused, or left out) */
	policy_labels_t node_labels;		/* spec.nodeLabels (nodeSelector on release) */
	const policy_taint_t *taints;		/* spec.nodeTaints */
	size_t n_taints;			/* entries in taints */
	const policy_toleration_t *tolerations; /* spec.tolerations (added on release) */
	size_t n_tolerations;			/* entries in tolerations */
	bool has_price;				/* the price annotation is set (and good) */
	const char *price_error;		/* with price_lenient: why the annotation
						   was ignored, naming field and value;
						   NULL when it was not */
	double price_per_hour;			/* POLICY_ANNOT_PRICE: the price of one
						   unit of each accelerator resource of
						   this flavor for an hour (chargeback) */
	policy_origin_t origin;			/* where declared */
} policy_flavor_t;

/* One resource's quota in one flavor of a ClusterQueue. */
typedef struct {
	const char *resource;	     /* e.g. "nvidia.com/gpu" (a coveredResources entry) */
	quota_qty_t nominal;	     /* nominalQuota (>= 0) */
	bool has_borrowing_limit;    /* borrowingLimit set (false: unlimited) */
	quota_qty_t borrowing_limit; /* borrowingLimit (>= 0) */
	bool has_lending_limit;	     /* lendingLimit set (false: lends all of nominal) */
	quota_qty_t lending_limit;   /* lendingLimit (0 <= lendingLimit <= nominal) */
	int64_t max_fit;	     /* the most one workload could ever get here, in
					quota_qty_amount units: quota_tree_potential(); see
					policy_cq_max_fit() */
} policy_res_quota_t;

typedef struct {
	const char *name;		     /* flavors[].name */
	const policy_flavor_t *flavor;	     /* the ResourceFlavor it names (never NULL
						after policy_finish) */
	const policy_res_quota_t *resources; /* resources[], in coveredResources order */
	size_t n_resources;		     /* == the group's n_covered */
} policy_flavor_quota_t;

typedef struct {
	const char *const *covered;	      /* coveredResources */
	size_t n_covered;		      /* entries in covered */
	const policy_flavor_quota_t *flavors; /* flavors[], in the order tried */
	size_t n_flavors;		      /* entries in flavors */
} policy_resource_group_t;

typedef enum {
	POLICY_QUEUEING_BEST_EFFORT_FIFO = 0, /* BestEffortFIFO (default) */
	POLICY_QUEUEING_STRICT_FIFO = 1,      /* StrictFIFO */
} policy_queueing_t;

typedef enum {
	POLICY_PREEMPT_NEVER = 0,			  /* Never (default everywhere) */
	POLICY_PREEMPT_LOWER_PRIORITY = 1,		  /* LowerPriority */
	POLICY_PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY = 2, /* LowerOrNewerEqualPriority
							     (withinClusterQueue only) */
	POLICY_PREEMPT_ANY = 3,				  /* Any (reclaimWithinCohort only) */
} policy_preempt_t;

typedef struct {
	policy_preempt_t within_cluster_queue;	/* Never | LowerPriority |
						   LowerOrNewerEqualPriority */
	policy_preempt_t reclaim_within_cohort; /* Never | LowerPriority | Any */
	policy_preempt_t borrow_within_cohort;	/* borrowWithinCohort.policy:
						   Never | LowerPriority */
	bool has_max_priority_threshold;	/* borrowWithinCohort.maxPriorityThreshold set */
	int32_t max_priority_threshold;		/* only victims with priority <= this */
} policy_preemption_t;

typedef enum {
	POLICY_STOP_NONE = 0,		/* None (default) */
	POLICY_STOP_HOLD = 1,		/* Hold: admit nothing new */
	POLICY_STOP_HOLD_AND_DRAIN = 2, /* HoldAndDrain: admit nothing, evict admitted */
} policy_stop_t;

/* spec.flavorFungibility: what to do when a flavor fits only by borrowing
 * (or only by preempting). */
typedef enum {
	POLICY_FUNGIBLE_STOP = 0,	     /* Borrow / Preempt / MayStopSearch:
						take this flavor */
	POLICY_FUNGIBLE_TRY_NEXT_FLAVOR = 1, /* TryNextFlavor: look further first */
} policy_fungible_t;

/* spec.flavorFungibility.preference. */
typedef enum {
	POLICY_PREFER_BORROWING = 0,  /* BorrowingOverPreemption (default) */
	POLICY_PREFER_PREEMPTION = 1, /* PreemptionOverBorrowing */
} policy_preference_t;

typedef struct {
	policy_fungible_t when_can_borrow;  /* default STOP (Borrow) */
	policy_fungible_t when_can_preempt; /* default TRY_NEXT_FLAVOR (Kueue's default) */
	policy_preference_t preference;	    /* only with both TRY_NEXT_FLAVOR (Kueue's
					       validation); default BORROWING */
} policy_fungibility_t;

struct policy_cohort;

/* spec.budget of a gpuq.dev/v1beta1 ClusterQueue or LocalQueue
 * (docs/economics.md): GPU-hours, or their cost, over a window. */
typedef enum {
	POLICY_BUDGET_WARN = 0,	 /* action Warn (default): an Event and a metric only */
	POLICY_BUDGET_LOWER = 1, /* Lower: after the workloads within budget, no borrowing */
	POLICY_BUDGET_HOLD = 2,	 /* Hold: no admission until the window turns */
} policy_budget_action_t;

/* Caps of a budget: its limit (GPU-hours or price units) and an N-day
 * window. */
#define POLICY_BUDGET_LIMIT_MAX 1e12
#define POLICY_BUDGET_DAYS_MAX 366

typedef struct {
	bool present;		       /* spec.budget is set */
	bool namespace_scope;	       /* LocalQueue only: scope Namespace (every
					  LocalQueue of its namespace; one per namespace) */
	bool cost;		       /* the limit is `cost` (price units at the
					  flavors' POLICY_ANNOT_PRICE), else `gpuHours` */
	double limit;		       /* gpuHours or cost, 0..POLICY_BUDGET_LIMIT_MAX */
	int32_t window_days;	       /* window: 0 for Month (the calendar month in
					  UTC, the default), else "<N>d" */
	int32_t warn_pct;	       /* warnAt: percent 1..100 (default 80) */
	policy_budget_action_t action; /* action */
} policy_budget_t;

/* spec.idleReclaim of a gpuq.dev/v1beta1 ClusterQueue. */
typedef enum {
	POLICY_IDLE_OFF = 0,	 /* no idleReclaim */
	POLICY_IDLE_REPORT = 1,	 /* action Report (default): an Event, a metric */
	POLICY_IDLE_PREEMPT = 2, /* Preempt: also evicted when others wait */
} policy_idle_action_t;

typedef struct {
	policy_idle_action_t action; /* OFF when absent */
	double below_pct;	     /* utilizationBelow: 0..100 (default 10) */
	int64_t for_ms;		     /* for: a duration, required (1 s .. 30 days) */
} policy_idle_t;

/* ClusterQueue. */
typedef struct policy_cq {
	const char *name;		       /* metadata.name */
	size_t index;			       /* position in declaration order */
	const char *cohort_name;	       /* spec.cohortName (v1beta1: spec.cohort);
						  NULL when alone */
	const struct policy_cohort *cohort;    /* its cohort, NULL when alone */
	const policy_resource_group_t *groups; /* spec.resourceGroups */
	size_t n_groups;		       /* entries in groups */
	policy_queueing_t queueing;	       /* spec.queueingStrategy */
	policy_selector_t namespace_selector;  /* spec.namespaceSelector (absent: none) */
	policy_preemption_t preemption;	       /* spec.preemption */
	policy_fungibility_t fungibility;      /* spec.flavorFungibility */
	int64_t fair_weight_milli;	       /* spec.fairSharing.weight x 1000
						  (default 1000; 0 allowed) */
	policy_stop_t stop;		       /* spec.stopPolicy */
	bool admission_fair_sharing;	       /* spec.admissionScope.admissionMode is
						  UsageBasedAdmissionFairSharing
						  (NoAdmissionFairSharing or absent:
						  false) */
	policy_origin_t origin;		       /* where declared */
	policy_budget_t budget;		       /* spec.budget (gpuq.dev/v1beta1 only) */
	int64_t min_runtime_ms;		       /* spec.minRuntime, 0 when absent */
	policy_idle_t idle;		       /* spec.idleReclaim */
	int64_t max_exec_ms;		       /* spec.maxExecutionTime: its workloads'
						  default wall-clock limit, 0 when
						  absent (gpuq.dev/v1beta1 only) */
	int64_t starvation_ms;		       /* spec.starvationLimit: a pending
						  workload waiting longer at the head
						  reserves its capacity; 0 when absent
						  (gpuq.dev/v1beta1 only) */
} policy_cq_t;

/* Cohort. A cohort exists when a Cohort object declares it, when any
 * ClusterQueue names it (spec.cohortName) or when a Cohort names it as its
 * parent (spec.parentName); the undeclared ones have no quota of their own
 * and weight 1. Cohorts form trees (Kueue's hierarchical cohorts) at most
 * POLICY_COHORT_DEPTH_MAX deep; a cycle is refused at policy_finish. */
typedef struct policy_cohort {
	const char *name;		       /* metadata.name / spec.cohortName */
	bool declared;			       /* a Cohort object exists */
	int64_t fair_weight_milli;	       /* spec.fairSharing.weight x 1000 (default 1000) */
	const char *parent_name;	       /* spec.parentName, NULL for a root */
	const struct policy_cohort *parent;    /* it (never NULL after policy_finish
						  when parent_name is set) */
	const policy_resource_group_t *groups; /* spec.resourceGroups: its own quota */
	size_t n_groups;		       /* entries in groups */
	const policy_cq_t *const *members;     /* its ClusterQueues, in declaration order */
	size_t n_members;		       /* entries in members */
	policy_origin_t origin;		       /* where declared (or first named) */
} policy_cohort_t;

/* LocalQueue. */
typedef struct {
	const char *namespace_;	   /* metadata.namespace */
	const char *name;	   /* metadata.name */
	const char *cq_name;	   /* spec.clusterQueue */
	const policy_cq_t *cq;	   /* that ClusterQueue (never NULL after finish) */
	int64_t fair_weight_milli; /* spec.fairSharing.weight x 1000 (default 1000) */
	policy_stop_t stop;	   /* spec.stopPolicy */
	policy_origin_t origin;	   /* where declared */
	policy_budget_t budget;	   /* spec.budget (gpuq.dev/v1beta1 only) */
} policy_lq_t;

typedef enum {
	POLICY_ALLOC_EXACT_COUNT = 0, /* allocationMode ExactCount (default), count devices */
	POLICY_ALLOC_ALL = 1,	      /* allocationMode All: every matching device on the node */
} policy_alloc_mode_t;

/* One way to satisfy a device request: `exactly`, or one firstAvailable entry. */
typedef struct {
	const char *name;	  /* subrequest name ("" for `exactly`) */
	const char *device_class; /* deviceClassName, e.g. "gpu.nvidia.com" */
	policy_alloc_mode_t mode; /* allocationMode */
	int64_t count;		  /* count (ExactCount; default 1); 0 for All */
} policy_device_choice_t;

typedef struct {
	const char *name;		       /* requests[].name */
	bool first_available;		       /* false: choices[0] is `exactly` */
	const policy_device_choice_t *choices; /* in preference order */
	size_t n_choices;		       /* 1 for `exactly`; 1..8 for firstAvailable */
} policy_device_request_t;

/* resource.k8s.io/v1 ResourceClaimTemplate (v1beta2 same shape; v1beta1's
 * flat deviceClassName/count/allocationMode read as `exactly`). Selectors,
 * constraints and config are ignored: gpuq counts devices, it does not place
 * them. */
typedef struct {
	const char *namespace_;			 /* metadata.namespace */
	const char *name;			 /* metadata.name */
	const policy_device_request_t *requests; /* spec.spec.devices.requests[] */
	size_t n_requests;			 /* entries in requests */
	policy_origin_t origin;			 /* where declared */
} policy_claimtemplate_t;

/* node.k8s.io/v1 RuntimeClass: what the RuntimeClass admission plugin
 * gives each Pod that names it (spec.overhead from overhead.podFixed). Its
 * handler and scheduling are not gpuq's concern. */
typedef struct {
	const char *name;	  /* metadata.name */
	quota_reslist_t overhead; /* overhead.podFixed (empty when absent) */
	policy_origin_t origin;	  /* where declared */
} policy_runtimeclass_t;

/* ---- Building and loading ---- */

typedef struct policy policy_t;

/* A workload collection, by API group and plural resource as discovery
 * lists them ("jobset.x-k8s.io", "jobsets"; "" is the core group). */
typedef struct {
	const char *group;    /* API group */
	const char *resource; /* plural resource */
} policy_api_t;

/* Collections a snapshot may name as watched (policy_opts_t.watched): gpuq's
 * controller watches 8 workload collections. */
#define POLICY_WATCHED_MAX 32

typedef struct {
	bool skip_unknown_kinds;     /* skip objects of other kinds (default: refuse,
					naming the kind) */
	bool skip_workloads;	     /* skip batch/v1 Job and v1 Pod objects, the
					workloads gpuq admits (a setup file may carry
					its sample Jobs), each listed by
					policy_skipped_at; they count against
					POLICY_OBJECTS_MAX (default: refused as any
					kind that is not policy) */
	bool price_lenient;	     /* a bad POLICY_ANNOT_PRICE leaves its flavor
					unpriced, the refusal in the flavor's
					price_error (default: the flavor is refused).
					The controller: a typo in a chargeback price
					must not take a flavor, and the queues naming
					it, out of admission */
	bool topology_unplaced;	     /* with leave_out_broken: the reader places no
					pods on a Topology's domains (the daemon, until
					its controller does, issue 33), so a
					ResourceFlavor with a topologyName is left out
					(POLICY_REASON_TOPOLOGY_UNPLACED), and the
					ClusterQueues and Cohorts naming it: their
					workloads wait, saying why, rather than run
					where admission did not say */
	bool leave_out_broken;	     /* an object its decoder refuses, or that fails a
					check across objects (a LocalQueue naming a
					missing ClusterQueue, a ClusterQueue or Cohort
					naming a missing ResourceFlavor, a
					ResourceFlavor naming a missing Topology (and
					the ClusterQueues and Cohorts naming that
					flavor), a cohort cycle,
					a second Namespace budget, a second global
					default PriorityClass), is left out and listed
					(policy_leftout_at) with its reason, and so is
					whatever depends on it (the LocalQueues of a
					left-out ClusterQueue, the ClusterQueues of a
					left-out Cohort); everything else loads
					(default: the whole policy is refused). The
					controller: one bad object costs that object,
					never the cluster */
	bool watch_declared;	     /* only the collections in watched are watched
					(policy_watch_has); default: every one */
	const policy_api_t *watched; /* with watch_declared: the workload
					collections the snapshot's maker (the
					controller) watches now, n_watched of them
					(copied by policy_create) */
	size_t n_watched;	     /* at most POLICY_WATCHED_MAX */
} policy_opts_t;

/* An object left out because it is a workload, not policy
 * (policy_opts_t.skip_workloads). */
typedef struct {
	const char *kind;	 /* "Job" or "Pod" */
	const char *api_version; /* "batch/v1" or "v1" */
	policy_origin_t origin;	 /* where it was */
} policy_skipped_t;

/* Why an object was left out (policy_leftout_t.reason; Kueue's words for
 * an inactive queue where it has them): a status condition's reason. */
#define POLICY_REASON_INVALID "InvalidSpec"		    /* its own decoder refused it */
#define POLICY_REASON_CQ_MISSING "ClusterQueueDoesNotExist" /* a LocalQueue's */
#define POLICY_REASON_CQ_INACTIVE "ClusterQueueIsInactive"  /* a LocalQueue's CQ is out */
#define POLICY_REASON_FLAVOR_MISSING "FlavorNotFound"	    /* a CQ's or Cohort's flavor */
#define POLICY_REASON_TOPOLOGY_MISSING "TopologyNotFound"   /* a flavor's Topology (and its CQs') */
#define POLICY_REASON_TOPOLOGY_UNPLACED "TopologyUnplaced"  /* opts.topology_unplaced */
#define POLICY_REASON_COHORT_CYCLE "CohortCycle"	    /* a Cohort on a parentName cycle */
#define POLICY_REASON_COHORT_DEPTH "CohortTooDeep"	    /* past POLICY_COHORT_DEPTH_MAX */
#define POLICY_REASON_COHORT_LIMIT "TooManyCohorts"	    /* past POLICY_COHORTS_MAX */
#define POLICY_REASON_COHORT_INACTIVE "CohortIsInactive"    /* its (parent) cohort is out */
#define POLICY_REASON_BUDGET_CONFLICT "NamespaceBudgetConflict" /* a 2nd Namespace budget */
#define POLICY_REASON_DEFAULT_CONFLICT "GlobalDefaultConflict"	/* a 2nd globalDefault */

/* An object left out of a policy built with policy_opts_t.leave_out_broken.
 * Strings are the snapshot's. */
typedef struct {
	const char *kind;	/* its kind: "LocalQueue", "ClusterQueue", "Cohort", ... */
	const char *namespace_; /* metadata.namespace ("" when cluster-scoped) */
	const char *name;	/* metadata.name */
	const char *reason;	/* a POLICY_REASON_* */
	const char *message;	/* what is wrong, naming the object, the field and the
				   value, as a refusal would (without the origin) */
	policy_origin_t origin; /* where declared */
} policy_leftout_t;

/* An empty policy under construction; opts may be NULL (defaults). On
 * success *out holds one reference. GPUQ_ENOMEM; GPUQ_ELIMIT for more than
 * POLICY_WATCHED_MAX watched collections. */
int policy_create(const policy_opts_t *opts, policy_t **out);

/* manifest_parse() (manifest/) + policy_add_json() (policy_json.h) for every
 * object; objects remember name and document for later messages. Not atomic:
 * on error some objects of buf may have been added (a loader then drops the
 * whole policy). */
int policy_add_manifest(policy_t *p, const char *name, const char *buf, size_t len,
			gpuq_diag_t *diag);

/* Check the policy as a whole and freeze it: every LocalQueue's clusterQueue
 * exists, every CQ flavor is a ResourceFlavor, every flavor's topologyName a
 * Topology, no resource in two groups of one CQ, each flavor lists exactly its group's
 * coveredResources in order, at most one global-default PriorityClass, object-count caps; then
 * build the lookup indexes and max_fit. Errors name the object's file and document. With
 * opts.leave_out_broken an object failing a check is left out instead (policy_leftout_at), and only
 * GPUQ_ENOMEM or GPUQ_ELIMIT fail the whole. After GPUQ_OK the policy is immutable; after an error
 * the caller must policy_unref() it. */
int policy_finish(policy_t *p, gpuq_diag_t *diag);

/* Load every *.yaml, *.yml and *.json file of dir (not recursive; names
 * starting with '.' skipped; in byte order of their names) into a finished
 * policy: all or nothing. Messages name files as "<dir>/<file>". On success
 * *out holds one reference. Errors: GPUQ_EIO (dir or file unreadable),
 * GPUQ_ELIMIT (POLICY_DIR_FILES_MAX, POLICY_DIR_BYTES_MAX, POLICY_FILE_MAX),
 * and everything policy_add_manifest/policy_finish return. opts may be NULL. */
int policy_load_dir(const char *dir, const policy_opts_t *opts, policy_t **out, gpuq_diag_t *diag);

/* Load the files paths[0..n) (any names; n 1..POLICY_DIR_FILES_MAX) in that
 * order into a finished policy, as policy_load_dir loads a directory's: the
 * same reads, caps and checks, all or nothing. Messages name each file as
 * given. GPUQ_EINVAL for n out of range; otherwise policy_load_dir's codes.
 * The fingerprint is 0 (not a directory). */
int policy_load_files(const char *const *paths, size_t n, const policy_opts_t *opts, policy_t **out,
		      gpuq_diag_t *diag);

/* ---- Reference counting ---- */

/* Take another reference (atomic); returns p. p may be NULL. */
policy_t *policy_ref(policy_t *p);

/* Drop a reference (atomic); the last one frees everything. NULL is a no-op. */
void policy_unref(policy_t *p);

/* ---- Change detection ---- */

/* Cheap fingerprint of a policy dir, from stat(2) of its manifest files only:
 * a 64-bit hash over (name, size, mtime ns, ctime ns, inode) of every file
 * policy_load_dir would read, plus their count. Two different values mean the
 * dir changed; equal values mean it almost surely did not. GPUQ_EIO. */
int policy_dir_fingerprint(const char *dir, uint64_t *out, gpuq_diag_t *diag);

/* The fingerprint taken by policy_load_dir() just before it read the files
 * (0 for policies built otherwise). If a file changes during the load, the
 * next policy_dir_fingerprint() differs and the server reloads again. */
uint64_t policy_fingerprint(const policy_t *p);

/* ---- Lookups (finished policies only; O(log n) unless stated) ---- */

/* Namespace by name, or NULL (neither declared nor named by any object). */
const policy_namespace_t *policy_namespace_find(const policy_t *p, const char *name);

/* PriorityClass by name, or NULL. */
const policy_priorityclass_t *policy_priorityclass_find(const policy_t *p, const char *name);

/* The globalDefault PriorityClass, or NULL. O(1). */
const policy_priorityclass_t *policy_priorityclass_default(const policy_t *p);

/* ClusterQueue by name, or NULL. */
const policy_cq_t *policy_cq_find(const policy_t *p, const char *name);

/* LocalQueue by namespace and name, or NULL. */
const policy_lq_t *policy_lq_find(const policy_t *p, const char *namespace_, const char *name);

/* ResourceFlavor by name, or NULL. */
const policy_flavor_t *policy_flavor_find(const policy_t *p, const char *name);

/* Topology by name, or NULL. */
const policy_topology_t *policy_topology_find(const policy_t *p, const char *name);

/* Cohort by name, or NULL. */
const policy_cohort_t *policy_cohort_find(const policy_t *p, const char *name);

/* ResourceClaimTemplate by namespace and name, or NULL. */
const policy_claimtemplate_t *policy_claimtemplate_find(const policy_t *p, const char *namespace_,
							const char *name);

/* RuntimeClass by name, or NULL. */
const policy_runtimeclass_t *policy_runtimeclass_find(const policy_t *p, const char *name);

/* Whether cq's namespaceSelector selects namespace ns. A namespace the policy
 * does not know is judged by its only certain label,
 * kubernetes.io/metadata.name=<ns>. */
bool policy_cq_selects(const policy_t *p, const policy_cq_t *cq, const char *ns);

/* Whether ANY ClusterQueue selects namespace ns ("managed": gpuq queues its
 * workloads). O(log n) for namespaces the policy knows (precomputed by
 * policy_finish), O(number of CQs) for others. */
bool policy_namespace_managed(const policy_t *p, const char *ns);

/* Whether the snapshot's maker watches the workload collection group/resource
 * (policy_opts_t.watched): the webhook holds (suspends, gates) an object only
 * when the controller watches what it needs, for nothing would ever release
 * it otherwise (a kind whose CRD came after gpuq started is watched once its
 * first LIST is in; one whose CRD went is not). Always true for a policy
 * that declares none (a --policy-dir: no controller in the process).
 * O(watched). */
bool policy_watch_has(const policy_t *p, const char *group, const char *resource);

/* The group of cq covering resource, or NULL when no group covers it. */
const policy_resource_group_t *policy_cq_group(const policy_cq_t *cq, const char *resource);

/* The quota of resource in flavor of cq, or NULL when cq has no such pair. */
const policy_res_quota_t *policy_cq_quota(const policy_cq_t *cq, const char *flavor,
					  const char *resource);

/* The most a single workload in cq could ever get of resource in flavor, in
 * the queueing core's units (quota_qty_amount: millicores for cpu, whole
 * units rounded up for the rest): quota_tree_potential() over the path from
 * cq to its root cohort (each cohort's own quota plus what its ClusterQueues
 * and child cohorts lend it, within every lendingLimit and borrowingLimit on
 * the way). A request above this can never be
 * admitted; the core decides the same from the same rule. GPUQ_OK with *out
 * set, or GPUQ_ENOTFOUND (cq has no such flavor/resource). */
int policy_cq_max_fit(const policy_cq_t *cq, const char *flavor, const char *resource,
		      int64_t *out);

/* ---- Iteration in declaration order (file order, then document order) ---- */

size_t policy_namespace_count(const policy_t *p);
const policy_namespace_t *policy_namespace_at(const policy_t *p, size_t i); /* NULL past end */
size_t policy_priorityclass_count(const policy_t *p);
const policy_priorityclass_t *policy_priorityclass_at(const policy_t *p, size_t i);
size_t policy_flavor_count(const policy_t *p);
const policy_flavor_t *policy_flavor_at(const policy_t *p, size_t i);
size_t policy_topology_count(const policy_t *p);
const policy_topology_t *policy_topology_at(const policy_t *p, size_t i);
size_t policy_cq_count(const policy_t *p);
const policy_cq_t *policy_cq_at(const policy_t *p, size_t i); /* cq->index == i */
size_t policy_cohort_count(const policy_t *p); /* declared ones first, then implied */
const policy_cohort_t *policy_cohort_at(const policy_t *p, size_t i);
size_t policy_lq_count(const policy_t *p);
const policy_lq_t *policy_lq_at(const policy_t *p, size_t i);
size_t policy_limitrange_count(const policy_t *p);
const quota_limitrange_t *policy_limitrange_at(const policy_t *p, size_t i);
size_t policy_quota_count(const policy_t *p);
const quota_resourcequota_t *policy_quota_at(const policy_t *p, size_t i);
size_t policy_claimtemplate_count(const policy_t *p);
const policy_claimtemplate_t *policy_claimtemplate_at(const policy_t *p, size_t i);
size_t policy_runtimeclass_count(const policy_t *p);
const policy_runtimeclass_t *policy_runtimeclass_at(const policy_t *p, size_t i);
size_t policy_skipped_count(const policy_t *p); /* 0 unless opts.skip_workloads */
const policy_skipped_t *policy_skipped_at(const policy_t *p, size_t i);
/* Objects left out (opts.leave_out_broken; 0 without it), in the order
 * they were found: decoding refusals as added, then the checks of
 * policy_finish, an object's dependents after it. */
size_t policy_leftout_count(const policy_t *p);
const policy_leftout_t *policy_leftout_at(const policy_t *p, size_t i);

/* The left-out object of kind ("LocalQueue"), namespace ("" or NULL when
 * cluster-scoped) and name, or NULL. O(1) for the policy kinds, O(left
 * out) for others. An object whose decoding was refused may have a
 * namesake in the policy (the first of two duplicates): look it up there
 * first. */
const policy_leftout_t *policy_leftout_find(const policy_t *p, const char *kind,
					    const char *namespace_, const char *name);

#endif

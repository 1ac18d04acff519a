/*
 * quota: Kubernetes quantities, resource lists, effective pod requests,
 * LimitRange defaulting and validation, and ResourceQuota checks.
 *
 * Pure: no I/O, no clock, no globals. The design decision that matters:
 * quantities are exact fixed point (a signed 128-bit count of nano-units,
 * 10^-9), never floating point, so `1.5Gi`, `1536Mi` and `1610612736` compare
 * equal and every message quotes values in the apiserver's canonical form.
 */
#ifndef GPUQ_QUOTA_H
#define GPUQ_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- Quantity (k8s.io/apimachinery resource.Quantity) ---- */

typedef enum {
	QUOTA_QTY_DECIMAL_SI = 0,  /* "", n u m k M G T P E */
	QUOTA_QTY_BINARY_SI = 1,   /* Ki Mi Gi Ti Pi Ei */
	QUOTA_QTY_DECIMAL_EXP = 2, /* e3, E-6 */
} quota_qty_format_t;

typedef struct {
	__int128 nano;		   /* value * 10^9, rounded up to 1n; |value| <= 2^63-1 */
	quota_qty_format_t format; /* suffix family, kept for canonical output */
} quota_qty_t;

/* Longest quantity string accepted (apimachinery has no cap; 64 bytes covers
 * every value up to 2^63-1 with nine fractional digits and an exponent). */
#define QUOTA_QTY_STR_MAX 64
/* Canonical output never needs more than this (with NUL). */
#define QUOTA_QTY_FMT_MAX 48

/* Parse s[0..len) as a Quantity (s need not be NUL-terminated), as
 * apimachinery's ParseQuantity does. Grammar: sign? digits? ("." digits?)?
 * suffix, suffix one of "" n u m k M G T P E Ki Mi Gi Ti Pi Ei or
 * [eE][+-]?digits; no whitespace. Like apimachinery's scanner, a mantissa
 * with no digits reads as 0 ("Ki", "e3", ".", "-" are 0; the documented
 * grammar asks for a digit, the apiserver does not). Returns GPUQ_OK, or
 * GPUQ_EINVAL (bad syntax: "1.2.3", "1Gb", "", "1 ", " 1", "1e", "1ee3",
 * "--1"; or longer than QUOTA_QTY_STR_MAX) / GPUQ_ERANGE (magnitude above
 * 2^63-1 units, e.g. "8Ei") with a sentence quoting the value in diag (diag
 * may be NULL). Values round once, away from zero, to a whole nano-unit as
 * apimachinery does ("0.0000000001" -> 1n, "-0.0000000001" -> -1n). One
 * deliberate difference: apimachinery clamps binary values above 2^63-1 to
 * 2^63-1 and keeps larger decimal ones exactly; gpuq refuses both. The
 * format is the suffix family, except that a binary value below one unit
 * becomes decimal SI (as apimachinery). On error *out is left unchanged. */
int quota_qty_parse(const char *s, size_t len, quota_qty_t *out, gpuq_diag_t *diag);

/* Write the canonical form into buf, as apimachinery's Quantity.String():
 * the suffix family is kept and the largest suffix that leaves a whole
 * mantissa is used (`1.5` -> `1500m`, `1.5Gi` -> `1536Mi`, `1000` -> `1k`,
 * `1e3` -> `1e3`, `1.5e0` -> `1500e-3`, `0` -> `0`). Binary values that
 * are not whole or are below 1024 are written in decimal SI (`1.5Ki` ->
 * `1536`). The result always parses back to the same value. Returns GPUQ_OK
 * or GPUQ_ELIMIT if cap is too small (QUOTA_QTY_FMT_MAX always suffices). */
int quota_qty_format(const quota_qty_t *q, char *buf, size_t cap);

/* -1, 0, 1 comparing numeric values (formats ignored). */
int quota_qty_cmp(const quota_qty_t *a, const quota_qty_t *b);

/* a + b and a - b into out (format of a; out may alias a or b); GPUQ_ERANGE
 * when the magnitude passes 2^63-1 units (out unchanged). */
int quota_qty_add(const quota_qty_t *a, const quota_qty_t *b, quota_qty_t *out);
int quota_qty_sub(const quota_qty_t *a, const quota_qty_t *b, quota_qty_t *out);

/* A quantity of `units` whole units in the given format (INT64_MIN is
 * clamped to -(2^63-1)). */
quota_qty_t quota_qty_from_units(int64_t units, quota_qty_format_t format);
/* A quantity of `milli` thousandths (decimal SI). */
quota_qty_t quota_qty_from_milli(int64_t milli);

/* Whole units, rounded away from zero (Quantity.Value()); saturates. */
int64_t quota_qty_units(const quota_qty_t *q);
/* Thousandths, rounded away from zero (Quantity.MilliValue()); saturates
 * at +-INT64_MAX. */
int64_t quota_qty_milli(const quota_qty_t *q);
/* True when the value is a whole number of units. */
bool quota_qty_is_integer(const quota_qty_t *q);
/* True when the value is zero. */
bool quota_qty_is_zero(const quota_qty_t *q);

/* The one conversion to the queueing core's units: how many core units
 * make one of resource `name`'s own, 1000 for "cpu" (millicores) and 1 for
 * everything else (whole units). The core, the webhook, the policy, the
 * simulator's Trace (only a resource counted in thousandths may ask for a
 * fraction), /metrics and the chargeback report all ask here. */
#define QUOTA_CPU_PER_CORE 1000
int64_t quota_core_per_unit(const char *name);

/* The integer amount the queueing core counts for resource `name`
 * (quota_core_per_unit): millicores for "cpu", whole units (rounded up)
 * for everything else. */
int64_t quota_qty_amount(const char *name, const quota_qty_t *q);

/* An amount of resource `name` (quota_qty_amount's units) as a person reads
 * it, in buf (cap bytes; 32 always fit), returned: cpu in cores or
 * millicores ("2", "500m"), memory, ephemeral-storage and hugepages-* with
 * the largest exact binary suffix ("2Gi"), anything else as a plain count.
 * Explanations, refusals and the controller's status use it. */
const char *quota_amount_format(const char *name, int64_t v, char *buf, size_t cap);

/* ---- Quota trees (Kueue's resource nodes) ----
 *
 * A ClusterQueue and the cohorts above it form a path in a tree; for one
 * flavor and resource each node has a subtree quota (`sub`: its own nominal
 * quota plus what its children lend it), a usage counted against it (`use`:
 * a ClusterQueue's usage; for a cohort, what its children use beyond what
 * they keep for themselves), and optional borrowingLimit and lendingLimit
 * (< 0: none). These are the one place the arithmetic lives: the queue core
 * walks its live tree with them, the policy its declared one, so "how much
 * is free" and "can this ever fit" have one answer. Amounts are in
 * quota_qty_amount's units and >= 0 (but limits < 0 for none); sums
 * saturate at INT64_MAX. */

/* What a node keeps for its own subtree: its subtree quota above its
 * lendingLimit (0 without one: it lends all). */
static inline int64_t quota_node_local(int64_t sub, int64_t lending_limit)
{
	return lending_limit >= 0 && sub > lending_limit ? sub - lending_limit : 0;
}

/* What a node adds to its parent's subtree quota. */
static inline int64_t quota_node_lent(int64_t sub, int64_t lending_limit)
{
	return sub - quota_node_local(sub, lending_limit);
}

/* What a node's usage counts in its parent: the part beyond what it keeps. */
static inline int64_t quota_node_use_up(int64_t use, int64_t sub, int64_t lending_limit)
{
	int64_t l = quota_node_local(sub, lending_limit);

	return use > l ? use - l : 0;
}

typedef struct {
	int64_t sub;		 /* subtree quota */
	int64_t use;		 /* usage counted against it */
	int64_t borrowing_limit; /* < 0: none */
	int64_t lending_limit;	 /* < 0: none */
} quota_node_t;

static inline int64_t quota_sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* What one more workload could take at node x, given what its parent
 * offers (from_parent; a root offers sub - use): what x keeps unused plus
 * what the parent offers, capped by x's borrowingLimit (Kueue's
 * available()). */
static inline int64_t quota_node_available(int64_t from_parent, const quota_node_t *x)
{
	int64_t l = quota_node_local(x->sub, x->lending_limit);

	if (x->borrowing_limit >= 0) {
		int64_t used_up = x->use > l ? x->use - l : 0;
		int64_t cap = quota_sat_add(x->sub - l - used_up, x->borrowing_limit);

		if (cap < from_parent)
			from_parent = cap;
	}
	return quota_sat_add(l > x->use ? l - x->use : 0, from_parent);
}

/* The most node x could ever hold, given the most its parent could ever
 * offer (a root: its sub): Kueue's potentialAvailable(). */
static inline int64_t quota_node_potential(int64_t from_parent, const quota_node_t *x)
{
	int64_t pot = quota_sat_add(quota_node_local(x->sub, x->lending_limit), from_parent);
	int64_t cap = quota_sat_add(x->sub, x->borrowing_limit);

	return x->borrowing_limit >= 0 && cap < pot ? cap : pot;
}

/* What one more workload could take at path[0] now: path[0] a ClusterQueue,
 * path[n - 1] the root (n >= 1). The root offers sub - use; each node below
 * adds what it keeps unused to what its parent offers, capped by its
 * borrowingLimit. May be negative after quota shrank below usage. */
int64_t quota_tree_available(const quota_node_t *path, size_t n);

/* "Can this ever fit", the one answer: the most path[0] could ever hold
 * with the whole tree empty (use ignored): the root's subtree quota, what
 * each node keeps for itself on the way down, each level capped at its
 * subtree quota plus its borrowingLimit. A ClusterQueue alone (n == 1) can
 * hold its nominal quota. A workload asking for more can never be admitted:
 * the webhook refuses it at submission (policy_cq_max_fit) and the queue
 * core sets it aside as NoFit (queue_slot_max_capacity), both from here. */
int64_t quota_tree_potential(const quota_node_t *path, size_t n);

/* Who lends what, the one answer for /metrics
 * (gpuq_cluster_queue_resource_lent) and the web view: the queue core does
 * not record which ClusterQueue lends to which, so each (cohort, flavor,
 * resource)'s borrowing (the sum over its ClusterQueues of usage above
 * nominal) is shared among the ClusterQueues that could lend, in
 * proportion to what each could lend now. quota_lend_idle: what one
 * ClusterQueue could lend now, its unused nominal quota up to its
 * lendingLimit (lending_limit < 0: none). quota_lent: its part, idle *
 * min(1, borrowed / idle_total) (0 when idle_total is 0), so a cohort's
 * lent adds up to its borrowed while the lenders can cover it. */
int64_t quota_lend_idle(int64_t nominal, int64_t usage, int64_t lending_limit);
double quota_lent(int64_t idle, int64_t borrowed, int64_t idle_total);

/* One ClusterQueue's (flavor, resource) slot in a cohort, for
 * quota_lent_share. */
typedef struct {
	uint64_t group;	 /* its (cohort, flavor, resource), as the caller numbers them */
	size_t slot;	 /* the caller's own index, carried along */
	int64_t nominal; /* nominal quota, core units */
	int64_t usage;	 /* usage, core units */
	int64_t lending; /* lendingLimit (< 0: none) */
	double lent;	 /* set: what it lends (quota_lent in its group) */
} quota_lend_t;

/* The one "lent": sort v[0..n) by group and set each entry's lent, its
 * part of what its group borrows (the sum of usage above nominal) shared
 * among the group's lenders by what each could lend (quota_lend_idle,
 * quota_lent). /metrics and the web view both call it. */
void quota_lent_share(quota_lend_t *v, size_t n);

/* ---- Resource lists ---- */

/* Resource names longer than this are refused with a clear error
 * (Kubernetes allows a 253-byte prefix, but no real resource needs one). */
#define QUOTA_RES_NAME_MAX 128
/* Distinct resources in one requests/limits/hard map; more is refused. */
#define QUOTA_RESLIST_MAX 32

typedef struct {
	char name[QUOTA_RES_NAME_MAX]; /* e.g. "nvidia.com/gpu", "cpu" */
	quota_qty_t qty;	       /* its quantity */
} quota_res_t;

typedef struct {
	size_t n;			      /* entries used */
	quota_res_t items[QUOTA_RESLIST_MAX]; /* in insertion order, names unique */
} quota_reslist_t;

/* The entry for name, or NULL. Borrowed: valid while list is unchanged. */
const quota_qty_t *quota_reslist_get(const quota_reslist_t *list, const char *name);
/* dst = src, copying src's used entries only (a list is over 4 KiB at its
 * cap and usually holds a few; entries past n are never read). */
void quota_reslist_copy(quota_reslist_t *dst, const quota_reslist_t *src);
/* Whether a and b name the same resources with equal quantities, in any
 * order. */
bool quota_reslist_same(const quota_reslist_t *a, const quota_reslist_t *b);
/* Set name to qty (replacing, or appending a new entry). GPUQ_ELIMIT when a
 * new entry would not fit or name has QUOTA_RES_NAME_MAX bytes or more,
 * GPUQ_EINVAL for an empty name; the list is unchanged on error. */
int quota_reslist_set(quota_reslist_t *list, const char *name, const quota_qty_t *qty);
/* Add qty to name's entry (creating it with qty's format). GPUQ_ELIMIT /
 * GPUQ_EINVAL as for set, GPUQ_ERANGE when the sum passes 2^63-1 units (the
 * entry is then unchanged). */
int quota_reslist_add(quota_reslist_t *list, const char *name, const quota_qty_t *qty);

/* ---- Pods as quota sees them ---- */

typedef enum {
	QUOTA_CONTAINER_APP = 0,     /* spec.containers[] */
	QUOTA_CONTAINER_INIT = 1,    /* spec.initContainers[] that run to completion */
	QUOTA_CONTAINER_SIDECAR = 2, /* spec.initContainers[] with restartPolicy Always */
} quota_container_kind_t;

/* Container names are DNS labels: at most 63 bytes. */
#define QUOTA_CONTAINER_NAME_MAX 64

typedef struct {
	char name[QUOTA_CONTAINER_NAME_MAX]; /* container name */
	quota_container_kind_t kind;	     /* app, init or sidecar */
	quota_reslist_t requests;	     /* resources.requests */
	quota_reslist_t limits;		     /* resources.limits */
} quota_container_t;

typedef struct {
	quota_container_t *containers; /* app, init and sidecar containers in pod
					  order (init containers first); caller-owned */
	size_t n_containers;	       /* entries in containers */
	quota_reslist_t overhead;      /* spec.overhead (RuntimeClass) */
} quota_pod_t;

/* ---- LimitRange and ResourceQuota objects ---- */

typedef enum {
	QUOTA_LR_CONTAINER = 0, /* type: Container */
	QUOTA_LR_POD = 1,	/* type: Pod */
	QUOTA_LR_OTHER = 2,	/* PersistentVolumeClaim and others: ignored */
} quota_lr_type_t;

typedef struct {
	quota_lr_type_t type;	     /* which objects the item constrains */
	quota_reslist_t min;	     /* min */
	quota_reslist_t max;	     /* max */
	quota_reslist_t def;	     /* default (a limit) */
	quota_reslist_t def_request; /* defaultRequest */
	quota_reslist_t max_ratio;   /* maxLimitRequestRatio */
} quota_lr_item_t;

/* Object names are DNS subdomains: at most 253 bytes. */
#define QUOTA_OBJ_NAME_MAX 254

typedef struct {
	char namespace_[QUOTA_OBJ_NAME_MAX]; /* metadata.namespace */
	char name[QUOTA_OBJ_NAME_MAX];	     /* metadata.name */
	quota_lr_item_t *items;		     /* spec.limits[], owned by the object */
	size_t n_items;			     /* entries in items */
} quota_limitrange_t;

/* A ResourceQuota's scopes: spec.scopes[] (each as operator Exists) and
 * spec.scopeSelector.matchExpressions[], one list; a pod is counted only
 * when it matches every entry. */
typedef enum {
	QUOTA_SCOPE_TERMINATING = 0,	   /* spec.activeDeadlineSeconds set */
	QUOTA_SCOPE_NOT_TERMINATING = 1,   /* ... not set */
	QUOTA_SCOPE_BEST_EFFORT = 2,	   /* no cpu or memory request or limit in any container */
	QUOTA_SCOPE_NOT_BEST_EFFORT = 3,   /* ... some */
	QUOTA_SCOPE_PRIORITY_CLASS = 4,	   /* spec.priorityClassName, by operator and values */
	QUOTA_SCOPE_CROSS_NS_AFFINITY = 5, /* (anti-)affinity terms naming other namespaces */
	QUOTA_SCOPE_OTHER = 6,		   /* a scope of no pod (VolumeAttributesClass, ...):
					      the quota counts no pod */
} quota_scope_name_t;

typedef enum {
	QUOTA_SCOPE_EXISTS = 0,		/* the scope holds (a class is named) */
	QUOTA_SCOPE_DOES_NOT_EXIST = 1, /* it does not (no class) */
	QUOTA_SCOPE_IN = 2,		/* the class is one of values */
	QUOTA_SCOPE_NOT_IN = 3,		/* no class, or none of values */
} quota_scope_op_t;

typedef struct {
	quota_scope_name_t scope;  /* scopeName */
	quota_scope_op_t op;	   /* operator (Exists for spec.scopes[]) */
	const char *const *values; /* values (the quota's owner's memory) */
	size_t n_values;	   /* entries in values */
} quota_scope_t;

/* What a pod shows the scopes: as the ResourceQuota admission plugin
 * sees it, after the Priority plugin named its class. */
typedef struct {
	const char *priority_class; /* spec.priorityClassName (the global default's
				       name when none was given); NULL: none */
	bool terminating;	    /* spec.activeDeadlineSeconds is set */
	bool best_effort;	    /* QoS BestEffort: no container sets a cpu or memory
				       request or limit */
	bool cross_ns_affinity;	    /* a pod (anti-)affinity term names namespaces or a
				       namespaceSelector */
} quota_pod_scope_t;

typedef struct {
	char namespace_[QUOTA_OBJ_NAME_MAX]; /* metadata.namespace */
	char name[QUOTA_OBJ_NAME_MAX];	     /* metadata.name */
	quota_reslist_t hard;		     /* spec.hard, e.g. requests.nvidia.com/gpu */
	quota_reslist_t used;		     /* status.used (0 when absent) */
	const quota_scope_t *scopes;	     /* its scopes (the owner's memory); NULL: none */
	size_t n_scopes;		     /* entries in scopes: 0 counts every pod */
} quota_resourcequota_t;

/* Whether quota rq counts a pod that shows the scopes `pod` (NULL: every
 * quota counts it, scoped or not). */
bool quota_resourcequota_applies(const quota_resourcequota_t *rq, const quota_pod_scope_t *pod);

/* ---- Resource names ---- */

/* True for the names Kubernetes calls native (helper.IsNativeResource): any
 * name without a '/' (cpu, memory, ephemeral-storage, hugepages-2Mi, pods,
 * ...) and any name containing "kubernetes.io/". */
bool quota_res_is_native(const char *name);

/* True for extended resources (helper.IsExtendedResourceName): neither
 * native nor starting with "requests." (nvidia.com/gpu,
 * nvidia.com/mig-1g.5gb, example.com/foo). Whether one is a GPU is the
 * webhook's business, not quota's. */
bool quota_res_is_extended(const char *name);

/* Resource names most objects ask for, in an order that is part of the
 * state store's format (a workload record from version 3 on names one by
 * its index, not its text): append only, never reorder or remove. */
#define QUOTA_KNOWN_RESOURCES 6
extern const char *const quota_known_resources[QUOTA_KNOWN_RESOURCES];
/* The index of name in quota_known_resources, or -1. */
int quota_known_resource(const char *name);

/* Multiply every entry of list by factor (>= 0), e.g. a Job's per-pod
 * requests by its parallelism. Returns GPUQ_OK, GPUQ_EINVAL for a negative
 * factor, GPUQ_ERANGE when an entry would pass 2^63-1 units (list is then
 * unchanged). */
int quota_reslist_scale(quota_reslist_t *list, int64_t factor);

/* ---- Effective requests and limits ---- */

/* The requests container c has once API defaulting has run: its own
 * requests, plus, for each resource with a limit but no request, the limit
 * (the apiserver does this for Pods; gpuq applies it to pod templates too,
 * where no defaulting has run yet, so a template's nvidia.com/gpu limit
 * counts as a request). out is overwritten. Returns GPUQ_OK or GPUQ_ELIMIT
 * (requests and limits together name more than QUOTA_RESLIST_MAX
 * resources). */
int quota_container_requests(const quota_container_t *c, quota_reslist_t *out);

/* The pod's effective requests per resource, as the scheduler and
 * ResourceQuota count them (sidecar-aware, KEP-753), with every container's
 * requests taken from quota_container_requests():
 *   max( sum(app) + sum(sidecar),
 *        max over regular init container i of (init_i + sum(sidecars before i)) )
 *   + overhead
 * App containers may appear anywhere in pod->containers; init and sidecar
 * containers must be in spec.initContainers order. out is overwritten and
 * holds the union of all names (app names first). Returns GPUQ_OK,
 * GPUQ_ELIMIT (more than QUOTA_RESLIST_MAX distinct names) or GPUQ_ERANGE (a
 * sum passes 2^63-1 units). */
int quota_pod_requests(const quota_pod_t *pod, quota_reslist_t *out);

/* The same formula over limits (no defaulting), for `limits.<res>` quota.
 * As PodLimits does, overhead is added only to resources that already have
 * a non-zero limit (a resource without a limit is unbounded). Returns as
 * quota_pod_requests(). */
int quota_pod_limits(const quota_pod_t *pod, quota_reslist_t *out);

/* ---- Extended resources ---- */

/* Check every container's extended resources (quota_res_is_extended) against
 * the rules the apiserver and device plugins enforce: when both are set the
 * request must equal the limit; a request needs a limit; requests and limits
 * must be whole numbers. spec_field is the pod spec's field path for
 * messages ("spec", "spec.template.spec"; NULL for none). Returns GPUQ_OK,
 * or GPUQ_EDENIED with every violation written to diag (joined by "; "),
 * each in the apiserver's field-error wording followed by the container's
 * name and how to fix it in parentheses, e.g.
 * `spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value:
 * "1": must be equal to nvidia.com/gpu limit of 2 (container "train": ...)`.
 * Container indexes count within each list (containers, initContainers) in
 * pod->containers order. */
int quota_extended_validate(const quota_pod_t *pod, const char *spec_field, gpuq_diag_t *diag);

/* ---- LimitRange ---- */

/* What the LimitRanger admission plugin would add to container c, given the
 * namespace's LimitRanges in order. Nothing the user set is overwritten:
 *  1. a resource with a limit and no request gets request = limit;
 *  2. for each range in order, its Container items (with the apiserver's
 *     item defaulting: default falls back to max, defaultRequest to default
 *     then min; a later item wins over an earlier one in the same range)
 *     fill limits from `default` and requests from `defaultRequest` where
 *     still missing;
 *  3. any resource that now has a limit but no request gets the limit.
 * The additions go to add_requests and add_limits (both overwritten), so the
 * caller can patch just what is new. Idempotent: once the additions are
 * applied, asking again yields none. Returns GPUQ_OK or GPUQ_ELIMIT (a list
 * would pass QUOTA_RESLIST_MAX). n_ranges may be 0; ranges[i] must not be
 * NULL. */
int quota_limitrange_default(const quota_limitrange_t *const *ranges, size_t n_ranges,
			     const quota_container_t *c, quota_reslist_t *add_requests,
			     quota_reslist_t *add_limits);

/* Validate pod against the namespace's LimitRanges as LimitRanger does
 * after mutation: for Container items every container (app containers
 * first, then init and sidecar containers), for Pod items the pod's
 * aggregated requests and limits without overhead; min, max and
 * maxLimitRequestRatio, compared at milli precision (Value/MilliValue rounded
 * up). Requests are the defaulted ones (quota_container_requests), so call
 * quota_limitrange_default first as the apiserver does. Ranges are checked
 * in order and the first range with a violation decides, as in the
 * apiserver; its violations (resources in list order) are joined like
 * utilerrors.NewAggregate: one message alone, several deduplicated as
 * "[a, b]". Wording, quantities in canonical form:
 *   maximum nvidia.com/gpu usage per Container is 4, but limit is 8
 *   maximum cpu usage per Container is 2, but request is 3
 *   maximum cpu usage per Pod is 2.  No limit is specified
 *   minimum memory usage per Pod is 1Gi, but request is 512Mi
 *   minimum memory usage per Container is 1Gi, but limit is 512Mi
 *   minimum cpu usage per Container is 100m.  No request is specified
 *   cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000
 *   cpu max limit to request ratio per Pod is 2, but no request is specified or request is 0
 *   cpu max limit to request ratio per Pod is 2, but no limit is specified or limit is 0
 * Returns GPUQ_OK, GPUQ_EDENIED (message in diag), or GPUQ_ELIMIT /
 * GPUQ_ERANGE from aggregating the pod. */
int quota_limitrange_validate(const quota_limitrange_t *const *ranges, size_t n_ranges,
			      const quota_pod_t *pod, gpuq_diag_t *diag);
/* quota_limitrange_validate, also giving the totals it judged the pod by:
 * requests and limits (both overwritten) as quota_pod_requests and
 * quota_pod_limits give them for the pod without its overhead, so a caller
 * that needs them too (the pod has no overhead: they are then its totals)
 * need not aggregate again. They are whole when the return is GPUQ_OK or
 * GPUQ_EDENIED. */
int quota_limitrange_validate_totals(const quota_limitrange_t *const *ranges, size_t n_ranges,
				     const quota_pod_t *pod, quota_reslist_t *requests,
				     quota_reslist_t *limits, gpuq_diag_t *diag);

/* ---- ResourceQuota ---- */

/* Flag for quota_resourcequota_check: treat status.used as zero, to find
 * work whose request alone exceeds hard and so can never be admitted. */
#define QUOTA_RQ_IGNORE_USED 0x1u

/* The ResourceQuota pod evaluator's per-container rule, checked before any
 * usage: when a quota's hard names cpu, memory, requests.cpu,
 * requests.memory, limits.cpu or limits.memory, every container (app, init
 * and sidecar; requests defaulted from limits) must set that value. Quotas
 * are checked in order; the first failing one gives, as the apiserver:
 *   failed quota: <name>: must specify limits.cpu for: app,sidecar; requests.memory for: app
 * (resources and container names sorted). Returns GPUQ_OK or GPUQ_EDENIED. */
int quota_resourcequota_constraints(const quota_resourcequota_t *const *quotas, size_t n_quotas,
				    const quota_pod_t *pod, gpuq_diag_t *diag);

/* Would charging this workload exceed a quota? requests and limits are the
 * workload's totals (quota_pod_requests/limits, times parallelism for a Job,
 * see quota_reslist_scale); pods is its pod count (0 to leave `pods` and
 * `count/pods` alone). Usage is derived as the pod evaluator does:
 * `pods`/`count/pods` = pods; bare cpu, memory, ephemeral-storage and
 * hugepages-* and `requests.<those>` = the request; `limits.cpu`,
 * `limits.memory`, `limits.ephemeral-storage` = the limit;
 * `requests.<extended>` (e.g. requests.nvidia.com/gpu) = the request. A hard
 * entry is checked only when the workload has that usage (even if zero), and
 * exceeded when used + usage > hard (exact comparison). Quotas are checked in
 * order; the first exceeded one gives the apiserver's message, resources
 * sorted by name and joined by ",":
 *   exceeded quota: <name>, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=3,
 * limited: requests.nvidia.com/gpu=4 (a used entry absent from status.used is shown as 0). With
 * QUOTA_RQ_IGNORE_USED, used counts as 0 (shown as 0): the check then asks
 * whether the request alone can ever fit. Only the quotas whose scopes the
 * workload's pods match count (quota_resourcequota_applies with scope: a
 * quota scoped to PriorityClass In [high] limits only pods of class high).
 * Returns GPUQ_OK or GPUQ_EDENIED. */
int quota_resourcequota_check(const quota_resourcequota_t *const *quotas, size_t n_quotas,
			      const quota_pod_scope_t *scope, const quota_reslist_t *requests,
			      const quota_reslist_t *limits, int64_t pods, unsigned flags,
			      gpuq_diag_t *diag);

/* quota_resourcequota_check with quota i's usage taken from used_now[i]
 * (NULL, or used_now NULL: its own status.used): for a caller that knows a
 * fresher status.used than the one the quotas were decoded with (the
 * controller, from its watch). Every quota given is checked: the webhook and
 * the controller pass a namespace's whole list (policy_namespace_t), so both
 * judge by the same quotas. */
int quota_resourcequota_check_used(const quota_resourcequota_t *const *quotas,
				   const quota_reslist_t *const *used_now, size_t n_quotas,
				   const quota_pod_scope_t *scope, const quota_reslist_t *requests,
				   const quota_reslist_t *limits, int64_t pods, unsigned flags,
				   gpuq_diag_t *diag);

#endif

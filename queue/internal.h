/*
 * queue/internal.h: the private model of gpuq's queueing core, shared by the
 * .c files of queue/ and by nothing else (not a public header: only the .c files
 * of queue/ include it; the API is queue.h). The structs, their small accessors, and
 * the functions one file of the core calls in another, named queue_<name>.
 * Each function keeps its contract comment where it is defined.
 *
 * Files, bottom up (each calls only files before it; workload.c, protect.c
 * and usage.c call each other, as do assign.c and preempt.c: scripts/
 * arrows.py allows a circle of at most 3): util.c (containers, names
 * checked and interned, label and toleration lists), mark.c (the changed
 * set), emit.c (the result arrays a call fills), charge.c (quota usage
 * charged and released), budget.c (budgets), workload.c (templates, order,
 * lifecycle), protect.c (minimum runtime, idle GPUs), usage.c (the usage
 * ledger's intervals), queue.c (creation, policy objects), assign.c (quota
 * arithmetic, flavor assignment), preempt.c (preemption), cycle.c (the
 * admission cycle, the clock), explain.c (explanations, introspection),
 * encode.c (records for a store), restore.c (records applied on restore),
 * check.c (invariants, from queue.h's introspection only).
 */
#ifndef GPUQ_QUEUE_INTERNAL_H
#define GPUQ_QUEUE_INTERNAL_H

#include "base/bytes.h"
#include "fairshare/fairshare.h"
#include "ledger/ledger.h"
#include "topo/topo.h"
#include "queue/queue.h"
#include "quota/quota.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	uint32_t *v; /* elements */
	size_t n;    /* used */
	size_t cap;  /* allocated */
} u32vec_t;

/* Open-addressing map of ids keyed by a caller hash, with backward-shift
 * deletion (no tombstones). Equality is checked by the caller's callback. */
typedef struct {
	uint32_t id;   /* id + 1; 0 = empty */
	uint32_t hash; /* the key's hash */
} mapent_t;

typedef struct {
	mapent_t *e; /* cap entries, cap a power of two */
	size_t cap;  /* slots */
	size_t n;    /* used */
} idmap_t;

typedef bool (*map_eq_fn)(const void *ctx, uint32_t id, const void *key);

/* Interned names: dense ids, stable string pointers, never freed before the
 * queue. */
typedef struct {
	char **s;    /* id -> owned NUL-terminated string */
	size_t n;    /* names */
	size_t cap;  /* allocated */
	idmap_t map; /* name -> id */
} names_t;

/* ================================================================== */
/* The model                                                           */
/* ================================================================== */

typedef struct {
	uint32_t key; /* interned label key */
	uint32_t val; /* interned label value */
} kv_t;

typedef struct {
	uint32_t key;	/* interned key ("" = all with Exists) */
	uint32_t val;	/* interned value */
	uint8_t op;	/* queue_tolerate_op_t */
	uint8_t effect; /* queue_effect_t */
} tol_t;

typedef struct {
	uint32_t key;	/* interned taint key */
	uint32_t val;	/* interned value */
	uint8_t effect; /* queue_effect_t */
} taint_t;

typedef struct {
	uint32_t key; /* interned label key */
	uint32_t n;   /* values */
	uint32_t off; /* first value in the template's affvals */
} aff_t;

typedef struct {
	bool defined;	   /* queue_flavor_add seen (a CQ may name it first) */
	kv_t *labels;	   /* nodeLabels */
	size_t n_labels;   /* entries */
	taint_t *taints;   /* nodeTaints */
	size_t n_taints;   /* entries */
	tol_t *tols;	   /* tolerations */
	size_t n_tols;	   /* entries */
	uint32_t topology; /* its Topology (q->topologies), or QUEUE_NONE */
	topo_t *topo;	   /* its nodes' domains and capacity (topology.c), owned */
	uint32_t *tmap;	   /* topo node id -> node id (q->node_names), owned */
	size_t cap_tmap;   /* allocated */
} flavor_t;

/* A Topology: its levels' node label keys, widest first. */
typedef struct {
	uint32_t levels[QUEUE_TOPO_LEVELS_MAX]; /* interned keys */
	uint8_t n_levels;			/* levels */
} topology_t;

/* What the core knows of a node (topology.c): what topo_node_set needs
 * again when a flavor or a resource is added later. */
typedef struct {
	kv_t *labels;		 /* labels kept, owned */
	taint_t *taints;	 /* taints, owned */
	uint32_t *res;		 /* resource names of alloc/used (q->strs ids), owned */
	int64_t *alloc;		 /* allocatable per entry of res, owned */
	int64_t *used;		 /* used by pods gpuq did not admit, per entry of res, owned */
	int64_t *own;		 /* used by pods gpuq admitted (bound), per entry of res,
				    owned */
	uint8_t n_labels;	 /* entries */
	uint8_t n_taints;	 /* entries */
	uint8_t n_res;		 /* entries */
	bool live;		 /* set and not deleted */
	bool unschedulable;	 /* cordoned */
	bool not_ready;		 /* its Ready condition is not True */
	bool gone;		 /* deleted (after being set) */
	bool settled;		 /* gone or failed, and no admitted workload holds it
				    any more: nothing for queue_topo_failures to do */
	int64_t not_ready_since; /* not_ready: since when */
	int32_t pods_max;	 /* allocatable pods (0: no cap) */
	int32_t pods_used;	 /* pods gpuq did not admit */
	int32_t pods_own;	 /* pods gpuq admitted, bound here */
} node_t;

/* One entry of a placement: count pods of pod set ps on node (q->node_names
 * id) of flavor's topology. */
typedef struct {
	uint32_t flavor;
	uint32_t node;
	uint16_t ps;
	int32_t count;
} place_t;

/* An admitted workload's placement (topology.c). */
typedef struct {
	uint32_t n;  /* entries */
	place_t e[]; /* grouped by flavor, then pod set */
} placement_t;

/* A pod set without its count, shared by every workload with that shape. */
typedef struct {
	uint32_t refs;			    /* workloads using it; 0 = free slot */
	uint32_t hash;			    /* content hash */
	uint32_t name;			    /* interned pod set name */
	uint8_t n_req;			    /* requests */
	uint8_t n_sel;			    /* nodeSelector entries */
	uint8_t n_aff;			    /* affinity terms */
	uint8_t n_tol;			    /* tolerations */
	uint32_t n_affvals;		    /* affinity values over all terms */
	uint16_t res[QUEUE_PODSET_RES_MAX]; /* resource ids */
	int64_t amt[QUEUE_PODSET_RES_MAX];  /* per-pod amounts */
	kv_t *sel;			    /* nodeSelector */
	aff_t *aff;			    /* affinity terms */
	uint32_t *affvals;		    /* interned values of all terms */
	tol_t *tol;			    /* tolerations */
	uint8_t topo_mode;		    /* queue_topo_mode_t */
	int32_t slice_size;		    /* pods per slice (0: none) */
	uint32_t topo_level;		    /* interned level key, or QUEUE_NONE */
	uint32_t slice_level;		    /* interned slice level key, or QUEUE_NONE */
	uint32_t group;			    /* interned podset group name, or QUEUE_NONE */
	uint8_t *flv_ok;		    /* per flavor: 0 unknown, 1 eligible, 2 not */
	size_t n_flv_ok;		    /* entries in flv_ok */
	uint64_t flv_epoch;		    /* flavor epoch the cache belongs to */
} tmpl_t;

typedef struct {
	uint32_t tmpl; /* template id */
	int32_t count; /* pods */
} psref_t;

typedef struct {
	queue_assign_t a; /* public form */
	uint32_t slot;	  /* the CQ quota slot it charges */
} asg_t;

enum { W_NONE = 0, W_HEAP = 1, W_ASIDE = 2, W_ADMITTED = 3, W_BACKOFF = 4, W_FLIGHT = 5 };

/* Why a workload waits, for explanations. */
enum {
	WHY_NONE = 0,
	WHY_QUOTA_NOMINAL = 1, /* standalone CQ: nominal reached */
	WHY_QUOTA_BLIMIT = 2,  /* its borrowing limit reached */
	WHY_QUOTA_COHORT = 3,  /* the cohort lends no more */
	WHY_ABOVE_MAX = 4,     /* more than the CQ could ever hold */
	WHY_NOT_COVERED = 5,   /* a requested resource no group covers */
	WHY_NO_FLAVOR = 6,     /* no flavor passes taints/selectors */
	WHY_NO_CANDIDATES = 7, /* needs preemption, nothing to preempt */
	WHY_GUARANTEED = 8,    /* the CQ's own unlendable quota is used */
	WHY_TAKEN = 9,	       /* another preemptor took its victims this cycle */
	WHY_SKIPPED = 10,      /* it fitted when it became head; another head
				  took the quota since, this cycle */
	WHY_MIN_RUNTIME = 11,  /* its only candidates have not served their
				  minimum runtime (named live: explain.c) */
	WHY_NO_BORROW = 12,    /* over a budget (Lower): it may not borrow */
	WHY_RESERVED = 13,     /* another workload's reservation (bounded
				  wait) holds what it needs (reserve.c) */
	WHY_TOPOLOGY = 14,     /* its quota fits, no domain of its flavor's
				  topology holds its pods now (topology.c) */
	WHY_TOPO_LEVEL = 15,   /* it asks for a level its flavor's topology
				  does not have */
	WHY_LAST = WHY_TOPO_LEVEL,
};

typedef struct {
	/* first, in one cache line or two: what a pass over every workload
	 * reads of each (listings, the cycle's order, views in brief) */
	char *strs;		   /* "uid\0name\0", owned (its namespace is its
				      LocalQueue's: lq_t.ns) */
	int64_t created;	   /* creation time */
	union {			   /* by state: one field, two meanings */
		int64_t predicted; /* pending: predicted start, or -1 (never persisted) */
		int64_t idle_seen; /* admitted: the last reading below the threshold
				      (idle_since >= 0), -1 none (protect.c) */
	};
	uint32_t lq;	   /* LocalQueue */
	uint32_t cq;	   /* ClusterQueue */
	uint32_t epoch;	   /* bumps on every state change (timer validity) */
	uint32_t uid_hash; /* hash of uid */
	int32_t priority;  /* priority */
	uint32_t n_asg;	   /* entries in asg */
	uint8_t state;	   /* queue_wl_state_t */
	uint8_t wait;	   /* queue_wait_t */
	uint8_t where;	   /* W_* container */
	uint8_t n_ps;	   /* pod sets */
	/* one byte for the seven flags */
	bool live : 1;	       /* slot in use */
	bool ready : 1;	       /* PodsReady since admission */
	bool gone : 1;	       /* a victim of this cycle, uncharged (q->gone) */
	bool idle_said : 1;    /* its idle spell was reported (q->idle) */
	bool predict_said : 1; /* pending: its coarse status may say its predicted
				  start (queue_workload_predict_show) */
	bool topo_given : 1;   /* a candidate given back while a domain is tried
				  for a preemptor (topology.c victims_in) */
	bool rec_aside : 1;    /* retried from set-aside this cycle (q->retried),
				  its record unchanged: still says set aside */
	uint8_t why;	       /* WHY_* */
	uint8_t evict_reason;  /* queue_evict_reason_t of the last eviction */
	uint8_t why_level;     /* explanation (WHY_TOPOLOGY): the level index */
	uint16_t name_off;     /* name offset in strs */
	/* the rest (in an order that leaves no padding) */
	uint32_t pos;	      /* index in its heap / aside / admitted vector */
	uint32_t requeues;    /* Ready-timeout evictions */
	uint32_t preemptions; /* times preempted */
	uint32_t why_res;     /* explanation: resource id or QUEUE_NONE */
	uint32_t why_flavor;  /* explanation: flavor id or QUEUE_NONE */
	int32_t gang_total;   /* 0 = not a gang */
	int32_t pods_present; /* gang pods present */
	psref_t ps1;	      /* the pod set when n_ps == 1 */
	psref_t *psx;	      /* pod sets when n_ps > 1, owned */
	asg_t *asg;	      /* assignment while admitted/evicting, owned */
	int64_t admitted_ms;  /* last admission (-1 never) */
	int64_t eligible_ms;  /* backoff end */
	int64_t why_need;     /* explanation: amount needed */
	int64_t why_free;     /* explanation: amount free */
	uint64_t admit_cycle; /* cycle of the last admission */
	int64_t idle_since;   /* admitted: idle (below its CQ's threshold) since,
				 or -1 (protect.c) */
	int64_t exec_ms;      /* time admitted in earlier admissions (wall-clock
				 limit; reset when it is reactivated) */
	int32_t max_exec_s;   /* its own wall-clock limit, s (0: none) */
	int32_t run_bound_s;  /* what ends each run by its age, s (0: none; not
				 persisted: spec run_bound_s) */
	placement_t *place;   /* admitted on a topology-aware flavor: where its
				 pods go (topology.c), owned; NULL otherwise */
} wl_t;

typedef struct {
	int64_t nominal;   /* nominalQuota */
	int64_t blimit;	   /* borrowingLimit or -1 */
	int64_t llimit;	   /* lendingLimit or -1 */
	int64_t usage;	   /* admitted + evicting (+ held during a cycle) */
	int64_t evicting;  /* part of usage held by EVICTING workloads */
	int64_t rec_usage; /* usage named by a restored CQ record */
	uint32_t flavor;   /* flavor id */
	uint32_t res;	   /* resource id */
	uint32_t cslot;	   /* the cohort slot for (flavor, res) */
} slot_t;

typedef struct {
	uint32_t n_cov;			       /* covered resources */
	uint32_t n_flv;			       /* flavors */
	uint32_t cov[QUEUE_GROUP_RES_MAX];     /* resource ids */
	uint32_t flv[QUEUE_GROUP_FLAVORS_MAX]; /* flavor ids in order */
	uint32_t base;			       /* slot of (flavor 0, resource 0) */
} group_t;

typedef struct {
	uint64_t admissions;  /* history */
	uint64_t preemptions; /* history: preempted */
	uint64_t evictions;   /* history: evicted for any reason */
	uint64_t finishes;    /* history */
} counters_t;

/* A shape that did not fit in this cohort cycle: free quota only shrinks
 * during a cycle, so the same single pod set with as many pods or more
 * cannot fit either (kept only for CQs that cannot preempt). */
typedef struct {
	uint32_t tmpl;	     /* template */
	int32_t count;	     /* pods */
	uint8_t mode;	     /* M_WAIT or M_NEVER */
	uint8_t why;	     /* explanation */
	uint32_t why_res;    /* ... */
	uint32_t why_flavor; /* ... */
	int64_t why_need;    /* ... */
	int64_t why_free;    /* ... */
	uint8_t why_level;   /* ... */
} nofit_t;

#define NOFIT_CACHE 4 /* shapes remembered per CQ per cycle */

typedef struct {
	char *name;			       /* CQ name (interned, borrowed) */
	uint32_t cohort;		       /* its cohort (internal index; hidden when alone) */
	uint32_t unit;			       /* the root of its cohort tree: the cycle's unit */
	group_t *groups;		       /* resource groups, owned */
	uint32_t n_groups;		       /* entries */
	int8_t res_group[QUEUE_RESOURCES_MAX]; /* group covering a resource, -1 */
	int8_t res_cov[QUEUE_RESOURCES_MAX];   /* its index in the group */
	slot_t *slots;			       /* quota slots, owned */
	uint32_t n_slots;		       /* entries */
	queue_strategy_t strategy;	       /* queueingStrategy */
	queue_within_t within;		       /* preemption policy */
	queue_reclaim_t reclaim;	       /* preemption policy */
	queue_borrow_t borrow;		       /* preemption policy */
	bool has_thr;			       /* maxPriorityThreshold set */
	bool borrow_next;		       /* whenCanBorrow: TryNextFlavor */
	bool preempt_next;		       /* whenCanPreempt: TryNextFlavor */
	bool prefer_preempt;		       /* preference: PreemptionOverBorrowing */
	bool afs;			       /* admission fair sharing: tenant key
						  before priority (queue_wl_cmp) */
	int32_t thr;			       /* its value */
	int64_t weight;			       /* fair-sharing weight, milli */
	queue_stop_t stop;		       /* stopPolicy */
	u32vec_t lqs;			       /* its LocalQueues */
	u32vec_t aside;			       /* set-aside pending workloads */
	u32vec_t adm;			       /* admitted and evicting workloads */
	counters_t ctr;			       /* history */
	uint32_t n_pending;		       /* pending workloads (all reasons) */
	uint32_t prune_due;		       /* cycle scratch: retried workloads found
						  no longer fitting before its heaps
						  are pruned again (fetch_head) */
	bool blocked;			       /* StrictFIFO head blocked in the last cycle */
	bool rec_seen;			       /* a CQ record was restored into it */
	nofit_t nofit[NOFIT_CACHE];	       /* shapes that did not fit this cycle */
	uint32_t n_nofit;		       /* entries used (a ring) */
	int64_t min_runtime;		       /* minRuntime, ms (0: none) */
	int64_t idle_after;		       /* idleReclaim.for, ms */
	double idle_thr;		       /* idleReclaim.utilizationBelow, percent */
	uint8_t idle_action;		       /* queue_idle_action_t */
	int32_t budget;			       /* its ClusterQueue budget (index), or -1 */
	int64_t max_exec;		       /* maxExecutionTime, ms (0: none) */
	int64_t starve;			       /* starvationLimit, ms (0: none) */
	uint32_t resv;			       /* the workload holding its reservation
						  (as of its cohort's last cycle), or
						  QUEUE_NONE: never persisted,
						  recomputed each cycle (reserve.c) */
	uint32_t resv_ahead;		       /* running workloads to end first (0:
						  unknown) */
	int64_t resv_start;		       /* when they end by their limits, or
						  INT64_MAX: unknown */
} cq_t;

typedef struct {
	char *name;	     /* "namespace/name" (interned, borrowed) */
	const char *ns;	     /* its namespace, its workloads' (q->strs, interned) */
	uint32_t cq;	     /* its ClusterQueue */
	int64_t weight;	     /* fair-share weight, milli */
	u32vec_t heap;	     /* eligible pending workloads, a binary heap */
	double usage;	     /* decayed usage */
	double used_ms;	     /* ledger of finished work */
	int64_t *cur;	     /* admitted amount per resource (lazy) */
	counters_t ctr;	     /* history */
	uint32_t n_pending;  /* pending workloads */
	uint32_t n_admitted; /* admitted + evicting */
	uint32_t heap_from;  /* cycle scratch: its heap's size before a retry's
				unordered appends (cohort_retry_aside) */
	int32_t budget;	     /* its LocalQueue budget (index), or -1 */
	int32_t ns_budget;   /* its namespace's budget (index), or -1 */
	uint8_t standing;    /* queue_lq_standing_t, from the budgets' states */
} lq_t;

/* One (flavor, resource) of a cohort: a node of Kueue's quota tree. */
typedef struct {
	uint32_t flavor; /* flavor id */
	uint32_t res;	 /* resource id */
	uint32_t pslot;	 /* the parent's slot for (flavor, res), QUEUE_NONE at a root */
	int64_t own;	 /* the cohort's own nominalQuota (Cohort resourceGroups) */
	int64_t blimit;	 /* its own borrowingLimit or -1 */
	int64_t llimit;	 /* its own lendingLimit or -1 */
	int64_t sub;	 /* subtree quota: own + what its CQs and child cohorts lend */
	int64_t use;	 /* usage counted against sub: what its CQs and child
			    cohorts use beyond what they keep */
	int64_t nominal; /* sum of its member CQs' nominal (views) */
	int64_t usage;	 /* sum of its member CQs' usage (views) */
} cslot_t;

typedef struct {
	char *name;	  /* name ("" for the hidden cohort of a lone CQ) */
	uint32_t pub;	  /* public id, QUEUE_NONE when hidden */
	uint32_t parent;  /* parent cohort (internal), QUEUE_NONE for a root */
	int64_t weight;	  /* fairSharing weight, milli (0: weight 0) */
	bool declared;	  /* queue_cohort_add declared it (not only named) */
	uint8_t height;	  /* Kueue's getNodeHeight: 1 with any member CQ or
			     child cohort, else 0, and at least each child
			     cohort's height + 1 (the tree only grows) */
	u32vec_t mem;	  /* its member CQs (direct children) */
	u32vec_t kids;	  /* its child cohorts */
	u32vec_t cqs;	  /* a root: every CQ of its tree (the cycle's unit) */
	cslot_t *slots;	  /* (flavor, resource) nodes */
	size_t n_slots;	  /* entries */
	size_t cap_slots; /* allocated */
	/* a root only: the tree's cycle state */
	bool dirty;	      /* needs a cycle */
	bool capacity_up;     /* capacity grew: retry set-aside workloads */
	bool rec_capacity_up; /* restored from the meta record */
	uint32_t n_evicting;  /* EVICTING workloads in its CQs */
	uint64_t gen;	      /* bumps on every usage change in a cycle */
} cohort_t;

typedef struct {
	int64_t at;	/* deadline or backoff end */
	uint32_t wl;	/* workload */
	uint32_t epoch; /* the workload's epoch when pushed */
} timer_t_;

typedef struct {
	timer_t_ *v; /* binary heap by (at, workload id) */
	size_t n;    /* used */
	size_t cap;  /* allocated */
} timers_t;

/* One budget (budget.c). */
typedef struct {
	queue_budget_spec_t spec; /* as given; spec.name points at name */
	char *name;		  /* owned */
	char key[QUEUE_KEY_MAX];  /* its record key: "l/..", "n/..", "c/.." */
	uint32_t target;	  /* LocalQueue or ClusterQueue id (QUEUE_NONE: namespace) */
	uint8_t state;		  /* queue_budget_state_t */
	bool stale;		  /* restored under another limit or window: evaluate soon */
	double used;		  /* at the last evaluation */
	int64_t window_start;	  /* the window evaluated */
	int64_t evaluated;	  /* when, or INT64_MIN */
} budget_t;

typedef struct {
	uint8_t type;  /* queue_rec_type_t */
	uint16_t len;  /* key bytes */
	uint32_t hash; /* hash of type + key */
	uint8_t *key;  /* owned copy */
} dirty_t;

typedef struct {
	uint32_t slot; /* CQ slot */
	int64_t val;   /* amount */
	uint8_t mode;  /* M_* of this slot */
} need_t;

enum { M_FIT = 0, M_RECLAIM = 1, M_PREEMPT = 2, M_WAIT = 3, M_NEVER = 4 };

/* One ask: pod sets idx[0..n) of w on flavor fid; mode, level and slices
 * from the first one's template. */
typedef struct {
	uint16_t idx[TOPO_PODSETS_MAX]; /* workload pod set indexes */
	size_t n;			/* pod sets */
} askset_t;

/* One flavor assignment attempt. */
typedef struct {
	int mode;					     /* worst M_* over the assignment */
	bool borrows;					     /* some slot would go above nominal */
	uint8_t level;					     /* its borrowing level (0: none) */
	size_t n_asg;					     /* entries in asg */
	asg_t asg[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX]; /* per pod set and request */
	size_t n_need;					     /* entries in need */
	need_t need[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX]; /* per slot totals */
	uint8_t why;					       /* WHY_* of the worst slot */
	uint32_t why_res;				       /* its resource */
	uint32_t why_flavor;				       /* its flavor */
	int64_t why_need;				       /* needed */
	int64_t why_free;				       /* free */
	uint8_t why_level;				       /* WHY_TOPOLOGY: the level */
	bool placed;	      /* pl holds the placement of this assignment */
	uint32_t blocked_fid; /* a REQUIRED ask whose quota fit (or would,
				 preempting) but no domain did: its flavor
				 (QUEUE_NONE: none), for a preemption that
				 frees a domain (topology.c) */
	askset_t blocked;     /* ... and its pod sets */
	bool blocked_quota;   /* ... its quota needs preemption too: the
				 domain's victims must free it as well */
	size_t n_pl;	      /* entries in pl */
	size_t cap_pl;	      /* allocated */
	place_t *pl;	      /* the placement on topology-aware flavors, owned
				 (topology.c); a try_t on the stack never places */
} try_t;

typedef struct {
	uint32_t cq;		 /* CQ */
	uint32_t wl;		 /* its current head */
	fairshare_share_t share; /* weighted share with the head (fair sharing) */
	uint64_t gen;		 /* cohort gen when computed */
	uint8_t level;		 /* head's borrowing level (try_t.level) */
	uint8_t mode;		 /* its M_* when fetched (skipped: fit then, not now) */
	bool hopeless;		 /* head cannot be admitted now (processed first) */
	uint32_t ts;		 /* a tree under fair sharing: its need is */
	uint32_t tn;		 /* q->tneeds[ts .. ts + tn) */
} cqhead_t;

struct queue {
	queue_config_t cfg;	 /* configuration */
	ledger_t *ledger;	 /* usage ledger (chargeback), owned */
	names_t strs;		 /* interned label keys/values and pod set names */
	names_t res_names;	 /* resources */
	names_t flv_names;	 /* flavors */
	names_t cq_names;	 /* ClusterQueues */
	names_t lq_names;	 /* LocalQueues "ns/name" */
	names_t cohort_names;	 /* cohorts, incl. hidden ones "\x01<cq>" */
	flavor_t *flavors;	 /* by flavor id */
	topology_t *topologies;	 /* by id (topo_names) */
	names_t topo_names;	 /* Topologies */
	node_t *nodes;		 /* by id (node_names; never reused) */
	names_t node_names;	 /* nodes */
	size_t cap_nodes;	 /* allocated */
	size_t n_topo_flavors;	 /* flavors with a topology */
	bool topo_stale;	 /* a resource was added: every node is given to
				    the topos again before the next fit (topology.c) */
	size_t n_placed;	 /* workloads holding a placement */
	size_t n_nodes_down;	 /* nodes gone or not Ready and not settled
				    (node_t): queue_topo_failures has work */
	uint32_t failed_node;	 /* the node named by the QUEUE_EVICT_NODE_FAILED
				    eviction being emitted (failure.c) */
	topo_place_t *fit_buf;	 /* topo_fit's output (topology.c) */
	u32vec_t topo_cands;	 /* a domain preemption's candidates (topology.c) */
	struct askbuf *askbuf;	 /* an ask being built and fitted (topology.c),
				    owned; made at the first */
	u32vec_t topo_doms;	 /* ... the domains tried, then the victims */
	size_t cap_fit_buf;	 /* allocated */
	size_t cap_flavors;	 /* allocated */
	uint64_t flv_epoch;	 /* bumps when a flavor gets defined */
	cq_t *cqs;		 /* by CQ id */
	size_t cap_cqs;		 /* allocated */
	lq_t *lqs;		 /* by LQ id */
	size_t cap_lqs;		 /* allocated */
	cohort_t *cohorts;	 /* internal cohorts */
	size_t cap_cohorts;	 /* allocated */
	u32vec_t pub_cohorts;	 /* public id -> internal */
	wl_t *wls;		 /* workloads by id (grown by a quarter: at most
				    a fifth of it unused, where doubling left up
				    to half; chunks cost the cycle 5% more
				    instructions, an extra load per lookup) */
	size_t n_wls;		 /* slots used (live or free) */
	size_t cap_wls;		 /* allocated */
	u32vec_t free_wls;	 /* free ids */
	size_t n_live;		 /* live workloads */
	idmap_t uids;		 /* uid -> workload */
	tmpl_t *tmpls;		 /* templates */
	size_t n_tmpls;		 /* slots */
	size_t cap_tmpls;	 /* allocated */
	u32vec_t free_tmpls;	 /* free template ids */
	idmap_t tmpl_map;	 /* content -> template */
	u32vec_t dirty_cohorts;	 /* cohorts needing a cycle */
	timers_t ready_timers;	 /* Ready deadlines */
	timers_t backoff_timers; /* backoff ends */
	timers_t exec_timers;	 /* wall-clock deadlines: checked against the
				    workload when due (an entry may be stale,
				    or early after a limit was raised: cycle.c) */
	dirty_t *dirty;		 /* changed records */
	size_t n_dirty;		 /* entries */
	size_t cap_dirty;	 /* allocated */
	idmap_t dirty_map;	 /* (type, key) -> entry */
	uint64_t cycles;	 /* cycles run */
	int64_t last_now;	 /* last time seen */
	int64_t last_sample;	 /* last tenant usage sample */
	bool meta_dirty;	 /* meta record changed */
	bool dirty_lost;	 /* a change could not be recorded (allocation) */
	bool release_lost;	 /* release_on_evict: a release failed (allocation);
				    the next tick or cycle releases every EVICTING one */
	bool cycle_short;	 /* this cohort's cycle ran out of memory somewhere */
	bool touch_lost;	 /* a cohort could not join dirty_cohorts (allocation):
				    the next cycle considers every cohort */
	bool retry_preempt;	 /* a cohort cycle found no victims (scratch) */
	bool targets_borrow;	 /* the victim set in targets lets its preemptor borrow */
	/* results of the last cycle_run / tick */
	queue_admission_t *res_adm;
	size_t n_res_adm, cap_res_adm;
	queue_assign_t *res_asg;
	size_t n_res_asg, cap_res_asg;
	queue_eviction_t *res_ev;
	size_t n_res_ev, cap_res_ev;
	queue_pending_change_t *res_ch;
	size_t n_res_ch, cap_res_ch;
	char *res_msg;
	size_t n_res_msg, cap_res_msg;
	/* cycle scratch */
	u32vec_t keep;	   /* popped workloads that stay pending */
	u32vec_t release;  /* victims to release at the end of the cycle */
	u32vec_t gone;	   /* this cycle's victims: uncharged until its end, as
			      gone for the later heads (their preemptor holds) */
	u32vec_t retried;  /* this cycle's set-aside workloads retried whose
			      records were not marked (wl_t.rec_aside) */
	need_t *held;	   /* usage held by preemptors this cycle */
	uint32_t *held_cq; /* their CQs */
	size_t n_held, cap_held, cap_held_cq;
	cqhead_t *heads; /* CQ heads of the cohort in a cycle (heap) */
	size_t n_heads, cap_heads;
	bool tournament;	    /* this cycle's tree orders heads level by level */
	fairshare_share_t *tshares; /* heads' shares per level (tournament) */
	size_t cap_tshares;
	need_t *tneeds; /* heads' needs (tournament) */
	size_t n_tneeds, cap_tneeds;
	u32vec_t cands;	    /* preemption candidates */
	u32vec_t targets;   /* chosen victims */
	try_t scratch_try;  /* one assignment */
	try_t scratch_rank; /* a flavor's victim search while ranking flavors */
	/* GPU economics (budget.c, protect.c) */
	budget_t *budgets;	       /* queue_budgets_set's */
	size_t n_budgets;	       /* entries */
	ledger_price_t *prices;	       /* cost budgets' prices (flavors owned) */
	size_t n_prices;	       /* entries */
	int64_t budget_at;	       /* last evaluation of the budgets, or INT64_MIN */
	int64_t budget_turn;	       /* the first end of a window evaluated: the budgets are
					  evaluated again then */
	queue_prio_runtime_t *prio_rt; /* minimum runtimes by priority, sorted */
	size_t n_prio_rt;	       /* entries */
	timers_t prot_timers;	       /* ends of minimum runtimes (wl: the protected one) */
	timers_t idle_timers;	       /* idle spells' deadlines (at: idle_since + for) */
	u32vec_t idle;		       /* admitted workloads with idle_since >= 0 */
	bool prot_seen;		       /* a protected candidate was passed over since
					  queue_prot_reset (the head being tried) */
	queue_idle_t *res_idle;	       /* this call's idle reports */
	size_t n_res_idle, cap_res_idle;
	queue_budget_change_t *res_bch; /* this call's budget changes */
	size_t n_res_bch, cap_res_bch;
};

/* (flavor, resource) pairs a preemptor needs preemption in. */
typedef struct {
	size_t n;						/* pairs */
	uint32_t flv[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX]; /* flavor ids */
	uint32_t res[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX]; /* resource ids */
} queue_frs_t;

/* The cohorts above a CQ, its own first, the root last. */
typedef struct {
	uint32_t n;			       /* cohorts */
	uint32_t co[QUEUE_TREE_DEPTH_MAX + 1]; /* internal cohort ids */
	uint32_t adv;			       /* bit k: hierarchical advantage at co[k] */
} queue_path_t;

/* Workload id: mutable through a mutable queue only (Wc for reading). */
static inline wl_t *W(queue_t *q, uint32_t id)
{
	return &q->wls[id];
}

static inline const wl_t *Wc(const queue_t *q, uint32_t id)
{
	return &q->wls[id];
}

static inline const char *wl_uid(const wl_t *w)
{
	return w->strs;
}

static inline const psref_t *wl_ps(const wl_t *w)
{
	return w->n_ps == 1 ? &w->ps1 : w->psx;
}

/* A CQ's cycle unit, the root of its cohort tree: mutable through a
 * mutable queue only (cohort_of_c for reading). */
static inline cohort_t *cohort_of(queue_t *q, const cq_t *c)
{
	return &q->cohorts[c->unit];
}

static inline const cohort_t *cohort_of_c(const queue_t *q, const cq_t *c)
{
	return &q->cohorts[c->unit];
}

static inline bool cq_has_cohort(const queue_t *q, const cq_t *c)
{
	return q->cohorts[c->cohort].pub != QUEUE_NONE;
}

/* The quota node of CQ slot s for quota/'s tree arithmetic. */
static inline quota_node_t queue_slot_node(const slot_t *s)
{
	return (quota_node_t){s->nominal, s->usage, s->blimit, s->llimit};
}

static inline quota_node_t queue_cslot_node(const cslot_t *x)
{
	return (quota_node_t){x->sub, x->use, x->blimit, x->llimit};
}

/* What cohort co's node cs offers its subtree now (Kueue's available()). */
static inline int64_t queue_node_available(const queue_t *q, uint32_t co, uint32_t cs)
{
	const cohort_t *h = &q->cohorts[co];
	const cslot_t *x = &h->slots[cs];
	quota_node_t n;

	if (h->parent == QUEUE_NONE)
		return x->sub - x->use;
	n = queue_cslot_node(x);
	return quota_node_available(queue_node_available(q, h->parent, x->pslot), &n);
}

/* The most cohort co's node cs could ever offer (potentialAvailable()). */
static inline int64_t queue_node_potential(const queue_t *q, uint32_t co, uint32_t cs)
{
	const cohort_t *h = &q->cohorts[co];
	const cslot_t *x = &h->slots[cs];
	quota_node_t n;

	if (h->parent == QUEUE_NONE)
		return x->sub;
	n = queue_cslot_node(x);
	return quota_node_potential(queue_node_potential(q, h->parent, x->pslot), &n);
}

/* Apply a change of node (co, cs)'s subtree quota (dsub) and usage (duse)
 * and carry what changes of its lending and its usage beyond what it keeps
 * up to its ancestors (Kueue's addUsage/removeUsage and tree sums). */
static inline void queue_node_update(queue_t *q, uint32_t co, uint32_t cs, int64_t dsub,
				     int64_t duse)
{
	while (co != QUEUE_NONE && (dsub || duse)) {
		cohort_t *h = &q->cohorts[co];
		cslot_t *x = &h->slots[cs];
		int64_t lent0 = quota_node_lent(x->sub, x->llimit);
		int64_t up0 = quota_node_use_up(x->use, x->sub, x->llimit);

		x->sub += dsub;
		x->use += duse;
		if (h->parent == QUEUE_NONE)
			return;
		dsub = quota_node_lent(x->sub, x->llimit) - lent0;
		duse = quota_node_use_up(x->use, x->sub, x->llimit) - up0;
		cs = x->pslot;
		co = h->parent;
	}
}

/* ---- util.c ---- */

/* Hot helpers of the cycle, inline for the same reason. */

static inline int64_t queue_slot_guaranteed(const slot_t *s)
{
	return s->llimit >= 0 ? s->nominal - s->llimit : 0;
}

static inline int64_t queue_over(int64_t usage, int64_t g)
{
	return usage > g ? usage - g : 0;
}

/* A pending preemptor that keeps the assignment it preempted for: its
 * victims are gone or going, and the quota they free is meant for it. */
static inline bool queue_wl_planned(const wl_t *w)
{
	return w->state == QUEUE_WL_PENDING && w->wait == QUEUE_WAIT_PREEMPTING && w->n_asg;
}

/* A LocalQueue's tenant key: decayed usage / weight (lower goes first). */
static inline double queue_lq_key(const queue_t *q, uint32_t lq)
{
	return fairshare_tenant_key(q->lqs[lq].usage, q->lqs[lq].weight);
}

/* The order of two pending workloads of one ClusterQueue (< 0: a first), the
 * one rule for it (docs/queueing.md, the cycle's step 4): each LocalQueue's
 * heap keeps it, the cycle takes the CQ's next workload from the LocalQueue
 * whose head is least by it, listings and positions sort by it.
 *  1. a planned preemptor first under BestEffortFIFO, and under admission
 *     fair sharing with either strategy: the quota its victims free is for
 *     it (else a victim, requeued, takes it back, ahead by its place or by
 *     its tenant key, and is preempted again: a ping-pong);
 *  1b. a LocalQueue over a budget with action Lower after the others;
 *  2. with admission fair sharing, the tenant key asc (Kueue compares the
 *     LocalQueues' usage before priority);
 *  3. priority desc;
 *  4. creation asc, uid asc.
 * Under StrictFIFO without admission fair sharing a planned preemptor needs
 * no step 1: its victims in its own CQ have a lower priority, or an equal
 * one and a later creation (LowerOrNewerEqualPriority), and come from a
 * LocalQueue over a budget when it does (queue_own_rule), so none is ahead
 * of it by step 1b. Lexicographic, so a total order; within one LocalQueue
 * step 2 ties. A workload's place in its heap only changes while it is out
 * of the heap. */
static inline int queue_wl_cmp(const queue_t *q, uint32_t a, uint32_t b)
{
	const wl_t *x = Wc(q, a), *y = Wc(q, b);
	const cq_t *c = &q->cqs[x->cq];
	bool px = queue_wl_planned(x), py = queue_wl_planned(y);

	if ((c->strategy == QUEUE_BEST_EFFORT_FIFO || c->afs) && px != py)
		return px ? -1 : 1;
	if (x->lq != y->lq && q->lqs[x->lq].standing != q->lqs[y->lq].standing) {
		/* over a budget with Lower: after those within budget (a held
		 * LocalQueue's workloads are never taken) */
		bool lx = q->lqs[x->lq].standing == QUEUE_LQ_LOWERED;
		bool ly = q->lqs[y->lq].standing == QUEUE_LQ_LOWERED;

		if (lx != ly)
			return lx ? 1 : -1;
	}
	if (c->afs && x->lq != y->lq) {
		double kx = queue_lq_key(q, x->lq), ky = queue_lq_key(q, y->lq);

		if (kx != ky)
			return kx < ky ? -1 : 1;
	}
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(wl_uid(x), wl_uid(y));
}

/* The slot of CQ c for (flavor, resource), or -1. */
static inline int64_t queue_cq_slot_find(const cq_t *c, uint32_t flavor, uint32_t res)
{
	int g, r;
	const group_t *gr;

	if (res >= QUEUE_RESOURCES_MAX)
		return -1;
	g = (int)c->res_group[res];
	r = (int)c->res_cov[res];
	if (g < 0)
		return -1;
	gr = &c->groups[g];
	for (uint32_t f = 0; f < gr->n_flv; f++)
		if (gr->flv[f] == flavor)
			return gr->base + f * gr->n_cov + (uint32_t)r;
	return -1;
}

/* What one more workload could take from slot now. */
static inline int64_t queue_slot_available(const queue_t *q, const cq_t *c, const slot_t *s)
{
	quota_node_t n = queue_slot_node(s);
	int64_t avail = quota_node_available(queue_node_available(q, c->cohort, s->cslot), &n);

	return avail > 0 ? avail : 0;
}

/* What slot s lends its cohort: lendingLimit, or all of nominal. */
static inline int64_t queue_slot_lendable(const slot_t *s)
{
	return quota_node_lent(s->nominal, s->llimit);
}

/* The most this CQ could ever hold in slot, with the tree empty
 * (quota_tree_potential's rule: the webhook's too). */
static inline int64_t queue_slot_max_capacity(const queue_t *q, const cq_t *c, const slot_t *s)
{
	quota_node_t n = queue_slot_node(s);

	return quota_node_potential(queue_node_potential(q, c->cohort, s->cslot), &n);
}

static inline bool queue_cq_can_preempt(const queue_t *q, const cq_t *c)
{
	return c->within != QUEUE_WITHIN_NEVER ||
	       (cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER);
}

/* Small containers, inline: they are on every hot path (dirty marks, id
 * lookups, heaps), and a call across files costs the drain 10% more
 * instructions. */

/* Grow *p (elements of `elem` bytes, capacity *cap) to hold `need`. */
static inline int queue_grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t n;
	void *np;

	if (need <= *cap)
		return GPUQ_OK;
	n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	np = realloc(*p, n * elem);
	if (!np)
		return GPUQ_ENOMEM;
	*p = np;
	*cap = n;
	return GPUQ_OK;
}

/* queue_grow by a quarter at a time, for an array as large as the queue
 * (its workloads): the room left unused is at most a fifth. */
static inline int queue_grow_quarter(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t n = *cap ? *cap : 8;
	void *np;

	if (need <= *cap)
		return GPUQ_OK;
	while (n < need)
		n += n / 4 + 1;
	np = realloc(*p, n * elem);
	if (!np)
		return GPUQ_ENOMEM;
	*p = np;
	*cap = n;
	return GPUQ_OK;
}

static inline int queue_vpush(u32vec_t *v, uint32_t x)
{
	if (queue_grow(&v->v, &v->cap, v->n + 1, sizeof(*v->v)))
		return GPUQ_ENOMEM;
	v->v[v->n++] = x;
	return GPUQ_OK;
}

static inline int queue_map_reserve(idmap_t *m)
{
	size_t ncap;
	mapent_t *ne;

	if ((m->n + 1) * 8 < m->cap * 7) /* 7/8 full at most (100,000 in 131,072) */
		return GPUQ_OK;
	ncap = m->cap ? m->cap * 2 : 64;
	ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->e[i].id)
			continue;
		j = m->e[i].hash & (ncap - 1);
		while (ne[j].id)
			j = (j + 1) & (ncap - 1);
		ne[j] = m->e[i];
	}
	free(m->e);
	m->e = ne;
	m->cap = ncap;
	return GPUQ_OK;
}

static inline bool queue_map_find(const idmap_t *m, uint32_t h, map_eq_fn eq, const void *ctx,
				  const void *key, uint32_t *id)
{
	if (!m->cap)
		return false;
	for (size_t j = h & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		if (!m->e[j].id)
			return false;
		if (m->e[j].hash == h && eq(ctx, m->e[j].id - 1, key)) {
			*id = m->e[j].id - 1;
			return true;
		}
	}
}

/* Insert id (not present). queue_map_reserve must have succeeded. */
static inline void queue_map_put(idmap_t *m, uint32_t h, uint32_t id)
{
	size_t j = h & (m->cap - 1);

	while (m->e[j].id)
		j = (j + 1) & (m->cap - 1);
	m->e[j].id = id + 1;
	m->e[j].hash = h;
	m->n++;
}

static inline void queue_map_del(idmap_t *m, uint32_t h, uint32_t id)
{
	size_t j = h & (m->cap - 1), k;

	while (m->e[j].id != id + 1) {
		if (!m->e[j].id)
			return;
		j = (j + 1) & (m->cap - 1);
	}
	m->e[j].id = 0;
	m->n--;
	/* Backward shift: move later entries of the run into the hole when
	 * their home slot does not lie cyclically in (j, k]. */
	for (k = (j + 1) & (m->cap - 1); m->e[k].id; k = (k + 1) & (m->cap - 1)) {
		size_t home = m->e[k].hash & (m->cap - 1);
		bool in_range = j <= k ? (home > j && home <= k) : (home > j || home <= k);

		if (in_range)
			continue;
		m->e[j] = m->e[k];
		m->e[k].id = 0;
		j = k;
	}
}
int queue_names_find(const names_t *t, const char *s, uint32_t *id);
int queue_names_intern(names_t *t, const char *s, uint32_t *id);
void queue_names_free(names_t *t);

/* ---- mark.c ---- */

void queue_mark_wl(queue_t *q, const wl_t *w);
void queue_mark_cq(queue_t *q, uint32_t cq);
void queue_mark_lq(queue_t *q, uint32_t lq);
void queue_mark_meta(queue_t *q);
/* Mark record (type, key) changed (budget records: their own keys). */
void queue_mark_key(queue_t *q, uint8_t type, const char *key);
void queue_cohort_touch(queue_t *q, uint32_t co, bool capacity_up);
/* Mark every budget record changed. */
void queue_budgets_mark_all(queue_t *q);

/* ---- util.c: names checked and interned, lists built from them ---- */

int queue_check_name(const char *what, const char *s, bool allow_empty, gpuq_diag_t *diag);
int queue_res_intern(queue_t *q, const char *name, uint32_t *id, gpuq_diag_t *diag);
int queue_str_intern(queue_t *q, const char *what, const char *s, uint32_t *id, gpuq_diag_t *diag);
int queue_tols_build(queue_t *q, const queue_toleration_t *in, size_t n, tol_t **out,
		     gpuq_diag_t *diag);
/* Labels in[0..n) interned into *out (owned; NULL when n is 0); more than
 * max is GPUQ_ELIMIT. */
int queue_labels_build(queue_t *q, const char *what, const queue_label_t *in, size_t n, size_t max,
		       kv_t **out, gpuq_diag_t *diag);
/* topology.c: topology-aware flavors (see queue.h "Topology"). */
int queue_flavor_topology(queue_t *q, uint32_t fid, const char *topology, gpuq_diag_t *diag);
void queue_topo_free(queue_t *q);
void queue_topo_try(queue_t *q, uint32_t wid, try_t *t);
bool queue_topo_needed(const queue_t *q, const try_t *t);
int queue_topo_admit(queue_t *q, uint32_t wid, const try_t *t);
bool queue_topo_fits_after_evictions(queue_t *q, uint32_t wid, const try_t *t);
bool queue_topo_victims(queue_t *q, uint32_t wid, try_t *t);
bool queue_topo_preemption(queue_t *q, uint32_t wid, try_t *t);
void queue_topo_release(queue_t *q, uint32_t wid);
void queue_topo_why_text(const queue_t *q, const wl_t *w, char *out, size_t cap);
/* The short name of a level for a sentence: the label key after its
 * prefix (topology.gpuq.dev/rack: rack); the host level is a node. */
const char *queue_topo_level_word(const char *key);
int queue_tmpl_topology(queue_t *q, const queue_podset_spec_t *ps, tmpl_t *t, gpuq_diag_t *diag);
/* A workload record's topology block (version 5), decoded. */
typedef struct {
	bool present;					   /* the block was there */
	uint8_t mode[QUEUE_PODSETS_MAX];		   /* per pod set */
	char level[QUEUE_PODSETS_MAX][QUEUE_NAME_MAX + 1]; /* "" none */
	char slice_level[QUEUE_PODSETS_MAX][QUEUE_NAME_MAX + 1];
	int32_t slice_size[QUEUE_PODSETS_MAX];
	char group[QUEUE_PODSETS_MAX][QUEUE_NAME_MAX + 1];
	place_t *pl; /* its placement, owned */
	size_t n_pl; /* entries */
} queue_topo_rec_t;
int queue_node_ref(queue_t *q, const char *name, uint32_t *nid);
/* failure.c: evict (QUEUE_EVICT_NODE_FAILED) every admitted workload placed
 * on a node deleted or not Ready for cfg.node_failure_ms at now, by
 * (admission, uid); GPUQ_ENOMEM (what was not evicted waits for the next
 * tick). */
int queue_topo_failures(queue_t *q, int64_t now);
/* When the next node turns failed after now (INT64_MAX: none). */
int64_t queue_topo_failures_next(const queue_t *q, int64_t now);
int queue_topo_restore(queue_t *q, uint32_t id, queue_topo_rec_t *t);
bool queue_tolerates(const queue_t *q, const tol_t *tols, size_t n, const taint_t *tn);
const kv_t *queue_kv_get(const kv_t *v, size_t n, uint32_t key);
const char *queue_res_name(const queue_t *q, uint32_t r);
const char *queue_flv_name(const queue_t *q, uint32_t f);

/* ---- emit.c: the result arrays of this call (reset by res_reset, fixed up
 * in res_finish, both cycle.c) ---- */

extern const char *const queue_evict_names[];
/* Room for n more evictions in this call's result: after it the next n
 * queue_emit_eviction calls cannot fail. GPUQ_ENOMEM. */
int queue_emit_reserve(queue_t *q, size_t n);
int queue_emit_eviction(queue_t *q, uint32_t victim, uint32_t preemptor, int reason);
int queue_emit_idle(queue_t *q, uint32_t wid);
int queue_emit_budget_change(queue_t *q, uint32_t b, uint8_t from, uint8_t to);

/* ---- charge.c: quota usage charged and released ---- */

void queue_usage_add(queue_t *q, uint32_t cq, uint32_t slot, int64_t delta);
/* Charge (+1) or release (-1) a workload's assignment to its CQ usage. */
void queue_wl_charge(queue_t *q, uint32_t id, int sign);
/* Tenant's admitted amounts per resource (for the decay sample). */
void queue_lq_cur_add(queue_t *q, const wl_t *w, int sign);

/* ---- encode.c (and restore.c) ---- */

/* The version byte every record starts with. */
#define REC_VERSION QUEUE_RECORD_VERSION
/* ... a workload record's since it is kept in varints (base/bytes.h): a
 * queued workload's record went from about 160 bytes to about 100, and
 * the store's resident leaf pages with it; version 1 ones are still read,
 * and rewritten as version 2 the next time they change. */
#define REC_VERSION_WL_VARINT 2
/* ... and from version 3 on its resource names are, when one of
 * quota_known_resources, that index (a negative string length, -(k+1): one
 * byte for "nvidia.com/gpu", which a queued GPU Job's record named twice);
 * versions 1 and 2 are still read. */
#define REC_VERSION_WL QUEUE_RECORD_VERSION_WORKLOAD
/* ... and from version 4 on it ends with its execution time and its own
 * wall-clock limit (older ones: 0 and none). */
#define REC_VERSION_WL_EXEC 4
/* ... and from version 5 on, after them, its pod sets' topology asks and
 * its placement (topology.c), or one byte 0 when it has neither. */
#define REC_VERSION_WL_TOPO 5
/* Copy a record key into a NUL-terminated name: GPUQ_ENOTFOUND when it is
 * longer than QUEUE_KEY_MAX or holds a NUL. */
int queue_key_str(const uint8_t *key, size_t len, char out[QUEUE_KEY_MAX + 1]);

/* ---- reserve.c ---- */

/* Decide CQ cq's reservation for a cycle of its cohort at now: its
 * resv, resv_ahead and resv_start (QUEUE_NONE: no reservation). */
void queue_resv_decide(queue_t *q, uint32_t cq, int64_t now);
/* Whether pending workload wid is kept out by its CQ's reservation at now:
 * another workload holds it, of a priority at least wid's, requesting a
 * resource wid requests, and wid's wall-clock limit does not end it by the
 * reserved start. */
bool queue_resv_blocks(const queue_t *q, uint32_t wid, int64_t now);
/* Whether pending workload wid, assigned as t says, is kept out by the
 * reservation of another CQ of its cohort tree: t borrows (goes above its
 * CQ's nominal quota) a resource that reservation's holder needs, as
 * queue_resv_blocks judges it. The CQ holding it, or QUEUE_NONE. */
uint32_t queue_resv_blocks_borrowing(const queue_t *q, uint32_t wid, const try_t *t, int64_t now);
/* The CQ whose reservation a workload kept out by one names: its own CQ's
 * when it holds one, else the first of its cohort tree that does, else
 * QUEUE_NONE. */
uint32_t queue_resv_holding(const queue_t *q, uint32_t wid);

/* ---- workload.c ---- */

/* Workload w's wall-clock limit in force, ms: the shorter of its own and
 * its ClusterQueue's; 0 for none. */
static inline int64_t queue_exec_limit(const queue_t *q, const wl_t *w)
{
	int64_t own = (int64_t)w->max_exec_s * 1000, cq = q->cqs[w->cq].max_exec;

	if (!own || (cq && cq < own))
		return cq;
	return own;
}

/* When admitted workload w reaches its limit (INT64_MAX: no limit). */
static inline int64_t queue_exec_deadline(const queue_t *q, const wl_t *w)
{
	int64_t lim = queue_exec_limit(q, w);

	return lim ? w->admitted_ms + lim - w->exec_ms : INT64_MAX;
}

/* Push admitted workload id's deadline, if it has one. GPUQ_ENOMEM. */
int queue_exec_arm(queue_t *q, uint32_t id);

void queue_tmpl_release(queue_t *q, uint32_t id);
bool queue_tmpl_flavor_ok(queue_t *q, uint32_t tid, uint32_t fid);
void queue_heap_remove(queue_t *q, u32vec_t *h, size_t i);
void queue_heap_rebuild(queue_t *q, u32vec_t *h);
/* Append workload id to heap h unordered (queue_heap_order restores the
 * order): GPUQ_ENOMEM. */
int queue_heap_append(queue_t *q, u32vec_t *h, uint32_t id);
/* Restore heap h's order after entries from..h->n were appended: each
 * sifted up, or the whole heap rebuilt when that is cheaper. */
void queue_heap_order(queue_t *q, u32vec_t *h, size_t from);
void queue_wl_detach(queue_t *q, uint32_t id);
int queue_wl_attach(queue_t *q, uint32_t id, int where);
int queue_timer_push(queue_t *q, timers_t *t, int64_t at, uint32_t wl);
void queue_timer_pop(queue_t *q, timers_t *t);
void queue_timer_clean(queue_t *q, timers_t *t);
int queue_lq_lookup(const queue_t *q, const char *ns, const char *name, uint32_t *id);
bool queue_ready_watched(const queue_t *q, const wl_t *w);
bool queue_gang_waiting(const wl_t *w);
int queue_wl_enqueue(queue_t *q, uint32_t id);
void queue_wl_free(queue_t *q, uint32_t id);
int queue_wl_create(queue_t *q, const queue_workload_spec_t *s, uint32_t *out, gpuq_diag_t *diag);
int queue_wl_release(queue_t *q, uint32_t id, int64_t now);
int queue_wl_evict(queue_t *q, uint32_t id, uint32_t preemptor, int reason);

/* ---- assign.c ---- */

uint8_t queue_slot_level(const queue_t *q, const cq_t *c, const slot_t *s, int64_t usage,
			 int64_t val, bool *reclaim);
double queue_lq_share_now(const queue_t *q, uint32_t lq);
double queue_wl_share(const queue_t *q, const wl_t *w);
fairshare_share_t queue_cq_share(const queue_t *q, uint32_t cq, const need_t *extra, size_t n_extra,
				 uint32_t without);
/* ---- preempt.c: where candidates come from ---- */
void queue_frs_of(const cq_t *c, const try_t *t, queue_frs_t *f);
void queue_path_of(const queue_t *q, const cq_t *c, queue_path_t *p);
/* Index in p of the lowest common ancestor of CQ o and p's CQ when o may
 * lose workloads to it: o above nominal in f and (classical: fair false)
 * every cohort from o up to that ancestor above its subtree quota in f;
 * -1 otherwise. */
int queue_victim_lca(const queue_t *q, const queue_path_t *p, const cq_t *o, const queue_frs_t *f,
		     bool fair);
/* Whether a workload of another CQ of c's tree may be reclaimed by w in
 * slot s's flavor and resource. */
bool queue_cohort_has_candidate(queue_t *q, const cq_t *c, const wl_t *w, const slot_t *s);
fairshare_share_t queue_cohort_share(const queue_t *q, uint32_t co);
void queue_need_add(try_t *t, uint32_t slot, int64_t val);
bool queue_wl_uses(const wl_t *v, const cq_t *vc, uint32_t flavor, uint32_t res);
bool queue_own_rule(const queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v);
bool queue_cohort_rule(const cq_t *c, const wl_t *w, const wl_t *v);
bool queue_own_candidate(queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v);
bool queue_cohort_candidate(queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v);
void queue_try_assign(queue_t *q, uint32_t wid, try_t *t);

/* ---- cycle.c ---- */

int queue_keep(queue_t *q, uint32_t wid);
int queue_adm_cmp(const void *pa, const void *pb, void *ctx);

/* ---- preempt.c ---- */

/* (charge.c) Whether plan t's needs fit cq's quota now: above nominal only
 * when allow_borrow. */
bool queue_need_fits(const queue_t *q, uint32_t cq, const try_t *t, bool allow_borrow);
/* Sets q->cycle_short (and answers false) when an allocation failed. */
bool queue_preemption_targets(queue_t *q, uint32_t wid, const try_t *t);
/* Whether a victim chosen earlier in this cycle (q->gone) would have been
 * one of wid's: then wid lost to another preemptor on the same victims. */
bool queue_gone_overlap(const queue_t *q, uint32_t wid, const try_t *t);
void queue_try_from_plan(const queue_t *q, uint32_t wid, try_t *t);
bool queue_plan_fits_after_evictions(queue_t *q, uint32_t wid, const try_t *t, bool allow_borrow);
int queue_plan_keep(queue_t *q, uint32_t wid, const try_t *t); /* GPUQ_ENOMEM */
void queue_plan_drop(queue_t *q, uint32_t wid);

/* ---- usage.c ---- */

/* Usage ledger: open an admitted workload's interval; close it
 * when its quota is freed; close intervals of workloads not holding quota
 * after a restore. */
void queue_usage_open(queue_t *q, uint32_t wid, int64_t now);
void queue_usage_close(queue_t *q, const wl_t *w, int64_t now);
void queue_usage_reconcile(queue_t *q);

/* ---- budget.c: budgets (docs/economics.md) ---- */

/* Evaluate the budgets when budget_interval_ms has passed since the last
 * evaluation (or one is stale), reporting changes into the call's result. */
void queue_budgets_tick(queue_t *q, int64_t now);
/* The earliest `now` at which queue_budgets_tick evaluates, INT64_MAX with
 * no budget. */
int64_t queue_budgets_next(const queue_t *q);
/* Budget record encode / apply (key after the type; GPUQ_ENOTFOUND: none). */
int queue_budget_encode(const queue_t *q, const char *key, gpuq_wr_t *w);
int queue_budget_apply(queue_t *q, const char *key, gpuq_rd_t *r, gpuq_diag_t *diag);
/* After a restore: every LocalQueue's standing from the budgets' states. */
void queue_budgets_restored(queue_t *q);
void queue_budgets_free(queue_t *q);
/* A budget's explanation for a held or lowered LocalQueue into buf: with
 * figures (used of limit) for the explanation, without for the coarse status
 * (nothing in it changes while the budget stays over). */
void queue_budget_explain(const queue_t *q, uint32_t lq, bool figures, char *buf, size_t cap);

/* Whether LocalQueue lq's workloads are lowered (over a Lower budget). */
static inline bool queue_lq_lowered(const queue_t *q, uint32_t lq)
{
	return q->lqs[lq].standing == QUEUE_LQ_LOWERED;
}

static inline bool queue_lq_held(const queue_t *q, uint32_t lq)
{
	return q->lqs[lq].standing == QUEUE_LQ_HELD;
}

/* ---- protect.c: minimum runtime and idle GPUs ---- */

/* A workload's minimum runtime: its CQ's or its priority's, the longer. */
int64_t queue_wl_min_runtime(const queue_t *q, const wl_t *w);
/* Whether admitted workload v may not be preempted at the core's `now`
 * (q->last_now): its minimum runtime is not served. Notes it (q->prot_seen)
 * when it is. */
bool queue_wl_protected(queue_t *q, const wl_t *v);
/* Start watching an admitted workload (its minimum runtime's end). */
void queue_prot_admitted(queue_t *q, uint32_t wid);
/* Minimum runtimes ended by `now`: their cohorts are looked at again. */
void queue_prot_expire(queue_t *q, int64_t now);
/* Tick: report idle workloads, reclaim with Preempt. GPUQ_ENOMEM. */
int queue_idle_tick(queue_t *q, int64_t now);
/* The earliest `now` at which protect.c has work, or INT64_MAX. */
int64_t queue_econ_next(const queue_t *q);
/* After a restore: the minimum-runtime timers of the admitted workloads. */
void queue_prot_restored(queue_t *q);
/* Admitted workload wid's epoch moved (its pods became Ready): its minimum
 * runtime's end, its idle spell's deadline and its idle watch follow it. */
void queue_econ_rearm(queue_t *q, uint32_t wid);

#endif

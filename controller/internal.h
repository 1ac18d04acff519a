/*
 * controller/internal.h: shared by the files of controller/ only; the
 * module's interface is controller/controller.h.
 *
 * Files, bottom up (each calls only files before it, but for the circle
 * of pods.c, actuate.c and release.c, which call each other; scripts/
 * arrows.py allows a circle of at most 3): map.c (a string-keyed hash map,
 * and the set of namespaces a policy change reaches), informer.c (watch
 * threads, the event queue, slimming and pruning objects), workload.c
 * (watched objects decoded and resolved, pod sets), cache.c (what every
 * file asks of the cache: a workload's Job or pod group, the touched and
 * explain lists, the core's clock, an object's path), swriter.c (the status
 * writer thread), elect.c (the Lease thread: renewals and the fence),
 * nodes.c (Nodes fed to the core, the use of Pods gpuq did not admit on
 * them, cordon Events; informer.c calls its decode, the one arrow up),
 * sets.c (StatefulSets and LeaderWorkerSets, admitted by gates on their
 * Pods), pods.c (pod groups, Pods of Jobs), actuate.c (patches and Events
 * that bring a workload in line with the core), release.c (a held parent's
 * patches, per kind), jobs.c (parents held by their suspend field into
 * workloads of the core), econ.c (budgets, idle reclaim, predicted starts),
 * status.c (queue status, workload status annotations), podmap.c (the
 * pods' LocalQueues for DCGM), snapshot.c (cached policy objects into a
 * policy snapshot), usage.c (the usage ledger's checkpoint ConfigMaps),
 * loop.c (the controller thread: events, cycles, persistence, following
 * the Lease; the module's interface). Each declaration below names its
 * file.
 */
#ifndef GPUQ_CONTROLLER_INTERNAL_H
#define GPUQ_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <jansson.h>

#include "controller/controller.h"
#include "policy/policy.h"
#include "qmetrics/qmetrics.h"
#include "engine/engine.h"
#include "workload/workload.h"

/* ---- map.c: string keys to pointers, open addressing ---- */

typedef struct swriter controller_swriter_t;
typedef struct patcher controller_patcher_t;

/* patcher.c: connections (and threads) that send one pass's release patches
 * at once. */
#define CONTROLLER_PATCHERS 4

/* One patch of a batch: what to send, and (once sent) its answer. */
typedef struct {
	char path[KUBE_URL_MAX]; /* the object */
	kube_patch_t kind;
	json_t *body;	       /* owned */
	kube_response_t reply; /* the answer's bytes (owned; empty on an error) */
	gpuq_diag_t diag;      /* ... the error */
	int rc;		       /* ... its code */
	char *uid;	       /* the parent it patches (owned) */
	const char *what;      /* for the log: "released" */
	uint64_t status_h;     /* its status as the patch carries it (controller_map_hash | 1) */
} controller_patch_t;

/* One slot (16 bytes: a map of 100,000 Jobs has 262,144 of them). */
/* One slot (16 bytes: a map of 100,000 Jobs has 262,144 of them). */
typedef struct {
	char *key;   /* owned unless borrowed; NULL: empty slot; a deleted slot
			(tombstone) holds map.c's marker, never returned */
	void *value; /* caller's */
} controller_map_slot_t;

typedef struct {
	controller_map_slot_t *slots; /* power-of-two table */
	uint8_t *borrowed;	      /* a bit per slot: its key is the caller's
					 (controller_map_put_borrowed); NULL until
					 the first such key */
	size_t cap;		      /* slots */
	size_t n;		      /* live keys */
	size_t used;		      /* live + tombstones */
} controller_map_t;

/* FNV-1a of a string (the map's hash, also used to remember texts written). */
uint64_t controller_map_hash(const char *s);
/* FNV-1a of n bytes (usage.c: a checkpoint part already written). */
uint64_t controller_map_hash_bytes(const void *p, size_t n);
void controller_map_init(controller_map_t *m);
/* Free the table and keys (values are the caller's: free them first). */
void controller_map_deinit(controller_map_t *m);
void *controller_map_get(const controller_map_t *m, const char *key);
/* Insert or replace; *old (may be NULL) gets the replaced value or NULL.
 * GPUQ_ENOMEM, GPUQ_ELIMIT past CONTROLLER_OBJECTS_MAX. */
int controller_map_put(controller_map_t *m, const char *key, void *value, void **old);
/* controller_map_put of a new key that is not copied: key lives as long as
 * the entry (a string inside value, freed after controller_map_del). An
 * existing key keeps its own. */
int controller_map_put_borrowed(controller_map_t *m, const char *key, void *value, void **old);
/* Make a borrowed key's entry borrow key instead (the same text, another
 * copy: the former one may go after this returns). Nothing when key is
 * absent or its entry owns its key. */
void controller_map_rekey(controller_map_t *m, const char *key);
/* Remove key; returns its value or NULL. */
void *controller_map_del(controller_map_t *m, const char *key);
/* Iterate: start at *pos = 0; returns the next live slot or NULL. */
controller_map_slot_t *controller_map_next(const controller_map_t *m, size_t *pos);

/* ---- informer.c: the watched collections and the event queue ---- */

typedef enum {
	CONTROLLER_RES_NAMESPACES = 0,
	CONTROLLER_RES_LIMITRANGES,
	CONTROLLER_RES_RESOURCEQUOTAS,
	CONTROLLER_RES_PRIORITYCLASSES,
	CONTROLLER_RES_CLAIMTEMPLATES,
	CONTROLLER_RES_RUNTIMECLASSES, /* node.k8s.io RuntimeClasses: the overhead of Pods */
	CONTROLLER_RES_FLAVORS,
	CONTROLLER_RES_CLUSTERQUEUES,
	CONTROLLER_RES_LOCALQUEUES,
	CONTROLLER_RES_COHORTS,
	CONTROLLER_RES_KUEUE_FLAVORS,
	CONTROLLER_RES_KUEUE_CLUSTERQUEUES,
	CONTROLLER_RES_KUEUE_LOCALQUEUES,
	CONTROLLER_RES_KUEUE_COHORTS,
	CONTROLLER_RES_TOPOLOGIES,	 /* gpuq.dev Topologies (topology-aware flavors) */
	CONTROLLER_RES_KUEUE_TOPOLOGIES, /* kueue.x-k8s.io v1beta2 Topologies */
	CONTROLLER_RES_NODES,		 /* Nodes (nodes.c): neither policy nor workloads,
					    decoded on the watch thread */
	CONTROLLER_RES_POLICY_COUNT,	 /* (the collections of informer.c's table) */
	/* then one collection per workload kind, from its row
	 * (workload_integration): CONTROLLER_RES_OF(kind); a kind whose row
	 * names no watch_path (none, a Deployment) is a collection never
	 * watched, never listed */
	CONTROLLER_RES_WORKLOADS = CONTROLLER_RES_POLICY_COUNT,
	CONTROLLER_RES_COUNT = CONTROLLER_RES_WORKLOADS + WORKLOAD_KIND_COUNT
} controller_res_t;

/* The collection of workload kind k's objects. */
#define CONTROLLER_RES_OF(k) ((controller_res_t)(CONTROLLER_RES_WORKLOADS + (int)(k)))

typedef struct {
	const char *name;     /* for logs: "jobs" (a workload kind's: its row's resource) */
	const char *path;     /* collection path; NULL: not watched (a workload kind whose
				 row names none) */
	bool optional;	      /* a CRD's, which may not be served (not installed yet, or
				 removed): watched while it is (KUBE_EV_UNSERVED) */
	bool policy;	      /* feeds the policy snapshot */
	workload_kind_t kind; /* the workload its objects are, decoded on the watch
				 thread (none, 0: policy objects); its row
				 names the collection to the webhook (policy_watch_has) */
} controller_res_info_t;

/* What collection r is: the policy kinds' from informer.c's table, a
 * workload kind's from its row. */
controller_res_info_t controller_res_at(int r);

/* The namespaces a policy change may have changed the workloads of (their
 * labels, LimitRanges, ResourceQuotas, claim templates, or which
 * ClusterQueue selects them), so only their workloads are resolved again;
 * `all` when the change reaches every namespace or too many were named. */
/* Bytes of a release's "<pod set>:resource=flavor,..." pairs (annotation
 * gpuq.dev/flavors): 18 pod sets of a few resources each, with room. */
#define CONTROLLER_FLAVORS_MAX 8192
#define CONTROLLER_NSSET_MAX 32
typedef struct {
	bool all;			      /* every namespace */
	size_t n;			      /* entries in names */
	char names[CONTROLLER_NSSET_MAX][64]; /* namespace names (at most 63 bytes) */
} controller_nsset_t;

/* (map.c) Add ns (len bytes) to s; past CONTROLLER_NSSET_MAX names, or a name too
 * long, s becomes `all`. */
void controller_nsset_add(controller_nsset_t *s, const char *ns, size_t len);
/* Whether s holds ns (NULL: every namespace). */
bool controller_nsset_has(const controller_nsset_t *s, const char *ns);

/* One watch event on its way to the controller thread. A policy object
 * comes as jansson's tree; an object of a workload collection (Jobs, Pods)
 * comes decoded, once, on the watch thread (controller_informer_event). */
typedef struct {
	controller_res_t res;	      /* which collection */
	kube_event_type_t type;	      /* ADDED, MODIFIED, DELETED, RESET, SYNCED */
	json_t *object;		      /* a policy object: owned reference (NULL otherwise) */
	workload_t *wl;		      /* a workload object, decoded without a policy (owned;
					 NULL for RESET/SYNCED and when it did not decode) */
	char *uid;		      /* a workload object that did not decode: its
					 metadata.uid (owned; NULL when it has none); a
					 Node's: its metadata.name */
	char *bad;		      /* ... and why (owned), logged once by the controller */
	char *bad_rv;		      /* ... and its metadata.resourceVersion (owned; NULL
					 when it has none): what a stop of it is guarded by */
	uint64_t arrived_ns;	      /* gpuq_mono_ns when the watch thread got it (before
					 decoding): a release's "queued" stage starts here */
	struct controller_node *node; /* a Node, decoded (owned; NULL otherwise,
					 and when it did not decode: bad says why) */
} controller_cevent_t;

/* Free what ev owns and clear it. */
void controller_cevent_deinit(controller_cevent_t *ev);

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;   /* the controller thread waits on it */
	pthread_cond_t nonfull;	   /* watch threads wait on it */
	controller_cevent_t *ring; /* CONTROLLER_EVENTS_MAX slots */
	size_t head, n;		   /* ring position and count */
	bool kick;		   /* wake the controller without an event */
} controller_equeue_t;

int controller_equeue_init(controller_equeue_t *q);
void controller_equeue_deinit(controller_equeue_t *q);
/* Push (waits while full, unless *stop). Steals ev->object. */
void controller_equeue_push(controller_equeue_t *q, const controller_cevent_t *ev,
			    const atomic_bool *stop);
/* Pop up to cap events into out, waiting until one arrives, a kick, or
 * deadline_ms (monotonic) passes. Returns how many. */
size_t controller_equeue_pop(controller_equeue_t *q, controller_cevent_t *out, size_t cap,
			     int64_t deadline_ms);
/* Wake the controller thread. */
void controller_equeue_kick(controller_equeue_t *q);

typedef struct {
	struct controller *ctl; /* owner */
	controller_res_t res;	/* what this thread watches */
	kube_client_t *client;	/* its own connection */
	pthread_t thread;	/* running while started */
	bool started;		/* thread was created */
} controller_watcher_t;

/* The event the controller takes for kube event ev of collection res:
 * policy objects slimmed (controller_slim), workload objects decoded with
 * cfg's GPU names (workload_decode; a refusal gives uid and bad). Runs on
 * the watch thread. */
void controller_informer_event(controller_res_t res, const webhook_config_t *cfg,
			       const kube_event_t *ev, controller_cevent_t *out);

/* Start one watch thread per collection (an optional one that is not
 * served says so, KUBE_EV_UNSERVED, and is listed once it is). */
int controller_informer_start(struct controller *c, gpuq_diag_t *diag);
void controller_informer_stop(struct controller *c);

/* ---- the controller ---- */

typedef enum {
	CONTROLLER_JOB_UNMANAGED = 0, /* not gpuq's (no GPU, no queue label, not suspended) */
	CONTROLLER_JOB_MANAGED = 1,   /* a workload of the core */
} controller_job_kind_t;

/* One cached parent object of a kind held by its suspend field (a Job, a
 * JobSet): the latest object the watch showed, decoded once (on the watch
 * thread) and resolved against the policy in force: everything the core,
 * actuation and status read (workload_t), no JSON kept. (Named controller_job_t for
 * its first kind.) */
typedef struct {
	uint8_t res;	      /* its collection, a controller_res_t (its kind's:
				 CONTROLLER_RES_OF) */
	bool uid_owned;	      /* uid is its own copy (no workload decoded yet, or the
				 object's uid changed under it) */
	bool suspended;	      /* spec.suspend */
	bool admitted;	      /* carries WEBHOOK_ANNOT_ADMITTED */
	bool in_core;	      /* added to the core */
	bool finished_seen;   /* Complete or Failed seen and reported to the core */
	bool ready_seen;      /* all pods Ready reported since the last admission */
	bool bad;	      /* decode failed: logged once, kept out of the core */
	bool touched;	      /* in the controller's touched list */
	bool explain_queued;  /* in the controller's explain list */
	bool released_in;     /* in its namespace's released list (c->released) */
	uint32_t released_at; /* its index there */
	bool gone;	      /* deleted (or not relisted) while pods of its release
				 still run: its quota held until the last is gone
				 (jobs.c, forget; pods.c, jobpod_forget) */
	int64_t gone_ms;      /* monotonic, when its deletion was seen (gone) */
	uint32_t gen;	      /* LIST generation it was last seen in (c->gen's low 32
				 bits: only compared with the current one) */
	workload_t *wl;	      /* the Job, decoded and resolved (owned; NULL until
				 one decodes) */
	const char *uid;      /* metadata.uid: wl's, borrowed (not copied again), as
				 the jobs map's key borrows it; its own copy while
				 uid_owned. Moves with each new wl
				 (controller_job_take): hold j, not this pointer,
				 across one */
	uint64_t status_hash; /* controller_map_hash | 1 of the gpuq.dev/status written last, or
				 seen on the Job when first cached (0: none) */
	char *rq_wait;	      /* why a ResourceQuota holds its release (owned; NULL:
				 none): logged once, shown as its status */
	int64_t requeued_ms;  /* core time it last went back to the queue after an
				 eviction (0: never seen here): where its next
				 wait for admission starts */
} controller_job_t;

/* A cached parent's unfinished GPU Pods as the Pods watch shows them
 * (pods.c; every parent above a Pod counts it). */
typedef struct {
	int32_t pods; /* how many */
	int64_t gpus; /* the GPUs they hold */
} controller_podcount_t;

/* The GPU resource names in force (--gpu-resource), as the workload
 * layer reads them: one place for the controller's callers. */
#define CONTROLLER_GPU_CFG(c)                                                                      \
	((workload_config_t){(c)->o.review_cfg.gpu_resources, (c)->o.review_cfg.n_gpu_resources})

/* j's metadata.namespace and metadata.name: its workload's (NULL while
 * none decoded). */
static inline const char *controller_job_ns(const controller_job_t *j)
{
	return j->wl ? j->wl->namespace_ : NULL;
}

static inline const char *controller_job_name(const controller_job_t *j)
{
	return j->wl ? j->wl->name : NULL;
}

typedef struct {
	json_t *obj;	 /* the object (owned reference) */
	uint64_t gen;	 /* LIST generation it was last seen in */
	uint64_t digest; /* of what the policy reads: status and bookkeeping left out */
	bool refused;	 /* the policy decoder refused it (logged once) */
} controller_pobj_t;

/* A workload made of Pods: one plain GPU Pod (key = its uid) or a pod group
 * (key "group:<namespace>/<group name>"). */
typedef struct {
	char *key;		  /* the workload's uid in the core (owned) */
	bool group;		  /* a pod group (else one plain Pod) */
	int32_t total;		  /* pods the workload needs (pod-group-total-count; 1) */
	int32_t reported;	  /* group members the core has been told of */
	controller_map_t members; /* Pod uid -> member (pods.c) */
	bool bad;		  /* could not enter the core: logged once */
	bool touched;		  /* in the controller's touched list */
	bool explain_queued;	  /* in the controller's explain list */
	uint64_t status_hash;	  /* controller_map_hash | 1 of the last gpuq.dev/status written */
	char *set;		  /* a set's group (sets.c): the set's key ("sts:ns/name",
				     "lws:ns/name"; owned); NULL for a plain Pod or pod group.
				     Its total and pod sets are the set's; it stays when its
				     Pods go (they come back gated) */
	int64_t first;		  /* a set's group: a StatefulSet slice's first ordinal, an
				     LWS group's index */
	int32_t done_gone;	  /* a pod group: members seen Succeeded whose Pods are
				     gone since (done all the same) */
	bool unretriable;	  /* a pod group: a member said
				     kueue.x-k8s.io/retriable-in-group "false" */
} controller_pgroup_t;

struct controller {
	controller_opts_t o;   /* options (strings borrowed) */
	engine_t *e;	       /* the core, its policy and the LMDB store; no core
				  until the first snapshot */
	kube_client_t *client; /* the controller thread's connection */
	controller_watcher_t watchers[CONTROLLER_RES_COUNT];
	bool unserved[CONTROLLER_RES_COUNT]; /* the apiserver does not serve it (its
						watch said KUBE_EV_UNSERVED and has
						listed nothing since) */
	bool listed[CONTROLLER_RES_COUNT];   /* first LIST complete (while served) */
	controller_equeue_t events;	     /* watch threads -> controller thread */
	atomic_bool stop;		     /* every thread stops when set */
	pthread_t thread;		     /* the controller thread */
	bool running;			     /* thread started */
	bool stopped;			     /* controller_stop done (the owner's thread only) */

	/* The Lease (elect.c). The fence is read by every thread; the rest is
	 * the Lease thread's but for what lease_mu guards. */
	kube_fence_t *fence;	       /* held while the Lease is (with the margin);
					  stopped by controller_stop (owned) */
	kube_client_t *lease_client;   /* the Lease thread's connection */
	pthread_t lease_thread;	       /* renews every LEASE_RETRY_MS */
	bool lease_running;	       /* lease_thread started */
	pthread_mutex_t lease_mu;      /* guards lease_seen and lease_rounds */
	pthread_cond_t lease_cv;       /* signalled after every round */
	kube_lease_state_t lease_seen; /* the last round's answer (holder, transitions) */
	uint64_t lease_rounds;	       /* rounds done (successful or not) */

	controller_map_t
	    objs[CONTROLLER_RES_COUNT];	    /* policy objects by ns/name -> controller_pobj_t * */
	uint64_t gen[CONTROLLER_RES_COUNT]; /* LIST generation: bumped by each RESET */
	uint64_t pods_gen;		    /* the Pods cache's LIST generation
					       (pods.c): bumped by each RESET of
					       the collection it holds */
	controller_map_t jobs;		    /* uid -> controller_job_t * */
	controller_map_t released;	    /* namespace -> controller_released_t *: its
					       cached Jobs admitted and not suspended
					       (cache.c; rq_allows reads it) */
	controller_map_t groups;	    /* workload key -> controller_pgroup_t * (pods.c) */
	controller_map_t sets;		    /* set key -> set_t * (sets.c) */
	controller_map_t pod_group;	    /* Pod uid -> its workload key (char *, owned) */
	controller_map_t pods_early;	    /* Pod uid -> workload_t * (owned): a Pod seen before
				       the first policy, kept for controller_pods_resync */
	controller_map_t job_pods;	    /* Pod uid -> jobpod_t * (pods.c): unfinished GPU Pods
			       of Jobs */
	controller_map_t pods_noted;	    /* Pod uid -> (void *)1: the held parents' Pods
				       whose events this batch applied (pods.c), so
				       the webhook's ledger forgets one that came and
				       went between two sets (owners.c) */
	controller_map_t job_pod_count;	    /* Job uid -> controller_podcount_t * (pods.c): how
				       many of those each Job has, and their GPUs */
	size_t rq_held;			    /* Jobs whose release a ResourceQuota holds (rq_wait) */
	bool policy_dirty;		    /* a policy object changed */
	uint32_t policy_res_changed;	    /* ... bit r: one of collection r (since the
					       last snapshot) */
	controller_nsset_t policy_ns_changed; /* ... the namespaces of the namespaced ones
						 (and the Namespaces) */
	policy_t *policy;		      /* the snapshot in force (one reference; the
						 engine holds its own) */
	uint64_t policy_generation;	      /* snapshots built */
	bool check_term;		      /* just took the Lease: is the store stale? */
	uint32_t commit_failures;	      /* commits failed in a row (loop.c) */
	uint64_t step_commit_ns;	      /* this pass of the loop: time in commits */
	uint32_t step_released;		      /* ... workloads released (a Job unsuspended,
						 a Pod ungated): its stages are observed
						 (qmetrics_release_stages) */
	int64_t commit_retry_ms;	      /* no commit before then (monotonic) */
	atomic_bool gave_up;		      /* the store kept failing: never lead again
						 (set by the controller thread, read by
						 the Lease thread) */
	bool core_dirty;		      /* run a cycle soon */
	bool step_admitted;		      /* the step's cycle admitted (its metric) */
	int64_t last_cycle_ms;		      /* monotonic */
	int64_t epoch_mono_ms;		      /* monotonic at start */
	int64_t epoch_wall_ms;		      /* wall clock at start: core time = wall */

	char **touched; /* uids to compare and act on after the next persist */
	size_t n_touched, cap_touched;
	int64_t next_sweep_ms; /* next compare of every Job (monotonic) */
	int64_t next_trim_ms;  /* next malloc_trim (monotonic) */
	int64_t slow_said_ms;  /* a slow pass last logged (monotonic) */
	char **settling;       /* uids of released parents deleted within
				  CONTROLLER_GONE_SETTLE_MS (owned; jobs.c) */
	size_t n_settling, cap_settling;
	int64_t settle_next_ms; /* the first of them to settle (INT64_MAX: none) */
	char **explain;		/* uids whose gpuq.dev/status to refresh */
	size_t n_explain, cap_explain;
	controller_swriter_t *swriter; /* queue status patches, off this thread */
	controller_patcher_t *patcher; /* a pass's releases, at once (NULL: one by one) */
	controller_patch_t *batch;     /* ... the releases this pass decided */
	size_t n_batch, cap_batch;
	int64_t status_next_ms; /* next queue status pass (monotonic) */

	qmetrics_t *metrics;	 /* queue metrics for /metrics (owned) */
	int64_t metrics_next_ms; /* next publish (monotonic) */
	int64_t podmap_next_ms;	 /* next hand-over of the pods' LocalQueues (monotonic) */
	bool podmap_logged;	 /* a failed hand-over was logged */
	bool podmap_sent;	 /* a map was handed over while leading */
	bool owners_logged;	 /* a failed owners hand-over was logged */

	atomic_bool synced;	  /* every watch listed and a snapshot published */
	atomic_bool leader;	  /* the controller thread acts as leader (written by it
				     from the fence at the start of each pass) */
	kube_lease_state_t lease; /* the controller thread's copy of lease_seen */
	uint64_t lease_term;	  /* the fence's term this thread leads in */

	bool usage_merged;     /* leading, and the usage checkpoints are merged */
	int64_t usage_next_ms; /* next merge try or checkpoint write (monotonic) */
	uint64_t usage_written[LEDGER_CKPT_PARTS_MAX]; /* hash | 2 of each part last
							  written; 1 emptied; 0 unknown */
	bool usage_present[LEDGER_CKPT_PARTS_MAX];     /* the ConfigMap exists */
	uint32_t usage_failures;		       /* merges or writes failed in a row */

	/* GPU economics (econ.c) */
	struct predict_history *econ_hist; /* the LocalQueues' finished runtimes */
	controller_map_t econ_runs;	   /* uid -> run_t: admitted workloads seen */
	int64_t econ_scan_ms;		   /* next history scan (monotonic) */
	int64_t econ_predict_ms;	   /* next prediction pass (monotonic) */
	char **econ_pred;		   /* the uids the last pass gave a start or a
					      status line (owned): the next resets
					      those it does not list */
	size_t econ_pred_n;		   /* ... entries */
	struct econ_runner *econ_run;	   /* the thread that runs passes forward
					      (NULL until the first pass) */
	uint64_t econ_util_seen;	   /* the last utilization scrape taken */

	/* Nodes (nodes.c) */
	controller_map_t nodes;	   /* name -> node_rec_t: the Nodes the watch shows */
	controller_map_t node_use; /* name -> node_use_t: what Pods gpuq did not admit
				      use there (a Node not seen yet included) */
	controller_map_t pod_use;  /* Pod uid -> pod_use_t: each counted Pod's node
				      and request */
	uint64_t nodes_gen;	   /* the Nodes' LIST generation: bumped by each RESET */
	uint64_t nodes_fed;	   /* NODE_SETs the core took (a test reads it) */
	uint64_t cordons_said;	   /* cordon Events decided (a test reads it) */
};

/* cache.c: what every file asks of the cache (it calls none of them). */
/* The core's clock: wall milliseconds, never decreasing. (The controller's
 * own timers read base's gpuq_mono_ms.) */
int64_t controller_now(struct controller *c);
/* The cached Job of a workload uid, or NULL. */
controller_job_t *controller_job(struct controller *c, const char *uid);
/* The pod group (plain Pods, or a set's group) of a workload key, or NULL. */
controller_pgroup_t *controller_group(struct controller *c, const char *key);
/* Act on job j (or on the workload with key) after the next persist. */
void controller_touch(struct controller *c, controller_job_t *j);
void controller_touch_key(struct controller *c, const char *key);
/* Make wl (decoded and resolved; taken) j's object, the former one freed;
 * the first time, the status it carries is taken as written (what the
 * webhook at creation or an earlier leader wrote is not written again while
 * it still says where the workload stands). */
void controller_job_set(controller_job_t *j, workload_t *wl);
/* A namespace's cached Jobs that are admitted and not suspended (released):
 * what the ResourceQuota check at a release counts (actuate.c, rq_allows),
 * kept as each Job's object is taken and dropped, so that check walks the
 * namespace's released Jobs, not every cached one. */
typedef struct {
	struct {
		controller_job_t *job; /* borrowed from c->jobs */
	} * v;			       /* the Jobs */
	uint32_t n;		       /* entries */
	uint32_t cap;		       /* allocated */
} controller_released_t;
/* Job j's place in c->released after its object changed (controller_job_take
 * calls it): in its namespace's list when released, out of it otherwise.
 * Out of memory: left out, and logged (the check then counts fewer pods of
 * others, as the apiserver, which charges pods at their creation, would). */
void controller_released_note(struct controller *c, controller_job_t *j);
/* Job j out of c->released (before it is freed). */
void controller_released_drop(struct controller *c, controller_job_t *j);
/* Free c->released (the Jobs are c->jobs'). */
void controller_released_free_all(struct controller *c);
/* controller_job_set for j in c's jobs map: j->uid and the map's key move
 * to wl's uid (the same text) before the former object is freed; an object
 * whose uid is not j's (the name was reused) is cached all the same, j
 * keeping its own copy of its uid (today's key). */
void controller_job_take(struct controller *c, controller_job_t *j, workload_t *wl);
/* The status_hash of the gpuq.dev/status a workload carries (controller_map_hash | 1),
 * 0 without one. */
uint64_t controller_status_seen(const workload_t *wl);
/* Where j's pod sets are: j's own workload, or, for a kind whose pod sets
 * are its child's (a TrainJob), the cached child's (its JobSet); NULL
 * while that child is not seen. */
const workload_t *controller_jobs_podsets(struct controller *c, const controller_job_t *j);
/* Queue the workload with key uid for a status write (status.c writes). */
void controller_status_note(struct controller *c, const char *uid);
/* The API path of an object of kind k ("/apis/batch/v1/namespaces/ns/jobs/n")
 * into out. GPUQ_EINVAL when a name does not escape into cap. */
int controller_object_path(workload_kind_t k, const char *ns, const char *name, char *out,
			   size_t cap);

/* "namespace/name" or "name" of an object ("" without a name). */
void controller_obj_key(const json_t *obj, char *out, size_t cap);

/* snapshot.c: apply a policy-object event to the cache. */
void controller_snapshot_apply(struct controller *c, const controller_cevent_t *ev);
/* Give a fresh core's tenants that have no history the decayed usage their
 * LocalQueue's status shows (a former leader wrote it). */
void controller_snapshot_seed_usage(struct controller *c);

/* Build a snapshot from the cache, naming the workload collections watched
 * now (listed and served: policy_watch_has, what the webhook may hold); on
 * success replace c->policy (and the webhook's), rebuild or create the core
 * (kept as it is when no policy object changed, only what is watched).
 * Errors are logged; the previous snapshot stays. */
int controller_snapshot_rebuild(struct controller *c);

/* jobs.c: a Jobs (or JobSets) event into the cache and the core (takes
 * ev->wl). */
void controller_jobs_apply(struct controller *c, controller_cevent_t *ev);
/* Bring the workload of every Job in a namespace of only (NULL: all) into
 * the core again, resolved against the policy in force (after a snapshot
 * change). */
void controller_jobs_resync(struct controller *c, const controller_nsset_t *only);
void controller_jobs_free_all(struct controller *c);
/* The last unfinished pod of Job uid went (pods.c): a Job deleted while its
 * pods ran leaves the core now, and so does one scaled to no pods. */
void controller_jobs_pods_gone(struct controller *c, const char *uid);
/* Released parents deleted at least CONTROLLER_GONE_SETTLE_MS ago leave
 * the cache (and their workloads the core) once no pod of theirs runs;
 * the monotonic time of the next such end (INT64_MAX: none waits). */
int64_t controller_jobs_settle(struct controller *c);

/* loop.c: one event from the queue into the caches (frees what it owns). */
void controller_handle(struct controller *c, controller_cevent_t *ev);

/* workload.c: resolve a decoded workload against the policy in force
 * (workload_resolve). */
int controller_resolve(struct controller *c, workload_t *w, gpuq_diag_t *diag);
/* An object the apiserver answered a patch with (its bytes, len of them),
 * decoded as a watch event's object is and resolved: *w NULL on error,
 * else the caller's (workload_destroy). */
int controller_decode(struct controller *c, const char *text, size_t len, workload_t **w,
		      gpuq_diag_t *diag);
/* What the cluster showed of workload uid, one of the changes named by it
 * alone (ENGINE_CHANGE_PODS_READY, _FINISH, _DELETE, _EVICTED), applied to
 * the core at the controller's now (engine_change_apply): on GPUQ_OK a
 * cycle is due (core_dirty: what it freed or readied may admit others).
 * The engine's code (GPUQ_EINVAL without a core; GPUQ_ENOTFOUND, ...). */
int controller_wl_change(struct controller *c, engine_change_kind_t kind, const char *uid);
/* An admitted workload (core uid) whose object o now says wall-clock limit
 * max_exec_s (its label; 0: none) takes it at once, whatever its kind (a
 * Job, a plain Pod, a pod group by its eldest member, a set's group by its
 * set): docs/kinds.md, "Wall-clock limits". Logged, and its status says so;
 * nothing when it is not admitted (a queued one takes its spec whole) or the
 * limit is the same. */
void controller_limit_follow(struct controller *c, const char *uid, const workload_t *o,
			     int32_t max_exec_s);
/* A pod set's nodeSelector and tolerations as the JSON an object carries
 * them in (new references; NULL: no memory). */
json_t *controller_selector_json(const workload_podset_t *ps);
json_t *controller_tolerations_json(const workload_podset_t *ps);
/* A decoded pod set as one pod set of the core with `count` pods (b holds
 * the arrays ps points into). */
typedef struct {
	queue_request_t req[QUEUE_PODSET_RES_MAX];
	queue_label_t sel[QUEUE_SELECTORS_MAX];
	queue_toleration_t tol[QUEUE_SELECTORS_MAX];
} controller_podset_buf_t;
void controller_podset_from(const workload_podset_t *src, int32_t count, controller_podset_buf_t *b,
			    queue_podset_spec_t *ps);

/* sets.c: StatefulSets and LeaderWorkerSets, admitted by gates on their
 * Pods (the integration table's gate-family rows with a parent spec). A
 * StatefulSet is one workload of its replicas (a scale-up queues the new
 * replicas as a slice of their own or grows the newest while it queues,
 * adjacent admitted slices merge, a scale-down frees quota); an LWS is a
 * workload per group (leader and workers: two pod sets). Each is admitted
 * as soon as it is known, before its Pods exist (they appear one after
 * another: OrderedReady, LeaderReady), its quota read from the parent's
 * spec, and each Pod is let through as it appears. */
void controller_sets_apply(struct controller *c, controller_cevent_t *ev);
void controller_sets_resync(struct controller *c, const controller_nsset_t *only);
void controller_sets_free_all(struct controller *c);
/* The workload key of a set's Pod o into out: false when o is no set's
 * member (or its set's group cannot be told yet). */
bool controller_sets_member_key(struct controller *c, const workload_t *o, char *out, size_t cap);
/* Put set group g in the core when its set is known and managed. */
void controller_sets_group_add(struct controller *c, controller_pgroup_t *g);
/* Set group g's last member is gone: true when that ends it (out of the
 * core and freed: an LWS's surge group, Pods of no StatefulSet slice, a
 * group of a set gone); false when it stays (its controller makes its Pods
 * again, gated). */
bool controller_sets_group_empty(struct controller *c, controller_pgroup_t *g);
/* A Pod of set group g is gone and others remain: a StatefulSet slice cut
 * by a scale-down lets go of the quota of the Pods gone. */
void controller_sets_member_gone(struct controller *c, controller_pgroup_t *g);

/* pods.c */
/* Call fn with the namespace and name of each of g's Pods. */
void controller_pods_each_member(const controller_pgroup_t *g,
				 void (*fn)(void *ctx, const char *ns, const char *name),
				 void *ctx);
/* podmap.c: hand the LocalQueue of every workload holding quota to
 * c->o.pod_queues (leader only; a failure to build is logged, once). */
void controller_podmap_publish(struct controller *c);
/* Hand the webhook the held parents gpuq admitted and that run, as this
 * replica's cache holds them (controller/owners.c): after every batch of
 * watch events, leader or not. O(cached parents). Each names the workload
 * its Pods count against (the topmost held parent above it) with the GPUs
 * that workload was admitted for and those its unfinished Pods hold; a
 * parent under one that may run no Pods (deleted, suspended, finished, or
 * not cached) is left out. */
void controller_owners_publish(struct controller *c);
/* ... the set it hands over (finished), for tests: GPUQ_OK, GPUQ_ENOMEM. */
int controller_owners_build(struct controller *c, webhook_owners_t **out);
/* Whether Pod pod_uid is counted (the webhook's ledger asks; ctx: c). */
bool controller_owners_counted(void *ctx, const char *pod_uid);
void controller_pods_apply(struct controller *c, controller_cevent_t *ev);
/* The unfinished Pods the watch shows of the Job with uid job_uid (its
 * status.active counts them only at the Job controller's next status
 * write, about a second after the ResourceQuota charged them). */
int32_t controller_pods_of_job(const struct controller *c, const char *job_uid);
/* ... and the GPUs they hold (each Pod's effective request). */
int64_t controller_gpus_of_job(const struct controller *c, const char *job_uid);
void controller_pods_resync(struct controller *c, const controller_nsset_t *only);
void controller_pods_free_all(struct controller *c);
/* What controller_actuate_group does to a member of a workload of Pods. */
typedef enum {
	CONTROLLER_MEMBER_RELEASE = 1, /* admitted: the gate removed, its pod set's
					  flavors' placement added */
	CONTROLLER_MEMBER_FREE = 2,    /* the gate removed alone: a complete pod group
					  none of whose members asks for a GPU is not
					  the queue's */
	CONTROLLER_MEMBER_DELETE = 3,  /* preempted: deleted */
} controller_member_act_t;
/* What the core's state of g asks of its members now: fn(ctx, pod, podset,
 * act) for each member to act on (podset: the index of its pod set in the
 * workload). An admitted pod group releases a gated member only while its
 * pod set has room: one per Pod of the pod set not Failed and let through
 * (a replacement for a Failed member joins without queueing; an extra one
 * waits). Decides only: controller_actuate_group acts on it. */
void controller_pods_plan(struct controller *c, controller_pgroup_t *g,
			  void (*fn)(void *ctx, const workload_t *pod, size_t podset,
				     controller_member_act_t act),
			  void *ctx);
void controller_actuate_group(struct controller *c, controller_pgroup_t *g);
/* Hand text as every member's gpuq.dev/status to the status writer. */
void controller_pods_annotate(struct controller *c, controller_pgroup_t *g, const char *text);
/* actuate.c: pod set `podset` of a workload placed on its flavors: base_sel
 * and base_tols (borrowed; may be NULL) plus every flavor assigned to the pod
 * set's nodeLabels and tolerations, and on a topology-aware flavor the
 * labels of the domain its pods were placed in, widest level first, as far
 * as they share one (*sel, *tols new references); flavors
 * gets its CONTROLLER_ANNOT_FLAVORS pairs ("resource=flavor", prefixed
 * "<podset>:" when `prefixed`, for a workload of several pod sets).
 * GPUQ_ENOMEM. */
int controller_actuate_placement(struct controller *c, queue_wl_t id, size_t podset, bool prefixed,
				 const json_t *base_sel, const json_t *base_tols, json_t **sel,
				 json_t **tols, char *flavors, size_t cap);

/* actuate.c: pod set `podset` of a workload placed across domains of its
 * topology-aware flavor (its nodes part at some level, so the nodeSelector
 * of controller_actuate_placement pins only the levels they share): one
 * nodeSelectorTerm per domain its pods were placed in, naming its value at
 * each level below the shared ones (In), for a required nodeAffinity. A
 * new reference, or NULL: placed in one domain (the nodeSelector pins it
 * whole), on no or two topology-aware flavors, in more than
 * CONTROLLER_PIN_TERMS_MAX domains, on a node no longer known, or no
 * memory (docs/topology.md, "Pinning on release"). */
#define CONTROLLER_PIN_TERMS_MAX 64
json_t *controller_actuate_pin_terms(struct controller *c, queue_wl_t id, size_t podset);

/* ---- nodes.c: Nodes, for the topology-aware flavors (docs/topology.md) ----
 *
 * Each Node is decoded on its watch thread into a controller_node_t (never
 * its JSON: a real Node carries a long status.images list) and fed to the
 * core (ENGINE_CHANGE_NODE_SET) only when what the core reads of it changed:
 * heartbeats and status churn stop here (a NODE_SET marks every cohort
 * changed). The Pods gpuq did not admit are counted per node from the Pods
 * watch (a record per bound, unfinished Pod). Controller thread only, but
 * controller_node_decode (any thread). */
/* Labels a Node may carry (real ones: 20 to 60; with Node Feature Discovery a
 * few hundred); the core keeps the ones that matter (nodes.c). */
#define CONTROLLER_NODE_LABELS_MAX 1024
/* status.allocatable entries of a Node (real ones: under 15). */
#define CONTROLLER_NODE_RES_MAX 32
typedef struct controller_node {
	char *name;		 /* metadata.name */
	queue_label_t *labels;	 /* metadata.labels (strings owned) */
	size_t n_labels;	 /* entries */
	queue_request_t *alloc;	 /* status.allocatable in the core's units
				    (quota_qty_amount; names owned) */
	size_t n_alloc;		 /* entries */
	queue_taint_t *taints;	 /* spec.taints (strings owned) */
	size_t n_taints;	 /* entries (<= QUEUE_TAINTS_MAX) */
	bool cordoned;		 /* spec.unschedulable */
	bool not_ready;		 /* condition Ready is not "True" */
	int64_t not_ready_since; /* ... since its lastTransitionTime (ms since the
				    epoch; 0: none said, or no Ready condition) */
} controller_node_t;

/* Node obj (as a LIST or WATCH shows it) into *out (the caller's:
 * controller_node_destroy). GPUQ_EINVAL (no name, a field of the wrong
 * type, a bad quantity) and GPUQ_ELIMIT (more than
 * CONTROLLER_NODE_LABELS_MAX labels, CONTROLLER_NODE_RES_MAX allocatable or
 * QUEUE_TAINTS_MAX taints) with diag naming the node and the field;
 * GPUQ_ENOMEM. Any thread. */
int controller_node_decode(const jv_t *obj, controller_node_t **out, gpuq_diag_t *diag);
void controller_node_destroy(controller_node_t *n);
/* A Nodes watch event (its node taken). */
void controller_nodes_apply(struct controller *c, controller_cevent_t *ev);
/* Feed every cached Node whose spec for the core changed (after a
 * snapshot: which labels are kept depends on the policy); fresh: a core
 * just built without them (first build, fresh, reset): every one. */
void controller_nodes_feed(struct controller *c, bool fresh);
/* Pod o seen (ADDED, MODIFIED; o stays the caller's): counted on its node
 * when bound, unfinished and not admitted by gpuq (resolved here then). */
void controller_nodes_pod(struct controller *c, workload_t *o);
/* Pod uid gone; synced: the Pods relist is done (pods not seen since
 * c->pods_gen went are gone). */
void controller_nodes_pod_gone(struct controller *c, const char *uid);
void controller_nodes_pods_synced(struct controller *c);
void controller_nodes_free_all(struct controller *c);

/* Drop what gpuq never reads and cached policy objects would carry:
 * metadata.managedFields (about 60% of an object's parsed size) and
 * kubectl's last-applied-configuration annotation (a second copy of the
 * object for everything made with `kubectl apply`). Returns obj. */
json_t *controller_slim(json_t *obj);

/* usage.c: the usage ledger's checkpoints (controller_opts_t
 * usage_checkpoint_ms). step, while leading (after the term check): merge
 * every checkpoint once, then write this leader's every interval; lost, on
 * taking or losing the Lease: merge again before writing; final, when the
 * leader stops: write once more. */
void controller_usage_step(struct controller *c);
void controller_usage_lost(struct controller *c);
void controller_usage_final(struct controller *c);
/* (for test_controller) The ConfigMap holding part i (len bytes, copied as
 * base64 into binaryData.ledger; summary into data.summary): a new
 * reference, NULL without memory. When to try again after
 * c->usage_failures failures in a row: 2 s, doubling, at most the checkpoint
 * interval. */
json_t *controller_usage_cm_body(const struct controller *c, int i, const uint8_t *part, size_t len,
				 const char *summary);
int64_t controller_usage_retry_at(const struct controller *c, int64_t now);

/* elect.c: the Lease thread (leader election on; without it the fence is
 * held for good and there is no thread): one round (kube_lease_try on its
 * own connection) every LEASE_RETRY_MS; after a round that holds the Lease
 * the fence holds until kube_lease_deadline of the round's start, after one
 * that sees another holder it is dropped, after a failed one it runs out by
 * itself. wait_first blocks until the first round is done, or stop and wake
 * (controller thread, before it reads the cluster); follow copies the last
 * round into c->lease (controller thread); stop joins the thread (c->stop
 * set and the fence stopped first); once c->gave_up is set the thread
 * gives the Lease up (release) and takes it no more; release gives the Lease up when the
 * last round saw this replica hold it (after every writer has stopped). */
int controller_elect_start(struct controller *c, gpuq_diag_t *diag);
void controller_elect_wait_first(struct controller *c);
void controller_elect_wake(struct controller *c);
void controller_elect_follow(struct controller *c);
void controller_elect_stop(struct controller *c);
void controller_elect_release(struct controller *c);

/* swriter.c: the status writer thread (its own connection). submit keeps
 * the latest body per key (body is copied); the writer skips a body it has
 * already written (for the few queue keys). submit_once is the same but
 * remembers nothing once written (per-workload keys: the caller dedupes,
 * and keys of deleted objects must not pile up). event queues an Event about a Job (strings copied;
 * GPUQ_ELIMIT when SWRITER_EVENTS_MAX wait: dropped and counted). stop
 * joins the thread and frees everything, unsent work included. */
int controller_swriter_start(const kube_config_t *cfg, const kube_client_opts_t *o,
			     const char *instance, kube_fence_t *fence, controller_swriter_t **out,
			     gpuq_diag_t *diag);
/* Forget the bodies written (a new term: another leader may have written
 * its own since), so the next ones go out even when unchanged. */
void controller_swriter_forget(controller_swriter_t *w);
int controller_swriter_submit(controller_swriter_t *w, const char *key, const char *path,
			      const json_t *body);
int controller_swriter_submit_once(controller_swriter_t *w, const char *key, const char *path,
				   const json_t *body);
/* Patches waiting to be written (submit and submit_once). */
size_t controller_swriter_backlog(controller_swriter_t *w);
/* The status writer's backlog past which controller_status_jobs hands over no more
 * (what waits stays a uid in the controller's explain list, not a body). */
#define CONTROLLER_SWRITER_BACKLOG_MAX ((size_t)4 * CONTROLLER_SWRITER_WORKLOADS_PER_PASS)
#define CONTROLLER_SWRITER_WORKLOADS_PER_PASS                                                      \
	64 /* workload annotations written between two                                             \
	      passes over the queues' status */
int controller_swriter_event(controller_swriter_t *w, const char *ns, const char *name,
			     const char *uid, const char *type, const char *reason,
			     const char *action, const char *note);
/* controller_swriter_event about another kind of object (api_version, kind; ns "" for
 * a cluster-scoped one: its Event goes to "default"; uid may be NULL). */
int controller_swriter_event_ref(controller_swriter_t *w, const char *api_version, const char *kind,
				 const char *ns, const char *name, const char *uid,
				 const char *type, const char *reason, const char *action,
				 const char *note);
/* Stop (the fence it was given must be stopped first, or it may finish a
 * request already waiting on the limiter). NULL is fine. */
void controller_swriter_stop(controller_swriter_t *w);

/* patcher.c: CONTROLLER_PATCHERS fenced connections of cfg, a thread each.
 * run sends ps[0..n) at once (each answer in its rc, reply, diag) and
 * returns when all are answered; one caller at a time. stop joins the
 * threads (NULL is fine). */
int controller_patcher_start(const kube_config_t *cfg, const kube_client_opts_t *o,
			     kube_fence_t *fence, controller_patcher_t **out, gpuq_diag_t *diag);
void controller_patcher_run(controller_patcher_t *p, controller_patch_t *ps, size_t n);
void controller_patcher_stop(controller_patcher_t *p);

/* econ.c (docs/economics.md): step, while leading, after the cycle:
 * utilization readings into the core, the runtime history, a prediction
 * pass every o.predict_interval_ms; result: a tick's or cycle's budget
 * changes and idle reports as Events; status: the budget of ClusterQueue
 * (cq) or LocalQueue id into its status body st; free: at destroy. */
void controller_econ_step(struct controller *c);
/* Whether a prediction pass is running forward or its result waits for the
 * next controller_econ_step (tests and benches wait on it). */
bool controller_econ_busy(struct controller *c);
void controller_econ_result(struct controller *c, const queue_result_t *res);
void controller_econ_status(struct controller *c, json_t *st, bool cq, uint32_t id);
void controller_econ_free(struct controller *c);

/* status.c: queue status subresources; Job status annotations. */
void controller_status_queues(struct controller *c);
void controller_status_jobs(struct controller *c);
/* (for test_controller) The status of ClusterQueue cq / LocalQueue lq as
 * controller_status_queues writes it (conditions aside): a new reference, NULL when
 * the core has no such queue. */
json_t *controller_status_cq_body(struct controller *c, uint32_t cq);
json_t *controller_status_lq_body(struct controller *c, uint32_t lq);

/* actuate.c: compare the core's state of parent j with the object and patch
 * (release.c writes the patches). */
void controller_actuate_job(struct controller *c, controller_job_t *j);

/* release.c: a held parent's patches, for every kind the integration table
 * holds by its suspend field, as JSON Patches (RFC 6902: each pod set's
 * template addressed by its own path), each guarded by a test of the
 * resourceVersion decided on (a changed object answers 409/422 and is
 * compared again when the watch shows it). release: unsuspended, admitted,
 * each pod set's template given its flavors' nodeLabels and tolerations, the
 * templates' placement before kept in gpuq.dev/original-scheduling. suspend:
 * suspended, the admitted marks taken away. restore: the templates'
 * placement put back from that annotation. GPUQ_OK or the patch's error;
 * a release with a patcher (and no ResourceQuota in its namespace) is only
 * queued in the pass's batch (controller_actuate_flush sends it). */
int controller_release_parent(struct controller *c, controller_job_t *j, queue_wl_t id);
int controller_release_suspend(struct controller *c, controller_job_t *j);
int controller_release_restore(struct controller *c, controller_job_t *j);
/* The JSON Patches those send (new references; NULL without memory, or, for
 * restore, when the parent keeps no original placement): for
 * controller_release_parent, GPUQ_EAGAIN while a TrainJob's JobSet is not seen. */
int controller_release_parent_patch(struct controller *c, const controller_job_t *j, queue_wl_t id,
				    json_t **out);
/* wl's suspend patch, guarded by resourceVersion rv (NULL: wl's own; a
 * newer version that did not decode: controller/jobs.c). */
json_t *controller_release_suspend_patch(const workload_t *wl, const char *rv);
json_t *controller_release_restore_patch(const workload_t *wl);
/* Whether a suspended parent's pods are gone: a Job's status says none
 * active or terminating and its start time reset; a JobSet's child Jobs
 * (cached) say so each. */
bool controller_release_quiet(struct controller *c, const controller_job_t *j);
/* PATCH parent j (JSON or merge patch, body taken); the reply becomes the
 * cached object. */
int controller_patch_parent(struct controller *c, controller_job_t *j, kube_patch_t kind,
			    json_t *body, const char *what);
/* The releases of this pass (controller_release_parent batches them when
 * there is a patcher) sent at once, their answers taken as
 * controller_patch_parent takes one. */
void controller_actuate_flush(struct controller *c);
/* Add parent j's release patch (body taken) to this pass's batch; status_h:
 * the status it carries. A release of a namespace with ResourceQuotas
 * counts the ones batched before it (rq_allows: their pods are all to come).
 * GPUQ_ENOMEM, GPUQ_EINVAL (no path). */
int controller_patch_batch(struct controller *c, controller_job_t *j, kube_patch_t kind,
			   json_t *body, const char *what, uint64_t status_h);
/* Something that counts against namespace ns's ResourceQuotas changed (a
 * released Job's pods or status): touch the Jobs there whose release a
 * ResourceQuota holds, to be judged again (nothing to do while none is). */
void controller_actuate_rq_recheck(struct controller *c, const char *ns);
/* j's release is no longer held by a ResourceQuota (it went, or no longer
 * waits for release): forget why, and refresh its status. */
void controller_actuate_rq_clear(struct controller *c, controller_job_t *j);
/* The results of a cycle or tick: Events for admissions and evictions
 * (patches follow from controller_actuate_job). */
void controller_actuate_result(struct controller *c, const queue_result_t *res);

#endif

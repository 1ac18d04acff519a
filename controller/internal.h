/*
 * controller/internal.h: shared by the files of controller/ only; the
 * module's interface is controller/controller.h.
 *
 * Files, bottom up: map.c (a string-keyed hash map), informer.c (watch
 * threads and the event queue), snapshot.c (cached policy objects into a
 * policy snapshot), jobs.c (Jobs into workloads of the core), actuate.c
 * (patches and Events that bring a Job in line with the core), elect.c (the
 * Lease thread: renewals and the fence), loop.c (the controller thread:
 * events, cycles, persistence, following the Lease), usage.c (the usage
 * ledger's checkpoint ConfigMaps).
 */
#ifndef GPUQ_CONTROLLER_INTERNAL_H
#define GPUQ_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include <jansson.h>

#include "controller/controller.h"
#include "policy/policy.h"
#include "qmetrics/qmetrics.h"
#include "queue/queue.h"
#include "store/store.h"

/* ---- map.c: string keys to pointers, open addressing ---- */

typedef struct swriter swriter_t;

typedef struct {
	char *key;   /* owned; NULL: empty slot */
	void *value; /* caller's */
	bool dead;   /* a deleted slot (tombstone) */
} map_slot_t;

typedef struct {
	map_slot_t *slots; /* power-of-two table */
	size_t cap;	   /* slots */
	size_t n;	   /* live keys */
	size_t used;	   /* live + tombstones */
} map_t;

/* FNV-1a of a string (the map's hash, also used to remember texts written). */
uint64_t map_hash(const char *s);
/* FNV-1a of n bytes (usage.c: a checkpoint part already written). */
uint64_t map_hash_bytes(const void *p, size_t n);
void map_init(map_t *m);
/* Free the table and keys (values are the caller's: free them first). */
void map_deinit(map_t *m);
void *map_get(const map_t *m, const char *key);
/* Insert or replace; *old (may be NULL) gets the replaced value or NULL.
 * GPUQ_ENOMEM, GPUQ_ELIMIT past CONTROLLER_OBJECTS_MAX. */
int map_put(map_t *m, const char *key, void *value, void **old);
/* Remove key; returns its value or NULL. */
void *map_del(map_t *m, const char *key);
/* Iterate: start at *pos = 0; returns the next live slot or NULL. */
map_slot_t *map_next(const map_t *m, size_t *pos);

/* ---- informer.c: the watched collections and the event queue ---- */

typedef enum {
	RES_NAMESPACES = 0,
	RES_LIMITRANGES,
	RES_RESOURCEQUOTAS,
	RES_PRIORITYCLASSES,
	RES_CLAIMTEMPLATES,
	RES_FLAVORS,
	RES_CLUSTERQUEUES,
	RES_LOCALQUEUES,
	RES_COHORTS,
	RES_KUEUE_FLAVORS,
	RES_KUEUE_CLUSTERQUEUES,
	RES_KUEUE_LOCALQUEUES,
	RES_KUEUE_COHORTS,
	RES_JOBS,
	RES_PODS,
	RES_COUNT
} res_t;

typedef struct {
	const char *name;     /* for logs: "jobs" */
	const char *group;    /* API group path for discovery: "/apis/gpuq.dev/v1beta1" */
	const char *resource; /* plural, as discovery lists it */
	const char *path;     /* collection path */
	bool optional;	      /* watched only when discovery lists it */
	bool policy;	      /* feeds the policy snapshot */
} res_info_t;

extern const res_info_t controller_res[RES_COUNT];

typedef struct {
	res_t res;		/* which collection */
	kube_event_type_t type; /* ADDED, MODIFIED, DELETED, RESET, SYNCED */
	json_t *object;		/* owned reference (NULL for RESET/SYNCED) */
} cevent_t;

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t nonempty; /* the controller thread waits on it */
	pthread_cond_t nonfull;	 /* watch threads wait on it */
	cevent_t *ring;		 /* CONTROLLER_EVENTS_MAX slots */
	size_t head, n;		 /* ring position and count */
	bool kick;		 /* wake the controller without an event */
} equeue_t;

int equeue_init(equeue_t *q);
void equeue_deinit(equeue_t *q);
/* Push (waits while full, unless *stop). Steals ev->object. */
void equeue_push(equeue_t *q, const cevent_t *ev, const atomic_bool *stop);
/* Pop up to cap events into out, waiting until one arrives, a kick, or
 * deadline_ms (monotonic) passes. Returns how many. */
size_t equeue_pop(equeue_t *q, cevent_t *out, size_t cap, int64_t deadline_ms);
/* Wake the controller thread. */
void equeue_kick(equeue_t *q);

typedef struct {
	struct controller *ctl; /* owner */
	res_t res;		/* what this thread watches */
	kube_client_t *client;	/* its own connection */
	pthread_t thread;	/* running while started */
	bool started;		/* thread was created */
} watcher_t;

/* Discover optional groups, then start one thread per watched collection. */
int informer_start(struct controller *c, gpuq_diag_t *diag);
void informer_stop(struct controller *c);

/* ---- the controller ---- */

typedef enum {
	JOB_UNMANAGED = 0, /* not gpuq's (no GPU, no queue label, not suspended) */
	JOB_MANAGED = 1,   /* a workload of the core */
} job_kind_t;

/* One cached Job: the latest object the watch showed, pruned
 * (controller_prune) and kept as compact JSON text, the form the decoder
 * reads (a parsed tree is about ten times larger); job_tree parses it where
 * a tree is needed (actuation). */
typedef struct {
	char *text;	      /* the pruned Job, compact JSON (owned) */
	size_t text_len;      /* strlen(text) */
	char *ns;	      /* metadata.namespace; name follows it in the same
				 allocation (owned) */
	const char *name;     /* metadata.name (inside ns's allocation) */
	bool suspended;	      /* spec.suspend */
	bool admitted;	      /* carries WEBHOOK_ANNOT_ADMITTED */
	char *uid;	      /* metadata.uid (owned) */
	bool in_core;	      /* added to the core */
	bool finished_seen;   /* Complete or Failed seen and reported to the core */
	bool ready_seen;      /* all pods Ready reported since the last admission */
	bool bad;	      /* decode failed: logged once, kept out of the core */
	uint64_t status_hash; /* FNV-1a of the last gpuq.dev/status written (0: none) */
	char *rq_wait;	      /* why a ResourceQuota holds its release (owned; NULL:
				 none): logged once, shown as its status */
	uint64_t gen;	      /* LIST generation it was last seen in */
	bool touched;	      /* in the controller's touched list */
	bool explain_queued;  /* in the controller's explain list */
	int64_t requeued_ms;  /* core time it last went back to the queue after an
				 eviction (0: never seen here): where its next
				 wait for admission starts */
} job_t;

typedef struct {
	json_t *obj;	 /* the object (owned reference) */
	uint64_t gen;	 /* LIST generation it was last seen in */
	uint64_t digest; /* of what the policy reads: status and bookkeeping left out */
	bool refused;	 /* the policy decoder refused it (logged once) */
} pobj_t;

/* A workload made of Pods: one plain GPU Pod (key = its uid) or a pod group
 * (key "group:<namespace>/<group name>"). */
typedef struct {
	char *key;	      /* the workload's uid in the core (owned) */
	bool group;	      /* a pod group (else one plain Pod) */
	int32_t total;	      /* pods the workload needs (pod-group-total-count; 1) */
	int32_t reported;     /* group members the core has been told of */
	map_t members;	      /* Pod uid -> member (pods.c) */
	bool bad;	      /* could not enter the core: logged once */
	bool touched;	      /* in the controller's touched list */
	bool explain_queued;  /* in the controller's explain list */
	uint64_t status_hash; /* map_hash | 1 of the last gpuq.dev/status written */
} pgroup_t;

struct controller {
	controller_opts_t o;   /* options (strings borrowed) */
	store_t *store;	       /* the LMDB store */
	kube_client_t *client; /* the controller thread's connection */
	watcher_t watchers[RES_COUNT];
	bool watched[RES_COUNT]; /* discovery found the collection */
	bool listed[RES_COUNT];	 /* first LIST complete */
	equeue_t events;	 /* watch threads -> controller thread */
	atomic_bool stop;	 /* every thread stops when set */
	pthread_t thread;	 /* the controller thread */
	bool running;		 /* thread started */
	bool stopped;		 /* controller_stop done (the owner's thread only) */

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

	map_t objs[RES_COUNT];	    /* policy objects by ns/name -> pobj_t * */
	uint64_t gen[RES_COUNT];    /* LIST generation: bumped by each RESET */
	map_t jobs;		    /* uid -> job_t * */
	map_t groups;		    /* workload key -> pgroup_t * (pods.c) */
	map_t pod_group;	    /* Pod uid -> its workload key (char *, owned) */
	map_t job_pods;		    /* Pod uid -> jobpod_t * (pods.c): unfinished GPU Pods
				       of Jobs */
	map_t job_pod_count;	    /* Job uid -> int32_t * (pods.c): how many of those
				       each Job has */
	size_t rq_held;		    /* Jobs whose release a ResourceQuota holds (rq_wait) */
	bool policy_dirty;	    /* a policy object changed */
	policy_t *policy;	    /* the snapshot in force (one reference) */
	uint64_t policy_generation; /* snapshots built */
	queue_t *q;		    /* the core (NULL until the first snapshot) */
	queue_config_t qcfg;	    /* its configuration */
	bool persist_full;	    /* rewrite every record at the next commit */
	bool check_term;	    /* just took the Lease: is the store stale? */
	bool core_dirty;	    /* run a cycle soon */
	int64_t last_cycle_ms;	    /* monotonic */
	int64_t epoch_mono_ms;	    /* monotonic at start */
	int64_t epoch_wall_ms;	    /* wall clock at start: core time = wall */

	char **touched; /* uids to compare and act on after the next persist */
	size_t n_touched, cap_touched;
	int64_t next_sweep_ms; /* next compare of every Job (monotonic) */
	int64_t next_trim_ms;  /* next malloc_trim (monotonic) */
	char **explain;	       /* uids whose gpuq.dev/status to refresh */
	size_t n_explain, cap_explain;
	swriter_t *swriter;	/* queue status patches, off this thread */
	int64_t status_next_ms; /* next queue status pass (monotonic) */

	qmetrics_t *metrics;	 /* queue metrics for /metrics (owned) */
	int64_t metrics_next_ms; /* next publish (monotonic) */
	int64_t podmap_next_ms;	 /* next hand-over of the pods' LocalQueues (monotonic) */
	bool podmap_logged;	 /* a failed hand-over was logged */
	bool podmap_sent;	 /* a map was handed over while leading */

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
};

/* The core's clock: wall milliseconds, never decreasing. */
int64_t controller_now(struct controller *c);
/* Monotonic milliseconds, for the controller's own timers. */
int64_t controller_mono_ms(void);
/* "namespace/name" or "name" of an object ("" without a name). */
void controller_obj_key(const json_t *obj, char *out, size_t cap);
/* The cached Job of a workload uid, or NULL. */
job_t *controller_job(struct controller *c, const char *uid);
/* Cache obj (pruned; borrowed) as j's object. GPUQ_EINVAL without a
 * namespace and name, GPUQ_ENOMEM; j is unchanged on error. */
int job_set(job_t *j, json_t *obj);
/* j's object parsed: a new reference, or NULL (no memory). */
json_t *job_tree(const job_t *j);

/* snapshot.c: apply a policy-object event to the cache. */
void snapshot_apply(struct controller *c, const cevent_t *ev);
/* Give a fresh core's tenants that have no history the decayed usage their
 * LocalQueue's status shows (a former leader wrote it). */
void snapshot_seed_usage(struct controller *c, queue_t *q);

/* Build a snapshot from the cache; on success replace c->policy (and the
 * webhook's), rebuild or create the core. Errors are logged; the previous
 * snapshot stays. */
int snapshot_rebuild(struct controller *c);

/* jobs.c */
void jobs_apply(struct controller *c, const cevent_t *ev);
/* Bring every Job's workload into the core (after a snapshot change). */
void jobs_resync(struct controller *c);
void jobs_free_all(struct controller *c);

/* loop.c: act on job j (or on the workload with key) after the next persist. */
void controller_touch(struct controller *c, job_t *j);
void controller_touch_key(struct controller *c, const char *key);

/* workload.c: a watched object decoded by the admission rules' decoder
 * (*o zeroed first; deinit it in every case), and its pod spec as one pod
 * set of `count` pods (b holds the arrays ps points into). */
int controller_decode(struct controller *c, const json_t *obj, webhook_object_t *o,
		      gpuq_diag_t *diag);
/* The same from compact JSON text[0..len). */
int controller_decode_text(struct controller *c, const char *text, size_t len, webhook_object_t *o,
			   gpuq_diag_t *diag);
typedef struct {
	queue_request_t req[QUEUE_PODSET_RES_MAX];
	queue_label_t sel[QUEUE_SELECTORS_MAX];
	queue_toleration_t tol[QUEUE_SELECTORS_MAX];
} podset_buf_t;
void controller_podset_from(const webhook_object_t *o, int32_t count, podset_buf_t *b,
			    queue_podset_spec_t *ps);

/* pods.c */
/* Call fn with the namespace and name of each of g's Pods. */
void pods_each_member(const pgroup_t *g, void (*fn)(void *ctx, const char *ns, const char *name),
		      void *ctx);
/* podmap.c: hand the LocalQueue of every workload holding quota to
 * c->o.pod_queues (leader only; a failure to build is logged, once). */
void podmap_publish(struct controller *c);
void pods_apply(struct controller *c, const cevent_t *ev);
/* The unfinished Pods the watch shows of the Job with uid job_uid (its
 * status.active counts them only at the Job controller's next status
 * write, about a second after the ResourceQuota charged them). */
int32_t pods_of_job(const struct controller *c, const char *job_uid);
void pods_resync(struct controller *c);
void pods_free_all(struct controller *c);
pgroup_t *controller_group(struct controller *c, const char *key);
void actuate_group(struct controller *c, pgroup_t *g);
/* Hand text as every member's gpuq.dev/status to the status writer. */
void pods_annotate(struct controller *c, pgroup_t *g, const char *text);
/* actuate.c: a workload's placement on its flavors (see actuate.c). */
int actuate_placement(struct controller *c, queue_wl_t id, const json_t *base_sel,
		      const json_t *base_tols, json_t **sel, json_t **tols, char *flavors,
		      size_t cap);

/* Drop what gpuq never reads and cached objects would carry:
 * metadata.managedFields (about 60% of a Job's parsed size: 28.6 KB -> 11.9
 * KB for a bench Job) and kubectl's last-applied-configuration annotation (a
 * second copy of the object for everything made with `kubectl apply`). Only
 * the cache loses them: gpuq writes Jobs with merge patches, never whole.
 * Returns obj. */
json_t *controller_slim(json_t *obj);
/* controller_slim, and of a Job or Pod only what gpuq reads: metadata's
 * name, namespace, uid, resourceVersion, creationTimestamp, labels and
 * annotations (gpuq.dev/ and kueue.x-k8s.io/ keys only), ownerReferences,
 * deletionTimestamp; the pod spec's requests,
 * priority, placement, claims and gates (containers reduced to name,
 * resources, restartPolicy); a Job's suspend, parallelism, completions and
 * template annotations; the status counts and conditions (type and status).
 * gpuq's own gpuq.dev/status annotation goes too (written, never read).
 * A pruned object decodes (controller_decode) exactly as the whole one
 * (test_controller checks it). Returns obj. */
json_t *controller_prune(json_t *obj);

/* usage.c: the usage ledger's checkpoints (controller_opts_t
 * usage_checkpoint_ms). step, while leading (after the term check): merge
 * every checkpoint once, then write this leader's every interval; lost, on
 * taking or losing the Lease: merge again before writing; final, when the
 * leader stops: write once more. */
void usage_step(struct controller *c);
void usage_lost(struct controller *c);
void usage_final(struct controller *c);
/* (for test_controller) The ConfigMap holding part i (len bytes, copied as
 * base64 into binaryData.ledger; summary into data.summary): a new
 * reference, NULL without memory. When to try again after
 * c->usage_failures failures in a row: 2 s, doubling, at most the checkpoint
 * interval. */
json_t *usage_cm_body(const struct controller *c, int i, const uint8_t *part, size_t len,
		      const char *summary);
int64_t usage_retry_at(const struct controller *c, int64_t now);

/* elect.c: the Lease thread (leader election on; without it the fence is
 * held for good and there is no thread): one round (kube_lease_try on its
 * own connection) every LEASE_RETRY_MS; after a round that holds the Lease
 * the fence holds until kube_lease_deadline of the round's start, after one
 * that sees another holder it is dropped, after a failed one it runs out by
 * itself. wait_first blocks until the first round is done, or stop and wake
 * (controller thread, before it reads the cluster); follow copies the last
 * round into c->lease (controller thread); stop joins the thread (c->stop
 * set and the fence stopped first); release gives the Lease up when the
 * last round saw this replica hold it (after every writer has stopped). */
int elect_start(struct controller *c, gpuq_diag_t *diag);
void elect_wait_first(struct controller *c);
void elect_wake(struct controller *c);
void elect_follow(struct controller *c);
void elect_stop(struct controller *c);
void elect_release(struct controller *c);

/* swriter.c: the status writer thread (its own connection). submit keeps
 * the latest body per key (body is copied); the writer skips a body it has
 * already written (for the few queue keys). submit_once is the same but
 * remembers nothing once written (per-workload keys: the caller dedupes,
 * and keys of deleted objects must not pile up). event queues an Event about a Job (strings copied;
 * GPUQ_ELIMIT when SWRITER_EVENTS_MAX wait: dropped and counted). stop
 * joins the thread and frees everything, unsent work included. */
int swriter_start(const kube_config_t *cfg, const kube_client_opts_t *o, const char *instance,
		  kube_fence_t *fence, swriter_t **out, gpuq_diag_t *diag);
/* Forget the bodies written (a new term: another leader may have written
 * its own since), so the next ones go out even when unchanged. */
void swriter_forget(swriter_t *w);
int swriter_submit(swriter_t *w, const char *key, const char *path, const json_t *body);
int swriter_submit_once(swriter_t *w, const char *key, const char *path, const json_t *body);
/* Patches waiting to be written (submit and submit_once). */
size_t swriter_backlog(swriter_t *w);
/* The status writer's backlog past which status_jobs hands over no more
 * (what waits stays a uid in the controller's explain list, not a body). */
#define SWRITER_BACKLOG_MAX ((size_t)4 * SWRITER_WORKLOADS_PER_PASS)
#define SWRITER_WORKLOADS_PER_PASS                                                                 \
	64 /* workload annotations written between two                                             \
	      passes over the queues' status */
int swriter_event(swriter_t *w, const char *ns, const char *name, const char *uid, const char *type,
		  const char *reason, const char *action, const char *note);
/* Stop (the fence it was given must be stopped first, or it may finish a
 * request already waiting on the limiter). NULL is fine. */
void swriter_stop(swriter_t *w);

/* status.c: queue status subresources; Job status annotations. */
void status_queues(struct controller *c);
void status_note(struct controller *c, const char *uid);
void status_jobs(struct controller *c);
/* (for test_controller) The status of ClusterQueue cq / LocalQueue lq as
 * status_queues writes it (conditions aside): a new reference, NULL when
 * the core has no such queue. */
json_t *status_cq_body(struct controller *c, uint32_t cq);
json_t *status_lq_body(struct controller *c, uint32_t lq);

/* actuate.c: compare the core's state of job j with the Job and patch. */
void actuate_job(struct controller *c, job_t *j);
/* The merge patches actuate_job sends for a Job (tree: the cached Job):
 * release workload id (unsuspend, placement on its flavors from the
 * template as it was before any release, kept in CONTROLLER_ANNOT_ORIGINAL),
 * suspend it (preempted), restore its template once its pods are gone.
 * Each carries the Job's resourceVersion. New references; NULL without
 * memory. */
json_t *actuate_release_body(struct controller *c, const json_t *tree, queue_wl_t id);
json_t *actuate_suspend_body(const json_t *tree);
json_t *actuate_restore_body(const json_t *tree);
/* Whether a suspended Job's pods are gone (none active or terminating, no
 * startTime): its quota is free, its template mutable. */
bool actuate_job_quiet(const json_t *job);
/* Something that counts against namespace ns's ResourceQuotas changed (a
 * released Job's pods or status): touch the Jobs there whose release a
 * ResourceQuota holds, to be judged again (nothing to do while none is). */
void actuate_rq_recheck(struct controller *c, const char *ns);
/* j's release is no longer held by a ResourceQuota (it went, or no longer
 * waits for release): forget why, and refresh its status. */
void actuate_rq_clear(struct controller *c, job_t *j);
/* The results of a cycle or tick: Events for admissions and evictions
 * (patches follow from actuate_job). */
void actuate_result(struct controller *c, const queue_result_t *res);

#endif

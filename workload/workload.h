/*
 * workload: how any object gpuq admits becomes gpuq's workload. A Pod, a
 * batch/v1 Job and the parents of the other supported kinds (kinds.c) are
 * read, from the fast reader's tree (jv/), into pod sets: a name, a pod
 * count, the per-pod effective request (quota/: sidecar-aware, overhead,
 * LimitRange defaults for templates, GPUs of DRA claims), the placement
 * (nodeSelector, tolerations) and where the pod template sits in the object,
 * plus the workload's identity, queue, priority, owner, state and how it is
 * held. The webhook's rules, the controller and (through it) the engine read
 * the same decoding; "which resources are GPUs" has one answer here
 * (workload_gpu_resource) that every caller uses.
 *
 * Two forms, one decoder:
 *  - a view (workload_view_t): borrowed from a parsed document, with the
 *    containers' JSON for patches; what the admission rules read while the
 *    review is alive;
 *  - a workload (workload_t): owned, compact, one decode of a watched object
 *    that the controller caches and acts from, in two steps: workload_decode
 *    (policy-free: what the object says) and workload_resolve (what the
 *    policy makes of it: LimitRange defaults, PriorityClass, DRA devices),
 *    so a policy change re-resolves every cached workload without reading
 *    any JSON again.
 *
 * The design decision that matters: a kind is a row of one table
 * (workload_integration_t, Kueue's GenericJob answered in data and a few
 * functions): where its pod sets are, how it is held (its suspend field or
 * scheduling gates on its Pods), where each pod set's template is for the
 * flavor's placement on release and its restore on preemption, when it is
 * finished, and which controller creates its children. Supporting a kind is
 * adding a row, not a code path through every driver.
 *
 * Pure: no I/O, no clock, no globals; thread-safe on distinct objects.
 */
#ifndef GPUQ_WORKLOAD_H
#define GPUQ_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "jv/jv.h"
#include "policy/policy.h"
#include "quota/quota.h"

/* ---- Names gpuq reads and writes on objects ---- */

#define WORKLOAD_LABEL_QUEUE "gpuq.dev/queue-name"	       /* LocalQueue of the workload */
#define WORKLOAD_LABEL_KUEUE_QUEUE "kueue.x-k8s.io/queue-name" /* accepted as the same */
#define WORKLOAD_LABEL_MANAGED "gpuq.dev/managed" /* "true" on a held parent's templates */
/* A workload's wall-clock limit in seconds (gpuq's, else Kueue's label):
 * past it, admitted in all, it is stopped and deactivated (docs/kinds.md). */
#define WORKLOAD_LABEL_MAX_EXEC "gpuq.dev/max-exec-time-seconds"
#define WORKLOAD_LABEL_KUEUE_MAX_EXEC "kueue.x-k8s.io/max-exec-time-seconds"
#define WORKLOAD_ANNOT_ADMITTED "gpuq.dev/admitted" /* "true": set by the controller only */
#define WORKLOAD_PATCH_MANAGER                                                                     \
	"gpuq.dev/manager"			  /* gpuq's entry in a TrainJob's runtimePatches   \
						   */
#define WORKLOAD_ANNOT_FLAVORS "gpuq.dev/flavors" /* "resource=flavor" pairs of a release */
#define WORKLOAD_ANNOT_STATUS "gpuq.dev/status"	  /* where the workload stands, coarse */
#define WORKLOAD_ANNOT_ORIGINAL                                                                    \
	"gpuq.dev/original-scheduling"	   /* templates' placement before release */
#define WORKLOAD_GATE "gpuq.dev/admission" /* Pod scheduling gate */
#define WORKLOAD_LABEL_POD_GROUP "kueue.x-k8s.io/pod-group-name" /* Kueue's plain-Pod gangs */
#define WORKLOAD_ANNOT_POD_GROUP_COUNT "kueue.x-k8s.io/pod-group-total-count"
#define WORKLOAD_ANNOT_RETRIABLE                                                                   \
	"kueue.x-k8s.io/retriable-in-group" /* "false": a group that ends when                     \
					       every member has stopped */
#define WORKLOAD_POD_GROUP_MAX 100000	    /* largest pod-group count accepted */

/* ---- Topology requests of a pod set (topology.c; issue 33) ----
 *
 * Kueue's annotations on a pod template (a Pod: on itself), and gpuq's own
 * under gpuq.dev/. A template carrying any gpuq.dev/ one of the six is read
 * from the gpuq.dev/ ones alone; else from Kueue's (gpuq's wins whole, as
 * the queue-name and max-exec-time labels do: never a mix of the two). */
#define WORKLOAD_ANNOT_TOPO_REQUIRED "gpuq.dev/podset-required-topology"
#define WORKLOAD_ANNOT_TOPO_PREFERRED "gpuq.dev/podset-preferred-topology"
#define WORKLOAD_ANNOT_TOPO_UNCONSTRAINED "gpuq.dev/podset-unconstrained-topology"
#define WORKLOAD_ANNOT_TOPO_SLICE "gpuq.dev/podset-slice-required-topology"
#define WORKLOAD_ANNOT_TOPO_SLICE_SIZE "gpuq.dev/podset-slice-size"
#define WORKLOAD_ANNOT_TOPO_GROUP "gpuq.dev/podset-group-name"
#define WORKLOAD_ANNOT_KUEUE_TOPO_REQUIRED "kueue.x-k8s.io/podset-required-topology"
#define WORKLOAD_ANNOT_KUEUE_TOPO_PREFERRED "kueue.x-k8s.io/podset-preferred-topology"
#define WORKLOAD_ANNOT_KUEUE_TOPO_UNCONSTRAINED "kueue.x-k8s.io/podset-unconstrained-topology"
#define WORKLOAD_ANNOT_KUEUE_TOPO_SLICE "kueue.x-k8s.io/podset-slice-required-topology"
#define WORKLOAD_ANNOT_KUEUE_TOPO_SLICE_SIZE "kueue.x-k8s.io/podset-slice-size"
#define WORKLOAD_ANNOT_KUEUE_TOPO_GROUP "kueue.x-k8s.io/podset-group-name"
/* Bytes of a level (a node label key: 253-byte prefix, '/', 63-byte name,
 * Kueue's 316) and of a pod set group's name (a label value's 63). */
#define WORKLOAD_TOPO_LEVEL_MAX 316
#define WORKLOAD_TOPO_GROUP_MAX 63

typedef enum {
	WORKLOAD_TOPO_NONE = 0,		 /* no annotation: the flavor decides (Kueue:
					    unconstrained on a topology flavor) */
	WORKLOAD_TOPO_REQUIRED = 1,	 /* every pod in one domain at `level` */
	WORKLOAD_TOPO_PREFERRED = 2,	 /* as few domains as it can, from `level` up */
	WORKLOAD_TOPO_UNCONSTRAINED = 3, /* anywhere there is room (annotation "true") */
} workload_topo_mode_t;

/* What a pod set asks of the nodes' topology. Strings borrowed from the
 * document in a view, owned by the workload in a workload_t. Checked when
 * read: the levels are label keys; at most one of required, preferred and
 * unconstrained; slices come with a required or preferred level, a slice
 * level and a size in pairs, the size dividing the pod set's count; a group
 * needs a required or preferred level, no slices, is not a number, and its
 * pod sets (at least two in an object with several) ask for the same mode
 * and level. Whether the levels are a Topology's, and the slice level no
 * wider than the level, is the flavor's question (the core's, at
 * admission). */
typedef struct {
	const char *level;	   /* REQUIRED, PREFERRED: the node label key; else NULL */
	const char *slice_level;   /* podset-slice-required-topology; NULL: no slices */
	const char *group;	   /* podset-group-name; NULL: none */
	int32_t slice_size;	   /* pods per slice (1..count, divides it); 0: none */
	workload_topo_mode_t mode; /* which of the three, or NONE */
	bool gpuq_keys;		   /* read from the gpuq.dev/ keys (else Kueue's) */
} workload_topology_t;

/* Whether a and b ask the same (NULL is "none declared", equal to a
 * request of mode NONE with no slices and no group). */
bool workload_topology_same(const workload_topology_t *a, const workload_topology_t *b);

/* ---- Who writes gpuq.dev/ keys (keys.c) ---- */

/* The largest value of a gpuq.dev/ key gpuq writes whole (the resource=flavor
 * pairs of a release, the templates' placement before it), and so the
 * largest the object decoder keeps. */
#define WORKLOAD_KEY_GPUQ_MAX (64u << 10)

typedef enum {
	WORKLOAD_KEY_OTHER = 0,	  /* not a gpuq.dev/ key: none of gpuq's business */
	WORKLOAD_KEY_INPUT = 1,	  /* a tenant's input (label gpuq.dev/queue-name,
				     annotation gpuq.dev/expected-runtime): anyone,
				     within its size */
	WORKLOAD_KEY_CREATED = 2, /* gpuq's, but /mutate writes it into a new
				     object (label gpuq.dev/managed, annotation
				     gpuq.dev/status): any creator, within its size;
				     after that gpuq's */
	WORKLOAD_KEY_GPUQ = 3,	  /* gpuq's (gpuq.dev/admitted, gpuq.dev/flavors,
				     gpuq.dev/original-scheduling, any other
				     gpuq.dev/ key): set, changed or removed by
				     gpuq's identity only */
} workload_key_owner_t;

/* Who writes key (a label when label, else an annotation) on a workload
 * object or its pod templates; *max: the bytes of its value accepted from
 * anyone but gpuq (0 for WORKLOAD_KEY_OTHER). The one list of gpuq.dev/
 * keys a tenant may write. */
workload_key_owner_t workload_key_owner(const char *key, bool label, size_t *max);

typedef enum {
	WORKLOAD_KEY_BREACH_OWNER = 1, /* a key gpuq owns set, changed or removed */
	WORKLOAD_KEY_BREACH_SIZE = 2,  /* a key's value over its size */
} workload_key_breach_why_t;

typedef struct {
	const char *key;	       /* the key (borrowed from the maps checked) */
	workload_key_breach_why_t why; /* what is wrong */
	size_t len;		       /* bytes of its new value (0: removed) */
	size_t max;		       /* bytes accepted (workload_key_owner's) */
} workload_key_breach_t;

/* Judge a write by anyone but gpuq's identity to one labels map (label) or
 * annotations map: now is the map as written, was as it stood (NULL, or not
 * an object: absent, as for a CREATE); create says the object is new (keys
 * /mutate writes pass). The first breach in now's order, then was's (a
 * removed key), goes into *out: true. A value left as it was is never a
 * breach, whatever its size. */
bool workload_keys_check(const jv_t *now, const jv_t *was, bool label, bool create,
			 workload_key_breach_t *out);

/* ---- Caps (anything past one is refused, naming the field; never cut) ---- */

#define WORKLOAD_PODSETS_MAX 18	   /* pod sets per workload (Kueue v1beta2's and the core's cap) */
#define WORKLOAD_CONTAINERS_MAX 64 /* init + app containers of one pod template */
#define WORKLOAD_CLAIMS_MAX 32	   /* resourceClaims looked at (Kubernetes' own cap) */
#define WORKLOAD_STR_MAX                                                                           \
	317 /* bytes of a string kept (a label or toleration key:                                  \
	       253-byte prefix, '/', 63-byte name) */
#define WORKLOAD_SELECTOR_MAX                                                                      \
	32			    /* nodeSelector entries of a pod template (the                 \
				       core keeps 32 per pod set) */
#define WORKLOAD_TOLERATIONS_MAX 32 /* tolerations of a pod template */
#define WORKLOAD_GATES_MAX 32	    /* scheduling gates of a Pod */
#define WORKLOAD_FIELD_MAX                                                                         \
	96 /* bytes of a pod set's field path or JSON                                              \
	      pointer ("spec.replicatedJobs[7].template.spec.template.spec") */
#define WORKLOAD_PODS_MAX                                                                          \
	((int64_t)1 << 40) /* pods counted in a pod set at most (a                                 \
			      larger count is a broken object) */

/* ---- The one GPU rule ---- */

typedef struct {
	const char *const *gpu_resources; /* extra GPU resource names (--gpu-resource) */
	size_t n_gpu_resources;		  /* entries */
} workload_config_t;

/* Whether resource `name` is a GPU: nvidia.com/gpu, nvidia.com/gpu.shared,
 * nvidia.com/mig-*, or one of cfg's extra names (cfg may be NULL). The only
 * place gpuq answers this: admission, the controller's status (gpusInUse)
 * and the views all call it. */
bool workload_gpu_resource(const workload_config_t *cfg, const char *name);

/* The GPUs of a pod's effective request (workload_view_pod_one's list),
 * DRA devices included. */
int64_t workload_reslist_gpus(const workload_config_t *cfg, const quota_reslist_t *one);

/* DRA device classes that hand out NVIDIA GPUs or MIG slices. */
bool workload_gpu_device_class(const char *device_class);

/* ---- Kinds: the integration table (kinds.c) ---- */

typedef enum {
	WORKLOAD_KIND_OTHER = 0,       /* none gpuq admits */
	WORKLOAD_KIND_POD = 1,	       /* core/v1 Pod (plain, or a member of a pod group) */
	WORKLOAD_KIND_JOB = 2,	       /* batch/v1 Job */
	WORKLOAD_KIND_JOBSET = 3,      /* jobset.x-k8s.io/v1alpha2 JobSet */
	WORKLOAD_KIND_STATEFULSET = 4, /* apps/v1 StatefulSet */
	WORKLOAD_KIND_LWS = 5,	       /* leaderworkerset.x-k8s.io/v1 LeaderWorkerSet */
	WORKLOAD_KIND_RAYJOB = 6,      /* ray.io/v1 RayJob */
	WORKLOAD_KIND_RAYCLUSTER = 7,  /* ray.io/v1 RayCluster */
	WORKLOAD_KIND_DEPLOYMENT = 8,  /* apps/v1 Deployment (each of its Pods a workload) */
	WORKLOAD_KIND_TRAINJOB = 9,    /* trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow
					  Trainer), through the JobSet it makes */
	WORKLOAD_KIND_COUNT = 10,
} workload_kind_t;

/* How a kind is held until admitted. */
typedef enum {
	WORKLOAD_HOLD_NONE = 0,	   /* not itself: its Pods are workloads (Deployment) */
	WORKLOAD_HOLD_SUSPEND = 1, /* its suspend field (Job, JobSet, RayJob, RayCluster,
				      TrainJob) */
	WORKLOAD_HOLD_GATES = 2,   /* the scheduling gate on each of its Pods (Pod, pod
				      groups, StatefulSet, LeaderWorkerSet) */
} workload_hold_t;

/* What an edit of a workload's object does, the kind's row answering it for
 * what one Pod asks (its shape: the containers' requests and limits, the
 * overhead, GPU claims) and for how many Pods, queued and admitted (issue
 * 31; docs/kinds.md, "what may change"). The webhook refuses what the row
 * refuses (webhook/validate.c), the controller follows what it follows
 * (controller/jobs.c, sets.c); neither branches on the kind. A count edited
 * while queued is always followed. */
typedef enum {
	WORKLOAD_EDIT_FOLLOW = 0, /* taken: a queued workload is recomputed in the
				     core and keeps its place; a set's new Pods
				     queue as a slice or group of their own */
	WORKLOAD_EDIT_SHRINK = 1, /* fewer may be asked for, never more */
	WORKLOAD_EDIT_REFUSE = 2, /* refused, naming the field and the way out */
} workload_edit_t;

/* How the controller knows a stopped workload's Pods are gone (before it
 * restores its templates and lets its quota go), for a kind held by its
 * suspend field (controller/release.c). */
typedef enum {
	WORKLOAD_QUIET_NONE = 0,     /* not held by suspend */
	WORKLOAD_QUIET_PODS = 1,     /* its status counts no active and no terminating
					pod, its start time is reset, and the Pods
					watch shows none (a Job) */
	WORKLOAD_QUIET_STATUS = 2,   /* its controller says it is suspended, its Pods
					deleted (a RayCluster's status) */
	WORKLOAD_QUIET_CHILDREN = 3, /* no cached child of it has a pod left, and its
					status counts none active (JobSet, RayJob,
					TrainJob) */
} workload_quiet_t;

/* How a set's Pods become workloads (a kind with replicas_member). */
typedef enum {
	WORKLOAD_SET_NONE = 0,	 /* not a set */
	WORKLOAD_SET_SLICES = 1, /* one workload per slice of ordinals: the replicas
				    admitted at once, each scale-up a slice of its
				    own (a StatefulSet) */
	WORKLOAD_SET_GROUPS = 2, /* one workload per replica, a group of its own
				    (an LWS's leader and workers) */
} workload_set_t;

struct workload_view;
struct workload_decoder;

/* One supported kind. Paths are JSON Pointers into the object. */
typedef struct {
	workload_kind_t kind;
	const char *api_version;	/* "jobset.x-k8s.io/v1alpha2" */
	const char *group;		/* "jobset.x-k8s.io" ("" for core) */
	const char *version;		/* "v1alpha2" */
	const char *kind_name;		/* "JobSet" */
	const char *resource;		/* plural, as discovery lists it: "jobsets" */
	const char *watch_path;		/* the collection the controller lists and
					   watches in every namespace, its path
					   ("/apis/jobset.x-k8s.io/v1alpha2/jobsets",
					   from group, version and resource); NULL:
					   not watched (a Deployment: its Pods are
					   the workloads) */
	bool watch_optional;		/* that collection is a CRD's, which the
					   apiserver may not serve (not installed yet,
					   or removed): watched while it is */
	const char *short_name;		/* how people name its workloads: "jobset/llama-70b" */
	workload_hold_t hold;		/* how it waits */
	const char *suspend_ptr;	/* the suspend field ("/spec/suspend"), or NULL */
	bool suspend_inverted;		/* never: every supported suspend field is "true
					   to hold" (kept for kinds whose is not) */
	workload_kind_t child_kind;	/* what its controller creates: Job for a JobSet,
					   Pod for the others; OTHER for a Pod */
	const char *const *creators;	/* usernames that create its children (its
					   controller's identities), NULL-terminated; a
					   child claiming this parent made by anyone else
					   is refused */
	bool sequential;		/* its Pods appear one after another (a StatefulSet's
					   OrderedReady, an LWS's LeaderReady): the whole
					   group's quota is reserved when admitted and
					   each Pod let through as it appears */
	bool podsets_of_child;		/* its pod sets are its child's, read once its
					   controller made it (held) from what the object
					   names elsewhere: a TrainJob's are its JobSet's,
					   built by the Trainer from the TrainingRuntime.
					   Released through runtime_patch: the flavors go
					   into a patch its controller applies to the
					   child. gpuq's when it carries a queue label or
					   names a GPU in gpu_field */
	const char *runtime_patch;	/* the list of such patches ("/spec/runtimePatches") */
	const char *gpu_field;		/* the resources its pods are said to get
					   ("spec.trainer.resourcesPerNode"), or NULL */
	const char *said_count_field;	/* on how many nodes ("spec.trainer.numNodes",
					   default 1), or NULL */
	workload_edit_t shape_queued;	/* a Pod's shape edited while it queues */
	workload_edit_t shape_admitted; /* ... once admitted (a set: while it has
					   replicas, admitted or not: Kueue's rule) */
	workload_edit_t count_admitted; /* how many Pods, once admitted */
	const char *replicas_member;	/* a set's member of spec counting its
					   replicas ("replicas", default 1): at 0 its
					   shape may change; NULL: not a set */
	workload_set_t set;		/* a set's workloads: slices or groups */
	const char *set_key;		/* a set's prefix of its workloads' keys in
					   the core ("sts", "lws": "sts:ns/web/0");
					   NULL: not a set */
	workload_quiet_t quiet;		/* when a stopped one's Pods are gone */
	bool bare_name;			/* named by its own name in the core (a Job);
					   else "short_name/name" */
	const char *default_image_ptr;	/* a counted_only pod set with no template
					   (a RayJob's default submitter): the release
					   writes one, its containers as counted, with
					   restartPolicy Never and the image copied
					   from this JSON Pointer (KubeRay's default:
					   the head's); NULL: it writes none */
	const char *replace_member;	/* its member of spec saying when a Pod it
					   replaces gets its successor
					   ("podReplacementPolicy", a Job): gpuq keeps
					   it WORKLOAD_REPLACE_FAILED, so the successor
					   starts once the Pod has terminated (a
					   terminating Pod holds its GPUs: both would
					   run on one Pod's quota); NULL: none */
	bool pins_affinity;		/* its held templates take a required
					   nodeAffinity (a Job, batch/v1's mutable
					   scheduling directives; a gated Pod with
					   none of its own): a release pins a pod
					   set placed across domains to them (not a
					   JobSet: its webhook refuses the edit) */
	bool counts_pods;		/* its status counts its Pods (active,
					   succeeded, failed): those not yet made are
					   the rest of its count (a Job) */
	/* Read the pod sets of obj into the view (w->obj, w->kind, names set):
	 * their names, counts and templates, checked with w's refusals. */
	int (*podsets)(struct workload_view *w, gpuq_diag_t *diag);
	/* Read what the controller needs of the object's status (finished,
	 * ready, active pods) into the workload being decoded; NULL: nothing. */
	int (*status)(struct workload_decoder *d, const jv_t *obj);
} workload_integration_t;

/* The value of a row's replace_member gpuq keeps (a successor Pod only
 * once the one it replaces is Failed: terminated). */
#define WORKLOAD_REPLACE_FAILED "Failed"

/* The row of kind k (WORKLOAD_KIND_OTHER included). Never NULL. */
const workload_integration_t *workload_integration(workload_kind_t k);
/* The kind of an object from its apiVersion and kind ("batch/v1", "Job"),
 * or WORKLOAD_KIND_OTHER. Either may be NULL. */
workload_kind_t workload_kind_of(const char *api_version, const char *kind);
/* The kind of a review's request.kind (group, version, kind), or OTHER. */
workload_kind_t workload_kind_gvk(const char *group, const char *version, const char *kind);

/* The row of the parent a `kind` object belongs to when its controller
 * ownerReference (api_version, owner_kind) names a held parent whose own
 * controller makes objects of this kind (a JobSet's Jobs): such a child is
 * not a workload of its own; its parent's admission governs it. NULL for
 * anything else (a Job's Pods stay the Job rules' business). */
const workload_integration_t *workload_parent_of(workload_kind_t kind, const char *api_version,
						 const char *owner_kind);
/* Whether integ's kind is a held parent (its suspend field) whose own
 * controller makes its Pods (a Job, a RayCluster): the parent is the
 * workload, its Pods are not. */
bool workload_makes_pods(const workload_integration_t *integ);
/* Whether username is one of integ's creators (its controller's identity). */
bool workload_creator(const workload_integration_t *integ, const char *username);

/* ---- The view: an object as the admission rules read it ---- */

typedef struct {
	bool init;	  /* in initContainers (else containers) */
	size_t index;	  /* index in that array */
	const jv_t *json; /* the container object (borrowed); NULL: one the template
			     does not show (added_container) */
} workload_cref_t;

/* One pod set of a view. Borrowed pointers into the document. */
typedef struct {
	char name[64];			       /* "main", a replicatedJob's name, "head", ... */
	int64_t count;			       /* pods of the pod set admitted at once */
	int64_t parallelism;		       /* a Job template's spec.parallelism (default 1;
						  1 for a Pod) */
	const jv_t *tmpl;		       /* the pod template ({metadata, spec}); a Pod:
						  the object itself */
	const jv_t *pod_labels;		       /* the template's labels (a Pod: its own) */
	const jv_t *pod_annotations;	       /* ... annotations */
	const jv_t *pod_spec;		       /* the pod spec (NULL: none) */
	char spec_field[WORKLOAD_FIELD_MAX];   /* its path for messages: "spec.template.spec" */
	char tmpl_ptr[WORKLOAD_FIELD_MAX];     /* the template's JSON Pointer: "/spec/template"
						  ("" for a Pod) */
	quota_pod_t pod;		       /* containers as declared (init first), overhead
						  (after workload_view_default: with the
						  RuntimeClass's, as the Pods get it) */
	const char *runtime_class;	       /* the pod spec's runtimeClassName; NULL when
						  absent or "" */
	workload_cref_t *refs;		       /* refs[i] locates pod.containers[i] */
	bool gpu;			       /* asks for a GPU (resources or DRA) */
	char gpu_resource[QUOTA_RES_NAME_MAX]; /* first GPU resource seen (messages) */
	int64_t dra_gpus;		       /* devices asked through GPU DRA claims */
	bool tmpl_admitted;		       /* gpuq.dev/admitted = "true" on the template */
	int (*added_container)(quota_container_t *c); /* fills in a container its Pods
						  get that the template does not show
						  (KubeRay's submitter in a SidecarMode
						  RayJob's head); NULL */
	bool counted_only;	      /* counted; a Pod another controller makes from a
					 template gpuq does not hold (a RayJob's submitter): its
					 template gets no label, annotation or default, only the
					 flavor's placement at release (written whole from the
					 kind's default when it has none and default_tmpl) */
	bool default_tmpl;	      /* no template, and one may be written (the image it
					 copies is there) */
	workload_topology_t topology; /* its template's topology annotations
					 (strings borrowed) */
} workload_view_podset_t;

typedef struct workload_view {
	workload_kind_t kind;		       /* the object's kind */
	const workload_integration_t *integ;   /* its row */
	const char *kind_name;		       /* "Pod", "Job", "JobSet", ... */
	const jv_t *obj;		       /* the object (borrowed) */
	const char *name;		       /* metadata.name, else generateName, else "" */
	const jv_t *labels;		       /* metadata.labels (NULL when absent) */
	const jv_t *annotations;	       /* metadata.annotations (NULL when absent) */
	workload_view_podset_t *podsets;       /* n_podsets of them (one inline for Pods and
						  Jobs, else allocated) */
	size_t n_podsets;		       /* 1..WORKLOAD_PODSETS_MAX (0 only after an error) */
	workload_view_podset_t one;	       /* storage of a single pod set */
	bool gpu;			       /* some pod set asks for a GPU */
	char gpu_resource[QUOTA_RES_NAME_MAX]; /* the first GPU resource seen (messages) */
	quota_qty_t said_gpus;		       /* a kind whose pod sets are its child's (a
						  TrainJob): the most of gpu_resource its
						  object gives one node, at its row's
						  gpu_field (0: none said), ... */
	int64_t said_nodes;		       /* ... on this many nodes (said_count_field,
						  default 1): a lower bound of what its
						  child will ask, for the webhook's fit */
	int64_t pods;			       /* pods counted: the pod sets' counts summed, or
						  a Pod group's total count */
	int64_t first_ordinal;		       /* a StatefulSet's first Pod ordinal
						  (spec.ordinals.start; 0) */
	const char *pod_group;		       /* Pod: kueue.x-k8s.io/pod-group-name, or NULL */
	bool suspend;			       /* the kind's suspend field is true */
	const char *queue;		       /* queue label value, gpuq's then Kueue's; NULL */
	int32_t max_exec_s;		       /* max-exec-time-seconds label, gpuq's then
						  Kueue's: 1..INT32_MAX; 0 when neither (a
						  GPU workload's bad value is refused) */
	bool admitted;			       /* gpuq.dev/admitted = "true" on the object */
	bool tmpl_admitted;		       /* ... on some pod set's template */
	const char *unsupported;	       /* why gpuq cannot hold this kind of workload
						  as it is written, when it asks for a GPU
						  (a static sentence), or NULL */
} workload_view_t;

/* An empty view (no pod set, nothing decoded), as workload_view_decode
 * starts; workload_view_deinit accepts it. Cheaper than zeroing the view
 * whole: its inline pod set's overhead entries are left as they were
 * (never read past the list's n). */
void workload_view_init(workload_view_t *w);
/* Decode obj, of kind `kind`, in namespace ns against policy (NULL: no DRA
 * claims seen) and cfg (NULL: no extra GPU names). Quantities are parsed; GPU
 * use is detected. GPUQ_EINVAL with diag naming the field and value (bad
 * quantity, too many containers or pod sets, a field of the wrong type:
 * metadata, labels, annotations, spec, templates, pod specs, containers and
 * each container, resources, requests, limits, overhead, resourceClaims,
 * schedulingGates, counts); GPUQ_ENOMEM. Free with workload_view_deinit,
 * also after an error. */
int workload_view_decode(workload_view_t *w, const policy_t *policy, const workload_config_t *cfg,
			 const char *ns, workload_kind_t kind, const jv_t *obj, gpuq_diag_t *diag);
/* Give every container of every pod template what defaulting and
 * LimitRanger would (quota_limitrange_default with ns's LimitRanges; none
 * without a policy: a limit alone still becomes the request), and each pod
 * template the overhead its RuntimeClass gives its Pods
 * (workload_runtime_overhead), in place; a Pod keeps its own overhead (it
 * has had it since its creation). The controller's resolve applies the
 * same rule (workload_pod_default). GPUQ_OK, GPUQ_ELIMIT (a
 * list would pass QUOTA_RESLIST_MAX), or workload_runtime_overhead's
 * refusals (GPUQ_ENOTFOUND, GPUQ_EDENIED) with *podset the pod set's index
 * and diag the apiserver's words. */
int workload_view_default(workload_view_t *w, const policy_t *policy, const char *ns,
			  size_t *podset, gpuq_diag_t *diag);
/* One pod of pod set ps: requests as ResourceQuota counts them
 * (quota_pod_requests), and `one`, the same plus the DRA GPUs as
 * nvidia.com/gpu (what a ClusterQueue is charged). GPUQ_OK, GPUQ_ELIMIT,
 * GPUQ_ERANGE. */
int workload_view_pod_request(const workload_view_podset_t *ps, quota_reslist_t *requests,
			      quota_reslist_t *one);
/* `one` of pod set ps from its requests when the caller has them already
 * (quota_pod_requests of its pod): returns as workload_view_pod_request. */
int workload_view_pod_one(const workload_view_podset_t *ps, const quota_reslist_t *requests,
			  quota_reslist_t *one);
void workload_view_deinit(workload_view_t *w);

/* What the Pods of view w show a ResourceQuota's scopes (quota_pod_scope_t):
 * the class the Priority plugin gives them (the first pod set naming one,
 * else policy's global default), from its first pod set activeDeadlineSeconds and
 * cross-namespace affinity, and BestEffort when requests and limits (the
 * workload's totals, LimitRange defaults in) name no cpu or memory. The
 * strings are borrowed from w and policy. One scope for the workload: its
 * pod sets are judged by the first's. */
void workload_view_quota_scope(const workload_view_t *w, const policy_t *policy,
			       const quota_reslist_t *requests, const quota_reslist_t *limits,
			       quota_pod_scope_t *out);

/* The queue of a labels map: gpuq.dev/queue-name, else kueue.x-k8s.io/queue-name,
 * else NULL. */
const char *workload_labels_queue(const jv_t *labels);
/* Whether a pod spec carries the gpuq.dev/admission scheduling gate. */
bool workload_pod_gated(const jv_t *pod_spec);
/* The ownerReference of obj with controller: true (the first), or NULL. */
const jv_t *workload_controller_owner(const jv_t *obj);

/* ---- The workload: one watched object, owned and compact ---- */

/* One resource quantity (a container's request or limit, an overhead),
 * packed (24 bytes, not quota_qty_t's 48 with its name): read it with
 * workload_qty. */
typedef struct {
	const char *name; /* resource name */
	uint64_t nano_lo; /* the quantity's nano-units, low 64 bits */
	int32_t nano_hi;  /* ... the bits above (|value| <= 2^63-1: |nano| < 2^93) */
	int32_t format;	  /* its quota_qty_format_t */
} workload_qty_t;

/* The quantity of e. */
quota_qty_t workload_qty(const workload_qty_t *e);

/* A container as declared (what re-resolving after a policy change needs). */
typedef struct {
	const char *name;		/* container name ("" when absent) */
	const workload_qty_t *requests; /* resources.requests */
	const workload_qty_t *limits;	/* resources.limits */
	quota_container_kind_t kind;	/* init, sidecar or app */
	uint16_t n_requests, n_limits;	/* entries */
} workload_container_t;

/* One resource of a pod's effective request. */
typedef struct {
	quota_qty_t qty;  /* per pod (first: no padding before its 16-byte alignment) */
	const char *name; /* resource, e.g. "nvidia.com/gpu", "cpu" */
	int64_t amount;	  /* quota_qty_amount(name, qty): millicores for cpu, whole
			     units (rounded up) for the rest */
} workload_request_t;

typedef struct {
	const char *key;   /* label key */
	const char *value; /* label value ("" allowed) */
} workload_label_t;

/* One toleration; members NULL when absent. */
typedef struct {
	const char *key;    /* key (NULL: every key, with operator Exists) */
	const char *op;	    /* operator: "Equal" (default) or "Exists" */
	const char *value;  /* value */
	const char *effect; /* NoSchedule, PreferNoSchedule, NoExecute; NULL: all */
	int64_t seconds;    /* tolerationSeconds */
	bool has_seconds;   /* tolerationSeconds given */
} workload_toleration_t;

/* How far a pod spec's affinity goes towards a required node affinity:
 * where a release adds gpuq's (docs/topology.md, "Pinning on release"). */
typedef enum {
	WORKLOAD_AFFINITY_NONE,	       /* no spec.affinity */
	WORKLOAD_AFFINITY_NO_NODE,     /* affinity, without nodeAffinity */
	WORKLOAD_AFFINITY_NO_REQUIRED, /* nodeAffinity, without
					  requiredDuringSchedulingIgnoredDuringExecution */
	WORKLOAD_AFFINITY_REQUIRED,    /* its own required node affinity */
} workload_affinity_t;

/* The workload_affinity_t of a pod spec (NULL: NONE). */
workload_affinity_t workload_node_affinity(const jv_t *spec);

/* One pod set of a workload (members ordered by size: no padding; the
 * counts are 16-bit: each list is capped far below 65,536 where it is
 * read, WORKLOAD_CONTAINERS_MAX, QUOTA_RESLIST_MAX, WORKLOAD_CLAIMS_MAX,
 * WORKLOAD_SELECTOR_MAX, WORKLOAD_TOLERATIONS_MAX). */
typedef struct {
	const char *name;			  /* pod set name */
	int64_t count;				  /* pods admitted at once */
	const char *tmpl_ptr;			  /* JSON Pointer of its pod template ("" for a
						     Pod: the object) */
	const char *spec_field;			  /* its pod spec's path for messages
						     ("spec.template.spec") */
	const workload_container_t *containers;	  /* as declared, init first */
	const workload_qty_t *overhead;		  /* spec.overhead */
	const char *const *claim_templates;	  /* resourceClaimTemplateName of each claim */
	const char *priority_class;		  /* the pod spec's priorityClassName; NULL */
	const char *runtime_class;		  /* the pod spec's runtimeClassName; NULL */
	const workload_label_t *node_selector;	  /* the pod spec's nodeSelector */
	const workload_toleration_t *tolerations; /* the pod spec's tolerations */
	const workload_topology_t *topology;	  /* its template's topology annotations;
						     NULL when it declares none */
	/* resolved (workload_resolve): */
	int64_t dra_gpus;	      /* devices asked through GPU DRA claims */
	workload_request_t *requests; /* one pod's effective request (resolve's
					 allocation) */
	uint16_t n_containers;	      /* entries in containers */
	uint16_t n_overhead;	      /* entries in overhead */
	uint16_t n_claim_templates;   /* entries in claim_templates */
	uint16_t n_node_selector;     /* entries in node_selector */
	uint16_t n_tolerations;	      /* entries in tolerations */
	uint16_t n_requests;	      /* resolved: entries in requests */
	bool has_meta;		      /* the template has metadata (patches add it when not) */
	bool has_annotations;	      /* ... metadata.annotations */
	bool has_labels;	      /* ... metadata.labels */
	bool tmpl_admitted;	      /* gpuq.dev/admitted = "true" on the template */
	bool managed;		      /* label gpuq.dev/managed = "true" on the template */
	bool gpu_named;		      /* a container asks for a GPU resource by name */
	bool counted_only;	      /* the view's counted_only: release and restore
					 write only its placement (no label,
					 annotation or default) */
	bool gpu;		      /* resolved: asks for a GPU (resources or DRA) */
	bool terminating;	      /* the pod spec sets activeDeadlineSeconds (quota scope) */
	bool cross_ns_affinity;	      /* a pod (anti-)affinity term names other namespaces */
	/* three in one byte (a queued Job's pod set stays 24 bytes of flags) */
	bool no_tmpl : 1;	   /* nothing at tmpl_ptr (a RayJob's default
				      submitter) */
	bool default_tmpl : 1;	   /* no_tmpl, and the release may write the
				      kind's default_image_ptr template there */
	uint8_t node_affinity : 2; /* how far the pod spec's affinity goes
				      (workload_affinity_t) */
} workload_podset_t;

/* The GPUs one pod of resolved pod set ps holds (its effective request's
 * GPU resources, DRA devices included). */
int64_t workload_podset_gpus(const workload_config_t *cfg, const workload_podset_t *ps);

/* What few objects carry: a Pod's and a set member's fields, the
 * controller owner, gpuq's rarer annotations. Out of line, so a queued Job
 * (none of them) does not pay for them: a workload's x points at one in its
 * own allocation when any is set, else at workload_no_extra (never NULL). */
typedef struct {
	const char *flavors;		/* annotation gpuq.dev/flavors; NULL */
	const char *original;		/* annotation gpuq.dev/original-scheduling; NULL */
	const char *expected_runtime;	/* annotation gpuq.dev/expected-runtime as
					   written (the predictions' declared runtime);
					   NULL */
	const char *owner_api_version;	/* the ownerReference with controller: true
					   (a Job's Pod: "batch/v1"); NULL when none */
	const char *owner_kind;		/* its kind ("Job"); NULL when none */
	const char *owner_name;		/* its name; NULL when none */
	const char *owner_uid;		/* its uid; NULL when none */
	const char *pod_group;		/* Pod: label kueue.x-k8s.io/pod-group-name; NULL */
	const char *const *other_gates; /* Pod: its other scheduling gates' names */
	/* A Pod of a set gpuq admits by groups (gates on its Pods), or a
	 * StatefulSet an LWS made: */
	const char *set_name;	  /* that LeaderWorkerSet's or StatefulSet's name */
	const char *phase;	  /* Pod: status.phase; NULL when absent */
	const char *node_name;	  /* Pod: spec.nodeName; NULL when absent */
	uint32_t n_other_gates;	  /* entries in other_gates */
	workload_kind_t set_kind; /* WORKLOAD_KIND_LWS (its labels name one),
				     WORKLOAD_KIND_STATEFULSET (a Pod's controller
				     owner), else OTHER */
	uint32_t set_podset;	  /* an LWS Pod's pod set: 0 leader, 1 worker */
	int32_t pod_group_total;  /* Pod in a group: the total-count annotation
				     (1..WORKLOAD_POD_GROUP_MAX); else 0 */
	int32_t set_group;	  /* an LWS Pod's group index (-1 unknown or past
				     INT32_MAX) */
	int32_t first_ordinal;	  /* a StatefulSet: its first Pod's ordinal
				     (spec.ordinals.start), 0 when absent */
	int32_t surge;		  /* a LeaderWorkerSet: the groups a rolling update
				     may make past spec.replicas (its maxSurge, as
				     the LWS controller scales it), 0 when none */
	int32_t max_exec_s;	  /* label max-exec-time-seconds (the view's), 0 when
				     absent */
	bool unretriable;	  /* Pod in a group: annotation
				     kueue.x-k8s.io/retriable-in-group is "false" */
} workload_extra_t;

/* The extra of a workload that carries none of it: every member NULL, 0 or
 * OTHER, set_group -1. */
extern const workload_extra_t workload_no_extra;

/* Every string is owned by the workload and NUL-terminated; NULL where noted. */
typedef struct workload {
	const workload_integration_t *integ; /* its row */
	const char *namespace_;		     /* metadata.namespace (required) */
	const char *name;		     /* metadata.name (required) */
	const char *uid;		     /* metadata.uid (required) */
	const char *resource_version;	     /* metadata.resourceVersion ("" when absent) */
	int64_t created_ms;		     /* metadata.creationTimestamp (required), ms
						since the epoch */
	const char *queue;		     /* label gpuq.dev/queue-name, else
						kueue.x-k8s.io/queue-name; NULL when neither */
	const workload_extra_t *x;	     /* the rarer members (never NULL) */
	uint64_t status_hash;		     /* annotation gpuq.dev/status (the coarse
						status the webhook or a leader wrote): its
						FNV-1a 64 (gpuq_fnv1a_str from
						GPUQ_FNV1A_BASIS) | 1, the text not kept (a
						writer only asks whether it changed); 0 when
						absent */
	int64_t deadline_s;		     /* a Job's spec.activeDeadlineSeconds; 0 when
						absent or not a positive integer */
	int64_t pods;			     /* the pod sets' counts summed (a Pod: 1); a
						LeaderWorkerSet: one group's */
	int64_t replicas;		     /* a LeaderWorkerSet's groups (spec.replicas);
						a StatefulSet's spec.replicas; else 0 */
	workload_podset_t *podsets;	     /* 1..WORKLOAD_PODSETS_MAX pod sets */
	/* status */
	int64_t active;	     /* Job: status.active (0 when absent); others: pods running */
	int64_t succeeded;   /* Job: status.succeeded */
	int64_t failed;	     /* Job: status.failed */
	int64_t terminating; /* Job: status.terminating */
	int64_t ready_pods;  /* Job: status.ready; Pod: 1 when Ready; others: pods
				Ready as their status counts them */
	/* resolved (workload_resolve): */
	const char *priority_class; /* the class it came from (the global default's
				       name when none is named); NULL when none */
	void *resolved;		    /* owned: a later resolve's requests (NULL: in the
				       workload's own allocation) */
	/* the 4-byte and 1-byte members, packed (same groups as above): */
	workload_kind_t kind;	     /* the object's kind */
	uint32_t n_podsets;	     /* entries in podsets */
	int32_t runtime_patch_at;    /* a kind whose pod sets are its child's: the index
					of gpuq's entry in its runtime_patch list
					(manager WORKLOAD_PATCH_MANAGER), -1 when none */
	int32_t priority;	     /* resolved: its priorityClassName's value (the
					first pod set that names one counts); else the
					global default PriorityClass's; else 0. Never
					a pod spec's own priority integer */
	uint32_t mem_used;	     /* bytes of the workload's one allocation in use:
					w itself first, then every member (the
					decode's scratch copied to the size it used) */
	uint32_t mem_room;	     /* where that allocation's room for the first
					resolve ends; 0 once used (resolve uses it
					once) */
	bool deleting;		     /* metadata.deletionTimestamp is set */
	bool has_annotations;	     /* metadata.annotations exists */
	bool admitted;		     /* annotation gpuq.dev/admitted is "true" */
	bool suspend;		     /* the kind's suspend field is true */
	bool gated;		     /* Pod: carries the gpuq.dev/admission gate */
	bool fast_admission;	     /* its Pods appear one after another
					(StatefulSet OrderedReady, LWS LeaderReady):
					admitted before they all exist */
	bool started;		     /* Job: status.startTime is set */
	bool finished;		     /* the kind's finished condition (Job: Complete or
					Failed; Pod: phase Succeeded or Failed; JobSet:
					Completed or Failed; RayJob: a terminal
					deployment status) */
	bool ready;		     /* Pod: condition Ready is "True" */
	bool gpu_said;		     /* a kind whose pod sets are its child's
					(podsets_of_child): it carries a queue label or
					names a GPU (the view's gpu) */
	bool has_runtime_patches;    /* ... its runtime_patch list exists */
	bool gpu;		     /* resolved: some pod set asks for a GPU */
	bool priority_class_unknown; /* resolved: a named class the policy lacks:
					priority 0 */
} workload_t;

/* Decode obj (a watched object of a supported kind, as a LIST or WATCH
 * returns it) without a policy: everything the object itself says. kind is
 * the collection's (a LIST item carries no apiVersion and kind), or
 * WORKLOAD_KIND_OTHER to take it from the object's apiVersion and kind. cfg
 * may be NULL (no extra GPU names). On GPUQ_OK *out is the caller's
 * (workload_destroy); it still needs workload_resolve before its requests,
 * gpu and priority are read. GPUQ_EINVAL for anything it refuses (another
 * kind, a missing required field, a field of the wrong type, a bad quantity
 * or timestamp, a cap above), with diag naming the field and the value;
 * GPUQ_ENOMEM. Thread-safe (the watch threads decode their own events). */
int workload_decode(const jv_t *obj, workload_kind_t kind, const workload_config_t *cfg,
		    workload_t **out, gpuq_diag_t *diag);
/* workload_decode of json[0..len) (need not be NUL-terminated; its kind from
 * its apiVersion and kind), parsed with jv/ (GPUQ_EINVAL naming the parse
 * error when it is not JSON). */
int workload_decode_json(const char *json, size_t len, const workload_config_t *cfg,
			 workload_t **out, gpuq_diag_t *diag);
/* Resolve w against policy (may be NULL: no LimitRange defaults, no DRA
 * claims, no PriorityClasses): each pod set's effective per-pod request (a
 * template's with the namespace's LimitRange defaults its Pods will get, a
 * Pod's as it is, plus DRA GPUs as nvidia.com/gpu), gpu, priority. Again
 * after every policy change; replaces what an earlier resolve gave.
 * GPUQ_OK; GPUQ_EINVAL (too many resources, a sum above 2^63-1) with diag;
 * GPUQ_ENOMEM (w keeps its former resolution). */
int workload_resolve(workload_t *w, const policy_t *policy, gpuq_diag_t *diag);
/* What resolved w's Pods show a ResourceQuota's scopes, as
 * workload_view_quota_scope (BestEffort when its first pod set's effective
 * request names no cpu or memory: a limit alone is a request). Strings
 * borrowed from w. */
void workload_quota_scope(const workload_t *w, quota_pod_scope_t *out);
/* Whether w belongs to a set whose Pods gpuq admits by groups (its
 * x->set_kind names the set's kind): a set's Pod, or a StatefulSet an
 * LWS made (the LWS's groups hold its Pods, not the StatefulSet). */
bool workload_set_member(const workload_t *w);
/* Free w. NULL is fine. */
void workload_destroy(workload_t *w);

/* The one rule for a pod's overhead (the RuntimeClass admission plugin's,
 * for the Pods a template makes): a template naming runtime_class (NULL:
 * none) gets that class's overhead.podFixed when its own overhead is
 * empty; its own must equal the class's when it sets one, and must be
 * empty when the class has none or no class is named. overhead is the
 * template's, completed in place. With no policy nothing is known and
 * nothing is added. GPUQ_OK; GPUQ_ENOTFOUND (no such class in the policy)
 * and GPUQ_EDENIED (an overhead the apiserver refuses), each with diag in
 * the apiserver's words ("pod rejected: RuntimeClass \"kata\" not found"):
 * its Pods would be refused. */
int workload_runtime_overhead(const policy_t *policy, const char *runtime_class,
			      quota_reslist_t *overhead, gpuq_diag_t *diag);

/* The workload's name as people know it: "<short name>/<name>" ("job/train",
 * "jobset/llama-70b"; a Pod group: "podgroup/<group>"), into buf. */
const char *workload_display_name(workload_kind_t kind, const char *name, char *buf, size_t cap);

#endif

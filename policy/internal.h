/*
 * policy internals, shared by the module's .c files only (never included
 * from outside policy/). The snapshot's memory is one arena freed at once;
 * objects are reached through pointer vectors (declaration order) and one
 * open-addressing index keyed by (kind, namespace, name): all in mem.c, the
 * module's leaf (it calls no other file of policy/).
 */
#ifndef GPUQ_POLICY_INTERNAL_H
#define GPUQ_POLICY_INTERNAL_H

#include <stdatomic.h>

#include "policy/policy_json.h"

/* ---- Arena: every string and object of a snapshot; freed as a whole ---- */

typedef struct policy_block policy_block_t;

typedef struct {
	policy_block_t *head; /* newest block first */
} policy_arena_t;

/* n zeroed bytes aligned for any type (including __int128), or NULL. */
void *policy_arena_alloc(policy_arena_t *a, size_t n);
/* An arena copy of s, or NULL on allocation failure. */
char *policy_arena_strdup(policy_arena_t *a, const char *s);
void policy_arena_free(policy_arena_t *a);

/* ---- Pointer vectors (declaration order) ---- */

typedef struct {
	void **items; /* malloc'd */
	size_t n;     /* used */
	size_t cap;   /* allocated */
} policy_vec_t;

int policy_vec_push(policy_vec_t *v, void *item);

/* ---- Index by (kind, namespace, name) ---- */

typedef enum {
	POLICY_K_NAMESPACE = 1,
	POLICY_K_LIMITRANGE,
	POLICY_K_QUOTA,
	POLICY_K_PRIORITYCLASS,
	POLICY_K_FLAVOR,
	POLICY_K_CQ,
	POLICY_K_LQ,
	POLICY_K_COHORT,
	POLICY_K_CLAIMTEMPLATE,
	POLICY_K_RUNTIMECLASS,
	POLICY_K_TOPOLOGY,
	POLICY_K_TOTAL,	   /* scratch: cohort lending totals at finish */
	POLICY_K_OUT = 64, /* + a kind above: that kind's left-out record (leftout.c) */
} policy_kind_t;

typedef struct {
	int kind;	  /* policy_kind_t; 0 = empty slot */
	const char *ns;	  /* namespace ("" for cluster-scoped) */
	const char *name; /* object name */
	void *obj;	  /* the object */
} policy_slot_t;

typedef struct {
	policy_slot_t *slots; /* malloc'd, cap entries, cap a power of two */
	size_t cap;	      /* slots allocated */
	size_t n;	      /* slots used (kept <= cap / 2) */
} policy_index_t;

/* Add (kind, ns, name) -> obj; GPUQ_EEXIST (nothing changed) when present,
 * GPUQ_ENOMEM. ns and name must outlive the index. */
int policy_index_put(policy_index_t *ix, int kind, const char *ns, const char *name, void *obj);
void *policy_index_get(const policy_index_t *ix, int kind, const char *ns, const char *name);
void policy_index_free(policy_index_t *ix);
/* Make (kind, ns, name) look absent (policy_index_get returns NULL); its
 * slot stays taken, so no put may follow for that key (only policy_finish
 * drops, after its last put). */
void policy_index_drop(policy_index_t *ix, int kind, const char *ns, const char *name);

/* ---- Wrappers adding private fields to public objects ---- */

typedef struct {
	policy_namespace_t pub; /* first: a policy_namespace_t * points here */
	bool managed;		/* some CQ selects it, or it holds a LocalQueue left
				   out (set by policy_finish) */
} policy_ns_entry_t;

typedef struct {
	quota_limitrange_t pub; /* first */
	policy_origin_t origin; /* where declared */
} policy_lr_entry_t;

typedef struct {
	quota_resourcequota_t pub; /* first */
	policy_origin_t origin;	   /* where declared */
} policy_rq_entry_t;

struct policy {
	atomic_long refs;	 /* references held */
	policy_opts_t opts;	 /* options given to policy_create */
	bool finished;		 /* policy_finish succeeded: read-only from now */
	uint64_t fingerprint;	 /* of the dir it was loaded from, or 0 */
	size_t n_objects;	 /* objects added, all kinds (POLICY_OBJECTS_MAX) */
	policy_origin_t origin;	 /* origin stamped on objects being added */
	policy_arena_t arena;	 /* all objects and strings */
	policy_index_t index;	 /* (kind, ns, name) -> object */
	policy_vec_t namespaces; /* policy_ns_entry_t * */
	policy_vec_t pcs;	 /* policy_priorityclass_t * */
	policy_vec_t flavors;	 /* policy_flavor_t * */
	policy_vec_t topologies; /* policy_topology_t * */
	policy_vec_t cqs;	 /* policy_cq_t * */
	policy_vec_t cohorts;	 /* policy_cohort_t * (declared first after finish) */
	policy_vec_t lqs;	 /* policy_lq_t * */
	policy_vec_t lrs;	 /* policy_lr_entry_t * */
	policy_vec_t rqs;	 /* policy_rq_entry_t * */
	policy_vec_t rcts;	 /* policy_claimtemplate_t * */
	policy_vec_t rtcs;	 /* policy_runtimeclass_t * */
	policy_vec_t skipped;	 /* policy_skipped_t * (opts.skip_workloads) */
	policy_vec_t leftouts;	 /* leftout.c's records (opts.leave_out_broken) */
	const policy_priorityclass_t *default_pc; /* the globalDefault class or NULL */
};

/* The namespace entry for name, created (implied, undeclared) if missing.
 * GPUQ_ELIMIT past POLICY_NAMESPACES_MAX, GPUQ_ENOMEM. */
int policy_ns_ensure(policy_t *p, const char *name, policy_ns_entry_t **out);

/* The label every Namespace carries with its own name (a namespace not seen
 * yet is given only it). */
#define POLICY_NAME_LABEL "kubernetes.io/metadata.name"

/* ---- Decoding (decode.c, decode_queue.c) ---- */

/* Decode obj by its apiVersion and kind and add it (policy_add_json). */
int policy_decode_object(policy_t *p, const json_t *obj, gpuq_diag_t *diag);

/* One object being decoded: the shared field decoder (policy_json.h) plus
 * the policy it goes into. */
typedef struct {
	policy_jdec_t j; /* paths, messages, typed getters; j.what is `ClusterQueue "a"` */
	policy_t *p;	 /* the policy being built */
	const char *api; /* apiVersion of the object */
} policy_dec_t;

/* policy_jdec_str, the string copied into the arena. */
int policy_dec_str(policy_dec_t *d, const json_t *obj, const char *key, bool required, size_t max,
		   const char **out);
/* A non-negative quantity from a string or number; *present set. */
int policy_dec_qty(policy_dec_t *d, const json_t *obj, const char *key, bool required,
		   quota_qty_t *out, bool *present);
/* The value v itself (already at the path) as a non-negative quantity. */
int policy_dec_qty_value(policy_dec_t *d, const json_t *v, quota_qty_t *out);
/* A weight quantity as thousandths (default 1000 when absent). */
int policy_dec_weight(policy_dec_t *d, const json_t *obj, const char *key, int64_t *milli);
/* A map of resource name -> quantity into list (absent: left empty). */
int policy_dec_reslist(policy_dec_t *d, const json_t *obj, const char *key, quota_reslist_t *list);
/* A map of label key -> value into sorted labels (absent: empty). */
int policy_dec_labels(policy_dec_t *d, const json_t *obj, const char *key, size_t max,
		      policy_labels_t *out);
/* A LabelSelector (absent or null: not present, selects nothing). */
int policy_dec_selector(policy_dec_t *d, const json_t *obj, const char *key,
			policy_selector_t *out);

/* Name rules (Kubernetes): DNS-1123 label (<= 63) and subdomain (<= 253);
 * label keys (optional subdomain prefix + '/' + name) and values;
 * resource names (optional prefix + '/' + name). */
bool policy_name_is_label(const char *s);
/* policy_name_is_subdomain, _label_key, _label_value: policy.h */
bool policy_name_is_resource(const char *s);

/* Kind decoders: obj's apiVersion and kind are checked; metadata and spec
 * are theirs. d->j.what is set from kind and name by policy_dec_meta. */
int policy_dec_meta(policy_dec_t *d, const json_t *obj, const char *kind, bool namespaced,
		    bool name_is_label, const char **ns, const char **name);
/* metadata.annotations["gpuq.dev/price-per-hour"] of obj: *has false when
 * absent; GPUQ_EINVAL naming the annotation and value when it is not a
 * string ledger_price_parse takes (a decimal 0..LEDGER_PRICE_MAX). */
int policy_dec_price(policy_dec_t *d, const json_t *obj, bool *has, double *price);
/* policy_dec_price, but with opts.price_lenient a bad value is GPUQ_OK,
 * unpriced, and *error (arena) holds the refusal; else *error is NULL. */
int policy_dec_price_lenient(policy_dec_t *d, const json_t *obj, bool *has, double *price,
			     const char **error);
int policy_decode_flavor(policy_dec_t *d, const json_t *obj);
int policy_decode_topology(policy_dec_t *d, const json_t *obj);
int policy_decode_cq(policy_dec_t *d, const json_t *obj);
int policy_decode_lq(policy_dec_t *d, const json_t *obj);
int policy_decode_cohort(policy_dec_t *d, const json_t *obj);
/* decode_econ.c: gpuq's economics fields (gpuq.dev/v1beta1 only). */
int policy_dec_budget(policy_dec_t *d, const json_t *spec, bool is_lq, policy_budget_t *out);
int policy_dec_min_runtime(policy_dec_t *d, const json_t *spec, int64_t *out);
/* spec.maxExecutionTime of a ClusterQueue: a duration, 1 s to
 * POLICY_MAX_EXEC_MAX_MS; *out 0 when absent. */
int policy_dec_max_exec(policy_dec_t *d, const json_t *spec, int64_t *out);
/* spec.starvationLimit of a ClusterQueue: a duration, 1 s to
 * POLICY_MAX_EXEC_MAX_MS; *out 0 when absent. */
int policy_dec_starvation(policy_dec_t *d, const json_t *spec, int64_t *out);
int policy_dec_idle(policy_dec_t *d, const json_t *spec, policy_idle_t *out);
int policy_dec_pc_min_runtime(policy_dec_t *d, const json_t *obj, int64_t *out);
/* At finish: one Namespace budget per namespace. */
int policy_check_budgets(policy_t *p, gpuq_diag_t *diag);

/* Add obj to the index and the count of objects, with a duplicate message
 * naming the first declaration. Call last, once the object is complete. */
int policy_dec_register(policy_dec_t *d, int kind, const char *ns, const char *name, void *obj);

/* The policy's current origin, copied into an object. */
policy_origin_t policy_dec_origin(const policy_dec_t *d);

/* ---- Finishing (policy.c, tree.c; the helpers below live in mem.c) ---- */

/* Report an allocation failure in diag; always GPUQ_ENOMEM. Inline, so the
 * static analyzer sees the constant (out of line, clang-tidy takes
 * `return p ? GPUQ_OK : policy_oom(d)` for a path returning GPUQ_OK with p
 * NULL). */
static inline int policy_oom(gpuq_diag_t *diag)
{
	gpuq_diag_set(diag, GPUQ_ENOMEM, "out of memory");
	return GPUQ_ENOMEM;
}

/* Write "<file>: document <n>: <msg>" for an object at origin o; returns rc. */
int policy_fail_at(gpuq_diag_t *diag, int rc, policy_origin_t o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The cohort called name, made (undeclared, weight 1) when no Cohort
 * declares it; who names the referring field for the cap's error. */
int policy_cohort_implied(policy_t *p, const char *name, const char *who, policy_origin_t origin,
			  policy_cohort_t **out, gpuq_diag_t *diag);

/* Point each flavor quota of groups[0..n) of object kind (POLICY_K_CQ or
 * POLICY_K_COHORT) name at its ResourceFlavor; a missing one, or one left
 * out (its Topology missing), leaves the object out (policy_leave_out),
 * naming the field. */
int policy_flavors_resolve(policy_t *p, int kind, const char *name, policy_origin_t origin,
			   const policy_resource_group_t *groups, size_t n, gpuq_diag_t *diag);

/* Cohorts' parents (implied ones made), their quota's flavors resolved,
 * the tree checked: no cycle, at most POLICY_COHORT_DEPTH_MAX deep. A
 * cohort that fails is left out (policy_leave_out), and so is every cohort
 * under it. */
int policy_cohort_tree(policy_t *p, gpuq_diag_t *diag);

/* ---- Objects left out (leftout.c) ---- */

/* Object (kind, ns, name) declared at origin fails a check across objects,
 * said by fmt as "<Kind> \"<name>\": <field>: <what is wrong>". Without
 * opts.leave_out_broken: rc, with that message after the origin in diag
 * (policy_fail_at). With it: the object is recorded as left out for reason
 * (a POLICY_REASON_*, a static string) and GPUQ_OK is returned, so the
 * caller goes on with the next object (GPUQ_ENOMEM, or GPUQ_ELIMIT past
 * POLICY_OBJECTS_MAX records, still end the finish). The first reason
 * recorded for an object stays. */
int policy_leave_out(policy_t *p, gpuq_diag_t *diag, int rc, int kind, const char *ns,
		     const char *name, policy_origin_t origin, const char *reason, const char *fmt,
		     ...) __attribute__((format(printf, 9, 10)));

/* Whether a check across objects left (kind, ns, name) out. */
bool policy_is_out(const policy_t *p, int kind, const char *ns, const char *name);

/* With opts.leave_out_broken, obj, which its decoder refused with msg, is
 * recorded as left out (POLICY_REASON_INVALID), when it has a kind and a
 * name to be found by; GPUQ_OK, GPUQ_ENOMEM, GPUQ_ELIMIT. */
int policy_leave_out_decoded(policy_t *p, const json_t *obj, const char *msg);

/* At the end of the checks: the left-out objects out of their vectors and
 * the index; ClusterQueues renumbered (cq->index). */
void policy_leftout_compact(policy_t *p);

/* max_fit of every ClusterQueue quota, over its cohort tree. */
int policy_max_fit_build(policy_t *p, gpuq_diag_t *diag);

#endif

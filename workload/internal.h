/*
 * workload/internal.h: shared by the files of workload/ only; the module's
 * interface is workload/workload.h.
 *
 * Files, bottom up: gpu.c (the GPU rule), keys.c (who writes which
 * gpuq.dev/ key), topology.c (each pod set's topology annotations), view.c (an object's pod sets as
 * the admission rules read them), kinds.c (the integration table: each kind's pod sets and status),
 * object.c (the owned, compact workload), resolve.c (what the policy makes
 * of it).
 */
#ifndef GPUQ_WORKLOAD_INTERNAL_H
#define GPUQ_WORKLOAD_INTERNAL_H

#include "workload/workload.h"

/* The refusal context of a view (its kind and name as far as known). */
static inline jv_fields_t workload_fields_of(const workload_view_t *w, gpuq_diag_t *diag)
{
	return (jv_fields_t){.kind_name = w->kind_name, .name = w->name, .diag = diag};
}

/* topology.c: each pod set's topology annotations (its pod_annotations)
 * into its topology, checked (workload_topology_t); GPUQ_EINVAL naming the
 * annotation and its value (diag may be NULL). made: the object is one a
 * parent's controller made (a JobSet's Job, an LWS's StatefulSet), whose
 * groups are its parent's, checked at the parent's creation. */
int workload_view_topology(workload_view_t *w, bool made, gpuq_diag_t *diag);

/* view.c: read the template at `tmpl` (a {metadata, spec} object, or NULL
 * when absent) into ps: its labels, annotations and pod spec, each checked
 * for its type, then its schedulingGates. field is the template's path for
 * messages ("spec.template"), ptr its JSON Pointer ("/spec/template"). */
int workload_view_template(workload_view_t *w, workload_view_podset_t *ps, const jv_t *tmpl,
			   const char *field, const char *ptr, gpuq_diag_t *diag);
/* view.c: the pod set a kind's reader fills next (zeroed, named), or a
 * refusal past WORKLOAD_PODSETS_MAX (field names the list). */
int workload_view_podset_new(workload_view_t *w, const char *name, const char *field,
			     workload_view_podset_t **out, gpuq_diag_t *diag);
/* view.c: a Job spec's pod count: min(parallelism, completions), parallelism
 * default 1, completions only when set; field prefixes the messages
 * ("spec" or "spec.replicatedJobs[0].template.spec"). */
int workload_view_job_counts(const workload_view_t *w, const jv_t *spec, const char *field,
			     int64_t *parallelism, int64_t *pods, gpuq_diag_t *diag);

/* runtime.c: GPU devices the claim template template_name of namespace ns
 * asks for (the first choice of each request whose device class is
 * NVIDIA's; All counts as 1); 0 without a policy or such a template. */
int64_t workload_claim_gpus(const policy_t *policy, const char *ns, const char *template_name);
/* runtime.c: give a template's pod what its Pods will get, in place: each
 * container the LimitRange defaults of ns (quota_limitrange_default; none
 * without a policy: a limit alone still becomes the request), the pod its
 * RuntimeClass's overhead (workload_runtime_overhead). GPUQ_OK, GPUQ_ELIMIT
 * (a list would pass QUOTA_RESLIST_MAX), or the RuntimeClass plugin's
 * refusals (GPUQ_ENOTFOUND, GPUQ_EDENIED) in diag. overhead false: the
 * pod keeps its own (a Pod has had it since its creation). */
int workload_pod_default(quota_pod_t *pod, const policy_t *policy, const char *ns, bool overhead,
			 const char *runtime_class, gpuq_diag_t *diag);
/* runtime.c: the effective request of one pod: requests as ResourceQuota
 * counts them (quota_pod_requests), and `one`, the same plus dra_gpus as
 * nvidia.com/gpu (what a ClusterQueue is charged). GPUQ_OK, GPUQ_ELIMIT,
 * GPUQ_ERANGE. */
/* runtime.c: `one` of a pod whose requests are known: requests plus
 * dra_gpus as nvidia.com/gpu. GPUQ_OK, GPUQ_ELIMIT, GPUQ_ERANGE. */
int workload_pod_one(const quota_reslist_t *requests, int64_t dra_gpus, quota_reslist_t *one);
int workload_pod_request(const quota_pod_t *pod, int64_t dra_gpus, quota_reslist_t *requests,
			 quota_reslist_t *one);
/* view.c: a claim's template name (v1 field, or the older source.*). */
const char *workload_claim_template(const jv_t *claim);

/* view.c: parse a quantity given as a JSON string or number. */
int workload_qty_json(const jv_t *v, quota_qty_t *out, gpuq_diag_t *diag);

/* ---- object.c: the owned decode ---- */

/* A workload being decoded: every member lives in a chain of scratch
 * blocks, copied at the end into one block of the size used (object.c:
 * compact, which moves every pointer member); refusals name its kind and
 * metadata.name. */
typedef struct workload_decoder {
	workload_t *w;	     /* being filled (in the first block) */
	jv_fields_t f;	     /* refusals: kind, metadata.name ("" until known) */
	void *cur;	     /* the block allocations come from */
	workload_extra_t *x; /* w's extra once one member is set (NULL: none yet) */
} workload_decoder_t;

/* n bytes (16-aligned, zeroed) in d's blocks, or NULL (no memory). */
void *workload_dec_alloc(workload_decoder_t *d, size_t n);
/* d's workload's extra, made (workload_no_extra's values, in d's blocks) the
 * first time a member of it is set; NULL (no memory). Called only to set a
 * member, so a workload that sets none keeps workload_no_extra. */
workload_extra_t *workload_dec_extra(workload_decoder_t *d);
/* A string member (jv_fields_str) copied into d's blocks (at most
 * WORKLOAD_STR_MAX bytes, else refused naming path). */
int workload_dec_str(workload_decoder_t *d, const jv_t *obj, const char *key, const char *path,
		     bool required, const char **out);
/* status and status.conditions of obj, each checked for its type. */
int workload_dec_status_parts(workload_decoder_t *d, const jv_t *obj, const jv_t **status,
			      const jv_t **conds);
/* Whether conditions (an array) has one of type with status "True". */
bool workload_condition_true(const jv_t *conditions, const char *type);
/* n bytes (16-aligned) from the room left in w's last block, once (the
 * first resolve's requests); NULL when it does not fit or was used. */
void *workload_tail_alloc(workload_t *w, size_t n);
/* The static copy of a resource name most objects ask for ("cpu",
 * "nvidia.com/gpu", ...: kept by pointer, not copied), or NULL. */
const char *workload_known_resource(const char *name);

/* view.c: what pod spec `spec` shows a ResourceQuota's scopes besides its
 * class and requests: activeDeadlineSeconds set (Terminating), a pod
 * (anti-)affinity term naming namespaces or a namespaceSelector
 * (CrossNamespacePodAffinity). */
void workload_pod_spec_scopes(const jv_t *spec, bool *terminating, bool *cross_ns);

#endif

/* webhook/workload.c: a Pod or a batch/v1 Job as the admission rules see it:
 * its labels, its pod spec's containers with parsed quantities, whether it
 * asks for GPUs (by resource name or through a DRA claim template), and how
 * many pods it counts for. Borrowed pointers into the review's JSON tree; the
 * only allocation is the container array, sized to the pod. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/admit_internal.h"

/* DRA device classes that hand out NVIDIA GPUs or MIG slices. */
static const char *const gpu_device_classes[] = {"gpu.nvidia.com", "mig.nvidia.com"};

/* The refusal context of w (its name as far as known). */
static webhook_fields_t fields_of(const webhook_workload_t *w, gpuq_diag_t *diag)
{
	return (webhook_fields_t){.kind_name = w->kind_name, .name = w->name, .diag = diag};
}

const char *webhook_labels_queue(const webhook_jv_t *labels)
{
	const char *q = webhook_json_str(labels, WEBHOOK_LABEL_QUEUE);

	return q ? q : webhook_json_str(labels, WEBHOOK_LABEL_KUEUE_QUEUE);
}

bool webhook_is_gpu_resource(const webhook_config_t *cfg, const char *name)
{
	if (!strcmp(name, "nvidia.com/gpu") || !strcmp(name, "nvidia.com/gpu.shared") ||
	    !strncmp(name, "nvidia.com/mig-", 15))
		return true;
	for (size_t i = 0; cfg && i < cfg->n_gpu_resources; i++)
		if (cfg->gpu_resources[i] && !strcmp(name, cfg->gpu_resources[i]))
			return true;
	return false;
}

/* Parse a quantity given as a JSON string or number (a number's text is
 * parsed as written, as apimachinery does). */
static int qty_from_json(const webhook_jv_t *v, quota_qty_t *out, gpuq_diag_t *diag)
{
	if (webhook_jv_is(v, WEBHOOK_JV_STRING) || webhook_jv_is(v, WEBHOOK_JV_NUMBER))
		return quota_qty_parse(v->s, v->len, out, diag);
	return gpuq_diag_set(diag, GPUQ_EINVAL, "a quantity must be a string or a number");
}

/* Field path of container i for messages: spec.containers[0]. */
static void cfield(const webhook_workload_t *w, size_t i, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s.%s[%zu]", w->spec_field,
		 w->refs[i].init ? "initContainers" : "containers", w->refs[i].index);
}

/* Decode resources.<which> of container i into list. */
static int decode_list(webhook_workload_t *w, size_t i, const char *which, quota_reslist_t *list,
		       gpuq_diag_t *diag)
{
	const webhook_fields_t f = fields_of(w, diag);
	const webhook_jv_t *res, *m, *v;
	char where[160], path[192], at[512];
	gpuq_diag_t inner;
	int rc;

	list->n = 0;
	cfield(w, i, where, sizeof(where));
	snprintf(path, sizeof(path), "%s.resources", where);
	rc = webhook_fields_typed(&f, w->refs[i].json, "resources", WEBHOOK_JV_OBJECT, path, &res);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s.resources.%s", where, which);
	rc = webhook_fields_typed(&f, res, which, WEBHOOK_JV_OBJECT, path, &m);
	if (rc || !m)
		return rc;
	for (const webhook_jv_t *k = m->first; k; k = v->next) {
		const char *key = k->s;
		quota_qty_t q;

		v = k->next;
		inner.msg[0] = '\0';
		snprintf(at, sizeof(at), "%s[%s]", path, key);
		rc = qty_from_json(v, &q, &inner);
		if (rc)
			return webhook_fields_refuse(&f, at, "%s", inner.msg);
		if (quota_qty_cmp(&q, &(quota_qty_t){0}) < 0)
			return webhook_fields_refuse(
			    &f, at, "invalid value \"%s\": must be greater than or equal to 0",
			    webhook_jv_is(v, WEBHOOK_JV_STRING) ? webhook_jv_str(v) : "");
		rc = quota_reslist_set(list, key, &q);
		if (rc)
			return webhook_fields_refuse(
			    &f, path,
			    "too many resources or name too long (%s; caps "
			    "%d entries, %d bytes)",
			    key, QUOTA_RESLIST_MAX, QUOTA_RES_NAME_MAX - 1);
		if (!w->gpu && webhook_is_gpu_resource(NULL, key) && !quota_qty_is_zero(&q)) {
			w->gpu = true;
			gpuq_strlcpy(w->gpu_resource, key, sizeof(w->gpu_resource));
		}
	}
	return GPUQ_OK;
}

/* spec.overhead (set by the RuntimeClass admission plugin on Pods). */
static int decode_overhead(webhook_workload_t *w, gpuq_diag_t *diag)
{
	const webhook_fields_t f = fields_of(w, diag);
	const webhook_jv_t *m, *v;
	char path[64], at[384];
	int rc;

	snprintf(path, sizeof(path), "%s.overhead", w->spec_field);
	rc = webhook_fields_typed(&f, w->pod_spec, "overhead", WEBHOOK_JV_OBJECT, path, &m);
	if (rc || !m)
		return rc;
	for (const webhook_jv_t *k = m->first; k; k = v->next) {
		const char *key = k->s;
		quota_qty_t q;
		gpuq_diag_t inner = {""};

		v = k->next;
		if (qty_from_json(v, &q, &inner) || quota_reslist_set(&w->pod.overhead, key, &q)) {
			snprintf(at, sizeof(at), "%s[%s]", path, key);
			return webhook_fields_refuse(&f, at, "invalid quantity: %s",
						     inner.msg[0] ? inner.msg
								  : "too many resources");
		}
	}
	return GPUQ_OK;
}

/* Every element of arr (at field path) must be an object. */
static int objects_only(const webhook_workload_t *w, const webhook_jv_t *arr, const char *path,
			gpuq_diag_t *diag)
{
	const webhook_fields_t f = fields_of(w, diag);
	char at[96];
	size_t i = 0;

	for (const webhook_jv_t *e = webhook_jv_first(arr); e; e = e->next, i++) {
		if (webhook_jv_is(e, WEBHOOK_JV_OBJECT))
			continue;
		snprintf(at, sizeof(at), "%s[%zu]", path, i);
		return webhook_fields_want(&f, at, e, WEBHOOK_JV_OBJECT);
	}
	return GPUQ_OK;
}

/* Collect refs to init containers then app containers; count them first. */
static int collect_containers(webhook_workload_t *w, gpuq_diag_t *diag)
{
	const webhook_fields_t f = fields_of(w, diag);
	const webhook_jv_t *init, *app;
	size_t n_init, n_app, n, k = 0;
	char pi[64], pa[64];
	int rc;

	snprintf(pi, sizeof(pi), "%s.initContainers", w->spec_field);
	snprintf(pa, sizeof(pa), "%s.containers", w->spec_field);
	rc = webhook_fields_typed(&f, w->pod_spec, "initContainers", WEBHOOK_JV_ARRAY, pi, &init);
	if (!rc)
		rc =
		    webhook_fields_typed(&f, w->pod_spec, "containers", WEBHOOK_JV_ARRAY, pa, &app);
	if (rc)
		return rc;
	n_init = webhook_jv_count(init);
	n_app = webhook_jv_count(app);
	n = n_init + n_app;
	if (n > WEBHOOK_CONTAINERS_MAX)
		return webhook_fields_refuse(&f, w->spec_field,
					     "%zu containers; gpuq reviews at most %d", n,
					     WEBHOOK_CONTAINERS_MAX);
	rc = objects_only(w, init, pi, diag);
	if (!rc)
		rc = objects_only(w, app, pa, diag);
	if (rc || !n)
		return rc;
	w->pod.containers = malloc(n * (sizeof(quota_container_t) + sizeof(webhook_cref_t)));
	if (!w->pod.containers)
		return GPUQ_ENOMEM;
	w->refs = (webhook_cref_t *)(w->pod.containers + n);
	for (size_t pass = 0; pass < 2; pass++) {
		const webhook_jv_t *arr = pass ? app : init;
		size_t cnt = pass ? n_app : n_init;

		const webhook_jv_t *c = webhook_jv_first(arr);

		for (size_t i = 0; i < cnt; i++, k++, c = c->next) {
			quota_container_t *qc = &w->pod.containers[k];
			const char *cname = webhook_json_str(c, "name");
			const char *restart = webhook_json_str(c, "restartPolicy");

			w->refs[k] = (webhook_cref_t){.init = !pass, .index = i, .json = c};
			gpuq_strlcpy(qc->name, cname ? cname : "", sizeof(qc->name));
			qc->kind = pass ? QUOTA_CONTAINER_APP
				   : (restart && !strcmp(restart, "Always"))
				       ? QUOTA_CONTAINER_SIDECAR
				       : QUOTA_CONTAINER_INIT;
			qc->requests.n = 0;
			qc->limits.n = 0;
		}
	}
	w->pod.n_containers = n;
	return GPUQ_OK;
}

/* Claim template name of resourceClaims[i] (v1 field, or the older source.*). */
static const char *claim_template(const webhook_jv_t *claim)
{
	const char *t = webhook_json_str(claim, "resourceClaimTemplateName");

	return t ? t
		 : webhook_json_str(webhook_json_obj(claim, "source"), "resourceClaimTemplateName");
}

/* GPU devices a claim template asks for: the first choice of each request
 * whose device class is NVIDIA's (All counts as 1: at least one device). */
static int64_t template_gpus(const policy_claimtemplate_t *t)
{
	int64_t n = 0;

	for (size_t i = 0; i < t->n_requests; i++) {
		const policy_device_request_t *rq = &t->requests[i];

		for (size_t c = 0; c < rq->n_choices; c++) {
			const policy_device_choice_t *ch = &rq->choices[c];
			bool gpu = false;

			for (size_t k = 0;
			     k < sizeof(gpu_device_classes) / sizeof(*gpu_device_classes); k++)
				gpu = gpu || (ch->device_class &&
					      !strcmp(ch->device_class, gpu_device_classes[k]));
			if (gpu) {
				n += ch->mode == POLICY_ALLOC_ALL ? 1 : ch->count;
				break;
			}
		}
	}
	return n;
}

static int decode_claims(webhook_workload_t *w, const policy_t *policy, const char *ns,
			 gpuq_diag_t *diag)
{
	const webhook_fields_t f = fields_of(w, diag);
	const webhook_jv_t *claims, *c;
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "%s.resourceClaims", w->spec_field);
	rc = webhook_fields_typed(&f, w->pod_spec, "resourceClaims", WEBHOOK_JV_ARRAY, path,
				  &claims);
	if (!rc)
		rc = objects_only(w, claims, path, diag);
	if (rc || !policy)
		return rc;
	c = webhook_jv_first(claims);
	for (size_t i = 0; c && i < WEBHOOK_CLAIMS_MAX; i++, c = c->next) {
		const char *tname = claim_template(c);
		const policy_claimtemplate_t *t =
		    tname ? policy_claimtemplate_find(policy, ns, tname) : NULL;
		int64_t g = t ? template_gpus(t) : 0;

		if (g > 0) {
			w->dra_gpus += g;
			if (!w->gpu)
				snprintf(w->gpu_resource, sizeof(w->gpu_resource), "claim %s",
					 tname);
			w->gpu = true;
		}
	}
	return GPUQ_OK;
}

/* Locate metadata, labels and the pod spec for a Pod or a Job; every part
 * the rules read must have its type (a `spec` string is refused, not read
 * as "no spec"). */
static int locate(webhook_workload_t *w, gpuq_diag_t *diag)
{
	const webhook_jv_t *meta, *spec, *tmpl = NULL, *tmeta = NULL, *gates;
	webhook_fields_t f;
	const char *name;
	int rc;

	w->kind_name = w->kind == WEBHOOK_KIND_POD ? "Pod" : "Job";
	w->spec_field = w->kind == WEBHOOK_KIND_POD ? "spec" : "spec.template.spec";
	w->spec_ptr = w->kind == WEBHOOK_KIND_POD ? "/spec" : "/spec/template/spec";
	w->name = "";
	f = fields_of(w, diag);
	if (!webhook_jv_is(w->obj, WEBHOOK_JV_OBJECT))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "request.object: must be an object");
	rc = webhook_fields_typed(&f, w->obj, "metadata", WEBHOOK_JV_OBJECT, "metadata", &meta);
	if (rc)
		return rc;
	name = webhook_json_str(meta, "name");
	if (!name || !*name)
		name = webhook_json_str(meta, "generateName");
	w->name = name ? name : "";
	f.name = w->name;
	rc = webhook_fields_typed(&f, meta, "labels", WEBHOOK_JV_OBJECT, "metadata.labels",
				  &w->labels);
	if (!rc)
		rc = webhook_fields_typed(&f, meta, "annotations", WEBHOOK_JV_OBJECT,
					  "metadata.annotations", &w->annotations);
	if (!rc)
		rc = webhook_fields_typed(&f, w->obj, "spec", WEBHOOK_JV_OBJECT, "spec", &spec);
	if (rc)
		return rc;
	if (w->kind == WEBHOOK_KIND_POD) {
		w->pod_labels = w->labels;
		w->pod_annotations = w->annotations;
		w->pod_spec = spec;
	} else {
		rc = webhook_fields_typed(&f, spec, "template", WEBHOOK_JV_OBJECT, "spec.template",
					  &tmpl);
		if (!rc)
			rc = webhook_fields_typed(&f, tmpl, "metadata", WEBHOOK_JV_OBJECT,
						  "spec.template.metadata", &tmeta);
		if (!rc)
			rc = webhook_fields_typed(&f, tmeta, "labels", WEBHOOK_JV_OBJECT,
						  "spec.template.metadata.labels", &w->pod_labels);
		if (!rc)
			rc = webhook_fields_typed(&f, tmeta, "annotations", WEBHOOK_JV_OBJECT,
						  "spec.template.metadata.annotations",
						  &w->pod_annotations);
		if (!rc)
			rc = webhook_fields_typed(&f, tmpl, "spec", WEBHOOK_JV_OBJECT,
						  "spec.template.spec", &w->pod_spec);
		if (rc)
			return rc;
	}
	return webhook_fields_typed(&f, w->pod_spec, "schedulingGates", WEBHOOK_JV_ARRAY,
				    w->kind == WEBHOOK_KIND_POD
					? "spec.schedulingGates"
					: "spec.template.spec.schedulingGates",
				    &gates);
}

static int decode_job_counts(webhook_workload_t *w, gpuq_diag_t *diag)
{
	const webhook_fields_t f = fields_of(w, diag);
	const webhook_jv_t *spec = webhook_json_obj(w->obj, "spec");
	const webhook_jv_t *susp = webhook_jv_get(spec, "suspend");
	int64_t completions;
	int rc;

	w->suspend = webhook_jv_is(susp, WEBHOOK_JV_TRUE);
	rc = webhook_fields_int(&f, spec, "parallelism", "spec.parallelism", 1, 0, INT64_MAX,
				&w->parallelism);
	if (!rc)
		rc = webhook_fields_int(&f, spec, "completions", "spec.completions", -1, 0,
					INT64_MAX, &completions);
	if (rc)
		return rc;
	w->pods = w->parallelism;
	if (completions >= 0 && completions < w->pods)
		w->pods = completions;
	return GPUQ_OK;
}

/* A Pod in a Kueue pod group counts for the whole group: the group is
 * admitted at once, so its Pods must fit together. */
static int decode_pod_group(webhook_workload_t *w, gpuq_diag_t *diag)
{
	const char *count = webhook_json_str(w->annotations, WEBHOOK_ANNOT_POD_GROUP_COUNT);
	long long n = 0;
	char *end = NULL;

	w->pod_group = webhook_json_str(w->labels, WEBHOOK_LABEL_POD_GROUP);
	if (!w->pod_group)
		return GPUQ_OK;
	if (count && *count >= '1' && *count <= '9')
		n = strtoll(count, &end, 10);
	if (!count || !end || *end || n < 1 || n > WEBHOOK_POD_GROUP_MAX) {
		const webhook_fields_t f = fields_of(w, diag);

		return webhook_fields_refuse(
		    &f, "metadata.annotations[" WEBHOOK_ANNOT_POD_GROUP_COUNT "]",
		    "%s%s%s: a Pod in group \"%s\" must give the group's size as a whole number "
		    "from 1 to %d",
		    count ? "Invalid value: \"" : "Required value", count ? count : "",
		    count ? "\"" : "", w->pod_group, WEBHOOK_POD_GROUP_MAX);
	}
	w->pods = n;
	return GPUQ_OK;
}

int webhook_workload_decode(webhook_workload_t *w, const policy_t *policy,
			    const webhook_config_t *cfg, const char *ns, webhook_kind_t kind,
			    const webhook_jv_t *obj, gpuq_diag_t *diag)
{
	const char *adm;
	int rc;

	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->obj = obj;
	w->pods = 1;
	w->parallelism = 1;
	rc = locate(w, diag);
	if (rc)
		return rc;
	w->queue = webhook_labels_queue(w->labels);
	adm = webhook_json_str(w->annotations, WEBHOOK_ANNOT_ADMITTED);
	w->admitted = adm && !strcmp(adm, "true");
	adm = kind == WEBHOOK_KIND_JOB
		  ? webhook_json_str(w->pod_annotations, WEBHOOK_ANNOT_ADMITTED)
		  : NULL;
	w->tmpl_admitted = adm && !strcmp(adm, "true");
	rc = kind == WEBHOOK_KIND_JOB ? decode_job_counts(w, diag) : decode_pod_group(w, diag);
	if (rc)
		return rc;
	if (!w->pod_spec)
		return GPUQ_OK;
	rc = collect_containers(w, diag);
	if (!rc)
		rc = decode_overhead(w, diag);
	if (rc)
		return rc;
	for (size_t i = 0; i < w->pod.n_containers; i++) {
		rc = decode_list(w, i, "requests", &w->pod.containers[i].requests, diag);
		if (!rc)
			rc = decode_list(w, i, "limits", &w->pod.containers[i].limits, diag);
		if (rc)
			return rc;
	}
	/* cfg's extra names: checked here so decode_list stays config-free. */
	for (size_t i = 0; !w->gpu && i < w->pod.n_containers; i++) {
		const quota_container_t *c = &w->pod.containers[i];

		for (size_t k = 0; !w->gpu && k < c->requests.n + c->limits.n; k++) {
			const quota_res_t *e = k < c->requests.n
						   ? &c->requests.items[k]
						   : &c->limits.items[k - c->requests.n];

			if (webhook_is_gpu_resource(cfg, e->name) && !quota_qty_is_zero(&e->qty)) {
				w->gpu = true;
				gpuq_strlcpy(w->gpu_resource, e->name, sizeof(w->gpu_resource));
			}
		}
	}
	return decode_claims(w, policy, ns, diag);
}

int webhook_workload_default(webhook_workload_t *w, const policy_t *policy, const char *ns)
{
	const policy_namespace_t *pns = policy ? policy_namespace_find(policy, ns) : NULL;
	const quota_limitrange_t *const *lrs = pns ? pns->limitranges : NULL;
	size_t n_lrs = pns ? pns->n_limitranges : 0;
	int rc = GPUQ_OK;

	for (size_t i = 0; !rc && i < w->pod.n_containers; i++) {
		quota_container_t *c = &w->pod.containers[i];
		quota_reslist_t add_req, add_lim;

		/* Also without ranges: a limit alone becomes the request. */
		rc = quota_limitrange_default(lrs, n_lrs, c, &add_req, &add_lim);
		for (size_t k = 0; !rc && k < add_req.n; k++)
			rc = quota_reslist_set(&c->requests, add_req.items[k].name,
					       &add_req.items[k].qty);
		for (size_t k = 0; !rc && k < add_lim.n; k++)
			rc = quota_reslist_set(&c->limits, add_lim.items[k].name,
					       &add_lim.items[k].qty);
	}
	return rc;
}

int webhook_workload_pod_request(const webhook_workload_t *w, quota_reslist_t *requests,
				 quota_reslist_t *one)
{
	quota_qty_t dra = quota_qty_from_units(w->dra_gpus, QUOTA_QTY_DECIMAL_SI);
	int rc;

	rc = quota_pod_requests(&w->pod, requests);
	if (rc)
		return rc;
	*one = *requests;
	return w->dra_gpus ? quota_reslist_add(one, "nvidia.com/gpu", &dra) : GPUQ_OK;
}

void webhook_workload_deinit(webhook_workload_t *w)
{
	free(w->pod.containers);
	w->pod.containers = NULL;
	w->refs = NULL;
	w->pod.n_containers = 0;
}

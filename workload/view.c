/* workload/view.c: an object as the admission rules read it: its labels, its
 * pod sets (each a pod template's containers with parsed quantities, its
 * count), whether it asks for GPUs (by resource name or through a DRA claim
 * template) and how many pods it counts for. Borrowed pointers into the
 * document; the allocations are the container arrays (and the pod sets of
 * a kind with more than one). Where the pod sets are is the kind's business
 * (kinds.c). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/internal.h"

const char *workload_labels_queue(const jv_t *labels)
{
	const char *q = jv_member_str(labels, WORKLOAD_LABEL_QUEUE);

	return q ? q : jv_member_str(labels, WORKLOAD_LABEL_KUEUE_QUEUE);
}

/* The max-exec-time-seconds label of w: *out 1..INT32_MAX, or 0 when
 * neither label is there; GPUQ_EINVAL naming the label and its value when
 * it is not a whole number of seconds in that range. */
static int max_exec_label(const workload_view_t *w, int32_t *out, gpuq_diag_t *diag)
{
	const char *key = WORKLOAD_LABEL_MAX_EXEC, *v = jv_member_str(w->labels, key);
	int64_t n = 0;
	size_t i = 0;

	*out = 0;
	if (!v) {
		key = WORKLOAD_LABEL_KUEUE_MAX_EXEC;
		v = jv_member_str(w->labels, key);
	}
	if (!v)
		return GPUQ_OK;
	for (; v[i] >= '0' && v[i] <= '9' && n <= INT32_MAX; i++)
		n = n * 10 + (v[i] - '0');
	if (!i || v[i] || n < 1 || n > INT32_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s \"%s\": metadata.labels[%s]: must be a whole number of "
				     "seconds from 1 to 2147483647, not \"%.64s\"",
				     w->kind_name, w->name, key, v);
	*out = (int32_t)n;
	return GPUQ_OK;
}

bool workload_pod_gated(const jv_t *pod_spec)
{
	const jv_t *gates = jv_is(pod_spec, JV_OBJECT) ? jv_get(pod_spec, "schedulingGates") : NULL;

	for (const jv_t *g = jv_first(gates); g; g = g->next) {
		const char *n = jv_member_str(g, "name");

		if (n && !strcmp(n, WORKLOAD_GATE))
			return true;
	}
	return false;
}

const jv_t *workload_controller_owner(const jv_t *obj)
{
	const jv_t *owners = jv_get(jv_get(obj, "metadata"), "ownerReferences");

	for (const jv_t *o = jv_first(owners); o; o = o->next)
		if (jv_is(jv_get(o, "controller"), JV_TRUE))
			return o;
	return NULL;
}

int workload_qty_json(const jv_t *v, quota_qty_t *out, gpuq_diag_t *diag)
{
	if (jv_is(v, JV_STRING) || jv_is(v, JV_NUMBER))
		return quota_qty_parse(v->s, v->len, out, diag);
	return gpuq_diag_set(diag, GPUQ_EINVAL, "a quantity must be a string or a number");
}

/* jv_fields_typed with the field path base + tail, joined into path (cap
 * bytes) only for a refusal: a review reads dozens of members, and a
 * refusal is rare. */
static int typed_at(const jv_fields_t *f, const jv_t *obj, const char *key, jv_type_t type,
		    const char *base, const char *tail, char *path, size_t cap, const jv_t **out)
{
	if (jv_member_typed(obj, key, type, out))
		return GPUQ_OK;
	gpuq_strjoin(path, cap, base, tail, "");
	return jv_fields_typed(f, obj, key, type, path, out);
}

/* Field path of container i of ps for messages: spec.containers[0]. */
static void cfield(const workload_view_podset_t *ps, size_t i, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s.%s[%zu]", ps->spec_field,
		 ps->refs[i].init ? "initContainers" : "containers", ps->refs[i].index);
}

/* Decode resources.<which> of container i of ps (res: its resources, an
 * object) into list. */
static int decode_list(workload_view_t *w, workload_view_podset_t *ps, size_t i, const jv_t *res,
		       const char *which, const workload_config_t *cfg, quota_reslist_t *list,
		       gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *m, *v;
	char where[192], path[224], at[512];
	gpuq_diag_t inner;
	int rc;

	/* The field paths are written only for a refusal: every review reads
	 * a few dozen of these, and a refusal is rare. */
	list->n = 0;
	if (!jv_member_typed(res, which, JV_OBJECT, &m)) {
		cfield(ps, i, where, sizeof(where));
		snprintf(path, sizeof(path), "%s.resources.%s", where, which);
		return jv_fields_typed(&f, res, which, JV_OBJECT, path, &m);
	}
	if (!m)
		return GPUQ_OK;
	for (const jv_t *k = m->first; k; k = v->next) {
		const char *key = k->s;
		quota_qty_t q;

		v = k->next;
		inner.msg[0] = '\0';
		rc = workload_qty_json(v, &q, &inner);
		if (!rc && quota_qty_cmp(&q, &(quota_qty_t){0}) >= 0) {
			rc = quota_reslist_set(list, key, &q);
			if (!rc) {
				if (!ps->gpu && workload_gpu_resource(cfg, key) &&
				    !quota_qty_is_zero(&q)) {
					ps->gpu = true;
					gpuq_strlcpy(ps->gpu_resource, key,
						     sizeof(ps->gpu_resource));
				}
				continue;
			}
		}
		cfield(ps, i, where, sizeof(where));
		snprintf(path, sizeof(path), "%s.resources.%s", where, which);
		snprintf(at, sizeof(at), "%s[%s]", path, key);
		inner.msg[0] = '\0';
		rc = workload_qty_json(v, &q, &inner);
		if (rc)
			return jv_fields_refuse(&f, at, "%s", inner.msg);
		if (quota_qty_cmp(&q, &(quota_qty_t){0}) < 0)
			return jv_fields_refuse(
			    &f, at, "invalid value \"%s\": must be greater than or equal to 0",
			    jv_is(v, JV_STRING) ? jv_str(v) : "");
		return jv_fields_refuse(&f, path,
					"too many resources or name too long (%s; caps "
					"%d entries, %d bytes)",
					key, QUOTA_RESLIST_MAX, QUOTA_RES_NAME_MAX - 1);
	}
	return GPUQ_OK;
}

/* Decode container i's requests then limits (both empty without
 * resources), reading its resources once. */
static int decode_resources(workload_view_t *w, workload_view_podset_t *ps, size_t i,
			    const workload_config_t *cfg, gpuq_diag_t *diag)
{
	quota_container_t *c = &ps->pod.containers[i];
	const jv_t *res;
	int rc;

	c->requests.n = 0;
	c->limits.n = 0;
	if (!jv_member_typed(ps->refs[i].json, "resources", JV_OBJECT, &res)) {
		const jv_fields_t f = workload_fields_of(w, diag);
		char where[192], path[224];

		cfield(ps, i, where, sizeof(where));
		snprintf(path, sizeof(path), "%s.resources", where);
		return jv_fields_typed(&f, ps->refs[i].json, "resources", JV_OBJECT, path, &res);
	}
	if (!res)
		return GPUQ_OK;
	rc = decode_list(w, ps, i, res, "requests", cfg, &c->requests, diag);
	if (!rc)
		rc = decode_list(w, ps, i, res, "limits", cfg, &c->limits, diag);
	return rc;
}

/* spec.overhead (set by the RuntimeClass admission plugin on Pods). */
static int decode_overhead(workload_view_t *w, workload_view_podset_t *ps, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *m, *v;
	char path[128], at[448];
	int rc;

	rc = typed_at(&f, ps->pod_spec, "overhead", JV_OBJECT, ps->spec_field, ".overhead", path,
		      sizeof(path), &m);
	if (rc || !m)
		return rc;
	for (const jv_t *k = m->first; k; k = v->next) {
		const char *key = k->s;
		quota_qty_t q;
		gpuq_diag_t inner = {""};

		v = k->next;
		if (workload_qty_json(v, &q, &inner) ||
		    quota_reslist_set(&ps->pod.overhead, key, &q)) {
			gpuq_strjoin(path, sizeof(path), ps->spec_field, ".overhead", "");
			snprintf(at, sizeof(at), "%s[%s]", path, key);
			return jv_fields_refuse(&f, at, "invalid quantity: %s",
						inner.msg[0] ? inner.msg : "too many resources");
		}
	}
	return GPUQ_OK;
}

/* spec.runtimeClassName: whose overhead its Pods get (workload_view_default). */
static int decode_runtime_class(workload_view_t *w, workload_view_podset_t *ps, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	char path[WORKLOAD_FIELD_MAX + 32];
	const jv_t *v;
	int rc = typed_at(&f, ps->pod_spec, "runtimeClassName", JV_STRING, ps->spec_field,
			  ".runtimeClassName", path, sizeof(path), &v);

	ps->runtime_class = v ? v->s : NULL;
	if (ps->runtime_class && !ps->runtime_class[0])
		ps->runtime_class = NULL;
	return rc;
}

/* Every element of arr (at field path base + tail, joined into path of cap
 * bytes for a refusal) must be an object. */
static int objects_only(const workload_view_t *w, const jv_t *arr, const char *base,
			const char *tail, char *path, size_t cap, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	char at[160];
	size_t i = 0;

	for (const jv_t *e = jv_first(arr); e; e = e->next, i++) {
		if (jv_is(e, JV_OBJECT))
			continue;
		gpuq_strjoin(path, cap, base, tail, "");
		snprintf(at, sizeof(at), "%s[%zu]", path, i);
		return jv_fields_want(&f, at, e, JV_OBJECT);
	}
	return GPUQ_OK;
}

/* Collect refs to init containers then app containers; count them first. */
static int collect_containers(workload_view_t *w, workload_view_podset_t *ps, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *init, *app;
	size_t n_init, n_app, n, k = 0;
	char pi[128], pa[128];
	int rc;

	rc = typed_at(&f, ps->pod_spec, "initContainers", JV_ARRAY, ps->spec_field,
		      ".initContainers", pi, sizeof(pi), &init);
	if (!rc)
		rc = typed_at(&f, ps->pod_spec, "containers", JV_ARRAY, ps->spec_field,
			      ".containers", pa, sizeof(pa), &app);
	if (rc)
		return rc;
	n_init = jv_count(init);
	n_app = jv_count(app);
	n = n_init + n_app + (ps->added_container != NULL);
	if (n > WORKLOAD_CONTAINERS_MAX)
		return jv_fields_refuse(&f, ps->spec_field,
					"%zu containers; gpuq reviews at most %d", n,
					WORKLOAD_CONTAINERS_MAX);
	rc = objects_only(w, init, ps->spec_field, ".initContainers", pi, sizeof(pi), diag);
	if (!rc)
		rc = objects_only(w, app, ps->spec_field, ".containers", pa, sizeof(pa), diag);
	if (rc || !n)
		return rc;
	ps->pod.containers = malloc(n * (sizeof(quota_container_t) + sizeof(workload_cref_t)));
	if (!ps->pod.containers)
		return GPUQ_ENOMEM;
	ps->refs = (workload_cref_t *)(ps->pod.containers + n);
	for (size_t pass = 0; pass < 2; pass++) {
		const jv_t *arr = pass ? app : init;
		size_t cnt = pass ? n_app : n_init;
		const jv_t *c = jv_first(arr);

		for (size_t i = 0; i < cnt; i++, k++, c = c->next) {
			quota_container_t *qc = &ps->pod.containers[k];
			const char *cname = jv_member_str(c, "name");
			/* only an init container's tells a sidecar */
			const char *restart = pass ? NULL : jv_member_str(c, "restartPolicy");

			ps->refs[k] = (workload_cref_t){.init = !pass, .index = i, .json = c};
			gpuq_strlcpy(qc->name, cname ? cname : "", sizeof(qc->name));
			qc->kind = pass ? QUOTA_CONTAINER_APP
				   : (restart && !strcmp(restart, "Always"))
				       ? QUOTA_CONTAINER_SIDECAR
				       : QUOTA_CONTAINER_INIT;
			qc->requests.n = 0;
			qc->limits.n = 0;
		}
	}
	if (ps->added_container) { /* last, located nowhere in the template */
		memset(&ps->pod.containers[k], 0, sizeof(ps->pod.containers[k]));
		ps->refs[k] = (workload_cref_t){.index = SIZE_MAX};
		rc = ps->added_container(&ps->pod.containers[k]);
	}
	ps->pod.n_containers = n;
	return rc;
}

const char *workload_claim_template(const jv_t *claim)
{
	const char *t = jv_member_str(claim, "resourceClaimTemplateName");

	return t ? t : jv_member_str(jv_member_obj(claim, "source"), "resourceClaimTemplateName");
}

static int decode_claims(workload_view_t *w, workload_view_podset_t *ps, const policy_t *policy,
			 const char *ns, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *claims, *c;
	char path[128];
	int rc;

	rc = typed_at(&f, ps->pod_spec, "resourceClaims", JV_ARRAY, ps->spec_field,
		      ".resourceClaims", path, sizeof(path), &claims);
	if (!rc)
		rc = objects_only(w, claims, ps->spec_field, ".resourceClaims", path, sizeof(path),
				  diag);
	if (rc || !policy)
		return rc;
	c = jv_first(claims);
	for (size_t i = 0; c && i < WORKLOAD_CLAIMS_MAX; i++, c = c->next) {
		const char *tname = workload_claim_template(c);
		int64_t g = workload_claim_gpus(policy, ns, tname);

		if (g > 0) {
			ps->dra_gpus += g;
			if (!ps->gpu)
				snprintf(ps->gpu_resource, sizeof(ps->gpu_resource), "claim %s",
					 tname);
			ps->gpu = true;
		}
	}
	return GPUQ_OK;
}

int workload_view_template(workload_view_t *w, workload_view_podset_t *ps, const jv_t *tmpl,
			   const char *field, const char *ptr, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *tmeta = NULL, *gates;
	char path[WORKLOAD_FIELD_MAX + 32];
	const char *adm;
	int rc;

	ps->tmpl = tmpl;
	gpuq_strjoin(ps->spec_field, sizeof(ps->spec_field), field, ".spec", "");
	gpuq_strlcpy(ps->tmpl_ptr, ptr, sizeof(ps->tmpl_ptr));
	rc = typed_at(&f, tmpl, "metadata", JV_OBJECT, field, ".metadata", path, sizeof(path),
		      &tmeta);
	if (!rc)
		rc = typed_at(&f, tmeta, "labels", JV_OBJECT, field, ".metadata.labels", path,
			      sizeof(path), &ps->pod_labels);
	if (!rc)
		rc = typed_at(&f, tmeta, "annotations", JV_OBJECT, field, ".metadata.annotations",
			      path, sizeof(path), &ps->pod_annotations);
	if (!rc)
		rc = jv_fields_typed(&f, tmpl, "spec", JV_OBJECT, ps->spec_field, &ps->pod_spec);
	if (!rc)
		rc = typed_at(&f, ps->pod_spec, "schedulingGates", JV_ARRAY, ps->spec_field,
			      ".schedulingGates", path, sizeof(path), &gates);
	adm = jv_member_str(ps->pod_annotations, WORKLOAD_ANNOT_ADMITTED);
	ps->tmpl_admitted = adm && !strcmp(adm, "true");
	return rc;
}

/* Zero ps but its overhead list's entries: 5 KiB of its 5.6, read only up
 * to the list's n, and every review makes a view or two. */
static void podset_zero(workload_view_podset_t *ps)
{
	size_t skip = offsetof(workload_view_podset_t, pod.overhead.items);
	size_t end = skip + sizeof(ps->pod.overhead.items);

	memset(ps, 0, skip);
	memset((char *)ps + end, 0, sizeof(*ps) - end);
}

void workload_view_init(workload_view_t *w)
{
	size_t one = offsetof(workload_view_t, one), end = one + sizeof(w->one);

	memset(w, 0, one);
	podset_zero(&w->one);
	memset((char *)w + end, 0, sizeof(*w) - end);
	w->podsets = &w->one;
}

int workload_view_podset_new(workload_view_t *w, const char *name, const char *field,
			     workload_view_podset_t **out, gpuq_diag_t *diag)
{
	workload_view_podset_t *ps;

	*out = NULL;
	if (w->n_podsets == WORKLOAD_PODSETS_MAX) {
		const jv_fields_t f = workload_fields_of(w, diag);

		return jv_fields_refuse(&f, field, "more than %d pod sets; gpuq admits at most %d",
					WORKLOAD_PODSETS_MAX, WORKLOAD_PODSETS_MAX);
	}
	if (w->n_podsets == 1 && w->podsets == &w->one) {
		ps = calloc(WORKLOAD_PODSETS_MAX, sizeof(*ps));
		if (!ps)
			return GPUQ_ENOMEM;
		ps[0] = w->one;
		w->podsets = ps;
	}
	ps = &w->podsets[w->n_podsets++];
	podset_zero(ps);
	gpuq_strlcpy(ps->name, name, sizeof(ps->name));
	ps->count = 1;
	ps->parallelism = 1;
	*out = ps;
	return GPUQ_OK;
}

/* jv_fields_int of a count (0 and up, def when absent) with the path
 * base + tail joined into path (cap bytes) only for a refusal. */
static int count_at(const jv_fields_t *f, const jv_t *obj, const char *key, const char *base,
		    const char *tail, char *path, size_t cap, int64_t def, int64_t *out)
{
	jv_fields_t quiet = *f;

	quiet.diag = NULL;
	if (jv_fields_int(&quiet, obj, key, "", def, 0, INT64_MAX, out) == GPUQ_OK)
		return GPUQ_OK;
	gpuq_strjoin(path, cap, base, tail, "");
	return jv_fields_int(f, obj, key, path, def, 0, INT64_MAX, out);
}

int workload_view_job_counts(const workload_view_t *w, const jv_t *spec, const char *field,
			     int64_t *parallelism, int64_t *pods, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	char pp[WORKLOAD_FIELD_MAX + 16], pc[WORKLOAD_FIELD_MAX + 16];
	int64_t completions;
	int rc;

	rc = count_at(&f, spec, "parallelism", field, ".parallelism", pp, sizeof(pp), 1,
		      parallelism);
	if (!rc)
		rc = count_at(&f, spec, "completions", field, ".completions", pc, sizeof(pc), -1,
			      &completions);
	if (rc)
		return rc;
	*pods = *parallelism;
	if (completions >= 0 && completions < *pods)
		*pods = completions;
	return GPUQ_OK;
}

/* Metadata, labels, annotations and spec: every part the rules read must
 * have its type (a `spec` string is refused, not read as "no spec"). */
static int locate(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_t *meta, *spec;
	jv_fields_t f;
	const char *name;
	int rc;

	w->name = "";
	f = workload_fields_of(w, diag);
	if (!jv_is(w->obj, JV_OBJECT))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "request.object: must be an object");
	rc = jv_fields_typed(&f, w->obj, "metadata", JV_OBJECT, "metadata", &meta);
	if (rc)
		return rc;
	name = jv_member_str(meta, "name");
	if (!name || !*name)
		name = jv_member_str(meta, "generateName");
	w->name = name ? name : "";
	f.name = w->name;
	rc = jv_fields_typed(&f, meta, "labels", JV_OBJECT, "metadata.labels", &w->labels);
	if (!rc)
		rc = jv_fields_typed(&f, meta, "annotations", JV_OBJECT, "metadata.annotations",
				     &w->annotations);
	if (!rc)
		rc = jv_fields_typed(&f, w->obj, "spec", JV_OBJECT, "spec", &spec);
	return rc;
}

/* One pod set's containers, overhead, quantities and claims. */
static int decode_podset(workload_view_t *w, workload_view_podset_t *ps, const policy_t *policy,
			 const workload_config_t *cfg, const char *ns, gpuq_diag_t *diag)
{
	int rc;

	if (!ps->pod_spec)
		return GPUQ_OK;
	rc = collect_containers(w, ps, diag);
	if (!rc)
		rc = decode_overhead(w, ps, diag);
	if (!rc)
		rc = decode_runtime_class(w, ps, diag);
	for (size_t i = 0; !rc && i < ps->pod.n_containers && ps->refs[i].json; i++)
		rc = decode_resources(w, ps, i, cfg, diag);
	if (!rc)
		rc = decode_claims(w, ps, policy, ns, diag);
	return rc;
}

/* The member of obj at dotted field ("spec.trainer.numNodes"), or NULL. */
static const jv_t *at_field(const jv_t *obj, const char *field)
{
	char key[64];

	while (field && *field && obj) {
		size_t n = strcspn(field, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, field);
		obj = jv_get(obj, key);
		field += n + (field[n] == '.');
	}
	return obj;
}

/* Whether obj was made by a parent's controller gpuq admits (its controller
 * owner a workload kind: a JobSet's Job, an LWS's StatefulSet). */
static bool made_by_parent(const jv_t *obj)
{
	const jv_t *own = workload_controller_owner(obj);

	return own && workload_kind_of(jv_member_str(own, "apiVersion"),
				       jv_member_str(own, "kind")) != WORKLOAD_KIND_OTHER;
}

/* A kind whose pod sets are its child's (a TrainJob): gpuq's when it
 * carries a queue label or names a GPU among the resources at its row's
 * gpu_field ({limits, requests}, as a container's); the most of that GPU
 * it names, and on how many nodes (said_gpus, said_nodes: what its child
 * will ask at least). A quantity that does not read is not counted (the
 * kind's own validation refuses it). */
static void said_gpu(workload_view_t *w, const workload_config_t *cfg)
{
	static const char *const lists[] = {"limits", "requests"};
	const jv_t *at = w->integ->gpu_field ? at_field(w->obj, w->integ->gpu_field) : NULL;
	int64_t nodes = 1;

	for (size_t l = 0; at && l < 2; l++) {
		const jv_t *m = jv_get(at, lists[l]);

		for (const jv_t *k = jv_is(m, JV_OBJECT) ? m->first : NULL; k && k->next;
		     k = k->next->next) {
			gpuq_diag_t d = {""};
			quota_qty_t q;

			if (!workload_gpu_resource(cfg, jv_str(k)))
				continue;
			if (!w->gpu) {
				w->gpu = true;
				gpuq_strlcpy(w->gpu_resource, jv_str(k), sizeof(w->gpu_resource));
			}
			if (!strcmp(jv_str(k), w->gpu_resource) &&
			    !workload_qty_json(k->next, &q, &d) &&
			    quota_qty_cmp(&q, &w->said_gpus) > 0)
				w->said_gpus = q;
		}
	}
	if (w->integ->said_count_field &&
	    jv_int(at_field(w->obj, w->integ->said_count_field), &nodes) && nodes > 0)
		w->said_nodes = nodes;
	else
		w->said_nodes = 1;
	w->gpu = w->gpu || w->queue != NULL;
}

int workload_view_decode(workload_view_t *w, const policy_t *policy, const workload_config_t *cfg,
			 const char *ns, workload_kind_t kind, const jv_t *obj, gpuq_diag_t *diag)
{
	const char *adm;
	int rc;

	workload_view_init(w);
	w->kind = kind;
	w->integ = workload_integration(kind);
	w->kind_name = w->integ->kind_name;
	w->obj = obj;
	w->pods = 1;
	rc = locate(w, diag);
	if (rc)
		return rc;
	if (!w->integ->podsets)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": gpuq does not read this kind",
				     w->kind_name, w->name);
	w->queue = workload_labels_queue(w->labels);
	adm = jv_member_str(w->annotations, WORKLOAD_ANNOT_ADMITTED);
	w->admitted = adm && !strcmp(adm, "true");
	rc = w->integ->podsets(w, diag);
	if (!rc && w->integ->podsets_of_child)
		said_gpu(w, cfg);
	for (size_t i = 0; !rc && i < w->n_podsets; i++) {
		workload_view_podset_t *ps = &w->podsets[i];

		rc = decode_podset(w, ps, policy, cfg, ns, diag);
		w->tmpl_admitted = w->tmpl_admitted || ps->tmpl_admitted;
		if (!rc && ps->gpu && !w->gpu) {
			w->gpu = true;
			memcpy(w->gpu_resource, ps->gpu_resource, sizeof(w->gpu_resource));
		}
	}
	if (!rc && workload_view_topology(w, made_by_parent(w->obj), NULL)) {
		for (size_t i = 0; i < w->n_podsets; i++)
			memset(&w->podsets[i].topology, 0, sizeof(w->podsets[i].topology));
		if (w->gpu || w->queue) /* gpuq's: a bad request is refused, by name */
			rc = workload_view_topology(w, made_by_parent(w->obj), diag);
	}
	if (!rc && max_exec_label(w, &w->max_exec_s, NULL)) {
		w->max_exec_s = 0;
		if (w->gpu || w->queue) /* gpuq's: a bad limit is refused, by name */
			rc = max_exec_label(w, &w->max_exec_s, diag);
	}
	return rc;
}

int workload_view_default(workload_view_t *w, const policy_t *policy, const char *ns,
			  size_t *podset, gpuq_diag_t *diag)
{
	int rc = GPUQ_OK;

	for (size_t p = 0; !rc && p < w->n_podsets; p++) {
		*podset = p;
		/* a Pod got its overhead when it was created */
		rc = workload_pod_default(&w->podsets[p].pod, policy, ns,
					  w->kind != WORKLOAD_KIND_POD && w->podsets[p].pod_spec,
					  w->podsets[p].runtime_class, diag);
	}
	return rc;
}

int workload_view_pod_request(const workload_view_podset_t *ps, quota_reslist_t *requests,
			      quota_reslist_t *one)
{
	return workload_pod_request(&ps->pod, ps->dra_gpus, requests, one);
}

int workload_view_pod_one(const workload_view_podset_t *ps, const quota_reslist_t *requests,
			  quota_reslist_t *one)
{
	return workload_pod_one(requests, ps->dra_gpus, one);
}

void workload_view_deinit(workload_view_t *w)
{
	for (size_t i = 0; i < w->n_podsets; i++)
		free(w->podsets[i].pod.containers);
	if (w->podsets && w->podsets != &w->one)
		free(w->podsets);
	w->podsets = &w->one;
	w->n_podsets = 0;
	w->one.pod.containers = NULL;
	w->one.refs = NULL;
}

/* Whether an affinity's (podAffinity or podAntiAffinity) terms name
 * namespaces or a namespaceSelector. */
static bool names_namespaces(const jv_t *aff)
{
	static const char *const lists[] = {"requiredDuringSchedulingIgnoredDuringExecution",
					    "preferredDuringSchedulingIgnoredDuringExecution"};

	for (size_t l = 0; l < 2; l++)
		for (const jv_t *t = jv_first(jv_get(aff, lists[l])); t; t = t->next) {
			const jv_t *term = l ? jv_get(t, "podAffinityTerm") : t;
			const jv_t *sel = jv_get(term, "namespaceSelector");

			if (jv_count(jv_get(term, "namespaces")) || (sel && !jv_is(sel, JV_NULL)))
				return true;
		}
	return false;
}

void workload_pod_spec_scopes(const jv_t *spec, bool *terminating, bool *cross_ns)
{
	const jv_t *ads = jv_get(spec, "activeDeadlineSeconds");
	const jv_t *aff = jv_get(spec, "affinity");

	*terminating = ads && !jv_is(ads, JV_NULL);
	*cross_ns = names_namespaces(jv_get(aff, "podAffinity")) ||
		    names_namespaces(jv_get(aff, "podAntiAffinity"));
}

workload_affinity_t workload_node_affinity(const jv_t *spec)
{
	const jv_t *aff = jv_get(spec, "affinity"), *node = jv_get(aff, "nodeAffinity"), *req;

	if (!aff || jv_is(aff, JV_NULL))
		return WORKLOAD_AFFINITY_NONE;
	if (!node || jv_is(node, JV_NULL))
		return WORKLOAD_AFFINITY_NO_NODE;
	req = jv_get(node, "requiredDuringSchedulingIgnoredDuringExecution");
	return !req || jv_is(req, JV_NULL) ? WORKLOAD_AFFINITY_NO_REQUIRED
					   : WORKLOAD_AFFINITY_REQUIRED;
}

/* Whether a resource list names cpu or memory. */
static bool names_compute(const quota_reslist_t *l)
{
	return l && (quota_reslist_get(l, "cpu") || quota_reslist_get(l, "memory"));
}

void workload_view_quota_scope(const workload_view_t *w, const policy_t *policy,
			       const quota_reslist_t *requests, const quota_reslist_t *limits,
			       quota_pod_scope_t *out)
{
	const policy_priorityclass_t *def = policy ? policy_priorityclass_default(policy) : NULL;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < w->n_podsets && !out->priority_class; i++)
		out->priority_class = jv_member_str(w->podsets[i].pod_spec, "priorityClassName");
	if (!out->priority_class && def)
		out->priority_class = def->name;
	if (w->n_podsets)
		workload_pod_spec_scopes(w->podsets[0].pod_spec, &out->terminating,
					 &out->cross_ns_affinity);
	out->best_effort = !names_compute(requests) && !names_compute(limits);
}

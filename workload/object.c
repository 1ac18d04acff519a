/* workload/object.c: one watched object decoded into an owned, compact
 * workload_t, without a policy: identity, creation time, queue, owner,
 * marks, each pod set's containers as declared, placement and template
 * flags, and the kind's status. The view (view.c) reads the pod sets; this
 * file copies what the controller keeps into a chain of blocks that the
 * workload owns, so the document can go. workload_resolve (resolve.c) adds
 * what the policy makes of it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/internal.h"

/* A decode fills scratch blocks, then copies what it used into one
 * allocation of that size (compact): bytes of the first scratch block (a
 * Job with a few containers fits) and of each next one (a larger object's
 * members take a few; strings pack unaligned). */
#define SCRATCH_FIRST 2048
#define SCRATCH_NEXT 1024
/* The annotations gpuq writes whole (the templates' placement before a
 * release, the flavors): longer than any label, under the apiserver's
 * 256 KiB for all annotations. */
#define ANNOT_MAX WORKLOAD_KEY_GPUQ_MAX

typedef struct block {
	struct block *next; /* the next block (older) */
	size_t cap;	    /* bytes of data */
	size_t used;	    /* bytes handed out */
	size_t at;	    /* compact: where its data went in the copy (also
			       keeps data 16-aligned) */
} block_t;

static block_t *block_new(size_t cap)
{
	block_t *b = malloc(sizeof(block_t) + cap);

	if (!b)
		return NULL;
	b->next = NULL;
	b->cap = cap;
	b->used = 0;
	return b;
}

/* n bytes at alignment align (1, 8 or 16) in d's blocks. */
static void *alloc_aligned(workload_decoder_t *d, size_t n, size_t align)
{
	block_t *b = d->cur;
	size_t at = (b->used + align - 1) & ~(align - 1);
	void *p;

	if (at + n > b->cap) {
		block_t *nb = block_new(n > SCRATCH_NEXT ? n : SCRATCH_NEXT);

		if (!nb)
			return NULL;
		/* the first block stays first (it holds the workload): chain after it */
		nb->next = b->next;
		b->next = nb;
		d->cur = b = nb;
		at = 0;
	}
	p = (char *)(b + 1) + at;
	b->used = at + n;
	memset(p, 0, n);
	return p;
}

void *workload_dec_alloc(workload_decoder_t *d, size_t n)
{
	return alloc_aligned(d, n, _Alignof(max_align_t));
}

const workload_extra_t workload_no_extra = {.set_kind = WORKLOAD_KIND_OTHER, .set_group = -1};

workload_extra_t *workload_dec_extra(workload_decoder_t *d)
{
	if (!d->x) {
		d->x = alloc_aligned(d, sizeof(*d->x), _Alignof(workload_extra_t));
		if (!d->x)
			return NULL;
		*d->x = workload_no_extra;
		d->w->x = d->x;
	}
	return d->x;
}

static void blocks_free(void *mem)
{
	block_t *b = mem;

	while (b) {
		block_t *next = b->next;

		free(b);
		b = next;
	}
}

/* Copy s (at most max bytes) into the blocks; refused naming path. */
static int keep(workload_decoder_t *d, const char **slot, const char *s, const char *path,
		size_t max)
{
	size_t len = strlen(s);
	char *p;

	if (len > max)
		return jv_fields_refuse(&d->f, path, "%zu bytes (\"%.40s...\"), at most %zu", len,
					s, max);
	p = alloc_aligned(d, len + 1, 1);
	if (!p)
		return GPUQ_ENOMEM;
	memcpy(p, s, len + 1);
	*slot = p;
	return GPUQ_OK;
}

int workload_dec_str(workload_decoder_t *d, const jv_t *obj, const char *key, const char *path,
		     bool required, const char **out)
{
	const char *s;
	int rc = jv_fields_str(&d->f, obj, key, path, required, &s);

	*out = NULL;
	return rc || !s ? rc : keep(d, out, s, path, WORKLOAD_STR_MAX);
}

int workload_dec_status_parts(workload_decoder_t *d, const jv_t *obj, const jv_t **status,
			      const jv_t **conds)
{
	int rc = jv_fields_typed(&d->f, obj, "status", JV_OBJECT, "status", status);

	*conds = NULL;
	return rc ? rc
		  : jv_fields_typed(&d->f, *status, "conditions", JV_ARRAY, "status.conditions",
				    conds);
}

bool workload_condition_true(const jv_t *conditions, const char *type)
{
	for (const jv_t *c = jv_first(conditions); c; c = c->next) {
		const char *t = jv_member_str(c, "type"), *st = jv_member_str(c, "status");

		if (t && st && !strcmp(t, type) && !strcmp(st, "True"))
			return true;
	}
	return false;
}

/* ---- Metadata ---- */

/* The ownerReference with controller: true (the first one). */
static int decode_owner(workload_decoder_t *d, const jv_t *meta)
{
	workload_extra_t *x = NULL;
	const jv_t *owners;
	char path[4][64];
	size_t i = 0;
	int rc;

	rc = jv_fields_typed(&d->f, meta, "ownerReferences", JV_ARRAY, "metadata.ownerReferences",
			     &owners);
	for (const jv_t *r = owners ? owners->first : NULL; !rc && r; r = r->next, i++) {
		snprintf(path[0], sizeof(path[0]), "metadata.ownerReferences[%zu]", i);
		if (!jv_is(r, JV_OBJECT))
			return jv_fields_want(&d->f, path[0], r, JV_OBJECT);
		if (!jv_is(jv_get(r, "controller"), JV_TRUE) || x)
			continue;
		if (!(x = workload_dec_extra(d)))
			return GPUQ_ENOMEM;
		snprintf(path[0], sizeof(path[0]), "metadata.ownerReferences[%zu].apiVersion", i);
		snprintf(path[1], sizeof(path[1]), "metadata.ownerReferences[%zu].kind", i);
		snprintf(path[2], sizeof(path[2]), "metadata.ownerReferences[%zu].name", i);
		snprintf(path[3], sizeof(path[3]), "metadata.ownerReferences[%zu].uid", i);
		rc = workload_dec_str(d, r, "apiVersion", path[0], true, &x->owner_api_version);
		if (!rc)
			rc = workload_dec_str(d, r, "kind", path[1], true, &x->owner_kind);
		if (!rc)
			rc = workload_dec_str(d, r, "name", path[2], true, &x->owner_name);
		if (!rc)
			rc = workload_dec_str(d, r, "uid", path[3], true, &x->owner_uid);
	}
	return rc;
}

/* gpuq's own annotations: admitted, and the two it writes whole. */
static int decode_marks(workload_decoder_t *d, const jv_t *meta)
{
	workload_t *w = d->w;
	const jv_t *ann = jv_member_obj(meta, "annotations");
	const char *adm = jv_member_str(ann, WORKLOAD_ANNOT_ADMITTED);
	const char *fl = jv_member_str(ann, WORKLOAD_ANNOT_FLAVORS);
	const char *orig = jv_member_str(ann, WORKLOAD_ANNOT_ORIGINAL);
	const char *st = jv_member_str(ann, WORKLOAD_ANNOT_STATUS);
	const char *rt = jv_member_str(ann, POLICY_ANNOT_EXPECTED_RUNTIME);
	int rc = GPUQ_OK;

	w->has_annotations = ann != NULL;
	w->admitted = adm && !strcmp(adm, "true");
	if ((fl || orig || rt) && !workload_dec_extra(d))
		return GPUQ_ENOMEM;
	if (fl)
		rc = keep(d, &d->x->flavors, fl, "metadata.annotations[" WORKLOAD_ANNOT_FLAVORS "]",
			  ANNOT_MAX);
	if (!rc && orig)
		rc = keep(d, &d->x->original, orig,
			  "metadata.annotations[" WORKLOAD_ANNOT_ORIGINAL "]", ANNOT_MAX);
	if (!rc && st && strlen(st) > ANNOT_MAX)
		rc = jv_fields_refuse(&d->f, "metadata.annotations[" WORKLOAD_ANNOT_STATUS "]",
				      "%zu bytes (\"%.40s...\"), at most %u", strlen(st), st,
				      ANNOT_MAX);
	if (!rc && st)
		w->status_hash = gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, st) | 1;
	if (!rc && rt)
		rc = keep(d, &d->x->expected_runtime, rt,
			  "metadata.annotations[" POLICY_ANNOT_EXPECTED_RUNTIME "]",
			  WORKLOAD_STR_MAX);
	return rc;
}

static int decode_meta(workload_decoder_t *d, const jv_t *root)
{
	workload_t *w = d->w;
	const jv_t *meta, *del;
	const char *created;
	int rc;

	rc = jv_fields_typed(&d->f, root, "metadata", JV_OBJECT, "metadata", &meta);
	if (!rc)
		rc = workload_dec_str(d, meta, "name", "metadata.name", true, &w->name);
	if (rc)
		return rc;
	d->f.name = w->name;
	rc = workload_dec_str(d, meta, "namespace", "metadata.namespace", true, &w->namespace_);
	if (!rc)
		rc = workload_dec_str(d, meta, "uid", "metadata.uid", true, &w->uid);
	if (!rc)
		rc = workload_dec_str(d, meta, "resourceVersion", "metadata.resourceVersion", false,
				      &w->resource_version);
	if (!rc && !w->resource_version)
		w->resource_version = "";
	if (!rc)
		rc = jv_fields_str(&d->f, meta, "creationTimestamp", "metadata.creationTimestamp",
				   true, &created);
	if (rc)
		return rc;
	if (!created || gpuq_time_parse(created, &w->created_ms))
		return jv_fields_refuse(
		    &d->f, "metadata.creationTimestamp",
		    "invalid value \"%.64s\": want RFC 3339 (2024-05-01T12:00:00Z)", created);
	del = jv_get(meta, "deletionTimestamp");
	w->deleting = del && !jv_is(del, JV_NULL);
	rc = decode_owner(d, meta);
	return rc ? rc : decode_marks(d, meta);
}

/* ---- Pod sets ---- */

static int decode_priority(workload_decoder_t *d, workload_podset_t *out,
			   const workload_view_podset_t *ps)
{
	const jv_t *v = jv_get(ps->pod_spec, "priority");
	char path[WORKLOAD_FIELD_MAX + 32];
	int64_t n;
	int rc;

	snprintf(path, sizeof(path), "%s.priorityClassName", ps->spec_field);
	rc = workload_dec_str(d, ps->pod_spec, "priorityClassName", path, false,
			      &out->priority_class);
	if (!rc && ps->runtime_class) {
		snprintf(path, sizeof(path), "%s.runtimeClassName", ps->spec_field);
		rc = keep(d, &out->runtime_class, ps->runtime_class, path, WORKLOAD_STR_MAX);
	}
	if (rc || !v || jv_is(v, JV_NULL))
		return rc;
	/* checked as the apiserver would, never used: priority comes from the
	   class (resolve.c) */
	snprintf(path, sizeof(path), "%s.priority", ps->spec_field);
	return jv_fields_int(&d->f, ps->pod_spec, "priority", path, 0, INT32_MIN, INT32_MAX, &n);
}

static int decode_selector(workload_decoder_t *d, workload_podset_t *out,
			   const workload_view_podset_t *ps)
{
	const jv_t *sel, *v;
	workload_label_t *e;
	char path[WORKLOAD_FIELD_MAX + 64];
	int rc;

	snprintf(path, sizeof(path), "%s.nodeSelector", ps->spec_field);
	rc = jv_fields_typed(&d->f, ps->pod_spec, "nodeSelector", JV_OBJECT, path, &sel);
	if (rc || !sel)
		return rc;
	if (sel->n > WORKLOAD_SELECTOR_MAX)
		return jv_fields_refuse(&d->f, path, "%u entries, at most %d", sel->n,
					WORKLOAD_SELECTOR_MAX);
	e = alloc_aligned(d, sel->n * sizeof(*e), 8);
	if (!e)
		return GPUQ_ENOMEM;
	out->node_selector = e;
	for (const jv_t *k = sel->first; k; k = v->next) {
		v = k->next;
		snprintf(path, sizeof(path), "%s.nodeSelector[%.40s]", ps->spec_field, k->s);
		if (!jv_is(v, JV_STRING))
			return jv_fields_want(&d->f, path, v, JV_STRING);
		rc = keep(d, &e->key, k->s, path, WORKLOAD_STR_MAX);
		if (!rc)
			rc = keep(d, &e->value, v->s, path, WORKLOAD_STR_MAX);
		if (rc)
			return rc;
		e++;
		out->n_node_selector++;
	}
	return GPUQ_OK;
}

static int decode_tolerations(workload_decoder_t *d, workload_podset_t *out,
			      const workload_view_podset_t *ps)
{
	static const char *const members[] = {"key", "operator", "value", "effect"};
	const jv_t *tols;
	workload_toleration_t *e;
	char path[WORKLOAD_FIELD_MAX + 64];
	size_t i = 0;
	int rc;

	snprintf(path, sizeof(path), "%s.tolerations", ps->spec_field);
	rc = jv_fields_typed(&d->f, ps->pod_spec, "tolerations", JV_ARRAY, path, &tols);
	if (rc || !tols)
		return rc;
	if (tols->n > WORKLOAD_TOLERATIONS_MAX)
		return jv_fields_refuse(&d->f, path, "%u entries, at most %d", tols->n,
					WORKLOAD_TOLERATIONS_MAX);
	e = alloc_aligned(d, tols->n * sizeof(*e), 8);
	if (!e)
		return GPUQ_ENOMEM;
	out->tolerations = e;
	for (const jv_t *t = tols->first; t; t = t->next, i++, e++) {
		const char **slots[] = {&e->key, &e->op, &e->value, &e->effect};

		snprintf(path, sizeof(path), "%s.tolerations[%zu]", ps->spec_field, i);
		if (!jv_is(t, JV_OBJECT))
			return jv_fields_want(&d->f, path, t, JV_OBJECT);
		for (size_t m = 0; m < sizeof(members) / sizeof(*members) && !rc; m++) {
			snprintf(path, sizeof(path), "%s.tolerations[%zu].%s", ps->spec_field, i,
				 members[m]);
			rc = workload_dec_str(d, t, members[m], path, false, slots[m]);
		}
		if (rc)
			return rc;
		e->has_seconds = jv_int(jv_get(t, "tolerationSeconds"), &e->seconds);
		out->n_tolerations++;
	}
	return GPUQ_OK;
}

quota_qty_t workload_qty(const workload_qty_t *e)
{
	quota_qty_t q;

	q.nano = (__int128)(((unsigned __int128)(uint64_t)(int64_t)e->nano_hi << 64) | e->nano_lo);
	q.format = (quota_qty_format_t)e->format;
	return q;
}

/* Resource names most objects ask for (quota's table): kept as static
 * strings, not copied. */
const char *workload_known_resource(const char *name)
{
	int k = quota_known_resource(name);

	return k >= 0 ? quota_known_resources[k] : NULL;
}

/* A resource list copied (names into the blocks, or static). */
static int copy_list(workload_decoder_t *d, const quota_reslist_t *l, const workload_qty_t **out,
		     uint16_t *n)
{
	workload_qty_t *e = l->n ? alloc_aligned(d, l->n * sizeof(*e), 8) : NULL;
	int rc = e || !l->n ? GPUQ_OK : GPUQ_ENOMEM;

	*out = e;
	*n = 0;
	for (size_t i = 0; !rc && i < l->n; i++) {
		const quota_qty_t *q = &l->items[i].qty;

		e[i].name = workload_known_resource(l->items[i].name);
		if (!e[i].name)
			rc = keep(d, &e[i].name, l->items[i].name, "resources", QUOTA_RES_NAME_MAX);
		e[i].nano_lo = (uint64_t)(unsigned __int128)q->nano;
		e[i].nano_hi = (int32_t)(q->nano >> 64); /* |value| <= 2^63-1: |nano| < 2^93 */
		e[i].format = (int32_t)q->format;
		*n = (uint16_t)(i + 1);
	}
	return rc;
}

/* The containers as declared, the overhead and the claims' templates. */
static int decode_containers(workload_decoder_t *d, workload_podset_t *out,
			     const workload_view_podset_t *ps)
{
	const quota_pod_t *pod = &ps->pod;
	workload_container_t *c =
	    pod->n_containers ? alloc_aligned(d, pod->n_containers * sizeof(*c), 8) : NULL;
	const jv_t *claims = jv_get(ps->pod_spec, "resourceClaims"), *cl;
	const char **names;
	size_t n_claims;
	uint16_t n_over = 0;
	int rc = c || !pod->n_containers ? GPUQ_OK : GPUQ_ENOMEM;

	out->containers = c;
	for (size_t i = 0; !rc && i < pod->n_containers; i++) {
		const quota_container_t *qc = &pod->containers[i];

		c[i].kind = qc->kind;
		rc = keep(d, &c[i].name, qc->name, "containers", QUOTA_CONTAINER_NAME_MAX);
		if (!rc)
			rc = copy_list(d, &qc->requests, &c[i].requests, &c[i].n_requests);
		if (!rc)
			rc = copy_list(d, &qc->limits, &c[i].limits, &c[i].n_limits);
	}
	out->n_containers = (uint16_t)pod->n_containers; /* <= WORKLOAD_CONTAINERS_MAX */
	if (!rc)
		rc = copy_list(d, &pod->overhead, &out->overhead, &n_over);
	out->n_overhead = n_over;
	n_claims = jv_count(claims) < WORKLOAD_CLAIMS_MAX ? jv_count(claims) : WORKLOAD_CLAIMS_MAX;
	names = rc || !n_claims ? NULL : alloc_aligned(d, n_claims * sizeof(*names), 8);
	if (!rc && n_claims && !names)
		rc = GPUQ_ENOMEM;
	out->claim_templates = names;
	cl = jv_first(claims);
	for (size_t i = 0; !rc && cl && i < n_claims; i++, cl = cl->next) {
		const char *t = workload_claim_template(cl);

		if (t)
			rc = keep(d, &names[out->n_claim_templates++], t, "resourceClaims",
				  WORKLOAD_STR_MAX);
	}
	return rc;
}

/* The pod-set strings of a Pod and a Job (static), else a copy. */
static int keep_static(workload_decoder_t *d, const char **slot, const char *s)
{
	static const char *const common[] = {"main", "", "spec", "/spec/template",
					     "spec.template.spec"};

	for (size_t i = 0; i < sizeof(common) / sizeof(*common); i++)
		if (!strcmp(s, common[i])) {
			*slot = common[i];
			return GPUQ_OK;
		}
	return keep(d, slot, s, "pod set", WORKLOAD_FIELD_MAX);
}

static int decode_template_flags(workload_decoder_t *d, workload_podset_t *out,
				 const workload_view_podset_t *ps, workload_kind_t kind)
{
	const jv_t *meta = kind == WORKLOAD_KIND_POD ? NULL : jv_member_obj(ps->tmpl, "metadata");
	const char *managed = jv_member_str(ps->pod_labels, WORKLOAD_LABEL_MANAGED);

	out->has_meta = meta != NULL;
	out->has_labels = ps->pod_labels != NULL;
	out->has_annotations = ps->pod_annotations != NULL;
	out->tmpl_admitted = ps->tmpl_admitted;
	out->counted_only = ps->counted_only;
	out->no_tmpl = ps->tmpl == NULL;
	out->default_tmpl = ps->default_tmpl;
	out->managed = managed && !strcmp(managed, "true");
	if (keep_static(d, &out->name, ps->name) || keep_static(d, &out->tmpl_ptr, ps->tmpl_ptr) ||
	    keep_static(d, &out->spec_field, ps->spec_field))
		return GPUQ_ENOMEM;
	return GPUQ_OK;
}

/* The view's topology request, owned (NULL when it declares none: a pod
 * set that asks nothing of the topology pays one pointer). */
static int decode_topology(workload_decoder_t *d, workload_podset_t *out,
			   const workload_view_podset_t *ps)
{
	const workload_topology_t *from = &ps->topology;
	workload_topology_t *t;
	int rc = GPUQ_OK;

	out->topology = NULL;
	if (workload_topology_same(from, NULL))
		return GPUQ_OK;
	t = alloc_aligned(d, sizeof(*t), 8);
	if (!t)
		return GPUQ_ENOMEM;
	*t = *from;
	t->level = t->slice_level = t->group = NULL;
	if (from->level)
		rc = keep(d, &t->level, from->level, "topology level", WORKLOAD_TOPO_LEVEL_MAX);
	if (!rc && from->slice_level)
		rc = keep(d, &t->slice_level, from->slice_level, "topology slice level",
			  WORKLOAD_TOPO_LEVEL_MAX);
	if (!rc && from->group)
		rc = keep(d, &t->group, from->group, "topology group", WORKLOAD_TOPO_GROUP_MAX);
	out->topology = t;
	return rc;
}

static int decode_podsets(workload_decoder_t *d, const workload_view_t *v)
{
	workload_t *w = d->w;
	int rc = GPUQ_OK;

	w->podsets = alloc_aligned(d, v->n_podsets * sizeof(*w->podsets), 8);
	if (!w->podsets)
		return GPUQ_ENOMEM;
	w->n_podsets = v->n_podsets;
	for (size_t i = 0; !rc && i < v->n_podsets; i++) {
		const workload_view_podset_t *ps = &v->podsets[i];
		workload_podset_t *out = &w->podsets[i];

		out->count = ps->count;
		rc = decode_template_flags(d, out, ps, v->kind);
		if (!rc && ps->pod_spec)
			rc = decode_priority(d, out, ps);
		if (!rc && ps->pod_spec)
			rc = decode_selector(d, out, ps);
		if (!rc && ps->pod_spec)
			rc = decode_tolerations(d, out, ps);
		if (!rc)
			rc = decode_containers(d, out, ps);
		if (!rc)
			rc = decode_topology(d, out, ps);
		workload_pod_spec_scopes(ps->pod_spec, &out->terminating, &out->cross_ns_affinity);
		out->node_affinity = (uint8_t)workload_node_affinity(ps->pod_spec);
		out->gpu_named = ps->gpu; /* by name: no policy, so no DRA seen */
	}
	return rc;
}

/* A Pod's scheduling gates other than gpuq's. */
static int decode_gates(workload_decoder_t *d, const jv_t *pod_spec)
{
	workload_t *w = d->w;
	const jv_t *gates = jv_get(pod_spec, "schedulingGates");
	const char **names;
	size_t n = jv_count(gates), i = 0;
	int rc = GPUQ_OK;

	w->gated = workload_pod_gated(pod_spec);
	if (n <= (w->gated ? 1u : 0u)) /* gpuq's own gate is not kept */
		return GPUQ_OK;
	if (n > WORKLOAD_GATES_MAX)
		return jv_fields_refuse(&d->f, "spec.schedulingGates", "%zu entries, at most %d", n,
					WORKLOAD_GATES_MAX);
	names = alloc_aligned(d, n * sizeof(*names), 8);
	if (!names)
		return GPUQ_ENOMEM;
	if (!workload_dec_extra(d))
		return GPUQ_ENOMEM;
	d->x->other_gates = names;
	for (const jv_t *g = jv_first(gates); !rc && g; g = g->next, i++) {
		const char *name = jv_member_str(g, "name");
		char path[64];

		if (!name || !strcmp(name, WORKLOAD_GATE))
			continue;
		snprintf(path, sizeof(path), "spec.schedulingGates[%zu].name", i);
		rc = keep(d, &names[d->x->n_other_gates++], name, path, WORKLOAD_STR_MAX);
	}
	return rc;
}

/* The labels an LWS puts on its Pods. */
#define LWS_NAME "leaderworkerset.sigs.k8s.io/name"
#define LWS_GROUP "leaderworkerset.sigs.k8s.io/group-index"
#define LWS_WORKER "leaderworkerset.sigs.k8s.io/worker-index"

/* Which set a Pod is a member of: an LWS (its labels), else a StatefulSet
 * (its controller owner). */
static int decode_set(workload_decoder_t *d, const workload_view_t *v)
{
	const workload_extra_t *o = d->w->x;
	const char *lws = jv_member_str(v->labels, LWS_NAME);
	const char *g = jv_member_str(v->labels, LWS_GROUP);
	const char *wi = jv_member_str(v->labels, LWS_WORKER);
	char *end = NULL;
	long long n;
	workload_extra_t *x;

	if (!lws &&
	    !(o->owner_kind && o->owner_api_version && !strcmp(o->owner_kind, "StatefulSet") &&
	      !strcmp(o->owner_api_version, "apps/v1")))
		return GPUQ_OK; /* a member of no set */
	if (!(x = workload_dec_extra(d)))
		return GPUQ_ENOMEM;
	if (lws && d->w->kind == WORKLOAD_KIND_STATEFULSET) {
		/* one of an LWS's own StatefulSets (its leaders', a group's
		   workers'): the LWS's groups hold its Pods */
		x->set_kind = WORKLOAD_KIND_LWS;
		return keep(d, &x->set_name, lws, "metadata.labels[" LWS_NAME "]",
			    WORKLOAD_STR_MAX);
	}
	if (lws) {
		x->set_kind = WORKLOAD_KIND_LWS;
		if (g && *g >= '0' && *g <= '9' && (n = strtoll(g, &end, 10)) >= 0 && !*end &&
		    n <= INT32_MAX)
			x->set_group = (int32_t)n;
		x->set_podset = wi && strcmp(wi, "0") != 0 ? 1 : 0;
		return keep(d, &x->set_name, lws, "metadata.labels[" LWS_NAME "]",
			    WORKLOAD_STR_MAX);
	}
	x->set_kind = WORKLOAD_KIND_STATEFULSET;
	x->set_name = x->owner_name;
	return GPUQ_OK;
}

/* Everything after the metadata: the view's pod sets, then the kind's
 * status. */
static int decode_parts(workload_decoder_t *d, const workload_config_t *cfg, const jv_t *root)
{
	workload_t *w = d->w;
	workload_view_t v;
	int rc;

	rc = workload_view_decode(&v, NULL, cfg, w->namespace_, w->kind, root, d->f.diag);
	if (!rc) {
		int64_t ads = 0;

		w->suspend = v.suspend;
		if (w->kind == WORKLOAD_KIND_JOB &&
		    jv_int(jv_get(jv_get(root, "spec"), "activeDeadlineSeconds"), &ads) && ads > 0)
			w->deadline_s = ads;
		w->pods = w->kind == WORKLOAD_KIND_POD ? 1 : v.pods;
		w->gpu_said = w->integ->podsets_of_child && v.gpu;
		w->runtime_patch_at = -1;
		rc = v.queue ? keep(d, &w->queue, v.queue, "metadata.labels", WORKLOAD_STR_MAX)
			     : GPUQ_OK;
	}
	if (!rc && v.max_exec_s && !workload_dec_extra(d))
		rc = GPUQ_ENOMEM;
	if (!rc && v.max_exec_s)
		d->x->max_exec_s = v.max_exec_s;
	if (!rc && v.pod_group && !workload_dec_extra(d))
		rc = GPUQ_ENOMEM;
	if (!rc && v.pod_group) {
		/* a group's count is at most WORKLOAD_POD_GROUP_MAX (kinds.c) */
		const char *retriable = jv_member_str(v.annotations, WORKLOAD_ANNOT_RETRIABLE);

		d->x->pod_group_total = (int32_t)v.pods;
		d->x->unretriable = retriable && !strcmp(retriable, "false");
		rc = keep(d, &d->x->pod_group, v.pod_group, "metadata.labels", WORKLOAD_STR_MAX);
	}
	if (!rc && v.first_ordinal && !workload_dec_extra(d))
		rc = GPUQ_ENOMEM;
	if (!rc && v.first_ordinal) /* at most INT32_MAX (kinds.c) */
		d->x->first_ordinal = (int32_t)v.first_ordinal;
	if (!rc && w->kind == WORKLOAD_KIND_POD)
		rc = decode_gates(d, v.podsets[0].pod_spec);
	if (!rc && (w->kind == WORKLOAD_KIND_POD || w->kind == WORKLOAD_KIND_STATEFULSET))
		rc = decode_set(d, &v);
	if (!rc)
		rc = decode_podsets(d, &v);
	if (!rc && w->integ->status)
		rc = w->integ->status(d, root);
	workload_view_deinit(&v);
	return rc;
}

/* ---- Compaction: the scratch blocks into one allocation ---- */

/* Where the scratch blocks' data went: a pointer into block b's data moves
 * to `to` + b->at + its offset there. */
typedef struct {
	const block_t *first; /* the scratch chain */
	char *to;	      /* the copy's data */
} reloc_t;

/* Move the pointer at slot (any pointer member) when it points into the
 * scratch blocks (a block's end included: an empty array allocated last);
 * static strings and NULL stay. */
static void rel(const reloc_t *r, void *slot)
{
	uintptr_t p;

	memcpy(&p, slot, sizeof(p));
	for (const block_t *b = r->first; p && b; b = b->next) {
		uintptr_t data = (uintptr_t)(b + 1);

		if (p >= data && p <= data + b->used) {
			p = (uintptr_t)r->to + b->at + (p - data);
			memcpy(slot, &p, sizeof(p));
			return;
		}
	}
}

/* Writable view of a member array that lives in the copy. */
#define MUT(type, p) ((type *)(uintptr_t)(p))

static void rel_qtys(const reloc_t *r, const workload_qty_t **list, size_t n)
{
	rel(r, list);
	for (size_t i = 0; i < n; i++)
		rel(r, &MUT(workload_qty_t, *list)[i].name);
}

static void rel_strs(const reloc_t *r, const char *const **list, size_t n)
{
	rel(r, list);
	for (size_t i = 0; i < n; i++)
		rel(r, &MUT(const char *, *list)[i]);
}

static void rel_podset(const reloc_t *r, workload_podset_t *ps)
{
	rel(r, &ps->name);
	rel(r, &ps->tmpl_ptr);
	rel(r, &ps->spec_field);
	rel(r, &ps->priority_class);
	rel(r, &ps->runtime_class);
	rel(r, &ps->containers);
	for (size_t i = 0; i < ps->n_containers; i++) {
		workload_container_t *c = MUT(workload_container_t, ps->containers) + i;

		rel(r, &c->name);
		rel_qtys(r, &c->requests, c->n_requests);
		rel_qtys(r, &c->limits, c->n_limits);
	}
	rel_qtys(r, &ps->overhead, ps->n_overhead);
	rel_strs(r, &ps->claim_templates, ps->n_claim_templates);
	rel(r, &ps->node_selector);
	for (size_t i = 0; i < ps->n_node_selector; i++) {
		workload_label_t *l = MUT(workload_label_t, ps->node_selector) + i;

		rel(r, &l->key);
		rel(r, &l->value);
	}
	rel(r, &ps->tolerations);
	for (size_t i = 0; i < ps->n_tolerations; i++) {
		workload_toleration_t *t = MUT(workload_toleration_t, ps->tolerations) + i;

		rel(r, &t->key);
		rel(r, &t->op);
		rel(r, &t->value);
		rel(r, &t->effect);
	}
	rel(r, &ps->topology);
	if (ps->topology) {
		workload_topology_t *t = MUT(workload_topology_t, ps->topology);

		rel(r, &t->level);
		rel(r, &t->slice_level);
		rel(r, &t->group);
	}
}

/* Every pointer member of w (decoded, not yet resolved). A member added to
 * workload_t or workload_podset_t that points into the blocks is added
 * here too (unit/test_workload.c's compaction test decodes every kind and
 * checks each member after the scratch is gone). */
static void relocate(const reloc_t *r, workload_t *w)
{
	const char **strs[] = {&w->namespace_,	     &w->name,	&w->uid,
			       &w->resource_version, &w->queue, &w->priority_class};

	for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
		rel(r, strs[i]);
	rel(r, &w->x);
	if (w->x != &workload_no_extra) {
		workload_extra_t *x = MUT(workload_extra_t, w->x);
		const char **xs[] = {
		    &x->flavors,    &x->original,   &x->expected_runtime, &x->owner_api_version,
		    &x->owner_kind, &x->owner_name, &x->owner_uid,	  &x->pod_group,
		    &x->set_name,   &x->phase,	    &x->node_name};

		for (size_t i = 0; i < sizeof(xs) / sizeof(*xs); i++)
			rel(r, xs[i]);
		rel_strs(r, &x->other_gates, x->n_other_gates);
	}
	rel(r, &w->podsets);
	for (size_t i = 0; i < w->n_podsets; i++)
		rel_podset(r, &w->podsets[i]);
}

/* Whether name is among the first n of list (by content). */
static bool named(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return true;
	return false;
}

/* The room the first workload_resolve takes (workload_tail_alloc): per pod
 * set, a request per distinct resource its containers and overhead name
 * (and nvidia.com/gpu for DRA claims) with the names, and the pod spec's
 * priority class. A namespace's LimitRange defaults can add resources; the
 * global default PriorityClass is not known here: then resolve allocates
 * its own (the room stays unused). */
static size_t resolve_room(const workload_t *w)
{
	/* resolve's spare byte; no alignment: compact leaves the used bytes a
	 * multiple of 16, where workload_tail_alloc starts */
	size_t bytes = 1;

	for (size_t i = 0; i < w->n_podsets; i++) {
		const workload_podset_t *ps = &w->podsets[i];
		const char *seen[QUOTA_RESLIST_MAX];
		size_t n = 0;

		for (size_t k = 0; k <= ps->n_containers; k++) {
			const workload_container_t *c =
			    k < ps->n_containers ? &ps->containers[k] : NULL;
			const workload_qty_t *lists[3] = {c ? c->requests : ps->overhead,
							  c ? c->limits : NULL, NULL};
			size_t lens[3] = {c ? c->n_requests : ps->n_overhead, c ? c->n_limits : 0,
					  0};

			for (size_t l = 0; l < 2; l++)
				for (size_t e = 0; e < lens[l] && n < QUOTA_RESLIST_MAX; e++)
					if (!named(seen, n, lists[l][e].name))
						seen[n++] = lists[l][e].name;
		}
		if (ps->n_claim_templates && n < QUOTA_RESLIST_MAX &&
		    !named(seen, n, "nvidia.com/gpu"))
			seen[n++] = "nvidia.com/gpu";
		for (size_t k = 0; k < n; k++)
			bytes += sizeof(workload_request_t) +
				 (workload_known_resource(seen[k]) ? 0 : strlen(seen[k]) + 1);
		if (ps->priority_class)
			bytes += strlen(ps->priority_class) + 1;
	}
	return bytes;
}

/* Copy the decoded workload from the scratch chain at first into one
 * allocation without a header (w first: the first block's data, where it
 * was allocated first): what the blocks used and the first resolve's room.
 * Bytes past UINT32_MAX cannot happen (every member is capped far below). */
static int compact(block_t *first, workload_t **out)
{
	const workload_t *w = (const workload_t *)(first + 1);
	size_t used = 0, room = resolve_room(w);
	reloc_t r = {.first = first};

	for (block_t *b = first; b; b = b->next) {
		b->at = used;
		used = (used + b->used + 15) & ~(size_t)15;
	}
	if (used + room > UINT32_MAX)
		return GPUQ_ENOMEM;
	r.to = malloc(used + room);
	if (!r.to)
		return GPUQ_ENOMEM;
	for (const block_t *b = first; b; b = b->next)
		memcpy(r.to + b->at, b + 1, b->used);
	*out = (workload_t *)(void *)r.to;
	relocate(&r, *out);
	(*out)->mem_used = (uint32_t)used;
	(*out)->mem_room = (uint32_t)(used + room);
	return GPUQ_OK;
}

int workload_decode(const jv_t *obj, workload_kind_t kind, const workload_config_t *cfg,
		    workload_t **out, gpuq_diag_t *diag)
{
	workload_decoder_t d = {.f = {.kind_name = "object", .name = "", .diag = diag}};
	block_t *first = block_new(SCRATCH_FIRST);
	const char *api = jv_member_str(obj, "apiVersion"), *k = jv_member_str(obj, "kind");
	workload_t *w;
	int rc;

	*out = NULL;
	if (!first)
		return GPUQ_ENOMEM;
	d.cur = first;
	w = d.w = workload_dec_alloc(&d, sizeof(*w)); /* first: compact keeps it at 0 */
	w->x = &workload_no_extra;
	w->kind = !jv_is(obj, JV_OBJECT)	? WORKLOAD_KIND_OTHER
		  : kind != WORKLOAD_KIND_OTHER ? kind
						: workload_kind_of(api, k);
	w->integ = workload_integration(w->kind);
	if (w->kind == WORKLOAD_KIND_OTHER) {
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "object: apiVersion \"%.64s\", kind \"%.64s\": gpuq decodes no "
				   "such kind",
				   api ? api : "", k ? k : "");
	} else {
		d.f.kind_name = w->integ->kind_name;
		rc = decode_meta(&d, obj);
		if (!rc)
			rc = decode_parts(&d, cfg, obj);
	}
	if (!rc)
		rc = compact(first, out);
	/* the scratch is overwritten before it goes, so a member left
	   pointing into it (relocate missed it) reads garbage at once, in
	   every build, not only under ASan */
	for (block_t *b = first; !rc && b; b = b->next)
		memset(b + 1, 0xa5, b->used);
	blocks_free(first);
	return rc;
}

int workload_decode_json(const char *json, size_t len, const workload_config_t *cfg,
			 workload_t **out, gpuq_diag_t *diag)
{
	jv_doc_t doc = {NULL, NULL};
	char err[GPUQ_DIAG_MAX / 2];
	int rc;

	*out = NULL;
	if (len > JV_BYTES_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "object of %zu bytes, at most %u", len,
				     JV_BYTES_MAX);
	rc = jv_doc_parse(&doc, json ? json : "", json ? len : 0, err, sizeof(err));
	if (rc) {
		jv_doc_free(&doc);
		return rc == GPUQ_ENOMEM
			   ? rc
			   : gpuq_diag_set(diag, GPUQ_EINVAL, "object: not JSON: %s", err);
	}
	rc = workload_decode(doc.root, WORKLOAD_KIND_OTHER, cfg, out, diag);
	jv_doc_free(&doc);
	return rc;
}

void *workload_tail_alloc(workload_t *w, size_t n)
{
	size_t at = ((size_t)w->mem_used + 15) & ~(size_t)15;
	void *p;

	if (at + n > w->mem_room)
		return NULL;
	p = (char *)w + at;
	w->mem_used = (uint32_t)(at + n);
	w->mem_room = 0; /* once: a later resolve allocates (it would pile up) */
	return p;
}

void workload_destroy(workload_t *w)
{
	if (!w)
		return;
	free(w->resolved);
	free(w); /* the one allocation every member lives in */
}

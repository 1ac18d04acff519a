/* workload/topology.c: what each pod set asks of the nodes' topology (issue
 * 33), read from its template's annotations (a Pod's own): Kueue's
 * kueue.x-k8s.io/podset-* keys, or gpuq's gpuq.dev/ ones, which win whole.
 * Checked here as Kueue's webhook checks them (jobframework's
 * ValidateTASPodSetRequest), plus what gpuq's placement needs (a slice size
 * dividing the pod set's count); every refusal names the annotation and
 * its value. Whether a level is one of the flavor's Topology is decided at
 * admission, against the flavor the pod set gets. */
#include <stdio.h>
#include <string.h>

#include "workload/internal.h"

/* The six keys under one prefix, in the order of workload_topology_t's
 * reading. */
typedef struct {
	const char *required, *preferred, *unconstrained, *slice, *slice_size, *group;
} keys_t;

static const keys_t GPUQ_KEYS = {WORKLOAD_ANNOT_TOPO_REQUIRED,	    WORKLOAD_ANNOT_TOPO_PREFERRED,
				 WORKLOAD_ANNOT_TOPO_UNCONSTRAINED, WORKLOAD_ANNOT_TOPO_SLICE,
				 WORKLOAD_ANNOT_TOPO_SLICE_SIZE,    WORKLOAD_ANNOT_TOPO_GROUP};
static const keys_t KUEUE_KEYS = {
    WORKLOAD_ANNOT_KUEUE_TOPO_REQUIRED,	     WORKLOAD_ANNOT_KUEUE_TOPO_PREFERRED,
    WORKLOAD_ANNOT_KUEUE_TOPO_UNCONSTRAINED, WORKLOAD_ANNOT_KUEUE_TOPO_SLICE,
    WORKLOAD_ANNOT_KUEUE_TOPO_SLICE_SIZE,    WORKLOAD_ANNOT_KUEUE_TOPO_GROUP};

static bool streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

bool workload_topology_same(const workload_topology_t *a, const workload_topology_t *b)
{
	static const workload_topology_t none = {0};

	a = a ? a : &none;
	b = b ? b : &none;
	return a->mode == b->mode && a->slice_size == b->slice_size && streq(a->level, b->level) &&
	       streq(a->slice_level, b->slice_level) && streq(a->group, b->group);
}

/* One pod set being read: where its annotations are, for messages. */
typedef struct {
	const workload_view_t *w;
	const workload_view_podset_t *ps;
	gpuq_diag_t *diag;
	char path[WORKLOAD_FIELD_MAX + 32]; /* "spec.template.metadata.annotations" */
} reading_t;

/* Refuse annotation key of the pod set with value (NULL: not shown). */
static int refuse(const reading_t *r, const char *key, const char *value, const char *what)
{
	const jv_fields_t f = workload_fields_of(r->w, r->diag);
	char at[WORKLOAD_FIELD_MAX + 128];

	snprintf(at, sizeof(at), "%s[%s]", r->path, key);
	if (value)
		return jv_fields_refuse(&f, at, "\"%.64s%s\": %s", value,
					strlen(value) > 64 ? "..." : "", what);
	return jv_fields_refuse(&f, at, "%s", what);
}

/* A level annotation's value: a node label key. */
static int level_of(const reading_t *r, const char *key, const char **out)
{
	const char *v = jv_member_str(r->ps->pod_annotations, key);

	*out = v;
	if (!v)
		return GPUQ_OK;
	if (strlen(v) > WORKLOAD_TOPO_LEVEL_MAX || !policy_name_is_label_key(v))
		return refuse(r, key, v, "must be a node label key (a Topology level's nodeLabel)");
	return GPUQ_OK;
}

/* strconv.ParseBool's words, as Kueue reads the unconstrained annotation. */
static int bool_of(const reading_t *r, const char *key, bool *out)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
	const char *v = jv_member_str(r->ps->pod_annotations, key);

	*out = false;
	if (!v)
		return GPUQ_OK;
	for (size_t i = 0; i < 6; i++) {
		if (!strcmp(v, yes[i])) {
			*out = true;
			return GPUQ_OK;
		}
		if (!strcmp(v, no[i]))
			return GPUQ_OK;
	}
	return refuse(r, key, v, "must be \"true\" or \"false\"");
}

/* The slice size: a whole number 1..count that divides count. */
static int slice_size_of(const reading_t *r, const char *key, int64_t count, int32_t *out)
{
	const char *v = jv_member_str(r->ps->pod_annotations, key);
	int64_t n = 0;
	size_t i = 0;
	char what[96];

	*out = 0;
	if (!v)
		return GPUQ_OK;
	for (; v[i] >= '0' && v[i] <= '9' && n <= INT32_MAX; i++)
		n = n * 10 + (v[i] - '0');
	if (!i || v[i] || n < 1 || n > INT32_MAX)
		return refuse(r, key, v, "must be a whole number of pods from 1 to 2147483647");
	if (count > 0 && (n > count || count % n)) {
		snprintf(what, sizeof(what), "must divide the pod set's %lld pods",
			 (long long)count);
		return refuse(r, key, v, what);
	}
	*out = (int32_t)n;
	return GPUQ_OK;
}

/* The group name: a label value's shape and size, and not a number
 * (Kueue's rule: a number reads as an index elsewhere). */
static int group_of(const reading_t *r, const char *key, const char **out)
{
	const char *v = jv_member_str(r->ps->pod_annotations, key);
	size_t len = v ? strlen(v) : 0, digits = 0;

	*out = v;
	if (!v)
		return GPUQ_OK;
	for (size_t i = 0; i < len; i++)
		digits += v[i] >= '0' && v[i] <= '9';
	if (!len || len > WORKLOAD_TOPO_GROUP_MAX || !policy_name_is_label_key(v) || strchr(v, '/'))
		return refuse(r, key, v,
			      "must be a name of 1 to 63 letters, digits, '-', '_' or '.', "
			      "starting and ending with a letter or digit");
	if (digits == len)
		return refuse(r, key, v, "must not be a number");
	return GPUQ_OK;
}

/* Whether the template names any of k's keys. */
static bool names_any(const jv_t *ann, const keys_t *k)
{
	return jv_get(ann, k->required) || jv_get(ann, k->preferred) ||
	       jv_get(ann, k->unconstrained) || jv_get(ann, k->slice) ||
	       jv_get(ann, k->slice_size) || jv_get(ann, k->group);
}

/* Mode and level: at most one of the three. */
static int mode_of(const reading_t *r, const keys_t *k, workload_topology_t *t)
{
	const char *req, *pref;
	bool unc;
	int rc = level_of(r, k->required, &req);

	if (!rc)
		rc = level_of(r, k->preferred, &pref);
	if (!rc)
		rc = bool_of(r, k->unconstrained, &unc);
	if (rc)
		return rc;
	if ((req != NULL) + (pref != NULL) + unc > 1)
		return refuse(r, req ? k->required : k->preferred, NULL,
			      "a pod set carries at most one of podset-required-topology, "
			      "podset-preferred-topology and podset-unconstrained-topology");
	t->mode = req	 ? WORKLOAD_TOPO_REQUIRED
		  : pref ? WORKLOAD_TOPO_PREFERRED
		  : unc	 ? WORKLOAD_TOPO_UNCONSTRAINED
			 : WORKLOAD_TOPO_NONE;
	t->level = req ? req : pref;
	return GPUQ_OK;
}

/* Slices and the group, with what they need of the mode. */
static int slices_of(const reading_t *r, const keys_t *k, int64_t count, workload_topology_t *t)
{
	int rc = level_of(r, k->slice, &t->slice_level);

	if (!rc)
		rc = slice_size_of(r, k->slice_size, count, &t->slice_size);
	if (!rc)
		rc = group_of(r, k->group, &t->group);
	if (rc)
		return rc;
	if (t->slice_level && !t->slice_size)
		return refuse(r, k->slice_size, NULL, "required with a slice topology");
	if (t->slice_size && !t->slice_level)
		return refuse(r, k->slice, NULL, "required with a slice size");
	if (t->group && !t->level)
		return refuse(r, k->group, t->group,
			      "a group needs a podset-required-topology or "
			      "podset-preferred-topology level");
	if (t->group && t->slice_level)
		return refuse(r, k->group, t->group, "a group cannot have slices");
	return GPUQ_OK;
}

/* The count a slice size must divide: the pod set's; a Pod's only in a pod
 * group (the group's total), else none (a Pod a set's controller made is
 * one of a count its parent was checked against). */
static int64_t count_of(const workload_view_t *w, const workload_view_podset_t *ps)
{
	if (w->kind != WORKLOAD_KIND_POD)
		return ps->count;
	return w->pod_group ? w->pods : 0;
}

static int read_podset(const workload_view_t *w, workload_view_podset_t *ps, gpuq_diag_t *diag)
{
	reading_t r = {.w = w, .ps = ps, .diag = diag};
	const keys_t *k;
	size_t n = strlen(ps->spec_field);
	int rc;

	memset(&ps->topology, 0, sizeof(ps->topology));
	if (!ps->pod_annotations)
		return GPUQ_OK;
	if (n >= 5 && !strcmp(ps->spec_field + n - 5, ".spec"))
		snprintf(r.path, sizeof(r.path), "%.*s.metadata.annotations", (int)(n - 5),
			 ps->spec_field);
	else
		snprintf(r.path, sizeof(r.path), "metadata.annotations");
	ps->topology.gpuq_keys = names_any(ps->pod_annotations, &GPUQ_KEYS);
	k = ps->topology.gpuq_keys ? &GPUQ_KEYS : &KUEUE_KEYS;
	rc = mode_of(&r, k, &ps->topology);
	if (!rc)
		rc = slices_of(&r, k, count_of(w, ps), &ps->topology);
	return rc;
}

/* The pod sets of one group (an object with several): at least two, all
 * with the same mode and level. An object a parent's controller made
 * (made: a JobSet's Job, an LWS's StatefulSet) holds one of its parent's
 * pod sets, the group's partner in a sibling: its parent's group was
 * checked at its creation, as a set's Pod's is. */
static int check_groups(const workload_view_t *w, bool made, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);

	if (w->kind == WORKLOAD_KIND_POD || made)
		return GPUQ_OK; /* a Pod's partner is another Pod's template */
	for (size_t i = 0; i < w->n_podsets; i++) {
		const workload_topology_t *a = &w->podsets[i].topology;
		size_t members = 0;

		for (size_t j = 0; a->group && j < w->n_podsets; j++) {
			const workload_topology_t *b = &w->podsets[j].topology;

			if (!streq(a->group, b->group))
				continue;
			members++;
			if (a->mode != b->mode || !streq(a->level, b->level))
				return jv_fields_refuse(
				    &f, w->podsets[j].spec_field,
				    "pod set \"%s\" is in topology group \"%s\" with pod set "
				    "\"%s\" "
				    "but asks for another level (%s %s, not %s %s)",
				    w->podsets[j].name, a->group, w->podsets[i].name,
				    b->mode == WORKLOAD_TOPO_REQUIRED ? "required" : "preferred",
				    b->level,
				    a->mode == WORKLOAD_TOPO_REQUIRED ? "required" : "preferred",
				    a->level);
		}
		if (a->group && members < 2)
			return jv_fields_refuse(
			    &f, w->podsets[i].spec_field,
			    "pod set \"%s\" is alone in topology group \"%s\" (a "
			    "group places two or more pod sets together)",
			    w->podsets[i].name, a->group);
	}
	return GPUQ_OK;
}

int workload_view_topology(workload_view_t *w, bool made, gpuq_diag_t *diag)
{
	int rc = GPUQ_OK;

	for (size_t i = 0; !rc && i < w->n_podsets; i++)
		rc = read_podset(w, &w->podsets[i], diag);
	return rc ? rc : check_groups(w, made, diag);
}

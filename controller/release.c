/* controller/release.c: a held parent's patches (a Job, a JobSet: any kind
 * the integration table holds by its suspend field), written from its
 * decoded workload as JSON Patches (RFC 6902) so each pod set's template is
 * addressed by its own path (/spec/template, /spec/replicatedJobs/2/template/
 * spec/template, ...), which a merge patch cannot do inside a list. Every
 * patch opens with a test of the resourceVersion the decision was made on:
 * an object that changed meanwhile is left alone (the apiserver answers
 * 422, kube/ says GPUQ_ECONFLICT) until the watch shows it again. What a
 * patch adds is decided from the decoded object (does the template have
 * metadata? annotations?), so no op ever addresses a parent that is not
 * there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

/* Bytes of a JSON Pointer gpuq writes: a template's path, "/metadata/
 * annotations/" and an escaped key. */
#define PTR_MAX (WORKLOAD_FIELD_MAX + 64 + 2 * QUEUE_NAME_MAX)

/* token escaped for a JSON Pointer (~ -> ~0, / -> ~1) appended to base. */
static void ptr_join(char *out, size_t cap, const char *base, const char *token)
{
	size_t n = (size_t)snprintf(out, cap, "%s/", base);

	for (const char *p = token; *p && n + 3 < cap; p++) {
		if (*p == '~' || *p == '/') {
			out[n++] = '~';
			out[n++] = *p == '~' ? '0' : '1';
		} else {
			out[n++] = *p;
		}
	}
	out[n < cap ? n : cap - 1] = '\0';
}

static void op(json_t *patch, const char *verb, const char *path, json_t *value)
{
	json_t *o = value ? json_pack("{s:s, s:s, s:o}", "op", verb, "path", path, "value", value)
			  : json_pack("{s:s, s:s}", "op", verb, "path", path);

	if (o)
		json_array_append_new(patch, o);
}

/* The patch's guard: the object as decided on. */
static json_t *patch_new(const workload_t *wl)
{
	json_t *patch = json_array();

	if (patch)
		op(patch, "test", "/metadata/resourceVersion", json_string(wl->resource_version));
	return patch;
}

/* Set annotations keys[i] = values[i] of the metadata at meta_ptr (whose
 * annotations map exists or not). */
static void put_annotations(json_t *patch, const char *meta_ptr, bool has_meta, bool has_map,
			    const char *const *keys, const char *const *values, size_t n)
{
	char path[PTR_MAX], ann[WORKLOAD_FIELD_MAX + 64];
	json_t *map;

	snprintf(ann, sizeof(ann), "%s/annotations", meta_ptr);
	if (has_map) {
		for (size_t i = 0; i < n; i++) {
			ptr_join(path, sizeof(path), ann, keys[i]);
			op(patch, "add", path, json_string(values[i]));
		}
		return;
	}
	map = json_object();
	for (size_t i = 0; map && i < n; i++)
		json_object_set_new(map, keys[i], json_string(values[i]));
	if (has_meta)
		op(patch, "add", ann, map);
	else
		op(patch, "add", meta_ptr, json_pack("{s:o}", "annotations", map));
}

/* Remove annotation key of the metadata at meta_ptr. */
static void drop_annotation(json_t *patch, const char *meta_ptr, const char *key)
{
	char path[PTR_MAX], ann[WORKLOAD_FIELD_MAX + 64];

	snprintf(ann, sizeof(ann), "%s/annotations", meta_ptr);
	ptr_join(path, sizeof(path), ann, key);
	op(patch, "remove", path, NULL);
}

/* ---- the templates' placement before a release ---- */

/* One pod set's placement as it is: {nodeSelector, tolerations}, or
 * {"absent": true} where it has no template (the release writes one). */
static json_t *placement_now(const workload_podset_t *ps)
{
	if (ps->no_tmpl)
		return json_pack("{s:b}", "absent", 1);
	return json_pack("{s:o?, s:o?}", "nodeSelector",
			 ps->n_node_selector ? controller_selector_json(ps) : NULL, "tolerations",
			 ps->n_tolerations ? controller_tolerations_json(ps) : NULL);
}

/* Pod set i's placement before any release: from gpuq.dev/original-scheduling
 * when a release wrote it (a retry after a crash must not stack the
 * flavor's settings twice), else as it is. One pod set's annotation is the
 * placement itself ({nodeSelector, tolerations}, the form Jobs have always
 * carried); several pod sets' is {"podsets": [placement, ...]}. A new
 * reference, or NULL (no memory). */
static json_t *original_of(const workload_t *wl, const workload_t *p, size_t i)
{
	json_t *orig = wl->x->original ? json_loads(wl->x->original, 0, NULL) : NULL, *one;

	if (json_is_object(orig) && p->n_podsets > 1) {
		one = json_array_get(json_object_get(orig, "podsets"), i);
		one = json_is_object(one) ? json_incref(one) : NULL;
		json_decref(orig);
		orig = one;
	}
	if (json_is_object(orig))
		return orig;
	json_decref(orig);
	return placement_now(&p->podsets[i]);
}

/* ---- the pin of a pod set placed across domains (a required nodeAffinity) ---- */

#define REQUIRED_MEMBER "requiredDuringSchedulingIgnoredDuringExecution"

/* Where the template's affinity went before gpuq's pin: the original's
 * "affinityAt" when a release pinned it (the template now holds the pin),
 * else the template as it is (a workload_affinity_t). */
static int affinity_before(const workload_podset_t *ps, const json_t *orig)
{
	const json_t *at = json_object_get(orig, "affinityAt");
	json_int_t v = json_is_integer(at) ? json_integer_value(at) : -1;

	/* anything else (absent, or edited out of range): the template as it is */
	return v >= WORKLOAD_AFFINITY_NONE && v <= WORKLOAD_AFFINITY_REQUIRED ? (int)v
									      : ps->node_affinity;
}

/* The JSON Pointer of the member a pin adds to a template whose affinity
 * went as far as `at` (a workload_affinity_t below REQUIRED). */
static void affinity_path(char *out, size_t cap, const workload_podset_t *ps, int at)
{
	/* the last one's literals joined on purpose (clang's
	   -Wstring-concatenation asks for a member to be named) */
	static const char required[] = "affinity/nodeAffinity/" REQUIRED_MEMBER;
	static const char *const tail[] = {"affinity", "affinity/nodeAffinity", required};

	snprintf(out, cap, "%s/spec/%s", ps->tmpl_ptr, tail[at < 0 || at > 2 ? 2 : at]);
}

/* Pin pod set ps (index i) of workload id to the domains it was placed in,
 * when they are several and its kind's templates take it (pins_affinity):
 * a required nodeAffinity of one term per domain, added where the
 * template's own affinity stops (a template with its own required node
 * affinity keeps only the nodeSelector's shared levels). orig records where
 * that was ("affinityAt"), for the restore; a pin an earlier release left,
 * not wanted now, goes. */
static void pin_affinity(struct controller *c, json_t *patch, const workload_t *wl,
			 const workload_podset_t *ps, queue_wl_t id, size_t i, json_t *orig)
{
	int at = affinity_before(ps, orig);
	json_t *terms = NULL, *v;
	char path[WORKLOAD_FIELD_MAX + 96];

	if (!wl->integ->pins_affinity || at >= WORKLOAD_AFFINITY_REQUIRED)
		return;
	terms = controller_actuate_pin_terms(c, id, i);
	affinity_path(path, sizeof(path), ps, at);
	if (!terms) {
		if (json_object_get(orig, "affinityAt") && ps->node_affinity > at)
			op(patch, "remove", path, NULL);
		json_object_del(orig, "affinityAt");
		return;
	}
	v = json_pack("{s:o}", "nodeSelectorTerms", terms);
	if (v && at <= WORKLOAD_AFFINITY_NO_NODE)
		v = json_pack("{s:o}", REQUIRED_MEMBER, v);
	if (v && at == WORKLOAD_AFFINITY_NONE)
		v = json_pack("{s:o}", "nodeAffinity", v);
	if (v) {
		op(patch, "add", path, v);
		json_object_set_new(orig, "affinityAt", json_integer(at));
	}
}

/* ---- a kind released through its child (a TrainJob: runtimePatches) ---- */

/* gpuq's runtime patch: each pod set's (each replicatedJob's) pod
 * template marked managed and admitted, placed on its flavor. */
static json_t *runtime_patch_new(void)
{
	return json_pack("{s:s, s:{s:{s:{s:[]}}}}", "manager", WORKLOAD_PATCH_MANAGER,
			 "trainingRuntimeSpec", "template", "spec", "replicatedJobs");
}

static void runtime_patch_add(json_t *entry, const workload_podset_t *ps, json_t *sel, json_t *tols)
{
	json_t *rjs = json_object_get(
	    json_object_get(
		json_object_get(json_object_get(entry, "trainingRuntimeSpec"), "template"), "spec"),
	    "replicatedJobs");

	json_array_append_new(
	    rjs, json_pack("{s:s, s:{s:{s:{s:{s:{s:s}, s:{s:s}}, s:{s:o?, s:o?}}}}}", "name",
			   ps->name, "template", "spec", "template", "metadata", "labels",
			   WEBHOOK_LABEL_MANAGED, "true", "annotations", WEBHOOK_ANNOT_ADMITTED,
			   "true", "spec", "nodeSelector", sel, "tolerations", tols));
}

/* Put gpuq's runtime patch in wl's list (replacing one already there). */
static void runtime_patch_put(json_t *patch, const workload_t *wl, json_t *entry)
{
	char path[WORKLOAD_FIELD_MAX + 32];

	if (wl->runtime_patch_at >= 0) {
		snprintf(path, sizeof(path), "%s/%d", wl->integ->runtime_patch,
			 (int)wl->runtime_patch_at);
		op(patch, "replace", path, entry);
	} else if (wl->has_runtime_patches) {
		snprintf(path, sizeof(path), "%s/-", wl->integ->runtime_patch);
		op(patch, "add", path, entry);
	} else {
		op(patch, "add", wl->integ->runtime_patch, json_pack("[o]", entry));
	}
}

/* {name: quantity} of n entries, or NULL when n is 0. */
static json_t *qty_map(const workload_qty_t *l, uint16_t n)
{
	json_t *m = n ? json_object() : NULL;

	for (uint16_t i = 0; m && i < n; i++) {
		quota_qty_t q = workload_qty(&l[i]);
		char v[QUOTA_QTY_FMT_MAX];

		if (!quota_qty_format(&q, v, sizeof(v)))
			json_object_set_new(m, l[i].name, json_string(v));
	}
	return m;
}

/* The template the kind's controller would make for a counted_only pod set
 * that has none (KubeRay's default submitter): its containers as counted,
 * restartPolicy Never, placed on sel and tols (stolen); the image is
 * copied in by the patch. */
static json_t *default_template(const workload_podset_t *ps, json_t *sel, json_t *tols)
{
	json_t *cs = json_array();

	for (uint16_t i = 0; cs && i < ps->n_containers; i++) {
		const workload_container_t *c = &ps->containers[i];

		json_array_append_new(cs, json_pack("{s:s, s:{s:o*, s:o*}}", "name", c->name,
						    "resources", "requests",
						    qty_map(c->requests, c->n_requests), "limits",
						    qty_map(c->limits, c->n_limits)));
	}
	return json_pack("{s:{s:o, s:s, s:o?, s:o?}}", "spec", "containers", cs, "restartPolicy",
			 "Never", "nodeSelector", sel, "tolerations", tols);
}

/* Place counted_only pod set ps on sel and tols (stolen): into its
 * template, or a default template written whole where it has none and its
 * kind has one (else nothing: KubeRay's default, unplaced). */
static void place_counted_only(json_t *patch, const workload_t *wl, const workload_podset_t *ps,
			       json_t *sel, json_t *tols)
{
	char path[WORKLOAD_FIELD_MAX + 32];

	if (!ps->no_tmpl) {
		snprintf(path, sizeof(path), "%s/spec/nodeSelector", ps->tmpl_ptr);
		op(patch, "add", path, sel);
		snprintf(path, sizeof(path), "%s/spec/tolerations", ps->tmpl_ptr);
		op(patch, "add", path, tols);
	} else if (ps->default_tmpl && wl->integ->default_image_ptr && ps->n_containers) {
		op(patch, "add", ps->tmpl_ptr, default_template(ps, sel, tols));
		snprintf(path, sizeof(path), "%s/spec/containers/0/image", ps->tmpl_ptr);
		json_array_append_new(patch, json_pack("{s:s, s:s, s:s}", "op", "copy", "from",
						       wl->integ->default_image_ptr, "path", path));
	} else {
		json_decref(sel);
		json_decref(tols);
	}
}

/* ---- release ---- */

int controller_release_parent_patch(struct controller *c, const controller_job_t *j, queue_wl_t id,
				    json_t **out)
{
	const workload_t *wl = j->wl, *p = controller_jobs_podsets(c, j);
	json_t *patch, *all, *one = NULL, *entry = NULL;
	char flavors[CONTROLLER_FLAVORS_MAX], path[WORKLOAD_FIELD_MAX + 32],
	    meta[WORKLOAD_FIELD_MAX + 16];
	char status[1024];
	static const char *const tkeys[] = {WEBHOOK_ANNOT_ADMITTED};
	static const char *const tvals[] = {"true"};
	char *orig_dump;
	int rc = GPUQ_OK;

	if (!p)
		return GPUQ_EAGAIN; /* a TrainJob whose JobSet is not seen yet */
	patch = patch_new(wl);
	all = p->n_podsets > 1 ? json_array() : NULL;
	if (wl->integ->podsets_of_child && !(entry = runtime_patch_new()))
		rc = GPUQ_ENOMEM;
	flavors[0] = '\0';
	for (size_t i = 0; patch && !rc && i < p->n_podsets; i++) {
		const workload_podset_t *ps = &p->podsets[i];
		json_t *orig = original_of(wl, p, i), *sel = NULL, *tols = NULL;
		char pairs[512];

		if (!orig) {
			rc = GPUQ_ENOMEM;
			break;
		}
		rc = controller_actuate_placement(
		    c, id, i, p->n_podsets > 1, json_object_get(orig, "nodeSelector"),
		    json_object_get(orig, "tolerations"), &sel, &tols, pairs, sizeof(pairs));
		if (!rc)
			snprintf(flavors + strlen(flavors), sizeof(flavors) - strlen(flavors),
				 "%s%s", flavors[0] ? "," : "", pairs);
		if (!rc && entry) {
			runtime_patch_add(entry, ps, sel, tols);
		} else if (!rc && ps->counted_only) {
			place_counted_only(patch, wl, ps, sel, tols);
		} else if (!rc) {
			snprintf(meta, sizeof(meta), "%s/metadata", ps->tmpl_ptr);
			put_annotations(patch, meta, ps->has_meta, ps->has_annotations, tkeys,
					tvals, 1);
			snprintf(path, sizeof(path), "%s/spec/nodeSelector", ps->tmpl_ptr);
			op(patch, "add", path, sel);
			snprintf(path, sizeof(path), "%s/spec/tolerations", ps->tmpl_ptr);
			op(patch, "add", path, tols);
			pin_affinity(c, patch, wl, ps, id, i, orig);
		}
		if (all)
			json_array_append_new(all, orig);
		else
			one = orig;
	}
	if (all) { /* several pod sets: {"podsets": [...]} */
		one = json_pack("{s:o}", "podsets", all);
		all = NULL;
	}
	orig_dump = rc || !patch || !one ? NULL : json_dumps(one, JSON_COMPACT | JSON_SORT_KEYS);
	if (!rc && patch && orig_dump) {
		const char *keys[] = {WEBHOOK_ANNOT_ADMITTED, CONTROLLER_ANNOT_FLAVORS,
				      CONTROLLER_ANNOT_ORIGINAL, CONTROLLER_ANNOT_STATUS};
		const char *vals[] = {"true", flavors, orig_dump, status};

		/* where it runs now, in the same write (status.c does not write
		 * it again: controller_release_parent keeps its hash) */
		(void)queue_workload_status(engine_core(c->e), id, status,
					    sizeof(status)); /* truncated is fine */
		put_annotations(patch, "/metadata", true, wl->has_annotations, keys, vals, 4);
		if (entry)
			runtime_patch_put(patch, wl, json_incref(entry));
		op(patch, "add", wl->integ->suspend_ptr, json_false());
		*out = json_incref(patch);
	} else if (!rc) {
		rc = GPUQ_ENOMEM;
	}
	json_decref(all);
	json_decref(one);
	json_decref(entry);
	free(orig_dump);
	json_decref(patch);
	return rc;
}

int controller_release_parent(struct controller *c, controller_job_t *j, queue_wl_t id)
{
	json_t *patch = NULL;
	char status[1024];
	int rc = controller_release_parent_patch(c, j, id, &patch);

	if (rc)
		return rc;
	(void)queue_workload_status(engine_core(c->e), id, status,
				    sizeof(status)); /* as the patch has it */
	/* with a patcher, sent with the pass's other releases (in a namespace
	   with ResourceQuotas each judged with the ones batched before it) */
	if (c->patcher)
		return controller_patch_batch(c, j, KUBE_PATCH_JSON, patch, "released",
					      controller_map_hash(status) | 1);
	rc = controller_patch_parent(c, j, KUBE_PATCH_JSON, patch, "released");
	if (rc == GPUQ_OK) {
		j->status_hash = controller_map_hash(status) | 1; /* the release carried it */
		c->step_released++;
	}
	return rc;
}

json_t *controller_release_suspend_patch(const workload_t *wl, const char *rv)
{
	json_t *patch = rv ? json_array() : patch_new(wl);

	if (!patch)
		return NULL;
	if (rv)
		op(patch, "test", "/metadata/resourceVersion", json_string(rv));
	op(patch, "add", wl->integ->suspend_ptr, json_true());
	if (wl->admitted)
		drop_annotation(patch, "/metadata", WEBHOOK_ANNOT_ADMITTED);
	if (wl->x->flavors)
		drop_annotation(patch, "/metadata", CONTROLLER_ANNOT_FLAVORS);
	return patch;
}

int controller_release_suspend(struct controller *c, controller_job_t *j)
{
	json_t *patch = controller_release_suspend_patch(j->wl, NULL);

	return patch ? controller_patch_parent(c, j, KUBE_PATCH_JSON, patch, "suspended")
		     : GPUQ_ENOMEM;
}

/* Put pod set i's placement back from orig: a template the release wrote
 * whole goes (while it is there). */
static void restore_podset(json_t *patch, const workload_podset_t *ps, const json_t *orig)
{
	const json_t *sel = json_object_get(orig, "nodeSelector");
	const json_t *tols = json_object_get(orig, "tolerations");
	char path[WORKLOAD_FIELD_MAX + 32], meta[WORKLOAD_FIELD_MAX + 16];

	if (ps->no_tmpl)
		return;
	if (json_is_true(json_object_get(orig, "absent"))) {
		op(patch, "remove", ps->tmpl_ptr, NULL);
		return;
	}
	snprintf(meta, sizeof(meta), "%s/metadata", ps->tmpl_ptr);
	if (ps->tmpl_admitted)
		drop_annotation(patch, meta, WEBHOOK_ANNOT_ADMITTED);
	snprintf(path, sizeof(path), "%s/spec/nodeSelector", ps->tmpl_ptr);
	if (json_object_size(sel))
		op(patch, "add", path, json_deep_copy(sel));
	else if (ps->n_node_selector)
		op(patch, "remove", path, NULL);
	snprintf(path, sizeof(path), "%s/spec/tolerations", ps->tmpl_ptr);
	if (json_array_size(tols))
		op(patch, "add", path, json_deep_copy(tols));
	else if (ps->n_tolerations)
		op(patch, "remove", path, NULL);
	if (json_object_get(orig, "affinityAt") && ps->node_affinity > affinity_before(ps, orig)) {
		affinity_path(path, sizeof(path), ps, affinity_before(ps, orig));
		op(patch, "remove", path, NULL); /* gpuq's pin (pin_affinity) */
	}
}

json_t *controller_release_restore_patch(const workload_t *wl)
{
	json_t *patch = wl->x->original ? patch_new(wl) : NULL;

	if (!patch)
		return NULL;
	if (wl->integ->podsets_of_child && wl->runtime_patch_at >= 0) {
		/* a TrainJob: gpuq's runtime patch out (the Trainer allows it once
		   its JobSet is inactive) */
		char path[WORKLOAD_FIELD_MAX + 48];

		snprintf(path, sizeof(path), "%s/%d/manager", wl->integ->runtime_patch,
			 (int)wl->runtime_patch_at);
		op(patch, "test", path, json_string(WORKLOAD_PATCH_MANAGER));
		snprintf(path, sizeof(path), "%s/%d", wl->integ->runtime_patch,
			 (int)wl->runtime_patch_at);
		op(patch, "remove", path, NULL);
	}
	for (size_t i = 0; !wl->integ->podsets_of_child && i < wl->n_podsets; i++) {
		json_t *orig = original_of(wl, wl, i);

		if (orig)
			restore_podset(patch, &wl->podsets[i], orig);
		json_decref(orig);
	}
	drop_annotation(patch, "/metadata", CONTROLLER_ANNOT_ORIGINAL);
	return patch;
}

int controller_release_restore(struct controller *c, controller_job_t *j)
{
	json_t *patch;
	int rc;

	if (j->wl->x->original) {
		patch = controller_release_restore_patch(j->wl);
		if (!patch)
			return GPUQ_ENOMEM;
		rc = controller_patch_parent(c, j, KUBE_PATCH_JSON, patch,
					     "restored the template of");
		if (rc)
			return rc;
	}
	if (controller_wl_change(c, ENGINE_CHANGE_EVICTED, j->uid) == GPUQ_OK) {
		j->requeued_ms = controller_now(c);
		/* its status says where it stands now: queued again, or (its
		   wall-clock limit) deactivated, which no later cycle reports */
		controller_status_note(c, j->uid);
	}
	return GPUQ_OK;
}

/* ---- quiet ---- */

/* A Job's pods are gone once the Job controller reports none active and
 * none terminating (a deleted pod holds its GPU until it is gone:
 * status.terminating) and has reset its start time (which also makes the
 * template mutable again). */
static bool job_quiet(const workload_t *wl)
{
	return wl->active == 0 && wl->terminating == 0 && !wl->started;
}

bool controller_release_quiet(struct controller *c, const controller_job_t *j)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	/* a Job: gone by its status and by the Pods watch alike */
	if (j->wl->integ->quiet == WORKLOAD_QUIET_PODS)
		return job_quiet(j->wl) && controller_pods_of_job(c, j->uid) == 0;
	/* a RayCluster: KubeRay says it is suspended (its Pods deleted) */
	if (j->wl->integ->quiet == WORKLOAD_QUIET_STATUS)
		return j->wl->active == 0;
	/* a JobSet: every child Job it owns (cached by the Jobs watch) has no
	 * pod left (the JobSet controller suspends them all), and it counts no
	 * active Job; a RayJob: its RayCluster (cached by the RayClusters
	 * watch) is gone or suspended, and KubeRay reports it Suspended */
	while ((s = controller_map_next(&c->jobs, &pos))) {
		const controller_job_t *k = s->value;

		if (k->wl && k->wl->x->owner_uid && !strcmp(k->wl->x->owner_uid, j->uid) &&
		    (k->wl->active || k->wl->terminating || controller_pods_of_job(c, k->uid) > 0))
			return false;
	}
	return j->wl->active == 0;
}

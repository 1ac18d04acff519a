/* controller/actuate.c: bring a held parent (a Job, a JobSet) in line with
 * its workload's state in the core (released, suspended, templates
 * restored: the patches are release.c's), hold a release a ResourceQuota
 * would refuse, and post Events. Every patch carries the resourceVersion the
 * decision was made on, so an object that changed meanwhile is left alone
 * until the watch shows it again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "quota/quota.h"

static json_t *toleration_json(const policy_toleration_t *t)
{
	json_t *o = json_object();
	const char *eff = POLICY_EFFECT_NAMES[t->effect]; /* "": every effect */

	if (!o)
		return NULL;
	if (t->key[0])
		json_object_set_new(o, "key", json_string(t->key));
	json_object_set_new(o, "operator", json_string(t->exists ? "Exists" : "Equal"));
	if (!t->exists)
		json_object_set_new(o, "value", json_string(t->value));
	if (eff[0])
		json_object_set_new(o, "effect", json_string(eff));
	if (t->has_seconds)
		json_object_set_new(o, "tolerationSeconds", json_integer(t->seconds));
	return o;
}

/* The distinct flavors assigned to an admitted workload, into names[], and
 * (when ann is not NULL) the CONTROLLER_ANNOT_FLAVORS value: resource=flavor
 * pairs, comma-separated, that a successor adopts the Job by. */
static size_t flavors_of(struct controller *c, queue_wl_t id, size_t podset, bool prefixed,
			 const char **names, size_t cap, char *ann, size_t ann_cap)
{
	size_t n = 0, len = 0;

	if (ann && ann_cap)
		ann[0] = '\0';
	for (uint32_t r = 0; r < queue_resource_count(engine_core(c->e)); r++) {
		uint32_t f;
		const char *name;
		bool seen = false;
		if (queue_workload_flavor(engine_core(c->e), id, podset, r, &f))
			continue;
		name = queue_flavor_name(engine_core(c->e), f);
		if (ann && len < ann_cap) {
			char pre[24] = "";
			int w;
			if (prefixed)
				snprintf(pre, sizeof(pre), "%zu:", podset);
			w = snprintf(ann + len, ann_cap - len, "%s%s%s=%s", len ? "," : "", pre,
				     queue_resource_name(engine_core(c->e), r), name);
			len += w > 0 ? (size_t)w : 0;
		}
		for (size_t i = 0; i < n; i++)
			seen = seen || strcmp(names[i], name) == 0;
		if (!seen && n < cap)
			names[n++] = name;
	}
	return n;
}

/* Parent j's patch answered: rc, and the reply's bytes (taken) or diag. */
static void patch_answered(struct controller *c, controller_job_t *j, int rc,
			   kube_response_t *reply, const gpuq_diag_t *diag, const char *what)
{
	const char *ns = controller_job_ns(j), *name = controller_job_name(j),
		   *kn = j->wl->integ->kind_name;

	if (rc == GPUQ_OK) {
		gpuq_diag_t d = {{0}};
		workload_t *wl = NULL;

		gpuq_log(GPUQ_LOG_INFO, "controller", "%s %s %s/%s", what, kn, ns, name);
		if (controller_decode(c, reply->body, reply->len, &wl, &d) == GPUQ_OK)
			controller_job_take(c, j, wl); /* the watch shows the same soon */
		else				       /* keeps the former object */
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "%s %s %s/%s: cannot cache the reply: %s", what, kn, ns, name,
				 d.msg);
	} else if (rc == GPUQ_ECONFLICT || rc == GPUQ_ENOTFOUND) {
		gpuq_log(GPUQ_LOG_DEBUG, "controller",
			 "%s %s %s/%s: %s (the watch will show the "
			 "new state)",
			 what, kn, ns, name, diag->msg);
	} else {
		gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s %s/%s: %s", what, kn, ns, name,
			 diag->msg);
	}
	kube_response_deinit(reply);
}

int controller_patch_parent(struct controller *c, controller_job_t *j, kube_patch_t kind,
			    json_t *body, const char *what)
{
	char path[KUBE_URL_MAX];
	gpuq_diag_t diag = {{0}};
	kube_response_t reply;
	int rc;

	if (controller_object_path(j->wl->kind, controller_job_ns(j), controller_job_name(j), path,
				   sizeof(path))) {
		json_decref(body);
		return GPUQ_EINVAL;
	}
	rc = kube_patch_text(c->client, path, kind, body, &reply, &diag);
	json_decref(body);
	patch_answered(c, j, rc, &reply, &diag, what);
	return rc;
}

int controller_patch_batch(struct controller *c, controller_job_t *j, kube_patch_t kind,
			   json_t *body, const char *what, uint64_t status_h)
{
	controller_patch_t *x;

	if (c->n_batch == c->cap_batch) {
		size_t cap = c->cap_batch ? 2 * c->cap_batch : 16;
		controller_patch_t *b = realloc(c->batch, cap * sizeof(*b));

		if (!b) {
			json_decref(body);
			return GPUQ_ENOMEM; /* compared again at the next sweep */
		}
		c->batch = b;
		c->cap_batch = cap;
	}
	x = &c->batch[c->n_batch];
	memset(x, 0, sizeof(*x));
	x->uid = strdup(j->uid);
	if (!x->uid || controller_object_path(j->wl->kind, controller_job_ns(j),
					      controller_job_name(j), x->path, sizeof(x->path))) {
		free(x->uid);
		json_decref(body);
		return x->uid ? GPUQ_EINVAL : GPUQ_ENOMEM;
	}
	x->kind = kind;
	x->body = body;
	x->what = what;
	x->status_h = status_h;
	c->n_batch++;
	return GPUQ_OK;
}

void controller_actuate_flush(struct controller *c)
{
	if (!c->n_batch)
		return;
	controller_patcher_run(c->patcher, c->batch, c->n_batch);
	for (size_t i = 0; i < c->n_batch; i++) {
		controller_patch_t *x = &c->batch[i];
		controller_job_t *j = controller_job(c, x->uid);

		json_decref(x->body);
		if (j && j->wl) {
			patch_answered(c, j, x->rc, &x->reply, &x->diag, x->what);
			if (x->rc == GPUQ_OK) {
				j->status_hash = x->status_h; /* the release carried it */
				c->step_released++;
			}
		} else {
			kube_response_deinit(&x->reply);
		}
		free(x->uid);
	}
	c->n_batch = 0;
}

/* Pin pod set ps of workload id to the domain admission placed it in: on
 * each topology-aware flavor of names[n] (the pod set's), the levels its
 * nodes share (queue_podset_domain: widest first, up to the first where
 * they part; one node of a Topology ending in kubernetes.io/hostname is
 * that node) go into sel as {level label: value}. Nodes that share not even
 * the widest level add nothing: the pods go where the scheduler puts them
 * on the flavor's nodes (docs/topology.md). The pod sets of one
 * podset-group-name each pin their own part of the group's domain. */
static void pin_to_domain(const queue_t *q, queue_wl_t id, size_t ps, const char *const *names,
			  size_t n, json_t *sel)
{
	for (size_t i = 0; i < n; i++) {
		const char *values[QUEUE_TOPO_LEVELS_MAX];
		uint32_t fid;
		size_t k;

		if (queue_flavor_find(q, names[i], &fid) != GPUQ_OK)
			continue;
		k = queue_podset_domain(q, id, ps, fid, values, QUEUE_TOPO_LEVELS_MAX);
		for (size_t l = 0; l < k; l++)
			json_object_set_new(sel, queue_flavor_level(q, fid, l),
					    json_string(values[l]));
	}
}

/* Whether the placement entries e[0..i) already hold e[i]'s domain below
 * level `from` (its values at levels from..n_levels of flavor fid). */
static bool domain_seen(const queue_t *q, uint32_t fid, const queue_place_t *e, size_t i,
			size_t from, size_t n_levels)
{
	for (size_t k = 0; k < i; k++) {
		bool same = e[k].podset == e[i].podset && e[k].flavor == fid;

		for (size_t l = from; same && l < n_levels; l++) {
			const char *lv = queue_flavor_level(q, fid, l);
			const char *a = queue_node_domain(q, fid, e[k].node, lv);
			const char *b = queue_node_domain(q, fid, e[i].node, lv);

			same = a && b && strcmp(a, b) == 0;
		}
		if (same)
			return true;
	}
	return false;
}

/* One nodeSelectorTerm: e's node's values at levels from..n_levels of
 * flavor fid ({key: level, operator: In, values: [value]} each), or NULL
 * (a node no longer known, or no memory). */
static json_t *domain_term(const queue_t *q, uint32_t fid, const queue_place_t *e, size_t from,
			   size_t n_levels)
{
	json_t *exprs = json_array();

	for (size_t l = from; exprs && l < n_levels; l++) {
		const char *lv = queue_flavor_level(q, fid, l);
		const char *v = queue_node_domain(q, fid, e->node, lv);

		if (!v || json_array_append_new(exprs, json_pack("{s:s, s:s, s:[s]}", "key", lv,
								 "operator", "In", "values", v))) {
			json_decref(exprs);
			return NULL;
		}
	}
	return exprs ? json_pack("{s:o}", "matchExpressions", exprs) : NULL;
}

json_t *controller_actuate_pin_terms(struct controller *c, queue_wl_t id, size_t podset)
{
	const queue_t *q = engine_core(c->e);
	const char *names[QUEUE_GROUPS_MAX * QUEUE_GROUP_FLAVORS_MAX],
	    *shared[QUEUE_TOPO_LEVELS_MAX];
	size_t nf =
	    flavors_of(c, id, podset, false, names, sizeof(names) / sizeof(names[0]), NULL, 0);
	size_t n = 0, from = 0, n_levels = 0;
	uint32_t fid = UINT32_MAX;
	queue_place_t *e;
	json_t *terms;

	for (size_t i = 0; i < nf; i++) {
		uint32_t f;

		if (queue_flavor_find(q, names[i], &f) != GPUQ_OK || !queue_flavor_level(q, f, 0))
			continue;
		if (fid != UINT32_MAX)
			return NULL; /* on two topology-aware flavors: shared levels only */
		fid = f;
	}
	if (fid == UINT32_MAX)
		return NULL;
	while (queue_flavor_level(q, fid, n_levels))
		n_levels++;
	from = queue_podset_domain(q, id, podset, fid, shared, QUEUE_TOPO_LEVELS_MAX);
	queue_workload_placement(q, id, NULL, 0, &n);
	if (from >= n_levels || !n)
		return NULL; /* one domain: the nodeSelector pins it whole */
	e = malloc(n * sizeof(*e));
	terms = e ? json_array() : NULL;
	if (terms)
		queue_workload_placement(q, id, e, n, &n);
	for (size_t i = 0; terms && i < n; i++) {
		json_t *t;

		if (e[i].podset != podset || e[i].flavor != fid ||
		    domain_seen(q, fid, e, i, from, n_levels))
			continue;
		t = json_array_size(terms) < CONTROLLER_PIN_TERMS_MAX
			? domain_term(q, fid, &e[i], from, n_levels)
			: NULL;
		if (!t || json_array_append_new(terms, t)) {
			json_decref(terms); /* too many domains, or one unknown */
			terms = NULL;
		}
	}
	free(e);
	if (terms && !json_array_size(terms)) {
		json_decref(terms);
		terms = NULL;
	}
	return terms;
}

/* The nodeSelector and tolerations a workload runs with on its flavors:
 * base_sel/base_tols (borrowed; may be NULL) plus every assigned flavor's
 * nodeLabels and tolerations, plus, on a topology-aware flavor, the labels
 * of the domain its pods were placed in (pin_to_domain). *sel and *tols
 * are new references; flavors gets the CONTROLLER_ANNOT_FLAVORS value.
 * GPUQ_ENOMEM. */
int controller_actuate_placement(struct controller *c, queue_wl_t id, size_t podset, bool prefixed,
				 const json_t *base_sel, const json_t *base_tols, json_t **sel,
				 json_t **tols, char *flavors, size_t cap)
{
	const char *names[QUEUE_GROUPS_MAX * QUEUE_GROUP_FLAVORS_MAX];
	size_t nf = flavors_of(c, id, podset, prefixed, names, sizeof(names) / sizeof(names[0]),
			       flavors, cap);

	*sel = json_is_object(base_sel) ? json_deep_copy(base_sel) : json_object();
	*tols = json_is_array(base_tols) ? json_deep_copy(base_tols) : json_array();
	if (!*sel || !*tols) {
		json_decref(*sel);
		json_decref(*tols);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < nf; i++) {
		const policy_flavor_t *f = policy_flavor_find(c->policy, names[i]);
		if (!f)
			continue;
		for (size_t k = 0; k < f->node_labels.n; k++)
			json_object_set_new(*sel, f->node_labels.items[k].key,
					    json_string(f->node_labels.items[k].value));
		for (size_t k = 0; k < f->n_tolerations; k++)
			json_array_append_new(*tols, toleration_json(&f->tolerations[k]));
	}
	pin_to_domain(engine_core(c->e), id, podset, names, nf, *sel);
	return GPUQ_OK;
}

/* Add the per-pod requests of parent j, times its pods not yet created
 * (all of them when `all`), to *req and *pods. A pod is charged in the
 * namespace's ResourceQuota (status.used) when it is created, and a Job's
 * status.active counts it only at the Job controller's next status write:
 * a Job's created pods are the more of status.active and the unfinished pods
 * the Pods watch shows (controller_pods_of_job), plus the finished ones (succeeded,
 * failed). Counting a created pod as still to come held the next Job back
 * with its quota free ("requested 16, used 8, limited 16" for 8 + 8 of 16).
 * Another kind's pods are counted as its child Jobs' (Jobs of their own
 * here). */
static int add_pending_pods(struct controller *c, const controller_job_t *j, bool all,
			    quota_reslist_t *req, int64_t *pods)
{
	const workload_t *o = j->wl;
	int rc = GPUQ_OK;

	if (!o)
		return GPUQ_EINVAL;
	for (size_t p = 0; !rc && p < o->n_podsets; p++) {
		const workload_podset_t *ps = &o->podsets[p];
		quota_reslist_t one = {0};
		int64_t missing = o->n_podsets == 1 ? o->pods : ps->count;

		if (!ps->requests)
			return GPUQ_EINVAL;
		/* a Job's status counts its pods; another kind's pods are counted
		 * as its child Jobs' (they are Jobs of their own here) */
		if (!all && o->integ->counts_pods) {
			int64_t live = controller_pods_of_job(c, j->uid);
			missing -= (live > o->active ? live : o->active) + o->succeeded + o->failed;
		} else if (!all) {
			missing = 0;
		}
		if (o->finished)
			missing = 0; /* a finished Job's pods hold no quota */
		for (size_t i = 0; !rc && i < ps->n_requests; i++)
			rc = quota_reslist_add(&one, ps->requests[i].name, &ps->requests[i].qty);
		if (rc || missing <= 0)
			continue;
		rc = quota_reslist_scale(&one, missing);
		for (size_t i = 0; !rc && i < one.n; i++)
			rc = quota_reslist_add(req, one.items[i].name, &one.items[i].qty);
		*pods += missing;
	}
	return rc;
}

/* The namespace's ResourceQuotas' status.used as the watch last showed them
 * (the policy's copy is of when the policy was built: gpuq's snapshot
 * ignores status changes), into used[i] for pn->quotas[i]. */
static void rq_used_now(struct controller *c, const policy_namespace_t *pn, quota_reslist_t *used)
{
	for (size_t i = 0; i < pn->n_quotas; i++) {
		char key[2 * QUOTA_OBJ_NAME_MAX + 2];
		const controller_pobj_t *po;
		const json_t *st;
		const char *k;
		json_t *v;

		snprintf(key, sizeof(key), "%s/%s", pn->quotas[i]->namespace_, pn->quotas[i]->name);
		po = controller_map_get(&c->objs[CONTROLLER_RES_RESOURCEQUOTAS], key);
		st = po ? json_object_get(json_object_get(po->obj, "status"), "used") : NULL;
		json_object_foreach((json_t *)st, k, v)
		{
			quota_qty_t q;
			const char *t = json_string_value(v);
			if (t && quota_qty_parse(t, strlen(t), &q, NULL) == GPUQ_OK)
				(void)quota_reslist_set(&used[i], k, &q);
		}
	}
}

/* Add to *req and *pods all the pods of the Jobs of j's namespace whose
 * release is in this pass's batch (not sent yet, or not answered: still
 * suspended in the cache) that quota counts. */
static void batched_pods(struct controller *c, const controller_job_t *j,
			 const quota_resourcequota_t *quota, quota_reslist_t *req, int64_t *pods)
{
	quota_pod_scope_t scope;

	for (size_t b = 0; b < c->n_batch; b++) {
		const controller_job_t *o = controller_job(c, c->batch[b].uid);

		if (!o || o == j || !o->wl ||
		    strcmp(controller_job_ns(o), controller_job_ns(j)) != 0)
			continue;
		workload_quota_scope(o->wl, &scope);
		if (quota_resourcequota_applies(quota, &scope))
			(void)add_pending_pods(c, o, true, req, pods);
	}
}

/* Whether the namespace's ResourceQuotas let all of Job j's pods in now:
 * every one that counts them (its scopes: quota_resourcequota_applies), as
 * the webhook checks them (quota_resourcequota_check over
 * policy_namespace_t's list, here with the watch's status.used), against
 * status.used plus the pods of Jobs gpuq released in the namespace that do
 * not exist yet and that the same quota counts (the apiserver charges a pod
 * when it is created, so those are not in used), the releases batched in
 * this pass before it included. A Job the quota would
 * refuse stays suspended, holding its admission, instead of running with
 * part of its pods (no gang). Limits are taken equal to requests (the
 * decoder keeps requests only): a limits.* quota can refuse a pod later. */
static bool rq_allows(struct controller *c, controller_job_t *j, char *why, size_t cap)
{
	const char *ns = controller_job_ns(j);
	const policy_namespace_t *pn = policy_namespace_find(c->policy, ns);
	const controller_released_t *rel = controller_map_get(&c->released, ns);
	quota_reslist_t *used;
	const quota_reslist_t *used_i;
	gpuq_diag_t diag = {{0}};
	quota_pod_scope_t scope, other;
	bool fits = true;

	if (!pn || !pn->n_quotas)
		return true;
	used = calloc(pn->n_quotas, sizeof(*used));
	if (!used)
		return true; /* no memory: the apiserver will judge the pods */
	rq_used_now(c, pn, used);
	workload_quota_scope(j->wl, &scope);
	for (size_t i = 0; fits && i < pn->n_quotas; i++) {
		quota_reslist_t req = {0};
		int64_t pods = 0;

		if (!quota_resourcequota_applies(pn->quotas[i], &scope))
			continue;
		if (add_pending_pods(c, j, true, &req, &pods))
			break; /* cannot tell: the apiserver will judge the pods */
		for (uint32_t k = 0; rel && k < rel->n; k++) {
			const controller_job_t *o = rel->v[k].job;
			if (o == j)
				continue;
			workload_quota_scope(o->wl, &other);
			if (quota_resourcequota_applies(pn->quotas[i], &other))
				(void)add_pending_pods(c, o, false, &req, &pods);
		}
		batched_pods(c, j, pn->quotas[i], &req, &pods);
		used_i = &used[i];
		fits = quota_resourcequota_check_used(&pn->quotas[i], &used_i, 1, &scope, &req,
						      &req, pods, 0, &diag) == GPUQ_OK;
	}
	free(used);
	if (!fits)
		snprintf(why, cap, "admitted, waiting for the namespace's ResourceQuota: %s",
			 diag.msg);
	return fits;
}

void controller_actuate_rq_clear(struct controller *c, controller_job_t *j)
{
	if (!j->rq_wait)
		return;
	free(j->rq_wait);
	j->rq_wait = NULL;
	c->rq_held--;
	controller_status_note(c, j->uid); /* the core's word again: released, evicted, ... */
}

/* Hold j's release: the namespace's ResourceQuota would refuse its pods. */
static void rq_hold(struct controller *c, controller_job_t *j, const queue_workload_view_t *v,
		    const char *why)
{
	char *text;

	if (j->rq_wait && strcmp(j->rq_wait, why) == 0)
		return;
	gpuq_log(GPUQ_LOG_INFO, "controller", "Job %s/%s %s", v->namespace_, v->name, why);
	text = strdup(why);
	if (!text)
		return; /* logged again next time */
	if (!j->rq_wait)
		c->rq_held++;
	free(j->rq_wait);
	j->rq_wait = text;
	controller_status_note(c, j->uid); /* its status says so */
}

void controller_actuate_rq_recheck(struct controller *c, const char *ns)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	if (!c->rq_held || !ns)
		return;
	while ((s = controller_map_next(&c->jobs, &pos))) {
		controller_job_t *j = s->value;
		if (j->rq_wait && strcmp(controller_job_ns(j), ns) == 0)
			controller_touch(c, j);
	}
}

void controller_actuate_job(struct controller *c, controller_job_t *j)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (!engine_core(c->e) || !atomic_load(&c->leader) || !j->wl)
		return;
	if (queue_workload_find(engine_core(c->e), j->uid, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
		return;
	/* a hold ends when the Job no longer waits for its release (released
	 * meanwhile by an earlier leader, evicted, finished): its status then
	 * says where it stands now */
	if (j->rq_wait && (v.state != QUEUE_WL_ADMITTED || !j->suspended))
		controller_actuate_rq_clear(c, j);
	switch (v.state) {
	case QUEUE_WL_ADMITTED:
		if (j->suspended) {
			char why[GPUQ_DIAG_MAX + 80];
			if (rq_allows(c, j, why, sizeof(why))) {
				controller_actuate_rq_clear(c, j);
				(void)controller_release_parent(c, j, id);
				controller_status_note(c, j->uid); /* released: where it runs */
			} else {
				rq_hold(c, j, &v, why);
			}
		}
		break;
	case QUEUE_WL_EVICTING:
		/* its quota is free only once its pods are gone: by its status
		 * and by the Pods watch alike (controller_release_quiet) */
		if (!j->suspended)
			(void)controller_release_suspend(c, j);
		else if (controller_release_quiet(c, j))
			(void)controller_release_restore(c, j);
		break;
	default:
		break;
	}
}

static void post(struct controller *c, const char *uid, const char *type, const char *reason,
		 const char *action, const char *note)
{
	const controller_job_t *j = controller_job(c, uid);

	if (j && j->wl) /* posted by the status writer, after this pass's patches */
		(void)controller_swriter_event_ref(
		    c->swriter, j->wl->integ->api_version, j->wl->integ->kind_name,
		    controller_job_ns(j), controller_job_name(j), uid, type, reason, action, note);
}

/* Whether the preemptor pv is in the namespace of eviction e's victim. */
static bool same_namespace(struct controller *c, const queue_eviction_t *e,
			   const queue_workload_view_t *pv)
{
	const controller_job_t *j = controller_job(c, e->victim_uid);
	const char *ns = j ? controller_job_ns(j) : NULL;

	return ns && pv->namespace_ && !strcmp(ns, pv->namespace_);
}

void controller_actuate_result(struct controller *c, const queue_result_t *res)
{
	char note[1024];

	for (size_t i = 0; i < res->n_admissions; i++) {
		const queue_admission_t *a = &res->admissions[i];
		const char *names[16];
		size_t nf = flavors_of(c, a->wl, 0, false, names, 16, NULL, 0);
		snprintf(note, sizeof(note), "Admitted by ClusterQueue %s on flavor %s%s",
			 queue_cq_name(engine_core(c->e), a->cq), nf ? names[0] : "-",
			 a->borrows ? ", borrowing from its cohort" : "");
		post(c, a->uid, "Normal", "Admitted", "Admit", note);
	}
	for (size_t i = 0; i < res->n_evictions; i++) {
		const queue_eviction_t *e = &res->evictions[i];
		queue_workload_view_t pv;
		queue_wl_t pid;
		/* name the preemptor as people know it, then the core's sentence;
		 * the Event is in the victim's namespace, readable by its tenant,
		 * so a preemptor of another namespace is not named (Kueue too
		 * gives only its UID) */
		bool known =
		    e->preemptor_uid &&
		    queue_workload_find(engine_core(c->e), e->preemptor_uid, &pid) == GPUQ_OK &&
		    queue_workload_view(engine_core(c->e), pid, &pv) == GPUQ_OK;

		if (known && same_namespace(c, e, &pv))
			snprintf(note, sizeof(note), "Preempted by %s/%s (%s): %s", pv.namespace_,
				 pv.name, e->reason_name, e->message);
		else if (known)
			snprintf(note, sizeof(note),
				 "Preempted by a workload in another namespace (%s): %s",
				 e->reason_name, e->message);
		else
			snprintf(note, sizeof(note), "%s (%s)", e->message, e->reason_name);
		post(c, e->victim_uid, "Warning",
		     e->reason == QUEUE_EVICT_READY_TIMEOUT ? "PodsReadyTimeout"
		     : e->reason == QUEUE_EVICT_MAX_EXEC    ? "MaximumExecutionTimeExceeded"
		     : e->reason == QUEUE_EVICT_NODE_FAILED ? "NodeFailures"
							    : "Preempted",
		     e->reason == QUEUE_EVICT_MAX_EXEC ? "Deactivate" : "Preempt", note);
	}
}

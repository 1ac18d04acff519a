/* controller/pods.c: GPU Pods gpuq gates (a plain Pod, a pod group formed
 * by kueue.x-k8s.io/pod-group-name with pod-group-total-count, or a member
 * of a set's group: a StatefulSet's or a LeaderWorkerSet's, whose workload
 * sets.c keeps) into workloads of the core. A group is one gang workload of its total count: it
 * becomes admissible only when every member exists, and is released in one
 * pass (the gate removed from every member, its flavor's nodeSelector and
 * tolerations added, which a gated Pod allows). Preemption deletes the
 * members; a workload whose members are all gone leaves the core. Pods of
 * Jobs are the Job's business (jobs.c) and are ignored here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define GROUP_KEY_MAX 600 /* "group:" + namespace + "/" + group name */

typedef struct {
	workload_t *wl; /* the Pod as last seen, decoded and resolved (owned) */
	uint64_t gen;	/* LIST generation it was last seen in */
} member_t;

static void member_free(member_t *m)
{
	if (!m)
		return;
	workload_destroy(m->wl);
	free(m);
}

static void pgroup_free(controller_pgroup_t *g)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	if (!g)
		return;
	while ((s = controller_map_next(&g->members, &pos)))
		member_free(s->value);
	controller_map_deinit(&g->members);
	free(g->key);
	free(g->set);
	free(g);
}

/* ---- Pods of Jobs: which of a released Job's pods exist ----
 * Not workloads of their own (the Job is): only counted, per Job, while
 * they ask for a GPU and have not finished, for the ResourceQuota check
 * before a release (actuate.c, add_pending_pods). */

typedef struct {
	char *job;    /* the owning Job's uid (owned) */
	char *ns;     /* the Pod's namespace (owned) */
	uint64_t gen; /* LIST generation it was last seen in */
} jobpod_t;

/* Job job_uid has one pod more (d = 1) or less (-1). */
static void job_count(struct controller *c, const char *job_uid, int d)
{
	int32_t *n = controller_map_get(&c->job_pod_count, job_uid);

	if (!n && d > 0) {
		n = calloc(1, sizeof(*n));
		if (!n || controller_map_put(&c->job_pod_count, job_uid, n, NULL)) {
			free(n);
			return; /* counted as not there: the Job's status counts it soon */
		}
	}
	if (!n)
		return;
	*n += d;
	if (*n <= 0)
		free(controller_map_del(&c->job_pod_count, job_uid));
}

static void jobpod_free(jobpod_t *p)
{
	if (!p)
		return;
	free(p->job);
	free(p->ns);
	free(p);
}

/* Pod pod_uid is no longer an unfinished pod of its Job: the Job is
 * compared again (an evicted Job's quota waits for its last pod). */
static void jobpod_forget(struct controller *c, const char *pod_uid)
{
	jobpod_t *p = controller_map_del(&c->job_pods, pod_uid);
	controller_job_t *j;

	if (!p)
		return;
	job_count(c, p->job, -1);
	j = controller_job(c, p->job);
	if (j && !controller_pods_of_job(c, p->job))
		controller_jobs_pods_gone(c, p->job); /* may free j */
	else if (j)
		controller_touch(c, j);
	controller_actuate_rq_recheck(c, p->ns);
	jobpod_free(p);
}

/* A Pod owned by a Job: counted while it has not finished and its Job
 * (cached by the Jobs watch) asks for a GPU (a Job's Pods are not resolved
 * on their own: their Job is the workload). */
static void jobpod_seen(struct controller *c, const workload_t *o)
{
	jobpod_t *p = controller_map_get(&c->job_pods, o->uid);
	const controller_job_t *j = o->x->owner_uid ? controller_job(c, o->x->owner_uid) : NULL;

	if (!j || !j->wl || !j->wl->gpu || o->finished || !o->namespace_) {
		jobpod_forget(c, o->uid);
		return;
	}
	if (p) {
		p->gen = c->gen[CONTROLLER_RES_PODS];
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->job = strdup(o->x->owner_uid)) || !(p->ns = strdup(o->namespace_)) ||
	    controller_map_put(&c->job_pods, o->uid, p, NULL)) {
		jobpod_free(p);
		return;
	}
	p->gen = c->gen[CONTROLLER_RES_PODS];
	job_count(c, p->job, 1);
	controller_actuate_rq_recheck(c, p->ns); /* charged: Jobs held for it may be judged anew */
}

void controller_pods_free_all(struct controller *c)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&c->job_pods, &pos)))
		jobpod_free(s->value);
	controller_map_deinit(&c->job_pods);
	pos = 0;
	while ((s = controller_map_next(&c->job_pod_count, &pos)))
		free(s->value);
	controller_map_deinit(&c->job_pod_count);
	pos = 0;

	while ((s = controller_map_next(&c->groups, &pos)))
		pgroup_free(s->value);
	controller_map_deinit(&c->groups);
	pos = 0;
	while ((s = controller_map_next(&c->pod_group, &pos)))
		free(s->value);
	controller_map_deinit(&c->pod_group);
	pos = 0;
	while ((s = controller_map_next(&c->pods_early, &pos)))
		workload_destroy(s->value);
	controller_map_deinit(&c->pods_early);
}

void controller_pods_each_member(const controller_pgroup_t *g,
				 void (*fn)(void *ctx, const char *ns, const char *name), void *ctx)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;

		fn(ctx, m->wl->namespace_, m->wl->name);
	}
}

/* The workload key of a decoded Pod: its set's group's, its pod group's, or
 * its uid. */
static void key_of(struct controller *c, const workload_t *o, char *out, size_t cap)
{
	if (controller_sets_member_key(c, o, out, cap))
		return;
	if (o->x->pod_group)
		snprintf(out, cap, "group:%s/%s", o->namespace_, o->x->pod_group);
	else
		snprintf(out, cap, "%s", o->uid);
}

/* The group (or Pod) as one pod set of `total` pods shaped like member o. */
static int add_to_core(struct controller *c, controller_pgroup_t *g, const workload_t *o)
{
	controller_podset_buf_t buf;
	engine_podset_spec_t ps;
	engine_workload_spec_t ws = {
	    .namespace_ = o->namespace_,
	    .name = g->group ? o->x->pod_group : o->name,
	    .uid = g->key,
	    .local_queue = o->queue,
	    .priority = o->priority,
	    .created_ms = o->created_ms,
	    .podsets = &ps,
	    .n_podsets = 1,
	    .gang_total = g->group ? g->total : 0,
	    .pods_present = g->group ? (int32_t)g->members.n : 0,
	};
	gpuq_diag_t diag = {{0}};
	int rc;

	controller_podset_from(&o->podsets[0], g->total, &buf, &ps);
	rc = engine_workload_add(c->e, &ws, controller_now(c), NULL, &diag);
	if (rc == GPUQ_OK || rc == GPUQ_EEXIST) {
		g->reported = g->group ? (int32_t)g->members.n : 0;
		c->core_dirty = true;
		controller_status_note(c, g->key);
		return GPUQ_OK;
	}
	if (!g->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller", "Pod %s/%s waits outside the queue: %s",
			 o->namespace_, ws.name, diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	g->bad = true;
	return rc;
}

/* Members finished / Ready, as the core needs to hear it. */
static void observe(struct controller *c, controller_pgroup_t *g)
{
	engine_workload_view_t v;
	engine_wl_t id;
	size_t pos = 0, done = 0, ready = 0;
	controller_map_slot_t *s;

	if (engine_workload_find(c->e, g->key, &id) || engine_workload_view(c->e, id, &v))
		return;
	if (g->set)
		return; /* a set's group: admitted before its Pods exist, never finished */
	if (g->group && g->reported < (int32_t)g->members.n && v.state == ENGINE_WL_PENDING) {
		if (engine_workload_pods_add(c->e, g->key, (int32_t)g->members.n - g->reported,
					     controller_now(c)) == GPUQ_OK) {
			g->reported = (int32_t)g->members.n;
			c->core_dirty = true;
			controller_status_note(c, g->key); /* "n of total pods present" moved */
		}
	}
	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;

		done += m->wl->finished;
		ready += m->wl->ready;
	}
	if ((v.state == ENGINE_WL_ADMITTED || v.state == ENGINE_WL_EVICTING) &&
	    done >= (size_t)g->total) {
		if (engine_workload_finish(c->e, g->key, controller_now(c)) == GPUQ_OK)
			c->core_dirty = true;
	} else if (v.state == ENGINE_WL_ADMITTED && !v.ready && ready + done >= (size_t)g->total) {
		if (engine_workload_pods_ready(c->e, g->key, controller_now(c)) == GPUQ_OK)
			c->core_dirty = true;
	}
}

static void forget_member(struct controller *c, const char *pod_uid)
{
	char *key = controller_map_del(&c->pod_group, pod_uid);
	controller_pgroup_t *g = key ? controller_map_get(&c->groups, key) : NULL;

	free(key);
	if (!g)
		return;
	member_free(controller_map_del(&g->members, pod_uid));
	if (g->members.n == 0 && g->set && controller_sets_group_empty(c, g))
		return; /* a set's group its Pods ended (an LWS's surge group) */
	if (g->members.n == 0 && !g->set) {
		/* every member gone: the workload leaves the core (a preempted
		 * Pod does not come back by itself; whoever makes new ones makes
		 * a new workload) */
		if (engine_core(c->e) &&
		    engine_workload_delete(c->e, g->key, controller_now(c)) == GPUQ_OK)
			c->core_dirty = true;
		pgroup_free(controller_map_del(&c->groups, g->key));
		return;
	}
	controller_touch_key(c, g->key);
}

/* Whether Pod o's controller owner is a held parent that makes Pods (a Job,
 * a RayCluster): the parent is the workload. */
static bool parents_pod(const workload_t *o)
{
	const workload_integration_t *p =
	    workload_integration(workload_kind_of(o->x->owner_api_version, o->x->owner_kind));

	return p->hold == WORKLOAD_HOLD_SUSPEND && p->child_kind == WORKLOAD_KIND_POD;
}

/* A Pod seen (decoded and resolved; o is taken, or is already its member's
 * own): is it ours, and which workload is it a member of? */
static void pod_seen(struct controller *c, workload_t *o)
{
	char key[GROUP_KEY_MAX], uid[160];
	controller_pgroup_t *g;
	member_t *m;

	gpuq_strlcpy(uid, o->uid, sizeof(uid));
	g = controller_map_get(&c->pod_group, uid)
		? controller_map_get(&c->groups, controller_map_get(&c->pod_group, uid))
		: NULL;
	m = g ? controller_map_get(&g->members, uid) : NULL;
	/* a held parent's Pods (a Job's, a RayCluster's) are the parent's; a GPU
	 * Pod neither gated nor released by gpuq is not gpuq's */
	if (parents_pod(o) || !o->gpu || !o->queue || (!o->gated && !o->admitted)) {
		if (o->kind == WORKLOAD_KIND_POD && o->x->owner_kind &&
		    !strcmp(o->x->owner_kind, "Job"))
			jobpod_seen(c, o);
		if (!m || m->wl != o)
			workload_destroy(o); /* else freed with its member */
		if (g)
			forget_member(c, uid);
		return;
	}
	key_of(c, o, key, sizeof(key));
	g = controller_map_get(&c->groups, key);
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g || !(g->key = strdup(key)) || controller_map_put(&c->groups, key, g, NULL)) {
			pgroup_free(g);
			workload_destroy(o);
			return;
		}
		controller_map_init(&g->members);
		if (o->x->set_kind != WORKLOAD_KIND_OTHER && strrchr(key, '/') &&
		    strchr(key, ':')) {
			/* a set's group seen first through a Pod ("lws:ns/x/0") */
			g->set = strndup(key, (size_t)(strrchr(key, '/') - key));
			g->first = strtoll(strrchr(key, '/') + 1, NULL, 10);
		}
		g->group = o->x->pod_group != NULL;
		g->total = g->group ? (int32_t)(o->x->pod_group_total < CONTROLLER_PODS_MAX
						    ? o->x->pod_group_total
						    : CONTROLLER_PODS_MAX)
				    : 1;
		/* a plain Pod's status as the webhook (or an earlier leader)
		 * left it is not written again (a group's members are written
		 * together: each one's own text may differ) */
		if (!g->group)
			g->status_hash = controller_status_seen(o);
	}
	if (!controller_map_get(&c->pod_group, uid)) {
		char *k = strdup(key);
		if (!k || controller_map_put(&c->pod_group, uid, k, NULL)) {
			free(k);
			workload_destroy(o);
			return;
		}
	}
	m = controller_map_get(&g->members, uid);
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m || controller_map_put(&g->members, uid, m, NULL)) {
			free(m);
			workload_destroy(o);
			return;
		}
	}
	if (m->wl != o)
		workload_destroy(m->wl);
	m->wl = o;
	m->gen = c->gen[CONTROLLER_RES_PODS];
	if (g->set && engine_core(c->e))
		controller_sets_group_add(c, g); /* its set's counts, not its Pods' */
	else if (engine_core(c->e) &&
		 engine_workload_find(c->e, g->key, &(engine_wl_t){0}) != GPUQ_OK && !o->finished)
		(void)add_to_core(c, g, o);
	if (engine_core(c->e)) {
		observe(c, g);
		controller_touch_key(c, g->key);
	}
}

/* A Pod decoded: resolved when it may be gpuq's, then seen. */
static void pod_take(struct controller *c, workload_t *o)
{
	gpuq_diag_t diag = {{0}};

	/* most Pods are plainly not gpuq's (a Job's, or neither gated nor
	 * released): pod_seen drops them unresolved */
	if (!parents_pod(o) && o->queue && (o->gated || o->admitted) &&
	    controller_resolve(c, o, &diag)) {
		workload_destroy(o);
		return;
	}
	pod_seen(c, o);
}

void controller_pods_apply(struct controller *c, controller_cevent_t *ev)
{
	workload_t *o = ev->wl;

	if (ev->type == KUBE_EV_RESET) {
		c->gen[CONTROLLER_RES_PODS]++;
		return;
	}
	if (ev->type == KUBE_EV_SYNCED) {
		size_t pos = 0;
		controller_map_slot_t *s;
		/* members the relist did not show again are gone */
		while ((s = controller_map_next(&c->pod_group, &pos))) {
			controller_pgroup_t *g = controller_map_get(&c->groups, s->value);
			member_t *m = g ? controller_map_get(&g->members, s->key) : NULL;
			if (!m || m->gen != c->gen[CONTROLLER_RES_PODS])
				forget_member(c, s->key);
		}
		pos = 0; /* so are Jobs' pods */
		while ((s = controller_map_next(&c->job_pods, &pos)))
			if (((const jobpod_t *)s->value)->gen != c->gen[CONTROLLER_RES_PODS])
				jobpod_forget(c, s->key);
		c->listed[CONTROLLER_RES_PODS] = true;
		return;
	}
	if (ev->type == KUBE_EV_DELETED) {
		const char *uid = o ? o->uid : ev->uid;
		if (uid) {
			forget_member(c, uid);
			jobpod_forget(c, uid);
			workload_destroy(controller_map_del(&c->pods_early, uid));
		}
		return;
	}
	if (!o)
		return; /* a Pod that does not decode is nobody's workload */
	ev->wl = NULL;	/* ours now */
	if (!c->policy) {
		/* no policy yet (the first LIST of every watch is not done): kept
		   for controller_pods_resync, which the first snapshot runs */
		void *old = NULL;
		if (controller_map_put(&c->pods_early, o->uid, o, &old))
			workload_destroy(o);
		workload_destroy(old);
		return;
	}
	pod_take(c, o);
}

void controller_pods_resync(struct controller *c, const controller_nsset_t *only)
{
	size_t pos = 0, n = 0;
	controller_map_slot_t *s;
	workload_t **objs;

	/* the Pods seen before the first policy */
	while (c->policy && c->pods_early.n) {
		pos = 0;
		s = controller_map_next(&c->pods_early, &pos);
		pod_take(c, controller_map_del(&c->pods_early, s->key));
	}
	pos = 0;
	if (!c->groups.n)
		return;
	objs = calloc(c->pod_group.n + 1, sizeof(workload_t *));
	if (!objs)
		return;
	/* resolve every member against the new policy and see it again (each
	 * call can only drop its own member) */
	while ((s = controller_map_next(&c->pod_group, &pos))) {
		controller_pgroup_t *g = controller_map_get(&c->groups, s->value);
		member_t *m = g ? controller_map_get(&g->members, s->key) : NULL;
		if (m && m->wl && controller_nsset_has(only, m->wl->namespace_))
			objs[n++] = m->wl;
	}
	for (size_t i = 0; i < n; i++) {
		if (controller_resolve(c, objs[i], NULL) == GPUQ_OK)
			pod_seen(c, objs[i]);
	}
	free(objs);
}

/* ---- acting ---- */

static int pod_path(const workload_t *pod, char *out, size_t cap)
{
	char ens[300], en[300];

	if (kube_escape(pod->namespace_, ens, sizeof(ens)) ||
	    kube_escape(pod->name, en, sizeof(en)))
		return GPUQ_EINVAL;
	snprintf(out, cap, "/api/v1/namespaces/%s/pods/%s", ens, en);
	return GPUQ_OK;
}

void controller_pods_annotate(struct controller *c, controller_pgroup_t *g, const char *text)
{
	json_t *body =
	    json_pack("{s:{s:{s:s}}}", "metadata", "annotations", CONTROLLER_ANNOT_STATUS, text);
	size_t pos = 0;
	controller_map_slot_t *s;

	if (!body)
		return;
	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;
		char path[KUBE_URL_MAX];

		if (pod_path(m->wl, path, sizeof(path)) == GPUQ_OK)
			(void)controller_swriter_submit_once(c->swriter, s->key, path, body);
	}
	json_decref(body);
}

/* Remove gpuq's gate from one member, adding the flavor's placement (of its
 * own pod set: an LWS's leader or workers). */
static void release_member(struct controller *c, engine_wl_t id, const workload_t *pod)
{
	const workload_podset_t *ps = &pod->podsets[0];
	size_t podset = pod->x->set_kind == WORKLOAD_KIND_LWS ? pod->x->set_podset : 0;
	json_t *gates = json_array(), *sel = NULL, *tols = NULL, *body, *reply = NULL;
	json_t *base_sel = controller_selector_json(ps),
	       *base_tols = controller_tolerations_json(ps);
	char path[KUBE_URL_MAX], flavors[CONTROLLER_FLAVORS_MAX];
	gpuq_diag_t diag = {{0}};
	int rc = gates && base_sel && base_tols ? GPUQ_OK : GPUQ_ENOMEM;

	for (size_t i = 0; !rc && i < pod->x->n_other_gates; i++)
		json_array_append_new(gates, json_pack("{s:s}", "name", pod->x->other_gates[i]));
	if (!rc)
		rc = pod_path(pod, path, sizeof(path));
	if (!rc)
		rc = controller_actuate_placement(
		    c, id, podset, false, ps->n_node_selector ? base_sel : NULL,
		    ps->n_tolerations ? base_tols : NULL, &sel, &tols, flavors, sizeof(flavors));
	json_decref(base_sel);
	json_decref(base_tols);
	if (rc) {
		json_decref(gates);
		return;
	}
	body = json_pack("{s:{s:s, s:{s:s, s:s}}, s:{s:o, s:o, s:o}}", "metadata",
			 "resourceVersion", pod->resource_version, "annotations",
			 WEBHOOK_ANNOT_ADMITTED, "true", CONTROLLER_ANNOT_FLAVORS, flavors, "spec",
			 "schedulingGates", json_array_size(gates) ? gates : json_null(),
			 "nodeSelector", sel, "tolerations", tols);
	if (json_array_size(gates) == 0)
		json_decref(gates);
	if (!body)
		return;
	if (kube_patch(c->client, path, KUBE_PATCH_MERGE, body, &reply, &diag) == GPUQ_OK)
		gpuq_log(GPUQ_LOG_INFO, "controller", "released Pod %s", path);
	else
		gpuq_log(GPUQ_LOG_WARN, "controller", "releasing Pod %s: %s", path, diag.msg);
	json_decref(body);
	json_decref(reply);
}

static void delete_member(struct controller *c, const workload_t *pod)
{
	char path[KUBE_URL_MAX];
	kube_response_t resp;
	gpuq_diag_t diag = {{0}};
	int rc;

	if (pod->deleting || pod_path(pod, path, sizeof(path)))
		return;
	rc = kube_request(c->client, "DELETE", path, NULL, NULL, 0, &resp, &diag);
	kube_response_deinit(&resp);
	if (rc == GPUQ_OK)
		gpuq_log(GPUQ_LOG_INFO, "controller", "preempted Pod %s (deleted)", path);
	else if (rc != GPUQ_ENOTFOUND)
		gpuq_log(GPUQ_LOG_WARN, "controller", "deleting Pod %s: %s", path, diag.msg);
}

void controller_actuate_group(struct controller *c, controller_pgroup_t *g)
{
	engine_workload_view_t v;
	engine_wl_t id;
	size_t pos = 0;
	controller_map_slot_t *s;

	size_t running = 0;

	if (!engine_core(c->e) || engine_workload_find(c->e, g->key, &id) ||
	    engine_workload_view(c->e, id, &v))
		return;
	while ((s = controller_map_next(&g->members, &pos))) {
		member_t *m = s->value;
		if (v.state == ENGINE_WL_ADMITTED && m->wl->gated)
			release_member(c, id, m->wl);
		else if (v.state == ENGINE_WL_EVICTING && !(g->set && m->wl->gated)) {
			delete_member(c, m->wl);
			running++;
		}
	}
	/* a set's evicted group: its controller makes its Pods again, gated;
	   once none runs, the quota is free and the group queues again */
	if (g->set && v.state == ENGINE_WL_EVICTING && !running &&
	    engine_workload_evicted(c->e, g->key, controller_now(c)) == GPUQ_OK)
		c->core_dirty = true;
}

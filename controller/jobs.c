/* controller/jobs.c: parents held by their suspend field (batch/v1 Jobs,
 * JobSets: the integration table's rows) into workloads of the core, one
 * pod set per template, and the core told what the watch shows (finished,
 * Ready, deleted). A held parent's children (a JobSet's Jobs) are cached
 * but are not workloads of their own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "quota/quota.h"

static void job_free(controller_job_t *j)
{
	if (!j)
		return;
	workload_destroy(j->wl);
	free(j->rq_wait);
	if (j->uid_owned)
		free((char *)(uintptr_t)j->uid);
	free(j);
}

void controller_jobs_free_all(struct controller *c)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	controller_released_free_all(c);
	while ((s = controller_map_next(&c->jobs, &pos)))
		job_free(s->value);
	controller_map_deinit(&c->jobs);
	for (size_t i = 0; i < c->n_settling; i++)
		free(c->settling[i]);
	free(c->settling);
	c->settling = NULL;
	c->n_settling = c->cap_settling = 0;
}

/* Whether the Job is gpuq's: it asks for a GPU in a namespace some
 * ClusterQueue selects, and the webhook held it (created suspended with a
 * queue label) or gpuq released it. A Job of no pods (parallelism 0) waits
 * outside the queue until it has some; a TrainJob, until its JobSet is
 * made (its pod sets, p). */
static bool managed(const struct controller *c, const workload_t *o, const workload_t *p)
{
	return o->gpu && o->queue && (o->suspend || o->admitted) && p && p->pods > 0 &&
	       !workload_parent_of(o->kind, o->x->owner_api_version, o->x->owner_kind) &&
	       policy_namespace_managed(c->policy, o->namespace_);
}

/* Whether Job j is admitted in the core but not released: its object is
 * still held (suspended, no admitted mark) and no pod of it exists. The
 * webhook takes edits of such a Job as of a queued one (it is, to the
 * apiserver), so what it asks may differ from what was admitted; the
 * release, guarded by the resourceVersion the controller last saw, would
 * run the new spec on the old quota (issue 31: the release window). */
static bool unreleased(const struct controller *c, const controller_job_t *j)
{
	queue_workload_view_t v;
	queue_wl_t id;

	return j->wl && j->wl->suspend && !j->wl->admitted && !controller_pods_of_job(c, j->uid) &&
	       !queue_workload_find(engine_core(c->e), j->uid, &id) &&
	       !queue_workload_view(engine_core(c->e), id, &v) && v.state == QUEUE_WL_ADMITTED;
}

/* Admitted Job j, unreleased, now asks for ws: its admission is taken back
 * (nothing runs on it) and it queues again for what it asks, keeping its
 * creation time and so its place in the order. */
static int requeue(struct controller *c, controller_job_t *j, const workload_t *o,
		   const queue_workload_spec_t *ws)
{
	gpuq_diag_t diag = {{0}};
	int rc = controller_wl_change(c, ENGINE_CHANGE_DELETE, j->uid);

	if (rc == GPUQ_OK)
		rc = engine_change_apply(c->e,
					 &(engine_change_t){.kind = ENGINE_CHANGE_ADD,
							    .spec = ws,
							    .now = controller_now(c)},
					 &diag);
	j->in_core = rc == GPUQ_OK;
	c->core_dirty = true;
	controller_status_note(c, j->uid);
	if (rc == GPUQ_OK)
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "%s %s/%s was edited after its admission and before its release: its "
			 "admission is taken back and it queues again for %d pods in queue %s",
			 o->integ->kind_name, o->namespace_, o->name,
			 (int)(ws->n_podsets == 1 ? ws->podsets[0].count : ws->gang_total),
			 ws->local_queue);
	else if (!j->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "%s %s/%s was edited before its release and waits outside the queue: %s",
			 o->integ->kind_name, o->namespace_, o->name,
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	j->bad = rc != GPUQ_OK;
	return rc;
}

/* A pending (or admitted, unreleased) Job's edited spec into the core
 * (put_in_core). */
static int follow_edit(struct controller *c, controller_job_t *j, const workload_t *o,
		       const queue_workload_spec_t *ws)
{
	gpuq_diag_t diag = {{0}};
	bool changed = false;
	int rc = engine_change_apply(c->e,
				     &(engine_change_t){.kind = ENGINE_CHANGE_UPDATE,
							.spec = ws,
							.now = controller_now(c),
							.changed = &changed},
				     &diag);

	if (rc == GPUQ_OK) {
		if (changed) {
			gpuq_log(GPUQ_LOG_INFO, "controller",
				 "%s %s/%s was edited: it now asks for %d pods in queue %s, "
				 "wall-clock limit %d s (0: its ClusterQueue's, if any)",
				 o->integ->kind_name, o->namespace_, o->name,
				 (int)(ws->n_podsets == 1 ? ws->podsets[0].count : ws->gang_total),
				 ws->local_queue, (int)ws->max_exec_s);
			c->core_dirty = true;
			controller_status_note(c, j->uid);
		}
		return GPUQ_OK;
	}
	if (rc == GPUQ_EAGAIN && !unreleased(c, j)) /* its request is kept (validate.c) */
		return GPUQ_OK;
	if (rc == GPUQ_EAGAIN) /* admitted, not yet released: queued again */
		return requeue(c, j, o, ws);
	if (controller_wl_change(c, ENGINE_CHANGE_DELETE, j->uid) == GPUQ_OK) {
		j->in_core = false;
		controller_status_note(c, j->uid);
	}
	if (!j->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "%s %s/%s was edited while queued and waits outside the queue: %s",
			 o->integ->kind_name, o->namespace_, o->name,
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	j->bad = true;
	return rc;
}

/* The whole Job as one pod set of its parallelism, admitted at once. A Job
 * of more than one pod is a gang (its pods all present: the job controller
 * makes them after the release), so the Ready timeout watches it. p holds
 * the pod sets (o itself, or a TrainJob's JobSet). With update, the Job is
 * in the core already, pending, and its object was edited (parallelism, the
 * queue label, the priority class, a template's requests): the core takes
 * the new spec whole (Kueue updates a suspended Job's Workload the same
 * way); one it cannot take leaves the core, and the Job waits outside the
 * queue, said once, rather than be admitted for what it no longer asks. */
static int put_in_core(struct controller *c, controller_job_t *j, const workload_t *o,
		       const workload_t *p, bool update)
{
	char name[QUEUE_NAME_MAX + 1];
	controller_podset_buf_t buf[WORKLOAD_PODSETS_MAX];
	queue_podset_spec_t ps[WORKLOAD_PODSETS_MAX];
	queue_workload_spec_t ws = {
	    .namespace_ = o->namespace_,
	    .name = o->integ->bare_name
			? o->name
			: workload_display_name(o->kind, o->name, name, sizeof(name)),
	    .uid = o->uid,
	    .local_queue = o->queue,
	    .priority = p->priority_class ? p->priority : o->priority,
	    .created_ms = o->created_ms,
	    /* activeDeadlineSeconds: the Job controller ends each run by it */
	    .run_bound_s =
		o->deadline_s > 0 && o->deadline_s <= INT32_MAX ? (int32_t)o->deadline_s : 0,
	    .podsets = ps,
	    .n_podsets = p->n_podsets,
	    .max_exec_s = o->x->max_exec_s,
	};
	gpuq_diag_t diag = {{0}};
	int rc;

	if (p->pods > CONTROLLER_PODS_MAX) {
		if (update && controller_wl_change(c, ENGINE_CHANGE_DELETE, j->uid) == GPUQ_OK)
			j->in_core = false;
		if (!j->bad)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "%s %s/%s waits outside the queue: %lld pods is more than the %d "
				 "one workload may have",
				 o->integ->kind_name, o->namespace_, o->name, (long long)p->pods,
				 CONTROLLER_PODS_MAX);
		j->bad = true;
		return GPUQ_ELIMIT;
	}
	for (size_t i = 0; i < p->n_podsets; i++)
		controller_podset_from(&p->podsets[i],
				       (int32_t)(p->n_podsets == 1 ? p->pods : p->podsets[i].count),
				       &buf[i], &ps[i]);
	if (p->pods > 1)
		ws.gang_total = ws.pods_present = (int32_t)p->pods;
	if (update)
		return follow_edit(c, j, o, &ws);
	rc = engine_change_apply(
	    c->e,
	    &(engine_change_t){.kind = ENGINE_CHANGE_ADD, .spec = &ws, .now = controller_now(c)},
	    &diag);
	if (rc == GPUQ_OK || rc == GPUQ_EEXIST) {
		j->in_core = true;
		c->core_dirty = true;
		controller_status_note(c, j->uid);
		return GPUQ_OK;
	}
	if (!j->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s/%s waits outside the queue: %s",
			 o->integ->kind_name, o->namespace_, o->name,
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	j->bad = true;
	return rc;
}

/* Whether ResourceFlavor `name`'s nodeLabels all stand in pod set ps's
 * nodeSelector: the placement gpuq's release put there, which the apiserver
 * keeps while the workload runs (a started Job's template is immutable). */
static bool placed_on(const policy_t *policy, const workload_podset_t *ps, const char *name)
{
	const policy_flavor_t *f = policy_flavor_find(policy, name);

	if (!f)
		return false;
	for (size_t i = 0; i < f->node_labels.n; i++) {
		const policy_label_t *l = &f->node_labels.items[i];
		bool found = false;

		for (size_t k = 0; k < ps->n_node_selector && !found; k++)
			found = !strcmp(ps->node_selector[k].key, l->key) &&
				!strcmp(ps->node_selector[k].value, l->value);
		if (!found)
			return false;
	}
	return true;
}

/* The flavor of o's ClusterQueue covering `resource` whose nodeLabels (one
 * at least: a flavor of none fits any placement, so it proves nothing)
 * stand in pod set ps's nodeSelector: where its pods run, or NULL. */
static const char *placed_flavor(struct controller *c, const workload_t *o,
				 const workload_podset_t *ps, const char *resource)
{
	const policy_lq_t *lq =
	    o->queue ? policy_lq_find(c->policy, o->namespace_, o->queue) : NULL;

	for (size_t g = 0; lq && g < lq->cq->n_groups; g++) {
		const policy_resource_group_t *rg = &lq->cq->groups[g];
		bool covers = false;

		for (size_t r = 0; r < rg->n_covered; r++)
			covers = covers || !strcmp(rg->covered[r], resource);
		for (size_t f = 0; covers && f < rg->n_flavors; f++)
			if (rg->flavors[f].flavor->node_labels.n &&
			    placed_on(c->policy, ps, rg->flavors[f].name))
				return rg->flavors[f].name;
	}
	return NULL;
}

/* The resource=flavor pairs of o's gpuq.dev/flavors into a[] (names point
 * into buf, or the policy), each checked against where pod set p runs
 * (placed_on): a pair its placement contradicts is taken on the flavor the
 * placement shows (placed_flavor), said once. n: how many; why: what makes
 * them unusable, or NULL. */
static const char *adopt_pairs(struct controller *c, const workload_t *o, const workload_t *p,
			       char *buf, size_t cap, queue_adopt_t *a, size_t max, size_t *n)
{
	char *save = NULL, *tok;

	*n = 0;
	if (!o->x->flavors || strlen(o->x->flavors) >= cap)
		return "it carries no " CONTROLLER_ANNOT_FLAVORS;
	gpuq_strlcpy(buf, o->x->flavors, cap);
	for (tok = strtok_r(buf, ",", &save); tok && *n < max; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *colon = strchr(tok, ':'), *end = NULL;
		long ps = 0;

		if (!eq)
			return "a pair of " CONTROLLER_ANNOT_FLAVORS " is not resource=flavor";
		*eq = '\0';
		/* "<pod set>:resource=flavor" for a parent of several pod sets */
		if (colon && colon < eq && colon > tok) {
			ps = strtol(tok, &end, 10);
			if (end != colon || ps < 0 || (size_t)ps >= p->n_podsets)
				return "a pair of " CONTROLLER_ANNOT_FLAVORS
				       " names no pod set of it";
			tok = colon + 1;
		}
		a[*n].podset = (uint16_t)ps;
		a[*n].resource = tok;
		a[*n].flavor = eq + 1;
		if (!placed_on(c->policy, &p->podsets[ps], eq + 1)) {
			a[*n].flavor = placed_flavor(c, o, &p->podsets[ps], tok);
			if (!a[*n].flavor)
				return "its pods are not placed on the "
				       "flavors " CONTROLLER_ANNOT_FLAVORS
				       " names (their nodeSelector lacks the flavor's nodeLabels), "
				       "nor on another flavor of its ClusterQueue";
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "%s %s/%s: %s names %s for %s, but its pods are placed on %s's "
				 "nodes: counted there",
				 o->integ->kind_name, o->namespace_, o->name,
				 CONTROLLER_ANNOT_FLAVORS, eq + 1, tok, a[*n].flavor);
		}
		(*n)++;
	}
	return NULL;
}

/* A Job released by an earlier leader (or before the store was lost) runs
 * while the core holds it pending: admit it where it runs, from the
 * resource=flavor pairs gpuq released it with. Those are gpuq's word:
 * gpuq.dev/flavors is written by gpuq's identity only (webhook/validate.c
 * refuses anyone else), and each pair is checked against the placement the
 * pods run with, which the apiserver keeps while a Job runs (a pair it
 * contradicts is counted where the placement shows). One that cannot be
 * adopted (no pairs, a placement no flavor of its ClusterQueue matches, a
 * flavor or quota slot the policy no longer has) is not left to run
 * uncounted: the leader stops it and it queues again. */
static void adopt(struct controller *c, controller_job_t *j, const workload_t *o,
		  const workload_t *p)
{
	queue_adopt_t a[WORKLOAD_PODSETS_MAX * QUEUE_PODSET_RES_MAX];
	char buf[CONTROLLER_FLAVORS_MAX];
	size_t n = 0;
	const char *why = adopt_pairs(c, o, p, buf, sizeof(buf), a, sizeof(a) / sizeof(a[0]), &n);
	int rc = why ? GPUQ_EINVAL
		     : engine_change_apply(c->e,
					   &(engine_change_t){.kind = ENGINE_CHANGE_ADOPT,
							      .uid = j->uid,
							      .adopt = a,
							      .n_adopt = n,
							      .now = controller_now(c)},
					   NULL);

	c->core_dirty = true;
	if (rc == GPUQ_OK) {
		char on[256] = "";

		for (size_t i = 0, len = 0; i < n && len < sizeof(on); i++, len = strlen(on))
			snprintf(on + len, sizeof(on) - len, "%s%s=%s", i ? "," : "", a[i].resource,
				 a[i].flavor);
		gpuq_log(GPUQ_LOG_INFO, "controller", "adopted running %s %s/%s on %s",
			 o->integ->kind_name, o->namespace_, o->name, on);
		return;
	}
	gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s/%s runs but cannot be adopted: %s%s",
		 o->integ->kind_name, o->namespace_, o->name, why ? why : gpuq_strerror(rc),
		 atomic_load(&c->leader) ? "; stopping it: it queues again" : "");
	if (atomic_load(&c->leader))
		(void)controller_release_suspend(c, j);
}

/* Tell the core what the Job shows: finished, all pods Ready (p: where its
 * pod sets and their readiness are, o itself or a TrainJob's JobSet). */
static void observe(struct controller *c, controller_job_t *j, const workload_t *o,
		    const workload_t *p)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (queue_workload_find(engine_core(c->e), j->uid, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
		return;
	/* A follower mirrors the leader: a Job it holds admitted that the
	 * leader suspended (preempted) queues again. (The leader itself never
	 * does this: for it, admitted-but-suspended is its own intent, persisted
	 * and about to be acted on.) */
	if (!atomic_load(&c->leader) &&
	    (v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING) && o->suspend &&
	    !o->admitted) {
		if (controller_wl_change(c, ENGINE_CHANGE_DELETE, j->uid) == GPUQ_OK) {
			j->in_core = false;
			(void)put_in_core(c, j, o, p, false);
		}
		return;
	}
	if (v.state == QUEUE_WL_PENDING && !o->suspend && o->admitted && !o->finished) {
		adopt(c, j, o, p);
		if (queue_workload_view(engine_core(c->e), id, &v))
			return;
	}
	if (o->finished && (v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING)) {
		if (controller_wl_change(c, ENGINE_CHANGE_FINISH, j->uid) == GPUQ_OK) {
			j->finished_seen = true;
			controller_status_note(c, j->uid); /* its status says it finished */
		}
		return;
	}
	if (v.state == QUEUE_WL_ADMITTED && !v.ready && p->ready_pods >= p->pods && p->pods > 0)
		(void)controller_wl_change(c, ENGINE_CHANGE_PODS_READY, j->uid);
}

/* Whether j's workload waits in the core (an edit of its object follows). */
static bool pending(const struct controller *c, const controller_job_t *j)
{
	queue_workload_view_t v;
	queue_wl_t id;

	return !queue_workload_find(engine_core(c->e), j->uid, &id) &&
	       !queue_workload_view(engine_core(c->e), id, &v) && v.state == QUEUE_WL_PENDING;
}

/* A queued Job edited so that gpuq no longer manages it (scaled to no
 * pods, its GPUs or its queue label removed) leaves the queue; it returns
 * when it is gpuq's again (sync_job). An admitted one scaled to no pods
 * leaves it too, once its last pod is gone. */
static void leave_queue(struct controller *c, controller_job_t *j, const workload_t *o,
			const workload_t *p)
{
	const char *why = p->pods < 1	? "it has no pods"
			  : !o->gpu	? "it asks for no GPU"
			  : !o->queue	? "it has no queue label"
			  : o->finished ? "it finished"
					: "no ClusterQueue selects its namespace";

	if (controller_wl_change(c, ENGINE_CHANGE_DELETE, j->uid) != GPUQ_OK)
		return;
	j->in_core = false;
	controller_status_note(c, j->uid);
	controller_touch(c, j);
	gpuq_log(GPUQ_LOG_INFO, "controller", "%s %s/%s left the queue while queued: %s",
		 o->integ->kind_name, o->namespace_, o->name, why);
}

/* Bring one Job's workload in line with what the watch shows, then act. */
static void sync_job(struct controller *c, controller_job_t *j)
{
	const workload_t *o = j->wl, *p;
	queue_wl_t id;

	if (!c->policy || !engine_core(c->e) || !o)
		return;
	p = controller_jobs_podsets(c, j);
	j->in_core = queue_workload_find(engine_core(c->e), j->uid, &id) == GPUQ_OK;
	if (!j->in_core && (!managed(c, o, p) || o->finished))
		return;
	if (!j->in_core && put_in_core(c, j, o, p, false))
		return;
	if (j->in_core && p && (pending(c, j) || unreleased(c, j))) {
		if (!managed(c, o, p) || o->finished) {
			leave_queue(c, j, o, p);
			return;
		}
		if (put_in_core(c, j, o, p, true))
			return;
	} else if (j->in_core && p) {
		controller_limit_follow(c, j->uid, o, o->x->max_exec_s);
	}
	if (j->in_core && p && p->pods < 1 && !controller_pods_of_job(c, j->uid) &&
	    !pending(c, j)) {
		/* admitted, then scaled to no pods (a shrink the webhook takes):
		   it runs nothing, so it holds nothing; scaled up again it would
		   be refused (it may only shrink), so it never returns */
		leave_queue(c, j, o, p);
		return;
	}
	j->bad = false;
	if (p)
		observe(c, j, o, p);
	controller_touch(c, j); /* acted on after the next persist */
}

/* Resolve j's workload against the policy in force; a refusal is logged
 * once and keeps the Job out of the core. */
static int resolve(struct controller *c, controller_job_t *j)
{
	gpuq_diag_t diag = {{0}};
	int rc;

	if (!j->wl || !c->policy)
		return GPUQ_EINVAL;
	rc = controller_resolve(c, j->wl, &diag);
	if (rc && !j->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s/%s: %s", j->wl->integ->kind_name,
			 controller_job_ns(j), controller_job_name(j), diag.msg);
	j->bad = j->bad || rc;
	return rc;
}

/* A child whose parent's pod sets are its own (a TrainJob's JobSet)
 * changed: the parent is judged again. */
static void child_seen(struct controller *c, controller_job_t *k)
{
	const workload_integration_t *p =
	    k->wl
		? workload_parent_of(k->wl->kind, k->wl->x->owner_api_version, k->wl->x->owner_kind)
		: NULL;
	controller_job_t *parent =
	    p && p->podsets_of_child ? controller_map_get(&c->jobs, k->wl->x->owner_uid) : NULL;

	if (parent && parent->wl && !parent->bad)
		sync_job(c, parent);
}

/* Whether j's workload holds quota for pods of its release that still run
 * (bound, not finished, not yet deleted: what the cluster still gives it). */
static bool holds_running_pods(const struct controller *c, const controller_job_t *j)
{
	queue_workload_view_t v;
	queue_wl_t id;

	return j && engine_core(c->e) && controller_pods_of_job(c, j->uid) > 0 &&
	       !queue_workload_find(engine_core(c->e), j->uid, &id) &&
	       !queue_workload_view(engine_core(c->e), id, &v) &&
	       (v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING);
}

/* Whether j was released and may still have Pods made (the settle,
 * CONTROLLER_GONE_SETTLE_MS): decoded, let run, not finished. */
static bool released(const controller_job_t *j)
{
	return j->wl && !j->bad && !j->suspended && !j->wl->finished;
}

static void settle_add(struct controller *c, const char *uid)
{
	char *dup;

	if (c->n_settling == c->cap_settling) {
		size_t cap = c->cap_settling ? 2 * c->cap_settling : 16;
		char **m = realloc(c->settling, cap * sizeof(*m));

		if (!m)
			return; /* its pods alone hold it (it leaves with the last) */
		c->settling = m;
		c->cap_settling = cap;
	}
	if (!(dup = strdup(uid)))
		return;
	c->settling[c->n_settling++] = dup;
	if (gpuq_mono_ms() + CONTROLLER_GONE_SETTLE_MS < c->settle_next_ms)
		c->settle_next_ms = gpuq_mono_ms() + CONTROLLER_GONE_SETTLE_MS;
}

/* A held object deleted (or not listed again): out of the cache and the
 * core. One whose released pods still run (its own, or its children's:
 * pods.c counts a Pod for every parent above it) keeps its quota, gone,
 * until the last of them is (a Job or JobSet deleted in the background goes
 * before its pods, which the garbage collector deletes after it: freed at
 * once, its quota admitted others while they ran, over quota; issue 31's
 * edit storm). One released stays so for CONTROLLER_GONE_SETTLE_MS at
 * least, its children too, so a Pod its controller still makes meanwhile
 * is counted for it (controller_jobs_settle). Gone, it is no admitted
 * owner for the webhook (owners.c): no further Pod of it passes. */
static void forget(struct controller *c, const char *uid)
{
	controller_job_t *j = controller_map_get(&c->jobs, uid);
	int64_t now = gpuq_mono_ms();

	if (j && !j->gone && (holds_running_pods(c, j) || released(j))) {
		if (holds_running_pods(c, j))
			gpuq_log(
			    GPUQ_LOG_INFO, "controller",
			    "%s %s/%s is gone; its quota is held until its %d running pods are",
			    j->wl ? j->wl->integ->kind_name : "Job", controller_job_ns(j),
			    controller_job_name(j), (int)controller_pods_of_job(c, j->uid));
		j->gone = true;
		j->gone_ms = now;
		settle_add(c, j->uid);
	}
	if (j && j->gone &&
	    (holds_running_pods(c, j) || now < j->gone_ms + CONTROLLER_GONE_SETTLE_MS))
		return;
	j = controller_map_del(&c->jobs, uid);

	(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, uid);
	if (j && j->rq_wait)
		c->rq_held--;
	if (j && !j->suspended) /* its pods still to come no longer are */
		controller_actuate_rq_recheck(c, controller_job_ns(j));
	if (j)
		controller_released_drop(c, j);
	job_free(j);
}

int64_t controller_jobs_settle(struct controller *c)
{
	int64_t now = gpuq_mono_ms(), next = INT64_MAX;
	size_t k = 0;

	for (size_t i = 0; i < c->n_settling; i++) {
		char *uid = c->settling[i];
		controller_job_t *j = controller_map_get(&c->jobs, uid);

		if (j && j->gone && now < j->gone_ms + CONTROLLER_GONE_SETTLE_MS) {
			if (j->gone_ms + CONTROLLER_GONE_SETTLE_MS < next)
				next = j->gone_ms + CONTROLLER_GONE_SETTLE_MS;
			c->settling[k++] = uid;
			continue;
		}
		if (j && j->gone) /* settled: leaves now, or with its last pod */
			forget(c, uid);
		free(uid);
	}
	c->n_settling = k;
	return next;
}

/* A workload whose new version does not decode (past a cap: the decoder
 * keeps nothing it cannot hold whole) must not live on in the core as its
 * former copy: that copy could not be preempted (every patch names the
 * former resourceVersion) and its end would never be seen. Waiting, it
 * leaves the queue; released, the leader suspends it, guarded by the
 * version just seen (rv), and its quota is held until its pods are gone, as
 * for a deleted one (forget). It returns as a new workload once an edit
 * makes it decodable again. */
static void stop_undecodable(struct controller *c, controller_job_t *j, const char *rv)
{
	queue_workload_view_t v;
	queue_wl_t id;
	json_t *patch;

	if (!engine_core(c->e) || !j->wl || queue_workload_find(engine_core(c->e), j->uid, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
		return;
	if (v.state != QUEUE_WL_PENDING && atomic_load(&c->leader) && rv && !j->gone &&
	    !j->wl->suspend && (patch = controller_release_suspend_patch(j->wl, rv)))
		(void)controller_patch_parent(c, j, KUBE_PATCH_JSON, patch,
					      "stopped (its object no longer decodes)");
	gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s/%s %s: its new version does not decode",
		 j->wl->integ->kind_name, j->wl->namespace_, j->wl->name,
		 v.state == QUEUE_WL_PENDING ? "left the queue" : "is stopped");
	forget(c, j->uid);
}

void controller_jobs_pods_gone(struct controller *c, const char *uid)
{
	controller_job_t *j = controller_map_get(&c->jobs, uid);

	if (j && j->gone)
		forget(c, uid);
	else if (j && j->wl && !j->bad)
		sync_job(c, j); /* one scaled to no pods lets its quota go now */
}

void controller_jobs_apply(struct controller *c, controller_cevent_t *ev)
{
	const char *uid;
	controller_job_t *j;

	if (ev->type == KUBE_EV_RESET) {
		c->gen[ev->res]++;
		return;
	}
	if (ev->type == KUBE_EV_SYNCED) {
		size_t pos = 0;
		controller_map_slot_t *s;
		while ((s = controller_map_next(&c->jobs, &pos))) {
			j = s->value;
			if (j->res == ev->res && j->gen != (uint32_t)c->gen[ev->res])
				forget(c, j->uid);
		}
		c->listed[ev->res] = true;
		return;
	}
	uid = ev->wl ? ev->wl->uid : ev->uid;
	if (!uid || !uid[0] || strlen(uid) > 128)
		return;
	if (ev->type == KUBE_EV_DELETED) {
		forget(c, uid);
		return;
	}
	j = controller_map_get(&c->jobs, uid);
	if (!j) {
		/* its own copy of the uid until its first object is taken
		   (controller_job_take: then wl's, not copied) */
		j = calloc(1, sizeof(*j));
		if (j && (j->uid = strdup(uid)))
			j->uid_owned = true;
		if (!j || !j->uid || controller_map_put_borrowed(&c->jobs, j->uid, j, NULL)) {
			gpuq_log(GPUQ_LOG_ERROR, "controller", "%s uid %s: cannot cache",
				 controller_res_at(ev->res).name, uid);
			job_free(j);
			return;
		}
		j->res = (uint8_t)ev->res;
	}
	j->gen = (uint32_t)c->gen[ev->res];
	j->gone = false; /* shown again: a relist had missed it */
	if (!ev->wl) {	 /* it did not decode: the former object stays, out of the core */
		if (!j->bad)
			gpuq_log(GPUQ_LOG_WARN, "controller", "%s uid %s: %s",
				 controller_res_at(ev->res).name, uid,
				 ev->bad ? ev->bad : "cannot decode");
		j->bad = true;
		stop_undecodable(c, j, ev->bad_rv);
		return;
	}
	controller_job_take(c, j, ev->wl);
	ev->wl = NULL; /* the cache's now */
	if (resolve(c, j) == GPUQ_OK)
		sync_job(c, j);
	child_seen(c, j);
	/* a released Job's status counts its pods: Jobs a ResourceQuota holds
	 * in its namespace may go now */
	if (!j->suspended)
		controller_actuate_rq_recheck(c, controller_job_ns(j));
}

void controller_jobs_resync(struct controller *c, const controller_nsset_t *only)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	/* the policy changed: what each Job asks for is resolved anew, from its
	 * decoded form (no JSON read again) */
	while ((s = controller_map_next(&c->jobs, &pos))) {
		controller_job_t *j = s->value;

		if (controller_nsset_has(only, controller_job_ns(j)) && resolve(c, j) == GPUQ_OK)
			sync_job(c, j);
	}
}

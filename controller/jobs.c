/* controller/jobs.c: batch/v1 Jobs into workloads of the core, and the
 * core told what the watch shows (finished, Ready, deleted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "quota/quota.h"

static void job_free(job_t *j)
{
	if (!j)
		return;
	free(j->text);
	free(j->ns);
	free(j->uid);
	free(j->rq_wait);
	free(j);
}

int job_set(job_t *j, json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	const json_t *ann = json_object_get(meta, "annotations");
	size_t nl, ml;
	char *text, *both;

	if (!ns || !name)
		return GPUQ_EINVAL;
	nl = strlen(ns);
	ml = strlen(name);
	text = json_dumps(obj, JSON_COMPACT);
	both = malloc(nl + ml + 2);
	if (!text || !both) {
		free(text);
		free(both);
		return GPUQ_ENOMEM;
	}
	memcpy(both, ns, nl + 1);
	memcpy(both + nl + 1, name, ml + 1);
	free(j->text);
	free(j->ns);
	j->text = text;
	j->text_len = strlen(text);
	j->ns = both;
	j->name = both + nl + 1;
	j->suspended = json_is_true(json_object_get(json_object_get(obj, "spec"), "suspend"));
	j->admitted = json_object_get(ann, WEBHOOK_ANNOT_ADMITTED) != NULL;
	return GPUQ_OK;
}

json_t *job_tree(const job_t *j)
{
	return j->text ? json_loadb(j->text, j->text_len, 0, NULL) : NULL;
}

void jobs_free_all(struct controller *c)
{
	size_t pos = 0;
	map_slot_t *s;

	while ((s = map_next(&c->jobs, &pos)))
		job_free(s->value);
	map_deinit(&c->jobs);
}

static const char *job_uid(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
}

/* Whether the Job is gpuq's: it asks for a GPU in a namespace some
 * ClusterQueue selects, and the webhook held it (created suspended with a
 * queue label) or gpuq released it. A Job of no pods (parallelism 0) waits
 * outside the queue until it has some. */
static bool managed(const struct controller *c, const webhook_object_t *o)
{
	return o->gpu && o->queue && (o->suspend || o->admitted) && o->pods > 0 &&
	       policy_namespace_managed(c->policy, o->namespace_);
}

/* The whole Job as one pod set of its parallelism, admitted at once. A Job
 * of more than one pod is a gang (its pods all present: the job controller
 * makes them after the release), so the Ready timeout watches it. */
static int add_to_core(struct controller *c, job_t *j, const webhook_object_t *o)
{
	podset_buf_t buf;
	queue_podset_spec_t ps;
	queue_workload_spec_t ws = {
	    .namespace_ = o->namespace_,
	    .name = o->name,
	    .uid = o->uid,
	    .local_queue = o->queue,
	    .priority = o->priority,
	    .created_ms = o->created_ms,
	    .podsets = &ps,
	    .n_podsets = 1,
	};
	gpuq_diag_t diag = {{0}};
	int rc;

	if (o->pods > CONTROLLER_PODS_MAX) {
		if (!j->bad)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "Job %s/%s waits outside the queue: %lld pods is more than the %d "
				 "one workload may have",
				 o->namespace_, o->name, (long long)o->pods, CONTROLLER_PODS_MAX);
		j->bad = true;
		return GPUQ_ELIMIT;
	}
	controller_podset_from(o, (int32_t)o->pods, &buf, &ps);
	if (o->pods > 1)
		ws.gang_total = ws.pods_present = (int32_t)o->pods;
	rc = queue_workload_add(c->q, &ws, controller_now(c), NULL, &diag);
	if (rc == GPUQ_OK || rc == GPUQ_EEXIST) {
		j->in_core = true;
		c->core_dirty = true;
		status_note(c, j->uid);
		return GPUQ_OK;
	}
	if (!j->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller", "Job %s/%s waits outside the queue: %s",
			 o->namespace_, o->name, diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	j->bad = true;
	return rc;
}

/* A Job released by an earlier leader (or before the store was lost) runs
 * while the core holds it pending: admit it where it runs, from the
 * resource=flavor pairs it was released with. */
static void adopt(struct controller *c, job_t *j, const webhook_object_t *o)
{
	json_t *tree = job_tree(j);
	const json_t *ann = json_object_get(json_object_get(tree, "metadata"), "annotations");
	const char *pairs = json_string_value(json_object_get(ann, CONTROLLER_ANNOT_FLAVORS));
	queue_adopt_t a[QUEUE_PODSET_RES_MAX];
	char buf[1024], *save = NULL, *tok;
	size_t n = 0;
	int rc;

	if (!pairs || strlen(pairs) >= sizeof(buf)) {
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "Job %s/%s runs but carries no %s: its quota "
			 "is not counted",
			 o->namespace_, o->name, CONTROLLER_ANNOT_FLAVORS);
		json_decref(tree);
		return;
	}
	gpuq_strlcpy(buf, pairs, sizeof(buf));
	for (tok = strtok_r(buf, ",", &save); tok && n < QUEUE_PODSET_RES_MAX;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = '\0';
		a[n].podset = 0;
		a[n].resource = tok;
		a[n++].flavor = eq + 1;
	}
	rc = queue_workload_adopt(c->q, j->uid, a, n, controller_now(c));
	if (rc)
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "Job %s/%s runs on \"%s\" but cannot be "
			 "adopted: %s",
			 o->namespace_, o->name, pairs, gpuq_strerror(rc));
	else
		gpuq_log(GPUQ_LOG_INFO, "controller", "adopted running Job %s/%s on %s",
			 o->namespace_, o->name, pairs);
	json_decref(tree);
	c->core_dirty = true;
}

/* Tell the core what the Job shows: finished, all pods Ready. */
static void observe(struct controller *c, job_t *j, const webhook_object_t *o)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (queue_workload_find(c->q, j->uid, &id) || queue_workload_view(c->q, id, &v))
		return;
	/* A follower mirrors the leader: a Job it holds admitted that the
	 * leader suspended (preempted) queues again. (The leader itself never
	 * does this: for it, admitted-but-suspended is its own intent, persisted
	 * and about to be acted on.) */
	if (!atomic_load(&c->leader) &&
	    (v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING) && o->suspend &&
	    !o->admitted) {
		if (queue_workload_delete(c->q, j->uid, controller_now(c)) == GPUQ_OK) {
			j->in_core = false;
			(void)add_to_core(c, j, o);
		}
		return;
	}
	if (v.state == QUEUE_WL_PENDING && !o->suspend && o->admitted && !o->finished) {
		adopt(c, j, o);
		if (queue_workload_view(c->q, id, &v))
			return;
	}
	if (o->finished && (v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING)) {
		if (queue_workload_finish(c->q, j->uid, controller_now(c)) == GPUQ_OK) {
			j->finished_seen = true;
			c->core_dirty = true;
			status_note(c, j->uid); /* its status says it finished */
		}
		return;
	}
	if (v.state == QUEUE_WL_ADMITTED && !v.ready && o->ready_pods >= o->pods && o->pods > 0) {
		if (queue_workload_pods_ready(c->q, j->uid, controller_now(c)) == GPUQ_OK)
			c->core_dirty = true;
	}
}

/* Bring one Job's workload in line with what the watch shows, then act. */
static void sync_job(struct controller *c, job_t *j)
{
	webhook_object_t o;
	gpuq_diag_t diag = {{0}};
	queue_wl_t id;

	if (!c->policy || !c->q)
		return;
	memset(&o, 0, sizeof(o));
	if (controller_decode_text(c, j->text, j->text_len, &o, &diag)) {
		if (!j->bad)
			gpuq_log(GPUQ_LOG_WARN, "controller", "Job uid %s: %s", j->uid, diag.msg);
		j->bad = true;
		webhook_object_deinit(&o);
		return;
	}
	j->in_core = queue_workload_find(c->q, j->uid, &id) == GPUQ_OK;
	if (!j->in_core) {
		if (!managed(c, &o) || o.finished) {
			webhook_object_deinit(&o);
			return;
		}
		if (add_to_core(c, j, &o)) {
			webhook_object_deinit(&o);
			return;
		}
	}
	j->bad = false;
	observe(c, j, &o);
	webhook_object_deinit(&o);
	controller_touch(c, j); /* acted on after the next persist */
}

static void forget(struct controller *c, const char *uid)
{
	job_t *j = map_del(&c->jobs, uid);

	if (c->q && queue_workload_delete(c->q, uid, controller_now(c)) == GPUQ_OK)
		c->core_dirty = true;
	if (j && j->rq_wait)
		c->rq_held--;
	if (j && !j->suspended) /* its pods still to come no longer are */
		actuate_rq_recheck(c, j->ns);
	job_free(j);
}

void jobs_apply(struct controller *c, const cevent_t *ev)
{
	const char *uid;
	job_t *j;

	if (ev->type == KUBE_EV_RESET) {
		c->gen[RES_JOBS]++;
		return;
	}
	if (ev->type == KUBE_EV_SYNCED) {
		size_t pos = 0;
		map_slot_t *s;
		while ((s = map_next(&c->jobs, &pos))) {
			j = s->value;
			if (j->gen != c->gen[RES_JOBS])
				forget(c, j->uid);
		}
		c->listed[RES_JOBS] = true;
		return;
	}
	uid = job_uid(ev->object);
	if (!uid || !uid[0] || strlen(uid) > 128)
		return;
	if (ev->type == KUBE_EV_DELETED) {
		forget(c, uid);
		return;
	}
	j = map_get(&c->jobs, uid);
	if (!j) {
		j = calloc(1, sizeof(*j));
		if (!j || !(j->uid = strdup(uid)) || map_put(&c->jobs, uid, j, NULL)) {
			gpuq_log(GPUQ_LOG_ERROR, "controller", "Job uid %s: cannot cache", uid);
			job_free(j);
			return;
		}
	}
	if (job_set(j, ev->object)) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "Job uid %s: cannot cache", uid);
		if (!j->text)
			forget(c, uid);
		return;
	}
	j->gen = c->gen[RES_JOBS];
	sync_job(c, j);
	/* a released Job's status counts its pods: Jobs a ResourceQuota holds
	 * in its namespace may go now */
	if (!j->suspended)
		actuate_rq_recheck(c, j->ns);
}

void jobs_resync(struct controller *c)
{
	size_t pos = 0;
	map_slot_t *s;

	while ((s = map_next(&c->jobs, &pos)))
		sync_job(c, s->value);
}

/* The cached Job of a workload uid, or NULL. */
job_t *controller_job(struct controller *c, const char *uid)
{
	return map_get(&c->jobs, uid);
}

/* controller/cache.c: what every file of the controller asks of its cache,
 * called by them all and calling none of them: a workload's cached Job or
 * pod group by key, a cached Job's decoded object and the pod sets it is
 * admitted by, the touched list (workloads to bring in line after the next
 * commit), the explain list (workloads whose status to write), the core's
 * clock, and an object's apiserver path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

int64_t controller_now(struct controller *c)
{
	int64_t now = kube_now_ms();
	int64_t last = engine_core(c->e) ? queue_last_now(engine_core(c->e)) : 0;

	return now > last ? now : last; /* the core's clock never goes back */
}

/* The cached Job of a workload uid, or NULL. */
controller_job_t *controller_job(struct controller *c, const char *uid)
{
	return controller_map_get(&c->jobs, uid);
}
controller_pgroup_t *controller_group(struct controller *c, const char *key)
{
	return controller_map_get(&c->groups, key);
}

/* Append key to the touched list (the caller checked its flag). */
static bool touch_append(struct controller *c, const char *key)
{
	if (c->n_touched == c->cap_touched) {
		size_t cap = c->cap_touched ? c->cap_touched * 2 : 256;
		char **t = realloc(c->touched, cap * sizeof(*t));
		if (!t)
			return false; /* the periodic sweep catches it */
		c->touched = t;
		c->cap_touched = cap;
	}
	c->touched[c->n_touched] = strdup(key);
	if (!c->touched[c->n_touched])
		return false;
	c->n_touched++;
	return true;
}

void controller_touch_key(struct controller *c, const char *key)
{
	controller_job_t *j = controller_job(c, key);
	controller_pgroup_t *g;

	if (j) {
		controller_touch(c, j);
		return;
	}
	g = controller_group(c, key);
	if (g && !g->touched && touch_append(c, key))
		g->touched = true;
}

void controller_touch(struct controller *c, controller_job_t *j)
{
	if (j->touched)
		return;
	if (touch_append(c, j->uid))
		j->touched = true;
}

void controller_job_set(controller_job_t *j, workload_t *wl)
{
	workload_destroy(j->wl);
	j->wl = wl;
	if (!j->uid_owned)
		j->uid = wl->uid;
	j->suspended = wl->suspend;
	j->admitted = wl->admitted;
	/* what the webhook (at creation) or an earlier leader wrote: not
	 * written again while it still says where the workload stands */
	if (!j->status_hash)
		j->status_hash = controller_status_seen(wl);
}

void controller_released_drop(struct controller *c, controller_job_t *j)
{
	controller_released_t *r;

	if (!j->released_in)
		return;
	j->released_in = false;
	r = controller_map_get(&c->released, controller_job_ns(j));
	if (!r || j->released_at >= r->n || r->v[j->released_at].job != j) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "%s/%s: not where its released list says",
			 controller_job_ns(j), controller_job_name(j)); /* a bug: say so */
		return;
	}
	r->v[j->released_at] = r->v[--r->n];
	r->v[j->released_at].job->released_at = j->released_at;
	if (!r->n) { /* the namespace's last */
		free(r->v);
		free(controller_map_del(&c->released, controller_job_ns(j)));
	}
}

/* Add released Job j to its namespace's list. */
static int released_add(struct controller *c, controller_job_t *j)
{
	const char *ns = controller_job_ns(j);
	controller_released_t *r = controller_map_get(&c->released, ns);

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r || controller_map_put(&c->released, ns, r, NULL)) {
			free(r);
			return GPUQ_ENOMEM;
		}
	}
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 4;
		void *v = realloc(r->v, cap * sizeof(*r->v));

		if (!v)
			return GPUQ_ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	j->released_at = r->n;
	r->v[r->n++].job = j;
	j->released_in = true;
	return GPUQ_OK;
}

void controller_released_note(struct controller *c, controller_job_t *j)
{
	bool released = j->wl && j->admitted && !j->suspended;

	if (released == j->released_in)
		return;
	if (!released)
		controller_released_drop(c, j);
	else if (released_add(c, j))
		gpuq_log(GPUQ_LOG_ERROR, "controller",
			 "%s/%s: out of memory: left out of its namespace's released Jobs",
			 controller_job_ns(j), controller_job_name(j));
}

void controller_released_free_all(struct controller *c)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&c->released, &pos))) {
		controller_released_t *r = s->value;

		free(r->v);
		free(r);
	}
	controller_map_deinit(&c->released);
}

void controller_job_take(struct controller *c, controller_job_t *j, workload_t *wl)
{
	workload_t *old = j->wl;
	char *own = j->uid_owned ? (char *)(uintptr_t)j->uid : NULL;

	if (!strcmp(j->uid, wl->uid)) { /* the usual case: borrow wl's */
		j->uid_owned = false;
		j->uid = wl->uid;
	} else if (!own) { /* the name's new object: keep the key's text */
		own = strdup(j->uid);
		if (!own) {
			workload_destroy(wl); /* the former object stays */
			return;
		}
		j->uid = own;
		j->uid_owned = true;
		own = NULL;
	} else {
		own = NULL; /* still j's */
	}
	controller_released_drop(c, j); /* under the former object's namespace */
	j->wl = NULL; /* the former object (and the key's text) live until moved */
	controller_job_set(j, wl);
	controller_released_note(c, j);
	controller_map_rekey(&c->jobs, j->uid);
	workload_destroy(old);
	free(own);
}

uint64_t controller_status_seen(const workload_t *wl)
{
	return wl->status_hash; /* controller_map_hash's FNV-1a | 1 (workload.h) */
}

const workload_t *controller_jobs_podsets(struct controller *c, const controller_job_t *j)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	if (!j->wl || !j->wl->integ->podsets_of_child)
		return j->wl;
	/* a TrainJob: the JobSet the Trainer made for it (cached by the JobSets
	   watch) */
	while ((s = controller_map_next(&c->jobs, &pos))) {
		const controller_job_t *k = s->value;

		if (k->wl && k->wl->kind == j->wl->integ->child_kind && k->wl->x->owner_uid &&
		    !strcmp(k->wl->x->owner_uid, j->uid))
			return k->wl;
	}
	return NULL;
}

void controller_status_note(struct controller *c, const char *uid)
{
	controller_job_t *j = controller_job(c, uid);
	controller_pgroup_t *g = j ? NULL : controller_group(c, uid);
	bool *queued = j ? &j->explain_queued : g ? &g->explain_queued : NULL;

	if (!queued || *queued)
		return;
	if (c->n_explain == c->cap_explain) {
		size_t cap = c->cap_explain ? c->cap_explain * 2 : 256;
		char **e = realloc(c->explain, cap * sizeof(*e));
		if (!e)
			return;
		c->explain = e;
		c->cap_explain = cap;
	}
	c->explain[c->n_explain] = strdup(uid);
	if (c->explain[c->n_explain]) {
		c->n_explain++;
		*queued = true;
	}
}

int controller_object_path(workload_kind_t k, const char *ns, const char *name, char *out,
			   size_t cap)
{
	const workload_integration_t *in = workload_integration(k);
	char ens[300], ename[300];
	int n;

	if (!ns || !name || kube_escape(ns, ens, sizeof(ens)) ||
	    kube_escape(name, ename, sizeof(ename)))
		return GPUQ_EINVAL;
	n = in->group[0] ? snprintf(out, cap, "/apis/%s/%s/namespaces/%s/%s/%s", in->group,
				    in->version, ens, in->resource, ename)
			 : snprintf(out, cap, "/api/%s/namespaces/%s/%s/%s", in->version, ens,
				    in->resource, ename);
	return n > 0 && (size_t)n < cap ? GPUQ_OK : GPUQ_EINVAL;
}

int32_t controller_pods_of_job(const struct controller *c, const char *job_uid)
{
	const controller_podcount_t *n = controller_map_get(&c->job_pod_count, job_uid);

	return n ? n->pods : 0;
}

int64_t controller_gpus_of_job(const struct controller *c, const char *job_uid)
{
	const controller_podcount_t *n = controller_map_get(&c->job_pod_count, job_uid);

	return n ? n->gpus : 0;
}

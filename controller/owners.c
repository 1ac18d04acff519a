/* controller/owners.c: the held parents gpuq admitted and that run, from
 * this replica's watch cache, handed to the webhook (webhook_owners_t) as
 * the evidence a Pod outside the queue must name in its ownerReference
 * (docs/admission.md, "Which Pods are a gpuq Job's Pods"). Every replica
 * builds it, leader or not: each serves the webhook, each watches the same
 * objects. */
#include "controller/internal.h"

/* Whether j's Pods may pass outside the queue: a parent that makes Pods
 * itself (a Job, a RayCluster), decoded, gpuq's mark on it or its
 * templates (only gpuq's controller writes it: validate.c) and let run
 * (not suspended), not deleted. */
static bool owner_admitted(const controller_job_t *j)
{
	const workload_t *wl = j->wl;
	bool marked;

	if (!wl || j->bad || j->gone || j->suspended || wl->finished ||
	    !workload_makes_pods(wl->integ))
		return false;
	marked = wl->admitted;
	for (uint32_t i = 0; !marked && i < wl->n_podsets; i++)
		marked = wl->podsets[i].tmpl_admitted;
	return marked;
}

/* The workload owner j's Pods count against: the topmost of j and the
 * held parents above it (a JobSet's Job: its JobSet, or the TrainJob above
 * that), with the one just below it in *below (NULL when j is its own);
 * NULL when any of them may run no Pods now (deleted, not decoded,
 * suspended, finished: a Job the JobSet controller makes again under a
 * deleted TrainJob is no admitted owner) or a parent its row names is not
 * cached (not yet seen, or gone). */
static const controller_job_t *top_of(struct controller *c, const controller_job_t *j,
				      const controller_job_t **below)
{
	const controller_job_t *t = j;

	*below = NULL;
	for (int depth = 0; depth < 4; depth++) {
		const workload_t *wl = t->wl;
		const controller_job_t *p;

		if (!wl || t->bad || t->gone || t->suspended || wl->finished)
			return NULL;
		if (!wl->x->owner_uid ||
		    !workload_parent_of(wl->kind, wl->x->owner_api_version, wl->x->owner_kind))
			return t;
		if (!(p = controller_job(c, wl->x->owner_uid)))
			return NULL;
		*below = t;
		t = p;
	}
	return NULL;
}

/* The GPUs workload t (its pod sets, or those of its child below when its
 * row takes them from there: a TrainJob's JobSet) was admitted for: each
 * pod set's count times one pod's GPUs. An admitted workload may shrink but
 * never grow (validate.c), so its object as it stands asks no more than
 * its admission. */
static int64_t admitted_gpus(const workload_config_t *gcfg, const controller_job_t *t,
			     const controller_job_t *below)
{
	const workload_t *wl = t->wl->integ->podsets_of_child ? below ? below->wl : NULL : t->wl;
	int64_t n = 0;

	for (uint32_t i = 0; wl && i < wl->n_podsets; i++)
		n += wl->podsets[i].count * workload_podset_gpus(gcfg, &wl->podsets[i]);
	return n;
}

/* The index of j's workload in o (added once per set; one shared by
 * several owners, a JobSet's Jobs, is found again by its uid in tops),
 * SIZE_MAX when j may pass no Pod; GPUQ_OK or the failure in *rc. */
static size_t top_index(struct controller *c, webhook_owners_t *o, controller_map_t *tops,
			const controller_job_t *j, int *rc)
{
	const workload_config_t gcfg = CONTROLLER_GPU_CFG(c);
	const controller_job_t *below, *t = top_of(c, j, &below);
	void *at;
	size_t i;

	if (!t)
		return SIZE_MAX;
	if (t != j && (at = controller_map_get(tops, t->uid)))
		return (size_t)((uintptr_t)at - 1);
	*rc = webhook_owners_top(o, t->uid, t->wl->integ->kind_name, t->wl->namespace_, t->wl->name,
				 admitted_gpus(&gcfg, t, below), controller_gpus_of_job(c, t->uid),
				 &i);
	/* a parent that makes Pods is nobody's child's workload: no lookup */
	if (!*rc && t != j)
		*rc = controller_map_put(tops, t->uid, (void *)(uintptr_t)(i + 1), NULL);
	return *rc ? SIZE_MAX : i;
}

bool controller_owners_counted(void *ctx, const char *pod_uid)
{
	const struct controller *c = ctx;

	/* counted, or seen since the last set (counted and gone again, or
	   finished or deleted when first seen: it holds nothing) */
	return controller_map_get(&c->job_pods, pod_uid) ||
	       controller_map_get(&c->pods_noted, pod_uid);
}

int controller_owners_build(struct controller *c, webhook_owners_t **out)
{
	webhook_owners_t *o = NULL;
	controller_map_slot_t *s;
	controller_map_t tops;
	size_t pos = 0;
	int rc;

	*out = NULL;
	controller_map_init(&tops);
	rc = webhook_owners_create(c->jobs.n, &o);
	while (!rc && (s = controller_map_next(&c->jobs, &pos))) {
		const controller_job_t *j = s->value;
		size_t top;

		if (!owner_admitted(j))
			continue;
		top = top_index(c, o, &tops, j, &rc);
		if (!rc && top != SIZE_MAX)
			rc = webhook_owners_add_weighed(o, j->uid, top);
	}
	controller_map_deinit(&tops);
	if (rc) {
		webhook_owners_unref(o);
		return rc;
	}
	webhook_owners_finish(o);
	*out = o;
	return GPUQ_OK;
}

void controller_owners_publish(struct controller *c)
{
	webhook_owners_t *o = NULL;
	int rc;

	if (!c->o.adm) {
		controller_map_deinit(&c->pods_noted);
		return;
	}
	rc = controller_owners_build(c, &o);
	if (rc) { /* no memory: the last set stays (a Pod refused is retried) */
		if (!c->owners_logged)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "the admitted owners for the webhook: %s (the last set stays; "
				 "logged once)",
				 gpuq_strerror(rc));
		c->owners_logged = true;
		return;
	}
	webhook_admission_owners_publish(c->o.adm, o, controller_owners_counted, c);
	webhook_owners_unref(o);
	controller_map_deinit(&c->pods_noted); /* a new batch notes its own */
}

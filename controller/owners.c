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

void controller_owners_publish(struct controller *c)
{
	webhook_owners_t *o = NULL;
	controller_map_slot_t *s;
	size_t pos = 0;
	int rc;

	if (!c->o.adm)
		return;
	rc = webhook_owners_create(c->jobs.n, &o);
	while (!rc && (s = controller_map_next(&c->jobs, &pos)))
		if (owner_admitted(s->value))
			rc = webhook_owners_add(o, ((controller_job_t *)s->value)->uid);
	if (rc) { /* no memory: the last set stays (a Pod refused is retried) */
		if (!c->owners_logged)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "the admitted owners for the webhook: %s (the last set stays; "
				 "logged once)",
				 gpuq_strerror(rc));
		c->owners_logged = true;
		webhook_owners_unref(o);
		return;
	}
	webhook_owners_finish(o);
	webhook_admission_owners_set(c->o.adm, o);
	webhook_owners_unref(o);
}

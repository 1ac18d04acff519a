/* controller/podmap.c: the pods' LocalQueues for idle GPU time (idle.h,
 * gpuq serve --dcgm-url). Built on the controller thread from the core's
 * workloads that hold quota (admitted, or evicted with pods still
 * stopping): a Job's workload by the Job's name (its pods are found by
 * theirs), a plain Pod's or pod group's by each member Pod's name. */
#include <string.h>

#include "controller/internal.h"

typedef struct {
	idle_podmap_t *map; /* being built */
	const char *lq;	    /* the LocalQueue's name (after "namespace/") */
	const char *uid;    /* the workload's uid (idle reclaim reads it) */
	int rc;		    /* the first failure */
} build_t;

/* Add one entry; a name no pod or Job can have (GPUQ_EINVAL) is left out. */
static void add(build_t *b, idle_owner_t kind, const char *ns, const char *name)
{
	int rc;

	if (b->rc)
		return;
	rc = idle_podmap_add_owner(b->map, kind, ns, name, b->lq, b->uid);
	if (rc != GPUQ_EINVAL)
		b->rc = rc;
}

static void add_pod(void *ctx, const char *ns, const char *name)
{
	add(ctx, IDLE_OWNER_POD, ns, name);
}

/* One workload holding quota into b. */
static void add_workload(struct controller *c, const queue_workload_view_t *v, build_t *b)
{
	const char *lq = queue_lq_name(engine_core(c->e), v->lq);
	const char *slash = lq ? strchr(lq, '/') : NULL;
	controller_pgroup_t *g;

	b->lq = slash ? slash + 1 : "";
	b->uid = v->uid;
	if (controller_job(c, v->uid)) {
		add(b, IDLE_OWNER_JOB, v->namespace_, v->name);
		return;
	}
	g = controller_group(c, v->uid);
	if (g)
		controller_pods_each_member(g, add_pod, b);
}

void controller_podmap_publish(struct controller *c)
{
	build_t b = {0};
	queue_wl_t id = QUEUE_NONE;

	if (!engine_core(c->e) || !atomic_load(&c->leader)) {
		if (c->podmap_sent) /* a follower's map would go stale: none */
			c->o.pod_queues(c->o.pod_queues_ctx, NULL);
		c->podmap_sent = false;
		return;
	}
	b.rc = idle_podmap_create(&b.map);
	while (!b.rc && (id = queue_workload_next(engine_core(c->e), id)) != QUEUE_NONE) {
		queue_workload_brief_t w;
		queue_workload_view_t v;

		if (queue_workload_brief(engine_core(c->e), id, &w) ||
		    (w.state != QUEUE_WL_ADMITTED && w.state != QUEUE_WL_EVICTING) ||
		    queue_workload_view(engine_core(c->e), id, &v))
			continue;
		add_workload(c, &v, &b);
	}
	if (b.rc) {
		if (!c->podmap_logged)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "the pods' LocalQueues for idle GPU time: %s (the last map stays; "
				 "logged once)",
				 gpuq_strerror(b.rc));
		c->podmap_logged = true;
		idle_podmap_destroy(b.map);
		return;
	}
	idle_podmap_finish(b.map);
	c->o.pod_queues(c->o.pod_queues_ctx, b.map);
	c->podmap_sent = true;
}

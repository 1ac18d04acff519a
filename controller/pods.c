/* controller/pods.c: Pods gpuq gates (a plain GPU Pod, a pod group formed
 * by kueue.x-k8s.io/pod-group-name with pod-group-total-count, or a member
 * of a set's group: a StatefulSet's or a LeaderWorkerSet's, whose workload
 * sets.c keeps) into workloads of the core.
 *
 * A pod group is one gang workload of its total count. Every member counts,
 * CPU-only ones too (the webhook gates every member: it cannot tell at a
 * member's creation what the others ask), each charged its own request: one
 * pod set per distinct member shape (what one Pod asks the core for and
 * where it may go; Kueue's role hash). While it queues it follows its
 * members, deletions included (pod sets, pods present); it is admissible
 * only when every member exists, and released in one pass (the gate removed
 * from every member, its pod set's flavor's nodeSelector and tolerations
 * added, which a gated Pod allows). Admitted, it ends only when every
 * member succeeded (or, once a member is marked not retriable, when every
 * member stopped): a Failed member is not done, and its replacement (a new
 * Pod of the group) joins without queueing where its pod set has room. A
 * complete group none of whose members asks for a GPU is not the queue's:
 * let through as it is. Preemption deletes the members; a workload whose
 * members are all gone leaves the core. Pods of Jobs are the Job's business
 * (jobs.c) and are ignored here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define GROUP_KEY_MAX 600 /* "group:" + namespace + "/" + group name */

typedef struct {
	workload_t *wl; /* the Pod as last seen, decoded and resolved (owned) */
	uint64_t gen;	/* LIST generation it was last seen in */
	uint64_t shape; /* a pod group member: shape_of(wl) */
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

/* ---- Pods of held parents: which of a released workload's pods exist ----
 * A Job's or a RayCluster's Pods are not workloads of their own (their
 * parent is): only counted while they ask for a GPU and have not finished,
 * deleting ones included (a Pod in its grace period still holds its GPU),
 * for every cached parent above them: the Job that owns it, the JobSet that
 * owns that Job, the TrainJob above that (a RayJob above a RayCluster). The
 * chain is taken when the Pod is first seen, so a parent deleted before its
 * Pods (the garbage collector deletes from the top) still counts them: its
 * quota is held until the last is gone (jobs.c, forget). Read for the
 * ResourceQuota check before a release too (actuate.c, add_pending_pods). */

#define JOBPOD_DEPTH 4 /* Pod -> Job -> JobSet -> TrainJob, with room */

typedef struct {
	char *owners[JOBPOD_DEPTH]; /* the parents' uids, nearest first (owned) */
	int n_owners;
	char *ns;     /* the Pod's namespace (owned) */
	int64_t gpus; /* the GPUs it holds (its effective request's) */
	uint64_t gen; /* LIST generation it was last seen in */
} jobpod_t;

/* Parent job_uid has one pod more (d = 1) or less (-1), of gpus GPUs. */
static void job_count(struct controller *c, const char *job_uid, int d, int64_t gpus)
{
	controller_podcount_t *n = controller_map_get(&c->job_pod_count, job_uid);

	if (!n && d > 0) {
		n = calloc(1, sizeof(*n));
		if (!n || controller_map_put(&c->job_pod_count, job_uid, n, NULL)) {
			free(n);
			return; /* counted as not there: the Job's status counts it soon */
		}
	}
	if (!n)
		return;
	n->pods += d;
	n->gpus += d * gpus;
	if (n->pods <= 0)
		free(controller_map_del(&c->job_pod_count, job_uid));
}

static void jobpod_free(jobpod_t *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_owners; i++)
		free(p->owners[i]);
	free(p->ns);
	free(p);
}

/* Pod pod_uid is no longer an unfinished pod of its parents: each is
 * compared again, nearest first (an evicted or deleted parent's quota waits
 * for its last pod). */
static void jobpod_forget(struct controller *c, const char *pod_uid)
{
	jobpod_t *p = controller_map_del(&c->job_pods, pod_uid);

	if (!p)
		return;
	for (int i = 0; i < p->n_owners; i++) {
		controller_job_t *j;

		job_count(c, p->owners[i], -1, p->gpus);
		j = controller_job(c, p->owners[i]);
		if (j && !controller_pods_of_job(c, p->owners[i]))
			controller_jobs_pods_gone(c, p->owners[i]); /* may free j */
		else if (j)
			controller_touch(c, j);
	}
	controller_actuate_rq_recheck(c, p->ns);
	jobpod_free(p);
}

/* The chain of cached parents above Pod o into p (nearest first); whether
 * any of them asks for a GPU (else the Pod is not counted). */
static bool jobpod_chain(struct controller *c, const workload_t *o, jobpod_t *p)
{
	const controller_job_t *j = controller_job(c, o->x->owner_uid);
	bool gpu = false;

	while (j && j->wl && p->n_owners < JOBPOD_DEPTH) {
		if (!(p->owners[p->n_owners] = strdup(j->uid)))
			return false;
		p->n_owners++;
		gpu = gpu || j->wl->gpu;
		j = j->wl->x->owner_uid ? controller_job(c, j->wl->x->owner_uid) : NULL;
	}
	return gpu;
}

/* A Pod whose controller owner is a held parent that makes Pods (a Job, a
 * RayCluster; cached by their watches): counted while it has not finished
 * and a parent above it asks for a GPU, with the GPUs it holds (resolved
 * here when its node's count has not: controller_owners_publish weighs a
 * workload's Pods against what it was admitted for). */
static void jobpod_seen(struct controller *c, workload_t *o)
{
	const workload_config_t gcfg = CONTROLLER_GPU_CFG(c);
	jobpod_t *p = controller_map_get(&c->job_pods, o->uid);

	(void)controller_map_put(&c->pods_noted, o->uid, (void *)1, NULL);

	if (o->finished || !o->namespace_ || !o->x->owner_uid) {
		jobpod_forget(c, o->uid);
		return;
	}
	if (p) {
		p->gen = c->pods_gen;
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !jobpod_chain(c, o, p) || !(p->ns = strdup(o->namespace_)) ||
	    controller_map_put(&c->job_pods, o->uid, p, NULL)) {
		jobpod_free(p);
		return;
	}
	p->gen = c->pods_gen;
	if (o->n_podsets == 1 && (o->podsets[0].requests || !controller_resolve(c, o, NULL)))
		p->gpus = workload_podset_gpus(&gcfg, &o->podsets[0]);
	for (int i = 0; i < p->n_owners; i++)
		job_count(c, p->owners[i], 1, p->gpus);
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
	controller_map_deinit(&c->pods_noted);
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

/* A plain Pod as a workload of one pod set of one Pod: added, or, while it
 * queues, followed (ENGINE_CHANGE_UPDATE: its queue label moved moves it,
 * as a Job's does; the apiserver fixes the rest of a Pod). Moved where the
 * core cannot take it (a LocalQueue the policy lacks), it leaves the queue
 * and waits outside, said once; moved back, it returns. Admitted, it keeps
 * its admission (the webhook refuses a released Pod's move). */
static int plain_sync(struct controller *c, controller_pgroup_t *g, const workload_t *o)
{
	controller_podset_buf_t buf;
	queue_podset_spec_t ps;
	queue_workload_spec_t ws = {
	    .namespace_ = o->namespace_,
	    .name = o->name,
	    .uid = g->key,
	    .local_queue = o->queue,
	    .priority = o->priority,
	    .created_ms = o->created_ms,
	    .podsets = &ps,
	    .n_podsets = 1,
	    .max_exec_s = o->x->max_exec_s,
	};
	gpuq_diag_t diag = {{0}};
	queue_workload_view_t v;
	queue_wl_t id;
	bool in_core, changed = false;
	int rc;

	in_core = queue_workload_find(engine_core(c->e), g->key, &id) == GPUQ_OK &&
		  queue_workload_view(engine_core(c->e), id, &v) == GPUQ_OK;
	if (in_core && v.state == QUEUE_WL_ADMITTED)
		controller_limit_follow(c, g->key, o, o->x->max_exec_s);
	if (in_core && (v.state != QUEUE_WL_PENDING || !o->gated))
		return GPUQ_OK;
	if (!in_core && o->finished)
		return GPUQ_OK;
	controller_podset_from(&o->podsets[0], 1, &buf, &ps);
	rc = in_core ? engine_change_apply(c->e,
					   &(engine_change_t){.kind = ENGINE_CHANGE_UPDATE,
							      .spec = &ws,
							      .now = controller_now(c),
							      .changed = &changed},
					   &diag)
		     : engine_change_apply(c->e,
					   &(engine_change_t){.kind = ENGINE_CHANGE_ADD,
							      .spec = &ws,
							      .now = controller_now(c)},
					   &diag);
	if (rc == GPUQ_OK || rc == GPUQ_EEXIST) {
		g->bad = false;
		if (in_core && !changed)
			return GPUQ_OK;
		c->core_dirty = true;
		controller_status_note(c, g->key);
		return GPUQ_OK;
	}
	if (in_core && controller_wl_change(c, ENGINE_CHANGE_DELETE, g->key) == GPUQ_OK)
		controller_status_note(c, g->key);
	if (!g->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller", "Pod %s/%s waits outside the queue: %s",
			 o->namespace_, ws.name, diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	g->bad = true;
	return rc;
}

/* ---- pod groups ---- */

/* Whether g is a Kueue pod group (kueue.x-k8s.io/pod-group-name), not a
 * set's group, which sets.c also marks a group (its count the set's): only
 * a pod group is built from its members and ends with them. */
static bool pod_group(const controller_pgroup_t *g)
{
	return g->group && !g->set;
}

static bool phase_is(const workload_t *pod, const char *phase)
{
	return pod->x->phase && !strcmp(pod->x->phase, phase);
}

/* Whether a member can still run or has succeeded (Kueue's
 * isPodRunnableOrSucceeded): not Failed, and not deleted before it was
 * bound to a node. Only these are counted. */
static bool runnable(const workload_t *pod)
{
	return !phase_is(pod, "Failed") && !(pod->deleting && !pod->x->node_name);
}

/* h extended by a field separator and s ("" for NULL). */
static uint64_t mix(uint64_t h, const char *s)
{
	return gpuq_fnv1a_str(gpuq_fnv1a(h, "\x1f", 1), s ? s : "");
}

/* A member's shape: what one Pod asks the core for (its resolved non-zero
 * requests, as controller_podset_from passes them) and where it may go (its
 * nodeSelector and tolerations), hashed so that the order the object lists
 * them in does not matter (each entry hashed alone, the hashes summed).
 * Members of one shape are one pod set, named by it. */
static uint64_t shape_of(const workload_t *pod)
{
	const workload_podset_t *ps = &pod->podsets[0];
	uint64_t sum = 0;
	char v[32];

	for (size_t i = 0; i < ps->n_requests; i++) {
		if (!ps->requests[i].amount)
			continue;
		snprintf(v, sizeof(v), "%lld", (long long)ps->requests[i].amount);
		sum += mix(mix(gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, "r"), ps->requests[i].name), v);
	}
	for (size_t i = 0; i < ps->n_node_selector; i++)
		sum += mix(mix(gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, "s"), ps->node_selector[i].key),
			   ps->node_selector[i].value);
	for (size_t i = 0; i < ps->n_tolerations; i++) {
		const workload_toleration_t *t = &ps->tolerations[i];
		uint64_t h = mix(mix(gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, "t"), t->key), t->op);

		snprintf(v, sizeof(v), "%d:%lld", t->has_seconds, (long long)t->seconds);
		sum += mix(mix(mix(h, t->value), t->effect), v);
	}
	return sum;
}

/* The pod set name of a shape: its 16 hex digits. */
#define SHAPE_NAME_MAX 17
static void shape_name(uint64_t shape, char out[SHAPE_NAME_MAX])
{
	snprintf(out, SHAPE_NAME_MAX, "%016llx", (unsigned long long)shape);
}

/* What a pod group asks of the core, from its members. */
typedef struct {
	uint64_t shape[WORKLOAD_PODSETS_MAX];	      /* each pod set's shape, ascending */
	const workload_t *like[WORKLOAD_PODSETS_MAX]; /* a member of that shape */
	int32_t count[WORKLOAD_PODSETS_MAX];	      /* its members counted */
	size_t n;				      /* pod sets */
	int32_t present;			      /* members counted: the runnable
							 ones, at most the total (the
							 earliest created first) */
	const workload_t *eldest;		      /* the earliest created of those:
							 the group's queue, priority and
							 creation time */
	bool gpu;				      /* one of them asks for a GPU */
	bool over;				      /* more shapes than pod sets */
} gspec_t;

static bool older(const workload_t *a, const workload_t *b)
{
	return a->created_ms != b->created_ms ? a->created_ms < b->created_ms
					      : strcmp(a->name, b->name) < 0;
}

/* qsort's order of members (member_t pointers): the earliest created first. */
static int by_age(const void *pa, const void *pb)
{
	const workload_t *a = (*(const member_t *const *)pa)->wl;
	const workload_t *b = (*(const member_t *const *)pb)->wl;

	return older(a, b) ? -1 : older(b, a) ? 1 : 0;
}

/* Count member pod of shape `shape` into s (its pod sets kept in ascending
 * shape order, so the same members make the same pod sets). */
static void gspec_count(gspec_t *s, const workload_t *pod, uint64_t shape)
{
	size_t i = 0;

	s->present++;
	s->gpu = s->gpu || pod->gpu;
	if (!s->eldest || older(pod, s->eldest))
		s->eldest = pod;
	while (i < s->n && s->shape[i] < shape)
		i++;
	if (i < s->n && s->shape[i] == shape) {
		s->count[i]++;
		return;
	}
	if (s->n == WORKLOAD_PODSETS_MAX) {
		s->over = true;
		return;
	}
	memmove(&s->shape[i + 1], &s->shape[i], (s->n - i) * sizeof(*s->shape));
	memmove(&s->like[i + 1], &s->like[i], (s->n - i) * sizeof(const workload_t *));
	memmove(&s->count[i + 1], &s->count[i], (s->n - i) * sizeof(*s->count));
	s->shape[i] = shape;
	s->like[i] = pod;
	s->count[i] = 1;
	s->n++;
}

/* What group g's members ask for (one pass over them; a sort only when more
 * are runnable than the group's total). GPUQ_ENOMEM. */
static int gspec_build(const controller_pgroup_t *g, gspec_t *s)
{
	const member_t **run = calloc(g->members.n + 1, sizeof(const member_t *));
	controller_map_slot_t *sl;
	size_t pos = 0, n = 0;

	memset(s, 0, sizeof(*s));
	if (!run)
		return GPUQ_ENOMEM;
	while ((sl = controller_map_next(&g->members, &pos)))
		if (runnable(((const member_t *)sl->value)->wl))
			run[n++] = sl->value;
	if (n > (size_t)g->total) {
		/* the earliest created count; the rest wait as extras */
		qsort(run, n, sizeof(const member_t *), by_age);
		n = (size_t)g->total;
	}
	for (size_t i = 0; i < n; i++)
		gspec_count(s, run[i]->wl, run[i]->shape);
	free(run);
	return GPUQ_OK;
}

/* Group g's workload in the core follows its members while it queues: added
 * once one of them asks for a GPU, then its pod sets, pods present, queue,
 * priority and creation time updated whole (ENGINE_CHANGE_UPDATE; only a
 * change is told). Admitted, it keeps what it was admitted for. */
static void group_sync(struct controller *c, controller_pgroup_t *g)
{
	controller_podset_buf_t buf[WORKLOAD_PODSETS_MAX];
	queue_podset_spec_t ps[WORKLOAD_PODSETS_MAX];
	char names[WORKLOAD_PODSETS_MAX][SHAPE_NAME_MAX];
	queue_workload_spec_t ws;
	queue_workload_view_t v;
	queue_wl_t id;
	gpuq_diag_t diag = {{0}};
	gspec_t s;
	bool in_core, changed = false;
	int rc;

	in_core = queue_workload_find(engine_core(c->e), g->key, &id) == GPUQ_OK &&
		  queue_workload_view(engine_core(c->e), id, &v) == GPUQ_OK;
	if (in_core && v.state == QUEUE_WL_ADMITTED && !gspec_build(g, &s) && s.eldest)
		controller_limit_follow(c, g->key, s.eldest, s.eldest->x->max_exec_s);
	if ((in_core && v.state != QUEUE_WL_PENDING) || gspec_build(g, &s))
		return;
	if (!s.present || (!in_core && !s.gpu))
		return; /* nothing runnable (the core keeps what it had), or
			   not the queue's yet */
	for (size_t i = 0; i < s.n; i++) {
		controller_podset_from(&s.like[i]->podsets[0], s.count[i], &buf[i], &ps[i]);
		shape_name(s.shape[i], names[i]);
		ps[i].name = names[i];
	}
	ws = (queue_workload_spec_t){
	    .namespace_ = s.eldest->namespace_,
	    .name = s.eldest->x->pod_group,
	    .uid = g->key,
	    .local_queue = s.eldest->queue,
	    .priority = s.eldest->priority,
	    .created_ms = s.eldest->created_ms,
	    .podsets = ps,
	    .n_podsets = s.n,
	    .gang_total = g->total,
	    .pods_present = s.present,
	    .max_exec_s = s.eldest->x->max_exec_s,
	};
	if (s.over)
		rc = gpuq_diag_set(&diag, GPUQ_ELIMIT,
				   "its members come in more than %d shapes (requests, "
				   "nodeSelector, tolerations): one pod set each",
				   WORKLOAD_PODSETS_MAX);
	else if (in_core)
		rc = engine_change_apply(c->e,
					 &(engine_change_t){.kind = ENGINE_CHANGE_UPDATE,
							    .spec = &ws,
							    .now = controller_now(c),
							    .changed = &changed},
					 &diag);
	else
		rc = engine_change_apply(c->e,
					 &(engine_change_t){.kind = ENGINE_CHANGE_ADD,
							    .spec = &ws,
							    .now = controller_now(c)},
					 &diag);
	if (rc == GPUQ_OK) {
		g->bad = false;
		if (in_core && !changed)
			return;
		c->core_dirty = true;
		controller_status_note(c, g->key); /* "n of total pods present" moved */
		return;
	}
	if (!g->bad)
		gpuq_log(GPUQ_LOG_WARN, "controller", "pod group %s/%s waits outside the queue: %s",
			 s.eldest->namespace_, s.eldest->x->pod_group,
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	g->bad = true;
}

/* An admitted (or evicting) pod group's members, as the core needs to hear
 * them: done when every member succeeded (a Succeeded Pod deleted since
 * still counts), or, marked not retriable, when none runs or waits any
 * more; Ready when every member is Ready or done. */
static void group_observe(struct controller *c, controller_pgroup_t *g,
			  const queue_workload_view_t *v)
{
	int32_t done = g->done_gone, ready = 0;
	bool stopped = true;
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&g->members, &pos))) {
		const workload_t *pod = ((const member_t *)s->value)->wl;

		if (phase_is(pod, "Succeeded")) {
			done++;
		} else if (!pod->finished) {
			stopped = false;
			ready += pod->ready;
		}
	}
	/* (an evicted group's members stop because gpuq deletes them: that
	   ends nothing) */
	if (((v->state == QUEUE_WL_ADMITTED || v->state == QUEUE_WL_EVICTING) &&
	     done >= g->total) ||
	    (v->state == QUEUE_WL_ADMITTED && g->unretriable && stopped && g->members.n))
		(void)controller_wl_change(c, ENGINE_CHANGE_FINISH, g->key);
	else if (v->state == QUEUE_WL_ADMITTED && !v->ready && ready + done >= g->total)
		(void)controller_wl_change(c, ENGINE_CHANGE_PODS_READY, g->key);
}

/* Members finished / Ready, as the core needs to hear it. */
static void observe(struct controller *c, controller_pgroup_t *g)
{
	queue_workload_view_t v;
	queue_wl_t id;
	const member_t *m;
	size_t pos = 0;
	controller_map_slot_t *s;

	if (g->set || queue_workload_find(engine_core(c->e), g->key, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
		return; /* a set's group: admitted before its Pods exist, never finished */
	if (g->group) {
		group_observe(c, g, &v);
		return;
	}
	if (!(s = controller_map_next(&g->members, &pos)))
		return;
	m = s->value; /* a plain Pod: its one member */
	if ((v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING) && m->wl->finished)
		(void)controller_wl_change(c, ENGINE_CHANGE_FINISH, g->key);
	else if (v.state == QUEUE_WL_ADMITTED && !v.ready && m->wl->ready)
		(void)controller_wl_change(c, ENGINE_CHANGE_PODS_READY, g->key);
}

static void forget_member(struct controller *c, const char *pod_uid)
{
	char *key = controller_map_del(&c->pod_group, pod_uid);
	controller_pgroup_t *g = key ? controller_map_get(&c->groups, key) : NULL;
	member_t *m;

	free(key);
	if (!g)
		return;
	m = controller_map_del(&g->members, pod_uid);
	if (m && pod_group(g) && phase_is(m->wl, "Succeeded"))
		g->done_gone++; /* done, whoever cleaned its Pod up */
	member_free(m);
	if (g->members.n == 0 && g->set && controller_sets_group_empty(c, g))
		return; /* a set's group its Pods ended (an LWS's surge group) */
	if (g->set && g->members.n)
		controller_sets_member_gone(c, g); /* a slice cut by a scale-down */
	if (pod_group(g) && engine_core(c->e)) {
		observe(c, g); /* the last member done may have gone with it */
		if (g->members.n)
			group_sync(c, g);
	}
	if (g->members.n == 0 && !g->set) {
		/* every member gone: the workload leaves the core (a preempted
		 * Pod does not come back by itself; whoever makes new ones makes
		 * a new workload) */
		(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, g->key);
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

	return workload_makes_pods(p);
}

/* The workload of Pods with key `key`, first seen through Pod o, made and
 * put in c's groups; NULL without memory. */
static controller_pgroup_t *group_new(struct controller *c, const char *key, const workload_t *o)
{
	controller_pgroup_t *g = calloc(1, sizeof(*g));

	if (!g || !(g->key = strdup(key)) || controller_map_put(&c->groups, key, g, NULL)) {
		pgroup_free(g);
		return NULL;
	}
	controller_map_init(&g->members);
	if (workload_set_member(o) && strrchr(key, '/') && strchr(key, ':')) {
		/* a set's group seen first through a Pod ("lws:ns/x/0") */
		g->set = strndup(key, (size_t)(strrchr(key, '/') - key));
		g->first = strtoll(strrchr(key, '/') + 1, NULL, 10);
	}
	g->group = o->x->pod_group != NULL;
	g->total =
	    g->group ? (int32_t)(o->x->pod_group_total < CONTROLLER_PODS_MAX ? o->x->pod_group_total
									     : CONTROLLER_PODS_MAX)
		     : 1;
	/* a plain Pod's status as the webhook (or an earlier leader) left it is
	 * not written again (a group's members are written together: each
	 * one's own text may differ) */
	if (!g->group)
		g->status_hash = controller_status_seen(o);
	return g;
}

/* Pod o, a member of a set's group, now keyed `key` (a StatefulSet's
 * slices changed under it: a scale-down, then its Pod seen again while it
 * goes). A released Pod stays where it was admitted: its quota is held
 * there until it is gone (sets.c counts it past its slice). A gated one
 * holds nothing and moves. Either way it is a member of one group only
 * (of two, the one its pod_group entry did not name kept it after it was
 * gone: its quota held for good). */
static void regroup(struct controller *c, const workload_t *o, char *key, size_t cap)
{
	const char *had = controller_map_get(&c->pod_group, o->uid);
	controller_pgroup_t *old = had ? controller_map_get(&c->groups, had) : NULL;
	member_t *m;

	if (!old || !old->set || !strcmp(had, key))
		return;
	if (!o->gated) {
		gpuq_strlcpy(key, had, cap);
		return;
	}
	m = controller_map_del(&old->members, o->uid);
	if (m && m->wl == o)
		m->wl = NULL; /* o is the caller's to keep */
	member_free(m);
	free(controller_map_del(&c->pod_group, o->uid));
	if (old->members.n == 0)
		(void)controller_sets_group_empty(c, old);
	else
		controller_sets_member_gone(c, old);
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
	/* a held parent's Pods (a Job's, a RayCluster's) are the parent's; a Pod
	 * neither gated nor released by gpuq is not gpuq's, nor one that asks
	 * for no GPU outside a pod group */
	if (parents_pod(o) || !(o->gpu || o->x->pod_group) || !o->queue ||
	    (!o->gated && !o->admitted)) {
		if (parents_pod(o))
			jobpod_seen(c, o);
		if (!m || m->wl != o)
			workload_destroy(o); /* else freed with its member */
		if (g)
			forget_member(c, uid);
		return;
	}
	key_of(c, o, key, sizeof(key));
	regroup(c, o, key, sizeof(key));
	g = controller_map_get(&c->groups, key);
	if (!g && !(g = group_new(c, key, o))) {
		workload_destroy(o);
		return;
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
	m->gen = c->pods_gen;
	m->shape = shape_of(o);
	g->unretriable = g->unretriable || (pod_group(g) && o->x->unretriable);
	if (g->set && engine_core(c->e))
		controller_sets_group_add(c, g); /* its set's counts, not its Pods' */
	else if (g->group && engine_core(c->e))
		group_sync(c, g);
	else if (engine_core(c->e))
		(void)plain_sync(c, g, o);
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
		c->pods_gen++;
		return;
	}
	if (ev->type == KUBE_EV_SYNCED) {
		size_t pos = 0;
		controller_map_slot_t *s;
		/* members the relist did not show again are gone */
		while ((s = controller_map_next(&c->pod_group, &pos))) {
			controller_pgroup_t *g = controller_map_get(&c->groups, s->value);
			member_t *m = g ? controller_map_get(&g->members, s->key) : NULL;
			if (!m || m->gen != c->pods_gen)
				forget_member(c, s->key);
		}
		pos = 0; /* so are Jobs' pods */
		while ((s = controller_map_next(&c->job_pods, &pos)))
			if (((const jobpod_t *)s->value)->gen != c->pods_gen)
				jobpod_forget(c, s->key);
		controller_nodes_pods_synced(c); /* and their use of nodes */
		c->listed[ev->res] = true;
		return;
	}
	if (ev->type == KUBE_EV_DELETED) {
		const char *uid = o ? o->uid : ev->uid;
		if (uid) {
			(void)controller_map_put(&c->pods_noted, uid, (void *)1, NULL);
			forget_member(c, uid);
			jobpod_forget(c, uid);
			controller_nodes_pod_gone(c, uid);
			workload_destroy(controller_map_del(&c->pods_early, uid));
		}
		return;
	}
	/* a Pod that does not decode is nobody's workload (its use of its
	   node, if counted, stays as it was) */
	if (!o)
		return;
	/* what it uses of its node, whoever's it is */
	controller_nodes_pod(c, o);
	ev->wl = NULL; /* ours now */
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

/* The pins of an admitted pod group's pod sets (controller_actuate_pin_terms),
 * built once per pod set for all its members. */
typedef struct {
	json_t *terms[WORKLOAD_PODSETS_MAX]; /* owned; NULL: none */
	uint32_t built;			     /* bit p: terms[p] built */
} pins_t;

static json_t *pins_of(struct controller *c, queue_wl_t id, size_t podset, pins_t *pins)
{
	if (podset >= WORKLOAD_PODSETS_MAX)
		return NULL;
	if (!(pins->built & (UINT32_C(1) << podset))) {
		pins->terms[podset] = controller_actuate_pin_terms(c, id, podset);
		pins->built |= UINT32_C(1) << podset;
	}
	return pins->terms[podset];
}

static void pins_free(pins_t *pins)
{
	for (size_t p = 0; p < WORKLOAD_PODSETS_MAX; p++)
		json_decref(pins->terms[p]);
}

/* Remove gpuq's gate from one member and mark it admitted; `placed`:
 * adding the placement of its pod set `podset`'s flavors (else it goes as
 * it is: a pod group that is not the queue's), pinned by `pins`. */
static void release_member(struct controller *c, queue_wl_t id, const workload_t *pod,
			   size_t podset, bool placed, pins_t *pins)
{
	const workload_podset_t *ps = &pod->podsets[0];
	json_t *gates = json_array(), *sel = NULL, *tols = NULL, *body, *reply = NULL;
	json_t *base_sel = controller_selector_json(ps),
	       *base_tols = controller_tolerations_json(ps);
	char path[KUBE_URL_MAX], flavors[CONTROLLER_FLAVORS_MAX] = "";
	gpuq_diag_t diag = {{0}};
	int rc = gates && base_sel && base_tols ? GPUQ_OK : GPUQ_ENOMEM;

	for (size_t i = 0; !rc && i < pod->x->n_other_gates; i++)
		json_array_append_new(gates, json_pack("{s:s}", "name", pod->x->other_gates[i]));
	if (!rc)
		rc = pod_path(pod, path, sizeof(path));
	if (!rc && placed)
		rc = controller_actuate_placement(
		    c, id, podset, false, ps->n_node_selector ? base_sel : NULL,
		    ps->n_tolerations ? base_tols : NULL, &sel, &tols, flavors, sizeof(flavors));
	json_decref(base_sel);
	json_decref(base_tols);
	if (rc) {
		json_decref(gates);
		return;
	}
	body = placed ? json_pack("{s:{s:s, s:{s:s, s:s}}, s:{s:o, s:o, s:o}}", "metadata",
				  "resourceVersion", pod->resource_version, "annotations",
				  WEBHOOK_ANNOT_ADMITTED, "true", CONTROLLER_ANNOT_FLAVORS, flavors,
				  "spec", "schedulingGates",
				  json_array_size(gates) ? gates : json_null(), "nodeSelector", sel,
				  "tolerations", tols)
		      : json_pack("{s:{s:s, s:{s:s}}, s:{s:o}}", "metadata", "resourceVersion",
				  pod->resource_version, "annotations", WEBHOOK_ANNOT_ADMITTED,
				  "true", "spec", "schedulingGates",
				  json_array_size(gates) ? gates : json_null());
	if (json_array_size(gates) == 0)
		json_decref(gates);
	if (body && placed && pod->integ->pins_affinity &&
	    ps->node_affinity < WORKLOAD_AFFINITY_REQUIRED) {
		/* placed across domains: pinned to them (a gated Pod with no
		   required node affinity of its own may take one) */
		json_t *terms = pins_of(c, id, podset, pins);

		if (terms)
			json_object_set_new(
			    json_object_get(body, "spec"), "affinity",
			    json_pack("{s:{s:{s:O}}}", "nodeAffinity",
				      "requiredDuringSchedulingIgnoredDuringExecution",
				      "nodeSelectorTerms", terms));
	}
	if (!body)
		return;
	if (kube_patch(c->client, path, KUBE_PATCH_MERGE, body, &reply, &diag) == GPUQ_OK) {
		gpuq_log(GPUQ_LOG_INFO, "controller", "released Pod %s%s", path,
			 placed ? "" : " (its pod group asks for no GPU)");
		c->step_released++;
	} else
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

/* The pod set of an admitted pod group that member m belongs to: the one
 * named by its shape; the only one of a workload whose pod set is not named
 * by a shape (a group admitted before pod sets were); -1: none. */
static int podset_of(const member_t *m, const uint64_t *shape, const bool *named, size_t n)
{
	for (size_t p = 0; p < n; p++)
		if (named[p] && shape[p] == m->shape)
			return (int)p;
	return n == 1 && !named[0] ? 0 : -1;
}

/* An admitted pod group: release each gated runnable member while its pod
 * set has room (members of that pod set let through and not Failed fill
 * it; a Succeeded one keeps its place). */
static void
group_release_plan(struct controller *c, controller_pgroup_t *g, queue_wl_t id, size_t n_podsets,
		   void (*fn)(void *, const workload_t *, size_t, controller_member_act_t),
		   void *ctx)
{
	uint64_t shape[WORKLOAD_PODSETS_MAX] = {0};
	bool named[WORKLOAD_PODSETS_MAX] = {false};
	int32_t room[WORKLOAD_PODSETS_MAX] = {0};
	size_t n = n_podsets < WORKLOAD_PODSETS_MAX ? n_podsets : WORKLOAD_PODSETS_MAX;
	size_t pos = 0;
	controller_map_slot_t *s;

	for (size_t p = 0; p < n; p++) {
		const char *name;
		char *end = NULL;

		if (queue_workload_podset(engine_core(c->e), id, p, &name, &room[p]))
			return;
		shape[p] = strtoull(name, &end, 16);
		named[p] = strlen(name) == SHAPE_NAME_MAX - 1 && end && !*end;
	}
	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;
		int p = podset_of(m, shape, named, n);

		if (p >= 0 && !m->wl->gated && runnable(m->wl))
			room[p]--;
	}
	pos = 0;
	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;
		int p = podset_of(m, shape, named, n);

		if (p < 0 || !m->wl->gated || !runnable(m->wl) || room[p] <= 0)
			continue;
		room[p]--;
		fn(ctx, m->wl, (size_t)p, CONTROLLER_MEMBER_RELEASE);
	}
}

/* A pod group the core does not hold: complete with none of its members
 * asking for a GPU, it is let through as it is. */
static void group_free_plan(controller_pgroup_t *g,
			    void (*fn)(void *, const workload_t *, size_t, controller_member_act_t),
			    void *ctx)
{
	size_t pos = 0;
	controller_map_slot_t *s;
	gspec_t sp;

	if (gspec_build(g, &sp) || sp.gpu || sp.present < g->total)
		return;
	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;

		if (m->wl->gated && runnable(m->wl))
			fn(ctx, m->wl, 0, CONTROLLER_MEMBER_FREE);
	}
}

void controller_pods_plan(struct controller *c, controller_pgroup_t *g,
			  void (*fn)(void *ctx, const workload_t *pod, size_t podset,
				     controller_member_act_t act),
			  void *ctx)
{
	queue_workload_view_t v;
	queue_wl_t id;
	size_t pos = 0;
	controller_map_slot_t *s;

	if (!engine_core(c->e))
		return;
	if (queue_workload_find(engine_core(c->e), g->key, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v)) {
		if (pod_group(g))
			group_free_plan(g, fn, ctx);
		return;
	}
	if (v.state == QUEUE_WL_ADMITTED && pod_group(g)) {
		group_release_plan(c, g, id, v.n_podsets, fn, ctx);
		return;
	}
	while ((s = controller_map_next(&g->members, &pos))) {
		const member_t *m = s->value;
		/* a set's Pod: its own pod set (an LWS's leader or workers) */
		size_t podset = workload_integration(m->wl->x->set_kind)->set == WORKLOAD_SET_GROUPS
				    ? m->wl->x->set_podset
				    : 0;

		if (v.state == QUEUE_WL_ADMITTED && m->wl->gated)
			fn(ctx, m->wl, podset, CONTROLLER_MEMBER_RELEASE);
		else if (v.state == QUEUE_WL_EVICTING && !(g->set && m->wl->gated))
			fn(ctx, m->wl, podset, CONTROLLER_MEMBER_DELETE);
	}
}

typedef struct {
	struct controller *c; /* acting */
	queue_wl_t id;	      /* the workload (QUEUE_NONE: the core has none) */
	size_t deleted;	      /* members deleted (or being deleted) */
	pins_t pins;	      /* the released members' pins, per pod set */
} act_t;

static void act(void *ctx, const workload_t *pod, size_t podset, controller_member_act_t what)
{
	act_t *a = ctx;

	if (what == CONTROLLER_MEMBER_DELETE) {
		delete_member(a->c, pod);
		a->deleted++;
	} else {
		release_member(a->c, a->id, pod, podset, what == CONTROLLER_MEMBER_RELEASE,
			       &a->pins);
	}
}

void controller_actuate_group(struct controller *c, controller_pgroup_t *g)
{
	act_t a = {.c = c, .id = QUEUE_NONE};
	queue_workload_view_t v;

	if (!engine_core(c->e))
		return;
	(void)queue_workload_find(engine_core(c->e), g->key, &a.id);
	controller_pods_plan(c, g, act, &a);
	pins_free(&a.pins);
	/* a set's evicted group: its controller makes its Pods again, gated;
	   once none runs, the quota is free and the group queues again */
	if (g->set && a.id != QUEUE_NONE &&
	    queue_workload_view(engine_core(c->e), a.id, &v) == GPUQ_OK &&
	    v.state == QUEUE_WL_EVICTING && !a.deleted &&
	    controller_wl_change(c, ENGINE_CHANGE_EVICTED, g->key) == GPUQ_OK)
		controller_status_note(c, g->key); /* queued again, or deactivated */
}

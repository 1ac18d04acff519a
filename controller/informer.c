/* controller/informer.c: one watch thread per collection, and the bounded
 * event queue they feed. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/internal.h"

/* The policy kinds' collections (the workload kinds' are their rows'). */
static const controller_res_info_t policy_res[CONTROLLER_RES_POLICY_COUNT] = {
    [CONTROLLER_RES_NAMESPACES] = {.name = "namespaces",
				   .path = "/api/v1/namespaces",
				   .optional = false,
				   .policy = true},
    [CONTROLLER_RES_LIMITRANGES] = {.name = "limitranges",
				    .path = "/api/v1/limitranges",
				    .optional = false,
				    .policy = true},
    [CONTROLLER_RES_RESOURCEQUOTAS] = {.name = "resourcequotas",
				       .path = "/api/v1/resourcequotas",
				       .optional = false,
				       .policy = true},
    [CONTROLLER_RES_PRIORITYCLASSES] = {.name = "priorityclasses",
					.path = "/apis/scheduling.k8s.io/v1/priorityclasses",
					.optional = false,
					.policy = true},
    [CONTROLLER_RES_CLAIMTEMPLATES] = {.name = "resourceclaimtemplates",
				       .path = "/apis/resource.k8s.io/v1/resourceclaimtemplates",
				       .optional = true,
				       .policy = true},
    [CONTROLLER_RES_RUNTIMECLASSES] = {.name = "runtimeclasses",
				       .path = "/apis/node.k8s.io/v1/runtimeclasses",
				       .optional = false,
				       .policy = true},
    [CONTROLLER_RES_FLAVORS] = {.name = "resourceflavors",
				.path = "/apis/gpuq.dev/v1beta1/resourceflavors",
				.optional = false,
				.policy = true},
    [CONTROLLER_RES_CLUSTERQUEUES] = {.name = "clusterqueues",
				      .path = "/apis/gpuq.dev/v1beta1/clusterqueues",
				      .optional = false,
				      .policy = true},
    [CONTROLLER_RES_LOCALQUEUES] = {.name = "localqueues",
				    .path = "/apis/gpuq.dev/v1beta1/localqueues",
				    .optional = false,
				    .policy = true},
    [CONTROLLER_RES_COHORTS] = {.name = "cohorts",
				.path = "/apis/gpuq.dev/v1beta1/cohorts",
				.optional = true,
				.policy = true},
    [CONTROLLER_RES_KUEUE_FLAVORS] = {.name = "kueue resourceflavors",
				      .path = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
				      .optional = true,
				      .policy = true},
    [CONTROLLER_RES_KUEUE_CLUSTERQUEUES] = {.name = "kueue clusterqueues",
					    .path = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
					    .optional = true,
					    .policy = true},
    [CONTROLLER_RES_KUEUE_LOCALQUEUES] = {.name = "kueue localqueues",
					  .path = "/apis/kueue.x-k8s.io/v1beta2/localqueues",
					  .optional = true,
					  .policy = true},
    [CONTROLLER_RES_KUEUE_COHORTS] = {.name = "kueue cohorts",
				      .path = "/apis/kueue.x-k8s.io/v1beta2/cohorts",
				      .optional = true,
				      .policy = true},
    [CONTROLLER_RES_TOPOLOGIES] = {.name = "topologies",
				   .path = "/apis/gpuq.dev/v1beta1/topologies",
				   .optional = true,
				   .policy = true},
    [CONTROLLER_RES_KUEUE_TOPOLOGIES] = {.name = "kueue topologies",
					 .path = "/apis/kueue.x-k8s.io/v1beta2/topologies",
					 .optional = true,
					 .policy = true},
    /* not policy: decoded on the watch thread into controller_node_t (nodes.c) */
    [CONTROLLER_RES_NODES] = {.name = "nodes",
			      .path = "/api/v1/nodes",
			      .optional = false,
			      .policy = false},
};

controller_res_info_t controller_res_at(int r)
{
	const workload_integration_t *in;

	if (r >= 0 && r < CONTROLLER_RES_WORKLOADS)
		return policy_res[r];
	in = workload_integration((workload_kind_t)(r - CONTROLLER_RES_WORKLOADS));
	return (controller_res_info_t){.name = in->resource,
				       .path = in->watch_path,
				       .optional = in->watch_optional,
				       .kind = in->kind};
}

/* ---- the event queue ---- */

int controller_equeue_init(controller_equeue_t *q)
{
	pthread_condattr_t attr;

	memset(q, 0, sizeof(*q));
	q->ring = calloc(CONTROLLER_EVENTS_MAX, sizeof(*q->ring));
	if (!q->ring)
		return GPUQ_ENOMEM;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* deadlines are monotonic */
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->nonempty, &attr);
	pthread_cond_init(&q->nonfull, &attr);
	pthread_condattr_destroy(&attr);
	return GPUQ_OK;
}

void controller_equeue_deinit(controller_equeue_t *q)
{
	if (!q->ring)
		return;
	for (size_t i = 0; i < q->n; i++)
		controller_cevent_deinit(&q->ring[(q->head + i) % CONTROLLER_EVENTS_MAX]);
	free(q->ring);
	q->ring = NULL;
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->nonempty);
	pthread_cond_destroy(&q->nonfull);
}

static void deadline_ts(int64_t mono_ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(mono_ms / 1000);
	ts->tv_nsec = (long)(mono_ms % 1000) * 1000000;
}

void controller_equeue_push(controller_equeue_t *q, const controller_cevent_t *ev,
			    const atomic_bool *stop)
{
	pthread_mutex_lock(&q->lock);
	while (q->n == CONTROLLER_EVENTS_MAX && !atomic_load(stop)) {
		struct timespec ts;

		deadline_ts(gpuq_mono_ms() + 200, &ts);
		pthread_cond_timedwait(&q->nonfull, &q->lock, &ts);
	}
	if (q->n == CONTROLLER_EVENTS_MAX) { /* stopping: drop */
		controller_cevent_t drop = *ev;

		pthread_mutex_unlock(&q->lock);
		controller_cevent_deinit(&drop);
		return;
	}
	q->ring[(q->head + q->n) % CONTROLLER_EVENTS_MAX] = *ev;
	q->n++;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

size_t controller_equeue_pop(controller_equeue_t *q, controller_cevent_t *out, size_t cap,
			     int64_t deadline_ms)
{
	struct timespec ts;
	size_t k = 0;

	deadline_ts(deadline_ms, &ts);
	pthread_mutex_lock(&q->lock);
	while (q->n == 0 && !q->kick) {
		if (pthread_cond_timedwait(&q->nonempty, &q->lock, &ts) != 0)
			break;
	}
	q->kick = false;
	while (k < cap && q->n) {
		out[k++] = q->ring[q->head];
		q->head = (q->head + 1) % CONTROLLER_EVENTS_MAX;
		q->n--;
	}
	if (k)
		pthread_cond_broadcast(&q->nonfull);
	pthread_mutex_unlock(&q->lock);
	return k;
}

void controller_equeue_kick(controller_equeue_t *q)
{
	pthread_mutex_lock(&q->lock);
	q->kick = true;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

/* ---- watch threads ---- */

json_t *controller_slim(json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");

	(void)json_object_del(meta, "managedFields");
	(void)json_object_del(json_object_get(meta, "annotations"),
			      "kubectl.kubernetes.io/last-applied-configuration");
	return obj;
}

void controller_cevent_deinit(controller_cevent_t *ev)
{
	json_decref(ev->object);
	workload_destroy(ev->wl);
	controller_node_destroy(ev->node);
	ev->node = NULL;
	free(ev->uid);
	free(ev->bad);
	free(ev->bad_rv);
	ev->object = NULL;
	ev->wl = NULL;
	ev->uid = ev->bad = ev->bad_rv = NULL;
}

/* The controller thread gets an object of its own: a copy, never a second
 * reference to the decoder's tree. The watch thread frees that tree (the
 * event, the LIST page it came in) as soon as it goes on, and jansson's
 * reference counts are decremented with release order only (jansson.h:
 * JSON_INTERNAL_DECREF), so a tree whose last reference was dropped on the
 * watch thread would be freed there without being ordered after the
 * controller thread's reads of it (ThreadSanitizer saw exactly that). The
 * copy is of the pruned object, a fraction of the parsed event. Without
 * memory for it the shared reference goes, as before. */
static json_t *hand_over(json_t *shared)
{
	json_t *own = json_deep_copy(shared);

	if (!own)
		return shared;
	json_decref(shared);
	return own;
}

void controller_informer_event(controller_res_t res, const webhook_config_t *cfg,
			       const kube_event_t *ev, controller_cevent_t *out)
{
	const workload_config_t wcfg = {cfg->gpu_resources, cfg->n_gpu_resources};
	gpuq_diag_t diag = {{0}};
	const char *uid, *rv;

	memset(out, 0, sizeof(*out));
	out->res = res;
	out->type = ev->type;
	if (ev->object) {
		out->object = hand_over(controller_slim(json_incref((json_t *)ev->object)));
		return;
	}
	if (ev->fast && res == CONTROLLER_RES_NODES) {
		/* the Node's few fields the core reads, never its JSON; a refused
		   one is named by ev's uid (its metadata.name) */
		if (controller_node_decode(ev->fast, &out->node, &diag) == GPUQ_OK)
			return;
		uid = jv_member_str(jv_get(ev->fast, "metadata"), "name");
		out->uid = uid ? strdup(uid) : NULL;
		out->bad = strdup(diag.msg[0] ? diag.msg : "a Node did not decode");
		return;
	}
	if (!ev->fast || res < CONTROLLER_RES_WORKLOADS)
		return;
	if (workload_decode(ev->fast, controller_res_at(res).kind, &wcfg, &out->wl, &diag) ==
	    GPUQ_OK)
		return;
	uid = jv_member_str(jv_get(ev->fast, "metadata"), "uid");
	rv = jv_member_str(jv_get(ev->fast, "metadata"), "resourceVersion");
	out->uid = uid ? strdup(uid) : NULL;
	out->bad_rv = rv ? strdup(rv) : NULL;
	out->bad = strdup(diag.msg[0] ? diag.msg : "cannot decode");
}

static int on_event(void *ctx, const kube_event_t *ev)
{
	controller_watcher_t *w = ctx;
	controller_cevent_t ce;
	uint64_t t = gpuq_mono_ns();

	controller_informer_event(w->res, &w->ctl->o.review_cfg, ev, &ce);
	ce.arrived_ns = t;
	controller_equeue_push(&w->ctl->events, &ce, &w->ctl->stop);
	return 0;
}

static void *watch_main(void *arg)
{
	controller_watcher_t *w = arg;
	const controller_res_info_t res = controller_res_at(w->res);
	kube_watch_opts_t o = {
	    .path = res.path,
	    .name = res.name,
	    .stop = &w->ctl->stop,
	    .fast = w->res >= CONTROLLER_RES_WORKLOADS || w->res == CONTROLLER_RES_NODES,
	    .may_be_unserved = res.optional,
	};

	kube_watch_run(w->client, &o, on_event, w);
	return NULL;
}

int controller_informer_start(struct controller *c, gpuq_diag_t *diag)
{
	int rc;

	/* every collection, served or not: an optional one the apiserver does
	 * not serve (no CRD) is announced KUBE_EV_UNSERVED by its thread, which
	 * asks again every KUBE_UNSERVED_POLL_MS and lists it once it is */
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++) {
		controller_watcher_t *w = &c->watchers[r];
		if (!controller_res_at(r).path)
			continue; /* a kind the controller does not watch */
		w->ctl = c;
		w->res = (controller_res_t)r;
		rc = kube_client_create(c->o.kube, &c->o.client, &w->client, diag);
		if (rc)
			return rc;
		/* a LIST's waits (429s) end on stop too */
		kube_client_fence(w->client, c->fence, KUBE_FENCE_STOP);
		if (pthread_create(&w->thread, NULL, watch_main, w) != 0)
			return gpuq_diag_set(diag, GPUQ_ENOMEM, "cannot start a watch thread");
		w->started = true;
	}
	return GPUQ_OK;
}

void controller_informer_stop(struct controller *c)
{
	atomic_store(&c->stop, true);
	pthread_mutex_lock(&c->events.lock);
	pthread_cond_broadcast(&c->events.nonfull);
	pthread_mutex_unlock(&c->events.lock);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++) {
		controller_watcher_t *w = &c->watchers[r];
		if (w->started)
			pthread_join(w->thread, NULL);
		w->started = false;
		kube_client_destroy(w->client);
		w->client = NULL;
	}
}

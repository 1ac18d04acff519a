/* controller/informer.c: one watch thread per collection, and the bounded
 * event queue they feed. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/internal.h"

const res_info_t controller_res[RES_COUNT] = {
    [RES_NAMESPACES] = {"namespaces", "/api/v1", "namespaces", "/api/v1/namespaces", false, true},
    [RES_LIMITRANGES] = {"limitranges", "/api/v1", "limitranges", "/api/v1/limitranges", false,
			 true},
    [RES_RESOURCEQUOTAS] = {"resourcequotas", "/api/v1", "resourcequotas", "/api/v1/resourcequotas",
			    false, true},
    [RES_PRIORITYCLASSES] = {"priorityclasses", "/apis/scheduling.k8s.io/v1", "priorityclasses",
			     "/apis/scheduling.k8s.io/v1/priorityclasses", false, true},
    [RES_CLAIMTEMPLATES] = {"resourceclaimtemplates", "/apis/resource.k8s.io/v1",
			    "resourceclaimtemplates",
			    "/apis/resource.k8s.io/v1/resourceclaimtemplates", true, true},
    [RES_FLAVORS] = {"resourceflavors", "/apis/gpuq.dev/v1beta1", "resourceflavors",
		     "/apis/gpuq.dev/v1beta1/resourceflavors", false, true},
    [RES_CLUSTERQUEUES] = {"clusterqueues", "/apis/gpuq.dev/v1beta1", "clusterqueues",
			   "/apis/gpuq.dev/v1beta1/clusterqueues", false, true},
    [RES_LOCALQUEUES] = {"localqueues", "/apis/gpuq.dev/v1beta1", "localqueues",
			 "/apis/gpuq.dev/v1beta1/localqueues", false, true},
    [RES_COHORTS] = {"cohorts", "/apis/gpuq.dev/v1beta1", "cohorts",
		     "/apis/gpuq.dev/v1beta1/cohorts", true, true},
    [RES_KUEUE_FLAVORS] = {"kueue resourceflavors", "/apis/kueue.x-k8s.io/v1beta2",
			   "resourceflavors", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors", true,
			   true},
    [RES_KUEUE_CLUSTERQUEUES] = {"kueue clusterqueues", "/apis/kueue.x-k8s.io/v1beta2",
				 "clusterqueues", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
				 true, true},
    [RES_KUEUE_LOCALQUEUES] = {"kueue localqueues", "/apis/kueue.x-k8s.io/v1beta2", "localqueues",
			       "/apis/kueue.x-k8s.io/v1beta2/localqueues", true, true},
    [RES_KUEUE_COHORTS] = {"kueue cohorts", "/apis/kueue.x-k8s.io/v1beta2", "cohorts",
			   "/apis/kueue.x-k8s.io/v1beta2/cohorts", true, true},
    [RES_JOBS] = {"jobs", "/apis/batch/v1", "jobs", "/apis/batch/v1/jobs", false, false},
    [RES_PODS] = {"pods", "/api/v1", "pods", "/api/v1/pods", false, false},
};

/* ---- the event queue ---- */

int equeue_init(equeue_t *q)
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

void equeue_deinit(equeue_t *q)
{
	if (!q->ring)
		return;
	for (size_t i = 0; i < q->n; i++)
		json_decref(q->ring[(q->head + i) % CONTROLLER_EVENTS_MAX].object);
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

void equeue_push(equeue_t *q, const cevent_t *ev, const atomic_bool *stop)
{
	pthread_mutex_lock(&q->lock);
	while (q->n == CONTROLLER_EVENTS_MAX && !atomic_load(stop)) {
		struct timespec ts;
		int64_t now;
		struct timespec mono;
		clock_gettime(CLOCK_MONOTONIC, &mono);
		now = (int64_t)mono.tv_sec * 1000 + mono.tv_nsec / 1000000;
		deadline_ts(now + 200, &ts);
		pthread_cond_timedwait(&q->nonfull, &q->lock, &ts);
	}
	if (q->n == CONTROLLER_EVENTS_MAX) { /* stopping: drop */
		pthread_mutex_unlock(&q->lock);
		json_decref(ev->object);
		return;
	}
	q->ring[(q->head + q->n) % CONTROLLER_EVENTS_MAX] = *ev;
	q->n++;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

size_t equeue_pop(equeue_t *q, cevent_t *out, size_t cap, int64_t deadline_ms)
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

void equeue_kick(equeue_t *q)
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

/* Keep only the members of object obj named in keep (NULL-terminated). */
static void keep_only(json_t *obj, const char *const *keep)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, k, v)
	{
		const char *const *p = keep;
		while (*p && strcmp(*p, k) != 0)
			p++;
		if (!*p)
			(void)json_object_del(obj, k);
	}
}

static void keep_only_each(json_t *arr, const char *const *keep)
{
	for (size_t i = 0; i < json_array_size(arr); i++)
		keep_only(json_array_get(arr, i), keep);
}

/* What the admission decoder (webhook_object_decode), actuation and status
 * read of a Job or Pod; test_controller checks that a pruned object decodes
 * as the whole one does. */
static const char *const KEEP_META[] = {"name",
					"namespace",
					"uid",
					"resourceVersion",
					"creationTimestamp",
					"labels",
					"annotations",
					"ownerReferences",
					"deletionTimestamp",
					"generateName",
					NULL};
static const char *const KEEP_POD_SPEC[] = {
    "containers", "initContainers",    "overhead",	  "resources",
    "priority",	  "priorityClassName", "nodeSelector",	  "tolerations",
    "nodeName",	  "resourceClaims",    "schedulingGates", NULL};
static const char *const KEEP_CONTAINER[] = {"name", "resources", "restartPolicy", NULL};
static const char *const KEEP_CONDITION[] = {"type", "status", NULL};
static const char *const KEEP_JOB_SPEC[] = {"suspend", "parallelism", "completions", "template",
					    NULL};
static const char *const KEEP_TEMPLATE[] = {"metadata", "spec", NULL};
static const char *const KEEP_TEMPLATE_META[] = {"annotations", NULL};
static const char *const KEEP_JOB_STATUS[] = {"conditions", "active",	   "succeeded", "failed",
					      "ready",	    "terminating", "startTime", NULL};
static const char *const KEEP_POD_STATUS[] = {"phase", "conditions", NULL};
static const char *const KEEP_TOP[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};

/* Of a labels or annotations map, only gpuq's and Kueue's keys (all the
 * rules read: the queue name, pod group, admitted, flavors, original). */
static void keep_our_keys(json_t *map)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(map, tmp, k, v)
	{
		if (strncmp(k, "gpuq.dev/", 9) != 0 && strncmp(k, "kueue.x-k8s.io/", 15) != 0)
			(void)json_object_del(map, k);
	}
}

static void prune_pod_spec(json_t *spec)
{
	keep_only(spec, KEEP_POD_SPEC);
	keep_only_each(json_object_get(spec, "containers"), KEEP_CONTAINER);
	keep_only_each(json_object_get(spec, "initContainers"), KEEP_CONTAINER);
}

json_t *controller_prune(json_t *obj)
{
	json_t *spec = json_object_get(controller_slim(obj), "spec");
	json_t *status = json_object_get(obj, "status");
	json_t *tmpl = json_object_get(spec, "template");
	json_t *meta = json_object_get(obj, "metadata");
	bool job = json_is_object(tmpl);

	keep_only(obj, KEEP_TOP);
	keep_only(meta, KEEP_META);
	keep_our_keys(json_object_get(meta, "labels"));
	keep_our_keys(json_object_get(meta, "annotations"));
	/* gpuq's own explanation: written, never read back (status_hash) */
	(void)json_object_del(json_object_get(meta, "annotations"), CONTROLLER_ANNOT_STATUS);
	if (job) {
		keep_only(spec, KEEP_JOB_SPEC);
		keep_only(tmpl, KEEP_TEMPLATE);
		keep_only(json_object_get(tmpl, "metadata"), KEEP_TEMPLATE_META);
		keep_our_keys(json_object_get(json_object_get(tmpl, "metadata"), "annotations"));
		prune_pod_spec(json_object_get(tmpl, "spec"));
	} else {
		prune_pod_spec(spec);
	}
	keep_only(status, job ? KEEP_JOB_STATUS : KEEP_POD_STATUS);
	keep_only_each(json_object_get(status, "conditions"), KEEP_CONDITION);
	return obj;
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

static int on_event(void *ctx, const kube_event_t *ev)
{
	watcher_t *w = ctx;
	cevent_t ce = {.res = w->res, .type = ev->type};

	if (ev->object && (w->res == RES_JOBS || w->res == RES_PODS))
		ce.object = hand_over(controller_prune(json_incref((json_t *)ev->object)));
	else if (ev->object)
		ce.object = hand_over(controller_slim(json_incref((json_t *)ev->object)));
	equeue_push(&w->ctl->events, &ce, &w->ctl->stop);
	return 0;
}

static void *watch_main(void *arg)
{
	watcher_t *w = arg;
	kube_watch_opts_t o = {
	    .path = controller_res[w->res].path,
	    .name = controller_res[w->res].name,
	    .stop = &w->ctl->stop,
	};

	kube_watch_run(w->client, &o, on_event, w);
	return NULL;
}

/* Whether the apiserver serves `resource` in group path gv (discovery). */
static int discover(kube_client_t *cl, const char *gv, const char *resource, bool *found,
		    gpuq_diag_t *diag)
{
	json_t *doc = NULL, *list, *r;
	size_t i;
	int rc;

	*found = false;
	rc = kube_request_json(cl, "GET", gv, NULL, NULL, &doc, diag);
	if (rc == GPUQ_ENOTFOUND)
		return GPUQ_OK;
	if (rc)
		return rc;
	list = json_object_get(doc, "resources");
	json_array_foreach(list, i, r)
	{
		const char *n = json_string_value(json_object_get(r, "name"));
		if (n && strcmp(n, resource) == 0)
			*found = true;
	}
	json_decref(doc);
	return GPUQ_OK;
}

int informer_start(struct controller *c, gpuq_diag_t *diag)
{
	int rc;

	for (int r = 0; r < RES_COUNT; r++) {
		const res_info_t *ri = &controller_res[r];
		bool found = true;
		if (ri->optional) {
			rc = discover(c->client, ri->group, ri->resource, &found, diag);
			if (rc)
				return rc;
		}
		c->watched[r] = found;
		c->listed[r] = !found;
		if (!found)
			gpuq_log(GPUQ_LOG_INFO, "controller",
				 "%s: not served by the apiserver, "
				 "not watched",
				 ri->name);
	}
	for (int r = 0; r < RES_COUNT; r++) {
		watcher_t *w = &c->watchers[r];
		if (!c->watched[r])
			continue;
		w->ctl = c;
		w->res = (res_t)r;
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

void informer_stop(struct controller *c)
{
	atomic_store(&c->stop, true);
	pthread_mutex_lock(&c->events.lock);
	pthread_cond_broadcast(&c->events.nonfull);
	pthread_mutex_unlock(&c->events.lock);
	for (int r = 0; r < RES_COUNT; r++) {
		watcher_t *w = &c->watchers[r];
		if (w->started)
			pthread_join(w->thread, NULL);
		w->started = false;
		kube_client_destroy(w->client);
		w->client = NULL;
	}
}

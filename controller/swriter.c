/* controller/swriter.c: the status writer. ClusterQueue and LocalQueue
 * status patches and Events go out on their own thread and connection, so
 * they never hold up a release: a round trip to the apiserver costs
 * milliseconds, and an Event per admission plus a dozen queue status patches
 * once a second sat between a Job's creation and its release on the
 * controller thread. The controller thread hands over and goes on. For
 * status the writer keeps only the latest body per key and skips one it has
 * already written; Events keep their order, at most SWRITER_EVENTS_MAX wait
 * (beyond that they are dropped and counted: an Event is a courtesy, the
 * Job's gpuq.dev/status annotation and the queue status carry the truth).
 *
 * Every write here is the leader's: the connection is fenced by the Lease
 * (kube_client_fence, KUBE_FENCE_WRITES). A write the fence refuses goes
 * back to wait (a status body; an Event is dropped: it told of a term that
 * is over), and the writer waits for the Lease before its next pass. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define SWRITER_EVENTS_MAX 4096 /* Events waiting to be posted */

typedef struct sevent {
	struct sevent *next;
	char *ns, *name, *uid, *type, *reason, *action, *note;
	char *api_version, *kind; /* NULL: a batch/v1 Job */
} sevent_t;

typedef struct {
	char *path;    /* the object or status subresource */
	char *body;    /* the merge patch, compact JSON */
	bool remember; /* kept in `written` to skip an unchanged body later */
} sitem_t;

/* How long the writer waits for the Lease at a time before it looks at its
 * own stop flag again (the fence's stop wakes it at once). */
#define LEASE_WAIT_MS 1000

struct swriter {
	kube_client_t *client;	     /* the writer's own connection */
	kube_fence_t *fence;	     /* the Lease (borrowed) */
	pthread_t thread;	     /* the writer */
	pthread_mutex_t mu;	     /* guards what says "under mu" */
	pthread_cond_t cv;	     /* work arrived, or stop */
	controller_map_t pending;    /* key -> sitem_t *, latest wins (under mu) */
	controller_map_t written;    /* key -> char * body last written (writer thread only) */
	sevent_t *ev_head, *ev_tail; /* Events in order (under mu) */
	size_t n_events;	     /* queued (under mu) */
	uint64_t dropped;	     /* Events dropped when full (under mu) */
	char *instance;		     /* reportingInstance of the Events */
	atomic_bool stop;	     /* the writer ends (set under mu: cv) */
	bool forget;		     /* clear `written` before the next pass (under mu) */
	bool running;		     /* the thread was started (owner's thread only) */
};

static void sitem_free(sitem_t *it)
{
	if (!it)
		return;
	free(it->path);
	free(it->body);
	free(it);
}

static void sevent_free(sevent_t *e)
{
	if (!e)
		return;
	free(e->ns);
	free(e->name);
	free(e->uid);
	free(e->type);
	free(e->reason);
	free(e->action);
	free(e->note);
	free(e->api_version);
	free(e->kind);
	free(e);
}

/* Post one Event; GPUQ_OK unless the fence refused it. */
static int post_one(struct swriter *w, const sevent_t *e)
{
	kube_ref_t ref = {.api_version = e->api_version ? e->api_version : "batch/v1",
			  .kind = e->kind ? e->kind : "Job",
			  .namespace_ = e->ns,
			  .name = e->name,
			  .uid = e->uid && *e->uid ? e->uid : NULL};
	gpuq_diag_t diag = {{0}};
	int rc = kube_event_post(w->client, &ref, e->type, e->reason, e->action, e->note,
				 w->instance, &diag);

	if (rc)
		gpuq_log(GPUQ_LOG_WARN, "controller", "event %s for %s/%s: %s", e->reason, e->ns,
			 e->name, diag.msg);
	return rc == GPUQ_EFENCED || rc == GPUQ_ESTOPPED ? rc : GPUQ_OK;
}

static void drain_map(controller_map_t *m, bool items)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(m, &pos))) {
		if (items)
			sitem_free(s->value);
		else
			free(s->value);
	}
	controller_map_deinit(m);
}

/* Write one status body. Returns GPUQ_OK when it is done with (written,
 * already written, or refused by the apiserver), or the fence's refusal:
 * then the item waits for the next pass. */
static int write_one(struct swriter *w, const char *key, sitem_t *it)
{
	const char *old = it->remember ? controller_map_get(&w->written, key) : NULL;
	gpuq_diag_t diag = {{0}};
	kube_response_t resp = {0};
	void *prev = NULL;
	int rc;

	if (old && strcmp(old, it->body) == 0)
		return GPUQ_OK;
	/* the body as submitted (compact JSON): no parse and dump again */
	rc = kube_request(w->client, "PATCH", it->path, "application/merge-patch+json", it->body,
			  strlen(it->body), &resp, &diag);
	if (rc == GPUQ_OK) {
		if (it->remember &&
		    controller_map_put(&w->written, key, it->body, &prev) == GPUQ_OK) {
			it->body = NULL; /* now the written map's */
			free(prev);
		}
	} else {
		gpuq_log(GPUQ_LOG_DEBUG, "controller", "status %s: %s", it->path, diag.msg);
	}
	kube_response_deinit(&resp);
	return rc == GPUQ_EFENCED || rc == GPUQ_ESTOPPED ? rc : GPUQ_OK;
}

/* Wait until the Lease holds (true) or the writer stops (false). */
static bool await_lease(struct swriter *w)
{
	for (;;) {
		if (atomic_load(&w->stop) || kube_fence_stopping(w->fence))
			return false;
		if (kube_fence_await(w->fence, gpuq_mono_ms() + LEASE_WAIT_MS))
			return true;
	}
}

/* Post the Events (ev, freed) and write the batch's status bodies (those
 * written are freed from it). Returns whether the fence refused one: the
 * rest of the pass is not tried then. */
static bool write_pass(struct swriter *w, sevent_t *ev, controller_map_t *batch)
{
	size_t pos = 0, n_w = 0;
	controller_map_slot_t *s;
	bool fenced = false;

	while (ev) {
		sevent_t *next = ev->next;
		if (!fenced) /* an Event of a term that ended is not posted */
			fenced = post_one(w, ev) != GPUQ_OK;
		sevent_free(ev);
		ev = next;
	}
	/* the queues' status first: per-workload annotations (thousands when a
	 * burst of Jobs arrives, at --qps) must not hold them back */
	while (!fenced && (s = controller_map_next(batch, &pos))) {
		sitem_t *it = s->value;
		if (!it->remember)
			continue;
		fenced = write_one(w, s->key, it) != GPUQ_OK;
		if (!fenced) {
			sitem_free(it);
			s->value = NULL;
		}
	}
	pos = 0;
	while (!fenced && n_w < CONTROLLER_SWRITER_WORKLOADS_PER_PASS &&
	       (s = controller_map_next(batch, &pos))) {
		sitem_t *it = s->value;
		if (!it || it->remember)
			continue;
		fenced = write_one(w, s->key, it) != GPUQ_OK;
		if (!fenced) {
			sitem_free(it);
			s->value = NULL;
			n_w++;
		}
	}
	return fenced;
}

/* What was not written waits for the next pass (the workloads beyond this
 * pass's share; everything the fence refused), unless a newer body for the
 * same key arrived meanwhile. The batch is freed. */
static void requeue(struct swriter *w, controller_map_t *batch)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	pthread_mutex_lock(&w->mu);
	while ((s = controller_map_next(batch, &pos))) {
		sitem_t *it = s->value;
		if (!it || controller_map_get(&w->pending, s->key))
			continue;
		if (controller_map_put(&w->pending, s->key, it, NULL) == GPUQ_OK)
			s->value = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	drain_map(batch, true);
}

/* Wait for work and the Lease; take the pending bodies and Events.
 * false: stop. */
static bool take(struct swriter *w, controller_map_t *batch, sevent_t **ev)
{
	uint64_t dropped;

	pthread_mutex_lock(&w->mu);
	while (!atomic_load(&w->stop) && w->pending.n == 0 && !w->ev_head)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	if (!await_lease(w))
		return false;
	pthread_mutex_lock(&w->mu);
	if (w->forget) {
		drain_map(&w->written, false);
		controller_map_init(&w->written);
		w->forget = false;
	}
	*batch = w->pending;
	controller_map_init(&w->pending);
	*ev = w->ev_head;
	w->ev_head = w->ev_tail = NULL;
	w->n_events = 0;
	dropped = w->dropped;
	w->dropped = 0;
	pthread_mutex_unlock(&w->mu);
	if (dropped)
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "%llu Events dropped: more than %d waited to be posted",
			 (unsigned long long)dropped, SWRITER_EVENTS_MAX);
	return true;
}

static void *writer_main(void *arg)
{
	struct swriter *w = arg;
	controller_map_t batch;
	sevent_t *ev;

	while (take(w, &batch, &ev)) {
		bool fenced = write_pass(w, ev, &batch);
		requeue(w, &batch);
		/* refused while the Lease may still hold (a Retry-After longer
		 * than the lease left): not straight back at the apiserver */
		if (fenced)
			(void)kube_fence_sleep(w->fence, gpuq_mono_ms() + LEASE_WAIT_MS, false);
	}
	return NULL;
}

int controller_swriter_start(const kube_config_t *cfg, const kube_client_opts_t *o,
			     const char *instance, kube_fence_t *fence, controller_swriter_t **out,
			     gpuq_diag_t *diag)
{
	struct swriter *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return GPUQ_ENOMEM;
	w->fence = fence;
	controller_map_init(&w->pending);
	controller_map_init(&w->written);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->instance = strdup(instance ? instance : "");
	rc = w->instance ? kube_client_create(cfg, o, &w->client, diag) : GPUQ_ENOMEM;
	if (!rc)
		kube_client_fence(w->client, fence, KUBE_FENCE_WRITES);
	if (!rc && pthread_create(&w->thread, NULL, writer_main, w) != 0)
		rc = gpuq_diag_set(diag, GPUQ_ENOMEM, "cannot start the status writer thread");
	if (rc) {
		controller_swriter_stop(w);
		return rc;
	}
	w->running = true;
	*out = w;
	return GPUQ_OK;
}

static int submit(controller_swriter_t *w, const char *key, const char *path, const json_t *body,
		  bool remember)
{
	sitem_t *it = calloc(1, sizeof(*it));
	void *old = NULL;
	int rc = GPUQ_ENOMEM;

	if (!it)
		return GPUQ_ENOMEM;
	it->remember = remember;
	it->path = strdup(path);
	it->body = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
	if (it->path && it->body) {
		pthread_mutex_lock(&w->mu);
		rc = controller_map_put(&w->pending, key, it, &old);
		if (rc == GPUQ_OK)
			pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
	}
	if (rc) {
		sitem_free(it);
		return rc;
	}
	sitem_free(old);
	return GPUQ_OK;
}

int controller_swriter_submit(controller_swriter_t *w, const char *key, const char *path,
			      const json_t *body)
{
	return submit(w, key, path, body, true);
}

int controller_swriter_submit_once(controller_swriter_t *w, const char *key, const char *path,
				   const json_t *body)
{
	return submit(w, key, path, body, false);
}

size_t controller_swriter_backlog(controller_swriter_t *w)
{
	size_t n;

	pthread_mutex_lock(&w->mu);
	n = w->pending.n;
	pthread_mutex_unlock(&w->mu);
	return n;
}

static int event_queue(controller_swriter_t *w, const char *api_version, const char *kind,
		       const char *ns, const char *name, const char *uid, const char *type,
		       const char *reason, const char *action, const char *note)
{
	sevent_t *e = calloc(1, sizeof(*e));

	if (!e)
		return GPUQ_ENOMEM;
	e->ns = strdup(ns);
	e->name = strdup(name);
	e->uid = strdup(uid ? uid : "");
	e->type = strdup(type);
	e->reason = strdup(reason);
	e->action = strdup(action);
	e->note = strdup(note);
	e->api_version = api_version ? strdup(api_version) : NULL;
	e->kind = kind ? strdup(kind) : NULL;
	if (!e->ns || !e->name || !e->uid || !e->type || !e->reason || !e->action || !e->note ||
	    (api_version && !e->api_version) || (kind && !e->kind)) {
		sevent_free(e);
		return GPUQ_ENOMEM;
	}
	pthread_mutex_lock(&w->mu);
	if (w->n_events >= SWRITER_EVENTS_MAX) {
		w->dropped++;
		pthread_mutex_unlock(&w->mu);
		sevent_free(e);
		return GPUQ_ELIMIT;
	}
	if (w->ev_tail)
		w->ev_tail->next = e;
	else
		w->ev_head = e;
	w->ev_tail = e;
	w->n_events++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return GPUQ_OK;
}

int controller_swriter_event(controller_swriter_t *w, const char *ns, const char *name,
			     const char *uid, const char *type, const char *reason,
			     const char *action, const char *note)
{
	return event_queue(w, NULL, NULL, ns, name, uid, type, reason, action, note);
}

int controller_swriter_event_ref(controller_swriter_t *w, const char *api_version, const char *kind,
				 const char *ns, const char *name, const char *uid,
				 const char *type, const char *reason, const char *action,
				 const char *note)
{
	return event_queue(w, api_version, kind, ns, name, uid, type, reason, action, note);
}

void controller_swriter_forget(controller_swriter_t *w)
{
	pthread_mutex_lock(&w->mu);
	w->forget = true;
	pthread_mutex_unlock(&w->mu);
}

void controller_swriter_stop(controller_swriter_t *w)
{
	if (!w)
		return;
	if (w->running) {
		pthread_mutex_lock(&w->mu);
		atomic_store(&w->stop, true);
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
	}
	drain_map(&w->pending, true);
	drain_map(&w->written, false);
	while (w->ev_head) {
		sevent_t *next = w->ev_head->next;
		sevent_free(w->ev_head);
		w->ev_head = next;
	}
	free(w->instance);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	kube_client_destroy(w->client);
	free(w);
}

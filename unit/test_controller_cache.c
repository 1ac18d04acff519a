/* The controller's caches, without an apiserver: the string map every cache
 * is built on, the bounded event queue between the watch threads and the
 * controller thread (order, batches, backpressure, shutdown), what the
 * policy objects are slimmed to (workload objects come decoded: unit/
 * test_controller.c), the cached Job (its decoded workload), the policy
 * objects' cache (a change only the status makes is no new policy; a relist
 * forgets what it did not show again), and Jobs into the core (which enter,
 * which stay out, deletion and relist). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "unit/controller_fixtures.h"

/* ---- map.c ---- */

static void map_put_get_replace_del(void **state)
{
	controller_map_t m;
	int a = 1, b = 2;
	void *old = &a;

	(void)state;
	controller_map_init(&m);
	assert_null(controller_map_get(&m, "x"));
	assert_null(controller_map_del(&m, "x"));
	assert_int_equal(controller_map_put(&m, "x", &a, &old), GPUQ_OK);
	assert_null(old);
	assert_ptr_equal(controller_map_get(&m, "x"), &a);
	assert_int_equal(controller_map_put(&m, "x", &b, &old), GPUQ_OK);
	assert_ptr_equal(old, &a);
	assert_ptr_equal(controller_map_get(&m, "x"), &b);
	assert_int_equal(m.n, 1);
	assert_ptr_equal(controller_map_del(&m, "x"), &b);
	assert_null(controller_map_get(&m, "x"));
	assert_int_equal(m.n, 0);
	controller_map_deinit(&m);
}

/* Many keys through growth, every other one deleted, the rest still found
 * past the tombstones, the deleted ones gone and insertable again. */
static void map_keeps_every_key_through_growth_and_deletes(void **state)
{
	enum { N = 5000 };
	static int vals[N];
	controller_map_t m;
	char key[32];

	(void)state;
	controller_map_init(&m);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		assert_int_equal(controller_map_put(&m, key, &vals[i], NULL), GPUQ_OK);
	}
	assert_int_equal(m.n, N);
	assert_true(m.cap >= N + N / 3); /* load factor at most 3/4 */
	for (int i = 0; i < N; i += 2) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		assert_ptr_equal(controller_map_del(&m, key), &vals[i]);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		if (i % 2)
			assert_ptr_equal(controller_map_get(&m, key), &vals[i]);
		else
			assert_null(controller_map_get(&m, key));
	}
	assert_int_equal(m.n, N / 2);
	for (int i = 0; i < N; i += 2) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		assert_int_equal(controller_map_put(&m, key, &vals[i], NULL), GPUQ_OK);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "ns/job-%d", i);
		assert_ptr_equal(controller_map_get(&m, key), &vals[i]);
	}
	controller_map_deinit(&m);
}

/* Borrowed keys (the jobs map: the key is the uid inside the cached Job)
 * are neither copied nor freed, through growth, deletion and deinit, beside
 * owned keys; the keys here are static, so a free of one aborts. */
static void map_borrowed_keys_stay_the_callers(void **state)
{
	enum { N = 300 };
	static char keys[N][16];
	static int vals[N];
	controller_map_t m;
	controller_map_slot_t *s;
	size_t pos = 0, n_borrowed = 0;
	char own[16];

	(void)state;
	controller_map_init(&m);
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "uid-%d", i);
		assert_int_equal(controller_map_put_borrowed(&m, keys[i], &vals[i], NULL), GPUQ_OK);
		snprintf(own, sizeof(own), "own-%d", i);
		assert_int_equal(controller_map_put(&m, own, &vals[i], NULL), GPUQ_OK);
	}
	while ((s = controller_map_next(&m, &pos))) {
		int i = (int)strtol(strchr(s->key, '-') + 1, NULL, 10);

		assert_ptr_equal(s->value, &vals[i]);
		if (s->key[0] == 'u') {
			assert_ptr_equal(s->key, keys[i]); /* not a copy */
			n_borrowed++;
		} else {
			assert_true(s->key < keys[0] || s->key > keys[N - 1]);
		}
	}
	assert_int_equal(n_borrowed, N);
	for (int i = 0; i < N; i += 2)
		assert_ptr_equal(controller_map_del(&m, keys[i]), &vals[i]);
	/* a slot a borrowed key left takes an owned one */
	assert_int_equal(controller_map_put(&m, "uid-0", &vals[1], NULL), GPUQ_OK);
	assert_ptr_equal(controller_map_get(&m, "uid-0"), &vals[1]);
	assert_ptr_equal(controller_map_get(&m, "uid-1"), &vals[1]);
	assert_null(controller_map_get(&m, "uid-2"));
	controller_map_deinit(&m);
}

/* Churn (a Job made and deleted, over and over, as a busy cluster does)
 * does not grow the table: tombstones are swept by a rebuild at the same
 * size. */
static void map_churn_keeps_its_size(void **state)
{
	controller_map_t m;
	char key[32];
	int v = 0;

	(void)state;
	controller_map_init(&m);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "live-%d", i);
		assert_int_equal(controller_map_put(&m, key, &v, NULL), GPUQ_OK);
	}
	for (int i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "churn-%d", i);
		assert_int_equal(controller_map_put(&m, key, &v, NULL), GPUQ_OK);
		assert_ptr_equal(controller_map_del(&m, key), &v);
	}
	assert_int_equal(m.n, 10);
	assert_true(m.cap <= 64);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "live-%d", i);
		assert_ptr_equal(controller_map_get(&m, key), &v);
	}
	controller_map_deinit(&m);
}

/* The jobs map of 100,000 queued Jobs (issue 22's memory target) takes
 * 131,072 slots (7/8 full at most), not 262,144 (3/4: 2 MB more). */
static void map_holds_100000_keys_in_131072_slots(void **state)
{
	controller_map_t m;
	char key[32];
	int v = 0;

	(void)state;
	controller_map_init(&m);
	for (int i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "job-%d", i);
		assert_int_equal(controller_map_put(&m, key, &v, NULL), GPUQ_OK);
	}
	assert_int_equal(m.n, 100000);
	assert_int_equal(m.cap, 131072);
	snprintf(key, sizeof(key), "job-%d", 99999);
	assert_ptr_equal(controller_map_get(&m, key), &v);
	controller_map_deinit(&m);
}

/* controller_map_next visits every live key once, tombstones never. */
static void map_next_visits_live_keys_once(void **state)
{
	controller_map_t m;
	char key[32];
	int seen[200] = {0}, v = 0;
	size_t pos = 0, n = 0;
	controller_map_slot_t *s;

	(void)state;
	controller_map_init(&m);
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "%d", i);
		assert_int_equal(controller_map_put(&m, key, &v, NULL), GPUQ_OK);
	}
	for (int i = 0; i < 200; i += 3) {
		snprintf(key, sizeof(key), "%d", i);
		controller_map_del(&m, key);
	}
	while ((s = controller_map_next(&m, &pos))) {
		long i = strtol(s->key, NULL, 10);
		assert_true(i >= 0 && i < 200 && i % 3 != 0);
		seen[i]++;
		n++;
	}
	assert_int_equal(n, m.n);
	for (int i = 0; i < 200; i++)
		assert_int_equal(seen[i], i % 3 ? 1 : 0);
	controller_map_deinit(&m);
}

/* FNV-1a 64 (published vectors), the same over bytes and over a string. */
static void map_hash_is_fnv1a(void **state)
{
	(void)state;
	assert_true(controller_map_hash("") == 0xcbf29ce484222325ull);
	assert_true(controller_map_hash("a") == 0xaf63dc4c8601ec8cull);
	assert_true(controller_map_hash("foobar") == 0x85944171f73967e8ull);
	assert_true(controller_map_hash_bytes("foobar", 6) == controller_map_hash("foobar"));
	assert_true(controller_map_hash_bytes("a\0b", 3) != controller_map_hash("a"));
}

/* ---- informer.c: the event queue ---- */

static json_t *numbered(int i)
{
	json_t *o = json_pack("{s:i}", "i", i);

	assert_non_null(o);
	return o;
}

static int number_of(const controller_cevent_t *ev)
{
	return (int)json_integer_value(json_object_get(ev->object, "i"));
}

static int64_t mono_ms_in(int64_t ms)
{
	return gpuq_mono_ms() + ms;
}

/* Events come out in the order they went in, at most cap at a time; an
 * empty queue gives 0 at its deadline. */
static void equeue_keeps_order_and_batches(void **state)
{
	struct controller *c = calloc(1, sizeof(*c));
	controller_equeue_t q;
	controller_cevent_t out[4];

	(void)state;
	assert_non_null(c);
	assert_int_equal(controller_equeue_init(&q), GPUQ_OK);
	for (int i = 0; i < 10; i++) {
		controller_cevent_t ev = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_JOB),
					  .type = KUBE_EV_ADDED,
					  .object = numbered(i)};
		controller_equeue_push(&q, &ev, &c->stop);
	}
	for (int want = 0; want < 10;) {
		size_t n = controller_equeue_pop(&q, out, 4, mono_ms_in(10000));
		assert_true(n == (size_t)(10 - want < 4 ? 10 - want : 4));
		for (size_t i = 0; i < n; i++, want++) {
			assert_int_equal(number_of(&out[i]), want);
			assert_int_equal(out[i].res, CONTROLLER_RES_OF(WORKLOAD_KIND_JOB));
			json_decref(out[i].object);
		}
	}
	assert_int_equal(controller_equeue_pop(&q, out, 4, mono_ms_in(-1)), 0);
	controller_equeue_deinit(&q);
	free(c);
}

typedef struct {
	controller_equeue_t *q;
	struct controller *c;
	int first;	  /* number of the first event pushed */
	int n;		  /* events pushed */
	atomic_int tid;	  /* the pushing thread's id, once it runs */
	atomic_bool done; /* every push returned */
} pusher_t;

static void *pusher(void *arg)
{
	pusher_t *p = arg;

	atomic_store(&p->tid, (int)gettid());
	for (int i = 0; i < p->n; i++) {
		controller_cevent_t ev = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_POD),
					  .type = KUBE_EV_MODIFIED,
					  .object = numbered(p->first + i)};
		controller_equeue_push(p->q, &ev, &p->c->stop);
	}
	atomic_store(&p->done, true);
	return NULL;
}

/* The scheduler's state of thread tid ('R', 'S', ...), '?' when unknown. */
static char task_state(int tid)
{
	char path[64], buf[256], *close;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	close = strrchr(buf, ')'); /* "tid (comm) S ..." */
	return close && close[1] == ' ' ? close[2] : '?';
}

/* Backpressure: with the queue full (CONTROLLER_EVENTS_MAX), a watch
 * thread's push waits for room (asleep, not done) instead of dropping or
 * overwriting; once the controller takes events every one arrives, once,
 * in order, and the queue never holds more than its cap. */
static void equeue_full_queue_makes_the_watch_wait(void **state)
{
	struct controller *c = calloc(1, sizeof(*c));
	controller_equeue_t q;
	pthread_t t;
	pusher_t p = {0};
	controller_cevent_t *out = calloc(CONTROLLER_EVENTS_MAX, sizeof(*out));
	int want = 0, total = CONTROLLER_EVENTS_MAX + 100;

	(void)state;
	assert_non_null(c);
	assert_non_null(out);
	assert_int_equal(controller_equeue_init(&q), GPUQ_OK);
	for (int i = 0; i < CONTROLLER_EVENTS_MAX; i++) {
		controller_cevent_t ev = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_POD),
					  .type = KUBE_EV_MODIFIED,
					  .object = numbered(i)};
		controller_equeue_push(&q, &ev, &c->stop);
	}
	p.q = &q;
	p.c = c;
	p.first = CONTROLLER_EVENTS_MAX;
	p.n = 100;
	assert_int_equal(pthread_create(&t, NULL, pusher, &p), 0);
	/* until the watch thread is done (wrong) or asleep waiting for room */
	while (!atomic_load(&p.done) &&
	       (!atomic_load(&p.tid) || task_state(atomic_load(&p.tid)) != 'S'))
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	assert_false(atomic_load(&p.done));
	while (want < total) {
		size_t n = controller_equeue_pop(&q, out, 64, mono_ms_in(30000));
		assert_true(n > 0);
		pthread_mutex_lock(&q.lock);
		assert_true(q.n <= CONTROLLER_EVENTS_MAX);
		pthread_mutex_unlock(&q.lock);
		for (size_t i = 0; i < n; i++, want++) {
			assert_int_equal(number_of(&out[i]), want);
			json_decref(out[i].object);
		}
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(controller_equeue_pop(&q, out, 64, mono_ms_in(-1)), 0);
	controller_equeue_deinit(&q);
	free(out);
	free(c);
}

/* Stopping: a push into a full queue gives up (the object is released, not
 * leaked); deinit releases what is still queued; a kick wakes a waiting pop
 * without an event. */
static void equeue_stop_drops_and_deinit_releases(void **state)
{
	struct controller *c = calloc(1, sizeof(*c));
	controller_equeue_t q;
	json_t *last = json_object(), *kept = json_object();
	controller_cevent_t out[1];

	(void)state;
	assert_non_null(c);
	assert_int_equal(controller_equeue_init(&q), GPUQ_OK);
	for (int i = 0; i < CONTROLLER_EVENTS_MAX; i++) {
		controller_cevent_t ev = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_JOB),
					  .type = KUBE_EV_ADDED,
					  .object = i == 0 ? json_incref(kept) : numbered(i)};
		controller_equeue_push(&q, &ev, &c->stop);
	}
	c->stop = 1;
	json_incref(last);
	controller_equeue_push(&q,
			       &(controller_cevent_t){.res = CONTROLLER_RES_OF(WORKLOAD_KIND_JOB),
						      .type = KUBE_EV_ADDED,
						      .object = last},
			       &c->stop);
	assert_int_equal(last->refcount, 1); /* dropped: the queue's reference went */
	assert_int_equal(q.n, CONTROLLER_EVENTS_MAX);
	assert_int_equal(kept->refcount, 2);
	controller_equeue_deinit(&q);
	assert_int_equal(kept->refcount, 1); /* released by deinit */
	json_decref(last);
	json_decref(kept);

	assert_int_equal(controller_equeue_init(&q), GPUQ_OK);
	controller_equeue_kick(&q);
	assert_int_equal(controller_equeue_pop(&q, out, 1, mono_ms_in(60000)), 0);
	assert_false(q.kick);
	controller_equeue_deinit(&q);
	free(c);
}

/* ---- informer.c: slim ---- */

static void slim_drops_only_managed_fields_and_last_applied(void **state)
{
	json_t *obj = json_pack("{s:{s:s, s:[{s:s}], s:{s:s, s:s}, s:{s:s}}, s:{s:i}}", "metadata",
				"name", "q", "managedFields", "manager", "kubectl", "annotations",
				"kubectl.kubernetes.io/last-applied-configuration", "{...}",
				"team.io/owner", "alice", "labels", "app", "x", "spec", "n", 1);
	char *got;

	(void)state;
	assert_non_null(obj);
	got = ctl_dump(controller_slim(obj));
	assert_string_equal(got, "{\"metadata\":{\"annotations\":{\"team.io/owner\":\"alice\"},"
				 "\"labels\":{\"app\":\"x\"},\"name\":\"q\"},\"spec\":{\"n\":1}}");
	free(got);
	json_decref(obj);
}

/* ---- jobs.c: the cached Job ---- */

/* The cached Job is its decoded workload: its names point into it, its
 * suspend and admitted marks follow each new decode, and a new decode
 * replaces the former (freed). */
static void job_set_caches_the_object(void **state)
{
	controller_job_t j = {0};
	json_t *obj = ctl_job("team-a", "j1", 2, 1, true, "default");
	controller_cevent_t ev =
	    ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_ADDED, obj);

	(void)state;
	controller_job_set(&j, ev.wl);
	ev.wl = NULL;
	assert_string_equal(controller_job_ns(&j), "team-a");
	assert_string_equal(controller_job_name(&j), "j1");
	assert_ptr_equal(controller_job_name(&j), j.wl->name);
	assert_true(j.suspended);
	assert_false(j.admitted);
	assert_int_equal(j.wl->pods, 1);
	/* released: admitted annotation, not suspended */
	json_object_set_new(json_object_get(obj, "spec"), "suspend", json_false());
	json_object_set_new(json_object_get(obj, "metadata"), "annotations",
			    json_pack("{s:s}", WEBHOOK_ANNOT_ADMITTED, "true"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	controller_job_set(&j, ev.wl);
	assert_false(j.suspended);
	assert_true(j.admitted);
	assert_string_equal(controller_job_ns(&j), "team-a");
	workload_destroy(j.wl);
	json_decref(obj);
}

/* The jobs map's key of a cached Job (its slot's key pointer). */
static const char *job_key(const struct controller *c, const controller_job_t *j)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&c->jobs, &pos)))
		if (s->value == j)
			return s->key;
	return NULL;
}

/* A cached Job and the jobs map borrow its workload's uid, not a copy: each
 * new object moves both before the former object is freed; an object of
 * another uid under it (a PATCH reply once the name was reused) leaves the
 * Job its own copy of the key's uid; a first object that does not decode
 * too, until one does. */
static void job_take_moves_the_key_with_each_object(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j1", 1, 1, true, "default");
	json_t *meta = json_object_get(obj, "metadata");
	controller_cevent_t ev;
	controller_job_t *j;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, obj);
	j = controller_job(c, "j1");
	assert_non_null(j);
	assert_false(j->uid_owned);
	assert_ptr_equal(j->uid, j->wl->uid);
	assert_ptr_equal(job_key(c, j), j->wl->uid);
	/* a new object: uid and key move with it */
	json_object_set_new(meta, "resourceVersion", json_string("8"));
	ctl_job_event(c, KUBE_EV_MODIFIED, obj);
	assert_ptr_equal(controller_job(c, "j1"), j);
	assert_string_equal(j->wl->resource_version, "8");
	assert_ptr_equal(j->uid, j->wl->uid);
	assert_ptr_equal(job_key(c, j), j->wl->uid);
	/* another uid under it: cached, the key's text its own copy */
	json_object_set_new(meta, "uid", json_string("j1-new"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	controller_job_take(c, j, ev.wl);
	assert_true(j->uid_owned);
	assert_string_equal(j->uid, "j1");
	assert_string_equal(j->wl->uid, "j1-new");
	assert_ptr_equal(job_key(c, j), j->uid);
	assert_ptr_equal(controller_job(c, "j1"), j);
	/* its own uid again: borrowed again, the copy freed */
	json_object_set_new(meta, "uid", json_string("j1"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	controller_job_take(c, j, ev.wl);
	assert_false(j->uid_owned);
	assert_ptr_equal(job_key(c, j), j->wl->uid);
	assert_ptr_equal(controller_job(c, "j1"), j);
	/* a first object that does not decode: its own copy until one does */
	ev = (controller_cevent_t){.res = CONTROLLER_RES_OF(WORKLOAD_KIND_JOB),
				   .type = KUBE_EV_ADDED};
	ev.uid = strdup("j2");
	ev.bad = strdup("metadata.name: Required value");
	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
	j = controller_job(c, "j2");
	assert_non_null(j);
	assert_null(j->wl);
	assert_true(j->uid_owned);
	assert_ptr_equal(job_key(c, j), j->uid);
	json_decref(obj);
	obj = ctl_job("team-a", "j2", 1, 1, true, "default");
	ctl_job_event(c, KUBE_EV_MODIFIED, obj);
	assert_ptr_equal(controller_job(c, "j2"), j);
	assert_false(j->uid_owned);
	assert_ptr_equal(j->uid, j->wl->uid);
	assert_ptr_equal(job_key(c, j), j->wl->uid);
	json_decref(obj);
	ctl_free(c);
}

static void obj_key_names_namespaced_and_cluster_objects(void **state)
{
	json_t *ns = json_pack("{s:{s:s, s:s}}", "metadata", "namespace", "team-a", "name", "lq");
	json_t *cl = json_pack("{s:{s:s}}", "metadata", "name", "cq");
	json_t *none = json_pack("{s:{}}", "metadata");
	char key[64];

	(void)state;
	controller_obj_key(ns, key, sizeof(key));
	assert_string_equal(key, "team-a/lq");
	controller_obj_key(cl, key, sizeof(key));
	assert_string_equal(key, "cq");
	controller_obj_key(none, key, sizeof(key));
	assert_string_equal(key, "");
	json_decref(ns);
	json_decref(cl);
	json_decref(none);
}

/* ---- snapshot.c: the policy objects' cache ---- */

static void policy_event(struct controller *c, kube_event_type_t type, json_t *obj)
{
	controller_cevent_t ev = {.res = CONTROLLER_RES_CLUSTERQUEUES, .type = type, .object = obj};

	controller_snapshot_apply(c, &ev);
}

static json_t *cq_obj(const char *name, int gpus, const char *rv, int pending)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:i}, s:{s:i}, s:{s:i}}", "apiVersion",
			      "gpuq.dev/v1beta1", "kind", "ClusterQueue", "metadata", "name", name,
			      "resourceVersion", rv, "generation", (int)strtol(rv, NULL, 10),
			      "spec", "gpus", gpus, "status", "pendingWorkloads", pending);

	assert_non_null(o);
	return o;
}

/* Only what the policy reads makes a new snapshot: gpuq's own status writes
 * and resourceVersion bumps do not; a spec change and a deletion do; a
 * relist forgets what it did not show again. */
static void policy_cache_rebuilds_on_what_the_policy_reads(void **state)
{
	struct controller *c = ctl_new();
	json_t *o;

	(void)state;
	policy_event(c, KUBE_EV_RESET, NULL);
	policy_event(c, KUBE_EV_ADDED, o = cq_obj("a", 8, "1", 0));
	json_decref(o);
	policy_event(c, KUBE_EV_ADDED, o = cq_obj("b", 4, "2", 0));
	json_decref(o);
	policy_event(c, KUBE_EV_SYNCED, NULL);
	assert_true(c->listed[CONTROLLER_RES_CLUSTERQUEUES]);
	assert_true(c->policy_dirty);
	assert_int_equal(c->objs[CONTROLLER_RES_CLUSTERQUEUES].n, 2);

	c->policy_dirty = false;
	policy_event(c, KUBE_EV_MODIFIED, o = cq_obj("a", 8, "9", 5)); /* status only */
	json_decref(o);
	assert_false(c->policy_dirty);
	policy_event(c, KUBE_EV_MODIFIED, o = cq_obj("a", 16, "10", 5)); /* spec */
	json_decref(o);
	assert_true(c->policy_dirty);

	/* a relist showing a unchanged and not b */
	c->policy_dirty = false;
	policy_event(c, KUBE_EV_RESET, NULL);
	policy_event(c, KUBE_EV_ADDED, o = cq_obj("a", 16, "11", 6));
	json_decref(o);
	assert_false(c->policy_dirty);
	policy_event(c, KUBE_EV_SYNCED, NULL);
	assert_true(c->policy_dirty);
	assert_non_null(controller_map_get(&c->objs[CONTROLLER_RES_CLUSTERQUEUES], "a"));
	assert_null(controller_map_get(&c->objs[CONTROLLER_RES_CLUSTERQUEUES], "b"));

	c->policy_dirty = false;
	policy_event(c, KUBE_EV_DELETED, o = cq_obj("a", 16, "12", 0));
	json_decref(o);
	assert_true(c->policy_dirty);
	assert_int_equal(c->objs[CONTROLLER_RES_CLUSTERQUEUES].n, 0);
	ctl_free(c);
}

/* CTL_POLICY's objects as watch events (JSON), in its collections, and a
 * LocalQueue default in team-b too; the CQ with `gpus` GPUs selecting the
 * namespaces labelled `team: selects`, team-b labelled `team: b_label`. */
static void ctl_policy_events(struct controller *c, int gpus, const char *b_label,
			      const char *selects, kube_event_type_t type)
{
	char cq[600], nsb[200];
	const struct {
		controller_res_t res;
		const char *json;
	} objs[] = {
	    {CONTROLLER_RES_NAMESPACES,
	     "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", "
	     "\"metadata\": {\"name\": \"team-a\", \"labels\": {\"team\": "
	     "\"a\"}}}"},
	    {CONTROLLER_RES_NAMESPACES, nsb},
	    {CONTROLLER_RES_FLAVORS, "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": "
				     "\"ResourceFlavor\", \"metadata\": {\"name\": \"h100\"}, "
				     "\"spec\": {\"nodeLabels\": {\"nvidia.com/gpu.product\": "
				     "\"H100\"}, \"tolerations\": [{\"key\": \"nvidia.com/gpu\", "
				     "\"operator\": \"Exists\", \"effect\": \"NoSchedule\"}]}}"},
	    {CONTROLLER_RES_CLUSTERQUEUES, cq},
	    {CONTROLLER_RES_LOCALQUEUES,
	     "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": \"LocalQueue\", \"metadata\": "
	     "{\"namespace\": \"team-a\", \"name\": \"default\"}, \"spec\": {\"clusterQueue\": "
	     "\"cq\"}}"},
	    {CONTROLLER_RES_LOCALQUEUES,
	     "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": \"LocalQueue\", \"metadata\": "
	     "{\"namespace\": \"team-b\", \"name\": \"default\"}, \"spec\": {\"clusterQueue\": "
	     "\"cq\"}}"},
	};

	snprintf(nsb, sizeof(nsb),
		 "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": "
		 "\"team-b\", \"labels\": {\"team\": \"%s\"}}}",
		 b_label);
	snprintf(cq, sizeof(cq),
		 "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": \"ClusterQueue\", "
		 "\"metadata\": {\"name\": \"cq\"}, \"spec\": {\"namespaceSelector\": "
		 "{\"matchLabels\": {\"team\": \"%s\"}}, \"resourceGroups\": "
		 "[{\"coveredResources\": [\"nvidia.com/gpu\"], \"flavors\": [{\"name\": "
		 "\"h100\", \"resources\": [{\"name\": \"nvidia.com/gpu\", \"nominalQuota\": "
		 "%d}]}]}]}}",
		 selects, gpus);
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		json_t *o = json_loads(objs[i].json, 0, NULL);
		controller_cevent_t ev = {.res = objs[i].res, .type = type, .object = o};
		assert_non_null(o);
		controller_snapshot_apply(c, &ev);
		json_decref(o);
	}
}

/* Forget what was touched (what the loop does after acting). */
static void ctl_untouch(struct controller *c)
{
	for (size_t i = 0; i < c->n_touched; i++) {
		controller_job_t *j = controller_job(c, c->touched[i]);
		if (j)
			j->touched = false;
		free(c->touched[i]);
	}
	c->n_touched = 0;
}

/* A policy change that keeps the core's shape is taken by the live core,
 * and only the workloads it can reach are resolved again: a quota change
 * none (the core still holds them); a label that makes team-b selected
 * only team-b's Job, which now enters the core; a label no selector reads
 * none; a namespaceSelector that selects neither namespace any more both,
 * and both leave the queue. */
static void policy_change_in_place_resolves_what_it_reaches(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 2, 1, true, "default");
	json_t *b = ctl_job("team-b", "b", 2, 1, true, "default");
	const queue_t *core = engine_core(c->e);
	queue_quota_view_t qv;
	uint32_t gpu, h100;
	uint64_t gen;
	json_t *ns;
	controller_cevent_t ev = {.res = CONTROLLER_RES_NAMESPACES, .type = KUBE_EV_MODIFIED};

	(void)state;
	assert_int_equal(qmetrics_create(&c->metrics), GPUQ_OK);
	ctl_policy_events(c, 8, "b", "a", KUBE_EV_ADDED);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_ptr_not_equal(engine_core(c->e),
			     core); /* a LocalQueue more than CTL_POLICY: rebuilt */
	core = engine_core(c->e);
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_state(c, "b"), -1); /* team-b: no ClusterQueue selects it */
	ctl_untouch(c);

	ctl_policy_events(c, 16, "b", "a", KUBE_EV_MODIFIED);
	assert_true(c->policy_dirty);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_ptr_equal(engine_core(c->e), core);
	assert_int_equal(queue_resource_find(engine_core(c->e), "nvidia.com/gpu", &gpu), GPUQ_OK);
	assert_int_equal(queue_flavor_find(engine_core(c->e), "h100", &h100), GPUQ_OK);
	assert_int_equal(queue_cq_quota(engine_core(c->e), 0, h100, gpu, &qv), GPUQ_OK);
	assert_int_equal(qv.nominal, 16);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_PENDING);
	assert_int_equal(c->n_touched, 0); /* nobody resolved again */

	ctl_policy_events(c, 16, "a", "a", KUBE_EV_MODIFIED); /* team-b now selected */
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_ptr_equal(engine_core(c->e), core);
	assert_int_equal(ctl_state(c, "b"), QUEUE_WL_PENDING);
	assert_int_equal(c->n_touched, 1);
	assert_string_equal(c->touched[0], "b");
	ctl_untouch(c);

	/* a label no selector reads: a new policy, nobody resolved again */
	gen = c->policy_generation;
	ns = json_loads("{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": "
			"{\"name\": \"team-b\", \"labels\": {\"team\": \"a\", \"cost\": "
			"\"x\"}}}",
			0, NULL);
	ev.object = ns;
	controller_snapshot_apply(c, &ev);
	json_decref(ns);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_int_equal(c->policy_generation, gen + 1);
	assert_ptr_equal(engine_core(c->e), core);
	assert_int_equal(c->n_touched, 0);

	/* the ClusterQueue now selects neither namespace: both are judged again */
	ctl_policy_events(c, 16, "a", "x", KUBE_EV_MODIFIED);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_ptr_equal(engine_core(c->e), core);
	assert_int_equal(c->n_touched, 2);
	/* and leave the queue: no ClusterQueue would admit them now (issue 31) */
	assert_int_equal(ctl_state(c, "a"), -1);
	assert_int_equal(ctl_state(c, "b"), -1);
	json_decref(a);
	json_decref(b);
	qmetrics_destroy(c->metrics);
	ctl_free(c);
}

/* A Job naming a RuntimeClass the cluster lacks: the apiserver would refuse
 * its Pods, so it waits outside the queue (said once, in the log); the
 * class created, the RuntimeClasses' watch makes a new policy, the Job is
 * resolved again and queues, its class's overhead in its request. */
static void runtime_class_created_later_queues_its_job(void **state)
{
	struct controller *c = ctl_new();
	json_t *j = ctl_job("team-a", "k", 2, 1, true, "default");
	json_t *rt = json_loads("{\"apiVersion\": \"node.k8s.io/v1\", \"kind\": \"RuntimeClass\", "
				"\"metadata\": {\"name\": \"kata\"}, \"handler\": \"kata\", "
				"\"overhead\": {\"podFixed\": {\"cpu\": \"250m\"}}}",
				0, NULL);
	controller_cevent_t ev = {
	    .res = CONTROLLER_RES_RUNTIMECLASSES, .type = KUBE_EV_ADDED, .object = rt};
	const workload_t *w;

	(void)state;
	assert_non_null(rt);
	json_object_set_new(
	    json_object_get(json_object_get(json_object_get(j, "spec"), "template"), "spec"),
	    "runtimeClassName", json_string("kata"));
	assert_int_equal(qmetrics_create(&c->metrics), GPUQ_OK);
	ctl_policy_events(c, 8, "b", "a", KUBE_EV_ADDED);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(ctl_state(c, "k"), -1);
	controller_snapshot_apply(c, &ev);
	assert_true(c->policy_dirty);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_int_equal(ctl_state(c, "k"), QUEUE_WL_PENDING);
	w = controller_job(c, "k")->wl;
	assert_int_equal(w->podsets[0].n_requests, 2);
	assert_string_equal(w->podsets[0].requests[1].name, "cpu");
	assert_int_equal(w->podsets[0].requests[1].amount, 250);
	json_decref(rt);
	json_decref(j);
	qmetrics_destroy(c->metrics);
	ctl_free(c);
}

/* ---- loop.c: a kind whose CRD comes after gpuq started, and goes ---- */

/* A suspended JobSet in team-a, queue default, uid and name `name`: one
 * replicatedJob of 2 pods of 2 GPUs. A new reference. */
static json_t *ctl_jobset(const char *name)
{
	json_t *js = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, "
	    "s:{s:b, s:[{s:s, s:i, s:{s:{s:i, s:i, s:{s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}}}}]}}",
	    "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", name,
	    "namespace", "team-a", "uid", name, "resourceVersion", "12", "creationTimestamp",
	    "2026-11-25T00:00:00Z", "labels", "gpuq.dev/queue-name", "default", "spec", "suspend",
	    1, "replicatedJobs", "name", "workers", "replicas", 1, "template", "spec",
	    "parallelism", 2, "completions", 2, "template", "spec", "containers", "name", "w",
	    "image", "x", "resources", "limits", "nvidia.com/gpu", "2");

	assert_non_null(js);
	return js;
}

/* One event of collection r into the controller as its loop hands it over
 * (controller_handle); obj borrowed, NULL for RESET, SYNCED and UNSERVED. */
static void ctl_handle(struct controller *c, controller_res_t r, kube_event_type_t type,
		       json_t *obj)
{
	controller_cevent_t ev = {.res = r, .type = type};

	if (obj && controller_res_at(r).policy)
		ev.object = json_incref(obj);
	else if (obj)
		ev = ctl_event(r, type, obj);
	controller_handle(c, &ev);
}

/* gpuq starts with no JobSet CRD: every other collection lists, the
 * optional ones say they are not served, and the snapshot names the
 * workload collections watched (Jobs, Pods, StatefulSets), not JobSets, so
 * the webhook holds no JobSet. The JobSet CRD comes: its collection lists
 * without a restart, its JobSet is queued, the next snapshot names
 * jobsets. The CRD goes: the collection is let go, its JobSet leaves the
 * core and the cache, and the snapshot stops naming it. A policy kind
 * (gpuq.dev Cohorts) comes and goes alike (issue 31, part 5). */
static void a_kind_that_comes_later_is_watched_then_let_go(void **state)
{
	struct controller *c = ctl_new();
	json_t *js = ctl_jobset("js");
	json_t *pool = json_pack("{s:s, s:s, s:{s:s}, s:{}}", "apiVersion", "gpuq.dev/v1beta1",
				 "kind", "Cohort", "metadata", "name", "pool", "spec");

	(void)state;
	assert_non_null(pool);
	assert_int_equal(qmetrics_create(&c->metrics), GPUQ_OK);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		if (controller_res_at(r).path && !controller_res_at(r).optional)
			ctl_handle(c, (controller_res_t)r, KUBE_EV_RESET, NULL);
	ctl_policy_events(c, 8, "b", "a", KUBE_EV_ADDED);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		if (controller_res_at(r).path)
			ctl_handle(c, (controller_res_t)r,
				   controller_res_at(r).optional ? KUBE_EV_UNSERVED
								 : KUBE_EV_SYNCED,
				   NULL);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		assert_true(c->listed[r] != c->unserved[r] || !controller_res_at(r).path);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_true(policy_watch_has(c->policy, "batch", "jobs"));
	assert_true(policy_watch_has(c->policy, "", "pods"));
	assert_true(policy_watch_has(c->policy, "apps", "statefulsets"));
	assert_false(policy_watch_has(c->policy, "jobset.x-k8s.io", "jobsets"));
	assert_false(policy_watch_has(c->policy, "ray.io", "rayjobs"));
	assert_false(policy_watch_has(c->policy, "gpuq.dev", "clusterqueues")); /* not a workload */

	/* the JobSet CRD is installed */
	c->policy_dirty = false;
	ctl_handle(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_RESET, NULL);
	ctl_handle(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_ADDED, js);
	ctl_handle(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_SYNCED, NULL);
	assert_true(c->listed[CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET)]);
	assert_false(c->unserved[CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET)]);
	assert_true(c->policy_dirty);
	assert_int_equal(ctl_state(c, "js"), QUEUE_WL_PENDING);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_true(policy_watch_has(c->policy, "jobset.x-k8s.io", "jobsets"));
	assert_false(policy_watch_has(c->policy, "ray.io", "rayjobs"));

	/* and removed (the apiserver deleted its JobSets; the watch missed it) */
	c->policy_dirty = false;
	ctl_handle(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_UNSERVED, NULL);
	assert_int_equal(ctl_state(c, "js"), -1);
	assert_null(controller_job(c, "js"));
	assert_false(c->listed[CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET)]);
	assert_true(c->unserved[CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET)]);
	assert_true(c->policy_dirty);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_false(policy_watch_has(c->policy, "jobset.x-k8s.io", "jobsets"));
	assert_true(policy_watch_has(c->policy, "batch", "jobs"));

	/* a policy kind comes and goes the same way (gpuq.dev Cohorts) */
	ctl_handle(c, CONTROLLER_RES_COHORTS, KUBE_EV_RESET, NULL);
	ctl_handle(c, CONTROLLER_RES_COHORTS, KUBE_EV_ADDED, pool);
	ctl_handle(c, CONTROLLER_RES_COHORTS, KUBE_EV_SYNCED, NULL);
	assert_true(c->policy_dirty);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_non_null(policy_cohort_find(c->policy, "pool"));
	ctl_handle(c, CONTROLLER_RES_COHORTS, KUBE_EV_UNSERVED, NULL);
	assert_int_equal(c->objs[CONTROLLER_RES_COHORTS].n, 0);
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
	assert_null(policy_cohort_find(c->policy, "pool"));
	json_decref(pool);
	json_decref(js);
	qmetrics_destroy(c->metrics);
	ctl_free(c);
}

/* ---- jobs.c: Jobs into the core ---- */

/* A suspended GPU Job with a queue label in a namespace a ClusterQueue
 * selects becomes a pending workload (noted for a status and touched for
 * actuation); a CPU Job, a GPU Job in a namespace no queue selects and an
 * unlabelled running Job stay out; a deleted Job leaves the core. */
static void jobs_enter_the_core_when_gpuq_manages_them(void **state)
{
	struct controller *c = ctl_new();
	json_t *gpu = ctl_job("team-a", "gpu", 2, 1, true, "default");
	json_t *cpu = ctl_job("team-a", "cpu", 0, 1, true, "default");
	json_t *other = ctl_job("team-b", "other", 2, 1, true, "default");
	json_t *free_run = ctl_job("team-a", "free", 2, 1, false, NULL);

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, gpu);
	ctl_job_event(c, KUBE_EV_ADDED, cpu);
	ctl_job_event(c, KUBE_EV_ADDED, other);
	ctl_job_event(c, KUBE_EV_ADDED, free_run);
	assert_int_equal(ctl_state(c, "gpu"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_state(c, "cpu"), -1);
	assert_int_equal(ctl_state(c, "other"), -1);
	assert_int_equal(ctl_state(c, "free"), -1);
	assert_true(controller_job(c, "gpu")->in_core);
	assert_non_null(controller_job(c, "cpu")); /* cached all the same */
	assert_int_equal(c->n_explain, 1);
	assert_string_equal(c->explain[0], "gpu");
	assert_true(c->n_touched >= 1);
	assert_string_equal(c->touched[0], "gpu");

	ctl_job_event(c, KUBE_EV_DELETED, gpu);
	assert_int_equal(ctl_state(c, "gpu"), -1);
	assert_null(controller_job(c, "gpu"));
	json_decref(gpu);
	json_decref(cpu);
	json_decref(other);
	json_decref(free_run);
	ctl_free(c);
}

/* A relist (RESET, the Jobs that still exist, SYNCED) forgets the Jobs it
 * did not show again, as a watch that missed their deletion would. A
 * finished Job the core held is reported finished. */
static void jobs_relist_forgets_what_went(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 1, 1, true, "default");
	json_t *b = ctl_job("team-a", "b", 1, 1, true, "default");
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_RESET, NULL);
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_SYNCED, NULL);
	assert_true(c->listed[CONTROLLER_RES_OF(WORKLOAD_KIND_JOB)]);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_state(c, "b"), QUEUE_WL_PENDING);

	ctl_job_event(c, KUBE_EV_RESET, NULL);
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_SYNCED, NULL);
	assert_non_null(controller_job(c, "a"));
	assert_null(controller_job(c, "b"));
	assert_int_equal(ctl_state(c, "b"), -1);

	/* a runs (released by this leader) and completes */
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 1);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	json_object_set_new(json_object_get(a, "spec"), "suspend", json_false());
	json_object_set_new(json_object_get(a, "metadata"), "annotations",
			    json_pack("{s:s}", WEBHOOK_ANNOT_ADMITTED, "true"));
	json_object_set_new(a, "status",
			    json_pack("{s:i, s:[{s:s, s:s}]}", "succeeded", 1, "conditions", "type",
				      "Complete", "status", "True"));
	ctl_job_event(c, KUBE_EV_MODIFIED, a);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_FINISHED);
	assert_true(controller_job(c, "a")->finished_seen);
	json_decref(a);
	json_decref(b);
	ctl_free(c);
}

/* ---- pods.c: a pod group ---- */

/* A pod group waits whole until every member exists; each member's arrival
 * is told to the core and noted for a fresh gpuq.dev/status (the count of
 * members present moves), and the group is admitted only complete. */
static void pod_group_waits_whole_and_its_status_follows(void **state)
{
	struct controller *c = ctl_new();
	json_t *m[3] = {ctl_member("g-0", "g", 3), ctl_member("g-1", "g", 3),
			ctl_member("g-2", "g", 3)};
	queue_result_t r;
	char text[256];

	(void)state;
	for (int i = 0; i < 3; i++) {
		/* what controller_status_jobs does with the note: written, so no longer noted */
		for (size_t k = 0; k < c->n_explain; k++)
			free(c->explain[k]);
		c->n_explain = 0;
		if (controller_group(c, "group:team-a/g"))
			controller_group(c, "group:team-a/g")->explain_queued = false;
		ctl_pod_event(c, KUBE_EV_ADDED, m[i]);
		assert_int_equal(ctl_state(c, "group:team-a/g"), QUEUE_WL_PENDING);
		assert_int_equal(c->n_explain, 1);
		assert_string_equal(c->explain[0], "group:team-a/g");
		assert_int_equal(
		    queue_workload_explain(engine_core(c->e), "group:team-a/g", text, sizeof(text)),
		    GPUQ_OK);
		if (i < 2) {
			char want[64];
			snprintf(want, sizeof(want), "%d of 3 pods present", i + 1);
			if (!strstr(text, want))
				fail_msg("after %d members: \"%s\"", i + 1, text);
			assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
			assert_int_equal(r.n_admissions, 0);
		}
	}
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 1);
	assert_int_equal(ctl_state(c, "group:team-a/g"), QUEUE_WL_ADMITTED);
	for (int i = 0; i < 3; i++)
		json_decref(m[i]);
	ctl_free(c);
}

/* A namespace's released Jobs (admitted, not suspended), what the
 * ResourceQuota check at a release walks: kept as objects come and go, one
 * list per namespace, gone with its last Job. */
static void released_jobs_listed_by_namespace(void **state)
{
	struct controller *c = ctl_new();
	const char *names[] = {"r1", "r2", "q1"};
	const controller_released_t *r;

	(void)state;
	atomic_store(&c->leader, false); /* a follower: it adopts, never patches */
	for (int i = 0; i < 3; i++) {
		json_t *o = ctl_job(i < 2 ? "team-a" : "team-b", names[i], 1, 1, false, "default");

		json_object_set_new(json_object_get(o, "metadata"), "annotations",
				    json_pack("{s:s}", "gpuq.dev/admitted", "true"));
		ctl_job_event(c, KUBE_EV_ADDED, o);
		json_decref(o);
	}
	/* a suspended one and one not admitted are not released */
	json_t *susp = ctl_job("team-a", "s1", 1, 1, true, "default");
	json_t *fresh = ctl_job("team-a", "n1", 1, 1, false, "default");
	ctl_job_event(c, KUBE_EV_ADDED, susp);
	ctl_job_event(c, KUBE_EV_ADDED, fresh);
	r = controller_map_get(&c->released, "team-a");
	assert_non_null(r);
	assert_int_equal(r->n, 2);
	r = controller_map_get(&c->released, "team-b");
	assert_non_null(r);
	assert_int_equal(r->n, 1);
	/* r1 stopped (suspended again): out; q1 deleted: team-b's list gone */
	{
		json_t *o = ctl_job("team-a", "r1", 1, 1, true, "default");

		json_object_set_new(json_object_get(o, "metadata"), "annotations",
				    json_pack("{s:s}", "gpuq.dev/admitted", "true"));
		ctl_job_event(c, KUBE_EV_MODIFIED, o);
		json_decref(o);
	}
	r = controller_map_get(&c->released, "team-a");
	assert_non_null(r);
	assert_int_equal(r->n, 1);
	assert_string_equal(r->v[0].job->uid, "r2");
	assert_int_equal(r->v[0].job->released_at, 0);
	{
		json_t *o = ctl_job("team-b", "q1", 1, 1, false, "default");

		ctl_job_event(c, KUBE_EV_DELETED, o);
		json_decref(o);
	}
	ctl_settle(c);
	assert_null(controller_map_get(&c->released, "team-b"));
	json_decref(susp);
	json_decref(fresh);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(map_put_get_replace_del),
	    cmocka_unit_test(map_keeps_every_key_through_growth_and_deletes),
	    cmocka_unit_test(map_churn_keeps_its_size),
	    cmocka_unit_test(map_holds_100000_keys_in_131072_slots),
	    cmocka_unit_test(map_borrowed_keys_stay_the_callers),
	    cmocka_unit_test(map_next_visits_live_keys_once),
	    cmocka_unit_test(map_hash_is_fnv1a),
	    cmocka_unit_test(equeue_keeps_order_and_batches),
	    cmocka_unit_test(equeue_full_queue_makes_the_watch_wait),
	    cmocka_unit_test(equeue_stop_drops_and_deinit_releases),
	    cmocka_unit_test(slim_drops_only_managed_fields_and_last_applied),
	    cmocka_unit_test(job_set_caches_the_object),
	    cmocka_unit_test(job_take_moves_the_key_with_each_object),
	    cmocka_unit_test(obj_key_names_namespaced_and_cluster_objects),
	    cmocka_unit_test(policy_cache_rebuilds_on_what_the_policy_reads),
	    cmocka_unit_test(policy_change_in_place_resolves_what_it_reaches),
	    cmocka_unit_test(runtime_class_created_later_queues_its_job),
	    cmocka_unit_test(a_kind_that_comes_later_is_watched_then_let_go),
	    cmocka_unit_test(jobs_enter_the_core_when_gpuq_manages_them),
	    cmocka_unit_test(jobs_relist_forgets_what_went),
	    cmocka_unit_test(released_jobs_listed_by_namespace),
	    cmocka_unit_test(pod_group_waits_whole_and_its_status_follows),
	};

	return cmocka_run_group_tests_name("controller_cache", tests, NULL, NULL);
}

/* The controller's decode-once path: every Job and Pod of the golden
 * admission cases (unit/golden/cases) and the admission corpus, as a watch
 * event and as a LIST item (no apiVersion and kind), is decoded by the watch
 * thread's step (controller_informer_event, over a fast watch decoder) to the same
 * workload_t, resolved against the golden policy, as the object's own text
 * decodes to; an object that does not decode comes with its uid and why;
 * and the controller takes a decoded Job into its cache and core. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/internal.h"
#include "engine/engine.h"

#define GOLDEN_DIR "unit/golden"

static policy_t *golden_policy(void)
{
	gpuq_diag_t d = {{0}};
	policy_t *p = NULL;

	if (policy_load_dir(GOLDEN_DIR "/policy", NULL, &p, &d))
		fail_msg("golden policy: %s", d.msg);
	return p;
}

static void same_str(const char *a, const char *b, const char *what)
{
	if (!a || !b) {
		if (a != b)
			fail_msg("%s: \"%s\" whole, \"%s\" pruned", what, a ? a : "(null)",
				 b ? b : "(null)");
		return;
	}
	if (strcmp(a, b) != 0)
		fail_msg("%s: \"%s\" whole, \"%s\" pruned", what, a, b);
}

/* Every member of two decoded pod sets equal. */
static void same_podset(const workload_podset_t *a, const workload_podset_t *b)
{
	same_str(a->name, b->name, "pod set");
	assert_int_equal(a->count, b->count);
	same_str(a->priority_class, b->priority_class, "pod set priority class");
	assert_int_equal(a->gpu, b->gpu);
	assert_int_equal(a->n_requests, b->n_requests);
	for (size_t i = 0; i < a->n_requests; i++) {
		same_str(a->requests[i].name, b->requests[i].name, "request");
		assert_int_equal(a->requests[i].amount, b->requests[i].amount);
		assert_int_equal(quota_qty_cmp(&a->requests[i].qty, &b->requests[i].qty), 0);
		assert_int_equal(a->requests[i].qty.format, b->requests[i].qty.format);
	}
	assert_int_equal(a->n_node_selector, b->n_node_selector);
	for (size_t i = 0; i < a->n_node_selector; i++) {
		same_str(a->node_selector[i].key, b->node_selector[i].key, "selector key");
		same_str(a->node_selector[i].value, b->node_selector[i].value, "selector value");
	}
	assert_int_equal(a->n_tolerations, b->n_tolerations);
	for (size_t i = 0; i < a->n_tolerations; i++) {
		same_str(a->tolerations[i].key, b->tolerations[i].key, "toleration key");
		same_str(a->tolerations[i].op, b->tolerations[i].op, "toleration operator");
		same_str(a->tolerations[i].value, b->tolerations[i].value, "toleration value");
		same_str(a->tolerations[i].effect, b->tolerations[i].effect, "toleration effect");
	}
	assert_int_equal(a->tmpl_admitted, b->tmpl_admitted);
}

/* Every member of two decoded objects equal. */
static void same_object(const workload_t *a, const workload_t *b)
{
	assert_int_equal(a->kind, b->kind);
	same_str(a->namespace_, b->namespace_, "namespace");
	same_str(a->name, b->name, "name");
	same_str(a->uid, b->uid, "uid");
	same_str(a->resource_version, b->resource_version, "resourceVersion");
	assert_int_equal(a->created_ms, b->created_ms);
	same_str(a->queue, b->queue, "queue");
	assert_int_equal(a->gpu, b->gpu);
	assert_int_equal(a->pods, b->pods);
	same_str(a->x->pod_group, b->x->pod_group, "pod group");
	assert_int_equal(a->x->pod_group_total, b->x->pod_group_total);
	assert_int_equal(a->suspend, b->suspend);
	assert_int_equal(a->gated, b->gated);
	assert_int_equal(a->admitted, b->admitted);
	assert_int_equal(a->priority, b->priority);
	same_str(a->priority_class, b->priority_class, "priority class");
	assert_int_equal(a->priority_class_unknown, b->priority_class_unknown);
	assert_int_equal(a->n_podsets, b->n_podsets);
	for (size_t i = 0; i < a->n_podsets; i++)
		same_podset(&a->podsets[i], &b->podsets[i]);
	assert_int_equal(a->active, b->active);
	assert_int_equal(a->succeeded, b->succeeded);
	assert_int_equal(a->failed, b->failed);
	assert_int_equal(a->ready_pods, b->ready_pods);
	assert_int_equal(a->finished, b->finished);
	assert_int_equal(a->ready, b->ready);
	same_str(a->x->phase, b->x->phase, "phase");
	same_str(a->x->node_name, b->x->node_name, "nodeName");
	same_str(a->x->owner_api_version, b->x->owner_api_version, "owner apiVersion");
	same_str(a->x->owner_kind, b->x->owner_kind, "owner kind");
	same_str(a->x->owner_name, b->x->owner_name, "owner name");
	same_str(a->x->owner_uid, b->x->owner_uid, "owner uid");
}

/* Decode and resolve json against p (*o NULL on error). */
static int decode(const policy_t *p, const char *json, workload_t **o)
{
	int rc = workload_decode_json(json, strlen(json), NULL, o, NULL);

	if (!rc && (rc = workload_resolve(*o, p, NULL))) {
		workload_destroy(*o);
		*o = NULL;
	}
	return rc;
}

typedef struct {
	size_t jobs, pods;	/* objects compared */
	size_t list_items;	/* ... of them also as LIST items */
	const policy_t *p;	/* resolved against */
	controller_cevent_t ev; /* the last event controller_informer_event made */
} tally_t;

static const webhook_config_t no_cfg = {NULL, 0, NULL, NULL, 0, NULL, NULL, 0};

/* The watch of Jobs sees Jobs, that of Pods Pods: other kinds never come. */
static int take(void *ctx, const kube_event_t *ev)
{
	tally_t *t = ctx;
	const char *kind = jv_member_str(ev->fast, "kind");

	controller_cevent_deinit(&t->ev);
	if (kind && (!strcmp(kind, "Job") || !strcmp(kind, "Pod")))
		controller_informer_event(!strcmp(kind, "Job")
					      ? CONTROLLER_RES_OF(WORKLOAD_KIND_JOB)
					      : CONTROLLER_RES_OF(WORKLOAD_KIND_POD),
					  &no_cfg, ev, &t->ev);
	return 0;
}

/* The event a fast watch decoder makes of line, through controller_informer_event. */
static void through_watch(tally_t *t, const char *line)
{
	kube_watch_decoder_t *d = NULL;
	gpuq_diag_t diag = {{0}};

	assert_int_equal(kube_watch_decoder_create(0, take, t, &d), GPUQ_OK);
	kube_watch_decoder_fast(d, true);
	if (kube_watch_decoder_feed(d, line, strlen(line), &diag) ||
	    kube_watch_decoder_feed(d, "\n", 1, &diag))
		fail_msg("watch decoder: %s", diag.msg);
	kube_watch_decoder_destroy(d);
}

/* Decode obj's text, and obj as a watch event: the same workload. */
static void check_one(const policy_t *p, const json_t *review_obj, const char *file, tally_t *t)
{
	json_t *obj = json_deep_copy(review_obj), *meta, *event;
	char *whole, *line;
	workload_t *a = NULL;
	int ra;

	/* as the watch shows it: stored, so it has a uid, a creation time and a
	 * resourceVersion (a review's object before creation has none) */
	assert_non_null(obj);
	meta = json_object_get(obj, "metadata");
	if (!json_object_get(meta, "uid"))
		json_object_set_new(meta, "uid", json_string("0000-uid"));
	if (!json_object_get(meta, "creationTimestamp"))
		json_object_set_new(meta, "creationTimestamp", json_string("2026-11-25T00:00:00Z"));
	if (!json_object_get(meta, "resourceVersion"))
		json_object_set_new(meta, "resourceVersion", json_string("7"));
	if (!json_object_get(meta, "name"))
		json_object_set_new(meta, "name", json_string("generated-x"));
	whole = json_dumps(obj, JSON_COMPACT);
	event = json_pack("{s:s, s:O}", "type", "ADDED", "object", obj);
	line = json_dumps(event, JSON_COMPACT);
	assert_non_null(whole);
	assert_non_null(line);
	ra = decode(p, whole, &a);
	through_watch(t, line);
	if (ra == GPUQ_OK && a->kind != WORKLOAD_KIND_JOB && a->kind != WORKLOAD_KIND_POD) {
		/* another kind's watch (tested with its kind) */
	} else if (ra == GPUQ_OK) {
		if (!t->ev.wl)
			fail_msg("%s: decodes whole, not as a watch event (%s)", file,
				 t->ev.bad ? t->ev.bad : "no workload");
		assert_int_equal(workload_resolve(t->ev.wl, p, NULL), GPUQ_OK);
		same_object(a, t->ev.wl);
		if (a->kind == WORKLOAD_KIND_JOB)
			t->jobs++;
		else
			t->pods++;
	} else if (t->ev.wl && workload_resolve(t->ev.wl, p, NULL) == GPUQ_OK) {
		fail_msg("%s: decodes as a watch event, not whole", file);
	}
	workload_destroy(a);
	controller_cevent_deinit(&t->ev);
	free(whole);
	free(line);
	json_decref(event);
	json_decref(obj);
}

/* The objects of one AdmissionReview file: a golden case ({"request":
 * review}) or a review as the apiserver sends it. */
static void check_file(const policy_t *p, const char *path, const char *name, tally_t *t)
{
	json_t *doc = json_load_file(path, 0, NULL), *req;

	if (!doc)
		return; /* the fuzz corpus holds bodies that are not JSON */
	req = json_object_get(doc, "request");
	if (json_is_object(json_object_get(req, "request")))
		req = json_object_get(req, "request");
	if (json_is_object(json_object_get(req, "object")))
		check_one(p, json_object_get(req, "object"), name, t);
	if (json_is_object(json_object_get(req, "oldObject")))
		check_one(p, json_object_get(req, "oldObject"), name, t);
	json_decref(doc);
}

static void check_dir(const policy_t *p, const char *dir, tally_t *t)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[512];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		check_file(p, path, e->d_name, t);
	}
	closedir(d);
}

/* A Pod with what the golden cases lack: a sidecar, overhead, a
 * PriorityClass name, a pod group, an owner and a status. */
static const char SIDECAR_POD[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
    "\"team-a\",\"uid\":\"u2\",\"resourceVersion\":\"9\",\"creationTimestamp\":"
    "\"2026-11-25T00:00:00Z\",\"labels\":{\"gpuq.dev/queue-name\":\"default\","
    "\"kueue.x-k8s.io/pod-group-name\":\"g\"},\"annotations\":{"
    "\"kueue.x-k8s.io/pod-group-total-count\":\"3\"},\"ownerReferences\":[{\"apiVersion\":"
    "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"u3\",\"controller\":"
    "true}]},\"spec\":{\"priorityClassName\":\"nope\",\"overhead\":{\"cpu\":\"250m\"},"
    "\"nodeName\":\"n1\",\"schedulingGates\":[{\"name\":\"gpuq.dev/admission\"}],"
    "\"initContainers\":[{\"name\":\"s\",\"image\":\"x\",\"restartPolicy\":\"Always\","
    "\"resources\":{\"requests\":{\"cpu\":\"2\"}}},{\"name\":\"i\",\"image\":\"x\","
    "\"resources\":{\"requests\":{\"cpu\":\"8\"}}}],\"containers\":[{\"name\":\"m\","
    "\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\"},\"limits\":{"
    "\"nvidia.com/gpu\":\"2\"}}}]},\"status\":{\"phase\":\"Running\",\"containerStatuses\":"
    "[{\"name\":\"m\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";

static void test_watch_event_decodes_the_same(void **state)
{
	policy_t *p = golden_policy();
	json_t *pod = json_loads(SIDECAR_POD, 0, NULL);
	tally_t t = {0};

	(void)state;
	t.p = p;
	check_dir(p, GOLDEN_DIR "/cases", &t);
	check_dir(p, "fuzz/corpus/admission", &t);
	check_file(p, "bench/fixtures/job_review.json", "job_review.json", &t);
	assert_non_null(pod);
	check_one(p, pod, "sidecar pod", &t);
	json_decref(pod);
	policy_unref(p);
	print_message("compared %zu Jobs and %zu Pods\n", t.jobs, t.pods);
	assert_true(t.jobs >= 20);
	assert_true(t.pods >= 10);
}

/* A LIST item carries no apiVersion and kind: the collection's kind decodes
 * it; an object that does not decode comes with its uid and why. */
static void test_list_items_and_refusals(void **state)
{
	const webhook_config_t cfg = {NULL, 0, NULL, NULL, 0, NULL, NULL, 0};
	const char *item = strstr(SIDECAR_POD, "\"metadata\"");
	char page[4096], bad[512];
	jv_doc_t doc;
	kube_event_t ev = {.type = KUBE_EV_ADDED, .resource_version = "9"};
	controller_cevent_t ce;
	char err[128];

	(void)state;
	snprintf(page, sizeof(page), "{%s", item);
	assert_int_equal(jv_doc_parse(&doc, page, strlen(page), err, sizeof(err)), GPUQ_OK);
	ev.fast = doc.root;
	ev.list_api_version = "v1";
	ev.list_kind = "Pod";
	controller_informer_event(CONTROLLER_RES_OF(WORKLOAD_KIND_POD), &cfg, &ev, &ce);
	assert_non_null(ce.wl);
	assert_int_equal(ce.wl->kind, WORKLOAD_KIND_POD);
	assert_string_equal(ce.wl->uid, "u2");
	assert_null(ce.bad);
	controller_cevent_deinit(&ce);
	jv_doc_free(&doc);
	/* a Job with a bad quantity: no workload, its uid and the reason */
	snprintf(
	    bad, sizeof(bad),
	    "{\"metadata\":{\"name\":\"j\",\"namespace\":\"n\",\"uid\":\"u9\","
	    "\"creationTimestamp\":\"2026-11-25T00:00:00Z\"},\"spec\":{\"template\":{\"spec\":"
	    "{\"containers\":[{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1.2.3\"}}}]}}}}");
	assert_int_equal(jv_doc_parse(&doc, bad, strlen(bad), err, sizeof(err)), GPUQ_OK);
	ev.fast = doc.root;
	controller_informer_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), &cfg, &ev, &ce);
	assert_null(ce.wl);
	assert_string_equal(ce.uid, "u9");
	assert_non_null(strstr(ce.bad, "Job \"j\": spec.template.spec.containers[0].resources"
				       ".limits[nvidia.com/gpu]: invalid quantity \"1.2.3\""));
	controller_cevent_deinit(&ce);
	controller_cevent_deinit(&ce); /* twice is fine */
	jv_doc_free(&doc);
}

/* The controller thread's side: a Job event enters the cache and the core,
 * once; a policy change re-resolves it without its JSON. */
static void test_job_event_into_core(void **state)
{
	policy_t *p = golden_policy();
	struct controller *c = calloc(1, sizeof(*c));
	gpuq_diag_t d = {{0}};
	json_t *req, *obj, *ev;
	char *line;
	tally_t t = {0};
	queue_wl_t id;
	controller_job_t *j;

	(void)state;
	assert_non_null(c);
	controller_opts_default(&c->o);
	controller_map_init(&c->jobs);
	controller_map_init(&c->groups);
	controller_map_init(&c->pod_group);
	c->policy = p;
	if (engine_open(p, NULL, NULL, &c->e, &d))
		fail_msg("core: %s", d.msg);
	req = json_load_file("bench/fixtures/job_review.json", 0, NULL);
	obj = json_deep_copy(json_object_get(json_object_get(req, "request"), "object"));
	assert_non_null(obj);
	json_object_set_new(json_object_get(obj, "metadata"), "uid", json_string("u-job"));
	json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string("5"));
	json_object_set_new(json_object_get(obj, "metadata"), "creationTimestamp",
			    json_string("2026-11-25T00:00:00Z"));
	json_object_set_new(json_object_get(obj, "spec"), "suspend", json_true());
	ev = json_pack("{s:s, s:o}", "type", "ADDED", "object", obj);
	line = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	assert_non_null(line);
	through_watch(&t, line);
	assert_non_null(t.ev.wl);
	controller_handle(c, &t.ev);
	assert_null(t.ev.wl); /* the cache took it */
	j = controller_job(c, "u-job");
	assert_non_null(j);
	assert_non_null(j->wl);
	assert_true(j->suspended);
	assert_string_equal(controller_job_ns(j), "team-a");
	assert_int_equal(queue_workload_find(engine_core(c->e), "u-job", &id), GPUQ_OK);
	assert_int_equal(j->wl->podsets[0].count, 4);
	/* the same policy again: resolved anew, still one workload */
	controller_jobs_resync(c, NULL);
	assert_int_equal(queue_workload_find(engine_core(c->e), "u-job", &id), GPUQ_OK);
	free(line);
	json_decref(req);
	controller_jobs_free_all(c);
	controller_pods_free_all(c);
	for (size_t i = 0; i < c->n_touched; i++)
		free(c->touched[i]);
	free(c->touched);
	for (size_t i = 0; i < c->n_explain; i++)
		free(c->explain[i]);
	free(c->explain);
	engine_close(c->e);
	free(c);
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watch_event_decodes_the_same),
	    cmocka_unit_test(test_list_items_and_refusals),
	    cmocka_unit_test(test_job_event_into_core),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

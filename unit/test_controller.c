/* The controller's cache of Jobs and Pods: controller_prune keeps of an
 * object all that gpuq reads. Every Job and Pod of the golden admission
 * cases (unit/golden/cases) decodes, against the golden policy, to the same
 * workload_t whole and pruned, and pruning drops what no rule reads. */
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
	same_str(a->pod_group, b->pod_group, "pod group");
	assert_int_equal(a->pod_group_total, b->pod_group_total);
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
	same_str(a->phase, b->phase, "phase");
	same_str(a->node_name, b->node_name, "nodeName");
	same_str(a->owner_api_version, b->owner_api_version, "owner apiVersion");
	same_str(a->owner_kind, b->owner_kind, "owner kind");
	same_str(a->owner_name, b->owner_name, "owner name");
	same_str(a->owner_uid, b->owner_uid, "owner uid");
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
	size_t jobs, pods;    /* objects compared */
	size_t whole, pruned; /* their compact sizes, bytes */
	bool dropped_image;   /* some object had a container image; none kept it */
} tally_t;

/* Decode obj whole and pruned; when the whole one decodes, the pruned one
 * must decode the same. */
static void check_one(const policy_t *p, const json_t *review_obj, const char *file, tally_t *t)
{
	json_t *obj = json_deep_copy(review_obj), *meta, *copy;
	char *whole, *pruned;
	workload_t *a = NULL, *b = NULL;
	int ra, rb;

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
	copy = json_deep_copy(obj);
	whole = json_dumps(obj, JSON_COMPACT);
	assert_non_null(copy);
	assert_non_null(whole);
	pruned = json_dumps(controller_prune(copy), JSON_COMPACT);
	assert_non_null(pruned);
	ra = decode(p, whole, &a);
	rb = decode(p, pruned, &b);
	if (ra == GPUQ_OK) {
		if (rb != GPUQ_OK)
			fail_msg("%s: decodes whole, not pruned (%s)", file, gpuq_strerror(rb));
		same_object(a, b);
		if (a->kind == WORKLOAD_KIND_JOB)
			t->jobs++;
		else
			t->pods++;
		t->whole += strlen(whole);
		t->pruned += strlen(pruned);
		if (strstr(whole, "\"image\":"))
			t->dropped_image = !strstr(pruned, "\"image\":");
	}
	workload_destroy(a);
	workload_destroy(b);
	free(whole);
	free(pruned);
	json_decref(copy);
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

static void test_prune_decodes_the_same(void **state)
{
	policy_t *p = golden_policy();
	json_t *pod = json_loads(SIDECAR_POD, 0, NULL);
	tally_t t = {0};

	(void)state;
	check_dir(p, GOLDEN_DIR "/cases", &t);
	check_dir(p, "fuzz/corpus/admission", &t);
	check_file(p, "bench/fixtures/job_review.json", "job_review.json", &t);
	assert_non_null(pod);
	check_one(p, pod, "sidecar pod", &t);
	json_decref(pod);
	policy_unref(p);
	print_message("compared %zu Jobs and %zu Pods: %zu bytes whole, %zu pruned\n", t.jobs,
		      t.pods, t.whole, t.pruned);
	assert_true(t.jobs >= 20);
	assert_true(t.pods >= 10);
	assert_true(t.pruned < t.whole);
	assert_true(t.dropped_image);
}

/* A Job as the apiserver returns it: what actuation reads stays, the rest
 * goes. */
static void test_prune_keeps_what_actuation_reads(void **state)
{
	static const char job[] =
	    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
	    "\"namespace\":\"team-a\",\"uid\":\"u1\",\"resourceVersion\":\"42\",\"generation\":3,"
	    "\"creationTimestamp\":\"2026-11-25T00:00:00Z\",\"labels\":{\"gpuq.dev/queue-name\":"
	    "\"default\",\"app\":\"x\"},\"annotations\":{\"gpuq.dev/original\":\"{}\",\"a.io/"
	    "b\":\"c\","
	    "\"gpuq.dev/status\":\"pending\",\"kubectl.kubernetes.io/"
	    "last-applied-configuration\":\"{...}\"},\"managedFields\":[{\"manager\":\"k\"}]},"
	    "\"spec\":{\"suspend\":true,\"parallelism\":2,\"completions\":4,\"backoffLimit\":6,"
	    "\"selector\":{\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":"
	    "{\"a\":\"b\"},\"annotations\":{\"gpuq.dev/admitted\":\"true\",\"kwok.x-k8s.io/"
	    "d\":\"0s\"}},\"spec\":{"
	    "\"nodeSelector\":{\"n\":\"1\"},\"tolerations\":[{\"key\":\"t\",\"operator\":"
	    "\"Exists\",\"tolerationSeconds\":5}],\"volumes\":[{\"name\":\"v\"}],\"dnsPolicy\":"
	    "\"ClusterFirst\",\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"env\":[{\"name\":"
	    "\"E\",\"value\":\"1\"}],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}},"
	    "\"status\":{\"active\":1,\"terminating\":0,\"startTime\":\"2026-11-25T00:00:01Z\","
	    "\"uncountedTerminatedPods\":{},\"conditions\":[{\"type\":\"Suspended\",\"status\":"
	    "\"True\",\"message\":\"m\",\"lastTransitionTime\":\"2026-11-25T00:00:00Z\"}]}}";
	static const char want[] =
	    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"annotations\":{"
	    "\"gpuq.dev/original\":\"{}\"},\"creationTimestamp\":\"2026-11-25T00:00:00Z\","
	    "\"labels\":{\"gpuq.dev/queue-name\":\"default\"},\"name\":\"j\",\"namespace\":"
	    "\"team-a\",\"resourceVersion\":\"42\",\"uid\":\"u1\"},\"spec\":{\"completions\":4,"
	    "\"parallelism\":2,\"suspend\":true,\"template\":{\"metadata\":{\"annotations\":{"
	    "\"gpuq.dev/admitted\":\"true\"}},\"spec\":{\"containers\":[{\"name\":\"m\","
	    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],\"nodeSelector\":{\"n\":"
	    "\"1\"},\"tolerations\":[{\"key\":\"t\",\"operator\":\"Exists\","
	    "\"tolerationSeconds\":5}]}}},\"status\":{\"active\":1,\"conditions\":[{\"status\":"
	    "\"True\",\"type\":\"Suspended\"}],\"startTime\":\"2026-11-25T00:00:01Z\","
	    "\"terminating\":0}}";
	json_t *obj = json_loads(job, 0, NULL);
	char *got;

	(void)state;
	assert_non_null(obj);
	got = json_dumps(controller_prune(obj), JSON_COMPACT | JSON_SORT_KEYS);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	json_decref(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prune_decodes_the_same),
	    cmocka_unit_test(test_prune_keeps_what_actuation_reads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

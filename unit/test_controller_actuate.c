/* What the controller writes, without an apiserver: a released workload's
 * placement on its flavor, the JSON Patches (release.c) that release,
 * suspend and restore a Job, when a suspended Job's pods count as gone (by
 * its status and by the Pods watch), the
 * ClusterQueue and LocalQueue status, the usage checkpoint's ConfigMap (its
 * part merges back whole into a fresh core) and its retry spacing, and a
 * decoded object as the core's pod set. */
#include <unistd.h>

#include "unit/controller_fixtures.h"

/* Put Job `name` (2 GPUs, suspended, queue default) into the controller
 * and admit it; returns its cached Job and its workload id. */
static controller_job_t *admitted_job(struct controller *c, const char *name, json_t *obj,
				      queue_wl_t *id)
{
	queue_result_t r;

	ctl_job_event(c, KUBE_EV_ADDED, obj);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(ctl_state(c, name), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), name, id), GPUQ_OK);
	return controller_job(c, name);
}

/* The flavor's nodeLabels and tolerations are added to the template's own;
 * the annotation names resource=flavor for a successor to adopt by. */
static void placement_adds_the_flavors_labels_and_tolerations(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default");
	json_t *base_sel = json_pack("{s:s}", "disk", "ssd");
	json_t *base_tols = json_pack("[{s:s, s:s}]", "key", "spot", "operator", "Exists");
	json_t *sel, *tols;
	char flavors[256], *s;
	queue_wl_t id;

	(void)state;
	admitted_job(c, "j", obj, &id);
	assert_int_equal(controller_actuate_placement(c, id, 0, false, base_sel, base_tols, &sel,
						      &tols, flavors, sizeof(flavors)),
			 GPUQ_OK);
	assert_string_equal(flavors, "nvidia.com/gpu=h100");
	s = ctl_dump(sel);
	assert_string_equal(s, "{\"disk\":\"ssd\",\"nvidia.com/gpu.product\":\"H100\"}");
	free(s);
	s = ctl_dump(tols);
	assert_string_equal(s,
			    "[{\"key\":\"spot\",\"operator\":\"Exists\"},{\"effect\":"
			    "\"NoSchedule\",\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]");
	free(s);
	/* the base is copied, not changed */
	assert_int_equal(json_object_size(base_sel), 1);
	assert_int_equal(json_array_size(base_tols), 1);
	json_decref(sel);
	json_decref(tols);
	json_decref(base_sel);
	json_decref(base_tols);
	json_decref(obj);
	ctl_free(c);
}

/* Job obj (borrowed) as the watch shows it, admitted: its cached Job. */
static controller_job_t *released_job(struct controller *c, const char *name, json_t *obj,
				      queue_wl_t *id)
{
	return admitted_job(c, name, obj, id);
}

/* The release patch: guarded by the resourceVersion decided on; the
 * template marked admitted, its own placement kept in
 * CONTROLLER_ANNOT_ORIGINAL (no tolerations: null, so a restore removes
 * the flavor's), the flavor's added; the Job marked admitted with
 * its flavors named and its coarse status in the same write; unsuspended
 * last. */
static void release_body_unsuspends_with_the_placement(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default"), *body = NULL;
	queue_wl_t id;
	controller_job_t *j;
	char *got;

	(void)state;
	json_object_set_new(
	    json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"),
	    "nodeSelector", json_pack("{s:s}", "disk", "ssd"));
	j = released_job(c, "j", obj, &id);
	assert_int_equal(controller_release_parent_patch(c, j, id, &body), GPUQ_OK);
	got = ctl_dump(body);
	assert_string_equal(
	    got,
	    "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"7\"},"
	    "{\"op\":\"add\",\"path\":\"/spec/template/metadata\",\"value\":{\"annotations\":{"
	    "\"gpuq.dev/admitted\":\"true\"}}},"
	    "{\"op\":\"add\",\"path\":\"/spec/template/spec/nodeSelector\",\"value\":{\"disk\":"
	    "\"ssd\",\"nvidia.com/gpu.product\":\"H100\"}},"
	    "{\"op\":\"add\",\"path\":\"/spec/template/spec/tolerations\",\"value\":[{\"effect\":"
	    "\"NoSchedule\",\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]},"
	    "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"gpuq.dev/admitted\":"
	    "\"true\",\"gpuq.dev/flavors\":\"nvidia.com/gpu=h100\","
	    "\"gpuq.dev/original-scheduling\":\"{\\\"nodeSelector\\\":{\\\"disk\\\":\\\"ssd\\\"},"
	    "\\\"tolerations\\\":null}\",\"gpuq.dev/status\":\"admitted in ClusterQueue cq: 2 "
	    "nvidia.com/gpu on flavor h100\"}},"
	    "{\"op\":\"add\",\"path\":\"/spec/suspend\",\"value\":false}]");
	free(got);
	json_decref(body);
	json_decref(obj);
	ctl_free(c);
}

/* A release retried on a Job that already carries the release's placement
 * (a crash between the patch and the commit, or a preempted Job released
 * again) starts from the original template: nothing is added twice. */
static void release_body_starts_from_the_original_template(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default"), *body = NULL, *spec;
	queue_wl_t id;
	controller_job_t *j;
	char *got;

	(void)state;
	spec = json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec");
	/* as the first release left it */
	json_object_set_new(spec, "nodeSelector",
			    json_pack("{s:s}", "nvidia.com/gpu.product", "H100"));
	json_object_set_new(spec, "tolerations",
			    json_pack("[{s:s, s:s, s:s}]", "key", "nvidia.com/gpu", "operator",
				      "Exists", "effect", "NoSchedule"));
	json_object_set_new(json_object_get(obj, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_ORIGINAL, "{}"));
	j = released_job(c, "j", obj, &id);
	assert_int_equal(controller_release_parent_patch(c, j, id, &body), GPUQ_OK);
	got = ctl_dump(json_array_get(body, 2));
	assert_string_equal(got, "{\"op\":\"add\",\"path\":\"/spec/template/spec/nodeSelector\","
				 "\"value\":{\"nvidia.com/gpu.product\":\"H100\"}}");
	free(got);
	got = ctl_dump(json_array_get(body, 3));
	assert_string_equal(got, "{\"op\":\"add\",\"path\":\"/spec/template/spec/tolerations\","
				 "\"value\":[{\"effect\":\"NoSchedule\",\"key\":"
				 "\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}");
	free(got);
	got = ctl_dump(json_array_get(body, 6));
	assert_string_equal(got, "{\"op\":\"add\",\"path\":\"/metadata/annotations/gpuq.dev~1"
				 "original-scheduling\",\"value\":\"{}\"}");
	free(got);
	json_decref(body);
	json_decref(obj);
	ctl_free(c);
}

/* Preempted: suspended, its admission and flavors removed, on its
 * resourceVersion. */
static void suspend_body_takes_the_admission_back(void **state)
{
	json_t *obj = ctl_job("team-a", "j", 2, 1, false, "default");
	controller_cevent_t ev;
	json_t *body;
	char *got;

	(void)state;
	json_object_set_new(json_object_get(obj, "metadata"), "annotations",
			    json_pack("{s:s, s:s}", WEBHOOK_ANNOT_ADMITTED, "true",
				      CONTROLLER_ANNOT_FLAVORS, "nvidia.com/gpu=h100"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	body = controller_release_suspend_patch(ev.wl, NULL);
	got = ctl_dump(body);
	assert_string_equal(
	    got, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"7\"},"
		 "{\"op\":\"add\",\"path\":\"/spec/suspend\",\"value\":true},"
		 "{\"op\":\"remove\",\"path\":\"/metadata/annotations/gpuq.dev~1admitted\"},"
		 "{\"op\":\"remove\",\"path\":\"/metadata/annotations/gpuq.dev~1flavors\"}]");
	free(got);
	json_decref(body);
	controller_cevent_deinit(&ev);
	json_decref(obj);
}

/* Its pods gone, the template goes back to what it was: the original
 * nodeSelector and tolerations set again (the release's keys go with the
 * whole map), the template's admitted mark and the original annotation
 * removed; a template that had none loses the flavor's. A Job that keeps
 * no original has nothing to restore. */
static void restore_body_puts_the_template_back(void **state)
{
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default"), *tmpl, *body;
	controller_cevent_t ev;
	char *got;

	(void)state;
	tmpl = json_object_get(json_object_get(obj, "spec"), "template");
	json_object_set_new(tmpl, "metadata",
			    json_pack("{s:{s:s}}", "annotations", WEBHOOK_ANNOT_ADMITTED, "true"));
	json_object_set_new(
	    json_object_get(tmpl, "spec"), "nodeSelector",
	    json_pack("{s:s, s:s}", "disk", "ssd", "nvidia.com/gpu.product", "H100"));
	json_object_set_new(json_object_get(tmpl, "spec"), "tolerations",
			    json_pack("[{s:s}, {s:s}]", "key", "spot", "key", "nvidia.com/gpu"));
	json_object_set_new(
	    json_object_get(obj, "metadata"), "annotations",
	    json_pack(
		"{s:s}", CONTROLLER_ANNOT_ORIGINAL,
		"{\"nodeSelector\":{\"disk\":\"ssd\"},\"tolerations\":[{\"key\":\"spot\"}]}"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	body = controller_release_restore_patch(ev.wl);
	got = ctl_dump(body);
	assert_string_equal(
	    got, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"7\"},"
		 "{\"op\":\"remove\",\"path\":\"/spec/template/metadata/annotations/gpuq.dev~1"
		 "admitted\"},"
		 "{\"op\":\"add\",\"path\":\"/spec/template/spec/nodeSelector\",\"value\":{"
		 "\"disk\":\"ssd\"}},"
		 "{\"op\":\"add\",\"path\":\"/spec/template/spec/tolerations\",\"value\":[{"
		 "\"key\":\"spot\"}]},"
		 "{\"op\":\"remove\",\"path\":\"/metadata/annotations/gpuq.dev~1original-"
		 "scheduling\"}]");
	free(got);
	json_decref(body);
	controller_cevent_deinit(&ev);
	/* no original placement: the flavor's removed */
	json_object_set_new(json_object_get(obj, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_ORIGINAL, "{}"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	body = controller_release_restore_patch(ev.wl);
	got = ctl_dump(json_array_get(body, 2));
	assert_string_equal(got,
			    "{\"op\":\"remove\",\"path\":\"/spec/template/spec/nodeSelector\"}");
	free(got);
	json_decref(body);
	controller_cevent_deinit(&ev);
	json_object_del(json_object_get(obj, "metadata"), "annotations");
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	assert_null(controller_release_restore_patch(ev.wl));
	controller_cevent_deinit(&ev);
	json_decref(obj);
}

/* A suspended Job's quota is free only once the Job controller reports no
 * pod active or terminating and has reset its start time, and the Pods
 * watch shows none of its GPU pods unfinished. */
static void quiet_only_when_every_pod_is_gone(void **state)
{
	static const struct {
		const char *status;
		bool quiet;
	} cases[] = {
	    {"{}", true},
	    {"{\"active\":0,\"terminating\":0}", true},
	    {"{\"active\":1}", false},
	    {"{\"terminating\":2}", false},
	    {"{\"startTime\":\"2026-11-25T00:00:00Z\"}", false},
	    {"{\"active\":0,\"terminating\":0,\"succeeded\":3}", true},
	};
	struct controller *c = ctl_new();
	json_t *pod;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *job = ctl_job("team-a", "j", 2, 1, true, "default");

		json_object_set_new(job, "status", json_loads(cases[i].status, 0, NULL));
		ctl_job_event(c, KUBE_EV_MODIFIED, job);
		if (controller_release_quiet(c, controller_job(c, "j")) != cases[i].quiet)
			fail_msg("status %s: quiet %d, want %d", cases[i].status, !cases[i].quiet,
				 cases[i].quiet);
		json_decref(job);
	}
	/* its status says none, but the Pods watch still shows one running */
	pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
			"s:{s:[{s:s, s:s, s:{s:{s:s}}}]}, s:{s:s}}",
			"apiVersion", "v1", "kind", "Pod", "metadata", "name", "j-0", "namespace",
			"team-a", "uid", "j-0", "resourceVersion", "9", "creationTimestamp",
			"2026-11-25T00:00:00Z", "ownerReferences", "apiVersion", "batch/v1", "kind",
			"Job", "name", "j", "uid", "j", "controller", 1, "spec", "containers",
			"name", "main", "image", "x", "resources", "limits", "nvidia.com/gpu", "2",
			"status", "phase", "Running");
	assert_non_null(pod);
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	assert_int_equal(controller_pods_of_job(c, "j"), 1);
	assert_false(controller_release_quiet(c, controller_job(c, "j")));
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(controller_pods_of_job(c, "j"), 0);
	assert_true(controller_release_quiet(c, controller_job(c, "j")));
	json_decref(pod);
	ctl_free(c);
}

/* A TrainJob is released through its JobSet: its pod sets are the JobSet's
 * the Trainer made (cached), so it waits outside the queue until that
 * JobSet is seen; its release is one runtimePatches entry of manager
 * gpuq.dev/manager placing each replicatedJob on its flavor, with the
 * TrainJob unsuspended; its restore removes that entry (tested to be
 * gpuq's), and no template of its own is touched. */
static void trainjob_released_and_restored_through_a_runtime_patch(void **state)
{
	struct controller *c = ctl_new();
	json_t *tj =
	    json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:b, s:{s:s}, "
		      "s:{s:i, s:{s:{s:s}}}}}",
		      "apiVersion", "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata",
		      "name", "llama", "namespace", "team-a", "uid", "tj", "resourceVersion", "11",
		      "creationTimestamp", "2026-11-25T00:00:00Z", "labels", "gpuq.dev/queue-name",
		      "default", "spec", "suspend", 1, "runtimeRef", "name", "torch", "trainer",
		      "numNodes", 2, "resourcesPerNode", "limits", "nvidia.com/gpu", "4");
	json_t *js = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
	    "s:{s:b, s:[{s:s, s:i, s:{s:{s:i, s:i, s:{s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}}}}]}}",
	    "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", "llama",
	    "namespace", "team-a", "uid", "js", "resourceVersion", "12", "creationTimestamp",
	    "2026-11-25T00:00:00Z", "ownerReferences", "apiVersion",
	    "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "name", "llama", "uid", "tj",
	    "controller", 1, "spec", "suspend", 1, "replicatedJobs", "name", "node", "replicas", 1,
	    "template", "spec", "parallelism", 2, "completions", 2, "template", "spec",
	    "containers", "name", "node", "image", "x", "resources", "limits", "nvidia.com/gpu",
	    "4");
	queue_workload_view_t v;
	queue_result_t r;
	queue_wl_t id;
	json_t *body = NULL;
	controller_cevent_t ev;
	char *got;

	(void)state;
	assert_non_null(tj);
	assert_non_null(js);
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_TRAINJOB), KUBE_EV_ADDED, tj);
	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
	assert_int_equal(ctl_state(c, "tj"), -1); /* its JobSet not seen yet */
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_ADDED, js);
	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
	assert_int_equal(ctl_state(c, "tj"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_state(c, "js"), -1); /* the child is not a workload */
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(ctl_state(c, "tj"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "tj", &id), GPUQ_OK);
	/* named as people name it, where status, the web view and Events read */
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	assert_string_equal(v.name, "trainjob/llama");
	assert_int_equal(controller_release_parent_patch(c, controller_job(c, "tj"), id, &body),
			 GPUQ_OK);
	got = ctl_dump(body);
	assert_string_equal(
	    got,
	    "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"11\"},"
	    "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":{\"gpuq.dev/admitted\":"
	    "\"true\",\"gpuq.dev/flavors\":\"nvidia.com/gpu=h100\","
	    "\"gpuq.dev/original-scheduling\":\"{\\\"nodeSelector\\\":null,\\\"tolerations\\\":"
	    "null}\",\"gpuq.dev/status\":\"admitted in ClusterQueue cq: 8 nvidia.com/gpu on "
	    "flavor h100\"}},"
	    "{\"op\":\"add\",\"path\":\"/spec/runtimePatches\",\"value\":[{\"manager\":"
	    "\"gpuq.dev/manager\",\"trainingRuntimeSpec\":{\"template\":{\"spec\":{"
	    "\"replicatedJobs\":[{\"name\":\"node\",\"template\":{\"spec\":{\"template\":{"
	    "\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":\"true\"},\"labels\":{"
	    "\"gpuq.dev/managed\":\"true\"}},\"spec\":{\"nodeSelector\":{"
	    "\"nvidia.com/gpu.product\":\"H100\"},\"tolerations\":[{\"effect\":\"NoSchedule\","
	    "\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}}}}}]}}}}]},"
	    "{\"op\":\"add\",\"path\":\"/spec/suspend\",\"value\":false}]");
	free(got);
	json_decref(body);
	/* as released (another runtime patch first), then preempted: the
	 * restore takes out gpuq's entry only */
	json_object_set_new(json_object_get(tj, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_ORIGINAL, "{}"));
	json_object_set_new(
	    json_object_get(tj, "spec"), "runtimePatches",
	    json_pack("[{s:s}, {s:s}]", "manager", "team.io/tuner", "manager", "gpuq.dev/manager"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_TRAINJOB), KUBE_EV_MODIFIED, tj);
	body = controller_release_restore_patch(ev.wl);
	got = ctl_dump(body);
	assert_string_equal(
	    got, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"11\"},"
		 "{\"op\":\"test\",\"path\":\"/spec/runtimePatches/1/manager\",\"value\":"
		 "\"gpuq.dev/manager\"},"
		 "{\"op\":\"remove\",\"path\":\"/spec/runtimePatches/1\"},"
		 "{\"op\":\"remove\",\"path\":\"/metadata/annotations/gpuq.dev~1original-"
		 "scheduling\"}]");
	free(got);
	json_decref(body);
	controller_cevent_deinit(&ev);
	json_decref(tj);
	json_decref(js);
	ctl_free(c);
}

/* The op of patch at path (op verb), or NULL. */
static const json_t *patch_op(const json_t *patch, const char *verb, const char *path)
{
	for (size_t i = 0; i < json_array_size(patch); i++) {
		const json_t *o = json_array_get(patch, i);

		if (!strcmp(json_string_value(json_object_get(o, "op")), verb) &&
		    !strcmp(json_string_value(json_object_get(o, "path")), path))
			return o;
	}
	return NULL;
}

/* A RayJob with a queued (suspended) event: the head's image as given ("":
 * none), the submitter's template as given (NULL: none). */
static json_t *submitter_rayjob(const char *image, json_t *submitter)
{
	json_t *rj = json_loads(
	    "{\"apiVersion\": \"ray.io/v1\", \"kind\": \"RayJob\", \"metadata\": {\"name\": "
	    "\"rj\", \"namespace\": \"team-a\", \"uid\": \"rj\", \"resourceVersion\": \"5\", "
	    "\"creationTimestamp\": \"2026-11-25T00:00:00Z\", \"labels\": "
	    "{\"gpuq.dev/queue-name\": \"default\"}}, \"spec\": {\"suspend\": true, "
	    "\"shutdownAfterJobFinishes\": true, \"rayClusterSpec\": {\"headGroupSpec\": "
	    "{\"template\": {\"spec\": {\"containers\": [{\"name\": \"h\", \"resources\": "
	    "{\"requests\": {\"cpu\": \"1\"}}}]}}}, \"workerGroupSpecs\": [{\"groupName\": \"g\", "
	    "\"replicas\": 1, \"template\": {\"spec\": {\"containers\": [{\"name\": \"w\", "
	    "\"resources\": {\"limits\": {\"nvidia.com/gpu\": \"2\"}}}]}}}]}}}",
	    0, NULL);
	json_t *spec = json_object_get(rj, "spec");

	if (*image)
		json_object_set_new(
		    json_array_get(
			json_object_get(
			    json_object_get(
				json_object_get(
				    json_object_get(json_object_get(spec, "rayClusterSpec"),
						    "headGroupSpec"),
				    "template"),
				"spec"),
			    "containers"),
			0),
		    "image", json_string(image));
	if (submitter)
		json_object_set_new(spec, "submitterPodTemplate", submitter);
	return rj;
}

/* The release patch of rj (admitted by a cycle), its flavors checked. */
static json_t *submitter_release(struct controller *c, json_t *rj)
{
	controller_cevent_t ev =
	    ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_RAYJOB), KUBE_EV_ADDED, rj);
	queue_result_t r;
	queue_wl_t id;
	json_t *body = NULL;
	char *got;

	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(ctl_state(c, "rj"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "rj", &id), GPUQ_OK);
	assert_int_equal(controller_release_parent_patch(c, controller_job(c, "rj"), id, &body),
			 GPUQ_OK);
	got = ctl_dump(body);
	if (!strstr(got, "2:cpu=h100,2:memory=h100"))
		fail_msg("the submitter's flavors not named: %s", got);
	assert_non_null(strstr(got, "\"path\":\"/spec/suspend\",\"value\":false"));
	free(got);
	return body;
}

/* The restore patch of rj once released with original-scheduling orig. */
static json_t *submitter_restore(json_t *rj, const char *orig)
{
	controller_cevent_t ev;
	json_t *body;

	json_object_set_new(json_object_get(rj, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_ORIGINAL, orig));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_RAYJOB), KUBE_EV_MODIFIED, rj);
	body = controller_release_restore_patch(ev.wl);
	controller_cevent_deinit(&ev);
	return body;
}

/* team-a's ClusterQueue: cpu, memory and GPUs on flavor h100 (its nodes
 * labelled). */
#define SUBMITTER_POLICY                                                                           \
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"        \
	"spec:\n  nodeLabels: {nvidia.com/gpu.product: H100}\n"                                    \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"            \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"                 \
	"    flavors:\n    - name: h100\n      resources: [{name: cpu, nominalQuota: 64}, "        \
	"{name: memory, nominalQuota: 1Ti}, {name: nvidia.com/gpu, nominalQuota: 8}]\n"            \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: default}\nspec: {clusterQueue: cq}\n"

/* A RayJob in K8sJobMode (KubeRay's default): its submitter Pod is a pod
 * set of its own, charged to the ClusterQueue (500m cpu and 200Mi of
 * KubeRay's default Pod), named in the flavors annotation, and placed as
 * Kueue places it: with no template of the tenant's, the release writes
 * KubeRay's default (its image copied from the head's) on the flavor's
 * nodes, and the restore takes it away; into a tenant's template it writes
 * the flavor's nodeSelector, and the restore puts the tenant's back. A head
 * with no image leaves nothing to copy: no template is written. */
static void rayjob_submitter_placed(void **state)
{
	struct controller *c = ctl_new_policy(SUBMITTER_POLICY);
	json_t *rj = submitter_rayjob("rayproject/ray:2.46.0", NULL), *body, *tmpl;
	const json_t *o;
	uint32_t cpu, h100;
	queue_quota_view_t qv;
	char *got;

	(void)state;
	assert_non_null(rj);
	body = submitter_release(c, rj);
	/* the head's 1 cpu and the submitter's 500m */
	assert_int_equal(queue_resource_find(engine_core(c->e), "cpu", &cpu), GPUQ_OK);
	assert_int_equal(queue_flavor_find(engine_core(c->e), "h100", &h100), GPUQ_OK);
	assert_int_equal(queue_cq_quota(engine_core(c->e), 0, h100, cpu, &qv), GPUQ_OK);
	assert_int_equal(qv.usage, 1500);
	o = patch_op(body, "add", "/spec/submitterPodTemplate");
	if (!o)
		fail_msg("no default submitter template written: %s", ctl_dump(body));
	tmpl = json_object_get(o, "value");
	got = ctl_dump(tmpl);
	assert_string_equal(
	    got, "{\"spec\":{\"containers\":[{\"name\":\"ray-job-submitter\",\"resources\":{"
		 "\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"500m\","
		 "\"memory\":\"200Mi\"}}}],\"nodeSelector\":{\"nvidia.com/gpu.product\":\"H100\"},"
		 "\"restartPolicy\":\"Never\",\"tolerations\":[]}}");
	free(got);
	o = patch_op(body, "copy", "/spec/submitterPodTemplate/spec/containers/0/image");
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "from")),
			    "/spec/rayClusterSpec/headGroupSpec/template/spec/containers/0/image");
	got = ctl_dump(body);
	if (!strstr(got, "{\\\"absent\\\":true}"))
		fail_msg("the template's absence not recorded: %s", got);
	free(got);
	/* released, then preempted: the template the release wrote goes */
	json_object_set_new(json_object_get(rj, "spec"), "submitterPodTemplate",
			    json_deep_copy(tmpl));
	json_decref(body);
	body = submitter_restore(rj, "{\"podsets\":[{},{},{\"absent\":true}]}");
	assert_non_null(patch_op(body, "remove", "/spec/submitterPodTemplate"));
	json_decref(body);
	json_decref(rj);
	ctl_free(c);

	/* the tenant's template: placed, and its own nodeSelector put back */
	c = ctl_new_policy(SUBMITTER_POLICY);
	rj = submitter_rayjob("",
			      json_pack("{s:{s:{s:s}, s:[{s:s, s:{s:{s:s, s:s}}}]}}", "spec",
					"nodeSelector", "pool", "cpu", "containers", "name", "s",
					"resources", "requests", "cpu", "250m", "memory", "100Mi"));
	body = submitter_release(c, rj);
	o = patch_op(body, "add", "/spec/submitterPodTemplate/spec/nodeSelector");
	assert_non_null(o);
	got = ctl_dump(json_object_get(o, "value"));
	assert_string_equal(got, "{\"nvidia.com/gpu.product\":\"H100\",\"pool\":\"cpu\"}");
	free(got);
	got = ctl_dump(body);
	if (strstr(got, "/spec/submitterPodTemplate/metadata"))
		fail_msg("the submitter's template annotated: %s", got);
	free(got);
	json_decref(body);
	body = submitter_restore(rj, "{\"podsets\":[{},{},{\"nodeSelector\":{\"pool\":\"cpu\"}}]}");
	o = patch_op(body, "add", "/spec/submitterPodTemplate/spec/nodeSelector");
	assert_non_null(o);
	got = ctl_dump(json_object_get(o, "value"));
	assert_string_equal(got, "{\"pool\":\"cpu\"}");
	free(got);
	json_decref(body);
	json_decref(rj);
	ctl_free(c);

	/* no image on the head: KubeRay's default is left unplaced */
	c = ctl_new_policy(SUBMITTER_POLICY);
	rj = submitter_rayjob("", NULL);
	body = submitter_release(c, rj);
	got = ctl_dump(body);
	if (strstr(got, "submitterPodTemplate"))
		fail_msg("a template written with no image to copy: %s", got);
	free(got);
	json_decref(body);
	json_decref(rj);
	ctl_free(c);
}

/* ClusterQueue and LocalQueue status: counts, usage per flavor and
 * resource (what is borrowed above nominal), GPUs in use. */
static void queue_status_counts_and_usage(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 2, 2, true, "default"); /* 4 GPUs */
	json_t *b = ctl_job("team-a", "b", 3, 1, true, "default");
	json_t *big = ctl_job("team-a", "big", 8, 1, true, "default");
	queue_result_t r;
	json_t *st;
	char *got;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_ADDED, big);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 2);
	assert_int_equal(queue_cq_count(engine_core(c->e)), 1);
	st = controller_status_cq_body(c, 0);
	assert_non_null(st);
	got = ctl_dump(st);
	assert_string_equal(got, "{\"admittedWorkloads\":2,\"flavorsUsage\":[{\"name\":\"h100\","
				 "\"resources\":[{\"borrowed\":\"0\",\"name\":\"nvidia.com/gpu\","
				 "\"total\":\"7\"}]}],\"gpusInUse\":7,\"pendingWorkloads\":1,"
				 "\"reservingWorkloads\":2}");
	free(got);
	json_decref(st);
	assert_int_equal(queue_lq_count(engine_core(c->e)), 1);
	assert_string_equal(queue_lq_name(engine_core(c->e), 0), "team-a/default");
	st = controller_status_lq_body(c, 0);
	assert_non_null(st);
	assert_int_equal(json_integer_value(json_object_get(st, "admittedWorkloads")), 2);
	assert_int_equal(json_integer_value(json_object_get(st, "pendingWorkloads")), 1);
	assert_int_equal(json_integer_value(json_object_get(st, "reservingWorkloads")), 2);
	assert_true(json_is_real(json_object_get(st, "decayedUsage")));
	json_decref(st);
	assert_null(controller_status_cq_body(c, 5));
	assert_null(controller_status_lq_body(c, 5));
	json_decref(a);
	json_decref(b);
	json_decref(big);
	ctl_free(c);
}

/* The usage checkpoint ConfigMap: named gpuq-usage-<i> in the Lease's
 * namespace, its part as base64 in binaryData.ledger; that part merges into
 * a replica's fresh core as every GPU-hour the leader counted, and a second
 * merge adds nothing. */
static void usage_checkpoint_configmap_carries_the_ledger(void **state)
{
	struct controller *c = ctl_new(), *other = ctl_new();
	json_t *a = ctl_job("team-a", "a", 2, 1, true, "default");
	uint8_t *parts[LEDGER_CKPT_PARTS_MAX] = {0};
	size_t lens[LEDGER_CKPT_PARTS_MAX] = {0};
	ledger_ckpt_info_t info;
	ledger_merge_info_t mi = {0};
	gpuq_diag_t d = {{0}};
	queue_result_t r;
	json_t *cm;
	const char *b64;
	char *part = NULL;
	size_t len = 0;
	int64_t t0 = 1764000000000; /* ms */

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(ctl_step(c->e, t0, 1, &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 1);
	/* 2 GPUs for an hour and a half */
	assert_int_equal(
	    engine_change_apply(
		c->e,
		&(engine_change_t){.kind = ENGINE_CHANGE_FINISH, .uid = "a", .now = t0 + 5400000},
		NULL),
	    GPUQ_OK);
	assert_int_equal(ledger_checkpoint_encode(queue_ledger(engine_core(c->e)), t0 + 7200000, 0,
						  parts, lens, &info),
			 GPUQ_OK);
	assert_int_equal(info.parts, 1);
	c->o.lease_namespace = "gpuq-system";
	cm = controller_usage_cm_body(c, 0, parts[0], lens[0], "summary text");
	assert_non_null(cm);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cm, "metadata"), "name")),
	    "gpuq-usage-0");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cm, "metadata"), "namespace")),
	    "gpuq-system");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cm, "data"), "summary")),
	    "summary text");
	b64 = json_string_value(json_object_get(json_object_get(cm, "binaryData"), "ledger"));
	assert_non_null(b64);
	assert_int_equal(gpuq_base64_decode(b64, LEDGER_CKPT_PART_MAX, &part, &len), GPUQ_OK);
	assert_int_equal(len, lens[0]);
	assert_memory_equal(part, parts[0], len);
	assert_int_equal(engine_change_apply(other->e,
					     &(engine_change_t){.kind = ENGINE_CHANGE_LEDGER_MERGE,
								.part = (const uint8_t *)part,
								.len = len,
								.merged = &mi},
					     &d),
			 GPUQ_OK);
	assert_true(mi.added_acc_hours > 2.999 && mi.added_acc_hours < 3.001); /* 2 x 1.5 h */
	assert_int_equal(engine_change_apply(other->e,
					     &(engine_change_t){.kind = ENGINE_CHANGE_LEDGER_MERGE,
								.part = (const uint8_t *)part,
								.len = len,
								.merged = &mi},
					     &d),
			 GPUQ_OK);
	assert_true(mi.added_acc_hours == 0.0);
	free(part);
	for (int i = 0; i < LEDGER_CKPT_PARTS_MAX; i++)
		free(parts[i]);
	json_decref(cm);
	json_decref(a);
	ctl_free(c);
	ctl_free(other);
}

/* A failed checkpoint is tried again 2 s later, doubling with each failure
 * in a row, never later than the checkpoint interval. */
static void usage_retry_doubles_up_to_the_interval(void **state)
{
	struct controller *c = calloc(1, sizeof(*c));
	static const int64_t want[] = {2000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000};

	(void)state;
	assert_non_null(c);
	c->o.usage_checkpoint_ms = 60000;
	for (uint32_t n = 0; n < sizeof(want) / sizeof(want[0]); n++) {
		c->usage_failures = n;
		assert_int_equal(controller_usage_retry_at(c, 1000) - 1000, want[n]);
	}
	c->o.usage_checkpoint_ms = 1000; /* shorter than the first retry */
	c->usage_failures = 5;
	assert_int_equal(controller_usage_retry_at(c, 0), 2000);
	free(c);
}

/* A decoded, resolved pod set as the core's: zero requests left out (they
 * need no quota), selectors and tolerations carried, operators and effects
 * mapped; a toleration whose effect Kubernetes does not know tolerates no
 * taint and is left out (not read as every effect, nor as NoExecute). */
static void podset_from_a_decoded_object(void **state)
{
	json_t *obj = ctl_job("team-a", "j", 2, 4, true, "default"), *spec;
	controller_cevent_t ev;
	gpuq_diag_t d = {{0}};
	controller_podset_buf_t b;
	queue_podset_spec_t ps;

	(void)state;
	spec = json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec");
	json_object_set_new(spec, "nodeSelector", json_pack("{s:s}", "disk", "ssd"));
	json_object_set_new(
	    spec, "tolerations",
	    json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s}]", "key",
		      "nvidia.com/gpu", "operator", "Exists", "effect", "NoSchedule", "key", "spot",
		      "operator", "Equal", "value", "yes", "effect", "NoExecute", "key", "odd",
		      "operator", "Exists", "effect", "Sometimes", "operator", "Exists"));
	json_object_set_new(
	    json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "resources"),
	    "requests", json_pack("{s:s, s:s}", "cpu", "0", "memory", "1Mi"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_ADDED, obj);
	assert_int_equal(workload_resolve(ev.wl, NULL, &d), GPUQ_OK);
	controller_podset_from(&ev.wl->podsets[0], 4, &b, &ps);
	assert_int_equal(ps.count, 4);
	assert_int_equal(ps.n_requests, 2);
	assert_string_equal(ps.requests[0].resource, "memory");
	assert_int_equal(ps.requests[0].amount, 1 << 20);
	assert_string_equal(ps.requests[1].resource, "nvidia.com/gpu");
	assert_int_equal(ps.requests[1].amount, 2);
	assert_int_equal(ps.n_node_selector, 1);
	assert_string_equal(ps.node_selector[0].key, "disk");
	assert_int_equal(ps.n_tolerations, 3);
	assert_int_equal(ps.tolerations[0].op, QUEUE_TOLERATE_EXISTS);
	assert_int_equal(ps.tolerations[0].effect, QUEUE_EFFECT_NO_SCHEDULE);
	assert_int_equal(ps.tolerations[1].op, QUEUE_TOLERATE_EQUAL);
	assert_string_equal(ps.tolerations[1].value, "yes");
	assert_int_equal(ps.tolerations[1].effect, QUEUE_EFFECT_NO_EXECUTE);
	assert_string_equal(ps.tolerations[2].key, ""); /* every key */
	assert_int_equal(ps.tolerations[2].effect, QUEUE_EFFECT_ANY);
	controller_cevent_deinit(&ev);
	json_decref(obj);
}

/* A kubeconfig naming a port nothing listens on (the caller destroys it). */
static kube_config_t *closed_config(void)
{
	char path[] = "/tmp/gpuq-ctl-kubeconfig-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	kube_config_t *cfg = NULL;
	gpuq_diag_t diag = {{0}};

	assert_non_null(f);
	fputs("current-context: c\nclusters:\n- name: k\n  cluster:\n"
	      "    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n"
	      "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
	      "users:\n- name: u\n  user: {token: t}\n",
	      f);
	fclose(f);
	assert_int_equal(kube_config_load(path, &cfg, &diag), GPUQ_OK);
	unlink(path);
	return cfg;
}

/* A status writer that never writes: its fence is never held, so what
 * controller_status_jobs hands it waits, counted by controller_swriter_backlog. */
static controller_swriter_t *idle_writer(kube_config_t **cfg, kube_fence_t **fence)
{
	kube_client_opts_t o;
	gpuq_diag_t diag = {{0}};
	controller_swriter_t *w = NULL;

	*cfg = closed_config();
	assert_int_equal(kube_fence_create(fence), GPUQ_OK);
	kube_client_opts_default(&o);
	assert_int_equal(controller_swriter_start(*cfg, &o, "t", *fence, &w, &diag), GPUQ_OK);
	return w;
}

/* A client to a port nothing listens on: every request fails at once. */
static kube_client_t *closed_client(kube_config_t **cfg)
{
	kube_client_opts_t o;
	kube_client_t *k = NULL;
	gpuq_diag_t diag = {{0}};

	*cfg = closed_config();
	kube_client_opts_default(&o);
	assert_int_equal(kube_client_create(*cfg, &o, &k, &diag), GPUQ_OK);
	return k;
}

/* CTL_POLICY with a ResourceQuota of 3 GPUs in team-a. */
#define RQ_POLICY                                                                                  \
	CTL_POLICY "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: team-a, "      \
		   "name: gpus}\nspec: {hard: {requests.nvidia.com/gpu: '3'}}\n"

/* The end of a ResourceQuota case: its closed client and controller gone. */
static void rq_done(struct controller *c, kube_config_t *cfg)
{
	kube_client_destroy(c->client);
	c->client = NULL;
	kube_config_destroy(cfg);
	ctl_free(c);
}

/* A release counts the pods still to come of the namespace's other
 * released Jobs against its ResourceQuota (the apiserver charges a pod at
 * its creation): r1, released, its 2 pods not made yet, and n1's 2 are 4
 * GPUs of the quota's 3, so n1 is held and says why. */
static void release_held_by_the_pods_of_released_jobs(void **state)
{
	struct controller *c = ctl_new_policy(RQ_POLICY);
	json_t *r1 = ctl_job("team-a", "r1", 1, 2, false, NULL);
	json_t *n1 = ctl_job("team-a", "n1", 1, 2, true, "default");
	kube_config_t *cfg = NULL;
	controller_job_t *j;
	queue_wl_t id;

	(void)state;
	json_object_set_new(json_object_get(r1, "metadata"), "annotations",
			    json_pack("{s:s}", "gpuq.dev/admitted", "true"));
	ctl_job_event(c, KUBE_EV_ADDED, r1);
	j = admitted_job(c, "n1", n1, &id);
	c->client = closed_client(&cfg);
	controller_actuate_job(c, j);
	assert_non_null(j->rq_wait);
	assert_non_null(strstr(j->rq_wait, "waiting for the namespace's ResourceQuota"));
	/* r1 stopped: nothing of it to come, n1 goes (its release fails here:
	   nothing listens) */
	controller_actuate_rq_clear(c, j);
	json_object_set_new(json_object_get(r1, "spec"), "suspend", json_true());
	ctl_job_event(c, KUBE_EV_MODIFIED, r1);
	controller_actuate_job(c, j);
	assert_null(j->rq_wait);
	rq_done(c, cfg);
	json_decref(r1);
	json_decref(n1);
}

/* Releases of one pass go out together, a namespace with ResourceQuotas
 * too: each is judged with the ones batched before it, whose pods are all
 * still to come. n1's release batched, n2 (2 + 2 GPUs of the quota's 3) is
 * held; with the batch gone (sent and refused), n2 is not. */
static void release_counts_the_releases_batched_before_it(void **state)
{
	struct controller *c = ctl_new_policy(RQ_POLICY);
	json_t *n1 = ctl_job("team-a", "n1", 1, 2, true, "default");
	json_t *n2 = ctl_job("team-a", "n2", 1, 2, true, "default");
	kube_config_t *cfg = NULL;
	controller_job_t *j1, *j2;
	queue_wl_t id;

	(void)state;
	j1 = admitted_job(c, "n1", n1, &id);
	j2 = admitted_job(c, "n2", n2, &id);
	c->client = closed_client(&cfg);
	assert_int_equal(
	    controller_patch_batch(c, j1, KUBE_PATCH_JSON, json_array(), "released", 1), GPUQ_OK);
	controller_actuate_job(c, j2);
	assert_non_null(j2->rq_wait);
	assert_non_null(strstr(j2->rq_wait, "requested: requests.nvidia.com/gpu=4"));
	for (size_t i = 0; i < c->n_batch; i++) {
		json_decref(c->batch[i].body);
		free(c->batch[i].uid);
	}
	c->n_batch = 0;
	controller_actuate_rq_clear(c, j2);
	controller_actuate_job(c, j2); /* fits: its release is tried (nothing listens) */
	assert_null(j2->rq_wait);
	free(c->batch);
	rq_done(c, cfg);
	json_decref(n1);
	json_decref(n2);
}

/* gpuq.dev/status is written only when it differs from what the Job
 * carries: a Job the webhook created with the waiting text costs no write,
 * one without it costs one, and a position moving never does (the text
 * has none). */
static void status_written_only_when_it_changes(void **state)
{
	struct controller *c = ctl_new();
	kube_config_t *cfg = NULL;
	kube_fence_t *fence = NULL;
	json_t *a = ctl_job("team-a", "a", 8, 1, true, "default");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	json_t *d = ctl_job("team-a", "d", 8, 1, true, "default");
	char waiting[256];

	(void)state;
	c->swriter = idle_writer(&cfg, &fence);
	assert_int_equal(queue_status_waiting("cq", waiting, sizeof(waiting)), GPUQ_OK);
	json_object_set_new(json_object_get(a, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_STATUS, waiting));
	json_object_set_new(json_object_get(b, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_STATUS, waiting));
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	controller_status_jobs(c);
	assert_int_equal(controller_swriter_backlog(c->swriter), 0); /* both carry it already */
	ctl_job_event(c, KUBE_EV_ADDED, d);			     /* created without it */
	controller_status_jobs(c);
	assert_int_equal(controller_swriter_backlog(c->swriter), 1);
	/* a (8 of 8 GPUs) is admitted: b and d move up, noted again, not written */
	{
		queue_result_t r;
		assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, "a");
		for (size_t i = 0; i < r.n_changes; i++)
			controller_status_note(c, r.changes[i].uid);
	}
	controller_status_note(c, "b");
	controller_status_note(c, "d");
	controller_status_jobs(c);
	assert_int_equal(controller_swriter_backlog(c->swriter), 1);
	kube_fence_stop(fence); /* first: the writer may wait on it */
	controller_swriter_stop(c->swriter);
	c->swriter = NULL;
	kube_fence_destroy(fence);
	kube_config_destroy(cfg);
	json_decref(a);
	json_decref(b);
	json_decref(d);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(release_held_by_the_pods_of_released_jobs),
	    cmocka_unit_test(release_counts_the_releases_batched_before_it),
	    cmocka_unit_test(placement_adds_the_flavors_labels_and_tolerations),
	    cmocka_unit_test(release_body_unsuspends_with_the_placement),
	    cmocka_unit_test(release_body_starts_from_the_original_template),
	    cmocka_unit_test(suspend_body_takes_the_admission_back),
	    cmocka_unit_test(restore_body_puts_the_template_back),
	    cmocka_unit_test(quiet_only_when_every_pod_is_gone),
	    cmocka_unit_test(trainjob_released_and_restored_through_a_runtime_patch),
	    cmocka_unit_test(rayjob_submitter_placed),
	    cmocka_unit_test(queue_status_counts_and_usage),
	    cmocka_unit_test(usage_checkpoint_configmap_carries_the_ledger),
	    cmocka_unit_test(usage_retry_doubles_up_to_the_interval),
	    cmocka_unit_test(podset_from_a_decoded_object),
	    cmocka_unit_test(status_written_only_when_it_changes),
	};

	return cmocka_run_group_tests_name("controller_actuate", tests, NULL, NULL);
}

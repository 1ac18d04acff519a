/* Unit tests for the controller's side of a workload's edits (issue 31): a
 * queued Job whose object changes is recomputed in the core from the watch
 * event (controller/jobs.c, put_in_core), never admitted for what it asked
 * before. Issue 31's first two rows, without an apiserver: parallelism 1 ->
 * 8 while queued, then a 7-GPU Job, on a quota of 8; the queue label moved.
 * Fixtures in unit/controller_fixtures.h (ClusterQueue cq: 8 GPUs). */
#include "unit/controller_fixtures.h"

/* Pods the core's workload uid asks for; -1 when the core does not hold it. */
static int ctl_pods(const struct controller *c, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (engine_workload_find(c->e, uid, &id) || engine_workload_view(c->e, id, &v))
		return -1;
	return v.pods;
}

static bool admitted_in(const queue_result_t *r, const char *uid)
{
	for (size_t i = 0; i < r->n_admissions; i++)
		if (!strcmp(r->admissions[i].uid, uid))
			return true;
	return false;
}

/* Parallelism raised 1 -> 8 while queued: the core asks for 8 GPUs; a
 * 7-GPU Job behind it waits once it is admitted. */
static void queued_parallelism_follows(void **state)
{
	struct controller *c = ctl_new();
	json_t *big = ctl_job("team-a", "big", 1, 8, true, "default");
	json_t *j = ctl_job("team-a", "j", 1, 1, true, "default");
	json_t *j8 = ctl_job("team-a", "j", 1, 8, true, "default");
	json_t *seven = ctl_job("team-a", "seven", 7, 1, true, "default");
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, big);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "big"));
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(ctl_pods(c, "j"), 1);
	ctl_job_event(c, KUBE_EV_MODIFIED, j8);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_pods(c, "j"), 8);
	ctl_job_event(c, KUBE_EV_ADDED, seven);
	assert_int_equal(engine_workload_finish(c->e, "big", controller_now(c)), GPUQ_OK);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "j"));
	assert_false(admitted_in(&r, "seven"));
	assert_int_equal(ctl_state(c, "seven"), QUEUE_WL_PENDING);
	json_decref(big);
	json_decref(j);
	json_decref(j8);
	json_decref(seven);
	ctl_free(c);
}

/* Scaled to no pods while queued, the Job leaves the queue (it waits
 * outside, as one created so does); scaled back, it returns. */
static void queued_scaled_to_zero_and_back(void **state)
{
	struct controller *c = ctl_new();
	json_t *j = ctl_job("team-a", "j", 1, 2, true, "default");
	json_t *none = ctl_job("team-a", "j", 1, 0, true, "default");
	json_t *three = ctl_job("team-a", "j", 1, 3, true, "default");

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(ctl_pods(c, "j"), 2);
	ctl_job_event(c, KUBE_EV_MODIFIED, none);
	assert_int_equal(ctl_state(c, "j"), -1);
	ctl_job_event(c, KUBE_EV_MODIFIED, three);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_pods(c, "j"), 3);
	json_decref(j);
	json_decref(none);
	json_decref(three);
	ctl_free(c);
}

/* The queue label moved while queued to a LocalQueue the policy lacks: the
 * Job leaves the queue it was in (never admitted from it) and waits
 * outside; moved back, it queues again. */
static void queued_label_moves_it(void **state)
{
	struct controller *c = ctl_new();
	json_t *j = ctl_job("team-a", "j", 1, 1, true, "default");
	json_t *moved = ctl_job("team-a", "j", 1, 1, true, "nowhere");
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	ctl_job_event(c, KUBE_EV_MODIFIED, moved);
	assert_int_equal(ctl_state(c, "j"), -1);
	assert_true(controller_job(c, "j")->bad);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 0);
	ctl_job_event(c, KUBE_EV_MODIFIED, j);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "j"));
	json_decref(j);
	json_decref(moved);
	ctl_free(c);
}

/* Job j as released by gpuq: unsuspended, marked admitted. A new reference. */
static json_t *released(json_t *job)
{
	json_t *r = json_deep_copy(job), *meta = json_object_get(r, "metadata");

	assert_non_null(r);
	json_object_set_new(json_object_get(r, "spec"), "suspend", json_false());
	json_object_set_new(meta, "annotations", json_pack("{s:s}", "gpuq.dev/admitted", "true"));
	json_object_set_new(meta, "resourceVersion", json_string("8"));
	return r;
}

/* Once released, the core keeps what it admitted (the webhook refuses the
 * edits that would grow it): neither the release's own event nor a shrink
 * changes the core. */
static void admitted_keeps_its_admission(void **state)
{
	struct controller *c = ctl_new();
	json_t *j = ctl_job("team-a", "j", 1, 2, true, "default");
	json_t *j1 = ctl_job("team-a", "j", 1, 1, true, "default");
	json_t *rj = released(j), *rj1 = released(j1);
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "j"));
	ctl_job_event(c, KUBE_EV_MODIFIED, rj);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_ADMITTED);
	ctl_job_event(c, KUBE_EV_MODIFIED, rj1);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_pods(c, "j"), 2);
	json_decref(j);
	json_decref(j1);
	json_decref(rj);
	json_decref(rj1);
	ctl_free(c);
}

/* Admitted but not yet released, the Job is still queued to the apiserver
 * and the webhook takes its edits: parallelism raised 1 -> 8 takes its
 * admission back (released as it stands, it would run 8 Pods on 1 GPU of
 * quota: issue 31's release window); it queues again for 8, keeping its
 * place ahead of a 7-GPU Job: one of them runs on the quota of 8, never
 * both. An event that changes nothing of
 * what it asks (a status) keeps the admission. */
static void unreleased_edit_queues_again(void **state)
{
	struct controller *c = ctl_new();
	json_t *j = ctl_job("team-a", "j", 1, 1, true, "default");
	json_t *js = ctl_job("team-a", "j", 1, 1, true, "default");
	json_t *j8 = ctl_job("team-a", "j", 1, 8, true, "default");
	json_t *seven = ctl_job("team-a", "seven", 7, 1, true, "default");
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "j"));
	json_object_set_new(json_object_get(js, "status"), "active", json_integer(0));
	json_object_set_new(json_object_get(js, "metadata"), "resourceVersion", json_string("9"));
	ctl_job_event(c, KUBE_EV_MODIFIED, js);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_ADMITTED);
	ctl_job_event(c, KUBE_EV_MODIFIED, j8);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_pods(c, "j"), 8);
	ctl_job_event(c, KUBE_EV_ADDED, seven);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "j"));
	assert_int_equal(ctl_pods(c, "j"), 8);
	assert_false(admitted_in(&r, "seven"));
	assert_int_equal(ctl_state(c, "seven"), QUEUE_WL_PENDING);
	json_decref(j);
	json_decref(js);
	json_decref(j8);
	json_decref(seven);
	ctl_free(c);
}

/* A running Pod of Job `job` (namespace team-a, 1 GPU, uid and name `name`)
 * as the watch shows it: a new reference. */
static json_t *job_pod(const char *name, const char *job)
{
	json_t *pod = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
	    "s:{s:s, s:[{s:s, s:s, s:{s:{s:s}}}]}, s:{s:s}}",
	    "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "team-a",
	    "uid", name, "resourceVersion", "4", "creationTimestamp", "2026-11-25T00:00:00Z",
	    "ownerReferences", "apiVersion", "batch/v1", "kind", "Job", "name", job, "uid", job,
	    "controller", 1, "spec", "nodeName", "h100-0", "containers", "name", "main", "image",
	    "x", "resources", "limits", "nvidia.com/gpu", "8", "status", "phase", "Running");

	assert_non_null(pod);
	return pod;
}

/* A released Job deleted while its Pod still runs (the garbage collector
 * deletes Pods after their Job) keeps its quota until the Pod is gone: an
 * 8-GPU Job behind it waits till then (issue 31's edit storm held 11 GPUs
 * of 10). */
static void deleted_job_holds_quota_until_its_pods_go(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 8, 1, true, "default");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	json_t *pod = job_pod("a-x", "a");
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "a"));
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	assert_int_equal(controller_pods_of_job(c, "a"), 1);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_DELETED, a);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	assert_true(controller_job(c, "a")->gone);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_false(admitted_in(&r, "b"));
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(ctl_state(c, "a"), -1);
	assert_null(controller_job(c, "a"));
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	json_decref(a);
	json_decref(b);
	json_decref(pod);
	ctl_free(c);
}

/* An admitted Job scaled to no pods (a shrink: taken) runs nothing: once
 * its last pod is gone its quota is free (it held 8 GPUs for good and
 * wedged the queue: the edit storm's two Jobs that waited for ever). */
static void admitted_scaled_to_zero_lets_go(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 8, 1, true, "default");
	json_t *a0 = ctl_job("team-a", "a", 8, 0, false, "default");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	json_t *pod = job_pod("a-x", "a");
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "a"));
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_MODIFIED, a0);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED); /* its pod still runs */
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(ctl_state(c, "a"), -1);
	assert_int_equal(engine_cycle(c->e, controller_now(c), &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	json_decref(a);
	json_decref(a0);
	json_decref(b);
	json_decref(pod);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(queued_parallelism_follows),
	    cmocka_unit_test(queued_scaled_to_zero_and_back),
	    cmocka_unit_test(queued_label_moves_it),
	    cmocka_unit_test(admitted_keeps_its_admission),
	    cmocka_unit_test(unreleased_edit_queues_again),
	    cmocka_unit_test(deleted_job_holds_quota_until_its_pods_go),
	    cmocka_unit_test(admitted_scaled_to_zero_lets_go),
	};

	return cmocka_run_group_tests_name("controller_edit", tests, NULL, NULL);
}

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

	if (queue_workload_find(engine_core(c->e), uid, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
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
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "big"));
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(ctl_pods(c, "j"), 1);
	ctl_job_event(c, KUBE_EV_MODIFIED, j8);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_pods(c, "j"), 8);
	ctl_job_event(c, KUBE_EV_ADDED, seven);
	ctl_finish(c, "big");
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
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
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 0);
	ctl_job_event(c, KUBE_EV_MODIFIED, j);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
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
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
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
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "j"));
	json_object_set_new(json_object_get(js, "status"), "active", json_integer(0));
	json_object_set_new(json_object_get(js, "metadata"), "resourceVersion", json_string("9"));
	ctl_job_event(c, KUBE_EV_MODIFIED, js);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_ADMITTED);
	ctl_job_event(c, KUBE_EV_MODIFIED, j8);
	assert_int_equal(ctl_state(c, "j"), QUEUE_WL_PENDING);
	assert_int_equal(ctl_pods(c, "j"), 8);
	ctl_job_event(c, KUBE_EV_ADDED, seven);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
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
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "a"));
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	assert_int_equal(controller_pods_of_job(c, "a"), 1);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_DELETED, a);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	assert_true(controller_job(c, "a")->gone);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_false(admitted_in(&r, "b"));
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	/* its Pod gone, it settles (its controller may still make one) */
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	ctl_settle(c);
	assert_int_equal(ctl_state(c, "a"), -1);
	assert_null(controller_job(c, "a"));
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	json_decref(a);
	json_decref(b);
	json_decref(pod);
	ctl_free(c);
}

/* One watch event of `type` about obj (borrowed) of resource res. */
static void res_event(struct controller *c, controller_res_t res, kube_event_type_t type,
		      json_t *obj)
{
	controller_cevent_t ev = ctl_event(res, type, obj);

	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
}

/* A Pod of 8 GPUs, Running, whose controller owner is kind/name (uid name). */
static json_t *owned_pod(const char *name, const char *api, const char *kind, const char *owner)
{
	json_t *pod = job_pod(name, owner);
	json_t *ref =
	    json_array_get(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), 0);

	json_object_set_new(ref, "apiVersion", json_string(api));
	json_object_set_new(ref, "kind", json_string(kind));
	return pod;
}

/* A JobSet deleted while its Job's Pod still runs holds its quota until that
 * Pod is gone, its child Job gone before it or not: the garbage collector
 * deletes the JobSet, then its Jobs, then their Pods, each with its grace
 * period (issue 31's edit storm: a JobSet's 2 GPUs freed at its deletion
 * admitted a Deployment's Pod while they still ran, 12 GPUs held of 10).
 * Pods are counted for every cached parent above them. */
/* JobSet js in team-a (queue default, suspended, one 8-GPU Job) and its
 * child Job js-w-0 (released) as the watch shows them. */
static void jobset_and_child(json_t **js, json_t **child)
{
	*js = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, "
	    "s:{s:b, s:[{s:s, s:i, s:{s:{s:i, s:i, s:{s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}}}}]}}",
	    "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", "js",
	    "namespace", "team-a", "uid", "js", "resourceVersion", "3", "creationTimestamp",
	    "2026-11-25T00:00:00Z", "labels", "gpuq.dev/queue-name", "default", "spec", "suspend",
	    1, "replicatedJobs", "name", "w", "replicas", 1, "template", "spec", "parallelism", 1,
	    "completions", 1, "template", "spec", "containers", "name", "m", "image", "x",
	    "resources", "limits", "nvidia.com/gpu", "8");
	*child = ctl_job("team-a", "js-w-0", 8, 1, false, NULL);
	assert_non_null(*js);
	json_object_set_new(json_object_get(*child, "metadata"), "ownerReferences",
			    json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion",
				      "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "name", "js",
				      "uid", "js", "controller", 1));
}

/* JobSet js admitted, its Job child and that Job's Pod pod seen (counted
 * for the JobSet), Job b queued behind it; then the JobSet and its Job
 * deleted (the Pod still there). */
static void jobset_runs_then_goes(struct controller *c, json_t *js, json_t *child, json_t *pod,
				  json_t *b)
{
	queue_result_t r;

	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_ADDED, js);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "js"));
	ctl_job_event(c, KUBE_EV_ADDED, child);
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	assert_int_equal(controller_pods_of_job(c, "js"), 1);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_DELETED, js);
	ctl_job_event(c, KUBE_EV_DELETED, child);
}

static void deleted_jobset_holds_quota_until_its_pods_go(void **state)
{
	struct controller *c = ctl_new();
	json_t *js, *child;
	json_t *pod = job_pod("js-w-0-x", "js-w-0");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	queue_result_t r;

	(void)state;
	jobset_and_child(&js, &child);
	jobset_runs_then_goes(c, js, child, pod, b);
	assert_int_equal(ctl_state(c, "js"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_false(admitted_in(&r, "b"));
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(ctl_state(c, "js"), QUEUE_WL_ADMITTED); /* it settles */
	ctl_settle(c);
	assert_int_equal(ctl_state(c, "js"), -1);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	json_decref(js);
	json_decref(child);
	json_decref(pod);
	json_decref(b);
	ctl_free(c);
}

/* A JobSet deleted with its Job: the Job controller, from a cache that has
 * not seen the deletion, replaces the Pod the garbage collector deletes,
 * and a webhook that had not seen it either let the new Pod pass; this
 * watch shows that Pod after the last one it knew went. The JobSet keeps
 * its quota, and the Job its place in the chain, for the settle
 * (CONTROLLER_GONE_SETTLE_MS): the late Pod is counted for the JobSet, which
 * holds its quota until that Pod is gone too (issue 31: freed before the
 * replacement was seen, 8 GPUs held of 6 for 7 s). */
static void deleted_jobset_counts_a_late_replacement(void **state)
{
	struct controller *c = ctl_new();
	json_t *js, *child;
	json_t *pod = job_pod("js-w-0-x", "js-w-0"), *late = job_pod("js-w-0-y", "js-w-0");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	queue_result_t r;

	(void)state;
	jobset_and_child(&js, &child);
	jobset_runs_then_goes(c, js, child, pod, b);
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	/* the last Pod known is gone: the JobSet still holds its 8 GPUs */
	assert_int_equal(ctl_state(c, "js"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_false(admitted_in(&r, "b"));
	/* the replacement arrives: counted for its Job and the JobSet */
	ctl_pod_event(c, KUBE_EV_ADDED, late);
	assert_int_equal(controller_pods_of_job(c, "js"), 1);
	ctl_settle(c);
	assert_int_equal(ctl_state(c, "js"), QUEUE_WL_ADMITTED); /* it runs */
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_false(admitted_in(&r, "b"));
	ctl_pod_event(c, KUBE_EV_DELETED, late);
	assert_int_equal(ctl_state(c, "js"), -1);
	assert_null(controller_job(c, "js-w-0"));
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	json_decref(js);
	json_decref(child);
	json_decref(pod);
	json_decref(late);
	json_decref(b);
	ctl_free(c);
}

/* obj's pod template (at spec.template) carries gpuq's admitted mark, as a
 * released parent's Jobs have it from its template. */
static void mark_template(json_t *obj)
{
	json_t *t = json_object_get(json_object_get(obj, "spec"), "template");

	json_object_set_new(t, "metadata",
			    json_pack("{s:{s:s}}", "annotations", "gpuq.dev/admitted", "true"));
}

/* Owner uid's Pod of `gpus` GPUs weighed against the set c hands the
 * webhook now (no ledger): its result, *room filled. */
static int weigh(struct controller *c, const char *uid, int64_t gpus, webhook_room_t *room)
{
	webhook_owners_t *o = NULL;
	int rc;

	assert_int_equal(controller_owners_build(c, &o), GPUQ_OK);
	rc = webhook_owners_take(o, NULL, uid, "new-pod", gpus, 0, room);
	if (room->what) /* borrowed from o: kept for the caller's asserts */
		room->what = strcmp(room->what, "JobSet team-a/js") ? "other" : "JobSet team-a/js";
	webhook_owners_unref(o);
	return rc;
}

/* A released JobSet's Job deleted by the tenant is made again at once by
 * the JobSet controller, while the deleted Job's Pod still terminates. The
 * new Job is an admitted owner, but its Pods count against the JobSet,
 * admitted for 8 GPUs that the old Pod still holds: a Pod of it is refused
 * until that one is gone (issue 31's storm held 12 GPUs of 10 so, under a
 * deleted TrainJob). A Job under a deleted JobSet is no admitted owner. */
static void remade_child_waits_for_the_old_pod(void **state)
{
	struct controller *c = ctl_new();
	json_t *js, *child, *again, *pod = job_pod("js-w-0-x", "js-w-0");
	webhook_room_t room;
	queue_result_t r;

	(void)state;
	jobset_and_child(&js, &child);
	mark_template(child);
	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_ADDED, js);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "js"));
	/* released: the watch shows it let run */
	json_object_set_new(json_object_get(js, "spec"), "suspend", json_false());
	json_object_set_new(json_object_get(js, "metadata"), "resourceVersion", json_string("9"));
	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_MODIFIED, js);
	ctl_job_event(c, KUBE_EV_ADDED, child);
	assert_int_equal(weigh(c, "js-w-0", 8, &room), GPUQ_OK); /* nothing runs yet */
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	assert_int_equal(controller_gpus_of_job(c, "js"), 8);
	assert_int_equal(weigh(c, "js-w-0", 8, &room), GPUQ_EDENIED);
	/* the tenant deletes the Job; the JobSet controller makes it again */
	ctl_job_event(c, KUBE_EV_DELETED, child);
	again = json_deep_copy(child);
	json_object_set_new(json_object_get(again, "metadata"), "uid", json_string("js-w-0-again"));
	ctl_job_event(c, KUBE_EV_ADDED, again);
	assert_int_equal(weigh(c, "js-w-0-again", 8, &room), GPUQ_EDENIED);
	assert_string_equal(room.what, "JobSet team-a/js");
	assert_int_equal(room.admitted, 8);
	assert_int_equal(room.held, 8);
	assert_int_equal(weigh(c, "js-w-0-again", 0, &room), GPUQ_OK); /* no GPU: passes */
	/* the old Pod gone: the new one passes */
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(weigh(c, "js-w-0-again", 8, &room), GPUQ_OK);
	assert_int_equal(room.held, 0);
	/* the JobSet deleted: its Job's Pods pass no more */
	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_DELETED, js);
	assert_int_equal(weigh(c, "js-w-0-again", 8, &room), GPUQ_ENOTFOUND);
	json_decref(js);
	json_decref(child);
	json_decref(again);
	json_decref(pod);
	ctl_free(c);
}

/* A Pod the webhook let pass that came and went before the controller
 * handed over its next set (a short Job's Pod, its start and end in one
 * batch of events) leaves the webhook's ledger at that set: it holds
 * nothing, and left there it would take its Job's room (a successor
 * refused) until the ledger forgets it. */
static void pod_seen_and_gone_leaves_the_ledger(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 8, 1, true, "default");
	json_t *pod = job_pod("a-x", "a");
	webhook_owners_t *o = NULL;
	webhook_allows_t *l = NULL;
	webhook_room_t room;
	queue_result_t r;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "a"));
	json_object_set_new(json_object_get(a, "spec"), "suspend", json_false());
	json_object_set_new(json_object_get(a, "metadata"), "resourceVersion", json_string("9"));
	mark_template(a);
	ctl_job_event(c, KUBE_EV_MODIFIED, a);
	assert_int_equal(webhook_allows_create(&l), GPUQ_OK);
	assert_int_equal(controller_owners_build(c, &o), GPUQ_OK);
	webhook_allows_publish(l, o, 0, controller_owners_counted, c);
	assert_int_equal(webhook_owners_take(o, l, "a", "a-x", 8, 0, &room), GPUQ_OK);
	assert_int_equal(webhook_allows_pending(l), 1);
	webhook_owners_unref(o);
	/* one batch: the Pod shown, then shown finished */
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded"));
	ctl_pod_event(c, KUBE_EV_MODIFIED, pod);
	assert_int_equal(controller_pods_of_job(c, "a"), 0);
	assert_int_equal(controller_owners_build(c, &o), GPUQ_OK);
	webhook_allows_publish(l, o, 100, controller_owners_counted, c);
	assert_int_equal(webhook_allows_pending(l), 0);
	assert_int_equal(webhook_owners_take(o, l, "a", "a-y", 8, 100, &room), GPUQ_OK);
	webhook_owners_unref(o);
	webhook_allows_destroy(l);
	json_decref(a);
	json_decref(pod);
	ctl_free(c);
}

/* A RayCluster deleted while a worker Pod of it still runs (KubeRay's Pods
 * have a grace period) holds its quota until that Pod is gone. */
static void deleted_raycluster_holds_quota_until_its_pods_go(void **state)
{
	struct controller *c = ctl_new();
	json_t *rc = json_loads(
	    "{\"apiVersion\": \"ray.io/v1\", \"kind\": \"RayCluster\", \"metadata\": {\"name\": "
	    "\"rc\", \"namespace\": \"team-a\", \"uid\": \"rc\", \"resourceVersion\": \"5\", "
	    "\"creationTimestamp\": \"2026-11-25T00:00:00Z\", \"labels\": "
	    "{\"gpuq.dev/queue-name\": \"default\"}}, \"spec\": {\"suspend\": true, "
	    "\"headGroupSpec\": {\"template\": {\"spec\": {\"containers\": [{\"name\": \"h\"}]}}}, "
	    "\"workerGroupSpecs\": [{\"groupName\": \"g\", \"replicas\": 1, \"template\": "
	    "{\"spec\": {\"containers\": [{\"name\": \"w\", \"resources\": {\"limits\": "
	    "{\"nvidia.com/gpu\": \"8\"}}}]}}}]}}",
	    0, NULL);
	json_t *pod = owned_pod("rc-w", "ray.io/v1", "RayCluster", "rc");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	queue_result_t r;

	(void)state;
	assert_non_null(rc);
	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_RAYCLUSTER), KUBE_EV_ADDED, rc);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "rc"));
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	res_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_RAYCLUSTER), KUBE_EV_DELETED, rc);
	assert_int_equal(ctl_state(c, "rc"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_false(admitted_in(&r, "b"));
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(ctl_state(c, "rc"), QUEUE_WL_ADMITTED); /* it settles */
	ctl_settle(c);
	assert_int_equal(ctl_state(c, "rc"), -1);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	json_decref(rc);
	json_decref(pod);
	json_decref(b);
	ctl_free(c);
}

/* A Job's activeDeadlineSeconds reaches the core as its run bound (the
 * bounded wait's backfill trusts it: the Job controller enforces it), and
 * follows an edit while it queues. */
static void active_deadline_is_the_run_bound(void **state)
{
	struct controller *c = ctl_new();
	json_t *j = ctl_job("team-a", "j", 1, 1, true, "default");
	queue_workload_view_t v;
	queue_wl_t id;

	(void)state;
	json_object_set_new(json_object_get(j, "spec"), "activeDeadlineSeconds", json_integer(600));
	ctl_job_event(c, KUBE_EV_ADDED, j);
	assert_int_equal(queue_workload_find(engine_core(c->e), "j", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	assert_int_equal(v.run_bound_s, 600);
	json_object_set_new(json_object_get(j, "spec"), "activeDeadlineSeconds", json_integer(60));
	ctl_job_event(c, KUBE_EV_MODIFIED, j);
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	assert_int_equal(v.run_bound_s, 60);
	json_decref(j);
	ctl_free(c);
}

/* A watch event of a Job whose new version does not decode (a 70 KiB
 * annotation once made it so), as the watch thread hands it over. */
static void bad_event(struct controller *c, const char *uid, const char *rv)
{
	controller_cevent_t ev = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_JOB),
				  .type = KUBE_EV_MODIFIED};

	ev.uid = strdup(uid);
	ev.bad = strdup("metadata.annotations[gpuq.dev/original-scheduling]: too long");
	ev.bad_rv = strdup(rv);
	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
}

/* A Job whose new version does not decode leaves no stale copy in the core:
 * released, it holds its quota while its pods run and frees it when they
 * are gone (before, its former copy held 8 GPUs for good, could not be
 * preempted and its end was never seen); waiting, it leaves the queue. The
 * leader's stop is guarded by the version that did not decode. */
static void undecodable_update_leaves_no_stale_copy(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 8, 1, true, "default");
	json_t *b = ctl_job("team-a", "b", 8, 1, true, "default");
	json_t *pod = job_pod("a-x", "a"), *patch;
	queue_result_t r;
	char *text;

	(void)state;
	atomic_store(&c->leader, false); /* no apiserver here: the stop's patch is checked below */
	ctl_job_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "a"));
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	/* b waits; its new version does not decode: out of the queue */
	bad_event(c, "b", "10");
	assert_int_equal(ctl_state(c, "b"), -1);
	/* a's does not either: held while its pod runs, freed when it goes */
	bad_event(c, "a", "9");
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	ctl_settle(c);
	assert_int_equal(ctl_state(c, "a"), -1);
	/* decodable again, b queues anew and takes the quota a held */
	ctl_job_event(c, KUBE_EV_MODIFIED, b);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "b"));
	/* the stop: suspended, guarded by the version seen, not the cached one */
	patch = controller_release_suspend_patch(controller_job(c, "b")->wl, "9");
	text = json_dumps(patch, JSON_COMPACT);
	assert_non_null(strstr(text, "{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\","
				     "\"value\":\"9\"}"));
	assert_non_null(strstr(text, "\"path\":\"/spec/suspend\",\"value\":true"));
	free(text);
	json_decref(patch);
	json_decref(a);
	json_decref(b);
	json_decref(pod);
	ctl_free(c);
}

/* CTL_POLICY with a second flavor, spare, of no quota on nodes labelled
 * A200 (listed after h100: a Job is released on h100 first). */
#define TWO_FLAVORS                                                                                \
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"        \
	"spec:\n  nodeLabels: {nvidia.com/gpu.product: H100}\n"                                    \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: spare}\n"       \
	"spec:\n  nodeLabels: {nvidia.com/gpu.product: A200}\n"                                    \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"            \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"                \
	"    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]\n"           \
	"    - name: spare\n      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]\n"          \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: default}\nspec: {clusterQueue: cq}\n"

/* GPUs the core counts on flavor h100 of ClusterQueue 0. */
static int64_t h100_used(const struct controller *c)
{
	queue_quota_view_t v;

	for (uint32_t f = 0; f < queue_flavor_count(engine_core(c->e)); f++)
		if (!strcmp(queue_flavor_name(engine_core(c->e), f), "h100") &&
		    queue_cq_quota(engine_core(c->e), 0, f, 0, &v) == GPUQ_OK)
			return v.usage;
	return -1;
}

/* A new leader (an empty store) adopts a running Job from its
 * gpuq.dev/flavors only where its pods' placement agrees: a named flavor's
 * nodeLabels must stand in the template's nodeSelector, else it is counted
 * on the flavor of its ClusterQueue the placement shows (spare -> h100);
 * with none of them, or no pairs, it is not adopted (the leader stops it; a
 * follower, as here, leaves it pending). Before, a tampered annotation was
 * taken as it was: the Job counted on spare, h100 free for another. */
static void adoption_checks_the_flavors_against_the_placement(void **state)
{
	static const struct {
		const char *flavors; /* gpuq.dev/flavors, NULL: none */
		const char *product; /* the template's nodeSelector's GPU product, NULL: none */
		int want;	     /* the core's state after the event */
		int64_t h100;	     /* GPUs the core counts on h100 */
	} t[] = {
	    {"nvidia.com/gpu=h100", "H100", QUEUE_WL_ADMITTED, 8},
	    {"nvidia.com/gpu=spare", "H100", QUEUE_WL_ADMITTED, 8},
	    {"nvidia.com/gpu=h100", "A100", QUEUE_WL_PENDING, 0},
	    {"nvidia.com/gpu=h100", NULL, QUEUE_WL_PENDING, 0},
	    {NULL, "H100", QUEUE_WL_PENDING, 0},
	    {"nvidia.com/gpu=nope", "A100", QUEUE_WL_PENDING, 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		struct controller *c = ctl_new_policy(TWO_FLAVORS);
		json_t *job = ctl_job("team-a", "a", 8, 1, false, "default");
		json_t *meta = json_object_get(job, "metadata");
		json_t *tspec = json_object_get(
		    json_object_get(json_object_get(job, "spec"), "template"), "spec");
		json_t *ann = json_pack("{s:s}", "gpuq.dev/admitted", "true");

		atomic_store(&c->leader, false); /* a follower: no apiserver to stop it with */
		if (t[i].flavors)
			json_object_set_new(ann, "gpuq.dev/flavors", json_string(t[i].flavors));
		json_object_set_new(meta, "annotations", ann);
		if (t[i].product)
			json_object_set_new(
			    tspec, "nodeSelector",
			    json_pack("{s:s}", "nvidia.com/gpu.product", t[i].product));
		json_object_set_new(job, "status", json_pack("{s:i}", "active", 1));
		ctl_job_event(c, KUBE_EV_ADDED, job);
		if (ctl_state(c, "a") != t[i].want)
			fail_msg("case %zu (%s on %s): state %d, want %d", i,
				 t[i].flavors ? t[i].flavors : "no flavors",
				 t[i].product ? t[i].product : "no selector", ctl_state(c, "a"),
				 t[i].want);
		if (h100_used(c) != t[i].h100)
			fail_msg("case %zu: %lld GPUs counted on h100, want %lld", i,
				 (long long)h100_used(c), (long long)t[i].h100);
		json_decref(job);
		ctl_free(c);
	}
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
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_true(admitted_in(&r, "a"));
	ctl_pod_event(c, KUBE_EV_ADDED, pod);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_MODIFIED, a0);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED); /* its pod still runs */
	ctl_pod_event(c, KUBE_EV_DELETED, pod);
	assert_int_equal(ctl_state(c, "a"), -1);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
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
	    cmocka_unit_test(deleted_jobset_holds_quota_until_its_pods_go),
	    cmocka_unit_test(deleted_jobset_counts_a_late_replacement),
	    cmocka_unit_test(remade_child_waits_for_the_old_pod),
	    cmocka_unit_test(pod_seen_and_gone_leaves_the_ledger),
	    cmocka_unit_test(deleted_raycluster_holds_quota_until_its_pods_go),
	    cmocka_unit_test(active_deadline_is_the_run_bound),
	    cmocka_unit_test(admitted_scaled_to_zero_lets_go),
	    cmocka_unit_test(undecodable_update_leaves_no_stale_copy),
	    cmocka_unit_test(adoption_checks_the_flavors_against_the_placement),
	};

	return cmocka_run_group_tests_name("controller_edit", tests, NULL, NULL);
}

/* Unit tests for the sets gpuq admits by gates on their Pods
 * (controller/sets.c, pods.c), issue 31's "Sets", without an apiserver: a
 * StatefulSet whose ordinals start at 1; a StatefulSet scaled up and down 40
 * times in a row, admitted as it goes and while its queue is blocked; a
 * LeaderWorkerSet's rolling update with maxSurge, its surge group admitted
 * as a group of its own. A Pod
 * counts as released when it is a member of a workload the core admitted:
 * controller_actuate_group lifts the gate of every gated member of such a
 * workload (it needs an apiserver, so it is not called here). Fixtures in
 * unit/controller_fixtures.h. */
#include "unit/controller_fixtures.h"

/* CTL_POLICY's namespaces and flavor, its ClusterQueue with `gpus` GPUs. */
#define SETS_POLICY(gpus)                                                                          \
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"        \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"            \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"                \
	"    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: " gpus "}]\n"    \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: default}\nspec: {clusterQueue: cq}\n"

/* A pod template of 1 GPU. */
static json_t *template_1gpu(void)
{
	return json_pack("{s:{s:{s:s}}, s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}", "metadata", "labels",
			 "app", "x", "spec", "containers", "name", "main", "image", "x",
			 "resources", "limits", "nvidia.com/gpu", "1");
}

/* StatefulSet `name` in team-a of `replicas` Pods of 1 GPU, queue default,
 * its ordinals from `start` (-1: no spec.ordinals). A new reference. */
static json_t *sts(const char *name, int replicas, int start)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:i, s:s, s:o}}",
			      "apiVersion", "apps/v1", "kind", "StatefulSet", "metadata", "name",
			      name, "namespace", "team-a", "uid", name, "resourceVersion", "1",
			      "creationTimestamp", "2026-11-25T00:00:00Z", "labels",
			      "gpuq.dev/queue-name", "default", "spec", "replicas", replicas,
			      "serviceName", name, "template", template_1gpu());

	assert_non_null(o);
	if (start >= 0)
		json_object_set_new(json_object_get(o, "spec"), "ordinals",
				    json_pack("{s:i}", "start", start));
	return o;
}

/* Pod `name` in team-a of 1 GPU, gated, queue default, with `labels`
 * added (stolen; may be NULL) and owned by StatefulSet `owner`. */
static json_t *gated_pod(const char *name, const char *owner, json_t *labels)
{
	json_t *o = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
	    "s:{s:[{s:s}], s:[{s:s, s:s, s:{s:{s:s}}}]}, s:{s:s}}",
	    "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "team-a",
	    "uid", name, "resourceVersion", "2", "creationTimestamp", "2026-11-25T00:00:01Z",
	    "labels", "gpuq.dev/queue-name", "default", "ownerReferences", "apiVersion", "apps/v1",
	    "kind", "StatefulSet", "name", owner, "uid", owner, "controller", 1, "spec",
	    "schedulingGates", "name", "gpuq.dev/admission", "containers", "name", "main", "image",
	    "x", "resources", "limits", "nvidia.com/gpu", "1", "status", "phase", "Pending");

	assert_non_null(o);
	if (labels)
		json_object_update(json_object_get(json_object_get(o, "metadata"), "labels"),
				   labels);
	json_decref(labels);
	return o;
}

/* Pod <set>-<ordinal> of StatefulSet `set`, as its controller makes it. */
static json_t *sts_pod(const char *set, int ordinal)
{
	char name[64];

	snprintf(name, sizeof(name), "%s-%d", set, ordinal);
	return gated_pod(name, set, NULL);
}

static void set_event(struct controller *c, controller_res_t res, kube_event_type_t type,
		      json_t *obj)
{
	controller_cevent_t ev = ctl_event(res, type, obj);

	controller_sets_apply(c, &ev);
	controller_cevent_deinit(&ev);
	json_decref(obj);
}

/* A Pod event; obj is stolen. */
static void pod_event(struct controller *c, kube_event_type_t type, json_t *obj)
{
	ctl_pod_event(c, type, obj);
	json_decref(obj);
}

static void sts_pods_event(struct controller *c, kube_event_type_t type, const char *set, int from,
			   int to)
{
	for (int i = from; i < to; i++)
		pod_event(c, type, sts_pod(set, i));
}

static void cycle(struct controller *c)
{
	queue_result_t r;

	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
}

/* Job blocker (stolen) admitted first, then StatefulSet web of `replicas`
 * Pods and its Pods seen, and a cycle run. */
static void blocked_set(struct controller *c, json_t *blocker, int replicas)
{
	ctl_job_event(c, KUBE_EV_ADDED, blocker);
	json_decref(blocker);
	cycle(c);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", replicas, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, replicas);
	cycle(c);
}

/* The core's state of the workload Pod uid is a member of (-1: it is no
 * member of a workload the core holds). */
static int pod_state(struct controller *c, const char *uid)
{
	const char *key = controller_map_get(&c->pod_group, uid);
	controller_pgroup_t *g = key ? controller_group(c, key) : NULL;

	if (!g || !controller_map_get(&g->members, uid))
		return -1;
	return ctl_state(c, key);
}

static bool released(struct controller *c, const char *uid)
{
	return pod_state(c, uid) == QUEUE_WL_ADMITTED;
}

/* Workloads of the core whose uid starts with prefix, and their pods. */
static size_t core_count(const struct controller *c, const char *prefix, int32_t *pods)
{
	size_t n = 0;

	*pods = 0;
	for (queue_wl_t id = queue_workload_next(engine_core(c->e), QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(engine_core(c->e), id)) {
		queue_workload_view_t v;

		if (queue_workload_view(engine_core(c->e), id, &v) == GPUQ_OK &&
		    !strncmp(v.uid, prefix, strlen(prefix))) {
			n++;
			*pods += v.pods;
		}
	}
	return n;
}

/* ---- StatefulSet ---- */

/* spec.ordinals.start: 1 numbers the Pods web-1..web-3: all three are the
 * set's and released together (the last one stayed gated for good when
 * ordinals were taken from 0); a scale-up to 5 queues web-4 and web-5; a
 * Pod below the first ordinal is never let through. */
static void ordinals_start_at_one(void **state)
{
	struct controller *c = ctl_new();
	char uid[16];
	int32_t pods;

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED, sts("web", 3, 1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 1, 4);
	cycle(c);
	for (int i = 1; i < 4; i++) {
		snprintf(uid, sizeof(uid), "web-%d", i);
		if (!released(c, uid))
			fail_msg("%s: state %d, want admitted", uid, pod_state(c, uid));
	}
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 1);
	assert_int_equal(pods, 3);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  sts("web", 5, 1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 4, 6);
	cycle(c);
	for (int i = 1; i < 6; i++) {
		snprintf(uid, sizeof(uid), "web-%d", i);
		if (!released(c, uid))
			fail_msg("%s: state %d, want admitted", uid, pod_state(c, uid));
	}
	core_count(c, "sts:team-a/web/", &pods);
	assert_int_equal(pods, 5);
	/* web-0, below spec.ordinals.start: no replica of the set */
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, 1);
	cycle(c);
	assert_false(released(c, "web-0"));
	ctl_free(c);
}

/* `rounds` rounds of StatefulSet web (of r replicas) scaled up by 2 and
 * down by 1, its Pods made and deleted, a cycle after each: the replicas
 * it has then. The watches list independently: every other round the new
 * Pods are seen before the scale-up, and the Pod deleted before the
 * scale-down. */
static int scale_rounds(struct controller *c, int r, int rounds)
{
	for (int round = 0; round < rounds; round++, r++) {
		if (round % 2)
			sts_pods_event(c, KUBE_EV_ADDED, "web", r, r + 2);
		set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
			  sts("web", r + 2, -1));
		if (!(round % 2))
			sts_pods_event(c, KUBE_EV_ADDED, "web", r, r + 2);
		cycle(c);
		if (round % 2)
			sts_pods_event(c, KUBE_EV_DELETED, "web", r + 1, r + 2);
		set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
			  sts("web", r + 1, -1));
		if (!(round % 2))
			sts_pods_event(c, KUBE_EV_DELETED, "web", r + 1, r + 2);
		cycle(c);
	}
	return r;
}

/* 40 rounds of a scale-up by 2 and a scale-down by 1 (1 -> 41 replicas),
 * a cycle after each: every replica ends up in a slice the core admitted,
 * and the core counts 41 Pods, in one workload (adjacent admitted slices
 * merge). With a lifetime cap of 16 slices, web-16 on stayed gated. */
static void forty_scale_ups_admitted_as_they_come(void **state)
{
	struct controller *c = ctl_new_policy(SETS_POLICY("64"));
	char uid[16];
	int32_t pods;
	int r = 1;

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", r, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, r);
	cycle(c);
	r = scale_rounds(c, r, 40);
	assert_int_equal(r, 41);
	for (int i = 0; i < r; i++) {
		snprintf(uid, sizeof(uid), "web-%d", i);
		if (!released(c, uid))
			fail_msg("%s: state %d, want admitted", uid, pod_state(c, uid));
	}
	/* the admitted slices merged as they came (one flavor): one workload */
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 1);
	assert_int_equal(pods, 41);
	ctl_free(c);
}

/* The same 40 rounds while a Job holds the whole quota: the scale-ups
 * queue as one slice that grows (never a workload per scale-up), and once
 * the Job is done every replica is admitted. */
static void forty_scale_ups_while_blocked(void **state)
{
	struct controller *c = ctl_new_policy(SETS_POLICY("64"));
	json_t *blocker = ctl_job("team-a", "blocker", 64, 1, true, "default");
	char uid[16];
	int32_t pods;
	int r = 1;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, blocker);
	json_decref(blocker);
	cycle(c);
	assert_int_equal(ctl_state(c, "blocker"), QUEUE_WL_ADMITTED);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", r, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, r);
	cycle(c);
	r = scale_rounds(c, r, 40);
	assert_false(released(c, "web-0"));
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 1);
	assert_int_equal(pods, 41);
	ctl_finish(c, "blocker");
	cycle(c);
	for (int i = 0; i < r; i++) {
		snprintf(uid, sizeof(uid), "web-%d", i);
		if (!released(c, uid))
			fail_msg("%s: state %d, want admitted", uid, pod_state(c, uid));
	}
	ctl_free(c);
}

/* A queued StatefulSet moved to another LocalQueue (its label changed,
 * the webhook judged the move) is moved in the core: its slice waits, and
 * is admitted, in the new queue's ClusterQueue (it stayed where it was,
 * behind a full queue: e2e/test_lifecycle.sh found it). */
static void queued_set_follows_its_queue_label(void **state)
{
	struct controller *c = ctl_new_policy(SETS_POLICY(
	    "4") "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: "
		 "{name: two}\nspec:\n  namespaceSelector: {matchLabels: {team: a}}\n"
		 "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
		 "    flavors:\n    - name: h100\n      resources: [{name: "
		 "nvidia.com/gpu, nominalQuota: 2}]\n---\napiVersion: gpuq.dev/v1beta1\n"
		 "kind: LocalQueue\nmetadata: {namespace: team-a, name: two}\n"
		 "spec: {clusterQueue: two}\n");
	json_t *blocker = ctl_job("team-a", "blocker", 4, 1, true, "default");
	json_t *moved = sts("web", 1, -1);

	(void)state;
	blocked_set(c, blocker, 1);
	assert_false(released(c, "web-0"));
	json_object_set_new(json_object_get(json_object_get(moved, "metadata"), "labels"),
			    "gpuq.dev/queue-name", json_string("two"));
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED, moved);
	cycle(c);
	assert_true(released(c, "web-0"));
	ctl_free(c);
}

/* A scale-down frees the quota of the Pods gone, not of those still
 * going (a grace period, a finalizer): web (4 x 1 GPU) scaled to 2 holds 4
 * until web-3 goes, then 3, then 2; scaled to 0, the rest as they go. Scaled
 * up again while web-2 still goes, the new replicas queue as a slice of
 * their own and web-2 stays counted in the old one. */
static void scale_down_holds_until_pods_go(void **state)
{
	struct controller *c = ctl_new();
	int32_t pods;

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", 4, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, 4);
	cycle(c);
	assert_true(released(c, "web-3"));
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  sts("web", 2, -1));
	core_count(c, "sts:team-a/web/", &pods);
	assert_int_equal(pods, 4);
	/* web-2 and web-3 seen again while they go (released, past the slice
	   now): still counted where they were admitted, and in no other group */
	for (int i = 2; i < 4; i++) {
		json_t *p = sts_pod("web", i);
		json_object_del(json_object_get(p, "spec"), "schedulingGates");
		json_object_set_new(json_object_get(p, "metadata"), "annotations",
				    json_pack("{s:s}", "gpuq.dev/admitted", "true"));
		pod_event(c, KUBE_EV_MODIFIED, p);
	}
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 1);
	assert_int_equal(pods, 4);
	sts_pods_event(c, KUBE_EV_DELETED, "web", 3, 4);
	core_count(c, "sts:team-a/web/", &pods);
	assert_int_equal(pods, 3);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  sts("web", 4, -1));
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 2);
	assert_int_equal(pods, 5); /* web-0..2 as they stand, and a slice of 2 */
	sts_pods_event(c, KUBE_EV_DELETED, "web", 2, 3);
	core_count(c, "sts:team-a/web/", &pods);
	assert_int_equal(pods, 4);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  sts("web", 0, -1));
	core_count(c, "sts:team-a/web/", &pods);
	assert_int_equal(pods, 2); /* web-0 and web-1 still go */
	sts_pods_event(c, KUBE_EV_DELETED, "web", 0, 2);
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 0);
	assert_null(controller_group(c, "sts:team-a/web/2"));
	ctl_free(c);
}

/* The admission time of the one workload whose uid starts with prefix. */
static int64_t admitted_at(struct controller *c, const char *prefix)
{
	for (queue_wl_t id = queue_workload_next(engine_core(c->e), QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(engine_core(c->e), id)) {
		queue_workload_view_t v;

		if (queue_workload_view(engine_core(c->e), id, &v) == GPUQ_OK &&
		    !strncmp(v.uid, prefix, strlen(prefix)))
			return v.admitted_ms;
	}
	fail_msg("no workload %s*", prefix);
	return -1;
}

/* An admitted slice cut by a scale-down is the same admission, smaller: it
 * keeps its admission time (its minimum runtime, its wall-clock limit's
 * count), 10 minutes later. Re-added as a new admission, its clock started
 * again, and a tenant could scale down by one to reset its wall-clock
 * limit. */
static void scale_down_keeps_the_admission(void **state)
{
	struct controller *c = ctl_new();
	queue_result_t r;
	int64_t at;
	int32_t pods;

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", 4, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, 4);
	cycle(c);
	assert_true(released(c, "web-3"));
	at = admitted_at(c, "sts:team-a/web/");
	assert_int_equal(ctl_step(c->e, at + 10 * 60000, 0, &r), GPUQ_OK);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  sts("web", 2, -1));
	sts_pods_event(c, KUBE_EV_DELETED, "web", 2, 4);
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 1);
	assert_int_equal(pods, 2);
	assert_int_equal(admitted_at(c, "sts:team-a/web/"), at);
	ctl_free(c);
}

/* After a restart the core holds a StatefulSet's slices (restored from the
 * store) and the controller's caches are empty: the set's slices are
 * matched with them again. web was scaled 2 -> 4 while full, so it holds
 * two admitted slices, [0, 2) and [2, 4); seen again, both are matched and
 * merged into one admitted slice of 4, its Pods counted in it (cut anew
 * from 0, its first slice queued again for 4 while its 4 Pods ran, and
 * [2, 4) held quota unclaimed). */
static void restored_slices_matched(void **state)
{
	struct controller *c = ctl_new_policy(SETS_POLICY("8"));
	json_t *blocker = ctl_job("team-a", "blocker", 6, 1, true, "default");
	int32_t pods;

	(void)state;
	blocked_set(c, blocker, 2);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  sts("web", 4, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 2, 4);
	ctl_finish(c, "blocker");
	cycle(c);
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 2);
	assert_int_equal(pods, 4);
	assert_int_equal(ctl_state(c, "sts:team-a/web/2"), QUEUE_WL_ADMITTED);
	/* the restart: caches gone, the core as the store had it */
	controller_sets_free_all(c);
	controller_pods_free_all(c);
	controller_map_init(&c->groups);
	controller_map_init(&c->pod_group);
	controller_map_init(&c->sets);
	controller_map_init(&c->pods_early);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", 4, -1));
	for (int i = 0; i < 4; i++) {
		json_t *p = sts_pod("web", i);
		json_object_del(json_object_get(p, "spec"), "schedulingGates");
		json_object_set_new(json_object_get(p, "metadata"), "annotations",
				    json_pack("{s:s}", "gpuq.dev/admitted", "true"));
		pod_event(c, KUBE_EV_ADDED, p);
	}
	cycle(c);
	/* matched, then merged (both admitted on one flavor): one slice of 4 */
	assert_int_equal(core_count(c, "sts:team-a/web/", &pods), 1);
	assert_int_equal(pods, 4);
	assert_int_equal(ctl_state(c, "sts:team-a/web/0"), QUEUE_WL_ADMITTED);
	assert_true(released(c, "web-3"));
	ctl_free(c);
}

/* ---- LeaderWorkerSet ---- */

/* LeaderWorkerSet `name` of `replicas` groups of `size` Pods of 1 GPU,
 * queue default, with rolloutStrategy maxSurge `surge` (NULL: none). */
static json_t *lws(const char *name, int replicas, int size, json_t *surge)
{
	json_t *o = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:i, s:{s:i, s:o}}}", "apiVersion",
	    "leaderworkerset.x-k8s.io/v1", "kind", "LeaderWorkerSet", "metadata", "name", name,
	    "namespace", "team-a", "uid", name, "resourceVersion", "1", "creationTimestamp",
	    "2026-11-25T00:00:00Z", "labels", "gpuq.dev/queue-name", "default", "spec", "replicas",
	    replicas, "leaderWorkerTemplate", "size", size, "workerTemplate", template_1gpu());

	assert_non_null(o);
	if (surge)
		json_object_set_new(json_object_get(o, "spec"), "rolloutStrategy",
				    json_pack("{s:s, s:{s:o, s:i}}", "type", "RollingUpdate",
					      "rollingUpdateConfiguration", "maxSurge", surge,
					      "maxUnavailable", 0));
	return o;
}

/* Pod `worker` of group `group` of LWS `set` (worker 0: the leader), as
 * the LWS and StatefulSet controllers make it. */
static json_t *lws_pod(const char *set, int group, int worker)
{
	char name[64], owner[64], g[16], w[16];

	snprintf(g, sizeof(g), "%d", group);
	snprintf(w, sizeof(w), "%d", worker);
	if (worker) {
		snprintf(name, sizeof(name), "%s-%d-%d", set, group, worker);
		snprintf(owner, sizeof(owner), "%s-%d", set, group);
	} else {
		snprintf(name, sizeof(name), "%s-%d", set, group);
		snprintf(owner, sizeof(owner), "%s", set);
	}
	return gated_pod(name, owner,
			 json_pack("{s:s, s:s, s:s}", "leaderworkerset.sigs.k8s.io/name", set,
				   "leaderworkerset.sigs.k8s.io/group-index", g,
				   "leaderworkerset.sigs.k8s.io/worker-index", w));
}

/* Group g's leader and its one worker. */
static void lws_group_event(struct controller *c, kube_event_type_t type, int g)
{
	pod_event(c, type, lws_pod("vllm", g, 0));
	pod_event(c, type, lws_pod("vllm", g, 1));
}

/* A rolling update with maxSurge 1 of an LWS of 2 groups of 2 GPUs: the
 * LWS controller makes group 2 past spec.replicas; it queues as a group of
 * its own, counted like any (it waits while a Job holds the quota it
 * needs), is admitted and released once the Job is done, and leaves the
 * core when the LWS controller deletes its Pods. A group past the surge
 * (index 3) is no group of the LWS. */
static void lws_surge_group(void **state)
{
	struct controller *c = ctl_new();
	json_t *job = ctl_job("team-a", "job", 3, 1, true, "default");

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_ADDED,
		  lws("vllm", 2, 2, json_integer(1)));
	lws_group_event(c, KUBE_EV_ADDED, 0);
	lws_group_event(c, KUBE_EV_ADDED, 1);
	cycle(c);
	assert_true(released(c, "vllm-0"));
	assert_true(released(c, "vllm-1-1"));
	ctl_job_event(c, KUBE_EV_ADDED, job);
	json_decref(job);
	cycle(c);
	assert_int_equal(ctl_state(c, "job"), QUEUE_WL_ADMITTED); /* 7 of 8 GPUs held */
	/* the rollout: group 2, the surge, with the new template */
	lws_group_event(c, KUBE_EV_ADDED, 2);
	cycle(c);
	assert_int_equal(pod_state(c, "vllm-2"), QUEUE_WL_PENDING);
	assert_int_equal(pod_state(c, "vllm-2-1"), QUEUE_WL_PENDING);
	ctl_finish(c, "job");
	cycle(c);
	assert_true(released(c, "vllm-2"));
	assert_true(released(c, "vllm-2-1"));
	/* no group 3: maxSurge is 1 */
	lws_group_event(c, KUBE_EV_ADDED, 3);
	cycle(c);
	assert_false(released(c, "vllm-3"));
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/3"), -1);
	lws_group_event(c, KUBE_EV_DELETED, 3);
	/* the rollout done, the LWS controller deletes the surge group */
	lws_group_event(c, KUBE_EV_DELETED, 2);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/2"), -1);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/0"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/1"), QUEUE_WL_ADMITTED);
	/* and a group made again there (the next rollout) queues again */
	lws_group_event(c, KUBE_EV_ADDED, 2);
	cycle(c);
	assert_true(released(c, "vllm-2"));
	/* the LWS deleted: its groups keep their quota until their Pods are
	   gone (the garbage collector deletes them after the LWS) */
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_DELETED,
		  lws("vllm", 2, 2, json_integer(1)));
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/2"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/0"), QUEUE_WL_ADMITTED);
	for (int g = 0; g < 3; g++)
		lws_group_event(c, KUBE_EV_DELETED, g);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/2"), -1);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/0"), -1);
	ctl_free(c);
}

/* maxSurge as a percentage of spec.replicas, rounded up (the LWS
 * controller's rule): 50% of 3 groups is 2 surge groups, not 3. */
static void lws_surge_percent(void **state)
{
	struct controller *c = ctl_new_policy(SETS_POLICY("64"));

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_ADDED,
		  lws("vllm", 3, 2, json_string("50%")));
	for (int g = 0; g < 6; g++)
		lws_group_event(c, KUBE_EV_ADDED, g);
	cycle(c);
	assert_true(released(c, "vllm-3-1"));
	assert_true(released(c, "vllm-4"));
	assert_false(released(c, "vllm-5"));
	ctl_free(c);
}

/* A scale-down: a group past the new spec.replicas keeps its quota while
 * its Pods are still there (they may still run), and leaves the core with
 * them, within the surge or not (without a surge it left at once: its
 * Pods ran uncounted while they went). */
static void lws_scale_down(void **state)
{
	struct controller *c = ctl_new();

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_ADDED,
		  lws("vllm", 3, 2, json_integer(1)));
	for (int g = 0; g < 3; g++)
		lws_group_event(c, KUBE_EV_ADDED, g);
	cycle(c);
	assert_true(released(c, "vllm-2-1"));
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_MODIFIED,
		  lws("vllm", 2, 2, json_integer(1)));
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/2"), QUEUE_WL_ADMITTED);
	lws_group_event(c, KUBE_EV_DELETED, 2);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/2"), -1);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/1"), QUEUE_WL_ADMITTED);
	/* no surge: the group scaled away leaves the core with its Pods */
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_MODIFIED,
		  lws("vllm", 1, 2, NULL));
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/1"), QUEUE_WL_ADMITTED);
	lws_group_event(c, KUBE_EV_DELETED, 1);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/1"), -1);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/0"), QUEUE_WL_ADMITTED);
	ctl_free(c);
}

/* set o labelled max-exec-time-seconds `secs`. */
static json_t *limited(json_t *o, const char *secs)
{
	json_object_set_new(json_object_get(json_object_get(o, "metadata"), "labels"),
			    "gpuq.dev/max-exec-time-seconds", json_string(secs));
	return o;
}

/* A running StatefulSet's or LWS's max-exec-time-seconds label, changed, is
 * the limit of its admitted slices and groups at once, as a Job's is (it
 * applied from their next admission before). */
static void admitted_sets_follow_their_limit_label(void **state)
{
	struct controller *c = ctl_new();

	(void)state;
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_ADDED,
		  sts("web", 2, -1));
	sts_pods_event(c, KUBE_EV_ADDED, "web", 0, 2);
	cycle(c);
	assert_true(released(c, "web-1"));
	assert_int_equal(ctl_limit(c, "sts:team-a/web/0"), 0);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_STATEFULSET), KUBE_EV_MODIFIED,
		  limited(sts("web", 2, -1), "60"));
	assert_int_equal(ctl_limit(c, "sts:team-a/web/0"), 60);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_ADDED, lws("vllm", 1, 2, NULL));
	lws_group_event(c, KUBE_EV_ADDED, 0);
	cycle(c);
	assert_int_equal(ctl_state(c, "lws:team-a/vllm/0"), QUEUE_WL_ADMITTED);
	set_event(c, CONTROLLER_RES_OF(WORKLOAD_KIND_LWS), KUBE_EV_MODIFIED,
		  limited(lws("vllm", 1, 2, NULL), "90"));
	assert_int_equal(ctl_limit(c, "lws:team-a/vllm/0"), 90);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(admitted_sets_follow_their_limit_label),
	    cmocka_unit_test(ordinals_start_at_one),
	    cmocka_unit_test(forty_scale_ups_admitted_as_they_come),
	    cmocka_unit_test(forty_scale_ups_while_blocked),
	    cmocka_unit_test(scale_down_holds_until_pods_go),
	    cmocka_unit_test(queued_set_follows_its_queue_label),
	    cmocka_unit_test(scale_down_keeps_the_admission),
	    cmocka_unit_test(restored_slices_matched),
	    cmocka_unit_test(lws_surge_group),
	    cmocka_unit_test(lws_surge_percent),
	    cmocka_unit_test(lws_scale_down),
	};

	return cmocka_run_group_tests_name("controller_sets", tests, NULL, NULL);
}

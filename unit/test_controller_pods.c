/* Unit tests for pod groups in the controller (controller/pods.c; issue 31,
 * part 3), through watch events and without an apiserver: every member of a
 * group is counted, CPU-only ones too; the group is one workload of a pod
 * set per distinct member shape; the present count follows deletions; the
 * group ends only when every member succeeded (or one is marked not
 * retriable), and a replacement for a Failed member keeps the group's quota
 * and is released without queueing again; a preempted group's members are
 * deleted. Fixtures in unit/controller_fixtures.h (ClusterQueue cq: 8
 * GPUs). */
#include "unit/controller_fixtures.h"

#define G "group:team-a/g" /* the workload key of pod group g */

/* The core's view of workload uid (fails the test when it has none). */
static queue_workload_view_t view_of(const struct controller *c, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	assert_int_equal(queue_workload_find(engine_core(c->e), uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	return v;
}

static bool admitted_in(const queue_result_t *r, const char *uid)
{
	for (size_t i = 0; i < r->n_admissions; i++)
		if (!strcmp(r->admissions[i].uid, uid))
			return true;
	return false;
}

/* One cycle; whether it admitted uid. */
static bool cycle_admits(struct controller *c, const char *uid)
{
	queue_result_t r;

	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	return admitted_in(&r, uid);
}

/* Pod obj as gpuq's release leaves it (gate gone, marked admitted) in
 * `phase`, Ready when Running; a new resourceVersion. */
static void pod_set(json_t *obj, const char *phase)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *st = json_pack("{s:s}", "phase", phase);

	json_object_del(json_object_get(obj, "spec"), "schedulingGates");
	json_object_set_new(json_object_get(meta, "annotations"), WEBHOOK_ANNOT_ADMITTED,
			    json_string("true"));
	json_object_set_new(meta, "resourceVersion", json_string("9"));
	if (!strcmp(phase, "Running"))
		json_object_set_new(st, "conditions",
				    json_pack("[{s:s, s:s}]", "type", "Ready", "status", "True"));
	json_object_set_new(obj, "status", st);
}

static void pod_modified(struct controller *c, json_t *obj, const char *phase)
{
	pod_set(obj, phase);
	ctl_pod_event(c, KUBE_EV_MODIFIED, obj);
}

/* The row: a driver that asks for no GPU and a GPU worker, a group
 * of 2. The driver is counted (gated by the webhook like every member), so
 * the group is complete and admitted. */
static void cpu_driver_counts_in_its_group(void **state)
{
	struct controller *c = ctl_new();
	json_t *driver = ctl_group_pod("driver", "g", 2, 0);
	json_t *worker = ctl_group_pod("worker", "g", 2, 4);
	queue_workload_view_t v;

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, driver);
	ctl_pod_event(c, KUBE_EV_ADDED, worker);
	v = view_of(c, G);
	assert_int_equal(v.pods_present, 2);
	assert_int_equal(v.pods, 2);
	assert_true(cycle_admits(c, G));
	/* the same the other way round: the GPU member first */
	json_decref(driver);
	json_decref(worker);
	ctl_free(c);

	c = ctl_new();
	driver = ctl_group_pod("driver", "g", 2, 0);
	worker = ctl_group_pod("worker", "g", 2, 4);
	ctl_pod_event(c, KUBE_EV_ADDED, worker);
	assert_int_equal(view_of(c, G).pods_present, 1);
	assert_false(cycle_admits(c, G));
	ctl_pod_event(c, KUBE_EV_ADDED, driver);
	assert_int_equal(view_of(c, G).pods_present, 2);
	assert_true(cycle_admits(c, G));
	json_decref(driver);
	json_decref(worker);
	ctl_free(c);
}

/* Members of different shapes are each charged their own request: 1 + 4 +
 * 1 GPUs is 6 of the 8, so a 3-GPU Job then waits and a 2-GPU Job fits
 * (charged as its first member times 3, the group held 3 and both fit). */
static void each_member_is_charged_its_own_shape(void **state)
{
	struct controller *c = ctl_new();
	json_t *m[3] = {ctl_group_pod("a", "g", 3, 1), ctl_group_pod("b", "g", 3, 4),
			ctl_group_pod("c", "g", 3, 1)};
	json_t *three = ctl_job("team-a", "three", 3, 1, true, "default");
	json_t *two = ctl_job("team-a", "two", 2, 1, true, "default");
	queue_workload_view_t v;

	(void)state;
	for (int i = 0; i < 3; i++)
		ctl_pod_event(c, KUBE_EV_ADDED, m[i]);
	v = view_of(c, G);
	assert_int_equal(v.n_podsets, 2); /* two shapes: 1 GPU (x2), 4 GPUs */
	assert_int_equal(v.pods, 3);
	assert_true(cycle_admits(c, G));
	ctl_job_event(c, KUBE_EV_ADDED, three);
	assert_false(cycle_admits(c, "three"));
	ctl_job_event(c, KUBE_EV_ADDED, two);
	assert_true(cycle_admits(c, "two"));
	assert_int_equal(ctl_state(c, "three"), QUEUE_WL_PENDING);
	for (int i = 0; i < 3; i++)
		json_decref(m[i]);
	json_decref(three);
	json_decref(two);
	ctl_free(c);
}

/* The present count follows deletions: a group of 2 whose second member is
 * deleted before a cycle is 1 of 2 again and not admitted; a new second
 * member completes it. */
static void present_count_follows_deletions(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_member("a", "g", 2), *b = ctl_member("b", "g", 2),
	       *b2 = ctl_member("b2", "g", 2);
	char text[256];

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, a);
	ctl_pod_event(c, KUBE_EV_ADDED, b);
	assert_int_equal(view_of(c, G).pods_present, 2);
	ctl_pod_event(c, KUBE_EV_DELETED, b);
	assert_int_equal(view_of(c, G).pods_present, 1);
	assert_false(cycle_admits(c, G));
	assert_int_equal(queue_workload_explain(engine_core(c->e), G, text, sizeof(text)), GPUQ_OK);
	if (!strstr(text, "1 of 2 pods present"))
		fail_msg("after a deletion: \"%s\"", text);
	ctl_pod_event(c, KUBE_EV_ADDED, b2);
	assert_int_equal(view_of(c, G).pods_present, 2);
	assert_true(cycle_admits(c, G));
	json_decref(a);
	json_decref(b);
	json_decref(b2);
	ctl_free(c);
}

/* A Failed member is not done: its group keeps its quota (a 4-GPU Job
 * waits) while the other member succeeded; a replacement member (a new Pod
 * of the group) joins the admitted group without queueing, and the group
 * ends when it succeeds too. */
static void failed_member_keeps_the_group_quota(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_group_pod("a", "g", 2, 4), *b = ctl_group_pod("b", "g", 2, 4);
	json_t *a2 = ctl_group_pod("a2", "g", 2, 4);
	json_t *four = ctl_job("team-a", "four", 4, 1, true, "default");

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, a);
	ctl_pod_event(c, KUBE_EV_ADDED, b);
	assert_true(cycle_admits(c, G));
	pod_modified(c, a, "Running");
	pod_modified(c, b, "Running");
	pod_modified(c, a, "Failed");
	pod_modified(c, b, "Succeeded");
	assert_int_equal(ctl_state(c, G), QUEUE_WL_ADMITTED);
	ctl_job_event(c, KUBE_EV_ADDED, four);
	assert_false(cycle_admits(c, "four"));
	/* the replacement: gated by the webhook, part of the admitted group */
	ctl_pod_event(c, KUBE_EV_ADDED, a2);
	assert_int_equal(ctl_state(c, G), QUEUE_WL_ADMITTED);
	assert_non_null(controller_map_get(&controller_group(c, G)->members, "a2"));
	pod_modified(c, a2, "Running");
	assert_int_equal(ctl_state(c, G), QUEUE_WL_ADMITTED);
	pod_modified(c, a2, "Succeeded");
	assert_int_equal(ctl_state(c, G), QUEUE_WL_FINISHED);
	assert_true(cycle_admits(c, "four"));
	json_decref(a);
	json_decref(b);
	json_decref(a2);
	json_decref(four);
	ctl_free(c);
}

/* A succeeded member whose Pod is then deleted (a cleanup) still counts as
 * done: the group ends when the other succeeds. */
static void succeeded_member_deleted_still_counts(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_member("a", "g", 2), *b = ctl_member("b", "g", 2);

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, a);
	ctl_pod_event(c, KUBE_EV_ADDED, b);
	assert_true(cycle_admits(c, G));
	pod_modified(c, a, "Succeeded");
	ctl_pod_event(c, KUBE_EV_DELETED, a);
	assert_int_equal(ctl_state(c, G), QUEUE_WL_ADMITTED);
	pod_modified(c, b, "Succeeded");
	assert_int_equal(ctl_state(c, G), QUEUE_WL_FINISHED);
	json_decref(a);
	json_decref(b);
	ctl_free(c);
}

/* ---- what actuation does to the members (controller_pods_plan) ---- */

typedef struct {
	char name[8][32]; /* members acted on */
	size_t podset[8]; /* ... their pod sets */
	int act[8];	  /* ... what */
	size_t n;	  /* entries */
} plan_t;

static void take(void *ctx, const workload_t *pod, size_t podset, controller_member_act_t act)
{
	plan_t *p = ctx;

	assert_true(p->n < 8);
	snprintf(p->name[p->n], sizeof(p->name[0]), "%s", pod->name);
	p->podset[p->n] = podset;
	p->act[p->n++] = (int)act;
}

static plan_t plan_of(struct controller *c, const char *key)
{
	plan_t p = {0};

	controller_pods_plan(c, controller_group(c, key), take, &p);
	return p;
}

/* What the plan does to member name (0: nothing); *podset its pod set. */
static int act_on(const plan_t *p, const char *name, size_t *podset)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->name[i], name)) {
			if (podset)
				*podset = p->podset[i];
			return p->act[i];
		}
	return 0;
}

/* Admitted, a group of two shapes releases every member, each onto its own
 * pod set (the CPU-only driver too); once released, nothing more. */
static void admitted_group_releases_each_member_onto_its_pod_set(void **state)
{
	struct controller *c = ctl_new();
	json_t *driver = ctl_group_pod("driver", "g", 3, 0);
	json_t *w0 = ctl_group_pod("w0", "g", 3, 2), *w1 = ctl_group_pod("w1", "g", 3, 2);
	size_t pd = 9, p0 = 9, p1 = 9;
	plan_t p;

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, driver);
	ctl_pod_event(c, KUBE_EV_ADDED, w0);
	assert_int_equal(plan_of(c, G).n, 0); /* pending: nothing to do */
	ctl_pod_event(c, KUBE_EV_ADDED, w1);
	assert_true(cycle_admits(c, G));
	p = plan_of(c, G);
	assert_int_equal(p.n, 3);
	assert_int_equal(act_on(&p, "driver", &pd), CONTROLLER_MEMBER_RELEASE);
	assert_int_equal(act_on(&p, "w0", &p0), CONTROLLER_MEMBER_RELEASE);
	assert_int_equal(act_on(&p, "w1", &p1), CONTROLLER_MEMBER_RELEASE);
	assert_int_equal(p0, p1);
	assert_true(pd != p0 && pd < 2 && p0 < 2);
	pod_modified(c, driver, "Running");
	pod_modified(c, w0, "Running");
	pod_modified(c, w1, "Running");
	assert_int_equal(plan_of(c, G).n, 0);
	json_decref(driver);
	json_decref(w0);
	json_decref(w1);
	ctl_free(c);
}

/* A replacement for a Failed member is released into the admitted group's
 * room without queueing; a further member of the group (an extra) finds no
 * room and stays gated; nor does one of a shape the group was not admitted
 * for. */
static void replacement_released_extra_waits(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_member("a", "g", 2), *b = ctl_member("b", "g", 2);
	json_t *a2 = ctl_member("a2", "g", 2), *a3 = ctl_member("a3", "g", 2);
	json_t *big = ctl_group_pod("big", "g", 2, 4);
	plan_t p;

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, a);
	ctl_pod_event(c, KUBE_EV_ADDED, b);
	assert_true(cycle_admits(c, G));
	pod_modified(c, a, "Running");
	pod_modified(c, b, "Running");
	ctl_pod_event(c, KUBE_EV_ADDED, big); /* no Failed member: no room */
	assert_int_equal(plan_of(c, G).n, 0);
	pod_modified(c, a, "Failed");
	ctl_pod_event(c, KUBE_EV_ADDED, a2);
	ctl_pod_event(c, KUBE_EV_ADDED, a3);
	assert_int_equal(ctl_state(c, G), QUEUE_WL_ADMITTED);
	p = plan_of(c, G);
	assert_int_equal(p.n, 1); /* one of a2 and a3 (both alike): one place */
	assert_int_equal(p.act[0], CONTROLLER_MEMBER_RELEASE);
	assert_int_equal(act_on(&p, "big", NULL), 0); /* 4 GPUs: not what was admitted */
	json_decref(a);
	json_decref(b);
	json_decref(a2);
	json_decref(a3);
	json_decref(big);
	ctl_free(c);
}

/* A group none of whose members asks for a GPU is not the queue's: once
 * complete it is let through as it is, never entering the core. */
static void cpu_only_group_goes_through_whole(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_group_pod("a", "g", 2, 0), *b = ctl_group_pod("b", "g", 2, 0);
	plan_t p;

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(ctl_state(c, G), -1);
	assert_int_equal(plan_of(c, G).n, 0); /* incomplete: held whole */
	ctl_pod_event(c, KUBE_EV_ADDED, b);
	assert_int_equal(ctl_state(c, G), -1);
	p = plan_of(c, G);
	assert_int_equal(p.n, 2);
	assert_int_equal(act_on(&p, "a", NULL), CONTROLLER_MEMBER_FREE);
	assert_int_equal(act_on(&p, "b", NULL), CONTROLLER_MEMBER_FREE);
	json_decref(a);
	json_decref(b);
	ctl_free(c);
}

/* Every member Failed: the group waits for replacements, holding its quota
 * (retriable by default); marked not retriable
 * (kueue.x-k8s.io/retriable-in-group: "false"), it ends once none runs. */
static void failed_group_ends_only_when_not_retriable(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_member("a", "g", 2), *b = ctl_member("b", "g", 2);
	json_t *x = ctl_member("x", "h", 2), *y = ctl_member("y", "h", 2);

	(void)state;
	json_object_set_new(json_object_get(json_object_get(x, "metadata"), "annotations"),
			    WORKLOAD_ANNOT_RETRIABLE, json_string("false"));
	ctl_pod_event(c, KUBE_EV_ADDED, a);
	ctl_pod_event(c, KUBE_EV_ADDED, b);
	ctl_pod_event(c, KUBE_EV_ADDED, x);
	ctl_pod_event(c, KUBE_EV_ADDED, y);
	assert_true(cycle_admits(c, G));
	assert_int_equal(ctl_state(c, "group:team-a/h"), QUEUE_WL_ADMITTED);
	pod_modified(c, a, "Failed");
	pod_modified(c, b, "Failed");
	assert_int_equal(ctl_state(c, G), QUEUE_WL_ADMITTED);
	pod_modified(c, x, "Failed");
	pod_modified(c, y, "Running");
	assert_int_equal(ctl_state(c, "group:team-a/h"), QUEUE_WL_ADMITTED);
	pod_modified(c, y, "Failed");
	assert_int_equal(ctl_state(c, "group:team-a/h"), QUEUE_WL_FINISHED);
	json_decref(a);
	json_decref(b);
	json_decref(x);
	json_decref(y);
	ctl_free(c);
}

/* CTL_POLICY with cq preempting lower priorities within itself, and
 * PriorityClass urgent (100). */
#define PREEMPT_POLICY                                                                             \
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"        \
	"spec:\n  nodeLabels: {nvidia.com/gpu.product: H100}\n"                                    \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"            \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  preemption: {withinClusterQueue: LowerPriority}\n"                                      \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"                \
	"    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: default}\nspec: {clusterQueue: cq}\n"                                               \
	"---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\n"   \
	"value: 100\n"

/* A higher-priority Job preempts a running pod group: the group is evicted
 * whole, every member (the CPU-only driver too) is deleted, the workload
 * leaves the core with its last member (preempted, not finished, though it
 * is marked not retriable and none of its members runs any more), and the
 * Job is admitted. */
static void preempted_group_is_deleted_whole(void **state)
{
	struct controller *c = ctl_new_policy(PREEMPT_POLICY);
	json_t *driver = ctl_group_pod("driver", "g", 3, 0);
	json_t *w0 = ctl_group_pod("w0", "g", 3, 4), *w1 = ctl_group_pod("w1", "g", 3, 4);
	json_t *job = ctl_job("team-a", "urgent", 8, 1, true, "default");
	queue_result_t r;
	queue_stats_t st;
	plan_t p;

	(void)state;
	json_object_set_new(
	    json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec"),
	    "priorityClassName", json_string("urgent")); /* a class: a template's own
							    priority integer counts for nothing */
	json_object_set_new(json_object_get(json_object_get(w1, "metadata"), "annotations"),
			    WORKLOAD_ANNOT_RETRIABLE, json_string("false"));
	ctl_pod_event(c, KUBE_EV_ADDED, driver);
	ctl_pod_event(c, KUBE_EV_ADDED, w0);
	ctl_pod_event(c, KUBE_EV_ADDED, w1);
	assert_true(cycle_admits(c, G));
	pod_modified(c, driver, "Running");
	pod_modified(c, w0, "Running");
	pod_modified(c, w1, "Running");
	ctl_job_event(c, KUBE_EV_ADDED, job);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 1);
	assert_string_equal(r.evictions[0].victim_uid, G);
	assert_int_equal(ctl_state(c, G), QUEUE_WL_EVICTING);
	p = plan_of(c, G);
	assert_int_equal(p.n, 3);
	assert_int_equal(act_on(&p, "driver", NULL), CONTROLLER_MEMBER_DELETE);
	assert_int_equal(act_on(&p, "w0", NULL), CONTROLLER_MEMBER_DELETE);
	assert_int_equal(act_on(&p, "w1", NULL), CONTROLLER_MEMBER_DELETE);
	ctl_pod_event(c, KUBE_EV_DELETED, w0);
	ctl_pod_event(c, KUBE_EV_DELETED, driver);
	assert_int_equal(ctl_state(c, G), QUEUE_WL_EVICTING); /* w1 still holds its GPUs */
	assert_false(cycle_admits(c, "urgent"));
	ctl_pod_event(c, KUBE_EV_DELETED, w1);
	assert_int_equal(ctl_state(c, G), -1);
	assert_int_equal(queue_cq_stats(engine_core(c->e), 0, &st), GPUQ_OK);
	assert_int_equal(st.finishes, 0);
	assert_int_equal(st.preemptions, 1);
	assert_true(cycle_admits(c, "urgent"));
	json_decref(driver);
	json_decref(w0);
	json_decref(w1);
	json_decref(job);
	ctl_free(c);
}

/* A plain GPU Pod (no group) of team-a in LocalQueue `queue`, gated by the
 * webhook. A new reference. */
static json_t *plain_pod(const char *name, const char *queue, int gpus)
{
	json_t *pod = ctl_group_pod(name, "x", 1, gpus);
	json_t *meta = json_object_get(pod, "metadata");

	json_object_del(json_object_get(meta, "labels"), "kueue.x-k8s.io/pod-group-name");
	json_object_del(json_object_get(meta, "annotations"),
			"kueue.x-k8s.io/pod-group-total-count");
	json_object_set_new(json_object_get(meta, "labels"), "gpuq.dev/queue-name",
			    json_string(queue));
	return pod;
}

/* ClusterQueue cq2 of 2 GPUs, fed by LocalQueue team-a/two. */
#define TWO_POLICY                                                                                 \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq2}\n"           \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"                \
	"    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: two}\nspec: {clusterQueue: cq2}\n"

/* A gated plain Pod's queue label moved while it queues (issue 31; found by
 * e2e/test_lifecycle.sh: the Pod moved to a LocalQueue with room stayed
 * gated behind its old, full one): the core follows it, as it does a Job,
 * and it is admitted by its new ClusterQueue. */
static void plain_pod_queue_label_moves_it(void **state)
{
	struct controller *c = ctl_new_policy(CTL_POLICY TWO_POLICY);
	json_t *big = ctl_job("team-a", "big", 7, 1, true, "default");
	json_t *solo = plain_pod("solo", "default", 2);
	json_t *moved = plain_pod("solo", "two", 2);

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, big);
	assert_true(cycle_admits(c, "big"));
	ctl_pod_event(c, KUBE_EV_ADDED, solo);
	assert_false(cycle_admits(c, "solo")); /* 7 + 2 of 8 */
	json_object_set_new(json_object_get(moved, "metadata"), "resourceVersion",
			    json_string("4"));
	ctl_pod_event(c, KUBE_EV_MODIFIED, moved);
	assert_true(cycle_admits(c, "solo"));
	json_decref(big);
	json_decref(solo);
	json_decref(moved);
	ctl_free(c);
}

/* A running plain Pod's and pod group's max-exec-time-seconds label, changed,
 * is their limit at once, as a Job's is (it applied from their next
 * admission before). A group reads its eldest member's. */
static void admitted_pods_follow_their_limit_label(void **state)
{
	struct controller *c = ctl_new();
	json_t *solo = plain_pod("solo", "default", 1);
	json_t *m[2] = {ctl_member("m0", "g", 2), ctl_member("m1", "g", 2)};

	(void)state;
	ctl_pod_event(c, KUBE_EV_ADDED, solo);
	assert_true(cycle_admits(c, "solo"));
	pod_modified(c, solo, "Running");
	assert_int_equal(ctl_limit(c, "solo"), 0);
	json_object_set_new(json_object_get(json_object_get(solo, "metadata"), "labels"),
			    "gpuq.dev/max-exec-time-seconds", json_string("30"));
	pod_modified(c, solo, "Running");
	assert_int_equal(ctl_limit(c, "solo"), 30);
	for (int i = 0; i < 2; i++)
		ctl_pod_event(c, KUBE_EV_ADDED, m[i]);
	assert_true(cycle_admits(c, G));
	for (int i = 0; i < 2; i++)
		pod_modified(c, m[i], "Running");
	assert_int_equal(ctl_limit(c, G), 0);
	for (int i = 0; i < 2; i++) {
		json_object_set_new(json_object_get(json_object_get(m[i], "metadata"), "labels"),
				    "gpuq.dev/max-exec-time-seconds", json_string("45"));
		pod_modified(c, m[i], "Running");
	}
	assert_int_equal(ctl_limit(c, G), 45);
	json_decref(solo);
	json_decref(m[0]);
	json_decref(m[1]);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(plain_pod_queue_label_moves_it),
	    cmocka_unit_test(admitted_pods_follow_their_limit_label),
	    cmocka_unit_test(cpu_driver_counts_in_its_group),
	    cmocka_unit_test(each_member_is_charged_its_own_shape),
	    cmocka_unit_test(present_count_follows_deletions),
	    cmocka_unit_test(failed_member_keeps_the_group_quota),
	    cmocka_unit_test(succeeded_member_deleted_still_counts),
	    cmocka_unit_test(admitted_group_releases_each_member_onto_its_pod_set),
	    cmocka_unit_test(replacement_released_extra_waits),
	    cmocka_unit_test(cpu_only_group_goes_through_whole),
	    cmocka_unit_test(failed_group_ends_only_when_not_retriable),
	    cmocka_unit_test(preempted_group_is_deleted_whole),
	};

	return cmocka_run_group_tests_name("controller_pods", tests, NULL, NULL);
}

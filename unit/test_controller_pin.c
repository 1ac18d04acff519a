/* Placement that sticks (issue 33, docs/topology.md): a workload admitted
 * on a topology-aware flavor is released with each pod set's nodeSelector
 * pinned to the domain admission chose (controller_actuate_placement, the
 * one place every release goes through), and a preempted Job goes back to
 * its own template without the pin. */
#include "unit/controller_fixtures.h"

#define PIN_RACK "topology.gpuq.dev/rack"
#define PIN_BLOCK "topology.gpuq.dev/block"
#define PIN_HOST "kubernetes.io/hostname"

/* team-a's LocalQueue default feeds cq: 64 GPUs of flavor h100, whose
 * Topology racks is block, rack, host. */
#define PIN_POLICY                                                                                 \
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: Topology\nmetadata: {name: racks}\n"             \
	"spec:\n  levels:\n  - nodeLabel: " PIN_BLOCK "\n  - nodeLabel: " PIN_RACK                 \
	"\n  - nodeLabel: " PIN_HOST "\n"                                                          \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"        \
	"spec:\n  nodeLabels: {nvidia.com/gpu.product: H100}\n  topologyName: racks\n"             \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"            \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"                \
	"    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: 64}]\n"          \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: default}\nspec: {clusterQueue: cq}\n"

/* Node `name` of flavor h100 in block b1, rack `rack`, with `gpus` GPUs,
 * fed to c's core as the Nodes watch would. */
static void pin_node(struct controller *c, const char *name, const char *rack, int gpus)
{
	const queue_label_t labels[] = {{"nvidia.com/gpu.product", "H100"},
					{PIN_BLOCK, "b1"},
					{PIN_RACK, rack},
					{PIN_HOST, name}};
	const queue_request_t alloc[] = {{"nvidia.com/gpu", gpus}, {"pods", 110}};
	const queue_node_spec_t spec = {.name = name,
					.labels = labels,
					.n_labels = 4,
					.allocatable = alloc,
					.n_allocatable = 2};
	gpuq_diag_t d = {{0}};

	assert_int_equal(
	    engine_change_apply(
		c->e, &(engine_change_t){.kind = ENGINE_CHANGE_NODE_SET, .node_spec = &spec}, &d),
	    GPUQ_OK);
}

/* A controller over PIN_POLICY with rack r1 of one 4-GPU node and rack r2
 * of two. */
static struct controller *pin_new(void)
{
	struct controller *c = ctl_new_policy(PIN_POLICY);

	pin_node(c, "r1-n0", "r1", 4);
	pin_node(c, "r2-n0", "r2", 4);
	pin_node(c, "r2-n1", "r2", 4);
	return c;
}

/* tmpl (a pod template) asks for one rack (Kueue's annotation). */
static void rack_required(json_t *tmpl)
{
	json_object_set_new(tmpl, "metadata",
			    json_pack("{s:{s:s}}", "annotations",
				      "kueue.x-k8s.io/podset-required-topology", PIN_RACK));
}

/* The nodeSelector of a Job's release patch (its template's). */
static char *released_selector(struct controller *c, const char *uid)
{
	json_t *body = NULL, *op;
	queue_wl_t id;
	size_t i;
	char *s = NULL;

	assert_int_equal(queue_workload_find(engine_core(c->e), uid, &id), GPUQ_OK);
	assert_int_equal(controller_release_parent_patch(c, controller_job(c, uid), id, &body),
			 GPUQ_OK);
	json_array_foreach(body, i, op)
	{
		if (!strcmp(json_string_value(json_object_get(op, "path")),
			    "/spec/template/spec/nodeSelector"))
			s = ctl_dump(json_object_get(op, "value"));
	}
	json_decref(body);
	assert_non_null(s);
	return s;
}

/* A rack-required Job of two 4-GPU pods fits only rack r2 (two nodes): its
 * release pins block and rack, not a host. The next one, of one pod, fits
 * only r1's node: pinned to it. */
static void job_pinned_to_its_rack(void **state)
{
	struct controller *c = pin_new();
	json_t *a = ctl_job("team-a", "a", 4, 2, true, "default");
	json_t *b = ctl_job("team-a", "b", 4, 1, true, "default");
	char *got;

	(void)state;
	rack_required(json_object_get(json_object_get(a, "spec"), "template"));
	rack_required(json_object_get(json_object_get(b, "spec"), "template"));
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, NULL), GPUQ_OK);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_state(c, "b"), QUEUE_WL_ADMITTED);
	got = released_selector(c, "a");
	assert_string_equal(got, "{\"nvidia.com/gpu.product\":\"H100\",\"" PIN_BLOCK
				 "\":\"b1\",\"" PIN_RACK "\":\"r2\"}");
	free(got);
	got = released_selector(c, "b");
	assert_string_equal(got, "{\"" PIN_HOST "\":\"r1-n0\",\"nvidia.com/gpu.product\":"
				 "\"H100\",\"" PIN_BLOCK "\":\"b1\",\"" PIN_RACK "\":\"r1\"}");
	free(got);
	json_decref(a);
	json_decref(b);
	ctl_free(c);
}

/* Released with the pin, then preempted: the restore patch puts back the
 * template's own nodeSelector (here none), so the pin goes with it and the
 * Job can be admitted again anywhere. */
static void preempted_job_restored_without_the_pin(void **state)
{
	struct controller *c = pin_new();
	json_t *obj = ctl_job("team-a", "a", 4, 2, true, "default"), *body = NULL, *op, *tmpl;
	controller_cevent_t ev;
	queue_wl_t id;
	size_t i;
	char *got;

	(void)state;
	tmpl = json_object_get(json_object_get(obj, "spec"), "template");
	rack_required(tmpl);
	ctl_job_event(c, KUBE_EV_ADDED, obj);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, NULL), GPUQ_OK);
	assert_int_equal(queue_workload_find(engine_core(c->e), "a", &id), GPUQ_OK);
	assert_int_equal(controller_release_parent_patch(c, controller_job(c, "a"), id, &body),
			 GPUQ_OK);
	/* the Job as the release left it: the pinned selector, the original
	 * kept in the annotation */
	json_array_foreach(body, i, op)
	{
		const char *path = json_string_value(json_object_get(op, "path"));

		if (!strcmp(path, "/spec/template/spec/nodeSelector"))
			json_object_set(json_object_get(tmpl, "spec"), "nodeSelector",
					json_object_get(op, "value"));
		else if (!strcmp(path, "/metadata/annotations"))
			json_object_set(json_object_get(obj, "metadata"), "annotations",
					json_object_get(op, "value"));
	}
	json_decref(body);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(tmpl, "spec"), "nodeSelector"), PIN_RACK)),
	    "r2");
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	body = controller_release_restore_patch(ev.wl);
	got = ctl_dump(body);
	assert_non_null(
	    strstr(got, "{\"op\":\"remove\",\"path\":\"/spec/template/spec/nodeSelector\"}"));
	assert_null(strstr(got, PIN_RACK));
	free(got);
	json_decref(body);
	controller_cevent_deinit(&ev);
	json_decref(obj);
	ctl_free(c);
}

/* A JobSet of two rack-required replicatedJobs of two 4-GPU pods, with
 * racks r1 and r2 of two 4-GPU nodes each: each replicatedJob is pinned to
 * its own rack. */
static void jobset_each_replicated_job_its_rack(void **state)
{
	struct controller *c = pin_new();
	json_t *js = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:b, s:[{s:s, s:i, s:{s:{s:i, "
	    "s:i, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}}}}, {s:s, s:i, s:{s:{s:i, s:i, "
	    "s:{s:{s:{s:s}}, s:{s:[{s:s, s:s, s:{s:{s:s}}}]}}}}}]}}",
	    "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", "js",
	    "namespace", "team-a", "uid", "js", "resourceVersion", "12", "creationTimestamp",
	    "2026-11-25T00:00:00Z", "labels", "gpuq.dev/queue-name", "default", "spec", "suspend",
	    1, "replicatedJobs", "name", "a", "replicas", 1, "template", "spec", "parallelism", 2,
	    "completions", 2, "template", "metadata", "annotations",
	    "kueue.x-k8s.io/podset-required-topology", PIN_RACK, "spec", "containers", "name", "w",
	    "image", "x", "resources", "limits", "nvidia.com/gpu", "4", "name", "b", "replicas", 1,
	    "template", "spec", "parallelism", 2, "completions", 2, "template", "metadata",
	    "annotations", "kueue.x-k8s.io/podset-required-topology", PIN_RACK, "spec",
	    "containers", "name", "w", "image", "x", "resources", "limits", "nvidia.com/gpu", "4");
	controller_cevent_t ev;
	json_t *body = NULL, *op;
	const char *rack[2] = {NULL, NULL};
	queue_wl_t id;
	size_t i;

	(void)state;
	assert_non_null(js);
	pin_node(c, "r1-n1", "r1", 4);
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOBSET), KUBE_EV_ADDED, js);
	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, NULL), GPUQ_OK);
	assert_int_equal(ctl_state(c, "js"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "js", &id), GPUQ_OK);
	assert_int_equal(controller_release_parent_patch(c, controller_job(c, "js"), id, &body),
			 GPUQ_OK);
	json_array_foreach(body, i, op)
	{
		const char *path = json_string_value(json_object_get(op, "path"));
		json_t *sel = json_object_get(op, "value");

		for (int k = 0; k < 2; k++) {
			char want[96];

			snprintf(want, sizeof(want),
				 "/spec/replicatedJobs/%d/template/spec/template/spec/nodeSelector",
				 k);
			if (!strcmp(path, want)) {
				rack[k] = json_string_value(json_object_get(sel, PIN_RACK));
				assert_string_equal(
				    json_string_value(json_object_get(sel, PIN_BLOCK)), "b1");
				assert_null(json_object_get(sel, PIN_HOST)); /* two nodes */
			}
		}
	}
	assert_non_null(rack[0]);
	assert_non_null(rack[1]);
	assert_string_not_equal(rack[0], rack[1]);
	json_decref(body);
	json_decref(js);
	ctl_free(c);
}

/* A gated pod group of two rack-required 4-GPU members fits only rack r2:
 * the placement each member is released with (release_member's call)
 * carries that rack. */
static void group_member_pinned_to_its_rack(void **state)
{
	struct controller *c = pin_new();
	json_t *m[2] = {ctl_group_pod("m0", "g", 2, 4), ctl_group_pod("m1", "g", 2, 4)};
	json_t *sel = NULL, *tols = NULL;
	char flavors[256];
	queue_wl_t id;

	(void)state;
	for (int k = 0; k < 2; k++) {
		json_object_set_new(
		    json_object_get(json_object_get(m[k], "metadata"), "annotations"),
		    "kueue.x-k8s.io/podset-required-topology", json_string(PIN_RACK));
		ctl_pod_event(c, KUBE_EV_ADDED, m[k]);
	}
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, NULL), GPUQ_OK);
	assert_int_equal(ctl_state(c, "group:team-a/g"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "group:team-a/g", &id), GPUQ_OK);
	assert_int_equal(controller_actuate_placement(c, id, 0, false, NULL, NULL, &sel, &tols,
						      flavors, sizeof(flavors)),
			 GPUQ_OK);
	assert_string_equal(json_string_value(json_object_get(sel, PIN_RACK)), "r2");
	assert_string_equal(json_string_value(json_object_get(sel, PIN_BLOCK)), "b1");
	json_decref(sel);
	json_decref(tols);
	json_decref(m[0]);
	json_decref(m[1]);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(job_pinned_to_its_rack),
	    cmocka_unit_test(preempted_job_restored_without_the_pin),
	    cmocka_unit_test(jobset_each_replicated_job_its_rack),
	    cmocka_unit_test(group_member_pinned_to_its_rack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

/* A rack-preferred Job of 3 x 4 GPUs with `affinity` (stolen; NULL: none)
 * in its template, released over PIN_POLICY's three 4-GPU nodes (rack r1
 * of one, r2 of two): the op of its release patch whose path starts with
 * /spec/template/spec/affinity (NULL: none), into *op_out (new reference),
 * the nodeSelector (block only: two racks) checked, and the Job as released
 * into *obj_out (new reference). */
static void spread_release(json_t *affinity, json_t **op_out, json_t **obj_out)
{
	struct controller *c = pin_new();
	json_t *obj = ctl_job("team-a", "a", 4, 3, true, "default"), *body = NULL, *op, *tmpl;
	queue_wl_t id;
	size_t i;

	tmpl = json_object_get(json_object_get(obj, "spec"), "template");
	json_object_set_new(tmpl, "metadata",
			    json_pack("{s:{s:s}}", "annotations",
				      "kueue.x-k8s.io/podset-preferred-topology", PIN_RACK));
	if (affinity)
		json_object_set_new(json_object_get(tmpl, "spec"), "affinity", affinity);
	ctl_job_event(c, KUBE_EV_ADDED, obj);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, NULL), GPUQ_OK);
	assert_int_equal(ctl_state(c, "a"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "a", &id), GPUQ_OK);
	assert_int_equal(controller_release_parent_patch(c, controller_job(c, "a"), id, &body),
			 GPUQ_OK);
	*op_out = NULL;
	json_array_foreach(body, i, op)
	{
		const char *path = json_string_value(json_object_get(op, "path"));
		json_t *v = json_object_get(op, "value");

		if (!strcmp(path, "/spec/template/spec/nodeSelector")) {
			assert_string_equal(json_string_value(json_object_get(v, PIN_BLOCK)), "b1");
			assert_null(json_object_get(v, PIN_RACK));
			json_object_set(json_object_get(tmpl, "spec"), "nodeSelector", v);
		} else if (!strncmp(path, "/spec/template/spec/affinity", 28)) {
			assert_null(*op_out);
			*op_out = json_incref(op);
		} else if (!strcmp(path, "/metadata/annotations")) {
			json_object_set(json_object_get(obj, "metadata"), "annotations", v);
		}
	}
	json_decref(body);
	ctl_free(c);
	*obj_out = obj;
}

/* The hosts of a nodeSelectorTerms list of spread_release's Job, each term
 * naming a rack and a host (In), in order, joined by ",". */
static void terms_hosts(const json_t *terms, char *out, size_t cap)
{
	const json_t *t;
	size_t i;

	out[0] = '\0';
	assert_int_equal(json_array_size(terms), 3);
	json_array_foreach(terms, i, t)
	{
		const json_t *ex = json_object_get(t, "matchExpressions");
		const json_t *rack = json_array_get(ex, 0), *host = json_array_get(ex, 1);
		const char *h =
		    json_string_value(json_array_get(json_object_get(host, "values"), 0));

		assert_int_equal(json_array_size(ex), 2);
		assert_string_equal(json_string_value(json_object_get(rack, "key")), PIN_RACK);
		assert_string_equal(json_string_value(json_object_get(rack, "operator")), "In");
		assert_string_equal(json_string_value(json_object_get(host, "key")), PIN_HOST);
		assert_non_null(h);
		/* each host in its own rack's term */
		assert_int_equal(
		    strncmp(h,
			    json_string_value(json_array_get(json_object_get(rack, "values"), 0)),
			    2),
		    0);
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", h);
	}
}

/* A rack-preferred Job placed across racks r1 and r2: its nodeSelector pins
 * the block they share, and a required nodeAffinity pins the domains below
 * it, one term per node (the Topology ends in hostname), so the scheduler
 * cannot put a Pod in a third rack. The original says where the template's
 * affinity stopped, and the restore takes the pin away. */
static void spread_job_pinned_to_its_domains(void **state)
{
	json_t *op, *obj, *body, *tmpl;
	controller_cevent_t ev;
	char hosts[128], *got;

	(void)state;
	spread_release(NULL, &op, &obj);
	assert_non_null(op);
	assert_string_equal(json_string_value(json_object_get(op, "op")), "add");
	assert_string_equal(json_string_value(json_object_get(op, "path")),
			    "/spec/template/spec/affinity");
	terms_hosts(
	    json_object_get(
		json_object_get(json_object_get(json_object_get(op, "value"), "nodeAffinity"),
				"requiredDuringSchedulingIgnoredDuringExecution"),
		"nodeSelectorTerms"),
	    hosts, sizeof(hosts));
	assert_string_equal(hosts, "r1-n0,r2-n0,r2-n1");
	assert_non_null(strstr(json_string_value(json_object_get(
				   json_object_get(json_object_get(obj, "metadata"), "annotations"),
				   "gpuq.dev/original-scheduling")),
			       "\"affinityAt\":0"));
	/* the Job as released, then preempted: the restore removes the pin */
	tmpl = json_object_get(json_object_get(obj, "spec"), "template");
	json_object_set(json_object_get(tmpl, "spec"), "affinity", json_object_get(op, "value"));
	ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), KUBE_EV_MODIFIED, obj);
	body = controller_release_restore_patch(ev.wl);
	got = ctl_dump(body);
	assert_non_null(
	    strstr(got, "{\"op\":\"remove\",\"path\":\"/spec/template/spec/affinity\"}"));
	free(got);
	json_decref(body);
	controller_cevent_deinit(&ev);
	json_decref(op);
	json_decref(obj);
}

/* The pin goes where the template's own affinity stops: beside a pod
 * anti-affinity, as nodeAffinity; beside a preferred node affinity, as its
 * required terms; and a template with required node affinity of its own
 * keeps it, pinned by the shared levels only. */
static void spread_pin_beside_the_templates_affinity(void **state)
{
	json_t *op, *obj;

	(void)state;
	spread_release(json_pack("{s:{s:[]}}", "podAntiAffinity",
				 "preferredDuringSchedulingIgnoredDuringExecution"),
		       &op, &obj);
	assert_non_null(op);
	assert_string_equal(json_string_value(json_object_get(op, "path")),
			    "/spec/template/spec/affinity/nodeAffinity");
	assert_non_null(json_object_get(json_object_get(op, "value"),
					"requiredDuringSchedulingIgnoredDuringExecution"));
	json_decref(op);
	json_decref(obj);
	spread_release(json_pack("{s:{s:[]}}", "nodeAffinity",
				 "preferredDuringSchedulingIgnoredDuringExecution"),
		       &op, &obj);
	assert_non_null(op);
	assert_string_equal(json_string_value(json_object_get(op, "path")),
			    "/spec/template/spec/affinity/nodeAffinity/"
			    "requiredDuringSchedulingIgnoredDuringExecution");
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(op, "value"), "nodeSelectorTerms")), 3);
	json_decref(op);
	json_decref(obj);
	spread_release(json_pack("{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}", "nodeAffinity",
				 "requiredDuringSchedulingIgnoredDuringExecution",
				 "nodeSelectorTerms", "matchExpressions", "key", "disk", "operator",
				 "In", "values", "ssd"),
		       &op, &obj);
	assert_null(op);
	json_decref(obj);
}

/* Members m[0..n) of gated pod groups, each annotated `key` (a topology
 * annotation) = rack, fed to c as the Pods watch would, then one step. */
static void members_added(struct controller *c, json_t **m, int n, const char *key)
{
	for (int k = 0; k < n; k++) {
		json_object_set_new(
		    json_object_get(json_object_get(m[k], "metadata"), "annotations"), key,
		    json_string(PIN_RACK));
		ctl_pod_event(c, KUBE_EV_ADDED, m[k]);
	}
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, NULL), GPUQ_OK);
}

/* A gated pod group of three rack-preferred 4-GPU members spans racks r1
 * and r2: the terms each member's release carries (release_member's
 * controller_actuate_pin_terms) name the three nodes, each with its rack. */
static void group_across_racks_pinned_to_its_domains(void **state)
{
	struct controller *c = pin_new();
	json_t *m[3] = {ctl_group_pod("m0", "g", 3, 4), ctl_group_pod("m1", "g", 3, 4),
			ctl_group_pod("m2", "g", 3, 4)};
	json_t *terms;
	char hosts[128];
	queue_wl_t id;

	(void)state;
	members_added(c, m, 3, "kueue.x-k8s.io/podset-preferred-topology");
	assert_int_equal(ctl_state(c, "group:team-a/g"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "group:team-a/g", &id), GPUQ_OK);
	terms = controller_actuate_pin_terms(c, id, 0);
	terms_hosts(terms, hosts, sizeof(hosts));
	assert_string_equal(hosts, "r1-n0,r2-n0,r2-n1");
	json_decref(terms);
	for (int k = 0; k < 3; k++)
		json_decref(m[k]);
	ctl_free(c);
}

/* A rack-required group of two 4-GPU members, in rack r2 (two nodes): the
 * nodeSelector pins the rack, and the terms the two nodes (the level below,
 * hostname, is where they part). One member alone, on one node: no terms
 * (the nodeSelector names that node). */
static void group_in_one_rack_pinned_to_its_nodes(void **state)
{
	struct controller *c = pin_new();
	json_t *m[3] = {ctl_group_pod("m0", "g", 2, 4), ctl_group_pod("m1", "g", 2, 4),
			ctl_group_pod("s0", "solo", 1, 4)};
	json_t *terms;
	char *got;
	queue_wl_t id;

	(void)state;
	members_added(c, m, 3, "kueue.x-k8s.io/podset-required-topology");
	assert_int_equal(queue_workload_find(engine_core(c->e), "group:team-a/g", &id), GPUQ_OK);
	terms = controller_actuate_pin_terms(c, id, 0);
	got = ctl_dump(terms);
	assert_string_equal(got, "[{\"matchExpressions\":[{\"key\":\"" PIN_HOST
				 "\",\"operator\":\"In\",\"values\":[\"r2-n0\"]}]},"
				 "{\"matchExpressions\":[{\"key\":\"" PIN_HOST
				 "\",\"operator\":\"In\",\"values\":[\"r2-n1\"]}]}]");
	free(got);
	json_decref(terms);
	assert_int_equal(ctl_state(c, "group:team-a/solo"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(engine_core(c->e), "group:team-a/solo", &id), GPUQ_OK);
	assert_null(controller_actuate_pin_terms(c, id, 0));
	for (int k = 0; k < 3; k++)
		json_decref(m[k]);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(job_pinned_to_its_rack),
	    cmocka_unit_test(preempted_job_restored_without_the_pin),
	    cmocka_unit_test(jobset_each_replicated_job_its_rack),
	    cmocka_unit_test(group_member_pinned_to_its_rack),
	    cmocka_unit_test(spread_job_pinned_to_its_domains),
	    cmocka_unit_test(spread_pin_beside_the_templates_affinity),
	    cmocka_unit_test(group_across_racks_pinned_to_its_domains),
	    cmocka_unit_test(group_in_one_rack_pinned_to_its_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the daemon's half of topology-aware admission
 * (controller/nodes.c; issue 33), through watch events and without an
 * apiserver: a Node decoded on the watch thread (its fields, its caps, a
 * huge one refused naming the field), fed to the core only when what the
 * core reads changed (a heartbeat stops short of it), its cordon said once
 * under a placement, the use of Pods gpuq did not admit counted on their
 * nodes (bound and unfinished only; gpuq-admitted ones not), Nodes seen
 * before the first core fed when it is built, and Topologies of both groups
 * reaching the policy with their flavors no longer left out. */
#include "unit/controller_fixtures.h"

#include "jv/jv.h"

#define RACK "topology.gpuq.dev/rack"
#define HOST "kubernetes.io/hostname"

/* A controller with no policy and no core yet (as the daemon starts). */
static struct controller *bare_new(void)
{
	struct controller *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	controller_opts_default(&c->o);
	c->o.core.release_on_evict = false;
	assert_int_equal(engine_open(NULL, &c->o.core, NULL, &c->e, NULL), GPUQ_OK);
	assert_int_equal(qmetrics_create(&c->metrics), GPUQ_OK);
	atomic_store(&c->leader, true);
	return c;
}

static void bare_free(struct controller *c)
{
	qmetrics_destroy(c->metrics);
	ctl_free(c);
}

/* One policy object (JSON text) as its watch shows it. */
static void policy_obj(struct controller *c, controller_res_t res, const char *json)
{
	json_t *o = json_loads(json, 0, NULL);
	controller_cevent_t ev = {.res = res, .type = KUBE_EV_ADDED, .object = o};

	assert_non_null(o);
	controller_snapshot_apply(c, &ev);
	json_decref(o);
}

/* Team-a, LocalQueue default into ClusterQueue cq of 16 GPUs of flavor
 * h100 on Topology racks (rack, host) of group `topo_group` (its
 * collection topo_res), then a snapshot. */
static void topo_policy(struct controller *c, controller_res_t topo_res, const char *topo_group)
{
	char topo[512];

	snprintf(topo, sizeof(topo),
		 "{\"apiVersion\": \"%s\", \"kind\": \"Topology\", \"metadata\": {\"name\": "
		 "\"racks\"}, \"spec\": {\"levels\": [{\"nodeLabel\": \"" RACK "\"}, "
		 "{\"nodeLabel\": \"" HOST "\"}]}}",
		 topo_group);
	policy_obj(c, CONTROLLER_RES_NAMESPACES,
		   "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": "
		   "\"team-a\", \"labels\": {\"team\": \"a\"}}}");
	policy_obj(c, topo_res, topo);
	policy_obj(c, CONTROLLER_RES_FLAVORS,
		   "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": \"ResourceFlavor\", "
		   "\"metadata\": {\"name\": \"h100\"}, \"spec\": {\"nodeLabels\": "
		   "{\"nvidia.com/gpu.product\": \"H100\"}, \"tolerations\": [{\"key\": "
		   "\"nvidia.com/gpu\", \"operator\": \"Exists\", \"effect\": \"NoSchedule\"}], "
		   "\"topologyName\": \"racks\"}}");
	policy_obj(c, CONTROLLER_RES_CLUSTERQUEUES,
		   "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": \"ClusterQueue\", "
		   "\"metadata\": {\"name\": \"cq\"}, \"spec\": {\"namespaceSelector\": "
		   "{\"matchLabels\": {\"team\": \"a\"}}, \"resourceGroups\": "
		   "[{\"coveredResources\": [\"nvidia.com/gpu\"], \"flavors\": [{\"name\": "
		   "\"h100\", \"resources\": [{\"name\": \"nvidia.com/gpu\", \"nominalQuota\": "
		   "16}]}]}]}}");
	policy_obj(c, CONTROLLER_RES_LOCALQUEUES,
		   "{\"apiVersion\": \"gpuq.dev/v1beta1\", \"kind\": \"LocalQueue\", "
		   "\"metadata\": {\"namespace\": \"team-a\", \"name\": \"default\"}, \"spec\": "
		   "{\"clusterQueue\": \"cq\"}}");
	assert_int_equal(controller_snapshot_rebuild(c), GPUQ_OK);
}

/* A Node as the apiserver shows it: `gpus` GPUs in rack `rack`, cordoned
 * or not, Ready or not, its heartbeat at second hb, `extra` more labels
 * before the ones that matter, 100 images (what a real Node carries). */
static char *node_text(const char *name, const char *rack, int gpus, bool cordoned, bool ready,
		       int hb, int extra)
{
	json_t *labels = json_object(), *images = json_array(), *n;
	char *text;

	for (int i = 0; i < extra; i++) {
		char key[32];
		snprintf(key, sizeof(key), "x.example/l%03d", i);
		json_object_set_new(labels, key, json_string("v"));
	}
	json_object_set_new(labels, "nvidia.com/gpu.product", json_string("H100"));
	json_object_set_new(labels, RACK, json_string(rack));
	json_object_set_new(labels, HOST, json_string(name));
	for (int i = 0; i < 100; i++)
		json_array_append_new(images, json_pack("{s:[s], s:i}", "names",
							"registry.example/some/image:v1",
							"sizeBytes", 1000000 + i));
	n = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:b, s:[{s:s, s:s}]}, "
		      "s:{s:{s:s, s:s, s:o, s:s}, s:[{s:s, s:s, s:o}], s:o}}",
		      "apiVersion", "v1", "kind", "Node", "metadata", "name", name,
		      "resourceVersion", "1", "labels", labels, "spec", "unschedulable", cordoned,
		      "taints", "key", "nvidia.com/gpu", "effect", "NoSchedule", "status",
		      "allocatable", "cpu", "64", "memory", "512Gi", "nvidia.com/gpu",
		      json_sprintf("%d", gpus), "pods", "110", "conditions", "type", "Ready",
		      "status", ready ? "True" : "False", "lastHeartbeatTime",
		      json_sprintf("2026-11-30T00:00:%02dZ", hb % 60), "images", images);
	assert_non_null(n);
	text = json_dumps(n, JSON_COMPACT);
	assert_non_null(text);
	json_decref(n);
	return text;
}

/* The event the Nodes watch thread makes of text (controller_informer_event). */
static controller_cevent_t node_event(struct controller *c, kube_event_type_t type, char *text)
{
	jv_doc_t d = {0};
	char err[128];
	controller_cevent_t ev;
	kube_event_t kev = {.type = type};

	assert_int_equal(jv_doc_parse(&d, text, strlen(text), err, sizeof(err)), GPUQ_OK);
	kev.fast = d.root;
	controller_informer_event(CONTROLLER_RES_NODES, &c->o.review_cfg, &kev, &ev);
	jv_doc_free(&d);
	free(text);
	return ev;
}

static void node_apply(struct controller *c, kube_event_type_t type, char *text)
{
	controller_cevent_t ev = node_event(c, type, text);

	controller_handle(c, &ev); /* the loop's dispatch; frees ev */
}

/* A Pod gpuq did not admit (no queue, not gated): `gpus` GPUs, bound to
 * node (NULL: not bound), in phase; admitted: it carries gpuq.dev/admitted. */
static json_t *foreign_pod(const char *name, const char *node, int gpus, const char *phase,
			   bool admitted)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{}}, "
			      "s:{s:[{s:s, s:s, s:{s:{s:s}}}]}, s:{s:s}}",
			      "apiVersion", "v1", "kind", "Pod", "metadata", "name", name,
			      "namespace", "team-b", "uid", name, "resourceVersion", "3",
			      "creationTimestamp", "2026-11-25T00:00:00Z", "annotations", "spec",
			      "containers", "name", "main", "image", "x", "resources", "limits",
			      "nvidia.com/gpu", "1", "status", "phase", phase);

	assert_non_null(p);
	json_object_set_new(
	    json_object_get(
		json_object_get(
		    json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0),
		    "resources"),
		"limits"),
	    "nvidia.com/gpu", json_sprintf("%d", gpus));
	if (node)
		json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
	if (admitted)
		json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
				    WORKLOAD_ANNOT_ADMITTED, json_string("true"));
	return p;
}

static void pod_apply(struct controller *c, kube_event_type_t type, json_t *pod)
{
	ctl_pod_event(c, type, pod);
	json_decref(pod);
}

/* A controller over the topology policy (gpuq.dev Topology) with node n1
 * (8 GPUs, rack r1) in its core. */
static struct controller *topo_new(void)
{
	struct controller *c = bare_new();

	topo_policy(c, CONTROLLER_RES_TOPOLOGIES, "gpuq.dev/v1beta1");
	node_apply(c, KUBE_EV_ADDED, node_text("n1", "r1", 8, false, true, 0, 0));
	return c;
}

/* Whether a cycle now admits a suspended 8-GPU Job named `name`. */
static bool admits_8(struct controller *c, const char *name)
{
	json_t *job = ctl_job("team-a", name, 8, 1, true, "default");
	queue_result_t r;
	bool in = false;

	ctl_job_event(c, KUBE_EV_ADDED, job);
	json_decref(job);
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	for (size_t i = 0; i < r.n_admissions; i++)
		in = in || !strcmp(r.admissions[i].uid, name);
	return in;
}

/* One cycle; whether it admitted uid. */
static bool cycle_admits(struct controller *c, const char *uid)
{
	queue_result_t r;
	bool in = false;

	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &r), GPUQ_OK);
	for (size_t i = 0; i < r.n_admissions; i++)
		in = in || !strcmp(r.admissions[i].uid, uid);
	return in;
}

/* ---- decode ---- */

static void node_decodes_what_the_core_reads(void **state)
{
	struct controller *c = bare_new();
	controller_cevent_t ev =
	    node_event(c, KUBE_EV_ADDED, node_text("n1", "r1", 8, true, false, 5, 0));
	const controller_node_t *n = ev.node;
	bool gpus = false, pods = false;

	(void)state;
	assert_non_null(n);
	assert_null(ev.bad);
	assert_string_equal(n->name, "n1");
	assert_int_equal(n->n_labels, 3);
	assert_int_equal(n->n_alloc, 4);
	for (size_t i = 0; i < n->n_alloc; i++) {
		gpus = gpus ||
		       (!strcmp(n->alloc[i].resource, "nvidia.com/gpu") && n->alloc[i].amount == 8);
		pods = pods || (!strcmp(n->alloc[i].resource, "pods") && n->alloc[i].amount == 110);
	}
	assert_true(gpus);
	assert_true(pods);
	assert_int_equal(n->n_taints, 1);
	assert_string_equal(n->taints[0].key, "nvidia.com/gpu");
	assert_int_equal(n->taints[0].effect, QUEUE_EFFECT_NO_SCHEDULE);
	assert_true(n->cordoned);
	assert_true(n->not_ready);
	controller_cevent_deinit(&ev);
	bare_free(c);
}

/* A Node past a cap (1,103 labels; 40 taints) is refused naming the node and
 * the field, and stays out of the core; one within the caps but with more
 * labels than the core keeps is fed with the labels that matter. */
static void huge_node_refused_or_trimmed(void **state)
{
	struct controller *c = topo_new();
	controller_cevent_t ev =
	    node_event(c, KUBE_EV_ADDED, node_text("big", "r2", 8, false, true, 0, 1100));
	json_t *tn;
	char *text;
	uint32_t h100;

	(void)state;
	assert_null(ev.node);
	assert_non_null(ev.bad);
	assert_non_null(strstr(ev.bad, "Node \"big\": metadata.labels: 1103 entries"));
	assert_string_equal(ev.uid, "big");
	controller_handle(c, &ev);
	assert_int_equal(queue_flavor_find(engine_core(c->e), "h100", &h100), GPUQ_OK);
	assert_null(queue_node_domain(engine_core(c->e), h100, "big", RACK));

	/* 40 taints: refused too, naming the field */
	text = node_text("t1", "r2", 8, false, true, 0, 0);
	tn = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(tn);
	for (int i = 0; i < 39; i++)
		json_array_append_new(json_object_get(json_object_get(tn, "spec"), "taints"),
				      json_pack("{s:s, s:s}", "key", "k", "effect", "NoExecute"));
	text = json_dumps(tn, JSON_COMPACT);
	json_decref(tn);
	ev = node_event(c, KUBE_EV_ADDED, text);
	assert_null(ev.node);
	assert_non_null(strstr(ev.bad, "Node \"t1\": spec.taints: 40 entries"));
	controller_cevent_deinit(&ev);
	/* a known node whose new version is refused takes nothing new until a
	   version decodes again */
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 8, false, true, 0, 1100));
	assert_false(admits_8(c, "a")); /* no node to place it on */
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 8, false, true, 1, 1100));
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 8, false, true, 2, 0));
	assert_true(cycle_admits(c, "a"));

	/* 100 more labels than the core keeps: the rack, host and product kept */
	node_apply(c, KUBE_EV_ADDED, node_text("wide", "r3", 8, false, true, 0, 100));
	assert_string_equal(queue_node_domain(engine_core(c->e), h100, "wide", RACK), "r3");
	bare_free(c);
}

/* A refused version of a node under a running workload is no failure: the
 * node keeps its last good version, takes nothing new, and its workload
 * is not evicted (deleting it from the core would: NodeFailures). */
static void refused_node_keeps_its_workloads(void **state)
{
	struct controller *c = topo_new();
	queue_result_t r;
	queue_wl_t id;
	queue_workload_view_t v;

	(void)state;
	assert_true(admits_8(c, "a"));
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, false, true, 1, 1100));
	assert_int_equal(ctl_step(c->e, controller_now(c) + 60000, 1, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_workload_find(engine_core(c->e), "a", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	assert_int_equal(v.state, QUEUE_WL_ADMITTED);
	assert_false(admits_8(c, "b")); /* 8 GPUs free there, but nothing new */
	assert_int_equal(c->cordons_said, 0);
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, false, true, 2, 0));
	assert_true(cycle_admits(c, "b"));
	bare_free(c);
}

/* ---- feeding the core ---- */

/* Heartbeats, image lists and resourceVersions do not reach the core (a
 * NODE_SET marks every cohort changed); a change of capacity does. */
static void heartbeat_stops_short_of_core(void **state)
{
	struct controller *c = topo_new();
	uint64_t fed = c->nodes_fed;

	(void)state;
	assert_int_equal(fed, 1);
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 8, false, true, 30, 0));
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 8, false, true, 40, 0));
	assert_int_equal(c->nodes_fed, fed);
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 4, false, true, 50, 0));
	assert_int_equal(c->nodes_fed, fed + 1);
	bare_free(c);
}

/* 8-GPU Job `name` as the watch shows it once released (unsuspended,
 * marked admitted). */
static void release(struct controller *c, const char *name)
{
	json_t *job = ctl_job("team-a", name, 8, 1, false, "default");

	json_object_set_new(json_object_get(job, "metadata"), "annotations",
			    json_pack("{s:s}", WORKLOAD_ANNOT_ADMITTED, "true"));
	ctl_job_event(c, KUBE_EV_MODIFIED, job);
	json_decref(job);
}

/* A cordon under a released workload's placement reaches the core (it
 * places nothing new there) and is said once per transition: not again at
 * a heartbeat or another change while cordoned; again after an uncordon.
 * A workload admitted but still suspended (no pods yet) hears nothing. */
static void cordon_reaches_core_said_once(void **state)
{
	struct controller *c = topo_new();

	(void)state;
	assert_true(admits_8(c, "a"));
	release(c, "a");
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, false, true, 1, 0));
	assert_int_equal(c->cordons_said, 0);
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, true, true, 2, 0));
	assert_int_equal(c->cordons_said, 1);
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, true, true, 3, 0));
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, true, false, 4, 0));
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 12, true, false, 5, 0)); /* fed */
	assert_int_equal(c->cordons_said, 1);
	assert_false(admits_8(c, "b")); /* 8 GPUs free there, and quota: cordoned */
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, false, true, 5, 0));
	assert_true(cycle_admits(c, "b")); /* admitted, not released yet */
	node_apply(c, KUBE_EV_MODIFIED, node_text("n1", "r1", 16, true, true, 6, 0));
	assert_int_equal(c->cordons_said, 2); /* a again; not b */
	bare_free(c);
}

/* What bound, unfinished Pods use on a node is counted there: those gpuq
 * did not admit as its used, those it admitted as its own (a gpuq Pod no
 * placement holds takes room too); unbound and finished Pods are not; a
 * Pod that finishes or goes, or a relist that no longer shows it, frees
 * its share. */
static void foreign_pods_use_counted(void **state)
{
	struct controller *c = topo_new();
	controller_cevent_t reset = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_POD),
				     .type = KUBE_EV_RESET};
	controller_cevent_t synced = {.res = CONTROLLER_RES_OF(WORKLOAD_KIND_POD),
				      .type = KUBE_EV_SYNCED};

	(void)state;
	pod_apply(c, KUBE_EV_ADDED, foreign_pod("p1", "n1", 4, "Running", false));
	assert_int_equal(c->pod_use.n, 1);
	pod_apply(c, KUBE_EV_ADDED, foreign_pod("ours", "n1", 4, "Running", true));
	pod_apply(c, KUBE_EV_ADDED, foreign_pod("unbound", NULL, 4, "Pending", false));
	pod_apply(c, KUBE_EV_ADDED, foreign_pod("done", "n1", 4, "Succeeded", false));
	assert_int_equal(c->pod_use.n, 2);
	assert_false(admits_8(c, "a")); /* 4 of n1's 8 GPUs used, 4 gpuq's own */
	pod_apply(c, KUBE_EV_MODIFIED, foreign_pod("p1", "n1", 4, "Succeeded", false));
	assert_int_equal(c->pod_use.n, 1);
	assert_false(admits_8(c, "a")); /* gpuq's pod, placed by none, holds 4 */
	pod_apply(c, KUBE_EV_MODIFIED, foreign_pod("ours", "n1", 4, "Succeeded", true));
	assert_int_equal(c->pod_use.n, 0);
	assert_true(cycle_admits(c, "a"));

	pod_apply(c, KUBE_EV_ADDED, foreign_pod("p2", "n1", 2, "Running", false));
	pod_apply(c, KUBE_EV_ADDED, foreign_pod("p3", "n1", 2, "Running", false));
	assert_int_equal(c->pod_use.n, 2);
	pod_apply(c, KUBE_EV_DELETED, foreign_pod("p2", "n1", 2, "Running", false));
	assert_int_equal(c->pod_use.n, 1);
	controller_pods_apply(c, &reset); /* a relist that shows p3 no more */
	controller_pods_apply(c, &synced);
	assert_int_equal(c->pod_use.n, 0);
	bare_free(c);
}

/* Nodes seen before the first core are fed when it is built; a core built
 * again without them is fed every one (controller_nodes_feed's fresh). */
static void nodes_fed_when_first_core_built(void **state)
{
	struct controller *c = bare_new();
	uint32_t h100;

	(void)state;
	node_apply(c, KUBE_EV_ADDED, node_text("n1", "r1", 8, false, true, 0, 0));
	assert_null(engine_core(c->e));
	assert_int_equal(c->nodes_fed, 0);
	topo_policy(c, CONTROLLER_RES_TOPOLOGIES, "gpuq.dev/v1beta1");
	assert_int_equal(queue_flavor_find(engine_core(c->e), "h100", &h100), GPUQ_OK);
	assert_string_equal(queue_node_domain(engine_core(c->e), h100, "n1", RACK), "r1");
	assert_true(admits_8(c, "a"));

	/* a core built again without them (a new term: engine_core_reset):
	   each node's spec is unchanged, yet every one is fed */
	assert_int_equal(engine_core_reset(c->e, NULL), GPUQ_OK);
	assert_null(queue_node_domain(engine_core(c->e), h100, "n1", RACK));
	controller_nodes_feed(c, false);
	assert_null(queue_node_domain(engine_core(c->e), h100, "n1", RACK)); /* unchanged */
	controller_nodes_feed(c, true);
	assert_string_equal(queue_node_domain(engine_core(c->e), h100, "n1", RACK), "r1");
	bare_free(c);
}

/* A relist of the Nodes drops the ones it no longer shows, from the cache
 * and from the core; a deleted Node goes too. */
static void relist_drops_nodes_not_seen(void **state)
{
	struct controller *c = topo_new();
	controller_cevent_t reset = {.res = CONTROLLER_RES_NODES, .type = KUBE_EV_RESET};
	controller_cevent_t synced = {.res = CONTROLLER_RES_NODES, .type = KUBE_EV_SYNCED};

	(void)state;
	node_apply(c, KUBE_EV_ADDED, node_text("n2", "r2", 8, false, true, 0, 0));
	node_apply(c, KUBE_EV_ADDED, node_text("n3", "r3", 8, false, true, 0, 0));
	assert_int_equal(c->nodes.n, 3);
	controller_handle(c, &reset);
	node_apply(c, KUBE_EV_ADDED, node_text("n1", "r1", 8, false, true, 1, 0));
	node_apply(c, KUBE_EV_ADDED, node_text("n3", "r3", 8, false, true, 1, 0));
	controller_handle(c, &synced);
	assert_int_equal(c->nodes.n, 2);
	node_apply(c, KUBE_EV_DELETED, node_text("n3", "r3", 8, false, true, 1, 0));
	assert_int_equal(c->nodes.n, 1);
	assert_true(admits_8(c, "a"));	/* on n1 */
	assert_false(admits_8(c, "b")); /* n2 and n3 are gone */
	bare_free(c);
}

/* A Topology of either group reaches the policy, and a flavor naming it
 * is no longer left out (TopologyUnplaced): the core has its levels. */
static void topologies_of_both_groups(void **state)
{
	static const struct {
		controller_res_t res;
		const char *group;
	} cases[] = {{CONTROLLER_RES_TOPOLOGIES, "gpuq.dev/v1beta1"},
		     {CONTROLLER_RES_KUEUE_TOPOLOGIES, "kueue.x-k8s.io/v1beta2"}};

	(void)state;
	assert_string_equal(controller_res_at(CONTROLLER_RES_TOPOLOGIES).path,
			    "/apis/gpuq.dev/v1beta1/topologies");
	assert_string_equal(controller_res_at(CONTROLLER_RES_KUEUE_TOPOLOGIES).path,
			    "/apis/kueue.x-k8s.io/v1beta2/topologies");
	assert_true(controller_res_at(CONTROLLER_RES_KUEUE_TOPOLOGIES).policy);
	assert_false(controller_res_at(CONTROLLER_RES_NODES).policy);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct controller *c = bare_new();
		uint32_t h100;

		topo_policy(c, cases[i].res, cases[i].group);
		assert_int_equal(policy_topology_count(c->policy), 1);
		assert_int_equal(policy_leftout_count(c->policy), 0);
		assert_int_equal(queue_flavor_find(engine_core(c->e), "h100", &h100), GPUQ_OK);
		assert_string_equal(queue_flavor_level(engine_core(c->e), h100, 0), RACK);
		bare_free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(node_decodes_what_the_core_reads),
	    cmocka_unit_test(huge_node_refused_or_trimmed),
	    cmocka_unit_test(refused_node_keeps_its_workloads),
	    cmocka_unit_test(heartbeat_stops_short_of_core),
	    cmocka_unit_test(cordon_reaches_core_said_once),
	    cmocka_unit_test(foreign_pods_use_counted),
	    cmocka_unit_test(nodes_fed_when_first_core_built),
	    cmocka_unit_test(relist_drops_nodes_not_seen),
	    cmocka_unit_test(topologies_of_both_groups),
	};

	return cmocka_run_group_tests_name("controller_nodes", tests, NULL, NULL);
}

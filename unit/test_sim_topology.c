/* Unit tests for sim's topology input (issue 33): a trace's nodes (kind:
 * Node documents and spec.nodeGroups) and its pod sets' topology requests
 * (podSets[].topology, or an object's annotations read by workload/),
 * parsed into the trace; examples/traces/topology-racks.yaml among them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "sim/sim.h"
#include "unit/sim_fixtures.h"

/* One flavor, one ClusterQueue, one LocalQueue team-a/lq, then the Trace's
 * head (its spec follows). */
#define POLICY                                                                                     \
	"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: default}\n---\n"     \
	"apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq-a}\nspec:\n"        \
	"  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"     \
	"    flavors: [{name: default, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]\n"  \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\n"                                    \
	"metadata: {namespace: team-a, name: lq}\nspec: {clusterQueue: cq-a}\n---\n"
#define TRACE "apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: t}\n"
#define ONE                                                                                        \
	"  arrivals:\n  - {at: 0, name: a, localQueue: team-a/lq, runtime: 1s,"                    \
	"     podSets: [{count: 1, requests: {nvidia.com/gpu: 1}}]}\n"
/* A trace whose spec is ONE plus s (a spec member), documents before it d. */
#define WITH(d, s) POLICY d TRACE "spec:\n" ONE s

static const char *label(const sim_node_t *n, const char *key)
{
	for (size_t i = 0; i < n->n_labels; i++)
		if (!strcmp(n->labels[i].key, key))
			return n->labels[i].value;
	return NULL;
}

static int64_t alloc(const sim_trace_t *t, const sim_node_t *n, const char *res)
{
	for (size_t i = 0; i < n->n_alloc; i++)
		if (!strcmp(t->res_names[n->alloc[i].res], res))
			return n->alloc[i].amount;
	return -1;
}

/* The example trace: 2 blocks x 4 racks x 4 nodes x 8 GPUs, a Topology of
 * three levels, a flavor naming it, and three generators' topology. */
static void example_trace(void **state)
{
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};
	const policy_flavor_t *f;
	const sim_node_t *n;
	size_t per_rack[2][4] = {{0}};

	(void)state;
	if (sim_trace_load("examples/traces/topology-racks.yaml", &t, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(t->n_nodes, 32);
	for (size_t i = 0; i < t->n_nodes; i++) {
		const char *b, *r;

		n = &t->nodes[i];
		b = label(n, "topology.gpuq.dev/block");
		r = label(n, "topology.gpuq.dev/rack");
		assert_non_null(b);
		assert_non_null(r);
		per_rack[b[1] - '1'][r[1] - '1']++;
		assert_string_equal(label(n, "kubernetes.io/hostname"), n->name);
		assert_int_equal(alloc(t, n, "nvidia.com/gpu"), 8);
		assert_false(n->unschedulable);
		assert_int_equal(n->n_taints, 0);
		for (size_t k = 1; k < n->n_labels; k++) /* sorted by key */
			assert_true(strcmp(n->labels[k - 1].key, n->labels[k].key) < 0);
	}
	for (size_t b = 0; b < 2; b++)
		for (size_t r = 0; r < 4; r++)
			assert_int_equal(per_rack[b][r], 4);
	n = &t->nodes[0];
	assert_string_equal(n->name, "b1-r1-n0");
	assert_string_equal(t->nodes[31].name, "b2-r4-n3");
	assert_int_equal(n->n_labels, 4);
	assert_int_equal(n->n_alloc, 4);
	assert_int_equal(alloc(t, n, "cpu"), 96000); /* millicores */
	assert_int_equal(alloc(t, n, "memory"), (int64_t)1 << 40);
	assert_int_equal(alloc(t, n, "pods"), 110);
	/* the policy: the Topology and the flavor on it */
	f = policy_flavor_find(t->policy, "h100");
	assert_non_null(f->topology);
	assert_string_equal(f->topology->name, "racks");
	assert_int_equal(f->topology->n_levels, 3);
	assert_string_equal(f->topology->levels[1], "topology.gpuq.dev/rack");
	/* the generators' pod sets */
	assert_int_equal(t->n_shapes, 3);
	assert_int_equal(t->shapes[0].podsets[0].topology.mode, WORKLOAD_TOPO_REQUIRED);
	assert_string_equal(t->shapes[0].podsets[0].topology.level, "topology.gpuq.dev/rack");
	assert_int_equal(t->shapes[1].podsets[0].topology.mode, WORKLOAD_TOPO_PREFERRED);
	assert_int_equal(t->shapes[1].podsets[0].count, 6);
	assert_int_equal(t->shapes[2].podsets[0].topology.mode, WORKLOAD_TOPO_UNCONSTRAINED);
	assert_null(t->shapes[2].podsets[0].topology.level);
	sim_trace_destroy(t);
}

/* kind: Node documents, as kubectl writes them (fields gpuq does not read
 * taken), beside a node group; both in the one list, documents first. */
static void node_documents(void **state)
{
	sim_trace_t *t = parse_ok(WITH(
	    "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-a\n  uid: u1\n"
	    "  labels: {topology.gpuq.dev/rack: r9, kubernetes.io/hostname: host-a}\n"
	    "spec:\n  unschedulable: true\n  podCIDR: 10.0.0.0/24\n"
	    "  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}, "
	    "{key: maint, effect: NoExecute, timeAdded: \"2026-01-01T00:00:00Z\"}]\n"
	    "status:\n  capacity: {cpu: 128}\n  allocatable: {cpu: 126500m, nvidia.com/gpu: 4}\n"
	    "  conditions: [{type: Ready, status: \"True\"}]\n---\n",
	    "  nodeGroups: [{namePrefix: g-, count: 2, allocatable: {nvidia.com/gpu: 8},"
	    " unschedulable: false, taints: [{key: k, effect: PreferNoSchedule}]}]\n"));
	const sim_node_t *n = &t->nodes[0];

	(void)state;
	assert_int_equal(t->n_nodes, 3);
	assert_string_equal(n->name, "gpu-a");
	/* a hostname label given is kept as given */
	assert_string_equal(label(n, "kubernetes.io/hostname"), "host-a");
	assert_string_equal(label(n, "topology.gpuq.dev/rack"), "r9");
	assert_true(n->unschedulable);
	assert_int_equal(n->n_taints, 2);
	assert_string_equal(n->taints[0].key, "nvidia.com/gpu");
	assert_string_equal(n->taints[0].value, "present");
	assert_int_equal(n->taints[0].effect, POLICY_EFFECT_NO_SCHEDULE);
	assert_string_equal(n->taints[1].value, "");
	assert_int_equal(n->taints[1].effect, POLICY_EFFECT_NO_EXECUTE);
	assert_int_equal(alloc(t, n, "cpu"), 126500);
	assert_int_equal(alloc(t, n, "nvidia.com/gpu"), 4);
	assert_string_equal(t->nodes[1].name, "g-0");
	assert_string_equal(t->nodes[2].name, "g-1");
	assert_string_equal(label(&t->nodes[2], "kubernetes.io/hostname"), "g-1");
	assert_int_equal(t->nodes[2].n_labels, 1);
	assert_int_equal(t->nodes[2].taints[0].effect, POLICY_EFFECT_PREFER_NO_SCHEDULE);
	assert_false(t->nodes[2].unschedulable);
	sim_trace_destroy(t);
}

/* The cap: 65,536 nodes in one trace, counted over every group. */
static void node_cap(void **state)
{
	sim_trace_t *t = parse_ok(WITH("", "  nodeGroups: [{namePrefix: n-, count: 65536, "
					   "allocatable: {nvidia.com/gpu: 8}}]\n"));

	(void)state;
	assert_int_equal(t->n_nodes, 65536);
	assert_string_equal(t->nodes[65535].name, "n-65535");
	sim_trace_destroy(t);
}

typedef struct {
	const char *text;
	int rc;
	const char *msg; /* the whole message */
} bad_t;

#define T6 "t.yaml: document 4: Trace \"t\": "
#define GROUP(x) "  nodeGroups: [{namePrefix: n-, count: 2, allocatable: {cpu: 1}" x "}]\n"
#define NODE(meta, rest)                                                                           \
	"apiVersion: v1\nkind: Node\nmetadata: {name: gpu-a" meta "}\n" rest "---\n"
#define PS(x)                                                                                      \
	POLICY TRACE "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: team-a/lq, runtime: "   \
		     "1s, podSets: [" x "]}\n"
#define R8 "requests: {nvidia.com/gpu: 1}"

static const bad_t BAD[] = {
    /* node groups */
    {WITH("", GROUP(", labels: {\"bad key!\": x}")), GPUQ_EINVAL,
     T6 "spec.nodeGroups[0].labels[bad key!]: invalid label key"},
    {WITH("", GROUP(", labels: {rack: \"r 1\"}")), GPUQ_EINVAL,
     T6 "spec.nodeGroups[0].labels[rack]: invalid label value \"r 1\""},
    {WITH("", "  nodeGroups: [{namePrefix: n-, count: 65537, allocatable: {cpu: 1}}]\n"),
     GPUQ_ERANGE, T6 "spec.nodeGroups[0].count: 65537 is out of range [1, 65536]"},
    {WITH("", "  nodeGroups: [{namePrefix: a-, count: 40000, allocatable: {cpu: 1}},"
	      " {namePrefix: b-, count: 30000, allocatable: {cpu: 1}}]\n"),
     GPUQ_ELIMIT,
     T6 "spec.nodeGroups[1].count: 30000 more nodes: the trace would hold more than 65536"},
    {WITH("", "  nodeGroups: [{namePrefix: n-, count: 2}]\n"), GPUQ_EINVAL,
     T6 "spec.nodeGroups[0].allocatable: required"},
    {WITH("", GROUP(", allocatable: {cpu: 1x}")), GPUQ_EINVAL, ""},
    {WITH("", "  nodeGroups: [{namePrefix: n-, count: 1, allocatable: {memory: 1500m}}]\n"),
     GPUQ_EINVAL,
     T6 "spec.nodeGroups[0].allocatable[memory]: \"1500m\" is not a whole number (only cpu may "
	"ask for a fraction)"},
    {WITH("", "  nodeGroups: [{namePrefix: N_, count: 1, allocatable: {cpu: 1}}]\n"), GPUQ_EINVAL,
     T6 "spec.nodeGroups[0].namePrefix: node name \"N_0\" is not a DNS-1123 subdomain"},
    {WITH("", GROUP(", taints: [{key: k}]")), GPUQ_EINVAL,
     T6 "spec.nodeGroups[0].taints[0].effect: required"},
    {WITH("", GROUP(", taints: [{key: k, effect: Sometimes}]")), GPUQ_EINVAL, ""},
    {WITH("", GROUP(", zone: a")), GPUQ_EINVAL, T6 "spec.nodeGroups[0].zone: unknown field"},
    {WITH("", "  nodeGroups: [{namePrefix: n-, count: 2, allocatable: {cpu: 1}},"
	      " {namePrefix: n-, count: 1, allocatable: {cpu: 1}}]\n"),
     GPUQ_EEXIST,
     T6 "two nodes named \"n-0\" (kind: Node documents and spec.nodeGroups name each node "
	"once)"},
    /* Node documents */
    {WITH(NODE("", "status: {allocatable: {cpu: 1}}\n") NODE("", "status: {allocatable: {cpu: "
								 "1}}\n"),
	  ""),
     GPUQ_EEXIST,
     "t.yaml: document 6: Trace \"t\": two nodes named \"gpu-a\" (kind: Node documents and "
     "spec.nodeGroups name each node "
     "once)"},
    {WITH(NODE("", "spec: {}\n"), ""), GPUQ_EINVAL,
     "t.yaml: document 4: Node \"gpu-a\": status: required"},
    {WITH(NODE("", "status: {allocatable: {nvidia.com/gpu: -1}}\n"), ""), GPUQ_EINVAL,
     "t.yaml: document 4: Node \"gpu-a\": status.allocatable[nvidia.com/gpu]: negative "
     "quantity \"-1\""},
    {WITH(NODE(", labelz: {}", "status: {allocatable: {cpu: 1}}\n"), ""), GPUQ_EINVAL,
     "t.yaml: document 4: Node \"gpu-a\": metadata.labelz: unknown field"},
    {WITH(NODE("", "spec: {unschedulable: yes}\nstatus: {allocatable: {cpu: 1}}\n"), ""),
     GPUQ_EINVAL, ""},
    {WITH("apiVersion: v2\nkind: Node\nmetadata: {name: x}\n---\n", ""), GPUQ_EINVAL,
     "t.yaml: document 4: Node: apiVersion: must be \"v1\", not \"v2\""},
    /* pod sets' topology */
    {PS("{count: 4, " R8 ", topology: {required: rack, preferred: block}}"), GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[0].topology: at most one of required, preferred and "
	"unconstrained"},
    {PS("{count: 4, " R8 ", topology: {required: \"a b\"}}"), GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[0].topology.required: \"a b\" is not a node label key (a "
	"Topology level's nodeLabel)"},
    {PS("{count: 4, " R8 ", topology: {required: block, sliceRequired: rack, sliceSize: 3}}"),
     GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[0].topology.sliceSize: 3 does not divide the pod set's 4 "
	"pods"},
    {PS("{count: 4, " R8 ", topology: {required: block, sliceRequired: rack}}"), GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[0].topology.sliceSize: required with sliceRequired"},
    {PS("{count: 4, " R8 ", topology: {required: rack, group: g}}"), GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[0].topology.group: \"g\" holds only pod set \"main\" (a "
	"group places two or more together)"},
    {PS("{name: l, count: 1, " R8 ", topology: {required: rack, group: g}}, "
	"{name: w, count: 3, " R8 ", topology: {preferred: rack, group: g}}"),
     GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[1].topology: group \"g\" of pod set \"w\" asks for another "
	"level than pod set \"l\""},
    {PS("{count: 4, " R8 ", topology: {required: rack, spread: true}}"), GPUQ_EINVAL,
     T6 "spec.arrivals[0].podSets[0].topology.spread: unknown field"},
};

static void bad_input(void **state)
{
	size_t failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		sim_trace_t *t = NULL;
		gpuq_diag_t d = {{0}};
		int rc = sim_trace_parse("t.yaml", BAD[i].text, strlen(BAD[i].text), &t, &d);

		if (rc != BAD[i].rc || t || (BAD[i].msg[0] && strcmp(d.msg, BAD[i].msg))) {
			print_error("case %zu: rc %d \"%s\"\n", i, rc, d.msg);
			failed++;
		}
		sim_trace_destroy(t);
	}
	assert_int_equal(failed, 0);
}

/* A group of pod sets, and an object whose templates carry Kueue's and
 * gpuq's annotations: read by workload/, carried into the shape. */
static void podset_topology(void **state)
{
	sim_trace_t *t =
	    parse_ok(PS("{name: l, count: 1, " R8 ", topology: {required: rack, group: g}}, "
			"{name: w, count: 4, " R8 ", topology: {required: rack, group: g}}"));
	const sim_shape_t *sh = &t->shapes[0];

	(void)state;
	assert_string_equal(sh->podsets[1].topology.group, "g");
	assert_string_equal(sh->podsets[0].topology.level, "rack");
	sim_trace_destroy(t);
	t = parse_ok(
	    POLICY TRACE
	    "spec:\n  arrivals:\n  - at: 0\n    localQueue: team-a/lq\n    runtime: 5s\n"
	    "    object:\n      apiVersion: jobset.x-k8s.io/v1alpha2\n"
	    "      kind: JobSet\n      metadata: {name: llama, namespace: team-a}\n"
	    "      spec:\n        replicatedJobs:\n"
	    "        - name: driver\n          template:\n            spec:\n"
	    "              template:\n                metadata:\n"
	    "                  annotations: {kueue.x-k8s.io/podset-required-topology: "
	    "topology.gpuq.dev/block}\n                spec:\n"
	    "                  containers: [{name: d, image: x, resources: {limits: "
	    "{nvidia.com/gpu: 1}}}]\n"
	    "        - name: workers\n          template:\n            spec:\n"
	    "              parallelism: 4\n              template:\n"
	    "                metadata:\n                  annotations:\n"
	    "                    gpuq.dev/podset-required-topology: topology.gpuq.dev/block\n"
	    "                    gpuq.dev/podset-slice-required-topology: "
	    "topology.gpuq.dev/rack\n"
	    "                    gpuq.dev/podset-slice-size: \"2\"\n"
	    "                spec:\n"
	    "                  containers: [{name: w, image: x, resources: {limits: "
	    "{nvidia.com/gpu: 8}}}]\n");
	sh = &t->shapes[t->arrivals[0].shape];
	assert_int_equal(sh->n_podsets, 2);
	assert_int_equal(sh->podsets[0].topology.mode, WORKLOAD_TOPO_REQUIRED);
	assert_string_equal(sh->podsets[0].topology.level, "topology.gpuq.dev/block");
	assert_null(sh->podsets[0].topology.slice_level);
	assert_int_equal(sh->podsets[1].count, 4);
	assert_string_equal(sh->podsets[1].topology.slice_level, "topology.gpuq.dev/rack");
	assert_int_equal(sh->podsets[1].topology.slice_size, 2);
	sim_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(example_trace),   cmocka_unit_test(node_documents),
	    cmocka_unit_test(node_cap),	       cmocka_unit_test(bad_input),
	    cmocka_unit_test(podset_topology),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

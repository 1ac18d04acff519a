/* Unit tests for policy: the Topology kind (issue 33) in each apiVersion
 * gpuq reads, its levels as declared, and a ResourceFlavor's
 * spec.topologyName resolved to it (refusals: test_policy_refusals.c;
 * a missing Topology left out: test_policy_leftout.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/policy_fixtures.h"

#define TOPO(api, name)                                                                            \
	"apiVersion: " api "\nkind: Topology\nmetadata: {name: " name "}\nspec:\n  levels:\n"      \
	"  - nodeLabel: topology.gpuq.dev/block\n  - nodeLabel: topology.gpuq.dev/rack\n"          \
	"  - nodeLabel: kubernetes.io/hostname\n---\n"

/* The same Topology read from each group and version gpuq accepts. */
static void topology_every_api(void **state)
{
	static const char *const apis[] = {"gpuq.dev/v1beta1", "kueue.x-k8s.io/v1beta1",
					   "kueue.x-k8s.io/v1beta2"};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		char text[1024];
		policy_t *p;
		gpuq_diag_t d;
		const policy_topology_t *t;

		snprintf(text, sizeof(text),
			 "apiVersion: %s\nkind: Topology\nmetadata: {name: racks}\nspec:\n"
			 "  levels: [{nodeLabel: topology.gpuq.dev/block}, {nodeLabel: "
			 "topology.gpuq.dev/rack}, {nodeLabel: kubernetes.io/hostname}]\n",
			 apis[i]);
		assert_int_equal(load_str(text, NULL, &p, &d), GPUQ_OK);
		assert_int_equal(policy_topology_count(p), 1);
		t = policy_topology_find(p, "racks");
		assert_non_null(t);
		assert_ptr_equal(policy_topology_at(p, 0), t);
		assert_null(policy_topology_at(p, 1));
		assert_string_equal(t->name, "racks");
		assert_int_equal(t->n_levels, 3);
		assert_string_equal(t->levels[0], "topology.gpuq.dev/block");
		assert_string_equal(t->levels[1], "topology.gpuq.dev/rack");
		assert_string_equal(t->levels[2], POLICY_LABEL_HOSTNAME);
		assert_int_equal(policy_topology_level(t, "topology.gpuq.dev/rack"), 1);
		assert_int_equal(policy_topology_level(t, POLICY_LABEL_HOSTNAME), 2);
		assert_int_equal(policy_topology_level(t, "topology.gpuq.dev/zone"), -1);
		assert_int_equal(policy_topology_level(NULL, "x"), -1);
		assert_string_equal(t->origin.file, "t.yaml");
		assert_int_equal(t->origin.doc, 1);
		policy_unref(p);
	}
}

/* A flavor's topologyName points at its Topology; a flavor without one has
 * neither; 16 levels (Kueue's cap) and one level are fine; an NVLink
 * domain label is a level like any other. */
static void flavor_names_topology(void **state)
{
	policy_t *p;
	gpuq_diag_t d;
	const policy_flavor_t *tas, *plain;
	const policy_topology_t *nv;

	(void)state;
	assert_int_equal(
	    load_str(
		TOPO(
		    "gpuq.dev/v1beta1",
		    "racks") "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: "
			     "nvl}\n"
			     "spec: {levels: [{nodeLabel: nvidia.com/gpu.clique}]}\n---\n"
			     "apiVersion: gpuq.dev/v1beta1\nkind: Topology\nmetadata: {name: "
			     "deep}\n"
			     "spec: {levels: [{nodeLabel: a}, {nodeLabel: b}, {nodeLabel: c}, "
			     "{nodeLabel: "
			     "d}, {nodeLabel: e}, {nodeLabel: f}, {nodeLabel: g}, {nodeLabel: h}, "
			     "{nodeLabel: i}, {nodeLabel: j}, {nodeLabel: k}, {nodeLabel: l}, "
			     "{nodeLabel: "
			     "m}, {nodeLabel: n}, {nodeLabel: o}, {nodeLabel: "
			     "kubernetes.io/hostname}]}\n"
			     "---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: "
			     "{name: "
			     "h100}\nspec:\n  nodeLabels: {gpu: h100}\n  topologyName: racks\n---\n"
			     "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: "
			     "cpu}\n",
		NULL, &p, &d),
	    GPUQ_OK);
	assert_int_equal(policy_topology_count(p), 3);
	tas = policy_flavor_find(p, "h100");
	plain = policy_flavor_find(p, "cpu");
	assert_string_equal(tas->topology_name, "racks");
	assert_ptr_equal(tas->topology, policy_topology_find(p, "racks"));
	assert_string_equal(policy_labels_get(&tas->node_labels, "gpu"), "h100");
	assert_null(plain->topology_name);
	assert_null(plain->topology);
	nv = policy_topology_find(p, "nvl");
	assert_int_equal(nv->n_levels, 1);
	assert_string_equal(nv->levels[0], "nvidia.com/gpu.clique");
	assert_int_equal(policy_topology_find(p, "deep")->n_levels, 16);
	assert_null(policy_topology_find(p, "missing"));
	policy_unref(p);
}

/* A Topology declared after the flavor naming it is found all the same
 * (references resolve at policy_finish), and a ClusterQueue on that flavor
 * loads. */
static void topology_after_flavor(void **state)
{
	policy_t *p;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(
	    load_str("apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: tas}\n"
		     "spec: {topologyName: racks}\n---\n"
		     "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n"
		     "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
		     "  - coveredResources: [nvidia.com/gpu]\n"
		     "    flavors: [{name: tas, resources: [{name: nvidia.com/gpu, nominalQuota: "
		     "64}]}]\n---\n" TOPO("kueue.x-k8s.io/v1beta1", "racks"),
		     NULL, &p, &d),
	    GPUQ_OK);
	assert_ptr_equal(policy_flavor_find(p, "tas")->topology, policy_topology_find(p, "racks"));
	assert_ptr_equal(policy_cq_find(p, "a")->groups[0].flavors[0].flavor,
			 policy_flavor_find(p, "tas"));
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(topology_every_api),
	    cmocka_unit_test(flavor_names_topology),
	    cmocka_unit_test(topology_after_flavor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for policy: the exact error message of every bad manifest
 * (one document or several, one field each). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy_json.h"
#include "unit/policy_fixtures.h"

#define CQ_HEAD "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: team-a}\n"
#define TOPO_HEAD "apiVersion: gpuq.dev/v1beta1\nkind: Topology\nmetadata: {name: t}\n"
#define RF_GPU "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: gpu}\n---\n"

typedef struct {
	const char *text; /* manifest t.yaml */
	int rc;		  /* expected code */
	const char *msg;  /* expected diagnostic, exactly */
} bad_t;

static const bad_t BAD[] = {
    /* dispatch */
    {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", GPUQ_EINVAL,
     "t.yaml: document 1: kind \"Deployment\" (apiVersion \"apps/v1\") is not a policy object; "
     "gpuq reads Namespace, LimitRange, ResourceQuota, PriorityClass, ResourceFlavor, "
     "Topology, ClusterQueue, LocalQueue, Cohort, ResourceClaimTemplate and RuntimeClass"},
    {"apiVersion: v1\nmetadata: {name: x}\n", GPUQ_EINVAL,
     "t.yaml: document 1: kind: required (a string)"},
    {"kind: Namespace\nmetadata: {name: x}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Namespace: apiVersion: required (a string)"},
    {"apiVersion: kueue.x-k8s.io/v1alpha1\nkind: ClusterQueue\nmetadata: {name: x}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue: apiVersion \"kueue.x-k8s.io/v1alpha1\" is not one gpuq "
     "reads (want gpuq.dev/v1beta1, kueue.x-k8s.io/v1beta1 or kueue.x-k8s.io/v1beta2)"},
    /* RuntimeClass: its overhead.podFixed is what its Pods are charged */
    {"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\n"
     "overhead: {podFixed: {cpu: 2Gb}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: RuntimeClass \"kata\": overhead.podFixed[cpu]: invalid quantity \"2Gb\""},
    {"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\noverhead: 3\n",
     GPUQ_EINVAL, "t.yaml: document 1: RuntimeClass \"kata\": overhead: must be a mapping, not 3"},
    {"apiVersion: node.k8s.io/v1beta1\nkind: RuntimeClass\nmetadata: {name: kata}\n", GPUQ_EINVAL,
     "t.yaml: document 1: RuntimeClass: apiVersion \"node.k8s.io/v1beta1\" is not one gpuq reads "
     "(want node.k8s.io/v1)"},
    /* metadata */
    {"apiVersion: v1\nkind: Namespace\n", GPUQ_EINVAL,
     "t.yaml: document 1: Namespace: metadata: required"},
    {"apiVersion: v1\nkind: Namespace\nmetadata: {labels: {}}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Namespace: metadata.name: required"},
    {"apiVersion: v1\nkind: Namespace\nmetadata: {name: Team_A}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Namespace: metadata.name: invalid name \"Team_A\" (want a DNS-1123 "
     "label)"},
    {"apiVersion: v1\nkind: Namespace\nmetadata: {name: 5}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Namespace: metadata.name: must be a string, not 5"},
    {"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {\"bad key!\": x}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Namespace \"a\": metadata.labels[bad key!]: invalid label key"},
    {"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {tier: 1.5}}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Namespace \"a\": metadata.labels[tier]: must be a string, not 1.5"},
    {"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {kubernetes.io/metadata.name: "
     "b}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Namespace \"a\": metadata.labels[kubernetes.io/metadata.name]: \"b\" "
     "is not the namespace's name"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\nspec: "
     "{clusterQueue: c}\n",
     GPUQ_EINVAL, "t.yaml: document 1: LocalQueue: metadata.namespace: required"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f, namespace: x}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor: metadata.namespace: must not be set: ResourceFlavor "
     "is cluster-scoped"},
    /* ClusterQueue */
    {RF_GPU CQ_HEAD
     "spec:\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
     "    flavors:\n    - name: gpu\n      resources:\n      - name: nvidia.com/gpu\n"
     "        nominalQuota: 8\n    - name: gpu2\n      resources:\n"
     "      - name: nvidia.com/gpu\n        nominalQuota: 1Gb\n",
     GPUQ_EINVAL,
     "t.yaml: document 2: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota: invalid quantity \"1Gb\""},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
	     "    - name: gpu\n      resources:\n      - {name: cpu, nominalQuota: -1}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: must not be negative, not -1"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
	     "    - name: gpu\n      resources:\n      - {name: cpu}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: required"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n"
	     "    - name: gpu\n      resources:\n      - {name: cpu, nominalQuota: 1}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.resourceGroups[0].flavors[0]: "
     "resources: 1 entries, but coveredResources has 2"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n"
	     "    - name: gpu\n      resources:\n      - {name: memory, nominalQuota: 1}\n"
	     "      - {name: cpu, nominalQuota: 1}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].flavors[0].resources[0]: name: \"memory\" is not \"cpu\", the "
     "coveredResources entry in the same position"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
	     "    - name: gpu\n      resources:\n      - {name: cpu, nominalQuota: 1, "
	     "borrowingLimit: 2}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].flavors[0].resources[0]: borrowingLimit: must not be set without "
     "a cohortName"},
    {CQ_HEAD "spec:\n  cohortName: pool\n  resourceGroups:\n  - coveredResources: [cpu]\n"
	     "    flavors:\n    - name: gpu\n      resources:\n      - {name: cpu, nominalQuota: "
	     "8, lendingLimit: 10}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].flavors[0].resources[0]: lendingLimit: 10 is more than "
     "nominalQuota 8"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
	     "    - name: a\n      resources: [{name: cpu, nominalQuota: 1}]\n"
	     "  - coveredResources: [memory, cpu]\n    flavors:\n    - name: b\n      resources: "
	     "[{name: memory, nominalQuota: 1}, {name: cpu, nominalQuota: 1}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec: resourceGroups[1].coveredResources[1]: "
     "\"cpu\" is already covered by resourceGroups[0]"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
	     "    - name: a\n      resources: [{name: cpu, nominalQuota: 1}]\n"
	     "    - name: a\n      resources: [{name: cpu, nominalQuota: 2}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec: resourceGroups[0].flavors[1].name: "
     "flavor \"a\" already appears in resourceGroups[0]"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu, cpu]\n    flavors: []\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.resourceGroups[0].coveredResources[1]: \"cpu\" is listed twice"},
    {CQ_HEAD "spec:\n  queueingStrategy: Fifo\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.queueingStrategy: unknown value "
     "\"Fifo\" (want BestEffortFIFO or StrictFIFO)"},
    {CQ_HEAD "spec:\n  nominalquota: 5\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.nominalquota: unknown field"},
    {CQ_HEAD "spec:\n  admissionChecks: [prov]\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.admissionChecks: not supported by gpuq"},
    {CQ_HEAD "spec:\n  concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.concurrentAdmissionPolicy: not "
     "supported by gpuq"},
    {CQ_HEAD "spec:\n  admissionScope: {admissionMode: UsageBased}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.admissionScope.admissionMode: unknown "
     "value \"UsageBased\" (want NoAdmissionFairSharing or UsageBasedAdmissionFairSharing)"},
    {CQ_HEAD "spec:\n  admissionScope: {}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.admissionScope.admissionMode: "
     "required"},
    {CQ_HEAD "spec:\n  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing, "
	     "usageHalfLifeTime: 1h}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.admissionScope.usageHalfLifeTime: "
     "unknown field"},
    {CQ_HEAD "spec:\n  admissionScope: UsageBasedAdmissionFairSharing\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.admissionScope: must be a mapping, "
     "not \"UsageBasedAdmissionFairSharing\""},
    {CQ_HEAD "spec:\n  namespaceSelector:\n    matchExpressions:\n    - {key: team, operator: "
	     "Is, values: [a]}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.namespaceSelector.matchExpressions[0].operator: unknown value \"Is\" (want In, "
     "NotIn, Exists or DoesNotExist)"},
    {CQ_HEAD "spec:\n  namespaceSelector:\n    matchExpressions:\n    - {key: team, operator: "
	     "In}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.namespaceSelector.matchExpressions[0].values: must not be empty for operator In"},
    {CQ_HEAD "spec:\n  namespaceSelector:\n    matchExpressions:\n    - {key: team, operator: "
	     "Exists, values: [a]}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": "
     "spec.namespaceSelector.matchExpressions[0].values: must be empty for operator Exists"},
    {CQ_HEAD "spec:\n  namespaceSelector: {matchLables: {a: b}}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.namespaceSelector.matchLables: unknown "
     "field"},
    {CQ_HEAD "spec:\n  preemption: {reclaimWithinCohort: Never, borrowWithinCohort: {policy: "
	     "LowerPriority}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.preemption: borrowWithinCohort.policy: "
     "LowerPriority needs reclaimWithinCohort other than Never"},
    {CQ_HEAD "spec:\n  preemption: {withinClusterQueue: Any}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.preemption.withinClusterQueue: unknown "
     "value \"Any\" (want Never, LowerPriority or LowerOrNewerEqualPriority)"},
    {CQ_HEAD "spec:\n  fairSharing: {weight: lots}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.fairSharing.weight: invalid quantity "
     "\"lots\""},
    {CQ_HEAD "spec:\n  cohortName: a\n  cohort: b\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec: cohortName \"a\" and cohort \"b\" "
     "differ"},
    {CQ_HEAD "spec:\n  resourceGroups: {}\n", GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.resourceGroups: must be a list, not a "
     "mapping"},
    {CQ_HEAD, GPUQ_EINVAL, "t.yaml: document 1: ClusterQueue \"team-a\": spec: required"},
    /* ResourceFlavor */
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  nodeTaints: [{key: nvidia.com/gpu, effect: NoSchedul}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.nodeTaints[0].effect: unknown value "
     "\"NoSchedul\" (want \"\", NoSchedule, PreferNoSchedule or NoExecute)"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  nodeTaints: [{key: nvidia.com/gpu}]\n",
     GPUQ_EINVAL, "t.yaml: document 1: ResourceFlavor \"f\": spec.nodeTaints[0]: effect: required"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  tolerations: [{operator: Equal, value: x}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.tolerations[0]: operator: must be Exists "
     "when key is empty"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  nodeLabels: {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}\n",
     GPUQ_ELIMIT,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.nodeLabels: 9 labels, more than the 8 "
     "allowed"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f, annotations: "
     "{gpuq.dev/price-per-hour: \"2,50\"}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": metadata.annotations[\"gpuq.dev/price-per-hour\"]: "
     "price \"2,50\": not a decimal number (want e.g. \"2.50\")"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f, annotations: "
     "{gpuq.dev/price-per-hour: \"-0.5\"}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": metadata.annotations[\"gpuq.dev/price-per-hour\"]: "
     "price \"-0.5\": negative"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f, annotations: "
     "{gpuq.dev/price-per-hour: \"1000000.01\"}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": metadata.annotations[\"gpuq.dev/price-per-hour\"]: "
     "price \"1000000.01\": more than 1000000 an hour"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f, annotations: "
     "{gpuq.dev/price-per-hour: 2.5}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": metadata.annotations[\"gpuq.dev/price-per-hour\"]: "
     "must be a string such as \"2.50\", not 2.5"},
    /* spec.topologyName: a Topology the policy declares */
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  topologyName: rack\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.topologyName: Topology \"rack\" not found"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  topologyName: Rack_1\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.topologyName: invalid name \"Rack_1\" "
     "(want a DNS-1123 subdomain)"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  topologyName: [a]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.topologyName: must be a string, not a list"},
    /* Topology */
    {TOPO_HEAD "spec: {levels: []}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels: at least one level is required"},
    {TOPO_HEAD "spec: {}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels: required"},
    {TOPO_HEAD, GPUQ_EINVAL, "t.yaml: document 1: Topology \"t\": spec: required"},
    {TOPO_HEAD "spec:\n  levels: [{nodeLabel: a}, {nodeLabel: b}, {nodeLabel: c}, {nodeLabel: d},"
	       " {nodeLabel: e}, {nodeLabel: f}, {nodeLabel: g}, {nodeLabel: h}, {nodeLabel: i},"
	       " {nodeLabel: j}, {nodeLabel: k}, {nodeLabel: l}, {nodeLabel: m}, {nodeLabel: n},"
	       " {nodeLabel: o}, {nodeLabel: p}, {nodeLabel: q}]\n",
     GPUQ_ELIMIT,
     "t.yaml: document 1: Topology \"t\": spec.levels: 17 entries, more than the 16 allowed"},
    {TOPO_HEAD "spec:\n  levels: [{nodeLabel: topology.gpuq.dev/rack}, {nodeLabel: "
	       "topology.gpuq.dev/rack}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels[1].nodeLabel: \"topology.gpuq.dev/rack\" "
     "is already level 0"},
    {TOPO_HEAD "spec:\n  levels: [{nodeLabel: \"rack!\"}]\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels[0].nodeLabel: invalid label key \"rack!\""},
    {TOPO_HEAD "spec:\n  levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: "
	       "topology.gpuq.dev/rack}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels[0].nodeLabel: \"kubernetes.io/hostname\" "
     "may only be the last (narrowest) level"},
    {TOPO_HEAD "spec:\n  levels: [{nodeLabel: \"\"}]\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels[0].nodeLabel: invalid label key \"\""},
    {TOPO_HEAD "spec:\n  levels: [{label: rack}]\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.levels[0].label: unknown field"},
    {TOPO_HEAD "spec:\n  levels: [{nodeLabel: rack}]\n  extra: 1\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology \"t\": spec.extra: unknown field"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: Topology\nmetadata: {name: t, namespace: x}\n"
     "spec: {levels: [{nodeLabel: rack}]}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Topology: metadata.namespace: must not be set: Topology is "
     "cluster-scoped"},
    {TOPO_HEAD "spec: {levels: [{nodeLabel: rack}]}\n---\n" TOPO_HEAD
	       "spec: {levels: [{nodeLabel: rack}]}\n",
     GPUQ_EEXIST,
     "t.yaml: document 2: Topology \"t\": duplicate name (first declared in t.yaml document 1)"},
    {"apiVersion: kueue.x-k8s.io/v1alpha1\nkind: Topology\nmetadata: {name: t}\n", GPUQ_EINVAL,
     "t.yaml: document 1: Topology: apiVersion \"kueue.x-k8s.io/v1alpha1\" is not one gpuq "
     "reads (want gpuq.dev/v1beta1, kueue.x-k8s.io/v1beta1 or kueue.x-k8s.io/v1beta2)"},
    /* LocalQueue, Cohort */
    {"apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: a, name: q}\nspec: "
     "{}\n",
     GPUQ_EINVAL, "t.yaml: document 1: LocalQueue \"a/q\": spec.clusterQueue: required"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: a, name: q.x}\n"
     "spec: {clusterQueue: c}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: LocalQueue: metadata.name: invalid name \"q.x\" (want a DNS-1123 "
     "label)"},
    {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec: "
     "{parentName: c}\n",
     GPUQ_EINVAL, "t.yaml: document 1: Cohort \"c\": spec.parentName: \"c\" is the Cohort itself"},
    {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec:\n"
     "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n"
     "      resources: [{name: cpu, nominalQuota: 4, lendingLimit: 2}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Cohort \"c\": spec.resourceGroups[0].flavors[0].resources[0]: "
     "lendingLimit: must not be set without a parentName"},
    /* PriorityClass */
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\n", GPUQ_EINVAL,
     "t.yaml: document 1: PriorityClass \"p\": value: required"},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: "
     "\"100\"\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: PriorityClass \"p\": value: must be an integer, not \"100\""},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: "
     "2000000000\n",
     GPUQ_ERANGE,
     "t.yaml: document 1: PriorityClass \"p\": value: 2000000000 is above 1000000000, reserved "
     "for system- classes"},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: "
     "3000000000\n",
     GPUQ_ERANGE,
     "t.yaml: document 1: PriorityClass \"p\": value: 3000000000 is out of range [-2147483648, "
     "2147483647]"},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 1\n"
     "globalDefault: \"yes\"\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: PriorityClass \"p\": globalDefault: must be true or false, not "
     "\"yes\""},
    /* LimitRange, ResourceQuota */
    {"apiVersion: v1\nkind: LimitRange\nmetadata: {namespace: a, name: l}\nspec:\n  limits:\n"
     "  - {type: Container, max: {nvidia.com/gpu: 8Gb}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: LimitRange \"a/l\": spec.limits[0].max[nvidia.com/gpu]: invalid "
     "quantity \"8Gb\""},
    {"apiVersion: v1\nkind: LimitRange\nmetadata: {namespace: a, name: l}\nspec:\n  limits:\n"
     "  - {type: Node}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: LimitRange \"a/l\": spec.limits[0].type: unknown value \"Node\" (want "
     "Container, Pod or PersistentVolumeClaim)"},
    {"apiVersion: v1\nkind: LimitRange\nmetadata: {namespace: a, name: l}\nspec:\n  limits:\n"
     "  - {type: Container, min: {cpu: 2}, max: {cpu: 1}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: LimitRange \"a/l\": spec.limits[0]: min[cpu] 2 is more than max[cpu] "
     "1"},
    {"apiVersion: v1\nkind: LimitRange\nmetadata: {namespace: a, name: l}\nspec:\n  limits:\n"
     "  - {type: Pod, default: {cpu: 1}}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: LimitRange \"a/l\": spec.limits[0]: default and defaultRequest are "
     "not allowed for type Pod"},
    {"apiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: a, name: q}\nspec:\n  hard: "
     "{requests.nvidia.com/gpu: 4}\n  scopeSelector: {matchExpressions: [{scopeName: "
     "PriorityClass, operator: Sometimes}]}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceQuota \"a/q\": spec.scopeSelector.matchExpressions[0]."
     "operator: unknown value \"Sometimes\" (want Exists, DoesNotExist, In or NotIn)"},
    {"apiVersion: v1\nkind: ResourceQuota\nmetadata: {namespace: a, name: q}\nspec:\n  hard: "
     "{\"requests.nvidia.com/gpu!\": 4}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceQuota \"a/q\": spec.hard[requests.nvidia.com/gpu!]: invalid "
     "resource name"},
    /* ResourceClaimTemplate */
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        exactly: {deviceClassName: gpu.nvidia.com, count: 0}\n",
     GPUQ_ERANGE,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": "
     "spec.spec.devices.requests[0].exactly.count: 0 is out of range [1, 2147483647]"},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        deviceClassName: gpu.nvidia.com\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": spec.spec.devices.requests[0]: set "
     "one of exactly and firstAvailable"},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, count: 2}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": "
     "spec.spec.devices.requests[0].exactly.count: must not be set with allocationMode All"},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        exactly: {deviceClassName: gpu.nvidia.com}\n        firstAvailable: [{name: x, "
     "deviceClassName: gpu.nvidia.com}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": spec.spec.devices.requests[0]: set "
     "exactly one of exactly and firstAvailable"},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        firstAvailable: []\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": spec.spec.devices.requests[0]: "
     "firstAvailable: must not be empty"},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        exactly: {deviceClassName: gpu.nvidia.com}\n      - name: gpu\n"
     "        exactly: {deviceClassName: gpu.nvidia.com}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": spec.spec.devices.requests[1]: name: "
     "duplicate \"gpu\""},
    {"apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: a, "
     "name: t}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
     "        exactly: {deviceClassName: Bad_Class}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceClaimTemplate \"a/t\": "
     "spec.spec.devices.requests[0].exactly.deviceClassName: invalid device class name "
     "\"Bad_Class\""},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.tolerations[0]: tolerationSeconds: only "
     "allowed with effect NoExecute"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  tolerations: [{key: a, operator: Exists, value: b}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.tolerations[0]: value: must be empty with "
     "operator Exists"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n"
     "  nodeTaints: [{key: a, value: b, effect: NoSchedule, extra: 1}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ResourceFlavor \"f\": spec.nodeTaints[0].extra: unknown field"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
     "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: []\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"q\": spec.resourceGroups[0]: flavors: must not be empty"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
     "  stopPolicy: Pause\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"q\": spec.stopPolicy: unknown value \"Pause\" (want None, "
     "Hold or HoldAndDrain)"},
    {"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: "
     "{name: ok}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: -bad}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: items[1]: Namespace: metadata.name: invalid name \"-bad\" (want a "
     "DNS-1123 label)"},
    /* duplicates and caps */
    {"apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: "
     "Namespace\nmetadata: {name: a}\n",
     GPUQ_EEXIST,
     "t.yaml: document 2: Namespace \"a\": duplicate name (first declared in t.yaml document "
     "1)"},
    {RF_GPU RF_GPU, GPUQ_EEXIST,
     "t.yaml: document 2: ResourceFlavor \"gpu\": duplicate name (first declared in t.yaml "
     "document 1)"},
    /* checks across objects (policy_finish) */
    {"apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: a, name: q}\nspec: "
     "{clusterQueue: nope}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: LocalQueue \"a/q\": spec.clusterQueue: ClusterQueue \"nope\" not "
     "found"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: a}\nspec: {parentName: b}\n"
     "---\napiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: b}\nspec: {parentName: "
     "c}\n---\napiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: c}\nspec: "
     "{parentName: a}\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Cohort \"a\": spec.parentName: \"b\" makes a cycle (a -> b -> c -> a)"},
    {"apiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: a}\nspec:\n"
     "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
     "    - name: missing\n      resources: [{name: cpu, nominalQuota: 1}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: Cohort \"a\": spec.resourceGroups[0].flavors[0].name: "
     "ResourceFlavor \"missing\" not found"},
    {CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
	     "    - name: missing\n      resources: [{name: cpu, nominalQuota: 1}]\n",
     GPUQ_EINVAL,
     "t.yaml: document 1: ClusterQueue \"team-a\": spec.resourceGroups[0].flavors[0].name: "
     "ResourceFlavor \"missing\" not found"},
    {"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\n"
     "globalDefault: true\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
     "metadata: {name: b}\nvalue: 2\nglobalDefault: true\n",
     GPUQ_EINVAL,
     "t.yaml: document 2: PriorityClass \"b\": globalDefault: true, but PriorityClass \"a\" is "
     "already the global default"},
};

static void bad_manifests(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		policy_t *p;
		gpuq_diag_t d;
		int rc = load_str(BAD[i].text, NULL, &p, &d);

		if (rc != BAD[i].rc || strcmp(d.msg, BAD[i].msg))
			print_error("case %zu: rc %d msg \"%s\"\n", i, rc, d.msg);
		assert_int_equal(rc, BAD[i].rc);
		assert_string_equal(d.msg, BAD[i].msg);
		assert_null(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bad_manifests),
	};

	return cmocka_run_group_tests_name("policy_refusals", tests, NULL, NULL);
}

/* unit/workload_fixtures.h: what the workload module's test programs
 * share: the object tests' policy (OBJ_POLICY, obj_policy), objects written
 * with ' for " (squote, obj_decode), a request by name (obj_request).
 * Include after cmocka.h. */
#ifndef GPUQ_UNIT_WORKLOAD_FIXTURES_H
#define GPUQ_UNIT_WORKLOAD_FIXTURES_H

#include <stdlib.h>
#include <string.h>

#include "workload/workload.h"

/* The policy of the object tests: team-a managed, with LimitRange Container
 * defaults, two PriorityClasses (low is the global default), a claim
 * template of two GPUs and two RuntimeClasses (kata adds 250m cpu and 128Mi
 * to each Pod, plain nothing). */
static const char OBJ_POLICY[] =
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {t: a}}\n---\n"
    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n---\n"
    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
    "spec:\n  namespaceSelector: {matchLabels: {t: a}}\n  resourceGroups:\n"
    "  - coveredResources: [cpu, memory, nvidia.com/gpu]\n    flavors:\n    - name: h100\n"
    "      resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: 1Ti},\n"
    "                  {name: nvidia.com/gpu, nominalQuota: 16}]\n---\n"
    "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
    "metadata: {namespace: team-a, name: default}\nspec: {clusterQueue: cq}\n---\n"
    "apiVersion: v1\nkind: LimitRange\nmetadata: {namespace: team-a, name: lr}\n"
    "spec:\n  limits:\n  - type: Container\n    default: {cpu: '1', memory: 2Gi}\n"
    "    defaultRequest: {cpu: 500m, memory: 1Gi}\n---\n"
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
    "value: 1000\n---\n"
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\n"
    "value: 10\nglobalDefault: true\n---\n"
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
    "metadata: {namespace: team-a, name: two-gpus}\n"
    "spec: {spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, "
    "count: 2}}]}}}\n---\n"
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\n"
    "overhead: {podFixed: {cpu: 250m, memory: 128Mi}}\n---\n"
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: plain}\nhandler: runc\n";

static inline policy_t *obj_policy(void)
{
	policy_t *p = NULL;
	gpuq_diag_t d = {""};

	assert_int_equal(policy_create(NULL, &p), GPUQ_OK);
	if (policy_add_manifest(p, "obj.yaml", OBJ_POLICY, sizeof(OBJ_POLICY) - 1, &d) ||
	    policy_finish(p, &d))
		fail_msg("object test policy: %s", d.msg);
	return p;
}

/* JSON written with ' for " (the tests' objects are easier to read). */
static inline char *squote(const char *in)
{
	char *out = strdup(in);

	assert_non_null(out);
	for (char *c = out; *c; c++)
		if (*c == '\'')
			*c = '"';
	return out;
}

/* Decode json[0..len) and resolve it against p; returns the code (*o NULL
 * on error). */
static inline int dec(const policy_t *p, const char *json, size_t len, workload_t **o,
		      gpuq_diag_t *d)
{
	int rc = workload_decode_json(json, len, NULL, o, d);

	if (!rc && (rc = workload_resolve(*o, p, d))) {
		workload_destroy(*o);
		*o = NULL;
	}
	return rc;
}

/* Decode the single-quoted object text; returns the code. */
static inline int obj_decode(const policy_t *p, const char *text, workload_t **o, gpuq_diag_t *d)
{
	char *json = squote(text);
	int rc;

	memset(d, 0, sizeof(*d));
	rc = dec(p, json, strlen(json), o, d);
	free(json);
	return rc;
}

static inline const workload_request_t *obj_request(const workload_t *o, const char *name)
{
	const workload_podset_t *ps = &o->podsets[0];

	for (size_t i = 0; i < ps->n_requests; i++)
		if (!strcmp(ps->requests[i].name, name))
			return &ps->requests[i];
	return NULL;
}

/* Per-pod amount of a resource, -1 when not requested. */
static inline int64_t obj_amount(const workload_t *o, const char *name)
{
	const workload_request_t *r = obj_request(o, name);

	return r ? r->amount : -1;
}

#define OBJ_META(kind_api, name, extra)                                                            \
	"{" kind_api ",'metadata':{'name':'" name "','namespace':'team-a','uid':'uid-" name        \
	"','resourceVersion':'42','creationTimestamp':'2024-05-01T12:00:00Z'" extra "}"
#define JOB_API "'apiVersion':'batch/v1','kind':'Job'"
#define POD_API "'apiVersion':'v1','kind':'Pod'"
/* 2024-05-01T12:00:00Z in ms since the epoch */
#define MAY_1_NOON 1714564800000LL

#endif

/* Fuzz target: webhook_review_handle on arbitrary bytes, as /mutate and as
 * /validate, against a small fixed policy (one managed namespace with a
 * LocalQueue, a LimitRange, a ResourceQuota and a GPU claim template). Checks
 * what must hold for every input: the call succeeds, the reply is 200 with a
 * well-formed AdmissionReview (and a decodable JSON Patch array when there is
 * one) or 400 with a sentence, and every warning is under 120 bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "webhook/webhook.h"

static const char POLICY[] =
    "apiVersion: v1\n"
    "kind: Namespace\n"
    "metadata: {name: team-a, labels: {gpuq.dev/tenant: team-a}}\n"
    "---\n"
    "apiVersion: kueue.x-k8s.io/v1beta1\n"
    "kind: ResourceFlavor\n"
    "metadata: {name: h100}\n"
    "---\n"
    "apiVersion: kueue.x-k8s.io/v1beta1\n"
    "kind: ClusterQueue\n"
    "metadata: {name: cq-a}\n"
    "spec:\n"
    "  namespaceSelector: {matchLabels: {gpuq.dev/tenant: team-a}}\n"
    "  resourceGroups:\n"
    "  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
    "    flavors:\n"
    "    - name: h100\n"
    "      resources:\n"
    "      - {name: cpu, nominalQuota: 64}\n"
    "      - {name: memory, nominalQuota: 512Gi}\n"
    "      - {name: nvidia.com/gpu, nominalQuota: 16}\n"
    "---\n"
    "apiVersion: kueue.x-k8s.io/v1beta1\n"
    "kind: LocalQueue\n"
    "metadata: {namespace: team-a, name: default}\n"
    "spec: {clusterQueue: cq-a}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: LimitRange\n"
    "metadata: {namespace: team-a, name: limits}\n"
    "spec:\n"
    "  limits:\n"
    "  - type: Container\n"
    "    default: {cpu: '1', memory: 2Gi}\n"
    "    defaultRequest: {cpu: 500m, memory: 1Gi}\n"
    "    maxLimitRequestRatio: {cpu: '4'}\n"
    "  - type: Pod\n"
    "    min: {memory: 64Mi}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ResourceQuota\n"
    "metadata: {namespace: team-a, name: quota}\n"
    "spec: {hard: {requests.nvidia.com/gpu: '32', requests.cpu: '100'}}\n"
    "---\n"
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaimTemplate\n"
    "metadata: {namespace: team-a, name: two-gpus}\n"
    "spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, "
    "count: 2}}]}}}\n";

static policy_t *policy_get(void)
{
	static policy_t *p;
	gpuq_diag_t diag = {""};

	if (p)
		return p;
	if (policy_create(NULL, &p) ||
	    policy_add_manifest(p, "fuzz-policy.yaml", POLICY, sizeof(POLICY) - 1, &diag) ||
	    policy_finish(p, &diag)) {
		fprintf(stderr, "fuzz_admission: policy: %s\n", diag.msg);
		abort();
	}
	return p;
}

/* The patch must be base64 of a JSON array of operations. */
static void check_patch(const char *b64)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(b64), o = 0;
	char *out = malloc(n / 4 * 3 + 1);
	unsigned v = 0;
	int bits = 0;
	json_t *arr;

	if (!out || n % 4)
		abort();
	for (size_t i = 0; i < n && b64[i] != '='; i++) {
		const char *c = strchr(tab, b64[i]);

		if (!c)
			abort();
		v = (v << 6) | (unsigned)(c - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((v >> bits) & 0xff);
		}
	}
	arr = json_loadb(out, o, 0, NULL);
	if (!json_is_array(arr) || !json_array_size(arr))
		abort();
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (!json_is_string(json_object_get(json_array_get(arr, i), "path")))
			abort();
	json_decref(arr);
	free(out);
}

static void check_reply(const webhook_reply_t *r)
{
	json_t *root, *resp, *warnings;
	const char *patch;

	if (!r->body || strlen(r->body) != r->len || !r->kind || !r->decision)
		abort();
	if (r->http_status == 400)
		return;
	if (r->http_status != 200)
		abort();
	root = json_loadb(r->body, r->len, 0, NULL);
	resp = json_object_get(root, "response");
	if (!json_is_string(json_object_get(resp, "uid")) ||
	    !json_is_boolean(json_object_get(resp, "allowed")))
		abort();
	warnings = json_object_get(resp, "warnings");
	for (size_t i = 0; i < json_array_size(warnings); i++)
		if (strlen(json_string_value(json_array_get(warnings, i))) >= 120)
			abort();
	patch = json_string_value(json_object_get(resp, "patch"));
	if (patch)
		check_patch(patch);
	json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	policy_t *p = policy_get();

	for (int ep = 0; ep < 2; ep++) {
		webhook_reply_t r;

		if (webhook_review_handle(ep ? WEBHOOK_VALIDATE : WEBHOOK_MUTATE, p, NULL,
					  (const char *)data, size, &r))
			continue; /* out of memory: nothing to check */
		check_reply(&r);
		webhook_reply_deinit(&r);
	}
	return 0;
}

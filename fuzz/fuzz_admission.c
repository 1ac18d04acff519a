/* Fuzz target: webhook_review_handle on arbitrary bytes, as /mutate and as
 * /validate, against a small fixed policy (one managed namespace with a
 * LocalQueue, a LimitRange, a ResourceQuota, a PriorityClass and a GPU claim
 * template), and once without a policy. Checks what must hold for every
 * input: the call succeeds, the reply is 200 with a well-formed
 * AdmissionReview (and a decodable JSON Patch array when there is one) or
 * 400 with a sentence (or, without a policy, 503 with a sentence), and every
 * warning is under 120 bytes. Also workload_decode and workload_resolve, on
 * the bytes and on the review's object made into a LIST item: they succeed
 * with a complete workload or refuse with a diagnostic. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "webhook/webhook.h"
#include "workload/workload.h"

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
    "count: 2}}]}}}\n"
    "---\n"
    "apiVersion: scheduling.k8s.io/v1\n"
    "kind: PriorityClass\n"
    "metadata: {name: high}\n"
    "value: 1000\n"
    "globalDefault: true\n";

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

static void check_reply(const webhook_reply_t *r, bool have_policy)
{
	json_t *root, *resp, *warnings;
	const char *patch;

	if (!r->body || strlen(r->body) != r->len || !r->kind || !r->decision)
		abort();
	if (r->http_status == 503 &&
	    (have_policy || strcmp(r->kind, "other") == 0 || !strstr(r->body, "no policy yet")))
		abort(); /* only a Pod or Job without a policy */
	if (r->http_status == 400 || r->http_status == 503)
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

static void check_object(const policy_t *p, const char *json, size_t len)
{
	workload_t *o = NULL;
	gpuq_diag_t diag = {""};
	int rc = workload_decode_json(json, len, NULL, &o, &diag);

	if (!rc)
		rc = workload_resolve(o, p, &diag);
	if (rc == GPUQ_ENOMEM) {
		workload_destroy(o);
		return;
	}
	if (rc) {
		if (rc != GPUQ_EINVAL || !diag.msg[0])
			abort();
		workload_destroy(o);
		return;
	}
	if (!o->name || !*o->name || !o->namespace_ || !o->uid || !o->resource_version ||
	    o->kind == WORKLOAD_KIND_OTHER || o->pods < 0 || o->n_podsets < 1 ||
	    o->n_podsets > WORKLOAD_PODSETS_MAX || strlen(o->name) > WORKLOAD_STR_MAX)
		abort();
	for (size_t k = 0; k < o->n_podsets; k++) {
		const workload_podset_t *ps = &o->podsets[k];

		if (ps->n_requests > QUOTA_RESLIST_MAX ||
		    ps->n_node_selector > WORKLOAD_SELECTOR_MAX ||
		    ps->n_tolerations > WORKLOAD_TOLERATIONS_MAX || ps->count < 0)
			abort();
		for (size_t i = 0; i < ps->n_requests; i++)
			if (ps->requests[i].amount < 0)
				abort();
	}
	workload_destroy(o);
}

/* The review's request.object as a LIST item: namespace, uid and creation
 * time added, as the apiserver's would carry. */
static void check_review_object(const policy_t *p, const uint8_t *data, size_t size)
{
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	json_t *req = json_object_get(root, "request");
	json_t *obj = json_object_get(req, "object"), *meta = json_object_get(obj, "metadata");
	char *text;

	if (json_is_object(meta)) {
		json_t *ns = json_object_get(req, "namespace");

		json_object_set_new(meta, "namespace",
				    json_is_string(ns) ? json_incref(ns) : json_string("n"));
		json_object_set_new(meta, "uid", json_string("fuzz-uid"));
		json_object_set_new(meta, "creationTimestamp", json_string("2024-05-01T12:00:00Z"));
		text = json_dumps(obj, JSON_COMPACT);
		if (text)
			check_object(p, text, strlen(text));
		free(text);
	}
	json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	policy_t *p = policy_get();

	for (int ep = 0; ep < 3; ep++) {
		webhook_reply_t r;

		if (webhook_review_handle(ep == 1 ? WEBHOOK_VALIDATE : WEBHOOK_MUTATE,
					  ep < 2 ? p : NULL, NULL, (const char *)data, size, &r))
			continue; /* out of memory: nothing to check */
		check_reply(&r, ep < 2);
		webhook_reply_deinit(&r);
	}
	check_object(p, (const char *)data, size);
	check_review_object(p, data, size);
	return 0;
}

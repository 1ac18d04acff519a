/* Unit tests of gpuq's admission decisions (webhook/admit.c, workload.c,
 * patch.c, mutate.c, validate.c): GPU detection, the review decoder and its 400
 * answers, configuration, every golden case in unit/golden/cases run in
 * process against unit/golden/policy, and idempotency: every patch gpuq
 * returns, applied and mutated again, yields no further patch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "webhook/admit_internal.h"
#include "webhook/webhook.h"

#include "unit/golden/golden_check.h"

/* Where the golden policy and cases live (tests run from the repo root). */
#define GOLDEN_DIR "unit/golden"

static policy_t *g_policy;
static golden_case_t g_cases[GOLDEN_CASES_MAX];
static size_t g_n_cases;

/* ---- helpers ---- */

static void run(webhook_endpoint_t ep, const webhook_config_t *cfg, const char *body,
		webhook_reply_t *out)
{
	assert_int_equal(
	    webhook_review_handle(ep, g_policy, cfg, body, body ? strlen(body) : 0, out), GPUQ_OK);
	assert_non_null(out->body);
	assert_int_equal(strlen(out->body), out->len);
}

/* The reply's "response" object; *root receives the document to decref. */
static json_t *response_of(const webhook_reply_t *r, json_t **root)
{
	*root = json_loadb(r->body, r->len, 0, NULL);
	assert_non_null(*root);
	return json_object_get(*root, "response");
}

/* A review of kind (Pod or Job) in ns by user, with obj (JSON text) and old
 * (JSON text or "null"). */
static char *review(const char *kind, const char *op, const char *ns, const char *user,
		    const char *obj, const char *old)
{
	const char *group = strcmp(kind, "Job") ? "" : "batch";
	size_t cap = strlen(obj) + strlen(old) + 1024;
	char *s = malloc(cap);

	assert_non_null(s);
	snprintf(s, cap,
		 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		 "\"request\":{\"uid\":\"u-1\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\","
		 "\"kind\":\"%s\"},\"namespace\":\"%s\",\"operation\":\"%s\","
		 "\"userInfo\":{\"username\":\"%s\"},\"object\":%s,\"oldObject\":%s}}",
		 group, kind, ns, op, user, obj, old);
	return s;
}

#define GPU_POD(res, qty)                                                                          \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":"         \
	"{\"gpuq.dev/queue-name\":\"default\"}},\"spec\":{\"containers\":[{\"name\":\"c\","        \
	"\"resources\":{\"limits\":{\"" res "\":" qty "}}}]}}"

#define JOB(suspend, annotations)                                                                  \
	"{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","              \
	"\"labels\":{\"gpuq.dev/queue-name\":\"default\"},\"annotations\":{" annotations "}},"     \
	"\"spec\":{\"suspend\":" suspend ",\"template\":{\"metadata\":{\"labels\":{}},\"spec\":"   \
	"{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\","    \
	"\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]}}}}"

/* ---- text builders ---- */

static void test_gpu_detection(void **state)
{
	static const char *const extra[] = {"amd.com/gpu"};
	const workload_config_t cfg = {extra, 1};
	static const struct {
		const char *name;
		bool plain, with_cfg;
	} t[] = {
	    {"nvidia.com/gpu", true, true},	    {"nvidia.com/gpu.shared", true, true},
	    {"nvidia.com/mig-1g.10gb", true, true}, {"nvidia.com/mig-7g.80gb+me", true, true},
	    {"nvidia.com/gpux", false, false},	    {"nvidia.com/mig", false, false},
	    {"amd.com/gpu", false, true},	    {"cpu", false, false},
	    {"example.com/fpga", false, false},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		assert_int_equal(workload_gpu_resource(NULL, t[i].name), t[i].plain);
		assert_int_equal(workload_gpu_resource(&cfg, t[i].name), t[i].with_cfg);
	}
}

/* ---- the body parser ---- */

static void test_json_parser_values(void **state)
{
	static const struct {
		const char *doc, *want; /* {"k": <value>} and the decoded string of k */
	} strs[] = {
	    {"{\"k\":\"plain\"}", "plain"},
	    {"{\"k\":\"a\\\"b\\\\c\\/d\"}", "a\"b\\c/d"},
	    {"{\"k\":\"\\b\\f\\n\\r\\t\"}", "\b\f\n\r\t"},
	    {"{\"k\":\"caf\\u00e9 \\u20ac\"}", "caf\xc3\xa9 \xe2\x82\xac"},
	    {"{\"k\":\"\\ud83d\\ude00\"}", "\xf0\x9f\x98\x80"},
	    {"{\"k\":\"caf\xc3\xa9\"}", "caf\xc3\xa9"},
	    {" \t\r\n{ \"k\" : \"ws\" } \n", "ws"},
	    {"{\"k\":\"first\",\"k\":\"second\"}", "first"},
	};
	char err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++) {
		jv_doc_t d;

		assert_int_equal(
		    jv_doc_parse(&d, strs[i].doc, strlen(strs[i].doc), err, sizeof(err)), GPUQ_OK);
		assert_string_equal(jv_str(jv_get(d.root, "k")), strs[i].want);
		jv_doc_free(&d);
	}
}

static void test_json_parser_shapes(void **state)
{
	static const char doc[] =
	    "{\"a\":[1,-2,3.5,1e3,true,false,null,[],{}],\"n\":"
	    "9223372036854775807,\"big\":9223372036854775808,\"o\":{\"x\":{}}}";
	jv_doc_t d;
	const jv_t *a;
	char err[256];
	int64_t v;
	(void)state;

	assert_int_equal(jv_doc_parse(&d, doc, sizeof(doc) - 1, err, sizeof(err)), GPUQ_OK);
	assert_int_equal(d.root->n, 4);
	a = jv_get(d.root, "a");
	assert_int_equal(jv_count(a), 9);
	assert_true(jv_int(jv_at(a, 0), &v) && v == 1);
	assert_true(jv_int(jv_at(a, 1), &v) && v == -2);
	assert_false(jv_int(jv_at(a, 2), &v)); /* fraction */
	assert_false(jv_int(jv_at(a, 3), &v)); /* exponent */
	assert_string_equal(jv_at(a, 3)->s, "1e3");
	assert_true(jv_is(jv_at(a, 4), JV_TRUE));
	assert_true(jv_is(jv_at(a, 5), JV_FALSE));
	assert_true(jv_is(jv_at(a, 6), JV_NULL));
	assert_int_equal(jv_count(jv_at(a, 7)), 0);
	assert_true(jv_is(jv_at(a, 8), JV_OBJECT));
	assert_null(jv_at(a, 9));
	assert_true(jv_int(jv_get(d.root, "n"), &v) && v == INT64_MAX);
	assert_false(jv_int(jv_get(d.root, "big"), &v));
	assert_non_null(jv_get(jv_get(d.root, "o"), "x"));
	assert_null(jv_get(d.root, "missing"));
	assert_null(jv_get(a, "k")); /* not an object */
	assert_null(jv_str(a));
	jv_doc_free(&d);
	/* depth: 64 nested arrays parse, 65 are refused by the scan */
	for (int depth = 64; depth <= 65; depth++) {
		char buf[256];
		int n = 0;

		for (int i = 0; i < depth; i++)
			buf[n++] = '[';
		for (int i = 0; i < depth; i++)
			buf[n++] = ']';
		assert_int_equal(jv_doc_parse(&d, buf, (size_t)n, err, sizeof(err)),
				 depth == 64 ? GPUQ_OK : GPUQ_ELIMIT);
		jv_doc_free(&d);
	}
}

/* ---- the review decoder ---- */

static void test_bad_inputs(void **state)
{
	static const struct {
		const char *body, *want;
	} t[] = {
	    {"", "not JSON"},
	    {"{", "not JSON"},
	    {"[]", "apiVersion is \"\""},
	    {"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}",
	     "apiVersion is \"admission.k8s.io/v1beta1\""},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Review\"}", "kind is \"Review\""},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
	     "request is missing"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":[]}",
	     "request is missing or not an object"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
	     "request.uid is missing"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
	     "\"request\":{\"uid\":7}}",
	     "request.uid is missing"},
	    /* duplicate keys: the first one counts (documented) */
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"apiVersion\":\"x\"}", "kind is \"\""},
	    {"{\"a\":1,}", "not JSON: expected a string key at byte 7"},
	    {"[1,]", "not JSON: unexpected character at byte 3"},
	    {"{\"a\" 1}", "not JSON: expected ':'"},
	    {"\"\\u0000\"", "\\u0000 in string"},
	    {"\"\\ud800\"", "lone high surrogate"},
	    {"\"\xc3\x28\"", "invalid UTF-8"},
	    {"\"\x01\"", "control character"},
	    {"01", "data after the JSON value"},
	    {"{} {}", "data after the JSON value"},
	    {"nul", "unexpected character"},
	    {"-", "bad number"},
	    {"1.", "bad number"},
	    {"\"abc", "unterminated string"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		webhook_reply_t r;

		run(WEBHOOK_VALIDATE, NULL, t[i].body, &r);
		assert_int_equal(r.http_status, 400);
		assert_string_equal(r.decision, "invalid");
		assert_string_equal(r.content_type, "text/plain; charset=utf-8");
		if (!strstr(r.body, t[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, r.body, t[i].want);
		webhook_reply_deinit(&r);
	}
}

static void test_null_and_huge_bodies(void **state)
{
	webhook_reply_t r;
	size_t big = WEBHOOK_REVIEW_MAX + 1;
	char *body = malloc(big);
	(void)state;

	assert_int_equal(webhook_review_handle(WEBHOOK_MUTATE, g_policy, NULL, NULL, 0, &r),
			 GPUQ_OK);
	assert_int_equal(r.http_status, 400);
	webhook_reply_deinit(&r);
	assert_non_null(body);
	memset(body, ' ', big);
	assert_int_equal(webhook_review_handle(WEBHOOK_MUTATE, g_policy, NULL, body, big, &r),
			 GPUQ_OK);
	assert_int_equal(r.http_status, 400);
	assert_non_null(strstr(r.body, "exceeds"));
	webhook_reply_deinit(&r);
	free(body);
	/* a flat array of more values than JV_VALUES_MAX */
	body = malloc(2 * JV_VALUES_MAX + 8);
	assert_non_null(body);
	body[0] = '[';
	for (size_t i = 0; i < JV_VALUES_MAX; i++)
		memcpy(body + 1 + 2 * i, "1,", 2);
	memcpy(body + 1 + 2 * JV_VALUES_MAX, "1]", 3);
	run(WEBHOOK_VALIDATE, NULL, body, &r);
	assert_int_equal(r.http_status, 400);
	assert_non_null(strstr(r.body, "more than 262144 JSON values"));
	webhook_reply_deinit(&r);
	free(body);
	webhook_reply_deinit(NULL);
	webhook_reply_deinit(&r); /* twice: a zeroed reply is fine */
}

/* Nesting at the cap passes the scan; one more level is refused before
 * jansson sees it; brackets inside strings do not count. */
static void test_depth_scan(void **state)
{
	char body[4096];
	webhook_reply_t r;
	size_t n;
	(void)state;

	for (int extra = 0; extra < 2; extra++) {
		/* envelope {"request":{ is 2 levels, then arrays up to the cap */
		int pad = WEBHOOK_JSON_DEPTH_MAX - 2 + extra;

		n = (size_t)snprintf(body, sizeof(body),
				     "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
				     "\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"operation\":"
				     "\"CREATE\",\"x\":");
		for (int i = 0; i < pad; i++)
			body[n++] = '[';
		for (int i = 0; i < pad; i++)
			body[n++] = ']';
		n += (size_t)snprintf(body + n, sizeof(body) - n, ",\"s\":\"[[[[{{{{\"}}");
		run(WEBHOOK_MUTATE, NULL, body, &r);
		assert_int_equal(r.http_status, extra ? 400 : 200);
		if (extra)
			assert_non_null(strstr(r.body, "nested deeper than"));
		webhook_reply_deinit(&r);
	}
}

static void test_reply_envelope(void **state)
{
	char *body =
	    review("Pod", "CREATE", "team-b", "alice", GPU_POD("nvidia.com/gpu", "\"1\""), "null");
	webhook_reply_t r;
	json_t *root, *resp;
	(void)state;

	run(WEBHOOK_MUTATE, NULL, body, &r);
	assert_int_equal(r.http_status, 200);
	assert_string_equal(r.kind, "Pod");
	assert_string_equal(r.decision, "patched");
	assert_string_equal(r.content_type, "application/json");
	resp = response_of(&r, &root);
	assert_string_equal(json_string_value(json_object_get(root, "apiVersion")),
			    "admission.k8s.io/v1");
	assert_string_equal(json_string_value(json_object_get(root, "kind")), "AdmissionReview");
	assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u-1");
	assert_true(json_is_true(json_object_get(resp, "allowed")));
	assert_string_equal(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
	json_decref(root);
	webhook_reply_deinit(&r);
	/* validate never patches */
	run(WEBHOOK_VALIDATE, NULL, body, &r);
	resp = response_of(&r, &root);
	assert_null(json_object_get(resp, "patch"));
	assert_string_equal(r.decision, "denied"); /* no gate: the mutating webhook did not run */
	json_decref(root);
	webhook_reply_deinit(&r);
	free(body);
}

/* Kind taken from the object when request.kind is absent; other kinds pass. */
static void test_kind_decoding(void **state)
{
	static const struct {
		const char *body, *kind, *decision;
	} t[] = {
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	     "{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"object\":"
	     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},"
	     "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
	     "{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}}}",
	     "Job", "patched"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	     "{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"kind\":"
	     "{\"group\":\"batch\",\"version\":\"v1beta1\",\"kind\":\"Job\"},\"object\":{}}}",
	     "other", "allowed"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	     "{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"kind\":"
	     "{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},\"object\":{}}}",
	     "other", "allowed"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	     "{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"kind\":"
	     "{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"object\":\"not an object\"}}",
	     "Pod", "invalid"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	     "{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":\"UPDATE\",\"kind\":"
	     "{\"group\":\"batch\",\"version\":\"v1\",\"kind\":\"Job\"},\"object\":{}}}",
	     "Job", "invalid"},
	    {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	     "{\"uid\":\"u\",\"namespace\":\"team-a\",\"operation\":\"DELETE\",\"kind\":"
	     "{\"group\":\"batch\",\"version\":\"v1\",\"kind\":\"Job\"},\"object\":null}}",
	     "Job", "allowed"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		webhook_reply_t r;

		run(WEBHOOK_MUTATE, NULL, t[i].body, &r);
		assert_int_equal(r.http_status, 200);
		assert_string_equal(r.kind, t[i].kind);
		assert_string_equal(r.decision, t[i].decision);
		webhook_reply_deinit(&r);
	}
}

/* Quantities given as JSON numbers, and values that must be refused. */
static void test_quantity_forms(void **state)
{
	static const struct {
		const char *qty, *decision;
	} t[] = {
	    {"2", "patched"},
	    {"\"2\"", "patched"},
	    {"2.0", "patched"},
	    {"\"1.2.3\"", "invalid"},
	    {"\"1Gb\"", "invalid"},
	    {"\"\"", "invalid"},
	    {"\"-1\"", "invalid"},
	    {"true", "invalid"},
	    {"null", "invalid"},
	    {"\"1e400\"", "invalid"},
	    {"\"9223372036854775808\"", "invalid"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char obj[1024], *body;
		webhook_reply_t r;

		snprintf(obj, sizeof(obj),
			 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
			 "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
			 "{\"nvidia.com/gpu\":%s}}}]}}",
			 t[i].qty);
		body = review("Pod", "CREATE", "team-b", "alice", obj, "null");
		run(WEBHOOK_MUTATE, NULL, body, &r);
		if (strcmp(r.decision, t[i].decision))
			fail_msg("quantity %s: decision %s, want %s (%s)", t[i].qty, r.decision,
				 t[i].decision, r.body);
		if (!strcmp(t[i].decision, "invalid"))
			assert_non_null(strstr(r.body, "\"code\":400"));
		webhook_reply_deinit(&r);
		free(body);
	}
}

static void test_too_many_containers(void **state)
{
	size_t cap = 64 * 1024, n;
	char *obj = malloc(cap), *body;
	webhook_reply_t r;
	(void)state;

	assert_non_null(obj);
	n = (size_t)snprintf(obj, cap, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[");
	for (int i = 0; i <= WORKLOAD_CONTAINERS_MAX; i++)
		n += (size_t)snprintf(obj + n, cap - n, "%s{\"name\":\"c%d\"}", i ? "," : "", i);
	snprintf(obj + n, cap - n, "]}}");
	body = review("Pod", "CREATE", "team-a", "alice", obj, "null");
	run(WEBHOOK_MUTATE, NULL, body, &r);
	assert_string_equal(r.decision, "invalid");
	assert_non_null(strstr(r.body, "gpuq reviews at most"));
	webhook_reply_deinit(&r);
	free(body);
	free(obj);
}

/* ---- configuration ---- */

static void test_config_extra_gpu_resource(void **state)
{
	static const char *const extra[] = {"amd.com/gpu"};
	const webhook_config_t cfg = {extra, 1, NULL, NULL, 0, NULL, NULL, 0};
	char *body =
	    review("Pod", "CREATE", "team-b", "alice", GPU_POD("amd.com/gpu", "\"1\""), "null");
	webhook_reply_t r;
	(void)state;

	run(WEBHOOK_MUTATE, NULL, body, &r);
	assert_string_equal(r.decision, "allowed"); /* not a GPU without the flag */
	webhook_reply_deinit(&r);
	run(WEBHOOK_MUTATE, &cfg, body, &r);
	assert_string_equal(r.decision, "patched");
	webhook_reply_deinit(&r);
	free(body);
}

static void test_config_controller_user(void **state)
{
	const webhook_config_t cfg = {NULL, 0, "system:serviceaccount:ops:gpuq", NULL, 0, NULL,
				      NULL, 0};
	char *mine = review("Job", "UPDATE", "team-a", "system:serviceaccount:ops:gpuq",
			    JOB("false", ""), JOB("true", ""));
	char *dflt = review("Job", "UPDATE", "team-a", WEBHOOK_CONTROLLER_USER_DEFAULT,
			    JOB("false", ""), JOB("true", ""));
	webhook_reply_t r;
	(void)state;

	run(WEBHOOK_VALIDATE, &cfg, mine, &r);
	assert_string_equal(r.decision, "allowed");
	webhook_reply_deinit(&r);
	run(WEBHOOK_VALIDATE, &cfg, dflt, &r);
	assert_string_equal(r.decision, "denied");
	webhook_reply_deinit(&r);
	run(WEBHOOK_VALIDATE, NULL, dflt, &r); /* NULL cfg: the default controller user */
	assert_string_equal(r.decision, "allowed");
	webhook_reply_deinit(&r);
	free(mine);
	free(dflt);
}

/* ---- failing closed, malformed reviews ---- */

/* A review body with subResource sub ("" for none); obj is JSON text. */
static char *review_sub(const char *kind, const char *op, const char *sub, const char *obj)
{
	const char *group = strcmp(kind, "Job") ? "" : "batch";
	size_t cap = strlen(obj) + 1024;
	char *s = malloc(cap);

	assert_non_null(s);
	snprintf(s, cap,
		 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		 "\"request\":{\"uid\":\"u-2\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\","
		 "\"kind\":\"%s\"},\"namespace\":\"team-a\",%s%s%s\"subResource\":\"%s\","
		 "\"userInfo\":{\"username\":\"alice\"},\"object\":%s,\"oldObject\":%s}}",
		 group, kind, *op ? "\"operation\":\"" : "", op, *op ? "\"," : "", sub, obj, obj);
	return s;
}

/* Without a policy gpuq decides nothing about Pods and Jobs: 503, so the
 * apiserver's failurePolicy acts. Reviews whose answer never depends on a
 * policy are answered as always. */
static void test_no_policy_fails_closed(void **state)
{
	static const struct {
		webhook_endpoint_t ep;
		const char *kind, *op, *sub, *obj;
		int status;	      /* HTTP status */
		const char *decision; /* reply decision */
	} t[] = {
	    {WEBHOOK_VALIDATE, "Pod", "CREATE", "", GPU_POD("nvidia.com/gpu", "\"1\""), 503,
	     "unavailable"},
	    {WEBHOOK_MUTATE, "Pod", "CREATE", "", GPU_POD("nvidia.com/gpu", "\"1\""), 503,
	     "unavailable"},
	    {WEBHOOK_MUTATE, "Job", "CREATE", "", JOB("false", ""), 503, "unavailable"},
	    {WEBHOOK_VALIDATE, "Job", "UPDATE", "", JOB("false", ""), 503, "unavailable"},
	    /* no GPU asked: without the policy's claim templates that is unknowable */
	    {WEBHOOK_VALIDATE, "Pod", "CREATE", "", "{\"spec\":{}}", 503, "unavailable"},
	    {WEBHOOK_VALIDATE, "Pod", "DELETE", "", GPU_POD("nvidia.com/gpu", "\"1\""), 200,
	     "allowed"},
	    {WEBHOOK_VALIDATE, "Pod", "UPDATE", "status", GPU_POD("nvidia.com/gpu", "\"1\""), 200,
	     "allowed"},
	    {WEBHOOK_MUTATE, "ConfigMap", "CREATE", "", "{}", 200, "allowed"},
	    /* a review of nothing is refused with or without a policy */
	    {WEBHOOK_VALIDATE, "Pod", "", "", GPU_POD("nvidia.com/gpu", "\"1\""), 200, "invalid"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *body = review_sub(t[i].kind, t[i].op, t[i].sub, t[i].obj);
		webhook_reply_t r;

		assert_int_equal(webhook_review_handle(t[i].ep, NULL, NULL, body, strlen(body), &r),
				 GPUQ_OK);
		if (r.http_status != t[i].status || strcmp(r.decision, t[i].decision))
			fail_msg("case %zu: %d %s, want %d %s: %s", i, r.http_status, r.decision,
				 t[i].status, t[i].decision, r.body);
		if (r.http_status == 503) {
			assert_string_equal(r.content_type, "text/plain; charset=utf-8");
			assert_non_null(strstr(r.body, "no policy yet (not synced with the "
						       "apiserver)"));
			assert_int_equal(r.body[r.len - 1], '\n');
		}
		webhook_reply_deinit(&r);
		free(body);
	}
	/* a body that is no review stays a 400 */
	{
		webhook_reply_t r;

		assert_int_equal(webhook_review_handle(WEBHOOK_MUTATE, NULL, NULL, "[1]", 3, &r),
				 GPUQ_OK);
		assert_int_equal(r.http_status, 400);
		webhook_reply_deinit(&r);
	}
}

/* A LocalQueue the policy left out (its ClusterQueue deleted: issue 32)
 * refuses a GPU Job naming it, and says which queue and why; a queue that
 * was never there keeps its own words, and the good queue admits. */
static void test_leftout_queue_refused(void **state)
{
	static const char text[] =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: gpu}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\nspec:\n"
	    "  namespaceSelector: {}\n  resourceGroups:\n"
	    "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n    flavors:\n"
	    "    - name: gpu\n      resources: [{name: nvidia.com/gpu, nominalQuota: 8}, "
	    "{name: cpu, nominalQuota: 8}, {name: memory, nominalQuota: 64Gi}]\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: t, name: good}\n"
	    "spec: {clusterQueue: a}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: t, name: "
	    "default}\nspec: {clusterQueue: gone}\n";
	const policy_opts_t opts = {.leave_out_broken = true};
	static const struct {
		const char *queue; /* the Job's queue label */
		const char *want;  /* in the reply, or NULL: allowed */
	} t[] = {
	    {"default",
	     "Job \\\"j\\\": LocalQueue t/default is inactive (ClusterQueueDoesNotExist): "
	     "LocalQueue \\\"t/default\\\": spec.clusterQueue: ClusterQueue "
	     "\\\"gone\\\" not found; use another LocalQueue, or ask a cluster admin "
	     "to fix it"},
	    {"never", "namespace t has no LocalQueue \\\"never\\\""},
	    {"good", NULL},
	};
	policy_t *p = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(policy_create(&opts, &p), GPUQ_OK);
	assert_int_equal(policy_add_manifest(p, "t.yaml", text, strlen(text), &d), GPUQ_OK);
	assert_int_equal(policy_finish(p, &d), GPUQ_OK);
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char obj[2048], *body;
		webhook_reply_t r;

		snprintf(obj, sizeof(obj),
			 "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
			 "\"j\",\"labels\":{\"gpuq.dev/queue-name\":\"%s\"}},\"spec\":{"
			 "\"suspend\":true,\"template\":{\"spec\":{\"containers\":[{\"name\":"
			 "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}",
			 t[i].queue);
		body = review("Job", "CREATE", "t", "alice", obj, "null");
		assert_int_equal(
		    webhook_review_handle(WEBHOOK_VALIDATE, p, NULL, body, strlen(body), &r),
		    GPUQ_OK);
		if (t[i].want ? !strstr(r.body, t[i].want) : strcmp(r.decision, "allowed") != 0)
			fail_msg("case %zu: %s", i, r.body);
		webhook_reply_deinit(&r);
		free(body);
	}
	policy_unref(p);
}

/* A gated Pod's queue label moved is judged as a CREATE in its new queue
 * (issue 31, the Pod row of docs/kinds.md; seen in e2e/test_lifecycle.sh:
 * a 2-GPU Pod moved to a ClusterQueue of 0 GPUs was taken, where a CREATE
 * there is refused); moved where it fits, it is taken; released, refused. */
static void test_gated_pod_moved_judged_anew(void **state)
{
	static const char text[] =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: gpu}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\nspec:\n"
	    "  namespaceSelector: {}\n  resourceGroups:\n"
	    "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
	    "    - name: gpu\n      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: z}\nspec:\n"
	    "  namespaceSelector: {}\n  resourceGroups:\n"
	    "  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"
	    "    - name: gpu\n      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: t, name: "
	    "default}\n"
	    "spec: {clusterQueue: a}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: t, name: good}\n"
	    "spec: {clusterQueue: a}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: t, name: zero}\n"
	    "spec: {clusterQueue: z}\n";
#define GPOD(queue, gates)                                                                         \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"solo\",\"labels\":{"     \
	"\"gpuq.dev/queue-name\":\"" queue "\"}},\"spec\":{" gates "\"containers\":[{\"name\":"    \
	"\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}}"
#define GATED "\"schedulingGates\":[{\"name\":\"gpuq.dev/admission\"}],"
	static const struct {
		const char *obj, *old;
		const char *want; /* in the reply, or NULL: allowed */
	} t[] = {
	    {GPOD("zero", GATED), GPOD("default", GATED),
	     "Pod \\\"solo\\\" can never be admitted: it requests nvidia.com/gpu=2"},
	    {GPOD("good", GATED), GPOD("default", GATED), NULL},
	    {GPOD("nope", GATED), GPOD("default", GATED),
	     "namespace t has no LocalQueue \\\"nope\\\""},
	    {GPOD("good", ""), GPOD("default", ""),
	     "label gpuq.dev/queue-name cannot change after "
	     "admission"},
	};
#undef GPOD
#undef GATED
	policy_t *p = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(policy_create(NULL, &p), GPUQ_OK);
	assert_int_equal(policy_add_manifest(p, "t.yaml", text, strlen(text), &d), GPUQ_OK);
	assert_int_equal(policy_finish(p, &d), GPUQ_OK);
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *body = review("Pod", "UPDATE", "t", "alice", t[i].obj, t[i].old);
		webhook_reply_t r;

		assert_int_equal(
		    webhook_review_handle(WEBHOOK_VALIDATE, p, NULL, body, strlen(body), &r),
		    GPUQ_OK);
		if (t[i].want ? !strstr(r.body, t[i].want) : strcmp(r.decision, "allowed") != 0)
			fail_msg("case %zu: %s", i, r.body);
		webhook_reply_deinit(&r);
		free(body);
	}
	policy_unref(p);
}

/* A field of the wrong type is a malformed object (400 BadRequest naming
 * the field), never read as absent and waved through. */
static void test_malformed_object_types(void **state)
{
	static const struct {
		const char *kind, *op, *obj;
		const char *want; /* in the denial message */
	} t[] = {
	    {"Pod", "CREATE", "{\"metadata\":{\"name\":\"p\"},\"spec\":\"x\"}",
	     "Pod \"p\": spec: must be an object, not a string \"x\""},
	    {"Job", "CREATE", "{\"metadata\":{\"name\":\"j\"},\"spec\":7}",
	     "Job \"j\": spec: must be an object, not a number \"7\""},
	    {"Pod", "CREATE", "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":{}}}",
	     "spec.containers: must be an array, not an object"},
	    {"Pod", "CREATE", "{\"spec\":{\"initContainers\":\"c\"}}",
	     "spec.initContainers: must be an array"},
	    {"Pod", "CREATE", "{\"spec\":{\"containers\":[\"c\"]}}",
	     "spec.containers[0]: must be an object, not a string"},
	    {"Pod", "CREATE", "{\"spec\":{\"containers\":[{\"resources\":\"1\"}]}}",
	     "spec.containers[0].resources: must be an object"},
	    {"Pod", "CREATE", "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":[]}}]}}",
	     "spec.containers[0].resources.limits: must be an object, not an array"},
	    {"Pod", "CREATE", "{\"metadata\":\"m\",\"spec\":{}}",
	     "metadata: must be an object, not a string"},
	    {"Pod", "CREATE", "{\"metadata\":{\"labels\":[]},\"spec\":{}}",
	     "metadata.labels: must be an object, not an array"},
	    {"Pod", "CREATE", "{\"metadata\":{\"annotations\":1},\"spec\":{}}",
	     "metadata.annotations: must be an object"},
	    {"Pod", "CREATE", "{\"spec\":{\"resourceClaims\":{}}}",
	     "spec.resourceClaims: must be an array"},
	    {"Pod", "CREATE", "{\"spec\":{\"resourceClaims\":[1]}}",
	     "spec.resourceClaims[0]: must be an object"},
	    {"Pod", "CREATE", "{\"spec\":{\"schedulingGates\":\"g\"}}",
	     "spec.schedulingGates: must be an array"},
	    {"Pod", "CREATE", "{\"spec\":{\"overhead\":[]}}", "spec.overhead: must be an object"},
	    {"Job", "CREATE", "{\"spec\":{\"template\":\"t\"}}",
	     "spec.template: must be an object"},
	    {"Job", "CREATE", "{\"spec\":{\"template\":{\"metadata\":[]}}}",
	     "spec.template.metadata: must be an object"},
	    {"Job", "CREATE", "{\"spec\":{\"template\":{\"metadata\":{\"labels\":\"l\"}}}}",
	     "spec.template.metadata.labels: must be an object"},
	    {"Job", "CREATE", "{\"spec\":{\"template\":{\"spec\":[]}}}",
	     "spec.template.spec: must be an object, not an array"},
	    {"Job", "CREATE", "{\"spec\":{\"template\":{\"spec\":{\"containers\":{}}}}}",
	     "spec.template.spec.containers: must be an array"},
	    {"Job", "CREATE", "{\"spec\":{\"parallelism\":\"2\"}}",
	     "spec.parallelism: invalid value \"2\": must be a non-negative integer"},
	    {"Job", "CREATE", "{\"spec\":{\"parallelism\":1.5}}",
	     "spec.parallelism: invalid value \"1.5\""},
	    {"Pod", "", GPU_POD("nvidia.com/gpu", "\"1\""), "request.operation: Required value"},
	    {"Pod", "PATCH", GPU_POD("nvidia.com/gpu", "\"1\""),
	     "request.operation: invalid value \"PATCH\": must be CREATE, UPDATE, DELETE or "
	     "CONNECT"},
	    {"ConfigMap", "", "{}", "request.operation: Required value"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *body = review_sub(t[i].kind, t[i].op, "", t[i].obj);

		for (int ep = 0; ep < 2; ep++) {
			webhook_reply_t r;
			json_t *root, *resp, *st;
			const char *msg;

			run(ep ? WEBHOOK_VALIDATE : WEBHOOK_MUTATE, NULL, body, &r);
			assert_int_equal(r.http_status, 200);
			resp = response_of(&r, &root);
			st = json_object_get(resp, "status");
			msg = json_string_value(json_object_get(st, "message"));
			if (strcmp(r.decision, "invalid") ||
			    json_integer_value(json_object_get(st, "code")) != 400 || !msg ||
			    !strstr(msg, t[i].want))
				fail_msg("case %zu on %s: %s lacks \"%s\"", i,
					 ep ? "/validate" : "/mutate", r.body, t[i].want);
			json_decref(root);
			webhook_reply_deinit(&r);
		}
		free(body);
	}
}

/* ---- workload_decode agrees with the rules (the decoder itself:
 * test_workload.c) ---- */

/* One rule, one place: for every golden review of a Pod or Job, the object
 * decoder sees the GPU ask the admission rules see (the golden denials that
 * name a GPU resource are GPU workloads; objects without one are not). */
static void test_object_agrees_with_rules(void **state)
{
	size_t checked = 0;
	(void)state;

	for (size_t i = 0; i < g_n_cases; i++) {
		json_t *req = json_loadb(g_cases[i].body, g_cases[i].len, 0, NULL);
		json_t *r = json_object_get(req, "request");
		json_t *obj = json_deep_copy(json_object_get(r, "object"));
		json_t *meta = json_object_get(obj, "metadata");
		const char *ns = json_string_value(json_object_get(r, "namespace"));
		workload_view_t w;
		workload_t *o = NULL;
		gpuq_diag_t d = {""};
		jv_doc_t doc;
		char err[256], *text;
		int rc_w, rc_o;

		if (!json_is_object(obj) || !json_is_object(meta) || !ns) {
			json_decref(obj);
			json_decref(req);
			continue;
		}
		/* what a LIST adds: identity and creation time */
		json_object_set_new(meta, "namespace", json_string(ns));
		json_object_set_new(meta, "uid", json_string("u"));
		json_object_set_new(meta, "creationTimestamp", json_string("2024-05-01T12:00:00Z"));
		if (!json_is_string(json_object_get(meta, "name")))
			json_object_set_new(meta, "name", json_string("generated"));
		text = json_dumps(obj, JSON_COMPACT);
		assert_non_null(text);
		assert_int_equal(jv_doc_parse(&doc, text, strlen(text), err, sizeof(err)), GPUQ_OK);
		rc_o = workload_decode_json(text, strlen(text), NULL, &o, &d);
		if (!rc_o)
			rc_o = workload_resolve(o, g_policy, &d);
		if (!rc_o) {
			rc_w = workload_view_decode(&w, g_policy, NULL, ns, o->kind, doc.root, &d);
			if (rc_w || w.gpu != o->gpu ||
			    (o->kind == WORKLOAD_KIND_JOB && w.pods != o->pods))
				fail_msg("%s: rules see gpu %d pods %lld, object gpu %d pods %lld",
					 g_cases[i].name, w.gpu, (long long)w.pods, o->gpu,
					 (long long)o->pods);
			checked++;
			workload_view_deinit(&w);
		}
		workload_destroy(o);
		jv_doc_free(&doc);
		free(text);
		json_decref(obj);
		json_decref(req);
	}
	assert_true(checked >= 40); /* most golden cases are Pods and Jobs */
}

/* Members no review reads (admit.c's review_unread), added where a real
 * object has them: every container gets a command line, an environment
 * whose strings hold brackets, quotes and backslashes, ports, mounts,
 * probes and a security context; every pod spec volumes, pull secrets, DNS
 * and host settings; every metadata managedFields; the request what was
 * asked and its options, its user groups and extra. */
static void add_unread(json_t *j)
{
	static const char container[] =
	    "{\"command\":[\"sh\",\"-c\",\"echo '}]' \\\"[{\\\" \\\\\"],"
	    "\"args\":[\"--x={\\\"a\\\":[1]}\"],"
	    "\"env\":[{\"name\":\"A\",\"value\":\"]}\\\\\"},{\"name\":\"B\",\"valueFrom\":"
	    "{\"fieldRef\":{\"fieldPath\":\"metadata.annotations['x']\"}}}],"
	    "\"envFrom\":[{\"configMapRef\":{\"name\":\"c\"}}],"
	    "\"ports\":[{\"containerPort\":29500,\"protocol\":\"TCP\"}],"
	    "\"volumeMounts\":[{\"name\":\"d\",\"mountPath\":\"/d\"}],"
	    "\"livenessProbe\":{\"exec\":{\"command\":[\"true\"]},\"periodSeconds\":5},"
	    "\"securityContext\":{\"privileged\":false}}";
	static const char pod[] =
	    "{\"volumes\":[{\"name\":\"d\",\"emptyDir\":{\"medium\":\"Memory\"}}],"
	    "\"imagePullSecrets\":[{\"name\":\"r\"}],\"dnsConfig\":{\"options\":[{\"name\":"
	    "\"ndots\",\"value\":\"2\"}]},\"hostAliases\":[{\"ip\":\"10.0.0.1\",\"hostnames\":"
	    "[\"a\"]}],\"readinessGates\":[{\"conditionType\":\"x\"}],\"securityContext\":"
	    "{\"runAsUser\":1000}}";
	static const char request[] =
	    "{\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"x\"},"
	    "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"X\"},"
	    "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"x\"},"
	    "\"options\":{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"CreateOptions\"}}";
	static const char user[] =
	    "{\"groups\":[\"system:authenticated\"],\"extra\":{\"k\":[\"v\"]}}";
	static const char meta[] =
	    "{\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":"
	    "{\"k:{\\\"name\\\":\\\"x\\\"}\":{\".\":{}}}}}]}";
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_array(j)) {
		for (i = 0; i < json_array_size(j); i++)
			add_unread(json_array_get(j, i));
		return;
	}
	if (!json_is_object(j))
		return;
	for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it)) {
		key = json_object_iter_key(it);
		v = json_object_iter_value(it);
		add_unread(v);
		if ((!strcmp(key, "containers") || !strcmp(key, "initContainers")) &&
		    json_is_array(v)) {
			json_t *c = json_loads(container, 0, NULL);

			assert_non_null(c);
			for (i = 0; i < json_array_size(v); i++)
				if (json_is_object(json_array_get(v, i)))
					json_object_update_missing(json_array_get(v, i), c);
			json_decref(c);
		}
	}
	if (json_is_array(json_object_get(j, "containers"))) {
		json_t *x = json_loads(pod, 0, NULL);

		json_object_update_missing(j, x);
		json_decref(x);
	}
	if (json_is_object(json_object_get(j, "metadata"))) {
		json_t *x = json_loads(meta, 0, NULL);

		json_object_update_missing(json_object_get(j, "metadata"), x);
		json_decref(x);
	}
	if (json_is_string(json_object_get(j, "uid")) && json_object_get(j, "operation")) {
		json_t *x = json_loads(request, 0, NULL); /* the review's request */

		json_object_update_missing(j, x);
		json_decref(x);
		if (json_is_object(json_object_get(j, "userInfo"))) {
			x = json_loads(user, 0, NULL);
			json_object_update_missing(json_object_get(j, "userInfo"), x);
			json_decref(x);
		}
	}
}

/* What a review skips changes no reply: every golden case, with the
 * members it never reads added, is answered byte for byte as it is
 * without them. */
static void test_unread_members_change_nothing(void **state)
{
	size_t grown = 0;
	(void)state;

	for (size_t i = 0; i < g_n_cases; i++) {
		golden_case_t *c = &g_cases[i];
		webhook_endpoint_t ep = c->mutate ? WEBHOOK_MUTATE : WEBHOOK_VALIDATE;
		json_t *doc = json_loadb(c->body, c->len, 0, NULL);
		webhook_reply_t a, b;
		char *more;

		if (!doc)
			continue; /* a case of a body that is not JSON */
		add_unread(doc);
		more = json_dumps(doc, JSON_COMPACT);
		assert_non_null(more);
		grown += strlen(more) > c->len;
		assert_int_equal(webhook_review_handle(ep, g_policy, NULL, c->body, c->len, &a),
				 GPUQ_OK);
		assert_int_equal(webhook_review_handle(ep, g_policy, NULL, more, strlen(more), &b),
				 GPUQ_OK);
		if (a.http_status != b.http_status || a.len != b.len ||
		    memcmp(a.body, b.body, a.len))
			fail_msg("%s: with unread members added the reply changed:\n%s\n%s",
				 c->name, a.body, b.body);
		webhook_reply_deinit(&a);
		webhook_reply_deinit(&b);
		free(more);
		json_decref(doc);
	}
	assert_true(grown >= 80); /* most cases hold a container or metadata */
}

/* A long namespace and queue name still give warnings under 120 bytes. */
static void test_warning_length(void **state)
{
	char obj[1024], *body;
	webhook_reply_t r;
	json_t *root, *resp;
	(void)state;

	snprintf(obj, sizeof(obj),
		 "{\"metadata\":{\"name\":\"p\",\"labels\":{\"gpuq.dev/queue-name\":\"%s\"}},"
		 "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
		 "{\"nvidia.com/gpu\":\"1\"}}}]}}",
		 "a-very-long-local-queue-name-that-goes-on-and-on-and-on-for-sixty-three");
	body = review("Pod", "CREATE", "team-a", "alice", obj, "null");
	run(WEBHOOK_MUTATE, NULL, body, &r);
	resp = response_of(&r, &root);
	assert_int_equal(json_array_size(json_object_get(resp, "warnings")), 1);
	assert_true(
	    strlen(json_string_value(json_array_get(json_object_get(resp, "warnings"), 0))) < 120);
	json_decref(root);
	webhook_reply_deinit(&r);
	free(body);
}

/* ---- a Job's Pods outside the queue: by configuration and by evidence ---- */

#define JOB_UID "0b7f6c1e-5a2d-4c39-9e1a-6f0d2b8c4a11"
/* The Pod the Job controller makes from an admitted Job's template. */
#define ADMITTED_JOB_POD                                                                           \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-x\","              \
	"\"labels\":{\"gpuq.dev/managed\":\"true\"},\"annotations\":{\"gpuq.dev/admitted\":"       \
	"\"true\"},\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"   \
	"\"train\",\"uid\":\"" JOB_UID "\",\"controller\":true}]},\"spec\":{\"containers\":"       \
	"[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}"
#define JOB_CONTROLLER "system:serviceaccount:kube-system:job-controller"

static webhook_owners_t *owners_of(const char *uid)
{
	webhook_owners_t *o = NULL;

	assert_int_equal(webhook_owners_create(2, &o), GPUQ_OK);
	assert_int_equal(webhook_owners_add(o, "another-uid"), GPUQ_OK);
	if (uid)
		assert_int_equal(webhook_owners_add(o, uid), GPUQ_OK);
	webhook_owners_finish(o);
	return o;
}

/* decide body at ep under cfg: its decision, and whether the message has
 * want (NULL: not checked) */
static void expect(webhook_endpoint_t ep, const webhook_config_t *cfg, const char *body,
		   const char *decision, const char *want)
{
	webhook_reply_t r;

	run(ep, cfg, body, &r);
	if (strcmp(r.decision, decision) != 0 || (want && !strstr(r.body, want)))
		fail_msg("%s: want %s (%s), got %s: %s",
			 ep == WEBHOOK_MUTATE ? "mutate" : "validate", decision, want ? want : "",
			 r.decision, r.body);
	webhook_reply_deinit(&r);
}

static void test_exempt_owner_evidence(void **state)
{
	webhook_owners_t *known = owners_of(JOB_UID), *other = owners_of(NULL);
	webhook_config_t cfg = {NULL, 0, NULL, NULL, 0, known, NULL, 0};
	char *body = review("Pod", "CREATE", "team-a", JOB_CONTROLLER, ADMITTED_JOB_POD, "null");
	char *alice = review("Pod", "CREATE", "team-a", "alice", ADMITTED_JOB_POD, "null");
	(void)state;

	/* the owner admitted and running in the controller's cache: passes */
	expect(WEBHOOK_MUTATE, &cfg, body, "allowed", NULL);
	expect(WEBHOOK_VALIDATE, &cfg, body, "allowed", NULL);
	/* not in it (not yet seen, never admitted, or no such Job): refused,
	   saying a retry passes once it is seen; not gated (a gated Job Pod
	   would wait for a release that already happened) */
	cfg.owners = other;
	expect(WEBHOOK_MUTATE, &cfg, body, "denied",
	       "its owner Job \\\"train\\\" (uid " JOB_UID ") is not among the Jobs gpuq admitted");
	expect(WEBHOOK_VALIDATE, &cfg, body, "denied", "retry");
	cfg.owners = NULL; /* nothing known at all: the same */
	expect(WEBHOOK_MUTATE, &cfg, body, "denied", "not exempt from the queue");
	expect(WEBHOOK_VALIDATE, NULL, body, "denied", "not exempt from the queue");
	/* the owner known, but made by someone else: a Pod like any other */
	cfg.owners = known;
	expect(WEBHOOK_MUTATE, &cfg, alice, "patched", NULL);
	expect(WEBHOOK_VALIDATE, &cfg, alice, "denied",
	       "is honoured only on Pods the Job controller");
	webhook_owners_unref(known);
	webhook_owners_unref(other);
	free(body);
	free(alice);
}

/* Pod UID of the Job JOB_UID's controller, one GPU, as /validate sees it
 * (the apiserver has named it by then). */
#define WEIGHED_POD(uid)                                                                           \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-" uid "\","        \
	"\"uid\":\"" uid "\",\"labels\":{\"gpuq.dev/managed\":\"true\"},\"annotations\":"          \
	"{\"gpuq.dev/admitted\":\"true\"},\"ownerReferences\":[{\"apiVersion\":\"batch/v1\","      \
	"\"kind\":\"Job\",\"name\":\"train\",\"uid\":\"" JOB_UID "\",\"controller\":true}]},"      \
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"                     \
	"{\"nvidia.com/gpu\":\"1\"}}}]}}"

/* The set of one owner, Job JOB_UID, whose Pods count against JobSet js:
 * admitted for 2 GPUs, its unfinished Pods holding `held`. */
static webhook_owners_t *weighed_owners(int64_t held)
{
	webhook_owners_t *o = NULL;
	size_t top = 0;

	assert_int_equal(webhook_owners_create(1, &o), GPUQ_OK);
	assert_int_equal(webhook_owners_top(o, "js-uid", "JobSet", "team-a", "js", 2, held, &top),
			 GPUQ_OK);
	assert_int_equal(webhook_owners_add_weighed(o, JOB_UID, top), GPUQ_OK);
	webhook_owners_finish(o);
	return o;
}

static bool seen_p1(void *ctx, const char *pod_uid)
{
	(void)ctx;
	return !strcmp(pod_uid, "p1");
}

/* An exempt Pod takes its GPUs from what its workload was admitted for,
 * less what its unfinished Pods hold and what Pods let pass before it take
 * until a set counts them: one made beside a Pod it replaces (a JobSet's
 * Job made again while the deleted one's Pod still terminates) is refused,
 * naming the workload and the numbers; a Pod a newer set counts is not
 * charged twice, and a review still on the older set still charges it. */
static void test_exempt_pod_weighed(void **state)
{
	webhook_owners_t *o1 = weighed_owners(1), *o2 = weighed_owners(2), *o3 = weighed_owners(1);
	webhook_allows_t *l = NULL;
	webhook_config_t cfg = {NULL, 0, NULL, NULL, 0, o1, NULL, 100};
	char *p1 = review("Pod", "CREATE", "team-a", JOB_CONTROLLER, WEIGHED_POD("p1"), "null");
	char *p2 = review("Pod", "CREATE", "team-a", JOB_CONTROLLER, WEIGHED_POD("p2"), "null");
	(void)state;

	assert_int_equal(webhook_allows_create(&l), GPUQ_OK);
	cfg.allows = l;
	webhook_allows_publish(l, o1, 100, seen_p1, NULL);
	/* 1 GPU of 2 held: p1 takes the last; /mutate weighs nothing */
	expect(WEBHOOK_MUTATE, &cfg, p1, "allowed", NULL);
	expect(WEBHOOK_VALIDATE, &cfg, p1, "allowed", NULL);
	assert_int_equal(webhook_allows_pending(l), 1);
	expect(WEBHOOK_VALIDATE, &cfg, p2, "denied",
	       "Pod \\\"train-p2\\\" asks for 1 GPUs, and JobSet team-a/js was admitted for 2: its "
	       "unfinished Pods hold 1, and Pods let pass a moment ago 1 more. A Pod this one "
	       "replaces has not ended yet");
	expect(WEBHOOK_MUTATE, &cfg, p2, "allowed", NULL);
	/* the controller counts p1 now (2 held): not charged twice there */
	webhook_allows_publish(l, o2, 200, seen_p1, NULL);
	assert_int_equal(webhook_allows_pending(l), 0);
	cfg.owners = o2;
	expect(WEBHOOK_VALIDATE, &cfg, p2, "denied",
	       "hold 2, and Pods let pass a moment ago 0 more");
	/* a review still on the older set (which does not count p1) charges it */
	cfg.owners = o1;
	expect(WEBHOOK_VALIDATE, &cfg, p2, "denied",
	       "hold 1, and Pods let pass a moment ago 1 more");
	/* the Pod p1 replaced has gone (1 held): p2 passes */
	webhook_allows_publish(l, o3, 300, seen_p1, NULL);
	cfg.owners = o3;
	cfg.now_ms = 300;
	expect(WEBHOOK_VALIDATE, &cfg, p2, "allowed", NULL);
	/* p2 never counted (its create failed after the review): it takes the
	   room for 10 s, no longer */
	webhook_allows_publish(l, o3, 10299, seen_p1, NULL);
	assert_int_equal(webhook_allows_pending(l), 1);
	expect(WEBHOOK_VALIDATE, &cfg, p1, "denied",
	       "hold 1, and Pods let pass a moment ago 1 more");
	webhook_allows_publish(l, o3, 10301, seen_p1, NULL);
	assert_int_equal(webhook_allows_pending(l), 0);
	cfg.now_ms = 10301;
	expect(WEBHOOK_VALIDATE, &cfg, p1, "allowed", NULL);
	/* without a ledger, each is weighed against the set alone */
	cfg.allows = NULL;
	expect(WEBHOOK_VALIDATE, &cfg, p1, "allowed", NULL);
	cfg.owners = o2;
	expect(WEBHOOK_VALIDATE, &cfg, p1, "denied",
	       "hold 2, and Pods let pass a moment ago 0 more");
	webhook_allows_destroy(l);
	webhook_owners_unref(o1);
	webhook_owners_unref(o2);
	webhook_owners_unref(o3);
	free(p1);
	free(p2);
}

static void test_exempt_creators_configured(void **state)
{
	static const webhook_creator_t mine[] = {
	    {WORKLOAD_KIND_JOB, "system:serviceaccount:ops:jobs"}};
	webhook_owners_t *known = owners_of(JOB_UID);
	const webhook_config_t cfg = {NULL, 0, NULL, mine, 1, known, NULL, 0};
	char *dflt = review("Pod", "CREATE", "team-a", JOB_CONTROLLER, ADMITTED_JOB_POD, "null");
	char *ops = review("Pod", "CREATE", "team-a", "system:serviceaccount:ops:jobs",
			   ADMITTED_JOB_POD, "null");
	const char *users[WEBHOOK_CREATORS_MAX];
	(void)state;

	/* a kind named by --child-creator has only those */
	expect(WEBHOOK_VALIDATE, &cfg, ops, "allowed", NULL);
	expect(WEBHOOK_MUTATE, &cfg, ops, "allowed", NULL);
	expect(WEBHOOK_VALIDATE, &cfg, dflt, "denied", "is honoured only on Pods");
	assert_int_equal(webhook_creators_of(&cfg, workload_integration(WORKLOAD_KIND_JOB), users,
					     WEBHOOK_CREATORS_MAX),
			 1);
	assert_string_equal(users[0], "system:serviceaccount:ops:jobs");
	/* the others keep the table's */
	assert_int_equal(webhook_creators_of(&cfg, workload_integration(WORKLOAD_KIND_RAYCLUSTER),
					     users, WEBHOOK_CREATORS_MAX),
			 1);
	assert_string_equal(users[0], "system:serviceaccount:ray-system:kuberay-operator");
	assert_int_equal(webhook_creators_of(NULL, workload_integration(WORKLOAD_KIND_JOB), users,
					     WEBHOOK_CREATORS_MAX),
			 2);
	webhook_owners_unref(known);
	free(dflt);
	free(ops);
}

static void test_owners_set(void **state)
{
	webhook_owners_t *o = NULL;
	(void)state;

	assert_false(webhook_owners_has(NULL, "a"));
	assert_int_equal(webhook_owners_create(3, &o), GPUQ_OK);
	assert_int_equal(webhook_owners_add(o, "c"), GPUQ_OK);
	assert_int_equal(webhook_owners_add(o, "a"), GPUQ_OK);
	assert_int_equal(webhook_owners_add(o, "b"), GPUQ_OK);
	assert_int_equal(webhook_owners_add(o, "d"), GPUQ_ELIMIT); /* its stated cap */
	webhook_owners_finish(o);
	assert_true(webhook_owners_has(o, "a") && webhook_owners_has(o, "b") &&
		    webhook_owners_has(o, "c"));
	assert_false(webhook_owners_has(o, "d"));
	assert_false(webhook_owners_has(o, ""));
	assert_false(webhook_owners_has(o, NULL));
	assert_ptr_equal(webhook_owners_ref(o), o);
	webhook_owners_unref(o);
	webhook_owners_unref(o);
	webhook_owners_unref(NULL);
}

/* ---- golden cases, in process ---- */

/* The configuration the golden cases are decided with, as test_golden.c
 * starts the server: one extra GPU resource name. */
static const char *const golden_extra[] = {"amd.com/gpu"};
static const webhook_config_t golden_cfg = {golden_extra, 1, NULL, NULL, 0, NULL, NULL, 0};

/* Apply the reply's patch to the request's object, review the result
 * again: no further patch, and /validate of a patched, allowed Job agrees. */
static void check_idempotent(const golden_case_t *gc, const webhook_reply_t *first)
{
	json_t *root, *resp = response_of(first, &root);
	json_t *patch = golden_reply_patch(resp);
	json_t *req = json_deep_copy(json_object_get(gc->c, "request"));
	json_t *obj = json_object_get(json_object_get(req, "request"), "object");
	webhook_reply_t again;
	char *body;

	assert_non_null(patch);
	assert_int_equal(golden_apply_patch(obj, patch), 0);
	body = json_dumps(req, JSON_COMPACT);
	assert_non_null(body);
	run(WEBHOOK_MUTATE, &golden_cfg, body, &again);
	if (strcmp(again.decision, "allowed"))
		fail_msg("%s: mutating the patched object gave %s: %s", gc->name, again.decision,
			 again.body);
	webhook_reply_deinit(&again);
	free(body);
	json_decref(patch);
	json_decref(req);
	json_decref(root);
}

static void test_golden_case(void **state)
{
	const golden_case_t *gc = *state;
	webhook_reply_t r;
	char err[1024];

	assert_int_equal(webhook_review_handle(gc->mutate ? WEBHOOK_MUTATE : WEBHOOK_VALIDATE,
					       g_policy, &golden_cfg, gc->body, gc->len, &r),
			 GPUQ_OK);
	if (golden_check(gc->c, r.http_status, r.body, r.len, err, sizeof(err)))
		fail_msg("%s: %s", gc->name, err);
	if (gc->mutate && !strcmp(r.decision, "patched"))
		check_idempotent(gc, &r);
	webhook_reply_deinit(&r);
}

/* The mutated example Job then passes /validate. */
static void test_mutate_then_validate(void **state)
{
	const golden_case_t *gc = NULL;
	webhook_reply_t r, v;
	json_t *root, *patch, *req;
	char *body;
	(void)state;

	for (size_t i = 0; i < g_n_cases; i++)
		if (strstr(g_cases[i].name, "mutate-job-gpu-defaults"))
			gc = &g_cases[i];
	assert_non_null(gc);
	run(WEBHOOK_MUTATE, NULL, gc->body, &r);
	patch = golden_reply_patch(response_of(&r, &root));
	req = json_deep_copy(json_object_get(gc->c, "request"));
	assert_int_equal(
	    golden_apply_patch(json_object_get(json_object_get(req, "request"), "object"), patch),
	    0);
	body = json_dumps(req, JSON_COMPACT);
	run(WEBHOOK_VALIDATE, NULL, body, &v);
	if (strcmp(v.decision, "allowed"))
		fail_msg("validate after mutate: %s", v.body);
	webhook_reply_deinit(&v);
	webhook_reply_deinit(&r);
	free(body);
	json_decref(req);
	json_decref(patch);
	json_decref(root);
}

static int group_setup(void **state)
{
	gpuq_diag_t diag = {""};
	(void)state;

	if (policy_load_dir(GOLDEN_DIR "/policy", NULL, &g_policy, &diag)) {
		fprintf(stderr, "golden policy: %s\n", diag.msg);
		return -1;
	}
	if (!g_n_cases) {
		fprintf(stderr, "no golden cases under %s/cases\n", GOLDEN_DIR);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	golden_free(g_cases, g_n_cases);
	policy_unref(g_policy);
	return 0;
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_gpu_detection),
	    cmocka_unit_test(test_json_parser_values),
	    cmocka_unit_test(test_json_parser_shapes),
	    cmocka_unit_test(test_bad_inputs),
	    cmocka_unit_test(test_null_and_huge_bodies),
	    cmocka_unit_test(test_depth_scan),
	    cmocka_unit_test(test_reply_envelope),
	    cmocka_unit_test(test_kind_decoding),
	    cmocka_unit_test(test_quantity_forms),
	    cmocka_unit_test(test_too_many_containers),
	    cmocka_unit_test(test_config_extra_gpu_resource),
	    cmocka_unit_test(test_config_controller_user),
	    cmocka_unit_test(test_exempt_owner_evidence),
	    cmocka_unit_test(test_exempt_pod_weighed),
	    cmocka_unit_test(test_exempt_creators_configured),
	    cmocka_unit_test(test_owners_set),
	    cmocka_unit_test(test_no_policy_fails_closed),
	    cmocka_unit_test(test_leftout_queue_refused),
	    cmocka_unit_test(test_gated_pod_moved_judged_anew),
	    cmocka_unit_test(test_malformed_object_types),
	    cmocka_unit_test(test_object_agrees_with_rules),
	    cmocka_unit_test(test_unread_members_change_nothing),
	    cmocka_unit_test(test_warning_length),
	    cmocka_unit_test(test_mutate_then_validate),
	};
	size_t n_fixed = sizeof(fixed) / sizeof(*fixed);
	struct CMUnitTest tests[sizeof(fixed) / sizeof(*fixed) + GOLDEN_CASES_MAX];

	/* One test per golden case: the table is built at run time. */
	g_n_cases = golden_load(GOLDEN_DIR "/cases", g_cases, GOLDEN_CASES_MAX);
	memcpy(tests, fixed, sizeof(fixed));
	for (size_t i = 0; i < g_n_cases; i++)
		tests[n_fixed + i] =
		    (struct CMUnitTest){g_cases[i].name, test_golden_case, NULL, NULL, &g_cases[i]};
	return _cmocka_run_group_tests("webhook", tests, n_fixed + g_n_cases, group_setup,
				       group_teardown);
}

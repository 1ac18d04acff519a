/* Unit tests of the admission rules for the kinds beyond Pods and Jobs
 * (webhook/mutate.c, validate.c over workload/'s integration table), against
 * the golden policy (unit/golden/policy): a JobSet is held whole like a Job
 * (created suspended, its templates marked and defaulted, its totals judged
 * over every replicatedJob), tenants cannot let it out, and its Jobs pass
 * only when the JobSet controller made them for an admitted JobSet. Every
 * patch is applied and mutated again: no further patch. */
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

#define JOBSET_SA "system:serviceaccount:jobset-system:jobset-controller-manager"

static policy_t *g_policy;
/* What the controller's cache would hold: RayCluster "rc" and Job "j"
 * (uid "u") admitted and running (their Pods below pass outside the queue
 * only so: test_webhook.c's
 * test_exempt_owner_evidence refuses them without it). */
static webhook_owners_t *g_owners;
static webhook_config_t g_cfg;

static int setup(void **state)
{
	gpuq_diag_t d = {{0}};

	(void)state;
	if (webhook_owners_create(2, &g_owners) || webhook_owners_add(g_owners, "rc") ||
	    webhook_owners_add(g_owners, "u"))
		return -1;
	webhook_owners_finish(g_owners);
	g_cfg.owners = g_owners;
	if (policy_load_dir("unit/golden/policy", NULL, &g_policy, &d)) {
		fprintf(stderr, "golden policy: %s\n", d.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	policy_unref(g_policy);
	webhook_owners_unref(g_owners);
	return 0;
}

/* A review of group/version/kind in team-a by user. */
static char *review(const char *group, const char *version, const char *kind, const char *op,
		    const char *user, const char *obj, const char *old)
{
	size_t cap = strlen(obj) + strlen(old) + 1024;
	char *s = malloc(cap);

	assert_non_null(s);
	snprintf(s, cap,
		 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		 "\"request\":{\"uid\":\"u-1\",\"kind\":{\"group\":\"%s\",\"version\":\"%s\","
		 "\"kind\":\"%s\"},\"namespace\":\"team-a\",\"operation\":\"%s\","
		 "\"userInfo\":{\"username\":\"%s\"},\"object\":%s,\"oldObject\":%s}}",
		 group, version, kind, op, user, obj, old);
	return s;
}

/* Run one review; *resp (the reply's response, in *root) for checks. */
static void run(webhook_endpoint_t ep, const char *body, webhook_reply_t *out, json_t **root)
{
	assert_int_equal(webhook_review_handle(ep, g_policy, &g_cfg, body, strlen(body), out),
			 GPUQ_OK);
	assert_int_equal(out->http_status, 200);
	*root = json_loadb(out->body, out->len, 0, NULL);
	assert_non_null(*root);
}

static const char *message(json_t *root)
{
	return golden_str(json_object_get(
	    json_object_get(json_object_get(root, "response"), "status"), "message"));
}

/* Validate obj (old: "null" for a CREATE) as user; the reply's message ("" when
 * allowed). */
static char *validate(const char *group, const char *version, const char *kind, const char *op,
		      const char *user, const char *obj, const char *old)
{
	char *body = review(group, version, kind, op, user, obj, old), *msg;
	webhook_reply_t r;
	json_t *root;

	run(WEBHOOK_VALIDATE, body, &r, &root);
	msg = strdup(json_is_true(json_object_get(json_object_get(root, "response"), "allowed"))
			 ? ""
			 : message(root));
	assert_non_null(msg);
	json_decref(root);
	webhook_reply_deinit(&r);
	free(body);
	return msg;
}

/* The JobSet of the jobset.x-k8s.io PyTorch example's shape: a driver and 2
 * worker Jobs of one 8-GPU pod each (16 GPUs: cq-a holds 24 with
 * borrowing). */
#define JOBSET(suspend, meta_extra, tmpl_meta)                                                     \
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{"          \
	"\"name\":\"llama\"" meta_extra "},\"spec\":{" suspend "\"replicatedJobs\":["              \
	"{\"name\":\"driver\",\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":"     \
	"[{\"name\":\"d\",\"image\":\"x\"}]}}}}},"                                                 \
	"{\"name\":\"workers\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":1,"          \
	"\"template\":{" tmpl_meta "\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"x\","    \
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}}}}]}}"

#define JS_GVK "jobset.x-k8s.io", "v1alpha2", "JobSet"

static void test_jobset_mutate(void **state)
{
	char *body = review(JS_GVK, "CREATE", "alice", JOBSET("", "", ""), "null");
	webhook_reply_t r;
	json_t *root, *patch, *doc, *again;
	const char *want[] = {
	    "/spec/suspend", "/metadata/labels",
	    "/spec/replicatedJobs/0/template/spec/template/metadata",
	    "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources",
	    "/spec/replicatedJobs/1/template/spec/template/metadata"};
	char *body2, *text;
	(void)state;

	run(WEBHOOK_MUTATE, body, &r, &root);
	assert_string_equal(r.decision, "patched");
	assert_string_equal(r.kind, "other"); /* the metrics label: Pod, Job or other */
	patch = golden_reply_patch(json_object_get(root, "response"));
	assert_non_null(patch);
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		bool found = false;
		for (size_t k = 0; k < json_array_size(patch); k++)
			found =
			    found ||
			    !strcmp(golden_str(json_object_get(json_array_get(patch, k), "path")),
				    want[i]);
		if (!found)
			fail_msg("no op at %s in %s", want[i], golden_dump(patch));
	}
	assert_non_null(strstr(r.body, "JobSet created suspended until gpuq admits it"));
	/* applied, the JobSet needs no further patch */
	doc = json_loads(JOBSET("", "", ""), 0, NULL);
	assert_int_equal(golden_apply_patch(doc, patch), 0);
	assert_true(json_is_true(json_object_get(json_object_get(doc, "spec"), "suspend")));
	text = json_dumps(doc, JSON_COMPACT);
	body2 = review(JS_GVK, "CREATE", "alice", text, "null");
	webhook_reply_deinit(&r);
	json_decref(root);
	run(WEBHOOK_MUTATE, body2, &r, &again);
	assert_string_equal(r.decision, "allowed");
	/* and it passes /validate as it is */
	json_decref(again);
	webhook_reply_deinit(&r);
	{
		char *msg = validate(JS_GVK, "CREATE", "alice", text, "null");
		assert_string_equal(msg, "");
		free(msg);
	}
	json_decref(patch);
	json_decref(doc);
	free(text);
	free(body);
	free(body2);
}

static void test_jobset_validate(void **state)
{
	static const struct {
		const char *op, *user, *obj, *old;
		const char *want; /* in the message; "" allowed */
	} t[] = {
	    /* created as the mutating webhook leaves it */
	    {"CREATE", "alice", JOBSET("\"suspend\":true,", "", ""), "null", ""},
	    {"CREATE", "alice", JOBSET("\"suspend\":false,", "", ""), "null",
	     "JobSet \"llama\": spec.suspend is false; a GPU JobSet in a managed namespace must "
	     "be created suspended"},
	    {"CREATE", "alice",
	     JOBSET("\"suspend\":true,", "",
		    "\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":\"true\"}},"),
	     "null",
	     "JobSet \"llama\": spec.replicatedJobs[1].template.spec.template.metadata."
	     "annotations[gpuq.dev/admitted] may be set only by gpuq's controller"},
	    /* more than it could ever get: 2 x 16 GPUs */
	    {"CREATE", "alice",
	     "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{"
	     "\"name\":\"big\"},\"spec\":{\"suspend\":true,\"replicatedJobs\":[{\"name\":\"w\","
	     "\"replicas\":4,\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
	     "\"name\":\"w\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}}}}]}}",
	     "null",
	     "JobSet \"big\" can never be admitted: it requests nvidia.com/gpu=32 in total"},
	    /* a tenant cannot let it out */
	    {"UPDATE", "alice", JOBSET("\"suspend\":false,", "", ""),
	     JOBSET("\"suspend\":true,", "", ""),
	     "JobSet \"llama\": spec.suspend may change from true to false only by gpuq"},
	    {"UPDATE", "alice",
	     JOBSET("\"suspend\":true,", "",
		    "\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":"
		    "\"true\"}},"),
	     JOBSET("\"suspend\":true,", "", ""), "may be set only by gpuq's controller"},
	    /* gpuq's own release is allowed */
	    {"UPDATE", WEBHOOK_CONTROLLER_USER_DEFAULT,
	     JOBSET("\"suspend\":false,", ",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}", ""),
	     JOBSET("\"suspend\":true,", "", ""), ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg = validate(JS_GVK, t[i].op, t[i].user, t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
}

/* A Job the JobSet controller made for its JobSet. */
#define CHILD_JOB_P(suspend, tmpl_ann, spec)                                                       \
	"{\"apiVersion\":\"batch/"                                                                 \
	"v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"llama-workers-0\","                        \
	"\"ownerReferences\":[{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","   \
	"\"name\":\"llama\",\"uid\":\"js-uid\",\"controller\":true}]},\"spec\":{"                  \
	"\"suspend\":" suspend spec                                                                \
	",\"template\":{\"metadata\":{\"labels\":{\"gpuq.dev/managed\":\"true\"}" tmpl_ann         \
	"},\"spec\":{\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{"                  \
	"\"nvidia.com/gpu\":\"8\"}}}]}}}}"
#define CHILD_JOB(suspend, tmpl_ann) CHILD_JOB_P(suspend, tmpl_ann, "")
#define ADMITTED ",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}"
#define REPLACE(policy) ",\"podReplacementPolicy\":\"" policy "\""
#define JOB_GVK "batch", "v1", "Job"

static const json_t *op_at(const json_t *patch, const char *path);

static void test_jobset_children(void **state)
{
	static const struct {
		const char *op, *user, *obj, *old;
		const char *want; /* in the message; "" allowed */
	} t[] = {
	    /* the JobSet controller's Jobs of a suspended JobSet, and of an
	       admitted one */
	    {"CREATE", JOBSET_SA, CHILD_JOB("true", ""), "null", ""},
	    {"CREATE", JOBSET_SA, CHILD_JOB("false", ADMITTED), "null", ""},
	    /* never one running for a JobSet gpuq did not admit */
	    {"CREATE", JOBSET_SA, CHILD_JOB("false", ""), "null",
	     "Job \"llama-workers-0\": a JobSet's Job runs only once gpuq admitted the JobSet"},
	    /* a forged owner */
	    {"CREATE", "alice", CHILD_JOB("true", ""), "null",
	     "Job \"llama-workers-0\": metadata.ownerReferences names JobSet \"llama\" as its "
	     "controller, but a JobSet's Jobs are made by its controller only"},
	    {"CREATE", "alice", CHILD_JOB("false", ADMITTED), "null",
	     "a JobSet's Jobs are made by its controller only"},
	    /* the JobSet controller resumes them; a tenant cannot */
	    {"UPDATE", JOBSET_SA, CHILD_JOB("false", ADMITTED), CHILD_JOB("true", ""), ""},
	    {"UPDATE", "alice", CHILD_JOB("false", ""), CHILD_JOB("true", ""),
	     "spec.suspend may change from true to false only by the JobSet controller"},
	    {"UPDATE", "alice", CHILD_JOB("true", ADMITTED), CHILD_JOB("true", ""),
	     "gpuq.dev/admitted may be set only by gpuq's controller"},
	    /* its Pods replaced only once terminated, as gpuq's webhook made
	       it: a tenant cannot undo that */
	    {"UPDATE", "alice", CHILD_JOB_P("false", ADMITTED, REPLACE("TerminatingOrFailed")),
	     CHILD_JOB_P("false", ADMITTED, REPLACE("Failed")),
	     "Job \"llama-workers-0\": spec.podReplacementPolicy cannot change from \"Failed\" "
	     "(now \"TerminatingOrFailed\")"},
	    {"UPDATE", "alice", CHILD_JOB_P("false", ADMITTED, REPLACE("Failed")),
	     CHILD_JOB_P("false", ADMITTED, REPLACE("Failed")), ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg = validate(JOB_GVK, t[i].op, t[i].user, t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
	/* /mutate holds no JobSet's Job (its JobSet was held): it only has it
	   replace its Pods once they terminated (the apiserver's default,
	   TerminatingOrFailed, or none), and leaves one that does alone */
	{
		static const char *const objs[] = {
		    CHILD_JOB("true", ""),
		    CHILD_JOB_P("true", "", REPLACE("TerminatingOrFailed")),
		    CHILD_JOB_P("true", "", REPLACE("Failed")),
		};
		for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++) {
			char *body = review(JOB_GVK, "CREATE", JOBSET_SA, objs[i], "null");
			webhook_reply_t r;
			json_t *root, *patch;

			run(WEBHOOK_MUTATE, body, &r, &root);
			if (i == 2) {
				assert_string_equal(r.decision, "allowed");
			} else {
				const json_t *op;

				assert_string_equal(r.decision, "patched");
				patch = golden_reply_patch(json_object_get(root, "response"));
				assert_int_equal(json_array_size(patch), 1);
				op = op_at(patch, "/spec/podReplacementPolicy");
				assert_non_null(op);
				assert_string_equal(json_string_value(json_object_get(op, "value")),
						    "Failed");
				json_decref(patch);
			}
			json_decref(root);
			webhook_reply_deinit(&r);
			free(body);
		}
	}
}

/* ---- sets: StatefulSet, LeaderWorkerSet, Deployment ---- */

#define STS(replicas, tmpl_labels)                                                                 \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\"},"    \
	"\"spec\":{\"replicas\":" replicas ",\"template\":{\"metadata\":{\"labels\":{" tmpl_labels \
	"}},\"spec\":{\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{"                 \
	"\"nvidia.com/gpu\":\"4\"}}}]}}}}"
#define LWS(size)                                                                                  \
	"{\"apiVersion\":\"leaderworkerset.x-k8s.io/"                                              \
	"v1\",\"kind\":\"LeaderWorkerSet\",\"metadata\":"                                          \
	"{\"name\":\"vllm\",\"labels\":{\"gpuq.dev/queue-name\":\"research\"}},\"spec\":{"         \
	"\"replicas\":3,\"leaderWorkerTemplate\":{\"size\":" size ",\"workerTemplate\":{\"spec\":" \
	"{\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{\"nvidia.com/"                \
	"gpu\":\"4\"}}}]}}}}}"

/* Every op of reply's patch at path, or NULL. */
static const json_t *op_at(const json_t *patch, const char *path)
{
	for (size_t k = 0; k < json_array_size(patch); k++)
		if (!strcmp(golden_str(json_object_get(json_array_get(patch, k), "path")), path))
			return json_array_get(patch, k);
	return NULL;
}

static void test_sets_mutate(void **state)
{
	static const struct {
		const char *group, *kind, *obj;
		const char *path, *value; /* an op the patch must hold */
	} t[] = {
	    /* the queue label on the set, and on its Pods' template */
	    {"apps", "StatefulSet", STS("4", ""), "/metadata/labels", NULL},
	    {"apps", "StatefulSet", STS("4", ""),
	     "/spec/template/metadata/labels/gpuq.dev~1queue-name", "default"},
	    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", LWS("4"),
	     "/spec/leaderWorkerTemplate/workerTemplate/metadata", NULL},
	    {"apps", "Deployment",
	     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","
	     "\"labels\":{\"gpuq.dev/queue-name\":\"research\"}},\"spec\":{\"replicas\":9,"
	     "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},\"spec\":{\"containers\":[{"
	     "\"name\":\"s\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}",
	     "/spec/template/metadata/labels/gpuq.dev~1queue-name", "research"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		const char *version = strcmp(t[i].kind, "LeaderWorkerSet") ? "v1" : "v1";
		char *body =
		    review(t[i].group, version, t[i].kind, "CREATE", "alice", t[i].obj, "null");
		webhook_reply_t r;
		json_t *root, *patch;
		const json_t *op;

		run(WEBHOOK_MUTATE, body, &r, &root);
		if (strcmp(r.decision, "patched"))
			fail_msg("case %zu: %s (%s)", i, r.decision, r.body);
		patch = golden_reply_patch(json_object_get(root, "response"));
		op = op_at(patch, t[i].path);
		if (!op ||
		    (t[i].value && strcmp(golden_str(json_object_get(op, "value")), t[i].value)))
			fail_msg("case %zu: no op %s=%s in %s", i, t[i].path,
				 t[i].value ? t[i].value : "", golden_dump(patch));
		json_decref(patch);
		json_decref(root);
		webhook_reply_deinit(&r);
		free(body);
	}
}

static void test_sets_validate(void **state)
{
	static const struct {
		const char *group, *kind, *op, *obj, *old;
		const char *want;
	} t[] = {
	    /* 4 replicas of 4 GPUs fit cq-a (24 at most); 8 never do */
	    {"apps", "StatefulSet", "CREATE", STS("4", ""), "null", ""},
	    {"apps", "StatefulSet", "CREATE", STS("8", ""), "null",
	     "StatefulSet \"web\" can never be admitted: it requests nvidia.com/gpu=32 in total"},
	    /* a scale-up is judged too */
	    {"apps", "StatefulSet", "UPDATE", STS("8", ""), STS("4", ""),
	     "StatefulSet \"web\" can never be admitted"},
	    /* an LWS group is a workload: 4 pods of 4 GPUs (its 3 groups are 3) */
	    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", "CREATE", LWS("4"), "null", ""},
	    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", "CREATE", LWS("7"), "null",
	     "LeaderWorkerSet \"vllm\" can never be admitted: it requests nvidia.com/gpu=28"},
	    /* a Deployment's Pods are each a workload: 40 replicas of 1 GPU pass */
	    {"apps", "Deployment", "CREATE",
	     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
	     "\"spec\":{\"replicas\":40,\"template\":{\"spec\":{\"containers\":[{\"name\":\"s\","
	     "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}",
	     "null", ""},
	    /* a queue that does not exist */
	    {"apps", "StatefulSet", "CREATE",
	     "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"q\","
	     "\"labels\":{\"gpuq.dev/queue-name\":\"nope\"}},\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{\"nvidia.com/"
	     "gpu\":\"1\"}}}]}}}}",
	     "null", "has no LocalQueue \"nope\""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg =
		    validate(t[i].group, "v1", t[i].kind, t[i].op, "alice", t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
}

/* An LWS's Pod is gated like any GPU Pod, and its gate stays gpuq's. */
static void test_set_pods(void **state)
{
	static const char pod[] =
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"vllm-0-1\","
	    "\"labels\":"
	    "{\"gpuq.dev/queue-name\":\"default\",\"leaderworkerset.sigs.k8s.io/name\":\"vllm\"},"
	    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":"
	    "\"vllm-0\",\"uid\":\"s\",\"controller\":true}]},\"spec\":{%s\"containers\":[{\"name\":"
	    "\"w\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}";
	char gated[1024], ungated[1024], *body, *msg;
	webhook_reply_t r;
	json_t *root;
	(void)state;

	snprintf(gated, sizeof(gated), pod,
		 "\"schedulingGates\":[{\"name\":\"gpuq.dev/admission\"}],");
	snprintf(ungated, sizeof(ungated), pod, "");
	body = review("", "v1", "Pod", "CREATE",
		      "system:serviceaccount:kube-system:statefulset-controller", ungated, "null");
	run(WEBHOOK_MUTATE, body, &r, &root);
	assert_string_equal(r.decision, "patched");
	{
		json_t *patch = golden_reply_patch(json_object_get(root, "response"));

		assert_non_null(op_at(patch, "/spec/schedulingGates"));
		json_decref(patch);
	}
	json_decref(root);
	webhook_reply_deinit(&r);
	free(body);
	msg = validate("", "v1", "Pod", "UPDATE", "alice", ungated, gated);
	assert_non_null(
	    strstr(msg, "scheduling gate gpuq.dev/admission may be removed only by gpuq"));
	free(msg);
}

/* ---- KubeRay: RayJob, its RayCluster, their Pods ---- */

#define KUBERAY_SA "system:serviceaccount:ray-system:kuberay-operator"
/* The RayJob sample's shape: a CPU head and 2 workers of 4 GPUs (8 GPUs). */
#define RAY_CLUSTER(tmpl_meta, extra)                                                              \
	"{" extra "\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{"              \
	"\"containers\":[{\"name\":\"ray-head\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}},"  \
	"\"workerGroupSpecs\":[{\"groupName\":\"gpu\",\"replicas\":2,\"minReplicas\":1,"           \
	"\"maxReplicas\":2,\"rayStartParams\":{},\"template\":{" tmpl_meta "\"spec\":{"            \
	"\"containers\":[{\"name\":\"ray-worker\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"  \
	"\"4\"}}}]}}}]}"
#define RAYJOB(spec_extra, tmpl_meta)                                                              \
	"{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"rayjob-"       \
	"sample\"},\"spec\":{\"entrypoint\":\"python "                                             \
	"/home/ray/samples/sample_code.py\"," spec_extra                                           \
	"\"rayClusterSpec\":" RAY_CLUSTER(tmpl_meta, "") "}}"
#define RJ_GVK "ray.io", "v1", "RayJob"
/* A submitter Pod of `cpu` cpu (K8sJobMode's, from its own template). */
#define SUBMITTER(cpu)                                                                             \
	"\"submitterPodTemplate\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"        \
	"\"name\":\"s\",\"resources\":{\"requests\":{\"cpu\":\"" cpu "\"}}}]}},"
#define RC_GVK "ray.io", "v1", "RayCluster"
#define SHUT "\"shutdownAfterJobFinishes\":true,"
/* The RayCluster KubeRay makes for the RayJob. */
#define CHILD_RC(tmpl_meta, extra)                                                                 \
	"{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":"            \
	"\"rayjob-sample-raycluster-x\",\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\","       \
	"\"kind\":\"RayJob\",\"name\":\"rayjob-sample\",\"uid\":\"rj\",\"controller\":true}]},"    \
	"\"spec\":" RAY_CLUSTER(tmpl_meta, extra) "}"
#define ADMITTED_TMPL "\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":\"true\"}},"
/* A worker Pod KubeRay makes for a RayCluster. */
#define RAY_POD(ann)                                                                               \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"rc-gpu-worker-1\","      \
	"\"labels\":{\"gpuq.dev/managed\":\"true\",\"ray.io/node-type\":\"worker\"}" ann           \
	",\"ownerReferences\":[{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"name\":"    \
	"\"rc\",\"uid\":\"rc\",\"controller\":true}]},\"spec\":{\"containers\":[{\"name\":"        \
	"\"ray-worker\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}"

static void test_ray_mutate(void **state)
{
	char *body = review(RJ_GVK, "CREATE", "alice", RAYJOB(SHUT, ""), "null"), *text, *body2;
	webhook_reply_t r;
	json_t *root, *patch, *doc, *again;
	(void)state;

	run(WEBHOOK_MUTATE, body, &r, &root);
	assert_string_equal(r.decision, "patched");
	patch = golden_reply_patch(json_object_get(root, "response"));
	assert_non_null(op_at(patch, "/spec/suspend"));
	assert_non_null(op_at(patch, "/metadata/labels"));
	assert_non_null(op_at(patch, "/spec/rayClusterSpec/workerGroupSpecs/0/template/metadata"));
	assert_non_null(strstr(r.body, "RayJob created suspended until gpuq admits it"));
	{
		/* the submitter's template is KubeRay's to copy: counted, not
		   written (no label, no LimitRange defaults) */
		char *b =
		    review(RJ_GVK, "CREATE", "alice", RAYJOB(SHUT SUBMITTER("1"), ""), "null");
		webhook_reply_t r2;
		json_t *root2, *p2;

		run(WEBHOOK_MUTATE, b, &r2, &root2);
		p2 = golden_reply_patch(json_object_get(root2, "response"));
		assert_non_null(op_at(p2, "/spec/suspend"));
		for (size_t i = 0; i < json_array_size(p2); i++)
			if (strstr(
				json_string_value(json_object_get(json_array_get(p2, i), "path")),
				"submitterPodTemplate"))
				fail_msg("the submitter's template written: %s",
					 json_string_value(
					     json_object_get(json_array_get(p2, i), "path")));
		json_decref(p2);
		json_decref(root2);
		webhook_reply_deinit(&r2);
		free(b);
	}
	{
		/* SidecarMode: KubeRay's submitter container, counted in the head,
		   is in no template: no LimitRange default is written for it
		   (team-a's defaults would add a GPU limit of 0 to it) */
		char *b = review(RJ_GVK, "CREATE", "alice",
				 RAYJOB(SHUT "\"submissionMode\":\"SidecarMode\",", ""), "null");
		webhook_reply_t r2;
		json_t *root2, *p2;

		run(WEBHOOK_MUTATE, b, &r2, &root2);
		assert_string_equal(r2.decision, "patched");
		p2 = golden_reply_patch(json_object_get(root2, "response"));
		assert_non_null(op_at(p2, "/spec/suspend"));
		for (size_t i = 0; i < json_array_size(p2); i++) {
			const char *at =
			    json_string_value(json_object_get(json_array_get(p2, i), "path"));

			if (strstr(at, "headGroupSpec/template/spec/containers/1") ||
			    strstr(at, "containers/18446744073709551615"))
				fail_msg("a patch for the sidecar: %s", at);
		}
		json_decref(p2);
		json_decref(root2);
		webhook_reply_deinit(&r2);
		free(b);
	}
	doc = json_loads(RAYJOB(SHUT, ""), 0, NULL);
	assert_int_equal(golden_apply_patch(doc, patch), 0);
	text = json_dumps(doc, JSON_COMPACT);
	body2 = review(RJ_GVK, "CREATE", "alice", text, "null");
	webhook_reply_deinit(&r);
	json_decref(root);
	run(WEBHOOK_MUTATE, body2, &r, &again);
	assert_string_equal(r.decision, "allowed");
	json_decref(again);
	webhook_reply_deinit(&r);
	{
		char *msg = validate(RJ_GVK, "CREATE", "alice", text, "null");
		assert_string_equal(msg, "");
		free(msg);
	}
	/* KubeRay's Pods of an admitted cluster pass ungated; anyone else's
	   are gated */
	free(body);
	body = review("", "v1", "Pod", "CREATE", KUBERAY_SA,
		      RAY_POD(",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}"), "null");
	run(WEBHOOK_MUTATE, body, &r, &again);
	assert_string_equal(r.decision, "allowed");
	json_decref(again);
	webhook_reply_deinit(&r);
	free(body);
	body = review("", "v1", "Pod", "CREATE", "alice", RAY_POD(""), "null");
	run(WEBHOOK_MUTATE, body, &r, &again);
	assert_string_equal(r.decision, "patched");
	json_decref(again);
	webhook_reply_deinit(&r);
	json_decref(patch);
	json_decref(doc);
	free(text);
	free(body);
	free(body2);
}

static void test_ray_validate(void **state)
{
	static const struct {
		const char *group, *version, *kind, *op, *user, *obj, *old;
		const char *want; /* in the message; "" allowed */
	} t[] = {
	    {RJ_GVK, "CREATE", "alice", RAYJOB("\"suspend\":true," SHUT, ""), "null", ""},
	    /* its submitter Pod counts: team-a's 200 cpu of ResourceQuota */
	    {RJ_GVK, "CREATE", "alice", RAYJOB("\"suspend\":true," SHUT SUBMITTER("200"), ""),
	     "null", "exceeded quota: team-a-quota, requested: requests.cpu=202"},
	    {RJ_GVK, "CREATE", "alice",
	     RAYJOB("\"suspend\":true,\"submissionMode\":\"HTTPMode\"," SHUT SUBMITTER("200"), ""),
	     "null", ""},
	    {RJ_GVK, "CREATE", "alice", RAYJOB(SHUT, ""), "null",
	     "RayJob \"rayjob-sample\": spec.suspend is false"},
	    /* what KubeRay cannot hold, or the autoscaler would outgrow */
	    {RJ_GVK, "CREATE", "alice", RAYJOB("\"suspend\":true,", ""), "null",
	     "RayJob \"rayjob-sample\": spec.shutdownAfterJobFinishes is not true"},
	    {RC_GVK, "CREATE", "alice",
	     "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rc\"},"
	     "\"spec\":" RAY_CLUSTER("", "\"suspend\":true,\"enableInTreeAutoscaling\":true,") "}",
	     "null", "RayCluster \"rc\": enableInTreeAutoscaling is true"},
	    /* a tenant cannot let it out; gpuq can */
	    {RJ_GVK, "UPDATE", "alice", RAYJOB(SHUT, ""), RAYJOB("\"suspend\":true," SHUT, ""),
	     "RayJob \"rayjob-sample\": spec.suspend may change from true to false only by gpuq"},
	    {RJ_GVK, "UPDATE", WEBHOOK_CONTROLLER_USER_DEFAULT, RAYJOB(SHUT, ADMITTED_TMPL),
	     RAYJOB("\"suspend\":true," SHUT, ""), ""},
	    /* gpuq's release writes KubeRay's default submitter template, placed */
	    {RJ_GVK, "UPDATE", WEBHOOK_CONTROLLER_USER_DEFAULT,
	     RAYJOB(SHUT "\"submitterPodTemplate\":{\"spec\":{\"restartPolicy\":\"Never\","
			 "\"nodeSelector\":{\"pool\":\"h100\"},\"containers\":[{\"name\":"
			 "\"ray-job-submitter\",\"image\":\"rayproject/ray:2.46.0\","
			 "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"200Mi\"},"
			 "\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}},",
		    ADMITTED_TMPL),
	     RAYJOB("\"suspend\":true," SHUT, ""), ""},
	    /* the RayCluster KubeRay makes for an admitted RayJob passes; a
	       forged one, or one of a RayJob gpuq did not admit, does not */
	    {RC_GVK, "CREATE", KUBERAY_SA, CHILD_RC(ADMITTED_TMPL, ""), "null", ""},
	    {RC_GVK, "CREATE", "alice", CHILD_RC(ADMITTED_TMPL, ""), "null",
	     "metadata.ownerReferences names RayJob \"rayjob-sample\" as its controller, but a "
	     "RayJob's RayClusters are made by its controller only"},
	    {RC_GVK, "CREATE", KUBERAY_SA, CHILD_RC("", ""), "null",
	     "a RayJob's RayCluster runs only once gpuq admitted the RayJob"},
	    /* Pods: KubeRay's of an admitted cluster; no one else's */
	    {"", "v1", "Pod", "CREATE", KUBERAY_SA,
	     RAY_POD(",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}"), "null", ""},
	    {"", "v1", "Pod", "CREATE", "alice",
	     RAY_POD(",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}"), "null",
	     "annotation gpuq.dev/admitted is honoured only on Pods the RayCluster controller "
	     "creates for a RayCluster gpuq admitted (label gpuq.dev/managed=true and a ray.io/v1 "
	     "RayCluster owner)"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg = validate(t[i].group, t[i].version, t[i].kind, t[i].op, t[i].user,
				     t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
}

/* ---- what may change, when: each kind's row (issue 31) ---- */

/* A StatefulSet of `replicas` Pods of `gpus` GPUs, queue default. */
#define STS_G(replicas, gpus)                                                                      \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\"},"    \
	"\"spec\":{\"replicas\":" replicas ",\"template\":{\"spec\":{\"containers\":[{\"name\":"   \
	"\"s\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"" gpus "\"}}}]}}}}"
/* A StatefulSet of `replicas` Pods of 1 GPU in LocalQueue `queue`. */
#define STS_Q(replicas, queue)                                                                     \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\","     \
	"\"labels\":{\"gpuq.dev/queue-name\":\"" queue "\"}},\"spec\":{\"replicas\":" replicas     \
	",\"template\":{\"spec\":{\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{"     \
	"\"nvidia.com/gpu\":\"1\"}}}]}}}}"
/* An LWS of `replicas` groups of 2 Pods of 1 GPU in LocalQueue `queue`. */
#define LWS_Q(replicas, queue)                                                                     \
	"{\"apiVersion\":\"leaderworkerset.x-k8s.io/v1\",\"kind\":\"LeaderWorkerSet\","            \
	"\"metadata\":{\"name\":\"vllm\",\"labels\":{\"gpuq.dev/queue-name\":\"" queue "\"}},"     \
	"\"spec\":{\"replicas\":" replicas ",\"leaderWorkerTemplate\":{\"size\":2,"                \
	"\"workerTemplate\":{\"spec\":{\"containers\":[{\"name\":\"w\",\"resources\":{"            \
	"\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}}"
/* A Deployment of 2 Pods of 1 GPU in LocalQueue `queue`. */
#define DEP_Q(queue)                                                                               \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","        \
	"\"labels\":{\"gpuq.dev/queue-name\":\"" queue "\"}},\"spec\":{\"replicas\":2,"            \
	"\"template\":{\"spec\":{\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{"      \
	"\"nvidia.com/gpu\":\"1\"}}}]}}}}"
/* A StatefulSet of `replicas` Pods of 2 GPUs run by RuntimeClass `rc`
 * (its overhead is the Pods' too). */
#define STS_RT(replicas, rc)                                                                       \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\"},"    \
	"\"spec\":{\"replicas\":" replicas ",\"template\":{\"spec\":{\"runtimeClassName\":\"" rc   \
	"\",\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{\"nvidia.com/"              \
	"gpu\":\"2\"}}}]}}}}"
/* A StatefulSet of `replicas` Pods of 1 GPU numbered from `start`. */
#define STS_O(replicas, start)                                                                     \
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"web\"},"    \
	"\"spec\":{\"replicas\":" replicas ",\"ordinals\":{\"start\":" start "},\"template\":{"    \
	"\"spec\":{\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{"                    \
	"\"nvidia.com/gpu\":\"1\"}}}]}}}}"
/* An LWS of `replicas` groups of `size` Pods of `gpus` GPUs. */
#define LWS_G(replicas, size, gpus)                                                                \
	"{\"apiVersion\":\"leaderworkerset.x-k8s.io/"                                              \
	"v1\",\"kind\":\"LeaderWorkerSet\",\"metadata\""                                           \
	":{\"name\":\"vllm\"},\"spec\":{\"replicas\":" replicas ",\"leaderWorkerTemplate\":{"      \
	"\"size\":" size ",\"workerTemplate\":{\"spec\":{\"containers\":[{\"name\":\"w\","         \
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"" gpus "\"}}}]}}}}}"
/* A RayCluster, admitted (meta: its annotation) or queued, with a GPU
 * worker group of `replicas` workers (at most `max`) of 1 GPU. */
#define RC_G(meta, suspend, replicas, max, extra)                                                  \
	"{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rc\"" meta \
	"},\"spec\":{\"suspend\":" suspend "," extra "\"headGroupSpec\":{\"rayStartParams\":{},"   \
	"\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"resources\":{\"limits\"" \
	":{\"cpu\":\"1\"}}}]}}},\"workerGroupSpecs\":[{\"groupName\":\"gpu\","                     \
	"\"replicas\":" replicas ",\"minReplicas\":1,\"maxReplicas\":" max                         \
	",\"rayStartParams\":{},\"template\":"                                                     \
	"{\"spec\":{\"containers\":[{\"name\":\"ray-worker\",\"resources\":{\"limits\":{"          \
	"\"nvidia.com/gpu\":\"1\"}}}]}}}]}}"
#define ADM ",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}"
#define AUTOSCALE "\"enableInTreeAutoscaling\":true,"

/* Issue 31's rows at the webhook, each refused or allowed as its kind's row
 * says, with the field and the way out in the message. */
static void test_edits_by_row(void **state)
{
	static const struct {
		const char *group, *version, *kind, *obj, *old;
		const char *want; /* in the message; "" allowed */
	} t[] = {
	    /* a StatefulSet's GPUs per Pod raised in a rolling update: refused
	       while it has replicas, taken at 0 */
	    {"apps", "v1", "StatefulSet", STS_G("2", "4"), STS_G("2", "2"),
	     "StatefulSet \"web\": what a Pod of pod set \"main\" asks for (spec.template.spec: "
	     "its containers' requests and limits, overhead, GPU claims) changed while its 2 "
	     "replicas wait or run under gpuq; scale it to 0 first (spec.replicas: 0)"},
	    {"apps", "v1", "StatefulSet", STS_G("0", "4"), STS_G("0", "2"), ""},
	    /* its RuntimeClass (whose overhead each Pod gets) is its shape too */
	    {"apps", "v1", "StatefulSet", STS_RT("2", "kata"), STS_G("2", "2"),
	     "StatefulSet \"web\": what a Pod of pod set \"main\" asks for (spec.template.spec"},
	    {"apps", "v1", "StatefulSet", STS_RT("0", "kata"), STS_G("0", "2"), ""},
	    {"apps", "v1", "StatefulSet", STS_G("2", "4"), STS_G("0", "2"), ""},
	    /* its scale-ups queue as slices */
	    {"apps", "v1", "StatefulSet", STS_G("3", "2"), STS_G("2", "2"), ""},
	    /* its Pods numbered anew: refused while it has replicas, taken at 0 */
	    {"apps", "v1", "StatefulSet", STS_O("2", "1"), STS_O("2", "0"),
	     "StatefulSet \"web\": its Pods' first ordinal (spec.ordinals.start) changed from 0 "
	     "to 1 while its 2 replicas wait or run under gpuq; scale it to 0 first"},
	    {"apps", "v1", "StatefulSet", STS_O("2", "0"), STS_G("2", "1"), ""},
	    {"apps", "v1", "StatefulSet", STS_O("0", "1"), STS_O("0", "0"), ""},
	    {"apps", "v1", "StatefulSet", STS_O("3", "1"), STS_O("2", "1"), ""},
	    /* its queue label moved, its request the same: judged anew for the
	       new queue (it was taken unjudged: a queue that could never hold
	       it left its next slice waiting for good) */
	    {"apps", "v1", "StatefulSet", STS_Q("2", "nope"), STS_Q("2", "default"),
	     "has no LocalQueue \"nope\""},
	    {"apps", "v1", "StatefulSet", STS_Q("2", "default"), STS_Q("2", "default"), ""},
	    /* the same for an LWS and a Deployment (each Pod of it a workload) */
	    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", LWS_Q("2", "nope"),
	     LWS_Q("2", "default"), "has no LocalQueue \"nope\""},
	    {"apps", "v1", "Deployment", DEP_Q("nope"), DEP_Q("default"),
	     "has no LocalQueue \"nope\""},
	    {"apps", "v1", "Deployment", DEP_Q("default"), DEP_Q("default"), ""},
	    /* an LWS's size and template are fixed while it has groups */
	    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", LWS_G("2", "4", "1"),
	     LWS_G("2", "2", "1"), /* size 2 -> 4: 1 worker -> 3 */
	     "LeaderWorkerSet \"vllm\": pod set \"workers\" (spec.leaderWorkerTemplate."
	     "workerTemplate.spec) grows from 1 to 3 pods while its 2 replicas wait or run under "
	     "gpuq"},
	    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", LWS_G("2", "3", "1"),
	     LWS_G("2", "4", "1"),
	     "pod set \"workers\" (spec.leaderWorkerTemplate.workerTemplate.spec) shrinks from 3 "
	     "to 2 pods"},
	    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", LWS_G("2", "4", "2"),
	     LWS_G("2", "4", "1"), "what a Pod of pod set \"leader\""},
	    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", LWS_G("3", "4", "1"),
	     LWS_G("2", "4", "1"), ""},
	    {"leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", LWS_G("0", "8", "1"),
	     LWS_G("0", "4", "1"), ""},
	    /* an admitted RayCluster's GPU workers scaled 1 -> 6: refused; down: taken */
	    {RC_GVK, RC_G(ADM, "false", "6", "8", ""), RC_G(ADM, "false", "1", "8", ""),
	     "RayCluster \"rc\": pod set \"gpu\" (spec.workerGroupSpecs[0].template.spec) grows "
	     "from 1 to 6 pods while gpuq admits it: gpuq reserved quota for what it asked when "
	     "admitted; undo the change, or delete and recreate the RayCluster"},
	    {RC_GVK, RC_G(ADM, "false", "1", "8", ""), RC_G(ADM, "false", "2", "8", ""), ""},
	    /* queued, the same edit is taken (the controller follows it) */
	    {RC_GVK, RC_G("", "true", "6", "8", ""), RC_G("", "true", "1", "8", ""), ""},
	    /* the autoscaler turned on after admission: refused as at creation */
	    {RC_GVK, RC_G(ADM, "false", "1", "8", AUTOSCALE), RC_G(ADM, "false", "1", "8", ""),
	     "RayCluster \"rc\": enableInTreeAutoscaling is true"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg = validate(t[i].group, t[i].version, t[i].kind, "UPDATE", "alice",
				     t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
}

/* ---- gpuq's keys are gpuq's ---- */

#define GPUQ_SA "system:serviceaccount:gpuq-system:gpuq"
#define JOB_SA "system:serviceaccount:kube-system:job-controller"
/* A one-GPU Job: suspend, metadata annotations, template labels and
 * annotations (JSON members, each "" for none). */
#define KJOB(suspend, ann, tlabels, tann)                                                          \
	"{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","              \
	"\"annotations\":{" ann "}},\"spec\":{\"suspend\":" suspend ",\"template\":{"              \
	"\"metadata\":{\"labels\":{" tlabels "},\"annotations\":{" tann "}},\"spec\":{"            \
	"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/"                 \
	"gpu\":\"1\"}}}]}}}}"
#define K_ADMITTED "\"gpuq.dev/admitted\":\"true\""
#define H100 ",\"gpuq.dev/flavors\":\"nvidia.com/gpu=h100\""
#define A100 ",\"gpuq.dev/flavors\":\"nvidia.com/gpu=a100\""
#define MANAGED "\"gpuq.dev/managed\":\"true\""
#define RUNNING(ann) KJOB("false", K_ADMITTED ann, MANAGED, K_ADMITTED)
/* A Pod of that Job as the Job controller makes it. */
#define KPOD(ann)                                                                                  \
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j-x\",\"labels\":"       \
	"{" MANAGED "},\"annotations\":{" K_ADMITTED ann "},\"ownerReferences\":[{\"apiVersion\":" \
	"\"batch/v1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u\",\"controller\":true}]},"       \
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"                    \
	"\"nvidia.com/gpu\":\"1\"}}}]}}"

/* A value of n bytes of 'x' (n < 200). */
#define X70 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

/* A pod set's topology annotations (issue 33) are part of what it asks:
 * fixed once admitted (refused, naming the pod set), followed while queued
 * (judged anew); a Pod's, once released, are fixed too. */
#define TREQ(level) ",\"kueue.x-k8s.io/podset-required-topology\":\"" level "\""
#define GREQ(level) ",\"gpuq.dev/podset-required-topology\":\"" level "\""
static void test_topology_edits(void **state)
{
	static const struct {
		const char *obj, *old, *kind; /* kind: "Job" or "Pod" */
		const char *want;	      /* in the refusal; "": allowed */
	} t[] = {
	    {RUNNING(H100), KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("rack")), "Job",
	     "Job \"j\": the topology annotations of pod set \"main\" (spec.template.spec: "
	     "podset-*-topology, slice size, group) changed while gpuq admits it"},
	    {KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("block")),
	     KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("rack")), "Job",
	     "the topology annotations of pod set \"main\""},
	    /* gpuq's key added with Kueue's value: the same request */
	    {KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("rack") GREQ("rack")),
	     KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("rack")), "Job", ""},
	    {KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("rack")),
	     KJOB("false", K_ADMITTED H100, MANAGED, K_ADMITTED TREQ("rack")), "Job", ""},
	    /* queued: followed */
	    {KJOB("true", "", "", "\"x\":\"y\"" TREQ("block")),
	     KJOB("true", "", "", "\"x\":\"y\"" TREQ("rack")), "Job", ""},
	    {KPOD(TREQ("block")), KPOD(TREQ("rack")), "Pod",
	     "Pod \"j-x\": its topology annotations (podset-*-topology, slice size, group) cannot "
	     "change after admission"},
	    {KPOD(TREQ("rack")), KPOD(TREQ("rack")), "Pod", ""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		bool pod = !strcmp(t[i].kind, "Pod");
		char *msg = validate(pod ? "" : "batch", "v1", t[i].kind, "UPDATE", "alice",
				     t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
}

static void test_gpuq_keys(void **state)
{
	static const struct {
		const char *kind, *op, *user, *obj, *old;
		const char *want; /* in the message; "" allowed */
	} t[] = {
	    /* a running Job's flavors rewritten, added, removed: refused */
	    {"Job", "UPDATE", "alice", RUNNING(A100), RUNNING(H100),
	     "Job \"j\": metadata.annotations[gpuq.dev/flavors] is gpuq's: it may be set, "
	     "changed or removed only by gpuq (" GPUQ_SA "); leave it as gpuq wrote it"},
	    {"Job", "UPDATE", "alice", RUNNING(A100), RUNNING(""),
	     "metadata.annotations[gpuq.dev/flavors] is gpuq's"},
	    {"Job", "UPDATE", "alice", RUNNING(""), RUNNING(H100),
	     "metadata.annotations[gpuq.dev/flavors] is gpuq's"},
	    /* gpuq itself writes them */
	    {"Job", "UPDATE", GPUQ_SA, RUNNING(A100), RUNNING(H100), ""},
	    /* the placement before release, the status, any other gpuq.dev key */
	    {"Job", "UPDATE", "alice", RUNNING(",\"gpuq.dev/original-scheduling\":\"" X70 "\""),
	     RUNNING(""), "metadata.annotations[gpuq.dev/original-scheduling] is gpuq's"},
	    {"Job", "UPDATE", "alice", RUNNING(",\"gpuq.dev/status\":\"admitted\""),
	     RUNNING(",\"gpuq.dev/status\":\"running\""),
	     "metadata.annotations[gpuq.dev/status] is gpuq's"},
	    {"Job", "UPDATE", "alice", RUNNING(",\"gpuq.dev/whatever\":\"1\""), RUNNING(""),
	     "metadata.annotations[gpuq.dev/whatever] is gpuq's"},
	    /* a template's label gpuq trusts */
	    /* a tenant's own wall-clock limit is its input: set and changed */
	    {"Job", "CREATE", "alice",
	     KJOB("true", "\"a\":\"b\"", "\"gpuq.dev/max-exec-time-seconds\":\"20\"", ""), "null",
	     ""},
	    {"Job", "UPDATE", "alice",
	     KJOB("true", "\"a\":\"b\"", "\"gpuq.dev/max-exec-time-seconds\":\"30\"", ""),
	     KJOB("true", "\"a\":\"b\"", "\"gpuq.dev/max-exec-time-seconds\":\"20\"", ""), ""},
	    {"Job", "UPDATE", "alice", KJOB("true", "\"a\":\"b\"", "", ""),
	     KJOB("true", "\"a\":\"b\"", MANAGED, ""),
	     "Job \"j\": spec.template.metadata.labels[gpuq.dev/managed] is gpuq's"},
	    /* a tenant's own inputs and keys: taken, within their size */
	    {"Job", "UPDATE", "alice", RUNNING(H100 ",\"gpuq.dev/expected-runtime\":\"2h\""),
	     RUNNING(H100), ""},
	    {"Job", "UPDATE", "alice", RUNNING(H100 ",\"note\":\"" X70 "\""), RUNNING(H100), ""},
	    {"Job", "UPDATE", "alice", RUNNING(H100 ",\"gpuq.dev/expected-runtime\":\"" X70 "\""),
	     RUNNING(H100),
	     "Job \"j\": metadata.annotations[gpuq.dev/expected-runtime] is 70 bytes, at most "
	     "64; shorten it"},
	    /* created with gpuq's keys: refused; with what /mutate writes: taken */
	    {"Job", "CREATE", "alice", KJOB("true", "\"x\":\"y\"" H100, MANAGED, ""), "null",
	     "metadata.annotations[gpuq.dev/flavors] is gpuq's: it may be set, changed or "
	     "removed only by gpuq (" GPUQ_SA "); leave it as gpuq wrote it (remove it from the "
	     "new object)"},
	    {"Job", "CREATE", "alice",
	     KJOB("true", "\"gpuq.dev/status\":\"pending\"", MANAGED,
		  "\"gpuq.dev/original-scheduling\":\"{}\""),
	     "null", "spec.template.metadata.annotations[gpuq.dev/original-scheduling] is gpuq's"},
	    {"Job", "CREATE", "alice", KJOB("true", "\"gpuq.dev/status\":\"pending\"", MANAGED, ""),
	     "null", ""},
	    {"Job", "CREATE", "alice",
	     KJOB("true", "\"gpuq.dev/status\":\"" X70 X70 X70 X70 X70 X70 X70 X70 "\"", MANAGED,
		  ""),
	     "null", "metadata.annotations[gpuq.dev/status] is 560 bytes, at most 512"},
	    /* a class a scoped ResourceQuota keeps from the namespace (40-limits.yaml):
	       refused in the apiserver's words; any other class passes that quota */
	    {"Job", "CREATE", "alice",
	     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},"
	     "\"spec\":{\"suspend\":true,\"template\":{\"spec\":{\"priorityClassName\":"
	     "\"reserved\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
	     "\"nvidia.com/gpu\":\"1\"}}}]}}}}",
	     "null",
	     "Job \"j\": exceeded quota: team-a-no-reserved, requested: pods=1, used: pods=0, "
	     "limited: pods=0"},
	    {"Job", "CREATE", "alice",
	     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},"
	     "\"spec\":{\"suspend\":true,\"template\":{\"spec\":{\"priorityClassName\":"
	     "\"other\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
	     "\"nvidia.com/gpu\":\"1\"}}}]}}}}",
	     "null", ""},
	    /* the Job controller copies the template gpuq wrote; a tenant may not */
	    {"Pod", "CREATE", JOB_SA, KPOD(H100), "null", ""},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg = validate(strcmp(t[i].kind, "Job") ? "" : "batch", "v1", t[i].kind,
				     t[i].op, t[i].user, t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
}

/* ---- Kubeflow Trainer: a TrainJob, its JobSet ---- */

#define TRAINER_SA "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
#define TRAINJOB_M(meta_extra, spec_extra, nodes)                                                  \
	"{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\",\"metadata\":{"   \
	"\"name\":\"llama\"" meta_extra "},\"spec\":{" spec_extra                                  \
	"\"runtimeRef\":{\"name\":\"torch-"                                                        \
	"distributed\"},\"trainer\":{\"numNodes\":" nodes ",\"resourcesPerNode\":{\"limits\":{"    \
	"\"nvidia.com/gpu\":\"8\"}}}}}"
#define TRAINJOB_ON(spec_extra, nodes) TRAINJOB_M("", spec_extra, nodes)
#define TRAINJOB(spec_extra) TRAINJOB_ON(spec_extra, "2")
#define TJ_ADMITTED ",\"annotations\":{\"gpuq.dev/admitted\":\"true\"}"
#define TJ_GVK "trainer.kubeflow.org", "v1alpha1", "TrainJob"
/* The JobSet the Trainer builds for it. */
#define TJ_JOBSET(suspend, tmpl_meta)                                                              \
	"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"metadata\":{\"name\":" \
	"\"llama\",\"ownerReferences\":[{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","        \
	"\"kind\":\"TrainJob\",\"name\":\"llama\",\"uid\":\"tj\",\"controller\":true}]},"          \
	"\"spec\":{\"suspend\":" suspend ",\"replicatedJobs\":[{\"name\":\"node\",\"template\":{"  \
	"\"spec\":{\"parallelism\":2,\"completions\":2,\"template\":{" tmpl_meta "\"spec\":{"      \
	"\"containers\":[{\"name\":\"node\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"        \
	"\"8\"}}}]}}}}}]}}"

static void test_trainjob_admission(void **state)
{
	static const struct {
		const char *group, *version, *kind, *op, *user, *obj, *old;
		const char *want; /* in the message; "" allowed */
	} t[] = {
	    {TJ_GVK, "CREATE", "alice", TRAINJOB("\"suspend\":true,"), "null", ""},
	    {TJ_GVK, "CREATE", "alice", TRAINJOB(""), "null",
	     "TrainJob \"llama\": spec.suspend is false"},
	    {TJ_GVK, "UPDATE", "alice", TRAINJOB("\"suspend\":false,"),
	     TRAINJOB("\"suspend\":true,"),
	     "TrainJob \"llama\": spec.suspend may change from true to false only by gpuq"},
	    {TJ_GVK, "UPDATE", WEBHOOK_CONTROLLER_USER_DEFAULT, TRAINJOB("\"suspend\":false,"),
	     TRAINJOB("\"suspend\":true,"), ""},
	    /* its pod sets are its JobSet's, not yet made: what it says its
	       nodes get (8 GPUs on each of 100) is the least they will ask,
	       more than ClusterQueue cq-a could ever give: refused when
	       created so, and when edited so while it queues */
	    {TJ_GVK, "CREATE", "alice", TRAINJOB_ON("\"suspend\":true,", "100"), "null",
	     "TrainJob \"llama\" can never be admitted: it requests nvidia.com/gpu=800 in total"},
	    {TJ_GVK, "UPDATE", "alice", TRAINJOB_ON("\"suspend\":true,", "100"),
	     TRAINJOB("\"suspend\":true,"), "can never be admitted"},
	    /* admitted: its nodes may not grow (its quota was reserved for 2) */
	    {TJ_GVK, "UPDATE", "alice", TRAINJOB_M(TJ_ADMITTED, "\"suspend\":false,", "3"),
	     TRAINJOB_M(TJ_ADMITTED, "\"suspend\":false,", "2"),
	     "TrainJob \"llama\": spec.trainer.numNodes grows from 2 to 3 while gpuq admits it"},
	    {TJ_GVK, "UPDATE", "alice", TRAINJOB_M(TJ_ADMITTED, "\"suspend\":false,", "1"),
	     TRAINJOB_M(TJ_ADMITTED, "\"suspend\":false,", "2"), ""},
	    /* its JobSet: the Trainer's, held while the TrainJob is, or run
	       with the templates gpuq's runtime patch marked */
	    {JS_GVK, "CREATE", TRAINER_SA, TJ_JOBSET("true", ""), "null", ""},
	    {JS_GVK, "CREATE", TRAINER_SA, TJ_JOBSET("false", ""), "null",
	     "a TrainJob's JobSet runs only once gpuq admitted the TrainJob"},
	    {JS_GVK, "UPDATE", TRAINER_SA, TJ_JOBSET("false", ADMITTED_TMPL), TJ_JOBSET("true", ""),
	     ""},
	    {JS_GVK, "CREATE", "alice", TJ_JOBSET("true", ""), "null",
	     "metadata.ownerReferences names TrainJob \"llama\" as its controller, but a "
	     "TrainJob's JobSets are made by its controller only"},
	    {JS_GVK, "UPDATE", "alice", TJ_JOBSET("false", ""), TJ_JOBSET("true", ""),
	     "spec.suspend may change from true to false only by the TrainJob controller"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *msg = validate(t[i].group, t[i].version, t[i].kind, t[i].op, t[i].user,
				     t[i].obj, t[i].old);

		if (t[i].want[0] ? !strstr(msg, t[i].want) : msg[0] != '\0')
			fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, t[i].want);
		free(msg);
	}
	/* /mutate suspends it and names the default queue; leaves its JobSet */
	{
		char *body = review(TJ_GVK, "CREATE", "alice", TRAINJOB(""), "null");
		webhook_reply_t r;
		json_t *root, *patch;

		run(WEBHOOK_MUTATE, body, &r, &root);
		assert_string_equal(r.decision, "patched");
		patch = golden_reply_patch(json_object_get(root, "response"));
		assert_non_null(op_at(patch, "/spec/suspend"));
		assert_non_null(op_at(patch, "/metadata/labels"));
		json_decref(patch);
		json_decref(root);
		webhook_reply_deinit(&r);
		free(body);
		body = review(JS_GVK, "CREATE", TRAINER_SA, TJ_JOBSET("true", ""), "null");
		run(WEBHOOK_MUTATE, body, &r, &root);
		assert_string_equal(r.decision, "allowed");
		json_decref(root);
		webhook_reply_deinit(&r);
		free(body);
	}
}

/* ---- Kinds the controller does not watch (issue 31, part 5) ---- */

#define JOB_OBJ                                                                                    \
	"{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},"             \
	"\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"m\",\"resources\":{"        \
	"\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}"

/* A copy of text with every "nvidia.com/gpu" asking for cpu instead. */
static char *without_gpu(const char *text)
{
	static const char gpu[] = "nvidia.com/gpu";
	char *s = strdup(text), *at;

	assert_non_null(s);
	while ((at = strstr(s, gpu)))
		memmove(at, "cpu", 4), memmove(at + 3, at + sizeof(gpu) - 1, strlen(at + 14) + 1);
	return s;
}

/* Against a snapshot whose controller watches Jobs, Pods, StatefulSets and
 * TrainJobs but no JobSet, RayJob or RayCluster (their CRDs not served, or
 * not listed yet): a GPU JobSet, RayJob or RayCluster is refused at
 * creation, by /mutate and /validate alike, naming the collection and when
 * to retry, never suspended (nothing would release it); so is a TrainJob,
 * whose pod sets are its JobSet's, and a JobSet's UPDATE that gives it its
 * first GPU. A JobSet that already asked for GPUs is judged by the usual
 * rules, a CPU-only one is not gpuq's, and Jobs and Deployments (Pods) are
 * held as ever. With JobSets watched it is suspended again. */
static void test_unwatched_kinds(void **state)
{
	const policy_api_t some[] = {{"batch", "jobs"},
				     {"", "pods"},
				     {"apps", "statefulsets"},
				     {"trainer.kubeflow.org", "trainjobs"}};
	const policy_api_t more[] = {{"batch", "jobs"}, {"jobset.x-k8s.io", "jobsets"}};
	policy_opts_t o = {.watch_declared = true, .watched = some, .n_watched = 4};
	char *cpu_js = without_gpu(JOBSET("", "", ""));
	const struct {
		webhook_endpoint_t ep;
		const char *group, *version, *kind, *op, *obj, *old;
		const char *want; /* in the message; "patched" or "allowed": its decision */
	} t[] = {
	    {WEBHOOK_MUTATE, JS_GVK, "CREATE", JOBSET("", "", ""), "null",
	     "JobSet \"llama\": refused: gpuq does not watch jobsets.jobset.x-k8s.io (not served "
	     "by the apiserver, or not listed yet), so nothing would queue it, and held it would "
	     "wait for good; a kind whose CRD is installed after gpuq started is watched within "
	     "seconds: retry shortly"},
	    {WEBHOOK_VALIDATE, JS_GVK, "CREATE", JOBSET("\"suspend\":true,", "", ""), "null",
	     "gpuq does not watch jobsets.jobset.x-k8s.io"},
	    {WEBHOOK_VALIDATE, JS_GVK, "UPDATE", JOBSET("\"suspend\":true,", "", ""), cpu_js,
	     "gpuq does not watch jobsets.jobset.x-k8s.io"},
	    {WEBHOOK_VALIDATE, JS_GVK, "UPDATE", JOBSET("\"suspend\":true,", "", ""),
	     JOBSET("\"suspend\":true,", "", ""), "allowed"},
	    {WEBHOOK_MUTATE, JS_GVK, "CREATE", cpu_js, "null", "allowed"},
	    {WEBHOOK_MUTATE, RJ_GVK, "CREATE", RAYJOB(SHUT, ""), "null",
	     "RayJob \"rayjob-sample\": refused: gpuq does not watch rayjobs.ray.io"},
	    {WEBHOOK_MUTATE, RC_GVK, "CREATE",
	     "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":"
	     "\"rc\"},\"spec\":" RAY_CLUSTER("", "") "}",
	     "null", "gpuq does not watch rayclusters.ray.io"},
	    {WEBHOOK_MUTATE, TJ_GVK, "CREATE", TRAINJOB(""), "null",
	     "TrainJob \"llama\": refused: gpuq does not watch jobsets.jobset.x-k8s.io, through "
	     "which it is queued"},
	    {WEBHOOK_MUTATE, "batch", "v1", "Job", "CREATE", JOB_OBJ, "null", "patched"},
	    {WEBHOOK_MUTATE, "apps", "v1", "Deployment", "CREATE",
	     "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
	     "\"spec\":{\"replicas\":2,\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},"
	     "\"spec\":{\"containers\":[{\"name\":\"s\",\"resources\":{\"limits\":{"
	     "\"nvidia.com/gpu\":\"1\"}}}]}}}}",
	     "null", "patched"},
	};
	policy_t *p, *saved = g_policy;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(policy_load_dir("unit/golden/policy", &o, &p, &d), GPUQ_OK);
	g_policy = p;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char *body = review(t[i].group, t[i].version, t[i].kind, t[i].op, "alice", t[i].obj,
				    t[i].old);
		webhook_reply_t r;
		json_t *root;
		bool decision = !strcmp(t[i].want, "patched") || !strcmp(t[i].want, "allowed");

		run(t[i].ep, body, &r, &root);
		if (decision
			? strcmp(r.decision, t[i].want) != 0
			: strcmp(r.decision, "denied") != 0 || !strstr(message(root), t[i].want))
			fail_msg("case %zu: %s: %s, want %s", i, r.decision, r.body, t[i].want);
		json_decref(root);
		webhook_reply_deinit(&r);
		free(body);
	}
	policy_unref(p);

	/* JobSets watched now: held again */
	o.watched = more;
	o.n_watched = 2;
	assert_int_equal(policy_load_dir("unit/golden/policy", &o, &p, &d), GPUQ_OK);
	g_policy = p;
	{
		char *body = review(JS_GVK, "CREATE", "alice", JOBSET("", "", ""), "null");
		webhook_reply_t r;
		json_t *root;

		run(WEBHOOK_MUTATE, body, &r, &root);
		assert_string_equal(r.decision, "patched");
		json_decref(root);
		webhook_reply_deinit(&r);
		free(body);
	}
	g_policy = saved;
	policy_unref(p);
	free(cpu_js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jobset_mutate),      cmocka_unit_test(test_jobset_validate),
	    cmocka_unit_test(test_jobset_children),    cmocka_unit_test(test_sets_mutate),
	    cmocka_unit_test(test_sets_validate),      cmocka_unit_test(test_set_pods),
	    cmocka_unit_test(test_ray_mutate),	       cmocka_unit_test(test_ray_validate),
	    cmocka_unit_test(test_trainjob_admission), cmocka_unit_test(test_edits_by_row),
	    cmocka_unit_test(test_topology_edits),     cmocka_unit_test(test_unwatched_kinds),
	    cmocka_unit_test(test_gpuq_keys),
	};

	return cmocka_run_group_tests_name("webhook_kinds", tests, setup, teardown);
}

/* Unit tests of workload/: a watched object as the controller sees it
 * (workload_decode, then workload_resolve against a policy), decoded by the
 * admission rules' own code: LimitRange defaults in a Job's template,
 * priorities, pod groups, status, timestamps, bad input and caps. That it
 * agrees with the rules on every golden case is in test_webhook.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workload/workload.h"
#include "unit/workload_fixtures.h"

/* ---- workload_decode and workload_resolve ---- */

/* A GPU Job whose template names GPUs only: the LimitRange gives cpu and
 * memory, as the Job's Pods will get them. */
static void test_object_job_limitrange_defaults(void **state)
{
	policy_t *p = obj_policy();
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	assert_int_equal(
	    obj_decode(
		p,
		OBJ_META(
		    JOB_API, "train",
		    ",'labels':{'gpuq.dev/queue-name':'default'}") ",'spec':{'suspend':true,'"
								   "template':{'spec':{'containers'"
								   ":[{'name':'c',"
								   "'resources':{'limits':{'nvidia."
								   "com/gpu':'2'}}}]}}}}",
		&o, &d),
	    GPUQ_OK);
	assert_int_equal(o->kind, WORKLOAD_KIND_JOB);
	assert_string_equal(o->namespace_, "team-a");
	assert_string_equal(o->name, "train");
	assert_string_equal(o->uid, "uid-train");
	assert_string_equal(o->resource_version, "42");
	assert_int_equal(o->created_ms, MAY_1_NOON);
	assert_string_equal(o->queue, "default");
	assert_true(o->gpu);
	assert_true(o->suspend);
	assert_false(o->admitted);
	assert_false(o->finished);
	assert_int_equal(o->pods, 1);
	assert_int_equal(obj_amount(o, "nvidia.com/gpu"), 2);
	assert_int_equal(obj_amount(o, "cpu"), 500); /* millicores, from defaultRequest */
	assert_int_equal(obj_amount(o, "memory"), 1073741824);
	assert_int_equal(o->podsets[0].n_requests, 3);
	{
		char q[QUOTA_QTY_FMT_MAX];

		assert_int_equal(quota_qty_format(&obj_request(o, "memory")->qty, q, sizeof(q)),
				 GPUQ_OK);
		assert_string_equal(q, "1Gi");
	}
	/* no class named: the global default */
	assert_string_equal(o->priority_class, "low");
	assert_int_equal(o->priority, 10);
	assert_false(o->priority_class_unknown);
	assert_null(o->x->owner_kind);
	assert_null(o->x->phase);
	workload_destroy(o);
	workload_destroy(NULL); /* NULL is fine */
	policy_unref(p);
}

/* Table: the fields the controller reads, for Jobs and Pods. */
static void test_object_table(void **state)
{
	static const struct {
		const char *name;   /* case */
		const char *json;   /* the object, ' for " */
		bool gpu;	    /* asks for a GPU */
		int64_t pods;	    /* pods admitted at once */
		int32_t priority;   /* resolved priority */
		const char *pclass; /* priority class, NULL for none */
		int64_t gpus;	    /* per-pod nvidia.com/gpu amount (-1: none) */
		int64_t cpu_milli;  /* per-pod cpu amount (-1: none) */
		bool finished;	    /* Job finished / Pod done */
		const char *queue;  /* queue label, NULL for none */
	} t[] = {
	    {"job parallelism 4, completions 2",
	     OBJ_META(
		 JOB_API, "pc",
		 ",'labels':{'kueue.x-k8s.io/queue-name':'research'}") ",'spec':{'parallelism':4,'"
								       "completions':2,'suspend':"
								       "true,'template':{'spec':{"
								       "'priorityClassName':'high',"
								       "'containers':[{'name':'c','"
								       "resources':{'limits':{"
								       "'nvidia.com/"
								       "gpu':1,'cpu':'2'}}}]}}}}",
	     true, 2, 1000, "high", 1, 2000, false, "research"},
	    {"job parallelism 4, no completions",
	     OBJ_META(JOB_API, "p4", "") ",'spec':{'parallelism':4,'template':{'spec':{"
					 "'containers':[{'name':'c','resources':{'requests':{"
					 "'nvidia.com/gpu':'1','cpu':'100m'}}}]}}}}",
	     true, 4, 10, "low", 1, 100, false, NULL},
	    {"job with no GPU",
	     OBJ_META(JOB_API, "cpu", "") ",'spec':{'template':{'spec':{'containers':[{"
					  "'name':'c','resources':{'requests':{'cpu':'3'}}}]}}}}",
	     false, 1, 10, "low", -1, 3000, false, NULL},
	    {"finished job",
	     OBJ_META(
		 JOB_API, "done",
		 ",'annotations':{'gpuq.dev/admitted':'true'}") ",'spec':{'suspend':false,'"
								"template':{'spec':{'containers':[{"
								"'name':'c',"
								"'resources':{'limits':{'nvidia."
								"com/"
								"gpu':'8'}}}]}}},'status':{'"
								"succeeded':3,"
								"'failed':1,'conditions':[{'type':'"
								"Suspended','status':'False'},"
								"{'type':'Complete','status':'True'"
								"}]}}",
	     true, 1, 10, "low", 8, 500, true, NULL},
	    {"failed job",
	     OBJ_META(JOB_API, "f",
		      "") ",'spec':{'template':{'spec':{'containers':[]}}},"
			  "'status':{'conditions':[{'type':'Failed','status':'True'}]}}",
	     false, 1, 10, "low", -1, -1, true, NULL},
	    {"job whose Complete condition is not true",
	     OBJ_META(JOB_API, "nf", "") ",'spec':{},'status':{'conditions':[{'type':'Complete',"
					 "'status':'False'}]}}",
	     false, 1, 10, "low", -1, -1, false, NULL},
	    {"pod with priorityClassName",
	     OBJ_META(POD_API, "pp",
		      "") ",'spec':{'priorityClassName':'high','containers':[{"
			  "'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}",
	     true, 1, 1000, "high", 1, -1, false, NULL},
	    {"pod whose spec.priority disagrees with its class (the class decides)",
	     OBJ_META(POD_API, "ps", "") ",'spec':{'priority':7,'priorityClassName':'high',"
					 "'containers':[]}}",
	     false, 1, 1000, "high", -1, -1, false, NULL},
	    {"job template forging priority 2000000000, no class (the default decides)",
	     OBJ_META(JOB_API, "forged", "") ",'spec':{'template':{'spec':{'priority':2000000000,"
					     "'containers':[{'name':'c','resources':{'limits':{"
					     "'nvidia.com/gpu':'8'}}}]}}}}",
	     true, 1, 10, "low", 8, 500, false, NULL},
	    {"job template forging priority beside a class (the class decides)",
	     OBJ_META(JOB_API, "forged2",
		      "") ",'spec':{'template':{'spec':{'priority':"
			  "2000000000,'priorityClassName':'high','containers':[]}}}}",
	     false, 1, 1000, "high", -1, -1, false, NULL},
	    {"pod with an unknown class",
	     OBJ_META(POD_API, "pu", "") ",'spec':{'priorityClassName':'nope'}}", false, 1, 0,
	     "nope", -1, -1, false, NULL},
	    {"pod asking for GPUs through a claim template",
	     OBJ_META(POD_API, "dra", "") ",'spec':{'resourceClaims':[{'name':'g',"
					  "'resourceClaimTemplateName':'two-gpus'}],'containers':[{"
					  "'name':'c','resources':{'requests':{'cpu':'1'}}}]}}",
	     true, 1, 10, "low", 2, 1000, false, NULL},
	    {"succeeded pod",
	     OBJ_META(POD_API, "sp", "") ",'spec':{},'status':{'phase':'Succeeded'}}", false, 1, 10,
	     "low", -1, -1, true, NULL},
	    {"running pod", OBJ_META(POD_API, "rp", "") ",'spec':{},'status':{'phase':'Running'}}",
	     false, 1, 10, "low", -1, -1, false, NULL},
	};
	policy_t *p = obj_policy();
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		workload_t *o = NULL;
		gpuq_diag_t d;

		if (obj_decode(p, t[i].json, &o, &d))
			fail_msg("%s: refused: %s", t[i].name, d.msg);
		if (o->gpu != t[i].gpu || o->pods != t[i].pods || o->priority != t[i].priority ||
		    obj_amount(o, "nvidia.com/gpu") != t[i].gpus ||
		    obj_amount(o, "cpu") != t[i].cpu_milli || o->finished != t[i].finished)
			fail_msg("%s: gpu %d pods %lld priority %d gpus %lld cpu %lld finished %d",
				 t[i].name, o->gpu, (long long)o->pods, o->priority,
				 (long long)obj_amount(o, "nvidia.com/gpu"),
				 (long long)obj_amount(o, "cpu"), o->finished);
		if (t[i].pclass ? !o->priority_class || strcmp(o->priority_class, t[i].pclass)
				: o->priority_class != NULL)
			fail_msg("%s: priority class %s", t[i].name,
				 o->priority_class ? o->priority_class : "(none)");
		if (t[i].queue ? !o->queue || strcmp(o->queue, t[i].queue) : o->queue != NULL)
			fail_msg("%s: queue %s", t[i].name, o->queue ? o->queue : "(none)");
		assert_int_equal(o->priority_class_unknown,
				 !strcmp(t[i].name, "pod with an unknown "
						    "class"));
		workload_destroy(o);
		o = NULL;
	}
	policy_unref(p);
}

/* Table: a RuntimeClass's overhead, as the RuntimeClass admission plugin
 * gives it to each Pod a template makes: added once to the effective
 * request (max of the containers' sum and the largest init container, plus
 * the overhead); a Pod already has it; a template whose Pods the plugin
 * would refuse is refused, in its words. */
static void test_object_runtime_overhead(void **state)
{
#define RT_JOB(name, spec)                                                                         \
	OBJ_META(JOB_API, name, "") ",'spec':{'suspend':true,'template':{'spec':{" spec "}}}}"
#define RT_C(cpu) "{'name':'c','resources':{'requests':{'cpu':'" cpu "','memory':'1Gi'}}}"
	static const struct {
		const char *name;    /* case */
		const char *json;    /* the object, ' for " */
		int64_t cpu_milli;   /* per-pod cpu amount */
		int64_t memory;	     /* per-pod memory bytes */
		const char *refused; /* NULL, or what the refusal says */
	} t[] = {
	    {"job naming kata",
	     RT_JOB("k", "'runtimeClassName':'kata','containers':[" RT_C("1") "]"), 1250,
	     (1LL << 30) + (128LL << 20), NULL},
	    {"job naming kata, an init container larger than the app",
	     RT_JOB("ki", "'runtimeClassName':'kata','initContainers':[" RT_C(
			      "3") "],'containers':[" RT_C("1") "," RT_C("1") "]"),
	     3250, (2LL << 30) + (128LL << 20),
	     NULL}, /* cpu: the init's 3; memory: the app's 2Gi */
	    {"job naming kata with kata's own overhead",
	     RT_JOB("ko", "'runtimeClassName':'kata','overhead':{'cpu':'250m','memory':'128Mi'},"
			  "'containers':[" RT_C("1") "]"),
	     1250, (1LL << 30) + (128LL << 20), NULL},
	    {"job naming a class with no overhead",
	     RT_JOB("kp", "'runtimeClassName':'plain','containers':[" RT_C("1") "]"), 1000,
	     1LL << 30, NULL},
	    {"job naming no class", RT_JOB("kn", "'containers':[" RT_C("1") "]"), 1000, 1LL << 30,
	     NULL},
	    {"pod naming kata: its overhead is already set",
	     OBJ_META(POD_API, "pk",
		      "") ",'spec':{'runtimeClassName':'kata','overhead':{'cpu':'250m',"
			  "'memory':'128Mi'},'containers':[" RT_C("1") "]}}",
	     1250, (1LL << 30) + (128LL << 20), NULL},
	    {"pod naming a class gone since it was created",
	     OBJ_META(POD_API, "pg",
		      "") ",'spec':{'runtimeClassName':'gone','containers':[" RT_C("1") "]}}",
	     1000, 1LL << 30, NULL},
	    {"job naming a class that does not exist",
	     RT_JOB("kx", "'runtimeClassName':'nope','containers':[" RT_C("1") "]"), 0, 0,
	     "Job \"kx\": spec.template.spec: pod rejected: RuntimeClass \"nope\" not found: its "
	     "Pods would be refused, so it waits outside the queue until they would not"},
	    {"job whose overhead is not its class's",
	     RT_JOB("km", "'runtimeClassName':'kata','overhead':{'cpu':'1'},'containers':[" RT_C(
			      "1") "]"),
	     0, 0, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
	    {"job with an overhead and a class of none",
	     RT_JOB("kz", "'runtimeClassName':'plain','overhead':{'cpu':'1'},'containers':[" RT_C(
			      "1") "]"),
	     0, 0,
	     "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"},
	};
#undef RT_C
#undef RT_JOB
	policy_t *p = obj_policy();
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		workload_t *o = NULL;
		gpuq_diag_t d = {""};
		int rc = obj_decode(p, t[i].json, &o, &d);

		if (t[i].refused) {
			if (rc != GPUQ_EINVAL || !strstr(d.msg, t[i].refused))
				fail_msg("%s: rc %d, message %s", t[i].name, rc, d.msg);
			continue;
		}
		if (rc)
			fail_msg("%s: refused: %s", t[i].name, d.msg);
		if (obj_amount(o, "cpu") != t[i].cpu_milli ||
		    obj_amount(o, "memory") != t[i].memory)
			fail_msg("%s: cpu %lld memory %lld", t[i].name,
				 (long long)obj_amount(o, "cpu"),
				 (long long)obj_amount(o, "memory"));
		/* without a policy nothing is known of any class: no overhead added */
		assert_int_equal(workload_resolve(o, NULL, &d), GPUQ_OK);
		workload_destroy(o);
	}
	policy_unref(p);
}

/* A pod group's member marked not retriable
 * (kueue.x-k8s.io/retriable-in-group: "false"; any other value, or none,
 * is retriable), and a CPU-only member: a member all the same. */
static void test_object_pod_group_retriable(void **state)
{
	static const char *const values[] = {"'false'", "'true'", "'no'", NULL};
	policy_t *p = obj_policy();
	(void)state;

	for (size_t i = 0; i < 4; i++) {
		char text[1024];
		workload_t *o = NULL;
		gpuq_diag_t d;

		snprintf(
		    text, sizeof(text),
		    OBJ_META(POD_API, "g-1",
			     ",'labels':{'kueue.x-k8s.io/pod-group-name':'g'},'annotations':"
			     "{'kueue.x-k8s.io/pod-group-total-count':'2'%s%s}") ",'spec':{"
										 "'containers':"
										 "[{'name':'c'}]"
										 "}}",
		    values[i] ? ",'kueue.x-k8s.io/retriable-in-group':" : "",
		    values[i] ? values[i] : "");
		assert_int_equal(obj_decode(p, text, &o, &d), GPUQ_OK);
		assert_string_equal(o->x->pod_group, "g");
		assert_false(o->gpu);
		assert_int_equal(o->x->unretriable, i == 0);
		workload_destroy(o);
	}
	policy_unref(p);
}

/* A Kueue pod-group member, gated, owned by a Job, with its scheduling
 * constraints and status. */
static void test_object_pod_group_member(void **state)
{
	policy_t *p = obj_policy();
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	assert_int_equal(
	    obj_decode(
		p,
		OBJ_META(
		    POD_API, "g-0",
		    ",'labels':{'kueue.x-k8s.io/pod-group-name':'g','gpuq.dev/queue-name':"
		    "'default'},'annotations':{'kueue.x-k8s.io/pod-group-total-count':'3'},"
		    "'ownerReferences':[{'apiVersion':'v1','kind':'ConfigMap','name':'x',"
		    "'uid':'u0'},{'apiVersion':'batch/v1','kind':'Job','name':'train',"
		    "'uid':'uid-train','controller':true}]") ",'spec':{'nodeName':'n1','"
							     "schedulingGates':[{'name':'other'},{'"
							     "name':"
							     "'gpuq.dev/"
							     "admission'}],'nodeSelector':{'gpu':'"
							     "h100','zone':''},"
							     "'tolerations':[{'key':'nvidia.com/"
							     "gpu','operator':'Exists','effect':"
							     "'NoSchedule'},{'key':'k','value':'v'}"
							     ",{'operator':'Exists'}],"
							     "'containers':[{'name':'c','resources'"
							     ":{'limits':{'nvidia.com/gpu':'1',"
							     "'memory':'4Gi'}}}],'overhead':{'"
							     "memory':'1Gi'}},'status':{'phase':'"
							     "Running',"
							     "'conditions':[{'type':'PodScheduled',"
							     "'status':'True'},{'type':'Ready',"
							     "'status':'True'}]}}",
		&o, &d),
	    GPUQ_OK);
	assert_int_equal(o->kind, WORKLOAD_KIND_POD);
	assert_true(o->gpu);
	assert_int_equal(o->pods, 1);
	assert_string_equal(o->x->pod_group, "g");
	assert_int_equal(o->x->pod_group_total, 3);
	assert_true(o->gated);
	assert_false(o->suspend);
	assert_string_equal(o->queue, "default");
	assert_string_equal(o->x->owner_api_version, "batch/v1");
	assert_string_equal(o->x->owner_kind, "Job");
	assert_string_equal(o->x->owner_name, "train");
	assert_string_equal(o->x->owner_uid, "uid-train");
	assert_string_equal(o->x->phase, "Running");
	assert_true(o->ready);
	assert_int_equal(o->ready_pods, 1);
	assert_false(o->finished);
	assert_string_equal(o->x->node_name, "n1");
	/* a Pod as it is: no LimitRange defaults (LimitRanger ran at its
	 * creation), its overhead counted */
	assert_int_equal(obj_amount(o, "cpu"), -1);
	assert_int_equal(obj_amount(o, "memory"), 5LL << 30);
	assert_int_equal(o->podsets[0].n_node_selector, 2);
	assert_string_equal(o->podsets[0].node_selector[0].key, "gpu");
	assert_string_equal(o->podsets[0].node_selector[0].value, "h100");
	assert_string_equal(o->podsets[0].node_selector[1].key, "zone");
	assert_string_equal(o->podsets[0].node_selector[1].value, "");
	assert_int_equal(o->podsets[0].n_tolerations, 3);
	assert_string_equal(o->podsets[0].tolerations[0].key, "nvidia.com/gpu");
	assert_string_equal(o->podsets[0].tolerations[0].op, "Exists");
	assert_null(o->podsets[0].tolerations[0].value);
	assert_string_equal(o->podsets[0].tolerations[0].effect, "NoSchedule");
	assert_string_equal(o->podsets[0].tolerations[1].value, "v");
	assert_null(o->podsets[0].tolerations[1].op);
	assert_null(o->podsets[0].tolerations[2].key);
	workload_destroy(o);
	o = NULL;
	policy_unref(p);
}

/* Job status counts, the admitted mark, and decoding without a policy. */
/* test_object_compact's Pod, around its long annotation. */
static const char COMPACT_META_A[] =
    "{" POD_API ",'metadata':{'name':'web-0','namespace':'team-a','uid':'uid-web-0',"
    "'resourceVersion':'42','creationTimestamp':'2024-05-01T12:00:00Z',"
    "'labels':{'gpuq.dev/queue-name':'default',"
    "'leaderworkerset.sigs.k8s.io/name':'lws-a',"
    "'leaderworkerset.sigs.k8s.io/group-index':'2',"
    "'leaderworkerset.sigs.k8s.io/worker-index':'1'},"
    "'annotations':{'gpuq.dev/flavors':'nvidia.com/gpu=h100',"
    "'gpuq.dev/status':'queued here','gpuq.dev/expected-runtime':'2h',"
    "'gpuq.dev/original-scheduling':'";
static const char COMPACT_META_B[] =
    "'},'ownerReferences':[{'apiVersion':'apps/v1','kind':'StatefulSet',"
    "'name':'web','uid':'uid-web','controller':true}]},"
    "'spec':{'nodeName':'node-7','priorityClassName':'high','runtimeClassName':'kata-qemu',"
    "'schedulingGates':[{'name':'gate-a'},{'name':'gpuq.dev/admission'}],"
    "'nodeSelector':{'zone':'z1','rack':'r9'},"
    "'tolerations':[{'key':'tk','operator':'Equal','value':'tv','effect':'NoExecute'}],"
    "'overhead':{'example.com/ov':'2'},"
    "'resourceClaims':[{'name':'g','resourceClaimTemplateName':'two-gpus'}],"
    "'initContainers':[{'name':'init-x','resources':{'requests':{'example.com/i':'1'}}}],"
    "'containers':[{'name':'app-y','resources':{"
    "'requests':{'example.com/a':'3','cpu':'1'},"
    "'limits':{'example.com/l':'4','example.com/big':'9223372036854775807'}}}]},"
    "'status':{'phase':'Pending'}}";

/* A queued Job (one container asking for one GPU, as bench_cluster fills
 * the queue with) is what 100,000 workloads are made of: it sets none of
 * the members a Pod, a set member or an owned object carries, so it shares
 * workload_no_extra, and its one allocation (its resolve's room included)
 * stays within 560 bytes (545 today; 657 with those members inline). */
static void test_object_queued_job_small(void **state)
{
	char *json =
	    squote("{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'fill-12345',"
		   "'namespace':'fill-0','uid':'0f8b6a52-3c1d-4e5f-9a7b-1c2d3e4f5a6b',"
		   "'resourceVersion':'1234567','creationTimestamp':'2026-11-27T09:00:00Z',"
		   "'labels':{'gpuq.dev/queue-name':'default'},"
		   "'annotations':{'gpuq.dev/status':'Queued'}},'spec':{'suspend':true,"
		   "'template':{'spec':{'restartPolicy':'Never','containers':[{'name':'m',"
		   "'image':'x','resources':{'limits':{'nvidia.com/gpu':'1'},"
		   "'requests':{'nvidia.com/gpu':'1'}}}]}}},'status':{}}");
	workload_t *o = NULL;
	gpuq_diag_t d = {""};
	(void)state;

	assert_int_equal(workload_decode_json(json, strlen(json), NULL, &o, &d), GPUQ_OK);
	free(json);
	assert_ptr_equal(o->x, &workload_no_extra);
	assert_null(o->x->owner_uid);
	assert_int_equal(o->x->set_group, -1);
	assert_in_range(o->mem_room, 1, 560);
	workload_destroy(o);
}

/* A decode copies what it used into one allocation sized to it and moves
 * every member pointing into its scratch blocks (object.c: compact): a Pod
 * with a member of each kind (owner, set, gates, selector, tolerations,
 * claims, overhead, init and app containers with names no static string
 * has, gpuq's annotations, status), and an annotation longer than a
 * scratch block so the scratch is a chain. The scratch is overwritten when
 * it goes: a member left behind reads garbage here. */
static void test_object_compact(void **state)
{
	policy_t *p = obj_policy();
	char long_orig[3001], *json, *text;
	const workload_podset_t *ps;
	workload_t *o = NULL;
	gpuq_diag_t d = {""};
	size_t n;
	(void)state;

	memset(long_orig, 'o', sizeof(long_orig) - 1);
	long_orig[sizeof(long_orig) - 1] = '\0';
	n = 8192;
	text = malloc(n);
	assert_non_null(text);
	snprintf(text, n, "%s%s%s", COMPACT_META_A, long_orig, COMPACT_META_B);
	json = squote(text);
	free(text);
	assert_int_equal(workload_decode_json(json, strlen(json), NULL, &o, &d), GPUQ_OK);
	free(json);
	assert_string_equal(o->namespace_, "team-a");
	assert_string_equal(o->name, "web-0");
	assert_string_equal(o->uid, "uid-web-0");
	assert_string_equal(o->resource_version, "42");
	assert_string_equal(o->queue, "default");
	assert_string_equal(o->x->flavors, "nvidia.com/gpu=h100");
	assert_string_equal(o->x->original, long_orig);
	assert_true(o->status_hash == (gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, "queued here") | 1));
	assert_string_equal(o->x->expected_runtime, "2h");
	assert_string_equal(o->x->owner_api_version, "apps/v1");
	assert_string_equal(o->x->owner_kind, "StatefulSet");
	assert_string_equal(o->x->owner_name, "web");
	assert_string_equal(o->x->owner_uid, "uid-web");
	assert_int_equal(o->x->set_kind, WORKLOAD_KIND_LWS);
	assert_string_equal(o->x->set_name, "lws-a");
	assert_int_equal(o->x->set_group, 2);
	assert_string_equal(o->x->phase, "Pending");
	assert_string_equal(o->x->node_name, "node-7");
	assert_int_equal(o->x->n_other_gates, 1);
	assert_string_equal(o->x->other_gates[0], "gate-a");
	assert_int_equal(o->n_podsets, 1);
	ps = &o->podsets[0];
	assert_string_equal(ps->name, "main");
	assert_string_equal(ps->priority_class, "high");
	assert_string_equal(ps->runtime_class, "kata-qemu");
	assert_int_equal(ps->n_node_selector, 2);
	assert_string_equal(ps->node_selector[0].key, "zone");
	assert_string_equal(ps->node_selector[0].value, "z1");
	assert_string_equal(ps->node_selector[1].key, "rack");
	assert_string_equal(ps->node_selector[1].value, "r9");
	assert_int_equal(ps->n_tolerations, 1);
	assert_string_equal(ps->tolerations[0].key, "tk");
	assert_string_equal(ps->tolerations[0].op, "Equal");
	assert_string_equal(ps->tolerations[0].value, "tv");
	assert_string_equal(ps->tolerations[0].effect, "NoExecute");
	assert_int_equal(ps->n_claim_templates, 1);
	assert_string_equal(ps->claim_templates[0], "two-gpus");
	assert_int_equal(ps->n_overhead, 1);
	assert_string_equal(ps->overhead[0].name, "example.com/ov");
	assert_int_equal(ps->n_containers, 2);
	assert_string_equal(ps->containers[0].name, "init-x");
	assert_int_equal(ps->containers[0].n_requests, 1);
	assert_string_equal(ps->containers[0].requests[0].name, "example.com/i");
	assert_string_equal(ps->containers[1].name, "app-y");
	assert_int_equal(ps->containers[1].n_requests, 2);
	assert_string_equal(ps->containers[1].requests[0].name, "example.com/a");
	assert_string_equal(ps->containers[1].requests[1].name, "cpu");
	assert_int_equal(ps->containers[1].n_limits, 2);
	assert_string_equal(ps->containers[1].limits[0].name, "example.com/l");
	/* the largest quantity keeps every bit through the packed form */
	assert_string_equal(ps->containers[1].limits[1].name, "example.com/big");
	assert_true(workload_qty(&ps->containers[1].limits[1]).nano ==
		    (__int128)INT64_MAX * 1000000000);
	/* the first resolve fits the room left for it (its requests read as
	   before) */
	assert_int_equal(workload_resolve(o, p, &d), GPUQ_OK);
	assert_null(o->resolved);
	assert_int_equal(obj_amount(o, "example.com/a"), 3);
	assert_int_equal(obj_amount(o, "example.com/ov"), 2);
	assert_int_equal(obj_amount(o, "nvidia.com/gpu"), 2);
	assert_int_equal(o->priority, 1000);
	assert_string_equal(o->priority_class, "high");
	workload_destroy(o);
	policy_unref(p);
}

static void test_object_job_status(void **state)
{
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	assert_int_equal(
	    obj_decode(
		NULL,
		OBJ_META(
		    JOB_API, "run",
		    ",'annotations':{'gpuq.dev/admitted':'true'}") ",'spec':{'suspend':false,'"
								   "parallelism':3,'template':{'"
								   "spec':{"
								   "'priorityClassName':'high','"
								   "nodeSelector':{'a':'b'},"
								   "'containers':[{'name':'c','"
								   "resources':{'limits':{'nvidia."
								   "com/gpu':'1'}}}]}}},"
								   "'status':{'active':3,'ready':2,"
								   "'succeeded':0,'failed':1}}",
		&o, &d),
	    GPUQ_OK);
	assert_true(o->admitted);
	assert_false(o->suspend);
	assert_int_equal(o->pods, 3);
	assert_int_equal(o->active, 3);
	assert_int_equal(o->ready_pods, 2);
	assert_int_equal(o->succeeded, 0);
	assert_int_equal(o->failed, 1);
	assert_false(o->finished);
	/* without a policy no class resolves and no LimitRange applies */
	assert_true(o->priority_class_unknown);
	assert_int_equal(o->priority, 0);
	assert_int_equal(o->podsets[0].n_requests, 1);
	assert_int_equal(o->podsets[0].n_node_selector, 1);
	workload_destroy(o);
	o = NULL;
}

static void test_object_timestamps(void **state)
{
	static const struct {
		const char *ts;
		int64_t ms; /* -1: refused */
	} t[] = {
	    {"1970-01-01T00:00:00Z", 0},
	    {"2024-05-01T12:00:00Z", MAY_1_NOON},
	    {"2024-05-01T12:00:00.5Z", MAY_1_NOON + 500},
	    {"2024-05-01T12:00:00.123456789Z", MAY_1_NOON + 123},
	    {"2024-05-01T14:00:00+02:00", MAY_1_NOON},
	    {"2024-05-01T11:30:00-00:30", MAY_1_NOON},
	    {"2024-02-29T00:00:00Z", 1709164800000LL},
	    {"2000-03-01T00:00:00Z", 951868800000LL},
	    {"2024-05-01 12:00:00Z", -1},
	    {"2024-05-01T12:00:00", -1},
	    {"2024-13-01T12:00:00Z", -1},
	    {"2024-05-01T12:00:00.Z", -1},
	    {"2024-05-01T12:00:00Zx", -1},
	    {"yesterday", -1},
	    {"", -1},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		char json[512];
		workload_t *o = NULL;
		gpuq_diag_t d = {""};
		int rc;

		snprintf(json, sizeof(json),
			 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
			 "\"namespace\":\"n\",\"uid\":\"u\",\"creationTimestamp\":\"%s\"}}",
			 t[i].ts);
		rc = dec(NULL, json, strlen(json), &o, &d);
		if (t[i].ms < 0 ? rc != GPUQ_EINVAL : rc != GPUQ_OK || o->created_ms != t[i].ms)
			fail_msg("\"%s\": rc %d, %lld ms (%s)", t[i].ts, rc,
				 (long long)o->created_ms, d.msg);
		if (rc && !strstr(d.msg, "metadata.creationTimestamp"))
			fail_msg("\"%s\": %s", t[i].ts, d.msg);
		workload_destroy(o);
		o = NULL;
	}
}

/* Refusals name the field and the value. */
/* The wall-clock limit labels, gpuq's then Kueue's, on a GPU Job and a
 * Pod (any kind: the one decode reads them); a bad value on a GPU
 * workload is refused naming the label and the value, on a workload that
 * is not gpuq's it is not gpuq's to judge. */
static void test_object_max_exec_label(void **state)
{
#define GPU_JOB_SPEC                                                                               \
	",'spec':{'template':{'spec':{'containers':[{'name':'c','resources':{'limits':{"           \
	"'nvidia.com/gpu':'1'}}}]}}}}"
#define CPU_POD_SPEC ",'spec':{'containers':[{'name':'c'}]}}"
	static const struct {
		const char *json; /* ' for " */
		int32_t want;	  /* max_exec_s; -1: refused */
		const char *msg;  /* in diag when refused */
	} t[] = {
	    {OBJ_META(JOB_API, "j", "") GPU_JOB_SPEC, 0, NULL},
	    {OBJ_META(JOB_API, "j", ",'labels':{'gpuq.dev/max-exec-time-seconds':'20'}")
		 GPU_JOB_SPEC,
	     20, NULL},
	    {OBJ_META(JOB_API, "j", ",'labels':{'kueue.x-k8s.io/max-exec-time-seconds':'3600'}")
		 GPU_JOB_SPEC,
	     3600, NULL},
	    {OBJ_META(JOB_API, "j",
		      ",'labels':{'kueue.x-k8s.io/max-exec-time-seconds':'10',"
		      "'gpuq.dev/max-exec-time-seconds':'30'}") GPU_JOB_SPEC,
	     30, NULL}, /* gpuq's wins */
	    {OBJ_META(JOB_API, "j", ",'labels':{'gpuq.dev/max-exec-time-seconds':'2147483647'}")
		 GPU_JOB_SPEC,
	     2147483647, NULL},
	    {OBJ_META(JOB_API, "j", ",'labels':{'gpuq.dev/max-exec-time-seconds':'2147483648'}")
		 GPU_JOB_SPEC,
	     -1,
	     "Job \"j\": metadata.labels[gpuq.dev/max-exec-time-seconds]: must be a whole number "
	     "of seconds from 1 to 2147483647, not \"2147483648\""},
	    {OBJ_META(JOB_API, "j", ",'labels':{'kueue.x-k8s.io/max-exec-time-seconds':'0'}")
		 GPU_JOB_SPEC,
	     -1, "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: must be a whole number"},
	    {OBJ_META(JOB_API, "j", ",'labels':{'gpuq.dev/max-exec-time-seconds':'8h'}")
		 GPU_JOB_SPEC,
	     -1, "not \"8h\""},
	    {OBJ_META(JOB_API, "j", ",'labels':{'gpuq.dev/max-exec-time-seconds':'-5'}")
		 GPU_JOB_SPEC,
	     -1, "not \"-5\""},
	    {OBJ_META(POD_API, "p",
		      ",'labels':{'gpuq.dev/max-exec-time-seconds':'90'}") ",'spec':{'containers':["
									   "{'name':'c','resources'"
									   ":{'limits':{'nvidia."
									   "com/gpu':'1'}}}]}}",
	     90, NULL},
	    {OBJ_META(POD_API, "p", ",'labels':{'gpuq.dev/max-exec-time-seconds':'soon'}")
		 CPU_POD_SPEC,
	     0, NULL}, /* not gpuq's */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		workload_t *o = NULL;
		gpuq_diag_t d;
		int rc = obj_decode(NULL, t[i].json, &o, &d);

		if (t[i].want < 0) {
			if (rc != GPUQ_EINVAL || !strstr(d.msg, t[i].msg))
				fail_msg("case %zu: rc %d, %s", i, rc, d.msg);
			continue;
		}
		if (rc)
			fail_msg("case %zu: %s", i, d.msg);
		assert_int_equal(o->x->max_exec_s, t[i].want);
		workload_destroy(o);
	}
#undef GPU_JOB_SPEC
#undef CPU_POD_SPEC
}

static void test_object_bad_input(void **state)
{
	static const struct {
		const char *json; /* ' for " */
		const char *want; /* in diag */
	} t[] = {
	    {"{'apiVersion':", "object: not JSON"},
	    {"[1]", "gpuq decodes no such kind"},
	    {"{'apiVersion':'v1','kind':'ConfigMap'}", "apiVersion \"v1\", kind \"ConfigMap\""},
	    {"{'apiVersion':'batch/v1','kind':'Pod'}", "kind \"Pod\""},
	    {"{'apiVersion':'v1','kind':'Pod'}", "Pod \"\": metadata.name: Required value"},
	    {"{'apiVersion':'v1','kind':'Pod','metadata':[]}", "metadata: must be an object"},
	    {"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':'n'}}",
	     "Pod \"p\": metadata.uid: Required value"},
	    {"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':'n','uid':''}}",
	     "metadata.uid: Required value"},
	    {"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':'n','uid':7}}",
	     "metadata.uid: must be a string, not a number \"7\""},
	    {"{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p','namespace':'n','uid':'u'}}",
	     "metadata.creationTimestamp: Required value"},
	    {OBJ_META(POD_API, "p", ",'ownerReferences':{}") "}",
	     "metadata.ownerReferences: must be an array"},
	    {OBJ_META(POD_API, "p", ",'ownerReferences':[{'controller':true,'kind':'Job'}]") "}",
	     "metadata.ownerReferences[0].apiVersion: Required value"},
	    {OBJ_META(POD_API, "p", "") ",'spec':'x'}",
	     "Pod \"p\": spec: must be an object, not a string \"x\""},
	    {OBJ_META(JOB_API, "j", "") ",'spec':{'template':{'spec':{'containers':{}}}}}",
	     "Job \"j\": spec.template.spec.containers: must be an array"},
	    {OBJ_META(JOB_API, "j", "") ",'spec':{'parallelism':-1}}",
	     "spec.parallelism: invalid value \"-1\""},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'containers':[{'resources':{'limits':{"
					"'nvidia.com/gpu':'1.2.3'}}}]}}",
	     "spec.containers[0].resources.limits[nvidia.com/gpu]: invalid quantity \"1.2.3\""},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'priority':'high'}}",
	     "spec.priority: invalid value \"high\": must be a 32-bit integer"},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'priority':2147483648}}",
	     "spec.priority: invalid value \"2147483648\""},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'priority':[]}}",
	     "spec.priority: invalid value an array"},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'priorityClassName':1}}",
	     "spec.priorityClassName: must be a string"},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'nodeSelector':[]}}",
	     "spec.nodeSelector: must be an object"},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'nodeSelector':{'gpu':1}}}",
	     "spec.nodeSelector[gpu]: must be a string, not a number \"1\""},
	    {OBJ_META(JOB_API, "j", "") ",'spec':{'template':{'spec':{'tolerations':[1]}}}}",
	     "spec.template.spec.tolerations[0]: must be an object"},
	    {OBJ_META(POD_API, "p", "") ",'spec':{'tolerations':[{'key':['k']}]}}",
	     "spec.tolerations[0].key: must be a string, not an array"},
	    {OBJ_META(POD_API, "p", "") ",'status':[]}", "status: must be an object"},
	    {OBJ_META(POD_API, "p", "") ",'status':{'phase':1}}", "status.phase: must be a string"},
	    {OBJ_META(JOB_API, "j", "") ",'status':{'active':'2'}}",
	     "Job \"j\": status.active: invalid value \"2\""},
	    {OBJ_META(JOB_API, "j", "") ",'status':{'active':2.5}}",
	     "Job \"j\": status.active: invalid value \"2.5\": must be a whole number from 0 to "
	     "1099511627776"},
	    {OBJ_META(POD_API, "p", ",'ownerReferences':['x']") "}",
	     "Pod \"p\": metadata.ownerReferences[0]: must be an object, not a string \"x\""},
	    {OBJ_META(JOB_API, "j", "") ",'status':{'conditions':{}}}",
	     "status.conditions: must be an array"},
	    {OBJ_META(POD_API, "p", ",'labels':{'kueue.x-k8s.io/pod-group-name':'g'}") "}",
	     "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		workload_t *o = NULL;
		gpuq_diag_t d;

		if (obj_decode(NULL, t[i].json, &o, &d) != GPUQ_EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(d.msg, t[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, d.msg, t[i].want);
		assert_null(o); /* nothing on error */
		workload_destroy(o);
		o = NULL;
	}
}

/* Strings and arrays past their caps are refused, never truncated. */
static void test_object_caps(void **state)
{
	char *json = malloc(64 * 1024), big[WORKLOAD_STR_MAX + 2];
	workload_t *o = NULL;
	gpuq_diag_t d = {""};
	size_t n;
	(void)state;

	assert_non_null(json);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* a string one byte past the cap (318 bytes), then one at it (317) */
	for (int at = 0; at < 2; at++) {
		big[WORKLOAD_STR_MAX + 1 - at] = '\0';
		snprintf(json, 64 * 1024,
			 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
			 "\"namespace\":\"n\",\"uid\":\"u\",\"creationTimestamp\":"
			 "\"2024-05-01T12:00:00Z\"},\"spec\":{\"nodeSelector\":{\"k\":\"%s\"}}}",
			 big);
		memset(&d, 0, sizeof(d));
		n = strlen(json);
		if (!at) {
			assert_int_equal(dec(NULL, json, n, &o, &d), GPUQ_EINVAL);
			assert_non_null(strstr(d.msg, "spec.nodeSelector[k]: 318 bytes"));
		} else {
			assert_int_equal(dec(NULL, json, n, &o, &d), GPUQ_OK);
			assert_int_equal(strlen(o->podsets[0].node_selector[0].value),
					 WORKLOAD_STR_MAX);
		}
		workload_destroy(o);
		o = NULL;
	}
	/* one toleration too many */
	n = (size_t)snprintf(json, 64 * 1024,
			     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
			     "\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"creationTimestamp\":"
			     "\"2024-05-01T12:00:00Z\"},\"spec\":{\"tolerations\":[");
	for (int i = 0; i <= WORKLOAD_TOLERATIONS_MAX; i++)
		n += (size_t)snprintf(json + n, 64 * 1024 - n, "%s{\"key\":\"k%d\"}", i ? "," : "",
				      i);
	snprintf(json + n, 64 * 1024 - n, "]}}");
	assert_int_equal(dec(NULL, json, strlen(json), &o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "spec.tolerations: 33 entries, at most 32"));
	/* a body over the cap is refused before parsing */
	assert_int_equal(dec(NULL, json, JV_BYTES_MAX + 1, &o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "at most"));
	free(json);
}

/* ---- JobSet (the jobset.x-k8s.io PyTorch example's shape, with GPUs) ---- */

#define JOBSET_API "'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet'"
/* a driver Job of one pod and two worker Jobs of four pods each, 8 GPUs a
 * worker, with a LimitRange default for the driver's cpu */
#define JOBSET_SPEC(suspend, status)                                                               \
	",'spec':{'suspend':" suspend ",'replicatedJobs':["                                        \
	"{'name':'driver','template':{'spec':{'parallelism':1,'completions':1,'template':{"        \
	"'spec':{'containers':[{'name':'d','resources':{'limits':{'memory':'4Gi'}}}]}}}}},"        \
	"{'name':'workers','replicas':2,'template':{'spec':{'parallelism':4,'completions':4,"      \
	"'template':{'metadata':{'annotations':{'gpuq.dev/admitted':'true'}},'spec':{"             \
	"'priorityClassName':'high','nodeSelector':{'zone':'a'},'containers':[{'name':'w',"        \
	"'resources':{'limits':{'nvidia.com/gpu':'8'}}}]}}}}}]}" status "}"

static void test_jobset_podsets(void **state)
{
	policy_t *p = obj_policy();
	workload_t *o = NULL;
	gpuq_diag_t d;
	const workload_podset_t *drv, *wrk;
	(void)state;

	if (obj_decode(p,
		       OBJ_META(JOBSET_API, "llama", ",'labels':{'gpuq.dev/queue-name':'default'}")
			   JOBSET_SPEC("true", ""),
		       &o, &d))
		fail_msg("refused: %s", d.msg);
	assert_int_equal(o->kind, WORKLOAD_KIND_JOBSET);
	assert_string_equal(o->integ->kind_name, "JobSet");
	assert_true(o->suspend);
	assert_true(o->gpu);
	assert_int_equal(o->n_podsets, 2);
	assert_int_equal(o->pods, 9);
	drv = &o->podsets[0];
	wrk = &o->podsets[1];
	assert_string_equal(drv->name, "driver");
	assert_int_equal(drv->count, 1);
	assert_string_equal(drv->tmpl_ptr, "/spec/replicatedJobs/0/template/spec/template");
	assert_string_equal(drv->spec_field, "spec.replicatedJobs[0].template.spec.template.spec");
	assert_false(drv->gpu);
	assert_false(drv->has_meta);
	/* the LimitRange defaults a template's Pods will get */
	assert_int_equal(drv->n_requests, 2);
	assert_string_equal(wrk->name, "workers");
	assert_int_equal(wrk->count, 8); /* 2 Jobs x min(parallelism 4, completions 4) */
	assert_string_equal(wrk->tmpl_ptr, "/spec/replicatedJobs/1/template/spec/template");
	assert_true(wrk->gpu);
	assert_true(wrk->has_meta);
	assert_true(wrk->has_annotations);
	assert_true(wrk->tmpl_admitted);
	assert_int_equal(wrk->n_node_selector, 1);
	{
		const workload_request_t *g = NULL;
		for (size_t i = 0; i < wrk->n_requests; i++)
			if (!strcmp(wrk->requests[i].name, "nvidia.com/gpu"))
				g = &wrk->requests[i];
		assert_non_null(g);
		assert_int_equal(g->amount, 8);
	}
	/* the first pod set naming a class gives the priority */
	assert_string_equal(o->priority_class, "high");
	assert_int_equal(o->priority, 1000);
	assert_false(o->finished);
	workload_destroy(o);
	/* finished when Completed; Ready when every child Job is */
	assert_int_equal(
	    obj_decode(
		p,
		OBJ_META(JOBSET_API, "done", "") JOBSET_SPEC(
		    "false", ",'status':{'conditions':[{'type':'Completed','status':'True'}]}"),
		&o, &d),
	    GPUQ_OK);
	assert_true(o->finished);
	workload_destroy(o);
	assert_int_equal(
	    obj_decode(p,
		       OBJ_META(JOBSET_API, "up", "") JOBSET_SPEC(
			   "false", ",'status':{'replicatedJobsStatus':[{'name':'driver','ready':1,"
				    "'active':1},{'name':'workers','ready':2,'active':2}]}"),
		       &o, &d),
	    GPUQ_OK);
	assert_false(o->finished);
	assert_int_equal(o->ready_pods, 9);
	assert_int_equal(o->active, 3);
	workload_destroy(o);
	assert_int_equal(
	    obj_decode(p,
		       OBJ_META(JOBSET_API, "half", "") JOBSET_SPEC(
			   "false",
			   ",'status':{'replicatedJobsStatus':[{'name':'driver','ready':1},"
			   "{'name':'workers','ready':1}]}"),
		       &o, &d),
	    GPUQ_OK);
	assert_int_equal(o->ready_pods, 0);
	workload_destroy(o);
	policy_unref(p);
}

/* Kueue's cap of 18 pod sets (v1beta2); a replicatedJob of no pods is no
 * pod set (issue 31: the JobSet waited suspended for good: the core holds
 * pod sets of 1 pod or more). */
static void test_jobset_shapes(void **state)
{
	char json[4096];
	size_t n = 0;
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	n += (size_t)snprintf(json + n, sizeof(json) - n, "%s",
			      OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':[");
	for (int i = 0; i < 18; i++)
		n += (size_t)snprintf(json + n, sizeof(json) - n, "%s{'name':'r%d'}", i ? "," : "",
				      i);
	snprintf(json + n, sizeof(json) - n, "]}}");
	if (obj_decode(NULL, json, &o, &d))
		fail_msg("18 pod sets refused: %s", d.msg);
	assert_int_equal(o->n_podsets, 18);
	workload_destroy(o);
	if (obj_decode(NULL,
		       OBJ_META(JOBSET_API, "z",
				"") ",'spec':{'replicatedJobs':["
				    "{'name':'none','replicas':0},{'name':'w','replicas':2,"
				    "'template':{'spec':{'parallelism':3,'template':{}}}}]}}",
		       &o, &d))
		fail_msg("a zero-pod replicatedJob refused: %s", d.msg);
	assert_int_equal(o->n_podsets, 1);
	assert_string_equal(o->podsets[0].name, "w");
	assert_int_equal(o->podsets[0].count, 6);
	assert_string_equal(o->podsets[0].tmpl_ptr,
			    "/spec/replicatedJobs/1/template/spec/template");
	assert_int_equal(o->pods, 6);
	workload_destroy(o);
}

static void test_jobset_refusals(void **state)
{
	static const struct {
		const char *json; /* ' for " */
		const char *want; /* in diag */
	} t[] = {
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':{}}}",
	     "JobSet \"j\": spec.replicatedJobs: must be an array"},
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':[]}}",
	     "spec.replicatedJobs: Required value"},
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':[1]}}",
	     "spec.replicatedJobs[0]: must be an object"},
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':[{'template':{}}]}}",
	     "spec.replicatedJobs[0].name: Required value"},
	    {OBJ_META(JOBSET_API, "j",
		      "") ",'spec':{'replicatedJobs':[{'name':'a','replicas':-1}]}}",
	     "spec.replicatedJobs[0].replicas: invalid value \"-1\""},
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':[{'name':'a','template':{"
					   "'spec':{'template':[]}}}]}}",
	     "spec.replicatedJobs[0].template.spec.template: must be an object"},
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':[{'name':'a','template':{"
					   "'spec':{'parallelism':'x','template':{}}}}]}}",
	     "spec.replicatedJobs[0].template.spec.parallelism: invalid value \"x\""},
	    {OBJ_META(JOBSET_API, "j",
		      "") ",'spec':{'replicatedJobs':[{'name':'a','template':{"
			  "'spec':{'template':{'spec':{'containers':[{'resources':{"
			  "'limits':{'nvidia.com/gpu':'x'}}}]}}}}}]}}",
	     "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits["
	     "nvidia.com/gpu]: invalid quantity \"x\""},
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':["
					   "{'name':'a'},{'name':'b'},{'name':'c'},{'name':'d'},"
					   "{'name':'e'},{'name':'f'},{'name':'g'},{'name':'h'},"
					   "{'name':'i'},{'name':'j'},{'name':'k'},{'name':'l'},"
					   "{'name':'m'},{'name':'n'},{'name':'o'},{'name':'p'},"
					   "{'name':'q'},{'name':'r'},{'name':'s'}]}}",
	     "spec.replicatedJobs: more than 18 pod sets"},
	    /* every replicatedJob of no pods: nothing to run */
	    {OBJ_META(JOBSET_API, "j", "") ",'spec':{'replicatedJobs':["
					   "{'name':'a','replicas':0},{'name':'b','template':{"
					   "'spec':{'parallelism':0,'template':{}}}}]}}",
	     "spec.replicatedJobs: Required value: a JobSet of no replicatedJob with pods"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		workload_t *o = NULL;
		gpuq_diag_t d;

		if (obj_decode(NULL, t[i].json, &o, &d) != GPUQ_EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(d.msg, t[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, d.msg, t[i].want);
		assert_null(o);
	}
}

/* Which children pass through: a JobSet's Jobs; not a Job's Pods (the Job
 * rules' own), nor a Job owned by anything else. */
static void test_parent_of(void **state)
{
	(void)state;
	assert_ptr_equal(
	    workload_parent_of(WORKLOAD_KIND_JOB, "jobset.x-k8s.io/v1alpha2", "JobSet"),
	    workload_integration(WORKLOAD_KIND_JOBSET));
	assert_null(workload_parent_of(WORKLOAD_KIND_POD, "jobset.x-k8s.io/v1alpha2", "JobSet"));
	assert_null(workload_parent_of(WORKLOAD_KIND_POD, "batch/v1", "Job"));
	assert_null(workload_parent_of(WORKLOAD_KIND_JOB, "apps/v1", "Deployment"));
	assert_null(workload_parent_of(WORKLOAD_KIND_JOB, NULL, NULL));
	assert_true(
	    workload_creator(workload_integration(WORKLOAD_KIND_JOBSET),
			     "system:serviceaccount:jobset-system:jobset-controller-manager"));
	assert_false(workload_creator(workload_integration(WORKLOAD_KIND_JOBSET), "alice"));
	assert_int_equal(workload_kind_gvk("jobset.x-k8s.io", "v1alpha2", "JobSet"),
			 WORKLOAD_KIND_JOBSET);
	assert_int_equal(workload_kind_gvk("jobset.x-k8s.io", "v1", "JobSet"), WORKLOAD_KIND_OTHER);
}

/* What the controller watches comes from the rows: every kind held
 * (by its suspend field or its Pods' gates) names its collection, the path
 * its group, version and resource make; a kind not held itself (a
 * Deployment: its Pods are) names none; a CRD's collection (any group but
 * the built-in ones) is optional. Which parents make their own Pods. */
static void test_watched_collections(void **state)
{
	char want[256];
	int watched = 0;

	(void)state;
	assert_null(workload_integration(WORKLOAD_KIND_OTHER)->watch_path);
	for (int k = 1; k < WORKLOAD_KIND_COUNT; k++) {
		const workload_integration_t *in = workload_integration((workload_kind_t)k);
		bool builtin = !strcmp(in->group, "") || !strcmp(in->group, "batch") ||
			       !strcmp(in->group, "apps");

		if (in->hold == WORKLOAD_HOLD_NONE) {
			assert_null(in->watch_path);
			continue;
		}
		if (in->group[0])
			snprintf(want, sizeof(want), "/apis/%s/%s/%s", in->group, in->version,
				 in->resource);
		else
			snprintf(want, sizeof(want), "/api/%s/%s", in->version, in->resource);
		assert_non_null(in->watch_path);
		assert_string_equal(in->watch_path, want);
		assert_int_equal(in->watch_optional, !builtin);
		watched++;
	}
	assert_int_equal(watched, 8);
	assert_true(workload_makes_pods(workload_integration(WORKLOAD_KIND_JOB)));
	assert_true(workload_makes_pods(workload_integration(WORKLOAD_KIND_RAYCLUSTER)));
	assert_false(workload_makes_pods(workload_integration(WORKLOAD_KIND_JOBSET)));
	assert_false(workload_makes_pods(workload_integration(WORKLOAD_KIND_RAYJOB)));
	assert_false(workload_makes_pods(workload_integration(WORKLOAD_KIND_STATEFULSET)));
	assert_false(workload_makes_pods(workload_integration(WORKLOAD_KIND_POD)));
}

/* ---- sets: StatefulSet, LeaderWorkerSet, Deployment; a set's Pods ---- */

#define STS_API "'apiVersion':'apps/v1','kind':'StatefulSet'"
#define LWS_API "'apiVersion':'leaderworkerset.x-k8s.io/v1','kind':'LeaderWorkerSet'"

static void test_sets(void **state)
{
	policy_t *p = obj_policy();
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	/* the Kubernetes StatefulSet example's shape, 4 GPU replicas */
	if (obj_decode(
		p,
		OBJ_META(STS_API, "web", "") ",'spec':{'replicas':4,'serviceName':'web',"
					     "'template':{'spec':{'containers':[{'name':'s',"
					     "'resources':{'limits':{'nvidia.com/gpu':'8'}}}]}}}}",
		&o, &d))
		fail_msg("statefulset: %s", d.msg);
	assert_int_equal(o->kind, WORKLOAD_KIND_STATEFULSET);
	assert_int_equal(o->integ->hold, WORKLOAD_HOLD_GATES);
	assert_int_equal(o->pods, 4);
	assert_int_equal(o->replicas, 4);
	assert_true(o->fast_admission); /* OrderedReady by default */
	assert_int_equal(o->podsets[0].count, 4);
	assert_true(o->gpu);
	workload_destroy(o);
	assert_int_equal(obj_decode(p,
				    OBJ_META(STS_API, "par", "") ",'spec':{'podManagementPolicy':"
								 "'Parallel','template':{}}}",
				    &o, &d),
			 GPUQ_OK);
	assert_false(o->fast_admission);
	assert_int_equal(o->pods, 1);
	workload_destroy(o);
	/* the LeaderWorkerSet quickstart's shape: 2 groups of a leader and 3
	   workers, the leader on its own template */
	if (obj_decode(
		p,
		OBJ_META(LWS_API, "vllm", "") ",'spec':{'replicas':2,'startupPolicy':"
					      "'LeaderReady','leaderWorkerTemplate':{'size':4,"
					      "'leaderTemplate':{'spec':{'containers':[{'name':"
					      "'l','resources':{'limits':{'nvidia.com/gpu':'8',"
					      "'cpu':'4'}}}]}},'workerTemplate':{'spec':{"
					      "'containers':[{'name':'w','resources':{'limits':{"
					      "'nvidia.com/gpu':'8'}}}]}}}}}",
		&o, &d))
		fail_msg("lws: %s", d.msg);
	assert_int_equal(o->kind, WORKLOAD_KIND_LWS);
	assert_int_equal(o->replicas, 2);
	assert_int_equal(o->pods, 4); /* one group */
	assert_int_equal(o->n_podsets, 2);
	assert_string_equal(o->podsets[0].name, "leader");
	assert_int_equal(o->podsets[0].count, 1);
	assert_string_equal(o->podsets[0].tmpl_ptr, "/spec/leaderWorkerTemplate/leaderTemplate");
	assert_string_equal(o->podsets[1].name, "workers");
	assert_int_equal(o->podsets[1].count, 3);
	assert_string_equal(o->podsets[1].tmpl_ptr, "/spec/leaderWorkerTemplate/workerTemplate");
	assert_true(o->fast_admission);
	workload_destroy(o);
	/* size 1: the leader only, from the worker template */
	assert_int_equal(
	    obj_decode(p,
		       OBJ_META(LWS_API, "solo", "") ",'spec':{'leaderWorkerTemplate':"
						     "{'workerTemplate':{'spec':{}}}}}",
		       &o, &d),
	    GPUQ_OK);
	assert_int_equal(o->n_podsets, 1);
	assert_string_equal(o->podsets[0].tmpl_ptr, "/spec/leaderWorkerTemplate/workerTemplate");
	workload_destroy(o);
	assert_int_equal(obj_decode(p,
				    OBJ_META(LWS_API, "bad", "") ",'spec':{'leaderWorkerTemplate':"
								 "{'size':0,'workerTemplate':{}}}}",
				    &o, &d),
			 GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "spec.leaderWorkerTemplate.size: invalid value \"0\""));
	/* an LWS worker Pod: its set, group and pod set from its labels */
	if (obj_decode(
		p,
		OBJ_META(POD_API, "vllm-1-2",
			 ",'labels':{'leaderworkerset.sigs.k8s.io/name':'vllm',"
			 "'leaderworkerset.sigs.k8s.io/group-index':'1',"
			 "'leaderworkerset.sigs.k8s.io/worker-index':'2'},'ownerReferences':[{"
			 "'apiVersion':'apps/v1','kind':'StatefulSet','name':'vllm-1','uid':'s1',"
			 "'controller':true}]") ",'spec':{}}",
		&o, &d))
		fail_msg("lws pod: %s", d.msg);
	assert_int_equal(o->x->set_kind, WORKLOAD_KIND_LWS);
	assert_string_equal(o->x->set_name, "vllm");
	assert_int_equal(o->x->set_group, 1);
	assert_int_equal(o->x->set_podset, 1);
	workload_destroy(o);
	/* a StatefulSet's Pod: its controller owner */
	assert_int_equal(obj_decode(p,
				    OBJ_META(POD_API, "web-3",
					     ",'ownerReferences':[{'apiVersion':'apps/v1','kind':"
					     "'StatefulSet','name':'web','uid':'s2','controller':"
					     "true}]") ",'spec':{}}",
				    &o, &d),
			 GPUQ_OK);
	assert_int_equal(o->x->set_kind, WORKLOAD_KIND_STATEFULSET);
	assert_string_equal(o->x->set_name, "web");
	workload_destroy(o);
	/* a Deployment: each of its Pods a workload */
	assert_int_equal(workload_integration(workload_kind_of("apps/v1", "Deployment"))->hold,
			 WORKLOAD_HOLD_NONE);
	/* gate-family parents' children are gated, not passed through */
	assert_null(workload_parent_of(WORKLOAD_KIND_POD, "apps/v1", "StatefulSet"));
	policy_unref(p);
}

/* A StatefulSet's first ordinal and an LWS's surge, as sets.c reads them:
 * spec.ordinals.start (refused when not a whole number from 0), and
 * maxSurge as the LWS controller scales it (a count or a percentage of
 * spec.replicas rounded up, at most spec.replicas; anything else none). */
static void test_sets_numbering(void **state)
{
	static const struct {
		const char *spec; /* the StatefulSet's spec members before its template */
		int rc;
		int32_t first; /* x->first_ordinal; or in the message: */
		const char *msg;
	} sts[] = {
	    {"", GPUQ_OK, 0, NULL},
	    {"'ordinals':{},", GPUQ_OK, 0, NULL},
	    {"'ordinals':{'start':5},", GPUQ_OK, 5, NULL},
	    {"'ordinals':{'start':-1},", GPUQ_EINVAL, 0, "spec.ordinals.start: invalid value"},
	    {"'ordinals':7,", GPUQ_EINVAL, 0, "spec.ordinals"},
	};
	static const struct {
		const char *replicas, *surge; /* JSON; surge "" when absent */
		int32_t want;
	} lws[] = {
	    {"3", "", 0},	{"3", "1", 1},	   {"3", "'50%'", 2}, {"4", "'25%'", 1},
	    {"3", "'200%'", 3}, {"3", "5", 3},	   {"3", "'x'", 0},   {"3", "'10'", 0},
	    {"3", "-1", 0},	{"0", "'50%'", 0}, {"2", "'0%'", 0},
	};
	policy_t *p = obj_policy();
	gpuq_diag_t d;
	(void)state;

	for (size_t i = 0; i < sizeof(sts) / sizeof(*sts); i++) {
		char text[512];
		workload_t *o = NULL;
		int rc;

		snprintf(text, sizeof(text),
			 OBJ_META(STS_API, "web", "") ",'spec':{'replicas':2,%s'template':{}}}",
			 sts[i].spec);
		rc = obj_decode(p, text, &o, &d);
		if (rc != sts[i].rc)
			fail_msg("statefulset %zu: %s (%s)", i, gpuq_strerror(rc), d.msg);
		if (rc == GPUQ_OK)
			assert_int_equal(o->x->first_ordinal, sts[i].first);
		else if (!strstr(d.msg, sts[i].msg))
			fail_msg("statefulset %zu: \"%s\", want \"%s\"", i, d.msg, sts[i].msg);
		workload_destroy(o);
	}
	for (size_t i = 0; i < sizeof(lws) / sizeof(*lws); i++) {
		char text[512], rollout[128] = "";
		workload_t *o = NULL;

		if (lws[i].surge[0])
			snprintf(rollout, sizeof(rollout),
				 "'rolloutStrategy':{'type':'RollingUpdate','rollingUpdate"
				 "Configuration':{'maxSurge':%s}},",
				 lws[i].surge);
		snprintf(
		    text, sizeof(text),
		    OBJ_META(LWS_API, "vllm", "") ",'spec':{'replicas':%s,%s"
						  "'leaderWorkerTemplate':{'workerTemplate':{}}}}",
		    lws[i].replicas, rollout);
		if (obj_decode(p, text, &o, &d))
			fail_msg("lws %zu: %s", i, d.msg);
		if (o->x->surge != lws[i].want)
			fail_msg("lws %zu (replicas %s, maxSurge %s): surge %d, want %d", i,
				 lws[i].replicas, lws[i].surge, o->x->surge, lws[i].want);
		workload_destroy(o);
	}
	policy_unref(p);
}

/* The admission rules' view and the controller's resolve give a pod set one
 * effective request (workload_pod_default and workload_pod_request): the
 * LimitRange defaults, the RuntimeClass's overhead and the DRA claim's two
 * GPUs, the same amounts both ways. */
static void test_view_and_resolve_agree(void **state)
{
	static const char text[] = OBJ_META(
	    JOB_API, "agree",
	    "") ",'spec':{'suspend':true,"
		"'template':{'spec':{'runtimeClassName':'kata','resourceClaims':[{'name':'g',"
		"'resourceClaimTemplateName':'two-gpus'}],'containers':[{'name':'c',"
		"'resources':{'limits':{'memory':'4Gi'}}},{'name':'d'}]}}}}";
	static const struct {
		const char *name;
		int64_t amount; /* per pod, in core units */
	} want[] = {
	    {"cpu", 500 + 500 + 250}, /* two defaultRequests, kata's overhead */
	    {"memory", (4LL << 30) + (1LL << 30) + (128LL << 20)}, /* a limit alone, a default */
	    {"nvidia.com/gpu", 2},				   /* the claim template's */
	};
	policy_t *p = obj_policy();
	char *json = squote(text), err[256];
	quota_reslist_t requests, one, again;
	workload_view_t w;
	workload_t *o = NULL;
	gpuq_diag_t d = {""};
	size_t podset = 0;
	jv_doc_t doc;

	(void)state;
	assert_int_equal(dec(p, json, strlen(json), &o, &d), GPUQ_OK);
	assert_int_equal(jv_doc_parse(&doc, json, strlen(json), err, sizeof(err)), GPUQ_OK);
	assert_int_equal(workload_view_decode(&w, p, NULL, "team-a", o->kind, doc.root, &d),
			 GPUQ_OK);
	assert_int_equal(workload_view_default(&w, p, "team-a", &podset, &d), GPUQ_OK);
	assert_int_equal(workload_view_pod_request(&w.podsets[0], &requests, &one), GPUQ_OK);
	/* from requests made already: the same one pod */
	assert_int_equal(workload_view_pod_one(&w.podsets[0], &requests, &again), GPUQ_OK);
	assert_true(quota_reslist_same(&one, &again));
	assert_int_equal(w.podsets[0].dra_gpus, 2);
	assert_int_equal(o->podsets[0].dra_gpus, 2);
	assert_int_equal(one.n, o->podsets[0].n_requests);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const quota_qty_t *q = quota_reslist_get(&one, want[i].name);
		int64_t amt;

		assert_non_null(q);
		amt = quota_qty_amount(want[i].name, q);
		if (amt != want[i].amount || obj_amount(o, want[i].name) != want[i].amount)
			fail_msg("%s: view %lld, resolve %lld, want %lld", want[i].name,
				 (long long)amt, (long long)obj_amount(o, want[i].name),
				 (long long)want[i].amount);
	}
	workload_view_deinit(&w);
	jv_doc_free(&doc);
	workload_destroy(o);
	free(json);
	policy_unref(p);
}

/* An empty view from any memory: no pod set, nothing asked, its inline
 * pod set in place and its overhead list empty; deinit takes it. */
static void test_view_init(void **state)
{
	workload_view_t *w = malloc(sizeof(*w));

	(void)state;
	assert_non_null(w);
	memset(w, 0xa5, sizeof(*w));
	workload_view_init(w);
	assert_ptr_equal(w->podsets, &w->one);
	assert_int_equal(w->n_podsets, 0);
	assert_int_equal(w->one.pod.overhead.n, 0);
	assert_int_equal(w->one.pod.n_containers, 0);
	assert_null(w->one.pod.containers);
	assert_null(w->one.refs);
	assert_null(w->obj);
	assert_null(w->queue);
	assert_false(w->gpu);
	assert_false(w->one.gpu);
	assert_true(quota_qty_is_zero(&w->said_gpus));
	assert_int_equal(w->pods, 0);
	assert_string_equal(w->one.spec_field, "");
	assert_string_equal(w->gpu_resource, "");
	assert_null(w->unsupported);
	workload_view_deinit(w);
	free(w);
}

/* The view names the field of a member of the wrong type (its path is
 * written only for the refusal): each of a Job template's members the
 * rules read, and the Job's counts. */
static void test_view_refusals_name_fields(void **state)
{
	static const struct {
		const char *tmpl; /* the template's members, JSON with ' for " */
		const char *counts;
		const char *want;
	} cases[] = {
	    {"'metadata':'m'", "", "Job \"bad\": spec.template.metadata: must be an object"},
	    {"'metadata':{'labels':[1]}", "", "spec.template.metadata.labels: must be an object"},
	    {"'metadata':{'annotations':3}", "",
	     "spec.template.metadata.annotations: must be an object, not a number \"3\""},
	    {"'spec':{'schedulingGates':{}}", "",
	     "spec.template.spec.schedulingGates: must be an array"},
	    {"'spec':{'initContainers':'x'}", "",
	     "spec.template.spec.initContainers: must be an array, not a string \"x\""},
	    {"'spec':{'containers':[{'name':'a'},'b']}", "",
	     "spec.template.spec.containers[1]: must be an object"},
	    {"'spec':{'overhead':[1]}", "", "spec.template.spec.overhead: must be an object"},
	    {"'spec':{'overhead':{'cpu':'abc'}}", "",
	     "spec.template.spec.overhead[cpu]: invalid quantity: invalid quantity \"abc\""},
	    {"'spec':{'runtimeClassName':5}", "",
	     "spec.template.spec.runtimeClassName: must be a string, not a number \"5\""},
	    {"'spec':{'resourceClaims':['x']}", "",
	     "spec.template.spec.resourceClaims[0]: must be an object"},
	    {"'spec':{'containers':[{'name':'a'}]}", "'parallelism':-1,",
	     "spec.parallelism: invalid value \"-1\": must be a non-negative integer"},
	    {"'spec':{'containers':[{'name':'a'}]}", "'completions':'3',",
	     "spec.completions: invalid value \"3\": must be a non-negative integer"},
	    {"'spec':{'containers':[{'name':'a'}]}", "'parallelism':2,'completions':1,", NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[512], err[256], *json;
		gpuq_diag_t d = {""};
		workload_view_t w;
		jv_doc_t doc;
		int rc;

		snprintf(text, sizeof(text),
			 "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'bad'},"
			 "'spec':{%s'template':{%s}}}",
			 cases[i].counts, cases[i].tmpl);
		json = squote(text);
		assert_int_equal(jv_doc_parse(&doc, json, strlen(json), err, sizeof(err)), GPUQ_OK);
		rc =
		    workload_view_decode(&w, NULL, NULL, "team-a", WORKLOAD_KIND_JOB, doc.root, &d);
		if (!cases[i].want)
			assert_int_equal(rc, GPUQ_OK);
		else if (rc != GPUQ_EINVAL || !strstr(d.msg, cases[i].want))
			fail_msg("case %zu: rc %d, \"%s\", want \"%s\"", i, rc, d.msg,
				 cases[i].want);
		workload_view_deinit(&w);
		jv_doc_free(&doc);
		free(json);
	}
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_object_job_limitrange_defaults),
	    cmocka_unit_test(test_view_and_resolve_agree),
	    cmocka_unit_test(test_view_refusals_name_fields),
	    cmocka_unit_test(test_view_init),
	    cmocka_unit_test(test_object_table),
	    cmocka_unit_test(test_object_runtime_overhead),
	    cmocka_unit_test(test_object_pod_group_member),
	    cmocka_unit_test(test_object_pod_group_retriable),
	    cmocka_unit_test(test_object_compact),
	    cmocka_unit_test(test_object_queued_job_small),
	    cmocka_unit_test(test_object_job_status),
	    cmocka_unit_test(test_object_timestamps),
	    cmocka_unit_test(test_object_bad_input),
	    cmocka_unit_test(test_object_max_exec_label),
	    cmocka_unit_test(test_object_caps),
	    cmocka_unit_test(test_jobset_podsets),
	    cmocka_unit_test(test_jobset_refusals),
	    cmocka_unit_test(test_jobset_shapes),
	    cmocka_unit_test(test_parent_of),
	    cmocka_unit_test(test_watched_collections),
	    cmocka_unit_test(test_sets),
	    cmocka_unit_test(test_sets_numbering),
	};

	return cmocka_run_group_tests_name("workload", tests, NULL, NULL);
}

/* Unit tests of workload/ for the operators' kinds (split from
 * test_workload.c): KubeRay's RayCluster and RayJob (worker groups, the
 * submitter Pod, autoscaling) and Kubeflow Trainer's TrainJob. */
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

/* ---- KubeRay: RayCluster and RayJob ---- */

#define RAYCLUSTER_API "'apiVersion':'ray.io/v1','kind':'RayCluster'"
#define RAYJOB_API "'apiVersion':'ray.io/v1','kind':'RayJob'"
/* The shape of KubeRay's ray-cluster.sample.yaml with GPU workers: a CPU
 * head and worker groups (2 replicas of 2 hosts of 1 GPU each; one
 * suspended; one of no replica; one whose minReplicas is over its
 * maxReplicas). */
#define RAY_CLUSTER_SPEC                                                                           \
	"'headGroupSpec':{'rayStartParams':{},'template':{'spec':{'containers':[{'name':"          \
	"'ray-head','image':'rayproject/ray:2.46.0','resources':{'limits':{'cpu':'1'}}}]}}},"      \
	"'workerGroupSpecs':[{'groupName':'gpu-group','replicas':2,'minReplicas':1,"               \
	"'maxReplicas':5,'numOfHosts':2,'rayStartParams':{},'template':{'spec':{'containers':"     \
	"[{'name':'ray-worker','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}},"                \
	"{'groupName':'off','replicas':3,'suspend':true,'template':{'spec':{}}},"                  \
	"{'groupName':'none','replicas':0,'template':{'spec':{}}},"                                \
	"{'groupName':'capped','replicas':1,'minReplicas':4,'maxReplicas':3,'template':{"          \
	"'spec':{'containers':[{'name':'c','resources':{'limits':{'cpu':'2'}}}]}}}]"

static void test_ray(void **state)
{
	policy_t *p = obj_policy();
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	if (obj_decode(p,
		       OBJ_META(RAYCLUSTER_API, "raycluster-kuberay",
				"") ",'spec':{'suspend':true," RAY_CLUSTER_SPEC "}}",
		       &o, &d))
		fail_msg("raycluster: %s", d.msg);
	assert_int_equal(o->kind, WORKLOAD_KIND_RAYCLUSTER);
	assert_int_equal(o->integ->hold, WORKLOAD_HOLD_SUSPEND);
	assert_true(o->suspend);
	assert_true(o->gpu);
	/* the head, gpu-group (2 x 2 hosts) and capped (3); off and none hold
	   no pod */
	assert_int_equal(o->n_podsets, 3);
	assert_int_equal(o->pods, 8);
	assert_string_equal(o->podsets[0].name, "head");
	assert_int_equal(o->podsets[0].count, 1);
	assert_string_equal(o->podsets[0].tmpl_ptr, "/spec/headGroupSpec/template");
	assert_false(o->podsets[0].gpu);
	assert_string_equal(o->podsets[1].name, "gpu-group");
	assert_int_equal(o->podsets[1].count, 4);
	assert_string_equal(o->podsets[1].tmpl_ptr, "/spec/workerGroupSpecs/0/template");
	assert_true(o->podsets[1].gpu);
	assert_string_equal(o->podsets[2].name, "capped");
	assert_int_equal(o->podsets[2].count, 3);
	assert_string_equal(o->podsets[2].tmpl_ptr, "/spec/workerGroupSpecs/3/template");
	assert_int_equal(o->active, 1);
	workload_destroy(o);
	/* suspended: KubeRay deleted its Pods */
	assert_int_equal(
	    obj_decode(p,
		       OBJ_META(RAYCLUSTER_API, "rc", "") ",'spec':{" RAY_CLUSTER_SPEC
							  "},'status':{'conditions':[{"
							  "'type':'RayClusterSuspended',"
							  "'status':'True'}]}}",
		       &o, &d),
	    GPUQ_OK);
	assert_int_equal(o->active, 0);
	workload_destroy(o);
	/* the RayJob sample's shape: the cluster it makes is its pod sets */
	if (obj_decode(
		p,
		OBJ_META(
		    RAYJOB_API, "rayjob-sample",
		    ",'labels':{'kueue.x-k8s.io/queue-name':'default'}") ",'spec':{"
									 "'entrypoint':'python "
									 "/home/ray/samples/"
									 "sample_code.py',"
									 "'shutdownAfterJobFinishes"
									 "':true,'suspend':true,'"
									 "rayClusterSpec':"
									 "{" RAY_CLUSTER_SPEC "}}}",
		&o, &d))
		fail_msg("rayjob: %s", d.msg);
	assert_int_equal(o->kind, WORKLOAD_KIND_RAYJOB);
	assert_string_equal(o->queue, "default");
	assert_true(o->suspend);
	/* the cluster's 3 pod sets, then K8sJobMode's (the default) submitter:
	   KubeRay's default Pod of 500m cpu and 200Mi, counted, not placed */
	assert_int_equal(o->n_podsets, 4);
	assert_int_equal(o->pods, 9);
	assert_string_equal(o->podsets[3].name, "submitter");
	assert_int_equal(o->podsets[3].count, 1);
	assert_true(o->podsets[3].counted_only);
	assert_false(o->podsets[2].counted_only);
	assert_string_equal(o->podsets[3].spec_field, "spec.submitterPodTemplate.spec");
	assert_int_equal(o->podsets[3].n_requests, 2);
	assert_string_equal(o->podsets[3].requests[0].name, "cpu");
	assert_int_equal(o->podsets[3].requests[0].amount, 500);
	assert_string_equal(o->podsets[3].requests[1].name, "memory");
	assert_int_equal(o->podsets[3].requests[1].amount, 200LL << 20);
	assert_string_equal(o->podsets[0].tmpl_ptr, "/spec/rayClusterSpec/headGroupSpec/template");
	assert_string_equal(o->podsets[1].tmpl_ptr,
			    "/spec/rayClusterSpec/workerGroupSpecs/0/template");
	assert_string_equal(o->podsets[1].spec_field,
			    "spec.rayClusterSpec.workerGroupSpecs[0].template.spec");
	assert_false(o->finished);
	workload_destroy(o);
	assert_int_equal(obj_decode(p,
				    OBJ_META(RAYJOB_API, "done",
					     "") ",'spec':{'rayClusterSpec':{" RAY_CLUSTER_SPEC
						 "}},'status':{'jobDeploymentStatus':"
						 "'Complete'}}",
				    &o, &d),
			 GPUQ_OK);
	assert_true(o->finished);
	assert_int_equal(o->active, 0);
	workload_destroy(o);
	/* running, its cluster ready: all its pods Ready */
	assert_int_equal(obj_decode(p,
				    OBJ_META(RAYJOB_API, "up",
					     "") ",'spec':{'rayClusterSpec':{" RAY_CLUSTER_SPEC
						 "}},'status':{'jobDeploymentStatus':"
						 "'Running','rayClusterStatus':{'state':'ready'}}}",
				    &o, &d),
			 GPUQ_OK);
	assert_int_equal(o->active, 1);
	assert_int_equal(o->ready_pods, 9);
	workload_destroy(o);
	/* on an existing cluster: no pod of its own, nothing to hold */
	assert_int_equal(obj_decode(p,
				    OBJ_META(RAYJOB_API, "sel", "") ",'spec':{'clusterSelector':{"
								    "'ray.io/cluster':'rc'}}}",
				    &o, &d),
			 GPUQ_OK);
	assert_false(o->gpu);
	assert_int_equal(o->n_podsets, 0);
	workload_destroy(o);
	assert_int_equal(obj_decode(p,
				    OBJ_META(RAYJOB_API, "bad", "") ",'spec':{'rayClusterSpec':{"
								    "'headGroupSpec':{}}}}",
				    &o, &d),
			 GPUQ_EINVAL);
	assert_non_null(
	    strstr(d.msg, "spec.rayClusterSpec.headGroupSpec.template: Required value"));
	/* a RayJob's RayCluster is its child; a RayCluster's Pods are its own */
	assert_ptr_equal(workload_parent_of(WORKLOAD_KIND_RAYCLUSTER, "ray.io/v1", "RayJob"),
			 workload_integration(WORKLOAD_KIND_RAYJOB));
	assert_null(workload_parent_of(WORKLOAD_KIND_POD, "ray.io/v1", "RayCluster"));
	assert_null(workload_parent_of(WORKLOAD_KIND_JOB, "ray.io/v1", "RayJob"));
	assert_true(workload_creator(workload_integration(WORKLOAD_KIND_RAYCLUSTER),
				     "system:serviceaccount:ray-system:kuberay-operator"));
	policy_unref(p);
}

/* ---- Kubeflow Trainer: TrainJob ---- */

/* Table: a RayJob's submitter Pod by submissionMode (Kueue's pod set
 * "submitter", last): K8sJobMode (the default) makes one, from
 * spec.submitterPodTemplate or KubeRay's default; SidecarMode adds
 * KubeRay's default container (500m cpu) to the head Pod, counted in the
 * head's pod set; the other modes none. It counts against the 18 pod
 * sets. */
static void test_rayjob_submitter(void **state)
{
#define RJ(extra)                                                                                  \
	OBJ_META(RAYJOB_API, "rj", "")                                                             \
	",'spec':{'shutdownAfterJobFinishes':true," extra "'rayClusterSpec':{" RAY_CLUSTER_SPEC    \
	"}}}"
	static const struct {
		const char *name;   /* case */
		const char *json;   /* the object, ' for " */
		uint32_t n_podsets; /* pod sets */
		int64_t pods;	    /* pods counted */
		int64_t cpu_milli;  /* the submitter's cpu per pod (-1: no submitter) */
		bool gpu;	    /* the submitter asks for a GPU */
		int64_t head_milli; /* the head Pod's cpu */
	} t[] = {
	    {"no submissionMode: K8sJobMode, KubeRay's default Pod", RJ(""), 4, 9, 500, false,
	     1000},
	    {"K8sJobMode", RJ("'submissionMode':'K8sJobMode',"), 4, 9, 500, false, 1000},
	    {"K8sJobMode with its own template",
	     RJ("'submitterPodTemplate':{'spec':{'restartPolicy':'Never','containers':[{'name':"
		"'s','resources':{'requests':{'cpu':'2','memory':'1Gi'}}}]}},"),
	     4, 9, 2000, false, 1000},
	    {"K8sJobMode with a template whose container has no requests: LimitRange defaults",
	     RJ("'submitterPodTemplate':{'spec':{'containers':[{'name':'s'}]}},"), 4, 9, 500, false,
	     1000},
	    {"a submitter asking for a GPU",
	     RJ("'submitterPodTemplate':{'spec':{'containers':[{'name':'s','resources':{"
		"'limits':{'nvidia.com/gpu':'1'}}}]}},"),
	     4, 9, 500, true, 1000},
	    {"HTTPMode: KubeRay submits over HTTP", RJ("'submissionMode':'HTTPMode',"), 3, 8, -1,
	     false, 1000},
	    {"InteractiveMode: the user submits", RJ("'submissionMode':'InteractiveMode',"), 3, 8,
	     -1, false, 1000},
	    {"SidecarMode: in the head Pod", RJ("'submissionMode':'SidecarMode',"), 3, 8, -1, false,
	     1500},
	};
#undef RJ
	policy_t *p = obj_policy();
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		workload_t *o = NULL;
		gpuq_diag_t d = {""};
		const workload_podset_t *last;
		int64_t cpu = -1, head = -1;

		if (obj_decode(p, t[i].json, &o, &d))
			fail_msg("%s: refused: %s", t[i].name, d.msg);
		last = &o->podsets[o->n_podsets - 1];
		for (size_t k = 0; !strcmp(last->name, "submitter") && k < last->n_requests; k++)
			if (!strcmp(last->requests[k].name, "cpu"))
				cpu = last->requests[k].amount;
		for (size_t k = 0; k < o->podsets[0].n_requests; k++)
			if (!strcmp(o->podsets[0].requests[k].name, "cpu"))
				head = o->podsets[0].requests[k].amount;
		if (o->n_podsets != t[i].n_podsets || o->pods != t[i].pods ||
		    cpu != t[i].cpu_milli || head != t[i].head_milli ||
		    (t[i].cpu_milli >= 0 && (!last->counted_only || last->gpu != t[i].gpu)))
			fail_msg("%s: %u pod sets, %lld pods, submitter cpu %lld, head cpu %lld, "
				 "counted only %d, gpu %d",
				 t[i].name, o->n_podsets, (long long)o->pods, (long long)cpu,
				 (long long)head, last->counted_only, last->gpu);
		workload_destroy(o);
	}
	policy_unref(p);
}

/* The submitter is a pod set of the 18: a RayJob of a head and 17 worker
 * groups fits in HTTPMode and is refused in K8sJobMode, naming the field. */
static void test_rayjob_submitter_cap(void **state)
{
	static const char group[] = "{'groupName':'g%d','replicas':1,'template':{'spec':{"
				    "'containers':[{'name':'w','resources':{'limits':{'nvidia.com/"
				    "gpu':'1'}}}]}}}";
	policy_t *p = obj_policy();
	char groups[8192] = "", text[12288], one[256];
	workload_t *o = NULL;
	gpuq_diag_t d = {""};
	(void)state;

	for (int i = 0; i < WORKLOAD_PODSETS_MAX - 1; i++) {
		snprintf(one, sizeof(one), group, i);
		strncat(groups, i ? "," : "", sizeof(groups) - strlen(groups) - 1);
		strncat(groups, one, sizeof(groups) - strlen(groups) - 1);
	}
	for (int http = 1; http >= 0; http--) {
		snprintf(
		    text, sizeof(text),
		    OBJ_META(
			RAYJOB_API, "wide",
			"") ",'spec':{'shutdownAfterJobFinishes':true,%s'rayClusterSpec':{"
			    "'headGroupSpec':{'template':{'spec':{}}},'workerGroupSpecs':[%s]}}}",
		    http ? "'submissionMode':'HTTPMode'," : "", groups);
		if (http) {
			if (obj_decode(p, text, &o, &d))
				fail_msg("HTTPMode: %s", d.msg);
			assert_int_equal(o->n_podsets, WORKLOAD_PODSETS_MAX);
			workload_destroy(o);
			o = NULL;
			continue;
		}
		assert_int_equal(obj_decode(p, text, &o, &d), GPUQ_EINVAL);
		assert_non_null(strstr(d.msg,
				       "RayJob \"wide\": spec.submissionMode: more than 18 pod "
				       "sets; gpuq admits at most 18"));
	}
	policy_unref(p);
}

#define TRAINJOB_API "'apiVersion':'trainer.kubeflow.org/v1alpha1','kind':'TrainJob'"

/* The Trainer's PyTorch example: its pod sets are its JobSet's, none of its
 * own; gpuq's when it names a queue or a GPU per node. */
static void test_trainjob(void **state)
{
	policy_t *p = obj_policy();
	workload_t *o = NULL;
	gpuq_diag_t d;
	(void)state;

	if (obj_decode(
		p,
		OBJ_META(TRAINJOB_API, "pytorch-distributed",
			 "") ",'spec':{'suspend':true,"
			     "'runtimeRef':{'name':'torch-distributed'},'trainer':{'numNodes':2,"
			     "'resourcesPerNode':{'limits':{'nvidia.com/gpu':'4'}}},"
			     "'runtimePatches':[{'manager':'example.com/x'},{'manager':"
			     "'gpuq.dev/manager'}]},'status':{'jobsStatus':[{'name':'node',"
			     "'active':2,'ready':2}]}}",
		&o, &d))
		fail_msg("trainjob: %s", d.msg);
	assert_int_equal(o->kind, WORKLOAD_KIND_TRAINJOB);
	assert_true(o->integ->podsets_of_child);
	assert_int_equal(o->integ->child_kind, WORKLOAD_KIND_JOBSET);
	assert_int_equal(o->n_podsets, 0);
	assert_true(o->suspend);
	assert_true(o->gpu); /* a GPU per node */
	assert_true(o->has_runtime_patches);
	assert_int_equal(o->runtime_patch_at, 1);
	assert_int_equal(o->active, 2);
	assert_false(o->finished);
	workload_destroy(o);
	/* a queue label alone makes it gpuq's; neither, not */
	assert_int_equal(
	    obj_decode(
		p,
		OBJ_META(
		    TRAINJOB_API, "q",
		    ",'labels':{'kueue.x-k8s.io/queue-name':'default'}") ",'spec':{'runtimeRef':{'"
									 "name':'torch-distributed'"
									 "}},'status':{"
									 "'conditions':[{'type':'"
									 "Complete','status':'True'"
									 "}]}}",
		&o, &d),
	    GPUQ_OK);
	assert_true(o->gpu);
	assert_true(o->finished);
	assert_false(o->has_runtime_patches);
	assert_int_equal(o->runtime_patch_at, -1);
	workload_destroy(o);
	assert_int_equal(
	    obj_decode(p,
		       OBJ_META(TRAINJOB_API, "cpu", "") ",'spec':{'runtimeRef':{'name':"
							 "'torch-distributed'},'trainer':{"
							 "'resourcesPerNode':{'requests':{"
							 "'cpu':'4'}}}}}",
		       &o, &d),
	    GPUQ_OK);
	assert_false(o->gpu);
	workload_destroy(o);
	/* its JobSet is its child */
	assert_ptr_equal(
	    workload_parent_of(WORKLOAD_KIND_JOBSET, "trainer.kubeflow.org/v1alpha1", "TrainJob"),
	    workload_integration(WORKLOAD_KIND_TRAINJOB));
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ray),
	    cmocka_unit_test(test_rayjob_submitter),
	    cmocka_unit_test(test_rayjob_submitter_cap),
	    cmocka_unit_test(test_trainjob),
	};

	return cmocka_run_group_tests_name("workload_operators", tests, NULL, NULL);
}

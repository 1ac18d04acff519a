/* Unit tests of workload/topology.c (issue 33): each pod template's
 * topology annotations, Kueue's and gpuq's, read into the pod set's
 * topology request for every kind (a Job's template, a Pod itself, a
 * JobSet's replicated Jobs, an LWS's leader and workers), kept through the
 * owned decode's compaction, and every bad one refused naming the
 * annotation and its value. */
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

#define Q ",'labels':{'gpuq.dev/queue-name':'default'}"
/* A GPU Job of `par` pods whose template carries annotations ann (a JSON
 * object's members, ' for "). */
#define JOB(par, ann)                                                                              \
	OBJ_META(JOB_API, "j", Q)                                                                  \
	",'spec':{'parallelism':" par ",'template':{'metadata':{'annotations':{" ann "}},"         \
	"'spec':{'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'8'}}}]}}}}"
#define RACK "topology.gpuq.dev/rack"
#define BLOCK "topology.gpuq.dev/block"

typedef struct {
	const char *json;	 /* the object, ' for " */
	int mode;		 /* want topology mode; -1: refused */
	const char *level;	 /* want level (NULL: none); refused: the message */
	const char *slice_level; /* want slice level */
	int32_t slice_size;	 /* want slice size */
	const char *group;	 /* want group */
	bool gpuq_keys;		 /* want read from gpuq.dev/ keys */
} case_t;

static const case_t CASES[] = {
    /* none: no topology, NULL in the owned pod set */
    {JOB("4", ""), WORKLOAD_TOPO_NONE, NULL, NULL, 0, NULL, false},
    {JOB("4", "'other':'x'"), WORKLOAD_TOPO_NONE, NULL, NULL, 0, NULL, false},
    /* Kueue's keys */
    {JOB("4", "'kueue.x-k8s.io/podset-required-topology':'" RACK "'"), WORKLOAD_TOPO_REQUIRED, RACK,
     NULL, 0, NULL, false},
    {JOB("4", "'kueue.x-k8s.io/podset-preferred-topology':'" BLOCK "'"), WORKLOAD_TOPO_PREFERRED,
     BLOCK, NULL, 0, NULL, false},
    {JOB("4", "'kueue.x-k8s.io/podset-unconstrained-topology':'true'"), WORKLOAD_TOPO_UNCONSTRAINED,
     NULL, NULL, 0, NULL, false},
    {JOB("4", "'kueue.x-k8s.io/podset-unconstrained-topology':'False'"), WORKLOAD_TOPO_NONE, NULL,
     NULL, 0, NULL, false},
    {JOB("8", "'kueue.x-k8s.io/podset-required-topology':'" BLOCK "',"
	      "'kueue.x-k8s.io/podset-slice-required-topology':'" RACK "',"
	      "'kueue.x-k8s.io/podset-slice-size':'4'"),
     WORKLOAD_TOPO_REQUIRED, BLOCK, RACK, 4, NULL, false},
    /* gpuq's keys */
    {JOB("4", "'gpuq.dev/podset-required-topology':'kubernetes.io/hostname'"),
     WORKLOAD_TOPO_REQUIRED, "kubernetes.io/hostname", NULL, 0, NULL, true},
    {JOB("6", "'gpuq.dev/podset-preferred-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'3'"),
     WORKLOAD_TOPO_PREFERRED, BLOCK, RACK, 3, NULL, true},
    /* both: gpuq's win whole, Kueue's are not read at all */
    {JOB("4", "'kueue.x-k8s.io/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-required-topology':'" RACK "'"),
     WORKLOAD_TOPO_REQUIRED, RACK, NULL, 0, NULL, true},
    {JOB("4", "'kueue.x-k8s.io/podset-required-topology':'" BLOCK "',"
	      "'kueue.x-k8s.io/podset-slice-size':'x',"
	      "'gpuq.dev/podset-unconstrained-topology':'true'"),
     WORKLOAD_TOPO_UNCONSTRAINED, NULL, NULL, 0, NULL, true},
    /* refusals, naming the annotation and the value */
    {JOB("4", "'kueue.x-k8s.io/podset-required-topology':'rack!'"), -1,
     "Job \"j\": spec.template.metadata.annotations[kueue.x-k8s.io/podset-required-topology]: "
     "\"rack!\": must be a node label key (a Topology level's nodeLabel)",
     NULL, 0, NULL, false},
    {JOB("4", "'gpuq.dev/podset-preferred-topology':''"), -1,
     "annotations[gpuq.dev/podset-preferred-topology]: \"\": must be a node label key", NULL, 0,
     NULL, false},
    {JOB("4", "'kueue.x-k8s.io/podset-required-topology':'" RACK "',"
	      "'kueue.x-k8s.io/podset-preferred-topology':'" BLOCK "'"),
     -1,
     "annotations[kueue.x-k8s.io/podset-required-topology]: a pod set carries at most one of "
     "podset-required-topology, podset-preferred-topology and podset-unconstrained-topology",
     NULL, 0, NULL, false},
    {JOB("4", "'gpuq.dev/podset-preferred-topology':'" RACK "',"
	      "'gpuq.dev/podset-unconstrained-topology':'true'"),
     -1, "annotations[gpuq.dev/podset-preferred-topology]: a pod set carries at most one", NULL, 0,
     NULL, false},
    {JOB("4", "'gpuq.dev/podset-unconstrained-topology':'yes'"), -1,
     "annotations[gpuq.dev/podset-unconstrained-topology]: \"yes\": must be \"true\" or "
     "\"false\"",
     NULL, 0, NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'3'"),
     -1,
     "Job \"j\": spec.template.metadata.annotations[gpuq.dev/podset-slice-size]: \"3\": must "
     "divide the pod set's 8 pods",
     NULL, 0, NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'16'"),
     -1, "annotations[gpuq.dev/podset-slice-size]: \"16\": must divide the pod set's 8 pods", NULL,
     0, NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'0'"),
     -1,
     "annotations[gpuq.dev/podset-slice-size]: \"0\": must be a whole number of pods from 1 "
     "to 2147483647",
     NULL, 0, NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'99999999999'"),
     -1, "\"99999999999\": must be a whole number of pods", NULL, 0, NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "'"),
     -1, "annotations[gpuq.dev/podset-slice-size]: required with a slice topology", NULL, 0, NULL,
     false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
	      "'gpuq.dev/podset-slice-size':'4'"),
     -1, "annotations[gpuq.dev/podset-slice-required-topology]: required with a slice size", NULL,
     0, NULL, false},
    /* slices alone (Kueue's balanced placement): each slice in one rack,
       the pod set anywhere */
    {JOB("8", "'kueue.x-k8s.io/podset-slice-required-topology':'" RACK "',"
	      "'kueue.x-k8s.io/podset-slice-size':'4'"),
     WORKLOAD_TOPO_NONE, NULL, RACK, 4, NULL, false},
    {JOB("8", "'gpuq.dev/podset-unconstrained-topology':'true',"
	      "'gpuq.dev/podset-group-name':'g'"),
     -1,
     "annotations[gpuq.dev/podset-group-name]: \"g\": a group needs a "
     "podset-required-topology or podset-preferred-topology level",
     NULL, 0, NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" RACK "','gpuq.dev/podset-group-name':'12'"),
     -1, "annotations[gpuq.dev/podset-group-name]: \"12\": must not be a number", NULL, 0, NULL,
     false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" RACK "','gpuq.dev/podset-group-name':'a/b'"),
     -1, "annotations[gpuq.dev/podset-group-name]: \"a/b\": must be a name of 1 to 63", NULL, 0,
     NULL, false},
    {JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "','gpuq.dev/podset-group-name':'g',"
	      "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'4'"),
     -1, "annotations[gpuq.dev/podset-group-name]: \"g\": a group cannot have slices", NULL, 0,
     NULL, false},
    /* a group of one pod set in a Job */
    {JOB("8", "'gpuq.dev/podset-required-topology':'" RACK "','gpuq.dev/podset-group-name':'g'"),
     -1,
     "Job \"j\": spec.template.spec: pod set \"main\" is alone in topology group \"g\" (a "
     "group places two or more pod sets together)",
     NULL, 0, NULL, false},
    /* ... but a JobSet's Job, or an LWS's StatefulSet, holds one pod set of
       its parent's group (checked there): read, not refused */
    {OBJ_META(
	 JOB_API, "j",
	 Q ",'ownerReferences':[{'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet',"
	   "'name':'js','uid':'u','controller':true}]") ",'spec':{'parallelism':1,'template':{"
							"'metadata':{'annotations':{"
							"'gpuq.dev/podset-required-topology':'" RACK
							"','gpuq.dev/"
							"podset-group-name':'g'}},'spec':{"
							"'containers':[{'name':'c','resources':{"
							"'limits':{'nvidia.com/gpu':'8'}}}]}}}}",
     WORKLOAD_TOPO_REQUIRED, RACK, NULL, 0, "g", true},
    {OBJ_META(
	 "'apiVersion':'apps/v1','kind':'StatefulSet'", "l",
	 Q
	 ",'ownerReferences':[{'apiVersion':'leaderworkerset.x-k8s.io/v1',"
	 "'kind':'LeaderWorkerSet','name':'l','uid':'u','controller':true}]") ",'spec':{"
									      "'replicas':1,'"
									      "template':{'"
									      "metadata':{'"
									      "annotations':{"
									      "'gpuq.dev/"
									      "podset-required-"
									      "topology':'" RACK
									      "','gpuq.dev/"
									      "podset-group-name':'"
									      "g'}},"
									      "'spec':{'containers'"
									      ":[{'name':'c','"
									      "resources':{'limits'"
									      ":{'nvidia.com/"
									      "gpu':'8'}}}]}}}}",
     WORKLOAD_TOPO_REQUIRED, RACK, NULL, 0, "g", true},
    /* not gpuq's (no GPU, no queue): a bad annotation is none of its business */
    {OBJ_META(JOB_API, "j", "") ",'spec':{'template':{'metadata':{'annotations':{"
				"'gpuq.dev/podset-slice-size':'x'}},'spec':{'containers':[{'name':"
				"'c'}]}}}}",
     WORKLOAD_TOPO_NONE, NULL, NULL, 0, NULL, false},
    /* a Pod: its own annotations; its path is metadata.annotations */
    {OBJ_META(POD_API, "p",
	      Q ",'annotations':{'kueue.x-k8s.io/podset-required-topology':'" RACK
		"'}") ",'spec':{'containers':[{'name':'c','resources':{'limits':{"
		      "'nvidia.com/gpu':'1'}}}]}}",
     WORKLOAD_TOPO_REQUIRED, RACK, NULL, 0, NULL, false},
    {OBJ_META(
	 POD_API, "p",
	 Q ",'annotations':{'gpuq.dev/podset-required-topology':'a b'}") ",'spec':{'containers':[{'"
									 "name':'c','resources':{'"
									 "limits':{'nvidia.com/"
									 "gpu':'1'}}}]}}",
     -1,
     "Pod \"p\": metadata.annotations[gpuq.dev/podset-required-topology]: \"a b\": must be a "
     "node label key",
     NULL, 0, NULL, false},
    /* a Pod a set's controller made from a sliced template: its count of
       one is not the set's (its parent was checked against that), and a
       group's partner is another Pod */
    {OBJ_META(POD_API, "p",
	      Q
	      ",'annotations':{'gpuq.dev/podset-required-topology':'" BLOCK
	      "','gpuq.dev/podset-slice-required-topology':'" RACK "',"
	      "'gpuq.dev/podset-slice-size':'4'}") ",'spec':{'containers':[{'name':'c','resources':"
						   "{'limits':{'nvidia.com/gpu':'1'}}}]}}",
     WORKLOAD_TOPO_REQUIRED, BLOCK, RACK, 4, NULL, true},
    {OBJ_META(
	 POD_API, "p",
	 Q ",'annotations':{'gpuq.dev/podset-required-topology':'" RACK
	   "','gpuq.dev/podset-group-name':'lws'}") ",'spec':{'containers':[{'name':'c','resources'"
						    ":{'limits':{'nvidia.com/gpu':'1'}}}]}}",
     WORKLOAD_TOPO_REQUIRED, RACK, NULL, 0, "lws", true},
};

/* Every case decoded as the controller decodes it (workload_decode, the
 * view under it): the first pod set's request, or the refusal. */
static void topology_cases(void **state)
{
	size_t failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const case_t *c = &CASES[i];
		workload_t *o = NULL;
		gpuq_diag_t d;
		int rc = obj_decode(NULL, c->json, &o, &d);
		const workload_topology_t *t;
		workload_topology_t want = {.mode = (workload_topo_mode_t)c->mode,
					    .level = c->level,
					    .slice_level = c->slice_level,
					    .slice_size = c->slice_size,
					    .group = c->group,
					    .gpuq_keys = c->gpuq_keys};

		if (c->mode < 0) {
			if (rc != GPUQ_EINVAL || !strstr(d.msg, c->level)) {
				print_error("case %zu: rc %d, \"%s\"\n", i, rc, d.msg);
				failed++;
			}
			workload_destroy(o);
			continue;
		}
		if (rc) {
			print_error("case %zu: refused: %s\n", i, d.msg);
			failed++;
			continue;
		}
		t = o->podsets[0].topology;
		if (!workload_topology_same(t, &want) || (t && t->gpuq_keys != want.gpuq_keys) ||
		    (!t && c->mode != WORKLOAD_TOPO_NONE)) {
			print_error("case %zu: mode %d level %s slice %s/%d group %s\n", i,
				    t ? (int)t->mode : -1, t && t->level ? t->level : "-",
				    t && t->slice_level ? t->slice_level : "-",
				    t ? t->slice_size : 0, t && t->group ? t->group : "-");
			failed++;
		}
		/* none declared: no allocation for it */
		if (c->mode == WORKLOAD_TOPO_NONE && !c->slice_level && !c->group && t)
			failed++;
		workload_destroy(o);
	}
	assert_int_equal(failed, 0);
}

#define JOBSET_API "'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet'"
#define RJOB(name, par, ann)                                                                       \
	"{'name':'" name "','replicas':1,'template':{'spec':{'parallelism':" par ",'template':{"   \
	"'metadata':{'annotations':{" ann "}},'spec':{'containers':[{'name':'c','resources':{"     \
	"'limits':{'nvidia.com/gpu':'8'}}}]}}}}}"

/* A JobSet's driver and workers in one group: each replicated Job's pod
 * set gets its own request, the group kept on both; a group whose pod sets
 * disagree on the level is refused naming both. */
static void jobset_group(void **state)
{
	const char *good =
	    OBJ_META(JOBSET_API, "js", Q) ",'spec':{'suspend':true,'replicatedJobs':[" RJOB(
		"driver", "1",
		"'kueue.x-k8s.io/podset-required-topology':'" RACK "',"
		"'kueue.x-k8s.io/podset-group-name':'train'") "," RJOB("workers", "3",
								       "'kueue.x-k8s.io/podset-"
								       "required-topology':"
								       "'" RACK "','kueue.x-k8s.io/"
								       "podset-group-name':'"
								       "train'") "]}}";
	const char *bad =
	    OBJ_META(JOBSET_API, "js", Q) ",'spec':{'suspend':true,'replicatedJobs':[" RJOB(
		"driver", "1",
		"'gpuq.dev/podset-required-topology':'" RACK "',"
		"'gpuq.dev/podset-group-name':'train'") "," RJOB("workers", "3",
								 "'gpuq.dev/podset-preferred-"
								 "topology':'" BLOCK
								 "','gpuq.dev/podset-group-name':"
								 "'train'") "]}}";
	workload_t *o = NULL;
	gpuq_diag_t d;

	(void)state;
	if (obj_decode(NULL, good, &o, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(o->n_podsets, 2);
	for (size_t i = 0; i < 2; i++) {
		const workload_topology_t *t = o->podsets[i].topology;

		assert_non_null(t);
		assert_int_equal(t->mode, WORKLOAD_TOPO_REQUIRED);
		assert_string_equal(t->level, RACK);
		assert_string_equal(t->group, "train");
	}
	workload_destroy(o);
	assert_int_equal(obj_decode(NULL, bad, &o, &d), GPUQ_EINVAL);
	assert_string_equal(d.msg,
			    "JobSet \"js\": spec.replicatedJobs[1].template.spec.template.spec: "
			    "pod set \"workers\" is in topology group \"train\" with pod set "
			    "\"driver\" but asks for another level (preferred " BLOCK
			    ", not required " RACK ")");
}

/* An LWS whose leader and workers share the worker template: both pod sets
 * read it; the slice size divides the workers' count (size - 1). */
static void lws_template(void **state)
{
	const char *lws =
	    OBJ_META("'apiVersion':'leaderworkerset.x-k8s.io/v1','kind':'LeaderWorkerSet'", "l",
		     Q) ",'spec':{'replicas':1,'leaderWorkerTemplate':{'size':5,"
			"'workerTemplate':{'metadata':{'annotations':{"
			"'gpuq.dev/podset-preferred-topology':'" RACK "'}},"
			"'spec':{'containers':[{'name':'c','resources':{'limits':{"
			"'nvidia.com/gpu':'8'}}}]}}}}}";
	workload_t *o = NULL;
	gpuq_diag_t d;

	(void)state;
	if (obj_decode(NULL, lws, &o, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(o->n_podsets, 2);
	assert_int_equal(o->podsets[0].topology->mode, WORKLOAD_TOPO_PREFERRED);
	assert_string_equal(o->podsets[1].topology->level, RACK);
	workload_destroy(o);
}

/* The view (the admission rules' form) reads the same, strings borrowed;
 * workload_topology_same is what an UPDATE compares. */
static void view_reads_the_same(void **state)
{
	char *json = squote(JOB("8", "'gpuq.dev/podset-required-topology':'" BLOCK "',"
				     "'gpuq.dev/podset-slice-required-topology':'" RACK "',"
				     "'gpuq.dev/podset-slice-size':'2'"));
	jv_doc_t doc = {0};
	char err[128];
	workload_view_t v;
	workload_topology_t other;
	gpuq_diag_t d = {""};

	(void)state;
	assert_int_equal(jv_doc_parse(&doc, json, strlen(json), err, sizeof(err)), GPUQ_OK);
	assert_int_equal(
	    workload_view_decode(&v, NULL, NULL, "team-a", WORKLOAD_KIND_JOB, doc.root, &d),
	    GPUQ_OK);
	assert_int_equal(v.podsets[0].topology.mode, WORKLOAD_TOPO_REQUIRED);
	assert_int_equal(v.podsets[0].topology.slice_size, 2);
	assert_true(v.podsets[0].topology.gpuq_keys);
	other = v.podsets[0].topology;
	assert_true(workload_topology_same(&other, &v.podsets[0].topology));
	other.slice_size = 4;
	assert_false(workload_topology_same(&other, &v.podsets[0].topology));
	other = v.podsets[0].topology;
	other.level = RACK;
	assert_false(workload_topology_same(&other, &v.podsets[0].topology));
	assert_false(workload_topology_same(NULL, &v.podsets[0].topology));
	assert_true(workload_topology_same(NULL, NULL));
	workload_view_deinit(&v);
	jv_doc_free(&doc);
	free(json);
}

/* gpuq's six keys are a tenant's inputs (the webhook lets anyone write
 * them, within their size); Kueue's are none of gpuq's business. */
static void keys_are_inputs(void **state)
{
	static const struct {
		const char *key;
		size_t max;
	} k[] = {{WORKLOAD_ANNOT_TOPO_REQUIRED, 316},	 {WORKLOAD_ANNOT_TOPO_PREFERRED, 316},
		 {WORKLOAD_ANNOT_TOPO_UNCONSTRAINED, 5}, {WORKLOAD_ANNOT_TOPO_SLICE, 316},
		 {WORKLOAD_ANNOT_TOPO_SLICE_SIZE, 10},	 {WORKLOAD_ANNOT_TOPO_GROUP, 63}};
	size_t max;

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		assert_int_equal(workload_key_owner(k[i].key, false, &max), WORKLOAD_KEY_INPUT);
		assert_int_equal(max, k[i].max);
	}
	assert_int_equal(workload_key_owner(WORKLOAD_ANNOT_KUEUE_TOPO_REQUIRED, false, &max),
			 WORKLOAD_KEY_OTHER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(topology_cases),  cmocka_unit_test(jobset_group),
	    cmocka_unit_test(lws_template),    cmocka_unit_test(view_reads_the_same),
	    cmocka_unit_test(keys_are_inputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

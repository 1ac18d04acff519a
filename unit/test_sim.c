/* Unit tests for sim: trace parsing (good and bad), generators, object sets,
 * percentiles, Jain's index, small scenarios with hand-computed outcomes,
 * determinism, and resuming from a state dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine_store.h"
#include "policy/policy.h"
#include "qmetrics/qmetrics.h"
#include "queue/queue.h"
#include "sim/sim.h"
#include "unit/sim_fixtures.h"
#include "store/store.h"
#include "http/http.h"

/* One flavor, one ClusterQueue of 4 GPUs, one LocalQueue team-a/lq. */
#define POLICY                                                                                     \
	"apiVersion: gpuq.dev/v1beta1\n"                                                           \
	"kind: ResourceFlavor\n"                                                                   \
	"metadata: {name: default}\n"                                                              \
	"---\n"                                                                                    \
	"apiVersion: scheduling.k8s.io/v1\n"                                                       \
	"kind: PriorityClass\n"                                                                    \
	"metadata: {name: high}\n"                                                                 \
	"value: 1000\n"                                                                            \
	"---\n"                                                                                    \
	"apiVersion: gpuq.dev/v1beta1\n"                                                           \
	"kind: ClusterQueue\n"                                                                     \
	"metadata: {name: cq-a}\n"                                                                 \
	"spec:\n"                                                                                  \
	"  namespaceSelector: {}\n"                                                                \
	"  preemption: {withinClusterQueue: LowerPriority}\n"                                      \
	"  resourceGroups:\n"                                                                      \
	"  - coveredResources: [nvidia.com/gpu]\n"                                                 \
	"    flavors:\n"                                                                           \
	"    - name: default\n"                                                                    \
	"      resources:\n"                                                                       \
	"      - {name: nvidia.com/gpu, nominalQuota: 4}\n"                                        \
	"---\n"                                                                                    \
	"apiVersion: gpuq.dev/v1beta1\n"                                                           \
	"kind: LocalQueue\n"                                                                       \
	"metadata: {namespace: team-a, name: lq}\n"                                                \
	"spec: {clusterQueue: cq-a}\n"                                                             \
	"---\n"                                                                                    \
	"apiVersion: gpuq.dev/v1beta1\n"                                                           \
	"kind: LocalQueue\n"                                                                       \
	"metadata: {namespace: team-b, name: lq}\n"                                                \
	"spec: {clusterQueue: cq-a}\n"                                                             \
	"---\n"                                                                                    \
	"apiVersion: gpuq.dev/v1beta1\n"                                                           \
	"kind: Trace\n"                                                                            \
	"metadata: {name: t}\n"

/* Three workloads on a 4-GPU queue: a takes all 4 for 10 s; b (2 x 1) and c
 * (2) wait for it and are admitted together at 10 s. */
static const char tiny[] =
    POLICY "spec:\n"
	   "  arrivals:\n"
	   "  - {at: 0, name: a, localQueue: team-a/lq, runtime: 10s, class: big,"
	   "     podSets: [{count: 1, requests: {nvidia.com/gpu: 4}}]}\n"
	   "  - {at: 1s, name: b, localQueue: team-a/lq, runtime: 5s, class: small,"
	   "     podSets: [{count: 2, requests: {nvidia.com/gpu: 1}}]}\n"
	   "  - {at: \"2000ms\", name: c, localQueue: team-b/lq, runtime: 1s, class: small,"
	   "     podSets: [{count: 1, requests: {nvidia.com/gpu: \"2\"}}]}\n";

static void parse_bad(const char *text, int want_rc, const char *want_msg)
{
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};
	int rc = sim_trace_parse("t.yaml", text, strlen(text), &t, &d);

	assert_null(t);
	assert_string_equal(d.msg, want_msg);
	assert_int_equal(rc, want_rc);
}

static void parse_bad_prefix(const char *text, int want_rc, const char *want_prefix)
{
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};
	int rc = sim_trace_parse("t.yaml", text, strlen(text), &t, &d);

	assert_null(t);
	if (strncmp(d.msg, want_prefix, strlen(want_prefix)))
		fail_msg("got \"%s\", want a message starting \"%s\"", d.msg, want_prefix);
	assert_int_equal(rc, want_rc);
}

/* Every run of these tests checks the core's invariants after every step. */
static sim_report_t *run_ok(const sim_trace_t *t, const char *state_dir)
{
	sim_run_options_t opt = {.state_dir = state_dir, .no_sync = true, .check = true};
	sim_report_t *r = NULL;
	gpuq_diag_t d = {{0}};
	int rc = sim_run(t, &opt, &r, &d);

	if (rc)
		fail_msg("run failed: %s (%s)", d.msg, gpuq_strerror(rc));
	return r;
}

/* The report as a string without its CPU line. */
static char *report_text(const sim_report_t *r)
{
	char *buf = NULL, *line, *out;
	size_t len = 0, o = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(sim_report_write_json(r, f), GPUQ_OK);
	fclose(f);
	out = calloc(len + 1, 1);
	assert_non_null(out);
	for (line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line + 1) : strlen(line);
		if (!memmem(line, n, "\"cpu\"", 5)) {
			memcpy(out + o, line, n);
			o += n;
		}
		line += n;
	}
	free(buf);
	return out;
}

static size_t find_wl(const sim_trace_t *t, const char *name)
{
	char buf[300];

	for (size_t i = 0; i < t->n_arrivals; i++) {
		sim_trace_workload_name(t, i, buf, sizeof(buf));
		if (!strcmp(buf, name))
			return i;
	}
	fail_msg("no workload %s", name);
	return 0;
}

/* ---- parsing ---- */

static void parse_tiny(void **state)
{
	sim_trace_t *t = parse_ok(tiny);
	char name[64];

	(void)state;
	assert_string_equal(t->trace_name, "t");
	assert_int_equal(t->n_arrivals, 3);
	assert_int_equal(t->n_lqs, 2);
	assert_int_equal(t->n_cqs, 1);
	assert_int_equal(t->arrivals[0].at_ms, 0);
	assert_int_equal(t->arrivals[1].at_ms, 1000);
	assert_int_equal(t->arrivals[2].at_ms, 2000);
	assert_int_equal(t->arrivals[2].lq, 1);
	assert_int_equal(t->arrivals[0].runtime_ms, 10000);
	assert_int_equal(sim_trace_workload_name(t, 1, name, sizeof(name)), GPUQ_OK);
	assert_string_equal(name, "b");
	assert_int_equal(t->shapes[t->arrivals[1].shape].podsets[0].count, 2);
	assert_int_equal(t->shapes[t->arrivals[1].shape].podsets[0].req[0].amount, 1);
	assert_string_equal(t->classes[t->arrivals[1].class_id], "small");
	/* defaults */
	assert_int_equal(t->opt.cycle_interval_ms, 0);
	assert_int_equal(t->opt.gang_ready_timeout_ms, 30 * 60 * 1000);
	assert_string_equal(t->opt.util_resource, "nvidia.com/gpu");
	assert_int_equal(sim_trace_workload_name(t, 1, name, 1), GPUQ_ELIMIT);
	sim_trace_destroy(t);
}

static void parse_generators(void **state)
{
	static const char text[] = POLICY
	    "spec:\n"
	    "  options: {cycleInterval: 100ms, sampleInterval: 2s}\n"
	    "  generators:\n"
	    "  - name: small\n"
	    "    localQueuePattern: \"*/lq\"\n"
	    "    every: 100ms\n"
	    "    count: 3\n"
	    "    runtime: 200ms\n"
	    "    priorityClass: high\n"
	    "    template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}\n"
	    "  - name: late\n"
	    "    localQueues: [team-b/lq]\n"
	    "    start: 0\n"
	    "    every: 1s\n"
	    "    count: 2\n"
	    "    runtime: 1s\n"
	    "    priority: 7\n"
	    "    template: {gang: true, readyDelay: 3s,"
	    "               podSets: [{name: w, count: 2, requests: {nvidia.com/gpu: 1}}]}\n";
	sim_trace_t *t = parse_ok(text);
	char name[64];

	(void)state;
	/* 3 per LQ x 2 LQs + 2 */
	assert_int_equal(t->n_arrivals, 8);
	assert_int_equal(t->opt.cycle_interval_ms, 100);
	assert_int_equal(t->opt.sample_interval_ms, 2000);
	/* sorted by time: late-lq-0 at 0, then small at 100 (team-a before team-b) */
	sim_trace_workload_name(t, 0, name, sizeof(name));
	assert_string_equal(name, "late-lq-0");
	assert_int_equal(t->arrivals[0].priority, 7);
	assert_true(t->shapes[t->arrivals[0].shape].gang);
	assert_int_equal(t->shapes[t->arrivals[0].shape].ready_delay_ms, 3000);
	assert_int_equal(t->arrivals[1].at_ms, 100);
	assert_int_equal(t->arrivals[1].lq, 0);
	assert_int_equal(t->arrivals[2].at_ms, 100);
	assert_int_equal(t->arrivals[2].lq, 1);
	assert_int_equal(t->arrivals[1].priority, 1000);
	assert_int_equal(t->arrivals[5].at_ms, 300);
	assert_int_equal(t->arrivals[7].at_ms, 1000);
	sim_trace_workload_name(t, 7, name, sizeof(name));
	assert_string_equal(name, "late-lq-1");
	assert_int_equal(t->n_gens, 2);
	assert_int_equal(t->gens[0].n_lqs, 2);
	sim_trace_destroy(t);
}

static void parse_object_sets(void **state)
{
	static const char text[] =
	    "apiVersion: gpuq.dev/v1beta1\n"
	    "kind: ResourceFlavor\n"
	    "metadata: {name: rf}\n"
	    "---\n"
	    "apiVersion: gpuq.dev/v1beta1\n"
	    "kind: Trace\n"
	    "metadata: {name: sets}\n"
	    "spec:\n"
	    "  objectSets:\n"
	    "  - count: 2\n"
	    "    index: c\n"
	    "    objectSets:\n"
	    "    - count: 3\n"
	    "      index: q\n"
	    "      start: 1\n"
	    "      objects:\n"
	    "      - apiVersion: gpuq.dev/v1beta1\n"
	    "        kind: ClusterQueue\n"
	    "        metadata: {name: \"cq-{c}-{q}\"}\n"
	    "        spec:\n"
	    "          cohortName: \"co-{c}\"\n"
	    "          namespaceSelector: {}\n"
	    "          resourceGroups:\n"
	    "          - coveredResources: [nvidia.com/gpu]\n"
	    "            flavors: [{name: rf, resources: [{name: nvidia.com/gpu,"
	    " nominalQuota: 20, borrowingLimit: 100}]}]\n"
	    "      - apiVersion: gpuq.dev/v1beta1\n"
	    "        kind: LocalQueue\n"
	    "        metadata: {namespace: \"ns-{c}-{q}\", name: lq}\n"
	    "        spec: {clusterQueue: \"cq-{c}-{q}\"}\n"
	    "  generators:\n"
	    "  - {name: g, localQueuePattern: \"ns-1-*/lq\", count: 1, runtime: 1s,"
	    "     template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}}\n";
	sim_trace_t *t = parse_ok(text);
	const policy_cq_t *cq;

	(void)state;
	assert_int_equal(t->n_cqs, 6);
	assert_int_equal(t->n_lqs, 6);
	cq = policy_cq_find(t->policy, "cq-1-3");
	assert_non_null(cq);
	assert_string_equal(cq->cohort_name, "co-1");
	assert_null(policy_cq_find(t->policy, "cq-1-0"));
	assert_non_null(policy_lq_find(t->policy, "ns-0-2", "lq"));
	/* the pattern picks the three LQs of cohort 1; count 1 without every */
	assert_int_equal(t->n_arrivals, 3);
	assert_int_equal(t->arrivals[0].at_ms, 0);
	sim_trace_destroy(t);
}

static void parse_errors(void **state)
{
	(void)state;
	parse_bad(POLICY "spec:\n  arrivals:\n  - {at: 1x, name: a, localQueue: team-a/lq,"
			 " runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
		  GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec.arrivals[0].at: bad duration \"1x\" "
		  "(want e.g. 250, \"250ms\", \"1.5s\", \"2m\", \"1h\")");
	parse_bad(POLICY "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: team-c/lq,"
			 " runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
		  GPUQ_ENOTFOUND,
		  "t.yaml: document 6: Trace \"t\": spec.arrivals[0].localQueue: no LocalQueue "
		  "\"team-c/lq\"");
	parse_bad(POLICY "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: lq,"
			 " runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
		  GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec.arrivals[0].localQueue: \"lq\" is not "
		  "\"namespace/name\"");
	parse_bad(POLICY "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: team-a/lq,"
			 " runtime: 1s, colour: red, podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
		  GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec.arrivals[0].colour: unknown field");
	parse_bad_prefix(POLICY "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: team-a/lq,"
				" runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1Gb}}]}\n",
			 GPUQ_EINVAL,
			 "t.yaml: document 6: Trace \"t\": spec.arrivals[0].podSets[0].requests."
			 "nvidia.com/gpu: invalid quantity \"1Gb\"");
	parse_bad(
	    POLICY "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: team-a/lq,"
		   " runtime: 0, podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
	    GPUQ_EINVAL,
	    "t.yaml: document 6: Trace \"t\": spec.arrivals[0].runtime: must be at least 1ms");
	parse_bad(POLICY "spec:\n  arrivals:\n  - {at: 0, name: a, localQueue: team-a/lq,"
			 " runtime: 1s, priorityClass: urgent,"
			 " podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
		  GPUQ_ENOTFOUND,
		  "t.yaml: document 6: Trace \"t\": spec.arrivals[0].priorityClass: no "
		  "PriorityClass \"urgent\"");
	parse_bad(POLICY "spec:\n  arrivals:\n"
			 "  - {at: 0, name: a, localQueue: team-a/lq, runtime: 1s,"
			 " podSets: [{requests: {nvidia.com/gpu: 1}}]}\n"
			 "  - {at: 5, name: a, localQueue: team-a/lq, runtime: 1s,"
			 " podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
		  GPUQ_EEXIST,
		  "t.yaml: document 6: Trace \"t\": spec.arrivals: two workloads named "
		  "\"team-a/a\"");
	parse_bad(POLICY "spec:\n  generators:\n  - {name: g, localQueuePattern: \"x/*\","
			 " count: 2, every: 1s, runtime: 1s,"
			 " template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}}\n",
		  GPUQ_ENOTFOUND,
		  "t.yaml: document 6: Trace \"t\": spec.generators[0].localQueuePattern: \"x/*\" "
		  "matches no LocalQueue");
	parse_bad(POLICY "spec:\n  generators:\n  - {name: g, localQueuePattern: \"*/*\","
			 " count: 600000, every: 1s, runtime: 1s,"
			 " template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}}\n",
		  GPUQ_ELIMIT,
		  "t.yaml: document 6: Trace \"t\": spec.generators[0]: the trace would hold more "
		  "than 1000000 workloads");
	parse_bad(POLICY "spec:\n  generators:\n  - {name: g, localQueues: [team-a/lq],"
			 " count: 2, runtime: 1s,"
			 " template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}}\n",
		  GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec.generators[0].every: required");
	parse_bad(POLICY "spec: {}\n", GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec: no workloads (give arrivals or "
		  "generators)");
	parse_bad(POLICY "spec:\n  options: {sampleInterval: 0}\n", GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec.options.sampleInterval: must be at least "
		  "1ms");
	parse_bad(POLICY "spec:\n  options: {fairShareHalfLife: 0}\n", GPUQ_EINVAL,
		  "t.yaml: document 6: Trace \"t\": spec.options.fairShareHalfLife: must be at "
		  "least 1ms");
	parse_bad(
	    POLICY "spec:\n  options: {fairShareSamplingInterval: \"0s\"}\n", GPUQ_EINVAL,
	    "t.yaml: document 6: Trace \"t\": spec.options.fairShareSamplingInterval: must be "
	    "at least 1ms");
	parse_bad(POLICY "spec: {}\n---\napiVersion: gpuq.dev/v1beta1\nkind: Trace\n", GPUQ_EINVAL,
		  "t.yaml: document 7: Trace: a second Trace document (the first is document 6)");
	parse_bad("apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: x}\n",
		  GPUQ_EINVAL,
		  "t.yaml: no Trace document (apiVersion: gpuq.dev/v1beta1, kind: Trace)");
}

/* Wrong types and out-of-range numbers: the message shows the value. */
#define ARRIVAL_WITH(fields)                                                                       \
	POLICY "spec:\n  arrivals:\n  - {name: a, localQueue: team-a/lq, " fields "}\n"

static void parse_errors_show_values(void **state)
{
	static const struct {
		const char *text;
		int rc;
		const char *msg;
	} cases[] = {
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{count: two, requests: {nvidia.com/gpu: "
			  "1}}]"),
	     GPUQ_EINVAL, "spec.arrivals[0].podSets[0].count: must be an integer, not \"two\""},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{count: 99999999999999999999999, "
			  "requests: {nvidia.com/gpu: 1}}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].podSets[0].count: must be an integer, not "
	     "\"99999999999999999999999\""},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{count: -3, requests: {nvidia.com/gpu: "
			  "1}}]"),
	     GPUQ_ERANGE, "spec.arrivals[0].podSets[0].count: -3 is out of range [1, 100000]"},
	    {ARRIVAL_WITH("at: true, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].at: must be milliseconds or a string like \"1.5s\", not true"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1.5e30}}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].podSets[0].requests.nvidia.com/gpu: must be a quantity such as 1, "
	     "\"2\" or \"500m\", not 1.5e+30"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 500m}}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].podSets[0].requests.nvidia.com/gpu: \"500m\" is not a whole number "
	     "(only cpu may ask for a fraction)"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: -1}}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].podSets[0].requests.nvidia.com/gpu: negative quantity \"-1\""},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{count: 100000, requests: "
			  "{nvidia.com/gpu: 9000000000000000000}}]"),
	     GPUQ_ERANGE,
	     "spec.arrivals[0].podSets[0].requests.nvidia.com/gpu: 100000 pods x "
	     "9000000000000000000 is more than the 1125899906842624 one pod set may ask for"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: {count: 1}"), GPUQ_EINVAL,
	     "spec.arrivals[0].podSets: must be a list, not a mapping"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}, "
			  "nodeSelector: {zone: 3}}]"),
	     GPUQ_EINVAL, "spec.arrivals[0].podSets[0].nodeSelector.zone: must be a string, not 3"},
	    {POLICY "spec: [1, 2]\n", GPUQ_EINVAL, "spec: must be a mapping, not a list"},
	    {POLICY "spec:\n  options: {utilizationResource: 42}\n", GPUQ_EINVAL,
	     "spec.options.utilizationResource: must be a string, not 42"},
	    {POLICY "spec:\n  options: {fairSharing: \"yes\"}\n", GPUQ_EINVAL,
	     "spec.options.fairSharing: must be true or false, not \"yes\""},
	    /* the field decoder's other refusals, as the policy objects have them */
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}, "
			  "tolerations: [{key: gpu, operator: Is}]}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].podSets[0].tolerations[0].operator: unknown value \"Is\" (want "
	     "Equal or Exists)"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}, "
			  "tolerations: [{key: 5}]}]"),
	     GPUQ_EINVAL,
	     "spec.arrivals[0].podSets[0].tolerations[0].key: must be a string, not 5"},
	    {ARRIVAL_WITH("at: -5, runtime: 1s, podSets: [{requests: {nvidia.com/gpu: 1}}]"),
	     GPUQ_ERANGE, "spec.arrivals[0].at: -5 ms is outside 0..10 years"},
	    {ARRIVAL_WITH("at: 0, runtime: 1s, podSets: [{requests: {a: 1}}, {requests: {a: 1}}, "
			  "{requests: {a: 1}}, {requests: {a: 1}}, {requests: {a: 1}}, {requests: "
			  "{a: 1}}, {requests: {a: 1}}, {requests: {a: 1}}, {requests: {a: 1}}]"),
	     GPUQ_ELIMIT, "spec.arrivals[0].podSets: 9 entries, more than the 8 allowed"},
	    {POLICY
	     "spec:\n  arrivals:\n  - {at: 0, name: \"\", localQueue: team-a/lq, runtime: 1s,"
	     " podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
	     GPUQ_EINVAL, "spec.arrivals[0].name: must not be empty"},
	    {POLICY "spec:\n  objectSets: [{count: 0, objects: []}]\n", GPUQ_ERANGE,
	     "spec.objectSets[0].count: 0 is out of range [1, 50000]"},
	    {POLICY "spec:\n  generators:\n  - {name: g, localQueues: [team-a/lq], count: 1,"
		    " runtime: 1s, template: {podSets: [{requests: {nvidia.com/gpu: 1}}], colour: "
		    "red}}\n",
	     GPUQ_EINVAL, "spec.generators[0].template.colour: unknown field"},
	};
	char want[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(want, sizeof(want), "t.yaml: document 6: Trace \"t\": %s", cases[i].msg);
		parse_bad(cases[i].text, cases[i].rc, want);
	}
}

/* A file over the cap is refused before parsing, naming file and size. */
static void parse_too_big(void **state)
{
	size_t len = SIM_TRACE_BYTES_MAX + 1;
	char *buf = malloc(len);
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_non_null(buf);
	memset(buf, '#', len);
	assert_int_equal(sim_trace_parse("big.yaml", buf, len, &t, &d), GPUQ_ELIMIT);
	assert_null(t);
	assert_string_equal(d.msg, "big.yaml: 4194305 bytes, more than the 4194304 a trace file "
				   "may have (use generators and objectSets for big traces)");
	free(buf);
}

/* Cross-object policy errors name the file and document (or the object sets). */
static void parse_policy_errors(void **state)
{
	(void)state;
	parse_bad(
	    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: x, name: lq}\n"
	    "spec: {clusterQueue: nope}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: p}\nspec:\n"
	    "  arrivals: [{at: 0, name: a, localQueue: x/lq, runtime: 1s,"
	    " podSets: [{requests: {nvidia.com/gpu: 1}}]}]\n",
	    GPUQ_EINVAL,
	    "t.yaml: document 1: LocalQueue \"x/lq\": spec.clusterQueue: ClusterQueue \"nope\" "
	    "not found");
	parse_bad(
	    "apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: p}\nspec:\n"
	    "  objectSets: [{count: 1, objects: [{apiVersion: gpuq.dev/v1beta1, kind: LocalQueue,"
	    " metadata: {namespace: \"n{i}\", name: lq}, spec: {clusterQueue: \"cq-{i}\"}}]}]\n",
	    GPUQ_EINVAL,
	    "t.yaml: document 1: Trace \"p\": spec.objectSets: LocalQueue \"n0/lq\": "
	    "spec.clusterQueue: ClusterQueue \"cq-0\" not found");
	parse_bad(
	    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", GPUQ_EINVAL,
	    "t.yaml: document 1: kind \"Pod\" (apiVersion \"v1\") is neither a Trace, a Node nor a "
	    "policy object");
}

/* The object-set error names the copy; the policy module words the rest. */
static void parse_error_in_object_set(void **state)
{
	static const char text[] =
	    "apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: s}\nspec:\n"
	    "  objectSets:\n  - count: 2\n    objects:\n"
	    "    - {apiVersion: gpuq.dev/v1beta1, kind: ResourceFlavor,"
	    " metadata: {name: same}}\n";
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(sim_trace_parse("t.yaml", text, strlen(text), &t, &d), GPUQ_EEXIST);
	assert_null(t);
	assert_non_null(strstr(d.msg, "t.yaml: document 1: Trace \"s\": "
				      "spec.objectSets[0].objects[0] (i=1): "));
	assert_non_null(strstr(d.msg, "same"));
}

/* ---- statistics ---- */

static void percentiles(void **state)
{
	const int64_t v[] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};

	(void)state;
	assert_int_equal(sim_stats_percentile(v, 0, 50), 0);
	assert_int_equal(sim_stats_percentile(v, 10, 50), 50);
	assert_int_equal(sim_stats_percentile(v, 10, 99), 100);
	assert_int_equal(sim_stats_percentile(v, 10, 90), 90);
	assert_int_equal(sim_stats_percentile(v, 10, 91), 100);
	assert_int_equal(sim_stats_percentile(v, 10, 100), 100);
	assert_int_equal(sim_stats_percentile(v, 1, 50), 10);
	assert_int_equal(sim_stats_percentile(v, 3, 50), 20);
}

static void jain(void **state)
{
	const double eq[] = {5, 5, 5, 5}, one[] = {8, 0, 0, 0}, half[] = {1, 1, 0, 0};
	const double x[] = {2, 1}, w[] = {2, 1};

	(void)state;
	assert_float_equal(sim_stats_jain(eq, NULL, 4), 1.0, 1e-12);
	assert_float_equal(sim_stats_jain(one, NULL, 4), 0.25, 1e-12);
	assert_float_equal(sim_stats_jain(half, NULL, 4), 0.5, 1e-12);
	assert_float_equal(sim_stats_jain(NULL, NULL, 0), 1.0, 1e-12);
	/* usage 2 with weight 2 and 1 with weight 1: perfectly fair */
	assert_float_equal(sim_stats_jain(x, w, 2), 1.0, 1e-12);
	/* (3)^2 / (2 * (1 + 4)) = 0.9 without weights */
	assert_float_equal(sim_stats_jain(x, NULL, 2), 0.9, 1e-12);
}

/* ---- scenarios (hand-computed) ---- */

static void scenario_tiny(void **state)
{
	sim_trace_t *t = parse_ok(tiny);
	sim_report_t *r = run_ok(t, NULL);
	char *json;

	(void)state;
	assert_int_equal(r->n_wl, 3);
	/* a: admitted at once, 10 s */
	assert_int_equal(r->wl[0].first_admit_ms, 0);
	assert_int_equal(r->wl[0].finish_ms, 10000);
	/* b and c wait for a's 4 GPUs, then fit together (2 + 2) */
	assert_int_equal(r->wl[1].first_admit_ms, 10000);
	assert_int_equal(r->wl[1].finish_ms, 15000);
	assert_int_equal(r->wl[2].first_admit_ms, 10000);
	assert_int_equal(r->wl[2].finish_ms, 11000);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(r->wl[i].state, SIM_WL_FINISHED);
	assert_int_equal(r->n_preempt, 0);
	json = report_text(r);
	assert_non_null(strstr(json, "\"makespanMs\": 15000,"));
	/* waits 0, 9000, 8000: mean 5666.7, p50 8000, p99 9000 */
	assert_non_null(strstr(json, "\"all\": {\"workloads\": 3, \"admitted\": 3, \"meanMs\": "
				     "5666.7, \"p50Ms\": 8000, \"p99Ms\": 9000, \"maxMs\": 9000}"));
	assert_non_null(strstr(json, "\"small\": {\"workloads\": 2, \"admitted\": 2, \"meanMs\": "
				     "8500.0, \"p50Ms\": 8000, \"p99Ms\": 9000, \"maxMs\": 9000}"));
	assert_non_null(strstr(json, "\"team-b/lq\": {\"workloads\": 1, \"admitted\": 1, "
				     "\"meanMs\": 8000.0"));
	/* 4 GPUs for 11 s then 2 for 4 s: 52,000 of 60,000 GPU-ms */
	assert_non_null(strstr(json, "\"capacity\": 4, \"average\": 0.8667, \"useful\": "
				     "0.8667, \"sampleIntervalMs\": 1000"));
	assert_non_null(strstr(json, "\"samples\": [4,4,4,4,4,4,4,4,4,4,4,2,2,2,2,0]"));
	/* tenant usage 40,000 + 10,000 vs 2,000: 52^2 / (2 * (50^2 + 2^2)) = 0.5399 */
	assert_non_null(strstr(json, "\"tenants\": {\"n\": 2, \"jain\": 0.5399}"));
	assert_non_null(strstr(json, "{\"name\": \"team-a/b\", \"localQueue\": \"team-a/lq\", "
				     "\"clusterQueue\": \"cq-a\", \"class\": \"small\", "
				     "\"priority\": 0, \"arrivalMs\": 1000, \"admittedMs\": 10000, "
				     "\"finishedMs\": 15000, \"waitMs\": 9000, \"preemptions\": 0, "
				     "\"state\": \"Finished\"}"));
	free(json);
	sim_report_destroy(r);
	sim_trace_destroy(t);
}

/* Admission fair sharing in a trace: team-a used the 4 GPUs for 10 s; when
 * they free, its older workload goes first without admissionScope (Kueue's
 * order: priority, creation) and team-b's with it (team-b used nothing).
 * The Trace's options set the decay. */
static void scenario_admission_fair_sharing(void **state)
{
	static const char head[] =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: default}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
	    "spec:\n  namespaceSelector: {}\n%s"
	    "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: default, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
	    "metadata: {namespace: team-a, name: lq}\nspec: {clusterQueue: cq}\n"
	    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
	    "metadata: {namespace: team-b, name: lq}\nspec: {clusterQueue: cq}\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: t}\nspec:\n"
	    "  options: {fairShareHalfLife: 10s, fairShareSamplingInterval: 1s}\n"
	    "  arrivals:\n"
	    "  - {at: 0, name: a0, localQueue: team-a/lq, runtime: 10s,"
	    "     podSets: [{requests: {nvidia.com/gpu: 4}}]}\n"
	    "  - {at: 1s, name: a1, localQueue: team-a/lq, runtime: 1s,"
	    "     podSets: [{requests: {nvidia.com/gpu: 4}}]}\n"
	    "  - {at: 2s, name: b1, localQueue: team-b/lq, runtime: 1s,"
	    "     podSets: [{requests: {nvidia.com/gpu: 4}}]}\n";
	char text[2048];

	(void)state;
	for (int afs = 0; afs < 2; afs++) {
		sim_trace_t *t;
		sim_report_t *r;

		snprintf(text, sizeof(text), head,
			 afs ? "  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n"
			     : "");
		t = parse_ok(text);
		assert_int_equal(t->opt.half_life_ms, 10000);
		assert_int_equal(t->opt.usage_sample_ms, 1000);
		r = run_ok(t, NULL);
		assert_int_equal(r->n_wl, 3);
		assert_int_equal(r->wl[0].first_admit_ms, 0);
		assert_int_equal(r->wl[1].first_admit_ms, afs ? 11000 : 10000); /* a1 */
		assert_int_equal(r->wl[2].first_admit_ms, afs ? 10000 : 11000); /* b1 */
		sim_report_destroy(r);
		sim_trace_destroy(t);
	}
}

static void scenario_preemption(void **state)
{
	static const char text[] =
	    POLICY "spec:\n  arrivals:\n"
		   "  - {at: 0, name: low, localQueue: team-a/lq, runtime: 10s,"
		   "     podSets: [{requests: {nvidia.com/gpu: 4}}]}\n"
		   "  - {at: 1s, name: urgent, localQueue: team-a/lq, runtime: 5s,"
		   "     priorityClass: high, podSets: [{requests: {nvidia.com/gpu: 4}}]}\n";
	sim_trace_t *t = parse_ok(text);
	sim_report_t *r = run_ok(t, NULL);
	char *json;

	(void)state;
	/* urgent evicts low at 1 s and is admitted in the next cycle at the same instant */
	assert_int_equal(r->n_preempt, 1);
	assert_int_equal(r->preempt[0].at_ms, 1000);
	assert_int_equal(r->preempt[0].victim, 0);
	assert_int_equal(r->preempt[0].by, 1);
	assert_string_equal(r->preempt[0].reason, "InClusterQueue");
	assert_int_equal(r->wl[1].first_admit_ms, 1000);
	assert_int_equal(r->wl[1].finish_ms, 6000);
	/* low restarts from scratch when urgent is done */
	assert_int_equal(r->wl[0].first_admit_ms, 0);
	assert_int_equal(r->wl[0].last_admit_ms, 6000);
	assert_int_equal(r->wl[0].finish_ms, 16000);
	assert_int_equal(r->wl[0].run_ms, 1000);
	assert_int_equal(r->wl[0].preemptions, 1);
	json = report_text(r);
	assert_non_null(strstr(json, "\"preemptions\": {\"total\": 1, \"byReason\": "
				     "{\"InClusterQueue\": 1},"));
	assert_non_null(strstr(json, "{\"atMs\": 1000, \"victim\": \"team-a/low\", \"by\": "
				     "\"team-a/urgent\", \"reason\": \"InClusterQueue\", "
				     "\"ranMs\": 1000}"));
	/* busy all the time: 1 + 5 + 10 s of 4 GPUs over a 16 s makespan, of
	 * which the 1 s low ran before its eviction was lost */
	assert_non_null(strstr(json, "\"average\": 1.0000, \"useful\": 0.9375"));
	/* chargeback, from the core's ledger: the same 16 s of 4 GPUs (the lost
	 * 1 s included), all within nominal, exactly the held resource-ms */
	assert_non_null(strstr(json, "{\"localQueue\": \"team-a/lq\", \"resource\": "
				     "\"nvidia.com/gpu\", \"nominalHours\": 0.017778, "
				     "\"borrowedHours\": 0.000000, \"cost\": 0.0000}"));
	{
		ledger_query_t q = {0, r->end_ms, r->end_ms, LEDGER_BY_CLUSTERQUEUE, NULL, 0};
		ledger_report_t w;
		double held = 0;

		for (size_t i = 0; i < r->n_wl; i++)
			held +=
			    (double)r->wl[i].amount *
			    (double)(r->wl[i].run_ms + r->wl[i].finish_ms - r->wl[i].last_admit_ms);
		assert_int_equal(ledger_window(r->ledger, &q, &w), GPUQ_OK);
		assert_int_equal(w.n_rows, 1);
		assert_true(fabs((w.rows[0].nominal_hours + w.rows[0].borrowed_hours) * 3600000.0 -
				 held) < 1e-6);
		assert_true(held == 4.0 * 16000);
		ledger_report_deinit(&w);
	}
	free(json);
	sim_report_destroy(r);
	sim_trace_destroy(t);
}

/* examples/traces/org-tree.yaml (hierarchical cohorts), invariants checked
 * after every step: nlp borrows through its department and the org's own
 * pool; vision reclaims inside the department (at 1 h); batch, with no
 * quota of its own, takes product's pool back from nlp through the org
 * (Kueue's hierarchical reclaim of a cohort's quota); serving reclaims its
 * nominal quota (after 2 h); only borrowers lose, nothing is lost. */
static void scenario_org_tree(void **state)
{
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};
	sim_report_t *r;
	char *json;
	size_t vision = 0, batch = 0, serving = 0;

	(void)state;
	if (sim_trace_load("examples/traces/org-tree.yaml", &t, &d))
		fail_msg("org-tree: %s", d.msg);
	r = run_ok(t, NULL);
	json = report_text(r);
	assert_non_null(strstr(json, "\"workloads\": 90, \"finished\": 90"));
	for (size_t i = 0; i < r->n_preempt; i++) {
		char v[64], b[64];

		assert_int_equal(sim_trace_workload_name(t, r->preempt[i].victim, v, sizeof(v)),
				 GPUQ_OK);
		assert_int_equal(sim_trace_workload_name(t, r->preempt[i].by, b, sizeof(b)),
				 GPUQ_OK);
		/* only borrowers lose */
		assert_true(strstr(v, "nlp-train") || strstr(v, "batch-embed"));
		assert_string_equal(r->preempt[i].reason, "InCohortReclamation");
		vision += strstr(b, "vision-train") != NULL;
		batch += strstr(b, "batch-embed") != NULL && strstr(v, "nlp-train") != NULL;
		serving += strstr(b, "serve") != NULL;
	}
	assert_true(vision >= 1);  /* inside research */
	assert_true(batch >= 1);   /* product's pool, from research through the org */
	assert_true(serving >= 1); /* its nominal quota */
	free(json);
	sim_report_destroy(r);
	sim_trace_destroy(t);
}

static void metrics_source(void *m, http_metrics_text_t *t)
{
	qmetrics_render(m, t);
}

/* The value of the sample that is exactly `series` in text. */
static double metric(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; (p = strstr(p, series)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	fail_msg("no sample %s", series);
	return -1;
}

/* The simulator feeds the queue metrics as the controller does: the
 * preemption scenario's admissions, waits (low's second one from its
 * requeue at 1 s to 6 s), eviction and preemption, and its store commits. */
static void scenario_metrics(void **state)
{
	static const char text[] =
	    POLICY "spec:\n  arrivals:\n"
		   "  - {at: 0, name: low, localQueue: team-a/lq, runtime: 10s,"
		   "     podSets: [{requests: {nvidia.com/gpu: 4}}]}\n"
		   "  - {at: 1s, name: urgent, localQueue: team-b/lq, runtime: 5s,"
		   "     priorityClass: high, podSets: [{requests: {nvidia.com/gpu: 4}}]}\n";
	char dir[] = "/tmp/gpuq-test-sim-metrics.XXXXXX", cmd[64], *out = NULL;
	sim_trace_t *t = parse_ok(text);
	sim_run_options_t opt = {.no_sync = true, .check = true};
	sim_report_t *r = NULL;
	qmetrics_t *m = NULL;
	gpuq_diag_t d = {{0}};
	size_t len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	opt.state_dir = dir;
	assert_int_equal(qmetrics_create(&m), GPUQ_OK);
	qmetrics_leader_set(m, true);
	opt.metrics = m;
	if (sim_run(t, &opt, &r, &d))
		fail_msg("run: %s", d.msg);
	assert_int_equal(http_metrics_source_render(metrics_source, m, &out, &len), GPUQ_OK);
	assert_int_equal(metric(out, "gpuq_cluster_queue_admissions_total{cluster_queue=\"cq-a\"}"),
			 3);
	assert_int_equal(metric(out, "gpuq_local_queue_admissions_total{namespace=\"team-a\","
				     "local_queue=\"lq\",cluster_queue=\"cq-a\"}"),
			 2);
	assert_int_equal(metric(out, "gpuq_cluster_queue_evictions_total{cluster_queue=\"cq-a\","
				     "reason=\"Preempted\"}"),
			 1);
	assert_int_equal(metric(out, "gpuq_cluster_queue_preemptions_total{preempting_cluster_"
				     "queue=\"cq-a\",reason=\"InClusterQueue\"}"),
			 1);
	/* waits: low 0 s, urgent 0 s, low again 5 s (requeued at 1 s) */
	assert_int_equal(metric(out, "gpuq_cluster_queue_admission_wait_seconds_bucket{cluster_"
				     "queue=\"cq-a\",le=\"0.1\"}"),
			 2);
	assert_int_equal(metric(out, "gpuq_cluster_queue_admission_wait_seconds_bucket{cluster_"
				     "queue=\"cq-a\",le=\"2.5\"}"),
			 2);
	assert_int_equal(metric(out, "gpuq_cluster_queue_admission_wait_seconds_bucket{cluster_"
				     "queue=\"cq-a\",le=\"5\"}"),
			 3);
	assert_int_equal(metric(out, "gpuq_cluster_queue_admission_wait_seconds_sum{cluster_"
				     "queue=\"cq-a\"}"),
			 5);
	/* the end state: all done; one commit per step */
	assert_int_equal(
	    metric(out, "gpuq_cluster_queue_admitted_workloads{cluster_queue=\"cq-a\"}"), 0);
	assert_int_equal(metric(out, "gpuq_store_commit_duration_seconds_count"), r->steps + 1);
	assert_int_equal(metric(out, "gpuq_controller_cycle_duration_seconds_count{result="
				     "\"success\"}"),
			 3);
	free(out);
	sim_report_destroy(r);
	qmetrics_destroy(m);
	sim_trace_destroy(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void scenario_gangs_and_nofit(void **state)
{
	static const char text[] =
	    POLICY "spec:\n  options: {gangReadyDelay: 500ms, gangReadyTimeout: 1s}\n"
		   "  arrivals:\n"
		   "  - {at: 0, name: ready, localQueue: team-a/lq, runtime: 2s, gang: true,"
		   "     podSets: [{count: 2, requests: {nvidia.com/gpu: 1}}]}\n"
		   "  - {at: 0, name: slow, localQueue: team-b/lq, runtime: 2s, gang: true,"
		   "     readyDelay: 5s, podSets: [{count: 2, requests: {nvidia.com/gpu: 1}}]}\n"
		   "  - {at: 0, name: huge, localQueue: team-b/lq, runtime: 2s,"
		   "     podSets: [{count: 1, requests: {nvidia.com/gpu: 8}}]}\n";
	sim_trace_t *t = parse_ok(text);
	sim_report_t *r = run_ok(t, NULL);
	size_t ready = find_wl(t, "ready"), slow = find_wl(t, "slow"), huge = find_wl(t, "huge");

	(void)state;
	/* Ready after 500 ms, then runs 2 s */
	assert_int_equal(r->wl[ready].state, SIM_WL_FINISHED);
	assert_int_equal(r->wl[ready].finish_ms, 2500);
	assert_int_equal(r->wl[ready].preemptions, 0);
	/* never Ready within 1 s: evicted, backed off, given up after 5 timeouts */
	assert_int_equal(r->wl[slow].state, SIM_WL_DROPPED);
	assert_int_equal(r->wl[slow].timeouts, SIM_READY_TIMEOUTS_MAX);
	assert_int_equal(r->n_preempt, SIM_READY_TIMEOUTS_MAX);
	assert_string_equal(r->preempt[0].reason, "PodsReadyTimeout");
	assert_int_equal(r->preempt[0].at_ms, 1000);
	/* 8 GPUs never fit a 4-GPU queue */
	assert_int_equal(r->wl[huge].state, SIM_WL_INADMISSIBLE);
	assert_int_equal(r->wl[huge].first_admit_ms, -1);
	/* and the report says why, in the core's words */
	assert_int_equal(r->n_why, 1);
	assert_int_equal(r->why_wl[0], huge);
	assert_non_null(strstr(r->why[0], "nvidia.com/gpu"));
	sim_report_destroy(r);
	sim_trace_destroy(t);
}

/* A trace may give a workload as the object a tenant submits: a JobSet
 * (the shape of JobSet's own examples: a driver and 2 workers, each a Job
 * of one Pod) becomes one gang of its replicatedJobs' pod sets, named
 * jobset/NAME, admitted whole: with 3 of 4 GPUs taken by a Job object it
 * waits, then runs once the Job has finished. */
static void scenario_objects(void **state)
{
	static const char text[] =
	    POLICY "spec:\n"
		   "  arrivals:\n"
		   "  - at: 0\n    localQueue: team-a/lq\n    runtime: 5s\n    object:\n"
		   "      apiVersion: batch/v1\n      kind: Job\n"
		   "      metadata: {name: prep, namespace: team-a}\n"
		   "      spec:\n        template:\n          spec:\n"
		   "            restartPolicy: Never\n"
		   "            containers: [{name: m, image: x, resources: {limits: "
		   "{nvidia.com/gpu: 3}}}]\n"
		   "  - at: 1s\n    localQueue: team-a/lq\n    runtime: 10s\n    object:\n"
		   "      apiVersion: jobset.x-k8s.io/v1alpha2\n      kind: JobSet\n"
		   "      metadata: {name: llama, namespace: team-a}\n"
		   "      spec:\n        replicatedJobs:\n"
		   "        - name: driver\n          template:\n            spec:\n"
		   "              template:\n                spec:\n"
		   "                  restartPolicy: Never\n"
		   "                  containers: [{name: d, image: x, resources: {limits: "
		   "{nvidia.com/gpu: 2}}}]\n"
		   "        - name: workers\n          replicas: 2\n          template:\n"
		   "            spec:\n              template:\n                spec:\n"
		   "                  restartPolicy: Never\n"
		   "                  containers: [{name: w, image: x, resources: {limits: "
		   "{nvidia.com/gpu: 1}}}]\n";
	sim_trace_t *t = parse_ok(text);
	sim_report_t *r;
	size_t js = find_wl(t, "jobset/llama"), job = find_wl(t, "job/prep");
	const sim_shape_t *sh = &t->shapes[t->arrivals[js].shape];

	(void)state;
	assert_int_equal(sh->n_podsets, 2);
	assert_string_equal(sh->podsets[0].name, "driver");
	assert_int_equal(sh->podsets[0].count, 1);
	assert_int_equal(sh->podsets[0].req[0].amount, 2);
	assert_string_equal(sh->podsets[1].name, "workers");
	assert_int_equal(sh->podsets[1].count, 2);
	assert_true(sh->gang);
	r = run_ok(t, NULL);
	assert_int_equal(r->wl[job].state, SIM_WL_FINISHED);
	assert_int_equal(r->wl[js].state, SIM_WL_FINISHED);
	assert_int_equal(r->wl[js].first_admit_ms, 5000); /* whole, once the Job is done */
	sim_report_destroy(r);
	sim_trace_destroy(t);
	parse_bad_prefix(POLICY
			 "spec:\n  arrivals:\n  - {at: 0, localQueue: team-a/lq, runtime: 1s,"
			 "    object: {apiVersion: v1, kind: Service, metadata: {name: s}}}\n",
			 GPUQ_EINVAL, "t.yaml: document 6: Trace \"t\": spec.arrivals[0].object: ");
}

/* An arrival's own wall-clock limit (issue 36): maxExecTime, or the label
 * on an arrival given as its object, stops it that long after its
 * admission (MaximumExecutionTimeExceeded) and leaves it deactivated; a
 * workload without one runs to its end. Not whole seconds: refused. */
static void scenario_own_limits(void **state)
{
	static const char text[] = POLICY
	    "spec:\n"
	    "  arrivals:\n"
	    "  - {at: 0, name: capped, localQueue: team-a/lq, runtime: 100s, maxExecTime: 30s,\n"
	    "     podSets: [{requests: {nvidia.com/gpu: 1}}]}\n"
	    "  - {at: 0, name: free, localQueue: team-a/lq, runtime: 50s,\n"
	    "     podSets: [{requests: {nvidia.com/gpu: 1}}]}\n"
	    "  - at: 0\n    localQueue: team-a/lq\n    runtime: 100s\n    object:\n"
	    "      apiVersion: batch/v1\n      kind: Job\n"
	    "      metadata: {name: labelled, namespace: team-a,\n"
	    "                 labels: {gpuq.dev/max-exec-time-seconds: \"20\"}}\n"
	    "      spec:\n        template:\n          spec:\n"
	    "            restartPolicy: Never\n"
	    "            containers: [{name: m, image: x, resources: {limits: "
	    "{nvidia.com/gpu: 1}}}]\n";
	sim_trace_t *t = parse_ok(text);
	sim_report_t *r;
	size_t capped = find_wl(t, "capped"), free_ = find_wl(t, "free"),
	       labelled = find_wl(t, "job/labelled");
	int stopped = 0;

	(void)state;
	assert_int_equal(t->shapes[t->arrivals[capped].shape].max_exec_s, 30);
	assert_int_equal(t->shapes[t->arrivals[labelled].shape].max_exec_s, 20);
	assert_int_equal(t->shapes[t->arrivals[free_].shape].max_exec_s, 0);
	r = run_ok(t, NULL);
	assert_int_equal(r->wl[free_].state, SIM_WL_FINISHED);
	assert_int_not_equal(r->wl[capped].state, SIM_WL_FINISHED);
	assert_int_not_equal(r->wl[labelled].state, SIM_WL_FINISHED);
	for (size_t i = 0; i < r->n_preempt; i++) {
		const sim_preemption_t *p = &r->preempt[i];

		assert_string_equal(p->reason, "MaximumExecutionTimeExceeded");
		if (p->victim == capped)
			assert_int_equal(p->at_ms - p->admitted_ms, 30000);
		else if (p->victim == labelled)
			assert_int_equal(p->at_ms - p->admitted_ms, 20000);
		else
			fail_msg("workload %u stopped", p->victim);
		stopped++;
	}
	assert_int_equal(stopped, 2);
	sim_report_destroy(r);
	sim_trace_destroy(t);
	parse_bad_prefix(
	    POLICY "spec:\n  arrivals:\n  - {at: 0, name: x, localQueue: team-a/lq, "
		   "runtime: 1s, maxExecTime: 1500ms,\n"
		   "     podSets: [{requests: {nvidia.com/gpu: 1}}]}\n",
	    GPUQ_EINVAL,
	    "t.yaml: document 6: Trace \"t\": spec.arrivals[0].maxExecTime: must be whole "
	    "seconds");
}

/* A ClusterQueue whose namespaceSelector leaves a namespace out makes that
 * namespace's workloads inadmissible at once (Kueue: always inadmissible). */
static void scenario_namespace_selector(void **state)
{
	static const char text[] =
	    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: rf}\n---\n"
	    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
	    "spec:\n  namespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: in}\n"
	    "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
	    "    flavors: [{name: rf, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\n"
	    "metadata: {namespace: in, name: lq}\nspec: {clusterQueue: cq}\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\n"
	    "metadata: {namespace: out, name: lq}\nspec: {clusterQueue: cq}\n"
	    "---\napiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: ns}\nspec:\n"
	    "  generators:\n  - {name: g, localQueuePattern: \"*/lq\", every: 1s, count: 2,"
	    " runtime: 1s, template: {podSets: [{requests: {nvidia.com/gpu: 2}}]}}\n";
	sim_trace_t *t = parse_ok(text);
	sim_report_t *r = run_ok(t, NULL);
	size_t in0 = 0, n_in = 0, n_out = 0;

	(void)state;
	for (size_t i = 0; i < r->n_wl; i++) {
		const char *ns = policy_lq_at(t->policy, t->arrivals[i].lq)->namespace_;
		if (!strcmp(ns, "in")) {
			assert_int_equal(r->wl[i].state, SIM_WL_FINISHED);
			if (n_in++ == 0)
				in0 = i;
		} else {
			assert_int_equal(r->wl[i].state, SIM_WL_INADMISSIBLE);
			assert_int_equal(r->wl[i].first_admit_ms, -1);
			n_out++;
		}
	}
	assert_int_equal(n_in, 2);
	assert_int_equal(n_out, 2);
	assert_int_equal(r->n_why, 2);
	assert_string_equal(r->why[0],
			    "its ClusterQueue's namespaceSelector does not select its namespace");
	/* in/g-lq-0 at 1 s for 1 s, in/g-lq-1 at 2 s */
	assert_int_equal(r->wl[in0].finish_ms, 2000);
	sim_report_destroy(r);
	sim_trace_destroy(t);
}

/* A series that would pass SIM_SAMPLES_MAX samples doubles its interval. */
static void utilization_sample_cap(void **state)
{
	static const char text[] =
	    POLICY "spec:\n  options: {sampleInterval: 1ms}\n  arrivals:\n"
		   "  - {at: 0, name: long, localQueue: team-a/lq, runtime: 10m,"
		   "     podSets: [{requests: {nvidia.com/gpu: 3}}]}\n";
	sim_trace_t *t = parse_ok(text);
	sim_report_t *r = run_ok(t, NULL);
	char *json = report_text(r);
	const char *samples;
	size_t commas = 0;

	(void)state;
	/* 600,000 ms: 1 -> 2 -> 4 -> 8 ms gives 75,001 samples */
	assert_non_null(strstr(json, "\"capacity\": 4, \"average\": 0.7500, \"useful\": 0.7500, "
				     "\"sampleIntervalMs\": 8,"));
	samples = strstr(json, "\"samples\": [");
	assert_non_null(samples);
	for (const char *c = samples; *c && *c != ']'; c++)
		commas += *c == ',';
	assert_int_equal(commas + 1, 75001);
	free(json);
	sim_report_destroy(r);
	sim_trace_destroy(t);
}

static const char busy[] = POLICY
    "spec:\n"
    "  options: {cycleInterval: 50ms}\n"
    "  arrivals:\n"
    "  - {at: 150ms, name: vip, localQueue: team-b/lq, runtime: 700ms, priorityClass: high,"
    "     podSets: [{count: 3, requests: {nvidia.com/gpu: 1}}]}\n"
    "  generators:\n"
    "  - {name: s, localQueuePattern: \"*/lq\", every: 30ms, count: 40, runtime: 170ms,"
    "     class: small, template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}}\n"
    "  - {name: m, localQueues: [team-a/lq], every: 110ms, count: 9, runtime: 260ms,"
    "     class: medium, template: {podSets: [{count: 2, requests: {nvidia.com/gpu: 1}}]}}\n";

static void determinism(void **state)
{
	sim_trace_t *t1 = parse_ok(busy), *t2 = parse_ok(busy);
	sim_report_t *r1 = run_ok(t1, NULL), *r2 = run_ok(t2, NULL);
	char *j1 = report_text(r1), *j2 = report_text(r2);

	(void)state;
	assert_int_equal(r1->n_wl, 90);
	assert_true(r1->n_preempt > 0);
	assert_int_equal(r1->cycle_cap_hits, 0); /* no preemption livelock */
	assert_string_equal(j1, j2);
	for (size_t i = 0; i < r1->n_wl; i++) {
		assert_int_equal(r1->wl[i].state, SIM_WL_FINISHED);
		/* cycles only every 50 ms */
		assert_int_equal(r1->wl[i].last_admit_ms % 50, 0);
	}
	free(j1);
	free(j2);
	sim_report_destroy(r1);
	sim_report_destroy(r2);
	sim_trace_destroy(t1);
	sim_trace_destroy(t2);
}

/* A run with a state dir gives the same report as one without, and a rerun on
 * a finished state dir restores it instead of running again. */
static void state_dir_resume(void **state)
{
	char dir[] = "/tmp/gpuq-test-sim-XXXXXX";
	sim_trace_t *t = parse_ok(busy), *other = parse_ok(tiny);
	sim_report_t *plain, *stored, *again;
	sim_run_options_t opt = {.state_dir = dir, .no_sync = true};
	gpuq_diag_t d = {{0}};
	char *j0, *j1, *j2, cmd[128];

	(void)state;
	assert_non_null(mkdtemp(dir));
	plain = run_ok(t, NULL);
	stored = run_ok(t, dir);
	again = run_ok(t, dir);
	j0 = report_text(plain);
	j1 = report_text(stored);
	j2 = report_text(again);
	assert_string_equal(j0, j1);
	assert_string_equal(j0, j2);
	assert_int_equal(stored->resumed_steps, 0);
	assert_int_equal(again->resumed_steps, stored->steps);
	sim_report_destroy(again);
	/* a different trace refuses the dir */
	assert_int_equal(sim_run(other, &opt, &again, &d), GPUQ_ECORRUPT);
	assert_string_equal(d.msg, "the state dir holds a run of a different trace");
	free(j0);
	free(j1);
	free(j2);
	sim_report_destroy(plain);
	sim_report_destroy(stored);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	sim_trace_destroy(t);
	sim_trace_destroy(other);
}

/* Two ClusterQueues of a cohort (fair sharing, borrowing, reclaim), tenant
 * usage decay, a 40 ms cycle interval, gangs that get Ready and one that
 * times out until it is dropped: every kind of state a step can leave. */
static const char cohort_mix[] =
    "apiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: rf}\n---\n"
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\n"
    "value: 1000\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: pool}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n"
    "spec:\n  cohortName: pool\n  namespaceSelector: {}\n  fairSharing: {weight: 2}\n"
    "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n"
    "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
    "    flavors: [{name: rf, resources: [{name: nvidia.com/gpu, nominalQuota: 4,"
    " borrowingLimit: 4}]}]\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: b}\n"
    "spec:\n  cohortName: pool\n  namespaceSelector: {}\n"
    "  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n"
    "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
    "    flavors: [{name: rf, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: x, name: lq}\n"
    "spec: {clusterQueue: a}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: y, name: lq}\n"
    "spec: {clusterQueue: a}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: z, name: lq}\n"
    "spec: {clusterQueue: b}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: mix}\nspec:\n"
    "  options: {cycleInterval: 40ms, fairSharing: true, fairShareHalfLife: 300ms,\n"
    "            gangReadyDelay: 30ms, gangReadyTimeout: 100ms}\n"
    "  arrivals:\n"
    "  - {at: 50ms, name: late, localQueue: z/lq, runtime: 100ms, gang: true,"
    "     readyDelay: 1s, podSets: [{count: 2, requests: {nvidia.com/gpu: 1}}]}\n"
    "  - {at: 200ms, name: vip, localQueue: z/lq, runtime: 300ms, priorityClass: high,"
    "     podSets: [{count: 4, requests: {nvidia.com/gpu: 1}}]}\n"
    "  generators:\n"
    "  - {name: s, localQueuePattern: \"*/lq\", every: 25ms, count: 30, runtime: 90ms,"
    "     template: {podSets: [{requests: {nvidia.com/gpu: 1}}]}}\n"
    "  - {name: g, localQueues: [x/lq, z/lq], every: 70ms, count: 8, runtime: 120ms,"
    "     template: {gang: true, podSets: [{count: 3, requests: {nvidia.com/gpu: 1}}]}}\n";

/* Resume from EVERY committed step: each call restores the state dir, runs
 * one step, commits and stops (as a kill right after that commit would),
 * and the report at the end equals an uninterrupted run's. The random kills
 * of unit/suite_sim_crash.sh rarely land right after the few steps that leave
 * a preemptor waiting for its cycle; this visits them all. */
static void resume_every_step_of(const char *text)
{
	char dir[] = "/tmp/gpuq-test-sim-XXXXXX", cmd[128];
	sim_trace_t *t = parse_ok(text);
	sim_report_t *plain = run_ok(t, NULL), *r = NULL;
	sim_run_options_t opt = {.state_dir = dir, .no_sync = true, .stop_after = 1};
	gpuq_diag_t d = {{0}};
	char *j0, *j1;
	uint64_t calls = 0;
	int rc;

	assert_non_null(mkdtemp(dir));
	while ((rc = sim_run(t, &opt, &r, &d)) == GPUQ_EAGAIN) {
		assert_null(r);
		if (++calls > plain->steps + 2)
			fail_msg("more calls (%llu) than the %llu steps of the run",
				 (unsigned long long)calls, (unsigned long long)plain->steps);
	}
	if (rc)
		fail_msg("resumed run failed: %s (%s)", d.msg, gpuq_strerror(rc));
	/* one call per step; the last one resumed after the final step and
	 * found the run over */
	assert_int_equal(calls, plain->steps);
	assert_int_equal(r->steps, plain->steps);
	assert_int_equal(r->resumed_steps, r->steps);
	j0 = report_text(plain);
	j1 = report_text(r);
	assert_string_equal(j0, j1);
	free(j0);
	free(j1);
	sim_report_destroy(plain);
	sim_report_destroy(r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	sim_trace_destroy(t);
}

static void resume_every_step(void **state)
{
	sim_trace_t *t = parse_ok(cohort_mix);
	sim_report_t *r = run_ok(t, NULL);
	bool reasons[4] = {false};

	(void)state;
	/* the mix really holds what it promises */
	for (size_t i = 0; i < r->n_preempt; i++) {
		reasons[0] |= !strcmp(r->preempt[i].reason, "PodsReadyTimeout");
		reasons[1] |= !strcmp(r->preempt[i].reason, "InClusterQueue");
		reasons[2] |= strstr(r->preempt[i].reason, "InCohort") != NULL;
	}
	for (size_t i = 0; i < r->n_wl; i++)
		reasons[3] |= r->wl[i].state == SIM_WL_DROPPED;
	assert_true(reasons[0] && reasons[2] && reasons[3]);
	assert_int_equal(r->cycle_cap_hits, 0);
	sim_report_destroy(r);
	sim_trace_destroy(t);
	resume_every_step_of(cohort_mix);
	resume_every_step_of(busy);
	resume_every_step_of(tiny);
}

/* GPU economics across resumes: a daily Hold budget that turns mid-run, a
 * minimum runtime delaying a preemptor, and idle reclaim of workloads whose
 * GPUs go idle (their idleness told to the core again after a resume). */
static const char econ_mix[] =
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: hi}\nvalue: 100\n"
    "---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
    "  namespaceSelector: {}\n  minRuntime: 20m\n"
    "  preemption: {withinClusterQueue: LowerPriority}\n"
    "  idleReclaim: {utilizationBelow: 10, for: 10m, action: Preempt}\n"
    "  resourceGroups:\n  - coveredResources: [gpu]\n"
    "    flavors: [{name: f, resources: [{name: gpu, nominalQuota: 4}]}]\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: a}\n"
    "spec:\n  clusterQueue: cq\n  budget: {gpuHours: 6, window: 1d, action: Hold}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: b}\n"
    "spec: {clusterQueue: cq}\n---\n"
    "apiVersion: gpuq.dev/v1beta1\nkind: Trace\nmetadata: {name: econ}\nspec:\n"
    "  options: {budgetInterval: 5m}\n"
    "  generators:\n"
    "  - {name: work, localQueues: [a/lq], start: 20h, every: 30m, count: 12, runtime: 1h,"
    "     template: {podSets: [{requests: {gpu: 2}}]}}\n"
    "  - {name: idle, localQueues: [b/lq], start: 20h, every: 2h, count: 3, runtime: 3h,"
    "     template: {idleAfter: 15m, podSets: [{requests: {gpu: 2}}]}}\n"
    "  - {name: vip, localQueues: [b/lq], start: 21h, every: 90m, count: 3, runtime: 20m,"
    "     priorityClass: hi, template: {podSets: [{requests: {gpu: 4}}]}}\n";

static void econ_resume_every_step(void **state)
{
	sim_trace_t *t = parse_ok(econ_mix);
	sim_report_t *r = run_ok(t, NULL);
	bool idle = false, held = false;
	int64_t turn = 24 * 3600000LL, shortest = INT64_MAX;

	(void)state;
	/* the mix really holds what it promises: a reclaim, a workload of a/lq
	 * started only when the day turned, no preemption before 20 min */
	for (size_t i = 0; i < r->n_preempt; i++) {
		idle |= !strcmp(r->preempt[i].reason, "IdleReclaim");
		if (r->preempt[i].at_ms - r->preempt[i].admitted_ms < shortest)
			shortest = r->preempt[i].at_ms - r->preempt[i].admitted_ms;
	}
	for (size_t i = 0; i < r->n_wl; i++) /* a/lq's: arrived before, started at a turn */
		held |= r->wl[i].first_admit_ms > r->trace->arrivals[i].at_ms &&
			r->wl[i].first_admit_ms % turn == 0;
	assert_true(idle && held && r->econ);
	assert_true(shortest >= 20 * 60000);
	sim_report_destroy(r);
	sim_trace_destroy(t);
	resume_every_step_of(econ_mix);
}

/* sim_state_check decodes a stopped run's store, agrees with it, and
 * catches a core record the simulator's records contradict. */
static void state_check(void **state)
{
	char dir[] = "/tmp/gpuq-test-sim-XXXXXX", cmd[160];
	sim_trace_t *t = parse_ok(cohort_mix), *other = parse_ok(tiny);
	sim_run_options_t opt = {.state_dir = dir, .no_sync = true, .stop_after = 25};
	sim_state_summary_t sum;
	sim_report_t *r = NULL;
	gpuq_diag_t d = {{0}};
	engine_t *e = NULL;
	const queue_t *q;
	store_opts_t so;
	store_t *st;
	store_txn_t *txn;
	char uid[16] = "";
	size_t in_core = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sim_run(t, &opt, &r, &d), GPUQ_EAGAIN);
	assert_int_equal(sim_state_check(t, dir, &sum, &e, &d), GPUQ_OK);
	q = engine_core(e);
	assert_true(sum.has_progress);
	assert_int_equal(sum.steps, 25);
	assert_false(sum.done);
	assert_true(sum.core_pending + sum.core_admitted > 0);
	assert_int_equal(sum.core_pending,
			 sum.by_state[SIM_WL_PENDING] + sum.by_state[SIM_WL_INADMISSIBLE]);
	assert_int_equal(sum.core_admitted, sum.by_state[SIM_WL_ADMITTED]);
	for (queue_wl_t id = queue_workload_next(q, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(q, id)) {
		queue_workload_view_t v;
		assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
		if (!uid[0] && v.state == QUEUE_WL_PENDING) /* an admitted one would break
							       the CQ's usage record */
			snprintf(uid, sizeof(uid), "%s", v.uid);
		in_core++;
	}
	assert_int_equal(in_core, sum.core_pending + sum.core_admitted);
	assert_true(uid[0]);
	engine_close(e);
	/* a different trace is refused */
	assert_int_equal(sim_state_check(other, dir, &sum, NULL, &d), GPUQ_ECORRUPT);
	assert_string_equal(d.msg, "the state dir holds a run of a different trace");
	/* drop one workload from the core's records: the simulator still holds it */
	store_opts_init(&so);
	engine_store_types(&so);
	assert_int_equal(store_open(dir, &so, &st, &d), GPUQ_OK);
	assert_int_equal(store_txn_begin(st, &txn), GPUQ_OK);
	assert_int_equal(store_del(txn, QUEUE_REC_WORKLOAD, uid, strlen(uid)), GPUQ_OK);
	assert_int_equal(store_txn_commit(txn, NULL), GPUQ_OK);
	store_close(st);
	d.msg[0] = '\0';
	assert_int_equal(sim_state_check(t, dir, &sum, NULL, &d), GPUQ_ECORRUPT);
	if (!strstr(d.msg, uid))
		fail_msg("message \"%s\" does not name %s", d.msg, uid);
	/* a blank store (killed inside its first open) holds nothing, soundly */
	snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir %s && : > %s/data.mdb", dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sim_state_check(t, dir, &sum, &e, &d), GPUQ_OK);
	assert_false(sum.has_progress);
	assert_int_equal(sum.core_pending + sum.core_admitted, 0);
	assert_int_equal(queue_cq_count(engine_core(e)), 2);
	engine_close(e);
	/* no store at all */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sim_state_check(t, dir, &sum, NULL, &d), GPUQ_ENOTFOUND);
	sim_trace_destroy(t);
	sim_trace_destroy(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_tiny),
	    cmocka_unit_test(parse_generators),
	    cmocka_unit_test(parse_object_sets),
	    cmocka_unit_test(parse_errors),
	    cmocka_unit_test(parse_errors_show_values),
	    cmocka_unit_test(parse_too_big),
	    cmocka_unit_test(parse_error_in_object_set),
	    cmocka_unit_test(parse_policy_errors),
	    cmocka_unit_test(percentiles),
	    cmocka_unit_test(jain),
	    cmocka_unit_test(scenario_tiny),
	    cmocka_unit_test(scenario_admission_fair_sharing),
	    cmocka_unit_test(scenario_preemption),
	    cmocka_unit_test(scenario_org_tree),
	    cmocka_unit_test(scenario_metrics),
	    cmocka_unit_test(scenario_gangs_and_nofit),
	    cmocka_unit_test(scenario_objects),
	    cmocka_unit_test(scenario_own_limits),
	    cmocka_unit_test(scenario_namespace_selector),
	    cmocka_unit_test(utilization_sample_cap),
	    cmocka_unit_test(determinism),
	    cmocka_unit_test(state_dir_resume),
	    cmocka_unit_test(resume_every_step),
	    cmocka_unit_test(econ_resume_every_step),
	    cmocka_unit_test(state_check),
	};
	if (getenv("SIM_TEST_FILTER")) /* e.g. "parse*" while debugging */
		cmocka_set_test_filter(getenv("SIM_TEST_FILTER"));
	return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}

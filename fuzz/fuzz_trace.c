/* Fuzz target for `gpuq simulate` traces: parse the input with
 * sim_trace_parse (YAML or JSON, policy objects plus one Trace document) and,
 * when it parses, check what the simulator relies on: arrivals sorted by
 * time, every index in range, every name printable; then build the queue
 * core from the trace's policy (sim_engine_open, i.e. engine_open), as
 * every run does first. Also feeds the input to gpuq_duration_parse. Any
 * input must end in GPUQ_OK or a clean error with a message, never a crash,
 * leak, undefined behaviour or abort. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"
#include "sim/sim.h"

#define DURATION_INPUT_MAX 64 /* longer strings only test the digit cap */

/* A broken invariant of a parsed trace: abort so libFuzzer reports it. */
static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_trace: broken invariant: %s\n", what);
		abort();
	}
}

static void check_trace(const sim_trace_t *t)
{
	char name[4 * SIM_NAME_MAX]; /* namespace, generator, LocalQueue, number */

	check(t->n_arrivals > 0 && t->n_arrivals <= SIM_WORKLOADS_MAX, "workload count");
	for (size_t i = 0; i < t->n_arrivals; i++) {
		const sim_arrival_t *a = &t->arrivals[i];
		check(i == 0 || t->arrivals[i - 1].at_ms <= a->at_ms, "arrivals sorted");
		check(a->at_ms >= 0 && a->at_ms <= SIM_TIME_MAX_MS, "arrival time");
		check(a->runtime_ms >= 1 && a->runtime_ms <= SIM_TIME_MAX_MS, "runtime");
		check(a->shape < t->n_shapes && a->lq < t->n_lqs, "shape and LocalQueue");
		check(a->class_id < t->n_classes, "class");
		if (a->source == SIM_SOURCE_EXPLICIT)
			check(a->seq < t->n_names, "explicit name");
		else
			check(a->source < t->n_gens, "generator");
		/* names of the first few only: a million would make runs slow */
		if (i < 64)
			check(sim_trace_workload_name(t, i, name, sizeof(name)) == GPUQ_OK,
			      "workload name");
	}
	for (size_t s = 0; s < t->n_shapes; s++) {
		const sim_shape_t *sh = &t->shapes[s];
		check(sh->n_podsets >= 1 && sh->n_podsets <= SIM_PODSETS_MAX, "pod sets");
		for (size_t p = 0; p < sh->n_podsets; p++) {
			const sim_podset_t *ps = &sh->podsets[p];
			check(ps->count >= 1 && ps->count <= SIM_PODS_MAX, "pod count");
			check(ps->n_req <= SIM_POD_RES_MAX, "requests");
			for (size_t r = 0; r < ps->n_req; r++)
				check(ps->req[r].res < t->n_res && ps->req[r].amount >= 0,
				      "request");
		}
	}
	check(t->opt.sample_interval_ms >= 1, "sample interval");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sim_trace_t *t = NULL;
	gpuq_diag_t diag = {{0}};
	char dur[DURATION_INPUT_MAX + 1];
	int64_t ms;
	int rc;

	rc = sim_trace_parse("fuzz.yaml", (const char *)data, size, &t, &diag);
	if (rc == GPUQ_OK) {
		engine_t *e = NULL;
		check_trace(t);
		diag.msg[0] = '\0';
		rc = sim_engine_open(t, &e, &diag);
		check(rc == GPUQ_OK ? e != NULL : e == NULL, "core built or not, never half");
		check(rc == GPUQ_OK || diag.msg[0] != '\0' || rc == GPUQ_ENOMEM,
		      "a core refusal without a message");
		check(rc != GPUQ_OK || queue_cq_count(engine_core(e)) == t->n_cqs,
		      "every ClusterQueue in the core");
		engine_close(e);
	} else {
		check(diag.msg[0] != '\0' || rc == GPUQ_ENOMEM, "an error without a message");
	}
	sim_trace_destroy(t);

	if (size <= DURATION_INPUT_MAX && !memchr(data, 0, size)) {
		memcpy(dur, data, size);
		dur[size] = '\0';
		if (gpuq_duration_parse(dur, &ms, &diag) == GPUQ_OK)
			check(ms >= 0 && ms <= SIM_TIME_MAX_MS, "duration range");
	}
	return 0;
}

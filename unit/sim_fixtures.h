/* Helpers shared by the simulator's unit tests (test_sim.c,
 * test_sim_topology.c). static inline, so a test that leaves one unused
 * does not warn. */
#ifndef GPUQ_UNIT_SIM_FIXTURES_H
#define GPUQ_UNIT_SIM_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "sim/sim.h"

/* text parsed as a trace (named t.yaml), or the test fails saying why. */
static inline sim_trace_t *parse_ok(const char *text)
{
	sim_trace_t *t = NULL;
	gpuq_diag_t d = {{0}};
	int rc = sim_trace_parse("t.yaml", text, strlen(text), &t, &d);

	if (rc)
		fail_msg("parse failed: %s (%s)", d.msg, gpuq_strerror(rc));
	return t;
}

#endif

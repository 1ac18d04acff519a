/* engine/policyset.c: a new policy for a live engine: the first one builds
 * the core (restoring the store's records), a later one is taken in place
 * when the tree's shape allows and rebuilds the core otherwise; and a reset
 * to a fresh core. */
#include "engine/internal.h"

#include <stdio.h>
#include <string.h>

/* The first policy: a core built from p; with a store, its records
 * restored into it, or, when they do not fit p, a core from p alone. */
static int first(engine_t *e, policy_t *p, engine_policy_report_t *rep, gpuq_diag_t *diag)
{
	gpuq_diag_t why = {{0}};
	queue_t *q = NULL;
	int rc = engine_core_build(p, &e->cfg, &q, diag);

	if (rc)
		return rc;
	rep->how = ENGINE_POLICY_BUILT;
	if (e->store && !e->read_only) {
		rc = engine_restore(e->store, q, &why);
		if (rc) {
			queue_destroy(q);
			q = NULL;
			snprintf(rep->why, sizeof(rep->why), "%s",
				 why.msg[0] ? why.msg : gpuq_strerror(rc));
			rc = engine_core_build(p, &e->cfg, &q, diag);
			if (rc)
				return rc;
			rep->how = ENGINE_POLICY_FRESH;
			e->full_next = true; /* drops the records that did not fit */
		} else {
			e->resumed = e->restore_due;
		}
		e->restore_due = false;
	}
	e->q = q;
	return GPUQ_OK;
}

/* A new core for p carrying the current one's records; a cycle on the old
 * core first when the rebuild asks for one. */
static int rebuild(engine_t *e, policy_t *p, int64_t now, engine_policy_report_t *rep,
		   gpuq_diag_t *diag)
{
	queue_t *q = NULL;
	int rc = engine_core_rebuild(e->q, p, &e->cfg, &q, &rep->rebuild, diag);

	if (rc == GPUQ_EAGAIN) {
		/* a cycle on the old core settles what the rebuild cannot carry */
		(void)queue_cycle_run(e->q, now, NULL);
		rep->cycled = true;
		rc = engine_core_rebuild(e->q, p, &e->cfg, &q, &rep->rebuild, diag);
	}
	if (rc)
		return rc;
	queue_destroy(e->q);
	e->q = q;
	e->full_next = true; /* drops the records of what the rebuild dropped */
	rep->how = ENGINE_POLICY_REBUILT;
	return GPUQ_OK;
}

int engine_policy_set(engine_t *e, policy_t *p, int64_t now, engine_policy_report_t *rep,
		      gpuq_diag_t *diag)
{
	engine_apply_report_t arep;
	gpuq_diag_t adiag = {{0}};
	int rc;

	memset(rep, 0, sizeof(*rep));
	if (!e->q) {
		rc = first(e, p, rep, diag);
	} else {
		rc = engine_core_apply(e->q, e->policy, p, &arep, &adiag);
		if (!rc) {
			rep->how = ENGINE_POLICY_IN_PLACE;
			rep->cqs_updated = arep.cqs_updated;
		} else {
			rep->refused = !(rc == GPUQ_EINVAL && arep.why[0]);
			snprintf(rep->why, sizeof(rep->why), "%s",
				 rep->refused ? adiag.msg : arep.why);
			rc = rebuild(e, p, now, rep, diag);
		}
	}
	if (rc) {
		engine_rebuild_report_deinit(&rep->rebuild);
		return rc;
	}
	if (e->policy)
		policy_unref(e->policy);
	e->policy = policy_ref(p);
	return GPUQ_OK;
}

void engine_policy_report_deinit(engine_policy_report_t *rep)
{
	if (!rep)
		return;
	engine_rebuild_report_deinit(&rep->rebuild);
	memset(rep, 0, sizeof(*rep));
}

int engine_core_reset(engine_t *e, gpuq_diag_t *diag)
{
	queue_t *q = NULL;
	int rc;

	if (!e->policy)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "engine: no policy in force");
	rc = engine_core_build(e->policy, &e->cfg, &q, diag);
	if (rc)
		return rc;
	queue_destroy(e->q);
	e->q = q;
	e->full_next = true;
	return GPUQ_OK;
}

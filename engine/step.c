/* engine/step.c: the step every driver takes: the tick, the cycles at one
 * instant, one commit, and only then the results handed back (kept here,
 * copied out of the core's per-call arrays, for the acts). */
#include "engine/internal.h"

#include <stdlib.h>
#include <string.h>

/* Append count elements of size bytes from src to the vector whose items,
 * length and capacity are *items_p, *n and *cap (growing it by doubling);
 * the first one's index into *at. GPUQ_ENOMEM leaves it as it was. */
static int append(void *items_p, size_t *n, size_t *cap, size_t size, const void *src, size_t count,
		  size_t *at)
{
	void **items = items_p;
	size_t ncap = *cap ? *cap : 16;

	*at = *n;
	while (ncap < *n + count)
		ncap *= 2;
	if (ncap > *cap) {
		void *g = realloc(*items, ncap * size);
		if (!g)
			return GPUQ_ENOMEM;
		*items = g;
		*cap = ncap;
	}
	if (count)
		memcpy((char *)*items + *n * size, src, count * size);
	*n += count;
	return GPUQ_OK;
}

#define APPEND(v, src, count, at)                                                                  \
	append(&(v).items, &(v).n_items, &(v).cap, sizeof(*(v).items), (src), (count), &(at))

/* Keep a copy of one admission's assignments and one eviction's message:
 * the core reuses their arrays at its next call. */
static int keep_admission(engine_kept_t *k, const queue_admission_t *a)
{
	size_t at, slot;
	int rc = APPEND(k->assigns, a->assign, a->n_assign, at);

	return rc ? rc : APPEND(k->assign_at, &at, 1, slot);
}

static int keep_eviction(engine_kept_t *k, const queue_eviction_t *ev)
{
	const char *m = ev->message ? ev->message : "";
	size_t at, slot;
	int rc = APPEND(k->text, m, strlen(m) + 1, at);

	return rc ? rc : APPEND(k->text_at, &at, 1, slot);
}

/* Copy result r into the kept lists. The pointers are set by link_kept() once
 * the step's results are all in, since the lists move while they grow. */
static int keep(engine_kept_t *k, engine_phase_t phase, const queue_result_t *r)
{
	engine_kept_result_t kr = {.phase = phase, .res = *r};
	size_t at;
	int rc = APPEND(k->admissions, r->admissions, r->n_admissions, kr.admissions);

	for (size_t i = 0; !rc && i < r->n_admissions; i++)
		rc = keep_admission(k, &r->admissions[i]);
	if (!rc)
		rc = APPEND(k->evictions, r->evictions, r->n_evictions, kr.evictions);
	for (size_t i = 0; !rc && i < r->n_evictions; i++)
		rc = keep_eviction(k, &r->evictions[i]);
	if (!rc)
		rc = APPEND(k->changes, r->changes, r->n_changes, kr.changes);
	if (!rc)
		rc = APPEND(k->idles, r->idles, r->n_idles, kr.idles);
	if (!rc)
		rc = APPEND(k->budget_changes, r->budget_changes, r->n_budget_changes,
			    kr.budget_changes);
	return rc ? rc : APPEND(k->results, &kr, 1, at);
}

/* Point every kept result into the kept lists. */
static void link_kept(engine_kept_t *k)
{
	for (size_t i = 0; i < k->admissions.n_items; i++)
		k->admissions.items[i].assign = k->assigns.items + k->assign_at.items[i];
	for (size_t i = 0; i < k->evictions.n_items; i++)
		k->evictions.items[i].message = k->text.items + k->text_at.items[i];
	for (size_t i = 0; i < k->results.n_items; i++) {
		engine_kept_result_t *kr = &k->results.items[i];
		kr->res.admissions = k->admissions.items + kr->admissions;
		kr->res.evictions = k->evictions.items + kr->evictions;
		kr->res.changes = k->changes.items + kr->changes;
		kr->res.idles = k->idles.items + kr->idles;
		kr->res.budget_changes = k->budget_changes.items + kr->budget_changes;
	}
}

static void kept_clear(engine_kept_t *k)
{
	k->results.n_items = k->admissions.n_items = k->assign_at.n_items = 0;
	k->assigns.n_items = k->evictions.n_items = k->text_at.n_items = 0;
	k->text.n_items = k->changes.n_items = k->idles.n_items = k->budget_changes.n_items = 0;
}

void engine_kept_free(engine_kept_t *k)
{
	free(k->results.items);
	free(k->admissions.items);
	free(k->assign_at.items);
	free(k->assigns.items);
	free(k->evictions.items);
	free(k->text_at.items);
	free(k->text.items);
	free(k->changes.items);
	free(k->idles.items);
	free(k->budget_changes.items);
	memset(k, 0, sizeof(*k));
}

static uint64_t clock_of(const engine_step_opts_t *o)
{
	return o->clock_ns ? o->clock_ns(o->ctx) : 0;
}

/* One result of the step: booked, and kept when the driver acts. */
static int one(engine_t *e, const engine_step_opts_t *o, engine_phase_t phase,
	       const queue_result_t *r, gpuq_diag_t *diag)
{
	int rc = o->book ? o->book(o->ctx, phase, r, diag) : GPUQ_OK;

	if (!rc && o->act)
		rc = keep(&e->kept, phase, r);
	return rc;
}

/* The tick and the cycles o allows; *rep filled. A book hook's error or
 * GPUQ_ENOMEM keeping a result; the core's own error goes to rep->core_rc. */
static int decide(engine_t *e, int64_t now, const engine_step_opts_t *o, engine_step_report_t *rep,
		  gpuq_diag_t *diag)
{
	queue_result_t r;
	uint64_t t0 = clock_of(o);
	bool due;
	int rc;

	rep->core_rc = queue_tick(e->q, now, &r);
	rep->core_ns += clock_of(o) - t0;
	rep->tick_evicted = rep->evicted = r.n_evictions > 0;
	rc = one(e, o, ENGINE_STEP_TICK, &r, diag);
	due = o->cycle_due || r.n_evictions > 0;
	for (unsigned k = 0; !rc && !rep->core_rc && due && k < o->cycles; k++) {
		t0 = clock_of(o);
		rep->core_rc = queue_cycle_run(e->q, now, &r);
		rep->core_ns += clock_of(o) - t0;
		rep->cycles++;
		rep->evicted = due = r.n_evictions > 0;
		rc = one(e, o, ENGINE_STEP_CYCLE, &r, diag);
	}
	return rc;
}

int engine_step(engine_t *e, int64_t now, const engine_step_opts_t *o, engine_step_report_t *rep,
		gpuq_diag_t *diag)
{
	engine_step_report_t local;
	uint64_t t0;
	int rc;

	if (!rep)
		rep = &local;
	memset(rep, 0, sizeof(*rep));
	if (!e->q)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "engine: no policy in force yet");
	kept_clear(&e->kept);
	rc = decide(e, now, o, rep, diag);
	if (!rc && o->booked)
		rc = o->booked(o->ctx, diag);
	if (rc)
		return rc;
	if (e->store && (o->stage || engine_commit_due(e))) {
		t0 = clock_of(o);
		rep->commit_tried = true;
		rep->commit_rc = engine_commit(e, o->stage, o->ctx, diag);
		rep->commit_ns = clock_of(o) - t0;
		if (rep->commit_rc)
			return rep->commit_rc;
	}
	if (o->act) {
		link_kept(&e->kept);
		for (size_t i = 0; i < e->kept.results.n_items; i++)
			o->act(o->ctx, e->kept.results.items[i].phase,
			       &e->kept.results.items[i].res);
	}
	return rep->core_rc;
}

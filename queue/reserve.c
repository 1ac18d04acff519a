/*
 * queue/reserve.c: the bounded wait. A ClusterQueue's starvation limit gives
 * the first pending workload in queue order that has waited past it a
 * reservation, decided afresh at each cycle of its cohort from what the
 * records hold (never persisted), and keeps the workloads that would delay
 * its start from being admitted ahead of it, backfill excepted.
 * See queue.h ("Bounded wait") for the contract.
 */
#include "queue/internal.h"

#include <stdlib.h>

/* When admitted workload w ends at the latest: its wall-clock deadline or
 * the end of its run bound (what its own controller enforces), the earlier;
 * INT64_MAX: unknown. */
static int64_t runner_end(const queue_t *q, const wl_t *w)
{
	int64_t end = queue_exec_deadline(q, w);

	if (w->run_bound_s > 0 && w->admitted_ms >= 0 &&
	    w->admitted_ms + (int64_t)w->run_bound_s * 1000 < end)
		end = w->admitted_ms + (int64_t)w->run_bound_s * 1000;
	return end;
}

/* An admitted workload of the reserving one's ClusterQueue, by when it ends. */
typedef struct {
	int64_t end;	     /* its wall-clock deadline; INT64_MAX: unknown */
	int64_t admitted_ms; /* ties: the oldest admission first */
	uint32_t wl;	     /* the workload */
} runner_t;

static int runner_cmp(const void *pa, const void *pb)
{
	const runner_t *a = pa, *b = pb;

	if (a->end != b->end)
		return a->end < b->end ? -1 : 1;
	if (a->admitted_ms != b->admitted_ms)
		return a->admitted_ms < b->admitted_ms ? -1 : 1;
	return a->wl < b->wl ? -1 : a->wl > b->wl;
}

/* Amounts per resource id. A struct returned by value, not an array
 * filled through a parameter: built by GCC 12.2 at -O2, that form lost
 * the fill (dead store elimination, pass dse2, removed the call; with
 * -fno-strict-aliasing or -O1 it stayed; unit/test_queue_reserve.c
 * caught it). */
typedef struct {
	int64_t v[QUEUE_RESOURCES_MAX]; /* by resource id */
} amounts_t;

/* Workload w's total request per resource id. */
static amounts_t wl_need(const queue_t *q, const wl_t *w)
{
	const psref_t *ps = wl_ps(w);
	amounts_t need = {{0}};

	for (uint8_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *tm = &q->tmpls[ps[p].tmpl];

		for (uint8_t r = 0; r < tm->n_req; r++)
			need.v[tm->res[r]] += tm->amt[r] * ps[p].count;
	}
	return need;
}

/* Whether free quota have covers need for every resource. */
static bool covers(const amounts_t *need, const amounts_t *have)
{
	for (uint32_t r = 0; r < QUEUE_RESOURCES_MAX; r++)
		if (need->v[r] > 0 && have->v[r] < need->v[r])
			return false;
	return true;
}

/* Whether pending workload wid of CQ c may hold c's reservation at now:
 * the time it has waited, from its creation less the time it held quota
 * (a workload preempted after a long run starts its wait where it left it,
 * not at its creation), is past c's limit. */
static bool starving(const queue_t *q, const cq_t *c, uint32_t wid, int64_t now)
{
	const wl_t *w = Wc(q, wid);

	return w->wait != QUEUE_WAIT_NO_FIT && !queue_lq_held(q, w->lq) &&
	       now - w->created - w->exec_ms > c->starve;
}

/* The first starving pending workload of CQ c in queue order, or QUEUE_NONE:
 * the set-aside ones and every LocalQueue's heap (backoffs, gangs and
 * deactivated workloads are in neither). */
static uint32_t first_starving(const queue_t *q, const cq_t *c, int64_t now)
{
	uint32_t h = QUEUE_NONE;

	for (size_t i = 0; i < c->aside.n; i++)
		if (starving(q, c, c->aside.v[i], now) &&
		    (h == QUEUE_NONE || queue_wl_cmp(q, c->aside.v[i], h) < 0))
			h = c->aside.v[i];
	for (size_t k = 0; k < c->lqs.n; k++) {
		const u32vec_t *hp = &q->lqs[c->lqs.v[k]].heap;

		for (size_t i = 0; i < hp->n; i++)
			if (starving(q, c, hp->v[i], now) &&
			    (h == QUEUE_NONE || queue_wl_cmp(q, hp->v[i], h) < 0))
				h = hp->v[i];
	}
	return h;
}

/* How many of CQ c's running workloads must end, and when by their limits,
 * before reserving workload h fits: free quota per resource (what its slots
 * could take now, the cohort's lending counted) plus what the runners free,
 * earliest deadline first. Out of memory or never enough: unknown. */
static void reserved_start(const queue_t *q, cq_t *c, uint32_t h, int64_t now)
{
	amounts_t need = wl_need(q, Wc(q, h)), have = {{0}};
	runner_t *v;

	for (uint32_t s = 0; s < c->n_slots; s++)
		have.v[c->slots[s].res] += queue_slot_available(q, c, &c->slots[s]);
	if (covers(&need, &have)) {
		c->resv_start = now;
		return;
	}
	v = c->adm.n ? malloc(c->adm.n * sizeof(*v)) : NULL;
	if (!v)
		return;
	for (size_t i = 0; i < c->adm.n; i++) {
		const wl_t *w = Wc(q, c->adm.v[i]);

		v[i].end = w->state == QUEUE_WL_EVICTING ? now : runner_end(q, w);
		v[i].admitted_ms = w->admitted_ms;
		v[i].wl = c->adm.v[i];
	}
	qsort(v, c->adm.n, sizeof(*v), runner_cmp);
	for (size_t i = 0; i < c->adm.n; i++) {
		const wl_t *w = Wc(q, v[i].wl);

		for (uint32_t a = 0; a < w->n_asg; a++)
			have.v[w->asg[a].a.resource] += w->asg[a].a.amount;
		if (covers(&need, &have)) {
			c->resv_ahead = (uint32_t)(i + 1);
			c->resv_start = v[i].end < now ? now : v[i].end;
			break;
		}
	}
	free(v);
}

void queue_resv_decide(queue_t *q, uint32_t cq, int64_t now)
{
	cq_t *c = &q->cqs[cq];

	c->resv = QUEUE_NONE;
	c->resv_ahead = 0;
	c->resv_start = INT64_MAX;
	if (!c->starve || q->cfg.reservations_off || c->strategy != QUEUE_BEST_EFFORT_FIFO ||
	    c->stop != QUEUE_STOP_NONE)
		return;
	c->resv = first_starving(q, c, now);
	if (c->resv != QUEUE_NONE)
		reserved_start(q, c, c->resv, now);
}

bool queue_resv_blocks(const queue_t *q, uint32_t wid, int64_t now)
{
	const wl_t *w = Wc(q, wid), *h;
	const cq_t *c = &q->cqs[w->cq];
	amounts_t need;
	int64_t lim, end;
	const psref_t *ps;
	bool shares = false;

	if (c->resv == QUEUE_NONE || c->resv == wid)
		return false;
	h = Wc(q, c->resv);
	if (w->priority > h->priority)
		return false;
	need = wl_need(q, h);
	ps = wl_ps(w);
	for (uint8_t p = 0; p < w->n_ps && !shares; p++) {
		const tmpl_t *tm = &q->tmpls[ps[p].tmpl];

		for (uint8_t r = 0; r < tm->n_req && !shares; r++)
			shares = tm->amt[r] > 0 && need.v[tm->res[r]] > 0;
	}
	if (!shares)
		return false;
	/* backfill: its wall-clock limit or its run bound ends it by the
	 * reserved start */
	lim = queue_exec_limit(q, w);
	end = lim ? now + lim - w->exec_ms : INT64_MAX;
	if (w->run_bound_s > 0 && now + (int64_t)w->run_bound_s * 1000 < end)
		end = now + (int64_t)w->run_bound_s * 1000;
	return !(c->resv_start != INT64_MAX && end <= c->resv_start);
}

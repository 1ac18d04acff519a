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

/* An admitted workload of the reserving one's cohort tree, by when it ends. */
typedef struct {
	int64_t end;	     /* its wall-clock deadline; INT64_MAX: unknown */
	int64_t admitted_ms; /* ties: the oldest admission first */
	uint32_t wl;	     /* the workload */
	uint32_t cq;	     /* its CQ */
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

/* What CQ c holds above its nominal quota, per resource id: what its
 * running workloads give back to the cohort as they end. */
static amounts_t cq_borrowed(const cq_t *c)
{
	amounts_t b = {{0}};

	for (uint32_t s = 0; s < c->n_slots; s++)
		if (c->slots[s].usage > c->slots[s].nominal)
			b.v[c->slots[s].res] += c->slots[s].usage - c->slots[s].nominal;
	return b;
}

/* Whether free quota covers need for every resource: what could be had
 * (have), at most what the reserving CQ could still hold (room). */
static bool covers(const amounts_t *need, const amounts_t *have, const amounts_t *room)
{
	for (uint32_t r = 0; r < QUEUE_RESOURCES_MAX; r++)
		if (need->v[r] > 0 && (have->v[r] < need->v[r] || room->v[r] < need->v[r]))
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

/* The runners whose ends may free quota for CQ c: c's admitted workloads,
 * and those of every other CQ of its cohort tree that holds more than its
 * nominal quota (*bor, one per CQ of the tree in its order, says how much:
 * only that comes back to the cohort). NULL with *n 0: none; NULL with
 * *n 1: out of memory. */
static runner_t *runners(const queue_t *q, uint32_t cq, int64_t now, amounts_t **bor, size_t *n)
{
	const cohort_t *h = cohort_of_c(q, &q->cqs[cq]);
	size_t cap = 0, k = 0;
	runner_t *v;

	*bor = calloc(h->cqs.n ? h->cqs.n : 1, sizeof(**bor));
	*n = 1;
	if (!*bor)
		return NULL;
	for (size_t i = 0; i < h->cqs.n; i++) {
		const cq_t *d = &q->cqs[h->cqs.v[i]];

		if (h->cqs.v[i] != cq)
			(*bor)[i] = cq_borrowed(d);
		cap += d->adm.n;
	}
	if (!cap) { /* nothing runs */
		*n = 0;
		return NULL;
	}
	v = malloc(cap * sizeof(*v));
	if (!v) {
		free(*bor);
		*bor = NULL;
		return NULL;
	}
	for (size_t i = 0; i < h->cqs.n; i++) {
		const cq_t *d = &q->cqs[h->cqs.v[i]];

		for (size_t j = 0; j < d->adm.n; j++) {
			const wl_t *w = Wc(q, d->adm.v[j]);

			v[k].end = w->state == QUEUE_WL_EVICTING ? now : runner_end(q, w);
			v[k].admitted_ms = w->admitted_ms;
			v[k].wl = d->adm.v[j];
			v[k++].cq = (uint32_t)i;
		}
	}
	*n = k;
	return v;
}

/* How many running workloads must end, and when by their limits, before
 * reserving workload h of CQ cq fits: free quota per resource (what its
 * slots could take now, the cohort's lending counted) plus what the
 * runners free, earliest deadline first: all of a runner of cq's, of
 * another CQ of the tree what that CQ gives back of its borrowing, never
 * more than cq could still hold. Out of memory or never enough: unknown. */
static void reserved_start(queue_t *q, uint32_t cq, uint32_t h, int64_t now)
{
	cq_t *c = &q->cqs[cq];
	const cohort_t *co = cohort_of_c(q, c);
	amounts_t need = wl_need(q, Wc(q, h)), have = {{0}}, room = {{0}}, *bor;
	runner_t *v;
	size_t n;

	for (uint32_t s = 0; s < c->n_slots; s++) {
		have.v[c->slots[s].res] += queue_slot_available(q, c, &c->slots[s]);
		room.v[c->slots[s].res] +=
		    queue_slot_max_capacity(q, c, &c->slots[s]) - c->slots[s].usage;
	}
	if (covers(&need, &have, &room)) {
		c->resv_start = now;
		return;
	}
	v = runners(q, cq, now, &bor, &n);
	if (!v) {
		free(bor);
		return;
	}
	qsort(v, n, sizeof(*v), runner_cmp);
	for (size_t i = 0; i < n; i++) {
		const wl_t *w = Wc(q, v[i].wl);
		bool own = co->cqs.v[v[i].cq] == cq;

		for (uint32_t a = 0; a < w->n_asg; a++) {
			uint32_t r = w->asg[a].a.resource;
			int64_t amt = w->asg[a].a.amount, *left = &bor[v[i].cq].v[r];

			if (own) {
				have.v[r] += amt;
				room.v[r] += amt;
			} else if (*left > 0) {
				have.v[r] += amt < *left ? amt : *left;
				*left -= amt < *left ? amt : *left;
			}
		}
		if (covers(&need, &have, &room)) {
			c->resv_ahead = (uint32_t)(i + 1);
			c->resv_start = v[i].end < now ? now : v[i].end;
			break;
		}
	}
	free(v);
	free(bor);
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
		reserved_start(q, cq, c->resv, now);
}

/* Whether pending workload w, taking `take` per resource id now, would
 * delay the start of the reservation CQ c holds: a priority at or below
 * its holder's, a resource the holder needs, and neither its wall-clock
 * limit nor its run bound ending it by the reserved start (backfill). */
static bool delays(const queue_t *q, const wl_t *w, const cq_t *c, const amounts_t *take,
		   int64_t now)
{
	const wl_t *h = Wc(q, c->resv);
	amounts_t need;
	int64_t lim, end;
	bool shares = false;

	if (w->priority > h->priority)
		return false;
	need = wl_need(q, h);
	for (uint32_t r = 0; r < QUEUE_RESOURCES_MAX && !shares; r++)
		shares = take->v[r] > 0 && need.v[r] > 0;
	if (!shares)
		return false;
	lim = queue_exec_limit(q, w);
	end = lim ? now + lim - w->exec_ms : INT64_MAX;
	if (w->run_bound_s > 0 && now + (int64_t)w->run_bound_s * 1000 < end)
		end = now + (int64_t)w->run_bound_s * 1000;
	return !(c->resv_start != INT64_MAX && end <= c->resv_start);
}

bool queue_resv_blocks(const queue_t *q, uint32_t wid, int64_t now)
{
	const wl_t *w = Wc(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	amounts_t take;

	if (c->resv == QUEUE_NONE || c->resv == wid)
		return false;
	take = wl_need(q, w);
	return delays(q, w, c, &take, now);
}

uint32_t queue_resv_blocks_borrowing(const queue_t *q, uint32_t wid, const try_t *t, int64_t now)
{
	const wl_t *w = Wc(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	const cohort_t *co = cohort_of_c(q, c);
	amounts_t take = {{0}};

	if (!t->borrows)
		return QUEUE_NONE;
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];
		int64_t over = s->usage + t->need[i].val - s->nominal;

		if (over > 0)
			take.v[s->res] += over < t->need[i].val ? over : t->need[i].val;
	}
	for (size_t k = 0; k < co->cqs.n; k++) {
		const cq_t *d = &q->cqs[co->cqs.v[k]];

		if (co->cqs.v[k] != w->cq && d->resv != QUEUE_NONE && delays(q, w, d, &take, now))
			return co->cqs.v[k];
	}
	return QUEUE_NONE;
}

uint32_t queue_resv_holding(const queue_t *q, uint32_t wid)
{
	const wl_t *w = Wc(q, wid);
	const cohort_t *co = cohort_of_c(q, &q->cqs[w->cq]);

	if (q->cqs[w->cq].resv != QUEUE_NONE)
		return w->cq;
	for (size_t k = 0; k < co->cqs.n; k++)
		if (q->cqs[co->cqs.v[k]].resv != QUEUE_NONE)
			return co->cqs.v[k];
	return QUEUE_NONE;
}

/*
 * queue/protect.c: minimum runtimes (no preemption or reclaim before a
 * workload has run that long, and a wake-up of its cohort when that time is
 * up) and idle GPUs (utilization readings from the driver, the idle spells
 * they make, reports and reclaim at a tick).
 * See queue.h ("GPU economics") for the contracts, docs/economics.md for the
 * rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- minimum runtime ---- */

static int prio_cmp(const void *a, const void *b)
{
	int32_t x = ((const queue_prio_runtime_t *)a)->priority;
	int32_t y = ((const queue_prio_runtime_t *)b)->priority;

	return (x > y) - (x < y);
}

int queue_min_runtimes_set(queue_t *q, const queue_prio_runtime_t *v, size_t n)
{
	queue_prio_runtime_t *t;
	size_t k = 0;

	if (n > QUEUE_PRIORITIES_MAX)
		return GPUQ_ELIMIT;
	for (size_t i = 0; i < n; i++)
		if (v[i].min_runtime_ms < 1 || v[i].min_runtime_ms > QUEUE_MIN_RUNTIME_MAX)
			return GPUQ_EINVAL;
	t = malloc((n ? n : 1) * sizeof(*t));
	if (!t)
		return GPUQ_ENOMEM;
	if (n)
		memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), prio_cmp);
	for (size_t i = 0; i < n; i++) { /* one entry per value: the longest */
		if (k && t[k - 1].priority == t[i].priority) {
			if (t[i].min_runtime_ms > t[k - 1].min_runtime_ms)
				t[k - 1].min_runtime_ms = t[i].min_runtime_ms;
			continue;
		}
		t[k++] = t[i];
	}
	free(q->prio_rt);
	q->prio_rt = t;
	q->n_prio_rt = k;
	queue_prot_restored(q); /* the admitted workloads' ends under the new table */
	return GPUQ_OK;
}

int64_t queue_wl_min_runtime(const queue_t *q, const wl_t *w)
{
	int64_t m = q->cqs[w->cq].min_runtime;
	size_t lo = 0, hi = q->n_prio_rt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (q->prio_rt[mid].priority < w->priority)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < q->n_prio_rt && q->prio_rt[lo].priority == w->priority &&
	    q->prio_rt[lo].min_runtime_ms > m)
		m = q->prio_rt[lo].min_runtime_ms;
	return m;
}

bool queue_wl_protected(queue_t *q, const wl_t *v)
{
	int64_t m = queue_wl_min_runtime(q, v);

	if (m <= 0 || v->admitted_ms < 0 || q->last_now - v->admitted_ms >= m)
		return false;
	q->prot_seen = true;
	return true;
}

void queue_prot_admitted(queue_t *q, uint32_t wid)
{
	wl_t *w = W(q, wid);
	int64_t m = queue_wl_min_runtime(q, w);

	w->idle_since = -1;
	w->idle_seen = -1;
	w->idle_said = false;
	if (m > 0)
		(void)queue_timer_push(q, &q->prot_timers, w->admitted_ms + m, wid); /* lost only
											without
											memory: its
											cohort then
											waits for
											another
											change */
}

void queue_prot_expire(queue_t *q, int64_t now)
{
	for (;;) {
		uint32_t wid;

		queue_timer_clean(q, &q->prot_timers);
		if (!q->prot_timers.n || q->prot_timers.v[0].at > now)
			return;
		wid = q->prot_timers.v[0].wl;
		queue_timer_pop(q, &q->prot_timers);
		if (W(q, wid)->state ==
		    QUEUE_WL_ADMITTED) /* a candidate again: retry the waiting */
			queue_cohort_touch(q, q->cqs[W(q, wid)->cq].cohort, true);
	}
}

void queue_prot_restored(queue_t *q)
{
	q->prot_timers.n = 0;
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);
		int64_t m;

		if (!w->live || w->state != QUEUE_WL_ADMITTED)
			continue;
		m = queue_wl_min_runtime(q, w);
		if (m > 0 && w->admitted_ms + m > q->last_now)
			(void)queue_timer_push(q, &q->prot_timers, w->admitted_ms + m, (uint32_t)i);
	}
}

void queue_econ_rearm(queue_t *q, uint32_t wid)
{
	const wl_t *w = W(q, wid);
	int64_t m = queue_wl_min_runtime(q, w);

	/* a push lost without memory costs a wake-up, as in queue_prot_admitted */
	if (m > 0 && w->admitted_ms + m > q->last_now)
		(void)queue_timer_push(q, &q->prot_timers, w->admitted_ms + m, wid);
	if (w->idle_since >= 0 && !w->idle_said)
		(void)queue_timer_push(q, &q->idle_timers, w->idle_since + q->cqs[w->cq].idle_after,
				       wid);
	for (size_t i = 0; i + 1 < q->idle.n; i += 2)
		if (q->idle.v[i] == wid)
			q->idle.v[i + 1] = w->epoch;
}

/* ---- idle GPUs ---- */

/* Whether w's idle spell has no fresh evidence at t: its last reading below
 * the threshold is more than idle_fresh_ms old (never, without the bound). */
static bool evidence_stale(const queue_t *q, const wl_t *w, int64_t t)
{
	return q->cfg.idle_fresh_ms > 0 && t - w->idle_seen > q->cfg.idle_fresh_ms;
}

/* w's spell ends: not idle until a reading below the threshold starts
 * another (its timers and its watch entry lapse: spell_current, keep). */
static void spell_end(wl_t *w)
{
	w->idle_since = -1;
	w->idle_seen = -1;
	w->idle_said = false;
}

int queue_workload_utilization(queue_t *q, const char *uid, double util_pct, int64_t at)
{
	uint32_t wid;
	wl_t *w;
	const cq_t *c;

	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	w = W(q, wid);
	if (w->state != QUEUE_WL_ADMITTED)
		return GPUQ_EINVAL;
	c = &q->cqs[w->cq];
	if (isnan(util_pct) || c->idle_action == QUEUE_IDLE_OFF)
		return GPUQ_OK;
	if (util_pct >= c->idle_thr) {
		spell_end(w);
		return GPUQ_OK;
	}
	if (at < w->admitted_ms)
		at = w->admitted_ms;
	if (at < -QUEUE_TIME_MAX || at > QUEUE_TIME_MAX)
		return GPUQ_ERANGE;
	if (w->idle_since >= 0 && !evidence_stale(q, w, at)) {
		if (at > w->idle_seen)
			w->idle_seen = at;
		return GPUQ_OK; /* idle already: the spell keeps its start */
	}
	if (w->idle_since >= 0)
		spell_end(w); /* a gap in the evidence: a new spell from this reading */
	w->idle_since = at;
	w->idle_seen = at;
	if (q->last_now != INT64_MIN && at + c->idle_after <= q->last_now) {
		/* due already: a driver telling a restored core what it knew; the
		 * core it came from reported it at its tick then */
		if (queue_grow(&q->idle.v, &q->idle.cap, q->idle.n + 2, sizeof(uint32_t))) {
			spell_end(w);
			return GPUQ_ENOMEM;
		}
		w->idle_said = true;
		q->idle.v[q->idle.n++] = wid;
		q->idle.v[q->idle.n++] = w->epoch;
		return GPUQ_OK;
	}
	/* the spell's deadline; an entry whose spell ended is dropped when seen */
	if (queue_timer_push(q, &q->idle_timers, at + c->idle_after, wid)) {
		spell_end(w); /* not watched: not idle (the next reading tries again) */
		return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

/* Whether entry e of the idle timers still stands for w's current spell. */
static bool spell_current(const queue_t *q, const wl_t *w, int64_t at)
{
	return w->state == QUEUE_WL_ADMITTED && w->idle_since >= 0 &&
	       w->idle_since + q->cqs[w->cq].idle_after == at;
}

/* Whether w's minimum runtime is not served at the core's `now`. */
static bool protected_now(const queue_t *q, const wl_t *w)
{
	int64_t m = queue_wl_min_runtime(q, w);

	return m > 0 && w->admitted_ms >= 0 && q->last_now - w->admitted_ms < m;
}

/* An idle workload its CQ may reclaim now: watched (entry i of q->idle),
 * still admitted and idle, Preempt, its minimum runtime served. */
static bool reclaimable(const queue_t *q, size_t i)
{
	const wl_t *w = Wc(q, q->idle.v[i]);

	return w->live && w->epoch == q->idle.v[i + 1] && w->state == QUEUE_WL_ADMITTED &&
	       w->idle_since >= 0 && w->idle_said &&
	       q->cqs[w->cq].idle_action == QUEUE_IDLE_PREEMPT && !protected_now(q, w);
}

/* What the reclaimable idle workloads of cohort tree `unit` hold of
 * (flavor, res). */
static int64_t reclaimable_amount(const queue_t *q, uint32_t unit, uint32_t flavor, uint32_t res)
{
	int64_t sum = 0;

	for (size_t i = 0; i + 1 < q->idle.n; i += 2) {
		const wl_t *w = Wc(q, q->idle.v[i]);

		if (!reclaimable(q, i) || q->cqs[w->cq].unit != unit)
			continue;
		for (uint32_t k = 0; k < w->n_asg; k++)
			if (w->asg[k].a.flavor == flavor && w->asg[k].a.resource == res)
				sum += w->asg[k].a.amount;
	}
	return sum;
}

/* What pending workload w asks of resource res, over its pod sets. */
static int64_t asks(const queue_t *q, const wl_t *w, uint32_t res)
{
	int64_t sum = 0;

	for (uint8_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *t = &q->tmpls[wl_ps(w)[p].tmpl];

		for (uint32_t k = 0; k < t->n_req; k++)
			if (t->res[k] == res)
				sum += (int64_t)wl_ps(w)[p].count * t->amt[k];
	}
	return sum;
}

/* Whether waiting workload w (of CQ c) asks for something of what v holds
 * and would fit there, in v's flavors, once every reclaimable idle
 * workload of the tree is gone. */
static bool fits_once_reclaimed(const queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v)
{
	bool touches = false;

	/* one reclaimed for idling waits its turn: were it to reclaim in turn,
	 * idle workloads would take each other's place without end */
	if (w->evict_reason == QUEUE_EVICT_IDLE_RECLAIM && w->preemptions)
		return false;

	for (uint32_t i = 0; i < v->n_asg; i++) {
		int64_t s = queue_cq_slot_find(c, v->asg[i].a.flavor, v->asg[i].a.resource);
		int64_t need = asks(q, w, v->asg[i].a.resource);

		if (s < 0 || need <= 0)
			continue;
		touches = true;
		if (need >
		    queue_slot_available(q, c, &c->slots[s]) +
			reclaimable_amount(q, c->unit, v->asg[i].a.flavor, v->asg[i].a.resource))
			return false;
	}
	return touches;
}

/* Waiting workloads looked at per ClusterQueue, at most (the first set
 * aside, then the heads of its LocalQueues): a tick stays cheap. */
#define WAITERS_MAX 64

/* Whether reclaiming idle workload v helps: a pending workload of its
 * cohort tree, set aside or blocked for quota (not held by a budget),
 * would fit in the flavors v holds once the tree's reclaimable idle
 * workloads are gone. Reclaiming for one that would not fit even then
 * only churns: the idle workload would come back into the room. */
static bool worth_reclaiming(const queue_t *q, const wl_t *v)
{
	const cohort_t *h = cohort_of_c(q, &q->cqs[v->cq]);

	for (size_t k = 0; k < h->cqs.n; k++) {
		const cq_t *c = &q->cqs[h->cqs.v[k]];
		size_t seen = 0;

		if (!c->n_pending || c->stop != QUEUE_STOP_NONE)
			continue;
		for (size_t i = 0; i < c->aside.n && seen < WAITERS_MAX; i++, seen++) {
			const wl_t *w = Wc(q, c->aside.v[i]);

			if (w->wait == QUEUE_WAIT_QUOTA && !queue_lq_held(q, w->lq) &&
			    fits_once_reclaimed(q, c, w, v))
				return true;
		}
		for (size_t l = 0; l < c->lqs.n && seen < WAITERS_MAX; l++, seen++) {
			const lq_t *lq = &q->lqs[c->lqs.v[l]];
			const wl_t *w = lq->heap.n ? Wc(q, lq->heap.v[0]) : NULL;

			if (w && lq->standing != QUEUE_LQ_HELD &&
			    (w->wait == QUEUE_WAIT_QUOTA || w->wait == QUEUE_WAIT_PREEMPTING) &&
			    fits_once_reclaimed(q, c, w, v))
				return true;
		}
	}
	return false;
}

/* Reclaim idle workload wid (IdleReclaim): evicted, released at once with
 * release_on_evict. GPUQ_ENOMEM (nothing happened). */
static int reclaim(queue_t *q, uint32_t wid, int64_t now)
{
	int rc = queue_emit_reserve(q, 1);

	if (rc)
		return rc;
	rc = queue_wl_evict(q, wid, QUEUE_NONE, QUEUE_EVICT_IDLE_RECLAIM);
	GPUQ_ASSERT(rc == GPUQ_OK); /* its report has room */
	if (q->cfg.release_on_evict && queue_wl_release(q, wid, now)) {
		q->release_lost = true; /* still EVICTING: released at the next call */
		return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

/* Spells that reached their CQ's idleReclaim.for by now: reported once,
 * then watched in q->idle (pairs: id, epoch). */
static int idle_due(queue_t *q, int64_t now)
{
	for (;;) {
		uint32_t wid;
		int64_t at;
		wl_t *w;

		queue_timer_clean(q, &q->idle_timers);
		if (!q->idle_timers.n || q->idle_timers.v[0].at > now)
			return GPUQ_OK;
		wid = q->idle_timers.v[0].wl;
		at = q->idle_timers.v[0].at;
		w = W(q, wid);
		if (!spell_current(q, w, at) || w->idle_said) {
			queue_timer_pop(q, &q->idle_timers);
			continue;
		}
		if (evidence_stale(q, w, now)) { /* no reading came to carry it this far */
			queue_timer_pop(q, &q->idle_timers);
			spell_end(w);
			continue;
		}
		if (queue_grow(&q->idle.v, &q->idle.cap, q->idle.n + 2, sizeof(uint32_t)) ||
		    queue_emit_idle(q, wid))
			return GPUQ_ENOMEM; /* the timer stays: the next tick tries again */
		queue_timer_pop(q, &q->idle_timers);
		w->idle_said = true;
		q->idle.v[q->idle.n++] = wid;
		q->idle.v[q->idle.n++] = w->epoch;
	}
}

int queue_idle_tick(queue_t *q, int64_t now)
{
	size_t k = 0;
	int rc = idle_due(q, now);

	for (size_t i = 0; i + 1 < q->idle.n; i += 2) {
		uint32_t wid = q->idle.v[i];
		wl_t *w = W(q, wid);
		bool keep = w->live && w->epoch == q->idle.v[i + 1] && w->idle_since >= 0 &&
			    w->idle_said && w->state == QUEUE_WL_ADMITTED;

		if (keep && evidence_stale(q, w, now)) {
			spell_end(w); /* never reclaimed on old data */
			keep = false;
		}
		if (keep && !rc && reclaimable(q, i) && worth_reclaiming(q, w)) {
			rc = reclaim(q, wid, now);
			keep = rc != GPUQ_OK; /* out of memory: it stays watched */
		}
		if (keep) {
			q->idle.v[k++] = wid;
			q->idle.v[k++] = q->idle.v[i + 1];
		}
	}
	q->idle.n = k;
	return rc;
}

int64_t queue_econ_next(const queue_t *q)
{
	int64_t t = INT64_MAX;

	for (size_t i = 0; i < q->prot_timers.n; i++) {
		const timer_t_ *e = &q->prot_timers.v[i];
		const wl_t *w = Wc(q, e->wl);

		if (w->live && w->epoch == e->epoch && e->at < t)
			t = e->at;
		if (i == 0 && t != INT64_MAX)
			break;
	}
	for (size_t i = 0; i < q->idle_timers.n; i++) {
		const timer_t_ *e = &q->idle_timers.v[i];

		if (e->at < t && spell_current(q, Wc(q, e->wl), e->at) && !Wc(q, e->wl)->idle_said)
			t = e->at;
	}
	/* a watched idle workload that may go as soon as someone waits: the
	 * next call looks (a tick is cheap; only with Preempt and waiters) */
	for (size_t i = 0; i + 1 < q->idle.n; i += 2) {
		const wl_t *w = Wc(q, q->idle.v[i]);
		int64_t end;

		if (!w->live || w->epoch != q->idle.v[i + 1] || w->state != QUEUE_WL_ADMITTED ||
		    q->cqs[w->cq].idle_action != QUEUE_IDLE_PREEMPT || !worth_reclaiming(q, w))
			continue;
		end = w->admitted_ms + queue_wl_min_runtime(q, w);
		if (end <= q->last_now)
			return INT64_MIN; /* due now */
		if (end < t)
			t = end;
	}
	return t;
}

int queue_workload_predict_set(queue_t *q, const char *uid, int64_t start_ms)
{
	uint32_t wid;

	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	if (W(q, wid)->state != QUEUE_WL_PENDING)
		return GPUQ_EINVAL;
	W(q, wid)->predicted = start_ms < 0 ? -1 : start_ms;
	return GPUQ_OK;
}

int queue_workload_carry(queue_t *q, const char *uid, int64_t admitted_ms, int64_t exec_ms)
{
	uint32_t wid;
	wl_t *w;

	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	w = W(q, wid);
	if (w->state != QUEUE_WL_ADMITTED || admitted_ms < 0 || admitted_ms > w->admitted_ms ||
	    exec_ms < 0)
		return GPUQ_EINVAL;
	/* room for its deadlines first: all or nothing */
	if (queue_grow(&q->exec_timers.v, &q->exec_timers.cap, q->exec_timers.n + 1,
		       sizeof(*q->exec_timers.v)) ||
	    queue_grow(&q->prot_timers.v, &q->prot_timers.cap, q->prot_timers.n + 1,
		       sizeof(*q->prot_timers.v)))
		return GPUQ_ENOMEM;
	w->admitted_ms = admitted_ms;
	w->exec_ms = exec_ms;
	if (queue_wl_min_runtime(q, w) > 0)
		(void)queue_timer_push(q, &q->prot_timers, admitted_ms + queue_wl_min_runtime(q, w),
				       wid); /* the room is there */
	(void)queue_exec_arm(q, wid);	     /* the room is there */
	queue_mark_wl(q, w);
	return GPUQ_OK;
}

int queue_workload_predict_show(queue_t *q, const char *uid, bool show, bool *was)
{
	uint32_t wid;

	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	if (W(q, wid)->state != QUEUE_WL_PENDING)
		return GPUQ_EINVAL;
	if (was)
		*was = W(q, wid)->predict_said;
	W(q, wid)->predict_said = show;
	return GPUQ_OK;
}

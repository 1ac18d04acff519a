/*
 * queue/preempt.c: preemption: candidates, minimal victim sets, fair-sharing victims and
 * preemptor plans.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* Preemption                                                          */
/* ================================================================== */

bool queue_need_fits(const queue_t *q, uint32_t cq, const try_t *t, bool allow_borrow)
{
	const cq_t *c = &q->cqs[cq];

	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (!allow_borrow && s->usage + t->need[i].val > s->nominal)
			return false;
		if (t->need[i].val > queue_slot_available(q, c, s))
			return false;
	}
	return true;
}

/* Whether CQ o is above nominal in a (flavor, resource) the preemptor
 * needs preemption for. */
static bool cq_borrowing_in(const queue_t *q, const cq_t *o, const cq_t *c, const try_t *t)
{
	(void)q;
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];
		int64_t os;

		if (t->need[i].mode == M_FIT)
			continue;
		os = queue_cq_slot_find(o, s->flavor, s->res);
		if (os >= 0 && o->slots[os].usage > o->slots[os].nominal)
			return true;
	}
	return false;
}

static bool uses_needed(const queue_t *q, const wl_t *v, const cq_t *c, const try_t *t)
{
	const cq_t *vc = &q->cqs[v->cq];

	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (t->need[i].mode != M_FIT && queue_wl_uses(v, vc, s->flavor, s->res))
			return true;
	}
	return false;
}

/* Under nominal (usage < nominal) in every slot needing preemption. */
static bool under_nominal(const queue_t *q, const cq_t *c, const try_t *t)
{
	(void)q;
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (t->need[i].mode != M_FIT && s->usage >= s->nominal)
			return false;
	}
	return true;
}

/* Victim order: other CQs first, lower priority, most recently admitted, uid. */
static int cand_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const uint32_t *ids = pa, *idb = pb;
	const wl_t *a = Wc(q, ids[0]), *b = Wc(q, idb[0]);
	uint32_t own = ids[1];
	bool ao = a->cq == own, bo = b->cq == own;

	if (ao != bo)
		return ao ? 1 : -1;
	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->admitted_ms != b->admitted_ms)
		return a->admitted_ms > b->admitted_ms ? -1 : 1;
	return strcmp(wl_uid(a), wl_uid(b));
}

/* Collect candidates into q->cands as pairs (wl, preemptor CQ), sorted. */
static int find_candidates(queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	const cohort_t *h = cohort_of(q, c);

	q->cands.n = 0;
	if (c->within != QUEUE_WITHIN_NEVER) {
		for (size_t i = 0; i < c->adm.n; i++) {
			const wl_t *v = W(q, c->adm.v[i]);

			if (queue_own_candidate(q, c, w, v) && uses_needed(q, v, c, t))
				if (queue_vpush(&q->cands, c->adm.v[i]) ||
				    queue_vpush(&q->cands, w->cq))
					return GPUQ_ENOMEM;
		}
	}
	if (cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER) {
		for (size_t k = 0; k < h->cqs.n; k++) {
			const cq_t *o = &q->cqs[h->cqs.v[k]];

			if (o == c || !cq_borrowing_in(q, o, c, t))
				continue;
			for (size_t i = 0; i < o->adm.n; i++) {
				const wl_t *v = W(q, o->adm.v[i]);

				if (queue_cohort_candidate(q, c, w, v) && uses_needed(q, v, c, t))
					if (queue_vpush(&q->cands, o->adm.v[i]) ||
					    queue_vpush(&q->cands, w->cq))
						return GPUQ_ENOMEM;
			}
		}
	}
	if (q->cands.n > 2)
		qsort_r(q->cands.v, q->cands.n / 2, 2 * sizeof(uint32_t), cand_cmp, q);
	return GPUQ_OK;
}

/* An allocation failed while looking for victims: say "none" for now and
 * stop the cycle, which keeps the preemptor pending and goes again. */
static bool out_of_memory(queue_t *q)
{
	q->cycle_short = true;
	return false;
}

/* q->targets holds pairs (victim, reason). */
static int target_push(queue_t *q, uint32_t v, int reason)
{
	if (queue_vpush(&q->targets, v) || queue_vpush(&q->targets, (uint32_t)reason))
		return GPUQ_ENOMEM;
	return GPUQ_OK;
}

static void targets_restore(queue_t *q)
{
	for (size_t i = 0; i < q->targets.n; i += 2)
		queue_wl_charge(q, q->targets.v[i], +1);
}

/* Re-add removed victims in reverse order (all but the last), keeping out
 * only those whose return breaks the fit. Then restore usage. */
static void targets_fill_back(queue_t *q, uint32_t cq, const try_t *t, bool allow)
{
	size_t n = q->targets.n / 2;

	for (size_t i = n - 1; i-- > 0;) {
		uint32_t v = q->targets.v[2 * i];

		queue_wl_charge(q, v, +1);
		if (queue_need_fits(q, cq, t, allow)) {
			memmove(&q->targets.v[2 * i], &q->targets.v[2 * i + 2],
				(q->targets.n - 2 * i - 2) * sizeof(uint32_t));
			q->targets.n -= 2;
		} else {
			queue_wl_charge(q, v, -1);
		}
	}
	targets_restore(q);
}

/* Kueue's minimalPreemptions queue_over candidate pairs cands[0..n) (filtered by
 * skip_other: drop other-CQ candidates at or above *thr). Fills q->targets;
 * returns true when the preemptor then fits. Usage is left unchanged. */
static bool minimal_set(queue_t *q, uint32_t wid, const try_t *t, bool only_own, bool allow,
			const int32_t *thr, bool filter_thr)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	bool fits = false;

	q->targets.n = 0;
	for (size_t i = 0; i < q->cands.n; i += 2) {
		uint32_t v = q->cands.v[i];
		const wl_t *vw = W(q, v);
		int reason = QUEUE_EVICT_IN_CQ;

		if (vw->cq != w->cq) {
			if (only_own)
				continue;
			if (filter_thr && thr && vw->priority >= *thr)
				continue;
			if (!cq_borrowing_in(q, &q->cqs[vw->cq], c, t))
				continue;
			reason = QUEUE_EVICT_RECLAIM;
			if (thr && vw->priority >= *thr)
				allow = false;
			else if (thr)
				reason = QUEUE_EVICT_RECLAIM_WHILE_BORROWING;
		}
		queue_wl_charge(q, v, -1);
		if (target_push(q, v, reason)) {
			queue_wl_charge(q, v, +1);
			targets_restore(q);
			q->targets.n = 0;
			return out_of_memory(q);
		}
		if (queue_need_fits(q, w->cq, t, allow)) {
			fits = true;
			break;
		}
	}
	if (!fits) {
		targets_restore(q);
		q->targets.n = 0;
		return false;
	}
	targets_fill_back(q, w->cq, t, allow);
	q->targets_borrow = allow;
	return true;
}

/* The CQ with the highest share among open candidates (state[i] == 0), the
 * lower id on a tie; QUEUE_NONE when none is open. */
static uint32_t fair_top_cq(queue_t *q, const uint8_t *state, size_t n)
{
	uint32_t best_cq = QUEUE_NONE;
	fairshare_share_t best = {0.0, 0};

	for (size_t i = 0; i < n; i++) {
		uint32_t vc = W(q, q->cands.v[2 * i])->cq;
		fairshare_share_t s;
		int c;

		if (state[i] || vc == best_cq)
			continue;
		s = queue_cq_share(q, vc, NULL, 0, QUEUE_NONE);
		c = best_cq == QUEUE_NONE ? 1 : fairshare_share_cmp(&s, &best);
		if (c > 0 || (c == 0 && vc < best_cq)) {
			best = s;
			best_cq = vc;
		}
	}
	return best_cq;
}

/* Take the first open candidate of CQ cq the rule allows (pre: the
 * preemptor's CQ share with it); refused ones are closed (state 2). 1 when
 * one was taken (charged out, pushed to q->targets), 0 when none, or
 * GPUQ_ENOMEM. */
static int fair_take(queue_t *q, uint32_t wid, uint32_t cq, const fairshare_share_t *pre,
		     bool within_nominal, uint8_t *state, size_t n)
{
	const wl_t *w = W(q, wid);

	for (size_t i = 0; i < n; i++) {
		uint32_t v = q->cands.v[2 * i];
		const wl_t *vw = W(q, v);
		int reason = QUEUE_EVICT_IN_CQ;

		if (state[i] || vw->cq != cq)
			continue;
		if (vw->cq != w->cq) {
			fairshare_share_t after = queue_cq_share(q, vw->cq, NULL, 0, v);

			if (fairshare_share_cmp(pre, &after) > 0) {
				state[i] = 2;
				continue;
			}
			reason = within_nominal ? QUEUE_EVICT_RECLAIM : QUEUE_EVICT_FAIR_SHARING;
		}
		state[i] = 1;
		queue_wl_charge(q, v, -1);
		if (target_push(q, v, reason)) {
			queue_wl_charge(q, v, +1);
			return GPUQ_ENOMEM;
		}
		return 1;
	}
	return 0;
}

/* Whether CQ c stays within its nominal quota, the workload's need
 * included, in every slot that needs preemption. */
static bool within_nominal_with_need(const cq_t *c, const try_t *t)
{
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (t->need[i].mode != M_FIT && s->usage + t->need[i].val > s->nominal)
			return false;
	}
	return true;
}

/* Fair-sharing preemption (Kueue's fairPreemptions with its default
 * strategy): take from the CQ with the highest share first; from another CQ
 * only if the preemptor's share with the workload stays <= that CQ's share
 * without the victim. A preemptor within its nominal quota in what it needs
 * preempted reclaims (its reason, as Kueue's); unlike Kueue's
 * FairSharingPreemptWithinNominal it still passes the share rule (which it
 * does whenever it borrows nothing): taking such victims whatever the shares
 * made a loop of three rules (test_queue_props seed 188: taken by share,
 * reclaimed within nominal, a higher priority workload of the reclaiming CQ
 * preempting its way back above nominal, taken by share again).
 * borrowWithinCohort plays no part under fair sharing, as in Kueue: its
 * priority threshold let a borrower reclaim what the victim's CQ then took
 * back by share, again and again at one instant. */
static bool fair_set(queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = W(q, wid);
	size_t n = q->cands.n / 2;
	fairshare_share_t pre = queue_cq_share(q, w->cq, t->need, t->n_need, QUEUE_NONE);
	bool within = within_nominal_with_need(&q->cqs[w->cq], t);
	uint8_t *state = calloc(n ? n : 1, 1); /* 0 open, 1 taken, 2 refused */
	bool fits = false;
	int rc = 0;

	q->targets.n = 0;
	if (!state)
		return out_of_memory(q);
	while (!fits) {
		uint32_t top = fair_top_cq(q, state, n);

		if (top == QUEUE_NONE)
			break;
		rc = fair_take(q, wid, top, &pre, within, state, n);
		if (rc < 0)
			break;
		if (rc)
			fits = queue_need_fits(q, w->cq, t, true);
	}
	free(state);
	if (!fits || rc < 0) {
		targets_restore(q);
		q->targets.n = 0;
		return rc < 0 ? out_of_memory(q) : false;
	}
	targets_fill_back(q, w->cq, t, true);
	q->targets_borrow = true;
	return true;
}

/* Kueue's getTargets: fills q->targets, returns true when a victim set
 * exists that makes wid fit. */
static bool targets(queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	size_t n_own = 0;
	bool borrow_within = c->borrow == QUEUE_BORROW_LOWER_PRIORITY;
	int32_t thr = w->priority;

	if (find_candidates(q, wid, t))
		return out_of_memory(q);
	if (!q->cands.n)
		return false;
	for (size_t i = 0; i < q->cands.n; i += 2)
		n_own += W(q, q->cands.v[i])->cq == w->cq;
	if (n_own == q->cands.n / 2)
		return minimal_set(q, wid, t, true, true, NULL, false);
	if (borrow_within && c->has_thr && c->thr < thr)
		thr = c->thr + 1;
	if (q->cfg.fair_sharing)
		return fair_set(q, wid, t);
	if (borrow_within)
		return minimal_set(q, wid, t, false, true, &thr, !under_nominal(q, c, t));
	if (under_nominal(q, c, t) && minimal_set(q, wid, t, false, false, NULL, false))
		return true;
	return minimal_set(q, wid, t, true, true, NULL, false);
}

bool queue_gone_overlap(const queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = Wc(q, wid);
	const cq_t *c = &q->cqs[w->cq];

	for (size_t i = 0; i < q->gone.n; i++) {
		const wl_t *v = Wc(q, q->gone.v[i]);
		bool rule = v->cq == w->cq
				? c->within != QUEUE_WITHIN_NEVER && queue_own_rule(c, w, v)
				: c->reclaim != QUEUE_RECLAIM_NEVER && queue_cohort_rule(c, w, v);

		if (rule && uses_needed(q, v, c, t))
			return true;
	}
	return false;
}

/* Charge (+1) or release (-1) this cycle's victims (q->gone). */
static void gone_charge(queue_t *q, int sign)
{
	for (size_t i = 0; i < q->gone.n; i++)
		queue_wl_charge(q, q->gone.v[i], sign);
}

/* The victims chosen earlier in this cycle count as gone while wid looks
 * for its own, as Kueue's fits() removes the cycle's preempted workloads:
 * their preemptor holds the quota they free, so counting them would count
 * it twice, and two CQs that each reclaim their own nominal quota could not
 * both preempt in one cycle. A head that fits once they are gone needs no
 * victim of its own: true with none (it waits for theirs, as Kueue's
 * DeferredFit). Victims still count for admission: nobody is admitted into
 * quota that is not free yet. */
bool queue_preemption_targets(queue_t *q, uint32_t wid, const try_t *t)
{
	bool found;

	if (!q->gone.n)
		return targets(q, wid, t);
	gone_charge(q, -1);
	if (queue_need_fits(q, W(q, wid)->cq, t, true)) {
		q->targets.n = 0;
		q->targets_borrow = true;
		found = true;
	} else {
		found = targets(q, wid, t);
	}
	gone_charge(q, +1);
	return found;
}

/* Charge (+1) or release (-1) every EVICTING workload of a cohort. */
static void cohort_evicting_charge(queue_t *q, const cohort_t *h, int sign)
{
	for (size_t k = 0; k < h->cqs.n; k++) {
		const cq_t *o = &q->cqs[h->cqs.v[k]];

		for (size_t i = 0; i < o->adm.n; i++)
			if (W(q, o->adm.v[i])->state == QUEUE_WL_EVICTING)
				queue_wl_charge(q, o->adm.v[i], sign);
	}
}

/* The assignment a preemptor chose when it picked its victims (kept in its
 * asg while it waits), as a try. */
void queue_try_from_plan(const queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = Wc(q, wid);

	(void)q;
	t->mode = M_FIT;
	t->borrows = false;
	t->n_asg = t->n_need = 0;
	t->why = WHY_NONE;
	t->why_res = t->why_flavor = QUEUE_NONE;
	t->why_need = t->why_free = 0;
	for (uint32_t i = 0; i < w->n_asg; i++) {
		t->asg[t->n_asg++] = w->asg[i];
		queue_need_add(t, w->asg[i].slot, w->asg[i].a.amount);
	}
}

/* Whether the plan in t fits once every EVICTING workload of the cohort is
 * gone (its victims are still releasing their quota); above nominal only
 * when allow_borrow. */
bool queue_plan_fits_after_evictions(queue_t *q, uint32_t wid, const try_t *t, bool allow_borrow)
{
	const cohort_t *h = cohort_of(q, &q->cqs[W(q, wid)->cq]);
	bool fits;

	cohort_evicting_charge(q, h, -1);
	fits = queue_need_fits(q, W(q, wid)->cq, t, allow_borrow);
	cohort_evicting_charge(q, h, +1);
	return fits;
}

/* Remember the assignment a preemptor preempts for. GPUQ_ENOMEM (the old
 * plan, if any, kept). */
int queue_plan_keep(queue_t *q, uint32_t wid, const try_t *t)
{
	wl_t *w = W(q, wid);
	asg_t *a = t->n_asg ? malloc(t->n_asg * sizeof(*a)) : NULL;

	if (t->n_asg && !a)
		return GPUQ_ENOMEM;
	free(w->asg);
	if (a)
		memcpy(a, t->asg, t->n_asg * sizeof(*a));
	w->asg = a;
	w->n_asg = (uint32_t)t->n_asg;
	return GPUQ_OK;
}

void queue_plan_drop(queue_t *q, uint32_t wid)
{
	wl_t *w = W(q, wid);

	free(w->asg);
	w->asg = NULL;
	w->n_asg = 0;
}

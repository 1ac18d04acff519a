/*
 * queue/cycle.c: the results of a call, the admission cycle and the clock (ticks, timeouts,
 * backoffs, the next event).
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"

/* ================================================================== */
/* Results of a call                                                   */
/* ================================================================== */

static void res_reset(queue_t *q)
{
	q->n_res_adm = q->n_res_asg = q->n_res_ev = q->n_res_ch = q->n_res_msg = 0;
	q->n_res_idle = q->n_res_bch = 0;
}

static int emit_change(queue_t *q, uint32_t id)
{
	queue_pending_change_t *c;

	if (queue_grow(&q->res_ch, &q->cap_res_ch, q->n_res_ch + 1, sizeof(*q->res_ch)))
		return GPUQ_ENOMEM;
	c = &q->res_ch[q->n_res_ch++];
	c->wl = id;
	c->uid = wl_uid(W(q, id));
	c->reason = (queue_wait_t)W(q, id)->wait;
	return GPUQ_OK;
}

static int emit_admission(queue_t *q, uint32_t id, bool borrows)
{
	const wl_t *w = W(q, id);
	queue_admission_t *a;

	if (queue_grow(&q->res_adm, &q->cap_res_adm, q->n_res_adm + 1, sizeof(*q->res_adm)) ||
	    queue_grow(&q->res_asg, &q->cap_res_asg, q->n_res_asg + w->n_asg, sizeof(*q->res_asg)))
		return GPUQ_ENOMEM;
	a = &q->res_adm[q->n_res_adm++];
	a->wl = id;
	a->uid = wl_uid(w);
	a->cq = w->cq;
	a->borrows = borrows;
	a->assign = (const queue_assign_t *)(uintptr_t)q->n_res_asg; /* fixed up later */
	a->n_assign = w->n_asg;
	for (uint32_t i = 0; i < w->n_asg; i++)
		q->res_asg[q->n_res_asg++] = w->asg[i].a;
	return GPUQ_OK;
}

static void res_finish(queue_t *q, queue_result_t *out)
{
	for (size_t i = 0; i < q->n_res_adm; i++)
		q->res_adm[i].assign =
		    q->res_asg ? q->res_asg + (uintptr_t)q->res_adm[i].assign : NULL;
	for (size_t i = 0; i < q->n_res_ev; i++)
		q->res_ev[i].message = q->res_msg + (uintptr_t)q->res_ev[i].message;
	if (!out)
		return;
	out->admissions = q->res_adm;
	out->n_admissions = q->n_res_adm;
	out->evictions = q->res_ev;
	out->n_evictions = q->n_res_ev;
	out->changes = q->res_ch;
	out->n_changes = q->n_res_ch;
	out->idles = q->res_idle;
	out->n_idles = q->n_res_idle;
	out->budget_changes = q->res_bch;
	out->n_budget_changes = q->n_res_bch;
}

/* ================================================================== */
/* The admission cycle                                                 */
/* ================================================================== */

/* Which LocalQueue of CQ c has the next workload: the one whose head comes
 * first by queue_wl_cmp, a LocalQueue held by a budget left out. QUEUE_NONE
 * when all are empty. */
static uint32_t cq_next_lq(const queue_t *q, const cq_t *c)
{
	uint32_t best = QUEUE_NONE;

	for (size_t i = 0; i < c->lqs.n; i++) {
		uint32_t l = c->lqs.v[i];

		if (!q->lqs[l].heap.n || queue_lq_held(q, l))
			continue;
		if (best == QUEUE_NONE ||
		    queue_wl_cmp(q, q->lqs[l].heap.v[0], q->lqs[best].heap.v[0]) < 0)
			best = l;
	}
	return best;
}

static bool head_less(const queue_t *q, const cqhead_t *a, const cqhead_t *b)
{
	const wl_t *x = Wc(q, a->wl), *y = Wc(q, b->wl);
	int c;

	if (a->hopeless != b->hopeless)
		return a->hopeless;
	if (queue_wl_planned(x) != queue_wl_planned(y))
		return queue_wl_planned(x); /* the quota its victims free is for it */
	if (queue_lq_lowered(q, x->lq) != queue_lq_lowered(q, y->lq))
		return !queue_lq_lowered(q, x->lq); /* over a budget: after the others */
	if (q->cfg.fair_sharing) {
		int s = fairshare_share_cmp(&a->share, &b->share);

		if (s)
			return s < 0;
	} else if (a->level != b->level) {
		return a->level < b->level; /* quota nearer in the tree first */
	}
	if (x->priority != y->priority)
		return x->priority > y->priority;
	if (x->created != y->created)
		return x->created < y->created;
	c = strcmp(wl_uid(x), wl_uid(y));
	if (c)
		return c < 0;
	return a->cq < b->cq;
}

static void heads_push(queue_t *q, const cqhead_t *e)
{
	size_t i = q->n_heads++;

	q->heads[i] = *e;
	while (i > 0 && head_less(q, &q->heads[i], &q->heads[(i - 1) / 2])) {
		cqhead_t x = q->heads[i];

		q->heads[i] = q->heads[(i - 1) / 2];
		q->heads[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static cqhead_t heads_pop(queue_t *q)
{
	cqhead_t top = q->heads[0];
	size_t i = 0;

	q->heads[0] = q->heads[--q->n_heads];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < q->n_heads && head_less(q, &q->heads[l], &q->heads[m]))
			m = l;
		if (l + 1 < q->n_heads && head_less(q, &q->heads[l + 1], &q->heads[m]))
			m = l + 1;
		if (m == i)
			break;
		cqhead_t x = q->heads[i];

		q->heads[i] = q->heads[m];
		q->heads[m] = x;
		i = m;
	}
	return top;
}

#define TS_STRIDE (QUEUE_TREE_DEPTH_MAX + 1)

/* Under fair sharing in a tree: keep the head's need (q->tneeds[*ts ...]) so
 * its shares can be computed afresh before every pick. */
static int tree_need_keep(queue_t *q, const try_t *t, uint32_t *ts, uint32_t *tn)
{
	if (queue_grow(&q->tneeds, &q->cap_tneeds, q->n_tneeds + t->n_need, sizeof(*q->tneeds)))
		return GPUQ_ENOMEM;
	*ts = (uint32_t)q->n_tneeds;
	*tn = (uint32_t)t->n_need;
	if (t->n_need)
		memcpy(&q->tneeds[q->n_tneeds], t->need, t->n_need * sizeof(*t->need));
	q->n_tneeds += t->n_need;
	return GPUQ_OK;
}

/* Kueue's computeDRS before each tournament: for every head, the shares of
 * its CQ and of each cohort above it, its need added, at
 * q->tshares[i * TS_STRIDE ...] (i: its index in q->heads). */
static int tree_shares(queue_t *q)
{
	if (queue_grow(&q->tshares, &q->cap_tshares, q->n_heads * TS_STRIDE, sizeof(*q->tshares)))
		return GPUQ_ENOMEM;
	for (size_t h = 0; h < q->n_heads; h++) {
		const cqhead_t *e = &q->heads[h];
		const need_t *nd = &q->tneeds[e->ts];
		fairshare_share_t *v = &q->tshares[h * TS_STRIDE];
		uint32_t k = 1;

		for (uint32_t i = 0; i < e->tn; i++)
			queue_usage_add(q, e->cq, nd[i].slot, nd[i].val);
		v[0] = queue_cq_share(q, e->cq, NULL, 0, QUEUE_NONE);
		for (uint32_t x = q->cqs[e->cq].cohort; x != QUEUE_NONE && k < TS_STRIDE;
		     x = q->cohorts[x].parent)
			v[k++] = queue_cohort_share(q, x);
		for (uint32_t i = 0; i < e->tn; i++)
			queue_usage_add(q, e->cq, nd[i].slot, -nd[i].val);
	}
	return GPUQ_OK;
}

/* Head h's share at the level of child (QUEUE_NONE: its CQ's own). */
static fairshare_share_t share_at(const queue_t *q, size_t h, uint32_t child)
{
	uint32_t k = 0;

	if (child != QUEUE_NONE)
		for (uint32_t x = q->cqs[q->heads[h].cq].cohort; x != child;
		     x = q->cohorts[x].parent)
			k++;
	return q->tshares[h * TS_STRIDE + (child == QUEUE_NONE ? 0 : k + 1)];
}

/* Whether head a goes before head b in a tournament, a and b coming from
 * children na and nb of the cohort (QUEUE_NONE: a member CQ; else the
 * child cohort): hopeless and planned heads first as always, then their
 * shares at that level (Kueue's entryComparer), then head_less's order. */
static bool tour_less(const queue_t *q, size_t a, uint32_t na, size_t b, uint32_t nb)
{
	const cqhead_t *x = &q->heads[a], *y = &q->heads[b];
	fairshare_share_t sx = share_at(q, a, na), sy = share_at(q, b, nb);
	int c;

	if (x->hopeless != y->hopeless ||
	    queue_wl_planned(Wc(q, x->wl)) != queue_wl_planned(Wc(q, y->wl)) ||
	    queue_lq_lowered(q, Wc(q, x->wl)->lq) != queue_lq_lowered(q, Wc(q, y->wl)->lq))
		return head_less(q, x, y);
	c = fairshare_share_cmp(&sx, &sy);
	return c ? c < 0 : head_less(q, x, y);
}

/* Kueue's runTournament at cohort co: the index in q->heads of the winning
 * head of its subtree, or SIZE_MAX when it has none. */
static size_t tournament(const queue_t *q, uint32_t co)
{
	const cohort_t *h = &q->cohorts[co];
	size_t best = SIZE_MAX;
	uint32_t bn = QUEUE_NONE;

	for (size_t i = 0; i < h->kids.n; i++) {
		size_t w = tournament(q, h->kids.v[i]);

		if (w != SIZE_MAX &&
		    (best == SIZE_MAX || tour_less(q, w, h->kids.v[i], best, bn))) {
			best = w;
			bn = h->kids.v[i];
		}
	}
	for (size_t i = 0; i < q->n_heads; i++) {
		if (q->cqs[q->heads[i].cq].cohort != co)
			continue;
		if (best == SIZE_MAX || tour_less(q, i, QUEUE_NONE, best, bn)) {
			best = i;
			bn = QUEUE_NONE;
		}
	}
	return best;
}

/* The next head: the heap's top, or under fair sharing in a tree the
 * tournament's winner from the root down. */
static cqhead_t heads_next(queue_t *q, uint32_t root)
{
	size_t w;
	cqhead_t e;

	if (!q->tournament)
		return heads_pop(q);
	if (tree_shares(q)) {
		q->cycle_short = true; /* out of memory: the rest goes back */
		return heads_pop(q);
	}
	w = tournament(q, root);
	e = q->heads[w];
	q->heads[w] = q->heads[--q->n_heads];
	return e;
}

static bool may_fit(queue_t *q, const cq_t *c, const wl_t *w);

/* Whether a set-aside workload retried this cycle may go back aside
 * untried when it no longer may fit: only one whose reason is already a
 * quota shortfall, which it would be given again; one that waited for a
 * reservation, a topology domain, a budget or a victim is tried, so its
 * status says what it lacks now. */
static bool back_untried(queue_t *q, const cq_t *c, const wl_t *w)
{
	return w->rec_aside &&
	       (w->why == WHY_QUOTA_NOMINAL || w->why == WHY_QUOTA_BLIMIT ||
		w->why == WHY_QUOTA_COHORT) &&
	       !may_fit(q, c, w);
}

/* Set aside again, in one pass over CQ c's LocalQueue heaps, every
 * workload retried this cycle that no longer may fit (the quota it saw
 * taken since), rather than one heap removal each: O(heap size), then
 * c->prune_due of them found one by one before the next pass (an eighth
 * of what stays queued: the passes cost no more than the removals they
 * save). One that cannot be set aside (no memory) stays queued. */
static void retried_prune(queue_t *q, cq_t *c)
{
	size_t left = 0;

	for (size_t i = 0; i < c->lqs.n; i++) {
		u32vec_t *h = &q->lqs[c->lqs.v[i]].heap;
		size_t k = 0, n = h->n;

		for (size_t j = 0; j < n; j++) {
			uint32_t id = h->v[j];
			wl_t *w = W(q, id);

			if (back_untried(q, c, w)) {
				w->where = W_NONE;
				if (queue_wl_attach(q, id, W_ASIDE) == GPUQ_OK)
					continue;
				w->where = W_HEAP;
			}
			h->v[k] = id;
			w->pos = (uint32_t)k++;
		}
		h->n = k;
		if (k < n)
			queue_heap_rebuild(q, h);
		left += k;
	}
	c->prune_due = (uint32_t)(left / 8 > UINT32_MAX - 1 ? UINT32_MAX : left / 8 + 1);
}

/* Take CQ cq's next workload out of its LocalQueue and rank it. A
 * set-aside workload retried at the cycle's start (cohort_retry_aside)
 * that no longer may fit, the quota it saw then taken by heads before it,
 * goes straight back aside, untried, when its reason is a quota shortfall
 * (back_untried): free quota only shrinks during a cycle, so no attempt
 * could admit it, and its record and reason stay as they were (a deep
 * BestEffortFIFO queue is not tried whole, nor written whole to the store,
 * after every finish). */
static void fetch_head(queue_t *q, uint32_t cq)
{
	cq_t *c = &q->cqs[cq];
	uint32_t l, wid;
	try_t *t = &q->scratch_try;
	cqhead_t e;

	for (;;) {
		l = cq_next_lq(q, c);
		if (l == QUEUE_NONE)
			return;
		wid = q->lqs[l].heap.v[0];
		queue_heap_remove(q, &q->lqs[l].heap, 0);
		W(q, wid)->where = W_FLIGHT;
		if (!back_untried(q, c, W(q, wid)) || queue_wl_attach(q, wid, W_ASIDE))
			break;
		if (c->prune_due)
			c->prune_due--;
		else
			retried_prune(q, c);
	}
	queue_try_assign(q, wid, t);
	e.cq = cq;
	e.wl = wid;
	e.gen = cohort_of(q, c)->gen;
	e.level = t->level;
	e.mode = (uint8_t)t->mode;
	e.hopeless = t->mode >= M_WAIT;
	e.share = q->cfg.fair_sharing ? queue_cq_share(q, cq, t->need, t->n_need, QUEUE_NONE)
				      : (fairshare_share_t){0.0, 0};
	e.ts = e.tn = 0;
	if (q->tournament && tree_need_keep(q, t, &e.ts, &e.tn))
		q->cycle_short = true; /* out of memory: the cycle stops, goes again */
	heads_push(q, &e);
}

static bool why_skip(uint8_t why)
{
	return why == WHY_TAKEN || why == WHY_SKIPPED;
}

/* Set a pending workload's wait reason and explanation (why: t->why, or a
 * skip); report the change when it is newly set aside, newly skipped, or
 * set aside after a skip (its status said it would be tried again). */
static void set_wait(queue_t *q, uint32_t wid, int wait, const try_t *t, uint8_t why)
{
	wl_t *w = W(q, wid);
	/* the free amount is not compared: explanations read it live */
	bool changed = w->wait != wait || w->why != why || w->why_res != t->why_res ||
		       w->why_flavor != t->why_flavor || w->why_need != t->why_need ||
		       w->why_level != t->why_level;

	if (!changed)
		return;
	if ((wait == QUEUE_WAIT_QUOTA || wait == QUEUE_WAIT_NO_FIT) &&
	    (w->wait != wait || why_skip(w->why) != why_skip(why))) {
		w->wait = (uint8_t)wait;
		(void)emit_change(q, wid); /* lost only on allocation failure */
	}
	w->wait = (uint8_t)wait;
	w->why = why;
	w->why_res = t->why_res;
	w->why_flavor = t->why_flavor;
	w->why_need = t->why_need;
	w->why_free = t->why_free;
	w->why_level = t->why_level;
	queue_mark_wl(q, w);
}

/* Hold a preemptor's usage for the rest of this cycle. */
static int hold(queue_t *q, uint32_t cq, const try_t *t)
{
	if (queue_grow(&q->held, &q->cap_held, q->n_held + t->n_need, sizeof(*q->held)) ||
	    queue_grow(&q->held_cq, &q->cap_held_cq, q->n_held + t->n_need, sizeof(*q->held_cq)))
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < t->n_need; i++) {
		q->held[q->n_held] = t->need[i];
		q->held_cq[q->n_held++] = cq;
		queue_usage_add(q, cq, t->need[i].slot, t->need[i].val);
	}
	return GPUQ_OK;
}

static int admit(queue_t *q, uint32_t wid, const try_t *t, int64_t now)
{
	wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];
	lq_t *l = &q->lqs[w->lq];
	asg_t *a = NULL;

	/* room for its Ready timer and its wall-clock deadline first: a
	   deadline lost would never evict */
	if ((queue_ready_watched(q, w) &&
	     queue_grow(&q->ready_timers.v, &q->ready_timers.cap, q->ready_timers.n + 1,
			sizeof(*q->ready_timers.v))) ||
	    (queue_exec_limit(q, w) && queue_grow(&q->exec_timers.v, &q->exec_timers.cap,
						  q->exec_timers.n + 1, sizeof(*q->exec_timers.v))))
		return GPUQ_ENOMEM;
	if (t->n_asg) {
		a = malloc(t->n_asg * sizeof(*a));
		if (!a)
			return GPUQ_ENOMEM;
		memcpy(a, t->asg, t->n_asg * sizeof(*a));
	}
	free(w->asg);
	w->asg = a;
	w->n_asg = (uint32_t)t->n_asg;
	if (emit_admission(q, wid, t->borrows)) {
		free(w->asg);
		w->asg = NULL;
		w->n_asg = 0;
		return GPUQ_ENOMEM;
	}
	if (queue_topo_admit(q, wid, t)) {
		q->n_res_adm--;
		free(w->asg);
		w->asg = NULL;
		w->n_asg = 0;
		return GPUQ_ENOMEM;
	}
	if (queue_wl_attach(q, wid, W_ADMITTED)) {
		q->n_res_adm--;
		queue_topo_release(q, wid);
		free(w->asg);
		w->asg = NULL;
		w->n_asg = 0;
		return GPUQ_ENOMEM;
	}
	queue_wl_charge(q, wid, +1);
	queue_usage_open(q, wid, now);
	if (c->resv == wid) { /* those it kept out go back when the cohort cycles */
		c->resv = QUEUE_NONE;
		queue_cohort_touch(q, c->cohort, true);
	}
	w->state = QUEUE_WL_ADMITTED;
	w->wait = QUEUE_WAIT_NONE;
	w->why = WHY_NONE;
	w->admitted_ms = now;
	w->admit_cycle = q->cycles;
	w->ready = false;
	w->predicted = -1;
	w->epoch++;
	queue_prot_admitted(q, wid);
	c->n_pending--;
	c->ctr.admissions++;
	l->n_pending--;
	l->n_admitted++;
	l->ctr.admissions++;
	queue_lq_cur_add(q, w, +1);
	l->usage += fairshare_entry_penalty(q->cfg.tenant_sample_ms, q->cfg.tenant_half_life_ms) *
		    queue_wl_share(q, w);
	cohort_of(q, c)->gen++;
	if (queue_ready_watched(q, w))
		(void)queue_timer_push(q, &q->ready_timers, now + q->cfg.ready_timeout_ms, wid);
	(void)queue_exec_arm(q, wid); /* the room is there */
	queue_mark_wl(q, w);
	queue_mark_cq(q, w->cq);
	queue_mark_lq(q, w->lq);
	return GPUQ_OK;
}

/* The assignment of one adopted request, or GPUQ_ENOTFOUND. */
static int adopt_one(queue_t *q, const cq_t *c, uint16_t ps, uint32_t res, int64_t amount,
		     const queue_adopt_t *a, size_t n, asg_t *out)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t rid, fid;
		int64_t slot;
		if (a[i].podset != ps || queue_names_find(&q->res_names, a[i].resource, &rid) ||
		    rid != res)
			continue;
		if (queue_names_find(&q->flv_names, a[i].flavor, &fid))
			return GPUQ_ENOTFOUND;
		slot = queue_cq_slot_find(c, fid, res);
		if (slot < 0)
			return GPUQ_ENOTFOUND;
		out->a.podset = ps;
		out->a.resource = (uint16_t)res;
		out->a.flavor = fid;
		out->a.amount = amount;
		out->slot = (uint32_t)slot;
		return GPUQ_OK;
	}
	return GPUQ_ENOTFOUND;
}

int queue_workload_adopt(queue_t *q, const char *uid, const queue_adopt_t *a, size_t n, int64_t now)
{
	try_t t;
	uint32_t wid;
	wl_t *w;
	const psref_t *ps;
	size_t n_res;

	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	w = W(q, wid);
	if (w->state != QUEUE_WL_PENDING)
		return GPUQ_EINVAL;
	memset(&t, 0, sizeof(t));
	ps = wl_ps(w);
	for (uint16_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *tm = &q->tmpls[ps[p].tmpl];
		for (uint8_t r = 0; r < tm->n_req; r++) {
			int64_t amount = tm->amt[r] * ps[p].count;
			int rc;
			if (amount == 0)
				continue;
			rc = adopt_one(q, &q->cqs[w->cq], p, tm->res[r], amount, a, n,
				       &t.asg[t.n_asg]);
			if (rc)
				return rc;
			t.n_asg++;
		}
	}
	n_res = q->n_res_adm;
	queue_wl_detach(q, wid);
	if (admit(q, wid, &t, now)) {
		(void)queue_wl_attach(q, wid, W_HEAP);
		return GPUQ_ENOMEM;
	}
	q->n_res_adm = n_res; /* adopted outside a cycle: not reported as admitted */
	return GPUQ_OK;
}

/* Keep a popped workload pending (re-queued at the end of the cycle). */
int queue_keep(queue_t *q, uint32_t wid)
{
	return queue_vpush(&q->keep, wid);
}

static int admit_or_keep(queue_t *q, uint32_t wid, const try_t *t, int64_t now)
{
	if (admit(q, wid, t, now) == GPUQ_OK)
		return GPUQ_OK;
	q->cycle_short = true; /* out of memory: its cohort goes again next cycle */
	return queue_keep(q, wid);
}

/* Hold a waiting preemptor's usage for the rest of the cycle and keep it
 * pending; under StrictFIFO it blocks its CQ. */
static int hold_and_keep(queue_t *q, const cqhead_t *e, const try_t *t)
{
	cq_t *c = &q->cqs[e->cq];

	if (hold(q, e->cq, t))
		q->cycle_short = true; /* unheld, its quota could go to others: stop */
	c->blocked = c->strategy == QUEUE_STRICT_FIFO;
	return queue_keep(q, e->wl);
}

/* A preemptor keeps the flavors it preempted for: admitted on them once they
 * fit, held while its victims' quota is still being released. False when
 * the plan no longer fits even then (dropped: it plans afresh); else *rc is
 * the head's result. */
static bool run_plan(queue_t *q, const cqhead_t *e, int64_t now, try_t *t, int *rc)
{
	const cq_t *c = &q->cqs[e->cq];

	bool borrow = !queue_lq_lowered(q, W(q, e->wl)->lq); /* over a budget: no borrowing */

	queue_try_from_plan(q, e->wl, t);
	if (queue_topo_needed(q, t)) { /* placed afresh: its pods fit now, or it plans again */
		queue_topo_try(q, e->wl, t);
		if (!t->placed && queue_topo_fits_after_evictions(q, e->wl, t)) {
			queue_try_from_plan(q, e->wl, t); /* its victims' pods are still going */
			*rc = hold_and_keep(q, e, t);
			return true;
		}
		if (!t->placed) {
			queue_plan_drop(q, e->wl);
			return false;
		}
	}
	if (queue_need_fits(q, e->cq, t, borrow)) {
		for (size_t i = 0; i < t->n_need; i++)
			if (c->slots[t->need[i].slot].usage + t->need[i].val >
			    c->slots[t->need[i].slot].nominal)
				t->borrows = true;
		*rc = admit_or_keep(q, e->wl, t, now);
		return true;
	}
	if (queue_plan_fits_after_evictions(q, e->wl, t, borrow)) {
		*rc = hold_and_keep(q, e, t);
		return true;
	}
	queue_plan_drop(q, e->wl);
	return false;
}

/* Evict the victim set in q->targets for preemptor wid: all of it, or
 * (GPUQ_ENOMEM) none, room for every report made first. */
static int evict_targets(queue_t *q, uint32_t wid)
{
	size_t n = q->targets.n / 2;

	if (queue_emit_reserve(q, n) ||
	    queue_grow(&q->release.v, &q->release.cap, q->release.n + n, sizeof(uint32_t)) ||
	    queue_grow(&q->gone.v, &q->gone.cap, q->gone.n + n, sizeof(uint32_t)))
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < q->targets.n; i += 2) {
		uint32_t v = q->targets.v[i];
		int rc = queue_wl_evict(q, v, wid, (int)q->targets.v[i + 1]);

		GPUQ_ASSERT(rc == GPUQ_OK); /* its report has room */
		if (q->cfg.release_on_evict)
			q->release.v[q->release.n++] = v;
		W(q, v)->gone = true; /* see queue_preemption_targets */
		q->gone.v[q->gone.n++] = v;
	}
	return GPUQ_OK;
}

/* Wait as Preempting on the assignment in t (planned already when
 * `planned`), its usage held this cycle. A head that newly waits so without
 * victims of its own (quota already being freed covers it) touches its
 * cohort: a plan moves it ahead (a planned preemptor first), so the next
 * cycle may decide otherwise than this one, and nothing else would run it
 * (its victims' release touches the cohort when it evicts). Else a cohort
 * that this cycle left as it was decides differently once restored. */
static int wait_preempting(queue_t *q, const cqhead_t *e, const try_t *t, bool planned)
{
	bool newly = !queue_wl_planned(W(q, e->wl));

	if (!planned && queue_plan_keep(q, e->wl, t)) {
		q->cycle_short = true; /* the next cycle tries it again */
		return queue_keep(q, e->wl);
	}
	if (!planned && newly)
		queue_cohort_touch(q, q->cqs[e->cq].cohort, false);
	set_wait(q, e->wl, QUEUE_WAIT_PREEMPTING, t, t->why);
	return hold_and_keep(q, e, t);
}

/* Why head e, which cannot be admitted now, was skipped (Kueue's skipped
 * entries): WHY_TAKEN when another preemptor took the victims it needed
 * this cycle, WHY_SKIPPED when it fitted when it became head and another
 * head took that quota since; WHY_NONE when it was not skipped. */
static uint8_t skip_of(const queue_t *q, const cqhead_t *e, const try_t *t)
{
	if (t->mode == M_NEVER)
		return WHY_NONE;
	if (q->gone.n && queue_gone_overlap(q, e->wl, t))
		return WHY_TAKEN;
	return e->mode == M_FIT ? WHY_SKIPPED : WHY_NONE;
}

/* A head that cannot be admitted: skipped (it stays in the active queue and
 * its cohort is due another cycle, so the next one tries it at once, as
 * Kueue requeues a skipped entry immediately), set aside (never fits, or
 * BestEffortFIFO), or kept blocking its CQ (StrictFIFO). */
static int set_aside(queue_t *q, const cqhead_t *e, const try_t *t)
{
	cq_t *c = &q->cqs[e->cq];
	uint8_t skip = skip_of(q, e, t);

	if (t->mode != M_NEVER && queue_cq_can_preempt(q, c))
		q->retry_preempt = true; /* this cycle's admissions were no
					    preemption candidates: look again */
	if (skip != WHY_NONE) {
		set_wait(q, e->wl, QUEUE_WAIT_QUOTA, t, skip);
		queue_mark_wl(q, W(q, e->wl)); /* its record may have said set aside */
		queue_cohort_touch(q, c->cohort, false);
		c->blocked = c->strategy == QUEUE_STRICT_FIFO;
		return queue_keep(q, e->wl);
	}
	set_wait(q, e->wl, t->mode == M_NEVER ? QUEUE_WAIT_NO_FIT : QUEUE_WAIT_QUOTA, t, t->why);
	/* StrictFIFO: the head stays at the head and blocks, whatever the
	 * reason, NoFit included (as Kueue requeues it "immediately" for every
	 * reason but a namespace mismatch, which the core never sees) */
	if (c->strategy == QUEUE_STRICT_FIFO) {
		c->blocked = true;
		return queue_keep(q, e->wl);
	}
	if (queue_wl_attach(q, e->wl, W_ASIDE))
		return queue_keep(q, e->wl);
	if (!W(q, e->wl)->rec_aside)
		queue_mark_wl(q, W(q, e->wl)); /* its record said queued */
	return GPUQ_OK;
}

/* A head in flight goes straight back to its queue, untried. */
static void put_back(queue_t *q, uint32_t wid)
{
	if (queue_wl_attach(q, wid, W_HEAP) == GPUQ_OK)
		W(q, wid)->where = W_HEAP;
}

/* A head kept out by its CQ's reservation: set aside until capacity frees
 * (or the reservation's holder is admitted), its reason WHY_RESERVED. */
static int reserved_aside(queue_t *q, const cqhead_t *e, try_t *t)
{
	t->why_res = QUEUE_NONE;
	t->why_flavor = QUEUE_NONE;
	t->why_need = 0;
	t->why_free = 0;
	set_wait(q, e->wl, QUEUE_WAIT_QUOTA, t, WHY_RESERVED);
	if (queue_wl_attach(q, e->wl, W_ASIDE))
		return queue_keep(q, e->wl);
	queue_mark_wl(q, W(q, e->wl)); /* its record said queued */
	return GPUQ_OK;
}

/* A head whose pods fit a domain (and whose quota fits) once the victims
 * in q->targets (topology.c) are gone: evicted (all or none), it waits as
 * a preemptor on its plan, as one preempting for quota does. While a
 * domain (and, when it needed victims for it, its quota) is already being
 * freed for it (workloads evicting) it evicts no more. */
static int topo_preempt(queue_t *q, const cqhead_t *e, try_t *t)
{
	uint32_t wid = e->wl;

	if (queue_topo_fits_after_evictions(q, wid, t) &&
	    (!t->blocked_quota || queue_plan_fits_after_evictions(q, wid, t, t->borrows))) {
		q->targets.n = 0;
		return wait_preempting(q, e, t, false);
	}
	q->targets_borrow = t->borrows;
	if (queue_plan_keep(q, wid, t) || evict_targets(q, wid)) {
		queue_plan_drop(q, wid);
		q->cycle_short = true; /* the next cycle tries it again */
		return queue_keep(q, wid);
	}
	cohort_of(q, &q->cqs[e->cq])->gen++;
	return wait_preempting(q, e, t, true);
}

/* Handle one head; returns GPUQ_ENOMEM only when it could not be kept. */
static int process_head(queue_t *q, const cqhead_t *e, int64_t now)
{
	uint32_t wid = e->wl;
	try_t *t = &q->scratch_try;
	int rc;

	if (W(q, wid)->wait == QUEUE_WAIT_PREEMPTING && W(q, wid)->n_asg &&
	    run_plan(q, e, now, t, &rc))
		return rc;
	if (queue_resv_blocks(q, wid, now))
		return reserved_aside(q, e, t);
	q->prot_seen = false; /* set when a candidate is passed over for its minimum runtime */
	queue_try_assign(q, wid, t);
	if (t->mode == M_FIT && queue_resv_blocks_borrowing(q, wid, t, now) != QUEUE_NONE)
		return reserved_aside(q, e, t);
	if (t->mode == M_FIT)
		return admit_or_keep(q, wid, t, now);
	if (t->mode == M_WAIT && t->why == WHY_TOPOLOGY && queue_topo_preemption(q, wid, t))
		return topo_preempt(q, e, t); /* victims that free a domain (and its quota) */
	if (t->mode == M_RECLAIM || t->mode == M_PREEMPT) {
		cohort_t *h = cohort_of(q, &q->cqs[e->cq]);

		if (queue_preemption_targets(q, wid, t)) {
			/* Quota already being freed covers it as its own victims
			 * would (within nominal unless they let it borrow): wait,
			 * evict no more. Only a workload with victims of its own
			 * may wait: one without would go first next cycle (a
			 * plan) to quota freed for others, borrowing, and be
			 * reclaimed in turn (kueue-large livelocked so). */
			if (h->n_evicting &&
			    queue_plan_fits_after_evictions(q, wid, t, q->targets_borrow))
				return wait_preempting(q, e, t, false);
			/* the plan first: victims are evicted only for a kept plan */
			if (queue_plan_keep(q, wid, t) || evict_targets(q, wid)) {
				queue_plan_drop(q, wid);
				q->cycle_short = true; /* the next cycle tries it again */
				return queue_keep(q, wid);
			}
			h->gen++;
			return wait_preempting(q, e, t, true);
		}
		if (q->cycle_short) /* out of memory: the next cycle tries it again */
			return queue_keep(q, wid);
		if (t->why == WHY_NONE)
			t->why = WHY_NO_CANDIDATES;
	}
	/* a victim set was there but for minimum runtimes: say so (the
	 * explanation names whose, live); their ends touch the cohort */
	if (q->prot_seen && t->mode != M_NEVER && t->mode != M_FIT)
		t->why = WHY_MIN_RUNTIME;
	return set_aside(q, e, t);
}

/* A necessary condition for a set-aside workload to fit now: each resource
 * its (single) pod set requests fits whole in some eligible flavor. Free
 * quota only shrinks during a cycle, so a workload failing it at the start
 * of the cycle cannot be admitted in it: it stays aside, without the cost
 * of a queue round trip. Multi-pod-set workloads, CQs that may preempt and
 * StrictFIFO CQs always go back: a StrictFIFO CQ's set-aside workload (one
 * a reservation held back, or set aside before the CQ turned StrictFIFO)
 * must be its head again and block, or a later one would pass it. */
static bool may_fit(queue_t *q, const cq_t *c, const wl_t *w)
{
	const tmpl_t *tm;

	if (w->n_ps != 1 || c->strategy == QUEUE_STRICT_FIFO || queue_cq_can_preempt(q, c))
		return true;
	tm = &q->tmpls[w->ps1.tmpl];
	for (uint32_t i = 0; i < tm->n_req; i++) {
		int8_t g = c->res_group[tm->res[i]];
		const group_t *gr;
		bool ok = false;

		if (tm->amt[i] <= 0)
			continue;
		if (g < 0)
			return false;
		gr = &c->groups[g];
		for (uint32_t f = 0; f < gr->n_flv && !ok; f++) {
			const slot_t *s =
			    &c->slots[gr->base + f * gr->n_cov + (uint32_t)c->res_cov[tm->res[i]]];

			ok = queue_tmpl_flavor_ok(q, w->ps1.tmpl, gr->flv[f]) &&
			     (int64_t)w->ps1.count * tm->amt[i] <= queue_slot_available(q, c, s);
		}
		if (!ok)
			return false;
	}
	return true;
}

/* The end of a cycle for the set-aside workloads it retried: the record
 * of each that is not set aside again (admitted, waiting to preempt, kept
 * queued) is marked changed; one set aside again with the same reason
 * keeps its record (set_wait marks a new reason). */
static void retried_done(queue_t *q)
{
	for (size_t i = 0; i < q->retried.n; i++) {
		wl_t *w = W(q, q->retried.v[i]);

		if (w->live && w->rec_aside && w->where != W_ASIDE)
			queue_mark_wl(q, w);
		w->rec_aside = false;
	}
	q->retried.n = 0;
}

/* Move the set-aside workloads of the cohort that may fit now back into
 * their queues. */
static void cohort_retry_aside(queue_t *q, cohort_t *h)
{
	bool short_ = false;

	/* each LocalQueue's heap takes its workloads unordered, then is put
	   in order once (queue_heap_order): a deep queue's are not sifted in
	   one by one */
	for (size_t k = 0; k < h->cqs.n; k++)
		for (size_t i = 0; i < q->cqs[h->cqs.v[k]].lqs.n; i++) {
			lq_t *l = &q->lqs[q->cqs[h->cqs.v[k]].lqs.v[i]];

			l->heap_from = (uint32_t)l->heap.n;
		}
	for (size_t k = 0; k < h->cqs.n && !short_; k++) {
		cq_t *c = &q->cqs[h->cqs.v[k]];

		for (size_t i = c->aside.n; i-- > 0;) {
			uint32_t wid = c->aside.v[i];

			if (!may_fit(q, c, W(q, wid)))
				continue;
			queue_wl_detach(q, wid);
			if (queue_heap_append(q, &q->lqs[W(q, wid)->lq].heap, wid)) {
				(void)queue_wl_attach(q, wid, W_ASIDE);
				short_ = true; /* try again next cycle */
				break;
			}
			/* its record says set aside: marked at the cycle's end
			   if it is not set aside again (retried_done) */
			if (!W(q, wid)->rec_aside && queue_vpush(&q->retried, wid) == GPUQ_OK)
				W(q, wid)->rec_aside = true;
			else if (!W(q, wid)->rec_aside)
				queue_mark_wl(q, W(q, wid));
		}
	}
	for (size_t k = 0; k < h->cqs.n; k++)
		for (size_t i = 0; i < q->cqs[h->cqs.v[k]].lqs.n; i++) {
			lq_t *l = &q->lqs[q->cqs[h->cqs.v[k]].lqs.v[i]];

			if (l->heap.n > l->heap_from)
				queue_heap_order(q, &l->heap, l->heap_from);
		}
	h->capacity_up = short_;
}

static int cohort_cycle(queue_t *q, uint32_t co, int64_t now)
{
	cohort_t *h = &q->cohorts[co];
	uint32_t prev;
	size_t adm0;
	int rc = GPUQ_OK;

	h->dirty = false;
	if (h->capacity_up)
		cohort_retry_aside(q, h);
	h->gen++;
	if (queue_grow(&q->heads, &q->cap_heads, h->cqs.n, sizeof(*q->heads))) {
		retried_done(q); /* queued again, untried: marked */
		return GPUQ_ENOMEM;
	}
	q->n_heads = 0;
	q->n_tneeds = 0;
	q->tournament = q->cfg.fair_sharing && h->kids.n > 0;
	q->retry_preempt = false;
	q->cycle_short = false;
	adm0 = q->n_res_adm;
	q->keep.n = 0;
	q->release.n = 0;
	q->n_held = 0;
	for (size_t k = 0; k < h->cqs.n; k++) {
		cq_t *c = &q->cqs[h->cqs.v[k]];

		c->blocked = false;
		c->prune_due = 0;
		c->n_nofit = 0;
		prev = c->resv;
		queue_resv_decide(q, h->cqs.v[k], now);
		if (c->resv != QUEUE_NONE && c->resv != prev)
			(void)emit_change(q, c->resv); /* its status says so; lost only on ENOMEM */
		if (c->resv != QUEUE_NONE && W(q, c->resv)->where == W_ASIDE) {
			/* the holder is tried at every cycle of its cohort */
			queue_wl_detach(q, c->resv);
			if (queue_wl_attach(q, c->resv, W_HEAP))
				(void)queue_wl_attach(q, c->resv, W_ASIDE);
			queue_mark_wl(q, W(q, c->resv)); /* its record said set aside */
		}
		if (c->stop == QUEUE_STOP_NONE)
			fetch_head(q, h->cqs.v[k]);
	}
	while (q->n_heads) {
		cqhead_t e = heads_next(q, co);

		/* Out of memory: the cycle stops there (the heads left go back
		 * untried, the cohort goes again next cycle), so a retry
		 * decides what this cycle would have. */
		if (q->cycle_short) {
			put_back(q, e.wl);
			continue;
		}
		if (process_head(q, &e, now)) {
			put_back(q, e.wl); /* could not even queue_keep it */
			q->cycle_short = true;
			continue;
		}
		if (!q->cqs[e.cq].blocked && !q->cycle_short)
			fetch_head(q, e.cq);
	}
	for (size_t i = 0; i < q->keep.n; i++)
		if (queue_wl_attach(q, q->keep.v[i], W_HEAP))
			rc = GPUQ_ENOMEM;
	for (size_t i = 0; i < q->n_held; i++)
		queue_usage_add(q, q->held_cq[i], q->held[i].slot, -q->held[i].val);
	q->n_held = 0;
	for (size_t i = 0; i < q->gone.n; i++)
		W(q, q->gone.v[i])->gone = false;
	q->gone.n = 0;
	retried_done(q);
	for (size_t i = 0; i < q->release.n; i++)
		if (W(q, q->release.v[i])->state == QUEUE_WL_EVICTING &&
		    queue_wl_release(q, q->release.v[i], now))
			q->release_lost = true;
	q->release.n = 0;
	if (q->retry_preempt && q->n_res_adm > adm0)
		queue_cohort_touch(q, co, true);
	return q->cycle_short ? GPUQ_ENOMEM : rc;
}

/* Sample tenant usage into the decay when tenant_sample_ms has passed. */
static void maybe_sample(queue_t *q, int64_t now)
{
	int64_t dt;

	if (q->last_sample == INT64_MIN) {
		q->last_sample = now;
		return;
	}
	if (q->cfg.tenant_sample_ms <= 0 || now - q->last_sample < q->cfg.tenant_sample_ms)
		return;
	dt = now - q->last_sample;
	for (size_t i = 0; i < q->lq_names.n; i++) {
		lq_t *l = &q->lqs[i];
		double u = fairshare_decay(l->usage, queue_lq_share_now(q, (uint32_t)i), dt,
					   q->cfg.tenant_half_life_ms);

		if (u != l->usage) {
			l->usage = u;
			queue_mark_lq(q, (uint32_t)i);
		}
	}
	q->last_sample = now;
	for (size_t i = 0; i < q->cq_names.n; i++)
		if (q->cqs[i].lqs.n > 1)
			queue_cohort_touch(q, q->cqs[i].cohort, false);
}

static void expire_backoffs(queue_t *q, int64_t now)
{
	for (;;) {
		uint32_t wid;
		wl_t *w;

		queue_timer_clean(q, &q->backoff_timers);
		if (!q->backoff_timers.n || q->backoff_timers.v[0].at > now)
			return;
		wid = q->backoff_timers.v[0].wl;
		queue_timer_pop(q, &q->backoff_timers);
		w = W(q, wid);
		if (w->where != W_BACKOFF)
			continue;
		w->epoch++;
		w->where = W_NONE;
		if (queue_wl_enqueue(q, wid)) {
			w->where = W_BACKOFF;
			(void)queue_timer_push(q, &q->backoff_timers, now, wid);
			return;
		}
		queue_mark_wl(q, w);
	}
}

/* With release_on_evict, release what a failed allocation left EVICTING
 * (nobody reports these gone): every EVICTING workload. */
static int release_lost(queue_t *q, int64_t now)
{
	if (!q->release_lost)
		return GPUQ_OK;
	for (size_t i = 0; i < q->n_wls; i++)
		if (Wc(q, (uint32_t)i)->live && Wc(q, (uint32_t)i)->state == QUEUE_WL_EVICTING &&
		    queue_wl_release(q, (uint32_t)i, now))
			return GPUQ_ENOMEM;
	q->release_lost = false;
	return GPUQ_OK;
}

static int clock_advance(queue_t *q, int64_t now)
{
	if (now < -QUEUE_TIME_MAX || now > QUEUE_TIME_MAX)
		return GPUQ_ERANGE;
	if (q->last_now != INT64_MIN && now < q->last_now)
		return GPUQ_EINVAL;
	if (now != q->last_now) {
		q->last_now = now;
		q->meta_dirty = true;
	}
	maybe_sample(q, now);
	expire_backoffs(q, now);
	queue_prot_expire(q, now);
	queue_budgets_tick(q, now);
	return release_lost(q, now);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* After a lost touch (queue_cohort_touch could not grow dirty_cohorts),
 * put every cohort on the list: GPUQ_ENOMEM when even that fails. */
static int touch_all(queue_t *q)
{
	if (!q->touch_lost)
		return GPUQ_OK;
	for (size_t co = 0; co < q->cohort_names.n; co++) {
		if (q->cohorts[co].dirty)
			continue;
		if (queue_vpush(&q->dirty_cohorts, (uint32_t)co))
			return GPUQ_ENOMEM;
		q->cohorts[co].dirty = true;
	}
	q->touch_lost = false;
	return GPUQ_OK;
}

/* The cohorts of todo[0..n) whose cycle stopped early go back on the list
 * (with their set-aside workloads up for a retry), so the next cycle takes
 * them again even if nothing else changes. todo's memory is reused for the
 * list when it is empty, freed otherwise. */
static void requeue_failed(queue_t *q, u32vec_t todo, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cohort_t *h = &q->cohorts[todo.v[i]];

		if (!h->capacity_up) {
			h->capacity_up = true;
			queue_mark_meta(q); /* the meta record lists them */
		}
	}
	if (!q->dirty_cohorts.n && !q->dirty_cohorts.v) {
		q->dirty_cohorts = todo;
		q->dirty_cohorts.n = n;
		for (size_t i = 0; i < n; i++)
			q->cohorts[todo.v[i]].dirty = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		queue_cohort_touch(q, todo.v[i], false);
	free(todo.v);
}

int queue_cycle_run(queue_t *q, int64_t now, queue_result_t *out)
{
	u32vec_t todo;
	size_t failed = 0;
	int rc, ret = GPUQ_OK;

	res_reset(q);
	rc = clock_advance(q, now);
	if (!rc)
		rc = touch_all(q);
	if (rc) {
		res_finish(q, out);
		return rc;
	}
	q->cycles++;
	queue_mark_meta(q);
	todo = q->dirty_cohorts;
	q->dirty_cohorts = (u32vec_t){0};
	if (todo.n > 1)
		qsort(todo.v, todo.n, sizeof(uint32_t), u32_cmp);
	for (size_t i = 0; i < todo.n; i++) {
		q->cohorts[todo.v[i]].dirty = false;
	}
	for (size_t i = 0; i < todo.n; i++) {
		rc = cohort_cycle(q, todo.v[i], now);
		if (rc) {
			ret = rc;
			todo.v[failed++] = todo.v[i]; /* i >= failed: nothing is overwritten */
		}
	}
	requeue_failed(q, todo, failed);
	res_finish(q, out);
	return ret;
}

/* Evict every admitted workload of a HoldAndDrain CQ, oldest first. */
int queue_adm_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const wl_t *a = Wc(q, *(const uint32_t *)pa), *b = Wc(q, *(const uint32_t *)pb);

	if (a->admitted_ms != b->admitted_ms)
		return a->admitted_ms < b->admitted_ms ? -1 : 1;
	return strcmp(wl_uid(a), wl_uid(b));
}

static int drain(queue_t *q, uint32_t cq, int64_t now)
{
	cq_t *c = &q->cqs[cq];
	u32vec_t v = {0};
	int rc = GPUQ_OK;

	for (size_t i = 0; i < c->adm.n; i++)
		if (W(q, c->adm.v[i])->state == QUEUE_WL_ADMITTED && queue_vpush(&v, c->adm.v[i]))
			rc = GPUQ_ENOMEM;
	if (v.n > 1)
		qsort_r(v.v, v.n, sizeof(uint32_t), queue_adm_cmp, q);
	for (size_t i = 0; i < v.n && !rc; i++) {
		rc = queue_wl_evict(q, v.v[i], QUEUE_NONE, QUEUE_EVICT_STOPPED);
		if (!rc && q->cfg.release_on_evict && queue_wl_release(q, v.v[i], now)) {
			q->release_lost = true; /* still EVICTING: see release_lost() */
			rc = GPUQ_ENOMEM;
		}
	}
	free(v.v);
	return rc;
}

/* Evict admitted workloads whose Ready deadline passed, by (deadline, uid). */
static int ready_timeouts(queue_t *q, int64_t now)
{
	u32vec_t due = {0};
	int rc = GPUQ_OK;

	for (;;) {
		uint32_t wid;
		const wl_t *w;

		queue_timer_clean(q, &q->ready_timers);
		if (!q->ready_timers.n || q->ready_timers.v[0].at > now)
			break;
		wid = q->ready_timers.v[0].wl;
		w = W(q, wid);
		/* a due timer leaves the heap only once its eviction has room
		 * (a failure here leaves it for the next tick) */
		if (w->state == QUEUE_WL_ADMITTED && !w->ready &&
		    (queue_emit_reserve(q, due.n + 1) || queue_vpush(&due, wid))) {
			rc = GPUQ_ENOMEM;
			break;
		}
		queue_timer_pop(q, &q->ready_timers);
	}
	if (due.n > 1)
		qsort_r(due.v, due.n, sizeof(uint32_t), queue_adm_cmp, q);
	for (size_t i = 0; i < due.n; i++) {
		int erc = queue_wl_evict(q, due.v[i], QUEUE_NONE, QUEUE_EVICT_READY_TIMEOUT);

		GPUQ_ASSERT(erc == GPUQ_OK); /* its report has room */
		if (q->cfg.release_on_evict && queue_wl_release(q, due.v[i], now)) {
			q->release_lost = true; /* still EVICTING: see release_lost() */
			rc = GPUQ_ENOMEM;
		}
	}
	free(due.v);
	return rc;
}

/* Whether a deadline entry is the deadline its workload has now (every
 * change of a deadline pushes an entry of its own: an admission, a limit
 * changed, a restore; the others are stale). */
static bool exec_entry_valid(const queue_t *q, const timer_t_ *e)
{
	const wl_t *w = Wc(q, e->wl);

	return w->live && w->state == QUEUE_WL_ADMITTED && queue_exec_deadline(q, w) == e->at;
}

/* Evict (QUEUE_EVICT_MAX_EXEC) the admitted workloads at or past their
 * wall-clock deadline, by (admission, uid); drop the stale entries on top. */
static int exec_timeouts(queue_t *q, int64_t now)
{
	timers_t *t = &q->exec_timers;
	u32vec_t due = {0};
	int rc = GPUQ_OK;

	while (t->n) {
		bool valid = exec_entry_valid(q, &t->v[0]);

		if (valid && t->v[0].at > now)
			break;
		/* a due entry leaves the heap only once its eviction has room */
		if (valid && (queue_emit_reserve(q, due.n + 1) || queue_vpush(&due, t->v[0].wl))) {
			rc = GPUQ_ENOMEM;
			break;
		}
		queue_timer_pop(q, t);
	}
	if (due.n > 1)
		qsort_r(due.v, due.n, sizeof(uint32_t), queue_adm_cmp, q);
	for (size_t i = 0; i < due.n; i++) {
		if (i && due.v[i] == due.v[i - 1])
			continue; /* two entries of one workload */
		int erc = queue_wl_evict(q, due.v[i], QUEUE_NONE, QUEUE_EVICT_MAX_EXEC);

		GPUQ_ASSERT(erc == GPUQ_OK); /* its report has room */
		if (q->cfg.release_on_evict && queue_wl_release(q, due.v[i], now)) {
			q->release_lost = true; /* still EVICTING: see release_lost() */
			rc = GPUQ_ENOMEM;
		}
	}
	free(due.v);
	return rc;
}

int queue_tick(queue_t *q, int64_t now, queue_result_t *out)
{
	int rc;

	res_reset(q);
	rc = clock_advance(q, now);
	if (rc)
		goto out;
	rc = ready_timeouts(q, now);
	if (!rc)
		rc = exec_timeouts(q, now);
	if (!rc)
		rc = queue_topo_failures(q, now);
	if (!rc)
		rc = queue_idle_tick(q, now);
	if (rc)
		goto out;
	for (size_t i = 0; i < q->cq_names.n; i++) {
		if (q->cqs[i].stop != QUEUE_STOP_HOLD_AND_DRAIN)
			continue;
		rc = drain(q, (uint32_t)i, now);
		if (rc)
			goto out;
	}
	if (q->meta_dirty)
		queue_mark_meta(q);
out:
	res_finish(q, out);
	return rc;
}

/* The earliest valid entry of a timer heap, or INT64_MAX. The heap's top is
 * the answer unless it went stale; then every entry is looked at. */
static int64_t timers_min(const queue_t *q, const timers_t *t)
{
	int64_t m = INT64_MAX;

	for (size_t i = 0; i < t->n; i++) {
		const timer_t_ *e = &t->v[i];
		const wl_t *w = Wc(q, e->wl);

		if (w->live && w->epoch == e->epoch && e->at < m) {
			m = e->at;
			if (i == 0)
				break;
		}
	}
	return m;
}

int64_t queue_next_event(const queue_t *q, int64_t now)
{
	int64_t t = timers_min(q, &q->ready_timers), b = timers_min(q, &q->backoff_timers);

	if (b < t)
		t = b;
	b = INT64_MAX;
	for (size_t i = 0; i < q->exec_timers.n; i++) /* O(1) unless the top went stale */
		if (exec_entry_valid(q, &q->exec_timers.v[i]) && q->exec_timers.v[i].at < b) {
			b = q->exec_timers.v[i].at;
			if (!i)
				break;
		}
	if (b < t)
		t = b;
	b = queue_topo_failures_next(q, now);
	if (b < t)
		t = b;
	if (t <= now)
		t = now + 1; /* already due: the next call acts */
	if (q->cfg.tenant_sample_ms > 0 && q->last_sample != INT64_MIN && q->lq_names.n) {
		int64_t s = q->last_sample + q->cfg.tenant_sample_ms;

		if (s <= now)
			s = now + 1; /* overdue: the next call samples */
		if (s < t)
			t = s;
	}
	b = queue_budgets_next(q);
	if (b < INT64_MAX)
		b = b <= now ? now + 1 : b;
	if (b < t)
		t = b;
	b = queue_econ_next(q);
	if (b < INT64_MAX)
		b = b <= now ? now + 1 : b;
	return b < t ? b : t;
}

int queue_lq_usage_seed(queue_t *q, uint32_t lq, double usage)
{
	lq_t *l;

	if (lq >= q->lq_names.n)
		return GPUQ_ENOTFOUND;
	if (!(usage >= 0 && usage <= 1e9)) /* NaN fails both */
		return GPUQ_EINVAL;
	l = &q->lqs[lq];
	if (l->usage != 0 || l->used_ms != 0)
		return GPUQ_EEXIST;
	l->usage = usage;
	queue_mark_lq(q, lq);
	queue_cohort_touch(q, q->cqs[l->cq].cohort, false);
	return GPUQ_OK;
}

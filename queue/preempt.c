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

/* ---- Where candidates may come from (Kueue's hierarchical preemption) ---- */

/* Whether CQ o is above nominal in one of the (flavor, resource) pairs f. */
static bool cq_over_in(const cq_t *o, const queue_frs_t *f)
{
	for (size_t i = 0; i < f->n; i++) {
		int64_t os = queue_cq_slot_find(o, f->flv[i], f->res[i]);

		if (os >= 0 && o->slots[os].usage > o->slots[os].nominal)
			return true;
	}
	return false;
}

/* Whether cohort node h uses more than its subtree quota in one of f. */
static bool node_over_in(const cohort_t *h, const queue_frs_t *f)
{
	for (size_t i = 0; i < f->n; i++)
		for (size_t k = 0; k < h->n_slots; k++)
			if (h->slots[k].flavor == f->flv[i] && h->slots[k].res == f->res[i] &&
			    h->slots[k].use > h->slots[k].sub)
				return true;
	return false;
}

/* Whether cohort node h uses less than its subtree quota in (flavor, res). */
static bool node_under_in(const cohort_t *h, uint32_t flavor, uint32_t res)
{
	for (size_t k = 0; k < h->n_slots; k++)
		if (h->slots[k].flavor == flavor && h->slots[k].res == res)
			return h->slots[k].use < h->slots[k].sub;
	return false;
}

void queue_frs_of(const cq_t *c, const try_t *t, queue_frs_t *f)
{
	f->n = 0;
	for (size_t i = 0; i < t->n_need; i++) {
		if (t->need[i].mode == M_FIT)
			continue;
		f->flv[f->n] = c->slots[t->need[i].slot].flavor;
		f->res[f->n++] = c->slots[t->need[i].slot].res;
	}
}

void queue_path_of(const queue_t *q, const cq_t *c, queue_path_t *p)
{
	p->n = 0;
	for (uint32_t x = c->cohort; x != QUEUE_NONE && p->n <= QUEUE_TREE_DEPTH_MAX;
	     x = q->cohorts[x].parent)
		p->co[p->n++] = x;
}

static int path_index(const queue_path_t *p, uint32_t co)
{
	for (uint32_t k = 0; k < p->n; k++)
		if (p->co[k] == co)
			return (int)k;
	return -1;
}

int queue_victim_lca(const queue_t *q, const queue_path_t *p, const cq_t *o, const queue_frs_t *f,
		     bool fair)
{
	if (!cq_over_in(o, f))
		return -1;
	for (uint32_t x = o->cohort; x != QUEUE_NONE; x = q->cohorts[x].parent) {
		int k = path_index(p, x);

		if (k >= 0)
			return k;
		if (!fair && !node_over_in(&q->cohorts[x], f))
			return -1;
	}
	return -1;
}

/* Kueue's hierarchical advantage: bit k says whether the preemptor's
 * whole request fits within the quota of the subtree below p->co[k] on its
 * own path (its CQ's nominal, or a cohort's subtree quota there), so it may
 * take back what a candidate whose lowest common ancestor is p->co[k]
 * uses whatever the priorities and borrowing rules. */
static uint32_t path_advantage(const queue_t *q, const cq_t *c, const try_t *t,
			       const queue_path_t *p)
{
	int64_t rem[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX];
	uint32_t cs[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX];
	uint32_t mask = 0;
	bool adv = true;

	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];
		int64_t keep = quota_node_local(s->nominal, s->llimit) - s->usage;

		adv = adv && s->usage + t->need[i].val <= s->nominal;
		rem[i] = t->need[i].val - (keep > 0 ? keep : 0);
		rem[i] = rem[i] > 0 ? rem[i] : 0;
		cs[i] = s->cslot;
	}
	for (uint32_t k = 0; k < p->n; k++) {
		const cohort_t *h = &q->cohorts[p->co[k]];
		bool fits = true;

		mask |= (uint32_t)adv << k;
		for (size_t i = 0; i < t->n_need; i++) {
			const cslot_t *x = &h->slots[cs[i]];
			int64_t keep = quota_node_local(x->sub, x->llimit) - x->use;

			fits = fits && x->sub >= x->use + rem[i];
			rem[i] -= keep > 0 ? keep : 0;
			rem[i] = rem[i] > 0 ? rem[i] : 0;
			cs[i] = x->pslot;
		}
		adv = adv || fits;
	}
	return mask;
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

/* Candidate kinds (Kueue's preemptionVariant), kept with each candidate as
 * kind | lca << 4 (lca: index in the preemptor's path). */
enum { V_OWN = 0, V_HIER = 1, V_WITHOUT = 2, V_WHILE = 3 };

static int variant(const cq_t *c, const wl_t *w, const wl_t *v, const queue_path_t *p, int k)
{
	if (p->adv >> k & 1)
		return V_HIER;
	if (c->borrow == QUEUE_BORROW_NEVER || v->priority >= w->priority ||
	    (c->has_thr && v->priority > c->thr))
		return V_WITHOUT;
	return V_WHILE;
}

static int group_of(uint32_t meta)
{
	int v = (int)(meta & 15);

	return v == V_HIER ? 0 : v == V_OWN ? 2 : 1;
}

/* Victim order: hierarchical reclaim, then other CQs' by priority, then its
 * own CQ's; in each lower priority, most recently admitted, uid. */
static int cand_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const uint32_t *ids = pa, *idb = pb;
	const wl_t *a = Wc(q, ids[0]), *b = Wc(q, idb[0]);
	int ga = group_of(ids[1]), gb = group_of(idb[1]);

	if (ga != gb)
		return ga < gb ? -1 : 1;
	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->admitted_ms != b->admitted_ms)
		return a->admitted_ms > b->admitted_ms ? -1 : 1;
	return strcmp(wl_uid(a), wl_uid(b));
}

/* Collect candidates into q->cands as pairs (wl, kind | lca << 4), sorted:
 * its own CQ's by withinClusterQueue, and those of every other CQ of its
 * tree that borrows where it needs preemption, by reclaimWithinCohort;
 * classically only through cohorts that are above their own quota down
 * from the lowest common ancestor (fair sharing takes any borrowing CQ). */
static int find_candidates(queue_t *q, uint32_t wid, const try_t *t, const queue_path_t *p)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	const cohort_t *h = cohort_of(q, c);
	queue_frs_t f;

	q->cands.n = 0;
	queue_frs_of(c, t, &f);
	if (c->within != QUEUE_WITHIN_NEVER) {
		for (size_t i = 0; i < c->adm.n; i++) {
			const wl_t *v = W(q, c->adm.v[i]);

			if (queue_own_candidate(q, c, w, v) && uses_needed(q, v, c, t))
				if (queue_vpush(&q->cands, c->adm.v[i]) ||
				    queue_vpush(&q->cands, V_OWN))
					return GPUQ_ENOMEM;
		}
	}
	if (cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER) {
		for (size_t k = 0; k < h->cqs.n; k++) {
			const cq_t *o = &q->cqs[h->cqs.v[k]];
			int lca = o == c ? -1 : queue_victim_lca(q, p, o, &f, q->cfg.fair_sharing);

			for (size_t i = 0; lca >= 0 && i < o->adm.n; i++) {
				const wl_t *v = W(q, o->adm.v[i]);

				if (queue_cohort_candidate(q, c, w, v) && uses_needed(q, v, c, t))
					if (queue_vpush(&q->cands, o->adm.v[i]) ||
					    queue_vpush(&q->cands,
							(uint32_t)variant(c, w, v, p, lca) |
							    (uint32_t)lca << 4))
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

/* Whether workload v's side stays borrowing without it, in every pair of f
 * that v uses: its CQ o at or above nominal, and every cohort from o's up
 * to (not including) the lowest common ancestor lca with the preemptor at
 * or above its subtree quota. A preemptor that borrows takes only what that
 * side borrows: taking more would let v, back within its CQ's nominal quota
 * or within the subtree quota of a cohort below lca, reclaim it from the
 * borrowing preemptor at once (hierarchical advantage), and the two would
 * take turns (test_queue_props seeds 27877, flat, and 10101, v in a CQ of
 * nominal 0 under a cohort that owns quota). Kueue takes such a victim. */
static bool stays_borrowing(queue_t *q, const cq_t *o, uint32_t v, const queue_frs_t *f,
			    uint32_t lca)
{
	const wl_t *w = W(q, v);
	bool ok = true;

	for (uint32_t i = 0; i < w->n_asg; i++) {
		const slot_t *s = &o->slots[w->asg[i].slot];

		for (size_t k = 0; k < f->n; k++)
			if (s->flavor == f->flv[k] && s->res == f->res[k] &&
			    s->usage - w->asg[i].a.amount < s->nominal)
				return false;
	}
	queue_wl_charge(q, v, -1);
	for (uint32_t x = o->cohort; ok && x != lca && x != QUEUE_NONE; x = q->cohorts[x].parent)
		for (size_t k = 0; ok && k < f->n; k++)
			if (queue_wl_uses(w, o, f->flv[k], f->res[k]) &&
			    node_under_in(&q->cohorts[x], f->flv[k], f->res[k]))
				ok = false;
	queue_wl_charge(q, v, +1);
	return ok;
}

/* Whether a candidate may still go in a run (Kueue's candidateIsValid):
 * its own CQ's always; another CQ's only while that CQ, and every cohort
 * from it up to the lowest common ancestor, still borrows where the
 * preemptor needs preemption; one that may only go when the preemptor
 * borrows nothing is not taken in a run that lets it borrow. */
static bool cand_valid(queue_t *q, const queue_path_t *p, const queue_frs_t *f, uint32_t v,
		       uint32_t meta, bool borrow)
{
	const cq_t *o = &q->cqs[Wc(q, v)->cq];
	uint32_t lca;

	if ((meta & 15) == V_OWN || (meta >> 4) >= p->n)
		return (meta & 15) == V_OWN;
	lca = p->co[meta >> 4];
	if ((borrow && (meta & 15) == V_WITHOUT) || !cq_over_in(o, f) ||
	    ((meta & 15) == V_WHILE && !stays_borrowing(q, o, v, f, lca)))
		return false;
	for (uint32_t x = o->cohort; x != lca && x != QUEUE_NONE; x = q->cohorts[x].parent)
		if (!node_over_in(&q->cohorts[x], f))
			return false;
	return true;
}

static int reason_of(uint32_t meta)
{
	switch (meta & 15) {
	case V_OWN:
		return QUEUE_EVICT_IN_CQ;
	case V_WHILE:
		return QUEUE_EVICT_RECLAIM_WHILE_BORROWING;
	default:
		return QUEUE_EVICT_RECLAIM;
	}
}

/* One run of Kueue's classical preemption over the sorted candidates:
 * take valid candidates in order until the preemptor fits (above nominal
 * only when borrow), then give back what it does not need. Fills
 * q->targets; true when it fits. Usage is left unchanged. */
static bool minimal_set(queue_t *q, uint32_t wid, const try_t *t, const queue_path_t *p,
			bool borrow)
{
	const wl_t *w = W(q, wid);
	queue_frs_t f;
	bool fits = false;

	queue_frs_of(&q->cqs[w->cq], t, &f);
	q->targets.n = 0;
	for (size_t i = 0; i < q->cands.n; i += 2) {
		uint32_t v = q->cands.v[i];

		if (!cand_valid(q, p, &f, v, q->cands.v[i + 1], borrow))
			continue;
		queue_wl_charge(q, v, -1);
		if (target_push(q, v, reason_of(q->cands.v[i + 1]))) {
			queue_wl_charge(q, v, +1);
			targets_restore(q);
			q->targets.n = 0;
			return out_of_memory(q);
		}
		if (queue_need_fits(q, w->cq, t, borrow)) {
			fits = true;
			break;
		}
	}
	if (!fits) {
		targets_restore(q);
		q->targets.n = 0;
		return false;
	}
	targets_fill_back(q, w->cq, t, borrow);
	q->targets_borrow = borrow;
	return true;
}

/* ---- Fair sharing (Kueue's fairPreemptions) ---- */

/* Whether CQ cq has an open candidate (state[i] == 0). */
static bool has_open(const queue_t *q, uint32_t cq, const uint8_t *state, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!state[i] && Wc(q, q->cands.v[2 * i])->cq == cq)
			return true;
	return false;
}

static bool cq_borrows(const cq_t *c)
{
	for (uint32_t s = 0; s < c->n_slots; s++)
		if (c->slots[s].usage > c->slots[s].nominal)
			return true;
	return false;
}

static bool node_borrows(const cohort_t *h)
{
	for (size_t s = 0; s < h->n_slots; s++)
		if (h->slots[s].use > h->slots[s].sub)
			return true;
	return false;
}

/* Kueue's TargetClusterQueueOrdering from cohort co down: the member CQ
 * with the highest share (the preemptor's own, or one that borrows; with
 * an open candidate) or the child cohort with the highest share (one that
 * borrows, or on the preemptor's path) that holds such a CQ, the cohort on
 * a tie. QUEUE_NONE when there is none. */
static uint32_t fair_pick(queue_t *q, uint32_t co, uint32_t own, const queue_path_t *p,
			  const uint8_t *state, size_t n)
{
	const cohort_t *h = &q->cohorts[co];
	uint32_t best_cq = QUEUE_NONE, best_kid = QUEUE_NONE, kid_cq = QUEUE_NONE;
	fairshare_share_t bc = {0.0, 0}, bk = {0.0, 0};

	for (size_t i = 0; i < h->mem.n; i++) {
		uint32_t m = h->mem.v[i];
		fairshare_share_t sh;

		if ((m != own && !cq_borrows(&q->cqs[m])) || !has_open(q, m, state, n))
			continue;
		sh = queue_cq_share(q, m, NULL, 0, QUEUE_NONE);
		if (best_cq == QUEUE_NONE || fairshare_share_cmp(&sh, &bc) > 0) {
			best_cq = m;
			bc = sh;
		}
	}
	for (size_t i = 0; i < h->kids.n; i++) {
		uint32_t k = h->kids.v[i], pick;
		fairshare_share_t sh;

		if (!node_borrows(&q->cohorts[k]) && path_index(p, k) < 0)
			continue;
		pick = fair_pick(q, k, own, p, state, n);
		if (pick == QUEUE_NONE)
			continue;
		sh = queue_cohort_share(q, k);
		if (best_kid == QUEUE_NONE || fairshare_share_cmp(&sh, &bk) >= 0) {
			best_kid = k;
			bk = sh;
			kid_cq = pick;
		}
	}
	if (best_kid != QUEUE_NONE && (best_cq == QUEUE_NONE || fairshare_share_cmp(&bk, &bc) >= 0))
		return kid_cq;
	return best_cq;
}

/* The share of the node just below the lowest common ancestor of CQ cq and
 * the preemptor, on cq's side (Kueue's almost-LCA): cq itself when its
 * cohort is on the preemptor's path. */
static fairshare_share_t almost_lca_share(queue_t *q, uint32_t cq, const queue_path_t *p)
{
	uint32_t below = QUEUE_NONE;

	for (uint32_t x = q->cqs[cq].cohort; x != QUEUE_NONE; x = q->cohorts[x].parent) {
		if (path_index(p, x) >= 0)
			break;
		below = x;
	}
	return below == QUEUE_NONE ? queue_cq_share(q, cq, NULL, 0, QUEUE_NONE)
				   : queue_cohort_share(q, below);
}

/* The index in p of the lowest common ancestor of CQ cq and the preemptor. */
static int lca_index(const queue_t *q, uint32_t cq, const queue_path_t *p)
{
	int k = -1;

	for (uint32_t x = q->cqs[cq].cohort; x != QUEUE_NONE && k < 0; x = q->cohorts[x].parent)
		k = path_index(p, x);
	return k < 0 ? 0 : k;
}

/* Take the first open candidate of CQ cq the rule allows: from another CQ
 * only if the preemptor's side (pre[k] for the lowest common ancestor
 * p->co[k]) has no higher share than the victim's side without it (Kueue's
 * LessThanOrEqualToFinalShare, just below that ancestor); refused ones are
 * closed (state 2). 1 when one was taken (charged out, pushed to
 * q->targets), 0 when none, or GPUQ_ENOMEM. */
static int fair_take(queue_t *q, uint32_t wid, uint32_t cq, const queue_path_t *p,
		     const fairshare_share_t *pre, bool within_nominal, uint8_t *state, size_t n)
{
	const wl_t *w = W(q, wid);

	for (size_t i = 0; i < n; i++) {
		uint32_t v = q->cands.v[2 * i];
		const wl_t *vw = W(q, v);
		int reason = QUEUE_EVICT_IN_CQ;

		if (state[i] || vw->cq != cq)
			continue;
		queue_wl_charge(q, v, -1);
		if (vw->cq != w->cq) {
			fairshare_share_t after = almost_lca_share(q, cq, p);

			if (fairshare_share_cmp(&pre[lca_index(q, cq, p)], &after) > 0) {
				queue_wl_charge(q, v, +1);
				state[i] = 2;
				continue;
			}
			reason = within_nominal ? QUEUE_EVICT_RECLAIM : QUEUE_EVICT_FAIR_SHARING;
		}
		state[i] = 1;
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

/* Charge (+1) or release (-1) the preemptor's need to its CQ, as Kueue's
 * fair preemption simulates its usage while it compares shares. */
static void need_charge(queue_t *q, uint32_t cq, const try_t *t, int sign)
{
	for (size_t i = 0; i < t->n_need; i++)
		queue_usage_add(q, cq, t->need[i].slot, sign * t->need[i].val);
}

/* Fair-sharing preemption (Kueue's fairPreemptions with its default
 * strategy): take from the CQ the tree's share ordering names first; from
 * another CQ only if the preemptor's side, its need included, has no higher
 * share than the victim's side without it, compared just below their
 * lowest common ancestor. Two differences from Kueue, each closing a loop
 * the property tests found: the preemptor's shares are taken once, before
 * any victim goes (Kueue recomputes them after its own CQ's victims, which
 * then let it take another CQ's by share: test_queue_props seed 1408), and
 * its own CQ is ordered without the need; and a preemptor within its
 * nominal quota in what it needs preempted reclaims (its reason, as
 * Kueue's) but still passes the share rule, unlike Kueue's
 * FairSharingPreemptWithinNominal (seed 188). borrowWithinCohort plays no
 * part under fair sharing, as in Kueue. */
static bool fair_set(queue_t *q, uint32_t wid, const try_t *t, const queue_path_t *p)
{
	const wl_t *w = W(q, wid);
	size_t n = q->cands.n / 2;
	bool within = within_nominal_with_need(&q->cqs[w->cq], t);
	uint8_t *state = calloc(n ? n : 1, 1); /* 0 open, 1 taken, 2 refused */
	fairshare_share_t pre[QUEUE_TREE_DEPTH_MAX + 1];
	bool fits = false;
	int rc = 0;

	q->targets.n = 0;
	if (!state)
		return out_of_memory(q);
	need_charge(q, w->cq, t, +1);
	for (uint32_t k = 0; k < p->n; k++)
		pre[k] = k ? queue_cohort_share(q, p->co[k - 1])
			   : queue_cq_share(q, w->cq, NULL, 0, QUEUE_NONE);
	need_charge(q, w->cq, t, -1);
	while (!fits) {
		uint32_t top = fair_pick(q, p->co[p->n - 1], w->cq, p, state, n);

		if (top == QUEUE_NONE)
			break;
		rc = fair_take(q, wid, top, p, pre, within, state, n);
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
 * exists that makes wid fit. The order of runs (borrowing allowed or not)
 * is Kueue's classicalPreemptions'. */
static bool targets(queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	queue_path_t p = {0};
	size_t n_own = 0, n_hier = 0;
	bool forbid = c->borrow == QUEUE_BORROW_NEVER;

	queue_path_of(q, c, &p);
	p.adv = path_advantage(q, c, t, &p);
	if (find_candidates(q, wid, t, &p))
		return out_of_memory(q);
	if (!q->cands.n)
		return false;
	for (size_t i = 0; i < q->cands.n; i += 2) {
		n_own += (q->cands.v[i + 1] & 15) == V_OWN;
		n_hier += (q->cands.v[i + 1] & 15) == V_HIER;
	}
	if (queue_lq_lowered(q, w->lq)) /* over a budget: only what keeps it within nominal */
		return minimal_set(q, wid, t, &p, false);
	if (n_own < q->cands.n / 2 && q->cfg.fair_sharing)
		return fair_set(q, wid, t, &p);
	if (n_own == q->cands.n / 2 || (forbid && !under_nominal(q, c, t)))
		return minimal_set(q, wid, t, &p, true);
	if (forbid && !n_hier)
		return minimal_set(q, wid, t, &p, false) || minimal_set(q, wid, t, &p, true);
	return minimal_set(q, wid, t, &p, true) || minimal_set(q, wid, t, &p, false);
}

bool queue_cohort_has_candidate(queue_t *q, const cq_t *c, const wl_t *w, const slot_t *s)
{
	const cohort_t *h = cohort_of(q, c);
	queue_frs_t f; /* one pair: not zero-filled (2 KiB) on this hot path */
	queue_path_t p;

	if (!cq_has_cohort(q, c) || c->reclaim == QUEUE_RECLAIM_NEVER)
		return false;
	f.n = 1;
	f.flv[0] = s->flavor;
	f.res[0] = s->res;
	queue_path_of(q, c, &p);
	for (size_t k = 0; k < h->cqs.n; k++) {
		const cq_t *o = &q->cqs[h->cqs.v[k]];
		int64_t os = queue_cq_slot_find(o, s->flavor, s->res);

		/* the common case first, inline: o not above nominal there */
		if (o == c || os < 0 || o->slots[os].usage <= o->slots[os].nominal ||
		    (p.n > 1 && queue_victim_lca(q, &p, o, &f, q->cfg.fair_sharing) < 0))
			continue;
		for (size_t i = 0; i < o->adm.n; i++) {
			const wl_t *v = W(q, o->adm.v[i]);

			if (queue_cohort_candidate(q, c, w, v) &&
			    queue_wl_uses(v, o, s->flavor, s->res))
				return true;
		}
	}
	return false;
}

bool queue_gone_overlap(const queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = Wc(q, wid);
	const cq_t *c = &q->cqs[w->cq];

	for (size_t i = 0; i < q->gone.n; i++) {
		const wl_t *v = Wc(q, q->gone.v[i]);
		bool rule = v->cq == w->cq
				? c->within != QUEUE_WITHIN_NEVER && queue_own_rule(q, c, w, v)
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
	if (queue_need_fits(q, W(q, wid)->cq, t, !queue_lq_lowered(q, W(q, wid)->lq))) {
		q->targets.n = 0;
		q->targets_borrow = !queue_lq_lowered(q, W(q, wid)->lq);
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
	t->level = 0;
	t->n_asg = t->n_need = 0;
	t->why = WHY_NONE;
	t->why_res = t->why_flavor = QUEUE_NONE;
	t->why_need = t->why_free = 0;
	t->why_level = 0;
	t->placed = false;
	t->blocked_fid = QUEUE_NONE;
	t->blocked_quota = false;
	t->n_pl = 0;
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

/* A head whose REQUIRED ask fits no domain (t->blocked), its quota fitting
 * or needing preemption too (t->blocked_quota): the candidates are the workloads holding a
 * placement of its own ClusterQueue (withinClusterQueue) and, when it takes no more than its
 * nominal quota, of every other ClusterQueue of its cohort tree that uses more than its nominal on
 * that flavor (reclaimWithinCohort); minimum runtimes served. topology.c picks the domain they free
 * with the fewest victims (with the quota, when it needs freeing), into q->targets. */
bool queue_topo_preemption(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];
	const cohort_t *h = cohort_of(q, c);

	q->topo_cands.n = 0;
	if (t->blocked_fid == QUEUE_NONE)
		return false;
	for (size_t i = 0; c->within != QUEUE_WITHIN_NEVER && i < c->adm.n; i++) {
		const wl_t *v = W(q, c->adm.v[i]);

		if (v != w && v->place && queue_own_candidate(q, c, w, v) &&
		    queue_vpush(&q->topo_cands, c->adm.v[i]))
			return false;
	}
	if (!t->borrows && cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER)
		for (size_t k = 0; k < h->cqs.n; k++) {
			const cq_t *o = &q->cqs[h->cqs.v[k]];

			for (size_t i = 0; o != c && i < o->adm.n; i++) {
				const wl_t *v = W(q, o->adm.v[i]);

				if (v->place && queue_cohort_candidate(q, c, w, v) &&
				    queue_vpush(&q->topo_cands, o->adm.v[i]))
					return false;
			}
		}
	return q->topo_cands.n && queue_topo_victims(q, wid, t);
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

/*
 * queue/assign.c: quota arithmetic and flavor assignment.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"

/* ================================================================== */
/* Quota arithmetic                                                    */
/* ================================================================== */

/* Why available is what it is (for explanations): the CQ alone at its
 * nominal quota, its own borrowingLimit, or the cohort tree lending no more. */
static uint8_t slot_limit_kind(const queue_t *q, const cq_t *c, const slot_t *s)
{
	quota_node_t n = queue_slot_node(s);
	int64_t from_parent = queue_node_available(q, c->cohort, s->cslot);

	if (!cq_has_cohort(q, c))
		return WHY_QUOTA_NOMINAL;
	n.borrowing_limit = -1;
	if (s->blimit >= 0 && queue_slot_available(q, c, s) < quota_node_available(from_parent, &n))
		return WHY_QUOTA_BLIMIT;
	return WHY_QUOTA_COHORT;
}

/* Kueue's borrowing level (FindHeightOfLowestSubtreeThatFits) of CQ c
 * taking val more in slot s at CQ usage `usage`: 0 when that stays within
 * its nominal quota, or when it has no cohort; else the height of the
 * lowest cohort on its path whose subtree quota holds what the nodes below
 * it keep no room for (the root's when none does). So a workload that
 * borrows from its own cohort ranks before one that borrows from the root.
 * *reclaim (may be NULL): that cohort is not the root (Kueue's
 * mayReclaimInHierarchy; with no borrowing, whether c has a cohort): then
 * quota of that subtree may be reclaimed from CQs outside it that borrow
 * it, though c's own nominal quota does not hold val. */
uint8_t queue_slot_level(const queue_t *q, const cq_t *c, const slot_t *s, int64_t usage,
			 int64_t val, bool *reclaim)
{
	uint32_t co = c->cohort, cs = s->cslot;
	int64_t rem, keep = quota_node_local(s->nominal, s->llimit) - usage;
	bool dummy = false;

	reclaim = reclaim ? reclaim : &dummy;
	*reclaim = cq_has_cohort(q, c);
	if (!*reclaim || usage + val <= s->nominal)
		return 0;
	rem = val - (keep > 0 ? keep : 0);
	for (;;) {
		const cohort_t *h = &q->cohorts[co];
		const cslot_t *x = &h->slots[cs];

		if (x->use + rem <= x->sub || h->parent == QUEUE_NONE) {
			*reclaim = h->parent != QUEUE_NONE;
			return h->height;
		}
		keep = quota_node_local(x->sub, x->llimit) - x->use;
		rem -= keep > 0 ? keep : 0;
		cs = x->pslot;
		co = h->parent;
	}
}

/* A tenant's share now: max over resources of admitted / CQ nominal. */
double queue_lq_share_now(const queue_t *q, uint32_t lq)
{
	const lq_t *l = &q->lqs[lq];
	const cq_t *c = &q->cqs[l->cq];
	int64_t nom[QUEUE_RESOURCES_MAX] = {0};
	double best = 0.0;

	if (!l->cur)
		return 0.0;
	for (uint32_t s = 0; s < c->n_slots; s++)
		nom[c->slots[s].res] += c->slots[s].nominal;
	for (size_t r = 0; r < q->res_names.n; r++) {
		double v;

		if (!l->cur[r])
			continue;
		v = (double)l->cur[r] / (double)(nom[r] > 0 ? nom[r] : 1);
		if (v > best)
			best = v;
	}
	return best;
}

/* The share a workload's assignment adds to its tenant. */
double queue_wl_share(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];
	int64_t nom[QUEUE_RESOURCES_MAX] = {0}, amt[QUEUE_RESOURCES_MAX] = {0};
	double best = 0.0;

	for (uint32_t s = 0; s < c->n_slots; s++)
		nom[c->slots[s].res] += c->slots[s].nominal;
	for (uint32_t i = 0; i < w->n_asg; i++)
		amt[w->asg[i].a.resource] += w->asg[i].a.amount;
	for (size_t r = 0; r < q->res_names.n; r++) {
		double v = (double)amt[r] / (double)(nom[r] > 0 ? nom[r] : 1);

		if (v > best)
			best = v;
	}
	return best;
}

/* What each resource of the tree rooted at `root` lends in all (Kueue's
 * calculateLendable: the root's subtree quota, summed over flavors). */
static void tree_lendable(const queue_t *q, uint32_t root, fairshare_res_t *r)
{
	const cohort_t *h = &q->cohorts[root];

	for (size_t s = 0; s < h->n_slots; s++)
		r[h->slots[s].res].lendable += h->slots[s].sub;
}

/* Weighted DRS of CQ c, with `extra` needs added (may be NULL) and workload
 * `without` removed (QUEUE_NONE for none), as Kueue's dominantResourceShare:
 * per resource, what it uses beyond nominal summed over its flavors, over
 * what the tree lends of it; compare with fairshare_share_cmp. */
fairshare_share_t queue_cq_share(const queue_t *q, uint32_t cq, const need_t *extra, size_t n_extra,
				 uint32_t without)
{
	const cq_t *c = &q->cqs[cq];
	const wl_t *w = without != QUEUE_NONE ? Wc(q, without) : NULL;
	fairshare_res_t r[QUEUE_RESOURCES_MAX];

	memset(r, 0, sizeof(r));
	for (uint32_t s = 0; s < c->n_slots; s++) {
		int64_t u = c->slots[s].usage;

		for (size_t i = 0; i < n_extra; i++)
			u += extra[i].slot == s ? extra[i].val : 0;
		for (uint32_t i = 0; w && i < w->n_asg; i++)
			u -= w->asg[i].slot == s ? w->asg[i].a.amount : 0;
		if (u > c->slots[s].nominal)
			r[c->slots[s].res].usage += u - c->slots[s].nominal;
	}
	tree_lendable(q, c->unit, r);
	return fairshare_drs(r, q->res_names.n, c->weight, NULL);
}

/* Weighted DRS of cohort co (a node of its tree) as Kueue's: what it uses
 * beyond its subtree quota over what the tree lends; 0 at a root. */
fairshare_share_t queue_cohort_share(const queue_t *q, uint32_t co)
{
	const cohort_t *h = &q->cohorts[co];
	fairshare_res_t r[QUEUE_RESOURCES_MAX];
	uint32_t root = co;

	if (h->parent == QUEUE_NONE)
		return (fairshare_share_t){0.0, h->weight};
	memset(r, 0, sizeof(r));
	for (size_t s = 0; s < h->n_slots; s++)
		if (h->slots[s].use > h->slots[s].sub)
			r[h->slots[s].res].usage += h->slots[s].use - h->slots[s].sub;
	while (q->cohorts[root].parent != QUEUE_NONE)
		root = q->cohorts[root].parent;
	tree_lendable(q, root, r);
	return fairshare_drs(r, q->res_names.n, h->weight, NULL);
}

/* ================================================================== */
/* Flavor assignment                                                   */
/* ================================================================== */

static int64_t need_val(const try_t *t, uint32_t slot)
{
	for (size_t i = 0; i < t->n_need; i++)
		if (t->need[i].slot == slot)
			return t->need[i].val;
	return 0;
}

void queue_need_add(try_t *t, uint32_t slot, int64_t val)
{
	for (size_t i = 0; i < t->n_need; i++) {
		if (t->need[i].slot == slot) {
			t->need[i].val += val;
			return;
		}
	}
	t->need[t->n_need].slot = slot;
	t->need[t->n_need].val = val;
	t->need[t->n_need].mode = M_FIT;
	t->n_need++;
}

typedef struct {
	uint8_t why;	 /* WHY_* */
	uint32_t res;	 /* resource */
	uint32_t flavor; /* flavor */
	int64_t need;	 /* needed */
	int64_t free;	 /* free */
} why_t;

/* Mode of taking val from slot of CQ c; *lv: its borrowing level at the
 * CQ's usage now. */
static int slot_mode(const queue_t *q, const cq_t *c, uint32_t slot, int64_t own, int64_t val,
		     bool lowered, why_t *y, uint8_t *lv)
{
	const slot_t *s = &c->slots[slot];
	int64_t maxc = queue_slot_max_capacity(q, c, s), avail;
	bool hier;

	y->res = s->res;
	y->flavor = s->flavor;
	y->need = val;
	if (val > maxc) {
		/* never, unless only the earlier pod sets' share of this flavor
		 * is in the way: a different flavor choice for them may fit */
		y->why = WHY_ABOVE_MAX;
		y->free = maxc;
		return own > maxc ? M_NEVER : M_WAIT;
	}
	avail = queue_slot_available(q, c, s);
	if (lowered && avail > s->nominal - s->usage) /* over a budget: within nominal only */
		avail = s->nominal > s->usage ? s->nominal - s->usage : 0;
	y->free = avail;
	*lv = queue_slot_level(q, c, s, s->usage, val, &hier);
	if (val <= avail) {
		y->why = WHY_NONE;
		return M_FIT;
	}
	y->why = lowered && val <= queue_slot_available(q, c, s) ? WHY_NO_BORROW
								 : slot_limit_kind(q, c, s);
	if (lowered) /* it may preempt only to stay within its nominal quota */
		return queue_cq_can_preempt(q, c) && val <= s->nominal ? M_PREEMPT : M_WAIT;
	/* Kueue's fitsResourceQuota: preemption is tried within nominal, or
	 * within the subtree quota of a cohort below the root (hierarchical
	 * reclaim), or while borrowing when the policy allows it */
	if (queue_cq_can_preempt(q, c) &&
	    (val <= s->nominal || hier || c->borrow != QUEUE_BORROW_NEVER || q->cfg.fair_sharing))
		return M_PREEMPT;
	return M_WAIT;
}

bool queue_wl_uses(const wl_t *v, const cq_t *vc, uint32_t flavor, uint32_t res)
{
	for (uint32_t i = 0; i < v->n_asg; i++) {
		const slot_t *s = &vc->slots[v->asg[i].slot];

		if (s->flavor == flavor && s->res == res)
			return true;
	}
	return false;
}

/* Whether c's withinClusterQueue policy lets w preempt v of its own CQ
 * (priorities), and its budgets: a workload of a LocalQueue over a budget
 * (Lower) preempts none of a LocalQueue within budget, whatever the
 * priorities (lowered, it comes after them; and under StrictFIFO, where
 * queue_wl_cmp has no planned-first step, the victim requeued came first
 * again, took the quota back and was preempted again: a ping-pong at one
 * instant, sweep seeds 1209, 14907, 18165). */
bool queue_own_rule(const queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v)
{
	if (queue_lq_lowered(q, w->lq) && !queue_lq_lowered(q, v->lq))
		return false;
	if (v->priority < w->priority)
		return true;
	return c->within == QUEUE_WITHIN_LOWER_OR_NEWER && v->priority == w->priority &&
	       v->created > w->created;
}

/* Whether c's reclaimWithinCohort policy lets w reclaim v (priorities only). */
bool queue_cohort_rule(const cq_t *c, const wl_t *w, const wl_t *v)
{
	return c->reclaim == QUEUE_RECLAIM_ANY || v->priority < w->priority;
}

/* A candidate victim by the CQ's policies (cycle admissions excluded). */
/* A candidate by the rules that has not served its minimum runtime is
 * passed over (and noted: q->prot_seen). */
bool queue_own_candidate(queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v)
{
	return v->state == QUEUE_WL_ADMITTED && v->admit_cycle != q->cycles &&
	       queue_own_rule(q, c, w, v) && !queue_wl_protected(q, v);
}

bool queue_cohort_candidate(queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v)
{
	return v->state == QUEUE_WL_ADMITTED && v->admit_cycle != q->cycles &&
	       queue_cohort_rule(c, w, v) && !queue_wl_protected(q, v);
}

/* Whether some workload of c itself is a candidate for w in slot s. */
static bool own_has_candidate(queue_t *q, const cq_t *c, const wl_t *w, const slot_t *s)
{
	if (c->within == QUEUE_WITHIN_NEVER)
		return false;
	for (size_t i = 0; i < c->adm.n; i++) {
		const wl_t *v = W(q, c->adm.v[i]);

		if (queue_own_candidate(q, c, w, v) && queue_wl_uses(v, c, s->flavor, s->res))
			return true;
	}
	return false;
}

/* Rank a flavor whose slot needs preemption for val, as Kueue's oracle
 * (SimulatePreemption): M_RECLAIM when none of the victims it would take
 * is in the preemptor's own CQ, M_PREEMPT when some is, M_WAIT when it has
 * no candidates (a flavor that needs preemption but has no victims is
 * passed over). Only when both the cohort and its own CQ have candidates is
 * the victim set searched (queue_preemption_targets on that slot alone):
 * otherwise which kind the victims are is known without it. */
static int preempt_rank(queue_t *q, uint32_t wid, uint32_t slot, int64_t val)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	const slot_t *s = &c->slots[slot];
	bool cohort = queue_cohort_has_candidate(q, c, w, s), own = own_has_candidate(q, c, w, s);
	try_t *t = &q->scratch_rank;

	if (!cohort || !own)
		return cohort ? M_RECLAIM : own ? M_PREEMPT : M_WAIT;
	t->mode = M_PREEMPT;
	t->n_asg = 0;
	t->n_need = 1;
	t->need[0] = (need_t){slot, val, M_PREEMPT};
	if (!queue_preemption_targets(q, wid, t))
		return M_WAIT;
	for (size_t i = 0; i < q->targets.n; i += 2)
		if (W(q, q->targets.v[i])->cq == w->cq)
			return M_PREEMPT;
	return M_RECLAIM;
}

/* Assign flavors to pod set p's resources of group g; returns the mode. */
/* One pod set against one resource group: what assign_group works over. */
typedef struct {
	cq_t *c;			   /* the workload's CQ */
	const group_t *gr;		   /* the group */
	const psref_t *ps;		   /* the pod set */
	const tmpl_t *tm;		   /* its template */
	uint32_t ri[QUEUE_PODSET_RES_MAX]; /* its requests (template indexes) in the group */
	uint32_t n_ri;			   /* how many */
} grp_t;

static uint32_t grp_slot(const grp_t *x, uint32_t f, uint32_t k)
{
	return x->gr->base + f * x->gr->n_cov + (uint32_t)x->c->res_cov[x->tm->res[x->ri[k]]];
}

/* The worst mode over the group's requests on flavor f (fy: why; *fl:
 * the flavor's borrowing level, the highest of its resources', after its
 * victims are gone when preempting in its own CQ). */
static int flavor_mode(queue_t *q, uint32_t wid, const grp_t *x, uint32_t f, const try_t *t,
		       why_t *fy, uint8_t *fl)
{
	int fm = M_FIT;

	*fy = (why_t){WHY_NONE, QUEUE_NONE, QUEUE_NONE, 0, 0};
	*fl = 0;
	for (uint32_t k = 0; k < x->n_ri; k++) {
		uint32_t slot = grp_slot(x, f, k);
		int64_t own = (int64_t)x->ps->count * x->tm->amt[x->ri[k]];
		int64_t val = own + need_val(t, slot);
		why_t y;
		uint8_t lv = 0;
		int m =
		    slot_mode(q, x->c, slot, own, val, queue_lq_lowered(q, W(q, wid)->lq), &y, &lv);

		if (m == M_PREEMPT)
			m = preempt_rank(q, wid, slot, val);
		/* preempting its own workloads frees its own usage: then only
		 * what its nominal quota does not hold borrows (Kueue takes the
		 * level once its victims are gone) */
		if (m == M_PREEMPT)
			lv = queue_slot_level(q, x->c, &x->c->slots[slot], 0, val, NULL);
		if (lv > *fl)
			*fl = lv;
		if (m == M_WAIT && y.why == WHY_NONE)
			y.why = WHY_NO_CANDIDATES;
		if (m > fm || (m != M_FIT && fy->why == WHY_NONE)) {
			if (m > fm)
				fm = m;
			*fy = y;
		}
	}
	return fm;
}

/* Assign pod set p's requests in the group to flavor f. */
static void grp_assign(const grp_t *x, size_t p, uint32_t f, try_t *t)
{
	for (uint32_t k = 0; k < x->n_ri; k++) {
		uint32_t r = x->ri[k];
		asg_t *a = &t->asg[t->n_asg++];

		a->a.podset = (uint16_t)p;
		a->a.resource = x->tm->res[r];
		a->a.flavor = x->gr->flv[f];
		a->a.amount = (int64_t)x->ps->count * x->tm->amt[r];
		a->slot = grp_slot(x, f, k);
		queue_need_add(t, a->slot, a->a.amount);
	}
}

/* Whether flavor mode (m, level lv) is better than (bm, bl), as Kueue's
 * isPreferred: a flavor that never fits is no choice; by default the
 * better mode (fit, reclaim, preempt, no candidates) first, then the lower
 * borrowing level (quota nearer in the tree); with PreemptionOverBorrowing
 * the other way round. Equal: the earlier flavor stays. */
static bool flavor_better(const cq_t *c, int m, uint8_t lv, int bm, uint8_t bl)
{
	if (m == M_NEVER)
		return bm > M_NEVER;
	if (bm >= M_NEVER)
		return true;
	if (c->prefer_preempt && lv != bl)
		return lv < bl;
	if (m != bm)
		return m < bm;
	return lv < bl;
}

/* Kueue's flavor search stops at a flavor unless flavorFungibility says to
 * look further (shouldTryNextFlavor): never at one that does not fit or has
 * no victims; at one that fits, unless it borrows and whenCanBorrow is
 * TryNextFlavor; at one that needs preemption only when whenCanPreempt is
 * MayStopSearch (and it does not borrow with whenCanBorrow TryNextFlavor). */
static bool flavor_stops(const cq_t *c, int m, uint8_t lv)
{
	if (m >= M_WAIT)
		return false;
	if (m != M_FIT && c->preempt_next)
		return false;
	return !(lv && c->borrow_next);
}

static int assign_group(queue_t *q, uint32_t wid, size_t p, uint32_t g, try_t *t)
{
	const wl_t *w = W(q, wid);
	grp_t x;
	int best_m = M_NEVER + 1, best_f = -1;
	uint8_t best_l = UINT8_MAX;
	why_t best_y = {WHY_NO_FLAVOR, QUEUE_NONE, QUEUE_NONE, 0, 0};

	x.c = &q->cqs[w->cq];
	x.gr = &x.c->groups[g];
	x.ps = &wl_ps(w)[p];
	x.tm = &q->tmpls[x.ps->tmpl];
	x.n_ri = 0;
	for (uint32_t i = 0; i < x.tm->n_req; i++)
		if (x.tm->amt[i] > 0 && x.c->res_group[x.tm->res[i]] == (int8_t)g)
			x.ri[x.n_ri++] = i;
	if (!x.n_ri)
		return M_FIT;
	best_y.res = x.tm->res[x.ri[0]];
	for (uint32_t f = 0; f < x.gr->n_flv; f++) {
		why_t fy;
		uint8_t fl;
		int fm;

		if (!queue_tmpl_flavor_ok(q, x.ps->tmpl, x.gr->flv[f]))
			continue;
		fm = flavor_mode(q, wid, &x, f, t, &fy, &fl);
		if (flavor_better(x.c, fm, fl, best_m, best_l)) {
			best_m = fm;
			best_l = fl;
			best_f = (int)f;
			best_y = fy;
		}
		if (flavor_stops(x.c, fm, fl)) {
			best_m = fm;
			best_l = fl;
			best_f = (int)f;
			best_y = fy;
			break;
		}
	}
	if (best_f < 0) {
		t->why = WHY_NO_FLAVOR;
		t->why_res = best_y.res;
		t->why_flavor = QUEUE_NONE;
		t->why_need = t->why_free = 0;
		return M_NEVER;
	}
	grp_assign(&x, p, (uint32_t)best_f, t);
	if (best_l > t->level)
		t->level = best_l;
	if (best_m > t->mode || (best_m != M_FIT && t->why == WHY_NONE)) {
		t->why = best_y.why;
		t->why_res = best_y.res;
		t->why_flavor = best_y.flavor;
		t->why_need = best_y.need;
		t->why_free = best_y.free;
	}
	return best_m;
}

static bool nofit_hit(const queue_t *q, cq_t *c, const wl_t *w, try_t *t)
{
	if (w->n_ps != 1 || queue_cq_can_preempt(q, c) || queue_lq_lowered(q, w->lq))
		return false;
	for (uint32_t i = 0; i < c->n_nofit && i < NOFIT_CACHE; i++) {
		const nofit_t *n = &c->nofit[i];

		if (n->tmpl != w->ps1.tmpl || w->ps1.count < n->count)
			continue;
		t->mode = n->mode;
		t->why = n->why;
		t->why_res = n->why_res;
		t->why_flavor = n->why_flavor;
		t->why_need = n->why_need;
		t->why_free = n->why_free;
		t->why_level = n->why_level;
		return true;
	}
	return false;
}

static void nofit_put(const queue_t *q, cq_t *c, const wl_t *w, const try_t *t)
{
	nofit_t *n;

	if (w->n_ps != 1 || t->mode < M_WAIT || queue_cq_can_preempt(q, c) ||
	    queue_lq_lowered(q, w->lq)) /* its no-fit is its own (within nominal only) */
		return;
	n = &c->nofit[c->n_nofit++ % NOFIT_CACHE];
	n->tmpl = w->ps1.tmpl;
	n->count = w->ps1.count;
	n->mode = (uint8_t)t->mode;
	n->why = t->why;
	n->why_res = t->why_res;
	n->why_flavor = t->why_flavor;
	n->why_need = t->why_need;
	n->why_free = t->why_free;
	n->why_level = t->why_level;
}

static void try_assign_full(queue_t *q, uint32_t wid, try_t *t);

/* Assign flavors to every pod set of wid against the current usage (only
 * inside a cohort cycle: it consults the cycle's no-fit cache). */
void queue_try_assign(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];

	t->borrows = false;
	t->level = 0;
	t->n_asg = t->n_need = 0;
	t->placed = false;
	t->blocked_fid = QUEUE_NONE;
	t->blocked_quota = false;
	t->n_pl = 0;
	if (nofit_hit(q, c, w, t))
		return;
	try_assign_full(q, wid, t);
	nofit_put(q, c, w, t);
}

static void try_assign_full(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];

	t->mode = M_FIT;
	t->borrows = false;
	t->level = 0;
	t->n_asg = t->n_need = 0;
	t->why = WHY_NONE;
	t->why_res = t->why_flavor = QUEUE_NONE;
	t->why_need = t->why_free = 0;
	t->why_level = 0;
	for (size_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *tm = &q->tmpls[wl_ps(w)[p].tmpl];

		for (uint32_t i = 0; i < tm->n_req; i++) {
			if (tm->amt[i] > 0 && c->res_group[tm->res[i]] < 0) {
				t->mode = M_NEVER;
				t->why = WHY_NOT_COVERED;
				t->why_res = tm->res[i];
				return;
			}
		}
		for (uint32_t g = 0; g < c->n_groups; g++) {
			int m = assign_group(q, wid, p, g, t);

			if (m > t->mode)
				t->mode = m;
			if (m == M_NEVER)
				return;
		}
	}
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		t->need[i].mode =
		    t->need[i].val <= queue_slot_available(q, c, s) ? M_FIT : M_PREEMPT;
		if (s->usage + t->need[i].val > s->nominal)
			t->borrows = true;
	}
	/* the quota fits (or would, preempting): its pods must fit the nodes
	   of its topology-aware flavors as they are now */
	queue_topo_try(q, wid, t);
}

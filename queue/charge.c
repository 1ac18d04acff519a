/*
 * queue/charge.c: quota usage charged and released: a ClusterQueue's slot
 * and its cohorts up the tree (the sums carried incrementally), a
 * workload's whole assignment, and its tenant's admitted amounts; whether a
 * plan's needs fit the quota now. A leaf of
 * queue/: it calls no other file of the module.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <stdlib.h>

void queue_usage_add(queue_t *q, uint32_t cq, uint32_t slot, int64_t delta)
{
	cq_t *c = &q->cqs[cq];
	slot_t *s = &c->slots[slot];
	int64_t up0 = quota_node_use_up(s->usage, s->nominal, s->llimit), d;

	s->usage += delta;
	q->cohorts[c->cohort].slots[s->cslot].usage += delta;
	d = quota_node_use_up(s->usage, s->nominal, s->llimit) - up0;
	if (d)
		queue_node_update(q, c->cohort, s->cslot, 0, d);
}

/* Charge (+1) or release (-1) a workload's assignment to its CQ usage. */
void queue_wl_charge(queue_t *q, uint32_t id, int sign)
{
	wl_t *w = W(q, id);

	for (uint32_t i = 0; i < w->n_asg; i++)
		queue_usage_add(q, w->cq, w->asg[i].slot, sign * w->asg[i].a.amount);
}

/* Tenant's admitted amounts per resource (for the decay sample). */
void queue_lq_cur_add(queue_t *q, const wl_t *w, int sign)
{
	lq_t *l = &q->lqs[w->lq];

	if (!l->cur) {
		l->cur = calloc(QUEUE_RESOURCES_MAX, sizeof(*l->cur));
		if (!l->cur)
			return; /* the share then reads 0: a fairness hint, not quota */
	}
	for (uint32_t i = 0; i < w->n_asg; i++)
		l->cur[w->asg[i].a.resource] += sign * w->asg[i].a.amount;
}

/* Whether plan t's needs fit cq's quota now (above nominal only when
 * allow_borrow). */
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

/*
 * queue/queue.c: creation, destruction and the policy objects: flavors, cohorts, ClusterQueues
 * and LocalQueues.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"

/* ================================================================== */
/* Creation and the policy objects                                     */
/* ================================================================== */

void queue_config_default(queue_config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->fair_sharing = false;
	cfg->tenant_half_life_ms = (int64_t)3600 * 1000;
	cfg->tenant_sample_ms = (int64_t)5 * 60 * 1000;
	cfg->ready_timeout_ms = (int64_t)30 * 60 * 1000;
	cfg->ready_scope = QUEUE_READY_GANGS;
	cfg->backoff_base_ms = (int64_t)60 * 1000;
	cfg->backoff_max_ms = (int64_t)3600 * 1000;
	cfg->release_on_evict = true;
	cfg->workloads_max = 1000000;
	cfg->budget_interval_ms = 60000;
	cfg->node_failure_ms = 30000;
}

int queue_create(const queue_config_t *cfg, queue_t **out)
{
	queue_t *q;

	*out = NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return GPUQ_ENOMEM;
	if (cfg)
		q->cfg = *cfg;
	else
		queue_config_default(&q->cfg);
	if (q->cfg.tenant_half_life_ms < 0 || q->cfg.tenant_sample_ms < 0 ||
	    q->cfg.ready_timeout_ms < 0 || q->cfg.backoff_base_ms < 0 ||
	    q->cfg.backoff_max_ms < q->cfg.backoff_base_ms || q->cfg.idle_fresh_ms < 0 ||
	    q->cfg.node_failure_ms < 0) {
		free(q);
		return GPUQ_EINVAL;
	}
	if (q->cfg.workloads_max == 0)
		q->cfg.workloads_max = 1000000;
	if (q->cfg.budget_interval_ms <= 0)
		q->cfg.budget_interval_ms = 60000;
	q->budget_at = INT64_MIN;
	if (ledger_create(&q->ledger)) {
		free(q);
		return GPUQ_ENOMEM;
	}
	q->last_now = INT64_MIN;
	q->last_sample = INT64_MIN;
	*out = q;
	return GPUQ_OK;
}

/* Every workload's members, the workloads, the free ids. */
static void wls_free(queue_t *q)
{
	for (size_t i = 0; i < q->n_wls; i++) {
		wl_t *w = W(q, (uint32_t)i);

		free(w->strs);
		free(w->psx);
		free(w->asg);
		free(w->place);
	}
	free(q->wls);
	free(q->free_wls.v);
}

void queue_destroy(queue_t *q)
{
	if (!q)
		return;
	ledger_destroy(q->ledger);
	wls_free(q);
	free(q->uids.e);
	for (size_t i = 0; i < q->n_tmpls; i++) {
		tmpl_t *t = &q->tmpls[i];

		free(t->sel);
		free(t->aff);
		free(t->affvals);
		free(t->tol);
		free(t->flv_ok);
	}
	free(q->tmpls);
	free(q->free_tmpls.v);
	free(q->tmpl_map.e);
	for (size_t i = 0; i < q->flv_names.n; i++) {
		free(q->flavors[i].labels);
		free(q->flavors[i].taints);
		free(q->flavors[i].tols);
		topo_destroy(q->flavors[i].topo);
		free(q->flavors[i].tmap);
	}
	free(q->flavors);
	queue_topo_free(q);
	free(q->scratch_try.pl);
	free(q->scratch_rank.pl);
	for (size_t i = 0; i < q->cq_names.n; i++) {
		cq_t *c = &q->cqs[i];

		free(c->groups);
		free(c->slots);
		free(c->lqs.v);
		free(c->aside.v);
		free(c->adm.v);
	}
	free(q->cqs);
	for (size_t i = 0; i < q->lq_names.n; i++) {
		free(q->lqs[i].heap.v);
		free(q->lqs[i].cur);
	}
	free(q->lqs);
	for (size_t i = 0; i < q->cohort_names.n; i++) {
		free(q->cohorts[i].cqs.v);
		free(q->cohorts[i].mem.v);
		free(q->cohorts[i].kids.v);
		free(q->cohorts[i].slots);
	}
	free(q->cohorts);
	free(q->pub_cohorts.v);
	free(q->dirty_cohorts.v);
	free(q->ready_timers.v);
	free(q->exec_timers.v);
	free(q->backoff_timers.v);
	free(q->prot_timers.v);
	free(q->idle_timers.v);
	free(q->idle.v);
	free(q->prio_rt);
	free(q->res_idle);
	free(q->res_bch);
	queue_budgets_free(q);
	for (size_t i = 0; i < q->n_dirty; i++)
		free(q->dirty[i].key);
	free(q->dirty);
	free(q->dirty_map.e);
	free(q->res_adm);
	free(q->res_asg);
	free(q->res_ev);
	free(q->res_ch);
	free(q->res_msg);
	free(q->keep.v);
	free(q->release.v);
	free(q->gone.v);
	free(q->retried.v);
	free(q->held);
	free(q->held_cq);
	free(q->heads);
	free(q->cands.v);
	free(q->tshares);
	free(q->tneeds);
	free(q->targets.v);
	queue_names_free(&q->strs);
	queue_names_free(&q->res_names);
	queue_names_free(&q->flv_names);
	queue_names_free(&q->cq_names);
	queue_names_free(&q->lq_names);
	queue_names_free(&q->cohort_names);
	free(q);
}

/* Intern a flavor name, creating an undefined flavor slot. */
static int flv_intern(queue_t *q, const char *name, uint32_t *id, gpuq_diag_t *diag)
{
	int rc = queue_check_name("flavor name", name, false, diag);

	if (rc)
		return rc;
	if (queue_names_find(&q->flv_names, name, id) == GPUQ_OK)
		return GPUQ_OK;
	if (q->flv_names.n >= QUEUE_FLAVORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "flavor \"%s\": more than %d flavors", name,
				     QUEUE_FLAVORS_MAX);
	if (queue_grow(&q->flavors, &q->cap_flavors, q->flv_names.n + 1, sizeof(*q->flavors)))
		return GPUQ_ENOMEM;
	memset(&q->flavors[q->flv_names.n], 0, sizeof(flavor_t));
	return queue_names_intern(&q->flv_names, name, id);
}

int queue_flavor_add(queue_t *q, const queue_flavor_spec_t *spec, uint32_t *id, gpuq_diag_t *diag)
{
	flavor_t f = {0};
	uint32_t fid;
	int rc;

	rc = flv_intern(q, spec->name, &fid, diag);
	if (rc)
		return rc;
	if (q->flavors[fid].defined)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "ResourceFlavor \"%s\" already exists",
				     spec->name);
	if (spec->n_node_taints > QUEUE_TAINTS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "ResourceFlavor \"%s\": more than %d taints", spec->name,
				     QUEUE_TAINTS_MAX);
	rc = queue_labels_build(q, "nodeLabels", spec->node_labels, spec->n_node_labels,
				QUEUE_SELECTORS_MAX, &f.labels, diag);
	if (rc)
		goto fail;
	f.n_labels = spec->n_node_labels;
	rc = queue_tols_build(q, spec->tolerations, spec->n_tolerations, &f.tols, diag);
	if (rc)
		goto fail;
	f.n_tols = spec->n_tolerations;
	if (spec->n_node_taints) {
		f.taints = calloc(spec->n_node_taints, sizeof(*f.taints));
		if (!f.taints) {
			rc = GPUQ_ENOMEM;
			goto fail;
		}
	}
	for (size_t i = 0; i < spec->n_node_taints; i++) {
		const queue_taint_t *t = &spec->node_taints[i];

		if ((unsigned)t->effect > QUEUE_EFFECT_NO_EXECUTE) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL, "taint %zu: bad effect", i);
			goto fail;
		}
		rc = queue_check_name("taint key", t->key, false, diag);
		if (!rc)
			rc = queue_str_intern(q, "taint key", t->key, &f.taints[i].key, diag);
		if (!rc)
			rc = queue_str_intern(q, "taint value", t->value ? t->value : "",
					      &f.taints[i].val, diag);
		if (rc)
			goto fail;
		f.taints[i].effect = (uint8_t)t->effect;
	}
	f.n_taints = spec->n_node_taints;
	f.defined = true;
	q->flavors[fid] = f;
	rc = queue_flavor_topology(q, fid, spec->topology, diag);
	if (rc) {
		topo_destroy(q->flavors[fid].topo);
		free(q->flavors[fid].tmap);
		memset(&q->flavors[fid], 0, sizeof(flavor_t));
		goto fail;
	}
	q->flv_epoch++;
	for (size_t i = 0; i < q->cohort_names.n; i++)
		queue_cohort_touch(q, (uint32_t)i, true);
	if (id)
		*id = fid;
	return GPUQ_OK;
fail:
	free(f.labels);
	free(f.tols);
	free(f.taints);
	return rc;
}

static int cohort_new(queue_t *q, const char *key, bool hidden, uint32_t *id)
{
	cohort_t *h;
	uint32_t cid;

	if (q->cohort_names.n >= 2 * (size_t)QUEUE_CQS_MAX)
		return GPUQ_ELIMIT;
	if (queue_grow(&q->cohorts, &q->cap_cohorts, q->cohort_names.n + 1, sizeof(*q->cohorts)))
		return GPUQ_ENOMEM;
	if (!hidden && queue_vpush(&q->pub_cohorts, (uint32_t)q->cohort_names.n))
		return GPUQ_ENOMEM;
	if (queue_names_intern(&q->cohort_names, key, &cid)) {
		if (!hidden)
			q->pub_cohorts.n--;
		return GPUQ_ENOMEM;
	}
	h = &q->cohorts[cid];
	memset(h, 0, sizeof(*h));
	h->name = q->cohort_names.s[cid];
	h->pub = hidden ? QUEUE_NONE : (uint32_t)q->pub_cohorts.n - 1;
	h->parent = QUEUE_NONE;
	h->weight = FAIRSHARE_WEIGHT_ONE;
	*id = cid;
	return GPUQ_OK;
}

/* The named cohort, made (undeclared, weight 1000) when never seen. */
static int cohort_named(queue_t *q, const char *name, uint32_t *co, gpuq_diag_t *diag)
{
	int rc = queue_check_name("cohort name", name, false, diag);

	if (rc)
		return rc;
	if (name[0] == '\x01')
		return gpuq_diag_set(diag, GPUQ_EINVAL, "cohort name: bad first byte");
	if (queue_names_find(&q->cohort_names, name, co) == GPUQ_OK)
		return GPUQ_OK;
	rc = cohort_new(q, name, false, co);
	return rc ? gpuq_diag_set(diag, rc, "cohort \"%s\": %s", name, gpuq_strerror(rc)) : rc;
}

static uint32_t cohort_root(const queue_t *q, uint32_t co)
{
	while (q->cohorts[co].parent != QUEUE_NONE)
		co = q->cohorts[co].parent;
	return co;
}

/* Cohort co's slot for (flavor, res), created on demand with its ancestors'
 * (a new node holds nothing, so no sum changes). */
static int cslot_get(queue_t *q, uint32_t co, uint32_t flavor, uint32_t res, uint32_t *out)
{
	cohort_t *h = &q->cohorts[co];
	uint32_t pslot = QUEUE_NONE;

	for (size_t i = 0; i < h->n_slots; i++) {
		if (h->slots[i].flavor == flavor && h->slots[i].res == res) {
			*out = (uint32_t)i;
			return GPUQ_OK;
		}
	}
	if (h->parent != QUEUE_NONE && cslot_get(q, h->parent, flavor, res, &pslot))
		return GPUQ_ENOMEM;
	h = &q->cohorts[co];
	if (queue_grow(&h->slots, &h->cap_slots, h->n_slots + 1, sizeof(*h->slots)))
		return GPUQ_ENOMEM;
	h->slots[h->n_slots] = (cslot_t){flavor, res, pslot, 0, -1, -1, 0, 0, 0, 0};
	*out = (uint32_t)h->n_slots++;
	return GPUQ_OK;
}

/* Add (sign +1) or remove (-1) a CQ slot's quota and usage from its
 * cohort's node and the tree above it. */
static void cslot_quota(queue_t *q, uint32_t co, const slot_t *s, int sign)
{
	cslot_t *cs = &q->cohorts[co].slots[s->cslot];

	cs->nominal += sign * s->nominal;
	cs->usage += sign * s->usage;
	queue_node_update(q, co, s->cslot, sign * queue_slot_lendable(s),
			  sign * quota_node_use_up(s->usage, s->nominal, s->llimit));
}

/* Whether adding up to `add` to node (co, cs) keeps every subtree quota on
 * its way to the root within QUEUE_COHORT_AMOUNT_MAX. */
static bool tree_room(const queue_t *q, uint32_t co, uint32_t cs, int64_t add)
{
	while (co != QUEUE_NONE) {
		const cslot_t *x = &q->cohorts[co].slots[cs];

		if (x->sub + add > QUEUE_COHORT_AMOUNT_MAX)
			return false;
		cs = x->pslot;
		co = q->cohorts[co].parent;
	}
	return true;
}

/* Whether the cohort tree can take these slots' nominal quota (replacing
 * `old` ones, same order, when not NULL). */
static bool cohort_room(const queue_t *q, uint32_t co, const slot_t *slots, const slot_t *old,
			uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!tree_room(q, co, slots[i].cslot,
			       slots[i].nominal - (old ? old[i].nominal : 0)))
			return false;
	return true;
}

/* A cohort's quota: its lendingLimit bounds its subtree quota, so it may
 * exceed its own nominal (Kueue checks that only for ClusterQueues). */
static bool quota_spec_bad(const queue_quota_spec_t *qs)
{
	return qs->nominal < 0 || qs->borrowing_limit < QUEUE_UNLIMITED ||
	       qs->lending_limit < QUEUE_UNLIMITED || qs->nominal > QUEUE_AMOUNT_MAX ||
	       qs->borrowing_limit > QUEUE_AMOUNT_MAX ||
	       qs->lending_limit > QUEUE_COHORT_AMOUNT_MAX;
}

/* Check a cohort's own quota (pass 0), then set it on co, a root then
 * (pass 1: nothing above it to carry to). */
static int cohort_own_quota(queue_t *q, uint32_t co, const queue_cohort_spec_t *spec, int pass,
			    gpuq_diag_t *diag)
{
	bool parent = spec->parent && *spec->parent;

	if (spec->n_groups > QUEUE_GROUPS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "cohort \"%s\": more than %d resourceGroups", spec->name,
				     QUEUE_GROUPS_MAX);
	for (size_t g = 0; g < spec->n_groups; g++) {
		const queue_group_spec_t *gs = &spec->groups[g];

		for (size_t f = 0; f < gs->n_flavors; f++) {
			for (size_t r = 0; r < gs->n_covered; r++) {
				const queue_quota_spec_t *qs = &gs->flavors[f].quotas[r];
				uint32_t fid = 0, rid = 0, cs = 0;
				cslot_t *x;
				int rc;

				if (quota_spec_bad(qs) || (!parent && (qs->borrowing_limit >= 0 ||
								       qs->lending_limit >= 0)))
					return gpuq_diag_set(
					    diag, GPUQ_EINVAL,
					    "cohort \"%s\": flavor \"%s\" resource \"%s\": bad "
					    "quota "
					    "(nominal %" PRId64 ", borrowingLimit %" PRId64
					    ", lendingLimit %" PRId64 "%s)",
					    spec->name, gs->flavors[f].flavor, gs->covered[r],
					    qs->nominal, qs->borrowing_limit, qs->lending_limit,
					    parent ? "" : "; limits need a parent");
				rc = flv_intern(q, gs->flavors[f].flavor, &fid, diag);
				if (!rc)
					rc = queue_res_intern(q, gs->covered[r], &rid, diag);
				if (!rc)
					rc = cslot_get(q, co, fid, rid, &cs);
				if (rc)
					return rc;
				x = &q->cohorts[co].slots[cs];
				if (pass == 0 && (x->own || x->blimit >= 0 || x->llimit >= 0 ||
						  !tree_room(q, co, cs, qs->nominal)))
					return gpuq_diag_set(
					    diag, GPUQ_EINVAL,
					    "cohort \"%s\": flavor \"%s\" resource \"%s\": listed "
					    "twice "
					    "or its tree's quota would exceed 2^61",
					    spec->name, gs->flavors[f].flavor, gs->covered[r]);
				if (pass == 0)
					continue;
				x->own = qs->nominal;
				x->blimit = qs->borrowing_limit;
				x->llimit = qs->lending_limit;
				queue_node_update(q, co, cs, qs->nominal, 0);
			}
		}
	}
	return GPUQ_OK;
}

static uint32_t tree_height(const queue_t *q, uint32_t co)
{
	uint32_t h = 0;

	for (size_t i = 0; i < q->cohorts[co].kids.n; i++) {
		uint32_t k = tree_height(q, q->cohorts[co].kids.v[i]) + 1;

		if (k > h)
			h = k;
	}
	return h;
}

/* Node co got a child of height `child` (-1: a member CQ): raise its
 * height and its ancestors' (Kueue's getNodeHeight, kept as the tree
 * grows; no child ever leaves). */
static void height_raise(queue_t *q, uint32_t co, int child)
{
	uint32_t h = child < 0 ? 1 : (uint32_t)child + 1;

	for (; co != QUEUE_NONE && q->cohorts[co].height < h; co = q->cohorts[co].parent, h++)
		q->cohorts[co].height = (uint8_t)h;
}

/* Checks before co goes under par: no cycle, the depth cap, room for what
 * co lends; makes par's slots for co's. */
static int link_check(queue_t *q, uint32_t co, uint32_t par, gpuq_diag_t *diag)
{
	const cohort_t *h = &q->cohorts[co];
	uint32_t depth = 1;

	for (uint32_t x = par; x != QUEUE_NONE; x = q->cohorts[x].parent, depth++)
		if (x == co)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "cohort \"%s\": parent \"%s\" makes a cycle", h->name,
					     q->cohorts[par].name);
	if (depth + tree_height(q, co) > QUEUE_TREE_DEPTH_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "cohort \"%s\": parent \"%s\": more than %d cohorts on a "
				     "path to the root",
				     h->name, q->cohorts[par].name, QUEUE_TREE_DEPTH_MAX);
	for (size_t i = 0; i < q->cohorts[co].n_slots; i++) {
		cslot_t *x = &q->cohorts[co].slots[i];
		uint32_t ps = 0;

		if (cslot_get(q, par, x->flavor, x->res, &ps))
			return GPUQ_ENOMEM;
		x = &q->cohorts[co].slots[i];
		if (!tree_room(q, par, ps, quota_node_lent(x->sub, x->llimit)))
			return gpuq_diag_set(diag, GPUQ_ELIMIT,
					     "cohort \"%s\": its tree's quota would exceed 2^61",
					     h->name);
	}
	return queue_grow(&q->cohorts[par].kids.v, &q->cohorts[par].kids.cap,
			  q->cohorts[par].kids.n + 1, sizeof(uint32_t)) ||
		       queue_grow(&q->cohorts[cohort_root(q, par)].cqs.v,
				  &q->cohorts[cohort_root(q, par)].cqs.cap,
				  q->cohorts[cohort_root(q, par)].cqs.n + q->cohorts[co].cqs.n,
				  sizeof(uint32_t))
		   ? GPUQ_ENOMEM
		   : GPUQ_OK;
}

/* Put root co under par (link_check passed): carry its sums up and merge
 * its cycle unit into par's root's. */
static void link_apply(queue_t *q, uint32_t co, uint32_t par)
{
	cohort_t *h = &q->cohorts[co];
	uint32_t root = cohort_root(q, par);
	cohort_t *r = &q->cohorts[root];

	q->cohorts[par].kids.v[q->cohorts[par].kids.n++] = co;
	h->parent = par;
	height_raise(q, par, h->height);
	for (size_t i = 0; i < h->n_slots; i++) {
		cslot_t *x = &h->slots[i];
		uint32_t ps = QUEUE_NONE;

		(void)cslot_get(q, par, x->flavor, x->res, &ps); /* made by link_check */
		x->pslot = ps;
		queue_node_update(q, par, ps, quota_node_lent(x->sub, x->llimit),
				  quota_node_use_up(x->use, x->sub, x->llimit));
	}
	for (size_t i = 0; i < h->cqs.n; i++) {
		q->cqs[h->cqs.v[i]].unit = root;
		r->cqs.v[r->cqs.n++] = h->cqs.v[i];
	}
	h->cqs.n = 0;
	r->n_evicting += h->n_evicting;
	h->n_evicting = 0;
	queue_cohort_touch(q, root, true);
}

int queue_cohort_add(queue_t *q, const queue_cohort_spec_t *spec, uint32_t *id, gpuq_diag_t *diag)
{
	uint32_t co = 0, par = QUEUE_NONE;
	int rc = cohort_named(q, spec->name, &co, diag);

	if (rc)
		return rc;
	if (q->cohorts[co].declared)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "cohort \"%s\" already exists", spec->name);
	rc = cohort_own_quota(q, co, spec, 0, diag); /* makes co's slots */
	if (!rc && spec->parent && *spec->parent) {
		rc = cohort_named(q, spec->parent, &par, diag);
		if (!rc)
			rc = link_check(q, co, par, diag); /* makes par's */
	}
	if (!rc)
		rc = cohort_own_quota(q, co, spec, 1, diag);
	if (rc)
		return rc;
	q->cohorts[co].declared = true;
	q->cohorts[co].weight = spec->weight_zero	 ? 0
				: spec->weight_milli > 0 ? spec->weight_milli
							 : FAIRSHARE_WEIGHT_ONE;
	if (par != QUEUE_NONE)
		link_apply(q, co, par);
	queue_cohort_touch(q, co, true);
	if (id)
		*id = q->cohorts[co].pub;
	return GPUQ_OK;
}

/* Allocate and fill the quota slots of a CQ whose groups cq_build made. */
static int cq_fill_slots(const queue_cq_spec_t *spec, cq_t *c, uint32_t n_slots, gpuq_diag_t *diag)
{
	c->slots = calloc(n_slots ? n_slots : 1, sizeof(*c->slots));
	if (!c->slots)
		return GPUQ_ENOMEM;
	c->n_slots = n_slots;
	for (size_t g = 0; g < spec->n_groups; g++) {
		const queue_group_spec_t *gs = &spec->groups[g];
		group_t *gr = &c->groups[g];

		for (size_t f = 0; f < gr->n_flv; f++) {
			for (size_t r = 0; r < gr->n_cov; r++) {
				const queue_quota_spec_t *qs = &gs->flavors[f].quotas[r];
				slot_t *s = &c->slots[gr->base + f * gr->n_cov + r];

				if (qs->nominal < 0 || qs->borrowing_limit < QUEUE_UNLIMITED ||
				    qs->lending_limit < QUEUE_UNLIMITED ||
				    qs->lending_limit > qs->nominal ||
				    qs->nominal > QUEUE_AMOUNT_MAX ||
				    qs->borrowing_limit > QUEUE_AMOUNT_MAX)
					return gpuq_diag_set(
					    diag, GPUQ_EINVAL,
					    "ClusterQueue \"%s\": flavor \"%s\" resource \"%s\": "
					    "bad quota (nominal %" PRId64
					    ", borrowingLimit %" PRId64 ", lendingLimit %" PRId64
					    ")",
					    spec->name, gs->flavors[f].flavor, gs->covered[r],
					    qs->nominal, qs->borrowing_limit, qs->lending_limit);
				s->nominal = qs->nominal;
				s->blimit = qs->borrowing_limit;
				s->llimit = qs->lending_limit;
				s->flavor = gr->flv[f];
				s->res = gr->cov[r];
			}
		}
	}
	return GPUQ_OK;
}

/* Validate a CQ spec's groups into groups/slots arrays (new allocations). */
static int cq_build(queue_t *q, const queue_cq_spec_t *spec, cq_t *c, gpuq_diag_t *diag)
{
	uint32_t n_slots = 0;
	int rc;

	if (spec->n_groups > QUEUE_GROUPS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "ClusterQueue \"%s\": more than %d "
				     "resourceGroups",
				     spec->name, QUEUE_GROUPS_MAX);
	memset(c->res_group, -1, sizeof(c->res_group));
	memset(c->res_cov, -1, sizeof(c->res_cov));
	c->groups = calloc(spec->n_groups ? spec->n_groups : 1, sizeof(*c->groups));
	if (!c->groups)
		return GPUQ_ENOMEM;
	c->n_groups = (uint32_t)spec->n_groups;
	for (size_t g = 0; g < spec->n_groups; g++) {
		const queue_group_spec_t *gs = &spec->groups[g];
		group_t *gr = &c->groups[g];

		if (!gs->n_covered || !gs->n_flavors || gs->n_covered > QUEUE_GROUP_RES_MAX ||
		    gs->n_flavors > QUEUE_GROUP_FLAVORS_MAX)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "ClusterQueue \"%s\": resourceGroups[%zu]"
					     " needs 1..%d coveredResources and 1..%d flavors",
					     spec->name, g, QUEUE_GROUP_RES_MAX,
					     QUEUE_GROUP_FLAVORS_MAX);
		gr->n_cov = (uint32_t)gs->n_covered;
		gr->n_flv = (uint32_t)gs->n_flavors;
		gr->base = n_slots;
		for (size_t r = 0; r < gs->n_covered; r++) {
			rc = queue_res_intern(q, gs->covered[r], &gr->cov[r], diag);
			if (rc)
				return rc;
			if (c->res_group[gr->cov[r]] >= 0)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "ClusterQueue \"%s\": resource "
						     "\"%s\" covered twice",
						     spec->name, gs->covered[r]);
			c->res_group[gr->cov[r]] = (int8_t)g;
			c->res_cov[gr->cov[r]] = (int8_t)r;
		}
		for (size_t f = 0; f < gs->n_flavors; f++) {
			rc = flv_intern(q, gs->flavors[f].flavor, &gr->flv[f], diag);
			if (rc)
				return rc;
			for (size_t k = 0; k < f; k++)
				if (gr->flv[k] == gr->flv[f])
					return gpuq_diag_set(diag, GPUQ_EINVAL,
							     "ClusterQueue \"%s\": "
							     "flavor \"%s\" twice in a group",
							     spec->name, gs->flavors[f].flavor);
			if (!gs->flavors[f].quotas)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "ClusterQueue \"%s\": flavor "
						     "\"%s\" has no quotas",
						     spec->name, gs->flavors[f].flavor);
		}
		n_slots += gr->n_cov * gr->n_flv;
	}
	return cq_fill_slots(spec, c, n_slots, diag);
}

static void cq_policy(cq_t *c, const queue_cq_spec_t *spec)
{
	c->strategy =
	    spec->strategy == QUEUE_STRICT_FIFO ? QUEUE_STRICT_FIFO : QUEUE_BEST_EFFORT_FIFO;
	c->within = spec->within;
	c->reclaim = spec->reclaim;
	c->borrow = spec->borrow;
	c->has_thr = spec->has_max_priority_threshold;
	c->thr = spec->max_priority_threshold;
	c->weight = spec->weight_zero	     ? 0
		    : spec->weight_milli > 0 ? spec->weight_milli
					     : FAIRSHARE_WEIGHT_ONE;
	c->stop = spec->stop;
	c->borrow_next = spec->when_can_borrow == QUEUE_FUNGIBLE_TRY_NEXT;
	c->preempt_next = spec->when_can_preempt != QUEUE_FUNGIBLE_MAY_STOP;
	c->prefer_preempt = spec->preference == QUEUE_PREFER_PREEMPTION;
	c->afs = spec->admission_fair_sharing;
	c->min_runtime = spec->min_runtime_ms;
	c->idle_action = (uint8_t)spec->idle_action;
	c->idle_thr = spec->idle_threshold_pct;
	c->idle_after = spec->idle_after_ms;
	c->max_exec = spec->max_exec_ms;
	c->starve = spec->starvation_ms;
}

static int cq_policy_check(const queue_cq_spec_t *spec, gpuq_diag_t *diag)
{
	if ((unsigned)spec->strategy > QUEUE_STRICT_FIFO ||
	    (unsigned)spec->within > QUEUE_WITHIN_LOWER_OR_NEWER ||
	    (unsigned)spec->reclaim > QUEUE_RECLAIM_ANY ||
	    (unsigned)spec->borrow > QUEUE_BORROW_LOWER_PRIORITY ||
	    (unsigned)spec->stop > QUEUE_STOP_HOLD_AND_DRAIN ||
	    (unsigned)spec->when_can_borrow > QUEUE_FUNGIBLE_TRY_NEXT ||
	    (unsigned)spec->when_can_preempt > QUEUE_FUNGIBLE_TRY_NEXT ||
	    (unsigned)spec->preference > QUEUE_PREFER_PREEMPTION ||
	    (unsigned)spec->idle_action > QUEUE_IDLE_PREEMPT)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "ClusterQueue \"%s\": bad policy enum",
				     spec->name);
	if (spec->min_runtime_ms < 0 || spec->min_runtime_ms > QUEUE_MIN_RUNTIME_MAX ||
	    (spec->idle_action != QUEUE_IDLE_OFF &&
	     (!(spec->idle_threshold_pct >= 0 && spec->idle_threshold_pct <= 100) ||
	      spec->idle_after_ms < 1 || spec->idle_after_ms > QUEUE_MIN_RUNTIME_MAX)))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "ClusterQueue \"%s\": minimum runtime or idle reclaim out of "
				     "range",
				     spec->name);
	if (spec->max_exec_ms < 0 || spec->max_exec_ms > QUEUE_MAX_EXEC_MS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "ClusterQueue \"%s\": maximum execution time %" PRId64
				     " ms out of range",
				     spec->name, spec->max_exec_ms);
	if (spec->starvation_ms < 0 || spec->starvation_ms > QUEUE_MAX_EXEC_MS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "ClusterQueue \"%s\": starvation limit %" PRId64
				     " ms out of range",
				     spec->name, spec->starvation_ms);
	return GPUQ_OK;
}

int queue_cq_add(queue_t *q, const queue_cq_spec_t *spec, uint32_t *id, gpuq_diag_t *diag)
{
	cq_t c;
	uint32_t cid = 0, co = 0;
	char hidden[QUEUE_NAME_MAX + 2];
	cohort_t *h, *r;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = queue_check_name("ClusterQueue name", spec->name, false, diag);
	if (rc)
		return rc;
	if (queue_names_find(&q->cq_names, spec->name, &cid) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "ClusterQueue \"%s\" already exists",
				     spec->name);
	if (q->cq_names.n >= QUEUE_CQS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d ClusterQueues",
				     QUEUE_CQS_MAX);
	rc = cq_policy_check(spec, diag);
	if (rc)
		return rc;
	rc = cq_build(q, spec, &c, diag);
	if (rc)
		goto fail;
	if (spec->cohort && *spec->cohort) {
		rc = cohort_named(q, spec->cohort, &co, diag);
		if (rc)
			goto fail;
	} else {
		hidden[0] = '\x01';
		gpuq_strlcpy(hidden + 1, spec->name, sizeof(hidden) - 1);
		rc = cohort_new(q, hidden, true, &co);
		if (rc)
			goto fail;
	}
	for (uint32_t s = 0; s < c.n_slots; s++) {
		rc = cslot_get(q, co, c.slots[s].flavor, c.slots[s].res, &c.slots[s].cslot);
		if (rc)
			goto fail;
	}
	if (!cohort_room(q, co, c.slots, NULL, c.n_slots)) {
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "ClusterQueue \"%s\": its cohort's total "
				   "quota would exceed 2^61",
				   spec->name);
		goto fail;
	}
	h = &q->cohorts[co];
	r = &q->cohorts[cohort_root(q, co)];
	if (queue_grow(&q->cqs, &q->cap_cqs, q->cq_names.n + 1, sizeof(*q->cqs)) ||
	    queue_grow(&h->mem.v, &h->mem.cap, h->mem.n + 1, sizeof(uint32_t)) ||
	    queue_grow(&r->cqs.v, &r->cqs.cap, r->cqs.n + 1, sizeof(uint32_t))) {
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	rc = queue_names_intern(&q->cq_names, spec->name, &cid);
	if (rc)
		goto fail;
	cq_policy(&c, spec);
	c.resv = QUEUE_NONE; /* the first cycle decides (reserve.c) */
	c.resv_start = INT64_MAX;
	c.budget = -1; /* queue_budgets_set links it */
	c.cohort = co;
	c.unit = cohort_root(q, co);
	c.name = q->cq_names.s[cid];
	q->cqs[cid] = c;
	h->mem.v[h->mem.n++] = cid;
	r->cqs.v[r->cqs.n++] = cid;
	height_raise(q, co, -1);
	for (uint32_t s = 0; s < c.n_slots; s++)
		cslot_quota(q, co, &c.slots[s], +1);
	queue_cohort_touch(q, co, true);
	queue_mark_cq(q, cid);
	if (id)
		*id = cid;
	return GPUQ_OK;
fail:
	free(c.groups);
	free(c.slots);
	return rc;
}

/* Room for a deadline per workload CQ c admitted, when its default limit
 * changes to max_exec_ms: GPUQ_ENOMEM before anything changed. */
static int exec_room(queue_t *q, const cq_t *c, int64_t max_exec_ms)
{
	if (max_exec_ms == c->max_exec ||
	    !queue_grow(&q->exec_timers.v, &q->exec_timers.cap, q->exec_timers.n + c->adm.n,
			sizeof(*q->exec_timers.v)))
		return GPUQ_OK;
	return GPUQ_ENOMEM;
}

/* CQ c's default limit changed: each workload it admitted has a deadline
 * of its new limit (the room is there: exec_room); the old ones go stale. */
static void exec_rearm(queue_t *q, const cq_t *c)
{
	for (size_t i = 0; i < c->adm.n; i++)
		if (W(q, c->adm.v[i])->state == QUEUE_WL_ADMITTED)
			(void)queue_exec_arm(q, c->adm.v[i]);
}

int queue_cq_update(queue_t *q, const queue_cq_spec_t *spec, gpuq_diag_t *diag)
{
	cq_t n;
	uint32_t cid;
	queue_strategy_t strategy;
	bool afs, idle_changed, exec_changed;
	int64_t minrt;
	cq_t *c;
	cohort_t *h;
	int rc;

	memset(&n, 0, sizeof(n));
	if (!spec->name || queue_names_find(&q->cq_names, spec->name, &cid) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "ClusterQueue \"%s\" not found",
				     spec->name ? spec->name : "");
	c = &q->cqs[cid];
	h = &q->cohorts[c->cohort];
	rc = cq_policy_check(spec, diag);
	if (rc)
		return rc;
	if ((spec->cohort && *spec->cohort)
		? (h->pub == QUEUE_NONE || strcmp(h->name, spec->cohort) != 0)
		: h->pub != QUEUE_NONE)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "ClusterQueue \"%s\": structural change "
				     "(cohort)",
				     spec->name);
	rc = cq_build(q, spec, &n, diag);
	if (rc)
		goto out;
	if (n.n_groups != c->n_groups || n.n_slots != c->n_slots) {
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "ClusterQueue \"%s\": structural change "
				   "(resource groups)",
				   spec->name);
		goto out;
	}
	for (uint32_t s = 0; s < n.n_slots; s++) {
		if (n.slots[s].flavor != c->slots[s].flavor || n.slots[s].res != c->slots[s].res) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL,
					   "ClusterQueue \"%s\": structural "
					   "change (flavors or resources)",
					   spec->name);
			goto out;
		}
	}
	for (uint32_t s = 0; s < n.n_slots; s++)
		n.slots[s].cslot = c->slots[s].cslot;
	if (!cohort_room(q, c->cohort, n.slots, c->slots, n.n_slots)) {
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "ClusterQueue \"%s\": its cohort's total "
				   "quota would exceed 2^61",
				   spec->name);
		goto out;
	}
	rc = exec_room(q, c, spec->max_exec_ms);
	if (rc)
		goto out;
	for (uint32_t s = 0; s < c->n_slots; s++) {
		slot_t *o = &c->slots[s];

		cslot_quota(q, c->cohort, o, -1);
		o->nominal = n.slots[s].nominal;
		o->blimit = n.slots[s].blimit;
		o->llimit = n.slots[s].llimit;
		cslot_quota(q, c->cohort, o, +1);
	}
	strategy = c->strategy;
	afs = c->afs;
	minrt = c->min_runtime;
	exec_changed = c->max_exec != spec->max_exec_ms;
	idle_changed = c->idle_action != (uint8_t)spec->idle_action ||
		       c->idle_thr != spec->idle_threshold_pct ||
		       c->idle_after != spec->idle_after_ms;
	cq_policy(c, spec);
	if (idle_changed) /* spells are judged by the new settings from the next reading */
		for (size_t i = 0; i < c->adm.n; i++)
			W(q, c->adm.v[i])->idle_since = -1, W(q, c->adm.v[i])->idle_said = false;
	if (c->min_runtime != minrt)
		queue_prot_restored(q);
	if (exec_changed)
		exec_rearm(q, c);
	if (c->strategy != strategy || c->afs != afs) /* queue_wl_cmp reads both */
		for (size_t i = 0; i < c->lqs.n; i++)
			queue_heap_rebuild(q, &q->lqs[c->lqs.v[i]].heap);
	queue_cohort_touch(q, c->cohort, true);
	queue_mark_cq(q, cid);
out:
	free(n.groups);
	free(n.slots);
	return rc;
}

int queue_lq_add(queue_t *q, const char *namespace_, const char *name, const char *cq,
		 int64_t weight_milli, uint32_t *id, gpuq_diag_t *diag)
{
	char key[2 * QUEUE_NAME_MAX + 2];
	uint32_t cid, lid, nsid;
	lq_t *l;
	int rc;

	rc = queue_check_name("LocalQueue namespace", namespace_, false, diag);
	if (!rc)
		rc = queue_check_name("LocalQueue name", name, false, diag);
	if (!rc)
		rc = queue_check_name("ClusterQueue name", cq, false, diag);
	if (rc)
		return rc;
	if (queue_names_find(&q->cq_names, cq, &cid) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "LocalQueue %s/%s: ClusterQueue \"%s\" "
				     "not found",
				     namespace_, name, cq);
	snprintf(key, sizeof(key), "%s/%s", namespace_, name);
	if (queue_names_find(&q->lq_names, key, &lid) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "LocalQueue %s already exists", key);
	if (q->lq_names.n >= QUEUE_LQS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d LocalQueues", QUEUE_LQS_MAX);
	if (queue_grow(&q->lqs, &q->cap_lqs, q->lq_names.n + 1, sizeof(*q->lqs)) ||
	    queue_vpush(&q->cqs[cid].lqs, (uint32_t)q->lq_names.n))
		return GPUQ_ENOMEM;
	rc = queue_names_intern(&q->strs, namespace_, &nsid);
	if (!rc)
		rc = queue_names_intern(&q->lq_names, key, &lid);
	if (rc) {
		q->cqs[cid].lqs.n--;
		return rc;
	}
	l = &q->lqs[lid];
	memset(l, 0, sizeof(*l));
	l->name = q->lq_names.s[lid];
	l->ns = q->strs.s[nsid];
	l->cq = cid;
	l->weight = weight_milli == QUEUE_WEIGHT_ZERO ? 0
		    : weight_milli > 0		      ? weight_milli
						      : FAIRSHARE_WEIGHT_ONE;
	l->budget = l->ns_budget = -1; /* queue_budgets_set links it */
	queue_mark_lq(q, lid);
	if (id)
		*id = lid;
	return GPUQ_OK;
}

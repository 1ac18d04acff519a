/*
 * queue/workload.c: workloads: pod set templates, their order and containers (LocalQueue heaps,
 * timers), and their lifecycle (add, finish, evict, delete).
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* Pod set templates                                                   */
/* ================================================================== */

static bool tmpl_eq(const void *ctx, uint32_t id, const void *key)
{
	const queue_t *q = ctx;
	const tmpl_t *a = &q->tmpls[id], *b = key;

	if (a->name != b->name || a->n_req != b->n_req || a->n_sel != b->n_sel ||
	    a->n_aff != b->n_aff || a->n_tol != b->n_tol || a->n_affvals != b->n_affvals)
		return false;
	if (memcmp(a->res, b->res, a->n_req * sizeof(a->res[0])) != 0 ||
	    memcmp(a->amt, b->amt, a->n_req * sizeof(a->amt[0])) != 0)
		return false;
	if (a->n_sel && memcmp(a->sel, b->sel, a->n_sel * sizeof(*a->sel)) != 0)
		return false;
	if (a->n_aff && memcmp(a->aff, b->aff, a->n_aff * sizeof(*a->aff)) != 0)
		return false;
	if (a->n_affvals && memcmp(a->affvals, b->affvals, a->n_affvals * sizeof(uint32_t)) != 0)
		return false;
	if (a->n_tol && memcmp(a->tol, b->tol, a->n_tol * sizeof(*a->tol)) != 0)
		return false;
	return a->topo_mode == b->topo_mode && a->slice_size == b->slice_size &&
	       a->topo_level == b->topo_level && a->slice_level == b->slice_level &&
	       a->group == b->group;
}

static uint32_t tmpl_hash(const tmpl_t *t)
{
	uint32_t h = gpuq_fnv1a32(GPUQ_FNV1A32_BASIS, &t->name, sizeof(t->name));

	h = gpuq_fnv1a32(h, t->res, t->n_req * sizeof(t->res[0]));
	h = gpuq_fnv1a32(h, t->amt, t->n_req * sizeof(t->amt[0]));
	if (t->n_sel)
		h = gpuq_fnv1a32(h, t->sel, t->n_sel * sizeof(*t->sel));
	if (t->n_aff)
		h = gpuq_fnv1a32(h, t->aff, t->n_aff * sizeof(*t->aff));
	if (t->n_affvals)
		h = gpuq_fnv1a32(h, t->affvals, t->n_affvals * sizeof(uint32_t));
	if (t->n_tol)
		h = gpuq_fnv1a32(h, t->tol, t->n_tol * sizeof(*t->tol));
	if (t->topo_mode || t->slice_size || t->group != QUEUE_NONE) {
		uint32_t k[5] = {t->topo_mode, (uint32_t)t->slice_size, t->topo_level,
				 t->slice_level, t->group};

		h = gpuq_fnv1a32(h, k, sizeof(k));
	}
	return h;
}

static void tmpl_free_fields(tmpl_t *t)
{
	free(t->sel);
	free(t->aff);
	free(t->affvals);
	free(t->tol);
	free(t->flv_ok);
	memset(t, 0, sizeof(*t));
}

void queue_tmpl_release(queue_t *q, uint32_t id)
{
	tmpl_t *t = &q->tmpls[id];

	if (--t->refs)
		return;
	queue_map_del(&q->tmpl_map, t->hash, id);
	tmpl_free_fields(t);
	(void)queue_vpush(&q->free_tmpls, id); /* a lost free slot only costs memory */
}

/* The required affinity terms of a pod set into t (aff, affvals). */
static int tmpl_build_affinity(queue_t *q, const queue_podset_spec_t *ps, tmpl_t *t,
			       gpuq_diag_t *diag)
{
	size_t nv = 0;
	int rc;

	for (size_t i = 0; i < ps->n_affinity; i++) {
		if (!ps->affinity[i].n_values ||
		    ps->affinity[i].n_values > QUEUE_AFFINITY_VALUES_MAX) {
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "affinity term %zu: needs 1..%d values", i,
					     QUEUE_AFFINITY_VALUES_MAX);
		}
		nv += ps->affinity[i].n_values;
	}
	if (ps->n_affinity) {
		t->aff = calloc(ps->n_affinity, sizeof(*t->aff));
		t->affvals = calloc(nv, sizeof(*t->affvals));
		if (!t->aff || !t->affvals)
			return GPUQ_ENOMEM;
	}
	nv = 0;
	for (size_t i = 0; i < ps->n_affinity; i++) {
		const queue_affinity_t *a = &ps->affinity[i];

		rc = queue_check_name("affinity key", a->key, false, diag);
		if (!rc)
			rc = queue_str_intern(q, "affinity key", a->key, &t->aff[i].key, diag);
		if (rc)
			return rc;
		t->aff[i].n = (uint32_t)a->n_values;
		t->aff[i].off = (uint32_t)nv;
		for (size_t j = 0; j < a->n_values; j++) {
			rc = queue_str_intern(q, "affinity value", a->values[j] ? a->values[j] : "",
					      &t->affvals[nv++], diag);
			if (rc)
				return rc;
		}
	}
	t->n_aff = (uint8_t)ps->n_affinity;
	t->n_affvals = (uint32_t)nv;
	return GPUQ_OK;
}

/* Build a template from a spec into *t (fields owned by t). */
static int tmpl_build(queue_t *q, const queue_podset_spec_t *ps, tmpl_t *t, gpuq_diag_t *diag)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = queue_str_intern(q, "pod set name", ps->name ? ps->name : "", &t->name, diag);
	if (rc)
		return rc;
	if (ps->n_requests > QUEUE_PODSET_RES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "pod set \"%s\": more than %d resources",
				     ps->name ? ps->name : "", QUEUE_PODSET_RES_MAX);
	if (ps->n_affinity > QUEUE_SELECTORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "pod set: more than %d affinity terms",
				     QUEUE_SELECTORS_MAX);
	for (size_t i = 0; i < ps->n_requests; i++) {
		uint32_t rid;

		if (ps->requests[i].amount < 0)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "pod set \"%s\": negative request "
					     "for %s",
					     ps->name ? ps->name : "", ps->requests[i].resource);
		if (ps->requests[i].amount > QUEUE_AMOUNT_MAX / (ps->count > 0 ? ps->count : 1))
			return gpuq_diag_set(diag, GPUQ_ERANGE,
					     "pod set \"%s\": request for %s "
					     "too large",
					     ps->name ? ps->name : "", ps->requests[i].resource);
		rc = queue_res_intern(q, ps->requests[i].resource, &rid, diag);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (t->res[j] == rid)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "pod set: resource \"%s\" "
						     "twice",
						     ps->requests[i].resource);
		t->res[i] = (uint16_t)rid;
		t->amt[i] = ps->requests[i].amount;
	}
	t->n_req = (uint8_t)ps->n_requests;
	rc = queue_labels_build(q, "nodeSelector", ps->node_selector, ps->n_node_selector,
				QUEUE_SELECTORS_MAX, &t->sel, diag);
	if (rc)
		return rc;
	t->n_sel = (uint8_t)ps->n_node_selector;
	rc = queue_tols_build(q, ps->tolerations, ps->n_tolerations, &t->tol, diag);
	if (rc)
		goto fail;
	t->n_tol = (uint8_t)ps->n_tolerations;
	rc = tmpl_build_affinity(q, ps, t, diag);
	if (!rc)
		rc = queue_tmpl_topology(q, ps, t, diag);
	if (rc)
		goto fail;
	return GPUQ_OK;
fail:
	tmpl_free_fields(t);
	return rc;
}

/* Find or adopt *t (consumed either way); *id gets a reference. */
static int tmpl_intern(queue_t *q, tmpl_t *t, uint32_t *id)
{
	uint32_t h = tmpl_hash(t), tid;

	if (queue_map_find(&q->tmpl_map, h, tmpl_eq, q, t, &tid)) {
		tmpl_free_fields(t);
		q->tmpls[tid].refs++;
		*id = tid;
		return GPUQ_OK;
	}
	if (queue_map_reserve(&q->tmpl_map))
		goto nomem;
	if (q->free_tmpls.n) {
		tid = q->free_tmpls.v[--q->free_tmpls.n];
	} else {
		if (queue_grow(&q->tmpls, &q->cap_tmpls, q->n_tmpls + 1, sizeof(*q->tmpls)))
			goto nomem;
		tid = (uint32_t)q->n_tmpls++;
	}
	t->hash = h;
	t->refs = 1;
	q->tmpls[tid] = *t;
	queue_map_put(&q->tmpl_map, h, tid);
	*id = tid;
	return GPUQ_OK;
nomem:
	tmpl_free_fields(t);
	return GPUQ_ENOMEM;
}

/* Whether pod set template t may use flavor fid (taints, selector, affinity). */
static bool flavor_eligible(const queue_t *q, const tmpl_t *t, uint32_t fid)
{
	const flavor_t *f = &q->flavors[fid];

	if (!f->defined)
		return false;
	for (size_t i = 0; i < f->n_taints; i++) {
		const taint_t *tn = &f->taints[i];

		if (tn->effect == QUEUE_EFFECT_PREFER_NO_SCHEDULE)
			continue;
		if (!queue_tolerates(q, t->tol, t->n_tol, tn) &&
		    !queue_tolerates(q, f->tols, f->n_tols, tn))
			return false;
	}
	for (size_t i = 0; i < t->n_sel; i++) {
		const kv_t *l = queue_kv_get(f->labels, f->n_labels, t->sel[i].key);

		if (l && l->val != t->sel[i].val)
			return false;
	}
	for (size_t i = 0; i < t->n_aff; i++) {
		const kv_t *l = queue_kv_get(f->labels, f->n_labels, t->aff[i].key);
		bool ok = false;

		if (!l)
			continue;
		for (uint32_t j = 0; j < t->aff[i].n; j++)
			ok |= t->affvals[t->aff[i].off + j] == l->val;
		if (!ok)
			return false;
	}
	return true;
}

/* Cached flavor_eligible (the cache is per template, reset when flavors change). */
bool queue_tmpl_flavor_ok(queue_t *q, uint32_t tid, uint32_t fid)
{
	tmpl_t *t = &q->tmpls[tid];

	if (t->flv_epoch != q->flv_epoch || fid >= t->n_flv_ok) {
		size_t n = q->flv_names.n;
		uint8_t *nc = realloc(t->flv_ok, n ? n : 1);

		if (!nc)
			return flavor_eligible(q, t, fid);
		if (t->flv_epoch != q->flv_epoch)
			memset(nc, 0, n);
		else
			memset(nc + t->n_flv_ok, 0, n - t->n_flv_ok);
		t->flv_ok = nc;
		t->n_flv_ok = n;
		t->flv_epoch = q->flv_epoch;
	}
	if (!t->flv_ok[fid])
		t->flv_ok[fid] = flavor_eligible(q, t, fid) ? 1 : 2;
	return t->flv_ok[fid] == 1;
}

/* ================================================================== */
/* Workload order and containers                                       */
/* ================================================================== */

static void heap_set(queue_t *q, u32vec_t *h, size_t i, uint32_t id)
{
	h->v[i] = id;
	W(q, id)->pos = (uint32_t)i;
}

static void heap_up(queue_t *q, u32vec_t *h, size_t i)
{
	uint32_t id = h->v[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (queue_wl_cmp(q, h->v[p], id) <= 0)
			break;
		heap_set(q, h, i, h->v[p]);
		i = p;
	}
	heap_set(q, h, i, id);
}

static void heap_down(queue_t *q, u32vec_t *h, size_t i)
{
	uint32_t id = h->v[i];

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		uint32_t best = id;

		if (l < h->n && queue_wl_cmp(q, h->v[l], best) < 0) {
			m = l;
			best = h->v[l];
		}
		if (l + 1 < h->n && queue_wl_cmp(q, h->v[l + 1], best) < 0)
			m = l + 1;
		if (m == i)
			break;
		heap_set(q, h, i, h->v[m]);
		i = m;
	}
	heap_set(q, h, i, id);
}

/* Restore a LocalQueue heap's order after its comparison changed (its CQ's
 * queueing strategy, which decides whether planned preemptors go first). */
void queue_heap_rebuild(queue_t *q, u32vec_t *h)
{
	for (size_t i = h->n / 2; i-- > 0;)
		heap_down(q, h, i);
}

int queue_heap_append(queue_t *q, u32vec_t *h, uint32_t id)
{
	if (queue_vpush(h, id))
		return GPUQ_ENOMEM;
	W(q, id)->pos = (uint32_t)(h->n - 1);
	W(q, id)->where = W_HEAP;
	return GPUQ_OK;
}

void queue_heap_order(queue_t *q, u32vec_t *h, size_t from)
{
	size_t k = h->n - from, depth = 1;

	for (size_t n = h->n; n > 1; n /= 2)
		depth++;
	if (k * depth > h->n) {
		queue_heap_rebuild(q, h); /* O(n) against k sift-ups of O(log n) */
		return;
	}
	for (size_t i = from; i < h->n; i++)
		heap_up(q, h, i);
}

void queue_heap_remove(queue_t *q, u32vec_t *h, size_t i)
{
	uint32_t last = h->v[--h->n];

	if (i == h->n)
		return;
	heap_set(q, h, i, last);
	heap_down(q, h, i);
	heap_up(q, h, W(q, last)->pos);
}

/* Take a workload out of whichever container holds it. */
void queue_wl_detach(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);
	u32vec_t *v = NULL;

	switch (w->where) {
	case W_HEAP:
		queue_heap_remove(q, &q->lqs[w->lq].heap, w->pos);
		break;
	case W_ASIDE:
		v = &q->cqs[w->cq].aside;
		break;
	case W_ADMITTED:
		v = &q->cqs[w->cq].adm;
		break;
	default:
		break;
	}
	if (v) {
		uint32_t last = v->v[--v->n];

		if (w->pos != v->n) {
			v->v[w->pos] = last;
			W(q, last)->pos = w->pos;
		}
	}
	w->where = W_NONE;
}

/* Put a workload into a container (allocation may fail: GPUQ_ENOMEM). */
int queue_wl_attach(queue_t *q, uint32_t id, int where)
{
	wl_t *w = W(q, id);
	u32vec_t *v;

	switch (where) {
	case W_HEAP:
		v = &q->lqs[w->lq].heap;
		if (queue_vpush(v, id))
			return GPUQ_ENOMEM;
		w->where = W_HEAP;
		heap_up(q, v, v->n - 1);
		return GPUQ_OK;
	case W_ASIDE:
		v = &q->cqs[w->cq].aside;
		break;
	case W_ADMITTED:
		v = &q->cqs[w->cq].adm;
		break;
	default:
		w->where = (uint8_t)where;
		return GPUQ_OK;
	}
	if (queue_vpush(v, id))
		return GPUQ_ENOMEM;
	w->pos = (uint32_t)(v->n - 1);
	w->where = (uint8_t)where;
	return GPUQ_OK;
}

/* ---- timers: binary heaps of (at, uid) with lazy invalidation ---- */

static bool timer_less(const queue_t *q, const timer_t_ *a, const timer_t_ *b)
{
	(void)q;
	if (a->at != b->at)
		return a->at < b->at;
	return a->wl < b->wl; /* ties are re-sorted by uid where order shows */
}

int queue_timer_push(queue_t *q, timers_t *t, int64_t at, uint32_t wl)
{
	size_t i;

	if (queue_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return GPUQ_ENOMEM;
	i = t->n++;
	t->v[i] = (timer_t_){at, wl, W(q, wl)->epoch};
	while (i > 0 && timer_less(q, &t->v[i], &t->v[(i - 1) / 2])) {
		timer_t_ x = t->v[i];

		t->v[i] = t->v[(i - 1) / 2];
		t->v[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
	return GPUQ_OK;
}

int queue_exec_arm(queue_t *q, uint32_t id)
{
	int64_t at = queue_exec_deadline(q, W(q, id));

	return at == INT64_MAX ? GPUQ_OK : queue_timer_push(q, &q->exec_timers, at, id);
}

void queue_timer_pop(queue_t *q, timers_t *t)
{
	size_t i = 0;

	t->v[0] = t->v[--t->n];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < t->n && timer_less(q, &t->v[l], &t->v[m]))
			m = l;
		if (l + 1 < t->n && timer_less(q, &t->v[l + 1], &t->v[m]))
			m = l + 1;
		if (m == i)
			break;
		timer_t_ x = t->v[i];

		t->v[i] = t->v[m];
		t->v[m] = x;
		i = m;
	}
}

/* Drop stale entries at the top (the workload changed or died since). */
void queue_timer_clean(queue_t *q, timers_t *t)
{
	while (t->n) {
		const wl_t *w = W(q, t->v[0].wl);

		if (w->live && w->epoch == t->v[0].epoch)
			return;
		queue_timer_pop(q, t);
	}
}

/* Timers refer to workload ids; a deleted id must not be reused while a
 * timer still names it with a matching epoch. Epochs queue_keep counting across
 * reuse (wl slots are not zeroed), so a stale entry never matches. */

/* ================================================================== */
/* Workload lifecycle                                                  */
/* ================================================================== */

static bool uid_eq(const void *ctx, uint32_t id, const void *key)
{
	const queue_t *q = ctx;

	return strcmp(wl_uid(Wc(q, id)), key) == 0;
}

int queue_workload_find(const queue_t *q, const char *uid, queue_wl_t *id)
{
	if (!uid)
		return GPUQ_ENOTFOUND;
	return queue_map_find(&q->uids, gpuq_fnv1a32_str(GPUQ_FNV1A32_BASIS, uid), uid_eq, q, uid,
			      id)
		   ? GPUQ_OK
		   : GPUQ_ENOTFOUND;
}

int queue_lq_lookup(const queue_t *q, const char *ns, const char *name, uint32_t *id)
{
	char key[2 * QUEUE_NAME_MAX + 2];
	size_t a = strlen(ns), b = strlen(name);

	if (a + b + 2 > sizeof(key))
		return GPUQ_ENOTFOUND;
	memcpy(key, ns, a + 1);
	key[a] = '/';
	memcpy(key + a + 1, name, b + 1);
	return queue_names_find(&q->lq_names, key, id);
}

bool queue_ready_watched(const queue_t *q, const wl_t *w)
{
	return q->cfg.ready_timeout_ms > 0 &&
	       (q->cfg.ready_scope == QUEUE_READY_ALL || w->gang_total > 0);
}

bool queue_gang_waiting(const wl_t *w)
{
	return w->gang_total > 0 && w->pods_present < w->gang_total;
}

/* Make a pending workload eligible (heap) or park it waiting for its gang. */
int queue_wl_enqueue(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);

	w->why = WHY_NONE;
	if (queue_gang_waiting(w)) {
		w->wait = QUEUE_WAIT_GANG;
		w->where = W_NONE;
		return GPUQ_OK;
	}
	w->wait = QUEUE_WAIT_NONE;
	if (queue_wl_attach(q, id, W_HEAP))
		return GPUQ_ENOMEM;
	queue_cohort_touch(q, q->cqs[w->cq].cohort, false);
	return GPUQ_OK;
}

void queue_wl_free(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);

	for (uint8_t i = 0; i < w->n_ps; i++)
		queue_tmpl_release(q, wl_ps(w)[i].tmpl);
	queue_topo_release(q, id);
	free(w->strs);
	free(w->psx);
	free(w->asg);
	w->strs = NULL;
	w->psx = NULL;
	w->asg = NULL;
	w->n_asg = 0;
	w->n_ps = 0;
	w->live = false;
	w->epoch++;
}

static int wl_spec_check(const queue_workload_spec_t *s, gpuq_diag_t *diag)
{
	int rc = queue_check_name("workload uid", s->uid, false, diag);

	if (!rc)
		rc = queue_check_name("workload namespace", s->namespace_, false, diag);
	if (!rc)
		rc = queue_check_name("workload name", s->name, false, diag);
	if (!rc)
		rc = queue_check_name("workload local_queue", s->local_queue, false, diag);
	if (rc)
		return rc;
	if (!s->n_podsets || s->n_podsets > QUEUE_PODSETS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "workload %s: needs 1..%d pod sets", s->uid,
				     QUEUE_PODSETS_MAX);
	for (size_t i = 0; i < s->n_podsets; i++)
		if (s->podsets[i].count < 1 || s->podsets[i].count > 1000000)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "workload %s: pod set %zu: count %d "
					     "outside 1..1000000",
					     s->uid, i, s->podsets[i].count);
	if (s->created_ms < -QUEUE_TIME_MAX || s->created_ms > QUEUE_TIME_MAX)
		return gpuq_diag_set(diag, GPUQ_ERANGE,
				     "workload %s: creation time %" PRId64 " out of range", s->uid,
				     s->created_ms);
	if (s->gang_total < 0 || s->gang_total > 1000000 || s->pods_present < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "workload %s: bad gang counts", s->uid);
	if (s->max_exec_s < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "workload %s: maximum execution time %d s",
				     s->uid, s->max_exec_s);
	if (s->run_bound_s < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "workload %s: run bound %d s", s->uid,
				     s->run_bound_s);
	return GPUQ_OK;
}

/* Allocate a workload slot (epochs keep counting over reuse). */
static int wl_slot(queue_t *q, uint32_t *id)
{
	if (q->free_wls.n) {
		*id = q->free_wls.v[--q->free_wls.n];
		return GPUQ_OK;
	}
	if (q->n_wls >= UINT32_MAX - 1)
		return GPUQ_ELIMIT;
	if (queue_grow_quarter(&q->wls, &q->cap_wls, q->n_wls + 1, sizeof(*q->wls)))
		return GPUQ_ENOMEM;
	memset(W(q, (uint32_t)q->n_wls), 0, sizeof(wl_t));
	*id = (uint32_t)q->n_wls++;
	return GPUQ_OK;
}

/* A reference to the template of every pod set of s (all or none). */
static int wl_templates(queue_t *q, const queue_workload_spec_t *s, uint32_t *tids,
			gpuq_diag_t *diag)
{
	size_t built = 0;
	int rc = GPUQ_OK;

	for (; built < s->n_podsets; built++) {
		tmpl_t t;

		rc = tmpl_build(q, &s->podsets[built], &t, diag);
		if (!rc)
			rc = tmpl_intern(q, &t, &tids[built]);
		if (rc)
			break;
	}
	if (rc)
		while (built--)
			queue_tmpl_release(q, tids[built]);
	return rc;
}

/* What spec s says of a workload into w (its pod sets' array w->psx in
 * place for more than one): pod sets on templates tids, LocalQueue lq and
 * its ClusterQueue, priority, creation time, gang counts. Both a new
 * workload's and an update's. */
static void wl_take_spec(const queue_t *q, wl_t *w, const queue_workload_spec_t *s, uint32_t lq,
			 const uint32_t *tids)
{
	w->n_ps = (uint8_t)s->n_podsets;
	for (size_t i = 0; i < s->n_podsets; i++) {
		psref_t *p = s->n_podsets == 1 ? &w->ps1 : &w->psx[i];

		p->tmpl = tids[i];
		p->count = s->podsets[i].count;
	}
	w->lq = lq;
	w->cq = q->lqs[lq].cq;
	w->priority = s->priority;
	w->created = s->created_ms;
	w->gang_total = s->gang_total;
	w->pods_present = s->pods_present > s->gang_total ? s->gang_total : s->pods_present;
	w->max_exec_s = s->max_exec_s;
	w->run_bound_s = s->run_bound_s;
}

/* Create the workload object from a spec; pending, not yet enqueued. */
int queue_wl_create(queue_t *q, const queue_workload_spec_t *s, uint32_t *out, gpuq_diag_t *diag)
{
	uint32_t lq, id, tids[QUEUE_PODSETS_MAX];
	size_t lu, lm, built = 0;
	uint32_t epoch;
	wl_t *w;
	int rc;

	rc = wl_spec_check(s, diag);
	if (rc)
		return rc;
	if (queue_lq_lookup(q, s->namespace_, s->local_queue, &lq) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "workload %s: LocalQueue %s/%s not found", s->uid,
				     s->namespace_, s->local_queue);
	if (queue_workload_find(q, s->uid, &id) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "workload uid %s already exists", s->uid);
	if (q->n_live >= q->cfg.workloads_max)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %u workloads",
				     q->cfg.workloads_max);
	rc = wl_templates(q, s, tids, diag);
	if (rc)
		return rc;
	built = s->n_podsets;
	if (queue_map_reserve(&q->uids)) {
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	rc = wl_slot(q, &id);
	if (rc)
		goto fail;
	w = W(q, id);
	epoch = w->epoch;
	memset(w, 0, sizeof(*w));
	w->epoch = epoch + 1;
	lu = strlen(s->uid);
	lm = strlen(s->name);
	w->strs = malloc(lu + lm + 2); /* the namespace is its LocalQueue's */
	if (s->n_podsets > 1)
		w->psx = calloc(s->n_podsets, sizeof(*w->psx));
	if (!w->strs || (s->n_podsets > 1 && !w->psx)) {
		free(w->strs);
		free(w->psx);
		w->strs = NULL;
		w->psx = NULL;
		(void)queue_vpush(&q->free_wls, id);
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	memcpy(w->strs, s->uid, lu + 1);
	memcpy(w->strs + lu + 1, s->name, lm + 1);
	w->name_off = (uint16_t)(lu + 1);
	wl_take_spec(q, w, s, lq, tids);
	w->admitted_ms = -1;
	w->idle_since = w->predicted = -1;
	w->state = QUEUE_WL_PENDING;
	w->why_res = w->why_flavor = QUEUE_NONE;
	w->live = true;
	w->uid_hash = gpuq_fnv1a32_str(GPUQ_FNV1A32_BASIS, s->uid);
	queue_map_put(&q->uids, w->uid_hash, id);
	q->n_live++;
	*out = id;
	return GPUQ_OK;
fail:
	while (built--)
		queue_tmpl_release(q, tids[built]);
	return rc;
}

int queue_workload_add(queue_t *q, const queue_workload_spec_t *spec, int64_t now, queue_wl_t *id,
		       gpuq_diag_t *diag)
{
	uint32_t wid = QUEUE_NONE;
	wl_t *w;
	int rc;

	(void)now;
	rc = queue_wl_create(q, spec, &wid, diag);
	if (rc)
		return rc;
	w = W(q, wid);
	q->lqs[w->lq].n_pending++;
	q->cqs[w->cq].n_pending++;
	rc = queue_wl_enqueue(q, wid);
	if (rc) {
		q->lqs[w->lq].n_pending--;
		q->cqs[w->cq].n_pending--;
		queue_map_del(&q->uids, w->uid_hash, wid);
		queue_wl_free(q, wid);
		q->n_live--;
		(void)queue_vpush(&q->free_wls, wid);
		return rc;
	}
	queue_mark_wl(q, w);
	if (id)
		*id = wid;
	return GPUQ_OK;
}

static int find_live(const queue_t *q, const char *uid, uint32_t *id)
{
	return queue_workload_find(q, uid, id);
}

/* A pending preemptor's kept plan (preempt.c keeps it) goes: here, beside
 * the workload's other memory, so updating one calls no preemption code. */
void queue_plan_drop(queue_t *q, uint32_t wid)
{
	wl_t *w = W(q, wid);

	free(w->asg);
	w->asg = NULL;
	w->n_asg = 0;
}

/* Whether w asks for exactly what s says (pod sets by template and count,
 * queue, priority, gang total and pods present): an update that changes
 * nothing leaves it be. */
static bool wl_same_spec(queue_t *q, const wl_t *w, uint32_t lq, const queue_workload_spec_t *s,
			 const uint32_t *tids)
{
	int32_t present = s->pods_present > s->gang_total ? s->gang_total : s->pods_present;

	if (w->lq != lq || w->priority != s->priority || w->n_ps != s->n_podsets ||
	    w->gang_total != s->gang_total || w->created != s->created_ms ||
	    (s->gang_total && w->pods_present != present))
		return false;
	for (size_t i = 0; i < s->n_podsets; i++)
		if (wl_ps(w)[i].tmpl != tids[i] || wl_ps(w)[i].count != s->podsets[i].count)
			return false;
	(void)q;
	return true;
}

/* A workload's own wall-clock limit follows an update at once, whatever
 * its state (an admitted one's deadline is its caller's to arm). */
static void limit_follow(queue_t *q, wl_t *w, int32_t max_exec_s, bool *changed)
{
	if (w->max_exec_s == max_exec_s)
		return;
	w->max_exec_s = max_exec_s;
	queue_mark_wl(q, w);
	if (changed)
		*changed = true;
}

/* A workload's run bound follows an update at once, whatever its state
 * (nothing to arm: the bounded wait reads it at each cycle). */
static void bound_follow(queue_t *q, wl_t *w, int32_t run_bound_s, bool *changed)
{
	if (w->run_bound_s == run_bound_s)
		return;
	w->run_bound_s = run_bound_s;
	queue_cohort_touch(q, q->cqs[w->cq].cohort, false); /* reserved anew */
	if (changed)
		*changed = true;
}

/* An admitted or finished workload w's update: nothing to do when s asks
 * for what w holds (a status-only event), GPUQ_EAGAIN when it asks for
 * anything else (a queue or template that cannot be found is "else" too). */
static int settled_update(queue_t *q, uint32_t id, const queue_workload_spec_t *s, bool *changed,
			  gpuq_diag_t *diag)
{
	uint32_t lq, tids[QUEUE_PODSETS_MAX];
	wl_t *w = W(q, id);
	bool same = false, same_but_limit;

	if (queue_lq_lookup(q, s->namespace_, s->local_queue, &lq) == GPUQ_OK &&
	    wl_templates(q, s, tids, NULL) == GPUQ_OK) {
		same = wl_same_spec(q, w, lq, s, tids);
		for (size_t i = 0; i < s->n_podsets; i++)
			queue_tmpl_release(q, tids[i]);
	}
	if (same)
		bound_follow(q, w, s->run_bound_s, changed);
	same_but_limit = same && w->max_exec_s != s->max_exec_s;
	same = same && !same_but_limit;
	if (same)
		return GPUQ_OK;
	if (!same_but_limit)
		return gpuq_diag_set(diag, GPUQ_EAGAIN,
				     "workload %s: only a pending workload changes; this one is "
				     "admitted or finished and asks for something else now",
				     s->uid);
	/* room for its new deadline first: all or nothing */
	if (w->state == QUEUE_WL_ADMITTED &&
	    queue_grow(&q->exec_timers.v, &q->exec_timers.cap, q->exec_timers.n + 1,
		       sizeof(*q->exec_timers.v)))
		return GPUQ_ENOMEM;
	limit_follow(q, w, s->max_exec_s, changed);
	if (w->state == QUEUE_WL_ADMITTED)
		(void)queue_exec_arm(q, id); /* the room is there */
	return GPUQ_OK;
}

int queue_workload_update(queue_t *q, const queue_workload_spec_t *s, int64_t now, bool *changed,
			  gpuq_diag_t *diag)
{
	uint32_t id, lq, tids[QUEUE_PODSETS_MAX];
	psref_t *psx = NULL;
	u32vec_t *heap;
	wl_t *w;
	int rc;
	bool backoff, reactivate;

	(void)now;
	if (changed)
		*changed = false;
	rc = wl_spec_check(s, diag);
	if (rc)
		return rc;
	if (find_live(q, s->uid, &id))
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "workload uid %s not found", s->uid);
	w = W(q, id);
	if (w->state != QUEUE_WL_PENDING)
		return settled_update(q, id, s, changed, diag);
	if (queue_lq_lookup(q, s->namespace_, s->local_queue, &lq) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "workload %s: LocalQueue %s/%s not found", s->uid,
				     s->namespace_, s->local_queue);
	if (strcmp(s->namespace_, q->lqs[w->lq].ns) != 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "workload %s: namespace %s cannot change (was %s)", s->uid,
				     s->namespace_, q->lqs[w->lq].ns);
	rc = wl_templates(q, s, tids, diag);
	if (rc)
		return rc;
	reactivate = w->wait == QUEUE_WAIT_DEACTIVATED && w->max_exec_s != s->max_exec_s;
	if (wl_same_spec(q, w, lq, s, tids) && !reactivate) {
		for (size_t i = 0; i < s->n_podsets; i++)
			queue_tmpl_release(q, tids[i]);
		limit_follow(q, w, s->max_exec_s, changed); /* for its next admission */
		bound_follow(q, w, s->run_bound_s, changed);
		return GPUQ_OK;
	}
	/* everything that can fail before anything changes: the pod sets'
	   array and room in the heap it goes back to */
	heap = &q->lqs[lq].heap;
	if ((s->n_podsets > 1 && !(psx = calloc(s->n_podsets, sizeof(*psx)))) ||
	    queue_grow(&heap->v, &heap->cap, heap->n + 1, sizeof(*heap->v))) {
		free(psx);
		for (size_t i = 0; i < s->n_podsets; i++)
			queue_tmpl_release(q, tids[i]);
		return GPUQ_ENOMEM;
	}
	backoff = w->where == W_BACKOFF;
	if (!backoff)
		queue_wl_detach(q, id);
	queue_plan_drop(q, id); /* a preemptor's plan was for what it asked before */
	q->lqs[w->lq].n_pending--;
	q->cqs[w->cq].n_pending--;
	queue_cohort_touch(q, q->cqs[w->cq].cohort, w->wait == QUEUE_WAIT_PREEMPTING);
	queue_mark_lq(q, w->lq);
	queue_mark_cq(q, w->cq);
	for (uint8_t i = 0; i < w->n_ps; i++)
		queue_tmpl_release(q, wl_ps(w)[i].tmpl);
	free(w->psx);
	w->psx = psx;
	wl_take_spec(q, w, s, lq, tids);
	w->why = WHY_NONE;
	w->why_res = w->why_flavor = QUEUE_NONE;
	w->predicted = -1;
	q->lqs[w->lq].n_pending++;
	q->cqs[w->cq].n_pending++;
	queue_mark_lq(q, w->lq);
	queue_mark_cq(q, w->cq);
	queue_mark_wl(q, w);
	if (changed)
		*changed = true;
	if (backoff) /* its backoff runs on; its timer enqueues it where it now is */
		return GPUQ_OK;
	if (w->wait == QUEUE_WAIT_DEACTIVATED && !reactivate)
		return GPUQ_OK; /* out of the queue until a person changes its limit */
	if (reactivate)
		w->exec_ms = 0;		/* a fresh start, as Kueue's reactivation */
	return queue_wl_enqueue(q, id); /* the room is there: cannot fail */
}

int queue_workload_limit_set(queue_t *q, const char *uid, int32_t max_exec_s, int64_t now,
			     bool *changed)
{
	uint32_t id;
	wl_t *w;
	bool back;

	(void)now;
	if (changed)
		*changed = false;
	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (max_exec_s < 0)
		return GPUQ_EINVAL;
	if (w->max_exec_s == max_exec_s)
		return GPUQ_OK;
	back = w->state == QUEUE_WL_PENDING && w->wait == QUEUE_WAIT_DEACTIVATED;
	/* room first: all or nothing */
	if (w->state == QUEUE_WL_ADMITTED
		? queue_grow(&q->exec_timers.v, &q->exec_timers.cap, q->exec_timers.n + 1,
			     sizeof(*q->exec_timers.v))
		: back && queue_grow(&q->lqs[w->lq].heap.v, &q->lqs[w->lq].heap.cap,
				     q->lqs[w->lq].heap.n + 1, sizeof(*q->lqs[w->lq].heap.v)))
		return GPUQ_ENOMEM;
	limit_follow(q, w, max_exec_s, changed);
	if (w->state == QUEUE_WL_ADMITTED)
		(void)queue_exec_arm(q, id); /* the room is there */
	if (!back)
		return GPUQ_OK;
	w->exec_ms = 0;			/* a fresh start, as Kueue's reactivation */
	return queue_wl_enqueue(q, id); /* the room is there: cannot fail */
}

int queue_workload_pods_add(queue_t *q, const char *uid, int32_t n, int64_t now)
{
	uint32_t id;
	wl_t *w;

	(void)now;
	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (!w->gang_total || n < 0)
		return GPUQ_EINVAL;
	if (n > w->gang_total - w->pods_present)
		n = w->gang_total - w->pods_present;
	w->pods_present += n;
	queue_mark_wl(q, w);
	if (w->state == QUEUE_WL_PENDING && w->wait == QUEUE_WAIT_GANG && !queue_gang_waiting(w))
		return queue_wl_enqueue(q, id);
	return GPUQ_OK;
}

int queue_workload_pods_ready(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;
	wl_t *w;

	(void)now;
	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (w->state != QUEUE_WL_ADMITTED)
		return GPUQ_EINVAL;
	w->ready = true;
	w->requeues = 0;
	w->epoch++;		 /* its Ready timer is void */
	queue_econ_rearm(q, id); /* ... not its minimum runtime nor its idle spell */
	queue_mark_wl(q, w);
	return GPUQ_OK;
}

/* Undo what admission did to usage and containers (ADMITTED or EVICTING). */
static void wl_unadmit(queue_t *q, uint32_t id, int64_t now)
{
	wl_t *w = W(q, id);
	cq_t *c = &q->cqs[w->cq];

	if (w->state == QUEUE_WL_EVICTING) {
		for (uint32_t i = 0; i < w->n_asg; i++)
			c->slots[w->asg[i].slot].evicting -= w->asg[i].a.amount;
		cohort_of(q, c)->n_evicting--;
	}
	queue_topo_release(q, id);
	queue_wl_charge(q, id, -1);
	queue_usage_close(q, w, now);
	if (now > w->admitted_ms) /* the span it held quota counts to its limit */
		w->exec_ms += now - w->admitted_ms;
	queue_lq_cur_add(q, w, -1);
	queue_wl_detach(q, id);
	q->lqs[w->lq].n_admitted--;
	w->epoch++;
	queue_cohort_touch(q, c->cohort, true);
	queue_mark_cq(q, w->cq);
}

int queue_workload_finish(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;
	wl_t *w;
	lq_t *l;

	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (w->state != QUEUE_WL_ADMITTED && w->state != QUEUE_WL_EVICTING)
		return GPUQ_EINVAL;
	wl_unadmit(q, id, now);
	l = &q->lqs[w->lq];
	for (uint32_t i = 0; i < w->n_asg; i++)
		l->used_ms += (double)w->asg[i].a.amount *
			      (double)(now > w->admitted_ms ? now - w->admitted_ms : 0);
	l->ctr.finishes++;
	q->cqs[w->cq].ctr.finishes++;
	w->state = QUEUE_WL_FINISHED;
	w->wait = QUEUE_WAIT_NONE;
	queue_mark_wl(q, w);
	queue_mark_lq(q, w->lq);
	return GPUQ_OK;
}

static int64_t backoff_ms(const queue_t *q, uint32_t requeues)
{
	int64_t b = q->cfg.backoff_base_ms;

	for (uint32_t i = 1; i < requeues && b < q->cfg.backoff_max_ms; i++)
		b = b > INT64_MAX / 2 ? INT64_MAX : b * 2;
	return b < q->cfg.backoff_max_ms ? b : q->cfg.backoff_max_ms;
}

/* An EVICTING workload's pods are gone: free quota and requeue it. */
int queue_wl_release(queue_t *q, uint32_t id, int64_t now)
{
	wl_t *w = W(q, id);
	timers_t *bt = &q->backoff_timers;
	u32vec_t *heap = &q->lqs[w->lq].heap;
	bool backoff = w->evict_reason == QUEUE_EVICT_READY_TIMEOUT ||
		       w->evict_reason == QUEUE_EVICT_IDLE_RECLAIM;
	bool deactivate = w->evict_reason == QUEUE_EVICT_MAX_EXEC;

	/* room first: once the state below changes, nothing may fail */
	if (backoff ? queue_grow(&bt->v, &bt->cap, bt->n + 1, sizeof(*bt->v))
		    : queue_grow(&heap->v, &heap->cap, heap->n + 1, sizeof(*heap->v)))
		return GPUQ_ENOMEM;
	wl_unadmit(q, id, now);
	free(w->asg);
	w->asg = NULL;
	w->n_asg = 0;
	w->state = QUEUE_WL_PENDING;
	w->ready = false;
	w->predicted = -1; /* was its idle_seen while admitted */
	q->lqs[w->lq].n_pending++;
	q->cqs[w->cq].n_pending++;
	queue_mark_wl(q, w);
	queue_mark_lq(q, w->lq);
	if (deactivate) { /* out of every queue until a person acts */
		w->wait = QUEUE_WAIT_DEACTIVATED;
		w->where = W_NONE;
		w->why = WHY_NONE;
		return GPUQ_OK;
	}
	if (backoff) {
		/* a Ready timeout doubles its backoff each time; an idle reclaim
		 * waits one base backoff, so those that waited go first */
		if (w->evict_reason == QUEUE_EVICT_READY_TIMEOUT)
			w->requeues++;
		w->eligible_ms =
		    now + (w->evict_reason == QUEUE_EVICT_READY_TIMEOUT ? backoff_ms(q, w->requeues)
									: q->cfg.backoff_base_ms);
		w->wait = QUEUE_WAIT_BACKOFF;
		w->where = W_BACKOFF;
		return queue_timer_push(q, &q->backoff_timers, w->eligible_ms, id);
	}
	return queue_wl_enqueue(q, id);
}

int queue_workload_evicted(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;

	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	if (W(q, id)->state != QUEUE_WL_EVICTING)
		return GPUQ_EINVAL;
	return queue_wl_release(q, id, now);
}

int queue_workload_delete(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;
	wl_t *w;

	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	queue_mark_wl(q, w);
	switch (w->state) {
	case QUEUE_WL_PENDING:
		queue_wl_detach(q, id);
		q->lqs[w->lq].n_pending--;
		q->cqs[w->cq].n_pending--;
		/* it may have been a StrictFIFO head, a preemptor holding room,
		   or the holder of a reservation others were set aside for */
		queue_cohort_touch(q, q->cqs[w->cq].cohort,
				   w->wait == QUEUE_WAIT_PREEMPTING || q->cqs[w->cq].resv == id);
		if (q->cqs[w->cq].resv == id)
			q->cqs[w->cq].resv = QUEUE_NONE;
		break;
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
		wl_unadmit(q, id, now);
		queue_mark_lq(q, w->lq);
		break;
	default:
		break;
	}
	queue_map_del(&q->uids, w->uid_hash, id);
	queue_wl_free(q, id);
	q->n_live--;
	(void)queue_vpush(&q->free_wls, id); /* a lost free id only costs memory */
	return GPUQ_OK;
}

/* Evict an admitted workload (reason queue_evict_reason_t). */
int queue_wl_evict(queue_t *q, uint32_t id, uint32_t preemptor, int reason)
{
	wl_t *w = W(q, id);
	cq_t *c = &q->cqs[w->cq];
	lq_t *l = &q->lqs[w->lq];
	int rc;

	rc = queue_emit_eviction(q, id, preemptor, reason);
	if (rc)
		return rc;
	w->state = QUEUE_WL_EVICTING;
	w->evict_reason = (uint8_t)reason;
	w->epoch++;
	for (uint32_t i = 0; i < w->n_asg; i++)
		c->slots[w->asg[i].slot].evicting += w->asg[i].a.amount;
	cohort_of(q, c)->n_evicting++;
	c->ctr.evictions++;
	l->ctr.evictions++;
	if (reason <= QUEUE_EVICT_RECLAIM_WHILE_BORROWING || reason == QUEUE_EVICT_IDLE_RECLAIM) {
		w->preemptions++;
		c->ctr.preemptions++;
		l->ctr.preemptions++;
	}
	queue_mark_wl(q, w);
	queue_mark_cq(q, w->cq);
	queue_mark_lq(q, w->lq);
	return GPUQ_OK;
}

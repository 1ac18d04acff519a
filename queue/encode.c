/*
 * queue/encode.c: the core's records encoded for a store (queue.h's record
 * format, version REC_VERSION). Reads the core only.
 */
#include "queue/internal.h"

#include "base/bytes.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef gpuq_wr_t wr_t;

static void put_ctr(wr_t *w, const counters_t *c)
{
	gpuq_put_u64(w, c->admissions);
	gpuq_put_u64(w, c->preemptions);
	gpuq_put_u64(w, c->evictions);
	gpuq_put_u64(w, c->finishes);
}

static void enc_meta(const queue_t *q, wr_t *w)
{
	uint32_t n = 0;

	gpuq_put_u8(w, REC_VERSION);
	gpuq_put_u64(w, q->cycles);
	gpuq_put_u64(w, (uint64_t)q->last_now);
	gpuq_put_u64(w, (uint64_t)q->last_sample);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		n += q->cohorts[i].capacity_up;
	gpuq_put_u32(w, n);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		if (q->cohorts[i].capacity_up)
			gpuq_put_str(w, q->cohorts[i].name);
}

static void enc_cq(const queue_t *q, uint32_t cq, wr_t *w)
{
	const cq_t *c = &q->cqs[cq];

	gpuq_put_u8(w, REC_VERSION);
	put_ctr(w, &c->ctr);
	gpuq_put_u32(w, c->n_slots);
	for (uint32_t s = 0; s < c->n_slots; s++) {
		gpuq_put_str(w, queue_flv_name(q, c->slots[s].flavor));
		gpuq_put_str(w, queue_res_name(q, c->slots[s].res));
		gpuq_put_u64(w, (uint64_t)c->slots[s].usage);
	}
}

static void enc_lq(const queue_t *q, uint32_t lq, wr_t *w)
{
	const lq_t *l = &q->lqs[lq];

	gpuq_put_u8(w, REC_VERSION);
	gpuq_put_f64(w, l->usage);
	gpuq_put_f64(w, l->used_ms);
	put_ctr(w, &l->ctr);
}

/* A resource name in a workload record: a well-known one by its index
 * (REC_VERSION_WL), any other as its text. */
static void put_res(wr_t *w, const char *name)
{
	int k = quota_known_resource(name);

	if (k >= 0)
		gpuq_put_var(w, (uint64_t)(int64_t) - (k + 1), 32);
	else
		gpuq_put_str(w, name);
}

static void enc_tmpl(const queue_t *q, const psref_t *p, wr_t *w)
{
	const tmpl_t *t = &q->tmpls[p->tmpl];

	gpuq_put_str(w, q->strs.s[t->name]);
	gpuq_put_u32(w, (uint32_t)p->count);
	gpuq_put_u8(w, t->n_req);
	for (uint32_t i = 0; i < t->n_req; i++) {
		put_res(w, queue_res_name(q, t->res[i]));
		gpuq_put_u64(w, (uint64_t)t->amt[i]);
	}
	gpuq_put_u8(w, t->n_sel);
	for (uint32_t i = 0; i < t->n_sel; i++) {
		gpuq_put_str(w, q->strs.s[t->sel[i].key]);
		gpuq_put_str(w, q->strs.s[t->sel[i].val]);
	}
	gpuq_put_u8(w, t->n_aff);
	for (uint32_t i = 0; i < t->n_aff; i++) {
		gpuq_put_str(w, q->strs.s[t->aff[i].key]);
		gpuq_put_u8(w, (uint8_t)t->aff[i].n);
		for (uint32_t j = 0; j < t->aff[i].n; j++)
			gpuq_put_str(w, q->strs.s[t->affvals[t->aff[i].off + j]]);
	}
	gpuq_put_u8(w, t->n_tol);
	for (uint32_t i = 0; i < t->n_tol; i++) {
		gpuq_put_str(w, q->strs.s[t->tol[i].key]);
		gpuq_put_u8(w, t->tol[i].op);
		gpuq_put_str(w, q->strs.s[t->tol[i].val]);
		gpuq_put_u8(w, t->tol[i].effect);
	}
}

static bool wl_has_topology(const queue_t *q, const wl_t *w)
{
	if (w->place)
		return true;
	for (uint8_t i = 0; i < w->n_ps; i++) {
		const tmpl_t *t = &q->tmpls[wl_ps(w)[i].tmpl];

		if (t->topo_mode || t->slice_size || t->group != QUEUE_NONE)
			return true;
	}
	return false;
}

static const char *str_or_empty(const queue_t *q, uint32_t id)
{
	return id == QUEUE_NONE ? "" : q->strs.s[id];
}

/* A workload record's topology block (version 5): one byte 0 when it has
 * neither a pod set's topology ask nor a placement. */
static void enc_topo(const queue_t *q, const wl_t *w, wr_t *wr)
{
	if (!wl_has_topology(q, w)) {
		gpuq_put_u8(wr, 0);
		return;
	}
	gpuq_put_u8(wr, 1);
	for (uint8_t i = 0; i < w->n_ps; i++) {
		const tmpl_t *t = &q->tmpls[wl_ps(w)[i].tmpl];

		gpuq_put_u8(wr, t->topo_mode);
		gpuq_put_str(wr, str_or_empty(q, t->topo_level));
		gpuq_put_str(wr, str_or_empty(q, t->slice_level));
		gpuq_put_u32(wr, (uint32_t)t->slice_size);
		gpuq_put_str(wr, str_or_empty(q, t->group));
	}
	gpuq_put_u32(wr, w->place ? w->place->n : 0);
	for (uint32_t i = 0; w->place && i < w->place->n; i++) {
		const place_t *e = &w->place->e[i];

		gpuq_put_str(wr, queue_flv_name(q, e->flavor));
		gpuq_put_str(wr, q->node_names.s[e->node]);
		gpuq_put_u8(wr, (uint8_t)e->ps);
		gpuq_put_u32(wr, (uint32_t)e->count);
	}
}

static void enc_wl(const queue_t *q, uint32_t id, wr_t *w)
{
	const wl_t *x = Wc(q, id);

	gpuq_put_u8(w, REC_VERSION_WL);
	w->varint = true; /* the rest in varints */
	gpuq_put_str(w, q->lqs[x->lq].ns);
	gpuq_put_str(w, x->strs + x->name_off);
	gpuq_put_str(w, strchr(q->lqs[x->lq].name, '/') + 1);
	gpuq_put_u32(w, (uint32_t)x->priority);
	gpuq_put_u64(w, (uint64_t)x->created);
	gpuq_put_u32(w, (uint32_t)x->gang_total);
	gpuq_put_u32(w, (uint32_t)x->pods_present);
	gpuq_put_u8(w, x->state);
	gpuq_put_u8(w, x->wait);
	gpuq_put_u8(w, x->where == W_FLIGHT ? W_HEAP : x->where);
	gpuq_put_u8(w, x->why);
	gpuq_put_u8(w, x->evict_reason);
	gpuq_put_u8(w, x->ready);
	gpuq_put_u64(w, (uint64_t)x->admitted_ms);
	gpuq_put_u64(w, (uint64_t)x->eligible_ms);
	gpuq_put_u64(w, (uint64_t)x->why_need);
	gpuq_put_u64(w, (uint64_t)x->why_free);
	put_res(w, x->why_res != QUEUE_NONE ? queue_res_name(q, x->why_res) : "");
	gpuq_put_str(w, x->why_flavor != QUEUE_NONE ? queue_flv_name(q, x->why_flavor) : "");
	gpuq_put_u32(w, x->requeues);
	gpuq_put_u32(w, x->preemptions);
	gpuq_put_u64(w, x->admit_cycle);
	gpuq_put_u8(w, x->n_ps);
	for (uint8_t i = 0; i < x->n_ps; i++)
		enc_tmpl(q, &wl_ps(x)[i], w);
	gpuq_put_u32(w, x->n_asg);
	for (uint32_t i = 0; i < x->n_asg; i++) {
		gpuq_put_u8(w, (uint8_t)x->asg[i].a.podset);
		put_res(w, queue_res_name(q, x->asg[i].a.resource));
		gpuq_put_str(w, queue_flv_name(q, x->asg[i].a.flavor));
		gpuq_put_u64(w, (uint64_t)x->asg[i].a.amount);
	}
	gpuq_put_u64(w, (uint64_t)x->exec_ms); /* version 4 */
	gpuq_put_u32(w, (uint32_t)x->max_exec_s);
	enc_topo(q, x, w); /* version 5 */
}

/* Copy a record key into a NUL-terminated name. */
int queue_key_str(const uint8_t *key, size_t len, char out[QUEUE_KEY_MAX + 1])
{
	if (len > QUEUE_KEY_MAX || (len && memchr(key, 0, len)))
		return GPUQ_ENOTFOUND;
	memcpy(out, key, len);
	out[len] = '\0';
	return GPUQ_OK;
}

int queue_record_encode(const queue_t *q, queue_rec_type_t type, const uint8_t *key, size_t key_len,
			uint8_t *buf, size_t cap, size_t *len)
{
	char k[QUEUE_KEY_MAX + 1] = "";
	wr_t w = {buf, cap, 0, false};
	uint32_t id;

	*len = 0;
	if (queue_key_str(key, key_len, k))
		return GPUQ_ENOTFOUND;
	switch (type) {
	case QUEUE_REC_META:
		if (strcmp(k, "meta") != 0)
			return GPUQ_ENOTFOUND;
		enc_meta(q, &w);
		break;
	case QUEUE_REC_CQ:
		if (queue_names_find(&q->cq_names, k, &id))
			return GPUQ_ENOTFOUND;
		enc_cq(q, id, &w);
		break;
	case QUEUE_REC_TENANT:
		if (queue_names_find(&q->lq_names, k, &id))
			return GPUQ_ENOTFOUND;
		enc_lq(q, id, &w);
		break;
	case QUEUE_REC_WORKLOAD:
		if (queue_workload_find(q, k, &id))
			return GPUQ_ENOTFOUND;
		enc_wl(q, id, &w);
		break;
	case QUEUE_REC_USAGE:
		return ledger_record_encode(q->ledger, key, key_len, buf, cap, len);
	case QUEUE_REC_BUDGET:
		if (queue_budget_encode(q, k, &w))
			return GPUQ_ENOTFOUND;
		break;
	default:
		return GPUQ_ENOTFOUND;
	}
	*len = w.len;
	return w.len <= cap ? GPUQ_OK : GPUQ_ELIMIT;
}

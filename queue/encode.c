/*
 * queue/encode.c: the core's records encoded for a store (queue.h's record
 * format, version REC_VERSION). Reads the core only.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	uint8_t *b; /* output (may be NULL when cap is 0) */
	size_t cap; /* its size */
	size_t len; /* bytes produced (may exceed cap) */
} wr_t;

static void put(wr_t *w, const void *p, size_t n)
{
	if (w->len + n <= w->cap)
		memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void put_u8(wr_t *w, uint8_t v)
{
	put(w, &v, 1);
}

static void put_u64(wr_t *w, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, 8);
}

static void put_u32(wr_t *w, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, 4);
}

static void put_f64(wr_t *w, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	put_u64(w, v);
}

static void put_str(wr_t *w, const char *s)
{
	size_t n = strlen(s);

	put_u8(w, (uint8_t)(n & 0xff));
	put_u8(w, (uint8_t)(n >> 8));
	put(w, s, n);
}

static void put_ctr(wr_t *w, const counters_t *c)
{
	put_u64(w, c->admissions);
	put_u64(w, c->preemptions);
	put_u64(w, c->evictions);
	put_u64(w, c->finishes);
}

static void enc_meta(const queue_t *q, wr_t *w)
{
	uint32_t n = 0;

	put_u8(w, REC_VERSION);
	put_u64(w, q->cycles);
	put_u64(w, (uint64_t)q->last_now);
	put_u64(w, (uint64_t)q->last_sample);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		n += q->cohorts[i].capacity_up;
	put_u32(w, n);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		if (q->cohorts[i].capacity_up)
			put_str(w, q->cohorts[i].name);
}

static void enc_cq(const queue_t *q, uint32_t cq, wr_t *w)
{
	const cq_t *c = &q->cqs[cq];

	put_u8(w, REC_VERSION);
	put_ctr(w, &c->ctr);
	put_u32(w, c->n_slots);
	for (uint32_t s = 0; s < c->n_slots; s++) {
		put_str(w, queue_flv_name(q, c->slots[s].flavor));
		put_str(w, queue_res_name(q, c->slots[s].res));
		put_u64(w, (uint64_t)c->slots[s].usage);
	}
}

static void enc_lq(const queue_t *q, uint32_t lq, wr_t *w)
{
	const lq_t *l = &q->lqs[lq];

	put_u8(w, REC_VERSION);
	put_f64(w, l->usage);
	put_f64(w, l->used_ms);
	put_ctr(w, &l->ctr);
}

static void enc_tmpl(const queue_t *q, const psref_t *p, wr_t *w)
{
	const tmpl_t *t = &q->tmpls[p->tmpl];

	put_str(w, q->strs.s[t->name]);
	put_u32(w, (uint32_t)p->count);
	put_u8(w, t->n_req);
	for (uint32_t i = 0; i < t->n_req; i++) {
		put_str(w, queue_res_name(q, t->res[i]));
		put_u64(w, (uint64_t)t->amt[i]);
	}
	put_u8(w, t->n_sel);
	for (uint32_t i = 0; i < t->n_sel; i++) {
		put_str(w, q->strs.s[t->sel[i].key]);
		put_str(w, q->strs.s[t->sel[i].val]);
	}
	put_u8(w, t->n_aff);
	for (uint32_t i = 0; i < t->n_aff; i++) {
		put_str(w, q->strs.s[t->aff[i].key]);
		put_u8(w, (uint8_t)t->aff[i].n);
		for (uint32_t j = 0; j < t->aff[i].n; j++)
			put_str(w, q->strs.s[t->affvals[t->aff[i].off + j]]);
	}
	put_u8(w, t->n_tol);
	for (uint32_t i = 0; i < t->n_tol; i++) {
		put_str(w, q->strs.s[t->tol[i].key]);
		put_u8(w, t->tol[i].op);
		put_str(w, q->strs.s[t->tol[i].val]);
		put_u8(w, t->tol[i].effect);
	}
}

static void enc_wl(const queue_t *q, uint32_t id, wr_t *w)
{
	const wl_t *x = Wc(q, id);

	put_u8(w, REC_VERSION);
	put_str(w, x->strs + x->ns_off);
	put_str(w, x->strs + x->name_off);
	put_str(w, strchr(q->lqs[x->lq].name, '/') + 1);
	put_u32(w, (uint32_t)x->priority);
	put_u64(w, (uint64_t)x->created);
	put_u32(w, (uint32_t)x->gang_total);
	put_u32(w, (uint32_t)x->pods_present);
	put_u8(w, x->state);
	put_u8(w, x->wait);
	put_u8(w, x->where == W_FLIGHT ? W_HEAP : x->where);
	put_u8(w, x->why);
	put_u8(w, x->evict_reason);
	put_u8(w, x->ready);
	put_u64(w, (uint64_t)x->admitted_ms);
	put_u64(w, (uint64_t)x->eligible_ms);
	put_u64(w, (uint64_t)x->why_need);
	put_u64(w, (uint64_t)x->why_free);
	put_str(w, x->why_res != QUEUE_NONE ? queue_res_name(q, x->why_res) : "");
	put_str(w, x->why_flavor != QUEUE_NONE ? queue_flv_name(q, x->why_flavor) : "");
	put_u32(w, x->requeues);
	put_u32(w, x->preemptions);
	put_u64(w, x->admit_cycle);
	put_u8(w, x->n_ps);
	for (uint8_t i = 0; i < x->n_ps; i++)
		enc_tmpl(q, &wl_ps(x)[i], w);
	put_u32(w, x->n_asg);
	for (uint32_t i = 0; i < x->n_asg; i++) {
		put_u8(w, (uint8_t)x->asg[i].a.podset);
		put_str(w, queue_res_name(q, x->asg[i].a.resource));
		put_str(w, queue_flv_name(q, x->asg[i].a.flavor));
		put_u64(w, (uint64_t)x->asg[i].a.amount);
	}
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
	wr_t w = {buf, cap, 0};
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
	default:
		return GPUQ_ENOTFOUND;
	}
	*len = w.len;
	return w.len <= cap ? GPUQ_OK : GPUQ_ELIMIT;
}

/*
 * queue/restore.c: records applied to a fresh core on restore, each checked
 * (versions, bounds, references), then the restored core cross-checked.
 * Sits above queue.c, workload.c and assign.c, whose functions it calls.
 */
#include "queue/internal.h"

#include "base/bytes.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef gpuq_rd_t rd_t;

/* A double; one that is not finite makes the record bad. */
static double get_f64(rd_t *r)
{
	double d = gpuq_get_f64(r);

	if (!isfinite(d))
		r->bad = true;
	return d;
}

/* A string of at most QUEUE_NAME_MAX bytes without NULs into out. */
static void get_str(rd_t *r, char out[QUEUE_NAME_MAX + 1])
{
	size_t n = gpuq_get_len16(r);

	out[0] = '\0';
	if (r->bad)
		return;
	if (n > QUEUE_NAME_MAX || r->n - r->off < n || memchr(r->p + r->off, 0, n)) {
		r->bad = true;
		return;
	}
	memcpy(out, r->p + r->off, n);
	out[n] = '\0';
	r->off += n;
}

static void get_ctr(rd_t *r, counters_t *c)
{
	c->admissions = gpuq_get_u64(r);
	c->preemptions = gpuq_get_u64(r);
	c->evictions = gpuq_get_u64(r);
	c->finishes = gpuq_get_u64(r);
}

/* A time from a record: within +-QUEUE_TIME_MAX, or INT64_MIN ("never"). */
static bool time_ok(int64_t t)
{
	return t == INT64_MIN || (t >= -QUEUE_TIME_MAX && t <= QUEUE_TIME_MAX);
}

static int apply_meta(queue_t *q, rd_t *r)
{
	uint64_t cycles = gpuq_get_u64(r);
	int64_t now = (int64_t)gpuq_get_u64(r), sample = (int64_t)gpuq_get_u64(r);
	uint32_t n = gpuq_get_u32(r);
	char name[QUEUE_NAME_MAX + 1];

	rd_t names;
	uint32_t co;

	if (r->bad || n > q->cohort_names.n || !time_ok(now) || !time_ok(sample) ||
	    (sample != INT64_MIN && now != INT64_MIN && sample > now))
		return GPUQ_ECORRUPT;
	names = *r;
	for (uint32_t i = 0; i < n; i++) {
		get_str(r, name);
		if (r->bad || queue_names_find(&q->cohort_names, name, &co))
			return GPUQ_ECORRUPT;
	}
	if (r->off != r->n)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		get_str(&names, name);
		if (!queue_names_find(&q->cohort_names, name, &co))
			q->cohorts[co].rec_capacity_up = true;
	}
	q->cycles = cycles;
	q->last_now = now;
	q->last_sample = sample;
	return GPUQ_OK;
}

static int apply_cq(queue_t *q, const char *k, rd_t *r, gpuq_diag_t *diag)
{
	char fn[QUEUE_NAME_MAX + 1], rn[QUEUE_NAME_MAX + 1];
	uint32_t id, n, f, res;
	counters_t ctr;
	int64_t *usage;
	cq_t *c;

	if (queue_names_find(&q->cq_names, k, &id))
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "CQ record %s: no such ClusterQueue", k);
	c = &q->cqs[id];
	get_ctr(r, &ctr);
	n = gpuq_get_u32(r);
	if (r->bad || n > c->n_slots)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CQ record %s: bad header", k);
	usage = calloc(c->n_slots ? c->n_slots : 1, sizeof(*usage));
	if (!usage)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int64_t s;

		get_str(r, fn);
		get_str(r, rn);
		s = (int64_t)gpuq_get_u64(r);
		if (r->bad || s < 0) {
			free(usage);
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CQ record %s: bad slot %u", k,
					     i);
		}
		if (queue_names_find(&q->flv_names, fn, &f) ||
		    queue_names_find(&q->res_names, rn, &res) ||
		    queue_cq_slot_find(c, f, res) < 0) {
			free(usage);
			return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
					     "CQ record %s: no quota for %s "
					     "on flavor %s",
					     k, rn, fn);
		}
		usage[queue_cq_slot_find(c, f, res)] = s;
	}
	if (r->off != r->n) {
		free(usage);
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CQ record %s: trailing bytes", k);
	}
	for (uint32_t s = 0; s < c->n_slots; s++)
		c->slots[s].rec_usage = usage[s];
	free(usage);
	c->ctr = ctr;
	c->rec_seen = true;
	return GPUQ_OK;
}

static int apply_lq(queue_t *q, const char *k, rd_t *r, gpuq_diag_t *diag)
{
	uint32_t id;
	double u, used;
	counters_t ctr;

	if (queue_names_find(&q->lq_names, k, &id))
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "tenant record %s: no such LocalQueue",
				     k);
	u = get_f64(r);
	used = get_f64(r);
	get_ctr(r, &ctr);
	if (r->bad || r->off != r->n || u < 0 || used < 0)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "tenant record %s: malformed", k);
	q->lqs[id].usage = u;
	q->lqs[id].used_ms = used;
	q->lqs[id].ctr = ctr;
	return GPUQ_OK;
}

/* Strings of one record, copied out NUL-terminated (the encoding spends at
 * least one byte of prefix per string, so val_len + 1 bytes always hold
 * them, and val_len + 1 pointers every affinity value). */
typedef struct {
	char *buf;	   /* string bytes */
	size_t cap;	   /* its size */
	size_t len;	   /* used */
	const char **ptrs; /* affinity value pointers */
	size_t pcap;	   /* their room */
	size_t plen;	   /* used */
} arena_t;

static const char *get_astr(rd_t *r, arena_t *a)
{
	size_t n = gpuq_get_len16(r);
	char *s;

	if (r->bad || n > QUEUE_NAME_MAX || r->n - r->off < n || memchr(r->p + r->off, 0, n) ||
	    a->cap - a->len < n + 1) {
		r->bad = true;
		return "";
	}
	s = a->buf + a->len;
	memcpy(s, r->p + r->off, n);
	s[n] = '\0';
	a->len += n + 1;
	r->off += n;
	return s;
}

/* A workload record's resource name (encode.c: put_res) when it is a
 * well-known one given by its index (a negative length: version 3), or NULL
 * when text follows (read by the caller). An index past the table is bad. */
static const char *known_res(rd_t *r)
{
	rd_t peek = *r;
	int64_t n;

	if (!r->varint)
		return NULL;
	n = (int32_t)(uint32_t)gpuq_get_var(&peek, 32);
	if (peek.bad || n >= 0)
		return NULL;
	*r = peek;
	if (-n - 1 >= QUOTA_KNOWN_RESOURCES) {
		r->bad = true;
		return "";
	}
	return quota_known_resources[-n - 1];
}

static void get_res(rd_t *r, char out[QUEUE_NAME_MAX + 1])
{
	const char *k = known_res(r);

	if (k)
		gpuq_strlcpy(out, k, QUEUE_NAME_MAX + 1);
	else
		get_str(r, out);
}

static const char *get_res_astr(rd_t *r, arena_t *a)
{
	const char *k = known_res(r);

	return k ? k : get_astr(r, a);
}

/* Decoded pod sets of a workload record (strings in the arena). */
typedef struct {
	queue_request_t req[QUEUE_PODSETS_MAX][QUEUE_PODSET_RES_MAX];	/* requests */
	queue_label_t sel[QUEUE_PODSETS_MAX][QUEUE_SELECTORS_MAX];	/* nodeSelector */
	queue_affinity_t aff[QUEUE_PODSETS_MAX][QUEUE_SELECTORS_MAX];	/* affinity */
	queue_toleration_t tol[QUEUE_PODSETS_MAX][QUEUE_SELECTORS_MAX]; /* tolerations */
	queue_podset_spec_t ps[QUEUE_PODSETS_MAX];			/* pod sets */
	queue_topo_rec_t topo; /* their topology and its placement (version 5) */
} dec_ps_t;

static int dec_podset(rd_t *r, arena_t *ar, dec_ps_t *d, size_t p)
{
	queue_podset_spec_t *ps = &d->ps[p];
	uint32_t n;

	memset(ps, 0, sizeof(*ps));
	ps->name = get_astr(r, ar);
	ps->count = (int32_t)gpuq_get_u32(r);
	n = gpuq_get_u8(r);
	if (r->bad || n > QUEUE_PODSET_RES_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		d->req[p][i].resource = get_res_astr(r, ar);
		d->req[p][i].amount = (int64_t)gpuq_get_u64(r);
	}
	ps->requests = d->req[p];
	ps->n_requests = n;
	n = gpuq_get_u8(r);
	if (r->bad || n > QUEUE_SELECTORS_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		d->sel[p][i].key = get_astr(r, ar);
		d->sel[p][i].value = get_astr(r, ar);
	}
	ps->node_selector = d->sel[p];
	ps->n_node_selector = n;
	n = gpuq_get_u8(r);
	if (r->bad || n > QUEUE_SELECTORS_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nv;

		d->aff[p][i].key = get_astr(r, ar);
		nv = gpuq_get_u8(r);
		if (r->bad || nv > QUEUE_AFFINITY_VALUES_MAX || ar->pcap - ar->plen < nv)
			return GPUQ_ECORRUPT;
		d->aff[p][i].values = ar->ptrs + ar->plen;
		d->aff[p][i].n_values = nv;
		for (uint32_t j = 0; j < nv; j++)
			ar->ptrs[ar->plen++] = get_astr(r, ar);
	}
	ps->affinity = d->aff[p];
	ps->n_affinity = n;
	n = gpuq_get_u8(r);
	if (r->bad || n > QUEUE_SELECTORS_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		d->tol[p][i].key = get_astr(r, ar);
		d->tol[p][i].op = (queue_tolerate_op_t)gpuq_get_u8(r);
		d->tol[p][i].value = get_astr(r, ar);
		d->tol[p][i].effect = (queue_effect_t)gpuq_get_u8(r);
	}
	ps->tolerations = d->tol[p];
	ps->n_tolerations = n;
	return r->bad ? GPUQ_ECORRUPT : GPUQ_OK;
}

/* A workload record's topology block (version 5) into out (its placement's
 * nodes made known: queue_node_ref). */
static int dec_topo(queue_t *q, rd_t *r, size_t n_ps, queue_topo_rec_t *out)
{
	uint32_t n;

	/* only what the pod sets use is written (the whole is 6 KiB) */
	out->present = false;
	out->pl = NULL;
	out->n_pl = 0;
	if (!gpuq_get_u8(r) || r->bad)
		return r->bad ? GPUQ_ECORRUPT : GPUQ_OK;
	out->present = true;
	for (size_t i = 0; i < n_ps; i++) {
		out->mode[i] = gpuq_get_u8(r);
		get_str(r, out->level[i]);
		get_str(r, out->slice_level[i]);
		out->slice_size[i] = (int32_t)gpuq_get_u32(r);
		get_str(r, out->group[i]);
		if (r->bad || out->mode[i] > QUEUE_TOPO_UNCONSTRAINED || out->slice_size[i] < 0)
			return GPUQ_ECORRUPT;
	}
	n = gpuq_get_u32(r);
	if (r->bad || n > r->n - r->off) /* an entry takes 4 bytes at least */
		return GPUQ_ECORRUPT;
	if (n) {
		out->pl = calloc(n, sizeof(*out->pl));
		if (!out->pl)
			return GPUQ_ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		char fn[QUEUE_NAME_MAX + 1], nn[QUEUE_NAME_MAX + 1];
		place_t *e = &out->pl[i];
		int rc;

		get_str(r, fn);
		get_str(r, nn);
		e->ps = gpuq_get_u8(r);
		e->count = (int32_t)gpuq_get_u32(r);
		if (r->bad || e->ps >= n_ps || e->count < 1 || !nn[0])
			return GPUQ_ECORRUPT;
		if (queue_names_find(&q->flv_names, fn, &e->flavor))
			return GPUQ_ENOTFOUND;
		rc = queue_node_ref(q, nn, &e->node);
		if (rc)
			return rc;
		out->n_pl++;
	}
	return GPUQ_OK;
}

/* The decoded asks into the pod sets' specs. */
static void dec_topo_spec(const queue_topo_rec_t *t, queue_podset_spec_t *ps, size_t n)
{
	for (size_t i = 0; t->present && i < n; i++) {
		ps[i].topology = (queue_topo_mode_t)t->mode[i];
		ps[i].topology_level = t->level[i];
		ps[i].slice_level = t->slice_level[i];
		ps[i].slice_size = t->slice_size[i];
		ps[i].group = t->group[i];
	}
}

typedef struct {
	uint8_t state, wait, where, why, evict_reason, ready; /* state fields */
	int64_t admitted_ms, eligible_ms, why_need, why_free; /* times, explanation */
	uint32_t why_res, why_flavor, requeues, preemptions;  /* explanation, counts */
	uint64_t admit_cycle;				      /* cycle of admission */
	int64_t exec_ms;				      /* time admitted before (version 4) */
} dec_state_t;

/* Resolve and validate the admission of a decoded workload against cq. */
static int dec_assign(queue_t *q, rd_t *r, const cq_t *c, const queue_workload_spec_t *s,
		      asg_t **out, uint32_t *n_out)
{
	char rn[QUEUE_NAME_MAX + 1], fn[QUEUE_NAME_MAX + 1];
	uint32_t n = gpuq_get_u32(r);
	asg_t *a;

	*out = NULL;
	*n_out = 0;
	if (r->bad || n > QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX)
		return GPUQ_ECORRUPT;
	if (!n)
		return GPUQ_OK;
	a = calloc(n, sizeof(*a));
	if (!a)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f, res;
		int64_t slot;

		a[i].a.podset = gpuq_get_u8(r);
		get_res(r, rn);
		get_str(r, fn);
		a[i].a.amount = (int64_t)gpuq_get_u64(r);
		if (r->bad || a[i].a.podset >= s->n_podsets || a[i].a.amount < 0)
			goto corrupt;
		if (queue_names_find(&q->res_names, rn, &res) ||
		    queue_names_find(&q->flv_names, fn, &f))
			goto notfound;
		slot = queue_cq_slot_find(c, f, res);
		if (slot < 0)
			goto notfound;
		a[i].a.resource = (uint16_t)res;
		a[i].a.flavor = f;
		a[i].slot = (uint32_t)slot;
	}
	*out = a;
	*n_out = n;
	return GPUQ_OK;
corrupt:
	free(a);
	return GPUQ_ECORRUPT;
notfound:
	free(a);
	return GPUQ_ENOTFOUND;
}

static int dec_names(queue_t *q, rd_t *r, dec_state_t *st)
{
	char rn[QUEUE_NAME_MAX + 1], fn[QUEUE_NAME_MAX + 1];

	get_res(r, rn);
	get_str(r, fn);
	st->why_res = st->why_flavor = QUEUE_NONE;
	if (r->bad)
		return GPUQ_ECORRUPT;
	if (*rn && queue_names_find(&q->res_names, rn, &st->why_res))
		st->why_res = QUEUE_NONE;
	if (*fn && queue_names_find(&q->flv_names, fn, &st->why_flavor))
		st->why_flavor = QUEUE_NONE;
	return GPUQ_OK;
}

/* Put a restored workload where its state says. */
/* Put a restored workload where its state says. On failure (allocation)
 * nothing was placed, so wl_forget undoes the creation. */
static int wl_restore_place(queue_t *q, uint32_t id, const dec_state_t *st)
{
	wl_t *w = W(q, id);
	cq_t *c = &q->cqs[w->cq];
	lq_t *l = &q->lqs[w->lq];

	switch (w->state) {
	case QUEUE_WL_PENDING:
		if (st->where == W_BACKOFF) {
			if (queue_timer_push(q, &q->backoff_timers, w->eligible_ms, id))
				return GPUQ_ENOMEM;
			w->where = W_BACKOFF;
		} else if (st->where == W_ASIDE) {
			if (queue_wl_attach(q, id, W_ASIDE))
				return GPUQ_ENOMEM;
		} else if (st->wait == QUEUE_WAIT_DEACTIVATED) {
			w->where = W_NONE; /* out of the queue until its limit changes */
		} else if (st->where == W_HEAP || !queue_gang_waiting(w)) {
			if (queue_wl_attach(q, id, W_HEAP))
				return GPUQ_ENOMEM;
		}
		l->n_pending++;
		c->n_pending++;
		return GPUQ_OK;
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
		/* room for its deadline first: a deadline lost would never stop it */
		if ((w->state == QUEUE_WL_ADMITTED && queue_exec_limit(q, w) &&
		     queue_grow(&q->exec_timers.v, &q->exec_timers.cap, q->exec_timers.n + 1,
				sizeof(*q->exec_timers.v))) ||
		    queue_wl_attach(q, id, W_ADMITTED))
			return GPUQ_ENOMEM;
		queue_wl_charge(q, id, +1);
		queue_lq_cur_add(q, w, +1);
		l->n_admitted++;
		if (w->state == QUEUE_WL_EVICTING) {
			for (uint32_t i = 0; i < w->n_asg; i++)
				c->slots[w->asg[i].slot].evicting += w->asg[i].a.amount;
			cohort_of(q, c)->n_evicting++;
		} else {
			if (!w->ready && queue_ready_watched(q, w))
				/* lost only to allocation failure: then it has no timeout */
				(void)queue_timer_push(q, &q->ready_timers,
						       w->admitted_ms + q->cfg.ready_timeout_ms,
						       id);
			(void)queue_exec_arm(q, id); /* the room is there */
		}
		return GPUQ_OK;
	default:
		return GPUQ_OK;
	}
}

/* Undo queue_wl_create of a workload that was never placed. */
static void wl_forget(queue_t *q, uint32_t id)
{
	queue_map_del(&q->uids, W(q, id)->uid_hash, id);
	queue_wl_free(q, id);
	q->n_live--;
	(void)queue_vpush(&q->free_wls, id);
}

/* Whether a restored (state, container) pair is one the queue produces. */
static bool state_where_ok(const dec_state_t *st)
{
	switch (st->state) {
	case QUEUE_WL_PENDING:
		return st->where != W_ADMITTED;
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
		return st->where == W_ADMITTED;
	default:
		return st->where == W_NONE;
	}
}

/* The fixed part of a workload record, up to its pod sets. */
static int dec_wl_header(queue_t *q, rd_t *r, queue_workload_spec_t *s, dec_state_t *st,
			 char ns[QUEUE_NAME_MAX + 1], char name[QUEUE_NAME_MAX + 1],
			 char lqn[QUEUE_NAME_MAX + 1])
{
	get_str(r, ns);
	get_str(r, name);
	get_str(r, lqn);
	s->priority = (int32_t)gpuq_get_u32(r);
	s->created_ms = (int64_t)gpuq_get_u64(r);
	s->gang_total = (int32_t)gpuq_get_u32(r);
	s->pods_present = (int32_t)gpuq_get_u32(r);
	st->state = gpuq_get_u8(r);
	st->wait = gpuq_get_u8(r);
	st->where = gpuq_get_u8(r);
	st->why = gpuq_get_u8(r);
	st->evict_reason = gpuq_get_u8(r);
	st->ready = gpuq_get_u8(r);
	st->admitted_ms = (int64_t)gpuq_get_u64(r);
	st->eligible_ms = (int64_t)gpuq_get_u64(r);
	st->why_need = (int64_t)gpuq_get_u64(r);
	st->why_free = (int64_t)gpuq_get_u64(r);
	if (!time_ok(s->created_ms) || !time_ok(st->admitted_ms) || !time_ok(st->eligible_ms))
		return GPUQ_ECORRUPT;
	if (r->bad || st->state > QUEUE_WL_FINISHED ||
	    (st->wait > QUEUE_WAIT_STOPPED && st->wait != QUEUE_WAIT_DEACTIVATED) ||
	    st->where > W_BACKOFF || st->why > WHY_LAST ||
	    st->evict_reason > QUEUE_EVICT_NODE_FAILED || st->ready > 1 || !state_where_ok(st))
		return GPUQ_ECORRUPT;
	if (dec_names(q, r, st))
		return GPUQ_ECORRUPT;
	st->requeues = gpuq_get_u32(r);
	st->preemptions = gpuq_get_u32(r);
	st->admit_cycle = gpuq_get_u64(r);
	s->n_podsets = gpuq_get_u8(r);
	if (r->bad || !s->n_podsets || s->n_podsets > QUEUE_PODSETS_MAX)
		return GPUQ_ECORRUPT;
	return GPUQ_OK;
}

/* Copy the decoded state into a freshly created workload. */
static void wl_set_state(wl_t *w, const dec_state_t *st)
{
	w->state = st->state;
	w->wait = st->wait;
	w->why = st->why;
	w->evict_reason = st->evict_reason;
	w->ready = st->ready;
	w->admitted_ms = st->admitted_ms;
	w->eligible_ms = st->eligible_ms;
	w->why_need = st->why_need;
	w->why_free = st->why_free;
	w->why_res = st->why_res;
	w->why_flavor = st->why_flavor;
	w->requeues = st->requeues;
	w->preemptions = st->preemptions;
	w->admit_cycle = st->admit_cycle;
	w->exec_ms = st->exec_ms;
}

/* A restored assignment names requested resources with their exact totals,
 * and charging it keeps its CQ's usage within QUEUE_COHORT_AMOUNT_MAX. */
static bool asg_consistent(const queue_t *q, uint32_t id)
{
	const wl_t *w = Wc(q, id);
	const cq_t *c = &q->cqs[w->cq];

	for (uint32_t i = 0; i < w->n_asg; i++) {
		const queue_assign_t *a = &w->asg[i].a;
		const psref_t *ps = &wl_ps(w)[a->podset];
		const tmpl_t *t = &q->tmpls[ps->tmpl];
		bool found = false;

		for (uint32_t k = 0; k < t->n_req && !found; k++)
			found =
			    t->res[k] == a->resource && (int64_t)ps->count * t->amt[k] == a->amount;
		if (!found || c->slots[w->asg[i].slot].usage > QUEUE_COHORT_AMOUNT_MAX - a->amount)
			return false;
	}
	return true;
}

static int apply_wl(queue_t *q, const char *uid, uint8_t version, rd_t *r, gpuq_diag_t *diag)
{
	char ns[QUEUE_NAME_MAX + 1], name[QUEUE_NAME_MAX + 1], lqn[QUEUE_NAME_MAX + 1];
	queue_workload_spec_t s = {0};
	dec_state_t st = {0};
	dec_ps_t *d;
	arena_t ar = {0};
	asg_t *asg = NULL;
	uint32_t n_asg = 0, id = QUEUE_NONE, lq = QUEUE_NONE;
	wl_t *w;
	int rc;

	if (dec_wl_header(q, r, &s, &st, ns, name, lqn))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "workload record %s: bad header", uid);
	/* not zeroed (80 KiB, most of a fork's time): each pod set's part is
	 * written whole as it is read, and nothing past them is read */
	d = malloc(sizeof(*d));
	if (d) {
		d->topo.present = false;
		d->topo.pl = NULL;
		d->topo.n_pl = 0;
	}
	ar.cap = r->n + 1;
	ar.buf = malloc(ar.cap);
	ar.pcap = r->n + 1; /* a value takes a byte at least (version 2) */
	ar.ptrs = malloc(ar.pcap * sizeof(*ar.ptrs));
	if (!d || !ar.buf || !ar.ptrs) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	for (size_t p = 0; p < s.n_podsets; p++) {
		rc = dec_podset(r, &ar, d, p);
		if (rc) {
			rc = gpuq_diag_set(diag, rc, "workload record %s: bad pod set %zu", uid, p);
			goto out;
		}
	}
	s.podsets = d->ps;
	s.uid = uid;
	s.namespace_ = ns;
	s.name = name;
	s.local_queue = lqn;
	if (queue_lq_lookup(q, ns, lqn, &lq)) {
		rc = gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				   "workload record %s: LocalQueue %s/%s "
				   "not found",
				   uid, ns, lqn);
		goto out;
	}
	rc = dec_assign(q, r, &q->cqs[q->lqs[lq].cq], &s, &asg, &n_asg);
	if (!rc && version >= REC_VERSION_WL_EXEC) {
		st.exec_ms = (int64_t)gpuq_get_u64(r);
		s.max_exec_s = (int32_t)gpuq_get_u32(r);
		if (r->bad || !time_ok(st.exec_ms) || st.exec_ms < 0 || s.max_exec_s < 0)
			rc = GPUQ_ECORRUPT;
	}
	if (!rc && version >= REC_VERSION_WL_TOPO) {
		rc = dec_topo(q, r, s.n_podsets, &d->topo);
		dec_topo_spec(&d->topo, d->ps, s.n_podsets);
	}
	if (!rc && r->off != r->n)
		rc = GPUQ_ECORRUPT;
	if (rc) {
		rc = gpuq_diag_set(diag, rc, "workload record %s: bad admission", uid);
		goto out;
	}
	rc = queue_wl_create(q, &s, &id, diag);
	if (rc) {
		if (rc == GPUQ_EINVAL || rc == GPUQ_ERANGE)
			rc = GPUQ_ECORRUPT;
		goto out;
	}
	w = W(q, id);
	wl_set_state(w, &st);
	w->asg = asg;
	w->n_asg = n_asg;
	asg = NULL;
	if (!asg_consistent(q, id)) {
		wl_forget(q, id);
		rc =
		    gpuq_diag_set(diag, GPUQ_ECORRUPT,
				  "workload record %s: admission does not match its pod sets", uid);
		goto out;
	}
	rc = queue_topo_restore(q, id, &d->topo);
	if (rc == GPUQ_ECORRUPT)
		rc = gpuq_diag_set(diag, rc, "workload record %s: a placement without quota", uid);
	if (!rc)
		rc = wl_restore_place(q, id, &st);
	if (rc)
		wl_forget(q, id);
out:
	if (d)
		free(d->topo.pl);
	free(asg);
	free(d);
	free(ar.buf);
	free(ar.ptrs);
	return rc;
}

int queue_record_apply(queue_t *q, queue_rec_type_t type, const uint8_t *key, size_t key_len,
		       const uint8_t *val, size_t val_len, gpuq_diag_t *diag)
{
	char k[QUEUE_KEY_MAX + 1] = "";
	rd_t r = {val, val_len, 0, false, false};
	uint8_t version = val ? gpuq_get_u8(&r) : 0;

	if (queue_key_str(key, key_len, k))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record key: bad bytes");
	/* a workload's is in varints from version 2 on, with its well-known
	   resource names by index from 3 on; versions 1 and 2 still read */
	r.varint = type == QUEUE_REC_WORKLOAD && version >= REC_VERSION_WL_VARINT &&
		   version <= REC_VERSION_WL;
	if (version != REC_VERSION && !r.varint)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record %s: unknown version", k);
	switch (type) {
	case QUEUE_REC_META:
		if (strcmp(k, "meta") != 0)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "meta record: bad key");
		if (apply_meta(q, &r))
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "meta record: malformed");
		return GPUQ_OK;
	case QUEUE_REC_CQ:
		return apply_cq(q, k, &r, diag);
	case QUEUE_REC_TENANT:
		return apply_lq(q, k, &r, diag);
	case QUEUE_REC_WORKLOAD:
		if (queue_check_name("uid", k, false, NULL))
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "workload record: bad key");
		return apply_wl(q, k, version, &r, diag);
	case QUEUE_REC_USAGE:
		return ledger_record_apply(q->ledger, key, key_len, val, val_len, diag);
	case QUEUE_REC_BUDGET:
		return queue_budget_apply(q, k, &r, diag);
	default:
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record type %d unknown", (int)type);
	}
}

int queue_restore_done(queue_t *q, gpuq_diag_t *diag)
{
	if (ledger_restore_done(q->ledger, diag))
		return GPUQ_ECORRUPT;
	for (size_t i = 0; i < q->cq_names.n; i++) {
		cq_t *c = &q->cqs[i];

		if (!c->rec_seen)
			continue;
		for (uint32_t s = 0; s < c->n_slots; s++) {
			if (c->slots[s].usage != c->slots[s].rec_usage)
				return gpuq_diag_set(diag, GPUQ_ECORRUPT,
						     "ClusterQueue %s: recorded usage %" PRId64
						     " of %s on flavor %s, but its workloads hold "
						     "%" PRId64,
						     c->name, c->slots[s].rec_usage,
						     queue_res_name(q, c->slots[s].res),
						     queue_flv_name(q, c->slots[s].flavor),
						     c->slots[s].usage);
		}
	}
	queue_dirty_clear(q);
	queue_usage_reconcile(q);
	queue_budgets_restored(q);
	queue_prot_restored(q);
	for (size_t i = 0; i < q->cohort_names.n; i++) {
		/* set-aside workloads stay aside unless capacity had grown */
		q->cohorts[i].capacity_up = q->cohorts[i].rec_capacity_up;
		q->cohorts[i].rec_capacity_up = false;
		queue_cohort_touch(q, (uint32_t)i, false);
	}
	return GPUQ_OK;
}

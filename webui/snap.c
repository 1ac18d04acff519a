/* webui/snap.c: the snapshot the API renders, copied out of the queue core
 * on the controller's thread through the core's introspection API, its
 * publication (a reference taken under a lock held for a pointer copy), and
 * the ring of recent admissions, preemptions and evictions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quota/quota.h"
#include "webui/internal.h"

/* ---- the arena: blocks that never move ---- */

#define BLOCK_MIN (64u << 10) /* bytes of a new block (a longer string gets its own) */

typedef struct block {
	struct block *prev; /* the block before */
	char data[];	    /* the strings */
} block_t;

char *ws_arena_alloc(ws_arena_t *a, size_t n)
{
	block_t *b = a->blocks;
	char *out;

	if (!b || a->cap - a->used < n) {
		size_t cap = n > BLOCK_MIN ? n : BLOCK_MIN;
		block_t *nb = malloc(sizeof(*nb) + cap);

		if (!nb) {
			a->failed = true;
			return NULL;
		}
		nb->prev = b;
		a->blocks = b = nb;
		a->used = 0;
		a->cap = cap;
	}
	out = b->data + a->used;
	a->used += n;
	a->bytes += n;
	return out;
}

const char *ws_arena_dup(ws_arena_t *a, const char *s, size_t n)
{
	char *out = ws_arena_alloc(a, n);

	if (out)
		memcpy(out, s, n);
	return out;
}

void ws_arena_free(ws_arena_t *a)
{
	for (block_t *b = a->blocks; b;) {
		block_t *prev = b->prev;
		free(b);
		b = prev;
	}
	memset(a, 0, sizeof(*a));
}

const char *ws_strdup(webui_snap_t *snap, const char *s)
{
	return ws_arena_dup(&snap->arena, s ? s : "", strlen(s ? s : "") + 1);
}

void webui_snap_unref(webui_snap_t *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	ws_arena_free(&s->arena);
	ws_pool_unref(s->pool);
	free(s->cohorts);
	free(s->cqs);
	free(s->quota);
	free(s->lqs);
	free(s->lq_usage);
	free(s->wls);
	free(s->cq_wl);
	free(s->vis);
	free(s->lq_vis);
	free(s->events);
	free(s->usage);
	free(s->prices);
	free(s->budgets);
	free(s);
}

/* ---- quota: nominal, usage, borrowed, lent ---- */

/* lent, as /metrics has it: quota_lent_share over the (cohort, flavor,
 * resource) groups, rounded to core units. */
static int fill_lent(webui_snap_t *s, quota_lend_t *v, size_t n)
{
	quota_lent_share(v, n);
	for (size_t k = 0; k < n; k++)
		s->quota[v[k].slot].lent = (int64_t)(v[k].lent + 0.5);
	return GPUQ_OK;
}

/* Every CQ's (flavor, resource) slots, in flavor then resource order. */
static int fill_cqs(const queue_t *q, webui_snap_t *s)
{
	size_t nf = queue_flavor_count(q), nr = queue_resource_count(q), cap = 16, n_lend = 0;
	quota_lend_t *lend;
	int rc;

	s->n_cqs = queue_cq_count(q);
	s->cqs = calloc(s->n_cqs ? s->n_cqs : 1, sizeof(*s->cqs));
	s->quota = malloc(cap * sizeof(*s->quota));
	lend = malloc(cap * sizeof(*lend));
	if (!s->cqs || !s->quota || !lend) {
		free(lend);
		return GPUQ_ENOMEM;
	}
	for (uint32_t c = 0; c < s->n_cqs; c++) {
		ws_cq_t *cq = &s->cqs[c];
		uint32_t coh = queue_cq_cohort(q, c);

		cq->name = ws_strdup(s, queue_cq_name(q, c));
		cq->cohort = ws_strdup(s, coh == QUEUE_NONE ? "" : queue_cohort_name(q, coh));
		(void)queue_cq_stats(q, c, &cq->stats);
		cq->quota0 = s->n_quota;
		for (uint32_t f = 0; f < nf; f++)
			for (uint32_t r = 0; r < nr; r++) {
				queue_quota_view_t v;
				ws_quota_t *w;

				if (queue_cq_quota(q, c, f, r, &v))
					continue;
				if (s->n_quota == cap) {
					ws_quota_t *nq = realloc(s->quota, 2 * cap * sizeof(*nq));
					quota_lend_t *nl =
					    nq ? realloc(lend, 2 * cap * sizeof(*nl)) : NULL;

					if (nq)
						s->quota = nq;
					if (!nl) {
						free(lend);
						return GPUQ_ENOMEM;
					}
					lend = nl;
					cap *= 2;
				}
				w = &s->quota[s->n_quota];
				*w = (ws_quota_t){ws_strdup(s, queue_flavor_name(q, f)),
						  ws_strdup(s, queue_resource_name(q, r)),
						  v.nominal,
						  v.borrowing_limit,
						  v.lending_limit,
						  v.usage,
						  v.usage > v.nominal ? v.usage - v.nominal : 0,
						  0,
						  f,
						  r};
				if (coh != QUEUE_NONE)
					lend[n_lend++] = (quota_lend_t){((uint64_t)coh << 32) |
									    ((uint64_t)f << 16) | r,
									s->n_quota,
									v.nominal,
									v.usage,
									v.lending_limit,
									0};
				s->n_quota++;
			}
		cq->n_quota = s->n_quota - cq->quota0;
	}
	rc = fill_lent(s, lend, n_lend);
	free(lend);
	return rc;
}

static int fill_lqs(const queue_t *q, webui_snap_t *s)
{
	size_t n_usage = 0;

	s->n_lqs = queue_lq_count(q);
	s->lqs = calloc(s->n_lqs ? s->n_lqs : 1, sizeof(*s->lqs));
	if (!s->lqs)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < s->n_lqs; i++) {
		uint32_t cq = queue_lq_cq(q, i);
		s->lqs[i].usage0 = n_usage;
		n_usage += cq < s->n_cqs ? s->cqs[cq].n_quota : 0;
	}
	s->lq_usage = calloc(n_usage ? n_usage : 1, sizeof(*s->lq_usage));
	if (!s->lq_usage)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < s->n_lqs; i++) {
		const char *full = queue_lq_name(q, i), *slash = full ? strchr(full, '/') : NULL;
		char ns[QUEUE_NAME_MAX + 1];
		size_t n = slash ? (size_t)(slash - full) : 0;

		if (n > QUEUE_NAME_MAX)
			n = QUEUE_NAME_MAX;
		memcpy(ns, full ? full : "", n);
		ns[n] = '\0';
		s->lqs[i].namespace_ = ws_strdup(s, ns);
		s->lqs[i].name = ws_strdup(s, slash ? slash + 1 : full);
		s->lqs[i].cq = queue_lq_cq(q, i);
		(void)queue_lq_stats(q, i, &s->lqs[i].stats);
	}
	return GPUQ_OK;
}

/* ---- workloads ---- */

/* "8 nvidia.com/gpu, 16 cpu" (the whole workload's requests) into buf, and
 * the distinct flavors an admitted one runs on into fl. */
static void wl_amounts(const queue_t *q, queue_wl_t id, size_t n_podsets, char *buf, size_t cap,
		       char *fl, size_t fl_cap)
{
	size_t nr = queue_resource_count(q), len = 0, fl_len = 0;

	buf[0] = fl[0] = '\0';
	for (uint32_t r = 0; r < nr; r++) {
		int64_t total = 0, per_pod;
		int32_t count;
		char amount[32];

		for (size_t p = 0; p < n_podsets; p++) {
			uint32_t f;
			const char *fn;

			if (queue_workload_request(q, id, p, r, &per_pod, &count) || !per_pod)
				continue;
			total += per_pod * count;
			if (queue_workload_flavor(q, id, p, r, &f))
				continue;
			fn = queue_flavor_name(q, f);
			if (fn && !strstr(fl, fn) && fl_len + strlen(fn) + 3 < fl_cap)
				fl_len += (size_t)snprintf(fl + fl_len, fl_cap - fl_len, "%s%s",
							   fl_len ? ", " : "", fn);
		}
		if (!total || len + 48 + strlen(queue_resource_name(q, r)) >= cap)
			continue;
		len += (size_t)snprintf(
		    buf + len, cap - len, "%s%s %s", len ? ", " : "",
		    quota_amount_format(queue_resource_name(q, r), total, amount, sizeof(amount)),
		    queue_resource_name(q, r));
	}
}

/* Add admitted workload id's amounts to its LocalQueue's usage,
 * per slot of its CQ (flavor, resource). */
static void lq_usage_add(const queue_t *q, webui_snap_t *s, queue_wl_t id)
{
	queue_workload_view_t v;
	const ws_cq_t *cq;
	int64_t *use;

	if (queue_workload_view(q, id, &v) || v.lq >= s->n_lqs || v.cq >= s->n_cqs)
		return;
	cq = &s->cqs[v.cq];
	use = &s->lq_usage[s->lqs[v.lq].usage0];
	for (size_t p = 0; p < v.n_podsets; p++)
		for (size_t i = 0; i < cq->n_quota; i++) {
			const ws_quota_t *sl = &s->quota[cq->quota0 + i];
			int64_t per_pod;
			int32_t count;
			uint32_t f;

			if (!queue_workload_flavor(q, id, p, sl->rid, &f) && f == sl->fid &&
			    !queue_workload_request(q, id, p, sl->rid, &per_pod, &count))
				use[i] += per_pod * count;
		}
}

/* Append workload id (at CQ position pos, 0 when not pending) to s->wls. */
static int wl_add(const queue_t *q, webui_snap_t *s, queue_wl_t id, uint32_t pos, size_t *cap)
{
	queue_workload_view_t v;
	char reason[WEBUI_REASON_MAX], req[512], fl[256];
	ws_wl_t *w;

	if (queue_workload_view(q, id, &v))
		return GPUQ_OK;
	if (s->n_wls == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		ws_wl_t *n = realloc(s->wls, ncap * sizeof(*n));
		if (!n)
			return GPUQ_ENOMEM;
		s->wls = n;
		*cap = ncap;
	}
	(void)queue_workload_reason(q, id, reason, sizeof(reason)); /* truncated is fine */
	wl_amounts(q, id, v.n_podsets, req, sizeof(req), fl, sizeof(fl));
	w = &s->wls[s->n_wls++];
	*w = (ws_wl_t){ws_strdup(s, v.uid),
		       ws_strdup(s, v.namespace_),
		       ws_strdup(s, v.name),
		       v.lq,
		       v.cq,
		       v.priority,
		       v.created_ms,
		       v.state,
		       v.wait,
		       pos,
		       v.admitted_ms,
		       v.pods,
		       ws_strdup(s, reason),
		       ws_strdup(s, v.state == QUEUE_WL_PENDING ? "" : fl),
		       ws_strdup(s, req),
		       v.predicted_ms,
		       v.idle_since_ms,
		       v.protected_ms};
	return GPUQ_OK;
}

/* Every live workload in state st into *ids (malloc'd), grouped by CQ,
 * each CQ's in its order, the last snapshot's order hint[0..n_hint) tried
 * first; how many. */
static size_t all_ids(const queue_t *q, queue_wl_state_t st, const queue_wl_t *hint, size_t n_hint,
		      queue_wl_t **ids, bool *failed)
{
	size_t cap = n_hint + n_hint / 8 + 64, n;

	*ids = malloc(cap * sizeof(**ids));
	n = *ids ? queue_workloads_by_cq_hint(q, st, hint, n_hint, *ids, cap) : 0;
	if (*ids && n > cap) {
		queue_wl_t *m = realloc(*ids, n * sizeof(*m));

		if (m) {
			*ids = m;
			n = queue_workloads_by_cq_hint(q, st, hint, n_hint, *ids, n);
		} else {
			free(*ids);
			*ids = NULL;
		}
	}
	*failed = !*ids;
	return *ids ? n : 0;
}

/* Append wls index w to the CQ lists. */
static int list_push(webui_snap_t *s, uint32_t w, size_t *list_cap)
{
	if (s->n_cq_wl == *list_cap) {
		size_t ncap = *list_cap ? *list_cap * 2 : 256;
		uint32_t *m = realloc(s->cq_wl, ncap * sizeof(*m));
		if (!m)
			return GPUQ_ENOMEM;
		s->cq_wl = m;
		*list_cap = ncap;
	}
	s->cq_wl[s->n_cq_wl++] = w;
	return GPUQ_OK;
}

/* The workloads of one state (pending, or admitted and evicting), every CQ
 * at once: a workload is copied when it is among the first WEBUI_LIST_MAX
 * of its CQ's list (pending in admission order; admitted by admission
 * time) or of its LocalQueue's; the CQ's own list holds the first
 * WEBUI_LIST_MAX. */
static int state_workloads(const queue_t *q, webui_snap_t *s, bool pending, const queue_wl_t *ids,
			   size_t n, uint32_t *lq_seen, size_t *wl_cap, size_t *list_cap,
			   ws_vis_build_t *vb)
{
	uint32_t cur = UINT32_MAX, pos = 0;

	memset(lq_seen, 0, (s->n_lqs ? s->n_lqs : 1) * sizeof(*lq_seen));
	for (size_t i = 0; i < n; i++) {
		queue_workload_brief_t v;
		ws_cq_t *cq;
		bool in_cq;

		if (queue_workload_brief(q, ids[i], &v) || v.lq >= s->n_lqs || v.cq >= s->n_cqs)
			continue;
		if (vb && ws_vis_add(vb, ids[i], &v))
			return GPUQ_ENOMEM;
		cq = &s->cqs[v.cq];
		if (v.cq != cur) { /* the next CQ's list starts */
			cur = v.cq;
			pos = 0;
			*(pending ? &cq->pend0 : &cq->adm0) = s->n_cq_wl;
		}
		pos++;
		*(pending ? &cq->pending_total : &cq->admitted_total) += 1;
		if (!pending)
			lq_usage_add(q, s, ids[i]);
		in_cq = pos <= WEBUI_LIST_MAX;
		if (!in_cq && lq_seen[v.lq] >= WEBUI_LIST_MAX)
			continue;
		lq_seen[v.lq]++;
		if (wl_add(q, s, ids[i], pending ? pos : 0, wl_cap))
			return GPUQ_ENOMEM;
		if (!in_cq)
			continue;
		if (list_push(s, (uint32_t)(s->n_wls - 1), list_cap))
			return GPUQ_ENOMEM;
		*(pending ? &cq->n_pend : &cq->n_adm) += 1;
	}
	return GPUQ_OK;
}

/* The workloads of both states; each state's order kept in ui (when there
 * is one) as the next snapshot's hint: it mostly changes little. */
static int fill_workloads(webui_t *ui, const queue_t *q, webui_snap_t *s, bool vis)
{
	uint32_t *lq_seen = calloc(s->n_lqs ? s->n_lqs : 1, sizeof(*lq_seen));
	size_t wl_cap = 0, list_cap = 0, n;
	bool failed = false;
	int rc = lq_seen ? GPUQ_OK : GPUQ_ENOMEM;

	for (int k = 0; !rc && k < 2; k++) {
		ws_vis_build_t *vb = NULL;
		queue_wl_t *ids = NULL;

		n = all_ids(q, k == 0 ? QUEUE_WL_PENDING : QUEUE_WL_ADMITTED,
			    ui ? ui->order[k] : NULL, ui ? ui->n_order[k] : 0, &ids, &failed);
		rc = failed ? GPUQ_ENOMEM : GPUQ_OK;
		if (!rc && k == 0 && vis) /* every pending one, for the visibility API */
			rc = ws_vis_begin(ui, q, s, n, &vb);
		else if (k == 0 && ui) /* the API not in use: its names not kept */
			ws_names_reset(ui);
		if (!rc)
			rc = state_workloads(q, s, k == 0, ids, n, lq_seen, &wl_cap, &list_cap, vb);
		if (vb && ws_vis_end(vb) && !rc)
			rc = GPUQ_ENOMEM;
		if (ui && ids) {
			free(ui->order[k]);
			ui->order[k] = ids;
			ui->n_order[k] = n;
		} else {
			free(ids);
		}
	}
	free(lq_seen);
	return rc;
}

/* ---- events ---- */

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static void ev_free(ws_event_t *e)
{
	free(e->namespace_);
	free(e->name);
	free(e->cq);
	free(e->detail);
	free(e->preemptor_ns);
	free(e->preemptor);
	free(e->preemptor_cq);
	memset(e, 0, sizeof(*e));
}

/* A new entry at the ring's end (the oldest goes when it is full). */
static ws_event_t *ev_push(webui_t *ui)
{
	ws_event_t *e;

	if (ui->ring_n == WEBUI_EVENTS_MAX) {
		ev_free(&ui->ring[ui->ring_start]);
		ui->ring_start = (ui->ring_start + 1) % WEBUI_EVENTS_MAX;
		ui->ring_n--;
	}
	e = &ui->ring[(ui->ring_start + ui->ring_n) % WEBUI_EVENTS_MAX];
	ui->ring_n++;
	return e;
}

/* Fill e's workload fields from workload id; false when it is gone. */
static bool ev_workload(const queue_t *q, queue_wl_t id, char **ns, char **name, char **cq)
{
	queue_workload_view_t v;

	if (id == QUEUE_NONE || queue_workload_view(q, id, &v)) {
		*ns = strdup("");
		*name = strdup("");
		*cq = strdup("");
		return false;
	}
	*ns = dup_or_empty(v.namespace_);
	*name = dup_or_empty(v.name);
	*cq = dup_or_empty(queue_cq_name(q, v.cq));
	return true;
}

void webui_events_note(webui_t *ui, const queue_t *q, const queue_result_t *res, int64_t now_ms)
{
	for (size_t i = 0; i < res->n_evictions; i++) {
		const queue_eviction_t *ev = &res->evictions[i];
		ws_event_t *e = ev_push(ui);
		bool preempted = ev->preemptor != QUEUE_NONE;

		e->at_ms = now_ms;
		e->kind = preempted ? WS_EV_PREEMPTED : WS_EV_EVICTED;
		ev_workload(q, ev->victim, &e->namespace_, &e->name, &e->cq);
		e->detail = dup_or_empty(ev->reason_name);
		ev_workload(q, preempted ? ev->preemptor : QUEUE_NONE, &e->preemptor_ns,
			    &e->preemptor, &e->preemptor_cq);
	}
	for (size_t i = 0; i < res->n_admissions; i++) {
		const queue_admission_t *a = &res->admissions[i];
		ws_event_t *e = ev_push(ui);
		char fl[256] = "";
		size_t len = 0;

		e->at_ms = now_ms;
		e->kind = WS_EV_ADMITTED;
		ev_workload(q, a->wl, &e->namespace_, &e->name, &e->cq);
		for (size_t k = 0; k < a->n_assign; k++) {
			const char *fn = queue_flavor_name(q, a->assign[k].flavor);
			if (fn && !strstr(fl, fn) && len + strlen(fn) + 3 < sizeof(fl))
				len += (size_t)snprintf(fl + len, sizeof(fl) - len, "%s%s",
							len ? ", " : "", fn);
		}
		e->detail = strdup(fl);
		e->preemptor_ns = strdup("");
		e->preemptor = strdup("");
		e->preemptor_cq = strdup("");
	}
}

/* Copy the ring, oldest first, into s (strings into its arena). */
static int fill_events(const webui_t *ui, webui_snap_t *s)
{
	s->events = calloc(ui && ui->ring_n ? ui->ring_n : 1, sizeof(*s->events));
	if (!s->events)
		return GPUQ_ENOMEM;
	for (size_t i = 0; ui && i < ui->ring_n; i++) {
		const ws_event_t *e = &ui->ring[(ui->ring_start + i) % WEBUI_EVENTS_MAX];
		ws_event_t *o = &s->events[s->n_events++];

		/* the arena's strings are const; ws_event_t's are char * for the
		 * ring that owns them: the snapshot never writes through them */
		*o = (ws_event_t){e->at_ms,
				  e->kind,
				  (char *)ws_strdup(s, e->namespace_),
				  (char *)ws_strdup(s, e->name),
				  (char *)ws_strdup(s, e->cq),
				  (char *)ws_strdup(s, e->detail),
				  (char *)ws_strdup(s, e->preemptor_ns),
				  (char *)ws_strdup(s, e->preemptor),
				  (char *)ws_strdup(s, e->preemptor_cq)};
	}
	return GPUQ_OK;
}

/* ---- usage: the chargeback rows (ledger_window, the one rule) ---- */

static void prices_free(ledger_price_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].flavor); /* malloc'd by webui_prices_set */
	free(v);
}

int webui_prices_set(webui_t *ui, const ledger_price_t *prices, size_t n)
{
	ledger_price_t *v = NULL;

	if (n > WEBUI_PRICES_MAX)
		return GPUQ_EINVAL;
	for (size_t i = 0; i < n; i++) /* ledger_window would refuse it */
		if (!isfinite(prices[i].per_hour) || prices[i].per_hour < 0 ||
		    prices[i].per_hour > LEDGER_PRICE_MAX)
			return GPUQ_EINVAL;
	if (n && !(v = calloc(n, sizeof(*v))))
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i].per_hour = prices[i].per_hour;
		v[i].flavor = strdup(prices[i].flavor ? prices[i].flavor : "");
		if (!v[i].flavor) {
			prices_free(v, i);
			return GPUQ_ENOMEM;
		}
	}
	prices_free(ui->prices, ui->n_prices);
	ui->prices = v;
	ui->n_prices = n;
	return GPUQ_OK;
}

int webui_prices_from_policy(webui_t *ui, const policy_t *p)
{
	ledger_price_t v[WEBUI_PRICES_MAX];
	size_t n = 0;

	for (size_t i = 0; i < policy_flavor_count(p) && n < WEBUI_PRICES_MAX; i++) {
		const policy_flavor_t *f = policy_flavor_at(p, i);
		if (f->has_price)
			v[n++] = (ledger_price_t){f->name, f->price_per_hour};
	}
	return webui_prices_set(ui, v, n);
}

/* The prices ui holds, copied into s (flavors into its arena). */
static int fill_prices(const webui_t *ui, webui_snap_t *s)
{
	size_t n = ui ? ui->n_prices : 0;

	s->prices = calloc(n ? n : 1, sizeof(*s->prices));
	if (!s->prices)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->prices[i] =
		    (ledger_price_t){ws_strdup(s, ui->prices[i].flavor), ui->prices[i].per_hour};
	s->n_prices = n;
	return GPUQ_OK;
}

/* Usage per namespace over [now - WEBUI_USAGE_WINDOW_MS, now] from q's
 * ledger at s's prices: ledger_window's rows, as `gpuq report usage`. */
static int fill_usage(const queue_t *q, webui_snap_t *s)
{
	const ledger_t *l = queue_ledger(q);
	ledger_query_t query = {s->now_ms - WEBUI_USAGE_WINDOW_MS,
				s->now_ms,
				s->now_ms,
				LEDGER_BY_NAMESPACE,
				s->prices,
				s->n_prices};
	ledger_report_t rep = {0};
	int rc;

	if (!l)
		return GPUQ_OK;
	rc = ledger_window(l, &query, &rep);
	if (rc)
		return rc;
	s->usage_from_ms = rep.from_ms;
	s->usage_to_ms = rep.to_ms;
	s->usage = calloc(rep.n_rows ? rep.n_rows : 1, sizeof(*s->usage));
	if (!s->usage) {
		ledger_report_deinit(&rep);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < rep.n_rows; i++) {
		const ledger_row_t *r = &rep.rows[i];
		s->usage[i] =
		    (ws_usage_t){ws_strdup(s, r->group), ws_strdup(s, r->resource), r->accelerator,
				 r->nominal_hours,	 r->borrowed_hours,	    r->cost};
	}
	s->n_usage = rep.n_rows;
	ledger_report_deinit(&rep);
	return GPUQ_OK;
}

/* ---- build and publish ---- */

/* The snapshot of q; with every pending workload (s->vis) when vis. */
static int snap_build(webui_t *ui, const queue_t *q, int64_t now_ms, bool vis, webui_snap_t **out)
{
	webui_snap_t *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return GPUQ_ENOMEM;
	atomic_init(&s->refs, 1);
	s->now_ms = now_ms;
	s->has_vis = vis;
	s->n_cohorts = queue_cohort_count(q);
	s->cohorts = calloc(s->n_cohorts ? s->n_cohorts : 1, sizeof(*s->cohorts));
	rc = s->cohorts ? GPUQ_OK : GPUQ_ENOMEM;
	for (uint32_t i = 0; !rc && i < s->n_cohorts; i++)
		s->cohorts[i] = ws_strdup(s, queue_cohort_name(q, i));
	if (!rc)
		rc = fill_cqs(q, s);
	if (!rc)
		rc = fill_lqs(q, s);
	if (!rc)
		rc = fill_workloads(ui, q, s, vis);
	if (!rc)
		rc = fill_events(ui, s);
	if (!rc)
		rc = fill_prices(ui, s);
	if (!rc)
		rc = fill_usage(q, s);
	if (!rc)
		rc = ws_econ_fill(q, s);
	if (!rc && s->arena.failed)
		rc = GPUQ_ENOMEM;
	if (rc) {
		webui_snap_unref(s);
		return rc;
	}
	*out = s;
	return GPUQ_OK;
}

int webui_snap_build(webui_t *ui, const queue_t *q, int64_t now_ms, webui_snap_t **out)
{
	return snap_build(ui, q, now_ms, true, out);
}

static void snap_ref(void *s)
{
	atomic_fetch_add(&((webui_snap_t *)s)->refs, 1);
}

static void snap_unref(void *s)
{
	webui_snap_unref(s);
}

int ws_published_init(webui_t *ui)
{
	return gpuq_pub_init(&ui->published, snap_ref, snap_unref);
}

/* Make s the published snapshot (its reference moves in; NULL: none) and
 * wake the requests waiting for a fresh one. */
static void snap_swap(webui_t *ui, webui_snap_t *s)
{
	if (s)
		s->built_mono_ms = gpuq_mono_ms();
	gpuq_pub_swap(&ui->published, s);
}

static int publish(webui_t *ui, const queue_t *q, int64_t now_ms, bool fixed)
{
	webui_snap_t *s = NULL;
	bool idle, vis;
	int rc;

	if (!atomic_load(&ui->leader))
		return GPUQ_OK;
	if (!q) {
		snap_swap(ui, NULL);
		return GPUQ_OK;
	}
	idle = gpuq_pub_has(&ui->published) &&
	       gpuq_mono_ms() - atomic_load(&ui->last_api_ms) >= atomic_load(&ui->idle_ms);
	if (idle && !fixed)
		return GPUQ_OK; /* nobody looks: the next request waits for a new one */
	/* every pending workload only while the visibility API is in use
	 * (most of the cost with a long queue: a reason each) */
	vis = ui->visibility &&
	      (fixed || gpuq_mono_ms() - atomic_load(&ui->last_vis_ms) < atomic_load(&ui->idle_ms));
	rc = snap_build(ui, q, now_ms, vis, &s);
	if (rc)
		return rc;
	s->fixed = fixed;
	snap_swap(ui, s);
	return GPUQ_OK;
}

int webui_publish(webui_t *ui, const queue_t *q, int64_t now_ms)
{
	return publish(ui, q, now_ms, false);
}

int webui_publish_fixed(webui_t *ui, const queue_t *q, int64_t now_ms)
{
	return publish(ui, q, now_ms, true);
}

bool ws_old(const webui_snap_t *s, int64_t now_ms)
{
	return !s->fixed && now_ms - s->built_mono_ms > WEBUI_PUBLISH_MS;
}

static bool snap_stale(const void *s, int64_t now_ms)
{
	return ws_old(s, now_ms);
}

static bool snap_stale_vis(const void *s, int64_t now_ms)
{
	return ws_old(s, now_ms) || !((const webui_snap_t *)s)->has_vis;
}

void ws_wait_fresh(webui_t *ui, bool vis, int64_t deadline_ms)
{
	gpuq_pub_wait(&ui->published, vis ? snap_stale_vis : snap_stale, deadline_ms);
}

void webui_leader_set(webui_t *ui, bool leader)
{
	bool was = atomic_exchange(&ui->leader, leader);

	if (was && !leader)
		snap_swap(ui, NULL);
}

webui_snap_t *ws_current(webui_t *ui)
{
	return gpuq_pub_get(&ui->published);
}

void ws_events_free(webui_t *ui)
{
	for (size_t i = 0; i < ui->ring_n; i++)
		ev_free(&ui->ring[(ui->ring_start + i) % WEBUI_EVENTS_MAX]);
	ui->ring_n = 0;
}

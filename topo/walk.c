/*
 * topo/walk.c: one pod set's placement on a built tree: choose a domain
 * (the tightest that holds it; for PREFERRED the fewest domains inside the
 * narrowest wider one that does), walk down it, largest child first and
 * at the last child needed the smallest that holds the rest, to the
 * nodes; and why it does not fit.
 */
#include "topo/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- The walk ---- */

static int emit(fit_t *f, uint32_t id, int64_t pods)
{
	if (f->n_out >= f->out_cap)
		return GPUQ_ELIMIT;
	GPUQ_ASSERT(pods > 0 && pods <= INT32_MAX);
	f->out[f->n_out].node = id;
	f->out[f->n_out].count = (int32_t)pods;
	f->out[f->n_out].ps = (uint16_t)f->ps;
	f->n_out++;
	return GPUQ_OK;
}

typedef struct {
	const fit_t *f;
	size_t l;
} by_metric_t;

/* Larger first, then the earlier in the order. */
static int by_metric(const void *a, const void *b, void *arg)
{
	const by_metric_t *c = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int64_t mx = topo_metric(c->f, c->l, x), my = topo_metric(c->f, c->l, y);

	if (mx != my)
		return mx > my ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Domains lo..hi of level l that hold anything, sorted by by_metric, on
 * the stack: their count (the caller pops them). */
static size_t push_sorted(fit_t *f, size_t l, uint32_t lo, uint32_t hi)
{
	uint32_t *v = f->stack + f->sp;
	size_t n = 0;
	by_metric_t c = {f, l};

	for (uint32_t d = lo; d < hi; d++)
		if (topo_metric(f, l, d) > 0)
			v[n++] = d;
	GPUQ_ASSERT(f->sp + n <= f->stack_cap);
	f->sp += n;
	qsort_r(v, n, sizeof(*v), by_metric, &c);
	return n;
}

static int greedy(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need);

/* Put `need` (in level l's measure) of the pod set at hand into domain d. */
int topo_place(fit_t *f, size_t l, uint32_t d, int64_t need)
{
	const dom_t *x = &f->dom[l][d];

	GPUQ_ASSERT(need <= topo_metric(f, l, d));
	if (l + 1 == f->nl)
		return emit(f, f->t->order[x->lo], need);
	return greedy(f, l + 1, x->c0, x->c1, l == f->S ? need * f->s : need);
}

/* Put `need` into the fewest of domains lo..hi at level l: the largest
 * first, and at the last one needed the smallest that holds the rest (so
 * the big ones stay whole). The caller knows they hold it. */
static int greedy(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need)
{
	size_t base = f->sp, n = push_sorted(f, l, lo, hi), k = 0;
	const uint32_t *v = f->stack + base;
	int rc = GPUQ_OK;

	while (need > 0 && rc == GPUQ_OK) {
		int64_t m;

		GPUQ_ASSERT(k < n);
		m = topo_metric(f, l, v[k]);
		if (m >= need) {
			size_t j = k;

			while (j + 1 < n && topo_metric(f, l, v[j + 1]) >= need)
				j++;
			while (j > k && topo_metric(f, l, v[j - 1]) == topo_metric(f, l, v[j]))
				j--;
			rc = topo_place(f, l, v[j], need);
			need = 0;
		} else {
			rc = topo_place(f, l, v[k++], m);
			need -= m;
		}
	}
	f->sp = base;
	return rc;
}

/* How many of domains lo..hi at level l the greedy walk needs for `need`
 * (UINT32_MAX: they do not hold it). */
static uint32_t greedy_count(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need)
{
	size_t base = f->sp, n = push_sorted(f, l, lo, hi);
	uint32_t k = 0;

	while (need > 0 && k < n)
		need -= topo_metric(f, l, f->stack[base + k++]);
	f->sp = base;
	return need > 0 ? UINT32_MAX : k;
}

/* The range of level L's domains under domain d of level l (l <= L). */
static void below(const fit_t *f, size_t l, uint32_t d, size_t L, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = d, b = d + 1;

	for (size_t x = l; x < L; x++) {
		uint32_t c1 = f->dom[x][b - 1].c1;

		a = f->dom[x][a].c0;
		b = c1;
	}
	*lo = a;
	*hi = b;
}

/* ---- Choices ---- */

/* Among domains lo..hi at level l, the tightest holding `need` units:
 * least units, then the smallest name. TOPO_NONE when none does. */
uint32_t topo_best_fit(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need)
{
	uint32_t best = TOPO_NONE;

	for (uint32_t d = lo; d < hi; d++) {
		int64_t u = f->dom[l][d].units;

		if (u < need)
			continue;
		if (best == TOPO_NONE || u < f->dom[l][best].units ||
		    (u == f->dom[l][best].units && topo_lead_cmp(f, l, d, best) < 0))
			best = d;
	}
	return best;
}

/* Why the pod set at hand does not fit at level L (sums are global). */
void topo_why_fill(fit_t *f, size_t L, int64_t total, topo_why_t *why)
{
	const topo_podset_t *ps = &f->ask->ps[f->ps];
	size_t l = L;
	uint32_t best = TOPO_NONE;
	int64_t need = ps->count, got = 0;

	if (!why)
		return;
	if (f->s > 1) { /* does a single slice fit anywhere? */
		for (uint32_t d = 0; d < f->nd[f->S]; d++)
			if (best == TOPO_NONE || f->dom[f->S][d].pods > f->dom[f->S][best].pods)
				best = d;
		if (best != TOPO_NONE && f->dom[f->S][best].pods < f->s) {
			l = f->S;
			need = f->s;
			got = f->dom[l][best].pods;
		} else {
			best = TOPO_NONE;
		}
	}
	if (l == L) {
		for (uint32_t d = 0; d < f->nd[L]; d++) {
			int64_t u = f->dom[L][d].units;

			if (best == TOPO_NONE || u > f->dom[L][best].units ||
			    (u == f->dom[L][best].units && topo_lead_cmp(f, L, d, best) < 0))
				best = d;
		}
		got = best == TOPO_NONE ? 0 : f->dom[L][best].units * f->s;
	}
	why->level = (uint8_t)l;
	why->ps = (uint16_t)f->ps;
	why->domain = best == TOPO_NONE || total == 0 ? TOPO_NONE : topo_lead(f, l, best);
	why->best_pods = topo_clamp32(got);
	why->need_pods = topo_clamp32(need);
	why->total_pods = topo_clamp32(total);
}

/* PREFERRED past its level: the narrowest wider level with a domain that
 * holds it all, placed into the fewest domains at L inside the one that
 * needs the fewest; else the fewest domains at level 0. */
static int spill(fit_t *f, size_t L, int64_t need, int64_t total, topo_why_t *why)
{
	int64_t units = 0;

	for (size_t w = L; w-- > 0;) {
		uint32_t best = TOPO_NONE, best_k = UINT32_MAX, lo = 0, hi = 0;

		for (uint32_t d = 0; d < f->nd[w]; d++) {
			uint32_t a, b, k;

			if (f->dom[w][d].units < need)
				continue;
			below(f, w, d, L, &a, &b);
			k = greedy_count(f, L, a, b, need);
			if (best == TOPO_NONE || k < best_k ||
			    (k == best_k && (f->dom[w][d].units < f->dom[w][best].units ||
					     (f->dom[w][d].units == f->dom[w][best].units &&
					      topo_lead_cmp(f, w, d, best) < 0)))) {
				best = d, best_k = k, lo = a, hi = b;
			}
		}
		if (best != TOPO_NONE)
			return greedy(f, L, lo, hi, need);
	}
	for (uint32_t d = 0; d < f->nd[0]; d++)
		units += f->dom[0][d].units;
	if (units >= need)
		return greedy(f, 0, 0, f->nd[0], need);
	topo_why_fill(f, L, total, why);
	return GPUQ_EAGAIN;
}

/* The pod set at hand alone, by the ask's mode, against what is free less
 * f->extra. */
int topo_fit_one(fit_t *f, topo_why_t *why)
{
	const topo_ask_t *a = f->ask;
	int64_t total = topo_sums_all(f), need = a->ps[f->ps].count / f->s, units = 0;
	uint32_t d;

	if (a->mode == TOPO_UNCONSTRAINED) {
		for (d = 0; d < f->nd[f->S]; d++)
			units += f->dom[f->S][d].units;
		if (units >= need)
			return greedy(f, f->S, 0, f->nd[f->S], need);
		topo_why_fill(f, 0, total, why);
		return GPUQ_EAGAIN;
	}
	d = topo_best_fit(f, a->level, 0, f->nd[a->level], need);
	if (d != TOPO_NONE)
		return topo_place(f, a->level, d, need);
	if (a->mode == TOPO_PREFERRED)
		return spill(f, a->level, need, total, why);
	topo_why_fill(f, a->level, total, why);
	return GPUQ_EAGAIN;
}

/* What the entries out[from..n_out) hold, added to f->extra. */

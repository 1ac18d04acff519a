/*
 * topo/fit.c: topo_fit: an ask checked, the tree built, its pod sets
 * placed: one alone (walk.c), several one after another against scratch
 * amounts (what earlier pod sets took), and with REQUIRED all in one
 * domain: the domains that hold each alone, least slack first, the first
 * that holds them together.
 */
#include "topo/internal.h"

#include <stdlib.h>
#include <string.h>

static void extra_add(fit_t *f, size_t from)
{
	const size_t R = f->t->n_res;

	for (size_t i = from; i < f->n_out; i++) {
		const topo_place_t *pl = &f->out[i];
		int64_t *ex = f->extra + pl->node * (R + 1);

		for (size_t r = 0; r < R; r++)
			ex[r] += pl->count * f->ask->ps[pl->ps].req[r];
		ex[R] += pl->count;
	}
}

/* The pod sets, larger counts first (then by index): the order they are
 * placed in when several share the free capacity. */
static void podsets_order(const topo_ask_t *a, size_t *idx)
{
	for (size_t i = 0; i < a->n_ps; i++) {
		size_t j = i;

		while (j > 0 && a->ps[idx[j - 1]].count < a->ps[i].count) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
}

/* Every pod set of the ask one after another, each by the mode alone. */
static int fit_each(fit_t *f, topo_why_t *why)
{
	size_t idx[TOPO_PODSETS_MAX] = {0};

	podsets_order(f->ask, idx);
	f->n_out = 0;
	if (f->extra)
		memset(f->extra, 0, f->t->n_nodes * (f->t->n_res + 1) * sizeof(*f->extra));
	for (size_t i = 0; i < f->ask->n_ps; i++) {
		size_t from = f->n_out;
		int rc;

		topo_podset_at(f, idx[i]);
		rc = topo_fit_one(f, why);
		if (rc)
			return rc;
		if (f->extra)
			extra_add(f, from);
	}
	return GPUQ_OK;
}

typedef struct {
	fit_t *f;
	size_t l;
	const int64_t *score;
} by_score_t;

/* Less slack first, then the smallest name. */
static int by_score(const void *a, const void *b, void *arg)
{
	const by_score_t *c = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (c->score[x] != c->score[y])
		return c->score[x] < c->score[y] ? -1 : 1;
	return topo_lead_cmp(c->f, c->l, x, y);
}

/* Domains at L that hold each pod set alone, scored by their slack summed
 * over the pod sets (-1: one does not fit) into score, listed in cand by
 * score: their count. 0 with *why filled when none does. total[ps]: the
 * pods of pod set ps all usable nodes hold. */
static uint32_t group_candidates(fit_t *f, const size_t *idx, int64_t *score, uint32_t *cand,
				 int64_t *total, topo_why_t *why)
{
	const size_t L = f->ask->level;
	uint32_t n = 0;
	by_score_t c = {f, L, score};

	for (size_t i = 0; i < f->ask->n_ps; i++) {
		int64_t need;
		uint32_t best = TOPO_NONE, alive = 0;

		topo_podset_at(f, idx[i]);
		total[f->ps] = topo_sums_all(f);
		need = f->ask->ps[f->ps].count / f->s;
		if (topo_best_fit(f, L, 0, f->nd[L], need) == TOPO_NONE) {
			topo_why_fill(f, L, total[f->ps], why);
			return 0;
		}
		for (uint32_t d = 0; d < f->nd[L]; d++) {
			int64_t u = f->dom[L][d].units;

			if (score[d] < 0)
				continue;
			if (best == TOPO_NONE || u > f->dom[L][best].units)
				best = d;
			score[d] = u < need ? -1 : score[d] + (u - need);
			alive += u >= need;
		}
		if (alive == 0) { /* each fits alone somewhere, not with the ones before */
			if (why) {
				why->level = (uint8_t)L;
				why->ps = (uint16_t)f->ps;
				why->domain = topo_lead(f, L, best);
				why->best_pods = topo_clamp32(f->dom[L][best].units * f->s);
				why->need_pods = topo_clamp32(f->ask->ps[f->ps].count);
				why->total_pods = topo_clamp32(total[f->ps]);
			}
			return 0;
		}
	}
	for (uint32_t d = 0; d < f->nd[L]; d++)
		if (score[d] >= 0)
			cand[n++] = d;
	qsort_r(cand, n, sizeof(*cand), by_score, &c);
	return n;
}

/* The pod sets of the ask one after another into domain c at L, against
 * scratch amounts: GPUQ_EAGAIN when one does not fit after the ones
 * before (*why filled). */
static int group_into(fit_t *f, const size_t *idx, uint32_t c, topo_why_t *why)
{
	const size_t L = f->ask->level, R = f->t->n_res;
	const dom_t *x = &f->dom[L][c];

	for (uint32_t p = x->lo; p < x->hi; p++)
		memset(f->extra + f->t->order[p] * (R + 1), 0, (R + 1) * sizeof(*f->extra));
	f->n_out = 0;
	for (size_t i = 0; i < f->ask->n_ps; i++) {
		size_t from = f->n_out;
		int64_t need;
		int rc;

		topo_podset_at(f, idx[i]);
		topo_sums(f, L, c);
		need = f->ask->ps[f->ps].count / f->s;
		if (f->dom[L][c].units < need) {
			if (why) {
				why->level = (uint8_t)L;
				why->ps = (uint16_t)f->ps;
				why->domain = topo_lead(f, L, c);
				why->best_pods = topo_clamp32(f->dom[L][c].units * f->s);
				why->need_pods = topo_clamp32(f->ask->ps[f->ps].count);
				why->total_pods = 0; /* the caller's */
			}
			return GPUQ_EAGAIN;
		}
		rc = topo_place(f, L, c, need);
		if (rc)
			return rc;
		extra_add(f, from);
	}
	return GPUQ_OK;
}

/* Several pod sets, all in one domain at the ask's level: the domains
 * that hold each alone, least slack first, the first that holds them
 * together. */
static int fit_group(fit_t *f, topo_why_t *why)
{
	const size_t L = f->ask->level;
	size_t idx[TOPO_PODSETS_MAX] = {0};
	int64_t total[TOPO_PODSETS_MAX] = {0};
	uint32_t n = f->nd[L] ? f->nd[L] : 1, nc;
	int64_t *score = calloc(n, sizeof(*score));
	uint32_t *cand = malloc(n * sizeof(*cand));
	int rc = GPUQ_EAGAIN;

	if (!score || !cand) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	podsets_order(f->ask, idx);
	nc = group_candidates(f, idx, score, cand, total, why);
	for (uint32_t i = 0; i < nc; i++) {
		topo_why_t w;

		rc = group_into(f, idx, cand[i], &w);
		if (rc != GPUQ_EAGAIN)
			break;
		if (i == 0 && why) { /* the tightest candidate says why */
			*why = w;
			why->total_pods = topo_clamp32(total[w.ps]);
		}
	}
out:
	free(score);
	free(cand);
	return rc;
}

/* ---- The call ---- */

static int ask_check(const topo_t *t, const topo_ask_t *a)
{
	if (!a || !a->ps || a->n_ps < 1 || a->n_ps > TOPO_PODSETS_MAX)
		return GPUQ_EINVAL;
	if (a->mode != TOPO_UNCONSTRAINED && a->mode != TOPO_REQUIRED && a->mode != TOPO_PREFERRED)
		return GPUQ_EINVAL;
	if (a->mode != TOPO_UNCONSTRAINED && a->level >= t->n_levels)
		return GPUQ_EINVAL;
	for (size_t i = 0; i < a->n_ps; i++) {
		const topo_podset_t *p = &a->ps[i];

		if (p->count < 1 || !p->req || p->slice_size < 0)
			return GPUQ_EINVAL;
		for (size_t r = 0; r < t->n_res; r++)
			if (p->req[r] < 0)
				return GPUQ_EINVAL;
		if (p->slice_size > 0 &&
		    (p->count % p->slice_size != 0 || p->slice_level >= t->n_levels ||
		     (a->mode != TOPO_UNCONSTRAINED && p->slice_level < a->level)))
			return GPUQ_EINVAL;
	}
	return GPUQ_OK;
}

/* By pod set, then by node id. */
static int place_cmp(const void *a, const void *b)
{
	const topo_place_t *x = a, *y = b;

	if (x->ps != y->ps)
		return x->ps < y->ps ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

int topo_fit(const topo_t *t, const topo_ask_t *ask, topo_place_t *out, size_t out_cap,
	     size_t *n_out, topo_why_t *why)
{
	fit_t f = {0};
	int rc;

	if (!t || !n_out || (!out && out_cap > 0))
		return GPUQ_EINVAL;
	*n_out = 0;
	rc = ask_check(t, ask);
	if (rc)
		return rc;
	f.t = t;
	f.ask = ask;
	f.out = out;
	f.out_cap = out_cap;
	rc = topo_tree_build(&f, false);
	if (rc)
		return rc;
	f.stack = malloc((f.stack_cap ? f.stack_cap : 1) * sizeof(*f.stack));
	if (ask->n_ps > 1)
		f.extra = calloc((size_t)t->n_nodes * (t->n_res + 1) + 1, sizeof(*f.extra));
	if (!f.stack || (ask->n_ps > 1 && !f.extra)) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	if (ask->n_ps == 1) {
		topo_podset_at(&f, 0);
		rc = topo_fit_one(&f, why);
	} else if (ask->mode == TOPO_REQUIRED) {
		rc = fit_group(&f, why);
	} else {
		rc = ask->mode == TOPO_PREFERRED ? fit_group(&f, NULL) : GPUQ_EAGAIN;
		if (rc == GPUQ_EAGAIN)
			rc = fit_each(&f, why);
	}
	if (rc == GPUQ_OK) {
		if (out) /* NULL only with out_cap 0: no fit gets here */
			qsort(out, f.n_out, sizeof(*out), place_cmp);
		*n_out = f.n_out;
	}
out:
	free(f.stack);
	free(f.extra);
	topo_tree_free(&f);
	return rc;
}

/*
 * topo/fit.c: where an ask's pods fit. Each call builds the domain tree
 * from t's order (a domain at a level is a run of positions; one more
 * level below the labels' holds the nodes themselves), counts per node
 * how many pods of the pod set at hand it can take, sums them up the tree
 * (in slices at and above the slice level), chooses a domain and walks
 * down it, largest child first and at the last child needed the smallest
 * that holds the rest, to the nodes. Its memory is allocated per call and
 * bounded by the nodes times the levels.
 */
#include "topo/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	uint32_t lo, hi; /* positions in t->order, [lo, hi) */
	uint32_t c0, c1; /* its children at the next level, [c0, c1) (nodes: none) */
	uint32_t lead;	 /* node id of the smallest name in it; TOPO_NONE until asked */
	int64_t pods;	 /* pods of the pod set at hand it can take */
	int64_t units;	 /* at the slice level and above: whole slices; else pods */
} dom_t;

typedef struct {
	const topo_t *t;
	const topo_ask_t *ask;
	size_t nl;			 /* tree levels: the label levels, then the nodes */
	dom_t *dom[TOPO_LEVELS_MAX + 1]; /* per level, one block */
	uint32_t nd[TOPO_LEVELS_MAX + 1];
	uint32_t *stack;   /* the greedy walk's sorted lists, one per depth */
	size_t sp;	   /* used of stack */
	size_t stack_cap;  /* the domains of every level: a walk's bound */
	int64_t *extra;	   /* per node id n_res + 1: what earlier pod sets of the
			      ask took (amounts, then pods); NULL with one */
	size_t ps;	   /* the pod set at hand */
	size_t S;	   /* its slice level (the node level without slices) */
	int64_t s;	   /* its slice size (1 without) */
	topo_place_t *out; /* the caller's */
	size_t out_cap;
	size_t n_out;
} fit_t;

/* ---- The tree ---- */

/* The domains of every level from t's order: f->dom, f->nd. Every field
 * of every domain is written; zeroed asks for the block zeroed first
 * (topo_tree_check: what the static analyser can follow). */
static int tree_build(fit_t *f, bool zeroed)
{
	const topo_t *t = f->t;
	uint32_t n = t->n_nodes, cnt[TOPO_LEVELS_MAX + 1] = {0};
	size_t total = 0;
	dom_t *block;

	f->nl = t->n_levels + 1;
	for (uint32_t p = 0; p < n; p++)
		for (size_t l = t->brk[p]; l < t->n_levels; l++)
			f->nd[l]++;
	f->nd[t->n_levels] = n;
	for (size_t l = 0; l < f->nl; l++)
		total += f->nd[l];
	block = zeroed ? calloc(total ? total : 1, sizeof(*block))
		       : malloc((total ? total : 1) * sizeof(*block));
	if (!block)
		return GPUQ_ENOMEM;
	f->dom[0] = block;
	for (size_t l = 0, off = 0; l < f->nl; off += f->nd[l], l++)
		f->dom[l] = block + off;
	f->stack_cap = total;
	for (uint32_t p = 0; p < n; p++)
		for (size_t l = 0; l < f->nl; l++) {
			uint32_t c0 = l + 1 < f->nl ? cnt[l + 1] : 0;
			uint32_t k = cnt[l];

			if (l < t->n_levels && t->brk[p] > l)
				continue;
			if (k > 0) { /* p closes the domain before */
				f->dom[l][k - 1].hi = p;
				f->dom[l][k - 1].c1 = c0;
			}
			f->dom[l][k] = (dom_t){.lo = p,
					       .hi = n,
					       .c0 = c0,
					       .c1 = l + 1 < f->nl ? f->nd[l + 1] : 0,
					       .lead = l == t->n_levels ? t->order[p] : TOPO_NONE};
			cnt[l]++;
		}
	return GPUQ_OK;
}

static void tree_free(fit_t *f)
{
	free(f->dom[0]); /* the block every level's array is in */
}

/* The node id of the smallest name in domain d at level l. Inside a
 * domain of the last label level the order is by name, so its first. */
static uint32_t lead(fit_t *f, size_t l, uint32_t d)
{
	dom_t *x = &f->dom[l][d];

	if (x->lead != TOPO_NONE)
		return x->lead;
	if (l + 2 >= f->nl) {
		x->lead = f->t->order[x->lo];
		return x->lead;
	}
	for (uint32_t c = x->c0; c < x->c1; c++) {
		uint32_t cl = lead(f, l + 1, c);

		if (x->lead == TOPO_NONE ||
		    strcmp(f->t->nodes[cl].name, f->t->nodes[x->lead].name) < 0)
			x->lead = cl;
	}
	return x->lead;
}

static int lead_cmp(fit_t *f, size_t l, uint32_t a, uint32_t b)
{
	return strcmp(f->t->nodes[lead(f, l, a)].name, f->t->nodes[lead(f, l, b)].name);
}

/* ---- Capacity ---- */

/* How many pods of the pod set at hand node id can take. */
static int64_t node_pods(const fit_t *f, uint32_t id)
{
	const struct topo_node *n = &f->t->nodes[id];
	const topo_podset_t *ps = &f->ask->ps[f->ps];
	const int64_t *ex = f->extra ? f->extra + id * (f->t->n_res + 1) : NULL;
	int64_t cap = INT32_MAX; /* no slot requested, no pod cap: a pod set's count at most */

	if (n->deleted || !n->schedulable)
		return 0;
	if (f->ask->node_ok && !f->ask->node_ok(f->ask->ctx, id, f->ps))
		return 0;
	for (size_t r = 0; r < f->t->n_res && cap > 0; r++)
		if (ps->req[r] > 0) {
			int64_t q = topo_free_of(n, r, ex ? ex[r] : 0) / ps->req[r];

			if (q < cap)
				cap = q;
		}
	if (n->pods_max > 0) {
		int64_t pf = (int64_t)n->pods_max - n->pods_used - n->pods_placed -
			     (ex ? ex[f->t->n_res] : 0);

		if (pf < cap)
			cap = pf > 0 ? pf : 0;
	}
	return cap;
}

/* Domain d at level l's pods and units, its subtree's first. */
static void sums(fit_t *f, size_t l, uint32_t d)
{
	dom_t *x = &f->dom[l][d];

	if (l + 1 == f->nl) {
		x->pods = node_pods(f, f->t->order[x->lo]);
	} else {
		x->pods = 0;
		x->units = 0;
		for (uint32_t c = x->c0; c < x->c1; c++) {
			sums(f, l + 1, c);
			x->pods += f->dom[l + 1][c].pods;
			x->units += f->dom[l + 1][c].units;
		}
	}
	if (l == f->S)
		x->units = x->pods / f->s;
	else if (l > f->S)
		x->units = x->pods;
}

static int64_t sums_all(fit_t *f)
{
	int64_t total = 0;

	for (uint32_t d = 0; d < f->nd[0]; d++) {
		sums(f, 0, d);
		total += f->dom[0][d].pods;
	}
	return total;
}

/* What the walk counts at level l: slices at and above the slice level. */
static int64_t metric(const fit_t *f, size_t l, uint32_t d)
{
	return l <= f->S ? f->dom[l][d].units : f->dom[l][d].pods;
}

/* The pod set at hand: ps of the ask. */
static void podset_set(fit_t *f, size_t ps)
{
	const topo_podset_t *p = &f->ask->ps[ps];

	f->ps = ps;
	f->S = p->slice_size > 0 ? p->slice_level : f->nl - 1;
	f->s = p->slice_size > 0 ? p->slice_size : 1;
}

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
	int64_t mx = metric(c->f, c->l, x), my = metric(c->f, c->l, y);

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
		if (metric(f, l, d) > 0)
			v[n++] = d;
	GPUQ_ASSERT(f->sp + n <= f->stack_cap);
	f->sp += n;
	qsort_r(v, n, sizeof(*v), by_metric, &c);
	return n;
}

static int greedy(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need);

/* Put `need` (in level l's measure) of the pod set at hand into domain d. */
static int place(fit_t *f, size_t l, uint32_t d, int64_t need)
{
	const dom_t *x = &f->dom[l][d];

	GPUQ_ASSERT(need <= metric(f, l, d));
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
		m = metric(f, l, v[k]);
		if (m >= need) {
			size_t j = k;

			while (j + 1 < n && metric(f, l, v[j + 1]) >= need)
				j++;
			while (j > k && metric(f, l, v[j - 1]) == metric(f, l, v[j]))
				j--;
			rc = place(f, l, v[j], need);
			need = 0;
		} else {
			rc = place(f, l, v[k++], m);
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
		need -= metric(f, l, f->stack[base + k++]);
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
static uint32_t best_fit(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need)
{
	uint32_t best = TOPO_NONE;

	for (uint32_t d = lo; d < hi; d++) {
		int64_t u = f->dom[l][d].units;

		if (u < need)
			continue;
		if (best == TOPO_NONE || u < f->dom[l][best].units ||
		    (u == f->dom[l][best].units && lead_cmp(f, l, d, best) < 0))
			best = d;
	}
	return best;
}

static int32_t clamp32(int64_t v)
{
	return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* Why the pod set at hand does not fit at level L (sums are global). */
static void why_fill(fit_t *f, size_t L, int64_t total, topo_why_t *why)
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
			    (u == f->dom[L][best].units && lead_cmp(f, L, d, best) < 0))
				best = d;
		}
		got = best == TOPO_NONE ? 0 : f->dom[L][best].units * f->s;
	}
	why->level = (uint8_t)l;
	why->ps = (uint16_t)f->ps;
	why->domain = best == TOPO_NONE || total == 0 ? TOPO_NONE : lead(f, l, best);
	why->best_pods = clamp32(got);
	why->need_pods = clamp32(need);
	why->total_pods = clamp32(total);
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
					      lead_cmp(f, w, d, best) < 0)))) {
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
	why_fill(f, L, total, why);
	return GPUQ_EAGAIN;
}

/* The pod set at hand alone, by the ask's mode, against what is free less
 * f->extra. */
static int fit_one(fit_t *f, topo_why_t *why)
{
	const topo_ask_t *a = f->ask;
	int64_t total = sums_all(f), need = a->ps[f->ps].count / f->s, units = 0;
	uint32_t d;

	if (a->mode == TOPO_UNCONSTRAINED) {
		for (d = 0; d < f->nd[f->S]; d++)
			units += f->dom[f->S][d].units;
		if (units >= need)
			return greedy(f, f->S, 0, f->nd[f->S], need);
		why_fill(f, 0, total, why);
		return GPUQ_EAGAIN;
	}
	d = best_fit(f, a->level, 0, f->nd[a->level], need);
	if (d != TOPO_NONE)
		return place(f, a->level, d, need);
	if (a->mode == TOPO_PREFERRED)
		return spill(f, a->level, need, total, why);
	why_fill(f, a->level, total, why);
	return GPUQ_EAGAIN;
}

/* What the entries out[from..n_out) hold, added to f->extra. */
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

		podset_set(f, idx[i]);
		rc = fit_one(f, why);
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
	return lead_cmp(c->f, c->l, x, y);
}

/* Domains at L that hold each pod set alone, scored by their slack summed
 * over the pod sets (-1: one does not fit) into score, listed in cand by
 * score: their count. 0 with *why filled when none does. */
static uint32_t group_candidates(fit_t *f, const size_t *idx, int64_t *score, uint32_t *cand,
				 topo_why_t *why)
{
	const size_t L = f->ask->level;
	uint32_t n = 0;
	by_score_t c = {f, L, score};

	for (size_t i = 0; i < f->ask->n_ps; i++) {
		int64_t total, need;
		uint32_t best = TOPO_NONE, alive = 0;

		podset_set(f, idx[i]);
		total = sums_all(f);
		need = f->ask->ps[f->ps].count / f->s;
		if (best_fit(f, L, 0, f->nd[L], need) == TOPO_NONE) {
			why_fill(f, L, total, why);
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
				why->domain = lead(f, L, best);
				why->best_pods = clamp32(f->dom[L][best].units * f->s);
				why->need_pods = clamp32(f->ask->ps[f->ps].count);
				why->total_pods = clamp32(total);
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

		podset_set(f, idx[i]);
		sums(f, L, c);
		need = f->ask->ps[f->ps].count / f->s;
		if (f->dom[L][c].units < need) {
			if (why) {
				why->level = (uint8_t)L;
				why->ps = (uint16_t)f->ps;
				why->domain = lead(f, L, c);
				why->best_pods = clamp32(f->dom[L][c].units * f->s);
				why->need_pods = clamp32(f->ask->ps[f->ps].count);
				why->total_pods = 0; /* the caller's */
			}
			return GPUQ_EAGAIN;
		}
		rc = place(f, L, c, need);
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
	uint32_t n = f->nd[L] ? f->nd[L] : 1, nc;
	int64_t *score = calloc(n, sizeof(*score));
	uint32_t *cand = malloc(n * sizeof(*cand));
	int rc = GPUQ_EAGAIN;

	if (!score || !cand) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	podsets_order(f->ask, idx);
	nc = group_candidates(f, idx, score, cand, why);
	for (uint32_t i = 0; i < nc; i++) {
		topo_why_t w;

		rc = group_into(f, idx, cand[i], &w);
		if (rc != GPUQ_EAGAIN)
			break;
		if (i == 0 && why) {
			size_t ps = w.ps;

			*why = w;
			podset_set(f, ps); /* the pod set's total over every node */
			why->total_pods = clamp32(sums_all(f));
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
	rc = tree_build(&f, false);
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
		podset_set(&f, 0);
		rc = fit_one(&f, why);
	} else if (ask->mode == TOPO_REQUIRED) {
		rc = fit_group(&f, why);
	} else {
		rc = ask->mode == TOPO_PREFERRED ? fit_group(&f, NULL) : GPUQ_EAGAIN;
		if (rc == GPUQ_EAGAIN)
			rc = fit_each(&f, why);
	}
	if (rc == GPUQ_OK) {
		qsort(out, f.n_out, sizeof(*out), place_cmp);
		*n_out = f.n_out;
	}
out:
	free(f.stack);
	free(f.extra);
	tree_free(&f);
	return rc;
}

/* ---- The tree's invariants (topo_check) ---- */

/* Level l's domains cover the order in runs whose nodes agree on levels
 * 0..l (and a run's first differs from the node before it), each run's
 * children cover it, and the placed pods summed over the level's domains
 * are the nodes' own. */
static void level_check(fit_t *f, size_t l, int64_t placed_total)
{
	const topo_t *t = f->t;
	int64_t sum = 0;

	for (uint32_t d = 0; d < f->nd[l]; d++) {
		const dom_t *x = &f->dom[l][d];

		GPUQ_ASSERT(x->lo < x->hi && x->lo == (d ? f->dom[l][d - 1].hi : 0));
		GPUQ_ASSERT(d + 1 < f->nd[l] || x->hi == t->n_nodes);
		if (l + 1 < f->nl)
			GPUQ_ASSERT(x->c0 < x->c1 && f->dom[l + 1][x->c0].lo == x->lo &&
				    f->dom[l + 1][x->c1 - 1].hi == x->hi);
		for (uint32_t p = x->lo; p < x->hi; p++) {
			sum += t->nodes[t->order[p]].pods_placed;
			if (l < t->n_levels)
				GPUQ_ASSERT(
				    topo_same_domain(t, t->order[x->lo], t->order[p], (uint8_t)l));
		}
		if (l < t->n_levels && x->lo > 0)
			GPUQ_ASSERT(
			    !topo_same_domain(t, t->order[x->lo - 1], t->order[x->lo], (uint8_t)l));
	}
	GPUQ_ASSERT(sum == placed_total);
}

void topo_tree_check(const topo_t *t)
{
	fit_t f = {0};
	int64_t placed = 0;

	f.t = t;
	GPUQ_ASSERT(tree_build(&f, true) == GPUQ_OK);
	for (uint32_t id = 0; id < t->n_nodes; id++)
		placed += t->nodes[id].pods_placed;
	for (size_t l = 0; l < f.nl; l++)
		level_check(&f, l, placed);
	tree_free(&f);
}

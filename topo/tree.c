/*
 * topo/tree.c: the domain tree of one fit, built from t's order (a domain
 * at a level is a run of positions; one more level below the labels'
 * holds the nodes themselves), and what each node and domain can take of
 * the pod set at hand, summed up the tree (in slices at and above the
 * slice level). Its memory is the caller's fit_t, allocated per call and
 * bounded by the nodes times the levels.
 */
#include "topo/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- The tree ---- */

/* The domains of every level from t's order: f->dom, f->nd. Every field
 * of every domain is written; zeroed asks for the block zeroed first
 * (topo_tree_check: what the static analyser can follow). */
int topo_tree_build(fit_t *f, bool zeroed)
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

void topo_tree_free(fit_t *f)
{
	free(f->dom[0]); /* the block every level's array is in */
}

/* The node id of the smallest name in domain d at level l. Inside a
 * domain of the last label level the order is by name, so its first. */
uint32_t topo_lead(fit_t *f, size_t l, uint32_t d)
{
	dom_t *x = &f->dom[l][d];

	if (x->lead != TOPO_NONE)
		return x->lead;
	if (l + 2 >= f->nl) {
		x->lead = f->t->order[x->lo];
		return x->lead;
	}
	for (uint32_t c = x->c0; c < x->c1; c++) {
		uint32_t cl = topo_lead(f, l + 1, c);

		if (x->lead == TOPO_NONE ||
		    strcmp(f->t->nodes[cl].name, f->t->nodes[x->lead].name) < 0)
			x->lead = cl;
	}
	return x->lead;
}

int topo_lead_cmp(fit_t *f, size_t l, uint32_t a, uint32_t b)
{
	return strcmp(f->t->nodes[topo_lead(f, l, a)].name, f->t->nodes[topo_lead(f, l, b)].name);
}

/* ---- Capacity ---- */

/* How many pods of the pod set at hand node id can take. */
static int64_t node_pods(const fit_t *f, uint32_t id)
{
	const struct topo_node *n = &f->t->nodes[id];
	const topo_podset_t *ps = &f->ask->ps[f->ps];
	const int64_t *ex = f->extra ? f->extra + id * (f->t->n_res + 1) : NULL;
	int64_t cap = INT32_MAX; /* nothing requested, no pod cap: any count (int32) */

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
		int64_t pf = topo_pods_free(n, ex ? ex[f->t->n_res] : 0);

		if (pf < cap)
			cap = pf;
	}
	return cap;
}

/* Domain d at level l's pods and units, its subtree's first. */
void topo_sums(fit_t *f, size_t l, uint32_t d)
{
	dom_t *x = &f->dom[l][d];

	if (l + 1 == f->nl) {
		x->pods = node_pods(f, f->t->order[x->lo]);
	} else {
		x->pods = 0;
		x->units = 0;
		for (uint32_t c = x->c0; c < x->c1; c++) {
			topo_sums(f, l + 1, c);
			x->pods += f->dom[l + 1][c].pods;
			x->units += f->dom[l + 1][c].units;
		}
	}
	if (l == f->S)
		x->units = x->pods / f->s;
	else if (l > f->S)
		x->units = x->pods;
}

int64_t topo_sums_all(fit_t *f)
{
	int64_t total = 0;

	for (uint32_t d = 0; d < f->nd[0]; d++) {
		topo_sums(f, 0, d);
		total += f->dom[0][d].pods;
	}
	return total;
}

/* The pod set at hand: ps of the ask. */
void topo_podset_at(fit_t *f, size_t ps)
{
	const topo_podset_t *p = &f->ask->ps[ps];

	f->ps = ps;
	f->S = p->slice_size > 0 ? p->slice_level : f->nl - 1;
	f->s = p->slice_size > 0 ? p->slice_size : 1;
}

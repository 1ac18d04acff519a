/*
 * topo/check.c: topo_check: the invariants of the nodes, their order and
 * name index, and of the domain tree a fit builds from them.
 */
#include "topo/internal.h"

#include <string.h>

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

/* The tree of t built once, each level checked. */
static void tree_check(const topo_t *t)
{
	fit_t f = {0};
	int64_t placed = 0;

	f.t = t;
	GPUQ_ASSERT(topo_tree_build(&f, true) == GPUQ_OK);
	for (uint32_t id = 0; id < t->n_nodes; id++)
		placed += t->nodes[id].pods_placed;
	for (size_t l = 0; l < f.nl; l++)
		level_check(&f, l, placed);
	topo_tree_free(&f);
}

void topo_check(const topo_t *t)
{
	uint8_t seen[TOPO_NODES_MAX / 8]; /* a bit per id: the order is a permutation */

	GPUQ_ASSERT(t->n_nodes <= t->cap && t->n_nodes * 2 <= t->hcap + (t->n_nodes == 0));
	memset(seen, 0, sizeof(seen));
	for (uint32_t p = 0; p < t->n_nodes; p++) {
		uint32_t id = t->order[p];

		GPUQ_ASSERT(id < t->n_nodes && !(seen[id / 8] & (1u << (id % 8))));
		seen[id / 8] |= (uint8_t)(1u << (id % 8));
		GPUQ_ASSERT(t->brk[p] == topo_brk_of(t, p));
		if (p > 0) {
			const struct topo_node *a = &t->nodes[t->order[p - 1]];
			const struct topo_node *c = &t->nodes[id];

			GPUQ_ASSERT(topo_key_cmp(t, a->vals, a->name, c->vals, c->name) < 0);
		}
	}
	for (uint32_t id = 0; id < t->n_nodes; id++) {
		const struct topo_node *n = &t->nodes[id];

		GPUQ_ASSERT(topo_node_find(t, n->name) == id);
		GPUQ_ASSERT(topo_order_pos(t, id) < t->n_nodes);
		GPUQ_ASSERT(n->pods_placed >= 0);
		for (size_t r = 0; r < t->n_res; r++)
			GPUQ_ASSERT(n->placed[r] >= 0 && n->alloc[r] >= 0 && n->used[r] >= 0);
	}
	tree_check(t);
}

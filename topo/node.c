/*
 * topo/node.c: nodes (created, replaced, deleted), their name index, the
 * order by label path that makes domains runs of positions, take and give,
 * and the per-domain reads.
 */
#include "topo/internal.h"

#include <stdlib.h>
#include <string.h>

int topo_create(size_t n_levels, size_t n_res, topo_t **out)
{
	topo_t *t;

	if (!out || n_levels < 1 || n_levels > TOPO_LEVELS_MAX || n_res < 1 || n_res > TOPO_RES_MAX)
		return GPUQ_EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return GPUQ_ENOMEM;
	t->n_levels = n_levels;
	t->n_res = n_res;
	*out = t;
	return GPUQ_OK;
}

void topo_destroy(topo_t *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		free(t->nodes[i].name);
		free(t->nodes[i].vals);
		free(t->nodes[i].alloc);
	}
	free(t->nodes);
	free(t->order);
	free(t->brk);
	free(t->hash);
	free(t);
}

/* ---- The name index ---- */

static uint32_t hash_slot(const topo_t *t, const char *name)
{
	uint32_t mask = t->hcap - 1;
	uint32_t i = gpuq_fnv1a32_str(GPUQ_FNV1A32_BASIS, name) & mask;

	while (t->hash[i] != TOPO_NONE && strcmp(t->nodes[t->hash[i]].name, name) != 0)
		i = (i + 1) & mask;
	return i;
}

uint32_t topo_node_find(const topo_t *t, const char *name)
{
	if (!t || !name || t->hcap == 0)
		return TOPO_NONE;
	return t->hash[hash_slot(t, name)];
}

/* Room for one more node in every array (nothing else changes). */
static int grow(topo_t *t)
{
	if (t->n_nodes + 1 > t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		struct topo_node *nodes;
		uint32_t *order;
		uint8_t *brk;

		if (cap > TOPO_NODES_MAX)
			cap = TOPO_NODES_MAX;
		nodes = realloc(t->nodes, cap * sizeof(*nodes));
		if (!nodes)
			return GPUQ_ENOMEM;
		t->nodes = nodes;
		order = realloc(t->order, cap * sizeof(*order));
		if (!order)
			return GPUQ_ENOMEM;
		t->order = order;
		brk = realloc(t->brk, cap);
		if (!brk)
			return GPUQ_ENOMEM;
		t->brk = brk;
		t->cap = cap;
	}
	if ((t->n_nodes + 1) * 2 > t->hcap) {
		uint32_t hcap = t->hcap ? t->hcap * 2 : 32;
		uint32_t *old = t->hash, ocap = t->hcap;
		uint32_t *hash = malloc(hcap * sizeof(*hash));

		if (!hash)
			return GPUQ_ENOMEM;
		for (uint32_t i = 0; i < hcap; i++)
			hash[i] = TOPO_NONE;
		t->hash = hash;
		t->hcap = hcap;
		for (uint32_t i = 0; i < ocap; i++)
			if (old[i] != TOPO_NONE)
				t->hash[hash_slot(t, t->nodes[old[i]].name)] = old[i];
		free(old);
	}
	return GPUQ_OK;
}

/* ---- The order by label path ---- */

/* Label path, then name: the order's key. */
int topo_key_cmp(const topo_t *t, char *const *va, const char *na, char *const *vb, const char *nb)
{
	for (size_t l = 0; l < t->n_levels; l++) {
		int c = strcmp(va[l], vb[l]);

		if (c != 0)
			return c;
	}
	return strcmp(na, nb);
}

/* The first position whose key is not below (vals, name). */
static uint32_t lower_bound(const topo_t *t, char *const *vals, const char *name, uint32_t n)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct topo_node *m = &t->nodes[t->order[mid]];

		if (topo_key_cmp(t, m->vals, m->name, vals, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t topo_order_pos(const topo_t *t, uint32_t id)
{
	const struct topo_node *n = &t->nodes[id];
	uint32_t p = lower_bound(t, n->vals, n->name, t->n_nodes);

	GPUQ_ASSERT(p < t->n_nodes && t->order[p] == id);
	return p;
}

/* What brk[p] should be, from order[p-1] and order[p]. */
uint8_t topo_brk_of(const topo_t *t, uint32_t p)
{
	size_t l = 0;

	if (p > 0) {
		char *const *a = t->nodes[t->order[p - 1]].vals;
		char *const *b = t->nodes[t->order[p]].vals;

		while (l < t->n_levels && strcmp(a[l], b[l]) == 0)
			l++;
	}
	return (uint8_t)l;
}

/* brk[p] again (p < n, the order's length). */
static void brk_set(topo_t *t, uint32_t p, uint32_t n)
{
	if (p < n)
		t->brk[p] = topo_brk_of(t, p);
}

/* Take position p out of the order of n nodes. */
static void order_remove(topo_t *t, uint32_t p, uint32_t n)
{
	memmove(t->order + p, t->order + p + 1, (n - p - 1) * sizeof(*t->order));
	memmove(t->brk + p, t->brk + p + 1, n - p - 1);
	brk_set(t, p, n - 1);
}

/* Put node id (its vals set) into the order of n nodes. */
static void order_insert(topo_t *t, uint32_t id, uint32_t n)
{
	const struct topo_node *nd = &t->nodes[id];
	uint32_t p = lower_bound(t, nd->vals, nd->name, n);

	memmove(t->order + p + 1, t->order + p, (n - p) * sizeof(*t->order));
	memmove(t->brk + p + 1, t->brk + p, n - p);
	t->order[p] = id;
	brk_set(t, p, n + 1);
	brk_set(t, p + 1, n + 1);
}

/* ---- Nodes ---- */

static int spec_check(const topo_t *t, const topo_node_spec_t *s, gpuq_diag_t *diag)
{
	size_t len;

	if (!s->name || (len = strlen(s->name)) < 1 || len > TOPO_NAME_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "node name must be 1..%d bytes",
				     TOPO_NAME_MAX);
	if (!s->values || !s->alloc)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "node %s: no %s", s->name,
				     s->values ? "allocatable" : "label values");
	for (size_t l = 0; l < t->n_levels; l++)
		if (!s->values[l] || strlen(s->values[l]) > TOPO_VALUE_MAX)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "node %s: level %zu: label value must be 0..%d bytes",
					     s->name, l, TOPO_VALUE_MAX);
	for (size_t r = 0; r < t->n_res; r++)
		if (s->alloc[r] < 0 || (s->used && s->used[r] < 0) || (s->own && s->own[r] < 0))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "node %s: slot %zu: %s %lld is negative", s->name, r,
					     s->alloc[r] < 0		 ? "allocatable"
					     : s->used && s->used[r] < 0 ? "used"
									 : "own",
					     (long long)(s->alloc[r] < 0	     ? s->alloc[r]
							 : s->used && s->used[r] < 0 ? s->used[r]
										     : s->own[r]));
	if (s->pods_max < 0 || s->pods_used < 0 || s->pods_own < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "node %s: pods %d, used %d, own %d: negative", s->name,
				     s->pods_max, s->pods_used, s->pods_own);
	return GPUQ_OK;
}

/* One block: the n_levels pointers, then the strings they point to. */
static char **vals_dup(const topo_t *t, const char *const *values)
{
	size_t size = t->n_levels * sizeof(char *);
	char **v;
	char *s;

	GPUQ_ASSERT(t->n_levels >= 1);
	for (size_t l = 0; l < t->n_levels; l++)
		size += strlen(values[l]) + 1;
	v = malloc(size);
	if (!v)
		return NULL;
	s = (char *)(v + t->n_levels);
	for (size_t l = 0; l < t->n_levels; l++) {
		size_t n = strlen(values[l]) + 1;

		memcpy(s, values[l], n);
		v[l] = s;
		s += n;
	}
	return v;
}

static bool vals_equal(const topo_t *t, char *const *a, const char *const *b)
{
	for (size_t l = 0; l < t->n_levels; l++)
		if (strcmp(a[l], b[l]) != 0)
			return false;
	return true;
}

/* A new node: its name, amounts and values allocated first (t as it was
 * on ENOMEM), then indexed and ordered. */
static int node_add(topo_t *t, const topo_node_spec_t *spec, uint32_t *id)
{
	struct topo_node n = {0};
	int rc;

	if (t->n_nodes >= TOPO_NODES_MAX)
		return GPUQ_ELIMIT;
	rc = grow(t);
	if (rc)
		return rc;
	n.name = strdup(spec->name);
	n.vals = vals_dup(t, spec->values);
	n.alloc = calloc(4 * t->n_res, sizeof(int64_t));
	if (!n.name || !n.vals || !n.alloc) {
		free(n.name);
		free(n.vals);
		free(n.alloc);
		return GPUQ_ENOMEM;
	}
	n.used = n.alloc + t->n_res;
	n.own = n.alloc + 2 * t->n_res;
	n.placed = n.alloc + 3 * t->n_res;
	*id = t->n_nodes;
	t->nodes[*id] = n;
	t->hash[hash_slot(t, n.name)] = *id;
	order_insert(t, *id, t->n_nodes);
	t->n_nodes++;
	return GPUQ_OK;
}

int topo_node_set(topo_t *t, const topo_node_spec_t *spec, uint32_t *id, gpuq_diag_t *diag)
{
	struct topo_node *n;
	uint32_t i;
	int rc;

	if (!t || !spec)
		return GPUQ_EINVAL;
	rc = spec_check(t, spec, diag);
	if (rc)
		return rc;
	i = topo_node_find(t, spec->name);
	if (i == TOPO_NONE) {
		rc = node_add(t, spec, &i);
		if (rc)
			return rc == GPUQ_ELIMIT
				   ? gpuq_diag_set(diag, rc, "more than %d nodes", TOPO_NODES_MAX)
				   : rc;
	} else if (!vals_equal(t, t->nodes[i].vals, spec->values)) {
		char **v = vals_dup(t, spec->values);

		if (!v)
			return GPUQ_ENOMEM;
		order_remove(t, topo_order_pos(t, i), t->n_nodes);
		free(t->nodes[i].vals);
		t->nodes[i].vals = v;
		order_insert(t, i, t->n_nodes - 1);
	}
	n = &t->nodes[i];
	for (size_t r = 0; r < t->n_res; r++) {
		n->alloc[r] = spec->alloc[r];
		n->used[r] = spec->used ? spec->used[r] : 0;
		n->own[r] = spec->own ? spec->own[r] : 0;
	}
	n->pods_max = spec->pods_max;
	n->pods_used = spec->pods_used;
	n->pods_own = spec->pods_own;
	n->schedulable = spec->schedulable;
	n->deleted = false;
	if (id)
		*id = i;
	return GPUQ_OK;
}

int topo_node_delete(topo_t *t, const char *name)
{
	uint32_t i = topo_node_find(t, name);

	if (i == TOPO_NONE)
		return GPUQ_ENOTFOUND;
	t->nodes[i].deleted = true;
	return GPUQ_OK;
}

const char *topo_node_name(const topo_t *t, uint32_t id)
{
	if (!t || id >= t->n_nodes)
		return NULL;
	return t->nodes[id].name;
}

bool topo_node_up(const topo_t *t, uint32_t id)
{
	return t && id < t->n_nodes && !t->nodes[id].deleted && t->nodes[id].schedulable;
}

/* ---- Take and give ---- */

static void hold(topo_t *t, const topo_place_t *pl, size_t n, const topo_podset_t *ps, int sign)
{
	for (size_t i = 0; i < n; i++) {
		struct topo_node *nd;
		const int64_t *req;

		GPUQ_ASSERT(pl[i].node < t->n_nodes && pl[i].count >= 0);
		nd = &t->nodes[pl[i].node];
		req = ps[pl[i].ps].req;
		for (size_t r = 0; r < t->n_res; r++) {
			int64_t amt;

			GPUQ_ASSERT(!__builtin_mul_overflow(req[r], (int64_t)pl[i].count, &amt));
			GPUQ_ASSERT(
			    !__builtin_add_overflow(nd->placed[r], sign * amt, &nd->placed[r]));
			GPUQ_ASSERT(nd->placed[r] >= 0); /* given back more than taken */
		}
		nd->pods_placed += sign * pl[i].count;
		GPUQ_ASSERT(nd->pods_placed >= 0);
	}
}

void topo_take(topo_t *t, const topo_place_t *pl, size_t n, const topo_podset_t *ps)
{
	hold(t, pl, n, ps, 1);
}

void topo_give(topo_t *t, const topo_place_t *pl, size_t n, const topo_podset_t *ps)
{
	hold(t, pl, n, ps, -1);
}

/* ---- Domain reads ---- */

/* a - u - max(o, p + x), floored at 0 (0 on overflow too). */
static int64_t room(int64_t a, int64_t u, int64_t o, int64_t p, int64_t x)
{
	int64_t f, held;

	if (__builtin_add_overflow(p, x, &held) || __builtin_sub_overflow(a, u, &f) ||
	    __builtin_sub_overflow(f, held > o ? held : o, &f))
		return 0;
	return f > 0 ? f : 0;
}

int64_t topo_free_of(const struct topo_node *n, size_t r, int64_t extra)
{
	return room(n->alloc[r], n->used[r], n->own[r], n->placed[r], extra);
}

int64_t topo_pods_free(const struct topo_node *n, int64_t extra)
{
	if (n->pods_max <= 0)
		return INT64_MAX;
	return room(n->pods_max, n->pods_used, n->pods_own, n->pods_placed, extra);
}

const char *topo_domain_value(const topo_t *t, uint32_t node, uint8_t level)
{
	if (!t || node >= t->n_nodes || level >= t->n_levels)
		return NULL;
	return t->nodes[node].vals[level];
}

bool topo_same_domain(const topo_t *t, uint32_t a, uint32_t b, uint8_t level)
{
	if (!t || a >= t->n_nodes || b >= t->n_nodes || level >= t->n_levels)
		return false;
	for (size_t l = 0; l <= level; l++)
		if (strcmp(t->nodes[a].vals[l], t->nodes[b].vals[l]) != 0)
			return false;
	return true;
}

int64_t topo_domain_free(const topo_t *t, uint32_t node, uint8_t level, size_t res)
{
	uint32_t lo, hi;
	int64_t sum = 0;

	if (!t || node >= t->n_nodes || level >= t->n_levels || res >= t->n_res)
		return 0;
	lo = hi = topo_order_pos(t, node);
	while (lo > 0 && t->brk[lo] > level)
		lo--;
	while (hi + 1 < t->n_nodes && t->brk[hi + 1] > level)
		hi++;
	for (uint32_t p = lo; p <= hi; p++) {
		const struct topo_node *n = &t->nodes[t->order[p]];

		if (n->schedulable && !n->deleted && sum < INT64_MAX - topo_free_of(n, res, 0))
			sum += topo_free_of(n, res, 0);
	}
	return sum;
}

/*
 * topo/internal.h: the private model of topo/, shared by its .c files and
 * nothing else (the API is topo.h). Files, bottom up: node.c (nodes, their
 * name index, the order by label path, take and give, the domain reads),
 * tree.c (the domain tree of one fit, built from the order, and capacity
 * summed up it), walk.c (one pod set placed on the tree, and why it does
 * not fit), fit.c (topo_fit: the ask checked, pod sets together), check.c
 * (topo_check).
 *
 * The one structure every file reads: every node (deleted ones too) sits in
 * t->order, sorted by its label values level by level (strcmp), then by
 * name. A domain at level L is then a run of consecutive positions, and
 * brk[p] (the first level at which order[p]'s values differ from
 * order[p-1]'s; 0 at p 0, n_levels when all agree) says where runs start:
 * position p opens a domain at every level >= brk[p].
 */
#ifndef GPUQ_TOPO_INTERNAL_H
#define GPUQ_TOPO_INTERNAL_H

#include "topo/topo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOPO_NAME_MAX 253 /* a node name: a DNS subdomain */
#define TOPO_VALUE_MAX 63 /* a label value (Kubernetes' cap) */

struct topo_node {
	char *name;	     /* its key, owned, never changes */
	char **vals;	     /* n_levels label values, widest first: one owned block
				holding the pointers and the strings */
	int64_t *alloc;	     /* n_res allocatable; one owned block with used, own,
				placed */
	int64_t *used;	     /* n_res used by pods gpuq does not place */
	int64_t *own;	     /* n_res used by pods gpuq admitted, bound here */
	int64_t *placed;     /* n_res held by topo_take, less topo_give (>= 0) */
	int32_t pods_max;    /* allocatable pods, 0: no cap */
	int32_t pods_used;   /* pods gpuq does not place */
	int32_t pods_own;    /* pods gpuq admitted, bound here */
	int32_t pods_placed; /* pods held by topo_take, less topo_give (>= 0) */
	bool schedulable;    /* new pods may go here */
	bool deleted;	     /* topo_node_delete: no new pod fits */
};

struct topo {
	size_t n_levels;	 /* label levels (1..TOPO_LEVELS_MAX) */
	size_t n_res;		 /* resource slots (1..TOPO_RES_MAX) */
	struct topo_node *nodes; /* by id, n_nodes of cap */
	uint32_t n_nodes;	 /* ids 0..n_nodes-1 are taken (deleted ones too) */
	uint32_t cap;		 /* allocated entries of nodes, order, brk */
	uint32_t *order;	 /* node ids by label path, then name */
	uint8_t *brk;		 /* per position: the first level it differs from
				    the one before (internal.h's opening) */
	uint32_t *hash;		 /* open-addressed name index: ids, TOPO_NONE empty */
	uint32_t hcap;		 /* slots of hash: a power of two, at most half full */
};

/* ---- node.c ---- */

/* Node id's position in t->order (binary search on its key). */
uint32_t topo_order_pos(const topo_t *t, uint32_t id);

/* The order's key: label path (strcmp level by level), then name. */
int topo_key_cmp(const topo_t *t, char *const *va, const char *na, char *const *vb, const char *nb);

/* What brk[p] should be, from order[p-1] and order[p]. */
uint8_t topo_brk_of(const topo_t *t, uint32_t p);

/* What node n has free of slot r: alloc - used - max(own, placed + extra),
 * floored at 0 (extra: a fit's scratch, what earlier pod sets of the ask
 * took). */
int64_t topo_free_of(const struct topo_node *n, size_t r, int64_t extra);
/* ... and pods: pods_max - pods_used - max(pods_own, pods_placed + extra);
 * INT64_MAX with no cap. */
int64_t topo_pods_free(const struct topo_node *n, int64_t extra);

/* ---- tree.c: the domain tree of one fit ---- */

/* A domain of the tree: a run of the order. */
typedef struct {
	uint32_t lo, hi; /* positions in t->order, [lo, hi) */
	uint32_t c0, c1; /* its children at the next level, [c0, c1) (nodes: none) */
	uint32_t lead;	 /* node id of the smallest name in it; TOPO_NONE until asked */
	int64_t pods;	 /* pods of the pod set at hand it can take */
	int64_t units;	 /* at the slice level and above: whole slices; else pods */
} dom_t;

/* One fit's state: the tree, the pod set at hand, the output. */
typedef struct {
	const topo_t *t;		  /* the topology, read only */
	const topo_ask_t *ask;		  /* the caller's */
	size_t nl;			  /* tree levels: the label levels, then the nodes */
	dom_t *dom[TOPO_LEVELS_MAX + 1];  /* per level, one block */
	uint32_t nd[TOPO_LEVELS_MAX + 1]; /* domains per level */
	uint32_t *stack;		  /* the greedy walk's sorted lists, one per depth */
	size_t sp;			  /* used of stack */
	size_t stack_cap;		  /* the domains of every level: a walk's bound */
	int64_t *extra;			  /* per node id n_res + 1: what earlier pod sets of the
					     ask took (amounts, then pods); NULL with one */
	size_t ps;			  /* the pod set at hand */
	size_t S;			  /* its slice level (the node level without slices) */
	int64_t s;			  /* its slice size (1 without) */
	topo_place_t *out;		  /* the caller's */
	size_t out_cap;			  /* entries out holds */
	size_t n_out;			  /* entries written */
} fit_t;

/* The domains of every level from t's order into f->dom, f->nd (f->t
 * set, the rest zero). GPUQ_ENOMEM. topo_tree_free frees them. */
int topo_tree_build(fit_t *f, bool zeroed);
void topo_tree_free(fit_t *f);

/* The node id of the smallest name in domain d at level l (memoised), and
 * two domains of level l compared by it. */
uint32_t topo_lead(fit_t *f, size_t l, uint32_t d);
int topo_lead_cmp(fit_t *f, size_t l, uint32_t a, uint32_t b);

/* Pod set ps of the ask becomes the one at hand (its slice level, size). */
void topo_podset_at(fit_t *f, size_t ps);

/* Domain d at level l's pods and units, its subtree's first; over every
 * domain: the total pods. */
void topo_sums(fit_t *f, size_t l, uint32_t d);
int64_t topo_sums_all(fit_t *f);

/* What the walk counts at level l: slices at and above the slice level. */
static inline int64_t topo_metric(const fit_t *f, size_t l, uint32_t d)
{
	return l <= f->S ? f->dom[l][d].units : f->dom[l][d].pods;
}

/* v cut to int32 (a why's pod counts). */
static inline int32_t topo_clamp32(int64_t v)
{
	return v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* ---- walk.c: one pod set on the tree ---- */

/* Put `need` (in level l's measure) of the pod set at hand into domain d,
 * appending to f->out. GPUQ_ELIMIT when out is full. */
int topo_place(fit_t *f, size_t l, uint32_t d, int64_t need);

/* Among domains lo..hi at level l, the tightest holding `need` units:
 * least units, then the smallest name. TOPO_NONE when none does. */
uint32_t topo_best_fit(fit_t *f, size_t l, uint32_t lo, uint32_t hi, int64_t need);

/* Why the pod set at hand does not fit at level L (sums global); why may
 * be NULL. */
void topo_why_fill(fit_t *f, size_t L, int64_t total, topo_why_t *why);

/* The pod set at hand alone, by the ask's mode, against what is free less
 * f->extra: GPUQ_OK (placed), GPUQ_EAGAIN (*why), GPUQ_ELIMIT. */
int topo_fit_one(fit_t *f, topo_why_t *why);

#endif

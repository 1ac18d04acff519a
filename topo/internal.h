/*
 * topo/internal.h: the private model of topo/, shared by its .c files and
 * nothing else (the API is topo.h). Files, bottom up: node.c (nodes, their
 * name index, the order by label path, take and give, the domain reads,
 * the checks) and fit.c (where an ask fits: the domain tree of one call,
 * built from the order, and the placement walk).
 *
 * The one structure both files read: every node (deleted ones too) sits in
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
	int64_t *alloc;	     /* n_res allocatable; one owned block with used, placed */
	int64_t *used;	     /* n_res used by pods gpuq does not place */
	int64_t *placed;     /* n_res held by topo_take, less topo_give (>= 0) */
	int32_t pods_max;    /* allocatable pods, 0: no cap */
	int32_t pods_used;   /* pods gpuq does not place */
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

/* Node id's position in t->order (binary search on its key). */
uint32_t topo_order_pos(const topo_t *t, uint32_t id);

/* What node n has free of slot r: alloc - used - placed - extra, floored
 * at 0 (extra: a fit's scratch, what earlier pod sets of the ask took). */
int64_t topo_free_of(const struct topo_node *n, size_t r, int64_t extra);

/* Build the domain tree of t once and check that every level's sums of
 * the nodes' placed amounts equal the nodes' own (fit.c; topo_check's
 * part). Aborts when they do not. */
void topo_tree_check(const topo_t *t);

#endif

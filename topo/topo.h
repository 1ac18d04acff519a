/*
 * topo: the domains of one Topology over a set of nodes, what each node has
 * free, and where the pods of a workload fit. A Topology names node labels
 * from the widest level to the narrowest (block, rack, host); a domain at
 * level L is the set of nodes sharing the label values of levels 0..L (rack
 * r1 of block b1 and rack r1 of block b2 are two domains). A node's free
 * capacity is its allocatable less what pods gpuq does not place use (an
 * input) less what gpuq's own placements here take.
 *
 * Pure: no I/O, no clock, no globals; deterministic (ties broken by node
 * name). Not thread-safe: one topo_t is used by one thread at a time
 * (topo_fit writes nothing in t: its scratch is its own, allocated per
 * call and bounded by the nodes times the levels).
 *
 * The design decision that matters: a fit is computed from per-node pod
 * counts (how many pods of this shape each node can still take) summed up
 * the levels, so a workload's pods are placed whole onto nodes, never as
 * GPUs summed across nodes that no pod could use; and the caller takes and
 * gives back placements explicitly (topo_take, topo_give), so the queueing
 * core decides when capacity is held and topo only answers where it fits.
 *
 * Resources are dense slots 0..n_res-1 the caller assigns (the queueing
 * core's resource ids); amounts are int64 in the caller's units.
 */
#ifndef GPUQ_TOPO_H
#define GPUQ_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define TOPO_LEVELS_MAX 16   /* levels in one Topology (Kueue's cap) */
#define TOPO_NODES_MAX 65536 /* nodes in one topo_t */
#define TOPO_RES_MAX 64	     /* resource slots (the core's QUEUE_RESOURCES_MAX) */
#define TOPO_PODSETS_MAX 18  /* pod sets placed together in one ask */
#define TOPO_NONE UINT32_MAX

typedef struct topo topo_t;

/* Create an empty topology of n_levels levels (1..TOPO_LEVELS_MAX) over
 * n_res resource slots (1..TOPO_RES_MAX). GPUQ_EINVAL, GPUQ_ENOMEM. The
 * caller owns *out and frees it with topo_destroy. */
int topo_create(size_t n_levels, size_t n_res, topo_t **out);

/* Free everything; NULL is fine. */
void topo_destroy(topo_t *t);

typedef struct {
	const char *name;	   /* node name (1..253 bytes): its key */
	const char *const *values; /* its label value at each level, widest first
				      (n_levels entries; a node missing a level's
				      label is not given to topo by the caller) */
	const int64_t *alloc;	   /* allocatable per slot (n_res; >= 0) */
	const int64_t *used;	   /* used per slot by pods gpuq does not place
				      (n_res; NULL: none) */
	const int64_t *own;	   /* used per slot by pods gpuq admitted, bound
				      here now (n_res; NULL: none). A node has
				      alloc - used - max(own, placed) free: gpuq's
				      pods running where no placement says (a
				      workload adopted with none, a pod put on
				      another node of its domain) are counted,
				      and a placement's own pods not twice */
	int32_t pods_max;	   /* allocatable pods (0: no cap) */
	int32_t pods_used;	   /* pods gpuq does not place on it */
	int32_t pods_own;	   /* pods gpuq admitted bound here now */
	bool schedulable;	   /* Ready and not cordoned: new pods may go here */
} topo_node_spec_t;

/* Add node spec->name, or replace what is known of it (labels, capacity,
 * readiness). Placements on it stay: a node that shrank below them takes
 * no new pod until enough of them are given back. *id (may be NULL) gets
 * its id, stable for the life of t (a deleted node's id comes back if the
 * name is set again). GPUQ_EINVAL (bad name, values (each 0..63 bytes,
 * a label value's cap), negative amounts; diag says which), GPUQ_ELIMIT
 * (TOPO_NODES_MAX), GPUQ_ENOMEM (t is as it was). */
int topo_node_set(topo_t *t, const topo_node_spec_t *spec, uint32_t *id, gpuq_diag_t *diag);

/* Node `name` is gone: no new pod fits on it; placements on it stay
 * counted (and are given back as usual). GPUQ_ENOTFOUND. */
int topo_node_delete(topo_t *t, const char *name);

/* The node id of `name`, or TOPO_NONE. */
uint32_t topo_node_find(const topo_t *t, const char *name);

/* Node id's name (valid while t lives), or NULL when id is out of range. */
const char *topo_node_name(const topo_t *t, uint32_t id);

/* Whether node id exists and is schedulable (set, not deleted). */
bool topo_node_up(const topo_t *t, uint32_t id);

/* How the pods of an ask are kept together (Kueue's podset annotations). */
typedef enum {
	TOPO_UNCONSTRAINED = 0, /* anywhere, fewest nodes first */
	TOPO_REQUIRED = 1,	/* every pod in one domain at `level`, or no fit */
	TOPO_PREFERRED = 2,	/* one domain at `level` if any holds them all;
				   else one domain at the narrowest wider level
				   that does, placed in the fewest domains at
				   `level`; else the fewest domains at level 0 */
} topo_mode_t;

typedef struct {
	int32_t count;	    /* pods (>= 1) */
	const int64_t *req; /* per-pod request per slot (n_res; >= 0) */
	int32_t slice_size; /* 0: no slices; else pods per slice (divides count):
			       each slice lies whole in one domain at
			       slice_level */
	uint8_t slice_level;
} topo_podset_t;

/* Whether pod set `ps` of an ask may run on node `node` (its node
 * selector, affinity and tolerations against the node's labels and
 * taints: the caller's rule). Called during topo_fit, possibly more than
 * once per node and pod set: the same answer each time. */
typedef bool (*topo_node_ok_fn)(void *ctx, uint32_t node, size_t ps);

typedef struct {
	topo_mode_t mode;
	uint8_t level;		 /* REQUIRED, PREFERRED: the level (< n_levels);
				    UNCONSTRAINED: not read */
	const topo_podset_t *ps; /* pod sets placed together: with REQUIRED all
				    of them in one domain at `level` (a pod set
				    group: an LWS leader and its workers); with
				    PREFERRED in one domain at `level` if one
				    holds them all, else each in turn by the
				    rule above; UNCONSTRAINED each in turn. No
				    two share a free amount */
	size_t n_ps;		 /* 1..TOPO_PODSETS_MAX */
	topo_node_ok_fn node_ok; /* NULL: every schedulable node */
	void *ctx;		 /* for node_ok */
} topo_ask_t;

/* `count` pods of pod set `ps` (index in the ask) on node `node`. */
typedef struct {
	uint32_t node;
	int32_t count;
	uint16_t ps;
} topo_place_t;

/* Why an ask does not fit: at `level` (the ask's, or the slice level when a
 * slice is what does not fit) the domain that holds the most pods of pod
 * set `ps` is `domain` (TOPO_NONE when no node is usable at all), holding
 * `best_pods` of the `need_pods` asked; `total_pods` is what all usable
 * nodes hold. UNCONSTRAINED reports at level 0. When each pod set of a
 * REQUIRED group fits alone but not together, `ps` is the one that did not
 * fit after the others, `domain` the tightest candidate and `best_pods`
 * what it held of that pod set after them. */
typedef struct {
	uint8_t level;
	uint16_t ps;
	uint32_t domain; /* a node id standing for the domain: topo_domain_value */
	int32_t best_pods;
	int32_t need_pods;
	int32_t total_pods;
} topo_why_t;

/* Place an ask on what is free now. GPUQ_OK: out[0..*n_out) is the
 * placement (entries grouped by pod set, then by node id; every pod of
 * every pod set placed once; no node given more than it has free);
 * nothing is taken until topo_take. GPUQ_EAGAIN: it does not fit now
 * (*why filled; why may be NULL). GPUQ_EINVAL (a bad ask: level out of
 * range, count < 1, a slice size that does not divide count or a slice
 * level wider than the ask's level). GPUQ_ELIMIT: out_cap too small (at
 * most one entry per pod set and node is needed). GPUQ_ENOMEM (its scratch:
 * about 40 bytes per node and level). Cost O(nodes x levels) and a sort of
 * the domains it walks, per call. */
int topo_fit(const topo_t *t, const topo_ask_t *ask, topo_place_t *out, size_t out_cap,
	     size_t *n_out, topo_why_t *why);

/* Hold a placement (count * req of its pod set on each node) / give it
 * back. ps[] is the ask's pod sets the entries index. A take may exceed a
 * node's free capacity (a placement restored after a restart, a node that
 * shrank): the node then takes nothing new. Giving back more than was
 * taken is a broken invariant (abort). */
void topo_take(topo_t *t, const topo_place_t *pl, size_t n, const topo_podset_t *ps);
void topo_give(topo_t *t, const topo_place_t *pl, size_t n, const topo_podset_t *ps);

/* The label value of node id's domain at `level` (valid until the node's
 * label values change by topo_node_set, or t is destroyed; NULL when node
 * or level is out of range).
 * Two nodes are in one domain at level L when their values at 0..L agree:
 * topo_same_domain. */
const char *topo_domain_value(const topo_t *t, uint32_t node, uint8_t level);
bool topo_same_domain(const topo_t *t, uint32_t a, uint32_t b, uint8_t level);

/* What node id's domain at `level` has free of slot `res` (alloc less used
 * less placed, over its schedulable nodes; 0 floor per node). */
int64_t topo_domain_free(const topo_t *t, uint32_t node, uint8_t level, size_t res);

/* Check the invariants (every node's placed amounts >= 0, the per-domain
 * sums equal the per-node sums, ids and names agree); a broken one aborts.
 * For tests; O(nodes). */
void topo_check(const topo_t *t);

#endif

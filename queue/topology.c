/*
 * queue/topology.c: topology-aware flavors. The Topologies, the nodes the
 * driver reports, each topology-aware flavor's topo_t (its nodes' domains
 * and free capacity), and the placement of an assignment: tried with the
 * flavors (queue_topo_try), held from admission until the quota is freed
 * (queue_topo_admit, queue_topo_release). topo/ answers where pods fit;
 * this file decides what is asked and when capacity is held.
 * See queue.h ("Topology") for the contracts and docs/topology.md for the
 * rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* Topologies and flavors                                              */
/* ================================================================== */

int queue_topology_add(queue_t *q, const queue_topology_spec_t *spec, gpuq_diag_t *diag)
{
	topology_t tp = {{0}, 0};
	uint32_t id;
	int rc = queue_check_name("Topology name", spec->name, false, diag);

	if (rc)
		return rc;
	if (queue_names_find(&q->topo_names, spec->name, &id) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "Topology \"%s\" already exists",
				     spec->name);
	if (q->topo_names.n >= QUEUE_TOPOLOGIES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "Topology \"%s\": more than %d Topologies",
				     spec->name, QUEUE_TOPOLOGIES_MAX);
	if (!spec->n_levels || spec->n_levels > QUEUE_TOPO_LEVELS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "Topology \"%s\": spec.levels: %zu levels (1..%d allowed)",
				     spec->name, spec->n_levels, QUEUE_TOPO_LEVELS_MAX);
	for (size_t i = 0; i < spec->n_levels; i++) {
		rc = queue_check_name("spec.levels[].nodeLabel", spec->levels[i], false, diag);
		if (!rc)
			rc = queue_str_intern(q, "spec.levels[].nodeLabel", spec->levels[i],
					      &tp.levels[i], diag);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (tp.levels[j] == tp.levels[i])
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "Topology \"%s\": spec.levels[%zu].nodeLabel "
						     "\"%s\" twice",
						     spec->name, i, spec->levels[i]);
	}
	tp.n_levels = (uint8_t)spec->n_levels;
	if (!q->topologies) {
		q->topologies = calloc(QUEUE_TOPOLOGIES_MAX, sizeof(*q->topologies));
		if (!q->topologies)
			return GPUQ_ENOMEM;
	}
	rc = queue_names_intern(&q->topo_names, spec->name, &id);
	if (rc)
		return rc;
	q->topologies[id] = tp;
	return GPUQ_OK;
}

/* The level index of interned label key `key` in flavor f's topology, or -1. */
static int level_of(const queue_t *q, const flavor_t *f, uint32_t key)
{
	const topology_t *tp = &q->topologies[f->topology];

	for (int i = 0; i < tp->n_levels; i++)
		if (tp->levels[i] == key)
			return i;
	return -1;
}

static void pl_apply(queue_t *q, const wl_t *w, const asg_t *asg, size_t n_asg, const place_t *pl,
		     size_t n, int sign);

/* The entries of every held placement on node nid of flavor fid, taken:
 * the node joined fid's topo after they were restored (pl_apply skipped
 * them then). Only workloads holding quota hold a placement: the
 * ClusterQueues' admitted vectors, not every workload. */
static void take_on_join(queue_t *q, uint32_t fid, uint32_t nid)
{
	for (size_t c = 0; c < q->cq_names.n; c++)
		for (size_t i = 0; i < q->cqs[c].adm.n; i++) {
			const wl_t *w = Wc(q, q->cqs[c].adm.v[i]);

			for (uint32_t k = 0; w->place && k < w->place->n; k++)
				if (w->place->e[k].flavor == fid && w->place->e[k].node == nid)
					pl_apply(q, w, w->asg, w->n_asg, &w->place->e[k], 1, +1);
		}
}

/* Give node nid to flavor fid's topo as it stands (or take it away when it
 * is not one of the flavor's nodes: gone, a nodeLabel or a level's label
 * missing). */
static int node_feed(queue_t *q, uint32_t fid, uint32_t nid)
{
	flavor_t *f = &q->flavors[fid];
	const topology_t *tp = &q->topologies[f->topology];
	const node_t *n = &q->nodes[nid];
	const char *name = q->node_names.s[nid];
	const char *vals[QUEUE_TOPO_LEVELS_MAX];
	int64_t alloc[TOPO_RES_MAX] = {0}, used[TOPO_RES_MAX] = {0}, own[TOPO_RES_MAX] = {0};
	bool member = n->live;
	uint32_t tid;
	bool joins;
	int rc;

	for (size_t i = 0; member && i < f->n_labels; i++) {
		const kv_t *l = queue_kv_get(n->labels, n->n_labels, f->labels[i].key);

		member = l && l->val == f->labels[i].val;
	}
	for (size_t i = 0; member && i < tp->n_levels; i++) {
		const kv_t *l = queue_kv_get(n->labels, n->n_labels, tp->levels[i]);

		member = l != NULL;
		if (l)
			vals[i] = q->strs.s[l->val];
	}
	if (!member) {
		if (topo_node_find(f->topo, name) != TOPO_NONE)
			(void)topo_node_delete(f->topo, name);
		return GPUQ_OK;
	}
	for (size_t i = 0; i < n->n_res; i++) {
		uint32_t rid;

		if (queue_names_find(&q->res_names, q->strs.s[n->res[i]], &rid) == GPUQ_OK &&
		    rid < TOPO_RES_MAX) {
			alloc[rid] = n->alloc[i];
			used[rid] = n->used[i];
			own[rid] = n->own[i];
		}
	}
	joins = topo_node_find(f->topo, name) == TOPO_NONE;
	rc = topo_node_set(f->topo,
			   &(topo_node_spec_t){.name = name,
					       .values = vals,
					       .alloc = alloc,
					       .used = used,
					       .own = own,
					       .pods_max = n->pods_max,
					       .pods_used = n->pods_used,
					       .pods_own = n->pods_own,
					       .schedulable = !n->unschedulable && !n->not_ready},
			   &tid, NULL);
	if (rc)
		return rc;
	if (queue_grow(&f->tmap, &f->cap_tmap, (size_t)tid + 1, sizeof(*f->tmap)))
		return GPUQ_ENOMEM;
	f->tmap[tid] = nid;
	if (joins && q->n_placed) /* placements restored onto it before it was known */
		take_on_join(q, fid, nid);
	return GPUQ_OK;
}

int queue_flavor_topology(queue_t *q, uint32_t fid, const char *topology, gpuq_diag_t *diag)
{
	flavor_t *f = &q->flavors[fid];
	uint32_t id;
	int rc;

	if (!topology || !topology[0])
		return GPUQ_OK;
	if (queue_names_find(&q->topo_names, topology, &id))
		return gpuq_diag_set(
		    diag, GPUQ_ENOTFOUND,
		    "ResourceFlavor \"%s\": spec.topologyName \"%s\": no such Topology",
		    q->flv_names.s[fid], topology);
	rc = topo_create(q->topologies[id].n_levels, TOPO_RES_MAX, &f->topo);
	if (rc)
		return rc;
	f->topology = id;
	q->n_topo_flavors++;
	for (size_t i = 0; i < q->node_names.n; i++) {
		rc = node_feed(q, fid, (uint32_t)i);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* ================================================================== */
/* Nodes                                                               */
/* ================================================================== */

static void node_fields_free(node_t *n)
{
	free(n->labels);
	free(n->taints);
	free(n->res);
	free(n->alloc);
	free(n->used);
	free(n->own);
	memset(n, 0, sizeof(*n));
}

static const queue_request_t *req_named(const queue_request_t *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].resource && !strcmp(v[i].resource, name))
			return &v[i];
	return NULL;
}

/* One amount of a node's list (used, own) named like an allocatable:
 * *out, 0 when absent. GPUQ_ERANGE names the list. */
static int node_amount(const queue_node_spec_t *spec, const char *what, const queue_request_t *v,
		       size_t n, const char *res, int64_t *out, gpuq_diag_t *diag)
{
	const queue_request_t *u = req_named(v, n, res);

	if (u && (u->amount < 0 || u->amount > QUEUE_AMOUNT_MAX))
		return gpuq_diag_set(diag, GPUQ_ERANGE, "node \"%s\": %s %s: out of range",
				     spec->name, what, res);
	*out = u ? u->amount : 0;
	return GPUQ_OK;
}

/* Spec's capacity into n (res, alloc, used, own, pods_max). */
static int node_build_res(queue_t *q, const queue_node_spec_t *spec, node_t *n, gpuq_diag_t *diag)
{
	size_t k = 0;

	if (spec->n_allocatable > TOPO_RES_MAX + 1)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "node \"%s\": more than %d allocatable",
				     spec->name, TOPO_RES_MAX);
	n->res = calloc(spec->n_allocatable + 1, sizeof(*n->res));
	n->alloc = calloc(spec->n_allocatable + 1, sizeof(*n->alloc));
	n->used = calloc(spec->n_allocatable + 1, sizeof(*n->used));
	n->own = calloc(spec->n_allocatable + 1, sizeof(*n->own));
	if (!n->res || !n->alloc || !n->used || !n->own)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < spec->n_allocatable; i++) {
		const queue_request_t *a = &spec->allocatable[i];
		int64_t used = 0, own = 0;
		int rc = queue_check_name("allocatable resource", a->resource, false, diag);

		if (rc)
			return rc;
		if (a->amount < 0 || a->amount > QUEUE_AMOUNT_MAX)
			return gpuq_diag_set(diag, GPUQ_ERANGE,
					     "node \"%s\": allocatable %s: out of range",
					     spec->name, a->resource);
		rc = node_amount(spec, "used", spec->used, spec->n_used, a->resource, &used, diag);
		if (!rc)
			rc = node_amount(spec, "own", spec->own, spec->n_own, a->resource, &own,
					 diag);
		if (rc)
			return rc;
		if (!strcmp(a->resource, "pods")) {
			n->pods_max = a->amount > INT32_MAX ? INT32_MAX : (int32_t)a->amount;
			continue;
		}
		rc = queue_str_intern(q, "allocatable resource", a->resource, &n->res[k], diag);
		if (rc)
			return rc;
		n->alloc[k] = a->amount;
		n->used[k] = used;
		n->own[k] = own;
		k++;
	}
	n->n_res = (uint8_t)k;
	return GPUQ_OK;
}

static int node_build(queue_t *q, const queue_node_spec_t *spec, node_t *n, gpuq_diag_t *diag)
{
	int rc;

	if (spec->n_labels > QUEUE_NODE_LABELS_MAX || spec->n_taints > QUEUE_TAINTS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "node \"%s\": more than %d labels or %d taints", spec->name,
				     QUEUE_NODE_LABELS_MAX, QUEUE_TAINTS_MAX);
	if (spec->pods_used < 0 || spec->pods_own < 0)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "node \"%s\": negative pods %s", spec->name,
				     spec->pods_used < 0 ? "used" : "own");
	rc = queue_labels_build(q, "node labels", spec->labels, spec->n_labels,
				QUEUE_NODE_LABELS_MAX, &n->labels, diag);
	if (rc)
		return rc;
	n->n_labels = (uint8_t)spec->n_labels;
	if (spec->n_taints) {
		n->taints = calloc(spec->n_taints, sizeof(*n->taints));
		if (!n->taints)
			return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < spec->n_taints; i++) {
		const queue_taint_t *t = &spec->taints[i];

		if ((unsigned)t->effect > QUEUE_EFFECT_NO_EXECUTE)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "node \"%s\": taint %zu: bad effect", spec->name, i);
		rc = queue_str_intern(q, "taint key", t->key, &n->taints[i].key, diag);
		if (!rc)
			rc = queue_str_intern(q, "taint value", t->value ? t->value : "",
					      &n->taints[i].val, diag);
		if (rc)
			return rc;
		n->taints[i].effect = (uint8_t)t->effect;
	}
	n->n_taints = (uint8_t)spec->n_taints;
	n->pods_used = spec->pods_used;
	n->pods_own = spec->pods_own;
	n->unschedulable = spec->unschedulable;
	n->not_ready = spec->not_ready;
	n->not_ready_since = spec->not_ready ? spec->not_ready_since : 0;
	return node_build_res(q, spec, n, diag);
}

/* Every topology-aware flavor takes node nid as it now stands; capacity
 * may have come: every cohort tries again. */
static int node_spread(queue_t *q, uint32_t nid)
{
	int rc = GPUQ_OK;

	if (!q->n_topo_flavors)
		return GPUQ_OK;
	for (size_t f = 0; f < q->flv_names.n; f++)
		if (q->flavors[f].topo && !rc)
			rc = node_feed(q, (uint32_t)f, nid);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		queue_cohort_touch(q, (uint32_t)i, true);
	return rc;
}

/* Count node nid in (+1) or out of (-1) q->n_nodes_down when it is gone
 * or not Ready and not settled: what queue_topo_failures looks at. */
static void node_down(queue_t *q, uint32_t nid, int sign)
{
	const node_t *n = &q->nodes[nid];

	if ((n->gone || n->not_ready) && !n->settled)
		q->n_nodes_down = sign > 0 ? q->n_nodes_down + 1 : q->n_nodes_down - 1;
}

int queue_node_set(queue_t *q, const queue_node_spec_t *spec, gpuq_diag_t *diag)
{
	node_t n = {0};
	uint32_t nid;
	int rc = queue_check_name("node name", spec->name, false, diag);

	if (rc)
		return rc;
	if (queue_names_find(&q->node_names, spec->name, &nid) != GPUQ_OK &&
	    q->node_names.n >= QUEUE_NODES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "node \"%s\": more than %d nodes",
				     spec->name, QUEUE_NODES_MAX);
	rc = node_build(q, spec, &n, diag);
	if (rc)
		goto fail;
	if (queue_names_find(&q->node_names, spec->name, &nid) != GPUQ_OK) {
		if (queue_grow(&q->nodes, &q->cap_nodes, q->node_names.n + 1, sizeof(*q->nodes))) {
			rc = GPUQ_ENOMEM;
			goto fail;
		}
		rc = queue_names_intern(&q->node_names, spec->name, &nid);
		if (rc)
			goto fail;
		memset(&q->nodes[nid], 0, sizeof(node_t));
	}
	node_down(q, nid, -1);
	node_fields_free(&q->nodes[nid]);
	n.live = true;
	q->nodes[nid] = n;
	node_down(q, nid, +1);
	return node_spread(q, nid);
fail:
	node_fields_free(&n);
	return rc;
}

int queue_node_delete(queue_t *q, const char *name)
{
	uint32_t nid;

	if (!name || queue_names_find(&q->node_names, name, &nid) != GPUQ_OK || !q->nodes[nid].live)
		return GPUQ_ENOTFOUND;
	node_down(q, nid, -1);
	node_fields_free(&q->nodes[nid]);
	q->nodes[nid].gone = true;
	node_down(q, nid, +1);
	return node_spread(q, nid);
}

int queue_nodes_copy(queue_t *dst, const queue_t *src, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < src->node_names.n; i++) {
		const node_t *n = &src->nodes[i];
		queue_label_t l[QUEUE_NODE_LABELS_MAX];
		queue_taint_t tn[QUEUE_TAINTS_MAX];
		queue_request_t a[TOPO_RES_MAX + 1], u[TOPO_RES_MAX], o[TOPO_RES_MAX];
		queue_node_spec_t s = {.name = src->node_names.s[i],
				       .labels = l,
				       .n_labels = n->n_labels,
				       .allocatable = a,
				       .n_allocatable = n->n_res,
				       .used = u,
				       .n_used = n->n_res,
				       .pods_used = n->pods_used,
				       .own = o,
				       .n_own = n->n_res,
				       .pods_own = n->pods_own,
				       .taints = tn,
				       .n_taints = n->n_taints,
				       .unschedulable = n->unschedulable,
				       .not_ready = n->not_ready,
				       .not_ready_since = n->not_ready_since};
		uint32_t nid;
		int rc;

		if (n->gone && !n->settled) { /* its workloads are still to evict */
			rc = queue_node_ref(dst, s.name, &nid);
			if (rc)
				return rc;
			node_down(dst, nid, -1);
			dst->nodes[nid].gone = true;
			dst->nodes[nid].settled = false;
			node_down(dst, nid, +1);
		}
		if (!n->live)
			continue;
		for (size_t k = 0; k < n->n_labels; k++)
			l[k] = (queue_label_t){src->strs.s[n->labels[k].key],
					       src->strs.s[n->labels[k].val]};
		for (size_t k = 0; k < n->n_taints; k++)
			tn[k] = (queue_taint_t){src->strs.s[n->taints[k].key],
						src->strs.s[n->taints[k].val],
						(queue_effect_t)n->taints[k].effect};
		for (size_t k = 0; k < n->n_res; k++) {
			a[k] = (queue_request_t){src->strs.s[n->res[k]], n->alloc[k]};
			u[k] = (queue_request_t){src->strs.s[n->res[k]], n->used[k]};
			o[k] = (queue_request_t){src->strs.s[n->res[k]], n->own[k]};
		}
		if (n->pods_max)
			a[s.n_allocatable++] = (queue_request_t){"pods", n->pods_max};
		rc = queue_node_set(dst, &s, diag);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

void queue_topo_free(queue_t *q)
{
	for (size_t i = 0; i < q->node_names.n; i++)
		node_fields_free(&q->nodes[i]);
	free(q->nodes);
	queue_names_free(&q->node_names);
	queue_names_free(&q->topo_names);
	free(q->topologies);
	free(q->fit_buf);
	free(q->topo_cands.v);
	free(q->topo_doms.v);
	free(q->askbuf);
}

/* ================================================================== */
/* Placements                                                          */
/* ================================================================== */

/* The per-pod request of pod set ps on flavor f under assignment asg: the
 * template's amounts of the resources asg puts on f. */
static void podset_req(const queue_t *q, const wl_t *w, const asg_t *asg, size_t n_asg, uint32_t f,
		       uint16_t ps, int64_t *req)
{
	const tmpl_t *tm = &q->tmpls[wl_ps(w)[ps].tmpl];

	memset(req, 0, TOPO_RES_MAX * sizeof(*req));
	for (size_t i = 0; i < n_asg; i++) {
		if (asg[i].a.podset != ps || asg[i].a.flavor != f)
			continue;
		for (uint32_t r = 0; r < tm->n_req; r++)
			if (tm->res[r] == asg[i].a.resource && tm->res[r] < TOPO_RES_MAX)
				req[tm->res[r]] = tm->amt[r];
	}
}

/* Take (sign +1) or give back (-1) placement entries pl of workload w on
 * assignment asg. An entry on a node its flavor's topo no longer knows is
 * skipped (the node left the flavor; a rebuild counts it again if it comes
 * back). */
static void pl_apply(queue_t *q, const wl_t *w, const asg_t *asg, size_t n_asg, const place_t *pl,
		     size_t n, int sign)
{
	int64_t req[TOPO_RES_MAX];
	uint32_t req_flavor = QUEUE_NONE; /* req is this flavor's and pod set's */
	uint16_t req_ps = 0;

	for (size_t i = 0; i < n; i++) {
		flavor_t *f = &q->flavors[pl[i].flavor];
		uint32_t tid;
		topo_podset_t ps;
		topo_place_t e;

		if (!f->topo)
			continue;
		tid = topo_node_find(f->topo, q->node_names.s[pl[i].node]);
		if (tid == TOPO_NONE)
			continue;
		/* entries come grouped by flavor and pod set: one request each */
		if (pl[i].flavor != req_flavor || pl[i].ps != req_ps) {
			podset_req(q, w, asg, n_asg, pl[i].flavor, pl[i].ps, req);
			req_flavor = pl[i].flavor;
			req_ps = pl[i].ps;
		}
		ps = (topo_podset_t){pl[i].count, req, 0, 0};
		e = (topo_place_t){tid, pl[i].count, 0};
		if (sign > 0)
			topo_take(f->topo, &e, 1, &ps);
		else
			topo_give(f->topo, &e, 1, &ps);
	}
}

/* Every node given again to every topo: a resource added since changes
 * every node's capacity vector (placements stay, as topo_node_set keeps
 * them). */
static int topo_refeed(queue_t *q)
{
	for (size_t f = 0; f < q->flv_names.n; f++)
		for (size_t i = 0; q->flavors[f].topo && i < q->node_names.n; i++)
			if (node_feed(q, (uint32_t)f, (uint32_t)i))
				return GPUQ_ENOMEM;
	q->topo_stale = false;
	return GPUQ_OK;
}

bool queue_topo_needed(const queue_t *q, const try_t *t)
{
	if (!q->n_topo_flavors)
		return false;
	for (size_t i = 0; i < t->n_asg; i++)
		if (q->flavors[t->asg[i].a.flavor].topo)
			return true;
	return false;
}

/* What node_ok needs: the core, the flavor, and each ask pod set's template. */
typedef struct {
	const queue_t *q;
	const flavor_t *f;
	uint32_t tmpl[TOPO_PODSETS_MAX];
} okctx_t;

/* Whether the pods of the ask's pod set ps may run on topo node `node`: its
 * node selector and required affinity against the node's labels, the
 * node's taints against its and the flavor's tolerations. */
static bool node_ok(void *ctx, uint32_t node, size_t ps)
{
	const okctx_t *k = ctx;
	const queue_t *q = k->q;
	const node_t *n = &q->nodes[k->f->tmap[node]];
	const tmpl_t *tm = &q->tmpls[k->tmpl[ps]];

	for (size_t i = 0; i < tm->n_sel; i++) {
		const kv_t *l = queue_kv_get(n->labels, n->n_labels, tm->sel[i].key);

		if (!l || l->val != tm->sel[i].val)
			return false;
	}
	for (size_t i = 0; i < tm->n_aff; i++) {
		const kv_t *l = queue_kv_get(n->labels, n->n_labels, tm->aff[i].key);
		bool ok = false;

		for (uint32_t j = 0; l && j < tm->aff[i].n; j++)
			ok |= tm->affvals[tm->aff[i].off + j] == l->val;
		if (!ok)
			return false;
	}
	for (size_t i = 0; i < n->n_taints; i++) {
		const taint_t *tn = &n->taints[i];

		if (tn->effect != QUEUE_EFFECT_PREFER_NO_SCHEDULE &&
		    !queue_tolerates(q, tm->tol, tm->n_tol, tn) &&
		    !queue_tolerates(q, k->f->tols, k->f->n_tols, tn))
			return false;
	}
	return true;
}

/* The resource a reason names: of a pod set's requests (req), the one
 * that holds the fewest of its pods in the best domain the fit found (what
 * binds there); with no domain at all, the first requested. */
static uint32_t binding_res(const queue_t *q, const topo_t *tp, const topo_why_t *why,
			    const int64_t *req)
{
	uint32_t best = QUEUE_NONE;
	int64_t best_pods = INT64_MAX;

	for (uint32_t r = 0; r < TOPO_RES_MAX && r < q->res_names.n; r++) {
		int64_t pods;

		if (req[r] <= 0)
			continue;
		if (why->domain == TOPO_NONE)
			return r;
		pods = topo_domain_free(tp, why->domain, why->level, r) / req[r];
		if (pods < best_pods) {
			best_pods = pods;
			best = r;
		}
	}
	return best;
}

static void topo_wait(try_t *t, uint8_t why, uint32_t f, uint8_t level, uint32_t res, int64_t need,
		      int64_t free_)
{
	if (t->mode < M_WAIT)
		t->mode = why == WHY_TOPO_LEVEL ? M_NEVER : M_WAIT;
	t->why = why;
	t->why_flavor = f;
	t->why_level = level;
	t->why_res = res;
	t->why_need = need;
	t->why_free = free_;
}

/* Append a fit's entries (topo ids, ask pod set indexes) to t->pl. */
static int pl_append(queue_t *q, try_t *t, uint32_t fid, const askset_t *as, const topo_place_t *e,
		     size_t n)
{
	const flavor_t *f = &q->flavors[fid];

	if (queue_grow(&t->pl, &t->cap_pl, t->n_pl + n, sizeof(*t->pl)))
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++)
		t->pl[t->n_pl++] = (place_t){fid, f->tmap[e[i].node], as->idx[e[i].ps], e[i].count};
	return GPUQ_OK;
}

/* ---- preemption that frees one domain ---- */

/* A REQUIRED ask restricted to one domain: the node_ok of the ask, and the
 * node in the domain of rep at level. */
typedef struct {
	okctx_t *k;
	const topo_t *t;
	uint32_t rep;
	uint8_t level;
} domctx_t;

static bool node_in_domain(void *ctx, uint32_t node, size_t ps)
{
	const domctx_t *d = ctx;

	return topo_same_domain(d->t, node, d->rep, d->level) && node_ok(d->k, node, ps);
}

/* Candidates first: lower priority, then the later admitted, then uid. */
/* Victim order within a domain: another ClusterQueue's (reclaimed while it
 * borrows) before the preemptor's own, as quota preemption orders them;
 * then lower priority, then the later admitted. */
typedef struct {
	const queue_t *q;
	uint32_t cq; /* the preemptor's */
} vorder_t;

static int victim_cmp(const void *a, const void *b, void *ctx)
{
	const vorder_t *o = ctx;
	const wl_t *x = Wc(o->q, *(const uint32_t *)a), *y = Wc(o->q, *(const uint32_t *)b);
	bool xo = x->cq == o->cq, yo = y->cq == o->cq;

	if (xo != yo)
		return xo ? 1 : -1;
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->admitted_ms != y->admitted_ms)
		return x->admitted_ms > y->admitted_ms ? -1 : 1;
	return strcmp(x->strs, y->strs);
}

/* Whether ClusterQueue cq uses more than its nominal quota of some
 * resource on flavor fid (what reclaim may take back). */
static bool cq_borrows_on(const queue_t *q, uint32_t cq, uint32_t fid)
{
	const cq_t *c = &q->cqs[cq];

	for (uint32_t i = 0; i < c->n_slots; i++)
		if (c->slots[i].flavor == fid && c->slots[i].usage > c->slots[i].nominal)
			return true;
	return false;
}

/* Whether candidate v holds a pod on flavor fid in the domain of rep. */
static bool holds_in(const queue_t *q, const wl_t *v, uint32_t fid, const domctx_t *d)
{
	for (uint32_t i = 0; i < v->place->n; i++) {
		const place_t *e = &v->place->e[i];
		uint32_t id =
		    e->flavor == fid ? topo_node_find(d->t, q->node_names.s[e->node]) : TOPO_NONE;

		if (id != TOPO_NONE && topo_same_domain(d->t, id, d->rep, d->level))
			return true;
	}
	return false;
}

/* Give candidate id back for a domain's trial: its pods and its quota,
 * so that another ClusterQueue's candidate is taken only while its queue
 * still uses more than its nominal quota on fid (reclaim stops there).
 * False, nothing given: that queue no longer borrows. */
static bool taken(queue_t *q, uint32_t id, uint32_t fid, uint32_t cq)
{
	wl_t *v = W(q, id);

	if (v->cq != cq && !cq_borrows_on(q, v->cq, fid))
		return false;
	pl_apply(q, v, v->asg, v->n_asg, v->place->e, v->place->n, -1);
	queue_wl_charge(q, id, -1);
	v->topo_given = true;
	return true;
}

/* Whether candidate v holds pods on flavor fid anywhere. */
static bool holds_on(const wl_t *v, uint32_t fid)
{
	for (uint32_t i = 0; i < v->place->n; i++)
		if (v->place->e[i].flavor == fid)
			return true;
	return false;
}

/* In the domain of d->rep: give back the candidates holding pods there, in
 * order, until the ask fits; when the preemptor's quota must be freed too
 * (qt: its try, else NULL), then candidates on fid elsewhere until the
 * quota fits as well. How many that took (0: it never fits), every one
 * taken back after. With out, the victims chosen are pushed there. */
static size_t victims_in(queue_t *q, uint32_t fid, uint32_t cq, const try_t *qt, topo_ask_t *ask,
			 domctx_t *d, const u32vec_t *cands, u32vec_t *out)
{
	size_t given = 0, n = 0;
	bool placed = false, quota = !qt;

	for (int pass = 0; pass < 2 && !(placed && quota) && (!pass || placed); pass++)
		for (size_t i = 0; i < cands->n && !(placed && quota); i++) {
			const wl_t *v = Wc(q, cands->v[i]);

			if (v->topo_given || !(pass ? holds_on(v, fid) : holds_in(q, v, fid, d)) ||
			    !taken(q, cands->v[i], fid, cq))
				continue;
			given++;
			if (out && queue_vpush(out, cands->v[i]))
				break;
			placed = placed || topo_fit(q->flavors[fid].topo, ask, q->fit_buf,
						    q->cap_fit_buf, &n, NULL) == GPUQ_OK;
			quota = quota || queue_need_fits(q, cq, qt, qt->borrows);
		}
	for (size_t j = cands->n; j-- > 0;) {
		const wl_t *v = Wc(q, cands->v[j]);

		if (v->topo_given) {
			pl_apply(q, v, v->asg, v->n_asg, v->place->e, v->place->n, +1);
			queue_wl_charge(q, cands->v[j], +1);
			W(q, cands->v[j])->topo_given = false;
		}
	}
	return placed && quota ? given : 0;
}

/* An ask being built (ask_build) and fitted (q->askbuf: 9 KiB, not on the
 * stack of every fit). */
typedef struct askbuf {
	int64_t req[TOPO_PODSETS_MAX][TOPO_RES_MAX]; /* per pod set's per-pod request */
	topo_podset_t ps[TOPO_PODSETS_MAX];	     /* the ask's pod sets */
	okctx_t k;				     /* node_ok's */
	topo_ask_t ask;				     /* the ask */
} askbuf_t;

/* q->askbuf, made at the first ask (NULL: no memory). */
static askbuf_t *askbuf_of(queue_t *q)
{
	if (!q->askbuf)
		q->askbuf = malloc(sizeof(*q->askbuf));
	return q->askbuf;
}

/* The ask of pod sets as of w on flavor fid under assignment asg, into b;
 * false when a level it names is not its flavor's topology's (t says so). */
static bool ask_build(queue_t *q, const wl_t *w, try_t *t, const asg_t *asg, size_t n_asg,
		      uint32_t fid, const askset_t *as, askbuf_t *b)
{
	const flavor_t *f = &q->flavors[fid];
	const tmpl_t *tm0 = &q->tmpls[wl_ps(w)[as->idx[0]].tmpl];
	int lv = 0, sl = -1;

	memset(b->req[0], 0, sizeof(b->req[0])); /* read by a reason even before it is filled */
	b->k = (okctx_t){q, f, {0}};
	b->ask = (topo_ask_t){TOPO_UNCONSTRAINED, 0, b->ps, as->n, node_ok, &b->k};
	if (tm0->topo_mode == QUEUE_TOPO_REQUIRED || tm0->topo_mode == QUEUE_TOPO_PREFERRED) {
		lv = level_of(q, f, tm0->topo_level);
		b->ask.mode =
		    tm0->topo_mode == QUEUE_TOPO_REQUIRED ? TOPO_REQUIRED : TOPO_PREFERRED;
	}
	if (tm0->slice_size > 0)
		sl = tm0->slice_level == QUEUE_NONE ? lv : level_of(q, f, tm0->slice_level);
	if (lv < 0 || (tm0->slice_size > 0 && sl < 0)) {
		topo_wait(t, WHY_TOPO_LEVEL, fid, 0, QUEUE_NONE,
			  lv < 0 ? tm0->topo_level : tm0->slice_level, 0);
		return false;
	}
	b->ask.level = (uint8_t)lv;
	for (size_t i = 0; i < as->n; i++) {
		const psref_t *p = &wl_ps(w)[as->idx[i]];
		const tmpl_t *tm = &q->tmpls[p->tmpl];

		podset_req(q, w, asg, n_asg, fid, as->idx[i], b->req[i]);
		b->k.tmpl[i] = p->tmpl;
		b->ps[i] = (topo_podset_t){p->count, b->req[i], tm->slice_size,
					   (uint8_t)(tm->slice_size > 0 ? sl : 0)};
	}
	return true;
}

/* Fit one ask of w on flavor fid; on success its entries are appended to
 * t->pl and taken (the caller gives every entry back). False: t says why
 * (and, for a REQUIRED ask whose quota fit, which it was: t->blocked). */
static bool ask_fit(queue_t *q, const wl_t *w, try_t *t, uint32_t fid, const askset_t *as)
{
	flavor_t *f = &q->flavors[fid];
	askbuf_t *b = askbuf_of(q);
	topo_why_t why = {0};
	size_t need = as->n * (q->node_names.n ? q->node_names.n : 1), n = 0, before = t->n_pl;
	int rc, quota_mode = t->mode;

	if (!b) {
		topo_wait(t, WHY_TOPOLOGY, fid, 0, QUEUE_NONE, 0, 0);
		q->cycle_short = true; /* out of memory: tried again next cycle */
		return false;
	}
	if (!ask_build(q, w, t, t->asg, t->n_asg, fid, as, b))
		return false;
	rc = queue_grow(&q->fit_buf, &q->cap_fit_buf, need, sizeof(*q->fit_buf));
	if (!rc)
		rc = topo_fit(f->topo, &b->ask, q->fit_buf, q->cap_fit_buf, &n, &why);
	if (rc == GPUQ_ENOMEM)
		q->cycle_short = true; /* tried again next cycle */
	if (rc == GPUQ_OK && pl_append(q, t, fid, as, q->fit_buf, n) == GPUQ_OK) {
		topo_take(f->topo, q->fit_buf, n, b->ps);
		return true;
	}
	t->n_pl = before;
	{
		uint32_t r = binding_res(q, f->topo, &why, b->req[why.ps < as->n ? why.ps : 0]);
		int64_t per = r == QUEUE_NONE ? 0 : b->req[why.ps < as->n ? why.ps : 0][r];
		int64_t free_ = why.domain == TOPO_NONE || r == QUEUE_NONE
				    ? 0
				    : topo_domain_free(f->topo, why.domain, why.level, r);

		topo_wait(t, WHY_TOPOLOGY, fid,
			  (uint8_t)(why.level | (b->ask.mode == TOPO_REQUIRED ? 0 : 0x80)), r,
			  per * why.need_pods, free_);
	}
	if (rc == GPUQ_EAGAIN && b->ask.mode == TOPO_REQUIRED && quota_mode <= M_PREEMPT &&
	    t->n_pl == 0) {
		t->blocked_fid = fid;
		t->blocked = *as;
		t->blocked_quota = quota_mode != M_FIT;
	}
	return false;
}

/* The asks of w on flavor fid, in pod set order: a REQUIRED pod set with a
 * group takes every later one of its group (same level) into its ask. */
static size_t asks_of(const queue_t *q, const wl_t *w, const try_t *t, uint32_t fid, askset_t *out)
{
	bool on[QUEUE_PODSETS_MAX] = {false}, done[QUEUE_PODSETS_MAX] = {false};
	size_t n = 0;

	for (size_t i = 0; i < t->n_asg; i++)
		if (t->asg[i].a.flavor == fid && t->asg[i].a.podset < QUEUE_PODSETS_MAX)
			on[t->asg[i].a.podset] = true;
	for (uint16_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *tm = &q->tmpls[wl_ps(w)[p].tmpl];

		if (!on[p] || done[p])
			continue;
		out[n] = (askset_t){{p}, 1};
		done[p] = true;
		if (tm->topo_mode == QUEUE_TOPO_REQUIRED && tm->group != QUEUE_NONE) {
			for (uint16_t o = (uint16_t)(p + 1); o < w->n_ps; o++) {
				const tmpl_t *to = &q->tmpls[wl_ps(w)[o].tmpl];

				if (on[o] && !done[o] && to->group == tm->group &&
				    to->topo_mode == QUEUE_TOPO_REQUIRED &&
				    to->topo_level == tm->topo_level) {
					out[n].idx[out[n].n++] = o;
					done[o] = true;
				}
			}
		}
		n++;
	}
	return n;
}

/* The domain of w's blocked REQUIRED ask (t->blocked, on t->blocked_fid)
 * whose candidates (q->topo_cands, the caller's: preempt.c) free room for
 * it with the fewest victims: those victims into q->targets (pairs:
 * workload, QUEUE_EVICT_IN_CQ for its own ClusterQueue's,
 * QUEUE_EVICT_RECLAIM for another's) and true; false when no domain can be
 * freed so. Another queue's go first (each only while its queue still
 * borrows on the flavor), then lower priority, then the later admitted. */
bool queue_topo_victims(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = Wc(q, wid);
	uint32_t fid = t->blocked_fid;
	askbuf_t *b = askbuf_of(q);
	domctx_t d;
	topo_ask_t dask;
	uint32_t best = TOPO_NONE;
	size_t best_n = SIZE_MAX;
	const try_t *qt = t->blocked_quota ? t : NULL; /* its quota must be freed too */

	if (fid == QUEUE_NONE || !b || !q->topo_cands.n || !q->flavors[fid].topo ||
	    queue_grow(&q->fit_buf, &q->cap_fit_buf,
		       t->blocked.n * (q->node_names.n ? q->node_names.n : 1),
		       sizeof(*q->fit_buf)) ||
	    !ask_build(q, w, t, t->asg, t->n_asg, fid, &t->blocked, b))
		return false;
	d = (domctx_t){&b->k, q->flavors[fid].topo, TOPO_NONE, b->ask.level};
	dask = b->ask;
	qsort_r(q->topo_cands.v, q->topo_cands.n, sizeof(uint32_t), victim_cmp,
		&(vorder_t){q, w->cq});
	dask.node_ok = node_in_domain;
	dask.ctx = &d;
	q->topo_doms.n = 0;
	/* each domain a candidate holds pods in, tried once (its first node) */
	for (size_t i = 0; i < q->topo_cands.n; i++) {
		const wl_t *v = Wc(q, q->topo_cands.v[i]);

		for (uint32_t e = 0; e < v->place->n; e++) {
			uint32_t id =
			    v->place->e[e].flavor == fid
				? topo_node_find(d.t, q->node_names.s[v->place->e[e].node])
				: TOPO_NONE;
			bool seen = id == TOPO_NONE;
			size_t n;

			for (size_t j = 0; j < q->topo_doms.n && !seen; j++)
				seen = topo_same_domain(d.t, id, q->topo_doms.v[j], d.level);
			if (seen || queue_vpush(&q->topo_doms, id))
				continue;
			d.rep = id;
			n = victims_in(q, fid, w->cq, qt, &dask, &d, &q->topo_cands, NULL);
			if (n && n < best_n) {
				best_n = n;
				best = id;
			}
		}
	}
	q->topo_doms.n = 0;
	if (best == TOPO_NONE)
		return false;
	d.rep = best;
	q->targets.n = 0;
	(void)victims_in(q, fid, w->cq, qt, &dask, &d, &q->topo_cands, &q->topo_doms);
	for (size_t i = 0; i < q->topo_doms.n; i++)
		if (queue_vpush(&q->targets, q->topo_doms.v[i]) ||
		    queue_vpush(&q->targets, Wc(q, q->topo_doms.v[i])->cq == w->cq
						 ? QUEUE_EVICT_IN_CQ
						 : QUEUE_EVICT_RECLAIM))
			return false;
	q->topo_doms.n = 0;
	return q->targets.n > 0;
}

void queue_topo_try(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = Wc(q, wid);
	uint32_t seen[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX];
	size_t n_seen = 0;
	bool ok = true;

	t->placed = false;
	t->blocked_fid = QUEUE_NONE;
	t->blocked_quota = false;
	t->n_pl = 0;
	if (t->mode >= M_WAIT || !queue_topo_needed(q, t))
		return;
	if (q->topo_stale && topo_refeed(q)) {
		topo_wait(t, WHY_TOPOLOGY, t->asg[0].a.flavor, 0, QUEUE_NONE, 0, 0);
		q->cycle_short = true; /* out of memory: tried again next cycle */
		return;
	}
	for (size_t i = 0; ok && i < t->n_asg; i++) {
		uint32_t fid = t->asg[i].a.flavor;
		askset_t as[QUEUE_PODSETS_MAX];
		size_t n_as;
		bool dup = false;

		for (size_t j = 0; j < n_seen; j++)
			dup |= seen[j] == fid;
		if (dup || !q->flavors[fid].topo)
			continue;
		seen[n_seen++] = fid;
		n_as = asks_of(q, w, t, fid, as);
		for (size_t a = 0; ok && a < n_as; a++)
			ok = ask_fit(q, w, t, fid, &as[a]);
	}
	/* what was taken to fit the later asks goes back: admission takes it */
	pl_apply(q, w, t->asg, t->n_asg, t->pl, t->n_pl, -1);
	t->placed = ok;
	if (!ok)
		t->n_pl = 0;
}

int queue_topo_admit(queue_t *q, uint32_t wid, const try_t *t)
{
	wl_t *w = W(q, wid);
	placement_t *p;

	if (!t->placed || !t->n_pl)
		return GPUQ_OK;
	p = malloc(sizeof(*p) + t->n_pl * sizeof(p->e[0]));
	if (!p)
		return GPUQ_ENOMEM;
	p->n = (uint32_t)t->n_pl;
	memcpy(p->e, t->pl, t->n_pl * sizeof(p->e[0]));
	free(w->place);
	w->place = p;
	q->n_placed++;
	pl_apply(q, w, w->asg, w->n_asg, p->e, p->n, +1);
	return GPUQ_OK;
}

void queue_topo_release(queue_t *q, uint32_t wid)
{
	wl_t *w = W(q, wid);

	if (!w->place)
		return;
	pl_apply(q, w, w->asg, w->n_asg, w->place->e, w->place->n, -1);
	free(w->place);
	w->place = NULL;
	q->n_placed--;
}

void queue_workload_placement(const queue_t *q, queue_wl_t id, queue_place_t *out, size_t cap,
			      size_t *n)
{
	const wl_t *w = id < q->n_wls ? Wc(q, id) : NULL;

	*n = 0;
	if (!w || !w->live || !w->place)
		return;
	for (uint32_t i = 0; i < w->place->n && i < cap; i++) {
		const place_t *e = &w->place->e[i];

		out[i] = (queue_place_t){q->node_names.s[e->node], e->flavor, e->ps, e->count};
	}
	*n = w->place->n;
}

size_t queue_podset_domain(const queue_t *q, queue_wl_t id, size_t podset, uint32_t flavor,
			   const char **values, size_t cap)
{
	const wl_t *w = id < q->n_wls ? Wc(q, id) : NULL;
	const flavor_t *f = flavor < q->flv_names.n ? &q->flavors[flavor] : NULL;
	size_t n_levels, l;

	if (!w || !w->live || !w->place || !f || !f->topo)
		return 0;
	n_levels = q->topologies[f->topology].n_levels;
	for (l = 0; l < n_levels && l < cap; l++) {
		const char *v = NULL;

		for (uint32_t k = 0; k < w->place->n; k++) {
			const place_t *e = &w->place->e[k];
			uint32_t tid;
			const char *x;

			if (e->ps != podset || e->flavor != flavor)
				continue;
			tid = topo_node_find(f->topo, q->node_names.s[e->node]);
			x = tid == TOPO_NONE ? NULL : topo_domain_value(f->topo, tid, (uint8_t)l);
			if (!x || (v && strcmp(v, x) != 0))
				return l;
			v = x;
		}
		if (!v)
			return l; /* nothing of the pod set on this flavor */
		values[l] = v;
	}
	return l;
}

const char *queue_node_domain(const queue_t *q, uint32_t flavor, const char *node,
			      const char *level)
{
	const flavor_t *f = flavor < q->flv_names.n ? &q->flavors[flavor] : NULL;
	uint32_t key, tid;
	int lv;

	if (!f || !f->topo || !node || !level || queue_names_find(&q->strs, level, &key))
		return NULL;
	lv = level_of(q, f, key);
	tid = topo_node_find(f->topo, node);
	return lv < 0 || tid == TOPO_NONE ? NULL : topo_domain_value(f->topo, tid, (uint8_t)lv);
}

/* ================================================================== */
/* Templates and reasons                                               */
/* ================================================================== */

int queue_tmpl_topology(queue_t *q, const queue_podset_spec_t *ps, tmpl_t *t, gpuq_diag_t *diag)
{
	const char *name = ps->name ? ps->name : "";
	int rc = GPUQ_OK;

	t->topo_level = t->slice_level = t->group = QUEUE_NONE;
	if ((unsigned)ps->topology > QUEUE_TOPO_UNCONSTRAINED)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "pod set \"%s\": bad topology mode", name);
	t->topo_mode = (uint8_t)ps->topology;
	if (ps->topology == QUEUE_TOPO_REQUIRED || ps->topology == QUEUE_TOPO_PREFERRED) {
		if (!ps->topology_level || !ps->topology_level[0])
			return gpuq_diag_set(
			    diag, GPUQ_EINVAL, "pod set \"%s\": a %s topology names no level", name,
			    ps->topology == QUEUE_TOPO_REQUIRED ? "required" : "preferred");
		rc =
		    queue_str_intern(q, "topology level", ps->topology_level, &t->topo_level, diag);
	}
	if (!rc && ps->slice_size) {
		if (ps->slice_size < 0 || ps->count % ps->slice_size)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "pod set \"%s\": slice size %d does not divide its "
					     "%d pods",
					     name, ps->slice_size, ps->count);
		t->slice_size = ps->slice_size;
		if (ps->slice_level && ps->slice_level[0])
			rc = queue_str_intern(q, "slice level", ps->slice_level, &t->slice_level,
					      diag);
	}
	if (!rc && ps->group && ps->group[0])
		rc = queue_str_intern(q, "pod set group", ps->group, &t->group, diag);
	return rc;
}

const char *queue_topo_level_word(const char *key)
{
	const char *s = strrchr(key, '/');

	s = s ? s + 1 : key;
	return !strcmp(s, "hostname") ? "node" : s;
}

void queue_topo_why_text(const queue_t *q, const wl_t *w, char *out, size_t cap)
{
	const flavor_t *f = w->why_flavor < q->flv_names.n ? &q->flavors[w->why_flavor] : NULL;
	const char *rn = w->why_res == QUEUE_NONE ? "pods" : queue_res_name(q, w->why_res);
	const char *key;
	char n1[32], n2[32];

	if (!f || !f->topo) {
		snprintf(out, cap, "flavor %s is no longer topology-aware: it tries again",
			 queue_flv_name(q, w->why_flavor));
		return;
	}
	if (w->why == WHY_TOPO_LEVEL) {
		snprintf(out, cap,
			 "asks for topology level %s, which Topology %s of flavor %s "
			 "does not have",
			 w->why_need >= 0 && (size_t)w->why_need < q->strs.n
			     ? q->strs.s[w->why_need]
			     : "?",
			 q->topo_names.s[f->topology], queue_flv_name(q, w->why_flavor));
		return;
	}
	quota_amount_format(rn, w->why_need, n1, sizeof(n1));
	quota_amount_format(rn, w->why_free, n2, sizeof(n2));
	key = q->strs.s[q->topologies[f->topology].levels[w->why_level & 0x7f]];
	if (w->why_level & 0x80)
		snprintf(out, cap,
			 "needs %s %s on the nodes of flavor %s (Topology %s): no placement "
			 "fits, the best %s (%s) has %s free",
			 n1, rn, queue_flv_name(q, w->why_flavor), q->topo_names.s[f->topology],
			 queue_topo_level_word(key), key, n2);
	else
		snprintf(out, cap, "needs %s %s in one %s (%s): the best %s has %s free", n1, rn,
			 queue_topo_level_word(key), key, queue_topo_level_word(key), n2);
}

/* The node id of name, made (not live: no capacity) when never seen: a
 * restored placement names nodes the driver reports again later. */
int queue_node_ref(queue_t *q, const char *name, uint32_t *nid)
{
	if (queue_names_find(&q->node_names, name, nid) == GPUQ_OK)
		return GPUQ_OK;
	if (q->node_names.n >= QUEUE_NODES_MAX)
		return GPUQ_ELIMIT;
	if (queue_grow(&q->nodes, &q->cap_nodes, q->node_names.n + 1, sizeof(*q->nodes)))
		return GPUQ_ENOMEM;
	if (queue_names_intern(&q->node_names, name, nid))
		return GPUQ_ENOMEM;
	memset(&q->nodes[*nid], 0, sizeof(node_t));
	return GPUQ_OK;
}

int queue_topo_restore(queue_t *q, uint32_t id, queue_topo_rec_t *t)
{
	wl_t *w = W(q, id);
	placement_t *p;

	if (!t->n_pl)
		return GPUQ_OK;
	if (w->state != QUEUE_WL_ADMITTED && w->state != QUEUE_WL_EVICTING)
		return GPUQ_ECORRUPT; /* only a workload holding quota holds a placement */
	p = malloc(sizeof(*p) + t->n_pl * sizeof(p->e[0]));
	if (!p)
		return GPUQ_ENOMEM;
	p->n = (uint32_t)t->n_pl;
	memcpy(p->e, t->pl, t->n_pl * sizeof(p->e[0]));
	w->place = p;
	q->n_placed++;
	pl_apply(q, w, w->asg, w->n_asg, p->e, p->n, +1);
	return GPUQ_OK;
}

const char *queue_flavor_level(const queue_t *q, uint32_t flavor, size_t i)
{
	const flavor_t *f = flavor < q->flv_names.n ? &q->flavors[flavor] : NULL;

	if (!f || !f->topo || i >= q->topologies[f->topology].n_levels)
		return NULL;
	return q->strs.s[q->topologies[f->topology].levels[i]];
}

size_t queue_workload_domains(const queue_t *q, queue_wl_t id, uint32_t flavor, size_t level)
{
	const wl_t *w = id < q->n_wls ? Wc(q, id) : NULL;
	const flavor_t *f = flavor < q->flv_names.n ? &q->flavors[flavor] : NULL;
	size_t n = 0;

	if (!w || !w->live || !w->place || !f || !f->topo ||
	    level >= q->topologies[f->topology].n_levels)
		return 0;
	for (uint32_t i = 0; i < w->place->n; i++) {
		const place_t *e = &w->place->e[i];
		uint32_t a = topo_node_find(f->topo, q->node_names.s[e->node]);
		bool seen = false;

		if (e->flavor != flavor || a == TOPO_NONE)
			continue;
		for (uint32_t j = 0; j < i && !seen; j++) {
			const place_t *o = &w->place->e[j];
			uint32_t b = o->flavor == flavor
					 ? topo_node_find(f->topo, q->node_names.s[o->node])
					 : TOPO_NONE;

			seen = b != TOPO_NONE && topo_same_domain(f->topo, a, b, (uint8_t)level);
		}
		n += !seen;
	}
	return n;
}

/* ---- queue_check's part ---- */

/* Workload w's placement against its assignment: every pod of every pod set
 * on a topology-aware flavor placed once, a REQUIRED one in one domain. */
static int check_placement(const queue_t *q, const wl_t *w, char *why, size_t cap)
{
	const char *name = w->strs + w->name_off;

	for (uint16_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *tm = &q->tmpls[wl_ps(w)[p].tmpl];
		uint32_t fid = QUEUE_NONE, first = TOPO_NONE;
		int32_t pods = 0;
		int lv = -1;

		for (uint32_t i = 0; i < w->n_asg; i++)
			if (w->asg[i].a.podset == p && q->flavors[w->asg[i].a.flavor].topo)
				fid = w->asg[i].a.flavor;
		if (fid == QUEUE_NONE)
			continue;
		if (tm->topo_mode == QUEUE_TOPO_REQUIRED)
			lv = level_of(q, &q->flavors[fid], tm->topo_level);
		for (uint32_t i = 0; w->place && i < w->place->n; i++) {
			const place_t *e = &w->place->e[i];
			const topo_t *t = q->flavors[fid].topo;
			uint32_t id;

			if (e->ps != p || e->flavor != fid)
				continue;
			pods += e->count;
			id = topo_node_find(t, q->node_names.s[e->node]);
			if (lv >= 0 && first == TOPO_NONE)
				first = id;
			else if (lv >= 0 && (id == TOPO_NONE ||
					     !topo_same_domain(t, first, id, (uint8_t)lv))) {
				snprintf(why, cap,
					 "workload %s: pod set %u REQUIRED at %s spans two domains",
					 name, p, q->strs.s[tm->topo_level]);
				return GPUQ_ECORRUPT;
			}
		}
		if (pods != wl_ps(w)[p].count) {
			snprintf(why, cap,
				 "workload %s: pod set %u: %d of %d pods placed on flavor %s", name,
				 p, pods, wl_ps(w)[p].count, q->flv_names.s[fid]);
			return GPUQ_ECORRUPT;
		}
	}
	return GPUQ_OK;
}

/* What the placements hold on every node, within what it has. */
static int check_nodes(const queue_t *q, char *why, size_t cap)
{
	size_t nn = q->node_names.n;
	int64_t *held = calloc(nn * TOPO_RES_MAX + 1, sizeof(*held));
	int64_t req[TOPO_RES_MAX];
	int rc = GPUQ_OK;

	if (!held)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);

		for (uint32_t k = 0; w->live && w->place && k < w->place->n; k++) {
			const place_t *e = &w->place->e[k];

			podset_req(q, w, w->asg, w->n_asg, e->flavor, e->ps, req);
			for (size_t r = 0; r < TOPO_RES_MAX; r++)
				held[(size_t)e->node * TOPO_RES_MAX + r] += req[r] * e->count;
		}
	}
	for (size_t n = 0; n < nn && !rc; n++) {
		const node_t *nd = &q->nodes[n];

		for (size_t r = 0; r < nd->n_res && !rc; r++) {
			uint32_t rid;

			if (queue_names_find(&q->res_names, q->strs.s[nd->res[r]], &rid) ||
			    rid >= TOPO_RES_MAX)
				continue;
			if (held[n * TOPO_RES_MAX + rid] > nd->alloc[r] - nd->used[r]) {
				snprintf(why, cap,
					 "node %s: placements hold %" PRId64 " %s of the %" PRId64
					 " free",
					 q->node_names.s[n], held[n * TOPO_RES_MAX + rid],
					 q->res_names.s[rid], nd->alloc[r] - nd->used[r]);
				rc = GPUQ_ECORRUPT;
			}
		}
	}
	free(held);
	return rc;
}

/* The nodes down (gone or not Ready) and not settled are n_nodes_down; a
 * settled one is held by no admitted workload (failure.c). */
static int check_down(const queue_t *q, char *why, size_t cap)
{
	size_t down = 0;

	for (size_t i = 0; i < q->node_names.n; i++) {
		const node_t *n = &q->nodes[i];

		down += (n->gone || n->not_ready) && !n->settled;
	}
	if (down != q->n_nodes_down) {
		snprintf(why, cap, "%zu nodes down, %zu counted", down, q->n_nodes_down);
		return GPUQ_ECORRUPT;
	}
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);

		for (uint32_t k = 0;
		     w->live && w->state == QUEUE_WL_ADMITTED && w->place && k < w->place->n; k++)
			if (q->nodes[w->place->e[k].node].settled) {
				snprintf(why, cap, "%s: admitted on node %s, failed and settled",
					 wl_uid(w), q->node_names.s[w->place->e[k].node]);
				return GPUQ_ECORRUPT;
			}
	}
	return GPUQ_OK;
}

int queue_topology_check(const queue_t *q, char *why, size_t cap)
{
	int rc = check_down(q, why, cap);

	if (rc || !q->n_topo_flavors)
		return rc;
	for (size_t f = 0; f < q->flv_names.n; f++)
		if (q->flavors[f].topo)
			topo_check(q->flavors[f].topo);
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);

		if (!w->live || (w->state != QUEUE_WL_ADMITTED && w->state != QUEUE_WL_EVICTING))
			continue;
		rc = check_placement(q, w, why, cap);
		if (rc)
			return rc;
	}
	return check_nodes(q, why, cap);
}

/* Give back (-1) or take again (+1) the placements of every EVICTING
 * workload (they sit in the ClusterQueues' admitted vectors); whether
 * there was any. */
static bool evicting_apply(queue_t *q, int sign)
{
	bool any = false;

	for (size_t c = 0; c < q->cq_names.n; c++)
		for (size_t i = 0; i < q->cqs[c].adm.n; i++) {
			const wl_t *v = Wc(q, q->cqs[c].adm.v[i]);

			if (v->place && v->state == QUEUE_WL_EVICTING) {
				pl_apply(q, v, v->asg, v->n_asg, v->place->e, v->place->n, sign);
				any = true;
			}
		}
	return any;
}

bool queue_topo_fits_after_evictions(queue_t *q, uint32_t wid, const try_t *t)
{
	try_t *x = &q->scratch_rank; /* not in use between a head's try and its act */
	bool fits;

	if (!evicting_apply(q, -1))
		return false;
	x->mode = M_FIT;
	x->n_asg = t->n_asg;
	memcpy(x->asg, t->asg, t->n_asg * sizeof(t->asg[0]));
	queue_topo_try(q, wid, x);
	fits = x->placed;
	x->placed = false;
	x->n_pl = 0;
	(void)evicting_apply(q, +1);
	return fits;
}

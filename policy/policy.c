/*
 * The snapshot: building, the checks across objects in policy_finish,
 * lookups, iteration and reference counting (its memory: mem.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

/* ---- Lifecycle ---- */

/* The watched collections into p's arena (the caller's array is borrowed
 * only for the call). */
static int watched_copy(policy_t *p)
{
	const policy_api_t *from = p->opts.watched;
	policy_api_t *to;

	if (!p->opts.watch_declared || !p->opts.n_watched) {
		p->opts.watched = NULL;
		p->opts.n_watched = 0;
		return GPUQ_OK;
	}
	if (p->opts.n_watched > POLICY_WATCHED_MAX)
		return GPUQ_ELIMIT;
	to = policy_arena_alloc(&p->arena, p->opts.n_watched * sizeof(*to));
	if (!to)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < p->opts.n_watched; i++) {
		to[i].group = policy_arena_strdup(&p->arena, from[i].group ? from[i].group : "");
		to[i].resource =
		    policy_arena_strdup(&p->arena, from[i].resource ? from[i].resource : "");
		if (!to[i].group || !to[i].resource)
			return GPUQ_ENOMEM;
	}
	p->opts.watched = to;
	return GPUQ_OK;
}

int policy_create(const policy_opts_t *opts, policy_t **out)
{
	policy_t *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p)
		return GPUQ_ENOMEM;
	atomic_init(&p->refs, 1);
	if (opts)
		p->opts = *opts;
	rc = watched_copy(p);
	if (rc) {
		policy_unref(p);
		return rc;
	}
	*out = p;
	return GPUQ_OK;
}

policy_t *policy_ref(policy_t *p)
{
	if (p)
		atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
	return p;
}

void policy_unref(policy_t *p)
{
	policy_vec_t *vecs[13];

	if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
		return;
	vecs[0] = &p->namespaces, vecs[1] = &p->pcs, vecs[2] = &p->flavors;
	vecs[3] = &p->cqs, vecs[4] = &p->cohorts, vecs[5] = &p->lqs;
	vecs[6] = &p->lrs, vecs[7] = &p->rqs, vecs[8] = &p->rcts, vecs[9] = &p->skipped;
	vecs[10] = &p->leftouts, vecs[11] = &p->rtcs, vecs[12] = &p->topologies;
	for (size_t i = 0; i < 13; i++)
		free(vecs[i]->items);
	policy_index_free(&p->index);
	policy_arena_free(&p->arena);
	free(p);
}

/* ---- Adding ---- */

int policy_add_json(policy_t *p, const json_t *obj, gpuq_diag_t *diag)
{
	int rc, err;

	if (p->finished)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "policy is finished; it cannot change");
	rc = policy_decode_object(p, obj, diag);
	if (!rc || rc == GPUQ_ENOMEM)
		return rc;
	err = policy_leave_out_decoded(p, obj, diag->msg);
	if (err == GPUQ_ENOMEM)
		return policy_oom(diag);
	return err ? err : rc;
}

typedef struct {
	policy_t *p;  /* the policy being built */
	size_t n_out; /* left-out records before this document */
} add_ctx_t;

static int add_one(void *ctx, size_t doc, const json_t *obj, gpuq_diag_t *diag)
{
	add_ctx_t *a = ctx;

	int rc;

	a->p->origin.doc = doc;
	rc = policy_add_json(a->p, obj, diag);
	/* left out (and listed): the file goes on with its next document */
	if (rc && rc != GPUQ_ENOMEM && a->p->opts.leave_out_broken &&
	    policy_leftout_count(a->p) > a->n_out) {
		a->n_out = policy_leftout_count(a->p);
		memset(diag, 0, sizeof(*diag));
		return GPUQ_OK;
	}
	return rc;
}

int policy_add_manifest(policy_t *p, const char *name, const char *buf, size_t len,
			gpuq_diag_t *diag)
{
	add_ctx_t a = {p, policy_leftout_count(p)};
	const char *file;
	int rc;

	if (p->finished)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "policy is finished; it cannot change");
	file = policy_arena_strdup(&p->arena, name ? name : "<manifest>");
	if (!file)
		return policy_oom(diag);
	p->origin.file = file;
	p->origin.doc = 0;
	rc = manifest_parse(file, buf, len, add_one, &a, diag);
	p->origin.file = NULL;
	p->origin.doc = 0;
	return rc;
}

/* ---- Finishing: checks across objects ---- */

#define fail_at policy_fail_at

/* Each LocalQueue's ClusterQueue: one that is missing, or left out, leaves
 * the LocalQueue out. */
static int resolve_lqs(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->lqs.n; i++) {
		policy_lq_t *lq = p->lqs.items[i];
		const policy_leftout_t *out =
		    policy_leftout_find(p, "ClusterQueue", "", lq->cq_name);
		int rc = GPUQ_OK;

		lq->cq = policy_index_get(&p->index, POLICY_K_CQ, "", lq->cq_name);
		if (lq->cq ? policy_is_out(p, POLICY_K_CQ, "", lq->cq_name) : out != NULL)
			rc = policy_leave_out(
			    p, diag, GPUQ_EINVAL, POLICY_K_LQ, lq->namespace_, lq->name, lq->origin,
			    POLICY_REASON_CQ_INACTIVE,
			    "LocalQueue \"%s/%s\": spec.clusterQueue: ClusterQueue \"%s\" is "
			    "inactive (%s: %s)",
			    lq->namespace_, lq->name, lq->cq_name, out->reason, out->message);
		else if (!lq->cq)
			rc = policy_leave_out(
			    p, diag, GPUQ_EINVAL, POLICY_K_LQ, lq->namespace_, lq->name, lq->origin,
			    POLICY_REASON_CQ_MISSING,
			    "LocalQueue \"%s/%s\": spec.clusterQueue: ClusterQueue "
			    "\"%s\" not found",
			    lq->namespace_, lq->name, lq->cq_name);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Each ResourceFlavor's topologyName: one that is missing, or left out,
 * leaves the flavor out (and, in resolve_flavors, the ClusterQueues and
 * Cohorts naming the flavor: Kueue makes them inactive, TopologyNotFound). */
static int resolve_topologies(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->flavors.n; i++) {
		policy_flavor_t *f = p->flavors.items[i];
		const policy_leftout_t *out;
		int rc = GPUQ_OK;

		if (!f->topology_name)
			continue;
		if (p->opts.topology_unplaced && p->opts.leave_out_broken) {
			rc = policy_leave_out(p, diag, GPUQ_EINVAL, POLICY_K_FLAVOR, "", f->name,
					      f->origin, POLICY_REASON_TOPOLOGY_UNPLACED,
					      "ResourceFlavor \"%s\": spec.topologyName \"%s\": "
					      "the daemon does not place pods on a Topology's "
					      "domains yet (gpuq simulate does: docs/topology.md)",
					      f->name, f->topology_name);
			if (rc)
				return rc;
			continue;
		}
		f->topology = policy_index_get(&p->index, POLICY_K_TOPOLOGY, "", f->topology_name);
		out = f->topology ? NULL : policy_leftout_find(p, "Topology", "", f->topology_name);
		if (out)
			rc = policy_leave_out(
			    p, diag, GPUQ_EINVAL, POLICY_K_FLAVOR, "", f->name, f->origin,
			    POLICY_REASON_TOPOLOGY_MISSING,
			    "ResourceFlavor \"%s\": spec.topologyName: Topology \"%s\" is "
			    "inactive (%s: %s)",
			    f->name, f->topology_name, out->reason, out->message);
		else if (!f->topology)
			rc = policy_leave_out(p, diag, GPUQ_EINVAL, POLICY_K_FLAVOR, "", f->name,
					      f->origin, POLICY_REASON_TOPOLOGY_MISSING,
					      "ResourceFlavor \"%s\": spec.topologyName: Topology "
					      "\"%s\" not found",
					      f->name, f->topology_name);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

static int resolve_flavors(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->cqs.n; i++) {
		policy_cq_t *cq = p->cqs.items[i];
		int rc = policy_flavors_resolve(p, POLICY_K_CQ, cq->name, cq->origin, cq->groups,
						cq->n_groups, diag);

		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Implied cohorts for names no Cohort object declares (a ClusterQueue
 * left out names none). */
static int imply_cohorts(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->cqs.n; i++) {
		policy_cq_t *cq = p->cqs.items[i];
		policy_cohort_t *c;
		char who[300];
		int rc;

		if (!cq->cohort_name || policy_is_out(p, POLICY_K_CQ, "", cq->name))
			continue;
		snprintf(who, sizeof(who), "ClusterQueue \"%s\": spec.cohortName", cq->name);
		rc = policy_cohort_implied(p, cq->cohort_name, who, cq->origin, &c, diag);
		if (rc == GPUQ_ELIMIT && p->opts.leave_out_broken)
			rc = policy_leave_out(p, diag, rc, POLICY_K_CQ, "", cq->name, cq->origin,
					      POLICY_REASON_COHORT_LIMIT,
					      "%s: more than %d cohorts", who, POLICY_COHORTS_MAX);
		else if (!rc)
			cq->cohort = c;
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* A ClusterQueue whose cohort is left out is left out too. */
static int cohort_out(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->cqs.n; i++) {
		const policy_cq_t *cq = p->cqs.items[i];
		const policy_leftout_t *out;
		int rc;

		if (!cq->cohort || policy_is_out(p, POLICY_K_CQ, "", cq->name) ||
		    !policy_is_out(p, POLICY_K_COHORT, "", cq->cohort->name))
			continue;
		out = policy_leftout_find(p, "Cohort", "", cq->cohort->name);
		rc = policy_leave_out(p, diag, GPUQ_EINVAL, POLICY_K_CQ, "", cq->name, cq->origin,
				      POLICY_REASON_COHORT_INACTIVE,
				      "ClusterQueue \"%s\": spec.cohortName: Cohort \"%s\" is "
				      "inactive (%s: %s)",
				      cq->name, cq->cohort->name, out->reason, out->message);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Each cohort's members (after every ClusterQueue left out is gone). */
static int build_members(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->cqs.n; i++) {
		policy_cohort_t *c = (policy_cohort_t *)((policy_cq_t *)p->cqs.items[i])->cohort;

		if (c)
			c->n_members++; /* counted now, filled below */
	}
	for (size_t i = 0; i < p->cohorts.n; i++) {
		policy_cohort_t *c = p->cohorts.items[i];

		if (c->n_members) {
			c->members =
			    policy_arena_alloc(&p->arena, c->n_members * sizeof(policy_cq_t *));
			if (!c->members)
				return policy_oom(diag);
		}
		c->n_members = 0;
	}
	for (size_t i = 0; i < p->cqs.n; i++) {
		policy_cq_t *cq = p->cqs.items[i];
		policy_cohort_t *c = (policy_cohort_t *)cq->cohort;

		if (c)
			((const policy_cq_t **)c->members)[c->n_members++] = cq;
	}
	return GPUQ_OK;
}

/* Each namespace's LimitRanges and ResourceQuotas, in declaration order. */
static int build_namespaces(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < p->lrs.n; i++) {
			quota_limitrange_t *lr = p->lrs.items[i];
			policy_ns_entry_t *e =
			    policy_index_get(&p->index, POLICY_K_NAMESPACE, "", lr->namespace_);

			if (pass)
				((const quota_limitrange_t **)
				     e->pub.limitranges)[e->pub.n_limitranges] = lr;
			e->pub.n_limitranges++;
		}
		for (size_t i = 0; i < p->rqs.n; i++) {
			quota_resourcequota_t *rq = p->rqs.items[i];
			policy_ns_entry_t *e =
			    policy_index_get(&p->index, POLICY_K_NAMESPACE, "", rq->namespace_);

			if (pass)
				((const quota_resourcequota_t **)e->pub.quotas)[e->pub.n_quotas] =
				    rq;
			e->pub.n_quotas++;
		}
		if (pass)
			break;
		for (size_t i = 0; i < p->namespaces.n; i++) {
			policy_ns_entry_t *e = p->namespaces.items[i];
			size_t nl = e->pub.n_limitranges, nq = e->pub.n_quotas;

			if (nl && !(e->pub.limitranges = policy_arena_alloc(
					&p->arena, nl * sizeof(quota_limitrange_t *))))
				return policy_oom(diag);
			if (nq && !(e->pub.quotas = policy_arena_alloc(
					&p->arena, nq * sizeof(quota_resourcequota_t *))))
				return policy_oom(diag);
			e->pub.n_limitranges = e->pub.n_quotas = 0;
		}
	}
	return GPUQ_OK;
}

static int check_default_pc(policy_t *p, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < p->pcs.n; i++) {
		const policy_priorityclass_t *pc = p->pcs.items[i];
		int rc;

		if (!pc->global_default)
			continue;
		if (!p->default_pc) {
			p->default_pc = pc;
			continue;
		}
		rc =
		    policy_leave_out(p, diag, GPUQ_EINVAL, POLICY_K_PRIORITYCLASS, "", pc->name,
				     pc->origin, POLICY_REASON_DEFAULT_CONFLICT,
				     "PriorityClass \"%s\": globalDefault: true, but PriorityClass "
				     "\"%s\" is already the global default",
				     pc->name, p->default_pc->name);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Whether namespace ns holds a LocalQueue left out of the policy (its
 * ClusterQueue left out, or itself broken): its tenants submit to gpuq's
 * queues, so while that queue is out their GPU work is held or refused
 * saying why, never let through unqueued (fail closed). */
static bool holds_leftout_lq(const policy_t *p, const char *ns)
{
	for (size_t i = 0; i < policy_leftout_count(p); i++) {
		const policy_leftout_t *l = policy_leftout_at(p, i);

		if (!strcmp(l->kind, "LocalQueue") && !strcmp(l->namespace_, ns))
			return true;
	}
	return false;
}

static void build_managed(policy_t *p)
{
	for (size_t i = 0; i < p->namespaces.n; i++) {
		policy_ns_entry_t *e = p->namespaces.items[i];

		for (size_t c = 0; c < p->cqs.n && !e->managed; c++) {
			const policy_cq_t *cq = p->cqs.items[c];

			e->managed =
			    policy_selector_matches(&cq->namespace_selector, &e->pub.labels);
		}
		if (!e->managed)
			e->managed = holds_leftout_lq(p, e->pub.name);
	}
}

/* The checks across objects, in the order an object's dependents come
 * after it: a flavor's Topology, a ClusterQueue's flavors, then cohorts (the ClusterQueues of
 * one left out go too), then LocalQueues (those of a ClusterQueue left out
 * go too) and their budgets. Without opts.leave_out_broken the first
 * failure ends it. */
static int check_objects(policy_t *p, gpuq_diag_t *diag)
{
	int rc = resolve_topologies(p, diag);

	if (!rc)
		rc = resolve_flavors(p, diag);
	if (!rc)
		rc = check_default_pc(p, diag);
	if (!rc)
		rc = imply_cohorts(p, diag);
	if (!rc)
		rc = policy_cohort_tree(p, diag);
	if (!rc)
		rc = cohort_out(p, diag);
	if (!rc)
		rc = resolve_lqs(p, diag);
	if (!rc)
		rc = policy_check_budgets(p, diag);
	return rc;
}

int policy_finish(policy_t *p, gpuq_diag_t *diag)
{
	int rc;

	if (p->finished)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "policy is already finished");
	rc = check_objects(p, diag);
	if (rc)
		return rc;
	policy_leftout_compact(p);
	rc = build_members(p, diag);
	if (rc)
		return rc;
	rc = build_namespaces(p, diag);
	if (rc)
		return rc;
	rc = policy_max_fit_build(p, diag);
	if (rc)
		return rc;
	build_managed(p);
	p->finished = true;
	return GPUQ_OK;
}

/* ---- Lookups ---- */

const policy_namespace_t *policy_namespace_find(const policy_t *p, const char *name)
{
	const policy_ns_entry_t *e = policy_index_get(&p->index, POLICY_K_NAMESPACE, "", name);

	return e ? &e->pub : NULL;
}

const policy_priorityclass_t *policy_priorityclass_find(const policy_t *p, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_PRIORITYCLASS, "", name);
}

const policy_priorityclass_t *policy_priorityclass_default(const policy_t *p)
{
	return p->default_pc;
}

const policy_cq_t *policy_cq_find(const policy_t *p, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_CQ, "", name);
}

const policy_lq_t *policy_lq_find(const policy_t *p, const char *namespace_, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_LQ, namespace_, name);
}

const policy_flavor_t *policy_flavor_find(const policy_t *p, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_FLAVOR, "", name);
}

const policy_topology_t *policy_topology_find(const policy_t *p, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_TOPOLOGY, "", name);
}

int policy_topology_level(const policy_topology_t *t, const char *key)
{
	for (size_t i = 0; t && key && i < t->n_levels; i++)
		if (!strcmp(t->levels[i], key))
			return (int)i;
	return -1;
}

const policy_cohort_t *policy_cohort_find(const policy_t *p, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_COHORT, "", name);
}

const policy_claimtemplate_t *policy_claimtemplate_find(const policy_t *p, const char *namespace_,
							const char *name)
{
	return policy_index_get(&p->index, POLICY_K_CLAIMTEMPLATE, namespace_, name);
}

const policy_runtimeclass_t *policy_runtimeclass_find(const policy_t *p, const char *name)
{
	return policy_index_get(&p->index, POLICY_K_RUNTIMECLASS, "", name);
}

bool policy_cq_selects(const policy_t *p, const policy_cq_t *cq, const char *ns)
{
	const policy_namespace_t *n = policy_namespace_find(p, ns);
	policy_label_t only = {POLICY_NAME_LABEL, ns};
	policy_labels_t labels = {&only, 1};

	return policy_selector_matches(&cq->namespace_selector, n ? &n->labels : &labels);
}

bool policy_namespace_managed(const policy_t *p, const char *ns)
{
	const policy_ns_entry_t *e = policy_index_get(&p->index, POLICY_K_NAMESPACE, "", ns);

	if (e)
		return e->managed;
	for (size_t i = 0; i < p->cqs.n; i++)
		if (policy_cq_selects(p, p->cqs.items[i], ns))
			return true;
	return false;
}

bool policy_watch_has(const policy_t *p, const char *group, const char *resource)
{
	if (!p->opts.watch_declared)
		return true;
	for (size_t i = 0; i < p->opts.n_watched; i++)
		if (!strcmp(p->opts.watched[i].group, group ? group : "") &&
		    !strcmp(p->opts.watched[i].resource, resource ? resource : ""))
			return true;
	return false;
}

const policy_resource_group_t *policy_cq_group(const policy_cq_t *cq, const char *resource)
{
	for (size_t g = 0; g < cq->n_groups; g++)
		for (size_t r = 0; r < cq->groups[g].n_covered; r++)
			if (!strcmp(cq->groups[g].covered[r], resource))
				return &cq->groups[g];
	return NULL;
}

const policy_res_quota_t *policy_cq_quota(const policy_cq_t *cq, const char *flavor,
					  const char *resource)
{
	const policy_resource_group_t *g = policy_cq_group(cq, resource);

	if (!g)
		return NULL;
	for (size_t f = 0; f < g->n_flavors; f++) {
		if (strcmp(g->flavors[f].name, flavor) != 0)
			continue;
		for (size_t r = 0; r < g->flavors[f].n_resources; r++)
			if (!strcmp(g->flavors[f].resources[r].resource, resource))
				return &g->flavors[f].resources[r];
	}
	return NULL;
}

int policy_cq_max_fit(const policy_cq_t *cq, const char *flavor, const char *resource, int64_t *out)
{
	const policy_res_quota_t *q = policy_cq_quota(cq, flavor, resource);

	if (!q)
		return GPUQ_ENOTFOUND;
	*out = q->max_fit;
	return GPUQ_OK;
}

uint64_t policy_fingerprint(const policy_t *p)
{
	return p->fingerprint;
}

/* ---- Iteration ---- */

#define ITERATE(fn, type, vec, expr)                                                               \
	size_t policy_##fn##_count(const policy_t *p)                                              \
	{                                                                                          \
		return p->vec.n;                                                                   \
	}                                                                                          \
	const type *policy_##fn##_at(const policy_t *p, size_t i)                                  \
	{                                                                                          \
		const void *item = i < p->vec.n ? p->vec.items[i] : NULL;                          \
		return item ? (expr) : NULL;                                                       \
	}

ITERATE(namespace, policy_namespace_t, namespaces, &((const policy_ns_entry_t *)item)->pub)
ITERATE(priorityclass, policy_priorityclass_t, pcs, item)
ITERATE(flavor, policy_flavor_t, flavors, item)
ITERATE(topology, policy_topology_t, topologies, item)
ITERATE(cq, policy_cq_t, cqs, item)
ITERATE(cohort, policy_cohort_t, cohorts, item)
ITERATE(lq, policy_lq_t, lqs, item)
ITERATE(limitrange, quota_limitrange_t, lrs, &((const policy_lr_entry_t *)item)->pub)
ITERATE(quota, quota_resourcequota_t, rqs, &((const policy_rq_entry_t *)item)->pub)
ITERATE(claimtemplate, policy_claimtemplate_t, rcts, item)
ITERATE(runtimeclass, policy_runtimeclass_t, rtcs, item)
ITERATE(skipped, policy_skipped_t, skipped, item)

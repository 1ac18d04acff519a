/*
 * policy/tree.c: the cohort tree of a policy (Kueue's hierarchical cohorts):
 * parents resolved, cycles and depth refused, and every ClusterQueue quota's
 * max_fit over the tree with quota_tree_potential (the queue core's rule).
 */
#include "policy/internal.h"

#include <stdlib.h>
#include <string.h>

int policy_flavors_resolve(policy_t *p, int kind, const char *name, policy_origin_t origin,
			   const policy_resource_group_t *groups, size_t n, gpuq_diag_t *diag)
{
	for (size_t g = 0; g < n; g++) {
		for (size_t f = 0; f < groups[g].n_flavors; f++) {
			policy_flavor_quota_t *fq = (policy_flavor_quota_t *)&groups[g].flavors[f];
			const policy_leftout_t *out;

			fq->flavor = policy_index_get(&p->index, POLICY_K_FLAVOR, "", fq->name);
			out = fq->flavor && policy_is_out(p, POLICY_K_FLAVOR, "", fq->name)
				  ? policy_leftout_find(p, "ResourceFlavor", "", fq->name)
				  : NULL;
			if (out)
				return policy_leave_out(
				    p, diag, GPUQ_EINVAL, kind, "", name, origin, out->reason,
				    "%s \"%s\": spec.resourceGroups[%zu].flavors[%zu].name: "
				    "ResourceFlavor \"%s\" is inactive (%s: %s)",
				    kind == POLICY_K_CQ ? "ClusterQueue" : "Cohort", name, g, f,
				    fq->name, out->reason, out->message);
			if (!fq->flavor)
				return policy_leave_out(
				    p, diag, GPUQ_EINVAL, kind, "", name, origin,
				    POLICY_REASON_FLAVOR_MISSING,
				    "%s \"%s\": spec.resourceGroups[%zu]."
				    "flavors[%zu].name: ResourceFlavor \"%s\" not "
				    "found",
				    kind == POLICY_K_CQ ? "ClusterQueue" : "Cohort", name, g, f,
				    fq->name);
		}
	}
	return GPUQ_OK;
}

/* Whether walking up from c comes back to c (in at most n steps). */
static bool on_cycle(const policy_cohort_t *c, size_t n)
{
	const policy_cohort_t *x = c->parent;

	for (size_t k = 0; x && k < n; k++, x = x->parent)
		if (x == c)
			return true;
	return false;
}

static int cycle_error(policy_t *p, const policy_cohort_t *c, gpuq_diag_t *diag)
{
	char path[512];
	size_t len = (size_t)snprintf(path, sizeof(path), "%s", c->name);
	const policy_cohort_t *x = c->parent;

	for (size_t k = 0; k < 8 && len < sizeof(path); k++, x = x->parent) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, " -> %s", x->name);
		if (x == c)
			break;
	}
	if (x != c && len < sizeof(path))
		snprintf(path + len, sizeof(path) - len, " -> ...");
	return policy_leave_out(p, diag, GPUQ_EINVAL, POLICY_K_COHORT, "", c->name, c->origin,
				POLICY_REASON_COHORT_CYCLE,
				"Cohort \"%s\": spec.parentName: \"%s\" makes a cycle (%s)",
				c->name, c->parent_name, path);
}

/* Every cohort's flavors and parent (implied ones made). */
static int resolve_cohorts(policy_t *p, gpuq_diag_t *diag)
{
	/* implied parents are appended and have no parent themselves */
	for (size_t i = 0; i < p->cohorts.n; i++) {
		policy_cohort_t *c = p->cohorts.items[i], *par;
		char who[300];
		int rc;

		rc = policy_flavors_resolve(p, POLICY_K_COHORT, c->name, c->origin, c->groups,
					    c->n_groups, diag);
		if (rc)
			return rc;
		if (!c->parent_name)
			continue;
		snprintf(who, sizeof(who), "Cohort \"%s\": spec.parentName", c->name);
		rc = policy_cohort_implied(p, c->parent_name, who, c->origin, &par, diag);
		if (rc == GPUQ_ELIMIT && p->opts.leave_out_broken)
			rc = policy_leave_out(p, diag, rc, POLICY_K_COHORT, "", c->name, c->origin,
					      POLICY_REASON_COHORT_LIMIT,
					      "%s: more than %d cohorts", who, POLICY_COHORTS_MAX);
		else if (!rc)
			c->parent = par;
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* A cohort whose parent is left out is left out too, down the tree. */
static int cascade(policy_t *p, gpuq_diag_t *diag)
{
	bool more = p->opts.leave_out_broken;

	while (more) {
		more = false;
		for (size_t i = 0; i < p->cohorts.n; i++) {
			const policy_cohort_t *c = p->cohorts.items[i];
			int rc;

			if (!c->parent || policy_is_out(p, POLICY_K_COHORT, "", c->name) ||
			    !policy_is_out(p, POLICY_K_COHORT, "", c->parent->name))
				continue;
			rc = policy_leave_out(p, diag, GPUQ_EINVAL, POLICY_K_COHORT, "", c->name,
					      c->origin, POLICY_REASON_COHORT_INACTIVE,
					      "Cohort \"%s\": spec.parentName: Cohort \"%s\" is "
					      "inactive",
					      c->name, c->parent->name);
			if (rc)
				return rc;
			more = true;
		}
	}
	return GPUQ_OK;
}

int policy_cohort_tree(policy_t *p, gpuq_diag_t *diag)
{
	int rc = resolve_cohorts(p, diag);

	for (size_t i = 0; !rc && i < p->cohorts.n; i++)
		if (on_cycle(p->cohorts.items[i], p->cohorts.n))
			rc = cycle_error(p, p->cohorts.items[i], diag);
	if (!rc)
		rc = cascade(p, diag);
	for (size_t i = 0; !rc && i < p->cohorts.n; i++) {
		const policy_cohort_t *c = p->cohorts.items[i], *x = c;
		size_t depth = 0;

		if (policy_is_out(p, POLICY_K_COHORT, "", c->name))
			continue; /* on a cycle, or under one left out */
		while (x && depth <= POLICY_COHORT_DEPTH_MAX)
			x = x->parent, depth++;
		if (x)
			rc =
			    policy_leave_out(p, diag, GPUQ_ELIMIT, POLICY_K_COHORT, "", c->name,
					     c->origin, POLICY_REASON_COHORT_DEPTH,
					     "Cohort \"%s\": spec.parentName: more than %d cohorts "
					     "from it to its root",
					     c->name, POLICY_COHORT_DEPTH_MAX);
	}
	return rc;
}

/* ---- max_fit over the tree ---- */

/* One (flavor, resource) of a cohort: its subtree quota and own limits. */
typedef struct {
	const char *flavor;   /* flavor name */
	const char *resource; /* resource name */
	int64_t sub;	      /* own nominal + what its children lend */
	int64_t blimit;	      /* own borrowingLimit, -1 none */
	int64_t llimit;	      /* own lendingLimit, -1 none */
} frsum_t;

typedef struct {
	frsum_t *v; /* entries */
	size_t n;   /* used */
	size_t cap; /* allocated */
} frsums_t;

static frsum_t *fr_find(const frsums_t *s, const char *flavor, const char *resource)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].flavor, flavor) && !strcmp(s->v[i].resource, resource))
			return &s->v[i];
	return NULL;
}

/* Add amount to (flavor, resource) of s, saturating; NULL on ENOMEM. */
static frsum_t *fr_add(frsums_t *s, const char *flavor, const char *resource, int64_t amount)
{
	frsum_t *e = fr_find(s, flavor, resource);

	if (!e) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 8;
			frsum_t *v = realloc(s->v, cap * sizeof(*v));

			if (!v)
				return NULL;
			s->v = v;
			s->cap = cap;
		}
		e = &s->v[s->n++];
		*e = (frsum_t){flavor, resource, 0, -1, -1};
	}
	e->sub = amount > INT64_MAX - e->sub ? INT64_MAX : e->sub + amount;
	return e;
}

static int64_t amount_of(const policy_res_quota_t *q, const quota_qty_t *v)
{
	return quota_qty_amount(q->resource, v);
}

/* Walks every (flavor, resource) quota of a list of resource groups. */
typedef struct {
	const policy_resource_group_t *groups; /* the groups walked */
	size_t n;			       /* entries */
	size_t g, f, r;			       /* next group, flavor, resource */
} quota_iter_t;

static policy_res_quota_t *quota_next(quota_iter_t *it, const char **flavor)
{
	while (it->g < it->n) {
		const policy_resource_group_t *grp = &it->groups[it->g];

		if (it->f < grp->n_flavors) {
			const policy_flavor_quota_t *fq = &grp->flavors[it->f];

			if (it->r < fq->n_resources) {
				*flavor = fq->name;
				return (policy_res_quota_t *)&fq->resources[it->r++];
			}
			it->f++, it->r = 0;
			continue;
		}
		it->g++, it->f = 0, it->r = 0;
	}
	return NULL;
}

static size_t cohort_index(const policy_t *p, const policy_cohort_t *c)
{
	for (size_t i = 0; i < p->cohorts.n; i++)
		if (p->cohorts.items[i] == c)
			return i;
	return 0; /* not reached: every cohort is listed */
}

static size_t depth_of(const policy_cohort_t *c)
{
	size_t d = 0;

	for (; c->parent; c = c->parent)
		d++;
	return d;
}

/* Subtree sums of every cohort: own quota, members' and children's lending. */
static int tree_sums(const policy_t *p, frsums_t *sums)
{
	size_t maxd = 0;

	for (size_t i = 0; i < p->cohorts.n; i++) {
		const policy_cohort_t *c = p->cohorts.items[i];

		quota_iter_t it = {c->groups, c->n_groups, 0, 0, 0};
		const char *flavor;
		policy_res_quota_t *q;

		while ((q = quota_next(&it, &flavor))) {
			frsum_t *e =
			    fr_add(&sums[i], flavor, q->resource, amount_of(q, &q->nominal));

			if (!e)
				return GPUQ_ENOMEM;
			e->blimit = q->has_borrowing_limit ? amount_of(q, &q->borrowing_limit) : -1;
			e->llimit = q->has_lending_limit ? amount_of(q, &q->lending_limit) : -1;
		}
		if (depth_of(c) > maxd)
			maxd = depth_of(c);
	}
	for (size_t i = 0; i < p->cqs.n; i++) {
		const policy_cq_t *cq = p->cqs.items[i];
		quota_iter_t it = {cq->groups, cq->n_groups, 0, 0, 0};
		const char *flavor;
		policy_res_quota_t *q;
		size_t ci;

		if (!cq->cohort)
			continue;
		ci = cohort_index(p, cq->cohort);
		while ((q = quota_next(&it, &flavor))) {
			int64_t nom = amount_of(q, &q->nominal);
			int64_t ll = q->has_lending_limit ? amount_of(q, &q->lending_limit) : -1;

			if (!fr_add(&sums[ci], flavor, q->resource, quota_node_lent(nom, ll)))
				return GPUQ_ENOMEM;
		}
	}
	for (size_t d = maxd; d > 0; d--) {
		for (size_t i = 0; i < p->cohorts.n; i++) {
			const policy_cohort_t *c = p->cohorts.items[i];
			size_t pi;

			if (depth_of(c) != d)
				continue;
			pi = cohort_index(p, c->parent);
			for (size_t k = 0; k < sums[i].n; k++) {
				const frsum_t *e = &sums[i].v[k];

				if (!fr_add(&sums[pi], e->flavor, e->resource,
					    quota_node_lent(e->sub, e->llimit)))
					return GPUQ_ENOMEM;
			}
		}
	}
	return GPUQ_OK;
}

/* max_fit of one ClusterQueue quota from the tree's sums. */
static int64_t max_fit_of(const policy_t *p, const frsums_t *sums, const policy_cq_t *cq,
			  const char *flavor, const policy_res_quota_t *q)
{
	quota_node_t path[POLICY_COHORT_DEPTH_MAX + 2];
	size_t n = 1;

	path[0] = (quota_node_t){amount_of(q, &q->nominal), 0,
				 q->has_borrowing_limit ? amount_of(q, &q->borrowing_limit) : -1,
				 q->has_lending_limit ? amount_of(q, &q->lending_limit) : -1};
	for (const policy_cohort_t *c = cq->cohort; c && n < POLICY_COHORT_DEPTH_MAX + 2;
	     c = c->parent) {
		const frsum_t *e = fr_find(&sums[cohort_index(p, c)], flavor, q->resource);

		path[n++] = e ? (quota_node_t){e->sub, 0, e->blimit, e->llimit}
			      : (quota_node_t){0, 0, -1, -1};
	}
	return quota_tree_potential(path, n);
}

int policy_max_fit_build(policy_t *p, gpuq_diag_t *diag)
{
	frsums_t *sums = calloc(p->cohorts.n ? p->cohorts.n : 1, sizeof(*sums));
	int rc = sums ? tree_sums(p, sums) : GPUQ_ENOMEM;

	for (size_t i = 0; i < p->cqs.n && rc == GPUQ_OK; i++) {
		const policy_cq_t *cq = p->cqs.items[i];
		quota_iter_t it = {cq->groups, cq->n_groups, 0, 0, 0};
		const char *flavor;
		policy_res_quota_t *q;

		while ((q = quota_next(&it, &flavor)))
			q->max_fit = max_fit_of(p, sums, cq, flavor, q);
	}
	for (size_t i = 0; sums && i < p->cohorts.n; i++)
		free(sums[i].v);
	free(sums);
	return rc ? gpuq_diag_set(diag, rc, "out of memory") : GPUQ_OK;
}

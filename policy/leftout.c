/*
 * policy/leftout.c: the objects a policy leaves out (policy_opts_t.
 * leave_out_broken): one that fails its own decoding or a check across
 * objects is recorded with a reason and a message, dropped from the
 * vectors and the index at policy_finish, and everything else loads.
 * Without the option the same check refuses the whole policy in the same
 * words (policy_leave_out is the one place that decides which).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

/* The kinds a left-out record may name by index kind; any other kind
 * (a refused Deployment) is looked up by a scan. */
static const struct {
	const char *name; /* Kubernetes kind */
	int kind;	  /* policy_kind_t */
} KINDS[] = {
    {"Namespace", POLICY_K_NAMESPACE},
    {"LimitRange", POLICY_K_LIMITRANGE},
    {"ResourceQuota", POLICY_K_QUOTA},
    {"PriorityClass", POLICY_K_PRIORITYCLASS},
    {"ResourceFlavor", POLICY_K_FLAVOR},
    {"ClusterQueue", POLICY_K_CQ},
    {"LocalQueue", POLICY_K_LQ},
    {"Cohort", POLICY_K_COHORT},
    {"ResourceClaimTemplate", POLICY_K_CLAIMTEMPLATE},
    {"RuntimeClass", POLICY_K_RUNTIMECLASS},
    {"Topology", POLICY_K_TOPOLOGY},
};

static int kind_code(const char *name)
{
	for (size_t i = 0; i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
		if (!strcmp(KINDS[i].name, name))
			return KINDS[i].kind;
	return 0;
}

static const char *kind_name(int kind)
{
	for (size_t i = 0; i < sizeof(KINDS) / sizeof(KINDS[0]); i++)
		if (KINDS[i].kind == kind)
			return KINDS[i].name;
	return "object";
}

/* A record and whether it came from a decoding refusal (the object was
 * never added, so nothing is dropped for it at policy_finish: another
 * object of that name, such as the first of two duplicates, stays). */
typedef struct {
	policy_leftout_t pub; /* first: a policy_leftout_t * points here */
	bool decoded;	      /* refused by its decoder, not by a check across objects */
} entry_t;

/* The record for (kind, ns, name), or NULL. kind 0: by kind_name. */
static entry_t *find(const policy_t *p, int kind, const char *kname, const char *ns,
		     const char *name)
{
	if (kind)
		return policy_index_get(&p->index, POLICY_K_OUT + kind, ns ? ns : "", name);
	for (size_t i = 0; i < p->leftouts.n; i++) {
		entry_t *l = p->leftouts.items[i];

		if (!strcmp(l->pub.kind, kname) && !strcmp(l->pub.namespace_, ns ? ns : "") &&
		    !strcmp(l->pub.name, name))
			return l;
	}
	return NULL;
}

/* Record one left-out object. The first reason for it stays, except that
 * a check across objects replaces a decoding refusal of the same name (the
 * object that failed it is in the policy and must go). */
static int record(policy_t *p, int kind, const char *kname, const char *ns, const char *name,
		  policy_origin_t origin, const char *reason, const char *msg, bool decoded)
{
	entry_t *e = find(p, kind, kname, ns, name);
	policy_leftout_t *l;

	if (e && (decoded || !e->decoded))
		return GPUQ_OK;
	if (e) {
		e->decoded = false;
		e->pub.reason = reason;
		e->pub.origin = origin;
		e->pub.message = policy_arena_strdup(&p->arena, msg);
		return e->pub.message ? GPUQ_OK : GPUQ_ENOMEM;
	}
	if (p->leftouts.n >= POLICY_OBJECTS_MAX)
		return GPUQ_ELIMIT;
	e = policy_arena_alloc(&p->arena, sizeof(*e));
	if (!e)
		return GPUQ_ENOMEM;
	e->decoded = decoded;
	l = &e->pub;
	l->kind = policy_arena_strdup(&p->arena, kname);
	l->namespace_ = policy_arena_strdup(&p->arena, ns ? ns : "");
	l->name = policy_arena_strdup(&p->arena, name);
	l->reason = reason;
	l->message = policy_arena_strdup(&p->arena, msg);
	l->origin = origin;
	if (!l->kind || !l->namespace_ || !l->name || !l->message ||
	    policy_vec_push(&p->leftouts, e))
		return GPUQ_ENOMEM;
	if (kind && policy_index_put(&p->index, POLICY_K_OUT + kind, l->namespace_, l->name, e))
		return GPUQ_ENOMEM;
	return GPUQ_OK;
}

int policy_leave_out(policy_t *p, gpuq_diag_t *diag, int rc, int kind, const char *ns,
		     const char *name, policy_origin_t origin, const char *reason, const char *fmt,
		     ...)
{
	char msg[GPUQ_DIAG_MAX];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!p->opts.leave_out_broken)
		return policy_fail_at(diag, rc, origin, "%s", msg);
	err = record(p, kind, kind_name(kind), ns, name, origin, reason, msg, false);
	if (err == GPUQ_ENOMEM)
		return policy_oom(diag);
	if (err)
		return policy_fail_at(diag, err, origin, "more than %d objects left out",
				      POLICY_OBJECTS_MAX);
	return GPUQ_OK;
}

bool policy_is_out(const policy_t *p, int kind, const char *ns, const char *name)
{
	const entry_t *e = p->leftouts.n ? find(p, kind, kind_name(kind), ns, name) : NULL;

	return e && !e->decoded;
}

/* A string member of obj, or NULL (not a string, or longer than max). */
static const char *str_of(const json_t *obj, const char *key, size_t max)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s && strlen(s) <= max ? s : NULL;
}

int policy_leave_out_decoded(policy_t *p, const json_t *obj, const char *msg)
{
	const json_t *meta = json_is_object(obj) ? json_object_get(obj, "metadata") : NULL;
	const char *kname = json_is_object(obj) ? str_of(obj, "kind", 63) : NULL;
	const char *name = json_is_object(meta) ? str_of(meta, "name", 253) : NULL;
	const char *ns = json_is_object(meta) ? str_of(meta, "namespace", 63) : NULL;

	if (!p->opts.leave_out_broken || !kname || !name)
		return GPUQ_OK; /* nothing to name it by: the caller's message is all */
	return record(p, kind_code(kname), kname, ns, name, p->origin, POLICY_REASON_INVALID, msg,
		      true);
}

/* Drop the left-out objects of one vector from it and from the index. */
static void compact(policy_t *p, policy_vec_t *v, int kind, const char *(*ns_of)(const void *),
		    const char *(*name_of)(const void *))
{
	size_t k = 0;

	for (size_t i = 0; i < v->n; i++) {
		const char *ns = ns_of ? ns_of(v->items[i]) : "";

		if (policy_is_out(p, kind, ns, name_of(v->items[i])))
			policy_index_drop(&p->index, kind, ns, name_of(v->items[i]));
		else
			v->items[k++] = v->items[i];
	}
	v->n = k;
}

static const char *cq_name(const void *o)
{
	return ((const policy_cq_t *)o)->name;
}

static const char *lq_ns(const void *o)
{
	return ((const policy_lq_t *)o)->namespace_;
}

static const char *lq_name(const void *o)
{
	return ((const policy_lq_t *)o)->name;
}

static const char *cohort_name(const void *o)
{
	return ((const policy_cohort_t *)o)->name;
}

static const char *pc_name(const void *o)
{
	return ((const policy_priorityclass_t *)o)->name;
}

static const char *flavor_name(const void *o)
{
	return ((const policy_flavor_t *)o)->name;
}

void policy_leftout_compact(policy_t *p)
{
	if (!p->leftouts.n)
		return;
	compact(p, &p->pcs, POLICY_K_PRIORITYCLASS, NULL, pc_name);
	compact(p, &p->flavors, POLICY_K_FLAVOR, NULL, flavor_name);
	compact(p, &p->cqs, POLICY_K_CQ, NULL, cq_name);
	compact(p, &p->cohorts, POLICY_K_COHORT, NULL, cohort_name);
	compact(p, &p->lqs, POLICY_K_LQ, lq_ns, lq_name);
	for (size_t i = 0; i < p->cqs.n; i++)
		((policy_cq_t *)p->cqs.items[i])->index = i;
}

/* ---- Public reads ---- */

size_t policy_leftout_count(const policy_t *p)
{
	return p->leftouts.n;
}

const policy_leftout_t *policy_leftout_at(const policy_t *p, size_t i)
{
	return i < p->leftouts.n ? &((const entry_t *)p->leftouts.items[i])->pub : NULL;
}

const policy_leftout_t *policy_leftout_find(const policy_t *p, const char *kind,
					    const char *namespace_, const char *name)
{
	const entry_t *e;

	if (!p->leftouts.n || !kind || !name)
		return NULL;
	e = find(p, kind_code(kind), kind, namespace_, name);
	return e ? &e->pub : NULL;
}
